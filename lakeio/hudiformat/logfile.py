"""Hudi log files: the block framing, Avro/Parquet data blocks, delete blocks and rollback command blocks.

Facts used (apache/hudi ``HoodieLogFormat``, ``HoodieLogFormatWriter.appendBlocks``, ``HoodieLogBlock``,
``HoodieAvroDataBlock``, ``HoodieParquetDataBlock``, ``HoodieDeleteBlock``, ``HoodieCommandBlock``; the reader in
hudi-rs ``crates/core/src/file_group/log_file/{reader,content,log_block}.rs``; byte-checked against the real
v6/v8 fixture logs):

A log file is a sequence of blocks; every integer is big-endian. One block (log format version 1) is::

    "#HUDI#"                        6 bytes magic
    block_length          u64       bytes that follow this field up to and including total_block_length
    log_format_version    u32       1
    block_type            u32       COMMAND=0, DELETE=1, CORRUPT=2, AVRO_DATA=3, HFILE=4, PARQUET_DATA=5, CDC=6
    header                u32 n, then n x (u32 key, u32 len, len bytes UTF-8 value)
    content_length        u64
    content               content_length bytes
    footer                same shape as header (we write 0 entries, as Hudi does)
    total_block_length    u64       bytes from the magic up to (not including) this field

Header keys (``HeaderMetadataType`` ordinals): INSTANT_TIME=0, TARGET_INSTANT_TIME=1, SCHEMA=2,
COMMAND_BLOCK_TYPE=3. Contents:

- Avro data block: u32 block version (3), u32 record count, then per record u32 length + the Avro binary datum
  written with the header's SCHEMA (full row incl. meta columns).
- Parquet data block: the bytes of a parquet file of the rows (no prefix).
- Delete block: u32 block version (3), u32 length, then one Avro datum of ``HoodieDeleteRecordList``
  (``deleteRecordList: array<HoodieDeleteRecord{recordKey, partitionPath, orderingVal}>``).
- Command block: no content; header COMMAND_BLOCK_TYPE="0" (ROLLBACK_BLOCK) and TARGET_INSTANT_TIME = the
  rolled-back instant; INSTANT_TIME = the rollback instant.

A log file name is ``.<fileId>_<instant>.log.<version>_<writeToken>`` (``FSUtils.makeLogFileName``); the instant
is the deltacommit's own requested time for table version 8+, the slice's base instant for version 6.
Not supported: HFile and CDC blocks, block footers, corrupt-block recovery, appending to an existing file
(every writer call creates a new file version, which is what Hudi does on stores without append).
"""

from __future__ import annotations

import io
import json
import struct
from dataclasses import dataclass, field

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from .basefile import dictionary_columns  # the meta columns unique per row are written plain

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1
BLOCK_VERSION = 3

COMMAND_BLOCK = 0
DELETE_BLOCK = 1
AVRO_DATA_BLOCK = 3
PARQUET_DATA_BLOCK = 5

INSTANT_TIME = 0
TARGET_INSTANT_TIME = 1
SCHEMA = 2
COMMAND_BLOCK_TYPE = 3

ROLLBACK_PREVIOUS_BLOCK = "0"

_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")

# HoodieDeleteRecord as hudi-rs (crates/core/schemas) and Hudi 0.x/1.x (hudi-common/src/main/avro) define it.
DELETE_RECORD_SCHEMA = {
    "namespace": "org.apache.hudi.avro.model",
    "type": "record",
    "name": "HoodieDeleteRecord",
    "fields": [
        {"name": "recordKey", "type": ["null", "string"], "default": None},
        {"name": "partitionPath", "type": ["null", "string"], "default": None},
        {"name": "orderingVal", "type": [
            "null", "int", "long", "float", "double", "bytes", "string",
            {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15},
            {"type": "int", "logicalType": "date"},
            {"type": "int", "logicalType": "time-millis"},
            {"type": "long", "logicalType": "time-micros"},
            {"type": "long", "logicalType": "timestamp-millis"},
            {"type": "long", "logicalType": "timestamp-micros"},
        ], "default": None},
    ],
}
DELETE_RECORD_LIST_SCHEMA = {
    "namespace": "org.apache.hudi.avro.model",
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "fields": [{"name": "deleteRecordList", "type": {"type": "array", "items": DELETE_RECORD_SCHEMA}}],
}
_PARSED_DELETE_LIST = fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA)

