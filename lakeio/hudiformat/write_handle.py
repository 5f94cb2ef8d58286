"""What every data-file write shares: rows with fresh meta columns, markers, new file groups, partition metadata.

Stands for ``HoodieWriteHandle`` (the meta columns of written records: ``_hoodie_commit_time``,
``_hoodie_commit_seqno`` = ``<instant>_<task>_<row>`` from ``HoodieRecord.generateSequenceId``, record key,
partition path, file name; write tokens ``<task>-<stage>-<attempt>`` from ``FSUtils.makeWriteToken``),
``HoodieCreateHandle`` (a new file group: a new base file holding inserts), ``DirectWriteMarkers``
(``.hoodie/.temp/<instant>/<partition>/<file>.marker.<CREATE|MERGE|APPEND>``, created before each data file, so a
rollback after a crash finds every file the instant may have written) and ``HoodiePartitionMetadata``
(``.hoodie_partition_metadata`` of each partition). File ids are ``<uuid>-0`` (``FSUtils.createNewFileIdPfx``),
here a UUID-5 of (table, partition, instant, n) so the same inputs write the same names.

The copy-on-write and merge-on-read paths (:mod:`.cow`, :mod:`.mor`) subclass :class:`WriteContext`.

Functions and contexts here take the writer (:class:`.table.HudiTableWriter`, whose facade calls them) as ``w``
(not imported: the facade imports this module).
"""

from __future__ import annotations

import datetime as _dt
import os
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeio.ondisk import metadata as md
from model import filenames as fn

from . import basefile
from . import delegates as _delegates
from .schema import PARTITION_PATH, RECORD_KEY


PARTITION_METAFILE = ".hoodie_partition_metadata"
_FILE_ID_NAMESPACE = uuid.UUID("4f1c3c2e-6a0e-4b53-9a53-2d3f6f0b8a11")


def atomic_write(path: Path, data: bytes, tmp_dir: Path) -> int:
    """Write ``data`` to ``path`` through a temporary file in ``tmp_dir`` and a rename; returns the size.
    (The writer calls it as ``table._atomic_write``, the name :mod:`pipeline.crash` wraps.)"""
    tmp_dir.mkdir(parents=True, exist_ok=True)
    tmp = tmp_dir / f".{path.name}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
    return len(data)


def new_file_id(table_name: str, instant: str, partition: str, n: int) -> str:
    """The ``n``-th new file id of ``instant`` in ``partition`` (``FSUtils.createNewFileIdPfx`` + ``-0``)."""
    return f"{uuid.uuid5(_FILE_ID_NAMESPACE, f'{table_name}/{partition}/{instant}/{n}')}-0"


def create_marker(hoodie_dir: Path, instant: str, partition: str, name: str, io_type: str) -> None:
    """``DirectWriteMarkers.create``: an empty ``<name>.marker.<io_type>`` under ``.temp/<instant>``."""
    d = hoodie_dir / ".temp" / instant / partition if partition else hoodie_dir / ".temp" / instant
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.marker.{io_type}").touch()


def write_partition_metadata(base_path: Path, hoodie_dir: Path, partition: str, instant: str) -> None:
    """``HoodiePartitionMetadata.trySave``: ``.hoodie_partition_metadata`` (commit time, depth) once per partition."""
    d = base_path / partition if partition else base_path
    d.mkdir(parents=True, exist_ok=True)
    f = d / PARTITION_METAFILE
    if f.exists():
        return
    depth = len(partition.split("/")) if partition else 0
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")
    tmp = hoodie_dir / ".temp" / instant / f".{PARTITION_METAFILE}.{uuid.uuid4().hex}.tmp"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(f"#partition metadata\n#{now}\ncommitTime={instant}\npartitionDepth={depth}\n")
    os.replace(tmp, f)


