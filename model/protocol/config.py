"""Protocol configuration: every historical or hypothetical design choice is an explicit field.

Defaults follow Hudi 1.1's Flink writer for a merge-on-read table (``hudi-semantics.md`` 4.3):
async instant generation, table version 8, LAZY failed-writes policy (I14), commit rule ``<``
(``commitInstants``), the coordinator snapshots its buffer (``checkpointCoordinator``) and does so
before the tasks (Flink calls ``checkpointCoordinator`` before injecting barriers), plus the
fixes of #19215 (PR #19237). Broken or historical designs are the same fields set differently
(see :mod:`model.protocol.variants`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

#: Fault kinds, in the order ``enabled_events`` lists them.
FAULTS = ("lost-ack", "late-ack", "abort", "task-crash", "coordinator-crash", "full-restart", "lost-event",
          "request-timeout")
ALL_FAULTS = frozenset(FAULTS)

_CHOICES = {
    "mode": ("async", "blocking"),
    "table_version": (6, 8),
    "table_type": ("cow", "mor"),
    "failed_writes": ("lazy", "eager"),
    "commit_rule": ("<", "<=", "=="),
    "commit_order": ("ascending", "descending"),
    "snapshot_order": ("coordinator-first", "tasks-first"),
    "task_state": ("replace", "append"),
    "task_failover": ("region", "single"),
    "event_delivery": ("sync", "async"),
    "table_service": ("none", "bounded", "slow"),
    "request_thread": ("own", "executor"),
}
_BOUNDS = {
    "parallelism": (1, 256),
    "max_checkpoints": (0, 10_000),
    "records": (0, 1_000_000),
    "buffer_size": (1, 1_000_000),
    "max_crashes": (0, 10_000),
    "stall_bound": (-1, 10_000),
}


@dataclass(frozen=True)
class ProtocolConfig:
    """One protocol design plus the bounds of a run.

    Design fields (each names the Hudi code it stands for):

    * ``mode`` -- ``"async"``: Hudi 1.1 instant generation (one instant per checkpoint-id key,
      ``handleInstantRequest``); ``"blocking"``: a new data instant only after every buffered one
      is committed (0.x ``notifyCheckpointComplete -> startInstant``; 1.1 ``CommitGuard`` for COW
      upserts), at most one pending data instant (I13).
    * ``table_version`` 6 | 8 -- timeline layout of the table (:class:`model.timeline.Timeline`).
    * ``table_type`` -- ``cow`` commits ``commit`` instants, ``mor`` ``deltacommit``
      (``CommitUtils.getCommitActionType``).
    * ``failed_writes`` -- ``eager``: ``startCommit`` first rolls back every pending data instant;
      ``lazy``: only a clean rolls back pending instants whose heartbeat expired
      (``hoodie.cleaner.policy.failed.writes``; I14 forces lazy in async mode).
    * ``commit_rule`` -- on the ack of checkpoint n commit buffered keys ``k < n`` (Hudi),
      or the broken ``k <= n`` / ``k == n``.
    * ``commit_order`` -- ascending key order (Hudi) or the broken descending order.
    * ``coordinator_snapshot`` -- ``checkpointCoordinator`` serializes the completed buffers (1.1)
      or nothing (0.x-style / broken for async).
    * ``snapshot_order`` -- coordinator first (Flink) or the hypothetical tasks first.
    * ``snapshot_all_null_entries`` -- serialize entries whose slots are all null (1.1.1:
      ``allEventsCompleted`` is vacuously true for them; #19215). Fixed default: not serialized.
    * ``reset_keeps_memory`` -- a same-graph global failover keeps the coordinator object and
      ``resetToCheckpoint`` merges the restored entries over its in-memory buffers (1.1.1).
      Fixed default: the coordinator discards in-flight working state on reset (Flink contract).
    * ``resend_on_global_failover`` -- tasks restarted by a global failover (attempt > 0) re-send
      their restored, still pending write metadata (#19215 fix). 1.1.1 sent only the empty
      "cleanup" bootstrap event.
    * ``idempotent_recommit`` -- ``recommitInstant`` skips instants already completed (I11).
    * ``share_instant_per_key`` -- tasks asking with the same key share one instant (I10).
    * ``commit_guard`` -- blocking mode actually waits (broken when False).
    * ``task_state`` -- ``replace``: the writer's ``write-metadata-state`` holds only the last
      interval (Hudi); ``append``: it keeps every interval (unbounded; broken).
    * ``task_failover`` -- ``region``: a failed write task restarts every write task (Hudi's
      pipeline shuffles into the writers, one failover region); ``single``: only that task
      restarts while the others go on (point-wise regions).
    * ``partial_aborts`` -- the abort fault may hit a checkpoint some tasks already snapshotted
      (their last-known checkpoint id has advanced, the others' has not). Off by default: the
      model then finds lost data (see the ``hudi-1.1-partial-abort`` variant).
    * ``allow_commit_on_empty_batch`` -- ``write.allow_commit_on_empty_batch``.
    * ``event_delivery`` -- ``"sync"``: the coordinator handles a write-metadata or bootstrap event in
      the step that sends it (the model's default abstraction). ``"async"``: events are operator
      events in flight (Flink ``OperatorEventGateway.sendEventToCoordinator``, an RPC to the
      JobMaster), one FIFO channel per task (RPC messages between one sender and one receiver keep
      their order), channels of different tasks interleave freely (``deliver-event(t)``), the
      task's checkpoint acknowledgement (``CheckpointResponder.acknowledgeCheckpoint``) travels
      behind its events on the same channel, and a failover drops the events of the failed
      attempts (``SchedulerBase.deliverOperatorEventToCoordinator`` refuses events of an execution
      that is not running). The restarted tasks' bootstrap events then reach the coordinator one by
      one, interleaved with acks, commits and the other tasks' writes (a non-atomic failover); a
      checkpoint is triggered only once every restarted task's bootstrap events arrived (Flink
      triggers only when every task is RUNNING, which a task reports after ``initializeState`` on
      the same channel).
    * ``coordinator_starts_instants`` -- blocking mode only: Hudi 0.x's flow (0.12
      ``StreamWriteOperatorCoordinator`` / ``AbstractStreamWriteFunction``). The coordinator starts the next
      instant itself right after a successful commit (``notifyCheckpointComplete -> commitInstant ->
      startInstant``); a writer takes the last pending instant (``instantToWrite`` polls
      ``lastPendingInstant``; the coordinator gets no request) and after each checkpoint flush is
      ``confirming`` (``StreamWriteFunction#flushRemaining``): it waits for an instant other than the one it
      wrote, or takes the same one with nothing to write (``invalidInstant``); the coordinator keeps one buffer
      (``eventBuffer``: a task's events merged whatever their instant) and checkpoints nothing (set
      ``coordinator_snapshot`` False, as the 0.x variants do); an empty checkpoint (no write statuses,
      ``allow_commit_on_empty_batch`` off) is not committed, its instant -- heartbeat kept -- is reused and a
      ``CommitAckEvent`` clears ``confirming``; a restarted task (any failover) sends one bootstrap event (its
      state events of the last pending instant, merged, or an empty one) and, once every task's is in, the
      coordinator recommits the instant they carry and starts a new one (``handleBootstrapEvent ->
      initInstant``); a writer's wait times out into a task failover. With no pending instant at all (a
      fresh job) the first instant request starts one (the fresh job's ``initInstant``). Modelled with sync
      event delivery and region failover only. False: Hudi 1.1's request-driven instants.
    * ``commit_ack_events`` -- 0.x coordinator-started instants: an empty checkpoint (not committed, its
      instant reused) sends a ``CommitAckEvent`` to every task (``sendCommitAckEvents``), which clears
      ``confirming``; False is the broken design without it, where a task with new data after an empty
      checkpoint waits for a new instant that only a timeout brings.
    * ``ack_before_next_checkpoint`` -- the coordinator's executor is one FIFO thread
      (``NonThrownExecutor``, "meta-event-handle") running both ``notifyCheckpointComplete(n)`` (the
      commit, then table-service scheduling) and ``checkpointCoordinator(n+1)``; Flink completes the
      coordinators' checkpoints before it injects the barriers
      (``OperatorCoordinatorCheckpoints#triggerAndAcknowledgeAllCoordinatorCheckpoints``), so a checkpoint
      is triggered only once the notification of the previous one, unless lost, was handled. False (the
      default) lets a trigger overtake an ack in flight: more interleavings than Hudi has, sound for the
      safety verdicts of designs whose coordinator snapshot covers the un-acked keys (1.1); the 0.x
      variants need the exact order (their coordinator checkpoints nothing).
    * ``ack_behind_events`` -- async delivery: the checkpoint acknowledgement is ordered behind the
      task's events (True, Flink); False is the broken design where it overtakes them.
    * ``clean_during_restart`` -- async delivery: a LAZY clean may roll back failed writes while a
      restarted task's bootstrap events are still in flight. False (default): a dead writer's
      heartbeat expires only after ``hoodie.client.heartbeat.tolerable.misses`` x
      ``hoodie.client.heartbeat.interval_in_ms`` (2 minutes by default), longer than a restart takes,
      so the model (which has no durations) lets a clean run only once every task is RUNNING. True is
      the slow restart where the heartbeat expires first.
    * ``drop_failed_attempt_events`` -- async delivery: events of a failed attempt are dropped on
      failover (True, Flink); False is the broken design that still delivers them afterwards.
    * ``executor_queue`` -- the coordinator's executor is an explicit FIFO queue of jobs
      (``StreamWriteOperatorCoordinator``'s single-threaded ``NonThrownExecutor``; :mod:`model.protocol.executor`):
      ``deliver-ack(n)`` queues the commit of checkpoint n (``notifyCheckpointComplete -> executor.execute``),
      ``request-instant(t)`` queues the task's instant request, and ``run-job`` runs the oldest job, one at a
      time; the task waits (its thread is in the RPC) until its request has run. A request can time out only
      while another job is ahead of it. False (default): a commit and an instant request take effect in the
      step that delivers them, and the ``request-timeout`` fault may hit any grantable request. In blocking
      mode (1.1 COW upsert, ``CommitGuard``) ``request_thread`` says where the guard's wait happens; not
      modelled with 0.x coordinator-started instants (no instant request) nor with a table-service job in
      blocking mode (how a slow job and the guard's timeout race is not modelled).
    * ``request_thread`` -- blocking mode with ``executor_queue``: the thread that answers instant requests and
      so does the ``CommitGuard`` wait (``EventBuffers#awaitAllInstantsToCompleteIfNecessary``, one
      ``condition.await(write.commit.ack.timeout)`` released by any ``EventBuffers#reset``). ``"own"`` (Hudi
      1.1, ``instantRequestExecutor``): the request waits on the guard off the executor (the task is
      ``blocked``) while the queued commits run, and once released joins the queue as a job (the instant lock
      orders its ``startInstant`` behind the commits queued before it). ``"executor"`` (the broken design
      where the request is answered on the executor that also commits): the request joins the queue at once;
      at the head, while the guard would wait, it holds the executor thread, and the commit that would release
      the guard is queued behind it: tasks and coordinator wait on each other until the guard's timeout
      (``instant-timeout``: a global failover, recorded as a stall whenever it happens).
    * ``table_service`` -- with ``executor_queue``: ``"none"``, no table-service job (the scheduling is off the
      executor); ``"bounded"``, a commit that committed is followed on the executor by ``scheduleTableServices``
      (compaction / clean scheduling), which ends within the RPC timeout of a request queued behind it;
      ``"slow"``, that job outlasts the timeout (compaction scheduled and run inline on the executor thread, no
      async offload): a request queued behind it times out (``request-expired``, not a fault) and its task fails.

    Bounds: ``stall_bound`` -- instant timeouts (``write.commit.ack.timeout`` failovers) a run may need
    after faults stopped before ``liveness.stall`` fails: progress that resumes only through a
    timeout-triggered failover is a stall. 0 (default): none may be needed (the async designs hold it); Hudi's
    blocking designs need one after a lost ack, and their variants state that bound (1); -1 does not judge
    stalls. ``parallelism`` writer tasks, ``max_checkpoints`` triggered checkpoints,
    ``records`` per source split (one split per task), ``buffer_size`` records per writer buffer
    (eager flush when full), ``faults`` enabled, ``max_crashes`` crash-like faults per run.
    """

    mode: str = "async"
    table_version: int = 8
    table_type: str = "mor"
    failed_writes: str = "lazy"
    commit_rule: str = "<"
    commit_order: str = "ascending"
    coordinator_snapshot: bool = True
    snapshot_order: str = "coordinator-first"
    snapshot_all_null_entries: bool = False
    reset_keeps_memory: bool = False
    resend_on_global_failover: bool = True
    idempotent_recommit: bool = True
    share_instant_per_key: bool = True
    commit_guard: bool = True
    task_state: str = "replace"
    task_failover: str = "region"
    partial_aborts: bool = False
    allow_commit_on_empty_batch: bool = False
    event_delivery: str = "sync"
    coordinator_starts_instants: bool = False
    ack_before_next_checkpoint: bool = False
    commit_ack_events: bool = True
    ack_behind_events: bool = True
    drop_failed_attempt_events: bool = True
    clean_during_restart: bool = False
    executor_queue: bool = False
    table_service: str = "none"
    request_thread: str = "own"
    parallelism: int = 2
    max_checkpoints: int = 3
    records: int = 4
    buffer_size: int = 2
    faults: frozenset = field(default_factory=lambda: ALL_FAULTS)
    max_crashes: int = 1
    stall_bound: int = 0

    def __post_init__(self):
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}: {getattr(self, name)!r} is not one of {', '.join(map(str, allowed))}")
        for name, (lo, hi) in _BOUNDS.items():
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
                raise ValueError(f"{name}: {v!r} is not an integer in [{lo}, {hi}]")
        if not isinstance(self.faults, frozenset):
            object.__setattr__(self, "faults", frozenset(self.faults))
        unknown = self.faults - ALL_FAULTS
        if unknown:
            raise ValueError(f"faults: unknown {', '.join(sorted(unknown))}; allowed: {', '.join(FAULTS)}")
        for f in fields(self):
            if f.type in ("bool", bool) and not isinstance(getattr(self, f.name), bool):
                raise ValueError(f"{f.name}: {getattr(self, f.name)!r} is not true/false")
        if self.executor_queue and self.coordinator_starts_instants and self.mode == "blocking":
            raise ValueError("executor_queue: not modelled with coordinator_starts_instants (0.x writers send no "
                             "instant request to queue; they poll the last pending instant)")
        if self.table_service != "none" and self.mode == "blocking":
            raise ValueError(f"table_service: {self.table_service!r} is modelled for async instant generation only "
                             "(in blocking mode how a table-service job and the CommitGuard's timeout race is not "
                             "modelled)")
        if self.request_thread != "own" and not (self.executor_queue and self.mode == "blocking"):
            raise ValueError(f"request_thread: {self.request_thread!r} needs mode='blocking' and executor_queue "
                             "(only blocking mode's CommitGuard waits on the thread that answers a request)")
        if self.table_service != "none" and not self.executor_queue:
            raise ValueError(f"table_service: {self.table_service!r} needs executor_queue (a table-service job "
                             "runs on the coordinator's executor queue)")
        if self.coordinator_starts_instants and self.mode == "blocking":
            if self.event_delivery != "sync":
                raise ValueError("coordinator_starts_instants: not modelled with event_delivery='async' "
                                 "(0.x bootstrap and commit-ack events are handled in the step that sends them)")
            if self.task_failover != "region":
                raise ValueError("coordinator_starts_instants: not modelled with task_failover='single' "
                                 "(0.x's initInstant waits for every task's bootstrap event)")

    # -------------------------------------------------------------- derived
    @property
    def blocking(self) -> bool:
        return self.mode == "blocking"

    @property
    def coordinator_start(self) -> bool:
        """0.x coordinator-started instants (blocking mode only)."""
        return self.mode == "blocking" and self.coordinator_starts_instants

    @property
    def guard_on_executor(self) -> bool:
        """Blocking mode's ``CommitGuard`` waits on the coordinator's executor (``request_thread="executor"``)."""
        return self.request_thread == "executor"

    @property
    def async_events(self) -> bool:
        return self.event_delivery == "async"

    @property
    def eager(self) -> bool:
        return self.failed_writes == "eager"

    @property
    def action(self) -> str:
        return "commit" if self.table_type == "cow" else "deltacommit"

    def with_(self, **changes) -> "ProtocolConfig":
        d = asdict(self)
        d.update(changes)
        return ProtocolConfig(**d)

    # --------------------------------------------------------------- codec
    def to_dict(self) -> dict:
        d = asdict(self)
        d["faults"] = [f for f in FAULTS if f in self.faults]
        return d

    @staticmethod
    def from_dict(d: dict) -> "ProtocolConfig":
        if not isinstance(d, dict):
            raise ValueError("config: expected an object")
        names = {f.name for f in fields(ProtocolConfig)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"config: unknown field(s) {', '.join(sorted(unknown))}")
        d = dict(d)
        if "faults" in d:
            if not isinstance(d["faults"], (list, tuple, set, frozenset)):
                raise ValueError("faults: expected a list")
            d["faults"] = frozenset(d["faults"])
        return ProtocolConfig(**d)
