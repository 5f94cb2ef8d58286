"""0.x coordinator-started instants (``coordinator_starts_instants``, variant ``hudi-0.x-coordinator-start``).

The coordinator starts the next instant itself right after a successful commit; writers take the last pending
instant (``instantToWrite``) and, after a checkpoint, stay *confirming* until an instant other than the one they
wrote appears -- or, with nothing to write, take the same one; an empty checkpoint is not committed (its instant
is reused) and a ``CommitAckEvent`` clears ``confirming`` (unless ``allow_commit_on_empty_batch``). A restarted
task re-sends its write metadata of the pending instant; once every task's bootstrap event is in, the coordinator
recommits it and starts a new instant (``initInstant``), for a task failover too. A lost ack: a task with new
data waits for an instant that never comes until its ``write.commit.ack.timeout`` fails it (a stall: the run
resumes only through that failover); a task without new data reuses the instant and the next ack subsumes the
lost one. Model finding: a lost ack followed by an interval without data leaves the un-acked statuses in no
state, and a failover before the next commit loses them -- Hudi 1.1's coordinator snapshot covers them.
"""

from __future__ import annotations

from engine import System
from engine.invariants import check_drained as engine_drained
from engine.invariants import check_step as engine_step
from engine.refinement import abstract
from model.instant import State as IState
from model.invariants.protocol import check_drained, check_step
from model.protocol import (CompleteCheckpoint, CrashCoordinator, CrashTask, DeliverAck, Flush, Ingest,
                            InstantTimeout, LoseAck, RequestInstant, RequestTimeout, SnapshotTask, TriggerCheckpoint,
                            spec, variant)
from model.protocol.state import pending_instants

BOUNDS = dict(parallelism=1, records=2, buffer_size=1, max_checkpoints=3)
BUF2 = dict(parallelism=1, records=2, buffer_size=2, max_checkpoints=3)


def run(cfg, schedule):
    st = spec.init(cfg)
    for ev in schedule:
        st = spec.step(st, ev)
    return st


def run_both(cfg, schedule):
    """The spec and the engine through the same schedule: equal abstract states, equal verdicts."""
    st = run(cfg, schedule)
    sysm = System(cfg)
    for ev in schedule:
        sysm.apply(ev)
    assert abstract(sysm) == spec.view(st)
    assert [(v.invariant, v.holds) for v in check_step(st)] == [(v.invariant, v.holds) for v in engine_step(sysm)]
    return st, sysm


def drained_verdicts(st):
    st, events = spec.drain(st)
    return st, events, {v.invariant: v for v in check_drained(st)}


def ckp(n, data=True):
    return ([Ingest(0)] if data else []) + [TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0),
                                              CompleteCheckpoint(), DeliverAck(n)]


def test_the_coordinator_starts_the_next_instant_after_a_commit():
    st = run(variant("hudi-0.x-coordinator-start", faults=frozenset(), **BOUNDS), ckp(1))
    completed = [i.requested_time for i in st.table.timeline if i.state is IState.COMPLETED]
    assert len(completed) == 1
    # the next instant is already pending, started by the coordinator, before any task asks
    assert pending_instants(st) == [st.coordinator.instant] and st.coordinator.instant > completed[0]
    st2 = run(variant("hudi-0.x-coordinator-start", faults=frozenset(), **BOUNDS), ckp(1) + [Ingest(0),
                                                                                                TriggerCheckpoint(),
                                                                                                RequestInstant(0)])
    assert st2.writers[0].instant == st.coordinator.instant  # the writer takes the coordinator's instant
    # Hudi 1.1 (request-driven): nothing pending after the commit
    st3 = run(variant("hudi-1.1-blocking", faults=frozenset(), **BOUNDS), ckp(1))
    assert pending_instants(st3) == []


