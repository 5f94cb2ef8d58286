"""The indexing simulation (issue #18 item 5): an index build beside streaming writers leaves write latency where
it was (up to the one extra MDT append a commit makes into the inflight partition), a short catch-up timeout
aborts and retries, the built index equals the rebuild (I17, checked by the run), a broken writer rule is caught
by that check, and bad settings exit 2 naming the key."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lakeio.errors import UserError
from sim import config as cfg
from sim import indexing

SMALL = {"kind": "indexing", "indexing": {"duration_s": 400, "quick_duration_s": 200, "file_groups": 64,
                                          "writers": 4, "slow_write_prob": 0.2, "slow_write_s": 90,
                                          "start_after_s": 30, "repetitions": 2}}


def _params(**over):
    d = {**SMALL, "indexing": {**SMALL["indexing"], **over}}
    return cfg.from_dict(d).params


def test_write_latency_does_not_move_and_the_index_is_built():
    p = _params()
    no = indexing.run(p, "no-indexer", seed=3)
    yes = indexing.run(p, "indexer", seed=3, timeout_s=900)
    assert no.summary["commits"] == yes.summary["commits"] > 50
    assert yes.summary["indexed"] and yes.summary["tries"] == 1 and yes.failures == []
    assert yes.summary["build_s"] == pytest.approx(64 * 0.2 + 0.05)
    # each commit appends to one more MDT partition while it is inflight or available: at most 40 ms more
    extra = yes.summary["latency_p50_s"] - no.summary["latency_p50_s"]
    assert 0 <= extra <= 0.040 + 1e-9
    assert yes.summary["latency_p99_s"] - no.summary["latency_p99_s"] <= 0.040 + 1e-9


def test_short_timeout_aborts_and_retries_without_a_trace():
    p = _params(max_retries=1)
    rows = [indexing.run(p, "indexer", seed=s, timeout_s=5) for s in range(6)]
    assert sum(r.summary["aborts"] for r in rows) >= 3
    assert all(r.failures == [] and r.summary["invariants"] == "ok" for r in rows)
    events = [w for r in rows for _, w in r.events]
    assert any(w.startswith("aborted") for w in events)


def test_same_seed_same_run():
    p = _params()
    a, b = indexing.run(p, "indexer", seed=9, timeout_s=60), indexing.run(p, "indexer", seed=9, timeout_s=60)
    assert a.latencies == b.latencies and a.events == b.events


def test_a_writer_ignoring_the_inflight_partition_is_caught(monkeypatch):
    """The run's I17 check can fail: with writers that update available partitions only, commits that land
    between the catch-up list and the completion are missing from the built index."""
    p = _params(slow_write_prob=0.0, fail_prob=0.0, poll_s=20, write_s=2.0)
    good = [indexing.run(p, "indexer", seed=s, timeout_s=900) for s in range(8)]
    assert all(r.summary["indexed"] and not r.failures for r in good)
    monkeypatch.setattr(indexing.P, "writer_partitions", lambda states, **_: states.available)
    bad = [indexing.run(p, "indexer", seed=s, timeout_s=900) for s in range(8)]
    caught = [r for r in bad if r.failures]
    assert caught, "no seed caught writers that ignore the inflight partition"
    f = caught[0].failures[0]
    assert f.startswith("I17.index-equals-rebuild: record_index misses") and f"--seed {caught[0].seed}" in f


@pytest.mark.parametrize("over,needle", [
    ({"concurrency_mode": "SINGLE_WRITER"}, "indexing.concurrency_mode: hoodie.write.concurrency.mode"),
    ({"lock_provider": ""}, "indexing.lock_provider: hoodie.write.lock.provider"),
    ({"index": "files"}, "indexing.index: index files already exists"),
    ({"index": "nope"}, "indexing.index: index type 'nope' is unknown"),
    ({"catchup_timeouts_s": []}, "indexing.catchup_timeouts_s"),
    ({"catchup_timeouts_s": [0]}, "indexing.catchup_timeouts_s"),
    ({"writers": 0}, "indexing.writers"),
])
def test_bad_settings_name_the_key(over, needle):
    with pytest.raises(UserError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        cfg.from_dict({**SMALL, "indexing": {**SMALL["indexing"], **over}})


def test_cli_quick_run_and_bad_file(tmp_path):
    import os
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "simulate", "indexing", "--quick", "--out", str(out)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "indexer" in r.stdout and (out / "results.csv").exists() and (out / "indexing.png").exists()
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\nkind = "indexing"\n[indexing]\nconcurrency_mode = "SINGLE_WRITER"\n')
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "simulate", str(bad)], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 2 and "indexing.concurrency_mode" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "runs").exists()
