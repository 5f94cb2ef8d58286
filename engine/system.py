"""The whole protocol as one state machine: init, actions (guard + effect), next state.

State (:class:`System`): the writer tasks, the coordinator, the pending and last completed
checkpoints, the acks in flight, the table (timeline, commit metadata, heartbeats), the crash
budget and the observations the model made (rule breaks witnessed during transitions, read by
:mod:`model.invariants.protocol`).

Init: every task at offset 0 with checkpoint id -1, an empty coordinator, an empty timeline,
no checkpoint, next checkpoint id 1.

Actions -- one guard (``_may_<kind>``, asked through :meth:`System.is_enabled`) and one effect
(``_do_<kind>``) each:

=====================  ==================================================  =======================
action                 enabled when                                        effect
=====================  ==================================================  =======================
ingest(t)              split not exhausted, buffer not full                read one record
request-instant(t)     no grant, buffer full or barrier waiting, and the   grant := coordinator's
                       coordinator would not block (blocking mode)         instant for t's key
flush(t)               grant held and buffer full                          eager flush, event sent
trigger-checkpoint     none pending, id <= max_checkpoints (or draining)   pending := n; coordinator
                                                                           snapshot if coord-first
snapshot-task(t)       barrier waiting at t and grant held                 flush rest (lastBatch),
                                                                           state replaced, id := n
complete-checkpoint    every task snapshotted                              tasks-first: coordinator
                                                                           snapshot; ack n in flight
deliver-ack(n)         n in flight and the oldest (any with late-ack)      commit keys < n
deliver-event(t)       async delivery: a message in flight from t          the coordinator handles
                                                                           the oldest one
clean                  LAZY and a pending instant's heartbeat expired      roll those back
instant-timeout(t)     blocking, t blocked, no ack in flight nor commit    global failover (0.x
                       queued; request thread = executor: t's request      task failover)
                       held by the CommitGuard at the executor's head
run-job                executor queue: a job queued, not a slow one with   the oldest job's effect
                       a live request behind it, nor a request the
                       CommitGuard holds (request thread = executor)
request-expired(t)     executor queue: t's request behind a slow job       task failover; job overdue
stop-faults            faults not stopped yet (drivers only; not listed)   no more faults
lose-ack(n)            [lost-ack] n in flight                              drop it
abort-checkpoint       [abort] one pending (and no task snapshotted yet,  drop it
                       unless partial_aborts)
crash-task(t)          [task-crash] crash budget left                      task failover
crash-coordinator      [coordinator-crash] crash budget left               coordinator failover
restart-job            [full-restart] crash budget left                    global failover
lose-event(t)          [lost-event] a message in flight from t, budget     drop it; task failover
request-timeout(t)     [request-timeout] t's request would be granted      task failover
                       (not 0.x: no request RPC)
=====================  ==================================================  =======================
"""

from __future__ import annotations

from collections import Counter
from dataclasses import fields
from functools import lru_cache
from typing import Any, Final, NamedTuple

from model.errors import RuleViolation
from model.protocol import events as E
from model.protocol.config import FAULTS, ProtocolConfig
from model.protocol.source import Record, Source
from model.protocol.values import (CommitJob, CompletedCheckpoint, RequestJob, TableServiceJob, TaskSnapshot,
                                   WriteMetadataEvent)

from . import canonical, failover
from .checkpoint import PendingCheckpoint
from .coordinator import Coordinator
from .settings import Settings, settings
from .table import LogicalClock, Table, TimeSource
from .writer import WriterTask


class Observation(NamedTuple):
    """A rule break the model witnessed while applying the event at ``step`` (1-based)."""

    step: int
    rule: str
    detail: str


#: ``_new(Cls, (fields...))`` is the NamedTuple ``Cls(fields...)`` at half the cost (no Python-level __new__).
_new = tuple.__new__

#: Checkpoints the drain may run before giving up (liveness bound is checked separately).
DRAIN_LIMIT = 5

#: Restarts' successors :meth:`System.successors` keeps at most (then it starts over).
RESTARTS_MAX = 1 << 16


@lru_cache(maxsize=4096)
def _event(kind: type, *args) -> E.Event:
    """``kind(*args)``, one shared instance per value: events are immutable values, and
    :meth:`System.enabled_events` lists the same few in every state of an exploration."""
    return kind(*args)


class _TaskEvents:
    """The events :meth:`System.enabled_events` lists for ``P`` tasks, by kind and task: :func:`_event`'s shared
    instances, looked up by list index instead of a cached call per event listed (compiled: native attributes)."""

    def __init__(self, P: int):
        self.ingest: list = [_event(E.Ingest, t) for t in range(P)]
        self.request: list = [_event(E.RequestInstant, t) for t in range(P)]
        self.flush: list = [_event(E.Flush, t) for t in range(P)]
        self.snapshot: list = [_event(E.SnapshotTask, t) for t in range(P)]
        self.deliver: list = [_event(E.DeliverEvent, t) for t in range(P)]
        self.crash: list = [_event(E.CrashTask, t) for t in range(P)]
        self.trigger: Any = _event(E.TriggerCheckpoint)
        self.complete: Any = _event(E.CompleteCheckpoint)
        self.clean: Any = _event(E.Clean)
        self.crash_coordinator: Any = _event(E.CrashCoordinator)
        self.restart_job: Any = _event(E.RestartJob)
        self.deliver_ack: dict = {}  # checkpoint id -> _event(DeliverAck, id), filled as acks are met
        self.lose_ack: dict = {}     # likewise LoseAck

    def ack(self, n: int) -> Any:
        e = self.deliver_ack.get(n)
        if e is None:
            e = self.deliver_ack[n] = _event(E.DeliverAck, n)
        return e

    def lost_ack(self, n: int) -> Any:
        e = self.lose_ack.get(n)
        if e is None:
            e = self.lose_ack[n] = _event(E.LoseAck, n)
        return e


#: :class:`_TaskEvents` by number of tasks
_TASK_EVENTS: Final[dict] = {}


def _task_events(P: int) -> _TaskEvents:
    te = _TASK_EVENTS.get(P)
    if te is None:
        te = _TASK_EVENTS[P] = _TaskEvents(P)
    return te


#: the restarts' event classes (:meth:`System.restart_key`), kept as ``Final`` names: compiled, a final
#: name is a C static instead of a module attribute looked up per call
_CRASH_COORDINATOR: Final = E.CrashCoordinator
_RESTART_JOB: Final = E.RestartJob
_CRASH_TASK: Final = E.CrashTask

#: marks a cached canonical part as stale (``None`` is a value: no pending checkpoint)
_STALE = object()


