"""Every history invariant is shown able to fail: a broken archiver design breaks it and the machine catches it.

For each (variant, invariant) of :data:`model.archival.VARIANTS` the machine of :mod:`test_history_props` runs the
broken design checking only that invariant, with the fixed seed :data:`test_history_props.SEED`; Hypothesis shrinks
the failing run and the test prints it (``pytest -s`` shows the shortest counterexample and the replay line) and
asserts it is about that invariant. Hudi's own design runs the same machine without a violation
(``test_history_props.TestHistoryHudi``).
"""

from __future__ import annotations

import pytest

from model import archival as A

from .test_history_props import HistoryMachine, find_counterexample, machine_for

CASES = [(name, inv) for name, v in A.VARIANTS.items() for inv in v.breaks]


def test_every_broken_variant_names_invariants():
    """Each broken design names at least one invariant; Hudi's names none."""
    assert A.VARIANTS["hudi"].breaks == ()
    assert all(v.breaks for n, v in A.VARIANTS.items() if n != "hudi")
    assert {inv for _, inv in CASES} >= {"I15.version-is-latest", "I15.compaction-shape", "I16.delete-order",
                                         "I16.before-earliest-pending", "H.completion-found", "H.reads-preserved",
                                         "H.no-write-lost"}


@pytest.mark.parametrize("name,invariant", CASES, ids=[f"{n}:{i}" for n, i in CASES])
def test_broken_variant_caught(name, invariant):
    found = find_counterexample(name, only={invariant}, max_examples=600, steps=50)
    assert found is not None, f"the machine did not catch {name} breaking {invariant}"
    assert found.invariant == invariant and found.design == name
    assert found.steps, "a counterexample lists its steps"


def test_hudi_design_not_caught():
    """Hudi's design under the same seed and bounds: no invariant fails (the suite is not crying wolf)."""
    assert find_counterexample("hudi", max_examples=60, steps=40) is None


def test_machine_detects_a_corrupted_lsm_directly():
    """The invariant check itself fails on a hand-made bad state (the check can fail, not only the variants)."""
    from model import lsm
    m = machine_for("hudi")()
    for _ in range(6):
        m.write_and_complete("fg1")
        while m.hs.job:
            m.archive_step()
    assert m.hs.lsm.manifests
    bad = lsm.LSMState(m.hs.lsm.files, m.hs.lsm.manifests, m.hs.lsm.version + 5, True, ())
    m.hs = A.HistoryState(m.hs.active, bad, (), (), 8)
    with pytest.raises(AssertionError, match="I15.version-is-latest"):
        m.history_holds()
    assert isinstance(m, HistoryMachine)
