"""Focused tests for model.truetime (and the table machine's fixed initial times) that `make mutate` showed
unchecked by the fast tests: which generator a config gets (``HoodieTimeGeneratorConfig``: the skew-adjusting
``SkewAdjustingTimeGenerator`` with a lock, the generic one without), clocks set per process, and the text of
a step-order refusal (it names the process and the step)."""

from __future__ import annotations

import pytest

from model.errors import RuleViolation
from model.truetime import (DEFAULT_EPOCH_MS, STEP_RULE, Clock, Lock, SkewAdjustingTimeGenerator, TimeGenerator,
                            TimeGeneratorConfig, generator_for)


def test_generator_for_picks_the_class_and_passes_every_argument():
    locked = TimeGeneratorConfig(use_lock=True)
    clocks = {"a": Clock(offset_ms=5)}
    lock = Lock()
    g = generator_for(locked, clocks, lock, epoch_ms=1_000, keep_history=False)
    assert type(g) is SkewAdjustingTimeGenerator
    assert (g.config, g.clocks, g.epoch_ms, g.keep_history) == (locked, clocks, 1_000, False) and g.lock is lock
    free = TimeGeneratorConfig(use_lock=False)
    g = generator_for(free)
    assert type(g) is TimeGenerator and g.config is free and g.clocks == {}
    assert (g.epoch_ms, g.keep_history) == (DEFAULT_EPOCH_MS, True)


def test_set_clock_is_per_process():
    g = TimeGenerator()
    c = Clock(offset_ms=-7)
    g.set_clock("b", c)
    assert g.clock("b") is c and g.clock("a") == Clock()


def test_step_order_refusals_name_the_process_and_the_step():
    g = TimeGenerator(TimeGeneratorConfig(use_lock=False))
    with pytest.raises(RuleViolation) as e:
        g.read("w1", 0)
    assert e.value.rule == STEP_RULE and e.value.detail == "w1: read without a pending request"
    g.request("w1", 0)
    with pytest.raises(RuleViolation) as e:
        g.request("w1", 0)
    assert str(e.value) == f"[{STEP_RULE}] w1: already has a generation in progress (one per process)"
    with pytest.raises(RuleViolation) as e:
        g.read("w1", 0)
    assert e.value.detail == "w1: read out of order: next step is acquire"


def test_the_table_machine_starts_from_instants_before_the_generator_epoch():
    from model.table_machine import T_BASE, T_BASE_DONE, T_LOG, T_LOG_DONE, _t
    assert _t(0) == "20250101000000000" and _t(-40) == "20241231235959960" and _t(25) == "20250101000000025"
    assert T_BASE < T_BASE_DONE < T_LOG < T_LOG_DONE < _t(0)


def test_naive_generator_configuration_is_passed_through():
    from model.truetime import NaiveGenerator, TimeGeneratorConfig

    g = NaiveGenerator()
    assert g.config == TimeGeneratorConfig(max_expected_skew_ms=0, use_lock=False, guard=True, resolution_ms=1)
    assert g.config.use_lock is False and g.keep_history is True
    g = NaiveGenerator(epoch_ms=1_000_000_000_000, guard=False, keep_history=False, resolution_ms=1000)
    assert g.config == TimeGeneratorConfig(max_expected_skew_ms=0, use_lock=False, guard=False, resolution_ms=1000)
    assert g.epoch_ms == 1_000_000_000_000 and g.keep_history is False
    rec = g.generate("p", 0)
    assert rec.time.startswith("20010909") and g.history == []  # 1e12 ms after the Unix epoch is 2001-09-09
