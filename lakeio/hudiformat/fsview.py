"""The writer's file-system view: latest base files per file group, from the model's view of the table.

Stands for the writer side of ``HoodieTable.getBaseFileOnlyView()`` / ``getSliceView()``
(``AbstractTableFileSystemView``): the data files are listed on disk (``FSUtils.getAllPartitionPaths`` and a
listing of each partition, no metadata table), the slices are built by :class:`model.slicing.FileSystemView`
from the writer's timeline with the table version's slicing rule (tv6: instant time, tv8: completion time), and
``getLatestBaseFiles`` gives, per file group, the newest base file that is committed.

Committed, for the writer, also covers its own writes not yet completed (``write_batch`` returned, ``commit``
not yet done -- the pipeline commits asynchronously and writes the next batch meanwhile): those instants are
completed on a copy of the timeline (with a completion time after every other, so a pending log of such an
instant stays in the latest slice as it would if pending), and their files are part of the view. Writes of other
processes that never completed (a crash) are not.

The view is cached, keyed by the timeline state, the own pending writes and the listing: a batch that finds the
same table state does not build it again.
"""

from __future__ import annotations

import os
from pathlib import Path

from lakeio.errors import UserError
from model import filenames as fn
from model.errors import CodecError
from model.instant import State
from model.slicing import FileSystemView
from model.timeline import Timeline

#: Completion time given to the writer's own pending writes in its view: after every real one.
OWN_PENDING_COMPLETION = "99999999999999999"
#: Folders under the base path that never hold table data (as the on-disk reader skips them).
_SKIP_DIRS = {".hoodie", "__MACOSX"}

LatestBases = dict[tuple[str, str], fn.BaseFile]


def list_data_files(base_path: Path) -> tuple[tuple[fn.BaseFile, ...], tuple[fn.LogFile, ...]]:
    """Base and log files of every partition folder under ``base_path`` (names sorted per folder; ``.hoodie`` is
    skipped). A name that claims to be a data file but does not parse raises :class:`UserError`."""
    bases: list[fn.BaseFile] = []
    logs: list[fn.LogFile] = []
    for root, dirs, files in os.walk(base_path):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        rel = os.path.relpath(root, base_path)
        part = "" if rel == "." else rel.replace(os.sep, "/")
        for name in sorted(files):
            try:
                f = fn.parse_data_file(name, part)
            except CodecError as exc:
                raise UserError(f"{os.path.join(root, name)}: {exc.problem}") from None
            if isinstance(f, fn.BaseFile):
                bases.append(f)
            elif isinstance(f, fn.LogFile):
                logs.append(f)
    return tuple(bases), tuple(logs)


def timeline_key(timeline: Timeline) -> tuple:
    """The timeline state the view depends on: every instant with its action, state and completion time."""
    return tuple((i.requested_time, i.action, i.state, i.completion_time) for i in timeline.instants())


def writer_timeline(timeline: Timeline, own_pending: set[str] | frozenset[str]) -> Timeline:
    """A copy of ``timeline`` on which the writer's own written instants are completed (see the module doc)."""
    tl = timeline.copy()
    for inst in timeline.pending():
        if inst.requested_time in own_pending and inst.state is State.INFLIGHT:
            tl.complete(inst.requested_time, inst.action, OWN_PENDING_COMPLETION)
    return tl


def latest_base_files(view: FileSystemView) -> LatestBases:
    """``getLatestBaseFiles``: per file group, the newest committed base file.

    Taken from the view's latest file slices (``getLatestFileSlices``); when the newest visible slice of a group
    holds only log files, the newest committed base file of an older slice of the group."""
    done = view.times.is_completed
    out: LatestBases = {}
    for s in view.latest_file_slices():
        b = s.base_file
        if b is None:
            fg = view.file_group(s.group)
            b = next((x.base_file for x in fg.slices if x.base_instant < s.base_instant
                      and x.base_file is not None and done(x.base_instant)), None)
        if b is not None:
            out[(s.partition, s.file_id)] = b
    return out


class WriterView:
    """The latest base files of the table at ``base_path`` per partition, cached by table state."""

    def __init__(self, base_path: Path):
        self.base_path = base_path
        self._key: tuple | None = None
        self._by_partition: dict[str, dict[str, fn.BaseFile]] = {}
        self.builds = 0  # how many views were built (tests look at it)

    def latest_by_partition(self, timeline: Timeline, own_pending: set[str]) -> dict[str, dict[str, fn.BaseFile]]:
        """partition -> (file id -> latest base file, in file-id order), for the table on disk now and the
        writer's ``timeline`` and own pending writes (call under the writer's lock; do not modify the result)."""
        files = list_data_files(self.base_path)
        key = (timeline_key(timeline), frozenset(own_pending), files)
        if key != self._key:
            view = FileSystemView(writer_timeline(timeline, own_pending), files[0], files[1])
            by_partition: dict[str, dict[str, fn.BaseFile]] = {}
            for (part, fid), b in sorted(latest_base_files(view).items()):
                by_partition.setdefault(part, {})[fid] = b
            self._by_partition, self._key = by_partition, key
            self.builds += 1
        return self._by_partition
