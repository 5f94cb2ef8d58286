"""Unit tests of model.filenames: the names of hudi-semantics 1.6 / 1.9 and the real fixtures."""

import pytest

from model.errors import CodecError
from model.filenames import (
    LAYOUT_1,
    LAYOUT_2,
    BaseFile,
    LogFile,
    TimelineFile,
    completion_mtimes,
    is_timeline_file,
    parse_data_file,
    parse_timeline_file,
    timeline_file_name,
    timeline_files,
    timeline_from_files,
)
from model.instant import Action, InstantKey, State
from model.timeline import Timeline

R, I, C = State.REQUESTED, State.INFLIGHT, State.COMPLETED
T, TC = "20251220210129235", "20251220210129883"

# hudi-semantics 1.6 table: (action, requested, inflight, completed layout 1, completed layout 2)
TABLE = [
    (Action.COMMIT, f"{T}.commit.requested", f"{T}.inflight", f"{T}.commit", f"{T}_{TC}.commit"),
    (Action.DELTACOMMIT, f"{T}.deltacommit.requested", f"{T}.deltacommit.inflight", f"{T}.deltacommit",
     f"{T}_{TC}.deltacommit"),
    (Action.COMPACTION, f"{T}.compaction.requested", f"{T}.compaction.inflight", f"{T}.commit", f"{T}_{TC}.commit"),
    (Action.LOGCOMPACTION, f"{T}.logcompaction.requested", f"{T}.logcompaction.inflight", f"{T}.deltacommit",
     f"{T}_{TC}.deltacommit"),
    (Action.REPLACECOMMIT, f"{T}.replacecommit.requested", f"{T}.replacecommit.inflight", f"{T}.replacecommit",
     f"{T}_{TC}.replacecommit"),
    (Action.CLUSTERING, f"{T}.clustering.requested", f"{T}.clustering.inflight", None, f"{T}_{TC}.replacecommit"),
    (Action.CLEAN, f"{T}.clean.requested", f"{T}.clean.inflight", f"{T}.clean", f"{T}_{TC}.clean"),
    (Action.ROLLBACK, f"{T}.rollback.requested", f"{T}.rollback.inflight", f"{T}.rollback", f"{T}_{TC}.rollback"),
    (Action.RESTORE, f"{T}.restore.requested", f"{T}.restore.inflight", f"{T}.restore", f"{T}_{TC}.restore"),
    (Action.SAVEPOINT, None, f"{T}.savepoint.inflight", f"{T}.savepoint", f"{T}_{TC}.savepoint"),
    (Action.INDEXING, f"{T}.indexing.requested", f"{T}.indexing.inflight", f"{T}.indexing", f"{T}_{TC}.indexing"),
]


@pytest.mark.parametrize("action,req,infl,done1,done2", TABLE, ids=[r[0].value for r in TABLE])
def test_names_of_the_semantics_table(action, req, infl, done1, done2):
    for layout in (LAYOUT_1, LAYOUT_2):
        if action is Action.CLUSTERING and layout == LAYOUT_1:
            with pytest.raises(CodecError):
                timeline_file_name(T, action, R, None, layout)
            with pytest.raises(CodecError, match="layout 1"):
                parse_timeline_file(req, layout)
            continue
        if req is None:
            with pytest.raises(CodecError, match="no requested state"):
                timeline_file_name(T, action, R, None, layout)
        else:
            assert timeline_file_name(T, action, R, None, layout) == req
            assert parse_timeline_file(req, layout) == TimelineFile(T, action, R, None)
        assert timeline_file_name(T, action, I, None, layout) == infl
        assert parse_timeline_file(infl, layout) == TimelineFile(T, action, I, None)
    assert timeline_file_name(T, action, C, TC, LAYOUT_2) == done2
    done = parse_timeline_file(done2, LAYOUT_2)
    assert done.state is C and done.completion_time == TC
    assert done.key == InstantKey.of(T, action)  # identity shared with the requested file
    if done1:
        assert timeline_file_name(T, action, C, TC, LAYOUT_1) == done1  # no completion time in layout 1
        assert parse_timeline_file(done1, LAYOUT_1).completion_time is None
        assert parse_timeline_file(done1, LAYOUT_1, mtime=TC).completion_time == TC


