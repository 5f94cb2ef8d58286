"""The metadata table (MDT) on disk: the ``files`` partition a writer keeps, the ``record_index`` the indexer
builds, reading both back, and rebuilding them from the data table for the audit.

Layout (as Hudi 1.x writes it for table version 8; checked against the fixture tables' ``.hoodie/metadata``;
``HoodieBackedTableMetadataWriter``, ``HoodieTableMetadataUtil``, ``HoodieMetadataPayload``,
``HoodieHFileDataBlock``)::

    <table>/.hoodie/metadata/.hoodie/hoodie.properties      MERGE_ON_READ, base format HFILE, version 8,
                                                            record key ``key``, meta fields not populated
    <table>/.hoodie/metadata/.hoodie/timeline/               the MDT's own timeline (deltacommits)
    <table>/.hoodie/metadata/files/files-0000-0_0-0-0_00000000000000000.hfile
                                                            the files partition's base file (initialisation,
                                                            deltacommit 00000000000000000)
    <table>/.hoodie/metadata/files/.files-0000-0_<t>.log.1_0-0-0
                                                            one log file per data-table commit t: one HFile
                                                            data block (log block type 4) of the records of t
    <table>/.hoodie/metadata/record_index/record-index-0000-0_0-0-0_000000000000000NN.hfile
                                                            the record index built by ``hoodie-lab index``
                                                            at the next free initialisation time
                                                            (``SOLO_COMMIT_TIMESTAMP`` + a counter: the
                                                            fixtures' secondary index, built by an indexing
                                                            instant, sits at 00000000000000004)
    <table>/.hoodie/metadata/record_index/.record-index-0000-0_<t>.log.1_0-0-0
                                                            entries of later commits: an HFile data block
                                                            (upserts) and a delete block (removed keys)

Records are ``HoodieMetadataRecord`` Avro datums (schema ``lakeio/schemas/HoodieMetadataRecord.avsc``, the
one Hudi stores in the HFiles' file info) keyed by the HFile key: in ``files``, ``__all_partitions__``
(type 1: the partitions, size 0) and one record per data partition (type 2: file name ->
``HoodieMetadataFileInfo{size, isDeleted}``; ``.`` for a non-partitioned table); in ``record_index`` one per
record key (type 5: ``HoodieRecordIndexInfo``, file id as UUID bits + index when it is ``<uuid>-<n>``,
``fileIdEncoding`` 0, else as a string, encoding 1).

Merging (``HoodieMetadataPayload.preCombine`` / ``combineFileSystemMetadata``): records of one key are
combined in write order; in a files record a later entry replaces an earlier one of the same name and an
``isDeleted`` entry removes it; a later record-index record replaces the earlier, a delete removes it.
Which MDT deltacommits a reader merges is the spec's rule (:func:`model.mdt.partitions.valid_instants`):
those whose data-table instant completed, plus the MDT's own (initialisation, index builds).

A data-table commit writes its MDT deltacommit (same instant time) *before* its own completed file, under the
table's transaction lock (:mod:`.mdt_lock`), into every partition the spec says a writer updates
(:func:`model.mdt.partitions.writer_partitions`: available and inflight); a rollback of a data-table instant
rolls back the MDT deltacommit of the same time. Table version 6 tables get no MDT here (hudi-rs lists tv6
tables from the directories; hoodie-lab writes none).
Not written: MDT compaction, cleaning and archival (the files partition grows one log file per commit), the
column_stats / bloom_filters / partition_stats partitions, bloom filters in the HFiles.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import os
import re
import shutil
import struct
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import fastavro

from lakeio.errors import UserError
from lakeio.hudiformat import logfile as lf
from lakeio.ondisk import metadata as md
from lakeio.ondisk.hfile import HFileError, parse_hfile, write_hfile_bytes, write_hfile_columns
from lakeio.ondisk.properties import format_properties, read_properties, table_checksum, write_hoodie_properties
from model import filenames as fn
from model.instant import Action, State, to_millis
from model.mdt.partitions import FILES, RECORD_INDEX, PartitionStates, valid_instants, writer_partitions

MDT_FOLDER = "metadata"
ALL_PARTITIONS_KEY = "__all_partitions__"
NON_PARTITIONED = "."
SOLO_PREFIX = "00000000000000"  # HoodieTableMetadata.SOLO_COMMIT_TIMESTAMP
INIT_TIME = "00000000000000000"  # HoodieTableMetadata.SOLO_COMMIT_TIMESTAMP + "000" (files partition)
WRITE_TOKEN = "0-0-0"
TYPE_ALL_PARTITIONS, TYPE_FILES, TYPE_RECORD_INDEX = 1, 2, 5
FILE_ID = {FILES: "files-0000-0", RECORD_INDEX: "record-index-0000-0"}
#: the MDT partitions hoodie-lab writes
SUPPORTED = (FILES, RECORD_INDEX)
PARTITIONS_KEY = "hoodie.table.metadata.partitions"
INFLIGHT_KEY = "hoodie.table.metadata.partitions.inflight"
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schemas" / "HoodieMetadataRecord.avsc"
_UUID_ID = re.compile(r"^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-(\d+)$")


class MetadataTableError(UserError):
    """An MDT file that cannot be read (names the file and the MDT partition)."""

    def __init__(self, message: str, partition: str | None = None, exit_code: int = 2):
        super().__init__(message, exit_code)
        self.partition = partition


# ------------------------------------------------------------------------------------------------ records
@lru_cache(maxsize=None)
def schema_json() -> str:
    return json.dumps(json.loads(SCHEMA_FILE.read_text()), separators=(",", ":"))


@lru_cache(maxsize=None)
def _parsed():
    return fastavro.parse_schema(json.loads(schema_json()))


def _record(rtype: int, *, files=None, rli=None) -> dict:
    return {"_hoodie_commit_time": None, "_hoodie_commit_seqno": None, "_hoodie_record_key": None,
            "_hoodie_partition_path": None, "_hoodie_file_name": None, "key": "", "type": rtype,
            "filesystemMetadata": files, "BloomFilterMetadata": None, "ColumnStatsMetadata": None,
            "recordIndexMetadata": rli, "SecondaryIndexMetadata": None}


def encode(record: dict) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _parsed(), record)
    return buf.getvalue()


def decode(value: bytes) -> dict:
    return fastavro.schemaless_reader(io.BytesIO(value), _parsed(), None)


def mdt_partition_key(partition: str) -> str:
    """The files-partition key of a data partition (``.`` for the non-partitioned table's one)."""
    return partition if partition else NON_PARTITIONED


def files_records(added: dict[str, dict[str, int]], deleted: dict[str, list[str]] | None = None) -> list:
    """``HoodieMetadataPayload.createPartitionFilesRecord`` for each touched partition and
    ``createPartitionListRecord`` (``__all_partitions__``): (key, value) cells."""
    deleted = deleted or {}
    parts = sorted(set(added) | set(deleted))
    cells = [(ALL_PARTITIONS_KEY, encode(_record(TYPE_ALL_PARTITIONS, files={
        mdt_partition_key(p): {"size": 0, "isDeleted": False} for p in parts})))] if parts else []
    for p in parts:
        m = {n: {"size": int(s), "isDeleted": False} for n, s in added.get(p, {}).items()}
        m.update({n: {"size": 0, "isDeleted": True} for n in deleted.get(p, [])})
        cells.append((mdt_partition_key(p), encode(_record(TYPE_FILES, files=m))))
    return cells


def rli_info(partition: str, file_id: str, instant: str) -> dict:
    """``HoodieMetadataPayload.createRecordIndexUpdate``: a UUID-based file id as two longs + its index
    (encoding 0), any other as a string (encoding 1); instantTime in epoch milliseconds."""
    m = _UUID_ID.match(file_id)
    base = {"partitionName": partition, "instantTime": to_millis(instant[:17]), "position": None}
    if m:
        u = uuid.UUID(m.group(1)).int
        hi, lo = u >> 64, u & ((1 << 64) - 1)
        signed = lambda v: v - (1 << 64) if v >= 1 << 63 else v  # noqa: E731 -- Java longs
        return dict(base, fileIdHighBits=signed(hi), fileIdLowBits=signed(lo), fileIndex=int(m.group(2)),
                    fileId="", fileIdEncoding=0)
    return dict(base, fileIdHighBits=None, fileIdLowBits=None, fileIndex=None, fileId=file_id, fileIdEncoding=1)


def rli_file_id(info: dict) -> str:
    if info.get("fileIdEncoding") == 0:
        hi, lo = info["fileIdHighBits"] % (1 << 64), info["fileIdLowBits"] % (1 << 64)
        return f"{uuid.UUID(int=(hi << 64) | lo)}-{info['fileIndex']}"
    return info.get("fileId") or ""


def rli_value(location: tuple[str, str, str]) -> bytes:
    """The record-index payload of one location ``(partition, file id, instant)``."""
    return encode(_record(TYPE_RECORD_INDEX, rli=rli_info(*location)))


# ------------------------------------------------------------------------------------------ table config
def mdt_base(table: str | os.PathLike) -> Path:
    return Path(table) / ".hoodie" / MDT_FOLDER


def partition_states(table: str | os.PathLike, props: dict | None = None) -> PartitionStates:
    """The two table-config lists of the data table (``hoodie.properties``)."""
    if props is None:
        props = read_properties(Path(table) / ".hoodie" / "hoodie.properties")
    split = lambda v: frozenset(x for x in (v or "").split(",") if x)  # noqa: E731
    return PartitionStates(split(props.get(PARTITIONS_KEY)), split(props.get(INFLIGHT_KEY)))


def write_partition_states(table: str | os.PathLike, states: PartitionStates) -> None:
    """Update the two keys in the data table's ``hoodie.properties`` (``HoodieTableConfig.update``): the
    whole file rewritten to a temporary file in ``.hoodie/.temp``, fsynced and renamed over the old one
    (atomic: a reader sees the old or the new file, never a torn one). Callers hold the transaction lock."""
    hoodie = Path(table) / ".hoodie"
    path = hoodie / "hoodie.properties"
    props = read_properties(path)
    props.update(states.as_properties())
    props["hoodie.table.checksum"] = str(table_checksum(props))
    data = format_properties(props, "Updated by hoodie-lab").encode("latin-1")
    tmp = hoodie / ".temp" / f".hoodie.properties.{uuid.uuid4().hex}.tmp"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def now_time() -> str:
    """A wall-clock instant time (UTC, ms) for the MDT's own instants."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d%H%M%S%f")[:17]


# ------------------------------------------------------------------------------------------- the table
@dataclass
class MdtInstant:
    requested: str
    action: str
    state: str  # requested / inflight / completed
    completion: str | None = None


class MetadataTable:
    """The MDT of the data table at ``table`` (``<table>/.hoodie/metadata``)."""

    def __init__(self, table: str | os.PathLike):
        self.table = Path(table)
        self.base = mdt_base(table)
        self.hoodie = self.base / ".hoodie"
        self.timeline_dir = self.hoodie / "timeline"

    # -- existence, creation
    def exists(self) -> bool:
        return (self.hoodie / "hoodie.properties").is_file()

    def create(self) -> None:
        """``HoodieBackedTableMetadataWriter.initializeMetaClient``: the MDT's ``hoodie.properties``."""
        dt = read_properties(self.table / ".hoodie" / "hoodie.properties")
        for d in ("timeline/history", ".aux", ".temp", ".schema"):
            (self.hoodie / d).mkdir(parents=True, exist_ok=True)
        props = {
            "hoodie.table.name": f"{dt.get('hoodie.table.name', 'table')}_metadata",
            "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": dt.get("hoodie.table.version", "8"),
            "hoodie.table.initial.version": dt.get("hoodie.table.version", "8"),
            "hoodie.timeline.layout.version": "2", "hoodie.timeline.path": "timeline",
            "hoodie.timeline.history.path": "history", "hoodie.archivelog.folder": "history",
            "hoodie.table.base.file.format": "HFILE", "hoodie.table.recordkey.fields": "key",
            "hoodie.populate.meta.fields": "false", "hoodie.table.keygenerator.type": "HOODIE_TABLE_METADATA",
            "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload",
            "hoodie.record.merge.mode": "CUSTOM",
            "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
            "hoodie.datasource.write.drop.partition.columns": "false",
        }
        write_hoodie_properties(self.hoodie / "hoodie.properties", props)

    # -- timeline
    def instants(self) -> list[MdtInstant]:
        """Every instant of the MDT timeline, highest state per (time, action), requested-time order."""
        found: dict[str, MdtInstant] = {}
        rank = {"requested": 0, "inflight": 1, "completed": 2}
        try:
            names = os.listdir(self.timeline_dir)
        except FileNotFoundError:
            return []
        for name in names:
            if not fn.is_timeline_file(name):
                continue
            try:
                tf = fn.parse_timeline_file(name, 2)
            except Exception as exc:
                raise MetadataTableError(f"{self.timeline_dir / name}: not an MDT timeline file ({exc})") from None
            st = {State.REQUESTED: "requested", State.INFLIGHT: "inflight", State.COMPLETED: "completed"}[tf.state]
            cur = found.get(tf.requested_time)
            if cur is None or rank[st] > rank[cur.state]:
                found[tf.requested_time] = MdtInstant(tf.requested_time, tf.action.value, st, tf.completion_time)
        return sorted(found.values(), key=lambda i: i.requested)

    def instant(self, t: str) -> MdtInstant | None:
        return next((i for i in self.instants() if i.requested == t), None)

    def _tl(self, t: str, action: Action, state: State, completion: str | None = None) -> Path:
        return self.timeline_dir / fn.timeline_file_name(t, action, state, completion, 2)

    def _log_name(self, partition: str, t: str) -> str:
        return f".{FILE_ID[partition]}_{t}.log.1_{WRITE_TOKEN}"

    def _base_name(self, partition: str, t: str) -> str:
        return f"{FILE_ID[partition]}_{WRITE_TOKEN}_{t}.hfile"

    def _write_file(self, partition: str, name: str, data: bytes) -> int:
        folder = self.base / partition
        folder.mkdir(parents=True, exist_ok=True)
        meta = folder / ".hoodie_partition_metadata"
        if not meta.exists():
            tmp = self.hoodie / ".temp" / f".pm.{uuid.uuid4().hex}.tmp"
            tmp.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(f"#partition metadata\ncommitTime={INIT_TIME}\npartitionDepth=1\n")
            os.replace(tmp, meta)
        tmp = self.hoodie / ".temp" / f".{name}.{uuid.uuid4().hex}.tmp"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, folder / name)
        return len(data)

    def deltacommit(self, t: str, completion: str, files: dict[str, tuple[str, bytes, int, bool]]) -> None:
        """One MDT deltacommit: requested, inflight, the data files (``files``: MDT partition ->
        (file name, bytes, records, is base)), then the completed file with its commit metadata."""
        md.write_timeline_file(self._tl(t, Action.DELTACOMMIT, State.REQUESTED), b"")
        inflight = md.make_commit_metadata({}, operation="UPSERT_PREPPED")
        md.write_timeline_file(self._tl(t, Action.DELTACOMMIT, State.INFLIGHT), md.encode_commit_metadata(inflight, 8))
        stats: dict[str, list[dict]] = {}
        for part, (name, data, n, is_base) in sorted(files.items()):
            size = self._write_file(part, name, data)
            extra = {"logVersion": None if is_base else 1, "logOffset": None if is_base else 0,
                     "baseFile": name if is_base else "", "logFiles": [] if is_base else [name]}
            stats[part] = [md.make_write_stat(part, f"{part}/{name}", FILE_ID[part], t, num_writes=n,
                                              num_inserts=n if is_base else 0,
                                              num_update_writes=0 if is_base else n, size=size, **extra)]
        done = md.make_commit_metadata(stats, operation="UPSERT_PREPPED" if t != INIT_TIME else "BULK_INSERT")
        md.write_timeline_file(self._tl(t, Action.DELTACOMMIT, State.COMPLETED, completion),
                               md.encode_commit_metadata(done, 8))

    def remove_instant(self, t: str) -> list[str]:
        """Delete an MDT instant's data files and timeline files (its log files by name, base files named
        with ``t``); returns the deleted data files (relative to the MDT base)."""
        gone = []
        for part in SUPPORTED:
            folder = self.base / part
            if not folder.is_dir():
                continue
            for name in (self._log_name(part, t), self._base_name(part, t)):
                if (folder / name).exists():
                    (folder / name).unlink()
                    gone.append(f"{part}/{name}")
        for name in sorted(os.listdir(self.timeline_dir)) if self.timeline_dir.is_dir() else []:
            if name.startswith(t + ".") or name.startswith(t + "_"):
                (self.timeline_dir / name).unlink()
        return gone

    # -- reading
    def read_partition(self, partition: str, dt_completed: set[str] | None = None) -> dict[str, dict | None]:
        """The merged records of an MDT partition: key -> record (a deleted key is absent).

        Merges the partition's latest base file and the log files after it (completion time at or after the
        base's requested time, the tv8 slicing rule), of completed MDT deltacommits that
        :func:`model.mdt.partitions.valid_instants` accepts (``dt_completed``: the data table's completed
        instants; ``None`` accepts every completed one). A file that cannot be read is a
        :class:`MetadataTableError` naming the partition (exit 1: a corrupted MDT is a finding)."""
        folder = self.base / partition
        insts = self.instants()
        done = {i.requested: i for i in insts if i.state == "completed"}
        # the MDT's own instants: initialisations (SOLO_COMMIT_TIMESTAMP + offset: writers' files, the
        # indexer's bases) and compactions (completed as commit) -- getValidInstantTimestamps
        own = {t for t, i in done.items() if t.startswith(SOLO_PREFIX) or i.action != "deltacommit"}
        valid = set(done) if dt_completed is None else valid_instants(dt_completed, own) & set(done)
        if not folder.is_dir():
            raise MetadataTableError(f"{folder}: metadata partition {partition} has no folder", partition, 1)
        groups: dict[str, tuple[list, list]] = {}
        for name in os.listdir(folder):
            if name.endswith(".hfile"):
                b = fn.BaseFile.parse(name, partition)
                if b.instant_time in valid:
                    groups.setdefault(b.file_id, ([], []))[0].append(b)
            elif fn.is_log_file(name):
                lg = fn.LogFile.parse(name, partition)
                if lg.instant_time in valid:
                    groups.setdefault(lg.file_id, ([], []))[1].append(lg)
        if not groups:
            raise MetadataTableError(f"{folder}: metadata partition {partition} has no committed file",
                                     partition, 1)
        records: dict[str, dict | None] = {}
        for fid, (bases, logs) in sorted(groups.items()):
            start = ""
            if bases:
                base = max(bases, key=lambda b: b.instant_time)
                start = base.instant_time
                for k, v in self._cells(folder / base.name, partition):
                    records[k] = self._combine(records.get(k), self._decode(v, folder / base.name, partition))
            # tv8 slicing: a log joins the latest base whose requested time <= the log's completion time
            later = sorted((lg for lg in logs if (done[lg.instant_time].completion or "") >= start[:17]
                            and lg.instant_time != start),
                           key=lambda lg: (done[lg.instant_time].completion or "", lg.instant_time))
            for lg in later:
                self._merge_log(folder / lg.name, partition, records)
        return {k: v for k, v in records.items() if v is not None}

    def _decode(self, value: bytes, path: Path, partition: str) -> dict:
        """A record decoded once per distinct value (record-index values repeat per file group and instant;
        the records are never modified: merging builds new ones)."""
        cache = self.__dict__.setdefault("_decoded", {})
        rec = cache.get(value)
        if rec is not None:
            return rec
        try:
            rec = decode(value)
        except Exception as exc:  # fastavro raises several kinds on garbage
            raise MetadataTableError(f"{path}: metadata partition {partition}: undecodable record ({exc})",
                                     partition, 1) from None
        if len(cache) < 100_000:
            cache[value] = rec
        return rec

    def _merge_log(self, path: Path, partition: str, records: dict) -> None:
        try:
            blocks = lf.read_log_file(str(path))
        except (ValueError, OSError, UnicodeDecodeError, struct.error) as exc:
            raise MetadataTableError(f"{path}: metadata partition {partition}: unreadable log file ({exc})",
                                     partition, 1) from None
        for b in blocks:
            if b.block_type == 4:
                try:
                    h = parse_hfile(b.content)
                except (ValueError, KeyError, UnicodeDecodeError, struct.error) as exc:
                    raise MetadataTableError(f"{path}: metadata partition {partition}: bad HFile block "
                                             f"({exc})", partition, 1) from None
                for k, v in h.cells:
                    records[k] = self._combine(records.get(k), self._decode(v, path, partition))
            elif b.block_type == lf.DELETE_BLOCK:
                try:
                    dels = b.deletes()
                except Exception as exc:
                    raise MetadataTableError(f"{path}: metadata partition {partition}: bad delete block "
                                             f"({exc})", partition, 1) from None
                for d in dels:
                    records.pop(d["recordKey"], None)

    def _cells(self, path: Path, partition: str):
        try:
            data = path.read_bytes()
            return parse_hfile(data).cells
        except OSError as exc:
            raise MetadataTableError(f"{path}: metadata partition {partition}: unreadable ({exc.strerror})",
                                     partition, 1) from None
        except (ValueError, KeyError, UnicodeDecodeError, struct.error, HFileError) as exc:
            raise MetadataTableError(f"{path}: metadata partition {partition}: not a readable HFile ({exc})",
                                     partition, 1) from None

    @staticmethod
    def _combine(old: dict | None, new: dict) -> dict | None:
        """``HoodieMetadataPayload.preCombine``: files maps merged (later wins, isDeleted removes)."""
        if new["type"] in (TYPE_ALL_PARTITIONS, TYPE_FILES) and old is not None:
            merged = dict(old["filesystemMetadata"] or {})
            for name, info in (new["filesystemMetadata"] or {}).items():
                if info["isDeleted"]:
                    merged.pop(name, None)
                else:
                    merged[name] = info
            return dict(new, filesystemMetadata=merged)
        if new["type"] in (TYPE_ALL_PARTITIONS, TYPE_FILES):
            return dict(new, filesystemMetadata={n: i for n, i in (new["filesystemMetadata"] or {}).items()
                                                 if not i["isDeleted"]})
        return new

    def files_listing(self, dt_completed: set[str] | None = None) -> dict[str, dict[str, int]]:
        """data partition -> {file name: size} from the files partition (partitions from
        ``__all_partitions__``)."""
        recs = self.read_partition(FILES, dt_completed)
        allp = recs.get(ALL_PARTITIONS_KEY)
        parts = set((allp or {}).get("filesystemMetadata") or {})
        out = {}
        for p in parts:
            r = recs.get(p)
            out["" if p == NON_PARTITIONED else p] = {n: i["size"] for n, i in
                                                     ((r or {}).get("filesystemMetadata") or {}).items()}
        return out

    def record_index(self, dt_completed: set[str] | None = None) -> dict[str, tuple[str, str]]:
        """record key -> (partition, file id) from the record_index partition."""
        recs = self.read_partition(RECORD_INDEX, dt_completed)
        return {k: (r["recordIndexMetadata"]["partitionName"], rli_file_id(r["recordIndexMetadata"]))
                for k, r in recs.items()}


