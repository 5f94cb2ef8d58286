"""Focused tests for model.slicing that `make mutate` showed missing (hudi-semantics.md section 3, I6-I9).

Each test pins one rule of ``AbstractTableFileSystemView`` / ``HoodieFileGroup`` /
``CompletionTimeQueryView`` as the spec states it, with the Hudi method it encodes: the completion-time
lookup (archived = completed at its own time), the slice rules at their boundaries, the reader filters,
the merged (pending-compaction) slices, time travel in both modes, incremental ranges and compaction plans.
"""

from __future__ import annotations

import pytest

from model.filenames import BaseFile, LogFile, timeline_file_name, timeline_from_files
from model.instant import Action, State
from model.slicing import (COMPLETION_TIME, INSTANT_TIME, CompletionTimes, FileGroup, FileGroupId, FileSlice,
                           FileSystemView, build_file_groups, compaction_inputs, compaction_schedule_refusal,
                           rule_for_version, slice_key_completion_time, slice_key_instant_time)
from model.timeline import Timeline

FG = FileGroupId("p", "fg-0")
FG1 = FileGroupId("p", "fg-1")


def T(n: int) -> str:
    return f"2025010100000{n:04d}"


def base(t: int, fid: str = "fg-0", tok: str = "0-1-1") -> BaseFile:
    return BaseFile(fid, tok, T(t), "parquet", "p")


def log(t: int, fid: str = "fg-0", version: int = 1) -> LogFile:
    return LogFile(fid, T(t), version, "0-1-1", False, "p")


def timeline(version: int, *instants) -> Timeline:
    """instants: (action, requested, completion | None (inflight) | 'requested')."""
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
    return {s.base_instant: (s.base_file.instant_time if s.base_file else None,
                             [lg.instant_time for lg in s.log_files]) for s in slices}


# ---------------------------------------------------------------------------------- value types
def test_file_slice_and_group_accessors():
    """``FileSlice``: base then logs; empty iff neither. ``HoodieFileGroup``: slices newest first."""
    b, l1 = base(10), log(11)
    s = FileSlice(FG, T(10), b, (l1,))
    assert (s.partition, s.file_id, s.files, s.is_empty) == ("p", "fg-0", (b, l1), False)
    assert FileSlice(FG, T(10)).is_empty and FileSlice(FG, T(10)).files == ()
    assert not FileSlice(FG, T(10), None, (l1,)).is_empty and FileSlice(FG, T(10), b).files == (b,)
    assert str(s) == f"p/fg-0@{T(10)}[{b.name}; 1 log(s)]"
    assert str(FileSlice(FG, T(10))) == f"p/fg-0@{T(10)}[-; 0 log(s)]"
    assert s.with_files(None, [l1, l1]) == FileSlice(FG, T(10), None, (l1, l1))
    assert FileSlice(FG, T(10)).with_files(b, []) == FileSlice(FG, T(10), b, ())
    old, new = FileSlice(FG, T(10), b), FileSlice(FG, T(20))
    g = FileGroup(FG, (new, old))
    assert (g.partition, g.file_id, g.latest_slice) == ("p", "fg-0", new)
    assert g.slice_at(T(10)) is old and g.slice_at(T(20)) is new and g.slice_at(T(30)) is None
    assert FileGroup(FG, ()).latest_slice is None


# --------------------------------------------------------------------------- completion times
def test_completion_times_archived_pending_and_strictly_before():
    """``CompletionTimeQueryView``: completed -> its completion; before the active timeline's first instant ->
    archived, completed at its own time (V1); pending / unknown -> None; ``isCompletedBefore`` is strict (I9)."""
    tl = timeline(8, (Action.DELTACOMMIT, 10, 20), (Action.DELTACOMMIT, 30, None), (Action.COMMIT, 40, 50))
    ct = CompletionTimes(tl)
    assert ct.completion_time(T(10)) == T(20) and ct.completion_time(T(40)) == T(50)
    assert ct.completion_time(T(30)) is None and ct.completion_time(T(35)) is None
    assert ct.completion_time(T(5)) == T(5) and ct.is_archived(T(5))
    assert not ct.is_archived(T(10)) and not ct.is_archived(T(9999))
    assert ct.is_completed(T(10)) and not ct.is_completed(T(30)) and ct.completed_predicate()(T(40))
    assert not ct.completed_predicate()(T(30))
    assert ct.is_completed_before(T(21), T(10)) and not ct.is_completed_before(T(20), T(10))
    assert not ct.is_completed_before(T(99), T(30))
    assert ct.archived_instants() == []
    empty = CompletionTimes(Timeline(8))
    assert empty.completion_time(T(1)) is None and not empty.is_archived(T(1))
    # given writes are used instead of the timeline's
    only = CompletionTimes(tl, [i for i in tl.write_timeline() if i.requested_time == T(40)])
    assert only.completion_time(T(10)) == T(10)  # now before the first listed instant: archived
    assert only.completion_time(T(40)) == T(50)


