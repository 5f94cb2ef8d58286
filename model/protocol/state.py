"""The protocol's state, as immutable values (the VARIABLES of the spec), its initial value and read helpers.

A :class:`State` is the whole system at one moment of a run: the writer tasks, the coordinator, the table,
the pending and last completed checkpoints, the acks in flight, the crash budget spent and whether faults
have stopped. Beside it, :class:`History` holds the *auxiliary history variables* (TLA+ style): what
happened so far -- every instant assigned to a checkpoint key, every ack processed, every commit attempt and
its outcome, every rollback, the coverage of every completed checkpoint. No rule reads the history; the
invariants (:mod:`model.invariants.protocol`) are predicates over state and history.

Every value here is frozen; an action builds a new state with :func:`dataclasses.replace`.

Time: the only time source is the logical clock (:func:`model.protocol.values.logical_time`): the table
keeps two counters, ``created`` (requested times so far) and ``since`` (completions since the last one).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

from ..instant import State as InstantState
from .config import ProtocolConfig
from .source import Record, Source
from .values import (BufferEntry, CommitJob, CompletedCheckpoint, RequestJob, TableServiceJob,  # noqa: F401
                     TaskSnapshot, WriteMetadataEvent)

# ------------------------------------------------------------------------------------------- variables


@dataclass(frozen=True)
class Writer:
    """One write subtask (``StreamWriteFunction``): its split offset, the buffer ``[flushed, offset)``, its
    last-known checkpoint id (``checkpointId``, -1 on a fresh start), the instant granted for the next flush
    (None: none), the instant of the interval's last flush (``currentInstant``), the statuses flushed since
    the last snapshot, its ``write-metadata-state`` and its attempt number.

    ``confirming`` (0.x coordinator-started instants only; None otherwise): the writer waits for the
    coordinator's next instant (``AbstractStreamWriteFunction#confirming``, set by
    ``StreamWriteFunction#flushRemaining`` after the checkpoint flush and by ``initializeState``); it holds
    the writer's ``currentInstant`` then (the instant of its last flush, or after a restart the last pending
    instant it found, "" for none). Cleared when ``instantToWrite`` sees another pending instant (or the same
    one with no data to write) or a ``CommitAckEvent`` arrives."""

    task: int
    offset: int = 0
    flushed: int = 0
    checkpoint_id: int = -1
    instant: str | None = None
    current_instant: str = ""
    interval: tuple = ()   # tuple[WriteStatus]
    state: tuple = ()      # tuple[WriteMetadataEvent]
    attempt: int = 0
    confirming: str | None = None

    @property
    def buffered(self) -> int:
        return self.offset - self.flushed


@dataclass(frozen=True)
class CoordinatorState:
    """``StreamWriteOperatorCoordinator``: its ``EventBuffers`` (checkpoint-id key -> :class:`BufferEntry`,
    as ``(key, entry)`` pairs in ascending key order) and the newest instant it started (``this.instant``)."""

    buffers: tuple = ()
    instant: str = ""

    def entry(self, key: int) -> BufferEntry | None:
        for k, e in self.buffers:
            if k == key:
                return e
        return None

    def keys(self) -> tuple:
        return tuple(k for k, _ in self.buffers)


@dataclass(frozen=True)
class TableState:
    """The data table: its timeline (the visible :class:`~model.instant.Instant` of every instant, ordered by
    requested time), the commit metadata of completed instants (``(instant, statuses)`` pairs, ascending
    instant), the instants whose heartbeat is alive, and the logical clock's counters."""

    timeline: tuple = ()
    metadata: tuple = ()
    heartbeats: frozenset = frozenset()
    created: int = 0
    since: int = 0


@dataclass(frozen=True)
class Pending:
    """Flink's ``PendingCheckpoint``: checkpoint ``id``, the coordinator's snapshot (None until taken) and
    per task its :class:`TaskSnapshot` (None until the barrier reached it)."""

    id: int
    coordinator_state: tuple | None
    tasks: tuple

    @property
    def acknowledged(self) -> int:
        return sum(1 for s in self.tasks if s is not None)

    def all_tasks_done(self) -> bool:
        return all(s is not None for s in self.tasks)