class System:
    """The protocol state machine. See the module docstring for the actions."""

    #: The state's fields (slots: an exploration reads them millions of times), the copy-on-write
    #: flags and cached hashes; ``__dict__`` only holds what a driver attaches (it is not cloned).
    __slots__ = ("config", "_k", "source", "table", "coordinator", "writers", "pending_checkpoint", "last_completed",
                 "next_checkpoint", "acks_in_flight", "last_ack", "crashes", "faults_stopped",
                 "checkpoints_after_stop", "step_count", "observations", "observed_rules", "channels", "stalls_after_stop",
                 "executor", "expired_requests", "guard_deadlocks",
                 "_own_c", "_own_w", "_own_p", "_coordinator_hash", "_writers_hash", "_checkpoints_hash",
                 "_canon_c", "_canon_w", "_canon_k", "_canon_ch", "_canon_fp", "__dict__")

    def __init__(self, config: ProtocolConfig | None = None, *, time_source: TimeSource | None = None,
                 seed: int = 0, _blank: bool = False):
        if _blank:  # for clone() to fill (compiled by mypyc, __new__ would run __init__)
            return
        cfg = config if config is not None else ProtocolConfig()
        self.config = cfg
        self._k = settings(cfg)  # what the rules read (engine.settings: the same fields, native attributes)
        self.source = Source(cfg.parallelism, cfg.records, seed)
        self.table = Table(cfg.table_version, cfg.action, time_source)
        self.coordinator = Coordinator(cfg)
        self.writers: list[WriterTask] = [WriterTask(t) for t in range(cfg.parallelism)]
        self.pending_checkpoint: Any = None
        self.last_completed: CompletedCheckpoint | None = None
        self.next_checkpoint = 1
        self.acks_in_flight: tuple = ()
        self.last_ack = 0              # highest ack ever processed (bounded-state measure)
        self.crashes = 0
        self.faults_stopped = False
        self.checkpoints_after_stop = 0
        self.step_count = 0
        self.observations: tuple = ()
        self.observed_rules: frozenset = frozenset()  # the rules of ``observations``
        #: per task, the messages in flight (async event delivery), oldest first; immutable tuples
        self.channels: tuple = ((),) * cfg.parallelism
        self.stalls_after_stop: tuple = ()  # steps (1-based) of instant timeouts after faults stopped
        #: the coordinator's executor queue (executor_queue): immutable tuple of jobs, the running one first
        self.executor: tuple = ()
        self.expired_requests: tuple = ()  # steps (1-based) of requests expired behind a slow job
        self.guard_deadlocks: tuple = ()  # steps (1-based) of CommitGuard timeouts of a request holding the executor
        self._own_c = True
        self._own_w: Any = None  # the tasks whose WriterTask this System owns (None: all, never cloned; (): none,
        #                          and the list is shared with a clone)
        self._own_p = True  # whether this System owns its pending checkpoint (a clone shares it)
        self._coordinator_hash: Any = None  # hash(coordinator.key()) (None: not computed since the last change)
        self._writers_hash: Any = None      # hash of the writer tasks' keys (likewise)
        self._checkpoints_hash: Any = None  # (pending checkpoint, last completed, the latter's hash, both's hash)
        # the hashes of the task-symmetric fingerprint's parts (engine.canonical.hashes), cached like the hashes above
        self._canon_c: Any = None  # coordinator's (None: not computed since a change)
        self._canon_w: Any = None  # writers' (likewise)
        self._canon_k: Any = None   # (pending checkpoint, its part's, last completed, its part's, both parts')
        self._canon_ch: Any = None  # (channels, their part's)
        #: canonical_fingerprint_hash(), kept until apply() (a restart successor kept by restart_key is met again
        #: and again: its hash is asked each time)
        self._canon_fp: Any = None

    # ------------------------------------------------------------ copy-on-write
    def clone(self) -> "System":
        """A copy sharing the coordinator (and its event buffers), the writer tasks, the pending checkpoint and
        the table's parts with this System; whichever System writes a part first copies it (:meth:`_c`,
        :meth:`_w`, :meth:`_p`, the coordinator's and the table's own).
        Every field of ``__slots__`` but ``__dict__`` is set here."""
        s = System(_blank=True)
        s.config = self.config
        s._k = self._k
        s.source = self.source
        s.table = self.table.copy()
        s.coordinator = self.coordinator
        s.writers = self.writers  # copy-on-write (see _w)
        s.pending_checkpoint = self.pending_checkpoint
        s.last_completed = self.last_completed
        s.next_checkpoint = self.next_checkpoint
        s.acks_in_flight = self.acks_in_flight
        s.last_ack = self.last_ack
        s.crashes = self.crashes
        s.faults_stopped = self.faults_stopped
        s.checkpoints_after_stop = self.checkpoints_after_stop
        s.step_count = self.step_count
        s.observations = self.observations
        s.observed_rules = self.observed_rules
        s.channels = self.channels
        s.stalls_after_stop = self.stalls_after_stop
        s.executor = self.executor
        s.expired_requests = self.expired_requests
        s.guard_deadlocks = self.guard_deadlocks
        s._own_c = self._own_c = False
        s._own_w = self._own_w = ()
        s._own_p = self._own_p = False
        s._coordinator_hash = self._coordinator_hash
        s._writers_hash = self._writers_hash
        s._checkpoints_hash = self._checkpoints_hash
        s._canon_c, s._canon_w, s._canon_k, s._canon_ch = self._canon_c, self._canon_w, self._canon_k, self._canon_ch
        s._canon_fp = None
        return s

    def _c(self) -> Coordinator:
        """The coordinator, to be changed: copied first if shared; its cached hash is dropped."""
        if not self._own_c:
            self.coordinator = self.coordinator.copy()
            self._own_c = True
        self._coordinator_hash = self._canon_c = self._canon_fp = None
        return self.coordinator

    def _w(self, t: int) -> WriterTask:
        """Writer task ``t``, to be changed: copied first if shared; the writers' cached hash is dropped."""
        own = self._own_w
        if own is not None and t not in own:
            if not own:  # the first task written since a clone: the list is shared too
                self.writers = list(self.writers)
            self.writers[t] = self.writers[t].copy()
            self._own_w = own + (t,)
        self._writers_hash = self._canon_w = self._canon_fp = None
        w = self.writers[t]
        w._canon = w._canon_h = w._key_hash = None
        return w

    def replace_coordinator(self, coordinator: Coordinator) -> None:
        """A new coordinator (a coordinator failover), owned by this System."""
        self.coordinator = coordinator
        self._own_c = True
        self._coordinator_hash = self._canon_c = self._canon_fp = None

    #: The parts failover (:mod:`engine.failover`) changes, copied first when shared.
    #: (methods, not aliases ``= _c``: mypyc compiles no class-level alias of a method)
    def coordinator_to_change(self) -> Coordinator:
        return self._c()

    def writer_to_change(self, t: int) -> WriterTask:
        return self._w(t)

    def _p(self) -> PendingCheckpoint:
        """The pending checkpoint, to be changed: copied first if shared; the checkpoints' cached hash is
        dropped."""
        if not self._own_p:
            self.pending_checkpoint = self.pending_checkpoint.copy()
            self._own_p = True
        self._canon_fp = None
        c = self._checkpoints_hash  # the completed checkpoint's hash stays; the pending one's is unknown
        if c is not None:
            self._checkpoints_hash = (_STALE, c[1], c[2], None)
        k = self._canon_k
        if k is not None:  # the completed checkpoint's hashes stay; the pending one's are unknown (not "no pending
            self._canon_k = (_STALE, None, k[2], k[3], None)  # checkpoint", which None would say)
        return self.pending_checkpoint

    # ------------------------------------------------------------------ helpers
    def _faults_on(self, fault: str) -> bool:
        return not self.faults_stopped and fault in self._k.faults

    def _barrier_waiting(self, t: int) -> bool:
        p = self.pending_checkpoint
        return p is not None and p.tasks[t] is None and self.writers[t].checkpoint_id != p.id

    def _bootstrap_in_flight(self) -> bool:
        if not any(self.channels):  # (every channel empty: sync delivery, and most async states)
            return False
        return any(type(m) is WriteMetadataEvent and m.bootstrap for ch in self.channels for m in ch)

    def _needs_instant(self, t: int) -> bool:
        w = self.writers[t]
        return w.instant is None and (w.offset - w.flushed >= self._k.buffer_size or self._barrier_waiting(t))

    def _instant_wait(self, t: int) -> bool:
        """Task ``t`` (which needs an instant) must wait (:func:`model.protocol.state.instant_wait`): 0.x
        coordinator-started instants -- it is confirming and no other instant is pending (or the same one and
        it has data, ``instantToWrite``); else the coordinator would block a new instant."""
        w = self.writers[t]
        if not self._k.coordinator_start:
            if self._k.request_thread == "executor":
                return False  # the request joins the executor's queue at once; the guard waits there
            return self.coordinator.would_block(w.checkpoint_id)
        c = w.confirming
        if c is None:
            return False
        pending = self.table.pending_instants()
        return not pending or (pending[-1] == c and w.offset > w.flushed)

    def writer_status(self, t: int) -> str:
        """``"blocked"`` (must flush, coordinator refuses a new instant), ``"needs-instant"``,
        ``"idle"`` (split exhausted, nothing buffered) or ``"running"``."""
        w = self.writers[t]
        if self._needs_instant(t):
            return "blocked" if self._instant_wait(t) else "needs-instant"
        if w.offset >= self._k.records and w.offset == w.flushed and not self._barrier_waiting(t):
            return "idle"
        return "running"

    def task_step(self, t: int, at_barrier: bool = True) -> str | None:
        """The step task ``t``'s write function takes next, its guard true now (``StreamWriteFunction``:
        a flush or the barrier first asks for an instant, ``instantToWrite``):

        ``"request-instant"`` / ``"blocked"`` -- no grant, buffer full or barrier waiting, and the
        coordinator would grant / would block (:meth:`writer_status`); ``"snapshot-task"`` -- grant held
        and a barrier waiting (only when ``at_barrier``: a driver whose task has not reached the barrier
        yet passes False); ``"flush"`` -- grant held, buffer full; None -- nothing until more records or a
        barrier. One query instead of three guards (drivers call it on every wake-up)."""
        w = self.writers[t]
        p = self.pending_checkpoint
        waiting = p is not None and p.tasks[t] is None and w.checkpoint_id != p.id
        full = w.offset - w.flushed >= self._k.buffer_size
        if w.instant is None:
            if full or waiting:
                if self.executor and self._queued_request(t) is not None:
                    return None  # waiting for the answer to its request
                return "blocked" if self._instant_wait(t) else "request-instant"
            return None
        if waiting and at_barrier:
            return "snapshot-task"
        return "flush" if full else None

    def _crash_budget(self) -> bool:
        return self.crashes < self._k.max_crashes

    def _queued_request(self, t: int) -> int | None:
        """Position of task ``t``'s request (of its current attempt) in the executor queue, or None."""
        attempt = self.writers[t].attempt
        for i, job in enumerate(self.executor):
            if type(job) is RequestJob and job.task == t and job.attempt == attempt:
                return i
        return None

    def _guard_holds_executor(self) -> RequestJob | None:
        """The instant request the CommitGuard holds at the head of the executor
        (:func:`model.protocol.state.guard_holds_executor`), or None."""
        if self._k.request_thread != "executor" or not self.executor:
            return None
        head = self.executor[0]
        if type(head) is RequestJob and self.coordinator.would_block(head.key):
            return head
        return None

    def _slow_job_ahead(self, position: int) -> bool:
        for j in self.executor[:position]:
            if type(j) is TableServiceJob and j.slow and not j.overdue:
                return True
        return False

    # ------------------------------------------------------------------ guards
    def is_enabled(self, ev: E.Event) -> str | None:
        """None when ``ev`` is enabled now, else a sentence saying why not: the task exists, the fault
        is on (for fault events), then the action's own guard (``_may_<kind>``)."""
        try:
            has_task, fault, guard = _PRECONDITIONS[type(ev)]
        except KeyError:  # not a class of EVENT_TYPES
            has_task, fault, guard = _preconditions(ev)
        if has_task:
            t = getattr(ev, "task")  # (not every Event class has the field; this one's has)
            if t is not None and not 0 <= t < self._k.parallelism:
                return f"task {t} does not exist (parallelism {self._k.parallelism})"
        if fault is not None and not self._faults_on(fault):
            return f"fault {fault} is not enabled" + (" (faults stopped)" if self.faults_stopped else "")
        return f"unknown event kind {ev.kind!r}" if guard is None else guard(self, ev)

    # One guard per action: None when enabled, else why not.
    def _may_ingest(self, ev):
        w, cfg = self.writers[ev.task], self._k
        if w.offset >= cfg.records:
            return f"split {ev.task} is exhausted ({cfg.records} records)"
        if w.offset - w.flushed >= cfg.buffer_size:
            return f"task {ev.task}'s buffer is full; it must flush first"
        if cfg.coordinator_start and w.instant is not None:
            return f"0.x: task {ev.task} is flushing under {w.instant}"
        if self.executor and self._queued_request(ev.task) is not None:
            return f"task {ev.task} waits for the answer to its instant request (queued on the coordinator's executor)"
        return None

    def _may_request_instant(self, ev):
        t = ev.task
        w = self.writers[t]
        if w.instant is not None:
            return f"task {t} already holds instant {w.instant}"
        if not self._needs_instant(t):
            return f"task {t} has nothing to flush (buffer not full, no barrier)"
        if self.executor and self._queued_request(t) is not None:
            return f"task {t}'s instant request is already queued on the coordinator's executor"
        if self._instant_wait(t):
            if self._k.coordinator_start:
                return f"0.x: task {t} is confirming: it waits until the coordinator starts a new instant"
            return f"blocking mode: task {t} waits until the buffered instant is committed"
        return None

    def _may_flush(self, ev):
        w = self.writers[ev.task]
        if w.instant is None:
            return f"task {ev.task} holds no instant"
        if w.offset - w.flushed < self._k.buffer_size:
            return f"task {ev.task}'s buffer is not full"
        return None

    def _may_trigger(self, ev):
        if self.pending_checkpoint is not None:
            return f"checkpoint {self.pending_checkpoint.id} is pending"
        if self._k.ack_before_next_checkpoint and self.acks_in_flight:
            return (f"the coordinator's executor handles notifyCheckpointComplete({self.acks_in_flight[0]}) before "
                    f"checkpointCoordinator({self.next_checkpoint}) (one FIFO thread)")
        if self._k.ack_before_next_checkpoint and any(type(j) is CommitJob for j in self.executor):
            return (f"a commit queued on the coordinator's executor runs before "
                    f"checkpointCoordinator({self.next_checkpoint}) (one FIFO thread)")
        if self.next_checkpoint > self._k.max_checkpoints and not self.faults_stopped:
            return f"bound: max_checkpoints={self._k.max_checkpoints}"
        if self._bootstrap_in_flight():
            return "a restarted task's bootstrap events are still in flight (not every task is RUNNING)"
        return None

    def _may_snapshot(self, ev):
        if not self._barrier_waiting(ev.task):
            return f"no barrier waiting at task {ev.task}"
        if self.writers[ev.task].instant is None:
            return f"task {ev.task} must get an instant before flushing at the barrier"
        return None

    def _may_complete(self, ev):
        p = self.pending_checkpoint
        if p is None:
            return "no checkpoint pending"
        if not p.all_tasks_done():
            return f"checkpoint {p.id}: not every task snapshotted"
        return None

    def _may_deliver_ack(self, ev):
        n = ev.checkpoint
        if n not in self.acks_in_flight:
            return f"no ack of checkpoint {n} in flight"
        if n != self.acks_in_flight[0] and not self._faults_on("late-ack"):
            return f"ack {n} would overtake ack {self.acks_in_flight[0]} (late-ack fault not enabled)"
        return None

    def _may_deliver_event(self, ev):
        if not self.channels[ev.task]:
            return f"no message in flight from task {ev.task}"
        return None

    def _may_lose_event(self, ev):
        if not self.channels[ev.task]:
            return f"no message in flight from task {ev.task}"
        return self._may_crash(ev)

    def _may_request_timeout(self, ev):
        if self._k.coordinator_start:
            return "0.x: writers poll the last pending instant; no instant request goes to the coordinator"
        if self._k.executor_queue:
            i = self._queued_request(ev.task)
            if i is None:
                return f"no instant request of task {ev.task} queued on the coordinator's executor"
            if i == 0:
                return f"task {ev.task}'s instant request is running, not queued behind another job"
            return self._may_crash(ev)
        why = self._may_request_instant(ev)
        if why is not None:
            return f"no instant request of task {ev.task} in progress ({why})"
        return self._may_crash(ev)

    def _do_request_timeout(self, ev):
        self.crashes += 1
        failover.task_failover(self, ev.task)

    def _may_run_job(self, ev):
        if not self._k.executor_queue:
            return "no executor queue modelled (executor_queue off): jobs take effect when they arrive"
        if not self.executor:
            return "the coordinator's executor has no job queued"
        held = self._guard_holds_executor()
        if held is not None:
            behind = next((j for j in self.executor[1:] if type(j) is CommitJob), None)
            release = (f"the commit that would release it, {behind}, is queued behind it on the same thread"
                       if behind else "only a commit on the same thread could release it")
            return (f"the CommitGuard holds the coordinator's executor: task {held.task}'s instant request (key "
                    f"{held.key}) waits in awaitAllInstantsToCompleteIfNecessary for the buffered instant's commit, "
                    f"and {release}: tasks and coordinator wait on each other until write.commit.ack.timeout")
        head = self.executor[0]
        if type(head) is TableServiceJob and head.slow and not head.overdue:
            for t in range(self._k.parallelism):
                if self._queued_request(t) is not None:
                    return (f"the slow table-service job outlasts the RPC timeout of task {t}'s instant request "
                            f"queued behind it: the request times out first")
        return None

    def _do_run_job(self, ev):
        """The oldest job's effect (:func:`model.protocol.executor.run_head`)."""
        job = self.executor[0]
        self.executor = self.executor[1:]
        kind = type(job)
        if kind is CommitJob:
            out = self._notify_checkpoint_complete(job.checkpoint)
            if self._k.table_service != "none" and any(o == "committed" for _, _, o in out):
                self.executor = (TableServiceJob(self._k.table_service == "slow"),) + self.executor
        elif kind is RequestJob:
            instant = self._c().handle_instant_request(self.table, job.key, guard_passed=True)
            if self.writers[job.task].attempt == job.attempt:
                self._w(job.task).grant(instant)

    def _may_request_expired(self, ev):
        if not self._k.executor_queue:
            return "no executor queue modelled (executor_queue off)"
        i = self._queued_request(ev.task)
        if i is None:
            return f"no instant request of task {ev.task} queued on the coordinator's executor"
        if not self._slow_job_ahead(i):
            return f"no slow table-service job ahead of task {ev.task}'s request (that one has not timed out behind)"
        return None

    def _do_request_expired(self, ev):
        i = self._queued_request(ev.task)
        self.executor = tuple(TableServiceJob(True, True) if k < i and type(j) is TableServiceJob and j.slow else j
                              for k, j in enumerate(self.executor))
        self.expired_requests = self.expired_requests + (self.step_count + 1,)
        failover.task_failover(self, ev.task)

    def _may_lose_ack(self, ev):
        return None if ev.checkpoint in self.acks_in_flight else f"no ack of checkpoint {ev.checkpoint} in flight"

    def _may_clean(self, ev):
        if self._k.eager:
            return "EAGER policy: failed writes are rolled back by startCommit, not by clean"
        if not self.table.failed_writes():
            return "no pending instant with an expired heartbeat"
        if not self._k.clean_during_restart and self._bootstrap_in_flight():
            return "a restarted task's bootstrap events are still in flight (heartbeats not expired yet)"
        return None

    def _may_timeout(self, ev):
        if not self._k.blocking:
            return "only blocking mode waits for instants"
        if self._k.request_thread == "executor":
            held = self._guard_holds_executor()
            if held is None or held.task != ev.task:
                return f"no instant request of task {ev.task} held by the CommitGuard at the head of the executor"
            return None
        if self.writer_status(ev.task) != "blocked":
            return f"task {ev.task} is not blocked"
        if self.acks_in_flight:
            return "an ack in flight may still unblock the task"
        if any(type(j) is CommitJob for j in self.executor):
            return "a commit queued on the coordinator's executor may still release the CommitGuard"
        return None

    def _may_stop_faults(self, ev):
        return "faults already stopped" if self.faults_stopped else None

    def _may_abort(self, ev):
        p = self.pending_checkpoint
        if p is None:
            return "no checkpoint pending"
        if not self._k.partial_aborts and self._any_snapshotted(p):
            return "a task already snapshotted (partial aborts not enabled)"
        return None

    def _any_snapshotted(self, p) -> bool:
        """A task took its snapshot of ``p`` (acknowledged, or with async delivery its ack in flight)."""
        return p.acknowledged > 0 or any(w.checkpoint_id == p.id for w in self.writers)

    def _may_crash(self, ev):
        return None if self._crash_budget() else f"crash budget spent (max_crashes={self._k.max_crashes})"

    def enabled_events(self) -> list[E.Event]:
        """Every event enabled now, in a deterministic order (faults last).

        ``stop-faults`` is a driver control and is not listed. With ``task_failover="region"``
        only ``crash-task(0)`` is listed (every task restarts either way)."""
        cfg = self._k
        out: list[E.Event] = []
        P = cfg.parallelism
        coord = self.coordinator
        pend = self.pending_checkpoint
        chans = self.channels
        cstart = cfg.coordinator_start
        waits = cstart or cfg.request_thread == "executor"  # (else the wait is the CommitGuard's, would_block)
        te = _task_events(P)
        for t in range(P):
            w = self.writers[t]
            buffered = w.offset - w.flushed
            full = buffered >= cfg.buffer_size
            queued = self.executor and self._queued_request(t) is not None
            if w.offset < cfg.records and not full and not (cstart and w.instant is not None) and not queued:
                out.append(te.ingest[t])
            barrier = pend is not None and pend.tasks[t] is None and w.checkpoint_id != pend.id
            if w.instant is None:
                if ((full or barrier) and not queued
                        and not (self._instant_wait(t) if waits else coord.would_block(w.checkpoint_id))):
                    out.append(te.request[t])
            else:
                if full:
                    out.append(te.flush[t])
                if barrier:
                    out.append(te.snapshot[t])
            if chans[t]:
                out.append(te.deliver[t])
        if pend is None:
            if ((self.next_checkpoint <= cfg.max_checkpoints or self.faults_stopped) and not self._bootstrap_in_flight()
                    and not (cfg.ack_before_next_checkpoint
                             and (self.acks_in_flight or any(type(j) is CommitJob for j in self.executor)))):
                out.append(te.trigger)
        elif pend.all_tasks_done():
            out.append(te.complete)
        acks = self.acks_in_flight
        if acks:
            if self._faults_on("late-ack"):
                for n in acks:
                    out.append(te.ack(n))
            else:
                out.append(te.ack(acks[0]))
        if not cfg.eager and self.table.has_failed_writes() and (cfg.clean_during_restart
                                                                 or not self._bootstrap_in_flight()):
            out.append(te.clean)
        if self.executor and self._may_run_job(None) is None:
            out.append(_event(E.RunJob))
        if cfg.request_thread == "executor":
            held = self._guard_holds_executor()
            if held is not None:
                out.append(_event(E.InstantTimeout, held.task))
        elif cfg.blocking and not acks and not any(type(j) is CommitJob for j in self.executor):
            for t in range(P):
                if self.writer_status(t) == "blocked":
                    out.append(_event(E.InstantTimeout, t))
        if self.executor:
            out.extend(_event(E.RequestExpired, t) for t in range(P)
                       if self._may_request_expired(_event(E.RequestExpired, t)) is None)
        if self.faults_stopped:
            return out
        faults = cfg.faults
        if "lost-ack" in faults:
            for n in acks:
                out.append(te.lost_ack(n))
        if "lost-event" in faults and self.crashes < cfg.max_crashes:
            out.extend(_event(E.LoseEvent, t) for t in range(P) if chans[t])
        if "request-timeout" in faults and self.crashes < cfg.max_crashes and not cstart:
            out.extend(_event(E.RequestTimeout, t) for t in range(P)
                       if self._may_request_timeout(_event(E.RequestTimeout, t)) is None)
        if "abort" in faults and pend is not None and (cfg.partial_aborts or not self._any_snapshotted(pend)):
            out.append(_event(E.AbortCheckpoint))
        if self.crashes < cfg.max_crashes:
            if "task-crash" in faults:
                if cfg.task_failover == "region":
                    out.append(te.crash[0])
                else:
                    out.extend(te.crash)
            if "coordinator-crash" in faults:
                out.append(te.crash_coordinator)
            if "full-restart" in faults:
                out.append(te.restart_job)
        return out

    # ------------------------------------------------------------------- apply
    def apply(self, ev: E.Event, check: bool = True) -> None:
        """Apply one event; ``RuleViolation("<kind>.not-enabled")`` when its guard is false.

        ``check=False`` skips the guard: only for events just taken from :meth:`enabled_events`
        (exhaustive exploration)."""
        if check:
            why = self.is_enabled(ev)
            if why is not None:
                raise RuleViolation(f"{ev.kind}.not-enabled", f"{ev} is not enabled: {why}")
        self._canon_fp = None
        table = self.table  # (an effect changes the table in place, never replaces it)
        before = table.observations  # observe() replaces the tuple: identity tells a new observation
        effect = _EFFECT_OF_CLASS.get(type(ev))
        (effect if effect is not None else _EFFECTS[ev.kind])(self, ev)
        self.step_count += 1
        if table.observations is not before:
            new = table.observations[len(before):]
            self.observations = self.observations + tuple(Observation(self.step_count, r, d) for r, d in new)
            self.observed_rules = self.observed_rules | {r for r, _ in new}

    def successors(self, events: list, check: bool, refused: Any, restarts: dict | None = None,
                   asleep: tuple | None = None) -> list:
        """``clone()`` + ``apply(ev, check)`` for each of ``events``, in order: an explorer expands a state in
        one call instead of one per event. An event the System refuses gives ``refused(ev, violation)`` in its
        place (the explorer's dead end, :class:`checker.protocol.Refused`).

        ``restarts`` (a dict the caller keeps for one search; only with ``check`` False): the successor of a
        restart is kept under :meth:`restart_key`, and a later restart with the same key gets that successor
        again instead of a new one (its fingerprint is the one a new one would have; the explorer finds it
        known, as it would the new one).

        ``asleep`` (the explorer's sleep set, :func:`engine.bfs.search`): an event that is one of these objects
        gets None in its place, not applied (compared by identity: an equal event of another identity is applied,
        which is only slower)."""
        out: list = []
        # (parameters are compiled as objects: typed locals iterate and look up natively; the events stay any
        # iterable a model's actions give)
        sleeping: tuple | None = asleep
        memo: dict | None = restarts if not check else None
        for ev in events:
            if sleeping is not None:
                slept = False
                for x in sleeping:
                    if x is ev:
                        slept = True
                        break
                if slept:
                    out.append(None)
                    continue
            key = None
            if memo is not None:
                key = self.restart_key(ev)
                if key is not None:
                    hit = memo.get(key)
                    if hit is not None:
                        out.append(hit)
                        continue
            s = self.clone()
            try:
                s.apply(ev, check)
            except RuleViolation as exc:
                out.append(refused(ev, exc))
                continue
            if key is not None and memo is not None:
                if len(memo) >= RESTARTS_MAX:
                    memo.clear()
                memo[key] = s
            out.append(s)
        return out

    def restart_key(self, ev: E.Event) -> tuple | None:
        """For a restart from the last completed checkpoint -- ``crash-coordinator``, ``restart-job`` when the
        reset drops the coordinator's memory, ``crash-task`` with no job queued on the executor -- a value that
        determines the successor's fingerprint with the event; None for any other event (or a clock other than
        the logical one).

        A restart overwrites or drops the other parts of the fingerprint before it reads them
        (:mod:`engine.failover`): no checkpoint pending, every restarted writer restored from the checkpoint
        (only ``attempt > 0`` of its attempt is in the fingerprint, and a restart sets it alike from every
        state). A job restart also drops the acks in flight, the executor's jobs and the heartbeats, and makes
        the coordinator new or resets it to the checkpoint's state. What the restart reads or leaves as it is
        is in the key: the table (its fingerprint hash, clock and last commit key), the last completed
        checkpoint (its hash), the messages in flight (async delivery), the next checkpoint id, highest ack,
        crashes, whether faults stopped and the rules observed so far; for a task restart also the heartbeats,
        the coordinator, the acks in flight and (single-task failover) the other writers -- and which task
        failed only then, since a region failover restarts every task alike. ``tests/test_engine_speedups.py``
        checks that equal keys give equal successors."""
        kind = type(ev)
        if kind is not _CRASH_COORDINATOR and kind is not _RESTART_JOB and kind is not _CRASH_TASK:
            return None  # (most events: asked of every transition the explorer takes)
        k = self._k
        t = self.table
        clock = t.clock
        if type(clock) is not LogicalClock:
            return None
        completed = self.last_completed  # (its hash, as the table's: hashed and compared deep, it cost 3,000
        cached = self._checkpoints_hash  # instructions a look-up; kept like fingerprint_hash keeps it)
        if cached is not None and cached[1] is completed:
            done = cached[2]
        else:
            done = hash(completed)
            self._checkpoints_hash = (_STALE, completed, done, None)
        shared = (t.fingerprint_hash(), clock.created, clock.since, t.last_key, done,
                  self.next_checkpoint, self.last_ack, self.crashes, self.faults_stopped, self.observed_rules,
                  self.channels)
        if kind is _CRASH_COORDINATOR or (kind is _RESTART_JOB and not k.reset_keeps_memory):
            return (kind, shared)
        if kind is not _CRASH_TASK or self.executor:  # (the executor's key compares a request's attempt with its
            return None                               # task's, which the restart changes)
        coordinator = self._coordinator_hash
        if coordinator is None:
            coordinator = self._coordinator_hash = self.coordinator.key_hash()
        if k.task_failover == "single":
            failed = ev.task
            others: Any = tuple([w.key_hash() if w.task != failed else None for w in self.writers])
        else:
            failed, others = -1, None
        return (kind, shared, failed, others, t.heartbeats, coordinator, self.acks_in_flight)

    # ----------------------------------------------------------------- effects
    def _do_ingest(self, ev):
        self._w(ev.task).ingest()

    def _do_request_instant(self, ev):
        if self._k.executor_queue:
            w = self.writers[ev.task]
            self.executor = self.executor + (RequestJob(ev.task, w.checkpoint_id, w.attempt),)
            return
        w = self._w(ev.task)
        shared = self.coordinator.shared_instant(w.checkpoint_id)  # (the coordinator unchanged: not copied)
        w.grant(shared if shared is not None else self._c().handle_instant_request(self.table, w.checkpoint_id))

    def _do_flush(self, ev):
        self._send(ev.task, self._w(ev.task).flush(last_batch=False))

    def _send(self, t: int, message) -> None:
        """Task ``t`` sends ``message`` (:func:`model.protocol.channels.send`): into its channel with async
        event delivery, else handled at once."""
        if self._k.event_delivery == "async":
            ch = self.channels
            self.channels = ch[:t] + (ch[t] + (message,),) + ch[t + 1:]
        else:
            self._receive(t, message)

    def _receive(self, t: int, message) -> None:
        """A message from task ``t`` arrives (:func:`model.protocol.channels.receive`)."""
        if type(message) is TaskSnapshot:
            p = self.pending_checkpoint
            if p is not None and p.id == message.checkpoint_id and p.tasks[t] is None:
                self._p().acknowledge_task(t, message)
        elif message.bootstrap:
            if message.instant or self.coordinator.has_legacy_events(message.task, message.checkpoint_id):
                self._c().handle_bootstrap_event(self.table, message)
            # (else the cleanup event would null no slot: the coordinator is left as it is, not copied)
        else:
            self._c().handle_write_metadata(self.table, message)

    def _do_deliver_event(self, ev):
        t = ev.task
        ch = self.channels
        message = ch[t][0]
        self.channels = ch[:t] + (ch[t][1:],) + ch[t + 1:]
        self._receive(t, message)

    def _do_lose_event(self, ev):
        t = ev.task
        ch = self.channels
        self.channels = ch[:t] + (ch[t][1:],) + ch[t + 1:]
        self.crashes += 1
        failover.task_failover(self, t)

    def _do_trigger(self, ev):
        n = self.next_checkpoint
        self.next_checkpoint = n + 1
        cs = self.coordinator.checkpoint(n) if self._k.snapshot_order == "coordinator-first" else None
        self.pending_checkpoint = PendingCheckpoint(n, cs, self._k.parallelism)
        self._own_p = True

    def _do_snapshot(self, ev):
        p = self.pending_checkpoint
        w = self._w(ev.task)
        sent, state = w.snapshot_state(p.id, self._k.task_state == "append", self._k.coordinator_start)
        self._send(ev.task, sent)
        ack = _new(TaskSnapshot, (w.offset, p.id, state))
        if self._k.event_delivery == "async" and not self._k.ack_behind_events:
            self._receive(ev.task, ack)  # broken: the acknowledgement overtakes the events in flight
        else:
            self._send(ev.task, ack)

    def _do_complete(self, ev):
        p = self.pending_checkpoint
        cs = p.coordinator_state if p.coordinator_state is not None else self.coordinator.checkpoint(p.id)
        done = CompletedCheckpoint(p.id, cs, tuple(p.tasks))
        self._check_coverage(done)
        self.last_completed = done
        self.pending_checkpoint = None
        self.acks_in_flight = self.acks_in_flight + (p.id,)
        if self.faults_stopped:
            self.checkpoints_after_stop += 1

    def _check_coverage(self, ckp: CompletedCheckpoint) -> None:
        """I12 monitor: each uncommitted, flushed interval (key < n with data in the buffers) is
        covered by exactly one of the coordinator state and the task states."""
        coord_keys = {k for k, _ in ckp.coordinator_state}
        task_keys = {e.checkpoint_id for snap in ckp.tasks for e in snap.state}
        needed = {k for k, e in self.coordinator.buffers.items() if k < ckp.id and e.has_statuses()}
        missing = sorted(needed - coord_keys - task_keys)
        twice = sorted(coord_keys & task_keys)
        if missing:
            self.table.observe("I12.state-coverage",
                               f"checkpoint {ckp.id}: flushed uncommitted key(s) {missing} are in no state "
                               f"(coordinator state keys {sorted(coord_keys)}, task state keys {sorted(task_keys)})")
        if twice:
            self.table.observe("I12.state-coverage",
                               f"checkpoint {ckp.id}: key(s) {twice} are in the coordinator state and in task state")
        late = sorted({m.checkpoint_id for ch in self.channels for m in ch
                       if type(m) is WriteMetadataEvent and m.checkpoint_id < ckp.id})
        if late:
            self.table.observe("I11.events-before-ack",
                               f"checkpoint {ckp.id} completed with write metadata of key(s) {late} still in flight")

    def _do_deliver_ack(self, ev):
        self.acks_in_flight = tuple(n for n in self.acks_in_flight if n != ev.checkpoint)
        if self._k.executor_queue:
            self.executor = self.executor + (CommitJob(ev.checkpoint),)
            return
        self._notify_checkpoint_complete(ev.checkpoint)

    def _notify_checkpoint_complete(self, n: int) -> list:
        """``notifyCheckpointComplete(n)`` on the coordinator (at delivery, or as the executor's job)."""
        self.last_ack = max(self.last_ack, n)
        out = self._c().notify_checkpoint_complete(self.table, n)
        if self._k.coordinator_start and any(o == "empty-ack" for _, _, o in out):
            # 0.x CommitAckEvent to every task: handleOperatorEvent clears confirming
            for t in range(self._k.parallelism):
                if self.writers[t].confirming is not None:
                    self._w(t).confirming = None
        return out

    def _do_lose_ack(self, ev):
        self.acks_in_flight = tuple(n for n in self.acks_in_flight if n != ev.checkpoint)

    def _do_clean(self, ev):
        self.table.clean()

    def _do_timeout(self, ev):
        if self._k.request_thread == "executor":  # tasks and coordinator waited on each other
            self.guard_deadlocks = self.guard_deadlocks + (self.step_count + 1,)
        elif self.faults_stopped:
            self.stalls_after_stop = self.stalls_after_stop + (self.step_count + 1,)
        if self._k.coordinator_start:  # 0.x: instantToWrite's TimeWait fails the task
            failover.task_failover(self, ev.task)
        else:
            failover.global_failover(self, recreate_coordinator=False)

    def _do_stop_faults(self, ev):
        self.faults_stopped = True

    def _do_abort(self, ev):
        self.pending_checkpoint = None

    def _do_crash_task(self, ev):
        self.crashes += 1
        failover.task_failover(self, ev.task)

    def _do_crash_coordinator(self, ev):
        self.crashes += 1
        failover.global_failover(self, recreate_coordinator=True)

    def _do_restart_job(self, ev):
        self.crashes += 1
        failover.global_failover(self, recreate_coordinator=False)

    # ------------------------------------------------------------------- drain
    def is_quiescent(self, executor: bool = True) -> bool:
        """Nothing in flight: no checkpoint pending, no ack in flight, no buffered or
        unsnapshotted data in any task, no write statuses waiting in the coordinator, no job queued on its
        executor (unless ``executor`` is False)."""
        if self.pending_checkpoint is not None or self.acks_in_flight or any(self.channels):
            return False
        if executor and self.executor:
            return False
        for w in self.writers:
            if w.offset != w.flushed or w.interval:
                return False
        return not any(e.has_statuses() for e in self.coordinator.buffers.values())

    def drain(self, max_checkpoints: int = DRAIN_LIMIT, trace: list | None = None) -> list[E.Event]:
        """Stop faults, then run checkpoints with delivered acks until quiescent.

        Deterministic: deliver acks oldest first; complete or trigger a checkpoint, each task
        getting an instant and snapshotting in task order; a task blocked (blocking mode, the
        ack that would free it lost) times out. Gives up after ``max_checkpoints`` checkpoints
        (liveness is judged by :func:`model.invariants.protocol.check_drained`). Returns the
        events applied, in order, so a trace can include them; ``trace``, when given, gets each event
        before it is applied (so it also holds an event the System refused, which ends the drain).
        """
        out: list[E.Event] = []

        def do(ev):
            if trace is not None:
                trace.append(ev)
            self.apply(ev)
            out.append(ev)

        def deliver_messages():
            for t in range(self._k.parallelism):
                while self.channels[t]:
                    do(E.DeliverEvent(t))

        def run_jobs():
            while self.executor and not self._slow_job_ahead(1) and self._guard_holds_executor() is None:
                do(E.RunJob())

        def answer(t):
            while self._queued_request(t) is not None:
                if self._may_request_expired(E.RequestExpired(t)) is None:
                    do(E.RequestExpired(t))
                    return False
                held = self._guard_holds_executor()
                if held is not None:
                    do(E.InstantTimeout(held.task))
                    return False
                do(E.RunJob())
            return True

        if not self.faults_stopped:
            do(E.StopFaults())
        rounds = 0
        while True:
            deliver_messages()
            while self.acks_in_flight:
                do(E.DeliverAck(self.acks_in_flight[0]))
            run_jobs()
            held = self._guard_holds_executor()
            if held is not None and rounds < max_checkpoints:
                do(E.InstantTimeout(held.task))
                rounds += 1
                continue
            if self.is_quiescent(executor=False) or rounds >= max_checkpoints:
                break
            if self.pending_checkpoint is None:
                do(E.TriggerCheckpoint())
            aborted = False
            for t in range(self._k.parallelism):
                if self.pending_checkpoint is None or self.pending_checkpoint.tasks[t] is not None:
                    continue
                if self.writers[t].instant is None:
                    if self._instant_wait(t):
                        do(E.InstantTimeout(t))
                        aborted = True
                        break
                    if self._queued_request(t) is None:
                        do(E.RequestInstant(t))
                    if not answer(t):
                        aborted = True
                        break
                do(E.SnapshotTask(t))
            rounds += 1
            if aborted:
                continue
            deliver_messages()
            do(E.CompleteCheckpoint())
        while self.executor:
            expired = next((t for t in range(self._k.parallelism)
                            if self._may_request_expired(E.RequestExpired(t)) is None), None)
            held = self._guard_holds_executor()
            if expired is not None:
                do(E.RequestExpired(expired))
            elif held is not None:
                do(E.InstantTimeout(held.task))
            else:
                do(E.RunJob())
        if not self._k.eager and self.table.failed_writes():
            do(E.Clean())
        return out

    # ------------------------------------------------------------ read access
    def pending_instants(self) -> list[str]:
        return self.table.pending_instants()

    def committed_offsets(self) -> Counter:
        """Multiset of committed ``(split, offset)`` pairs (fast form of :meth:`committed_records`)."""
        c: Counter = Counter()
        for s in self.table.committed_statuses():
            for o in range(s.start, s.end):
                c[(s.task, o)] += 1
        return c

    def committed_records(self) -> Counter:
        """What a reader sees, as a multiset of :class:`Record` (duplicates count twice)."""
        src = self.source
        return Counter({src.record(t, o): n for (t, o), n in self.committed_offsets().items()})

    def table_view(self) -> dict[str, int]:
        """Latest value per record key (upsert view) of the committed records."""
        return {r.key: r.value for r in self.committed_records()}

    def emitted_offsets(self, upto: str = "checkpoint") -> set:
        """``(split, offset)`` read by the tasks: up to the last completed checkpoint, or all read."""
        if upto == "checkpoint":
            if self.last_completed is None:
                return set()
            return {(t, o) for t, snap in enumerate(self.last_completed.tasks) for o in range(snap.offset)}
        return {(w.task, o) for w in self.writers for o in range(w.offset)}

    def emitted_records(self, upto: str = "checkpoint") -> list[Record]:
        return [self.source.record(t, o) for t, o in sorted(self.emitted_offsets(upto))]

    def observed(self, rule: str) -> list[Observation]:
        if rule not in self.observed_rules:
            return []
        return [o for o in self.observations if o.rule == rule]

    # ------------------------------------------------------------ task renaming
    def permute_tasks(self, perm) -> "System":
        """This state with task ``t`` renamed ``perm[t]`` everywhere (a new System; this one is unchanged).

        For symmetry reduction (:mod:`checker.symmetry`): writer tasks of one configuration are
        interchangeable, as task ``t`` always reads source split ``t`` and every split holds
        ``config.records`` records (the split is renamed with its task). Renamed together: the writer
        tasks (their ``task``, the statuses of their interval and the events of their state), the
        channels in flight, the coordinator's buffers (one slot per task), the pending and the last
        completed checkpoint (per-task snapshots, the coordinator state's slots) and the table's commit
        metadata (``WriteStatus.task``). Commit metadata is kept as its statuses sorted: no rule reads
        their order (``Table.duplicated_offsets`` and :meth:`committed_offsets` count them), and after a
        renaming the order a commit would have written (task order) is that of the new ids. Everything
        else (instants, checkpoint ids, acks, crash count, observed rules) names no task.
        Observation texts (not in the fingerprint) keep the old numbers."""
        n = self._k.parallelism
        p = tuple(perm)
        if sorted(p) != list(range(n)):
            raise ValueError(f"not a permutation of the {n} tasks: {perm!r}")
        from model.protocol.values import BufferEntry, WriteStatus
        from .coordinator import EventBuffer

        def st(s):
            return WriteStatus(p[s.task], s.start, s.end)

        def ev(e):
            return None if e is None else e._replace(task=p[e.task], statuses=tuple(st(s) for s in e.statuses))

        def msg(m):
            if type(m) is TaskSnapshot:
                return TaskSnapshot(m.offset, m.checkpoint_id, tuple(ev(e) for e in m.state))
            return ev(m)

        def per_task(items, f):
            out = [None] * n
            for t, x in enumerate(items):
                out[p[t]] = f(x)
            return out

        def entry(be):
            return BufferEntry(be.instant, tuple(per_task(be.slots, ev)))

        def cstate(cs):
            return None if cs is None else tuple((k, entry(be)) for k, be in cs)

        def snap(sn):
            return None if sn is None else msg(sn)

        s = self.clone()
        writers = []
        for w in self.writers:
            w2 = w.copy()
            w2.task = p[w.task]
            w2.interval = tuple(st(x) for x in w.interval)
            w2.state = tuple(ev(e) for e in w.state)
            writers.append(w2)
        s.writers = per_task(writers, lambda w: w)
        s._own_w = None
        s.channels = tuple(per_task(self.channels, lambda ch: tuple(msg(m) for m in ch)))
        s.executor = tuple(RequestJob(p[j.task], j.key, j.attempt) if type(j) is RequestJob else j
                           for j in self.executor)
        c = self.coordinator.copy()
        c.buffers = {k: EventBuffer.thaw(entry(e.frozen())) for k, e in self.coordinator.buffers.items()}
        c._owned = None
        s.coordinator, s._own_c = c, True
        if self.pending_checkpoint is not None:
            pc = self.pending_checkpoint.copy()
            pc.coordinator_state = cstate(pc.coordinator_state)
            pc.tasks = per_task(pc.tasks, snap)
            pc._cs_h = pc._tasks_h = None  # (its parts replaced: their hashes with them)
            s.pending_checkpoint = pc
        s._own_p = True
        lc = self.last_completed
        if lc is not None:
            s.last_completed = CompletedCheckpoint(lc.id, cstate(lc.coordinator_state), tuple(per_task(lc.tasks, snap)))
        meta = s.table._meta()
        for instant, statuses in self.table.metadata.items():
            meta[instant] = tuple(sorted(st(x) for x in statuses))
        s._coordinator_hash = s._writers_hash = s._checkpoints_hash = None
        s._canon_c = s._canon_w = s._canon_k = s._canon_ch = s._canon_fp = None
        return s

    # -------------------------------------------------------------- fingerprint
    def fingerprint(self) -> tuple:
        """Hashable canonical state. Requested times are canonical by construction (the k-th
        instant of any run has the same time, see :class:`LogicalClock`); completion times and
        history kept only for explanations (commit log, step count, observation text) are left
        out. Observations enter as the set of rules broken so far (they are sticky)."""
        return self._fingerprint_fields(self.table.fingerprint(), self.coordinator.key(),
                                        tuple(w.key() for w in self.writers),
                                        (self._pending_key(), self.last_completed))

    def fingerprint_hash(self) -> int:
        """A hash of :meth:`fingerprint`'s fields, for explorers that keep only hashes (equal
        fingerprints give equal hashes). The nested parts are hashed once per change instead of on
        every call, as most events change one of them at most: the table's (cached by the table),
        the coordinator's and the writer tasks' (dropped by :meth:`_c` and :meth:`_w`; each task's key hash is
        kept on the task, so the tasks an event left alone are not hashed again) and the
        checkpoints' (kept while they are the same objects: the completed one is an immutable value and the
        pending one changes in place only through :meth:`_p`, which drops it)."""
        coordinator = self._coordinator_hash
        if coordinator is None:
            coordinator = self._coordinator_hash = self.coordinator.key_hash()
        writers = self._writers_hash
        if writers is None:
            writers = self._writers_hash = hash(tuple([w.key_hash() for w in self.writers]))
        cached = self._checkpoints_hash  # (pending, last completed, the completed one's hash, both parts' hash)
        pending, completed = self.pending_checkpoint, self.last_completed
        if cached is None or cached[0] is not pending or cached[1] is not completed:
            done = cached[2] if cached is not None and cached[1] is completed else hash(completed)
            cached = self._checkpoints_hash = (pending, completed, done,
                                               hash((None if pending is None else pending.key_hash(), done)))
        return hash(self._fingerprint_fields(self.table.fingerprint_hash(), coordinator, writers, cached[3]))

    # ------------------------------------------------------ symmetric fingerprint
    def _canonical_parts(self) -> tuple:
        """The parts of :mod:`engine.canonical`'s form (table, coordinator, writers, checkpoints, channels),
        computed afresh (the exact form is not on the explorers' path; raises :class:`engine.canonical.Foreign`)."""
        n = self._k.parallelism
        return (self.table.canonical_part(n), canonical.coordinator_part(self.coordinator, n),
                canonical.writers_part(self.writers),
                canonical.combine(canonical.checkpoint_part(self.pending_checkpoint, n),
                                  canonical.checkpoint_part(self.last_completed, n)),
                canonical.channels_part(self.channels))

    def _canonical_hashes(self) -> tuple:
        """The hashes of :meth:`_canonical_parts` (each ``(shared hash, column hashes)``, :func:`engine.canonical.
        hashes`), each computed once per change and kept, the parts themselves not: a state waiting in the
        explorer's queue holds a few ints per part, not the parts' tuples (raises
        :class:`engine.canonical.Foreign`)."""
        n = self._k.parallelism
        c = self._canon_c
        if c is None:
            c = self._canon_c = canonical.hashes(canonical.coordinator_part(self.coordinator, n))
        w = self._canon_w
        if w is None:
            w = self._canon_w = canonical.writers_hashes(self.writers)
        k = self._canon_k  # (pending, its hashes, last completed, its hashes, both's hashes)
        pending, completed = self.pending_checkpoint, self.last_completed
        if k is None or k[0] is not pending or k[2] is not completed:
            kp = k[1] if k is not None and k[0] is pending else canonical.checkpoint_hashes(pending, n)
            kc = (k[3] if k is not None and k[2] is completed
                  else canonical.hashes(canonical.checkpoint_part(completed, n)))
            k = self._canon_k = (pending, kp, completed, kc, canonical.combine_hashes(kp, kc))
        ch = self._canon_ch
        if ch is None or ch[0] is not self.channels:
            ch = self._canon_ch = (self.channels, canonical.hashes(canonical.channels_part(self.channels)))
        return self.table.canonical_hashes(n), c, w, k[4], ch[1]

    def _canonical_shared(self) -> tuple:
        """The fingerprint's fields that name no task and are not in a part."""
        t = self.table
        return (t.heartbeats, t.last_key, self.next_checkpoint, self.acks_in_flight, self.last_ack, self.crashes,
                self.faults_stopped, self.observed_rules, self._executor_key() if self.executor else ())

    def _executor_names_a_task(self) -> bool:
        """A queued instant request names its task: the column form does not cover the executor queue, so
        such a state is canonicalised by renaming instead (commit and table-service jobs name no task)."""
        return any(type(j) is RequestJob for j in self.executor)

    def canonical_fingerprint(self) -> tuple | None:
        """A fingerprint equal for this state and every renaming of its tasks (:meth:`permute_tasks`) and
        different for states that are not renamings of one another (:mod:`engine.canonical`), or None when a
        task-indexed part names another task (then rename by every permutation instead). Columns are
        sorted by hash: two different columns of equal hash may make two renamings of a state differ (a
        state kept twice, never one lost)."""
        if self.executor and self._executor_names_a_task():
            return None
        try:
            parts = self._canonical_parts()
        except canonical.Foreign:
            return None
        n = self._k.parallelism
        cols = sorted([tuple([p[1][t] for p in parts]) for t in range(n)], key=hash)
        return ("canonical", tuple([p[0] for p in parts]), self._canonical_shared(), tuple(cols))

    def canonical_fingerprint_hash(self) -> int | None:
        """A hash of :meth:`canonical_fingerprint` (equal for renamings of a state; None likewise), from the
        parts' cached hashes: each task's column hash from its parts' hashes, sorted."""
        kept = self._canon_fp
        if kept is not None:
            return kept
        if self.executor and self._executor_names_a_task():
            return None
        try:
            parts = self._canonical_hashes()
        except canonical.Foreign:
            return None
        tbp: tuple = parts[0]
        cp: tuple = parts[1]
        kp: tuple = parts[3]
        n = self._k.parallelism
        tb: tuple = tbp[1]
        c: tuple = cp[1]
        w: tuple = parts[2][1]
        k: tuple = kp[1]
        ch: tuple = parts[4][1]
        cols: tuple
        if n == 2:
            a, b = hash((tb[0], c[0], w[0], k[0], ch[0])), hash((tb[1], c[1], w[1], k[1], ch[1]))
            cols = (a, b) if a <= b else (b, a)
        else:
            cols = tuple(sorted([hash((tb[t], c[t], w[t], k[t], ch[t])) for t in range(n)]))
        out = self._canon_fp = hash((tbp[0], cp[0], kp[0], self._canonical_shared(), cols))
        return out

    def _pending_key(self) -> tuple | None:
        p = self.pending_checkpoint
        return None if p is None else p.key()

    def _fingerprint_fields(self, table, coordinator, writers, checkpoints) -> tuple:
        """The fingerprint's fields, its nested parts given (as themselves or as their hashes)."""
        return (
            table,
            self.table.heartbeats,
            self.table.last_key,
            coordinator,
            writers,
            checkpoints,
            self.next_checkpoint,
            self.acks_in_flight,
            self.last_ack,
            self.crashes,
            self.faults_stopped,
            self.observed_rules,
            self.channels,
            self._executor_key() if self.executor else (),
        )

    def _executor_key(self) -> tuple:
        """The executor's jobs for the fingerprint: a request as (task, key, whether its attempt is the task's
        current one) -- the writers' keys keep only ``attempt > 0``, so an attempt number would not do."""
        return tuple(("request", j.task, j.key, j.attempt == self.writers[j.task].attempt)
                     if type(j) is RequestJob else j for j in self.executor)

    def __repr__(self) -> str:
        return (f"System({self._k.mode}, tv{self._k.table_version}, step {self.step_count}, "
                f"next ckp {self.next_checkpoint}, pending {self.pending_checkpoint and self.pending_checkpoint.id}, "
                f"acks {self.acks_in_flight})")

    def describe(self) -> str:
        """A multi-line, human-readable dump of the state (for counterexamples)."""
        lines = [repr(self)]
        for w in self.writers:
            lines.append(f"  {w!r} status={self.writer_status(w.task)}")
        for k, e in sorted(self.coordinator.buffers.items()):
            lines.append(f"  buffer key {k}: {e}")
        for t, ch in enumerate(self.channels):
            if ch:
                lines.append(f"  in flight from task {t}: "
                             f"{[f'ack(ckp {m.checkpoint_id})' if type(m) is TaskSnapshot else str(m) for m in ch]}")
        if self.executor:
            lines.append(f"  coordinator executor: {[str(j) for j in self.executor]}")
        lines.append(f"  timeline: {[str(i) for i in self.table.timeline.instants()]}")
        lines.append(f"  heartbeats: {sorted(self.table.heartbeats)}")
        if self.last_completed:
            lines.append(f"  last completed checkpoint {self.last_completed.id}: offsets {self.last_completed.offsets()}, "
                         f"coordinator state keys {[k for k, _ in self.last_completed.coordinator_state]}")
        return "\n".join(lines)


