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


# ----------------------------------------------------------------------------------------- MachineConfig
FLAW_LIST = ["clean-ignores-plans", "clean-ignores-savepoints", "clustering-no-check", "ignore-pending-compaction",
             "no-0x-guard", "no-commit-lock"]
TV6 = Settings(mode="single_writer", table_version=6, compaction_scheduling="0.x", index="simple", lock_provider=None)


@pytest.mark.parametrize("kw, msg", [
    (dict(writers=0), "writers must be 1..3, not 0"), (dict(writers=4), "writers must be 1..3, not 4"),
    (dict(commits=0), "commits must be 1..3, not 0"), (dict(commits=4), "commits must be 1..3, not 4"),
    (dict(keys=0), "keys must be 1..3, not 0"), (dict(keys=4), "keys must be 1..3, not 4"),
    (dict(buckets=0), "buckets must be 1..3, not 0"), (dict(buckets=4), "buckets must be 1..3, not 4"),
    (dict(compactions=-1), "compactions must be 0..2, not -1"), (dict(compactions=3), "compactions must be 0..2, not 3"),
    (dict(clusterings=-1), "clusterings must be 0..1, not -1"), (dict(clusterings=2), "clusterings must be 0..1, not 2"),
    (dict(clusterings=1), "clustering is modelled on table version 8 with the simple index (a bucket index fixes "
                          "file groups)"),
    (dict(clusterings=1, settings=TV6), "clustering is modelled on table version 8 with the simple index (a bucket "
                                        "index fixes file groups)"),
    (dict(clean_policy="KEEP_ALL"), "clean_policy must be one of ('KEEP_LATEST_COMMITS', 'KEEP_LATEST_FILE_VERSIONS') "
                                    "or None, not 'KEEP_ALL'"),
    (dict(clean_retained=0), "clean_retained must be 1..3, not 0"),
    (dict(clean_retained=4), "clean_retained must be 1..3, not 4"),
    (dict(cleans=-1), "cleans must be 0..2, not -1"), (dict(cleans=3), "cleans must be 0..2, not 3"),
    (dict(crashes=-1), "crashes must be 0..2, not -1"), (dict(crashes=3), "crashes must be 0..2, not 3"),
    (dict(generator="x"), "generator must be one of ('truetime', 'naive'), not 'x'"),
    (dict(storage="x"), "storage must be one of ('put-if-absent', 'overwrite'), not 'x'"),
    (dict(flaws={"x", "no-0x-guard"}), f"unknown flaw(s) ['x']; known: {FLAW_LIST}"),
    (dict(compactions=1, settings=Settings(mode="occ", table_type="cow")), "compactions need a MOR table"),
])
def test_machine_config_bounds_refuse_with_the_exact_message(kw, msg):
    with pytest.raises(ValueError) as e:
        MachineConfig(**kw)
    assert str(e.value) == msg


@pytest.mark.parametrize("kw", [
    dict(writers=1), dict(writers=3), dict(commits=1), dict(commits=3), dict(keys=1), dict(keys=3), dict(buckets=1),
    dict(buckets=3), dict(compactions=0), dict(compactions=2), dict(clusterings=0), dict(cleans=0), dict(cleans=2),
    dict(clusterings=1, settings=Settings(mode="occ", index="simple")), dict(clean_retained=1),
    dict(clean_retained=3), dict(crashes=0), dict(crashes=2), dict(clean_policy=None),
    dict(clean_policy="KEEP_LATEST_COMMITS"), dict(generator="naive"), dict(storage="overwrite"),
    dict(flaws=set(FLAW_LIST)), dict(compactions=1, settings=Settings(mode="occ", table_type="mor")),
])
def test_machine_config_bounds_accept_the_edges(kw):
    cfg = MachineConfig(**kw)
    assert {k: getattr(cfg, k) for k in kw} == {k: (frozenset(v) if isinstance(v, set) else v) for k, v in kw.items()}


