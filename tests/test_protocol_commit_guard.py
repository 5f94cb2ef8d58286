"""Blocking mode's ``CommitGuard`` and the coordinator's executor (issue #15 item 3, ``request_thread``).

Hudi 1.1 COW upserts generate instants in blocking mode: before a new instant, ``handleInstantRequest`` waits
on the ``CommitGuard`` (``EventBuffers#awaitAllInstantsToCompleteIfNecessary``) until a buffered instant is
committed, which happens in ``notifyCheckpointComplete`` on the coordinator's executor. Hudi answers requests
on their own thread (``instantRequestExecutor``): ``request_thread="own"``, variant
``hudi-1.1-blocking-executor``. Answered on the executor that also commits (``request_thread="executor"``,
variant ``commit-guard-on-executor``), a request that reaches the head of the queue while the guard would wait
holds the thread, the commit that would release it is queued behind it, and only the guard's timeout
(``write.commit.ack.timeout``, a global failover) ends the wait: a stall with no fault. The engine mirrors both.
"""

from __future__ import annotations

import pytest

from checker import SystemModel, explore
from engine import System
from engine.invariants import check_drained as engine_drained
from hoodie_lab.cli import main as cli_main
from lakeio.traces import write_trace
from model.errors import RuleViolation
from model.invariants.protocol import check_drained
from model.protocol import spec, variant
from model.protocol import events as E
from model.protocol.values import CommitJob, RequestJob
from properties.refinement import DRAIN, check_refines

BOUNDS = dict(parallelism=1, records=2, buffer_size=1, max_checkpoints=2, faults=frozenset())
#: checkpoint 1 flushed record 0 under the first instant (buffered, key -1), its ack is in flight, and the task
#: read record 1: its full buffer needs a new instant (key 1) while the previous one is not committed yet.
BEFORE_ACK = [E.Ingest(0), E.TriggerCheckpoint(), E.RequestInstant(0), E.RunJob(), E.SnapshotTask(0),
              E.CompleteCheckpoint(), E.Ingest(0)]


def run(cfg, events):
    s = spec.init(cfg)
    for ev in events:
        s = spec.step(s, ev)
    return s


def verdicts(state) -> dict:
    return {v.invariant: v for v in check_drained(state)}


# ---------------------------------------------------------------------------- the failure shape

def test_a_request_on_the_executor_holds_it_while_the_commit_that_would_release_it_waits_behind():
    cfg = variant("commit-guard-on-executor", **BOUNDS)
    s = run(cfg, BEFORE_ACK)
    # the request is sent at once (the guard waits where it is answered, on the executor) ...
    assert spec.writer_status(s, 0) == "needs-instant" and spec.guard(s, E.RequestInstant(0)) is None
    s = spec.step(spec.step(s, E.RequestInstant(0)), E.DeliverAck(1))
    # ... and overtook the commit of checkpoint 1: the request heads the queue, the commit is behind it
    assert s.executor == (RequestJob(0, 1, 0), CommitJob(1)) and s.coordinator.entry(-1) is not None
    why = spec.guard(s, E.RunJob())
    assert why.startswith("the CommitGuard holds the coordinator's executor: task 0's instant request (key 1)")
    assert "commit(ckp 1), is queued behind it on the same thread" in why
    assert why.endswith("tasks and coordinator wait on each other until write.commit.ack.timeout")
    assert spec.task_step(s, 0) is None  # the task's thread is in the request's RPC
    # the guard's timeout is the only way out, certain (no fault): it is enabled, and nothing else runs the queue
    assert E.InstantTimeout(0) in spec.enabled(s) and E.RunJob() not in spec.enabled(s)
    t = spec.step(s, E.InstantTimeout(0))
    assert t.executor == () and t.writers[0].attempt == 1  # HoodieException: the job fails, a global failover
    assert t.history.deadlocks == (t.history.steps,) and t.history.stalls == ()
    drained, tail = spec.drain(t)
    v = verdicts(drained)
    assert v["exactly-once.drained"].holds and v["liveness"].holds  # the failover recovers the data ...
    stall = v["liveness.stall"]  # ... but progress resumed only through the timeout
    assert not stall.holds and "1 where tasks and coordinator waited on each other" in stall.detail
    # the engine takes the same steps and gives the same verdicts
    events = BEFORE_ACK + [E.RequestInstant(0), E.DeliverAck(1)]
    sys_ = System(cfg)
    for ev in events:
        sys_.apply(ev)
    assert sys_.is_enabled(E.RunJob()) == why and E.InstantTimeout(0) in sys_.enabled_events()
    sys_.apply(E.InstantTimeout(0))
    assert sys_.drain() == tail and sys_.guard_deadlocks == t.history.deadlocks
    assert [(x.invariant, x.holds, x.detail) for x in engine_drained(sys_)] == [
        (x.invariant, x.holds, x.detail) for x in check_drained(drained)]