def test_tv6_completed_instant_without_mtime_stands_in_with_its_requested_time():
    """Layout 1 knows no completion time without mtimes: the requested time stands in."""
    names = [timeline_file_name(T(10), Action.COMMIT, st, None, 1) for st in
             (State.REQUESTED, State.INFLIGHT, State.COMPLETED)]
    tl6 = timeline_from_files(names, 6)
    assert CompletionTimes(tl6).completion_time(T(10)) == T(10)


# -------------------------------------------------------------------------------------- rules
def test_rule_for_version_and_the_instant_time_rule():
    assert rule_for_version(6) == INSTANT_TIME
    assert rule_for_version(8) == COMPLETION_TIME and rule_for_version(9) == COMPLETION_TIME
    for v in (5, 7, 10):
        with pytest.raises(ValueError, match=f"unknown table version {v}; supported: 6, 8, 9"):
            rule_for_version(v)
    ct = CompletionTimes(Timeline(6))
    assert slice_key_instant_time(log(30), [T(10), T(40)], ct) == T(30)


def test_completion_time_rule_boundaries():
    """``getBaseInstantTime``: no slice -> own instant; pending -> latest slice; else greatest base <= c
    (inclusive), or own instant when every base is later."""
    tl = timeline(8, (Action.DELTACOMMIT, 10, 20), (Action.DELTACOMMIT, 25, 40), (Action.DELTACOMMIT, 50, None))
    ct = CompletionTimes(tl)
    assert slice_key_completion_time(log(25), [], ct) == T(25)
    assert slice_key_completion_time(log(50), [T(10), T(30)], ct) == T(30)
    assert slice_key_completion_time(log(25), [T(10), T(40), T(45)], ct) == T(40)  # c == base: that slice
    assert slice_key_completion_time(log(25), [T(10), T(39), T(41)], ct) == T(39)
    assert slice_key_completion_time(log(10), [T(21), T(30)], ct) == T(10)  # every base later


def test_build_file_groups_keeps_the_greatest_duplicate_base_and_the_pending_compaction_slice():
    """``buildFileGroups``: a retried task's two base files of one instant keep the greatest name; the empty
    slice of a pending compaction exists before logs are placed; groups in (partition, file id) order."""
    tl = timeline(8, (Action.COMMIT, 10, 11), (Action.DELTACOMMIT, 20, 30), (Action.COMPACTION, 25, None))
    ct = CompletionTimes(tl)
    lo, hi = base(10, tok="0-1-1"), base(10, tok="1-1-1")
    for order in ([lo, hi], [hi, lo]):
        groups = build_file_groups(order + [base(5, fid="fg-1")], [log(20)], {FG: T(25)}, ct,
                                   slice_key_completion_time)
        assert list(groups) == [FG, FG1]
        g = groups[FG]
        assert [s.base_instant for s in g.slices] == [T(25), T(10)]
        assert g.slices[1].base_file == hi and g.slices[0].log_files == (log(20),)
        assert groups[FG1].slices == (FileSlice(FG1, T(5), base(5, fid="fg-1")),)
    # the logs are placed in LogFileComparator order
    groups = build_file_groups([], [log(20, version=2), log(20, version=1)], {}, ct, slice_key_instant_time)
    assert groups[FG].slices[0].log_files == (log(20, version=1), log(20, version=2))


