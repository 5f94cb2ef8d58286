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