def test_machine_config_validates_its_settings_unless_told_not_to():
    from model.concurrency.settings import SettingsError

    bad = Settings(mode="occ", lock_provider=None)
    with pytest.raises(SettingsError):
        MachineConfig(bad)
    assert MachineConfig(bad, validated=False).settings == bad
    cfg = MachineConfig(flaws={"no-0x-guard"})
    assert type(cfg.flaws) is frozenset and cfg.flaws == frozenset({"no-0x-guard"})
    assert MachineConfig(writers=3).processes == ("w1", "w2", "w3")
    assert [MachineConfig(keys=3).key_of(w, c) for w, c in (("w1", 0), ("w2", 0), ("w3", 1), ("w1", 5))] == [
        "k0", "k1", "k0", "k2"]
    assert [cfg.token(p) for p in ("c", "cl", "k", "w1", "w3", "s")] == ["9-0-1", "8-0-1", "7-0-1", "1-0-1", "3-0-1",
                                                                         "-0-1"]


def test_initial_state_per_index_and_generator():
    from model.concurrency.state import initial_state

    def files(**kw):
        return [(f.name, recs) for f, recs in initial_state(MachineConfig(**kw)).files]
    v0 = lambda k: (k, "v0", T0, T0)  # noqa: E731
    assert files(keys=3, buckets=2) == [(f"b0_0-0-1_{T0}.parquet", (v0("k0"), v0("k2"))),
                                        (f"b1_0-0-1_{T0}.parquet", (v0("k1"),))]
    assert files(keys=2, settings=Settings(mode="occ", index="simple")) == [
        (f"f0_0-0-1_{T0}.parquet", (v0("k0"), v0("k1")))]
    assert files(preloaded=False) == []
    s = initial_state(MachineConfig())
    assert (s.now, s.comp, s.clus, s.lock, s.crashes, s.markers, s.plans, s.dead) == (
        0, ("idle", None, 0), ("idle", None, 0), None, 0, (), (), frozenset())
    assert s.procs == (("w1", "idle", None, 0, frozenset()), ("w2", "idle", None, 0, frozenset()))
    assert [str(i) for i in s.tl.instants()] == [f"{T0}->20241231235959995.deltacommit[completed]"]
    assert (type(s.gen).__name__, s.gen.config.max_expected_skew_ms, s.gen.config.use_lock) == (
        "SkewAdjustingTimeGenerator", 1, True)
    n = initial_state(MachineConfig(generator="naive"))
    assert (type(n.gen).__name__, n.gen.config.max_expected_skew_ms, n.gen.config.use_lock) == (
        "NaiveGenerator", 0, False)
    cow = initial_state(MachineConfig(Settings(mode="single_writer", table_type="cow", lock_provider=None),
                                      storage="overwrite"))
    assert [str(i) for i in cow.tl.instants()] == [f"{T0}->20241231235959995.commit[completed]"]
    assert cow.tl.storage == "overwrite"


def test_read_slices_reports_missing_files_and_skips_unadmitted_records():
    from model.concurrency.state import read_slices

    b = BaseFile("b0", "0-0-1", T0, "parquet", "p")
    lg, gone = LogFile("b0", f"{T}0", 1, "1-0-1", False, "p"), LogFile("b0", f"{T}0", 2, "1-0-1", False, "p")
    g = FileGroupId("p", "b0")
    from model.slicing import FileSlice
    files = {b: (("k0", "v0", T0, T0),), lg: (("k0", "a", f"{T}0", f"{T}0"), ("k1", "b", f"{T}1", f"{T}1"))}
    out, missing = read_slices(files, [FileSlice(g, T0, b, (lg, gone))], {f"{T}0"})
    assert out == {g: {"k0": ("k0", "a", f"{T}0", f"{T}0")}} and missing == [gone]
    out, missing = read_slices({}, [FileSlice(g, T0, b, ())], set())
    assert out == {g: {}} and missing == [b]


# ----------------------------------------------------------------------------------------- compactor
SW = MachineConfig(Settings(mode="single_writer", lock_provider=None), writers=1, keys=1, compactions=1)


