"""Bad input to ``hoodie-lab audit``: corrupted COPIES of real fixture tables.

Each case exits 2 with exactly one line on stderr naming the file and the problem, prints no
traceback, and leaves the table unmodified (tree digest before/after). Runtime: about 2 s.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hoodie_lab.cli import main

from fixtures_util import copy_table, fixture_zips, tree_digest


def _zip(stem: str) -> Path:
    found = [z for z in fixture_zips() if z.stem == stem]
    if not found:
        pytest.skip(f"fixture {stem}.zip not found")
    return found[0]


def _props(base: Path) -> Path:
    return base / ".hoodie" / "hoodie.properties"


def _edit_props(base: Path, drop: str | None = None, set_: tuple[str, str] | None = None) -> None:
    lines = _props(base).read_text(encoding="latin-1").splitlines()
    out = []
    for line in lines:
        if drop and line.startswith(drop + "="):
            continue
        if set_ and line.startswith(set_[0] + "="):
            line = f"{set_[0]}={set_[1]}"
        out.append(line)
    _props(base).write_text("\n".join(out) + "\n", encoding="latin-1")


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _completed(base: Path, sub: str, suffix: str) -> Path:
    return sorted(p for p in (base / sub).iterdir() if p.name.endswith(suffix) and p.name[0].isdigit())[0]


# (case id, fixture, corruption, regex the one line must match: file, then problem)
CASES = [
    ("missing-.hoodie", "v8_trips_8i3u1d", lambda b: shutil.rmtree(b / ".hoodie"),
     r"v8_trips_8i3u1d: not a Hudi table \(no \.hoodie folder\)"),
    ("properties-missing", "v6_trips_8i1u", lambda b: _props(b).unlink(),
     r"\.hoodie/hoodie\.properties: missing"),
    ("properties-unreadable", "v6_trips_8i1u", lambda b: (_props(b).unlink(), _props(b).mkdir()),
     r"\.hoodie/hoodie\.properties: unreadable \(Is a directory\)"),
    ("properties-garbage", "v8_trips_8i3u1d", lambda b: _props(b).write_bytes(b"hoodie.table.name=\\u12\xff\x00\n"),
     r"\.hoodie/hoodie\.properties: malformed \\u escape"),
    ("properties-no-version", "v8_trips_8i3u1d", lambda b: _edit_props(b, drop="hoodie.table.version"),
     r"\.hoodie/hoodie\.properties: incomplete: hoodie\.table\.version is missing"),
    ("properties-no-type", "v6_simplekeygen_nonhivestyle", lambda b: _edit_props(b, drop="hoodie.table.type"),
     r"\.hoodie/hoodie\.properties: incomplete: hoodie\.table\.type is missing"),
    ("unknown-version", "v8_trips_8i3u1d", lambda b: _edit_props(b, set_=("hoodie.table.version", "7")),
     r"\.hoodie/hoodie\.properties: unknown table version 7; supported: 6, 8, 9"),
    ("bad-instant-name", "v8_trips_8i3u1d",
     lambda b: (b / ".hoodie/timeline/20251220210131999.deltacommit.done").write_bytes(b""),
     r"\.hoodie/timeline/20251220210131999\.deltacommit\.done: unknown state suffix 'done'"),
    ("bad-instant-time", "v6_trips_8i1u", lambda b: (b / ".hoodie/2025033103.deltacommit").write_bytes(b""),
     r"\.hoodie/2025033103\.deltacommit: requested time '2025033103' has 10 digits"),
    ("truncated-json", "v6_trips_8i1u", lambda b: _truncate(b / ".hoodie/20250331030645735.deltacommit"),
     r"\.hoodie/20250331030645735\.deltacommit: truncated or corrupt JSON commit metadata"),
    ("truncated-avro", "v8_trips_8i3u1d",
     lambda b: _truncate(b / ".hoodie/timeline/20251220210130911_20251220210131755.deltacommit"),
     r"\.hoodie/timeline/20251220210130911_20251220210131755\.deltacommit: truncated or corrupt Avro metadata"),
    ("truncated-avro-plan", "v8_trips_8i3u1d",
     lambda b: _truncate(b / ".hoodie/timeline/20251220210129235.compaction.requested"),
     r"\.hoodie/timeline/20251220210129235\.compaction\.requested: truncated or corrupt Avro metadata"),
]


@pytest.mark.parametrize("case,stem,corrupt,expected", CASES, ids=[c[0] for c in CASES])
def test_bad_table_exits_2_with_one_line(fixtures_dir, tmp_path, capsys, case, stem, corrupt, expected):
    base = copy_table(_zip(stem), tmp_path / stem)
    corrupt(base)
    before = tree_digest(tmp_path)
    code = main(["audit", str(base)])
    out, err = capsys.readouterr()
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hoodie-lab audit: error: ")
    assert re.search(expected, lines[0]), lines[0]
    assert "Traceback" not in err and out == ""
    assert tree_digest(tmp_path) == before  # the audit modified nothing


def test_bad_input_through_the_real_cli_has_no_traceback(fixtures_dir, tmp_path):
    base = copy_table(_zip("v8_trips_8i3u1d"), tmp_path / "t")
    _truncate(base / ".hoodie/timeline/20251220210130911_20251220210131755.deltacommit")
    before = tree_digest(tmp_path)
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "audit", str(base), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "20251220210130911_20251220210131755.deltacommit: truncated or corrupt Avro" in r.stderr
    assert r.stdout == ""
    assert tree_digest(tmp_path) == before


@pytest.mark.parametrize("argv,expected", [
    (["audit", "/nonexistent/table"], r"/nonexistent/table: no such directory"),
    (["audit", ".", "--as-of", "2025-01-01"], r"--as-of: instant time '2025-01-01' is not a string of digits"),
    (["audit", ".", "--as-of", "20250101"], r"--as-of: instant time '20250101' has 8 digits"),
])
def test_bad_arguments_exit_2(capsys, argv, expected):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.search(expected, err), err