class WriteContext:
    """The writes of one partition of one instant (row positions are numpy int64 arrays into ``records``).

    ``task`` is a one-element list shared by the partitions of a batch: the next task number (write token)."""

    def __init__(self, w, instant: str, part: str, records: pa.Table, keys: pa.Array,
                 is_del: np.ndarray, hard_del: bool, task: list[int]):
        self.w, self.instant, self.part, self.records, self.keys = w, instant, part, records, keys
        self.is_del, self.hard_del, self.task = is_del, hard_del, task
        self.n_new = 0

    def _next_task(self) -> int:
        if self.w.task_number is not None:  # a Spark task: its partition id (HoodieRecord.generateSequenceId)
            return self.w.task_number
        t = self.task[0]
        self.task[0] += 1
        return t

    def _token(self, task: int) -> str:
        """``FSUtils.makeWriteToken(taskPartitionId, stageId, taskAttemptId)``: the Spark task's own token when
        the writer runs in one (two attempts of a task name their files differently), else ``<n>-0-<n>``."""
        return self.w.write_token or f"{task}-0-{task}"

    def _data_rows(self, idx: np.ndarray, file_name: str, task: int, start_seq: int = 0) -> pa.Table:
        """Rows ``idx`` of the batch with fresh meta columns (commit time, seqno, key, partition, file name)."""
        n = len(idx)
        if n == self.records.num_rows and (n == 0 or (idx[0] == 0 and np.all(np.diff(idx) == 1))):
            data, keys = self.records, self.keys
        else:
            take = pa.array(idx, pa.int64())
            data, keys = self.records.take(take), self.keys.take(take)
        seq = pc.binary_join_element_wise(f"{self.instant}_{task}_",
                                          pc.cast(pa.array(np.arange(start_seq, start_seq + n)), pa.string()), "")
        const = lambda v: pa.repeat(pa.scalar(v, pa.string()), n)  # noqa: E731
        meta = [const(self.instant), seq, keys, const(self.part), const(file_name)]
        return pa.Table.from_arrays(meta + [c.combine_chunks() for c in data.columns], schema=self.w._full_schema)

    def _delegate(self, path: str, op: int, keys, partitions) -> None:
        """Record what data file ``path`` did to ``keys`` (:mod:`.delegates`) when the writer collects delegates."""
        if self.w._delegates is not None:
            self.w._delegates.add(path, op, keys, partitions)

    def _write_base(self, fid: str, rows: pa.Table, task: int, io_type: str) -> tuple[fn.BaseFile, int]:
        """Marker, then the parquet base file (``basefile.write_base_file``, looked up at call time)."""
        w = self.w
        bf = fn.BaseFile(fid, self._token(task), self.instant, "parquet", self.part)
        create_marker(w.hoodie_dir, self.instant, self.part, bf.name, io_type)
        tmp = w.hoodie_dir / ".temp" / self.instant / f".{bf.name}.{uuid.uuid4().hex}.tmp"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        size = basefile.write_base_file(str(w.base_path / bf.path), rows, w._schema_json,
                                        compression=w.compression, tmp_path=str(tmp), unique=(w.record_key,))
        return bf, size

    def _new_group(self, chunk: np.ndarray, fid: str | None = None) -> dict:
        """``HoodieCreateHandle``: a new file group holding ``chunk`` (``fid``: a bucket's file id)."""
        w = self.w
        if fid is None:
            fid = new_file_id(w.table_name, self.instant, self.part, self.n_new)
            self.n_new += 1
        task = self._next_task()
        name = fn.BaseFile(fid, self._token(task), self.instant, "parquet", self.part).name
        rows = self._data_rows(chunk, name, task)
        bf, size = self._write_base(fid, rows, task, "CREATE")
        w._index.wrote_base(bf, rows.column(RECORD_KEY).combine_chunks())
        self._delegate(bf.path, _delegates.WRITTEN, rows.column(RECORD_KEY), rows.column(PARTITION_PATH))
        return md.make_write_stat(self.part, bf.path, fid, "null", num_writes=len(chunk),
                                  num_inserts=len(chunk), size=size)

    def write_bucket(self, fid: str, base: fn.BaseFile | None, updates: np.ndarray, inserts: np.ndarray,
                     **found) -> dict | None:
        """Bucket index: every record of the bucket goes to its file group ``fid`` (``base``: its latest base
        file, None when the group does not exist yet). ``updates``: rows whose key the group holds (deletes
        included), ``inserts``: the others; ``found``: what the caller's lookup read that the path may reuse
        (copy-on-write: ``old``, ``positions``). Returns the write stat (None: nothing to write)."""
        raise NotImplementedError

    def write(self, updates: dict[str, np.ndarray], inserts: np.ndarray,
              latest: dict[str, fn.BaseFile]) -> list[dict]:
        """Write the partition's updates (file id -> row positions), inserts and deletes; ``latest``: file id ->
        latest base file of the partition's file groups. Returns the write stats."""
        raise NotImplementedError
