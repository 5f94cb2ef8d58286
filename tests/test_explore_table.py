"""Issue #15 "Done when": ``explore`` finds the shortest counterexample for each broken timeline-level
variant at small bounds, and the correct designs pass the same bounds exhaustively.

The machine is :mod:`model.table_machine` (spec), its named designs :mod:`model.table_variants`, the
adapter :class:`checker.table.TableModel`. Shortest lengths were derived by hand (``TableVariant.depths``;
the derivation is in each test's comment) and are checked three ways: BFS finds exactly that depth, a
search bounded one step shorter finds nothing, and replaying the actions through the spec's ``step``
reaches a state where the invariant fails (its prefix does not).
"""

from __future__ import annotations

import pytest

from checker.explorer import explore
from checker.table import TableModel
from model import table_machine as tm
from model.table_variants import TABLE_VARIANTS

BROKEN = [n for n, v in TABLE_VARIANTS.items() if v.expected]
CORRECT = [n for n, v in TABLE_VARIANTS.items() if not v.expected]

#: Per broken variant, the one design choice whose fix makes the same bound pass.
FIXES = {
    "tv6-two-step": {"publish": tm.ATOMIC},
    "tv8-plan-misses-one": {"plan_lookup": tm.SEES_ALL},
    "tv6-rollback-no-command-block": {"rollback": tm.COMMAND_BLOCK},
    "naive-overwrite": {"generator": tm.TRUETIME},
    "naive-skewed-clock": {"generator": tm.TRUETIME, "skew_wait_ms": 3},  # wait > skew (2 ms)
    "truetime-short-wait": {"skew_wait_ms": 3},
    "truetime-second-resolution": {"resolution_ms": 1},
}


def _violations(state) -> set[str]:
    return {v.invariant for v in tm.verdicts(state) if not v.holds}


def test_every_broken_variant_has_a_fix_and_an_expected_depth():
    assert set(FIXES) == set(BROKEN) and len(BROKEN) >= 5 and len(CORRECT) >= 3
    for n in BROKEN:
        assert set(TABLE_VARIANTS[n].depths) == set(TABLE_VARIANTS[n].expected)


@pytest.mark.parametrize("name", BROKEN)
def test_explore_finds_the_shortest_counterexample(name):
    # tv6-two-step, 6: w1 generate < c schedule (the guard cannot see w1) < w1 publish < w1 write (log joins
    #   the planned slice) < w1 complete < c execute (its base supersedes the slice); fewer is impossible:
    #   the loss needs the completed compaction and a committed log it did not plan.
    # tv6-rollback-no-command-block, 5: w1 start, write, fail, r rollback (instant deleted, no command block),
    #   c schedule (the plan lists the log holding w1's data block; the guard passes: nothing pending).
    # tv8-plan-misses-one, 5: w1 start, write, complete (the deltacommit the lookup misses), c schedule, execute.
    # naive-overwrite, 2: w1 start, w2 start (same millisecond, the create overwrites); I1.unique, 5: w1 start,
    #   write, tick, complete (completion = now + 0 offset = 1), w2 start (requested = 1).
    # naive-skewed-clock, 3: w1 start (clock +2: time 2), tick, w2 start at 1 (time 1); without the tick both
    #   generations are in one millisecond, concurrent.
    # truetime-short-wait, 2: w1 start (clock +2: reads 2, releases at 2), w2 start (acquires at 2, reads 2);
    #   I1.unique, 4: w1 start, write, complete (acquires at 2, reads 4, releases at 4), w2 start (reads 4).
    # truetime-second-resolution, 2: w1 start (read 0, release at 2), w2 start (read 2: the same second).
    v = TABLE_VARIANTS[name]
    cfg = v.config()
    res = explore(TableModel(cfg), stop_on_violation=False)
    print(f"{name}: {res.states} states, {res.transitions} transitions, {res.cpu:.2f} CPU s")
    assert res.complete
    found = {d.property: d for d in res.counterexamples}
    assert set(found) == set(v.expected), f"{name}: found {sorted(found)}"
    for inv, depth in v.depths.items():
        d = found[inv]
        assert d.depth == depth, f"{name}: {inv} at depth {d.depth}, derived {depth}"
        # one step shorter: no state violates it
        shorter = explore(TableModel(cfg), max_depth=depth - 1, stop_on_violation=False)
        assert inv not in {x.property for x in shorter.counterexamples}
        # replay through the spec: the last state violates it, the one before does not
        s = tm.initial_state(cfg)
        states = [s]
        for a in d.actions:
            s = tm.step(cfg, s, a)
            states.append(s)
        assert inv in _violations(states[-1]) and inv not in _violations(states[-2])
        assert states[-1].fingerprint() == d.states[-1].fingerprint()


