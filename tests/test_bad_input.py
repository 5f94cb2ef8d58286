"""Bad input to ``hoodie-lab audit`` and ``hoodie-lab replay``: corrupted COPIES of real fixture
tables, bad traces, bad arguments.

Each case exits 2 with exactly one line on stderr naming the file (or argument) and the problem,
prints no traceback, and leaves the input unmodified (a digest of paths, modes, mtimes and bytes
before/after). FIFOs and devices must be refused without being opened: those cases run under an
alarm, so a reader that blocks fails the test instead of hanging it (the device is a symlink to
``/dev/null``, not ``/dev/zero``, which a regressed reader would read until memory runs out).
Runtime: about 5 s.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import stat
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


def digest(path: Path) -> str:
    """Paths, modes, mtimes and bytes of regular files under ``path`` (lstat: FIFOs, devices and
    symlink loops are hashed without being opened or followed)."""
    h = hashlib.sha256()
    path = Path(path)
    items = [path] + sorted(path.rglob("*")) if path.is_dir() else [path]
    for p in items:
        st = p.lstat()
        h.update(f"{p.relative_to(path) if p != path else '.'}|{st.st_mode}|{st.st_mtime_ns}".encode())
        if stat.S_ISREG(st.st_mode):
            h.update(p.read_bytes())
        elif stat.S_ISLNK(st.st_mode):
            h.update(os.readlink(p).encode())
    return h.hexdigest()


V6_COMMIT = ".hoodie/20250331030645735.deltacommit"  # v6_trips_8i1u: JSON commit metadata
V8_TL = ".hoodie/timeline"
V8_BASE = "city=sao_paulo/8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_2-1112-3192_20251220210129235.parquet"


def _edit_json(base: Path, rel: str, edit) -> None:
    p = base / rel
    md = json.loads(p.read_text())
    edit(md)
    p.write_text(json.dumps(md))


def _first_stat(md: dict) -> dict:
    return next(s for stats in md["partitionToWriteStats"].values() for s in stats)


def _replace_by(path: Path, make) -> None:
    """Replace ``path`` (a file or folder) by what ``make(path)`` creates, keeping nothing else."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    make(path)


def _symlink_loop(path: Path) -> None:
    os.symlink(path.name, path)  # a link to itself: ELOOP on every stat