#: Every action's guard and effect, by event kind (the table of the module docstring).
_ACTIONS = {
    "ingest": ("_may_ingest", "_do_ingest"),
    "request-instant": ("_may_request_instant", "_do_request_instant"),
    "flush": ("_may_flush", "_do_flush"),
    "trigger-checkpoint": ("_may_trigger", "_do_trigger"),
    "snapshot-task": ("_may_snapshot", "_do_snapshot"),
    "complete-checkpoint": ("_may_complete", "_do_complete"),
    "deliver-ack": ("_may_deliver_ack", "_do_deliver_ack"),
    "lose-ack": ("_may_lose_ack", "_do_lose_ack"),
    "clean": ("_may_clean", "_do_clean"),
    "instant-timeout": ("_may_timeout", "_do_timeout"),
    "stop-faults": ("_may_stop_faults", "_do_stop_faults"),
    "abort-checkpoint": ("_may_abort", "_do_abort"),
    "crash-task": ("_may_crash", "_do_crash_task"),
    "crash-coordinator": ("_may_crash", "_do_crash_coordinator"),
    "restart-job": ("_may_crash", "_do_restart_job"),
    "deliver-event": ("_may_deliver_event", "_do_deliver_event"),
    "lose-event": ("_may_lose_event", "_do_lose_event"),
    "request-timeout": ("_may_request_timeout", "_do_request_timeout"),
    "run-job": ("_may_run_job", "_do_run_job"),
    "request-expired": ("_may_request_expired", "_do_request_expired"),
}
assert set(_ACTIONS) == set(E.EVENT_TYPES), "every event kind needs a guard and an effect"
_GUARDS = {k: getattr(System, g) for k, (g, _) in _ACTIONS.items()}
_EFFECTS: Final = {k: getattr(System, e) for k, (_, e) in _ACTIONS.items()}
#: the effects by event class (:meth:`System.apply`: the kind is not read, a class attribute, per event applied)
_EFFECT_OF_CLASS: Final = {cls: _EFFECTS[kind] for kind, cls in E.EVENT_TYPES.items()}
assert set(FAULTS) == {c.fault for c in E.EVENT_TYPES.values() if c.fault} | {"late-ack"}


