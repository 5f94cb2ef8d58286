"""The named actions of many processes on one table: each a guard (why not) and an effect.

Every action is ``(process, step)``. :func:`step` returns the next :class:`~.state.ConcState` or raises
:class:`Refused` with the guard's reason; a timeline rule that refuses an effect (``TimelineError``)
refuses the action too, except where Hudi's process fails instead (a writer whose instant was rolled
back under it aborts). The rules are not restated here: conflicts, the scheduling precondition, the
rollback targets, the index and the cleaner's selection are :mod:`model.concurrency.rules`; time is
:mod:`model.truetime`; instants are :class:`model.timeline.Timeline`; slices and plans are
:mod:`model.slicing`.

=================  ===============================  ================================================
action             enabled when                     effect (Hudi method)
=================  ===============================  ================================================
``wN generate``    idle, commits left, table lock   EAGER: roll back every pending write
                   free (when a lock provider is    (``CleanerUtils#rollbackFailedWrites``); a
                   set)                             requested time (``createNewInstantTime``); holds
                                                    the lock (``startCommit`` in a transaction)
``wN publish``     generated                        requested file (``createNewInstant``); releases
                                                    the lock; a refused create aborts the writer
``wN write``       requested                        inflight; per key the file group from the index;
                                                    markers, then a base file (COW: the latest
                                                    records merged with the update,
                                                    ``HoodieMergeHandle``) or a log file (MOR,
                                                    ``HoodieAppendHandle``; tv6 named after the slice
                                                    before-or-on its time)
``wN acquire``     written, lock free               holds the table lock (``TransactionManager#
                                                    beginTransaction``; a separate step: acquisition
                                                    takes time while others act)
``wN check``       locked                           ``TransactionUtils#resolveWriteConflictIfAny``: a
                                                    conflict aborts (lock released, heartbeat stops)
``wN complete``    checked                          completion time + completed file under the lock
                                                    (``consumeTime``, ``saveAsComplete``); markers
                                                    deleted; lock released
``wN crash``       between generate and complete,   fault: the client dies; its lock lease ends, its
                   crashes left                     heartbeat expires; it restarts with its next commit
``c schedule``     MOR, compactions left, lock      ``ScheduleCompactionActionExecutor``: tc, the
                   free, the 0.x precondition       plan (``compaction_plan_files``), requested
``c execute``      scheduled                        inflight; the compacted base files (plan inputs
                                                    merged, blocks of non-completed instants skipped)
``c commit``       executed, lock free              completed under the lock
``cl clean``       cleans left, lock free,          LAZY: roll back writes whose heartbeat expired;
                   something to do                  ``CleanPlanner`` selection deleted
``k schedule``     clusterings left, lock free,     ``ClusteringPlanActionExecutor``: tk; the plan:
                   a group to cluster               every group with data not under a pending
                                                    compaction or clustering; requested clustering
``k execute``      scheduled                        inflight; one new file group ``c<tk>`` holding the
                                                    planned groups' merged records
``k commit``       executed, lock free              under the lock the conflict check (not for a single
                                                    writer): a conflict aborts and rolls the clustering
                                                    back; else completed (a replacecommit replacing the
                                                    planned groups)
``s savepoint``    not taken                        savepoint of the latest completed commit: the
                                                    files its read needs (``SavepointActionExecutor``)
=================  ===============================  ================================================
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import TimelineError
from ..filenames import BaseFile, LogFile
from ..instant import Action, State
from . import rules as R
from .settings import COW, LAZY, MOR, SIMPLE
from .state import (CHECKED, CLEANER, CLUSTERER, COMPACTOR, EXECUTED, GENERATED, IDLE, LOCKED, PARTITION, REQUESTED,
                    SAVEPOINTER, SCHEDULED, WRITTEN, ConcState, MachineConfig, merge_records, read_slices,
                    set_proc)

WRITER_STEPS = ("generate", "publish", "write", "acquire", "check", "complete")
ACTIVE = (REQUESTED, WRITTEN, LOCKED, CHECKED)


class Refused(Exception):
    """An action's guard refused it; the message says why."""


