"""Issue #15 items 8 and 9: clock resolution, and I1.generation-order for zero-time generations."""

from model.invariants.times import check_generation_order
from model.truetime import Clock, NaiveGenerator, SkewAdjustingTimeGenerator, TimeGeneratorConfig


# ------------------------------------------------------------------ item 9: I1.generation-order
def test_generation_order_sees_a_zero_time_generation():
    """Failed before the fix: a naive (0.x) generation takes no time (release == acquisition), so the
    check consumed the record while visiting it and never compared the later generation with it."""
    n = NaiveGenerator(clocks={"a": Clock(offset_ms=100), "b": Clock()})
    n.generate("a", 0)   # a's clock is 100 ms ahead: 20250101000000100
    n.generate("b", 50)  # b begins 50 ms after a ended and gets 20250101000000050
    assert [(r.acquired_at, r.released_at) for r in n.history] == [(0, 0), (50, 50)]
    v = check_generation_order(n.history)
    assert not v.holds and v.invariant == "I1.generation-order"
    assert v.involved == ("20250101000000100", "20250101000000050")


def test_generation_order_zero_time_ties_without_lock_are_concurrent():
    """Two unlocked generations in the same millisecond are concurrent (neither ended strictly first)."""
    n = NaiveGenerator(clocks={"a": Clock(offset_ms=100), "b": Clock()})
    n.generate("a", 7), n.generate("b", 7)
    assert check_generation_order(n.history).holds
    n.generate("b", 8)  # strictly after a's release: must be after a's time, and is not
    assert not check_generation_order(n.history).holds


def test_generation_order_zero_wait_under_the_lock_is_ordered_by_lock_order():
    """Under the lock, a zero-wait generation in the same millisecond is ordered by lock order (seq)."""
    g = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=0),
                                   clocks={"a": Clock(offset_ms=100), "b": Clock()})
    g.generate("a", 0), g.generate("b", 0)
    assert g.history[1].acquired_at == g.history[0].released_at == 0
    v = check_generation_order(g.history)
    assert not v.holds and "b acquired at 0" in v.detail
    ok = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=0))
    ok.generate("a", 0), ok.generate("b", 1), ok.generate("a", 2)
    assert check_generation_order(ok.history).holds


# ------------------------------------------------------------------ item 8: clock resolution
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from model.instant import normalize_time  # noqa: E402
from model.truetime import guarantee_holds  # noqa: E402
from sim import collisions  # noqa: E402
from sim import config as cfg  # noqa: E402


def test_second_clocks_write_14_digit_times_parsed_with_999():
    g = NaiveGenerator(resolution_ms=1000)
    recs = [g.generate("a", t) for t in (0, 10, 1500)]
    assert [r.written for r in recs] == ["20250101000000", "20250101000001", "20250101000002"]
    assert [r.time for r in recs] == [normalize_time(r.written) for r in recs]
    assert recs[1].attempts == 2 and recs[1].released_at == 1000  # the guard spun to the next second
    with pytest.raises(ValueError, match="resolution_ms"):
        TimeGeneratorConfig(resolution_ms=10)


def test_truetime_needs_the_wait_to_cover_the_resolution():
    """At second resolution the default 200 ms wait hands two processes the same second; a wait of
    skew + 1000 ms does not (``guarantee_holds``: wait + hand-off >= skew + resolution)."""
    short = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=200, resolution_ms=1000))
    short.generate("a", 0), short.generate("b", 0)
    assert short.times()[0] == short.times()[1]
    assert not guarantee_holds(short.config, 0, 0)
    long = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=1000, resolution_ms=1000))
    long.generate("a", 0), long.generate("b", 0)
    assert long.times()[0] < long.times()[1] and guarantee_holds(long.config, 0, 0)
    assert guarantee_holds(TimeGeneratorConfig(max_expected_skew_ms=200), 199, 0)  # millisecond: W > S


def test_vectorised_naive_times_equal_the_generator_at_second_resolution():
    rng = np.random.default_rng(5)
    sched = collisions.request_schedule(rng, 4, 0.7, 0.3, 60_000)  # some requests < 1 s apart: the guard fires
    offsets = [0, 300, -450, 20]
    fast = collisions.naive_times(sched, offsets, 1000)
    slow = collisions.naive_generator_times(sched, offsets, 1000)
    assert [list(x) for x in fast] == slow
    assert any(np.any(np.diff(np.floor(t)) < 1000) for t in sched)


def test_collision_experiment_takes_the_resolution():
    exp = cfg.from_dict({"kind": "collisions", "truetime": {"max_skew_ms": 200, "lock_acquire_ms": 5},
                         "collisions": {"writers": [4], "periods_s": [10.0], "days": 0.05, "runs": 3,
                                        "truetime_runs": 1, "truetime_days": 0.002, "clock_offset_ms": 50,
                                        "resolutions_ms": [1, 1000]}})
    ms, s = collisions.run(exp.params, seed=2)
    assert (ms["resolution_ms"], s["resolution_ms"]) == (1, 1000)
    assert s["mean_collisions_per_day"] > 20 * max(ms["mean_collisions_per_day"], 1)
    assert s["mean_collisions_per_day"] == pytest.approx(s["expected_collisions_per_day"], rel=0.3)
    assert ms["truetime_collisions"] == 0 and ms["truetime_invariant"] == "ok"
    # the 200 ms wait does not cover a one-second tick: TrueTime itself collides, I1 fails
    assert s["truetime_collisions"] > 0 and "VIOLATED" in s["truetime_invariant"]
    res = collisions.truetime_run(2, writers=4, period_s=1.0, jitter=0.05, days=0.002, clock_offset_ms=50,
                                  max_skew_ms=1100, lock_ms=5, resolution_ms=1000)
    assert res["collisions"] == 0 and res["invariant"] == "ok"
    with pytest.raises(Exception, match="resolutions_ms"):
        cfg.from_dict({"kind": "collisions", "collisions": {"resolutions_ms": [10]}})
