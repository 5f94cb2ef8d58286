"""Focused tests for the table-level machines' descriptions, action names and the concurrency machine's crash
fault, which `make mutate` showed unchecked by the fast tests (the explorers print these strings in every
counterexample; the crash fault's bookkeeping decides what a rollback later finds)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from model import archival_machine as am
from model.concurrency import machine as M
from model.concurrency.settings import Settings
from model.concurrency.state import MachineConfig, records_of

CFG = MachineConfig(Settings(mode="occ"), writers=2, compactions=1, crashes=2)
T0_LINE = "20241231235959990->20241231235959995.deltacommit[completed]"
BASE = "b0_0-0-1_20241231235959990.parquet"


def test_concurrency_describe_names_every_process_the_timeline_and_the_files():
    s = M.initial_state(CFG)
    assert M.describe(s) == f"now=0 lock=None [w1=idle#0, w2=idle#0, c=idle] timeline: {T0_LINE}; files: {BASE}"
    s = M.step(CFG, M.step(CFG, s, ("w1", "generate")), ("w1", "publish"))
    s = replace(s, now=5, lock="w2", procs=(("w1", "written", "T1", 1, frozenset()), ("w2", "idle", None, 2, frozenset())),
                comp=("scheduled", "TC", 1), clus=("idle", None, 1), files=s.files + s.files)
    insts = f"{T0_LINE}, 20250101000000000.deltacommit[requested]"
    assert M.describe(s) == (f"now=5 lock=w2 [w1=written@T1#1, w2=idle#2, c=scheduled@TC, k=idle] "
                             f"timeline: {insts}; files: {BASE}, {BASE}")
    # the clustering service is shown once it has an instant or has run; the compactor always
    s = replace(s, clus=("scheduled", "TK", 0), comp=("idle", None, 0))
    assert M.describe(s).startswith("now=5 lock=w2 [w1=written@T1#1, w2=idle#2, c=idle, k=scheduled@TK] ")
    s = replace(s, clus=("idle", None, 0))
    assert ", k=" not in M.describe(s) and M.describe(s).endswith(f"files: {BASE}, {BASE}")
    assert M.describe(replace(s, files=())).endswith("; files: ")


def test_concurrency_action_text_round_trips():
    assert M.format_action(("w1", "generate")) == "w1 generate"
    assert M.parse_action("  w1 generate ") == ("w1", "generate")
    assert M.parse_action("c schedule now") == ("c", "schedule now")
    assert M.parse_action("cl") == ("cl", "")


def test_crash_of_a_writer_that_has_not_published_leaves_no_instant_for_a_rollback():
    s = M.step(CFG, M.initial_state(CFG), ("w1", "generate"))
    assert s.lock == "w1"
    c = M.step(CFG, s, ("w1", "crash"))
    assert c.proc("w1") == ("w1", "idle", None, 1, frozenset())
    assert c.dead == frozenset() and c.lock is None and c.crashes == 1


def test_crash_of_a_published_writer_leaves_its_instant_to_a_rollback_and_counts():
    s = M.step(CFG, M.step(CFG, M.initial_state(CFG), ("w1", "generate")), ("w1", "publish"))
    t = s.proc("w1")[2]
    s = M.step(CFG, s, ("w2", "generate"))
    c = M.step(CFG, s, ("w1", "crash"))
    assert c.proc("w1") == ("w1", "idle", None, 1, frozenset())
    assert c.dead == frozenset({t}) and c.crashes == 1
    assert c.lock == "w2"  # another writer's lock is not released by w1's crash
    c2 = M.step(CFG, c, ("w2", "crash"))
    assert c2.crashes == 2 and c2.lock is None and c2.dead == frozenset({t})  # w2 had not published
    assert M.refusal(CFG, c2, ("w1", "crash")) == "w1 is idle: nothing to crash"
    two = replace(CFG, commits=2)
    s3 = M.step(two, c2, ("w1", "generate"))
    assert M.refusal(two, s3, ("w1", "crash")) == "no crashes left (2)"
    one = replace(CFG, crashes=1)
    s = M.step(one, M.initial_state(one), ("w1", "generate"))
    assert M.refusal(one, s, ("w1", "crash")) is None
    assert M.refusal(one, M.step(one, s, ("w1", "crash")), ("w2", "crash")) == "w2 is idle: nothing to crash"
    s = M.step(one, M.step(one, s, ("w1", "crash")), ("w2", "generate"))
    assert M.refusal(one, s, ("w2", "crash")) == "no crashes left (1)"


def test_machine_config_to_dict_and_records_of():
    d = replace(CFG, flaws=frozenset({"no-0x-guard", "ignore-pending-compaction"}), validated=False).to_dict()
    assert d["settings"] == CFG.settings.to_dict() and isinstance(d["settings"], dict)
    assert d["flaws"] == ["ignore-pending-compaction", "no-0x-guard"]
    assert d["writers"] == 2 and d["crashes"] == 2
    files = {"a": (1, 2)}
    assert records_of(files, "a") == (1, 2)
    assert records_of(files, "b") == ()


def test_archival_describe_and_action_text():
    cfg = am.MachineConfig(writers=2, writes=3, initial=3)
    s = am.initial_state(cfg)
    assert am.describe(s) == "[w1=idle, w2=idle] 3 completed commits active, job 0 steps left, lock=None"
    s = am.step(cfg, s, ("w1", "start"))
    t = s.writers[0][2]
    assert am.describe(s) == (f"[w1=writing@{t[-4:]}, w2=idle] 3 completed commits active, job 0 steps left, "
                              f"lock=None")
    s = am.step(cfg, am.step(cfg, s, ("w1", "complete")), ("a", "archive"))
    assert am.describe(s) == (f"[w1=idle, w2=idle] 4 completed commits active, job {len(s.history.job)} steps "
                              f"left, lock=a")
    assert len(s.history.job) > 0
    assert am.format_action(("w2", "start")) == "w2 start"
    assert am.format_action(("a", "crash")) == "a crash"


def test_table_machine_describe_action_text_and_config_dict():
    from model import table_machine as TM

    cfg = TM.TableConfig(clock_offsets_ms=(0, 3))
    s = TM.initial_state(cfg)
    base = ("20241231235959960->20241231235959965.deltacommit[completed], "
            "20241231235959970->20241231235959975.deltacommit[completed]")
    assert TM.describe(s) == f"now=0 [w1=idle, c=idle, r=idle] timeline: {base}; logs: .fg-0_20241231235959970.log.1_0-1-1"
    s = TM.step(cfg, TM.step(cfg, s, ("w1", "start")), ("w1", "write"))
    assert TM.describe(s) == (f"now=2 [w1=written@20250101000000000, c=idle, r=idle] timeline: {base}, "
                              f"20250101000000000.deltacommit[inflight]; logs: .fg-0_20241231235959970.log.1_0-1-1, "
                              f".fg-0_20250101000000000.log.1_0-1-1")
    assert TM.format_action(("clock", "tick")) == "tick"
    assert TM.format_action(("w1", "start")) == "w1 start"
    assert TM.format_action(("clock", "stop")) == "clock stop"
    assert TM.format_action(("c", "tick")) == "c tick"
    d = cfg.to_dict()
    assert d["clock_offsets_ms"] == [0, 3] and isinstance(d["clock_offsets_ms"], list)
    assert d["table_version"] == 8 and d["writers"] == 1


def test_concurrency_describe_shows_the_compactors_instant_only_when_it_has_one():
    s = M.initial_state(CFG)
    assert "c=idle]" in M.describe(replace(s, comp=("idle", None, 1)))
    assert "c=scheduled@TC]" in M.describe(replace(s, comp=("scheduled", "TC", 0)))


def _table_rollback(tv: int):
    from model import table_machine as TM

    cfg = TM.TableConfig(table_version=tv, failures=1, writers=2, compaction=False)
    s = TM.initial_state(cfg)
    for a in [("w1", "start"), ("w1", "write"), ("w2", "start"), ("w2", "write"), ("w1", "fail")]:
        s = TM.step(cfg, s, a)
    return s, TM.step(cfg, s, ("r", "rollback"))


def test_table_machine_rollback_tv8_deletes_the_failed_log_only():
    from model.timeline import Action, State

    before, s = _table_rollback(8)
    assert [lf.name for lf in s.logs] == [".fg-0_20241231235959970.log.1_0-1-1", ".fg-0_20250101000000002.log.1_0-1-1"]
    assert [lf.name for lf, _ in s.blocks] == [lf.name for lf in s.logs]
    assert s.procs == (("w1", "rolled-back", "20250101000000000"), ("w2", "written", "20250101000000002"),
                       ("c", "idle", None), ("r", "idle", "20250101000000004"))
    assert s.tl.writers_of("20250101000000004", Action.ROLLBACK) == {
        State.REQUESTED: ("r",), State.INFLIGHT: ("r",), State.COMPLETED: ("r",)}
    assert s.gen.last_time == {"w1": "20250101000000000", "w2": "20250101000000002", "r": "20250101000000004"}
    assert s.now == 8 and before.now == 4
    assert "20250101000000000" not in [i.requested_time for i in s.tl.instants()]


def test_table_machine_rollback_tv6_appends_a_command_block_to_the_failed_slice():
    from model.logblocks import BlockKind

    before, s = _table_rollback(6)
    assert s.logs[:3] == before.logs
    new = s.logs[3]
    assert (new.name, new.cdc) == (".fg-0_20241231235959960.log.4_0-1-1", False)
    (lf, (block,)) = s.blocks[3]
    assert lf == new and (block.kind, block.instant_time, block.target_instant) == (
        BlockKind.COMMAND, "20250101000000004", "20250101000000000")
    assert s.blocks[:3] == before.blocks
    assert s.procs[0] == ("w1", "rolled-back", "20250101000000000") and s.procs[3] == ("r", "idle", "20250101000000004")


def test_archival_initial_state_and_writer_guards():
    from model.timeline import State as S

    cfg = am.MachineConfig(writers=2, writes=1, initial=2, failures=1)
    s = am.initial_state(cfg)
    assert s.clock == 5
    assert sorted((f.requested_time, f.state, f.completion_time) for f in s.history.active) == [
        ("20260101000000001", S.REQUESTED, None), ("20260101000000001", S.INFLIGHT, None),
        ("20260101000000001", S.COMPLETED, "20260101000000002"),
        ("20260101000000003", S.REQUESTED, None), ("20260101000000003", S.INFLIGHT, None),
        ("20260101000000003", S.COMPLETED, "20260101000000004")]
    assert am.initial_state(am.MachineConfig(initial=0)).clock == 1
    s = am.step(cfg, s, ("w1", "start"))
    assert s.writers[0] == ("w1", "writing", "20260101000000005") and s.clock == 6
    assert am.machine.refusal(lambda a: am.step(cfg, s, a), ("w1", "start"), am.Refused) == "w1 is writing; start needs idle"
    assert am.machine.refusal(lambda a: am.step(cfg, s, a), ("w2", "start"), am.Refused) == "no writes left (1)"
    s = am.step(cfg, s, ("w1", "complete"))
    done = [f for f in s.history.active if f.requested_time == "20260101000000005" and f.state is S.COMPLETED]
    assert [f.completion_time for f in done] == ["20260101000000006"]


def test_archival_lock_holder_goes_on_and_others_wait():
    cfg = am.MachineConfig(writers=1, writes=2, initial=3)
    s = am.step(cfg, am.initial_state(cfg), ("a", "archive"))
    assert s.lock == "a" and s.history.job
    why = am.machine.refusal(lambda a: am.step(cfg, s, a), ("w1", "start"), am.Refused)
    assert why == "the table lock is held by a"
    assert am.machine.refusal(lambda a: am.step(cfg, s, a), ("a", "step"), am.Refused) is None


def test_concurrency_clean_guards():
    cfg = VARIANTS_LAZY()
    s = M.initial_state(cfg)
    assert M.refusal(cfg, s, ("cl", "clean")) == "nothing to clean or roll back"
    s = M.step(cfg, M.step(cfg, M.step(cfg, s, ("w1", "generate")), ("w1", "publish")), ("w1", "crash"))
    assert M.refusal(cfg, s, ("cl", "clean")) is None
    s = M.step(cfg, s, ("cl", "clean"))
    assert len(s.cleans) == 1 and s.cleans[0] == (None, None, (), ())
    assert M.refusal(cfg, s, ("cl", "clean")) == "no cleans left (1)"


def VARIANTS_LAZY():
    from model.concurrency.variants import VARIANTS
    return VARIANTS["lazy-crash"].config()


def test_files_to_clean_edges():
    from model.concurrency import rules as R

    slices = {"f": [("T2", ("a",)), ("T1", ("b",))]}
    assert R.files_to_clean(R.KEEP_LATEST_COMMITS, 2, slices, ["T1", "T2"]) == ([], "T1")
    assert R.files_to_clean(R.KEEP_LATEST_COMMITS, 3, slices, ["T1", "T2"]) == ([], None)
    with pytest.raises(ValueError) as e:
        R.files_to_clean("KEEP_ALL", 1, slices, ["T1"])
    assert str(e.value) == "unknown cleaning policy 'KEEP_ALL'"


def test_archival_rollback_of_the_oldest_failed_write():
    from model.timeline import Action, State as S

    cfg = am.MachineConfig(writers=2, writes=2, initial=1, failures=1)
    s = am.initial_state(cfg)
    assert am.machine.refusal(lambda a: am.step(cfg, s, a), ("c", "rollback"), am.Refused) == "no failed write to roll back"
    for a in [("w1", "start"), ("w2", "start"), ("w1", "fail")]:
        s = am.step(cfg, s, a)
    r = am.step(cfg, s, ("c", "rollback"))
    assert r.clock == s.clock + 2 == 7
    assert r.writers == (("w1", "rolled-back", "20260101000000003"), ("w2", "writing", "20260101000000004"))
    assert sorted((f.requested_time, f.action, f.state, f.completion_time) for f in r.history.active) == sorted([
        ("20260101000000001", Action.COMMIT, S.REQUESTED, None), ("20260101000000001", Action.COMMIT, S.INFLIGHT, None),
        ("20260101000000001", Action.COMMIT, S.COMPLETED, "20260101000000002"),
        ("20260101000000004", Action.COMMIT, S.REQUESTED, None), ("20260101000000004", Action.COMMIT, S.INFLIGHT, None),
        ("20260101000000005", Action.ROLLBACK, S.REQUESTED, None), ("20260101000000005", Action.ROLLBACK, S.INFLIGHT, None),
        ("20260101000000005", Action.ROLLBACK, S.COMPLETED, "20260101000000006")])


def test_archival_archiver_guards():
    cfg = am.MachineConfig(writers=1, writes=2, initial=3)
    s = am.initial_state(cfg)
    why = lambda st, a: am.machine.refusal(lambda x: am.step(cfg, st, x), a, am.Refused)  # noqa: E731
    assert why(s, ("a", "step")) == "no archival job is running"
    s = am.step(cfg, s, ("a", "archive"))
    assert why(s, ("a", "archive")) == "an archival job is running"
    assert why(am.initial_state(am.MachineConfig(initial=1)), ("a", "archive")).startswith("nothing to archive: ")


def test_archival_machine_holds_the_lock_for_the_whole_job_and_uses_its_design():
    from model import archival as A

    cfg = am.MachineConfig(writers=1, writes=6, initial=3, design=A.VARIANTS["non-consecutive-compaction"].design)
    s = am.step(cfg, am.initial_state(cfg), ("a", "archive"))
    assert len(s.history.job) >= 2
    s = am.step(cfg, s, ("a", "step"))
    assert s.history.job and s.lock == "a"
    while s.history.job:
        s = am.step(cfg, s, ("a", "step"))
    assert s.lock is None
    # commit and archive until a step of the job compacts differently under this design than under Hudi's
    differed = False
    for _ in range(40):
        if s.history.job:
            expected = A.step(s.history, cfg.archival, cfg.design)
            differed |= expected != A.step(s.history, cfg.archival)
            s = am.step(cfg, s, ("a", "step"))
            assert s.history == expected
        elif am.machine.refusal(lambda a: am.step(cfg, s, a), ("a", "archive"), am.Refused) is None:
            expected_d, expected = A.start(s.history, cfg.archival, design=cfg.design)
            s = am.step(cfg, s, ("a", "archive"))
            assert s.history == expected
        elif s.writers[0][1] == "writing":
            s = am.step(cfg, s, ("w1", "complete"))
        elif s.started < cfg.writes:
            s = am.step(cfg, s, ("w1", "start"))
        else:
            break
    assert differed


def test_archival_machine_starts_with_its_design():
    from model import archival as A

    below = am.MachineConfig(writers=1, writes=0, initial=4, design=A.VARIANTS["archive-below-min"].design)
    hudi = am.MachineConfig(writers=1, writes=0, initial=4)
    jb = am.step(below, am.initial_state(below), ("a", "archive")).history.job
    jh = am.step(hudi, am.initial_state(hudi), ("a", "archive")).history.job
    assert jb != jh


def test_archival_archiver_crash():
    from model import archival as A

    cfg = am.MachineConfig(writers=1, writes=2, initial=4, crashes=1)
    why = lambda st, a: am.machine.refusal(lambda x: am.step(cfg, st, x), a, am.Refused)  # noqa: E731
    s = am.initial_state(cfg)
    assert why(s, ("a", "crash")) == "no archival job is running"
    s = am.step(cfg, s, ("a", "archive"))
    c = am.step(cfg, s, ("a", "crash"))
    assert c.history == A.crash(s.history) and c.lock is None and c.crashed == 1 and not c.history.job
    s2 = am.step(cfg, c, ("a", "archive"))
    assert why(s2, ("a", "crash")) == "no crashes left (1)"
    assert why(s2, ("a", "nap")) == "unknown archiver step nap"
    assert why(s2, ("x", "start")) == "unknown process x"


def _compacted(cfg):
    from model import table_machine as TM

    s = TM.initial_state(cfg)
    out = []
    for a in [("w1", "start"), ("w1", "write"), ("w1", "complete"), ("c", "schedule"), ("c", "execute")]:
        s = TM.step(cfg, s, a)
        out.append(s)
    return out


def test_table_machine_compaction_schedule_and_execute():
    from model import table_machine as TM
    from model.timeline import Action, State

    states = _compacted(TM.TableConfig())
    sched, done = states[3], states[4]
    tc = "20250101000000004"
    assert sched.procs[1] == ("c", "scheduled", tc) and sched.now == 6
    assert sched.gen.last_time == {"w1": "20250101000000000", "c": tc}
    assert [p[0] for p in sched.plans] == [tc]
    assert [str(i) for i in sched.tl.instants()][-1] == f"{tc}.compaction[requested]"
    assert done.procs[1] == ("c", "done", tc) and done.now == 8
    assert [b.name for b in done.bases] == ["fg-0_0-1-1_20241231235959960.parquet", f"fg-0_0-1-1_{tc}.parquet"]
    assert done.tl.writers_of(tc, Action.COMPACTION) == {State.REQUESTED: ("c",), State.INFLIGHT: ("c",),
                                                        State.COMPLETED: ("c",)}


def test_planner_lookup_that_misses_the_latest_completed_deltacommit():
    from model import table_machine as TM

    cfg = TM.TableConfig(plan_lookup="misses-one")
    states = _compacted(TM.TableConfig())
    for s in (states[2], states[4]):  # three completed deltacommits; then also a completed compaction after them
        blind = TM._planner_timeline(cfg, s.tl)
        assert [str(i) for i in blind.instants()] == [
            str(i) if i.requested_time != "20250101000000000" else "20250101000000000.deltacommit[inflight]"
            for i in s.tl.instants()]
    assert TM._planner_timeline(TM.TableConfig(), states[2].tl) is states[2].tl


@pytest.mark.parametrize("kw, msg", [
    (dict(writers=0), "writers must be 1..3, not 0"), (dict(writers=4), "writers must be 1..3, not 4"),
    (dict(writes=-1), "writes must be 0..6, not -1"), (dict(writes=7), "writes must be 0..6, not 7"),
    (dict(initial=-1), "initial must be 0..6, not -1"), (dict(initial=7), "initial must be 0..6, not 7"),
    (dict(failures=-1), "failures must be 0..writers, not -1"), (dict(writers=1, failures=2), "failures must be 0..writers, not 2"),
    (dict(crashes=-1), "crashes must be 0..2, not -1"), (dict(crashes=3), "crashes must be 0..2, not 3"),
])
def test_archival_machine_config_bounds(kw, msg):
    with pytest.raises(ValueError) as e:
        am.MachineConfig(**kw)
    assert str(e.value) == msg


def test_archival_machine_config_bounds_accept_the_edges():
    for kw in (dict(writers=1, failures=1), dict(writers=3, failures=3), dict(writes=0), dict(writes=6), dict(initial=0),
               dict(initial=6), dict(crashes=0), dict(crashes=2), dict(failures=0)):
        am.MachineConfig(**kw)


def test_archival_writer_complete_and_fail_guards():
    cfg = am.MachineConfig(writers=2, writes=3, initial=1, failures=1)
    why = lambda st, a: am.machine.refusal(lambda x: am.step(cfg, st, x), a, am.Refused)  # noqa: E731
    s = am.initial_state(cfg)
    assert why(s, ("w1", "complete")) == "w1 is idle; complete needs writing"
    assert why(s, ("w1", "fail")) == "w1 is idle; fail needs a write in progress"
    assert why(s, ("w1", "rest")) == "unknown writer step rest"
    s = am.step(cfg, am.step(cfg, s, ("w1", "start")), ("w2", "start"))
    c = am.step(cfg, s, ("w1", "complete"))
    assert c.clock == s.clock + 1 and c.writers[0] == ("w1", "idle", None)
    f = am.step(cfg, s, ("w1", "fail"))
    assert f.failed == 1 and f.writers[0] == ("w1", "failed", s.writers[0][2]) and f.clock == s.clock
    assert why(f, ("w2", "fail")) == "no failures left (1)"