def test_compactor_schedule_execute_commit_exact_effects():
    s = run(SW, W1)
    assert M.refusal(SW, M.initial_state(SW), ("c", "schedule")) == f"nothing to compact at {T}0"
    assert M.refusal(SW, s, ("c", "execute")) == "compactor is idle; execute needs scheduled"
    assert M.refusal(SW, s, ("c", "commit")) == "compactor is idle; commit needs executed"
    tc = f"{T}2"
    b0 = BaseFile("b0", "0-0-1", T0, "parquet", "p")
    lg = LogFile("b0", f"{T}0", 1, "1-0-1", False, "p")
    from model.slicing import FileSlice
    g = FileGroupId("p", "b0")
    c = M.step(SW, s, ("c", "schedule"))
    assert c == replace(s, comp=("scheduled", tc, 0), now=3, plans=((tc, ((g, FileSlice(g, T0, b0, (lg,))),)),))
    assert hist(c)[-1] == ("c", "generate", tc)
    assert c.tl.writers_of(tc, Action.COMPACTION) == {State.REQUESTED: ("c",)}
    assert M.refusal(SW, c, ("c", "schedule")) == "compactor is scheduled with 0 of 1 compaction(s) done"
    e = M.step(SW, c, ("c", "execute"))
    new = BaseFile("b0", "9-0-1", tc, "parquet", "p")
    rec = ("k0", "w1.0", f"{T}0", f"{T}0")
    assert e == replace(c, comp=("executed", tc, 0), markers=((tc, new),),
                        files=((lg, (rec,)), (b0, (("k0", "v0", T0, T0),)), (new, (rec,))))
    assert e.tl.writers_of(tc, Action.COMPACTION) == {State.REQUESTED: ("c",), State.INFLIGHT: ("c",)}
    d = M.step(SW, replace(e, markers=((f"{T}7", b0),) + e.markers), ("c", "commit"))
    assert d == replace(e, comp=("idle", None, 1), now=4, markers=((f"{T}7", b0),))
    assert hist(d)[-1] == ("c", "consume", f"{T}3") and hist(e) == hist(c)
    assert d.tl.writers_of(tc, Action.COMPACTION)[State.COMPLETED] == ("c",)
    assert M.refusal(SW, d, ("c", "schedule")) == "compactor is idle with 1 of 1 compaction(s) done"


def test_0x_guard_refuses_and_the_flawed_design_records_the_unsafe_schedule():
    cfg = MachineConfig(Settings(mode="single_writer", lock_provider=None, table_version=6,
                                 compaction_scheduling="0.x"), writers=1, keys=1, compactions=1, commits=2)
    s = run(cfg, W1 + [("w1", "generate"), ("w1", "publish")])
    assert M.refusal(cfg, s, ("c", "schedule")) == (
        f"0.x scheduling: write {T}2 is inflight and older than the compaction (Earliest write inflight instant time "
        f"must be later than compaction time)")
    flawed = replace(cfg, flaws=frozenset({"no-0x-guard"}))
    u = M.step(flawed, s, ("c", "schedule"))
    assert u.unsafe_schedules == ((f"{T}3", (f"{T}2",)),) and u.comp == ("scheduled", f"{T}3", 0)
    assert run(cfg, W1 + [("c", "schedule")]).unsafe_schedules == ()


# ----------------------------------------------------------------------------------------- writers
def test_candidate_actions_in_their_fixed_order():
    cfg = MachineConfig(Settings(mode="occ", index="simple"), writers=2, crashes=1, compactions=1, clusterings=1,
                        cleans=1, savepoint=True)
    steps = ["generate", "publish", "write", "acquire", "check", "complete"]
    assert A.candidate_actions(cfg) == ([("w1", s) for s in steps] + [("w2", s) for s in steps] +
                                        [("w1", "crash"), ("w2", "crash"), ("c", "schedule"), ("c", "execute"),
                                         ("c", "commit"), ("k", "schedule"), ("k", "execute"), ("k", "commit"),
                                         ("cl", "clean"), ("s", "savepoint")])
    assert A.candidate_actions(MachineConfig(writers=1)) == [("w1", s) for s in steps]


