"""Timeline file contents: encode and decode Hudi's instant metadata and plans.

Formats (``hudi-semantics.md`` 1.6/1.8, ``hudi-rs-oracle.md`` "Timeline file formats",
verified on the fixture tables):

* commit / deltacommit / replacecommit metadata (completed and inflight files) is JSON in table
  version 6 (0.x ``HoodieCommitMetadata.toJsonString``) and an Avro object-container file
  (``Obj\\x01``, schema ``HoodieCommitMetadata`` / ``HoodieReplaceCommitMetadata``) in version 8+
  (1.x ``TimelineMetadataUtils.serializeCommitMetadata``);
* plans and service metadata -- compaction plan, clean plan and clean metadata, rollback plan and
  rollback metadata, savepoint metadata, requested-replace (clustering) metadata -- are Avro
  container files in every version (``TimelineMetadataUtils.serialize*``);
* some files are legally empty: ``<t>.commit.requested`` / ``<t>.deltacommit.requested`` of plain
  writes, many ``.inflight`` files of services, and a replacecommit requested before 1.x wrote
  its plan. ``decode_*`` return ``None`` for an empty file.

The Avro schemas are kept as ``lakeio/schemas/*.avsc``: the ones present in the fixture tables
were taken from the writer schema embedded in those container files; ``HoodieCleanerPlan``,
``HoodieCleanMetadata`` and ``HoodieSavepointMetadata`` (absent from the fixtures) were written from
``hudi-common/src/main/avro/*.avsc``.

Timeline files are created immutably (``createImmutableFileInPath``): :func:`write_timeline_file`
writes a temporary file in the table's ``.hoodie/.temp`` folder and links it into place, refusing
to overwrite.
"""

from __future__ import annotations

import io
import json
import os
import uuid
from functools import lru_cache
from pathlib import Path
from typing import Any

import fastavro

from lakeio.errors import UserError

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
AVRO_MAGIC = b"Obj\x01"

COMMIT_SCHEMA = "HoodieCommitMetadata"
REPLACE_COMMIT_SCHEMA = "HoodieReplaceCommitMetadata"
REQUESTED_REPLACE_SCHEMA = "HoodieRequestedReplaceMetadata"
COMPACTION_PLAN_SCHEMA = "HoodieCompactionPlan"
CLEAN_PLAN_SCHEMA = "HoodieCleanerPlan"
CLEAN_METADATA_SCHEMA = "HoodieCleanMetadata"
ROLLBACK_PLAN_SCHEMA = "HoodieRollbackPlan"
ROLLBACK_METADATA_SCHEMA = "HoodieRollbackMetadata"
SAVEPOINT_SCHEMA = "HoodieSavepointMetadata"


@lru_cache(maxsize=None)
def schema(name: str) -> dict:
    """The parsed Avro schema ``lakeio/schemas/<name>.avsc``."""
    with open(SCHEMA_DIR / f"{name}.avsc", encoding="utf-8") as fh:
        return fastavro.parse_schema(json.load(fh))


@lru_cache(maxsize=None)
def write_stat_fields() -> tuple[str, ...]:
    """Field names of ``HoodieWriteStat`` in schema order (from the commit-metadata schema)."""
    with open(SCHEMA_DIR / f"{COMMIT_SCHEMA}.avsc", encoding="utf-8") as fh:
        raw = json.load(fh)
    ptws = next(f for f in raw["fields"] if f["name"] == "partitionToWriteStats")
    map_type = next(t for t in ptws["type"] if isinstance(t, dict))
    return tuple(f["name"] for f in map_type["values"]["items"]["fields"])


# --------------------------------------------------------------------------- Avro container
def encode_avro(record: dict, schema_name: str) -> bytes:
    """One record as an Avro object-container file (no codec, as Hudi writes them)."""
    buf = io.BytesIO()
    try:
        fastavro.writer(buf, schema(schema_name), [record], validator=True)
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"{schema_name}: cannot encode {record!r:.200}: {exc}") from None
    return buf.getvalue()


def decode_avro(data: bytes, source: str) -> dict | None:
    """The single record of an Avro container file; ``None`` for an empty file.

    Bad bytes raise :class:`UserError` naming ``source``.
    """
    if not data:
        return None
    if not data.startswith(AVRO_MAGIC):
        raise UserError(f"{source}: not an Avro container file (expected magic Obj\\x01)")
    try:
        records = list(fastavro.reader(io.BytesIO(data)))
    except Exception as exc:  # fastavro raises many types on truncated/garbage input
        raise UserError(f"{source}: truncated or corrupt Avro metadata ({type(exc).__name__}: {exc})") from None
    if len(records) != 1:
        raise UserError(f"{source}: expected one Avro record, found {len(records)}")
    return records[0]


