"""Instant-time collisions between writers, with and without TrueTime.

N writers of one table each start a commit every ``T (1 ± jitter)`` seconds (uniform jitter, random phase)
for a simulated day and take the requested time from their own millisecond clock. Without TrueTime that is
0.x's ``createNewInstantTime`` (:class:`model.truetime.NaiveGenerator`: read the clock, no lock, no wait);
two writers that read the same clock tick produce the same instant time: a collision. With TrueTime every
time comes from :class:`model.truetime.SkewAdjustingTimeGenerator` (one lock per table, the skew wait) and
the count must be zero.

The no-TrueTime runs are vectorised (numpy) because a day of 20 writers committing every second is 1.7 M
times per run and the experiment wants hundreds of runs. :func:`naive_times` computes exactly what
``NaiveGenerator.generate`` returns for the same clocks and request times (one writer never reads the same
millisecond twice at these periods, so the per-process guard never fires); ``tests/test_sim_collisions.py``
checks the two agree. The TrueTime runs go through the model's generator call by call.

Expected collisions without TrueTime (for the plot): a pair of writers collides when one's request lands in
the same millisecond as one of the other's, which happens with probability ``1 ms / T`` per request, so a
pair expects ``(86 400 / T) * (1 / (1000 T)) = 86.4 / T^2`` collisions per day and N writers
``C(N, 2) * 86.4 / T^2`` (times ``days``).

Clock resolution (``collisions.resolutions_ms``, 1 or 1000): clocks read to the second write the legacy
14-digit instants (:class:`model.truetime.TimeGeneratorConfig` ``resolution_ms``). A tick is then ``R`` ms
wide, the collision probability per request ``R / T`` and the expectation ``C(N, 2) * 86.4 R / T^2``
(a first-order approximation, good while ``R`` is well below ``1000 T``). At second resolution a writer can
read the same second twice; the per-process guard then spins to the next second (``naive_times`` applies
it), and TrueTime needs a wait of ``skew + R`` (``model.truetime.guarantee_holds``): the default 200 ms wait
does not keep second-granular times unique.
"""

from __future__ import annotations

import heapq
import math
import random

import numpy as np

from model.invariants.times import check_times_strictly_increasing
from model.truetime import Clock, Lock, NaiveGenerator, SkewAdjustingTimeGenerator, TimeGeneratorConfig

DAY_MS = 86_400_000


def request_schedule(rng: np.random.Generator, writers: int, period_s: float, jitter: float,
                     duration_ms: float) -> list[np.ndarray]:
    """Per writer, the true times (float ms) of its requests: random phase, then ``T (1 ± jitter)`` gaps."""
    period_ms = period_s * 1000.0
    n = int(math.ceil(duration_ms / (period_ms * (1 - jitter)))) + 1
    out = []
    for _ in range(writers):
        gaps = period_ms * (1.0 + rng.uniform(-jitter, jitter, size=n))
        t = rng.uniform(0.0, period_ms) + np.concatenate(([0.0], np.cumsum(gaps[:-1])))
        out.append(t[t < duration_ms])
    return out