def test_the_deadlock_needs_the_request_to_overtake_the_commit():
    """Same design, the commit queued first: it runs, the guard has nothing to wait for, no timeout."""
    cfg = variant("commit-guard-on-executor", **BOUNDS)
    s = run(cfg, BEFORE_ACK + [E.DeliverAck(1), E.RequestInstant(0)])
    assert s.executor == (CommitJob(1), RequestJob(0, 1, 0))
    assert spec.guard(s, E.InstantTimeout(0)).startswith("no instant request of task 0 held by the CommitGuard")
    s = spec.step(spec.step(s, E.RunJob()), E.RunJob())
    assert s.writers[0].instant is not None and s.history.deadlocks == ()
    assert all(v.holds for v in verdicts(spec.drain(s)[0]).values())


def test_the_replayed_trace_reports_the_stall(tmp_path, capsys):
    cfg = variant("commit-guard-on-executor", **BOUNDS)
    s = run(cfg, BEFORE_ACK + [E.RequestInstant(0), E.DeliverAck(1), E.InstantTimeout(0)])
    _, tail = spec.drain(s)
    path = write_trace(tmp_path / "guard.jsonl", cfg, BEFORE_ACK + [E.RequestInstant(0), E.DeliverAck(1),
                                                                     E.InstantTimeout(0)] + tail,
                       seed=0, driver="manual")
    assert cli_main(["replay", str(path)]) == 1
    out = capsys.readouterr().out
    assert "liveness.stall" in out and "tasks and coordinator waited on each other" in out


# ------------------------------------------------------------------------------------- the fix

def test_on_its_own_thread_the_guard_waits_off_the_executor_and_the_commit_releases_it():
    cfg = variant("hudi-1.1-blocking-executor", **BOUNDS)
    s = run(cfg, BEFORE_ACK)
    # the request waits on the guard (the task is blocked); nothing is queued for it yet
    assert spec.writer_status(s, 0) == "blocked" and spec.task_step(s, 0) == "blocked"
    assert spec.guard(s, E.RequestInstant(0)) == "blocking mode: task 0 waits until the buffered instant is committed"
    assert spec.guard(s, E.InstantTimeout(0)) == "an ack in flight may still unblock the task"
    s = spec.step(s, E.DeliverAck(1))
    assert s.executor == (CommitJob(1),)
    assert spec.guard(s, E.InstantTimeout(0)) == ("a commit queued on the coordinator's executor may still release "
                                                 "the CommitGuard")
    s = spec.step(s, E.RunJob())  # the commit runs on the executor: the guard is released
    assert [c.outcome for c in s.history.commits] == ["committed"] and spec.writer_status(s, 0) == "needs-instant"
    s = spec.step(s, E.RequestInstant(0))  # the released request now needs the instant lock: it queues
    assert s.executor == (RequestJob(0, 1, 0),) and spec.task_step(s, 0) is None
    s = spec.step(s, E.RunJob())
    assert s.writers[0].instant is not None and s.history.deadlocks == s.history.stalls == ()
    drained, _ = spec.drain(s)
    assert all(v.holds for v in verdicts(drained).values()), [str(v) for v in verdicts(drained).values()]


