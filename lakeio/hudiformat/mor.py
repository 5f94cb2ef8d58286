"""Merge-on-read: inserts go to new base files, updates and deletes of a file group to a new log file.

Stands for ``BaseSparkDeltaCommitActionExecutor`` on a MERGE_ON_READ table: inserts get new file groups
(``HoodieCreateHandle``, ``max_file_rows`` rows each; no small-file packing), and ``HoodieAppendHandle`` writes
one new log file per touched file group per deltacommit -- a data block (Avro, ``HoodieAvroDataBlock``, or
Parquet, ``HoodieParquetDataBlock``) with the updated records, then a delete block (``HoodieDeleteBlock``) with
the deleted keys and their ordering values. The log joins the file group's latest file slice
(:mod:`.fsview`): table version 8 names it with the deltacommit's own instant (version 1; completion-time
slicing places it), version 6 with the slice's base instant and the next free log version
(``HoodieLogFormat.WriterBuilder`` with ``withLogVersion``, instant-time slicing). Appends to an existing log file
are not written.

Functions and contexts here take the writer (:class:`.table.HudiTableWriter`, whose facade calls them) as ``w``
(not imported: the facade imports this module).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa

from lakeio.ondisk import metadata as md
from model import filenames as fn

from . import delegates as _delegates
from . import logfile
from .schema import PARTITION_PATH, RECORD_KEY
from .write_handle import WriteContext, create_marker
from .write_helper import ordering_branch, ordering_value


def next_log_version(base_path: Path, part: str, fid: str, base_instant: str) -> int:
    """One more than the greatest version of the slice's log files on disk (``FSUtils.getLatestLogVersion``),
    1 for the first."""
    d = base_path / part if part else base_path
    v = 0
    prefix = f".{fid}_{base_instant}.log."
    if d.is_dir():
        for n in os.listdir(d):
            if n.startswith(prefix):
                f = fn.parse_data_file(n, part)
                if isinstance(f, fn.LogFile):
                    v = max(v, f.version)
    return v + 1


class MergeOnReadContext(WriteContext):
    """The merge-on-read writes of one partition of one deltacommit."""

    def write(self, updates: dict[str, np.ndarray], inserts: np.ndarray,
              latest: dict[str, fn.BaseFile]) -> list[dict]:
        w = self.w
        stats = []
        for start in range(0, len(inserts), w.max_file_rows):
            stats.append(self._new_group(inserts[start:start + w.max_file_rows]))
        for fid in sorted(updates):
            stats.append(self._append(fid, latest[fid], updates[fid]))
        return stats

    def write_bucket(self, fid: str, base: fn.BaseFile | None, updates: np.ndarray, inserts: np.ndarray,
                     **found) -> dict | None:
        """The bucket's file group: a new log file with the updates and the inserts (``HoodieAppendHandle``
        takes a bucket's inserts too once the group exists) or, new, a base file with the inserts."""
        if base is not None:
            idx = np.sort(np.concatenate([updates, inserts]))
            return self._append(fid, base, idx, n_inserts=len(inserts))
        return self._new_group(inserts, fid) if len(inserts) else None

    def _append(self, fid: str, base: fn.BaseFile, idx: np.ndarray, n_inserts: int = 0) -> dict:
        """``HoodieAppendHandle``: one new log file with a data block (upserts) and a delete block
        (``n_inserts`` of the data rows are new keys: counted as inserts)."""
        w = self.w
        task = self._next_task()
        data_idx = idx[~self.is_del[idx]]
        del_idx = idx[self.is_del[idx]]
        if w.table_version == 6:
            log_instant = base.instant_time
            version = next_log_version(w.base_path, self.part, fid, log_instant)
        else:
            log_instant, version = self.instant, 1
        lf = fn.LogFile(fid, log_instant, version, self._token(task), partition=self.part)
        create_marker(w.hoodie_dir, self.instant, self.part, lf.name, "APPEND")
        blocks = []
        if len(data_idx):
            rows = self._data_rows(data_idx, fid, task)
            if w.log_block_format == "parquet":
                blocks.append(logfile.parquet_data_block(self.instant, rows, w._schema_json))
            else:
                blocks.append(logfile.avro_data_block(self.instant, rows, w._schema_json, w._parsed_schema))
        if len(del_idx):
            blocks.append(self._delete_block(del_idx))
        size = w._write_file(w.base_path / lf.path, b"".join(blocks), w.hoodie_dir / ".temp" / self.instant)
        if w._delegates is not None:  # the data block's keys, then the delete block's, as the file holds them
            if len(data_idx):
                self._delegate(lf.path, _delegates.WRITTEN, rows.column(RECORD_KEY), rows.column(PARTITION_PATH))
            if len(del_idx):
                self._delegate(lf.path, _delegates.DELETED, self.keys.take(pa.array(del_idx)), self.part)
        prev = base.instant_time if w.table_version == 6 else self.instant
        return md.make_write_stat(self.part, lf.path, fid, prev, num_writes=len(data_idx), num_inserts=n_inserts,
                                  num_update_writes=len(data_idx) - n_inserts, num_deletes=len(del_idx), size=size,
                                  logVersion=version, logOffset=0, baseFile=base.name, logFiles=[lf.name],
                                  totalLogBlocks=len(blocks))

    def _delete_block(self, del_idx: np.ndarray) -> bytes:
        """``HoodieDeleteBlock`` of the rows ``del_idx``: (key, partition, ordering value) per delete."""
        w = self.w
        branch = ordering_branch(self.records.schema.field(w.ordering_field).type) if w.ordering_field else None
        dkeys = self.keys.take(pa.array(del_idx)).to_pylist()
        if branch is None:
            ovs = [None] * len(dkeys)
        elif self.hard_del:
            # a key-only delete carries Hudi's default ordering value 0 ("natural order": it always
            # deletes), as Hudi writes it (real v8 fixture); null for non-numeric ordering fields
            ovs = [(branch, 0) if branch in ("int", "long", "float", "double") else None] * len(dkeys)
        else:
            ovs = [(branch, ordering_value(v))
                   for v in self.records.column(w.ordering_field).take(pa.array(del_idx)).to_pylist()]
        deletes = [(k, self.part, ov) for k, ov in zip(dkeys, ovs)]
        return logfile.delete_block(self.instant, deletes, w._schema_json)
