"""The engine's active timeline: :class:`model.timeline.Timeline` with copy-on-write records.

Same public API, same results and the same errors (rule names and messages) as the spec
:class:`model.timeline.Timeline`; ``tests/test_fastpaths.py`` keeps the two equal (random operation
sequences: same instants, same refusals, independent copies). What differs is speed only:

* :meth:`Timeline.copy` is O(instants) without copying any record: the records are shared
  copy-on-write. Each timeline holds an owner token; a record whose ``owner`` is not this timeline's
  token is copied before an operation changes it (:meth:`Timeline._record`). The explorer copies
  the table on every transition and changes one instant, so this is most of the saving;
* instant keys are plain tuples (hash and compare in C), memoised with ``lru_cache`` (the same few
  identities are looked up on every step of a run), and so are the immutable :class:`Instant`
  values the operations return;
* restore and pending instants are indexed, so the I5 guard and pending queries need no scan;
* an :class:`Action` argument skips the ``Action(value)`` Enum call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final, Iterable, Iterator, NamedTuple

from model.errors import TimelineError
from model.instant import (
    DATA_WRITE_ACTIONS,
    LAYOUT2_ONLY,
    STARTS_INFLIGHT,
    WRITE_ACTIONS,
    Action,
    Instant,
    State,
    comparable_action,
    is_time,
)
from model.timeline import LAYOUT_OF_VERSION, layout_for_version

__all__ = ["Timeline", "LAYOUT_OF_VERSION", "layout_for_version"]

# (Final: the compiled module reads the states as constants, not as attributes of the enum per use)
_REQUESTED: Final = State.REQUESTED
_INFLIGHT: Final = State.INFLIGHT
_COMPLETED: Final = State.COMPLETED


def as_action(value) -> Action:
    """``Action(value)``: an Action is returned as it is without the Enum call (~0.35 us, hot path)."""
    return value if type(value) is Action else Action(value)



class _Key(NamedTuple):
    """An instant's identity (:class:`InstantKey`'s fields) as the timeline's index key: a plain
    tuple hashes and compares in C, and the index is looked up several times per operation."""

    requested_time: str
    action: Action  # the comparable action


def _make_key(requested_time: str, action: Action) -> _Key:
    """The index key of an instant (``InstantKey.of``)."""
    return _Key(requested_time, comparable_action(as_action(action)))


#: :func:`_make_key` memoised: the same few identities are looked up on every step of a run (a
#: rebuild from storage, where every identity is new, calls :func:`_make_key` itself).
_key_of = lru_cache(maxsize=65536)(_make_key)


@lru_cache(maxsize=65536)
def _instant(requested_time: str, action: Action, state: State, completion_time: str | None) -> Instant:
    """``Instant(...)`` memoised: instants are immutable values, and every operation returns one
    (an exploration builds the same few on every step)."""
    return Instant(requested_time, action, state, completion_time)


@dataclass
class _Record:
    requested_time: str
    action: Action  # the action the instant was started with
    states: set[State] = field(default_factory=set)
    completion_time: str | None = None
    #: the token of the timeline that may change this record in place (see :meth:`Timeline.copy`)
    owner: Any = field(default=None, compare=False, repr=False)

    @property
    def state(self) -> State:
        return max(self.states)

    def copy(self, owner: object) -> "_Record":
        """A copy with its own set of state files, owned by ``owner`` (same class as this record)."""
        return type(self)(self.requested_time, self.action, set(self.states), self.completion_time, owner)

    def __reduce__(self):
        # pickled through the constructor (the parallel search moves states): compiled by mypyc, pickle's
        # _Record.__new__ would run __init__ without its arguments
        return type(self), (self.requested_time, self.action, self.states, self.completion_time, self.owner)

    def fields(self) -> tuple:
        """``Instant``'s fields: the visible state, and the completion time once completed."""
        state = self.state
        return self.requested_time, self.action, state, self.completion_time if state is _COMPLETED else None

    def view(self) -> Instant:
        return _instant(*self.fields())


