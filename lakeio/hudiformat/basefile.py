"""Parquet base files as Hudi writes them: meta columns first, Hudi's key-value metadata in the footer.

Facts used (apache/hudi ``HoodieAvroParquetWriter`` / ``HoodieBaseParquetWriter``, ``HoodieAvroWriteSupport``;
observed on the real v6/v8 fixtures):

- Column order: the five ``_hoodie`` meta columns, then the data columns (``schema.full_schema``).
- Footer key-value metadata: ``parquet.avro.schema`` (the Avro schema with meta fields, as parquet-avro writes it),
  ``writer.model.name=avro``, ``hoodie_min_record_key`` / ``hoodie_max_record_key`` (lexicographic min/max of
  ``_hoodie_record_key`` in the file, ``HoodieAvroWriteSupport.finalizeWrite``).
- Not written: the bloom filter (``org.apache.hudi.bloomfilter`` + ``hoodie_bloom_filter_type_code``), which only
  Hudi's BLOOM index needs on a later write; readers (hudi-rs, Spark) do not use it. No ``ARROW:schema`` key is
  stored, so the footer holds only what parquet-mr would put there.

Compression defaults to snappy (Hudi's default ``hoodie.parquet.compression.codec`` is gzip, slower to write);
pass ``compression="gzip"`` for byte-level fidelity.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeio.hudiformat.schema import RECORD_KEY

WRITER_MODEL = "avro"


def footer_metadata(avro_schema_json: str, rows: pa.Table) -> dict[bytes, bytes]:
    """The key-value metadata Hudi puts in a base file footer for ``rows`` (which include the meta columns)."""
    meta = {b"parquet.avro.schema": avro_schema_json.encode(), b"writer.model.name": WRITER_MODEL.encode()}
    if rows.num_rows:
        mm = pc.min_max(rows.column(RECORD_KEY))
        meta[b"hoodie_min_record_key"] = mm["min"].as_py().encode()
        meta[b"hoodie_max_record_key"] = mm["max"].as_py().encode()
    return meta


#: meta columns whose values are distinct within a file (one record per key in a file group; a sequence number
#: per record): a dictionary would only be built to be abandoned (parquet falls back to plain encoding once it
#: outgrows its page), so they are written plain from the start -- the values are the same, only the encoding
UNIQUE_META_COLUMNS = ("_hoodie_commit_seqno", RECORD_KEY)


#: parquet-mr's first page (Hudi writes its base files with parquet-mr): a page holds at most
#: ``parquet.page.row.count.limit`` values (20,000) and about ``parquet.page.size`` bytes (1 MiB)
FIRST_PAGE_ROWS = 20_000
FIRST_PAGE_BYTES = 1 << 20


def _plain_sizes(values: pa.Array) -> np.ndarray | None:
    """The PLAIN-encoded size of each value of a null-free array (a string or binary: 4-byte length + bytes; a
    fixed-width number, date or time: its width); None for booleans (parquet-mr never dictionary-encodes them)
    and types not sized here."""
    t = values.type
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return pc.binary_length(values).to_numpy(zero_copy_only=False).astype(np.int64) + 4
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_date(t) or pa.types.is_timestamp(t) \
            or pa.types.is_time(t):
        return np.full(len(values), t.bit_width // 8, dtype=np.int64)
    return None


def dictionary_pays(column: pa.Array | pa.ChunkedArray) -> bool:
    """Whether parquet-mr (Hudi's writer) keeps the dictionary of this column chunk. Its ``FallbackValuesWriter``
    starts every column but booleans with a dictionary and, when the first page is written, keeps it only if it
    compresses that page (``DictionaryValuesWriter.isCompressionSatisfying``: the page's dictionary-encoded size
    plus the dictionary's size below the page's plain size); otherwise the chunk falls back to plain -- a column
    of distinct values (an ordering field, a payload) is written plain. Here over the column's first page (its
    first :data:`FIRST_PAGE_ROWS` non-null values, to the first that reaches :data:`FIRST_PAGE_BYTES` of plain
    size), the indices bit-packed at the bit width of the largest id (parquet's RLE/bit-packing hybrid, one byte
    of width). True for a type this does not size (Arrow then keeps its own default)."""
    values = column.slice(0, FIRST_PAGE_ROWS)
    values = (values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values).drop_null()
    sizes = _plain_sizes(values) if len(values) else None
    if sizes is None:
        return True
    cum = np.cumsum(sizes)
    n = min(len(values), int(np.searchsorted(cum, FIRST_PAGE_BYTES, side="left")) + 1)
    distinct = pc.unique(values.slice(0, n))
    dictionary = int(_plain_sizes(distinct).sum())
    encoded = 1 + (n * (len(distinct) - 1).bit_length() + 7) // 8
    return encoded + dictionary < int(cum[n - 1])


def dictionary_columns(schema: pa.Schema, unique: tuple[str, ...] = (), rows: pa.Table | None = None) -> list[str]:
    """The columns written with dictionary encoding (parquet's default): all but :data:`UNIQUE_META_COLUMNS`
    and ``unique`` (the data columns whose values are distinct within a file: a base file's record-key field,
    one record per key in a file group -- the data copy of ``_hoodie_record_key``) and, given the ``rows`` to
    write, the columns parquet-mr would write plain (:func:`dictionary_pays`). Only the encoding differs: the
    values are the same."""
    names = [n for n in schema.names if n not in UNIQUE_META_COLUMNS and n not in unique]
    return names if rows is None else [n for n in names if dictionary_pays(rows.column(n))]


def write_base_file(path: str, rows: pa.Table, avro_schema_json: str, compression: str = "snappy",
                    tmp_path: str | None = None, unique: tuple[str, ...] = ()) -> int:
    """Write ``rows`` (meta columns first) to ``path`` as a Hudi parquet base file; return its size in bytes.

    The file is written to ``tmp_path`` (default ``<path>.tmp``; the table writer uses ``.hoodie/.temp``, outside
    the partition folders readers list) and renamed, so a crash never leaves a half-written base file under its
    final name (Hudi relies on markers for this; we do both). ``unique``: data columns written plain; the
    others keep a dictionary where parquet-mr would (:func:`dictionary_columns`)."""
    if tmp_path is None:
        tmp_path = path + ".tmp"
    with pq.ParquetWriter(tmp_path, rows.schema.remove_metadata(), compression=compression,
                          store_schema=False, write_statistics=True,
                          use_dictionary=dictionary_columns(rows.schema, unique, rows)) as writer:
        writer.write_table(rows)
        writer.add_key_value_metadata(footer_metadata(avro_schema_json, rows))
    os.replace(tmp_path, path)
    return os.path.getsize(path)


def read_base_file(path: str) -> pa.Table:
    """Read a base file back (all columns, meta columns included)."""
    return pq.read_table(path)