@pytest.mark.parametrize("name", BROKEN)
def test_the_fix_passes_the_same_bound(name):
    cfg = TABLE_VARIANTS[name].config(**FIXES[name])
    res = explore(TableModel(cfg), stop_on_violation=False)
    print(f"{name} fixed {FIXES[name]}: {res.states} states")
    assert res.complete and res.states > 10 and not res.counterexamples, [
        (d.property, d.depth, d.detail) for d in res.counterexamples]


@pytest.mark.parametrize("writers", [1, 2])
@pytest.mark.parametrize("name", CORRECT)
def test_correct_designs_pass_exhaustively(name, writers):
    v = TABLE_VARIANTS[name]
    offsets = v.overrides.get("clock_offsets_ms", ())[: writers + 1]
    cfg = v.config(writers=writers, clock_offsets_ms=offsets)
    res = explore(TableModel(cfg), stop_on_violation=False)
    print(f"{name}, {writers} writer(s): {res.states} states, {res.transitions} transitions, "
          f"max depth {res.max_depth}, {res.cpu:.2f} CPU s")
    assert res.complete and res.terminal_states > 0
    assert not res.counterexamples, [(d.property, d.depth, d.detail) for d in res.counterexamples]
    # the bound holds the broken variants' interleavings (up to 6 steps: a write and a compaction done)
    assert res.max_depth >= 6


@pytest.mark.parametrize("name", CORRECT)
def test_correct_designs_pass_with_a_failed_write_rolled_back(name):
    v = TABLE_VARIANTS[name]
    cfg = v.config(writers=1, failures=1, clock_offsets_ms=v.overrides.get("clock_offsets_ms", ())[:2])
    res = explore(TableModel(cfg), stop_on_violation=False)
    print(f"{name}, 1 writer, 1 failure: {res.states} states, {res.transitions} transitions")
    assert res.complete and not res.counterexamples, [(d.property, d.depth, d.detail) for d in res.counterexamples]


def test_i9_by_blocks_sees_a_rollback_block_in_another_planned_log():
    """Found by this explorer: a tv6 rollback writes its ROLLBACK command block into a new log file of the
    slice (``log.N+1``, as the real v6_nonpartitioned_rollback table shows); I9 by blocks used to look for
    it only in the log holding the data block and flagged every compaction planned after a correct
    rollback. The compactor's reader scans every planned log of the group, so the block masks the write."""
    from model.invariants.timeline import check_compaction_plan_blocks

    cfg = TABLE_VARIANTS["hudi-0.x-locked"].config(writers=1, failures=1, clock_offsets_ms=())
    s = tm.initial_state(cfg)
    for a in (("w1", "start"), ("w1", "write"), ("w1", "fail"), ("r", "rollback"), ("c", "schedule")):
        s = tm.step(cfg, s, a)
    (tc, slices), = s.plans
    planned = [lf for _, sl in slices for lf in sl.log_files]
    blocks = dict(s.blocks)
    assert [lf.version for lf in planned] == [1, 2, 3]
    assert blocks[planned[1]][0].instant_time == s.proc("w1")[2] and blocks[planned[2]][0].kind.value == "command"
    assert check_compaction_plan_blocks(s.tl, {tc: planned}, blocks).holds
    # the plan without the rollback's log: the failed write's block is unmasked
    assert not check_compaction_plan_blocks(s.tl, {tc: planned[:2]}, blocks).holds
    assert "I9.compaction-plan" not in _violations(s)