# ------------------------------------------------------------------------------- the view: setup
def test_view_rule_argument():
    tl = timeline(8, (Action.DELTACOMMIT, 10, 20))
    assert FileSystemView(tl, [], []).rule == COMPLETION_TIME
    assert FileSystemView(timeline(6, (Action.DELTACOMMIT, 10, 20)), [], []).rule == INSTANT_TIME
    assert FileSystemView(tl, [], [], rule=INSTANT_TIME).rule == INSTANT_TIME
    assert FileSystemView(tl, [], [], rule=slice_key_instant_time).rule == "slice_key_instant_time"

    class Custom:
        def __call__(self, lg, keys, times):
            return T(1)
    v = FileSystemView(tl, [], [log(10)], rule=Custom())
    assert v.rule == "custom" and v.file_group(FG).slices[0].base_instant == T(1)
    with pytest.raises(ValueError, match=r"unknown slicing rule 'x'; expected one of \['completion-time', "
                                         r"'instant-time'\] or None"):
        FileSystemView(tl, [], [], rule="x")


def test_view_normalises_plain_tuple_keys_and_reads_pending_compactions_from_the_timeline():
    tl = timeline(8, (Action.COMMIT, 10, 11), (Action.DELTACOMMIT, 20, 21), (Action.COMPACTION, 30, "requested"))
    v = FileSystemView(tl, [base(10)], [log(20)], pending_compactions={("p", "fg-0"): T(30)},
                       replaced={("p", "fg-9"): T(10)}, pending_clustering={("p", "fg-8"): T(40)})
    assert v.pending_compactions == {FG: T(30)} and type(next(iter(v.pending_compactions))) is FileGroupId
    assert v.replaced == {FileGroupId("p", "fg-9"): T(10)}
    assert v.pending_clustering == {FileGroupId("p", "fg-8"): T(40)}
    assert v.file_group(("p", "fg-0")).slices[0].base_instant == T(30)
    assert v.file_group(("p", "nope")) is None
    assert v.table_version == 8 and v.v8 and not FileSystemView(Timeline(6), [], []).v8
    assert v.file_groups() == [v.file_group(FG)]


def test_slice_for_write_and_slice_of():
    """tv6 writer: the newest slice with base <= its instant (``getLatestFileSliceBeforeOrOn``)."""
    tl = timeline(6, (Action.COMMIT, 10, 11), (Action.COMPACTION, 30, 31))
    v = FileSystemView(tl, [base(10), base(30)], [log(10), log(30)])
    assert v.slice_for_write(FG, T(30)) == T(30) and v.slice_for_write(FG, T(29)) == T(10)
    assert v.slice_for_write(FG, T(5)) is None and v.slice_for_write(FG1, T(30)) is None
    assert v.slice_of(log(10)).base_instant == T(10) and v.slice_of(base(30)).base_instant == T(30)
    assert v.slice_of(log(20)) is None and v.slice_of(log(20, fid="zz")) is None


# --------------------------------------------------------------------------------- latest views
def test_tv6_latest_skips_uncommitted_slices_and_hides_the_base_of_a_pending_compaction():
    """tv6 ``isFileSliceCommitted`` (completed, pending compaction, or archived; not after the last write) and
    ``filterBaseFileAfterPendingCompaction``."""
    tl = timeline(6, (Action.COMMIT, 10, 11), (Action.DELTACOMMIT, 20, 21), (Action.COMMIT, 40, None))
    v = FileSystemView(tl, [base(5), base(10), base(40), base(50)], [log(10)])
    # 50: after the last write; 40: inflight; 10: committed
    assert shape(v.latest_file_slices()) == {T(10): (T(10), [T(10)])}
    v = FileSystemView(tl, [base(5)], [])  # 5: before the active timeline: archived, committed
    assert shape(v.latest_file_slices()) == {T(5): (T(5), [])}
    tl = timeline(6, (Action.COMMIT, 10, 11), (Action.COMPACTION, 20, None))
    v = FileSystemView(tl, [base(10), base(20)], [log(20)])
    assert shape(v.latest_file_slices()) == {T(20): (None, [T(20)])}
    assert v.latest_file_slices()[0] == FileSlice(FG, T(20), None, (log(20),))
    assert shape(v.latest_file_slices_as_of(T(30), include_pending_compaction=False)) == {T(10): (T(10), [])}
    assert shape(v.latest_file_slices_as_of(T(15))) == {T(10): (T(10), [])}
    # by default the pending compaction's slice is included (its base hidden, its log kept)
    assert shape(v.latest_file_slices_as_of(T(30))) == {T(20): (None, [T(20)])}
    assert shape(v.latest_file_slices_as_of(T(30), include_pending_compaction=True)) == {T(20): (None, [T(20)])}
    assert shape(v.latest_file_slices_as_of(T(9))) == {}


