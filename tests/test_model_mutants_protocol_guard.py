"""Mutant gaps (issue #15 item 10) in the blocking-mode rules added with the CommitGuard on the executor: the
exact refusals of ``ProtocolConfig`` and of ``instant-timeout``, and what the guard's timeout records."""

from __future__ import annotations

import pytest

from model.protocol import ProtocolConfig, spec, variant
from model.protocol import events as E
from test_protocol_commit_guard import BEFORE_ACK, BOUNDS, run


@pytest.mark.parametrize("kw,message", [
    (dict(mode="blocking", coordinator_starts_instants=True, event_delivery="async"),
     "coordinator_starts_instants: not modelled with event_delivery='async' (0.x bootstrap and commit-ack events "
     "are handled in the step that sends them)"),
    (dict(mode="blocking", coordinator_starts_instants=True, task_failover="single"),
     "coordinator_starts_instants: not modelled with task_failover='single' (0.x's initInstant waits for every "
     "task's bootstrap event)"),
    (dict(mode="async", table_service="bounded"),
     "table_service: 'bounded' needs executor_queue (a table-service job runs on the coordinator's executor queue)"),
    (dict(executor_queue=1), "executor_queue: 1 is not true/false"),
])
def test_config_refusals_word_for_word(kw, message):
    with pytest.raises(ValueError) as e:
        ProtocolConfig(**kw)
    assert str(e.value) == message


def test_config_accepts_what_the_refusals_do_not_cover_and_keeps_faults_a_frozenset():
    # 0.x coordinator-started instants are a blocking-mode setting: with async instant generation they are
    # ignored, and async event delivery alone (without them) is a valid blocking design
    assert not ProtocolConfig(mode="async", coordinator_starts_instants=True, event_delivery="async").coordinator_start
    assert ProtocolConfig(mode="blocking", event_delivery="async").blocking
    cfg = ProtocolConfig(faults={"lost-ack"})
    assert type(cfg.faults) is frozenset and cfg.faults == frozenset({"lost-ack"})


def test_instant_timeout_refusals_word_for_word():
    s = spec.init(variant("hudi-1.1", **BOUNDS))
    assert spec.guard(s, E.InstantTimeout(0)) == "only blocking mode waits for instants"
    no_queue = [ev for ev in BEFORE_ACK if not isinstance(ev, E.RunJob)]
    s = run(variant("hudi-1.1-blocking", **BOUNDS), no_queue)  # blocked; the ack of checkpoint 1 in flight
    assert spec.guard(s, E.InstantTimeout(0)) == "an ack in flight may still unblock the task"
    s = run(variant("hudi-1.1-blocking-executor", **BOUNDS), BEFORE_ACK + [E.DeliverAck(1)])  # the commit queued
    assert spec.guard(s, E.InstantTimeout(0)) == \
        "a commit queued on the coordinator's executor may still release the CommitGuard"


def test_the_guards_timeout_on_the_executor_records_the_deadlock_at_its_step_and_restarts_the_same_graph():
    cfg = variant("commit-guard-on-executor", **BOUNDS)
    s = run(cfg, BEFORE_ACK + [E.RequestInstant(0), E.DeliverAck(1)])
    assert spec.guard(s, E.InstantTimeout(0)) is None and s.history.deadlocks == ()
    steps, attempt = s.history.steps, s.writers[0].attempt
    after = spec.step(s, E.InstantTimeout(0))
    assert after.history.deadlocks == (steps + 1,) and after.history.stalls == ()  # the timeout's own step
    assert after.writers[0].attempt == attempt + 1  # a same-graph restart, not a new coordinator (attempt 0)
