"""Unit tests of model.truetime: clocks, the lock, the skew wait, the per-process guard, consume_time."""

import random

import pytest

from model.errors import RuleViolation
from model.instant import format_millis, to_millis
from model.truetime import (
    DEFAULT_EPOCH_MS,
    Clock,
    Lock,
    NaiveGenerator,
    SkewAdjustingTimeGenerator,
    TimeGenerator,
    TimeGeneratorConfig,
    actual_skew,
    guarantee_holds,
)


def test_clock_offset_drift_and_jumps():
    c = Clock(offset_ms=5, drift_ppm=1000, jumps=((2000, -300), (1000, 50)))
    assert c.read(0) == 5
    assert c.read(999) == 999 + 5 + 0
    assert c.read(1000) == 1000 + 5 + 1 + 50
    assert c.read(2000) == 2000 + 5 + 2 + 50 - 300
    assert c.error(2000) == 5 + 2 + 50 - 300
    assert c.error_range(0, 3000) == (5 + 2 + 50 - 300, 5 + 1 + 50)  # min at the step back, max just before it
    assert actual_skew([Clock(offset_ms=-20), Clock(offset_ms=30)], 0, 10) == 50
    assert actual_skew([Clock(jumps=((5, -40),))], 0, 10) == 40  # one clock stepping back is skew too


def test_config_defaults_follow_hudi():
    assert TimeGeneratorConfig().max_expected_skew_ms == 200
    assert TimeGeneratorConfig().use_lock and TimeGeneratorConfig().guard
    assert TimeGeneratorConfig.in_process().max_expected_skew_ms == 1
    with pytest.raises(ValueError):
        TimeGeneratorConfig(max_expected_skew_ms=-1)


def test_generate_reads_before_waiting_and_lock_serialises():
    g = SkewAdjustingTimeGenerator(clocks={"a": Clock(offset_ms=100)})
    r1 = g.generate("a", 0)
    assert r1.time == format_millis(DEFAULT_EPOCH_MS + 100)  # the reading before the wait
    assert (r1.acquired_at, r1.read_at, r1.released_at, r1.waited_ms, r1.lock_wait_ms) == (0, 0, 200, 200, 0)
    r2 = g.generate("b", 50)  # lock busy until 200: contention charged as lock wait
    assert (r2.acquired_at, r2.lock_wait_ms, r2.released_at) == (200, 150, 400)
    assert r2.time == format_millis(DEFAULT_EPOCH_MS + 200)
    assert g.times() == [r1.time, r2.time]


def test_lock_latency_fixed_and_drawn():
    g = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=10), lock=Lock(latency_ms=3))
    r = g.generate("a", 0)
    assert (r.acquired_at, r.released_at) == (3, 13)
    rng = random.Random(7)
    g2 = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=10),
                                    lock=Lock(latency_ms=1, latency_max_ms=9, rng=rng))
    lat = [g2.generate("a", 1000 * i).lock_wait_ms for i in range(30)]
    assert all(1 <= x <= 9 for x in lat) and len(set(lat)) > 1
    with pytest.raises(ValueError):
        Lock(latency_ms=1, latency_max_ms=5)  # drawn latency needs an explicit rng


def test_per_process_guard_loops_after_a_backward_jump():
    # The clock steps back 500 ms at t=100: without the guard the time would repeat/decrease.
    clk = Clock(jumps=((100, -500),))
    g = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=200), clocks={"a": clk})
    r1 = g.generate("a", 0)
    r2 = g.generate("a", 200)
    assert r2.time > r1.time and r2.attempts > 1
    assert r2.waited_ms == 200 * r2.attempts
    unguarded = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=200, guard=False),
                                           clocks={"a": clk})
    u1, u2 = unguarded.generate("a", 0), unguarded.generate("a", 200)
    assert u2.time < u1.time and u2.attempts == 1


def test_naive_generator_collides_across_processes_and_truetime_does_not():
    clocks = {"a": Clock(offset_ms=0), "b": Clock(offset_ms=0)}
    n = NaiveGenerator(clocks=clocks)
    assert n.generate("a", 0).time == n.generate("b", 0).time  # 0.x: same millisecond, two JVMs
    assert n.generate("a", 0).time > n.history[0].time  # but never twice in one JVM
    g = SkewAdjustingTimeGenerator(TimeGeneratorConfig.in_process(), clocks=clocks)
    assert g.generate("a", 0).time < g.generate("b", 0).time


