"""The coordinator's executor as a FIFO queue of jobs in the spec (issue #15 item 3; ``executor_queue``).

``StreamWriteOperatorCoordinator`` runs the commit of a checkpoint (``notifyCheckpointComplete``), the instant
requests and the table-service scheduling (``scheduleTableServices``) one at a time on its executor. A request
queued behind a table-service job slower than its RPC timeout times out and fails its task
(``request-expired``); progress then resumes only through that failover -- ``liveness.stall``. The variant
``table-service-on-executor`` (slow scheduling inline on the executor) breaks the stall bound 0 with no fault;
``hudi-1.1-executor`` (bounded scheduling) holds it. The engine mirrors the queue (refinement).
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
from model.protocol import ProtocolConfig, spec, variant
from model.protocol import events as E
from model.protocol.values import CommitJob, RequestJob, TableServiceJob
from properties.refinement import DRAIN, check_refines

#: one task, buffer 1: checkpoint 1 flushes record 0; a second record is read; the ack of 1 is delivered
#: (the commit job queued on the executor), and nothing ran on the executor since.
AFTER_ACK = [E.Ingest(0), E.TriggerCheckpoint(), E.RequestInstant(0), E.RunJob(), E.SnapshotTask(0),
             E.CompleteCheckpoint(), E.Ingest(0), E.DeliverAck(1)]
BOUNDS = dict(parallelism=1, records=2, buffer_size=1, max_checkpoints=2, faults=frozenset())


def run(cfg, events):
    s = spec.init(cfg)
    for ev in events:
        s = spec.step(s, ev)
    return s


def drained(name: str):
    cfg = variant(name, **BOUNDS)
    st, events = spec.drain(run(cfg, AFTER_ACK))
    return cfg, st, AFTER_ACK + events, {v.invariant: v for v in check_drained(st)}


# ------------------------------------------------------------------------------------------- the queue

def test_jobs_queue_in_arrival_order_and_run_one_at_a_time():
    cfg = variant("hudi-1.1-executor", **BOUNDS)
    s = run(cfg, AFTER_ACK)
    assert s.executor == (CommitJob(1),) and s.acks_in_flight == ()
    assert not s.history.commits  # the ack is delivered, the commit has not run yet
    s = spec.step(s, E.TriggerCheckpoint())
    s = spec.step(s, E.RequestInstant(0))
    assert s.executor == (CommitJob(1), RequestJob(0, 1, 0))
    # the task waits for the answer: no second request, no record read meanwhile
    assert spec.guard(s, E.RequestInstant(0)) is not None and spec.guard(s, E.SnapshotTask(0)) is not None
    # the commit runs first; its tail (bounded table-service scheduling) runs next, ahead of the request
    s = spec.step(s, E.RunJob())
    assert [c.outcome for c in s.history.commits] == ["committed"]
    assert s.executor == (TableServiceJob(False), RequestJob(0, 1, 0)) and s.writers[0].instant is None
    assert spec.guard(s, E.RequestExpired(0)) is not None  # bounded: the request does not time out behind it
    s = spec.step(spec.step(s, E.RunJob()), E.RunJob())
    assert s.executor == () and s.writers[0].instant is not None
    assert spec.guard(s, E.RunJob()) == "the coordinator's executor has no job queued"


def test_request_timeout_fault_only_while_another_job_is_ahead():
    cfg = variant("hudi-1.1-executor", **{**BOUNDS, "faults": frozenset({"request-timeout"})})
    s = run(cfg, [E.Ingest(0), E.TriggerCheckpoint(), E.RequestInstant(0)])
    assert s.executor == (RequestJob(0, -1, 0),)
    assert "running, not queued behind another job" in spec.guard(s, E.RequestTimeout(0))
    s = run(cfg, AFTER_ACK + [E.TriggerCheckpoint(), E.RequestInstant(0)])
    assert spec.guard(s, E.RequestTimeout(0)) is None
    # without the queue the fault hits any grantable request (the over-approximation kept as default)
    plain = run(variant("hudi-1.1", **{**BOUNDS, "faults": frozenset({"request-timeout"})}),
                [E.Ingest(0), E.TriggerCheckpoint()])
    assert spec.guard(plain, E.RequestTimeout(0)) is None


def test_a_failed_attempts_request_still_runs_but_its_answer_reaches_no_one():
    cfg = variant("table-service-on-executor", **BOUNDS)
    s = run(cfg, AFTER_ACK + [E.TriggerCheckpoint(), E.RequestInstant(0), E.RunJob()])
    assert s.executor == (TableServiceJob(True), RequestJob(0, 1, 0))
    # the slow job outlasts the request's RPC timeout: it cannot end before the request expired
    assert "times out first" in spec.guard(s, E.RunJob())
    s = spec.step(s, E.RequestExpired(0))
    assert s.writers[0].attempt == 1 and s.executor == (TableServiceJob(True, overdue=True), RequestJob(0, 1, 0))
    assert spec.guard(s, E.RequestExpired(0)) is not None  # once per slow job
    s = spec.step(spec.step(s, E.RunJob()), E.RunJob())
    assert s.executor == () and s.writers[0].instant is None


def test_a_global_failover_drops_the_queued_jobs():
    cfg = variant("hudi-1.1-executor", **{**BOUNDS, "faults": frozenset({"coordinator-crash"})})
    s = run(cfg, AFTER_ACK + [E.TriggerCheckpoint(), E.RequestInstant(0)])
    assert len(s.executor) == 2
    assert spec.step(s, E.CrashCoordinator()).executor == ()


@pytest.mark.parametrize("bad,match", [
    (dict(mode="blocking", executor_queue=True, coordinator_starts_instants=True),
     "executor_queue: not modelled with coordinator_starts_instants"),
    (dict(mode="blocking", executor_queue=True, table_service="bounded"),
     "table_service: 'bounded' is modelled for async instant generation only"),
    (dict(request_thread="executor", executor_queue=True), "request_thread: 'executor' needs mode='blocking'"),
    (dict(request_thread="executor", mode="blocking"), "request_thread: 'executor' needs mode='blocking'"),
    (dict(mode="blocking", executor_queue=True, request_thread="both"), "request_thread: 'both' is not one of"),
    (dict(table_service="slow"), "table_service: 'slow' needs executor_queue"),
    (dict(executor_queue=True, table_service="sometimes"), "table_service: 'sometimes' is not one of"),
])
def test_impossible_settings_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        ProtocolConfig(**bad)


# -------------------------------------------------------------------------- the stall and its fix

def test_request_behind_a_slow_table_service_expires_and_the_stall_bound_reports_it(tmp_path, capsys):
    cfg, st, events, verdicts = drained("table-service-on-executor")
    kinds = [e.kind for e in events]
    # the drain runs the commit, whose slow table-service job the next checkpoint's request queues behind
    i = kinds.index("request-expired")
    assert kinds[i - 2:i + 1] == ["trigger-checkpoint", "request-instant", "request-expired"]
    assert verdicts["exactly-once.drained"].holds and verdicts["liveness"].holds
    v = verdicts["liveness.stall"]
    assert not v.holds and "1 instant request(s) expired behind a slow job" in v.detail
    # the engine runs and judges the same
    s = System(cfg)
    for ev in AFTER_ACK:
        s.apply(ev)
    assert s.drain() == events[len(AFTER_ACK):]
    assert {x.invariant: x.holds for x in engine_drained(s)} == {k: x.holds for k, x in verdicts.items()}
    path = write_trace(tmp_path / "stall.jsonl", cfg, events, seed=0, driver="manual")
    assert cli_main(["replay", str(path)]) == 1
    assert "liveness.stall" in capsys.readouterr().out


def test_bounded_table_service_scheduling_needs_no_timeout():
    _, _, events, verdicts = drained("hudi-1.1-executor")
    assert "request-expired" not in [e.kind for e in events]
    assert all(v.holds for v in verdicts.values()), [str(v) for v in verdicts.values()]


def test_explore_finds_the_shortest_stall_and_the_bounded_design_holds():
    bounds = dict(parallelism=1, max_checkpoints=2, records=2, buffer_size=2)
    model = SystemModel(variant("table-service-on-executor", faults=frozenset(), **bounds))
    res = explore(model)
    d = res.discoveries["liveness.stall"]
    kinds = [e.kind for e in d.actions]
    assert d.depth == 14 and kinds[7:12] == ["trigger-checkpoint", "deliver-ack", "request-instant", "run-job",
                                             "request-expired"]
    faults = frozenset({"lost-ack", "request-timeout", "task-crash", "coordinator-crash"})
    for name, expect in (("hudi-1.1-executor", set()), ("table-service-on-executor", {"liveness.stall"})):
        res = explore(SystemModel(variant(name, faults=faults, max_crashes=1, **bounds)), stop_on_violation=False)
        assert res.complete and set(res.discoveries) == expect and res.states > 2000


def test_default_designs_have_no_queue():
    """executor_queue is off by default: the explorer's counts of the other designs are unchanged (a commit and
    a request take effect when they arrive, and run-job is never enabled)."""
    cfg = variant("hudi-1.1", parallelism=1, max_checkpoints=2, records=2, buffer_size=1)
    res = explore(SystemModel(cfg), stop_on_violation=False)
    s = System(cfg)
    assert "executor" in spec.guard(spec.init(cfg), E.RunJob()) and s.is_enabled(E.RunJob()) is not None
    assert res.complete and not res.discoveries
    with pytest.raises(RuleViolation, match="run-job.not-enabled"):
        s.apply(E.RunJob())


def test_engine_refines_the_spec_along_the_stall():
    for name in ("table-service-on-executor", "hudi-1.1-executor"):
        cfg = variant(name, **{**BOUNDS, "faults": frozenset({"request-timeout", "lost-ack"})})
        path = AFTER_ACK + [E.TriggerCheckpoint(), E.RequestInstant(0), E.RunJob(), DRAIN]
        assert check_refines(cfg, path) is None


@pytest.mark.parametrize("key,name", [("async_variant", "hudi-1.1-executor"),
                                      ("blocking_variant", "hudi-1.1-blocking-executor"),
                                      ("blocking_variant", "commit-guard-on-executor")])
def test_the_simulation_refuses_a_spec_queue_variant(key, name):
    """The simulation runs the executor's queue itself (``coordinator.request_timeout_s``); a variant with the
    spec's queue would leave its requests unanswered, so it is refused in one line naming the key."""
    from lakeio.errors import UserError
    from sim import config as sim_config

    raw = {"name": "q", "kind": "stream", "protocol": {key: name}}
    with pytest.raises(UserError, match=rf"protocol\.{key}: '{name}' models the coordinator's executor queue"):
        sim_config.from_dict(raw, "test")
