"""Hypothesis over the concurrency machine (:mod:`model.concurrency.machine`): random interleavings of writers,
compactor, cleaner, savepoint and crashes, every invariant (read oracle + process invariants) checked after
every step.

A run is a list of choices; choice ``i`` picks the ``i mod n``-th of the ``n`` enabled actions
(:func:`walk`), so Hypothesis shrinks a failing run to a short list of actions. Seeded (:data:`SEED`); a
failure prints the actions and the line that replays it (``model.concurrency.machine.run``). The correct
designs run at bounds larger than ``explore``'s (two commits per writer, a crash, a clean);
``test_concurrency_broken.py`` shows each broken design caught.
"""

from __future__ import annotations

import os
from random import Random

import pytest
from hypothesis import HealthCheck, Phase, find, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from model.concurrency import machine as cm
from model.concurrency.variants import VARIANTS

SEED = 17017
STEPS = 40

#: Correct designs and the larger bounds the suite runs them at.
BIGGER = {
    "occ-cow": {"commits": 2, "crashes": 1, "cleans": 1, "clean_policy": "KEEP_LATEST_COMMITS"},
    "occ-mor-compaction": {"commits": 2, "crashes": 1, "cleans": 1},
    "occ-prefer-writer": {"commits": 2},
    "occ-0.x-compaction": {"writers": 2, "commits": 2},
    "nbcc": {"commits": 2, "crashes": 1, "cleans": 1, "keys": 3, "buckets": 2},
    "single-writer-0.x": {"commits": 3, "compactions": 2},
    "single-writer-1.x": {"commits": 3, "compactions": 2, "cleans": 2, "clean_policy": "KEEP_LATEST_FILE_VERSIONS"},
    "lazy-crash": {"commits": 2, "crashes": 2, "cleans": 2},
    "clean-keeps-plans": {"commits": 2, "compactions": 2, "cleans": 2, "savepoint": True},
    "clean-keeps-savepoints": {"commits": 3, "cleans": 2},
    "clean-latest-commits": {"commits": 2, "cleans": 2},
    "occ-clustering": {"commits": 2},
    "occ-prefer-writer-clustering": {"commits": 2, "crashes": 1, "cleans": 1},
}


def test_every_correct_design_runs_here():
    assert set(BIGGER) == {n for n, v in VARIANTS.items() if not v.expected}


def walk(cfg, choices) -> tuple[list, list]:
    """The actions and states of the run ``choices`` describes (stops where nothing is enabled)."""
    state = cm.initial_state(cfg)
    actions, states = [], [state]
    for c in choices:
        succ = cm.enabled(cfg, state)
        if not succ:
            break
        action, state = succ[c % len(succ)]
        actions.append(action)
        states.append(state)
    return actions, states


def replay_line(name: str, overrides: dict, actions) -> str:
    acts = ", ".join(repr(a) for a in actions)
    return (f"model.concurrency.machine.run(model.concurrency.variants.VARIANTS[{name!r}].config(**{overrides!r}), "
            f"[{acts}])")


def first_violation(cfg, states, only=None):
    for i, s in enumerate(states):
        bad = [v for v in cm.verdicts(cfg, s) if not v.holds and (only is None or v.invariant in only)]
        if bad:
            return i, bad
    return None


@pytest.mark.parametrize("name", sorted(BIGGER))
def test_correct_designs_hold_every_invariant(name):
    assert not VARIANTS[name].expected
    cfg = VARIANTS[name].config(**BIGGER[name])

    @seed(SEED)
    @settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
    @given(st.lists(st.integers(0, 63), max_size=STEPS))
    def run(choices):
        actions, states = walk(cfg, choices)
        bad = first_violation(cfg, states)
        if bad is not None:
            i, verdicts = bad
            raise AssertionError(f"{name}: {verdicts[0]} after {i} step(s): {[cm.format_action(a) for a in actions[:i]]}"
                                 f"\nreplay: {replay_line(name, BIGGER[name], actions[:i])}")

    run()


def shrink_default() -> bool:
    """Shrink counterexamples under the deep profile or with ``CONCURRENCY_SHRINK=1`` (the ci profile finds
    without shrinking: finding takes well under a second, shrinking seconds per case)."""
    return os.environ.get("CONCURRENCY_SHRINK") == "1" or os.environ.get("HYPOTHESIS_PROFILE") == "deep"


def find_counterexample(name: str, only: set, *, max_examples: int = 400, steps: int = STEPS, overrides=None,
                        shrink: bool | None = None):
    """Hypothesis's failing run of variant ``name`` violating one of ``only`` -- shrunk to a shortest one when
    ``shrink`` (default :func:`shrink_default`) -- as (actions up to the violation, verdicts), or None when
    none was found in ``max_examples`` runs (seed :data:`SEED`)."""
    if shrink is None:
        shrink = shrink_default()
    cfg = VARIANTS[name].config(**(overrides or {}))

    def fails(choices):
        _, states = walk(cfg, choices)
        return first_violation(cfg, states, only) is not None

    try:
        choices = find(st.lists(st.integers(0, 63), max_size=steps), fails,
                       settings=settings(max_examples=max_examples, database=None, deadline=None,
                                         suppress_health_check=list(HealthCheck),
                                         phases=[Phase.generate, Phase.shrink] if shrink else [Phase.generate]),
                       random=Random(SEED))
    except NoSuchExample:
        return None
    actions, states = walk(cfg, choices)
    i, bad = first_violation(cfg, states, only)
    return actions[:i], bad


def test_walk_is_deterministic_and_replays():
    cfg = VARIANTS["nbcc"].config(commits=2)
    choices = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4]
    a1, s1 = walk(cfg, choices)
    a2, s2 = walk(cfg, choices)
    assert a1 == a2 and [s.fingerprint() for s in s1] == [s.fingerprint() for s in s2]
    assert [s.fingerprint() for s in cm.run(cfg, a1)] == [s.fingerprint() for s in s1]
