"""Real Hudi fixture tables: discovery and extraction to temporary directories (cached per session).

The zips live under ``../shared/fixtures/hudi-tables`` (or ``$HOODIE_LAB_FIXTURES``; the
``fixtures_dir`` pytest fixture in ``conftest.py``) and are never copied into the repository.
Zips made on macOS also hold a ``__MACOSX`` folder with its own ``.hoodie`` entries; it is ignored.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from lakeio.fixtures import _zip_mtime, find_table_dir, fixtures_root  # noqa: F401

_CACHE: dict[Path, Path] = {}
_ROOT: Path | None = None


def fixture_zips() -> list[Path]:
    """Every fixture zip, sorted (empty when the fixtures are absent). For parametrisation."""
    root = fixtures_root()
    if root is None:
        return []
    return sorted((root / "hudi-tables").rglob("*.zip"))


def fixture_id(zip_path: Path) -> str:
    """A readable, unique test id: the zip's path under ``hudi-tables`` without ``.zip``."""
    root = fixtures_root()
    rel = zip_path.relative_to(root / "hudi-tables") if root else Path(zip_path.name)
    return str(rel.with_suffix("")).replace(os.sep, "/")


def _tmp_root() -> Path:
    global _ROOT
    if _ROOT is None:
        _ROOT = Path(tempfile.mkdtemp(prefix="hoodie-lab-fixtures-"))
        atexit.register(shutil.rmtree, _ROOT, True)
    return _ROOT


def extract_table(zip_path: Path) -> Path:
    """Extract ``zip_path`` once per session and return the table base path.

    Callers must not modify it (it is shared); use :func:`copy_table` for a private copy.
    """
    zip_path = Path(zip_path).resolve()
    if zip_path not in _CACHE:
        key = hashlib.sha1(str(zip_path).encode()).hexdigest()[:10]
        dest = _tmp_root() / f"{zip_path.stem}-{key}"
        with zipfile.ZipFile(zip_path) as zf:
            for info in zf.infolist():
                if info.filename.startswith("__MACOSX/"):
                    continue
                zf.extract(info, dest)
                if not info.is_dir():  # keep the archived modification times (tv6 completion times)
                    ts = _zip_mtime(info)
                    os.utime(dest / info.filename, (ts, ts))
        _CACHE[zip_path] = find_table_dir(dest)
    return _CACHE[zip_path]


def copy_table(zip_path: Path, dest: Path) -> Path:
    """A private, modifiable copy of a fixture table at ``dest`` (modification times kept)."""
    src = extract_table(zip_path)
    shutil.copytree(src, dest, symlinks=True)
    return dest


def tree_digest(path: Path) -> str:
    """Hash of every file's relative path, bytes and mtime under ``path`` (to prove nothing changed)."""
    h = hashlib.sha256()
    for p in sorted(Path(path).rglob("*")):
        rel = str(p.relative_to(path))
        st = p.lstat()
        h.update(rel.encode())
        h.update(str(st.st_mtime_ns).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()
