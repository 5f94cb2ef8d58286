"""The vectorised writer tasks (issue #19, speed): the generated source's lines are parsed column-wise in the
writer tasks (:func:`pipeline.source.parse_lines_columnar`) or by Spark's JVM
(:func:`pipeline.executor.jvm_parse`), and only lines they cannot vouch for go through Python's
:func:`pipeline.source.parse_line`; MOR log data blocks may be parquet (``HoodieParquetDataBlock``), which hudi-rs
reads. The exactness check is shown able to fail: a loosened variant (no layout check) disagrees with
``parse_line`` on lines of this suite."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pytest

from pipeline import executor as ex
from pipeline import source as src

pytestmark = pytest.mark.spark


def _lines(seed: int = 5) -> list[bytes]:
    """Canonical lines (what the generator writes) and every kind of line the fast path must leave to Python."""
    good = [json.dumps(r.as_json(), sort_keys=True).encode() for b in src.generate_batches(40, 2, seed) for r in
            (src.parse_line(x)[0] for x in b)]
    tricky = [
        b'{"key": "k1", "partition": "p0", "payload": "x", "ts": 1}',          # canonical
        b'{"key": "k1", "partition": "p0", "payload": "", "ts": -9223372036854775808}',
        b'{"key": "k1", "partition": "p0", "payload": "x", "ts": 1}\r',        # \r kept: JSON whitespace
        b'{"key":"k2","partition":"p0","payload":"x","ts":2}',                  # other spacing
        b'{"ts": 3, "key": "k3", "partition": "p0", "payload": "x"}',           # other key order
        b'{"key": 7, "partition": "p0", "payload": "x", "ts": 1}',              # a number as key
        b'{"key": "7", "partition": 0, "payload": "x", "ts": 1}',               # a number as partition
        b'{"key": "k4", "partition": "p0", "payload": 5, "ts": 1}',             # a number as payload
        b'{"key": "k5", "partition": "p0", "payload": {"a": 1}, "ts": 1}',     # an object as payload
        b'{"key": "k6", "partition": "p0", "payload": "x", "ts": 1.5}',
        b'{"key": "k6", "partition": "p0", "payload": "x", "ts": 1e3}',
        b'{"key": "k6", "partition": "p0", "payload": "x", "ts": "8"}',
        b'{"key": "k6", "partition": "p0", "payload": "x", "ts": true}',
        b'{"key": "k7", "partition": "p0", "payload": "x", "ts": 9223372036854775808}',
        b'{"key": "", "partition": "p0", "payload": "x", "ts": 1}',
        b'{"key": "k8", "partition": "", "payload": "x", "ts": 1}',
        b'{"key": "k8", "partition": "a/b", "payload": "x", "ts": 1}',
        b'{"key": "k8", "partition": ".hoodie", "payload": "x", "ts": 1}',
        b'{"key": "k8", "partition": "a\\\\b", "payload": "x", "ts": 1}',
        b'{"key": "k8", "partition": "p\\u0001", "payload": "x", "ts": 1}',
        b'{"key": "k8", "partition": "p\x01", "payload": "x", "ts": 1}',     # a raw control character
        b'{"key": "k\\u0041", "partition": "p0", "payload": "x", "ts": 1}',   # an escape
        b'{"key": "k\\ud800", "partition": "p0", "payload": "x", "ts": 1}',   # a lone surrogate
        b'{"key": "k\\"q", "partition": "p0", "payload": "x", "ts": 1}',
        '{"key": "k\u00e9", "partition": "p\u00e9", "payload": "\u00e9", "ts": 1}'.encode(),  # raw UTF-8
        b'{"key": "k\xff\xfe", "partition": "p0", "payload": "x", "ts": 1}',   # not UTF-8
        b'{"key": "k9", "key": "k10", "partition": "p0", "payload": "x", "ts": 1}',  # a duplicate name
        b'{"key": "k9", "partition": "p0", "payload": "x", "ts": 1} trailing',
        b'{"key": "k9", "partition": "p0", "payload": "x", "ts": 1}{"key": "k9"}',
        b'[{"key": "k9", "partition": "p0", "payload": "x", "ts": 1}]',
        b'"just a string"', b'42', b'null', b'{}', b'   ', b'{"key": "k9", "ts": ',
        b'{"key": "k9", "partition": "p0", "ts": 1}',                            # no payload
        b'{"key": "k9", "partition": "p0", "payload": null, "ts": 1}',
        b'{"key": "k9", "partition": "p0", "payload": "x", "ts": 1, "extra": 2}',
        b'{"key": "k9", "partition": "p0", "payload": "x", "ts": 01}',
        b'{"key": "k9", "partition": "p0", "payload": "x", "ts": -0}',
        b'{"key": "k9", "partition": "p0", "payload": "x", "ts": NaN}',
        b'{"KEY": "k9", "partition": "p0", "payload": "x", "ts": 1}',
        b'[' * 3000 + b']' * 3000,
    ]
    rng = random.Random(seed)
    fuzz = []
    for _ in range(200):  # canonical lines with one byte changed
        line = bytearray(rng.choice(good))
        line[rng.randrange(len(line))] = rng.choice(b'"\\ :,{}[]0123456789-.aek/\x00\x7f\xc3')
        fuzz.append(bytes(line))
    return good + tricky + fuzz


def _disagreements(spark, lines: list[bytes]) -> list:
    """Lines where the job's stage-1 split (JVM parse, then Python for the rest) and ``parse_line`` differ."""
    from pipeline.job import split_batch

    df = spark.createDataFrame([(ln,) for ln in lines], "line binary").coalesce(1)
    parsed = ex.jvm_parse(df).toArrow()
    good, bad, kinds = ex._split_rows(parsed, split_batch, ex.RECORD_SCHEMA)
    return _against_parse_line(lines, good, bad, [1] * good.num_rows if kinds is None else kinds)


