"""The coordinator's rules (``StreamWriteOperatorCoordinator`` + ``EventBuffers``, ``hudi-semantics.md`` 4.2-4.4).

State: :class:`~model.protocol.state.CoordinatorState` -- checkpoint-id key -> :class:`BufferEntry`
``(instant, slots)`` with one write-metadata slot per task, and the newest instant started. Each rule is a
pure function ``State -> State`` (the table is part of the state: commits and instant starts change it):

* :func:`handle_instant_request` (``handleInstantRequest(ckpId)``) -- the entry of the key exists (and
  instants are shared per key) -> its instant, I10; else ``startInstant`` and a new entry
  (``initNewEventBuffer``). Blocking mode (``CommitGuard``) only starts one when no entry holds an event:
  :func:`~model.protocol.state.would_block` tells the caller to wait (I13).
* :func:`handle_write_metadata` (``handleWriteMetaEvent`` -> ``EventBuffer.addEventToBuffer``) -- merge into
  the task's slot when it holds an event of the same instant (``mergeWith``), else put it there.
* :func:`checkpoint` (``checkpointCoordinator(n)``) -- the serialized state: ``getAllCompletedEvents()``
  (entries whose every slot is null or lastBatch), without all-null entries unless configured (#19215).
* :func:`notify_checkpoint_complete` (``notifyCheckpointComplete(n)`` -> ``commitInstants(n)``) -- every
  key satisfying the commit rule (``k < n`` in Hudi), in ascending order (I11), each through
  :func:`commit_instant`.
* :func:`commit_instant` (``commitInstant``) -- all slots null or no statuses (and empty commits not
  allowed) -> the entry is dropped and the heartbeat stopped (``cleanResources``; the instant stays pending
  until a rollback); a recommit of a completed instant is skipped (``recommitInstant``, idempotent); LAZY
  restarts the heartbeat of a recommitted pending instant; else :func:`model.protocol.table.commit`. The
  entry is removed in every outcome.
* :func:`reset_to_checkpoint` (``resetToCheckpoint``) + :func:`restore_events` (``restoreEvents``) --
  restore the serialized entries (over the in-memory ones with ``reset_keeps_memory``, 1.1.1) and recommit
  those below the restored checkpoint.
* :func:`handle_bootstrap_event` (``handleBootstrapEvent``) -- instant "" -> ``cleanLegacyEvents`` (null the
  task's slot in every entry with key >= the event's id); else put it into the entry of its key
  (``getOrCreateBootstrapBuffer``) and recommit once every slot holds a bootstrap event
  (``allBootstrapEventsReceived``).

0.x coordinator-started instants (``ProtocolConfig.coordinator_starts_instants``, Hudi 0.12's coordinator):
the writer takes the last pending instant (:func:`_instant_to_write_0x`), events go into the single buffer
(:func:`_add_event_0x`), an empty checkpoint sends ``CommitAckEvent`` (:func:`send_commit_ack`), a successful
commit starts the next instant, and a failover ends in :func:`initialize_0x` (``initInstant``).
"""

from __future__ import annotations

from dataclasses import replace

from . import table
from .state import (Assignment, AckProcessed, CoordinatorState, State, entry_statuses, is_completed, is_pending,
                    last_pending_instant, would_block)
from .values import BufferEntry, WriteMetadataEvent

# ---------------------------------------------------------------------------- buffer entries (values)


def _put(c: CoordinatorState, key: int, entry: BufferEntry) -> CoordinatorState:
    """The coordinator with ``entry`` as the entry of ``key``."""
    return replace(c, buffers=tuple(sorted([(k, e) for k, e in c.buffers if k != key] + [(key, entry)],
                                           key=lambda ke: ke[0])))


def _remove(c: CoordinatorState, key: int) -> CoordinatorState:
    return replace(c, buffers=tuple((k, e) for k, e in c.buffers if k != key))


def _empty(s: State, instant: str) -> BufferEntry:
    """``initNewEventBuffer``: every slot null."""
    return BufferEntry(instant, (None,) * s.config.parallelism)


