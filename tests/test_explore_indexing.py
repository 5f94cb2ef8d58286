"""Issue #18 item 3: ``explore --machine indexing`` finds the shortest counterexample of every broken indexing
design, and the correct designs pass their bounds exhaustively (and can build the index).

The machine is :mod:`model.mdt.machine`, its designs :mod:`model.mdt.variants`, the adapter
:class:`checker.indexing.IndexingModel`. Each depth is checked three ways: breadth-first search finds exactly
it, a search bounded one step shorter finds nothing, and replaying the actions through the spec's ``step``
reaches a state where the invariant fails while the state before holds it.
"""

from __future__ import annotations

import json

import pytest

from checker.explorer import explore
from checker.indexing import IndexingModel
from model.mdt import machine as mm
from model.mdt.variants import INDEXING_VARIANTS

BROKEN = [n for n, v in INDEXING_VARIANTS.items() if v.expected]
CORRECT = [n for n, v in INDEXING_VARIANTS.items() if not v.expected]

#: Per broken variant, the one design choice whose fix makes the same bound pass.
FIXES = {
    "no-catchup": {"catchup": True},
    "catchup-skips-completed-during-execution": {"recheck_after_wait": True},
    "readers-use-inflight": {"readers_allow_inflight": False},
    "writers-ignore-inflight": {"writers_include_inflight": True},
    "schedule-past-hole": {"upto": mm.CONTIGUOUS},
    "indexer-holds-lock": {"indexer_lock": mm.SHORT},
    "dt-before-mdt": {"commit_order": mm.MDT_FIRST},
    "abort-keeps-partition": {"abort_cleanup": True},
    "mdt-compaction-merges-uncommitted": {"compaction_input": mm.VALID_ONLY},
    "hudi-catchup-by-instant-time": {"catchup_check": "per-partition"},
}


def _violations(cfg, state) -> set[str]:
    return {v.invariant for v in mm.verdicts(cfg, state) if not v.holds}


def test_every_broken_variant_has_a_fix_and_depths():
    assert set(FIXES) == set(BROKEN) and len(BROKEN) >= 5 and len(CORRECT) >= 2
    for n in BROKEN:
        assert set(INDEXING_VARIANTS[n].depths) == set(INDEXING_VARIANTS[n].expected)


@pytest.mark.parametrize("name", BROKEN)
def test_explore_finds_the_shortest_counterexample(name):
    # no-catchup, 7: w1 start, write, i schedule, w1 commit (record_index not inflight: not written), complete,
    #   i execute (base up to T0), i complete.
    # catchup-skips-completed-during-execution, 9: w1 start, write, i schedule, w1 commit (lock held, partition
    #   absent), i execute (w1 pending in the list), w1 complete, i catchup (T0), i catchup (w1: waited-for,
    #   not rechecked), i complete.
    # readers-use-inflight: readable-when-completed at 2 (i schedule, i execute); index-equals-rebuild at 6
    #   (w1 start, write, i schedule, w1 commit, w1 complete, i execute).
    # writers-ignore-inflight, 8: i schedule, execute, w1 start, write, commit, complete, i catchup (T0), complete.
    # schedule-past-hole, 12: w1 start, write; w2 start, write, commit, complete; i schedule (upto w2);
    #   w1 commit; i execute; w1 complete; i catchup (w2); i complete.
    # indexer-holds-lock, 2: i schedule, i execute (lock held across steps).
    # dt-before-mdt, 3: w1 start, write, commit (DT completed, MDT not yet).
    # abort-keeps-partition, 5: w1 start, i schedule, i execute, i catchup (T0), i timeout (w1 alive).
    # mdt-compaction-merges-uncommitted, 5: w1 start, write, commit (MDT dc), fail, m compact.
    # hudi-catchup-by-instant-time, 9: w1 start, write, i schedule, w1 commit, complete, i execute, i catchup x2,
    #   i complete.
    v = INDEXING_VARIANTS[name]
    cfg = v.config()
    res = explore(IndexingModel(cfg), stop_on_violation=False)
    assert res.complete
    found = {d.property: d for d in res.counterexamples}
    assert set(found) == set(v.expected), f"{name}: found {sorted(found)}"
    for inv, depth in v.depths.items():
        d = found[inv]
        assert d.depth == depth, f"{name}: {inv} at depth {d.depth}, recorded {depth}"
        shorter = explore(IndexingModel(cfg), max_depth=depth - 1, stop_on_violation=False)
        assert inv not in {x.property for x in shorter.counterexamples}
        s = mm.initial_state(cfg)
        states = [s]
        for a in d.actions:
            s = mm.step(cfg, s, a)
            states.append(s)
        assert inv in _violations(cfg, states[-1]) and inv not in _violations(cfg, states[-2])
        assert states[-1].fingerprint() == d.states[-1].fingerprint()