def test_writer_lock_section_and_phase_guards():
    cfg = MachineConfig(Settings(mode="occ"), writers=2)
    s0 = M.initial_state(cfg)
    assert M.refusal(cfg, s0, ("w1", "publish")) == "w1 is idle; publish needs generated"
    assert M.refusal(cfg, s0, ("w1", "acquire")) == "w1 is idle; acquire needs written"
    assert M.refusal(cfg, s0, ("w1", "check")) == "w1 is idle; check needs locked"
    assert M.refusal(cfg, s0, ("w1", "complete")) == "w1 is idle; complete needs checked"
    g = M.step(cfg, s0, ("w1", "generate"))
    assert g.lock == "w1" and g.procs[0] == ("w1", "generated", f"{T}0", 0, frozenset()) and g.now == 1
    assert M.refusal(cfg, g, ("w2", "generate")) == "the table lock is held by w1"
    p = M.step(cfg, g, ("w1", "publish"))
    assert p.lock is None and p.procs[0][1] == "requested"
    assert p.tl.writers_of(f"{T}0", Action.DELTACOMMIT) == {State.REQUESTED: ("w1",)}
    a = run(cfg, [("w1", "write"), ("w1", "acquire")], p)
    assert a.lock == "w1" and a.procs[0] == ("w1", "locked", f"{T}0", 0, frozenset({("p", "b0")}))
    flawed = replace(cfg, flaws=frozenset({"no-commit-lock"}))
    assert run(flawed, [("w1", "write"), ("w1", "acquire")], p).lock is None
    done = run(cfg, [("w1", "check"), ("w1", "complete")], a)
    assert done.lock is None and done.procs[0] == ("w1", "idle", None, 1, frozenset())
    assert done.committed == ((f"{T}0", f"{T}1", "w1", (("k0", "w1.0"),)),) and done.markers == ()
    assert M.refusal(cfg, done, ("w1", "generate")) == "w1 made its 1 commit(s)"
    # without a lock provider nobody holds the lock
    single = MachineConfig(Settings(mode="single_writer", lock_provider=None), writers=1)
    assert run(single, [("w1", "generate")]).lock is None


def test_a_refused_create_aborts_the_writer_without_killing_the_other_instant():
    cfg = MachineConfig(Settings(mode="occ"), writers=2, generator="naive")   # no lock wait: equal times
    s = run(cfg, [("w1", "generate"), ("w1", "publish"), ("w2", "generate")])
    assert s.procs[1] == ("w2", "generated", f"{T}0", 0, frozenset()) and s.lock == "w2"
    a = M.step(cfg, s, ("w2", "publish"))
    assert a.procs == (s.procs[0], ("w2", "idle", None, 1, frozenset())) and a.lock is None and a.dead == frozenset()
    assert a.tl.writers_of(f"{T}0", Action.DELTACOMMIT) == {State.REQUESTED: ("w1",)}


# ----------------------------------------------------------------------------------------- rules, exactly
FG0, FG1 = ("p", "b0"), ("p", "b1")


def ws(t, fgs=(FG0,), action=R.DELTACOMMIT, op=R.UPSERT, state=R.INFLIGHT, completion=None, start=None):
    return R.WriteSummary(t, action, op, frozenset(fgs), start=start, state=state, completion=completion)


def test_write_summary_defaults():
    w = R.WriteSummary("010", R.COMMIT, R.UPSERT, [FG0])
    assert (w.start, w.state, w.completion, w.file_groups) == ("010", R.INFLIGHT, None, frozenset({FG0}))
    assert not w.completed and not w.is_table_service
    assert ws("010", start="007").start == "007"
    assert ws("1", action=R.CLUSTERING).is_table_service and ws("1", action=R.COMPACTION).is_table_service
    assert not ws("1", action=R.REPLACECOMMIT).is_table_service and ws("1", state=R.COMPLETED).completed


