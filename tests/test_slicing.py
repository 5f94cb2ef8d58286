"""Unit tests of model.slicing: hudi-semantics section 3, the RFC-66 appendix and the real fixture."""

import pytest

from model.filenames import BaseFile, LogFile, timeline_from_files
from model.instant import Action
from model.slicing import (
    COMPLETION_TIME,
    INSTANT_TIME,
    CompletionTimes,
    FileGroupId,
    FileSystemView,
    slice_key_completion_time,
)
from model.timeline import Timeline

FG = FileGroupId("p", "fg-0")


def T(n: int) -> str:
    """A 17-digit time whose last digits are n (t10 -> T(10))."""
    return f"2025010100000{n:04d}"


def base(t: int, fid: str = "fg-0", part: str = "p") -> BaseFile:
    return BaseFile(fid, "0-1-1", T(t), "parquet", part)


def log(t: int, version: int = 1, fid: str = "fg-0", part: str = "p") -> LogFile:
    return LogFile(fid, T(t), version, "0-1-1", False, part)


def timeline(version: int, *instants) -> Timeline:
    """instants: (action, requested, completion|None|'requested')."""
    tl = Timeline(version)
    for action, req, comp in instants:
        tl.create(T(req), action)
        if comp == "requested":
            continue
        tl.transition_to_inflight(T(req), action)
        if comp is not None:
            tl.complete(T(req), action, T(comp))
    return tl


def shape(slices):
    """{base instant: (base instant of the base file or None, [log instants])}."""
    return {s.base_instant: (s.base_file.instant_time if s.base_file else None,
                             [lg.instant_time for lg in s.log_files]) for s in slices}


# ------------------------------------------------------------------------------ RFC-66 appendix
def rfc66(compaction_done: bool = True, l3_done: bool = True):
    # base fg_t10 [t10,t20], l1 [t21,t40], l2 [t30,t50], base fg_t60 [t60,t80], l3 [t35,t90]
    tl = timeline(8, (Action.DELTACOMMIT, 10, 20), (Action.DELTACOMMIT, 21, 40), (Action.DELTACOMMIT, 30, 50),
                  (Action.DELTACOMMIT, 35, 90 if l3_done else None),
                  (Action.COMPACTION, 60, 80 if compaction_done else None))
    bases = [base(10)] + ([base(60)] if compaction_done else [])
    pending = {} if compaction_done else {FG: T(60)}
    return FileSystemView(tl, bases, [log(21), log(30), log(35)], pending_compactions=pending)


def test_rfc66_appendix_worked_example():
    v = rfc66()
    assert v.rule == COMPLETION_TIME
    (fg,) = v.file_groups()
    assert shape(fg.slices) == {T(60): (T(60), [T(35)]), T(10): (T(10), [T(21), T(30)])}
    assert list(shape(fg.slices)) == [T(60), T(10)]  # newest first
    assert shape(v.latest_file_slices()) == {T(60): (T(60), [T(35)])}


def test_rfc66_while_the_compaction_is_pending():
    v = rfc66(compaction_done=False, l3_done=False)
    (fg,) = v.file_groups()
    # the pending compaction's empty slice exists before logs are placed; pending l3 joins the latest slice
    assert shape(fg.slices) == {T(60): (None, [T(35)]), T(10): (T(10), [T(21), T(30)])}
    # filterUncommittedFiles empties slice t60, so the newest non-empty slice is t10
    assert shape(v.latest_file_slices()) == {T(10): (T(10), [T(21), T(30)])}
    # merged view: t60 merged into t10, l3 dropped (not completed)
    assert shape(v.latest_merged_file_slices()) == {T(10): (T(10), [T(21), T(30)])}
    v2 = rfc66(compaction_done=False, l3_done=True)
    assert shape(v2.latest_file_slices()) == {T(60): (None, [T(35)])}  # no older base: read merged instead
    assert shape(v2.latest_merged_file_slices()) == {T(10): (T(10), [T(21), T(30), T(35)])}


def test_completion_rule_is_inclusive_and_starts_new_slices():
    tl = timeline(8, (Action.DELTACOMMIT, 5, 60), (Action.DELTACOMMIT, 7, 8), (Action.DELTACOMMIT, 10, 20),
                  (Action.COMPACTION, 60, 70))
    times = CompletionTimes(tl)
    # completion == base instant joins that slice (code's >=, not RFC's <)
    assert slice_key_completion_time(log(5), [T(10), T(60)], times) == T(60)
    # completion before every base instant: a new slice at the log's own instant
    assert slice_key_completion_time(log(7), [T(10), T(60)], times) == T(7)
    # no slice yet: the log's own instant; pending: the latest slice
    assert slice_key_completion_time(log(10), [], times) == T(10)
    assert slice_key_completion_time(log(99), [T(10), T(60)], times) == T(60)