# --------------------------------------------------------------------------- what one commit contributes
def _base_keys(path: Path) -> list[tuple[str, str]]:
    import pyarrow.parquet as pq

    t = pq.read_table(path, columns=["_hoodie_record_key", "_hoodie_partition_path"])
    return list(zip(t.column(0).to_pylist(), t.column(1).to_pylist()))


_META_UNION = ["null", "string"]


def _avro_keys(content: bytes) -> list[tuple[str, str]] | None:
    """(record key, partition path) of an Avro data block read from the first four fields of each record
    (``_hoodie_commit_time``, ``_hoodie_commit_seqno``, ``_hoodie_record_key``, ``_hoodie_partition_path``,
    each a ``["null","string"]`` union: branch 0 null, branch 2 = zigzag 2 for the string's zigzag-varint length
    and bytes) and skipping the rest by the record's length prefix; ``None`` when the block is not laid out
    that way. The fields are parsed for all records at once (numpy), not record by record."""
    import struct as _s

    import numpy as np

    if len(content) < 8:
        return None
    version, count = _s.unpack_from(">II", content, 0)
    if version != lf.BLOCK_VERSION or count > (len(content) - 8) // 8:  # a record takes >= 8 bytes
        return None
    starts = np.empty(count, dtype=np.int64)
    ends = np.empty(count, dtype=np.int64)
    i, unpack = 8, _s.Struct(">I").unpack_from
    try:
        for r in range(count):  # the records' length prefixes: one read each
            (n,) = unpack(content, i)
            starts[r], ends[r] = i + 4, i + 4 + n
            i += 4 + n
    except _s.error:
        return None
    if count and ends[-1] > len(content):
        return None
    buf = np.frombuffer(content, dtype=np.uint8)
    pos = starts.copy()
    fields = []
    for _f in range(4):
        if count and (pos >= ends).any():
            return None
        branch = buf[pos] if count else np.zeros(0, dtype=np.uint8)
        if ((branch != 0) & (branch != 2)).any():
            return None
        pos = pos + 1
        is_str = branch == 2
        ln = np.zeros(count, dtype=np.int64)
        shift = 0
        more = is_str.copy()
        while more.any():  # the zigzag varint of each string's length, all records at once
            if shift > 63 or (pos[more] >= ends[more]).any():
                return None
            b = buf[pos[more]].astype(np.int64)
            ln[more] |= (b & 0x7F) << shift
            pos[more] += 1
            cont = np.zeros(count, dtype=bool)
            cont[more] = (b & 0x80) != 0
            more = cont
            shift += 7
        ln = (ln >> 1) ^ -(ln & 1)
        if (ln < 0).any() or (pos + ln > ends).any():
            return None
        fields.append((pos, ln, is_str))
        pos = pos + ln
    (kp, kl, ks), (pp, pl, ps) = fields[2], fields[3]
    if not ks.all():
        return None
    keys = [content[a:a + n].decode() for a, n in zip(kp.tolist(), kl.tolist())]
    parts = [content[a:a + n].decode() if st else None for a, n, st in zip(pp.tolist(), pl.tolist(), ps.tolist())]
    return list(zip(keys, parts))