def test_pending_clustering_base_files_are_hidden_and_replaced_groups_dropped():
    """``isBaseFileDueToPendingClustering`` (timeline and plans) and ``isFileGroupReplacedBeforeOrOn``."""
    tl = timeline(8, (Action.COMMIT, 10, 11), (Action.CLUSTERING, 20, None), (Action.REPLACECOMMIT, 30, 31),
                  (Action.COMMIT, 40, 41))
    v = FileSystemView(tl, [base(10), base(20, fid="fg-1"), base(10, fid="fg-2")], [],
                       replaced={("p", "fg-2"): T(30)})
    assert [s.file_id for s in v.latest_file_slices()] == ["fg-0"]
    assert [s.file_id for s in v.latest_file_slices_as_of(T(29))] == ["fg-0", "fg-2"]
    assert [s.file_id for s in v.latest_file_slices_as_of(T(30))] == ["fg-0"]
    # a replaced group does not hide the groups after it
    v = FileSystemView(tl, [base(10), base(10, fid="fg-2")], [], replaced={FG: T(30)})
    assert [s.file_id for s in v.latest_file_slices_as_of(T(30))] == ["fg-2"]
    assert [s.file_id for s in v.latest_file_slices()] == ["fg-2"]
    v = FileSystemView(tl, [base(40)], [], pending_clustering={FG: T(40)})
    assert v.latest_file_slices() == [] and v.latest_merged_file_slices() == []


def test_merged_slices_merge_the_pending_compaction_with_the_previous_committed_slice():
    """``getLatestMergedFileSlicesBeforeOrOn`` / ``mergeCompactionPendingFileSlices``: older base, older logs,
    then the pending slice's logs; tv8 drops logs of non-completed deltacommits (``filterUncommittedLogs``)."""
    tl = timeline(8, (Action.COMMIT, 10, 11), (Action.DELTACOMMIT, 15, 16), (Action.COMPACTION, 20, None),
                  (Action.DELTACOMMIT, 25, 26), (Action.DELTACOMMIT, 27, None))
    v = FileSystemView(tl, [base(10)], [log(15), log(25), log(27)], pending_compactions={FG: T(20)})
    assert shape(v.latest_merged_file_slices()) == {T(10): (T(10), [T(15), T(25)])}
    assert shape(v.latest_merged_file_slices(T(19))) == {T(10): (T(10), [T(15)])}
    assert shape(v.latest_merged_file_slices(T(9))) == {}
    assert shape(v.latest_file_slices()) == {T(20): (None, [T(25)])}
    # only the pending slice committed: nothing to merge with
    v = FileSystemView(tl, [], [log(25)], pending_compactions={FG: T(20)})
    assert shape(v.latest_merged_file_slices()) == {T(20): (None, [T(25)])}
    # tv6 keeps every log (the log reader filters blocks)
    tl6 = timeline(6, (Action.COMMIT, 10, 11), (Action.DELTACOMMIT, 15, None))
    v = FileSystemView(tl6, [base(10)], [log(10)])
    assert shape(v.latest_merged_file_slices()) == {T(10): (T(10), [T(10)])}
    # a group replaced at or before t is left out
    v = FileSystemView(tl, [base(10)], [], replaced={FG: T(20)})
    assert v.latest_merged_file_slices(T(19)) != [] and v.latest_merged_file_slices(T(20)) == []


# ---------------------------------------------------------------------------------------- reads
def tt_view(version: int):
    # fg-0: base t10 (commit), deltacommit l15 [15,40], compaction t20 [20,30] wrote base t20, deltacommit l35
    tl = timeline(version, (Action.COMMIT, 10, 11), (Action.DELTACOMMIT, 15, 40), (Action.COMPACTION, 20, 30),
                  (Action.DELTACOMMIT, 35, 36), (Action.DELTACOMMIT, 45, None))
    return FileSystemView(tl, [base(10), base(20)], [log(15), log(35), log(45)])


def test_visible_instants_by_completion_and_by_requested_time_are_inclusive():
    v = tt_view(8)
    assert v.as_of_read(T(36)).instants == {T(10), T(20), T(35)}  # completion <= 36; l15 completed at 40
    assert v.as_of_read(T(40)).instants == {T(10), T(15), T(20), T(35)}
    assert v.as_of_read(T(35), mode="hudi-rs").instants == {T(10), T(15), T(20), T(35)}  # requested <= 35
    assert v.as_of_read(T(34), mode="hudi-rs").instants == {T(10), T(15), T(20)}
    assert v.snapshot_read().instants == {T(10), T(15), T(20), T(35)}
    with pytest.raises(ValueError, match="unknown as-of mode 'x'; expected 'spec' or 'hudi-rs'"):
        v.as_of_read(T(40), mode="x")


