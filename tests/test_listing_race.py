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
