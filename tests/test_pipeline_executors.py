"""Executor-side writes (issue #19): every Spark task of a batch's write job is a writer task of the model, records
are routed by Hudi's bucket index, and the driver never holds a batch's records."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hoodie_lab.cli import main as cli
from lakeio.hudiformat import bucket as bk

REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------- bucket index
def test_bucket_id_is_hudis_bucket_identifier():
    """Values computed by Java 17 (jshell): ``(Arrays.asList(key).hashCode() & Integer.MAX_VALUE) % n``, what
    ``BucketIdentifier.getBucketId`` computes for a simple record key."""
    assert bk.java_string_hash("hello") == 99162322
    assert bk.bucket_id("k000001", 8) == 3
    assert bk.bucket_id("ключ-é", 7) == 1  # non-ASCII: UTF-16 code units
    assert bk.bucket_id("a-much-longer-record-key-000123456", 16) == 8  # int32 wrap-around
    with pytest.raises(ValueError):
        bk.bucket_id("k", 0)


@given(st.lists(st.text(max_size=12), max_size=30), st.integers(1, 64))
def test_column_wise_bucket_ids_equal_the_per_key_hash(keys, n):
    """The writer's vectorised form equals :func:`bucket_id` on any keys (non-BMP characters, NULs, empty)."""
    assert bk.bucket_ids(keys, n).tolist() == [bk.bucket_id(k, n) for k in keys]


def test_bucket_file_ids_carry_the_bucket_and_are_stable():
    fid = bk.bucket_file_id("t", "p0", 7)
    assert fid.startswith("00000007-") and fid.endswith("-0") and bk.bucket_from_file_id(fid) == 7
    assert fid == bk.bucket_file_id("t", "p0", 7) != bk.bucket_file_id("t", "p1", 7)
    assert [bk.task_of(b, 3) for b in range(6)] == [0, 1, 2, 0, 1, 2]


# ----------------------------------------------------------------------------------- the driver holds no records
DRIVER_MODULES = ("pipeline/job.py", "pipeline/coordinator.py", "pipeline/executor.py")
#: calls that bring a DataFrame's rows to the driver
TO_DRIVER = {"toArrow", "toPandas", "toLocalIterator", "collect", "take", "head", "first", "tail", "show"}
#: the only functions allowed to collect: the write job's statuses (one row per task) and the route keys
#: (a query over ``spark.range``, no record); ``freeze_worker_heap`` calls the garbage collector's ``gc.collect``
ALLOWED = {("pipeline/executor.py", "write_batch"), ("pipeline/executor.py", "route_keys"),
           ("pipeline/executor.py", "freeze_worker_heap")}


def driver_collects(source: str, path: str) -> list[str]:
    """``path:line function.call`` for every call of a to-driver method outside :data:`ALLOWED`."""
    found = []

    class V(ast.NodeVisitor):
        def __init__(self):
            self.fn = ["<module>"]

        def visit_FunctionDef(self, node):
            self.fn.append(node.name)
            self.generic_visit(node)
            self.fn.pop()

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_Call(self, node):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in TO_DRIVER and not (path, self.fn[1] if len(self.fn) > 1
                                                                             else "<module>") in ALLOWED:
                found.append(f"{path}:{node.lineno} {'.'.join(self.fn[1:])}: .{f.attr}()")
            self.generic_visit(node)

    V().visit(ast.parse(source))
    return found


def test_the_driver_path_never_collects_records():
    bad = [x for p in DRIVER_MODULES for x in driver_collects((REPO / p).read_text(), p)]
    assert bad == [], bad
    # and the write job's collect is on the statuses: the DataFrame mapInArrow returns with the status schema
    src = (REPO / "pipeline/executor.py").read_text()
    assert "mapInArrow(write_partition(spec, split), RESULT_DDL)" in src and "stats string" in src


def test_the_structural_check_catches_a_driver_that_collects():
    """The broken driver of before issue #19 (``split_batch(df.toArrow())`` in the sink) is caught."""
    broken = "def run_job(root):\n    def sink(df, batch_id):\n        good, bad = split_batch(df.toArrow())\n"
    assert driver_collects(broken, "pipeline/job.py") == ["pipeline/job.py:3 run_job.sink: .toArrow()"]
    assert driver_collects("def f(df):\n    return df.collect()\n", "pipeline/coordinator.py")


# ------------------------------------------------------------------------------------------------ end to end
def _rows(table):
    from hudi import HudiTable

    return [r for b in HudiTable(str(table)).read()
            for r in zip(*(b.column(c).to_pylist() for c in ("key", "ts", "partition", "payload")))]


def _want(root):
    from pipeline import source as src

    want = {}
    for lines in src.read_inputs(root / "input"):
        for rec, _ in lines:
            if rec is not None:
                want[rec.key] = (rec.key, rec.ts, rec.partition, rec.payload)
    return sorted(want.values())


