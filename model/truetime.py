"""TrueTime: instant-time generation with skewed clocks, a lock and the skew wait.

Hudi facts encoded here (``hudi-semantics.md`` section 2 and 1.4, invariants I1/I2):

* ``SkewAdjustingTimeGenerator.generateTime``: lock; ``ts = currentTimeMillis()``;
  ``sleep(maxExpectedClockSkewMs)``; unlock; return ``ts`` (the reading taken *before* the wait).
* ``TimeGenerator.consumeTime``: lock; ``f(generateTime(skipLocking=true))``; unlock -- the
  completion time is generated and the completed file ``t_c.<action>`` is created in one lock
  section (``ActiveTimelineV2.createCompleteFileInMetaPath``, RFC-66 "Assumption On Locks").
* ``HoodieInstantTimeGenerator.createNewInstantTime``: a per-JVM ``LAST_INSTANT_TIME`` loop --
  generate, format, and repeat until the formatted time is ``>`` the last one this JVM produced.
  (Inferred: completion times from ``consumeTime`` are formatted directly and do not pass through
  that loop, so :meth:`TimeGenerator.consume_time` does not apply the guard.)
* ``HoodieTimeGeneratorConfig``: ``hoodie.time.generator.max_expected_clock_skew_ms`` default 200,
  inferred as 1 when the lock provider is ``InProcessLockProvider`` (also the default provider).
* 0.x (no TrueTime): ``createNewInstantTime`` = the same per-JVM loop over ``currentTimeMillis``
  without lock or wait -- :class:`NaiveGenerator`.
* Clock resolution (``hudi-semantics.md`` 1.4): instants are ``yyyyMMddHHmmssSSS``; tables and clocks
  of the legacy second granularity write ``yyyyMMddHHmmss`` (14 digits), which
  ``HoodieInstantTimeGenerator.fixInstantTimeCompatibility`` parses by appending ``999``.
  ``TimeGeneratorConfig.resolution_ms`` (1 or 1000) truncates every clock reading to that
  resolution; at 1000 a generated time is written with 14 digits (``GeneratedTime.written``) and
  compared in its parsed 17-digit form (``GeneratedTime.time``, ending in ``999``).

Model abstraction (what the rest of the model may assume)
---------------------------------------------------------
When the generator lock is real (one lock shared by every process) and the skew wait is at least
the actual clock skew (plus one millisecond of lock hand-off, see below), requested and completion
times come from **one global, strictly increasing clock**: the generations are totally ordered by
lock acquisition and each generated time is greater than every earlier one. The completion time
and the creation of the completed file are atomic with respect to every other generation. The
timeline and protocol models therefore take times from a generator and never reason about clocks.
``properties/test_truetime_props.py`` checks this for arbitrary clock schedules and interleavings,
and finds counterexamples when the wait is too small or the lock is absent.

Why "+ one millisecond": let ``e_P(t) = read_P(t) - t`` be the error of process P's clock and the
*actual skew* ``S = max e - min e`` over every process and every true time of the run. A holds the
lock from its read at ``ta`` to ``ta + W``; B reads at ``tb >= ta + W + gap`` where ``gap`` is the
lock hand-off (acquisition latency). Then ``read_B(tb) - read_A(ta) >= W + gap - S``. Strictly
increasing therefore needs ``W + gap > S``: ``W >= S`` with at least 1 ms of hand-off, or
``W > S`` with instantaneous hand-off. (Real clocks are read with millisecond truncation, so the
same off-by-one exists in Hudi: a wait equal to the skew can produce equal times across JVMs.)
With a clock read to a resolution of ``R`` ms (truncated), two readings ``R - 1`` ms apart can
still be equal, so the condition becomes ``W + gap >= S + R`` (``R = 1``: the one above). A
second-resolution clock therefore needs a wait of about a second: the default 200 ms wait does not
make second-granular times unique. :func:`guarantee_holds` states the condition.

Time units and epoch
--------------------
All times are integers in milliseconds. "True" (simulated) time starts at 0; a clock reading is a
local offset from the same origin, and a formatted instant time is
``format_millis(epoch_ms + local_reading)`` with ``epoch_ms`` = 2025-01-01T00:00:00Z by default.
There is no wall clock anywhere; randomness only through an explicit ``random.Random``.

Stable API (used by ``sim/`` and ``model/protocol``)
----------------------------------------------------
``Clock(offset_ms=0, drift_ppm=0, jumps=())`` -- ``read(true_now) -> int`` local ms.

``TimeGeneratorConfig(max_expected_skew_ms=200, use_lock=True, guard=True)``;
``TimeGeneratorConfig.in_process()`` has skew 1 (``InProcessLockProvider``).

``Lock(latency_ms=0, latency_max_ms=None, rng=None)`` -- acquisition latency fixed, or drawn
uniformly from ``[latency_ms, latency_max_ms]`` with ``rng`` (a ``random.Random``); ``holder``,
``queue`` (FIFO).

Generators: ``SkewAdjustingTimeGenerator(config=None, clocks=None, lock=None, epoch_ms=...)`` and
``NaiveGenerator(clocks=None, epoch_ms=...)`` (no lock, no wait, per-process guard as in 0.x).
Both are ``TimeGenerator``; processes are named by strings, and a process without a configured
clock gets a perfect one (``set_clock(process, clock)`` to change it).

Sequential callers::

    rec = gen.generate("writer-1", now)            # -> GeneratedTime
    rec.time          # 17-digit instant time
    rec.released_at   # true ms when the call returns; charge rec.released_at - now to sim time
    rec.lock_wait_ms, rec.waited_ms, rec.requested_at, rec.acquired_at, rec.read_at

    rec, result = gen.consume_time("writer-1", now, lambda t: timeline.complete(t0, action, t),
                                   hold_ms=5)   # the action runs while the lock is held

Calls may come with any ``now``; the lock is FIFO in call order and is busy until the previous
holder's ``released_at`` (so a call made at ``now`` earlier than that waits: lock contention).

Interleaving callers (explicit steps; each takes the true time at which it happens)::

    gen.request(p, now, kind="generate"|"consume", hold_ms=0)
    gen.acquire(p, now)     # p heads the FIFO queue, lock free, now >= gen.earliest(p)
    gen.read(p, now)        # reads p's clock -> local ms
    gen.finish_wait(p, now) # now >= read_at + wait
    gen.release(p, now)     # -> GeneratedTime, or None when the per-process guard rejects the
                            #    time: p is then re-queued (Hudi's loop) at this ``now``
    gen.next_step(p) -> (step_name, earliest_true_time or None if blocked)
    gen.step(p, now)        # performs next_step(p)

A step out of order raises ``model.errors.RuleViolation`` with rule ``"TT.step-order"``.
``gen.history`` lists every ``GeneratedTime`` in completion order (``keep_history=False`` keeps
none, for long simulations; ``gen.generated`` counts them); ``gen.copy()`` clones.
"""

