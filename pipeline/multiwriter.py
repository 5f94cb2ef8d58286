"""Several pipelines on one table: the run config's ``concurrency_mode`` mapped onto the model's settings, the
transaction lock, the time generator shared by the writers, and the conflict check under the lock.

``concurrency_mode`` (``hoodie.write.concurrency.mode``): ``single_writer`` (default: one pipeline holds the
table's pipeline lock, :class:`pipeline.run_dir.TableLock`, exclusively for its whole run -- a second one is
refused), ``nbcc`` (NON_BLOCKING_CONCURRENCY_CONTROL) or ``occ``. The settings are the model's
(:class:`model.concurrency.settings.Settings`) and :func:`model.concurrency.settings.validate` judges them: the
pipeline always writes with the bucket index (``--buckets``); its ``blocking`` mode is the EAGER failed-writes
policy, ``async`` and ``spark-sink`` LAZY; a multi-writer run uses this module's lock provider. So NBCC on a COW
table, on table version 6 or in blocking mode is refused with the model's reason (one line, exit 2).

In a multi-writer mode each pipeline:

* holds the pipeline lock *shared* for its run (other multi-writer runs may write; a single-writer run may not,
  and a multi-writer run is refused while a single-writer run holds it);
* takes its instant times from :class:`SharedTimeFloor` -- TrueTime across processes (Hudi's
  ``SkewAdjustingTimeGenerator`` takes the table's lock provider): a time is generated under a file lock and
  is above every time any writer of the table generated before, so two writers never get one instant;
* completes its instants under the transaction lock (:func:`txn_lock`, ``TransactionManager#beginTransaction``
  / ``endTransaction``): the ack that makes the model commit (and draw the completion time), the conflict check
  (:func:`check_conflicts`, the model's rule over the timeline on disk) and the completed file are one lock
  section (RFC-66 "Assumption On Locks"); no async committer thread (the commit must be in the lock section);
* rolls back only its own pending instants (LAZY: never another writer's inflight write).

OCC runs in ``spark-sink`` mode only (the instant commits inside the batch): under the transaction lock, before
the model commits, the model's rule (:func:`check_conflicts`) decides over the timeline on disk; a conflict
raises :class:`OccAbort`, the batch fails before Spark commits it, and the run restarts the query on a recovered
coordinator (Flink's failover: the model rolls the instant back, the disk follows; Spark replays the batch and it
gets a new instant) -- at most :data:`OCC_MAX_RETRIES` times. In ``async``/``blocking`` mode the instant
commits after the batch returned, when it can no longer be replayed: refused.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from lakeio.errors import UserError
from lakeio.ondisk.mdt_lock import TxnLock, flock_within
from model.concurrency import rules, settings as cs
from model.instant import to_millis

#: The lock provider name recorded in the settings (a flock on a file in ``.hoodie/.aux``; per host).
LOCK_PROVIDER = "hoodie-lab FileLock (flock, .hoodie/.aux)"
TIME_FLOOR_NAME = "hoodie-lab-truetime"
TXN_WAIT_S = 120.0


def settings_of(cfg: dict) -> cs.Settings:
    """The model's settings of a run config (see the module docstring)."""
    mode = cfg.get("concurrency_mode", cs.SINGLE_WRITER)
    return cs.Settings(mode=mode, table_type=cfg["table_type"], table_version=cfg["table_version"],
                       index=cs.BUCKET, failed_writes=cs.EAGER if cfg["mode"] == "blocking" else cs.LAZY,
                       lock_provider=LOCK_PROVIDER if mode in (cs.OCC, cs.NBCC) else None,
                       conflict_strategy=cs.STRATEGY_SIMPLE, compaction_scheduling=cs.SCHEDULING_1X
                       if cfg["table_version"] >= 8 else cs.SCHEDULING_0X)


def is_multi_writer(cfg: dict) -> bool:
    return cfg.get("concurrency_mode", cs.SINGLE_WRITER) in (cs.OCC, cs.NBCC)


def validate_concurrency(cfg: dict) -> cs.Settings:
    """Refuse, with one line, a concurrency mode or ordering-value layout the pipeline cannot run."""
    mode = cfg.get("concurrency_mode", cs.SINGLE_WRITER)
    if mode not in cs.MODES:
        raise UserError(f"--concurrency-mode: {mode!r}; expected one of {', '.join(cs.MODES)}")
    stride, phase = cfg.get("ts_stride", 1), cfg.get("ts_phase", 0)
    if not isinstance(stride, int) or not 1 <= stride <= 1000:
        raise UserError(f"--ts-stride: {stride}; expected 1..1000")
    if not isinstance(phase, int) or not 0 <= phase < stride:
        raise UserError(f"--ts-phase: {phase}; expected 0..{stride - 1} (below --ts-stride)")
    try:
        s = cs.validate(settings_of(cfg))
    except cs.SettingsError as exc:
        raise UserError(f"--concurrency-mode {mode}: {exc.rule}: {exc.detail}") from None
    if mode == cs.OCC and cfg["mode"] != "spark-sink":
        raise UserError(f"--concurrency-mode occ: needs --mode spark-sink (an OCC abort must fail the batch before "
                        f"Spark commits it; in {cfg['mode']} mode the instant commits after the batch returned)")
    return s


class OccAbort(RuntimeError):
    """OCC: the model's conflict rule refused the batch's instant (``HoodieWriteConflictException``)."""


#: How many times a run replays a batch OCC aborted before it gives up (stalled).
OCC_MAX_RETRIES = 20


