"""Issue #17 item 4: ``explore`` finds the shortest counterexample of every broken concurrency design at small
bounds, and the correct designs pass the same bounds exhaustively.

The machine is :mod:`model.concurrency.machine` (spec), its designs :mod:`model.concurrency.variants`, the
adapter :class:`checker.concurrency.ConcurrencyModel`. Each broken variant's depths are checked three ways:
BFS finds exactly that depth, a search bounded one step shorter finds nothing, and replaying the actions
through the spec reaches a state where the invariant fails (its prefix does not). Its ``fix`` (one design
choice) passes the same bound.
"""

from __future__ import annotations

import json

import pytest

from checker.concurrency import ConcurrencyModel
from checker.explorer import explore
from model.concurrency import machine as cm
from model.concurrency.variants import VARIANTS

BROKEN = [n for n, v in VARIANTS.items() if v.expected]
CORRECT = [n for n, v in VARIANTS.items() if not v.expected]
#: Fixes that remove the variant's own break but then meet the log-only-group finding (same bound).
FINDING = "log-only-group-pending-first"
FIX_MEETS_FINDING = {"nbcc-simple-index", "occ-simple-index-insert"}
#: Issue #17 item 4's list, each a named broken variant.
ITEM4 = {"occ-no-lock", "occ-ignores-pending-compaction", "nbcc-cow", "nbcc-simple-index", "nbcc-eager",
         "single-writer-0.x-no-guard", "clean-ignores-plans", "clean-ignores-savepoints", "naive-overwrite"}


def test_every_item4_shape_is_a_broken_variant_with_depths_and_a_fix():
    assert ITEM4 <= set(BROKEN) and len(CORRECT) >= 8
    for n in BROKEN:
        v = VARIANTS[n]
        assert set(v.depths) == set(v.expected) and v.fix, n


@pytest.mark.parametrize("name", BROKEN)
def test_explore_finds_the_shortest_counterexample(name):
    v = VARIANTS[name]
    cfg = v.config()
    res = explore(ConcurrencyModel(cfg), stop_on_violation=False)
    assert res.complete
    found = {d.property: d for d in res.counterexamples}
    assert set(found) == set(v.expected), f"{name}: found {sorted(found)}"
    for inv, depth in v.depths.items():
        d = found[inv]
        assert d.depth == depth, f"{name}: {inv} at depth {d.depth}, expected {depth}"
        shorter = explore(ConcurrencyModel(cfg), max_depth=depth - 1, stop_on_violation=False)
        assert inv not in {x.property for x in shorter.counterexamples}
        states = cm.run(cfg, d.actions)
        assert inv in cm.violated(cfg, states[-1]) and inv not in cm.violated(cfg, states[-2])
        assert states[-1].fingerprint() == d.states[-1].fingerprint()


@pytest.mark.parametrize("name", BROKEN)
def test_the_fix_passes_the_same_bound(name):
    v = VARIANTS[name]
    res = explore(ConcurrencyModel(v.fixed()), stop_on_violation=False)
    assert res.complete
    found = {d.property for d in res.counterexamples}
    if name in FIX_MEETS_FINDING:
        assert not found & {"oracle.no-duplicate-key"} and found == set(VARIANTS[FINDING].expected)
    else:
        assert not found, f"{name} fixed still breaks {sorted(found)}"


@pytest.mark.parametrize("name", CORRECT)
def test_correct_designs_pass_exhaustively(name):
    res = explore(ConcurrencyModel(VARIANTS[name].config()), stop_on_violation=False)
    assert res.complete and res.states > 5
    assert not res.counterexamples, [(d.property, d.depth) for d in res.counterexamples]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["occ", "nbcc"])
def test_two_commits_each_pass_with_a_compactor(mode):
    """The benchmark's shape at a smaller key count: 2 writers x 2 commits + 1 compactor, 1 key."""
    v = VARIANTS["occ-mor-compaction" if mode == "occ" else "nbcc"]
    res = explore(ConcurrencyModel(v.config(commits=2, keys=1)), stop_on_violation=False)
    assert res.complete and res.states > 1000 and not res.counterexamples


# ------------------------------------------------------------------------------ the CLI
def _cli(capsys, *argv):
    from hoodie_lab.cli import main

    code = main(["explore", "--machine", "concurrency", *argv])
    return code, capsys.readouterr()


def test_cli_prints_the_counterexample_and_exits_1(capsys):
    code, out = _cli(capsys, "--variant", "nbcc-eager")
    assert code == 1
    assert "VIOLATED C.lazy-rollback at depth 3" in out.out and "1. w1 generate" in out.out


def test_cli_correct_design_exits_0_and_json(capsys):
    code, out = _cli(capsys, "--variant", "nbcc", "--json")
    rep = json.loads(out.out)
    assert code == 0 and rep["complete"] and rep["violations"] == [] and rep["states"] > 100


@pytest.mark.parametrize("argv, words", [
    (["--variant", "nbcc", "--table-type", "cow", "--compactions", "0"], "MOR table with simple bucket index"),
    (["--variant", "nbcc", "--index", "simple"], "MOR table with simple bucket index"),
    (["--variant", "occ-cow", "--lock-provider", "none"], "hoodie.write.lock.provider"),
    (["--variant", "nbcc", "--failed-writes", "eager"], "LAZY"),
    (["--variant", "nope"], "unknown concurrency variant"),
    (["--commits", "9"], "--commits: 9 is out of range"),
    (["--writers", "7"], "--writers: 7 is out of range"),
    (["--faults", "lost-ack"], "--faults: only for --machine protocol"),
])
def test_cli_refuses_bad_settings_with_one_line_exit_2(capsys, argv, words):
    code, out = _cli(capsys, *argv)
    assert code == 2 and words in out.err and len(out.err.strip().splitlines()) == 1 and "Traceback" not in out.err