def _deep_json(depth: int = 100_000) -> str:
    return "[" * depth + "]" * depth


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
    # issue #21 item 3: committed data that cannot be read (missing data is exit 1: test_audit.py)
    ("partition-folder-is-a-file", "v8_trips_8i3u1d",
     lambda b: _replace_by(b / "city=chennai", lambda p: p.write_bytes(b"x")),
     r"city=chennai: partition folder of committed files is not a regular file, not a folder|"
     r"city=chennai: partition folder of committed files is .*not a folder"),
    ("snapshot-file-is-a-folder", "v8_trips_8i3u1d", lambda b: _replace_by(b / V8_BASE, os.mkdir),
     r"8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_2-1112-3192_20251220210129235\.parquet: a directory, not a regular file"),
    # item 5: FIFOs and devices are refused without being opened
    ("properties-fifo", "v8_trips_8i3u1d", lambda b: _replace_by(_props(b), os.mkfifo),
     r"\.hoodie/hoodie\.properties: a FIFO, not a regular file; refusing to read it"),
    ("properties-device", "v6_trips_8i1u", lambda b: _replace_by(_props(b), lambda p: os.symlink("/dev/null", p)),
     r"\.hoodie/hoodie\.properties: a character device, not a regular file"),
    ("timeline-file-fifo", "v8_trips_8i3u1d",
     lambda b: _replace_by(b / V8_TL / "20251220210130911_20251220210131755.deltacommit", os.mkfifo),
     r"\.hoodie/timeline/20251220210130911_20251220210131755\.deltacommit: a FIFO, not a regular file"),
    ("timeline-file-device", "v6_trips_8i1u",
     lambda b: _replace_by(b / V6_COMMIT, lambda p: os.symlink("/dev/null", p)),
     r"\.hoodie/20250331030645735\.deltacommit: a character device, not a regular file"),
    ("data-file-fifo", "v8_trips_8i3u1d", lambda b: _replace_by(b / V8_BASE, os.mkfifo),
     r"20251220210129235\.parquet: a FIFO, not a regular file"),
    # item 6: instant times out of calendar range
    ("time-all-nines", "v8_trips_8i3u1d", lambda b: (b / V8_TL / "99999999999999999.deltacommit.requested").write_bytes(b""),
     r"99999999999999999\.deltacommit\.requested: requested time '99999999999999999' month 99 is out of range"),
    ("time-month-13", "v6_trips_8i1u", lambda b: (b / ".hoodie/20251320000000000.deltacommit.requested").write_bytes(b""),
     r"20251320000000000\.deltacommit\.requested: requested time '20251320000000000' month 13 is out of range"),
    ("time-second-99", "v8_trips_8i3u1d",
     lambda b: (b / V8_TL / "20251221000000000_20251221000099000.clean").write_bytes(b""),
     r"_20251221000099000\.clean: completion time '20251221000099000' second 99 is out of range"),
    ("time-feb-30", "v6_trips_8i1u", lambda b: (b / ".hoodie/20250230000000000.commit.requested").write_bytes(b""),
     r"20250230000000000\.commit\.requested: requested time '20250230000000000' day 30 does not exist in month 02"),
    ("data-file-time-feb-30", "v8_trips_8i3u1d",
     lambda b: (b / "city=chennai/6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_0-1-1_20250230000000000.parquet").write_bytes(b""),
     r"city=chennai/6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_0-1-1_20250230000000000\.parquet: instant time "
     r"'20250230000000000' day 30 does not exist"),
    # item 6: JSON nested 100,000 deep in commit metadata
    ("deep-json-commit-metadata", "v6_trips_8i1u", lambda b: (b / V6_COMMIT).write_text(_deep_json()),
     r"\.hoodie/20250331030645735\.deltacommit: JSON commit metadata nested too deeply"),
    ("deep-json-inside-metadata", "v6_trips_8i1u",
     lambda b: (b / V6_COMMIT).write_text('{"extraMetadata": {"x": ' + _deep_json() + '}}'),
     r"\.hoodie/20250331030645735\.deltacommit: JSON commit metadata nested too deeply"),
    # item 6: symlink loops
    ("symlink-loop-in-.hoodie", "v6_trips_8i1u", lambda b: _symlink_loop(b / ".hoodie/20250401000000000.commit"),
     r"\.hoodie/20250401000000000\.commit: unreadable \(Too many levels of symbolic links\)"),
    ("symlink-loop-in-timeline", "v8_trips_8i3u1d", lambda b: _symlink_loop(b / V8_TL / "loop"),
     r"\.hoodie/timeline/loop: unreadable \(Too many levels of symbolic links\)"),
    ("symlink-loop-is-.hoodie", "v8_trips_8i3u1d", lambda b: _replace_by(b / ".hoodie", _symlink_loop),
     r"v8_trips_8i3u1d/\.hoodie: unreadable \(Too many levels of symbolic links\)"),
    ("symlink-loop-is-timeline-folder", "v8_trips_8i3u1d", lambda b: _replace_by(b / V8_TL, _symlink_loop),
     r"\.hoodie/timeline: unreadable \(Too many levels of symbolic links\)"),
    ("symlink-loop-is-partition-folder", "v8_trips_8i3u1d", lambda b: _replace_by(b / "city=chennai", _symlink_loop),
     r"city=chennai: unreadable \(Too many levels of symbolic links\)"),
    ("symlink-loop-in-partition", "v8_trips_8i3u1d", lambda b: _symlink_loop(b / "city=chennai/loop"),
     r"city=chennai/loop: unreadable \(Too many levels of symbolic links\)"),
    ("symlink-loop-data-file", "v8_trips_8i3u1d",
     lambda b: _symlink_loop(b / "city=chennai/6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_0-1-1_20251221000000000.parquet"),
     r"_20251221000000000\.parquet: unreadable \(Too many levels of symbolic links\)"),
    # item 7: v6 commit metadata with wrong field types
    ("v6-write-stats-not-object", "v6_trips_8i1u", lambda b: _edit_json(b, V6_COMMIT, lambda m: m.update(partitionToWriteStats=[1])),
     r"20250331030645735\.deltacommit: field partitionToWriteStats: expected an object \(partition -> write stats\), found array"),
    ("v6-write-stats-not-array", "v6_trips_8i1u",
     lambda b: _edit_json(b, V6_COMMIT, lambda m: m["partitionToWriteStats"].update({"city=chennai": "x"})),
     r"20250331030645735\.deltacommit: field partitionToWriteStats\['city=chennai'\]: expected an array of write stats, found string"),
    ("v6-write-stat-path-number", "v6_trips_8i1u", lambda b: _edit_json(b, V6_COMMIT, lambda m: _first_stat(m).update(path=42)),
     r"20250331030645735\.deltacommit: field partitionToWriteStats\['city=san_francisco'\]\[0\]\.path: "
     r"expected a string or null, found number 42"),
    ("v6-file-size-string", "v6_trips_8i1u",
     lambda b: _edit_json(b, V6_COMMIT, lambda m: _first_stat(m).update(fileSizeInBytes="big")),
     r"\.fileSizeInBytes: expected an integer or null, found string 'big'"),
    ("v6-replace-ids-string", "v6_trips_8i1u",
     lambda b: _edit_json(b, V6_COMMIT, lambda m: m.update(partitionToReplaceFileIds={"city=chennai": "fg"})),
     r"20250331030645735\.deltacommit: field partitionToReplaceFileIds\['city=chennai'\]: expected an array of file ids"),
    ("v6-compacted-string", "v6_trips_8i1u", lambda b: _edit_json(b, V6_COMMIT, lambda m: m.update(compacted="yes")),
     r"20250331030645735\.deltacommit: field compacted: expected a boolean or null, found string 'yes'"),
    ("v6-operation-number", "v6_trips_8i1u", lambda b: _edit_json(b, V6_COMMIT, lambda m: m.update(operationType=7)),
     r"20250331030645735\.deltacommit: field operationType: expected a string or null, found number 7"),
]


