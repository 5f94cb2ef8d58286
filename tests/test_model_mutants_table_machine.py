"""Focused tests for model/table_machine.py that `make mutate` showed unchecked by the fast tests: the bounds of
``TableConfig`` (both edges, the exact message), the fixed action order, the fingerprint, and the exact effect of
each step (phases, times, the generator's history, the log file a write appends, the aborted create, the
failure budget, the refusal texts the explorer prints)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from model import table_machine as TM
from model.filenames import LogFile
from model.instant import Action, State
from model.logblocks import data_block

T = "2025010100000000"  # + one digit: generated times (epoch + n ms)
OLD_LOG = LogFile("fg-0", TM.T_LOG, 1, "0-1-1", False, "p")


def run(cfg, actions, s=None):
    s = TM.initial_state(cfg) if s is None else s
    for a in actions:
        s = TM.step(cfg, s, a)
    return s


def hist(s):
    return [(r.process, r.kind, r.time, r.requested_at, r.acquired_at, r.released_at) for r in s.gen.history]


# ----------------------------------------------------------------------------------------- TableConfig
@pytest.mark.parametrize("kw, msg", [
    (dict(table_version=7), "table_version must be 6 or 8, not 7"),
    (dict(publish="x"), "publish must be one of ('atomic', 'two-step'), not 'x'"),
    (dict(storage="x"), "storage must be one of ('put-if-absent', 'overwrite'), not 'x'"),
    (dict(generator="x"), "generator must be one of ('truetime', 'naive'), not 'x'"),
    (dict(plan_lookup="x"), "plan_lookup must be one of ('sees-all', 'misses-one'), not 'x'"),
    (dict(resolution_ms=10), "resolution_ms must be one of (1, 1000)"),
    (dict(writers=0), "writers must be 1..4, not 0"),
    (dict(writers=5), "writers must be 1..4, not 5"),
    (dict(max_ticks=-1), "max_ticks must be 0..10, not -1"),
    (dict(max_ticks=11), "max_ticks must be 0..10, not 11"),
    (dict(failures=-1), "failures must be 0..writers, not -1"),
    (dict(writers=2, failures=3), "failures must be 0..writers, not 3"),
    (dict(rollback="x"), "rollback must be one of ('command-block', 'no-command-block'), not 'x'"),
    (dict(skew_wait_ms=-1), "skew_wait_ms must be 0..2000, not -1"),
    (dict(skew_wait_ms=2001), "skew_wait_ms must be 0..2000, not 2001"),
    (dict(writers=2, clock_offsets_ms=(0, 0, 0, 0)), "clock_offsets_ms names 4 clocks; there are 3 processes"),
    (dict(writers=1, clock_offsets_ms=(0, 0, 0)), "clock_offsets_ms names 3 clocks; there are 2 processes"),
    (dict(clock_offsets_ms=(-1,)), "clock offsets must be 0..1000 ms"),
    (dict(clock_offsets_ms=(0, 1001)), "clock offsets must be 0..1000 ms"),
])
def test_table_config_bounds_refuse_with_the_exact_message(kw, msg):
    with pytest.raises(ValueError) as e:
        TM.TableConfig(**kw)
    assert str(e.value) == msg


@pytest.mark.parametrize("kw", [
    dict(table_version=6), dict(writers=1), dict(writers=4), dict(max_ticks=0), dict(max_ticks=10),
    dict(failures=0), dict(writers=3, failures=3), dict(skew_wait_ms=0), dict(skew_wait_ms=2000),
    dict(writers=4, clock_offsets_ms=(0, 1, 2, 3, 4)), dict(clock_offsets_ms=(0, 1000)),
    dict(resolution_ms=1000), dict(publish="two-step", storage="overwrite", generator="naive",
                                   plan_lookup="misses-one", rollback="no-command-block"),
])
def test_table_config_bounds_accept_the_edges(kw):
    cfg = TM.TableConfig(**kw)
    assert {k: getattr(cfg, k) for k in kw} == {k: (tuple(v) if isinstance(v, list) else v) for k, v in kw.items()}


def test_table_config_stores_clock_offsets_as_a_tuple_of_ints():
    cfg = TM.TableConfig(writers=2, clock_offsets_ms=[3, 7.0])
    assert cfg.clock_offsets_ms == (3, 7) and type(cfg.clock_offsets_ms) is tuple
    assert [type(x) for x in cfg.clock_offsets_ms] == [int, int]
    assert cfg.processes == ("w1", "w2", "c")
    assert TM.TableConfig(writers=4).processes == ("w1", "w2", "w3", "w4", "c")


# ----------------------------------------------------------------------------------------- actions
def test_candidate_actions_in_their_fixed_order():
    assert TM.candidate_actions(TM.TableConfig()) == [
        ("w1", "start"), ("w1", "write"), ("w1", "complete"), ("c", "schedule"), ("c", "execute"), ("clock", "tick")]
    cfg = TM.TableConfig(publish="two-step", writers=2, failures=1, compaction=False)
    assert TM.candidate_actions(cfg) == [
        ("w1", "generate"), ("w1", "publish"), ("w1", "write"), ("w1", "complete"),
        ("w2", "generate"), ("w2", "publish"), ("w2", "write"), ("w2", "complete"),
        ("w1", "fail"), ("w2", "fail"), ("r", "rollback"), ("clock", "tick")]
    three = TM.candidate_actions(TM.TableConfig(writers=3, failures=2))
    assert [a for a in three if a[1] == "fail"] == [("w1", "fail"), ("w2", "fail"), ("w3", "fail")]


def test_initial_state_exactly():
    for tv, key in ((8, TM.T_LOG), (6, TM.T_BASE)):
        s = TM.initial_state(TM.TableConfig(table_version=tv))
        log = LogFile("fg-0", key, 1, "0-1-1", False, "p")
        assert (s.now, s.ticks, s.procs, s.plans) == (0, 0, (("w1", "idle", None), ("c", "idle", None),
                                                             ("r", "idle", None)), ())
        assert s.logs == (log,) and s.blocks == ((log, (data_block(TM.T_LOG),)),)
        assert [b.name for b in s.bases] == [f"fg-0_0-1-1_{TM.T_BASE}.parquet"]
        assert [str(i) for i in s.tl.instants()] == [f"{TM.T_BASE}->{TM.T_BASE_DONE}.deltacommit[completed]",
                                                     f"{TM.T_LOG}->{TM.T_LOG_DONE}.deltacommit[completed]"]


def test_naive_generator_keeps_the_configured_resolution():
    cfg = TM.TableConfig(generator="naive", resolution_ms=1000)
    s = run(cfg, [("w1", "start")])
    assert s.procs[0] == ("w1", "requested", "20250101000000999")
    assert s.gen.resolution_ms == 1000
    assert run(TM.TableConfig(generator="naive"), [("w1", "start")]).procs[0] == ("w1", "requested", f"{T}0")


def test_tick_advances_true_time_by_one_and_counts_until_the_bound():
    cfg = TM.TableConfig(max_ticks=2)
    s = TM.step(cfg, TM.initial_state(cfg), ("clock", "tick"))
    assert (s.now, s.ticks) == (1, 1)
    s = TM.step(cfg, s, ("clock", "tick"))
    assert (s.now, s.ticks) == (2, 2)
    assert TM.refusal(cfg, s, ("clock", "tick")) == "no ticks left (2)"
    assert TM.refusal(TM.TableConfig(max_ticks=0), TM.initial_state(TM.TableConfig()), ("clock", "tick")) == \
        "no ticks left (0)"


def test_two_step_generate_then_publish():
    cfg = TM.TableConfig(publish="two-step")
    s0 = TM.initial_state(cfg)
    g = TM.step(cfg, s0, ("w1", "generate"))
    assert g.procs[0] == ("w1", "generated", f"{T}0") and g.now == 2 and g.ticks == 0
    assert hist(g) == [("w1", "generate", f"{T}0", 0, 0, 2)] and hist(s0) == []
    assert len(g.tl) == 2  # nothing published yet
    assert TM.refusal(cfg, g, ("w1", "write")) == "w1 is generated; write needs requested"
    p = TM.step(cfg, g, ("w1", "publish"))
    assert p.procs[0] == ("w1", "requested", f"{T}0") and p.now == 2
    assert p.tl.writers_of(f"{T}0", Action.DELTACOMMIT) == {State.REQUESTED: ("w1",)}
    assert hist(p) == hist(g)


def test_start_write_complete_exact_effects():
    cfg = TM.TableConfig()
    s = run(cfg, [("w1", "start")])
    assert s.procs[0] == ("w1", "requested", f"{T}0") and s.now == 2
    assert TM.refusal(cfg, s, ("w1", "start")) == "w1 is requested; start needs idle"
    w = TM.step(cfg, s, ("w1", "write"))
    new = LogFile("fg-0", f"{T}0", 1, "0-1-1", False, "p")
    assert w.procs[0] == ("w1", "written", f"{T}0") and w.now == 2
    assert w.logs == (OLD_LOG, new) and w.blocks == s.blocks + ((new, (data_block(f"{T}0"),)),)
    assert w.tl.writers_of(f"{T}0", Action.DELTACOMMIT) == {State.REQUESTED: ("w1",), State.INFLIGHT: ("w1",)}
    c = TM.step(cfg, w, ("w1", "complete"))
    assert c.procs[0] == ("w1", "done", f"{T}0") and c.now == 4
    assert hist(c) == [("w1", "generate", f"{T}0", 0, 0, 2), ("w1", "consume", f"{T}2", 2, 2, 4)]
    assert hist(w) == hist(s)  # the step copied the generator
    assert c.tl.writers_of(f"{T}0", Action.DELTACOMMIT) == {
        State.REQUESTED: ("w1",), State.INFLIGHT: ("w1",), State.COMPLETED: ("w1",)}
    assert str(c.tl.instants()[-1]) == f"{T}0->{T}2.deltacommit[completed]"
    assert TM.refusal(cfg, c, ("w1", "complete")) == "w1 is done; complete needs written"


def test_tv6_write_appends_a_new_version_to_the_slice_before_or_on_its_time():
    cfg = TM.TableConfig(table_version=6)
    w = run(cfg, [("w1", "start"), ("w1", "write")])
    assert w.logs[-1] == LogFile("fg-0", TM.T_BASE, 2, "0-1-1", False, "p")
    assert w.blocks[-1] == (w.logs[-1], (data_block(f"{T}0"),))


def test_colliding_times_on_overwrite_storage_give_the_second_log_the_next_version():
    cfg = TM.TableConfig(generator="naive", writers=2, storage="overwrite")
    s = run(cfg, [("w1", "start"), ("w2", "start"), ("w1", "write"), ("w2", "write")])
    assert s.logs[1:] == (LogFile("fg-0", f"{T}0", 1, "0-1-1", False, "p"),
                          LogFile("fg-0", f"{T}0", 2, "0-1-1", False, "p"))
    assert s.procs[:2] == (("w1", "written", f"{T}0"), ("w2", "written", f"{T}0"))
    assert s.tl.writers_of(f"{T}0", Action.DELTACOMMIT) == {State.REQUESTED: ("w1", "w2"),
                                                           State.INFLIGHT: ("w1", "w2")}


def test_a_create_storage_refuses_aborts_the_writer_with_its_time_and_the_generation():
    """Skewed clocks (w1 3 ms ahead, wait 2 ms): w2 generates w1's time; put-if-absent refuses its create."""
    cfg = TM.TableConfig(writers=2, clock_offsets_ms=(3, 0))
    s = run(cfg, [("w1", "start"), ("clock", "tick")])
    a = TM.step(cfg, s, ("w2", "start"))
    assert a.procs[:2] == (("w1", "requested", f"{T}3"), ("w2", "aborted", f"{T}3"))
    assert a.now == 5 and a.ticks == 1
    assert hist(a) == [("w1", "generate", f"{T}3", 0, 0, 2), ("w2", "generate", f"{T}3", 3, 3, 5)]
    assert a.tl.writers_of(f"{T}3", Action.DELTACOMMIT) == {State.REQUESTED: ("w1",)}
    # two-step: the publish aborts, keeping the time and the generator of the generate step
    cfg2 = replace(cfg, publish="two-step")
    g = run(cfg2, [("w1", "generate"), ("w1", "publish"), ("clock", "tick"), ("w2", "generate")])
    p = TM.step(cfg2, g, ("w2", "publish"))
    assert p.procs[1] == ("w2", "aborted", f"{T}3") and p.now == g.now == 5 and hist(p) == hist(g)


