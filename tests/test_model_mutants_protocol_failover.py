"""Focused tests for model.protocol.failover / .state helpers that `make mutate` showed unchecked by the fast
tests: what restarted tasks send (``StreamWriteFunction#sendBootstrapEvent``: after a task failover, an
empty bootstrap only; after a same-graph global failover with ``resend_on_global_failover``, the empty
bootstrap then the still-pending write metadata of the restored task state), and the instant-state helpers
(``filterPendingExcludingCompaction().containsInstant``)."""

from __future__ import annotations

from dataclasses import replace

from model.instant import Action, Instant, State as IState
from model.protocol import failover
from model.protocol.config import ProtocolConfig
from model.protocol.spec import init
from model.protocol.state import TableState, is_completed, is_pending
from model.protocol.values import (CompletedCheckpoint, TaskSnapshot, WriteMetadataEvent, WriteStatus,
                                   empty_bootstrap)

I1, I2 = "20250101000001000", "20250101000002000"


def restored_state(**cfg):
    """Async event delivery (messages stay in the channels, so what was sent is visible); checkpoint 1 holds
    task 0's write metadata under the still-pending instant I1."""
    s = init(ProtocolConfig(event_delivery="async", **cfg))
    ev = WriteMetadataEvent(0, 1, I1, (WriteStatus(0, 0, 1),), True)
    table = TableState(timeline=(Instant(I1, Action.DELTACOMMIT, IState.INFLIGHT),), heartbeats=frozenset({I1}))
    ckp = CompletedCheckpoint(1, (), (TaskSnapshot(1, 1, (ev,)), TaskSnapshot(0, 1, ())))
    return replace(s, table=table, last_completed=ckp), ev


def test_a_task_failover_sends_only_empty_bootstraps():
    s, _ = restored_state()
    after = failover.task_failover(s, 0)
    assert after.channels == ((empty_bootstrap(0, 1),), (empty_bootstrap(1, 1),))
    assert [w.attempt for w in after.writers] == [1, 1] and after.pending is None
    single = failover.task_failover(restored_state(task_failover="single")[0], 1)
    assert single.channels == ((), (empty_bootstrap(1, 1),))


def test_a_global_failover_resends_the_pending_task_state():
    s, ev = restored_state()
    after = failover.global_failover(s, False)
    assert after.channels == ((empty_bootstrap(0, 1), ev), (empty_bootstrap(1, 1),))
    assert not after.table.heartbeats  # stop_all_heartbeats
    off = failover.global_failover(restored_state(resend_on_global_failover=False)[0], False)
    assert off.channels == ((empty_bootstrap(0, 1),), (empty_bootstrap(1, 1),))
    # a recreated coordinator: tasks start at attempt 0 and send the restored pending state only
    fresh = failover.global_failover(s, True)
    assert fresh.channels == ((ev,), ()) and [w.attempt for w in fresh.writers] == [0, 0]


def test_instant_state_helpers():
    t = TableState(timeline=(Instant(I1, Action.DELTACOMMIT, IState.COMPLETED, I2),
                             Instant(I2, Action.DELTACOMMIT, IState.REQUESTED)))
    assert is_completed(t, I1) and not is_completed(t, I2) and not is_completed(t, "x")
    assert is_pending(t, I2) and not is_pending(t, I1) and not is_pending(t, "x")


def test_reset_to_checkpoint_restores_entries_and_starts_a_coordinator_epoch():
    """``StreamWriteOperatorCoordinator#resetToCheckpoint``: the serialized entries replace the working state (or,
    1.1.1's same-graph failover, are merged over it); a new epoch starts and every restored key counts as
    assigned (I10 is judged per epoch)."""
    from model.protocol.coordinator import reset_to_checkpoint
    from model.protocol.state import Assignment, CoordinatorState, History
    from model.protocol.values import BufferEntry
    s = init(ProtocolConfig())
    e1, e2, e3 = BufferEntry(I1, (None, None)), BufferEntry(I2, (None, None)), BufferEntry("x", (None, None))
    s = replace(s, coordinator=CoordinatorState(((1, e3), (5, e3)), "x"),
                history=History(steps=7, epoch=2, assignments=(Assignment(1, 2, 5, "x"),)))
    fresh = reset_to_checkpoint(s, ((3, e2), (1, e1)), keep_memory=False)
    assert fresh.coordinator.buffers == ((1, e1), (3, e2)) and fresh.coordinator.instant == ""
    assert fresh.history.epoch == 3
    assert fresh.history.assignments == (Assignment(1, 2, 5, "x"), Assignment(7, 3, 1, I1), Assignment(7, 3, 3, I2))
    kept = reset_to_checkpoint(s, ((3, e2), (1, e1)), keep_memory=True)
    assert kept.coordinator.buffers == ((1, e1), (3, e2), (5, e3)) and kept.coordinator.instant == "x"
    assert kept.history.assignments[1:] == (Assignment(7, 3, 1, I1), Assignment(7, 3, 3, I2), Assignment(7, 3, 5, "x"))


