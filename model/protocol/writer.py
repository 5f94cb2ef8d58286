"""The write task's rules (``AbstractStreamWriteFunction`` / ``StreamWriteFunction``, Hudi 1.1; ``hudi-semantics.md`` 4.3).

A task reads its split into a buffer (records ``[flushed, offset)``), flushes it under an instant the
coordinator granted, and reports every flush with a :class:`WriteMetadataEvent`. Each rule is a pure
function of a :class:`~model.protocol.state.Writer`:

* :func:`flush` -- one data file under the granted instant (``instantToWrite``: the grant is consumed, the
  next flush asks again); the event is keyed by the task's last-known checkpoint id, so data written between
  checkpoints n-1 and n is keyed n-1 (I10).
* :func:`snapshot_state` (``snapshotState(n)``) -- flush the rest with ``lastBatch=true`` even when nothing is
  left (the task always reports the end of its interval), then *replace* ``write-metadata-state`` by one
  bootstrap-flagged event with every status of the interval (appended in the broken ``task_state="append"``),
  and ``checkpointId := n``.
* :func:`restore` (``initializeState``) -- rewind the split, drop the buffer, restore id and state.
* :func:`bootstrap_event_0x` -- 0.x coordinator-started instants: one bootstrap event per restarted task.
* :func:`bootstrap_events` (``sendBootstrapEvent``) -- attempt 0 restored: re-send every state event whose
  instant is still pending; attempt 0 fresh: nothing; attempt > 0: the empty "cleanup" event
  ``(task, checkpointId, "")``, plus after a global failover the restored pending events (#19215 fix).
"""

from __future__ import annotations

from dataclasses import replace

from .state import TableState, Writer, is_pending
from .values import WriteMetadataEvent, WriteStatus, empty_bootstrap


def ingest(w: Writer) -> Writer:
    """Read the next record of the split into the buffer."""
    return replace(w, offset=w.offset + 1)


def grant(w: Writer, instant: str) -> Writer:
    """The coordinator answered ``requestInstantTime(checkpointId)`` with ``instant`` (0.x: ``instantToWrite``
    found it pending and stops confirming)."""
    return replace(w, instant=instant, confirming=None)


def flush(w: Writer, last_batch: bool) -> tuple[Writer, WriteMetadataEvent]:
    """Write the buffer as one data file under the granted instant; the event reporting it."""
    statuses = (WriteStatus(w.task, w.flushed, w.offset),) if w.offset > w.flushed else ()
    ev = WriteMetadataEvent(w.task, w.checkpoint_id, w.instant, statuses, last_batch, False)
    return replace(w, flushed=w.offset, interval=w.interval + statuses, current_instant=w.instant, instant=None), ev


def snapshot_state(w: Writer, checkpoint: int, append: bool, confirm: bool = False) -> tuple[Writer, WriteMetadataEvent]:
    """``snapshotState(n)``: flush the rest (lastBatch), replace (or append to) the state, remember n. With
    ``confirm`` (0.x coordinator-started instants) the task is then confirming: it waits for an instant other
    than the one it just wrote (``StreamWriteFunction#flushRemaining``: "blocks flushing until the
    coordinator starts a new instant")."""
    w, ev = flush(w, True)
    kept = WriteMetadataEvent(w.task, w.checkpoint_id, w.current_instant, w.interval, True, True)
    state = w.state + (kept,) if append else (kept,)
    confirming = w.current_instant if confirm else None
    return replace(w, state=state, checkpoint_id=checkpoint, interval=(), current_instant="",
                   confirming=confirming), ev


def restore(w: Writer, offset: int, checkpoint_id: int, state: tuple, attempt: int,
            confirming: str | None = None) -> Writer:
    """``initializeState``: rewind the split, drop the buffer and the grant, restore id and state (0.x: and
    confirm, ``confirming`` holding the last pending instant found, "" for none)."""
    return Writer(w.task, offset, offset, checkpoint_id, None, "", (), state, attempt, confirming)


def bootstrap_event_0x(w: Writer, last_pending: str | None) -> WriteMetadataEvent:
    """0.x ``initializeState``: every (re)started task sends exactly one bootstrap event --
    ``restoreWriteMetadata``: its state events of the last pending instant merged into one (task id
    rewritten), or ``sendBootstrapEvent``'s empty one when there are none."""
    events = [e._replace(task=w.task) for e in w.state if last_pending is not None and e.instant == last_pending]
    if not events:
        return empty_bootstrap(w.task, w.checkpoint_id)
    out = events[0]
    for e in events[1:]:
        out = out.merge_with(e)
    return out


def bootstrap_events(w: Writer, table: TableState, restored: bool, global_failover: bool,
                     resend_on_global_failover: bool) -> list[WriteMetadataEvent]:
    """``sendBootstrapEvent``: the events sent to the coordinator right after (re)start."""
    pending = [e._replace(task=w.task) for e in w.state if e.instant and is_pending(table, e.instant)]
    if w.attempt == 0:
        return pending if restored else []
    out = [empty_bootstrap(w.task, w.checkpoint_id)]
    if global_failover and resend_on_global_failover:
        out.extend(pending)
    return out
