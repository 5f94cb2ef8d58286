"""Archival beside writers and a cleaner, as a small explorable state machine (issue #22: the archiver's
temporal properties, judged by :func:`checker.liveness.check_model_liveness`).

The archival rules and the archiver's steps are :mod:`model.archival`'s (``decide``/``plan``/``start``/``step``/
``crash``: ``TimelineArchiverV2#archiveIfRequired``); this module only puts them beside the processes whose
instants the archiver reads, so that a run can grow the active timeline past ``hoodie.keep.max.commits`` and
leave a write pending. Every step is one named action ``(process, step)``; :func:`step` is its effect and
raises :class:`Refused` (why) when its guard refuses it; :func:`enabled` lists the enabled actions with their
next states in a fixed order.

==================  =====================================================  ==========================================
action              enabled when                                           effect (Hudi method)
==================  =====================================================  ==========================================
``wN start``        writer idle, writes left, table lock free              requested + inflight commit files
                                                                           (``BaseHoodieWriteClient#startCommit``;
                                                                           multi-writer: under the table lock)
``wN complete``     writing, lock free                                     the completed commit file
                                                                           (``HoodieActiveTimeline#saveAsComplete``)
``wN fail``         writing, failures left (a fault)                       the writer dies; its instant stays pending,
                                                                           its heartbeat expires
``c rollback``      a failed write pending, lock free                      LAZY failed-writes rollback: the failed
                                                                           instant's files deleted, a completed
                                                                           rollback instant
                                                                           (``BaseHoodieTableServiceClient#rollbackFailedWrites``)
``a archive``       no job, lock free, the decision archives something     the table lock; the job is the planned
                                                                           steps (:func:`model.archival.start`)
``a step``          a job is running                                       its next storage step
                                                                           (:func:`model.archival.step`); the last
                                                                           one releases the lock
``a crash``         a job is running, crashes left (a fault)               the steps left are lost, the lock lease
                                                                           ends (:func:`model.archival.crash`)
==================  =====================================================  ==========================================

The archiver holds the table lock for its whole run (``archiveIfRequired(context, acquireLock=true)``:
``txnManager.beginStateChange`` .. ``endStateChange``), so writers and the cleaner wait for it. Fairness per
step: :data:`FAIRNESS`. Bounds (small exhaustive graphs): ``writes`` starts in all, ``failures``, ``crashes``.
Simplifications: commits only (COW, no compaction/clustering retention), no savepoints, no metadata table
(retention (4) off), times from one counter.
"""

from __future__ import annotations

from . import machine
from dataclasses import dataclass, field, replace

from . import archival as A
from .instant import Action, State, format_millis

EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: times are EPOCH_MS + the counter
ARCHIVER, CLEANER = "a", "c"
IDLE, WRITING, FAILED, ROLLED_BACK = "idle", "writing", "failed", "rolled-back"

#: Small bounds: archival triggers above 2 completed commits and keeps 1 (``hoodie.keep.max.commits`` 2,
#: ``hoodie.keep.min.commits`` 1, ``hoodie.cleaner.commits.retained`` 0), LSM compaction of 2 files.
SMALL = A.ArchivalConfig(max_commits=2, min_commits=1, batch=1, compaction_batch=2, cleaner_commits_retained=0,
                         manifests_retained=1).validate()

WEAK, NONE = "weak", "none"

#: Fairness per step (TLA+ ``WF_vars(A)``). A writer's own steps are weakly fair; ``fail`` and ``crash`` are
#: faults (none). The cleaner's rollback of a failed write is weakly fair (LAZY: run by the table services after
#: commits, ``BaseHoodieTableServiceClient#rollbackFailedWrites``). The archiver's ``archive`` (start a run) is
#: weakly fair: while the decision archives something a run is eventually started. Hudi starts runs after
#: commits (``BaseHoodieWriteClient#autoArchiveOnCommit``, ``hoodie.archive.automatic``; async:
#: ``hoodie.archive.async``) or on demand (hudi-cli ``archive``): the fairness assumes one of them keeps coming
#: after a crashed run or a rollback that lifts the retention -- a table whose writes stop right after a
#: crashed inline archival stays over keep.max until its next commit. Its ``step`` is weakly fair (the run
#: goes on unless the process crashes).
FAIRNESS: dict[str, str] = {"start": WEAK, "complete": WEAK, "fail": NONE, "rollback": WEAK, "archive": WEAK,
                            "step": WEAK, "crash": NONE}


def fairness(action: tuple[str, str], unfair: frozenset = frozenset()) -> str:
    """The fairness of ``action``'s step; steps named in ``unfair`` lose theirs (a liveness variant's design)."""
    return NONE if action[1] in unfair else FAIRNESS[action[1]]


