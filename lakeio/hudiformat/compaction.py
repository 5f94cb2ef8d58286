"""Compaction of a merge-on-read table (table version 8): schedule a plan, execute it, complete it.

Stands for ``ScheduleCompactionActionExecutor`` (the plan: ``<tc>.compaction.requested``, a
``HoodieCompactionPlan``), ``RunCompactionActionExecutor`` / ``HoodieCompactor`` (``<tc>.compaction.inflight``;
per operation the file slice's base file and log files merged into a new base file named with ``tc``) and
``BaseHoodieTableServiceClient#completeCompaction`` (``<tc>_<completion>.commit``, operation ``COMPACT``).

Which file slices and log files a plan at ``tc`` compacts is the model's rule
(:meth:`model.slicing.FileSystemView.compaction_plan_files`, rendered by
:func:`lakeio.ondisk.skeleton.default_compaction_plan`): completion-time slicing (RFC-66), so a log whose write
completes after ``tc`` joins the new slice, never the plan. The merge is the table's merge mode
(``EVENT_TIME_ORDERING``, ``DefaultHoodieRecordPayload#combineAndGetUpdateValue``): per record key the record
with the greatest ordering value, a later log winning a tie; a delete removes the key when its ordering value
is at least the record's (a key-only delete, ordering value 0 or null, always). Records keep their
``_hoodie_commit_time`` and sequence number (compaction preserves them), ``_hoodie_file_name`` is the new file.

Times come from the caller (a multi-writer caller draws them under the table's lock). Not done: log compaction,
table version 6 (instant-time slicing), compaction of log-only file groups, deletes of partitions.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa

from lakeio.errors import UserError
from lakeio.ondisk import metadata as md
from lakeio.ondisk.reader import read_table
from lakeio.ondisk.skeleton import default_compaction_plan
from model import filenames as fn
from model.instant import Action, State

from . import basefile, logfile, markers
from .schema import RECORD_KEY
from .tableconfig import MERGE_ON_READ
from .timeline_ops import clean_temp, timeline_path, write_completed
from .write_handle import create_marker


def schedule(w, tc: str) -> list[dict] | None:
    """Write the plan of a compaction at ``tc`` (``<tc>.compaction.requested``); its operations, or None when
    no file slice has log files to compact (no instant is created, as Hudi schedules nothing then)."""
    if w.table_version < 8 or w.table_type != MERGE_ON_READ:
        raise UserError(f"{w.base_path}: compaction is written for merge-on-read tables of version 8 only")
    t = read_table(w.base_path)
    ops = [op for op in default_compaction_plan(tc, t.timeline, t.base_files, t.log_files) if op["dataFilePath"]]
    if not ops:
        return None
    plan = md.encode_compaction_plan(md.make_compaction_plan(ops))
    md.write_timeline_file(timeline_path(w, tc, Action.COMPACTION, State.REQUESTED), plan)
    return ops


def _merge(rows: dict, block_rows, ordering: str | None) -> None:
    for r in block_rows:
        k = r[RECORD_KEY]
        old = rows.get(k)
        if old is None or ordering is None or r[ordering] >= old[ordering]:
            rows[k] = r


def _delete(rows: dict, deletes, ordering: str | None) -> None:
    for d in deletes:
        k = d["recordKey"]
        old = rows.get(k)
        if old is None:
            continue
        ov = d.get("orderingVal")
        ov = next(iter(ov.values())) if isinstance(ov, dict) else ov
        if ordering is None or ov in (None, 0) or ov >= old[ordering]:
            del rows[k]


def execute(w, tc: str, ops: list[dict]) -> list[dict]:
    """Transition the plan to inflight and write one new base file per operation; the write stats."""
    md.write_timeline_file(timeline_path(w, tc, Action.COMPACTION, State.INFLIGHT), b"")
    t = read_table(w.base_path)
    completion = {i.requested_time: i.completion_time for i in t.timeline.completed()}
    stats = []
    for n, op in enumerate(ops):
        part, fid = op.get("partitionPath") or "", op["fileId"]
        d = w.base_path / part if part else w.base_path
        rows = {r[RECORD_KEY]: r for r in basefile.read_base_file(str(d / op["dataFilePath"])).to_pylist()}
        logs = [fn.parse_data_file(name, part) for name in op["deltaFilePaths"]]
        logs.sort(key=lambda lf: (completion.get(lf.instant_time) or "", lf.instant_time, lf.version))
        for lf in logs:
            for block in logfile.read_log_file(str(d / lf.name)):
                if block.block_type in (logfile.AVRO_DATA_BLOCK, logfile.PARQUET_DATA_BLOCK):
                    _merge(rows, block.data_rows(), w.ordering_field)
                elif block.block_type == logfile.DELETE_BLOCK:
                    _delete(rows, block.deletes(), w.ordering_field)
        token = f"{n}-0-0"
        bf = fn.BaseFile(fid, token, tc, "parquet", part)
        out = [dict(r, _hoodie_file_name=bf.name) for _, r in sorted(rows.items())]
        table = pa.Table.from_pylist(out, schema=w._full_schema)
        create_marker(w.hoodie_dir, tc, part, bf.name, "CREATE")
        tmp = w.hoodie_dir / ".temp" / tc / f".{bf.name}.{uuid.uuid4().hex}.tmp"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        size = basefile.write_base_file(str(w.base_path / bf.path), table, w._schema_json,
                                        compression=w.compression, tmp_path=str(tmp))
        stats.append(md.make_write_stat(part, bf.path, fid, op["baseInstantTime"], num_writes=len(out),
                                        num_update_writes=len(out), size=size,
                                        totalLogFilesCompacted=len(logs)))
    return stats


def complete(w, tc: str, completion: str, stats: list[dict]) -> Path:
    """``<tc>_<completion>.commit`` with the COMPACT commit metadata; the instant's markers go."""
    by_part: dict[str, list[dict]] = {}
    for s in stats:
        by_part.setdefault(s["partitionPath"], []).append(s)
    meta = md.make_commit_metadata(by_part, operation="COMPACT", schema_json=w._schema_json_nometa, compacted=True)
    markers.reconcile_against_markers(w.base_path, w.hoodie_dir, tc, frozenset(s["path"] for s in stats))
    path = timeline_path(w, tc, Action.COMPACTION, State.COMPLETED, completion)
    write_completed(w, path, md.encode_commit_metadata(meta, w.table_version), completion)
    clean_temp(w, tc)
    w.refresh()
    return path


__all__ = ["schedule", "execute", "complete"]
