"""Per-run metrics, collected in aggregate (ranges and intervals, never one entry per record).

* throughput over time: records processed by the writers per second of simulated time (fluid intervals are
  spread over the bins they cover), and records committed per second;
* writer blocked time per checkpoint interval (sum over writers and the per-writer distribution: "stalls");
* end-to-end latency (arrival at the source -> commit of the instant that holds it), p50/p99, from committed
  offset ranges weighted by record count (recorded as offsets; converted to arrival times when read);
* source backlog (records arrived but not yet consumed: backpressure) sampled per bin;
* commits per minute, pending instants over time, recovery time after each crash.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np


class Series:
    """A fixed-bin time series: ``add_interval`` spreads an amount uniformly over ``[t0, t1)``.

    Recording is O(1) (three list appends); :attr:`values` bins everything at once, vectorised (see
    :meth:`_bin`). Amounts past the last bin go to the last bin."""

    __slots__ = ("bin", "n", "_t0", "_t1", "_amount", "_values")

    def __init__(self, duration: float, bin_s: float):
        self.bin = bin_s
        self.n = int(math.ceil(duration / bin_s)) + 1
        self._t0: list[float] = []
        self._t1: list[float] = []
        self._amount: list[float] = []
        self._values = None

    def add_interval(self, t0: float, t1: float, amount: float) -> None:
        self._t0.append(t0)
        self._t1.append(t1 if t1 > t0 else t0)
        self._amount.append(amount)
        self._values = None

    def add_at(self, t: float, amount: float) -> None:
        self.add_interval(t, t, amount)

    @property
    def values(self) -> np.ndarray:
        """Amount per bin (bin ``k`` covers ``[k * bin, (k + 1) * bin)``)."""
        if self._values is None:
            self._values = self._bin()
        return self._values

    def _bin(self) -> np.ndarray:
        """Each interval's amount spread over the bins it covers: the whole amount when it starts and
        ends in one bin, else a first and a last partial bin and ``rate * bin`` for each bin between
        (through a difference array). Times before 0 count in the first bin, times at or after the last
        bin's left edge in the last bin."""
        n, b = self.n, self.bin
        out = np.zeros(n)
        if not self._amount:
            return out
        t0, t1, a = (np.asarray(x, dtype=float) for x in (self._t0, self._t1, self._amount))
        b0 = np.clip(np.floor(t0 / b), 0, n - 1).astype(np.int64)
        b1 = np.clip(np.floor(t1 / b), 0, n - 1).astype(np.int64)
        one = b0 == b1  # zero-length intervals included
        np.add.at(out, b0[one], a[one])
        s0, s1, sa, k0, k1 = t0[~one], t1[~one], a[~one], b0[~one], b1[~one]
        if len(sa):
            rate = sa / (s1 - s0)
            first = rate * ((k0 + 1) * b - s0)        # includes any part before 0 (k0 == 0)
            last = rate * (s1 - k1 * b)               # includes any part after the last edge
            np.add.at(out, k0, first)
            np.add.at(out, k1, last)
            between = k1 - k0 > 1                     # such intervals last >= one bin: rate <= amount / bin
            diff = np.zeros(n + 1)
            np.add.at(diff, k0[between] + 1, rate[between] * b)
            np.add.at(diff, k1[between], -rate[between] * b)
            out += np.cumsum(diff[:n])
        return out

    def per_second(self) -> np.ndarray:
        return self.values / self.bin


#: ``_new(Cls, fields)`` is the NamedTuple ``Cls(*fields)`` without its Python-level ``__new__`` (a run has one
#: stall per writer and checkpoint).
_new = tuple.__new__


class Stall(NamedTuple):
    writer: int
    checkpoint: int
    start: float
    end: float


