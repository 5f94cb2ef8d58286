"""HFile (version 3) as Apache Hudi writes and reads it for the metadata table: a reader and a writer.

No Python library reads or writes HFiles, so the format is written here from what Hudi and hudi-rs read
(apache/hudi ``hudi-io`` ``org.apache.hudi.io.hfile.HFileReaderImpl``/``HFileWriterImpl``, ``HFileBlock``,
``HFileTrailer``, ``HoodieAvroHFileWriter``; apache/hudi-rs ``crates/core/src/hfile/{reader,block,trailer}.rs``),
byte-checked against the metadata tables of the real fixture tables (``.hoodie/metadata/files/*.hfile``).
Every integer is big-endian.

A file is a sequence of blocks, then a fixed 4096-byte trailer::

    data blocks ("DATABLK*")          the cells, sorted by key
    root data index ("IDXROOT2")      <- trailer.load_on_open_data_offset
    root meta index ("IDXROOT2")      (empty: Hudi writes no meta blocks for the MDT)
    file info ("FILEINF2")            <- trailer.file_info_offset
    trailer ("TRABLK\"$")             protobuf FileTrailerProto, zero padding, then u32 version (3 = major 3, minor 0)

Block header (33 bytes): 8-byte magic, i32 on-disk size without header (data + checksums), i32 uncompressed
size without header, i64 previous block offset of the same kind (-1 for the first), u8 checksum type
(2 = CRC32C), i32 bytes per checksum (16384), i32 on-disk data size with header. The data follows, then one
CRC32C (u32) per 16384-byte chunk of header + data. Every block (data, index, file info) is compressed with
the trailer's codec (Hadoop ``Compression.Algorithm`` ordinal: 1 = GZ, 2 = NONE); the trailer is not.

A cell: i32 key length, i32 value length, the key, the value, then a Hadoop vlong memstore timestamp (0).
A Hudi key is an HBase KeyValue key: u16 row length, the row (the record key, UTF-8), u8 family length (0),
no qualifier, i64 timestamp (Long.MAX_VALUE), u8 type (4 = Put). A root index entry: i64 block offset, i32
block on-disk size (with header), Hadoop vlong key length, the block's first key. File info: ``PBUF``, a
protobuf varint length, then ``InfoProto`` (repeated ``BytesBytesPair{first, second}``); Hudi puts the Avro
schema of the values under ``schema`` and the key range under ``minRecordKey``/``maxRecordKey``.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

import crc32c as _crc32c

from lakeio.errors import UserError

TRAILER_SIZE = 4096
HEADER_SIZE = 33
BYTES_PER_CHECKSUM = 16384
CHECKSUM_CRC32C = 2
CODEC_GZ = 1
CODEC_NONE = 2
MAGIC_DATA = b"DATABLK*"
MAGIC_ROOT_INDEX = b"IDXROOT2"
MAGIC_FILE_INFO = b"FILEINF2"
MAGIC_TRAILER = b'TRABLK"$'
COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
KEY_TIMESTAMP = (1 << 63) - 1
KEY_TYPE_PUT = 4
#: the zlib level of GZ blocks: any level reads the same (the block header records no level); Hudi's writer takes
#: zlib's default (6), level 1 takes about a third of its CPU for blocks about 8 % larger (a million-record
#: record index: 0.35 -> 0.13 CPU-s, 3.69 -> 3.97 MB; a 5,000-key commit block: 1.6 -> 0.6 ms)
GZ_LEVEL = 1
DEFAULT_BLOCK_SIZE = 64 * 1024  # hoodie.hfile.block.size (HoodieStorageConfig.HFILE_BLOCK_SIZE)

_HDR = struct.Struct(">8siiqBii")
_KEY_SUFFIX = b"\0" + struct.pack(">q", (1 << 63) - 1) + bytes([4])  # family length 0, timestamp, Put
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_CELL = struct.Struct(">ii")


class HFileError(UserError):
    """A file that is not a well-formed HFile (names the file and what is wrong)."""


# ---------------------------------------------------------------------------------------------------------
# protobuf (the two messages HFile uses: FileTrailerProto and InfoProto) and Hadoop vlongs

_TRAILER_FIELDS = {  # FileTrailerProto field number -> name (HFile.proto)
    1: "file_info_offset", 2: "load_on_open_data_offset", 3: "uncompressed_data_index_size",
    4: "total_uncompressed_bytes", 5: "data_index_count", 6: "meta_index_count", 7: "entry_count",
    8: "num_data_index_levels", 9: "first_data_block_offset", 10: "last_data_block_offset",
    11: "comparator_class_name", 12: "compression_codec", 13: "encryption_key",
}
_TRAILER_NUMBERS = {v: k for k, v in _TRAILER_FIELDS.items()}


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = n = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, i
        shift += 7


def _proto_fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) of a protobuf message with varint and length-delimited fields only."""
    out, i = [], 0
    while i < len(buf):
        tag, i = _read_varint(buf, i)
        num, wire = tag >> 3, tag & 7
        if wire == 0:
            v, i = _read_varint(buf, i)
        elif wire == 2:
            n, i = _read_varint(buf, i)
            if i + n > len(buf):
                raise ValueError("truncated field")
            v, i = buf[i:i + n], i + n
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.append((num, v))
    return out