def test_a_request_past_the_guard_is_not_checked_again_when_it_runs():
    """``awaitAllInstantsToCompleteIfNecessary`` checks the buffers once; an event buffered after the check (async
    delivery: task 0's last event was still in flight) does not stop ``startInstant`` when the queued request
    runs. (Blocking mode with async delivery is where the model finds data loss without the queue too:
    hudi-1.1-blocking with event_delivery="async".)"""
    cfg = variant("hudi-1.1-blocking-executor", **{**BOUNDS, "parallelism": 2, "records": 3,
                                                   "event_delivery": "async"})
    s = run(cfg, [E.TriggerCheckpoint(), E.RequestInstant(0), E.RunJob(), E.SnapshotTask(0), E.Ingest(0)])
    assert spec.writer_status(s, 0) == "needs-instant"  # its snapshot's event is in flight: the guard passes
    s = spec.step(spec.step(s, E.RequestInstant(0)), E.DeliverEvent(0))
    assert spec.would_block(s, 1) and s.executor == (RequestJob(0, 1, 0),)
    s = spec.step(s, E.RunJob())
    assert s.writers[0].instant is not None and s.coordinator.entry(1).instant == s.writers[0].instant
    with pytest.raises(AssertionError, match="would block"):  # a request that never passed the guard is refused
        from model.protocol.coordinator import handle_instant_request
        handle_instant_request(run(cfg, [E.TriggerCheckpoint(), E.RequestInstant(0), E.RunJob(), E.SnapshotTask(0),
                                         E.DeliverEvent(0)]), 1)


def test_the_engine_refines_the_spec_along_both_designs():
    for name in ("commit-guard-on-executor", "hudi-1.1-blocking-executor"):
        cfg = variant(name, **{**BOUNDS, "faults": frozenset({"lost-ack", "task-crash"})})
        if name == "commit-guard-on-executor":
            path = BEFORE_ACK + [E.RequestInstant(0), E.DeliverAck(1), E.InstantTimeout(0), DRAIN]
        else:
            path = BEFORE_ACK + [E.DeliverAck(1), E.RunJob(), E.RequestInstant(0), E.RunJob(), DRAIN]
        assert check_refines(cfg, path) is None, name


def test_the_guard_timeout_is_refused_where_it_cannot_happen():
    cfg = variant("commit-guard-on-executor", **BOUNDS)
    s = run(cfg, BEFORE_ACK)
    with pytest.raises(RuleViolation, match="instant-timeout.not-enabled"):
        spec.step(s, E.InstantTimeout(0))  # no request on the executor yet: nothing waits on the guard
    sys_ = System(cfg)
    for ev in BEFORE_ACK:
        sys_.apply(ev)
    with pytest.raises(RuleViolation, match="instant-timeout.not-enabled"):
        sys_.apply(E.InstantTimeout(0))


# ------------------------------------------------------------------------------------ exploration

SMALL = dict(parallelism=1, max_checkpoints=2, records=2, buffer_size=1)


def test_explore_finds_the_shortest_deadlock_and_the_own_thread_holds_the_same_bound():
    model = SystemModel(variant("commit-guard-on-executor", faults=frozenset(), **SMALL))
    res = explore(model, stop_on_violation=False)
    assert res.complete and set(res.discoveries) == {"liveness.stall"}
    d = res.discoveries["liveness.stall"]
    kinds = [e.kind for e in d.actions]
    # checkpoint 2's barrier: the request overtakes the ack of checkpoint 1 and the guard holds the executor
    assert d.depth == 13 and kinds[-3:] == ["trigger-checkpoint", "request-instant", "instant-timeout"]
    assert "deliver-ack" not in kinds
    own = explore(SystemModel(variant("hudi-1.1-blocking-executor", faults=frozenset(), stall_bound=0, **SMALL)),
                  stop_on_violation=False)
    assert own.complete and not own.discoveries and own.states > 250


