"""The pure rules of the metadata table and of the asynchronous indexer (RFC-45, HUDI-2488).

This module is the stable API of the MDT spec: every function is pure (values in, values out) and
names the Hudi method it encodes. The state machine (:mod:`model.mdt.machine`) and the on-disk
writer (``lakeio/ondisk/mdt*.py``, branch ``mdt-disk``) both call these rules instead of restating
them. Refusals raise :class:`IndexingError` (a :class:`model.errors.RuleViolation`) whose rule id
names the setting; the CLI and the experiment map it to one line and exit 2.

Partition names (``MetadataPartitionType#getPartitionPath``): ``files``, ``column_stats``,
``bloom_filters``, ``record_index``. Their state lives in the data table's ``hoodie.properties``:
``hoodie.table.metadata.partitions`` (available: readers and table services may use them) and
``hoodie.table.metadata.partitions.inflight`` (being built by an indexer: writers already add log
entries to them, readers must not use them) -- :class:`PartitionStates`.

API (all pure):

=====================================  ======================================================================
``validate_indexing(settings, ...)``   the indexer's preconditions (multi-writer mode, a lock provider,
                                       a known index type, not available, not inflight)
``index_upto(write_timeline)``         ``indexUptoInstant``: the last completed write with no pending
                                       write before it (``getContiguousCompletedWriteTimeline``)
``catchup_start(times, upto)``         where the catch-up list starts (an earlier pending clean/rollback/
                                       restore, else ``upto``)
``catchup_list(instants, upto)``       the instants the catch-up visits, with whether each was pending
``catchup_decision(...)``              per instant: ``caught-up`` / ``wait`` / ``skip-dead`` / ``apply``
                                       / ``gone`` (``AbstractIndexingCatchupTask#run``)
``writer_partitions(states, ...)``     the MDT partitions a data-table commit updates
                                       (``HoodieBackedTableMetadataWriter#getMetadataPartitionsToUpdate``)
``readable_partitions(states)``        the partitions readers may use (available only)
``PartitionStates.to_inflight`` /      the table-config transitions of execute / complete / abort / drop
``.to_available`` / ``.remove``
``valid_instants(dt_completed, ...)``  the MDT deltacommits a reader merges
                                       (``HoodieTableMetadataUtil#getValidInstantTimestamps``)
``rebuild(partition, writes, done)``   the index an initialisation from scratch would build
``file_group_ids`` /                   an MDT partition's file ids and the file group a key maps to
``file_group_index``
``index_plan`` /                       the ``HoodieIndexPlan`` and ``HoodieIndexCommitMetadata`` records
``index_commit_metadata``
=====================================  ======================================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from ..errors import RuleViolation

FILES, COLUMN_STATS, BLOOM_FILTERS, RECORD_INDEX = "files", "column_stats", "bloom_filters", "record_index"
#: ``MetadataPartitionType`` partition paths modelled.
PARTITIONS = (FILES, COLUMN_STATS, BLOOM_FILTERS, RECORD_INDEX)

#: File-id prefixes of the MDT file groups (``MetadataPartitionType#getFileIdPrefix``).
FILE_ID_PREFIX = {FILES: "files-", COLUMN_STATS: "col-stats-", BLOOM_FILTERS: "bloom-filters-",
                  RECORD_INDEX: "record-index-"}
#: Default file-group counts (``HoodieMetadataConfig``: files 1; ``...column.stats.file.group.count`` 2;
#: ``...bloom.filter.file.group.count`` 4; ``hoodie.metadata.record.index.min.filegroup.count`` 10).
DEFAULT_FILE_GROUPS = {FILES: 1, COLUMN_STATS: 2, BLOOM_FILTERS: 4, RECORD_INDEX: 10}

#: ``hoodie.write.concurrency.mode`` values (``WriteConcurrencyMode``) and whether each supports multi-writer.
SINGLE_WRITER, OCC, NBCC = "SINGLE_WRITER", "OPTIMISTIC_CONCURRENCY_CONTROL", "NON_BLOCKING_CONCURRENCY_CONTROL"
CONCURRENCY_MODES = {SINGLE_WRITER: False, OCC: True, NBCC: True}

#: Catch-up decisions (``AbstractIndexingCatchupTask#run``).
CAUGHT_UP, WAIT, SKIP_DEAD, APPLY, GONE = "caught-up", "wait", "skip-dead", "apply", "gone"

#: How the catch-up tells that an instant is already in the MDT: by a completed MDT deltacommit that wrote
#: the partition being built (the spec), or by a completed MDT instant of the same time, whatever it wrote
#: (``RunIndexActionExecutor#getCompletedArchivedAndActiveInstantsAfter`` as read: a set of timestamps).
PER_PARTITION, INSTANT_TIME = "per-partition", "instant-time"
CATCHUP_CHECKS = (PER_PARTITION, INSTANT_TIME)


class IndexingError(RuleViolation):
    """An indexing request refused; ``rule`` names the setting (``indexing.concurrency-mode`` ...)."""


@dataclass(frozen=True)
class ConcurrencySettings:
    """The minimal concurrency setting the indexer needs (``hoodie.write.concurrency.mode``,
    ``hoodie.write.lock.provider``). A placeholder for ``model/concurrency/`` (another branch): the two
    should be unified there, this class reduced to a view of that one."""

    mode: str = OCC
    lock_provider: str | None = "InProcessLockProvider"

    @property
    def multi_writer(self) -> bool:
        return CONCURRENCY_MODES.get(self.mode, False)


@dataclass(frozen=True)
class PartitionStates:
    """The two table-config lists: ``hoodie.table.metadata.partitions`` (``available``) and
    ``hoodie.table.metadata.partitions.inflight`` (``inflight``) -- ``HoodieTableConfig#getMetadataPartitions``,
    ``#getMetadataPartitionsInflight``, ``#setMetadataPartitionState``, ``#setMetadataPartitionsInflight``."""

    available: frozenset = frozenset({FILES})
    inflight: frozenset = frozenset()

    def to_inflight(self, partitions: Iterable[str]) -> "PartitionStates":
        """``HoodieTableConfig#setMetadataPartitionsInflight`` (``buildMetadataPartitions``, before the
        partitions are initialised): the partitions join the inflight list."""
        ps = frozenset(partitions)
        clash = sorted(ps & (self.available | self.inflight))
        if clash:
            raise IndexingError("indexing.exists", f"metadata partition(s) {', '.join(clash)} already available or inflight")
        return PartitionStates(self.available, self.inflight | ps)

    def to_available(self, partitions: Iterable[str]) -> "PartitionStates":
        """``HoodieTableConfig#setMetadataPartitionState(.., true)`` (``RunIndexActionExecutor#
        updateTableConfigAndTimeline``, under the lock): inflight -> available."""
        ps = frozenset(partitions)
        missing = sorted(ps - self.inflight)
        if missing:
            raise IndexingError("indexing.not-inflight", f"metadata partition(s) {', '.join(missing)} are not inflight")
        return PartitionStates(self.available | ps, self.inflight - ps)

    def remove(self, partitions: Iterable[str]) -> "PartitionStates":
        """``RunIndexActionExecutor#abort`` and ``HoodieBackedTableMetadataWriter#dropMetadataPartitions``:
        the partitions leave both lists."""
        ps = frozenset(partitions)
        return PartitionStates(self.available - ps, self.inflight - ps)

    def as_properties(self) -> dict:
        """The two ``hoodie.properties`` keys as Hudi writes them (comma-separated, sorted here)."""
        return {"hoodie.table.metadata.partitions": ",".join(sorted(self.available)),
                "hoodie.table.metadata.partitions.inflight": ",".join(sorted(self.inflight))}


