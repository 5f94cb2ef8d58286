"""Writer tasks (``AbstractStreamWriteFunction`` / ``StreamWriteFunction``, Hudi 1.1).

A writer task reads its source split into an in-memory buffer (records ``[flushed, offset)``),
flushes it under an instant the coordinator grants, and reports every flush with a
:class:`WriteMetadataEvent`. Rules (``hudi-semantics.md`` 4.3):

* ``checkpoint_id`` starts at -1 (fresh job) or the restored checkpoint id; an instant request
  carries it (``requestInstantTime(this.checkpointId)``), so data written between checkpoints
  n-1 and n is keyed n-1 (I10).
* eager flush when the buffer is full (``lastBatch=false``); at the checkpoint barrier the rest
  is flushed with ``lastBatch=true`` even when nothing is left (the task always reports the end
  of its interval), then ``write-metadata-state`` is *replaced* by one bootstrap-flagged event
  holding every status of the interval, keyed by the previous id, and ``checkpoint_id := n``.
* each flush asks for an instant first (``instantToWrite``); the grant is used by that flush.
* on (re)start (``initializeState`` / ``sendBootstrapEvent``): attempt 0 and restored -> re-send
  every state event whose instant is still pending on the timeline; attempt 0 fresh -> nothing;
  attempt > 0 -> an empty "cleanup" bootstrap event ``(task, checkpoint_id, instant "")``, plus,
  after a global failover, the restored pending events (the #19215 fix, PR #19237).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from model.protocol.values import BOOTSTRAP_INSTANT, WriteMetadataEvent, WriteStatus, empty_bootstrap  # noqa: F401

if TYPE_CHECKING:
    from .table import Table

#: ``_new(Cls, (fields...))`` is the NamedTuple ``Cls(fields...)`` at half the cost (no Python-level __new__).
_new = tuple.__new__



class WriterTask:
    """One writer subtask. Fields are plain values; the rules below are its transitions."""

    __slots__ = ("task", "offset", "flushed", "checkpoint_id", "instant", "current_instant",
                 "interval", "state", "attempt", "confirming", "_canon", "_canon_h", "_key_hash", "_tail",
                 "_ctail")

    def __init__(self, task: int = -1):
        # called with no argument: blank, for copy() to fill -- and for pickle (the parallel search moves states),
        # whose __new__ runs __init__ without arguments once mypyc compiled the class
        if task < 0:
            return
        self.task = task
        self.offset = 0            # next source offset to read
        self.flushed = 0           # buffer = records [flushed, offset)
        self.checkpoint_id = -1    # last known checkpoint id (-1: fresh start)
        self.instant: Any = None        # instant granted for the next flush, if any
        self.current_instant = ""  # instant of the last flush of this interval ("currentInstant")
        self.interval: tuple = ()  # WriteStatus of every flush since the last snapshot
        self.state: tuple = ()     # write-metadata-state (restored on failover)
        self.attempt = 0
        self.confirming: Any = None     # 0.x: waiting for the coordinator's next instant (holds currentInstant)
        self._canon: Any = None         # engine.canonical.writer_column's (column, hash); dropped by System._w
        self._canon_h: Any = None       # engine.canonical.writer_hash's (that hash alone), likewise
        self._key_hash: Any = None      # hash(compact_key()), likewise (None: not computed since the last change)
        # (interval, state, hash((interval, state))) while both are these objects (immutable tuples; most events
        # change neither, so a change of the offsets does not walk them again): kept by copies
        self._tail: Any = None
        self._ctail: Any = None  # engine.canonical.writer_column's (interval, state, their column form, its hash)

    def copy(self) -> "WriterTask":
        w = WriterTask()
        w.task, w.offset, w.flushed, w.checkpoint_id = self.task, self.offset, self.flushed, self.checkpoint_id
        w.instant, w.current_instant, w.interval = self.instant, self.current_instant, self.interval
        w.state, w.attempt, w.confirming = self.state, self.attempt, self.confirming
        w._canon = w._canon_h = w._key_hash = None
        w._tail, w._ctail = self._tail, self._ctail
        return w

    def key(self) -> tuple:
        return (self.offset, self.flushed, self.checkpoint_id, self.instant, self.current_instant,
                self.interval, self.state, self.attempt > 0, self.confirming)

    def compact_key(self, tail_hash: int) -> tuple:
        """:meth:`key` with ``interval`` and ``state`` given as ``tail_hash``, ``hash((interval, state))``: what
        :meth:`key_hash` hashes (a function of the key, so equal keys hash equal)."""
        return (self.offset, self.flushed, self.checkpoint_id, self.instant, self.current_instant, tail_hash,
                self.attempt > 0, self.confirming)

    def tail_hash(self) -> int:
        """``hash((interval, state))``, kept while both are the same objects."""
        tail = self._tail
        if tail is None or tail[0] is not self.interval or tail[1] is not self.state:
            tail = self._tail = (self.interval, self.state, hash((self.interval, self.state)))
        return tail[2]

    def key_hash(self) -> int:
        """``hash(compact_key(tail_hash()))``, kept until :meth:`engine.System._w` drops it before a change (most
        events change one task: the others' keys are not rebuilt and hashed again for the next fingerprint)."""
        h = self._key_hash
        if h is None:
            h = self._key_hash = hash(self.compact_key(self.tail_hash()))
        return h

    # -------------------------------------------------------------- queries
    @property
    def buffered(self) -> int:
        return self.offset - self.flushed

    def __repr__(self) -> str:
        return (f"WriterTask(t{self.task} offset={self.offset} buffer=[{self.flushed},{self.offset}) "
                f"ckp={self.checkpoint_id} grant={self.instant} interval={list(self.interval)} "
                f"state={[str(e) for e in self.state]} attempt={self.attempt}"
                + ("" if self.confirming is None else f" confirming={self.confirming!r}") + ")")

    # ---------------------------------------------------------------- rules
    def ingest(self) -> None:
        """Read the next record of the split into the buffer."""
        self.offset += 1

    def grant(self, instant: str) -> None:
        """The coordinator answered ``requestInstantTime(checkpoint_id)`` with ``instant`` (0.x:
        ``instantToWrite`` found it pending and stops confirming)."""
        self.instant = instant
        self.confirming = None

    def flush(self, last_batch: bool) -> WriteMetadataEvent:
        """Write the buffer as one data file under the granted instant; report it.

        The grant is consumed (the next flush asks again, as ``instantToWrite`` does)."""
        inst = self.instant
        flushed, offset = self.flushed, self.offset
        statuses = (_new(WriteStatus, (self.task, flushed, offset)),) if offset > flushed else ()
        self.flushed = self.offset
        self.interval = self.interval + statuses
        self.current_instant = inst
        self.instant = None
        return _new(WriteMetadataEvent, (self.task, self.checkpoint_id, inst, statuses, last_batch, False))

    def snapshot_state(self, checkpoint: int, append: bool = False,
                       confirm: bool = False) -> tuple[WriteMetadataEvent, tuple]:
        """``snapshotState(n)``: flush the rest (lastBatch), replace the state, remember n (0.x with
        ``confirm``: then wait for an instant other than the one just written, ``flushRemaining``).

        Returns the event sent to the coordinator and the new ``write-metadata-state``."""
        ev = self.flush(True)  # lastBatch
        kept = _new(WriteMetadataEvent,
                    (self.task, self.checkpoint_id, self.current_instant, self.interval, True, True))
        self.state = (self.state + (kept,)) if append else (kept,)
        self.checkpoint_id = checkpoint
        self.interval = ()
        if confirm:
            self.confirming = self.current_instant
        self.current_instant = ""
        return ev, self.state

    def restore(self, offset: int, checkpoint_id: int, state: tuple, attempt: int,
                confirming: str | None = None) -> None:
        """``initializeState``: rewind the split, drop the buffer, restore id and state (0.x: confirming)."""
        self.offset = self.flushed = offset
        self.checkpoint_id = checkpoint_id
        self.instant = None
        self.current_instant = ""
        self.interval = ()
        self.state = state
        self.attempt = attempt
        self.confirming = confirming

    def bootstrap_event_0x(self, last_pending: str | None) -> WriteMetadataEvent:
        """0.x: the one bootstrap event of a (re)started task (:func:`model.protocol.writer.bootstrap_event_0x`)."""
        events = [e._replace(task=self.task) for e in self.state
                  if last_pending is not None and e.instant == last_pending]
        if not events:
            return empty_bootstrap(self.task, self.checkpoint_id)
        out = events[0]
        for e in events[1:]:
            out = out.merge_with(e)
        return out

    def bootstrap_events(self, table: Table, restored: bool, global_failover: bool,
                         resend_on_global_failover: bool) -> list[WriteMetadataEvent]:
        """``sendBootstrapEvent``: the events sent to the coordinator right after (re)start."""
        if self.attempt == 0:
            return self._pending_state_events(table) if restored else []
        out = [empty_bootstrap(self.task, self.checkpoint_id)]
        if global_failover and resend_on_global_failover:
            out.extend(self._pending_state_events(table))
        return out

    def _pending_state_events(self, table: Table) -> list[WriteMetadataEvent]:
        """The events of the task's state whose instant is still pending, as this task's (re-sent on start)."""
        return [e._replace(task=self.task) for e in self.state if e.instant and table.is_pending(e.instant)]
