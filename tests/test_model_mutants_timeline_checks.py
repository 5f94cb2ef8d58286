"""Focused tests for model/invariants/timeline.py that `make mutate` showed unchecked by the fast tests: which time
format check each layout runs, I4 with several instants at one requested time, I5 with several restores, what the
first active instant counts as, I8.snapshot-completeness on every branch (files it skips and why, the two
sentences it reports, in path order), the committed files the table checks judge, and which verdicts
``timeline_verdicts``/``table_verdicts`` return per layout (hudi-semantics.md section 8)."""

from __future__ import annotations

import pytest

from model.filenames import BaseFile, LogFile
from model.instant import Action, State
from model.invariants import Verdict
from model.invariants.timeline import (check_completed_action, check_no_write_during_restore, check_reader_visibility,
                                       check_snapshot_reads_every_commit, check_time_format, committed_files,
                                       table_verdicts, timeline_verdicts)
from model.logblocks import data_block, rollback_block
from model.slicing import FileGroup, FileGroupId, FileSlice, FileSystemView
from model.timeline import Timeline

DONE = [State.REQUESTED, State.INFLIGHT, State.COMPLETED]


def T(n: int) -> str:
    return f"2025010100000{n:04d}"


def base(fid, n):
    return BaseFile(fid, "0-1-1", T(n), "parquet", "p")


def log(fid, n, v=1):
    return LogFile(fid, T(n), v, "0-1-1", False, "p")


# ----------------------------------------------------------------------------------------- I1
def test_time_format_checks_completion_times_only_where_they_are_names():
    tv8 = Timeline(8)
    tv8.load(T(10), Action.COMMIT, DONE, "2025")
    assert check_time_format(tv8) == Verdict("I1.time-format", False,
                                             "1 time(s) are not 17-digit calendar times: ['2025']", ("2025",))
    tv6 = Timeline(6)   # layout 1: a completion time is a file modification time, not a name
    tv6.load(T(10), Action.COMMIT, DONE, "2025")
    assert check_time_format(tv6) == Verdict("I1.time-format", True)
    tv6.load("2025", Action.COMMIT, [State.REQUESTED], None)
    assert check_time_format(tv6).involved == ("2025",)


# ----------------------------------------------------------------------------------------- I4
def test_completed_action_looks_past_other_instants_at_the_same_time():
    tl = Timeline(8)
    tl.load(T(10), Action.CLEAN, [State.REQUESTED], None)            # sorts first at T(10): not a service
    tl.load(T(10), Action.COMPACTION, [State.REQUESTED, State.INFLIGHT], None)
    tl.load(T(10), Action.DELTACOMMIT, [State.COMPLETED], T(11))
    assert check_completed_action(tl) == Verdict(
        "I4.completed-action", False, f"1 service instant(s) completed under the wrong action: {T(10)}.compaction "
                                      f"completed as deltacommit, not commit", (f"{T(10)}.compaction",))


def test_completed_action_ignores_pending_and_completed_neighbours_of_the_right_kind():
    ok = Timeline(8)   # a pending service beside another pending instant at its time
    ok.load(T(10), Action.CLUSTERING, [State.REQUESTED], None)
    ok.load(T(10), Action.COMMIT, [State.REQUESTED], None)
    assert check_completed_action(ok) == Verdict("I4.completed-action", True)
    done = Timeline(8)  # a completed compaction (shown as commit) beside a completed deltacommit: not a pending service
    done.load(T(10), Action.COMPACTION, DONE, T(11))
    done.load(T(10), Action.DELTACOMMIT, [State.COMPLETED], T(12))
    assert check_completed_action(done) == Verdict("I4.completed-action", True)
    plain = Timeline(8)  # a pending write beside a completed write: neither is a service
    plain.load(T(10), Action.DELTACOMMIT, [State.REQUESTED], None)
    plain.load(T(10), Action.COMMIT, DONE, T(11))
    assert check_completed_action(plain) == Verdict("I4.completed-action", True)


# ----------------------------------------------------------------------------------------- I5
def test_no_write_during_restore_judges_every_restore():
    tl = Timeline(6)   # layout 1: the completed restore is not judged, the pending one after it is
    tl.load(T(10), Action.RESTORE, DONE, T(15))
    tl.load(T(20), Action.RESTORE, [State.REQUESTED], None)
    tl.load(T(12), Action.COMMIT, [State.REQUESTED], None)
    tl.load(T(30), Action.DELTACOMMIT, [State.REQUESTED], None)
    assert check_no_write_during_restore(tl) == Verdict(
        "I5.no-write-during-restore", False,
        f"1 write(s) started during a restore: {T(30)}.deltacommit started while restore {T(20)} was pending",
        (f"{T(30)}.deltacommit",))


