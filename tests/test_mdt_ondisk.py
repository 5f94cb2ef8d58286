"""The metadata table on disk (``lakeio/ondisk/mdt.py``): what a writer's commits leave in ``.hoodie/metadata``,
hudi-rs listing tables through it, the audit's MDT checks, corruption, rollback and redo, the real fixtures' MDTs,
and the Spark pipeline writing tables with an MDT that hudi-rs reads."""

from __future__ import annotations

import os
import random

import pytest

from lakeio.audit import audit_table
from lakeio.fixtures import extract_fixture, fixture_zips
from lakeio.ondisk import mdt
from lakeio.ondisk.hfile import parse_hfile
from lakeio.ondisk.reader import read_table
from mdt_util import Clock, batch, commit, copy_without_mdt, hudi_rs_rows, hudi_rs_slices, make_table, writer


def _mdt_verdicts(result):
    return {v.invariant: v for v in result.verdicts if v.invariant.startswith(("MDT.", "I17."))}


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_writer_commits_keep_the_files_partition(tmp_path, table_type):
    path = tmp_path / "t"
    make_table(path, table_type=table_type, commits=4)
    props = (path / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.table.metadata.partitions=files" in props
    m = mdt.MetadataTable(path)
    insts = m.instants()
    # the initialisation deltacommit, then one deltacommit per data commit with the same instant time
    dt = [i.requested_time for i in read_table(path).timeline.completed()]
    assert [i.requested for i in insts] == [mdt.INIT_TIME] + dt
    assert all(i.state == "completed" and i.action == "deltacommit" for i in insts)
    names = sorted(os.listdir(m.base / "files"))
    assert "files-0000-0_0-0-0_00000000000000000.hfile" in names
    assert [n for n in names if n.startswith(".files")] == [f".files-0000-0_{t}.log.1_0-0-0" for t in dt]
    # each log holds one HFile data block (type 4) with the schema in its header and file info
    from lakeio.hudiformat.logfile import SCHEMA, read_log_file

    blocks = read_log_file(str(m.base / "files" / f".files-0000-0_{dt[0]}.log.1_0-0-0"))
    assert [b.block_type for b in blocks] == [4]
    h = parse_hfile(blocks[0].content)
    assert blocks[0].header[SCHEMA] == h.schema_json() == mdt.schema_json()
    assert h.cells[0][0] == mdt.ALL_PARTITIONS_KEY
    # the MDT lists exactly the committed files; the audit agrees
    t = read_table(path)
    assert m.files_listing() == mdt.committed_listing(t)
    r = audit_table(str(path))
    assert r.exit_code == 0, [str(v) for v in r.verdicts if not v.holds]
    assert _mdt_verdicts(r)["MDT.files-listing"].holds


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_hudi_rs_lists_through_the_mdt_and_agrees_on_rows(tmp_path, table_type):
    path = tmp_path / "t"
    make_table(path, table_type=table_type, commits=5)
    nometa = copy_without_mdt(path, tmp_path / "nometa")
    assert hudi_rs_slices(path) == hudi_rs_slices(nometa)
    assert hudi_rs_rows(path) == hudi_rs_rows(nometa) and hudi_rs_rows(path)


def test_hudi_rs_really_reads_the_mdt_and_the_audit_names_the_partition(tmp_path, capsys):
    """Dropping the last commit's MDT log file hides that commit's files from hudi-rs (so hudi-rs takes the
    listing from the MDT, not the folders), and the audit reports the files partition, exit 1."""
    from hoodie_lab.cli import main as cli

    path = tmp_path / "t"
    make_table(path, commits=4)
    full = hudi_rs_rows(path)
    last = read_table(path).timeline.completed()[-1].requested_time
    (mdt.MetadataTable(path).base / "files" / f".files-0000-0_{last}.log.1_0-0-0").unlink()
    assert hudi_rs_rows(path) != full
    r = audit_table(str(path))
    v = _mdt_verdicts(r)["MDT.files-listing"]
    assert r.exit_code == 1 and not v.holds and "missing from the MDT" in " ".join(v.involved)
    assert cli(["audit", str(path)]) == 1
    out = capsys.readouterr().out
    assert "MDT.files-listing" in out and "metadata partition files" in out


@pytest.mark.parametrize("what", ["base", "log", "garbage-log"])
def test_corrupted_mdt_is_a_violation_naming_the_partition(tmp_path, capsys, what):
    from hoodie_lab.cli import main as cli

    path = tmp_path / "t"
    make_table(path, commits=3)
    folder = mdt.MetadataTable(path).base / "files"
    if what == "base":
        victim = folder / "files-0000-0_0-0-0_00000000000000000.hfile"
        victim.write_bytes(victim.read_bytes()[:-100])
    else:
        victim = sorted(folder.glob(".files-*"))[-1]
        data = victim.read_bytes()
        victim.write_bytes(data[: len(data) // 2] if what == "log" else b"#HUDI#" + b"\xff" * 40)
    before = {p: p.read_bytes() for p in path.rglob("*") if p.is_file()}
    r = audit_table(str(path))
    v = _mdt_verdicts(r)["MDT.readable"]
    assert r.exit_code == 1 and not v.holds and v.involved == ("files",)
    assert str(victim) in v.detail and "metadata partition files" in v.detail
    assert cli(["audit", str(path)]) == 1
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err and "MDT.readable" in cap.out
    assert {p: p.read_bytes() for p in path.rglob("*") if p.is_file()} == before  # audit never writes


def test_rollback_of_a_failed_commit_rolls_back_its_mdt_deltacommit(tmp_path):
    """A commit killed after its MDT deltacommit and before its own completed file leaves a completed MDT
    deltacommit no reader merges (its data instant is pending); the data rollback rolls it back too."""
    path = tmp_path / "t"
    w, clock = make_table(path, commits=2)
    t = clock()
    w.start(t)
    res = w.write_batch(t, batch(random.Random(5), 10, 60, 9), "upsert")
    with mdt.committing(path, 8, t, clock(), res.write_stats):
        pass  # killed before w.commit
    assert mdt.MetadataTable(path).instant(t).state == "completed"
    # readers merge only deltacommits of completed data instants: the listing still agrees
    assert audit_table(str(path)).exit_code == 0
    rb, rbc = clock(), clock()
    mdt.rolling_back(path, 8, t, rb, rbc)
    w.rollback(t, rb, rbc)
    m = mdt.MetadataTable(path)
    assert m.instant(t) is None and m.instant(rb).action == "rollback"
    assert not (m.base / "files" / f".files-0000-0_{t}.log.1_0-0-0").exists()
    assert audit_table(str(path)).exit_code == 0
    assert hudi_rs_rows(path) == hudi_rs_rows(copy_without_mdt(path, tmp_path / "nometa"))


def test_a_retried_commit_redoes_its_mdt_deltacommit(tmp_path):
    path = tmp_path / "t"
    w, clock = make_table(path, commits=2)
    t = clock()
    w.start(t)
    res = w.write_batch(t, batch(random.Random(6), 10, 60, 9), "upsert")
    c = clock()
    with mdt.committing(path, 8, t, c, res.write_stats):
        pass  # killed; the restart commits the same instant again
    with mdt.committing(path, 8, t, c, res.write_stats):
        w.commit(t, c, res)
    assert audit_table(str(path)).exit_code == 0
    assert hudi_rs_rows(path) == hudi_rs_rows(copy_without_mdt(path, tmp_path / "nometa"))


def test_table_version_6_gets_no_mdt(tmp_path):
    path = tmp_path / "t"
    w = writer(path, version=6)
    commit(w, Clock(), batch(random.Random(1), 10, 30, 0))
    assert not (path / ".hoodie" / "metadata").exists()
    assert "hoodie.table.metadata.partitions=files" not in (path / ".hoodie" / "hoodie.properties").read_text()


def test_the_mdt_starts_from_the_committed_files_of_an_existing_table(tmp_path):
    """A table written without the hook gets its MDT at the next hooked commit, initialised from the files
    of its completed instants."""
    path = tmp_path / "t"
    clock = Clock()
    w = writer(path)
    rng = random.Random(3)
    for i in range(3):
        commit(w, clock, batch(rng, 20, 50, i), hook=False)
    assert not (path / ".hoodie" / "metadata").exists()
    commit(w, clock, batch(rng, 20, 50, 3))
    assert audit_table(str(path)).exit_code == 0
    assert hudi_rs_rows(path) == hudi_rs_rows(copy_without_mdt(path, tmp_path / "nometa"))


@pytest.mark.skipif(not fixture_zips(), reason="fixtures absent")
def test_reader_agrees_with_hudi_written_mdts(tmp_path):
    """Every fixture table Hudi wrote with an MDT: our reader of its files partition equals the listing of
    committed files, and its record index equals a rebuild from the data files (Hudi's own MDT passes the
    audit's MDT checks)."""
    checked = 0
    for z in fixture_zips():
        base = extract_fixture(z, tmp_path)
        t = read_table(base)
        if "files" not in (t.properties.get(mdt.PARTITIONS_KEY) or "") or not mdt.MetadataTable(base).exists():
            continue
        done = {i.requested_time for i in t.timeline.completed()}
        m = mdt.MetadataTable(base)
        assert m.files_listing(done) == mdt.committed_listing(t), z
        if "record_index" in t.properties[mdt.PARTITIONS_KEY]:
            assert m.record_index(done) == mdt.rebuild_record_index(t), z
        r = audit_table(str(base))
        assert all(v.holds for v in _mdt_verdicts(r).values()), z
        checked += 1
    assert checked >= 2


# ------------------------------------------------------------------------------------------- Spark pipeline
@pytest.mark.spark
@pytest.mark.parametrize("table_type", ["mor", "cow"])
def test_pipeline_tables_have_an_mdt_hudi_rs_reads(tmp_path, spark, table_type):
    from pipeline import source as src
    from pipeline.job import prepare_run, run_job

    root = tmp_path / "run"
    prepare_run(root, mode="async", table_type=table_type, table_version=8, records=90, batches=3, seed=5,
                malformed=0)
    summary = run_job(root, spark=spark, progress=None)
    assert len(summary["commits"]) == 3
    table = root / "table"
    m = mdt.MetadataTable(table)
    dt = [i.requested_time for i in read_table(table).timeline.completed()]
    assert [i.requested for i in m.instants()] == [mdt.INIT_TIME] + dt
    want = {}
    for lines in src.read_inputs(root / "input"):
        for rec, _ in lines:
            if rec is not None:
                want[rec.key] = (rec.key, rec.ts, rec.partition, rec.payload)
    from hudi import HudiTable

    t = HudiTable(str(table.resolve()))
    got = sorted(r for b in t.read() for r in zip(*(b.column(c).to_pylist()
                                                   for c in ("key", "ts", "partition", "payload"))))
    assert got == sorted(want.values())
    assert hudi_rs_slices(table) == hudi_rs_slices(copy_without_mdt(table, tmp_path / "nometa"))
    r = audit_table(str(table))
    assert r.exit_code == 0 and _mdt_verdicts(r)["MDT.files-listing"].holds


def _avro_data_blocks(path):
    """Every Avro data block of the data table's log files (not the MDT's)."""
    from lakeio.hudiformat.logfile import AVRO_DATA_BLOCK, read_log_file

    for f in path.rglob(".*.log.*"):
        if ".hoodie" not in f.parts:
            yield from (b for b in read_log_file(str(f)) if b.block_type == AVRO_DATA_BLOCK)


def test_fast_key_reader_equals_the_avro_decoder(tmp_path):
    """``block_keys`` reads the record keys of Avro data blocks from the meta fields without decoding the rows;
    it gives what fastavro gives, and falls back to it for a block laid out otherwise."""
    path = tmp_path / "t"
    make_table(path, commits=4)
    n = 0
    for b in _avro_data_blocks(path):
        slow = [(r["_hoodie_record_key"], r["_hoodie_partition_path"]) for r in b.data_rows()]
        assert mdt._avro_keys(b.content) == slow and mdt.block_keys(b, "x") == slow
        n += 1
    assert n >= 3
    assert mdt._avro_keys(b"\0\0\0\7\0\0\0\1") is None  # another block version: not read by the fast path


def test_parquet_block_keys_are_read_from_the_two_meta_columns(tmp_path):
    """``block_keys`` reads a parquet data block's keys from its two meta columns (not every row as a dict):
    the same pairs as the rows give."""
    import random

    from lakeio.hudiformat.logfile import PARQUET_DATA_BLOCK, read_log_file
    from mdt_util import Clock, batch, commit, writer

    path, clock, rng = tmp_path / "t", Clock(), random.Random(3)
    w = writer(path, "MERGE_ON_READ")
    w.log_block_format = "parquet"
    for i in range(4):
        commit(w, clock, batch(rng, 25, 60, i, 0.1 if i else 0.0))
    blocks = [b for f in path.rglob(".*.log.*") if ".hoodie" not in f.parts for b in read_log_file(str(f))
              if b.block_type == PARQUET_DATA_BLOCK]
    assert len(blocks) >= 3
    for b in blocks:
        assert mdt.block_keys(b, "x") == [(r["_hoodie_record_key"], r["_hoodie_partition_path"]) for r in b.data_rows()]


def _rli_cells(locations):
    """Record-index cells built one by one: the reference the column-wise writers must equal."""
    return [(k, mdt.rli_value(loc)) for k, loc in locations.items()]


def _dict_record_index(table, slices):
    """The record index built record by record (the merge ``record_index_columns`` must equal)."""
    out = {}
    for s in slices:
        for k, p in mdt.slice_keys(table.base_path, s).items():
            out[k] = (p, s.file_id, s.base_instant)
    return out


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_columnar_record_index_build_equals_the_record_by_record_merge(tmp_path, table_type):
    """The indexer's build (``record_index_columns``: base-only slices read as two parquet columns, slices with
    log files through ``slice_keys``; a later slice's entry for a key wins) gives the same index and the same
    base HFile bytes as merging ``slice_keys`` record by record -- also when a key sits in two slices."""
    path = tmp_path / "t"
    make_table(path, table_type=table_type, commits=6)
    t = read_table(path)
    slices = t.view().latest_merged_file_slices()
    if table_type == "MERGE_ON_READ":
        assert any(s.log_files for s in slices) and any(not s.log_files for s in slices)
    for order in (slices, slices[::-1], slices + slices[:2]):  # a key in two slices: the later wins
        want = _dict_record_index(t, order)
        keys, locs, idx = mdt.record_index_columns(t.base_path, order)
        got = dict(zip(keys.to_pylist(), (locs[i] for i in idx)))
        assert got == want and keys.to_pylist() == sorted(want)
        vals = [mdt.rli_value(loc) for loc in locs]
        assert mdt.base_hfile_columns(keys, vals, idx) == mdt.base_hfile(_rli_cells(want))
    empty = mdt.record_index_columns(t.base_path, [])
    assert len(empty[0]) == 0 and mdt.base_hfile_columns(*empty) == mdt.base_hfile([])


def test_commit_entries_without_keys_reads_no_data_file(tmp_path):
    """With no record index written, a commit's MDT entries are its files only: no data file is opened (the
    same files, no keys), so a missing data file does not matter then."""
    path = tmp_path / "t"
    w, clock = make_table(path, commits=3)
    t = clock()
    w.start(t)
    r = w.write_batch(t, batch(random.Random(5), 20, 60, 9), "upsert")
    full = mdt.commit_entries(path, t, r.write_stats)
    assert full[1]
    for s in r.write_stats:
        os.unlink(path / s["path"])
    files_only = mdt.commit_entries(path, t, r.write_stats, keys=False)
    assert files_only == (full[0], {}, {}, full[3])
    with pytest.raises(FileNotFoundError):
        mdt.commit_entries(path, t, r.write_stats)


def test_fast_key_reader_reads_long_keys_and_refuses_other_layouts(tmp_path):
    """Keys of 63+ bytes have multi-byte length varints (and non-ASCII keys count bytes, not characters): the
    all-records-at-once reader gives what fastavro gives; a truncated or re-laid-out block is not read by it."""
    import pyarrow as pa

    path = tmp_path / "t"
    w = writer(path)
    clock = Clock()
    keys = [("é" * (i % 90)) + f"key-{i:04d}-" + "x" * (i * 7 % 300) for i in range(120)]

    def recs(ts):
        return pa.table({"key": keys, "ts": [ts] * len(keys), "partition": [f"p{i % 3}" for i in range(len(keys))],
                         "v": [float(i) for i in range(len(keys))], "_hoodie_is_deleted": [False] * len(keys)})

    commit(w, clock, recs(0))
    commit(w, clock, recs(1))  # updates: Avro data blocks in log files
    n = 0
    for b in _avro_data_blocks(path):
        slow = [(r["_hoodie_record_key"], r["_hoodie_partition_path"]) for r in b.data_rows()]
        assert mdt._avro_keys(b.content) == slow
        assert any(len(k.encode()) > 63 for k, _ in slow)
        assert mdt._avro_keys(b.content[:len(b.content) // 2]) is None  # truncated: not guessed
        huge = bytearray(b.content)
        huge[4:8] = b"\xff\xff\xff\xff"  # a record count the block cannot hold: not allocated, not read
        assert mdt._avro_keys(bytes(huge)) is None
        bad = bytearray(b.content)
        bad[12] = 4  # the first record's first field: a union branch that is not null/string
        assert mdt._avro_keys(bytes(bad)) is None
        n += 1
    assert n >= 3


def test_the_record_index_block_from_columns_is_the_cell_by_cell_block():
    """A commit's record-index log block is written from columns (``rli_block``): byte for byte the block the
    cell-by-cell path gives, for any order of keys, several locations, and none."""
    import random

    rng = random.Random(5)
    locs = [("p1", "00000000-0000-0000-0000-000000000001-0", "20261125000000001"), ("p2", "fg-2", "20261125000000002"),
            ("p1", "fg-3", "20261125000000003")]
    for n in (0, 1, 7, 3000):
        ups = {f"k{rng.randrange(10 ** 6):07d}": rng.choice(locs) for _ in range(n)}
        assert mdt.rli_block("20261125000000009", ups) == mdt.hfile_block("20261125000000009", _rli_cells(ups))


def test_a_cow_commit_that_empties_a_file_group_still_reads_the_files_after_it(tmp_path):
    """Reading a commit's keys from its files: a new base file version with no record left (every key of the
    group deleted) is followed by the commit's other files, whose keys are still read (``commit_entries`` once
    took the empty key list for its ``keys=False`` switch and skipped them)."""
    path = tmp_path / "t"
    clock = Clock()
    w = writer(path, "COPY_ON_WRITE")
    import pyarrow as pa

    rows = lambda keys, ts, dels: pa.table({"key": keys, "ts": [ts] * len(keys),  # noqa: E731
                                            "partition": [k[:2] for k in keys], "v": [1.0] * len(keys),
                                            "_hoodie_is_deleted": dels})
    t = clock()
    w.start(t)
    r = w.write_batch(t, rows(["p0-a", "p0-b", "p1-a", "p1-b"], 0, [False] * 4), "upsert")
    w.commit(t, clock(), r)
    t = clock()
    w.start(t)
    r = w.write_batch(t, rows(["p0-a", "p0-b", "p1-a"], 1, [True, True, False]), "upsert")
    p0, p1 = "partition=p0", "partition=p1"
    assert [s["partitionPath"] for s in r.write_stats] == [p0, p1] and r.write_stats[0]["numWrites"] == 0
    _added, upserts, removed, _files = mdt.commit_entries(path, t, r.write_stats)
    fid = r.write_stats[1]["fileId"]
    assert upserts == {"p1-a": (p1, fid, t), "p1-b": (p1, fid, t)} and removed == {"p0-a": p0, "p0-b": p0}
