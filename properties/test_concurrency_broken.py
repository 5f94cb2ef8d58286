"""Every concurrency invariant is shown able to fail: each broken design of :mod:`model.concurrency.variants`
breaks the invariants it names and Hypothesis (random interleavings, seed :data:`test_concurrency_props.SEED`)
finds a run that shows it (shrunk under the deep profile or ``CONCURRENCY_SHRINK=1``, and in
:func:`test_shrinking_shortens_the_counterexample` always); the run replays through the spec to the same violation. The correct
designs run the same machine without a violation (``test_concurrency_props``).
"""

from __future__ import annotations

import pytest

from model.concurrency import machine as cm
from model.concurrency.variants import VARIANTS
from model.invariants.concurrency import INVARIANTS

from .test_concurrency_props import find_counterexample, replay_line, shrink_default

CASES = [(n, inv) for n, v in VARIANTS.items() for inv in v.expected]


def test_every_invariant_is_broken_by_some_variant():
    """Each invariant id of the machine is named by a broken variant, so none is a check that cannot fail
    (``oracle.incremental`` is shown by hand-made states in tests/test_concurrency_scenarios.py)."""
    named = {inv for _, inv in CASES}
    assert set(INVARIANTS) - named == {"oracle.incremental"}


@pytest.mark.parametrize("name,invariant", CASES, ids=[f"{n}:{i}" for n, i in CASES])
def test_broken_variant_caught(name, invariant):
    found = find_counterexample(name, {invariant})
    assert found is not None, f"Hypothesis did not find {name} breaking {invariant}"
    actions, verdicts = found
    print(f"{name} breaks {invariant} in {len(actions)} steps: {[cm.format_action(a) for a in actions]}\n"
          f"replay: {replay_line(name, {}, actions)}")
    assert invariant in {v.invariant for v in verdicts}
    cfg = VARIANTS[name].config()
    states = cm.run(cfg, actions)
    assert invariant in cm.violated(cfg, states[-1])
    assert len(actions) >= VARIANTS[name].depths[invariant]          # explore's is a shortest one
    if shrink_default():  # shrunk: at most a few steps more than the shortest counterexample explore finds
        assert len(actions) <= VARIANTS[name].depths[invariant] + 4


def test_shrinking_shortens_the_counterexample():
    """Hypothesis shrinks a run to the steps that matter (the same seed, with and without shrinking)."""
    raw = find_counterexample("occ-no-lock", {"C.occ-serializable"}, shrink=False)
    short = find_counterexample("occ-no-lock", {"C.occ-serializable"}, shrink=True)
    assert raw is not None and short is not None
    assert len(short[0]) <= len(raw[0]) and len(short[0]) <= VARIANTS["occ-no-lock"].depths["C.occ-serializable"] + 4
