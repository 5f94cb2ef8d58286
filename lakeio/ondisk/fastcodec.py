"""The model's file-name codec made fast for large listings (10^5-10^6 names).

Same functions, same values and the same errors as :mod:`model.filenames` (the specification);
``tests/test_fastpaths.py`` keeps the two equal on a fixture-like corpus and on random valid and
invalid names, and shows a deliberately broken fast path is caught. The rest of the codec API is
re-exported unchanged, so ``from lakeio.ondisk import fastcodec as fn`` is a drop-in for
``from model import filenames as fn``.

What is fast here (and only here):

* a **well-formed-name fast path**: one regex match and a table look-up accept the common case;
  any other name goes to the model's parser, which applies every rule and raises the precise error
  (so errors are the model's by construction);
* values are built through **generated slot setters** (:func:`make_value`) instead of the frozen
  dataclass ``__init__`` (which assigns by name through ``object.__setattr__``): 2-3x faster, the
  same frozen instance;
* the bulk entry points (:func:`timeline_from_files`, :func:`parse_data_files`) **pause the cyclic
  GC** (:func:`gc_paused`), which otherwise rescans millions of young acyclic objects and dominates
  the run time at 10^6 files.
"""

from __future__ import annotations

import gc
import re
from contextlib import contextmanager
from typing import Iterable, Mapping

from model import filenames as _spec
from model.errors import CodecError
from model.filenames import (  # noqa: F401 - re-exported: the rest of the codec API
    BASE_EXTENSIONS,
    LAYOUT_1,
    LAYOUT_2,
    BaseFile,
    LogFile,
    TimelineFile,
    completion_mtimes,
    is_base_file,
    is_log_file,
    is_timeline_file,
    log_order_key,
    timeline_file_name,
    timeline_files,
)
from model.instant import COMPLETED_ACTION, LAYOUT2_ONLY, STARTS_INFLIGHT, Action, State, comparable_action
from model.instant import InstantKey as _InstantKey
from model.timeline import Timeline, layout_for_version
from model.timeline import _Record as _TimelineRecord


@contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while building many small acyclic objects.

    Bulk parsing allocates millions of objects and no cycles; CPython's generational
    collector would rescan them over and over (most of the run time at 10^6 files).
    The previous state is restored on exit.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def make_value(cls):
    """A positional constructor for a frozen slots dataclass that skips its ``__init__``.

    Frozen ``__init__`` assigns through ``object.__setattr__`` by name; the parsers
    build values they have already validated, so they set the slots through the
    pre-bound member descriptors instead (2-3x faster). The result is the same
    frozen instance. The function is generated, as ``dataclasses`` generates ``__init__``.
    """
    fields = list(cls.__dataclass_fields__)
    ns = {"_new": object.__new__, "_cls": cls}
    ns.update({f"_set_{f}": cls.__dict__[f].__set__ for f in fields})
    body = "".join(f"    _set_{f}(o, {f})\n" for f in fields)
    exec(f"def make({', '.join(fields)}):\n    o = _new(_cls)\n{body}    return o\n", ns)  # noqa: S102
    return ns["make"]


# ---------------------------------------------------------------------------------------- timeline

#: The model's instant-file pattern (``model.filenames``), matched once on the fast path.
_TIMELINE_RE = re.compile(r"^(\d+)(?:_(\d+))?\.([a-z]+)(?:\.([a-z]+))?$")
_make_timeline_file = make_value(TimelineFile)
_COMPLETED = State.COMPLETED
_COMPARABLE = {a: comparable_action(a) for a in Action}


def _valid_kinds(layout: int) -> dict[tuple[str, str | None], tuple[Action, State]]:
    """(action text, state suffix) -> (action, state) for every well-formed name of ``layout``."""
    out: dict[tuple[str, str | None], tuple[Action, State]] = {}
    for a in Action:
        if a in LAYOUT2_ONLY and layout == LAYOUT_1:
            continue
        if a not in STARTS_INFLIGHT:
            out[(a.value, "requested")] = (a, State.REQUESTED)
        if a is Action.COMMIT:
            out[("inflight", None)] = (a, State.INFLIGHT)
        else:
            out[(a.value, "inflight")] = (a, State.INFLIGHT)
        if a not in COMPLETED_ACTION:  # no completed compaction/logcompaction/clustering name
            out[(a.value, None)] = (a, State.COMPLETED)
    return out


_KINDS = {layout: _valid_kinds(layout) for layout in (LAYOUT_1, LAYOUT_2)}


def parse_timeline_file(name: str, layout: int, *, mtime: str | None = None) -> TimelineFile:
    """:func:`model.filenames.parse_timeline_file`: a well-formed name is accepted here; any other
    goes to the model's parser (every rule, the precise error)."""
    m = _TIMELINE_RE.match(name)
    if m is not None:
        req, comp, act, suffix = m.groups()
        kinds = _KINDS.get(layout)
        kind = kinds.get((act, suffix)) if kinds is not None else None
        n = len(req)
        if kind is not None and (n >= 17 or n == 14):
            action, state = kind
            if state is _COMPLETED:
                if comp is None:
                    return _make_timeline_file(req, action, state, mtime)
                n = len(comp)
                if layout == LAYOUT_2 and (n >= 17 or n == 14):
                    return _make_timeline_file(req, action, state, comp)
            elif comp is None:
                return _make_timeline_file(req, action, state, None)
    return _spec.parse_timeline_file(name, layout, mtime=mtime)


