"""Every history invariant is shown able to fail: a broken archiver design breaks it and the machine catches it.

For each (variant, invariant) of :data:`model.archival.VARIANTS` the machine of :mod:`test_history_props` runs the
broken design checking only that invariant, with the fixed seed :data:`test_history_props.SEED`; Hypothesis shrinks
the failing run and the test prints it (``pytest -s`` shows the shortest counterexample and the replay line) and
asserts it is about that invariant. Under the ci profile the run is not shrunk (finding takes well under a second,
shrinking 5-30 s); ``HISTORY_SHRINK=1`` or the deep profile shrinks every case, and
:func:`test_shrinking_shortens_the_counterexample` shrinks one in every run. Hudi's own design runs the same machine without a violation
(``test_history_props.TestHistoryHudi``, same invariants, all of them checked).
"""

from __future__ import annotations

import pytest

from model import archival as A

from .test_history_props import HistoryMachine, find_counterexample, machine_for

#: the machine creates no savepoints (a savepoint shares its commit's requested time); that break is shown on
#: decisions directly (test_archive_past_savepoint_caught)
CASES = [(name, inv) for name, v in A.VARIANTS.items() for inv in v.breaks if name != "archive-past-savepoint"]


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


def test_shrinking_shortens_the_counterexample():
    """Hypothesis shrinks the run to the steps that matter: the shrunk counterexample of the completed-first break
    is shorter than the first failing run found with the same seed."""
    raw = find_counterexample("completed-first", only={"H.completion-found"}, max_examples=600, steps=50,
                              shrink=False)
    short = find_counterexample("completed-first", only={"H.completion-found"}, max_examples=600, steps=50,
                                shrink=True)
    assert raw is not None and short is not None
    assert len(short.steps) < len(raw.steps), (len(short.steps), len(raw.steps))
    assert short.steps[-1].startswith("archiver: delete") and short.steps[-1].endswith(".completed")


def test_archive_past_savepoint_caught():
    """I16.savepoint fails on the decision of the design that ignores savepoints, holds on Hudi's."""
    from model.instant import State, format_millis
    from model.invariants import history as H
    from model.timeline import Timeline

    tl = Timeline(8)
    t = lambda k: format_millis(1_760_000_000_000 + k)  # noqa: E731
    for k in range(40):
        tl.load(t(10 * k), A.Action.COMMIT, {State.REQUESTED, State.INFLIGHT, State.COMPLETED}, t(10 * k + 5))
    tl.load(t(30), A.Action.SAVEPOINT, {State.INFLIGHT, State.COMPLETED}, t(36))
    cfg = A.ArchivalConfig()
    ok = {v.invariant: v for v in H.decision_verdicts(A.decide(tl, cfg), cfg)}
    design = A.VARIANTS["archive-past-savepoint"].design
    bad = {v.invariant: v for v in H.decision_verdicts(A.decide(tl, cfg, design=design), cfg)}
    assert ok["I16.savepoint"].holds and not bad["I16.savepoint"].holds


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
