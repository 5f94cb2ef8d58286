"""Poison records and stalled runs (issue #21, item 1).

A poison record is an input line Spark can read but the source's validation refuses (an empty key, an array
line, a numeric key, a ``ts`` beyond int64, a partition with ``/``, bytes that are not UTF-8, ...). Before, the
job's split checked only nulls, so such a line reached the coordinator, which compares the batch with the
source's parse of the same file: the batch raised, every resume failed on the same batch, its good records
never landed and ``diff`` said "no differences". Now one validation (``source.parse_line``) decides for both:
every poison line is quarantined with its reason and the batch's good records land. A run that still stalls
(a batch that fails for any other reason) is reported as a failure by ``run_job`` / ``pipeline run`` /
``resume`` and by ``diff`` -- one line, exit 1 -- never as clean.
"""

from __future__ import annotations

import json
import os
import sys

import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

from hoodie_lab.cli import main as cli
from pipeline import source as src

# (raw line, the reason it is refused)
POISON = [
    (b'{"key": "", "ts": 7, "partition": "p0", "payload": "x"}', "missing record key"),
    (b'[{"key": "k900001", "ts": 7, "partition": "p0", "payload": "x"}]', "not a JSON object (a JSON list)"),
    (b'{"key": 900002, "ts": 7, "partition": "p0", "payload": "x"}', "record key is not a string (a JSON number)"),
    (b'{"key": "k900003", "ts": 9223372036854775808, "partition": "p0", "payload": "x"}',
     "ordering field ts out of the int64 range"),
    (b'{"key": "k900004", "ts": 7, "partition": "p0/evil", "payload": "x"}',
     "partition value is not a single path segment"),
    (b'{"key": "k900005", "ts": 7, "partition": ".hoodie", "payload": "x"}',
     "partition value is not a single path segment"),
    (b'{"key": "k9\xff\xfe06", "ts": 7, "partition": "p0", "payload": "x"}', "not UTF-8 (byte 11)"),
    (b'{"key": "k900007\\ud800", "ts": 7, "partition": "p0", "payload": "x"}',
     "key holds a lone UTF-16 surrogate"),
    (b'{"key": "k900008", "ts": 7, "partition": "p0", "payload": 5}', "payload is not a string (a JSON number)"),
    (b'{"key": "k900009", "ts": 7.5, "partition": "p0", "payload": "x"}', "missing or non-integer ordering field ts"),
    (b'"just a string"', "not a JSON object (a JSON str)"),
]


def test_each_poison_line_is_refused_with_its_reason():
    for raw, why in POISON:
        rec, reason = src.parse_line(raw)
        assert rec is None and reason.startswith(why), (raw, reason)
    ok, reason = src.parse_line(b'{"key": "k1", "ts": -9223372036854775808, "partition": "p0"}\r')
    assert reason is None and ok == src.Record("k1", -(2 ** 63), "p0", "")


_line = st.one_of(
    st.binary(max_size=40),
    st.builds(lambda k, t, p, y: json.dumps({"key": k, "ts": t, "partition": p, "payload": y}).encode(),
              st.one_of(st.text(max_size=4), st.integers(), st.none()),
              st.one_of(st.integers(min_value=-(2 ** 70), max_value=2 ** 70), st.floats(), st.text(max_size=2)),
              st.one_of(st.sampled_from(["p0", "p1", "a/b", ".x", ""]), st.text(max_size=3), st.integers()),
              st.one_of(st.none(), st.text(max_size=3), st.integers())),
)


@given(st.lists(_line, max_size=12))
def test_the_job_split_and_the_source_agree_on_every_line(lines):
    """What the job hands the coordinator is exactly what the coordinator expects from the file."""
    from pipeline.job import split_batch

    lines = [ln.replace(b"\n", b" ") for ln in lines]  # one line each, as the text source splits them
    good, bad = split_batch(pa.table({"line": pa.array(lines, pa.binary())}))
    parsed = [src.parse_line(ln) for ln in src.input_lines(b"\n".join(lines))]
    want = [r for r, _ in parsed if r is not None]
    assert good.to_pylist() == [r.as_json() for r in want]
    assert [why for why, _raw in bad] == [why for r, why in parsed if r is None]


# ------------------------------------------------------------------------------------------ real Spark runs
RECORDS, BATCHES = 60, 3