def block_keys(block, partition: str) -> list[tuple[str, str]]:
    """(record key, partition path) of every record of a data block."""
    if block.block_type == lf.AVRO_DATA_BLOCK:
        fields = json.loads(block.header.get(lf.SCHEMA, "{}")).get("fields", [])
        names = [f.get("name") for f in fields[:4]]
        if names == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                     "_hoodie_partition_path"] and all(f.get("type") == _META_UNION for f in fields[:4]):
            fast = _avro_keys(block.content)
            if fast is not None:
                return [(k, p or partition) for k, p in fast]
    elif block.block_type == lf.PARQUET_DATA_BLOCK:  # the two meta columns only, not every row as a dict
        import pyarrow as pa
        import pyarrow.parquet as pq

        names = ["_hoodie_record_key", "_hoodie_partition_path"]
        f = pq.ParquetFile(pa.BufferReader(block.content))
        if all(n in f.schema_arrow.names for n in names):
            t = f.read(columns=names)
            return [(k, p or partition) for k, p in zip(t.column(0).to_pylist(), t.column(1).to_pylist())]
    return [(r["_hoodie_record_key"], r.get("_hoodie_partition_path") or partition) for r in block.data_rows()]


def commit_entries(table: Path, t: str, write_stats: list[dict], keys: bool = True) -> tuple[dict, dict, dict, list]:
    """What data-table commit ``t`` contributes: files added per partition (name -> size), record-index
    upserts (key -> (partition, file id, t)) and removed keys (key -> partition), and the write stats'
    files. Record locations come from the files the commit wrote: every key of a new base file; the keys
    of a log file's data blocks (updates stay in their file group) and delete blocks (removed); a new
    base-file version (copy-on-write) removes the keys of the version it replaced that it no longer
    holds (``HoodieTableMetadataUtil.convertMetadataToRecordIndexRecords``). ``keys=False``: the files
    only (no record index is written: the files' keys are not read)."""
    added: dict[str, dict[str, int]] = {}
    upserts: dict[str, tuple[str, str, str]] = {}
    removed: dict[str, str] = {}
    for s in write_stats:
        part, path = s["partitionPath"] or "", s["path"]
        name = path.rsplit("/", 1)[-1]
        added.setdefault(part, {})[name] = int(s.get("fileSizeInBytes") or s.get("totalWriteBytes") or 0)
        if not keys:
            continue
        full = table / path
        fid = s["fileId"]
        if fn.is_base_file(name):
            base_keys = _base_keys(full)
            for k, p in base_keys:
                upserts[k] = (p, fid, t)
            prev = s.get("prevCommit")
            if prev and prev != "null":
                folder = full.parent
                now = {k for k, _ in base_keys}
                for old in folder.glob(f"{fid}_*_{prev}.*"):
                    if old.name != name and fn.is_base_file(old.name):
                        for k, p in _base_keys(old):
                            if k not in now:
                                removed[k] = p
        elif fn.is_log_file(name):
            for b in lf.read_log_file(str(full)):
                if b.block_type in (lf.AVRO_DATA_BLOCK, lf.PARQUET_DATA_BLOCK):
                    for k, p in block_keys(b, part):
                        upserts[k] = (p, fid, t)
                        removed.pop(k, None)
                elif b.block_type == lf.DELETE_BLOCK:
                    for d in b.deletes():
                        removed[d["recordKey"]] = d.get("partitionPath") or part
                        upserts.pop(d["recordKey"], None)
    for k in upserts:
        removed.pop(k, None)
    return added, upserts, removed, [s["path"] for s in write_stats]