def _preconditions(ev: E.Event) -> tuple:
    """What :meth:`System.is_enabled` asks of ``ev`` before its guard: whether it names a task, the
    fault that enables it (None: not a fault) and the guard of its kind (None: unknown kind)."""
    return getattr(ev, "task", None) is not None, ev.fault, _GUARDS.get(ev.kind)


#: :func:`_preconditions` of each event class, looked up by ``type(ev)`` (what they say depends on the
#: class alone: ``task`` is a field of the class or of none of its events); another class is asked.
_PRECONDITIONS = {cls: (any(f.name == "task" for f in fields(cls)), cls.fault, _GUARDS[kind])
                  for kind, cls in E.EVENT_TYPES.items()}


# ------------------------------------------------------------------- the explorers' calls per state
def enabled_events_of(s: Any) -> Any:
    """``s.enabled_events()`` (any state type: a dead end has its own), called directly for a :class:`System`
    (``operator.methodcaller`` looked the method up by name and bound it per call)."""
    if type(s) is System:
        sy: System = s
        return sy.enabled_events()
    return s.enabled_events()


def fingerprint_hash_of(s: Any) -> Any:
    """``s.fingerprint_hash()``, likewise."""
    if type(s) is System:
        sy: System = s
        return sy.fingerprint_hash()
    return s.fingerprint_hash()


def canonical_fingerprint_hash_of(s: Any) -> Any:
    """``s.canonical_fingerprint_hash()``, likewise."""
    if type(s) is System:
        sy: System = s
        return sy.canonical_fingerprint_hash()
    return s.canonical_fingerprint_hash()
