"""Experiments: collisions (TrueTime zero, naive some), TrueTime contention, the CLI, run_named, the sweep."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sim import collisions
from sim import config as cfg


def test_vectorised_naive_times_equal_the_models_naive_generator():
    rng = np.random.default_rng(3)
    sched = collisions.request_schedule(rng, 4, 0.5, 0.05, 120_000)
    offsets = [0, 7, -13, 2]
    fast = collisions.naive_times(sched, offsets)
    slow = collisions.naive_generator_times(sched, offsets)
    assert [list(x) for x in fast] == slow


def test_collisions_without_truetime_at_high_n_and_none_with_truetime():
    exp = cfg.from_dict({"kind": "collisions", "truetime": {"max_skew_ms": 200, "lock_acquire_ms": 5},
                         "collisions": {"writers": [2, 20], "periods_s": [1.0], "days": 0.05, "runs": 3,
                                        "truetime_runs": 1, "truetime_days": 0.005, "clock_offset_ms": 50}})
    rows = collisions.run(exp.params, seed=1)
    high = next(r for r in rows if r["writers"] == 20)
    assert high["p_collision_per_day"] == 1.0 and high["mean_collisions_per_day"] > 1000
    # close to the analytic expectation C(N,2) * 86.4 / T^2 per day
    assert high["mean_collisions_per_day"] == pytest.approx(high["expected_collisions_per_day"], rel=0.25)
    for r in rows:
        assert r["truetime_calls"] > 0
        assert r["truetime_collisions"] == 0
        assert r["truetime_invariant"] == "ok"


def test_the_truetime_check_fails_when_the_skew_wait_is_shorter_than_the_real_skew():
    res = collisions.truetime_run(2, writers=8, period_s=0.05, jitter=0.05, days=0.001, clock_offset_ms=500,
                                  max_skew_ms=1, lock_ms=0)
    assert "VIOLATED" in res["invariant"]


def test_truetime_lock_contention_grows_with_writers_and_times_stay_unique():
    from sim import truetime_study

    exp = cfg.from_dict({"kind": "truetime", "truetime_study": {"writers": [1, 16], "tables": [1],
                                                                  "skews_ms": [200], "request_every_s": 2.0}})
    lo = truetime_study.run_point(exp.params, 1, 1, 200, seed=1, duration_s=120)
    hi = truetime_study.run_point(exp.params, 16, 1, 200, seed=1, duration_s=120)
    assert lo["duplicate_times"] == hi["duplicate_times"] == 0
    assert lo["invariant"] == hi["invariant"] == "ok"
    assert lo["request_p50_s"] >= 0.2  # the skew wait is always paid
    assert hi["request_p99_s"] > 2 * lo["request_p99_s"]
    assert hi["lock_wait_mean_s"] > lo["lock_wait_mean_s"]


def same_rows(a: list[dict], b: list[dict]) -> bool:
    """Rows equal except the measured wall time (NaN equals NaN)."""
    da = pd.DataFrame(a).drop(columns=["wall_s"])
    db = pd.DataFrame(b).drop(columns=["wall_s"])
    return da.equals(db)


TINY = """
name = "tiny"
kind = "stream"
seed = 4
modes = ["blocking", "async"]
[run]
duration_s = 40
quick_duration_s = 40
[source]
rate_rps = 4000
[writers]
parallelism = 2
buffer_records = 1000
[checkpoint]
interval_s = 5
[coordinator]
commit_latency_s = 1.0
[sweep]
"coordinator.commit_latency_s" = [0.1, 2.0]
"checkpoint.interval_s" = [5, 10]
"""


def test_simulate_cli_writes_table_and_plots(tmp_path, capsys):
    from hoodie_lab.cli import main

    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    out = tmp_path / "out"
    assert main(["simulate", str(f), "--out", str(out), "--seed", "9"]) == 0
    df = pd.read_csv(out / "results.csv")
    assert set(df["mode"]) == {"blocking", "async"}
    assert len(df) == 2 + 4 * 2  # the curves + the grid in both modes
    assert (df["invariants"] == "ok").all()
    assert (out / "results.parquet").is_file()
    for stem in ("stream", "sweep-stall", "sweep-throughput"):
        assert (out / f"{stem}.png").stat().st_size > 0 and (out / f"{stem}.svg").is_file()
    assert "tiny" in capsys.readouterr().out


def test_sweep_rows_do_not_depend_on_how_the_grid_runs(tmp_path):
    from hoodie_lab.commands.sweep import run_grid
    from sim.experiments import grid_tasks

    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    exp = cfg.load(str(f))
    tasks = grid_tasks(exp, 4, ("async",), quick=False)
    forward = run_grid(tasks, None)
    backward = run_grid(list(reversed(tasks)), None)[::-1]
    assert same_rows(forward, backward)


@pytest.mark.spark
def test_sweep_on_spark_equals_the_serial_grid(tmp_path, spark):
    from hoodie_lab.commands.sweep import run_grid
    from sim.experiments import grid_tasks

    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    exp = cfg.load(str(f))
    exp.source = str(f)
    tasks = grid_tasks(exp, 4, ("blocking",), quick=False)
    serial = run_grid(tasks, None)
    on_spark = run_grid(tasks, "local[2]")
    assert same_rows(on_spark, serial)


def test_run_named_blocking_vs_async_quick_for_the_demo(tmp_path):
    from sim.experiments import run_named

    outcome = run_named("blocking-vs-async", tmp_path, seed=1, quick=True, grid=False)
    assert outcome.failures == []
    assert {p.suffix for p in outcome.plots} == {".png", ".svg"}
    df = pd.read_csv(outcome.table)
    stall = dict(zip(df["mode"], df["stall_per_checkpoint_s"]))
    assert stall["async"] < 0.2 * stall["blocking"]