def test_fail_counts_failed_and_rolled_back_writers_against_the_budget():
    cfg = TM.TableConfig(writers=3, failures=2, compaction=False)
    s = run(cfg, [(w, a) for w in ("w1", "w2", "w3") for a in ("start", "write")])
    assert TM.refusal(cfg, s, ("w1", "fail")) is None
    f1 = TM.step(cfg, s, ("w1", "fail"))
    assert f1.procs[0] == ("w1", "failed", f"{T}0") and f1.now == s.now and f1.logs == s.logs
    assert TM.refusal(cfg, f1, ("w2", "fail")) is None
    r = TM.step(cfg, f1, ("r", "rollback"))      # w1 rolled back: still counts
    assert r.procs[0] == ("w1", "rolled-back", f"{T}0")
    f2 = TM.step(cfg, r, ("w2", "fail"))
    assert TM.refusal(cfg, f2, ("w3", "fail")) == "no failures left (2)"
    assert TM.refusal(cfg, f1, ("w1", "fail")) == "w1 is failed; fail needs written"
    one = TM.TableConfig(writers=2, failures=1, compaction=False)
    s1 = run(one, [("w1", "start"), ("w1", "write"), ("w2", "start"), ("w2", "write"), ("w1", "fail")])
    assert TM.refusal(one, s1, ("w2", "fail")) == "no failures left (1)"


