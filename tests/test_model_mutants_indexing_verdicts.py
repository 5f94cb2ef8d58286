"""Exact verdicts of the metadata-table / async-indexer invariants (model/invariants/indexing.py, I17 and the
MDT.* checks): for every check and each of its violation branches, the smallest state that violates it and the
whole ``Verdict`` (id, holds, the detail a counterexample prints, ``involved``); the holding verdicts exactly, and
the MDT reader's view (``valid_log``, ``reader_view``) the index checks rest on (RFC-45; ``HoodieTableMetadataUtil
#getValidInstantTimestamps``: an MDT log entry is merged only when its data-table instant completed, and a writer's
entry only when its MDT deltacommit completed too).

States are built by hand from the fields the invariants read (``IndexingState`` with two small timelines): no
machine run, no exploration.
"""

from __future__ import annotations

from model.instant import Action, State, format_millis
from model.invariants import Verdict
from model.invariants import indexing as X
from model.mdt import machine as MM
from model.mdt import partitions as P
from model.timeline import Timeline

DC, IDX, RB, COMPACTION = Action.DELTACOMMIT, Action.INDEXING, Action.ROLLBACK, Action.COMPACTION
R, I, C = State.REQUESTED, State.INFLIGHT, State.COMPLETED
DONE, PENDING = {R, I, C}, {R, I}
RI, CS, BF, FILES = P.RECORD_INDEX, P.COLUMN_STATS, P.BLOOM_FILTERS, P.FILES


def t(n: int) -> str:
    return format_millis(1_767_225_600_000 + n)


def timeline(instants) -> Timeline:
    tl = Timeline(8)
    for n, action, states in instants:
        tl.load(t(n), action, states, t(n + 5) if C in states else None)
    return tl


def state(dt=(), mdt_tl=(), *, available=(FILES,), inflight=(), writes=(), mdt=(), plans=(), index_commits=(),
          procs=(), lock=None) -> MM.IndexingState:
    return MM.IndexingState(0, tuple(procs), (MM.IDLE, None, None, (), None, 0, 0), lock,
                            P.PartitionStates(frozenset(available), frozenset(inflight)), tuple(writes), tuple(mdt),
                            tuple(plans), tuple(index_commits), 0, timeline(dt), timeline(mdt_tl))


def w(n: int, *records) -> tuple:
    """A data-table write at t(n) of ``(key, file group)`` records."""
    return (t(n), tuple(records))


def ri(key: str, fg: str) -> tuple:
    return (RI, key, fg)


# ------------------------------------------------------------------------------------------- the MDT reader
def test_reader_view_merges_only_valid_log_entries():
    # t0: completed on both timelines; t10: DT completed, MDT deltacommit pending; t20: DT pending;
    # t30: DT completed, applied by the indexer's catch-up (no MDT deltacommit of its own)
    s = state(dt=[(0, DC, DONE), (10, DC, DONE), (20, DC, PENDING), (30, DC, DONE)],
              mdt_tl=[(0, DC, DONE), (10, DC, PENDING), (20, DC, DONE)],
              mdt=[(RI, frozenset({ri("b", "fg-b")}),
                    ((t(0), "w", frozenset({ri("k0", "fg-0")})), (t(10), "w", frozenset({ri("k1", "fg-1")})),
                     (t(20), "w", frozenset({ri("k2", "fg-2")})), (t(30), "i", frozenset({ri("k3", "fg-3")})),
                     (t(20), "i", frozenset({ri("k4", "fg-4")}))))])
    ok = X.valid_log(s)
    assert [ok(lg) for lg in s.mdt[0][2]] == [True, False, False, True, False]
    assert X.reader_view(s, RI) == frozenset({ri("b", "fg-b"), ri("k0", "fg-0"), ri("k3", "fg-3")})
    assert X.reader_view(s, CS) == frozenset()  # no such MDT partition: nothing read


def test_expected_index_is_the_rebuild_from_completed_writes():
    s = state(dt=[(0, DC, DONE), (10, DC, PENDING), (20, DC, DONE)],
              writes=[w(0, ("k0", "fg-0")), w(10, ("k1", "fg-1")), w(20, ("k2", "fg-2"), ("k0", "fg-3"))])
    assert X.expected_index(s, RI) == frozenset({ri("k0", "fg-0"), ri("k2", "fg-2"), ri("k0", "fg-3")})
    assert X.expected_index(s, CS) == frozenset({(CS, f"fg-0_{t(0)}", t(0)), (CS, f"fg-2_{t(20)}", t(20)),
                                                 (CS, f"fg-3_{t(20)}", t(20))})


