"""The write job's packed shuffle (issue #19, speed; ``shuffle="packed"``, the default): stage 1 parses each
input row once and sends each writer task its records and malformed lines as one Arrow IPC stream per input
batch (:func:`pipeline.executor.parse_route_pack`), instead of a Spark row per record (``shuffle="rows"``: the
generated source's raw lines, judged again by the writer task; user data's parsed columns). Each writer task must
receive exactly what it receives with rows: the same records, typed alike, in the same order, and the same
malformed lines with the same reasons and raw text, in the same order -- for the generated source's lines of every
kind (with and without ``jvm_parse``) and for user data. A packing that loses the order is caught."""

from __future__ import annotations

import functools
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import executor as ex
from pipeline import source as src
from pipeline.job import default_config, split_batch
from tests.test_pipeline_speed import _lines

pytestmark = pytest.mark.spark


def _spec(tmp_path, parallelism: int, schema: pa.Schema = ex.RECORD_SCHEMA, **cfg) -> dict:
    cfg = default_config(parallelism=parallelism, buckets=parallelism + 2, **cfg)
    return ex.make_spec(cfg, base_path=tmp_path / "t", table_name="t", instant="20260101000000000", batch=0,
                        own_pending=(), quarantine_dir=tmp_path / "q", schema=schema, **ex.write_fields(cfg))


def _received(df, spec: dict, split) -> dict[int, tuple]:
    """What each writer task receives through the batch's shuffle (:func:`pipeline.executor.shuffled`, then
    :func:`pipeline.executor.task_rows`, as ``write_partition`` calls it): task -> (records as a table, malformed
    lines as (reason, raw) pairs)."""
    schema = ex._schema(spec)

    def probe(batches):
        from pyspark import TaskContext

        task = TaskContext.get().partitionId()
        good, bad = ex.task_rows(batches, task, split, schema)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, good.schema) as w:
            w.write_table(good)
        yield pa.RecordBatch.from_pydict({"task": pa.array([task], pa.int32()),
                                          "good": pa.array([sink.getvalue().to_pybytes()], pa.binary()),
                                          "bad": [json.dumps(list(zip(bad.column("_reason").to_pylist(),
                                                                      bad.column("_raw").to_pylist())))]})
    rows = ex.shuffled(df, spec, split).mapInArrow(probe, "task int, good binary, bad string").collect()
    return {r["task"]: (pa.ipc.open_stream(r["good"]).read_all(), [tuple(x) for x in json.loads(r["bad"])])
            for r in rows}


def _assert_same(packed: dict, rows: dict, parallelism: int) -> None:
    assert sorted(packed) == sorted(rows) == list(range(parallelism))
    for t in range(parallelism):
        (pg, pb), (rg, rb) = packed[t], rows[t]
        assert pg.schema.equals(rg.schema), t
        assert pg.to_pylist() == rg.to_pylist(), f"task {t}: records differ"  # values and order
        assert pb == rb, f"task {t}: malformed lines differ"


def _line_frame(spark, lines: list[bytes], splits: int):
    """The generated source's batch as the job's text source gives it: one binary column ``line``, in
    ``splits`` input partitions (stage-1 tasks), the same on every evaluation (a row's ``seq`` is its input
    partition and its position there)."""
    rdd = spark.sparkContext.parallelize([(ln,) for ln in lines], splits)  # the same slices on every run
    return spark.createDataFrame(rdd, "line binary")


@pytest.mark.parametrize("parallelism,jvm", [(2, False), (3, False), (2, True)])
def test_packed_tasks_receive_what_row_tasks_receive_for_every_kind_of_line(tmp_path, spark, parallelism, jvm):
    lines = _lines() * 40  # > 10,000 rows: several Arrow batches per stage-1 task
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "2000")
    try:
        df = _line_frame(spark, lines, 3)
        spec = _spec(tmp_path, parallelism, jvm_parse=jvm)
        packed = _received(df, {**spec, "shuffle": "packed"}, split_batch)
        rows = _received(df, {**spec, "shuffle": "rows"}, split_batch)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    _assert_same(packed, rows, parallelism)
    assert sum(g.num_rows for g, _ in packed.values()) > 4000 and sum(len(b) for _, b in packed.values()) > 1000
    # ... and what parse_line says of each line, in the tasks' input order
    want_bad = [why for ln in lines if ln.strip() for r, why in [src.parse_line(ln)] if r is None]
    assert sorted(why for _, b in packed.values() for why, _ in b) == sorted(want_bad)