# ------------------------------------------------------------------------------ history variables


class Assignment(NamedTuple):
    """At ``step``, in coordinator ``epoch`` (resets so far), checkpoint ``key`` was given ``instant``
    (a new instant, a new entry made for an event, or an entry restored from checkpoint state)."""

    step: int
    epoch: int
    key: int
    instant: str


class AckProcessed(NamedTuple):
    """At ``step``, in coordinator ``epoch``, ``notifyCheckpointComplete(checkpoint)`` was processed."""

    step: int
    epoch: int
    checkpoint: int


class CommitAttempt(NamedTuple):
    """At ``step``, ``commitInstant`` of ``key`` (``how``: "commit" on an ack, "recommit" on a restore or
    bootstrap) ended with ``outcome``: "committed", "already-completed" (a second completion),
    "rolled-back" (the instant was gone), "empty" (nothing to commit) or "skipped" (idempotent recommit)."""

    step: int
    key: int
    instant: str
    how: str
    outcome: str


class CheckpointCoverage(NamedTuple):
    """Checkpoint ``checkpoint`` completed at ``step``: the keys with flushed, uncommitted data below it
    (``needed``), the keys of its coordinator state and of its task states, whether faults had stopped, and
    the keys below it of write-metadata events still in flight (``late_keys``; async event delivery)."""

    step: int
    checkpoint: int
    needed: frozenset
    coordinator_keys: frozenset
    task_keys: frozenset
    after_stop: bool
    late_keys: frozenset = frozenset()


@dataclass(frozen=True)
class History:
    """The auxiliary history variables: read by invariants only, never by a guard or an effect's outcome."""

    steps: int = 0                 # events applied
    epoch: int = 0                 # coordinator resets (resetToCheckpoint) so far
    assignments: tuple = ()        # tuple[Assignment]
    acks: tuple = ()               # tuple[AckProcessed]
    commits: tuple = ()            # tuple[CommitAttempt]
    rollbacks: tuple = ()          # instants rolled back, in order
    checkpoints: tuple = ()        # tuple[CheckpointCoverage]
    stalls: tuple = ()             # steps of the instant timeouts taken after faults stopped
    expired: tuple = ()            # steps of the requests that expired behind a slow executor job (any time)
    deadlocks: tuple = ()          # steps of the CommitGuard timeouts of a request holding the executor (any time)


@dataclass(frozen=True)
class View:
    """The abstract state: a :class:`State` without its constants (config, seed) and its history. What
    :func:`model.protocol.spec.view` returns and :func:`engine.refinement.abstract` builds from an engine."""

    writers: tuple
    coordinator: CoordinatorState
    table: TableState
    pending: Pending | None
    last_completed: CompletedCheckpoint | None
    next_checkpoint: int
    acks_in_flight: tuple
    crashes: int
    faults_stopped: bool
    channels: tuple = ()
    executor: tuple = ()


@dataclass(frozen=True)
class State:
    """The whole protocol state (see the module docstring)."""

    config: ProtocolConfig
    seed: int
    writers: tuple            # tuple[Writer], one per task
    coordinator: CoordinatorState
    table: TableState
    pending: Pending | None
    last_completed: CompletedCheckpoint | None
    next_checkpoint: int
    acks_in_flight: tuple     # checkpoint ids whose notification is in flight, oldest first
    crashes: int
    faults_stopped: bool
    history: History
    #: per task, the messages in flight to the coordinator, oldest first (async event delivery): a
    #: :class:`WriteMetadataEvent` (bootstrap-flagged when sent at (re)start) or the task's checkpoint
    #: acknowledgement, a :class:`TaskSnapshot`. Always empty with ``event_delivery="sync"``.
    channels: tuple = ()
    #: the coordinator's executor (``executor_queue``): its jobs in order, the running one first
    #: (:class:`CommitJob`, :class:`RequestJob`, :class:`TableServiceJob`). Always empty without the queue.
    executor: tuple = ()

    def view(self) -> View:
        return View(self.writers, self.coordinator, self.table, self.pending, self.last_completed,
                    self.next_checkpoint, self.acks_in_flight, self.crashes, self.faults_stopped, self.channels,
                    self.executor)


