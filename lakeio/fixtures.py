"""Real Hudi fixture tables: where they are and how to extract one.

The zips live under ``../shared/fixtures/hudi-tables`` beside the repository,
or under ``$HOODIE_LAB_FIXTURES/hudi-tables``; they are never copied into the
repository. Extraction keeps each entry's modification time, because table
version 6 completion times are the completed timeline files' mtimes. Zips made
on macOS hold a ``__MACOSX`` folder with its own ``.hoodie`` entries; it is skipped.
"""

from __future__ import annotations

import os
import struct
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def fixtures_root() -> Path | None:
    """``$HOODIE_LAB_FIXTURES`` or ``../shared/fixtures`` beside the repository, if it holds ``hudi-tables``."""
    env = os.environ.get("HOODIE_LAB_FIXTURES")
    for c in ([Path(env)] if env else []) + [REPO.parent / "shared" / "fixtures"]:
        if (c / "hudi-tables").is_dir():
            return c
    return None


def fixture_zips() -> list[Path]:
    """Every fixture zip (sorted); empty when the fixtures are absent."""
    root = fixtures_root()
    return sorted((root / "hudi-tables").rglob("*.zip")) if root else []


def fixture_label(zip_path: Path) -> str:
    """``sample_table/cow/v8_empty``: the zip's path under ``hudi-tables`` without ``.zip``."""
    parts = Path(zip_path).with_suffix("").parts
    return "/".join(parts[parts.index("hudi-tables") + 1:]) if "hudi-tables" in parts else Path(zip_path).stem


def _zip_mtime(info: zipfile.ZipInfo) -> float:
    """A zip entry's modification time: the UTC extended-timestamp field (0x5455, what ``unzip``
    restores) when present, else the DOS time read as local time."""
    extra, i = info.extra, 0
    while i + 4 <= len(extra):
        hid, size = struct.unpack_from("<HH", extra, i)
        if hid == 0x5455 and size >= 5 and extra[i + 4] & 1:
            return float(struct.unpack_from("<i", extra, i + 5)[0])
        i += 4 + size
    return time.mktime(info.date_time + (0, 0, -1))


def find_table_dir(root: Path) -> Path:
    """The one folder under ``root`` holding ``.hoodie`` (outside ``__MACOSX``; the metadata
    table's own ``.hoodie/metadata/.hoodie`` is not a separate table)."""
    found = sorted(p.parent for p in Path(root).rglob(".hoodie")
                   if p.is_dir() and "__MACOSX" not in p.parts and ".hoodie" not in p.parent.parts)
    if len(found) != 1:
        raise ValueError(f"{root}: expected one table (.hoodie folder), found {len(found)}: {found}")
    return found[0]


def extract_fixture(zip_path: Path, dest: Path) -> Path:
    """Extract a fixture zip into ``dest/<zip stem>`` (``__MACOSX`` skipped, mtimes kept).

    Returns the table's base path.
    """
    dest = Path(dest) / Path(zip_path).stem
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            if info.filename.startswith("__MACOSX/"):
                continue
            zf.extract(info, dest)
            if not info.is_dir():
                ts = _zip_mtime(info)
                os.utime(dest / info.filename, (ts, ts))
    return find_table_dir(dest)
