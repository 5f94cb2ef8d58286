"""HFile v3 reader/writer (``lakeio/ondisk/hfile.py``): round trips, the fixtures' real MDT HFiles, bad input.

That hudi-rs reads what the writer writes is shown in ``test_mdt_ondisk.py`` (hudi-rs lists a table's files from
an MDT made of these HFiles)."""

from __future__ import annotations

import random
import struct
import zipfile

import pytest

from lakeio.fixtures import fixture_zips
from lakeio.ondisk import hfile as hf


def test_round_trip_sorted_and_info():
    cells = [("charlie", b"3"), ("alpha", b"1"), ("bravo", b"\x00" * 7)]
    data = hf.write_hfile_bytes(cells, {"schema": b"{}"})
    h = hf.parse_hfile(data)
    assert h.cells == sorted(cells)
    assert h.file_info["schema"] == b"{}"
    assert h.file_info["hfile.LASTKEY"] == hf.encode_key("charlie")
    assert h.trailer["entry_count"] == 3 and h.trailer["comparator_class_name"] == hf.COMPARATOR
    assert data[-4:] == b"\0\0\0\3" and data[:8] == hf.MAGIC_DATA


@pytest.mark.parametrize("codec", [hf.CODEC_GZ, hf.CODEC_NONE])
def test_round_trip_many_blocks(codec):
    rng = random.Random(7)
    cells = {f"key-{rng.getrandbits(40):012x}": rng.randbytes(rng.randint(0, 300)) for _ in range(3000)}
    data = hf.write_hfile_bytes(list(cells.items()), codec=codec, block_size=4096)
    h = hf.parse_hfile(data)
    assert h.blocks > 10 and h.codec == codec
    assert dict(h.cells) == cells
    assert [k for k, _ in h.cells] == sorted(cells)


def test_gz_blocks_are_level_1_deflate_and_any_level_reads():
    """The writer compresses GZ blocks at ``GZ_LEVEL`` 1 (about a third of the CPU of zlib's default 6, the one
    Hudi's writer takes, for blocks about 8 % larger); the reader takes any level: a block compressed at 6 reads
    the same."""
    import zlib

    assert hf.GZ_LEVEL == 1
    payload = b"".join(f"record-{i:06d}".encode() * 3 for i in range(2000))
    enc = hf._encode_block(hf.MAGIC_DATA, payload, -1, hf.CODEC_GZ)
    assert enc[hf.HEADER_SIZE:].startswith(zlib.compress(payload, 1, 31))
    assert not enc[hf.HEADER_SIZE:].startswith(zlib.compress(payload, 6, 31))
    cells = [(f"k{i:05d}", f"value-{i % 97}".encode() * 4) for i in range(5000)]
    default = hf.write_hfile_bytes(cells)
    try:
        hf.GZ_LEVEL = 6
        hudi_level = hf.write_hfile_bytes(cells)
    finally:
        hf.GZ_LEVEL = 1
    assert hudi_level != default
    assert hf.parse_hfile(hudi_level).cells == hf.parse_hfile(default).cells == cells


def test_empty_file():
    h = hf.parse_hfile(hf.write_hfile_bytes([]))
    assert h.cells == [] and h.blocks == 0


def test_duplicate_key_refused():
    with pytest.raises(ValueError, match="duplicate"):
        hf.write_hfile_bytes([("a", b"1"), ("a", b"2")])


def test_checksums_are_crc32c_and_checked():
    data = bytearray(hf.write_hfile_bytes([("a", b"x" * 100)], codec=hf.CODEC_NONE))
    # flip one byte of the first data block's payload: its CRC32C no longer matches
    data[hf.HEADER_SIZE + 20] ^= 0xFF
    with pytest.raises(ValueError, match="checksum"):
        hf.parse_hfile(bytes(data))


