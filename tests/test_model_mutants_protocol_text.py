"""Focused tests for the protocol spec's printed values and its executor queue's bookkeeping, which `make mutate`
showed unchecked by the fast tests: the event and job strings of counterexamples, the state dump, the error
messages of ``event_from_dict`` / ``ProtocolConfig.from_dict``, which queued jobs a timeout marks overdue, and
when a commit job is followed by its table-service scheduling."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import pytest

from model.protocol import ProtocolConfig, spec, variant
from model.protocol import events as E
from model.protocol.executor import mark_overdue
from model.protocol.state import describe
from model.protocol.values import (BufferEntry, CommitJob, RequestJob, TableServiceJob, WriteMetadataEvent,
                                   WriteStatus, describe_slots)

BOUNDS = dict(parallelism=1, records=2, buffer_size=1, max_checkpoints=2, faults=frozenset())
#: checkpoint 1 commits record 0 (its commit job and the table-service job it leaves have run); checkpoint 2
#: flushes nothing and its commit job is queued.
TWO_CHECKPOINTS = [E.Ingest(0), E.TriggerCheckpoint(), E.RequestInstant(0), E.RunJob(), E.SnapshotTask(0),
                   E.CompleteCheckpoint(), E.DeliverAck(1), E.RunJob(), E.RunJob(), E.TriggerCheckpoint(),
                   E.RequestInstant(0), E.RunJob(), E.SnapshotTask(0), E.CompleteCheckpoint(), E.DeliverAck(2)]


def run(cfg, events):
    s = spec.init(cfg)
    for ev in events:
        s = spec.step(s, ev)
    return s


# ------------------------------------------------------------------------------------------- strings
def test_write_metadata_event_string():
    st = (WriteStatus(0, 0, 2), WriteStatus(0, 2, 3))
    assert str(WriteMetadataEvent(1, 4, "T5", st)) == "ev(t1 k4 T5 [0,2),[2,3))"
    assert str(WriteMetadataEvent(1, 4, "T5", st[:1], last_batch=True)) == "ev(t1 k4 T5 [0,2) L)"
    assert str(WriteMetadataEvent(1, 4, "T5", (), bootstrap=True)) == "ev(t1 k4 T5 - B)"
    assert str(WriteMetadataEvent(0, 0, "", (), True, True)) == 'ev(t0 k0 "" - LB)'


def test_slots_and_buffer_entry_strings():
    ev = WriteMetadataEvent(0, 1, "T1", (WriteStatus(0, 0, 1),))
    assert describe_slots("T1", (ev, None)) == "T1: [ev(t0 k1 T1 [0,1)), -]"
    assert describe_slots("T2", ()) == "T2: []"
    assert str(BufferEntry("T3", (None, ev))) == "T3: [-, ev(t0 k1 T1 [0,1))]"


def test_job_strings():
    assert str(CommitJob(3)) == "commit(ckp 3)"
    assert str(RequestJob(1, 2, 0)) == "request(task 1, key 2, attempt 0)"
    assert str(TableServiceJob(True)) == "table-service(slow)"
    assert str(TableServiceJob(False)) == "table-service(bounded)"
    assert str(TableServiceJob(True, overdue=True)) == "table-service(slow, overdue)"
    assert str(TableServiceJob(False, True)) == "table-service(bounded, overdue)"


def test_event_string_lists_every_field():
    @dataclass(frozen=True, slots=True)
    class TwoFields(E.Event):
        task: int
        checkpoint: int
        kind: ClassVar[str] = "two"

    assert str(TwoFields(1, 2)) == "two(task=1, checkpoint=2)"
    assert str(E.Ingest(3)) == "ingest(task=3)" and str(E.RunJob()) == "run-job()"


# ------------------------------------------------------------------------------------------- parsing errors
def test_event_from_dict_messages():
    with pytest.raises(ValueError) as e:
        E.event_from_dict([1])
    assert str(e.value) == "event: expected a JSON object"
    with pytest.raises(ValueError) as e:
        E.event_from_dict({"kind": "nope"})
    assert str(e.value) == "unknown event kind 'nope'; known: " + ", ".join(E.EVENT_TYPES)
    with pytest.raises(ValueError) as e:
        E.event_from_dict({"kind": "ingest", "task": 0, "b": 1, "a": 2})
    assert str(e.value) == "event ingest: unexpected field(s) a, b"
    with pytest.raises(ValueError) as e:
        E.event_from_dict({"kind": "ingest"})
    assert str(e.value) == "event ingest: missing field 'task'"
    for bad in (True, "1", 1.0, None):
        with pytest.raises(ValueError) as e:
            E.event_from_dict({"kind": "deliver-ack", "checkpoint": bad})
        assert str(e.value) == f"event deliver-ack: field 'checkpoint' must be an integer, got {bad!r}"
    assert E.event_from_dict({"kind": "deliver-ack", "checkpoint": 2, "step": 9}) == E.DeliverAck(2)
    assert E.event_from_dict({"kind": "run-job"}) == E.RunJob()


def test_config_from_dict_messages():
    with pytest.raises(ValueError) as e:
        ProtocolConfig.from_dict([])
    assert str(e.value) == "config: expected an object"
    with pytest.raises(ValueError) as e:
        ProtocolConfig.from_dict({"zz": 1, "aa": 2, "parallelism": 1})
    assert str(e.value) == "config: unknown field(s) aa, zz"
    with pytest.raises(ValueError) as e:
        ProtocolConfig.from_dict({"faults": "lost-ack"})
    assert str(e.value) == "faults: expected a list"
    for given in (["lost-ack"], ("lost-ack",), {"lost-ack"}, frozenset({"lost-ack"})):
        cfg = ProtocolConfig.from_dict({"faults": given})
        assert cfg.faults == frozenset({"lost-ack"}) and isinstance(cfg.faults, frozenset)
    assert ProtocolConfig.from_dict(ProtocolConfig().to_dict()) == ProtocolConfig()


# ------------------------------------------------------------------------------------------- the state dump
def test_state_dump_shows_the_executor_queue_timeline_and_task_state():
    cfg = variant("hudi-1.1-executor", **BOUNDS)
    s = run(cfg, TWO_CHECKPOINTS[:7])
    text = describe(s)
    assert "  coordinator executor: ['commit(ckp 1)']" in text.split("\n")
    tl = [line for line in text.split("\n") if line.startswith("  timeline: ")]
    assert tl == [f"  timeline: {[str(i) for i in s.table.timeline]}"] and len(s.table.timeline) >= 1
    assert str(s.table.timeline[0]) in tl[0]
    task = text.split("\n")[1]
    w = s.writers[0]
    assert f" state={[str(e) for e in w.state]} " in task and w.state and str(w.state[0]).startswith("ev(t0 ")
    assert " confirming=" not in task and f"attempt={w.attempt} status=" in task
    confirming = describe(replace(s, writers=(replace(w, confirming="T9"),)))
    assert f"attempt={w.attempt} confirming='T9' status=" in confirming
    assert "coordinator executor" not in describe(replace(s, executor=()))


# ------------------------------------------------------------------------------------------- the executor queue
def test_mark_overdue_marks_only_slow_table_service_jobs_ahead_of_the_request():
    cfg = variant("hudi-1.1-executor", **BOUNDS)
    s = replace(spec.init(cfg), executor=(TableServiceJob(True), TableServiceJob(False), RequestJob(0, 1, 0),
                                          TableServiceJob(True)))
    assert mark_overdue(s, 2).executor == (TableServiceJob(True, True), TableServiceJob(False), RequestJob(0, 1, 0),
                                           TableServiceJob(True))
    s = replace(s, executor=(TableServiceJob(True), TableServiceJob(True)))
    assert mark_overdue(s, 1).executor == (TableServiceJob(True, True), TableServiceJob(True))
    assert mark_overdue(s, 0).executor == s.executor


def test_a_commit_job_schedules_table_services_only_after_a_commit_and_only_when_configured():
    s = run(variant("hudi-1.1-executor", **BOUNDS), TWO_CHECKPOINTS)
    assert s.executor == (CommitJob(2),) and [c.outcome for c in s.history.commits] == ["committed"]
    s = spec.step(s, E.RunJob())  # checkpoint 2 flushed nothing: no commit, no scheduling after it
    assert [c.outcome for c in s.history.commits] == ["committed", "empty"] and s.executor == ()
    none = variant("hudi-1.1-executor", **BOUNDS, table_service="none")
    s = run(none, TWO_CHECKPOINTS[:7])
    s = spec.step(s, E.RunJob())
    assert [c.outcome for c in s.history.commits] == ["committed"] and s.executor == ()
    slow = variant("hudi-1.1-executor", **BOUNDS, table_service="slow")
    s = spec.step(run(slow, TWO_CHECKPOINTS[:7]), E.RunJob())
    assert s.executor == (TableServiceJob(True),)


def test_an_expired_request_fails_only_its_task_under_single_task_failover():
    cfg = variant("table-service-on-executor", parallelism=2, records=2, buffer_size=1, max_checkpoints=2,
                  faults=frozenset(), task_failover="single")
    s = run(cfg, [E.Ingest(0), E.Ingest(1), E.TriggerCheckpoint(), E.RequestInstant(0), E.RunJob(),
                  E.RequestInstant(1), E.RunJob(), E.SnapshotTask(0), E.SnapshotTask(1), E.CompleteCheckpoint(),
                  E.DeliverAck(1), E.RunJob(), E.TriggerCheckpoint(), E.Ingest(1), E.RequestInstant(1)])
    assert [w.attempt for w in s.writers] == [0, 0]
    s = spec.step(s, E.RequestExpired(1))
    assert [w.attempt for w in s.writers] == [0, 1]
    assert s.executor == (TableServiceJob(True, True), RequestJob(1, 1, 0)) and len(s.history.expired) == 1


# ------------------------------------------------------------------------------------------- 0.x failover
from model.protocol.state import Assignment, CommitAttempt  # noqa: E402

ZERO_X_TWO = [E.Ingest(0), E.Ingest(1), E.TriggerCheckpoint(), E.RequestInstant(0), E.RequestInstant(1),
              E.SnapshotTask(0), E.SnapshotTask(1), E.CompleteCheckpoint()]


def test_0x_task_failover_recommits_the_pending_instant_under_its_key_in_a_new_epoch():
    cfg = variant("hudi-0.x-coordinator-start", faults=frozenset({"task-crash", "lost-ack"}), parallelism=2,
                  records=2, buffer_size=1, max_checkpoints=3)
    s = run(cfg, ZERO_X_TWO + [E.LoseAck(1)])
    x = s.coordinator.instant
    s = spec.step(s, E.CrashTask(1))
    assert s.history.commits == (CommitAttempt(10, -1, x, "recommit", "committed"),)
    assert s.history.assignments == (Assignment(4, 0, -1, x), Assignment(10, 1, -1, x))
    assert s.coordinator.instant > x and [w.attempt for w in s.writers] == [1, 1]


def test_0x_task_failover_after_the_commit_recommits_nothing():
    cfg = variant("hudi-0.x-coordinator-start", faults=frozenset({"task-crash"}), parallelism=2,
                  records=2, buffer_size=1, max_checkpoints=3)
    s = run(cfg, ZERO_X_TWO + [E.DeliverAck(1)])
    assert [c.outcome for c in s.history.commits] == ["committed"]
    s = spec.step(s, E.CrashTask(0))
    assert [(c.how, c.outcome) for c in s.history.commits] == [(s.history.commits[0].how, "committed")]
    assert len(s.history.commits) == 1


def test_0x_bootstrap_event_merges_the_last_pending_instants_events():
    from model.protocol.state import Writer
    from model.protocol.values import empty_bootstrap
    from model.protocol.writer import bootstrap_event_0x

    a = WriteMetadataEvent(9, 1, "T1", (WriteStatus(9, 0, 1),))
    b = WriteMetadataEvent(9, 2, "T2", (WriteStatus(9, 1, 2),))
    c = WriteMetadataEvent(9, 2, "T2", (WriteStatus(9, 2, 3),), last_batch=True)
    d = WriteMetadataEvent(9, 3, "T2", (WriteStatus(9, 3, 4),))
    w = Writer(task=1, checkpoint_id=4, state=(a, b, c, d))
    out = bootstrap_event_0x(w, "T2")
    assert out == b._replace(task=1).merge_with(c._replace(task=1)).merge_with(d._replace(task=1))
    assert out.task == 1 and out.statuses == (WriteStatus(9, 1, 2), WriteStatus(9, 2, 3), WriteStatus(9, 3, 4))
    assert bootstrap_event_0x(w, "T1") == a._replace(task=1)
    assert bootstrap_event_0x(w, None) == empty_bootstrap(1, 4) == WriteMetadataEvent(1, 4, "", (), False, True)
    assert bootstrap_event_0x(w, "T9") == empty_bootstrap(1, 4)


def test_0x_event_without_a_buffer_opens_one_under_its_key_for_the_coordinators_instant():
    from model.protocol import coordinator as C

    cfg = variant("hudi-0.x-coordinator-start", parallelism=2, records=2, buffer_size=1, max_checkpoints=3)
    s = spec.init(cfg)
    ev = WriteMetadataEvent(1, 3, "TE", (WriteStatus(1, 0, 1),))
    for coord_instant, expected in (("TC", "TC"), (None, "TE")):
        s0 = replace(s, coordinator=replace(s.coordinator, buffers=(), instant=coord_instant))
        out = C.handle_write_metadata(s0, ev)
        assert out.coordinator.buffers == ((3, BufferEntry(expected, (None, ev))),)
        assert out.history.assignments[-1][2:] == (3, expected)
        # a second event joins the same (single) buffer whatever its key, merged into its task's slot
        ev2 = WriteMetadataEvent(1, 5, "TF", (WriteStatus(1, 1, 2),), last_batch=True)
        out2 = C.handle_write_metadata(out, ev2)
        assert out2.coordinator.buffers == ((3, BufferEntry(expected, (None, ev.merge_with(ev2)))),)
