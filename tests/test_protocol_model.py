"""Unit tests of the protocol model's rules (hudi-semantics.md 4.2-4.4, I10-I14)."""

from __future__ import annotations

import json

import pytest

from model.errors import RuleViolation
from model.invariants import violations
from engine.invariants import check_drained, check_step
from model.protocol import (EVENT_TYPES, VARIANTS, CompleteCheckpoint, CrashCoordinator, CrashTask, DeliverAck, Flush, Ingest, InstantTimeout, LoseAck, ProtocolConfig, RequestInstant, RestartJob, SnapshotTask, TriggerCheckpoint, event_from_dict, variant)
from engine import System
from engine.coordinator import BufferEntry, Coordinator
from engine.table import LogicalClock, Table
from engine.writer import WriteMetadataEvent

NO_FAULTS = frozenset()


def mk(name="hudi-1.1", **kw) -> System:
    kw.setdefault("faults", NO_FAULTS)
    return System(variant(name, **kw))


def checkpoint(s: System) -> int:
    """Trigger, snapshot every task (getting instants) and complete one checkpoint."""
    if s.pending_checkpoint is None:
        s.apply(TriggerCheckpoint())
    n = s.pending_checkpoint.id
    for t in range(s.config.parallelism):
        if s.pending_checkpoint.tasks[t] is None:
            if s.writers[t].instant is None:
                s.apply(RequestInstant(t))
            s.apply(SnapshotTask(t))
    s.apply(CompleteCheckpoint())
    return n


def assert_all_hold(s: System) -> None:
    assert violations(check_step(s)) == []


# ------------------------------------------------------------------ config
def test_defaults_follow_hudi_1_1():
    c = ProtocolConfig()
    assert (c.mode, c.table_version, c.failed_writes, c.commit_rule, c.coordinator_snapshot, c.snapshot_order) == \
        ("async", 8, "lazy", "<", True, "coordinator-first")
    assert ProtocolConfig.from_dict(json.loads(json.dumps(c.to_dict()))) == c


@pytest.mark.parametrize("bad,field", [({"mode": "sync"}, "mode"), ({"parallelism": 0}, "parallelism"),
                                       ({"faults": ["meteor"]}, "faults"), ({"commit_rule": "<<"}, "commit_rule")])
def test_config_rejects_bad_values_naming_the_field(bad, field):
    with pytest.raises(ValueError, match=field):
        ProtocolConfig.from_dict(bad)


def test_variant_registry():
    assert variant("hudi-0.x-blocking").table_version == 6
    with pytest.raises(ValueError, match="unknown variant"):
        variant("nope")
    for v in VARIANTS.values():
        v.config()  # every variant is a valid config


def test_events_round_trip_through_json():
    for kind, cls in EVENT_TYPES.items():
        args = {"task": 1} if "task" in cls.__dataclass_fields__ else {}
        args.update({"checkpoint": 3} if "checkpoint" in cls.__dataclass_fields__ else {})
        ev = cls(**args)
        assert event_from_dict(json.loads(json.dumps(ev.to_dict()))) == ev
        assert ev.kind == kind
    with pytest.raises(ValueError, match="unknown event kind"):
        event_from_dict({"kind": "teleport"})
    with pytest.raises(ValueError, match="missing field"):
        event_from_dict({"kind": "ingest"})


# ------------------------------------------------------------------- writer
def test_apply_refuses_events_that_are_not_enabled():
    s = mk(records=1)
    with pytest.raises(RuleViolation) as e:
        s.apply(Flush(0))
    assert e.value.rule == "flush.not-enabled"
    s.apply(Ingest(0))
    with pytest.raises(RuleViolation, match="exhausted"):
        s.apply(Ingest(0))
    with pytest.raises(RuleViolation, match="does not exist"):
        s.apply(Ingest(7))


