"""Progress on stderr (issue #21, item 8): shown when forced (``--progress`` or ``HOODIE_LAB_PROGRESS=1``),
absent by default when stderr is not a terminal, and never changing stdout (tables, ``--json``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TIMING_KEYS = {"elapsed_s", "cpu_s", "states_per_second", "states_per_cpu_second"}


def _cli(args, cwd, progress: str | None = None, every: str = "0"):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               HOODIE_LAB_PROGRESS_EVERY=every)
    env.pop("HOODIE_LAB_PROGRESS", None)
    if progress is not None:
        env["HOODIE_LAB_PROGRESS"] = progress
    return subprocess.run([sys.executable, "-m", "hoodie_lab.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)


def _untimed(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in TIMING_KEYS}


def test_explore_progress_lines_when_forced_and_json_unchanged(tmp_path):
    args = ["explore", "--writers", "1", "--checkpoints", "2", "--json", "--out", str(tmp_path / "o")]
    plain = _cli(args, tmp_path)
    forced = _cli(args, tmp_path, progress="1")
    flag = _cli([*args, "--progress"], tmp_path)
    assert plain.returncode == forced.returncode == flag.returncode == 0
    assert plain.stderr == ""  # not a terminal: off unless forced
    assert _untimed(json.loads(forced.stdout)) == _untimed(json.loads(plain.stdout))
    assert _untimed(json.loads(flag.stdout)) == _untimed(json.loads(plain.stdout))
    for r in (forced, flag):
        lines = [ln for ln in r.stderr.splitlines() if ln.startswith("explore: ")]
        assert lines, r.stderr
        last = lines[-1]
        for word in ("states", "transitions", "frontier", "depth", "states/s", "RSS", "MiB"):
            assert word in last, (word, last)
    assert _cli([*args, "--no-progress"], tmp_path, progress="1").stderr == ""


def test_explore_prints_an_estimate_before_a_large_bound(tmp_path):
    from hoodie_lab.commands.explore import estimate
    from model.protocol import variant

    big = variant("hudi-1.1", parallelism=2, max_checkpoints=4, max_crashes=1,
                  faults=frozenset({"lost-ack", "task-crash", "coordinator-crash", "full-restart"}))
    assert "at least 13,278,453 states" in estimate(big)
    assert estimate(variant("hudi-1.1", parallelism=2, max_checkpoints=2)) is None
    r = _cli(["explore", "--writers", "2", "--checkpoints", "3", "--faults",
              "lost-ack,task-crash,coordinator-crash,full-restart", "--max-states", "3000", "--progress",
              "--out", str(tmp_path / "o")], tmp_path)
    assert r.returncode == 0, r.stderr
    first = r.stderr.splitlines()[0]
    assert first.startswith("explore: estimate: at least 13,278,453 states") and "--max-states" in first
    assert "NOT exhaustive" in r.stdout


def test_simulate_progress_when_forced_and_table_unchanged(tmp_path):
    args = ["simulate", "blocking-vs-async", "--quick", "--no-sweep", "--out", str(tmp_path / "o")]
    plain = _cli(args, tmp_path)
    forced = _cli(args, tmp_path, progress="1")
    assert plain.returncode == forced.returncode == 0, forced.stderr
    assert plain.stderr == ""
    assert forced.stdout == plain.stdout
    assert "curves: 0/2" in forced.stderr and "curves: 2/2 (100 %)" in forced.stderr
    assert "ETA" in forced.stderr  # after the first run the rate is known
    # every shown column is explained, and an unsampled value is '-' rather than nan
    assert "columns: mode = " in plain.stdout and "pt = grid point" in plain.stdout
    assert "nan" not in plain.stdout


def test_progress_bar_plain_lines_and_off(monkeypatch):
    from hoodie_lab.commands.common import progress_bar

    with progress_bar(False) as progress:
        step = progress("x", 3)
        step()  # a no-op, and nothing printed
    import contextlib
    import io

    buf = io.StringIO()
    monkeypatch.setenv("HOODIE_LAB_PROGRESS_EVERY", "0")
    with contextlib.redirect_stderr(buf):
        with progress_bar(True) as progress:
            step = progress("runs", 2)
            step()
            step()
    out = buf.getvalue().splitlines()
    assert out[0] == "runs: 0/2 (0 %), 0 s elapsed"
    assert out[-1].startswith("runs: 2/2 (100 %)")


def test_pipeline_says_starting_spark_before_the_session_starts(tmp_path, monkeypatch, capsys):
    """The line comes before ``run_job`` (which starts the Spark session); checked by recording what stderr
    held when run_job was called (the run itself is the pipeline tests' business)."""
    import pipeline.job as job
    from hoodie_lab.cli import main

    monkeypatch.delenv("HOODIE_LAB_PROGRESS", raising=False)
    seen = {}

    def recording_run_job(root, progress=None):
        seen["stdout"], seen["stderr"] = capsys.readouterr()
        return {"batch_seconds": [], "batches": 0, "records": 0, "quarantined": 0, "commits": [], "seconds": 0.0}

    monkeypatch.setattr(job, "run_job", recording_run_job)
    rc = main(["pipeline", "run", "--out", str(tmp_path / "run"), "--records", "10", "--batches", "1", "--progress"])
    assert rc == 0
    assert seen["stderr"].startswith("starting Spark (local[2])…")
    # the batch lines' columns are explained before them, and the last line's figures are labelled as totals
    assert "per batch: checkpoint = " in seen["stdout"] and "files = data files it wrote" in seen["stdout"]
    assert capsys.readouterr().out.startswith("finished, totals: 0 batches")
    rc = main(["pipeline", "run", "--out", str(tmp_path / "run2"), "--records", "10", "--batches", "1"])
    assert "starting Spark" not in seen["stderr"] + capsys.readouterr().err  # off: stderr is not a terminal
