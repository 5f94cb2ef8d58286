"""The table the protocol writes: timeline, commit metadata, heartbeats, rollback, reader view.

One :class:`Table` is the shared "world" of a run: the data-table timeline
(:class:`model.timeline.Timeline`), the write metadata each completed instant committed (what a
reader sees is derived from it, as Hudi reconciles written files against the commit metadata:
``HoodieTable.finalizeWrite`` / marker reconciliation), the heartbeats of instants their writer
still owns (``HoodieHeartbeatClient``), and the time source. Rules:

* ``start_commit`` (``BaseHoodieWriteClient.startCommit``): EAGER failed-writes policy first
  rolls back every pending data instant (single-writer assumption), then creates the instant
  requested -> inflight and starts its heartbeat.
* ``commit`` (``writeClient.commit``): inflight -> completed with a new completion time; the
  commit metadata (write statuses) becomes visible; the heartbeat stops. Completing an instant
  that was rolled back fails; completing one that is already completed is a rule break the
  model records (the timeline itself would refuse it, I3.complete-once).
* ``rollback`` deletes a pending instant and its files (modelled as the instant disappearing).
* ``clean`` (LAZY, ``CleanerUtils.rollbackFailedWrites``): rolls back pending data instants
  whose heartbeat expired.

Times come from a :class:`TimeSource`; the model's abstraction (``model.truetime``) is one
global strictly increasing clock, which :class:`LogicalClock` is. :class:`TrueTimeSource`
adapts a :mod:`model.truetime` generator for simulations.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Protocol

from model.instant import Action, State
from model.protocol.values import DEFAULT_EPOCH_MS, WriteStatus, logical_time
from .canonical import metadata_hashes, metadata_part
from .timeline import Timeline


class TimeSource(Protocol):
    def next_time(self, kind: str = "requested") -> str: ...  # 17 digits, > every earlier time

    def copy(self) -> "TimeSource": ...


@lru_cache(maxsize=65536)
def _fmt(created: int, since: int, epoch_ms: int) -> str:
    return logical_time(created, since, epoch_ms)


class LogicalClock:
    """A strictly increasing logical clock whose requested times are canonical.

    The k-th requested time is ``epoch + 1000*k`` ms; completion times fill the gap after the
    latest requested time (``epoch + 1000*k + c``, c = completions since then, < 1000). Every
    time is greater than all earlier ones (the TrueTime abstraction of :mod:`model.truetime`),
    and the k-th instant of every run has the same time, so states reached along different
    paths compare equal without renaming (cheap fingerprints).
    """

    __slots__ = ("epoch_ms", "created", "since")

    def __init__(self, epoch_ms: int = DEFAULT_EPOCH_MS, created: int = 0, since: int = 0):
        self.epoch_ms = epoch_ms
        self.created = created
        self.since = since

    def next_time(self, kind: str = "requested") -> str:
        if kind == "requested":
            self.created += 1
            self.since = 0
            return _fmt(self.created, 0, self.epoch_ms)
        self.since += 1
        return _fmt(self.created, self.since, self.epoch_ms)

    def copy(self) -> "LogicalClock":
        return LogicalClock(self.epoch_ms, self.created, self.since)


class TrueTimeSource:
    """Times from a :mod:`model.truetime` generator: ``gen.generate(process, now_fn()).time``.

    ``now_fn`` returns the current true (simulated) time in ms; ``on_generate`` (optional)
    receives each ``GeneratedTime`` record so a simulation can charge lock waits.
    """

    __slots__ = ("gen", "process", "now_fn", "on_generate")

    def __init__(self, gen, now_fn: Callable[[], int], process: str = "coordinator",
                 on_generate: Callable | None = None):
        self.gen, self.process, self.now_fn, self.on_generate = gen, process, now_fn, on_generate

    def next_time(self, kind: str = "requested") -> str:
        rec = self.gen.generate(self.process, self.now_fn())
        if self.on_generate is not None:
            self.on_generate(rec)
        return rec.time

    def copy(self) -> "TrueTimeSource":
        return TrueTimeSource(self.gen.copy(), self.now_fn, self.process, self.on_generate)


class Table:
    """Timeline + commit metadata + heartbeats of one data table (see module docstring)."""

    __slots__ = ("action", "timeline", "_owned", "metadata", "heartbeats", "clock",
                 "commit_log", "rollbacks", "observations", "last_key", "_fp", "_fp_hash", "_pending", "_own_meta",
                 "_own_clock", "_dups", "_canon", "_sig", "_meta_h", "_meta_canon")

    def __init__(self, table_version: int = 8, action: str = "deltacommit",
                 time_source: TimeSource | None = None, _blank: bool = False):
        if _blank:  # for copy() to fill (compiled by mypyc, __new__ would run __init__)
            return
        self.action = Action(action)
        self.timeline = Timeline(table_version)
        self._owned = True
        #: instant -> tuple[WriteStatus] committed with it (commit metadata)
        self.metadata: dict[str, tuple] = {}
        #: instants whose heartbeat is alive (their writer still owns them)
        self.heartbeats: frozenset = frozenset()
        self.clock = time_source if time_source is not None else LogicalClock()
        #: (instant, checkpoint key, "commit"|"recommit"), in commit order
        self.commit_log: tuple = ()
        #: instants rolled back, in order
        self.rollbacks: tuple = ()
        #: (rule, detail) pairs: rule breaks the table witnessed (e.g. a second completion)
        self.observations: tuple = ()
        #: key of the last commit (monitor of I11 ascending commit order)
        self.last_key: int | None = None
        self._fp: Any = None       # cached fingerprint of timeline + metadata (None: stale)
        self._fp_hash: Any = None  # cached fingerprint_hash() (None: stale)
        self._dups: Any = None     # cached duplicated_offsets() (None: stale; depends on metadata only)
        self._pending: Any = None  # cached pending data instants (None: stale)
        self._own_meta = True
        self._own_clock = True
        self._canon: Any = None    # cached hashes of engine.canonical.metadata_part (None: stale; dropped with _fp)
        self._sig: Any = None      # cached timeline.state_signature() (None: stale; dropped when the timeline changes)
        self._meta_h: Any = None   # cached hash of the sorted commit metadata (None: stale; dropped when it changes)
        self._meta_canon: Any = None  # the metadata's share of _canon: (instants, column hashes) (likewise)

    def copy(self) -> "Table":
        t = Table(_blank=True)
        t.action = self.action
        t.timeline = self.timeline
        t._owned = False
        self._owned = False  # both now share the timeline; whoever writes first copies it
        t.metadata = self.metadata      # copy-on-write (see _meta)
        t._own_meta = self._own_meta = False
        t.heartbeats = self.heartbeats
        t.clock = self.clock            # copy-on-write (see _time)
        t._own_clock = self._own_clock = False
        t.commit_log = self.commit_log
        t.rollbacks = self.rollbacks
        t.observations = self.observations
        t.last_key = self.last_key
        t._fp, t._fp_hash = self._fp, self._fp_hash
        t._dups = self._dups
        t._canon = self._canon
        t._sig, t._meta_h, t._meta_canon = self._sig, self._meta_h, self._meta_canon
        t._pending = self._pending
        return t

    def _tl(self) -> Timeline:
        self._fp = self._fp_hash = self._canon = self._sig = None
        self._pending = None
        if not self._owned:
            self.timeline = self.timeline.copy()
            self._owned = True
        return self.timeline

    def _meta(self) -> dict:
        if not self._own_meta:
            self.metadata = dict(self.metadata)
            self._own_meta = True
        self._fp = self._fp_hash = self._canon = self._meta_h = self._meta_canon = None
        self._dups = None
        return self.metadata

    def _time(self, kind: str) -> str:
        if not self._own_clock:
            self.clock = self.clock.copy()
            self._own_clock = True
        return self.clock.next_time(kind)

    def observe(self, rule: str, detail: str) -> None:
        self.observations = self.observations + ((rule, detail),)

    # -------------------------------------------------------------- queries
    def is_completed(self, instant: str) -> bool:
        return self.timeline.state_of(instant, self.action) is State.COMPLETED

    def is_pending(self, instant: str) -> bool:
        """``filterPendingExcludingCompaction().containsInstant``."""
        st = self.timeline.state_of(instant, self.action)
        return st is not None and st is not State.COMPLETED

    def pending_instants(self) -> list[str]:
        """Pending data instants, ascending (``filterPendingExcludingCompaction``)."""
        if self._pending is None:
            self._pending = self.timeline.pending_times(self.action)  # hot: every exploration step
        return self._pending

    def fingerprint(self) -> tuple:
        """Hashable summary of the timeline (instant, visible state) and the commit metadata.
        Completion times are left out: no protocol rule reads them."""
        if self._fp is None:
            self._fp = (self.signature(), tuple(sorted(self.metadata.items())))
        return self._fp

    def signature(self) -> tuple:
        """``timeline.state_signature()``, cached until the timeline changes (:meth:`fingerprint`'s first part)."""
        if self._sig is None:
            self._sig = self.timeline.state_signature()
        return self._sig

    def canonical_part(self, n: int) -> tuple:
        """:func:`engine.canonical.metadata_part` of the timeline and commit metadata (``n`` tasks)."""
        return metadata_part(self.signature(), self.metadata, n)

    def canonical_hashes(self, n: int) -> tuple:
        """:func:`engine.canonical.hashes` of :meth:`canonical_part`, cached like :meth:`fingerprint`; the
        commit metadata's columns are hashed once per change of the metadata (:func:`engine.canonical.
        metadata_hashes`), not again when only the timeline changed (a ``startCommit``, a rollback)."""
        c = self._canon
        if c is None:
            m = self._meta_canon
            if m is None:
                m = self._meta_canon = metadata_hashes(self.metadata, n)
            c = self._canon = (hash((self.signature(), m[0])), m[1])
        return c

    def fingerprint_hash(self) -> int:
        """A hash of :meth:`fingerprint` from its two parts' hashes, each cached until its part changes (the
        commit metadata is not walked again when only the timeline changed, as at a ``startCommit``)."""
        if self._fp_hash is None:
            m = self._meta_h
            if m is None:
                m = self._meta_h = hash(tuple(sorted(self.metadata.items())))
            self._fp_hash = hash((hash(self.signature()), m))
        return self._fp_hash

    def failed_writes(self) -> list[str]:
        """Pending data instants whose heartbeat expired (candidates of the LAZY rollback)."""
        return [t for t in self.pending_instants() if t not in self.heartbeats]

    def has_failed_writes(self) -> bool:
        """``bool(failed_writes())``, without the list (asked by every state's enabled events)."""
        hb = self.heartbeats
        for t in self.pending_instants():
            if t not in hb:
                return True
        return False

    # ---------------------------------------------------------------- rules
    def start_commit(self, eager: bool) -> str:
        """``startCommit``: (EAGER) roll back every pending data instant, then requested -> inflight."""
        if eager:
            for t in self.pending_instants():
                self.rollback(t)
        t = self._time("requested")
        tl = self._tl()
        tl.create(t, self.action)
        tl.transition_to_inflight(t, self.action)
        self.heartbeats = self.heartbeats | {t}
        return t

    def start_heartbeat(self, instant: str) -> None:
        self.heartbeats = self.heartbeats | {instant}

    def stop_heartbeat(self, instant: str) -> None:
        """``writeClient.cleanResources`` / a dead writer: the heartbeat expires."""
        if instant in self.heartbeats:
            self.heartbeats = self.heartbeats - {instant}

    def stop_all_heartbeats(self) -> None:
        self.heartbeats = frozenset()

    def commit(self, instant: str, statuses: tuple, key: int, recommit: bool = False) -> str:
        """``writeClient.commit``. Returns ``"committed"``, ``"rolled-back"`` or ``"already-completed"``.

        ``"rolled-back"``: the instant is gone (a rollback removed it), the commit fails and its
        data is lost (Hudi throws and fails the job; the data was acknowledged by a completed
        checkpoint, so no replay brings it back). ``"already-completed"``: a second completion;
        the model applies it (new statuses become visible, as an overwritten completed file
        would) and records the break so the invariant I11.complete-once can name it.
        """
        how = "recommit" if recommit else "commit"
        state = self.timeline.state_of(instant, self.action)  # None: not on the timeline
        if self.last_key is not None and key <= self.last_key and state is not None:
            self.observe("I11.ascending-commit-order",
                         f"{how} of key {key} (instant {instant}) after key {self.last_key} was committed")
        if state is None:
            self.observe("commit-of-rolled-back-instant",
                         f"{how} of key {key}: instant {instant} was rolled back; its data is lost")
            return "rolled-back"
        if state is State.COMPLETED:
            self.observe("I11.complete-once", f"{how} of key {key}: instant {instant} completes a second time")
            self._meta()[instant] = self.metadata.get(instant, ()) + tuple(statuses)
            self.commit_log = self.commit_log + ((instant, key, how),)
            self.last_key = key
            return "already-completed"
        self._tl().complete(instant, self.action, self._time("completion"))
        self._meta()[instant] = tuple(statuses)
        self.stop_heartbeat(instant)
        self.commit_log = self.commit_log + ((instant, key, how),)
        self.last_key = key
        return "committed"

    def rollback(self, instant: str) -> None:
        """Roll back a pending instant: its files and every state file are deleted."""
        self._tl().delete(instant, self.action)
        self.stop_heartbeat(instant)
        self.rollbacks = self.rollbacks + (instant,)

    def clean(self) -> list[str]:
        """LAZY failed-writes rollback run by a clean: roll back every expired pending instant."""
        done = self.failed_writes()
        for t in done:
            self.rollback(t)
        return done

    # ------------------------------------------------------------ reader view
    def duplicated_offsets(self) -> tuple:
        """``(split, offset)`` pairs committed more than once, ascending. Commit metadata holds
        the statuses of completed instants only, so this reads it directly; cached until the
        metadata changes (the exactly-once check runs after every step of an exploration)."""
        if self._dups is None:
            seen: set = set()
            dups: set = set()
            for statuses in self.metadata.values():
                for s in statuses:
                    for o in range(s.start, s.end):
                        k = (s.task, o)
                        (dups if k in seen else seen).add(k)
            self._dups = tuple(sorted(dups))
        return self._dups

    def committed_statuses(self) -> list[WriteStatus]:
        """Write statuses of completed instants, in completion order (what readers see)."""
        out: list[WriteStatus] = []
        for i in sorted(self.timeline.completed((self.action,)), key=lambda i: i.completion_time or ""):
            out.extend(self.metadata.get(i.requested_time, ()))
        return out
