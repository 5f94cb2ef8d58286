"""The archival decision's retention candidates and its exact result (model/archival.py: ``completed_commits``,
``earliest_instant_to_retain``, ``decide``), which `make mutate` showed unchecked: the tests looked at the bound,
not at the candidate list (reason, instant) nor the MOR case with no completed compaction.

``TimelineArchiverV2#getCommitInstantsToArchive`` (hudi-semantics.md section 5, I16): the earliest instant to
retain is the smallest of (1) the latest completed commit before the earliest pending write (the pending instant
itself when none is before it), (2) MOR with a NUM_COMMITS compaction trigger: the latest completed compaction, or
the first deltacommit when none completed (``CompactionUtils#getEarliestInstantToRetainForCompaction``), (3) the
earliest pending clustering, (4) metadata table: the first commit completed after its latest compaction (none yet:
archive nothing), (6) the clean plan's earliest commit to retain. Every case checks the whole
``(bound, candidates, forbidden)`` tuple or the whole ``ArchivalDecision``.
"""

from __future__ import annotations

from model import archival as A
from model.instant import Action, State, format_millis
from model.timeline import Timeline

T0 = 1_767_225_600_000
R, I, C = State.REQUESTED, State.INFLIGHT, State.COMPLETED
DONE, PENDING = {R, I, C}, {R, I}


def t(n: int) -> str:
    return format_millis(T0 + n)


def timeline(*instants) -> Timeline:
    """``(n, action, states)`` or ``(n, action, states, completed_at)``; completed at ``n + 5`` by default."""
    tl = Timeline(8)
    for x in instants:
        n, action, states = x[:3]
        done_at = x[3] if len(x) > 3 else n + 5
        tl.load(t(n), action, states, t(done_at) if C in states else None)
    return tl


def retain(tl: Timeline, design: A.Design = A.HUDI, **ctx):
    return A.earliest_instant_to_retain(tl, A.RetentionContext(**ctx), design)


CP, DC, RC = Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT
MOR = ((0, CP, DONE), (10, DC, DONE), (20, DC, DONE))  # a MOR table before its first compaction


# ------------------------------------------------------------------------------------------- completed_commits
def test_completed_commits_are_completed_commit_deltacommit_replacecommit_in_order():
    tl = timeline((0, CP, DONE), (10, DC, DONE), (20, Action.COMPACTION, DONE), (30, Action.CLUSTERING, DONE),
                  (40, RC, DONE), (50, Action.LOGCOMPACTION, DONE), (60, Action.CLEAN, DONE),
                  (70, Action.ROLLBACK, DONE), (80, Action.SAVEPOINT, {I, C}), (90, DC, PENDING),
                  (100, Action.COMPACTION, {R}), (110, CP, {R}), (120, Action.INDEXING, DONE))
    got = A.completed_commits(tl)
    assert [(i.requested_time, i.shown_action) for i in got] == [
        (t(0), CP), (t(10), DC), (t(20), CP), (t(30), RC), (t(40), RC), (t(50), DC)]
    assert all(i.state is C for i in got)
    assert A.completed_commits(Timeline(8)) == []


# ----------------------------------------------------------------------------------- (1) earliest pending write
def test_no_candidate_on_a_timeline_with_nothing_pending():
    assert retain(timeline(*MOR)) == (None, (), False)
    assert retain(Timeline(8)) == (None, (), False)
    # pending non-write instants (clean, rollback, savepoint inflight, indexing) bound nothing
    others = timeline((0, CP, DONE), (10, Action.CLEAN, {R}), (20, Action.ROLLBACK, PENDING),
                      (30, Action.INDEXING, {R}), (40, CP, DONE))
    assert retain(others) == (None, (), False)