# ------------------------------------------------------------------------------- I17.readable-when-completed
def test_readable_when_completed_exact_verdicts():
    built = state(dt=[(0, IDX, DONE), (10, IDX, PENDING)], available=(FILES, RI, CS),
                  index_commits=[(t(0), RI, t(0)), (t(10), CS, t(10))])
    assert X.check_readable_when_completed(built, {FILES, RI}) == Verdict("I17.readable-when-completed", True, "", ())
    # files is initialised with the table: never checked, even when not listed
    assert X.check_readable_when_completed(state(available=()), {FILES}) == Verdict(
        "I17.readable-when-completed", True, "", ())
    # column_stats: its indexing instant is pending; bloom_filters: not available; record_index: built for
    # another partition only
    bad = state(dt=[(0, IDX, DONE), (10, IDX, PENDING)], available=(FILES, CS, RI),
                index_commits=[(t(0), BF, t(0)), (t(10), CS, t(10))])
    assert X.check_readable_when_completed(bad, {FILES, RI, CS, BF}) == Verdict(
        "I17.readable-when-completed", False,
        f"readers use {BF}, {CS}, {RI} before its indexing instant completed", (BF, CS, RI))
    # available but no index commit at all; built but not available
    assert X.check_readable_when_completed(state(available=(FILES, RI)), [RI]) == Verdict(
        "I17.readable-when-completed", False, f"readers use {RI} before its indexing instant completed", (RI,))
    gone = state(dt=[(0, IDX, DONE)], available=(FILES,), index_commits=[(t(0), RI, t(0))])
    assert X.check_readable_when_completed(gone, [RI]) == Verdict(
        "I17.readable-when-completed", False, f"readers use {RI} before its indexing instant completed", (RI,))


# ----------------------------------------------------------------------------------- I17.index-equals-rebuild
def test_index_equals_rebuild_exact_verdicts():
    writes = [w(0, ("k0", "fg-0")), w(10, ("k1", "fg-1")), w(20, ("k2", "fg-2"))]
    dt = [(0, DC, DONE), (10, DC, DONE), (20, DC, PENDING)]
    good = state(dt=dt, mdt_tl=[(0, DC, DONE), (10, DC, DONE)], writes=writes,
                 mdt=[(RI, frozenset({ri("k0", "fg-0")}), ((t(10), "w", frozenset({ri("k1", "fg-1")})),
                                                          (t(20), "w", frozenset({ri("k2", "fg-2")}))))])
    assert X.check_index_equals_rebuild(good, {RI}) == Verdict("I17.index-equals-rebuild", True, "", ())
    assert X.check_index_equals_rebuild(good, set()) == Verdict("I17.index-equals-rebuild", True, "", ())
    # record_index misses k1 (its writer's MDT deltacommit is pending) and holds an uncommitted k9;
    # column_stats misses everything (no partition); files only misses
    bad = state(dt=dt, mdt_tl=[(0, DC, DONE), (10, DC, PENDING)], writes=writes,
                mdt=[(RI, frozenset({ri("k0", "fg-0"), ri("k9", "fg-9")}),
                      ((t(10), "w", frozenset({ri("k1", "fg-1")})),)),
                     (FILES, frozenset({(FILES, f"fg-0_{t(0)}", t(0))}), ())])
    cs = sorted(X.expected_index(bad, CS))
    assert X.check_index_equals_rebuild(bad, {RI, CS, FILES}) == Verdict(
        "I17.index-equals-rebuild", False,
        f"{CS} misses {cs}; {FILES} misses {[(FILES, f'fg-1_{t(10)}', t(10))]}; "
        f"{RI} misses {[ri('k1', 'fg-1')]}; {RI} holds uncommitted {[ri('k9', 'fg-9')]}", (CS, FILES, RI))
    only_extra = state(dt=dt, writes=writes[:1], mdt=[(RI, frozenset({ri("k0", "fg-0"), ri("k9", "fg-9")}), ())])
    assert X.check_index_equals_rebuild(only_extra, [RI]) == Verdict(
        "I17.index-equals-rebuild", False, f"{RI} holds uncommitted {[ri('k9', 'fg-9')]}", (RI,))