def _user_data(d, fmt: str) -> None:
    """Parquet: typed columns, a timestamp, columns named like the job's own (``task``, ``seq``, ``route``);
    JSON: records with every kind of malformed one (no key, a null key, a partition with ``/``, not JSON)."""
    import datetime as dt

    d.mkdir()
    ids = list(range(300))
    if fmt == "parquet":
        t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
        pq.write_table(pa.table({
            "id": pa.array(ids, pa.int64()), "seq": pa.array(ids, pa.int64()), "p": [f"r{i % 3}" for i in ids],
            "task": [f"t{i}" for i in ids], "route": pa.array([i * 7 for i in ids], pa.int32()),
            "when": pa.array([t0 + dt.timedelta(seconds=i) for i in ids], pa.timestamp("ms", tz="UTC")),
            "f": pa.array([i / 4 for i in ids], pa.float32())}), d / "1.parquet")
        return
    bad = [json.dumps({"seq": 1, "p": "x"}), json.dumps({"id": None, "seq": 2, "p": "x"}),
           json.dumps({"id": "c", "seq": 3, "p": "a/b"}), "not json", json.dumps({"id": "d"})]
    recs = [json.dumps({"id": f"k{i}", "seq": i, "p": f"r{i % 3}", "v": "x" * (i % 5)}) if i % 7 else bad[i % 5]
            for i in ids]
    (d / "1.json").write_text("".join(r + "\n" for r in recs))


@pytest.mark.parametrize("fmt", ["parquet", "json"])
def test_packed_tasks_receive_what_row_tasks_receive_for_user_data(tmp_path, spark, fmt):
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType

    d = tmp_path / "data"
    _user_data(d, fmt)
    spec_in = src.build_spec(d, fmt, "id", "p", "seq")
    src.copy_inputs(spec_in, tmp_path / "in")
    files = sorted((tmp_path / "in").iterdir())
    schema = StructType([StructField("path", StringType()), StructField("content", BinaryType())])
    df = spark.createDataFrame([(f"file://{f}", f.read_bytes()) for f in files], schema)
    spec = _spec(tmp_path, 3, spec_in.arrow_schema(), input_spec=spec_in.to_dict(), input_dir=str(d),
                 format=fmt, record_key="id", partition_field="p", ordering_field="seq")
    split = functools.partial(split_batch, spec=spec_in)
    packed = _received(df, {**spec, "shuffle": "packed"}, split)
    rows = _received(df, {**spec, "shuffle": "rows"}, split)
    _assert_same(packed, rows, 3)
    n_bad = sum(len(b) for _, b in packed.values())
    assert sum(g.num_rows for g, _ in packed.values()) + n_bad == 300 and n_bad == (0 if fmt == "parquet" else 43)


def test_a_packing_that_loses_the_order_is_caught(tmp_path, spark, monkeypatch):
    """The deliberate break: the writer task unpacks its packed rows last first -- every record and line still
    arrives, at the right task, out of input order; the comparison with rows fails."""
    real = ex._unpack

    def reversed_unpack(packed):
        packed = packed.combine_chunks() if isinstance(packed, pa.ChunkedArray) else packed
        return real(packed.take(pa.array(range(len(packed) - 1, -1, -1))))
    df = _line_frame(spark, _lines() * 10, 2)
    spec = _spec(tmp_path, 2)
    rows = _received(df, {**spec, "shuffle": "rows"}, split_batch)
    from pyspark import cloudpickle

    monkeypatch.setattr(ex, "_unpack", reversed_unpack)
    cloudpickle.register_pickle_by_value(ex)  # the tasks run the patched module, not their own import of it
    try:
        packed = _received(df, {**spec, "shuffle": "packed"}, split_batch)
    finally:
        cloudpickle.unregister_pickle_by_value(ex)
    with pytest.raises(AssertionError, match="differ"):
        _assert_same(packed, rows, 2)
