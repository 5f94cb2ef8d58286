"""The coordinator (``StreamWriteOperatorCoordinator`` + ``EventBuffers``), both modes.

State: ``buffers`` maps a checkpoint-id *key* to a :class:`BufferEntry` ``(instant, slots)``
with one write-metadata slot per task (``EventBuffers``: ``ckpId -> (instant, EventBuffer)``),
and ``instant``, the newest instant started. Rules (``hudi-semantics.md`` 4.2-4.4):

* ``handle_instant_request(key)`` -- async: the entry of ``key`` exists -> its instant (all tasks
  asking with the same last-known id share it, I10); else ``startInstant`` and a new entry.
  Blocking: a new instant only when no entry holds a write-metadata event (the previous instant
  is committed; 0.x ``notifyCheckpointComplete -> startInstant``, 1.1 ``CommitGuard``), so at most
  one data instant is pending (I13); :meth:`would_block` tells a caller to wait.
* ``handle_write_metadata(ev)`` -- ``addEventToBuffer``: merge into the slot when same task and
  same instant, else overwrite.
* ``checkpoint(n)`` -- ``checkpointCoordinator``: serialize ``getAllCompletedEvents()`` (entries
  whose every slot is null or lastBatch), without all-null entries unless configured (#19215).
* ``notify_checkpoint_complete(n)`` -> ``commit_instants(n)``: every key ``< n`` in ascending
  order (I11), each committed at most once: all slots null or no statuses -> reset + stop the
  heartbeat (the empty instant stays pending until a rollback); else commit, then reset.
* ``reset_to_checkpoint(state)`` + ``restore_events()`` -- restore the serialized entries and
  recommit each (``recommitInstant``: skip an instant already completed; LAZY restarts its
  heartbeat first).
* ``handle_bootstrap_event(ev)`` -- instant "" -> ``cleanLegacyEvents`` (null the task's slot in
  every entry with key >= ev.checkpoint_id); else put into the entry of its key (created with the
  event's instant) and recommit once every slot holds a bootstrap event.

The coordinator owns no reference to the table: every rule takes it as an argument.
"""

from __future__ import annotations

from typing import NamedTuple

from .config import ProtocolConfig

#: ``_new(Cls, (fields...))`` is the NamedTuple ``Cls(fields...)`` at half the cost (no Python-level __new__).
_new = tuple.__new__


class BufferEntry(NamedTuple):
    """One ``EventBuffers`` entry: the instant of a checkpoint-id key and one slot per task."""

    instant: str
    slots: tuple  # tuple[WriteMetadataEvent | None, ...]

    def with_slot(self, task: int, ev) -> "BufferEntry":
        """This entry with ``task``'s slot set to ``ev`` (a write-metadata event or None)."""
        slots = list(self.slots)  # (cheaper than slicing + concatenating at 64 tasks)
        slots[task] = ev
        return _new(BufferEntry, (self.instant, tuple(slots)))

    def add_event(self, ev) -> "BufferEntry":
        """``EventBuffer.addEventToBuffer``: this entry with ``ev`` merged into its task's slot when the
        slot holds an event of the same instant (``mergeWith``), else with ``ev`` in the slot."""
        slots = list(self.slots)  # (one copy, as with_slot)
        t = ev.task
        old = slots[t]
        slots[t] = old.merge_with(ev) if (old is not None and old.instant == ev.instant) else ev
        return _new(BufferEntry, (self.instant, tuple(slots)))

    # (A slot is None or a WriteMetadataEvent, a non-empty tuple and so true: any() tells them apart
    # without the == comparisons ``None in slots`` or ``slots.count(None)`` make.)
    def all_null(self) -> bool:
        return not any(self.slots)

    def all_completed(self) -> bool:
        """``allEventsCompleted``: every slot null or lastBatch (vacuously true when all null)."""
        return all(s is None or s.last_batch for s in self.slots)

    def all_received(self) -> bool:
        """``allEventsReceived``: every slot non-null and lastBatch."""
        return all(s is not None and s.last_batch for s in self.slots)

    def all_bootstrap(self) -> bool:
        """``allBootstrapEventsReceived``."""
        return all(s is not None and s.bootstrap for s in self.slots)

    def statuses(self) -> tuple:
        """Every slot's write statuses, in task order (what a commit of the entry writes)."""
        # (one list: adding up tuples would copy them quadratically)
        return tuple([st for s in self.slots if s is not None for st in s.statuses])

    def has_statuses(self) -> bool:
        """``statuses()`` is not empty: some slot holds flushed data."""
        return any(s is not None and s.statuses for s in self.slots)

    def has_event(self) -> bool:
        return any(self.slots)

    def __str__(self) -> str:
        return f"{self.instant}: [" + ", ".join("-" if s is None else str(s) for s in self.slots) + "]"