# ----------------------------------------------------------------------------------- I17.writers-not-blocked
def test_writers_not_blocked_exact_verdicts():
    procs = [("w1", MM.WRITTEN, t(10), None), ("w2", MM.IDLE, None, None), ("w3", MM.WRITTEN, t(20), None),
             ("rb", MM.WRITTEN, t(30), None)]
    writers = ("w1", "w2", "w3")
    assert X.check_writers_not_blocked(state(procs=procs, lock="w1"), writers, "idx") == Verdict(
        "I17.writers-not-blocked", True, "", ("w1", "w3"))
    assert X.check_writers_not_blocked(state(procs=procs), writers, "idx") == Verdict(
        "I17.writers-not-blocked", True, "", ("w1", "w3"))
    assert X.check_writers_not_blocked(state(procs=procs, lock="idx"), writers, "idx") == Verdict(
        "I17.writers-not-blocked", False,
        "the indexer holds the table lock between steps; writers waiting to commit: ['w1', 'w3']", ("w1", "w3"))
    assert X.check_writers_not_blocked(state(procs=procs[1:2], lock="idx"), writers, "idx") == Verdict(
        "I17.writers-not-blocked", False,
        "the indexer holds the table lock between steps; writers waiting to commit: none yet", ())


# ------------------------------------------------------------------------------------ I17.abort-leaves-no-trace
def test_abort_leaves_no_trace_exact_verdicts():
    plans = [(t(0), CS, t(0)), (t(10), RI, t(10))]
    traced = state(dt=[(0, IDX, DONE), (10, IDX, {R})], available=(FILES, CS), inflight=(RI,),
                   mdt=[(RI, frozenset(), ()), (CS, frozenset(), ())], plans=plans)
    assert X.check_abort_leaves_no_trace(traced, False) == Verdict("I17.abort-leaves-no-trace", True)
    assert X.check_abort_leaves_no_trace(state(inflight=(RI,)), True) == Verdict("I17.abort-leaves-no-trace", True)
    # the last plan is the aborted one
    assert X.check_abort_leaves_no_trace(traced, True) == Verdict(
        "I17.abort-leaves-no-trace", False,
        f"{RI} still in the table config; MDT partition {RI} still has files; indexing instant {t(10)} still on "
        "the timeline", (t(10), RI))
    clean = state(dt=[(0, IDX, DONE)], available=(FILES, CS), mdt=[(CS, frozenset(), ())], plans=plans)
    assert X.check_abort_leaves_no_trace(clean, True) == Verdict("I17.abort-leaves-no-trace", True, "", ())
    each = [(state(available=(FILES, RI), plans=plans), f"{RI} still in the table config"),
            (state(inflight=(RI,), plans=plans), f"{RI} still in the table config"),
            (state(mdt=[(RI, frozenset(), ())], plans=plans), f"MDT partition {RI} still has files"),
            (state(dt=[(10, IDX, PENDING)], plans=plans), f"indexing instant {t(10)} still on the timeline")]
    for s, why in each:
        assert X.check_abort_leaves_no_trace(s, True) == Verdict("I17.abort-leaves-no-trace", False, why, (t(10), RI))


# ------------------------------------------------------------------------------------------ MDT.table-config
def test_table_config_exact_verdicts():
    mdt = [(FILES, frozenset(), ()), (RI, frozenset(), ()), (CS, frozenset(), ())]
    ok = state(dt=[(10, IDX, {R})], available=(FILES, CS), inflight=(RI,), mdt=mdt, plans=[(t(10), RI, t(10))])
    assert X.check_table_config(ok) == Verdict("MDT.table-config", True, "")
    assert X.check_table_config(state(mdt=mdt[:1])) == Verdict("MDT.table-config", True, "")
    both = state(dt=[(10, IDX, {R})], available=(FILES, RI, CS), inflight=(RI, CS), mdt=mdt,
                 plans=[(t(10), RI, t(10)), (t(10), CS, t(10))])
    assert X.check_table_config(both) == Verdict("MDT.table-config", False,
                                                 f"{sorted([CS, RI])} both available and inflight")
    no_files = state(dt=[(10, IDX, {R})], available=(FILES, BF), inflight=(RI,), mdt=mdt[:1],
                     plans=[(t(10), RI, t(10))])
    assert X.check_table_config(no_files) == Verdict(
        "MDT.table-config", False, f"{BF} listed without MDT files; {RI} listed without MDT files")
    # inflight without a pending indexing instant for it: none at all, a completed one, one for another partition
    for dt, plans in (([], []), ([(10, IDX, DONE)], [(t(10), RI, t(10))]),
                      ([(10, IDX, {R})], [(t(10), CS, t(10))]), ([(10, IDX, {R})], [(t(20), RI, t(20))])):
        s = state(dt=dt, inflight=(RI,), mdt=mdt, plans=plans)
        assert X.check_table_config(s) == Verdict("MDT.table-config", False,
                                                  f"{RI} inflight with no pending indexing instant"), (dt, plans)
    everything = state(available=(FILES, RI), inflight=(RI,), mdt=mdt[:1])
    assert X.check_table_config(everything) == Verdict(
        "MDT.table-config", False, f"{[RI]} both available and inflight; {RI} listed without MDT files; "
                                   f"{RI} inflight with no pending indexing instant")


