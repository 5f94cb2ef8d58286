"""Write a model timeline and file listing out as a Hudi table directory (a *skeleton* table).

A skeleton has everything a timeline reader looks at -- ``hoodie.properties``, one file per
instant state with the metadata Hudi would put there, partition folders with
``.hoodie_partition_metadata`` -- but its data files are **placeholders**: files with the right
names whose content is a short text, not Parquet or log blocks. So the timeline, file slicing and
``hoodie-lab audit`` work on it, and hudi-rs can open it, list its timeline and plan its file
slices (no metadata table: ``hoodie.table.metadata.partitions`` is empty, so readers list
folders), but reading *rows* from it fails by design.

It covers states the real fixture tables lack: pending instants, writes overlapping a compaction,
cleans, savepoints and rollbacks. What each timeline file holds (``hudi-semantics.md`` 1.6/1.8;
:mod:`lakeio.ondisk.metadata`):

=====================  ======================================================================
state file             content
=====================  ======================================================================
commit/deltacommit/    ``requested``: empty (as Hudi writes them); ``inflight`` and completed:
replacecommit          commit metadata (JSON tv6 / Avro tv8+) with one write stat per data file
                       the instant wrote and the table schema in ``extraMetadata["schema"]``;
                       a completed replacecommit carries ``partitionToReplaceFileIds``
compaction             ``requested``: the compaction plan; ``inflight``: empty; completed
                       (``commit``): commit metadata of the compacted base files
clustering             ``requested``: a requested-replace (clustering) plan; completes as
                       ``replacecommit`` with the replaced file groups
clean                  ``requested``: cleaner plan; ``inflight``: empty; completed: clean metadata
rollback               ``requested``: rollback plan; ``inflight``: empty; completed: rollback metadata
savepoint              ``inflight``: empty; completed: savepoint metadata
restore, indexing,     empty files (legal for pending states; the skeleton does not model their
logcompaction          plans)
=====================  ======================================================================

Layout 1 (tv6) has no completion time in file names: the completed file's modification time is
set to the completion time (``hoodie.table.timeline.timezone=UTC``), which is where Hudi 1.x and
:func:`lakeio.ondisk.read_table` take it from.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from model import filenames as fn
from model.instant import Action, State, to_millis
from lakeio.ondisk.fastslicing import FileSystemView
from model.timeline import Timeline

from . import metadata as md
from .properties import write_hoodie_properties

PLACEHOLDER = b"hoodie-lab skeleton placeholder: not a real data file\n"

#: A small record schema the skeleton declares (readers look it up in commit extraMetadata).
DEFAULT_SCHEMA = json.dumps({
    "type": "record", "name": "skeleton_record", "namespace": "hoodie.skeleton",
    "fields": [{"name": "uuid", "type": ["null", "string"], "default": None},
               {"name": "ts", "type": ["null", "long"], "default": None},
               {"name": "partition", "type": ["null", "string"], "default": None}]},
    separators=(",", ":"))


@dataclass
class SkeletonPlans:
    """What the model knows beyond names: which files services touch.

    * ``compactions``: compaction instant -> plan operations (``fileId``, ``partitionPath``,
      ``baseInstantTime``, ``dataFilePath`` (base file name or None), ``deltaFilePaths``); missing
      plans are derived with :func:`default_compaction_plan`;
    * ``clustering``: clustering / replacecommit instant -> input file groups ``[(partition, fileId)]``
      (a completed one replaces them: ``partitionToReplaceFileIds``);
    * ``cleans``: clean instant -> ``{partition: [file names deleted]}``;
    * ``rollbacks``: rollback instant -> (rolled-back requested time, its action, ``{partition: [files]}``);
    * ``savepoints``: savepoint instant -> ``{partition: [file names kept]}``;
    * ``log_writers``: tv6 only: log file name -> the deltacommit that appended to it (tv6 log names
      carry the base instant, not the writer); tv8 logs are attributed by name.
    """

    compactions: dict[str, list[dict]] = field(default_factory=dict)
    clustering: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    cleans: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    rollbacks: dict[str, tuple[str, str, dict[str, list[str]]]] = field(default_factory=dict)
    savepoints: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    log_writers: dict[str, str] = field(default_factory=dict)


def _epoch_ns(t: str) -> int:
    """A 17-digit UTC instant time as epoch nanoseconds (exact, for ``os.utime``)."""
    return to_millis(t) * 1_000_000


def default_compaction_plan(tc: str, tl: Timeline, base_files: Iterable[fn.BaseFile],
                            log_files: Iterable[fn.LogFile]) -> list[dict]:
    """A plan as a scheduler would make it at ``tc``, as Hudi's Avro plan operations.

    Which slices and logs go in is the model's rule
    (:meth:`model.slicing.FileSystemView.compaction_plan_files`, I9 / RFC-66);
    this function only renders it.
    """
    view = FileSystemView(tl, base_files, log_files)
    ops = []
    for gid, sl in sorted(view.compaction_plan_files(tc).items()):
        ops.append({"fileId": gid.file_id, "partitionPath": gid.partition,
                    "baseInstantTime": sl.base_instant,
                    "dataFilePath": sl.base_file.name if sl.base_file else None,
                    "deltaFilePaths": [lf.name for lf in sl.log_files]})
    return ops


def default_properties(name: str, table_type: str, version: int, schema_json: str) -> dict[str, str]:
    """``hoodie.properties`` of a new skeleton table (no metadata table, UTC timeline zone)."""
    layout = 1 if version == 6 else 2
    props = {
        "hoodie.table.name": name,
        "hoodie.database.name": "default",
        "hoodie.table.type": table_type,
        "hoodie.table.version": str(version),
        "hoodie.timeline.layout.version": str(layout),
        "hoodie.table.timeline.timezone": "UTC",
        "hoodie.table.recordkey.fields": "uuid",
        "hoodie.table.partition.fields": "partition",
        "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.partitionpath.urlencode": "false",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.archivelog.folder": "archived",
        "hoodie.table.create.schema": schema_json,
    }
    if version >= 8:
        props.update({
            "hoodie.table.initial.version": str(version),
            "hoodie.timeline.path": "timeline",
            "hoodie.timeline.history.path": "history",
            "hoodie.table.metadata.partitions": "",
            "hoodie.table.metadata.partitions.inflight": "",
            "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING",
        })
    return props


def write_skeleton(out: str | os.PathLike, tl: Timeline, base_files: Iterable[fn.BaseFile],
                   log_files: Iterable[fn.LogFile] = (), *, name: str = "skeleton",
                   table_type: str | None = None, plans: SkeletonPlans | None = None,
                   schema_json: str = DEFAULT_SCHEMA, archival=None, archival_context=None) -> Path:
    """Write ``tl`` and the data-file listing as a new table at ``out`` (which must not exist or be
    empty). Returns the base path. ``table_type`` defaults to MERGE_ON_READ when there are log
    files or deltacommits, else COPY_ON_WRITE.

    ``archival`` (a :class:`model.archival.ArchivalConfig`): archive as a writer would, after each
    instant's files are written (instants in requested-time order; decisions by :mod:`model.archival`,
    files by :class:`lakeio.ondisk.history.TableArchiver`), so the table gets an LSM history (tv8/9) or
    an archived log (tv6); the settings are recorded in ``hoodie.properties`` for ``audit``."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out}: not empty; a skeleton is written to a new directory")
    base_files = list(base_files)
    log_files = list(log_files)
    plans = plans or SkeletonPlans()
    version, layout = tl.table_version, tl.layout
    if table_type is None:
        mor = bool(log_files) or any(i.shown_action is Action.DELTACOMMIT for i in tl.instants())
        table_type = "MERGE_ON_READ" if mor else "COPY_ON_WRITE"

    hoodie = out / ".hoodie"
    for d in (".aux", ".schema", ".temp"):
        (hoodie / d).mkdir(parents=True, exist_ok=True)
    props = default_properties(name, table_type, version, schema_json)
    if archival is not None:
        props.update(archival_properties(archival))
    write_hoodie_properties(hoodie, props)
    if layout == 1:
        tdir = hoodie
        (hoodie / "archived").mkdir(exist_ok=True)
    else:
        tdir = hoodie / "timeline"
        (tdir / "history").mkdir(parents=True, exist_ok=True)
    archiver = None
    if archival is not None:
        from .history import TableArchiver

        archiver = TableArchiver(out, archival, archival_context)

    # ---- data files (placeholders)
    partitions = sorted({f.partition for f in base_files} | {f.partition for f in log_files})
    first_instant = min((i.requested_time for i in tl.instants()), default="00000000000000000")
    for p in partitions:
        pdir = out / p if p else out
        pdir.mkdir(parents=True, exist_ok=True)
        depth = 0 if not p else len(p.split("/"))
        (pdir / ".hoodie_partition_metadata").write_text(
            f"#partition metadata\ncommitTime={first_instant}\npartitionDepth={depth}\n", encoding="latin-1")
    for f in base_files + log_files:
        path = out / f.path
        with open(path, "xb") as fh:
            fh.write(PLACEHOLDER)

    # ---- which instant wrote which data file
    written: dict[str, list] = {}
    for b in base_files:
        written.setdefault(b.instant_time, []).append(b)
    for lf in log_files:
        writer = plans.log_writers.get(lf.name) if layout == 1 else lf.delta_commit_time
        if writer:
            written.setdefault(writer, []).append(lf)

    def write_stats(t: str) -> dict[str, list[dict]]:
        stats: dict[str, list[dict]] = {}
        for f in sorted(written.get(t, []), key=lambda f: f.path):
            is_log = isinstance(f, fn.LogFile)
            prev = f.instant_time if is_log else "null"
            extra = {"logFiles": [f.name], "baseFile": "", "logVersion": f.version} if is_log else {}
            stats.setdefault(f.partition, []).append(md.make_write_stat(
                f.partition, f.path, f.file_id, prev, num_writes=1, num_inserts=0 if is_log else 1,
                num_update_writes=1 if is_log else 0, size=len(PLACEHOLDER), **extra))
        return stats

    def commit_bytes(t: str, *, operation: str, replaced=None, compacted=False) -> bytes:
        meta = md.make_commit_metadata(write_stats(t), operation=operation, schema_json=schema_json,
                                       compacted=compacted, replaced=replaced)
        return md.encode_commit_metadata(meta, version)

    # ---- timeline files
    for inst in tl.instants():
        t, act = inst.requested_time, inst.action
        for st in sorted(tl.states_present(t, act)):
            fname = fn.timeline_file_name(t, act, st, inst.completion_time, layout)
            data = b""
            if act in (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT):
                op = {"commit": "UPSERT", "deltacommit": "UPSERT", "replacecommit": "INSERT_OVERWRITE"}[act.value]
                if st is State.REQUESTED and act is Action.REPLACECOMMIT and t in plans.clustering:
                    data = md.encode_requested_replace(md.make_clustering_plan(
                        [[{"fileId": fid, "partitionPath": p} for p, fid in plans.clustering[t]]]))
                elif st is State.COMPLETED and act is Action.REPLACECOMMIT:
                    rep: dict[str, list[str]] = {}
                    for p, fid in plans.clustering.get(t, []):
                        rep.setdefault(p, []).append(fid)
                    data = commit_bytes(t, operation=op, replaced=rep)
                elif st is not State.REQUESTED:
                    data = commit_bytes(t, operation=op)
            elif act is Action.COMPACTION:
                if st is State.REQUESTED:
                    ops = plans.compactions.get(t)
                    if ops is None:
                        ops = default_compaction_plan(t, tl, base_files, log_files)
                    data = md.encode_compaction_plan(md.make_compaction_plan(ops))
                elif st is State.COMPLETED:
                    data = commit_bytes(t, operation="COMPACT", compacted=True)
            elif act is Action.CLUSTERING:
                groups = plans.clustering.get(t, [])
                if st is State.REQUESTED:
                    data = md.encode_requested_replace(md.make_clustering_plan(
                        [[{"fileId": fid, "partitionPath": p} for p, fid in groups]] if groups else []))
                elif st is State.COMPLETED:
                    rep = {}
                    for p, fid in groups:
                        rep.setdefault(p, []).append(fid)
                    data = commit_bytes(t, operation="CLUSTER", replaced=rep)
            elif act is Action.CLEAN:
                files = plans.cleans.get(t, {})
                if st is State.REQUESTED:
                    data = md.encode_clean_plan(md.make_clean_plan(files))
                elif st is State.COMPLETED:
                    data = md.encode_clean_metadata(md.make_clean_metadata(t, files))
            elif act is Action.ROLLBACK:
                target, taction, files = plans.rollbacks.get(t, ("", "commit", {}))
                if st is State.REQUESTED:
                    data = md.encode_rollback_plan(md.make_rollback_plan(target, taction, files))
                elif st is State.COMPLETED:
                    data = md.encode_rollback_metadata(md.make_rollback_metadata(t, target, taction, files))
            elif act is Action.SAVEPOINT and st is State.COMPLETED:
                data = md.encode_savepoint_metadata(md.make_savepoint_metadata(plans.savepoints.get(t, {})))
            path = md.write_timeline_file(tdir / fname, data)
            when = inst.completion_time if st is State.COMPLETED and inst.completion_time else t
            ns = _epoch_ns(when)
            os.utime(path, ns=(ns, ns))
        if archiver is not None:
            archiver.archive()
    return out


def archival_properties(cfg) -> dict[str, str]:
    """The archival settings as ``hoodie.properties`` keys (what ``audit`` reads back for I16)."""
    from model.archival import ArchivalConfig

    return {key: str(getattr(cfg, f)) for f, key in ArchivalConfig.KEYS.items()
            if f != "manifests_retained"}