def test_global_failover_restores_the_checkpoint_and_recommits_the_entries_below_it():
    """A global failover (``resetToCheckpoint`` then ``restoreEvents``): heartbeats stopped, the pending checkpoint
    and the acks in flight dropped, the coordinator state of the last completed checkpoint restored, every entry
    keyed below that checkpoint recommitted (``recommitInstant``), entries at or above it kept buffered; tasks
    restart from their snapshot (attempt + 1, or 0 with a recreated coordinator)."""
    from model.protocol.state import CommitAttempt, CoordinatorState, Pending
    from model.protocol.values import BufferEntry
    I3 = "20250101000003000"
    ev1 = WriteMetadataEvent(0, 1, I1, (WriteStatus(0, 0, 2),), True)
    ev2 = WriteMetadataEvent(1, 2, I3, (WriteStatus(1, 0, 1),), True)
    e1, e2, e3 = BufferEntry(I1, (ev1, None)), BufferEntry(I3, (None, ev2)), BufferEntry(I2, (None, None))
    nulled = BufferEntry(I3, (None, None))
    inflight = tuple(Instant(t, Action.DELTACOMMIT, IState.INFLIGHT) for t in (I1, I2, I3))
    s = replace(init(ProtocolConfig()), table=TableState(timeline=inflight, heartbeats=frozenset({I1, I2, I3}),
                                                         created=3),
                coordinator=CoordinatorState(((1, e1), (3, e3)), I2), acks_in_flight=(2,),
                pending=Pending(3, None, (None, None)),
                last_completed=CompletedCheckpoint(2, ((1, e1), (2, e2)), (TaskSnapshot(2, 2, ()), TaskSnapshot(1, 2, ()))))
    # a same-graph failover restarts tasks at attempt + 1: their empty bootstraps null their slots at keys >= their
    # checkpoint id (``cleanLegacyEvents``); a recreated coordinator's tasks start at attempt 0 and send none
    for recreate, attempt, kept in ((False, 1, nulled), (True, 0, e2)):
        a = failover.global_failover(s, recreate)
        assert a.pending is None and a.acks_in_flight == () and a.table.heartbeats == frozenset()
        # key 1 recommitted; key 2 (= the checkpoint) kept; key 3 (working state only) dropped
        assert a.coordinator.buffers == ((2, kept),)
        assert a.history.commits == (CommitAttempt(0, 1, I1, "recommit", "committed"),) and a.history.epoch == 1
        assert [i.state for i in a.table.timeline] == [IState.COMPLETED, IState.INFLIGHT, IState.INFLIGHT]
        assert a.table.metadata == ((I1, (WriteStatus(0, 0, 2),)),)
        assert [(w.attempt, w.offset, w.flushed, w.checkpoint_id) for w in a.writers] == \
            [(attempt, 2, 2, 2), (attempt, 1, 1, 2)]
    keep = failover.global_failover(replace(s, config=s.config.with_(reset_keeps_memory=True)), False)
    assert keep.coordinator.buffers == ((2, nulled), (3, e3)) and keep.coordinator.instant == I2
    recreated = failover.global_failover(replace(s, config=s.config.with_(reset_keeps_memory=True)), True)
    assert recreated.coordinator.buffers[1:] == ()  # a new coordinator keeps no memory
    none = failover.global_failover(replace(s, last_completed=None), False)
    assert none.coordinator.buffers == () and none.history.commits == ()
    assert [(w.attempt, w.offset, w.checkpoint_id) for w in none.writers] == [(1, 0, -1), (1, 0, -1)]


def test_a_lost_event_fails_its_task():
    """lose-event(t): the RPC carrying task t's oldest message fails and Flink fails the sending task (a task
    failover); with the broken ``drop_failed_attempt_events=False`` the rest of its messages stay in flight."""
    from model.protocol import events as E
    from model.protocol.spec import guard, step
    cfg = ProtocolConfig(event_delivery="async", drop_failed_attempt_events=False, task_failover="single")
    ev = WriteMetadataEvent(0, -1, I1, (WriteStatus(0, 0, 1),))
    ev2 = WriteMetadataEvent(0, -1, I1, (WriteStatus(0, 1, 2),))
    ev3 = WriteMetadataEvent(1, -1, I1, (WriteStatus(1, 1, 2),))
    s = replace(init(cfg), channels=((ev, ev2), (ev3,)))
    assert guard(s, E.LoseEvent(0)) is None
    assert guard(replace(s, channels=((), (ev3,))), E.LoseEvent(0)) == "no message in flight from task 0"
    assert guard(replace(s, crashes=1), E.LoseEvent(0)) == "crash budget spent (max_crashes=1)"
    a = step(s, E.LoseEvent(0))
    assert a.channels == ((ev2, empty_bootstrap(0, -1)), (ev3,))
    assert a.crashes == 1 and [w.attempt for w in a.writers] == [1, 0]
    b = step(s, E.LoseEvent(1))  # the last task's channel: the others stay as they were
    assert b.channels == ((ev, ev2), (empty_bootstrap(1, -1),)) and [w.attempt for w in b.writers] == [0, 1]
    dropped = step(replace(s, config=s.config.with_(drop_failed_attempt_events=True)), E.LoseEvent(0))
    assert dropped.channels == ((empty_bootstrap(0, -1),), (ev3,))


def test_an_instant_request_timeout_fails_the_task():
    """request-timeout(t) (Hudi #19902): only while task t would be granted an instant, within the crash budget
    and when the fault is enabled; the task fails (a region failover: every task restarts)."""
    from model.protocol import events as E
    from model.protocol.spec import guard, step
    s = init(ProtocolConfig())
    w = s.writers
    s = replace(s, writers=(replace(w[0], offset=2), w[1]))  # task 0's buffer is full: it must flush
    assert guard(s, E.RequestTimeout(0)) is None
    assert guard(s, E.RequestTimeout(1)) == ("no instant request of task 1 in progress (task 1 has nothing to flush "
                                             "(buffer not full, no barrier))")
    assert guard(replace(s, crashes=1), E.RequestTimeout(0)) == "crash budget spent (max_crashes=1)"
    assert guard(replace(s, config=s.config.with_(faults=frozenset())), E.RequestTimeout(0)) == \
        "fault request-timeout is not enabled"
    a = step(s, E.RequestTimeout(0))
    assert a.crashes == 1 and [(x.attempt, x.offset) for x in a.writers] == [(1, 0), (1, 0)]