def avro_schema_name(data: bytes, source: str) -> str | None:
    """Short name of the writer schema embedded in an Avro container (``None`` for an empty file)."""
    if not data:
        return None
    try:
        return str(fastavro.reader(io.BytesIO(data)).writer_schema.get("name")).rsplit(".", 1)[-1]
    except Exception as exc:
        raise UserError(f"{source}: truncated or corrupt Avro metadata ({type(exc).__name__}: {exc})") from None


# --------------------------------------------------------------------------- commit metadata
def make_write_stat(partition: str, path: str, file_id: str, prev_commit: str = "null", *,
                    num_writes: int = 0, num_inserts: int = 0, num_update_writes: int = 0,
                    num_deletes: int = 0, size: int = 0, **extra: Any) -> dict:
    """A ``HoodieWriteStat`` with every field present (unset counters 0, the rest null).

    ``path`` is relative to the table base path (``<partition>/<file name>``), as Hudi writes it.
    """
    stat: dict[str, Any] = {name: None for name in write_stat_fields()}
    for counter in ("numWrites", "numDeletes", "numUpdateWrites", "numInserts", "totalWriteBytes",
                    "totalWriteErrors", "totalLogRecords", "totalLogFilesCompacted", "totalLogSizeCompacted",
                    "totalUpdatedRecordsCompacted", "totalLogBlocks", "totalCorruptLogBlock",
                    "totalRollbackBlocks", "fileSizeInBytes"):
        if counter in stat:
            stat[counter] = 0
    stat.update(fileId=file_id, path=path, prevCommit=prev_commit, partitionPath=partition,
                numWrites=num_writes, numInserts=num_inserts, numUpdateWrites=num_update_writes,
                numDeletes=num_deletes, totalWriteBytes=size, fileSizeInBytes=size)
    stat.update(extra)
    return stat


def make_commit_metadata(write_stats: dict[str, list[dict]], *, operation: str = "UPSERT",
                         schema_json: str | None = None, compacted: bool = False,
                         replaced: dict[str, list[str]] | None = None,
                         extra_metadata: dict[str, str] | None = None) -> dict:
    """A commit-metadata dict in Hudi's field names.

    ``schema_json`` goes to ``extraMetadata["schema"]``, where readers (hudi-rs
    ``Timeline.get_latest_schema``) look up the table schema. ``replaced`` makes it replacecommit
    metadata (``partitionToReplaceFileIds``).
    """
    extra = dict(extra_metadata or {})
    if schema_json is not None:
        extra["schema"] = schema_json
    md: dict[str, Any] = {
        "partitionToWriteStats": {p: list(s) for p, s in write_stats.items()},
        "compacted": compacted,
        "extraMetadata": extra,
        "operationType": operation,
    }
    if replaced is not None:
        md["partitionToReplaceFileIds"] = {p: list(ids) for p, ids in replaced.items()}
    return md


def _normalise_stats(metadata: dict) -> dict:
    out = dict(metadata)
    fields = write_stat_fields()
    ptws = {}
    for part, stats in (metadata.get("partitionToWriteStats") or {}).items():
        ptws[part] = [{**{k: None for k in fields}, **s} for s in stats]
    out["partitionToWriteStats"] = ptws
    out.setdefault("compacted", False)
    out.setdefault("extraMetadata", {})
    out.setdefault("operationType", None)
    return out


def encode_commit_metadata(metadata: dict, table_version: int) -> bytes:
    """Commit/deltacommit/replacecommit metadata as the table version stores it.

    tv6: pretty JSON (0.x ``toJsonString``); tv8/9: an Avro container with schema
    ``HoodieReplaceCommitMetadata`` when ``partitionToReplaceFileIds`` is present, else
    ``HoodieCommitMetadata``.
    """
    md = _normalise_stats(metadata)
    if table_version == 6:
        return json.dumps(md, indent=2).encode("utf-8")
    if table_version not in (8, 9):
        raise ValueError(f"unknown table version {table_version}; supported: 6, 8, 9")
    name = REPLACE_COMMIT_SCHEMA if "partitionToReplaceFileIds" in md else COMMIT_SCHEMA
    return encode_avro(md, name)


