"""benchmarks/explore_repeats.py: the census adds up and matches the explorer; the sleep-set searches it measures
visit every state of the plain search (the non-inherited form is the one its docstring proves sound)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import explore_repeats as er  # noqa: E402

BOUND = dict(er.QUICK_BOUND, records=1, max_checkpoints=1)


def test_census_adds_up_and_matches_the_symmetric_explorer():
    from checker import explore
    from checker.symmetry import representative_function

    kinds, states = er.census(BOUND)
    model = er._model(BOUND)
    res = explore(model, compact=True, symmetry=representative_function(model))
    assert states == res.states
    assert sum(c["total"] for c in kinds.values()) == res.transitions
    for kind, c in kinds.items():
        assert c["total"] == c["repeat"] + c["known"] + c["new"], kind
    assert sum(c["new"] for c in kinds.values()) == res.states - 1  # every state but the initial one
    assert sum(c["repeat"] for c in kinds.values()) > 0


@pytest.mark.parametrize("inherit", [False, True])
def test_sleep_sets_visit_every_state_and_prune(inherit):
    states, transitions = er.plain_states(BOUND)
    r = er.sleep_ceiling(BOUND, inherit)
    assert r["states"] == states
    assert r["pruned"] > 0
    assert r["executed"] + r["pruned"] <= transitions
