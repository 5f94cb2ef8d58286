"""The Flink-style writer <-> coordinator protocol of Hudi, as an executable specification.

Read this package like a TLA+ spec (``hudi-semantics.md`` section 4, invariants I10-I14): the
state is a :class:`System` (writer tasks, the coordinator, checkpoints, acks in flight, the
table); every transition is one named *action* (an :class:`Event`) with a guard ("enabled when")
and an effect; properties live in :mod:`model.invariants.protocol`. Everything is pure and
deterministic: no threads, no wall clock, no I/O; the only source of time is a monotone
:class:`TimeSource` (a logical clock by default, or an adapter over :mod:`model.truetime`).

Stable API (used by ``hoodie-lab explore``, the SimPy simulation and the PySpark pipeline)
---------------------------------------------------------------------------------------

Configuration -- :mod:`model.protocol.config`, :mod:`model.protocol.variants`::

    cfg = ProtocolConfig()                         # Hudi 1.1: async, tv 8, lazy, "<", snapshot on,
                                                   # coordinator snapshots first
    cfg = ProtocolConfig(mode="blocking", failed_writes="eager", parallelism=2, max_checkpoints=3,
                         records=4, buffer_size=2, faults=frozenset({"lost-ack", "task-crash"}),
                         max_crashes=1)
    cfg = variant("broken-commit-eq", parallelism=2)   # named variant (+ overrides)
    VARIANTS["bug-19215"].description / .expected   # registry: name -> Variant
    cfg.to_dict() / ProtocolConfig.from_dict(d)     # JSON-able (trace headers)
    FAULTS = ("lost-ack", "late-ack", "abort", "task-crash", "coordinator-crash", "full-restart")

The system -- :mod:`model.protocol.system`::

    s = System(cfg)                     # or System(cfg, time_source=TrueTimeSource(gen, now_fn))
    s.enabled_events() -> list[Event]   # every event possible now (faults included while enabled
                                        # by cfg.faults, the crash budget and not stopped), bounded
                                        # by cfg (checkpoints, records); deterministic order
    s.is_enabled(ev) -> str | None      # None when enabled, else the reason
    s.apply(ev) -> None                 # raises model.errors.RuleViolation("<kind>.not-enabled");
                                        # s.apply(ev, check=False) skips the guard (explorers, for
                                        # events just taken from enabled_events())
    s.clone() -> System                 # cheap (copy-on-write of every part: timeline, coordinator,
                                        # event buffers, writer tasks, pending checkpoint)
    s.fingerprint() -> tuple            # hashable canonical state (requested times canonical by construction)
    s.fingerprint_hash() -> int         # its hash, re-hashing only the parts an event changed
    s.drain(max_checkpoints=5) -> list[Event]      # stop faults, run checkpoints + acks to quiescence
    s.step_count                        # events applied so far

Read access (all plain values; never mutate them)::

    s.config, s.table.timeline (model.timeline.Timeline), s.table.metadata {instant: statuses}
    s.committed_records() -> collections.Counter[Record]      # what a reader sees (multiset)
    s.table_view() -> dict[key, value]                          # latest value per record key
    s.emitted_records(upto="checkpoint"|"read") -> list[Record]
    s.pending_instants() -> list[str]          # pending data instants on the timeline
    s.coordinator.buffers -> {checkpoint_key: EventBuffer(instant, slots: list[event|None])}
                                               # (changed in place by its coordinator: read, never write;
                                               # checkpoint state holds frozen BufferEntry(instant, slots))
    s.coordinator.instant                      # newest instant the coordinator started ("" none)
    s.writers[t] -> WriterTask (offset, flushed, checkpoint_id, instant, interval, state, attempt)
    s.writer_status(t) -> "running" | "needs-instant" | "blocked" | "idle"
        # "blocked": the task must flush (buffer full or barrier) and the coordinator refuses a new
        # instant (blocking mode: the previous one is not committed) -- charge stall time here
    s.pending_checkpoint -> PendingCheckpoint | None   # id, coordinator_state, tasks: [TaskSnapshot|None],
                                               # acknowledged; all_tasks_done() (changed in place by
                                               # the System that owns it: read, never write)
    s.last_completed -> CompletedCheckpoint | None
    s.acks_in_flight -> tuple[int]             # completed checkpoints whose notification is pending
    s.observations -> tuple[Observation]       # rule breaks the model witnessed (for invariants)

Events -- :mod:`model.protocol.events` (frozen dataclasses with a ``kind`` string;
``ev.to_dict()`` / ``event_from_dict(d)`` round-trip through JSON)::

    normal:  Ingest(task)  RequestInstant(task)  Flush(task)  TriggerCheckpoint()
             SnapshotTask(task)  CompleteCheckpoint()  DeliverAck(checkpoint)  Clean()
             InstantTimeout(task)  StopFaults()
    faults:  LoseAck(checkpoint) ["lost-ack"]; DeliverAck of a newer ack first ["late-ack"];
             AbortCheckpoint() ["abort"]; CrashTask(task) ["task-crash"];
             CrashCoordinator() ["coordinator-crash"]; RestartJob() ["full-restart"]

Using the pieces on their own (the pipeline's driver-side coordinator): :class:`Coordinator`
(``handle_instant_request(table, key)``, ``handle_write_metadata(table, ev)``,
``checkpoint(n)``, ``notify_checkpoint_complete(table, n)``, ``reset_to_checkpoint(...)``,
``handle_bootstrap_event(table, ev)``), :class:`WriterTask` and :class:`Table` (timeline, commit
metadata, heartbeats, rollback) take explicit arguments and hold no hidden references.

Invariants -- :mod:`model.invariants.protocol`: ``check_step(system) -> list[Verdict]`` after every
event, ``check_drained(system) -> list[Verdict]`` after :meth:`System.drain`.

Traces -- :mod:`model.trace`: ``header(config, seed, driver, **extra)``, ``event_record(step, ev)``,
``to_lines(config, events, seed, driver)``, ``to_text(...)``, ``parse_trace(text) -> Trace``
(``TraceError(line, problem)``); files: ``lakeio.traces.write_trace(path, config, events,
seed, driver)`` / ``load_trace(path)``; ``hoodie-lab replay TRACE`` replays one.

Times: the default :class:`LogicalClock` gives the k-th instant of every run the same requested
time (epoch 2025-01-01 + k seconds; completion times fill in between), so fingerprints need no
renaming. ``TrueTimeSource(gen, now_fn, process="coordinator")`` takes times from a
:mod:`model.truetime` generator (``gen.generate(process, now_fn())``) for simulations.

Checkpoint keys: writers start with checkpoint id -1; data written between checkpoints n-1 and
n is keyed n-1; checkpoint ids start at 1; the ack of n commits every buffered key < n.

Model findings (see :mod:`model.protocol.variants`): ``bug-19215`` reproduces Hudi #19215;
``hudi-1.1-partial-abort`` and ``single-task-failover`` are data-loss schedules this model finds
in the Hudi 1.1 design when tasks disagree on their last-known checkpoint id (not confirmed
against Hudi).
"""