def decode_commit_metadata(data: bytes, source: str) -> dict | None:
    """Commit metadata from JSON (tv6) or Avro (tv8+); ``None`` for an empty file.

    The format is recognised by content (1.x can read both); bad content raises
    :class:`UserError` naming ``source``.
    """
    if not data or not data.strip():
        return None
    if data.startswith(AVRO_MAGIC):
        return decode_avro(data, source)
    try:
        md = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{source}: truncated or corrupt JSON commit metadata ({exc})") from None
    except RecursionError:
        raise UserError(f"{source}: JSON commit metadata nested too deeply to be commit metadata") from None
    if not isinstance(md, dict):
        raise UserError(f"{source}: commit metadata is not a JSON object")
    check_commit_metadata(md, source)
    return md


def _type_name(value: Any) -> str:
    return "null" if value is None else {dict: "object", list: "array", str: "string", bool: "boolean",
                                         int: "number", float: "number"}.get(type(value), type(value).__name__)


def _expect(value: Any, types: tuple, what: str, source: str, field: str) -> None:
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise UserError(f"{source}: field {field}: expected {what}, found {_type_name(value)} {value!r:.60}")


def check_commit_metadata(md: dict, source: str) -> None:
    """The fields of commit metadata that the reader and the model use have the types Hudi writes
    (``HoodieCommitMetadata`` / ``HoodieReplaceCommitMetadata``; Avro-decoded metadata already has
    them, 0.x JSON is checked here): ``partitionToWriteStats`` an object of arrays of write stats
    whose ``path``, ``fileId``, ``partitionPath`` are strings or null and whose counters are integers,
    ``partitionToReplaceFileIds`` an object of arrays of strings, ``compacted`` a boolean,
    ``operationType`` a string, ``extraMetadata`` an object (each may be null or absent).
    A wrong type raises :class:`UserError` naming ``source`` and the field.
    """
    ptws = md.get("partitionToWriteStats")
    if ptws is not None:
        _expect(ptws, (dict,), "an object (partition -> write stats)", source, "partitionToWriteStats")
        for part, stats in ptws.items():
            where = f"partitionToWriteStats[{part!r}]"
            if stats is None:
                continue
            _expect(stats, (list,), "an array of write stats", source, where)
            for k, stat in enumerate(stats):
                _expect(stat, (dict,), "a write stat object", source, f"{where}[{k}]")
                for key in ("path", "fileId", "partitionPath", "prevCommit"):
                    if stat.get(key) is not None:
                        _expect(stat[key], (str,), "a string or null", source, f"{where}[{k}].{key}")
                for key in ("fileSizeInBytes", "totalWriteBytes", "numWrites", "numInserts", "numDeletes",
                            "numUpdateWrites"):
                    if stat.get(key) is not None:
                        _expect(stat[key], (int,), "an integer or null", source, f"{where}[{k}].{key}")
    replaced = md.get("partitionToReplaceFileIds")
    if replaced is not None:
        _expect(replaced, (dict,), "an object (partition -> file ids)", source, "partitionToReplaceFileIds")
        for part, ids in replaced.items():
            where = f"partitionToReplaceFileIds[{part!r}]"
            if ids is None:
                continue
            _expect(ids, (list,), "an array of file ids", source, where)
            for k, fid in enumerate(ids):
                _expect(fid, (str,), "a string", source, f"{where}[{k}]")
    for key, types, what in (("compacted", (bool,), "a boolean"), ("operationType", (str,), "a string"),
                             ("extraMetadata", (dict,), "an object")):
        if md.get(key) is not None:
            _expect(md[key], types, what + " or null", source, key)


# --------------------------------------------------------------------------- plans / services
def make_compaction_plan(operations: list[dict], *, version: int = 2) -> dict:
    """A ``HoodieCompactionPlan``. Each operation: baseInstantTime, dataFilePath (base file name or
    None), deltaFilePaths (log file names), fileId, partitionPath."""
    ops = []
    for op in operations:
        ops.append({"baseInstantTime": op.get("baseInstantTime"), "deltaFilePaths": list(op.get("deltaFilePaths") or []),
                    "dataFilePath": op.get("dataFilePath"), "fileId": op["fileId"],
                    "partitionPath": op.get("partitionPath"), "metrics": op.get("metrics"),
                    "bootstrapFilePath": op.get("bootstrapFilePath")})
    return {"operations": ops, "extraMetadata": None, "version": version, "strategy": None,
            "preserveHoodieMetadata": False, "missingSchedulePartitions": []}


