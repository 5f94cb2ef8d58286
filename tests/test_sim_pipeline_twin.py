"""The SimPy twin of the PySpark pipeline (sim/pipeline_twin.py). Runtime: well under 1 s."""

from __future__ import annotations

import dataclasses

import pytest

from sim import pipeline_twin as twin

#: bench_pipeline.py's measured MOR figures (50,000 records in 10 batches), records/s.
MEASURED = [("blocking mor", 0, 16688), ("async mor", 0, 15399), ("blocking mor", 250, 6715),
            ("async mor", 250, 9683), ("blocking mor", 1000, 2169), ("async mor", 1000, 3603)]
ROWS = [{"what": w, "latency_ms": lat, "rps": rps} for w, lat, rps in MEASURED]


def test_deterministic():
    a = twin.simulate("async", 6, 0.3, 0.25)
    b = twin.simulate("async", 6, 0.3, 0.25)
    assert (a.seconds, a.batch_seconds, a.events) == (b.seconds, b.batch_seconds, b.events)
    assert twin.predict_ratio(50_000, 10, 0.3, 1.0) == twin.predict_ratio(50_000, 10, 0.3, 1.0)


@pytest.mark.parametrize("latency", [0.05, 0.25, 1.0, 3.0])
def test_async_beats_blocking_with_commit_latency(latency):
    p = twin.predict_ratio(50_000, 10, 0.3, latency)
    assert p["ratio"] > 1.0
    assert p["async_batch_p50"] < p["blocking_batch_p50"]


def test_ratio_is_one_without_commit_latency():
    assert twin.predict_ratio(50_000, 10, 0.3, 0.0)["ratio"] == pytest.approx(1.0)


@pytest.mark.parametrize("mode", twin.MODES)
@pytest.mark.parametrize("batches,W,L", [(1, 0.3, 0.25), (10, 0.3, 1.0), (7, 0.0, 0.5), (5, 0.2, 0.0)])
def test_every_run_holds_the_invariants_and_the_cost_formula(mode, batches, W, L):
    r = twin.simulate(mode, batches, W, L)
    assert r.verdict == "ok"
    assert r.commits == r.starts == batches          # every batch's instant started and committed once
    # blocking: W + 2L a batch; async: W + L a batch, the last commit's L after the loop
    expected = batches * (W + 2 * L) if mode == "blocking" else batches * (W + L) + L
    assert r.seconds == pytest.approx(expected)


def test_invariant_checks_can_fail(monkeypatch):
    """A deliberately broken commit rule (the ack of n commits only key n) is caught by the twin's checks."""
    good = twin._protocol_config
    monkeypatch.setattr(twin, "_protocol_config",
                        lambda mode, batches: dataclasses.replace(good(mode, batches), commit_rule="=="))
    assert "I11.subsume" in twin.simulate("async", 4, 0.3, 0.25).verdict      # an invariant fails
    assert twin.simulate("blocking", 4, 0.3, 0.25).verdict.startswith("refused")  # the model refuses a step
    with pytest.raises(RuntimeError, match="invariant violated"):
        twin.predict_ratio(1000, 4, 0.3, 0.25)


def test_compare_with_the_measured_pipeline():
    lines = []
    res = twin.compare(ROWS, 50_000, 10, out=lines.append)
    assert [r["latency_ms"] for r in res] == [0, 250, 1000]
    assert twin.calibrate_write_s(ROWS, 50_000, 10) == pytest.approx((50_000 / 16688 + 50_000 / 15399) / 20)
    for r in res:
        assert r["measured_ratio"] == pytest.approx(dict(((w.split()[0], l), v) for w, l, v in MEASURED)
                                                    [("async", r["latency_ms"])] /
                                                    dict(((w.split()[0], l), v) for w, l, v in MEASURED)
                                                    [("blocking", r["latency_ms"])])
        assert r["within"] == (r["gap"] <= twin.TOLERANCE)
    assert all(r["within"] for r in res if r["latency_ms"] in (250, 1000))
    assert len(lines) == 4 and "L= 1000 ms" in lines[-1]


def test_compare_needs_the_zero_latency_rows():
    with pytest.raises(ValueError, match="latency_ms 0"):
        twin.compare([r for r in ROWS if r["latency_ms"] != 0], 50_000, 10, out=lambda s: None)