@pytest.mark.parametrize("name", BROKEN)
def test_the_fix_passes_the_same_bound(name):
    cfg = INDEXING_VARIANTS[name].config(**FIXES[name])
    res = explore(IndexingModel(cfg), stop_on_violation=False)
    assert res.complete and not res.counterexamples, [d.property for d in res.counterexamples]
    assert "index-built" in res.discoveries


FAST_CORRECT = [n for n in CORRECT if n != "hudi-1.x-failures"]


@pytest.mark.parametrize("name", FAST_CORRECT)
def test_correct_design_passes_exhaustively(name):
    res = explore(IndexingModel(INDEXING_VARIANTS[name].config()), stop_on_violation=False)
    assert res.complete and not res.counterexamples and res.states > 1000
    assert res.discoveries["index-built"].depth == 4  # schedule, execute, catchup T0, complete


def test_failures_design_small_bound_passes():
    """hudi-1.x-failures at one writer (its full bound, 98,425 states, is the slow test below)."""
    res = explore(IndexingModel(INDEXING_VARIANTS["hudi-1.x-failures"].config(writers=1)), stop_on_violation=False)
    assert res.complete and not res.counterexamples and "index-built" in res.discoveries


@pytest.mark.slow
def test_failures_design_passes_exhaustively():
    res = explore(IndexingModel(INDEXING_VARIANTS["hudi-1.x-failures"].config()), stop_on_violation=False)
    assert res.complete and not res.counterexamples and res.states == 98425


# ------------------------------------------------------------------------------------------ CLI
def _cli(capsys, *argv):
    from hoodie_lab.cli import main

    code = main(["explore", "--machine", "indexing", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_reports_a_counterexample(capsys):
    code, out, _ = _cli(capsys, "--variant", "no-catchup", "--writers", "1")
    assert code == 1
    assert "VIOLATED I17.index-equals-rebuild at depth 7" in out and "7. i complete" in out


def test_cli_correct_design_exit_0_and_json(capsys):
    code, out, _ = _cli(capsys, "--writers", "1", "--json")
    rep = json.loads(out)
    assert code == 0 and rep["violations"] == [] and rep["complete"] and rep["index_built_at_depth"] == 4


@pytest.mark.parametrize("argv,needle", [
    (["--concurrency-mode", "single_writer"], "--concurrency-mode: hoodie.write.concurrency.mode"),
    (["--lock-provider", "none"], "--lock-provider: hoodie.write.lock.provider"),
    (["--mdt-partition", "nope"], "--mdt-partition: index type 'nope' is unknown"),
    (["--mdt-partition", "files"], "--mdt-partition: index files already exists"),
    (["--index", "bucket"], "--index: not an option of --machine indexing"),
    (["--variant", "nope"], "--variant: unknown indexing variant"),
    (["--writers", "4"], "--writers: 4 is out of range"),
    (["--timeouts", "9"], "--timeouts: 9 is out of range"),
    (["--faults", "none"], "--faults: not an option of --machine indexing"),
])
def test_cli_bad_settings_exit_2_one_line(capsys, argv, needle):
    code, out, err = _cli(capsys, *argv)
    assert code == 2 and needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_cli_unknown_concurrency_mode_is_an_argparse_error(capsys):
    import pytest as _pt

    with _pt.raises(SystemExit) as e:
        _cli(capsys, "--concurrency-mode", "BOGUS")
    assert e.value.code == 2 and "invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize("index", ["column_stats", "bloom_filters"])
def test_other_index_types_build(capsys, index):
    code, out, _ = _cli(capsys, "--writers", "1", "--mdt-partition", index, "--concurrency-mode", "nbcc")
    assert code == 0 and f"index {index}" in out and "no invariant violated" in out