def test_eager_flush_when_full_and_first_interval_is_keyed_minus_one():
    s = mk(parallelism=2, buffer_size=2)
    s.apply(Ingest(0))
    assert RequestInstant(0) not in s.enabled_events()  # buffer not full, no barrier
    s.apply(Ingest(0))
    assert Ingest(0) not in s.enabled_events()
    s.apply(RequestInstant(0))
    s.apply(Flush(0))
    entry = s.coordinator.buffers[-1]
    assert entry.slots[0].statuses[0][1:] == (0, 2) and not entry.slots[0].last_batch
    # the other task asking with the same last known id (-1) shares the instant (I10)
    s.apply(Ingest(1))
    s.apply(Ingest(1))
    s.apply(RequestInstant(1))
    assert s.writers[1].instant == entry.instant
    assert len(s.pending_instants()) == 1


def test_snapshot_keys_the_interval_by_the_previous_id_and_replaces_state():
    s = mk(parallelism=1, buffer_size=4)
    s.apply(Ingest(0))
    assert checkpoint(s) == 1
    w = s.writers[0]
    assert w.checkpoint_id == 1 and len(w.state) == 1 and w.state[0].checkpoint_id == -1
    s.apply(Ingest(0))
    checkpoint(s)
    w = s.writers[0]
    assert w.checkpoint_id == 2 and len(w.state) == 1 and w.state[0].checkpoint_id == 1  # replaced


# -------------------------------------------------------------- coordinator
def test_ack_commits_every_key_below_n_ascending_once():
    s = mk(parallelism=1, records=4, buffer_size=4, faults=frozenset({"lost-ack"}), max_checkpoints=5)
    for _ in range(3):
        s.apply(Ingest(0))
        checkpoint(s)
    s.apply(LoseAck(1))
    s.apply(LoseAck(2))
    assert sorted(s.coordinator.buffers) == [-1, 1, 2]
    s.apply(DeliverAck(3))  # subsumes 1 and 2: commits keys -1, 1, 2 in this order
    assert [k for _, k, _ in s.table.commit_log] == [-1, 1, 2]
    assert s.coordinator.buffers == {}
    assert_all_hold(s)
    s.drain()
    assert all(v.holds for v in check_drained(s))


def test_empty_instant_is_reset_and_rolled_back_lazily():
    s = mk(parallelism=1, records=0)
    checkpoint(s)  # the task asks for an instant at the barrier even with no data
    (inst,) = s.pending_instants()
    s.apply(DeliverAck(1))
    assert s.coordinator.buffers == {} and s.pending_instants() == [inst]  # left pending
    assert inst not in s.table.heartbeats
    assert s.table.failed_writes() == [inst]
    from model.protocol import Clean
    s.apply(Clean())
    assert s.pending_instants() == [] and inst in s.table.rollbacks


def test_eager_policy_rolls_back_at_start_commit():
    s = mk("hudi-1.1-blocking", parallelism=1, records=0)
    checkpoint(s)
    s.apply(DeliverAck(1))
    (empty,) = s.pending_instants()
    checkpoint(s)  # startCommit of the next instant rolls the empty one back first
    assert empty in s.table.rollbacks and empty not in s.pending_instants()


def test_blocking_mode_blocks_until_commit_and_times_out_when_the_ack_is_lost():
    s = mk("hudi-1.1-blocking", parallelism=1, records=4, buffer_size=1, faults=frozenset({"lost-ack"}))
    s.apply(Ingest(0))
    checkpoint(s)  # key -1 flushed, waiting for ack 1
    s.apply(Ingest(0))
    assert s.writer_status(0) == "blocked"  # buffer full, key 1 needs a new instant
    assert RequestInstant(0) not in s.enabled_events()
    s.apply(DeliverAck(1))
    assert s.writer_status(0) == "needs-instant"
    s.apply(RequestInstant(0))
    s.apply(Flush(0))
    checkpoint(s)
    s.apply(LoseAck(2))
    s.apply(Ingest(0))
    assert s.writer_status(0) == "blocked"
    assert InstantTimeout(0) in s.enabled_events()  # nothing in flight can free it
    s.apply(InstantTimeout(0))  # CommitGuard timeout -> global failover -> recommit from state
    assert_all_hold(s)
    s.drain()
    assert all(v.holds for v in check_drained(s))


