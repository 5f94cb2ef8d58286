"""Experiment files: shipped ones load; bad ones exit 2 with one line naming the key and the allowed range."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lakeio.errors import UserError
from sim import config as cfg


def test_every_shipped_experiment_loads():
    names = cfg.shipped_names()
    assert {"blocking-vs-async", "truetime", "collisions", "recovery", "reference"} <= set(names)
    for n in names:
        exp = cfg.load(n)
        assert exp.name == n
        assert exp.kind in cfg.KINDS


def test_defaults_fill_in_and_sweep_grid():
    exp = cfg.from_dict({"writers": {"parallelism": 3},
                         "sweep": {"checkpoint.interval_s": [5, 10], "coordinator.commit_latency_s": [0.1, 1]}})
    assert exp.get("writers.parallelism") == 3
    assert exp.get("checkpoint.interval_s") == cfg.SCHEMA["checkpoint"]["interval_s"].default
    assert len(exp.grid()) == 4
    pt = exp.with_values({"checkpoint.interval_s": 5})
    assert pt.get("checkpoint.interval_s") == 5


def test_sweep_with_unquoted_dotted_keys():
    exp = cfg.from_dict({"sweep": {"checkpoint": {"interval_s": [5, 10]}}})
    assert exp.sweep == {"checkpoint.interval_s": [5, 10]}


@pytest.mark.parametrize("raw, words", [
    ({"writers": {"parallelism": 0}}, ["writers.parallelism", ">= 1"]),
    ({"storage": {"median_ms": -1.0}}, ["storage.median_ms", ">= 0"]),
    ({"coordinator": {"commit_latency_s": -0.5}}, ["coordinator.commit_latency_s", ">= 0"]),
    ({"checkpoint": {"interval_s": 0}}, ["checkpoint.interval_s", "> 0"]),
    ({"writers": {"paralelism": 4}}, ["writers.paralelism", "parallelism"]),
    ({"bogus": {"x": 1}}, ["[bogus]", "allowed"]),
    ({"kind": "nope"}, ["kind", "stream"]),
    ({"checkpoint": {"alignment": "sometimes"}}, ["checkpoint.alignment", "aligned", "unaligned"]),
    ({"checkpoint": {"inflight_kb": -1}}, ["checkpoint.inflight_kb", ">= 0"]),
    ({"modes": ["sync"]}, ["modes", "blocking"]),
    ({"faults": {"lost_ack_probability": 1.5}}, ["faults.lost_ack_probability", "<= 1"]),
    ({"writers": {"parallelism": 2.5}}, ["writers.parallelism", "integer"]),
    ({"sweep": {"writers.parallelism": [4, 0]}}, ["writers.parallelism", ">= 1"]),
    ({"sweep": {"nope.x": [1]}}, ["nope.x"]),
    ({"kind": "collisions", "collisions": {"writers": [1, 2]}}, ["collisions.writers", ">= 2"]),
])
def test_bad_values_name_the_key_and_range(raw, words):
    with pytest.raises(UserError) as exc:
        cfg.from_dict(raw, "x.toml")
    msg = str(exc.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, msg


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "hoodie_lab.cli", *args], capture_output=True, text=True)


@pytest.mark.parametrize("body, key", [
    ("[writers]\nparallelism = 0\n", "writers.parallelism"),
    ("[storage]\nmedian_ms = -5\n", "storage.median_ms"),
    ("[writers]\nunknown_key = 1\n", "writers.unknown_key"),
    ("this is = = not toml\n", "not valid TOML"),
])
def test_cli_bad_experiment_file_exits_2_with_one_line(tmp_path, capsys, body, key):
    from hoodie_lab.cli import main

    f = tmp_path / "bad.toml"
    f.write_text(body)
    for cmd in ("simulate", "sweep"):
        assert main([cmd, str(f), "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and key in lines[0], err
    assert not (tmp_path / "out").exists()


def test_cli_missing_file_and_unknown_name_exit_2(tmp_path):
    for arg in (str(tmp_path / "missing.toml"), "no-such-experiment"):
        r = _cli("simulate", arg)  # a real process: exit status and stderr as a user sees them
        assert r.returncode == 2
        assert len(r.stderr.strip().splitlines()) == 1 and arg in r.stderr and "Traceback" not in r.stderr


def test_cli_list_names_shipped_experiments(capsys):
    from hoodie_lab.cli import main

    assert main(["simulate", "--list"]) == 0
    out = capsys.readouterr().out
    assert "blocking-vs-async" in out and "collisions" in out


def test_sample_bound_is_exact_at_the_edge():
    """run.duration_s / run.sample_s may reach MAX_SAMPLES and no further (item 5 of issue #21)."""
    dur = 600.0
    ok = cfg.from_dict({"run": {"duration_s": dur, "quick_duration_s": 60.0, "sample_s": dur / cfg.MAX_SAMPLES}})
    assert ok.get("run.sample_s") == dur / cfg.MAX_SAMPLES
    with pytest.raises(UserError, match=r"run\.sample_s: .*allowed: >= 0\.0006 s"):
        cfg.from_dict({"run": {"duration_s": dur, "sample_s": dur / cfg.MAX_SAMPLES / 2}})


def test_collision_work_counts_what_the_runs_make():
    """collision_work counts the requests sim.collisions.request_schedule allocates (n per writer, for the
    shortest jittered gap T (1 - jitter)): at least the requests made, at most that bound above them."""
    import numpy as np

    from sim.collisions import DAY_MS, request_schedule

    params = cfg.from_dict({"kind": "collisions", "collisions": {"writers": [3], "periods_s": [60.0], "days": 0.5,
                                                                 "runs": 4, "quick_runs": 2, "truetime_runs": 1,
                                                                 "truetime_days": 0.1}}).params
    per_run, total, calls = cfg.collision_work(params)
    sched = request_schedule(np.random.default_rng(1), 3, 60.0, params["collisions"]["jitter"], 0.5 * DAY_MS)
    made = sum(len(s) for s in sched)
    assert made <= per_run <= made / (1 - params["collisions"]["jitter"]) + 3 * 2
    assert total == 4 * per_run
    assert calls == 3 * int(np.ceil(0.1 * 86_400 / (60.0 * (1 - params["collisions"]["jitter"]))))


@pytest.mark.parametrize("name", ["../x", "a/b", "a..b", "/abs", "", ".hidden", "x" * 101])
def test_names_that_are_not_a_plain_directory_name_are_refused(name):
    with pytest.raises(UserError, match=r"x\.toml: name: "):
        cfg.from_dict({"name": name}, "x.toml")


def test_collision_work_counts_every_clock_resolution():
    one = cfg.from_dict({"kind": "collisions", "collisions": {"resolutions_ms": [1]}}).params
    two = cfg.from_dict({"kind": "collisions", "collisions": {"resolutions_ms": [1, 1000]}}).params
    a, b = cfg.collision_work(one), cfg.collision_work(two)
    assert b == (a[0], 2 * a[1], 2 * a[2])
