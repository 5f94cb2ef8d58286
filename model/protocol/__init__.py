"""The Flink-style writer <-> coordinator protocol of Hudi, as an executable specification.

Read this package like a TLA+ spec (``hudi-semantics.md`` section 4, invariants I10-I14); it is the
readable protocol, one module per concern:

* :mod:`~model.protocol.state` -- the variables: an immutable :class:`State` (writer tasks, coordinator,
  table, pending and last completed checkpoints, acks in flight, crashes, faults stopped) plus the history
  variables (:class:`History`) the invariants read; :func:`init`;
* :mod:`~model.protocol.actions` -- one named action per event kind: a guard (None, or a sentence saying why
  not) and an effect returning the next state, each citing the Hudi/Flink method it stands for; the rules
  they use live in :mod:`~model.protocol.writer`, :mod:`~model.protocol.coordinator`,
  :mod:`~model.protocol.table`, :mod:`~model.protocol.failover` and :mod:`~model.protocol.channels` (messages
  between the tasks and the coordinator: handled at once, or in flight with ``event_delivery="async"``);
* :mod:`~model.protocol.executor` -- the coordinator's executor as a FIFO queue of jobs (commits, instant
  requests, table-service scheduling; ``executor_queue``), one running at a time;
* :mod:`~model.protocol.spec` -- Next: :func:`enabled` (derived from the guards), :func:`step`,
  :func:`drain`, :func:`view`, and :data:`SPEC`, the spec as a :class:`~model.protocol.machine.Machine`;
* :mod:`model.invariants.protocol` -- the properties, pure predicates over state and history.

Everything is pure and deterministic: no threads, no wall clock, no I/O, no caches; the only time is the
logical clock (:func:`logical_time`). The fast executor of the same rules -- mutable, copy-on-write, cached
hashes, what the explorer and the simulation run, optionally on another time source -- is :mod:`engine`
(``engine.System``, ``engine.ENGINE``); ``properties/test_refinement.py`` keeps the two equal.

Stable API
----------

Configuration -- :mod:`model.protocol.config`, :mod:`model.protocol.variants`::

    cfg = ProtocolConfig()                         # Hudi 1.1: async, tv 8, lazy, "<", snapshot on,
                                                   # coordinator snapshots first
    cfg = ProtocolConfig(mode="blocking", failed_writes="eager", parallelism=2, max_checkpoints=3,
                         records=4, buffer_size=2, faults=frozenset({"lost-ack", "task-crash"}),
                         max_crashes=1)
    cfg = variant("broken-commit-eq", parallelism=2)   # named variant (+ overrides)
    VARIANTS["bug-19215"].description / .expected   # registry: name -> Variant
    cfg.to_dict() / ProtocolConfig.from_dict(d)     # JSON-able (trace headers)
    FAULTS = ("lost-ack", "late-ack", "abort", "task-crash", "coordinator-crash", "full-restart",
              "lost-event", "request-timeout")

The spec -- :mod:`model.protocol.spec`::

    s = init(cfg, seed=0)                # State (frozen); init(cfg, time_source=...) raises: logical clock only
    enabled(s) -> list[Event]            # every event whose guard holds (faults while enabled, the crash
                                         # budget left and not stopped); deterministic order
    guard(s, ev) -> str | None           # None when enabled, else the reason
    s2 = step(s, ev)                     # a new State; RuleViolation("<kind>.not-enabled") when refused
    s3, events = drain(s2)               # stop faults, run checkpoints + acks to quiescence
    view(s) -> View                      # the abstract state (no history): comparable with
                                         # engine.refinement.abstract(system)
    SPEC                                 # the same as a model.protocol.machine.Machine

Read helpers (:mod:`model.protocol.state`): ``committed_offsets(s)``, ``committed_records(s)``,
``table_view(s)``, ``emitted_offsets(s, upto)``, ``emitted_records(s, upto)``, ``pending_instants(s)``,
``is_quiescent(s)``, ``writer_status(s, t)``, ``describe(s)``; :func:`model.protocol.spec.task_step`.

Events -- :mod:`model.protocol.events` (frozen dataclasses with a ``kind`` string;
``ev.to_dict()`` / ``event_from_dict(d)`` round-trip through JSON)::

    normal:  Ingest(task)  RequestInstant(task)  Flush(task)  TriggerCheckpoint()
             SnapshotTask(task)  CompleteCheckpoint()  DeliverAck(checkpoint)  Clean()
             InstantTimeout(task)  StopFaults()  DeliverEvent(task) [event_delivery="async"]
             RunJob()  RequestExpired(task) [executor_queue]
    faults:  LoseAck(checkpoint) ["lost-ack"]; DeliverAck of a newer ack first ["late-ack"];
             AbortCheckpoint() ["abort"]; CrashTask(task) ["task-crash"];
             CrashCoordinator() ["coordinator-crash"]; RestartJob() ["full-restart"];
             LoseEvent(task) ["lost-event", async event delivery only];
             RequestTimeout(task) ["request-timeout"]

Invariants -- :mod:`model.invariants.protocol`: ``check_step(state) -> list[Verdict]`` after every
event, ``check_drained(state) -> list[Verdict]`` after :func:`drain`.

Traces -- :mod:`model.trace`: ``header(config, seed, driver, **extra)``, ``event_record(step, ev)``,
``to_lines(config, events, seed, driver)``, ``to_text(...)``, ``parse_trace(text) -> Trace``
(``TraceError(line, problem)``); files: ``lakeio.traces.write_trace(path, config, events,
seed, driver)`` / ``load_trace(path)``; ``hoodie-lab replay TRACE`` replays one.

Times: the logical clock gives the k-th instant of every run the same requested time (epoch 2025-01-01 +
k seconds; completion times fill in between), so states reached along different paths compare equal.

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
    DeliverEvent,
    Event,
    Flush,
    Ingest,
    InstantTimeout,
    LoseAck,
    LoseEvent,
    RequestInstant,
    RequestExpired,
    RequestTimeout,
    RestartJob,
    RunJob,
    SnapshotTask,
    StopFaults,
    TriggerCheckpoint,
    event_from_dict,
)
from .source import Record, Source
from .values import (BOOTSTRAP_INSTANT, DEFAULT_EPOCH_MS, BufferEntry, CompletedCheckpoint, TaskSnapshot,
                     WriteMetadataEvent, WriteStatus, empty_bootstrap, logical_time)
from .variants import VARIANTS, Variant, variant
from .state import History, State, View
from .spec import SPEC, DRAIN_LIMIT, drain, enabled, guard, init, step, task_step, view

__all__ = [
    "ALL_FAULTS", "FAULTS", "ProtocolConfig", "EVENT_TYPES", "Event", "event_from_dict",
    "AbortCheckpoint", "Clean", "CompleteCheckpoint", "CrashCoordinator", "CrashTask", "DeliverAck", "DeliverEvent", "LoseEvent", "RequestTimeout",
    "RequestExpired", "RunJob",
    "Flush", "Ingest", "InstantTimeout", "LoseAck", "RequestInstant", "RestartJob", "SnapshotTask",
    "StopFaults", "TriggerCheckpoint", "Record", "Source", "BOOTSTRAP_INSTANT", "DEFAULT_EPOCH_MS", "BufferEntry",
    "CompletedCheckpoint", "TaskSnapshot", "WriteMetadataEvent", "WriteStatus", "empty_bootstrap", "logical_time",
    "VARIANTS", "Variant", "variant",
    "SPEC", "DRAIN_LIMIT", "History", "State", "View", "drain", "enabled", "guard", "init", "step", "task_step",
    "view",
]
