"""Focused tests that `make mutate` showed unchecked by the fast tests: a whole archival run (``archive`` /
``run_to_end``) follows the design it is given in its decision and in every step (not Hudi's), the timeline's
``revert_to_inflight`` makes the instant pending again, and the indexing machine's pending build is the indexing
instant (not its ``indexUptoInstant``)."""

from __future__ import annotations

from model import archival as A
from model import lsm
from model.instant import format_millis
from model.invariants.temporal import pending_index_builds
from model.mdt import machine as MM
from model.timeline import Action, State, Timeline

SMALL = A.ArchivalConfig(max_commits=2, min_commits=1, batch=1, compaction_batch=2, cleaner_commits_retained=0,
                         manifests_retained=1)


def t(n: int) -> str:
    return format_millis(1_767_225_600_000 + n)


def run_commits(n: int, design: A.Design) -> A.HistoryState:
    s = A.HistoryState()
    for k in range(n):
        files = {A.ActiveFile(t(10 * k), Action.COMMIT, st) for st in (State.REQUESTED, State.INFLIGHT)}
        files.add(A.ActiveFile(t(10 * k), Action.COMMIT, State.COMPLETED, t(10 * k + 5)))
        s = A.HistoryState(s.active | files, s.lsm)
        _, s = A.archive(s, SMALL, design=design)
    return s


def test_archive_compacts_the_lsm_timeline_as_the_design_says():
    hudi = run_commits(12, A.HUDI)
    every_other = run_commits(12, A.VARIANTS["non-consecutive-compaction"].design)
    assert sorted(lsm.latest_manifest(hudi.lsm)) == [f"{t(0)}_{t(70)}_2.parquet", f"{t(80)}_{t(90)}_0.parquet"]
    assert sorted(lsm.latest_manifest(every_other.lsm)) == [
        f"{t(0)}_{t(50)}_1.parquet", f"{t(20)}_{t(90)}_1.parquet", f"{t(60)}_{t(70)}_0.parquet"]


def test_archive_decides_as_the_design_says():
    assert len(A.active_timeline(run_commits(12, A.HUDI))) == 2
    assert len(A.active_timeline(run_commits(12, A.VARIANTS["archive-below-min"].design))) == 0


def test_run_to_end_steps_with_the_design():
    design = A.VARIANTS["non-consecutive-compaction"].design
    s = run_commits(4, design)  # the fifth commit's run compacts (every other file, not consecutive ones)
    files = {A.ActiveFile(t(40), Action.COMMIT, st) for st in (State.REQUESTED, State.INFLIGHT)}
    files.add(A.ActiveFile(t(40), Action.COMMIT, State.COMPLETED, t(45)))
    s = A.HistoryState(s.active | files, s.lsm)
    _, started = A.start(s, SMALL, design=design)
    by_hand = started
    while by_hand.job:
        by_hand = A.step(by_hand, SMALL, design)
    assert A.run_to_end(started, SMALL, design) == by_hand
    assert A.archive(s, SMALL, design=design)[1] == by_hand
    assert A.run_to_end(started, SMALL) != by_hand  # Hudi's steps on the same job compact differently


def test_revert_to_inflight_makes_the_instant_pending_again():
    tl = Timeline(8)
    tl.create(t(0), Action.COMMIT)
    tl.transition_to_inflight(t(0), Action.COMMIT)
    tl.complete(t(0), Action.COMMIT, t(5))
    tl.create(t(10), Action.COMMIT)
    assert tl.pending_times(Action.COMMIT) == [t(10)]
    v = tl.revert_to_inflight(t(0), Action.COMMIT)
    assert v.state is State.INFLIGHT and v.completion_time is None
    assert [i.requested_time for i in tl.pending()] == [t(0), t(10)]
    assert tl.pending_times(Action.COMMIT) == [t(0), t(10)]
    copy = tl.copy()
    assert [i.requested_time for i in copy.pending()] == [t(0), t(10)]


def test_pending_index_build_is_the_indexing_instant():
    cfg = MM.IndexingConfig()
    s = MM.initial_state(cfg)
    assert pending_index_builds(s) == frozenset()
    s = MM.step(cfg, s, ("i", "schedule"))
    assert s.idx[0] == MM.SCHEDULED and s.idx[1] != s.idx[2]
    assert pending_index_builds(s) == frozenset({s.idx[1]})
    assert pending_index_builds(s) == frozenset({i.requested_time for i in s.dt.instants() if i.action.value == "indexing"})