def _against_parse_line(lines: list[bytes], good, bad, kinds) -> list:
    """Lines where a split (``good`` records, ``bad`` (reason, raw) pairs, each line's kind: 1 record, 0
    malformed, else skipped) and ``parse_line`` differ: (line, what the split gave, parse_line's reason)."""
    recs, reasons = iter(good.to_pylist()), iter(bad)
    out = []
    for line, kind in zip(lines, kinds):
        want, why = src.parse_line(line)
        if kind == 1:
            got = next(recs)
            if want is None or got != want.as_json():
                out.append((line, got, why))
        elif kind == 0:
            reason, _raw = next(reasons)
            if want is not None or reason != why:
                out.append((line, reason, why))
        elif line.strip():
            out.append((line, "skipped", why))
    assert next(recs, None) is None and next(reasons, None) is None
    return out


def _columnar_disagreements(lines: list[bytes]) -> list:
    """Lines where the writer task's split of raw lines (column-wise parse, then Python for the rest: what
    ``parse_and_route`` runs without ``jvm_parse``) and ``parse_line`` differ."""
    from pipeline.job import split_batch

    good, bad, kinds = ex._split_rows(pa.table({"line": pa.array(lines, pa.binary())}), split_batch,
                                      ex.RECORD_SCHEMA)
    assert kinds is not None  # the generated source's lines always take the column-wise parse first
    return _against_parse_line(lines, good, bad, kinds)


def test_the_columnar_parse_and_parse_line_agree_on_every_line():
    lines = _lines()
    assert _columnar_disagreements(lines) == []
    fast = src.parse_lines_columnar(pa.array(lines, pa.binary())).column("fast").to_pylist()
    assert sum(fast) >= 41  # the generator's lines take the fast path
    for line in (b'{"key": 7, "partition": "p0", "payload": "x", "ts": 1}', b'{"key": "k7", "partition": "p0", '
                 b'"payload": "x", "ts": 9223372036854775808}', b'{"key": "k8", "partition": ".hoodie", '
                 b'"payload": "x", "ts": 1}', b'{"key": "k\\u0041", "partition": "p0", "payload": "x", "ts": 1}'):
        assert not fast[lines.index(line)], line


