"""Records as a fluid: source arrivals, writer consumption, latency distributions.

Nothing here is a protocol rule; it is the workload around the model. Records are never simulated one by
one: a source partition is a piecewise-linear cumulative arrival curve ``A(t)`` (steady rate plus periodic
bursts), a writer consumes it at up to its processing capacity, and flushes carry offset *ranges*.

* :class:`Source` — ``arrived(t)`` and its inverse ``time_of(x)`` (when record ``x`` arrived; used for
  end-to-end latency; ``times_of`` for many offsets at once), both exact for the steady+burst profile;
* :func:`consumed` — the exact fluid-queue consumption of a server of capacity ``c`` between two instants;
* :class:`StorageLatency` — one storage call's latency: log-normal with rare multiplicative spikes (drawn in
  seeded blocks).
"""

from __future__ import annotations

import math
import random

import numpy as np


class Source:
    """One source partition: ``rate`` records/s plus ``burst_rate`` during ``[kP, kP + B)``.

    Offsets start at 0 at time 0. Rates are per partition (the experiment's total divided by parallelism).
    """

    __slots__ = ("rate", "burst_rate", "period", "burst")

    def __init__(self, rate: float, burst_rate: float = 0.0, period: float = 0.0, burst: float = 0.0):
        self.rate = float(rate)
        has_burst = burst_rate > 0 and period > 0 and burst > 0
        self.burst_rate = float(burst_rate) if has_burst else 0.0
        self.period = float(period) if has_burst else 0.0
        self.burst = float(min(burst, period)) if has_burst else 0.0

    def rate_at(self, t: float) -> float:
        if self.burst_rate and (t % self.period) < self.burst:
            return self.rate + self.burst_rate
        return self.rate

    def arrived(self, t: float) -> float:
        """Records arrived in ``[0, t]``."""
        if t <= 0:
            return 0.0
        a = self.rate * t
        if self.burst_rate:
            k, r = divmod(t, self.period)
            a += self.burst_rate * (k * self.burst + min(r, self.burst))
        return a

    def time_of(self, x: float) -> float:
        """The time at which ``arrived`` reaches ``x`` (inverse of :meth:`arrived`)."""
        if x <= 0:
            return 0.0
        if not self.burst_rate:
            return x / self.rate
        per_period = self.rate * self.period + self.burst_rate * self.burst
        k = math.floor(x / per_period)
        rem = x - k * per_period
        t0 = k * self.period
        in_burst = (self.rate + self.burst_rate) * self.burst
        if rem <= in_burst:
            return t0 + rem / (self.rate + self.burst_rate)
        return t0 + self.burst + (rem - in_burst) / self.rate

    def times_of(self, x) -> np.ndarray:
        """:meth:`time_of` of every offset in ``x`` at once (NumPy; the same operations, so the same values)."""
        x = np.asarray(x, dtype=float)
        if not self.burst_rate:
            t = x / self.rate
        else:
            per_period = self.rate * self.period + self.burst_rate * self.burst
            k = np.floor(x / per_period)
            rem = x - k * per_period
            t0 = k * self.period
            in_burst = (self.rate + self.burst_rate) * self.burst
            t = np.where(rem <= in_burst, t0 + rem / (self.rate + self.burst_rate),
                         t0 + self.burst + (rem - in_burst) / self.rate)
        return np.where(x <= 0, 0.0, t)

    def breakpoints(self, t0: float, t1: float) -> list[float]:
        """Times in ``(t0, t1)`` where the rate changes."""
        if not self.burst_rate or t1 <= t0:
            return []
        out = []
        k = math.floor(t0 / self.period)
        while True:
            for b in (k * self.period, k * self.period + self.burst):
                if b >= t1:
                    return out
                if b > t0:
                    out.append(b)
            k += 1


def consumed(src: Source, x0: float, t0: float, t1: float, capacity: float) -> float:
    """Records consumed by ``t1`` by a server of ``capacity`` records/s that had consumed ``x0`` at ``t0``.

    Exact fluid queue: ``min(x0 + c (t1 - t0), min_s A(s) + c (t1 - s))`` over ``s`` in ``[t0, t1]``; the inner
    minimum of a piecewise-linear function is at ``t0``, ``t1`` or a breakpoint of ``A``.
    """
    if t1 <= t0:
        return x0
    if capacity == math.inf:
        return max(x0, src.arrived(t1))
    best = x0 + capacity * (t1 - t0)
    if not src.burst_rate:  # no breakpoints; A(t0) + c (t1 - t0) >= best since A(t0) >= x0
        a = src.rate * t1
        return a if a < best else best
    for s in (t0, t1, *src.breakpoints(t0, t1)):
        v = src.arrived(s) + capacity * (t1 - s)
        if v < best:
            best = v
    return max(best, x0)


def time_to_consume(src: Source, x0: float, t0: float, target: float, capacity: float) -> float:
    """The earliest ``t >= t0`` with ``consumed(src, x0, t0, t, capacity) >= target``."""
    if target <= x0:
        return t0
    if not src.burst_rate and capacity != math.inf:
        # steady source (the common case, inline): the later of "consumed at full speed" and "arrived";
        # the same first candidate and check as below
        lo = t0 + (target - x0) / capacity
        arrived_at = target / src.rate
        if arrived_at > lo:
            lo = arrived_at
        if lo > t0:
            c = x0 + capacity * (lo - t0)
            a = src.rate * lo
            if a < c:
                c = a
        else:
            c = x0
        if c >= target - 1e-6:
            return lo
    lo = max(t0 + (target - x0) / capacity if capacity != math.inf else t0, src.time_of(target))
    if consumed(src, x0, t0, lo, capacity) >= target - 1e-6:
        return lo
    hi = lo + max(1e-3, lo - t0)
    while consumed(src, x0, t0, hi, capacity) < target - 1e-6:
        hi += 2 * (hi - t0)
    for _ in range(60):  # bisection: only with bursts faster than the writer
        mid = (lo + hi) / 2
        if consumed(src, x0, t0, mid, capacity) >= target - 1e-6:
            hi = mid
        else:
            lo = mid
    return hi


class StorageLatency:
    """Latency (seconds) of one storage call: log-normal(median, sigma), times ``spike_factor`` with
    probability ``spike_probability``.

    Draws come in blocks of :attr:`BLOCK` from a NumPy generator seeded once from the caller's seeded
    ``random.Random`` (one 64-bit draw at construction), so a run stays reproducible from its seed; a block
    costs about as much as a few single draws from ``random``, and storage calls are on the simulation's hot
    path (every flush)."""

    __slots__ = ("gen", "mu", "sigma", "p", "factor", "median", "_block")

    BLOCK = 4096

    def __init__(self, rng: random.Random, median_ms: float, sigma: float, spike_probability: float,
                 spike_factor: float):
        self.gen = np.random.default_rng(rng.getrandbits(64))
        self.median = median_ms / 1000.0
        self.mu = math.log(self.median) if self.median > 0 else -math.inf
        self.sigma = sigma
        self.p = spike_probability
        self.factor = spike_factor
        self._block: list[float] = []

    def _draw_block(self) -> list[float]:
        n = self.BLOCK
        v = self.gen.lognormal(self.mu, self.sigma, n) if self.sigma > 0 else np.full(n, self.median)
        if self.p:
            v[self.gen.random(n) < self.p] *= self.factor
        return v.tolist()

    def sample(self) -> float:
        if self.median <= 0:
            return 0.0
        if not self._block:
            self._block = self._draw_block()
        return self._block.pop()

    def total(self, calls: int) -> float:
        return sum(self.sample() for _ in range(calls))
