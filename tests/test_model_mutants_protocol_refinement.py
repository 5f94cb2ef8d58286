"""The spec of the writer-coordinator protocol (model/protocol/*) against the engine, on a budget `make mutate`
can afford per mutant.

properties/test_refinement.py checks that the engine refines the spec with Hypothesis random walks and
exhaustive searches; those cost seconds per design, too much to re-run for each of the protocol's ~2,000
mutants. Here every registered design (``model.protocol.VARIANTS``: the Hudi releases and the broken designs)
gets a small breadth-first lockstep exploration (every reachable state up to a budget, each drained) and a
few seeded random walks, with :class:`properties.refinement.Lockstep` comparing, after every event, the
enabled events, every guard's verdict and reason-or-none, the abstract state and every invariant's verdict.
A mutant of a rule, a guard or an invariant of the spec that changes any of those in the states visited is
caught. Failures print the design, the seed and the event path (replay with
``properties.refinement.check_refines``).
"""

from __future__ import annotations

import random

import pytest

from model.protocol import VARIANTS, spec, variant
from properties.refinement import Lockstep, explore_refinement

BFS_STATES = 10
WALKS, WALK_STEPS = 3, 50


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_spec_and_engine_agree_on_every_state_of_a_small_exploration(name):
    n, why = explore_refinement(variant(name), BFS_STATES)
    assert why is None, f"{name}: {why}"
    assert n == BFS_STATES  # the budget was spent: the exploration was not cut short


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_spec_and_engine_agree_along_seeded_random_walks(name):
    cfg = variant(name)
    steps = 0
    for seed in range(WALKS):
        rng = random.Random(seed)
        run = Lockstep(cfg, seed)
        assert run.compare() is None
        for _ in range(WALK_STEPS):
            evs = spec.enabled(run.spec)
            if not evs:
                break
            why = run.apply(rng.choice(evs))
            assert why is None, f"{name} walk seed {seed}: {why}"
            steps += 1
        why = run.drain()
        assert why is None, f"{name} walk seed {seed} (drained): {why}"
    assert steps >= WALKS * 10, f"{name}: the walks took only {steps} steps"