def test_rollback_refusal_and_the_times_it_takes():
    cfg = TM.TableConfig(failures=1, writers=2, compaction=False)
    assert TM.refusal(cfg, TM.initial_state(cfg), ("r", "rollback")) == "no failed write to roll back"
    s = run(cfg, [("w1", "start"), ("w1", "write"), ("w1", "fail")])
    r = TM.step(cfg, s, ("r", "rollback"))
    # the completion is requested at the true time after the rollback instant's generation
    assert hist(r)[1:] == [("r", "generate", f"{T}2", 2, 2, 4), ("r", "consume", f"{T}4", 4, 4, 6)]
    assert r.now == 6 and r.procs[3] == ("r", "idle", f"{T}2")


def test_a_timeline_rule_refuses_the_step_naming_the_rule():
    cfg = TM.TableConfig(generator="naive")   # no wait: the completion time equals the requested time
    s = run(cfg, [("w1", "start"), ("w1", "write")])
    assert TM.refusal(cfg, s, ("w1", "complete")) == (
        f"I2.requested-before-completion: [I2.requested-before-completion] completion time {T}0 is not after "
        f"requested time {T}0")
    assert TM.refusal(cfg, run(cfg, [("clock", "tick")], s), ("w1", "complete")) is None


def test_compactor_guards_say_why():
    cfg = TM.TableConfig()
    s = TM.initial_state(cfg)
    assert TM.refusal(cfg, s, ("c", "execute")) == "c is idle; execute needs scheduled"
    sch = TM.step(cfg, s, ("c", "schedule"))
    assert sch.procs[1] == ("c", "scheduled", f"{T}0") and sch.now == 2
    assert TM.refusal(cfg, sch, ("c", "schedule")) == "c is scheduled; schedule needs idle"
    done = TM.step(cfg, sch, ("c", "execute"))
    assert done.procs[1] == ("c", "done", f"{T}0") and done.now == 4
    assert hist(done)[-1] == ("c", "consume", f"{T}2", 2, 2, 4)