# ----------------------------------------------------------------------------------------- helpers
def write_action(cfg: MachineConfig) -> Action:
    return Action.DELTACOMMIT if cfg.settings.table_type == MOR else Action.COMMIT


def uses_lock(cfg: MachineConfig) -> bool:
    """Whether processes take the table lock (a lock provider is configured)."""
    return cfg.settings.lock_provider is not None


def commit_lock(cfg: MachineConfig) -> bool:
    """Whether check + complete run under the lock (flaw ``no-commit-lock``: they do not)."""
    return uses_lock(cfg) and "no-commit-lock" not in cfg.flaws


def _need_lock(cfg: MachineConfig, state: ConcState, who: str) -> None:
    if uses_lock(cfg) and state.lock is not None and state.lock != who:
        raise Refused(f"the table lock is held by {state.lock}")


def _generate(state: ConcState, who: str):
    """``HoodieInstantTimeGenerator#createNewInstantTime`` through the TrueTime generator: the time, the
    copied generator, the true time after its wait."""
    gen = state.gen.copy()
    rec = gen.generate(who, state.now)
    return rec.time, gen, max(state.now, rec.released_at)


def alive(state: ConcState) -> dict:
    """Heartbeats (``HoodieHeartbeatClient``): an instant's heartbeat is alive while its writer works on it;
    it expires when the writer crashed or gave up (the model lets any time pass in between: the
    expiry is immediate, the interleavings cover every delay)."""
    out = {}
    for _, phase, t, _, _ in state.procs:
        if t is not None and phase in ACTIVE and t not in state.dead:
            out[t] = True
    return out


def summaries(state: ConcState) -> list[R.WriteSummary]:
    """The timeline as conflict resolution sees it: one :class:`~.rules.WriteSummary` per write and
    compaction instant. A function of the state alone (its timeline, the groups each write touched, the
    table services' plans): a design's flaws act on what the caller does with the summaries."""
    touched = dict(state.touched)
    plans = {tc: frozenset(g for g, _ in slices) for tc, slices in state.plans}
    cplans = {tk: frozenset(gids) for tk, gids in state.cplans}
    out = []
    for i in state.tl.instants():
        st = {State.REQUESTED: R.REQUESTED, State.INFLIGHT: R.INFLIGHT, State.COMPLETED: R.COMPLETED}[i.state]
        if i.action is Action.COMPACTION:
            out.append(R.WriteSummary(i.requested_time, R.COMPACTION, R.COMPACT, plans.get(i.requested_time, ()),
                                      state=st, completion=i.completion_time))
        elif i.action is Action.CLUSTERING:
            out.append(R.WriteSummary(i.requested_time, R.CLUSTERING, R.CLUSTER,
                                      touched.get(i.requested_time, cplans.get(i.requested_time, ())), state=st,
                                      completion=i.completion_time))
        elif i.action in (Action.COMMIT, Action.DELTACOMMIT):
            out.append(R.WriteSummary(i.requested_time, i.action.value, R.UPSERT,
                                      touched.get(i.requested_time, ()), state=st, completion=i.completion_time))
    return out


def _snapshot_location(state: ConcState, key: str) -> str | None:
    """The file group the committed table holds ``key`` in (``HoodieSimpleIndex#tagLocation``), or None."""
    rv = state.view().snapshot_read()
    groups, _ = read_slices(state.file_map(), rv.slices, rv.instants)
    return next((gid.file_id for gid, recs in sorted(groups.items()) if key in recs), None)