def initial_state(config: ProtocolConfig | None = None, seed: int = 0) -> State:
    """Init: every task at offset 0 with checkpoint id -1, an empty coordinator, an empty timeline, no
    checkpoint, next checkpoint id 1, no ack in flight, no crash, faults on."""
    cfg = config if config is not None else ProtocolConfig()
    return State(cfg, seed, tuple(Writer(t) for t in range(cfg.parallelism)), CoordinatorState(), TableState(),
                 None, None, 1, (), 0, False, History(), ((),) * cfg.parallelism)


# ------------------------------------------------------------------------------------ read helpers


def has_statuses(entry: BufferEntry) -> bool:
    """Some slot of the entry holds flushed data."""
    return any(s is not None and s.statuses for s in entry.slots)


def entry_statuses(entry: BufferEntry) -> tuple:
    """Every slot's write statuses, in task order (what a commit of the entry writes)."""
    return tuple(st for s in entry.slots if s is not None for st in s.statuses)


def instant_state(table: TableState, instant: str) -> InstantState | None:
    """The visible state of a data instant, None when it is not on the timeline (rolled back / never made)."""
    for i in table.timeline:
        if i.requested_time == instant:
            return i.state
    return None


def is_completed(table: TableState, instant: str) -> bool:
    return instant_state(table, instant) is InstantState.COMPLETED


def is_pending(table: TableState, instant: str) -> bool:
    """``filterPendingExcludingCompaction().containsInstant``."""
    st = instant_state(table, instant)
    return st is not None and st is not InstantState.COMPLETED


def pending_instants(s: State) -> list[str]:
    """Pending data instants, ascending."""
    return sorted(i.requested_time for i in s.table.timeline if i.state is not InstantState.COMPLETED)


def failed_writes(s: State) -> list[str]:
    """Pending data instants whose heartbeat expired (what a LAZY clean rolls back)."""
    return [t for t in pending_instants(s) if t not in s.table.heartbeats]


def snapshotted(s: State, t: int) -> bool:
    """Task ``t`` took its snapshot of the pending checkpoint (its last-known checkpoint id is the pending
    one); with async event delivery its acknowledgement may still be in flight."""
    return s.pending is not None and s.writers[t].checkpoint_id == s.pending.id


def barrier_waiting(s: State, t: int) -> bool:
    """A checkpoint is pending and its barrier has not been processed by task ``t`` yet."""
    return s.pending is not None and s.pending.tasks[t] is None and not snapshotted(s, t)


def bootstrap_in_flight(s: State) -> bool:
    """A restarted task's bootstrap event is still in flight (the task is not RUNNING yet)."""
    return any(isinstance(m, WriteMetadataEvent) and m.bootstrap for ch in s.channels for m in ch)


def late_keys(s: State, below: int) -> frozenset:
    """Keys ``< below`` of write-metadata events still in flight."""
    return frozenset(m.checkpoint_id for ch in s.channels for m in ch
                     if isinstance(m, WriteMetadataEvent) and m.checkpoint_id < below)


def buffer_full(s: State, t: int) -> bool:
    return s.writers[t].buffered >= s.config.buffer_size


def needs_instant(s: State, t: int) -> bool:
    """Task ``t`` holds no grant and must flush: its buffer is full or a barrier is waiting."""
    return s.writers[t].instant is None and (buffer_full(s, t) or barrier_waiting(s, t))


