"""Every indexing invariant is shown able to fail: each broken design of :mod:`model.mdt.variants` is caught
by the seeded random walks of :mod:`test_indexing_props` for every invariant it names (generation only:
the first failing walk is reported with its steps). ``INDEXING_SHRINK=1`` (or :func:`test_shrinking_...`
for one case in every run) lets Hypothesis shrink the walk (``hypothesis.find``) to a counterexample at
most a few steps beyond the explorer's shortest; ``tests/test_explore_indexing.py`` checks the exact
shortest depth by breadth-first search.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import Phase, find, given, seed, settings

from model.invariants.indexing import INVARIANTS
from model.mdt.variants import INDEXING_VARIANTS

from .test_indexing_props import CHOICES, SEED, walk

CASES = [(n, inv) for n, v in INDEXING_VARIANTS.items() for inv in v.expected]


def test_every_invariant_is_broken_by_some_variant():
    assert {inv for _, inv in CASES} == set(INVARIANTS)


@pytest.mark.parametrize("name,invariant", CASES, ids=[f"{n}:{i}" for n, i in CASES])
def test_broken_variant_caught(name, invariant):
    v = INDEXING_VARIANTS[name]
    cfg = v.config()
    if os.environ.get("INDEXING_SHRINK") == "1":
        found = _shrunk(cfg, invariant)
        assert len(found.steps) <= v.depths[invariant] + 4
    else:
        found = _first(cfg, invariant)
    print(f"{name} breaks {found}\n(seed {SEED}; replay: model.mdt.machine.step over these steps)")
    assert found is not None, f"the walks did not catch {name} breaking {invariant}"
    assert found.invariant == invariant and len(found.steps) >= v.depths[invariant]


def _first(cfg, invariant):
    """The first failing walk of a seeded generation-only search (None if 2,000 walks break nothing)."""
    hits = []

    @seed(SEED)
    @settings(max_examples=2000, deadline=None, database=None, phases=[Phase.generate])
    @given(CHOICES)
    def search(choices):
        got = walk(cfg, choices, only={invariant})
        if got is not None:
            hits.append(got)
            raise _Found

    try:
        search()
    except _Found:
        pass
    return hits[0] if hits else None


class _Found(Exception):
    """Stops the search at the first failing walk."""


def _shrunk(cfg, invariant):
    choices = find(CHOICES, lambda c: walk(cfg, c, only={invariant}) is not None,
                   settings=settings(max_examples=3000, database=None, derandomize=True))
    return walk(cfg, choices, only={invariant})


def test_shrinking_reaches_the_shortest_counterexample():
    """Shrinking the no-catchup walk gives the explorer's shortest counterexample length (7 steps)."""
    v = INDEXING_VARIANTS["no-catchup"]
    found = _shrunk(v.config(), "I17.index-equals-rebuild")
    assert len(found.steps) == v.depths["I17.index-equals-rebuild"], found
    assert found.steps[-1] == "i complete" and "i execute" in found.steps
