"""Events: the named actions of the protocol, as small frozen values.

Each event is one action of the spec (the guard and the effect are in
:mod:`model.protocol.system`). ``kind`` is the stable name used in traces; ``to_dict`` /
:func:`event_from_dict` round-trip through JSON (``{"kind": "ingest", "task": 0}``).

Normal actions
    ``ingest(task)``             the task reads the next record of its source split into its buffer
    ``request-instant(task)``    the task asks the coordinator for an instant with its last known
                                 checkpoint id (``Correspondent.requestInstantTime``)
    ``flush(task)``              eager flush of a full buffer under the granted instant; sends a
                                 write-metadata event (``lastBatch=false``)
    ``trigger-checkpoint``       the checkpoint coordinator starts checkpoint n (coordinator-first:
                                 ``checkpointCoordinator(n)`` runs here, before any barrier)
    ``snapshot-task(task)``      the barrier reaches the task: flush the rest (``lastBatch=true``),
                                 replace ``write-metadata-state``, remember checkpoint id n
    ``complete-checkpoint``      every task acknowledged: checkpoint n is complete and its
                                 notification (the "ack") is in flight
    ``deliver-ack(checkpoint)``  ``notifyCheckpointComplete(n)`` reaches the coordinator
    ``clean``                    a clean runs the LAZY failed-writes rollback
    ``deliver-event(task)``      async event delivery: the oldest message in flight on task's channel
                                 (a write-metadata or bootstrap event, or the task's checkpoint
                                 acknowledgement) reaches the coordinator / checkpoint coordinator
    ``instant-timeout(task)``    blocking mode: the instant request timed out
                                 (``CommitGuard`` / ``write.commit.ack.timeout``) -> global failover;
                                 0.x coordinator-started instants: the writer's wait for a new instant
                                 (``instantToWrite``'s ``TimeWait``) -> the task fails, task failover;
                                 ``request_thread="executor"``: the guard's wait of the request at
                                 the head of the executor's queue, holding the thread -> global failover
    ``run-job``                  executor queue: the coordinator's executor runs its oldest job (a
                                 commit, an instant request, a table-service scheduling)
    ``request-expired(task)``    executor queue: the task's instant request, queued behind a slow
                                 table-service job, outlasts its RPC timeout; the task fails (certain
                                 once the job is slow, so not a fault; not fair: the environment's timer)
    ``stop-faults``              from here on no fault is enabled (drain)

Faults (enabled by ``ProtocolConfig.faults``)
    ``lose-ack(checkpoint)`` [lost-ack], ``deliver-ack`` of a newer ack first [late-ack],
    ``abort-checkpoint`` [abort], ``crash-task(task)`` [task-crash],
    ``crash-coordinator`` [coordinator-crash], ``restart-job`` [full-restart],
    ``lose-event(task)`` [lost-event] (async event delivery only),
    ``request-timeout(task)`` [request-timeout]: the task's instant request, queued on the coordinator's
    executor behind a slow commit or table service, times out; the task fails (with ``executor_queue``: only
    while another job is ahead of it in the queue)
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class Event:
    """Base class: ``kind`` names the action; subclasses add ``task`` or ``checkpoint``."""

    kind: ClassVar[str] = "event"
    fault: ClassVar[str | None] = None  # the fault kind that enables it, if it is a fault

    def to_dict(self) -> dict:
        d = {"kind": self.kind}
        for f in fields(self):
            d[f.name] = getattr(self, f.name)
        return d

    def __str__(self) -> str:
        args = ", ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))
        return f"{self.kind}({args})"

    def _repr_pretty_(self, p, cycle) -> None:  # used by Hypothesis when it prints draws
        p.text(str(self))


@dataclass(frozen=True, slots=True)
class Ingest(Event):
    task: int
    kind: ClassVar[str] = "ingest"


@dataclass(frozen=True, slots=True)
class RequestInstant(Event):
    task: int
    kind: ClassVar[str] = "request-instant"


@dataclass(frozen=True, slots=True)
class Flush(Event):
    task: int
    kind: ClassVar[str] = "flush"


@dataclass(frozen=True, slots=True)
class TriggerCheckpoint(Event):
    kind: ClassVar[str] = "trigger-checkpoint"


@dataclass(frozen=True, slots=True)
class SnapshotTask(Event):
    task: int
    kind: ClassVar[str] = "snapshot-task"


@dataclass(frozen=True, slots=True)
class CompleteCheckpoint(Event):
    kind: ClassVar[str] = "complete-checkpoint"


@dataclass(frozen=True, slots=True)
class DeliverAck(Event):
    checkpoint: int
    kind: ClassVar[str] = "deliver-ack"


@dataclass(frozen=True, slots=True)
class Clean(Event):
    kind: ClassVar[str] = "clean"


@dataclass(frozen=True, slots=True)
class DeliverEvent(Event):
    task: int
    kind: ClassVar[str] = "deliver-event"


@dataclass(frozen=True, slots=True)
class InstantTimeout(Event):
    task: int
    kind: ClassVar[str] = "instant-timeout"


@dataclass(frozen=True, slots=True)
class RunJob(Event):
    kind: ClassVar[str] = "run-job"


@dataclass(frozen=True, slots=True)
class RequestExpired(Event):
    task: int
    kind: ClassVar[str] = "request-expired"


@dataclass(frozen=True, slots=True)
class StopFaults(Event):
    kind: ClassVar[str] = "stop-faults"


@dataclass(frozen=True, slots=True)
class LoseAck(Event):
    checkpoint: int
    kind: ClassVar[str] = "lose-ack"
    fault: ClassVar[str] = "lost-ack"


@dataclass(frozen=True, slots=True)
class AbortCheckpoint(Event):
    kind: ClassVar[str] = "abort-checkpoint"
    fault: ClassVar[str] = "abort"


@dataclass(frozen=True, slots=True)
class CrashTask(Event):
    task: int
    kind: ClassVar[str] = "crash-task"
    fault: ClassVar[str] = "task-crash"


@dataclass(frozen=True, slots=True)
class CrashCoordinator(Event):
    kind: ClassVar[str] = "crash-coordinator"
    fault: ClassVar[str] = "coordinator-crash"


@dataclass(frozen=True, slots=True)
class RestartJob(Event):
    kind: ClassVar[str] = "restart-job"
    fault: ClassVar[str] = "full-restart"


@dataclass(frozen=True, slots=True)
class LoseEvent(Event):
    task: int
    kind: ClassVar[str] = "lose-event"
    fault: ClassVar[str] = "lost-event"


@dataclass(frozen=True, slots=True)
class RequestTimeout(Event):
    task: int
    kind: ClassVar[str] = "request-timeout"
    fault: ClassVar[str] = "request-timeout"


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (Ingest, RequestInstant, Flush, TriggerCheckpoint, SnapshotTask, CompleteCheckpoint,
                DeliverAck, Clean, InstantTimeout, StopFaults, LoseAck, AbortCheckpoint, CrashTask,
                CrashCoordinator, RestartJob, DeliverEvent, LoseEvent, RequestTimeout, RunJob, RequestExpired)
}


def event_from_dict(d: dict) -> Event:
    """Rebuild an event from ``to_dict()`` output. Raises ``ValueError`` naming the problem."""
    if not isinstance(d, dict):
        raise ValueError("event: expected a JSON object")
    kind = d.get("kind")
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        raise ValueError(f"unknown event kind {kind!r}; known: {', '.join(EVENT_TYPES)}")
    names = [f.name for f in fields(cls)]
    extra = set(d) - set(names) - {"kind", "step"}
    if extra:
        raise ValueError(f"event {kind}: unexpected field(s) {', '.join(sorted(extra))}")
    args = {}
    for n in names:
        if n not in d:
            raise ValueError(f"event {kind}: missing field {n!r}")
        v = d[n]
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueError(f"event {kind}: field {n!r} must be an integer, got {v!r}")
        args[n] = v
    return cls(**args)


# ------------------------------------------------------------------------------------------- fairness
WEAK, NONE = "weak", "none"

#: Fairness per event kind (TLA+ ``WF_vars(A)``: an action continuously enabled from some point on is
#: eventually taken). The coordinator's and the tasks' own steps are weakly fair: Flink runs every task's
#: mailbox and the coordinator's executor (``StreamTask#processInput``, ``NonThrownExecutor``) and
#: ``CheckpointCoordinator`` triggers periodically (``ScheduledTrigger``); a LAZY clean is scheduled by the
#: table service (``HoodieFlinkWriteClient#clean`` after each commit, ``CleanFunction``); delivery of a
#: message in flight is weakly fair (an RPC is eventually delivered unless lost, which is a fault). Faults
#: have no fairness (they may never happen). ``instant-timeout`` has none either: it is the environment's
#: timer (``write.commit.ack.timeout``), and a design whose progress needs it is what the temporal property
#: ``writer-unblocked`` reports; nor has ``request-expired`` (the RPC timer of a request behind a slow job).
#: ``run-job`` is the coordinator's executor thread, weakly fair. ``stop-faults`` is a driver control (the
#: liveness checker applies it first in every continuation beyond the bound).
FAIRNESS: dict[str, str] = {
    "ingest": WEAK, "request-instant": WEAK, "flush": WEAK, "trigger-checkpoint": WEAK, "snapshot-task": WEAK,
    "complete-checkpoint": WEAK, "deliver-ack": WEAK, "clean": WEAK, "deliver-event": WEAK,
    "run-job": WEAK, "instant-timeout": NONE, "request-expired": NONE, "stop-faults": NONE,
    "lose-ack": NONE, "abort-checkpoint": NONE, "crash-task": NONE, "crash-coordinator": NONE,
    "restart-job": NONE, "lose-event": NONE, "request-timeout": NONE,
}
assert set(FAIRNESS) == set(EVENT_TYPES), "every event kind declares its fairness"


def fairness(ev: Event, unfair: frozenset = frozenset()) -> str:
    """The fairness of ``ev``'s action; kinds in ``unfair`` lose theirs (a liveness variant's design)."""
    return NONE if ev.kind in unfair else FAIRNESS[ev.kind]