def test_earliest_pending_write_is_the_latest_commit_before_it():
    tl = timeline((0, CP, DONE), (10, CP, DONE), (20, CP, DONE), (15, DC, PENDING), (30, CP, {R}))
    assert retain(tl) == (t(10), (("earliest-pending-write", t(10)),), False)
    # a pending compaction is a pending write too; only completed commits count as "before" it
    tl = timeline((0, CP, DONE), (10, CP, {R}), (20, Action.COMPACTION, {R}), (30, CP, DONE))
    assert retain(tl) == (t(0), (("earliest-pending-write", t(0)),), False)


def test_earliest_pending_write_bound_is_strictly_before_it():
    """A completed deltacommit requested at the same time as the pending commit (two actions may share a requested
    time in the model) is not "before" it: the latest commit strictly before is the bound."""
    tl = timeline((0, CP, DONE), (10, DC, DONE), (10, CP, {R}))
    assert retain(tl) == (t(0), (("earliest-pending-write", t(0)),), False)


def test_earliest_pending_write_with_no_commit_before_it_is_the_pending_instant():
    tl = timeline((0, DC, {R}), (10, CP, DONE), (20, CP, DONE))
    assert retain(tl) == (t(0), (("earliest-pending-write", t(0)),), False)
    # a completed clean before it is not a commit
    tl = timeline((0, Action.CLEAN, DONE), (5, DC, PENDING), (10, CP, DONE))
    assert retain(tl) == (t(5), (("earliest-pending-write", t(5)),), False)


def test_ignore_pending_write_design_drops_only_that_candidate():
    design = A.VARIANTS["archive-past-pending"].design
    assert design.ignore_pending_write
    tl = timeline((0, CP, DONE), (10, CP, DONE), (15, DC, PENDING))
    assert retain(tl, design) == (None, (), False)
    tl = timeline((0, CP, DONE), (10, CP, DONE), (15, Action.CLUSTERING, {R}))
    assert retain(tl) == (t(10), (("earliest-pending-write", t(10)), ("clustering-retention", t(15))), False)
    assert retain(tl, design) == (t(15), (("clustering-retention", t(15)),), False)


# ----------------------------------------------------------------------------------- (2) compaction retention
def test_compaction_retention_is_the_latest_completed_compaction():
    tl = timeline(*MOR, (30, Action.COMPACTION, DONE), (40, DC, DONE), (50, Action.COMPACTION, DONE, 65),
                  (60, DC, DONE), (70, Action.COMPACTION, {R}))
    assert retain(tl, compaction_num_commits=True) == (
        t(50), (("earliest-pending-write", t(60)), ("compaction-retention", t(50))), False)
    # only with a NUM_COMMITS compaction trigger
    assert retain(tl) == (t(60), (("earliest-pending-write", t(60)),), False)


def test_compaction_retention_without_a_completed_compaction_is_the_first_deltacommit():
    assert retain(timeline(*MOR), compaction_num_commits=True) == (t(10), (("compaction-retention", t(10)),), False)
    # a pending compaction is not completed; a pending deltacommit is not a completed one
    tl = timeline((0, CP, DONE), (10, DC, PENDING), (20, DC, DONE), (30, Action.COMPACTION, {R}))
    assert retain(tl, compaction_num_commits=True) == (
        t(0), (("earliest-pending-write", t(0)), ("compaction-retention", t(20))), False)
    # a completed log compaction shows as a deltacommit: it can be the first one, and is no compaction
    tl = timeline((0, CP, DONE), (10, Action.LOGCOMPACTION, DONE), (20, DC, DONE))
    assert retain(tl, compaction_num_commits=True) == (t(10), (("compaction-retention", t(10)),), False)
    # copy-on-write (no deltacommit, no compaction): no candidate
    cow = timeline((0, CP, DONE), (10, CP, DONE), (20, RC, DONE))
    assert retain(cow, compaction_num_commits=True) == (None, (), False)


