"""File groups, file slices and what readers see, under both slicing rules.

Pure: the inputs are a :class:`model.timeline.Timeline`, the data files as
:class:`model.filenames.BaseFile` / :class:`model.filenames.LogFile` values and the
facts the plans give (pending compactions, replaced and clustered file groups).
Facts from ``hudi-semantics.md`` section 3 and invariants I6-I9; each rule is a
small function citing the Java method it encodes.

Public API (stable)
-------------------

* :class:`FileGroupId` ``(partition, file_id)`` -- a ``NamedTuple``, so plain
  ``(partition, file_id)`` tuples are equal keys;
* :class:`FileSlice` ``(group, base_instant, base_file, log_files)`` with
  ``partition`` / ``file_id`` / ``files`` / ``is_empty``;
* :class:`FileGroup` ``(id, slices)`` -- slices newest first, as Hudi's
  ``HoodieFileGroup`` (``TreeMap`` in reverse commit-time order);
* rules: :func:`slice_key_instant_time` (tv6, I7), :func:`slice_key_completion_time`
  (tv8/9, I6), ``RULES`` = ``{"instant-time": ..., "completion-time": ...}``;
* :class:`CompletionTimes` -- ``CompletionTimeQueryView`` over a model timeline;
* :class:`FileSystemView` ``(timeline, base_files, log_files, *, rule=None,
  pending_compactions={}, replaced={}, pending_clustering={})`` with
  ``file_groups()``, ``file_group(id)``, ``latest_file_slices()``,
  ``latest_file_slices_as_of(t)``, ``latest_merged_file_slices(t=None)``,
  ``snapshot_read()``, ``as_of_read(t, mode="spec"|"hudi-rs")``,
  ``incremental_read(start, end)`` and ``compaction_plan_files(tc)``;
* :class:`ReadView` (``slices``, ``instants``, ``visible_log_files()``) and
  :class:`IncrementalView` (``instants``, ``base_files``, ``log_files``).

Table version vs rule: the *slicing rule* (which slice a log joins) is ``rule``
(``None``: by the timeline's table version, 6 -> instant time, 8/9 -> completion
time). The *reader filters* follow the table version, as Hudi's
``AbstractTableFileSystemView.tableVersion8AndAbove()`` does: tv8+
``filterUncommittedFiles``, tv6 ``filterBaseFileAfterPendingCompaction``.

This is the specification: the rules are called as written, one log at a time.
``lakeio.ondisk.fastslicing`` builds the same file groups fast for large tables
(the two built-in rules inlined, the cyclic GC paused); ``tests/test_fastpaths.py``
keeps the two equal.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, NamedTuple, Sequence

from .filenames import BaseFile, LogFile, log_order_key
from .instant import WRITE_ACTIONS, Action, Instant, State
from .timeline import Timeline

INSTANT_TIME = "instant-time"
COMPLETION_TIME = "completion-time"

#: Actions whose completed instants produce a compacted base file (no new data).
_COMPACTIONS = frozenset({Action.COMPACTION, Action.LOGCOMPACTION})
#: Data writes the 0.x compaction-scheduling guard waits for (``getCommitsTimeline().filterPendingExcludingCompaction``).
DATA_WRITES_FOR_GUARD = (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT)
#: Actions of pending instants that write base files readers must not see (``isBaseFileDueToPendingClustering``).
_CLUSTERING = frozenset({Action.CLUSTERING, Action.REPLACECOMMIT})


class FileGroupId(NamedTuple):
    """``HoodieFileGroupId``: (relative partition path, file id). ``""`` is the non-partitioned partition."""

    partition: str
    file_id: str


@dataclass(frozen=True, slots=True)
class FileSlice:
    """``FileSlice``: a base instant, an optional base file and the log files after it (comparator order)."""

    group: FileGroupId
    base_instant: str
    base_file: BaseFile | None = None
    log_files: tuple[LogFile, ...] = ()

    @property
    def partition(self) -> str:
        return self.group.partition

    @property
    def file_id(self) -> str:
        return self.group.file_id

    @property
    def is_empty(self) -> bool:
        return self.base_file is None and not self.log_files

    @property
    def files(self) -> tuple:
        """The base file (if any) then the log files."""
        return ((self.base_file,) if self.base_file is not None else ()) + self.log_files

    def with_files(self, base_file: BaseFile | None, log_files: Sequence[LogFile]) -> "FileSlice":
        return FileSlice(self.group, self.base_instant, base_file, tuple(log_files))

    def __str__(self) -> str:
        b = self.base_file.name if self.base_file else "-"
        return f"{self.group.partition}/{self.group.file_id}@{self.base_instant}[{b}; {len(self.log_files)} log(s)]"


@dataclass(frozen=True, slots=True)
class FileGroup:
    """``HoodieFileGroup``: every slice of one file group, **newest first**."""

    id: FileGroupId
    slices: tuple[FileSlice, ...]

    @property
    def partition(self) -> str:
        return self.id.partition

    @property
    def file_id(self) -> str:
        return self.id.file_id

    @property
    def latest_slice(self) -> FileSlice | None:
        """The newest slice, whatever its state (``getAllFileSlicesIncludingInflight().findFirst()``)."""
        return self.slices[0] if self.slices else None

    def slice_at(self, base_instant: str) -> FileSlice | None:
        for s in self.slices:
            if s.base_instant == base_instant:
                return s
        return None


# ------------------------------------------------------------------------------ completion times

class CompletionTimes:
    """``CompletionTimeQueryView`` over a model timeline (``CompletionTimeQueryViewV1/V2``).

    * a completed write instant -> its completion time; for layout 1 (tv6) that is
      the completed file's modification time, which a timeline rebuilt without
      ``mtimes`` does not know -- then the requested time stands in (as Hudi does
      for a completion time missing in metadata);
    * an instant before the first instant of the active write timeline is
      archived, hence completed (``isArchived``: archival never passes the first
      savepoint); its completion time is its own time (V1; V2 would read the LSM
      history, which the model does not hold);
    * otherwise pending or unknown -> ``None``.
    """

    def __init__(self, timeline: Timeline, writes: Sequence[Instant] | None = None):
        """``writes``: ``timeline.write_timeline()`` when the caller already has it."""
        if writes is None:
            writes = timeline.write_timeline()
        #: requested time -> completion time of each completed write instant
        self._completion = {i.requested_time: (i.completion_time or i.requested_time)
                            for i in writes if i.state is State.COMPLETED}
        #: the first instant of the active write timeline: every earlier instant is archived
        self._cursor = min((i.requested_time for i in writes), default=None)

    def completion_time(self, instant: str) -> str | None:
        c = self._completion.get(instant)
        if c is None and self._cursor is not None and instant < self._cursor:
            return instant
        return c

    def is_completed(self, instant: str) -> bool:
        """``isCompleted``: completed on the active timeline or archived."""
        return self.completion_time(instant) is not None

    def is_completed_before(self, base: str, instant: str) -> bool:
        """``isCompletedBefore(base, t)``: completion(t) present and ``< base`` (I9)."""
        c = self.completion_time(instant)
        return c is not None and c < base

    def is_archived(self, instant: str) -> bool:
        return self._cursor is not None and instant < self._cursor

    def completed_predicate(self) -> Callable[[str], bool]:
        """``is_completed`` as a function of the instant."""
        return self.is_completed

    def archived_instants(self) -> list[Instant]:
        """The archived instants this view knows: none (it holds no history)."""
        return []


# ------------------------------------------------------------------------------------- the rules

SliceRule = Callable[[LogFile, list, CompletionTimes], str]


def slice_key_instant_time(log: LogFile, keys: list, times: CompletionTimes) -> str:
    """tv6 / 0.x ``HoodieFileGroup.addLogFile(logFile)`` (invariant I7).

    The slice key is the instant in the log's name (``getBaseCommitTime``): the
    writer named the log after the base instant of the slice it extended; the slice
    is created if it does not exist.
    """
    return log.instant_time


def slice_key_completion_time(log: LogFile, keys: list, times: CompletionTimes) -> str:
    """tv8/9 ``HoodieFileGroup.getBaseInstantTime(completionTimeQueryView, logFile)`` (invariant I6).

    ``keys`` are the group's slice base instants, ascending.

    1. no slice yet -> the log's own instant (a log-only group starts a slice);
    2. completion time ``c`` of the log's deltacommit known -> the greatest base
       instant ``<= c`` (inclusive ``>=`` in code; RFC-66 writes strict ``<``),
       or the log's own instant if every base instant is later;
    3. deltacommit pending/unknown -> the latest slice (possibly the empty slice of
       a pending compaction).
    """
    if not keys:
        return log.instant_time
    c = times.completion_time(log.instant_time)
    if c is None:
        return keys[-1]
    i = bisect_right(keys, c)
    return keys[i - 1] if i else log.instant_time


RULES: dict[str, SliceRule] = {INSTANT_TIME: slice_key_instant_time, COMPLETION_TIME: slice_key_completion_time}


def rule_for_version(table_version: int) -> str:
    """tv6 -> instant-time slicing (0.x), tv8/9 -> completion-time slicing (1.x, HUDI-6642)."""
    if table_version == 6:
        return INSTANT_TIME
    if table_version in (8, 9):
        return COMPLETION_TIME
    raise ValueError(f"unknown table version {table_version}; supported: 6, 8, 9")


def build_file_groups(base_files: Iterable[BaseFile], log_files: Iterable[LogFile],
                      pending_compactions: Mapping[tuple, str], times: CompletionTimes,
                      rule: SliceRule) -> dict[FileGroupId, FileGroup]:
    """``AbstractTableFileSystemView.buildFileGroups`` (current master order).

    Per file group: (1) base files, slice key = the base file's instant (two base
    files of one instant -- a retried task's leftover -- keep the greatest name);
    (2) the empty slice of a pending compaction, *before* logs, so the rule can
    place logs in it (``addNewFileSliceAtInstant``); (3) log files in
    ``LogFileComparator`` order, each placed by ``rule``. Returned in
    (partition, file id) order.
    """
    bases_of: dict[FileGroupId, list[BaseFile]] = {}
    logs_of: dict[FileGroupId, list[LogFile]] = {}
    for b in base_files:
        bases_of.setdefault(FileGroupId(b.partition, b.file_id), []).append(b)
    for lg in log_files:
        logs_of.setdefault(FileGroupId(lg.partition, lg.file_id), []).append(lg)
    out: dict[FileGroupId, FileGroup] = {}
    for gid in sorted(bases_of.keys() | logs_of.keys()):
        slices: dict[str, list] = {}  # base instant -> [base file or None, log files]
        for b in bases_of.get(gid, []):
            s = slices.setdefault(b.instant_time, [None, []])
            if s[0] is None or b.name > s[0].name:
                s[0] = b
        pc = pending_compactions.get(gid)
        if pc is not None:
            slices.setdefault(pc, [None, []])
        for lg in sorted(logs_of.get(gid, []), key=log_order_key):
            key = rule(lg, sorted(slices), times)
            slices.setdefault(key, [None, []])[1].append(lg)
        out[gid] = FileGroup(gid, tuple(FileSlice(gid, t, slices[t][0], tuple(slices[t][1]))
                                        for t in sorted(slices, reverse=True)))
    return out


# --------------------------------------------------------------------------------- reader views

@dataclass(frozen=True)
class ReadView:
    """What a read plans: ``slices`` (one per visible file group) and the write
    instants whose data it admits (``instants``, requested times). For tv8 a log's
    data is read iff its deltacommit is in ``instants``; tv6 log names do not say
    which instant wrote them (the log reader filters blocks by their instant header).
    """

    slices: tuple[FileSlice, ...]
    instants: frozenset[str]

    def visible_log_files(self) -> list[LogFile]:
        """tv8: the planned log files whose deltacommit is admitted."""
        return [lg for s in self.slices for lg in s.log_files if lg.delta_commit_time in self.instants]

    def files(self) -> list:
        return [f for s in self.slices for f in s.files]


@dataclass(frozen=True)
class IncrementalView:
    """An incremental read: the completed write instants in range and the files they wrote.

    ``log_files`` is ``None`` for tv6: a tv6 log name carries the slice's base
    instant, not the writer, so names alone cannot attribute logs to instants
    (commit metadata write stats can).
    """

    instants: tuple[Instant, ...]
    base_files: tuple[BaseFile, ...]
    log_files: tuple[LogFile, ...] | None


class FileSystemView:
    """A model of ``AbstractTableFileSystemView`` over one table state.

    ``pending_compactions``: file group -> pending compaction instant (from the
    compaction plans); ``replaced``: file group -> completed replacecommit that
    replaced it (``resetFileGroupsReplaced``, greater instant on duplicates);
    ``pending_clustering``: file group -> pending clustering instant (input groups
    of pending plans). Keys may be :class:`FileGroupId` or plain tuples.
    ``rule`` may also be a callable with the signature of the rule functions
    (used by tests to show a broken rule is caught).
    """

    #: The function that builds the file groups (:func:`build_file_groups`); a faster equal one may
    #: be substituted (``lakeio.ondisk.fastslicing.FileSystemView``).
    build_groups = staticmethod(build_file_groups)

    def __init__(self, timeline: Timeline, base_files: Iterable[BaseFile], log_files: Iterable[LogFile], *,
                 rule: str | SliceRule | None = None,
                 pending_compactions: Mapping[tuple, str] | None = None,
                 replaced: Mapping[tuple, str] | None = None,
                 pending_clustering: Mapping[tuple, str] | None = None,
                 times: CompletionTimes | None = None):
        self.timeline = timeline
        self.table_version = timeline.table_version
        if rule is None:
            rule = rule_for_version(timeline.table_version)
        if callable(rule):
            self.rule, self._rule = getattr(rule, "__name__", "custom"), rule
        else:
            if rule not in RULES:
                raise ValueError(f"unknown slicing rule {rule!r}; expected one of {sorted(RULES)} or None")
            self.rule, self._rule = rule, RULES[rule]
        self.pending_compactions = {FileGroupId(*k): v for k, v in (pending_compactions or {}).items()}
        self.replaced = {FileGroupId(*k): v for k, v in (replaced or {}).items()}
        self.pending_clustering = {FileGroupId(*k): v for k, v in (pending_clustering or {}).items()}
        writes = timeline.write_timeline()
        # ``times``: the completion-time lookup; default the active timeline alone (archived = completed at its own
        # time); ``model.completion_time.CompletionTimeQueryView`` looks archived instants up in the LSM history
        self.times = times if times is not None else CompletionTimes(timeline, writes)
        self._completed = {i.requested_time: i for i in writes if i.is_completed}
        for i in self.times.archived_instants():  # archived write instants are completed instants too
            if i.action in WRITE_ACTIONS:
                self._completed.setdefault(i.requested_time, i)
        pend = [i for i in writes if i.is_pending]
        self._pending_compaction_instants = frozenset(i.requested_time for i in pend if i.action in _COMPACTIONS)
        self._pending_compaction_instants |= frozenset(self.pending_compactions.values())
        self._pending_clustering_instants = frozenset(i.requested_time for i in pend if i.action in _CLUSTERING)
        self._pending_clustering_instants |= frozenset(self.pending_clustering.values())
        self._last_write = max((i.requested_time for i in writes), default=None)
        self._groups = self.build_groups(base_files, log_files, self.pending_compactions, self.times, self._rule)

    @property
    def v8(self) -> bool:
        """``tableVersion8AndAbove()``: selects the reader filters."""
        return self.table_version >= 8

    # ------------------------------------------------------------------------------ structure
    def file_groups(self) -> list[FileGroup]:
        """Every file group, in (partition, file id) order, replaced ones included."""
        return list(self._groups.values())

    def file_group(self, gid: tuple) -> FileGroup | None:
        return self._groups.get(FileGroupId(*gid))

    def slice_for_write(self, gid: tuple, instant: str) -> str | None:
        """The base instant a tv6 (0.x) writer at ``instant`` names its new log after.

        The newest slice with base instant ``<= instant``, the empty slice of a pending
        compaction included (``getLatestFileSliceBeforeOrOn`` / the small-file lookup
        ``getLatestFileSlicesBeforeOrOn(partition, instant, includePendingCompaction=true)``;
        a writer does not append to a slice that starts after its own instant -- inferred).
        ``None`` when the group has no such slice (the writer starts a new file group).
        Under the instant-time rule the log then belongs to that slice (I7).
        """
        fg = self._groups.get(FileGroupId(*gid))
        if fg is None:
            return None
        return next((s.base_instant for s in fg.slices if s.base_instant <= instant), None)

    def slice_of(self, f: BaseFile | LogFile) -> FileSlice | None:
        """The slice a file was placed in."""
        fg = self._groups.get(FileGroupId(f.partition, f.file_id))
        if fg is None:
            return None
        for s in fg.slices:
            if s.base_file == f or f in s.log_files:
                return s
        return None

    # --------------------------------------------------------------------------------- filters
    def _slice_committed(self, base_instant: str) -> bool:
        """``HoodieFileGroup.isFileSliceCommitted``: base instant <= the last write instant and on the
        visible timeline (completed, or a pending compaction) or before it starts (archived)."""
        if self._last_write is None or base_instant > self._last_write:
            return False
        return (base_instant in self._completed or base_instant in self._pending_compaction_instants
                or self.times.is_archived(base_instant))

    def _filter_uncommitted(self, s: FileSlice) -> FileSlice:
        """tv8 ``filterUncommittedFiles``: keep the base file iff its instant completed, logs iff their
        deltacommit completed (``CompletionTimeQueryView.isCompleted``)."""
        base = s.base_file if s.base_file is not None and self.times.is_completed(s.base_instant) else None
        return FileSlice(s.group, s.base_instant, base, self._completed_logs(s.log_files))

    def _completed_logs(self, logs: tuple) -> tuple:
        """The logs whose deltacommit completed (``isCompleted(log.getDeltaCommitTime())``)."""
        return tuple(lg for lg in logs if self.times.is_completed(lg.delta_commit_time))

    def _filter_base_after_pending_compaction(self, s: FileSlice) -> FileSlice:
        """tv6 ``filterBaseFileAfterPendingCompaction``: drop the base file of the slice at a pending
        compaction instant (``isFileSliceAfterPendingCompaction``); logs are not filtered (the log
        reader skips blocks of non-completed instants). Pending compactions come from the plans
        (``pending_compactions``) and from the timeline."""
        if s.base_file is not None and s.base_instant in self._pending_compaction_instants:
            return FileSlice(s.group, s.base_instant, None, s.log_files)
        return s

    def _filter_pending_clustering_base(self, s: FileSlice) -> FileSlice:
        """``isBaseFileDueToPendingClustering``: base files written by a pending clustering/replace."""
        if s.base_file is not None and s.base_instant in self._pending_clustering_instants:
            return FileSlice(s.group, s.base_instant, None, s.log_files)
        return s

    def _reader_filter(self, s: FileSlice) -> FileSlice:
        s = self._filter_uncommitted(s) if self.v8 else self._filter_base_after_pending_compaction(s)
        return self._filter_pending_clustering_base(s)

    def _replaced_by(self, gid: FileGroupId, t: str | None) -> bool:
        """``isFileGroupReplaced`` / ``isFileGroupReplacedBeforeOrOn(fg, t)`` (replace instant <= t)."""
        r = self.replaced.get(gid)
        return r is not None and (t is None or r <= t)

    # ---------------------------------------------------------------------------- latest views
    def latest_file_slices(self) -> list[FileSlice]:
        """``getLatestFileSlices``: per file group not replaced, the newest slice that is non-empty
        after the reader filter.

        tv8: over every slice including inflight ones, ``filterUncommittedFiles``
        (``getLatestFileSliceFilteringUncommittedFiles``) -- a pending compaction's
        slice shows only its completed logs, without the older base file (readers
        that need the older base use :meth:`latest_merged_file_slices`). tv6: over
        committed slices (:meth:`_slice_committed`), ``filterBaseFileAfterPendingCompaction``;
        Java may return the *empty* pending-compaction slice there
        (``includeEmptyFileSlice``), the model skips to the newest non-empty one.
        Base files of pending clustering are dropped in both.
        """
        out = []
        for gid, fg in self._groups.items():
            if self._replaced_by(gid, None):
                continue
            s = self._newest_visible(fg.slices, None, include_pending_compaction=True)
            if s is not None:
                out.append(s)
        return out

    def _newest_visible(self, slices: Sequence[FileSlice], t: str | None, *,
                        include_pending_compaction: bool) -> FileSlice | None:
        for s in slices:
            if t is not None and s.base_instant > t:
                continue
            if not self.v8 and not self._slice_committed(s.base_instant):
                continue
            if not include_pending_compaction and s.base_instant in self._pending_compaction_instants:
                continue
            f = self._reader_filter(s)
            if not f.is_empty:
                return f
        return None

    def latest_file_slices_as_of(self, t: str, *, include_pending_compaction: bool = True) -> list[FileSlice]:
        """``getLatestFileSlicesBeforeOrOn(partition, t, includeFileSlicesInPendingCompaction)``.

        Per file group not replaced by an instant ``<= t``: the newest non-empty
        slice with base instant ``<= t`` after the reader filter. The filter uses
        the *current* timeline: logs of later deltacommits in that slice are still
        listed (as hudi-rs ``get_file_slices(as_of)`` also does); use
        :meth:`as_of_read` for what a time-travel query sees.
        """
        out = []
        for gid, fg in self._groups.items():
            if self._replaced_by(gid, t):
                continue
            s = self._newest_visible(fg.slices, t, include_pending_compaction=include_pending_compaction)
            if s is not None:
                out.append(s)
        return out

    def latest_merged_file_slices(self, t: str | None = None) -> list[FileSlice]:
        """``getLatestMergedFileSlicesBeforeOrOn(partition, t)``: what snapshot readers of MOR tables use.

        Per file group not replaced (by an instant ``<= t``): the newest committed
        slice with base ``<= t`` (``getLatestFileSliceBeforeOrOn``); tv8 drops logs of
        non-completed deltacommits (``filterUncommittedLogs``); if that slice is at the
        group's pending compaction, it is merged with the previous committed slice
        (``fetchMergedFileSlice`` / ``mergeCompactionPendingFileSlices``): the older
        base file, the older slice's logs, then the pending slice's logs.
        """
        out = []
        for gid, fg in self._groups.items():
            if self._replaced_by(gid, t):
                continue
            committed = [s for s in fg.slices if (t is None or s.base_instant <= t)
                         and self._slice_committed(s.base_instant)]
            if not committed:
                continue
            s = self._logs_filter(committed[0])
            if s.base_instant in self._pending_compaction_instants and len(committed) > 1:
                prev = self._logs_filter(committed[1])
                s = FileSlice(gid, prev.base_instant, prev.base_file, prev.log_files + s.log_files)
            s = self._filter_pending_clustering_base(s)
            if not s.is_empty:
                out.append(s)
        return out

    def _logs_filter(self, s: FileSlice) -> FileSlice:
        """tv8 ``filterUncommittedLogs``; tv6 keeps every log."""
        if not self.v8:
            return s
        return FileSlice(s.group, s.base_instant, s.base_file, self._completed_logs(s.log_files))

    # ----------------------------------------------------------------------------------- reads
    def _visible_instants(self, t: str | None, by: str) -> frozenset[str]:
        out = set()
        for rt, inst in self._completed.items():
            if t is None:
                out.add(rt)
            elif by == "completion" and (inst.completion_time or rt) <= t:
                out.add(rt)
            elif by == "requested" and rt <= t:
                out.add(rt)
        return frozenset(out)

    def snapshot_read(self) -> ReadView:
        """A snapshot query: the merged latest slices; admits every completed write instant.

        tv8 logs of non-completed deltacommits are already dropped from the slices.
        """
        return ReadView(tuple(self.latest_merged_file_slices()), self._visible_instants(None, "completion"))

    def as_of_read(self, t: str, *, mode: str = "spec") -> ReadView:
        """A time-travel query at ``t``.

        ``mode="spec"`` (tech spec "Reader Expectations"): tv8/9 admit write
        instants *completed* at or before ``t``; tv6 admits completed instants with
        *requested* time ``<= t``. Per file group, walk the slices with base instant
        ``<= t`` newest first, collecting admitted logs (tv6: every log, the log
        reader filters blocks), until a slice whose base file is readable: its writer
        is admitted, or it is a completed compaction (at any time: a compaction's base
        holds only logs completed before its instant, I9, so it is the state "as of"
        its requested time). That is "base = greatest requested <= t, logs =
        completion <= t".

        ``mode="hudi-rs"`` (hudi-rs-oracle.md section 2, observed with hudi 0.5.0):
        ``as_of`` is compared with *requested* times for every version; the slices
        are chosen by base instant ``<= t`` exactly as above, and they list *all*
        their logs (later ones too; blocks are filtered by instant when read). So
        under completion-time slicing, a deltacommit requested ``<= t`` that
        completed after a compaction requested in ``(its instant, t]`` is admitted,
        but its log sits in the compaction's slice and is still planned; one whose
        compaction was requested after ``t`` is admitted but its log is in an
        excluded slice -- the update is missing (the synthetic v8_trips case,
        rider-G). Compare :meth:`ReadView.visible_log_files` with ``instants``.
        """
        if mode not in ("spec", "hudi-rs"):
            raise ValueError(f"unknown as-of mode {mode!r}; expected 'spec' or 'hudi-rs'")
        by = "completion" if (mode == "spec" and self.v8) else "requested"
        admitted = self._visible_instants(t, by)
        filter_logs = mode == "spec" and self.v8
        compactions = {rt for rt, i in self._completed.items() if i.action in _COMPACTIONS}
        out = []
        for gid, fg in self._groups.items():
            r = self.replaced.get(gid)
            if r is not None and r in admitted:
                continue
            walked = [s for s in fg.slices if s.base_instant <= t]
            if not walked:
                continue
            base_slice = None
            logs: list[LogFile] = []
            for s in walked:  # newest first; older logs go in front
                logs[:0] = [lg for lg in s.log_files if not filter_logs or lg.delta_commit_time in admitted]
                if s.base_file is not None and (s.base_instant in admitted or s.base_instant in compactions):
                    base_slice = s
                    break
            key = base_slice.base_instant if base_slice else walked[-1].base_instant
            fs = FileSlice(gid, key, base_slice.base_file if base_slice else None, tuple(logs))
            if not fs.is_empty:
                out.append(fs)
        return ReadView(tuple(out), admitted)

    def incremental_read(self, start: str | None, end: str | None) -> IncrementalView:
        """An incremental query over ``(start, end]`` (``None`` leaves that end open).

        tv8/9: the range is over *completion* times (``Timeline.completed_in_range``;
        ``CompletionTimeQueryView.getInstantTimes``); tv6: over requested (instant)
        times. Completed compactions are in range but add no rows.
        """
        if self.v8:
            insts = sorted((i for i in self._completed.values() if (start is None or i.completion_time > start)
                            and (end is None or i.completion_time <= end)),
                           key=lambda i: (i.completion_time, i.requested_time))
        else:
            insts = sorted((i for i in self._completed.values()
                            if (start is None or i.requested_time > start) and (end is None or i.requested_time <= end)),
                           key=lambda i: i.requested_time)
        wanted = {i.requested_time for i in insts}
        bases = tuple(s.base_file for fg in self._groups.values() for s in fg.slices
                      if s.base_file is not None and s.base_instant in wanted)
        logs = (tuple(lg for fg in self._groups.values() for s in fg.slices for lg in s.log_files
                      if lg.delta_commit_time in wanted) if self.v8 else None)
        return IncrementalView(tuple(insts), bases, logs)

    # ------------------------------------------------------------------------------ compaction
    def compaction_plan_files(self, tc: str) -> dict[FileGroupId, FileSlice]:
        """The slices a compaction scheduled at ``tc`` would compact, per file group.

        Completion-time rule (RFC-66 "Non-Serial Compaction Plan Schedule", I9):
        the newest committed slice with base instant ``< tc``, keeping only logs whose
        deltacommit completed before ``tc`` (``isCompletedBefore(tc, log)``); a log
        with instant ``< tc`` completing at/after ``tc`` belongs to slice ``tc``.
        Instant-time rule (0.x): that slice with all its logs -- 0.x refused to schedule
        while a write older than ``tc`` was inflight, which is what made this safe.
        File groups that are replaced, in pending clustering, or already under
        another pending compaction are skipped, as are slices with no log to compact.
        """
        out: dict[FileGroupId, FileSlice] = {}
        for gid, fg in self._groups.items():
            if self._replaced_by(gid, None) or gid in self.pending_clustering:
                continue
            pc = self.pending_compactions.get(gid)
            if pc is not None and pc != tc:
                continue
            s = next((s for s in fg.slices if s.base_instant < tc and self._slice_committed(s.base_instant)), None)
            if s is None:
                continue
            if self.rule == INSTANT_TIME:
                logs = s.log_files
            else:
                before = self.times.is_completed_before
                logs = tuple(lg for lg in s.log_files if before(tc, lg.delta_commit_time))
            if not logs:
                continue
            base = s.base_file if s.base_file is not None and self.times.is_completed(s.base_instant) else None
            out[gid] = FileSlice(gid, s.base_instant, base, logs)
        return out


def compaction_schedule_refusal(timeline: Timeline, tc: str) -> str | None:
    """0.x ``ScheduleCompactionActionExecutor#execute`` (single writer, eager rollback): why a
    compaction may not be scheduled at ``tc``, or ``None`` when it may.

    0.x refuses while a write instant *older* than ``tc`` is pending ("Earliest write inflight
    instant time must be later than compaction time"): such a write may still append a log to the
    slice the plan is about to compact. The check sees only *published* instants: a writer that has
    generated its time but not yet created its requested file is invisible to it -- generating a
    time and publishing it are two steps unless one lock covers both (``hudi-semantics.md`` 1.8,
    ``BaseHoodieWriteClient.startCommit`` inside ``txnManager.beginTransaction``; HUDI-8464).
    """
    older = sorted(i.requested_time for i in timeline.pending(DATA_WRITES_FOR_GUARD) if i.requested_time < tc)
    if older:
        return f"write {older[0]} is pending and older than compaction {tc}"
    return None


def compaction_inputs(plans: Mapping[str, Mapping[tuple, FileSlice]]) -> dict[str, tuple]:
    """Per compaction instant, the base and log files its plan merges (``HoodieCompactionOperation``
    per file group: ``dataFilePath`` and ``deltaFilePaths``; ``CompactionUtils.buildFromFileSlice``).

    ``plans``: compaction instant -> the slices it compacts (:meth:`FileSystemView.compaction_plan_files`
    when it was scheduled). ``I8.snapshot-completeness`` uses this to know what a compaction's base
    file holds (:func:`model.invariants.timeline.compaction_holds`).
    """
    return {tc: tuple(f for s in slices.values() for f in s.files) for tc, slices in plans.items()}


__all__ = [
    "INSTANT_TIME", "COMPLETION_TIME", "FileGroupId", "FileSlice", "FileGroup", "CompletionTimes",
    "slice_key_instant_time", "slice_key_completion_time", "RULES", "rule_for_version", "build_file_groups",
    "ReadView", "IncrementalView", "FileSystemView", "compaction_schedule_refusal", "compaction_inputs",
]