def _set_slot(entry: BufferEntry, task: int, ev: WriteMetadataEvent | None) -> BufferEntry:
    slots = list(entry.slots)
    slots[task] = ev
    return BufferEntry(entry.instant, tuple(slots))


def add_event(entry: BufferEntry, ev: WriteMetadataEvent) -> BufferEntry:
    """``EventBuffer.addEventToBuffer``: merged into the task's slot when it holds an event of the same
    instant (``mergeWith``), else put in the slot."""
    old = entry.slots[ev.task]
    return _set_slot(entry, ev.task, old.merge_with(ev) if old is not None and old.instant == ev.instant else ev)


def all_null(entry: BufferEntry) -> bool:
    return all(s is None for s in entry.slots)


def all_completed(entry: BufferEntry) -> bool:
    """``allEventsCompleted``: every slot null or lastBatch (vacuously true when all null)."""
    return all(s is None or s.last_batch for s in entry.slots)


def all_bootstrap(entry: BufferEntry) -> bool:
    """``allBootstrapEventsReceived``."""
    return all(s is not None and s.bootstrap for s in entry.slots)


def commit_rule_holds(rule: str, key: int, n: int) -> bool:
    """``commitInstants(n)`` commits key ``k`` when ``k < n`` (Hudi), or the broken ``<=`` / ``==``."""
    if rule == "<":
        return key < n
    if rule == "<=":
        return key <= n
    return key == n


# ------------------------------------------------------------------------------------------ rules


def _with_coordinator(s: State, c: CoordinatorState) -> State:
    return replace(s, coordinator=c)


def _assign(s: State, key: int, instant: str) -> State:
    """History: ``key`` was given ``instant`` (I10 reads these)."""
    h = s.history
    return replace(s, history=replace(h, assignments=h.assignments + (Assignment(h.steps, h.epoch, key, instant),)))


def _entry_or_new(s: State, key: int, instant: str) -> tuple[State, BufferEntry]:
    """The entry of ``key``, or a new empty one with ``instant`` (the key is then assigned ``instant``)."""
    entry = s.coordinator.entry(key)
    if entry is not None:
        return s, entry
    return _assign(s, key, instant), _empty(s, instant)


def handle_instant_request(s: State, key: int, guard_passed: bool = False) -> tuple[State, str]:
    """``handleInstantRequest(ckpId)``: the key's instant, or a new one (``startInstant``). ``guard_passed``:
    the ``CommitGuard`` was passed before (an instant request queued on the executor, :mod:`.executor`): it is
    not checked again (Hudi does not re-check the condition after ``awaitAllInstantsToCompleteIfNecessary``,
    so an event buffered since then does not stop ``startInstant``)."""
    if s.config.share_instant_per_key:
        entry = s.coordinator.entry(key)
        if entry is not None:
            return s, entry.instant
    if not guard_passed and would_block(s, key):
        raise AssertionError("instant request would block; the guard must have refused it")
    if s.config.coordinator_start:
        return _instant_to_write_0x(s, key)
    s, instant = table.start_commit(s)
    s = _assign(s, key, instant)
    c = replace(_put(s.coordinator, key, _empty(s, instant)), instant=instant)
    return _with_coordinator(s, c), instant


def _instant_to_write_0x(s: State, key: int) -> tuple[State, str]:
    """0.x ``AbstractStreamWriteFunction#instantToWrite``: the writer takes the last pending instant, the one
    the coordinator started (``CkpMetadata#lastPendingInstant``); the coordinator is not asked. With none
    pending (a fresh job) the coordinator's ``initInstant`` starts one, folded into this step: in Hudi every
    task's bootstrap event reaches it before any task can flush. The coordinator's single ``eventBuffer`` is
    one entry, made here under the writer's key when there is none."""
    instant = last_pending_instant(s)
    if instant is None:
        s, instant = table.start_commit(s)
    if not s.coordinator.buffers:
        s = _assign(s, key, instant)
        s = _with_coordinator(s, _put(s.coordinator, key, _empty(s, instant)))
    return _with_coordinator(s, replace(s.coordinator, instant=instant)), instant


