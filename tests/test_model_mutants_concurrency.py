"""Focused tests for the concurrency machine's rollback and savepoint steps that `make mutate` showed unchecked
by the fast tests: what a LAZY rollback of a crashed write deletes and records (files by marker, markers, the
rollback instant and who wrote it, the generator's state, the dead set), and which commit a savepoint pins."""

from __future__ import annotations

from model.concurrency import machine as M
from model.concurrency.settings import Settings
from model.concurrency.state import MachineConfig
from model.concurrency.variants import VARIANTS
from model.timeline import Action, State

T = "2025010100000000"  # + one digit: the machine's generated times
T0 = "20241231235959990"


def run(cfg, actions):
    s = M.initial_state(cfg)
    for a in actions:
        s = M.step(cfg, s, a)
    return s


CRASHED = [("w1", "generate"), ("w1", "publish"), ("w1", "write"), ("w2", "generate"), ("w2", "publish"),
           ("w2", "write"), ("w1", "crash")]


def test_lazy_rollback_deletes_the_crashed_writes_files_and_markers_only():
    cfg = VARIANTS["lazy-crash"].config()
    before = run(cfg, CRASHED)
    assert [t for t, _ in before.markers] == [f"{T}0", f"{T}1"]
    s = M.step(cfg, before, ("cl", "clean"))
    names = [f.name for f, _ in s.files]
    assert names == [f".b0_{T}1.log.1_2-0-1", f"b0_0-0-1_{T0}.parquet"]  # w1's log is gone, w2's stays
    assert [t for t, _ in s.markers] == [f"{T}1"] and s.markers == before.markers[1:]
    assert s.dead == frozenset({f"{T}0"}) and s.rollbacks == ((f"{T}0", False),)
    rb = [i for i in s.tl.instants() if i.action == Action.ROLLBACK]
    assert [str(i) for i in rb] == [f"{T}2->{T}3.rollback[completed]"]
    assert s.tl.writers_of(f"{T}2", Action.ROLLBACK) == {State.REQUESTED: ("cl",), State.INFLIGHT: ("cl",),
                                                         State.COMPLETED: ("cl",)}
    assert f"{T}0" not in [i.requested_time for i in s.tl.instants()]
    assert s.gen.last_time == {"w1": f"{T}0", "w2": f"{T}1", "cl": f"{T}2"}
    assert s.now == 4 and s.gen.lock.last_released_at == 4
    assert before.gen.last_time == {"w1": f"{T}0", "w2": f"{T}1"}  # the step copied the generator


def test_rollbacks_keep_every_dead_instant():
    cfg = VARIANTS["lazy-crash"].config(crashes=2)
    s = run(cfg, CRASHED + [("w2", "crash")])
    assert s.dead == frozenset({f"{T}0", f"{T}1"})
    s = M.step(cfg, s, ("cl", "clean"))
    assert s.dead == frozenset({f"{T}0", f"{T}1"}) and s.markers == ()
    assert [f.name for f, _ in s.files] == [f"b0_0-0-1_{T0}.parquet"]
    assert sorted(t for t, _ in s.rollbacks) == [f"{T}0", f"{T}1"]


BOTH_COMMIT = [("w1", "generate"), ("w1", "publish"), ("w2", "generate"), ("w2", "publish"), ("w1", "write"),
               ("w2", "write"), ("w2", "acquire"), ("w2", "check"), ("w2", "complete"), ("w1", "acquire"),
               ("w1", "check"), ("w1", "complete")]


def test_savepoint_pins_the_last_completed_commit_by_completion_time():
    cfg = MachineConfig(Settings(mode="occ"), writers=2, buckets=2, savepoint=True)
    s = run(cfg, BOTH_COMMIT)  # w1 (requested first) completes last
    sp = M.step(cfg, s, ("s", "savepoint"))
    (instant, read_at, files), = sp.savepoints
    assert (instant, read_at) == (f"{T}0", f"{T}3")  # tv8: the read is at the commit's completion time
    assert [f.name for f in files] == [f".b0_{T}0.log.1_1-0-1", f".b1_{T}1.log.1_2-0-1",
                                       f"b0_0-0-1_{T0}.parquet", f"b1_0-0-1_{T0}.parquet"]
    assert M.refusal(cfg, sp, ("s", "savepoint")) == "the savepoint was taken"


def test_savepoint_on_table_version_6_reads_at_the_requested_time():
    cfg = MachineConfig(Settings(mode="occ", table_version=6, compaction_scheduling="0.x"), writers=2, buckets=2,
                        savepoint=True)
    sp = M.step(cfg, run(cfg, BOTH_COMMIT), ("s", "savepoint"))
    (instant, read_at, _), = sp.savepoints
    assert (instant, read_at) == (f"{T}0", f"{T}0")


def test_savepoint_ignores_a_later_rollback():
    cfg = VARIANTS["lazy-crash"].config(savepoint=True)
    s = M.step(cfg, run(cfg, CRASHED), ("cl", "clean"))
    (instant, read_at, files), = M.step(cfg, s, ("s", "savepoint")).savepoints
    assert (instant, read_at) == (T0, "20241231235959995")  # the initial commit, not the rollback
    assert [f.name for f in files] == [f"b0_0-0-1_{T0}.parquet"]


def test_eager_rollback_of_a_live_write_marks_it_dead_and_records_the_rollbacks_times():
    # nbcc-eager (a broken design): w2's startCommit rolls back w1's pending write although w1 is alive
    cfg = VARIANTS["nbcc-eager"].config()
    s = run(cfg, [("w1", "generate"), ("w1", "publish"), ("w1", "write")])
    assert s.dead == frozenset()
    s = M.step(cfg, s, ("w2", "generate"))
    assert s.dead == frozenset({f"{T}0"}) and s.rollbacks == ((f"{T}0", True),)
    assert [(r.process, r.kind, r.time) for r in s.gen.history] == [
        ("w1", "generate", f"{T}0"), ("w2", "generate", f"{T}1"), ("w2", "consume", f"{T}2"), ("w2", "generate", f"{T}3")]
    assert [f.name for f, _ in s.files] == [f"b0_0-0-1_{T0}.parquet"] and s.markers == ()


def test_fingerprint_sees_the_timeline_and_who_wrote_each_state_file():
    from dataclasses import replace

    cfg = VARIANTS["lazy-crash"].config()
    s = M.initial_state(cfg)
    a, b = s.tl.copy(), s.tl.copy()
    a.create(f"{T}5", Action.DELTACOMMIT, by="w1")
    b.create(f"{T}5", Action.DELTACOMMIT, by="w2")
    sa, sb = replace(s, tl=a), replace(s, tl=b)
    assert s.fingerprint() != sa.fingerprint()
    assert sa.fingerprint() != sb.fingerprint()
    assert sa.fingerprint() == replace(s, tl=a.copy()).fingerprint()
