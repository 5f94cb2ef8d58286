"""The active timeline: instants as sets of state files, with guarded operations.

Each operation is one rule of ``ActiveTimelineV2`` / ``ActiveTimelineV1``
(``hudi-semantics.md`` 1.6-1.8, invariants I2-I5). The model stores, per
instant identity, which state files exist; the visible state is the highest
one present. Operations never generate times: callers pass times that a
:mod:`model.truetime` generator produced, and the timeline checks the rules
that concern it.

Layout 1 (table version 6) and layout 2 (versions 8/9) share the state machine;
they differ in file naming (see :mod:`model.filenames`), in where the completion
time lives (layout 1: file modification time, modelled as the same value), and
in which actions exist (``clustering`` is layout 2 only).

Storage (``storage``): ``"put-if-absent"`` (HDFS, local file systems, object stores with conditional
writes) makes ``createImmutableFileInPath`` fail when the file exists, so a second create of one
instant is refused (``I3.create-once``). ``"overwrite"`` models an object store without
put-if-absent: the create silently replaces the file. Then two processes that obtained the same
instant time (a collision, see :mod:`model.truetime`) both "create" it, and later writes of one
replace the other's requested/inflight/completed files. Each record keeps who wrote each of its
state files (``writers``, a history variable; callers name themselves with ``by=``), and
``I3.single-writer`` (:func:`model.invariants.timeline.check_single_writer`) flags an instant whose
files were written by more than one process. TrueTime's lock makes the times unique, so no two
processes ever write one instant's files, whatever the storage.

This is the specification: a plain mapping of records, copied in full by :meth:`Timeline.copy`.
The engine runs :class:`engine.timeline.Timeline`, the same API with copy-on-write records and
memoised keys; ``tests/test_fastpaths.py`` keeps the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator

from .errors import TimelineError
from .instant import (
    DATA_WRITE_ACTIONS,
    LAYOUT2_ONLY,
    STARTS_INFLIGHT,
    WRITE_ACTIONS,
    Action,
    Instant,
    InstantKey,
    State,
    is_time,
)

LAYOUT_OF_VERSION = {6: 1, 8: 2, 9: 2}

PUT_IF_ABSENT = "put-if-absent"
OVERWRITE = "overwrite"
#: Storage modes: whether an existing file makes an immutable create fail (``createImmutableFileInPath``).
STORAGE_MODES = (PUT_IF_ABSENT, OVERWRITE)


def layout_for_version(table_version: int) -> int:
    """Timeline layout of a table version (``HoodieTableVersion`` / ``TimelineLayoutVersion``)."""
    try:
        return LAYOUT_OF_VERSION[table_version]
    except KeyError:
        raise ValueError(
            f"unknown table version {table_version}; supported: {sorted(LAYOUT_OF_VERSION)}"
        ) from None


@dataclass
class _Record:
    """The state files of one instant on storage (and its completion time once completed)."""

    requested_time: str
    action: Action  # the action the instant was started with
    states: set[State] = field(default_factory=set)
    completion_time: str | None = None
    #: history: per state file, every process that wrote it, in order (only callers that pass ``by``)
    writers: dict = field(default_factory=dict)

    def wrote(self, state: State, by: str | None) -> None:
        """Record that ``by`` wrote (or overwrote) the ``state`` file."""
        if by is not None:
            self.writers.setdefault(state, []).append(by)

    @property
    def state(self) -> State:
        """The visible state: the highest state file present (``filterHoodieInstantsByLatestState``)."""
        return max(self.states)

    def view(self) -> Instant:
        """The instant as readers see it: the visible state, and the completion time once completed."""
        state = self.state
        return Instant(self.requested_time, self.action, state,
                       self.completion_time if state is State.COMPLETED else None)


class Timeline:
    """An active timeline of one table: per instant identity, the state files present.

    ``_records`` maps each identity (:class:`InstantKey`) to its :class:`_Record`; ``_pending`` is
    the set of identities not completed (kept with every operation; ``pending_times`` reads it and
    the property suite checks it never goes stale).

    >>> tl = Timeline(table_version=8)
    >>> _ = tl.create("20250101000000000", Action.COMMIT)
    >>> _ = tl.transition_to_inflight("20250101000000000", Action.COMMIT)
    >>> _ = tl.complete("20250101000000000", Action.COMMIT, "20250101000000100")
    >>> [str(i) for i in tl.completed()]
    ['20250101000000000->20250101000000100.commit[completed]']
    """

    def __init__(self, table_version: int = 9, *, storage: str = PUT_IF_ABSENT):
        self.table_version = table_version
        self.layout = layout_for_version(table_version)
        if storage not in STORAGE_MODES:
            raise ValueError(f"unknown storage mode {storage!r}; expected one of {STORAGE_MODES}")
        self.storage = storage
        self._records: dict[InstantKey, _Record] = {}
        self._pending: set[InstantKey] = set()

    # ------------------------------------------------------------------ helpers
    def _key(self, requested_time: str, action: Action) -> InstantKey:
        """The identity of an instant: (requested time, comparable action)."""
        return InstantKey.of(requested_time, action)

    def _record(self, requested_time: str, action: Action, rule: str) -> _Record:
        """The record of an instant on the timeline (``TimelineError(rule)`` if absent)."""
        rec = self._records.get(self._key(requested_time, action))
        if rec is None:
            raise TimelineError(rule, f"no instant {requested_time}.{Action(action).value} on the timeline")
        return rec

    def copy(self) -> "Timeline":
        """An independent copy: every record is copied (its own set of state files)."""
        other = Timeline(self.table_version, storage=self.storage)
        for key, rec in self._records.items():
            other._records[key] = _Record(rec.requested_time, rec.action, set(rec.states), rec.completion_time,
                                          {st: list(w) for st, w in rec.writers.items()})
        other._pending = set(self._pending)
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
        key = self._key(requested_time, action)
        if key in self._records:
            raise TimelineError("I3.create-once", f"instant {requested_time}.{action.value} loaded twice")
        if completion_time is not None and State.COMPLETED not in states:
            raise TimelineError("I2.requested-before-completion",
                                f"pending instant {requested_time}.{action.value} has a completion time")
        rec = _Record(requested_time, action, states, completion_time)
        self._records[key] = rec
        if State.COMPLETED not in states:
            self._pending.add(key)
        return rec.view()

    def create(self, requested_time: str, action: Action, *, allow_during_restore: bool = False,
               by: str | None = None) -> Instant:
        """``createNewInstant``: write the first state file (requested; inflight for savepoint).

        Guards: a canonical time; an action valid in this layout; the file must not
        exist (immutable create, so an instant is created once); no new data write
        while a restore is pending (I5, ``BaseHoodieWriteClient.startCommit``).
        ``by`` names the writing process (recorded in ``writers``). On ``overwrite``
        storage the immutable create cannot fail: creating an existing instant of the
        same action rewrites its first state file (:meth:`_overwrite`).
        """
        action = Action(action)
        if not is_time(requested_time):
            raise TimelineError("I1.time-format", f"requested time {requested_time!r} is not 17 digits")
        if action in LAYOUT2_ONLY and self.layout == 1:
            raise TimelineError("I4.layout-action",
                                f"action {action.value} does not exist in timeline layout 1 (table version 6)")
        key = self._key(requested_time, action)
        first = State.INFLIGHT if action in STARTS_INFLIGHT else State.REQUESTED
        if key in self._records and self.storage == OVERWRITE and self._records[key].action is action:
            return self._overwrite(self._records[key], first, by)
        if key in self._records:
            raise TimelineError("I3.create-once",
                                f"instant {requested_time}.{action.value} already exists ({self._records[key].view()})")
        if action in DATA_WRITE_ACTIONS and not allow_during_restore:
            pending_restore = sorted(r.requested_time for r in self._records.values()
                                     if r.action is Action.RESTORE and r.state is not State.COMPLETED)
            if pending_restore:
                raise TimelineError("I5.no-write-during-restore",
                                    f"cannot start {requested_time}.{action.value}: restore "
                                    f"{pending_restore[0]} is pending")
        rec = _Record(requested_time, action, {first})
        rec.wrote(first, by)
        self._records[key] = rec
        self._pending.add(key)
        return rec.view()

    def _overwrite(self, rec: _Record, state: State, by: str | None) -> Instant:
        """``overwrite`` storage: a create of a file that exists replaces it (no put-if-absent).

        The visible state is unchanged (the file was already there, or a higher one is); the
        write is recorded, so ``I3.single-writer`` sees a second process writing this instant.
        """
        rec.states.add(state)
        rec.wrote(state, by)
        return rec.view()

    def transition_to_inflight(self, requested_time: str, action: Action, *, by: str | None = None) -> Instant:
        """``transitionRequestedToInflight``: the requested file must exist, the inflight must not.

        On ``overwrite`` storage "must not exist" cannot be enforced: with the requested file
        present, an existing inflight file is rewritten (:meth:`_overwrite`).
        """
        rec = self._record(requested_time, action, "I3.legal-transition")
        if self.storage == OVERWRITE and rec.state is not State.REQUESTED and State.REQUESTED in rec.states:
            return self._overwrite(rec, State.INFLIGHT, by)
        if rec.state is not State.REQUESTED:
            raise TimelineError("I3.legal-transition",
                                f"{rec.view()} cannot move to inflight: it is {rec.state.label}, not requested")
        rec.states.add(State.INFLIGHT)
        rec.wrote(State.INFLIGHT, by)
        return rec.view()

    def complete(self, requested_time: str, action: Action, completion_time: str, *,
                 by: str | None = None) -> Instant:
        """``saveAsComplete``: inflight -> completed with a completion time (I2, I3).

        The completion time must come from the same TrueTime lock section as the
        creation of the completed file; the timeline checks what it can: the time
        is canonical and strictly after the requested time, and the instant has
        never completed.

        On ``overwrite`` storage a second completion is not refused: in layout 1 it
        replaces ``t.<action>`` (the earlier commit metadata is lost; the completion
        time, the file's modification time, becomes the new one); in layout 2 it adds a
        second ``t_c2.<action>`` beside ``t_c1.<action>``; the model keeps the first
        completion time visible (which one Hudi's listing keeps is not fixed -- inferred).
        """
        rec = self._record(requested_time, action, "I3.legal-transition")
        if rec.state is State.COMPLETED and self.storage == OVERWRITE:
            if not is_time(completion_time):
                raise TimelineError("I1.time-format", f"completion time {completion_time!r} is not 17 digits")
            if not completion_time > requested_time:
                raise TimelineError("I2.requested-before-completion",
                                    f"completion time {completion_time} is not after requested time {requested_time}")
            if self.layout == 1:
                rec.completion_time = completion_time
            return self._overwrite(rec, State.COMPLETED, by)
        if rec.state is State.COMPLETED:
            raise TimelineError("I3.complete-once", f"{rec.view()} is already completed")
        if rec.state is not State.INFLIGHT:
            raise TimelineError("I3.legal-transition",
                                f"{rec.view()} cannot complete: it is {rec.state.label}, not inflight")
        if not is_time(completion_time):
            raise TimelineError("I1.time-format", f"completion time {completion_time!r} is not 17 digits")
        if not completion_time > requested_time:
            raise TimelineError("I2.requested-before-completion",
                                f"completion time {completion_time} is not after requested time {requested_time}")
        rec.states.add(State.COMPLETED)
        rec.completion_time = completion_time
        rec.wrote(State.COMPLETED, by)
        self._pending.discard(self._key(requested_time, action))
        return rec.view()

    def revert_inflight_to_requested(self, requested_time: str, action: Action) -> Instant:
        """``revertInstantFromInflightToRequested`` (compaction/logcompaction): delete the inflight file."""
        rec = self._record(requested_time, action, "I3.revert")
        if rec.action not in (Action.COMPACTION, Action.LOGCOMPACTION):
            raise TimelineError("I3.revert", f"only compaction/logcompaction revert to requested, not {rec.action.value}")
        if rec.state is not State.INFLIGHT:
            raise TimelineError("I3.revert", f"{rec.view()} is not inflight")
        rec.states.discard(State.INFLIGHT)
        rec.states.add(State.REQUESTED)
        return rec.view()

    def revert_to_inflight(self, requested_time: str, action: Action) -> Instant:
        """``revertToInflight``: make sure requested+inflight files exist, then delete the completed file."""
        rec = self._record(requested_time, action, "I3.revert")
        if rec.state is not State.COMPLETED:
            raise TimelineError("I3.revert", f"{rec.view()} is not completed")
        rec.states = {State.INFLIGHT} if rec.action in STARTS_INFLIGHT else {State.REQUESTED, State.INFLIGHT}
        rec.completion_time = None
        self._pending.add(self._key(requested_time, action))
        return rec.view()

    def delete(self, requested_time: str, action: Action, *, allow_completed: bool = False) -> Instant:
        """``deletePending`` / ``deleteInstantFileIfExists``: remove every state file of an instant.

        Deleting a completed instant is only allowed when the caller says so
        (``deleteCompletedRollback``, restore, archival).
        """
        rec = self._record(requested_time, action, "I3.delete")
        if rec.state is State.COMPLETED and not allow_completed:
            raise TimelineError("I3.delete", f"{rec.view()} is completed; deleting it needs allow_completed")
        key = self._key(requested_time, action)
        del self._records[key]
        self._pending.discard(key)
        return rec.view()

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants())

    def instants(self) -> list[Instant]:
        """All instants, ordered by (requested time, action)."""
        return [self._records[k].view() for k in sorted(self._records, key=lambda k: (k.requested_time, k.action))]

    def get(self, requested_time: str, action: Action) -> Instant | None:
        rec = self._records.get(self._key(requested_time, action))
        return rec.view() if rec else None

    def find(self, requested_time: str) -> list[Instant]:
        """Instants with this requested time (normally at most one)."""
        return [r.view() for k, r in self._records.items() if k.requested_time == requested_time]

    def writers_of(self, requested_time: str, action: Action) -> dict[State, tuple[str, ...]]:
        """Who wrote each state file of an instant, in order (empty when no caller named itself)."""
        rec = self._records.get(self._key(requested_time, action))
        return {} if rec is None else {st: tuple(w) for st, w in rec.writers.items()}

    def states_present(self, requested_time: str, action: Action) -> frozenset[State]:
        rec = self._records.get(self._key(requested_time, action))
        return frozenset(rec.states) if rec else frozenset()

    def pending_times(self, action: Action) -> list[str]:
        """Requested times of pending instants of one action, ascending."""
        action = Action(action)
        return sorted(self._records[k].requested_time for k in self._pending if self._records[k].action is action)

    def state_of(self, requested_time: str, action: Action) -> State | None:
        """Visible state of one instant, or None when absent."""
        rec = self._records.get(self._key(requested_time, action))
        return None if rec is None else rec.state

    def state_signature(self) -> tuple:
        """A hashable (requested time, visible state) summary, for state hashing in exploration."""
        return tuple(sorted((r.requested_time, r.state) for r in self._records.values()))

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
        out = [i for i in self.completed()
               if (start is None or i.completion_time > start) and (end is None or i.completion_time <= end)]
        return sorted(out, key=lambda i: (i.completion_time, i.requested_time))

    def last_completed(self, actions: Iterable[Action] | None = None) -> Instant | None:
        done = self.completed(actions)
        return done[-1] if done else None
