"""The on-disk layer: hoodie.properties, metadata codecs, immutable timeline files, skeleton tables.

Runtime: about 3 s (hudi-rs reads of two fixture copies dominate).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lakeio.errors import UserError
from lakeio.ondisk import metadata as md
from lakeio.ondisk import read_table
from lakeio.ondisk.properties import (format_properties, parse_properties, read_properties, table_checksum,
                                          write_hoodie_properties)
from lakeio.ondisk.skeleton import PLACEHOLDER, SkeletonPlans, write_skeleton
from model import filenames as fn
from model.instant import Action, State
from model.timeline import Timeline

from fixtures_util import copy_table, extract_table, fixture_zips


def T(ms: int) -> str:
    """A 17-digit time on 2025-01-01 00:00 UTC plus ``ms`` milliseconds (ms < 60000)."""
    return f"2025010100{ms // 60000:02d}{(ms // 1000) % 60:02d}{ms % 1000:03d}"


# ------------------------------------------------------------------------------ properties
def test_properties_parser_follows_java_rules():
    text = ("# comment\n! also a comment\n  a = 1\nb:2\nc 3\nd\\:e=f\\=g\nlong=one \\\n    two\n"
            "uni=\\u00e9\nempty=\ntab\\tkey=v\n")
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d:e": "f=g", "long": "one two",
                                      "uni": "\u00e9", "empty": "", "tab\tkey": "v"}


def test_properties_bad_unicode_escape_is_user_error():
    with pytest.raises(UserError, match=r"x.properties: malformed \\u escape"):
        parse_properties("a=\\u12g4\n", "x.properties")


def test_properties_round_trip_and_checksum(tmp_path):
    props = {"hoodie.table.name": "t1", "hoodie.database.name": "default",
             "hoodie.table.create.schema": '{"type":"record","name":"r","fields":[]}', "k with space": " lead"}
    path = write_hoodie_properties(tmp_path / ".hoodie", props)
    back = read_properties(path)
    assert back == {**props, "hoodie.table.checksum": str(table_checksum(props))}
    assert '{"type"\\:"record"' in path.read_text()  # Java escapes ':' as Hudi's files show
    with pytest.raises(FileExistsError):
        write_hoodie_properties(tmp_path / ".hoodie", props)
    assert parse_properties(format_properties(back)) == back


def test_fixture_properties_parse_and_checksums_match(fixtures_dir):
    for z in fixture_zips():
        props = read_properties(extract_table(z) / ".hoodie" / "hoodie.properties")
        json.loads(props["hoodie.table.create.schema"])
        assert str(table_checksum(props)) == props["hoodie.table.checksum"], z


# ------------------------------------------------------------------------------ metadata codecs
def _sample_commit(replaced=None):
    ws = md.make_write_stat("p=a", "p=a/f1-0_0-1-1_20250101000000100.parquet", "f1-0", num_inserts=3,
                            num_writes=3, size=10)
    return md.make_commit_metadata({"p=a": [ws]}, schema_json='{"type":"record","name":"r","fields":[]}',
                                   replaced=replaced)


@pytest.mark.parametrize("version", [6, 8, 9])
def test_commit_metadata_round_trip(version):
    data = md.encode_commit_metadata(_sample_commit(), version)
    assert data.startswith(b"{") if version == 6 else data.startswith(md.AVRO_MAGIC)
    back = md.decode_commit_metadata(data, "f")
    stat = back["partitionToWriteStats"]["p=a"][0]
    assert (stat["fileId"], stat["numInserts"], stat["path"]) == ("f1-0", 3, "p=a/f1-0_0-1-1_20250101000000100.parquet")
    assert back["extraMetadata"]["schema"].startswith('{"type"')
    rep = md.decode_commit_metadata(md.encode_commit_metadata(_sample_commit({"p=a": ["f0-0"]}), version), "f")
    assert rep["partitionToReplaceFileIds"] == {"p=a": ["f0-0"]}
    if version != 6:
        assert md.avro_schema_name(md.encode_commit_metadata(_sample_commit({"p=a": []}), version), "f") == \
            "HoodieReplaceCommitMetadata"


def test_plan_codecs_round_trip():
    cases = [
        (md.encode_compaction_plan, md.decode_compaction_plan,
         md.make_compaction_plan([{"fileId": "f", "partitionPath": "p", "baseInstantTime": T(1),
                                   "dataFilePath": "b.parquet", "deltaFilePaths": [".f_1.log.1_0-1-1"]}])),
        (md.encode_clean_plan, md.decode_clean_plan, md.make_clean_plan({"p": ["a.parquet"]}, earliest_to_retain=T(1))),
        (md.encode_clean_metadata, md.decode_clean_metadata, md.make_clean_metadata(T(2), {"p": ["a.parquet"]})),
        (md.encode_rollback_plan, md.decode_rollback_plan, md.make_rollback_plan(T(1), "deltacommit", {"p": ["x"]})),
        (md.encode_rollback_metadata, md.decode_rollback_metadata,
         md.make_rollback_metadata(T(3), T(1), "deltacommit", {"p": ["x"]})),
        (md.encode_savepoint_metadata, md.decode_savepoint_metadata, md.make_savepoint_metadata({"p": ["a.parquet"]})),
        (md.encode_requested_replace, md.decode_requested_replace,
         md.make_clustering_plan([[{"fileId": "f", "partitionPath": "p", "dataFilePath": "a.parquet"}]])),
    ]
    for enc, dec, value in cases:
        back = dec(enc(value), "f")
        for k, v in value.items():
            if v is not None and not isinstance(v, dict):
                assert back[k] == v, (enc.__name__, k)
    assert md.decode_compaction_plan(b"", "f") is None  # legally empty files


def test_decoders_name_the_file_on_garbage():
    good = md.encode_commit_metadata(_sample_commit(), 9)
    with pytest.raises(UserError, match=r"^some/file: truncated or corrupt Avro"):
        md.decode_avro(good[: len(good) // 2], "some/file")
    with pytest.raises(UserError, match=r"^x\.commit: truncated or corrupt JSON"):
        md.decode_commit_metadata(b'{"partitionToWriteStats": {', "x.commit")
    with pytest.raises(UserError, match=r"^p: not an Avro container"):
        md.decode_avro(b"garbage", "p")


def test_every_fixture_timeline_file_decodes(fixtures_dir):
    n = 0
    for z in fixture_zips():
        t = read_table(extract_table(z))
        n += sum(1 for v in t.timeline_content.values() if v is not None)
    assert n > 100


def test_write_timeline_file_is_immutable(tmp_path):
    p = md.write_timeline_file(tmp_path / "t" / "20250101000000000.commit.requested", b"")
    assert p.read_bytes() == b""
    with pytest.raises(FileExistsError, match="immutable"):
        md.write_timeline_file(p, b"x")
    assert p.read_bytes() == b"" and sorted(os.listdir(p.parent)) == [p.name]  # no temp file left


# ------------------------------------------------------------------------------ hudi-rs accepts our encoding
@pytest.mark.parametrize("name", ["v6_trips_8i1u", "v8_trips_8i3u1d"])
def test_hudi_rs_reads_tables_whose_commit_metadata_we_rewrote(fixtures_dir, tmp_path, name):
    """Decode every completed commit file of a real table, re-encode it with our encoder, and
    check hudi-rs sees the same timeline, schema and rows as on the original."""
    hudi = pytest.importorskip("hudi")
    z = next(z for z in fixture_zips() if z.stem == name)
    src = extract_table(z)
    dst = copy_table(z, tmp_path / name)
    t = read_table(dst)
    rewritten = 0
    for fname, content in t.timeline_content.items():
        tf = fn.parse_timeline_file(fname, t.layout)
        if tf.state is not State.COMPLETED or tf.action not in (Action.COMMIT, Action.DELTACOMMIT):
            continue
        path = t.timeline_dir / fname
        st = path.stat()
        original = path.read_bytes()
        path.unlink()
        md.write_timeline_file(path, md.encode_commit_metadata(content, t.version))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert path.read_bytes() != original  # really rewritten (formatting differs)
        rewritten += 1
    assert rewritten >= 2

    def snapshot(base: Path):
        table = hudi.HudiTable(str(base))
        tl = table.get_timeline()
        rows = sorted(r for b in table.read() for r in zip(*[c.to_pylist() for c in b.columns]))
        return ([i.timestamp for i in tl.get_completed_commits()], [i.timestamp for i in tl.get_completed_deltacommits()],
                str(tl.get_latest_schema()), rows)

    assert snapshot(dst) == snapshot(src)


# ------------------------------------------------------------------------------ skeleton tables
def _scenario(version: int):
    """Pending instants, a write overlapping a compaction, a clean, a savepoint and a rollback."""
    tl = Timeline(version)

    def done(t0, action, t1):
        tl.create(t0, action)
        if action is not Action.SAVEPOINT:
            tl.transition_to_inflight(t0, action)
        tl.complete(t0, action, t1)

    done(T(100), Action.DELTACOMMIT, T(150))
    done(T(200), Action.DELTACOMMIT, T(250))
    tl.create(T(300), Action.DELTACOMMIT)          # overlaps the compaction: completes after it is requested
    tl.transition_to_inflight(T(300), Action.DELTACOMMIT)
    tl.create(T(400), Action.COMPACTION)           # pending compaction
    tl.complete(T(300), Action.DELTACOMMIT, T(450))
    done(T(500), Action.CLEAN, T(550))
    done(T(600), Action.SAVEPOINT, T(650))
    tl.create(T(700), Action.DELTACOMMIT)          # failed write ...
    tl.transition_to_inflight(T(700), Action.DELTACOMMIT)
    done(T(800), Action.ROLLBACK, T(850))          # ... rolled back: its files gone, its instant deleted
    tl.delete(T(700), Action.DELTACOMMIT)
    tl.create(T(900), Action.DELTACOMMIT)          # pending write
    base = [fn.BaseFile("fg1-0", "0-1-1", T(100), partition="p=a"),
            fn.BaseFile("fg2-0", "0-1-2", T(100), partition="p=b")]
    if version == 6:  # tv6 logs name the base instant of their slice
        logs = [fn.LogFile("fg1-0", T(100), 1, "0-2-1", partition="p=a"),
                fn.LogFile("fg1-0", T(100), 2, "0-3-1", partition="p=a")]
        writers = {logs[0].name: T(200), logs[1].name: T(300)}
    else:
        logs = [fn.LogFile("fg1-0", T(200), 1, "0-2-1", partition="p=a"),
                fn.LogFile("fg1-0", T(300), 1, "0-3-1", partition="p=a"),
                fn.LogFile("fg2-0", T(900), 1, "0-9-1", partition="p=b")]
        writers = {}
    plans = SkeletonPlans(cleans={T(500): {"p=a": []}}, savepoints={T(600): {"p=a": [base[0].name]}},
                          rollbacks={T(800): (T(700), "deltacommit", {"p=a": []})}, log_writers=writers)
    return tl, base, logs, plans


@pytest.mark.parametrize("version", [6, 8, 9])
def test_skeleton_round_trips_through_the_reader(tmp_path, version):
    tl, base, logs, plans = _scenario(version)
    out = write_skeleton(tmp_path / "tbl", tl, base, logs, plans=plans)
    t = read_table(out)
    assert [str(i) for i in t.timeline.instants()] == [str(i) for i in tl.instants()]
    for i in tl.instants():
        assert t.timeline.states_present(i.requested_time, i.action) == tl.states_present(i.requested_time, i.action)
    assert sorted(t.base_files, key=lambda f: f.path) == sorted(base, key=lambda f: f.path)
    assert sorted(t.log_files, key=lambda f: f.path) == sorted(logs, key=lambda f: f.path)
    assert (t.version, t.table_type, t.partitions) == (version, "MERGE_ON_READ", ["p=a", "p=b"])
    assert (out / base[0].path).read_bytes() == PLACEHOLDER
    # the pending compaction's plan: tv8 -- only logs completed before it (I9), so not the overlapping T(300)
    planned = {op["fileId"]: op["deltaFilePaths"] for op in t.compaction_plans[T(400)]}
    if version == 6:
        assert planned == {"fg1-0": [logs[0].name, logs[1].name]}
    else:
        assert planned == {"fg1-0": [logs[0].name]}
    assert set(t.pending_compactions) == {("p=a", "fg1-0")}
    sp = t.timeline_content[fn.timeline_file_name(T(600), Action.SAVEPOINT, State.COMPLETED, T(650), t.layout)]
    assert sp["partitionMetadata"]["p=a"]["savepointDataFile"] == [base[0].name]


@pytest.mark.parametrize("version", [6, 9])
def test_hudi_rs_accepts_skeleton_tables(tmp_path, version):
    hudi = pytest.importorskip("hudi")
    tl, base, logs, plans = _scenario(version)
    out = write_skeleton(tmp_path / "tbl", tl, base, logs, plans=plans)
    table = hudi.HudiTable(str(out))
    got = [i.timestamp for i in table.get_timeline().get_completed_deltacommits()]
    assert got == [i.requested_time for i in tl.completed([Action.DELTACOMMIT])]
    assert [f.name for f in table.get_timeline().get_latest_schema()] == ["uuid", "ts", "partition"]
    assert {s.file_id for s in table.get_file_slices()} == {"fg1-0", "fg2-0"}


def test_skeleton_refuses_non_empty_target(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "f").write_text("")
    tl, base, logs, plans = _scenario(9)
    with pytest.raises(FileExistsError):
        write_skeleton(tmp_path / "x", tl, base, logs, plans=plans)
