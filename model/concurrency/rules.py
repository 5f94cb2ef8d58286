"""The rules of many processes on one timeline, as pure functions (no state, no I/O).

Used by the spec's actions (:mod:`model.concurrency.actions`) and by the SimPy simulation of the same
modes; each function cites the Hudi method it encodes.

* :class:`WriteSummary` -- what conflict resolution knows of one instant (``ConcurrentOperation``);
* :func:`candidate_instants` -- the instants a committing write is checked against
  (``ConflictResolutionStrategy#getCandidateInstants``, both strategies);
* :func:`conflict` -- whether two operations conflict and why (``hasConflict`` + ``resolveConflict``,
  ``HoodieWriteConfig#needResolveWriteConflict`` for NBCC);
* :func:`resolve_write_conflicts` -- the first conflict among the candidates
  (``TransactionUtils#resolveWriteConflictIfAny``);
* :func:`may_schedule_compaction` -- the 0.x compaction-scheduling precondition;
* :func:`rollback_targets` -- which pending writes a starting writer or a clean rolls back
  (``HoodieFailedWritesCleaningPolicy``, heartbeats);
* :func:`bucket_of` / :func:`file_group_for` -- the index: which file group a key goes to;
* :func:`files_to_clean` -- the cleaner's selection (``CleanPlanner``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from .settings import (BUCKET, EAGER, NBCC, SCHEDULING_0X, SINGLE_WRITER, STRATEGY_PREFER_WRITER,
                       STRATEGY_SIMPLE, Settings)

# operations (WriteOperationType) and actions (timeline action names) the rules distinguish
UPSERT, INSERT, BULK_INSERT, COMPACT, CLUSTER = "upsert", "insert", "bulk_insert", "compact", "cluster"
COMMIT, DELTACOMMIT, REPLACECOMMIT, COMPACTION, CLUSTERING = (
    "commit", "deltacommit", "replacecommit", "compaction", "clustering")
REQUESTED, INFLIGHT, COMPLETED = "requested", "inflight", "completed"
TABLE_SERVICE_ACTIONS = frozenset({COMPACTION, CLUSTERING})
#: KEEP_LATEST_COMMITS / KEEP_LATEST_FILE_VERSIONS (``HoodieCleaningPolicy``)
KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"
CLEAN_POLICIES = (KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS)


@dataclass(frozen=True)
class WriteSummary:
    """One instant as conflict resolution sees it (``ConcurrentOperation``).

    ``instant``: requested time; ``action``: ``commit``/``deltacommit``/``replacecommit`` for writes,
    ``compaction``/``clustering`` for table services (a completed compaction keeps ``compaction`` here
    -- Hudi shows it as ``commit`` with operation COMPACT, ``resolveConflict`` tells it by the operation);
    ``operation``: ``upsert``/``insert``/``bulk_insert``/``compact``/``cluster``; ``file_groups``: the
    (partition, file id) pairs it mutates (``getMutatedPartitionAndFileIds``; a plan's inputs for a
    pending table service); ``start``: the writer's start (its requested time in 1.x:
    ``findInstantsModifiedAfterByCompletionTime(currentInstant.requestedTime())``); ``state``:
    requested/inflight/completed; ``completion``: completion time when completed.
    """

    instant: str
    action: str
    operation: str
    file_groups: frozenset
    start: str | None = None
    state: str = INFLIGHT
    completion: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "file_groups", frozenset(self.file_groups))
        if self.start is None:
            object.__setattr__(self, "start", self.instant)

    @property
    def is_table_service(self) -> bool:
        return self.action in TABLE_SERVICE_ACTIONS

    @property
    def completed(self) -> bool:
        return self.state == COMPLETED


def candidate_instants(timeline_view: Iterable[WriteSummary], mine: WriteSummary,
                       strategy: str = STRATEGY_SIMPLE) -> list[WriteSummary]:
    """The instants ``mine`` is checked against when it commits, in completion order (pending last).

    ``simple`` (``SimpleConcurrentFileWritesConflictResolutionStrategy#getCandidateInstants``): every
    write or table service *completed* after ``mine`` started (completion time > ``mine.start``), and
    every *pending* compaction or clustering requested after ``mine``'s instant ("scheduled ... after the
    current instant").
    ``prefer-writer`` (``PreferWriterConflictResolutionStrategy#getCandidateInstants``): for an ingestion
    write only the instants completed after its start (pending table services are not candidates: the
    writer wins); for a table service (compaction, clustering) the completed ones and every *inflight*
    ingestion write (``getCandidateInstantsForTableServicesCommits``: the table service yields).
    ``mine`` itself is never a candidate.
    """
    if strategy not in (STRATEGY_SIMPLE, STRATEGY_PREFER_WRITER):
        raise ValueError(f"unknown conflict strategy {strategy!r}")
    done, pending = [], []
    for o in timeline_view:
        if o.instant == mine.instant and o.action == mine.action:
            continue
        if o.completed:
            if o.completion is not None and o.completion > mine.start:
                done.append(o)
        elif strategy == STRATEGY_SIMPLE:
            if o.is_table_service and o.instant > mine.instant:
                pending.append(o)
        elif mine.is_table_service and not o.is_table_service and o.state == INFLIGHT:
            pending.append(o)
    done.sort(key=lambda o: (o.completion, o.instant))
    pending.sort(key=lambda o: o.instant)
    return done + pending


def needs_conflict_resolution(settings: Settings, mine: WriteSummary) -> bool:
    """``HoodieWriteConfig#needResolveWriteConflict``: single writer never; NBCC only for BULK_INSERT (and
    for clustering, which NBCC does not cover: ``hudi-semantics.md`` section 7); OCC always."""
    if settings.mode == SINGLE_WRITER:
        return False
    if settings.mode == NBCC:
        return mine.operation == BULK_INSERT or mine.action == CLUSTERING
    return True


def conflict(settings: Settings, mine: WriteSummary, other: WriteSummary) -> str | None:
    """Why ``mine`` may not commit given ``other`` (``None``: no conflict).

    ``hasConflict``: the mutated file groups intersect. ``resolveConflict``
    (``SimpleConcurrentFileWritesConflictResolutionStrategy``): a compaction requested *before* ``mine``
    is resolved (``mine`` wrote into the slice after it); everything else that overlaps aborts ``mine``
    (``HoodieWriteConflictException`` "Cannot resolve conflicts for overlapping writes"). Under NBCC two
    log writers never conflict (``needResolveWriteConflict`` is false except BULK_INSERT), and a
    compaction never conflicts with a writer (completion-time slicing, RFC-66).
    """
    if not needs_conflict_resolution(settings, mine):
        return None
    if settings.mode == NBCC and mine.action != CLUSTERING and other.action in (DELTACOMMIT, COMPACTION):
        return None
    both = mine.file_groups & other.file_groups
    if not both:
        return None
    fgs = ", ".join(sorted("/".join(g) if isinstance(g, tuple) else str(g) for g in both))
    if other.operation == COMPACT and other.instant < mine.instant:
        return None
    what = "completed" if other.completed else f"{other.state} (planned)"
    return (f"{settings.conflict_strategy} strategy: {other.action} {other.instant} {what} after {mine.instant} "
            f"started touches file group(s) {fgs} (Cannot resolve conflicts for overlapping writes)")


def resolve_write_conflicts(settings: Settings, timeline_view: Iterable[WriteSummary],
                            mine: WriteSummary) -> str | None:
    """``TransactionUtils#resolveWriteConflictIfAny``: the first candidate (:func:`candidate_instants`
    with the configured strategy) that :func:`conflict` refuses, as the reason; ``None``: commit."""
    if not needs_conflict_resolution(settings, mine):
        return None
    for other in candidate_instants(timeline_view, mine, settings.conflict_strategy):
        why = conflict(settings, mine, other)
        if why is not None:
            return why
    return None


def may_schedule_compaction(settings: Settings, pending_writes: Iterable[WriteSummary],
                            tc: str | None = None) -> str | None:
    """Whether a compaction may be scheduled at ``tc`` (``None``: yes; else why not).

    ``0.x`` (``ScheduleCompactionActionExecutor#execute`` before RFC-66): "Earliest write inflight instant
    time must be later than compaction time" -- no pending ingestion write older than ``tc`` (any pending
    write when ``tc`` is not known yet); instant-time slicing would put its log into the slice being
    compacted. Hudi applies it to a single writer only (``!supportsOptimisticConcurrencyControl``): under
    OCC a write that overlaps a compaction planned after it is aborted by the conflict check instead
    (:func:`conflict`). ``1.x``: always (completion-time slicing, RFC-66 "Non-Serial Compaction Plan
    Schedule").
    """
    if settings.compaction_scheduling != SCHEDULING_0X or settings.multi_writer:
        return None
    older = sorted(w.instant for w in pending_writes
                   if not w.completed and not w.is_table_service and (tc is None or w.instant < tc))
    if older:
        return (f"0.x scheduling: write {older[0]} is inflight and older than the compaction "
                f"(Earliest write inflight instant time must be later than compaction time)")
    return None


def rollback_targets(settings: Settings, pending_writes: Iterable[WriteSummary], alive: Mapping[str, bool],
                     me: str | None = None) -> list[str]:
    """The pending ingestion writes a rollback of failed writes takes, oldest first
    (``BaseHoodieTableServiceClient#rollbackFailedWrites`` / ``getInstantsToRollback``).

    EAGER (``HoodieFailedWritesCleaningPolicy.EAGER``, at every writer's start): every pending write but
    the caller's own ``me`` -- it assumes one writer. LAZY (by the cleaner): only writes whose heartbeat
    expired (``HoodieHeartbeatClient#isHeartbeatExpired``; ``alive[instant]`` False).
    """
    out = []
    for w in pending_writes:
        if w.completed or w.is_table_service or w.instant == me:
            continue
        if settings.failed_writes == EAGER or not alive.get(w.instant, False):
            out.append(w.instant)
    return sorted(out)


def bucket_of(key: str, buckets: int) -> int:
    """``BucketIdentifier#getBucketId`` for the model's keys ``k<n>``: ``n mod buckets`` (deterministic, so
    every writer puts a key in the same file group)."""
    digits = "".join(ch for ch in key if ch.isdigit())
    return (int(digits) if digits else sum(map(ord, key))) % buckets


def file_group_for(settings: Settings, key: str, located: str | None, instant: str, buckets: int) -> str:
    """The file id a write of ``key`` goes to. Bucket index: the key's bucket ``b<n>``
    (``HoodieSimpleBucketIndex``). Simple index: where the key was found in the committed table
    (``located``, ``HoodieSimpleIndex#tagLocation``), else a new file group named by the writer (an
    insert: ``UpsertPartitioner`` new file id) -- two writers inserting one new key concurrently pick
    two file groups."""
    if settings.index == BUCKET:
        return f"b{bucket_of(key, buckets)}"
    return located if located is not None else f"n{instant}"


def files_to_clean(policy: str, retained: int, slices_by_group: Mapping[str, Sequence[tuple[str, tuple]]],
                   commits: Sequence[str], savepointed: Iterable[str] = (),
                   pending_plan_files: Iterable = ()) -> tuple[list, str | None]:
    """What ``CleanPlanner#getDeletePaths`` deletes, and the earliest commit to retain.

    ``slices_by_group``: per file group, its slices newest first as ``(base_instant, files)``
    (committed slices only); ``commits``: completed write commits ascending; ``savepointed``: files a
    savepoint names (``getSavepointedDataFiles``: never cleaned); ``pending_plan_files``: files of
    pending compaction/clustering plans (``isFileSliceNeededForPendingMajorOrMinorCompaction`` /
    ``isFileGroupInPendingMajorOrMinorCompaction``: never cleaned).

    KEEP_LATEST_FILE_VERSIONS: keep the ``retained`` newest slices of each group.
    KEEP_LATEST_COMMITS: the earliest commit to retain is the ``retained``-th newest commit; keep every
    slice at or after it plus the newest slice before it (what a query at that commit reads).
    """
    if policy not in CLEAN_POLICIES:
        raise ValueError(f"unknown cleaning policy {policy!r}")
    keep_always = set(savepointed) | set(pending_plan_files)
    earliest = None
    if policy == KEEP_LATEST_COMMITS:
        if len(commits) < retained:
            return [], None
        earliest = sorted(commits)[-retained]
    out = []
    for _, slices in sorted(slices_by_group.items()):
        if policy == KEEP_LATEST_FILE_VERSIONS:
            old = list(slices[retained:])
        else:
            newer = [s for s in slices if s[0] >= earliest]
            old = list(slices[len(newer) + 1:])
        for _, files in old:
            out.extend(f for f in files if f not in keep_always)
    return out, earliest


__all__ = [
    "WriteSummary", "candidate_instants", "needs_conflict_resolution", "conflict", "resolve_write_conflicts",
    "may_schedule_compaction", "rollback_targets", "bucket_of", "file_group_for", "files_to_clean",
    "UPSERT", "INSERT", "BULK_INSERT", "COMPACT", "CLUSTER", "COMMIT", "DELTACOMMIT", "REPLACECOMMIT",
    "COMPACTION", "CLUSTERING", "REQUESTED", "INFLIGHT", "COMPLETED", "KEEP_LATEST_COMMITS",
    "KEEP_LATEST_FILE_VERSIONS", "CLEAN_POLICIES",
]
