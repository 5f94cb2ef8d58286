"""The model's file-group building made fast for large tables (10^6 data files).

:func:`build_file_groups` returns the same file groups as :func:`model.slicing.build_file_groups`
(the specification), and :class:`FileSystemView` is :class:`model.slicing.FileSystemView` with it
substituted (everything else -- filters, reads, compaction plans -- is the model's).
``tests/test_fastpaths.py`` keeps the two equal on random tables under both rules and shows a
deliberately broken fast path is caught.

What is fast here: the two built-in slicing rules are inlined (``slice_key_instant_time``,
``slice_key_completion_time``, reading :class:`model.slicing.CompletionTimes`' completion map and
archive cursor directly); each group keeps its sorted slice keys up to date with ``insort``
instead of re-sorting per log; values are built through generated slot setters
(:func:`lakeio.ondisk.fastcodec.make_value`); the cyclic GC is paused meanwhile. The view's tv8
reader filters (``filterUncommittedFiles`` / ``filterUncommittedLogs``) are inlined the same way.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from operator import attrgetter
from typing import Iterable, Mapping

from model import slicing as _spec
from model.filenames import BaseFile, LogFile
from model.slicing import (
    CompletionTimes,
    FileGroup,
    FileGroupId,
    FileSlice,
    SliceRule,
    slice_key_completion_time,
    slice_key_instant_time,
)

from .fastcodec import gc_paused, make_value

_make_slice = make_value(FileSlice)
_make_group = make_value(FileGroup)
_tuple_new = tuple.__new__
_instant_of = attrgetter("instant_time")


def _log_key(lg: LogFile) -> tuple:
    """``LogFile.order_key`` inlined (one call per log when sorting)."""
    tok = lg.write_token
    return (lg.instant_time, lg.version, tok is not None, tok or "", lg.cdc)


def build_file_groups(base_files: Iterable[BaseFile], log_files: Iterable[LogFile],
                      pending_compactions: Mapping[tuple, str], times: CompletionTimes,
                      rule: SliceRule) -> dict[FileGroupId, FileGroup]:
    """:func:`model.slicing.build_file_groups`, fast (see the module docstring); the cyclic GC paused."""
    with gc_paused():
        return _build_file_groups(base_files, log_files, pending_compactions, times, rule)


def _build_file_groups(base_files, log_files, pending_compactions, times, rule) -> dict[FileGroupId, FileGroup]:
    # partition -> file id -> [base files, log files]: two look-ups of strings whose hashes are cached, no
    # (partition, file id) tuple built per file; visited in (partition, file id) order, the spec's order.
    parts: dict[str, dict[str, tuple[list, list]]] = {}
    for b in base_files:
        p = parts.get(b.partition)
        if p is None:
            parts[b.partition] = p = {}
        g = p.get(b.file_id)
        if g is None:
            p[b.file_id] = g = ([], [])
        g[0].append(b)
    for lg in log_files:
        p = parts.get(lg.partition)
        if p is None:
            parts[lg.partition] = p = {}
        g = p.get(lg.file_id)
        if g is None:
            p[lg.file_id] = ([], [lg])
        else:
            g[1].append(lg)
    # The two built-in rules are inlined below (same answers as calling them: see
    # model.slicing.slice_key_instant_time / slice_key_completion_time).
    by_name = rule is slice_key_instant_time
    by_completion = rule is slice_key_completion_time
    done, cur = times._completion, times._cursor  # noqa: SLF001 - CompletionTimes.completion_time inlined
    done_get = done.get
    out: dict[FileGroupId, FileGroup] = {}
    for part in sorted(parts):
        pgroups = parts[part]
        for fid in sorted(pgroups):
            _place(out, part, fid, pgroups[fid], pending_compactions, by_name, by_completion, done_get, cur,
                   rule, times)
    return out


def _place(out, part, fid, g, pending_compactions, by_name, by_completion, done_get, cur, rule, times) -> None:
    """One file group: its slices from its base files, a pending compaction and its logs (placed by the rule)."""
    gbases, glogs = g
    k = (part, fid)
    gid = _tuple_new(FileGroupId, k)
    slices: dict[str, list] = {}
    for b in gbases:
        s = slices.get(b.instant_time)
        if s is None:
            slices[b.instant_time] = [b, []]
        elif s[0] is None or b.name > s[0].name:
            s[0] = b
    pc = pending_compactions.get(k)
    if pc is not None and pc not in slices:
        slices[pc] = [None, []]
    if glogs:
        if len(glogs) > 1:
            # LogFileComparator order. The instant leads the order key, so when the group's logs have distinct
            # instants (the common case: one log per deltacommit and group) the instant alone orders them,
            # and a C attribute getter computes it; otherwise the whole key.
            if len(set(map(_instant_of, glogs))) == len(glogs):
                glogs.sort(key=_instant_of)
            else:
                glogs.sort(key=_log_key)
        if by_name:  # slice_key_instant_time: the log's own instant, no keys needed
            for lg in glogs:
                t = lg.instant_time
                s = slices.get(t)
                if s is None:
                    slices[t] = [None, [lg]]
                else:
                    s[1].append(lg)
        else:
            keys = sorted(slices)
            for lg in glogs:
                t = lg.instant_time
                if by_completion:
                    if not keys:
                        key = t
                    else:
                        c = done_get(t)
                        if c is None and cur is not None and t < cur:
                            c = t
                        if c is None:
                            key = keys[-1]
                        else:
                            i = bisect_right(keys, c)
                            key = keys[i - 1] if i else t
                else:
                    key = rule(lg, list(keys), times)
                s = slices.get(key)
                if s is None:
                    slices[key] = s = [None, []]
                    insort(keys, key)
                s[1].append(lg)
    out[gid] = _make_group(gid, tuple([_make_slice(gid, t, slices[t][0], tuple(slices[t][1]))
                                       for t in sorted(slices, reverse=True)]))


class FileSystemView(_spec.FileSystemView):
    """:class:`model.slicing.FileSystemView` with the fast :func:`build_file_groups` and the tv8
    reader filters inlined (an unchanged slice is returned as it is, not rebuilt)."""

    build_groups = staticmethod(build_file_groups)

    def _filter_uncommitted(self, s: FileSlice) -> FileSlice:
        done, cur = self.times._completion, self.times._cursor  # noqa: SLF001 - is_completed inlined
        bi = s.base_instant
        base = s.base_file if s.base_file is not None and (bi in done or (cur is not None and bi < cur)) else None
        logs = self._completed_logs(s.log_files)
        if base is s.base_file and logs is s.log_files:
            return s
        return _make_slice(s.group, bi, base, logs)

    def _completed_logs(self, logs: tuple) -> tuple:
        done, cur = self.times._completion, self.times._cursor  # noqa: SLF001
        if cur is None:
            kept = [lg for lg in logs if lg.instant_time in done]
        else:
            kept = [lg for lg in logs if lg.instant_time in done or lg.instant_time < cur]
        return logs if len(kept) == len(logs) else tuple(kept)

    def _logs_filter(self, s: FileSlice) -> FileSlice:
        if not self.v8:
            return s
        logs = self._completed_logs(s.log_files)
        return s if logs is s.log_files else _make_slice(s.group, s.base_instant, s.base_file, logs)


__all__ = ["build_file_groups", "FileSystemView"]
