"""The actions of the protocol: one guard and one effect per event kind.

A guard ``may_<kind>(state, event) -> str | None`` returns None when the action is enabled, else a sentence
saying why not. An effect ``do_<kind>(state, event) -> State`` returns the next state (the state given is a
value: it is never changed). :data:`ACTIONS` maps each event kind to its pair; :func:`guard` adds the
preconditions every action shares (the task exists; a fault event needs its fault enabled and faults not
stopped).

=====================  ==================================================  =======================
action                 enabled when                                        effect
=====================  ==================================================  =======================
ingest(t)              split not exhausted, buffer not full                read one record
request-instant(t)     no grant, buffer full or barrier waiting, and the   grant := coordinator's
                       coordinator would not block (blocking mode); no     instant for t's key (with
                       request of t queued (executor queue)                the queue: request queued)
flush(t)               grant held and buffer full                          eager flush, event sent
trigger-checkpoint     none pending, id <= max_checkpoints (or draining),  pending := n; coordinator
                       no ack in flight if ack_before_next_checkpoint
                                                                           snapshot if coord-first
snapshot-task(t)       barrier waiting at t and grant held                 flush rest (lastBatch),
                                                                           state replaced, id := n
complete-checkpoint    every task snapshotted                              tasks-first: coordinator
                                                                           snapshot; ack n in flight
deliver-ack(n)         n in flight and the oldest (any with late-ack)      commit keys < n (with the
                                                                           queue: commit job queued)
run-job                executor queue: a job queued, and not a slow job    the oldest job's effect
                       with a request of a live attempt behind it, nor a
                       request the CommitGuard holds (request thread =
                       executor)
deliver-event(t)       async delivery: a message in flight from t          the coordinator handles
                                                                           the oldest one
clean                  LAZY and a pending instant's heartbeat expired      roll those back
instant-timeout(t)     blocking, t blocked, no ack in flight nor commit    global failover (0.x
                       queued; request thread = executor: t's request      task failover)
                       held by the CommitGuard at the executor's head
stop-faults            faults not stopped yet                              no more faults
lose-ack(n)            [lost-ack] n in flight                              drop it
abort-checkpoint       [abort] one pending (and no task snapshotted yet,   drop it
                       unless partial_aborts)
crash-task(t)          [task-crash] crash budget left                      task failover
crash-coordinator      [coordinator-crash] crash budget left               coordinator failover
restart-job            [full-restart] crash budget left                    global failover
lose-event(t)          [lost-event] a message in flight from t, budget     drop it; t fails: task
                                                                           failover
request-timeout(t)     [request-timeout] t's request would be granted      t fails: task failover
                       (executor queue: t's request queued behind another
                       job), budget left (not 0.x: no request RPC)
=====================  ==================================================  =======================
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, NamedTuple

from . import coordinator, events as E, executor, failover, table, writer
from .channels import receive, send
from .state import (CheckpointCoverage, Pending, State, barrier_waiting, bootstrap_in_flight, buffer_full,
                    failed_writes, guard_holds_executor, has_statuses, instant_wait, late_keys, needs_instant,
                    queued_request, slow_job_ahead, snapshotted, writer_status)
from .values import CommitJob, CompletedCheckpoint, RequestJob, TableServiceJob, TaskSnapshot


def faults_on(s: State, fault: str) -> bool:
    """``fault`` may happen now: the configuration enables it and faults have not stopped."""
    return not s.faults_stopped and fault in s.config.faults


def crash_budget_left(s: State) -> bool:
    return s.crashes < s.config.max_crashes


def _set_writer(s: State, w) -> State:
    return replace(s, writers=s.writers[:w.task] + (w,) + s.writers[w.task + 1:])


# --------------------------------------------------------------------------------------- ingest(t)
def may_ingest(s: State, ev: E.Ingest) -> str | None:
    """The source subtask emits the next record of its split to the chained write task."""
    w, cfg = s.writers[ev.task], s.config
    if w.offset >= cfg.records:
        return f"split {ev.task} is exhausted ({cfg.records} records)"
    if buffer_full(s, ev.task):
        return f"task {ev.task}'s buffer is full; it must flush first"
    if cfg.coordinator_start and w.instant is not None:
        # 0.x: instantToWrite(hasData) and the write it returns an instant for are one step of the task
        # thread; no record is read in between (the instant was chosen for the data buffered then)
        return f"0.x: task {ev.task} is flushing under {w.instant}"
    if cfg.executor_queue and queued_request(s, ev.task) is not None:
        # Correspondent#requestInstantTime is a blocking RPC on the task thread: no record is read meanwhile
        return f"task {ev.task} waits for the answer to its instant request (queued on the coordinator's executor)"
    return None


def do_ingest(s: State, ev: E.Ingest) -> State:
    return _set_writer(s, writer.ingest(s.writers[ev.task]))


# ------------------------------------------------------------------------------- request-instant(t)
def may_request_instant(s: State, ev: E.RequestInstant) -> str | None:
    """``StreamWriteFunction.instantToWrite`` -> ``Correspondent.requestInstantTime(checkpointId)``: a flush or
    the barrier needs an instant; blocking mode waits (``CommitGuard``) while the previous one is buffered
    (with ``request_thread="executor"`` the request joins the executor's queue at once and the guard waits
    when it runs there: :func:`may_run_job`).
    0.x coordinator-started instants: ``instantToWrite`` polls the last pending instant and waits while
    ``confirming`` (:func:`~model.protocol.state.waits_for_new_instant`)."""
    t = ev.task
    w = s.writers[t]
    if w.instant is not None:
        return f"task {t} already holds instant {w.instant}"
    if not needs_instant(s, t):
        return f"task {t} has nothing to flush (buffer not full, no barrier)"
    if s.config.executor_queue and queued_request(s, t) is not None:
        return f"task {t}'s instant request is already queued on the coordinator's executor"
    if instant_wait(s, t):
        if s.config.coordinator_start:
            return f"0.x: task {t} is confirming: it waits until the coordinator starts a new instant"
        return f"blocking mode: task {t} waits until the buffered instant is committed"
    return None


def do_request_instant(s: State, ev: E.RequestInstant) -> State:
    """``StreamWriteOperatorCoordinator.handleInstantRequest``: the key's instant or a new one. With the
    executor queue the request joins the queue (``handleCoordinationRequest`` -> ``execute``) and is answered
    when it runs (:func:`model.protocol.executor.run_head`)."""
    w = s.writers[ev.task]
    if s.config.executor_queue:
        return executor.enqueue(s, RequestJob(ev.task, w.checkpoint_id, w.attempt))
    s, instant = coordinator.handle_instant_request(s, w.checkpoint_id)
    return _set_writer(s, writer.grant(s.writers[ev.task], instant))


# ---------------------------------------------------------------------------------------- flush(t)
def may_flush(s: State, ev: E.Flush) -> str | None:
    """``StreamWriteFunction.flushBucket`` when the buffer is full (``write.batch.size``)."""
    w = s.writers[ev.task]
    if w.instant is None:
        return f"task {ev.task} holds no instant"
    if not buffer_full(s, ev.task):
        return f"task {ev.task}'s buffer is not full"
    return None


def do_flush(s: State, ev: E.Flush) -> State:
    """Eager flush (``lastBatch=false``), the ``WriteMetadataEvent`` handled by the coordinator
    (``handleWriteMetaEvent``)."""
    w, sent = writer.flush(s.writers[ev.task], last_batch=False)
    return send(_set_writer(s, w), ev.task, sent)


# ------------------------------------------------------------------------------ trigger-checkpoint
def may_trigger_checkpoint(s: State, ev: E.TriggerCheckpoint) -> str | None:
    """Flink's ``CheckpointCoordinator.triggerCheckpoint`` (max-concurrent-checkpoints = 1); the bound
    ``max_checkpoints`` no longer applies once faults stopped (the drain runs checkpoints to quiescence)."""
    if s.pending is not None:
        return f"checkpoint {s.pending.id} is pending"
    if s.config.ack_before_next_checkpoint and s.acks_in_flight:
        return (f"the coordinator's executor handles notifyCheckpointComplete({s.acks_in_flight[0]}) before "
                f"checkpointCoordinator({s.next_checkpoint}) (one FIFO thread)")
    if s.config.ack_before_next_checkpoint and any(type(j) is CommitJob for j in s.executor):
        return (f"a commit queued on the coordinator's executor runs before "
                f"checkpointCoordinator({s.next_checkpoint}) (one FIFO thread)")
    if s.next_checkpoint > s.config.max_checkpoints and not s.faults_stopped:
        return f"bound: max_checkpoints={s.config.max_checkpoints}"
    if bootstrap_in_flight(s):
        # CheckpointCoordinator triggers only when every task is RUNNING; a restarted task reports
        # RUNNING after initializeState, behind its bootstrap events on the same RPC channel.
        return "a restarted task's bootstrap events are still in flight (not every task is RUNNING)"
    return None


def do_trigger_checkpoint(s: State, ev: E.TriggerCheckpoint) -> State:
    """Checkpoint n starts; coordinator-first (Flink): ``checkpointCoordinator(n)`` runs before any barrier."""
    n = s.next_checkpoint
    cs = coordinator.checkpoint(s) if s.config.snapshot_order == "coordinator-first" else None
    return replace(s, next_checkpoint=n + 1, pending=Pending(n, cs, (None,) * s.config.parallelism))


# ---------------------------------------------------------------------------------- snapshot-task(t)
def may_snapshot_task(s: State, ev: E.SnapshotTask) -> str | None:
    """The barrier reached task t: ``snapshotState`` flushes the rest, which needs an instant first."""
    if not barrier_waiting(s, ev.task):
        return f"no barrier waiting at task {ev.task}"
    if s.writers[ev.task].instant is None:
        return f"task {ev.task} must get an instant before flushing at the barrier"
    return None


def do_snapshot_task(s: State, ev: E.SnapshotTask) -> State:
    """``StreamWriteFunction.snapshotState(n)``: the rest flushed (``lastBatch=true``) and sent, the state
    replaced, ``checkpointId := n``; Flink records the task's acknowledgement (``acknowledgeTask``)."""
    p = s.pending
    w, sent = writer.snapshot_state(s.writers[ev.task], p.id, append=s.config.task_state == "append",
                                    confirm=s.config.coordinator_start)
    s = send(_set_writer(s, w), ev.task, sent)
    ack = TaskSnapshot(w.offset, p.id, w.state)
    if s.config.async_events and not s.config.ack_behind_events:
        return receive(s, ev.task, ack)  # broken: the acknowledgement overtakes the events in flight
    return send(s, ev.task, ack)


