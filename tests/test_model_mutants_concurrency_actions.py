"""Focused tests for model/concurrency (actions, rules, state) that `make mutate` showed unchecked by the fast tests:
the clustering service's three steps (guards with their reasons, every field each step changes, who wrote each
state file, the conflict that rolls a clustering back), heartbeats (``alive``), the cleaner's earliest retained
commit, the table lock a service may hold itself, the writer's completion time in the generator's history, and
the rules behind them (the 0.x scheduling bound, merging by ordering, pending plan files)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from model.concurrency import actions as A
from model.concurrency import machine as M
from model.concurrency import rules as R
from model.concurrency.settings import Settings
from model.concurrency.state import MachineConfig, merge_records
from model.concurrency.variants import VARIANTS
from model.filenames import BaseFile, LogFile
from model.instant import Action, State
from model.slicing import FileGroupId

T = "2025010100000000"  # + one digit: the machine's generated times
T0 = "20241231235959990"
F0 = FileGroupId("p", "f0")
BASE_F0 = BaseFile("f0", "0-0-1", T0, "parquet", "p")
INIT = (("k0", "v0", T0, T0),)
W1 = [("w1", "generate"), ("w1", "publish"), ("w1", "write"), ("w1", "acquire"), ("w1", "check"), ("w1", "complete")]
CLUS = MachineConfig(Settings(mode="occ", index="simple"), writers=1, keys=1, clusterings=1)


def run(cfg, actions, s=None):
    s = M.initial_state(cfg) if s is None else s
    for a in actions:
        s = M.step(cfg, s, a)
    return s


def hist(s):
    return [(r.process, r.kind, r.time) for r in s.gen.history]


# ----------------------------------------------------------------------------------------- clustering
def test_clustering_schedule_execute_commit_exact_effects():
    s0 = M.initial_state(CLUS)
    assert M.refusal(CLUS, s0, ("k", "execute")) == "clustering is idle; execute needs scheduled"
    assert M.refusal(CLUS, s0, ("k", "commit")) == "clustering is idle; commit needs executed"
    k = M.step(CLUS, s0, ("k", "schedule"))
    tk = f"{T}0"
    assert k == replace(s0, clus=("scheduled", tk, 0), now=1, cplans=((tk, (F0,)),))
    assert hist(k) == [("k", "generate", tk)] and hist(s0) == []
    assert [str(i) for i in k.tl.instants()][-1] == f"{tk}.clustering[requested]"
    assert k.tl.writers_of(tk, Action.CLUSTERING) == {State.REQUESTED: ("k",)}
    assert M.refusal(CLUS, k, ("k", "schedule")) == "clustering is scheduled with 0 of 1 clustering(s) done"
    assert M.refusal(CLUS, k, ("k", "commit")) == "clustering is scheduled; commit needs executed"

    e = M.step(CLUS, k, ("k", "execute"))
    new = BaseFile(f"c{tk}", "7-0-1", tk, "parquet", "p")
    assert new.name == f"c{tk}_7-0-1_{tk}.parquet"
    assert e == replace(k, clus=("executed", tk, 0), markers=((tk, new),), files=((new, INIT), (BASE_F0, INIT)),
                        touched=((tk, frozenset({F0, ("p", f"c{tk}")})),))
    assert e.tl.writers_of(tk, Action.CLUSTERING) == {State.REQUESTED: ("k",), State.INFLIGHT: ("k",)}
    assert M.refusal(CLUS, e, ("k", "execute")) == "clustering is executed; execute needs scheduled"

    c = M.step(CLUS, e, ("k", "commit"))
    assert c == replace(e, clus=("idle", None, 1), now=2, markers=())
    assert hist(c) == [("k", "generate", tk), ("k", "consume", f"{T}1")]
    assert hist(e) == hist(k)  # the commit copied the generator
    assert [str(i) for i in c.tl.instants()][-1] == f"{tk}->{T}1.replacecommit[completed]"
    assert c.tl.writers_of(tk, Action.CLUSTERING) == {State.REQUESTED: ("k",), State.INFLIGHT: ("k",),
                                                      State.COMPLETED: ("k",)}
    assert M.refusal(CLUS, c, ("k", "schedule")) == "clustering is idle with 1 of 1 clustering(s) done"


def test_clustering_commit_keeps_other_instants_markers():
    e = run(CLUS, [("k", "schedule"), ("k", "execute")])
    other = (f"{T}7", BASE_F0)
    c = M.step(CLUS, replace(e, markers=(other,) + e.markers), ("k", "commit"))
    assert c.markers == (other,)


def test_clustering_that_conflicts_with_a_committed_write_is_rolled_back():
    """OCC: w1 completes after the clustering started and touches its group: the clustering aborts and is rolled
    back (its instant and its new file group gone), and counts as done."""
    s = run(CLUS, [("k", "schedule")] + W1 + [("k", "execute")])
    tk, tw = f"{T}0", f"{T}1"
    c = M.step(CLUS, s, ("k", "commit"))
    assert c.clus == ("idle", None, 1) and c.now == 5
    assert c.markers == () and c.dead == frozenset({tk}) and c.rollbacks == ((tk, False),)
    assert [f.name for f, _ in c.files] == [f".f0_{tw}.log.1_1-0-1", BASE_F0.name]
    assert [str(i) for i in c.tl.instants()] == [f"{T0}->20241231235959995.deltacommit[completed]",
                                                 f"{tw}->{T}2.deltacommit[completed]", f"{T}3->{T}4.rollback[completed]"]
    assert c.tl.writers_of(f"{T}3", Action.ROLLBACK) == {State.REQUESTED: ("k",), State.INFLIGHT: ("k",),
                                                         State.COMPLETED: ("k",)}
    assert hist(c)[-2:] == [("k", "generate", f"{T}3"), ("k", "consume", f"{T}4")]
    assert M.refusal(CLUS, c, ("k", "schedule")) == "clustering is idle with 1 of 1 clustering(s) done"
    # without the check (flaw clustering-no-check) the clustering commits over the write
    flawed = replace(CLUS, flaws=frozenset({"clustering-no-check"}))
    assert M.step(flawed, s, ("k", "commit")).tl.completed([Action.CLUSTERING])[0].requested_time == tk


def test_nbcc_does_not_cover_clustering_its_commit_is_still_checked():
    """``needResolveWriteConflict``: under NBCC only BULK_INSERT -- and clustering, which NBCC does not cover -- is
    checked (a configuration Hudi refuses with the simple index: validated=False)."""
    cfg = MachineConfig(Settings(mode="nbcc", index="simple"), writers=1, keys=1, clusterings=1, validated=False)
    c = run(cfg, [("k", "schedule")] + W1 + [("k", "execute"), ("k", "commit")])
    assert c.rollbacks == ((f"{T}0", False),) and c.clus == ("idle", None, 1)


def test_clustering_skips_groups_under_a_pending_compaction():
    cfg = replace(CLUS, compactions=1)
    s = run(cfg, W1 + [("c", "schedule")])
    assert s.pending_compactions() == {F0: f"{T}2"}
    assert M.refusal(cfg, s, ("k", "schedule")) == "no file group to cluster"
    # and groups under a pending clustering
    k = run(CLUS, [("k", "schedule")])
    two = replace(CLUS, clusterings=1)
    assert M.refusal(two, replace(k, clus=("idle", None, 0)), ("k", "schedule")) == "no file group to cluster"


# ----------------------------------------------------------------------------------------- the table lock
@pytest.mark.parametrize("who, action, cfg_kw, prefix", [
    ("k", "schedule", {}, []),
    ("k", "commit", {}, [("k", "schedule"), ("k", "execute")]),
    ("cl", "clean", {"crashes": 1, "cleans": 1}, [("w1", "generate"), ("w1", "publish"), ("w1", "crash")]),
    ("s", "savepoint", {"savepoint": True}, []),
    ("c", "schedule", {"compactions": 1}, W1),
    ("c", "commit", {"compactions": 1}, W1 + [("c", "schedule"), ("c", "execute")]),
])
def test_a_service_waits_for_another_holder_of_the_table_lock_but_not_for_itself(who, action, cfg_kw, prefix):
    cfg = replace(CLUS, **cfg_kw)
    s = run(cfg, prefix)
    assert M.refusal(cfg, replace(s, lock="w1"), (who, action)) == "the table lock is held by w1"
    assert M.refusal(cfg, replace(s, lock=who), (who, action)) is None
    assert M.refusal(cfg, s, (who, action)) is None


# ----------------------------------------------------------------------------------------- heartbeats
def test_alive_is_every_published_pending_write_whose_writer_still_works_on_it():
    cfg = MachineConfig(Settings(mode="occ"), writers=3)
    s = run(cfg, [("w1", "generate"), ("w1", "publish"), ("w1", "write"), ("w2", "generate")])
    assert s.procs[1][1:3] == ("generated", f"{T}1") and s.procs[2][1:3] == ("idle", None)
    assert A.alive(s) == {f"{T}0": True}
    assert A.alive(replace(s, dead=frozenset({f"{T}0"}))) == {}
    for phase in ("requested", "written", "locked", "checked"):
        p = replace(s, procs=(("w1", phase, f"{T}0", 0, frozenset()),) + s.procs[1:])
        assert A.alive(p) == {f"{T}0": True}


def test_writer_completion_time_is_consumed_by_the_writer():
    cfg = MachineConfig(Settings(mode="occ"), writers=1)
    s = run(cfg, W1)
    assert hist(s) == [("w1", "generate", f"{T}0"), ("w1", "consume", f"{T}1")]
    assert s.tl.writers_of(f"{T}0", Action.DELTACOMMIT)[State.COMPLETED] == ("w1",)


# ----------------------------------------------------------------------------------------- cleaner
CRASHED = [("w1", "generate"), ("w1", "publish"), ("w1", "write"), ("w2", "generate"), ("w2", "publish"),
           ("w2", "write"), ("w1", "crash")]


def test_clean_retains_from_the_latest_write_commit_not_from_its_own_rollback():
    cfg = VARIANTS["lazy-crash"].config(clean_policy=R.KEEP_LATEST_COMMITS, clean_retained=1)
    c = M.step(cfg, run(cfg, CRASHED), ("cl", "clean"))
    assert c.cleans == ((R.KEEP_LATEST_COMMITS, T0, (), ()),)
    assert [str(i) for i in c.tl.completed()][-1] == f"{T}2->{T}3.rollback[completed]"
    assert c.rollbacks == ((f"{T}0", False),)


def test_clean_deletes_the_old_file_version_and_records_it():
    cfg = MachineConfig(Settings(mode="single_writer", table_type="cow", lock_provider=None), writers=1, keys=1,
                        cleans=1, clean_policy=R.KEEP_LATEST_FILE_VERSIONS)
    s = run(cfg, W1)
    c = M.step(cfg, s, ("cl", "clean"))
    assert c == replace(s, files=s.files[1:], cleans=((R.KEEP_LATEST_FILE_VERSIONS, None,
                                                       (f"b0_0-0-1_{T0}.parquet",), ()),))
    assert M.refusal(cfg, c, ("cl", "clean")) == "no cleans left (1)"


# ----------------------------------------------------------------------------------------- rules and state
def test_0x_scheduling_refuses_only_a_write_strictly_older_than_the_compaction():
    s = Settings(mode="single_writer", table_version=6, compaction_scheduling="0.x", lock_provider=None)
    w = R.WriteSummary(f"{T}5", R.DELTACOMMIT, R.UPSERT, ())
    assert R.may_schedule_compaction(s, [w], f"{T}5") is None
    assert R.may_schedule_compaction(s, [w], f"{T}4") is None
    assert R.may_schedule_compaction(s, [w], f"{T}6") == (
        f"0.x scheduling: write {T}5 is inflight and older than the compaction (Earliest write inflight instant "
        f"time must be later than compaction time)")
    assert R.may_schedule_compaction(s, [w], None) is not None


def test_merge_records_keeps_the_greater_ordering_and_the_later_on_a_tie():
    a, b, c = ("k0", "a", "T2", "T2"), ("k0", "b", "T1", "T1"), ("k0", "c", "T2", "T3")
    assert merge_records([a, b]) == {"k0": a}
    assert merge_records([b, a]) == {"k0": a}
    assert merge_records([a, c]) == {"k0": c}
    assert merge_records([a, ("k1", "x", "T0", "T0"), b]) == {"k0": a, "k1": ("k1", "x", "T0", "T0")}


def test_pending_plan_files_only_completed_compactions_end_a_plan():
    cfg = MachineConfig(Settings(mode="single_writer", lock_provider=None), writers=1, keys=1, compactions=1)
    s = run(cfg, W1 + [("c", "schedule")])
    ((tc, slices),) = s.plans
    files = frozenset(f for _, sl in slices for f in sl.files)
    assert files == {BaseFile("b0", "0-0-1", T0, "parquet", "p"), LogFile("b0", f"{T}0", 1, "1-0-1", False, "p")}
    assert s.pending_plan_files() == files
    assert run(cfg, [("c", "execute"), ("c", "commit")], s).pending_plan_files() == frozenset()
    # a plan at the time of a completed deltacommit (not a compaction) is still pending
    assert replace(s, plans=((f"{T}0", slices),)).pending_plan_files() == files
