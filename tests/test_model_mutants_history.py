"""Focused tests for model.lsm, model.archival and model.logblocks that `make mutate` showed unchecked by the
fast tests (hudi-semantics.md sections 5-6, I15-I16).

The LSM history directory as a listing (``LSMTimeline``: data files, ``manifest_<N>``, ``_version_``, temp
manifests ignored), manifest names, the refusals the archival and LSM machines raise (their kind and reason
are what a counterexample prints), and the log block constructors the log reader's rules use.
"""

from __future__ import annotations

import pickle

import pytest

from model.archival import ArchivalConfigError, ArchivalStepRefused
from model.errors import CodecError, ModelError
from model.logblocks import BlockKind, LogBlock, delete_block, rollback_block
from model.lsm import (EMPTY, LSMRecord, LSMState, LSMStepRefused, VERSION_FILE, is_temp_manifest, manifest_name,
                       parse_manifest_name)


def test_manifest_names_round_trip_and_refuse_non_manifests():
    """``LSMTimeline#getManifestVersion`` / ``#getManifestFilePath``: ``manifest_<N>``, N >= 1."""
    for v in (1, 2, 10, 123):
        assert manifest_name(v) == f"manifest_{v}" and parse_manifest_name(manifest_name(v)) == v
    for bad in ("manifest_0", "manifest_", "manifest_1.tmp", "manifest_x", "xmanifest_1", "manifest_-1", "_version_"):
        with pytest.raises(CodecError) as e:
            parse_manifest_name(bad)
        assert e.value.args[-1] == "not a manifest file (manifest_<N>, N >= 1)" and bad in str(e.value)
    with pytest.raises(CodecError, match="manifest versions start at 1"):
        manifest_name(0)


def test_temp_manifests_are_recognised_by_prefix_and_suffix():
    assert is_temp_manifest("manifest_3.tmp")
    assert not is_temp_manifest("manifest_3") and not is_temp_manifest("x_manifest_3.tmp")
    assert not is_temp_manifest("manifest_3.tmpx") and not is_temp_manifest("version.tmp")


def test_listing_is_every_name_in_the_directory_sorted():
    r = LSMRecord("20250101000000100", "20250101000000200", "commit")
    s = LSMState(files=(("b.parquet", (r,)), ("a.parquet", ())), manifests=((2, ("a.parquet",)), (1, ())),
                 version=2, temp=("manifest_3.tmp",))
    assert s.listing() == sorted(["a.parquet", "b.parquet", "manifest_1", "manifest_2", "manifest_3.tmp",
                                  VERSION_FILE])
    assert LSMState(files=(("a.parquet", ()),)).listing() == ["a.parquet"]  # no _version_ when absent
    assert EMPTY.listing() == []


@pytest.mark.parametrize("cls", [LSMStepRefused, ArchivalStepRefused])
def test_step_refusals_carry_kind_and_reason(cls):
    e = cls("write-version", "manifest_2 is not written yet")
    assert isinstance(e, ModelError) and (e.kind, e.why) == ("write-version", "manifest_2 is not written yet")
    assert e.args == ("write-version", "manifest_2 is not written yet")
    assert str(e) == "[write-version] manifest_2 is not written yet"
    again = pickle.loads(pickle.dumps(e))
    assert type(again) is cls and str(again) == str(e)


def test_archival_config_error_names_the_hudi_key():
    e = ArchivalConfigError("hoodie.keep.min.commits", "must be below hoodie.keep.max.commits")
    assert (e.key, e.problem) == ("hoodie.keep.min.commits", "must be below hoodie.keep.max.commits")
    assert e.args == ("hoodie.keep.min.commits", "must be below hoodie.keep.max.commits")
    assert str(e) == "hoodie.keep.min.commits: must be below hoodie.keep.max.commits"
    assert str(pickle.loads(pickle.dumps(e))) == str(e) and isinstance(e, ModelError)


def test_log_block_constructors():
    """``HoodieDeleteBlock`` carries data (deletes); a rollback ``HoodieCommandBlock`` names its target."""
    d = delete_block("20250101000000100")
    assert d == LogBlock(BlockKind.DELETE, "20250101000000100") and d.carries_data and d.target_instant is None
    rb = rollback_block("20250101000000300", "20250101000000100")
    assert rb == LogBlock(BlockKind.COMMAND, "20250101000000300", "20250101000000100") and not rb.carries_data