# ----------------------------------------------------------------- failover
def test_coordinator_failover_recommits_restored_buffers():
    s = mk(parallelism=2, records=2, buffer_size=2, faults=frozenset({"lost-ack", "coordinator-crash"}))
    s.apply(Ingest(0))
    checkpoint(s)
    s.apply(Ingest(1))
    checkpoint(s)
    s.apply(LoseAck(1))
    s.apply(LoseAck(2))
    pending_before = list(s.pending_instants())
    s.apply(CrashCoordinator())
    # key -1 came from the coordinator state, key 1 from the tasks' bootstrap events
    assert [k for _, k, how in s.table.commit_log] == [-1, 1]
    assert all(how == "recommit" for *_, how in s.table.commit_log)
    assert set(pending_before) <= {i for i, *_ in s.table.commit_log}
    assert_all_hold(s)
    s.drain()
    assert all(v.holds for v in check_drained(s))


def test_task_failover_discards_partial_data_and_replays():
    s = mk(parallelism=2, records=3, buffer_size=1, faults=frozenset({"task-crash"}))
    s.apply(Ingest(0))
    checkpoint(s)
    s.apply(Ingest(0))
    s.apply(RequestInstant(0))
    s.apply(Flush(0))  # data after checkpoint 1, keyed 1
    assert s.coordinator.buffers[1].slots[0] is not None
    s.apply(CrashTask(0))
    assert s.coordinator.buffers[1].slots[0] is None  # cleanLegacyEvents
    assert s.writers[0].offset == 1 and s.writers[0].attempt == 1  # rewound to checkpoint 1
    s.drain()
    assert all(v.holds for v in check_drained(s)) and all(v.holds for v in check_step(s))


def test_full_restart_recommits_from_task_state():
    s = mk(parallelism=2, records=2, buffer_size=2, faults=frozenset({"lost-ack", "full-restart"}))
    s.apply(Ingest(0))
    s.apply(Ingest(1))
    checkpoint(s)
    s.apply(LoseAck(1))
    s.apply(RestartJob())
    assert len(s.table.commit_log) == 1
    s.drain()
    assert all(v.holds for v in check_drained(s))


# ------------------------------------------------------------ pieces alone
def test_coordinator_and_table_usable_without_a_system():
    """The pipeline's driver-side use: one batch = one checkpoint interval, ack = commit of batch n."""
    cfg = ProtocolConfig(parallelism=1)
    table = Table(8, "commit", LogicalClock())
    coord = Coordinator(cfg)
    inst = coord.handle_instant_request(table, -1)
    coord.handle_write_metadata(table, WriteMetadataEvent(0, -1, inst, ((0, 0, 3),), True))
    state = coord.checkpoint(1)
    assert state == ((-1, BufferEntry(inst, (WriteMetadataEvent(0, -1, inst, ((0, 0, 3),), True),))),)
    outcome = coord.notify_checkpoint_complete(table, 1)
    assert outcome == [(-1, inst, "committed")] and table.is_completed(inst)
    assert table.timeline.get(inst, "commit").completion_time > inst


