"""The simulation's workload helpers (sim.fluid): fluid consumption against a brute-force step simulation,
time_to_consume as its inverse, and the storage latency distribution."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from sim.fluid import Source, StorageLatency, consumed, time_to_consume

SOURCES = {
    "steady": Source(1000.0),
    "bursty": Source(1000.0, burst_rate=4000.0, period=10.0, burst=2.0),
}


def brute_consumed(src: Source, x0: float, t0: float, t1: float, cap: float, dt: float = 1e-4) -> float:
    """Step the queue: each dt, consume min(cap * dt, what has arrived and is not consumed)."""
    x, t = x0, t0
    while t < t1 - 1e-12:
        h = min(dt, t1 - t)
        t += h
        x = min(x + cap * h, max(x, src.arrived(t)))
    return x


@pytest.mark.parametrize("name", sorted(SOURCES))
@pytest.mark.parametrize("cap", [800.0, 1500.0, 10_000.0])
def test_consumed_matches_a_step_simulation(name, cap):
    src = SOURCES[name]
    rng = random.Random(4)
    for _ in range(12):
        t0 = rng.uniform(0, 30)
        x0 = rng.uniform(0, src.arrived(t0))  # a backlog of any size at t0
        t1 = t0 + rng.uniform(0, 8)
        exact = consumed(src, x0, t0, t1, cap)
        approx = brute_consumed(src, x0, t0, t1, cap)
        assert exact == pytest.approx(approx, abs=cap * 2e-4 + 1e-6), (name, cap, t0, x0, t1)
        assert x0 <= exact <= src.arrived(t1) + 1e-6


@pytest.mark.parametrize("name", sorted(SOURCES))
@pytest.mark.parametrize("cap", [800.0, 1500.0, math.inf])
def test_time_to_consume_is_the_earliest_time_the_target_is_consumed(name, cap):
    src = SOURCES[name]
    rng = random.Random(9)
    for _ in range(30):
        t0 = rng.uniform(0, 30)
        x0 = rng.uniform(0, src.arrived(t0))
        target = x0 + rng.uniform(1, 20_000)
        t = time_to_consume(src, x0, t0, target, cap)
        assert t >= t0
        assert consumed(src, x0, t0, t, cap) >= target - 1e-6
        if t > t0 + 1e-6:
            assert consumed(src, x0, t0, t - 1e-6, cap) < target, (name, cap, t0, x0, target, t)


def test_storage_latency_distribution_spikes_and_seed():
    a = StorageLatency(random.Random(3), median_ms=20.0, sigma=0.5, spike_probability=0.01, spike_factor=50.0)
    draws = [a.sample() for _ in range(40_000)]
    assert statistics.median(draws) == pytest.approx(0.020, rel=0.05)
    spikes = sum(1 for d in draws if d > 0.020 * 20)  # lognormal(sigma 0.5) alone exceeds 20x median ~1e-9
    assert 0.007 <= spikes / len(draws) <= 0.013
    b = StorageLatency(random.Random(3), median_ms=20.0, sigma=0.5, spike_probability=0.01, spike_factor=50.0)
    assert [b.sample() for _ in range(40_000)] == draws  # same seed, same draws (across blocks)
    c = StorageLatency(random.Random(4), median_ms=20.0, sigma=0.5, spike_probability=0.01, spike_factor=50.0)
    assert [c.sample() for _ in range(100)] != draws[:100]
    flat = StorageLatency(random.Random(1), median_ms=5.0, sigma=0.0, spike_probability=0.0, spike_factor=1.0)
    assert {flat.sample() for _ in range(10)} == {0.005}
    assert StorageLatency(random.Random(1), 0.0, 0.5, 0.5, 10.0).sample() == 0.0
    assert flat.total(3) == pytest.approx(0.015)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_times_of_is_time_of_for_every_offset(name):
    """The vectorised inverse gives exactly the scalar one's values (latency is read through it)."""
    src = SOURCES[name]
    rng = random.Random(12)
    xs = [0.0, -5.0, 1.0] + [rng.uniform(0, src.arrived(120.0)) for _ in range(500)]
    xs += [src.arrived(float(k)) for k in range(0, 60, 2)]  # period and burst edges exactly
    assert src.times_of(xs).tolist() == [src.time_of(x) for x in xs]


def test_latency_is_read_from_committed_offset_ranges():
    """RunMetrics records committed offset ranges and converts them with the source's arrival times when
    read: a range [lo, hi) committed at t has latencies from t - time_of(hi) to t - time_of(lo), weight
    hi - lo. A metrics object that skips the conversion (offsets taken as times) is caught."""
    from sim.metrics import RunMetrics

    src = SOURCES["bursty"]
    m = RunMetrics(60.0, 1.0, arrival_times=src.times_of)
    m.latency_offsets(12.5, [3000.0, 9000.0])
    m.latency_offsets(31.0, [9000.0, 9000.0, 9000.0, 25_000.0])  # an empty range, then one with records
    ranges = [(12.5, 3000.0, 9000.0), (31.0, 9000.0, 9000.0), (31.0, 9000.0, 25_000.0)]
    lo, hi, w = m.latency_ranges()
    want = [(t - src.time_of(b), t - src.time_of(a), b - a) for t, a, b in ranges if b > a]
    assert list(zip(lo.tolist(), hi.tolist(), w.tolist())) == want
    assert RunMetrics(60.0, 1.0).latency_percentiles() == {50: pytest.approx(float("nan"), nan_ok=True),
                                                          99: pytest.approx(float("nan"), nan_ok=True)}
    broken = RunMetrics(60.0, 1.0, arrival_times=lambda x: x)
    broken.latency_offsets(12.5, [3000.0, 9000.0])
    broken.latency_offsets(31.0, [9000.0, 9000.0, 9000.0, 25_000.0])
    assert broken.latency_percentiles() != m.latency_percentiles()
