"""The engine's archival decision: :func:`model.archival.start` without rebuilding a timeline.

:func:`step` runs a job's next step as :func:`model.archival.step` does.

Same inputs, same results: ``start(s, cfg, ctx, design)`` returns the spec's :class:`ArchivalDecision` (equal
value: the same :class:`Instant` values in the same order, the same retention candidates and ``why`` text) and
the same :class:`HistoryState` with the same job steps. ``tests/test_fastpaths.py`` keeps the two equal on
random active timelines (every action, state and retention context) and on the benchmark's own sequence, and
shows the check fails on a planted broken fast path.

What differs is speed only. The spec rebuilds a :class:`model.timeline.Timeline` from the state files at every
call (``Timeline.load`` per instant, Enum calls, dataclass views) and scans it several times; a writer archives
after every commit, and most calls end at the trigger (completed commits <= ``keep.max``). Here the state files
are grouped once into plain tuples, the completed commits are counted first and a call that does not trigger
returns at once; a call that does trigger runs the same rules (:func:`model.archival.decide`'s, in the same
order) over those tuples, and the job is made by the spec's own :func:`model.lsm.write_steps`.

Anything outside the common case goes to the spec itself, so its result (or its refusal) is the spec's:
a design other than :data:`model.archival.HUDI`, a running job (the spec refuses), two state-file groups that
are one instant for the timeline (``Timeline.load`` refuses "loaded twice"), or one instant with two completed
files (the spec picks one of them by set order).
"""

from __future__ import annotations

from dataclasses import replace

from model import archival as spec
from model import lsm
from model.instant import COMPLETED_ACTION, WRITE_ACTIONS, Action, Instant, State

__all__ = ["start", "step"]

_COMMITS = spec.COMMIT_ACTIONS
_DONE = State.COMPLETED
_CLEAN_ROLLBACK = (Action.CLEAN, Action.ROLLBACK)


def _shown(action: Action) -> Action:
    return COMPLETED_ACTION.get(action, action)


#: per action: its comparable action (the identity ``Timeline.load`` keys instants by; also the action shown
#: once completed), and whether that is on the completed commits timeline
_SHOWN = {a: COMPLETED_ACTION.get(a, a) for a in Action}
_IS_COMMIT = {a: COMPLETED_ACTION.get(a, a) in _COMMITS for a in Action}


def _commits_only(active) -> int | None:
    """The number of completed commits when the spec's rebuild of the timeline is unambiguous, else None:
    no two state-file groups are one instant (the comparable action) and no group has two completed files."""
    groups = set()
    done = set()
    n = 0
    for f in active:  # one pass: the groups, the completed files (each group's at most once), the commits
        k = (f.requested_time, f.action)
        groups.add(k)
        if f.state is _DONE:
            if k in done:
                return None
            done.add(k)
            if _IS_COMMIT[k[1]]:
                n += 1
    if len({(rt, _SHOWN[a]) for rt, a in groups}) != len(groups):
        return None
    return n


def _instants(active) -> list | None:
    """The active timeline's instants ascending as the spec's ``Timeline.instants()`` gives them, each with
    its state files: ``[(Instant, files)]``; None when the spec's rebuild would refuse or be ambiguous."""
    by: dict[tuple, list] = {}
    for f in active:
        k = (f.requested_time, f.action)
        g = by.get(k)
        if g is None:
            by[k] = [f]
        else:
            g.append(f)
    keys: dict[tuple, tuple] = {}
    out = []
    for (rt, action), fs in by.items():
        ident = (rt, _SHOWN[action])  # InstantKey.of: the comparable action
        if ident in keys:
            return None  # Timeline.load: "loaded twice"
        keys[ident] = (rt, action)
        done = [f for f in fs if f.state is _DONE]
        if len(done) > 1:
            return None  # the spec takes one completion time by set order
        state = max(f.state for f in fs)
        ct = done[0].completion_time if done and state is _DONE else None
        out.append((ident, Instant(rt, action, state, ct), fs))
    out.sort(key=lambda x: x[0])
    return [(i, fs) for _, i, fs in out]


def _retention(insts: list, commits: list, ctx: spec.RetentionContext):
    """``model.archival.earliest_instant_to_retain`` (design HUDI) over the instants."""
    cands: list[tuple[str, str]] = []
    writes = [i for i in insts if i.action in WRITE_ACTIONS]
    pending = [i for i in writes if i.state is not _DONE]
    if pending:
        p = pending[0].requested_time
        before = [c.requested_time for c in commits if c.requested_time < p]
        cands.append(("earliest-pending-write", before[-1] if before else p))
    if ctx.compaction_num_commits:
        done = [i for i in insts if i.state is _DONE and i.action is Action.COMPACTION]
        if done:
            cands.append(("compaction-retention", done[-1].requested_time))
        else:
            deltas = [i.requested_time for i in commits if _shown(i.action) is Action.DELTACOMMIT]
            if deltas:
                cands.append(("compaction-retention", deltas[0]))
    clus = [i for i in writes if i.state is not _DONE and i.action in (Action.CLUSTERING, Action.REPLACECOMMIT)]
    if clus:
        cands.append(("clustering-retention", clus[0].requested_time))
    if ctx.mdt_enabled:
        if ctx.mdt_latest_compaction is None:
            return None, tuple(cands), True
        after = sorted((c for c in commits if c.completion_time and c.completion_time > ctx.mdt_latest_compaction),
                       key=lambda c: (c.completion_time, c.requested_time))
        if after:
            cands.append(("metadata-table-compaction", after[0].requested_time))
    if ctx.clean_earliest_retain is not None:
        cands.append(("clean-retention", ctx.clean_earliest_retain))
    return min((t for _, t in cands), default=None), tuple(cands), False