def test_candidates_edges_and_order():
    mine = ws("010")
    at_start = ws("005", state=R.COMPLETED, completion="010")       # completed at mine's start: not after it
    late2 = ws("003", state=R.COMPLETED, completion="014")
    late1 = ws("006", state=R.COMPLETED, completion="012")
    tie = ws("002", state=R.COMPLETED, completion="012")
    same = ws("010", action=R.COMPACTION, op=R.COMPACT)             # a service at mine's own time: not after it
    p2, p1 = ws("013", action=R.CLUSTERING, op=R.CLUSTER), ws("011", action=R.COMPACTION, op=R.COMPACT)
    own_completed = ws("010", state=R.COMPLETED, completion="011")   # mine itself, however it is listed
    got = R.candidate_instants([at_start, late2, late1, tie, same, p2, p1, own_completed], mine)
    assert got == [tie, late1, late2, p1, p2]
    # prefer-writer, a table service: inflight writes yield candidates, requested ones do not; sorted by instant
    svc = ws("011", action=R.CLUSTERING, op=R.CLUSTER)
    w9, w8, req = ws("009"), ws("008"), ws("007", state=R.REQUESTED)
    assert R.candidate_instants([w9, req, w8, p2], svc, "prefer-writer") == [w8, w9]
    with pytest.raises(ValueError) as e:
        R.candidate_instants([], mine, "bogus")
    assert str(e.value) == "unknown conflict strategy 'bogus'"


def test_conflict_reason_text():
    occ = Settings()
    mine = ws("010", fgs=(FG0, FG1, "x"))
    done = ws("009", fgs=(FG1, FG0, "x"), state=R.COMPLETED, completion="012")
    assert R.conflict(occ, mine, done) == (
        "simple strategy: deltacommit 009 completed after 010 started touches file group(s) p/b0, p/b1, x "
        "(Cannot resolve conflicts for overlapping writes)")
    plan = ws("011", action=R.COMPACTION, op=R.COMPACT, state=R.REQUESTED)
    pw = Settings(conflict_strategy="prefer-writer")
    assert R.conflict(pw, mine, plan) == (
        "prefer-writer strategy: compaction 011 requested (planned) after 010 started touches file group(s) p/b0 "
        "(Cannot resolve conflicts for overlapping writes)")
    # a compaction at mine's own time is not resolved: only one requested strictly before mine is
    assert R.conflict(occ, mine, ws("010", action=R.COMPACTION, op=R.COMPACT)) is not None
    assert R.conflict(occ, mine, ws("009", action=R.COMPACTION, op=R.COMPACT)) is None
    # NBCC: a clustering is checked (even against a deltacommit), a bulk insert against a commit, not a deltacommit
    nbcc = Settings(mode="nbcc")
    clus = ws("010", action=R.CLUSTERING, op=R.CLUSTER)
    assert R.needs_conflict_resolution(nbcc, clus) and not R.needs_conflict_resolution(nbcc, mine)
    assert R.conflict(nbcc, clus, done) is not None
    bulk = ws("010", op=R.BULK_INSERT)
    assert R.conflict(nbcc, bulk, done) is None
    assert R.conflict(nbcc, bulk, ws("009", action=R.COMMIT, state=R.COMPLETED, completion="012")) is not None
    assert not R.needs_conflict_resolution(Settings(mode="single_writer", lock_provider=None), clus)


def test_bucket_of_keys_with_and_without_digits():
    assert [R.bucket_of(k, 3) for k in ("k0", "k4", "k12", "a1b2")] == [0, 1, 0, 0]
    assert R.bucket_of("ab", 7) == (ord("a") + ord("b")) % 7 == 6


def test_files_to_clean_keep_latest_commits_edges():
    slices = {"b1": [("t5", ("C5",))], "b0": [("t5", ("B5",)), ("t3", ("B3", "L3")), ("t1", ("B1",))]}
    # exactly `retained` commits: the oldest is the earliest to retain; a slice at it is kept, plus one before it
    assert R.files_to_clean(R.KEEP_LATEST_COMMITS, 3, slices, ["t5", "t1", "t3"]) == ([], "t1")
    assert R.files_to_clean(R.KEEP_LATEST_COMMITS, 2, slices, ["t1", "t3", "t5"]) == ([], "t3")
    assert R.files_to_clean(R.KEEP_LATEST_FILE_VERSIONS, 2, slices, ["t1", "t3", "t5"]) == (["B1"], None)
    assert R.files_to_clean(R.KEEP_LATEST_FILE_VERSIONS, 1, slices, []) == (["B3", "L3", "B1"], None)