# ----------------------------------------------------------------------------------------- I8 visibility
class Latest:
    def __init__(self, slices):
        self.slices = slices

    def latest_file_slices(self):
        return list(self.slices)


def test_the_first_active_instant_is_not_archived():
    g = FileGroupId("p", "fg-0")
    tl = Timeline(8)
    tl.load(T(10), Action.COMMIT, [State.REQUESTED], None)
    tl.load(T(20), Action.COMMIT, DONE, T(21))
    b10 = base("fg-0", 10)
    assert check_reader_visibility(Latest([FileSlice(g, T(10), b10)]), tl) == Verdict(
        "I8.reader-visibility", False, f"1 file(s) a reader must not see: {b10.path} of non-completed instant {T(10)} "
                                       f"is visible", (b10.path,))
    assert check_reader_visibility(Latest([FileSlice(g, T(9), base("fg-0", 9))]), tl).holds


# ----------------------------------------------------------------------------------------- I8 completeness
class SView:
    """A stand-in view: groups (newest slice first), the merged slices a snapshot reads, the replaced groups."""

    def __init__(self, groups, merged, replaced=(), orphans=()):
        self.groups, self.merged, self.replaced, self.orphans = groups, merged, set(replaced), dict(orphans)

    def latest_merged_file_slices(self):
        return list(self.merged)

    def file_groups(self):
        return list(self.groups)

    def file_group(self, gid):
        return next((g for g in self.groups if g.id == gid), None)

    def slice_of(self, f):
        if f in self.orphans:
            return self.orphans[f]
        return next((s for g in self.groups for s in g.slices if s.base_file == f or f in s.log_files), None)

    def _replaced_by(self, gid, t):
        return gid in self.replaced


class NoReplaced(SView):
    _replaced_by = None


G0 = FileGroupId("p", "fg-0")


def _compacted_group():
    b10, b30, l10, l30 = base("fg-0", 10), base("fg-0", 30), log("fg-0", 10), log("fg-0", 30)
    s30, s10 = FileSlice(G0, T(30), b30, (l30,)), FileSlice(G0, T(10), b10, (l10,))
    return b10, b30, l10, l30, s30, s10


def test_snapshot_completeness_reports_both_kinds_of_lost_file_in_path_order():
    b10, b30, l10, l30, s30, s10 = _compacted_group()
    view = SView([FileGroup(G0, (s30, s10))], [FileSlice(G0, T(30), b30)])
    # l10 merged by compaction T(30): skipped; l30 in the newest slice but unread; b10 not merged
    v = check_snapshot_reads_every_commit(view, [b10, b30], [l10, l30], compaction_inputs={T(30): [l10]})
    assert v == Verdict("I8.snapshot-completeness", False,
                        f"2 committed file(s) lost to snapshot readers: {l30.path} (slice {T(30)}) is committed but no "
                        f"snapshot reads it; {b10.path} (slice {T(10)}) is committed but compaction {T(30)}, whose base "
                        f"file supersedes it, did not merge it: no snapshot reads it", (l30.path, b10.path))
    all_read = SView([FileGroup(G0, (s30, s10))], [s30])
    assert check_snapshot_reads_every_commit(all_read, [b30], [l30]) == Verdict("I8.snapshot-completeness", True)
    # plans unknown: the newer committed base holds everything older
    assert check_snapshot_reads_every_commit(all_read, [b10, b30], [l10, l30]).holds


def test_snapshot_completeness_newest_base_is_the_newest_committed_one():
    b10, b30, l10, l30, s30, s10 = _compacted_group()
    view = SView([FileGroup(G0, (s30, s10))], [FileSlice(G0, T(10), b10)])
    # b30 is not committed (a pending compaction's base): no newer committed base supersedes l10
    v = check_snapshot_reads_every_commit(view, [b10], [l10])
    assert v == Verdict("I8.snapshot-completeness", False, f"1 committed file(s) lost to snapshot readers: {l10.path} "
                                                           f"(slice {T(10)}) is committed but no snapshot reads it",
                        (l10.path,))