def hfile_block(t: str, cells: list) -> bytes:
    """A log block of type HFILE_DATA_BLOCK (4) holding ``cells`` (``HoodieHFileDataBlock``)."""
    data = write_hfile_bytes(cells, {"schema": schema_json().encode()})
    return lf.encode_block(4, {lf.INSTANT_TIME: t, lf.SCHEMA: schema_json()}, data)


def rli_block(t: str, locations: dict[str, tuple[str, str, str]]) -> bytes:
    """The record-index log block of ``key -> (partition, file id, instant)``, written from columns: the keys,
    the few distinct locations encoded once each and every key's location index (no Python tuple per record)."""
    index: dict = {}
    idx = [index.setdefault(loc, len(index)) for loc in locations.values()]
    return rli_block_columns(t, list(locations), list(index), idx)


def rli_block_columns(t: str, keys, locations: list[tuple[str, str, str]], index) -> bytes:
    """:func:`rli_block` for an index given as columns: ``keys`` (unique), the distinct ``locations`` and each
    key's index into them."""
    values = [rli_value(loc) for loc in locations]
    data = write_hfile_columns(keys, values, {"schema": schema_json().encode()}, value_index=index)
    return lf.encode_block(4, {lf.INSTANT_TIME: t, lf.SCHEMA: schema_json()}, data)