def handle_write_metadata(s: State, ev: WriteMetadataEvent) -> State:
    """``handleWriteMetaEvent`` -> ``addEventToBuffer`` into the entry of ``ev.checkpoint_id`` (0.x: see
    :func:`_add_event_0x`)."""
    if s.config.coordinator_start:
        return _add_event_0x(s, ev)
    s, entry = _entry_or_new(s, ev.checkpoint_id, ev.instant)
    return _with_coordinator(s, _put(s.coordinator, ev.checkpoint_id, add_event(entry, ev)))


def _add_event_0x(s: State, ev: WriteMetadataEvent) -> State:
    """0.x ``handleWriteMetaEvent`` -> ``addEventToBuffer``: the coordinator has one buffer (its single entry
    here, made under the event's key for the coordinator's instant when there is none), and an event is merged
    into its task's slot whatever its instant (``mergeWith``); ``commitInstant`` commits the buffer under the
    coordinator's instant. (With ``ack_before_next_checkpoint`` the entry's key is below every checkpoint whose
    notification can reach it, so 1.1's rule ``k < n`` commits it exactly when 0.x's "the whole buffer" does.)"""
    if s.coordinator.buffers:
        key, entry = s.coordinator.buffers[0]
    else:
        key = ev.checkpoint_id
        s, entry = _entry_or_new(s, key, s.coordinator.instant or ev.instant)
    old = entry.slots[ev.task]
    return _with_coordinator(s, _put(s.coordinator, key, _set_slot(entry, ev.task,
                                                                     ev if old is None else old.merge_with(ev))))


def checkpoint(s: State) -> tuple:
    """``checkpointCoordinator(n)``: the serialized state, a tuple of ``(key, BufferEntry)``."""
    if not s.config.coordinator_snapshot:
        return ()
    keep_null = s.config.snapshot_all_null_entries
    return tuple((k, e) for k, e in s.coordinator.buffers if all_completed(e) and (keep_null or not all_null(e)))


def notify_checkpoint_complete(s: State, n: int) -> State:
    """``notifyCheckpointComplete(n)`` -> ``commitInstants(n)``: the keys the commit rule selects, in
    ascending order (descending in the broken variant), each committed once."""
    h = s.history
    s = replace(s, history=replace(h, acks=h.acks + (AckProcessed(h.steps, h.epoch, n),)))
    keys = sorted((k for k in s.coordinator.keys() if commit_rule_holds(s.config.commit_rule, k, n)),
                  reverse=s.config.commit_order == "descending")
    before = len(s.history.commits)
    for k in keys:
        s = commit_instant(s, k)
    if s.config.coordinator_start and any(c.outcome == "committed" for c in s.history.commits[before:]):
        # 0.x notifyCheckpointComplete: a successful commit is followed by startInstant()
        s, instant = table.start_commit(s)
        s = _with_coordinator(s, replace(s.coordinator, instant=instant))
    return s


def commit_instant(s: State, key: int, recommit: bool = False) -> State:
    """``commitInstant(key, instant, buffer)`` (``recommitInstant`` when ``recommit``); the entry is removed
    in every outcome (see the module docstring)."""
    cfg = s.config
    entry = s.coordinator.entry(key)
    how = "recommit" if recommit else "commit"
    s = _with_coordinator(s, _remove(s.coordinator, key))
    if recommit and cfg.idempotent_recommit and is_completed(s.table, entry.instant):
        return table.record_commit(s, key, entry.instant, how, "skipped")
    statuses = entry_statuses(entry)
    if all_null(entry) or (not statuses and not cfg.allow_commit_on_empty_batch):
        if not cfg.coordinator_start:  # 0.x keeps the instant (and its heartbeat) for the next interval
            s = table.stop_heartbeat(s, entry.instant)  # writeClient.cleanResources(instant)
        elif not all_null(entry) and cfg.commit_ack_events:
            s = send_commit_ack(s)
        return table.record_commit(s, key, entry.instant, how, "empty")
    if recommit and not cfg.eager and is_pending(s.table, entry.instant):
        s = table.start_heartbeat(s, entry.instant)
    s, _ = table.commit(s, entry.instant, statuses, key, recommit)
    return s


