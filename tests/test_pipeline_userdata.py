"""Issue #19 item 3: ``pipeline run --input DIR --format json|csv|parquet`` over the user's own files.

The schema is taken from the data and evolved file by file by Hudi's schema-on-write rules (a new nullable column
is added, int -> long -> float -> double -> string widens, a dropped column or another type change is refused);
each record is judged by the one validation ``pipeline.source.parse_file`` (quarantine with a reason); deletes come
from a boolean ``--delete-field`` column. The Spark tests run the job, read the table through hudi-rs with the
user's columns and compare the run with the model (``diff``); a writer that ignores the delete column is caught.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeio.errors import UserError
from pipeline import source as src


def _json_dir(d, files: dict[str, list]) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for name, recs in files.items():
        (d / name).write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in recs))


# ------------------------------------------------------------------------------------------ schema evolution
@pytest.mark.parametrize("old, new, want", [
    ((("a", "long"),), (("a", "long"), ("b", "string")), (("a", "long"), ("b", "string"))),  # add a column
    ((("a", "long"),), (("a", "double"),), (("a", "double"),)),                              # long -> double
    ((("a", "int"),), (("a", "string"),), (("a", "string"),)),                               # int -> string
    ((("a", "double"),), (("a", "long"),), (("a", "double"),)),        # a narrower batch: the table stays wide
    ((("a", "date"),), (("a", "string"),), (("a", "string"),)),
    ((("a", "long"),), (("a", "null"),), (("a", "long"),)),            # only nulls in the batch
])
def test_evolve_allows_what_hudi_allows(old, new, want):
    assert src.evolve(old, new, "f") == want


@pytest.mark.parametrize("old, new, words", [
    ((("a", "long"), ("b", "string")), (("a", "long"),), ["column 'b'", "missing", "dropped column"]),
    ((("a", "boolean"),), (("a", "long"),), ["column 'a'", "boolean -> long", "isTypeUpdateAllow"]),
    ((("a", "long"),), (("a", "date"),), ["long -> date"]),
    ((("a", "binary"),), (("a", "string"),), ["binary -> string"]),
])
def test_evolve_refuses_what_hudi_refuses(old, new, words):
    with pytest.raises(UserError) as e:
        src.evolve(old, new, "part-2.json")
    msg = str(e.value)
    assert msg.startswith("part-2.json: ") and "\n" not in msg
    for w in words:
        assert w in msg


def test_schema_from_json_data_majority_and_numbers(tmp_path):
    _json_dir(tmp_path, {"a.json": [{"k": "x", "n": 1, "f": 1}, {"k": "y", "n": 2, "f": 2.5},
                                    {"k": "z", "n": "oops", "f": None, "e": None}]})
    spec = src.build_spec(tmp_path, "json", "k", "k", "n")
    assert spec.schema == (("k", "string"), ("n", "long"), ("f", "double"), ("e", "string"))
    rows = src.parse_file((tmp_path / "a.json").read_bytes(), spec, 0)
    assert [r.values if r else why for r, why, _ in rows] == [
        ("x", 1, 1.0, None), ("y", 2, 2.5, None),
        "column n: a JSON string, not an integer (the column is long in this file)"]


def test_build_spec_evolves_across_files_and_casts_earlier_records(tmp_path):
    _json_dir(tmp_path, {"1.json": [{"id": "a", "ts": 1, "p": "x", "v": 5}],
                         "2.json": [{"id": "b", "ts": 2, "p": "x", "v": 1.5, "extra": "new"}]})
    spec = src.build_spec(tmp_path, "json", "id", "p", "ts")
    assert spec.schema == (("id", "string"), ("ts", "long"), ("p", "string"), ("v", "double"),
                           ("extra", "string"))
    (r0, _, _), = src.parse_file((tmp_path / "1.json").read_bytes(), spec, 0)
    assert r0.values == ("a", 1, "x", 5.0, None)  # written in the evolved schema: long 5 as double, new column null


# ------------------------------------------------------------------------------------------ record validation
def test_json_records_malformed_go_to_quarantine_with_reasons(tmp_path):
    _json_dir(tmp_path, {"a.json": [
        {"id": "a", "ts": 1, "p": "x", "gone": False},
        {"ts": 2, "p": "x"},                                 # no key field
        {"id": None, "ts": 3, "p": "x"},                     # null key
        {"id": "", "ts": 3, "p": "x"},                       # empty key
        {"id": "b", "p": "x"},                               # no ordering value
        {"id": "c", "ts": 4, "p": "a/b"},                    # partition with /
        {"id": "d", "ts": 5},                                # no partition
        {"id": "e", "ts": 6, "p": ".."},
        "not json", "[1, 2]", '{"id": "\\ud800", "ts": 7, "p": "x"}',
        {"id": "f", "ts": 8, "p": "y", "gone": True}]})
    spec = src.build_spec(tmp_path, "json", "id", "p", "ts", "gone")
    got = src.parse_file((tmp_path / "a.json").read_bytes(), spec, 0)
    reasons = [why for _, why, _ in got]
    assert reasons[0] is None and reasons[-1] is None
    assert got[-1][0].deleted and not got[0][0].deleted
    assert reasons[1] == reasons[2] == reasons[3] == "missing record key (id)"
    assert reasons[4] == "missing ordering field (ts)"
    assert reasons[5].startswith("partition value of p is not a single path segment")
    assert reasons[6] == "missing partition (p)"
    assert reasons[7].startswith("partition value of p is not a single path segment")
    assert reasons[8] == "malformed JSON" and reasons[9] == "not a JSON object (a JSON array)"
    assert "lone UTF-16 surrogate" in reasons[10]
    # the job's split agrees with read_inputs (one validation)
    from pipeline.job import split_batch

    src.copy_inputs(spec, tmp_path / "in")
    f = tmp_path / "in" / "part-00000.json"
    good, bad = split_batch(pa.table({"path": [f"file://{f}"], "content": [f.read_bytes()]}), spec)
    assert good.column("id").to_pylist() == ["a", "f"] and len(bad) == 10
    assert [r.key for r, _ in src.read_inputs(tmp_path / "in", spec)[0] if r] == ["a", "f"]


def test_csv_types_rows_and_reasons(tmp_path):
    (tmp_path / "a.csv").write_text('id,ts,p,amount,gone\nu1,1,x,10,false\nu2,2,y,2.5,true\nu3,x,y,1,false\n'
                                    'u4,4,y\n"u5",5,"a/b",1,false\n,6,x,1,false\n')
    spec = src.build_spec(tmp_path, "csv", "id", "p", "ts", "gone")
    assert spec.schema == (("id", "string"), ("ts", "long"), ("p", "string"), ("amount", "double"),
                           ("gone", "boolean"))
    got = src.parse_file((tmp_path / "a.csv").read_bytes(), spec, 0)
    assert got[0][0].values == ("u1", 1, "x", 10.0, False) and got[1][0].deleted
    assert got[2][1] == "column ts: not an integer (the column is long in this file)"
    assert got[3][1] == "3 fields where the header has 5"
    assert got[4][1].startswith("partition value of p")
    assert got[5][1] == "missing record key (id)"


def test_parquet_typed_rows_and_a_truncated_file_quarantined_whole(tmp_path):
    t = pa.table({"id": pa.array([1, 2, None], pa.int64()), "ts": pa.array([1, 2, 3], pa.int32()),
                  "p": ["a", "b/c", "a"], "v": pa.array([1.5, 2.5, 3.5], pa.float32())})
    pq.write_table(t, tmp_path / "1.parquet")
    pq.write_table(t.slice(0, 1), tmp_path / "2.parquet")
    data = (tmp_path / "2.parquet").read_bytes()
    (tmp_path / "2.parquet").write_bytes(data[: len(data) // 2])
    spec = src.build_spec(tmp_path, "parquet", "id", "p", "ts")
    assert spec.schema == (("id", "long"), ("ts", "int"), ("p", "string"), ("v", "float"))
    assert spec.file_schemas[1] is None
    got = src.parse_file((tmp_path / "1.parquet").read_bytes(), spec, 0)
    assert got[0][0].values == (1, 1, "a", 1.5)
    assert got[1][1].startswith("partition value of p") and got[2][1] == "missing record key (id)"
    (row, why, raw), = src.parse_file((tmp_path / "2.parquet").read_bytes(), spec, 1)
    assert row is None and why.startswith("not a readable parquet file") and raw == "<input file 1>"


@pytest.mark.parametrize("args, words", [
    (("json", "nope", "p", "ts"), ["--record-key nope", "no such column", "columns: id, ts, p"]),
    (("json", "id", "nope", "ts"), ["--partition-field nope", "no such column"]),
    (("json", "id", "p", "ts", "nope"), ["--delete-field nope", "no such column"]),
    (("json", "id", "p", "ts", "p"), ["--delete-field p", "column type string", "boolean"]),
    (("xml", "id", "p", "ts"), ["--format", "'xml'"]),
    (("csv", "id", "p", "ts"), ["--input", "no csv files"]),
    (("json", None, "p", "ts"), ["--record-key", "required"]),
])
def test_build_spec_refuses_schema_level_problems_with_one_line(tmp_path, args, words):
    _json_dir(tmp_path, {"a.json": [{"id": "a", "ts": 1, "p": "x"}]})
    with pytest.raises(UserError) as e:
        src.build_spec(tmp_path, *args)
    msg = str(e.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)


def test_a_file_of_only_malformed_records_is_quarantined_not_a_dropped_schema(tmp_path):
    _json_dir(tmp_path, {"1.json": [{"id": "a", "ts": 1, "p": "x"}], "2.json": ["not json", "[]"]})
    (tmp_path / "3.csv").write_text("x")
    spec = src.build_spec(tmp_path, "json", "id", "p", "ts")
    assert spec.file_schemas[1] is None and spec.schema == (("id", "string"), ("ts", "long"), ("p", "string"))
    assert [why for _, why, _ in src.parse_file((tmp_path / "2.json").read_bytes(), spec, 1)] == [
        "malformed JSON", "not a JSON object (a JSON array)"]
    with pytest.raises(UserError, match="no file has a readable record"):  # a CSV of a header only
        src.build_spec(tmp_path, "csv", "x", "x", "x")


def test_build_spec_refuses_nested_json_and_a_refused_schema_change(tmp_path):
    _json_dir(tmp_path / "n", {"a.json": [{"id": "a", "ts": 1, "p": "x", "o": {"x": 1}}]})
    with pytest.raises(UserError, match="column 'o' holds JSON objects or arrays"):
        src.build_spec(tmp_path / "n", "json", "id", "p", "ts")
    _json_dir(tmp_path / "c", {"1.json": [{"id": "a", "ts": 1, "p": "x", "flag": True}],
                               "2.json": [{"id": "a", "ts": 2, "p": "x", "flag": 7}]})
    with pytest.raises(UserError, match=r"2\.json: column 'flag' changes type boolean -> long"):
        src.build_spec(tmp_path / "c", "json", "id", "p", "ts")


# ------------------------------------------------------------------------------------------ end to end (Spark)
def _user_run(tmp_path, spark, table_type, fmt, inputs, **cols):
    from pipeline.job import prepare_run, run_job

    root = tmp_path / f"run-{fmt}-{table_type}"
    prepare_run(root, mode="async", table_type=table_type, input_dir=str(inputs), format=fmt, **cols)
    summary = run_job(root, spark=spark, progress=None)
    return root, summary


def _hudi_rows(table, columns):
    from hudi import HudiTable

    batches = HudiTable(str(table)).read()
    return sorted((r for b in batches for r in zip(*(b.column(c).to_pylist() for c in columns))), key=repr)


JSON_INPUT = {
    "a.json": [{"id": "u1", "seq": 1, "region": "eu", "amount": 10, "gone": False},
               {"id": "u2", "seq": 2, "region": "us", "amount": 20, "gone": False},
               {"id": "u3", "seq": 3, "region": "eu", "amount": 30},
               {"id": None, "seq": 4, "region": "eu", "amount": 1},
               {"id": "bad", "seq": 5, "region": "a/b", "amount": 1}, "not json"],
    "b.json": [{"id": "u1", "seq": 10, "region": "eu", "amount": 11.5, "gone": False, "note": "upd"},
               {"id": "u2", "seq": 11, "region": "us", "amount": 0, "gone": True},      # delete
               {"id": "u4", "seq": 12, "region": "us", "amount": 40.25, "note": "new"},
               {"id": "u3", "seq": 0, "region": "eu", "amount": 99.0},                  # older: loses
               {"id": "u5", "seq": "x", "region": "us", "amount": 1.0}],
}
JSON_ROWS = [("u1", 10, "eu", 11.5, False, "upd"), ("u3", 3, "eu", 30.0, None, None),
             ("u4", 12, "us", 40.25, None, "new")]
JSON_COLS = dict(record_key="id", partition_field="region", ordering_field="seq", delete_field="gone")


@pytest.mark.spark
@pytest.mark.parametrize("table_type", ["mor", "cow"])
def test_json_user_data_with_deletes_and_evolution_read_by_hudi_rs_and_diffed(tmp_path, spark, table_type):
    from pipeline.diff import diff_run

    _json_dir(tmp_path / "data", JSON_INPUT)
    before = {p.name: p.read_bytes() for p in (tmp_path / "data").iterdir()}
    root, summary = _user_run(tmp_path, spark, table_type, "json", tmp_path / "data", **JSON_COLS)
    assert summary["records"] == 7 and summary["quarantined"] == 4
    assert _hudi_rows(root / "table", ("id", "seq", "region", "amount", "gone", "note")) == JSON_ROWS
    report = diff_run(root, spark=spark)
    assert report.ok, report.render()
    assert any("3 row(s) read through hudi-rs" in c for c in report.checked)
    assert {p.name: p.read_bytes() for p in (tmp_path / "data").iterdir()} == before  # the user's files: read only


@pytest.mark.spark
def test_csv_and_parquet_user_data(tmp_path, spark):
    from pipeline.diff import diff_run

    d = tmp_path / "csv"
    d.mkdir()
    (d / "1.csv").write_text("k,ts,p,v\n1,1,a,x\n2,2,b,y\n3,z,b,bad\n")
    (d / "2.csv").write_text("k,ts,p,v\n1,5,a,x2\n4,6,b,w\n")
    root, summary = _user_run(tmp_path, spark, "cow", "csv", d, record_key="k", partition_field="p",
                              ordering_field="ts")
    assert summary["quarantined"] == 1
    assert _hudi_rows(root / "table", ("k", "ts", "p", "v")) == sorted(
        [(1, 5, "a", "x2"), (2, 2, "b", "y"), (4, 6, "b", "w")], key=repr)
    assert diff_run(root, spark=spark).ok

    d = tmp_path / "pq"
    d.mkdir()
    pq.write_table(pa.table({"k": ["a", "b"], "ts": pa.array([1, 2], pa.int32()), "p": ["x", "y"]}), d / "1.parquet")
    pq.write_table(pa.table({"k": ["a", "c"], "ts": pa.array([3, 4], pa.int64()), "p": ["x", "y"],
                             "w": [1.5, None]}), d / "2.parquet")
    (d / "3.parquet").write_bytes(b"PAR1 truncated")
    root, summary = _user_run(tmp_path, spark, "mor", "parquet", d, record_key="k", partition_field="p",
                              ordering_field="ts")
    assert summary["quarantined"] == 1  # the unreadable file, whole
    assert _hudi_rows(root / "table", ("k", "ts", "p", "w")) == sorted(
        [("a", 3, "x", 1.5), ("b", 2, "y", None), ("c", 4, "y", None)], key=repr)
    report = diff_run(root)
    assert report.ok, report.render()


@pytest.mark.spark
def test_diff_catches_a_writer_that_ignores_the_delete_column(tmp_path, spark, monkeypatch):
    """The broken variant: the writer tasks are not told ``--delete-field`` (their writers fall back to Hudi's
    ``_hoodie_is_deleted``, which the data lacks); the deleted key stays in the table, and the diff's row
    comparison (hudi-rs) reports it. (The tasks run in Spark's Python workers: the variant is made where the
    driver builds their write spec.)"""
    import pipeline.executor as executor
    from pipeline.diff import diff_run

    orig = executor.write_fields
    monkeypatch.setattr(executor, "write_fields", lambda cfg: orig(cfg) | {"delete_field": None})
    _json_dir(tmp_path / "data", JSON_INPUT)
    root, _ = _user_run(tmp_path, spark, "mor", "json", tmp_path / "data", **JSON_COLS)
    monkeypatch.undo()
    report = diff_run(root)
    assert not report.ok
    assert any("table contents read through hudi-rs" in d and "u2" in d for d in report.differences), \
        report.render()


@pytest.mark.spark
def test_user_data_is_parsed_routed_and_written_by_the_writer_tasks(tmp_path, spark):
    """Issue #19 items 1+3 together: the user's records go through the executor-side write path. An int record
    key is routed as Hudi hashes it (``BucketIdentifier`` over the key's string), every writer task writes the
    file groups of its buckets with the user's schema -- typed columns (timestamp, date, float, binary) and
    columns named like the write job's own (``task``, ``seq``, ``route``) included -- and the delete column."""
    import datetime as dt

    from hudi import HudiTable

    from lakeio.hudiformat import bucket as bk
    from lakeio.ondisk.reader import read_table
    from pipeline.diff import diff_run
    from pipeline.job import prepare_run, run_job

    P, B, n = 3, 5, 40
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)

    def part(ids, seq0, gone=()):
        return pa.table({
            "id": pa.array(ids, pa.int64()), "seq": pa.array([seq0 + i for i in ids], pa.int64()),
            "p": [f"r{i % 2}" for i in ids], "task": [f"t{i}" for i in ids],
            "route": pa.array([i * 7 for i in ids], pa.int32()),
            "when": pa.array([t0 + dt.timedelta(seconds=seq0 + i) for i in ids], pa.timestamp("ms", tz="UTC")),
            "day": pa.array([dt.date(2026, 1, 1 + i % 28) for i in ids], pa.date32()),
            "f": pa.array([i / 4 for i in ids], pa.float32()), "blob": [bytes([i, seq0 % 256]) for i in ids],
            "gone": [i in gone for i in ids]})
    d = tmp_path / "data"
    d.mkdir()
    pq.write_table(part(list(range(n)), 0), d / "1.parquet")
    pq.write_table(part(list(range(0, n, 2)), 1000, gone={0, 10, 20}), d / "2.parquet")  # updates, 3 deletes
    root = tmp_path / "run"
    prepare_run(root, mode="async", table_type="mor", input_dir=str(d), format="parquet", record_key="id",
                partition_field="p", ordering_field="seq", delete_field="gone", parallelism=P, buckets=B)
    summary = run_job(root, spark=spark, progress=None)
    assert summary["records"] == n + n // 2 and summary["quarantined"] == 0

    cols = ("id", "seq", "p", "task", "route", "when", "day", "f", "blob", "gone")
    batches = HudiTable(str(root / "table")).read()
    got = {r[0]: r for b in batches for r in zip(*(b.column(c).to_pylist() for c in cols))}
    want = {}
    for tbl in (part(list(range(n)), 0), part(list(range(0, n, 2)), 1000, gone={0, 10, 20})):
        for r in tbl.to_pylist():
            if r["gone"]:
                want.pop(r["id"], None)
            else:
                want[r["id"]] = tuple(r[c] for c in cols)
    assert sorted(got) == sorted(want) and len(got) == n - 3
    assert got == want
    # routing: every row sits in the file group of its key's bucket (Hudi's hash of the key's string "17"),
    # written by the task that bucket is routed to; every task wrote
    keys = [k for b in batches for k in b.column("_hoodie_record_key").to_pylist()]
    names = [f for b in batches for f in b.column("_hoodie_file_name").to_pylist()]
    assert sorted(keys) == sorted(str(i) for i in want)
    for k, name in zip(keys, names):
        assert bk.bucket_from_file_id(name.lstrip(".")) == bk.bucket_id(k, B), (k, name)  # base or log file
    files = list(read_table(root / "table").base_files) + list(read_table(root / "table").log_files)
    assert {int(f.write_token.split("-")[0]) for f in files} == set(range(P))
    for f in files:
        assert bk.task_of(bk.bucket_from_file_id(f.file_id), P) == int(f.write_token.split("-")[0])
    report = diff_run(root)
    assert report.ok, report.render()
    assert any(f"{P} writer task(s)" in c for c in report.checked)
