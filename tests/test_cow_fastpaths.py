"""The copy-on-write writer task's fast paths (issue #19, speed), each equal to the path it replaces:

* the bucket-index write reads the old base file once and looks its keys up once: the merge takes the rows and
  the positions the lookup found (:func:`lakeio.hudiformat.cow.read_base_rows`,
  :meth:`lakeio.hudiformat.index.SimpleIndex.lookup`) instead of reading the key column, then the whole file, and
  looking the keys up again -- same files, same rows, same footers;
* :func:`lakeio.hudiformat.bucket.bucket_ids` hashes an ASCII string array from its buffers (no Python string
  per key) -- the same bucket as :func:`lakeio.hudiformat.bucket.bucket_id` (``BucketIdentifier``) for each key;
* base files write the record-key data column plain, as ``_hoodie_record_key`` (distinct in a file): only its
  encoding differs, the values are the same;
* base files keep a column's dictionary only where parquet-mr (Hudi's writer) would: when it compresses the
  column's first page (:func:`lakeio.hudiformat.basefile.dictionary_pays`); a column of distinct values (an
  ordering field, a payload) is written plain -- the same rows and footers as with a dictionary everywhere.

A merge given wrong positions is caught by the same comparison."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeio.hudiformat import HudiTableWriter
from lakeio.hudiformat import bucket as bk
from lakeio.hudiformat import cow

hudi = pytest.importorskip("hudi")
from hudi import HudiTable  # noqa: E402

SCHEMA = pa.schema([("key", pa.string()), ("ts", pa.int64()), ("p", pa.string()), ("v", pa.string()),
                    ("_hoodie_is_deleted", pa.bool_())])


def _rows(spec):
    """(key, ts, partition, deleted) tuples -> a batch (value: key@ts)."""
    return pa.table({"key": [k for k, _, _, _ in spec], "ts": [t for _, t, _, _ in spec],
                     "p": [p for _, _, p, _ in spec], "v": [f"{k}@{t}" for k, t, _, _ in spec],
                     "_hoodie_is_deleted": [d for _, _, _, d in spec]}, schema=SCHEMA)


def _batches():
    first = [(f"k{i:03d}", 10, f"p{i % 2}", False) for i in range(60)]
    second = ([(f"k{i:03d}", 20, f"p{i % 2}", False) for i in range(0, 60, 3)]       # updates
              + [(f"k{i:03d}", 5, f"p{i % 2}", False) for i in range(1, 60, 6)]      # older ordering value: lose
              + [(f"k{i:03d}", 30, f"p{i % 2}", True) for i in range(2, 60, 9)]      # deletes
              + [("k004", 25, "p0", False), ("k004", 27, "p0", False), ("k004", 27, "p0", False),
                 ("k004", 26, "p0", False)]                                            # duplicates in a batch
              + [(f"n{i:03d}", 20, f"p{i % 2}", False) for i in range(15)])          # inserts
    third: list = []                                                                   # an empty batch
    fourth = ([("k002", 40, "p0", False), ("gone", 40, "p1", True), ("k003", 19, "p1", True)]  # re-insert a
              + [(f"k{i:03d}", 50, f"p{i % 2}", False) for i in range(30, 60)]       # deleted key, delete an
              + [("k031", 50, "p1", True)])                                            # absent one, a stale delete; a tie
    rng = random.Random(3)  # rows out of key order: the files' row order is not the keys' order
    rng.shuffle(first)
    rng.shuffle(second)  # the duplicates of k004: the greatest ts (27, twice, equal rows) wins in any order
    fourth = rng.sample(fourth[:-1], len(fourth) - 1) + fourth[-1:]  # k031's delete stays after its update
    return [_rows(b) for b in (first, second, third, fourth)]


def _write(path, batches, num_buckets: int = 3) -> HudiTableWriter:
    w = HudiTableWriter(path, "cow", 8, record_key="key", ordering_field="ts", partition_field="p", table_name="t")
    for i, b in enumerate(batches):
        t = f"202601011200{i:02d}000"
        w.start(t)
        w.commit(t, f"202601011200{i:02d}500", w.write_batch(t, b, "upsert", num_buckets=num_buckets))
    return w


def _files(path) -> dict:
    """Every base file: its rows and its footer's key-value metadata, by path."""
    out = {}
    for f in sorted(path.rglob("*.parquet")):
        if ".hoodie" not in f.parts:
            out[str(f.relative_to(path))] = (pq.read_table(f).to_pylist(), pq.ParquetFile(f).metadata.metadata)
    return out