def _commit_rule(rule: str):
    if rule == "<":
        return lambda k, n: k < n
    if rule == "<=":
        return lambda k, n: k <= n
    return lambda k, n: k == n


class Coordinator:
    """``StreamWriteOperatorCoordinator`` state and rules (see module docstring)."""

    __slots__ = ("cfg", "buffers", "instant", "max_acked", "assigned", "_rule", "_guarded")

    def __init__(self, cfg: ProtocolConfig):
        self.cfg = cfg
        self.buffers: dict[int, BufferEntry] = {}
        self.instant = ""           # newest instant started ("this.instant")
        self.max_acked = -(10**9)   # highest ack processed since the last (re)start (monitor)
        self.assigned: dict[int, str] = {}  # key -> instant assigned since the last (re)start (monitor)
        self._rule = _commit_rule(cfg.commit_rule)
        self._guarded = cfg.blocking and cfg.commit_guard  # the config's, read by would_block (frozen)

    def copy(self) -> "Coordinator":
        c = Coordinator.__new__(Coordinator)
        c.cfg, c.buffers, c.instant = self.cfg, dict(self.buffers), self.instant
        c.max_acked, c.assigned, c._rule, c._guarded = self.max_acked, dict(self.assigned), self._rule, self._guarded
        return c

    def key(self) -> tuple:
        return (tuple(sorted(self.buffers.items())), self.instant, self.max_acked,
                tuple(sorted(self.assigned.items())))

    def _empty(self) -> tuple:
        return (None,) * self.cfg.parallelism

    # ------------------------------------------------------ instant requests
    def would_block(self, key: int) -> bool:
        """Blocking mode: a request that needs a new instant waits while any entry holds an event."""
        if not self._guarded:  # (cfg.blocking and cfg.commit_guard)
            return False
        if self.cfg.share_instant_per_key and key in self.buffers:
            return False
        return any(e.has_event() for e in self.buffers.values())

    def handle_instant_request(self, table, key: int) -> str:
        """``handleInstantRequest(ckpId)``: the key's instant, or a new one (``startInstant``)."""
        if self.cfg.share_instant_per_key:
            entry = self.buffers.get(key)
            if entry is not None:
                return entry.instant
        if self.would_block(key):
            raise RuntimeError("instant request would block; check would_block() first")
        instant = table.start_commit(eager=self.cfg.eager)
        self._assign(table, key, instant)
        self.buffers[key] = BufferEntry(instant, self._empty())  # initNewEventBuffer
        self.instant = instant
        return instant

    def _assign(self, table, key: int, instant: str) -> None:
        old = self.assigned.get(key)
        if old is not None and old != instant:
            table.observe("I10.one-instant-per-key",
                          f"checkpoint key {key} got instant {instant} after {old}")
        self.assigned[key] = instant

    # ---------------------------------------------------------- write metadata
    def handle_write_metadata(self, table, ev) -> None:
        """``handleWriteMetaEvent`` -> ``addEventToBuffer`` into the entry of ``ev.checkpoint_id``."""
        entry = self.buffers.get(ev.checkpoint_id)
        if entry is None:
            self._assign(table, ev.checkpoint_id, ev.instant)
            entry = BufferEntry(ev.instant, self._empty())
        self.buffers[ev.checkpoint_id] = entry.add_event(ev)

    # ------------------------------------------------------------ checkpoints
    def checkpoint(self, n: int) -> tuple:
        """``checkpointCoordinator(n)``: the serialized state, a tuple of ``(key, entry)``."""
        if not self.cfg.coordinator_snapshot:
            return ()
        keep_null = self.cfg.snapshot_all_null_entries
        return tuple((k, e) for k, e in sorted(self.buffers.items())
                     if e.all_completed() and (keep_null or not e.all_null()))

    def notify_checkpoint_complete(self, table, n: int) -> list[tuple[int, str, str]]:
        """``notifyCheckpointComplete(n)`` -> ``commitInstants(n)``. Returns (key, instant, outcome)."""
        self.max_acked = max(self.max_acked, n)
        keys = sorted((k for k in self.buffers if self._rule(k, n)),
                      reverse=self.cfg.commit_order == "descending")
        return [(k, self.buffers[k].instant, self.commit_instant(table, k)) for k in keys]

    def commit_instant(self, table, key: int, recommit: bool = False) -> str:
        """``commitInstant(key, instant, buffer)``; the entry is removed in every outcome.

        Outcomes: ``"empty"`` (reset, heartbeat stopped, instant left pending), ``"skipped"``
        (recommit of an instant already completed), or :meth:`Table.commit`'s outcome.
        """
        entry = self.buffers[key]
        if recommit and self.cfg.idempotent_recommit and table.is_completed(entry.instant):
            del self.buffers[key]
            return "skipped"
        statuses = entry.statuses()
        if entry.all_null() or (not statuses and not self.cfg.allow_commit_on_empty_batch):
            del self.buffers[key]
            table.stop_heartbeat(entry.instant)  # writeClient.cleanResources(instant)
            return "empty"
        if recommit and not self.cfg.eager:
            if table.is_pending(entry.instant):
                table.start_heartbeat(entry.instant)
        outcome = table.commit(entry.instant, statuses, key, recommit)
        del self.buffers[key]
        return outcome

    # --------------------------------------------------------------- failover
    def reset_to_checkpoint(self, state: tuple, keep_memory: bool) -> None:
        """``resetToCheckpoint``: restore the serialized entries.

        ``keep_memory`` (same-graph global failover in 1.1.1) merges them over the in-memory
        buffers, an entry of the same key being overwritten; otherwise working state is dropped.
        """
        if not keep_memory:
            self.buffers = {}
            self.instant = ""
        for k, e in state:
            self.buffers[k] = e
        self.max_acked = -(10**9)
        self.assigned = {k: e.instant for k, e in self.buffers.items()}

    def restore_events(self, table, below: int | None = None) -> list[tuple[int, str, str]]:
        """``restoreEvents``: recommit every buffered entry (with key < ``below`` when given)."""
        keys = sorted(k for k in self.buffers if below is None or k < below)
        return [(k, self.buffers[k].instant, self.commit_instant(table, k, recommit=True)) for k in keys]

    def clean_legacy_events(self, task: int, checkpoint_id: int) -> None:
        """``cleanLegacyEvents``: null the task's slot in every entry with key >= checkpoint_id."""
        for k, e in list(self.buffers.items()):
            if k >= checkpoint_id and e.slots[task] is not None:
                self.buffers[k] = e.with_slot(task, None)

    def handle_bootstrap_event(self, table, ev) -> str | None:
        """``handleBootstrapEvent``; returns the recommit outcome when one happened."""
        if not ev.instant:
            self.clean_legacy_events(ev.task, ev.checkpoint_id)
            return None
        entry = self.buffers.get(ev.checkpoint_id)
        if entry is None:  # getOrCreateBootstrapBuffer
            self._assign(table, ev.checkpoint_id, ev.instant)
            entry = BufferEntry(ev.instant, self._empty())
        entry = entry.with_slot(ev.task, ev)
        self.buffers[ev.checkpoint_id] = entry
        if entry.all_bootstrap():
            return self.commit_instant(table, ev.checkpoint_id, recommit=True)
        return None
