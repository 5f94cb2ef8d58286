"""Focused tests for model.invariants.timeline (I3-I5, hudi-semantics.md section 8): each check's verdict on
a holding and on a violating timeline, with its text (what ``audit`` prints) and its involved list."""

from __future__ import annotations

from model.instant import Action, State
from model.invariants import Verdict
from model.invariants.timeline import (MAX_INVOLVED, _verdict, check_completed_action, check_files_in_one_slice,
                                       check_no_write_during_restore, check_reader_visibility,
                                       check_single_writer, check_state_files)
from model.timeline import OVERWRITE, Timeline


def T(n: int) -> str:
    return f"2025010100000{n:04d}"


def test_verdict_quotes_three_sentences_and_names_each_culprit_once():
    bad = [(f"w{i % 10}", f"s{i}") for i in range(12)]
    v = _verdict("X", bad, "things", "ok")
    assert v == Verdict("X", False, "12 things: s0; s1; s2", tuple(f"w{i}" for i in range(MAX_INVOLVED)))
    assert _verdict("X", [], "things", "ok") == Verdict("X", True, "ok")
    assert _verdict("X", [("a", "s"), ("a", "t")], "things") == Verdict("X", False, "2 things: s; t", ("a",))


def test_state_files_a_pending_instant_needs_its_first_state_file():
    """I3.legal-states: requested (inflight for a savepoint) must be present unless completed."""
    tl = Timeline(8)
    tl.load(T(10), Action.COMMIT, [State.REQUESTED, State.INFLIGHT], None)
    tl.load(T(20), Action.COMMIT, [State.COMPLETED], T(21))       # archival leaves any subset
    tl.load(T(30), Action.SAVEPOINT, [State.INFLIGHT], None)      # savepoint starts inflight
    assert check_state_files(tl) == Verdict("I3.legal-states", True, "3 instants")
    tl.load(T(40), Action.DELTACOMMIT, [State.INFLIGHT], None)
    v = check_state_files(tl)
    assert v == Verdict("I3.legal-states", False, f"1 instant(s) with an illegal set of state files: "
                                                  f"{T(40)}.deltacommit has inflight but no requested file",
                        (f"{T(40)}.deltacommit",))


def test_single_writer_names_the_processes_of_each_state_file():
    tl = Timeline(8, storage=OVERWRITE)
    tl.create(T(10), Action.COMMIT, by="w1")
    tl.transition_to_inflight(T(10), Action.COMMIT, by="w1")
    assert check_single_writer(tl) == Verdict("I3.single-writer", True)
    tl.create(T(10), Action.COMMIT, by="w2")
    v = check_single_writer(tl)
    assert v == Verdict("I3.single-writer", False,
                        f"1 instant(s) whose files more than one process wrote: {T(10)}.commit has files written by "
                        f"2 processes (requested by w1, w2; inflight by w1)", (f"{T(10)}.commit",))


def test_completed_action_of_a_service():
    """I4: compaction completes as commit; a deltacommit file at its time is the wrong action."""
    tl = Timeline(8)
    tl.load(T(10), Action.COMPACTION, [State.REQUESTED, State.INFLIGHT], None)
    tl.load(T(10), Action.DELTACOMMIT, [State.COMPLETED], T(11))
    v = check_completed_action(tl)
    assert v == Verdict("I4.completed-action", False, f"1 service instant(s) completed under the wrong action: "
                                                      f"{T(10)}.compaction completed as deltacommit, not commit",
                        (f"{T(10)}.compaction",))
    ok = Timeline(8)
    ok.load(T(10), Action.COMPACTION, [State.REQUESTED, State.INFLIGHT], None)
    ok.load(T(20), Action.DELTACOMMIT, [State.COMPLETED], T(21))
    assert check_completed_action(ok).holds


