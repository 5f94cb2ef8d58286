"""A data file deleted between a folder's listing and its ``stat`` (another writer's rollback or clean, seen in the
two-OCC-pipelines test) is left out of the listing, as if listed after the delete; a dangling symlink named like a
data file, which still exists as a name, is still refused with one line. The delete is made to happen inside that
window by wrapping ``os.walk`` (the listing itself is the real one)."""

from __future__ import annotations

import os

import pytest

from lakeio.errors import UserError
from lakeio.ondisk import reader

BASE = "fg{}-0_0-1-0_20250101000000000.parquet"


def _table(tmp_path):
    part = tmp_path / "t" / "p1"
    part.mkdir(parents=True)
    (tmp_path / "t" / ".hoodie").mkdir()
    for i in range(3):
        (part / BASE.format(i)).write_bytes(b"x")
    return tmp_path / "t", part


def _walk_then(monkeypatch, act):
    real = os.walk

    def walk(top, *a, **kw):
        for root, dirs, files in real(top, *a, **kw):
            if files:
                act(root)  # after the folder was listed, before its names are looked at
            yield root, dirs, files

    monkeypatch.setattr(reader.os, "walk", walk)


def test_a_file_deleted_after_the_listing_is_left_out(tmp_path, monkeypatch):
    base, part = _table(tmp_path)
    _walk_then(monkeypatch, lambda root: (part / BASE.format(1)).unlink(missing_ok=True))
    _, bases, _ = reader._list_data_files(base)
    assert sorted(b.file_id for b in bases) == ["fg0-0", "fg2-0"]


def test_a_dangling_symlink_named_like_a_data_file_is_still_refused(tmp_path, monkeypatch):
    base, part = _table(tmp_path)
    os.symlink("nowhere.parquet", part / BASE.format(7))
    with pytest.raises(UserError, match=r"fg7-0_0-1-0_20250101000000000\.parquet: "):
        reader._list_data_files(base)




def _fixture_copy(tmp_path):
    from fixtures_util import copy_table, fixtures_root

    root = fixtures_root()
    if root is None:
        pytest.skip("no fixtures (../shared/fixtures or $HOODIE_LAB_FIXTURES)")
    return copy_table(root / "hudi-tables" / "sample_table" / "cow" / "v8_simplekeygen_nonhivestyle.zip",
                      tmp_path / "t")


def test_a_timeline_file_gone_before_it_is_read_makes_the_reader_list_again(tmp_path, monkeypatch):
    """An instant file listed and deleted before it is read (another writer's rollback, seen in the two-OCC-pipelines
    and kill-recovery tests under load) makes :func:`reader.read_table` list the timeline again, as if listed after
    the delete: the table read equals a read made after the delete."""
    base = _fixture_copy(tmp_path)
    tdir = base / ".hoodie" / "timeline"
    victim = sorted(p for p in tdir.iterdir() if p.name.endswith(".commit.requested"))[-1]
    real, calls = reader._list_timeline, []

    def list_then_delete(*args):
        out = real(*args)
        calls.append(out[0])
        if victim.exists():
            victim.unlink()  # after the listing, before the read
        return out

    monkeypatch.setattr(reader, "_list_timeline", list_then_delete)
    got = reader.read_table(base)
    assert len(calls) == 2 and victim.name in calls[0] and victim.name not in calls[1]
    monkeypatch.setattr(reader, "_list_timeline", real)
    after = reader.read_table(base)
    assert got.timeline.state_signature() == after.timeline.state_signature()


def test_a_timeline_that_keeps_changing_is_one_line_naming_its_folder(tmp_path, monkeypatch):
    base = _fixture_copy(tmp_path)
    real = reader._list_timeline

    def always_stale(tdir, *args):
        names, mtimes, leftovers = real(tdir, *args)
        return names + ["20990101000000000.commit.requested"], mtimes, leftovers  # listed, never there

    monkeypatch.setattr(reader, "_list_timeline", always_stale)
    with pytest.raises(UserError, match=r"timeline: the timeline kept changing while it was read \(5 listings"):
        reader.read_table(base)