def _rollback(cfg: MachineConfig, state: ConcState, target: str, who: str, action: Action | None = None) -> ConcState:
    """``BaseRollbackActionExecutor#execute`` (marker based, ``MarkerBasedRollbackStrategy``): a rollback
    instant ``trb`` (requested, inflight, completed with ``consumeTime``); the files the target's markers
    name deleted; the target's instant files deleted (``deleteInstantFileIfExists``). The history records
    whether the target's heartbeat was alive."""
    was_alive = alive(state).get(target, False)
    trb, gen, now = _generate(state, who)
    tl = state.tl.copy()
    tl.create(trb, Action.ROLLBACK, by=who)
    tl.transition_to_inflight(trb, Action.ROLLBACK, by=who)
    mine = {f for t, f in state.markers if t == target}
    files = tuple((f, r) for f, r in state.files if f not in mine)
    markers = tuple(m for m in state.markers if m[0] != target)
    tl.delete(target, action or write_action(cfg))
    rec, _ = gen.consume_time(who, now, lambda c: tl.complete(trb, Action.ROLLBACK, c, by=who))
    return replace(state, tl=tl, gen=gen, now=max(now, rec.released_at), files=files, markers=markers,
                   dead=state.dead | {target}, rollbacks=state.rollbacks + ((target, was_alive),))


def _abort(state: ConcState, who: str, t: str | None, commit: int) -> ConcState:
    """The writer gives up its commit (``HoodieWriteConflictException``, or its instant is gone): the lock is
    released, its heartbeat stops (the instant is left for a rollback), it goes on with its next commit."""
    lock = None if state.lock == who else state.lock
    dead = state.dead | ({t} if t is not None else set())
    return set_proc(state, who, IDLE, None, commit + 1, lock=lock, dead=dead)


# ------------------------------------------------------------------------------------------ writers
def w_generate(cfg: MachineConfig, state: ConcState, who: str) -> ConcState:
    """``BaseHoodieWriteClient#startCommit`` in ``txnManager.beginTransaction``: under EAGER first
    ``CleanerUtils#rollbackFailedWrites`` (every pending write, :func:`~.rules.rollback_targets`), then a
    requested time (``HoodieInstantTimeGenerator#createNewInstantTime``); the table lock is held until the
    requested file is published."""
    _, phase, _, commit, _ = state.proc(who)
    if commit >= cfg.commits:
        raise Refused(f"{who} made its {cfg.commits} commit(s)")
    _need_lock(cfg, state, who)
    if cfg.settings.failed_writes != LAZY:   # EAGER: CleanerUtils#rollbackFailedWrites at startCommit
        for target in R.rollback_targets(cfg.settings, summaries(state), alive(state)):
            state = _rollback(cfg, state, target, who)
    t, gen, now = _generate(state, who)
    lock = who if uses_lock(cfg) else state.lock
    return set_proc(state, who, GENERATED, t, commit, gen=gen, now=now, lock=lock)


def w_publish(cfg: MachineConfig, state: ConcState, who: str) -> ConcState:
    """``HoodieActiveTimeline#createNewInstant`` (``createImmutableFileInPath``) and the end of the start
    transaction. A create storage refuses (the instant exists: colliding times) aborts the writer."""
    _, _, t, commit, _ = state.proc(who)
    tl = state.tl.copy()
    try:
        tl.create(t, write_action(cfg), by=who)
    except TimelineError as exc:
        if exc.rule != "I3.create-once":
            raise
        return _abort(state, who, None, commit)   # HoodieIOException: the requested file exists
    lock = None if state.lock == who else state.lock
    return set_proc(state, who, REQUESTED, t, commit, tl=tl, lock=lock)


