"""0.x coordinator-started instants (``coordinator_starts_instants``, variant ``hudi-0.x-coordinator-start``).

The coordinator starts the next instant itself right after a successful commit; writers take the instant
it started; an empty checkpoint is not committed (its instant is reused) unless
``allow_commit_on_empty_batch``. A lost ack leaves the instant uncommitted: no new instant appears, the
writers wait, and only the ``write.commit.ack.timeout`` failover resumes progress -- reported by
``liveness.stall`` under a stall bound, not as quiescence.
"""

from __future__ import annotations

from model.invariants.protocol import check_drained, check_step
from model.instant import State as IState
from model.protocol import (CompleteCheckpoint, DeliverAck, Ingest, LoseAck, RequestInstant, SnapshotTask,
                            TriggerCheckpoint, spec, variant)
from model.protocol.state import pending_instants

BOUNDS = dict(parallelism=1, records=2, buffer_size=1, max_checkpoints=3)


def run(cfg, schedule):
    st = spec.init(cfg)
    for ev in schedule:
        st = spec.step(st, ev)
    return st


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


def test_a_lost_ack_leaves_writers_waiting_for_an_instant_that_never_appears():
    schedule = [Ingest(0), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint(),
                LoseAck(1), Ingest(0), TriggerCheckpoint()]
    cfg = variant("hudi-0.x-coordinator-start", stall_bound=0, faults=frozenset({"lost-ack"}), **BOUNDS)
    st = run(cfg, schedule)
    assert spec.writer_status(st, 0) == "blocked"  # the barrier needs an instant; none will be started
    assert "waits until the buffered instant is committed" in spec.guard(st, RequestInstant(0))
    drained, events = spec.drain(st)
    assert "instant-timeout" in [e.kind for e in events]
    verdicts = {v.invariant: v for v in check_drained(drained)}
    assert verdicts["exactly-once.drained"].holds and verdicts["liveness"].holds  # quiescent in the end ...
    assert not verdicts["liveness.stall"].holds  # ... only through the timeout-triggered failover
