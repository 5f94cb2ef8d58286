"""Focused tests for the protocol spec's values and read helpers (model.protocol.source, .config, .events,
.state, .spec) that `make mutate` showed unchecked by the fast tests.

The replayable source (a Kafka-like split: the record at (split, offset) never changes), config overrides,
the event names traces use, what readers see of committed metadata (``committed_records``, the upsert
``table_view``), the records read up to a checkpoint, the counterexample dump, and the spec as a machine.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from model.instant import Action, Instant, State as IState
from model.protocol import events as E
from model.protocol.config import ProtocolConfig
from model.protocol.source import Record, Source
from model.protocol.spec import SPEC, drain, enabled, guard, init, step, view
from model.protocol.state import (TableState, _message, committed_records, describe, emitted_offsets, emitted_records,
                                  source, table_view)
from model.protocol.values import CompletedCheckpoint, TaskSnapshot, WriteMetadataEvent, WriteStatus


def test_source_records_are_fixed_per_split_and_offset():
    src = Source(2, 3, seed=7)
    r = src.record(1, 2)
    assert r == Record("s1-r000002", (7 * 1_000_003 + 7919 + 2 * 104_729) % 1_000_000_007)
    assert Source(2, 3, seed=7).record(1, 2) == r and Source(2, 3, seed=8).record(1, 2) != r
    assert src.records_between(0, 1, 3) == [src.record(0, 1), src.record(0, 2)]
    assert src.records_between(0, 2, 2) == []
    for split, off in ((2, 0), (-1, 0), (0, 3), (0, -1)):
        with pytest.raises(IndexError, match=f"no record at split {split} offset {off}"):
            src.record(split, off)
    assert src.has(0, 2) and not src.has(0, 3)
    big = Source(1, 2, seed=10**6)  # the mix wraps around the prime modulus
    assert big.record(0, 1).value == (10**6 * 1_000_003 + 104_729) % 1_000_000_007 < 1_000_000_007
    assert (src.splits, src.records, src.seed) == (2, 3, 7)


def test_config_with_changes_only_the_named_fields_and_validates():
    cfg = ProtocolConfig()
    b = cfg.with_(mode="blocking", records=6)
    assert (b.mode, b.records, b.parallelism) == ("blocking", 6, cfg.parallelism) and b.blocking
    assert cfg.mode == "async" and not cfg.blocking
    with pytest.raises(ValueError, match="mode: 'x' is not one of"):
        cfg.with_(mode="x")
    assert ProtocolConfig.from_dict(b.to_dict()) == b


def test_events_print_as_their_kind_and_fields():
    assert str(E.Ingest(1)) == "ingest(task=1)" and str(E.TriggerCheckpoint()) == "trigger-checkpoint()"
    assert str(E.DeliverAck(3)) == "deliver-ack(checkpoint=3)"
    assert E.LoseEvent(0).to_dict() == {"kind": "lose-event", "task": 0}

    class Printer:
        def __init__(self):
            self.out = []

        def text(self, s):
            self.out.append(s)
    p = Printer()
    E.RequestTimeout(1)._repr_pretty_(p, False)
    assert p.out == ["request-timeout(task=1)"]


def done(t: str, c: str) -> Instant:
    return Instant(t, Action.DELTACOMMIT, IState.COMPLETED, c)


def test_readers_see_committed_records_in_completion_order_and_the_latest_value_per_key():
    cfg = ProtocolConfig(records=3)
    i1, i2, i3 = "20250101000001000", "20250101000002000", "20250101000003000"
    tl = (done(i1, "20250101000001900"), done(i2, "20250101000001500"),
          Instant(i3, Action.DELTACOMMIT, IState.INFLIGHT))
    meta = ((i1, (WriteStatus(0, 0, 2),)), (i2, (WriteStatus(0, 1, 2), WriteStatus(1, 0, 1))),
            (i3, (WriteStatus(1, 1, 3),)))
    s = replace(init(cfg, seed=3), table=TableState(timeline=tl, metadata=meta))
    src = Source(2, 3, 3)
    assert source(s).record(1, 0) == src.record(1, 0) and source(s).seed == 3
    assert committed_records(s) == Counter({src.record(0, 0): 1, src.record(0, 1): 2, src.record(1, 0): 1})
    assert table_view(s) == {r.key: r.value for r in (src.record(0, 0), src.record(0, 1), src.record(1, 0))}


def test_emitted_records_up_to_the_checkpoint_or_everything_read():
    cfg = ProtocolConfig(records=4)
    s = init(cfg)
    assert emitted_records(s) == [] and emitted_records(s, "all") == []
    w = s.writers
    s = replace(s, writers=(replace(w[0], offset=3), replace(w[1], offset=1)),
                last_completed=CompletedCheckpoint(1, (), (TaskSnapshot(2, 1, ()), TaskSnapshot(0, 1, ()))))
    src = source(s)
    assert emitted_records(s) == [src.record(0, 0), src.record(0, 1)]
    assert emitted_offsets(s) == emitted_offsets(s, "checkpoint") == {(0, 0), (0, 1)}  # the default
    assert emitted_offsets(s, "all") == {(0, 0), (0, 1), (0, 2), (1, 0)}
    assert emitted_records(s, "all") == [src.record(0, 0), src.record(0, 1), src.record(0, 2), src.record(1, 0)]


def test_describe_dumps_tasks_buffers_channels_and_the_checkpoint():
    s = init(ProtocolConfig(event_delivery="async"))
    ev = WriteMetadataEvent(0, 1, "20250101000001000", (WriteStatus(0, 0, 1),))
    assert _message(ev) == str(ev) and _message(TaskSnapshot(1, 4, ())) == "ack(ckp 4)"
    s = replace(s, channels=((ev, TaskSnapshot(1, 4, ())), ()),
                last_completed=CompletedCheckpoint(2, (), (TaskSnapshot(1, 2, ()), TaskSnapshot(0, 2, ()))))
    text = describe(s)
    lines = text.splitlines()
    assert lines[0] == "State(async, tv8, step 0, next ckp 1, pending None, acks ())"
    assert lines[1].startswith("  task 0: offset=0 buffer=[0,0) ckp=-1 grant=None interval=[] state=[] attempt=0 "
                               "status=")
    assert f"  in flight from task 0: ['{ev}', 'ack(ckp 4)']" in lines
    assert not any(ln.startswith("  in flight from task 1") for ln in lines)
    assert "  timeline: []" in lines and "  heartbeats: []" in lines
    assert lines[-1] == "  last completed checkpoint 2: offsets (1, 0), coordinator state keys []"
    assert SPEC.describe(s) == text


def test_the_spec_as_a_machine_delegates_to_the_functions():
    cfg = ProtocolConfig()
    s = SPEC.init(cfg, seed=5)
    assert s == init(cfg, 5) and s.seed == 5 and repr(SPEC) == "SPEC" and SPEC.name == "spec"
    assert SPEC.init(cfg).seed == 0
    with pytest.raises(ValueError, match="the spec takes no time source"):
        SPEC.init(cfg, time_source=object())
    assert SPEC.enabled(s) == enabled(s) and E.Ingest(0) in SPEC.enabled(s)
    assert SPEC.guard(s, E.Ingest(0)) is None and SPEC.guard(s, E.CompleteCheckpoint()) == guard(
        s, E.CompleteCheckpoint()) is not None
    s1 = SPEC.step(s, E.Ingest(0))
    assert s1 == step(s, E.Ingest(0)) and s1.writers[0].offset == 1
    assert SPEC.view(s1) == view(s1) == s1.view()
    assert [v.invariant for v in SPEC.check_step(s1)][0] == "exactly-once.no-duplicates"
    assert [v.invariant for v in SPEC.check_drained(s1)] == ["exactly-once.drained", "liveness", "liveness.stall"]
    d, evs = SPEC.drain(replace(s1, faults_stopped=True))
    assert (d, evs) == drain(replace(s1, faults_stopped=True))
    assert all(v.holds for v in SPEC.check_drained(d))


def test_drain_is_a_fixed_event_sequence():
    """``drain``: stop faults; deliver messages (task order) and acks (oldest first); trigger a checkpoint, each
    task requests an instant and snapshots in task order, messages again, complete; a blocked task times out;
    at most ``max_checkpoints`` rounds; then a LAZY clean when failed writes remain."""
    from model.protocol import variant

    def drained(cfg, evs, *limit):
        s = init(cfg)
        for ev in evs:
            s = step(s, ev)
        d, out = drain(s, *limit)
        return d, [str(e) for e in out]
    two = [E.Ingest(0), E.Ingest(0)]
    ckp = ["trigger-checkpoint()", "request-instant(task=0)", "snapshot-task(task=0)", "request-instant(task=1)",
           "snapshot-task(task=1)"]
    d, out = drained(ProtocolConfig(), two)
    assert out == ["stop-faults()", *ckp, "complete-checkpoint()", "deliver-ack(checkpoint=1)"]
    assert d.faults_stopped and d.last_completed.id == 1
    assert drained(ProtocolConfig(), two, 0)[1] == ["stop-faults()"]
    d, out = drained(ProtocolConfig(event_delivery="async"), [E.Ingest(0), E.Ingest(1)])
    assert out == ["stop-faults()", *ckp, "deliver-event(task=0)", "deliver-event(task=0)", "deliver-event(task=1)",
                   "deliver-event(task=1)", "complete-checkpoint()", "deliver-ack(checkpoint=1)"]
    lost_ack = [E.Ingest(0), E.TriggerCheckpoint(), E.RequestInstant(0), E.SnapshotTask(0), E.CompleteCheckpoint(),
                E.LoseAck(1), E.Ingest(0)]
    blk = variant("blocking-lost-ack-stall", parallelism=1, records=2, buffer_size=1, max_checkpoints=2,
                  faults=frozenset({"lost-ack"}))
    assert drained(blk, lost_ack)[1] == ["stop-faults()", "trigger-checkpoint()", "instant-timeout(task=0)"]
    # already stopped: no second stop-faults
    s = replace(init(ProtocolConfig()), faults_stopped=True)
    assert drain(s)[1] == []
    # a pending instant whose heartbeat expired: a LAZY clean rolls it back; EAGER leaves it to the next start
    failed = TableState(timeline=(Instant("20250101000001000", Action.DELTACOMMIT, IState.INFLIGHT),), created=1)
    d, out = drain(replace(init(ProtocolConfig()), table=failed))
    assert [str(e) for e in out] == ["stop-faults()", "clean()"] and d.table.timeline == ()
    d, out = drain(replace(init(ProtocolConfig(failed_writes="eager", mode="blocking")), table=failed))
    assert [str(e) for e in out] == ["stop-faults()"]


def test_drain_finishes_a_checkpoint_some_tasks_already_snapshotted():
    s = init(ProtocolConfig())
    for ev in (E.Ingest(0), E.Ingest(0), E.TriggerCheckpoint(), E.RequestInstant(0), E.SnapshotTask(0)):
        s = step(s, ev)
    d, out = drain(s)
    assert [str(e) for e in out] == ["stop-faults()", "request-instant(task=1)", "snapshot-task(task=1)",
                                     "complete-checkpoint()", "deliver-ack(checkpoint=1)"]