def test_event_buffers_are_copied_on_write_and_checkpoint_state_is_frozen():
    """A coordinator fills its event buffers in place; a copy shares them until one of the two writes; the
    checkpoint state and the key hold frozen values that later writes do not change."""
    cfg = ProtocolConfig(parallelism=2)
    table = Table(8, "commit", LogicalClock())
    a = Coordinator(cfg)
    inst = a.handle_instant_request(table, -1)
    a.handle_write_metadata(table, WriteMetadataEvent(0, -1, inst, ((0, 0, 3),), True))
    state, key = a.checkpoint(1), a.key()
    b = a.copy()
    assert b.buffers[-1] is a.buffers[-1] and b.key() == key
    b.handle_write_metadata(table, WriteMetadataEvent(1, -1, inst, ((1, 0, 2),), True))
    assert a.buffers[-1].slots[1] is None and b.buffers[-1].slots[1] is not None
    assert a.key() == key and b.key() != key
    a.handle_write_metadata(table, WriteMetadataEvent(1, -1, inst, ((1, 0, 5),), True))  # the original writes too
    assert b.buffers[-1].slots[1].statuses == ((1, 0, 2),) and a.buffers[-1].slots[1].statuses == ((1, 0, 5),)
    assert a.key() != key  # the key follows in-place changes
    assert state == ((-1, BufferEntry(inst, (WriteMetadataEvent(0, -1, inst, ((0, 0, 3),), True), None))),)
    # a restored buffer is the coordinator's own: writing it leaves the checkpoint state alone
    c = Coordinator(cfg)
    c.reset_to_checkpoint(state, keep_memory=False)
    c.handle_write_metadata(table, WriteMetadataEvent(1, -1, inst, ((1, 0, 1),), True))
    assert state[0][1].slots[1] is None and c.buffers[-1].slots[1] is not None


def test_clone_is_independent_and_fingerprint_canonical():
    a = mk(parallelism=2)
    a.apply(Ingest(0))
    b = a.clone()
    b.apply(Ingest(0))
    assert a.writers[0].offset == 1 and b.writers[0].offset == 2
    # two interleavings reaching the same state have the same fingerprint
    x, y = mk(parallelism=2), mk(parallelism=2)
    for ev in (Ingest(0), Ingest(1)):
        x.apply(ev)
    for ev in (Ingest(1), Ingest(0)):
        y.apply(ev)
    assert x.fingerprint() == y.fingerprint() and hash(x.fingerprint()) == hash(y.fingerprint())
    assert a.fingerprint() != b.fingerprint()


def test_pending_checkpoint_is_copied_on_write_by_clones():
    """The pending checkpoint changes in place (a task's acknowledgement); a clone shares it until one of
    the two Systems writes, and the cached fingerprint hash follows every change."""
    a = mk(parallelism=3)
    a.apply(TriggerCheckpoint())
    a.apply(RequestInstant(0))
    b = a.clone()
    a_hash = a.fingerprint_hash()
    assert b.fingerprint_hash() == a_hash and b.pending_checkpoint is a.pending_checkpoint
    b.apply(SnapshotTask(0))
    assert a.pending_checkpoint.tasks == [None, None, None] and a.pending_checkpoint.acknowledged == 0
    assert b.pending_checkpoint.tasks[0] is not None and b.pending_checkpoint.acknowledged == 1
    assert a.fingerprint_hash() == a_hash and b.fingerprint_hash() != a_hash
    assert hash(b.fingerprint()) != hash(a.fingerprint())
    # the original may write too, after the clone copied: each has its own
    a.apply(RequestInstant(1))
    a.apply(SnapshotTask(1))
    assert a.pending_checkpoint.acknowledged == 1 and a.pending_checkpoint.tasks[0] is None
    assert b.pending_checkpoint.tasks[1] is None
    # the same acknowledgements in another order: same fingerprint and hash as by value
    b.apply(RequestInstant(1))
    b.apply(SnapshotTask(1))
    c = mk(parallelism=3)
    for ev in (TriggerCheckpoint(), RequestInstant(1), RequestInstant(0), SnapshotTask(1), SnapshotTask(0)):
        c.apply(ev)
    assert c.pending_checkpoint == b.pending_checkpoint and c.pending_checkpoint.all_tasks_done() is False
    # a System that owns its pending checkpoint changes it in place (same object): the cached hash is dropped
    d = mk(parallelism=3)
    for ev in (TriggerCheckpoint(), RequestInstant(1), RequestInstant(0)):
        d.apply(ev)
    before, pending = d.fingerprint_hash(), d.pending_checkpoint
    d.apply(SnapshotTask(1))
    d.apply(SnapshotTask(0))
    assert d.pending_checkpoint is pending and d.fingerprint_hash() != before
    assert d.fingerprint_hash() == c.fingerprint_hash() and d.fingerprint() == c.fingerprint()
    with pytest.raises(ValueError, match="task 0 already acknowledged"):
        c.pending_checkpoint.acknowledge_task(0, c.pending_checkpoint.tasks[0])
    with pytest.raises(TypeError):
        hash(c.pending_checkpoint)  # mutable: its key() is hashed instead


