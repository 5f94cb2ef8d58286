"""Instants: times, actions, states and identity.

Hudi facts encoded here (see ``hudi-semantics.md`` section 1):

* instant times are ``yyyyMMddHHmmssSSS`` strings (17 digits) compared
  lexicographically (``InstantComparison``); legacy 14-digit second-granularity
  times parse by appending ``999`` and longer strings are truncated to 17
  (``HoodieInstantTimeGenerator.fixInstantTimeCompatibility``);
* the actions of ``HoodieTimeline.VALID_ACTIONS_IN_TIMELINE``;
* states REQUESTED < INFLIGHT < COMPLETED (``HoodieInstant.State`` order);
* an instant's identity is (requested time, comparable action)
  (``InstantComparatorV2.COMPARABLE_ACTIONS``) and its visible state is the
  highest state among its files (``TimelineLayout.filterHoodieInstantsByLatestState``);
* completed-action mapping compaction->commit, logcompaction->deltacommit,
  clustering->replacecommit (invariant I4).

The model keeps times in UTC; the time zone of a table only matters for
rendering wall-clock times, which the model never reads.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from enum import Enum, IntEnum

TIME_LEN = 17
LEGACY_TIME_LEN = 14

#: Reserved times from ``HoodieTimeline``.
INIT_INSTANT_TS = "00000000000000"
METADATA_BOOTSTRAP_INSTANT_TS = "00000000000001"
FULL_BOOTSTRAP_INSTANT_TS = "00000000000002"

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)  # the same instant as a naive UTC datetime (cheaper arithmetic)


class Action(str, Enum):
    COMMIT = "commit"
    DELTACOMMIT = "deltacommit"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    REPLACECOMMIT = "replacecommit"
    CLUSTERING = "clustering"
    COMPACTION = "compaction"
    LOGCOMPACTION = "logcompaction"
    RESTORE = "restore"
    INDEXING = "indexing"

    def __str__(self) -> str:  # pragma: no cover - cosmetic
        return self.value


class State(IntEnum):
    """Instant states in ``HoodieInstant.State`` order; comparison gives "highest state"."""

    REQUESTED = 1
    INFLIGHT = 2
    COMPLETED = 3

    @property
    def label(self) -> str:
        return self.name.lower()


#: Actions whose completed form uses another action name (invariant I4).
COMPLETED_ACTION = {
    Action.COMPACTION: Action.COMMIT,
    Action.LOGCOMPACTION: Action.DELTACOMMIT,
    Action.CLUSTERING: Action.REPLACECOMMIT,
}

#: Actions that write data files ("write timeline": ``getWriteTimeline``).
WRITE_ACTIONS = frozenset(
    {
        Action.COMMIT,
        Action.DELTACOMMIT,
        Action.REPLACECOMMIT,
        Action.CLUSTERING,
        Action.COMPACTION,
        Action.LOGCOMPACTION,
    }
)

#: Actions a client starts as a new write (``BaseHoodieWriteClient.startCommit``).
DATA_WRITE_ACTIONS = frozenset({Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT})

#: Actions whose first state is INFLIGHT (savepoint has no requested file).
STARTS_INFLIGHT = frozenset({Action.SAVEPOINT})

#: Actions that exist only in timeline layout 2 (table version 8+).
LAYOUT2_ONLY = frozenset({Action.CLUSTERING})


def as_action(value) -> Action:
    """``Action(value)``: the action named by ``value`` (an :class:`Action` or its string)."""
    return Action(value)


def comparable_action(action: Action) -> Action:
    """The action used for identity: compaction~commit, logcompaction~deltacommit, clustering~replacecommit."""
    return COMPLETED_ACTION.get(action, action)


def completed_action(action: Action) -> Action:
    """The action named in the completed file of an instant started as ``action`` (I4)."""
    return COMPLETED_ACTION.get(action, action)


def is_time(value: object) -> bool:
    """True for a canonical 17-digit instant time."""
    return isinstance(value, str) and len(value) == TIME_LEN and value.isdigit()


#: The reserved times of ``HoodieTimeline`` (init, metadata bootstrap, full bootstrap): legal instant
#: times although no calendar date.
RESERVED_TIMES = frozenset({INIT_INSTANT_TS, METADATA_BOOTSTRAP_INSTANT_TS, FULL_BOOTSTRAP_INSTANT_TS})

_FIELDS = (("month", 4, 6, 1, 12), ("day", 6, 8, 1, 31), ("hour", 8, 10, 0, 23), ("minute", 10, 12, 0, 59),
           ("second", 12, 14, 0, 59))


def time_problem(value: object) -> str | None:
    """Why ``value`` is not an instant time Hudi could have generated, or ``None`` when it is one.

    An instant time is ``yyyyMMddHHmmssSSS`` (``HoodieInstantTimeGenerator.MILLIS_INSTANT_TIMESTAMP_FORMAT``;
    14-digit legacy times and longer metadata-table times are read through :func:`normalize_time`)
    naming a real calendar date and time: ``createNewInstantTime`` formats a clock reading, and
    ``parseDateFromInstantTime`` parses it back with that pattern, so month 13, second 99 or
    February 30 never come from Hudi. The reserved times of :data:`RESERVED_TIMES` are legal.
    """
    if not isinstance(value, str) or not value.isdigit() or not value.isascii():
        return "is not a string of digits"
    n = len(value)
    if n != LEGACY_TIME_LEN and n < TIME_LEN:
        return f"has {n} digits; expected 14 or 17"
    if value[:LEGACY_TIME_LEN] in RESERVED_TIMES:
        return None
    year = int(value[:4])
    if year < 1:
        return "year 0000 is out of range"
    for what, a, b, lo, hi in _FIELDS:
        v = int(value[a:b])
        if not lo <= v <= hi:
            return f"{what} {value[a:b]} is out of range {lo:02d}-{hi:02d}"
    month, day = int(value[4:6]), int(value[6:8])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]
    if day > days:
        return f"day {value[6:8]} does not exist in month {value[4:6]} of {value[:4]}"
    return None


def is_calendar_time(value: object) -> bool:
    """True for a canonical 17-digit instant time that names a real date and time (:func:`time_problem`)."""
    return is_time(value) and time_problem(value) is None


def normalize_time(value: str) -> str:
    """Parse an instant time as Hudi does: 14-digit legacy gets ``999``, longer is cut to 17.

    Raises ``ValueError`` for anything that is not all digits of a usable length.
    """
    if not isinstance(value, str) or not value.isdigit():
        raise ValueError(f"instant time {value!r} is not a string of digits")
    if len(value) == LEGACY_TIME_LEN:
        return value + "999"
    if len(value) > TIME_LEN:
        return value[:TIME_LEN]
    if len(value) != TIME_LEN:
        raise ValueError(f"instant time {value!r} has {len(value)} digits; expected 14 or 17")
    return value


def format_millis(ms: int) -> str:
    """Epoch milliseconds (UTC) to a 17-digit instant time."""
    if ms < 0:
        raise ValueError(f"negative epoch milliseconds {ms}")
    seconds, millis = divmod(ms, 1000)
    d = _EPOCH_NAIVE + _dt.timedelta(0, seconds)
    # (fields formatted directly: strftime on an aware datetime costs twice as much; years >= 1970
    # have 4 digits, as %Y gives them)
    return "%04d%02d%02d%02d%02d%02d%03d" % (d.year, d.month, d.day, d.hour, d.minute, d.second, millis)


def to_millis(t: str) -> int:
    """A 17-digit instant time (UTC) to epoch milliseconds."""
    t = normalize_time(t)
    d = _dt.datetime.strptime(t[:14], "%Y%m%d%H%M%S").replace(tzinfo=_dt.timezone.utc)
    return int((d - _EPOCH).total_seconds()) * 1000 + int(t[14:])


@dataclass(frozen=True, order=True)
class InstantKey:
    """Identity of an instant: (requested time, comparable action)."""

    requested_time: str
    action: Action  # always a comparable action

    @staticmethod
    def of(requested_time: str, action: Action) -> "InstantKey":
        return InstantKey(requested_time, comparable_action(as_action(action)))


@dataclass(frozen=True)
class Instant:
    """A visible instant: the state is the highest state present among its files.

    ``action`` is the action the instant was started with (e.g. ``compaction``);
    ``completion_time`` is set only for completed instants (layout 2 names it;
    layout 1 derives it from the file's modification time).
    """

    requested_time: str
    action: Action
    state: State
    completion_time: str | None = None

    @property
    def key(self) -> InstantKey:
        return InstantKey.of(self.requested_time, self.action)

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def is_pending(self) -> bool:
        return self.state is not State.COMPLETED

    @property
    def shown_action(self) -> Action:
        """The action as Hudi shows it: the completed action once completed."""
        return completed_action(self.action) if self.is_completed else self.action

    def __str__(self) -> str:
        c = f"->{self.completion_time}" if self.completion_time else ""
        return f"{self.requested_time}{c}.{self.shown_action.value}[{self.state.label}]"