def test_consume_time_runs_the_action_inside_the_lock_section():
    g = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=10))
    seen = {}

    def create_completed_file(t):
        seen["holder"] = g.lock.holder
        seen["t"] = t
        return f"x_{t}.commit"

    rec, out = g.consume_time("a", 0, create_completed_file, hold_ms=4)
    assert seen == {"holder": "a", "t": rec.time} and out == f"x_{rec.time}.commit"
    assert rec.kind == "consume" and rec.released_at == 14 and g.lock.holder is None
    # A later generation by anyone waits for the whole section, file creation included.
    assert g.generate("b", 0).acquired_at == 14

    def boom(_t):
        raise OSError("storage down")

    with pytest.raises(OSError):
        g.consume_time("c", 100, boom)
    assert g.lock.holder is None and not g.lock.queue and not g.pending  # finally { unlock() }
    assert g.generate("d", 100).acquired_at >= 110


def test_steps_enforce_order_fifo_and_earliest_times():
    g = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=5), lock=Lock(latency_ms=1))
    g.request("a", 0)
    g.request("b", 0)
    assert g.next_step("a") == ("acquire", 1) and g.next_step("b") == ("acquire", None)
    with pytest.raises(RuleViolation) as e:
        g.acquire("b", 10)
    assert e.value.rule == "TT.step-order"
    with pytest.raises(RuleViolation):
        g.acquire("a", 0)  # before the latency has passed
    with pytest.raises(RuleViolation):
        g.read("a", 1)  # out of order
    g.acquire("a", 1)
    assert g.read("a", 2) == 2
    with pytest.raises(RuleViolation):
        g.finish_wait("a", 6)
    g.finish_wait("a", 7)
    rec = g.release("a", 7)
    assert rec.time == format_millis(DEFAULT_EPOCH_MS + 2) and g.next_step("b") == ("acquire", 8)
    assert g.step("b", 8) is None and g.lock.holder == "b"
    with pytest.raises(RuleViolation):
        g.generate("c", 0)  # sequential call while b is mid-generation
    with pytest.raises(RuleViolation):
        g.request("b", 9)  # one generation per process
    snapshot = g.copy()
    g.step("b", 8), g.step("b", 13)
    assert g.step("b", 13).time > rec.time
    assert snapshot.lock.holder == "b" and len(snapshot.history) == 1  # copies are independent


def test_without_lock_steps_do_not_exclude():
    g = TimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=0, use_lock=False))
    g.request("a", 0), g.request("b", 0)
    assert g.next_step("a") == ("acquire", 0) and g.next_step("b") == ("acquire", 0)
    for p in "ab":
        for _ in range(4):
            g.step(p, 0)
    assert g.history[0].time == g.history[1].time


def test_guarantee_condition():
    cfg = TimeGeneratorConfig(max_expected_skew_ms=200)
    assert guarantee_holds(cfg, 200, 1) and not guarantee_holds(cfg, 200, 0)
    assert guarantee_holds(cfg, 199, 0)
    assert not guarantee_holds(TimeGeneratorConfig(use_lock=False), 0, 5)
    assert to_millis(format_millis(DEFAULT_EPOCH_MS)) == DEFAULT_EPOCH_MS


# ------------------------------------------------------------------ model.invariants.times
from model.instant import Action  # noqa: E402
from model.invariants.times import (  # noqa: E402
    check_generation_order,
    check_requested_before_completion,
    check_time_format,
    check_timeline_times,
    check_timeline_times_unique,
    check_times_strictly_increasing,
    check_times_unique,
    check_visible_state_is_highest,
)
from model.timeline import Timeline  # noqa: E402

A, B, C = "20250101000000100", "20250101000000200", "20250101000000300"


def test_time_checks_hold_and_fail():
    assert check_times_strictly_increasing([A, B, C]).holds
    v = check_times_strictly_increasing([A, C, B])
    assert not v.holds and v.involved == (C, B) and v.invariant == "I1.strictly-increasing"
    assert check_times_unique([A, B]).holds and not check_times_unique([A, B, A]).holds
    assert check_time_format([A]).holds and not check_time_format([A, "2025"]).holds