# ----------------------------------------------------------------------------------- (3) clustering retention
def test_clustering_retention_is_the_earliest_pending_clustering_or_replacecommit():
    tl = timeline((0, CP, DONE), (10, Action.CLUSTERING, DONE), (20, CP, DONE), (30, RC, {R}),
                  (40, Action.CLUSTERING, PENDING), (50, CP, DONE))
    assert retain(tl) == (t(20), (("earliest-pending-write", t(20)), ("clustering-retention", t(30))), False)
    tl = timeline((0, CP, DONE), (10, Action.CLUSTERING, {R}), (20, CP, DONE))
    assert retain(tl) == (t(0), (("earliest-pending-write", t(0)), ("clustering-retention", t(10))), False)


# ----------------------------------------------------------------------------------- (4) metadata table
def test_metadata_table_without_compaction_forbids_archiving():
    tl = timeline((0, CP, DONE), (10, CP, DONE), (20, Action.CLUSTERING, {R}))
    pending = (("earliest-pending-write", t(10)), ("clustering-retention", t(20)))
    assert retain(tl, mdt_enabled=True) == (None, pending, True)
    # the candidates after (4) are not reached
    assert retain(tl, mdt_enabled=True, clean_earliest_retain=t(0)) == (None, pending, True)
    assert retain(timeline((0, CP, DONE)), mdt_enabled=True) == (None, (), True)
    # the latest compaction time only matters with the metadata table enabled
    assert retain(tl, mdt_latest_compaction=t(1)) == (t(10), pending, False)


def test_metadata_table_retention_is_the_first_commit_completed_after_its_compaction():
    # requested order t0 < t10 < t20, completion order t20 (at 30) < t10 (at 50); the MDT compacted at t(25)
    tl = timeline((0, CP, DONE, 5), (10, CP, DONE, 50), (20, DC, DONE, 30))
    assert retain(tl, mdt_enabled=True, mdt_latest_compaction=t(25)) == (
        t(20), (("metadata-table-compaction", t(20)),), False)
    # completed exactly at the compaction time is not after it
    assert retain(tl, mdt_enabled=True, mdt_latest_compaction=t(30)) == (
        t(10), (("metadata-table-compaction", t(10)),), False)
    # nothing completed after it: no candidate, and archiving is not forbidden
    assert retain(tl, mdt_enabled=True, mdt_latest_compaction=t(50)) == (None, (), False)
    # two commits completed at the same time: the smaller requested time
    tie = timeline((0, CP, DONE, 40), (10, DC, DONE, 40), (20, CP, DONE, 45))
    assert retain(tie, mdt_enabled=True, mdt_latest_compaction=t(30)) == (
        t(0), (("metadata-table-compaction", t(0)),), False)


def test_metadata_table_retention_skips_commits_with_no_completion_time():
    tl = Timeline(6)  # layout 1: completion times may be unknown
    tl.load(t(0), CP, DONE, None)
    tl.load(t(10), CP, DONE, t(60))
    assert retain(tl, mdt_enabled=True, mdt_latest_compaction=t(1)) == (
        t(10), (("metadata-table-compaction", t(10)),), False)


# ----------------------------------------------------------------------------------- (6) clean, all together
def test_clean_retention_and_the_bound_is_the_smallest_candidate():
    assert retain(timeline(*MOR), clean_earliest_retain=t(20)) == (t(20), (("clean-retention", t(20)),), False)
    # the metadata table compacted at t(40): t(60) (completed at t(65)) is the first commit completed after it,
    # before t(40) (completed at t(90))
    tl = timeline(*MOR, (30, Action.COMPACTION, DONE), (40, DC, DONE, 90), (50, Action.CLUSTERING, {R}),
                  (60, DC, DONE), (70, DC, PENDING))
    cands = (("earliest-pending-write", t(40)), ("compaction-retention", t(30)),
             ("clustering-retention", t(50)), ("metadata-table-compaction", t(60)), ("clean-retention", t(35)))
    assert retain(tl, compaction_num_commits=True, mdt_enabled=True, mdt_latest_compaction=t(40),
                  clean_earliest_retain=t(35)) == (t(30), cands, False)
    assert retain(tl, compaction_num_commits=True, mdt_enabled=True, mdt_latest_compaction=t(40),
                  clean_earliest_retain=t(5)) == (t(5), cands[:4] + (("clean-retention", t(5)),), False)