def test_action_as_seen_in_the_name():
    assert parse_timeline_file(f"{T}.inflight", LAYOUT_2).action is Action.COMMIT
    assert parse_timeline_file(f"{T}_{TC}.commit", LAYOUT_2).action is Action.COMMIT
    assert parse_timeline_file(f"{T}.compaction.requested", LAYOUT_2).action is Action.COMPACTION


def test_legacy_and_long_times_keep_their_string():
    legacy = parse_timeline_file("20250101000000.commit", LAYOUT_1)
    assert legacy.requested_time == "20250101000000"
    mdt = parse_timeline_file("20250101000000000001.compaction.requested", LAYOUT_1)
    assert mdt.requested_time == "20250101000000000001"
    # a layout-2 reader of a legacy completed file (no _c) takes the mtime (isLegacy)
    assert parse_timeline_file(f"{T}.deltacommit", LAYOUT_2, mtime=TC).completion_time == TC


@pytest.mark.parametrize("name", [
    "hoodie.properties", "hoodie.properties.backup", ".aux", ".schema", ".temp", ".heartbeat", "metadata",
    "timeline", "history", "archived", ".index_defs", f".{T}.commit.crc", "_version_", "manifest_3",
    f"{T}_{TC}_0.parquet",  # LSM history file
])
def test_non_timeline_names(name):
    assert not is_timeline_file(name)
    with pytest.raises(CodecError) as e:
        parse_timeline_file(name, LAYOUT_2)
    assert e.value.name == name


@pytest.mark.parametrize("name,layout,problem", [
    ("2025.commit", 2, "digits"),
    (f"{T}.bogus", 2, "unknown action"),
    (f"{T}.commit.done", 2, "state suffix"),
    (f"{T}_{TC}.commit", 1, "layout 2"),
    (f"{T}_12.commit", 2, "digits"),
    (f"{T}.compaction", 2, "completes as commit"),
    (f"{T}.clustering", 2, "completes as replacecommit"),
    (f"{T}.savepoint.requested", 2, "no requested"),
    (f"{T}.commit.inflight", 2, "<time>.inflight"),
    (f"{T}_{TC}.commit.requested", 2, "no completion time"),
    (f"{T}.commit.requested.tmp", 2, "malformed"),
    (f"{T}", 2, "malformed"),
])
def test_malformed_instant_names_name_the_file(name, layout, problem):
    assert is_timeline_file(name)
    with pytest.raises(CodecError, match=problem) as e:
        parse_timeline_file(name, layout)
    assert e.value.name == name and name in str(e.value)


def test_completed_layout2_needs_completion_time():
    with pytest.raises(CodecError, match="completion time"):
        timeline_file_name(T, Action.COMMIT, C, None, LAYOUT_2)


def _sample_timeline(version: int) -> Timeline:
    tl = Timeline(version)
    t = iter(range(20250101000000000, 20250101000001000, 10))
    def nt():
        return str(next(t))
    a = nt(); tl.create(a, Action.DELTACOMMIT); tl.transition_to_inflight(a, Action.DELTACOMMIT)
    tl.complete(a, Action.DELTACOMMIT, nt())
    b = nt(); tl.create(b, Action.COMPACTION); tl.transition_to_inflight(b, Action.COMPACTION)
    tl.complete(b, Action.COMPACTION, nt())
    c = nt(); tl.create(c, Action.COMMIT); tl.transition_to_inflight(c, Action.COMMIT)
    d = nt(); tl.create(d, Action.SAVEPOINT)
    e = nt(); tl.create(e, Action.COMPACTION)
    if version >= 8:
        f = nt(); tl.create(f, Action.CLUSTERING); tl.transition_to_inflight(f, Action.CLUSTERING)
        tl.complete(f, Action.CLUSTERING, nt())
    return tl