def test_guards_say_why_they_refuse():
    cfg = TABLE_VARIANTS["hudi-0.x-locked"].config(writers=1, clock_offsets_ms=())
    s = tm.step(cfg, tm.initial_state(cfg), ("w1", "start"))
    why = tm.refusal(cfg, s, ("c", "schedule"))
    assert why.startswith("0.x scheduling guard: write") and "is pending and older than compaction" in why
    assert tm.refusal(cfg, s, ("w1", "complete")) == "w1 is requested; complete needs written"
    assert tm.refusal(cfg, s, ("c", "execute")) == "c is idle; execute needs scheduled"
    s = tm.step(cfg, s, ("clock", "tick"))
    assert tm.refusal(cfg, s, ("clock", "tick")) == "no ticks left (1)"
    miss = TABLE_VARIANTS["tv8-plan-misses-one"].config()
    assert tm.refusal(miss, tm.initial_state(miss), ("c", "schedule")).startswith("nothing to compact")
    fail = TABLE_VARIANTS["tv6-rollback-no-command-block"].config()
    s = tm.initial_state(fail)
    assert tm.refusal(fail, s, ("r", "rollback")) == "no failed write to roll back"
    for a in (("w1", "start"), ("w1", "write"), ("w1", "fail")):
        s = tm.step(fail, s, a)
    assert tm.refusal(fail, s, ("c", "schedule")).startswith("0.x scheduling guard")  # the failed write is pending


def test_a_refused_create_aborts_the_writer_and_keeps_its_generation():
    cfg = TABLE_VARIANTS["truetime-second-resolution"].config()
    s = tm.initial_state(cfg)
    for a in (("w1", "start"), ("w2", "start")):
        s = tm.step(cfg, s, a)
    assert s.proc("w2")[1] == tm.ABORTED and len(s.gen.history) == 2
    assert tm.refusal(cfg, s, ("w2", "write")) == "w2 is aborted; write needs requested"


@pytest.mark.parametrize("bad", [dict(table_version=7), dict(publish="x"), dict(writers=0), dict(max_ticks=11),
                                 dict(clock_offsets_ms=(1, 2, 3)), dict(resolution_ms=10),
                                 dict(failures=2), dict(rollback="x")])
def test_config_refuses_impossible_settings(bad):
    with pytest.raises(ValueError):
        tm.TableConfig(**bad)


def test_cli(capsys):
    from hoodie_lab.cli import main

    assert main(["explore", "--machine", "table", "--variant", "tv6-two-step", "--writers", "1"]) == 1
    out = capsys.readouterr().out
    assert "VIOLATED I8.snapshot-completeness at depth 6" in out and "  2. c schedule" in out
    assert main(["explore", "--machine", "table", "--variant", "hudi-0.x-locked", "--writers", "1"]) == 0
    assert "exhaustive: every state within the bound visited; no invariant violated" in capsys.readouterr().out
    assert main(["explore", "--machine", "table", "--variant", "tv6-two-step", "--writers", "1",
                 "--publish", "atomic"]) == 0
    capsys.readouterr()
    assert main(["explore", "--machine", "table", "--variant", "nope"]) == 2
    assert "unknown table variant 'nope'" in capsys.readouterr().err
    assert main(["explore", "--machine", "table", "--writers", "9"]) == 2
    assert "--writers: 9 is out of range" in capsys.readouterr().err
    assert main(["explore", "--machine", "table", "--graph", "g.png"]) == 2
    assert "--graph: only for --machine protocol" in capsys.readouterr().err
    assert main(["explore", "--machine", "table", "--writers", "1", "--failures", "2"]) == 2
    assert "failures must be 0..writers" in capsys.readouterr().err
    assert main(["explore", "--machine", "table", "--variant", "naive-overwrite", "--json"]) == 1
    import json

    rep = json.loads(capsys.readouterr().out)
    assert [(v["invariant"], v["depth"]) for v in rep["violations"]] == [("I3.single-writer", 2), ("I1.unique", 5)]
    assert rep["complete"] and rep["states"] > 0