def _poison_inputs(root) -> list[tuple[bytes, str]]:
    """Mix the poison lines into the run's input files (spread over all batches, modification times kept:
    file i stays batch i)."""
    files = sorted((root / "input").glob(src.INPUT_GLOB))
    for i, f in enumerate(files):
        st_ = f.stat()
        mine = [raw for j, (raw, _) in enumerate(POISON) if j % len(files) == i]
        lines = f.read_bytes().split(b"\n")
        for k, raw in enumerate(mine):
            lines.insert(1 + 2 * k, raw)
        f.write_bytes(b"\n".join(lines))
        os.utime(f, (st_.st_atime, st_.st_mtime))
    return POISON


@pytest.mark.spark
@pytest.mark.parametrize("mode", ["async", "blocking"])
def test_poison_records_are_quarantined_and_good_records_land(tmp_path, spark, mode):
    from hudi import HudiTable

    from pipeline.diff import diff_run
    from pipeline.job import prepare_run, read_quarantine, run_job
    from pipeline.run_dir import RunDir

    root = tmp_path / "run"
    prepare_run(root, mode=mode, table_type="mor", records=RECORDS, batches=BATCHES, seed=3, malformed=2)
    poison = _poison_inputs(root)
    summary = run_job(root, spark=spark, progress=None)
    assert summary["records"] == RECORDS and len(summary["commits"]) == BATCHES
    assert summary["quarantined"] == len(poison) + 2
    q = read_quarantine(RunDir(root)).to_pylist()
    reasons = [r["reason"] for r in q]
    for raw, why in poison:
        assert sum(r.startswith(why) for r in reasons) >= 1, why
    assert any(r["raw"] == '{"key": "k9\\xff\\xfe06", "ts": 7, "partition": "p0", "payload": "x"}' for r in q)
    want = {r.key: r.ts for lines in src.read_inputs(root / "input") for r, _ in lines if r is not None}
    assert len(want) > 0 and not any(k.startswith("k9000") for k in want)
    rows = [r for b in HudiTable(str(root / "table")).read()
            for r in zip(b.column("key").to_pylist(), b.column("ts").to_pylist())]
    assert dict(rows) == want and len(rows) == len(want)
    assert not (root / "table" / "p0" / "evil").exists()
    report = diff_run(root)
    assert report.ok, report.render()
    assert any("quarantined" in c for c in report.checked)
    assert _temp_entries(root / "table") == []  # every instant committed: nothing of theirs in .hoodie/.temp


def _temp_entries(base) -> list[str]:
    temp = base / ".hoodie" / ".temp"
    return sorted(str(p.relative_to(temp)) for p in temp.rglob("*")) if temp.is_dir() else []


def _split_checking_nulls_only(batch):
    """The previous split (a deliberately broken variant): only unparseable JSON and null fields are
    malformed, so an empty key reaches the coordinator and the batch raises."""
    from pipeline.job import RECORD_SCHEMA

    good, bad = [], []
    for line in batch.column("line").to_pylist():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            bad.append(("malformed JSON", line.decode(errors="replace")))
            continue
        if not isinstance(obj, dict) or any(obj.get(k) is None for k in ("key", "ts", "partition")):
            bad.append(("missing field", line.decode(errors="replace")))
            continue
        good.append({"key": str(obj["key"]), "ts": obj["ts"], "partition": obj["partition"],
                     "payload": obj.get("payload")})
    return pa.Table.from_pylist(good, schema=RECORD_SCHEMA), bad