def test_no_write_during_restore_pending_and_completed():
    """I5: no data write requested after a pending restore, or inside (restore, its completion) in layout 2."""
    tl = Timeline(8)
    tl.load(T(10), Action.RESTORE, [State.REQUESTED, State.INFLIGHT, State.COMPLETED], T(30))
    tl.load(T(20), Action.COMMIT, [State.REQUESTED], None)
    tl.load(T(30), Action.DELTACOMMIT, [State.REQUESTED], None)  # at the completion: allowed
    tl.load(T(5), Action.COMMIT, [State.REQUESTED], None)        # before: allowed
    tl.load(T(25), Action.CLEAN, [State.REQUESTED], None)        # not a data write
    v = check_no_write_during_restore(tl)
    assert v == Verdict("I5.no-write-during-restore", False, f"1 write(s) started during a restore: "
                                                             f"{T(20)}.commit started while restore {T(10)} was pending",
                        (f"{T(20)}.commit",))
    pend = Timeline(8)
    pend.load(T(10), Action.RESTORE, [State.REQUESTED], None)
    pend.load(T(90), Action.REPLACECOMMIT, [State.REQUESTED], None)
    pend.load(T(10), Action.COMMIT, [State.REQUESTED], None)  # the same time: not after
    assert check_no_write_during_restore(pend).involved == (f"{T(90)}.replacecommit",)
    tv6 = Timeline(6)  # layout 1: completion times are not names; a completed restore is not judged
    tv6.load(T(10), Action.RESTORE, [State.REQUESTED, State.INFLIGHT, State.COMPLETED], T(30))
    tv6.load(T(20), Action.COMMIT, [State.REQUESTED], None)
    assert check_no_write_during_restore(tv6) == Verdict("I5.no-write-during-restore", True)


def test_snapshot_files_exist_names_each_missing_file_with_its_slice():
    """I8.snapshot-files-exist: every base and log file of the latest merged slices is listed."""
    from model.filenames import BaseFile, LogFile
    from model.invariants.timeline import check_snapshot_files_exist
    from model.slicing import FileSystemView
    tl = Timeline(8)
    for req, comp in ((10, 11), (12, 13)):
        tl.create(T(req), Action.DELTACOMMIT)
        tl.transition_to_inflight(T(req), Action.DELTACOMMIT)
        tl.complete(T(req), Action.DELTACOMMIT, T(comp))
    b1, b0 = BaseFile("fg-1", "0-1-1", T(10), "parquet", "p"), BaseFile("fg-0", "0-1-1", T(10), "parquet", "p")
    lg = LogFile("fg-0", T(12), 1, "0-1-1", False, "p")
    view = FileSystemView(tl, [b1, b0], [lg])
    ok = check_snapshot_files_exist(view, [b0.path, b1.path, lg.path, "p/other.parquet"])
    assert ok == Verdict("I8.snapshot-files-exist", True,
                         "every file of the latest snapshot named by commit metadata is present")
    v = check_snapshot_files_exist(view, [lg.path])
    assert v == Verdict("I8.snapshot-files-exist", False,
                        f"2 file(s) of the latest snapshot missing: {b0.path} (file group fg-0, slice {T(10)}) is "
                        f"missing; {b1.path} (file group fg-1, slice {T(10)}) is missing", (b0.path, b1.path))
    assert check_snapshot_files_exist(view, [b0.path, b1.path]).involved == (lg.path,)
    log_only = FileSystemView(tl, [], [lg])  # a slice without a base file
    assert check_snapshot_files_exist(log_only, []).involved == (lg.path,)
    assert check_snapshot_files_exist(log_only, [lg.path]).holds
    # the findings are reported in (partition, file id) order whatever order the view lists its slices in

    class Reversed:
        def latest_merged_file_slices(self):
            return view.latest_merged_file_slices()[::-1]
    assert check_snapshot_files_exist(Reversed(), []).involved == (b0.path, lg.path, b1.path)


# ----------------------------------------------------------------------------------- I6-I8 on views
def _files():
    from model.filenames import BaseFile, LogFile
    b10 = BaseFile("fg-0", "0-1-1", T(10), "parquet", "p")
    b30 = BaseFile("fg-0", "0-1-1", T(30), "parquet", "p")
    l10 = LogFile("fg-0", T(10), 1, "0-1-1", False, "p")
    l20 = LogFile("fg-0", T(20), 1, "0-1-1", False, "p")
    return b10, b30, l10, l20


class View:
    """A stand-in file-system view: the groups and latest slices given (what a broken view could build)."""

    def __init__(self, groups, latest=()):
        self.groups, self.latest = groups, latest

    def file_groups(self):
        return self.groups

    def latest_file_slices(self):
        return list(self.latest)


