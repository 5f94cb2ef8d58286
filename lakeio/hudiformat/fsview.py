"""The writer's file-system view: the latest base file of every file group, from the model's view of the table.

Stands for ``HoodieTable.getBaseFileOnlyView().getLatestBaseFiles(partition)`` (``AbstractTableFileSystemView``
loading a partition on demand, ``ensurePartitionLoadedCorrectly``): the partition's base files are listed on disk
(no metadata table: ``FSUtils`` listing), the file groups and slices are built by the model's
:class:`model.slicing.FileSystemView` (through :class:`lakeio.ondisk.fastslicing.FileSystemView`, the same view
with the fast group builder, kept equal to the spec by ``tests/test_fastpaths.py``) from the writer's timeline
with the table version's slicing rule, and its latest file slices (``getLatestFileSlices``: per file group the
newest committed slice) give the latest base file. Log files are not listed: a base-file-only view
(``BaseFileOnlyView``) has no log-only slices, so its latest slice of a group is the slice of the newest
committed base file -- what the index looks keys up in (``HoodieIndexUtils.getLatestBaseFilesForPartition``),
what a copy-on-write merge rewrites (``HoodieMergeHandle``) and what a merge-on-read log joins
(``HoodieAppendHandle``; tv6 names the log with that slice's base instant).

Committed, for the writer, also covers its own writes not yet completed (``write_batch`` returned, ``commit``
not yet done -- the pipeline commits asynchronously and writes the next batch meanwhile): those instants are
completed on a copy of the timeline (with a completion time after every other), so their files are in the view.
Writes of other processes that never completed (a crash) are not. As in Hudi, a base file whose instant is
before the start of the active timeline counts as archived, hence committed.

Cached: a file name is parsed once (:func:`model.filenames.parse_data_file`), and the view of a partition is
kept while the timeline (the writer's generation counter), its own pending writes and the partition's base
files are the same.
"""

from __future__ import annotations

import os
from pathlib import Path

from lakeio.errors import UserError
from lakeio.ondisk.fastslicing import FileSystemView
from model import filenames as fn
from model.errors import CodecError
from model.instant import State
from model.timeline import Timeline

#: Completion time given to the writer's own pending writes in its view: after every real one.
OWN_PENDING_COMPLETION = "99999999999999999"


def writer_timeline(timeline: Timeline, own_pending: set[str] | frozenset[str]) -> Timeline:
    """``timeline`` with the writer's own written instants completed, on a copy (see the module doc); the
    timeline itself when the writer has none pending (the view only reads it)."""
    own = [i for i in timeline.pending() if i.requested_time in own_pending and i.state is State.INFLIGHT]
    if not own:
        return timeline
    tl = timeline.copy()
    for inst in own:
        tl.complete(inst.requested_time, inst.action, OWN_PENDING_COMPLETION)
    return tl


class WriterView:
    """Latest base files per partition of the table at ``base_path``, listed on disk when asked for."""

    def __init__(self, base_path: Path):
        self.base_path = base_path
        self._parsed: dict[tuple[str, str], fn.BaseFile | None] = {}  # (partition, name) -> parsed name
        self._cache: dict[str, tuple[tuple, dict[str, fn.BaseFile]]] = {}  # partition -> (key, latest)
        self.builds = 0  # views built (tests look at it)

    def base_files(self, partition: str) -> tuple[fn.BaseFile, ...]:
        """The base files in a partition folder, in name order (other names are skipped; a name that claims to
        be a data file but does not parse raises :class:`UserError`)."""
        d = self.base_path / partition if partition else self.base_path
        try:
            with os.scandir(d) as it:
                names = sorted(e.name for e in it if e.name[:1] != "." and e.is_file())
        except FileNotFoundError:
            return ()
        out = []
        parsed = self._parsed
        for name in names:
            key = (partition, name)
            f = parsed.get(key, False)
            if f is False:
                try:
                    f = fn.parse_data_file(name, partition)
                except CodecError as exc:
                    raise UserError(f"{d / name}: {exc.problem}") from None
                parsed[key] = f = f if isinstance(f, fn.BaseFile) else None
            if f is not None:
                out.append(f)
        return tuple(out)

    def latest(self, timeline: Timeline, generation: int, own_pending: set[str],
               partitions: list[str]) -> dict[str, dict[str, fn.BaseFile]]:
        """partition -> (file id -> latest base file, in file-id order) for ``partitions``. ``generation`` must
        change whenever ``timeline`` does. Call under the writer's lock; do not modify the result."""
        out: dict[str, dict[str, fn.BaseFile]] = {}
        todo: dict[str, tuple] = {}
        pend = frozenset(own_pending)
        for part in partitions:
            bases = self.base_files(part)
            key = (generation, pend, bases)
            hit = self._cache.get(part)
            if hit is not None and hit[0] == key:
                out[part] = hit[1]
            else:
                todo[part] = key
        if todo:
            view = FileSystemView(writer_timeline(timeline, pend), [b for k in todo.values() for b in k[2]], ())
            latest: dict[str, dict[str, fn.BaseFile]] = {p: {} for p in todo}
            for s in sorted(view.latest_file_slices(), key=lambda s: s.group):
                latest[s.partition][s.file_id] = s.base_file
            for part, key in todo.items():
                self._cache[part] = (key, latest[part])
                out[part] = latest[part]
            self.builds += 1
        return out