@pytest.mark.parametrize("cut", [1, 100, 4096, 4200])
def test_truncated_is_one_line_error(tmp_path, cut):
    data = hf.write_hfile_bytes([(f"k{i}", b"v" * 50) for i in range(200)])
    p = tmp_path / "x.hfile"
    p.write_bytes(data[:-cut])
    with pytest.raises(hf.HFileError) as e:
        hf.read_hfile(p)
    msg = str(e.value)
    assert str(p) in msg and "\n" not in msg and e.value.exit_code == 2


def test_garbage_and_wrong_version(tmp_path):
    p = tmp_path / "g.hfile"
    p.write_bytes(b"\0" * 5000)
    with pytest.raises(hf.HFileError, match="version"):
        hf.read_hfile(p)
    data = bytearray(hf.write_hfile_bytes([("a", b"1")]))
    data[-4:] = struct.pack(">I", 2)
    p.write_bytes(bytes(data))
    with pytest.raises(hf.HFileError, match="version 2"):
        hf.read_hfile(p)


def _fixture_hfiles():
    for z in fixture_zips():
        with zipfile.ZipFile(z) as zf:
            for n in zf.namelist():
                if n.endswith(".hfile") and "__MACOSX" not in n:
                    yield z, n, zf.read(n)


@pytest.mark.skipif(not fixture_zips(), reason="fixtures absent")
def test_reads_every_fixture_hfile_and_rewrites_it():
    """Every HFile Hudi wrote in the fixtures' metadata tables parses (cells = trailer's entry count, keys
    sorted, the Avro schema in the file info); writing its cells and file info again gives a file that
    parses to the same cells."""
    seen = 0
    for z, name, data in _fixture_hfiles():
        h = hf.parse_hfile(data)
        assert len(h.cells) == h.trailer["entry_count"], (z, name)
        assert [k for k, _ in h.cells] == sorted(k for k, _ in h.cells)
        assert b"HoodieMetadataRecord" in h.file_info["schema"]
        again = hf.parse_hfile(hf.write_hfile_bytes(h.cells, {"schema": h.file_info["schema"]}))
        assert again.cells == h.cells
        seen += 1
    assert seen >= 10


# ---------------------------------------------------------------------------------------------------------
# the columnar writer against a cell-by-cell reference writer (the format as the module docstring states it)

def _reference_hfile(cells, file_info, codec, block_size):
    """A plain cell-by-cell HFile writer: the bytes ``write_hfile_bytes`` must produce."""
    cells = sorted(cells, key=lambda kv: kv[0])
    out, index, block, first, prev, total = bytearray(), [], bytearray(), None, -1, 0

    def flush():
        nonlocal block, first, prev, total
        enc = hf._encode_block(hf.MAGIC_DATA, bytes(block), prev, codec)
        index.append((len(out), len(enc), first))
        prev = len(out)
        out.extend(enc)
        total += hf.HEADER_SIZE + len(block)
        block, first = bytearray(), None

    for k, v in cells:
        key = hf.encode_key(k)
        first = key if first is None else first
        block += struct.pack(">ii", len(key), len(v)) + key + v + b"\0"
        if len(block) >= block_size:
            flush()
    if block:
        flush()
    load = len(out)
    root = b"".join(struct.pack(">qi", o, s) + hf._vlong(len(k)) + k for o, s, k in index)
    out += hf._encode_block(hf.MAGIC_ROOT_INDEX, root, -1, codec)
    meta = len(out)
    out += hf._encode_block(hf.MAGIC_ROOT_INDEX, b"", load, codec)
    info = dict(file_info)
    if cells:
        info["hfile.LASTKEY"] = hf.encode_key(cells[-1][0])
    info["KEY_VALUE_VERSION"], info["MAX_MEMSTORE_TS_KEY"] = struct.pack(">i", 1), struct.pack(">q", 0)
    pairs = b"".join(hf._proto_bytes(1, hf._proto_bytes(1, k.encode()) + hf._proto_bytes(2, v))
                     for k, v in sorted(info.items()))
    fio = len(out)
    out += hf._encode_block(hf.MAGIC_FILE_INFO, b"PBUF" + hf._varint(len(pairs)) + pairs, meta, codec)
    tr = [("file_info_offset", fio), ("load_on_open_data_offset", load), ("uncompressed_data_index_size", len(root)),
          ("total_uncompressed_bytes", total), ("data_index_count", len(index)), ("meta_index_count", 0),
          ("entry_count", len(cells)), ("num_data_index_levels", 1),
          ("first_data_block_offset", index[0][0] if index else -1),
          ("last_data_block_offset", index[-1][0] if index else -1),
          ("comparator_class_name", hf.COMPARATOR), ("compression_codec", codec)]
    msg = b"".join(hf._proto_bytes(hf._TRAILER_NUMBERS[n], v.encode()) if isinstance(v, str) else
                   hf._varint(hf._TRAILER_NUMBERS[n] << 3) + hf._varint(v & 0xFFFFFFFFFFFFFFFF) for n, v in tr)
    trailer = bytearray(hf.TRAILER_SIZE)
    body = hf.MAGIC_TRAILER + hf._varint(len(msg)) + msg
    trailer[:len(body)] = body
    trailer[-4:] = struct.pack(">I", 3)
    return bytes(out + trailer)


