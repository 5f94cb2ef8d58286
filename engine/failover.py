"""Failover: restore from the last completed checkpoint (``hudi-semantics.md`` 4.4, I12).

Three kinds, each one atomic action of the spec (restore, bootstrap events and recommits happen
before any other event, as Flink starts the coordinator and restores every task before records
flow again):

* **task failover** (``crash-task``): the write tasks restart from the last completed checkpoint
  with attempt + 1 -- their buffers are lost, their source splits rewind, each sends the empty
  "cleanup" bootstrap event so the coordinator drops their partial data for keys >= the
  restored id (``cleanLegacyEvents``). The coordinator keeps its buffers (``subtaskReset``).
  Hudi's Flink pipeline shuffles records into the write tasks (all-to-all), so one failed write
  task restarts the whole region of write tasks; ``task_failover="single"`` restarts only the
  failed task while the others go on (point-wise regions).
* **coordinator failover** (``crash-coordinator``): the job is redeployed from the last completed
  checkpoint (a new coordinator, tasks at attempt 0, restored): ``resetToCheckpoint`` +
  ``restoreEvents`` recommit the serialized entries; tasks re-send their pending state events.
* **global failover** (``restart-job``, also what a blocking-mode instant timeout causes): the
  same execution graph restarts: ``resetToCheckpoint`` (keeping in-memory buffers only in the
  1.1.1 design, ``reset_keeps_memory``) + ``restoreEvents``; tasks restart with attempt + 1, send
  the cleanup event and (with the #19215 fix) their pending state events.

With async event delivery (``event_delivery="async"``) the failed attempts' messages in flight are
dropped and the bootstrap events join the restarted tasks' channels instead of being handled here
(:mod:`model.protocol.channels`, :mod:`model.protocol.failover`).

In every kind the pending checkpoint is aborted. Global kinds also drop acks in flight (the old
coordinator will never see them) and stop every heartbeat (writers died); recommits restart the
heartbeats they need (LAZY). Instants no state covers stay pending without a heartbeat: the
EAGER policy rolls them back at the next ``startCommit``, LAZY at the next clean.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .coordinator import Coordinator
from .settings import Settings

if TYPE_CHECKING:
    from .system import System


def _last_pending(system: System) -> str | None:
    pending = system.table.pending_instants()
    return pending[-1] if pending else None


def _restore_writer(system: System, t: int, attempt: int) -> None:
    ckp = system.last_completed
    confirming = (_last_pending(system) or "") if system._k.coordinator_start else None
    w = system.writer_to_change(t)
    if ckp is None:
        w.restore(0, -1, (), attempt, confirming)
    else:
        snap = ckp.tasks[t]
        w.restore(snap.offset, snap.checkpoint_id, snap.state, attempt, confirming)


def _bootstrap_0x(system: System, tasks) -> None:
    """0.x: one bootstrap event per restarted task, then ``initInstant`` (:func:`model.protocol.failover._bootstrap_0x`)."""
    last = _last_pending(system)
    events = [system.writers[t].bootstrap_event_0x(last) for t in tasks]
    system.coordinator_to_change().initialize_0x(system.table, events)


def _drop_in_flight(system: System, tasks) -> None:
    """Async event delivery: the messages in flight from the failed attempts of ``tasks`` are dropped
    (``SchedulerBase.deliverOperatorEventToCoordinator``), unless the broken design keeps them."""
    cfg: Settings = system._k
    if cfg.event_delivery == "async" and cfg.drop_failed_attempt_events:
        system.channels = tuple(() if t in tasks else ch for t, ch in enumerate(system.channels))


def _send_bootstrap(system: System, tasks, global_failover: bool) -> None:
    restored = system.last_completed is not None
    for t in tasks:
        w = system.writers[t]
        for ev in w.bootstrap_events(system.table, restored, global_failover,
                                     system._k.resend_on_global_failover):
            system._send(t, ev)


def task_failover(system: System, failed: int) -> None:
    """Region (or single-task) failover of the write tasks."""
    system.pending_checkpoint = None
    tasks = [failed] if system._k.task_failover == "single" else list(range(system._k.parallelism))
    _drop_in_flight(system, tasks)
    for t in tasks:
        _restore_writer(system, t, system.writers[t].attempt + 1)
    if system._k.coordinator_start:
        _bootstrap_0x(system, tasks)
    else:
        _send_bootstrap(system, tasks, global_failover=False)


def global_failover(system: System, recreate_coordinator: bool) -> None:
    """Coordinator failover (``recreate_coordinator``) or same-graph global failover."""
    cfg: Settings = system._k
    system.pending_checkpoint = None
    system.acks_in_flight = ()
    system.executor = ()  # the jobs queued on the old coordinator's executor die with it
    system.table.stop_all_heartbeats()
    _drop_in_flight(system, range(cfg.parallelism))
    ckp = system.last_completed
    if recreate_coordinator:
        system.replace_coordinator(Coordinator(cfg))
        keep = False
    else:
        keep = cfg.reset_keeps_memory
    coord = system.coordinator_to_change()
    state = ckp.coordinator_state if ckp is not None else ()
    coord.reset_to_checkpoint(state, keep_memory=keep)
    coord.restore_events(system.table, below=ckp.id if ckp is not None else -(10**9))
    tasks = list(range(cfg.parallelism))
    for t in tasks:
        _restore_writer(system, t, 0 if recreate_coordinator else system.writers[t].attempt + 1)
    if cfg.coordinator_start:
        _bootstrap_0x(system, tasks)
    else:
        _send_bootstrap(system, tasks, global_failover=not recreate_coordinator)