# ----------------------------------------------------------------------------------------- writer effects
G1 = [("w1", "generate"), ("w1", "publish"), ("w1", "write")]


def test_cow_write_merges_the_group_latest_records_into_a_new_base_file():
    cfg = MachineConfig(Settings(mode="occ", table_type="cow"), writers=2, keys=2)
    s0 = M.initial_state(cfg)
    s = run(cfg, G1)
    new = BaseFile("b0", "1-0-1", f"{T}0", "parquet", "p")
    mine = ("k0", "w1.0", f"{T}0", f"{T}0")
    assert s.files == s0.files + ((new, (mine, ("k1", "v0", T0, T0))),)
    assert s.markers == ((f"{T}0", new),) and s.touched == ((f"{T}0", frozenset({FG0})),)
    assert s.procs[0] == ("w1", "written", f"{T}0", 0, frozenset({FG0}))
    assert s.tl.writers_of(f"{T}0", Action.COMMIT) == {State.REQUESTED: ("w1",), State.INFLIGHT: ("w1",)}


def test_simple_index_insert_goes_to_a_new_file_group_named_by_the_writer():
    cfg = MachineConfig(Settings(mode="occ", index="simple"), writers=2, keys=2, preloaded=False)
    s = run(cfg, G1)
    new = BaseFile(f"n{T}0", "1-0-1", f"{T}0", "parquet", "p")
    assert s.files == ((new, (("k0", "w1.0", f"{T}0", f"{T}0"),)),)
    assert s.procs[0][4] == frozenset({("p", f"n{T}0")})
    # once committed, the next write of the key finds it there and appends a log (MOR)
    two = replace(cfg, commits=2, keys=1, writers=1)
    s = run(two, G1 + [("w1", "acquire"), ("w1", "check"), ("w1", "complete")] + G1)
    assert [f.name for f, _ in s.files] == [f".n{T}0_{T}2.log.1_1-0-1", f"n{T}0_1-0-1_{T}0.parquet"]


def test_tv6_logs_are_named_after_the_slice_and_take_the_next_version():
    cfg = MachineConfig(Settings(mode="single_writer", lock_provider=None, table_version=6,
                                 compaction_scheduling="0.x"), writers=1, keys=1, commits=2)
    s = run(cfg, G1 + [("w1", "acquire"), ("w1", "check"), ("w1", "complete")] + G1)
    assert [(f, r) for f, r in s.files] == [
        (LogFile("b0", T0, 1, "1-0-1", False, "p"), (("k0", "w1.0", f"{T}0", f"{T}0"),)),
        (LogFile("b0", T0, 2, "1-0-1", False, "p"), (("k0", "w1.1", f"{T}2", f"{T}2"),)),
        (BaseFile("b0", "0-0-1", T0, "parquet", "p"), (("k0", "v0", T0, T0),))]


def test_a_conflict_at_check_aborts_the_writer_and_releases_the_lock():
    cfg = MachineConfig(Settings(mode="occ"), writers=2, keys=1)
    w2 = [("w2", "generate"), ("w2", "publish"), ("w2", "write"), ("w2", "acquire"), ("w2", "check"), ("w2", "complete")]
    s = run(cfg, G1 + w2 + [("w1", "acquire")])
    assert s.lock == "w1"
    c = M.step(cfg, s, ("w1", "check"))
    assert c == replace(s, procs=(("w1", "idle", None, 1, frozenset()), s.procs[1]), lock=None,
                        dead=frozenset({f"{T}0"}))
    ok = run(cfg, G1 + [("w1", "acquire")])
    assert M.step(cfg, ok, ("w1", "check")).procs[0] == ("w1", "checked", f"{T}0", 0, frozenset({FG0}))


