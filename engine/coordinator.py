"""The coordinator (``StreamWriteOperatorCoordinator`` + ``EventBuffers``), both modes.

State: ``buffers`` maps a checkpoint-id *key* to an :class:`EventBuffer` ``(instant, slots)``
with one write-metadata slot per task (``EventBuffers``: ``ckpId -> (instant, EventBuffer)``),
filled in place and owned copy-on-write; checkpoint state holds them frozen as :class:`BufferEntry`
values. ``instant`` is the newest instant started. Rules (``hudi-semantics.md`` 4.2-4.4):

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

from typing import TYPE_CHECKING, Any

from model.protocol.config import ProtocolConfig
from model.protocol.values import BufferEntry, describe_slots

from .settings import Settings, settings

if TYPE_CHECKING:
    from .table import Table


class EventBuffer:
    """One ``EventBuffers`` entry: the instant of a checkpoint-id key and one write-metadata slot per task
    (Hudi's ``WriteMetadataEvent[]``, filled in place as the tasks report).

    Mutable, as Hudi's array: a checkpoint's entry receives every task's event, and a new tuple per event
    would copy ``parallelism`` slots each time. A :class:`Coordinator` writes only the entries it owns and
    copies a shared one first (:meth:`Coordinator._entry`); its checkpoint state holds frozen copies
    (:meth:`frozen`). Change it through its methods only: they drop the frozen copy it keeps."""

    __slots__ = ("instant", "slots", "_frozen", "_frozen_h", "_cslots")

    def __init__(self, instant: str, slots: list, frozen: BufferEntry | None = None, frozen_hash: Any = None,
                 cslots: Any = None):
        self.instant = instant
        self.slots = slots      # list[WriteMetadataEvent | None], one per task
        self._frozen = frozen   # BufferEntry of the current slots, once asked (None: not made since a change)
        self._frozen_h = frozen_hash  # hash(frozen()), likewise (None: not computed since a change)
        self._cslots = cslots   # engine.canonical's form of the slots (task ids left out), likewise

    def __reduce__(self):
        # pickled through the constructor (the parallel search moves states): compiled by mypyc, pickle's
        # EventBuffer.__new__ would run __init__ without its arguments
        return EventBuffer, (self.instant, self.slots, self._frozen)

    @classmethod
    def empty(cls, instant: str, parallelism: int) -> "EventBuffer":
        """``initNewEventBuffer``: every slot null."""
        return cls(instant, [None] * parallelism)

    @classmethod
    def thaw(cls, entry: BufferEntry) -> "EventBuffer":
        """The entry restored from checkpoint state, as a buffer of its own."""
        return cls(entry.instant, list(entry.slots), entry)

    def copy(self) -> "EventBuffer":
        return EventBuffer(self.instant, list(self.slots), self._frozen, self._frozen_h, self._cslots)

    def frozen(self) -> BufferEntry:
        """The buffer as a value (made once per change: fingerprints and checkpoints ask for it)."""
        f = self._frozen
        if f is None:
            f = self._frozen = BufferEntry(self.instant, tuple(self.slots))
        return f

    def frozen_hash(self) -> int:
        """``hash(frozen())``, kept until a change (a coordinator's fingerprint hashes its entries by it: an
        event changes one entry, the others are not walked again)."""
        h = self._frozen_h
        if h is None:
            h = self._frozen_h = hash(self._frozen or self.frozen())
        return h

    def set_slot(self, task: int, ev) -> None:
        """``task``'s slot := ``ev`` (a write-metadata event or None)."""
        self.slots[task] = ev
        self._frozen = self._frozen_h = self._cslots = None

    def add_event(self, ev) -> None:
        """``EventBuffer.addEventToBuffer``: ``ev`` merged into its task's slot when the slot holds an event
        of the same instant (``mergeWith``), else put in the slot."""
        slots, t = self.slots, ev.task
        old = slots[t]
        slots[t] = old.merge_with(ev) if (old is not None and old.instant == ev.instant) else ev
        self._frozen = self._frozen_h = self._cslots = None

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

    def __eq__(self, other) -> bool:
        return isinstance(other, EventBuffer) and self.instant == other.instant and self.slots == other.slots

    __hash__ = None  # mutable: hash frozen()

    def __repr__(self) -> str:
        return f"EventBuffer({self.instant!r}, {self.slots!r})"

    def __str__(self) -> str:
        return describe_slots(self.instant, self.slots)


# (module-level functions, not lambdas: a System is pickled when the parallel search moves states)
def _below(k, n):
    return k < n


def _at_most(k, n):
    return k <= n


def _equal(k, n):
    return k == n


def _commit_rule(rule: str):
    if rule == "<":
        return _below
    if rule == "<=":
        return _at_most
    return _equal


class Coordinator:
    """``StreamWriteOperatorCoordinator`` state and rules (see module docstring)."""

    __slots__ = ("cfg", "buffers", "instant", "max_acked", "assigned", "_rule", "_guarded", "_owned")

    def __init__(self, cfg: Any = None):
        # called with no argument: blank, for copy() to fill -- and for pickle (the parallel search moves states),
        # whose __new__ runs __init__ without arguments once mypyc compiled the class
        if cfg is None:
            return
        self.cfg: Settings = settings(cfg)
        self.buffers: dict[int, EventBuffer] = {}
        self.instant = ""           # newest instant started ("this.instant")
        self.max_acked = -(10**9)   # highest ack processed since the last (re)start (monitor)
        self.assigned: dict[int, str] = {}  # key -> instant assigned since the last (re)start (monitor)
        self._rule = _commit_rule(cfg.commit_rule)
        # the config's, read by would_block (frozen); 0.x has no CommitGuard: its writers wait (System)
        self._guarded = cfg.blocking and cfg.commit_guard and not cfg.coordinator_start
        self._owned: tuple | None = None  # keys whose EventBuffer this coordinator owns (None: all)

    def copy(self) -> "Coordinator":
        """A copy sharing the event buffers with this coordinator: from now on neither owns them, and
        whichever writes one first copies it (:meth:`_entry`)."""
        c = Coordinator()
        c.cfg, c.buffers, c.instant = self.cfg, dict(self.buffers), self.instant
        c.max_acked, c.assigned, c._rule, c._guarded = self.max_acked, dict(self.assigned), self._rule, self._guarded
        c._owned = self._owned = ()
        return c

    def _entry(self, key: int) -> EventBuffer:
        """The buffer of ``key``, to be changed in place: copied first if shared."""
        owned = self._owned
        if owned is None or key in owned:
            return self.buffers[key]
        self._owned = owned + (key,)
        e = self.buffers[key] = self.buffers[key].copy()
        return e

    def _entry_or_new(self, table: Table, key: int, instant: str) -> EventBuffer:
        """The buffer of ``key`` to be changed in place, or a new one with ``instant`` (assigned to ``key``)."""
        if key in self.buffers:
            return self._entry(key)
        self._assign(table, key, instant)
        entry = self._empty(instant)
        self._put(key, entry)
        return entry

    def _put(self, key: int, entry: EventBuffer) -> None:
        """``entry`` (a buffer no one else holds) becomes the buffer of ``key``."""
        self.buffers[key] = entry
        owned = self._owned
        if owned is not None and key not in owned:
            self._owned = owned + (key,)

    def key(self) -> tuple:
        # (the buffers' frozen copies inline: this runs for every state of an exploration)
        return (tuple([(k, e._frozen or e.frozen()) for k, e in sorted(self.buffers.items())]), self.instant,
                self.max_acked, tuple(sorted(self.assigned.items())))

    def key_hash(self) -> int:
        """A hash of :meth:`key` with each entry given by its hash (:meth:`EventBuffer.frozen_hash`, kept
        by the entry until it changes): a function of the key, so equal keys hash equal."""
        return hash((tuple([(k, e.frozen_hash()) for k, e in sorted(self.buffers.items())]), self.instant,
                     self.max_acked, tuple(sorted(self.assigned.items()))))

    def _empty(self, instant: str) -> EventBuffer:
        return EventBuffer.empty(instant, self.cfg.parallelism)

    # ------------------------------------------------------ instant requests
    def would_block(self, key: int) -> bool:
        """Blocking mode: a request that needs a new instant waits while any entry holds an event."""
        if not self._guarded:  # (cfg.blocking and cfg.commit_guard)
            return False
        if self.cfg.share_instant_per_key and key in self.buffers:
            return False
        return any(e.has_event() for e in self.buffers.values())

    def handle_instant_request(self, table: Table, key: int, guard_passed: bool = False) -> str:
        """``handleInstantRequest(ckpId)``: the key's instant, or a new one (``startInstant``); ``guard_passed``:
        a queued request, past the CommitGuard (:func:`model.protocol.coordinator.handle_instant_request`)."""
        shared = self.shared_instant(key)
        if shared is not None:
            return shared
        if not guard_passed and self.would_block(key):
            raise RuntimeError("instant request would block; check would_block() first")
        if self.cfg.coordinator_start:
            return self._instant_to_write_0x(table, key)
        instant = table.start_commit(eager=self.cfg.eager)
        self._assign(table, key, instant)
        self._put(key, self._empty(instant))  # initNewEventBuffer
        self.instant = instant
        return instant

    def shared_instant(self, key: int) -> str | None:
        """The instant of ``key``'s entry when the tasks asking with one key share it (``share_instant_per_key``,
        I10), else None: what :meth:`handle_instant_request` answers without changing anything."""
        if self.cfg.share_instant_per_key:
            entry = self.buffers.get(key)
            if entry is not None:
                return entry.instant
        return None

    def _instant_to_write_0x(self, table: Table, key: int) -> str:
        """0.x ``instantToWrite``: the last pending instant (a new one when none, the fresh job's
        ``initInstant``); its entry made under ``key`` when there is none
        (:func:`model.protocol.coordinator._instant_to_write_0x`)."""
        pending = table.pending_instants()
        instant = pending[-1] if pending else table.start_commit(eager=self.cfg.eager)
        if not self.buffers:
            self._assign(table, key, instant)
            self._put(key, self._empty(instant))
        self.instant = instant
        return instant

    def initialize_0x(self, table: Table, events: list) -> None:
        """0.x ``subtaskFailed`` + ``handleBootstrapEvent`` -> ``initInstant``
        (:func:`model.protocol.coordinator.initialize_0x`)."""
        self.buffers = {}
        self._owned = None
        self.max_acked = -(10**9)  # a new epoch, as after reset_to_checkpoint
        self.assigned = {}
        first = next((e for e in events if e.statuses), None)
        if first is not None and not table.is_completed(first.instant):
            key = first.checkpoint_id
            slots = [e if e.instant == first.instant else None for e in sorted(events, key=lambda e: e.task)]
            self._assign(table, key, first.instant)
            self._put(key, EventBuffer(first.instant, slots))
            self.commit_instant(table, key, recommit=True)
        self.instant = table.start_commit(eager=self.cfg.eager)

    def _assign(self, table: Table, key: int, instant: str) -> None:
        old = self.assigned.get(key)
        if old is not None and old != instant:
            table.observe("I10.one-instant-per-key",
                          f"checkpoint key {key} got instant {instant} after {old}")
        self.assigned[key] = instant

    # ---------------------------------------------------------- write metadata
    def handle_write_metadata(self, table: Table, ev) -> None:
        """``handleWriteMetaEvent`` -> ``addEventToBuffer`` into the entry of ``ev.checkpoint_id`` (0.x: the
        entry of the event's instant, the single buffer)."""
        if self.cfg.coordinator_start:  # 0.x: one buffer, events merged whatever their instant
            if self.buffers:
                entry = self._entry(next(iter(self.buffers)))
            else:
                entry = self._entry_or_new(table, ev.checkpoint_id, self.instant or ev.instant)
            old = entry.slots[ev.task]
            entry.set_slot(ev.task, ev if old is None else old.merge_with(ev))
            return
        self._entry_or_new(table, ev.checkpoint_id, ev.instant).add_event(ev)

    # ------------------------------------------------------------ checkpoints
    def checkpoint(self, n: int) -> tuple:
        """``checkpointCoordinator(n)``: the serialized state, a tuple of ``(key, BufferEntry)``."""
        if not self.cfg.coordinator_snapshot:
            return ()
        keep_null = self.cfg.snapshot_all_null_entries
        return tuple((k, e.frozen()) for k, e in sorted(self.buffers.items())
                     if e.all_completed() and (keep_null or not e.all_null()))

    def notify_checkpoint_complete(self, table: Table, n: int) -> list[tuple[int, str, str]]:
        """``notifyCheckpointComplete(n)`` -> ``commitInstants(n)``. Returns (key, instant, outcome)."""
        self.max_acked = max(self.max_acked, n)
        keys = sorted((k for k in self.buffers if self._rule(k, n)),
                      reverse=self.cfg.commit_order == "descending")
        out = [(k, self.buffers[k].instant, self.commit_instant(table, k)) for k in keys]
        if self.cfg.coordinator_start and any(o == "committed" for _, _, o in out):
            self.instant = table.start_commit(eager=self.cfg.eager)  # 0.x: startInstant after a commit
        return out

    def commit_instant(self, table: Table, key: int, recommit: bool = False) -> str:
        """``commitInstant(key, instant, buffer)``; the entry is removed in every outcome.

        Outcomes: ``"empty"`` (reset, heartbeat stopped, instant left pending; 0.x ``"empty-ack"``: the
        heartbeat kept and a ``CommitAckEvent`` sent to every task, which the System delivers), ``"skipped"``
        (recommit of an instant already completed), or :meth:`Table.commit`'s outcome.
        """
        entry = self.buffers[key]
        if recommit and self.cfg.idempotent_recommit and table.is_completed(entry.instant):
            del self.buffers[key]
            return "skipped"
        statuses = entry.statuses()
        if entry.all_null() or (not statuses and not self.cfg.allow_commit_on_empty_batch):
            del self.buffers[key]
            if not self.cfg.coordinator_start:  # 0.x keeps the instant (and its heartbeat) for the next interval
                table.stop_heartbeat(entry.instant)  # writeClient.cleanResources(instant)
            elif not entry.all_null() and self.cfg.commit_ack_events:
                return "empty-ack"  # 0.x sendCommitAckEvents
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
            self._put(k, EventBuffer.thaw(e))
        self.max_acked = -(10**9)
        self.assigned = {k: e.instant for k, e in self.buffers.items()}

    def restore_events(self, table: Table, below: int | None = None) -> list[tuple[int, str, str]]:
        """``restoreEvents``: recommit every buffered entry (with key < ``below`` when given)."""
        keys = sorted(k for k in self.buffers if below is None or k < below)
        return [(k, self.buffers[k].instant, self.commit_instant(table, k, recommit=True)) for k in keys]

    def has_legacy_events(self, task: int, checkpoint_id: int) -> bool:
        """:meth:`clean_legacy_events` would null a slot (else it changes nothing)."""
        for k, e in self.buffers.items():
            if k >= checkpoint_id and e.slots[task] is not None:
                return True
        return False

    def clean_legacy_events(self, task: int, checkpoint_id: int) -> None:
        """``cleanLegacyEvents``: null the task's slot in every entry with key >= checkpoint_id."""
        for k, e in list(self.buffers.items()):
            if k >= checkpoint_id and e.slots[task] is not None:
                self._entry(k).set_slot(task, None)

    def handle_bootstrap_event(self, table: Table, ev) -> str | None:
        """``handleBootstrapEvent``; returns the recommit outcome when one happened."""
        if not ev.instant:
            self.clean_legacy_events(ev.task, ev.checkpoint_id)
            return None
        entry = self._entry_or_new(table, ev.checkpoint_id, ev.instant)  # getOrCreateBootstrapBuffer
        entry.set_slot(ev.task, ev)
        if entry.all_bootstrap():
            return self.commit_instant(table, ev.checkpoint_id, recommit=True)
        return None