@pytest.mark.spark
def test_a_stalled_run_is_a_failure_in_the_summary_and_in_diff(tmp_path, spark, monkeypatch, capsys):
    import pipeline.job as job
    from pipeline.diff import diff_run
    from pipeline.run_dir import RunDir

    root = tmp_path / "run"
    job.prepare_run(root, mode="async", table_type="mor", records=RECORDS, batches=BATCHES, seed=4)
    f = sorted((root / "input").glob(src.INPUT_GLOB))[1]
    st_ = f.stat()
    f.write_bytes(f.read_bytes() + POISON[0][0] + b"\n")  # an empty key in batch 1
    os.utime(f, (st_.st_atime, st_.st_mtime))

    # the writer tasks run the split (Python workers): they get this test's function by value
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    monkeypatch.setattr(job, "split_batch", _split_checking_nulls_only)
    with pytest.raises(job.PipelineStalled) as exc:
        job.run_job(root, spark=spark, progress=None)
    msg = str(exc.value)
    assert exc.value.exit_code == 1 and "\n" not in msg
    assert "run stalled: batch 1 failed and never committed" in msg and "1 of 3 batches committed" in msg
    kinds = [e["kind"] for e in RunDir(root).read_events()]
    assert "batch-failed" in kinds and kinds[-1] == "stalled" and "finished" not in kinds

    # the run summary of a resume: one line, exit 1 (the same batch fails again: still stalled)
    capsys.readouterr()
    assert cli(["pipeline", "resume", str(root)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "run stalled: batch 1 failed and never committed" in err[0], err

    # diff: a failure with that line first, never "no differences"
    report = diff_run(root)
    assert not report.ok and "run stalled: batch 1" in report.differences[0]
    assert cli(["diff", "--no-spark", str(root)]) == 1
    out = capsys.readouterr().out
    assert "no differences" not in out and "run stalled: batch 1 failed" in out

    # with the one validation back, the resume quarantines the poison record and the run finishes clean
    monkeypatch.undo()
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    summary = job.run_job(root, spark=spark, progress=None)
    assert summary["quarantined"] == 1 and not job.uncommitted_batches(RunDir(root))
    report = diff_run(root)
    assert report.ok, report.render()


@pytest.mark.spark
def test_a_killed_run_is_not_clean_until_resumed(tmp_path, spark):
    from pipeline.crash import KillSpec, _run_job
    from pipeline.diff import diff_run
    from pipeline.job import prepare_run, run_job

    root = tmp_path / "run"
    prepare_run(root, mode="blocking", table_type="cow", records=30, batches=3, seed=2)
    a = _run_job(root, KillSpec("writemeta.persisted", 2), timeout=240, extra_env=None)
    assert a.killed
    report = diff_run(root)
    assert not report.ok
    assert "did not reach the end of its input" in report.differences[0] and "pipeline resume" in \
        report.differences[0]
    pending = _temp_entries(root / "table")
    assert pending  # the killed batch's instant is pending: its markers stay until it is rolled back
    # the resume rolls the killed batch's instant back, rewrites it and finishes: clean, .temp empty
    run_job(root, spark=spark, progress=None)
    report = diff_run(root)
    assert report.ok, report.render()
    assert _temp_entries(root / "table") == []


def test_the_crash_harness_reports_a_stalled_job_as_one_line(tmp_path, monkeypatch):
    """``pipeline run --kill/--crashes`` runs the job in subprocesses: a job that ends stalled (exit 1, its
    one ``run stalled`` line on stderr) becomes PipelineStalled with that line, not a RuntimeError traceback;
    any other failure stays a RuntimeError with the job's stderr."""
    import pipeline.crash as crash
    from pipeline.run_dir import PipelineStalled

    line = f"{tmp_path}: run stalled: batch 1 failed and never committed (RuntimeError: x); 1 of 3 batches committed"
    tails = iter([f"some log\npipeline: error: {line}\n", "Traceback ...\nValueError: boom\n"])
    monkeypatch.setattr(crash, "_run_job", lambda *a, **kw: crash.Attempt(None, 1, 0.1, False, next(tails)))
    with pytest.raises(PipelineStalled) as exc:
        crash.run_with_crashes(tmp_path, [])
    assert str(exc.value) == line and exc.value.exit_code == 1
    with pytest.raises(RuntimeError, match="ValueError: boom"):
        crash.run_with_crashes(tmp_path, [])


@pytest.mark.spark
@pytest.mark.parametrize("value,seconds", [(None, 2.0), ("3s", 3.0), ("2500ms", 2.5), ("1min", 60.0),
                                           ("1500", 1.5), ("soon", 2.0)])
def test_the_stall_wait_reads_the_kill_timeout_as_spark_does(spark, value, seconds):
    """A stalled run waits for the failed batch's tasks plus ``spark.python.task.killTimeout``: read by Spark's
    own parser (it was read as "Ns" only, so "2500ms" or "1min" fell back to 2 s)."""
    from pipeline.job import kill_timeout_s

    jconf = spark.sparkContext._jvm.org.apache.spark.SparkConf(False)
    if value is not None:
        jconf.set("spark.python.task.killTimeout", value)
    assert kill_timeout_s(jconf) == pytest.approx(seconds)
