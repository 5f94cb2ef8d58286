"""The streaming simulation: SimPy processes that drive :class:`model.protocol.System` through simulated time.

The model decides *what* may happen (every protocol rule: instant requests, blocking, flushes, snapshots,
commits, failover, rollback); this module decides *when*, and how long each step takes. It never re-states a
rule: it asks ``System.is_enabled`` / ``System.writer_status`` and applies events with ``System.apply``.

Processes
---------
* **writer i** (one per task) — consumes its source partition as a fluid (:mod:`sim.fluid`) at up to
  ``1 / per_record_us``; wakes when its buffer is full (or at a barrier, or on a crash), ingests whole
  *chunks*, asks for an instant when the model says it ``needs-instant`` (an RPC to the coordinator), waits
  while the model says ``blocked`` (blocking mode), and flushes (``flush_base_ms + MB * flush_ms_per_mb`` plus
  one storage call). At a barrier it flushes the rest and snapshots (``snapshot-task``).
* **checkpoint trigger** — every ``interval_s`` (after the previous one finished, plus ``min_pause_s``):
  ``trigger-checkpoint``, barriers to every writer, ``complete-checkpoint`` when all snapshotted, or
  ``abort-checkpoint`` after ``timeout_s``. The notification is lost with ``lost_ack_probability``.
* **barrier alignment** — a barrier is a position in a task's input stream, not a signal: it reaches task
  ``i``'s input ``barrier_latency_ms`` (drawn per task, uniform on [0.5x, 1.5x]) after the trigger, behind
  the records already in flight to the task. Aligned (Flink's default, exactly-once): the task takes it once
  it has processed those records -- none when it keeps up, up to ``inflight_kb`` of network buffers when it
  is backpressured; a task with a full buffer flushes first and reads on. Unaligned: the barrier overtakes
  the in-flight records (Flink stores them with the checkpoint; here they are re-read from the source after
  a restore, the same records). Each task has one input channel (its source split), so aligning several
  channels takes no time of its own. A barrier that reaches a restarting task waits until it runs again.
* **coordinator** — two single-threaded executors (:class:`sim.executor.Executor`) as in Hudi 1.1
  (``instantRequestExecutor`` and the ``meta-event-handle`` executor; in blocking mode instant requests
  share the commit thread, as 0.x's coordinator started the next instant after the commit). Blocking mode's
  ``CommitGuard`` wait is the writer's ``blocked`` status (it waits in its own process, holding no thread,
  as with the spec's ``request_thread="own"``); once the model lets it ask, the request queues on the shared
  thread behind the commits there and times out after ``coordinator.request_timeout_s``
  (:func:`expire_request`, model fault ``request-timeout``). The guard waiting *on* the executor
  (``request_thread="executor"``, variant ``commit-guard-on-executor``, a deadlock until the guard's timeout)
  is the spec's alone: a variant with the spec's executor queue is refused here. An instant
  request that starts a new instant costs a timeline listing (``listing_base_ms + listing_ms_per_instant *
  active instants``), the TrueTime generation (:class:`model.truetime.SkewAdjustingTimeGenerator` through the
  model's ``TrueTimeSource``: lock contention and the skew wait, charged from the generator's own records)
  and two timeline writes. A checkpoint not complete ``timeout_s`` after its trigger is declined. A commit
  costs ``commit_latency_s`` + ``timeline_writes`` + ``metadata_writes`` storage calls + its completion-time
  generation; a clean (LAZY rollback of expired instants) follows a commit when the model enables it.
* **faults** — crashes at fixed times, exponentially spaced, or right before/after the n-th occurrence of
  a protocol step (:class:`CrashPlan`); a crashed task is down for ``restart_delay_s`` and its source rewinds
  to what the model restored.

Records in aggregate
--------------------
The model counts records by source offset; the simulation gives it *chunks*: model record ``k`` of split
``i`` stands for the real records ``[bounds[k], bounds[k+1])`` of that partition, whatever the writer had
consumed when it ingested it -- a full buffer (``buffer_records``) or, at a barrier, the rest. The model's
``buffer_size`` is 1 chunk, so "buffer full" in the model is "a chunk waits to be flushed". Rewinding to a
restored offset ``m`` truncates ``bounds`` after ``m``: the records are read again and chunked afresh. The
model's exactly-once check is over ``(split, chunk)``; a chunk re-read after a rewind that was also committed
before it would be committed twice, which the model reports. Real-record counts (throughput, latency,
lost/duplicated) go through ``bounds``.

Every run records its events in the model's trace format; the model's invariants are checked during the
run (``check_step`` every few acks) and after :meth:`System.drain` (``check_drained``). A violation fails
the run and writes the trace so ``hoodie-lab replay <trace>`` shows the first violating step.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import simpy
from simpy.events import Event

from model.invariants.times import check_timeline_times
from engine.invariants import (
    check_blocking_one_pending,
    check_bounded_state,
    check_drained,
    check_one_instant_per_key,
    check_step,
    check_subsume,
)
from model.protocol import (AbortCheckpoint, Clean, CompleteCheckpoint, CrashCoordinator, CrashTask, DeliverAck, Flush, Ingest, InstantTimeout, LoseAck, RequestInstant, RequestTimeout, RestartJob, SnapshotTask, TriggerCheckpoint, variant)
from engine import System, TrueTimeSource
from model.truetime import Clock, Lock, SkewAdjustingTimeGenerator, TimeGeneratorConfig

from .executor import Executor
from .loop import run_counted
from .fluid import Source, StorageLatency, consumed, time_to_consume
from .metrics import RunMetrics

#: The model's bound on records per split.
MAX_MODEL_RECORDS = 1_000_000
#: Network time of a task <-> coordinator request and its reply (s), and the coordinator thread's time to
#: handle a request that needs no new instant (s).
RPC_S = 0.001
HANDLE_S = 0.0001

CRASH_EVENTS = {"task": "crash-task", "coordinator": "crash-coordinator", "job": "restart-job"}


#: The value an expired instant request's grant fires with (see :func:`expire_request`).
EXPIRED = object()


def expire_request(executor: Executor, grant, _timer) -> None:
    """The instant request of ``grant`` is still queued ``coordinator.request_timeout_s`` (0: ``ack_timeout_s``)
    after it was sent: its RPC times out (Flink's RPC ask timeout; Hudi #19902). Taken out of the queue, its grant fires with
    :data:`EXPIRED`. A grant already taken, or given up by a crash, is left alone."""
    if not grant.triggered and grant in executor.queue:
        executor.give(grant)
        grant.succeed(EXPIRED)


@dataclass
class CrashPlan:
    """Crash ``target`` ("task" | "coordinator" | "job") right ``when`` ("before" | "after") the
    ``occurrence``-th application of protocol step ``step`` (an event kind), or at time ``at_s``."""

    target: str
    step: str | None = None
    when: str = "after"
    occurrence: int = 1
    at_s: float | None = None


@dataclass
class StreamResult:
    mode: str
    seed: int
    metrics: RunMetrics
    summary: dict
    verdict: str                      # "ok" or the first violated invariant
    replay: str | None = None         # replay command when the run failed
    trace_path: Path | None = None
    sim_events: int = 0               # SimPy events processed
    model_events: int = 0             # protocol events applied
    wall_s: float = 0.0               # wall time of the event loop
    loop_cpu_s: float = 0.0           # CPU time of the event loop
    lost_records: int = 0
    duplicated_records: int = 0
    crash_log: list = field(default_factory=list)
    request_timeouts: int = 0         # instant requests that timed out queued on the coordinator (request-timeout)


class _Writer:
    __slots__ = ("i", "src", "x", "t", "proc", "wake", "woken", "barrier_at", "barrier_n", "down_until", "stall_t0",
                 "bounds", "ev_ingest", "ev_request", "ev_flush", "ev_snapshot")

    def __init__(self, i: int, src: Source):
        self.i, self.src = i, src
        # this task's protocol events (immutable values, made once)
        self.ev_ingest, self.ev_request, self.ev_flush, self.ev_snapshot = \
            Ingest(i), RequestInstant(i), Flush(i), SnapshotTask(i)
        self.bounds = [0.0]   # real offset where model record k starts; bounds[-1]: start of the next
        self.x = 0.0          # real records consumed from the source partition
        self.t = 0.0          # time up to which x is accounted
        self.proc = None
        self.wake = None      # while consuming: the event that ends the wait ("full" or "barrier")
        self.woken = False    # ... and whether it was triggered (the task resumes at this time)
        self.barrier_at = None  # input position (real records) of the barrier that arrived, until taken
        self.barrier_n = 0      # ... and its checkpoint id
        self.down_until = 0.0
        self.stall_t0 = None


def _ring(w: _Writer, wake: Event, cause: str, _timer) -> None:
    """A timer ends writer ``w``'s wait ``wake`` with ``cause`` ("full" or "barrier"), unless the wait is over
    (an earlier timer of an older wait) or something else ended it first."""
    if w.wake is wake and not w.woken:
        w.woken = True
        wake.succeed(cause)


class _Crash(Exception):
    pass


class StreamSim:
    """One run of one experiment point in one mode (see the module docstring)."""

    def __init__(self, exp, mode: str, seed: int, quick: bool = False, keep_series: bool = True,
                 crash_plan: CrashPlan | None = None, trace_dir: Path | None = None, check_every_acks: int = 0,
                 failed_trace_dir: Path | None = None):
        p = exp.params
        self.exp, self.mode, self.seed = exp, mode, seed
        self.duration = float(p["run"]["quick_duration_s" if quick else "duration_s"])
        self.rng = random.Random(seed)
        self.P = P = p["writers"]["parallelism"]
        src, wr, ck, co, tt, st, fa = (p[k] for k in ("source", "writers", "checkpoint", "coordinator",
                                                      "truetime", "storage", "faults"))
        self.p = p
        rate = src["rate_rps"] / P
        # every partition has the same arrival profile (the experiment's rates divided by parallelism)
        self.source = Source(rate, src["burst_rate_rps"] / P, src["burst_every_s"], src["burst_s"])
        self.sources = [self.source] * P
        self.capacity = 1e6 / wr["per_record_us"] if wr["per_record_us"] > 0 else math.inf
        peak = rate + (src["burst_rate_rps"] / P if src["burst_every_s"] > 0 else 0.0)
        self.buffer = float(wr["buffer_records"])
        self.record_bytes = src["record_bytes"]
        self.flush_base_s = wr["flush_base_ms"] / 1000.0
        self.flush_s_per_record = wr["flush_ms_per_mb"] * self.record_bytes / 1e6 / 1000.0
        self.aligned = ck["alignment"] == "aligned"
        self.barrier_latency_s = ck["barrier_latency_ms"] / 1000.0
        self.inflight_records = ck["inflight_kb"] * 1024.0 / self.record_bytes
        # Model records (chunks) per split: one per full buffer and one per barrier, twice over for rewinds.
        chunks = peak * self.duration / self.buffer + self.duration / ck["interval_s"]
        records = min(MAX_MODEL_RECORDS, int(2 * chunks) + 64)
        faults = {"abort"}
        if fa["lost_ack_probability"] > 0:
            faults.add("lost-ack")
        crashes = len(fa["crash_at_s"]) + (int(self.duration / fa["crash_every_s"]) * 3 + 3
                                          if fa["crash_every_s"] > 0 else 0)
        if crash_plan is not None:
            crashes += 1
        targets = {fa["crash_target"]} | ({crash_plan.target} if crash_plan else set())
        if crashes:
            faults |= {{"task": "task-crash", "coordinator": "coordinator-crash", "job": "full-restart"}[t]
                       for t in targets}
        name = p["protocol"]["blocking_variant" if mode == "blocking" else "async_variant"]
        n_ckp = int(self.duration / ck["interval_s"]) + 16 + crashes * 4
        # An instant request still queued on the coordinator's executor (behind a slow commit or table
        # service) ack_timeout_s after it was sent fails its task (model fault request-timeout); room for
        # one such failure per timeout period in the crash budget.
        faults.add("request-timeout")
        self.request_timeout_s = co["request_timeout_s"] or co["ack_timeout_s"]
        timeouts = int(self.duration / self.request_timeout_s) + 1
        try:
            self.pcfg = variant(name, parallelism=P, buffer_size=1, records=records,
                                max_checkpoints=min(10_000, n_ckp), faults=frozenset(faults),
                                max_crashes=min(10_000, crashes + timeouts))
        except ValueError as exc:  # a bound of the protocol model (e.g. its maximum parallelism)
            from lakeio.errors import UserError

            raise UserError(f"{exp.source}: the protocol model refuses this point: {exc}") from None
        self.env = env = simpy.Environment()
        # TrueTime: one generator for the table; the coordinator's two executors are two processes.
        self.gen = None
        self._charges: list = []
        if tt["enabled"]:
            off = int(tt["clock_offset_ms"])
            self.gen = SkewAdjustingTimeGenerator(
                TimeGeneratorConfig(max_expected_skew_ms=int(tt["max_skew_ms"])),
                clocks={"coordinator": Clock(offset_ms=self.rng.randint(-off, off))},
                lock=Lock(latency_ms=int(tt["lock_acquire_ms"])))
            ts = TrueTimeSource(self.gen, lambda: int(env.now * 1000), "coordinator", self._charges.append)
        else:
            ts = None
        self.system = System(self.pcfg, time_source=ts, seed=seed & 0xFFFF)
        self.table = self.system.table  # (the System changes its table in place, never replaces it)
        self.storage = StorageLatency(self.rng, st["median_ms"], st["sigma"], st["spike_probability"],
                                      st["spike_factor"])
        self.metrics = RunMetrics(self.duration, p["run"]["sample_s"], arrival_times=self.source.times_of)
        self.keep_series = keep_series
        self.writers = [_Writer(i, s) for i, s in enumerate(self.sources)]
        # The coordinator's single-threaded executors: instantRequestExecutor and the meta-event-handle
        # (commit) executor; in blocking mode one thread does both (0.x started the next instant after the
        # commit, and 1.1's CommitGuard makes the request wait for it).
        self.commit_thread = Executor(env)
        self.request_thread = self.commit_thread if mode == "blocking" else Executor(env)
        self.coord_changed = env.event()
        self.snap_done = env.event()
        self._timeout_of = None     # (checkpoint id, deadline) of the pending checkpoint
        self._timeout_timer = None  # ... and what the one checkpoint-timeout timer is set for, if set
        self._timed_out = None      # the last checkpoint that reached its deadline
        self.events: list = []
        self.counts: dict[str, int] = {}
        self.crash_plan = crash_plan
        self.crash_plan_label = (f"{crash_plan.target}-{crash_plan.when}-{crash_plan.step}-{crash_plan.occurrence}"
                                 if crash_plan is not None and crash_plan.step else "")
        self.crash_log: list[dict] = []
        self.request_timeouts = 0  # instant requests that timed out while queued on the coordinator
        self.trace_dir = trace_dir                # every run's trace goes here (when given)
        self.failed_trace_dir = failed_trace_dir  # a failing run's trace goes here (default runs/sim/failed)
        self.check_every = check_every_acks or 1
        self.acks_seen = 0
        self.first_violation: str | None = None
        self.committed_real = 0
        self._commit_log_len = 0
        self._defer = False      # a commit in progress: its effects are counted when its latency is over
        self._committing = 0     # instants being committed (still pending as far as a reader can tell)
        self._pending_n = -1

    # ------------------------------------------------------------------ model access
    def apply(self, ev, checked: bool = True) -> None:
        """Apply one protocol event, with a planned crash right before or after it.

        ``checked=False``: the caller has just seen ``is_enabled(ev)`` hold (the model skips its guard).

        A crash runs synchronously (the model's failover is one atomic action). Raises :class:`_Crash` when
        the calling writer was restarted by it, or when a "before" crash disabled the event; otherwise the
        caller carries on (the checkpoint and ack processes re-read the model's state)."""
        plan = self.crash_plan
        if plan is None:  # fast path: no planned crash left (step counts only matter for one)
            self.system.apply(ev, checked)
            self.events.append(ev)
            if not self._defer and len(self.table.commit_log) != self._commit_log_len:
                self._on_commits()
            return
        k = ev.kind
        n = self.counts.get(k, 0) + 1
        hit = plan is not None and plan.step == k and plan.occurrence == n
        if hit and plan.when == "before":
            self.counts[k] = n
            self.crash_plan = None
            if self.crash(plan.target) or not self.enabled(ev):
                raise _Crash()
            n = self.counts[k]  # the event still happens, after the crash
        self.system.apply(ev)
        self.events.append(ev)
        self.counts[k] = n
        if not self._defer and len(self.table.commit_log) != self._commit_log_len:
            self._on_commits()
        if hit and plan.when == "after":
            self.crash_plan = None
            if self.crash(plan.target):
                raise _Crash()

    def enabled(self, ev) -> bool:
        return self.system.is_enabled(ev) is None

    def take_charges(self) -> float:
        """Seconds the TrueTime generations of the last apply took (lock wait + skew wait)."""
        if not self._charges:
            return 0.0
        # generations of one apply run back to back (each waits for the previous one's lock release)
        total = (max(r.released_at for r in self._charges) - min(r.requested_at for r in self._charges)) / 1000.0
        self.metrics.lock_waits.extend(r.lock_wait_ms / 1000.0 for r in self._charges)
        self._charges.clear()
        self.gen.history.clear()  # summarised above; the generator need not keep every record
        return total

    def _on_commits(self) -> None:
        """New entries in the table's commit log: count committed records, latency, pending instants."""
        table = self.table
        new = table.commit_log[self._commit_log_len:]
        self._commit_log_len = len(table.commit_log)
        now = self.env.now
        writers, latency_offsets = self.writers, self.metrics.latency_offsets
        for instant, _key, _how in new:
            recs = 0.0
            offsets: list[float] = []
            for task, start, end in table.metadata.get(instant, ()):  # WriteStatus (unpacked: no field look-ups)
                w = writers[task]
                bounds = w.bounds
                last = len(bounds) - 1  # (a broken variant may commit chunks a rewind has dropped)
                lo, hi = bounds[start if start < last else last], bounds[end if end < last else last]
                recs += hi - lo
                offsets += (lo, hi)
            latency_offsets(now, offsets)
            self.committed_real += recs
            self.metrics.commits.append((now, instant, recs))
            self.metrics.committed.add_at(min(now, self.duration), recs)
        self._check_recovery()

    def _note_pending(self) -> None:
        n = len(self.system.pending_instants()) + self._committing
        if n != self._pending_n:
            self._pending_n = n
            self.metrics.pending.append((self.env.now, n))

    def _signal(self) -> None:
        ev, self.coord_changed = self.coord_changed, self.env.event()
        ev.succeed()

    # ---------------------------------------------------------------- writer helpers
    def _advance(self, w: _Writer, now: float) -> None:
        """Account the fluid consumption of writer ``w`` up to ``now`` (never past a full buffer)."""
        if now > w.t:
            x = consumed(w.src, w.x, w.t, now, self.capacity)
            limit = w.bounds[self.system.writers[w.i].flushed] + self.buffer
            if x > limit:
                x = max(limit, w.x)
            if x > w.x:
                self.metrics.processed.add_interval(w.t, now, x - w.x)
            w.x = x
        w.t = now

    def _request_cost(self) -> float:
        """The coordinator thread's time for an instant request that just started a new instant: the handling
        time, the timeline listing, the TrueTime generation (the generator's own record: lock wait + skew
        wait) and two timeline writes. (A request for a key that already has an instant costs the handling
        time alone; the writer charges that itself.)"""
        cost = HANDLE_S + (self.take_charges() + self._listing() + self.storage.total(2))
        self._note_pending()
        return cost

    def _listing(self) -> float:
        co = self.p["coordinator"]
        active = min(len(self.table.timeline), co["active_instants"])
        return (co["listing_base_ms"] + co["listing_ms_per_instant"] * active) / 1000.0

    def _wait_blocked(self, w: _Writer):
        """Blocking mode: wait for a commit (or the ack timeout -> ``instant-timeout``)."""
        env = self.env
        timeout = self.p["coordinator"]["ack_timeout_s"]
        start = w.stall_t0 if w.stall_t0 is not None else env.now
        remaining = start + timeout - env.now
        if remaining <= 0:
            ev = InstantTimeout(w.i)
            if self.enabled(ev):
                self.apply(ev, checked=False)
                self._after_failover("instant-timeout")
                raise _Crash()  # this writer was restarted too
            remaining = 1.0  # an ack is in flight and may still free the task
        yield self.coord_changed | env.timeout(remaining)

    def writer(self, w: _Writer):
        """Writer task ``w``: consume until the buffer is full or a barrier arrives, hand the chunk to the
        model, then do what the model's :meth:`System.task_step` says until it says nothing:

        * ``request-instant`` -- the instant RPC: queued on the coordinator's request thread and applied
          when the thread handles it (:meth:`_request_cost`), then the reply's network time; no grant when
          the model no longer enables the request by then (the task asks the model again);
        * ``blocked`` -- wait for a commit (:meth:`_wait_blocked`);
        * ``flush`` / ``snapshot-task`` -- write the buffer (``flush_base_ms + MB * flush_ms_per_mb`` plus
          one storage call when it holds records), then the model's flush or snapshot if still enabled; a
          snapshot ends the barrier.

        One generator for the whole cycle: this is the simulation's hot path (one pass per writer and
        checkpoint), so the steps are written inline rather than as sub-generators."""
        env = self.env
        timeout = env.timeout
        system = self.system
        task_step, is_enabled, apply = system.task_step, system.is_enabled, self.apply
        buf, cap, src, i = self.buffer, self.capacity, w.src, w.i
        bounds = w.bounds
        processed = self.metrics.processed
        take, give = self.request_thread.take, self.request_thread.give
        ev_ingest, ev_request, ev_flush, ev_snapshot = w.ev_ingest, w.ev_request, w.ev_flush, w.ev_snapshot
        flush_base, flush_per_record, storage = self.flush_base_s, self.flush_s_per_record, self.storage
        instant_requests, stall = self.metrics.instant_requests, self.metrics.stall
        request_timeout = self.request_timeout_s
        now = env.now  # (read once after each yield)
        while True:
            try:
                if w.down_until > now:
                    yield timeout(w.down_until - now)
                    w.t = now = env.now
                at = w.barrier_at
                barrier = at is not None and w.x >= at - 1e-9  # a barrier arrived and nothing is ahead of it
                if not barrier:
                    target = bounds[-1] + buf
                    if w.x < target - 1e-9:
                        # consume until the buffer is full, or up to an arrived barrier if that comes first;
                        # a barrier arriving meanwhile wakes the task itself (a crash interrupts)
                        stop, cause = (at, "barrier") if at is not None and at < target else (target, "full")
                        stop_at = time_to_consume(src, w.x, now, stop, cap)
                        w.wake = wake = Event(env)
                        w.woken = False
                        timeout(stop_at - now if stop_at > now else 0.0).callbacks.append(
                            partial(_ring, w, wake, cause))
                        cause = yield wake
                        w.wake = None
                        now = env.now
                        if cause == "barrier":
                            barrier = True
                        else:  # the buffer is full: land exactly on the target (no float residue)
                            processed.add_interval(w.t, now, target - w.x)
                            w.x, w.t = float(target), now
                if barrier:
                    p = system.pending_checkpoint
                    if p is None or p.id != w.barrier_n:
                        barrier = False  # its checkpoint was aborted meanwhile
                    w.barrier_at = None
                self._advance(w, now)
                # hand what was consumed since the last chunk to the model as one record (buffer room)
                sw = system.writers[i]
                if w.x - bounds[-1] >= 1.0 and sw.offset == sw.flushed and sw.offset + 1 == len(bounds):
                    apply(ev_ingest)
                    bounds.append(w.x)
                while True:  # the model's next step for this task, until there is none
                    if barrier and system.pending_checkpoint is None:
                        barrier = False  # the checkpoint was aborted meanwhile (during a flush or RPC)
                    step = task_step(i, barrier)
                    if step == "request-instant":
                        t0 = now
                        if w.stall_t0 is None:
                            w.stall_t0 = t0
                        grant = take()
                        expired = False
                        try:  # (a crash gives the job up, queued or running)
                            if not grant.triggered:  # queued behind another job: the RPC may time out
                                timeout(max(0.0, t0 + request_timeout - now)).callbacks.append(
                                    partial(expire_request, self.request_thread, grant))
                            if (yield grant) is EXPIRED:
                                expired = True  # (expire_request took it out of the queue)
                                ev = RequestTimeout(i)
                                if is_enabled(ev) is None:
                                    self.request_timeouts += 1
                                    apply(ev, checked=False)
                                    self._after_failover("request-timeout")
                                    raise _Crash()  # this writer was restarted too
                                now = env.now  # no crash budget left: the task asks again
                                continue
                            if is_enabled(ev_request) is not None:
                                now = env.now
                                continue
                            before = system.coordinator.instant
                            apply(ev_request, checked=False)
                            if system.coordinator.instant != before:  # a new instant was started
                                yield timeout(self._request_cost())
                            else:
                                yield timeout(HANDLE_S)
                        finally:
                            if not expired:
                                give(grant)
                        yield timeout(RPC_S)  # the request's and the reply's network time
                        now = env.now
                        instant_requests.append(now - t0)
                    elif step == "blocked":
                        if w.stall_t0 is None:
                            w.stall_t0 = now
                        yield from self._wait_blocked(w)
                        now = env.now
                    else:
                        if w.stall_t0 is not None:
                            stall(i, system.next_checkpoint - 1, w.stall_t0, now)
                            w.stall_t0 = None
                        if step is None:
                            break
                        snapshot = step == "snapshot-task"
                        sw = system.writers[i]
                        records = bounds[sw.offset] - bounds[sw.flushed]
                        cost = flush_base + flush_per_record * records + (storage.sample() if records else 0.0)
                        if cost > 0:
                            yield timeout(cost)
                            now = env.now
                        ev = ev_snapshot if snapshot else ev_flush
                        if is_enabled(ev) is None:
                            apply(ev, checked=False)
                            if snapshot:
                                p = system.pending_checkpoint
                                if p is not None and p.all_tasks_done():
                                    self.snap_done.succeed()
                                    self.snap_done = env.event()
                        if snapshot:
                            break
                w.t = now  # no consumption while flushing / waiting
            except _Crash:
                w.wake = None
                w.stall_t0 = None
                now = env.now
            except simpy.Interrupt:  # a crash while consuming, flushing or waiting
                w.wake = None
                w.stall_t0 = None
                now = env.now

    def barrier(self, n: int) -> None:
        """Send checkpoint ``n``'s barrier to every task: it arrives after the task's barrier latency."""
        lat = self.barrier_latency_s
        if lat <= 0:
            for w in self.writers:
                self._barrier_arrives(w, n)
            return
        timeout, rnd, arrives = self.env.timeout, self.rng.random, self._barrier_arrives
        for w in self.writers:
            timeout(lat * (0.5 + rnd())).callbacks.append(partial(arrives, w, n))

    def _barrier_arrives(self, w: _Writer, n: int, _timer=None) -> None:
        """Barrier ``n`` reaches task ``w``'s input, behind the records in flight to it (aligned: what the
        source emitted and the task has not processed -- everything that arrived, up to ``inflight_kb`` of
        buffers; unaligned: nothing). A consuming task is woken when it reaches the barrier (now, when
        nothing is ahead of it); a busy one finds it when it next reads."""
        p = self.system.pending_checkpoint
        now = self.env.now
        if p is None or p.id != n:
            return  # aborted meanwhile
        if w.down_until > now:  # the task is restarting: the barrier reaches it once it runs again
            self.env.timeout(w.down_until - now).callbacks.append(partial(self._barrier_arrives, w, n))
            return
        wake = w.wake
        x = self._consumed_at(w, now)
        at = x
        if self.aligned:  # behind what arrived and is not processed, up to the in-flight buffers
            arrived, cap = w.src.arrived(now), x + self.inflight_records
            at = arrived if arrived < cap else cap
        w.barrier_at, w.barrier_n = (at if at > x else x), n
        if wake is None or w.woken:
            return
        if at <= x + 1e-9:
            # the task takes the barrier now: account what it consumed up to now here (the same as its own
            # _advance would when it resumes, which then has nothing left to do)
            if x > w.x:
                self.metrics.processed.add_interval(w.t, now, x - w.x)
            w.x, w.t = x, now
            w.woken = True
            wake.succeed("barrier")
        elif at < w.bounds[-1] + self.buffer:  # it reaches the barrier before its buffer is full
            at_t = time_to_consume(w.src, w.x, w.t, at, self.capacity)
            self.env.timeout(max(0.0, at_t - now)).callbacks.append(partial(_ring, w, wake, "barrier"))

    # ------------------------------------------------------------------ checkpoints
    def checkpoints(self):
        env = self.env
        ck = self.p["checkpoint"]
        lost_p = self.p["faults"]["lost_ack_probability"]
        next_t = ck["interval_s"]
        while True:
            yield env.timeout(max(0.0, next_t - env.now))
            trigger_t = env.now
            try:
                if not self.enabled(_TRIGGER):
                    next_t = env.now + ck["interval_s"]
                    continue
                self.apply(_TRIGGER, checked=False)
                p = self.system.pending_checkpoint
                if p is None:  # a crash right after the trigger aborted it
                    raise _Crash()
                n = p.id
                self.barrier(n)
                self._timeout_of = (n, trigger_t + ck["timeout_s"])
                if self._timeout_timer is None:
                    self._set_timeout_timer()
                try:
                    while True:
                        p = self.system.pending_checkpoint
                        if p is None or p.id != n or p.all_tasks_done() or self._timed_out == n:
                            break
                        yield self.snap_done
                finally:
                    self._timeout_of = None
                p = self.system.pending_checkpoint
                if p is not None and p.id == n:
                    if p.all_tasks_done():
                        self.apply(CompleteCheckpoint(), checked=False)
                        self.metrics.checkpoints.append((n, trigger_t, env.now))
                        if n in self.system.acks_in_flight:
                            if lost_p and self.rng.random() < lost_p and self.enabled(LoseAck(n)):
                                self.apply(LoseAck(n), checked=False)
                            else:
                                env.process(self.deliver_ack(n))
                    else:
                        self.apply(AbortCheckpoint())
                        self.metrics.checkpoints.append((n, trigger_t, None))
            except _Crash:
                pass
            next_t = max(trigger_t + ck["interval_s"], env.now + ck["min_pause_s"])

    def _set_timeout_timer(self) -> None:
        """The checkpoint timeout (``timeout_s`` after the trigger, then the checkpoint is declined): one timer
        at a time, for the pending checkpoint's deadline. A checkpoint usually completes long before its
        deadline and SimPy cannot cancel a timer, so instead of one timer per checkpoint (each in the event
        queue until its deadline) the timer that rings for a checkpoint already over is set again for the
        one pending then (deadlines only grow)."""
        _n, deadline = self._timeout_timer = self._timeout_of
        self.env.timeout(max(0.0, deadline - self.env.now)).callbacks.append(self._timeout_rings)

    def _timeout_rings(self, _timer) -> None:
        set_for, self._timeout_timer = self._timeout_timer, None
        if self._timeout_of is None:  # no checkpoint pending: the next trigger sets the timer
            return
        if self._timeout_of != set_for:  # set for a checkpoint that is over: set it for the pending one
            self._set_timeout_timer()
            return
        self._timed_out = set_for[0]  # the pending checkpoint reached its deadline
        self.snap_done.succeed()
        self.snap_done = self.env.event()

    def deliver_ack(self, n: int):
        """``notifyCheckpointComplete(n)`` on the coordinator's commit thread: commits, then a clean."""
        env = self.env
        co = self.p["coordinator"]
        yield env.timeout(RPC_S)
        thread = self.commit_thread
        grant = thread.take()
        try:
            yield grant
            ev = DeliverAck(n)
            if not self.enabled(ev):
                return  # dropped by a failover, or the ack was lost
            # The commit takes effect in the model when the thread starts it; its latency occupies the
            # thread and delays what readers see (committed records, latency, pending instants).
            before = len(self.table.commit_log)
            self._defer = True
            try:
                self.apply(ev, checked=False)
            except _Crash:
                return
            finally:
                self._defer = False
            commits = len(self.table.commit_log) - before
            cost = self.take_charges()
            if commits:
                cost += commits * (co["commit_latency_s"] + self.storage.total(co["timeline_writes"] +
                                                                               co["metadata_writes"]))
            if self.enabled(_CLEAN):
                try:
                    self.apply(_CLEAN, checked=False)
                except _Crash:
                    return
                cost += self._listing() + self.storage.total(2)
            self.acks_seen += 1
            if self.acks_seen % self.check_every == 0:
                self.check()
            self._committing += commits
            self._note_pending()
            yield env.timeout(cost)
            self._committing -= commits
            if len(self.table.commit_log) != self._commit_log_len:
                self._on_commits()
            self._note_pending()
        finally:
            thread.give(grant)
        self._signal()

    # ------------------------------------------------------------------------ faults
    def crash(self, target: str) -> bool:
        """Apply the crash event for ``target`` now; restarted tasks go down for the restart delay.

        Returns True when the process running this call is a writer the crash restarted."""
        ev = {"task": CrashTask(self.rng.randrange(self.P)), "coordinator": CrashCoordinator(),
              "job": RestartJob()}[target]
        if not self.enabled(ev):
            return False
        back = self.env.now + self.p["faults"]["restart_delay_s"]
        self.crash_log.append({"t": self.env.now, "target": target, "records": self._consumed_now(),
                               "back_at": back, "recovered_at": None})
        self.env.process(self._recheck_at(back))
        self.system.apply(ev)
        self.events.append(ev)
        if len(self.table.commit_log) != self._commit_log_len:
            self._on_commits()
        return self._after_failover(target)

    def _consumed_now(self) -> float:
        return sum(w.x for w in self.writers)

    def _after_failover(self, what: str) -> bool:
        """Resynchronise the writers with the model's restored state; they restart after the delay.

        Returns True when the active process is one of the restarted writers (it cannot interrupt itself;
        the caller raises :class:`_Crash` instead)."""
        env = self.env
        delay = self.p["faults"]["restart_delay_s"]
        me = False
        for w in self.writers:
            sw = self.system.writers[w.i]
            if len(w.bounds) != sw.offset + 1 or w.x != w.bounds[-1] or what != "task":
                del w.bounds[sw.offset + 1:]
                w.x = w.bounds[-1]
                w.t = env.now
                w.down_until = env.now + delay
                w.barrier_at = None
                w.stall_t0 = None
                if w.proc is env.active_process:
                    me = True
                elif w.proc is not None and w.proc.is_alive:
                    w.proc.interrupt("crash")
        self._note_pending()
        self.snap_done.succeed()
        self.snap_done = env.event()
        self._signal()
        return me

    def _check_recovery(self) -> None:
        """A crash is recovered once the writers are back and every record they had consumed at the crash
        is committed (recommits of restored instants count)."""
        now = self.env.now
        for c in self.crash_log:
            if c["recovered_at"] is None and now >= c["back_at"] - 1e-9 and self.committed_real >= c["records"] - 1e-6:
                c["recovered_at"] = now

    def _recheck_at(self, t: float):
        yield self.env.timeout(max(0.0, t - self.env.now))
        self._check_recovery()

    def faults(self):
        env = self.env
        fa = self.p["faults"]
        times = sorted(fa["crash_at_s"])
        if fa["crash_every_s"] > 0:
            t = 0.0
            while True:
                t += self.rng.expovariate(1.0 / fa["crash_every_s"])
                if t >= self.duration:
                    break
                times.append(t)
            times.sort()
        if self.crash_plan is not None and self.crash_plan.at_s is not None:
            times.append(self.crash_plan.at_s)
            times.sort()
        for t in times:
            yield env.timeout(max(0.0, t - env.now))
            self.crash(fa["crash_target"])

    def sampler(self):
        """Every ``sample_s`` (at most 600 samples a run): the source backlog, records arrived and not yet
        consumed, summed over the writers (:meth:`_consumed_at`; every partition has the same arrivals)."""
        env = self.env
        dt = max(self.p["run"]["sample_s"], self.duration / 600.0)  # at most 600 backlog samples
        writers, consumed_at, backlog = self.writers, self._consumed_at, self.metrics.backlog
        arrived, P = self.source.arrived, self.P
        while True:
            yield env.timeout(dt)
            now = env.now
            total = 0.0
            for w in writers:
                total += consumed_at(w, now)
            backlog.append((now, P * arrived(now) - total))

    def _consumed_at(self, w: _Writer, now: float) -> float:
        """Records of writer ``w``'s source partition consumed at ``now``: a consuming writer's fluid has
        moved on since it was last accounted (at ``w.t``), never past a full buffer."""
        if w.wake is None or now <= w.t:
            return w.x
        x = consumed(w.src, w.x, w.t, now, self.capacity)
        limit = w.bounds[-1] + self.buffer
        return x if x < limit else limit

    def check(self, full: bool = False) -> None:
        """The model's invariants. After every commit: the ones about transient state (subsume, one
        instant per key, one pending instant in blocking mode, bounded state); the rest record rule breaks
        as observations that persist, so :func:`check_step` at the end sees them (and expanding every
        committed offset after each commit would dominate the run time)."""
        if self.first_violation is not None:
            return
        s = self.system
        verdicts = check_step(s) if full else (check_subsume(s), check_one_instant_per_key(s),
                                               check_blocking_one_pending(s), check_bounded_state(s))
        for v in verdicts:
            if not v.holds:
                self.first_violation = f"{v} (at {self.env.now:.3f} s, after model step {s.step_count})"
                return

    # -------------------------------------------------------------------------- run
    def run(self) -> StreamResult:
        env = self.env
        t_wall = time.perf_counter()
        for w in self.writers:
            w.proc = env.process(self.writer(w))
        env.process(self.checkpoints())
        env.process(self.faults())
        if self.keep_series:
            env.process(self.sampler())
        cpu0 = time.process_time()
        until = self.duration
        steps = run_counted(env, until)
        for w in self.writers:
            if w.down_until <= until:
                self._advance(w, until)
        self._note_pending()
        sim_wall = time.perf_counter() - t_wall
        self.loop_cpu_s = time.process_time() - cpu0
        # Drain (no faults, no time) and judge the run.
        self.check(full=True)
        drained = self.system.drain()
        self.events.extend(drained)
        verdicts = (check_drained(self.system) + check_step(self.system)  # after the drain
                    + check_timeline_times(self.table.timeline))  # I1/I2 on the (TrueTime) times
        bad = [v for v in verdicts if not v.holds]
        if self.first_violation is None and bad:
            self.first_violation = str(bad[0])
        lost, dup = self._exactly_once_counts()
        for c in self.crash_log:
            c["recovery_s"] = (c["recovered_at"] - c["t"]) if c["recovered_at"] is not None else float("nan")
        self.metrics.crashes = self.crash_log
        summary = self.metrics.summary(self.P)
        chunks = sum(len(w.bounds) - 1 for w in self.writers)
        summary.update({"mean_chunk_records": (sum(w.bounds[-1] for w in self.writers) / chunks) if chunks else 0.0,
                        "sim_events": steps, "model_events": len(self.events),
                        "wall_s": sim_wall, "lost_records": lost, "duplicated_records": dup})
        res = StreamResult(self.mode, self.seed, self.metrics, summary, self.first_violation or "ok",
                           sim_events=steps, model_events=len(self.events), wall_s=sim_wall,
                           loop_cpu_s=self.loop_cpu_s,
                           lost_records=lost, duplicated_records=dup, crash_log=self.crash_log,
                           request_timeouts=self.request_timeouts)
        if self.first_violation is not None or self.trace_dir is not None:
            res.trace_path = self.write_trace(self.trace_dir or self.failed_trace_dir or Path("runs") / "sim" / "failed")
            if self.first_violation is not None:
                res.replay = f"hoodie-lab replay {res.trace_path}"
        return res

    def _exactly_once_counts(self) -> tuple[float, float]:
        """Real records lost / duplicated after the drain, from the committed chunk ranges.

        Per split: the committed ``[start, end)`` chunk ranges, sorted, against ``[0, checkpointed offset)``;
        overlap or anything past the offset is duplicated, a gap is lost (interval arithmetic only, each
        chunk weighted by its real size)."""
        last = self.system.last_completed
        upto = [snap.offset for snap in last.tasks] if last is not None else [0] * self.P
        per: dict[int, list] = {}
        for s in self.table.committed_statuses():
            per.setdefault(s.task, []).append((s.start, s.end))
        lost = dup = 0.0
        for t in range(self.P):
            b = self.writers[t].bounds

            def size(lo, hi):
                hi = min(hi, len(b) - 1)
                return b[hi] - b[lo] if hi > lo else 0.0

            covered = 0
            for a, e in sorted(per.get(t, ())):
                if a < covered:
                    dup += size(a, min(e, covered))
                if e > covered:
                    lost += size(covered, min(a, upto[t])) if a > covered else 0.0
                    covered = e
            lost += size(covered, upto[t])
            dup += size(upto[t], covered)
        return round(lost), round(dup)

    def write_trace(self, out_dir: Path) -> Path:
        """The run's protocol events (drain included) in the model's trace format."""
        from lakeio.traces import write_trace

        name = f"{self.exp.name}-{self.mode}-{self.seed}"
        if self.crash_plan_label:
            name += "-" + self.crash_plan_label
        return write_trace(Path(out_dir) / f"{name}.jsonl", self.pcfg, self.events, self.seed & 0xFFFF,
                           "simulate", experiment=self.exp.name, mode=self.mode,
                           note="events of a SimPy run (model records are chunks of real records)")


_TRIGGER = TriggerCheckpoint()
_CLEAN = Clean()


def run_stream(exp, mode: str, seed: int, quick: bool = False, keep_series: bool = True,
               crash_plan: CrashPlan | None = None, trace_dir: Path | None = None,
               failed_trace_dir: Path | None = None) -> StreamResult:
    """Run one stream simulation; see :class:`StreamSim`. ``trace_dir``: write the trace of this run there;
    ``failed_trace_dir``: where the trace of a run that breaks an invariant goes (default runs/sim/failed)."""
    return StreamSim(exp, mode, seed, quick, keep_series, crash_plan, trace_dir,
                     failed_trace_dir=failed_trace_dir).run()

