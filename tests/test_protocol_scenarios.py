"""Named failover scenarios, scripted event by event: the design-review examples.

Each scenario runs the same schedule against the Hudi 1.1 design and against a variant; the
design keeps every record exactly once, the variant loses data, and the trace written for the
variant replays (``hoodie-lab replay``) to the violation.
"""

from __future__ import annotations

from hoodie_lab.cli import main as cli_main
from lakeio.traces import write_trace
from model.invariants import violations
from engine.invariants import check_drained, check_step
from model.protocol import (AbortCheckpoint, CompleteCheckpoint, CrashCoordinator, CrashTask, Ingest, LoseAck, RequestInstant, RestartJob, SnapshotTask, TriggerCheckpoint, variant)
from engine import System


def run(config, schedule):
    s = System(config)
    events = []
    for ev in schedule:
        s.apply(ev)
        events.append(ev)
    events += s.drain()
    verdicts = {v.invariant: v for v in check_step(s) + check_drained(s)}
    return s, events, verdicts


# ------------------------------------------------------------- Hudi #19215
#: One task, buffer of one record. The task's eager flush asks for an instant (an all-null entry
#: for key -1 appears), checkpoint 1 is triggered before the flush's write metadata arrives, so
#: 1.1.1 serializes the all-null entry; the barrier flush completes the entry in memory; the ack
#: of checkpoint 1 is lost; a same-graph global failover restores the all-null entry *over* the
#: complete one, restoreEvents finds nothing to commit and resets it, and the restarted task
#: (attempt 1) only sends a cleanup event. Record s0-r000000 is never committed.
SCHEDULE_19215 = [Ingest(0), RequestInstant(0), TriggerCheckpoint(), SnapshotTask(0), CompleteCheckpoint(),
                  LoseAck(1), RestartJob()]
BOUNDS_19215 = dict(parallelism=1, records=2, buffer_size=1, faults=frozenset({"lost-ack", "full-restart"}))


def test_hudi_19215_loses_data_and_the_fixed_design_does_not(tmp_path, capsys):
    _, _, good = run(variant("hudi-1.1", **BOUNDS_19215), SCHEDULE_19215)
    assert all(v.holds for v in good.values()), [str(v) for v in good.values() if not v.holds]
    s, events, bad = run(variant("bug-19215", **BOUNDS_19215), SCHEDULE_19215)
    assert not bad["exactly-once.drained"].holds and "lost" in bad["exactly-once.drained"].detail
    assert not bad["I12.state-coverage"].holds  # the all-null entry shadows the task state
    assert s.committed_offsets() == {}
    path = write_trace(tmp_path / "bug-19215.jsonl", s.config, events, seed=0, driver="manual",
                       note="Hudi #19215 reproduction")
    assert cli_main(["replay", str(path)]) == 1
    assert "VIOLATED" in capsys.readouterr().out


# ------------------------------------------------------- partial abort (model finding)
#: Checkpoint 1 aborts after task 0 snapshotted it (task 0's last-known id is 1, task 1's still
#: -1); at checkpoint 2's trigger the entry of key -1 holds only task 0's lastBatch event and a
#: null slot for task 1, so it counts as complete and is serialized; task 1 flushes key -1 at
#: checkpoint 2's barrier and keeps it in its state. After the coordinator fails (ack of 2 never
#: delivered) restoreEvents commits the entry without task 1's data, and task 1 does not re-send
#: it because the instant is no longer pending.
SCHEDULE_PARTIAL_ABORT = [Ingest(0), Ingest(1), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0),
                          AbortCheckpoint(), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0),
                          RequestInstant(1), SnapshotTask(1), CompleteCheckpoint(), CrashCoordinator()]
BOUNDS_PARTIAL = dict(parallelism=2, records=2, buffer_size=2,
                      faults=frozenset({"abort", "coordinator-crash"}), partial_aborts=True)


