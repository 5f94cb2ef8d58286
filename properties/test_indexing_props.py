"""Hypothesis random walks over the MDT + async indexer spec (:mod:`model.mdt.machine`).

A walk is a list of choices; each picks one of the actions enabled in the current state (in the spec's
fixed order), so Hypothesis explores interleavings of writers, failures, rollbacks, the indexer (with
timeouts, retries and drops) and the MDT compaction, and shrinks a failing walk to a short one. Every
invariant of :mod:`model.invariants.indexing` is checked after every step. The correct designs of
:mod:`model.mdt.variants` must pass at bounds larger than the exhaustive ones of
``tests/test_explore_indexing.py`` (three writers, failures, timeouts, retries and the MDT compaction at
once); ``test_indexing_broken.py`` shows the same walks catch every broken design.

Seeded (:data:`SEED`); a failure prints the steps and the replay line.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from model.mdt import machine as mm
from model.mdt.variants import INDEXING_VARIANTS

SEED = 18
CHOICES = st.lists(st.integers(min_value=0, max_value=63), min_size=1, max_size=45)


@dataclass
class Violation:
    invariant: str
    detail: str
    steps: list

    def __str__(self) -> str:
        lines = "\n".join(f"  {i:3d}. {s}" for i, s in enumerate(self.steps, start=1))
        return f"{self.invariant}: {self.detail}\n{lines}"


def walk(cfg: mm.IndexingConfig, choices, only: set | None = None) -> Violation | None:
    """Run the walk ``choices`` from the initial state; the first violated invariant (of ``only`` if given)."""
    state = mm.initial_state(cfg)
    steps: list[str] = []
    for c in choices:
        succ = mm.enabled(cfg, state)
        if not succ:
            break
        action, state = succ[c % len(succ)]
        steps.append(mm.format_action(action))
        for v in mm.verdicts(cfg, state):
            if not v.holds and (only is None or v.invariant in only):
                return Violation(v.invariant, v.detail, steps)
    return None


#: the correct designs, at bounds beyond the exhaustive ones
BIG = {
    "hudi-1.x": dict(writers=3, failures=2, timeouts=2, retries=2, mdt_compaction=True, drop=True),
    "rfc45-in-lock": dict(writers=3, failures=1, timeouts=1, retries=1, mdt_compaction=True),
    "hudi-1.x-failures": dict(writers=3, failures=2, timeouts=1, retries=1),
    "hudi-1.x-abort-retry": dict(writers=3, failures=1, mdt_compaction=True),
}


def test_every_correct_variant_is_walked():
    assert set(BIG) == {n for n, v in INDEXING_VARIANTS.items() if not v.expected}


@pytest.mark.parametrize("name", sorted(BIG))
def test_correct_design_holds_every_invariant(name):
    cfg = INDEXING_VARIANTS[name].config(**BIG[name])

    @seed(SEED)
    @settings(max_examples=150, deadline=None)
    @given(CHOICES)
    def check(choices):
        found = walk(cfg, choices)
        assert found is None, (f"{name} broke {found}\nreplay: model.mdt.machine.step over these steps "
                               f"(properties/test_indexing_props.py, seed {SEED})")

    check()


def test_walks_reach_a_built_index_and_an_abort():
    """The walks are not vacuous: some build the index, some abort and retry, some drop it."""
    cfg = INDEXING_VARIANTS["hudi-1.x"].config(**BIG["hudi-1.x"])
    seen = set()
    import random
    rng = random.Random(SEED)
    for _ in range(150):
        state = mm.initial_state(cfg)
        for _ in range(45):
            succ = mm.enabled(cfg, state)
            if not succ:
                break
            action, state = succ[rng.randrange(len(succ))]
            seen.add(state.idx[0])
            seen.add(mm.format_action(action))
    assert {"indexed", "aborted", "dropped", "m compact", "r rollback", "i timeout"} <= seen, sorted(seen)