# ------------------------------------------------------------------------------- complete-checkpoint
def may_complete_checkpoint(s: State, ev: E.CompleteCheckpoint) -> str | None:
    """``PendingCheckpoint.isFullyAcknowledged``."""
    if s.pending is None:
        return "no checkpoint pending"
    if not s.pending.all_tasks_done():
        return f"checkpoint {s.pending.id}: not every task snapshotted"
    return None


def do_complete_checkpoint(s: State, ev: E.CompleteCheckpoint) -> State:
    """``CheckpointCoordinator.completePendingCheckpoint``: the checkpoint is complete (tasks-first: the
    coordinator snapshot is taken now) and its notification is in flight. History: its coverage."""
    p = s.pending
    cs = p.coordinator_state if p.coordinator_state is not None else coordinator.checkpoint(s)
    done = CompletedCheckpoint(p.id, cs, p.tasks)
    coverage = CheckpointCoverage(
        s.history.steps, p.id,
        needed=frozenset(k for k, e in s.coordinator.buffers if k < p.id and has_statuses(e)),
        coordinator_keys=frozenset(k for k, _ in cs),
        task_keys=frozenset(e.checkpoint_id for snap in p.tasks for e in snap.state),
        after_stop=s.faults_stopped, late_keys=late_keys(s, p.id))
    return replace(s, last_completed=done, pending=None, acks_in_flight=s.acks_in_flight + (p.id,),
                   history=replace(s.history, checkpoints=s.history.checkpoints + (coverage,)))


