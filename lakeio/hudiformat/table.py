"""``HudiTableWriter``: upserts, inserts and deletes into a real Hudi table (COW or MOR, table version 6 or 8).

The writer owns the data files; the timeline files go through the on-disk layer
(:mod:`lakeio.ondisk.metadata`: ``encode_commit_metadata``, ``write_timeline_file``, rollback plan/metadata;
:mod:`lakeio.ondisk.properties`: ``write_hoodie_properties``), file names through :mod:`model.filenames`,
and every timeline transition is first applied to a :class:`model.timeline.Timeline` mirror, which refuses an
illegal one (complete twice, complete a requested instant, ...) before any file is written.

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
  every file group (SIMPLE index semantics).
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
- partitions get ``.hoodie_partition_metadata``; ``hoodie.properties`` is written on creation (no metadata
  table: ``hoodie.table.metadata.partitions`` is absent, so readers list the directories).

Not written: compaction, clustering, clean, archival, savepoints, the metadata table, bloom filters in
footers, CDC, schema evolution (the schema is fixed by the first write), nested column types, global
indexes, appends to existing log files, rollback of completed instants (restore).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeio.errors import UserError
from lakeio.ondisk import metadata as md
from lakeio.ondisk.properties import read_properties, write_hoodie_properties
from lakeio.ondisk.reader import read_table
from model import filenames as fn
from model.instant import Action, State
from model.timeline import Timeline

from . import basefile, logfile
from .schema import (COMMIT_SEQNO, COMMIT_TIME, FILE_NAME, META_COLUMNS, PARTITION_PATH, RECORD_KEY,
                     _avro_type, avro_schema, avro_schema_json, data_schema, full_schema)

COPY_ON_WRITE = "COPY_ON_WRITE"
MERGE_ON_READ = "MERGE_ON_READ"
_TYPE_ALIASES = {"cow": COPY_ON_WRITE, "copy_on_write": COPY_ON_WRITE, "mor": MERGE_ON_READ,
                 "merge_on_read": MERGE_ON_READ}
OPERATIONS = ("upsert", "insert", "delete")
IS_DELETED = "_hoodie_is_deleted"
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
#: ``hoodie.record.merge.strategy.id`` values (``HoodieRecordMerger``): event-time (default) / commit-time.
_MERGE_STRATEGY = {EVENT_TIME_ORDERING: "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
                   COMMIT_TIME_ORDERING: "ce9acb64-bde0-424c-9b91-f6ebba25356d"}
_PAYLOAD = {EVENT_TIME_ORDERING: "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
            COMMIT_TIME_ORDERING: "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"}
PARTITION_METAFILE = ".hoodie_partition_metadata"
_FILE_ID_NAMESPACE = uuid.UUID("4f1c3c2e-6a0e-4b53-9a53-2d3f6f0b8a11")


# ------------------------------------------------------------------------------------------------ results


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


@dataclass
class _FileGroup:
    partition: str
    file_id: str
    bases: list[fn.BaseFile] = field(default_factory=list)
    logs: list[fn.LogFile] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------ helpers


def time_to_epoch_seconds(t: str) -> float:
    """A ``yyyyMMddHHmmssSSS`` time (UTC) as epoch seconds (for the modification time of tv6 completed files)."""
    d = _dt.datetime.strptime(t[:14], "%Y%m%d%H%M%S").replace(tzinfo=_dt.timezone.utc)
    ms = int(t[14:17] or 0) if len(t) >= 17 else 999
    return d.timestamp() + ms / 1000.0


def _partition_value_str(v: Any) -> str:
    if v is None:
        return DEFAULT_PARTITION
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, _dt.date):
        return v.isoformat()
    s = str(v)
    return s if s else DEFAULT_PARTITION


def _ordering_branch(t: pa.DataType) -> str:
    """The Avro primitive an ordering value is encoded as: the column's own Avro type
    (:func:`schema._avro_type`, logical types reduced to their primitive), for types with an order."""
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_string(t)
            or pa.types.is_large_string(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t)):
        raise UserError(f"ordering field: type {t} is not supported (integers, floats, strings, dates, timestamps)")
    if pa.types.is_timestamp(t):
        return "long"  # any unit or zone: the stored integer orders the values
    avro = _avro_type(pa.field("ordering", t))
    return avro["type"] if isinstance(avro, dict) else avro


def _ordering_value(v: Any) -> Any:
    """A Python ordering value as Avro encodes it (dates as days, timestamps as their integer)."""
    if isinstance(v, _dt.datetime):
        raise UserError("ordering field: convert timestamps to integers before writing")
    if isinstance(v, _dt.date):
        return (v - _dt.date(1970, 1, 1)).days
    return v


# ------------------------------------------------------------------------------------------------ writer


class HudiTableWriter:
    """Write a Hudi table from Python. See the module docstring for the exact behaviour."""

    def __init__(self, base_path: str | os.PathLike, table_type: str = COPY_ON_WRITE, table_version: int = 8,
                 record_key: str = "key", ordering_field: str | None = None, partition_field: str | None = None,
                 *, table_name: str | None = None, hive_style_partitioning: bool = True,
                 log_block_format: str = "avro", max_file_rows: int = 1_000_000, small_file_rows: int = 0,
                 compression: str = "snappy", timezone: str = "UTC"):
        self.base_path = Path(base_path)
        ttype = _TYPE_ALIASES.get(str(table_type).lower(), str(table_type).upper())
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
        self.table_name = table_name or (self.base_path.name.replace("-", "_") or "hudi_table")
        self.hive_style = hive_style_partitioning
        self.merge_mode = EVENT_TIME_ORDERING if ordering_field else COMMIT_TIME_ORDERING
        self.log_block_format = log_block_format
        self.max_file_rows = max(1, int(max_file_rows))
        self.small_file_rows = int(small_file_rows)
        self.compression = compression
        self.timezone = timezone
        self.action = Action.COMMIT if ttype == COPY_ON_WRITE else Action.DELTACOMMIT

        self._lock = threading.RLock()
        self._write_lock = threading.Lock()
        self._data_schema: pa.Schema | None = None
        self._schema_json: str | None = None  # Avro schema with meta fields
        self._parsed_schema = None
        self._written: dict[str, WriteResult] = {}  # own instants written and not yet committed/rolled back
        self._fgs_of_instant: dict[str, set[tuple[str, str]]] = {}
        self._keys_cache: dict[str, pa.Array] = {}
        self._index: dict[str, tuple[pa.Array, np.ndarray, list[str]]] = {}  # partition -> SIMPLE index
        self._open_or_create()

    # ---------------------------------------------------------------------------------------- table set-up

    @property
    def hoodie_dir(self) -> Path:
        return self.base_path / ".hoodie"

    @property
    def timeline_dir(self) -> Path:
        return self.hoodie_dir if self.table_version == 6 else self.hoodie_dir / "timeline"

    def table_properties(self) -> dict[str, str]:
        """The ``hoodie.properties`` entries of a new table (``HoodieTableConfig``; see module docstring)."""
        p = {
            "hoodie.table.name": self.table_name,
            "hoodie.table.type": self.table_type,
            "hoodie.table.version": str(self.table_version),
            "hoodie.timeline.layout.version": str(self.layout),
            "hoodie.archivelog.folder": "archived",
            "hoodie.table.recordkey.fields": self.record_key,
            "hoodie.table.base.file.format": "PARQUET",
            "hoodie.table.log.file.format": "HOODIE_LOG",
            "hoodie.datasource.write.hive_style_partitioning": "true" if self.hive_style else "false",
            "hoodie.datasource.write.partitionpath.urlencode": "false",
            "hoodie.datasource.write.drop.partition.columns": "false",
            "hoodie.table.timeline.timezone": self.timezone,
            "hoodie.compaction.payload.class": _PAYLOAD[self.merge_mode],
        }
        if self.ordering_field:
            p["hoodie.table.precombine.field"] = self.ordering_field
        if self.partition_field:
            p["hoodie.table.partition.fields"] = self.partition_field
        if self.table_version == 6:
            p["hoodie.table.keygenerator.class"] = ("org.apache.hudi.keygen.SimpleKeyGenerator" if self.partition_field
                                                    else "org.apache.hudi.keygen.NonpartitionedKeyGenerator")
            p["hoodie.compaction.record.merger.strategy"] = _MERGE_STRATEGY[EVENT_TIME_ORDERING]
        else:
            p["hoodie.table.initial.version"] = str(self.table_version)
            p["hoodie.timeline.path"] = "timeline"
            p["hoodie.timeline.history.path"] = "history"
            p["hoodie.table.keygenerator.type"] = "SIMPLE" if self.partition_field else "NON_PARTITIONED"
            p["hoodie.record.merge.mode"] = self.merge_mode
            p["hoodie.record.merge.strategy.id"] = _MERGE_STRATEGY[self.merge_mode]
        return p

    def _open_or_create(self) -> None:
        props_path = self.hoodie_dir / "hoodie.properties"
        if self.base_path.exists() and not self.base_path.is_dir():
            raise UserError(f"{self.base_path}: not a directory")
        if not props_path.exists():
            if self.base_path.exists() and any(p.name != ".hoodie" for p in self.base_path.iterdir()):
                raise UserError(f"{self.base_path}: exists and is not an empty directory or a Hudi table")
            self.hoodie_dir.mkdir(parents=True, exist_ok=True)
            for d in (".aux", ".schema", ".temp", "archived" if self.table_version == 6 else "timeline/history"):
                (self.hoodie_dir / d).mkdir(parents=True, exist_ok=True)
            write_hoodie_properties(props_path, self.table_properties())
        else:
            self._check_properties(read_properties(props_path), props_path)
        self.refresh()

    def _check_properties(self, props: dict[str, str], source: Path) -> None:
        want = self.table_properties()
        for key in ("hoodie.table.type", "hoodie.table.version", "hoodie.table.recordkey.fields",
                    "hoodie.table.partition.fields", "hoodie.table.precombine.field"):
            have = props.get(key, "")
            if have != want.get(key, ""):
                raise UserError(f"{source}: holds a different table ({key}={have!r}, this writer needs "
                                f"{want.get(key, '')!r})")
        self.table_name = props.get("hoodie.table.name", self.table_name)
        self.hive_style = props.get("hoodie.datasource.write.hive_style_partitioning", "false") == "true"
        self.timezone = props.get("hoodie.table.timeline.timezone", self.timezone)

    def refresh(self) -> None:
        """Re-read the timeline and the data files from disk (own pending writes are kept)."""
        t = read_table(self.base_path)
        with self._lock:
            self.timeline: Timeline = t.timeline
            self._fgs: dict[tuple[str, str], _FileGroup] = {}
            for b in t.base_files:
                self._fg(b.partition, b.file_id).bases.append(b)
            for lg in t.log_files:
                self._fg(lg.partition, lg.file_id).logs.append(lg)
            for g in self._fgs.values():
                g.bases.sort(key=lambda b: b.instant_time)
                g.logs.sort(key=fn.log_order_key)
            self._index.clear()
            if self._data_schema is None:
                self._load_schema(t.commit_metadata)

    def _load_schema(self, commit_metadata: dict[str, dict]) -> None:
        for t in sorted(commit_metadata, reverse=True):
            s = (commit_metadata[t].get("extraMetadata") or {}).get("schema")
            if s:
                self._set_schema_from_avro(json.loads(s))
                return

    def _set_schema_from_avro(self, avro: dict) -> None:
        # Re-derive the Arrow schema from a base file of the table when one exists (exact types).
        for g in self._fgs.values():
            for b in g.bases:
                sch = pq.read_schema(self.base_path / b.path)
                self._set_schema(data_schema(sch))
                return
        self._schema_from_avro_fields(avro)

    def _schema_from_avro_fields(self, avro: dict) -> None:
        mapping = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
                   "double": pa.float64(), "string": pa.string(), "bytes": pa.binary()}
        fields = []
        for f in avro["fields"]:
            if f["name"] in META_COLUMNS:
                continue
            t = [x for x in f["type"] if x != "null"][0] if isinstance(f["type"], list) else f["type"]
            if isinstance(t, dict):
                lt = t.get("logicalType")
                at = {"date": pa.date32(), "timestamp-millis": pa.timestamp("ms", tz="UTC"),
                      "timestamp-micros": pa.timestamp("us", tz="UTC")}.get(lt, mapping.get(t.get("type")))
            else:
                at = mapping[t]
            fields.append(pa.field(f["name"], at))
        self._set_schema(pa.schema(fields))

    def _set_schema(self, data: pa.Schema) -> None:
        self._data_schema = data
        self._full_schema = full_schema(data)
        self._schema_json = avro_schema_json(self.table_name, data, with_meta=True)
        self._schema_json_nometa = avro_schema_json(self.table_name, data, with_meta=False)
        self._parsed_schema = fastavro.parse_schema(avro_schema(self.table_name, data, with_meta=True))

    def _fg(self, partition: str, file_id: str) -> _FileGroup:
        key = (partition, file_id)
        g = self._fgs.get(key)
        if g is None:
            g = self._fgs[key] = _FileGroup(partition, file_id)
        return g

    # ---------------------------------------------------------------------------------------- visibility

    def _visible(self, instant: str) -> bool:
        """Files of this instant are part of the writer's view: completed, or written by this writer."""
        return instant in self._written or self.timeline.is_completed(instant)

    def _latest_base(self, g: _FileGroup) -> fn.BaseFile | None:
        for b in reversed(g.bases):
            if self._visible(b.instant_time):
                return b
        return None

    def _keys_of(self, b: fn.BaseFile) -> pa.Array:
        path = str(self.base_path / b.path)
        keys = self._keys_cache.get(path)
        if keys is None:
            keys = pq.read_table(path, columns=[RECORD_KEY]).column(0).combine_chunks()
            self._keys_cache[path] = keys
        return keys

    def _partition_index(self, partition: str) -> tuple[pa.Array, np.ndarray, list[str]]:
        """(keys, file-group codes, file ids) of the latest visible base file of every file group in the
        partition: the non-global SIMPLE index (keys are looked up with ``pc.index_in``)."""
        idx = self._index.get(partition)
        if idx is None:
            fids, arrays, codes = [], [], []
            for (p, fid), g in sorted(self._fgs.items()):
                if p != partition:
                    continue
                b = self._latest_base(g)
                if b is not None:
                    k = self._keys_of(b)
                    codes.append(np.full(len(k), len(fids), dtype=np.int64))
                    arrays.append(k)
                    fids.append(fid)
            keys = pa.concat_arrays(arrays) if arrays else pa.array([], pa.string())
            idx = (keys, np.concatenate(codes) if codes else np.zeros(0, np.int64), fids)
            self._index[partition] = idx
        return idx

    # ---------------------------------------------------------------------------------------- queries

    def completed_instants(self) -> list[tuple[str, str, str | None]]:
        """(requested time, action, completion time) of completed instants, in requested-time order."""
        with self._lock:
            return [(i.requested_time, i.shown_action.value, i.completion_time) for i in self.timeline.completed()]

    def pending_instants(self) -> list[tuple[str, str, str]]:
        """(requested time, action, state label) of pending instants (failed writes after a crash, or own)."""
        with self._lock:
            return [(i.requested_time, i.action.value, i.state.label) for i in self.timeline.pending()]

    # ---------------------------------------------------------------------------------------- timeline

    def _timeline_path(self, requested: str, action: Action, state: State, completion: str | None = None) -> Path:
        return self.timeline_dir / fn.timeline_file_name(requested, action, state, completion, self.layout)

    def _write_completed(self, path: Path, data: bytes, completion_time: str) -> None:
        md.write_timeline_file(path, data)
        if self.layout == 1:  # tv6 readers take the completion time from the file's modification time
            ts = time_to_epoch_seconds(completion_time)
            os.utime(path, (ts, ts))

    def start(self, instant_time: str, operation: str = "upsert") -> None:
        """Create ``<t>.<action>.requested`` and the inflight file (``BaseHoodieWriteClient.startCommit``)."""
        with self._lock:
            self.timeline.create(instant_time, self.action)
            self.timeline.transition_to_inflight(instant_time, self.action)
        md.write_timeline_file(self._timeline_path(instant_time, self.action, State.REQUESTED), b"")
        inflight = md.make_commit_metadata({}, operation=_operation_type(operation))
        md.write_timeline_file(self._timeline_path(instant_time, self.action, State.INFLIGHT),
                               md.encode_commit_metadata(inflight, self.table_version))

    def commit(self, instant_time: str, completion_time: str, result: WriteResult | None = None,
               extra_metadata: dict[str, str] | None = None) -> Path:
        """Complete ``instant_time`` with the commit metadata of ``result``.

        ``result`` defaults to what this writer's ``write_batch`` returned for the instant (none: an empty
        commit). Works for a pending instant of an earlier process too, given its persisted ``WriteResult``
        (re-commit after a restart). ``extra_metadata`` goes to the commit's ``extraMetadata`` (e.g. a
        checkpoint id). Returns the completed file's path."""
        with self._lock:
            if result is None:
                result = self._written.get(instant_time)
            inst = self.timeline.get(instant_time, self.action)
            if inst is None:
                raise UserError(f"commit {instant_time}: no such {self.action.value} on the timeline")
            probe = self.timeline.copy()
            probe.complete(instant_time, self.action, completion_time)  # refuses illegal completion first
            schema_json = result.schema if result is not None else (self._schema_json_nometa
                                                                    if self._data_schema is not None else None)
            stats = result.partition_to_write_stats if result is not None else {}
            operation = result.operation if result is not None else "UPSERT"
            meta = md.make_commit_metadata(stats, operation=operation, schema_json=schema_json,
                                           extra_metadata=extra_metadata)
            data = md.encode_commit_metadata(meta, self.table_version)
            path = self._timeline_path(instant_time, self.action, State.COMPLETED, completion_time)
            self._write_completed(path, data, completion_time)
            self.timeline.complete(instant_time, self.action, completion_time)
            if instant_time not in self._written and result is not None:
                # a re-commit of another process's write: its files become visible
                self._register_files(result)
                self._index.clear()
            self._written.pop(instant_time, None)
        shutil.rmtree(self.hoodie_dir / ".temp" / instant_time, ignore_errors=True)
        return path

    def _register_files(self, result: WriteResult) -> None:
        for s in result.write_stats:
            part = s["partitionPath"]
            name = s["path"].rsplit("/", 1)[-1]
            f = fn.parse_data_file(name, part)
            g = self._fg(part, s["fileId"])
            if isinstance(f, fn.BaseFile) and f not in g.bases:
                g.bases.append(f)
                g.bases.sort(key=lambda b: b.instant_time)
            elif isinstance(f, fn.LogFile) and f not in g.logs:
                g.logs.append(f)
                g.logs.sort(key=fn.log_order_key)

    # ---------------------------------------------------------------------------------------- writing

    def _partition_paths(self, records: pa.Table) -> tuple[np.ndarray, list[str]]:
        """(code per row, partition path per code): ``<field>=<value>`` (hive style) or ``<value>``;
        null/empty values go to ``__HIVE_DEFAULT_PARTITION__`` (``KeyGenUtils``)."""
        if not self.partition_field:
            return np.zeros(records.num_rows, dtype=np.int64), [""]
        col = records.column(self.partition_field)
        t = col.type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
                or pa.types.is_date32(t) or pa.types.is_boolean(t)):
            raise UserError(f"partition field {self.partition_field!r}: type {t} is not supported "
                            f"(string, integer, date, boolean)")
        enc = pc.dictionary_encode(col.combine_chunks(), null_encoding="encode")
        paths: list[str] = []
        remap = []
        for v in enc.dictionary.to_pylist():
            s = _partition_value_str(v)
            if "/" in s:
                raise UserError(f"partition field {self.partition_field!r}: value {s!r} contains '/'")
            path = f"{self.partition_field}={s}" if self.hive_style else s
            if path not in paths:
                paths.append(path)
            remap.append(paths.index(path))
        codes = np.asarray(remap, dtype=np.int64)[enc.indices.to_numpy(zero_copy_only=False)]
        return codes, paths

    def _validate(self, records: pa.Table, operation: str) -> pa.Table:
        if operation not in OPERATIONS:
            raise UserError(f"operation: {operation!r}; expected one of {', '.join(OPERATIONS)}")
        names = set(records.column_names)
        need = [self.record_key] + [f for f in (self.partition_field, self.ordering_field) if f]
        for f in need:
            if f not in names:
                raise UserError(f"records: missing column {f!r}")
        if records.column(self.record_key).null_count:
            raise UserError(f"records: null record key in column {self.record_key!r}")
        kt = records.schema.field(self.record_key).type
        if not (pa.types.is_string(kt) or pa.types.is_large_string(kt) or pa.types.is_integer(kt)):
            raise UserError(f"records: record key column {self.record_key!r} has type {kt}; expected string/integer")
        if self.ordering_field:
            if records.column(self.ordering_field).null_count:
                raise UserError(f"records: null ordering value in column {self.ordering_field!r}")
            _ordering_branch(records.schema.field(self.ordering_field).type)
        records = records.select([c for c in records.column_names if c not in META_COLUMNS])
        if operation == "delete":
            return records
        data = data_schema(records.schema)
        if self._data_schema is None:
            with self._lock:
                if self._data_schema is None:
                    self._set_schema(data)
        if not data.equals(self._data_schema):
            # allow column order differences only
            if set(data.names) != set(self._data_schema.names) or any(
                    data.field(n).type != self._data_schema.field(n).type for n in data.names):
                raise UserError(f"records: schema {data} differs from the table schema {self._data_schema} "
                                f"(schema evolution is not supported)")
        return records.select(self._data_schema.names).cast(self._data_schema)

    def _dedup(self, records: pa.Table, codes: np.ndarray) -> tuple[pa.Table, np.ndarray]:
        """Keep one row per (partition, key): the greatest ordering value, ties to the later row
        (``HoodieWriteHelper.deduplicateRecords`` with the payload's ``preCombine``)."""
        n = records.num_rows
        keys = records.column(self.record_key)
        if n < 2 or pc.count_distinct(keys).as_py() == n:
            return records, codes
        cols = {"c": pa.array(codes), "k": keys}
        sort = [("c", "ascending"), ("k", "ascending")]
        if self.ordering_field:
            cols["o"] = records.column(self.ordering_field)
            sort.append(("o", "ascending"))
        cols["i"] = pa.array(np.arange(n, dtype=np.int64))
        sort.append(("i", "ascending"))
        t = pa.table(cols)
        order = pc.sort_indices(t, sort_keys=sort).to_numpy()
        c_sorted = codes[order]
        k_sorted = t.column("k").take(pa.array(order))
        last = np.ones(n, dtype=bool)
        last[:-1] = (c_sorted[:-1] != c_sorted[1:]) | ~pc.equal(k_sorted[:-1], k_sorted[1:]).to_numpy(
            zero_copy_only=False)
        keep = np.sort(order[last])
        return records.take(pa.array(keep)), codes[keep]

    def _new_file_id(self, instant: str, partition: str, n: int) -> str:
        return f"{uuid.uuid5(_FILE_ID_NAMESPACE, f'{self.table_name}/{partition}/{instant}/{n}')}-0"

    def _marker(self, instant: str, partition: str, name: str, io_type: str) -> None:
        d = self.hoodie_dir / ".temp" / instant / partition if partition else self.hoodie_dir / ".temp" / instant
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{name}.marker.{io_type}").touch()

    def _partition_metadata(self, partition: str, instant: str) -> None:
        d = self.base_path / partition if partition else self.base_path
        d.mkdir(parents=True, exist_ok=True)
        f = d / PARTITION_METAFILE
        if f.exists():
            return
        depth = len(partition.split("/")) if partition else 0
        now = _dt.datetime.now(_dt.timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")
        tmp = self.hoodie_dir / ".temp" / instant / f".{PARTITION_METAFILE}.{uuid.uuid4().hex}.tmp"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(f"#partition metadata\n#{now}\ncommitTime={instant}\npartitionDepth={depth}\n")
        os.replace(tmp, f)

    def write_batch(self, instant_time: str, records: pa.Table, operation: str = "upsert") -> WriteResult:
        """Write ``records`` under the pending instant ``instant_time``; return the write statistics.

        One call per instant. Raises :class:`UserError` for bad records (missing/null key, partition or
        ordering value; unsupported types; a schema that differs from the table's)."""
        operation = operation.lower()
        with self._write_lock:
            with self._lock:
                inst = self.timeline.get(instant_time, self.action)
                if inst is None or inst.state is not State.INFLIGHT:
                    raise UserError(f"write {instant_time}: instant is not inflight (call start() first)")
                if instant_time in self._written:
                    raise UserError(f"write {instant_time}: already written (one write_batch per instant)")
            records = self._validate(records, operation)
            if self._data_schema is None:  # a delete into an empty table
                result = WriteResult(instant_time, self.action.value, _operation_type(operation), "", [])
            else:
                codes, paths = self._partition_paths(records)
                if operation != "insert":
                    records, codes = self._dedup(records, codes)
                result = self._write(instant_time, records, codes, paths, operation)
            with self._lock:
                self._written[instant_time] = result
                self._fgs_of_instant[instant_time] = {(s["partitionPath"], s["fileId"]) for s in result.write_stats}
            return result

    def _write(self, instant: str, records: pa.Table, codes: np.ndarray, paths: list[str],
               operation: str) -> WriteResult:
        n = records.num_rows
        hard_del = operation == "delete"
        if hard_del:
            is_del = np.ones(n, dtype=bool)
        elif IS_DELETED in records.column_names:
            is_del = np.asarray(records.column(IS_DELETED).fill_null(False).to_numpy(zero_copy_only=False),
                                dtype=bool)
        else:
            is_del = np.zeros(n, dtype=bool)
        keys = records.column(self.record_key).cast(pa.string()).combine_chunks()
        stats: list[dict] = []
        task = [0]
        for code in sorted(range(len(paths)), key=lambda c: paths[c]):
            part = paths[code]
            rows = np.nonzero(codes == code)[0]
            if not len(rows):
                continue
            with self._lock:
                groups = {fid: g for (p, fid), g in self._fgs.items() if p == part}
                latest = {fid: self._latest_base(g) for fid, g in groups.items()}
                if operation == "insert":
                    found = np.zeros(len(rows), dtype=bool)
                else:
                    idx_keys, idx_codes, idx_fids = self._partition_index(part)
                    pos = pc.index_in(keys.take(pa.array(rows)), value_set=idx_keys)
                    found = pos.is_valid().to_numpy(zero_copy_only=False)
            updates: dict[str, np.ndarray] = {}
            if found.any():
                fg_code = idx_codes[pos.filter(pos.is_valid()).to_numpy()]
                upd_rows = rows[found]
                for c in np.unique(fg_code):
                    updates[idx_fids[c]] = upd_rows[fg_code == c]
            inserts = rows[~found & ~is_del[rows]]
            if not updates and not len(inserts):
                continue
            self._partition_metadata(part, instant)
            ctx = _WriteCtx(self, instant, part, records, keys, is_del, hard_del, task)
            if self.table_type == COPY_ON_WRITE:
                stats += ctx.cow(updates, inserts, latest)
            else:
                stats += ctx.mor(updates, inserts, latest)
        return WriteResult(instant, self.action.value, _operation_type(operation), self._schema_json_nometa, stats)

    # called by _WriteCtx once files are on disk
    def _add_files(self, part: str, fid: str, base: fn.BaseFile | None, log: fn.LogFile | None,
                   new_keys: pa.Array | None) -> None:
        with self._lock:
            g = self._fg(part, fid)
            if base is not None:
                g.bases.append(base)
                g.bases.sort(key=lambda b: b.instant_time)
                if new_keys is not None:
                    self._keys_cache[str(self.base_path / base.path)] = new_keys
                self._index.pop(part, None)
            if log is not None:
                g.logs.append(log)
                g.logs.sort(key=fn.log_order_key)

    # ---------------------------------------------------------------------------------------- rollback

    def rollback(self, instant_time: str, rollback_time: str, completion_time: str) -> Path:
        """Roll back the pending write ``instant_time`` as instant ``rollback_time`` (completed at
        ``completion_time``): delete its data files (tv6 MOR: ROLLBACK command blocks for its log writes),
        complete the rollback instant, delete the rolled-back instant's timeline files.

        Raises :class:`UserError` if the instant is completed or unknown, or if a later pending instant of this
        writer wrote into a file group it touched (roll that one back first)."""
        with self._lock:
            inst = next((i for i in self.timeline.find(instant_time)
                         if i.action in (Action.COMMIT, Action.DELTACOMMIT)), None)
            if inst is None:
                raise UserError(f"rollback {instant_time}: no such pending write on the timeline")
            if inst.is_completed:
                raise UserError(f"rollback {instant_time}: the instant is completed (restore is not supported)")
            mine = self._fgs_of_instant.get(instant_time, set())
            for later, fgs in self._fgs_of_instant.items():
                if later > instant_time and later in self._written and fgs & mine:
                    raise UserError(f"rollback {instant_time}: pending instant {later} wrote into the same file "
                                    f"groups; roll it back first")
            action = inst.action
            existing = self.timeline.get(rollback_time, Action.ROLLBACK)
        if existing is not None and existing.is_completed:
            done = self._finish_rollback(instant_time, action, [], self._timeline_path(
                rollback_time, Action.ROLLBACK, State.COMPLETED, existing.completion_time))
            self.refresh()
            return done
        files = self._files_of(instant_time)
        delete: dict[str, list[str]] = {}
        command_blocks: dict[tuple[str, str], fn.LogFile] = {}
        for f in files:
            if isinstance(f, fn.LogFile) and self.table_version == 6:
                command_blocks[(f.partition, f.file_id)] = f
            else:
                delete.setdefault(f.partition, []).append(f.name)
        # rollback instant: requested (plan) -> inflight
        if existing is None:
            with self._lock:
                self.timeline.create(rollback_time, Action.ROLLBACK)
            plan = md.make_rollback_plan(instant_time, action.value,
                                         {p: [self._abs(p, n) for n in ns] for p, ns in delete.items()})
            md.write_timeline_file(self._timeline_path(rollback_time, Action.ROLLBACK, State.REQUESTED),
                                   md.encode_rollback_plan(plan))
            existing = self.timeline.get(rollback_time, Action.ROLLBACK)
        if existing.state is State.REQUESTED:
            with self._lock:
                self.timeline.transition_to_inflight(rollback_time, Action.ROLLBACK)
            md.write_timeline_file(self._timeline_path(rollback_time, Action.ROLLBACK, State.INFLIGHT), b"")
        deleted: dict[str, list[str]] = {}
        for part, names in delete.items():
            for n in names:
                p = self.base_path / part / n if part else self.base_path / n
                try:
                    p.unlink()
                except FileNotFoundError:
                    pass
                deleted.setdefault(part, []).append(self._abs(part, n))
        rollback_logs: dict[str, dict[str, int]] = {}
        for (part, fid), lf in sorted(command_blocks.items()):
            new = self._write_rollback_block(part, fid, lf.instant_time, rollback_time, instant_time)
            rollback_logs.setdefault(part, {})[self._abs(part, new.name)] = new.size or 0
        meta = md.make_rollback_metadata(rollback_time, instant_time, action.value, deleted)
        for part, logs in rollback_logs.items():
            pm = meta["partitionMetadata"].setdefault(part, {"partitionPath": part, "successDeleteFiles": [],
                                                              "failedDeleteFiles": [], "rollbackLogFiles": {},
                                                              "logFilesFromFailedCommit": {}})
            pm["rollbackLogFiles"] = logs
        with self._lock:
            self.timeline.complete(rollback_time, Action.ROLLBACK, completion_time)
        path = self._timeline_path(rollback_time, Action.ROLLBACK, State.COMPLETED, completion_time)
        self._write_completed(path, md.encode_rollback_metadata(meta), completion_time)
        return self._finish_rollback(instant_time, action, files, path)

    def _finish_rollback(self, instant_time: str, action: Action, files: list, path: Path) -> Path:
        # delete the rolled-back instant's timeline files (inflight first, then requested)
        for st in (State.INFLIGHT, State.REQUESTED):
            try:
                self._timeline_path(instant_time, action, st).unlink()
            except FileNotFoundError:
                pass
        shutil.rmtree(self.hoodie_dir / ".temp" / instant_time, ignore_errors=True)
        with self._lock:
            self.timeline.delete(instant_time, action)
            self._written.pop(instant_time, None)
            self._fgs_of_instant.pop(instant_time, None)
            removed = {(f.partition, f.file_id, f.name) for f in files if not (
                isinstance(f, fn.LogFile) and self.table_version == 6)}
            for g in self._fgs.values():
                g.bases = [b for b in g.bases if (b.partition, b.file_id, b.name) not in removed]
                g.logs = [x for x in g.logs if (x.partition, x.file_id, x.name) not in removed]
            self._index.clear()
        return path

    def _abs(self, part: str, name: str) -> str:
        return str(self.base_path / part / name) if part else str(self.base_path / name)

    def _files_of(self, instant: str) -> list[fn.BaseFile | fn.LogFile]:
        """Data files the instant may have written: its markers, plus files named with its instant."""
        found: dict[tuple[str, str], fn.BaseFile | fn.LogFile] = {}
        mdir = self.hoodie_dir / ".temp" / instant
        if mdir.is_dir():
            for root, _dirs, names in os.walk(mdir):
                rel = os.path.relpath(root, mdir)
                part = "" if rel == "." else rel.replace(os.sep, "/")
                for n in names:
                    if ".marker." not in n:
                        continue
                    f = fn.parse_data_file(n.split(".marker.")[0], part)
                    if f is not None:
                        found[(part, f.name)] = f
        with self._lock:
            for g in self._fgs.values():
                for b in g.bases:
                    if b.instant_time == instant:
                        found[(b.partition, b.name)] = b
                if self.table_version != 6:
                    for lg in g.logs:
                        if lg.instant_time == instant:
                            found[(lg.partition, lg.name)] = lg
        out = []
        for (part, name), f in sorted(found.items()):
            p = self.base_path / part / name if part else self.base_path / name
            if isinstance(f, fn.LogFile) and self.table_version == 6 and not p.exists():
                continue  # nothing was logged: no command block needed
            out.append(f)
        return out

    def _next_log_version(self, part: str, fid: str, base_instant: str) -> int:
        d = self.base_path / part if part else self.base_path
        v = 0
        prefix = f".{fid}_{base_instant}.log."
        if d.is_dir():
            for n in os.listdir(d):
                if n.startswith(prefix):
                    f = fn.parse_data_file(n, part)
                    if isinstance(f, fn.LogFile):
                        v = max(v, f.version)
        return v + 1

    def _write_rollback_block(self, part: str, fid: str, base_instant: str, rollback_time: str,
                              target: str) -> fn.LogFile:
        version = self._next_log_version(part, fid, base_instant)
        lf = fn.LogFile(fid, base_instant, version, "1-0-1", partition=part)
        data = logfile.rollback_block(rollback_time, target)
        size = _atomic_write(self.base_path / lf.path, data, self.hoodie_dir / ".temp" / target)
        lf = fn.LogFile(fid, base_instant, version, "1-0-1", partition=part, size=size)
        with self._lock:
            g = self._fg(part, fid)
            g.logs.append(lf)
            g.logs.sort(key=fn.log_order_key)
        return lf


def _operation_type(operation: str) -> str:
    return {"upsert": "UPSERT", "insert": "INSERT", "delete": "DELETE"}.get(operation.lower(), operation.upper())


def _atomic_write(path: Path, data: bytes, tmp_dir: Path) -> int:
    tmp_dir.mkdir(parents=True, exist_ok=True)
    tmp = tmp_dir / f".{path.name}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
    return len(data)


class _WriteCtx:
    """The writes of one partition of one instant (row positions are numpy int64 arrays into ``records``)."""

    def __init__(self, w: HudiTableWriter, instant: str, part: str, records: pa.Table, keys: pa.Array,
                 is_del: np.ndarray, hard_del: bool, task: list[int]):
        self.w, self.instant, self.part, self.records, self.keys = w, instant, part, records, keys
        self.is_del, self.hard_del, self.task = is_del, hard_del, task
        self.n_new = 0

    def _next_task(self) -> int:
        t = self.task[0]
        self.task[0] += 1
        return t

    def _token(self, task: int) -> str:
        return f"{task}-0-{task}"

    def _data_rows(self, idx: np.ndarray, file_name: str, task: int, start_seq: int = 0) -> pa.Table:
        """Rows ``idx`` of the batch with fresh meta columns (commit time, seqno, key, partition, file name)."""
        n = len(idx)
        if n == self.records.num_rows and (n == 0 or (idx[0] == 0 and np.all(np.diff(idx) == 1))):
            data, keys = self.records, self.keys
        else:
            take = pa.array(idx, pa.int64())
            data, keys = self.records.take(take), self.keys.take(take)
        seq = pc.binary_join_element_wise(f"{self.instant}_{task}_",
                                          pc.cast(pa.array(np.arange(start_seq, start_seq + n)), pa.string()), "")
        const = lambda v: pa.repeat(pa.scalar(v, pa.string()), n)  # noqa: E731
        meta = [const(self.instant), seq, keys, const(self.part), const(file_name)]
        return pa.Table.from_arrays(meta + [c.combine_chunks() for c in data.columns], schema=self.w._full_schema)

    def _write_base(self, fid: str, rows: pa.Table, task: int, io_type: str) -> tuple[fn.BaseFile, int]:
        bf = fn.BaseFile(fid, self._token(task), self.instant, "parquet", self.part)
        self.w._marker(self.instant, self.part, bf.name, io_type)
        tmp = self.w.hoodie_dir / ".temp" / self.instant / f".{bf.name}.{uuid.uuid4().hex}.tmp"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        size = basefile.write_base_file(str(self.w.base_path / bf.path), rows, self.w._schema_json,
                                        compression=self.w.compression, tmp_path=str(tmp))
        return bf, size

    def _new_group(self, chunk: np.ndarray) -> dict:
        """``HoodieCreateHandle``: a new file group holding ``chunk``."""
        w = self.w
        fid = w._new_file_id(self.instant, self.part, self.n_new)
        self.n_new += 1
        task = self._next_task()
        name = fn.BaseFile(fid, self._token(task), self.instant, "parquet", self.part).name
        rows = self._data_rows(chunk, name, task)
        bf, size = self._write_base(fid, rows, task, "CREATE")
        w._add_files(self.part, fid, bf, None, rows.column(RECORD_KEY).combine_chunks())
        return md.make_write_stat(self.part, bf.path, fid, "null", num_writes=len(chunk),
                                  num_inserts=len(chunk), size=size)

    # ------------------------------------------------------------------------------------- copy-on-write

    def cow(self, updates: dict[str, np.ndarray], inserts: np.ndarray, latest: dict) -> list[dict]:
        w = self.w
        stats = []
        # small-file handling: pack inserts into existing small file groups (UpsertPartitioner.getSmallFiles)
        ins_to: dict[str, np.ndarray] = {}
        remaining = inserts
        if w.small_file_rows > 0 and len(remaining):
            for fid, b in sorted(latest.items(), key=lambda kv: kv[0]):
                if b is None or not len(remaining):
                    continue
                n = len(w._keys_of(b))
                if n < w.small_file_rows:
                    room = w.max_file_rows - n
                    if room > 0:
                        ins_to[fid], remaining = remaining[:room], remaining[room:]
        empty = np.zeros(0, dtype=np.int64)
        for fid in sorted(set(updates) | set(ins_to)):
            stats.append(self._cow_merge(fid, latest[fid], updates.get(fid, empty), ins_to.get(fid, empty)))
        for start in range(0, len(remaining), w.max_file_rows):
            stats.append(self._new_group(remaining[start:start + w.max_file_rows]))
        return stats

    def _cow_merge(self, fid: str, old_base: fn.BaseFile, upd: np.ndarray, ins: np.ndarray) -> dict:
        """``HoodieMergeHandle``: rewrite the file group's latest base file with updates/deletes/inserts.

        Rows that stay keep their meta columns except ``_hoodie_file_name``; the old file's row order is kept
        (replaced rows stay in place) and inserts are appended."""
        w = self.w
        task = self._next_task()
        name = fn.BaseFile(fid, self._token(task), self.instant, "parquet", self.part).name
        old = pq.read_table(w.base_path / old_base.path).select(list(w._full_schema.names)).cast(w._full_schema)
        pos = pc.index_in(self.keys.take(pa.array(upd, pa.int64())), value_set=old.column(RECORD_KEY))
        valid = pos.is_valid().to_numpy(zero_copy_only=False)
        upd = upd[valid]
        j = pos.filter(pos.is_valid()).to_numpy().astype(np.int64)
        if len(upd) and not self.hard_del and w.ordering_field:
            new_o = self.records.column(w.ordering_field).take(pa.array(upd))
            old_o = old.column(w.ordering_field).take(pa.array(j))
            wins = pc.greater_equal(new_o, old_o).to_numpy(zero_copy_only=False)
            upd, j = upd[wins], j[wins]
        dels = self.is_del[upd]
        drop_j, rep_j, rep_i = j[dels], j[~dels], upd[~dels]
        keep_mask = np.ones(old.num_rows, dtype=bool)
        keep_mask[drop_j] = False
        keep_mask[rep_j] = False
        keep = np.nonzero(keep_mask)[0]
        kept = old.take(pa.array(keep))
        kept = kept.set_column(kept.schema.get_field_index(FILE_NAME), FILE_NAME,
                               pa.repeat(pa.scalar(name, pa.string()), kept.num_rows))
        by_pos = np.argsort(rep_j, kind="stable")
        rep_j, rep_i = rep_j[by_pos], rep_i[by_pos]
        merged = pa.concat_tables([kept, self._data_rows(rep_i, name, task)])
        if len(rep_i) and len(keep):
            merged = merged.take(pa.array(np.argsort(np.concatenate([keep, rep_j]), kind="stable")))
        if len(ins):
            merged = pa.concat_tables([merged, self._data_rows(ins, name, task, start_seq=len(rep_i))])
        bf, size = self._write_base(fid, merged, task, "MERGE")
        w._add_files(self.part, fid, bf, None, merged.column(RECORD_KEY).combine_chunks())
        return md.make_write_stat(self.part, bf.path, fid, old_base.instant_time, num_writes=merged.num_rows,
                                  num_inserts=len(ins), num_update_writes=len(rep_i), num_deletes=len(drop_j),
                                  size=size, prevBaseFile=old_base.name)

    # ------------------------------------------------------------------------------------- merge-on-read

    def mor(self, updates: dict[str, np.ndarray], inserts: np.ndarray, latest: dict) -> list[dict]:
        w = self.w
        stats = []
        for start in range(0, len(inserts), w.max_file_rows):
            stats.append(self._new_group(inserts[start:start + w.max_file_rows]))
        for fid in sorted(updates):
            stats.append(self._mor_log(fid, latest[fid], updates[fid]))
        return stats

    def _mor_log(self, fid: str, base: fn.BaseFile, idx: np.ndarray) -> dict:
        """``HoodieAppendHandle``: one new log file with a data block (upserts) and a delete block."""
        w = self.w
        task = self._next_task()
        data_idx = idx[~self.is_del[idx]]
        del_idx = idx[self.is_del[idx]]
        if w.table_version == 6:
            log_instant = base.instant_time
            version = w._next_log_version(self.part, fid, log_instant)
        else:
            log_instant, version = self.instant, 1
        lf = fn.LogFile(fid, log_instant, version, self._token(task), partition=self.part)
        w._marker(self.instant, self.part, lf.name, "APPEND")
        blocks = []
        if len(data_idx):
            rows = self._data_rows(data_idx, fid, task)
            if w.log_block_format == "parquet":
                blocks.append(logfile.parquet_data_block(self.instant, rows, w._schema_json))
            else:
                blocks.append(logfile.avro_data_block(self.instant, rows, w._schema_json, w._parsed_schema))
        if len(del_idx):
            branch = (_ordering_branch(self.records.schema.field(w.ordering_field).type)
                      if w.ordering_field else None)
            dkeys = self.keys.take(pa.array(del_idx)).to_pylist()
            if branch is None:
                ovs = [None] * len(dkeys)
            elif self.hard_del:
                # a key-only delete carries Hudi's default ordering value 0 ("natural order": it always
                # deletes), as Hudi writes it (real v8 fixture); null for non-numeric ordering fields
                ovs = [(branch, 0) if branch in ("int", "long", "float", "double") else None] * len(dkeys)
            else:
                ovs = [(branch, _ordering_value(v))
                       for v in self.records.column(w.ordering_field).take(pa.array(del_idx)).to_pylist()]
            deletes = [(k, self.part, ov) for k, ov in zip(dkeys, ovs)]
            blocks.append(logfile.delete_block(self.instant, deletes, w._schema_json))
        size = _atomic_write(w.base_path / lf.path, b"".join(blocks), w.hoodie_dir / ".temp" / self.instant)
        lf = fn.LogFile(fid, log_instant, version, self._token(task), partition=self.part, size=size)
        w._add_files(self.part, fid, None, lf, None)
        prev = base.instant_time if w.table_version == 6 else self.instant
        return md.make_write_stat(self.part, lf.path, fid, prev, num_writes=len(data_idx),
                                  num_update_writes=len(data_idx), num_deletes=len(del_idx), size=size,
                                  logVersion=version, logOffset=0, baseFile=base.name, logFiles=[lf.name],
                                  totalLogBlocks=len(blocks))
