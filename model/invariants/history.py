"""Invariants of the timeline's history: the LSM timeline (I15), archival (I16), lookups and reads across it.

Pure predicates returning :class:`model.invariants.Verdict`. Public API (stable; ``audit`` calls these):

=====================================  ====================================================================
function                               invariants
=====================================  ====================================================================
``lsm_verdicts(lsm_state)``            ``I15.version-is-latest``, ``I15.manifest-complete``
``lsm_step_verdicts(before, after)``   ``I15.immutable-files``, ``I15.compaction-shape``, ``I15.version-monotone``
``decision_verdicts(decision, cfg)``   ``I16.trigger``, ``I16.keeps-min``, ``I16.before-retain``, ``I16.savepoint``
``archival_verdicts(state, cfg)``      ``I16.keeps-min``, ``I16.before-earliest-pending``, ``I16.savepoint``,
                                       ``I16.delete-order``
``completion_found(view, expected)``   ``H.completion-found``
``reads_preserved(hist, ghost, ...)``  ``H.reads-preserved``
``active_bounded(timeline, cfg, ctx)``  ``H.active-bounded``
``no_write_lost(read, contents, ids)``  ``H.no-write-lost``
``history_verdicts(state, cfg)``       the state predicates above that need only the state
=====================================  ====================================================================

``expected`` / ``ghost`` are history variables kept by the driver: the completion time of every instant ever
completed, and the timeline as it would be had nothing been archived.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from .. import archival as A
from .. import lsm
from ..instant import Action, State
from ..errors import ModelError
from . import Verdict

_WRITE_STARTS = A.WRITE_START_ACTIONS


# ------------------------------------------------------------------------------------------------ I15
def lsm_verdicts(s: lsm.LSMState) -> list[Verdict]:
    """I15 over one LSM state: ``_version_`` (when present and readable) names an existing manifest, the greatest
    committed one (at most one uncommitted manifest, written before ``_version_`` is updated, is above it); the manifest readers pick lists only data files that exist (each manifest is the complete valid set)."""
    out = []
    vs = s.manifest_versions()
    if s.version is not None and s.version_readable:
        # a manifest written by an update whose _version_ write has not happened (or crashed) is not committed yet;
        # the next update replaces it, so at most one manifest is above _version_
        ok = s.version in vs and s.version >= vs[-1] - 1
        out.append(Verdict("I15.version-is-latest", ok,
                           "" if ok else f"_version_ = {s.version}, manifests present {vs}",
                           (lsm.VERSION_FILE,)))
    else:
        out.append(Verdict("I15.version-is-latest", True, "no readable _version_: readers list the manifests"))
    try:
        names = lsm.latest_manifest(s)
        missing = [n for n in names if s.file(n) is None]
        out.append(Verdict("I15.manifest-complete", not missing,
                           f"latest manifest lists missing files {missing}" if missing else "", tuple(missing)))
    except lsm.LSMReadError as e:
        out.append(Verdict("I15.manifest-complete", False, str(e), (e.name,)))
    return out


def _latest_or_none(s: lsm.LSMState):
    try:
        return lsm.latest_version(s), lsm.latest_manifest(s)
    except lsm.LSMReadError:
        return lsm.latest_version(s), None


def lsm_step_verdicts(before: lsm.LSMState, after: lsm.LSMState) -> list[Verdict]:
    """I15 over one step: committed data files are immutable; the latest version never goes back; a manifest
    change that removes files is a compaction of >= 2 consecutive files of one level into one file of the next
    level with the union bounds (``LSMTimelineWriter#compactAndClean``)."""
    out = []
    committed = {n for _, names in before.manifests for n in names}
    changed = [n for n in committed if before.file(n) is not None and after.file(n) is not None
               and before.file(n) != after.file(n)]
    out.append(Verdict("I15.immutable-files", not changed,
                       f"committed data files rewritten: {changed}" if changed else "", tuple(changed)))
    vb, mb = _latest_or_none(before)
    va, ma = _latest_or_none(after)
    out.append(Verdict("I15.version-monotone", va >= vb, "" if va >= vb else f"latest version {vb} -> {va}"))
    if mb is not None and ma is not None and va != vb:
        removed, added = sorted(set(mb) - set(ma)), sorted(set(ma) - set(mb))
        if removed:
            ok, why = _compaction_shape(mb, removed, added)
            out.append(Verdict("I15.compaction-shape", ok, why, tuple(removed + added)))
    return out


def _compaction_shape(previous: Iterable[str], removed: list[str], added: list[str]) -> tuple[bool, str]:
    ps = [lsm.parse_data_file_name(n) for n in removed]
    levels = {p.level for p in ps}
    if len(removed) < 2:
        return False, f"compaction of fewer than 2 files {removed}"
    if len(levels) != 1:
        return False, f"compaction across levels {sorted(levels)}"
    lv = levels.pop()
    if len(added) != 1:
        return False, f"compaction must add exactly one file, added {added}"
    out = lsm.parse_data_file_name(added[0])
    if out.level != lv + 1 or out.min_time != min(p.min_time for p in ps) or out.max_time != max(p.max_time for p in ps):
        return False, f"{added[0]} is not level {lv + 1} with the union bounds of {removed}"
    layer = sorted((lsm.parse_data_file_name(n), n) for n in previous if lsm.parse_data_file_name(n).level == lv)
    idx = [i for i, (_, n) in enumerate(layer) if n in removed]
    if idx != list(range(idx[0], idx[0] + len(idx))):
        return False, f"compacted files are not consecutive in level {lv} (positions {idx})"
    return True, ""


# ------------------------------------------------------------------------------------------------ I16
def decision_verdicts(d: A.ArchivalDecision, cfg: A.ArchivalConfig) -> list[Verdict]:
    """I16 over one decision: archives only when commits > keep.max, leaves >= keep.min, only commits before the
    earliest instant to retain and (unless beyond-savepoint) before the first savepoint. A detail explains a
    violation only (a holding verdict has none)."""
    n_arch = len(d.commits_to_archive)
    triggered = not n_arch or d.commits > cfg.max_commits
    kept = d.commits - n_arch >= cfg.min_commits or not n_arch
    out = [Verdict("I16.trigger", triggered,
                   "" if triggered else f"archived {n_arch} with {d.commits} commits <= keep.max {cfg.max_commits}"),
           Verdict("I16.keeps-min", kept, "" if kept else f"{d.commits} - {n_arch} < keep.min {cfg.min_commits}")]
    late = [i.requested_time for i in d.commits_to_archive
            if d.earliest_to_retain is not None and i.requested_time >= d.earliest_to_retain]
    out.append(Verdict("I16.before-retain", not late,
                       f"archived at/after {d.earliest_to_retain}: {late}" if late else "", tuple(late)))
    sp = [i.requested_time for i in d.commits_to_archive
          if not cfg.beyond_savepoint and d.first_savepoint is not None and i.requested_time >= d.first_savepoint]
    out.append(Verdict("I16.savepoint", not sp,
                       f"archived at/after savepoint {d.first_savepoint}: {sp}" if sp else "", tuple(sp)))
    return out


def archival_verdicts(s: A.HistoryState, cfg: A.ArchivalConfig) -> list[Verdict]:
    """I16 over a state: once anything was archived the active timeline keeps >= keep.min completed commits; no
    archived commit is later than a pending write instant of the active timeline (instant times only grow, so this
    is "never archive at/after the earliest pending write"); nothing archived at/after the first savepoint (unless
    beyond-savepoint); the running job deleted pending-state files before completed ones, completed ascending."""
    out = []
    try:
        recs = lsm.records(s.lsm)
    except lsm.LSMReadError:
        recs = []
    tl = A.active_timeline(s)
    commits = A.completed_commits(tl)
    arch_commits = [r for r in recs if Action(r.action) in A.COMMIT_ACTIONS]
    archived_times = {r.instant_time for r in recs}
    active_times = {i.requested_time for i in tl.instants()}
    if arch_commits and not s.job:
        ok = len(commits) >= cfg.min_commits
        out.append(Verdict("I16.keeps-min", ok, "" if ok else f"{len(commits)} completed commits < keep.min {cfg.min_commits}"))
    pend = [i.requested_time for i in tl.write_timeline() if i.is_pending]
    late = sorted(r.instant_time for r in arch_commits if pend and r.instant_time > pend[0]
                  and r.instant_time not in active_times)
    out.append(Verdict("I16.before-earliest-pending", not late,
                       f"archived commits {late} are after pending write {pend[0]}" if late else "", tuple(late)))
    sps = [i.requested_time for i in tl.completed([Action.SAVEPOINT])]
    if sps and not cfg.beyond_savepoint:
        bad = sorted(r.instant_time for r in arch_commits if r.instant_time >= sps[0])
        out.append(Verdict("I16.savepoint", not bad, f"archived at/after savepoint {sps[0]}: {bad}" if bad else "",
                           tuple(bad)))
    out.append(delete_order(s.deleted))
    return out


def delete_order(deleted: Iterable[A.ActiveFile]) -> Verdict:
    """I16 (``#deleteArchivedActions``, HUDI-7207): pending-state files before completed ones; completed ascending."""
    seen_completed = None
    for f in deleted:
        if f.state is State.COMPLETED:
            if seen_completed is not None and f.requested_time < seen_completed:
                return Verdict("I16.delete-order", False, f"completed {f.requested_time} deleted after {seen_completed}",
                               (f.requested_time,))
            seen_completed = f.requested_time
        elif seen_completed is not None:
            return Verdict("I16.delete-order", False,
                           f"{f.state.label} file of {f.requested_time} deleted after completed {seen_completed}",
                           (f.requested_time,))
    return Verdict("I16.delete-order", True)


# ------------------------------------------------------------------------------ lookups and reads
def completion_found(view, expected: Mapping[str, str]) -> Verdict:
    """Every instant ever completed (``expected``: requested -> completion time) is found with its completion
    time by the lookup across active timeline and history (``view``: a ``CompletionTimeQueryView``)."""
    bad = []
    for t, c in sorted(expected.items()):
        try:
            got = view.completion_time(t)
        except ModelError as e:  # the history cannot be read (e.g. _version_ names a missing manifest)
            return Verdict("H.completion-found", False, f"lookup of {t} failed: {e}", (t,))
        if got != c:
            bad.append(f"{t}: {got} != {c}")
    return Verdict("H.completion-found", not bad, "; ".join(bad[:3]), tuple(b.split(":")[0] for b in bad[:5]))


def _read_key(rv) -> tuple:
    return (tuple(sorted(f.name if hasattr(f, "name") else str(f) for f in rv.files())),
            tuple(sorted(rv.instants)))


def reads_preserved(hist_view, ghost_view, ranges: Iterable[tuple] = ((None, None),)) -> Verdict:
    """Archival never changes what a read returns: the snapshot read and the incremental reads over ``ranges``
    planned with the history (``hist_view``: a ``FileSystemView`` with ``times=CompletionTimeQueryView``) equal
    those planned on the timeline with nothing archived (``ghost_view``)."""
    diffs = []
    if _read_key(hist_view.snapshot_read()) != _read_key(ghost_view.snapshot_read()):
        a, b = hist_view.snapshot_read(), ghost_view.snapshot_read()
        diffs.append(f"snapshot: files {sorted(set(map(str, b.files())) ^ set(map(str, a.files())))}, "
                     f"instants {sorted(b.instants ^ a.instants)}")
    for start, end in ranges:
        a, b = hist_view.incremental_read(start, end), ghost_view.incremental_read(start, end)
        ka = ([i.requested_time for i in a.instants], a.base_files, a.log_files)
        kb = ([i.requested_time for i in b.instants], b.base_files, b.log_files)
        if ka != kb:
            diffs.append(f"incremental ({start}, {end}]: instants {ka[0]} != {kb[0]}")
    return Verdict("H.reads-preserved", not diffs, "; ".join(diffs))


def snapshot_records(read_view, contents: Mapping[str, Iterable[str]]) -> set[str]:
    """The records a snapshot read returns: each slice's base file content and the content of its admitted logs
    (``contents``: file name -> record ids)."""
    out: set[str] = set()
    for sl in read_view.slices:
        if sl.base_file is not None:
            out |= set(contents.get(sl.base_file.name, ()))
    for lg in read_view.visible_log_files():
        out |= set(contents.get(lg.name, ()))
    return out


def no_write_lost(read_view, contents: Mapping[str, Iterable[str]], committed: Iterable[str]) -> Verdict:
    """Every record of a completed write (``committed``: record ids) is in the snapshot read (the completeness half
    of I8, here threatened by a lookup that misses archived instants: the log looks uncommitted and a compaction
    plan leaves it out)."""
    got = snapshot_records(read_view, contents)
    lost = sorted(set(committed) - got)
    return Verdict("H.no-write-lost", not lost, f"records of completed writes not read: {lost[:5]}" if lost else "",
                   tuple(lost[:5]))


def active_bounded(tl, cfg: A.ArchivalConfig, ctx: A.RetentionContext = A.RetentionContext()) -> Verdict:
    """After an archival run the active timeline holds at most keep.max + batch completed commits, unless no commit
    may be archived (retention or savepoint) -- then the excess is what the retention keeps."""
    n = len(A.completed_commits(tl))
    if n <= cfg.max_commits + cfg.batch:
        return Verdict("H.active-bounded", True)
    d = A.decide(tl, cfg, ctx)
    ok = not d.commits_to_archive
    return Verdict("H.active-bounded", ok,
                   "" if ok else f"{n} completed commits > keep.max + batch {cfg.max_commits + cfg.batch} "
                   f"and {len(d.commits_to_archive)} archivable")


def history_verdicts(s: A.HistoryState, cfg: A.ArchivalConfig) -> list[Verdict]:
    """The state predicates: I15 over the LSM state and I16 over the archival state."""
    return lsm_verdicts(s.lsm) + archival_verdicts(s, cfg)


__all__ = ["lsm_verdicts", "lsm_step_verdicts", "decision_verdicts", "archival_verdicts", "delete_order",
           "completion_found", "reads_preserved", "snapshot_records", "no_write_lost", "active_bounded", "history_verdicts"]
