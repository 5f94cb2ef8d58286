"""Crash injection: the driver is SIGKILLed at kill points (during a data write, after write metadata is
persisted, between the steps of a commit, during an async commit) and restarted on the same checkpoint. After
recovery no record is lost or duplicated (hudi-rs and the model), the table passes `hoodie-lab audit` and the
run has no difference from the model's prediction."""

from __future__ import annotations

import zlib

import pytest

from pipeline.crash import KILL_POINTS, KillSpec, run_with_crashes, seeded_plan

pytestmark = pytest.mark.spark


def _check_recovered(root, spark=None):
    from hudi import HudiTable

    from lakeio.audit import audit_table
    from pipeline import source as src
    from pipeline.diff import diff_run
    from pipeline.run_dir import RunDir

    rd = RunDir(root)
    want = {}
    for lines in src.read_inputs(rd.input):
        for rec, _ in lines:
            if rec is not None:
                want[rec.key] = rec.ts
    rows = [r for b in HudiTable(str(rd.table)).read()
            for r in zip(b.column("key").to_pylist(), b.column("ts").to_pylist())]
    keys = [k for k, _ in rows]
    assert len(keys) == len(set(keys)), "duplicated records after recovery"
    assert dict(rows) == want, "lost or stale records after recovery"
    report = diff_run(root, spark=spark)
    assert report.ok, report.render()
    assert any("exactly once" in c for c in report.checked)
    assert audit_table(str(rd.table)).exit_code == 0
    # the run's trace (with its restarts) replays through the model with every invariant holding
    from hoodie_lab.cli import main as cli
    assert cli(["replay", str(rd.trace)]) == 0


def test_kills_at_several_points_recover_exactly_once(tmp_path):
    from pipeline.job import prepare_run

    root = tmp_path / "run"
    prepare_run(root, mode="async", table_type="mor", records=160, batches=4, seed=21, malformed=2)
    plan = [KillSpec("write.mid", 2), KillSpec("writemeta.persisted", 1), KillSpec("async.commit", 1),
            KillSpec("commit.after-complete", 1)]
    attempts = run_with_crashes(root, plan, timeout=240)
    assert [a.killed for a in attempts] == [True, True, True, True, False]
    assert attempts[-1].returncode == 0
    from pipeline.run_dir import RunDir
    crashes = [e["point"] for e in RunDir(root).read_events() if e["kind"] == "crash"]
    assert crashes == [k.point for k in plan]
    _check_recovered(root)


def test_seeded_plans_are_reproducible():
    a = seeded_plan(3, batches=6, kills=5)
    assert a == seeded_plan(3, batches=6, kills=5) and a != seeded_plan(4, batches=6, kills=5)
    assert all(k.point in KILL_POINTS and 1 <= k.hit <= 3 for k in a)
    assert KillSpec.parse("commit.before-complete#2") == KillSpec("commit.before-complete", 2)
    with pytest.raises(ValueError):
        KillSpec.parse("commit.before-complete#0")


@pytest.mark.slow
@pytest.mark.parametrize("mode,table_type", [("blocking", "cow"), ("blocking", "mor"), ("async", "cow"),
                                             ("spark-sink", "mor"), ("spark-sink", "cow")])
def test_seeded_crash_matrix(tmp_path, spark, mode, table_type):
    """Slow: seeded random kill points for every mode and table type (`pytest -m slow`)."""
    from pipeline.job import prepare_run

    root = tmp_path / "run"
    prepare_run(root, mode=mode, table_type=table_type, records=200, batches=5, seed=5, malformed=3)
    seed = zlib.crc32(f"{mode}-{table_type}".encode()) % 1000
    run_with_crashes(root, seeded_plan(seed, batches=5, kills=3), timeout=300)
    _check_recovered(root, spark if table_type == "cow" else None)
