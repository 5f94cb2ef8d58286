"""Rollback of a pending (failed) write: the rollback plan and metadata, and deleting the files it wrote.

Stands for ``BaseHoodieWriteClient.rollback`` of a pending instant: ``BaseRollbackPlanActionExecutor`` (the
plan in ``<r>.rollback.requested``, ``HoodieRollbackPlan``: the files to delete per partition, found by
``MarkerBasedRollbackStrategy`` -- the instant's markers -- plus the files named with its instant),
``BaseRollbackActionExecutor`` (``<r>.rollback.inflight``, delete the files, complete with
``HoodieRollbackMetadata``) and ``deleteInflightAndRequestedInstant`` (the rolled-back instant's timeline files
go last). Table version 8 deletes the instant's base and log files; version 6 deletes its base files and
appends a ROLLBACK command block (``HoodieCommandBlock``, a new log version of the slice) to each file group the
instant logged into, as 0.x does (its logs are named with the slice's base instant, not the failed instant).

Refused: a completed instant (restore is not written), an unknown one, and an instant whose file groups a later
pending write of this writer touched (roll that one back first). A rollback interrupted after its completed file
was written is finished (the rolled-back instant's timeline files deleted) when run again.

Functions and contexts here take the writer (:class:`.table.HudiTableWriter`, whose facade calls them) as ``w``
(not imported: the facade imports this module).
"""

from __future__ import annotations

import os
from pathlib import Path

from lakeio.errors import UserError
from lakeio.ondisk import metadata as md
from model import filenames as fn
from model.errors import CodecError
from model.instant import Action, State

from . import logfile
from .mor import next_log_version
from .timeline_ops import clean_temp, timeline_path, write_completed


def _abs(w, part: str, name: str) -> str:
    return str(w.base_path / part / name) if part else str(w.base_path / name)


def _file_groups_written(w, instant: str) -> set[tuple[str, str]]:
    result = w._written.get(instant)
    return set() if result is None else {(s["partitionPath"], s["fileId"]) for s in result.write_stats}


def rollback(w, instant_time: str, rollback_time: str, completion_time: str) -> Path:
    """Roll back the pending write ``instant_time`` as instant ``rollback_time`` (see the module doc); returns
    the rollback's completed file."""
    with w._lock:
        inst = next((i for i in w.timeline.find(instant_time)
                     if i.action in (Action.COMMIT, Action.DELTACOMMIT)), None)
        if inst is None:
            raise UserError(f"rollback {instant_time}: no such pending write on the timeline")
        if inst.is_completed:
            raise UserError(f"rollback {instant_time}: the instant is completed (restore is not supported)")
        mine = _file_groups_written(w, instant_time)
        for later in w._written:
            if later > instant_time and _file_groups_written(w, later) & mine:
                raise UserError(f"rollback {instant_time}: pending instant {later} wrote into the same file "
                                f"groups; roll it back first")
        action = inst.action
        existing = w.timeline.get(rollback_time, Action.ROLLBACK)
    if existing is not None and existing.is_completed:
        done = finish_rollback(w, instant_time, action, timeline_path(
            w, rollback_time, Action.ROLLBACK, State.COMPLETED, existing.completion_time))
        w.refresh()
        return done
    files = files_of(w, instant_time)
    delete: dict[str, list[str]] = {}
    command_blocks: dict[tuple[str, str], fn.LogFile] = {}
    for f in files:
        if isinstance(f, fn.LogFile) and w.table_version == 6:
            command_blocks[(f.partition, f.file_id)] = f
        else:
            delete.setdefault(f.partition, []).append(f.name)
    # rollback instant: requested (plan) -> inflight
    if existing is None:
        with w._lock:
            w.timeline.create(rollback_time, Action.ROLLBACK)
            w._timeline_gen += 1
        plan = md.make_rollback_plan(instant_time, action.value,
                                     {p: [_abs(w, p, n) for n in ns] for p, ns in delete.items()})
        md.write_timeline_file(timeline_path(w, rollback_time, Action.ROLLBACK, State.REQUESTED),
                               md.encode_rollback_plan(plan))
        existing = w.timeline.get(rollback_time, Action.ROLLBACK)
    if existing.state is State.REQUESTED:
        with w._lock:
            w.timeline.transition_to_inflight(rollback_time, Action.ROLLBACK)
            w._timeline_gen += 1
        md.write_timeline_file(timeline_path(w, rollback_time, Action.ROLLBACK, State.INFLIGHT), b"")
    deleted: dict[str, list[str]] = {}
    for part, names in delete.items():
        for n in names:
            p = w.base_path / part / n if part else w.base_path / n
            try:
                p.unlink()
            except FileNotFoundError:
                pass
            deleted.setdefault(part, []).append(_abs(w, part, n))
    rollback_logs: dict[str, dict[str, int]] = {}
    for (part, fid), lf in sorted(command_blocks.items()):
        new = write_rollback_block(w, part, fid, lf.instant_time, rollback_time, instant_time)
        rollback_logs.setdefault(part, {})[_abs(w, part, new.name)] = new.size or 0
    meta = md.make_rollback_metadata(rollback_time, instant_time, action.value, deleted)
    for part, logs in rollback_logs.items():
        pm = meta["partitionMetadata"].setdefault(part, {"partitionPath": part, "successDeleteFiles": [],
                                                          "failedDeleteFiles": [], "rollbackLogFiles": {},
                                                          "logFilesFromFailedCommit": {}})
        pm["rollbackLogFiles"] = logs
    with w._lock:
        w.timeline.complete(rollback_time, Action.ROLLBACK, completion_time)
        w._timeline_gen += 1
    path = timeline_path(w, rollback_time, Action.ROLLBACK, State.COMPLETED, completion_time)
    write_completed(w, path, md.encode_rollback_metadata(meta), completion_time)
    clean_temp(w, rollback_time)
    return finish_rollback(w, instant_time, action, path)