# ------------------------------------------------------------------------------------ deliver-ack(n)
def may_deliver_ack(s: State, ev: E.DeliverAck) -> str | None:
    """The notification is best effort; it overtakes an older one only with the late-ack fault."""
    n = ev.checkpoint
    if n not in s.acks_in_flight:
        return f"no ack of checkpoint {n} in flight"
    if n != s.acks_in_flight[0] and not faults_on(s, "late-ack"):
        return f"ack {n} would overtake ack {s.acks_in_flight[0]} (late-ack fault not enabled)"
    return None


def do_deliver_ack(s: State, ev: E.DeliverAck) -> State:
    """``StreamWriteOperatorCoordinator.notifyCheckpointComplete(n)`` -> ``commitInstants(n)``; with the
    executor queue ``executor.execute(...)`` queues the commit (:class:`CommitJob`), run by ``run-job``."""
    s = replace(s, acks_in_flight=tuple(n for n in s.acks_in_flight if n != ev.checkpoint))
    if s.config.executor_queue:
        return executor.enqueue(s, CommitJob(ev.checkpoint))
    return coordinator.notify_checkpoint_complete(s, ev.checkpoint)


# ---------------------------------------------------------------------------------- deliver-event(t)
def may_deliver_event(s: State, ev: E.DeliverEvent) -> str | None:
    """Async delivery: the oldest message on task t's channel may arrive now (channels of different tasks
    interleave freely; one task's messages arrive in the order sent)."""
    if not s.channels[ev.task]:
        return f"no message in flight from task {ev.task}"
    return None