def w_write(cfg: MachineConfig, state: ConcState, who: str) -> ConcState:
    """``transitionRequestedToInflight``, the index (``HoodieSimpleIndex#tagLocation`` /
    ``HoodieSimpleBucketIndex``: :func:`~.rules.file_group_for`), a marker (``WriteMarkers#create``) and the
    data file: COW a base file merging the group's latest records (``HoodieMergeHandle``), MOR a log file
    (``HoodieAppendHandle``; tv6 named after ``getLatestFileSliceBeforeOrOn``, tv8 after its own instant), a
    new file group for an insert under the simple index (``UpsertPartitioner``). An instant rolled back
    under the writer fails it."""
    _, _, t, commit, _ = state.proc(who)
    s = cfg.settings
    tl = state.tl.copy()
    try:
        tl.transition_to_inflight(t, write_action(cfg), by=who)
    except TimelineError:
        return _abort(state, who, t, commit)      # rolled back under it: the write fails
    key = cfg.key_of(who, commit)
    value = f"{who}.{commit}"
    located = _snapshot_location(state, key)
    fid = R.file_group_for(s, key, located, t, cfg.buckets)
    rec = (key, value, t, t)
    token = cfg.token(who)
    files = state.file_map()
    if s.table_type == COW or (s.index == SIMPLE and located is None):
        old = _latest_group_records(state, fid) if s.table_type == COW else ()
        new = BaseFile(fid, token, t, "parquet", PARTITION)
        recs = tuple(sorted(merge_records(old + (rec,)).values()))
    else:
        base = (state.view().slice_for_write((PARTITION, fid), t) or t) if s.table_version == 6 else t
        version = 1 + sum(1 for f in files if isinstance(f, LogFile) and f.file_id == fid
                          and f.instant_time == base and f.write_token == token)
        new = LogFile(fid, base, version, token, False, PARTITION)
        recs = (rec,)
    if new in files:
        raise Refused(f"{new.name} exists")
    gids = frozenset({(PARTITION, fid)})
    return set_proc(state, who, WRITTEN, t, commit, gids, tl=tl,
                    files=tuple(sorted(state.files + ((new, recs),), key=lambda x: x[0].name)),
                    markers=state.markers + ((t, new),), touched=state.touched + ((t, gids),))


def _latest_group_records(state: ConcState, fid: str) -> tuple:
    """The committed records of file group ``fid`` a COW writer merges with (``HoodieMergeHandle`` reads the
    latest base file of the group: ``getLatestBaseFile``)."""
    rv = state.view().snapshot_read()
    groups, _ = read_slices(state.file_map(), [s for s in rv.slices if s.file_id == fid], rv.instants)
    return tuple(r for recs in groups.values() for r in recs.values())


def w_acquire(cfg: MachineConfig, state: ConcState, who: str) -> ConcState:
    """``TransactionManager#beginTransaction`` before the commit (``BaseHoodieWriteClient#commitStats``): a
    step of its own, so others act while the writer waits (acquisition latency). With the flaw
    ``no-commit-lock`` no lock is taken."""
    _, _, t, commit, fgs = state.proc(who)
    if commit_lock(cfg):
        _need_lock(cfg, state, who)
        return set_proc(state, who, LOCKED, t, commit, fgs, lock=who)
    return set_proc(state, who, LOCKED, t, commit, fgs)


def w_check(cfg: MachineConfig, state: ConcState, who: str) -> ConcState:
    """``TransactionUtils#resolveWriteConflictIfAny`` (:func:`~.rules.resolve_write_conflicts`); a conflict
    (``HoodieWriteConflictException``) aborts the writer. The flaw ``ignore-pending-compaction`` leaves
    pending compaction plans out of the candidates."""
    _, _, t, commit, fgs = state.proc(who)
    if state.tl.get(t, write_action(cfg)) is None:
        return _abort(state, who, t, commit)
    view = summaries(state)
    if "ignore-pending-compaction" in cfg.flaws:
        view = [o for o in view if not (o.action == R.COMPACTION and not o.completed)]
    mine = R.WriteSummary(t, write_action(cfg).value, R.UPSERT, fgs)
    why = R.resolve_write_conflicts(cfg.settings, view, mine)
    if why is not None:
        return _abort(state, who, t, commit)
    return set_proc(state, who, CHECKED, t, commit, fgs)


