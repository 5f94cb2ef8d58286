"""Hudi's record schema: the five ``_hoodie`` meta columns and the Avro schema Hudi stores beside the data.

Facts used (apache/hudi ``HoodieRecord.HOODIE_META_COLUMNS``, ``HoodieAvroUtils.addMetadataFields``; observed in
the real v6/v8 fixture tables):

- Every base file and every log data block starts with five nullable string columns, in this order:
  ``_hoodie_commit_time, _hoodie_commit_seqno, _hoodie_record_key, _hoodie_partition_path, _hoodie_file_name``.
  In the Avro schema they are ``{"name": .., "type": ["null","string"], "doc": "", "default": null}``.
- The record is named ``<table>_record`` in namespace ``hoodie.<table>``; data fields are ``["null", T]`` with
  ``"default": null`` (Spark SQL tables; ``AvroConversionUtils.convertStructTypeToAvroSchema``).
- ``_hoodie_commit_seqno`` is ``<instant>_<taskPartitionId>_<rowIndex>``
  (``HoodieRecord.generateSequenceId``).

Only flat schemas are supported: bool, 8-64 bit integers, float, double, string, binary, date32,
timestamp[ms|us] (tz-naive or UTC). Anything else raises ``UserError``. Stored types: int8/int16 are widened to
int32 (Avro has no narrower int) and timestamps are stored as UTC instants (``timestamp-millis``/``-micros``, what
Spark's TimestampType becomes); a tz-naive timestamp is taken as UTC.
"""

from __future__ import annotations

import json

import pyarrow as pa

from lakeio.errors import UserError

COMMIT_TIME = "_hoodie_commit_time"
COMMIT_SEQNO = "_hoodie_commit_seqno"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"
META_COLUMNS = (COMMIT_TIME, COMMIT_SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME)


def _avro_type(field: pa.Field):
    t = field.type
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    if pa.types.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(t) and t.tz in (None, "UTC", "+00:00"):
        if t.unit == "ms":
            return {"type": "long", "logicalType": "timestamp-millis"}
        if t.unit == "us":
            return {"type": "long", "logicalType": "timestamp-micros"}
    raise UserError(f"records: column {field.name!r} has type {t}, which the Hudi writer does not support "
                    f"(flat bool/int/float/string/binary/date32/timestamp[ms|us] only)")


def data_schema(arrow_schema: pa.Schema) -> pa.Schema:
    """The user columns of ``arrow_schema`` (meta columns dropped), with integer widths kept as Hudi reads them.

    int8/int16 are widened to int32 because Avro has no narrower int (what Hudi stores and reads back)."""
    fields = []
    for f in arrow_schema:
        if f.name in META_COLUMNS:
            continue
        _avro_type(f)  # validates
        t = f.type
        if pa.types.is_int8(t) or pa.types.is_int16(t):
            t = pa.int32()
        elif pa.types.is_large_string(t):
            t = pa.string()
        elif pa.types.is_large_binary(t):
            t = pa.binary()
        elif pa.types.is_timestamp(t):
            # Avro timestamp-millis/micros are UTC instants (Spark's TimestampType); naive values are taken as UTC
            t = pa.timestamp(t.unit, tz="UTC")
        fields.append(pa.field(f.name, t, nullable=True))
    return pa.schema(fields)


def full_schema(data: pa.Schema) -> pa.Schema:
    """Meta columns followed by ``data`` (the column order of every Hudi base file and data block)."""
    return pa.schema([pa.field(m, pa.string(), nullable=True) for m in META_COLUMNS] + list(data))


def avro_schema(table_name: str, data: pa.Schema, with_meta: bool = True) -> dict:
    """Hudi's Avro record schema (as a dict) for ``data``; with the meta fields first when ``with_meta``."""
    fields = []
    if with_meta:
        for m in META_COLUMNS:
            fields.append({"name": m, "type": ["null", "string"], "doc": "", "default": None})
    for f in data:
        fields.append({"name": f.name, "type": ["null", _avro_type(f)], "default": None})
    return {"type": "record", "name": f"{table_name}_record", "namespace": f"hoodie.{table_name}", "fields": fields}


def avro_schema_json(table_name: str, data: pa.Schema, with_meta: bool = True) -> str:
    """Compact JSON of :func:`avro_schema` (the form Hudi writes into headers, footers and commit metadata)."""
    return json.dumps(avro_schema(table_name, data, with_meta), separators=(",", ":"))
