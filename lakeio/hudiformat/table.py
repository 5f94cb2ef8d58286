"""``HudiTableWriter``: upserts, inserts and deletes into a real Hudi table (COW or MOR, table version 6 or 8).

Stands for ``SparkRDDWriteClient`` / ``HoodieJavaWriteClient`` (``startCommit``, ``upsert``/``insert``/``delete``,
``commit``, ``rollback``). This module is the facade; each concern is a module named after Hudi's concept:

* :mod:`.tableconfig`  -- ``hoodie.properties`` (``HoodieTableConfig``, ``initTable``) and the table schema
  (``TableSchemaResolver``);
* :mod:`.timeline_ops` -- requested / inflight / completed files and the commit metadata on disk
  (``HoodieActiveTimeline``, ``startCommit``, ``commitStats``);
* :mod:`.write_helper`, :mod:`.keygen` -- validation, de-duplication, the merge rule's ordering values
  (``HoodieWriteHelper``) and partition paths (``SimpleKeyGenerator``, ``KeyGenUtils``);
* :mod:`.fsview` -- the latest base file of every file group, from the model's file-system view
  (:class:`model.slicing.FileSystemView` over the writer's timeline and the data files listed on disk);
* :mod:`.index` -- the non-global SIMPLE index over those base files (``HoodieSimpleIndex``);
* :mod:`.write_handle`, :mod:`.cow`, :mod:`.mor` -- meta columns, markers, new file groups
  (``HoodieCreateHandle``), the copy-on-write path (``UpsertPartitioner``, ``HoodieMergeHandle``) and the
  merge-on-read path (``HoodieAppendHandle``, log files);
* :mod:`.rollback` -- rollback plan and metadata, deleting a failed write's files (``BaseRollbackActionExecutor``).

The writer owns the data files; the timeline files go through the on-disk layer
(:mod:`lakeio.ondisk.metadata`: ``encode_commit_metadata``, ``write_timeline_file``, rollback plan/metadata;
:mod:`lakeio.ondisk.properties`: ``write_hoodie_properties``), file names through :mod:`model.filenames`,
and every timeline transition is first applied to a :class:`model.timeline.Timeline` mirror, which refuses an
illegal one (complete twice, complete a requested instant, ...) before any file is written. The writer keeps no
file-group registry: file groups and slices are the model's, computed from that timeline and the files on disk.

Protocol (one instant at a time per call; ``commit``/``rollback`` may run on another thread than ``write_batch``)::

    w = HudiTableWriter(path, "MERGE_ON_READ", 8, record_key="key", ordering_field="ts", partition_field="p")
    w.start(t)                                   # t.<action>.requested + inflight
    result = w.write_batch(t, records, "upsert") # data files (+ markers); returns WriteResult
    w.commit(t, completion_time, result)         # completed timeline file with the commit metadata
    w.rollback(t, rollback_time, completion)     # or: undo a failed (pending) instant

What a write does (how Hudi's Spark upsert path behaves: ``HoodieWriteHelper.deduplicateRecords``,
``UpsertPartitioner``, ``HoodieMergeHandle``, ``HoodieAppendHandle``, ``HoodieCreateHandle``):

- records are de-duplicated by (partition, key) first: the greatest ordering value wins, ties go to the later
  row (no ordering field: the later row). ``insert`` does not de-duplicate or look up keys (Hudi's insert).
- index: non-global (a key is identified within its partition), built from the keys of the latest base file of
  every file group (SIMPLE index semantics); latest = newest base file whose instant completed or was written by
  this writer (its own writes not yet committed count, see :mod:`.fsview`).
- ``upsert``: keys found in a file group are updates, others inserts. A row whose ``_hoodie_is_deleted`` column
  is true is a delete (Hudi's soft-delete marker column; the column stays in the schema).
- ``delete``: every row is a delete of its key (only the key, partition and ordering columns are used).
- merge rule (``hoodie.record.merge.mode``): EVENT_TIME_ORDERING when an ordering field is given -- an incoming
  record (or ``_hoodie_is_deleted`` delete) replaces the stored one only if its ordering value is >= the
  stored one; COMMIT_TIME_ORDERING without one -- the incoming record always wins. ``delete`` operations
  always delete.
- COPY_ON_WRITE: every touched file group gets a new base file version named with the instant; unchanged rows
  keep their ``_hoodie_commit_time``/``_hoodie_commit_seqno`` and get the new ``_hoodie_file_name``; inserts go to
  new file groups (``max_file_rows`` rows each) or fill existing ones below ``small_file_rows``.
- MERGE_ON_READ: inserts go to new base files (new file groups); updates and deletes of a file group go to
  one new log file per file group per deltacommit (an Avro or Parquet data block, then a delete block). Table
  version 8: the log is named with the deltacommit's own instant; version 6: with the slice's base instant and
  the next free log version.
- markers: ``.hoodie/.temp/<instant>/<partition>/<file>.marker.<CREATE|MERGE|APPEND>`` are created before each
  data file (Hudi's direct markers), so a rollback after a crash finds every file the instant may have written;
  a commit deletes them.
- rollback of a pending instant: a ``rollback`` instant (plan in ``.rollback.requested``, metadata in the
  completed file) that deletes the instant's base files and, in version 8, its log files; in version 6 it
  appends a ROLLBACK command block (a new log version) to each file group the instant logged into, as 0.x
  does. Then the rolled-back instant's timeline files are deleted.
- record delegates (``record_delegates=True``; :mod:`.delegates`, Hudi's ``WriteStatus.getIndexStats()``): the
  write also returns, as one Arrow table in ``WriteResult.record_delegates``, each key its files wrote, deleted
  (a delete block) or dropped (a new base file version without it), so the metadata table's record-index update
  (:func:`lakeio.ondisk.mdt.apply_commit`) need not read the files again.
- partitions get ``.hoodie_partition_metadata``; ``hoodie.properties`` is written on creation (no metadata
  table: ``hoodie.table.metadata.partitions`` is absent, so readers list the directories). A caller that wraps
  ``commit`` in :func:`lakeio.ondisk.mdt.committing` (the pipeline does, table version 8) gets one.

Not written: compaction, clustering, clean, archival, savepoints, the metadata table, bloom filters in
footers, CDC, schema evolution (the schema is fixed by the first write), nested column types, global
indexes, appends to existing log files, rollback of completed instants (restore).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeio.errors import UserError
from lakeio.ondisk.reader import read_table
from model.instant import Action, State
from model.timeline import Timeline

from . import bucket as _bucket
from . import delegates as _delegates
from . import rollback as _rollback
from . import tableconfig, timeline_ops
from .cow import CopyOnWriteContext, read_base_rows
from .fsview import WriterView
from .index import SimpleIndex
from .keygen import DEFAULT_PARTITION, partition_paths, record_keys
from .mor import MergeOnReadContext
from .schema import avro_schema, avro_schema_json, data_schema, full_schema
from .tableconfig import COPY_ON_WRITE, MERGE_ON_READ, TYPE_ALIASES
from .timeline_ops import time_to_epoch_seconds
from .write_handle import PARTITION_METAFILE, atomic_write, write_partition_metadata
from .write_helper import (COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING, IS_DELETED, OPERATIONS, check_records,
                           conform_schema, deduplicate, delete_mask, operation_type)

__all__ = ["HudiTableWriter", "WriteResult", "COPY_ON_WRITE", "MERGE_ON_READ", "OPERATIONS", "IS_DELETED",
           "DEFAULT_PARTITION", "EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING", "PARTITION_METAFILE",
           "time_to_epoch_seconds"]

#: Writes a log file (MOR data logs, v6 rollback command blocks). Looked up here at call time: the crash
#: harness (:mod:`pipeline.crash`) wraps ``table._atomic_write`` to stop a run after a data file is written.
_atomic_write = atomic_write


@dataclass
class WriteResult:
    """What one ``write_batch`` wrote: the ``HoodieWriteStat`` dicts (Hudi field names) and counters.

    JSON-serialisable (:meth:`to_json` / :meth:`from_json`) so a driver can persist it before acknowledging
    and re-commit it after a restart."""

    instant_time: str
    action: str
    operation: str
    schema: str
    write_stats: list[dict] = field(default_factory=list)
    #: the write's record delegates (:mod:`.delegates`: an Arrow table, key by key what each file did) when the
    #: writer collected them (``record_delegates=True``), else None; not part of the JSON form
    record_delegates: object = field(default=None, compare=False, repr=False)

    @property
    def partition_to_write_stats(self) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for s in self.write_stats:
            out.setdefault(s["partitionPath"], []).append(s)
        return out

    @property
    def files(self) -> list[str]:
        """Paths (relative to the base path) of the data files written."""
        return [s["path"] for s in self.write_stats]

    def _sum(self, key: str) -> int:
        return sum(int(s.get(key) or 0) for s in self.write_stats)

    @property
    def num_inserts(self) -> int:
        return self._sum("numInserts")

    @property
    def num_updates(self) -> int:
        return self._sum("numUpdateWrites")

    @property
    def num_deletes(self) -> int:
        return self._sum("numDeletes")

    def to_dict(self) -> dict:
        return {"instant_time": self.instant_time, "action": self.action, "operation": self.operation,
                "schema": self.schema, "write_stats": self.write_stats}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @staticmethod
    def from_dict(d: dict) -> "WriteResult":
        return WriteResult(d["instant_time"], d["action"], d["operation"], d["schema"], list(d["write_stats"]))

    @staticmethod
    def from_json(s: str) -> "WriteResult":
        return WriteResult.from_dict(json.loads(s))


class HudiTableWriter:
    """Write a Hudi table from Python. See the module docstring for the exact behaviour."""

    def __init__(self, base_path: str | os.PathLike, table_type: str = COPY_ON_WRITE, table_version: int = 8,
                 record_key: str = "key", ordering_field: str | None = None, partition_field: str | None = None,
                 *, table_name: str | None = None, hive_style_partitioning: bool = True,
                 log_block_format: str = "avro", max_file_rows: int = 1_000_000, small_file_rows: int = 0,
                 compression: str = "snappy", timezone: str = "UTC", for_task: bool = False,
                 delete_field: str = IS_DELETED, record_delegates: bool = False):
        self.base_path = Path(base_path)
        ttype = TYPE_ALIASES.get(str(table_type).lower(), str(table_type).upper())
        if ttype not in (COPY_ON_WRITE, MERGE_ON_READ):
            raise UserError(f"table type: {table_type!r}; expected COPY_ON_WRITE/cow or MERGE_ON_READ/mor")
        if table_version not in (6, 8):
            raise UserError(f"table version: {table_version}; this writer writes table versions 6 and 8")
        if log_block_format not in ("avro", "parquet"):
            raise UserError(f"log block format: {log_block_format!r}; expected avro or parquet")
        self.table_type = ttype
        self.table_version = table_version
        self.layout = 1 if table_version == 6 else 2
        self.record_key = record_key
        self.ordering_field = ordering_field
        self.partition_field = partition_field
        self.delete_field = delete_field  # a true value marks a delete in an upsert (soft-delete column)
        self.table_name = table_name or (self.base_path.name.replace("-", "_") or "hudi_table")
        self.hive_style = hive_style_partitioning
        self.merge_mode = EVENT_TIME_ORDERING if ordering_field else COMMIT_TIME_ORDERING
        self.log_block_format = log_block_format
        self.max_file_rows = max(1, int(max_file_rows))
        self.small_file_rows = int(small_file_rows)
        self.compression = compression
        self.timezone = timezone
        self.action = Action.COMMIT if ttype == COPY_ON_WRITE else Action.DELTACOMMIT
        # collect each write's record delegates (WriteResult.record_delegates) for the MDT's record index
        self.record_delegates = bool(record_delegates)
        self._delegates: _delegates.Collector | None = None  # the current write's, while it writes

        self._lock = threading.RLock()
        self._write_lock = threading.Lock()
        self._data_schema: pa.Schema | None = None
        self._schema_json: str | None = None  # Avro schema with meta fields
        self._parsed_schema = None
        self._written: dict[str, WriteResult] = {}  # own instants written and not yet committed/rolled back
        self._timeline_gen = 0  # bumped on every change of self.timeline (keys the cached view)
        self._view = WriterView(self.base_path)
        self._index = SimpleIndex(self.base_path)
        self.reconciled: dict[str, list[str]] = {}  # instant -> files of failed/duplicate attempts deleted
        # a writer task inside a Spark job (``for_task``): its write token and task number (set per write)
        self.write_token: str | None = None
        self.task_number: int | None = None
        self._own_pending: frozenset[str] = frozenset()
        self.for_task = for_task
        tableconfig.init_or_check(self)
        self.refresh()
        if not for_task:  # a task never cleans up after others: the driver owns .hoodie/.temp
            timeline_ops.clean_completed_temp(self)

    # ---------------------------------------------------------------------------------------- table set-up

    @property
    def hoodie_dir(self) -> Path:
        return self.base_path / ".hoodie"

    @property
    def timeline_dir(self) -> Path:
        return self.hoodie_dir if self.table_version == 6 else self.hoodie_dir / "timeline"

    def table_properties(self) -> dict[str, str]:
        """The ``hoodie.properties`` entries of a new table (:func:`.tableconfig.table_properties`)."""
        return tableconfig.table_properties(self)

    def refresh(self) -> None:
        """Re-read the timeline from disk (own pending writes are kept); the data files are listed per write."""
        t = read_table(self.base_path)
        with self._lock:
            self.timeline: Timeline = t.timeline
            self._timeline_gen += 1
            self._index.clear()
            if self._data_schema is None:
                data = tableconfig.resolve_schema(self.base_path, t.commit_metadata, t.base_files)
                if data is not None:
                    self._set_schema(data)

    def _set_schema(self, data: pa.Schema) -> None:
        self._data_schema = data
        self._full_schema = full_schema(data)
        self._schema_json = avro_schema_json(self.table_name, data, with_meta=True)
        self._schema_json_nometa = avro_schema_json(self.table_name, data, with_meta=False)
        self._parsed_schema = fastavro.parse_schema(avro_schema(self.table_name, data, with_meta=True))

    def _write_file(self, path: Path, data: bytes, tmp_dir: Path) -> int:
        """Write a log file through ``_atomic_write`` (this module's, looked up now: see its comment)."""
        return _atomic_write(path, data, tmp_dir)

    # ---------------------------------------------------------------------------------------- timeline

    def completed_instants(self) -> list[tuple[str, str, str | None]]:
        """(requested time, action, completion time) of completed instants, in requested-time order."""
        return timeline_ops.completed_instants(self)

    def pending_instants(self) -> list[tuple[str, str, str]]:
        """(requested time, action, state label) of pending instants (failed writes after a crash, or own)."""
        return timeline_ops.pending_instants(self)

    def _timeline_path(self, requested: str, action: Action, state: State, completion: str | None = None) -> Path:
        return timeline_ops.timeline_path(self, requested, action, state, completion)

    def start(self, instant_time: str, operation: str = "upsert") -> None:
        """Create ``<t>.<action>.requested`` and the inflight file (:func:`.timeline_ops.start`)."""
        timeline_ops.start(self, instant_time, operation)

    def commit(self, instant_time: str, completion_time: str, result: WriteResult | None = None,
               extra_metadata: dict[str, str] | None = None) -> Path:
        """Complete ``instant_time`` with the commit metadata of ``result`` (:func:`.timeline_ops.commit`).

        ``result`` defaults to what this writer's ``write_batch`` returned for the instant (none: an empty
        commit). Works for a pending instant of an earlier process too, given its persisted ``WriteResult``
        (re-commit after a restart). ``extra_metadata`` goes to the commit's ``extraMetadata`` (e.g. a
        checkpoint id). Returns the completed file's path."""
        return timeline_ops.commit(self, instant_time, completion_time, result, extra_metadata)

    def rollback(self, instant_time: str, rollback_time: str, completion_time: str) -> Path:
        """Roll back the pending write ``instant_time`` as instant ``rollback_time`` (completed at
        ``completion_time``): delete its data files (tv6 MOR: ROLLBACK command blocks for its log writes),
        complete the rollback instant, delete the rolled-back instant's timeline files (:mod:`.rollback`).

        Raises :class:`UserError` if the instant is completed or unknown, or if a later pending instant of this
        writer wrote into a file group it touched (roll that one back first)."""
        return _rollback.rollback(self, instant_time, rollback_time, completion_time)

    # ---------------------------------------------------------------------------------------- writing

    def _validate(self, records: pa.Table, operation: str) -> pa.Table:
        records = check_records(records, operation, self.record_key, self.partition_field, self.ordering_field)
        if operation == "delete":
            return records
        data = data_schema(records.schema)
        if self._data_schema is None:
            with self._lock:
                if self._data_schema is None:
                    self._set_schema(data)
        return conform_schema(records, data, self._data_schema)

    def write_task(self, instant_time: str, records: pa.Table, operation: str = "upsert", *, num_buckets: int,
                   write_token: str, task_number: int, own_pending=()) -> WriteResult:
        """One writer task's write (a Spark task; the writer opened with ``for_task=True``): ``records`` are the
        task's share of the batch, routed to file groups by the bucket index (:mod:`.bucket`: the bucket's file
        group is updated, or created with the bucket's inserts); every file is named with ``write_token``
        (``<partition>-<stage>-<attempt>``) and gets a marker first. ``own_pending``: pending instants of the
        same job whose files count as written (written by earlier batches, not yet committed on disk)."""
        if not self.for_task:
            raise UserError("write_task: open the writer with for_task=True")
        self.write_token, self.task_number = write_token, task_number
        self._own_pending = frozenset(own_pending)
        try:
            return self.write_batch(instant_time, records, operation, num_buckets=num_buckets)
        finally:
            self.write_token, self.task_number, self._own_pending = None, None, frozenset()

    def write_batch(self, instant_time: str, records: pa.Table, operation: str = "upsert", *,
                    num_buckets: int | None = None) -> WriteResult:
        """Write ``records`` under the pending instant ``instant_time``; return the write statistics.

        One call per instant. ``num_buckets``: route by the bucket index (one file group per bucket and
        partition) instead of the SIMPLE index's new file groups. Raises :class:`UserError` for bad records
        (missing/null key, partition or ordering value; unsupported types; a schema that differs from the
        table's)."""
        operation = operation.lower()
        with self._write_lock:
            with self._lock:
                inst = self.timeline.get(instant_time, self.action)
                if inst is None or inst.state is not State.INFLIGHT:
                    raise UserError(f"write {instant_time}: instant is not inflight (call start() first)")
                if instant_time in self._written:
                    raise UserError(f"write {instant_time}: already written (one write_batch per instant)")
            records = self._validate(records, operation)
            self._delegates = _delegates.Collector() if self.record_delegates else None
            try:
                if self._data_schema is None:  # a delete into an empty table
                    result = WriteResult(instant_time, self.action.value, operation_type(operation), "", [])
                else:
                    codes, paths = partition_paths(records, self.partition_field, self.hive_style)
                    if operation != "insert":
                        records, codes = deduplicate(records, codes, self.record_key, self.ordering_field)
                    result = self._write(instant_time, records, codes, paths, operation, num_buckets)
                if self._delegates is not None:
                    result.record_delegates = self._delegates.table()
            finally:
                self._delegates = None
            with self._lock:
                self._written[instant_time] = result
            return result

    def _write(self, instant: str, records: pa.Table, codes: np.ndarray, paths: list[str],
               operation: str, num_buckets: int | None = None) -> WriteResult:
        """Per partition (in path order): tag the rows with the file groups holding their keys (the SIMPLE index
        over the latest base files of the writer's view; with ``num_buckets``, the bucket's file group), then
        write them on the COW or MOR path."""
        hard_del = operation == "delete"
        is_del = delete_mask(records, operation, self.delete_field)
        keys = record_keys(records, self.record_key)
        with self._lock:
            latest = self._view.latest(self.timeline, self._timeline_gen, set(self._written) | self._own_pending,
                                       paths)
        if num_buckets is not None:
            stats = self._write_buckets(instant, records, codes, paths, keys, is_del, hard_del, latest, num_buckets)
            return WriteResult(instant, self.action.value, operation_type(operation), self._schema_json_nometa,
                               stats)
        context = CopyOnWriteContext if self.table_type == COPY_ON_WRITE else MergeOnReadContext
        stats: list[dict] = []
        task = [0]
        for code in sorted(range(len(paths)), key=lambda c: paths[c]):
            part = paths[code]
            rows = np.nonzero(codes == code)[0]
            if not len(rows):
                continue
            part_latest = latest.get(part, {})
            if operation == "insert":
                found, updates = np.zeros(len(rows), dtype=bool), {}
            else:
                found, updates = self._index.tag_location(part, part_latest, keys, rows)
            inserts = rows[~found & ~is_del[rows]]
            if not updates and not len(inserts):
                continue
            write_partition_metadata(self.base_path, self.hoodie_dir, part, instant)
            ctx = context(self, instant, part, records, keys, is_del, hard_del, task)
            stats += ctx.write(updates, inserts, part_latest)
        return WriteResult(instant, self.action.value, operation_type(operation), self._schema_json_nometa, stats)

    def _write_buckets(self, instant, records, codes, paths, keys, is_del, hard_del, latest,
                       num_buckets: int) -> list[dict]:
        """The bucket index's write (``HoodieSimpleBucketIndex#tagLocation``, ``SparkBucketIndexPartitioner``):
        per partition and bucket (ascending), the rows whose key the bucket's file group holds are updates, the
        others inserts; the group is updated or created (:meth:`.write_handle.WriteContext.write_bucket`)."""
        context = CopyOnWriteContext if self.table_type == COPY_ON_WRITE else MergeOnReadContext
        buckets = _bucket.bucket_ids(keys if pa.types.is_string(keys.type) else pc.cast(keys, pa.string()),
                                     num_buckets)
        stats: list[dict] = []
        task = [0]
        for code in sorted(range(len(paths)), key=lambda c: paths[c]):
            part = paths[code]
            rows = np.nonzero(codes == code)[0]
            if not len(rows):
                continue
            part_latest = latest.get(part, {})
            ctx = None
            for b in np.unique(buckets[rows]):
                brows = rows[buckets[rows] == b]
                fid = _bucket.bucket_file_id(self.table_name, part, int(b))
                base = part_latest.get(fid)
                extra = {}
                if base is not None:
                    if context is CopyOnWriteContext:  # the merge rewrites the whole file: read it once, and
                        # look the keys up in it once (the merge takes the positions)
                        extra["old"] = read_base_rows(self, base)
                    pos = self._index.lookup(base, keys, brows)
                    found = pos.is_valid().to_numpy(zero_copy_only=False)
                    if context is CopyOnWriteContext:
                        extra["positions"] = pos.filter(pos.is_valid()).to_numpy().astype(np.int64)
                else:
                    found = np.zeros(len(brows), dtype=bool)
                updates = brows[found]
                inserts = brows[~found & ~is_del[brows]]
                if not len(updates) and not len(inserts):
                    continue
                if ctx is None:
                    write_partition_metadata(self.base_path, self.hoodie_dir, part, instant)
                    ctx = context(self, instant, part, records, keys, is_del, hard_del, task)
                stat = ctx.write_bucket(fid, base, updates, inserts, **extra)
                if stat is not None:
                    stats.append(stat)
        return stats