def w_complete(cfg: MachineConfig, state: ConcState, who: str) -> ConcState:
    """``HoodieActiveTimeline#saveAsComplete`` with the completion time from ``TimeGenerator#consumeTime``
    (both under the lock, RFC-66 "Assumption On Locks"); the markers are deleted
    (``WriteMarkers#quietDeleteMarkerDir``); the history records the committed values."""
    _, _, t, commit, fgs = state.proc(who)
    if state.tl.get(t, write_action(cfg)) is None:
        return _abort(state, who, t, commit)
    tl, gen = state.tl.copy(), state.gen.copy()
    rec, _ = gen.consume_time(who, state.now, lambda c: tl.complete(t, write_action(cfg), c, by=who))
    key = cfg.key_of(who, commit)
    done = state.committed + ((t, rec.time, who, ((key, f"{who}.{commit}"),)),)
    lock = None if state.lock == who else state.lock
    return set_proc(state, who, IDLE, None, commit + 1, tl=tl, gen=gen, now=max(state.now, rec.released_at),
                    committed=done, lock=lock, markers=tuple(m for m in state.markers if m[0] != t))


def w_crash(cfg: MachineConfig, state: ConcState, who: str) -> ConcState:
    """Fault: the writer's process dies. Its lock lease ends (``LockProvider`` session/lease expiry), its
    heartbeat stops (``HoodieHeartbeatClient``), its instant stays pending for a rollback; the restarted
    client goes on with its next commit."""
    _, phase, t, commit, _ = state.proc(who)
    if phase not in (GENERATED,) + ACTIVE:
        raise Refused(f"{who} is {phase}: nothing to crash")
    if state.crashes >= cfg.crashes:
        raise Refused(f"no crashes left ({cfg.crashes})")
    published = phase != GENERATED
    out = _abort(state, who, t if published else None, commit)
    return replace(out, crashes=state.crashes + 1)


# ------------------------------------------------------------------------------------------ compactor
def c_schedule(cfg: MachineConfig, state: ConcState) -> ConcState:
    """``ScheduleCompactionActionExecutor#execute`` under the lock: ``tc``, the 0.x precondition
    (:func:`~.rules.may_schedule_compaction`; off with the flaw ``no-0x-guard``), the plan
    (``FileSystemView.compaction_plan_files``), the requested compaction."""
    phase, _, done = state.comp
    if phase != IDLE or done >= cfg.compactions:
        raise Refused(f"compactor is {phase} with {done} of {cfg.compactions} compaction(s) done")
    _need_lock(cfg, state, COMPACTOR)
    tc, gen, now = _generate(state, COMPACTOR)
    writes = [w for w in summaries(state) if not w.is_table_service]
    if "no-0x-guard" not in cfg.flaws:
        why = R.may_schedule_compaction(cfg.settings, writes, tc)
        if why is not None:
            raise Refused(why)
    plan = state.view().compaction_plan_files(tc)
    if not plan:
        raise Refused(f"nothing to compact at {tc}")
    tl = state.tl.copy()
    tl.create(tc, Action.COMPACTION, by=COMPACTOR)
    older = tuple(sorted(w.instant for w in writes if not w.completed and w.instant < tc))
    unsafe = state.unsafe_schedules + (((tc, older),) if older else ())
    return replace(state, comp=(SCHEDULED, tc, done), tl=tl, gen=gen, now=now, unsafe_schedules=unsafe,
                   plans=state.plans + ((tc, tuple(sorted(plan.items()))),))