@pytest.mark.spark
@pytest.mark.parametrize("mode,table_type,parallelism,buckets", [("async", "mor", 3, 5), ("blocking", "cow", 2, 4),
                                                                 ("async", "cow", 1, 3)])
def test_every_spark_task_is_a_writer_task(tmp_path, spark, mode, table_type, parallelism, buckets):
    from lakeio.audit import audit_table
    from lakeio.ondisk.reader import read_table
    from pipeline.diff import diff_run
    from pipeline.job import prepare_run, run_job

    root = tmp_path / "run"
    prepare_run(root, mode=mode, table_type=table_type, records=150, batches=3, seed=7, malformed=3,
                parallelism=parallelism, buckets=buckets)
    summary = run_job(root, spark=spark, progress=None)
    assert summary["records"] == 150 and summary["quarantined"] == 3 and len(summary["commits"]) == 3
    # the model ran `parallelism` writer tasks, every task snapshotted every batch
    header = json.loads((root / "trace.jsonl").read_text().splitlines()[0])
    assert header["config"]["parallelism"] == parallelism
    events = [json.loads(x) for x in (root / "trace.jsonl").read_text().splitlines()[1:]]
    snaps = sorted({e["task"] for e in events if e.get("kind") == "snapshot-task"})
    assert snaps == list(range(parallelism))
    # every task wrote its own file groups: write tokens <task>-<stage>-<attempt>, file ids = bucket ids of the
    # buckets routed to that task, one file group per (partition, bucket)
    table = read_table(root / "table")
    files = list(table.base_files) + list(table.log_files)
    tasks = {int(f.write_token.split("-")[0]) for f in files}
    assert tasks == set(range(parallelism))
    for f in files:
        assert bk.task_of(bk.bucket_from_file_id(f.file_id), parallelism) == int(f.write_token.split("-")[0])
        assert f.file_id == bk.bucket_file_id("hoodie_lab_pipeline", f.partition, bk.bucket_from_file_id(f.file_id))
    assert len({(b.partition, b.file_id) for b in table.base_files}) <= 3 * buckets
    # hudi-rs reads exactly the upserted input; the model's prediction (same task count) holds; audit passes
    assert sorted(_rows(root / "table")) == _want(root)
    report = diff_run(root, spark=spark if table_type == "cow" else None)
    assert report.ok, report.render()
    assert any(f"{parallelism} writer task(s)" in c for c in report.checked)
    assert audit_table(str(root / "table")).exit_code == 0
    # every writer task quarantined its share of the malformed lines; the run's total is right
    q = sorted(p.name for p in (root / "quarantine").glob("batch-*.parquet"))
    assert q and all("-task-" in n for n in q)


@pytest.mark.parametrize("argv,expect", [
    (["--parallelism", "0"], "--parallelism: 0"),
    (["--parallelism", "300"], "--parallelism: 300"),
    (["--parallelism", "4", "--buckets", "2"], "--buckets: 2 < --parallelism 4"),
    (["--buckets", "0"], "--buckets: 0"),
])
def test_bad_parallelism_or_buckets_one_line(tmp_path, capsys, argv, expect):
    rc = cli(["pipeline", "run", "--out", str(tmp_path / "run"), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and expect in err[0], err
    assert not (tmp_path / "run").exists()


def test_markers_name_every_data_file_and_reconcile_deletes_the_unwritten(tmp_path):
    """Log files (their names start with a dot) are marked and reconciled like base files."""
    from lakeio.hudiformat import markers
    from lakeio.hudiformat.write_handle import create_marker

    hoodie = tmp_path / ".hoodie"
    (tmp_path / "p").mkdir()
    names = ["f1_0-1-0_t.parquet", ".f2_t.log.1_0-1-0", "f1_0-1-1_t.parquet", ".f2_t.log.1_0-1-1"]
    for n, io in zip(names, ["CREATE", "APPEND", "CREATE", "APPEND"]):
        create_marker(hoodie, "t", "p", n, io)
        (tmp_path / "p" / n).write_bytes(b"x")
    (hoodie / ".temp" / "t" / "p" / ".f3_0-1-0_t.parquet.abc.tmp").write_bytes(b"")  # a temporary, no marker
    assert markers.marked_files(hoodie, "t") == {f"p/{n}": io for n, io in
                                                 zip(names, ["CREATE", "APPEND", "CREATE", "APPEND"])}
    gone = markers.reconcile_against_markers(tmp_path, hoodie, "t", {f"p/{names[2]}", f"p/{names[3]}"})
    assert gone == sorted([f"p/{names[0]}", f"p/{names[1]}"])
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == sorted(names[2:])
