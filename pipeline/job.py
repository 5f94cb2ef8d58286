"""The Structured Streaming job: input files -> foreachBatch -> the driver-side coordinator -> a Hudi table.

``prepare_run`` creates a run dir (config, generated inputs); ``run_job`` runs (or resumes, on the same Spark
checkpoint) the streaming query on it:

* source: the file stream source over ``RUN_DIR/input`` reading raw lines (the text source, ``lineSep="\\n"``,
  each line cast to bytes), ``maxFilesPerTrigger=1`` and ``trigger(availableNow=True)`` (deterministic: file i
  is batch i of a fresh run; a restart replays the first batch Spark has not committed, with the same file);
  user data (``--input``): the binary-file source, one row (path, bytes) per input file, judged by
  :func:`pipeline.source.parse_file` in the write job's tasks as the lines are by ``parse_line``;
* sink: ``foreachBatch``. The driver never holds the batch's records: it gets the batch's instant from the
  coordinator (:class:`pipeline.coordinator.PipelineCoordinator`), then one Spark job
  (:mod:`pipeline.executor`) parses each line with :func:`pipeline.source.parse_line` -- the one validation,
  also behind the diff; :func:`split_batch` -- routes the records by the bucket index to ``parallelism``
  writer tasks (Spark tasks), and each task writes its file groups' data files and its malformed lines
  (quarantined with a reason) and returns its write statuses; the driver hands them to the model as each
  task's write metadata and commits per the mode;
* acks: Spark's commit of batch n (``checkpoint/commits/n``, written after foreachBatch(n) returned and before
  batch n+1 is planned) is read at the start of every batch and once more when the query has ended;
* stalls: a batch that raises is logged (``batch-failed``, with the error) and the query fails; ``run_job``
  then ends with :class:`pipeline.run_dir.PipelineStalled` (one line, exit 1), as it does when the query ends
  or times out before Spark committed every input file. Only a run that reached its end logs ``finished``.

``python -m pipeline.job RUN_DIR`` runs the job in its own process (the crash harness uses this).
"""

from __future__ import annotations

import functools
import os
import sys
import time
from operator import attrgetter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lakeio.errors import UserError
from pipeline import source as src
from pipeline.multiwriter import OCC_MAX_RETRIES
from pipeline.executor import QUARANTINE_SCHEMA, RECORD_SCHEMA, record_schema, write_fields  # noqa: F401
from pipeline.run_dir import (PipelineStalled, RunDir, atomic_write_bytes, stall_message,  # noqa: F401
                              uncommitted_batches)

MODES = ("blocking", "async", "spark-sink")
TABLE_TYPES = ("cow", "mor")
TABLE_VERSIONS = (8, 6)


def default_config(**overrides) -> dict:
    cfg = {"mode": "async", "table_type": "mor", "table_version": 8, "records": 1000, "batches": 5,
           "seed": 0, "malformed": 0, "update_fraction": 0.3, "commit_latency_ms": 0, "master": None,
           "table": None,
           # input: None = the generated demo source; else the user's files (``--input``), see input_spec()
           "format": None, "input_dir": None, "record_key": None, "partition_field": None, "ordering_field": None,
           "delete_field": None, "input_spec": None}
    cfg.update({"parallelism": 2, "buckets": 4})  # the write path: writer tasks, bucket-index buckets
    # MOR log data blocks: avro (HoodieAvroDataBlock) or parquet (HoodieParquetDataBlock,
    # hoodie.logfile.data.block.format=parquet); jvm_parse: Spark's JVM parses the generated source's lines
    # (pipeline.executor.jvm_parse; off: measured slower than parse_line in the tasks on this machine, README)
    cfg.update({"log_block_format": "avro", "jvm_parse": False})
    # shuffle: how the write job's records cross its shuffle (pipeline.executor): "packed" (parsed once, one
    # Arrow IPC stream per writer task and input batch) or "rows" (a Spark row per record: the generated
    # source's raw lines, judged again by the writer task; user data's parsed columns)
    cfg.update({"shuffle": "packed"})
    # multi-writer (pipeline.multiwriter): hoodie.write.concurrency.mode; ordering values i*stride+phase
    cfg.update({"concurrency_mode": "single_writer", "ts_stride": 1, "ts_phase": 0})
    cfg.update(overrides)
    return cfg


MAX_PARALLELISM = 256  # the model's bound on writer tasks (ProtocolConfig.parallelism)
input_spec = src.input_spec  # the run's user-data spec (None: the generated source)