# Union branch (index into orderingVal's union) for a Python ordering value, by the Arrow type it came from.
_ORDERING_BRANCH = {"int": "int", "long": "long", "float": "float", "double": "double", "string": "string",
                    "bytes": "bytes"}


def _meta_bytes(entries: dict[int, str]) -> bytes:
    out = [_U32.pack(len(entries))]
    for key in entries:  # insertion order (Java's map order varies; readers do not care)
        value = entries[key].encode()
        out.append(_U32.pack(key))
        out.append(_U32.pack(len(value)))
        out.append(value)
    return b"".join(out)


def encode_block(block_type: int, header: dict[int, str], content: bytes) -> bytes:
    """Frame one block (magic, lengths, version, type, header, content, empty footer)."""
    body = b"".join([
        _U32.pack(LOG_FORMAT_VERSION),
        _U32.pack(block_type),
        _meta_bytes(header),
        _U64.pack(len(content)),
        content,
        _meta_bytes({}),
    ])
    block_length = len(body) + 8  # + total_block_length
    total_block_length = len(MAGIC) + 8 + len(body)
    return MAGIC + _U64.pack(block_length) + body + _U64.pack(total_block_length)


def avro_data_content(rows: pa.Table, parsed_schema) -> bytes:
    """Content of an Avro data block: version, count, then length-prefixed Avro datums."""
    buf = io.BytesIO()
    records = rows.to_pylist()
    buf.write(_U32.pack(BLOCK_VERSION))
    buf.write(_U32.pack(len(records)))
    datum = io.BytesIO()
    for rec in records:
        datum.seek(0)
        datum.truncate()
        fastavro.schemaless_writer(datum, parsed_schema, rec)
        b = datum.getvalue()
        buf.write(_U32.pack(len(b)))
        buf.write(b)
    return buf.getvalue()


def parquet_data_content(rows: pa.Table, avro_schema_json: str, compression: str = "snappy") -> bytes:
    """Content of a Parquet data block: a whole parquet file (with the Avro schema in its footer), written by
    parquet-mr in Hudi (``HoodieParquetDataBlock``), so a column keeps its dictionary where parquet-mr's
    first-page rule would keep it, as in base files (:func:`.basefile.dictionary_columns`)."""
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, rows.schema.remove_metadata(), compression=compression, store_schema=False,
                          use_dictionary=dictionary_columns(rows.schema, rows=rows)) as w:
        w.write_table(rows)
        w.add_key_value_metadata({"parquet.avro.schema": avro_schema_json, "writer.model.name": "avro"})
    return buf.getvalue()


def delete_content(deletes: list[tuple[str, str, object]]) -> bytes:
    """Content of a delete block for ``(record_key, partition_path, ordering_value)`` triples.

    ``ordering_value`` is ``None`` or a ``(branch, value)`` pair where branch is one of the union's type names
    ("int", "long", "float", "double", "string", "bytes")."""
    recs = []
    for key, part, ordering in deletes:
        if ordering is None:
            ov = None
        else:
            branch, value = ordering
            ov = (_ORDERING_BRANCH[branch], value)
        recs.append({"recordKey": key, "partitionPath": part, "orderingVal": ov})
    datum = io.BytesIO()
    fastavro.schemaless_writer(datum, _PARSED_DELETE_LIST, {"deleteRecordList": recs})
    d = datum.getvalue()
    return _U32.pack(BLOCK_VERSION) + _U32.pack(len(d)) + d


def avro_data_block(instant: str, rows: pa.Table, avro_schema_json: str, parsed_schema=None) -> bytes:
    if parsed_schema is None:
        parsed_schema = fastavro.parse_schema(json.loads(avro_schema_json))
    header = {INSTANT_TIME: instant, SCHEMA: avro_schema_json}
    return encode_block(AVRO_DATA_BLOCK, header, avro_data_content(rows, parsed_schema))


