"""The table's rules: start a commit, complete it, roll back, clean, heartbeats (``hudi-semantics.md`` 4.2).

Each rule is a pure function ``State -> State`` (plus an outcome where the caller needs one). Timeline
changes go through the guarded operations of :class:`model.timeline.Timeline` (built from the state's
instants, changed, read back), so a rule the timeline enforces (create once, legal transitions, completion
after request) is enforced here too. The history records every commit attempt and every rollback; no rule
reads it.

* :func:`start_commit` (``BaseHoodieWriteClient.startCommit``): EAGER policy first rolls back every pending
  data instant (single-writer assumption); then requested -> inflight at the next logical time, heartbeat
  started.
* :func:`commit` (``writeClient.commit``): inflight -> completed at a new completion time, commit metadata
  visible, heartbeat stopped. An instant rolled back cannot complete (outcome "rolled-back": its data is
  lost); a completed one completing again (outcome "already-completed") is applied -- new statuses visible,
  as an overwritten completed file would be -- and the history shows it (I11.complete-once).
* :func:`rollback` deletes a pending instant and its files; :func:`clean` (LAZY,
  ``CleanerUtils.rollbackFailedWrites``) rolls back pending instants whose heartbeat expired.
"""

from __future__ import annotations

from dataclasses import replace

from ..instant import Action
from ..instant import State as InstantState
from ..timeline import Timeline
from .state import CommitAttempt, State, TableState, failed_writes, instant_state, pending_instants
from .values import logical_time


def _timeline(s: State) -> Timeline:
    """The state's timeline as a :class:`Timeline` to run one guarded operation on."""
    tl = Timeline(s.config.table_version)
    for i in s.table.timeline:
        tl.load(i.requested_time, i.action, {i.state}, i.completion_time)
    return tl


def _with_table(s: State, **changes) -> State:
    return replace(s, table=replace(s.table, **changes))


def _with_history(s: State, **changes) -> State:
    return replace(s, history=replace(s.history, **changes))


def start_heartbeat(s: State, instant: str) -> State:
    return _with_table(s, heartbeats=s.table.heartbeats | {instant})


def stop_heartbeat(s: State, instant: str) -> State:
    """``writeClient.cleanResources`` / a dead writer: the heartbeat expires."""
    return _with_table(s, heartbeats=s.table.heartbeats - {instant})


def stop_all_heartbeats(s: State) -> State:
    return _with_table(s, heartbeats=frozenset())


def rollback(s: State, instant: str) -> State:
    """Roll back a pending instant: its files and every state file are deleted."""
    tl = _timeline(s)
    tl.delete(instant, Action(s.config.action))
    s = _with_table(s, timeline=tuple(tl.instants()))
    s = stop_heartbeat(s, instant)
    return _with_history(s, rollbacks=s.history.rollbacks + (instant,))


def clean(s: State) -> State:
    """LAZY failed-writes rollback run by a clean: every pending instant whose heartbeat expired."""
    for t in failed_writes(s):
        s = rollback(s, t)
    return s


def start_commit(s: State) -> tuple[State, str]:
    """``startCommit``: (EAGER) roll back every pending data instant, then requested -> inflight at the next
    requested time of the logical clock, heartbeat started. Returns the new instant."""
    if s.config.eager:
        for t in pending_instants(s):
            s = rollback(s, t)
    created = s.table.created + 1
    instant = logical_time(created, 0)
    tl = _timeline(s)
    action = Action(s.config.action)
    tl.create(instant, action)
    tl.transition_to_inflight(instant, action)
    s = _with_table(s, timeline=tuple(tl.instants()), created=created, since=0)
    return start_heartbeat(s, instant), instant


def commit(s: State, instant: str, statuses: tuple, key: int, recommit: bool) -> tuple[State, str]:
    """``writeClient.commit`` of ``instant`` for checkpoint key ``key``. Returns the state and the outcome:
    "committed", "rolled-back" or "already-completed" (see the module docstring)."""
    how = "recommit" if recommit else "commit"
    state = instant_state(s.table, instant)
    if state is None:
        outcome = "rolled-back"
    elif state is InstantState.COMPLETED:
        outcome = "already-completed"
        meta = dict(s.table.metadata)
        meta[instant] = meta.get(instant, ()) + tuple(statuses)
        s = _with_table(s, metadata=tuple(sorted(meta.items())))
    else:
        outcome = "committed"
        since = s.table.since + 1
        tl = _timeline(s)
        tl.complete(instant, Action(s.config.action), logical_time(s.table.created, since))
        meta = dict(s.table.metadata)
        meta[instant] = tuple(statuses)
        s = _with_table(s, timeline=tuple(tl.instants()), metadata=tuple(sorted(meta.items())), since=since)
        s = stop_heartbeat(s, instant)
    return record_commit(s, key, instant, how, outcome), outcome


def record_commit(s: State, key: int, instant: str, how: str, outcome: str) -> State:
    """History: one more commit attempt."""
    return _with_history(s, commits=s.history.commits + (CommitAttempt(s.history.steps, key, instant, how, outcome),))
