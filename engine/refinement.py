"""The abstraction function: an engine state (:class:`engine.System`) as the spec's abstract state.

:func:`abstract` maps every part of a System to the value the spec (:mod:`model.protocol.spec`) keeps for it
-- writer tasks, the coordinator's buffers as :class:`BufferEntry` values, the timeline as the tuple of its
instants, commit metadata, heartbeats, the logical clock's counters, the pending and last completed
checkpoints, acks in flight, crashes, whether faults stopped, the messages in flight, the executor's jobs --
so that ``abstract(system) == model.protocol.spec.view(state)`` when both ran the same events. The engine's
monitors (observations, the coordinator's ``assigned`` / ``max_acked``, the table's ``last_key``, commit log,
step count, the stalls and expired requests) are history, not state: the refinement suite compares them
through the invariant verdicts.

Only runs on the logical clock have an abstract state (the spec's only time).
"""

from __future__ import annotations

from model.protocol.state import CoordinatorState, Pending, TableState, View, Writer

from .system import System
from .table import LogicalClock


def abstract(system: System) -> View:
    """The spec's view of ``system`` (see the module docstring)."""
    clock = system.table.clock
    if not isinstance(clock, LogicalClock):
        raise TypeError(f"only a System on the logical clock has an abstract state, not {type(clock).__name__}")
    writers = tuple(Writer(w.task, w.offset, w.flushed, w.checkpoint_id, w.instant, w.current_instant, w.interval,
                           w.state, w.attempt, w.confirming) for w in system.writers)
    coord = system.coordinator
    coordinator = CoordinatorState(tuple((k, e.frozen()) for k, e in sorted(coord.buffers.items())), coord.instant)
    t = system.table
    table = TableState(tuple(t.timeline.instants()), tuple(sorted(t.metadata.items())), frozenset(t.heartbeats),
                       clock.created, clock.since)
    p = system.pending_checkpoint
    pending = None if p is None else Pending(p.id, p.coordinator_state, tuple(p.tasks))
    return View(writers, coordinator, table, pending, system.last_completed, system.next_checkpoint,
                tuple(system.acks_in_flight), system.crashes, system.faults_stopped, system.channels, system.executor)