def timeline_from_files(names: Iterable[str], table_version: int, *,
                        mtimes: Mapping[str, str] | None = None) -> Timeline:
    """:func:`model.filenames.timeline_from_files` with the fast parser, the cyclic GC paused."""
    with gc_paused():
        return _timeline_from_files(names, table_version, mtimes)


def _timeline_from_files(names: Iterable[str], table_version: int, mtimes: Mapping[str, str] | None) -> Timeline:
    layout = layout_for_version(table_version)
    mt = mtimes or {}
    groups: dict[tuple[str, Action], dict[State, tuple[str, TimelineFile]]] = {}
    for name in names:
        if not (name and name[0].isdigit()) or not is_timeline_file(name):
            continue
        tf = parse_timeline_file(name, layout, mtime=mt.get(name) if mt else None)
        key = (tf.requested_time, _COMPARABLE[tf.action])
        g = groups.get(key)
        if g is None:
            groups[key] = {tf.state: (name, tf)}
            continue
        prev = g.get(tf.state)
        if prev is not None:
            raise CodecError(name, f"instant {tf.requested_time}.{key[1].value} already has a "
                                   f"{tf.state.label} file {prev[0]}")
        g[tf.state] = (name, tf)
    tl = Timeline(table_version)
    # Timeline.load per identity, in bulk: the records are set directly. load's checks hold by construction
    # here (each identity once, on a fresh timeline; at least one state file; a completion time only with the
    # completed file), so what remains is the record, its key and the pending index (``_bulk_load``).
    _bulk_load(tl, groups)
    return tl


def _bulk_load(tl: Timeline, groups: dict) -> None:
    """``Timeline.load(req, action, states, completion)`` for every ``(req, comparable action) -> {state:
    (name, TimelineFile)}`` of a fresh timeline: the same ``_Record`` under the same ``InstantKey``, and
    the identities without a completed file in the pending index. ``tests/test_fastpaths.py`` compares
    the resulting timelines with the model's ``timeline_from_files``."""
    records, pending = tl._records, tl._pending  # noqa: SLF001 - the model's own load, without its checks
    key_new = _InstantKey
    rec_new = _TimelineRecord
    completed = _COMPLETED
    for (req, cmp_action), g in groups.items():
        key = key_new(req, cmp_action)
        done = g.get(completed)
        if done is None:
            records[key] = rec_new(req, g[min(g)][1].action, set(g), None)
            pending.add(key)
        else:
            records[key] = rec_new(req, g[min(g)][1].action, set(g), done[1].completion_time)


# -------------------------------------------------------------------------------------- data files

#: The model's data-file patterns (``model.filenames``).
_BASE_RE = re.compile(r"^([^_.][^_]*)_(\d+-\d+-\d+)_(\d+)\.([A-Za-z0-9]+)$")
_LOG_RE = re.compile(r"^\.(.+)_(\d+)\.log\.(\d+)(?:_(\d+-\d+-\d+)(\.cdc)?)?$")
_make_base = make_value(BaseFile)
_make_log = make_value(LogFile)
_match_log = _LOG_RE.match
_match_base = _BASE_RE.match


def parse_data_file(name: str, partition: str = "", size: int | None = None) -> BaseFile | LogFile | None:
    """:func:`model.filenames.parse_data_file`: well-formed names are accepted here; any other name
    that claims to be a data file goes to the model's parser (the precise error)."""
    if name[:1] == ".":
        if ".log." not in name:
            return None
        m = _match_log(name)
        if m is not None:
            fid, t, ver, tok, cdc = m.groups()
            n = len(t)
            if n >= 17 or n == 14:
                return _make_log(fid, t, int(ver), tok, cdc is not None, partition, size)
        return _spec.parse_data_file(name, partition, size)
    m = _match_base(name)
    if m is not None:
        fid, tok, t, ext = m.groups()
        n = len(t)
        if ext in BASE_EXTENSIONS and (n >= 17 or n == 14):
            return _make_base(fid, tok, t, ext, partition, size)
    return _spec.parse_data_file(name, partition, size)


def parse_data_files(entries: Iterable[tuple]) -> tuple[list[BaseFile], list[LogFile]]:
    """:func:`model.filenames.parse_data_files` with the fast parser, the cyclic GC paused."""
    bases: list[BaseFile] = []
    logs: list[LogFile] = []
    add_base, add_log = bases.append, logs.append
    with gc_paused():
        for e in entries:
            f = parse_data_file(*e)
            if f is None:
                continue
            if type(f) is LogFile:
                add_log(f)
            else:
                add_base(f)
    return bases, logs


__all__ = [
    "LAYOUT_1", "LAYOUT_2", "TimelineFile", "is_timeline_file", "parse_timeline_file", "timeline_file_name",
    "timeline_files", "completion_mtimes", "timeline_from_files", "BaseFile", "LogFile", "BASE_EXTENSIONS",
    "log_order_key", "is_log_file", "is_base_file", "parse_data_file", "parse_data_files", "gc_paused",
    "make_value",
]