@dataclass(frozen=True)
class MachineConfig:
    """One design and its bounds: ``writers`` processes, ``writes`` starts in all, the table starting with
    ``initial`` completed commits, ``failures`` writer deaths and ``crashes`` archiver crashes that may happen,
    the archival settings and the archiver's :class:`model.archival.Design`."""

    writers: int = 2
    writes: int = 3
    initial: int = 1
    failures: int = 1
    crashes: int = 0
    archival: A.ArchivalConfig = SMALL
    design: A.Design = A.HUDI

    def __post_init__(self):
        for ok, msg in ((1 <= self.writers <= 3, f"writers must be 1..3, not {self.writers}"),
                        (0 <= self.writes <= 6, f"writes must be 0..6, not {self.writes}"),
                        (0 <= self.initial <= 6, f"initial must be 0..6, not {self.initial}"),
                        (0 <= self.failures <= self.writers, f"failures must be 0..writers, not {self.failures}"),
                        (0 <= self.crashes <= 2, f"crashes must be 0..2, not {self.crashes}")):
            if not ok:
                raise ValueError(msg)
        self.archival.validate()

    @property
    def writer_names(self) -> tuple[str, ...]:
        return tuple(f"w{i + 1}" for i in range(self.writers))


@dataclass(frozen=True)
class MachineState:
    """``writers``: per writer ``(name, phase, instant time or None)``; ``history``: the active timeline's
    files, the LSM timeline and the running job (:class:`model.archival.HistoryState`); ``lock``: who holds the
    table lock; counters of starts, failures and crashes used."""

    clock: int
    writers: tuple
    history: A.HistoryState
    lock: str | None = None
    started: int = 0
    failed: int = 0
    crashed: int = 0


class Refused(Exception):
    """An action's guard refused it; the message says why."""


def _time(n: int) -> str:
    return format_millis(EPOCH_MS + n)


def _commit_files(rt: str, ct: str | None) -> frozenset:
    files = {A.ActiveFile(rt, Action.COMMIT, State.REQUESTED), A.ActiveFile(rt, Action.COMMIT, State.INFLIGHT)}
    if ct is not None:
        files.add(A.ActiveFile(rt, Action.COMMIT, State.COMPLETED, ct))
    return frozenset(files)


def initial_state(cfg: MachineConfig) -> MachineState:
    """``initial`` completed commits (requested at 1, 3, ..., each completed one tick later)."""
    files = frozenset().union(*(_commit_files(_time(2 * i + 1), _time(2 * i + 2)) for i in range(cfg.initial)))
    writers = tuple((w, IDLE, None) for w in cfg.writer_names)
    return MachineState(2 * cfg.initial + 1, writers, A.HistoryState(active=files))


def candidate_actions(cfg: MachineConfig) -> list[tuple[str, str]]:
    out = [(w, s) for w in cfg.writer_names for s in ("start", "complete")]
    if cfg.failures:
        out += [(w, "fail") for w in cfg.writer_names] + [(CLEANER, "rollback")]
    out += [(ARCHIVER, "archive"), (ARCHIVER, "step")]
    if cfg.crashes:
        out.append((ARCHIVER, "crash"))
    return out


def format_action(action: tuple[str, str]) -> str:
    return f"{action[0]} {action[1]}"


def _lock_free(s: MachineState, who: str) -> None:
    if s.lock is not None and s.lock != who:
        raise Refused(f"the table lock is held by {s.lock}")


def _set_writer(s: MachineState, who: str, phase: str, t, **changes) -> MachineState:
    return replace(s, writers=tuple((who, phase, t) if w[0] == who else w for w in s.writers), **changes)


def _writer_step(cfg: MachineConfig, s: MachineState, who: str, what: str) -> MachineState:
    _, phase, t = next(w for w in s.writers if w[0] == who)
    h = s.history
    if what == "start":
        if phase != IDLE:
            raise Refused(f"{who} is {phase}; start needs idle")
        if s.started >= cfg.writes:
            raise Refused(f"no writes left ({cfg.writes})")
        _lock_free(s, who)
        rt = _time(s.clock)
        return _set_writer(s, who, WRITING, rt, clock=s.clock + 1, started=s.started + 1,
                           history=replace(h, active=h.active | _commit_files(rt, None)))
    if what == "complete":
        if phase != WRITING:
            raise Refused(f"{who} is {phase}; complete needs writing")
        _lock_free(s, who)
        done = A.ActiveFile(t, Action.COMMIT, State.COMPLETED, _time(s.clock))
        return _set_writer(s, who, IDLE, None, clock=s.clock + 1, history=replace(h, active=h.active | {done}))
    if what == "fail":
        if phase != WRITING:
            raise Refused(f"{who} is {phase}; fail needs a write in progress")
        if s.failed >= cfg.failures:
            raise Refused(f"no failures left ({cfg.failures})")
        return _set_writer(s, who, FAILED, t, failed=s.failed + 1)
    raise Refused(f"unknown writer step {what}")


