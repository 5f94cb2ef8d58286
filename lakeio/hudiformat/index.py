"""The writer's record index: which file group holds a key, from the keys of the latest base files.

Stands for ``HoodieSimpleIndex`` (``hoodie.index.type=SIMPLE``, non-global: a key is identified within its
partition): ``tagLocation`` joins the incoming keys with the record keys of the latest base file of every file
group of the partition (``HoodieIndexUtils.getLatestBaseFilesForPartition`` -- here the writer's
:mod:`.fsview` -- and ``fetchRecordKeysFromBaseFiles``). Keys found are updates of that file group, the others
inserts. Key columns are read once per base file and kept (a file the writer wrote itself is never read back);
the per-partition index is kept while the partition's latest base files are the same and the writer wrote no
base file into it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from model import filenames as fn

from .schema import RECORD_KEY

PartitionIndex = tuple[pa.Array, np.ndarray, list[str]]


class SimpleIndex:
    """Record keys of base files and the per-partition index built from them."""

    def __init__(self, base_path: Path):
        self.base_path = base_path
        self._keys: dict[str, pa.Array] = {}  # base file path -> its _hoodie_record_key column
        self._parts: dict[str, tuple[tuple, PartitionIndex]] = {}  # partition -> (latest base names, index)

    def keys_of(self, b: fn.BaseFile) -> pa.Array:
        """The record keys of a base file (``HoodieKeyLookupHandle``/``fetchRecordKeys``), read once."""
        path = str(self.base_path / b.path)
        keys = self._keys.get(path)
        if keys is None:
            keys = pq.read_table(path, columns=[RECORD_KEY]).column(0).combine_chunks()
            self._keys[path] = keys
        return keys

    def remember(self, b: fn.BaseFile, keys: pa.Array | pa.ChunkedArray) -> None:
        """The record keys of base file ``b``, read by someone else (the COW merge reads the whole file)."""
        path = str(self.base_path / b.path)
        if path not in self._keys:
            self._keys[path] = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys

    def lookup(self, b: fn.BaseFile, keys: pa.Array, rows: np.ndarray) -> pa.Array:
        """The row of each of ``keys[rows]`` in base file ``b`` (its record-key column), null where ``b`` does
        not hold the key: ``tagLocation`` against one file group (the bucket index's). Found by hashing the
        incoming keys, the smaller side (:func:`positions_in`)."""
        return positions_in(keys.take(pa.array(rows, pa.int64())), self.keys_of(b))

    def wrote_base(self, b: fn.BaseFile, keys: pa.Array | None) -> None:
        """A base file was written: remember its keys, drop the partition's index."""
        if keys is not None:
            self._keys[str(self.base_path / b.path)] = keys
        self._parts.pop(b.partition, None)

    def clear(self) -> None:
        """Files changed outside the writer's own writes (refresh, rollback, a re-commit): rebuild every index."""
        self._parts.clear()

    def partition_index(self, partition: str, latest: dict[str, fn.BaseFile]) -> PartitionIndex:
        """(keys, file-group codes, file ids) of the latest base file of every file group in the partition
        (``latest``: file id -> base file, in file-id order)."""
        names = tuple(b.name for b in latest.values())
        hit = self._parts.get(partition)
        if hit is not None and hit[0] == names:
            return hit[1]
        fids, arrays, codes = [], [], []
        for fid, b in latest.items():
            k = self.keys_of(b)
            codes.append(np.full(len(k), len(fids), dtype=np.int64))
            arrays.append(k)
            fids.append(fid)
        keys = pa.concat_arrays(arrays) if arrays else pa.array([], pa.string())
        idx = (keys, np.concatenate(codes) if codes else np.zeros(0, np.int64), fids)
        self._parts[partition] = (names, idx)
        return idx

    def tag_location(self, partition: str, latest: dict[str, fn.BaseFile], keys: pa.Array,
                     rows: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """``tagLocation`` of rows ``rows`` (positions into ``keys``): (found mask over ``rows``,
        file id -> the found rows' positions)."""
        idx_keys, idx_codes, idx_fids = self.partition_index(partition, latest)
        pos = pc.index_in(keys.take(pa.array(rows)), value_set=idx_keys)
        found = pos.is_valid().to_numpy(zero_copy_only=False)
        updates: dict[str, np.ndarray] = {}
        if found.any():
            fg_code = idx_codes[pos.filter(pos.is_valid()).to_numpy()]
            upd_rows = rows[found]
            for c in np.unique(fg_code):
                updates[idx_fids[c]] = upd_rows[fg_code == c]
        return found, updates


def positions_in(needles: pa.Array, haystack: pa.Array) -> pa.Array:
    """``pc.index_in(needles, value_set=haystack)`` -- the position of each needle's first occurrence in
    ``haystack``, null where absent -- with the hash table built over ``needles`` rather than ``haystack``: a
    batch's keys of one file group (thousands) against the file's keys (up to its every record). Exact for any
    arrays without nulls (duplicates on either side included): each haystack row finds the first needle of its
    value, a value's first haystack row is kept, and every needle takes its value's. Arrays with nulls take
    ``index_in`` itself."""
    needles = needles.combine_chunks() if isinstance(needles, pa.ChunkedArray) else needles
    haystack = haystack.combine_chunks() if isinstance(haystack, pa.ChunkedArray) else haystack
    if needles.null_count or haystack.null_count or not len(needles) or not len(haystack):
        return pc.index_in(needles, value_set=haystack)
    first = pc.index_in(needles, value_set=needles).to_numpy()  # each needle's first equal needle
    rev = pc.index_in(haystack, value_set=needles)  # each haystack row's needle (its first), null if none
    hit = rev.is_valid().to_numpy(zero_copy_only=False)
    rows = np.nonzero(hit)[0]
    firsts, at = np.unique(rev.filter(rev.is_valid()).to_numpy(), return_index=True)  # a value's first row
    pos = np.full(len(needles), -1, dtype=np.int64)
    pos[firsts] = rows[at]
    pos = pos[first]
    return pa.array(pos.astype(np.int32), mask=pos < 0)