def finish_rollback(w, instant_time: str, action: Action, path: Path) -> Path:
    """Delete the rolled-back instant's timeline files (inflight first, then requested) and its markers."""
    for st in (State.INFLIGHT, State.REQUESTED):
        try:
            timeline_path(w, instant_time, action, st).unlink()
        except FileNotFoundError:
            pass
    clean_temp(w, instant_time)
    with w._lock:
        w.timeline.delete(instant_time, action)
        w._timeline_gen += 1
        w._written.pop(instant_time, None)
        w._index.clear()
    return path


def files_of(w, instant: str) -> list[fn.BaseFile | fn.LogFile]:
    """Data files the instant may have written: its markers, plus the files on disk named with its instant
    (base files; v8 log files -- a v6 log is named with its slice's base instant). A v6 log listed by a marker
    but absent on disk is left out (nothing was logged: no command block needed)."""
    found: dict[tuple[str, str], fn.BaseFile | fn.LogFile] = {}
    mdir = w.hoodie_dir / ".temp" / instant
    if mdir.is_dir():
        for root, _dirs, names in os.walk(mdir):
            rel = os.path.relpath(root, mdir)
            part = "" if rel == "." else rel.replace(os.sep, "/")
            for n in names:
                if ".marker." not in n:
                    continue
                f = fn.parse_data_file(n.split(".marker.")[0], part)
                if f is not None:
                    found[(part, f.name)] = f
    for f in _data_files_named(w.base_path, instant):
        if isinstance(f, fn.BaseFile) or w.table_version != 6:
            found[(f.partition, f.name)] = f
    out = []
    for (part, name), f in sorted(found.items()):
        p = w.base_path / part / name if part else w.base_path / name
        if isinstance(f, fn.LogFile) and w.table_version == 6 and not p.exists():
            continue
        out.append(f)
    return out


def _data_files_named(base_path: Path, instant: str) -> list[fn.BaseFile | fn.LogFile]:
    """The data files on disk whose name carries ``instant`` (every partition folder; ``.hoodie`` skipped)."""
    out = []
    for root, dirs, names in os.walk(base_path):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        rel = os.path.relpath(root, base_path)
        part = "" if rel == "." else rel.replace(os.sep, "/")
        for n in names:
            if instant in n:
                try:
                    f = fn.parse_data_file(n, part)
                except CodecError:
                    continue  # not a data file of this writer; the plan lists only parsable names
                if f is not None and f.instant_time == instant:
                    out.append(f)
    return out


def write_rollback_block(w, part: str, fid: str, base_instant: str, rollback_time: str,
                         target: str) -> fn.LogFile:
    """A v6 ROLLBACK command block targeting ``target``, as the next log version of the slice ``base_instant``."""
    version = next_log_version(w.base_path, part, fid, base_instant)
    lf = fn.LogFile(fid, base_instant, version, "1-0-1", partition=part)
    data = logfile.rollback_block(rollback_time, target)
    size = w._write_file(w.base_path / lf.path, data, w.hoodie_dir / ".temp" / target)
    return fn.LogFile(fid, base_instant, version, "1-0-1", partition=part, size=size)
