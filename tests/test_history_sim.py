"""The history simulation: archival keeps the active timeline bounded, its decisions come from the spec, invariants
hold; without archival the timeline and the commit latency grow; bad settings exit 2 naming the key."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lakeio.errors import UserError
from sim import config as cfg
from sim import history

SMALL = {"kind": "history", "history": {"days": 0.2, "quick_days": 0.1, "commit_every_s": 60,
                                        "lookup_age_commits": 100}}


def test_archival_bounds_the_active_timeline_and_builds_lsm_levels():
    exp = cfg.from_dict(SMALL)
    a = history.run(exp.params, "archival", seed=1)
    n = history.run(exp.params, "no-archival", seed=1)
    assert a.summary["commits"] == n.summary["commits"] == 288
    assert a.summary["active_instants_max"] <= 30 + 10
    assert n.summary["active_instants_max"] == 288
    assert a.summary["lsm_levels"] >= 2 and a.summary["archival_runs"] >= 10
    assert a.failures == [] and a.summary["invariants"] == "ok"
    assert n.summary["listing_ms_last"] > 10 * a.summary["listing_ms_last"]
    assert a.summary["lookup_ms_max"] > 0  # old instants are looked up in the LSM history
    assert all("keep.max 30" in d for d in a.series.decisions)


def test_same_seed_same_series():
    exp = cfg.from_dict(SMALL)
    r1, r2 = history.run(exp.params, "archival", seed=5), history.run(exp.params, "archival", seed=5)
    assert r1.series.latency_s == r2.series.latency_s


def test_flink_preset_keeps_50():
    exp = cfg.from_dict({**SMALL, "history": {**SMALL["history"], "preset": "flink"}})
    a = history.run(exp.params, "archival", seed=1)
    assert 40 <= a.series.active_instants[-1] <= 50 and all("keep.max 50" in d for d in a.series.decisions)


@pytest.mark.parametrize("bad,key", [({"keep_max_commits": 20, "keep_min_commits": 20}, "hoodie.keep.max.commits"),
                                     ({"timeline_compaction_batch": 1}, "history.timeline_compaction_batch")])
def test_impossible_settings_refused(bad, key):
    with pytest.raises(UserError) as e:
        cfg.from_dict({**SMALL, "history": {**SMALL["history"], **bad}})
    assert key in str(e.value) and "\n" not in str(e.value)


def test_cli_runs_quick_and_refuses_bad_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "history"\n[history]\nkeep_max_commits = 10\nkeep_min_commits = 12\n')
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "simulate", str(bad), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "hoodie.keep.max.commits" in r.stderr and "Traceback" not in r.stderr
    good = tmp_path / "good.toml"
    good.write_text('kind = "history"\nname = "h"\n[history]\nquick_days = 0.05\n')
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "simulate", str(good), "--quick", "--out",
                        str(tmp_path / "o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "o" / "history.png").exists() and (tmp_path / "o" / "decisions.txt").exists()