def test_files_in_one_slice_both_rules():
    """I7 (instant-time): a log sits in the slice named by its instant; I6: each committed file in one slice."""
    from model.slicing import FileGroup, FileGroupId, FileSlice
    b10, b30, l10, l20 = _files()
    g = FileGroupId("p", "fg-0")
    good = View([FileGroup(g, (FileSlice(g, T(30), b30), FileSlice(g, T(10), b10, (l10,))))])
    assert check_files_in_one_slice(good, [b10, b30], [l10], rule="instant-time") == Verdict(
        "I7.slice-by-instant-time", True)
    assert check_files_in_one_slice(good, [b10], [l10], rule="completion-time") == Verdict(
        "I6.slice-by-completion-time", True)
    # l10 in slice t30 (wrong for I7, fine for I6), l20 nowhere, b10 twice
    bad = View([FileGroup(g, (FileSlice(g, T(30), b30, (l10,)), FileSlice(g, T(10), b10))),
                FileGroup(FileGroupId("p", "fg-x"), (FileSlice(FileGroupId("p", "fg-x"), T(10), b10),))])
    v = check_files_in_one_slice(bad, [b10, b30], [l10, l20], rule="instant-time")
    assert v == Verdict("I7.slice-by-instant-time", False,
                        f"3 committed file(s) not in exactly one (correct) slice: {b10.path} is in 2 slices; "
                        f"{l10.path} names base instant {T(10)} but sits in slice {T(30)}; {l20.path} is in 0 slices",
                        (b10.path, l10.path, l20.path))
    v6 = check_files_in_one_slice(bad, [b30], [l10], rule="completion-time")
    assert v6.holds and v6.invariant == "I6.slice-by-completion-time"


def test_reader_visibility_names_every_kind_of_invisible_file():
    """I8.reader-visibility: no replaced group, no base of a non-completed instant or pending clustering, and
    (layout 2) no log of a non-completed deltacommit in the latest slices; archived instants are completed."""
    from model.slicing import FileSlice, FileGroupId
    b10, b30, l10, l20 = _files()
    g = FileGroupId("p", "fg-0")
    tl = Timeline(8)
    tl.load(T(10), Action.COMMIT, [State.REQUESTED, State.INFLIGHT, State.COMPLETED], T(11))
    tl.load(T(20), Action.DELTACOMMIT, [State.REQUESTED], None)
    tl.load(T(30), Action.CLUSTERING, [State.REQUESTED], None)
    ok = View([], [FileSlice(g, T(10), b10, (l10,))])
    assert check_reader_visibility(ok, tl) == Verdict("I8.reader-visibility", True)
    old = FileSlice(g, T(5), type(b10)("fg-0", "0-1-1", T(5), "parquet", "p"))
    assert check_reader_visibility(View([], [old]), tl).holds  # before the active timeline: archived
    v = check_reader_visibility(View([], [FileSlice(g, T(30), b30, (l20,))]), tl, replaced={("p", "fg-0"): T(40)},
                                pending_clustering_instants=[T(30)])
    assert v == Verdict("I8.reader-visibility", False,
                        f"4 file(s) a reader must not see: file group p/fg-0 replaced by {T(40)} is visible; "
                        f"{b30.path} of non-completed instant {T(30)} is visible; "
                        f"{b30.path} of pending clustering {T(30)} is visible",
                        ("p/fg-0", b30.path, l20.path))
    tl6 = Timeline(6)  # layout 1: logs are not filtered at planning time
    tl6.load(T(10), Action.COMMIT, [State.REQUESTED, State.INFLIGHT, State.COMPLETED], None)
    tl6.load(T(20), Action.DELTACOMMIT, [State.REQUESTED], None)
    assert check_reader_visibility(View([], [FileSlice(g, T(10), b10, (l20,))]), tl6).holds
    assert not check_reader_visibility(View([], [FileSlice(g, T(10), b10, (l20,))]), tl).holds
    # an empty timeline knows no instant: nothing is archived, a log of any instant is uncommitted
    assert not check_reader_visibility(View([], [FileSlice(g, T(10), None, (l10,))]), Timeline(8)).holds