# ------------------------------------------------------------------------------------------------- locks
@contextmanager
def _flock(path: Path, what: str, wait_s: float = TXN_WAIT_S):
    """An exclusive ``flock`` on ``path`` for the ``with`` block (:func:`lakeio.ondisk.mdt_lock.flock_within`)."""
    fd = flock_within(path, wait_s, what)
    try:
        yield fd
    finally:
        os.close(fd)  # drops the lock


def txn_lock(table: Path) -> TxnLock:
    """The table's transaction lock (``TransactionManager``): ``<table>/.hoodie/.aux/hoodie-lab-txn.lock``, the one
    the metadata table's writer and ``hoodie-lab index`` take (re-entrant in the holding thread, so a commit's
    metadata-table update under it does not wait for itself)."""
    return TxnLock(table, wait_s=TXN_WAIT_S)


class SharedTimeFloor:
    """The greatest instant time (ms) any writer of the table generated, in ``.hoodie/.aux``, read and raised
    under its own file lock: :meth:`next_ms` returns a time above it and above ``now_ms``."""

    def __init__(self, table: Path):
        self.path = Path(table) / ".hoodie" / ".aux" / TIME_FLOOR_NAME

    @contextmanager
    def hold(self):
        """Hold the floor's lock; yields (floor_ms, publish) where ``publish(time_str)`` raises the floor."""
        with _flock(self.path.with_name(TIME_FLOOR_NAME + ".lock"), "the shared time floor's lock") as _fd:
            try:
                floor = int(self.path.read_text().strip() or 0)
            except (FileNotFoundError, ValueError):
                floor = 0

            def publish(t: str) -> None:
                tmp = self.path.with_name(f".{TIME_FLOOR_NAME}.{os.getpid()}.tmp")
                tmp.write_text(str(max(floor, to_millis(t))))
                os.replace(tmp, self.path)

            yield floor, publish


# ------------------------------------------------------------------------------------- the conflict check
def timeline_view(writer) -> list[rules.WriteSummary]:
    """The table's timeline on disk as conflict resolution sees it (``ConcurrentOperation``): every completed
    write or compaction with the file groups of its commit metadata, every pending compaction with its plan's
    file groups, every other pending write with none (unknown before it commits)."""
    from lakeio.ondisk.reader import read_table

    t = read_table(writer.base_path)
    out = []
    for i in t.timeline.instants():
        rt, action = i.requested_time, i.action.value
        if i.is_completed:
            md = t.commit_metadata.get(rt) or {}
            fgs = {(s.get("partitionPath") or p, s.get("fileId"))
                   for p, ss in (md.get("partitionToWriteStats") or {}).items() for s in ss or ()}
            op = rules.COMPACT if action == rules.COMPACTION else str(md.get("operationType") or "upsert").lower()
            out.append(rules.WriteSummary(rt, action, op, frozenset(fgs), state=rules.COMPLETED,
                                          completion=i.completion_time))
        elif action == rules.COMPACTION:
            fgs = {(op.get("partitionPath") or "", op["fileId"]) for op in t.compaction_plans.get(rt, ())}
            out.append(rules.WriteSummary(rt, action, rules.COMPACT, frozenset(fgs), state=i.state.label))
        else:
            out.append(rules.WriteSummary(rt, action, rules.UPSERT, frozenset(), state=i.state.label))
    return out


def check_conflicts(cfg: dict, writer, instant: str, result) -> str | None:
    """``TransactionUtils#resolveWriteConflictIfAny`` for the instant about to complete (call under
    :func:`txn_lock`, after ``writer.refresh()``): the model's rule
    (:func:`model.concurrency.rules.resolve_write_conflicts`) over the timeline on disk; ``None``: commit.
    Under NBCC an upsert is never checked (``needResolveWriteConflict``)."""
    fgs = frozenset((s["partitionPath"], s["fileId"]) for ss in (result.partition_to_write_stats
                                                               if result is not None else {}).values() for s in ss)
    mine = rules.WriteSummary(instant, writer.action.value, rules.UPSERT, fgs)
    return rules.resolve_write_conflicts(settings_of(cfg), timeline_view(writer), mine)


def new_group_collisions(base_path: Path, instant: str, result) -> list[str]:
    """File groups this write created (a new base file: a bucket's first write) that already hold a base file
    of another instant on disk: another writer created the same bucket's group at the same time. Two base files
    would make two slices and the older one's records would vanish from reads; Hudi's NBCC writes a new bucket's
    records as a log-only group instead, which this writer (and hudi-rs) does not do -- so the commit refuses."""
    from model import filenames as fn

    new = {(s["partitionPath"], s["fileId"]) for s in (result.write_stats if result is not None else ())
           if s.get("prevCommit") in (None, "null") and str(s.get("path", "")).endswith(".parquet")}
    out = []
    for part in sorted({p for p, _ in new}):
        d = Path(base_path) / part if part else Path(base_path)
        for name in sorted(os.listdir(d)) if d.is_dir() else ():
            if name.startswith(".") or not name.endswith(".parquet"):
                continue
            f = fn.parse_data_file(name, part)
            if isinstance(f, fn.BaseFile) and (part, f.file_id) in new and f.instant_time != instant:
                out.append(f"{part}/{f.file_id} (base files of {instant} and {f.instant_time})")
    return out


__all__ = ["new_group_collisions", "OccAbort", "OCC_MAX_RETRIES", "settings_of", "is_multi_writer", "validate_concurrency", "txn_lock", "SharedTimeFloor",
           "timeline_view", "check_conflicts", "LOCK_PROVIDER"]