def validate_indexing(settings: ConcurrencySettings, partition: str, states: PartitionStates) -> None:
    """The preconditions of scheduling an index (``ScheduleIndexActionExecutor#validateBeforeScheduling``
    and the idempotence check of ``#execute``; ``RunIndexActionExecutor#execute`` repeats them): a
    multi-writer concurrency mode, a lock provider, a known index type, and a partition neither
    available nor inflight. Raises :class:`IndexingError` naming the setting."""
    if settings.mode not in CONCURRENCY_MODES:
        raise IndexingError("indexing.concurrency-mode",
                            f"hoodie.write.concurrency.mode: unknown mode {settings.mode!r}; "
                            f"known: {', '.join(CONCURRENCY_MODES)}")
    if not settings.multi_writer:
        raise IndexingError("indexing.concurrency-mode",
                            f"hoodie.write.concurrency.mode: indexing needs {OCC} or {NBCC}, not {settings.mode}")
    if not settings.lock_provider:
        raise IndexingError("indexing.lock-provider", "hoodie.write.lock.provider: indexing needs a lock provider")
    if partition not in PARTITIONS:
        raise IndexingError("indexing.unknown-index",
                            f"index type {partition!r} is unknown; known: {', '.join(PARTITIONS)}")
    if partition in states.available:
        raise IndexingError("indexing.exists", f"index {partition} already exists (hoodie.table.metadata.partitions)")
    if partition in states.inflight:
        raise IndexingError("indexing.inflight",
                            f"index {partition} is already being built (hoodie.table.metadata.partitions.inflight)")


