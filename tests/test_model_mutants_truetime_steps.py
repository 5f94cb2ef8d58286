"""Focused tests for model/truetime.py that a hand-applied mutation sample showed unchecked (issue #15 item 10):
the exact text of every refusal (constructor bounds, ``request``, each step's "before its earliest time" naming
the step, the sequential-use refusal, the blocked step), both edges of each bound, ``Clock.error_range`` with
a jump at the interval's end, and ``consume_time`` with no action and with an action that raises."""

from __future__ import annotations

import random

import pytest

from model.errors import RuleViolation
from model.truetime import STEP_RULE, Clock, Lock, TimeGenerator, TimeGeneratorConfig


def bad(f, *args, **kw):
    with pytest.raises(RuleViolation) as e:
        f(*args, **kw)
    assert e.value.rule == STEP_RULE
    return e.value.detail


def value_error(f, *args, **kw):
    with pytest.raises(ValueError) as e:
        f(*args, **kw)
    return str(e.value)


def test_constructor_and_request_bounds():
    assert value_error(Lock, latency_ms=-1) == "lock latency must be >= 0"
    assert Lock(latency_ms=0).min_latency_ms == 0
    assert value_error(Lock, latency_ms=5, latency_max_ms=4, rng=random.Random(1)) == \
        "latency_max_ms must be >= latency_ms"
    assert Lock(latency_ms=5, latency_max_ms=5, rng=random.Random(1)).draw_latency() == 5
    assert value_error(Lock, latency_ms=5, latency_max_ms=6) == \
        "a drawn lock latency needs an explicit random.Random (rng)"
    assert value_error(TimeGeneratorConfig, max_expected_skew_ms=-1) == "max_expected_skew_ms must be >= 0"
    assert TimeGeneratorConfig(max_expected_skew_ms=0).max_expected_skew_ms == 0
    assert value_error(TimeGeneratorConfig, resolution_ms=10) == (
        "resolution_ms must be one of (1, 1000) (millisecond or legacy second instants), not 10")
    g = TimeGenerator(TimeGeneratorConfig(use_lock=False))
    assert value_error(g.request, "w1", 0, kind="other") == "kind must be 'generate' or 'consume', not 'other'"
    assert value_error(g.request, "w1", 0, hold_ms=-1) == "hold_ms must be >= 0"
    g.request("w1", 0, hold_ms=0)
    assert bad(g.request, "w1", 0) == "w1: already has a generation in progress (one per process)"
    # the process itself mid-generation is not "another" process: the request refuses it
    assert bad(g.generate, "w1", 0) == "w1: already has a generation in progress (one per process)"
    assert bad(g.generate, "w2", 0) == "w2: sequential call while ['w1'] are mid-generation; use the steps"
    assert bad(g.step, "w3", 0) == "w3: no pending request"


def test_each_step_names_itself_when_too_early():
    g = TimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=10, use_lock=True))
    g.request("w1", 0, kind="consume", hold_ms=4)
    assert bad(g.read, "w1", 0) == "w1: read out of order: next step is acquire"
    g.acquire("w1", 5)
    assert bad(g.read, "w1", 4) == "w1: read at 4 is before its earliest time 5"
    g.read("w1", 5)
    assert bad(g.finish_wait, "w1", 14) == "w1: finish_wait at 14 is before its earliest time 15"
    g.finish_wait("w1", 15)
    assert bad(g.release, "w1", 18) == "w1: release at 18 is before its earliest time 19"
    assert g.release("w1", 19).released_at == 19
    g.request("w2", 19)
    g.request("w3", 19)
    assert bad(g.acquire, "w3", 100) == "w3: acquire is blocked (the lock is held or others are ahead in the queue)"
    assert bad(g.acquire, "w2", 18) == "w2: acquire at 18 is before its earliest time 19"
    assert bad(g.finish_wait, "w9", 0) == "w9: finish_wait without a pending request"
    assert bad(g.release, "w2", 0) == "w2: release out of order: next step is acquire"


def test_sequential_generate_blocked_by_a_foreign_lock_holder():
    g = TimeGenerator(TimeGeneratorConfig(use_lock=True))
    g.lock.holder = "outside"
    assert bad(g.generate, "w1", 0) == "w1: acquire is blocked (the lock is held or others are ahead in the queue)"


def test_release_by_a_process_not_holding_the_lock():
    g = TimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=0, use_lock=True))
    g.request("w1", 0)
    g.acquire("w1", 0)
    g.read("w1", 0)
    g.finish_wait("w1", 0)
    g.lock.holder = "w2"
    assert bad(g.release, "w1", 0) == "w1: release but the lock is held by w2"


def test_error_range_sees_both_sides_of_a_jump_at_the_end():
    c = Clock(drift_ppm=1_000_000, jumps=((10, -100),))  # error(t) = t before 10, t - 100 from 10 on
    assert c.error_range(0, 10) == (-90, 9)
    assert c.error_range(0, 9) == (0, 9)
    assert c.error_range(10, 12) == (-90, -88)  # a jump at the start: only its after side is in range
    assert c.error_range(5, 20) == (-90, 9)
    assert Clock(jumps=((3, 7), (1, 2))).jumps == ((1, 2), (3, 7))


def test_consume_time_without_action_and_with_a_failing_one():
    g = TimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=3, use_lock=True))
    rec, result = g.consume_time("w1", 0)
    assert result is None and rec.kind == "consume" and (rec.read_at, rec.released_at) == (0, 3)
    rec, result = g.consume_time("w1", 10, lambda t: ("made", t), hold_ms=2)
    assert result == ("made", rec.time) and rec.released_at == 15

    def boom(t):
        raise KeyError(t)

    with pytest.raises(KeyError):
        g.consume_time("w2", 20, boom, hold_ms=5)
    # the lock is released as by Java's finally { unlock() }: after the wait and the hold
    assert (g.lock.holder, g.lock.last_released_at, list(g.lock.queue), g.pending) == (None, 28, [], {})
    free = TimeGenerator(TimeGeneratorConfig(use_lock=False))
    with pytest.raises(KeyError):
        free.consume_time("w2", 20, boom)
    assert free.pending == {} and free.lock.last_released_at == 0


def test_acquire_names_itself_when_refused_for_its_phase():
    g = TimeGenerator(TimeGeneratorConfig(use_lock=True))
    assert bad(g.acquire, "w9", 0) == "w9: acquire without a pending request"
    g.request("w1", 0)
    g.acquire("w1", 0)
    assert bad(g.acquire, "w1", 0) == "w1: acquire out of order: next step is read"


def test_a_refused_consume_time_leaves_a_foreign_lock_alone():
    """A sequential ``consume_time`` refused before its request touches no lock it does not hold a request for
    (constructed: the lock's holder set by hand)."""
    g = TimeGenerator(TimeGeneratorConfig(use_lock=True))
    g.request("w2", 0)
    g.lock.holder = "w1"
    assert bad(g.consume_time, "w1", 5) == "w1: sequential call while ['w2'] are mid-generation; use the steps"
    assert (g.lock.holder, g.lock.last_released_at, list(g.lock.queue)) == ("w1", 0, ["w2"])