def validate_config(cfg: dict) -> None:
    if cfg["mode"] not in MODES:
        raise UserError(f"--mode: {cfg['mode']!r}; expected one of {', '.join(MODES)}")
    if cfg["table_type"] not in TABLE_TYPES:
        raise UserError(f"--table-type: {cfg['table_type']!r}; expected cow or mor")
    if cfg["table_version"] not in TABLE_VERSIONS:
        raise UserError(f"--table-version: {cfg['table_version']}; the pipeline writes table versions 8 and 6")
    if not 1 <= cfg["batches"] <= 10_000:
        raise UserError(f"--batches: {cfg['batches']}; expected 1..10000")
    if not 0 <= cfg["records"] <= 10_000_000:
        raise UserError(f"--records: {cfg['records']}; expected 0..10000000")
    if cfg["commit_latency_ms"] < 0:
        raise UserError(f"--commit-latency-ms: {cfg['commit_latency_ms']}; expected >= 0")
    if cfg["malformed"] < 0:
        raise UserError(f"--malformed: {cfg['malformed']}; expected >= 0")
    par, buckets = cfg.get("parallelism", 1), cfg.get("buckets", 1)
    if not isinstance(par, int) or not 1 <= par <= MAX_PARALLELISM:
        raise UserError(f"--parallelism: {par}; expected 1..{MAX_PARALLELISM} writer tasks")
    if not isinstance(buckets, int) or not 1 <= buckets <= 100_000:
        raise UserError(f"--buckets: {buckets}; expected 1..100000")
    if buckets < par:
        raise UserError(f"--buckets: {buckets} < --parallelism {par}; every writer task needs a bucket "
                        "(a task without one would never write)")
    if cfg.get("log_block_format", "avro") not in ("avro", "parquet"):
        raise UserError(f"--log-block-format: {cfg['log_block_format']!r}; expected avro or parquet")
    if cfg.get("shuffle", "packed") not in ("packed", "rows"):
        raise UserError(f"shuffle: {cfg['shuffle']!r}; expected packed or rows")
    if cfg.get("format") is not None and cfg["format"] not in src.FORMATS:
        raise UserError(f"--format: {cfg['format']!r}; expected one of {', '.join(src.FORMATS)}")
    if cfg.get("format") is not None and not cfg.get("input_dir"):
        raise UserError("--format: given without --input DIR")
    if cfg.get("input_dir") and cfg.get("format") is None:
        raise UserError("--input: needs --format json|csv|parquet")
    if not cfg.get("input_dir"):
        for flag, k in (("--record-key", "record_key"), ("--partition-field", "partition_field"),
                        ("--ordering-field", "ordering_field"), ("--delete-field", "delete_field")):
            if cfg.get(k):
                raise UserError(f"{flag}: only with --input DIR (the generated source's columns are fixed)")
    from pipeline.multiwriter import validate_concurrency  # multi-writer settings (model.concurrency)
    validate_concurrency(cfg)


def prepare_run(root: Path, **config) -> RunDir:
    """Create a run dir: ``run.json`` and the inputs (generated, or the user's ``--input`` files copied).
    Refuses a non-empty dir. User data: the schema is taken from the data first (:func:`pipeline.source.
    build_spec`), so a schema-level problem is refused before anything is created."""
    cfg = default_config(**config)
    validate_config(cfg)
    spec = None
    if cfg.get("input_dir"):
        spec = src.build_spec(Path(cfg["input_dir"]), cfg["format"], cfg["record_key"], cfg["partition_field"],
                              cfg["ordering_field"], cfg["delete_field"])
        cfg["input_dir"] = str(Path(cfg["input_dir"]).resolve())
        cfg["input_spec"] = spec.to_dict()
        cfg["batches"] = len(spec.source_files)
    rd = RunDir(Path(root), Path(cfg["table"]) if cfg.get("table") else None)
    if rd.root.exists() and any(rd.root.iterdir()):
        raise UserError(f"--out {rd.root}: exists and is not empty; choose a new run dir")
    if cfg.get("table"):
        from pipeline.coordinator import check_table_path
        cfg["table"] = str(Path(cfg["table"]).resolve())
        check_table_path(Path(cfg["table"]), cfg["table_version"])
        rd = RunDir(Path(root), Path(cfg["table"]))
    rd.root.mkdir(parents=True, exist_ok=True)
    if spec is None:
        src.write_inputs(rd.input, cfg["records"], cfg["batches"], cfg["seed"],
                         update_fraction=cfg["update_fraction"], malformed=cfg["malformed"],
                         ts_stride=cfg.get("ts_stride", 1), ts_phase=cfg.get("ts_phase", 0))
    else:
        src.copy_inputs(spec, rd.input)
        cfg["records"] = sum(1 for lines in src.read_inputs(rd.input, spec) for r, _ in lines if r is not None)
    rd.save_config(cfg)
    return rd


