"""Invariants of many processes on one timeline (issue #17), over a :class:`model.concurrency.state.ConcState`
and its history variables. The read oracle's verdicts (``oracle.*``) are :func:`model.concurrency.oracle.check`;
this module adds the process-level ones and :func:`concurrency_verdicts` runs them all.

* ``C.occ-serializable`` -- OCC: no two completed writes that mutated a common file group ran concurrently
  (each started before the other completed). The tech spec's "Writer Expectations": under the lock,
  abort if an action completed after the writer's start touched overlapping file groups.
* ``C.lazy-rollback`` -- no rollback took a write whose heartbeat was alive
  (``HoodieFailedWritesCleaningPolicy.LAZY`` + ``HoodieHeartbeatClient#isHeartbeatExpired``; I14, RFC-66).
* ``C.compaction-schedule-0x`` -- single writer with 0.x scheduling: no compaction was scheduled while an
  older write was pending (``ScheduleCompactionActionExecutor`` 0.x: "Earliest write inflight instant
  time must be later than compaction time").
* ``C.clean-safe`` -- the cleaner never deleted a file a pending compaction plan or a savepoint needs
  (``CleanPlanner#isFileSliceNeededForPendingMajorOrMinorCompaction``, ``getSavepointedDataFiles``).
* ``I3.single-writer`` -- every instant's files were written by one process
  (:func:`model.invariants.timeline.check_single_writer`; storage without put-if-absent).
"""

from __future__ import annotations

from . import Verdict
from .timeline import check_single_writer


def _verdict(name: str, bad: list[str]) -> Verdict:
    return Verdict(name, not bad, bad[0] if bad else "", tuple(bad[1:3]))


def check_occ_serializable(settings, state) -> Verdict:
    if settings.mode != "occ":
        return Verdict("C.occ-serializable", True, "not OCC")
    touched = dict(state.touched)
    done = sorted((t, c) for t, c, _, _ in state.committed)
    bad = []
    for i, (ta, ca) in enumerate(done):
        for tb, cb in done[i + 1:]:
            both = touched.get(ta, frozenset()) & touched.get(tb, frozenset())
            if both and ta < cb and tb < ca:
                fgs = ", ".join(sorted(g[1] for g in both))
                bad.append(f"writes {ta} (completed {ca}) and {tb} (completed {cb}) both mutated {fgs} concurrently")
    return _verdict("C.occ-serializable", bad)


def check_lazy_rollback(state) -> Verdict:
    bad = [f"write {t} was rolled back while its writer's heartbeat was alive" for t, was_alive in state.rollbacks
           if was_alive]
    return _verdict("C.lazy-rollback", bad)


def check_compaction_schedule_0x(settings, state) -> Verdict:
    if settings.compaction_scheduling != "0.x" or settings.mode != "single_writer":
        return Verdict("C.compaction-schedule-0x", True, "not 0.x single-writer scheduling")
    bad = [f"compaction {tc} scheduled while write(s) {', '.join(older)} were pending"
           for tc, older in state.unsafe_schedules]
    return _verdict("C.compaction-schedule-0x", bad)


def check_clean_safe(state) -> Verdict:
    bad = [f"clean deleted {', '.join(unsafe)} (needed by a pending plan or a savepoint)"
           for _, _, _, unsafe in state.cleans if unsafe]
    return _verdict("C.clean-safe", bad)


def process_verdicts(settings, state) -> list[Verdict]:
    return [check_occ_serializable(settings, state), check_lazy_rollback(state),
            check_compaction_schedule_0x(settings, state), check_clean_safe(state), check_single_writer(state.tl)]


def concurrency_verdicts(cfg, state) -> list[Verdict]:
    """Every invariant of the concurrency machine at ``state``: the read oracle and the process-level ones."""
    from ..concurrency.oracle import check

    return check(cfg, state) + process_verdicts(cfg.settings, state)


INVARIANTS = ("oracle.snapshot", "oracle.as-of", "oracle.incremental", "oracle.no-duplicate-key",
              "C.occ-serializable", "C.lazy-rollback", "C.compaction-schedule-0x",
              "C.clean-safe", "I3.single-writer")

__all__ = ["concurrency_verdicts", "process_verdicts", "check_occ_serializable", "check_lazy_rollback",
           "check_compaction_schedule_0x", "check_clean_safe", "INVARIANTS"]