def delegate_entries(t: str, write_stats: list[dict], delegates) -> tuple | None:
    """The record-index entries of commit ``t`` from its write statuses' record delegates
    (:mod:`lakeio.hudiformat.delegates`, ``HoodieRecordDelegate``s) instead of the files: the same mapping as
    :func:`commit_entries` reads, computed on columns. Returns (upsert keys: sorted, unique; the distinct
    locations (partition, file id, t); each key's location index; removed keys: sorted; their partitions), or
    None when the delegates do not speak for every file of ``write_stats`` (a write that did not collect them:
    the caller reads the files).

    :func:`commit_entries`' rule, file after file in write-stat order: a written key's location is its file's
    (the last one wins), a delete-block entry drops the key's location and removes it, a replaced base file's
    key is removed unless the commit wrote it (without dropping a location written earlier). So a key is
    upserted when its last written-or-deleted entry is a write (at that write's location), and removed when
    it has a delete or replaced entry and is not upserted (the partition of the last such entry)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from lakeio.hudiformat import delegates as dg

    files = dg.files_of(delegates)
    pos = {s["path"]: i for i, s in enumerate(write_stats)}
    if set(files) != set(pos) or len(files) != len(pos):
        return None
    file_stat = np.array([pos[f] for f in files], dtype=np.int64)
    fids, stat_fid = np.unique(np.array([s["fileId"] for s in write_stats], dtype=object), return_inverse=True)
    n = delegates.num_rows
    stat = file_stat[delegates.column("file").to_numpy()] if n else np.zeros(0, dtype=np.int64)
    order = np.argsort(stat, kind="stable")  # write-stat order; within a file the file's own order
    if n and (np.diff(order) != 1).any():
        delegates = delegates.take(pa.array(order))
        stat = stat[order]
    keys = delegates.column("key").combine_chunks()
    parts = delegates.column("partition").combine_chunks()
    op = delegates.column("op").to_numpy() if n else np.zeros(0, dtype=np.int8)
    srt = pc.sort_indices(keys).to_numpy()  # one sort by key; stable: a key's entries stay in write order
    skeys, sop = keys.take(pa.array(srt)), op[srt]
    first = np.ones(n, dtype=bool)  # the first entry of each key in key order
    if n > 1:
        first[1:] = pc.not_equal(skeys.slice(0, n - 1), skeys.slice(1)).to_numpy(zero_copy_only=False)
    group = np.cumsum(first) - 1

    def last(mask):
        """Sorted positions of the last entry in ``mask`` of each key (in key order)."""
        m = np.nonzero(mask)[0]
        keep = np.ones(len(m), dtype=bool)
        keep[:-1] = group[m[1:]] != group[m[:-1]]
        return m[keep]

    last_wd = last(sop != dg.REPLACED)
    ups_s = last_wd[sop[last_wd] == dg.WRITTEN]
    ups = srt[ups_s]
    up_keys = skeys.take(pa.array(ups_s, pa.int64()))
    # the upserts' locations: (partition, file id of the write stat, t), the distinct ones once
    penc = parts.take(pa.array(ups, pa.int64())).dictionary_encode(null_encoding="encode")
    pidx = penc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    pdict = penc.dictionary.to_pylist()
    width = max(1, len(pdict))
    code = stat_fid.reshape(-1)[stat[ups]].astype(np.int64) * width + pidx  # (file id, partition) as one number
    uniq, inverse = np.unique(code, return_inverse=True)
    locs = [(pdict[int(c % width)], fids[int(c // width)], t) for c in uniq]
    upserted = np.zeros(int(group[-1]) + 1 if n else 0, dtype=bool)
    upserted[group[ups_s]] = True
    last_dr = last(sop != dg.WRITTEN)
    rm_s = last_dr[~upserted[group[last_dr]]]
    rm_keys = skeys.take(pa.array(rm_s, pa.int64()))
    rm_parts = parts.take(pa.array(srt[rm_s], pa.int64()))
    return up_keys, locs, inverse.astype(np.int64).reshape(-1), rm_keys, rm_parts


def base_hfile(cells: list) -> bytes:
    """An MDT base file (``HoodieAvroHFileWriter``): the schema and key range in the file info."""
    cells = list(cells)
    return base_hfile_columns([k for k, _ in cells], [v for _, v in cells])


def base_hfile_columns(keys, values, value_index=None, pace=None) -> bytes:
    """:func:`base_hfile` for cells given as columns (:func:`lakeio.ondisk.hfile.write_hfile_columns`;
    ``pace`` called after each block)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    karr = keys if isinstance(keys, pa.Array) else pa.array(keys, pa.string())
    info = {"schema": schema_json().encode()}
    if len(karr):
        mm = pc.min_max(karr)
        info["minRecordKey"], info["maxRecordKey"] = mm["min"].as_py().encode(), mm["max"].as_py().encode()
    else:
        info["minRecordKey"] = info["maxRecordKey"] = b""
    return write_hfile_columns(karr, values, info, value_index=value_index, pace=pace)


