"""The metadata table and the asynchronous indexer beside live writers, as an explorable state machine
(``hoodie-lab explore --machine indexing``).

Every step is one named action ``(process, step)``; :func:`refusal` is its guard (``None`` when enabled,
else why not) and :func:`step` its effect, returning a new :class:`IndexingState` (states are values:
a step copies both timelines before changing them). The rules are not restated here: each step calls
:mod:`model.mdt.partitions` (preconditions, ``indexUptoInstant``, the catch-up decision, which partitions
a writer updates, table-config transitions, what a rebuild holds) and :class:`model.timeline.Timeline`
(create / inflight / complete / delete guards) for the data table (DT) and the metadata table (MDT).

==================  ==========================================================  ===========================================
action              enabled when                                                effect (Hudi method)
==================  ==========================================================  ===========================================
``wN start``        writer idle                                                 a new time, requested deltacommit on the DT
                                                                                (``BaseHoodieWriteClient#startCommit``)
``wN write``        requested                                                   inflight; its record written to a file
                                                                                group; before-lock design: the table config
                                                                                is read here (``#commitStats`` ->
                                                                                ``createTable``, before the lock)
``wN commit``       written, lock free                                          takes the lock; MDT deltacommit with the
                                                                                same time, a log entry in every partition
                                                                                the writer updates
                                                                                (``HoodieBackedTableMetadataWriter#update``,
                                                                                ``#getMetadataPartitionsToUpdate``)
``wN complete``     MDT updated                                                 DT instant completed
                                                                                (``saveAsComplete``), lock released
``wN fail``         written or MDT updated, failures left                       the writer dies; lock released (expiry),
                                                                                heartbeat dead
``r rollback``      a failed pending write, lock free                           DT rollback instant; the failed instant and
                                                                                its files deleted; mirrored: its MDT
                                                                                deltacommit and log entries rolled back and
                                                                                an MDT deltacommit of the rollback time
                                                                                (``#update(HoodieRollbackMetadata)``)
``i schedule``      indexer idle (or aborted, retries left), lock free,         ``indexing.requested`` with the plan
                    partition absent, ``indexUptoInstant`` exists               (partition, ``indexUptoInstant``)
                                                                                (``ScheduleIndexActionExecutor#execute``)
``i execute``       scheduled                                                   ``indexing.inflight``; partition inflight in
                                                                                the table config; its base built from the
                                                                                writes completed up to ``indexUptoInstant``;
                                                                                the catch-up list (``RunIndexActionExecutor
                                                                                #execute``, ``#buildMetadataPartitions``,
                                                                                ``#getInstantsToCatchup``)
``i catchup``       the head instant's decision is not ``wait``                 caught-up / skip-dead / gone: next;
                    (``apply`` also needs the lock)                             apply: its entries written under the lock
                                                                                (``AbstractIndexingCatchupTask#run``)
``i timeout``       the catch-up waits on a live writer, timeouts left          abort: partition removed from both lists,
                                                                                its MDT files deleted, the inflight file
                                                                                deleted (``RunIndexActionExecutor#abort``)
``i complete``      catch-up list empty, lock free                              partition available; ``indexing`` completed
                                                                                with ``HoodieIndexCommitMetadata``
                                                                                (``#updateTableConfigAndTimeline``)
``i drop``          drop enabled, index built                                   partition removed from the table config and
                                                                                its files deleted
                                                                                (``#dropMetadataPartitions``)
``m compact``       MDT compaction enabled, not done, lock free, no pending     MDT compaction: valid log entries of the
                    DT write before the latest MDT deltacommit, a log to merge  available partitions merged into their base
                                                                                (``#compactIfNecessary``,
                                                                                ``#validateTimelineBeforeSchedulingCompaction``)
==================  ==========================================================  ===========================================

The design choices are the fields of :class:`IndexingConfig`; :mod:`model.mdt.variants` names them.
Invariants: :mod:`model.invariants.indexing` (:func:`verdicts` runs them on a state).

Simplifications (small exhaustive bounds): one data partition; writer ``wN`` upserts record ``kN`` into
file group ``fg-(N mod 2)``, one deltacommit each; the table starts with one completed deltacommit
``T0`` (record ``k0``) mirrored in the MDT, the ``files`` partition available; one indexer builds one
partition; times come from one counter (TrueTime is explored by ``--machine table``); the lock is one
table lock (``hoodie.write.lock.provider``) and each indexer step that needs it takes and releases it
within the step (unless ``indexer_lock="held"``); an MDT partition's "file groups" are its base set and
its log entries.
"""