def open_run(root: Path) -> tuple[RunDir, dict]:
    rd = RunDir(Path(root))
    cfg = rd.load_config()
    rd = RunDir(rd.root, Path(cfg["table"]) if cfg.get("table") else None)
    return rd, cfg


# ------------------------------------------------------------------------------------------ the batch split
def split_batch(batch: pa.Table, spec: "src.InputSpec | None" = None) -> tuple[pa.Table, list[tuple[str, str]]]:
    """Well-formed records (the generated source's columns key, ts, partition, payload, or the user's columns in
    the run schema) and the malformed ones as (reason, raw). The writer tasks run it (:mod:`pipeline.executor`),
    never the driver.

    ``batch`` has one binary column ``line``: the raw bytes of each input line Spark's text source read (in file
    order). Each line goes through :func:`pipeline.source.parse_line`, the same validation the diff's
    prediction uses, so the two can never disagree on what the batch holds. Blank lines are skipped as
    :func:`pipeline.source.input_lines` skips them. ``raw`` is the line as text (bytes that are not UTF-8 as
    backslash escapes).

    User data (``spec``): ``batch`` is the binary-file source's rows (``path``, ``content``), one input file;
    :func:`pipeline.source.parse_file` judges its records."""
    if spec is not None:
        rows, bad = [], []
        for path, content in zip(batch.column("path").to_pylist(), batch.column("content").to_pylist()):
            for row, reason, raw in src.parse_file(content, spec, src.batch_index(path)):
                if row is None:
                    bad.append((reason, raw))
                else:
                    rows.append(row)
        return src.records_table(rows, spec), bad
    good: list[src.Record] = []
    bad = []
    for line in batch.column("line").to_pylist():
        if not line.strip():
            continue
        rec, reason = src.parse_line(line)
        if rec is None:
            bad.append((reason, line.decode("utf-8", errors="backslashreplace")))
        else:
            good.append(rec)
    names = RECORD_SCHEMA.names
    cols = list(zip(*map(attrgetter(*names), good))) if good else [()] * len(names)
    table = pa.table({name: list(col) for name, col in zip(names, cols)}, schema=RECORD_SCHEMA)
    return table, bad


def read_quarantine(rd: RunDir) -> pa.Table:
    # batch-<n>-task-<t>.parquet: written by writer task t (replaced on a retry or a replay of batch n)
    files = sorted(rd.quarantine.glob("batch-*.parquet")) if rd.quarantine.is_dir() else []
    if not files:
        return QUARANTINE_SCHEMA.empty_table()
    return pa.concat_tables([pq.read_table(f) for f in files])


def _one_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message (a Py4J/Spark wrapper's message
    begins with the Python error raised inside foreachBatch)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:500]