from __future__ import annotations

from .config import ALL_FAULTS, FAULTS, ProtocolConfig
from .events import (
    EVENT_TYPES,
    AbortCheckpoint,
    Clean,
    CompleteCheckpoint,
    CrashCoordinator,
    CrashTask,
    DeliverAck,
    Event,
    Flush,
    Ingest,
    InstantTimeout,
    LoseAck,
    RequestInstant,
    RestartJob,
    SnapshotTask,
    StopFaults,
    TriggerCheckpoint,
    event_from_dict,
)
from .source import Record, Source
from .values import (BOOTSTRAP_INSTANT, DEFAULT_EPOCH_MS, BufferEntry, CompletedCheckpoint, TaskSnapshot,
                     WriteMetadataEvent, WriteStatus, empty_bootstrap, logical_time)
from .variants import VARIANTS, Variant, variant

__all__ = [
    "ALL_FAULTS", "FAULTS", "ProtocolConfig", "EVENT_TYPES", "Event", "event_from_dict",
    "AbortCheckpoint", "Clean", "CompleteCheckpoint", "CrashCoordinator", "CrashTask", "DeliverAck",
    "Flush", "Ingest", "InstantTimeout", "LoseAck", "RequestInstant", "RestartJob", "SnapshotTask",
    "StopFaults", "TriggerCheckpoint", "Record", "Source", "BOOTSTRAP_INSTANT", "DEFAULT_EPOCH_MS", "BufferEntry",
    "CompletedCheckpoint", "TaskSnapshot", "WriteMetadataEvent", "WriteStatus", "empty_bootstrap", "logical_time",
    "VARIANTS", "Variant", "variant",
]