from __future__ import annotations

from .. import machine
from dataclasses import dataclass, field, replace

from ..errors import TimelineError
from ..instant import WRITE_ACTIONS, Action, format_millis
from ..invariants import indexing as inv
from ..timeline import Timeline
from . import partitions as P

DC, IDX, RB, CP = Action.DELTACOMMIT, Action.INDEXING, Action.ROLLBACK, Action.COMPACTION
INDEXER, ROLLBACKER, COMPACTOR = "i", "r", "m"
EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: times are EPOCH_MS + the counter
T0 = format_millis(EPOCH_MS)

# writer phases
IDLE, REQUESTED, WRITTEN, MDT_DONE, DT_DONE, DONE, FAILED, ROLLED_BACK = (
    "idle", "requested", "written", "mdt-done", "dt-done", "done", "failed", "rolled-back")
# indexer phases
SCHEDULED, CATCHING_UP, INDEXED, ABORTED, DROPPED = "scheduled", "catching-up", "indexed", "aborted", "dropped"

BEFORE_LOCK, IN_LOCK = "before-lock", "in-lock"
CONFIG_READS = (BEFORE_LOCK, IN_LOCK)
CONTIGUOUS, LAST_COMPLETED = "contiguous", "last-completed"
UPTO_RULES = (CONTIGUOUS, LAST_COMPLETED)
SHORT, HELD = "short", "held"
INDEXER_LOCKS = (SHORT, HELD)
MDT_FIRST, DT_FIRST = "mdt-first", "dt-first"
COMMIT_ORDERS = (MDT_FIRST, DT_FIRST)
VALID_ONLY, ALL_LOGS = "valid-only", "all-logs"
COMPACTION_INPUTS = (VALID_ONLY, ALL_LOGS)