def _completed_of(insts: list, actions) -> list:
    """``Timeline.completed(actions)``: the action or the shown action among ``actions``."""
    return [i for i in insts if i.state is _DONE and (i.action in actions or _shown(i.action) in actions)]


def start(s: spec.HistoryState, cfg: spec.ArchivalConfig, ctx: spec.RetentionContext = spec.RetentionContext(),
          design: spec.Design = spec.HUDI) -> tuple[spec.ArchivalDecision, spec.HistoryState]:
    """:func:`model.archival.start`, fast (see the module docstring)."""
    if design != spec.HUDI or s.job:
        return spec.start(s, cfg, ctx, design)
    n = _commits_only(s.active)
    if n is None:
        return spec.start(s, cfg, ctx, design)
    if n <= cfg.max_commits:  # most calls: no trigger, no timeline needed
        d = spec.ArchivalDecision(n, False, None, (), None, (), (), f"{n} completed commits <= keep.max {cfg.max_commits}")
        return d, spec.HistoryState(active=s.active, lsm=s.lsm, job=(), deleted=(), table_version=s.table_version)
    grouped = _instants(s.active)
    insts = [i for i, _ in grouped]
    commits = [i for i in insts if i.state is _DONE and _shown(i.action) in _COMMITS]
    bound, cands, mdt_blocks = _retention(insts, commits, ctx)
    if mdt_blocks:
        d = spec.ArchivalDecision(n, True, None, cands, None, (), (), "no compaction yet on the metadata table")
        return d, replace(s, job=(), deleted=())
    sps = [i.requested_time for i in _completed_of(insts, (Action.SAVEPOINT,))]
    first_sp = sps[0] if sps else None
    out = []
    for c in commits:
        if cfg.beyond_savepoint:
            if c.requested_time in sps:
                continue
        elif first_sp is not None and c.requested_time >= first_sp:
            continue
        if bound is not None and c.requested_time >= bound:
            continue
        out.append(c)
    out = out[:n - cfg.min_commits]
    extra = []
    if out:
        last = out[-1].requested_time
        extra = [i for i in _completed_of(insts, _CLEAN_ROLLBACK) if i.requested_time < last]
    to_archive = tuple(sorted(out + extra, key=lambda i: (i.requested_time, i.action.value)))
    why = (f"{n} completed commits > keep.max {cfg.max_commits}: archive {len(out)} commits (down to keep.min "
           f"{cfg.min_commits}) before {bound or 'no bound'}"
           + (f", stopping at savepoint {first_sp}" if first_sp and not cfg.beyond_savepoint else "")
           + (f", and {len(extra)} clean/rollback" if extra else ""))
    d = spec.ArchivalDecision(n, True, bound, cands, first_sp, tuple(out), to_archive, why)
    if not to_archive:
        return d, replace(s, job=(), deleted=())
    files_of = {(i.requested_time, i.action): fs for i, fs in grouped}
    recs = [lsm.LSMRecord(i.requested_time, i.completion_time or i.requested_time, _shown(i.action).value)
            for i in to_archive]
    files = [f for i in to_archive for f in files_of[(i.requested_time, i.action)]]
    pending = sorted(f for f in files if f.state is not _DONE)
    done = sorted(f for f in files if f.state is _DONE)
    steps = (lsm.write_steps(recs) + tuple(spec.DeleteActiveFile(f) for f in pending + done)
             + (spec.CompactLevel(0),))
    return d, replace(s, job=steps, deleted=())


def step(s: spec.HistoryState, cfg: spec.ArchivalConfig = spec.ArchivalConfig(), design: spec.Design = spec.HUDI
         ) -> spec.HistoryState:
    """:func:`model.archival.step`: a deletion of an active file (most of a job's steps) and a storage step
    (:mod:`model.lsm`'s guard and ``apply``) are done here with the spec's guard and effect, without
    ``dataclasses.replace``; ``CompactLevel`` and ``CleanLSM`` (which plan steps) are the spec's own ``step``."""
    if not s.job:
        raise spec.ArchivalStepRefused("step", "no archival job is running")
    head = s.job[0]
    if design != spec.HUDI or isinstance(head, (spec.CompactLevel, spec.CleanLSM)):
        return spec.step(s, cfg, design)
    if type(head) is spec.DeleteActiveFile:
        if head.file not in s.active:
            raise spec.ArchivalStepRefused(head.kind, f"{head.file} is not on the active timeline")
        return spec.HistoryState(active=s.active - {head.file}, lsm=s.lsm, job=s.job[1:],
                                 deleted=s.deleted + (head.file,), table_version=s.table_version)
    why = lsm.guard(s.lsm, head)  # a storage step: the spec's guard and effect on the LSM state
    if why is not None:
        raise spec.ArchivalStepRefused(head.kind, why)
    return spec.HistoryState(active=s.active, lsm=lsm.apply(s.lsm, head), job=s.job[1:], deleted=s.deleted,
                             table_version=s.table_version)
