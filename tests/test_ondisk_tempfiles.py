"""Temporary files of timeline writes: where the writer puts them, and what readers do with leftovers.

``write_timeline_file`` writes into the table's ``.hoodie/.temp`` (``HoodieTableMetaClient.
TEMPFOLDER_NAME``) and hard-links into the timeline folder. A writer killed mid-create leaves a
temporary file behind -- hoodie-lab's ``.<name>.<random>.tmp`` (in ``.hoodie/.temp`` now, in the
timeline folder before), Hudi's ``<name>.<UUID>`` (1.x ``HoodieStorage.createImmutableFileInPath``)
or ``<name>.tmp`` (0.x). Hudi's timeline listing ignores all of them (extension not valid); so do
``read``/``audit``, which list them as leftovers, exit 0 and modify nothing. Runtime: about 2 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from hoodie_lab.cli import main
from lakeio.ondisk import metadata as md
from lakeio.ondisk import read_table
from lakeio.ondisk.reader import leftover_temp_target
from lakeio.ondisk.skeleton import write_skeleton
from model import filenames as fn
from model.instant import Action
from model.timeline import Timeline

from fixtures_util import copy_table, fixture_zips, tree_digest

UUID = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"


def T(ms: int) -> str:
    return f"2025010100{ms // 60000:02d}{(ms // 1000) % 60:02d}{ms % 1000:03d}"


def _skeleton(path: Path, version: int) -> Path:
    tl = Timeline(version)
    tl.create(T(100), Action.DELTACOMMIT)
    tl.transition_to_inflight(T(100), Action.DELTACOMMIT)
    tl.complete(T(100), Action.DELTACOMMIT, T(150))
    tl.create(T(200), Action.DELTACOMMIT)
    tl.transition_to_inflight(T(200), Action.DELTACOMMIT)
    base = [fn.BaseFile("fg1-0", "0-1-1", T(100), partition="p")]
    return write_skeleton(path, tl, base)


def _timeline_dir(base: Path) -> Path:
    return base / ".hoodie" / "timeline" if (base / ".hoodie" / "timeline").is_dir() else base / ".hoodie"


def _temp_files(base: Path) -> list[Path]:
    """Every temporary-looking file of the table's .hoodie folder (not its data)."""
    return sorted(p for p in (base / ".hoodie").rglob("*")
                  if p.is_file() and (p.name.endswith(".tmp") or p.parent.name == ".temp"))


# The forms a killed writer leaves, given the instant file name it was creating and the table.
def _own_in_timeline(base: Path, name: str) -> Path:
    return _timeline_dir(base) / f".{name}.k3x9_q2z.tmp"


def _own_in_temp(base: Path, name: str) -> Path:
    return base / ".hoodie" / ".temp" / f".{name}.k3x9_q2z.tmp"


def _hudi_uuid(base: Path, name: str) -> Path:
    return _timeline_dir(base) / f"{name}.{UUID}"


def _hudi_0x(base: Path, name: str) -> Path:
    return _timeline_dir(base) / f"{name}.tmp"


LEFTOVERS = {"own-in-timeline": _own_in_timeline, "own-in-.temp": _own_in_temp,
             "hudi-uuid": _hudi_uuid, "hudi-0x-tmp": _hudi_0x}


# ------------------------------------------------------------------------------ recognising leftovers
@pytest.mark.parametrize("name,layout,target", [
    (".20250101000000000.commit.requested.ab_12xyz.tmp", 2, "20250101000000000.commit.requested"),
    (".20250101000000000_20250101000001000.deltacommit.k3x9q2zz.tmp", 2,
     "20250101000000000_20250101000001000.deltacommit"),
    (f"20250101000000000_20250101000001000.commit.{UUID}", 2, "20250101000000000_20250101000001000.commit"),
    (f"20250101000000000.inflight.{UUID.upper()}", 1, "20250101000000000.inflight"),
    ("20250101000000000.clean.requested.tmp", 1, "20250101000000000.clean.requested"),
    ("20250101000000000.commit.tmp", 1, "20250101000000000.commit"),
])
def test_leftover_temp_files_are_recognised(name, layout, target):
    assert leftover_temp_target(name, layout) == target