def test_table_view_shows_committed_records():
    s = mk(parallelism=1, records=2, buffer_size=2)
    s.apply(Ingest(0))
    s.apply(Ingest(0))
    checkpoint(s)
    assert s.table_view() == {}
    s.apply(DeliverAck(1))
    view = s.table_view()
    assert sorted(view) == [r.key for r in s.emitted_records()] and len(view) == 2


def test_is_enabled_preconditions_task_fault_then_guard_for_any_event_class():
    """is_enabled asks, in order: the task exists, the fault is on, the kind's guard -- for the
    registered event classes (looked up by class) and for any other event object alike."""
    from model.protocol import AbortCheckpoint, Event

    s = mk(parallelism=2, faults=frozenset({"abort"}))
    assert s.is_enabled(Ingest(2)) == "task 2 does not exist (parallelism 2)"
    assert s.is_enabled(Ingest(-1)) == "task -1 does not exist (parallelism 2)"
    assert s.is_enabled(CrashTask(5)) == "task 5 does not exist (parallelism 2)"
    assert s.is_enabled(CrashTask(0)) == "fault task-crash is not enabled"
    assert s.is_enabled(AbortCheckpoint()) == "no checkpoint pending"
    s.apply(TriggerCheckpoint())
    assert s.is_enabled(AbortCheckpoint()) is None
    s.faults_stopped = True
    assert s.is_enabled(AbortCheckpoint()) == "fault abort is not enabled (faults stopped)"
    assert s.is_enabled(Ingest(1)) is None

    class Teleport(Event):  # not a registered kind
        __slots__ = ("task",)
        kind = "teleport"

        def __init__(self, task):
            object.__setattr__(self, "task", task)

    class LateIngest(Ingest):  # a subclass of a registered class: asked like any other object
        __slots__ = ()
        fault = "late-ack"

    assert s.is_enabled(Teleport(3)) == "task 3 does not exist (parallelism 2)"
    assert s.is_enabled(Teleport(1)) == "unknown event kind 'teleport'"
    assert s.is_enabled(LateIngest(0)) == "fault late-ack is not enabled (faults stopped)"


def test_model_errors_rebuild_from_their_arguments():
    """Pickling rebuilds an exception from its ``args``, and so does SimPy when a process fails with one: a
    RuleViolation or CodecError must come back whole (same class, rule, message), not as a TypeError."""
    import pickle

    import simpy

    from model.errors import CodecError, RuleViolation, TimelineError

    for err in (RuleViolation("I3.legal-transition", "no"), TimelineError("I1.unique", "twice"),
                CodecError("x.commit", "not an instant file")):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err) and back.args == err.args
    assert str(RuleViolation("r", "m")) == "[r] m" and str(CodecError("f", "p")) == "f: p"

    env = simpy.Environment()

    def fails():
        yield env.timeout(1)
        raise RuleViolation("ingest.not-enabled", "Ingest(task=0) is not enabled: split 0 is exhausted")

    env.process(fails())
    with pytest.raises(RuleViolation) as exc:
        env.run()
    assert exc.value.rule == "ingest.not-enabled" and "split 0 is exhausted" in str(exc.value)
