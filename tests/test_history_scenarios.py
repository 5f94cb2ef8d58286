"""Scenario tests of the history spec: archival decisions, the LSM timeline's steps and codec, lookups and reads."""

from __future__ import annotations

import pytest

from model import archival as A, lsm
from model.completion_time import CompletionTimeQueryView
from model.errors import CodecError
from model.filenames import BaseFile, LogFile
from model.instant import Action, State, format_millis
from model.invariants import history as H, violations
from model.slicing import FileSystemView
from model.timeline import Timeline

T0 = 1_760_000_000_000


def t(n: int) -> str:
    return format_millis(T0 + n)


def timeline(n_commits: int, *, action=Action.COMMIT, pending_at: int | None = None, savepoint_at: int | None = None,
             cleans: tuple[int, ...] = ()) -> Timeline:
    """Commits requested at t(10k), completed at t(10k+5); optional pending write, savepoint and cleans."""
    tl = Timeline(8)
    for k in range(n_commits):
        rt = t(10 * k)
        tl.load(rt, action, {State.REQUESTED, State.INFLIGHT, State.COMPLETED}, t(10 * k + 5))
    if pending_at is not None:
        tl.load(t(10 * pending_at + 1), Action.DELTACOMMIT, {State.REQUESTED, State.INFLIGHT}, None)
    if savepoint_at is not None:
        tl.load(t(10 * savepoint_at), Action.SAVEPOINT, {State.INFLIGHT, State.COMPLETED}, t(10 * savepoint_at + 7))
    for c in cleans:
        tl.load(t(10 * c + 2), Action.CLEAN, {State.REQUESTED, State.INFLIGHT, State.COMPLETED}, t(10 * c + 3))
    return tl


def state_of(tl: Timeline) -> A.HistoryState:
    files = set()
    for i in tl.instants():
        for st in tl.states_present(i.requested_time, i.action):
            files.add(A.ActiveFile(i.requested_time, i.action, st, i.completion_time if st is State.COMPLETED else None))
    return A.HistoryState(frozenset(files))


# ------------------------------------------------------------------------------------------- config
def test_config_defaults_and_flink_preset():
    assert (A.ArchivalConfig().max_commits, A.ArchivalConfig().min_commits, A.ArchivalConfig().batch) == (30, 20, 10)
    assert (A.FLINK.max_commits, A.FLINK.min_commits) == (50, 40)
    A.FLINK.validate()


@pytest.mark.parametrize("kwargs,key", [
    (dict(min_commits=30, max_commits=30), "hoodie.keep.max.commits"),
    (dict(min_commits=40, max_commits=30), "hoodie.keep.max.commits"),
    (dict(batch=0), "hoodie.commits.archival.batch"),
    (dict(compaction_batch=1), "hoodie.timeline.compaction.batch.size"),
    (dict(cleaner_commits_retained=20), "hoodie.keep.min.commits"),
    (dict(min_commits=0), "hoodie.keep.min.commits"),
])
def test_impossible_config_refused_naming_the_key(kwargs, key):
    with pytest.raises(A.ArchivalConfigError) as e:
        A.ArchivalConfig(**kwargs).validate()
    assert e.value.key == key and str(e.value).startswith(key + ":")


# ------------------------------------------------------------------------------------------- codec
def test_data_file_codec_round_trip():
    name = lsm.data_file_name(t(0), t(90), 0)
    assert name == f"{t(0)}_{t(90)}_0.parquet"
    assert lsm.parse_data_file_name(name) == lsm.DataFile(t(0), t(90), 0)
    assert lsm.parse_manifest_name(lsm.manifest_name(7)) == 7
    assert lsm.is_temp_manifest("manifest_3.tmp") and not lsm.is_data_file_name("manifest_3.tmp")


@pytest.mark.parametrize("name", ["x.parquet", f"{t(9)}_{t(1)}_0.parquet", f"{t(1)}_{t(9)}_10.parquet",
                                  f"{t(1)}_{t(9)}_0.log"])
def test_bad_data_file_names_refused_naming_the_file(name):
    with pytest.raises(CodecError) as e:
        lsm.parse_data_file_name(name)
    assert e.value.name == name


@pytest.mark.parametrize("name", ["manifest_0", "manifest_x", "manifest_3.tmp", "_version_"])
def test_bad_manifest_names_refused(name):
    with pytest.raises(CodecError):
        lsm.parse_manifest_name(name)