# -------------------------------------------------------------------------------------------- MDT.mirrors-dt
def test_mirrors_dt_exact_verdicts():
    ok = state(dt=[(0, DC, DONE), (10, RB, DONE), (20, DC, PENDING), (30, Action.CLEAN, DONE)],
               mdt_tl=[(0, DC, DONE), (10, DC, DONE), (20, DC, DONE), (40, COMPACTION, DONE)])
    assert X.check_mirrors_dt(ok) == Verdict("MDT.mirrors-dt", True, "")
    bad = state(dt=[(0, DC, DONE), (10, RB, DONE), (20, DC, DONE), (50, IDX, DONE)],
                mdt_tl=[(0, DC, PENDING), (20, DC, DONE), (30, DC, PENDING), (35, DC, DONE), (40, COMPACTION, DONE)])
    assert X.check_mirrors_dt(bad) == Verdict(
        "MDT.mirrors-dt", False,
        f"DT {t(0)}.deltacommit completed without its MDT deltacommit; "
        f"DT {t(10)}.rollback completed without its MDT deltacommit; "
        f"MDT deltacommit {t(30)} has no data-table instant; MDT deltacommit {t(35)} has no data-table instant")


# --------------------------------------------------------------------------------------------------- all six
def test_indexing_verdicts_are_the_six_checks_in_order():
    s = MM.initial_state(MM.IndexingConfig())
    vs = X.indexing_verdicts(s, readable={FILES}, writers=("w1",), indexer="idx", aborted=False)
    assert tuple(v.invariant for v in vs) == X.INVARIANTS == (
        "I17.readable-when-completed", "I17.index-equals-rebuild", "I17.writers-not-blocked",
        "I17.abort-leaves-no-trace", "MDT.table-config", "MDT.mirrors-dt")
    assert vs == [Verdict("I17.readable-when-completed", True, "", ()), Verdict("I17.index-equals-rebuild", True, "", ()),
                  Verdict("I17.writers-not-blocked", True, "", ()), Verdict("I17.abort-leaves-no-trace", True),
                  Verdict("MDT.table-config", True, ""), Verdict("MDT.mirrors-dt", True, "")]
    # each argument reaches its check
    broken = state(dt=[(0, DC, DONE), (10, IDX, {R})], available=(FILES, RI), inflight=(CS,),
                   writes=[w(0, ("k0", "fg-0"))], procs=[("w1", MM.WRITTEN, t(20), None)], lock="idx",
                   plans=[(t(10), CS, t(10))], mdt=[(CS, frozenset(), ())])
    got = X.indexing_verdicts(broken, readable={RI}, writers=("w1",), indexer="idx", aborted=True)
    assert got == [
        X.check_readable_when_completed(broken, {RI}), X.check_index_equals_rebuild(broken, {RI}),
        X.check_writers_not_blocked(broken, ("w1",), "idx"), X.check_abort_leaves_no_trace(broken, True),
        X.check_table_config(broken), X.check_mirrors_dt(broken)]
    assert [v.holds for v in got] == [False] * 6
    assert X.indexing_verdicts(broken, readable=set(), writers=(), indexer="other", aborted=False)[:4] == [
        Verdict("I17.readable-when-completed", True, "", ()), Verdict("I17.index-equals-rebuild", True, "", ()),
        Verdict("I17.writers-not-blocked", True, "", ()), Verdict("I17.abort-leaves-no-trace", True)]