def do_deliver_event(s: State, ev: E.DeliverEvent) -> State:
    t = ev.task
    message = s.channels[t][0]
    s = replace(s, channels=s.channels[:t] + (s.channels[t][1:],) + s.channels[t + 1:])
    return receive(s, t, message)


# ------------------------------------------------------------------------------------------- run-job
def may_run_job(s: State, ev: E.RunJob) -> str | None:
    """``NonThrownExecutor``: the executor thread takes the oldest job. A slow table-service job outlasts the
    RPC timeout of every request queued behind it, so it cannot end before such a request (of a live attempt)
    has timed out (``request-expired``), unless one already did (the job is overdue). With
    ``request_thread="executor"`` an instant request at the head whose ``CommitGuard`` would wait
    (:func:`~model.protocol.state.guard_holds_executor`) holds the thread: no job behind it runs (the commit
    that would release the guard among them) until the guard's timeout (``instant-timeout``)."""
    if not s.config.executor_queue:
        return "no executor queue modelled (executor_queue off): jobs take effect when they arrive"
    if not s.executor:
        return "the coordinator's executor has no job queued"
    held = guard_holds_executor(s)
    if held is not None:
        behind = next((j for j in s.executor[1:] if type(j) is CommitJob), None)
        release = (f"the commit that would release it, {behind}, is queued behind it on the same thread" if behind
                   else "only a commit on the same thread could release it")
        return (f"the CommitGuard holds the coordinator's executor: task {held.task}'s instant request (key "
                f"{held.key}) waits in awaitAllInstantsToCompleteIfNecessary for the buffered instant's commit, and "
                f"{release}: tasks and coordinator wait on each other until write.commit.ack.timeout")
    head = s.executor[0]
    if type(head) is TableServiceJob and head.slow and not head.overdue:
        for t in range(s.config.parallelism):
            if queued_request(s, t) is not None:
                return (f"the slow table-service job outlasts the RPC timeout of task {t}'s instant request "
                        f"queued behind it: the request times out first")
    return None


def do_run_job(s: State, ev: E.RunJob) -> State:
    """The oldest job's effect (:func:`model.protocol.executor.run_head`)."""
    return executor.run_head(s)


