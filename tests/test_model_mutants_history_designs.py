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


# ------------------------------------------------------------------------------------------- LSM compaction shape
from model.invariants.history import _compaction_shape  # noqa: E402


def n(lo: int, hi: int, level: int) -> str:
    return f"{t(lo)}_{t(hi)}_{level}.parquet"


def test_compaction_shape_accepts_consecutive_files_merged_one_level_up():
    a, b, c = n(0, 10, 0), n(20, 30, 0), n(40, 50, 0)
    assert _compaction_shape([a, b, c], [a, b], [n(0, 30, 1)]) == (True, "")
    assert _compaction_shape([a, b, c], [b, c], [n(20, 50, 1)]) == (True, "")  # not starting at the first file


def test_compaction_shape_problems():
    a, b, c, x = n(0, 10, 0), n(20, 30, 0), n(40, 50, 0), n(0, 50, 1)
    assert _compaction_shape([a, b], [a], [n(0, 10, 1)]) == (False, f"compaction of fewer than 2 files {[a]}")
    assert _compaction_shape([a, x], [a, x], [n(0, 50, 2)]) == (False, "compaction across levels [0, 1]")
    assert _compaction_shape([a, b], [a, b], [n(0, 30, 1), n(0, 30, 1)]) == (
        False, f"compaction must add exactly one file, added {[n(0, 30, 1), n(0, 30, 1)]}")
    for bad in (n(0, 30, 2), n(0, 20, 1), n(10, 30, 1)):  # wrong level, wrong max only, wrong min only
        assert _compaction_shape([a, b], [a, b], [bad]) == (
            False, f"{bad} is not level 1 with the union bounds of {[a, b]}")
    assert _compaction_shape([a, b, c], [a, c], [n(0, 50, 1)]) == (
        False, "compacted files are not consecutive in level 0 (positions [0, 2])")


def test_archival_obligation_names():
    from model.invariants.temporal import over_keep_max, running_archival

    files = set()
    for k in range(3):
        files |= {A.ActiveFile(t(10 * k), Action.COMMIT, st) for st in (State.REQUESTED, State.INFLIGHT)}
        files.add(A.ActiveFile(t(10 * k), Action.COMMIT, State.COMPLETED, t(10 * k + 5)))
    over = A.HistoryState(frozenset(files))
    assert over_keep_max(over, SMALL) == frozenset({"keep.max"})
    assert over_keep_max(over, A.ArchivalConfig(max_commits=3, min_commits=1, cleaner_commits_retained=0)) == frozenset()
    _, started = A.start(over, SMALL)
    assert running_archival(started) == frozenset({"job"}) and running_archival(over) == frozenset()


def test_archival_config_messages():
    import pytest

    cases = [
        (dict(batch=0), "must be an integer >= 1, got 0"),
        (dict(compaction_batch=1), "must be an integer >= 2 (a compaction merges >= 2 files), got 1"),
        (dict(max_commits=20, min_commits=20), "must be greater than hoodie.keep.min.commits=20, got 20"),
        (dict(max_commits=30, min_commits=10, cleaner_commits_retained=10),
         "must be greater than hoodie.cleaner.commits.retained=10, got 10"),
    ]
    for kw, msg in cases:
        with pytest.raises(A.ArchivalConfigError) as e:
            A.ArchivalConfig(**kw).validate()
        assert msg in str(e.value), (kw, str(e.value))


# ------------------------------------------------------------------------------------------- history verdicts
def test_completion_found_names_the_instants_it_could_not_find():
    from model.errors import ModelError
    from model.invariants import Verdict
    from model.invariants.history import completion_found

    class View:
        def __init__(self, times, broken=()):
            self.times, self.broken = times, broken

        def completion_time(self, t):
            if t in self.broken:
                raise ModelError(f"cannot read {t}")
            return self.times.get(t)

    expected = {f"T{i}": f"C{i}" for i in range(7)}
    assert completion_found(View(expected), expected) == Verdict("H.completion-found", True, "", ())
    wrong = dict(expected, T1="X", T2=None, T4="Y", T5="Z", T6="W")
    assert completion_found(View(wrong), expected) == Verdict(
        "H.completion-found", False, "T1: X != C1; T2: None != C2; T4: Y != C4", ("T1", "T2", "T4", "T5", "T6"))
    v = completion_found(View(expected, broken=("T3",)), expected)
    assert v.invariant == "H.completion-found" and v.holds is False and v.involved == ("T3",)
    assert v.detail.startswith("lookup of T3 failed: ") and "cannot read T3" in v.detail


def test_active_bounded_at_and_above_keep_max_plus_batch():
    from model.invariants import Verdict
    from model.invariants.history import active_bounded

    cfg = A.ArchivalConfig(max_commits=3, min_commits=2, batch=2, cleaner_commits_retained=1)

    def tl_of(n, pending_at=None):
        tl = Timeline(8)
        for k in range(n):
            tl.load(t(10 * k), Action.COMMIT, {State.REQUESTED, State.INFLIGHT, State.COMPLETED}, t(10 * k + 5))
        if pending_at is not None:
            tl.load(t(10 * pending_at + 1), Action.COMMIT, {State.REQUESTED, State.INFLIGHT}, None)
        return tl

    assert active_bounded(tl_of(5), cfg) == Verdict("H.active-bounded", True)
    v = active_bounded(tl_of(6), cfg)
    assert v.invariant == "H.active-bounded" and not v.holds
    assert v.detail == f"6 completed commits > keep.max + batch 5 and {len(A.decide(tl_of(6), cfg).commits_to_archive)} archivable"
    # a pending write before every commit blocks archival: the excess is what the retention keeps
    blocked = tl_of(6, pending_at=-1)
    assert not A.decide(blocked, cfg).commits_to_archive
    assert active_bounded(blocked, cfg) == Verdict("H.active-bounded", True, "")