def test_compaction_plan_blocks_tv6():
    """I9.compaction-plan by blocks: data blocks older than tc in planned logs were completed before tc, unless
    a rollback older than tc (a command block in any planned log of the group) undid them; archived = done."""
    from model.filenames import LogFile
    from model.invariants.timeline import check_compaction_plan_blocks, check_compaction_plans
    from model.logblocks import data_block, rollback_block
    tl = Timeline(6)
    tl.load(T(10), Action.DELTACOMMIT, [State.REQUESTED, State.INFLIGHT, State.COMPLETED], T(11))  # mtime known
    tl.load(T(20), Action.DELTACOMMIT, [State.REQUESTED, State.INFLIGHT], None)
    tl.load(T(25), Action.ROLLBACK, [State.REQUESTED], None)
    tc = T(50)
    l1 = LogFile("fg-0", T(10), 1, "0-1-1", False, "p")
    l2 = LogFile("fg-0", T(10), 2, "0-1-1", False, "p")
    l3 = LogFile("fg-0", T(10), 3, "0-1-1", False, "p")   # in the plan, no blocks known
    blocks = {l1: [data_block(T(60)), data_block(tc), data_block(T(5)), data_block(T(10)), data_block(T(20))],
              l2: [rollback_block(T(25), T(99))]}       # a pending rollback's command block, not a data block
    v = check_compaction_plan_blocks(tl, {tc: [l1, l2, l3]}, blocks)
    assert v == Verdict("I9.compaction-plan", False,
                        f"1 planned log block(s) not completed before the plan: compaction {tc} plans {l1.name}, which "
                        f"holds data@{T(20)} of {T(20)}, not completed (pending, or rolled back after the plan)",
                        (l1.name,))
    # a rollback older than tc undoes T(20); one at tc itself does not
    undo = {l1: blocks[l1], l2: [rollback_block(T(30), T(20))]}
    assert check_compaction_plan_blocks(tl, {tc: [l1, l2]}, undo) == Verdict(
        "I9.compaction-plan", True, "1 plan(s), by blocks")
    at_tc = {l1: blocks[l1], l2: [rollback_block(tc, T(20))]}
    assert not check_compaction_plan_blocks(tl, {tc: [l1, l2]}, at_tc).holds
    assert check_compaction_plan_blocks(Timeline(6), {}, {}) == Verdict("I9.compaction-plan", True,
                                                                         "0 plan(s), by blocks")  # empty timeline
    # the first instant of the active timeline is not archived
    first_pending = Timeline(6)
    first_pending.load(T(20), Action.DELTACOMMIT, [State.REQUESTED], None)
    assert not check_compaction_plan_blocks(first_pending, {tc: [l1]}, {l1: [data_block(T(20))]}).holds
    assert check_compaction_plan_blocks(first_pending, {tc: [l1]}, {l1: [data_block(T(19))]}).holds
    # completed at or after tc
    late = Timeline(8)
    late.load(T(10), Action.DELTACOMMIT, [State.REQUESTED, State.INFLIGHT, State.COMPLETED], T(50))
    v = check_compaction_plan_blocks(late, {tc: [l1]}, {l1: [data_block(T(10))]})
    assert v.detail.endswith(f"which holds data@{T(10)} of {T(10)} completed at {T(50)} >= {tc}")
    assert check_compaction_plan_blocks(late, {T(51): [l1]}, {l1: [data_block(T(10))]}).holds
    # by log names (tv8): the deltacommit of each planned log completed before tc
    v = check_compaction_plans(late, {tc: [l1]})
    assert v == Verdict("I9.compaction-plan", False, f"1 planned log file(s) not completed before the plan: compaction "
                                                     f"{tc} plans {l1.name}, whose deltacommit {T(10)} completed at "
                                                     f"{T(50)} >= {tc}", (l1.name,))
    assert check_compaction_plans(late, {T(51): [l1]}) == Verdict("I9.compaction-plan", True, "1 plan(s)")
    l_old = LogFile("fg-0", T(5), 1, "0-1-1", False, "p")
    l_pend = LogFile("fg-0", T(20), 1, "0-1-1", False, "p")
    assert check_compaction_plans(late, {tc: [l_old]}).holds  # archived
    assert check_compaction_plans(late, {tc: [l_old, l1]}).involved == (l1.name,)  # and the next log is judged
    assert not check_compaction_plans(first_pending, {tc: [l_pend]}).holds  # the first active instant: not archived
    assert check_compaction_plans(Timeline(8), {tc: [l_old]}).detail.startswith("1 planned log file(s)")
    v = check_compaction_plans(tl, {tc: [l_pend]})
    assert v.detail.endswith(f"compaction {tc} plans {l_pend.name} of deltacommit {T(20)}, which is not completed")


