"""Hand-written runs of the concurrency machine: one per failure shape of issue #17 and its fix, plus the
behaviours the correct designs rely on (each a design-review reading of :mod:`model.concurrency`)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from model.concurrency import machine as cm
from model.concurrency.oracle import expected
from model.concurrency.state import IDLE
from model.concurrency.variants import VARIANTS


def A(text: str) -> list[tuple[str, str]]:
    """``"w1 generate; c schedule"`` -> actions."""
    return [cm.parse_action(x) for x in text.split(";") if x.strip()]


def run_until_refused(cfg, actions):
    """The states of ``actions`` up to the first one the design refuses, and that refusal (or None)."""
    states = [cm.initial_state(cfg)]
    for a in actions:
        why = cm.refusal(cfg, states[-1], a)
        if why is not None:
            return states, why
        states.append(cm.step(cfg, states[-1], a))
    return states, None


def never_violated(cfg, states) -> bool:
    return all(not cm.violated(cfg, s) for s in states)


W1 = "w1 generate; w1 publish; w1 write; w1 acquire; w1 check; w1 complete"

SHAPES = {
    # OCC without the lock around check + complete: both check before either completes (COW: lost update)
    "occ-no-lock": A("w1 generate; w1 publish; w1 write; w1 acquire; w1 check; w2 generate; w2 publish; w2 write;"
                     " w2 acquire; w2 check; w1 complete; w2 complete"),
    # OCC ignoring a pending plan (tv6): the compaction plans w1's slice, compacts before w1 completes
    "occ-ignores-pending-compaction": A("w1 generate; w1 publish; w1 write; c schedule; w1 acquire; w1 check;"
                                        " c execute; w1 complete; c commit"),
    # NBCC on COW: two base-file rewrites of one group, no conflict check
    "nbcc-cow": A("w1 generate; w1 publish; w1 write; w2 generate; w2 publish; w2 write; w1 acquire; w1 check;"
                  " w1 complete; w2 acquire; w2 check; w2 complete"),
    # NBCC without a bucket index: the same new key inserted into two new file groups
    "nbcc-simple-index": A("w1 generate; w1 publish; w1 write; w2 generate; w2 publish; w2 write; w1 acquire;"
                           " w1 check; w1 complete; w2 acquire; w2 check; w2 complete"),
    # NBCC with EAGER: w2's start rolls back w1's inflight write
    "nbcc-eager": A("w1 generate; w1 publish; w2 generate"),
    # 0.x scheduling while a write is inflight (tv6): the write's log joins the compacted slice
    "single-writer-0.x-no-guard": A("w1 generate; w1 publish; w1 write; c schedule; c execute; w1 acquire; w1 check;"
                                    " w1 complete; c commit"),
    # a cleaner deleting what a pending compaction plan needs
    "clean-ignores-plans": A(W1 + "; c schedule; cl clean"),
    # a cleaner deleting what a savepoint needs
    "clean-ignores-savepoints": A("s savepoint; " + W1 + "; cl clean"),
    # a clustering that commits without its conflict check: the write to the clustered group is hidden
    "clustering-no-check": A("k schedule; w1 generate; w1 publish; w1 write; w1 acquire; w1 check; k execute;"
                             " w1 complete; k commit"),
    # colliding naive times on storage without put-if-absent
    "naive-overwrite": A("w1 generate; w1 publish; w2 generate; w2 publish"),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_failure_shape_and_its_fix(name):
    v = VARIANTS[name]
    cfg = v.config()
    states = cm.run(cfg, SHAPES[name])
    assert set(v.expected) <= cm.violated(cfg, states[-1]) | {inv for s in states for inv in cm.violated(cfg, s)}
    # the fix: the same actions are refused somewhere (a guard, a conflict abort) or run without a violation
    fixed = v.fixed()
    fstates, _ = run_until_refused(fixed, SHAPES[name])
    own = set(v.expected)
    assert all(not (cm.violated(fixed, s) & own) for s in fstates), name


def test_shapes_cover_item4():
    from tests.test_explore_concurrency import ITEM4

    assert ITEM4 <= set(SHAPES)


def test_occ_aborts_the_second_writer_and_keeps_the_first():
    cfg = VARIANTS["occ-cow"].config()
    full = A("w1 generate; w1 publish; w1 write; w2 generate; w2 publish; w2 write; w1 acquire; w1 check;"
             " w1 complete; w2 acquire; w2 check")
    s = cm.run(cfg, full)[-1]
    assert s.proc("w2")[1] == IDLE and s.proc("w2")[3] == 1          # aborted, goes on with its next commit
    t2 = s.tl.instants()[-1].requested_time
    assert t2 in s.dead and not s.tl.get(t2, s.tl.instants()[-1].action).is_completed
    assert not cm.violated(cfg, s) and expected(cfg, s)["k0"] == "w1.0"


def test_the_lock_serialises_check_and_complete():
    cfg = VARIANTS["occ-cow"].config()
    s = cm.run(cfg, A("w2 generate; w2 publish; w2 write; w1 generate; w1 publish; w1 write; w1 acquire"))[-1]
    assert s.lock == "w1"
    assert "held by w1" in cm.refusal(cfg, s, ("w2", "acquire"))
    # without the lock (the flaw) w2 may check while w1 is between check and complete
    broken = VARIANTS["occ-no-lock"].config()
    b = cm.run(broken, A("w2 generate; w2 publish; w2 write; w1 generate; w1 publish; w1 write; w1 acquire; w1 check;"
                         " w2 acquire; w2 check"))[-1]
    assert b.lock is None and b.proc("w1")[1] == b.proc("w2")[1] == "checked"


def test_simple_strategy_aborts_for_a_later_plan_prefer_writer_does_not():
    # w2 commits a log first (something to compact: tv8 plans only logs completed before the plan)
    run = A(W1.replace("w1", "w2") + "; w1 generate; w1 publish; w1 write; c schedule; w1 acquire; w1 check")
    simple = VARIANTS["occ-mor-compaction"].config()
    s = cm.run(simple, run)[-1]
    assert s.proc("w1")[1] == IDLE and s.proc("w1")[3] == 1           # aborted by the pending plan
    prefer = VARIANTS["occ-prefer-writer"].config()
    states = cm.run(prefer, run + A("w1 complete; c execute; c commit"))
    assert len(states[-1].committed) == 2 and never_violated(prefer, states)    # completion-time slicing keeps its log
    assert expected(prefer, states[-1])["k0"] == "w1.0"


def test_0x_guard_refuses_and_names_the_write():
    cfg = VARIANTS["single-writer-0.x"].config()
    s = cm.run(cfg, A("w1 generate; w1 publish; w1 write"))[-1]
    why = cm.refusal(cfg, s, ("c", "schedule"))
    assert why is not None and "Earliest write inflight instant time must be later than compaction time" in why


def test_nbcc_concurrent_appends_merge_by_ordering_field():
    cfg = VARIANTS["nbcc"].config(keys=1, compactions=0)
    run = A("w1 generate; w1 publish; w2 generate; w2 publish; w2 write; w1 write; w2 acquire; w2 check;"
            " w2 complete; w1 acquire; w1 check; w1 complete")
    states = cm.run(cfg, run)
    s = states[-1]
    assert len(s.committed) == 2 and never_violated(cfg, states)
    assert expected(cfg, s)["k0"] == "w2.0"     # w2's instant is later: its value wins though w1 completed last
    rv = s.view().snapshot_read()
    assert len(rv.slices) == 1 and len(rv.slices[0].log_files) == 2


def test_lazy_rolls_back_only_expired_heartbeats():
    cfg = VARIANTS["lazy-crash"].config()
    run = A("w1 generate; w1 publish; w1 write; w1 crash; w2 generate; w2 publish; cl clean")
    states = cm.run(cfg, run)
    s = states[-1]
    t1 = states[2].proc("w1")[2]
    t2 = s.proc("w2")[2]
    assert s.rollbacks == ((t1, False),)                # the crashed write, not w2's live one
    assert s.tl.find(t1) == [] and s.tl.find(t2) and never_violated(cfg, states)


def test_oracle_incremental_catches_a_value_no_commit_wrote():
    """``oracle.incremental`` (and the snapshot) fail on a hand-corrupted state: a committed log holding a value
    its writer did not write."""
    cfg = VARIANTS["nbcc"].config(keys=1, compactions=0, writers=1)
    s = cm.run(cfg, A(W1))[-1]
    assert not cm.violated(cfg, s)
    files = tuple((f, tuple((k, "bogus", o, c) for k, _, o, c in recs) if f.name.startswith(".") else recs)
                  for f, recs in s.files)
    bad = replace(s, files=files)
    assert {"oracle.incremental", "oracle.snapshot"} <= cm.violated(cfg, bad)


def test_oracle_catches_an_uncommitted_value_made_visible():
    """The snapshot oracle fails when a pending write's record is returned (its instant marked committed in the
    history only: the reader does not return it, the oracle expects it)."""
    cfg = VARIANTS["nbcc"].config(keys=1, compactions=0, writers=1)
    s = cm.run(cfg, A("w1 generate; w1 publish; w1 write"))[-1]
    t = s.proc("w1")[2]
    lying = replace(s, committed=((t, "20990101000000000", "w1", (("k0", "w1.0"),)),))
    assert "oracle.snapshot" in cm.violated(cfg, lying)


def test_clustering_simple_aborts_the_writer_prefer_writer_aborts_the_clustering():
    """A write started before a clustering is planned on its file group: the simple strategy aborts the write
    (a pending clustering planned after its start), PreferWriter lets it commit and the clustering aborts at its
    commit and is rolled back; either way nothing committed is lost."""
    run = A("w1 generate; w1 publish; w1 write; k schedule; k execute; w1 acquire; w1 check")
    simple = VARIANTS["occ-clustering"].config(writers=1)
    s = cm.run(simple, run)[-1]
    assert s.proc("w1")[1] == IDLE and not s.committed                  # the writer aborted
    prefer = VARIANTS["occ-prefer-writer-clustering"].config(writers=1)
    states = cm.run(prefer, run + A("w1 complete; k commit"))
    s = states[-1]
    tk = s.cplans[0][0]
    assert len(s.committed) == 1 and s.rollbacks == ((tk, False),)      # the write won, the clustering rolled back
    assert s.tl.find(tk) == [] and never_violated(prefer, states)
    # without the clustering's check the replacecommit hides the group holding the committed write (here the
    # write starts after the plan, so the simple strategy does not abort it)
    broken = VARIANTS["clustering-no-check"].config()
    b = cm.run(broken, SHAPES["clustering-no-check"])[-1]
    assert "oracle.snapshot" in cm.violated(broken, b)
