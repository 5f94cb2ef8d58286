"""The SimPy simulation: qualitative claims, exactly-once under faults, determinism, failing runs replay."""

from __future__ import annotations

import math

import pytest

from sim import config as cfg
from sim.engine import CrashPlan, StreamSim, run_stream

#: A small workload where a writer fills its buffer every 0.5 s (so it asks for an instant soon after each
#: checkpoint) and a commit takes 3 s.
SMALL = {
    "name": "small", "kind": "stream",
    "run": {"duration_s": 120.0, "quick_duration_s": 60.0},
    "source": {"rate_rps": 8000.0},
    "writers": {"parallelism": 4, "buffer_records": 1000, "per_record_us": 20.0},
    "checkpoint": {"interval_s": 10.0},
    "coordinator": {"commit_latency_s": 3.0},
    "truetime": {"max_skew_ms": 1.0},
}


def small(**changes) -> cfg.Experiment:
    raw = {k: (dict(v) if isinstance(v, dict) else v) for k, v in SMALL.items()}
    for dotted, v in changes.items():
        table, key = dotted.split(".")
        raw.setdefault(table, {})[key] = v
    return cfg.from_dict(raw, "test")


def test_async_stall_near_zero_blocking_stall_close_to_commit_latency():
    latency = 3.0
    exp = small()
    blocking = run_stream(exp, "blocking", 1)
    async_ = run_stream(exp, "async", 1)
    b, a = blocking.summary["stall_per_checkpoint_s"], async_.summary["stall_per_checkpoint_s"]
    # Blocking: the first flush after a checkpoint waits for the previous instant's commit.
    assert 0.7 * latency <= b <= 1.3 * latency, b
    # Async: only the instant RPCs (and one TrueTime generation per checkpoint).
    assert a <= 0.05 * latency, a
    for res in (blocking, async_):
        assert res.verdict == "ok", res.verdict
        assert res.lost_records == 0 and res.duplicated_records == 0
        assert res.summary["throughput_rps"] == pytest.approx(8000.0, rel=0.05)
    # Blocking stalls back up the source; async keeps up.
    assert blocking.summary["backlog_max_records"] > 10 * max(async_.summary["backlog_max_records"], 1.0)


@pytest.mark.parametrize("mode", ["blocking", "async"])
def test_exactly_once_with_crashes_and_lost_acks(mode):
    exp = small(**{"faults.crash_every_s": 25.0, "faults.crash_target": "job", "faults.lost_ack_probability": 0.2,
                   "faults.restart_delay_s": 3.0, "coordinator.ack_timeout_s": 15.0})
    res = run_stream(exp, mode, 7)
    assert res.crash_log, "the run should have crashed at least once"
    assert res.verdict == "ok", res.verdict
    assert res.lost_records == 0 and res.duplicated_records == 0
    assert res.summary["records_committed"] > 0


@pytest.mark.parametrize("target", ["task", "coordinator", "job"])
@pytest.mark.parametrize("step, when", [("snapshot-task", "after"), ("deliver-ack", "before"),
                                        ("complete-checkpoint", "after"), ("request-instant", "after")])
def test_crash_at_protocol_steps_recovers_exactly_once(target, step, when):
    exp = small()
    for mode in ("blocking", "async"):
        res = run_stream(exp, mode, 3, quick=True, keep_series=False, crash_plan=CrashPlan(target, step, when, 2))
        assert res.crash_log, (mode, target, step)
        assert res.verdict == "ok", res.verdict
        assert res.lost_records == 0 and res.duplicated_records == 0
        assert math.isfinite(res.crash_log[0]["recovery_s"]), (mode, target, step, res.crash_log)


def test_runs_are_deterministic_for_a_seed():
    exp = small(**{"faults.crash_every_s": 30.0, "faults.lost_ack_probability": 0.1, "storage.spike_probability": 0.05})
    a = StreamSim(exp, "async", 11)
    ra = a.run()
    b = StreamSim(exp, "async", 11)
    rb = b.run()
    assert a.events == b.events
    assert {k: v for k, v in ra.summary.items() if k != "wall_s"} == \
        pytest.approx({k: v for k, v in rb.summary.items() if k != "wall_s"}, nan_ok=True)
    c = StreamSim(exp, "async", 12)
    c.run()
    assert c.events != a.events