@pytest.mark.parametrize("name,layout", [
    ("20250101000000000.commit.requested", 2),  # an instant file itself
    ("20250101000000000_20250101000001000.commit", 2),
    ("20250101000000000.deltacommit.done", 2),  # claims an instant, is not one, and is no temp file
    ("hoodie.properties.tmp", 1),  # a temp file, but not of an instant file
    (".20250101000000000.commit.crc", 1),
    (f"20250101000000000.commit.{UUID[:-1]}", 2),  # not a UUID
    (f"2025010100.commit.{UUID}", 2),  # not an instant file name (10-digit time)
    (".tmp", 1), ("", 1),
])
def test_other_names_are_not_leftovers(name, layout):
    assert leftover_temp_target(name, layout) is None


# ------------------------------------------------------------------------------ the writer
def test_temp_file_goes_to_the_tables_temp_folder(tmp_path, monkeypatch):
    base = _skeleton(tmp_path / "t", 9)
    final = base / ".hoodie" / "timeline" / f"{T(300)}.deltacommit.requested"
    linked = []
    real_link = os.link

    def spy(src, dst, *a, **kw):
        linked.append((Path(src), Path(dst)))
        # the bytes are complete before the final name exists
        assert Path(src).read_bytes() == b"plan" and not Path(dst).exists()
        return real_link(src, dst, *a, **kw)

    monkeypatch.setattr(os, "link", spy)
    assert md.write_timeline_file(final, b"plan") == final
    [(src, dst)] = linked
    assert dst == final and src.parent == base / ".hoodie" / ".temp"
    assert leftover_temp_target(src.name, 2) == final.name  # the reader knows the writer's temp name
    assert final.read_bytes() == b"plan" and _temp_files(base) == []


@pytest.mark.parametrize("rel,expected", [
    (".hoodie/timeline/x", ".hoodie/.temp"),
    (".hoodie/x", ".hoodie/.temp"),
    (".hoodie/metadata/.hoodie/timeline/x", ".hoodie/metadata/.hoodie/.temp"),  # the metadata table's own
    ("not-a-table/x", "not-a-table"),
])
def test_temp_dir_for(tmp_path, rel, expected):
    assert md.temp_dir_for(tmp_path / rel) == tmp_path / expected


@pytest.mark.parametrize("version", [6, 9])
def test_writing_a_table_leaves_no_temp_file(tmp_path, version):
    base = _skeleton(tmp_path / "t", version)
    assert len(list(_timeline_dir(base).glob("2025*"))) == 5
    assert _temp_files(base) == [] and (base / ".hoodie" / ".temp").is_dir()


def test_refuses_to_overwrite_and_leaves_no_temp_file(tmp_path):
    base = _skeleton(tmp_path / "t", 9)
    final = next((base / ".hoodie" / "timeline").glob("*.deltacommit.requested"))
    before = final.read_bytes()
    with pytest.raises(FileExistsError, match="immutable; refusing to overwrite"):
        md.write_timeline_file(final, b"other")
    assert final.read_bytes() == before and _temp_files(base) == []


def test_losing_the_link_race_refuses_and_leaves_no_temp_file(tmp_path, monkeypatch):
    """Another writer creates the name between the existence check and the link."""
    base = _skeleton(tmp_path / "t", 9)
    final = base / ".hoodie" / "timeline" / f"{T(300)}.deltacommit.requested"
    real_link = os.link

    def racing_link(src, dst, *a, **kw):
        Path(dst).write_bytes(b"theirs")
        return real_link(src, dst, *a, **kw)

    monkeypatch.setattr(os, "link", racing_link)
    with pytest.raises(FileExistsError, match="immutable; refusing to overwrite"):
        md.write_timeline_file(final, b"ours")
    assert final.read_bytes() == b"theirs" and _temp_files(base) == []


def test_a_failed_link_leaves_neither_the_file_nor_a_temp_file(tmp_path, monkeypatch):
    base = _skeleton(tmp_path / "t", 9)
    final = base / ".hoodie" / "timeline" / f"{T(300)}.deltacommit.requested"
    names_before = sorted(p.name for p in final.parent.iterdir())

    def broken_link(src, dst, *a, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "link", broken_link)
    with pytest.raises(OSError, match="No space left"):
        md.write_timeline_file(final, b"plan")
    assert not final.exists() and _temp_files(base) == []
    assert sorted(p.name for p in final.parent.iterdir()) == names_before