def test_after_a_checkpoint_the_writer_is_confirming_until_a_new_instant_appears():
    cfg = variant("hudi-0.x-coordinator-start", faults=frozenset(), **dict(BUF2, records=4))
    st, _ = run_both(cfg, [Ingest(0), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint()])
    x = st.writers[0].confirming
    assert x and pending_instants(st) == [x]  # confirming holds the instant it wrote (currentInstant)
    # with data and the same instant pending, instantToWrite waits (invalidInstant) ...
    st = run(cfg, [Ingest(0), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint(),
                   Ingest(0), Ingest(0)])
    assert spec.writer_status(st, 0) == "blocked"
    assert "confirming" in spec.guard(st, RequestInstant(0))
    # ... and the commit (which starts the next instant) releases it: it writes under the new instant
    st = spec.step(st, DeliverAck(1))
    assert st.writers[0].confirming == x and pending_instants(st) != [x]
    st = spec.step(st, RequestInstant(0))
    assert st.writers[0].instant not in (None, x) and st.writers[0].confirming is None
    # 0.x: instantToWrite and the write are one step of the task thread -- no record read in between
    assert "flushing" in spec.guard(run(cfg, [Ingest(0), TriggerCheckpoint(), RequestInstant(0)]), Ingest(0))


def test_an_empty_checkpoint_reuses_the_instant_or_commits_it_when_allowed():
    empty_then_data = ckp(1, data=False) + ckp(2)
    st = run(variant("hudi-0.x-coordinator-start", faults=frozenset(), **BOUNDS), empty_then_data)
    first = st.history.commits[0]
    assert first.outcome == "empty"
    # the empty interval's instant was reused for the data of the next one and committed there
    assert [c.instant for c in st.history.commits if c.outcome == "committed"] == [first.instant]
    assert st.table.created == 2  # the first instant + the one started after the commit
    allowed = run(variant("hudi-0.x-coordinator-start", allow_commit_on_empty_batch=True, faults=frozenset(),
                          **BOUNDS), empty_then_data)
    assert [c.outcome for c in allowed.history.commits] == ["committed", "committed"]
    assert allowed.table.created == 3  # a new instant after each commit, the empty one included
    for s in (st, allowed):
        s, _ = spec.drain(s)
        assert all(v.holds for v in check_step(s) + check_drained(s))


def test_the_commit_ack_event_releases_a_writer_after_an_empty_checkpoint_and_without_it_the_writer_stalls():
    empty = [TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint()]
    good = variant("hudi-0.x-coordinator-start", faults=frozenset(), stall_bound=0, **BUF2)
    st, _ = run_both(good, empty)
    assert st.writers[0].confirming  # it wrote the empty interval under the first instant
    st, _ = run_both(good, empty + [DeliverAck(1)])
    assert st.history.commits[-1].outcome == "empty"
    assert st.writers[0].confirming is None  # CommitAckEvent: handleOperatorEvent cleared it
    st = run(good, empty + [DeliverAck(1), Ingest(0), Ingest(0), RequestInstant(0), Flush(0)])
    assert spec.writer_status(st, 0) != "blocked"
    _, events, verdicts = drained_verdicts(st)
    assert "instant-timeout" not in [e.kind for e in events] and all(v.holds for v in verdicts.values())
    # the broken design: no CommitAckEvent -- the writer with new data waits for a new instant no commit starts
    broken = variant("no-commit-ack", faults=frozenset(), **BUF2)
    st, _ = run_both(broken, empty + [DeliverAck(1), Ingest(0), Ingest(0)])
    assert spec.writer_status(st, 0) == "blocked" and st.writers[0].confirming
    assert spec.guard(st, InstantTimeout(0)) is None
    st, events, verdicts = drained_verdicts(run(broken, empty + [DeliverAck(1), Ingest(0)]))
    assert "instant-timeout" in [e.kind for e in events]
    assert verdicts["exactly-once.drained"].holds and verdicts["liveness"].holds  # it does drain ...
    assert not verdicts["liveness.stall"].holds  # ... only through the timeout-triggered failover