def would_block(s: State, key: int) -> bool:
    """Blocking mode (``CommitGuard``): a request that needs a new instant waits while any buffer entry holds
    an event (the previous instant is not committed yet)."""
    cfg = s.config
    if not (cfg.blocking and cfg.commit_guard) or cfg.coordinator_start:
        return False  # (0.x has no CommitGuard: its writers wait for the next instant, waits_for_new_instant)
    if cfg.share_instant_per_key and s.coordinator.entry(key) is not None:
        return False
    return any(any(e.slots) for _, e in s.coordinator.buffers)


def last_pending_instant(s: State) -> str | None:
    """0.x: the newest pending data instant (``HoodieFlinkWriteClient#getLastPendingInstant``; 0.12+ reads the
    same from the coordinator's ``CkpMetadata`` messages, ``CkpMetadata#lastPendingInstant``), None if none."""
    pending = pending_instants(s)
    return pending[-1] if pending else None


def waits_for_new_instant(s: State, t: int) -> bool:
    """0.x coordinator-started instants: ``AbstractStreamWriteFunction#instantToWrite(hasData)`` keeps waiting
    while the task is ``confirming`` and there is no pending instant, or the pending instant is the one it
    wrote last (``currentInstant``) and it has data to write (``invalidInstant``)."""
    w = s.writers[t]
    if w.confirming is None:
        return False
    instant = last_pending_instant(s)
    return instant is None or (instant == w.confirming and w.offset > w.flushed)


def instant_wait(s: State, t: int) -> bool:
    """Task ``t`` (which needs an instant) must wait: 0.x coordinator-started instants --
    :func:`waits_for_new_instant`; else the coordinator would block a new instant (:func:`would_block`)."""
    if s.config.coordinator_start:
        return waits_for_new_instant(s, t)
    if s.config.guard_on_executor:
        return False  # the request joins the executor's queue at once; the guard waits there (guard_holds_executor)
    return would_block(s, s.writers[t].checkpoint_id)


def writer_status(s: State, t: int) -> str:
    """``"blocked"`` (must flush, the coordinator refuses a new instant), ``"needs-instant"``, ``"idle"``
    (split exhausted, nothing buffered) or ``"running"``."""
    w = s.writers[t]
    if needs_instant(s, t):
        return "blocked" if instant_wait(s, t) else "needs-instant"
    if w.offset >= s.config.records and w.offset == w.flushed and not barrier_waiting(s, t):
        return "idle"
    return "running"


def queued_request(s: State, t: int) -> int | None:
    """The position in the executor's queue of task ``t``'s instant request of its current attempt (0: it is
    running), None when it has none queued."""
    attempt = s.writers[t].attempt
    for i, job in enumerate(s.executor):
        if type(job) is RequestJob and job.task == t and job.attempt == attempt:
            return i
    return None


def guard_holds_executor(s: State) -> RequestJob | None:
    """``request_thread="executor"``: the instant request at the head of the executor's queue when its
    ``CommitGuard`` would wait (``awaitAllInstantsToCompleteIfNecessary``: an entry still holds an event), so
    the executor thread is held by the wait and nothing queued behind it runs; None otherwise. The request of
    a failed attempt holds it too (the coordinator does not know the attempt failed)."""
    if not s.config.guard_on_executor or not s.executor:
        return None
    head = s.executor[0]
    if type(head) is RequestJob and would_block(s, head.key):
        return head
    return None


def slow_job_ahead(s: State, position: int) -> bool:
    """A slow table-service job no request timed out behind yet is ahead of ``position`` in the queue."""
    return any(type(j) is TableServiceJob and j.slow and not j.overdue for j in s.executor[:position])


def is_quiescent(s: State, executor: bool = True) -> bool:
    """Nothing in flight: no checkpoint pending, no ack in flight, no buffered or unsnapshotted data in any
    task, no write statuses waiting in the coordinator, no job queued on its executor (unless ``executor`` is
    False: the drain asks whether the run is done but for the jobs still queued)."""
    if s.pending is not None or s.acks_in_flight or any(s.channels) or (executor and s.executor):
        return False
    if any(w.offset != w.flushed or w.interval for w in s.writers):
        return False
    return not any(has_statuses(e) for _, e in s.coordinator.buffers)