def apply_commit(table: str | os.PathLike, t: str, completion: str, write_stats: list[dict],
                 states: PartitionStates | None = None, also: tuple[str, ...] = (), delegates=None) -> bool:
    """Write the MDT deltacommit ``t`` for data-table commit ``t`` into every partition a writer updates
    (:func:`writer_partitions`). Callers hold the transaction lock and call this before the data-table commit completes. An MDT deltacommit ``t`` already there (any
    state) is left by an earlier attempt of this commit that failed before the data-table commit completed:
    it is removed and written again with the partitions writers update now (Hudi likewise redoes it).
    ``also``: partitions written besides (the indexer's catch-up applies to the partition it builds).
    ``delegates``: the write statuses' record delegates (:mod:`lakeio.hudiformat.delegates`, an Arrow table):
    the record index's entries come from them (:func:`delegate_entries`) and no data file is opened; without
    them (or when they do not cover every file) the keys are read from the files (:func:`commit_entries`).
    Returns whether it wrote."""
    table = Path(table)
    mdt = MetadataTable(table)
    states = states if states is not None else partition_states(table)
    parts = [p for p in sorted(writer_partitions(states) | set(also)) if p in SUPPORTED]
    if not parts:
        return False
    if mdt.instant(t) is not None:  # a previous attempt of this commit failed after writing it: redo it
        mdt.remove_instant(t)
    from_delegates = None
    if RECORD_INDEX in parts and delegates is not None:
        from_delegates = delegate_entries(t, write_stats, delegates)
    keys = RECORD_INDEX in parts and from_delegates is None
    added, upserts, removed, _ = commit_entries(table, t, write_stats, keys=keys)
    files = {}
    if FILES in parts:
        cells = files_records(added)
        files[FILES] = (mdt._log_name(FILES, t), hfile_block(t, cells), len(cells), False)
    if RECORD_INDEX in parts:  # always a log file (an empty block when nothing moved): the indexer's
        # catch-up sees from it that this commit wrote the partition
        if from_delegates is not None:
            up_keys, locs, idx, rm_keys, rm_parts = from_delegates
            data, n_up = rli_block_columns(t, up_keys, locs, idx), len(up_keys)
            gone = list(zip(rm_keys.to_pylist(), rm_parts.to_pylist()))  # sorted by key, as below
        else:
            data, n_up = rli_block(t, upserts), len(upserts)
            gone = sorted(removed.items())
        if gone:  # removed keys are few (deletes): the delete block is written entry by entry
            data += lf.delete_block(t, [(k, p, None) for k, p in gone], schema_json())
        files[RECORD_INDEX] = (mdt._log_name(RECORD_INDEX, t), data, n_up + len(gone), False)
    if not files:
        return False
    mdt.deltacommit(t, completion, files)
    return True