class Timeline:
    """An active timeline of one table.

    >>> tl = Timeline(table_version=8)
    >>> _ = tl.create("20250101000000000", Action.COMMIT)
    >>> _ = tl.transition_to_inflight("20250101000000000", Action.COMMIT)
    >>> _ = tl.complete("20250101000000000", Action.COMMIT, "20250101000000100")
    >>> [str(i) for i in tl.completed()]
    ['20250101000000000->20250101000000100.commit[completed]']
    """

    def __init__(self, table_version: int = 9, _blank: bool = False):
        if _blank:  # for copy() to fill (compiled by mypyc, __new__ would run __init__)
            return
        self.table_version = table_version
        self.layout = layout_for_version(table_version)
        self._records: dict[_Key, _Record] = {}
        self._restores: set[_Key] = set()  # restore instants, so the I5 guard needs no scan
        self._pending: set[_Key] = set()   # instants not completed, so pending queries need no scan
        self._token = object()  # owner token of the records this timeline may change in place

    # ------------------------------------------------------------------ helpers
    def _key(self, requested_time: str, action: Action) -> _Key:
        return _key_of(requested_time, action)

    def _lookup(self, requested_time: str, action: Action, rule: str) -> tuple[_Key, _Record]:
        """The key and record of an instant on the timeline (``TimelineError(rule)`` if absent), to read."""
        key = self._key(requested_time, action)
        rec = self._records.get(key)
        if rec is None:
            raise TimelineError(rule, f"no instant {requested_time}.{Action(action).value} on the timeline")
        return key, rec

    def _record(self, requested_time: str, action: Action, rule: str) -> _Record:
        """The record of an instant, for an operation that may change it: a record shared with
        a copy of this timeline is copied first (copy-on-write, see :meth:`copy`)."""
        key, rec = self._lookup(requested_time, action, rule)
        if rec.owner is not self._token:
            rec = self._records[key] = rec.copy(self._token)
        return rec

    def copy(self) -> "Timeline":
        """An independent copy. The records are shared copy-on-write: both timelines now hold
        records owned by neither (this one takes a new token), so whichever changes an instant
        first copies its record (:meth:`_record`)."""
        other = Timeline(_blank=True)
        other.table_version, other.layout = self.table_version, self.layout
        other._records = dict(self._records)
        other._restores = set(self._restores)
        other._pending = set(self._pending)
        other._token = object()
        self._token = object()
        return other

    # --------------------------------------------------------------- operations
    def load(self, requested_time: str, action: Action, states, completion_time: str | None) -> Instant:
        """Record an instant exactly as found on storage (the state files present).

        Readers rebuild a timeline with this instead of replaying operations:
        storage may legally hold any subset of earlier state files (archival,
        ``revertToInflight``), so only what every layout guarantees is checked —
        at least one state file, one record per identity, and a completion time
        exactly when the completed file is present (layout 1 may not know it: None).
        """
        action = Action(action)
        states = {State(s) for s in states}
        if not states:
            raise TimelineError("I3.visible-state", f"instant {requested_time}.{action.value} has no state file")
        key = _make_key(requested_time, action)  # a rebuild loads each identity once: no memo
        if key in self._records:
            raise TimelineError("I3.create-once", f"instant {requested_time}.{action.value} loaded twice")
        if completion_time is not None and _COMPLETED not in states:
            raise TimelineError("I2.requested-before-completion",
                                f"pending instant {requested_time}.{action.value} has a completion time")
        rec = _Record(requested_time, action, states, completion_time, self._token)
        self._records[key] = rec
        if action is Action.RESTORE:
            self._restores.add(key)
        if _COMPLETED not in states:
            self._pending.add(key)
        return Instant(*rec.fields())

    def create(self, requested_time: str, action: Action, *, allow_during_restore: bool = False) -> Instant:
        """``createNewInstant``: write the first state file (requested; inflight for savepoint).

        Guards: a canonical time; an action valid in this layout; the file must not
        exist (immutable create, so an instant is created once); no new data write
        while a restore is pending (I5, ``BaseHoodieWriteClient.startCommit``).
        """
        action = as_action(action)
        if not is_time(requested_time):
            raise TimelineError("I1.time-format", f"requested time {requested_time!r} is not 17 digits")
        if action in LAYOUT2_ONLY and self.layout == 1:
            raise TimelineError("I4.layout-action",
                                f"action {action.value} does not exist in timeline layout 1 (table version 6)")
        key = self._key(requested_time, action)
        if key in self._records:
            raise TimelineError("I3.create-once",
                                f"instant {requested_time}.{action.value} already exists ({self._records[key].view()})")
        if action in DATA_WRITE_ACTIONS and not allow_during_restore:
            pending_restore = sorted(k.requested_time for k in self._restores
                                     if self._records[k].state is not _COMPLETED)
            if pending_restore:
                raise TimelineError("I5.no-write-during-restore",
                                    f"cannot start {requested_time}.{action.value}: restore "
                                    f"{pending_restore[0]} is pending")
        first = _INFLIGHT if action in STARTS_INFLIGHT else _REQUESTED
        rec = _Record(requested_time, action, {first}, owner=self._token)
        self._records[key] = rec
        if action is Action.RESTORE:
            self._restores.add(key)
        self._pending.add(key)
        return rec.view()

    def transition_to_inflight(self, requested_time: str, action: Action) -> Instant:
        """``transitionRequestedToInflight``: the requested file must exist, the inflight must not."""
        rec = self._record(requested_time, action, "I3.legal-transition")
        if rec.state is not _REQUESTED:
            raise TimelineError("I3.legal-transition",
                                f"{rec.view()} cannot move to inflight: it is {rec.state.label}, not requested")
        rec.states.add(_INFLIGHT)
        return rec.view()

    def complete(self, requested_time: str, action: Action, completion_time: str) -> Instant:
        """``saveAsComplete``: inflight -> completed with a completion time (I2, I3).

        The completion time must come from the same TrueTime lock section as the
        creation of the completed file; the timeline checks what it can: the time
        is canonical and strictly after the requested time, and the instant has
        never completed.
        """
        rec = self._record(requested_time, action, "I3.legal-transition")
        if rec.state is _COMPLETED:
            raise TimelineError("I3.complete-once", f"{rec.view()} is already completed")
        if rec.state is not _INFLIGHT:
            raise TimelineError("I3.legal-transition",
                                f"{rec.view()} cannot complete: it is {rec.state.label}, not inflight")
        if not is_time(completion_time):
            raise TimelineError("I1.time-format", f"completion time {completion_time!r} is not 17 digits")
        if not completion_time > requested_time:
            raise TimelineError("I2.requested-before-completion",
                                f"completion time {completion_time} is not after requested time {requested_time}")
        rec.states.add(_COMPLETED)
        rec.completion_time = completion_time
        self._pending.discard(self._key(requested_time, action))
        return rec.view()

    def revert_inflight_to_requested(self, requested_time: str, action: Action) -> Instant:
        """``revertInstantFromInflightToRequested`` (compaction/logcompaction): delete the inflight file."""
        rec = self._record(requested_time, action, "I3.revert")
        if rec.action not in (Action.COMPACTION, Action.LOGCOMPACTION):
            raise TimelineError("I3.revert", f"only compaction/logcompaction revert to requested, not {rec.action.value}")
        if rec.state is not _INFLIGHT:
            raise TimelineError("I3.revert", f"{rec.view()} is not inflight")
        rec.states.discard(_INFLIGHT)
        rec.states.add(_REQUESTED)
        return rec.view()

    def revert_to_inflight(self, requested_time: str, action: Action) -> Instant:
        """``revertToInflight``: make sure requested+inflight files exist, then delete the completed file."""
        rec = self._record(requested_time, action, "I3.revert")
        if rec.state is not _COMPLETED:
            raise TimelineError("I3.revert", f"{rec.view()} is not completed")
        rec.states = {_INFLIGHT} if rec.action in STARTS_INFLIGHT else {_REQUESTED, _INFLIGHT}
        rec.completion_time = None
        self._pending.add(self._key(requested_time, action))
        return rec.view()

    def delete(self, requested_time: str, action: Action, *, allow_completed: bool = False) -> Instant:
        """``deletePending`` / ``deleteInstantFileIfExists``: remove every state file of an instant.

        Deleting a completed instant is only allowed when the caller says so
        (``deleteCompletedRollback``, restore, archival).
        """
        key, rec = self._lookup(requested_time, action, "I3.delete")
        if rec.state is _COMPLETED and not allow_completed:
            raise TimelineError("I3.delete", f"{rec.view()} is completed; deleting it needs allow_completed")
        del self._records[key]
        self._restores.discard(key)
        self._pending.discard(key)
        return rec.view()

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants())

    def instants(self) -> list[Instant]:
        """All instants, ordered by (requested time, action)."""
        return [self._records[k].view() for k in sorted(self._records)]

    def get(self, requested_time: str, action: Action) -> Instant | None:
        rec = self._records.get(self._key(requested_time, action))
        return rec.view() if rec else None

    def find(self, requested_time: str) -> list[Instant]:
        """Instants with this requested time (normally at most one)."""
        return [r.view() for k, r in self._records.items() if k.requested_time == requested_time]

    def states_present(self, requested_time: str, action: Action) -> frozenset[State]:
        rec = self._records.get(self._key(requested_time, action))
        return frozenset(rec.states) if rec else frozenset()

    def pending_times(self, action: Action) -> list[str]:
        """Requested times of pending instants of one action, ascending (no Instant objects: hot path)."""
        action = as_action(action)
        records = self._records
        return sorted(r.requested_time for r in map(records.__getitem__, self._pending) if r.action is action)

    def state_of(self, requested_time: str, action: Action) -> State | None:
        """Visible state of one instant, or None when absent (no Instant object: hot path)."""
        rec = self._records.get(_key_of(requested_time, action))
        return None if rec is None else max(rec.states)

    def state_signature(self) -> tuple:
        """A hashable (requested time, visible state) summary, for state hashing in exploration."""
        out = []
        for r in self._records.values():  # (a loop, not a generator: compiled, no generator object per call)
            out.append((r.requested_time, max(r.states)))
        out.sort()
        return tuple(out)

    def completed(self, actions: Iterable[Action] | None = None) -> list[Instant]:
        acts = None if actions is None else {Action(a) for a in actions}
        return [i for i in self.instants()
                if i.is_completed and (acts is None or i.action in acts or i.shown_action in acts)]

    def pending(self, actions: Iterable[Action] | None = None) -> list[Instant]:
        acts = None if actions is None else {Action(a) for a in actions}
        return [i for i in self.instants() if i.is_pending and (acts is None or i.action in acts)]

    def write_timeline(self) -> list[Instant]:
        """``getWriteTimeline``: commits, deltacommits, compaction, logcompaction, replace/clustering."""
        return [i for i in self.instants() if i.action in WRITE_ACTIONS]

    def is_completed(self, requested_time: str) -> bool:
        return any(i.is_completed for i in self.find(requested_time))

    def completion_time(self, requested_time: str) -> str | None:
        """Completion time of the instant requested at this time, or None while pending/unknown."""
        for i in self.find(requested_time):
            if i.is_completed:
                return i.completion_time
        return None

    def contiguous_completed_prefix(self) -> list[Instant]:
        """``getContiguousCompletedWriteTimeline``: completed writes with no pending write before them."""
        out: list[Instant] = []
        for i in self.write_timeline():
            if i.is_pending:
                break
            out.append(i)
        return out

    def completed_in_range(self, start: str | None, end: str | None) -> list[Instant]:
        """Completed instants whose completion time is in ``(start, end]`` (incremental reads, tv8+).

        ``None`` leaves that end open. Ordered by completion time.
        """
        out = []
        for i in self.completed():
            t: Any = i.completion_time  # (a completed instant has one; Any: the field is Optional)
            if (start is None or t > start) and (end is None or t <= end):
                out.append(i)
        return sorted(out, key=lambda i: (i.completion_time, i.requested_time))

    def last_completed(self, actions: Iterable[Action] | None = None) -> Instant | None:
        done = self.completed(actions)
        return done[-1] if done else None