@pytest.mark.parametrize("version", [6, 8, 9])
def test_timeline_round_trip_through_file_names(version):
    tl = _sample_timeline(version)
    names = timeline_files(tl)
    assert len(names) == sum(len(tl.states_present(i.requested_time, i.action)) for i in tl)
    back = timeline_from_files(names + ["hoodie.properties", ".aux", "metadata"], version, mtimes=completion_mtimes(tl))
    assert back.instants() == tl.instants()
    for i in tl:
        assert back.states_present(i.requested_time, i.action) == tl.states_present(i.requested_time, i.action)
    if version == 6:  # without mtimes a layout-1 completion time is unknown
        bare = timeline_from_files(names, version)
        assert all(i.completion_time is None for i in bare.completed())


def test_rebuild_keeps_exactly_the_files_present():
    # archival deletes pending files first: a completed compaction may stand alone as t_c.commit,
    # then Hudi (and the model) see a commit
    tl = timeline_from_files([f"{T}_{TC}.commit"], 9)
    (inst,) = tl.instants()
    assert inst.action is Action.COMMIT and tl.states_present(T, Action.COMMIT) == {C}
    # with its requested file it is a completed compaction
    tl = timeline_from_files([f"{T}.compaction.requested", f"{T}_{TC}.commit"], 9)
    (inst,) = tl.instants()
    assert inst.action is Action.COMPACTION and inst.shown_action is Action.COMMIT and inst.completion_time == TC
    assert tl.states_present(T, Action.COMPACTION) == {R, C}


def test_rebuild_rejects_two_files_of_one_state():
    with pytest.raises(CodecError, match="already has a completed file") as e:
        timeline_from_files([f"{T}_{TC}.commit", f"{T}_20251220210130000.commit"], 9)
    assert e.value.name in (f"{T}_{TC}.commit", f"{T}_20251220210130000.commit")
    with pytest.raises(CodecError, match="requested"):
        timeline_from_files([f"{T}.compaction.requested", f"{T}.commit.requested"], 9)
    with pytest.raises(CodecError) as e:
        timeline_from_files([f"{T}.commit.requested", "2025x.commit"], 9)
    assert e.value.name == "2025x.commit"


# Real names from the hudi-rs fixture v8_trips_8i3u1d (.hoodie/timeline), listed without reading the zip.
V8_TIMELINE = """
20251220210108078.deltacommit.requested 20251220210108078.deltacommit.inflight 20251220210108078_20251220210109593.deltacommit
20251220210117766.indexing.requested 20251220210117766.indexing.inflight 20251220210117766_20251220210118628.indexing
20251220210123755.deltacommit.requested 20251220210123755.deltacommit.inflight 20251220210123755_20251220210124336.deltacommit
20251220210125441.deltacommit.requested 20251220210125441.deltacommit.inflight 20251220210125441_20251220210126002.deltacommit
20251220210127080.deltacommit.requested 20251220210127080.deltacommit.inflight 20251220210127080_20251220210127601.deltacommit
20251220210128625.deltacommit.requested 20251220210128625.deltacommit.inflight 20251220210128625_20251220210129197.deltacommit
20251220210129235.compaction.requested 20251220210129235.compaction.inflight 20251220210129235_20251220210129883.commit
20251220210130911.deltacommit.requested 20251220210130911.deltacommit.inflight 20251220210130911_20251220210131755.deltacommit
""".split()


def test_real_v8_timeline_names():
    tl = timeline_from_files(V8_TIMELINE, 8)
    assert len(tl) == 8 and all(i.is_completed for i in tl)
    comp = tl.get("20251220210129235", Action.COMMIT)
    assert comp.action is Action.COMPACTION and comp.completion_time == "20251220210129883"
    assert sorted(timeline_files(tl)) == sorted(V8_TIMELINE)