def reset_to_checkpoint(s: State, state: tuple, keep_memory: bool) -> State:
    """``resetToCheckpoint``: restore the serialized entries. ``keep_memory`` (same-graph global failover in
    1.1.1) merges them over the in-memory buffers, an entry of the same key being overwritten; otherwise the
    working state is dropped. A new coordinator epoch starts: every restored key counts as assigned."""
    c = s.coordinator if keep_memory else CoordinatorState()
    for k, e in state:
        c = _put(c, k, e)
    h = s.history
    epoch = h.epoch + 1
    restored = tuple(Assignment(h.steps, epoch, k, e.instant) for k, e in c.buffers)
    return replace(s, coordinator=c, history=replace(h, epoch=epoch, assignments=h.assignments + restored))


def restore_events(s: State, below: int) -> State:
    """``restoreEvents``: recommit every buffered entry with key < ``below``, ascending."""
    for k in sorted(k for k in s.coordinator.keys() if k < below):
        s = commit_instant(s, k, recommit=True)
    return s


def clean_legacy_events(s: State, task: int, checkpoint_id: int) -> State:
    """``cleanLegacyEvents``: null the task's slot in every entry with key >= checkpoint_id."""
    c = s.coordinator
    for k, e in c.buffers:
        if k >= checkpoint_id and e.slots[task] is not None:
            c = _put(c, k, _set_slot(e, task, None))
    return _with_coordinator(s, c)


def handle_bootstrap_event(s: State, ev: WriteMetadataEvent) -> State:
    """``handleBootstrapEvent``: a cleanup event (instant "") or a restored event of a pending instant."""
    if not ev.instant:
        return clean_legacy_events(s, ev.task, ev.checkpoint_id)
    s, entry = _entry_or_new(s, ev.checkpoint_id, ev.instant)  # getOrCreateBootstrapBuffer
    entry = _set_slot(entry, ev.task, ev)
    s = _with_coordinator(s, _put(s.coordinator, ev.checkpoint_id, entry))
    if all_bootstrap(entry):
        s = commit_instant(s, ev.checkpoint_id, recommit=True)
    return s


# ---------------------------------------------------------------- 0.x coordinator-started instants


def send_commit_ack(s: State) -> State:
    """0.x ``sendCommitAckEvents``: an empty checkpoint is not committed and its instant is reused, so the
    coordinator tells every task (``CommitAckEvent``); ``handleOperatorEvent`` clears ``confirming`` and the
    task writes on with the same instant. Delivered in the step that sends it (an operator event to a
    running task; one sent to a finished task is ignored)."""
    return replace(s, writers=tuple(replace(w, confirming=None) for w in s.writers))


def initialize_0x(s: State, events: list) -> State:
    """0.x ``subtaskFailed`` (every restarted task's slot nulled: the region restarts every write task, so the
    single buffer is emptied) then ``handleBootstrapEvent`` for each task's one bootstrap event; once every
    task's arrived, ``initInstant``: the instant of the first event with write statuses, if it is not
    completed, is recommitted from the bootstrap events (``commitInstant``), and a new instant is started
    (``startInstant``; EAGER rolls back what is still pending). The buffer's life starts over: a new
    coordinator epoch (as after ``resetToCheckpoint``), so a key replayed after the failover is written under
    the new instant (I10 holds per epoch)."""
    h = s.history
    s = replace(s, coordinator=replace(s.coordinator, buffers=()), history=replace(h, epoch=h.epoch + 1))
    first = next((e for e in events if e.statuses), None)
    if first is not None and not is_completed(s.table, first.instant):
        key = first.checkpoint_id
        slots = tuple(e if e.instant == first.instant else None for e in sorted(events, key=lambda e: e.task))
        s = _assign(s, key, first.instant)
        s = _with_coordinator(s, _put(s.coordinator, key, BufferEntry(first.instant, slots)))
        s = commit_instant(s, key, recommit=True)
    s, instant = table.start_commit(s)
    return _with_coordinator(s, replace(s.coordinator, instant=instant))
