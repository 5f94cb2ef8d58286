"""Checkpoint barrier alignment in the simulation: a barrier is a position in a task's input stream.

Aligned (Flink's default), a backpressured task takes the barrier only after the records in flight ahead of
it (``inflight_kb`` of network buffers), so its checkpoints take longer; unaligned, the barrier overtakes them.
A task that keeps up has nothing in flight ahead of the barrier, and both modes take it after the barrier
latency alone. Exactly-once holds either way."""

from __future__ import annotations

import pytest

from sim.engine import CrashPlan, StreamSim, run_stream
from test_sim_engine import small

#: Each writer receives 2,000 records/s and can process 1,000/s: backpressured from the start, the in-flight
#: buffers always full. 320 KB of 200-byte records = 1,638.4 records = 1.64 s of processing at 1,000 records/s.
BACKPRESSURED = {"writers.per_record_us": 1000.0, "writers.buffer_records": 100_000, "coordinator.commit_latency_s": 0.5}
INFLIGHT_S = 320 * 1024 / 200 / 1000.0


def _durations(res) -> list[float]:
    return [done - trig for _, trig, done in res.metrics.checkpoints if done is not None]


def test_aligned_barriers_wait_behind_inflight_records_of_a_backpressured_task():
    aligned = run_stream(small(**BACKPRESSURED), "async", 5, keep_series=False)
    unaligned = run_stream(small(**BACKPRESSURED, **{"checkpoint.alignment": "unaligned"}), "async", 5,
                           keep_series=False)
    a, u = _durations(aligned), _durations(unaligned)
    assert len(a) >= 8 and len(u) >= 8
    # unaligned: barrier latency (<= 7.5 ms) + the flush; aligned: + the in-flight records' processing time
    assert max(u) < 0.5, u
    assert min(a) >= INFLIGHT_S, a
    assert min(a) - max(u) >= 0.9 * INFLIGHT_S, (a, u)
    for res in (aligned, unaligned):
        assert res.verdict == "ok" and res.lost_records == 0 and res.duplicated_records == 0


def test_a_task_that_keeps_up_takes_the_barrier_after_its_latency_in_both_modes():
    # 2,000 records/s per writer against 50,000/s of capacity: nothing is in flight ahead of a barrier, so
    # a checkpoint takes the last task's barrier latency (each uniform on [100, 300] ms) longer than without
    for alignment in ("aligned", "unaligned"):
        med = {}
        for lat in (0.0, 200.0):
            res = run_stream(small(**{"checkpoint.alignment": alignment, "checkpoint.barrier_latency_ms": lat,
                                      "writers.buffer_records": 100_000}), "async", 2, keep_series=False)
            d = sorted(_durations(res))
            assert len(d) >= 8 and res.verdict == "ok"
            med[lat] = d[len(d) // 2]
        assert 0.1 <= med[200.0] - med[0.0] <= 0.3, (alignment, med)


def test_zero_latency_unaligned_barrier_is_taken_at_the_trigger():
    exp = small(**{"checkpoint.alignment": "unaligned", "checkpoint.barrier_latency_ms": 0.0,
                   "writers.buffer_records": 100_000, "storage.median_ms": 0.0, "writers.flush_base_ms": 0.0,
                   "writers.flush_ms_per_mb": 0.0})
    sim = StreamSim(exp, "async", 1, keep_series=False)
    res = sim.run()
    d = _durations(res)
    # the barrier is taken at once: what remains is the instant request (1 ms RPC, the new instant's 5 ms
    # listing and its TrueTime generation: 5 ms lock + 1 ms skew wait)
    assert d and max(d) < 0.02, d


@pytest.mark.parametrize("alignment", ["aligned", "unaligned"])
@pytest.mark.parametrize("target", ["task", "job"])
def test_exactly_once_with_backpressure_and_crashes(alignment, target):
    exp = small(**BACKPRESSURED, **{"checkpoint.alignment": alignment, "faults.restart_delay_s": 2.0})
    for mode in ("blocking", "async"):
        res = run_stream(exp, mode, 4, quick=True, keep_series=False,
                         crash_plan=CrashPlan(target, "snapshot-task", "after", 3))
        assert res.crash_log, (alignment, target, mode)
        assert res.verdict == "ok", res.verdict
        assert res.lost_records == 0 and res.duplicated_records == 0, (alignment, target, mode)
