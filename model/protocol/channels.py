"""Messages between the write tasks and the coordinator (``event_delivery``, see :class:`ProtocolConfig`).

A task's write-metadata and bootstrap events are Flink operator events
(``OperatorEventGateway.sendEventToCoordinator``: an RPC from the task executor to the JobMaster, which hands
it to ``OperatorCoordinatorHolder.handleEventFromOperator``); its checkpoint acknowledgement
(``CheckpointResponder.acknowledgeCheckpoint``) is an RPC to the same JobMaster. What is modelled:

* one FIFO channel per task (RPC messages between one sender and one receiver keep their order), so a
  task's acknowledgement of checkpoint n arrives after every event it sent before its snapshot, and
  ``notifyCheckpointComplete(n)`` -- sent only after every acknowledgement -- is handled after them (the
  coordinator's single-threaded executor runs its handlers in arrival order). This ordering is inferred
  from Flink's RPC guarantees (``hudi-semantics.md`` 4.3 states Hudi relies on it);
* channels of different tasks interleave arbitrarily (``deliver-event(t)`` picks a channel);
* a failover drops the messages of the failed attempts (:mod:`model.protocol.failover`);
* the ``lost-event`` fault: one RPC fails, and Flink fails the sending task.

With ``event_delivery="sync"`` (the default abstraction) a message is handled in the step that sends it.
"""

from __future__ import annotations

from dataclasses import replace

from . import coordinator
from .state import State
from .values import TaskSnapshot


def send(s: State, t: int, message) -> State:
    """Task ``t`` sends ``message`` (a write-metadata event, or its checkpoint acknowledgement): with
    ``event_delivery="async"`` it joins the task's channel (``OperatorEventGateway.sendEventToCoordinator``;
    ``CheckpointResponder.acknowledgeCheckpoint``); with "sync" it is handled at once (:func:`receive`)."""
    if s.config.async_events:
        return replace(s, channels=s.channels[:t] + (s.channels[t] + (message,),) + s.channels[t + 1:])
    return receive(s, t, message)


def receive(s: State, t: int, message) -> State:
    """A message from task ``t`` arrives. A :class:`TaskSnapshot` is the task's acknowledgement of its
    checkpoint (``CheckpointCoordinator.receiveAcknowledgeMessage``: recorded in the pending checkpoint of
    that id, ignored when that checkpoint is no longer pending); a bootstrap-flagged event goes to
    ``handleBootstrapEvent``, any other to ``handleWriteMetaEvent``
    (``StreamWriteOperatorCoordinator.handleEventFromOperator``)."""
    if isinstance(message, TaskSnapshot):
        p = s.pending
        if p is None or p.id != message.checkpoint_id or p.tasks[t] is not None:
            return s
        return replace(s, pending=replace(p, tasks=p.tasks[:t] + (message,) + p.tasks[t + 1:]))
    if message.bootstrap:
        return coordinator.handle_bootstrap_event(s, message)
    return coordinator.handle_write_metadata(s, message)