# ------------------------------------------------------------------------------------------- decisions
def test_trigger_only_above_keep_max():
    cfg = A.ArchivalConfig()
    assert not A.decide(timeline(30), cfg).archives
    d = A.decide(timeline(31), cfg)
    assert d.triggered and len(d.commits_to_archive) == 11
    assert [i.requested_time for i in d.commits_to_archive] == [t(10 * k) for k in range(11)]
    assert violations(H.decision_verdicts(d, cfg)) == []


def test_earliest_pending_write_bounds_archival():
    d = A.decide(timeline(40, pending_at=5), A.ArchivalConfig())
    # the latest completed commit before the pending write t(51) is t(50): archive t(0)..t(40)
    assert d.earliest_to_retain == t(50)
    assert [i.requested_time for i in d.commits_to_archive] == [t(10 * k) for k in range(5)]
    assert ("earliest-pending-write", t(50)) in d.retention
    broken = A.decide(timeline(40, pending_at=5), A.ArchivalConfig(), design=A.VARIANTS["archive-past-pending"].design)
    assert len(broken.commits_to_archive) == 20


def test_savepoint_stops_archival_unless_beyond():
    d = A.decide(timeline(40, savepoint_at=3), A.ArchivalConfig())
    assert [i.requested_time for i in d.commits_to_archive] == [t(0), t(10), t(20)]
    d2 = A.decide(timeline(40, savepoint_at=3), A.ArchivalConfig(beyond_savepoint=True))
    assert t(30) not in [i.requested_time for i in d2.commits_to_archive] and len(d2.commits_to_archive) == 20


def test_cleans_before_the_last_archived_commit_go_too():
    d = A.decide(timeline(31, cleans=(2, 9, 12)), A.ArchivalConfig())
    cleans = [i.requested_time for i in d.to_archive if i.action is Action.CLEAN]
    assert cleans == [t(22), t(92)]  # t(122) is after the last archived commit t(100)


def test_metadata_table_without_compaction_blocks_archival():
    d = A.decide(timeline(40), A.ArchivalConfig(), A.RetentionContext(mdt_enabled=True))
    assert d.triggered and not d.archives and "metadata table" in d.why
    d2 = A.decide(timeline(40), A.ArchivalConfig(), A.RetentionContext(mdt_enabled=True, mdt_latest_compaction=t(72)))
    assert d2.earliest_to_retain == t(70)  # the first commit completed (t(75)) after the MDT compaction t(72)


def test_v1_blocks_use_the_batch_size():
    d = A.decide(timeline(31), A.ArchivalConfig())
    assert [len(b) for b in A.v1_blocks(d.to_archive, 10)] == [10, 1]


# ------------------------------------------------------------------------------------------- steps
def test_plan_writes_l0_then_deletes_pending_then_completed_ascending():
    _, steps = A.plan(state_of(timeline(31)), A.ArchivalConfig())
    kinds = [s.kind for s in steps]
    assert kinds[:4] == ["write-data-file", "write-manifest", "delete-version-file", "write-version-file"]
    deletes = [s.file for s in steps if isinstance(s, A.DeleteActiveFile)]
    states = [f.state for f in deletes]
    first_completed = states.index(State.COMPLETED)
    assert all(s is not State.COMPLETED for s in states[:first_completed])
    assert all(s is State.COMPLETED for s in states[first_completed:])
    done = [f.requested_time for f in deletes if f.state is State.COMPLETED]
    assert done == sorted(done)
    assert H.delete_order(deletes).holds
    assert not H.delete_order(list(reversed(deletes))).holds
    assert kinds[-1] == "compact-level"


def _run_commits(n: int, cfg=A.ArchivalConfig()) -> A.HistoryState:
    s = A.HistoryState()
    for k in range(n):
        files = {A.ActiveFile(t(10 * k), Action.COMMIT, st) for st in (State.REQUESTED, State.INFLIGHT)}
        files.add(A.ActiveFile(t(10 * k), Action.COMMIT, State.COMPLETED, t(10 * k + 5)))
        s = A.HistoryState(s.active | files, s.lsm)
        _, s = A.archive(s, cfg)
    return s


def test_lsm_levels_cascade_and_manifests_are_cleaned():
    s = _run_commits(400)
    levels = sorted(lsm.parse_data_file_name(n).level for n in lsm.latest_manifest(s.lsm))
    assert max(levels) >= 1 and levels.count(0) < 10
    assert len(s.lsm.manifest_versions()) <= lsm.MANIFESTS_RETAINED + 2
    assert not violations(H.history_verdicts(s, A.ArchivalConfig()))
    # every file on storage is listed by a kept manifest
    kept = {n for v in s.lsm.manifest_versions() for n in s.lsm.manifest(v)}
    assert set(s.lsm.file_names()) <= kept


