"""Failover: restore from the last completed checkpoint (``hudi-semantics.md`` 4.4, I12).

Each kind is one atomic step of the spec (restore, bootstrap events and recommits happen before any other
event, as Flink starts the coordinator and restores every task before records flow again):

* :func:`task_failover` (``crash-task``): the write tasks restart from the last completed checkpoint with
  attempt + 1 -- buffers lost, splits rewound -- and each sends the empty "cleanup" bootstrap event so the
  coordinator drops their partial data for keys >= the restored id (``cleanLegacyEvents``). The coordinator
  keeps its buffers (``subtaskReset``). Hudi's pipeline shuffles records into the write tasks (one failover
  region): every write task restarts; ``task_failover="single"`` restarts only the failed one.
* :func:`global_failover` with ``recreate_coordinator`` (``crash-coordinator``): the job is redeployed from the
  last completed checkpoint -- a new coordinator, ``resetToCheckpoint`` + ``restoreEvents`` recommit the
  serialized entries, tasks at attempt 0 re-send their pending state events.
* :func:`global_failover` without (``restart-job``, a blocking-mode instant timeout): the same execution graph
  restarts -- ``resetToCheckpoint`` (keeping in-memory buffers only with ``reset_keeps_memory``, 1.1.1) +
  ``restoreEvents``; tasks restart with attempt + 1, send the cleanup event and (#19215 fix) their pending
  state events.

With ``event_delivery="async"`` the messages in flight from the restarted tasks are dropped (Flink's
scheduler refuses operator events of an execution attempt that is no longer running,
``SchedulerBase.deliverOperatorEventToCoordinator``; the broken ``drop_failed_attempt_events=False``
keeps them) and the bootstrap events join the restarted tasks' channels: they reach the coordinator
one by one, interleaved with acks in flight, commits and the other tasks' writes -- the failover is
no longer one atomic step for the coordinator. Restoring the tasks' local state stays one step: a
restarted task is invisible to the others until its first message arrives, so restoring them one by
one adds no behaviour the coordinator can see.

0.x coordinator-started instants (``coordinator_starts_instants``): every restarted task sends exactly one
bootstrap event (its state events of the last pending instant, merged, or an empty one) and is confirming;
the coordinator nulls the restarted tasks' slots (``subtaskFailed``) and, with every task's event in,
recommits the pending instant they carry and starts a new one (``handleBootstrapEvent -> initInstant``) --
for a task failover too, where 1.1 keeps its buffers and starts nothing.

Every kind aborts the pending checkpoint. Global kinds also drop the acks in flight (the old coordinator
never sees them) and the jobs queued on its executor (``executor_queue``: the commits and requests it had not
run yet die with it; a task failover keeps them -- a failed attempt's request still runs, its answer lost),
and stop every heartbeat (the writers died); recommits restart the heartbeats they need (LAZY). Instants no
state covers stay pending without a heartbeat: EAGER rolls them back at the next ``startCommit``, LAZY at the
next clean.
"""

from __future__ import annotations

from dataclasses import replace

from . import coordinator, table, writer
from .channels import send
from .state import State, last_pending_instant


def _drop_in_flight(s: State, tasks) -> State:
    """The messages in flight from the failed attempts of ``tasks`` are dropped (async delivery)."""
    if not s.config.async_events or not s.config.drop_failed_attempt_events:
        return s
    return replace(s, channels=tuple(() if t in tasks else ch for t, ch in enumerate(s.channels)))


def _restore_writer(s: State, t: int, attempt: int) -> State:
    ckp = s.last_completed
    w = s.writers[t]
    confirming = None
    if s.config.coordinator_start:  # 0.x initializeState: currentInstant = lastPendingInstant(); confirming
        confirming = last_pending_instant(s) or ""
    if ckp is None:
        w = writer.restore(w, 0, -1, (), attempt, confirming)
    else:
        snap = ckp.tasks[t]
        w = writer.restore(w, snap.offset, snap.checkpoint_id, snap.state, attempt, confirming)
    return replace(s, writers=s.writers[:t] + (w,) + s.writers[t + 1:])


def _bootstrap_0x(s: State, tasks) -> State:
    """0.x: each restarted task sends its one bootstrap event (:func:`model.protocol.writer.bootstrap_event_0x`);
    the coordinator initializes the instant once it has every task's (:func:`coordinator.initialize_0x`)."""
    last = last_pending_instant(s)
    return coordinator.initialize_0x(s, [writer.bootstrap_event_0x(s.writers[t], last) for t in tasks])


def _send_bootstrap(s: State, tasks, global_failover: bool) -> State:
    """Each restarted task, in task order, sends its bootstrap events (``sendBootstrapEvent``); the
    coordinator handles each before the next task asks what is still pending."""
    restored = s.last_completed is not None
    for t in tasks:
        for ev in writer.bootstrap_events(s.writers[t], s.table, restored, global_failover,
                                          s.config.resend_on_global_failover):
            s = send(s, t, ev)
    return s


def task_failover(s: State, failed: int) -> State:
    """Region (or single-task) failover of the write tasks."""
    s = replace(s, pending=None)
    tasks = [failed] if s.config.task_failover == "single" else list(range(s.config.parallelism))
    s = _drop_in_flight(s, tasks)
    for t in tasks:
        s = _restore_writer(s, t, s.writers[t].attempt + 1)
    if s.config.coordinator_start:
        return _bootstrap_0x(s, tasks)
    return _send_bootstrap(s, tasks, global_failover=False)


def global_failover(s: State, recreate_coordinator: bool) -> State:
    """Coordinator failover (``recreate_coordinator``: a new coordinator, tasks at attempt 0) or same-graph
    global failover (the coordinator object survives, tasks at attempt + 1)."""
    cfg = s.config
    s = table.stop_all_heartbeats(replace(s, pending=None, acks_in_flight=(), executor=()))
    s = _drop_in_flight(s, range(cfg.parallelism))
    ckp = s.last_completed
    keep = False if recreate_coordinator else cfg.reset_keeps_memory
    s = coordinator.reset_to_checkpoint(s, ckp.coordinator_state if ckp is not None else (), keep_memory=keep)
    s = coordinator.restore_events(s, below=ckp.id if ckp is not None else -(10**9))
    tasks = list(range(cfg.parallelism))
    for t in tasks:
        s = _restore_writer(s, t, 0 if recreate_coordinator else s.writers[t].attempt + 1)
    if cfg.coordinator_start:
        return _bootstrap_0x(s, tasks)
    return _send_bootstrap(s, tasks, global_failover=not recreate_coordinator)