class _Blocked(Exception):
    pass


@pytest.fixture
def alarm():
    """Fail (instead of hanging) when the code under test blocks, e.g. by opening a FIFO."""
    def ring(*_):
        raise _Blocked("blocked for 30 s: a FIFO or device was opened")
    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("case,stem,corrupt,expected", CASES, ids=[c[0] for c in CASES])
def test_bad_table_exits_2_with_one_line(fixtures_dir, tmp_path, capsys, alarm, case, stem, corrupt, expected):
    base = copy_table(_zip(stem), tmp_path / stem)
    corrupt(base)
    before = digest(tmp_path)
    code = main(["audit", str(base)])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("hoodie-lab audit: error: ")
    assert re.search(expected, lines[0]), lines[0]
    assert "Traceback" not in err and out == ""
    assert digest(tmp_path) == before  # the audit modified nothing


@pytest.mark.skipif(os.geteuid() == 0, reason="running as root: chmod 000 does not stop root from reading "
                                             "(the partition-folder-is-a-file and snapshot-file-is-a-folder cases "
                                             "cover unreadable data as root)")
@pytest.mark.parametrize("what,expected", [
    ("city=chennai", r"city=chennai: unreadable folder \(Permission denied\)"),
    (V8_BASE, r"20251220210129235\.parquet: unreadable \(Permission denied\)"),
])
def test_unreadable_partition_folder_or_file_exits_2(fixtures_dir, tmp_path, capsys, what, expected):
    base = copy_table(_zip("v8_trips_8i3u1d"), tmp_path / "t")
    target = base / what
    mode = target.stat().st_mode
    target.chmod(0)
    try:
        before = digest(tmp_path)
        code = main(["audit", str(base)])
        out, err = capsys.readouterr()
        assert code == 2 and len(err.strip().splitlines()) == 1 and re.search(expected, err), err
        assert digest(tmp_path) == before
    finally:
        target.chmod(stat.S_IMODE(mode))


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
    # item 7: more than 17 digits was cut silently
    (["audit", ".", "--as-of", "202501010000000001"], r"--as-of: instant time '202501010000000001' has 18 digits; expected 14 or 17"),
    # item 6: out of calendar range
    (["audit", ".", "--as-of", "99999999999999999"], r"--as-of: instant time '99999999999999999' month 99 is out of range"),
    (["audit", ".", "--as-of", "20251301000000000"], r"--as-of: instant time '20251301000000000' month 13 is out of range"),
    (["audit", ".", "--as-of", "20250101000099000"], r"--as-of: instant time '20250101000099000' second 99 is out of range"),
    (["audit", ".", "--as-of", "20250230000000"], r"--as-of: instant time '20250230000000' day 30 does not exist in month 02"),
])
def test_bad_arguments_exit_2(capsys, argv, expected):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.search(expected, err), err