def test_compaction_candidates_consecutive_and_the_broken_every_other():
    """``LSMTimelineWriter#getCandidateFiles``: a level with >= batch files gives its first batch files by min
    instant; the broken rule (for the suites) takes every other one -- not consecutive in instant order."""
    from model.lsm import compaction_candidates, compaction_candidates_every_other, data_file_name
    names = [data_file_name(f"2025010100000{i:02d}00", f"2025010100000{i:02d}50", 0) for i in range(7)]
    other = data_file_name("20250101000000000", "20250101000000010", 1)
    shuffled = names[::-1] + [other]
    assert compaction_candidates(shuffled, 0, 3) == names[:3]
    assert compaction_candidates(shuffled, 0, 7) == names and compaction_candidates(shuffled, 0, 8) == []
    assert compaction_candidates(shuffled, 1, 1) == []  # one file: nothing to merge
    assert compaction_candidates_every_other(shuffled, 0, 3) == [names[0], names[2], names[4]]
    assert compaction_candidates_every_other(shuffled, 0, 7) == names[::2]
    assert compaction_candidates_every_other(shuffled, 0, 8) == []
    assert compaction_candidates_every_other(names[:3], 0, 3) == [names[0], names[2]]
    assert compaction_candidates_every_other(names[:2], 0, 2) == []  # only one picked: nothing to merge


def test_log_blocks_print_kind_instant_and_target():
    assert str(delete_block("20250101000000100")) == "delete@20250101000000100"
    assert str(rollback_block("20250101000000300", "20250101000000100")) == \
        "command@20250101000000300->20250101000000100"


def test_lsm_read_error_and_manifest_version_refusal():
    from model.lsm import LSMReadError
    e = LSMReadError("_version_", "names manifest_3, which does not exist")
    assert (e.name, e.problem, e.args) == ("_version_", "names manifest_3, which does not exist",
                                           ("_version_", "names manifest_3, which does not exist"))
    assert str(e) == "_version_: names manifest_3, which does not exist" and isinstance(e, ModelError)
    assert str(pickle.loads(pickle.dumps(e))) == str(e)
    with pytest.raises(CodecError) as ce:
        manifest_name(0)
    assert (ce.value.name, ce.value.problem) == ("manifest_0", "manifest versions start at 1")


# ------------------------------------------------------------------------------------ LSM reading
def _rec(t: str, action: str = "commit") -> LSMRecord:
    return LSMRecord(t, t[:-3] + "999", action)


def test_data_file_ranges_are_closed_min_max_against_closed_open_queries():
    """``LSMTimeline#isFileInRange``: [min, max] meets [start, end)."""
    from model.lsm import DataFile, data_file_name
    f = DataFile("20250101000000100", "20250101000000200", 0)
    assert f.name == data_file_name(f.min_time, f.max_time, 0) == "20250101000000100_20250101000000200_0.parquet"
    assert f.overlaps(None, None) and f.overlaps("20250101000000200", None) and not f.overlaps("20250101000000201", None)
    assert f.overlaps(None, "20250101000000101") and not f.overlaps(None, "20250101000000100")
    assert f.overlaps("20250101000000150", "20250101000000160")


def test_latest_version_falls_back_to_the_greatest_manifest_and_a_missing_manifest_is_a_read_error():
    """``LSMTimeline#latestSnapshotVersion``: ``_version_`` if readable, else the greatest manifest, else -1."""
    from model.lsm import LSMReadError, latest_manifest, latest_version
    assert latest_version(EMPTY) == -1 and latest_manifest(EMPTY) == ()
    s = LSMState(manifests=((1, ("a",)), (3, ("b",))), version=1)
    assert latest_version(s) == 1 and latest_manifest(s) == ("a",)
    assert latest_version(LSMState(manifests=s.manifests, version=1, version_readable=False)) == 3
    assert latest_version(LSMState(manifests=s.manifests)) == 3
    with pytest.raises(LSMReadError) as e:
        latest_manifest(LSMState(manifests=s.manifests, version=2))
    assert (e.value.name, e.value.problem) == ("manifest_2", "_version_ names version 2 but manifest_2 does not exist")


def test_a_version_file_naming_version_0_is_a_read_error():
    """``_version_`` = 0 names no manifest (versions start at 1: ``LSMTimeline#getManifestFilePath`` of 0 is a file no
    writer creates): the reader's error naming ``_version_``, as for any version with no manifest -- not the name
    codec's ``CodecError`` -- so readers (I15, the on-disk history, the archiver's guard) report it."""
    from model.lsm import LSMReadError, latest_manifest, latest_version, read_files
    s = LSMState(manifests=((1, ("a",)),), version=0)
    assert latest_version(s) == 0
    for read in (latest_manifest, read_files):
        with pytest.raises(LSMReadError) as e:
            read(s)
        assert (e.value.name, e.value.problem) == (VERSION_FILE, "names version 0 but manifest versions start at 1")
        assert str(e.value) == "_version_: names version 0 but manifest versions start at 1"
    # an unreadable _version_ (the on-disk reader's version 0 then) still falls back to the manifests
    assert latest_manifest(LSMState(manifests=s.manifests, version=0, version_readable=False)) == ("a",)