# ------------------------------------------------------------------------------------------------- decide
CFG = A.ArchivalConfig(max_commits=4, min_commits=2, batch=1, cleaner_commits_retained=1)


def commits(n: int, *extra) -> Timeline:
    return timeline(*((10 * k, CP, DONE) for k in range(n)), *extra)


def times(xs) -> list[str]:
    return [i.requested_time for i in xs]


def test_decide_below_the_trigger_is_an_empty_decision():
    assert A.decide(commits(4), CFG) == A.ArchivalDecision(4, False, None, (), None, (), (),
                                                           "4 completed commits <= keep.max 4")
    early = A.VARIANTS["early-trigger"].design
    assert A.decide(commits(2), CFG, design=early) == A.ArchivalDecision(2, False, None, (), None, (), (),
                                                                         "2 completed commits <= keep.max 4")
    d = A.decide(commits(3), CFG, design=early)
    assert d.triggered and times(d.commits_to_archive) == [t(0)]


def test_decide_when_the_metadata_table_forbids_archiving():
    tl = commits(6, (55, DC, {R}))
    assert A.decide(tl, CFG, A.RetentionContext(mdt_enabled=True)) == A.ArchivalDecision(
        6, True, None, (("earliest-pending-write", t(50)),), None, (), (), "no compaction yet on the metadata table")


def test_decide_archives_down_to_keep_min_before_the_bound_with_cleans_and_rollbacks():
    tl = commits(7, (5, Action.CLEAN, DONE), (15, Action.ROLLBACK, DONE), (25, Action.CLEAN, DONE),
                 (35, Action.CLEAN, DONE), (45, Action.CLEAN, PENDING))
    d = A.decide(tl, CFG)
    assert (d.commits, d.triggered, d.earliest_to_retain, d.retention, d.first_savepoint) == (7, True, None, (), None)
    assert times(d.commits_to_archive) == [t(0), t(10), t(20), t(30), t(40)]
    assert [(i.requested_time, i.action) for i in d.to_archive] == [
        (t(0), CP), (t(5), Action.CLEAN), (t(10), CP), (t(15), Action.ROLLBACK), (t(20), CP),
        (t(25), Action.CLEAN), (t(30), CP), (t(35), Action.CLEAN), (t(40), CP)]
    assert d.why == ("7 completed commits > keep.max 4: archive 5 commits (down to keep.min 2) before no bound, "
                     "and 4 clean/rollback")
    bounded = A.decide(tl, CFG, A.RetentionContext(clean_earliest_retain=t(20)))
    assert bounded.earliest_to_retain == t(20) and bounded.retention == (("clean-retention", t(20)),)
    assert times(bounded.to_archive) == [t(0), t(5), t(10)]
    assert bounded.why == (f"7 completed commits > keep.max 4: archive 2 commits (down to keep.min 2) before {t(20)}, "
                           "and 1 clean/rollback")
    assert A.decide(tl, CFG, design=A.VARIANTS["lagging-archiver"].design).to_archive == bounded.to_archive[:1]
    # a clean requested at the last archived commit's time is not before it: it stays
    same = A.decide(commits(7, (40, Action.CLEAN, DONE), (35, Action.ROLLBACK, DONE)), CFG)
    assert [(i.requested_time, i.action) for i in same.to_archive] == [
        (t(0), CP), (t(10), CP), (t(20), CP), (t(30), CP), (t(35), Action.ROLLBACK), (t(40), CP)]
    assert len(A.decide(tl, CFG, design=A.VARIANTS["archive-below-min"].design).commits_to_archive) == 7