def test_a_lost_ack_stalls_a_writer_with_new_data_until_its_task_fails_over():
    schedule = [Ingest(0), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint(),
                LoseAck(1), Ingest(0), TriggerCheckpoint()]
    cfg = variant("coordinator-start-lost-ack-stall", faults=frozenset({"lost-ack"}), **BOUNDS)
    st, _ = run_both(cfg, schedule)
    x = st.writers[0].confirming
    assert spec.writer_status(st, 0) == "blocked"  # the barrier needs an instant; none will be started
    assert "confirming: it waits until the coordinator starts a new instant" in spec.guard(st, RequestInstant(0))
    # the timeout fails the task (a task failover, not a global one): it re-sends X's write metadata, and the
    # coordinator recommits X and starts a new instant (handleBootstrapEvent -> initInstant)
    st2, sys2 = run_both(cfg, schedule + [InstantTimeout(0)])
    assert [c.how + ":" + c.outcome for c in st2.history.commits[-1:]] == ["recommit:committed"]
    assert st2.history.commits[-1].instant == x and st2.coordinator.instant > x
    assert st2.writers[0].attempt == 1 and st2.history.epoch == 1
    drained, events, verdicts = drained_verdicts(st)
    assert "instant-timeout" in [e.kind for e in events]
    assert verdicts["exactly-once.drained"].holds and verdicts["liveness"].holds  # quiescent in the end ...
    assert not verdicts["liveness.stall"].holds  # ... only through the timeout-triggered failover
    # without new data the writer takes the same instant and the next ack subsumes the lost one: no stall
    quiet = run(cfg, schedule[:6])
    _, events, verdicts = drained_verdicts(quiet)
    assert "instant-timeout" not in [e.kind for e in events] and all(v.holds for v in verdicts.values())
    # the design's own stall bound (1): one timeout after a lost ack is what Hudi 0.x needs
    _, _, verdicts = drained_verdicts(run(variant("hudi-0.x-coordinator-start", faults=frozenset({"lost-ack"}),
                                               **BOUNDS), schedule))
    assert verdicts["liveness.stall"].holds


def test_a_task_failover_recommits_the_pending_instant_and_starts_a_new_one():
    cfg = variant("hudi-0.x-coordinator-start", faults=frozenset({"task-crash", "lost-ack"}), **BOUNDS)
    base = [Ingest(0), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint(), LoseAck(1)]
    st = run(cfg, base)
    x = st.coordinator.instant
    st, _ = run_both(cfg, base + [CrashTask(0)])
    assert [(c.instant, c.how, c.outcome) for c in st.history.commits] == [(x, "recommit", "committed")]
    assert st.coordinator.instant > x and pending_instants(st) == [st.coordinator.instant]
    assert st.writers[0].confirming == x  # initializeState: currentInstant = the last pending instant then
    # Hudi 1.1 keeps its buffers on a task failover and starts nothing: the instant stays pending, uncommitted
    st11 = run(variant("hudi-1.1-blocking", faults=frozenset({"task-crash", "lost-ack"}), **BOUNDS), base +
               [CrashTask(0)])
    assert not st11.history.commits and st11.table.created == 1
    # no request goes to the 0.x coordinator: the request-timeout fault does not apply
    assert "no instant request" in spec.guard(run(variant("hudi-0.x-coordinator-start", **BOUNDS), [Ingest(0)]),
                                              RequestTimeout(0))


def test_the_next_checkpoint_waits_for_the_notification_on_the_coordinators_executor():
    cfg = variant("hudi-0.x-coordinator-start", faults=frozenset(), **BOUNDS)
    st = run(cfg, [Ingest(0), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint()])
    assert "before checkpointCoordinator(2)" in spec.guard(st, TriggerCheckpoint())
    assert spec.guard(spec.step(st, DeliverAck(1)), TriggerCheckpoint()) is None
    # the default (1.1 designs) lets a trigger overtake the ack in flight
    st11 = run(variant("hudi-1.1-blocking", faults=frozenset(), **BOUNDS),
               [Ingest(0), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint()])
    assert spec.guard(st11, TriggerCheckpoint()) is None


#: the finding: ack 1 lost; checkpoint 2 has no new data, so the task takes the same instant and its state of
#: checkpoint 2 replaces the one holding the un-acked statuses; a coordinator crash before the next commit
LOST_THEN_EMPTY = [Ingest(0), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint(),
                   LoseAck(1), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint()]


