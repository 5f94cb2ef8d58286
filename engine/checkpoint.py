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

from typing import Any

from model.protocol.values import CompletedCheckpoint, TaskSnapshot  # noqa: F401 - re-exported


class PendingCheckpoint:
    """Checkpoint ``id`` while it is pending (Flink's ``PendingCheckpoint``): the coordinator's snapshot
    (None until taken) and, per task, its acknowledgement -- the :class:`TaskSnapshot` it took at the
    barrier, None until then.

    Mutable, as Flink's: :meth:`acknowledge_task` records a task's snapshot in place and counts it
    (``acknowledgeTask``; :meth:`all_tasks_done` is ``isFullyAcknowledged``). A checkpoint waits for
    every task, so recording one snapshot in a new tuple each time would copy ``parallelism`` slots per
    task. A :class:`~model.protocol.system.System` owns its pending checkpoint copy-on-write, as it owns
    its writer tasks (a clone shares it until one of them writes; :meth:`copy`). Equality is by value;
    :meth:`key` is the hashable form (a mutable object has no hash)."""

    __slots__ = ("id", "coordinator_state", "tasks", "acknowledged", "_cs_h", "_tasks_h", "_canon")

    def __init__(self, id: int = -1, coordinator_state: tuple | None = None, parallelism: int = -1):
        # called with no argument: blank, for copy() to fill -- and for pickle (the parallel search moves states),
        # whose __new__ runs __init__ without arguments once mypyc compiled the class
        if parallelism < 0:
            return
        self.id = id
        self.coordinator_state = coordinator_state  # None until the coordinator snapshot is taken
        self.tasks: list = [None] * parallelism     # per task: TaskSnapshot | None (barrier not processed yet)
        self.acknowledged = 0                       # tasks whose snapshot is in ``tasks``
        self._cs_h: Any = None      # hash(coordinator_state) once asked (it is set at creation and never changed)
        self._tasks_h: Any = None   # per task, hash(tasks[t]) once asked (None: not yet, or changed since)
        self._canon: Any = None     # engine.canonical.checkpoint_hashes' cache (checked by identity; copies share it)

    def copy(self) -> "PendingCheckpoint":
        p = PendingCheckpoint()
        p.id, p.coordinator_state, p.tasks, p.acknowledged = (self.id, self.coordinator_state, list(self.tasks),
                                                              self.acknowledged)
        p._cs_h = self._cs_h
        p._canon = self._canon
        p._tasks_h = None if self._tasks_h is None else list(self._tasks_h)
        return p

    def acknowledge_task(self, task: int, snap: TaskSnapshot) -> None:
        """``task`` processed the barrier: its snapshot is ``snap`` (a task acknowledges once)."""
        if self.tasks[task] is not None:
            raise ValueError(f"checkpoint {self.id}: task {task} already acknowledged")
        self.tasks[task] = snap
        self.acknowledged += 1
        if self._tasks_h is not None:
            self._tasks_h[task] = None

    def task_done(self, task: int) -> bool:
        return self.tasks[task] is not None

    def all_tasks_done(self) -> bool:
        return self.acknowledged == len(self.tasks)

    def key(self) -> tuple:
        """The value, hashable: ``(id, coordinator_state, tasks as a tuple)``."""
        return (self.id, self.coordinator_state, tuple(self.tasks))

    def key_hash(self) -> int:
        """A hash of :meth:`key` with the coordinator state and each task's snapshot given by its hash, each
        kept until it changes (a function of the key, so equal keys hash equal): a task's acknowledgement
        rehashes its own snapshot only."""
        cs = self._cs_h
        if cs is None:
            cs = self._cs_h = hash(self.coordinator_state)
        hs = self._tasks_h
        if hs is None:
            hs = self._tasks_h = [None] * len(self.tasks)
        for t, h in enumerate(hs):
            if h is None:
                hs[t] = hash(self.tasks[t])
        return hash((self.id, cs, tuple(hs)))

    def __eq__(self, other) -> bool:
        return isinstance(other, PendingCheckpoint) and self.key() == other.key()

    __hash__ = None  # mutable: hash key()

    def __repr__(self) -> str:
        return f"PendingCheckpoint(id={self.id}, coordinator_state={self.coordinator_state!r}, tasks={self.tasks!r})"