# ----------------------------------------------------------------------------------------- state
def test_fingerprint_exactly():
    cfg = TM.TableConfig()
    s = run(cfg, [("w1", "start")])
    fp = s.fingerprint()
    assert fp[:7] == (s.now, s.ticks, s.procs, s.bases, s.logs, s.blocks, s.plans)
    assert fp[7] == ((TM.T_BASE, "deltacommit", 3, TM.T_BASE_DONE, ()), (TM.T_LOG, "deltacommit", 3, TM.T_LOG_DONE, ()),
                     (f"{T}0", "deltacommit", 1, None, ((1, ("w1",)),)))
    assert fp[8] == (("w1", f"{T}0", 0, 2),)
    assert fp[9:] == ((("w1", f"{T}0"),), 2)
    # two states that differ only in who wrote a state file, or in the generator's history, differ
    other = s.tl.copy()
    other.transition_to_inflight(f"{T}0", Action.DELTACOMMIT, by="w2")
    assert replace(s, tl=other).fingerprint()[7] != fp[7]


def test_pending_compactions_only_completed_compactions_are_done():
    cfg = TM.TableConfig()
    sch = run(cfg, [("c", "schedule")])
    ((tc, slices),) = sch.plans
    assert sch.pending_compactions() == {TM.FG: tc}
    assert run(cfg, [("c", "execute")], sch).pending_compactions() == {}
    # a plan whose time is a completed deltacommit's (not a compaction) is still pending
    odd = replace(sch, plans=((TM.T_LOG, slices),))
    assert odd.pending_compactions() == {TM.FG: TM.T_LOG}


def test_verdicts_name_the_slicing_rule_of_the_table_version():
    for tv, name in ((6, "I7.slice-by-instant-time"), (8, "I6.slice-by-completion-time")):
        cfg = TM.TableConfig(table_version=tv)
        vs = TM.verdicts(run(cfg, [("w1", "start"), ("w1", "write"), ("w1", "complete")]))
        assert [v.invariant for v in vs if v.invariant.startswith(("I6", "I7"))] == [name]
        assert all(v.holds for v in vs)
        assert vs[-1].invariant == "I1.generation-order"