def test_base_and_log_names_of_the_real_fixtures():
    b = BaseFile.parse("6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_0-1112-3190_20251220210129235.parquet", "city=chennai")
    assert (b.file_id, b.write_token, b.instant_time, b.ext) == (
        "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0", "0-1112-3190", "20251220210129235", "parquet")
    assert b.path == "city=chennai/" + b.name
    lg = LogFile.parse(".6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_20251220210127080.log.1_0-1072-3078")
    assert (lg.file_id, lg.instant_time, lg.version, lg.write_token, lg.cdc) == (
        "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0", "20251220210127080", 1, "0-1072-3078", False)
    assert lg.delta_commit_time == lg.base_commit_time == "20251220210127080"
    assert lg.path == lg.name
    mdt = LogFile.parse(".files-0000-0_00000000000000000.log.1_0-0-0")
    assert mdt.file_id == "files-0000-0" and mdt.instant_time == "00000000000000000"
    hf = BaseFile.parse("secondary-index-txn-date-idx-0009-0_9-287-818_20260307162620509.hfile")
    assert hf.ext == "hfile" and hf.file_id == "secondary-index-txn-date-idx-0009-0"
    cdc = LogFile.parse(".f1-0_20250101000000000.log.2_1-2-3.cdc")
    assert cdc.cdc and cdc.name == ".f1-0_20250101000000000.log.2_1-2-3.cdc"
    old = LogFile.parse(".f1-0_20250101000000000.log.3")
    assert old.write_token is None and old.name == ".f1-0_20250101000000000.log.3"


def test_size_is_not_identity():
    a = BaseFile.parse("f-0_1-2-3_20250101000000000.parquet", size=10)
    assert a == BaseFile.parse("f-0_1-2-3_20250101000000000.parquet", size=99) and a.size == 10


def test_log_order_is_the_log_file_comparator():
    names = [
        ".f-0_20250101000000200.log.1_0-1-1",
        ".f-0_20250101000000100.log.2_0-1-1",
        ".f-0_20250101000000100.log.1_1-1-1",
        ".f-0_20250101000000100.log.1_0-1-1.cdc",
        ".f-0_20250101000000100.log.1_0-1-1",
        ".f-0_20250101000000100.log.1",
        ".f-0_20250101000000100.log.10_0-1-1",
    ]
    logs = sorted((LogFile.parse(n) for n in names), key=lambda x: x.order_key)
    assert [x.name for x in logs] == [
        ".f-0_20250101000000100.log.1",           # null write token first
        ".f-0_20250101000000100.log.1_0-1-1",     # then token, then suffix ("" < ".cdc")
        ".f-0_20250101000000100.log.1_0-1-1.cdc",
        ".f-0_20250101000000100.log.1_1-1-1",
        ".f-0_20250101000000100.log.2_0-1-1",     # version compared as a number
        ".f-0_20250101000000100.log.10_0-1-1",
        ".f-0_20250101000000200.log.1_0-1-1",     # instant first
    ]


@pytest.mark.parametrize("name,kind", [
    (".hoodie_partition_metadata", None),
    (".hoodie_partition_metadata.parquet", None),
    (".f-0_20250101000000000.log.1_0-1-1.crc", None),
    (".f-0_1-2-3_20250101000000000.parquet.crc", None),
    ("f-0_1-2-3_20250101000000000.parquet", BaseFile),
    (".f-0_20250101000000000.log.1_0-1-1", LogFile),
    ("_SUCCESS", None),
])
def test_classify_data_names(name, kind):
    got = parse_data_file(name, "p")
    assert (got is None) if kind is None else (type(got) is kind and got.partition == "p")


@pytest.mark.parametrize("name", [
    "part-00000.parquet", "f-0_20250101000000000.parquet", "f-0_1-2-3_2025.parquet", "f-0_1-2-3_x.parquet",
    ".f-0_20250101000000000.log.x_0-1-1", ".f-0_2025.log.1_0-1-1", ".f-0_20250101000000000.log.1_0-1",
    ".f-0.log.1_0-1-1",
])
def test_malformed_data_names_name_the_file(name):
    with pytest.raises(CodecError) as e:
        parse_data_file(name)
    assert e.value.name == name
