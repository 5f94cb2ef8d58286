"""Preparing a batch for a write: validation, the delete marker, de-duplication and ordering values.

Stands for ``HoodieWriteHelper`` (``deduplicateRecords``: one record per (partition, key), combined with the
payload's ``preCombine``) and the merge rule of the record payloads / mergers (``hoodie.record.merge.mode``):
``EVENT_TIME_ORDERING`` (``DefaultHoodieRecordPayload``, an ordering field -- ``hoodie.table.precombine.field``):
the greatest ordering value wins, ties to the later record; ``COMMIT_TIME_ORDERING``
(``OverwriteWithLatestAvroPayload``, no ordering field): the later record always wins. A row whose
``_hoodie_is_deleted`` column is true is a delete (``HoodieOperation``/``isDeleteRecord``). Ordering values of
deletes are encoded as the column's Avro primitive (``DeleteRecord.orderingVal`` in delete blocks).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeio.errors import UserError

from .schema import META_COLUMNS, _avro_type

OPERATIONS = ("upsert", "insert", "delete")
IS_DELETED = "_hoodie_is_deleted"
EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"


def operation_type(operation: str) -> str:
    """``WriteOperationType`` name of an operation (commit metadata ``operationType``)."""
    return {"upsert": "UPSERT", "insert": "INSERT", "delete": "DELETE"}.get(operation.lower(), operation.upper())


def ordering_branch(t: pa.DataType) -> str:
    """The Avro primitive an ordering value is encoded as: the column's own Avro type
    (:func:`schema._avro_type`, logical types reduced to their primitive), for types with an order."""
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_string(t)
            or pa.types.is_large_string(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t)):
        raise UserError(f"ordering field: type {t} is not supported (integers, floats, strings, dates, timestamps)")
    if pa.types.is_timestamp(t):
        return "long"  # any unit or zone: the stored integer orders the values
    avro = _avro_type(pa.field("ordering", t))
    return avro["type"] if isinstance(avro, dict) else avro


def ordering_value(v: Any) -> Any:
    """A Python ordering value as Avro encodes it (dates as days, timestamps as their integer)."""
    if isinstance(v, _dt.datetime):
        raise UserError("ordering field: convert timestamps to integers before writing")
    if isinstance(v, _dt.date):
        return (v - _dt.date(1970, 1, 1)).days
    return v


def check_records(records: pa.Table, operation: str, record_key: str, partition_field: str | None,
                  ordering_field: str | None) -> pa.Table:
    """Refuse a bad batch (:class:`UserError`): unknown operation, missing key/partition/ordering column, null
    keys or ordering values, unsupported key or ordering types. Returns the rows without meta columns."""
    if operation not in OPERATIONS:
        raise UserError(f"operation: {operation!r}; expected one of {', '.join(OPERATIONS)}")
    names = set(records.column_names)
    need = [record_key] + [f for f in (partition_field, ordering_field) if f]
    for f in need:
        if f not in names:
            raise UserError(f"records: missing column {f!r}")
    if records.column(record_key).null_count:
        raise UserError(f"records: null record key in column {record_key!r}")
    kt = records.schema.field(record_key).type
    if not (pa.types.is_string(kt) or pa.types.is_large_string(kt) or pa.types.is_integer(kt)):
        raise UserError(f"records: record key column {record_key!r} has type {kt}; expected string/integer")
    if not pa.types.is_integer(kt) and pc.any(pc.equal(records.column(record_key), "")).as_py():
        # KeyGenUtils.getRecordKey: "recordKey value: \"\" for field: ... cannot be null or empty"
        raise UserError(f"records: empty record key in column {record_key!r}")
    if ordering_field:
        if records.column(ordering_field).null_count:
            raise UserError(f"records: null ordering value in column {ordering_field!r}")
        ordering_branch(records.schema.field(ordering_field).type)
    return records.select([c for c in records.column_names if c not in META_COLUMNS])


def conform_schema(records: pa.Table, data: pa.Schema, table_schema: pa.Schema) -> pa.Table:
    """The rows in the table schema's column order and types; a different schema (other than column order)
    is refused -- schema evolution is not supported."""
    if not data.equals(table_schema):
        if set(data.names) != set(table_schema.names) or any(
                data.field(n).type != table_schema.field(n).type for n in data.names):
            raise UserError(f"records: schema {data} differs from the table schema {table_schema} "
                            f"(schema evolution is not supported)")
    return records.select(table_schema.names).cast(table_schema)


def delete_mask(records: pa.Table, operation: str, delete_field: str = IS_DELETED) -> np.ndarray:
    """Which rows are deletes: every row of a ``delete``; else rows whose ``delete_field`` (default Hudi's
    ``_hoodie_is_deleted``; a user's boolean column as ``DefaultHoodieRecordPayload``'s
    ``hoodie.payload.delete.field`` names one) is true."""
    n = records.num_rows
    if operation == "delete":
        return np.ones(n, dtype=bool)
    if delete_field in records.column_names:
        return np.asarray(records.column(delete_field).fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    return np.zeros(n, dtype=bool)


def deduplicate(records: pa.Table, codes: np.ndarray, record_key: str,
                ordering_field: str | None) -> tuple[pa.Table, np.ndarray]:
    """Keep one row per (partition, key): the greatest ordering value, ties to the later row
    (``HoodieWriteHelper.deduplicateRecords`` with the payload's ``preCombine``)."""
    n = records.num_rows
    keys = records.column(record_key)
    if n < 2:
        return records, codes
    # each key as a small int (a hash table, no string sort); a (partition, key) pair as one int64
    kid = pc.dictionary_encode(keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys).indices
    kid = kid.to_numpy(zero_copy_only=False).astype(np.int64)
    group = kid * (int(codes.max()) + 1 if len(codes) else 1) + codes
    if pc.count_distinct(pa.array(group)).as_py() == n:  # a hash count (np.unique would sort)
        return records, codes
    otype = records.schema.field(ordering_field).type if ordering_field else None
    if otype is None or pa.types.is_integer(otype) or pa.types.is_floating(otype) or pa.types.is_boolean(otype):
        # numeric ordering: one stable sort by (group, ordering value); the last row of each group wins (the
        # greatest ordering value, ties to the later row: a stable sort keeps input order among equals)
        if otype is None:
            order = np.argsort(group, kind="stable")
        else:
            o = records.column(ordering_field).to_numpy()
            order = np.lexsort((o, group))  # lexsort is stable: equal keys keep input order
        g_sorted = group[order]
        last = np.ones(n, dtype=bool)
        last[:-1] = g_sorted[:-1] != g_sorted[1:]
        keep = np.sort(order[last])
        return records.take(pa.array(keep)), codes[keep]
    cols = {"c": pa.array(codes), "k": keys}
    sort = [("c", "ascending"), ("k", "ascending")]
    if ordering_field:
        cols["o"] = records.column(ordering_field)
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