def test_reader_falls_back_when_version_file_unreadable_and_ignores_temp():
    s = _run_commits(60)
    v = lsm.latest_version(s.lsm)
    broken = lsm.LSMState(s.lsm.files, s.lsm.manifests, 999, False, ("manifest_1000.tmp",))
    assert lsm.latest_version(broken) == max(s.lsm.manifest_versions()) == v
    assert lsm.records(broken) == lsm.records(s.lsm)
    missing = lsm.LSMState(s.lsm.files, s.lsm.manifests, 999, True, ())
    with pytest.raises(lsm.LSMReadError, match="manifest_999"):
        lsm.latest_manifest(missing)
    assert not H.lsm_verdicts(missing)[0].holds


def test_rerun_after_crash_skips_committed_l0_and_rewrites_uncommitted():
    s0 = state_of(timeline(31))
    cfg = A.ArchivalConfig()
    d, s = A.start(s0, cfg)
    s = A.step(s, cfg)                      # the L0 file is written, not committed
    assert lsm.latest_manifest(s.lsm) == ()
    name = s.lsm.file_names()[0]
    s = A.crash(s)
    garbage = s.lsm.with_file(name, (lsm.LSMRecord(t(0), t(1), "commit"),))  # a partially written leftover
    s = A.HistoryState(s.active, garbage)
    _, s = A.archive(s, cfg)                 # rerun: the leftover is rewritten, then committed
    assert len(s.lsm.file(name)) == 11
    # a crash after the manifest commit, before deleting the active files: the rerun skips the write
    d, s = A.start(s0, cfg)
    for _ in range(4):
        s = A.step(s, cfg)
    version = lsm.latest_version(s.lsm)
    s = A.crash(s)
    _, s = A.archive(s, cfg)
    assert lsm.latest_version(s.lsm) == version  # no new manifest for the redundant file
    assert len(A.completed_commits(A.active_timeline(s))) == 20


def test_version_before_manifest_breaks_i15():
    s0 = state_of(timeline(31))
    cfg = A.ArchivalConfig()
    design = A.VARIANTS["version-before-manifest"].design
    _, s = A.start(s0, cfg, design=design)
    s = A.step(s, cfg, design)  # data file
    s = A.step(s, cfg, design)  # delete _version_
    s = A.step(s, cfg, design)  # _version_ = 1, manifest_1 not written yet
    assert [v.invariant for v in violations(H.lsm_verdicts(s.lsm))] == ["I15.version-is-latest",
                                                                         "I15.manifest-complete"]


def test_non_consecutive_compaction_breaks_shape():
    names = [lsm.data_file_name(t(10 * k), t(10 * k + 5), 0) for k in range(4)]
    before = lsm.LSMState(tuple((n, (lsm.LSMRecord(n[:17], n[:17], "commit"),)) for n in names), ((1, tuple(names)),), 1)
    pick = lsm.compaction_candidates_every_other(names, 0, 2)
    target = lsm.compacted_name(pick)
    after = before.with_file(target, ()).with_manifest(2, [n for n in names if n not in pick] + [target])
    after = lsm.LSMState(after.files, after.manifests, 2)
    v = {x.invariant: x for x in H.lsm_step_verdicts(before, after)}
    assert not v["I15.compaction-shape"].holds
    good = lsm.compaction_candidates(names, 0, 2)
    target = lsm.compacted_name(good)
    ok = before.with_file(target, ()).with_manifest(2, [n for n in names if n not in good] + [target])
    ok = lsm.LSMState(ok.files, ok.manifests, 2)
    assert {x.invariant: x for x in H.lsm_step_verdicts(before, ok)}["I15.compaction-shape"].holds


# ------------------------------------------------------------------------------------------- lookups
def test_completion_time_found_before_and_after_archival_with_pruning():
    s = _run_commits(200)
    tl = A.active_timeline(s)
    view = CompletionTimeQueryView(tl, s.lsm)
    expected = {t(10 * k): t(10 * k + 5) for k in range(200)}
    assert H.completion_found(view, expected).holds
    old, recent = view.lookup(t(0)), view.lookup(t(10 * 170))
    assert old.source == recent.source == "history"
    assert len(recent.files_read) < len(old.files_read) <= len(lsm.latest_manifest(s.lsm))
    assert view.lookup(t(10 * 199)).source == "active"
    assert view.lookup(t(10 * 199 + 1)).completion_time is None  # after the cursor, unknown: pending
    blind = CompletionTimeQueryView(tl, s.lsm, use_history=False)
    assert not H.completion_found(blind, expected).holds