def test_snapshot_completeness_skips_unplaced_and_replaced_files_but_not_what_follows():
    gz, gm = FileGroupId("p", "fg-z"), FileGroupId("p", "fg-m")
    la, lb, lm, lz = log("fg-a", 10), log("fg-b", 10), log("fg-m", 10), log("fg-z", 10)
    groups = [FileGroup(gm, (FileSlice(gm, T(10), None, (lm,)),)),
              FileGroup(gz, (FileSlice(gz, T(10), None, (lz,)),))]   # log-only groups: no base file at all
    orphans = {lb: FileSlice(FileGroupId("p", "fg-b"), T(10), None, (lb,))}   # a slice of a group the view lacks
    view = SView(groups, [], replaced={gm}, orphans=orphans)
    expected = Verdict("I8.snapshot-completeness", False, f"1 committed file(s) lost to snapshot readers: {lz.path} "
                                                          f"(slice {T(10)}) is committed but no snapshot reads it",
                       (lz.path,))
    assert sorted([la.path, lb.path, lm.path, lz.path]) == [la.path, lb.path, lm.path, lz.path]
    assert check_snapshot_reads_every_commit(view, [], [la, lb, lm, lz]) == expected
    assert check_snapshot_reads_every_commit(view, [], [lm, lz]) == expected
    # a view that cannot tell replaced groups: the replaced group's file counts as lost too
    plain = NoReplaced(groups, [], orphans=orphans)
    assert check_snapshot_reads_every_commit(plain, [], [la, lb, lm, lz]).involved == (lm.path, lz.path)

    class Bare:   # a view without _replaced_by at all
        def __init__(self, v):
            self.v = v

        def __getattr__(self, name):
            if name == "_replaced_by":
                raise AttributeError(name)
            return getattr(self.v, name)
    assert check_snapshot_reads_every_commit(Bare(plain), [], [lm, lz]).involved == (lm.path, lz.path)


# ----------------------------------------------------------------------------------------- committed files
def test_committed_files_counts_archived_and_completed_instants_only():
    tl = Timeline(8)
    tl.load(T(10), Action.DELTACOMMIT, [State.REQUESTED, State.INFLIGHT], None)   # the first active: pending
    tl.load(T(20), Action.DELTACOMMIT, DONE, T(21))
    bases = [base("fg-0", 5), base("fg-0", 10), base("fg-0", 20), base("fg-0", 30)]
    logs = [log("fg-0", 5), log("fg-0", 10), log("fg-0", 20), log("fg-0", 30)]
    assert committed_files(tl, bases, logs) == ([bases[0], bases[2]], [logs[0], logs[2]])
    assert committed_files(Timeline(8), bases, logs) == ([], [])   # an empty timeline: nothing archived
    # tv8 judges logs by their names even when their blocks are known
    assert committed_files(tl, [], [logs[1]], {logs[1]: [data_block(T(20))]}) == ([], [])


def test_committed_files_tv6_logs_by_their_blocks():
    tl = Timeline(6)
    tl.load(T(10), Action.DELTACOMMIT, DONE, None)
    tl.load(T(20), Action.DELTACOMMIT, [State.REQUESTED, State.INFLIGHT], None)
    tl.load(T(30), Action.DELTACOMMIT, DONE, None)
    l1, l2, l3, l4 = (log("fg-0", 10, v) for v in (1, 2, 3, 4))
    assert committed_files(tl, [], [l1, l2]) == ([], [l1, l2])   # no blocks known: every tv6 log counts
    pend = log("fg-0", 20)   # a tv6 name carries the slice's base instant, not the writer: it counts too
    assert committed_files(tl, [], [pend]) == ([], [pend])
    blocks = {l1: [data_block(T(10))], l2: [data_block(T(20))], l3: [data_block(T(30)), rollback_block(T(40), T(30))]}
    assert committed_files(tl, [], [l1, l2, l3, l4], blocks) == ([], [l1, l4])


# ----------------------------------------------------------------------------------------- the lists
def _table(tv):
    tl = Timeline(tv)
    tl.load(T(10), Action.DELTACOMMIT, DONE, T(11) if tv == 8 else None)
    b10, l10 = base("fg-0", 10), log("fg-0", 10)
    return tl, FileSystemView(tl, [b10], [l10]), b10, l10


def test_timeline_verdicts_per_layout():
    tl8, _, _, _ = _table(8)
    tl6, _, _, _ = _table(6)
    common = ["I3.legal-states", "I3.visible-state", "I3.single-writer", "I4.completed-action",
              "I5.no-write-during-restore"]
    assert [v.invariant for v in timeline_verdicts(tl8)] == ["I1.time-format", "I1.unique",
                                                             "I2.requested-before-completion"] + common
    assert [v.invariant for v in timeline_verdicts(tl6)] == ["I1.time-format", "I1.unique"] + common