def index_upto(write_instants: Iterable, *, contiguous: bool = True) -> str | None:
    """``indexUptoInstant`` (``ScheduleIndexActionExecutor#execute``): the requested time of the last
    completed write instant with no pending write before it
    (``HoodieActiveTimeline#getContiguousCompletedWriteTimeline().lastInstant()``); ``None`` when the
    first write is pending (nothing to schedule). ``write_instants`` are the write timeline's instants in
    requested-time order (objects with ``requested_time`` and ``is_completed``).

    ``contiguous=False`` is the broken rule "the last completed write" that ignores a pending hole."""
    last = None
    for i in write_instants:
        if not i.is_completed:
            if contiguous:
                break
            continue
        last = i.requested_time
    return last


def catchup_start(pending_service_times: Iterable[str], upto: str) -> str:
    """Where the catch-up list starts (``RunIndexActionExecutor#getInstantsToCatchup``): the earliest
    pending clean/restore/rollback before ``upto`` if any, else ``upto``."""
    before = sorted(t for t in pending_service_times if t < upto)
    return before[0] if before else upto


def catchup_list(instants: Iterable, upto: str, *, indexing_action: str = "indexing",
                 service_actions: Iterable[str] = ("clean", "rollback", "restore")) -> tuple:
    """The catch-up list (``RunIndexActionExecutor#getInstantsToCatchup`` and
    ``#getRemainingArchivedAndActiveInstantsSince``): every instant requested at or after the start
    (:func:`catchup_start`: the earliest pending clean/rollback/restore before ``upto``, else ``upto``), of any
    action but ``indexing``, in requested-time order, each as ``(requested time, was pending)``. ``instants``
    are the timeline's instants (objects with ``requested_time``, ``action`` (an enum with ``value`` or a
    string) and ``is_pending``)."""
    def name(i) -> str:
        return getattr(i.action, "value", i.action)
    services = set(service_actions)
    start = catchup_start([i.requested_time for i in instants if name(i) in services and i.is_pending], upto)
    return tuple((i.requested_time, i.is_pending) for i in sorted(instants, key=lambda i: i.requested_time)
                 if i.requested_time >= start and name(i) != indexing_action)