def test_as_of_read_walks_back_to_a_readable_base_collecting_admitted_logs():
    """Time travel (tech spec "Reader Expectations"): base = greatest admitted requested <= t (or a completed
    compaction), logs = completion <= t for tv8; hudi-rs lists every log of the chosen slices."""
    v = tt_view(8)
    # l15 (completion 40) sits in slice t20 under completion-time slicing; l35 too; l45 (pending): the latest
    assert shape(v.file_group(FG).slices) == {T(20): (T(20), [T(15), T(35), T(45)]), T(10): (T(10), [])}
    assert shape(v.as_of_read(T(36)).slices) == {T(20): (T(20), [T(35)])}
    assert shape(v.as_of_read(T(40)).slices) == {T(20): (T(20), [T(15), T(35)])}
    assert shape(v.as_of_read(T(19)).slices) == {T(10): (T(10), [])}
    assert shape(v.as_of_read(T(36), mode="hudi-rs").slices) == {T(20): (T(20), [T(15), T(35), T(45)])}
    assert shape(v.as_of_read(T(9)).slices) == {}
    assert v.as_of_read(T(36)).visible_log_files() == [log(35)]
    assert v.as_of_read(T(36)).files() == [base(20), log(35)]


def test_as_of_read_without_a_readable_base_keeps_the_logs_under_the_oldest_walked_slice():
    tl = timeline(8, (Action.DELTACOMMIT, 10, 11), (Action.DELTACOMMIT, 20, 21), (Action.COMMIT, 30, None))
    v = FileSystemView(tl, [base(30)], [log(10), log(20)])
    # base t30 is inflight: not readable; the logs of t10 and t20 are in slice t10 (no base before them)
    read = v.as_of_read(T(40))
    assert shape(read.slices) == {T(10): (None, [T(10), T(20)])}
    assert shape(v.as_of_read(T(20)).slices) == {T(10): (None, [T(10)])}
    # a group replaced by an admitted replacecommit is gone; not yet admitted: still read
    tl = timeline(8, (Action.COMMIT, 10, 11), (Action.REPLACECOMMIT, 20, 25))
    v = FileSystemView(tl, [base(10)], [], replaced={FG: T(20)})
    assert v.as_of_read(T(25)).slices == () and len(v.as_of_read(T(24)).slices) == 1


def test_incremental_read_ranges_are_open_start_closed_end():
    """tv8: (start, end] over completion times (``CompletionTimeQueryView.getInstantTimes``); tv6: over requested
    times. Base files of the instants, and tv8 logs of their deltacommits; tv6 logs cannot be attributed."""
    v = tt_view(8)
    inc = v.incremental_read(T(30), T(40))
    assert [i.requested_time for i in inc.instants] == [T(35), T(15)]  # completion order
    assert inc.base_files == () and inc.log_files == (log(15), log(35))
    inc = v.incremental_read(T(11), T(30))
    assert [i.requested_time for i in inc.instants] == [T(20)] and inc.base_files == (base(20),)
    assert inc.log_files == ()
    assert [i.requested_time for i in v.incremental_read(None, T(11)).instants] == [T(10)]
    assert [i.requested_time for i in v.incremental_read(T(36), None).instants] == [T(15)]
    assert len(v.incremental_read(None, None).instants) == 4
    v6 = tt_view(6)
    inc = v6.incremental_read(T(10), T(20))
    assert [i.requested_time for i in inc.instants] == [T(15), T(20)] and inc.log_files is None
    assert inc.base_files == (base(20),)
    assert [i.requested_time for i in v6.incremental_read(None, T(10)).instants] == [T(10)]
    assert [i.requested_time for i in v6.incremental_read(T(20), None).instants] == [T(35)]