from __future__ import annotations

import copy as _copy
import random
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Iterable

from .errors import RuleViolation
from .instant import LEGACY_TIME_LEN, format_millis, normalize_time, to_millis

#: True time 0 is this epoch instant when formatting (2025-01-01T00:00:00.000Z).
DEFAULT_EPOCH_MS = to_millis("20250101000000000")

#: ``hoodie.time.generator.max_expected_clock_skew_ms`` default.
DEFAULT_MAX_EXPECTED_SKEW_MS = 200
#: Inferred skew when the lock provider is ``InProcessLockProvider``.
IN_PROCESS_SKEW_MS = 1

STEP_RULE = "TT.step-order"

#: Clock resolutions: milliseconds (17-digit instants) and seconds (14-digit legacy instants).
RESOLUTIONS_MS = (1, 1000)


def truncate(local_ms: int, resolution_ms: int) -> int:
    """A clock reading as a clock of ``resolution_ms`` shows it (truncated, as ``currentTimeMillis``
    formatted to ``yyyyMMddHHmmss`` drops the milliseconds)."""
    return (local_ms // resolution_ms) * resolution_ms


def format_time(epoch_ms: int, local_ms: int, resolution_ms: int = 1) -> tuple[str, str]:
    """``(parsed, written)``: the 17-digit time as Hudi parses it and the string as written.

    Millisecond resolution: both are ``yyyyMMddHHmmssSSS``. Second resolution: written is the
    14-digit ``yyyyMMddHHmmss``; parsed appends ``999`` (``fixInstantTimeCompatibility``).
    """
    full = format_millis(epoch_ms + truncate(local_ms, resolution_ms))
    if resolution_ms == 1:
        return full, full
    written = full[:LEGACY_TIME_LEN]
    return normalize_time(written), written


# ---------------------------------------------------------------------------------------- clocks
@dataclass(frozen=True)
class Clock:
    """A process's local clock as a function of true time (all integers, milliseconds).

    ``read(t) = t + offset_ms + floor((t * drift_ppm) / 1e6) + sum(delta for (at, delta) in jumps
    if at <= t)``. Drift is measured from true time 0. Jumps may be negative (an NTP step back).
    Models ``System.currentTimeMillis`` of one JVM.
    """

    offset_ms: int = 0
    drift_ppm: int = 0
    jumps: tuple[tuple[int, int], ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "jumps", tuple(sorted((int(a), int(d)) for a, d in self.jumps)))

    def read(self, true_now: int) -> int:
        drift = (true_now * self.drift_ppm) // 1_000_000
        jumped = sum(d for at, d in self.jumps if at <= true_now)
        return true_now + self.offset_ms + drift + jumped

    def error(self, true_now: int) -> int:
        """``read(t) - t``: how far this clock is ahead (positive) or behind (negative)."""
        return self.read(true_now) - true_now

    def error_range(self, start: int, end: int) -> tuple[int, int]:
        """Exact (min, max) of :meth:`error` over true times ``[start, end]``.

        The error is monotone between jumps (drift is linear), so checking the interval ends
        and both sides of every jump inside it is exact.
        """
        points = {start, end}
        for at, _ in self.jumps:
            if start <= at <= end:
                points.add(at)
                if at - 1 >= start:
                    points.add(at - 1)
        errs = [self.error(t) for t in points]
        return min(errs), max(errs)


PERFECT_CLOCK = Clock()


def actual_skew(clocks: Iterable[Clock], start: int, end: int) -> int:
    """The actual maximum skew ``S = max e - min e`` over the clocks and true times ``[start, end]``.

    This is the quantity the skew wait must cover (see the module docstring); with one clock it is
    that clock's own error variation (a backward jump of J gives S >= J).
    """
    lo, hi = None, None
    for c in clocks:
        a, b = c.error_range(start, end)
        lo = a if lo is None else min(lo, a)
        hi = b if hi is None else max(hi, b)
    return 0 if lo is None else hi - lo


def guarantee_holds(config: "TimeGeneratorConfig", skew_ms: int, min_handoff_ms: int) -> bool:
    """Whether the model guarantees strictly increasing times across processes.

    Needs the lock and ``wait + min_handoff >= skew + resolution`` (module docstring; at millisecond
    resolution: ``wait + min_handoff > skew``).
    """
    return config.use_lock and config.max_expected_skew_ms + min_handoff_ms >= skew_ms + config.resolution_ms


# ------------------------------------------------------------------------------------------ lock
@dataclass
class Lock:
    """The generator lock (``TimeGeneratorBase`` + a ``LockProvider``): one holder, FIFO waiters.

    Acquisition latency (the provider's round trip) is ``latency_ms``, or uniform in
    ``[latency_ms, latency_max_ms]`` drawn from ``rng`` once per acquisition attempt at request
    time. The latency is counted from when the process is at the head of the queue and the lock
    is free (``max(request time, last release)``).
    """

    latency_ms: int = 0
    latency_max_ms: int | None = None
    rng: random.Random | None = None
    holder: str | None = None
    queue: deque = field(default_factory=deque)
    last_released_at: int = 0

    def __post_init__(self):
        if self.latency_ms < 0:
            raise ValueError("lock latency must be >= 0")
        if self.latency_max_ms is not None:
            if self.latency_max_ms < self.latency_ms:
                raise ValueError("latency_max_ms must be >= latency_ms")
            if self.rng is None:
                raise ValueError("a drawn lock latency needs an explicit random.Random (rng)")

    @property
    def min_latency_ms(self) -> int:
        return self.latency_ms

    def draw_latency(self) -> int:
        if self.latency_max_ms is None:
            return self.latency_ms
        return self.rng.randint(self.latency_ms, self.latency_max_ms)


# ---------------------------------------------------------------------------------------- config
@dataclass(frozen=True)
class TimeGeneratorConfig:
    """``HoodieTimeGeneratorConfig`` as the model needs it.

    ``max_expected_skew_ms`` is the wait after reading the clock; ``use_lock`` false models
    ``skipLocking`` / no shared lock provider; ``guard`` is the per-JVM ``LAST_INSTANT_TIME`` loop;
    ``resolution_ms`` is the clock's resolution: 1 (``yyyyMMddHHmmssSSS``) or 1000 (legacy
    ``yyyyMMddHHmmss``, 14 digits, parsed with ``999`` appended).
    """

    max_expected_skew_ms: int = DEFAULT_MAX_EXPECTED_SKEW_MS
    use_lock: bool = True
    guard: bool = True
    resolution_ms: int = 1

    def __post_init__(self):
        if self.max_expected_skew_ms < 0:
            raise ValueError("max_expected_skew_ms must be >= 0")
        if self.resolution_ms not in RESOLUTIONS_MS:
            raise ValueError(f"resolution_ms must be one of {RESOLUTIONS_MS} (millisecond or legacy second "
                             f"instants), not {self.resolution_ms!r}")

    @staticmethod
    def in_process() -> "TimeGeneratorConfig":
        """``InProcessLockProvider``: the inferred skew bound is 1 ms."""
        return TimeGeneratorConfig(max_expected_skew_ms=IN_PROCESS_SKEW_MS)


# --------------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class GeneratedTime:
    """One completed generation (``generateTime``/``createNewInstantTime`` or ``consumeTime``).

    Times are true ms. With guard retries, ``requested_at`` is the first request and
    ``acquired_at``/``read_at``/``released_at`` belong to the accepted attempt; ``lock_wait_ms`` and
    ``waited_ms`` sum over all attempts. ``seq`` is the global completion order.
    """

    process: str
    kind: str  # "generate" | "consume"
    time: str
    local_ms: int
    requested_at: int
    acquired_at: int
    read_at: int
    released_at: int
    lock_wait_ms: int
    waited_ms: int
    attempts: int
    seq: int
    locked: bool
    resolution_ms: int = 1

    @property
    def duration_ms(self) -> int:
        return self.released_at - self.requested_at

    @property
    def written(self) -> str:
        """The time as written in a file name: 17 digits, or 14 at second resolution (``time`` is the
        parsed 17-digit form either way, so comparisons and invariants use ``time``)."""
        return self.time[:LEGACY_TIME_LEN] if self.resolution_ms == 1000 else self.time


class Phase(str, Enum):
    QUEUED = "acquire"      # next step: acquire
    HOLDING = "read"        # next step: read
    READ = "finish_wait"    # next step: finish_wait
    WAITED = "release"      # next step: release


@dataclass
class _Pending:
    process: str
    kind: str
    hold_ms: int
    first_requested_at: int
    requested_at: int
    latency: int
    phase: Phase = Phase.QUEUED
    acquired_at: int | None = None
    read_at: int | None = None
    local_ms: int | None = None
    waited_at: int | None = None
    lock_wait_ms: int = 0
    waited_ms: int = 0
    attempts: int = 1


# ------------------------------------------------------------------------------------- generator
class TimeGenerator:
    """A TrueTime generator over named processes: clocks, an optional shared lock, a skew wait.

    See the module docstring for the API. Subclasses only choose the configuration.
    """

    def __init__(self, config: TimeGeneratorConfig | None = None, clocks: dict[str, Clock] | None = None,
                 lock: Lock | None = None, epoch_ms: int = DEFAULT_EPOCH_MS, keep_history: bool = True):
        self.config = config or TimeGeneratorConfig()
        self.keep_history = keep_history  # False: long simulations keep no records (seq still counts)
        self.generated = 0
        self.clocks: dict[str, Clock] = dict(clocks or {})
        self.lock = lock if lock is not None else Lock()
        self.epoch_ms = epoch_ms
        self.last_time: dict[str, str] = {}  # per-process LAST_INSTANT_TIME
        self.pending: dict[str, _Pending] = {}
        self.history: list[GeneratedTime] = []

    # ---------------------------------------------------------------- set-up and helpers
    @property
    def wait_ms(self) -> int:
        return self.config.max_expected_skew_ms

    def set_clock(self, process: str, clock: Clock) -> None:
        self.clocks[process] = clock

    def clock(self, process: str) -> Clock:
        return self.clocks.get(process, PERFECT_CLOCK)

    @property
    def resolution_ms(self) -> int:
        return self.config.resolution_ms

    def format(self, local_ms: int) -> str:
        """``HoodieInstantTimeGenerator.formatDate`` in UTC: epoch + local reading, as parsed (17 digits;
        at second resolution the 14-digit written form with ``999`` appended)."""
        return format_time(self.epoch_ms, local_ms, self.config.resolution_ms)[0]

    def copy(self) -> "TimeGenerator":
        return _copy.deepcopy(self)

    def _bad(self, process: str, msg: str) -> RuleViolation:
        return RuleViolation(STEP_RULE, f"{process}: {msg}")

    def _get(self, process: str, phase: Phase, step: str) -> _Pending:
        p = self.pending.get(process)
        if p is None:
            raise self._bad(process, f"{step} without a pending request")
        if p.phase is not phase:
            raise self._bad(process, f"{step} out of order: next step is {p.phase.value}")
        return p

    # ------------------------------------------------------------------------- steps
    def request(self, process: str, now: int, kind: str = "generate", hold_ms: int = 0) -> None:
        """Start a generation: join the lock's FIFO queue (or, without a lock, be ready at once)."""
        if kind not in ("generate", "consume"):
            raise ValueError(f"kind must be 'generate' or 'consume', not {kind!r}")
        if hold_ms < 0:
            raise ValueError("hold_ms must be >= 0")
        if process in self.pending:
            raise self._bad(process, "already has a generation in progress (one per process)")
        latency = self.lock.draw_latency() if self.config.use_lock else 0
        self.pending[process] = _Pending(process, kind, hold_ms, now, now, latency)
        if self.config.use_lock:
            self.lock.queue.append(process)

    def earliest(self, process: str) -> int | None:
        """Earliest true time of ``process``'s next step, or None while it waits behind others."""
        p = self.pending.get(process)
        return None if p is None else self._earliest(p)

    def _earliest(self, p: _Pending) -> int | None:
        """:meth:`earliest` of a pending generation."""
        phase = p.phase
        if phase is Phase.QUEUED:
            if not self.config.use_lock:
                return p.requested_at
            lock = self.lock
            if lock.holder is not None or not lock.queue or lock.queue[0] != p.process:
                return None
            return max(p.requested_at, lock.last_released_at) + p.latency
        if phase is Phase.HOLDING:
            return p.acquired_at
        if phase is Phase.READ:
            return p.read_at + self.wait_ms
        return p.waited_at + p.hold_ms

    def next_step(self, process: str) -> tuple[str, int | None] | None:
        """``(step name, earliest time or None if blocked)``, or None with nothing pending."""
        p = self.pending.get(process)
        if p is None:
            return None
        return p.phase.value, self.earliest(process)

    def _due(self, p: _Pending, step: str) -> int:
        """The earliest time of ``p``'s next step (``step``); refused while it is blocked."""
        e = self._earliest(p)
        if e is None:
            raise self._bad(p.process, f"{step} is blocked (the lock is held or others are ahead in the queue)")
        return e

    def _check_time(self, p: _Pending, step: str, now: int) -> None:
        e = self._due(p, step)
        if now < e:
            raise self._bad(p.process, f"{step} at {now} is before its earliest time {e}")

    # Each step: its checks (a pending request in the right phase, ``now`` not before the step's
    # earliest time), then its effect (``_<step>``, which :meth:`_run` calls directly).
    def acquire(self, process: str, now: int) -> None:
        p = self._get(process, Phase.QUEUED, "acquire")
        self._check_time(p, "acquire", now)
        self._acquire(p, now)

    def _acquire(self, p: _Pending, now: int) -> None:
        if self.config.use_lock:
            self.lock.queue.popleft()
            self.lock.holder = p.process
        p.lock_wait_ms += now - p.requested_at
        p.acquired_at = now
        p.phase = Phase.HOLDING

    def read(self, process: str, now: int) -> int:
        """``System.currentTimeMillis()`` on the process's clock, taken under the lock."""
        p = self._get(process, Phase.HOLDING, "read")
        self._check_time(p, "read", now)
        return self._read(p, now)

    def _read(self, p: _Pending, now: int) -> int:
        p.read_at = now
        p.local_ms = truncate(self.clock(p.process).read(now), self.config.resolution_ms)
        p.phase = Phase.READ
        return p.local_ms

    def finish_wait(self, process: str, now: int) -> None:
        """End of ``Thread.sleep(maxExpectedClockSkewMs)`` (may overrun: ``now`` may be later)."""
        p = self._get(process, Phase.READ, "finish_wait")
        self._check_time(p, "finish_wait", now)
        self._finish_wait(p, now)

    def _finish_wait(self, p: _Pending, now: int) -> None:
        p.waited_ms += now - p.read_at
        p.waited_at = now
        p.phase = Phase.WAITED

    def release(self, process: str, now: int) -> GeneratedTime | None:
        """Unlock; apply the per-process guard for ``generate``.

        Returns the record, or None when the guard rejected the time; then the process has been
        re-queued at ``now`` for another attempt (the ``LAST_INSTANT_TIME`` loop).
        """
        p = self._get(process, Phase.WAITED, "release")
        self._check_time(p, "release", now)
        return self._release(p, now)

    def _release(self, p: _Pending, now: int) -> GeneratedTime | None:
        process = p.process
        if self.config.use_lock:
            if self.lock.holder != process:
                raise self._bad(process, f"release but the lock is held by {self.lock.holder}")
            self.lock.holder = None
            self.lock.last_released_at = now
        t = self.format(p.local_ms)
        if p.kind == "generate" and self.config.guard:
            last = self.last_time.get(process)
            if last is not None and t <= last:
                # Hudi loops: generate again. A retry re-reads strictly later (a busy loop advances
                # currentTimeMillis), so the next request is at least 1 ms after this read; at second
                # resolution the loop spins until the reading ticks: retry when the (undrifted) local
                # clock reaches its next full second.
                raw = self.clock(process).read(p.read_at)
                retry_at = max(now, p.read_at + self.config.resolution_ms - raw % self.config.resolution_ms)
                p.requested_at = retry_at
                p.latency = self.lock.draw_latency() if self.config.use_lock else 0
                p.phase = Phase.QUEUED
                p.attempts += 1
                p.acquired_at = p.read_at = p.local_ms = p.waited_at = None
                if self.config.use_lock:
                    self.lock.queue.append(process)
                return None
            self.last_time[process] = t
        rec = GeneratedTime(process=process, kind=p.kind, time=t, local_ms=p.local_ms,
                            requested_at=p.first_requested_at, acquired_at=p.acquired_at,
                            read_at=p.read_at, released_at=now, lock_wait_ms=p.lock_wait_ms,
                            waited_ms=p.waited_ms, attempts=p.attempts, seq=self.generated,
                            locked=self.config.use_lock, resolution_ms=self.config.resolution_ms)
        del self.pending[process]
        self.generated += 1
        if self.keep_history:
            self.history.append(rec)
        return rec

    def step(self, process: str, now: int) -> Any:
        """Perform ``process``'s next step at ``now``; returns what that step returns."""
        ns = self.next_step(process)
        if ns is None:
            raise self._bad(process, "no pending request")
        return getattr(self, ns[0])(process, now)

    # -------------------------------------------------------------- sequential use
    def _check_sequential(self, process: str) -> None:
        """The guard of a sequential call (:meth:`generate`, :meth:`consume_time`), checked before any effect
        so that a refused call changes nothing (no request, no latency drawn, no other generation touched).

        Refused when another process is mid-generation (the caller must use the steps), when ``process``
        itself already is (one generation per process, as :meth:`request` refuses), or when a fresh request
        would be blocked: the lock held, or the queue not empty, with no generation of ours in progress.
        """
        others = [q for q in self.pending if q != process]
        if others:
            raise self._bad(process, f"sequential call while {others} are mid-generation; use the steps")
        if process in self.pending:
            raise self._bad(process, "already has a generation in progress (one per process)")
        if self.config.use_lock and (self.lock.holder is not None or self.lock.queue):
            raise self._bad(process, "acquire is blocked (the lock is held or others are ahead in the queue)")

    def _run(self, process: str, now: int, kind: str, hold_ms: int,
             action: Callable[[str], Any] | None) -> tuple[GeneratedTime, Any]:
        """Run one generation to completion, each step at its earliest time.

        Only valid when no other generation is in progress (sequential callers, :meth:`_check_sequential`);
        the lock's ``last_released_at`` carries contention between calls.
        """
        self._check_sequential(process)
        self.request(process, now, kind, hold_ms)
        return self._complete(self.pending[process], kind, action)

    def _complete(self, p: _Pending, kind: str, action: Callable[[str], Any] | None) -> tuple[GeneratedTime, Any]:
        """The steps' effects of a sequential call's own request, in order, each at its earliest time.

        The guard held, so the lock is free and ``p`` heads its queue: the order, the time checks and the
        blocking checks of the public steps hold by construction (a guard retry re-queues ``p`` alone). Only
        the caller's ``action`` can raise.
        """
        result = None
        while True:
            self._acquire(p, self._due(p, "acquire"))
            self._read(p, self._due(p, "read"))
            self._finish_wait(p, self._due(p, "finish_wait"))
            if kind == "consume" and action is not None:
                # The caller's action (e.g. creating t_c.<action>) runs while the lock is held.
                result = action(self.format(p.local_ms))
            rec = self._release(p, self._due(p, "release"))
            if rec is not None:
                return rec, result

    def generate(self, process: str, now: int) -> GeneratedTime:
        """``createNewInstantTime``: a requested (or any new instant) time for ``process`` at ``now``."""
        return self._run(process, now, "generate", 0, None)[0]

    def consume_time(self, process: str, now: int, action: Callable[[str], Any] | None = None,
                     hold_ms: int = 0) -> tuple[GeneratedTime, Any]:
        """``consumeTime``: generate a completion time and run ``action(time)`` in the same lock section.

        ``hold_ms`` is how long the action keeps the lock (e.g. the completed-file write). Returns
        ``(record, action result)``. A refused call (:meth:`_check_sequential`, :meth:`request`'s argument
        checks) changes nothing. If the action raises, this call's own generation is dropped, the lock is
        released and the error propagates (Java's ``finally { unlock() }``); no record is produced.
        """
        self._check_sequential(process)
        self.request(process, now, "consume", hold_ms)
        p = self.pending[process]
        try:
            return self._complete(p, "consume", action)
        except Exception:
            # The action runs after the wait, with the lock held (``_complete``): the section ends at the
            # wait's end plus the hold.
            del self.pending[process]
            if self.config.use_lock:
                self.lock.holder = None
                self.lock.last_released_at = p.waited_at + p.hold_ms
            raise

    def times(self) -> list[str]:
        """Every generated time in completion order."""
        return [r.time for r in self.history]


class SkewAdjustingTimeGenerator(TimeGenerator):
    """``SkewAdjustingTimeGenerator`` (``WAIT_TO_ADJUST_SKEW``): lock, read, wait the skew bound, unlock."""


class NaiveGenerator(TimeGenerator):
    """0.x ``createNewInstantTime``: read the clock, no lock, no wait; the per-JVM guard only."""

    def __init__(self, clocks: dict[str, Clock] | None = None, epoch_ms: int = DEFAULT_EPOCH_MS,
                 guard: bool = True, keep_history: bool = True, resolution_ms: int = 1):
        super().__init__(TimeGeneratorConfig(max_expected_skew_ms=0, use_lock=False, guard=guard,
                                             resolution_ms=resolution_ms),
                         clocks=clocks, lock=Lock(), epoch_ms=epoch_ms, keep_history=keep_history)


def generator_for(config: TimeGeneratorConfig, clocks: dict[str, Clock] | None = None,
                  lock: Lock | None = None, epoch_ms: int = DEFAULT_EPOCH_MS,
                  keep_history: bool = True) -> TimeGenerator:
    """A generator for a config: skew-adjusting with a lock, or the generic one without."""
    cls = SkewAdjustingTimeGenerator if config.use_lock else TimeGenerator
    return cls(config, clocks=clocks, lock=lock, epoch_ms=epoch_ms, keep_history=keep_history)


__all__ = [
    "Clock", "PERFECT_CLOCK", "Lock", "TimeGeneratorConfig", "GeneratedTime", "TimeGenerator",
    "SkewAdjustingTimeGenerator", "NaiveGenerator", "generator_for", "actual_skew",
    "guarantee_holds", "DEFAULT_EPOCH_MS", "DEFAULT_MAX_EXPECTED_SKEW_MS", "IN_PROCESS_SKEW_MS",
    "STEP_RULE", "Phase", "RESOLUTIONS_MS", "truncate", "format_time",
]