@dataclass(frozen=True)
class IndexingConfig:
    """One design of the MDT + indexer machine and its bounds.

    ``settings`` (``hoodie.write.concurrency.mode`` + lock provider) and ``partition`` are validated by
    :func:`model.mdt.partitions.validate_indexing` when the config is built (an :class:`IndexingError`
    naming the setting). The other fields are the design choices issue #18 names:

    * ``config_read``: a writer reads the table config (which MDT partitions exist) ``before-lock``
      (when it builds its table, before the commit lock) or ``in-lock``;
    * ``writers_include_inflight``: writers add log entries for inflight partitions (RFC-45) or not;
    * ``readers_allow_inflight``: readers may use an inflight partition (broken) or not;
    * ``upto``: ``contiguous`` (no pending write before ``indexUptoInstant``) or ``last-completed``;
    * ``catchup``: the indexer catches up, or completes right after building (broken);
    * ``catchup_check``: ``per-partition`` or Hudi's ``instant-time`` set;
    * ``recheck_after_wait``: after waiting for a pending instant the catch-up checks it again
      (``False``: it moves on -- it skips instants completed during execution);
    * ``indexer_lock``: the indexer holds the lock only inside a step (``short``) or from building to
      completion (``held``, broken: writers wait for the index build);
    * ``commit_order``: the MDT deltacommit before the DT completion (``mdt-first``) or after;
    * ``abort_cleanup``: an abort removes the partition, its files and the inflight file (or only the
      inflight file, broken);
    * ``mdt_compaction`` / ``compaction_input``: one MDT compaction merging ``valid-only`` log entries
      (``getValidInstantTimestamps``) or ``all-logs`` (broken);
    * ``heartbeat_check``: the catch-up skips a pending instant whose writer's heartbeat expired
      (``False``, broken for liveness: it waits for every pending instant, also a dead writer's);
    * bounds: ``writers``, ``failures``, ``timeouts`` (catch-up timeouts), ``retries`` (schedules after
      an abort), ``drop`` (the index may be dropped once built).
    """

    writers: int = 2
    failures: int = 0
    partition: str = P.RECORD_INDEX
    settings: P.ConcurrencySettings = P.ConcurrencySettings()
    config_read: str = BEFORE_LOCK
    writers_include_inflight: bool = True
    readers_allow_inflight: bool = False
    upto: str = CONTIGUOUS
    catchup: bool = True
    catchup_check: str = P.PER_PARTITION
    recheck_after_wait: bool = True
    indexer_lock: str = SHORT
    commit_order: str = MDT_FIRST
    abort_cleanup: bool = True
    mdt_compaction: bool = False
    compaction_input: str = VALID_ONLY
    timeouts: int = 0
    retries: int = 0
    drop: bool = False
    heartbeat_check: bool = True

    def __post_init__(self):
        checks = [
            (1 <= self.writers <= 3, f"writers must be 1..3, not {self.writers}"),
            (0 <= self.failures <= self.writers, f"failures must be 0..writers, not {self.failures}"),
            (self.config_read in CONFIG_READS, f"config_read must be one of {CONFIG_READS}, not {self.config_read!r}"),
            (self.upto in UPTO_RULES, f"upto must be one of {UPTO_RULES}, not {self.upto!r}"),
            (self.catchup_check in P.CATCHUP_CHECKS,
             f"catchup_check must be one of {P.CATCHUP_CHECKS}, not {self.catchup_check!r}"),
            (self.indexer_lock in INDEXER_LOCKS, f"indexer_lock must be one of {INDEXER_LOCKS}, not {self.indexer_lock!r}"),
            (self.commit_order in COMMIT_ORDERS, f"commit_order must be one of {COMMIT_ORDERS}, not {self.commit_order!r}"),
            (self.compaction_input in COMPACTION_INPUTS,
             f"compaction_input must be one of {COMPACTION_INPUTS}, not {self.compaction_input!r}"),
            (0 <= self.timeouts <= 2, f"timeouts must be 0..2, not {self.timeouts}"),
            (0 <= self.retries <= 2, f"retries must be 0..2, not {self.retries}"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(msg)
        # the indexer's preconditions, against the initial table config (files available)
        P.validate_indexing(self.settings, self.partition, P.PartitionStates())

    @property
    def writer_names(self) -> tuple[str, ...]:
        return tuple(f"w{i + 1}" for i in range(self.writers))

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["settings"] = {"mode": self.settings.mode, "lock_provider": self.settings.lock_provider}
        return d


@dataclass(frozen=True)
class IndexingState:
    """One state. ``procs``: per writer ``(name, phase, time, partitions read or None)``; ``idx``: the
    indexer ``(phase, indexing time, indexUptoInstant, catch-up list ((t, was_pending), ...), caught-up
    instant, schedules used, aborts)``; ``lock``: who holds the table lock; ``parts``: the table config;
    ``writes``: per DT write instant with files on storage, the records it wrote; ``mdt``: per MDT
    partition ``(name, base entries, logs ((t, source, entries), ...))`` (``source`` ``w``: the writer's
    deltacommit, ``i``: the indexer's catch-up) -- a rollback writes no log entry: the tables are tv8, whose
    log files are named by the deltacommit that wrote them, so :func:`_rollback` deletes the failed
    deltacommit's entries and its MDT deltacommit (``hudi-semantics.md`` 1.9, tv8 rollbacks delete the failed
    instant's own log files; no ROLLBACK command block); ``plans``/``index_commits``: the
    ``HoodieIndexPlan`` and ``HoodieIndexCommitMetadata`` written; ``dt``/``mdt_tl``: the timelines
    (never changed once the state exists)."""

    clock: int
    procs: tuple
    idx: tuple
    lock: str | None
    parts: P.PartitionStates
    writes: tuple
    mdt: tuple
    plans: tuple
    index_commits: tuple
    compacted: int
    dt: Timeline = field(compare=False, repr=False)
    mdt_tl: Timeline = field(compare=False, repr=False)

    def proc(self, name: str) -> tuple:
        return next(p for p in self.procs if p[0] == name)

    def writes_map(self) -> dict:
        return dict(self.writes)

    def mdt_partition(self, name: str) -> tuple | None:
        return next((m for m in self.mdt if m[0] == name), None)

    def fingerprint(self) -> tuple:
        def tl_sig(tl: Timeline) -> tuple:
            return tuple((i.requested_time, i.action.value, i.state.value, i.completion_time) for i in tl.instants())
        return (self.clock, self.procs, self.idx, self.lock, self.parts, self.writes, self.mdt, self.plans,
                self.index_commits, self.compacted, tl_sig(self.dt), tl_sig(self.mdt_tl))


class Refused(Exception):
    """An action's guard refused it; the message says why."""


def _time(n: int) -> str:
    return format_millis(EPOCH_MS + n)


def initial_state(cfg: IndexingConfig) -> IndexingState:
    """The table before any process acts: deltacommit ``T0`` (record ``k0`` in ``fg-0``) completed on the
    DT and mirrored by MDT deltacommit ``T0`` in the ``files`` partition (available)."""
    dt, mdt_tl = Timeline(8), Timeline(8)
    done = _time(1)
    for tl in (dt, mdt_tl):
        tl.create(T0, DC)
        tl.transition_to_inflight(T0, DC)
        tl.complete(T0, DC, done)
    write = (T0, (("k0", "fg-0"),))
    mdt = ((P.FILES, frozenset(), ((T0, "w", P.entries_of(P.FILES, write)),)),)
    procs = tuple((w, IDLE, None, None) for w in cfg.writer_names)
    idx = (IDLE, None, None, (), None, 0, 0)
    return IndexingState(2, procs, idx, None, P.PartitionStates(), (write,), mdt, (), (), 0, dt, mdt_tl)


# ------------------------------------------------------------------------------------------ actions
def candidate_actions(cfg: IndexingConfig) -> list[tuple[str, str]]:
    """Every action of the machine in a fixed order (the explorer needs a deterministic order)."""
    out = [(w, s) for w in cfg.writer_names for s in ("start", "write", "commit", "complete")]
    if cfg.failures:
        out += [(w, "fail") for w in cfg.writer_names] + [(ROLLBACKER, "rollback")]
    out += [(INDEXER, s) for s in ("schedule", "execute", "catchup", "complete")]
    if cfg.timeouts:
        out.append((INDEXER, "timeout"))
    if cfg.drop:
        out.append((INDEXER, "drop"))
    if cfg.mdt_compaction:
        out.append((COMPACTOR, "compact"))
    return out


WEAK, NONE = "weak", "none"

#: Fairness per step (TLA+ ``WF_vars(A)``: a step continuously enabled from some point on is eventually
#: taken), judged by :func:`checker.liveness.check_model_liveness` (issue #22). A writer's own steps are
#: weakly fair (``BaseHoodieWriteClient#startCommit`` .. ``#commitStats`` run to the end unless the writer
#: dies); ``fail`` is a fault (none). The rollback of a failed write is the LAZY cleaner's
#: (``BaseHoodieTableServiceClient#rollbackFailedWrites``, run by the table services after commits): weakly
#: fair. The indexer's steps after scheduling are weakly fair (``HoodieIndexer`` runs
#: ``RunIndexActionExecutor#execute`` to the end), and so is its ``timeout``: the executor's own timer
#: (``indexingCatchupTaskFuture.get(hoodie.metadata.index.check.timeout.seconds)`` -> ``#abort``), which fires
#: whenever the catch-up keeps waiting. ``schedule`` and ``drop`` are a user's decisions (none): a table need
#: not be indexed. The MDT compaction is a table service (weakly fair).
FAIRNESS: dict[str, str] = {
    "start": WEAK, "write": WEAK, "commit": WEAK, "complete": WEAK, "fail": NONE, "rollback": WEAK,
    "schedule": NONE, "execute": WEAK, "catchup": WEAK, "timeout": WEAK, "drop": NONE, "compact": WEAK,
}


def fairness(action: tuple[str, str], unfair: frozenset = frozenset()) -> str:
    """The fairness of ``action``'s step; steps named in ``unfair`` lose theirs (a liveness variant's design)."""
    return NONE if action[1] in unfair else FAIRNESS[action[1]]


def format_action(action: tuple[str, str]) -> str:
    return f"{action[0]} {action[1]}"


def _set_proc(state: IndexingState, name: str, phase: str, t, read, **changes) -> IndexingState:
    procs = tuple((name, phase, t, read) if p[0] == name else p for p in state.procs)
    return replace(state, procs=procs, **changes)


def _set_idx(state: IndexingState, **fields_) -> IndexingState:
    phase, ti, upto, todo, caught, scheds, aborts = state.idx
    d = dict(phase=phase, ti=ti, upto=upto, todo=todo, caught=caught, scheds=scheds, aborts=aborts)
    d.update(fields_)
    return replace(state, idx=(d["phase"], d["ti"], d["upto"], d["todo"], d["caught"], d["scheds"], d["aborts"]))


def _need_lock(state: IndexingState, who: str) -> None:
    if state.lock is not None and state.lock != who:
        raise Refused(f"the table lock is held by {state.lock}")


def _append_logs(mdt: tuple, t: str, source: str, write: tuple, partitions) -> tuple:
    """MDT partitions with one log entry ``(t, source, entries)`` added to each of ``partitions``."""
    out = []
    for name, base, logs in mdt:
        if name in partitions:
            logs = logs + ((t, source, P.entries_of(name, write)),)
        out.append((name, base, logs))
    return tuple(out)


def _mdt_deltacommit(mdt_tl: Timeline, t: str, ct: str) -> None:
    """An MDT deltacommit with the data-table instant's time (``HoodieBackedTableMetadataWriter#commit``)."""
    mdt_tl.create(t, DC)
    mdt_tl.transition_to_inflight(t, DC)
    mdt_tl.complete(t, DC, ct)


def _writer_step(cfg: IndexingConfig, state: IndexingState, who: str, what: str) -> IndexingState:
    _, phase, t, read = state.proc(who)
    if what == "start":
        if phase != IDLE:
            raise Refused(f"{who} is {phase}; start needs idle")
        t = _time(state.clock)
        dt = state.dt.copy()
        dt.create(t, DC, by=who)
        return _set_proc(state, who, REQUESTED, t, None, clock=state.clock + 1, dt=dt)
    if what == "write":
        if phase != REQUESTED:
            raise Refused(f"{who} is {phase}; write needs requested")
        dt = state.dt.copy()
        dt.transition_to_inflight(t, DC, by=who)
        n = int(who[1:])
        write = (t, ((f"k{n}", f"fg-{n % 2}"),))
        read = P.writer_partitions(state.parts, include_inflight=cfg.writers_include_inflight) \
            if cfg.config_read == BEFORE_LOCK else None
        return _set_proc(state, who, WRITTEN, t, read, dt=dt, writes=tuple(sorted(state.writes + (write,))))
    if what == "commit":
        if phase != WRITTEN:
            raise Refused(f"{who} is {phase}; commit needs written")
        _need_lock(state, who)
        mid = replace(state, lock=who)
        if cfg.commit_order == DT_FIRST:
            return _set_proc(_dt_complete(mid, t), who, DT_DONE, t, read)
        return _set_proc(_mdt_update(cfg, mid, t, read), who, MDT_DONE, t, read)
    if what == "complete":
        if phase not in (MDT_DONE, DT_DONE):
            raise Refused(f"{who} is {phase}; complete needs its commit started")
        if phase == DT_DONE:
            return _set_proc(replace(_mdt_update(cfg, state, t, read), lock=None), who, DONE, t, read)
        return _set_proc(replace(_dt_complete(state, t), lock=None), who, DONE, t, read)
    if what == "fail":
        if phase not in (WRITTEN, MDT_DONE, DT_DONE):
            raise Refused(f"{who} is {phase}; fail needs a write in progress")
        if sum(1 for p in state.procs if p[1] in (FAILED, ROLLED_BACK)) >= cfg.failures:
            raise Refused(f"no failures left ({cfg.failures})")
        lock = None if state.lock == who else state.lock
        return _set_proc(replace(state, lock=lock), who, FAILED, t, read)
    raise Refused(f"unknown writer step {what}")


def _dt_complete(state: IndexingState, t: str) -> IndexingState:
    """``saveAsComplete`` of the writer's deltacommit (completion time from the counter)."""
    dt = state.dt.copy()
    dt.complete(t, DC, _time(state.clock))
    return replace(state, dt=dt, clock=state.clock + 1)


def _mdt_update(cfg: IndexingConfig, state: IndexingState, t: str, read) -> IndexingState:
    """``HoodieBackedTableMetadataWriter#update``: MDT deltacommit ``t`` with a log entry in every
    partition the writer updates (read now, in the lock, or the ``read`` before it), limited to the
    partitions that still exist."""
    now = P.writer_partitions(state.parts, include_inflight=cfg.writers_include_inflight)
    targets = (read if read is not None else now) & (state.parts.available | state.parts.inflight)
    mdt_tl = state.mdt_tl.copy()
    _mdt_deltacommit(mdt_tl, t, _time(state.clock))
    write = (t, state.writes_map()[t])
    return replace(state, mdt_tl=mdt_tl, clock=state.clock + 1, mdt=_append_logs(state.mdt, t, "w", write, targets))


def _rollback(cfg: IndexingConfig, state: IndexingState) -> IndexingState:
    """Roll back the oldest failed pending write ``tw`` (``BaseRollbackActionExecutor#execute``), under the
    lock: rollback instant ``trb``; ``tw``'s files and instant deleted; mirrored in the MDT
    (``HoodieBackedTableMetadataWriter#update(HoodieRollbackMetadata)``): the MDT deltacommit ``tw`` and
    its log entries rolled back, and an MDT deltacommit ``trb``."""
    failed = sorted((t, n) for n, ph, t, _ in state.procs if ph == FAILED and state.dt.get(t, DC) is not None
                    and not state.dt.get(t, DC).is_completed)
    if not failed:
        raise Refused("no failed pending write to roll back")
    _need_lock(state, ROLLBACKER)
    tw, who = failed[0]
    trb = _time(state.clock)
    dt, mdt_tl = state.dt.copy(), state.mdt_tl.copy()
    dt.create(trb, RB, by=ROLLBACKER)
    dt.transition_to_inflight(trb, RB)
    dt.delete(tw, DC)
    if mdt_tl.get(tw, DC) is not None:
        mdt_tl.delete(tw, DC, allow_completed=True)
    _mdt_deltacommit(mdt_tl, trb, _time(state.clock + 1))
    dt.complete(trb, RB, _time(state.clock + 2))
    mdt = tuple((n, base, tuple(lg for lg in logs if lg[0] != tw)) for n, base, logs in state.mdt)
    writes = tuple(w for w in state.writes if w[0] != tw)
    return _set_proc(replace(state, dt=dt, mdt_tl=mdt_tl, clock=state.clock + 3, mdt=mdt, writes=writes),
                     who, ROLLED_BACK, tw, None)


def _catchup_head(cfg: IndexingConfig, state: IndexingState) -> tuple[str, bool, str]:
    """The head of the catch-up list and the rule's decision for it."""
    _, _, _, todo, _, _, _ = state.idx
    t, was_pending = todo[0]
    inst = next((i for i in state.dt.find(t) if i.action is not IDX), None)
    dt_state = None if inst is None else ("completed" if inst.is_completed else "pending")
    writer = next((p for p in state.procs if p[2] == t), None)
    # HoodieHeartbeatClient#isHeartbeatExpired of the instant's writer; without the check (broken design) the
    # catch-up takes every pending instant for a live writer's
    alive = writer is not None and writer[1] not in (FAILED, ROLLED_BACK) if cfg.heartbeat_check else True
    m = state.mdt_tl.get(t, DC)
    part = state.mdt_partition(cfg.partition)
    # every log entry of the partition is a write's ("w") or the catch-up's ("i"): either one means the instant's
    # records are already in the index being built
    wrote = part is not None and any(lg[0] == t for lg in part[2])
    decision = P.catchup_decision(dt_state=dt_state, heartbeat_alive=alive,
                                  mdt_completed=m is not None and m.is_completed, mdt_wrote_partition=wrote,
                                  check=cfg.catchup_check, was_pending=was_pending,
                                  recheck_after_wait=cfg.recheck_after_wait)
    return t, was_pending, decision


def _abort(cfg: IndexingConfig, state: IndexingState) -> IndexingState:
    """``RunIndexActionExecutor#abort``: the partition leaves both table-config lists, its MDT files are
    deleted, the ``indexing.inflight`` file is deleted (the broken design deletes only the file)."""
    _, ti, *_ = state.idx
    dt = state.dt.copy()
    dt.delete(ti, IDX)
    parts, mdt = state.parts, state.mdt
    if cfg.abort_cleanup:
        parts = parts.remove({cfg.partition})
        mdt = tuple(m for m in mdt if m[0] != cfg.partition)
    lock = None if state.lock == INDEXER else state.lock
    mid = replace(state, dt=dt, parts=parts, mdt=mdt, lock=lock)
    return _set_idx(mid, phase=ABORTED, todo=(), aborts=state.idx[6] + 1)


def _indexer_step(cfg: IndexingConfig, state: IndexingState, what: str) -> IndexingState:
    phase, ti, upto, todo, caught, scheds, aborts = state.idx
    if what == "schedule":
        if not (phase == IDLE or (phase == ABORTED and scheds <= cfg.retries)):
            raise Refused(f"indexer is {phase}" + (f"; no retries left ({cfg.retries})" if phase == ABORTED else ""))
        _need_lock(state, INDEXER)
        try:
            P.validate_indexing(cfg.settings, cfg.partition, state.parts)
        except P.IndexingError as exc:
            raise Refused(str(exc)) from None
        if state.dt.pending([IDX]):
            raise Refused("an indexing instant is pending")
        writes_tl = [i for i in state.dt.write_timeline()]
        up = P.index_upto(writes_tl, contiguous=cfg.upto == CONTIGUOUS)
        if up is None:
            raise Refused("no completed write to index up to")
        ti = _time(state.clock)
        dt = state.dt.copy()
        dt.create(ti, IDX, by=INDEXER)
        mid = replace(state, dt=dt, clock=state.clock + 1, plans=state.plans + ((ti, cfg.partition, up),))
        return _set_idx(mid, phase=SCHEDULED, ti=ti, upto=up, todo=(), caught=None, scheds=scheds + 1)
    if what == "execute":
        if phase != SCHEDULED:
            raise Refused(f"indexer is {phase}; execute needs scheduled")
        if cfg.indexer_lock == HELD:
            _need_lock(state, INDEXER)
        dt = state.dt.copy()
        dt.transition_to_inflight(ti, IDX, by=INDEXER)
        parts = state.parts.to_inflight({cfg.partition})
        done = [i.requested_time for i in state.dt.completed(WRITE_ACTIONS) if i.requested_time <= upto]
        base = P.rebuild(cfg.partition, state.writes_map(), done)
        mdt = tuple(m for m in state.mdt if m[0] != cfg.partition) + ((cfg.partition, base, ()),)
        todo = P.catchup_list(state.dt.instants(), upto)
        lock = INDEXER if cfg.indexer_lock == HELD else state.lock
        mid = replace(state, dt=dt, parts=parts, mdt=tuple(sorted(mdt, key=lambda m: m[0])), lock=lock)
        if not cfg.catchup:
            todo = ()
        return _set_idx(mid, phase=CATCHING_UP, todo=todo, caught=upto)
    if what == "catchup":
        if phase != CATCHING_UP or not todo:
            raise Refused("nothing to catch up" if phase == CATCHING_UP else f"indexer is {phase}")
        t, _, decision = _catchup_head(cfg, state)
        if decision == P.WAIT:
            raise Refused(f"waiting for the live writer of {t}")
        if decision == P.APPLY:
            _need_lock(state, INDEXER)
            write = (t, state.writes_map().get(t, ()))
            mdt = _append_logs(state.mdt, t, "i", write, {cfg.partition})
            return _set_idx(replace(state, mdt=mdt), todo=todo[1:], caught=t)
        return _set_idx(state, todo=todo[1:], caught=t if decision == P.CAUGHT_UP else caught)
    if what == "timeout":
        if phase != CATCHING_UP or not todo:
            raise Refused("no catch-up in progress")
        if aborts >= cfg.timeouts:
            raise Refused(f"no timeouts left ({cfg.timeouts})")
        t, _, decision = _catchup_head(cfg, state)
        if decision != P.WAIT:
            raise Refused("the catch-up is not waiting")
        return _abort(cfg, state)
    if what == "complete":
        if phase != CATCHING_UP or todo:
            raise Refused("catch-up not finished" if phase == CATCHING_UP else f"indexer is {phase}")
        _need_lock(state, INDEXER)
        parts = state.parts.to_available({cfg.partition})
        dt = state.dt.copy()
        dt.complete(ti, IDX, _time(state.clock), by=INDEXER)
        mid = replace(state, dt=dt, parts=parts, clock=state.clock + 1, lock=None,
                      index_commits=state.index_commits + ((ti, cfg.partition, caught),))
        return _set_idx(mid, phase=INDEXED)
    if what == "drop":
        if phase != INDEXED:
            raise Refused(f"indexer is {phase}; drop needs the index built")
        _need_lock(state, INDEXER)
        mid = replace(state, parts=state.parts.remove({cfg.partition}),
                      mdt=tuple(m for m in state.mdt if m[0] != cfg.partition))
        return _set_idx(mid, phase=DROPPED)
    raise Refused(f"unknown indexer step {what}")


def _compact(cfg: IndexingConfig, state: IndexingState) -> IndexingState:
    """One MDT compaction (``HoodieBackedTableMetadataWriter#compactIfNecessary``) under the lock: refused
    while a DT write before the latest MDT deltacommit is pending
    (``#validateTimelineBeforeSchedulingCompaction``); merges into each available partition's base the log
    entries a reader would merge (``valid-only``: ``getValidInstantTimestamps``) or every completed one
    (``all-logs``, broken); the others stay as logs. Inflight partitions are not compacted (RFC-45)."""
    if state.compacted:
        raise Refused("the MDT compaction already ran")
    _need_lock(state, COMPACTOR)
    latest = state.mdt_tl.last_completed([DC])
    pending = [i.requested_time for i in state.dt.pending(WRITE_ACTIONS)
               if latest is not None and i.requested_time < latest.requested_time]
    if pending:
        raise Refused(f"data-table write {pending[0]} is pending before the latest MDT deltacommit")
    valid = inv.valid_log(state) if cfg.compaction_input == VALID_ONLY else _completed_log(state)
    out, merged = [], 0
    for name, base, logs in state.mdt:
        if name not in state.parts.available:
            out.append((name, base, logs))
            continue
        take = [lg for lg in logs if valid(lg)]
        merged += len(take)
        out.append((name, base | frozenset().union(*(lg[2] for lg in take)), tuple(lg for lg in logs if lg not in take)))
    if not merged:
        raise Refused("no log entry to compact")
    tc = _time(state.clock)
    mdt_tl = state.mdt_tl.copy()
    mdt_tl.create(tc, CP)
    mdt_tl.transition_to_inflight(tc, CP)
    mdt_tl.complete(tc, CP, _time(state.clock + 1))
    return replace(state, mdt=tuple(out), mdt_tl=mdt_tl, clock=state.clock + 2, compacted=1)


def _completed_log(state: IndexingState):
    def ok(lg) -> bool:
        t, source, _ = lg
        if source == "i":
            return True
        m = state.mdt_tl.get(t, DC)
        return m is not None and m.is_completed
    return ok


def step(cfg: IndexingConfig, state: IndexingState, action: tuple[str, str]) -> IndexingState:
    """The state after ``action``; raises :class:`Refused` (why) when the action is not enabled. A
    timeline rule that refuses an effect refuses the action too, naming the rule."""
    who, what = action
    try:
        if who == INDEXER:
            return _indexer_step(cfg, state, what)
        if who == ROLLBACKER:
            return _rollback(cfg, state)
        if who == COMPACTOR:
            return _compact(cfg, state)
        if who in cfg.writer_names:
            return _writer_step(cfg, state, who, what)
        raise Refused(f"unknown process {who}")
    except (TimelineError, P.IndexingError) as exc:
        raise Refused(f"{exc.rule}: {exc}") from None


def refusal(cfg: IndexingConfig, state: IndexingState, action: tuple[str, str]) -> str | None:
    """Why ``action`` is not enabled in ``state`` (``None``: it is)."""
    return machine.refusal(lambda a: step(cfg, state, a), action, Refused)


def enabled(cfg: IndexingConfig, state: IndexingState) -> list[tuple[tuple[str, str], IndexingState]]:
    """The enabled actions with their next states, in :func:`candidate_actions` order."""
    return machine.enabled(candidate_actions(cfg), lambda a: step(cfg, state, a), Refused)


# ------------------------------------------------------------------------------------------ invariants
def readable(cfg: IndexingConfig, state: IndexingState) -> frozenset:
    """The MDT partitions readers use in this design (:func:`model.mdt.partitions.readable_partitions`)."""
    return P.readable_partitions(state.parts, allow_inflight=cfg.readers_allow_inflight)


def verdicts(cfg: IndexingConfig, state: IndexingState) -> list:
    """Every invariant of :mod:`model.invariants.indexing` on ``state``."""
    return inv.indexing_verdicts(state, readable=readable(cfg, state), writers=cfg.writer_names, indexer=INDEXER,
                                 aborted=state.idx[0] == ABORTED)


def index_built(state: IndexingState) -> bool:
    """The indexer completed (a ``sometimes`` property: correct designs must reach it)."""
    return state.idx[0] == INDEXED


def describe(state: IndexingState) -> str:
    procs = ", ".join(f"{n}={ph}" + (f"@{t}" if t else "") for n, ph, t, _ in state.procs)
    phase, ti, upto, todo, caught, _, aborts = state.idx
    insts = ", ".join(str(i) for i in state.dt.instants())
    mdt = "; ".join(f"{n}: base {len(b)}, logs {[lg[0][-4:] + lg[1] for lg in logs]}" for n, b, logs in state.mdt)
    return (f"[{procs}] indexer={phase}" + (f"@{ti} upto {upto} todo {[t for t, _ in todo]}" if ti else "")
            + f" lock={state.lock} partitions={sorted(state.parts.available)} inflight={sorted(state.parts.inflight)}"
            + f" | DT: {insts} | MDT: {mdt}")


__all__ = [
    "IndexingConfig", "IndexingState", "Refused", "initial_state", "candidate_actions", "format_action", "step",
    "refusal", "enabled", "verdicts", "readable", "index_built", "describe", "INDEXER", "ROLLBACKER", "COMPACTOR",
    "BEFORE_LOCK", "IN_LOCK", "CONTIGUOUS", "LAST_COMPLETED", "SHORT", "HELD", "MDT_FIRST", "DT_FIRST",
    "VALID_ONLY", "ALL_LOGS", "T0", "FAIRNESS", "WEAK", "NONE", "fairness",
]
