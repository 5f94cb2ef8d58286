"""The parallel search (issue #20 item 2) and its compact fingerprint set; progress lines (item 4).

The parallel search must give the serial search's counts (distinct states, transitions, max depth,
terminal and settled states, drained checks) and verdicts (each invariant violated and its shortest depth)
on every variant at small bounds, with 1 and 2 workers, with and without symmetry; its counterexamples
must be shortest and replay. A routing that does not send a fingerprint to a single owner (so two
workers keep the same state) is caught by the same comparison.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from variant_sweep import every_variant

import checker.parallel as par
from checker.explorer import explore
from checker.fpset import FPSet, as_u64, collision_probability, u64
from checker.parallel import explore_parallel, owner_of
from checker.protocol import SystemModel
from checker.symmetry import representative_function
from model.protocol.variants import VARIANTS

FAULTS = frozenset({"lost-ack", "task-crash"})
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def small_config(variant, writers=2):
    """As tests/test_explore_symmetry.py: 1 record per split, lost-ack + one task crash; 1 checkpoint where
    async event delivery or an instant per request make 2 too large for a fast test."""
    cfg = VARIANTS[variant].config(parallelism=writers, max_checkpoints=2, records=1, buffer_size=1, faults=FAULTS,
                                   max_crashes=1)
    if cfg.event_delivery == "async" or not cfg.share_instant_per_key:
        cfg = VARIANTS[variant].config(parallelism=writers, max_checkpoints=1, records=1, buffer_size=1,
                                       faults=FAULTS, max_crashes=1)
    return cfg


def summary(res, model) -> dict:
    return dict(states=res.states, transitions=res.transitions, max_depth=res.max_depth,
                terminal=res.terminal_states, settled=res.settled_states, drains=model.drains,
                complete=res.complete, verdicts={n: d.depth for n, d in res.discoveries.items()})


def serial(cfg, symmetry: bool) -> dict:
    model = SystemModel(cfg)
    rep = representative_function(model) if symmetry else None
    res = explore(model, max_states=60_000, stop_on_violation=False, compact=True, symmetry=rep)
    assert res.complete, "the comparison needs the whole space"
    return summary(res, model)


def parallel(cfg, symmetry: bool, workers: int, **kw):
    model = SystemModel(cfg)
    rep = representative_function(model) if symmetry else None
    res = explore_parallel(model, workers=workers, max_states=60_000, stop_on_violation=False, symmetry=rep,
                           progress_seconds=0.05, **kw)
    return res, summary(res, model)


# ------------------------------------------------------------------ parallel = serial, every variant
@pytest.mark.parametrize("symmetry", [False, True], ids=["plain", "symmetry"])
@pytest.mark.parametrize("variant", every_variant())
def test_two_workers_give_the_serial_counts_and_verdicts(variant, symmetry):
    cfg = small_config(variant)
    want = serial(cfg, symmetry)
    res, got = parallel(cfg, symmetry, 2)
    assert got == want
    assert res.workers == 2 and res.rss > 0 and res.fpset_bytes > 0
    assert res.collision_probability == collision_probability(res.states, res.transitions)
    for d in res.discoveries.values():  # every discovery's path is a real run of its length
        assert len(d.states) == d.depth + 1 and len(d.state_ids) == d.depth + 1


@pytest.mark.parametrize("symmetry", [False, True], ids=["plain", "symmetry"])
@pytest.mark.parametrize("variant", ["hudi-1.1", "hudi-1.1-blocking", "broken-commit-eq", "bug-19215",
                                     "blocking-lost-ack-stall"])
def test_one_worker_process_gives_the_serial_counts(variant, symmetry):
    cfg = small_config(variant)
    assert parallel(cfg, symmetry, 1)[1] == serial(cfg, symmetry)


def test_three_workers_and_three_writers_give_the_serial_counts():
    cfg = VARIANTS["hudi-1.1"].config(parallelism=3, max_checkpoints=1, records=1, buffer_size=1, faults=FAULTS,
                                      max_crashes=1)
    want = serial(cfg, True)
    assert parallel(cfg, True, 3)[1] == want


def test_rebalance_plan_evens_out_frontiers_and_leaves_small_differences():
    from checker.parallel import rebalance_plan

    assert rebalance_plan([1, 0]) == [[0, 0], [0, 0]]              # below the least difference worth moving
    assert rebalance_plan([10_000, 0]) == [[0, 5_000], [0, 0]]
    moves = rebalance_plan([9_000, 1_000, 2_001])
    after = [n - sum(moves[i]) + sum(row[i] for row in moves) for i, n in enumerate([9_000, 1_000, 2_001])]
    assert sum(after) == 12_001 and max(after) - min(after) <= 1 and all(moves[i][i] == 0 for i in range(3))
    assert rebalance_plan([1_000, 1_040]) == [[0, 0], [0, 0]]      # within 5 %


def test_two_workers_share_the_expansion_and_an_unbalanced_search_is_caught(monkeypatch):
    """A state stays with the worker that reached it: without moving states between workers every state
    descends from the owner of the initial state (one worker does all the expanding). With rebalancing both
    expand about half, with the serial counts; the same check fails once rebalancing is switched off."""
    from checker import parallel as par

    cfg = VARIANTS["hudi-1.1"].config(parallelism=2, max_checkpoints=2, records=2, buffer_size=1, faults=FAULTS,
                                      max_crashes=1)
    want = serial(cfg, True)

    def balanced(res) -> bool:
        a, b = res.expanded_per_worker
        return min(a, b) >= 0.4 * (a + b)

    res, got = parallel(cfg, True, 2)
    assert got == want and res.moved_states > 0 and sum(res.expanded_per_worker) == res.states
    assert balanced(res), res.expanded_per_worker
    monkeypatch.setattr(par, "rebalance_plan", lambda sizes: [[0] * len(sizes) for _ in sizes])
    res, got = parallel(cfg, True, 2)
    assert got == want and res.moved_states == 0 and not balanced(res), res.expanded_per_worker


def test_bounds_truncate_like_the_serial_search():
    cfg = small_config("hudi-1.1")
    model = SystemModel(cfg)
    a = explore(model, compact=True, max_depth=6)
    b = explore_parallel(SystemModel(cfg), workers=2, max_depth=6)
    assert (b.states, b.transitions, b.max_depth, b.stop_reason) == (a.states, a.transitions, a.max_depth,
                                                                      "max-depth")
    c = explore_parallel(SystemModel(cfg), workers=2, max_states=500)
    assert c.stop_reason == "max-states" and c.states >= 500 and not c.complete


# ------------------------------------------------------------------ counterexamples: shortest, replayable
@pytest.mark.parametrize("symmetry", [False, True], ids=["plain", "symmetry"])
@pytest.mark.parametrize("variant", ["broken-commit-order", "bug-19215", "no-coordinator-snapshot",
                                     "blocking-lost-ack-stall", "broken-commit-eq"])
def test_counterexample_found_in_parallel_is_shortest_and_replays(variant, symmetry, tmp_path):
    from checker.replay import replay
    from lakeio.traces import load_trace, write_trace

    cfg = small_config(variant)
    model = SystemModel(cfg)
    rep = representative_function(model) if symmetry else None
    res = explore_parallel(model, workers=2, max_states=60_000, symmetry=rep)
    ce = res.counterexample
    assert ce is not None and res.stop_reason == "violation"
    first = explore(SystemModel(cfg), max_states=60_000, compact=True).counterexample
    assert ce.depth == first.depth  # shortest: the serial search's first counterexample is at this depth
    every = serial(cfg, False)["verdicts"]
    assert every[ce.property] == ce.depth  # an invariant the serial search finds first at this very depth
    path = write_trace(tmp_path / "ce.jsonl", cfg, model.trace_events(ce), seed=model.seed, driver="explore")
    again = replay(load_trace(path))
    assert not again.ok and again.violation.invariant == ce.property


# ------------------------------------------------------------------ a broken routing is caught
def test_a_routing_that_splits_a_fingerprint_between_owners_is_caught(monkeypatch):
    """Broken on purpose: each worker keeps what it reached (the owner depends on the sender, not on the
    fingerprint), so a state reached by two workers is counted twice: the counts comparison fails."""
    cfg = small_config("hudi-1.1")
    want = serial(cfg, False)
    calls = {"n": 0}

    def by_sender(fp, workers):  # alternates owners for the same fingerprint: not a function of fp
        calls["n"] += 1
        return calls["n"] % workers

    monkeypatch.setattr(par, "owner_of", by_sender)
    _, got = parallel(cfg, False, 2)
    assert got["states"] > want["states"]
    assert got != want


def test_owner_of_is_a_function_of_the_fingerprint_and_spreads_it():
    rng = np.random.default_rng(7)
    fps = [int(x) for x in rng.integers(-2**63, 2**63 - 1, size=20_000, dtype=np.int64)]
    for workers in (1, 2, 3, 8):
        owners = [owner_of(u64(f), workers) for f in fps]
        assert set(owners) == set(range(workers))
        counts = np.bincount(owners, minlength=workers)
        assert counts.min() > 0.8 * len(fps) / workers
    assert owner_of(2**64 - 1, 2) == 1 and owner_of(1, 2) == 0


# ------------------------------------------------------------------ the fingerprint set
def test_fpset_insert_contains_grow_and_parents():
    s = FPSet(16)
    rng = np.random.default_rng(1)
    keys = as_u64(rng.integers(-2**63, 2**63 - 1, size=5_000, dtype=np.int64))
    parents = np.arange(1, 5_001, dtype=np.uint64)
    via = np.arange(5_000, dtype=np.int32) % 7
    assert s.add_batch(keys, parents, via).all()
    assert len(s) == 5_000 and s.capacity >= 5_000 / 0.6  # grew from 16 slots, load <= 0.6
    assert not s.add_batch(keys).any()  # all known now
    assert s.contains_batch(keys).all()
    assert not s.contains_batch(as_u64([12345, -12345])).any()
    for i in (0, 17, 4_999):
        assert s.parent(int(keys[i])) == (i + 1, i % 7)
        assert int(keys[i]) in s
    with pytest.raises(KeyError):
        s.parent(999)


def test_fpset_batch_keeps_the_first_of_repeated_keys_and_matches_a_python_set():
    s = FPSet(16)
    mask = s.add_batch(as_u64([5, 9, 5, 0, 9, 1]), np.array([1, 2, 3, 4, 5, 6], dtype=np.uint64))
    # 0 is stored as 1, so the last key repeats the fourth
    assert mask.tolist() == [True, True, False, True, False, False]
    assert s.parent(5) == (1, 0) and s.parent(0) == (4, 0)
    py: set[int] = set()
    rng = np.random.default_rng(3)
    s = FPSet(16)
    for _ in range(40):  # small key range: many repeats within and across batches, many probe chains
        batch = as_u64(rng.integers(-3_000, 3_000, size=int(rng.integers(0, 400)), dtype=np.int64))
        expected = []
        for k in batch.tolist():
            expected.append(k not in py)
            py.add(k)
        assert s.add_batch(batch).tolist() == expected
    assert len(s) == len(py)


def test_collision_probability_is_tlcs_optimistic_formula():
    # TLC: states * (transitions - states) / 2**64 (tlc2.tool.ModelChecker#reportSuccess)
    assert collision_probability(13_278_453, 44_705_898) == pytest.approx(13_278_453 * 31_427_445 / 2**64)
    assert math.isclose(collision_probability(2**32, 2**32 + 2), 2 / 2**32)
    assert collision_probability(10, 10) == 0.0 and collision_probability(0, 5) == 0.0


# ------------------------------------------------------------------ CLI: --workers and progress lines
def _cli(*args, env_extra=None):
    env = dict(os.environ, PYTHONPATH=ROOT, HOODIE_LAB_PROGRESS_EVERY="0", **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "explore", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT)


BOUND = ["--writers", "2", "--checkpoints", "2", "--records", "1", "--buffer-size", "1", "--faults",
         "lost-ack,task-crash"]


def test_cli_workers_report_the_same_counts_and_tlc_like_progress(tmp_path):
    import json

    one = _cli(*BOUND, "--json", "--out", str(tmp_path))
    two = _cli(*BOUND, "--json", "--workers", "2", "--progress", "--out", str(tmp_path))
    assert one.returncode == 0 and two.returncode == 0, two.stderr
    a, b = json.loads(one.stdout), json.loads(two.stdout)
    for key in ("states", "transitions", "max_depth", "terminal_states", "drained_checks", "complete"):
        assert a[key] == b[key], key
    assert a["workers"] == 1 and b["workers"] == 2 and b["memory_bytes_per_state"] > 0
    lines = [ln for ln in two.stderr.splitlines() if ln.startswith("explore: ")]
    assert lines and "level 22:" in lines[-1] and "distinct states" in lines[-1] and "frontier" in lines[-1]
    assert all("states/s" in ln and "RSS" in ln and "2 workers" in ln for ln in lines)
    assert "level" in lines[0]


def test_cli_parallel_counterexample_is_written_and_replays(tmp_path):
    r = _cli("--variant", "broken-commit-eq", "--writers", "1", "--checkpoints", "2", "--records", "2",
             "--workers", "0", "--out", str(tmp_path))
    assert r.returncode == 1, r.stderr
    assert "VIOLATED I11.subsume at depth 5" in r.stdout and "NOTE" not in r.stdout
    assert list(tmp_path.glob("explore-broken-commit-eq-*.jsonl"))


@pytest.mark.parametrize("args, message", [
    (["--workers", "-1"], "--workers: -1 is out of range"),
    (["--workers", "2", "--exact"], "--exact: the parallel search keeps 64-bit fingerprints"),
    (["--workers", "2", "--graph", "g.png", "--writers", "1"], "--graph: draws the serial search's"),
])
def test_cli_refuses_bad_worker_arguments_in_one_line(args, message, tmp_path):
    r = _cli(*args, "--out", str(tmp_path))
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