def c_execute(cfg: MachineConfig, state: ConcState) -> ConcState:
    """``RunCompactionActionExecutor#execute``: inflight; per planned group a base file ``tc`` with the plan's
    base and log records merged (``HoodieCompactor``; blocks of non-completed instants skipped)."""
    phase, tc, done = state.comp
    if phase != SCHEDULED:
        raise Refused(f"compactor is {phase}; execute needs scheduled")
    tl = state.tl.copy()
    tl.transition_to_inflight(tc, Action.COMPACTION, by=COMPACTOR)
    plan = dict(dict(state.plans)[tc])
    files = state.file_map()
    completed = {i.requested_time for i in state.tl.completed()}
    new = []
    for gid, sl in sorted(plan.items()):
        groups, _ = read_slices(files, [sl], completed)   # HoodieCompactor: merged, uncommitted blocks skipped
        recs = tuple(sorted(groups[sl.group].values()))
        new.append((BaseFile(gid[1], cfg.token(COMPACTOR), tc, "parquet", PARTITION), recs))
    markers = state.markers + tuple((tc, f) for f, _ in new)
    return replace(state, comp=(EXECUTED, tc, done), tl=tl, markers=markers,
                   files=tuple(sorted(state.files + tuple(new), key=lambda x: x[0].name)))


def c_commit(cfg: MachineConfig, state: ConcState) -> ConcState:
    """``BaseHoodieTableServiceClient#completeCompaction`` under the lock (``consumeTime``)."""
    phase, tc, done = state.comp
    if phase != EXECUTED:
        raise Refused(f"compactor is {phase}; commit needs executed")
    _need_lock(cfg, state, COMPACTOR)
    tl, gen = state.tl.copy(), state.gen.copy()
    rec, _ = gen.consume_time(COMPACTOR, state.now, lambda c: tl.complete(tc, Action.COMPACTION, c, by=COMPACTOR))
    return replace(state, comp=(IDLE, None, done + 1), tl=tl, gen=gen, now=max(state.now, rec.released_at),
                   markers=tuple(m for m in state.markers if m[0] != tc))


# ------------------------------------------------------------------------------------------ cleaner
def committed_slices(state: ConcState) -> dict:
    """Per file group its committed slices, newest first, as ``(base instant, files)`` -- what
    ``CleanPlanner`` walks (``getAllFileSlices``: slices whose base instant completed or is a pending
    compaction)."""
    done = {i.requested_time for i in state.tl.completed()}
    pending_c = set(state.pending_compactions().values())
    out = {}
    for fg in state.view().file_groups():
        sl = [(s.base_instant, s.files) for s in fg.slices if s.base_instant in done or s.base_instant in pending_c]
        out[fg.file_id] = sl
    return out


def cl_clean(cfg: MachineConfig, state: ConcState) -> ConcState:
    """``HoodieTableServiceClient#clean`` under the lock: LAZY ``rollbackFailedWrites`` of writes whose heartbeat
    expired, then ``CleanPlanner``'s selection (:func:`~.rules.files_to_clean`; the flaws
    ``clean-ignores-plans`` / ``clean-ignores-savepoints`` drop its protections) deleted."""
    if len(state.cleans) >= cfg.cleans:
        raise Refused(f"no cleans left ({cfg.cleans})")
    _need_lock(cfg, state, CLEANER)
    start = state
    if cfg.settings.failed_writes == LAZY:   # HoodieTableServiceClient#clean -> rollbackFailedWrites (LAZY)
        for target in R.rollback_targets(cfg.settings, summaries(state), alive(state)):
            state = _rollback(cfg, state, target, CLEANER)
    deleted, earliest, unsafe = [], None, ()
    if cfg.clean_policy is not None:
        sp_files = frozenset(f for _, _, fs in state.savepoints for f in fs)
        plan_files = state.pending_plan_files()
        commits = [i.requested_time for i in state.tl.completed([Action.COMMIT, Action.DELTACOMMIT,
                                                                 Action.COMPACTION])]
        deleted, earliest = R.files_to_clean(
            cfg.clean_policy, cfg.clean_retained, committed_slices(state), commits,
            savepointed=() if "clean-ignores-savepoints" in cfg.flaws else sp_files,
            pending_plan_files=() if "clean-ignores-plans" in cfg.flaws else plan_files)
        unsafe = tuple(sorted(f.name for f in deleted if f in sp_files or f in plan_files))
    if not deleted and state is start:
        raise Refused("nothing to clean or roll back")
    gone = set(deleted)
    files = tuple((f, r) for f, r in state.files if f not in gone)
    entry = (cfg.clean_policy, earliest, tuple(sorted(f.name for f in deleted)), unsafe)
    return replace(state, files=files, cleans=state.cleans + (entry,))