def test_table_verdicts_per_layout_and_their_inputs():
    tl8, view8, b10, l10 = _table(8)
    names = [v.invariant for v in table_verdicts(tl8, view8, [b10], [l10], rule="completion-time")]
    assert names[-4:] == ["I6.slice-by-completion-time", "I8.reader-visibility", "I8.snapshot-completeness",
                          "I9.compaction-plan"]
    tl6, view6, _, _ = _table(6)
    v6 = table_verdicts(tl6, view6, [b10], [l10], rule="instant-time")
    assert [v.invariant for v in v6][-3:] == ["I7.slice-by-instant-time", "I8.reader-visibility",
                                              "I8.snapshot-completeness"]
    v6b = table_verdicts(tl6, view6, [b10], [l10], rule="instant-time", log_blocks={l10: [data_block(T(10))]})
    assert [(v.invariant, v.detail) for v in v6b][-2:] == [("I8.log-blocks", ""),
                                                           ("I9.compaction-plan", "0 plan(s), by blocks")]
    assert all(v.holds for v in v6 + v6b)
    # the replaced groups and pending clustering instants reach the reader-visibility check
    vis = {v.invariant: v for v in table_verdicts(tl8, view8, [b10], [l10], rule="completion-time",
                                                  replaced={("p", "fg-0"): T(40)})}["I8.reader-visibility"]
    assert vis.involved == ("p/fg-0",)
    vis = {v.invariant: v for v in table_verdicts(tl8, view8, [b10], [l10], rule="completion-time",
                                                  pending_clustering_instants=[T(10)])}["I8.reader-visibility"]
    assert vis.involved == (b10.path,)


def test_instant_time_rule_judges_log_names_not_base_files():
    """I7: a log must sit in the slice its name's instant names; a base file is judged for a unique slice only."""
    from model.invariants.timeline import check_files_in_one_slice

    b10, l10 = base("fg-0", 10), log("fg-0", 10)

    class Placed:
        def file_groups(self):
            return [FileGroup(G0, (FileSlice(G0, T(30), b10, (l10,)),))]
    v = check_files_in_one_slice(Placed(), [b10], [l10], rule="instant-time")
    assert v == Verdict("I7.slice-by-instant-time", False,
                        f"1 committed file(s) not in exactly one (correct) slice: {l10.path} names base instant "
                        f"{T(10)} but sits in slice {T(30)}", (l10.path,))
    assert check_files_in_one_slice(Placed(), [b10], [l10], rule="completion-time") == Verdict(
        "I6.slice-by-completion-time", True)


def test_log_blocks_rollbacks_anywhere_in_the_group_count():
    """I8.log-blocks: a rollback command block in an older slice of the group still masks the target's blocks."""
    from model.invariants.timeline import check_log_blocks_read

    tl = Timeline(8)
    for n in (10, 20, 30):
        tl.load(T(n), Action.DELTACOMMIT, DONE, T(n + 1))
    b10, b30, l10, l30 = base("fg-0", 10), base("fg-0", 30), log("fg-0", 10), log("fg-0", 30)
    s30, s10 = FileSlice(G0, T(30), b30, (l30,)), FileSlice(G0, T(10), b10, (l10,))
    view = SView([FileGroup(G0, (s30, s10))], [s30])
    blocks = {l30: [data_block(T(20))], l10: [rollback_block(T(25), T(20))]}
    v = check_log_blocks_read(view, tl, blocks, reader=lambda bs, timeline: list(bs))
    assert v == Verdict("I8.log-blocks", False, f"1 log block(s) a reader must not merge: p/fg-0: a reader merges "
                                                f"data@{T(20)}, which rollback command blocks roll back", ("p/fg-0",))


def test_compaction_plan_blocks_a_rollback_undoes_only_its_own_file_group():
    from model.invariants.timeline import check_compaction_plan_blocks

    tl = Timeline(6)
    tl.load(T(10), Action.DELTACOMMIT, DONE, None)
    tl.load(T(20), Action.DELTACOMMIT, [State.REQUESTED], None)
    l0, l1 = log("fg-0", 10), log("fg-1", 10)
    tc = T(50)
    blocks = {l0: [data_block(T(20))], l1: [rollback_block(T(30), T(20))]}
    assert check_compaction_plan_blocks(tl, {tc: [l0, l1]}, blocks).involved == (l0.name,)
    same = {l0: [data_block(T(20))], log("fg-0", 10, 2): [rollback_block(T(30), T(20))]}
    assert check_compaction_plan_blocks(tl, {tc: list(same)}, same).holds