def _rollback(s: MachineState) -> MachineState:
    """LAZY ``rollbackFailedWrites`` of the oldest failed write (its heartbeat expired): its state files are
    deleted and a rollback instant completes (``BaseRollbackActionExecutor#execute``)."""
    failed = sorted((t, w) for w, phase, t in s.writers if phase == FAILED)
    if not failed:
        raise Refused("no failed write to roll back")
    _lock_free(s, CLEANER)
    tw, who = failed[0]
    h = s.history
    trb = _time(s.clock)
    gone = frozenset(f for f in h.active if f.requested_time == tw)
    rb = {A.ActiveFile(trb, Action.ROLLBACK, State.REQUESTED), A.ActiveFile(trb, Action.ROLLBACK, State.INFLIGHT),
          A.ActiveFile(trb, Action.ROLLBACK, State.COMPLETED, _time(s.clock + 1))}
    return _set_writer(s, who, ROLLED_BACK, tw, clock=s.clock + 2, history=replace(h, active=(h.active - gone) | rb))


def _archiver_step(cfg: MachineConfig, s: MachineState, what: str) -> MachineState:
    h = s.history
    if what == "archive":
        if h.job:
            raise Refused("an archival job is running")
        _lock_free(s, ARCHIVER)
        d, h2 = A.start(h, cfg.archival, design=cfg.design)
        if not h2.job:
            raise Refused(f"nothing to archive: {d.why}")
        return replace(s, history=h2, lock=ARCHIVER)
    if what == "step":
        if not h.job:
            raise Refused("no archival job is running")
        h2 = A.step(h, cfg.archival, cfg.design)
        return replace(s, history=h2, lock=ARCHIVER if h2.job else None)
    if what == "crash":
        if not h.job:
            raise Refused("no archival job is running")
        if s.crashed >= cfg.crashes:
            raise Refused(f"no crashes left ({cfg.crashes})")
        return replace(s, history=A.crash(h), lock=None, crashed=s.crashed + 1)
    raise Refused(f"unknown archiver step {what}")


def step(cfg: MachineConfig, s: MachineState, action: tuple[str, str]) -> MachineState:
    """The state after ``action``; raises :class:`Refused` (why) when it is not enabled."""
    who, what = action
    try:
        if who == ARCHIVER:
            return _archiver_step(cfg, s, what)
        if who == CLEANER:
            return _rollback(s)
        if who in cfg.writer_names:
            return _writer_step(cfg, s, who, what)
    except A.ArchivalStepRefused as exc:
        raise Refused(str(exc)) from None
    raise Refused(f"unknown process {who}")


def enabled(cfg: MachineConfig, s: MachineState) -> list[tuple[tuple[str, str], MachineState]]:
    """The enabled actions with their next states, in :func:`candidate_actions` order."""
    return machine.enabled(candidate_actions(cfg), lambda a: step(cfg, s, a), Refused)


def describe(s: MachineState) -> str:
    commits = len(A.completed_commits(A.active_timeline(s.history)))
    ws = ", ".join(f"{w}={p}" + (f"@{t[-4:]}" if t else "") for w, p, t in s.writers)
    return f"[{ws}] {commits} completed commits active, job {len(s.history.job)} steps left, lock={s.lock}"


@dataclass(frozen=True)
class ArchivalLivenessVariant:
    """A design of this machine judged by the archival temporal properties (:mod:`model.invariants.temporal`):
    config ``overrides``, the steps not weakly fair in it (``unfair``: names of :data:`FAIRNESS`) and the properties it
    must violate (``breaks``; empty: it must satisfy all at its bound)."""

    name: str
    description: str
    overrides: dict = field(default_factory=dict)
    unfair: frozenset = frozenset()
    breaks: tuple = ()

    def config(self, **extra) -> MachineConfig:
        return MachineConfig(**{**self.overrides, **extra})


_L = [
    ArchivalLivenessVariant(
        "hudi", "TimelineArchiverV2 after every commit, a LAZY cleaner rolling back failed writes, every own step "
        "weakly fair; one writer may die, one archiver crash.", {"crashes": 1}),
    ArchivalLivenessVariant(
        "no-failed-write-rollback",
        "The failed write is never rolled back (the cleaner's rollback not fair, e.g. hoodie.clean.automatic="
        "false): retention (1), the latest commit before the earliest pending write, holds archival back "
        "forever and the active timeline stays over keep.max.",
        unfair=frozenset({"rollback"}), breaks=("archival-bounded",)),
    ArchivalLivenessVariant(
        "archiver-stalls",
        "The archiver's run may stop between two storage steps and never go on (its step not fair): the job "
        "never finishes, the lock is never released and the timeline stays over keep.max.",
        unfair=frozenset({"step"}), breaks=("archival-bounded", "archival-finishes")),
]

ARCHIVAL_LIVENESS_VARIANTS: dict[str, ArchivalLivenessVariant] = {v.name: v for v in _L}

__all__ = ["MachineConfig", "MachineState", "Refused", "SMALL", "FAIRNESS", "WEAK", "NONE", "fairness",
           "initial_state", "candidate_actions", "format_action", "step", "enabled", "describe",
           "ArchivalLivenessVariant", "ARCHIVAL_LIVENESS_VARIANTS"]
