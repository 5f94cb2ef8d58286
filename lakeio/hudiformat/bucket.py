"""The bucket index: which file group of a partition a record key belongs to, and that file group's id.

Stands for ``BucketIdentifier`` (``hoodie.index.type=BUCKET``, ``hoodie.bucket.index.num.buckets``):

* ``getBucketId(hashKeys, numBuckets)`` = ``(hashKeys.hashCode() & Integer.MAX_VALUE) % numBuckets``, where
  ``hashKeys`` is the list of index-key values (``getHashKeys``: for a simple record key, the one-element list
  ``[recordKey]``) and ``hashCode`` is Java's ``List.hashCode`` (``31 * 1 + e.hashCode()`` per element) over
  ``String.hashCode`` (``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, 32-bit wrap-around);
* ``newBucketFileIdPrefix(bucketId)``: a new file-id prefix (a UUID) whose first 8 characters are replaced by
  ``bucketIdStr(bucketId)`` = ``%08d``; the file id is that prefix + ``-0``; ``bucketIdFromFileId`` reads the
  first 8 characters back. Here the UUID is a UUID-5 of (table, partition, bucket), so every writer task --
  and a retried one -- names the same bucket's file group the same.

Every record of a bucket goes to that bucket's file group; the pipeline routes a bucket to one writer task
(:func:`task_of`), so no two tasks ever write one file group.
"""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_NAMESPACE = uuid.UUID("b3f0a0d4-7c1e-4a55-9d0e-5f1c2a7e9b01")
INT_MAX = 0x7FFFFFFF


def _to_int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - 0x100000000 if x & 0x80000000 else x


def java_string_hash(s: str) -> int:
    """``String.hashCode`` (UTF-16 code units, int32 arithmetic)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return _to_int32(h)


def java_list_hash(items: list[str]) -> int:
    """``List.hashCode`` of strings (``AbstractList.hashCode``: ``h = 31*h + e.hashCode()`` from 1)."""
    h = 1
    for e in items:
        h = (31 * h + java_string_hash(e)) & 0xFFFFFFFF
    return _to_int32(h)


def bucket_id(record_key: str, num_buckets: int) -> int:
    """``BucketIdentifier.getBucketId`` of a simple record key (index key = record key)."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets: {num_buckets}; expected >= 1")
    return (java_list_hash([record_key]) & INT_MAX) % num_buckets


def bucket_ids(keys, num_buckets: int) -> np.ndarray:
    """:func:`bucket_id` of every key (a sequence of str or a pyarrow string array) as an int64 array; the same hash computed column-wise
    over the keys' code points (numpy uint32 arithmetic wraps as Java's int does). Keys outside the Basic
    Multilingual Plane (two UTF-16 units a character) or ending in NUL (numpy's fixed-width strings drop it)
    are hashed one by one with :func:`bucket_id`."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets: {num_buckets}; expected >= 1")
    if isinstance(keys, (pa.Array, pa.ChunkedArray)):
        fast = _ascii_bucket_ids(keys, num_buckets)
        if fast is not None:
            return fast
        true_lens = pc.utf8_length(keys).to_numpy(zero_copy_only=False)
        keys = keys.to_pylist()
    else:
        keys = list(keys)
        true_lens = None
    if not keys:
        return np.zeros(0, dtype=np.int64)
    arr = np.array(keys, dtype=str)
    width = arr.dtype.itemsize // 4
    codes = arr.view(np.uint32).reshape(len(keys), width) if width else np.zeros((len(keys), 0), np.uint32)
    lens = np.char.str_len(arr)
    h = np.zeros(len(keys), dtype=np.uint32)
    m31 = np.uint32(31)
    for j in range(width):
        h = np.where(j < lens, h * m31 + codes[:, j], h)
    h = h + m31  # List.hashCode: 31 * 1 + e.hashCode()
    out = ((h & np.uint32(INT_MAX)) % np.uint32(num_buckets)).astype(np.int64)
    if true_lens is None:
        true_lens = np.fromiter((len(k) for k in keys), dtype=np.int64, count=len(keys))
    odd = np.nonzero((codes > 0xFFFF).any(axis=1) | (lens != true_lens))[0]
    for i in odd:
        out[i] = bucket_id(keys[i], num_buckets)
    return out


def _ascii_bucket_ids(keys, num_buckets: int) -> np.ndarray | None:
    """:func:`bucket_ids` of a pyarrow string array whose bytes are all ASCII, straight from its buffers (an
    ASCII byte is one UTF-16 code unit of the same value, so ``String.hashCode`` runs over the bytes; a key's
    length is its offsets' difference, NUL characters included); None for any other array (the general path)."""
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    if keys.type != pa.string() or keys.null_count:
        return None
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32, count=keys.offset + n + 1)[keys.offset:]
    start, end = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(keys.buffers()[2], dtype=np.uint8, count=end) if end else np.zeros(1, np.uint8)
    if end > start and data[start:end].max() >= 0x80:
        return None
    lens = np.diff(offsets)
    h = np.zeros(n, dtype=np.uint32)
    m31 = np.uint32(31)
    last = max(len(data) - 1, 0)
    for j in range(int(lens.max())):
        c = data[np.minimum(offsets[:-1] + j, last)].astype(np.uint32)
        h = np.where(j < lens, h * m31 + c, h)
    h = h + m31  # List.hashCode: 31 * 1 + e.hashCode()
    return ((h & np.uint32(INT_MAX)) % np.uint32(num_buckets)).astype(np.int64)


def bucket_id_str(n: int) -> str:
    """``BucketIdentifier.bucketIdStr``."""
    return f"{n:08d}"


def bucket_file_id(table_name: str, partition: str, bucket: int) -> str:
    """The file id of ``bucket``'s file group in ``partition`` (``newBucketFileIdPrefix`` + ``-0``)."""
    u = str(uuid.uuid5(_NAMESPACE, f"{table_name}/{partition}/{bucket}"))
    return f"{bucket_id_str(bucket)}{u[8:]}-0"


def bucket_from_file_id(file_id: str) -> int:
    """``BucketIdentifier.bucketIdFromFileId``."""
    return int(file_id[:8])


def task_of(bucket: int, parallelism: int) -> int:
    """The writer task that writes ``bucket`` (Flink's ``BucketIndexPartitioner`` default: bucket mod
    parallelism, the partition path not hashed in)."""
    return bucket % parallelism