@pytest.mark.parametrize("seed", range(6))
def test_columnar_writer_equals_the_cell_by_cell_writer(seed):
    """The pyarrow/numpy writer (one sort, cells joined and blocks cut in bulk) writes the same bytes as a
    cell-by-cell writer: any order in, non-ASCII keys, empty values, blocks cut at the first cell reaching the
    block size, both codecs; and with the values given as distinct values + an index per key; the cells joined
    a few at a time (blocks then span the chunks) or all at once."""
    rng = random.Random(seed)
    n = rng.choice([1, 2, 7, 300, 2500])
    cells = {("é€" if rng.random() < 0.2 else "") + f"k{rng.getrandbits(32):x}": rng.randbytes(rng.randint(0, 200))
             for _ in range(n)}
    items = list(cells.items())
    rng.shuffle(items)
    for codec in (hf.CODEC_GZ, hf.CODEC_NONE):
        bs = rng.choice([64, 1000, hf.DEFAULT_BLOCK_SIZE])
        want = _reference_hfile(items, {"schema": b"s"}, codec, bs)
        assert hf.write_hfile_bytes(items, {"schema": b"s"}, codec=codec, block_size=bs) == want
        distinct = sorted(set(cells.values()))
        at = {v: i for i, v in enumerate(distinct)}
        for chunk in (1, 7, 64, hf.CELL_CHUNK):  # cells joined a chunk at a time: blocks span chunks
            got = hf.write_hfile_columns([k for k, _ in items], distinct, {"schema": b"s"},
                                         value_index=[at[v] for _, v in items], codec=codec, block_size=bs,
                                         chunk=chunk)
            assert got == want, (chunk, bs)
            assert hf.write_hfile_columns([k for k, _ in items], [v for _, v in items], {"schema": b"s"},
                                          codec=codec, block_size=bs, chunk=chunk) == want, (chunk, bs)
    # already sorted keys take the no-sort path: same bytes
    srt = sorted(items)
    assert hf.write_hfile_columns([k for k, _ in srt], [v for _, v in srt], {"schema": b"s"}) == \
        _reference_hfile(items, {"schema": b"s"}, hf.CODEC_GZ, hf.DEFAULT_BLOCK_SIZE)


def test_columnar_writer_refuses_duplicates_long_keys_and_mismatched_columns():
    with pytest.raises(ValueError, match="duplicate HFile key 'b'"):
        hf.write_hfile_columns(["c", "b", "a", "b"], [b"1", b"2", b"3", b"4"])
    with pytest.raises(ValueError, match="longer than 32767"):
        hf.write_hfile_columns(["a", "x" * 40000], [b"1", b"2"])
    with pytest.raises(ValueError, match="2 keys but 1 values"):
        hf.write_hfile_columns(["a", "b"], [b"1"])