def test_schedule_plans_the_slice_its_lookup_sees():
    from model.slicing import FileSlice

    base0 = TM._base(TM.T_BASE)
    new = LogFile("fg-0", f"{T}0", 1, "0-1-1", False, "p")
    for lookup, logs in (("sees-all", (OLD_LOG, new)), ("misses-one", (OLD_LOG,))):
        cfg = TM.TableConfig(plan_lookup=lookup)
        s = run(cfg, [("w1", "start"), ("w1", "write"), ("w1", "complete")])
        c = TM.step(cfg, s, ("c", "schedule"))
        assert c.plans == ((f"{T}4", ((TM.FG, FileSlice(TM.FG, TM.T_BASE, base0, logs)),)),)
        assert c.procs[1] == ("c", "scheduled", f"{T}4") and c.now == 6
        assert hist(c)[-1] == ("c", "generate", f"{T}4", 4, 4, 6)
        assert c.tl.writers_of(f"{T}4", Action.COMPACTION) == {State.REQUESTED: ("c",)}


def test_schedule_on_tv6_applies_the_0x_guard():
    cfg = TM.TableConfig(table_version=6)
    s = run(cfg, [("w1", "start")])
    assert TM.refusal(cfg, s, ("c", "schedule")) == (
        f"0.x scheduling guard: write {T}0 is pending and older than compaction {T}2")
    s = run(cfg, [("w1", "write"), ("w1", "complete")], s)
    c = TM.step(cfg, s, ("c", "schedule"))
    (tc, ((gid, sl),)), = c.plans
    assert (tc, gid, sl.base_instant, [lf.version for lf in sl.log_files]) == (f"{T}4", TM.FG, TM.T_BASE, [1, 2])


def test_execute_writes_the_compacted_base_and_completes_as_commit():
    cfg = TM.TableConfig()
    sch = run(cfg, [("c", "schedule")])
    d = TM.step(cfg, sch, ("c", "execute"))
    assert d.bases == (TM._base(TM.T_BASE), TM._base(f"{T}0"))
    assert d.logs == sch.logs and d.blocks == sch.blocks and d.plans == sch.plans
    assert str(d.tl.instants()[-1]) == f"{T}0->{T}2.commit[completed]"
    assert d.pending_compactions() == {}


def test_tv6_rollback_without_a_command_block_only_deletes_the_instant():
    cfg = TM.TableConfig(table_version=6, failures=1, writers=2, compaction=False, rollback="no-command-block")
    s = run(cfg, [("w1", "start"), ("w1", "write"), ("w2", "start"), ("w2", "write"), ("w1", "fail")])
    r = TM.step(cfg, s, ("r", "rollback"))
    assert r.logs == s.logs and r.blocks == s.blocks
    assert r.procs == (("w1", "rolled-back", f"{T}0"), ("w2", "written", f"{T}2"), ("c", "idle", None),
                       ("r", "idle", f"{T}4"))
    assert [i.requested_time for i in r.tl.instants()] == [TM.T_BASE, TM.T_LOG, f"{T}2", f"{T}4"]
    assert str(r.tl.instants()[-1]) == f"{T}4->{T}6.rollback[completed]"


def test_rollback_takes_the_oldest_failed_write_first():
    cfg = TM.TableConfig(failures=2, writers=2, compaction=False)
    s = run(cfg, [("w2", "start"), ("w1", "start"), ("w1", "write"), ("w2", "write"), ("w1", "fail"), ("w2", "fail")])
    assert s.procs[:2] == (("w1", "failed", f"{T}2"), ("w2", "failed", f"{T}0"))
    r = TM.step(cfg, s, ("r", "rollback"))
    assert r.procs[:2] == (("w1", "failed", f"{T}2"), ("w2", "rolled-back", f"{T}0"))


def test_a_lookup_that_misses_the_only_log_has_nothing_to_compact():
    cfg = TM.TableConfig(plan_lookup="misses-one")
    s = TM.initial_state(cfg)
    assert TM.refusal(cfg, s, ("c", "schedule")) == f"nothing to compact at {T}0"
    assert TM.enabled(cfg, s) == [(("w1", "start"), TM.step(cfg, s, ("w1", "start"))),
                                  (("clock", "tick"), TM.step(cfg, s, ("clock", "tick")))]
