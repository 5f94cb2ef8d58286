"""Driver-side coordinators: the writer-coordinator protocol of :mod:`model.protocol` mapped onto Spark.

The pipeline does not restate the protocol's rules: it drives one :class:`engine.System` (``parallelism``
writer tasks: the Spark tasks of each batch's write job, :mod:`pipeline.executor`) with the events that happen
in the Spark job, and
makes the real table follow the model's decisions. The configuration and the mapping Spark step -> model events
are :mod:`engine.pipeline_script`'s (shared with the SimPy twin, :mod:`sim.pipeline_twin`); the coordinator applies
each event it hands back, logging it first. Mapping (Spark batch n, model checkpoint c)::

    foreachBatch(n) starts       complete-checkpoint (if Spark wrote commits/n-1 since) + deliver-ack(c-1)
                                 -> the model commits every key < c-1; the disk commit follows
    the batch                    ingest(t) once per task t: one model record = task t's share of the batch
    end of the batch's input     trigger-checkpoint (checkpoint c; the coordinator snapshots first)
    the barrier needs an instant request-instant(t) per task -> the model's coordinator grants the key's one
                                 instant (or, blocking mode, refuses while an instant is uncommitted --
                                 never happens here, since the ack that commits it was delivered first)
                                 -> disk: requested + inflight
    write the data               the Spark write job: each task t writes its buckets' files (markers
                                 first) and returns its write statuses; the driver reconciles the markers
                                 and persists the write metadata (every task's statuses)
    snapshot                     snapshot-task(t) per task: write-metadata event to the coordinator
    foreachBatch returns         Spark commits batch n (checkpoint/commits/n) = checkpoint c complete
    driver killed, restarted     complete-checkpoint if Spark committed the batch, then crash-coordinator:
                                 restore from the last completed checkpoint, recommit what it covers
    lazy policy                  clean when enabled: the model rolls back dead pending instants

Checkpoint ids are the model's (Flink's ids start at 1 and are never reused; an aborted checkpoint's id is
skipped), so checkpoint c is batch n's checkpoint as recorded in ``events.jsonl`` (``c = n + 1`` until the
first crash). The instant's checkpoint key (the writer's last known checkpoint id, Flink's
``requestInstantTime(checkpointId)``) goes into commit metadata as ``flink_checkpoint_id``.

Modes: ``blocking`` (ProtocolConfig mode blocking, EAGER failed-writes policy: batch n+1 requests its
instant only after instant n committed, the commit runs on the batch thread), ``async`` (mode async, LAZY:
batch n+1 gets its own instant at once; a committer thread completes acked instants on disk in ascending
order while the batch writes), ``spark-sink`` (Hudi's Spark streaming sink, ``HoodieStreamingSink``: the
checkpoint completes and the instant commits inside the batch, with the batch id in commit metadata under
``_hudi_streaming_sink_checkpoint``; a replayed batch whose id is at or below the latest committed one is
skipped -- ``canSkipBatch``).

Write-ahead rule: a model event is appended to ``trace.jsonl`` and fsynced *before* its effect on disk; the
data write and the write-metadata file come *before* the snapshot event. :meth:`PipelineCoordinator.sync`
brings the disk timeline to the model's (start, commit, roll back) and is idempotent, so after a SIGKILL
anywhere the restarted driver replays the trace into a fresh System (:meth:`model.trace.Trace.replay` with
:data:`engine.machine.ENGINE`, with the recorded times) and re-runs
``sync`` before it applies the crash. Times: requested and completion times come from
:class:`WallTrueTime` -- the model's TrueTime generator over the wall clock (in-process lock, 1 ms skew
wait) -- recorded in ``times.jsonl`` so a replay reproduces them exactly.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from pathlib import Path

import pyarrow as pa

from lakeio.errors import UserError
from lakeio.ondisk import history, mdt
from model.instant import State, to_millis
from model.protocol import CrashCoordinator, ProtocolConfig
from engine import System
from engine import pipeline_script as script
from engine.machine import ENGINE
from model import trace as mtrace
from model.truetime import SkewAdjustingTimeGenerator, TimeGeneratorConfig
from pipeline import multiwriter
from pipeline import source as src
from pipeline.crash import KillSwitch
from lakeio.hudiformat import markers
from pipeline.run_dir import (RunDir, TableLock, append_line, atomic_write_json, input_batches, read_lines,
                              repair_tail)

CHECKPOINT_KEY = "flink_checkpoint_id"           # StreamerUtil.FLINK_CHECKPOINT_ID
SINK_CHECKPOINT_KEY = "_hudi_streaming_sink_checkpoint"  # HoodieStreamingSink.SINK_CHECKPOINT_KEY
TABLE_NAME = "hoodie_lab_pipeline"
TASK = script.TASK
MAX_RECORDS = 1_000_000  # the model's bound on records per split


def protocol_config(cfg: dict, batches: int) -> ProtocolConfig:
    """The model configuration of a run: ``parallelism`` writer tasks (the Spark tasks that write a batch), no
    bound a real run could hit, the driver crash (``coordinator-crash``) as the only fault.

    A model record is one writer task's share of one micro-batch (the rows the bucket index routes to it,
    possibly none): task t ingests one record per batch, so a split holds ``batches`` records and the model's
    offset of every task is the batch id; :func:`pipeline.diff` expands a committed (task, offset) to those
    input rows. (The protocol's unit is a task's write between two checkpoints; one model step per row would
    cost more than the write.)"""
    if batches > MAX_RECORDS:
        raise UserError(f"--batches: {batches}; the pipeline's model bounds a run to {MAX_RECORDS} batches")
    return script.protocol_config(cfg["mode"], batches, table_version=cfg["table_version"],
                                  table_type=cfg["table_type"], parallelism=cfg.get("parallelism", 1))


def check_table_path(table: Path, table_version: int) -> None:
    """Refuse, with one line, a table path the pipeline must not write: a non-Hudi folder with files in it,
    a Hudi table of a version the pipeline does not write (or not the run's), another table (name, type and
    keys are checked again by the writer), or a table a live pipeline holds the lock of."""
    table = Path(table)
    props = table / ".hoodie" / "hoodie.properties"
    if props.exists():
        from lakeio.ondisk.properties import read_properties
        p = read_properties(props)
        v = p.get("hoodie.table.version", "")
        if v not in ("6", "8"):
            raise UserError(f"{table}: table version {v or '?'}; the pipeline writes table versions 8 and 6")
        if int(v) != table_version:
            raise UserError(f"{table}: table version {v}, but the run writes version {table_version}")
        name = p.get("hoodie.table.name")
        if name != TABLE_NAME:
            raise UserError(f"{table}: holds a different table ({name!r}; the pipeline writes {TABLE_NAME!r})")
        TableLock(table).check()
    elif table.exists() and (not table.is_dir() or any(x.name != ".hoodie" for x in table.iterdir())):
        raise UserError(f"{table}: exists and is neither empty nor a Hudi table")


# -------------------------------------------------------------------------------------------------- times
class WallTrueTime:
    """The model's TrueTime generator (``SkewAdjustingTimeGenerator``, in-process lock: 1 ms skew wait) over
    the wall clock, as a :class:`model.protocol.TimeSource`.

    Every time is appended to ``times.jsonl`` (``{"t": ..., "model": bool}``) before it is used. Model times
    (``next_time``) are replayed from that file first, so replaying the trace reproduces every instant time;
    times the model does not ask for (the rollback instants the disk needs, :meth:`fresh`) are recorded with
    ``model: false``. Times keep increasing across restarts: a new generator never goes below the last
    recorded time.
    """

    def __init__(self, path: Path | None, live: bool = True, shared=None):
        self.path = path
        self.live = live
        self.shared = shared  # multi-writer: pipeline.multiwriter.SharedTimeFloor (TrueTime across writers)
        self.gen = SkewAdjustingTimeGenerator(TimeGeneratorConfig.in_process(), epoch_ms=0)
        rows = read_lines(path) if path is not None else []
        void = {t for r in rows for t in r.get("void", ())}
        self.replay = [r["t"] for r in rows if r.get("model") and r["t"] not in void]
        self.pos = 0
        self.last_ms = max((to_millis(r["t"]) for r in rows if "t" in r), default=0)
        self.lock = threading.Lock()

    def next_time(self, kind: str = "requested") -> str:
        """A requested or completion time (``kind``; both from the one generator, as TrueTime does)."""
        with self.lock:
            if self.pos < len(self.replay):
                self.pos += 1
                return self.replay[self.pos - 1]
            if not self.live:
                raise RuntimeError("the trace asks for more instant times than the run recorded")
            self.pos += 1
            return self._generate(model=True)

    def void_unused(self) -> None:
        """After the trace is replayed: model times recorded by a killed driver whose events never reached
        the trace are void (the disk never used them); a replay must not hand them out again."""
        unused = self.replay[self.pos:]
        if unused and self.path is not None:
            append_line(self.path, {"void": unused})
        del self.replay[self.pos:]

    def fresh(self) -> str:
        with self.lock:
            return self._generate(model=False)

    def _generate(self, model: bool) -> str:
        if self.shared is not None:  # multi-writer: above every time any writer of the table generated
            with self.shared.hold() as (floor, publish):
                t = self._generate_above(model, floor)
                publish(t)
                return t
        return self._generate_above(model, 0)

    def _generate_above(self, model: bool, floor_ms: int) -> str:
        now = max(int(time.time() * 1000), self.last_ms + 1, floor_ms + 1)
        rec = self.gen.generate("driver", now)
        wait = rec.released_at - now
        if wait > 0:
            time.sleep(wait / 1000)  # the skew wait, for real
        self.last_ms = to_millis(rec.time)
        if self.path is not None:
            append_line(self.path, {"t": rec.time, "model": model})
        return rec.time

    def copy(self):
        return self


# -------------------------------------------------------------------------------------------------- trace
def trace_header(pcfg: ProtocolConfig, seed: int) -> dict:
    return mtrace.header(pcfg, seed, "pipeline")


def trace_event_line(step: int, ev) -> str:
    return mtrace.dumps(mtrace.event_record(step, ev))


def read_trace(path: Path) -> mtrace.Trace | None:
    """A pipeline trace (model/trace.py format), None when there is none yet. A bad trace is bad input."""
    if not Path(path).exists() or not Path(path).read_text().strip():
        return None
    try:
        return mtrace.parse_trace(Path(path).read_text())
    except mtrace.TraceError as exc:
        raise UserError(f"{path}: {exc}") from None


def replay_system(rd: RunDir, live_times: bool = False) -> tuple[System, list, WallTrueTime]:
    """A System with the run's trace applied, times from ``times.jsonl`` (the diff uses this too). An event
    the model refuses raises :class:`model.trace.TraceError` naming its line."""
    tr = read_trace(rd.trace)
    if tr is None:
        raise UserError(f"{rd.trace}: no trace")
    times = WallTrueTime(rd.root / "times.jsonl", live=live_times)
    system = tr.replay(ENGINE, time_source=times)
    return system, tr.events, times


# ------------------------------------------------------------------------------------------- coordinator
def read_task_faults(rd: RunDir) -> list[dict]:
    """Injected writer-task faults (tests): ``RUN_DIR/crash/task_faults.json``, a list of ``{"kind", "batch",
    "task"}`` (:data:`pipeline.executor.FAULT_KINDS`); none when the file is absent."""
    from pipeline.executor import FAULT_KINDS

    p = rd.crash / "task_faults.json"
    if not p.exists():
        return []
    try:
        faults = json.loads(p.read_text())
        ok = isinstance(faults, list) and all(isinstance(f, dict) and f.get("kind") in FAULT_KINDS
                                              and isinstance(f.get("batch"), int) and isinstance(f.get("task"), int)
                                              for f in faults)
    except ValueError:
        ok = False
    if not ok:
        raise UserError(f"{p}: expected a JSON list of {{kind: {'|'.join(FAULT_KINDS)}, batch: int, task: int}}")
    return faults


class PipelineCoordinator:
    """One driver's coordinator over a run dir (see the module docstring)."""

    def __init__(self, rd: RunDir, cfg: dict, progress=print):
        self.rd = rd
        self.cfg = cfg
        self.mode = cfg["mode"]
        self.progress = progress or (lambda s: None)
        self.latency_s = cfg.get("commit_latency_ms", 0) / 1000
        self.kill = KillSwitch(rd.root)
        self.kill.on_fire = lambda point: rd.log("crash", point=point, pid=_pid())
        self.lock = TableLock(rd.table)
        self.multi = multiwriter.is_multi_writer(cfg)  # several pipelines on the table (pipeline.multiwriter)
        self._trace_buf: list[str] = []
        self._committer: threading.Thread | None = None
        self._queue: queue.Queue = queue.Queue()
        self._enqueued: set[str] = set()
        self._error: BaseException | None = None
        self.batch_stats: list[dict] = []
        self.checkpoint_batch: dict[int, int] = {}
        self.skipped: list[int] = []
        self.task_faults = read_task_faults(rd)
        self.occ_aborts = 0
        # instant -> the record delegates its tasks returned (an Arrow table, kept until the instant's commit or
        # rollback; not persisted: a commit redone after a restart reads the keys from its files)
        self._delegates: dict[str, pa.Table] = {}

    # ------------------------------------------------------------------------------------------ set-up
    def open(self) -> None:
        self._check_table()
        self.lock.acquire(shared=self.multi)
        try:
            self._open()
        except BaseException:
            self.lock.release()
            raise

    def _check_table(self) -> None:
        check_table_path(self.rd.table, self.cfg["table_version"])

    def _open(self) -> None:
        from lakeio.hudiformat.table import HudiTableWriter

        self.batches = input_batches(self.rd)  # the driver never reads the records themselves
        self.parallelism = self.cfg.get("parallelism", 1)
        self.pcfg = protocol_config(self.cfg, self.batches)
        # the run's columns (user data: --record-key etc.; the writer tasks get the same, executor.write_fields)
        from pipeline.executor import write_fields
        fields = write_fields(self.cfg)
        extra = {"delete_field": fields["delete_field"]} if fields["delete_field"] else {}
        self.writer = HudiTableWriter(self.rd.table, self.cfg["table_type"], self.cfg["table_version"],
                                      record_key=fields["record_key"], ordering_field=fields["ordering_field"],
                                      partition_field=fields["partition_field"], table_name=TABLE_NAME, **extra)
        for log in (self.rd.trace, self.rd.events, self.rd.root / "times.jsonl"):
            repair_tail(log)  # a kill mid-append leaves a torn last line: cut it before appending again
        tr = read_trace(self.rd.trace)
        self.times = WallTrueTime(self.rd.root / "times.jsonl",
                                  shared=multiwriter.SharedTimeFloor(self.rd.table) if self.multi else None)
        if tr is None:
            append_line(self.rd.trace, trace_header(self.pcfg, self.cfg["seed"]))
        elif tr.config != self.pcfg:
            raise UserError(f"{self.rd.trace}: the trace was written for another configuration")
        # the run's own configuration and seed (a trace it wrote carries the same), the trace's events
        run = mtrace.Trace(self.pcfg, self.cfg["seed"], "pipeline", tr.header if tr else {},
                           tr.events if tr else [], tr.lines if tr else [])
        self.system = run.replay(ENGINE, time_source=self.times)
        events = run.events
        self.times.void_unused()
        self.step = len(events)
        self._load_events()
        if self.mode == "async" and not self.multi:  # multi-writer: commits inside the transaction lock
            self._committer = threading.Thread(target=self._commit_loop, name="hoodie-lab-committer", daemon=True)
            self._committer.start()
        crashed = bool(events) and not self._finished_cleanly
        self.rd.log("start", pid=_pid(), restart=bool(events), crashed=crashed,
                    spark_committed=self.rd.spark_committed_batches()[-1:] or None)
        if crashed:
            self._recover()
        self.sync()
        self._clean()

    def _load_events(self) -> None:
        self._finished_cleanly = False
        for e in self.rd.read_events():
            if e["kind"] == "checkpoint":
                self.checkpoint_batch[e["checkpoint"]] = e["batch"]
            elif e["kind"] == "start":
                self._finished_cleanly = False
            elif e["kind"] == "finished":
                self._finished_cleanly = True

    def _recover(self) -> None:
        """The previous driver died. What Spark made durable first (its commit of a batch completes that
        batch's checkpoint), then the crash: restore from the last completed checkpoint."""
        self._complete_spark_checkpoint()
        self._apply(CrashCoordinator())
        self._flush_trace()
        self.progress(f"recovered: restored from checkpoint "
                      f"{self.system.last_completed.id if self.system.last_completed else '-'}; "
                      f"pending instants {self.system.pending_instants()}")

    # ---------------------------------------------------------------------------------------- the model
    def _apply(self, ev) -> None:
        self.system.apply(ev)
        self.step += 1
        self._trace_buf.append(trace_event_line(self.step, ev))

    def _flush_trace(self) -> None:
        if not self._trace_buf:
            return
        append_line(self.rd.trace, "\n".join(self._trace_buf))
        self._trace_buf.clear()

    def _spark_committed(self, checkpoint: int) -> bool:
        """Spark committed the batch of ``checkpoint`` (its ``commits/<batch>`` file exists)."""
        batch = self.checkpoint_batch.get(checkpoint)
        return batch is not None and batch in set(self.rd.spark_committed_batches())

    def _complete_spark_checkpoint(self) -> None:
        script.complete_checkpoint(self.system, self._apply, committed=self._spark_committed)

    def _settle(self) -> None:
        """The disk follows the model: the trace first (write-ahead), then the timeline."""
        self._flush_trace()
        self.sync()

    def _clean(self) -> None:
        if script.clean(self.system, self._apply):
            self._settle()

    def deliver_spark_acks(self) -> None:
        """Spark committed batch n => its checkpoint completes and the ack reaches the coordinator; then a
        clean (:func:`engine.pipeline_script.batch_start`)."""
        self._raise_committer_error()
        if self.multi:  # the model's commit (completion time) and the completed file: one lock section
            with multiwriter.txn_lock(self.rd.table):
                self.writer.refresh()
                script.batch_start(self.system, self._apply, committed=self._spark_committed, settle=self._settle)
            return
        script.batch_start(self.system, self._apply, committed=self._spark_committed, settle=self._settle)

    # ------------------------------------------------------------------------------------------ a batch
    def on_batch(self, batch_id: int, df, started: float | None = None, split=None) -> None:
        """Write one micro-batch: ``df`` is Spark's DataFrame of the batch's raw lines (never collected: the
        writer tasks of :mod:`pipeline.executor` parse, route and write it); ``started``: when foreachBatch was
        entered, for the batch latency; ``split``: the batch split the tasks run (:func:`pipeline.job.split_batch`)."""
        t0 = started if started is not None else time.monotonic()
        self.kill("batch.start")
        self._raise_committer_error()
        if self.mode == "spark-sink" and self._sink_can_skip(batch_id):
            self.skipped.append(batch_id)
            self.rd.log("skip", batch=batch_id, reason="batch id already in the latest commit's metadata")
            self.progress(f"batch {batch_id}: skipped (already committed by the sink)")
            return
        self._check_batch(batch_id)
        w = self.system.writers[TASK]
        start, key = w.offset, w.checkpoint_id

        def on_checkpoint(ckp: int) -> None:
            self.checkpoint_batch[ckp] = batch_id
            self.rd.log("checkpoint", checkpoint=ckp, batch=batch_id)

        # one model record per writer task: its share of the batch (see protocol_config)
        script.batch_records(self.system, self._apply, [1] * self.parallelism, on_checkpoint=on_checkpoint)
        ckp = self.system.pending_checkpoint.id
        instant = self.system.writers[TASK].instant
        if any(x.instant != instant for x in self.system.writers):
            raise RuntimeError(f"batch {batch_id}: the writer tasks were granted different instants "
                               f"{[x.instant for x in self.system.writers]}")
        self._flush_trace()
        self.sync()
        self.kill("write.instant-started")
        statuses = self._write_job(batch_id, instant, df, split)
        self.kill("write.files-written")
        result = self._result(instant, statuses)
        got = self._task_delegates(statuses)
        if got is not None:
            self._delegates[instant] = got
        # the successful attempts' statuses are known: files of failed or duplicate attempts go now (the commit
        # reconciles again: an attempt Spark killed may still have been writing)
        reconciled = markers.reconcile_against_markers(self.rd.table, self.writer.hoodie_dir, instant,
                                                       frozenset(result.files) if result else frozenset())
        records = sum(r["records"] for r in statuses)
        quarantined = sum(r["quarantined"] for r in statuses)
        atomic_write_json(self._writemeta_path(instant), {
            "batch": batch_id, "checkpoint": ckp, "key": key, "instant": instant, "start": start,
            "end": start + 1, "records": records, "quarantined": quarantined,
            "tasks": [{k: r[k] for k in ("task", "attempt", "token", "records", "quarantined")} | {
                "files": [x["path"] for x in r["stats"]]} for r in statuses],
            "reconciled": reconciled, "result": result.to_dict() if result is not None else None})
        self.kill("writemeta.persisted")
        if self.multi and self.mode == "spark-sink":  # multi-writer: check + commit in one lock section
            with multiwriter.txn_lock(self.rd.table):
                self.writer.refresh()
                self._occ_check(batch_id, instant, result)  # OCC: raises OccAbort (the batch fails, is retried)
                script.after_write(self.system, self._apply, self.mode)
                self._flush_trace()
                self.sync()
            self.kill("sink.after-commit")
            self._clean()
        else:
            script.after_write(self.system, self._apply, self.mode)
            self._flush_trace()
        if self.mode == "spark-sink" and not self.multi:  # Hudi's streaming sink commits inside the batch
            self.sync()
            self.kill("sink.after-commit")
            self._clean()
        stat = {"batch": batch_id, "checkpoint": ckp, "instant": instant, "records": records,
                "quarantined": quarantined, "seconds": time.monotonic() - t0,
                "attempts": [r["attempt"] for r in statuses], "reconciled": len(reconciled)}
        self.batch_stats.append(stat)
        files = len(result.write_stats) if result is not None else 0
        retried = [r["task"] for r in statuses if r["attempt"] > 0]
        self.progress(f"batch {batch_id}: checkpoint {ckp} instant {instant} records {records} "
                      f"files {files} quarantined {quarantined} tasks {self.parallelism}"
                      + (f" retried {retried}" if retried else "")
                      + (f" reconciled {len(reconciled)}" if reconciled else "") + f" ({stat['seconds']:.2f} s)")

    def _occ_check(self, batch_id: int, instant: str, result) -> None:
        """OCC (under the transaction lock, before the model commits): the model's conflict rule over the timeline
        on disk; a conflict aborts the batch (:class:`pipeline.multiwriter.OccAbort`): Spark does not commit it,
        the restarted query replays it and the recovered model rolls the instant back and grants a new one."""
        if self.cfg.get("concurrency_mode") != "occ":
            return
        why = multiwriter.check_conflicts(self.cfg, self.writer, instant, result)
        fgs = sorted({f"{s['partitionPath']}/{s['fileId']}" for s in (result.write_stats if result else ())})
        self.rd.log("occ-check", batch=batch_id, instant=instant, file_groups=fgs, at=self.times.fresh(),
                    conflict=why)
        if why is not None:
            self.occ_aborts += 1
            raise multiwriter.OccAbort(f"batch {batch_id}: instant {instant} aborted: {why}")

    def _write_job(self, batch_id: int, instant: str, df, split) -> list[dict]:
        """The batch's Spark write job (:func:`pipeline.executor.write_batch`): the tasks' write statuses."""
        from pipeline import executor

        if split is None:
            raise RuntimeError(f"batch {batch_id}: no batch split given (pipeline.job.split_batch)")
        fields = executor.write_fields(self.cfg)
        kill_mid = None
        if self.kill.spec is not None and self.kill.spec.point == "write.mid":
            kill_mid = {"hit": self.kill.spec.hit, "driver_pid": _pid(), "crash_dir": str(self.rd.crash),
                        "events": str(self.rd.events)}
            self.rd.crash.mkdir(parents=True, exist_ok=True)
        spec = executor.make_spec(self.cfg, base_path=self.rd.table, table_name=TABLE_NAME, instant=instant,
                                  batch=batch_id, own_pending=self._own_pending(instant),
                                  quarantine_dir=self.rd.quarantine, schema=executor.record_schema(self.cfg),
                                  faults=self.task_faults, kill_mid=kill_mid,
                                  record_delegates=self._wants_delegates(), **fields)
        return executor.write_batch(df, spec, split=split)

    def _wants_delegates(self) -> bool:
        """The tasks return their record delegates while a commit writes the record index (the table keeps an
        MDT whose ``record_index`` is available or inflight: :func:`model.mdt.partitions.writer_partitions`);
        otherwise nothing is collected. An index scheduled after this check finds no delegates at the commit,
        which then reads the keys from the files (:func:`lakeio.ondisk.mdt.apply_commit`)."""
        from model.mdt.partitions import RECORD_INDEX, writer_partitions

        if not self.cfg.get("metadata", True) or not mdt.enabled_for(self.rd.table, self.cfg["table_version"]):
            return False
        return RECORD_INDEX in writer_partitions(mdt.partition_states(self.rd.table))

    @staticmethod
    def _task_delegates(statuses: list[dict]):
        """The batch's record delegates, the tasks' in task order (:func:`lakeio.hudiformat.delegates.concat`),
        or None when a task returned none."""
        if not statuses or any(r.get("delegates") is None for r in statuses):
            return None
        from lakeio.hudiformat import delegates

        return delegates.concat(delegates.from_bytes(r["delegates"]) for r in statuses)

    def _own_pending(self, instant: str) -> list[str]:
        """Pending instants on disk whose data this job wrote and the model has not rolled back (written by
        earlier batches, their commit not yet on disk: the async committer's queue): the tasks' views count
        their files, as a writer counts its own uncommitted writes (:mod:`lakeio.hudiformat.fsview`)."""
        model_tl = self.system.table.timeline
        action = self.writer.action
        return sorted(t for t, a, _ in self.writer.pending_instants()
                      if a == action.value and t != instant and model_tl.get(t, action) is not None
                      and self._writemeta_path(t).exists())

    def _result(self, instant: str, statuses: list[dict]):
        """The instant's ``WriteResult``: every task's write stats (task order). A batch no task wrote (no
        well-formed record: every line of a user's file malformed, an unreadable file) is an empty commit that
        still carries the table schema, as ``BaseHoodieWriteClient#commitStats`` always puts the writer schema
        (``HoodieCommitMetadata.SCHEMA_KEY``) in the metadata: readers (hudi-rs) resolve the latest schema from
        the latest commit. The driver's writer never writes data, so that schema is the run's
        (:func:`pipeline.executor.record_schema`), as the first writer task derives it."""
        from lakeio.hudiformat.schema import avro_schema_json, data_schema
        from lakeio.hudiformat.table import WriteResult
        from pipeline.executor import record_schema

        stats = [s for r in statuses for s in r["stats"]]
        schema = next((r["schema"] for r in statuses if r["schema"]), None)
        if schema is None:
            schema = avro_schema_json(TABLE_NAME, data_schema(record_schema(self.cfg)), with_meta=False)
        return WriteResult(instant, self.writer.action.value, "UPSERT", schema, stats)

    def _check_batch(self, batch_id: int) -> None:
        """The batch is an input file and every task's split is at the batch's offset (one model record per
        task per batch): else the model and Spark disagree about what was replayed (a bug, not bad input)."""
        if batch_id >= self.batches:
            raise RuntimeError(f"batch {batch_id}: no such input file")
        offsets = [w.offset for w in self.system.writers]
        if any(o != batch_id for o in offsets):
            raise RuntimeError(f"batch {batch_id}: the model's splits are at offsets {offsets}, the batch is "
                               f"{batch_id} (Spark and the model disagree on what to replay)")

    def _sink_can_skip(self, batch_id: int) -> bool:
        """``HoodieStreamingSink.canSkipBatch``: the latest commit carrying a sink checkpoint names a batch id
        >= this one."""
        from lakeio.ondisk.metadata import decode_commit_metadata
        from model import filenames as fn

        done = sorted((i for i in self.writer.timeline.completed((self.writer.action,))),
                      key=lambda i: i.completion_time or "", reverse=True)
        for inst in done:
            name = fn.timeline_file_name(inst.requested_time, inst.action, State.COMPLETED, inst.completion_time,
                                         self.writer.layout)
            md = decode_commit_metadata((self.writer.timeline_dir / name).read_bytes(), name) or {}
            value = (md.get("extraMetadata") or {}).get(SINK_CHECKPOINT_KEY)
            ident = f"hoodie-lab-{self.rd.root.name}"
            # this writer's checkpoint identifier only (hoodie.datasource.write.streaming.checkpoint.identifier):
            # another writer's sink commits on the same table say nothing about this query's batches
            mine = [int(k) for k, v in json.loads(value).items() if v == ident] if value else []
            if mine:
                return max(mine) >= batch_id
        return False

    # -------------------------------------------------------------------------------------- disk = model
    def _writemeta_path(self, instant: str) -> Path:
        return self.rd.writemeta / f"{instant}.json"

    def _writemeta(self, instant: str) -> dict | None:
        p = self._writemeta_path(instant)
        return json.loads(p.read_text()) if p.exists() else None

    def sync(self) -> None:
        """Make the table's timeline what the model's is: roll back what the model rolled back, start what
        it started, complete what it completed (ascending completion order; async mode: on the committer
        thread). Idempotent: safe to re-run after a crash at any point."""
        model_tl = self.system.table.timeline
        action = self.writer.action
        disk_pending = {t for t, a, _ in self.writer.pending_instants() if a == action.value}
        disk_done = {t for t, _, _ in self.writer.completed_instants()}
        if self.cfg.get("archival"):  # archived instants are completed instants too
            disk_done |= history.archived_times(self.rd.table)
        # 1. roll back (newest first: a later write may have touched the same file groups)
        gone = [t for t in disk_pending if model_tl.get(t, action) is None]
        if self.multi:  # LAZY across writers: only this run's own instants (never another writer's inflight)
            own = {e["instant"] for e in self.rd.read_events() if e["kind"] == "started"}
            gone = [t for t in gone if t in own]
        for t in sorted(gone, reverse=True):
            self._disk_rollback(t)
        # 2. start
        for inst in model_tl.pending((action,)):
            t = inst.requested_time
            if t not in disk_pending and t not in disk_done:
                self._sleep_latency()
                self.writer.start(t)
                self.rd.log("started", instant=t)
        # 3. commit
        todo = [i for i in model_tl.completed((action,))
                if i.requested_time not in disk_done and i.requested_time not in self._enqueued]
        for inst in sorted(todo, key=lambda i: i.completion_time):
            if self._committer is not None:
                self._enqueued.add(inst.requested_time)
                self._queue.put(inst)
            else:
                self._disk_commit(inst)

    def _commit_key(self, instant: str) -> int | None:
        for t, key, _how in reversed(self.system.table.commit_log):
            if t == instant:
                return key
        return None

    def _disk_commit(self, inst) -> None:
        t = inst.requested_time
        wm = self._writemeta(t)
        if wm is None:
            raise RuntimeError(f"commit {t}: the model committed it but no write metadata was persisted")
        from lakeio.hudiformat.table import WriteResult
        result = WriteResult.from_dict(wm["result"]) if wm["result"] else None
        key = self._commit_key(t)
        extra = {CHECKPOINT_KEY: str(key if key is not None else wm["key"])}
        if self.mode == "spark-sink":
            extra[SINK_CHECKPOINT_KEY] = json.dumps({str(wm["batch"]): f"hoodie-lab-{self.rd.root.name}"})
        if self.multi:  # under the transaction lock (deliver_spark_acks): the model's conflict rule decides
            why = multiwriter.check_conflicts(self.cfg, self.writer, t, result)
            if why is not None:
                raise RuntimeError(f"commit {t}: conflict ({why}); the pipeline does not abort instants")
            self.rd.log("conflict-check", instant=t, mode=self.cfg["concurrency_mode"], conflict=None)
            both = multiwriter.new_group_collisions(self.rd.table, t, result)
            if both:
                raise RuntimeError(f"commit {t}: bucket file group(s) created by two writers at once: {', '.join(both)}; "
                                   "create every bucket first (a single-writer run), see README 'Two writers'")
        self.kill("commit.before-complete")
        self._sleep_latency()
        with mdt.committing(self.rd.table, self.cfg["table_version"], t, inst.completion_time,  # MDT first
                            result.write_stats if result else [], self.cfg.get("metadata", True),
                            delegates=self._delegates.get(t)):
            self.writer.commit(t, inst.completion_time, result, extra_metadata=extra)
        self._delegates.pop(t, None)
        self.kill("commit.after-complete")
        history.archive_after_commit(self.rd.table, self.cfg.get("archival"))  # post-commit archival, if set
        self.rd.log("committed", instant=t, completion=inst.completion_time, key=key, batch=wm["batch"])

    def _disk_rollback(self, t: str) -> None:
        """Roll back a pending instant the model no longer has, with the same rollback instant after a
        restart if an earlier attempt started one."""
        prior = [e for e in self.rd.read_events() if e["kind"] == "rollback-start" and e["target"] == t]
        if prior:
            rb, rbc = prior[-1]["rollback"], prior[-1]["completion"]
        else:
            rb = self.times.fresh()
            rbc = self.times.fresh()
            self.rd.log("rollback-start", target=t, rollback=rb, completion=rbc)
        self._sleep_latency()
        mdt.rolling_back(self.rd.table, self.cfg["table_version"], t, rb, rbc, self.cfg.get("metadata", True))
        self.writer.rollback(t, rb, rbc)
        self._delegates.pop(t, None)
        self.rd.log("rolled-back", target=t, rollback=rb)
        p = self._writemeta_path(t)
        p.unlink(missing_ok=True)

    def _sleep_latency(self) -> None:
        if self.latency_s:
            time.sleep(self.latency_s)

    # ------------------------------------------------------------------------------------ async committer
    def _commit_loop(self) -> None:
        while True:
            inst = self._queue.get()
            try:
                if inst is None:
                    return
                self.kill("async.commit")
                self._disk_commit(inst)
            except BaseException as exc:  # surfaced on the batch thread
                self._error = exc
            finally:
                self._queue.task_done()

    def _raise_committer_error(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise RuntimeError(f"async committer failed: {err}") from err

    def _drain_committer(self) -> None:
        if self._committer is not None:
            self._queue.join()
        self._raise_committer_error()

    # ------------------------------------------------------------------------------------------ the end
    def finish(self) -> None:
        self.deliver_spark_acks()
        self._drain_committer()
        self.rd.log("finished", pid=_pid(), pending=self.system.pending_instants())

    def summary(self) -> dict:
        lat = [s["seconds"] for s in self.batch_stats]
        return {"batches": len(self.batch_stats), "skipped": list(self.skipped),
                "records": sum(s["records"] for s in self.batch_stats),
                "batch_seconds": lat,
                "commits": [t for t, _k, _h in self.system.table.commit_log],
                "pending": self.system.pending_instants()}

    def close(self) -> None:
        if self._committer is not None:
            self._queue.put(None)
            self._committer.join(timeout=60)
            self._committer = None
        self.lock.release()


def _pid() -> int:
    import os
    return os.getpid()