def _proto_bytes(num: int, data: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(data)) + data


def _vlong(n: int) -> bytes:
    """Hadoop ``WritableUtils.writeVLong`` (non-negative values)."""
    if -112 <= n <= 127:
        return bytes([n & 0xFF])
    raw = n.to_bytes(8, "big").lstrip(b"\0")
    return bytes([(-(112 + len(raw))) & 0xFF]) + raw


def _read_vlong(buf: bytes, i: int) -> tuple[int, int]:
    first = struct.unpack_from(">b", buf, i)[0]
    if first >= -112:
        return first, i + 1
    neg = first < -120
    size = (-119 - first) if neg else (-111 - first)
    n = int.from_bytes(buf[i + 1:i + size], "big")
    return (~n if neg else n), i + size


# ---------------------------------------------------------------------------------------------------------
# keys

def encode_key(record_key: str) -> bytes:
    """The HBase KeyValue key Hudi writes for a record key (row = key, empty family/qualifier, Put)."""
    row = record_key.encode()
    if len(row) > 0x7FFF:
        raise ValueError(f"record key longer than 32767 bytes: {record_key[:40]}...")
    return struct.pack(">H", len(row)) + row + b"\0" + _I64.pack(KEY_TIMESTAMP) + bytes([KEY_TYPE_PUT])


def decode_key(key: bytes) -> str:
    (n,) = struct.unpack_from(">H", key, 0)
    if 2 + n > len(key):
        raise ValueError("key row length past the key")
    return key[2:2 + n].decode()


# ---------------------------------------------------------------------------------------------------------
# reader

@dataclass
class HFile:
    """A parsed HFile: its cells (record key -> value bytes, in file order), file info and trailer."""

    cells: list[tuple[str, bytes]]
    file_info: dict[str, bytes]
    trailer: dict[str, int | str | bytes]
    codec: int = CODEC_NONE
    blocks: int = 0
    extra: dict = field(default_factory=dict)

    def schema_json(self) -> str | None:
        s = self.file_info.get("schema")
        return s.decode() if s is not None else None