def _reference(monkeypatch):
    """The merge's own path: write_bucket without what the lookup read (the merge reads the file and looks the
    keys up itself)."""
    orig = cow.CopyOnWriteContext.write_bucket

    def plain(self, fid, base, updates, inserts, old=None, positions=None):
        return orig(self, fid, base, updates, inserts)
    monkeypatch.setattr(cow.CopyOnWriteContext, "write_bucket", plain)


def test_the_merge_with_the_lookups_rows_equals_the_merge_on_its_own(tmp_path, monkeypatch):
    batches = _batches()
    _write(tmp_path / "fast", batches)
    with monkeypatch.context() as m:
        _reference(m)
        _write(tmp_path / "ref", batches)
    fast, ref = _files(tmp_path / "fast"), _files(tmp_path / "ref")
    assert len(fast) >= 9 and fast == ref
    # and the table is what the batches say (hudi-rs reads it): the greatest ordering value wins, deletes drop
    expect: dict = {}
    for b in batches:
        best: dict = {}
        for r in b.to_pylist():
            if r["key"] not in best or not best[r["key"]]["ts"] > r["ts"]:
                best[r["key"]] = r
        for k, r in best.items():
            if k in expect and expect[k]["ts"] > r["ts"]:
                continue
            if r["_hoodie_is_deleted"]:
                expect.pop(k, None)
            else:
                expect[k] = r
    got = HudiTable(str(tmp_path / "fast")).read()
    got = pa.Table.from_batches(got).select(["key", "ts", "v"]).to_pylist() if got else []
    assert sorted((r["key"], r["ts"], r["v"]) for r in got) == sorted(
        (k, r["ts"], r["v"]) for k, r in expect.items())
    # the cases occurred: duplicates (greatest ts), a deleted key re-inserted, a stale delete that lost
    assert expect["k004"]["ts"] == 27 and expect["k002"]["ts"] == 40 and expect["k003"]["ts"] == 20
    assert "k011" not in expect and "k031" not in expect  # k031: an update and a delete at one ts, the later wins


def test_a_merge_given_wrong_positions_is_caught(tmp_path, monkeypatch):
    batches = _batches()
    with monkeypatch.context() as m:
        _reference(m)
        _write(tmp_path / "ref", batches)
    orig = cow.CopyOnWriteContext.write_bucket

    def off_by_one(self, fid, base, updates, inserts, old=None, positions=None):
        if positions is not None and len(positions) > 1:
            positions = np.roll(positions, 1)
        return orig(self, fid, base, updates, inserts, old, positions)
    monkeypatch.setattr(cow.CopyOnWriteContext, "write_bucket", off_by_one)
    _write(tmp_path / "broken", batches)
    assert _files(tmp_path / "broken") != _files(tmp_path / "ref")


def test_ascii_bucket_ids_equal_bucket_id_of_each_key():
    rng = np.random.default_rng(7)
    alphabet = list("abcxyzAZ09-_:/ \x00\x7f")
    keys = ["".join(rng.choice(alphabet, size=int(rng.integers(0, 14)))) for _ in range(3000)]
    keys += [f"k{i:06d}" for i in range(500)] + ["", "\x00", "a\x00", "\x00\x00b"]
    arr = pa.array(keys, pa.string())
    for buckets in (1, 4, 7, 1000):
        want = np.array([bk.bucket_id(k, buckets) for k in keys])
        assert bk._ascii_bucket_ids(arr, buckets) is not None  # the fast path ran
        assert (bk.bucket_ids(arr, buckets) == want).all()
        assert (bk.bucket_ids(arr.slice(101, 777), buckets) == want[101:878]).all()  # a slice (an offset)
        chunked = pa.chunked_array([arr.slice(0, 5), arr.slice(5, 45)])
        assert (bk.bucket_ids(chunked, buckets) == want[:50]).all()
    assert bk.bucket_ids(pa.array([], pa.string()), 4).tolist() == []
    # not ASCII, or nulls: the general path (the same buckets as bucket_id)
    wide = pa.array(["k\u00e9", "\u4e2d", "k1"])
    assert bk._ascii_bucket_ids(wide, 4) is None
    assert bk.bucket_ids(wide, 4).tolist() == [bk.bucket_id(k, 4) for k in ["k\u00e9", "\u4e2d", "k1"]]
    assert bk._ascii_bucket_ids(pa.array(["a", None]), 4) is None


