"""Which two protocol events are independent: enabled together, each stays enabled after the other and both
orders reach states of equal fingerprint. The serial explorer's sleep sets (:func:`engine.bfs.search`) skip
a transition on this word alone, so the relation must be exact or conservative (calling a pair dependent is
always safe; calling a dependent pair independent loses states).

:func:`independent` is static: it looks at the two events (kind, task or checkpoint) and the configuration's
settings (:mod:`engine.settings`), never at a state. A few pairs it must call dependent commute in most states
where both are enabled (an ack that commits nothing, two requests of one key, a request whose key already has
an instant); :func:`commute_at` decides those at the state (the explorer asks at the parent of the state whose
sleep set it builds, which is where the sleep sets' argument needs the two events to commute), and
:class:`Relation` puts the two together. Each event has a *footprint* over the parts of a
:class:`engine.System` -- what its guard and its effect read, what its effect writes, and what it updates in
a way that commutes with other such updates -- and two events are independent when neither writes what the
other reads or writes, and neither's commuting update is read by the other. An event whose footprint is not
worked out here (every failover, the executor's jobs, aborts, timeouts) is dependent on every event.

The parts (resource names):

* ``w<t>`` -- writer task ``t`` (:class:`engine.writer.WriterTask`, every field);
* ``ch<t>`` -- task ``t``'s channel of messages in flight (``System.channels[t]``, async delivery);
* ``coord`` -- the coordinator (its buffers, instant, ``max_acked``, ``assigned``);
* ``table`` -- the table: timeline, commit metadata, heartbeats, clock, ``last_key``, rollbacks;
* ``pend`` -- whether a checkpoint is pending, its id and coordinator state; ``pt<t>`` -- its slot of
  task ``t``; ``pack`` -- its count of acknowledged tasks (an increment: commutes with another);
* ``acks`` -- the acks in flight as a whole (read by a guard asking "any ack in flight"); ``ack<n>`` --
  whether ack ``n`` is in flight (removing ``n``, appending a new id); removing different elements of a
  tuple, or removing one and appending another, gives the same tuple in either order, and
  ``deliver-ack(n)``'s guard ("``n`` in flight, and the oldest unless late acks are on") survives the
  removal of another element and an append; so these updates put ``acks`` in the *commuting* set;
* ``lastack`` (``System.last_ack``, a max: commutes, but deliver-acks write the coordinator anyway),
  ``lc`` (the last completed checkpoint), ``next`` (``next_checkpoint``), ``exec`` (the executor's
  queue; always empty without ``executor_queue``), ``fstop`` (``faults_stopped``);
* ``obs`` -- the observations: rules broken so far enter the fingerprint as a set (a union: commutes);
  their order and step numbers are not in the fingerprint, and no guard reads them.

``step_count`` is not in the fingerprint and only ALL-dependent events (timeouts, expiries) read it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from model.protocol import events as E

from .table import LogicalClock

if TYPE_CHECKING:  # (named for the compiled attribute access; at run time this module imports no System)
    from .coordinator import Coordinator
    from .system import System

#: the footprint of an event dependent on every other
ALL = None

# (Final: the compiled module reads them as constants, not from its globals)
_ACK: Final = E.DeliverAck
_REQUEST: Final = E.RequestInstant
_SNAPSHOT: Final = E.SnapshotTask
_FLUSH: Final = E.Flush
_CLEAN: Final = E.Clean
_TRIGGER: Final = E.TriggerCheckpoint
_COMPLETE: Final = E.CompleteCheckpoint


def _tasks(prefix: str, n: int) -> frozenset:
    return frozenset(f"{prefix}{t}" for t in range(n))


def footprint(ev: E.Event, k: Any) -> tuple | None:
    """``(reads, writes, commutes)`` (frozensets of part names, see the module docstring) of ``ev`` under the
    settings ``k``, or None (:data:`ALL`): dependent on every event."""
    reads: Any
    writes: Any
    commutes: Any  # (sets in some branches, frozensets in others: typed Any for mypyc, which compiles this module)
    kind = type(ev)
    n = k.parallelism
    exq = k.executor_queue
    ex = frozenset({"exec"}) if exq else frozenset()
    if kind is E.Ingest:
        # _may_ingest / enabled_events: w.offset, w.flushed, w.instant (0.x), and with the executor queue
        # _queued_request(t) (the executor's jobs, w.attempt). _do_ingest: WriterTask.ingest, offset += 1.
        t = ev.task
        return frozenset({f"w{t}"}) | ex, frozenset({f"w{t}"}), frozenset()
    if kind is E.RequestInstant:
        # _may_request_instant / enabled_events: the writer (instant, offsets, checkpoint_id, confirming), the
        # barrier (_barrier_waiting: the pending checkpoint's id and slot t), the executor (_queued_request),
        # _instant_wait (0.x: the table's pending instants) or Coordinator.would_block (the buffers).
        # _do_request_instant: with the executor queue, a RequestJob appended (order matters: two requests
        # conflict); else shared_instant (coordinator) or handle_instant_request: Table.start_commit (clock,
        # timeline, heartbeats; EAGER rolls back), the coordinator's buffers/instant/assigned (I10: obs).
        t = ev.task
        reads = frozenset({f"w{t}", "pend", f"pt{t}", "coord", "table"}) | ex
        if exq:
            return reads, frozenset({"exec"}), frozenset()
        return reads, frozenset({f"w{t}", "coord", "table"}), frozenset({"obs"})
    if kind is E.Flush:
        # _may_flush: w.instant, offsets. _do_flush: WriterTask.flush, then _send: async into channel t; sync
        # _receive -> Coordinator.handle_write_metadata (buffers; a new entry's _assign may observe I10).
        t = ev.task
        if k.event_delivery == "async":
            return frozenset({f"w{t}"}), frozenset({f"w{t}", f"ch{t}"}), frozenset()
        return frozenset({f"w{t}", "coord"}), frozenset({f"w{t}", "coord"}), frozenset({"obs"})
    if kind is E.SnapshotTask:
        # _may_snapshot: _barrier_waiting (pending id, slot t, w.checkpoint_id), w.instant. _do_snapshot: the
        # writer (snapshot_state), the flush's event sent (async: channel t; sync: the coordinator), the ack
        # sent (async, ack behind events: channel t) or received (PendingCheckpoint.acknowledge_task: slot t,
        # the acknowledged count -- an increment).
        t = ev.task
        reads = {f"w{t}", "pend", f"pt{t}"}
        writes = {f"w{t}"}
        commutes = set()
        if k.event_delivery == "async":
            writes.add(f"ch{t}")
        else:
            reads.add("coord")
            writes.add("coord")
            commutes.add("obs")
        if k.event_delivery != "async" or not k.ack_behind_events:
            writes.add(f"pt{t}")
            commutes.add("pack")
        return frozenset(reads), frozenset(writes), frozenset(commutes)
    if kind is E.DeliverEvent:
        # _may_deliver_event: channel t. _do_deliver_event: channel t's oldest message removed and received:
        # an ack (pending id, slot t, count), a bootstrap event (coordinator, recommit: table) or write
        # metadata (coordinator; I10: obs).
        t = ev.task
        return (frozenset({f"ch{t}", "pend", f"pt{t}", "coord", "table"}),
                frozenset({f"ch{t}", f"pt{t}", "coord", "table"}), frozenset({"pack", "obs"}))
    if kind is E.TriggerCheckpoint:
        # _may_trigger / enabled_events: pending (none), acks and the executor's commits (ack before next
        # checkpoint), next_checkpoint, faults_stopped, _bootstrap_in_flight (every channel). _do_trigger:
        # next_checkpoint, a new pending checkpoint (all of it), coordinator-first: Coordinator.checkpoint reads
        # the buffers.
        reads = {"pend", "pack", "next", "fstop"} | _tasks("ch", n) | _tasks("pt", n)
        if k.ack_before_next_checkpoint:
            reads |= {"acks"} | ex
        if k.snapshot_order == "coordinator-first":
            reads.add("coord")
        return (frozenset(reads), frozenset({"pend", "pack", "next"}) | _tasks("pt", n), frozenset())
    if kind is E.CompleteCheckpoint:
        # _may_complete: pending and all_tasks_done (the count). _do_complete: the pending checkpoint read and
        # dropped, the coordinator read (its checkpoint when tasks-first; _check_coverage: its buffers, every
        # channel; obs), last_completed written, the checkpoint's id appended to the acks in flight,
        # faults_stopped read (checkpoints_after_stop is not in the fingerprint).
        reads = {"pend", "pack", "coord", "fstop"} | _tasks("ch", n) | _tasks("pt", n)
        writes = {"pend", "pack", "lc", "ack+"} | _tasks("pt", n)
        return frozenset(reads), frozenset(writes), frozenset({"acks", "obs"})
    if kind is E.DeliverAck:
        # _may_deliver_ack: ack n in flight and the oldest unless late-ack faults are on (faults_stopped).
        # _do_deliver_ack: ack n removed; with the executor queue a CommitJob appended, else
        # _notify_checkpoint_complete: last_ack, the coordinator's commits (table: timeline, metadata,
        # heartbeats, last_key; obs), 0.x empty acks clear every writer's confirming.
        nk = f"ack{ev.checkpoint}"
        if exq:
            return frozenset({nk, "fstop", "exec"}), frozenset({nk, "exec"}), frozenset({"acks"})
        writes = {nk, "lastack", "coord", "table"}
        reads = {nk, "fstop", "lastack", "coord", "table"}
        if k.coordinator_start:
            writes |= _tasks("w", n)
            reads |= _tasks("w", n)
        return frozenset(reads), frozenset(writes), frozenset({"acks", "obs"})
    if kind is E.LoseAck:
        # _may_lose_ack (+ the fault on: faults_stopped): ack n in flight. _do_lose_ack: ack n removed.
        nk = f"ack{ev.checkpoint}"
        return frozenset({nk, "fstop"}), frozenset({nk}), frozenset({"acks"})
    if kind is E.Clean:
        # _may_clean: the table's failed writes (pending instants, heartbeats), _bootstrap_in_flight (every
        # channel) unless clean_during_restart. _do_clean: Table.clean rolls them back (timeline, heartbeats).
        return frozenset({"table"}) | _tasks("ch", n), frozenset({"table"}), frozenset()
    if kind is E.CrashTask and not k.coordinator_start:
        # _may_crash (+ the fault on): crashes, faults_stopped. _do_crash_task: crashes += 1, then
        # failover.task_failover: the pending checkpoint dropped; async: the failed tasks' channels emptied;
        # each failed task (every task, or the one with single-task failover) restored from the last completed
        # checkpoint with attempt + 1 (its writer read and written); its bootstrap events (attempt > 0, no
        # global failover: the empty cleanup event only, no table read) sent: async into its channel, sync to
        # the coordinator (has_legacy_events / clean_legacy_events: its buffers). No table, no acks, no
        # executor. (0.x re-initialises the coordinator's instant from the table: not worked out here.)
        tasks = _tasks("w", n) if k.task_failover != "single" else frozenset({f"w{ev.task}"})
        writes = {"crash", "pend", "pack", "coord"} | _tasks("pt", n) | tasks
        if k.event_delivery == "async":
            writes |= _tasks("ch", n)
        return frozenset({"crash", "fstop", "lc", "coord"}) | tasks, frozenset(writes), frozenset()
    return ALL


def _special(a: E.Event, b: E.Event, k: Any) -> bool | None:
    """The pairs the footprints call dependent although they commute, by a closer look at what is read (None:
    the footprints decide).

    * ``ingest(t)`` and ``request-instant(t)`` (1.x, no executor queue): the request's guard reads the
      task's offsets only as "buffer full or barrier waiting", which an ingest cannot make false (both
      enabled: the buffer is not full, so the barrier enables the request, and the barrier is not the
      writer's); the ingest's guard reads ``instant`` only in 0.x and the executor queue only with it; the
      grant (``instant``, ``confirming``) and the new offset are different fields of the writer, and the
      request's key is its ``checkpoint_id``, which an ingest leaves alone.
    * ``request-instant(t)`` and ``clean`` (1.x LAZY, no executor queue): the request's guard reads no
      table (only 0.x's ``_instant_wait`` does); its ``Table.start_commit`` (not EAGER: no rollback) creates
      an instant with a live heartbeat, which is no failed write, from the clock, which a rollback does not
      read or advance; the clean rolls back the failed writes, which the request neither reads nor changes
      (the coordinator's buffers hold no instant a clean reads).
    * ``request-instant(t)`` and ``trigger-checkpoint`` (1.x, no executor queue, instants shared per key):
      both enabled means no checkpoint is pending, so the request is enabled by a full buffer, which the
      trigger's barrier leaves enabled; the trigger's guard reads no writer, coordinator or table; the
      request reads no pending checkpoint in its effect. Their only common part is the coordinator: the
      request either shares the key's instant (the coordinator unchanged) or makes a new entry for a key
      that had none (with one instant per key, ``handle_instant_request`` only starts an instant for a key
      without an entry), which holds no event (all slots null): a coordinator-first trigger's
      ``Coordinator.checkpoint`` leaves all-null entries out unless ``snapshot_all_null_entries``.
    * ``request-instant(t)`` and ``complete-checkpoint`` (1.x, no executor queue, instants shared per key): both
      enabled means every task has snapshotted, so no barrier enables the request (a full buffer does), which
      the completion leaves; the request reads no pending checkpoint or acks. The completion reads the
      coordinator's buffers for its coverage check (the keys below it holding write statuses) and, tasks-first,
      for its coordinator state (the entries whose every slot is null or a last batch, all-null ones left out
      unless ``snapshot_all_null_entries``); the request either changes no buffer (sharing) or adds an entry
      with no event, which neither reads."""
    ka, kb = type(a), type(b)
    if k.coordinator_start or k.executor_queue:
        return None
    if {ka, kb} == {E.Ingest, E.RequestInstant} and a.task == b.task:
        return True
    if {ka, kb} == {E.RequestInstant, E.Clean} and not k.eager:
        return True
    if ({ka, kb} == {E.RequestInstant, E.CompleteCheckpoint} and k.share_instant_per_key
            and (k.snapshot_order == "coordinator-first" or not k.snapshot_all_null_entries)):
        return True
    if ({ka, kb} == {E.RequestInstant, E.TriggerCheckpoint} and k.share_instant_per_key
            and not (k.snapshot_order == "coordinator-first" and k.snapshot_all_null_entries)):
        return True
    return None


def independent(a: E.Event, b: E.Event, k: Any) -> bool:
    """Whether ``a`` and ``b`` commute in every reachable state where both are enabled (see the module
    docstring): neither writes a part the other reads, writes or updates, and neither's commuting update
    is read by the other. Distinct events only (an event is dependent on itself)."""
    if a == b:
        return False
    special = _special(a, b, k)
    if special is not None:
        return special
    fa, fb = footprint(a, k), footprint(b, k)
    if fa is None or fb is None:
        return False
    ra, wa, ca = fa
    rb, wb, cb = fb
    if wa & (rb | wb | cb) or wb & (ra | ca):
        return False
    return not (ca & rb or cb & ra)


# ------------------------------------------------------------------------------ pairs decided at a state
def at_state(a: E.Event, b: E.Event, k: Any) -> bool:
    """Whether :func:`commute_at` may call ``a`` and ``b`` independent at some state though :func:`independent`
    calls them dependent: the pairs it works out, under the settings its reasoning assumes (1.x instants started
    on request and shared per key, no executor queue; flushes and snapshots handled by the coordinator at once,
    sync delivery, where they are named)."""
    if k.coordinator_start or k.executor_queue or not k.share_instant_per_key:
        return False
    ka, kb = type(a), type(b)
    sync = k.event_delivery == "sync"
    if ka is _ACK and kb is _ACK:
        return False
    if ka is _ACK or kb is _ACK:
        other = kb if ka is _ACK else ka
        return other is _REQUEST or other is _CLEAN or (sync and (other is _SNAPSHOT or other is _FLUSH))
    if ka is _FLUSH or kb is _FLUSH:
        other = kb if ka is _FLUSH else ka
        if other is _TRIGGER:
            return sync and k.snapshot_order == "coordinator-first"
        if other is _COMPLETE:
            return sync and (k.snapshot_order == "coordinator-first" or not k.coordinator_snapshot)
    if ka is _REQUEST and kb is _REQUEST:
        return a.task != b.task
    return (sync and (ka is _REQUEST or ka is _SNAPSHOT or ka is _FLUSH)
            and (kb is _REQUEST or kb is _SNAPSHOT or kb is _FLUSH)
            and a.task != b.task)  # (a task's request and its flush or snapshot are never enabled together)


def commute_at(p: Any, a: E.Event, b: E.Event) -> bool:
    """Whether ``a`` and ``b``, both enabled at the state ``p`` (an :class:`engine.System`), commute there --
    each stays enabled after the other and both orders reach states of equal fingerprint -- for a pair
    :func:`at_state` names, by what ``p`` holds (True only when shown below; False is always safe).

    Write ``B`` for the coordinator's buffers at ``p`` (by checkpoint key), ``key(t)`` for task ``t``'s
    ``checkpoint_id`` (the key its request asks with and its flush or snapshot writes under: ``WriterTask.flush``)
    and ``rule`` for the commit rule (:func:`engine.coordinator._commit_rule`: an ack of ``n`` commits the keys
    ``k`` of ``B`` with ``rule(k, n)``). Guards: a request reads its writer and the barrier (``would_block`` only
    in blocking mode: whether any entry holds an event), a flush or snapshot its writer and the barrier, an ack
    whether it is in flight (and the oldest); the events below change none of these for the other, except as
    noted.

    * ``request-instant(t)`` and ``request-instant(u)`` (``t != u``). If ``key(t) == key(u)``: the first to run
      starts the key's instant (``handle_instant_request``: the clock, the timeline, a heartbeat, the entry, the
      coordinator's ``instant`` and ``assigned``) or finds it in ``B``; the second shares it
      (``shared_instant``). Either order leaves one entry, one instant (the clock's next requested time, the same
      whoever asks) granted to both tasks. If ``key(t)`` is in ``B``: ``t``'s request only reads that entry's
      instant, which ``u``'s request (an entry of another key, or none) leaves alone, and writes its own writer.
      Symmetrically for ``key(u)``. (Two new keys: the instants' order depends on the order. Dependent.)
    * ``request-instant(t)`` and ``deliver-ack(n)``, when ``not rule(key(t), n)``: the ack never commits the
      request's entry (new or old) and reads no writer; its ``max_acked`` and ``last_ack`` are maxima no
      request reads. If ``key(t)`` is in ``B`` the request only reads that entry's instant, which the ack leaves
      (it removes only the entries it commits). If the ack commits nothing at ``p`` (no key of ``B`` under the
      rule) it reads nothing the request writes and writes nothing but the acks and those maxima. Else (a new
      instant started, other instants committed) the two change the table in ways that commute in the
      fingerprint: ``startCommit`` takes the clock's next requested time (the same in either order with the
      logical clock, :class:`engine.table.LogicalClock`) and adds an instant and a heartbeat; a commit
      completes another instant (its completion time is left out of the fingerprint), writes its metadata and
      ``last_key``, removes its heartbeat -- unless EAGER, where ``startCommit`` rolls back the pending
      instants the ack would commit.
    * ``deliver-ack(n)`` and ``flush(t)`` / ``snapshot-task(t)`` (sync delivery), when ``not rule(key(t), n)``
      and (``key(t)`` is in ``B`` or the ack commits nothing at ``p``): the flush adds its event to the entry of
      ``key(t)``, which the ack neither commits nor reads, creating it (``_entry_or_new``, which reads the table
      only to observe) only when the ack commits nothing, so reads no table the ack writes; the snapshot also
      acknowledges to the pending checkpoint, which the ack does not read.
    * ``request-instant(t)`` and ``flush(u)`` / ``snapshot-task(u)`` (``t != u``, sync delivery), when
      ``key(t)`` or ``key(u)`` is in ``B``. The flush changes only the slots of ``key(u)``'s entry (never its
      instant) or, if new, makes it: a request sharing ``key(t)``'s instant reads only that instant. If
      ``key(u)`` is in ``B`` the flush reads nothing a starting request writes (the entry of another key, the
      table untouched) and the request reads no slot.
    * two flushes or snapshots of tasks ``t != u`` (sync delivery), when ``key(t)`` and ``key(u)`` are both in
      ``B``: each sets its own task's slot of an existing entry (the acknowledgements of a snapshot are its own
      slot of the pending checkpoint and a count, an increment).
    * ``clean`` and ``deliver-ack(n)`` (a LAZY clean: every pending instant without heartbeat rolled back),
      when every entry the ack commits goes to ``Table.commit`` (not all null, and with write statuses unless
      empty commits are allowed: else its instant's heartbeat stops, making a failed write the clean would
      roll back after the ack) and none of their instants is a failed write at ``p``. The commits complete,
      find completed or find rolled back instants the clean leaves alone, stop only their own heartbeats and
      make no instant a failed write; the clean rolls back the same failed writes either way (no time taken,
      the timeline and heartbeats of other instants) and reads no coordinator.
    * ``flush(t)`` and ``trigger-checkpoint`` (sync delivery, coordinator first), when ``key(t)``'s entry is
      in the trigger's coordinator state (:meth:`engine.coordinator.Coordinator.checkpoint`: every slot null
      or a last batch, all-null ones only with ``snapshot_all_null_entries``) neither before nor after the
      flush: the flush's event is no last batch, so after it the entry is left out unless its slot ``t`` held
      a last batch of the same instant (``mergeWith`` keeps the flag); a missing entry is made with that event.
      The flush reads no pending checkpoint; the trigger reads the coordinator only there.
    * ``flush(t)`` and ``complete-checkpoint`` (sync delivery; coordinator first, or no coordinator state),
      when ``key(t)`` is at least the pending checkpoint's id or its entry already holds write statuses: the
      completion's coverage check (``_check_coverage``) reads the keys below it whose entries hold write
      statuses, which the flush (adding statuses to ``key(t)``'s entry) then leaves as they are.

    ``tests/test_sleep_sets.py`` applies both orders of each pair called independent at the first 6,000 states
    (breadth first) of nine 1.x variants and along random runs of every variant, and catches four widened cases."""
    ka: Any = type(a)
    kb: Any = type(b)
    if ka is _ACK:  # (the ack, if any, is ``b``)
        a, b = b, a
        ka, kb = kb, ka
    sy: System = p  # (typed locals: the compiled module reads their fields natively)
    c: Coordinator = sy.coordinator
    buffers: dict = c.buffers
    writers: list = sy.writers
    if kb is _ACK:
        rule = c._rule
        n = b.checkpoint
        if ka is _CLEAN:
            return _commits_no_failed_write(sy, buffers, rule, n)
        key = writers[a.task].checkpoint_id
        if rule(key, n):
            return False
        if key in buffers or not _commits(buffers, rule, n):
            return True
        return ka is _REQUEST and not sy._k.eager and type(sy.table.clock) is LogicalClock
    if ka is _TRIGGER or kb is _TRIGGER or ka is _COMPLETE or kb is _COMPLETE:  # (and a flush)
        t = a.task if ka is _FLUSH else b.task
        key = writers[t].checkpoint_id
        entry = buffers.get(key)
        if ka is _COMPLETE or kb is _COMPLETE:
            return key >= sy.pending_checkpoint.id or (entry is not None and entry.has_statuses())
        if entry is None:
            return True
        if entry.all_completed() and (sy._k.snapshot_all_null_entries or not entry.all_null()):
            return False  # (in the coordinator state if the trigger runs first)
        old = entry.slots[t]
        return old is None or not old.last_batch or old.instant != writers[t].instant
    key = writers[a.task].checkpoint_id
    other = writers[b.task].checkpoint_id
    if ka is _REQUEST or kb is _REQUEST:
        if ka is _REQUEST and kb is _REQUEST and key == other:
            return True
        return key in buffers or other in buffers
    return key in buffers and other in buffers


def _commits(buffers: Any, rule: Any, n: Any) -> bool:
    """Whether an ack of ``n`` commits an entry of ``buffers`` (a key under the commit rule)."""
    for k in buffers:
        if rule(k, n):
            return True
    return False


def _commits_no_failed_write(p: Any, buffers: Any, rule: Any, n: Any) -> bool:
    """Whether an ack of ``n`` at ``p`` commits (``Table.commit``) every entry it takes -- none is all null or,
    unless empty commits are allowed, without write statuses (those stop the instant's heartbeat instead) --
    and none of their instants is a failed write (a pending instant without heartbeat, which a clean rolls
    back)."""
    failed = None
    allow_empty = p._k.allow_commit_on_empty_batch
    for k, entry in buffers.items():
        if not rule(k, n):
            continue
        if entry.all_null() or not (allow_empty or entry.has_statuses()):
            return False
        if failed is None:
            failed = p.table.failed_writes()
        if entry.instant in failed:
            return False
    return True


class Relation:
    """``relation(a, b, state)``: whether ``a`` and ``b``, both enabled at ``state``, commute there --
    :func:`independent` under the settings ``k`` (whatever the state), else :func:`commute_at` for the pairs
    :func:`at_state` names. Which of the three applies is worked out once per pair of event objects (the
    explorer asks when it stores a new state, per earlier sibling and inherited event, at that state's parent;
    :meth:`engine.System.enabled_events` hands out one shared object per event value, so the pair is keyed by
    the objects' ids: ``id(a)`` to a table of ``id(b)``; every object met is kept alive, so no id is reused while
    the memo holds it). :meth:`sleep_set` asks it for many events against one."""

    def __init__(self, k: Any) -> None:
        self.k = k
        self.memo: dict[int, dict[int, int]] = {}  # 0: dependent, 1: independent, 2: decided at the state
        self.alive: list = []

    def _row(self, a: Any) -> dict[int, int]:
        row = self.memo.get(id(a))
        if row is None:
            row = self.memo[id(a)] = {}
            self.alive.append(a)
        return row

    def _holds(self, row: dict[int, int], a: Any, b: Any, state: Any) -> bool:
        r: dict[int, int] = row  # (typed locals: the compiled module looks up and compares natively)
        got = r.get(id(b))
        hit: int
        if got is None:
            hit = 1 if independent(a, b, self.k) else 2 if at_state(a, b, self.k) else 0
            self._row(b)
            r[id(b)] = hit
        else:
            hit = got
        if hit == 2:
            return commute_at(state, a, b)
        return hit == 1

    def __call__(self, a: Any, b: Any, state: Any) -> bool:
        return self._holds(self._row(a), a, b, state)

    def sleep_set(self, ev: Any, state: Any, taken: Any, before: Any, inherited: Any) -> tuple | None:
        """The sleep set of ``state``'s successor by ``ev`` (:func:`engine.bfs.search`): the events of
        ``taken[:before]`` and of ``inherited`` (a tuple, or None) independent of ``ev`` at ``state``, as a
        tuple; None when there is none."""
        row = self._row(ev)
        out: list | None = None
        n: int = before
        for i in range(n):
            e = taken[i]
            if self._holds(row, ev, e, state):
                if out is None:
                    out = [e]
                else:
                    out.append(e)
        if inherited is not None:
            for e in inherited:
                if self._holds(row, ev, e, state):
                    if out is None:
                        out = [e]
                    else:
                        out.append(e)
        return tuple(out) if out is not None else None
