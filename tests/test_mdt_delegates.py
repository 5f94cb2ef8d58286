"""A commit's record-index entries from its write statuses' record delegates (``lakeio/hudiformat/delegates.py``,
``mdt.delegate_entries``): the same MDT bytes as reading the keys back from the files the commit wrote, without
opening them; the commit rule on random delegate sequences; the re-read fallback when delegates do not cover the
commit."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from lakeio.hudiformat import delegates as dg
from lakeio.hudiformat import logfile as lf
from lakeio.ondisk import mdt
from lakeio.ondisk.reader import read_table
from mdt_util import Clock, batch, writer
from model.mdt.partitions import RECORD_INDEX, PartitionStates


def _index_inflight(path) -> None:
    """The record index being built: every commit writes its record-index entries."""
    st = mdt.partition_states(path)
    mdt.write_partition_states(path, PartitionStates(st.available, st.inflight | {RECORD_INDEX}))


def _index_built(path, completion) -> None:
    """The record index built from the files (as the indexer's build writes its base file) and available."""
    keys, locs, idx = mdt.record_index_columns(path, read_table(path).view().latest_merged_file_slices())
    data = mdt.base_hfile_columns(keys, [mdt.rli_value(loc) for loc in locs], idx)
    mdt.write_index_base(path, RECORD_INDEX, mdt.next_init_time(path), data, len(keys), completion)
    st = mdt.partition_states(path)
    mdt.write_partition_states(path, PartitionStates(st.available | {RECORD_INDEX}, st.inflight - {RECORD_INDEX}))


def _rli_log(path, t) -> bytes:
    m = mdt.MetadataTable(path)
    return (m.base / RECORD_INDEX / m._log_name(RECORD_INDEX, t)).read_bytes()


def _commits(path, table_type, block_format, n=6, seed=11, per_commit=40, key_space=90):
    """Commits through the MDT hook with delegates (the record index built after the first, available since):
    inserts, updates and deletes (soft deletes in upserts, then a hard ``delete``); yields (instant, completion,
    write result) of the commits that wrote the record index."""
    clock, rng = Clock(), random.Random(seed)
    w = writer(path, table_type)
    w.log_block_format = block_format
    for i in range(n):
        t = clock()
        w.start(t)
        recs = batch(rng, per_commit, key_space, i, 0.25 if i else 0.0)
        op = "delete" if i == n - 1 else "upsert"
        r = w.write_batch(t, recs, op)
        c = clock()
        with mdt.committing(path, 8, t, c, r.write_stats, delegates=r.record_delegates):
            w.commit(t, c, r)
        if i == 0:
            _index_built(path, clock())
        else:
            yield t, c, r


@pytest.mark.parametrize("table_type,block_format", [("MERGE_ON_READ", "avro"), ("MERGE_ON_READ", "parquet"),
                                                     ("COPY_ON_WRITE", "avro")])
def test_record_index_block_from_delegates_is_the_block_read_from_the_files(tmp_path, table_type, block_format):
    """Each commit's record-index log file written from the delegates is byte for byte the one written by reading
    the keys of the commit's files (the MDT deltacommit redone without delegates), over inserts, updates and
    deletes (MOR delete blocks, COW rows dropped from a new base file version); the index then passes the audit."""
    from lakeio.audit import audit_table

    path = tmp_path / "t"
    ops, deleted = set(), 0
    for t, c, r in _commits(path, table_type, block_format):
        got = _rli_log(path, t)
        ops |= set(r.record_delegates.column("op").to_pylist())
        deleted += sum(b.block_type == lf.DELETE_BLOCK for b in lf.read_log_file(
            str(mdt.MetadataTable(path).base / RECORD_INDEX / mdt.MetadataTable(path)._log_name(RECORD_INDEX, t))))
        assert mdt.apply_commit(path, t, c, r.write_stats)  # the same commit, its keys read from the files
        assert _rli_log(path, t) == got, t
    want = {dg.WRITTEN, dg.DELETED if table_type == "MERGE_ON_READ" else dg.REPLACED}
    assert want <= ops and deleted >= 2  # updates and deletes were there to compare
    # the index built from the files, then kept by these commits, equals a rebuild
    r = audit_table(str(path))
    assert r.exit_code == 0, [str(v) for v in r.verdicts if not v.holds]
    assert next(v for v in r.verdicts if v.invariant == "MDT.record-index").holds


def test_delegates_survive_the_trip_from_a_task(tmp_path):
    """The IPC bytes a Spark task returns give back the same table; the tasks' tables concatenated in task order
    renumber their files after each other."""
    a, b = dg.Collector(), dg.Collector()
    a.add("p1/f1.parquet", dg.WRITTEN, pa.array(["k1", "k2"]), "p1")
    a.add("p1/.f2.log", dg.WRITTEN, pa.array(["k3"]), pa.array(["p1"]))
    a.add("p1/.f2.log", dg.DELETED, pa.array(["k4"]), "p1")
    b.add("p2/f3.parquet", dg.REPLACED, pa.array(["k5"]), "p2")
    ta, tb = a.table(), b.table()
    assert dg.from_bytes(dg.to_bytes(ta)).equals(ta) and dg.files_of(dg.from_bytes(dg.to_bytes(ta))) == dg.files_of(ta)
    both = dg.concat([dg.from_bytes(dg.to_bytes(ta)), tb, dg.empty()])
    assert dg.files_of(both) == ["p1/f1.parquet", "p1/.f2.log", "p2/f3.parquet"]
    assert both.column("file").to_pylist() == [0, 0, 1, 1, 2]
    assert both.column("op").to_pylist() == [dg.WRITTEN] * 3 + [dg.DELETED, dg.REPLACED]


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_a_commit_with_delegates_opens_no_data_file(tmp_path, table_type, monkeypatch):
    """With the write statuses' delegates the record-index update reads no data file: the readers of base files
    and log blocks raise, and the commit still writes its entries; without delegates the same commit reads them
    (the patched readers are the ones it uses)."""
    path = tmp_path / "t"
    clock, rng = Clock(), random.Random(4)
    w = writer(path, table_type)

    def write(i):
        t = clock()
        w.start(t)
        return t, w.write_batch(t, batch(rng, 40, 90, i, 0.25 if i else 0.0), "upsert")

    t, r = write(0)
    c = clock()
    with mdt.committing(path, 8, t, c, r.write_stats, delegates=r.record_delegates):
        w.commit(t, c, r)
    _index_inflight(path)

    def refuse(*_a, **_k):
        raise AssertionError("a data file was read for the record index")

    for i in (1, 2):
        t, r = write(i)
        with monkeypatch.context() as mp:
            for name in ("_base_keys", "_avro_keys", "block_keys"):
                mp.setattr(mdt, name, refuse)
            mp.setattr(mdt.lf, "read_log_file", refuse)
            with pytest.raises(AssertionError, match="data file was read"):
                mdt.apply_commit(path, t, clock(), r.write_stats)  # no delegates: the files are read
            c = clock()
            with mdt.committing(path, 8, t, c, r.write_stats, delegates=r.record_delegates):
                w.commit(t, c, r)
        assert mdt.MetadataTable(path).instant(t).state == "completed"
        assert len(_rli_log(path, t)) > 0


def test_delegates_that_miss_a_file_fall_back_to_reading_the_files(tmp_path):
    """Delegates that do not speak for every file of the commit (or for a file it did not write) are not used."""
    path = tmp_path / "t"
    clock, rng = Clock(), random.Random(8)
    w = writer(path)
    t = clock()
    w.start(t)
    r = w.write_batch(t, batch(rng, 40, 90, 0), "upsert")
    assert len(r.write_stats) >= 2
    d = r.record_delegates
    assert mdt.delegate_entries(t, r.write_stats, d) is not None
    assert mdt.delegate_entries(t, r.write_stats[1:], d) is None
    assert mdt.delegate_entries(t, r.write_stats + [dict(r.write_stats[0], path="p9/other.parquet")], d) is None
    assert writer(tmp_path / "u", record_delegates=False).record_delegates is False


# ------------------------------------------------------------------------------------- the rule, on columns
def _reference(t, stats, events):
    """``commit_entries``' merge, entry by entry: ``events`` in write-stat order as (stat, op, key, partition)."""
    upserts, removed = {}, {}
    for si, op, k, p in events:
        s = stats[si]
        if op == dg.WRITTEN:
            upserts[k] = (p, s["fileId"], t)
            if s["path"].endswith(".log"):
                removed.pop(k, None)
        elif op == dg.DELETED:
            removed[k] = p
            upserts.pop(k, None)
        else:
            removed[k] = p
    for k in upserts:
        removed.pop(k, None)
    return upserts, removed


@pytest.mark.parametrize("seed", range(40))
def test_delegate_entries_follow_the_commit_rule(seed):
    """Random delegates over a few keys, files and partitions (a key written, deleted and replaced in several
    files of one commit, the tasks' files in any order): ``delegate_entries`` gives the upserts and removed keys
    of ``commit_entries``' rule applied entry by entry in write-stat order. Replay: the failing seed."""
    rng = random.Random(seed)
    t = "20261128000000001"
    nfiles = rng.randint(1, 6)
    stats = [{"path": f"p{i % 2}/f{i}" + (".log" if rng.random() < 0.5 else ".parquet"), "fileId": f"fg-{i % 4}"}
             for i in range(nfiles)]
    per_file = []
    for si in range(nfiles):
        evs = [(si, rng.choice([dg.WRITTEN, dg.WRITTEN, dg.DELETED, dg.REPLACED]), f"k{rng.randrange(12)}",
                rng.choice(["p0", "p1", "p2"])) for _ in range(rng.randint(0, 8))]
        per_file.append(evs)
    events = [e for evs in per_file for e in evs]
    want_up, want_rm = _reference(t, stats, events)
    col = dg.Collector()
    for si in rng.sample(range(nfiles), nfiles):  # files collected in another order than the stats list them
        col.files.append(stats[si]["path"])
        for _, op, k, p in per_file[si]:
            col.add(stats[si]["path"], op, pa.array([k]), p)
    up_keys, locs, idx, rm_keys, rm_parts = mdt.delegate_entries(t, stats, col.table())
    assert dict(zip(up_keys.to_pylist(), (locs[i] for i in idx))) == want_up, seed
    assert up_keys.to_pylist() == sorted(want_up) and len(set(locs)) == len(locs)
    assert dict(zip(rm_keys.to_pylist(), rm_parts.to_pylist())) == want_rm, seed
    assert rm_keys.to_pylist() == sorted(want_rm)
    ref = mdt.rli_block(t, want_up)
    assert mdt.rli_block_columns(t, up_keys, locs, idx) == ref