# ------------------------------------------------------------------------------------------ clustering
def k_schedule(cfg: MachineConfig, state: ConcState) -> ConcState:
    """``ClusteringPlanActionExecutor#execute``: a requested clustering ``tk`` whose plan takes every file group
    with data that is not under a pending compaction or clustering (``ClusteringPlanStrategy`` skips those)."""
    phase, _, done = state.clus
    if phase != IDLE or done >= cfg.clusterings:
        raise Refused(f"clustering is {phase} with {done} of {cfg.clusterings} clustering(s) done")
    _need_lock(cfg, state, CLUSTERER)
    busy = set(state.pending_compactions()) | set(state.clustering_maps()[1])
    gids = tuple(sorted(s.group for s in state.view().latest_merged_file_slices() if s.group not in busy))
    if not gids:
        raise Refused("no file group to cluster")
    tk, gen, now = _generate(state, CLUSTERER)
    tl = state.tl.copy()
    tl.create(tk, Action.CLUSTERING, by=CLUSTERER)
    return replace(state, clus=(SCHEDULED, tk, done), tl=tl, gen=gen, now=now, cplans=state.cplans + ((tk, gids),))


def k_execute(cfg: MachineConfig, state: ConcState) -> ConcState:
    """``SparkExecuteClusteringCommitActionExecutor``: inflight; the planned groups' records (their merged
    latest slices, blocks of non-completed instants skipped) rewritten into one new file group ``c<tk>``."""
    phase, tk, done = state.clus
    if phase != SCHEDULED:
        raise Refused(f"clustering is {phase}; execute needs scheduled")
    tl = state.tl.copy()
    tl.transition_to_inflight(tk, Action.CLUSTERING, by=CLUSTERER)
    gids = set(dict(state.cplans)[tk])
    completed = {i.requested_time for i in state.tl.completed()}
    slices = [s for s in state.view().latest_merged_file_slices() if s.group in gids]
    groups, _ = read_slices(state.file_map(), slices, completed)
    recs = tuple(sorted(merge_records(r for g in groups.values() for r in g.values()).values()))
    new = BaseFile(f"c{tk}", cfg.token(CLUSTERER), tk, "parquet", PARTITION)
    return replace(state, clus=(EXECUTED, tk, done), tl=tl, markers=state.markers + ((tk, new),),
                   files=tuple(sorted(state.files + ((new, recs),), key=lambda x: x[0].name)),
                   touched=state.touched + ((tk, frozenset(gids | {(PARTITION, new.file_id)})),))


def k_commit(cfg: MachineConfig, state: ConcState) -> ConcState:
    """The clustering's commit (``BaseHoodieTableServiceClient#completeClustering``): under the lock the
    conflict check (``preCommit`` -> ``resolveWriteConflict``; none for a single writer, none with the flaw
    ``clustering-no-check``) -- a conflict aborts it and the clustering is rolled back -- else the
    replacecommit completes (``consumeTime``), replacing the planned groups."""
    phase, tk, done = state.clus
    if phase != EXECUTED:
        raise Refused(f"clustering is {phase}; commit needs executed")
    _need_lock(cfg, state, CLUSTERER)
    if "clustering-no-check" not in cfg.flaws:
        mine = R.WriteSummary(tk, R.CLUSTERING, R.CLUSTER, dict(state.touched)[tk])
        if R.resolve_write_conflicts(cfg.settings, summaries(state), mine) is not None:
            out = _rollback(cfg, state, tk, CLUSTERER, Action.CLUSTERING)
            return replace(out, clus=(IDLE, None, done + 1))
    tl, gen = state.tl.copy(), state.gen.copy()
    rec, _ = gen.consume_time(CLUSTERER, state.now, lambda c: tl.complete(tk, Action.CLUSTERING, c, by=CLUSTERER))
    return replace(state, clus=(IDLE, None, done + 1), tl=tl, gen=gen, now=max(state.now, rec.released_at),
                   markers=tuple(m for m in state.markers if m[0] != tk))


