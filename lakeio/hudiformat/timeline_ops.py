"""The writer's timeline operations: requested / inflight / completed files and the commit metadata on disk.

Stands for ``HoodieActiveTimeline`` (``createNewInstant``, ``transitionRequestedToInflight``, ``saveAsComplete``)
driven by ``BaseHoodieWriteClient.startCommit`` and ``commitStats`` (``HoodieCommitMetadata`` built from the
write stats). Every transition is applied first to the writer's :class:`model.timeline.Timeline` mirror, which
refuses an illegal one (complete twice, complete a requested instant, ...) before any file is written; the files
go through :mod:`lakeio.ondisk.metadata` (commit metadata JSON in table version 6, Avro in 8) with names from
:func:`model.filenames.timeline_file_name`. Table version 6 (timeline layout 1) keeps no completion time in the
name: the completed file's modification time is set to it, where readers take it from
(``CompletionTimeQueryViewV1``).

Functions and contexts here take the writer (:class:`.table.HudiTableWriter`, whose facade calls them) as ``w``
(not imported: the facade imports this module).
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
from pathlib import Path

from lakeio.errors import UserError
from lakeio.ondisk import metadata as md
from model import filenames as fn
from model.instant import Action, State

from . import markers
from .write_helper import operation_type


def time_to_epoch_seconds(t: str) -> float:
    """A ``yyyyMMddHHmmssSSS`` time (UTC) as epoch seconds (for the modification time of tv6 completed files)."""
    d = _dt.datetime.strptime(t[:14], "%Y%m%d%H%M%S").replace(tzinfo=_dt.timezone.utc)
    ms = int(t[14:17] or 0) if len(t) >= 17 else 999
    return d.timestamp() + ms / 1000.0


def timeline_path(w, requested: str, action: Action, state: State,
                  completion: str | None = None) -> Path:
    """The timeline file of an instant state (``InstantFileNameGenerator``) in the table's timeline folder."""
    return w.timeline_dir / fn.timeline_file_name(requested, action, state, completion, w.layout)


def write_completed(w, path: Path, data: bytes, completion_time: str) -> None:
    """Write a completed file; in layout 1 stamp its modification time with the completion time."""
    md.write_timeline_file(path, data)
    if w.layout == 1:  # tv6 readers take the completion time from the file's modification time
        ts = time_to_epoch_seconds(completion_time)
        os.utime(path, (ts, ts))


def start(w, instant_time: str, operation: str = "upsert") -> None:
    """Create ``<t>.<action>.requested`` and the inflight file with empty commit metadata
    (``BaseHoodieWriteClient.startCommit``; ``transitionRequestedToInflight``)."""
    with w._lock:
        w.timeline.create(instant_time, w.action)
        w.timeline.transition_to_inflight(instant_time, w.action)
        w._timeline_gen += 1
    md.write_timeline_file(timeline_path(w, instant_time, w.action, State.REQUESTED), b"")
    inflight = md.make_commit_metadata({}, operation=operation_type(operation))
    md.write_timeline_file(timeline_path(w, instant_time, w.action, State.INFLIGHT),
                           md.encode_commit_metadata(inflight, w.table_version))


def commit(w, instant_time: str, completion_time: str, result,
           extra_metadata: dict[str, str] | None) -> Path:
    """``commitStats`` + ``finalizeWrite`` + ``saveAsComplete``: the data files the instant's markers name but
    ``result`` does not (failed, retried or duplicate attempts) are deleted (:mod:`.markers`,
    ``reconcileAgainstMarkers``; recorded in ``w.reconciled``), then the completed file is written with the
    commit metadata of ``result`` (default: what the writer's ``write_batch`` returned for the instant; none:
    an empty commit); then the instant's markers are deleted (``WriteMarkers.quietDeleteMarkerDir``). A re-commit of another process's write (a
    persisted result) makes its files visible: they are on disk and the instant is now completed."""
    with w._lock:
        if result is None:
            result = w._written.get(instant_time)
        inst = w.timeline.get(instant_time, w.action)
        if inst is None:
            raise UserError(f"commit {instant_time}: no such {w.action.value} on the timeline")
        probe = w.timeline.copy()
        probe.complete(instant_time, w.action, completion_time)  # refuses illegal completion first
        schema_json = result.schema if result is not None else (w._schema_json_nometa
                                                                if w._data_schema is not None else None)
        stats = result.partition_to_write_stats if result is not None else {}
        operation = result.operation if result is not None else "UPSERT"
        meta = md.make_commit_metadata(stats, operation=operation, schema_json=schema_json,
                                       extra_metadata=extra_metadata)
        data = md.encode_commit_metadata(meta, w.table_version)
        path = timeline_path(w, instant_time, w.action, State.COMPLETED, completion_time)
        # finalizeWrite: files of failed or duplicate attempts (marked, in no write status) go first
        written = frozenset(s["path"] for ss in stats.values() for s in ss)
        w.reconciled[instant_time] = markers.reconcile_against_markers(w.base_path, w.hoodie_dir, instant_time,
                                                                       written)
        write_completed(w, path, data, completion_time)
        w.timeline.complete(instant_time, w.action, completion_time)
        w._timeline_gen += 1
        if instant_time not in w._written and result is not None:
            w._index.clear()  # another process's files join the view: drop the cached key index
        w._written.pop(instant_time, None)
    clean_temp(w, instant_time)
    return path


def clean_temp(w, instant_time: str) -> None:
    """Delete what ``.hoodie/.temp`` holds for an instant that is done (committed, rolled back, or a completed
    rollback): its marker folder ``.temp/<t>`` (``WriteMarkers.quietDeleteMarkerDir``; data-file temporaries
    live there too) and the temporary files of its timeline writes (``.<t>.<action>...<random>.tmp``, left by
    a writer killed between writing and linking them). Temporary files of other instants stay."""
    temp = w.hoodie_dir / ".temp"
    shutil.rmtree(temp / instant_time, ignore_errors=True)
    if temp.is_dir():
        for p in temp.glob(f".{instant_time}*.tmp"):
            rest = p.name[len(instant_time) + 1:]
            if rest[:1] in (".", "_"):  # <t>.<action>... or <t>_<completion>.<action> (layout 2 completed)
                p.unlink(missing_ok=True)


def clean_completed_temp(w) -> None:
    """At open: the temporaries of every completed instant (a writer killed after completing an instant and
    before its clean-up leaves them; nothing writes them again)."""
    temp = w.hoodie_dir / ".temp"
    if not temp.is_dir() or not any(temp.iterdir()):
        return
    with w._lock:
        done = [i.requested_time for i in w.timeline.completed()]
    for t in done:
        clean_temp(w, t)


def completed_instants(w) -> list[tuple[str, str, str | None]]:
    """(requested time, action, completion time) of completed instants, in requested-time order."""
    with w._lock:
        return [(i.requested_time, i.shown_action.value, i.completion_time) for i in w.timeline.completed()]


def pending_instants(w) -> list[tuple[str, str, str]]:
    """(requested time, action, state label) of pending instants (failed writes after a crash, or own)."""
    with w._lock:
        return [(i.requested_time, i.action.value, i.state.label) for i in w.timeline.pending()]