def _block(data: bytes, off: int, magic: bytes, what: str, codec: int = CODEC_NONE) -> tuple[bytes, int]:
    """The (uncompressed) payload of the block at ``off`` and the block's on-disk size with header."""
    if off < 0 or off + HEADER_SIZE > len(data):
        raise ValueError(f"{what} block at offset {off} is past the end of the file ({len(data)} bytes)")
    m, on_disk, uncompressed, _prev, ctype, _bpc, data_with_header = _HDR.unpack_from(data, off)
    if m != magic:
        raise ValueError(f"{what} block at offset {off} has magic {m!r}, expected {magic!r}")
    end = off + HEADER_SIZE + on_disk
    if on_disk < 0 or uncompressed < 0 or end > len(data) or not HEADER_SIZE <= data_with_header <= HEADER_SIZE + on_disk:
        raise ValueError(f"{what} block at offset {off} claims {on_disk} bytes, past the end of the file")
    payload = data[off + HEADER_SIZE:off + data_with_header]
    if ctype == CHECKSUM_CRC32C:
        sums = data[off + data_with_header:end]
        chunk = data[off:off + data_with_header]
        for k in range(0, len(chunk), BYTES_PER_CHECKSUM):
            want = sums[(k // BYTES_PER_CHECKSUM) * 4:(k // BYTES_PER_CHECKSUM) * 4 + 4]
            if len(want) == 4 and want != b"\0\0\0\0" and \
                    int.from_bytes(want, "big") != _crc32c.crc32c(chunk[k:k + BYTES_PER_CHECKSUM]):
                raise ValueError(f"{what} block at offset {off}: checksum mismatch")
    if codec == CODEC_GZ:
        try:
            payload = zlib.decompress(payload, 47)
        except zlib.error as e:
            raise ValueError(f"{what} block at offset {off}: bad gzip data ({e})") from None
    elif codec != CODEC_NONE:
        raise ValueError(f"compression codec {codec} is not supported (GZ=1 and NONE=2 are)")
    if len(payload) != uncompressed:
        raise ValueError(f"{what} block at offset {off}: {len(payload)} bytes, header says {uncompressed}")
    return payload, HEADER_SIZE + on_disk


def parse_trailer(data: bytes) -> dict:
    if len(data) < TRAILER_SIZE:
        raise ValueError(f"{len(data)} bytes, shorter than the {TRAILER_SIZE}-byte trailer")
    t = data[-TRAILER_SIZE:]
    version = struct.unpack(">I", t[-4:])[0]
    major, minor = version & 0xFFFFFF, version >> 24
    if major != 3:
        raise ValueError(f"HFile version {major}.{minor}; only version 3 is supported")
    if t[:8] != MAGIC_TRAILER:
        raise ValueError(f"trailer magic {t[:8]!r}, expected {MAGIC_TRAILER!r}")
    n, i = _read_varint(t, 8)
    if i + n > TRAILER_SIZE - 4:
        raise ValueError("trailer message longer than the trailer")
    out: dict = {}
    for num, v in _proto_fields(t[i:i + n]):
        name = _TRAILER_FIELDS.get(num)
        if name:
            out[name] = v.decode() if name == "comparator_class_name" else v
    for need in ("load_on_open_data_offset", "file_info_offset", "data_index_count", "entry_count"):
        if need not in out:
            raise ValueError(f"trailer lacks {need}")
    return out


def parse_hfile(data: bytes) -> HFile:
    """Parse a whole HFile held in memory; ``ValueError`` says what is malformed."""
    trailer = parse_trailer(data)
    codec = trailer.get("compression_codec", CODEC_NONE)
    levels = trailer.get("num_data_index_levels", 1)
    if levels != 1:
        raise ValueError(f"{levels}-level data index; only a single-level (root) index is supported")
    load = trailer["load_on_open_data_offset"]
    index, _ = _block(data, load, MAGIC_ROOT_INDEX, "root data index", codec)
    entries, i = [], 0
    for _ in range(trailer["data_index_count"]):
        if i + 12 > len(index):
            raise ValueError("root data index shorter than its entry count")
        off, size = struct.unpack_from(">qi", index, i)
        klen, i = _read_vlong(index, i + 12)
        i += klen
        entries.append((off, size))
    info_raw, _ = _block(data, trailer["file_info_offset"], MAGIC_FILE_INFO, "file info", codec)
    file_info: dict[str, bytes] = {}
    if info_raw[:4] == b"PBUF":
        n, j = _read_varint(info_raw, 4)
        for num, pair in _proto_fields(info_raw[j:j + n]):
            if num == 1:
                kv = dict(_proto_fields(pair))
                file_info[bytes(kv.get(1, b"")).decode()] = bytes(kv.get(2, b""))
    else:
        raise ValueError("file info block is not protobuf (PBUF)")
    mvcc = _I32.unpack(file_info["KEY_VALUE_VERSION"])[0] == 1 if "KEY_VALUE_VERSION" in file_info else False
    cells: list[tuple[str, bytes]] = []
    for off, size in entries:
        payload, on_disk = _block(data, off, MAGIC_DATA, "data", codec)
        if on_disk != size:
            raise ValueError(f"data block at offset {off}: index says {size} bytes, header {on_disk}")
        j = 0
        while j < len(payload):
            if j + 8 > len(payload):
                raise ValueError(f"data block at offset {off}: truncated cell")
            klen, vlen = _CELL.unpack_from(payload, j)
            j += 8
            if klen < 0 or vlen < 0 or j + klen + vlen > len(payload):
                raise ValueError(f"data block at offset {off}: cell past the block")
            key = decode_key(payload[j:j + klen])
            cells.append((key, payload[j + klen:j + klen + vlen]))
            j += klen + vlen
            if mvcc:
                _, j = _read_vlong(payload, j)
    if len(cells) != trailer["entry_count"]:
        raise ValueError(f"{len(cells)} cells, trailer says {trailer['entry_count']}")
    return HFile(cells, file_info, trailer, codec, len(entries))


def read_hfile(path) -> HFile:
    """Read an HFile from disk; a malformed or truncated one is a ``HFileError`` naming the file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise HFileError(f"{path}: cannot read HFile ({e.strerror})") from None
    try:
        return parse_hfile(data)
    except (ValueError, struct.error, UnicodeDecodeError, KeyError) as e:
        raise HFileError(f"{path}: not a readable HFile: {e}") from None


# ---------------------------------------------------------------------------------------------------------
# writer

def _encode_block(magic: bytes, payload: bytes, prev: int, codec: int = CODEC_NONE) -> bytes:
    raw = zlib.compress(payload, GZ_LEVEL, 31) if codec == CODEC_GZ else payload
    n_sums = (HEADER_SIZE + len(raw) + BYTES_PER_CHECKSUM - 1) // BYTES_PER_CHECKSUM
    header = _HDR.pack(magic, len(raw) + 4 * n_sums, len(payload), prev, CHECKSUM_CRC32C, BYTES_PER_CHECKSUM,
                       HEADER_SIZE + len(raw))
    body = header + raw
    sums = b"".join(struct.pack(">I", _crc32c.crc32c(body[k:k + BYTES_PER_CHECKSUM]))
                    for k in range(0, len(body), BYTES_PER_CHECKSUM))
    return body + sums


def write_hfile_bytes(cells, file_info: dict[str, bytes] | None = None, *, codec: int = CODEC_GZ,
                      block_size: int = DEFAULT_BLOCK_SIZE) -> bytes:
    """An HFile holding ``cells`` ((record key, value bytes), any order; keys unique) sorted by key.

    Data blocks are cut when they reach ``block_size`` uncompressed bytes, as Hudi's writer does; the file
    info gets ``hfile.LASTKEY``, ``KEY_VALUE_VERSION`` (1: a memstore timestamp follows each cell),
    ``MAX_MEMSTORE_TS_KEY`` and whatever the caller passes (``schema``, ``minRecordKey``...).
    """
    cells = list(cells)
    return write_hfile_columns([k for k, _ in cells], [v for _, v in cells], file_info, codec=codec,
                               block_size=block_size)


#: cells joined at once by :func:`write_hfile_columns` (a few MB of temporaries, not the whole file's)
CELL_CHUNK = 65_536


def write_hfile_columns(keys, values, file_info: dict[str, bytes] | None = None, *, value_index=None,
                        codec: int = CODEC_GZ, block_size: int = DEFAULT_BLOCK_SIZE, pace=None,
                        chunk: int = CELL_CHUNK) -> bytes:
    """:func:`write_hfile_bytes` for cells given as columns: ``keys`` (a sequence of str or a pyarrow string
    array; unique), ``values`` (bytes: one per key, or with ``value_index`` the distinct values and
    ``value_index[i]`` the one of key ``i``). The same bytes as a cell-by-cell writer; built with pyarrow
    and numpy (one sort, cells joined and blocks cut in bulk: a million-record index has no per-record
    Python step). The cells are joined ``chunk`` at a time (a block under way carries over to the next chunk),
    so the temporaries stay a few MB whatever the number of cells: the index build of a background job then
    streams through little memory (a million-record index: about 190 MB less at its peak). ``pace``: called
    after each data block (a background job's :meth:`lakeio.background.Pacer.pace`)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    karr = keys if isinstance(keys, (pa.Array, pa.ChunkedArray)) else pa.array(keys, pa.string())
    if isinstance(karr, pa.ChunkedArray):
        karr = karr.combine_chunks()
    if not pa.types.is_string(karr.type):
        karr = karr.cast(pa.string())
    if karr.null_count:
        raise ValueError("null HFile key")
    varr = pa.array(values, pa.binary()) if not isinstance(values, pa.Array) else values.cast(pa.binary())
    # the value of key i: varr[vidx[i]] (distinct values and an index), or varr[i]
    vidx = np.asarray(value_index, dtype=np.int64) if value_index is not None else None
    n = len(karr)
    if len(varr if vidx is None else vidx) != n:
        raise ValueError(f"{n} keys but {len(varr if vidx is None else vidx)} values")
    # code-point order is UTF-8 byte order, Arrow's order for strings; strictly increasing keys need no sort
    if n > 1 and not pc.all(pc.less(karr.slice(0, n - 1), karr.slice(1))).as_py():
        order = pc.sort_indices(karr)
        karr = karr.take(order)
        if vidx is None:
            varr = varr.take(order)
        else:
            vidx = vidx[order.to_numpy()]
        same = pc.equal(karr.slice(0, n - 1), karr.slice(1))
        if pc.any(same).as_py():
            first = pc.index(same, True).as_py()
            raise ValueError(f"duplicate HFile key {karr[first].as_py()!r}")
    rlen = pc.binary_length(karr).to_numpy(zero_copy_only=False).astype(np.int64)  # UTF-8 bytes of each key
    if n and rlen.max() > 0x7FFF:
        long = karr[int(np.argmax(rlen))].as_py()
        raise ValueError(f"record key longer than 32767 bytes: {long[:40]}...")
    lb = pa.large_binary()  # 64-bit offsets: no 2 GiB limit
    out = bytearray()
    index: list[tuple[int, int, bytes]] = []
    prev_data = -1
    total_uncompressed = 0
    # cells of a block not cut yet: their bytes, their ends within them and their keys' lengths
    carry, carry_ends, carry_rlen = b"", np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    step = max(1, chunk)
    for c0 in range(0, n, step):
        c1 = min(n, c0 + step)
        rows = karr.slice(c0, c1 - c0).cast(lb)
        vals = (varr.slice(c0, c1 - c0) if vidx is None else varr.take(pa.array(vidx[c0:c1]))).cast(lb)
        m = c1 - c0
        # a cell: i32 key length, i32 value length, u16 row length, row, family/timestamp/type, value, vlong 0
        head = np.empty(m, dtype=[("k", ">i4"), ("v", ">i4"), ("r", ">u2")])
        head["k"], head["r"] = rlen[c0:c1] + 12, rlen[c0:c1]
        head["v"] = pc.binary_length(vals).to_numpy(zero_copy_only=False)
        head_arr = pa.Array.from_buffers(lb, m, [None, pa.py_buffer(np.arange(0, 10 * m + 1, 10, dtype=np.int64)),
                                                 pa.py_buffer(head.tobytes())])
        joined = pc.binary_join_element_wise(head_arr, rows, pa.scalar(_KEY_SUFFIX, lb), vals, pa.scalar(b"\0", lb),
                                             pa.scalar(b"", lb))
        _, offs, payload = joined.buffers()
        offsets = np.frombuffer(offs, dtype=np.int64, count=m + 1, offset=8 * joined.offset)
        base = int(offsets[0])
        buf = carry + memoryview(payload)[base:int(offsets[-1])].tobytes()
        ends = np.concatenate([carry_ends, offsets[1:] - base + len(carry)])
        rls = np.concatenate([carry_rlen, rlen[c0:c1]])
        last = c1 == n
        i, off, cells = 0, 0, len(ends)
        while i < cells:  # a block ends with the first cell that takes it to block_size bytes
            j = int(np.searchsorted(ends, off + block_size, "left"))
            if j >= cells:
                if not last:
                    break  # the block goes on in the next chunk's cells
                j = cells - 1
            end = int(ends[j])
            block = buf[off:end]
            first_key = block[8:8 + int(rls[i]) + 12]
            at = len(out)
            enc = _encode_block(MAGIC_DATA, block, prev_data, codec)
            out.extend(enc)
            index.append((at, len(enc), first_key))
            prev_data = at
            total_uncompressed += HEADER_SIZE + len(block)
            i, off = j + 1, end
            if pace is not None:
                pace()
        carry, carry_ends, carry_rlen = buf[off:], ends[i:] - off, rls[i:]
    last_key = karr[n - 1].as_py() if n else None
    load_on_open = len(out)
    root = b"".join(_I64.pack(o) + _I32.pack(s) + _vlong(len(k)) + k for o, s, k in index)
    out += _encode_block(MAGIC_ROOT_INDEX, root, -1, codec)
    meta_index_offset = len(out)
    out += _encode_block(MAGIC_ROOT_INDEX, b"", load_on_open, codec)
    info = dict(file_info or {})
    if n:
        info["hfile.LASTKEY"] = encode_key(last_key)
    info["KEY_VALUE_VERSION"] = _I32.pack(1)
    info["MAX_MEMSTORE_TS_KEY"] = _I64.pack(0)
    pairs = b"".join(_proto_bytes(1, _proto_bytes(1, k.encode()) + _proto_bytes(2, v))
                     for k, v in sorted(info.items()))
    file_info_offset = len(out)
    out += _encode_block(MAGIC_FILE_INFO, b"PBUF" + _varint(len(pairs)) + pairs, meta_index_offset, codec)
    tr = {
        "file_info_offset": file_info_offset, "load_on_open_data_offset": load_on_open,
        "uncompressed_data_index_size": len(root), "total_uncompressed_bytes": total_uncompressed,
        "data_index_count": len(index), "meta_index_count": 0, "entry_count": n,
        "num_data_index_levels": 1, "first_data_block_offset": index[0][0] if index else -1,
        "last_data_block_offset": index[-1][0] if index else -1,
        "comparator_class_name": COMPARATOR, "compression_codec": codec,
    }
    msg = bytearray()
    for name, v in tr.items():
        num = _TRAILER_NUMBERS[name]
        if isinstance(v, str):
            msg += _proto_bytes(num, v.encode())
        else:
            msg += _varint(num << 3) + _varint(v & 0xFFFFFFFFFFFFFFFF)
    trailer = bytearray(TRAILER_SIZE)
    body = MAGIC_TRAILER + _varint(len(msg)) + bytes(msg)
    trailer[:len(body)] = body
    trailer[-4:] = struct.pack(">I", 3)
    out += trailer
    return bytes(out)