def test_with_faults_the_own_thread_holds_its_bound_and_the_executor_design_also_loses_data():
    faults = frozenset({"lost-ack", "task-crash", "request-timeout", "coordinator-crash"})
    own = explore(SystemModel(variant("hudi-1.1-blocking-executor", faults=faults, max_crashes=1, **SMALL)),
                  stop_on_violation=False)
    assert own.complete and not own.discoveries and own.states > 2500
    # its stall bound is 1 for the lost ack (as hudi-1.1-blocking), not for the executor
    lost = explore(SystemModel(variant("hudi-1.1-blocking-executor", faults=frozenset({"lost-ack"}), stall_bound=0,
                                       **SMALL)), stop_on_violation=False)
    assert set(lost.discoveries) == {"liveness.stall"}
    assert "lose-ack" in [e.kind for e in lost.discoveries["liveness.stall"].actions]
    # the executor design: a crashed attempt's request stays queued, starts an instant once the restart emptied
    # the buffered entry, and its EAGER rollback removes the instant that entry still maps to
    broken = explore(SystemModel(variant("commit-guard-on-executor", faults=frozenset({"task-crash"}),
                                         max_crashes=1, **SMALL)), stop_on_violation=False)
    assert broken.complete and set(broken.discoveries) == {"liveness.stall", "exactly-once.drained"}
    loss = broken.discoveries["exactly-once.drained"]
    assert "crash-task" in [e.kind for e in loss.actions] and "instant-timeout" not in [e.kind for e in loss.actions]


@pytest.mark.parametrize("name,rc", [("commit-guard-on-executor", 1), ("hudi-1.1-blocking-executor", 0)])
def test_cli_explore(name, rc, tmp_path, capsys):
    assert cli_main(["explore", "--variant", name, "--writers", "1", "--checkpoints", "2", "--records", "2",
                     "--buffer-size", "1", "--faults", "none", "--out", str(tmp_path), "--no-progress"]) == rc
    out = capsys.readouterr().out
    if rc:
        assert "VIOLATED liveness.stall at depth 13" in out and "tasks and coordinator waited on each other" in out
    else:
        assert "exhaustive: every state within the bound visited; no invariant violated" in out


def test_the_temporal_properties_see_the_deadlock_without_faults():
    """``--liveness``: with the guard on the executor the instant stays requested forever (only the unfair
    timeout would end it); on the request's own thread every temporal property holds."""
    from checker.liveness import check_liveness

    broken = check_liveness(variant("commit-guard-on-executor", **SMALL, faults=frozenset()))
    assert broken.complete and set(broken.violations) == {"instant-resolved", "interval-committed"}
    lasso = broken.violations["instant-resolved"]
    s = spec.init(variant("commit-guard-on-executor", **SMALL, faults=frozenset()))
    for ev in lasso.prefix:
        s = spec.step(s, ev)
    assert spec.guard_holds_executor(s) is not None and spec.guard(s, E.RunJob()).startswith("the CommitGuard")
    own = check_liveness(variant("hudi-1.1-blocking-executor", **SMALL, faults=frozenset()))
    assert own.complete and own.holds


def test_finding_the_guard_passes_while_the_previous_event_is_in_flight():
    """A model finding, not confirmed against Hudi: blocking mode (1.1 COW upsert) with asynchronous event
    delivery loses an interval with no fault. Task 1 asks for the next instant while task 0's write-metadata
    event of the same instant is still in flight: no buffer holds an event yet, so the ``CommitGuard`` lets the
    request through; the new instant's EAGER ``startCommit`` rolls the previous, uncommitted instant back, and
    its records are in no committed instant (``exactly-once.drained``). In Hudi the event is handled on the
    coordinator's executor and the request on ``instantRequestExecutor``, so the two can be taken in this order."""
    cfg = variant("hudi-1.1-blocking", event_delivery="async", parallelism=2, max_checkpoints=2, records=1,
                  buffer_size=1, faults=frozenset())
    res = explore(SystemModel(cfg))
    d = res.discoveries["exactly-once.drained"]
    assert res.stop_reason == "violation" and len(d.actions) == 24 and "1 lost" in d.detail
    names = [str(a) for a in d.actions]
    # the second instant is asked for before task 0's event of the first was delivered
    assert names.index("request-instant(task=1)", names.index("snapshot-task(task=1)")) < names.index("deliver-event(task=0)")
    sync = explore(SystemModel(variant("hudi-1.1-blocking", parallelism=2, max_checkpoints=2, records=1,
                                       buffer_size=1, faults=frozenset())))
    assert sync.stop_reason == "exhausted" and not sync.discoveries  # with synchronous events it holds