def test_partial_abort_loses_data_in_hudi_1_1():
    s, _, bad = run(variant("hudi-1.1", **BOUNDS_PARTIAL), SCHEDULE_PARTIAL_ABORT)
    assert not bad["exactly-once.drained"].holds
    assert "s1-r000000" in bad["exactly-once.drained"].detail
    assert not bad["I12.state-coverage"].holds


def test_without_partial_aborts_the_same_abort_is_refused():
    s = System(variant("hudi-1.1", **{**BOUNDS_PARTIAL, "partial_aborts": False}))
    for ev in SCHEDULE_PARTIAL_ABORT[:5]:
        s.apply(ev)
    assert AbortCheckpoint() not in s.enabled_events()


# ------------------------------------------- single-task failover (model finding)
#: Point-wise failover regions: task 0 fails while checkpoint 1 is pending after task 1 already
#: snapshotted it, so task 1's key -1 data is final while task 0 restarts at id -1 and its slot is
#: nulled (cleanLegacyEvents). At checkpoint 2's trigger the entry of key -1 (null, lastBatch)
#: counts as complete and is serialized without task 0's part; task 0 then flushes key -1 and
#: keeps it in its state. A coordinator failover recommits the partial entry and task 0 does not
#: re-send its part (the instant is completed). Hudi's region failover of all write tasks (the
#: default, ``task_failover="region"``) survives the same schedule.
SCHEDULE_SINGLE = [Ingest(0), Ingest(1), TriggerCheckpoint(), RequestInstant(1), SnapshotTask(1), CrashTask(0),
                   Ingest(0), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), RequestInstant(1),
                   SnapshotTask(1), CompleteCheckpoint(), CrashCoordinator()]
BOUNDS_SINGLE = dict(parallelism=2, records=2, buffer_size=2, max_crashes=2,
                     faults=frozenset({"task-crash", "coordinator-crash"}))


def test_single_task_failover_loses_data_region_failover_does_not():
    _, _, good = run(variant("hudi-1.1", **BOUNDS_SINGLE), SCHEDULE_SINGLE)
    assert violations(good.values()) == []
    _, _, bad = run(variant("single-task-failover", **BOUNDS_SINGLE), SCHEDULE_SINGLE)
    assert not bad["exactly-once.drained"].holds and "s0-r000000" in bad["exactly-once.drained"].detail


# ---------------------------------------------------- no coordinator snapshot
#: Two checkpoints complete; the coordinator fails before delivering the ack of checkpoint 2
#: (acks in flight die with it). Key -1's data was acknowledged by checkpoint 1 but never
#: committed (ack 1 lost); only the coordinator's memory held it.
SCHEDULE_NO_SNAPSHOT = [Ingest(0), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint(),
                        LoseAck(1), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint(),
                        CrashCoordinator()]
BOUNDS_NO_SNAPSHOT = dict(parallelism=1, records=2, buffer_size=2, faults=frozenset({"lost-ack", "coordinator-crash"}))


def test_coordinator_snapshot_is_needed():
    _, _, good = run(variant("hudi-1.1", **BOUNDS_NO_SNAPSHOT), SCHEDULE_NO_SNAPSHOT)
    assert all(v.holds for v in good.values())
    _, _, bad = run(variant("no-coordinator-snapshot", **BOUNDS_NO_SNAPSHOT), SCHEDULE_NO_SNAPSHOT)
    assert not bad["exactly-once.drained"].holds and not bad["I12.state-coverage"].holds


def test_every_correct_variant_survives_the_scenarios():
    for name in ("hudi-1.1", "hudi-1.1-tv6"):
        for bounds, schedule in ((BOUNDS_19215, SCHEDULE_19215), (BOUNDS_NO_SNAPSHOT, SCHEDULE_NO_SNAPSHOT)):
            _, _, verdicts = run(variant(name, **bounds), schedule)
            assert violations(verdicts.values()) == []
