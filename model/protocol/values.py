"""The protocol's values: what tasks report, what checkpoints hold, what the table commits.

Plain immutable values shared by the spec (:mod:`model.protocol.spec`) and every executor of it (the engine,
the pipeline's driver-side coordinator): a value means the same thing wherever it travels, so the refinement
suite can compare states built by different executors field by field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..instant import format_millis

#: ``WriteMetadataEvent.BOOTSTRAP_INSTANT``: the instant of an empty bootstrap event.
BOOTSTRAP_INSTANT = ""

#: 2025-01-01T00:00:00Z, the epoch of the model's logical clock (as in model.truetime).
DEFAULT_EPOCH_MS = 1_735_689_600_000


class WriteStatus(NamedTuple):
    """One data file: records ``[start, end)`` of source split ``task`` (Hudi's ``WriteStatus``)."""

    task: int
    start: int
    end: int


class WriteMetadataEvent(NamedTuple):
    """``WriteMetadataEvent`` (task -> coordinator): the statuses a task flushed under ``instant``, keyed by
    the task's last known checkpoint id."""

    task: int
    checkpoint_id: int
    instant: str
    statuses: tuple  # tuple[WriteStatus, ...]
    last_batch: bool = False
    bootstrap: bool = False

    def merge_with(self, other: "WriteMetadataEvent") -> "WriteMetadataEvent":
        """``WriteMetadataEvent.mergeWith``: same task; instant := other's; lastBatch |= other's; statuses
        concatenated."""
        return WriteMetadataEvent(self.task, self.checkpoint_id, other.instant,
                                  self.statuses + other.statuses,
                                  self.last_batch or other.last_batch, self.bootstrap and other.bootstrap)

    def __str__(self) -> str:
        recs = ",".join(f"[{s.start},{s.end})" for s in self.statuses) or "-"
        flags = ("L" if self.last_batch else "") + ("B" if self.bootstrap else "")
        inst = self.instant or '""'
        return f"ev(t{self.task} k{self.checkpoint_id} {inst} {recs}{' ' + flags if flags else ''})"


def empty_bootstrap(task: int, checkpoint_id: int) -> WriteMetadataEvent:
    """``WriteMetadataEvent.emptyBootstrap(taskId, ckpId)``: no statuses, instant ""."""
    return WriteMetadataEvent(task, checkpoint_id, BOOTSTRAP_INSTANT, (), False, True)


class BufferEntry(NamedTuple):
    """One ``EventBuffers`` entry as a value: the instant of a checkpoint-id key and one write-metadata slot
    per task (None: the task sent nothing). What the coordinator's checkpoint state serializes."""

    instant: str
    slots: tuple  # tuple[WriteMetadataEvent | None, ...]

    def __str__(self) -> str:
        return describe_slots(self.instant, self.slots)


def describe_slots(instant: str, slots) -> str:
    return f"{instant}: [" + ", ".join("-" if s is None else str(s) for s in slots) + "]"


class TaskSnapshot(NamedTuple):
    """A task's part of a checkpoint: source offset, its checkpoint id, ``write-metadata-state``."""

    offset: int
    checkpoint_id: int
    state: tuple  # tuple[WriteMetadataEvent, ...]


class CompletedCheckpoint(NamedTuple):
    """A completed checkpoint: what a failover restores (Flink's ``CompletedCheckpoint``)."""

    id: int
    coordinator_state: tuple  # tuple[(key, BufferEntry)]
    tasks: tuple              # tuple[TaskSnapshot]

    def offsets(self) -> tuple:
        return tuple(t.offset for t in self.tasks)


def logical_time(created: int, since: int, epoch_ms: int = DEFAULT_EPOCH_MS) -> str:
    """The model's logical TrueTime: the ``created``-th requested time is ``epoch + 1000*created`` ms and
    the ``since``-th completion after it ``epoch + 1000*created + since`` (``since`` < 1000). Every time is
    greater than all earlier ones (the abstraction :mod:`model.truetime` proves for a correct generator), and
    the k-th instant of every run has the same time, so states reached along different paths compare equal
    without renaming."""
    if since >= 1000:
        raise OverflowError("more than 999 completions between two requested times")
    return format_millis(epoch_ms + 1000 * created + since)


# ------------------------------------------------------------------ the coordinator's executor's jobs
# ``StreamWriteOperatorCoordinator`` runs its handlers as jobs of one single-threaded executor
# (``NonThrownExecutor``, "meta-event-handle"): ``executor.execute(...)`` queues them, one runs at a time, in
# order (``ProtocolConfig.executor_queue``). Frozen dataclasses (not tuples): jobs of different kinds never
# compare equal.

@dataclass(frozen=True, slots=True)
class CommitJob:
    """``notifyCheckpointComplete(checkpoint)`` queued on the executor: ``commitInstants(checkpoint)``."""

    checkpoint: int

    def __str__(self) -> str:
        return f"commit(ckp {self.checkpoint})"


@dataclass(frozen=True, slots=True)
class RequestJob:
    """Task ``task``'s instant request (``Correspondent.requestInstantTime(key)``) of execution attempt
    ``attempt``, queued behind the jobs before it; ``handleInstantRequest(key)`` answers it when it runs (the
    answer to an attempt that failed meanwhile reaches no one)."""

    task: int
    key: int
    attempt: int

    def __str__(self) -> str:
        return f"request(task {self.task}, key {self.key}, attempt {self.attempt})"


@dataclass(frozen=True, slots=True)
class TableServiceJob:
    """``scheduleTableServices`` (compaction / clean scheduling) run on the executor after a commit.
    ``slow``: it outlasts an instant request's RPC timeout; ``overdue``: a request queued behind it already
    timed out (how much longer it runs is unknown)."""

    slow: bool
    overdue: bool = False

    def __str__(self) -> str:
        return f"table-service({'slow' if self.slow else 'bounded'}{', overdue' if self.overdue else ''})"
