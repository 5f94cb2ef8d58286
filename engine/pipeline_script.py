"""The pipeline script: what the PySpark pipeline (:mod:`pipeline.coordinator`) and its SimPy twin
(:mod:`sim.pipeline_twin`) do to the protocol, written once.

The pipeline drives one engine :class:`~engine.System` (``parallelism`` writer tasks: the Spark tasks that write
each micro-batch; the twin: one) with the events that happen in the Spark job; the twin drives one with the same events and
only decides *when* they happen. Both take from here the protocol configuration of a run
(:func:`protocol_config`) and the mapping Spark step -> model events:

=================================  ===========================================================================
Spark step                         model events
=================================  ===========================================================================
a batch starts (or the job ends,   :func:`batch_start`: complete-checkpoint if the pending checkpoint is due
a killed driver recovers)          (every task snapshotted and, in the pipeline, Spark committed its batch),
                                   deliver-ack for every ack in flight, then clean when the model enables it
the batch's ``k`` records          :func:`batch_records`: ingest(0) x ``k``, trigger-checkpoint,
                                   request-instant(0)
the batch's data is written        :func:`after_write`: snapshot-task(0); in ``spark-sink`` mode also
                                   complete-checkpoint + deliver-ack (Hudi's streaming sink commits inside the
                                   batch)
=================================  ===========================================================================

Nothing here applies an event on its own: every function takes the System and the caller's ``apply(event)``
(which must apply the event to that System -- the pipeline also appends it to its trace first, its
write-ahead rule) and returns the events it applied, in order. Each step reads the System after the previous
event was applied, as the pipeline does. Pure: no I/O, no clock, no pyspark.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from model.protocol import (Clean, CompleteCheckpoint, DeliverAck, Event, Ingest, ProtocolConfig,
                            RequestInstant, SnapshotTask, TriggerCheckpoint)

from .system import System

TASK = 0                    # the one writer task (the driver)
MODES = ("blocking", "async", "spark-sink")
MAX_CHECKPOINTS = 10_000    # no bound a real run could hit
MAX_CRASHES = 10_000

Apply = Callable[[Event], None]


def protocol_config(mode: str, records: int, *, table_version: int = 8, table_type: str = "mor",
                    crashes: bool = True, max_checkpoints: int = MAX_CHECKPOINTS,
                    parallelism: int = 1) -> ProtocolConfig:
    """The model configuration of a pipeline run of ``records`` records per split in ``mode`` (one of
    :data:`MODES`).

    ``blocking`` and ``spark-sink`` are the model's blocking mode with the EAGER failed-writes policy,
    ``async`` its async mode with LAZY; ``parallelism`` writer tasks (one split each); the buffer holds every
    record of a split. ``crashes``: the
    driver crash (``coordinator-crash``) is the one fault, without a bound a real run could hit (the
    pipeline); without it, no fault (the twin)."""
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r}; expected one of {MODES}")
    blocking = mode in ("blocking", "spark-sink")
    return ProtocolConfig(mode="blocking" if blocking else "async", table_version=table_version,
                          table_type=table_type, failed_writes="eager" if blocking else "lazy",
                          parallelism=parallelism, max_checkpoints=max_checkpoints, records=records,
                          buffer_size=max(1, records),
                          faults=frozenset({"coordinator-crash"}) if crashes else frozenset(),
                          max_crashes=MAX_CRASHES if crashes else 0)


# ------------------------------------------------------------------------------------------ the steps
def complete_checkpoint(system: System, apply: Apply,
                        committed: Callable[[int], bool] | None = None) -> list[Event]:
    """complete-checkpoint when the pending checkpoint is due: every task snapshotted and, when
    ``committed`` is given, ``committed(checkpoint_id)`` (the pipeline: Spark committed that checkpoint's
    batch)."""
    p = system.pending_checkpoint
    if p is None or not p.all_tasks_done():
        return []
    if committed is not None and not committed(p.id):
        return []
    return _do(apply, CompleteCheckpoint())


def deliver_acks(system: System, apply: Apply) -> list[Event]:
    """deliver-ack for every ack in flight, oldest first."""
    out: list[Event] = []
    while system.acks_in_flight:
        out += _do(apply, DeliverAck(system.acks_in_flight[0]))
    return out


def clean(system: System, apply: Apply) -> list[Event]:
    """clean when the model enables it (the LAZY policy rolls back dead pending instants)."""
    if system.is_enabled(Clean()) is None:
        return _do(apply, Clean())
    return []


def batch_start(system: System, apply: Apply, *, committed: Callable[[int], bool] | None = None,
                settle: Callable[[], None] | None = None) -> list[Event]:
    """A Spark batch starts (also: the job ends; the pipeline calls it for its last batch's commit):
    :func:`complete_checkpoint` (``committed`` as there), :func:`deliver_acks`, :func:`clean`.

    ``settle()`` is called after the acks (whether or not there were any) and again after a clean that
    happened: the pipeline brings its disk to the model there (flush the trace, sync the timeline)."""
    out = complete_checkpoint(system, apply, committed)
    out += deliver_acks(system, apply)
    if settle is not None:
        settle()
    cleaned = clean(system, apply)
    if cleaned and settle is not None:
        settle()
    return out + cleaned


def batch_records(system: System, apply: Apply, records: int | Sequence[int],
                  on_checkpoint: Callable[[int], None] | None = None) -> list[Event]:
    """A batch: ingest(t) x ``records[t]`` for every task t (an int: task 0's count, one task), then
    trigger-checkpoint, then request-instant(t) for every task in task order (they ask with the same last
    known checkpoint id, so they share one instant: ``handleInstantRequest``). ``on_checkpoint(checkpoint_id)``
    is called after trigger-checkpoint, before the instants are requested."""
    counts = [records] if isinstance(records, int) else list(records)
    out: list[Event] = []
    for t, k in enumerate(counts):
        for _ in range(k):
            out += _do(apply, Ingest(t))
    out += _do(apply, TriggerCheckpoint())
    if on_checkpoint is not None:
        on_checkpoint(system.pending_checkpoint.id)
    for t in range(len(counts)):
        out += _do(apply, RequestInstant(t))
    return out


def after_write(system: System, apply: Apply, mode: str) -> list[Event]:
    """The batch's data is written by every task: snapshot-task(t) for each task in order; in ``spark-sink``
    mode the checkpoint completes and its ack is delivered inside the batch."""
    out: list[Event] = []
    for t in range(system.config.parallelism):
        out += _do(apply, SnapshotTask(t))
    if mode == "spark-sink":
        ckp = system.pending_checkpoint.id
        out += _do(apply, CompleteCheckpoint())
        out += _do(apply, DeliverAck(ckp))
    return out


def run_batches(system: System, apply: Apply, mode: str, batches: Iterable[int]) -> list[Event]:
    """A whole run without crashes, Spark committing every batch: for each batch of ``k`` records
    :func:`batch_start`, :func:`batch_records`, :func:`after_write`; then :func:`batch_start` once more
    (the last batch's commit, after its ``foreachBatch`` returned)."""
    out: list[Event] = []
    for k in batches:
        out += batch_start(system, apply)
        out += batch_records(system, apply, k)
        out += after_write(system, apply, mode)
    out += batch_start(system, apply)
    return out


def _do(apply: Apply, ev: Event) -> list[Event]:
    apply(ev)
    return [ev]
