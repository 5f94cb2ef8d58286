"""Copy-on-write: every touched file group gets a new base file version named with the instant.

Stands for ``BaseSparkCommitActionExecutor`` on a COPY_ON_WRITE table: ``UpsertPartitioner`` (updates go to their
file group; inserts fill small file groups first -- ``getSmallFiles``: groups whose latest base file has fewer
than ``small_file_rows`` rows, up to ``max_file_rows`` -- then new file groups of ``max_file_rows`` rows,
``HoodieCreateHandle``) and ``HoodieMergeHandle`` (rewrite the latest base file: unchanged rows keep their
``_hoodie_commit_time`` / ``_hoodie_commit_seqno`` and get the new ``_hoodie_file_name``; an update or a delete
replaces the stored record only if the merge rule lets it -- event-time ordering: incoming ordering value >=
stored; a ``delete`` operation always deletes; the old file's row order is kept, replaced rows stay in place,
inserts are appended). The latest base files come from the writer's file-system view (:mod:`.fsview`).

Functions and contexts here take the writer (:class:`.table.HudiTableWriter`, whose facade calls them) as ``w``
(not imported: the facade imports this module).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeio.ondisk import metadata as md
from model import filenames as fn

from . import delegates as _delegates
from .schema import FILE_NAME, PARTITION_PATH, RECORD_KEY
from .write_handle import WriteContext


def read_base_rows(w, base: fn.BaseFile) -> pa.Table:
    """Every row of a base file in the table's full schema (meta columns first): what the merge rewrites. Its
    record keys are handed to the writer's index (:meth:`.index.SimpleIndex.remember`), so a lookup of the
    same file does not read its key column again."""
    old = pq.read_table(w.base_path / base.path).select(list(w._full_schema.names)).cast(w._full_schema)
    w._index.remember(base, old.column(RECORD_KEY))
    return old


class CopyOnWriteContext(WriteContext):
    """The copy-on-write writes of one partition of one instant."""

    def write(self, updates: dict[str, np.ndarray], inserts: np.ndarray,
              latest: dict[str, fn.BaseFile]) -> list[dict]:
        w = self.w
        stats = []
        # small-file handling: pack inserts into existing small file groups (UpsertPartitioner.getSmallFiles)
        ins_to: dict[str, np.ndarray] = {}
        remaining = inserts
        if w.small_file_rows > 0 and len(remaining):
            for fid, b in sorted(latest.items(), key=lambda kv: kv[0]):
                if b is None or not len(remaining):
                    continue
                n = len(w._index.keys_of(b))
                if n < w.small_file_rows:
                    room = w.max_file_rows - n
                    if room > 0:
                        ins_to[fid], remaining = remaining[:room], remaining[room:]
        empty = np.zeros(0, dtype=np.int64)
        for fid in sorted(set(updates) | set(ins_to)):
            stats.append(self._merge(fid, latest[fid], updates.get(fid, empty), ins_to.get(fid, empty)))
        for start in range(0, len(remaining), w.max_file_rows):
            stats.append(self._new_group(remaining[start:start + w.max_file_rows]))
        return stats

    def write_bucket(self, fid: str, base: fn.BaseFile | None, updates: np.ndarray, inserts: np.ndarray,
                     old: pa.Table | None = None, positions: np.ndarray | None = None) -> dict | None:
        """The bucket's file group: merged (``HoodieMergeHandle``: updates in place, inserts appended) or, new,
        created with the inserts (``HoodieCreateHandle``). ``old``/``positions``: the base file's rows
        (:func:`read_base_rows`) and each update's row in them, when the caller's index lookup already has them."""
        if base is not None:
            return self._merge(fid, base, updates, inserts, old, positions)
        return self._new_group(inserts, fid) if len(inserts) else None

    def _merge(self, fid: str, old_base: fn.BaseFile, upd: np.ndarray, ins: np.ndarray,
               old: pa.Table | None = None, positions: np.ndarray | None = None) -> dict:
        """``HoodieMergeHandle``: rewrite the file group's latest base file with updates/deletes/inserts.

        Rows that stay keep their meta columns except ``_hoodie_file_name``; the old file's row order is kept
        (replaced rows stay in place) and inserts are appended. ``old``: the base file's rows, already read
        (:func:`read_base_rows`); ``positions``: the row in ``old`` of each of ``upd`` (every one found there),
        else looked up here by key (``upd`` rows whose key the file does not hold are dropped)."""
        w = self.w
        task = self._next_task()
        name = fn.BaseFile(fid, self._token(task), self.instant, "parquet", self.part).name
        if old is None:
            old = read_base_rows(w, old_base)
        if positions is None:
            pos = pc.index_in(self.keys.take(pa.array(upd, pa.int64())), value_set=old.column(RECORD_KEY))
            valid = pos.is_valid().to_numpy(zero_copy_only=False)
            upd = upd[valid]
            j = pos.filter(pos.is_valid()).to_numpy().astype(np.int64)
        else:
            if len(positions) != len(upd):
                raise ValueError(f"merge {fid}: {len(positions)} positions for {len(upd)} updates")
            j = np.asarray(positions, dtype=np.int64)
        if len(upd) and not self.hard_del and w.ordering_field:
            new_o = self.records.column(w.ordering_field).take(pa.array(upd))
            old_o = old.column(w.ordering_field).take(pa.array(j))
            wins = pc.greater_equal(new_o, old_o).to_numpy(zero_copy_only=False)
            upd, j = upd[wins], j[wins]
        dels = self.is_del[upd]
        drop_j, rep_j, rep_i = j[dels], j[~dels], upd[~dels]
        n_old = old.num_rows
        fn_at = old.schema.get_field_index(FILE_NAME)  # every row of the new version is named `name`: the column
        body = old.remove_column(fn_at)  # is left out of the gather and made after it
        by_pos = np.argsort(rep_j, kind="stable")
        rep_j, rep_i = rep_j[by_pos], rep_i[by_pos]
        # one gather over [old rows, replacing rows]: each old position in order, a replaced one from its
        # replacing row (the k-th replacing row stands at rep_j[k]), a deleted one dropped
        src = np.arange(n_old, dtype=np.int64)
        src[rep_j] = n_old + np.arange(len(rep_j), dtype=np.int64)
        alive = np.ones(n_old, dtype=bool)
        alive[drop_j] = False
        src = src[alive]
        if len(rep_i):
            body = pa.concat_tables([body, self._data_rows(rep_i, name, task).remove_column(fn_at)]).take(pa.array(src))
        elif len(drop_j):
            body = body.take(pa.array(src))
        merged = body.add_column(fn_at, old.schema.field(fn_at), pa.repeat(pa.scalar(name, pa.string()), body.num_rows))
        if len(ins):
            merged = pa.concat_tables([merged, self._data_rows(ins, name, task, start_seq=len(rep_i))])
        bf, size = self._write_base(fid, merged, task, "MERGE")
        merged_keys = merged.column(RECORD_KEY).combine_chunks()
        w._index.wrote_base(bf, merged_keys)
        if w._delegates is not None:  # every key of the new version; the old version's keys it no longer holds
            self._delegate(bf.path, _delegates.WRITTEN, merged_keys, merged.column(PARTITION_PATH))
            gone = pc.invert(pc.is_in(old.column(RECORD_KEY), value_set=merged_keys))
            if pc.any(gone).as_py():
                self._delegate(bf.path, _delegates.REPLACED, old.column(RECORD_KEY).filter(gone),
                               old.column(PARTITION_PATH).filter(gone))
        return md.make_write_stat(self.part, bf.path, fid, old_base.instant_time, num_writes=merged.num_rows,
                                  num_inserts=len(ins), num_update_writes=len(rep_i), num_deletes=len(drop_j),
                                  size=size, prevBaseFile=old_base.name)
