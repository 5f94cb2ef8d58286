"""Flink checkpoints as the protocol sees them.

Checkpoint n goes: trigger -> (coordinator-first: ``checkpointCoordinator(n)``) -> barrier at
each task (``snapshotState``) -> (tasks-first: the coordinator snapshot here) -> complete -> the
notification ``notifyCheckpointComplete(n)`` (the "ack") is *best effort*: it may be delivered,
delivered late (after a newer ack or after the next checkpoint started), or lost. A pending
checkpoint may be aborted (declined, timed out, or any failover). Only one checkpoint is pending
at a time (``execution.checkpointing.max-concurrent-checkpoints`` = 1, the default). Ids start
at 1; restoring uses the last *completed* checkpoint.
"""

from __future__ import annotations

from typing import NamedTuple

#: ``_new(Cls, (fields...))`` is the NamedTuple ``Cls(fields...)`` at half the cost (no Python-level __new__).
_new = tuple.__new__


class TaskSnapshot(NamedTuple):
    """A task's part of a checkpoint: source offset, its checkpoint id, ``write-metadata-state``."""

    offset: int
    checkpoint_id: int
    state: tuple  # tuple[WriteMetadataEvent, ...]


class PendingCheckpoint(NamedTuple):
    id: int
    coordinator_state: tuple | None  # None until the coordinator snapshot is taken
    tasks: tuple                       # per task: TaskSnapshot | None (barrier not processed yet)

    def with_task(self, task: int, snap: TaskSnapshot) -> "PendingCheckpoint":
        """This checkpoint with ``task``'s barrier processed (its snapshot ``snap``)."""
        tasks = list(self.tasks)  # (cheaper than slicing + concatenating at 64 tasks)
        tasks[task] = snap
        return _new(PendingCheckpoint, (self.id, self.coordinator_state, tuple(tasks)))

    def task_done(self, task: int) -> bool:
        return self.tasks[task] is not None

    def all_tasks_done(self) -> bool:
        return all(self.tasks)  # a TaskSnapshot is a non-empty tuple (true), unlike None; no == asked


class CompletedCheckpoint(NamedTuple):
    id: int
    coordinator_state: tuple  # tuple[(key, BufferEntry)]
    tasks: tuple              # tuple[TaskSnapshot]

    def offsets(self) -> tuple:
        return tuple(t.offset for t in self.tasks)
