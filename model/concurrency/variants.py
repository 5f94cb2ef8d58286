"""Named designs of the concurrency machine: correct ones and broken ones (issue #17 item 4).

Each :class:`ConcVariant` is a :class:`~.state.MachineConfig` (settings, bounds, flaws) with a description
and ``expected``: the invariants it must break (empty: it holds every invariant at its bound) and the
length of the shortest counterexample of each (``depths``, checked by ``tests/test_explore_concurrency.py``).
A broken variant whose settings Hudi refuses (NBCC on COW, without a bucket index, with EAGER) is built
with ``validated=False``; ``fix`` names the change that makes the same bound pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .rules import KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS
from .settings import Settings
from .state import NAIVE, MachineConfig
from ..timeline import OVERWRITE


@dataclass(frozen=True)
class ConcVariant:
    name: str
    description: str
    settings: dict = field(default_factory=dict)
    bounds: dict = field(default_factory=dict)
    expected: tuple = ()
    depths: dict = field(default_factory=dict)
    fix: dict = field(default_factory=dict)       # MachineConfig/settings overrides that repair it

    def config(self, **extra) -> MachineConfig:
        b = dict(self.bounds)
        s = dict(self.settings)
        for k, v in extra.items():
            if k in Settings.__dataclass_fields__:
                s[k] = v
            else:
                b[k] = v
        return MachineConfig(Settings(**s), **b)

    def fixed(self) -> MachineConfig:
        return self.config(**self.fix)


_SW0 = {"mode": "single_writer", "table_version": 6, "compaction_scheduling": "0.x"}

_V = [
    # ------------------------------------------------------------------ correct designs
    ConcVariant("occ-cow", "OCC on a COW table (tv8, bucket index): two writers rewrite the same file group; "
                "the one that checks second aborts.", {"mode": "occ", "table_type": "cow"}, {"writers": 2}),
    ConcVariant("occ-mor-compaction", "OCC on MOR (tv8) with an async compactor (1.x scheduling): a compaction "
                "planned after a writer's start on its file group aborts it.",
                {"mode": "occ"}, {"writers": 2, "compactions": 1}),
    ConcVariant("occ-prefer-writer", "OCC with PreferWriterConflictResolutionStrategy: a writer does not abort for "
                "a pending compaction plan (completion-time slicing keeps its log).",
                {"mode": "occ", "conflict_strategy": "prefer-writer"}, {"writers": 2, "compactions": 1}),
    ConcVariant("occ-0.x-compaction", "OCC on a tv6 MOR table with 0.x scheduling: the compaction may be planned "
                "while an older write is inflight; the conflict check aborts that write.",
                {"mode": "occ", "table_version": 6, "compaction_scheduling": "0.x"},
                {"writers": 1, "compactions": 1}),
    ConcVariant("nbcc", "NBCC (MOR, simple bucket index, tv8, LAZY): concurrent log appends to one file group, "
                "merged by the ordering field; compaction scheduled at any time.",
                {"mode": "nbcc"}, {"writers": 2, "compactions": 1}),
    ConcVariant("single-writer-0.x", "A single writer and an async compactor on tv6 with the 0.x precondition.",
                _SW0, {"writers": 1, "compactions": 1, "commits": 2}),
    ConcVariant("single-writer-1.x", "A single writer and an async compactor on tv8 (completion-time slicing).",
                {"mode": "single_writer"}, {"writers": 1, "compactions": 1, "commits": 2}),
    ConcVariant("lazy-crash", "OCC with a writer crash: the cleaner rolls back only the expired write (LAZY).",
                {"mode": "occ"}, {"writers": 2, "crashes": 1, "cleans": 1}),
    ConcVariant("clean-keeps-plans", "MOR single writer, compactor and a KEEP_LATEST_FILE_VERSIONS=1 cleaner that "
                "keeps the files a pending compaction plan needs.", {"mode": "single_writer"},
                {"writers": 1, "compactions": 1, "cleans": 1, "clean_policy": KEEP_LATEST_FILE_VERSIONS}),
    ConcVariant("clean-keeps-savepoints", "COW single writer, a savepoint and a KEEP_LATEST_FILE_VERSIONS=1 "
                "cleaner that keeps the savepointed files.", {"mode": "single_writer", "table_type": "cow"},
                {"writers": 1, "cleans": 1, "savepoint": True, "clean_policy": KEEP_LATEST_FILE_VERSIONS}),
    ConcVariant("clean-latest-commits", "COW OCC, KEEP_LATEST_COMMITS=1 cleaner: time travel within the retention "
                "still reads.", {"mode": "occ", "table_type": "cow"},
                {"writers": 2, "cleans": 1, "clean_policy": KEEP_LATEST_COMMITS}),
    ConcVariant("occ-clustering", "OCC (simple strategy, simple index, COW) with a clustering service: a write "
                "that overlaps a clustering planned after its start aborts; a clustering that overlaps a write "
                "completed after its start aborts at its commit.", {"mode": "occ", "index": "simple",
                                                                    "table_type": "cow"},
                {"writers": 2, "keys": 1, "clusterings": 1}),
    ConcVariant("occ-prefer-writer-clustering", "OCC with PreferWriterConflictResolutionStrategy and clustering: the "
                "writer is not checked against the pending clustering and commits; the clustering sees the "
                "inflight or completed write at its commit and aborts.",
                {"mode": "occ", "index": "simple", "conflict_strategy": "prefer-writer"},
                {"writers": 2, "keys": 1, "clusterings": 1}),
    # ------------------------------------------------------------------ broken designs
    ConcVariant("occ-no-lock", "OCC whose conflict check and commit are not under the lock: two writers both "
                "check before either completes, both commit; on COW the later base file lacks the other's "
                "update.", {"mode": "occ", "table_type": "cow"}, {"writers": 2, "flaws": {"no-commit-lock"}},
                ("C.occ-serializable", "oracle.snapshot", "oracle.as-of"),
                {"C.occ-serializable": 12, "oracle.snapshot": 12, "oracle.as-of": 12}, {"flaws": frozenset()}),
    ConcVariant("occ-ignores-pending-compaction", "OCC on tv6 whose check ignores a pending compaction plan: the "
                "plan compacted the slice holding the write's log before the write completed; the compacted "
                "base lacks it and supersedes the slice.",
                {"mode": "occ", "table_version": 6, "compaction_scheduling": "0.x"},
                {"writers": 1, "compactions": 1, "flaws": {"ignore-pending-compaction"}},
                ("oracle.snapshot", "oracle.as-of"), {"oracle.snapshot": 9, "oracle.as-of": 9}, {"flaws": frozenset()}),
    ConcVariant("clustering-no-check", "A clustering that commits without the conflict check: a write to the "
                "clustered group completes between the clustering's execute and commit; the replacecommit hides "
                "the group holding it.", {"mode": "occ", "index": "simple"},
                {"writers": 1, "keys": 1, "clusterings": 1, "flaws": {"clustering-no-check"}},
                ("oracle.snapshot", "oracle.as-of"), {"oracle.snapshot": 9, "oracle.as-of": 9},
                {"flaws": frozenset()}),
    ConcVariant("nbcc-cow", "NBCC on a COW table (Hudi refuses it): two writers rewrite one file group without a "
                "conflict check; the later base file lacks the other's update.",
                {"mode": "nbcc", "table_type": "cow"}, {"writers": 2, "validated": False},
                ("oracle.snapshot", "oracle.as-of"), {"oracle.snapshot": 12, "oracle.as-of": 12}, {"table_type": "mor"}),
    ConcVariant("nbcc-simple-index", "NBCC with the simple index (Hudi refuses it): two writers insert the same new "
                "key into two new file groups.", {"mode": "nbcc", "index": "simple"},
                {"writers": 2, "keys": 1, "preloaded": False, "validated": False},
                ("oracle.no-duplicate-key", "oracle.snapshot", "oracle.as-of"),
                {"oracle.no-duplicate-key": 12, "oracle.snapshot": 12, "oracle.as-of": 12}, {"index": "bucket"}),
    ConcVariant("occ-simple-index-insert", "Model finding (inferred from the strategies' file-id overlap rule, not "
                "confirmed against Hudi): OCC with the simple index; two writers insert the same new key, each "
                "into a new file group; the groups do not overlap, so neither aborts and the key is duplicated. "
                "A bucket index puts both in one group and the second aborts.", {"mode": "occ", "index": "simple"},
                {"writers": 2, "keys": 1, "preloaded": False},
                ("oracle.no-duplicate-key", "oracle.snapshot", "oracle.as-of"),
                {"oracle.no-duplicate-key": 12, "oracle.snapshot": 12, "oracle.as-of": 12}, {"index": "bucket"}),
    ConcVariant("log-only-group-pending-first", "Model finding (from the slicing spec, not confirmed against Hudi): "
                "on an empty MOR table with a bucket index two writers append the first logs of a new file group; "
                "the group's only slice is keyed by the first log's instant (HoodieFileGroup#getBaseInstantTime), "
                "so while that write is pending the slice is not committed (isFileSliceCommitted) and a merged "
                "snapshot read (getLatestMergedFileSlicesBeforeOrOn) misses the other writer's committed log. (The "
                "as-of read, which walks slices without that filter, sees it.)",
                {"mode": "nbcc"}, {"writers": 2, "keys": 1, "preloaded": False},
                ("oracle.snapshot",), {"oracle.snapshot": 9}, {"preloaded": True}),
    ConcVariant("nbcc-eager", "NBCC with the EAGER failed-writes policy (Hudi sets LAZY): a starting writer rolls "
                "back the other writer's inflight write.", {"mode": "nbcc", "failed_writes": "eager"},
                {"writers": 2, "validated": False}, ("C.lazy-rollback",), {"C.lazy-rollback": 3},
                {"failed_writes": "lazy"}),
    ConcVariant("single-writer-0.x-no-guard", "0.x scheduling on tv6 without the precondition: a compaction is "
                "planned while an older write is inflight; its log joins the compacted slice and is lost.",
                _SW0, {"writers": 1, "compactions": 1, "flaws": {"no-0x-guard"}},
                ("C.compaction-schedule-0x", "oracle.snapshot", "oracle.as-of"),
                {"C.compaction-schedule-0x": 4, "oracle.snapshot": 9, "oracle.as-of": 9}, {"flaws": frozenset()}),
    ConcVariant("clean-ignores-plans", "A cleaner that deletes files a pending compaction plan needs: the merged "
                "snapshot read (older base + logs while the compaction is pending) misses them.",
                {"mode": "single_writer"}, {"writers": 1, "compactions": 1, "cleans": 1,
                                            "clean_policy": KEEP_LATEST_FILE_VERSIONS,
                                            "flaws": {"clean-ignores-plans"}},
                ("C.clean-safe", "oracle.snapshot"), {"C.clean-safe": 8, "oracle.snapshot": 8}, {"flaws": frozenset()}),
    ConcVariant("clean-ignores-savepoints", "A cleaner that deletes savepointed files: time travel to the "
                "savepoint cannot be served.", {"mode": "single_writer", "table_type": "cow"},
                {"writers": 1, "cleans": 1, "savepoint": True, "clean_policy": KEEP_LATEST_FILE_VERSIONS,
                 "flaws": {"clean-ignores-savepoints"}},
                ("C.clean-safe", "oracle.as-of"), {"C.clean-safe": 8, "oracle.as-of": 8}, {"flaws": frozenset()}),
    ConcVariant("naive-overwrite", "Two writers with the 0.x naive generator (no TrueTime) on storage without "
                "put-if-absent: both get one time, the second create silently replaces the first.",
                {"mode": "occ"}, {"writers": 2, "generator": NAIVE, "storage": OVERWRITE},
                ("I3.single-writer",), {"I3.single-writer": 4}, {"generator": "truetime"}),
]

VARIANTS: dict[str, ConcVariant] = {v.name: v for v in _V}

__all__ = ["ConcVariant", "VARIANTS"]