def test_a_write_whose_instant_was_rolled_back_under_it_aborts():
    """Single writer, EAGER: w2's start rolls back w1's pending instant; w1's next step finds it gone."""
    cfg = MachineConfig(Settings(mode="single_writer", failed_writes="eager", lock_provider=None), writers=2)
    s = run(cfg, [("w1", "generate"), ("w1", "publish"), ("w2", "generate")])
    assert s.dead == frozenset({f"{T}0"}) and s.rollbacks == ((f"{T}0", True),)
    a = M.step(cfg, s, ("w1", "write"))
    assert a.procs[0] == ("w1", "idle", None, 1, frozenset()) and a.files == s.files and a.markers == s.markers
    w = run(cfg, [("w1", "generate"), ("w1", "publish"), ("w1", "write"), ("w1", "acquire"), ("w2", "generate")])
    assert M.step(cfg, w, ("w1", "check")).procs[0] == ("w1", "idle", None, 1, frozenset())
    k = run(cfg, [("w1", "generate"), ("w1", "publish"), ("w1", "write"), ("w1", "acquire"), ("w1", "check"),
                  ("w2", "generate")])
    done = M.step(cfg, k, ("w1", "complete"))
    assert done.procs[0] == ("w1", "idle", None, 1, frozenset()) and done.committed == ()


# ----------------------------------------------------------------------------------------- cleaner protections
def _clean(name, extra):
    cfg = VARIANTS[name].config()
    s = run(cfg, extra + W1 + ([("c", "schedule")] if cfg.compactions else []))
    return cfg, s


@pytest.mark.parametrize("keeps, ignores, extra", [
    ("clean-keeps-savepoints", "clean-ignores-savepoints", [("s", "savepoint")]),
    ("clean-keeps-plans", "clean-ignores-plans", []),
])
def test_cleaner_protects_savepointed_and_planned_files_unless_its_flaw_drops_it(keeps, ignores, extra):
    cfg, s = _clean(keeps, extra)
    assert M.refusal(cfg, s, ("cl", "clean")) == "nothing to clean or roll back"
    cfg, s = _clean(ignores, extra)
    c = M.step(cfg, s, ("cl", "clean"))
    gone = [f.name for f, _ in s.files if f not in dict(c.files)]
    assert c.cleans == ((R.KEEP_LATEST_FILE_VERSIONS, None, tuple(gone), tuple(gone)),)
    assert gone and c.files == tuple((f, r) for f, r in s.files if f.name not in gone)


def test_committed_slices_take_completed_and_pending_compaction_slices_only():
    cfg, s = _clean("clean-keeps-plans", [])
    tc = s.comp[1]
    b0, lg = BaseFile("b0", "0-0-1", T0, "parquet", "p"), LogFile("b0", f"{T}0", 1, "1-0-1", False, "p")
    assert A.committed_slices(s) == {"b0": [(tc, ()), (T0, (b0, lg))]}
    cow = MachineConfig(Settings(mode="occ", table_type="cow"), writers=1, keys=1)
    w = run(cow, G1)   # the written base file's instant is not completed
    assert A.committed_slices(w) == {"b0": [(T0, (b0,))]}


# ----------------------------------------------------------------------------------------- conflict view
def W(w):
    return [(w, "generate"), (w, "publish"), (w, "write"), (w, "acquire"), (w, "check"), (w, "complete")]


TWO_GROUPS = MachineConfig(Settings(mode="occ", index="simple"), writers=2, keys=2, commits=2, preloaded=False,
                           compactions=1, clusterings=1)