def test_a_columnar_parse_with_a_looser_pattern_is_caught(monkeypatch):
    """A deliberately broken variant of the line pattern: strings of any printable ASCII but a quote (so
    backslash escapes, an empty key, ``/`` and a leading ``.`` in the partition) and any digits as ``ts``
    (leading zeros) -- the comparison with ``parse_line`` finds lines it accepts that ``parse_line`` refuses
    or reads differently."""
    s = r"[\x20\x21\x23-\x7e]"
    loose = (r'^\{"key": "(?P<key>' + s + r'*)", "partition": "(?P<partition>' + s + r'*)", "payload": "(?P<payload>'
             + s + r'*)", "ts": (?P<ts>-?[0-9]{1,18})\}$')
    real = src.parse_lines_columnar
    monkeypatch.setattr(src, "parse_lines_columnar", lambda lines: real(lines, loose))
    bad = _columnar_disagreements(_lines())
    assert any(b'"partition": "a/b"' in line for line, _, _ in bad), bad
    assert any(b'"key": ""' in line for line, _, _ in bad)
    assert any(b"\\u0041" in line for line, _, _ in bad)  # an escape taken as its raw text


def test_the_jvm_parse_and_parse_line_agree_on_every_line(spark):
    lines = _lines()
    assert _disagreements(spark, lines) == []
    df = spark.createDataFrame([(ln,) for ln in lines], "line binary")
    fast = ex.jvm_parse(df).toArrow().column("fast").to_pylist()
    assert sum(fast) >= 41  # the generator's lines take the fast path; the tricky ones mostly not
    assert not fast[lines.index(b'{"key": 7, "partition": "p0", "payload": "x", "ts": 1}')]


def test_a_jvm_parse_without_the_layout_check_is_caught(spark, monkeypatch):
    """A deliberately broken variant: ``fast`` for every line whose fields Spark read and that pass the
    value checks, without comparing the line with the values' layout: a number read as a key string, a
    stringified object payload, an escape -- the comparison above finds them."""
    from pyspark.sql import functions as F

    def no_layout(df):
        parsed = df.select(F.col("line"), F.from_json(F.col("line").cast("string"), ex.JVM_PARSE_DDL).alias("j"))
        parsed = parsed.select("line", "j.key", "j.ts", "j.partition", "j.payload")
        fast = F.coalesce(F.col("key").isNotNull() & F.col("ts").isNotNull() & (F.length("key") > 0)
                          & (F.length("partition") > 0) & ~F.col("partition").startswith(".")
                          & ~F.col("partition").contains("/") & F.col("payload").isNotNull(), F.lit(False))
        return parsed.withColumn("fast", fast).select(
            "fast", "key", "ts", "partition", "payload",
            F.when(F.col("fast"), F.lit(None).cast("binary")).otherwise(F.col("line")).alias("line"))

    monkeypatch.setattr(ex, "jvm_parse", no_layout)
    bad = _disagreements(spark, _lines())
    assert any(line.startswith(b'{"key": 7,') for line, _, _ in bad), bad
    assert any(b'"payload": 5' in line for line, _, _ in bad)