def catchup_decision(*, dt_state: str | None, heartbeat_alive: bool, mdt_completed: bool,
                     mdt_wrote_partition: bool, check: str = PER_PARTITION, was_pending: bool = False,
                     recheck_after_wait: bool = True) -> str:
    """What the catch-up does with one data-table instant (``AbstractIndexingCatchupTask#run``, per
    instant in requested-time order):

    * ``gone`` -- the instant is no longer on the timeline (rolled back: its MDT deltacommit was rolled
      back with it, ``HoodieBackedTableMetadataWriter#update(HoodieRollbackMetadata)``);
    * ``caught-up`` -- completed and already in the MDT (``check``: a completed MDT deltacommit of that
      time that wrote the partition; ``instant-time``: any completed MDT instant of that time);
    * ``wait`` -- pending and its writer's heartbeat is alive (poll the timeline every
      ``TIMELINE_RELOAD_INTERVAL_MILLIS``);
    * ``skip-dead`` -- pending and the heartbeat is missing or expired (a failed write; its rollback
      mirrors into the MDT);
    * ``apply`` -- completed and missing: apply its commit metadata to the partition under the lock
      (``updateIndexForWriteAction`` inside ``transactionManager.beginStateChange``).

    ``dt_state`` is ``"pending"``, ``"completed"`` or ``None`` (gone). ``was_pending``: the instant was
    pending when the catch-up list was built. ``recheck_after_wait=False`` is the broken loop that, once
    it waited for a pending instant, moves on without checking whether it reached the MDT (the note in
    ``hudi-semantics.md`` §6: the old instant object's state is tested)."""
    if check not in CATCHUP_CHECKS:
        raise ValueError(f"check must be one of {CATCHUP_CHECKS}, not {check!r}")
    if dt_state is None:
        return GONE
    if dt_state != "completed":
        return WAIT if heartbeat_alive else SKIP_DEAD
    if was_pending and not recheck_after_wait:
        return CAUGHT_UP
    in_mdt = mdt_completed and (mdt_wrote_partition or check == INSTANT_TIME)
    return CAUGHT_UP if in_mdt else APPLY


def writer_partitions(states: PartitionStates, *, include_inflight: bool = True) -> frozenset:
    """The MDT partitions a data-table commit writes (``HoodieBackedTableMetadataWriter#
    getMetadataPartitionsToUpdate``): every available partition and, per RFC-45, every inflight one
    ("writers with t' > t add log entries for inflight partitions"). ``include_inflight=False`` is the
    broken writer that ignores the indexer."""
    return states.available | (states.inflight if include_inflight else frozenset())


def readable_partitions(states: PartitionStates, *, allow_inflight: bool = False) -> frozenset:
    """The partitions readers and table services may use (``HoodieTableConfig#isMetadataPartitionAvailable``):
    available ones only; RFC-45: "a metadata partition cannot be used while an indexing action on it is
    pending". ``allow_inflight=True`` is the broken reader."""
    return states.available | (states.inflight if allow_inflight else frozenset())


def valid_instants(dt_completed: Iterable[str], mdt_own: Iterable[str] = ()) -> frozenset:
    """The MDT deltacommits an MDT reader merges (``HoodieTableMetadataUtil#getValidInstantTimestamps``):
    those whose data-table instant completed, plus the MDT's own instants (compactions, initialisation).
    A data-table commit writes its MDT deltacommit before it completes, so a crash in between leaves a
    completed MDT deltacommit that no reader may use."""
    return frozenset(dt_completed) | frozenset(mdt_own)


def file_group_ids(partition: str, count: int | None = None) -> tuple[str, ...]:
    """The file ids of a partition's file groups (``HoodieTableMetadataUtil#getFileIDForFileGroup``:
    prefix + 4-digit index + ``-0``), ``count`` defaulting to :data:`DEFAULT_FILE_GROUPS`."""
    n = DEFAULT_FILE_GROUPS[partition] if count is None else count
    if n < 1:
        raise ValueError(f"a metadata partition has at least one file group, not {n}")
    return tuple(f"{FILE_ID_PREFIX[partition]}{i:04d}-0" for i in range(n))


