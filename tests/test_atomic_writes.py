"""Atomic, readable writes of the Hudi writer (issue #21, item 4).

* ``hoodie.properties`` appears whole or not at all: a crash while it is written leaves no empty file (which made
  every later open fail with "table version ?");
* a crash between a temporary file and its rename (``os.replace``) leaves the old file intact and the table opens;
* every file under ``.hoodie`` and every data file is created with the umask's mode (0644 under umask 022, 0640
  under 027), as Hudi's ``FileSystem.create`` does -- timeline files were 0600 (``mkstemp``);
* ``.hoodie/.temp`` keeps nothing of an instant once it is committed or rolled back (after a crash too);
  a still-pending instant's markers stay.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

from lakeio.hudiformat.table import HudiTableWriter
from lakeio.ondisk import properties as props_mod
from lakeio.ondisk import read_table

REPO = Path(__file__).resolve().parent.parent


def _rows(keys, ts, parts=None):
    n = len(keys)
    return pa.table({"key": [f"k{k}" for k in keys], "ts": pa.array(ts, pa.int64()),
                     "partition": parts or ["p0" if k % 2 else "p1" for k in keys],
                     "payload": [f"v{t}" for t in ts]})


def _writer(base: Path, table_type="mor", version=8) -> HudiTableWriter:
    return HudiTableWriter(base, table_type, version, record_key="key", ordering_field="ts",
                           partition_field="partition", table_name="t")


def _commit(w: HudiTableWriter, t: str, c: str, rows: pa.Table) -> None:
    w.start(t)
    w.write_batch(t, rows, "upsert")
    w.commit(t, c)


# ------------------------------------------------------------------------------------------ hoodie.properties
def test_a_crash_while_hoodie_properties_is_written_leaves_no_empty_file(tmp_path, monkeypatch):
    base = tmp_path / "t"

    def crash(*a, **kw):
        raise KeyboardInterrupt("killed while writing hoodie.properties")

    monkeypatch.setattr(props_mod, "format_properties", crash)  # the bytes are produced after the file opens
    with pytest.raises(KeyboardInterrupt):
        _writer(base)
    assert not (base / ".hoodie" / "hoodie.properties").exists()
    monkeypatch.undo()
    w = _writer(base)  # the next start creates the table; no "table version ?"
    _commit(w, "20250101000000100", "20250101000000150", _rows([1, 2], [1, 2]))
    assert read_table(base).version == 8


def test_a_crash_before_the_link_leaves_no_hoodie_properties(tmp_path, monkeypatch):
    base = tmp_path / "t"

    def crash(src, dst, *a, **kw):
        raise OSError("killed between the temporary file and its link")

    monkeypatch.setattr(os, "link", crash)
    with pytest.raises(OSError):
        _writer(base)
    monkeypatch.undo()
    assert not (base / ".hoodie" / "hoodie.properties").exists()
    _writer(base)
    assert props_mod.read_properties(base / ".hoodie" / "hoodie.properties")["hoodie.table.version"] == "8"


# --------------------------------------------------------------------------------- temp file, then rename
@pytest.mark.parametrize("table_type", ["mor", "cow"])
def test_a_crash_before_the_rename_leaves_the_old_file_intact(tmp_path, monkeypatch, table_type):
    from hudi import HudiTable

    base = tmp_path / "t"
    w = _writer(base, table_type)
    _commit(w, "20250101000000100", "20250101000000150", _rows([1, 2, 3], [1, 2, 3]))
    before = {p: p.read_bytes() for p in base.rglob("*") if p.is_file() and ".hoodie" not in p.parts}
    assert before

    def crash(src, dst, *a, **kw):
        raise OSError("killed between the temporary file and its rename")

    w.start("20250101000000200")
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        w.write_batch("20250101000000200", _rows([1, 2, 3], [4, 5, 6]), "upsert")  # updates: logs or new bases
    monkeypatch.undo()
    for p, data in before.items():
        assert p.read_bytes() == data, p
    w2 = _writer(base, table_type)  # the table opens; the committed rows read back unchanged
    assert [i.requested_time for i in w2.timeline.completed()] == ["20250101000000100"]
    got = sorted(r for b in HudiTable(str(base)).read() for r in zip(b.column("key").to_pylist(),
                                                                      b.column("ts").to_pylist()))
    assert got == [("k1", 1), ("k2", 2), ("k3", 3)]


def test_a_crash_before_the_rename_keeps_the_run_files(tmp_path, monkeypatch):
    from pipeline.run_dir import atomic_write_json

    p = tmp_path / "run.json"
    atomic_write_json(p, {"a": 1})
    monkeypatch.setattr(os, "replace", lambda *a, **kw: (_ for _ in ()).throw(OSError("killed")))
    with pytest.raises(OSError):
        atomic_write_json(p, {"a": 2})
    monkeypatch.undo()
    assert p.read_text().strip().replace(" ", "").replace("\n", "") == '{"a":1}'


# -------------------------------------------------------------------------------------------------- modes
def _build_tables(root: Path) -> list[Path]:
    from lakeio.ondisk.skeleton import write_skeleton
    from model import filenames as fn
    from model.instant import Action
    from model.timeline import Timeline

    bases = []
    for table_type in ("mor", "cow"):
        for version in (8, 6):
            base = root / f"{table_type}{version}"
            w = _writer(base, table_type, version)
            _commit(w, "20250101000000100", "20250101000000150", _rows([1, 2, 3], [1, 2, 3]))
            _commit(w, "20250101000000200", "20250101000000250", _rows([1, 4], [4, 5]))
            w.start("20250101000000300")
            w.write_batch("20250101000000300", _rows([2], [6]), "upsert")
            w.rollback("20250101000000300", "20250101000000400", "20250101000000450")
            w.start("20250101000000500")
            w.write_batch("20250101000000500", _rows([3], [7]), "upsert")  # pending: markers stay
            bases.append(base)
    tl = Timeline(8)
    tl.create("20250101000000100", Action.DELTACOMMIT)
    tl.transition_to_inflight("20250101000000100", Action.DELTACOMMIT)
    tl.complete("20250101000000100", Action.DELTACOMMIT, "20250101000000150")
    bases.append(write_skeleton(root / "skeleton", tl,
                                [fn.BaseFile("fg1-0", "0-1-1", "20250101000000100", partition="p")]))
    return bases


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o027, 0o640)], ids=["umask022", "umask027"])
def test_every_file_is_created_with_the_umask_mode(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        bases = _build_tables(tmp_path)
    finally:
        os.umask(old)
    files = [p for b in bases for p in b.rglob("*") if p.is_file()]
    timeline = [p for p in files if ".hoodie" in p.parts and ".temp" not in p.parts]
    data = [p for p in files if ".hoodie" not in p.parts]
    assert len(timeline) > 20 and len(data) > 10
    wrong = {str(p.relative_to(tmp_path)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files
             if stat.S_IMODE(p.stat().st_mode) != mode}
    assert not wrong, wrong


# ----------------------------------------------------------------------------------------- .hoodie/.temp
def _temp_entries(base: Path) -> list[str]:
    temp = base / ".hoodie" / ".temp"
    return sorted(str(p.relative_to(temp)) for p in temp.rglob("*")) if temp.is_dir() else []


def test_temp_files_go_once_their_instant_is_committed_or_rolled_back(tmp_path):
    base = tmp_path / "t"
    w = _writer(base)
    _commit(w, "20250101000000100", "20250101000000150", _rows([1, 2, 3], [1, 2, 3]))
    assert _temp_entries(base) == []
    w.start("20250101000000200")
    w.write_batch("20250101000000200", _rows([1], [4]), "upsert")
    w.rollback("20250101000000200", "20250101000000300", "20250101000000350")
    assert _temp_entries(base) == []
    w.start("20250101000000400")
    w.write_batch("20250101000000400", _rows([5], [5]), "upsert")
    pending = _temp_entries(base)
    assert pending and all(e.startswith("20250101000000400") for e in pending)  # a pending write keeps its markers


_KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys, shutil
    from pathlib import Path
    import pyarrow as pa
    from lakeio.hudiformat.table import HudiTableWriter

    base, where = Path(sys.argv[1]), sys.argv[2]
    w = HudiTableWriter(base, "mor", 8, record_key="key", ordering_field="ts", partition_field="partition",
                        table_name="t")
    rows = pa.table({"key": ["k1", "k2"], "ts": pa.array([1, 2], pa.int64()), "partition": ["p0", "p1"],
                     "payload": ["a", "b"]})
    t = sys.argv[3]
    w.start(t)
    w.write_batch(t, rows, "upsert")
    die = lambda *a, **kw: os.kill(os.getpid(), signal.SIGKILL)
    if where == "link":      # the completed file's temporary is written, its link never happens
        os.link = die
    else:                    # the completed file is linked, the clean-up of .temp never happens
        shutil.rmtree = die
    w.commit(t, sys.argv[4])
""")