def test_a_broken_protocol_variant_fails_the_run_with_a_replayable_trace(tmp_path, capsys):
    from hoodie_lab.cli import main

    exp = small(**{"protocol.async_variant": "broken-commit-eq", "run.duration_s": 40.0})
    res = run_stream(exp, "async", 5, trace_dir=tmp_path)
    assert res.verdict != "ok"
    assert res.replay == f"hoodie-lab replay {res.trace_path}"
    assert res.trace_path.is_file()
    # The trace replays through the model to a violation (exit 1).
    assert main(["replay", str(res.trace_path)]) == 1
    out = capsys.readouterr()
    assert "VIOLATED" in out.out or "violated" in (out.out + out.err).lower()


def test_every_run_is_checked_and_writes_a_trace_on_request(tmp_path):
    from checker.replay import replay
    from lakeio.traces import load_trace

    res = run_stream(small(**{"run.duration_s": 30.0}), "blocking", 2, trace_dir=tmp_path)
    assert res.verdict == "ok" and res.replay is None
    trace = load_trace(res.trace_path)
    assert trace.driver == "simulate" and len(trace.events) == res.model_events
    assert replay(trace).ok


@pytest.mark.parametrize("mode", ["blocking", "async"])
def test_checkpoint_timeout_declines_at_the_deadline(mode):
    """A checkpoint whose barriers cannot all be processed within ``timeout_s`` is declined at trigger +
    timeout_s (the one timeout timer is set for each pending checkpoint's deadline in turn): barriers take
    1.5-4.5 s, the timeout is 1 s, so every checkpoint is declined at +1 s and, with a 1.5 s minimum pause,
    the next one starts 2.5 s after the previous trigger. With a 600 s timeout every checkpoint completes."""
    declined = run_stream(small(**{"checkpoint.interval_s": 2.0, "checkpoint.timeout_s": 1.0,
                                   "checkpoint.min_pause_s": 1.5, "checkpoint.barrier_latency_ms": 3000.0}),
                          mode, 5, quick=True, keep_series=False)
    ckps = declined.metrics.checkpoints
    assert len(ckps) > 10 and all(done is None for _, _, done in ckps), ckps[:5]
    starts = [t for _, t, _ in ckps]
    assert all(b - a == pytest.approx(2.5) for a, b in zip(starts, starts[1:])), starts[:6]
    assert declined.verdict == "ok", declined.verdict
    completed = run_stream(small(**{"checkpoint.interval_s": 2.0, "checkpoint.timeout_s": 600.0,
                                    "checkpoint.min_pause_s": 1.5, "checkpoint.barrier_latency_ms": 3000.0}),
                           mode, 5, quick=True, keep_series=False)
    assert completed.metrics.checkpoints and all(done is not None for _, _, done in completed.metrics.checkpoints)
    assert completed.verdict == "ok" and completed.lost_records == 0 and completed.duplicated_records == 0


def test_an_instant_request_queued_behind_a_slow_commit_times_out():
    """Blocking mode runs instant requests and commits on one coordinator thread: with a commit slower than
    write.commit.ack.timeout, a request queued behind it times out (model fault request-timeout: its task
    fails and restarts) instead of waiting forever; every record still lands exactly once."""
    exp = small(**{"coordinator.commit_latency_s": 12.0, "coordinator.ack_timeout_s": 5.0})
    res = run_stream(exp, "blocking", 1, quick=True)
    assert res.request_timeouts > 0
    assert res.verdict == "ok", res.verdict
    assert res.lost_records == 0 and res.duplicated_records == 0
    # the same workload with a timeout longer than a commit: no request times out
    calm = run_stream(small(**{"coordinator.commit_latency_s": 12.0, "coordinator.ack_timeout_s": 60.0}),
                      "blocking", 1, quick=True)
    assert calm.request_timeouts == 0 and calm.verdict == "ok"
