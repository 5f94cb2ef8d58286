"""Partition paths of incoming records: Hudi's key generators for one partition field.

Stands for ``SimpleKeyGenerator`` (partitioned) / ``NonpartitionedKeyGenerator`` and ``KeyGenUtils.getPartitionPath``:
a row's partition path is ``<field>=<value>`` with hive-style partitioning (``hoodie.datasource.write.
hive_style_partitioning``), else ``<value>``; a null or empty value goes to ``__HIVE_DEFAULT_PARTITION__``
(``KeyGenUtils.HUDI_DEFAULT_PARTITION_PATH``); no URL encoding (``partitionpath.urlencode=false``). Record keys are
the key column as a string (``SimpleAvroKeyGenerator.getRecordKey``); the non-global index identifies a record by
(partition path, key).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeio.errors import UserError

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def partition_value_str(v: Any) -> str:
    """A partition value as its path segment (``KeyGenUtils.getPartitionPath``: dates ISO, booleans lower case)."""
    if v is None:
        return DEFAULT_PARTITION
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, _dt.date):
        return v.isoformat()
    s = str(v)
    return s if s else DEFAULT_PARTITION


def partition_paths(records: pa.Table, partition_field: str | None,
                    hive_style: bool) -> tuple[np.ndarray, list[str]]:
    """(code per row, partition path per code): ``<field>=<value>`` (hive style) or ``<value>``;
    null/empty values go to ``__HIVE_DEFAULT_PARTITION__`` (``KeyGenUtils``). Not partitioned: every row in ``""``."""
    if not partition_field:
        return np.zeros(records.num_rows, dtype=np.int64), [""]
    col = records.column(partition_field)
    t = col.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
            or pa.types.is_date32(t) or pa.types.is_boolean(t)):
        raise UserError(f"partition field {partition_field!r}: type {t} is not supported "
                        f"(string, integer, date, boolean)")
    enc = pc.dictionary_encode(col.combine_chunks(), null_encoding="encode")
    paths: list[str] = []
    remap = []
    for v in enc.dictionary.to_pylist():
        s = partition_value_str(v)
        if "/" in s:
            raise UserError(f"partition field {partition_field!r}: value {s!r} contains '/'")
        path = f"{partition_field}={s}" if hive_style else s
        if path not in paths:
            paths.append(path)
        remap.append(paths.index(path))
    codes = np.asarray(remap, dtype=np.int64)[enc.indices.to_numpy(zero_copy_only=False)]
    return codes, paths


def record_keys(records: pa.Table, record_key: str) -> pa.Array:
    """The record keys of the rows as strings (``_hoodie_record_key``)."""
    return records.column(record_key).cast(pa.string()).combine_chunks()