def test_finding_a_lost_ack_then_an_empty_checkpoint_leaves_the_unacked_interval_in_no_state():
    cfg = variant("hudi-0.x-coordinator-start", faults=frozenset({"lost-ack", "coordinator-crash"}), **BUF2)
    st, sysm = run_both(cfg, LOST_THEN_EMPTY)
    coverage = {v.invariant: v for v in check_step(st)}["I12.state-coverage"]
    assert not coverage.holds and "key(s) [-1] are in no state" in coverage.detail
    st, sysm = run_both(cfg, LOST_THEN_EMPTY + [CrashCoordinator()])
    assert st.history.rollbacks  # initInstant found no statuses; startInstant's EAGER rollback removed X
    drained, _, verdicts = drained_verdicts(st)
    assert not verdicts["exactly-once.drained"].holds and "1 lost" in verdicts["exactly-once.drained"].detail
    sysm.drain()
    assert {v.invariant: v.holds for v in engine_drained(sysm)}["exactly-once.drained"] is False
    # without the crash the next ack commits the single buffer (the lost ack is subsumed): nothing lost
    _, _, verdicts = drained_verdicts(run(cfg, LOST_THEN_EMPTY + [DeliverAck(2)]))
    assert all(v.holds for v in verdicts.values())


def test_finding_hudi_1_1s_coordinator_snapshot_covers_the_same_schedule():
    """The fix in Hudi's history: 1.1's coordinator checkpoints its buffered, fully flushed entries, so the
    un-acked interval is in the coordinator state and recommitted after the crash. (1.1's blocking mode does not
    even reach the empty checkpoint: its CommitGuard holds the request until the lost ack's timeout.)"""
    blocked = run(variant("hudi-1.1-blocking", faults=frozenset({"lost-ack"}), **BUF2), LOST_THEN_EMPTY[:7])
    assert spec.writer_status(blocked, 0) == "blocked"
    cfg = variant("hudi-1.1", faults=frozenset({"lost-ack", "coordinator-crash"}), **BUF2)
    st = run(cfg, LOST_THEN_EMPTY + [CrashCoordinator()])
    assert all(v.holds for v in check_step(st))
    _, _, verdicts = drained_verdicts(st)
    assert verdicts["exactly-once.drained"].holds, verdicts["exactly-once.drained"].detail


#: ckp 1 completes (its notification in flight); ckp 2 is triggered before it ran on the coordinator's executor,
#: the task has no new data, and a coordinator crash comes before the notification
OVERTAKE = [Ingest(0), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint(),
            TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint(), CrashCoordinator()]


def test_the_executor_order_is_what_keeps_0x_task_state_covering():
    """Broken variant checkpoint-overtakes-notification: checkpointCoordinator(2) does not queue behind
    notifyCheckpointComplete(1) on the coordinator's executor -- the un-acked interval is lost after a crash with
    no lost ack; the 0.x design (one FIFO executor) refuses that trigger and commits first."""
    broken = variant("checkpoint-overtakes-notification", faults=frozenset({"coordinator-crash"}), **BUF2)
    st, sysm = run_both(broken, OVERTAKE[:-1])
    assert not {v.invariant: v for v in check_step(st)}["I12.state-coverage"].holds
    st, sysm = run_both(broken, OVERTAKE)
    _, _, verdicts = drained_verdicts(st)
    assert not verdicts["exactly-once.drained"].holds
    sysm.drain()
    assert {v.invariant: v.holds for v in engine_drained(sysm)}["exactly-once.drained"] is False
    good = variant("hudi-0.x-coordinator-start", faults=frozenset({"coordinator-crash"}), **BUF2)
    st = run(good, OVERTAKE[:5])
    assert "one FIFO thread" in spec.guard(st, TriggerCheckpoint())
    st = run(good, OVERTAKE[:5] + [DeliverAck(1)] + OVERTAKE[5:])
    assert all(v.holds for v in check_step(st))
    _, _, verdicts = drained_verdicts(st)
    assert all(v.holds for v in verdicts.values())
