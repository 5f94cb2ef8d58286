"""Task retries and duplicate attempts are safe (issue #19 item 2): every data file gets a direct marker before it
is written, the driver reconciles the instant's markers with the write statuses of the successful attempts and
deletes the files of failed or duplicate attempts, and rollback uses the markers.

Faults are injected into real Spark tasks (``RUN_DIR/crash/task_faults.json``, :mod:`pipeline.executor`): a
task attempt that raises after its first data file and a Python worker SIGKILLed after its first data file
(Spark retries both: ``local[2,4]``, ``spark.task.maxFailures`` 4), and a duplicate attempt writing the same
file groups under another attempt id (a speculative copy whose result Spark drops). No record is lost or
duplicated, ``audit`` and ``diff`` pass; with reconciliation switched off the diff catches the leftover files."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.spark


def _prepare(tmp_path, faults, **kw):
    from pipeline.job import prepare_run

    root = tmp_path / "run"
    prepare_run(root, records=120, batches=3, seed=3, malformed=2, **kw)
    (root / "crash").mkdir(exist_ok=True)
    (root / "crash" / "task_faults.json").write_text(json.dumps(faults))
    return root


def _writemeta(root) -> dict[int, dict]:
    return {wm["batch"]: wm for wm in (json.loads(p.read_text()) for p in (root / "writemeta").glob("*.json"))}


def _check_clean(root, spark=None):
    from hudi import HudiTable

    from lakeio.audit import audit_table
    from pipeline import source as src
    from pipeline.diff import diff_run

    want = {}
    for lines in src.read_inputs(root / "input"):
        for rec, _ in lines:
            if rec is not None:
                want[rec.key] = rec.ts
    rows = [r for b in HudiTable(str(root / "table")).read()
            for r in zip(b.column("key").to_pylist(), b.column("ts").to_pylist())]
    keys = [k for k, _ in rows]
    assert len(keys) == len(set(keys)), "duplicated records"
    assert dict(rows) == want, "lost or stale records"
    report = diff_run(root, spark=spark)
    assert report.ok, report.render()
    assert any("failed or duplicate task attempt" in c for c in report.checked)
    assert audit_table(str(root / "table")).exit_code == 0
    temp = root / "table" / ".hoodie" / ".temp"
    assert not temp.is_dir() or not any(temp.rglob("*.marker.*")), "markers of committed instants left"


FAULTS = [{"kind": "fail-after-file", "batch": 0, "task": 0}, {"kind": "kill-worker", "batch": 1, "task": 1},
          {"kind": "duplicate-attempt", "batch": 2, "task": 0}]


@pytest.mark.parametrize("mode,table_type", [("async", "mor"), ("blocking", "cow")])
def test_retried_and_duplicate_attempts_leave_no_trace(tmp_path, mode, table_type):
    """Real Spark retries (the job in its own process on ``local[2,4]``)."""
    from pipeline.crash import run_with_crashes

    root = _prepare(tmp_path, FAULTS, mode=mode, table_type=table_type, master="local[2,4]")
    lines: list[str] = []
    attempts = run_with_crashes(root, [], timeout=300, progress=lines.append)
    assert attempts[-1].returncode == 0, attempts[-1].stderr_tail
    wm = _writemeta(root)
    # batch 0: task 0's first attempt raised after a data file; Spark re-ran it; its file was reconciled away
    assert wm[0]["tasks"][0]["attempt"] >= 1 and wm[0]["tasks"][0]["token"].endswith(f"-{wm[0]['tasks'][0]['attempt']}")
    assert wm[0]["reconciled"] and all(p.split("/")[-1].split("_")[1].startswith("0-") for p in wm[0]["reconciled"])
    # batch 1: task 1's Python worker was killed after a data file; Spark re-ran it
    assert wm[1]["tasks"][1]["attempt"] >= 1 and wm[1]["reconciled"]
    # batch 2: task 0 wrote its file groups twice (attempt 100 and its own attempt 0): the copy's files deleted
    assert wm[2]["tasks"][0]["attempt"] == 0 and wm[2]["reconciled"]
    assert all("-100" in p.split("/")[-1] for p in wm[2]["reconciled"])
    assert any("retried [0]" in ln for ln in lines) and any("retried [1]" in ln for ln in lines)
    _check_clean(root)


def test_duplicate_attempt_in_process_and_without_reconciliation(tmp_path, spark, monkeypatch):
    """The same duplicate attempt in the suite's session: clean with reconciliation; without it (the broken
    variant: ``reconcile_against_markers`` a no-op) the diff finds the copy's files in the committed slices."""
    from lakeio.hudiformat import markers
    from pipeline.diff import diff_run
    from pipeline.job import run_job

    dup = [{"kind": "duplicate-attempt", "batch": b, "task": t} for b in (0, 1, 2) for t in (0, 1)]
    good = _prepare(tmp_path / "good", dup, mode="async", table_type="cow")
    run_job(good, spark=spark, progress=None)
    assert all(wm["reconciled"] for wm in _writemeta(good).values())
    _check_clean(good, spark)

    broken = _prepare(tmp_path / "broken", dup, mode="async", table_type="cow")
    monkeypatch.setattr(markers, "reconcile_against_markers", lambda *a, **kw: [])
    run_job(broken, spark=spark, progress=None)
    monkeypatch.undo()
    report = diff_run(broken, spark=spark)
    assert not report.ok
    assert any("not in their commit (failed or duplicate attempts)" in d for d in report.differences), report.render()


def test_a_killed_driver_rolls_back_every_attempts_files(tmp_path, spark):
    """The driver dies after the write job returned (``write.files-written``) in a batch with a duplicate
    attempt: the restarted driver rolls the instant back -- the markers name the files of both attempts --
    rewrites the batch and finishes clean."""
    from pipeline.crash import KillSpec, _run_job
    from pipeline.job import run_job

    root = _prepare(tmp_path, [{"kind": "duplicate-attempt", "batch": 1, "task": 1}], mode="blocking",
                    table_type="mor")
    a = _run_job(root, KillSpec("write.files-written", 2), timeout=240, extra_env=None)
    assert a.killed
    marked = [p for p in (root / "table" / ".hoodie" / ".temp").rglob("*.marker.*")]
    assert any("-100" in p.name for p in marked) and any("-100" not in p.name for p in marked)
    run_job(root, spark=spark, progress=None)
    _check_clean(root)
    rolled = [p for p in (root / "table" / ".hoodie" / "timeline").iterdir() if ".rollback" in p.name]
    assert rolled