@dataclass
class RunMetrics:
    duration: float
    bin_s: float
    processed: Series = None
    committed: Series = None
    backlog: list[tuple[float, float]] = field(default_factory=list)   # (t, records)
    pending: list[tuple[float, int]] = field(default_factory=list)      # (t, pending instants)
    stall_fields: list = field(default_factory=list, repr=False)  # writer, checkpoint, start, end, writer, ...
    commits: list[tuple[float, str, int]] = field(default_factory=list)  # (t, instant, records)
    latency_t: list[float] = field(default_factory=list)   # commit time of each committed offset range
    latency_x: list[float] = field(default_factory=list)   # its first and end offsets (flat: lo, hi, lo, hi, ...)
    #: offsets -> arrival times at the source, vectorised (:meth:`sim.fluid.Source.times_of`); every partition
    #: has the same arrival profile
    arrival_times: Callable | None = field(default=None, repr=False)
    crashes: list[dict] = field(default_factory=list)
    instant_requests: list[float] = field(default_factory=list)  # seconds from request to reply
    lock_waits: list[float] = field(default_factory=list)         # seconds waited for the TrueTime lock
    checkpoints: list[tuple[int, float, float | None]] = field(default_factory=list)  # (id, trigger, complete)

    def __post_init__(self):
        self.processed = Series(self.duration, self.bin_s)
        self.committed = Series(self.duration, self.bin_s)

    # ----------------------------------------------------------------- recording
    def stall(self, writer: int, ckp: int, start: float, end: float) -> None:
        if end > start:
            # (flat numbers, no object per stall: there is one per writer and checkpoint, they live as long
            # as the run, and numbers are not tracked by the cyclic garbage collector)
            self.stall_fields += (writer, ckp, start, end)

    @property
    def stalls(self) -> list[Stall]:
        """Every stall recorded, in order."""
        f = self.stall_fields
        return [_new(Stall, f[k:k + 4]) for k in range(0, len(f), 4)]

    def latency_offsets(self, commit_t: float, offsets: list[float]) -> None:
        """The records of each source offset range ``[lo, hi)`` in ``offsets`` (flat: ``lo, hi, lo, hi, ...``;
        empty ranges allowed) were committed at ``commit_t``. Their arrival times are computed when the latency
        is read: all at once, outside the simulation's loop."""
        self.latency_t += [commit_t] * (len(offsets) // 2)
        self.latency_x += offsets

    def latency_ranges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per committed range that holds records: the smallest and largest latency of its records (they
        arrived uniformly between the two offsets' arrival times) and its record count."""
        t = np.asarray(self.latency_t, dtype=float)
        x = np.asarray(self.latency_x, dtype=float).reshape(-1, 2)
        keep = x[:, 1] > x[:, 0]
        t, x = t[keep], x[keep]
        arrived = self.arrival_times(x) if len(t) else np.zeros((0, 2))
        return t - arrived[:, 1], t - arrived[:, 0], x[:, 1] - x[:, 0]

    # ----------------------------------------------------------------- summaries
    def latency_percentiles(self, qs=(50, 99)) -> dict[int, float]:
        lo, hi, w = self.latency_ranges()
        if not len(w):
            return {q: float("nan") for q in qs}
        # Each range is uniform on [lo, hi]: sample it at K evenly weighted points.
        k = 8
        frac = (np.arange(k) + 0.5) / k
        pts = (lo[:, None] + (hi - lo)[:, None] * frac[None, :]).ravel()
        ws = np.repeat(w / k, k)
        order = np.argsort(pts)
        pts, ws = pts[order], ws[order]
        cum = np.cumsum(ws) / ws.sum()
        return {q: float(pts[min(np.searchsorted(cum, q / 100.0), len(pts) - 1)]) for q in qs}

    def stall_per_checkpoint(self) -> dict[int, float]:
        """Blocked writer-seconds per checkpoint interval, averaged over writers (mean stall per writer)."""
        out: dict[int, float] = {}
        f = self.stall_fields
        for k in range(0, len(f), 4):
            out[f[k + 1]] = out.get(f[k + 1], 0.0) + (f[k + 3] - f[k + 2])
        return out

    def stall_durations(self) -> list[float]:
        return [s.end - s.start for s in self.stalls]

    def stall_per_writer_interval(self, writers: int) -> list[float]:
        """Blocked seconds of each writer in each checkpoint interval (zeros included)."""
        per: dict[tuple[int, int], float] = {}
        for s in self.stalls:
            per[(s.writer, s.checkpoint)] = per.get((s.writer, s.checkpoint), 0.0) + (s.end - s.start)
        intervals = {c for c, _, _ in self.checkpoints} | {k[1] for k in per}
        return [per.get((w, c), 0.0) for c in sorted(intervals) for w in range(writers)]

    def commits_per_minute(self) -> np.ndarray:
        n = int(math.ceil(self.duration / 60.0)) or 1
        out = np.zeros(n)
        for t, _, _ in self.commits:
            out[min(int(t / 60.0), n - 1)] += 1
        return out

    def summary(self, writers: int) -> dict[str, float]:
        p = self.latency_percentiles()
        stalls = self.stall_per_checkpoint()
        n_ckp = max(1, sum(1 for c in self.checkpoints if c[2] is not None))
        total_stall = sum(stalls.values())
        backlog = [b for _, b in self.backlog]
        pend = [n for _, n in self.pending]
        rec = [c["recovery_s"] for c in self.crashes if c.get("recovery_s") is not None]
        req = self.instant_requests
        return {
            "throughput_rps": float(self.processed.values.sum() / self.duration),
            "committed_rps": float(self.committed.values.sum() / self.duration),
            "records_committed": float(self.committed.values.sum()),
            "stall_per_checkpoint_s": total_stall / n_ckp / writers,
            "stall_max_s": max(self.stall_per_writer_interval(writers), default=0.0),
            "latency_p50_s": p[50],
            "latency_p99_s": p[99],
            "backlog_max_records": float(max(backlog)) if backlog else float("nan"),  # nan: not sampled
            "backlog_mean_records": float(np.mean(backlog)) if backlog else float("nan"),
            "commits_per_minute": len(self.commits) / (self.duration / 60.0),
            "commits": float(len(self.commits)),
            "checkpoints_completed": float(n_ckp if self.checkpoints else 0),
            "pending_instants_max": float(max(pend, default=0)),
            "pending_instants_mean": float(np.mean(pend)) if pend else 0.0,
            "crashes": float(len(self.crashes)),
            "recovery_s_max": max(rec, default=float("nan")) if self.crashes else float("nan"),
            "instant_request_p50_s": float(np.percentile(req, 50)) if req else float("nan"),
            "instant_request_p99_s": float(np.percentile(req, 99)) if req else float("nan"),
            "lock_wait_mean_s": float(np.mean(self.lock_waits)) if self.lock_waits else float("nan"),
        }