def initialize_files(table: str | os.PathLike, listing: dict[str, dict[str, int]], completion: str) -> None:
    """``initializeFromFilesystem`` for ``files``: create the MDT, write the base file of the listing of
    committed data files at ``00000000000000000`` and add ``files`` to the table config. Callers hold the
    transaction lock."""
    table = Path(table)
    mdt = MetadataTable(table)
    if not mdt.exists():
        mdt.create()
    if mdt.instant(INIT_TIME) is not None:
        mdt.remove_instant(INIT_TIME)
    cells = files_records(listing)
    mdt.deltacommit(INIT_TIME, completion, {FILES: (mdt._base_name(FILES, INIT_TIME), base_hfile(cells),
                                                    len(cells), True)})
    st = partition_states(table)
    write_partition_states(table, PartitionStates(st.available | {FILES}, st.inflight - {FILES}))


def rollback(table: str | os.PathLike, t: str, rollback_time: str, completion: str) -> bool:
    """Roll back the MDT deltacommit ``t`` with a rollback instant of the same time as the data table's
    (``HoodieBackedTableMetadataWriter.update(HoodieRollbackMetadata)``): plan, inflight, delete its log
    files, remove its timeline files, completed rollback metadata. Returns whether there was one."""
    mdt = MetadataTable(table)
    if not mdt.exists():
        return False
    cur = mdt.instant(t)
    if cur is None or cur.action != "deltacommit":
        return False
    files = {p: [mdt._log_name(p, t)] for p in SUPPORTED if (mdt.base / p / mdt._log_name(p, t)).exists()}
    plan = md.make_rollback_plan(t, "deltacommit", files)
    if mdt.instant(rollback_time) is None:
        md.write_timeline_file(mdt._tl(rollback_time, Action.ROLLBACK, State.REQUESTED), md.encode_rollback_plan(plan))
        md.write_timeline_file(mdt._tl(rollback_time, Action.ROLLBACK, State.INFLIGHT), b"")
    gone = mdt.remove_instant(t)
    meta = md.make_rollback_metadata(rollback_time, t, "deltacommit",
                                     {p: [g.split("/", 1)[1] for g in gone if g.startswith(p + "/")] for p in files})
    done = mdt._tl(rollback_time, Action.ROLLBACK, State.COMPLETED, completion)
    if not done.exists():
        md.write_timeline_file(done, md.encode_rollback_metadata(meta))
    return True


def next_init_time(table: str | os.PathLike) -> str:
    """The next free initialisation time of the MDT (``SOLO_COMMIT_TIMESTAMP`` + a 3-digit counter,
    ``HoodieTableMetadataUtil.createIndexInitTimestamp``)."""
    used = [int(i.requested[len(SOLO_PREFIX):]) for i in MetadataTable(table).instants()
            if i.requested.startswith(SOLO_PREFIX) and len(i.requested) == 17]
    return f"{SOLO_PREFIX}{(max(used) + 1) if used else 0:03d}"


def write_index_base(table: str | os.PathLike, partition: str, init_time: str, data: bytes, records: int,
                     completion: str) -> None:
    """The base file of a partition built by the indexer (``data``: :func:`base_hfile` bytes), in MDT
    deltacommit ``init_time``. Needs no lock: no writer writes that instant or that file."""
    mdt = MetadataTable(table)
    if mdt.instant(init_time) is not None:
        mdt.remove_instant(init_time)
    mdt.deltacommit(init_time, completion, {partition: (mdt._base_name(partition, init_time), data, records, True)})


def drop_partition(table: str | os.PathLike, partition: str, init_time: str | None = None) -> None:
    """``dropMetadataPartitions`` / the indexer's abort: the table config forgets the partition, its
    folder goes, and so does the initialisation instant that built it. Callers hold the transaction lock."""
    table = Path(table)
    mdt = MetadataTable(table)
    st = partition_states(table)
    write_partition_states(table, st.remove([partition]))
    shutil.rmtree(mdt.base / partition, ignore_errors=True)
    if init_time is not None:
        mdt.remove_instant(init_time)