# ------------------------------------------------------------------------------------- request-expired(t)
def may_request_expired(s: State, ev: E.RequestExpired) -> str | None:
    """``Correspondent#requestInstantTime``'s RPC timeout (Flink's ask timeout) passes while the request waits
    behind a slow table-service job (``scheduleTableServices`` longer than the timeout, Hudi #19902): certain,
    so no fault budget; once per slow job (it is overdue afterwards)."""
    if not s.config.executor_queue:
        return "no executor queue modelled (executor_queue off)"
    i = queued_request(s, ev.task)
    if i is None:
        return f"no instant request of task {ev.task} queued on the coordinator's executor"
    if not slow_job_ahead(s, i):
        return f"no slow table-service job ahead of task {ev.task}'s request (that one has not timed out behind)"
    return None


def do_request_expired(s: State, ev: E.RequestExpired) -> State:
    """The RPC fails in the task: a task failover. History: a stall whenever it happens (no fault caused it:
    the design's own job outlasted the timeout, and progress resumes only through the failover)."""
    s = executor.mark_overdue(s, queued_request(s, ev.task))
    s = replace(s, history=replace(s.history, expired=s.history.expired + (s.history.steps,)))
    return failover.task_failover(s, ev.task)


# ------------------------------------------------------------------------------------- lose-event(t)
def may_lose_event(s: State, ev: E.LoseEvent) -> str | None:
    """An RPC carrying task t's oldest message fails; Flink then fails the sending task
    (``TaskNotRunningException`` / the operator event dispatcher's failure handler)."""
    if not s.channels[ev.task]:
        return f"no message in flight from task {ev.task}"
    return may_crash(s, ev)


def do_lose_event(s: State, ev: E.LoseEvent) -> State:
    t = ev.task
    s = replace(s, channels=s.channels[:t] + (s.channels[t][1:],) + s.channels[t + 1:], crashes=s.crashes + 1)
    return failover.task_failover(s, t)


# -------------------------------------------------------------------------------- request-timeout(t)
def may_request_timeout(s: State, ev: E.RequestTimeout) -> str | None:
    """The instant request (``Correspondent.requestInstantTime``, an RPC answered on the coordinator's
    ``instantRequestExecutor``; in 0.x-style deployments and the simulation's blocking mode on the one
    executor that also runs commits and table-service scheduling, ``NonThrownExecutor``) waits behind a slow
    job -- a commit, ``scheduleCompaction``/``scheduleClustering``, or the table lock they hold (Hudi #19902)
    -- longer than the RPC timeout, and the task fails.

    With ``executor_queue`` (:mod:`model.protocol.executor`) the queue is spelled out: the request is a job,
    and the fault may hit it only while another job is ahead of it (a commit or table-service scheduling
    slowed by storage; behind a table-service job declared slow the timeout is certain, ``request-expired``).
    Without it (the default, which keeps the explorer's counts of the other designs) the spec has no queue:
    a commit is one step (``deliver-ack``) and the fault may hit any request the coordinator would grant -- a
    superset of the queued ones, sound for every safety verdict (a design that survives it survives the real
    subset); the ordering ``checkpointCoordinator(n+1)`` after ``notifyCheckpointComplete(n)`` is
    ``ProtocolConfig.ack_before_next_checkpoint``. The simulation runs the queue in simulated time and times
    a queued request out after ``coordinator.request_timeout_s`` (:func:`sim.engine.expire_request`).
    A request the coordinator would refuse (blocking mode's ``CommitGuard``) times out through
    ``instant-timeout``. 0.x writers send no request (they poll the last pending instant)."""
    if s.config.coordinator_start:
        return "0.x: writers poll the last pending instant; no instant request goes to the coordinator"
    if s.config.executor_queue:
        i = queued_request(s, ev.task)
        if i is None:
            return f"no instant request of task {ev.task} queued on the coordinator's executor"
        if i == 0:
            return f"task {ev.task}'s instant request is running, not queued behind another job"
        return may_crash(s, ev)
    why = may_request_instant(s, E.RequestInstant(ev.task))
    if why is not None:
        return f"no instant request of task {ev.task} in progress ({why})"
    return may_crash(s, ev)


def do_request_timeout(s: State, ev: E.RequestTimeout) -> State:
    """The RPC fails in the task (Hudi #19902): the task fails, a task failover."""
    return failover.task_failover(replace(s, crashes=s.crashes + 1), ev.task)