def test_base_files_write_the_record_key_column_plain(tmp_path):
    _write(tmp_path / "t", _batches()[:2])
    for f in sorted((tmp_path / "t").rglob("*.parquet")):
        rg = pq.ParquetFile(f).metadata.row_group(0)
        enc = {rg.column(i).path_in_schema: rg.column(i).encodings for i in range(rg.num_columns)}
        assert "RLE_DICTIONARY" not in enc["key"] and "RLE_DICTIONARY" not in enc["_hoodie_record_key"]
        assert "RLE_DICTIONARY" in enc["p"]  # v (key@ts, distinct): plain, as parquet-mr writes it (below)


# ------------------------------------------------------------------------------- parquet-mr's dictionary choice
def test_dictionary_pays_is_parquet_mrs_first_page_rule():
    """``isCompressionSatisfying`` on the first page (20,000 values, or to 1 MiB of plain size): dictionary
    size + bit-packed ids < plain size. Sizes worked by hand below."""
    from lakeio.hudiformat.basefile import dictionary_pays

    assert dictionary_pays(pa.array(["a", "b"] * 5000))                       # 2 x 5 B + 1 + 1,250 < 50,000
    assert not dictionary_pays(pa.array([f"v{i}-123456" for i in range(30_000)]))  # distinct: dictionary = page
    assert not dictionary_pays(pa.array(np.arange(30_000, dtype=np.int64)))   # distinct ordering values
    assert dictionary_pays(pa.array(np.arange(30_000, dtype=np.int64) % 100))  # 800 + 1 + 17,500 < 160,000
    assert not dictionary_pays(pa.array(["x"]))                                # 5 + 1 < 5 is false
    assert dictionary_pays(pa.array([True, False] * 100))                      # booleans: Arrow's own default
    assert dictionary_pays(pa.array([None] * 10, pa.string()))                 # no value: nothing to decide
    # only the first page counts: 20,000 distinct values, then repeats -- and the other way round
    assert not dictionary_pays(pa.array(np.concatenate([np.arange(20_000), np.zeros(50_000, np.int64)])))
    assert dictionary_pays(pa.array(np.concatenate([np.zeros(20_000, np.int64), np.arange(50_000)])))
    # ... and a page ends at 1 MiB of plain values: 100-byte strings, 10,083 to a page, all distinct in the first
    # page (plain); counted to 20,000 values (10,100 distinct + 9,900 repeats) the dictionary would pay
    wide = [f"{i:0100d}" for i in range(10_100)] + ["0" * 100] * 9_900
    assert not dictionary_pays(pa.array(wide))
    # nulls are not values: a sparse column of two values pays
    assert dictionary_pays(pa.array([None, "aa", None, "bb"] * 5000))


def test_base_files_keep_a_dictionary_where_parquet_mr_would_and_the_same_values(tmp_path, monkeypatch):
    """The merged base files with the rule and with a dictionary on every column (the path before it): the same
    rows and footers; only the encodings of the distinct-valued columns differ (plain)."""
    from lakeio.hudiformat import basefile

    _write(tmp_path / "rule", _batches())
    new = _files(tmp_path / "rule")
    monkeypatch.setattr(basefile, "dictionary_pays", lambda column: True)
    _write(tmp_path / "all", _batches())
    old = _files(tmp_path / "all")
    assert new == old and len(new) >= 6
    monkeypatch.undo()
    for f in sorted((tmp_path / "rule").rglob("*.parquet")):
        if ".hoodie" in f.parts:
            continue
        rg = pq.ParquetFile(f).metadata.row_group(0)
        enc = {rg.column(i).path_in_schema: rg.column(i).encodings for i in range(rg.num_columns)}
        assert "RLE_DICTIONARY" not in enc["v"], f      # key@ts: distinct in a file
        assert "RLE_DICTIONARY" in enc["p"] and "RLE_DICTIONARY" in enc["_hoodie_partition_path"], f