def test_summaries_and_clustering_only_its_planned_groups():
    """Two file groups (two inserts, one update): the compaction plans the updated one, the clustering takes the
    other; conflict resolution sees each instant with its operation, state and file groups."""
    s = run(TWO_GROUPS, W("w1") + W("w2") + W("w1") + [("c", "schedule"), ("k", "schedule")])
    na, nb = FileGroupId("p", f"n{T}0"), FileGroupId("p", f"n{T}2")
    done = dict(state=R.COMPLETED)
    assert A.summaries(s) == [
        R.WriteSummary(T0, R.DELTACOMMIT, R.UPSERT, (), completion="20241231235959995", **done),
        R.WriteSummary(f"{T}0", R.DELTACOMMIT, R.UPSERT, {("p", f"n{T}0")}, completion=f"{T}1", **done),
        R.WriteSummary(f"{T}2", R.DELTACOMMIT, R.UPSERT, {("p", f"n{T}2")}, completion=f"{T}3", **done),
        R.WriteSummary(f"{T}4", R.DELTACOMMIT, R.UPSERT, {("p", f"n{T}2")}, completion=f"{T}5", **done),
        R.WriteSummary(f"{T}6", R.COMPACTION, R.COMPACT, {nb}, state=R.REQUESTED),
        R.WriteSummary(f"{T}7", R.CLUSTERING, R.CLUSTER, {na}, state=R.REQUESTED)]
    e = M.step(TWO_GROUPS, s, ("k", "execute"))
    new = BaseFile(f"c{T}7", "7-0-1", f"{T}7", "parquet", "p")
    assert dict(e.files)[new] == (("k0", "w1.0", f"{T}0", f"{T}0"),)
    assert A.summaries(e)[-1] == R.WriteSummary(f"{T}7", R.CLUSTERING, R.CLUSTER,
                                                            {na, ("p", f"c{T}7")}, state=R.INFLIGHT)


def test_ignoring_pending_compactions_still_checks_completed_ones():
    cfg = MachineConfig(Settings(mode="occ"), writers=2, keys=1, compactions=1,
                        flaws=frozenset({"ignore-pending-compaction"}))
    s = run(cfg, W("w2") + [("w1", "generate"), ("w1", "publish"), ("c", "schedule"), ("c", "execute"),
                            ("c", "commit"), ("w1", "write"), ("w1", "acquire")])
    assert s.comp == ("idle", None, 1)
    assert M.step(cfg, s, ("w1", "check")).procs[0] == ("w1", "idle", None, 1, frozenset())


def test_a_timeline_rule_refuses_the_step_naming_the_rule():
    cfg = MachineConfig(Settings(mode="occ"), writers=1, generator="naive")   # no wait: completion == requested
    s = run(cfg, [("w1", "generate"), ("w1", "publish"), ("w1", "write"), ("w1", "acquire"), ("w1", "check")])
    assert M.refusal(cfg, s, ("w1", "complete")) == (
        f"I2.requested-before-completion: [I2.requested-before-completion] completion time {T}0 is not after "
        f"requested time {T}0")


def test_clustering_maps_pending_then_replaced_and_gone_after_a_rollback():
    k = run(CLUS, [("k", "schedule")])
    tk = f"{T}0"
    assert k.clustering_maps() == ({}, {F0: tk})
    assert [s.file_id for s in k.view().latest_file_slices()] == ["f0"]
    c = run(CLUS, [("k", "execute"), ("k", "commit")], k)
    assert c.clustering_maps() == ({F0: tk}, {})
    assert [s.file_id for s in c.view().latest_file_slices()] == [f"c{tk}"]   # the replaced group is hidden
    rolled = run(CLUS, [("k", "schedule")] + W1 + [("k", "execute"), ("k", "commit")])
    assert rolled.cplans == ((tk, (F0,)),) and rolled.clustering_maps() == ({}, {})


def test_cow_write_merges_only_its_own_group_and_refuses_an_existing_file():
    cfg = MachineConfig(Settings(mode="occ", table_type="cow"), writers=2, keys=2, buckets=2)
    p = run(cfg, [("w1", "generate"), ("w1", "publish")])
    s = M.step(cfg, p, ("w1", "write"))
    new = BaseFile("b0", "1-0-1", f"{T}0", "parquet", "p")
    assert dict(s.files)[new] == (("k0", "w1.0", f"{T}0", f"{T}0"),)
    clash = replace(p, files=p.files + ((new, ()),))
    assert M.refusal(cfg, clash, ("w1", "write")) == f"{new.name} exists"