def test_load_instants_reads_overlapping_files_of_the_latest_manifest_once_per_instant():
    """``ArchivedTimelineLoaderV2#loadInstants``: files of the latest manifest in range, records in [start, end),
    one per instant time (a re-archived batch's duplicate is the same instant)."""
    from model.lsm import LSMReadError, data_file_name, load_instants, read_files, records
    a, b, c = "20250101000000100", "20250101000000200", "20250101000000300"
    f1, f2 = data_file_name(a, b, 0), data_file_name(b, c, 0)
    old = data_file_name(a, a, 0)
    s = LSMState(files=((f1, (_rec(a), _rec(b))), (f2, (_rec(b, "deltacommit"), _rec(c))), (old, (_rec(a),))),
                 manifests=((1, (old,)), (2, (f1, f2))), version=2)
    assert read_files(s) == [f1, f2] and read_files(s, c, None) == [f2] and read_files(s, None, b) == [f1]
    recs, files = load_instants(s, b, c)
    assert recs == [_rec(b)] and files == [f1, f2]  # b from f1 (first), c excluded (end is open)
    assert load_instants(s, None, None)[0] == [_rec(a), _rec(b), _rec(c)] == records(s)
    assert load_instants(s, a, b)[0] == [_rec(a)]
    gone = LSMState(files=((f1, ()),), manifests=((2, (f1, f2)),), version=2)
    with pytest.raises(LSMReadError) as e:
        read_files(gone)
    assert (e.value.name, e.value.problem) == (f2, "listed by the latest manifest but missing")


def test_lsm_step_guards_say_why_they_refuse():
    from model.lsm import (DeleteDataFile, DeleteManifest, WriteDataFile, WriteManifest, apply, data_file_name, guard)
    f = data_file_name("20250101000000100", "20250101000000200", 0)
    assert guard(EMPTY, WriteDataFile(f, ())) == "the instant actions to write should not be empty"
    assert guard(EMPTY, WriteManifest((), f)) == f"{f} does not exist (getFileEntry reads its length)"
    assert guard(EMPTY, DeleteManifest(4)) == "manifest_4 does not exist"
    assert guard(EMPTY, DeleteDataFile(f)) == f"{f} does not exist"
    broken = LSMState(files=((f, (_rec("20250101000000100"),)),), version=3)
    assert guard(broken, WriteManifest((), f)).startswith("the latest manifest cannot be read (manifest_3: ")
    assert guard(broken, WriteManifest((), f, ahead=True)) is None
    with pytest.raises(LSMStepRefused) as e:
        apply(EMPTY, DeleteManifest(4))
    assert (e.value.kind, e.value.why) == ("delete-manifest", "manifest_4 does not exist")


def test_log_reader_scan_rules():
    """``AbstractHoodieLogRecordReader#scanInternal``: skip blocks of uncommitted instants (committed = completed,
    or older than the active timeline); a rollback command block pops the queued blocks of its target and any
    corrupt block on top; stop at a block newer than the instant read (corrupt blocks carry no usable time)."""
    from model.instant import Action, State
    from model.logblocks import committed_for_reader, data_block, scan, slice_blocks
    from model.filenames import LogFile
    from model.timeline import Timeline
    t = [f"2025010100000{n:04d}" for n in range(10)]
    tl = Timeline(8)
    tl.load(t[2], Action.DELTACOMMIT, [State.REQUESTED, State.INFLIGHT, State.COMPLETED], t[3])
    tl.load(t[4], Action.DELTACOMMIT, [State.REQUESTED], None)
    tl.load(t[6], Action.DELTACOMMIT, [State.REQUESTED, State.INFLIGHT, State.COMPLETED], t[7])
    ok = committed_for_reader(tl)
    assert ok(t[1]) and ok(t[2]) and not ok(t[4]) and not ok(t[5]) and ok(t[6])  # t1: archived
    assert committed_for_reader(Timeline(8))(t[1]) is False  # an empty timeline: nothing archived
    first_pending = Timeline(8)
    first_pending.load(t[2], Action.DELTACOMMIT, [State.REQUESTED], None)
    assert not committed_for_reader(first_pending)(t[2]) and committed_for_reader(first_pending)(t[1])
    corrupt = LogBlock(BlockKind.CORRUPT, t[9])
    d1, d2, d4, d6 = data_block(t[1]), data_block(t[2]), data_block(t[4]), data_block(t[6])
    assert scan([d1, d2, d4, d6], tl) == [d1, d2, d6]
    assert scan([d1, d2, corrupt, rollback_block(t[8], t[2]), d6], tl) == [d1, d6]   # pops corrupt, then d2
    assert scan([d2, corrupt, d6], tl) == [d2, d6]                                     # a corrupt block is not data
    assert scan([d1, d6, d2], tl, latest_instant=t[2]) == [d1]                         # stops at d6
    assert scan([d1, d2, d6], tl, latest_instant=t[6]) == [d1, d2, d6]                 # == latest: read
    assert scan([d1, corrupt, d2], tl, latest_instant=t[2]) == [d1, d2]                # corrupt: no time, no stop
    l1 = LogFile("f", t[2], 1, "0-1-1")
    l2 = LogFile("f", t[2], 2, "0-1-1")
    assert slice_blocks([l2, l1], {l1: [d1], l2: [d2]}) == [d1, d2]
    assert slice_blocks([l2, l1], {l2: [d2]}) == [d2]  # a log with no known blocks