def source(s: State) -> Source:
    return Source(s.config.parallelism, s.config.records, s.seed)


def committed_statuses(s: State) -> list:
    """Write statuses of completed instants, in completion order (what readers see)."""
    meta = dict(s.table.metadata)
    done = sorted((i for i in s.table.timeline if i.state is InstantState.COMPLETED), key=lambda i: i.completion_time)
    return [st for i in done for st in meta.get(i.requested_time, ())]


def committed_offsets(s: State) -> Counter:
    """Multiset of committed ``(split, offset)`` pairs."""
    c: Counter = Counter()
    for st in committed_statuses(s):
        for o in range(st.start, st.end):
            c[(st.task, o)] += 1
    return c


def committed_records(s: State) -> Counter:
    """What a reader sees, as a multiset of :class:`Record` (duplicates count twice)."""
    src = source(s)
    return Counter({src.record(t, o): n for (t, o), n in committed_offsets(s).items()})


def table_view(s: State) -> dict:
    """Latest value per record key (upsert view) of the committed records."""
    return {r.key: r.value for r in committed_records(s)}


def duplicated_offsets(s: State) -> tuple:
    """``(split, offset)`` pairs the commit metadata holds more than once, ascending."""
    seen, dups = set(), set()
    for _, statuses in s.table.metadata:
        for st in statuses:
            for o in range(st.start, st.end):
                k = (st.task, o)
                (dups if k in seen else seen).add(k)
    return tuple(sorted(dups))


def emitted_offsets(s: State, upto: str = "checkpoint") -> set:
    """``(split, offset)`` read by the tasks: up to the last completed checkpoint, or all read."""
    if upto == "checkpoint":
        if s.last_completed is None:
            return set()
        return {(t, o) for t, snap in enumerate(s.last_completed.tasks) for o in range(snap.offset)}
    return {(w.task, o) for w in s.writers for o in range(w.offset)}


def emitted_records(s: State, upto: str = "checkpoint") -> list[Record]:
    src = source(s)
    return [src.record(t, o) for t, o in sorted(emitted_offsets(s, upto))]


def _message(m) -> str:
    return f"ack(ckp {m.checkpoint_id})" if isinstance(m, TaskSnapshot) else str(m)


def describe(s: State) -> str:
    """A multi-line, human-readable dump of the state (for counterexamples)."""
    cfg = s.config
    lines = [f"State({cfg.mode}, tv{cfg.table_version}, step {s.history.steps}, next ckp {s.next_checkpoint}, "
             f"pending {s.pending and s.pending.id}, acks {s.acks_in_flight})"]
    for w in s.writers:
        lines.append(f"  task {w.task}: offset={w.offset} buffer=[{w.flushed},{w.offset}) ckp={w.checkpoint_id} "
                     f"grant={w.instant} interval={list(w.interval)} state={[str(e) for e in w.state]} "
                     f"attempt={w.attempt}{'' if w.confirming is None else f' confirming={w.confirming!r}'} "
                     f"status={writer_status(s, w.task)}")
    for k, e in s.coordinator.buffers:
        lines.append(f"  buffer key {k}: {e}")
    for t, ch in enumerate(s.channels):
        if ch:
            lines.append(f"  in flight from task {t}: {[_message(m) for m in ch]}")
    if s.executor:
        lines.append(f"  coordinator executor: {[str(j) for j in s.executor]}")
    lines.append(f"  timeline: {[str(i) for i in s.table.timeline]}")
    lines.append(f"  heartbeats: {sorted(s.table.heartbeats)}")
    if s.last_completed:
        lines.append(f"  last completed checkpoint {s.last_completed.id}: offsets {s.last_completed.offsets()}, "
                     f"coordinator state keys {[k for k, _ in s.last_completed.coordinator_state]}")
    return "\n".join(lines)