def encode_compaction_plan(plan: dict) -> bytes:
    return encode_avro(plan, COMPACTION_PLAN_SCHEMA)


def decode_compaction_plan(data: bytes, source: str) -> dict | None:
    return decode_avro(data, source)


def make_clean_plan(files_per_partition: dict[str, list[str]], *, earliest_to_retain: str | None = None,
                    policy: str = "KEEP_LATEST_COMMITS") -> dict:
    """A ``HoodieCleanerPlan`` (version 2: ``filePathsToBeDeletedPerPartition``)."""
    return {
        "earliestInstantToRetain": None if earliest_to_retain is None else
        {"timestamp": earliest_to_retain, "action": "commit", "state": "COMPLETED"},
        "policy": policy,
        "filesToBeDeletedPerPartition": None,
        "version": 2,
        "filePathsToBeDeletedPerPartition": {
            p: [{"filePath": f, "isBootstrapBaseFile": False} for f in fs] for p, fs in files_per_partition.items()},
        "partitionsToBeDeleted": [],
    }


def encode_clean_plan(plan: dict) -> bytes:
    return encode_avro(plan, CLEAN_PLAN_SCHEMA)


def decode_clean_plan(data: bytes, source: str) -> dict | None:
    return decode_avro(data, source)


def make_clean_metadata(start_clean_time: str, deleted_per_partition: dict[str, list[str]], *,
                        earliest_to_retain: str = "", last_completed: str = "",
                        policy: str = "KEEP_LATEST_COMMITS") -> dict:
    """``HoodieCleanMetadata`` for a completed clean."""
    return {
        "policy": policy, "startCleanTime": start_clean_time, "timeTakenInMillis": 0,
        "totalFilesDeleted": sum(len(v) for v in deleted_per_partition.values()),
        "earliestCommitToRetain": earliest_to_retain, "lastCompletedCommitTimestamp": last_completed,
        "partitionMetadata": {p: {"partitionPath": p, "policy": policy, "deletePathPatterns": list(fs),
                                  "successDeleteFiles": list(fs), "failedDeleteFiles": [],
                                  "isPartitionDeleted": False}
                              for p, fs in deleted_per_partition.items()},
        "version": 2, "bootstrapPartitionMetadata": None,
    }


def encode_clean_metadata(md: dict) -> bytes:
    return encode_avro(md, CLEAN_METADATA_SCHEMA)


def decode_clean_metadata(data: bytes, source: str) -> dict | None:
    return decode_avro(data, source)


def make_rollback_plan(instant_time: str, action: str, files_per_partition: dict[str, list[str]]) -> dict:
    """``HoodieRollbackPlan``: roll back ``instant_time.action`` by deleting the listed files."""
    return {
        "instantToRollback": {"commitTime": instant_time, "action": action},
        "RollbackRequests": [{"partitionPath": p, "fileId": "", "latestBaseInstant": "",
                              "filesToBeDeleted": list(fs), "logBlocksToBeDeleted": {}}
                             for p, fs in files_per_partition.items()],
        "version": 1,
    }


def encode_rollback_plan(plan: dict) -> bytes:
    return encode_avro(plan, ROLLBACK_PLAN_SCHEMA)


def decode_rollback_plan(data: bytes, source: str) -> dict | None:
    return decode_avro(data, source)


def make_rollback_metadata(start_time: str, instant_time: str, action: str,
                           deleted_per_partition: dict[str, list[str]]) -> dict:
    """``HoodieRollbackMetadata`` for a completed rollback of ``instant_time.action``."""
    return {
        "startRollbackTime": start_time, "timeTakenInMillis": 0,
        "totalFilesDeleted": sum(len(v) for v in deleted_per_partition.values()),
        "commitsRollback": [instant_time],
        "partitionMetadata": {p: {"partitionPath": p, "successDeleteFiles": list(fs), "failedDeleteFiles": [],
                                  "rollbackLogFiles": {}, "logFilesFromFailedCommit": {}}
                              for p, fs in deleted_per_partition.items()},
        "version": 1,
        "instantsRollback": [{"commitTime": instant_time, "action": action}],
    }


def encode_rollback_metadata(md: dict) -> bytes:
    return encode_avro(md, ROLLBACK_METADATA_SCHEMA)