# --------------------------------------------------------------------------------------- lose-ack(n)
def may_lose_ack(s: State, ev: E.LoseAck) -> str | None:
    return None if ev.checkpoint in s.acks_in_flight else f"no ack of checkpoint {ev.checkpoint} in flight"


def do_lose_ack(s: State, ev: E.LoseAck) -> State:
    """The notification never arrives (Flink does not retry ``notifyCheckpointComplete``)."""
    return replace(s, acks_in_flight=tuple(n for n in s.acks_in_flight if n != ev.checkpoint))


# -------------------------------------------------------------------------------------------- clean
def may_clean(s: State, ev: E.Clean) -> str | None:
    """``hoodie.cleaner.policy.failed.writes=LAZY``: a clean rolls back failed writes."""
    if s.config.eager:
        return "EAGER policy: failed writes are rolled back by startCommit, not by clean"
    if not failed_writes(s):
        return "no pending instant with an expired heartbeat"
    if bootstrap_in_flight(s) and not s.config.clean_during_restart:
        # a dead writer's heartbeat outlives a restart (see ProtocolConfig.clean_during_restart)
        return "a restarted task's bootstrap events are still in flight (heartbeats not expired yet)"
    return None


def do_clean(s: State, ev: E.Clean) -> State:
    """``CleanerUtils.rollbackFailedWrites``: roll back every pending instant whose heartbeat expired."""
    return table.clean(s)


# -------------------------------------------------------------------------------- instant-timeout(t)
def may_instant_timeout(s: State, ev: E.InstantTimeout) -> str | None:
    """Blocking mode: the instant request of a blocked task times out (``write.commit.ack.timeout``) unless
    an ack in flight or a commit queued on the coordinator's executor may still unblock it. (0.x:
    ``instantToWrite``'s ``TimeWait`` with that timeout.) With ``request_thread="executor"`` the guard waits
    on the executor: the timeout ends the wait of the request the guard holds at the head of the queue
    (certain: the commit that would release it cannot run on the thread the wait holds)."""
    if not s.config.blocking:
        return "only blocking mode waits for instants"
    if s.config.guard_on_executor:
        held = guard_holds_executor(s)
        if held is None or held.task != ev.task:
            return f"no instant request of task {ev.task} held by the CommitGuard at the head of the executor"
        return None
    if writer_status(s, ev.task) != "blocked":
        return f"task {ev.task} is not blocked"
    if s.acks_in_flight:
        return "an ack in flight may still unblock the task"
    if any(type(j) is CommitJob for j in s.executor):
        return "a commit queued on the coordinator's executor may still release the CommitGuard"
    return None


def do_instant_timeout(s: State, ev: E.InstantTimeout) -> State:
    """1.1 blocking mode: the ``CommitGuard`` timeout fails the job, a same-graph global failover. 0.x
    coordinator-started instants: ``TimeWait#waitFor`` throws in the write task (``instantToWrite``), the
    task fails: a task failover (its restart re-sends the write metadata of the pending instant, and the
    coordinator recommits it and starts a new instant, ``handleBootstrapEvent -> initInstant``). History:
    after faults stopped, a stall; with ``request_thread="executor"`` a deadlock whenever it happens (the
    guard's ``HoodieException("Timeout(..ms) while waiting for instants [..] to commit")`` on the executor
    fails the job; no fault caused it: tasks and coordinator waited on each other)."""
    if s.config.guard_on_executor:
        s = replace(s, history=replace(s.history, deadlocks=s.history.deadlocks + (s.history.steps,)))
    elif s.faults_stopped:
        s = replace(s, history=replace(s.history, stalls=s.history.stalls + (s.history.steps,)))
    if s.config.coordinator_start:
        return failover.task_failover(s, ev.task)
    return failover.global_failover(s, recreate_coordinator=False)


# -------------------------------------------------------------------------------------- stop-faults
def may_stop_faults(s: State, ev: E.StopFaults) -> str | None:
    """A driver control (never listed by :func:`model.protocol.spec.enabled`): from here on no fault."""
    return "faults already stopped" if s.faults_stopped else None


def do_stop_faults(s: State, ev: E.StopFaults) -> State:
    return replace(s, faults_stopped=True)