def naive_times(schedule: list[np.ndarray], offsets_ms: list[int], resolution_ms: int = 1) -> list[np.ndarray]:
    """Local readings ``floor(t) + offset`` (``Clock(offset).read(int(t))``) truncated to the resolution, per
    writer, after the per-process guard (``LAST_INSTANT_TIME``): a reading not after the writer's previous
    time becomes previous + one tick (``t'_i = max(t_i, t'_(i-1) + R)``), which is what
    :class:`model.truetime.NaiveGenerator` returns. At millisecond resolution and these periods the guard
    never fires."""
    out = []
    for t, off in zip(schedule, offsets_ms):
        r = ((np.floor(t).astype(np.int64) + off) // resolution_ms) * resolution_ms
        if resolution_ms > 1 and len(r) > 1:
            steps = np.arange(len(r), dtype=np.int64) * resolution_ms
            r = np.maximum.accumulate(r - steps) + steps
        out.append(r)
    return out


def count_collisions(times: list[np.ndarray]) -> int:
    """Times equal to another writer's time: sum over shared values of (writers sharing it - 1).

    A writer's own readings are increasing; they only repeat when its requests are less than 1 ms apart,
    and a repeat within one writer is not a collision between writers (``np.unique`` drops it then)."""
    uniq = [t if len(t) < 2 or np.all(np.diff(t) > 0) else np.unique(t) for t in times]
    allv = np.concatenate(uniq)
    allv.sort()
    return int(np.count_nonzero(allv[1:] == allv[:-1]))


def naive_run(seed: int, writers: int, period_s: float, jitter: float, days: float,
              clock_offset_ms: float, resolution_ms: int = 1) -> int:
    rng = np.random.default_rng(seed)
    sched = request_schedule(rng, writers, period_s, jitter, days * DAY_MS)
    off = int(clock_offset_ms)
    offsets = [int(x) for x in rng.integers(-off, off + 1, size=writers)] if off else [0] * writers
    return count_collisions(naive_times(sched, offsets, resolution_ms))


def naive_generator_times(schedule: list[np.ndarray], offsets_ms: list[int],
                          resolution_ms: int = 1) -> list[list[int]]:
    """The same readings through :class:`model.truetime.NaiveGenerator` (for cross-checking; slow)."""
    gen = NaiveGenerator(clocks={f"w{i}": Clock(offset_ms=o) for i, o in enumerate(offsets_ms)},
                         resolution_ms=resolution_ms)
    events = sorted((int(t), i) for i, ts in enumerate(schedule) for t in np.floor(ts).astype(np.int64))
    out: list[list[int]] = [[] for _ in schedule]
    for t, i in events:
        out[i].append(gen.generate(f"w{i}", t).local_ms)
    return out


def truetime_run(seed: int, writers: int, period_s: float, jitter: float, days: float, clock_offset_ms: float,
                 max_skew_ms: float, lock_ms: float, resolution_ms: int = 1) -> dict:
    """All writers of one table share one :class:`SkewAdjustingTimeGenerator`.

    A writer's next request is at its next scheduled time or when its previous call returned, whichever is
    later (a writer makes one call at a time); requests due after the run's end are not made. Returns
    collisions (must be 0), calls, and the lock wait / call duration in ms.
    """
    duration_ms = days * DAY_MS
    rng = np.random.default_rng(seed)
    sched = request_schedule(rng, writers, period_s, jitter, duration_ms)
    off = int(clock_offset_ms)
    offsets = [int(x) for x in rng.integers(-off, off + 1, size=writers)] if off else [0] * writers
    gen = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=int(max_skew_ms),
                                                         resolution_ms=resolution_ms),
                                     clocks={f"w{i}": Clock(offset_ms=o) for i, o in enumerate(offsets)},
                                     lock=Lock(latency_ms=int(lock_ms)))
    heap = [(int(s[0]), i, 0) for i, s in enumerate(sched) if len(s)]
    heapq.heapify(heap)
    times: list[str] = []
    waits = 0
    durations = 0
    while heap:
        t, i, k = heapq.heappop(heap)
        rec = gen.generate(f"w{i}", t)
        times.append(rec.time)
        waits += rec.lock_wait_ms
        durations += rec.duration_ms
        gen.history.clear()  # the generator keeps every record; a day of calls is too many to keep
        if k + 1 < len(sched[i]):
            nxt = max(int(sched[i][k + 1]), rec.released_at)
            if nxt < duration_ms:
                heapq.heappush(heap, (nxt, i, k + 1))
    n = len(times)
    verdict = check_times_strictly_increasing(times)  # I1, in generation order
    return {"collisions": n - len(set(times)), "calls": n, "invariant": "ok" if verdict.holds else str(verdict),
            "lock_wait_ms_mean": waits / n if n else 0.0, "call_ms_mean": durations / n if n else 0.0}


def expected_collisions(writers: int, period_s: float, days: float, resolution_ms: int = 1) -> float:
    return math.comb(writers, 2) * 86.4 * resolution_ms / period_s ** 2 * days


def run(params: dict, seed: int, quick: bool = False, progress=None) -> list[dict]:
    """Every (N, T) point: P(>= 1 collision per run), mean collisions, and the TrueTime counts."""
    c = params["collisions"]
    tt = params["truetime"]
    runs = c["quick_runs"] if quick else c["runs"]
    tt_runs = min(1, c["truetime_runs"]) if quick else c["truetime_runs"]
    tt_days = c["truetime_days"] / (4 if quick else 1)
    master = random.Random(seed)
    rows = []
    for res, n, period in ((r, n, p) for r in c.get("resolutions_ms", [1]) for n in c["writers"]
                           for p in c["periods_s"]):
        counts = [naive_run(master.getrandbits(63), n, period, c["jitter"], c["days"], c["clock_offset_ms"],
                            res) for _ in range(runs)]
        tt_res = [truetime_run(master.getrandbits(63), n, period, c["jitter"], tt_days,
                               c["clock_offset_ms"], tt["max_skew_ms"], tt["lock_acquire_ms"], res)
                  for _ in range(tt_runs)]
        rows.append({
            "writers": n, "period_s": period, "resolution_ms": res, "runs": runs, "days": c["days"],
            "p_collision_per_day": float(np.mean([x > 0 for x in counts])),
            "mean_collisions_per_day": float(np.mean(counts)) / c["days"],
            "expected_collisions_per_day": expected_collisions(n, period, 1.0, res),
            "truetime_runs": tt_runs, "truetime_days": tt_days,
            "truetime_collisions": int(sum(r["collisions"] for r in tt_res)),
            "truetime_calls": int(sum(r["calls"] for r in tt_res)),
            "truetime_lock_wait_ms_mean": float(np.mean([r["lock_wait_ms_mean"] for r in tt_res]))
            if tt_res else float("nan"),
            "truetime_invariant": next((r["invariant"] for r in tt_res if r["invariant"] != "ok"), "ok"),
        })
        if progress:
            progress()
    return rows