def test_decide_stops_at_the_first_savepoint_unless_beyond():
    tl = commits(8, (20, Action.SAVEPOINT, {I, C}), (40, Action.SAVEPOINT, {I, C}))
    d = A.decide(tl, CFG)
    assert d.first_savepoint == t(20) and times(d.commits_to_archive) == [t(0), t(10)]
    assert d.why == ("8 completed commits > keep.max 4: archive 2 commits (down to keep.min 2) before no bound, "
                     f"stopping at savepoint {t(20)}")
    beyond = A.ArchivalConfig(max_commits=4, min_commits=2, batch=1, cleaner_commits_retained=1, beyond_savepoint=True)
    d = A.decide(tl, beyond)
    # savepointed commits are skipped, not a stop; the savepoint is still reported but not in the text
    assert d.first_savepoint == t(20) and times(d.commits_to_archive) == [t(0), t(10), t(30), t(50), t(60), t(70)]
    assert d.why == "8 completed commits > keep.max 4: archive 6 commits (down to keep.min 2) before no bound"
    ignore = A.decide(tl, CFG, design=A.VARIANTS["archive-past-savepoint"].design)
    assert times(ignore.commits_to_archive) == [t(0), t(10), t(20), t(30), t(40), t(50)]


# ------------------------------------------------------------------------------------------ plan and refusals
def history_of(n: int) -> A.HistoryState:
    files = set()
    for k in range(n):
        files |= {A.ActiveFile(t(10 * k), CP, st, t(10 * k + 5) if st is C else None) for st in (R, I, C)}
    return A.HistoryState(frozenset(files))


def test_plan_writes_then_deletes_pending_files_first_then_completed_ascending():
    """``#archiveIfRequired``: the L0 write and its commit, then ``#deleteArchivedActions`` (pending states first,
    completed ones last and ascending, HUDI-7207), then ``compactAndClean``; the broken completed-first design
    deletes the completed files first."""
    from model import lsm
    s = history_of(5)
    d, steps = A.plan(s, CFG)
    assert times(d.to_archive) == [t(0), t(10), t(20)]
    recs = [lsm.LSMRecord(t(n), t(n + 5), "commit") for n in (0, 10, 20)]
    pending = [A.DeleteActiveFile(A.ActiveFile(t(n), CP, st)) for n in (0, 10, 20) for st in (R, I)]
    done = [A.DeleteActiveFile(A.ActiveFile(t(n), CP, C, t(n + 5))) for n in (0, 10, 20)]
    assert steps == lsm.write_steps(recs) + tuple(pending + done) + (A.CompactLevel(0),)
    design = A.VARIANTS["completed-first"].design
    _, broken = A.plan(s, CFG, design=design)
    assert broken == lsm.write_steps(recs) + tuple(done + pending) + (A.CompactLevel(0),)
    assert A.plan(history_of(4), CFG) == (A.decide(A.active_timeline(history_of(4)), CFG), ())


def test_archival_refusals_say_why():
    import pytest
    s = history_of(5)
    _, running = A.start(s, CFG)
    with pytest.raises(A.ArchivalStepRefused) as e:
        A.start(running, CFG)
    assert (e.value.kind, e.value.why) == ("start", "an archival job is running")
    with pytest.raises(A.ArchivalStepRefused) as e:
        A.step(s, CFG)
    assert (e.value.kind, e.value.why) == ("step", "no archival job is running")
    gone = A.ActiveFile(t(99), CP, R)
    assert A.guard(s, A.DeleteActiveFile(gone)) == f"{gone} is not on the active timeline"
    with pytest.raises(A.ArchivalStepRefused) as e:
        A.apply(s, A.DeleteActiveFile(gone), CFG)
    assert (e.value.kind, e.value.why) == ("delete-active-file", f"{gone} is not on the active timeline")