# ------------------------------------------------------------------------- the real fixture (3.3)
CHENNAI_FID = "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0"


def test_real_fixture_v8_trips_chennai_as_a_pure_model_case():
    from tests.test_filenames import V8_TIMELINE

    tl = timeline_from_files(V8_TIMELINE, 8)
    part = "city=chennai"
    bases = [BaseFile.parse(f"{CHENNAI_FID}_2-986-2794_20251220210108078.parquet", part),
             BaseFile.parse(f"{CHENNAI_FID}_0-1112-3190_20251220210129235.parquet", part)]
    logs = [LogFile.parse(f".{CHENNAI_FID}_20251220210127080.log.1_0-1072-3078", part),
            LogFile.parse(f".{CHENNAI_FID}_20251220210128625.log.1_0-1097-3150", part)]
    v = FileSystemView(tl, bases, logs)
    (fg,) = v.file_groups()
    assert shape(fg.slices) == {
        "20251220210129235": ("20251220210129235", []),
        "20251220210108078": ("20251220210108078", ["20251220210127080", "20251220210128625"]),
    }
    (latest,) = v.latest_file_slices()
    assert latest.base_file.name == f"{CHENNAI_FID}_0-1112-3190_20251220210129235.parquet" and not latest.log_files
    # as of the second log's requested time: hudi-rs plans both logs of the older slice; the spec
    # admits only deltacommits completed by then (128625 completed at 129197)
    (s,) = v.as_of_read("20251220210128625", mode="hudi-rs").slices
    assert shape([s]) == {"20251220210108078": ("20251220210108078", ["20251220210127080", "20251220210128625"])}
    (s,) = v.as_of_read("20251220210128625").slices
    assert shape([s]) == {"20251220210108078": ("20251220210108078", ["20251220210127080"])}
    # the compaction planned exactly the two logs completed before it (I9)
    before = FileSystemView(tl, bases[:1], logs)
    plan = before.compaction_plan_files("20251220210129235")
    assert [lg.instant_time for lg in plan[(part, CHENNAI_FID)].log_files] == ["20251220210127080",
                                                                               "20251220210128625"]


# ------------------------------------------------------------------------------ compaction plans
def test_compaction_plan_holds_only_logs_completed_before_it():
    # l1 completes before tc=60, l2 (requested before) completes after: it belongs to slice 60 (I9)
    tl = timeline(8, (Action.DELTACOMMIT, 10, 20), (Action.DELTACOMMIT, 21, 40), (Action.DELTACOMMIT, 30, 65),
                  (Action.DELTACOMMIT, 50, None))
    v = FileSystemView(tl, [base(10)], [log(21), log(30), log(50)])
    plan = v.compaction_plan_files(T(60))
    assert shape(plan.values()) == {T(10): (T(10), [T(21)])}
    # once the plan is written (pending compaction slice), l2 joins slice 60, l1 stays
    tl.create(T(60), Action.COMPACTION)
    v = FileSystemView(tl, [base(10)], [log(21), log(30), log(50)], pending_compactions={FG: T(60)})
    assert shape(v.file_groups()[0].slices) == {T(60): (None, [T(30), T(50)]), T(10): (T(10), [T(21)])}
    assert shape(v.compaction_plan_files(T(60)).values()) == {T(10): (T(10), [T(21)])}
    # tv6/instant-time plan: the slice with every log (0.x refused to schedule over an inflight write)
    v6 = FileSystemView(timeline(6, (Action.DELTACOMMIT, 10, 20), (Action.DELTACOMMIT, 21, 40),
                                 (Action.DELTACOMMIT, 30, None)),
                        [base(10)], [log(10, 1), log(10, 2)])
    assert [lg.version for lg in v6.compaction_plan_files(T(60))[FG].log_files] == [1, 2]