def _killed_writer(base: Path, where: str, t: str, c: str) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(base), where, t, c], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def test_temp_files_of_a_killed_writer_go_after_the_resume(tmp_path):
    base = tmp_path / "t"
    # killed after the commit: the instant is completed, its markers were never cleaned
    _killed_writer(base, "rmtree", "20250101000000100", "20250101000000150")
    assert any(e.startswith("20250101000000100") for e in _temp_entries(base))
    # killed mid-commit: a temporary completed file in .temp, the instant still pending
    _killed_writer(base, "link", "20250101000000200", "20250101000000250")
    left = _temp_entries(base)
    assert any(e.startswith(".20250101000000200_20250101000000250.deltacommit.") for e in left), left
    # the resume: opening the writer cleans the completed instant's leftovers; the pending one is rolled back
    w = _writer(base)
    assert [i.requested_time for i in w.timeline.completed()] == ["20250101000000100"]
    assert all(e.startswith(("20250101000000200", ".20250101000000200")) for e in _temp_entries(base))
    w.rollback("20250101000000200", "20250101000000300", "20250101000000350")
    assert _temp_entries(base) == []
    # a new pending write keeps its own
    w.start("20250101000000400")
    w.write_batch("20250101000000400", _rows([7], [7]), "upsert")
    assert _temp_entries(base) and all(e.startswith("20250101000000400") for e in _temp_entries(base))
