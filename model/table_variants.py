"""Named designs of the table machine (:mod:`model.table_machine`): correct ones and broken ones.

Each :class:`TableVariant` is a set of :class:`~model.table_machine.TableConfig` fields with a
description and ``expected``: the invariants it is known to break (empty: it should hold every
invariant at its bound) and, per invariant, the length of the shortest counterexample derived by
hand (``depths``) -- ``tests/test_explore_table.py`` asserts that the explorer finds exactly these.
Issue #15 items 4-9 (``tests/test_fidelity_*.py`` show each on a hand-written run).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .table_machine import MISSES_ONE, NAIVE, NO_COMMAND_BLOCK, TWO_STEP, TableConfig
from .timeline import OVERWRITE


@dataclass(frozen=True)
class TableVariant:
    name: str
    description: str
    overrides: dict = field(default_factory=dict)
    expected: tuple = ()   # invariant ids it breaks (empty: it should hold all)
    depths: dict = field(default_factory=dict)  # invariant -> length of the shortest counterexample

    def config(self, **extra) -> TableConfig:
        d = dict(self.overrides)
        d.update(extra)
        return TableConfig(**d)


_V = [
    # ------------------------------------------------------------------ correct designs
    TableVariant("hudi-1.x",
                 "Hudi 1.x on a table version 8: TrueTime (lock, read, wait >= skew), the requested file "
                 "created in the generating lock section, put-if-absent storage, completion-time slicing, "
                 "a plan lookup that sees every completed deltacommit.",
                 {"table_version": 8, "writers": 2, "clock_offsets_ms": (1, 0, 0)}),
    TableVariant("hudi-1.x-two-step",
                 "Table version 8 with the requested file published after the generating lock section "
                 "(a compaction may be scheduled in between): completion-time slicing puts the late log "
                 "in the compaction's slice (HUDI-8464), nothing is lost.",
                 {"table_version": 8, "publish": TWO_STEP, "writers": 2, "clock_offsets_ms": (1, 0, 0)}),
    TableVariant("hudi-0.x-locked",
                 "Table version 6 (instant-time slicing) with one lock around generate + publish: the 0.x "
                 "scheduling guard sees every write older than the compaction.",
                 {"table_version": 6, "writers": 2, "clock_offsets_ms": (1, 0, 0)}),
    # ------------------------------------------------------------------ broken designs
    TableVariant("tv6-two-step",
                 "Item 4: table version 6 with the requested file published after the time was generated. "
                 "A compaction generates a later time and is scheduled in between (the 0.x guard cannot see "
                 "the unpublished write); the write's log joins the slice the plan already compacted and no "
                 "snapshot reads it once the compaction completes.",
                 {"table_version": 6, "publish": TWO_STEP}, ("I8.snapshot-completeness",),
                 {"I8.snapshot-completeness": 6}),
    TableVariant("tv6-rollback-no-command-block",
                 "Item 6: table version 6 whose rollback of a failed deltacommit deletes its instant but writes "
                 "no ROLLBACK command block into the shared slice: a compaction scheduled afterwards plans the "
                 "log that still holds the failed write's data block, so the compacted base may hold data the "
                 "table does not (I9 by blocks).",
                 {"table_version": 6, "failures": 1, "rollback": NO_COMMAND_BLOCK}, ("I9.compaction-plan",),
                 {"I9.compaction-plan": 5}),
    TableVariant("tv8-plan-misses-one",
                 "Item 5: table version 8 whose compaction planner's completion-time lookup misses the most "
                 "recently completed deltacommit: the plan leaves its log out, completion-time slicing keeps "
                 "the log in the compacted slice, and the compaction's base file does not hold it.",
                 {"table_version": 8, "plan_lookup": MISSES_ONE}, ("I8.snapshot-completeness",),
                 {"I8.snapshot-completeness": 5}),
    TableVariant("naive-overwrite",
                 "Item 7: two writers with the 0.x naive generator (no lock, no wait) on object storage "
                 "without put-if-absent: both read the same millisecond, both create the instant, the "
                 "second create silently replaces the first. Without TrueTime's lock a completion time can "
                 "also equal another instant's requested time (w1 completes in the millisecond w2 starts).",
                 {"generator": NAIVE, "storage": OVERWRITE, "writers": 2, "compaction": False},
                 ("I3.single-writer", "I1.unique"), {"I3.single-writer": 2, "I1.unique": 5}),
    TableVariant("naive-skewed-clock",
                 "Item 9: the naive generator with writer w1's clock 2 ms ahead: w2 starts 1 ms after w1 "
                 "finished and gets an earlier time (put-if-absent storage, so no collision).",
                 {"generator": NAIVE, "writers": 2, "clock_offsets_ms": (2, 0), "compaction": False},
                 ("I1.generation-order",), {"I1.generation-order": 3}),
    TableVariant("truetime-short-wait",
                 "Item 9: TrueTime whose wait (2 ms) does not exceed the clock skew (w1's clock 2 ms ahead): "
                 "w2 acquires the lock as w1 releases it and reads the time w1 got (guarantee_holds: the wait "
                 "must exceed the skew). Likewise w2's requested time equals w1's completion time.",
                 {"writers": 2, "clock_offsets_ms": (2, 0), "compaction": False},
                 ("I1.generation-order", "I1.unique"), {"I1.generation-order": 2, "I1.unique": 4}),
    TableVariant("truetime-second-resolution",
                 "Item 8: TrueTime with a 2 ms wait on a clock of one-second resolution (14-digit legacy "
                 "instants): the wait does not cover a tick, so w2, whose generation began after w1's "
                 "ended, gets the same second (its create is refused: put-if-absent).",
                 {"writers": 2, "resolution_ms": 1000, "compaction": False},
                 ("I1.generation-order",), {"I1.generation-order": 2}),
]

TABLE_VARIANTS: dict[str, TableVariant] = {v.name: v for v in _V}

__all__ = ["TableVariant", "TABLE_VARIANTS"]
