"""Direct write markers: which data files the attempts of an instant may have written, and reconciling them
with the write statuses at commit.

Stands for ``WriteMarkers`` / ``DirectWriteMarkers`` (``hoodie.write.markers.type=DIRECT``): before a write
handle creates a data file it creates ``.hoodie/.temp/<instant>/<partition>/<file>.marker.<IOType>``
(``HoodieWriteHandle#createMarkerFile``; :func:`.write_handle.create_marker`), so the marker set of an
instant names every file any attempt of any task wrote or began, including the attempts Spark retried or
killed and speculative duplicates. At commit (``BaseHoodieWriteClient#commit`` -> ``HoodieTable#finalizeWrite``
-> ``HoodieTable#reconcileAgainstMarkers``) the files the markers name but the successful attempts' write
statuses do not are deleted before the completed instant is written; rollback deletes every file the
markers name (``MarkerBasedRollbackStrategy``, :mod:`.rollback`); after the commit the marker folder is
deleted (``WriteMarkers#quietDeleteMarkerDir``).

Hudi reconciles only CREATE and MERGE markers (a log file may be shared with other instants: appended to).
This writer never appends to an existing file -- every log file is new, named with the attempt's write token
-- so a duplicate attempt's log file is as safe to delete as its base file, and APPEND markers are reconciled
too.
"""

from __future__ import annotations

import os
from pathlib import Path

MARKER = ".marker."
IO_TYPES = ("CREATE", "MERGE", "APPEND")


def marker_dir(hoodie_dir: Path, instant: str) -> Path:
    """``WriteMarkers#getMarkerDir``: ``.hoodie/.temp/<instant>``."""
    return Path(hoodie_dir) / ".temp" / instant


def marked_files(hoodie_dir: Path, instant: str) -> dict[str, str]:
    """``DirectWriteMarkers#allMarkerFilePaths``: data file path (relative to the base path) -> IO type, for
    every marker of ``instant``."""
    root = marker_dir(hoodie_dir, instant)
    out: dict[str, str] = {}
    if not root.is_dir():
        return out
    for d, _dirs, names in os.walk(root):
        rel = os.path.relpath(d, root)
        part = "" if rel == "." else rel.replace(os.sep, "/")
        for n in names:
            if MARKER not in n:
                continue
            name, _, io = n.rpartition(MARKER)
            if io in IO_TYPES:
                out[f"{part}/{name}" if part else name] = io
    return out


def invalid_data_paths(hoodie_dir: Path, instant: str, written: set[str] | frozenset[str]) -> list[str]:
    """``HoodieTable#getInvalidDataPaths``: files the markers name that no successful write status names."""
    return sorted(p for p in marked_files(hoodie_dir, instant) if p not in written)


def reconcile_against_markers(base_path: Path, hoodie_dir: Path, instant: str,
                              written: set[str] | frozenset[str]) -> list[str]:
    """``HoodieTable#reconcileAgainstMarkers``: delete the data files of failed or duplicate attempts (marked,
    not in ``written``, the paths of the write statuses the commit will name). Returns the paths deleted
    (relative to the base path); a marked file that was never created is skipped."""
    deleted = []
    for rel in invalid_data_paths(hoodie_dir, instant, written):
        try:
            (Path(base_path) / rel).unlink()
            deleted.append(rel)
        except FileNotFoundError:
            pass
    return deleted
