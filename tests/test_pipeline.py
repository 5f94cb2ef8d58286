"""The PySpark pipeline end to end (in-process, one SparkSession for the suite): both coordinator modes and the
Spark-sink baseline into COW and MOR tables, read back through hudi-rs and Spark, audited, and diffed against the
reference model; bad input refused with one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hoodie_lab.cli import main as cli
from pipeline import source as src

pytestmark = pytest.mark.spark

RECORDS, BATCHES, MALFORMED = 120, 3, 4


def _run(tmp_path, spark, mode, table_type, version=8, **extra):
    from pipeline.job import prepare_run, run_job

    root = tmp_path / f"{mode}-{table_type}-v{version}"
    prepare_run(root, mode=mode, table_type=table_type, table_version=version, records=RECORDS,
                batches=BATCHES, seed=11, malformed=MALFORMED, **extra)
    lines: list[str] = []
    summary = run_job(root, spark=spark, progress=lines.append)
    return root, summary, lines


# ------------------------------------------------------------------------------------------------ end to end
@pytest.mark.parametrize("mode,table_type", [("blocking", "cow"), ("blocking", "mor"), ("async", "cow"),
                                             ("async", "mor"), ("spark-sink", "cow")])
def test_run_matches_model_and_readers(tmp_path, spark, mode, table_type):
    from hudi import HudiTable

    from lakeio.audit import audit_table
    from pipeline.diff import diff_run

    root, summary, lines = _run(tmp_path, spark, mode, table_type)
    # one progress line per batch; every batch committed; malformed records quarantined, not written
    assert [ln.split(":")[0] for ln in lines] == [f"batch {b}" for b in range(BATCHES)]
    assert summary["records"] == RECORDS and summary["quarantined"] == MALFORMED
    assert len(summary["commits"]) == BATCHES and summary["pending"] == []
    # hudi-rs reads exactly the upserted input
    want = {}
    for lines_ in src.read_inputs(root / "input"):
        for rec, _ in lines_:
            if rec is not None:
                want[rec.key] = (rec.key, rec.ts, rec.partition, rec.payload)
    t = HudiTable(str(root / "table"))
    got = sorted(r for b in t.read() for r in zip(*(b.column(c).to_pylist() for c in ("key", "ts", "partition", "payload"))))
    assert got == sorted(want.values())
    assert t.hudi_options()["hoodie.table.version"] == "8"
    done = t.get_timeline().get_completed_commits() + t.get_timeline().get_completed_deltacommits()
    assert len(done) == BATCHES
    # the model's prediction, incl. Spark reading COW base files; and the table's own invariants
    report = diff_run(root, spark=spark)
    assert report.ok, report.render()
    assert any("Spark" in c for c in report.checked) == (table_type == "cow")
    assert audit_table(str(root / "table")).exit_code == 0


def test_table_version_6_and_rerun_on_the_same_checkpoint(tmp_path, spark):
    from hudi import HudiTable

    from pipeline.diff import diff_run
    from pipeline.job import run_job

    root, summary, _ = _run(tmp_path, spark, "async", "mor", version=6)
    assert HudiTable(str(root / "table")).hudi_options()["hoodie.table.version"] == "6"
    # a restart on the same checkpoint with no new input runs no batch and changes nothing
    again = run_job(root, spark=spark, progress=None)
    assert again["batches"] == 0
    assert diff_run(root).ok


def test_diff_finds_a_tampered_table(tmp_path, spark, capsys, monkeypatch):
    root, _, _ = _run(tmp_path, spark, "blocking", "mor")
    assert cli(["diff", str(root)]) == 0
    # a relative run dir diffs the same (hudi-rs refuses relative table paths: "relative URL without a base")
    monkeypatch.chdir(root.parent)
    assert cli(["diff", root.name]) == 0
    # remove the last completed instant file: the model predicts it completed, the table shows it inflight
    tl = root / "table" / ".hoodie" / "timeline"
    last = sorted(p for p in tl.iterdir() if p.name.endswith(".deltacommit") and "_" in p.name)[-1]
    last.unlink()
    capsys.readouterr()
    assert cli(["diff", str(root)]) == 1
    out = capsys.readouterr().out
    assert f"instant {last.name.split('_')[0]}" in out and "[inflight]" in out
    assert "table contents read through hudi-rs" in out  # its rows are no longer visible either


# ------------------------------------------------------------------------------------------------ bad input
def _props(table, **kv):
    (table / ".hoodie").mkdir(parents=True)
    (table / ".hoodie" / "hoodie.properties").write_text("".join(f"{k}={v}\n" for k, v in kv.items()))


@pytest.mark.parametrize("case,expect", [
    ("version9", "table version 9; the pipeline writes table versions 8 and 6"),
    ("other-table", "holds a different table"),
    ("not-hudi", "neither empty nor a Hudi table"),
])
def test_refuses_a_table_it_must_not_write(tmp_path, capsys, case, expect):
    table = tmp_path / "t"
    if case == "version9":
        _props(table, **{"hoodie.table.name": "x", "hoodie.table.version": "9", "hoodie.table.type": "MERGE_ON_READ"})
    elif case == "other-table":
        _props(table, **{"hoodie.table.name": "trips", "hoodie.table.version": "8",
                         "hoodie.table.type": "MERGE_ON_READ"})
    else:
        table.mkdir()
        (table / "data.csv").write_text("a,b\n")
    before = sorted(p.name for p in table.rglob("*"))
    rc = cli(["pipeline", "run", "--records", "10", "--batches", "1", "--out", str(tmp_path / "run"),
              "--table", str(table)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and expect in err[0], err
    assert sorted(p.name for p in table.rglob("*")) == before and not (tmp_path / "run").exists()


def test_refuses_a_second_pipeline_on_the_same_table(tmp_path, capsys):
    from pipeline.coordinator import TABLE_NAME
    from pipeline.run_dir import TableLock

    table = tmp_path / "t"
    _props(table, **{"hoodie.table.name": TABLE_NAME, "hoodie.table.version": "8",
                     "hoodie.table.type": "MERGE_ON_READ"})
    # another process holds the lock for real (flock); SIGKILLed afterwards, as a crashed pipeline
    other = subprocess.Popen([sys.executable, "-c", "import sys, time; from pipeline.run_dir import TableLock; "
                              f"TableLock({str(table)!r}).acquire(); print('ready', flush=True); time.sleep(60)"],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "ready"
        lock = TableLock(table)
        rc = cli(["pipeline", "run", "--records", "10", "--batches", "1", "--out", str(tmp_path / "run"),
                  "--table", str(table)])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and f"another pipeline (pid {other.pid})" in err[0]
    finally:
        other.kill()
        other.wait()
    lock.acquire()  # a dead holder's lock is stale: taken over
    assert lock.path.read_text().strip() == str(os.getpid())
    lock.release()


@pytest.mark.parametrize("argv,expect", [
    (["pipeline", "run", "--batches", "0"], "--batches"),
    (["pipeline", "run", "--kill", "nowhere"], "--kill: unknown kill point"),
    (["pipeline", "run", "--commit-latency-ms", "-5"], "--commit-latency-ms"),
    (["diff", "/nonexistent/run"], "not a directory"),
])
def test_bad_arguments_one_line(tmp_path, capsys, argv, expect):
    if argv[1] == "run":
        argv = argv + ["--out", str(tmp_path / "run")]
    assert cli(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expect in err[0], err


def test_diff_refuses_a_dir_that_is_not_a_run(tmp_path, capsys):
    (tmp_path / "run.json").write_text("{not json")
    assert cli(["diff", str(tmp_path)]) == 2
    assert "run.json: not JSON" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------- source
def test_inputs_are_deterministic_and_malformed_records_have_reasons(tmp_path):
    a = src.generate_batches(50, 3, seed=5, malformed=8)
    assert a == src.generate_batches(50, 3, seed=5, malformed=8)
    assert a != src.generate_batches(50, 3, seed=6, malformed=8)
    parsed = [src.parse_line(x) for b in a for x in b]
    good = [r for r, _ in parsed if r is not None]
    reasons = sorted({why for r, why in parsed if r is None})
    assert len(good) == 50 and len(parsed) == 58
    assert reasons == ["malformed JSON", "missing or non-integer ordering field ts", "missing partition",
                       "missing record key"]
    assert [r.ts for r in good] == sorted(r.ts for r in good)  # ordering field increases with arrival
    assert all(r.partition == src.partition_of(r.key) for r in good)
    src.write_inputs(tmp_path, 50, 3, seed=5)
    files = sorted(tmp_path.glob(src.INPUT_GLOB))
    assert [f.stat().st_mtime for f in files] == sorted({f.stat().st_mtime for f in files})  # oldest first


def test_quarantine_split():
    import pyarrow as pa

    from pipeline.job import split_batch

    lines = [b'{"key": "k000001", "ts": 1, "partition": "p1", "payload": "a"}', b'{"ts": 5, "partition": "p0"}',
             b'{"key": "bad1", "ts": "x", "partition": "p0"}', b"  ", b'{"key": "k000002", "ts": 2}']
    good, bad = split_batch(pa.table({"line": pa.array(lines, pa.binary())}))
    assert good.column("key").to_pylist() == ["k000001"]
    assert [r for r, _ in bad] == ["missing record key", "missing or non-integer ordering field ts",
                                   "missing partition"]
    assert json.loads(bad[1][1])["key"] == "bad1"


def test_run_dir_logs_survive_a_torn_line(tmp_path):
    from pipeline.run_dir import append_line, read_lines

    p = tmp_path / "log.jsonl"
    append_line(p, {"a": 1})
    with open(p, "a") as f:
        f.write('{"b": ')  # a kill mid-append
    assert read_lines(p) == [{"a": 1}]
