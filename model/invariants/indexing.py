"""Invariants of the metadata table and the asynchronous indexer (I17 of ``hudi-semantics.md`` §8, and more).

Pure predicates over a :class:`model.mdt.machine.IndexingState` (read through its fields only: the
data-table timeline ``dt``, the MDT timeline ``mdt_tl``, the table config ``parts``, the MDT partitions
``mdt``, the writes ``writes``, the plans and index commit metadata). Each returns a
:class:`model.invariants.Verdict`; :func:`indexing_verdicts` runs them all.

=================================  ===============================================================================
id                                 holds when
=================================  ===============================================================================
``I17.readable-when-completed``    every partition readers use (``files`` aside, initialised with the table) is
                                   in ``hoodie.table.metadata.partitions`` and its indexing instant completed
``I17.index-equals-rebuild``       every partition readers use holds exactly the index a rebuild from scratch
                                   would (every committed file/record indexed, nothing uncommitted)
``I17.writers-not-blocked``        no state (between steps) has the table lock held by the indexer: writers wait
                                   for it at most inside one of its short lock sections (schedule, one catch-up
                                   apply, complete)
``I17.abort-leaves-no-trace``      after an abort the partition is in neither table-config list, has no MDT
                                   files, and the indexing instant is gone from the timeline
``MDT.table-config``               the two lists are disjoint, each listed partition has MDT files, and an
                                   inflight partition has a pending indexing instant
``MDT.mirrors-dt``                 every completed data-table deltacommit/rollback has a completed MDT
                                   deltacommit of the same time (the DT commit completes only after its MDT
                                   update), and no MDT deltacommit outlives its rolled-back DT instant
=================================  ===============================================================================

A retry after an abort reaches the same index: ``I17.index-equals-rebuild`` holds in every state, those
after a retried build included (``tests/test_indexing_scenarios.py`` walks one).
"""

from __future__ import annotations

from ..instant import Action
from ..mdt import partitions as P
from . import Verdict

DC, IDX, RB = Action.DELTACOMMIT, Action.INDEXING, Action.ROLLBACK


def valid_log(state):
    """A predicate on MDT log entries ``(t, source, entries)``: whether an MDT reader merges it
    (:func:`model.mdt.partitions.valid_instants`: its data-table instant completed; a writer's entry also
    needs its MDT deltacommit completed)."""
    done = P.valid_instants(i.requested_time for i in state.dt.completed())

    def ok(lg) -> bool:
        t, source, _ = lg
        if t not in done:
            return False
        if source == "w":
            m = state.mdt_tl.get(t, DC)
            return m is not None and m.is_completed
        return True
    return ok


def reader_view(state, partition: str) -> frozenset:
    """What an MDT reader of ``partition`` returns: its base plus its valid log entries."""
    part = next((m for m in state.mdt if m[0] == partition), None)
    if part is None:
        return frozenset()
    ok = valid_log(state)
    out = set(part[1])
    for lg in part[2]:
        if ok(lg):
            out |= lg[2]
    return frozenset(out)


def expected_index(state, partition: str) -> frozenset:
    """The index rebuilt from scratch from the data table (:func:`model.mdt.partitions.rebuild`)."""
    done = [i.requested_time for i in state.dt.completed()]
    return P.rebuild(partition, dict(state.writes), done)


def check_readable_when_completed(state, readable) -> Verdict:
    bad = []
    completed = {i.requested_time for i in state.dt.completed([IDX])}
    for p in sorted(readable):
        if p == P.FILES:
            continue
        built = any(pp == p and ti in completed for ti, pp, _ in state.index_commits)
        if p not in state.parts.available or not built:
            bad.append(p)
    return Verdict("I17.readable-when-completed", not bad,
                   f"readers use {', '.join(bad)} before its indexing instant completed" if bad else "",
                   tuple(bad))


def check_index_equals_rebuild(state, readable) -> Verdict:
    problems, involved = [], []
    for p in sorted(readable):
        have, want = reader_view(state, p), expected_index(state, p)
        missing, extra = sorted(want - have), sorted(have - want)
        if missing:
            problems.append(f"{p} misses {missing}")
        if extra:
            problems.append(f"{p} holds uncommitted {extra}")
        if missing or extra:
            involved.append(p)
    return Verdict("I17.index-equals-rebuild", not problems, "; ".join(problems), tuple(involved))


def check_writers_not_blocked(state, writers, indexer: str) -> Verdict:
    waiting = [n for n, ph, _, _ in state.procs if n in writers and ph == "written"]
    held = state.lock == indexer
    return Verdict("I17.writers-not-blocked", not held,
                   f"the indexer holds the table lock between steps; writers waiting to commit: {waiting or 'none yet'}"
                   if held else "", tuple(waiting))


def check_abort_leaves_no_trace(state, aborted: bool) -> Verdict:
    if not aborted or not state.plans:
        return Verdict("I17.abort-leaves-no-trace", True)
    ti, p, _ = state.plans[-1]
    trace = []
    if p in state.parts.available or p in state.parts.inflight:
        trace.append(f"{p} still in the table config")
    if any(m[0] == p for m in state.mdt):
        trace.append(f"MDT partition {p} still has files")
    if state.dt.get(ti, IDX) is not None:
        trace.append(f"indexing instant {ti} still on the timeline")
    return Verdict("I17.abort-leaves-no-trace", not trace, "; ".join(trace), (ti, p) if trace else ())


def check_table_config(state) -> Verdict:
    problems = []
    both = state.parts.available & state.parts.inflight
    if both:
        problems.append(f"{sorted(both)} both available and inflight")
    have = {m[0] for m in state.mdt}
    for p in sorted(state.parts.available | state.parts.inflight):
        if p not in have:
            problems.append(f"{p} listed without MDT files")
    pending = [i.requested_time for i in state.dt.pending([IDX])]
    for p in sorted(state.parts.inflight):
        if not any(ti in pending and pp == p for ti, pp, _ in state.plans):
            problems.append(f"{p} inflight with no pending indexing instant")
    return Verdict("MDT.table-config", not problems, "; ".join(problems))


def check_mirrors_dt(state) -> Verdict:
    problems = []
    for i in state.dt.completed([DC, RB]):
        m = state.mdt_tl.get(i.requested_time, DC)
        if m is None or not m.is_completed:
            problems.append(f"DT {i.requested_time}.{i.action.value} completed without its MDT deltacommit")
    for m in state.mdt_tl.instants():
        if m.action is DC and not state.dt.find(m.requested_time):
            problems.append(f"MDT deltacommit {m.requested_time} has no data-table instant")
    return Verdict("MDT.mirrors-dt", not problems, "; ".join(problems))


def indexing_verdicts(state, *, readable, writers, indexer: str, aborted: bool) -> list[Verdict]:
    """Every invariant of this module on one state."""
    return [
        check_readable_when_completed(state, readable),
        check_index_equals_rebuild(state, readable),
        check_writers_not_blocked(state, writers, indexer),
        check_abort_leaves_no_trace(state, aborted),
        check_table_config(state),
        check_mirrors_dt(state),
    ]


INVARIANTS = ("I17.readable-when-completed", "I17.index-equals-rebuild", "I17.writers-not-blocked",
              "I17.abort-leaves-no-trace", "MDT.table-config", "MDT.mirrors-dt")

__all__ = ["valid_log", "reader_view", "expected_index", "indexing_verdicts", "INVARIANTS",
           "check_readable_when_completed", "check_index_equals_rebuild", "check_writers_not_blocked",
           "check_abort_leaves_no_trace", "check_table_config", "check_mirrors_dt"]
