"""``hoodie.properties`` of a table the writer creates or opens, and the table schema it resolves.

Stands for ``HoodieTableConfig`` (the properties and their defaults per table version) and
``HoodieTableMetaClient.newTableBuilder().initTable`` (the ``.hoodie`` folder: ``.aux``, ``.schema``, ``.temp``,
``archived`` in v6 / ``timeline/history`` in v8, then ``hoodie.properties``); an existing table must be the same
table (type, version, key, partition and precombine fields). No metadata table:
``hoodie.table.metadata.partitions`` is absent, so readers list the partition folders.

The schema of an existing table is resolved as ``TableSchemaResolver`` does: the ``schema`` of the latest commit
metadata that has one, with the exact Arrow types taken from a base file of the table when one exists.

Functions and contexts here take the writer (:class:`.table.HudiTableWriter`, whose facade calls them) as ``w``
(not imported: the facade imports this module).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lakeio.errors import UserError
from lakeio.ondisk.properties import read_properties, write_hoodie_properties
from model import filenames as fn

from .schema import META_COLUMNS, data_schema
from .write_helper import COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING


COPY_ON_WRITE = "COPY_ON_WRITE"
MERGE_ON_READ = "MERGE_ON_READ"
TYPE_ALIASES = {"cow": COPY_ON_WRITE, "copy_on_write": COPY_ON_WRITE, "mor": MERGE_ON_READ,
                "merge_on_read": MERGE_ON_READ}
#: ``hoodie.record.merge.strategy.id`` values (``HoodieRecordMerger``): event-time (default) / commit-time.
MERGE_STRATEGY = {EVENT_TIME_ORDERING: "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
                  COMMIT_TIME_ORDERING: "ce9acb64-bde0-424c-9b91-f6ebba25356d"}
PAYLOAD = {EVENT_TIME_ORDERING: "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
           COMMIT_TIME_ORDERING: "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"}


def table_properties(w) -> dict[str, str]:
    """The ``hoodie.properties`` entries of a new table (``HoodieTableConfig``)."""
    p = {
        "hoodie.table.name": w.table_name,
        "hoodie.table.type": w.table_type,
        "hoodie.table.version": str(w.table_version),
        "hoodie.timeline.layout.version": str(w.layout),
        "hoodie.archivelog.folder": "archived",
        "hoodie.table.recordkey.fields": w.record_key,
        "hoodie.table.base.file.format": "PARQUET",
        "hoodie.table.log.file.format": "HOODIE_LOG",
        "hoodie.datasource.write.hive_style_partitioning": "true" if w.hive_style else "false",
        "hoodie.datasource.write.partitionpath.urlencode": "false",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.table.timeline.timezone": w.timezone,
        "hoodie.compaction.payload.class": PAYLOAD[w.merge_mode],
    }
    if w.ordering_field:
        p["hoodie.table.precombine.field"] = w.ordering_field
    if w.partition_field:
        p["hoodie.table.partition.fields"] = w.partition_field
    if w.table_version == 6:
        p["hoodie.table.keygenerator.class"] = ("org.apache.hudi.keygen.SimpleKeyGenerator" if w.partition_field
                                                else "org.apache.hudi.keygen.NonpartitionedKeyGenerator")
        p["hoodie.compaction.record.merger.strategy"] = MERGE_STRATEGY[EVENT_TIME_ORDERING]
    else:
        p["hoodie.table.initial.version"] = str(w.table_version)
        p["hoodie.timeline.path"] = "timeline"
        p["hoodie.timeline.history.path"] = "history"
        p["hoodie.table.keygenerator.type"] = "SIMPLE" if w.partition_field else "NON_PARTITIONED"
        p["hoodie.record.merge.mode"] = w.merge_mode
        p["hoodie.record.merge.strategy.id"] = MERGE_STRATEGY[w.merge_mode]
    return p


def init_or_check(w) -> None:
    """Create the table (``initTable``) if ``hoodie.properties`` is absent, else check it is this table and take
    its name, partitioning style and time zone."""
    props_path = w.hoodie_dir / "hoodie.properties"
    if w.base_path.exists() and not w.base_path.is_dir():
        raise UserError(f"{w.base_path}: not a directory")
    if not props_path.exists():
        if w.base_path.exists() and any(p.name != ".hoodie" for p in w.base_path.iterdir()):
            raise UserError(f"{w.base_path}: exists and is not an empty directory or a Hudi table")
        w.hoodie_dir.mkdir(parents=True, exist_ok=True)
        for d in (".aux", ".schema", ".temp", "archived" if w.table_version == 6 else "timeline/history"):
            (w.hoodie_dir / d).mkdir(parents=True, exist_ok=True)
        write_hoodie_properties(props_path, table_properties(w))
    else:
        check_properties(w, read_properties(props_path), props_path)


def check_properties(w, props: dict[str, str], source: Path) -> None:
    want = table_properties(w)
    for key in ("hoodie.table.type", "hoodie.table.version", "hoodie.table.recordkey.fields",
                "hoodie.table.partition.fields", "hoodie.table.precombine.field"):
        have = props.get(key, "")
        if have != want.get(key, ""):
            raise UserError(f"{source}: holds a different table ({key}={have!r}, this writer needs "
                            f"{want.get(key, '')!r})")
    w.table_name = props.get("hoodie.table.name", w.table_name)
    w.hive_style = props.get("hoodie.datasource.write.hive_style_partitioning", "false") == "true"
    w.timezone = props.get("hoodie.table.timeline.timezone", w.timezone)


def resolve_schema(base_path: Path, commit_metadata: dict[str, dict],
                   base_files: list[fn.BaseFile]) -> pa.Schema | None:
    """``TableSchemaResolver.getTableAvroSchema``: the data schema of the latest commit whose metadata holds one;
    the Arrow types are read from a base file of the table (the oldest of the first file group listed) when
    there is one, else derived from the Avro fields. ``None``: no commit has a schema yet."""
    for t in sorted(commit_metadata, reverse=True):
        s = (commit_metadata[t].get("extraMetadata") or {}).get("schema")
        if s:
            if base_files:
                first = base_files[0]
                group = [b for b in base_files if (b.partition, b.file_id) == (first.partition, first.file_id)]
                b = min(group, key=lambda x: x.instant_time)
                return data_schema(pq.read_schema(base_path / b.path))
            return schema_from_avro_fields(json.loads(s))
    return None


def schema_from_avro_fields(avro: dict) -> pa.Schema:
    """The Arrow data schema of a flat Avro record schema (meta fields dropped; nullable unions unwrapped)."""
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
    return pa.schema(fields)