def test_loaded_view_of_the_suites_equals_the_spec():
    from properties.test_history_props import LoadedView
    s = _run_commits(120)
    tl = A.active_timeline(s)
    spec, fast = CompletionTimeQueryView(tl, s.lsm), LoadedView(tl, s.lsm)
    for k in range(-1, 125):
        for d in (0, 1, 5):
            x = t(10 * k + d) if k >= 0 else t(0)
            assert spec.completion_time(x) == fast.completion_time(x), x
            assert spec.is_completed(x) == fast.is_completed(x)


# ------------------------------------------------------------------------------------------- reads
def _mor_state(n_deltas: int):
    """A MOR table: one base file at t(0), then deltacommits (a log each) completed in order; archived."""
    s = A.HistoryState()
    ghost = Timeline(8)
    base = BaseFile("fg", "1-0-1", t(0))
    logs = []

    def add(rt, action, ct):
        nonlocal s
        files = {A.ActiveFile(rt, action, st) for st in (State.REQUESTED, State.INFLIGHT)}
        files.add(A.ActiveFile(rt, action, State.COMPLETED, ct))
        s = A.HistoryState(s.active | files, s.lsm)
        ghost.load(rt, action, {State.REQUESTED, State.INFLIGHT, State.COMPLETED}, ct)

    add(t(0), Action.COMMIT, t(5))
    cfg = A.ArchivalConfig(max_commits=4, min_commits=2, cleaner_commits_retained=1)
    for k in range(1, n_deltas + 1):
        add(t(10 * k), Action.DELTACOMMIT, t(10 * k + 5))
        logs.append(LogFile("fg", t(10 * k), 1, "1-0-1"))
        _, s = A.archive(s, cfg)
    return s, ghost, base, logs


def test_archival_preserves_reads_and_the_blind_lookup_drops_logs_from_the_compaction_plan():
    s, ghost, base, logs = _mor_state(8)
    tl = A.active_timeline(s)
    assert lsm.records(s.lsm), "deltacommits were archived"
    hist = FileSystemView(tl, [base], logs, times=CompletionTimeQueryView(tl, s.lsm))
    ghost_view = FileSystemView(ghost, [base], logs)
    assert H.reads_preserved(hist, ghost_view, [(None, None), (t(35), None)]).holds
    tc = t(1000)
    plan = hist.compaction_plan_files(tc)
    assert [lg.instant_time for lg in plan[("", "fg")].log_files] == [lg.instant_time for lg in logs]
    blind = FileSystemView(tl, [base], logs, times=CompletionTimeQueryView(tl, s.lsm, use_history=False))
    assert not H.reads_preserved(blind, ghost_view).holds
    blind_plan = blind.compaction_plan_files(tc)
    planned = blind_plan[("", "fg")].log_files if ("", "fg") in blind_plan else ()
    dropped = {lg.instant_time for lg in logs} - {lg.instant_time for lg in planned}
    archived = {r.instant_time for r in lsm.records(s.lsm)} - {i.requested_time for i in tl.instants()}
    assert archived & {lg.instant_time for lg in logs} <= dropped and dropped


def test_active_bounded_holds_after_runs_and_fails_when_archival_is_skipped():
    cfg = A.ArchivalConfig()
    s = _run_commits(100, cfg)
    assert H.active_bounded(A.active_timeline(s), cfg).holds
    assert not H.active_bounded(timeline(45), cfg).holds
    assert H.active_bounded(timeline(45, pending_at=0), cfg).holds  # nothing archivable: retention keeps them


def test_rewriting_a_committed_file_or_going_back_a_version_breaks_i15():
    """I15.immutable-files and I15.version-monotone fail on the steps that break them (no archiver design of the
    suites rewrites a committed file or lowers the version, so the broken steps are made by hand)."""
    s = _run_commits(40).lsm
    name = lsm.latest_manifest(s)[0]
    rewritten = s.with_file(name, (lsm.LSMRecord(t(1), t(2), "commit"),))
    v = {x.invariant: x for x in H.lsm_step_verdicts(s, rewritten)}
    assert not v["I15.immutable-files"].holds and name in v["I15.immutable-files"].involved
    # the L0 step of a rerun whose file is committed leaves it alone (LSMTimelineWriter#write skips it)
    same = lsm.apply(s, lsm.WriteDataFile(name, (lsm.LSMRecord(t(1), t(2), "commit"),)))
    assert same == s and all(x.holds for x in H.lsm_step_verdicts(s, same))
    back = lsm.LSMState(s.files, s.manifests, s.version - 1, True, ())
    back = back.with_manifest(s.version - 1, lsm.latest_manifest(s))
    v = {x.invariant: x for x in H.lsm_step_verdicts(s, back)}
    assert not v["I15.version-monotone"].holds
