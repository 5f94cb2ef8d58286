"""File-name codec: timeline (instant) files, base files and log files, both directions.

Pure: names in, values out. Malformed names raise :class:`model.errors.CodecError`
(``name``, ``problem``). Facts from ``hudi-semantics.md`` 1.6, 1.7 and 1.9.

Public API (stable; other modules and ``lakeio.ondisk`` build on it)
-----------------------------------------------------------------------

Timeline files (``LAYOUT_1`` = table version 6, ``LAYOUT_2`` = versions 8/9;
see :func:`model.timeline.layout_for_version`):

* :func:`is_timeline_file` ``(name) -> bool`` -- does the name claim to be an
  instant file? ``hoodie.properties``, folders (``.aux``, ``.schema``, ``.temp``,
  ``metadata``, ``timeline``, ``history``, ``archived``, ``.heartbeat`` ...),
  checksum files and LSM history files (``<min>_<max>_<layer>.parquet``) are not.
  Every name that starts with a digit is claimed (except LSM history files), so a
  claimed name that does not parse is an error, never silently skipped.
* :func:`parse_timeline_file` ``(name, layout, *, mtime=None) -> TimelineFile``.
* :func:`timeline_file_name` ``(requested_time, action, state, completion_time, layout) -> str``.
* :func:`timeline_files` ``(tl) -> list[str]`` -- every state file present on a
  :class:`model.timeline.Timeline`; :func:`completion_mtimes` ``(tl)`` -- the
  modification times a layout-1 writer leaves on completed files.
* :func:`timeline_from_files` ``(names, table_version, *, mtimes=None) -> Timeline``
  -- rebuild a model timeline from a listing (non-timeline names are skipped).

Data files (each value carries ``partition``, the relative partition path, ``""``
when not partitioned, and an optional ``size`` that is not part of equality):

* :class:`BaseFile` -- ``<fileId>_<writeToken>_<instantTime>.<ext>``;
  :meth:`BaseFile.parse`, :attr:`BaseFile.name`.
* :class:`LogFile` -- ``.<fileId>_<instant>.log.<version>[_<writeToken>][.cdc]``;
  :meth:`LogFile.parse`, :attr:`LogFile.name`, :attr:`LogFile.order_key`
  (``HoodieLogFile.LogFileComparator``). The instant in a log name means the
  **base instant of the slice** in table version 6 (:attr:`LogFile.base_commit_time`)
  and the **requested time of the deltacommit that wrote it** in 8/9
  (:attr:`LogFile.delta_commit_time`); both read the same field
  :attr:`LogFile.instant_time` -- which meaning applies is the slicing rule's call
  (:mod:`model.slicing`).
* :func:`parse_data_file` ``(name, partition="", size=None) -> BaseFile | LogFile | None``
  -- classify a name found in a partition folder (``None``: not a data file,
  e.g. ``.hoodie_partition_metadata``); :func:`parse_data_files` ``(entries)`` --
  the same over ``(name, partition[, size])`` tuples, returning ``(bases, logs)``.

This is the specification: each name is parsed by plain code, one rule after the
other. ``lakeio.ondisk.fastcodec`` has the same functions made fast for large
listings (a well-formed-name fast path, values built through slot setters, the
cyclic GC paused in bulk); ``tests/test_fastpaths.py`` keeps the two equal.

Times are kept exactly as written (14-digit legacy and longer-than-17 metadata
table times are accepted, :func:`model.instant.normalize_time`); comparisons are
plain string comparisons, as in Hudi (``InstantComparison``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from .errors import CodecError
from .instant import (
    COMPLETED_ACTION,
    LAYOUT2_ONLY,
    STARTS_INFLIGHT,
    Action,
    InstantKey,
    State,
    comparable_action,
    completed_action,
)
from .timeline import Timeline, layout_for_version


LAYOUT_1 = 1
LAYOUT_2 = 2
_LAYOUTS = (LAYOUT_1, LAYOUT_2)

_ACTION_OF = {a.value: a for a in Action}
#: Actions that may appear in a completed file name (no ``.compaction``, ``.logcompaction``,
#: ``.clustering`` completed extension exists: ``ActiveTimelineV2.VALID_EXTENSIONS_IN_ACTIVE_TIMELINE``).
_NOT_COMPLETED_NAMES = frozenset(COMPLETED_ACTION)
_STATE_SUFFIX = {"requested": State.REQUESTED, "inflight": State.INFLIGHT}

# InstantFileNameParserV2 uses ^(\d+(_\d+)?)(\.\w+)(\.\D+)?$ ; we are stricter on the pieces and
# report which piece is wrong.
_TIMELINE_RE = re.compile(r"^(\d+)(?:_(\d+))?\.([a-z]+)(?:\.([a-z]+))?$")
_LSM_HISTORY_RE = re.compile(r"^\d+_\d+_\d+\.parquet$")


def _check_time(name: str, value: str, what: str) -> None:
    n = len(value)
    if n != 14 and n < 17:
        raise CodecError(name, f"{what} {value!r} has {n} digits; expected 17 (14 legacy, more for metadata-table times)")


# ---------------------------------------------------------------------------------------- timeline


@dataclass(frozen=True, slots=True)
class TimelineFile:
    """One parsed timeline (instant state) file.

    ``action`` is the action *as seen in the name*: ``t.inflight`` gives ``commit``;
    a completed compaction ``t[_c].commit`` gives ``commit`` (its requested file
    ``t.compaction.requested`` gives ``compaction``; both share the identity
    :attr:`key`). ``completion_time`` is the one in a layout-2 name, else the
    ``mtime`` the caller passed for a completed file (layout 1 and legacy layout-2
    names: Hudi's readers take the file's modification time, ``InstantGeneratorV1`` /
    ``InstantGeneratorV2`` ``isLegacy``), else ``None``.
    """

    requested_time: str
    action: Action
    state: State
    completion_time: str | None = None

    @property
    def key(self) -> InstantKey:
        """Identity (requested time, comparable action), ``InstantComparatorV2.COMPARABLE_ACTIONS``."""
        return InstantKey(self.requested_time, comparable_action(self.action))

    def file_name(self, layout: int) -> str:
        return timeline_file_name(self.requested_time, self.action, self.state, self.completion_time, layout)


def is_timeline_file(name: str) -> bool:
    """True when ``name`` claims to be an instant file of the active timeline.

    Instant files start with their requested time, so a leading digit claims the
    name; everything else (``hoodie.properties``, ``.aux``, ``.schema``, ``.temp``,
    ``.heartbeat``, ``metadata``, ``timeline``, ``archived``, ``history``,
    ``.<file>.crc``) is not a timeline file. LSM history files
    (``<min>_<max>_<layer>.parquet``, ``LSMTimeline``) and the history
    ``manifest_N`` / ``_version_`` files are not active-timeline files either.
    """
    return bool(name) and name[0].isdigit() and _LSM_HISTORY_RE.match(name) is None


def parse_timeline_file(name: str, layout: int, *, mtime: str | None = None) -> TimelineFile:
    """Parse an instant file name of timeline ``layout`` (1: tv6, 2: tv8/9).

    Rules (``InstantFileNameParserV2``, ``InstantGeneratorV1/V2``, hudi-semantics 1.6):

    * ``t.<action>.requested`` (no savepoint), ``t.inflight`` (commit),
      ``t.<action>.inflight`` (not commit: that is written ``t.inflight``),
      completed ``t.<completedAction>`` (layout 1, and legacy files read by layout 2)
      or ``t_c.<completedAction>`` (layout 2 only);
    * completed names never carry ``compaction``/``logcompaction``/``clustering``;
      ``clustering`` does not exist in layout 1;
    * ``mtime`` (a 17-digit time) is used as completion time of a completed file
      whose name has none; otherwise such a file gets ``None``.
    """
    if layout not in _LAYOUTS:
        raise ValueError(f"unknown timeline layout {layout!r}; expected 1 or 2")
    m = _TIMELINE_RE.match(name)
    if m is None:
        if not is_timeline_file(name):
            raise CodecError(name, "not a timeline file")
        raise CodecError(name, "malformed instant file name; expected <time>[_<completion>].<action>[.requested|.inflight]")
    req, comp, act, suffix = m.groups()
    _check_time(name, req, "requested time")
    if act == "inflight" and suffix is None:
        action, state = Action.COMMIT, State.INFLIGHT
    else:
        action = _ACTION_OF.get(act)
        if action is None:
            raise CodecError(name, f"unknown action {act!r}")
        if suffix is None:
            state = State.COMPLETED
        else:
            state = _STATE_SUFFIX.get(suffix)
            if state is None:
                raise CodecError(name, f"unknown state suffix {suffix!r}; expected requested or inflight")
    if action in LAYOUT2_ONLY and layout == LAYOUT_1:
        raise CodecError(name, f"action {action.value} does not exist in timeline layout 1 (table version 6)")
    if state is State.COMPLETED:
        if action in _NOT_COMPLETED_NAMES:
            raise CodecError(name, f"no completed {action.value} file exists: it completes as "
                                   f"{COMPLETED_ACTION[action].value}")
        if comp is not None:
            if layout == LAYOUT_1:
                raise CodecError(name, "completion time in the name is timeline layout 2 (table version 8+) only")
            _check_time(name, comp, "completion time")
        else:
            comp = mtime
    else:
        if comp is not None:
            raise CodecError(name, f"a {state.label} file carries no completion time")
        if state is State.REQUESTED and action in STARTS_INFLIGHT:
            raise CodecError(name, f"{action.value} has no requested state")
        if state is State.INFLIGHT and action is Action.COMMIT and suffix is not None:
            raise CodecError(name, "commit inflight is written <time>.inflight, not <time>.commit.inflight")
    return TimelineFile(req, action, state, comp)


def timeline_file_name(requested_time: str, action: Action, state: State,
                       completion_time: str | None, layout: int) -> str:
    """The file name Hudi writes for one state of an instant (``InstantFileNameGeneratorV1/V2``).

    ``action`` may be the action the instant started with (``compaction``) or, for
    the completed state, the completed action (``commit``); I4's mapping is
    applied. Layout 2 completed names need ``completion_time``; layout 1 names
    never carry it (it lives in the file's modification time, see
    :func:`completion_mtimes`), so it is ignored there.
    """
    action = Action(action)
    state = State(state)
    shown = f"{requested_time}.{action.value}"
    if layout not in _LAYOUTS:
        raise ValueError(f"unknown timeline layout {layout!r}; expected 1 or 2")
    if not requested_time.isdigit():
        raise CodecError(shown, f"requested time {requested_time!r} is not digits")
    _check_time(shown, requested_time, "requested time")
    if action in LAYOUT2_ONLY and layout == LAYOUT_1:
        raise CodecError(shown, f"action {action.value} does not exist in timeline layout 1 (table version 6)")
    if state is State.REQUESTED:
        if action in STARTS_INFLIGHT:
            raise CodecError(shown, f"{action.value} has no requested state")
        return f"{requested_time}.{action.value}.requested"
    if state is State.INFLIGHT:
        if action is Action.COMMIT:
            return f"{requested_time}.inflight"
        return f"{requested_time}.{action.value}.inflight"
    done = completed_action(action).value
    if layout == LAYOUT_1:
        return f"{requested_time}.{done}"
    if completion_time is None:
        raise CodecError(shown, "a completed layout-2 file needs a completion time")
    if not completion_time.isdigit():
        raise CodecError(shown, f"completion time {completion_time!r} is not digits")
    _check_time(shown, completion_time, "completion time")
    return f"{requested_time}_{completion_time}.{done}"


def timeline_files(tl: Timeline) -> list[str]:
    """Every state file present on the model timeline, in (instant, state) order.

    Uses :meth:`Timeline.states_present`; the layout is the timeline's.
    """
    out: list[str] = []
    layout = tl.layout
    for inst in tl.instants():
        for st in sorted(tl.states_present(inst.requested_time, inst.action)):
            out.append(timeline_file_name(inst.requested_time, inst.action, st, inst.completion_time, layout))
    return out


def completion_mtimes(tl: Timeline) -> dict[str, str]:
    """Completed file name -> completion time, i.e. the modification time a writer leaves.

    Layout 1 readers take completion time from it (``CompletionTimeQueryViewV1``);
    pass it as ``mtimes`` to :func:`timeline_from_files` to round-trip a layout-1 timeline.
    """
    out: dict[str, str] = {}
    for inst in tl.completed():
        if inst.completion_time is not None:
            out[timeline_file_name(inst.requested_time, inst.action, State.COMPLETED,
                                   inst.completion_time, tl.layout)] = inst.completion_time
    return out


def timeline_from_files(names: Iterable[str], table_version: int, *,
                        mtimes: Mapping[str, str] | None = None) -> Timeline:
    """Rebuild a model :class:`Timeline` from the names of the active-timeline folder.

    ``TimelineLayout.filterHoodieInstantsByLatestState``: files are grouped by
    identity (requested time, comparable action) and the visible state is the
    highest present. The records are added faithfully (exactly the state files
    present, no guard replay: a listing may legally hold a completed file alone,
    e.g. mid-archival). The instant's action is the one in its lowest-state file
    (``t.compaction.requested`` + ``t.commit`` is a completed compaction; a lone
    ``t.commit`` is a commit, as Hudi also sees it).

    Completion time: layout 2 takes it from ``t_c.<action>``; a completed file
    without one (layout 1, or a legacy file in layout 2) takes ``mtimes[name]`` when
    given, else stays ``None`` -- tv6 readers use the file's modification time.

    Non-timeline names (:func:`is_timeline_file`) are skipped. Raises
    :class:`CodecError` for a claimed name that does not parse, and for two files
    of the same state of one instant (e.g. two completed files with different
    completion times, or ``t.compaction.requested`` next to ``t.commit.requested``).
    """
    layout = layout_for_version(table_version)
    mtimes = mtimes or {}
    # identity -> state -> (file name, parsed file), in listing order of the identities
    groups: dict[InstantKey, dict[State, tuple[str, TimelineFile]]] = {}
    for name in names:
        if not is_timeline_file(name):
            continue
        tf = parse_timeline_file(name, layout, mtime=mtimes.get(name))
        files = groups.setdefault(tf.key, {})
        if tf.state in files:
            raise CodecError(name, f"instant {tf.requested_time}.{tf.key.action.value} already has a "
                                   f"{tf.state.label} file {files[tf.state][0]}")
        files[tf.state] = (name, tf)
    tl = Timeline(table_version)
    for key, files in groups.items():
        lowest = files[min(files)][1]
        completed = files.get(State.COMPLETED)
        tl.load(key.requested_time, lowest.action, files, completed[1].completion_time if completed else None)
    return tl


# -------------------------------------------------------------------------------------- data files

_BASE_RE = re.compile(r"^([^_.][^_]*)_(\d+-\d+-\d+)_(\d+)\.([A-Za-z0-9]+)$")
# FSUtils.LOG_FILE_PATTERN: ^\.(.+)_(.*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(.cdc)?)?
# (stricter: digits-only instant, no .archive, anchored at the end).
_LOG_RE = re.compile(r"^\.(.+)_(\d+)\.log\.(\d+)(?:_(\d+-\d+-\d+)(\.cdc)?)?$")
#: Extensions of base files (``HoodieFileFormat``).
BASE_EXTENSIONS = frozenset({"parquet", "orc", "hfile", "lance"})


@dataclass(frozen=True, slots=True)
class BaseFile:
    """A base file ``<fileId>_<writeToken>_<instantTime>.<ext>`` (``FSUtils.makeBaseFileName``).

    ``instant_time`` is the requested time of the action that wrote it (for a
    compaction: the compaction instant). ``size`` is not part of equality.
    """

    file_id: str
    write_token: str
    instant_time: str
    ext: str = "parquet"
    partition: str = ""
    size: int | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        return f"{self.file_id}_{self.write_token}_{self.instant_time}.{self.ext}"

    @property
    def path(self) -> str:
        """Path relative to the table base path."""
        return f"{self.partition}/{self.name}" if self.partition else self.name

    @staticmethod
    def parse(name: str, partition: str = "", size: int | None = None) -> "BaseFile":
        m = _BASE_RE.match(name)
        if m is None:
            raise CodecError(name, "malformed base file name; expected <fileId>_<a-b-c>_<instantTime>.<ext>")
        fid, tok, t, ext = m.groups()
        _check_time(name, t, "instant time")
        return BaseFile(fid, tok, t, ext, partition, size)


@dataclass(frozen=True, slots=True)
class LogFile:
    """A log file ``.<fileId>_<instant>.log.<version>[_<writeToken>][.cdc]`` (``FSUtils.makeLogFileName``).

    ``instant_time`` is the instant in the name. Its meaning depends on the table
    version -- see :attr:`base_commit_time` (tv6) and :attr:`delta_commit_time`
    (tv8+). ``write_token`` is ``None`` for old names without one. ``size`` is not
    part of equality.
    """

    file_id: str
    instant_time: str
    version: int = 1
    write_token: str | None = None
    cdc: bool = False
    partition: str = ""
    size: int | None = field(default=None, compare=False)

    @property
    def base_commit_time(self) -> str:
        """Table version 6: the base instant of the file slice this log extends (``getBaseCommitTime``)."""
        return self.instant_time

    @property
    def delta_commit_time(self) -> str:
        """Table version 8+: the requested time of the deltacommit that wrote this log (``getDeltaCommitTime``)."""
        return self.instant_time

    @property
    def suffix(self) -> str:
        return ".cdc" if self.cdc else ""

    @property
    def name(self) -> str:
        tok = "" if self.write_token is None else f"_{self.write_token}"
        return f".{self.file_id}_{self.instant_time}.log.{self.version}{tok}{self.suffix}"

    @property
    def path(self) -> str:
        return f"{self.partition}/{self.name}" if self.partition else self.name

    @property
    def order_key(self) -> tuple:
        """``HoodieLogFile.LogFileComparator``: instant, version, write token (nulls first), suffix."""
        tok = self.write_token
        return (self.instant_time, self.version, tok is not None, tok or "", self.cdc)

    @staticmethod
    def parse(name: str, partition: str = "", size: int | None = None) -> "LogFile":
        m = _LOG_RE.match(name)
        if m is None:
            raise CodecError(name, "malformed log file name; expected .<fileId>_<instant>.log.<version>_<a-b-c>[.cdc]")
        fid, t, ver, tok, cdc = m.groups()
        _check_time(name, t, "instant time")
        return LogFile(fid, t, int(ver), tok, cdc is not None, partition, size)


def log_order_key(log: LogFile) -> tuple:
    """Sort key of ``HoodieLogFile.LogFileComparator`` (for ``sorted(..., key=log_order_key)``)."""
    return log.order_key


def is_log_file(name: str) -> bool:
    """The name claims to be a log file (``FSUtils.isLogFile``: a dot file with ``.log.`` in it)."""
    return name.startswith(".") and ".log." in name


def is_base_file(name: str) -> bool:
    """The name claims to be a base file: not a dot file, ends with a base-file extension."""
    if not name or name[0] == ".":
        return False
    dot = name.rfind(".")
    return dot > 0 and name[dot + 1:] in BASE_EXTENSIONS


def parse_data_file(name: str, partition: str = "", size: int | None = None) -> BaseFile | LogFile | None:
    """Classify a name found in a partition folder.

    Returns a :class:`LogFile` or :class:`BaseFile`, or ``None`` for names that are
    not data files (``.hoodie_partition_metadata[.parquet]``, ``.crc`` files,
    folders, ``_SUCCESS``). Raises :class:`CodecError` when the name claims to be a
    data file (:func:`is_log_file` / :func:`is_base_file`) but does not parse.
    """
    if is_log_file(name):
        if _LOG_RE.match(name) is None and name.endswith(".crc"):
            return None  # the checksum of a log file
        return LogFile.parse(name, partition, size)
    if is_base_file(name):
        return BaseFile.parse(name, partition, size)
    return None


def parse_data_files(entries: Iterable[tuple]) -> tuple[list[BaseFile], list[LogFile]]:
    """:func:`parse_data_file` over ``(name, partition[, size])`` tuples.

    Returns (base files, log files); names that are not data files are skipped;
    a malformed data-file name raises :class:`CodecError`.
    """
    bases: list[BaseFile] = []
    logs: list[LogFile] = []
    for entry in entries:
        f = parse_data_file(*entry)
        if isinstance(f, LogFile):
            logs.append(f)
        elif isinstance(f, BaseFile):
            bases.append(f)
    return bases, logs


__all__ = [
    "LAYOUT_1", "LAYOUT_2", "TimelineFile", "is_timeline_file", "parse_timeline_file", "timeline_file_name",
    "timeline_files", "completion_mtimes", "timeline_from_files", "BaseFile", "LogFile", "BASE_EXTENSIONS",
    "log_order_key", "is_log_file", "is_base_file", "parse_data_file", "parse_data_files",
]