# ------------------------------------------------------------------------------- the writers' two hooks
def committed_listing(table) -> dict[str, dict[str, int]]:
    """Data partition -> {file name: size} of the files of completed instants on disk (a
    :class:`lakeio.ondisk.reader.Table`): what the files partition must list (base files by their instant,
    tv8 log files by their deltacommit's)."""
    done = {i.requested_time for i in table.timeline.completed()}
    out: dict[str, dict[str, int]] = {p: {} for p in table.partitions}
    for f in list(table.base_files) + list(table.log_files):
        if f.instant_time in done:
            size = f.size if f.size is not None else (table.base_path / f.path).stat().st_size
            out.setdefault(f.partition, {})[f.name] = size
    return {p: fs for p, fs in out.items() if fs}


def enabled_for(table: str | os.PathLike, table_version: int) -> bool:
    """hoodie-lab keeps an MDT for table version 8 and 9 (hudi-rs lists those from it)."""
    return int(table_version) >= 8


@contextmanager
def committing(table: str | os.PathLike, table_version: int, t: str, completion: str, write_stats: list[dict],
               enabled: bool = True, delegates=None):
    """The writer's commit hook: under the transaction lock, create the MDT (files partition, from the
    committed files) when the table has none, write the MDT deltacommit ``t``, then let the caller complete
    the data-table commit inside the ``with`` (Hudi: ``writeTableMetadata`` before ``saveAsComplete``, both
    in the commit's transaction). ``delegates``: the write's record delegates (:func:`apply_commit`)."""
    if not enabled or not enabled_for(table, table_version):
        yield
        return
    from lakeio.ondisk.mdt_lock import TxnLock

    with TxnLock(table):
        states = partition_states(table)
        if FILES not in states.available:
            from lakeio.ondisk.reader import read_table

            initialize_files(table, committed_listing(read_table(table)), t)
            states = partition_states(table)
        apply_commit(table, t, completion, write_stats, states, delegates=delegates)
        yield


def rolling_back(table: str | os.PathLike, table_version: int, t: str, rollback_time: str, completion: str,
                 enabled: bool = True) -> None:
    """The writer's rollback hook: roll back the MDT deltacommit ``t`` if a commit wrote one before it
    failed (called before the data-table rollback completes)."""
    if not enabled or not enabled_for(table, table_version) or not MetadataTable(table).exists():
        return
    from lakeio.ondisk.mdt_lock import TxnLock

    with TxnLock(table):
        rollback(table, t, rollback_time, completion)


# ----------------------------------------------------------------------------------- rebuild (the audit)
def slice_keys(base_path: Path, s) -> dict[str, str]:
    """key -> partition of the records a merged file slice holds: the base file's keys, then its log
    files' blocks in order (data blocks add, delete blocks remove)."""
    keys: dict[str, str] = {}
    if s.base_file is not None:
        for k, p in _base_keys(base_path / s.base_file.path):
            keys[k] = p
    for lg in s.log_files:
        for b in lf.read_log_file(str(base_path / lg.path)):
            if b.block_type in (lf.AVRO_DATA_BLOCK, lf.PARQUET_DATA_BLOCK):
                for k, p in block_keys(b, s.partition):
                    keys[k] = p
            elif b.block_type == lf.DELETE_BLOCK:
                for d in b.deletes():
                    keys.pop(d["recordKey"], None)
    return keys


def record_index_columns(base_path: Path, slices, pace=None) -> tuple:
    """The record index an initialisation builds from ``slices`` (the latest merged file slices of the
    snapshot), as columns for :func:`base_hfile_columns`: (record keys: a pyarrow string array, sorted and
    unique; the distinct locations (partition, file id, the slice's base instant); each key's location
    index). The same mapping as :func:`slice_keys` merged slice after slice (a later slice's entry for a
    key wins), without a Python object per record: a slice of a base file only is read as two parquet
    columns; a slice with log files goes through :func:`slice_keys`. ``pace``: called after each slice."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    locs: list[tuple] = []
    key_parts, idx_parts = [], []
    for s in slices:
        if s.base_file is not None and not s.log_files:
            t = pq.read_table(base_path / s.base_file.path, columns=["_hoodie_record_key", "_hoodie_partition_path"])
            keys, parts = t.column(0).combine_chunks(), t.column(1).combine_chunks()
        else:
            d = slice_keys(base_path, s)
            keys, parts = pa.array(list(d), pa.string()), pa.array(list(d.values()), pa.string())
        enc = parts.dictionary_encode(null_encoding="encode")
        first = len(locs)
        locs.extend((p, s.file_id, s.base_instant) for p in enc.dictionary.to_pylist())
        key_parts.append(keys.cast(pa.string()))
        idx_parts.append(enc.indices.to_numpy(zero_copy_only=False).astype(np.int64) + first)
        if pace is not None:
            pace()
    if not key_parts:
        return pa.array([], pa.string()), locs, np.zeros(0, dtype=np.int64)
    keys = pa.concat_arrays(key_parts)
    idx = np.concatenate(idx_parts)
    n = len(keys)
    order = pc.sort_indices(keys)  # stable: equal keys stay in slice order
    keys, idx = keys.take(order), idx[order.to_numpy()]
    if n > 1:  # of equal keys keep the last (the later slice's)
        keep = np.ones(n, dtype=bool)
        keep[:-1] = ~pc.equal(keys.slice(0, n - 1), keys.slice(1)).to_numpy(zero_copy_only=False)
        if not keep.all():
            keys, idx = keys.filter(pa.array(keep)), idx[keep]
    return keys, locs, idx


def rebuild_record_index(table, slices=None) -> dict[str, tuple[str, str]]:
    """What an initialisation from scratch builds (``HoodieBackedTableMetadataWriter.initializeFromFilesystem``
    for ``record_index``, the spec's :func:`model.mdt.partitions.rebuild`): key -> (partition, file id) of
    every record of the latest merged file slices of completed instants (a :class:`Table`)."""
    if slices is None:
        slices = table.view().latest_merged_file_slices()
    out: dict[str, tuple[str, str]] = {}
    for s in slices:
        for k, p in slice_keys(table.base_path, s).items():
            out[k] = (p, s.file_id)
    return out