# ---------------------------------------------------------------------------------------- tv6
def test_tv6_instant_time_slicing_and_filters():
    tl = timeline(6, (Action.DELTACOMMIT, 10, 20), (Action.DELTACOMMIT, 21, 40), (Action.COMPACTION, 50, "requested"),
                  (Action.DELTACOMMIT, 55, 57))
    # 0.x writers name logs after the base instant of the latest slice: t10 before the compaction, t50 after
    v = FileSystemView(tl, [base(10), base(50)], [log(10, 1), log(10, 2), log(50, 1)],
                       pending_compactions={FG: T(50)})
    assert v.rule == INSTANT_TIME
    assert shape(v.file_groups()[0].slices) == {T(50): (T(50), [T(50)]), T(10): (T(10), [T(10), T(10)])}
    # filterBaseFileAfterPendingCompaction drops the (partial) base file of the pending compaction
    assert shape(v.latest_file_slices()) == {T(50): (None, [T(50)])}
    assert shape(v.latest_merged_file_slices()) == {T(10): (T(10), [T(10), T(10), T(50)])}
    # the pending compaction is also known from the timeline alone (no plan map given)
    bare = FileSystemView(tl, [base(10), base(50)], [log(10, 1), log(10, 2), log(50, 1)])
    assert shape(bare.latest_file_slices()) == {T(50): (None, [T(50)])}
    # base file of an inflight commit is not on the visible timeline (isFileSliceCommitted)
    tl2 = timeline(6, (Action.COMMIT, 10, 20), (Action.COMMIT, 30, None))
    v2 = FileSystemView(tl2, [base(10), base(30)], [])
    assert shape(v2.latest_file_slices()) == {T(10): (T(10), [])}
    # the same in tv8, by filterUncommittedFiles
    tl3 = timeline(8, (Action.COMMIT, 10, 20), (Action.COMMIT, 30, None))
    assert shape(FileSystemView(tl3, [base(10), base(30)], []).latest_file_slices()) == {T(10): (T(10), [])}


def test_replaced_and_pending_clustering():
    tl = timeline(9, (Action.COMMIT, 10, 20), (Action.REPLACECOMMIT, 30, 40), (Action.CLUSTERING, 50, None))
    files = [base(10, "a"), base(10, "b"), base(30, "c"), base(50, "d")]
    v = FileSystemView(tl, files, [], replaced={("p", "a"): T(30)}, pending_clustering={("p", "b"): T(50)})
    assert sorted(s.file_id for s in v.latest_file_slices()) == ["b", "c"]  # a replaced, d pending clustering
    assert sorted(s.file_id for s in v.latest_file_slices_as_of(T(25))) == ["a", "b"]  # replace at 30 not yet
    assert [fg.file_id for fg in v.file_groups()] == ["a", "b", "c", "d"]
    # tv6: pending clustering is a pending replacecommit; its base file is excluded by isBaseFileDueToPendingClustering
    tl6 = timeline(6, (Action.COMMIT, 10, 20), (Action.REPLACECOMMIT, 50, None))
    v6 = FileSystemView(tl6, [base(10, "b"), base(50, "d")], [], pending_clustering={("p", "b"): T(50)})
    assert [s.file_id for s in v6.latest_file_slices()] == ["b"]


# ------------------------------------------------------------------------------------- reads
def test_incremental_ranges_completion_vs_instant_time():
    # two deltacommits that complete out of order
    spec = [(Action.DELTACOMMIT, 10, 50), (Action.DELTACOMMIT, 20, 30)]
    v8 = FileSystemView(timeline(8, *spec), [base(10)], [log(20)])
    inc = v8.incremental_read(T(30), T(50))  # completion range (30, 50]
    assert [i.requested_time for i in inc.instants] == [T(10)]
    assert [b.instant_time for b in inc.base_files] == [T(10)] and inc.log_files == ()
    assert [lg.instant_time for lg in v8.incremental_read(None, T(30)).log_files] == [T(20)]
    v6 = FileSystemView(timeline(6, *spec), [base(10)], [log(10)])
    inc6 = v6.incremental_read(T(10), T(20))  # requested range (10, 20]
    assert [i.requested_time for i in inc6.instants] == [T(20)] and inc6.log_files is None


def test_as_of_spec_vs_hudi_rs():
    # base b100; deltacommit 200 completes at 400, after compaction 300 (completed 350) was requested
    tl = timeline(8, (Action.DELTACOMMIT, 100, 101), (Action.DELTACOMMIT, 200, 400), (Action.COMPACTION, 300, 350))
    v = FileSystemView(tl, [base(100), base(300)], [log(200)])
    assert shape(v.file_groups()[0].slices) == {T(300): (T(300), [T(200)]), T(100): (T(100), [])}
    spec = v.as_of_read(T(250))
    assert spec.instants == {T(100)} and shape(spec.slices) == {T(100): (T(100), [])}
    rs = v.as_of_read(T(250), mode="hudi-rs")
    # hudi-rs admits 200 (requested <= as_of) but its log sits in slice 300 > as_of: the update is missing
    assert T(200) in rs.instants and rs.visible_log_files() == []
    for mode in ("spec", "hudi-rs"):
        late = v.as_of_read(T(450), mode=mode)
        assert shape(late.slices) == {T(300): (T(300), [T(200)])}
    # spec: at 380 deltacommit 200 is not complete yet; the compacted base (300, completed) holds the older data
    assert shape(v.as_of_read(T(380)).slices) == {T(300): (T(300), [])}
    assert v.snapshot_read().instants == {T(100), T(200), T(300)}


def test_bad_rule_is_refused():
    with pytest.raises(ValueError, match="rule"):
        FileSystemView(Timeline(8), [], [], rule="by-magic")