# --------------------------------------------------------------------------------- abort-checkpoint
def may_abort_checkpoint(s: State, ev: E.AbortCheckpoint) -> str | None:
    """A pending checkpoint is declined or times out (before any task snapshotted it unless partial aborts
    are modelled)."""
    p = s.pending
    if p is None:
        return "no checkpoint pending"
    if not s.config.partial_aborts and any(snapshotted(s, t) for t in range(s.config.parallelism)):
        return "a task already snapshotted (partial aborts not enabled)"
    return None


def do_abort_checkpoint(s: State, ev: E.AbortCheckpoint) -> State:
    return replace(s, pending=None)


# --------------------------------------------------------------------------- crash-task / coordinator / job
def may_crash(s: State, ev: E.Event) -> str | None:
    return None if crash_budget_left(s) else f"crash budget spent (max_crashes={s.config.max_crashes})"


def do_crash_task(s: State, ev: E.CrashTask) -> State:
    return failover.task_failover(replace(s, crashes=s.crashes + 1), ev.task)


def do_crash_coordinator(s: State, ev: E.CrashCoordinator) -> State:
    return failover.global_failover(replace(s, crashes=s.crashes + 1), recreate_coordinator=True)


def do_restart_job(s: State, ev: E.RestartJob) -> State:
    return failover.global_failover(replace(s, crashes=s.crashes + 1), recreate_coordinator=False)


# ---------------------------------------------------------------------------------------- the table
class Action(NamedTuple):
    guard: Callable[[State, E.Event], str | None]
    effect: Callable[[State, E.Event], State]


#: Every action's guard and effect, by event kind (the table of the module docstring).
ACTIONS: dict[str, Action] = {
    "ingest": Action(may_ingest, do_ingest),
    "request-instant": Action(may_request_instant, do_request_instant),
    "flush": Action(may_flush, do_flush),
    "trigger-checkpoint": Action(may_trigger_checkpoint, do_trigger_checkpoint),
    "snapshot-task": Action(may_snapshot_task, do_snapshot_task),
    "complete-checkpoint": Action(may_complete_checkpoint, do_complete_checkpoint),
    "deliver-ack": Action(may_deliver_ack, do_deliver_ack),
    "lose-ack": Action(may_lose_ack, do_lose_ack),
    "clean": Action(may_clean, do_clean),
    "instant-timeout": Action(may_instant_timeout, do_instant_timeout),
    "stop-faults": Action(may_stop_faults, do_stop_faults),
    "abort-checkpoint": Action(may_abort_checkpoint, do_abort_checkpoint),
    "crash-task": Action(may_crash, do_crash_task),
    "crash-coordinator": Action(may_crash, do_crash_coordinator),
    "restart-job": Action(may_crash, do_restart_job),
    "deliver-event": Action(may_deliver_event, do_deliver_event),
    "lose-event": Action(may_lose_event, do_lose_event),
    "request-timeout": Action(may_request_timeout, do_request_timeout),
    "run-job": Action(may_run_job, do_run_job),
    "request-expired": Action(may_request_expired, do_request_expired),
}
assert set(ACTIONS) == set(E.EVENT_TYPES), "every event kind needs a guard and an effect"


def guard(s: State, ev: E.Event) -> str | None:
    """None when ``ev`` is enabled in ``s``, else why not: the task exists, the fault is on (fault events),
    then the action's own guard."""
    task = getattr(ev, "task", None)
    if task is not None and not 0 <= task < s.config.parallelism:
        return f"task {task} does not exist (parallelism {s.config.parallelism})"
    if ev.fault is not None and not faults_on(s, ev.fault):
        return f"fault {ev.fault} is not enabled" + (" (faults stopped)" if s.faults_stopped else "")
    action = ACTIONS.get(ev.kind)
    return f"unknown event kind {ev.kind!r}" if action is None else action.guard(s, ev)


def effect(s: State, ev: E.Event) -> State:
    """The effect of an enabled ``ev`` (the caller checked :func:`guard`)."""
    return ACTIONS[ev.kind].effect(s, ev)
