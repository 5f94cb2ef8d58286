"""Instant-request latency and TrueTime lock contention as writers and tables grow.

``tables`` tables, each with ``writers`` writers (writer jobs or coordinators) that start a commit every
``request_every_s`` (exponential gaps): a requested time (``generate``), a commit whose latency is drawn from
the storage model, then a completion time (``consume_time``, the completed-file write held under the lock).
Each table has one :class:`model.truetime.SkewAdjustingTimeGenerator` (one lock per table, the skew wait,
the per-process guard). Every lock acquisition and release is a round trip to one lock service shared by
all tables (a SimPy resource with ``lock_service_ms`` per call), which is how more tables slow everyone
down. The model decides the lock order, the waits and the times; SimPy only carries simulated time. Each
table's times, in generation order, are checked with the model's I1 invariant.

Clock resolution (``truetime_study.resolutions_ms``, 1 or 1000, default ``[1]``): every point runs once per
resolution with :class:`model.truetime.TimeGeneratorConfig` ``resolution_ms``; at 1000 the clocks read to the
second (legacy 14-digit instants) and a skew wait below ``skew + 1000 ms`` (``model.truetime.guarantee_holds``)
lets two writers of a table take the same second: ``duplicate_times`` counts them and the I1 check fails.
"""

from __future__ import annotations

import random

import numpy as np
import simpy

from model.invariants.times import check_times_strictly_increasing
from model.truetime import Clock, Lock, SkewAdjustingTimeGenerator, TimeGeneratorConfig

from .fluid import StorageLatency


def run_point(params: dict, writers: int, tables: int, skew_ms: float, seed: int, duration_s: float,
              resolution_ms: int = 1) -> dict:
    st, tt, ss = params["truetime_study"], params["truetime"], params["storage"]
    rng = random.Random(seed)
    env = simpy.Environment()
    service = simpy.Resource(env, capacity=1)
    storage = StorageLatency(rng, ss["median_ms"], ss["sigma"], ss["spike_probability"], ss["spike_factor"])
    off = int(tt["clock_offset_ms"])
    gens = [SkewAdjustingTimeGenerator(
        TimeGeneratorConfig(max_expected_skew_ms=int(skew_ms), resolution_ms=resolution_ms),
        clocks={f"t{k}w{i}": Clock(offset_ms=rng.randint(-off, off)) for i in range(writers)},
        lock=Lock(latency_ms=int(tt["lock_acquire_ms"]))) for k in range(tables)]
    request_s: list[float] = []
    lock_wait_s: list[float] = []
    svc_s = st["lock_service_ms"] / 1000.0
    times: list[list[str]] = [[] for _ in range(tables)]

    def lock_service():
        t0 = env.now
        with service.request() as req:
            yield req
            yield env.timeout(svc_s)
        return env.now - t0

    def call(gen, name, kind, hold_ms=0):
        """One generation: lock-service round trip, then the model's generator at the current time."""
        svc = yield env.process(lock_service())
        now_ms = int(round(env.now * 1000))
        if kind == "generate":
            rec = gen.generate(name, now_ms)
        else:
            rec, _ = gen.consume_time(name, now_ms, None, hold_ms=hold_ms)
        gen.history.clear()  # records are summarised here; the generator need not keep them
        yield env.timeout(max(0, rec.released_at - now_ms) / 1000.0)
        yield env.process(lock_service())  # unlock round trip
        lock_wait_s.append(svc + rec.lock_wait_ms / 1000.0)
        return rec

    def writer(k, i):
        gen, name = gens[k], f"t{k}w{i}"
        yield env.timeout(rng.expovariate(1.0 / st["request_every_s"]))
        while True:
            t0 = env.now
            rec = yield env.process(call(gen, name, "generate"))
            request_s.append(env.now - t0)
            times[k].append(rec.time)
            yield env.timeout(storage.total(2))  # data files and the inflight file
            rec = yield env.process(call(gen, name, "consume", hold_ms=int(storage.sample() * 1000)))
            times[k].append(rec.time)
            yield env.timeout(rng.expovariate(1.0 / st["request_every_s"]))

    for k in range(tables):
        for i in range(writers):
            env.process(writer(k, i))
    env.run(until=duration_s)
    dup = sum(len(t) - len(set(t)) for t in times)
    bad = [v for v in map(check_times_strictly_increasing, times) if not v.holds]  # I1 per table
    req = np.asarray(request_s) if request_s else np.asarray([np.nan])
    return {
        "writers": writers, "tables": tables, "skew_ms": skew_ms, "resolution_ms": resolution_ms,
        "requests": len(request_s),
        "request_p50_s": float(np.nanpercentile(req, 50)),
        "request_p99_s": float(np.nanpercentile(req, 99)),
        "lock_wait_mean_s": float(np.mean(lock_wait_s)) if lock_wait_s else float("nan"),
        "lock_utilisation": float(min(1.0, len(lock_wait_s) * (skew_ms / 1000.0) / (tables * duration_s))),
        "duplicate_times": dup,
        "invariant": str(bad[0]) if bad else "ok",
    }


def run(params: dict, seed: int, quick: bool = False, progress=None) -> list[dict]:
    st = params["truetime_study"]
    duration = params["run"]["quick_duration_s" if quick else "duration_s"]
    master = random.Random(seed)
    rows = []
    for res, skew, tables, w in ((r, s, t, w) for r in st["resolutions_ms"] for s in st["skews_ms"]
                                 for t in st["tables"] for w in st["writers"]):
        rows.append(run_point(params, w, tables, skew, master.getrandbits(63), duration, res))
        if progress:
            progress()
    return rows