def parquet_data_block(instant: str, rows: pa.Table, avro_schema_json: str) -> bytes:
    header = {INSTANT_TIME: instant, SCHEMA: avro_schema_json}
    return encode_block(PARQUET_DATA_BLOCK, header, parquet_data_content(rows, avro_schema_json))


def delete_block(instant: str, deletes: list[tuple[str, str, object]], avro_schema_json: str) -> bytes:
    header = {INSTANT_TIME: instant, SCHEMA: avro_schema_json}
    return encode_block(DELETE_BLOCK, header, delete_content(deletes))


def rollback_block(rollback_instant: str, target_instant: str) -> bytes:
    header = {INSTANT_TIME: rollback_instant, TARGET_INSTANT_TIME: target_instant,
              COMMAND_BLOCK_TYPE: ROLLBACK_PREVIOUS_BLOCK}
    return encode_block(COMMAND_BLOCK, header, b"")


# --------------------------------------------------------------------------------------------------------------
# Reading back (for the writer's own index rebuild and for tests; hudi-rs is the independent reader)


@dataclass
class LogBlock:
    block_type: int
    header: dict[int, str]
    content: bytes
    footer: dict[int, str] = field(default_factory=dict)

    @property
    def instant(self) -> str:
        return self.header.get(INSTANT_TIME, "")

    def data_rows(self) -> list[dict]:
        """Rows of an Avro or Parquet data block."""
        if self.block_type == PARQUET_DATA_BLOCK:
            return pq.read_table(io.BytesIO(self.content)).to_pylist()
        if self.block_type != AVRO_DATA_BLOCK:
            raise ValueError(f"block type {self.block_type} is not a data block")
        schema = fastavro.parse_schema(json.loads(self.header[SCHEMA]))
        buf = io.BytesIO(self.content)
        (version,) = _U32.unpack(buf.read(4))
        if version != BLOCK_VERSION:
            raise ValueError(f"unsupported data block version {version}")
        (count,) = _U32.unpack(buf.read(4))
        out = []
        for _ in range(count):
            (n,) = _U32.unpack(buf.read(4))
            out.append(fastavro.schemaless_reader(io.BytesIO(buf.read(n)), schema, None))
        return out

    def deletes(self) -> list[dict]:
        """``{"recordKey", "partitionPath", "orderingVal"}`` records of a delete block."""
        if self.block_type != DELETE_BLOCK:
            raise ValueError(f"block type {self.block_type} is not a delete block")
        buf = io.BytesIO(self.content)
        (version,) = _U32.unpack(buf.read(4))
        if version != BLOCK_VERSION:
            raise ValueError(f"unsupported delete block version {version}")
        (n,) = _U32.unpack(buf.read(4))
        rec = fastavro.schemaless_reader(io.BytesIO(buf.read(n)), _PARSED_DELETE_LIST, None)
        return rec["deleteRecordList"]


def _read_meta(buf: io.BytesIO) -> dict[int, str]:
    (n,) = _U32.unpack(buf.read(4))
    out = {}
    for _ in range(n):
        key, length = struct.unpack(">II", buf.read(8))
        out[key] = buf.read(length).decode()
    return out


def read_blocks(data: bytes) -> list[LogBlock]:
    """Parse every block of a log file's bytes (format version 1 framing); raises ValueError when malformed."""
    blocks = []
    pos = 0
    while pos < len(data):
        if data[pos:pos + 6] != MAGIC:
            raise ValueError(f"bad magic at offset {pos}")
        (block_length,) = _U64.unpack_from(data, pos + 6)
        end = pos + 14 + block_length
        if end > len(data):
            raise ValueError(f"truncated block at offset {pos}")
        buf = io.BytesIO(data[pos + 14:end])
        version, block_type = struct.unpack(">II", buf.read(8))
        if version != LOG_FORMAT_VERSION:
            raise ValueError(f"unsupported log format version {version}")
        header = _read_meta(buf)
        (content_length,) = _U64.unpack(buf.read(8))
        content = buf.read(content_length)
        footer = _read_meta(buf)
        blocks.append(LogBlock(block_type, header, content, footer))
        pos = end
    return blocks


def read_log_file(path: str) -> list[LogBlock]:
    with open(path, "rb") as f:
        return read_blocks(f.read())