def test_compaction_holds_follows_merged_base_files_transitively():
    """A compaction's base holds what its plan merged, and what the merged base held; a base with no known plan
    (a commit) holds everything older than it; nothing holds a file of its own or a newer slice."""
    from model.filenames import BaseFile, LogFile
    from model.invariants.timeline import compaction_holds
    from model.slicing import FileGroupId
    g = FileGroupId("p", "fg-0")
    b = {t: BaseFile("fg-0", "0-1-1", T(t), "parquet", "p") for t in (10, 20, 30)}
    lg = {t: LogFile("fg-0", T(t), 1, "0-1-1", False, "p") for t in (12, 15, 25)}
    other = LogFile("fg-1", T(12), 1, "0-1-1", False, "p")
    inputs = {T(30): [b[20], lg[25], other], T(20): [b[10], lg[15]]}
    assert compaction_holds(g, b[30], lg[25], T(20), inputs)                      # merged directly
    assert compaction_holds(g, b[30], lg[15], T(10), inputs)                      # via base 20's plan
    assert compaction_holds(tuple(g), b[30], b[10], T(10), inputs)                # base 10 merged by 20
    assert not compaction_holds(g, b[30], lg[12], T(10), inputs)                  # in no plan
    assert not compaction_holds(g, b[30], other, T(10), inputs)                   # another group's file
    assert not compaction_holds(g, b[30], lg[25], T(30), inputs)                  # not an older slice
    assert compaction_holds(g, b[30], lg[12], T(10), None)                        # plans unknown: holds all older
    assert compaction_holds(g, b[10], lg[12], T(5), inputs)                       # base 10: a commit, no plan
    self_ref = {T(30): [b[30], lg[25]]}                                           # a plan naming its own base
    assert not compaction_holds(g, b[30], lg[12], T(10), self_ref)


def test_log_blocks_read_names_rolled_back_and_uncommitted_blocks():
    """I8.log-blocks: what the reader merges from each latest merged slice holds no block a rollback command block
    of the group targets and no block of a non-completed instant (a broken reader is passed in to show it)."""
    from model.filenames import BaseFile, LogFile
    from model.invariants.timeline import check_log_blocks_read
    from model.logblocks import data_block, rollback_block
    from model.slicing import FileSystemView
    tl = Timeline(8)
    for req, comp in ((10, 11), (12, 13), (14, None), (16, 17)):
        tl.create(T(req), Action.DELTACOMMIT)
        tl.transition_to_inflight(T(req), Action.DELTACOMMIT)
        if comp:
            tl.complete(T(req), Action.DELTACOMMIT, T(comp))
    b = BaseFile("fg-0", "0-1-1", T(10), "parquet", "p")
    l12, l14 = LogFile("fg-0", T(12), 1, "0-1-1", False, "p"), LogFile("fg-0", T(14), 1, "0-1-1", False, "p")
    l16 = LogFile("fg-0", T(16), 1, "0-1-1", False, "p")
    view = FileSystemView(tl, [b], [l12, l14, l16])
    blocks = {l12: [data_block(T(12))], l16: [rollback_block(T(16), T(12))]}   # l14: no blocks known
    assert check_log_blocks_read(view, tl, blocks) == Verdict("I8.log-blocks", True)

    def everything(bs, timeline):  # a reader that filters nothing
        return list(bs)
    v = check_log_blocks_read(view, tl, {**blocks, l14: [data_block(T(14))]}, reader=everything)
    assert v == Verdict("I8.log-blocks", False,
                        f"1 log block(s) a reader must not merge: p/fg-0: a reader merges data@{T(12)}, which rollback "
                        f"command blocks roll back", ("p/fg-0",))
    # (l14 is not in the tv8 merged slice: logs of non-completed deltacommits are dropped before reading)
    stray = {l12: [data_block(T(12)), data_block(T(14))]}   # a block of the pending instant inside a committed log
    v = check_log_blocks_read(view, tl, stray, reader=everything)
    assert v.detail == (f"1 log block(s) a reader must not merge: p/fg-0: a reader merges data@{T(14)} of "
                        f"non-completed instant {T(14)}")