def test_parquet_log_blocks_keep_a_dictionary_where_parquet_mr_would():
    """A MOR parquet data block is a parquet file parquet-mr writes (``HoodieParquetDataBlock``): the same
    first-page rule as base files -- a column of distinct values plain, a repetitive one with its dictionary."""
    import io

    from lakeio.hudiformat.logfile import parquet_data_content

    n = 5000
    rows = pa.table({"_hoodie_commit_time": ["20261128000000000"] * n,
                     "_hoodie_record_key": [f"k{i}" for i in range(n)],
                     "_hoodie_partition_path": ["p=a", "p=b"] * (n // 2),
                     "v": [f"value-{i:08d}" for i in range(n)], "ts": np.arange(n, dtype=np.int64),
                     "p": ["a", "b"] * (n // 2)})
    rg = pq.ParquetFile(io.BytesIO(parquet_data_content(rows, "{}"))).metadata.row_group(0)
    enc = {rg.column(i).path_in_schema: rg.column(i).encodings for i in range(rg.num_columns)}
    for plain in ("_hoodie_record_key", "v", "ts"):
        assert "RLE_DICTIONARY" not in enc[plain], (plain, enc[plain])
    for kept in ("_hoodie_commit_time", "_hoodie_partition_path", "p"):
        assert "RLE_DICTIONARY" in enc[kept], (kept, enc[kept])
    assert pq.read_table(io.BytesIO(parquet_data_content(rows, "{}"))).equals(rows)


# --------------------------------------------------------------------------------- the lookup's hash side
def test_positions_in_equals_index_in_on_any_keys():
    """:func:`lakeio.hudiformat.index.positions_in` (hashes the incoming keys, probes the file's) gives what
    ``pc.index_in(needles, value_set=haystack)`` gives: duplicates on either side (a value's first haystack row;
    every equal needle the same), absent values, empty sides, nulls, int keys."""
    import pyarrow.compute as pc

    from lakeio.hudiformat.index import positions_in

    rng = random.Random(7)
    cases = [(["a", "b"], []), ([], ["a"]), (["a", None, "b"], ["b", None, "a"]),
             (["x", "x", "y"], ["y", "x", "x", "y"]), ([1, 2, 3, 2], [3, 3, 2, 9])]
    for _ in range(2000):
        alpha = [f"k{i}" for i in range(rng.randint(1, 12))]
        cases.append(([rng.choice(alpha) for _ in range(rng.randint(0, 25))],
                      [rng.choice(alpha) for _ in range(rng.randint(0, 25))]))
    for needles, haystack in cases:
        typ = pa.int64() if needles and isinstance(needles[0], int) else pa.string()
        n, h = pa.array(needles, typ), pa.array(haystack, typ)
        want, got = pc.index_in(n, value_set=h), positions_in(n, h)
        assert got.type == want.type and got.to_pylist() == want.to_pylist(), (needles, haystack)


# ------------------------------------------------------------------------------ the merge's meta columns
def test_each_merged_version_is_the_old_file_with_its_name_updates_in_place_and_inserts_appended(tmp_path):
    """``HoodieMergeHandle`` over consecutive versions of every file group: each row of a version carries the
    version's file name; a key the batch did not touch keeps its old row (commit time, seqno, values) but the
    file name; the old rows that stay keep their order, replaced rows in place, new keys after them."""
    _write(tmp_path / "t", _batches())
    versions: dict = {}
    for f in sorted((tmp_path / "t").rglob("*.parquet")):
        if ".hoodie" not in f.parts:
            versions.setdefault(f.name.split("_")[0], []).append(f)  # file id -> versions (instant order)
    merged = 0
    for fid, files in versions.items():
        files.sort(key=lambda f: f.name.rsplit("_", 1)[1])
        prev = None
        for f in files:
            rows = pq.read_table(f).to_pylist()
            assert rows and all(r["_hoodie_file_name"] == f.name for r in rows), f
            if prev is not None:
                old_keys = [r["key"] for r in prev]
                new_keys = [r["key"] for r in rows]
                kept = [k for k in new_keys if k in set(old_keys)]
                assert kept == [k for k in old_keys if k in set(kept)], f  # the old order, deleted rows gone
                assert new_keys[:len(kept)] == kept, f  # ... then the inserts
                by_key = {r["key"]: r for r in prev}
                for r in rows:
                    o = by_key.get(r["key"])
                    if o is not None and o["_hoodie_commit_time"] == r["_hoodie_commit_time"]:  # untouched
                        assert {**o, "_hoodie_file_name": f.name} == r, f
                        merged += 1
            prev = rows
    assert merged > 20