# ------------------------------------------------------------------------------------------ savepoint
def read_time(cfg: MachineConfig, instant) -> str:
    """The time a query at a commit uses: its completion time on tv8 (completion-time reads), its
    requested time on tv6."""
    return instant.completion_time if cfg.settings.table_version >= 8 else instant.requested_time


def s_savepoint(cfg: MachineConfig, state: ConcState) -> ConcState:
    """``SavepointActionExecutor#execute``: the files a read at the latest completed commit needs are
    savepointed (kept by every clean)."""
    if state.savepoints:
        raise Refused("the savepoint was taken")
    done = [i for i in state.tl.completed([Action.COMMIT, Action.DELTACOMMIT, Action.COMPACTION])]
    last = max(done, key=lambda i: (i.completion_time or i.requested_time))
    _need_lock(cfg, state, SAVEPOINTER)
    rt = read_time(cfg, last)
    rv = state.view().as_of_read(rt)
    files = tuple(sorted({f for s in rv.slices for f in s.files}, key=lambda f: f.name))
    return replace(state, savepoints=((last.requested_time, rt, files),))


# ------------------------------------------------------------------------------------------ dispatch
def candidate_actions(cfg: MachineConfig) -> list[tuple[str, str]]:
    """Every action in a fixed order (the explorer needs a deterministic order)."""
    out = [(w, s) for w in cfg.processes for s in WRITER_STEPS]
    if cfg.crashes:
        out += [(w, "crash") for w in cfg.processes]
    if cfg.compactions:
        out += [(COMPACTOR, "schedule"), (COMPACTOR, "execute"), (COMPACTOR, "commit")]
    if cfg.clusterings:
        out += [(CLUSTERER, "schedule"), (CLUSTERER, "execute"), (CLUSTERER, "commit")]
    if cfg.cleans:
        out.append((CLEANER, "clean"))
    if cfg.savepoint:
        out.append((SAVEPOINTER, "savepoint"))
    return out


_NEED = {"publish": GENERATED, "write": REQUESTED, "acquire": WRITTEN, "check": LOCKED, "complete": CHECKED,
         "generate": IDLE}
_WRITER = {"generate": w_generate, "publish": w_publish, "write": w_write, "acquire": w_acquire,
           "check": w_check, "complete": w_complete, "crash": w_crash}


def step(cfg: MachineConfig, state: ConcState, action: tuple[str, str]) -> ConcState:
    """The state after ``action``; raises :class:`Refused` (why) when it is not enabled."""
    who, what = action
    try:
        if who == COMPACTOR:
            return {"schedule": c_schedule, "execute": c_execute, "commit": c_commit}[what](cfg, state)
        if who == CLUSTERER:
            return {"schedule": k_schedule, "execute": k_execute, "commit": k_commit}[what](cfg, state)
        if who == CLEANER:
            return cl_clean(cfg, state)
        if who == SAVEPOINTER:
            return s_savepoint(cfg, state)
        phase = state.proc(who)[1]
        need = _NEED.get(what)
        if need is not None and phase != need:
            raise Refused(f"{who} is {phase}; {what} needs {need}")
        return _WRITER[what](cfg, state, who)
    except TimelineError as exc:
        raise Refused(f"{exc.rule}: {exc}") from None


__all__ = ["Refused", "step", "candidate_actions", "summaries", "alive", "read_time", "committed_slices",
           "write_action", "uses_lock", "commit_lock", "WRITER_STEPS"]