@pytest.mark.parametrize("what,expected", [
    ("city=chennai", r"city=chennai: unreadable folder \(Permission denied\)"),
    (V8_BASE, r"20251220210129235\.parquet: unreadable \(Permission denied\)"),
])
def test_permission_denied_exits_2_as_any_user(fixtures_dir, tmp_path, capsys, monkeypatch, what, expected):
    """The same refusal when the OS says EACCES (simulated, so it also runs as root)."""
    import errno

    base = copy_table(_zip("v8_trips_8i3u1d"), tmp_path / "t")
    target = str(base / what)
    real_scandir, real_open = os.scandir, os.open

    def scandir(path=".", *a):
        if str(path) == target:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_scandir(path, *a)

    def open_(path, *a, **k):
        if str(path) == target:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "open", open_)
    before = digest(tmp_path)
    code = main(["audit", str(base)])
    out, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.search(expected, err), err
    assert digest(tmp_path) == before


# ------------------------------------------------------------------ hoodie-lab replay
def _good_trace(path: Path) -> Path:
    from lakeio.traces import write_trace
    from model.protocol import ProtocolConfig

    from engine import System

    s = System(ProtocolConfig(parallelism=1, records=2, buffer_size=1, faults=frozenset()))
    events = []
    for _ in range(8):
        evs = s.enabled_events()
        if not evs:
            break
        s.apply(evs[0])
        events.append(evs[0])
    return write_trace(path, s.config, events, seed=1, driver="explore")


def _cut_at_line(p: Path) -> None:  # item 7: drop the end marker (and one event) at a line boundary
    lines = p.read_text().splitlines(keepends=True)
    p.write_text("".join(lines[:-2]))


def _deep_line(p: Path) -> None:  # item 6: a trace line nested 100,000 deep
    lines = p.read_text().splitlines(keepends=True)
    p.write_text("".join(lines[:2] + ['{"step": 2, "x_deep": ' + _deep_json() + "}\n"] + lines[3:]))


def _deep_header(p: Path) -> None:
    lines = p.read_text().splitlines(keepends=True)
    p.write_text(_deep_json() + "\n" + "".join(lines[1:]))


def _set_line(no: int, text: str):
    def spoil(p: Path) -> None:
        lines = p.read_text().splitlines(keepends=True)
        lines[no - 1] = text + "\n"
        p.write_text("".join(lines))
    return spoil


# (case id, how to spoil a good trace file, regex of the one line after "<path>")
REPLAY_CASES = [
    ("fifo", lambda p: _replace_by(p, os.mkfifo), r": a FIFO, not a regular file; refusing to read it"),
    ("device", lambda p: _replace_by(p, lambda q: os.symlink("/dev/null", q)), r": a (character |block )?device, not a regular file"),
    ("symlink-loop", lambda p: _replace_by(p, _symlink_loop), r": unreadable \(Too many levels of symbolic links\)"),
    ("cut-at-line-boundary", _cut_at_line, r": no end marker \{\"end\": N\} after the last line .*may be truncated"),
    ("deep-json-event", _deep_line, r":3: JSON nested too deeply to be a trace line"),
    ("deep-json-header", _deep_header, r":1: JSON nested too deeply to be a trace line"),
    ("event-kind-not-a-string", _set_line(2, '{"step": 1, "kind": [1]}'), r":2: unknown event kind \[1\]"),
]


@pytest.mark.parametrize("case,spoil,expected", REPLAY_CASES, ids=[c[0] for c in REPLAY_CASES])
def test_bad_trace_exits_2_with_one_line(tmp_path, capsys, alarm, case, spoil, expected):
    p = _good_trace(tmp_path / "t.jsonl")
    spoil(p)
    before = digest(tmp_path)
    code = main(["replay", str(p)])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and out == "", err
    assert lines[0].startswith(f"hoodie-lab replay: error: {p}") and re.search(expected, lines[0]), lines[0]
    assert digest(tmp_path) == before


def test_fifo_trace_through_the_real_cli_does_not_hang(tmp_path):
    p = tmp_path / "fifo.jsonl"
    os.mkfifo(p)
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "replay", str(p)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "a FIFO" in r.stderr and len(r.stderr.strip().splitlines()) == 1