def test_generation_order_over_records():
    g = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=50),
                                   clocks={"a": Clock(offset_ms=40), "b": Clock()})
    for i in range(6):
        g.generate("ab"[i % 2], 0)
    assert check_generation_order(g.history).holds
    bad = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=10),
                                     clocks={"a": Clock(offset_ms=40), "b": Clock()})
    bad.generate("a", 0), bad.generate("b", 0)
    v = check_generation_order(bad.history)
    assert not v.holds and "b acquired at 10" in v.detail
    # Without a lock, overlapping generations are concurrent: not ordered, not a violation.
    n = NaiveGenerator(clocks={"a": Clock(offset_ms=40), "b": Clock()})
    n.request("a", 0), n.request("b", 0)
    for p in "ab":
        for _ in range(4):
            n.step(p, 0)
    assert n.times() == ["20250101000000040", "20250101000000000"]
    assert check_generation_order(n.history).holds


def test_timeline_time_checks():
    tl = Timeline(9)
    tl.create(A, Action.COMMIT)
    tl.transition_to_inflight(A, Action.COMMIT)
    tl.complete(A, Action.COMMIT, B)
    tl.create(C, Action.CLEAN)
    assert all(v.holds for v in check_timeline_times(tl))
    tl.create(B, Action.ROLLBACK)  # B is also A's completion time: two uses of one generated time
    v = check_timeline_times_unique(tl)
    assert not v.holds and B in v.detail
    assert check_requested_before_completion(tl).holds and check_visible_state_is_highest(tl).holds


def test_keep_history_off_still_numbers_generations():
    g = SkewAdjustingTimeGenerator(TimeGeneratorConfig.in_process(), keep_history=False)
    recs = [g.generate("a", 0) for _ in range(3)]
    assert g.history == [] and g.generated == 3 and [r.seq for r in recs] == [0, 1, 2]
    assert recs[0].time < recs[1].time < recs[2].time


def _generator_state(g):
    """Everything a step can change: the pending generations, the lock (and its latency draws), the records."""
    pending = {p: dict(vars(q)) for p, q in g.pending.items()}
    lock = (g.lock.holder, list(g.lock.queue), g.lock.last_released_at,
            g.lock.rng.getstate() if g.lock.rng is not None else None)
    return pending, lock, dict(g.last_time), list(g.history), g.generated


@pytest.mark.parametrize("phase_steps", [0, 1, 2, 3])
def test_a_refused_sequential_call_leaves_the_generator_as_it_was(phase_steps):
    """A sequential call for a process that already has a generation in progress is refused
    (``TT.step-order``) and must not drop that generation nor release its lock, in any phase of it."""
    g = TimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=3, use_lock=True),
                      lock=Lock(latency_ms=0, latency_max_ms=2, rng=random.Random(7)))
    g.request("w1", 0, kind="consume", hold_ms=1)
    for _ in range(phase_steps):
        g.step("w1", g.earliest("w1"))
    before = _generator_state(g)
    for call in (lambda: g.consume_time("w1", 50, lambda t: t), lambda: g.generate("w1", 50)):
        with pytest.raises(RuleViolation) as e:
            call()
        assert (e.value.rule, e.value.detail) == (
            "TT.step-order", "w1: already has a generation in progress (one per process)")
        assert _generator_state(g) == before
    # the generation in progress still completes
    while "w1" in g.pending:
        rec = g.step("w1", g.earliest("w1"))
    assert rec.kind == "consume" and g.lock.holder is None


def test_a_sequential_call_refused_as_blocked_makes_no_request():
    """Blocked by a lock held outside the generator (or a queue entry of no pending generation): refused
    before its request -- nothing queued, pending or drawn."""
    for holder, queue in (("outside", []), (None, ["ghost"])):
        g = TimeGenerator(TimeGeneratorConfig(use_lock=True),
                          lock=Lock(latency_ms=0, latency_max_ms=5, rng=random.Random(3)))
        g.lock.holder = holder
        g.lock.queue.extend(queue)
        before = _generator_state(g)
        for call in (lambda: g.consume_time("w1", 0), lambda: g.generate("w1", 0)):
            with pytest.raises(RuleViolation) as e:
                call()
            assert e.value.detail == "w1: acquire is blocked (the lock is held or others are ahead in the queue)"
            assert _generator_state(g) == before
