"""Record delegates: what a write did to each record key, per data file, as columns.

Stands for the ``HoodieRecordDelegate``s a write status carries (``WriteStatus.getIndexStats()
.getWrittenRecordDelegates()``): the metadata table's record-index update of a commit
(``HoodieBackedTableMetadataWriter``, ``HoodieTableMetadataUtil.convertMetadataToRecordIndexRecords``) takes the
keys from them instead of reading the files the commit wrote. Here they are one Arrow table per write (never a
Python object per record), in the order the writer wrote its files, and within a file in the file's order:

* ``file`` -- the index of the data file (its path relative to the base path, in the schema metadata ``files``);
* ``op`` -- :data:`WRITTEN` (the file holds the key: every key of a new base file version, the data block's keys
  of a log file), :data:`DELETED` (a log file's delete block removes it) or :data:`REPLACED` (a new base file
  version no longer holds a key of the version it replaced: a copy-on-write delete);
* ``key``, ``partition`` -- the record key and the ``_hoodie_partition_path`` the file holds for it (the
  partition the delete block names).

They cross from a Spark writer task to the driver as an Arrow IPC stream (:func:`to_bytes` / :func:`from_bytes`)
in the task's write-status row. The writer collects them only when asked (``HudiTableWriter(...,
record_delegates=True)``: the pipeline asks while the table has a record index, built or being built).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

WRITTEN, DELETED, REPLACED = 0, 1, 2
SCHEMA = pa.schema([("file", pa.int32()), ("op", pa.int8()), ("key", pa.string()), ("partition", pa.string())])
FILES_KEY = b"files"


def _with_files(table: pa.Table, files: list[str]) -> pa.Table:
    return table.replace_schema_metadata({FILES_KEY: json.dumps(files).encode()})


def files_of(table: pa.Table) -> list[str]:
    """The data files (paths relative to the base path) the delegates speak for, in order."""
    meta = table.schema.metadata or {}
    return json.loads(meta.get(FILES_KEY, b"[]"))


def empty() -> pa.Table:
    return _with_files(SCHEMA.empty_table(), [])


class Collector:
    """The delegates of one write, file after file (the writer's write handles add to it)."""

    def __init__(self):
        self.files: list[str] = []
        self.parts: list[pa.Table] = []

    def add(self, path: str, op: int, keys, partitions) -> None:
        """``keys`` / ``partitions``: pyarrow string arrays (or one partition string for every key) of one
        file's keys with ``op``; several calls for one file keep its order (data block, then delete block)."""
        if not self.files or self.files[-1] != path:
            self.files.append(path)
        keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
        keys = keys if pa.types.is_string(keys.type) else keys.cast(pa.string())
        n = len(keys)
        if isinstance(partitions, str):
            partitions = pa.repeat(pa.scalar(partitions, pa.string()), n)
        elif isinstance(partitions, pa.ChunkedArray):
            partitions = partitions.combine_chunks()
        self.parts.append(pa.Table.from_arrays(
            [pa.array(np.full(n, len(self.files) - 1, dtype=np.int32)), pa.array(np.full(n, op, dtype=np.int8)),
             keys, partitions.cast(pa.string())], schema=SCHEMA))

    def table(self) -> pa.Table:
        t = pa.concat_tables(self.parts) if self.parts else SCHEMA.empty_table()
        return _with_files(t, list(self.files))


def concat(tables) -> pa.Table:
    """The delegates of several writes as one (a commit's tasks in task order): files renumbered after each
    other."""
    files: list[str] = []
    parts = []
    for t in tables:
        fs = files_of(t)
        col = pa.array(t.column("file").to_numpy().astype(np.int32) + len(files)) if len(fs) else t.column("file")
        parts.append(pa.Table.from_arrays([col, t.column("op"), t.column("key"), t.column("partition")],
                                          schema=SCHEMA))
        files += fs
    t = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    return _with_files(t, files)


def to_bytes(table: pa.Table) -> bytes:
    """An Arrow IPC stream (what a Spark task returns in its write-status row)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def from_bytes(data) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(bytes(data))).read_all()