@pytest.mark.parametrize("fmt", ["parquet", "avro"])
def test_mor_pipeline_with_parquet_or_avro_log_blocks(tmp_path, spark, fmt):
    """``log_block_format``: the MOR run's log files hold that data block type; hudi-rs reads the table as the
    model predicts (diff), with poison lines quarantined through the Python split."""
    from hudi import HudiTable

    from lakeio.hudiformat import logfile as lf
    from pipeline.diff import diff_run
    from pipeline.job import prepare_run, run_job

    root = tmp_path / "run"
    prepare_run(root, mode="async", table_type="mor", records=300, batches=3, seed=2, malformed=5,
                log_block_format=fmt, jvm_parse=fmt == "parquet")  # the JVM parse in a whole run too
    summary = run_job(root, spark=spark, progress=None)
    assert summary["records"] == 300 and summary["quarantined"] == 5
    logs = [p for p in (root / "table").rglob(".*.log.*") if ".hoodie" not in p.parts]  # not the metadata table's
    assert logs
    types = {b.block_type for p in logs for b in lf.read_log_file(str(p))} - {lf.DELETE_BLOCK}
    assert types == {lf.PARQUET_DATA_BLOCK if fmt == "parquet" else lf.AVRO_DATA_BLOCK}
    want = {r.key: (r.key, r.ts, r.partition, r.payload) for lines in src.read_inputs(root / "input")
            for r, _ in lines if r is not None}
    got = sorted(r for b in HudiTable(str(root / "table")).read()
                 for r in zip(*(b.column(c).to_pylist() for c in ("key", "ts", "partition", "payload"))))
    assert got == sorted(want.values())
    report = diff_run(root)
    assert report.ok, report.render()


def test_bad_log_block_format_is_one_line(tmp_path):
    from lakeio.errors import UserError
    from pipeline.job import prepare_run

    with pytest.raises(UserError, match="--log-block-format: 'orc'; expected avro or parquet"):
        prepare_run(tmp_path / "r", log_block_format="orc")
    assert not (tmp_path / "r").exists()


def test_cli_log_block_format_and_jvm_parse(tmp_path, spark, capsys):
    from hoodie_lab.cli import main as cli
    from lakeio.hudiformat import logfile as lf

    out = tmp_path / "run"
    assert cli(["pipeline", "run", "--table-type", "mor", "--records", "80", "--batches", "2", "--malformed", "2",
                "--log-block-format", "parquet", "--jvm-parse", "--out", str(out), "--diff"]) == 0
    cfg = json.loads((out / "run.json").read_text())
    assert cfg["log_block_format"] == "parquet" and cfg["jvm_parse"] is True
    logs = [p for p in (out / "table").rglob(".*.log.*") if ".hoodie" not in p.parts]
    assert logs and {b.block_type for p in logs for b in lf.read_log_file(str(p))} - {lf.DELETE_BLOCK} == \
        {lf.PARQUET_DATA_BLOCK}


def test_every_kind_of_line_through_the_write_job(tmp_path, spark):
    """The generated source's write job (raw lines through the shuffle, judged in stage 1 to route them and
    again in the writer task): an input of every kind of line above -- canonical, valid in another layout,
    malformed, blank, one byte changed -- gives exactly the records and quarantined lines ``parse_line``
    predicts, on 2 writer tasks; hudi-rs reads what the model predicts (diff)."""
    from pipeline.diff import diff_run
    from pipeline.job import prepare_run, run_job

    root = tmp_path / "run"
    prepare_run(root, mode="async", table_type="mor", records=10, batches=1, seed=3, parallelism=2, buckets=4,
                log_block_format="parquet")
    lines = _lines()
    f = next((root / "input").iterdir())
    f.write_bytes(b"".join(ln + b"\n" for ln in lines) + b"\n")  # ... and an empty line at the end
    parsed = [src.parse_line(ln) for ln in lines if ln.strip()]
    run = json.loads((root / "run.json").read_text())
    run["records"] = sum(r is not None for r, _ in parsed)
    (root / "run.json").write_text(json.dumps(run))
    summary = run_job(root, spark=spark, progress=None)
    assert summary["records"] == run["records"]
    assert summary["quarantined"] == sum(r is None for r, _ in parsed) > 20
    from pipeline.job import read_quarantine
    from pipeline.run_dir import RunDir

    q = read_quarantine(RunDir(root))
    assert sorted(q.column("reason").to_pylist()) == sorted(why for r, why in parsed if r is None)
    report = diff_run(root)
    assert report.ok, report.render()