def file_group_index(key: str, count: int) -> int:
    """The file group an MDT record key goes to (``HoodieTableMetadataUtil#mapRecordKeyToFileGroupIndex``):
    Java's ``String#hashCode`` of the key (32-bit wrap-around), then ``abs(abs(h) % count)`` with Java's
    ``Math.abs`` and remainder (``Math.abs(Integer.MIN_VALUE)`` stays negative)."""
    h = 0
    for ch in key:  # Java hashes UTF-16 code units: a character beyond U+FFFF is two surrogates
        for unit in ([ord(ch)] if ord(ch) < 0x10000 else _surrogates(ord(ch))):
            h = (31 * h + unit) & 0xFFFFFFFF
    h = h - (1 << 32) if h >= 1 << 31 else h
    a = h if h == -(1 << 31) else abs(h)
    r = abs(a) % count if a >= 0 else -(abs(a) % count)  # Java's remainder keeps the dividend's sign
    return abs(r)


def _surrogates(cp: int) -> list[int]:
    cp -= 0x10000
    return [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]


INDEX_PLAN_VERSION = 1  # ScheduleIndexActionExecutor.LATEST_INDEX_PLAN_VERSION


def index_plan(partitions: Iterable[str], upto: str) -> dict:
    """The ``HoodieIndexPlan`` record written to ``<t>.indexing.requested`` (``ScheduleIndexActionExecutor#
    execute``, ``buildIndexPartitionInfo``): one ``HoodieIndexPartitionInfo`` per partition, each with the
    plan's ``indexUptoInstant`` (field names of ``HoodieIndexPlan.avsc``)."""
    return {"version": INDEX_PLAN_VERSION,
            "indexPartitionInfos": [{"version": INDEX_PLAN_VERSION, "metadataPartitionPath": p,
                                     "indexUptoInstant": upto, "extraMetadata": None} for p in sorted(partitions)]}


def index_commit_metadata(partitions: Iterable[str], caught_up: str) -> dict:
    """The ``HoodieIndexCommitMetadata`` record of the completed indexing instant (``RunIndexActionExecutor#
    execute``): the partition infos carrying the instant the catch-up reached (``currentCaughtupInstant``)."""
    return {"version": INDEX_PLAN_VERSION, "operationType": None,
            "indexPartitionInfos": [{"version": INDEX_PLAN_VERSION, "metadataPartitionPath": p,
                                     "indexUptoInstant": caught_up, "extraMetadata": None} for p in sorted(partitions)]}


def entries_of(partition: str, write: tuple) -> frozenset:
    """The index entries one data-table write contributes to ``partition``. ``write`` is
    ``(instant time, ((record key, file group), ...))``; ``files`` indexes the file written
    (``<file group>_<instant>``), ``record_index`` the key's location, ``column_stats`` and
    ``bloom_filters`` one entry per file (its stats / its filter)."""
    t, records = write
    if partition == RECORD_INDEX:
        return frozenset((partition, key, fg) for key, fg in records)
    return frozenset((partition, f"{fg}_{t}", t) for _, fg in records)


def rebuild(partition: str, writes: Mapping[str, tuple], completed: Iterable[str]) -> frozenset:
    """The index an initialisation from scratch would build (``HoodieBackedTableMetadataWriter#
    initializeFromFilesystem`` over the committed files): the entries of every completed write, none
    of a pending or rolled-back one. ``writes`` maps instant time -> records written."""
    done = set(completed)
    out: set = set()
    for t in sorted(writes):
        if t in done:
            out |= entries_of(partition, (t, writes[t]))
    return frozenset(out)


__all__ = [
    "FILES", "COLUMN_STATS", "BLOOM_FILTERS", "RECORD_INDEX", "PARTITIONS", "SINGLE_WRITER", "OCC", "NBCC",
    "CONCURRENCY_MODES", "CAUGHT_UP", "WAIT", "SKIP_DEAD", "APPLY", "GONE", "PER_PARTITION", "INSTANT_TIME",
    "CATCHUP_CHECKS", "IndexingError", "ConcurrencySettings", "PartitionStates", "validate_indexing", "index_upto",
    "catchup_start", "catchup_list", "catchup_decision", "writer_partitions", "readable_partitions", "valid_instants",
    "entries_of", "rebuild", "FILE_ID_PREFIX", "DEFAULT_FILE_GROUPS", "file_group_ids", "file_group_index",
    "index_plan", "index_commit_metadata", "INDEX_PLAN_VERSION",
]