def test_a_writer_killed_before_cleanup_leaves_its_temp_file_outside_the_timeline(tmp_path, monkeypatch):
    """Link fails and the unlink never runs (the process died): the temp file is in .hoodie/.temp,
    the timeline folder is untouched, and the table still reads with the same timeline."""
    base = _skeleton(tmp_path / "t", 9)
    tdir = base / ".hoodie" / "timeline"
    timeline_before = read_table(base).timeline.instants()
    names_before = sorted(p.name for p in tdir.iterdir())
    final = tdir / f"{T(300)}.deltacommit.requested"

    def killed(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "link", killed)
    monkeypatch.setattr(os, "unlink", lambda *a, **kw: None)
    with pytest.raises(KeyboardInterrupt):
        md.write_timeline_file(final, b"plan")
    monkeypatch.undo()
    [left] = _temp_files(base)
    assert left.parent == base / ".hoodie" / ".temp" and sorted(p.name for p in tdir.iterdir()) == names_before
    t = read_table(base)
    assert t.timeline.instants() == timeline_before
    assert t.leftover_temp_files == [f".hoodie/.temp/{left.name}"]


# ------------------------------------------------------------------------------ readers and leftovers
@pytest.mark.parametrize("form", list(LEFTOVERS))
@pytest.mark.parametrize("version", [6, 9])
def test_leftover_does_not_change_what_is_read(tmp_path, capsys, version, form):
    base = _skeleton(tmp_path / "t", version)
    clean = read_table(base)
    target = sorted(p.name for p in _timeline_dir(base).iterdir() if p.name.startswith(T(200)))[-1]
    left = LEFTOVERS[form](base, target)
    left.write_bytes(b"Obj\x01 half-written")
    before = tree_digest(tmp_path)

    t = read_table(base)
    assert t.timeline.instants() == clean.timeline.instants()
    assert t.timeline_content == clean.timeline_content
    assert t.leftover_temp_files == [str(left.relative_to(base))]
    assert main(["audit", str(base), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["table"]["leftover_temp_files"] == [str(left.relative_to(base))]
    assert [r["requested"] for r in doc["timeline"]] == [T(100), T(200)]
    assert any("leftover temporary file" in n for n in doc["notes"])
    assert main(["audit", str(base)]) == 0
    out = capsys.readouterr().out
    assert "invariants hold" in out and "1 leftover temporary file(s)" in out and left.name in out
    assert tree_digest(tmp_path) == before  # read and audit modified nothing


def test_digit_named_non_instant_non_temp_file_is_still_bad_input(tmp_path, capsys):
    """Only temp files are let through: another name claiming an instant stays an exit-2 error."""
    base = _skeleton(tmp_path / "t", 9)
    (base / ".hoodie" / "timeline" / f"{T(200)}.deltacommit.inflight.bak").write_bytes(b"")
    assert main(["audit", str(base)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and f"{T(200)}.deltacommit.inflight.bak" in err


# ------------------------------------------------------------------------------ real Hudi tables
def _zip(stem: str) -> Path:
    found = [z for z in fixture_zips() if z.stem == stem]
    if not found:
        pytest.skip(f"fixture {stem}.zip not found")
    return found[0]


@pytest.mark.parametrize("stem", ["v6_trips_8i1u", "v8_trips_8i3u1d"])
def test_real_table_with_every_leftover_form_audits_through_the_cli(fixtures_dir, tmp_path, stem):
    base = copy_table(_zip(stem), tmp_path / stem)
    clean = read_table(base)
    tdir = _timeline_dir(base)
    # the latest instant file: a writer died creating it again / its successor
    target = sorted(p.name for p in tdir.iterdir() if fn.is_timeline_file(p.name))[-1]
    left = sorted(str(make(base, target).relative_to(base)) for make in LEFTOVERS.values())
    for rel in left:
        (base / rel).parent.mkdir(exist_ok=True)
        (base / rel).write_bytes(b"half-written")
    before = tree_digest(tmp_path)

    t = read_table(base)
    assert t.timeline.instants() == clean.timeline.instants() and t.leftover_temp_files == left
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "audit", str(base), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    doc = json.loads(r.stdout)
    assert doc["ok"] is True and doc["table"]["leftover_temp_files"] == left
    assert len(doc["timeline"]) == len(clean.timeline)
    assert tree_digest(tmp_path) == before  # the audit modified nothing
