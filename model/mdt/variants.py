"""Named designs of the MDT + indexer machine (:mod:`model.mdt.machine`): correct ones and broken ones.

Each :class:`IndexingVariant` is a set of :class:`~model.mdt.machine.IndexingConfig` fields with a
description, ``expected`` (the invariants it must break; empty: it must hold all at its bound) and
``depths``: per invariant, the length of the shortest counterexample the explorer finds at the
variant's bound (measured by ``hoodie-lab explore --machine indexing``; the stories below say why no
shorter run can break it). ``tests/test_explore_indexing.py`` asserts the explorer finds exactly these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import partitions as P
from .machine import ALL_LOGS, DT_FIRST, HELD, IN_LOCK, LAST_COMPLETED, IndexingConfig


@dataclass(frozen=True)
class IndexingVariant:
    name: str
    description: str
    overrides: dict = field(default_factory=dict)
    expected: tuple = ()
    depths: dict = field(default_factory=dict)
    finding: bool = False  #: a model finding about Hudi's own code, not confirmed against Hudi

    def config(self, **extra) -> IndexingConfig:
        d = dict(self.overrides)
        d.update(extra)
        return IndexingConfig(**d)


_V = [
    # ------------------------------------------------------------------ correct designs
    IndexingVariant(
        "hudi-1.x",
        "RFC-45 as Hudi 1.x runs it: the indexer schedules up to the last contiguous completed write under "
        "the lock, marks the partition inflight and builds it, then catches up instant by instant (waits "
        "for live writers, skips dead ones, applies completed ones missing from the partition under the "
        "lock, and checks a waited-for instant again); writers read the table config before their commit "
        "lock and add log entries for inflight partitions; readers use available partitions only.",
        {"writers": 2}),
    IndexingVariant(
        "rfc45-in-lock",
        "As hudi-1.x, writers reading the table config inside the commit lock (RFC-45's closing of the "
        "TOCTOU gap).",
        {"writers": 2, "config_read": IN_LOCK}),
    IndexingVariant(
        "hudi-1.x-failures",
        "hudi-1.x with one writer failure (after its write or after its MDT deltacommit), its rollback "
        "mirrored into the MDT, and one MDT compaction of valid log entries.",
        {"writers": 2, "failures": 1, "mdt_compaction": True}),
    IndexingVariant(
        "hudi-1.x-abort-retry",
        "hudi-1.x where the catch-up may time out waiting for a live writer (abort: partition removed from "
        "both lists, its files and the inflight file deleted) and the index is scheduled again; the index may "
        "also be dropped once built.",
        {"writers": 2, "timeouts": 1, "retries": 1, "drop": True}),
    # ------------------------------------------------------------------ broken designs
    IndexingVariant(
        "no-catchup",
        "The indexer completes right after building up to indexUptoInstant: a write that committed between "
        "scheduling and building (the partition not yet inflight, so its MDT deltacommit skipped it) is "
        "missing from the index.",
        {"writers": 1, "catchup": False}, ("I17.index-equals-rebuild",), {"I17.index-equals-rebuild": 7}),
    IndexingVariant(
        "catchup-skips-completed-during-execution",
        "The catch-up, having met an instant that was pending when its list was built, moves on once it "
        "completes without checking that it reached the partition (the loop tests the old instant "
        "object): a writer inside its commit lock section while the build ran wrote its MDT deltacommit "
        "without the partition.",
        {"writers": 1, "recheck_after_wait": False}, ("I17.index-equals-rebuild",),
        {"I17.index-equals-rebuild": 9}),
    IndexingVariant(
        "readers-use-inflight",
        "Readers use a partition while its indexing instant is pending: right after the build starts the "
        "partition is readable, and it misses the writes the catch-up has not applied yet.",
        {"writers": 1, "readers_allow_inflight": True},
        ("I17.readable-when-completed", "I17.index-equals-rebuild"),
        {"I17.readable-when-completed": 2, "I17.index-equals-rebuild": 6}),
    IndexingVariant(
        "writers-ignore-inflight",
        "Writers update available partitions only: a write started after the catch-up list was built "
        "commits without the inflight partition, and nothing adds it.",
        {"writers": 1, "writers_include_inflight": False}, ("I17.index-equals-rebuild",),
        {"I17.index-equals-rebuild": 8}),
    IndexingVariant(
        "schedule-past-hole",
        "indexUptoInstant is the last completed write although an earlier write is still pending: the hole "
        "is neither in the built base (pending) nor in the catch-up list (before indexUptoInstant), and it "
        "committed before the partition was inflight.",
        {"writers": 2, "upto": LAST_COMPLETED}, ("I17.index-equals-rebuild",),
        {"I17.index-equals-rebuild": 12}),
    IndexingVariant(
        "indexer-holds-lock",
        "The indexer takes the table lock at build time and holds it until it completes: every writer that "
        "wants to commit waits for the whole index build.",
        {"writers": 1, "indexer_lock": HELD}, ("I17.writers-not-blocked",), {"I17.writers-not-blocked": 2}),
    IndexingVariant(
        "dt-before-mdt",
        "A data-table commit completes before its MDT deltacommit is written: in between (or forever, "
        "after a crash) readers of the files partition miss a committed file.",
        {"writers": 1, "commit_order": DT_FIRST}, ("I17.index-equals-rebuild", "MDT.mirrors-dt"),
        {"I17.index-equals-rebuild": 3, "MDT.mirrors-dt": 3}),
    IndexingVariant(
        "abort-keeps-partition",
        "An abort deletes only the indexing inflight file: the partition stays in "
        "hoodie.table.metadata.partitions.inflight with its half-built files.",
        {"writers": 1, "timeouts": 1, "abort_cleanup": False}, ("I17.abort-leaves-no-trace", "MDT.table-config"),
        {"I17.abort-leaves-no-trace": 5, "MDT.table-config": 5}),
    IndexingVariant(
        "mdt-compaction-merges-uncommitted",
        "The MDT compaction merges every completed MDT deltacommit into the base, also one whose data-table "
        "commit never completed (the writer died after its MDT update): the base holds an uncommitted file.",
        {"writers": 1, "failures": 1, "mdt_compaction": True, "compaction_input": ALL_LOGS},
        ("I17.index-equals-rebuild",), {"I17.index-equals-rebuild": 5}),
    IndexingVariant(
        "hudi-catchup-by-instant-time",
        "Model finding, not confirmed against Hudi: the catch-up treats an instant as indexed when the MDT "
        "has a completed instant of that time (RunIndexActionExecutor's metadataCompletedTimestamps), "
        "whatever partitions it wrote. A write that completes between scheduling and building has an MDT "
        "deltacommit without the partition, and the build covers only up to indexUptoInstant; whether "
        "Hudi's buildMetadataPartitions lists files written after indexUptoInstant (which would close "
        "this) is the open question.",
        {"writers": 1, "catchup_check": P.INSTANT_TIME}, ("I17.index-equals-rebuild",),
        {"I17.index-equals-rebuild": 9}, finding=True),
]

INDEXING_VARIANTS: dict[str, IndexingVariant] = {v.name: v for v in _V}

__all__ = ["IndexingVariant", "INDEXING_VARIANTS"]


@dataclass(frozen=True)
class IndexingLivenessVariant:
    """A design of the indexing machine judged by the temporal property ``index-build-resolved``
    (:mod:`model.invariants.temporal`): an indexing variant (``base``) with config ``overrides`` and the steps
    that are *not* weakly fair in it (``unfair``: names of :data:`model.mdt.machine.FAIRNESS`). ``breaks``: the
    temporal properties it must violate (empty: it must satisfy all) at its bound."""

    name: str
    description: str
    base: str = "hudi-1.x"
    overrides: dict = field(default_factory=dict)
    unfair: frozenset = frozenset()
    breaks: tuple = ()

    def config(self, **extra) -> IndexingConfig:
        return INDEXING_VARIANTS[self.base].config(**{**self.overrides, **extra})


_L = [
    IndexingLivenessVariant("hudi-1.x", "Hudi 1.x's indexer beside two writers, every own step weakly fair."),
    IndexingLivenessVariant(
        "hudi-1.x-failures",
        "hudi-1.x with a writer that dies mid-commit and no rollback of it (the cleaner's rollback not fair): the "
        "catch-up skips the dead writer's instant (heartbeat expired) and finishes. MDT compaction off (15,959 "
        "states at 2 writers; with --mdt-compaction it holds too: 98,425 states).",
        base="hudi-1.x-failures", overrides={"mdt_compaction": False}, unfair=frozenset({"rollback"})),
    IndexingLivenessVariant(
        "hudi-1.x-abort-retry",
        "hudi-1.x where the catch-up may time out (abort) and the index is scheduled again.",
        base="hudi-1.x-abort-retry", overrides={"drop": False}),
    IndexingLivenessVariant(
        "indexer-holds-lock-times-out",
        "The indexer holds the table lock through its catch-up, as indexer-holds-lock, but its catch-up timeout "
        "(hoodie.metadata.index.check.timeout.seconds, weakly fair) aborts the build: safety's I17.writers-not-"
        "blocked still breaks, the build still resolves.",
        base="indexer-holds-lock", overrides={"timeouts": 1}),
    IndexingLivenessVariant(
        "indexer-holds-lock",
        "The indexer takes the table lock at build time and holds it through the catch-up, with no catch-up "
        "timeout: the catch-up waits for a live writer that waits for the lock to commit -- a deadlock; the "
        "indexing instant stays inflight forever.",
        base="indexer-holds-lock", overrides={"timeouts": 0}, breaks=("index-build-resolved",)),
    IndexingLivenessVariant(
        "catchup-ignores-heartbeat",
        "The catch-up waits for every pending instant without checking its writer's heartbeat "
        "(HoodieHeartbeatClient#isHeartbeatExpired), no catch-up timeout, and the failed write is never rolled "
        "back (the cleaner's rollback not fair, e.g. hoodie.clean.automatic=false): a writer that died mid-commit "
        "keeps the index build waiting forever.",
        base="hudi-1.x-failures", overrides={"writers": 1, "heartbeat_check": False, "mdt_compaction": False},
        unfair=frozenset({"rollback"}), breaks=("index-build-resolved",)),
]

INDEXING_LIVENESS_VARIANTS: dict[str, IndexingLivenessVariant] = {v.name: v for v in _L}

__all__ += ["IndexingLivenessVariant", "INDEXING_LIVENESS_VARIANTS"]