# ------------------------------------------------------------------------------------------------ the query
def run_job(root: Path, spark=None, progress=print, timeout_s: float = 600.0) -> dict:
    """Run (or resume) the streaming query of the run dir ``root`` to the end of its input.

    Returns a summary: batches handled in this process, records written, quarantined, seconds, and the
    coordinator's figures (per-batch latency, commits)."""
    from pipeline.coordinator import PipelineCoordinator

    rd, cfg = open_run(root)
    coord = PipelineCoordinator(rd, cfg, progress=progress)
    coord.open()  # lock, recovery of a killed run, model state
    try:
        if spark is None:
            from pipeline.spark import get_spark
            spark = get_spark(cfg.get("master"))
        t0 = time.monotonic()
        spec = input_spec(cfg)
        # input splits of at most 4 MB: a batch's lines are parsed by several tasks, not one
        spark.conf.set("spark.sql.files.maxPartitionBytes", str(4 << 20))
        if spec is None:  # raw lines (bytes, exactly as in the file): the one validation, source.parse_line
            stream = (spark.readStream.option("maxFilesPerTrigger", 1).option("lineSep", "\n")
                      .text(str(rd.input)).selectExpr("CAST(value AS BINARY) AS line"))
        else:  # user data: each input file's bytes (read by an executor), judged by source.parse_file in the
            # writer job's tasks (one task parses a file; its records are routed to every writer task)
            from pyspark.sql.types import (BinaryType, LongType, StringType, StructField, StructType,
                                           TimestampType)
            binary_file = StructType([StructField("path", StringType()), StructField("modificationTime",
                                      TimestampType()), StructField("length", LongType()),
                                      StructField("content", BinaryType())])
            stream = (spark.readStream.format("binaryFile").schema(binary_file).option("maxFilesPerTrigger", 1)
                      .option("pathGlobFilter", f"part-*.{spec.format}").load(str(rd.input))
                      .select("path", "content"))

        def sink(df, batch_id: int) -> None:
            started = time.monotonic()
            try:
                coord.deliver_spark_acks()  # blocking mode: the previous instant commits here
                # the batch never comes to the driver: the writer tasks split, route and write it
                split = split_batch if spec is None else functools.partial(split_batch, spec=spec)
                coord.on_batch(batch_id, df, started=started, split=split)
            except BaseException as exc:  # the batch will not commit: say which and why, then let Spark fail
                rd.log("batch-failed", batch=batch_id, pid=os.getpid(), error=_one_line(exc))
                raise

        aborts = 0  # OCC (pipeline.multiwriter): batches aborted by the conflict rule, replayed
        while True:
            query = (stream.writeStream.foreachBatch(sink).option("checkpointLocation", str(rd.checkpoint))
                     .trigger(availableNow=True).start())
            try:
                if not query.awaitTermination(timeout_s):
                    query.stop()
                    raise PipelineStalled(stall_message(rd, f"the streaming query did not finish within {timeout_s:.0f} s"))
                break
            except PipelineStalled:
                rd.log("stalled", pid=os.getpid(), reason="timeout")
                raise
            except Exception as exc:  # the query failed: a batch raised (logged above) or Spark itself failed
                if coord.occ_aborts and aborts < OCC_MAX_RETRIES:  # OCC abort: restart = failover, replay the batch
                    aborts += coord.occ_aborts
                    rd.log("occ-retry", pid=os.getpid(), aborts=aborts)
                    progress(f"OCC abort ({aborts} so far): the coordinator recovers, the batch is replayed")
                    coord.close()
                    coord = PipelineCoordinator(rd, cfg, progress=progress)
                    coord.open()  # recovery: the aborted instant is rolled back, the replay gets a new one
                    continue
                rd.log("stalled", pid=os.getpid(), reason=_one_line(exc))
                _wait_for_tasks(spark)  # none of the failed batch's tasks still writes when the run returns
                raise PipelineStalled(stall_message(rd, _one_line(exc))) from None
            finally:
                if query.isActive:
                    query.stop()
        coord.deliver_spark_acks()  # the last batch's commit is written after its foreachBatch returned
        missing = uncommitted_batches(rd)
        if missing:  # the query ended without committing every input file: the run did not reach its end
            rd.log("stalled", pid=os.getpid(), reason=f"batches {missing} not committed")
            raise PipelineStalled(stall_message(rd, "the streaming query ended before the end of its input"))
        coord.finish()
        summary = coord.summary()
        summary["seconds"] = time.monotonic() - t0
        summary["quarantined"] = read_quarantine(rd).num_rows
        summary["occ_aborts"] = aborts
        return summary
    finally:
        coord.close()


def _wait_for_tasks(spark, timeout_s: float = 30.0) -> None:
    """Wait until the session runs no stage, then Spark's kill timeout for Python workers: a failed batch's
    other tasks are cancelled, not stopped at once, and one may still be writing a data file. A restart in
    a new process does not meet them (they die with the old driver); a run restarted in this process
    (``resume`` in a notebook or a test, sharing the session) would otherwise roll back the failed instant
    while a straggler writes a file of it, which no marker then names."""
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + timeout_s
    while tracker.getActiveStageIds() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(min(kill_timeout_s(spark.sparkContext._jsc.sc().getConf()) + 0.5, 10.0))


def kill_timeout_s(jconf) -> float:
    """``spark.python.task.killTimeout`` of the JVM ``SparkConf`` ``jconf`` in seconds, parsed by Spark itself
    (``getTimeAsMs``: "2s", "2500ms", "1min"; a bare number is milliseconds); Spark's default 2 s when Spark
    cannot parse it (Spark's own kill path then fails, not this wait)."""
    try:
        return jconf.getTimeAsMs("spark.python.task.killTimeout", "2s") / 1000.0
    except Exception:  # noqa: BLE001 - py4j raises Py4JJavaError (NumberFormatException) for a bad value
        return 2.0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m pipeline.job RUN_DIR", file=sys.stderr)
        return 2
    try:
        summary = run_job(Path(argv[0]), progress=lambda s: print(s, flush=True))
    except UserError as exc:
        print(f"pipeline: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"done: {summary}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