# ---------------------------------------------------------------------------------- compaction
def test_compaction_plan_completion_time_rule_takes_logs_completed_before_tc():
    """RFC-66 non-serial compaction plan (I9): newest committed slice with base < tc, logs completed before tc."""
    tl = timeline(8, (Action.COMMIT, 10, 11), (Action.DELTACOMMIT, 12, 19), (Action.DELTACOMMIT, 13, 20),
                  (Action.DELTACOMMIT, 14, None))
    v = FileSystemView(tl, [base(10)], [log(12), log(13), log(14)])
    plan = v.compaction_plan_files(T(20))
    assert plan == {FG: FileSlice(FG, T(10), base(10), (log(12),))}
    assert v.compaction_plan_files(T(10)) == {}  # base must be < tc
    # instant-time rule: every log of the slice
    v6 = FileSystemView(tl, [base(10)], [log(10)], rule=INSTANT_TIME)
    assert v6.compaction_plan_files(T(20)) == {FG: FileSlice(FG, T(10), base(10), (log(10),))}


def test_compaction_plan_skips_replaced_clustering_other_compactions_and_empty_slices():
    tl = timeline(8, (Action.COMMIT, 10, 11), (Action.DELTACOMMIT, 12, 13))
    logs = [log(12, fid=f) for f in ("fg-0", "fg-1", "fg-2", "fg-3")]
    bases = [base(10, fid=f) for f in ("fg-0", "fg-1", "fg-2", "fg-3", "fg-4")]
    v = FileSystemView(tl, bases, logs, replaced={FG: T(10)}, pending_clustering={FG1: T(15)},
                       pending_compactions={("p", "fg-2"): T(16), ("p", "fg-3"): T(20)})
    assert list(v.compaction_plan_files(T(20))) == [FileGroupId("p", "fg-3")]
    # the base of an uncompleted (archived-unknown) instant is left out: a log-only slice
    v = FileSystemView(tl, [], [log(12)])
    assert v.compaction_plan_files(T(20)) == {FG: FileSlice(FG, T(12), None, (log(12),))}


def test_compaction_schedule_refusal_and_inputs():
    """0.x ``ScheduleCompactionActionExecutor``: refuse while an older data write is pending."""
    tl = timeline(6, (Action.DELTACOMMIT, 10, None), (Action.DELTACOMMIT, 5, None), (Action.COMMIT, 30, None),
                  (Action.COMPACTION, 3, None))
    assert compaction_schedule_refusal(tl, T(20)) == f"write {T(5)} is pending and older than compaction {T(20)}"
    assert compaction_schedule_refusal(tl, T(5)) is None
    assert compaction_schedule_refusal(timeline(6, (Action.REPLACECOMMIT, 4, None)), T(5)) is not None
    s = FileSlice(FG, T(10), base(10), (log(12),))
    assert compaction_inputs({T(20): {FG: s, FG1: FileSlice(FG1, T(1), None, (log(1, fid="fg-1"),))}}) == {
        T(20): (base(10), log(12), log(1, fid="fg-1"))}


def test_as_of_read_boundaries():
    """Time travel at the edges: a completed compaction's base is readable as of any t >= its requested time
    (I9: it holds only logs completed before it), even before it completed; a slice whose base instant is t
    itself is walked; groups without a slice <= t, or replaced by an admitted replacecommit, are skipped
    without hiding the groups after them; older logs go in front of newer ones."""
    v = tt_view(8)
    assert shape(v.as_of_read(T(25)).slices) == {T(20): (T(20), [])}  # compaction t20 completed only at 30
    assert shape(v.as_of_read(T(20)).slices) == {T(20): (T(20), [])}  # base instant == t
    assert v.as_of_read(T(20)).slices[0].group == FG
    tl = timeline(8, (Action.COMMIT, 10, 11), (Action.COMMIT, 50, 51), (Action.REPLACECOMMIT, 15, 16))
    v = FileSystemView(tl, [base(50), base(10, fid="fg-1"), base(10, fid="fg-2")], [],
                       replaced={("p", "fg-1"): T(15)})
    assert [s.file_id for s in v.as_of_read(T(20)).slices] == ["fg-2"]  # fg-0 has no slice <= t, fg-1 replaced
    # tv6: the newer slice's base is not readable (its commit is inflight): its logs follow the older slice's
    tl6 = timeline(6, (Action.COMMIT, 10, 11), (Action.DELTACOMMIT, 12, 13), (Action.COMMIT, 30, None),
                   (Action.DELTACOMMIT, 32, 33))
    v6 = FileSystemView(tl6, [base(10), base(30)], [log(10), log(30)])
    assert shape(v6.as_of_read(T(40)).slices) == {T(10): (T(10), [T(10), T(30)])}
    assert v6.as_of_read(T(40)).slices[0] == FileSlice(FG, T(10), base(10), (log(10), log(30)))