def decode_rollback_metadata(data: bytes, source: str) -> dict | None:
    return decode_avro(data, source)


def make_savepoint_metadata(files_per_partition: dict[str, list[str]], *, by: str = "hoodie-lab",
                            at_epoch_s: int = 0, comments: str = "") -> dict:
    """``HoodieSavepointMetadata``: the data files a savepoint keeps, per partition."""
    return {"savepointedBy": by, "savepointedAt": at_epoch_s, "comments": comments,
            "partitionMetadata": {p: {"partitionPath": p, "savepointDataFile": list(fs)}
                                  for p, fs in files_per_partition.items()}}


def encode_savepoint_metadata(md: dict) -> bytes:
    return encode_avro(md, SAVEPOINT_SCHEMA)


def decode_savepoint_metadata(data: bytes, source: str) -> dict | None:
    return decode_avro(data, source)


def make_clustering_plan(groups: list[list[dict]], *, operation: str = "CLUSTER") -> dict:
    """``HoodieRequestedReplaceMetadata`` with a clustering plan; each group is a list of slices
    (fileId, partitionPath, dataFilePath, deltaFilePaths)."""
    return {
        "operationType": operation,
        "clusteringPlan": {
            "inputGroups": [{"slices": [{"dataFilePath": s.get("dataFilePath"),
                                         "deltaFilePaths": list(s.get("deltaFilePaths") or []),
                                         "fileId": s["fileId"], "partitionPath": s["partitionPath"],
                                         "bootstrapFilePath": "", "version": 1} for s in g],
                             "metrics": {}, "numOutputFileGroups": 1, "extraMetadata": None, "version": 1}
                            for g in groups],
            "strategy": None, "extraMetadata": {}, "version": 1, "preserveHoodieMetadata": True,
        },
        "extraMetadata": {}, "version": 1,
    }


def encode_requested_replace(md: dict) -> bytes:
    return encode_avro(md, REQUESTED_REPLACE_SCHEMA)


def decode_requested_replace(data: bytes, source: str) -> dict | None:
    return decode_avro(data, source)


# --------------------------------------------------------------------------- immutable create
#: The table's temporary folder, under ``.hoodie`` (``HoodieTableMetaClient.TEMPFOLDER_NAME`` =
#: ``.hoodie/.temp``; Hudi keeps markers there). No timeline reader lists it for instants.
TEMP_FOLDER = ".temp"


def temp_dir_for(path: str | os.PathLike) -> Path:
    """Where :func:`write_timeline_file` puts the temporary file for ``path``.

    ``<.hoodie>/.temp`` of the nearest ``.hoodie`` folder above ``path`` (the table's own for a
    tv6 ``.hoodie/<file>`` or a tv8/9 ``.hoodie/timeline/<file>``; the metadata table's own for
    ``.hoodie/metadata/.hoodie/...``), so a writer killed mid-write leaves nothing in a folder a
    timeline reader lists. A path under no ``.hoodie`` folder (not a table's timeline file) keeps
    its temporary file beside it. Both are on the table's file system, as the hard link needs.
    """
    path = Path(path)
    for folder in path.parents:
        if folder.name == ".hoodie":
            return folder / TEMP_FOLDER
    return path.parent


def write_timeline_file(path: str | os.PathLike, data: bytes, *, refusal: str | None = None) -> Path:
    """Create a timeline file atomically and immutably.

    The bytes go to a temporary file ``.<name>.<random>.tmp`` in :func:`temp_dir_for` (the
    table's ``.hoodie/.temp``), which is then hard-linked to the final name: ``os.link`` fails if
    the name exists, so an existing timeline file is never overwritten
    (``HoodieStorage.createImmutableFileInPath``), and the final name appears only with all its
    bytes. The temporary file is removed on success and on failure. Raises ``FileExistsError``
    (``refusal``: its message after ``"{path}: "``; ``hoodie.properties`` is written the same way).
    """
    path = Path(path)
    refusal = refusal or "timeline files are immutable; refusing to overwrite"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        raise FileExistsError(f"{path}: {refusal}")
    tmp_dir = temp_dir_for(path)
    tmp_dir.mkdir(parents=True, exist_ok=True)
    # created like Hadoop's FileSystem.create (Hudi): mode 0666 less the umask, not mkstemp's 0600 (readers
    # running as another user of the group must be able to read the timeline)
    tmp = str(tmp_dir / f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise FileExistsError(f"{path}: {refusal}") from None
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    return path
