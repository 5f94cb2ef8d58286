"""Executor-side writes: the Spark job that writes one micro-batch, every Spark task a writer task.

The driver (:class:`pipeline.coordinator.PipelineCoordinator`) gets the batch's instant from the model and
starts it on the timeline; then :func:`write_batch` runs one Spark job over the batch's DataFrame of raw input
lines and returns only the tasks' write statuses (a few rows per task, never a record):

1. **parse and route** (``mapInArrow`` over the input splits): the lines in the generator's layout are parsed
   column-wise (:func:`pipeline.source.parse_lines_columnar`: one regular expression over the batch's bytes,
   matching only lines ``parse_line`` accepts as exactly those values); every other line goes through
   :func:`pipeline.source.parse_line`, the one validation (user data: each input file, one row of the
   binary-file source, through :func:`pipeline.source.parse_file`, typed in the run's schema, the user's key
   and delete columns); a good record gets its bucket
   (:func:`lakeio.hudiformat.bucket.bucket_id`, Hudi's ``BucketIdentifier``: hash of the record key mod
   ``buckets``) and its writer task (:func:`lakeio.hudiformat.bucket.task_of`: bucket mod ``parallelism``, as
   Flink's ``BucketIndexPartitioner``); a malformed line goes to task ``seq mod parallelism`` with its reason.
   ``seq`` is the line's position (split, row), so the batch's order survives the shuffle. By default
   (``shuffle="packed"``, :func:`parse_route_pack`) each input row is judged once, here, and each writer task's
   records and malformed lines of a stage-1 batch cross the shuffle as one Arrow IPC stream (a Spark row per
   task and batch, not per record: Spark converts and shuffles a few large values). With ``shuffle="rows"``
   a record is a Spark row: the generated source's lines (without ``jvm_parse``) cross the shuffle raw
   (:func:`route_lines`: route, task, seq, line; the writer task judges them again with the same split) --
   fewer columns for Spark to convert. With the run option
   ``jvm_parse`` (``pipeline run --jvm-parse``) Spark's JVM parses the generated source's lines first
   (:func:`jvm_parse`, ``from_json``); a line it read exactly in the generator's layout skips ``parse_line``,
   every other line still goes through it, so the verdicts are ``parse_line``'s (measured not faster here: off
   by default). MOR log data blocks are Avro or, with ``log_block_format=parquet``, parquet.
2. **shuffle**: ``repartition(parallelism, route)``, where ``route`` is a value Spark's hash partitioner
   (``pmod(murmur3(route), parallelism)``, the SQL ``hash``) sends to partition ``task`` -- found once per
   parallelism by asking Spark itself (:func:`route_keys`) -- then ``sortWithinPartitions(seq)``: Spark
   partition ``t`` holds exactly writer task ``t``'s rows, in input order (each task checks it).
3. **write** (``mapInArrow`` per partition = one writer task, :func:`write_partition`): the task writes its
   malformed lines to ``quarantine/batch-<n>-task-<t>.parquet`` (replaced on a retry or a replay) and its
   records with the Hudi data-file writer (:meth:`lakeio.hudiformat.table.HudiTableWriter.write_task`: the
   bucket's file group updated or created, a direct marker before each file, every file named with the
   attempt's write token ``<partition>-<stage>-<attempt>``, ``FSUtils.makeWriteToken``), and returns one row:
   task, attempt, token, record and quarantine counts, its write stats (``WriteStatus``) as JSON and, while the
   table has a record index (the spec's ``record_delegates``), the record delegates of its files
   (``WriteStatus.getIndexStats()``: key, partition, file and what the file did to it) as one Arrow IPC stream
   (:mod:`lakeio.hudiformat.delegates`), so the commit's record-index update does not read the files again.

Spark returns the row of the one successful attempt of each task; a failed, killed or speculative attempt's
files stay on storage until the driver reconciles the instant's markers with those rows
(:func:`lakeio.hudiformat.markers.reconcile_against_markers`, Hudi's ``reconcileAgainstMarkers``).

Fault injection (tests; a real task, a real Spark retry): the spec's ``faults`` list entries ``{"kind", "batch",
"task"}`` act on attempt 0 of that task in that batch: ``fail-after-file`` raises after its first data file
(Spark retries the task: ``spark.task.maxFailures``, ``local[N,F]``), ``kill-worker`` SIGKILLs its Python worker
after its first data file, ``duplicate-attempt`` first writes its file groups as a second attempt would (write
token attempt ``100``: a speculative copy whose result Spark drops) and then writes as itself.
"""

from __future__ import annotations

import gc
import json
import os
import signal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakeio.hudiformat import bucket as bk
from pipeline import source as src

RECORD_SCHEMA = src.GENERATED_SCHEMA  # the generated source's records (user data: the run's input_spec)
QUARANTINE_SCHEMA = pa.schema([("batch", pa.int64()), ("reason", pa.string()), ("raw", pa.string())])
RESULT_DDL = ("task int, attempt int, stage int, token string, records bigint, quarantined bigint, "
              "stats string, schema string, delegates binary")
DUPLICATE_ATTEMPT = 100
FAULT_KINDS = ("fail-after-file", "kill-worker", "duplicate-attempt")
_ARROW_DDL = {pa.string(): "string", pa.int64(): "bigint", pa.int32(): "int", pa.float64(): "double",
              pa.bool_(): "boolean", pa.large_string(): "string", pa.float32(): "float", pa.binary(): "binary",
              pa.date32(): "date"}


class TaskFault(RuntimeError):
    """An injected task failure (fault injection): Spark retries the task."""


# ------------------------------------------------------------------------------------------------- spec
def record_schema(cfg: dict) -> pa.Schema:
    """The records' schema the writer tasks write: the user data's run schema (``input_spec``, typed from the
    data), else the generated source's."""
    spec = src.input_spec(cfg)
    return RECORD_SCHEMA if spec is None else spec.arrow_schema()


def write_fields(cfg: dict) -> dict:
    """Record key, ordering, partition and delete fields of the run (the user's ``--record-key`` etc., else the
    generated source's key, ts, partition and Hudi's ``_hoodie_is_deleted``), as :func:`make_spec` takes them."""
    key, ordering, partition = src.record_columns(cfg)
    spec = src.input_spec(cfg)
    return {"record_key": key, "ordering_field": ordering, "partition_field": partition,
            "delete_field": spec.delete_field if spec is not None else None}


def make_spec(cfg: dict, *, base_path: Path, table_name: str, instant: str, batch: int, own_pending,
              quarantine_dir: Path, schema: pa.Schema, record_key: str, ordering_field: str | None,
              partition_field: str | None, delete_field: str | None = None, faults=(),
              kill_mid: dict | None = None, record_delegates: bool = False) -> dict:
    """What every task of a batch's write needs (JSON: it travels inside the task closure). ``record_delegates``:
    the tasks return their writes' record delegates (the table has a record index, built or being built)."""
    return {"base_path": str(base_path), "table_type": cfg["table_type"], "table_version": cfg["table_version"],
            "table_name": table_name, "instant": instant, "batch": batch, "own_pending": sorted(own_pending),
            "parallelism": cfg["parallelism"], "buckets": cfg["buckets"], "quarantine": str(quarantine_dir),
            "schema": schema.serialize().to_pybytes().hex(), "record_key": record_key,
            "ordering_field": ordering_field, "partition_field": partition_field, "delete_field": delete_field,
            "faults": [dict(f) for f in faults if f.get("batch") == batch], "kill_mid": kill_mid,
            "log_block_format": cfg.get("log_block_format", "avro"), "jvm_parse": cfg.get("jvm_parse", False),
            "shuffle": cfg.get("shuffle", "packed"),
            "record_delegates": bool(record_delegates)}


def _schema(spec: dict) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(bytes.fromhex(spec["schema"])))


def _wire_names(schema: pa.Schema) -> list[str]:
    """Stage 1's names of the record columns: by position (a user's column may be called ``task`` or ``seq``,
    or hold characters a DDL string cannot)."""
    return [f"_c{i}" for i in range(len(schema))]


def _wire_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type a record column crosses the shuffle as: a timestamp as Spark's (microseconds, UTC); the
    writer task casts it back to the run schema's."""
    return pa.timestamp("us", tz="UTC") if pa.types.is_timestamp(t) else t


def routed_ddl(schema: pa.Schema) -> str:
    """The Spark schema of stage 1's rows: route, task, seq, the record columns (by position), reason, raw."""
    cols = []
    for f, wire in zip(schema, _wire_names(schema)):
        if pa.types.is_timestamp(f.type):
            cols.append(f"`{wire}` timestamp")
            continue
        if f.type not in _ARROW_DDL:
            raise ValueError(f"record column {f.name}: type {f.type} not supported by the executor writer")
        cols.append(f"`{wire}` {_ARROW_DDL[f.type]}")
    return "route int, task int, seq bigint, " + ", ".join(cols) + ", `_reason` string, `_raw` string"


# ------------------------------------------------------------------------------------- worker heap
def freeze_worker_heap() -> bool:
    """Move the Python worker's long-lived objects (the modules a writer task runs: pyarrow, pandas, pyspark's
    worker, this project's) into the garbage collector's permanent generation, once per worker process; True
    when this call froze them.

    PySpark's daemon runs ``gc.collect()`` after every task a reused worker finishes (``pyspark/daemon.py``), a
    full collection that walks every tracked object -- about 80,000 after these imports, some 40 ms of CPU here
    per task, a seventh of the Python workers' CPU in a COW run (py-spy). Frozen objects are not walked
    (``gc.freeze``); they are what the process keeps anyway. Only the first call of a process freezes
    (``gc.get_freeze_count()`` is 0 in a fresh worker): a later task's objects -- its batch, its tables,
    cyclic garbage included -- stay collectable, so nothing a task allocates is kept."""
    global _heap_frozen
    if _heap_frozen or gc.get_freeze_count():  # the flag first: get_freeze_count walks the frozen objects
        _heap_frozen = True
        return False
    import pyarrow.compute  # noqa: F401  -- what the tasks import anyway, before the freeze
    import lakeio.hudiformat.table  # noqa: F401

    gc.collect()  # what is garbage now is freed, not frozen
    gc.freeze()
    _heap_frozen = True
    return True


_heap_frozen = False  # this process froze its heap (freeze_worker_heap)


# ------------------------------------------------------------------------------------------- stage 1
#: The generated source's JSON lines as Spark's JVM parses them (``from_json``, PERMISSIVE: a line it cannot
#: read gives nulls, never an error).
JVM_PARSE_DDL = "key STRING, ts BIGINT, partition STRING, payload STRING"
#: a line with neither a backslash nor a control character: every string in it stands for itself (no escape)
_UNESCAPED_LINE = r"^[^\x00-\x1f\\]*$"


def jvm_parse(df):
    """The generated source's lines parsed by Spark's JVM (``from_json``), with the exactness check that lets
    the writer tasks skip Python's :func:`pipeline.source.parse_line` for a line. ``fast`` is true only when

    * the raw line is byte for byte ``{"key": "<key>", "partition": "<partition>", "payload": "<payload>",
      "ts": <ts>}`` of the values Spark read (``json.dumps(..., sort_keys=True)``'s layout, what the generator
      writes) and
    * it holds no backslash and no control character, so each string stands for itself: ``json.loads`` of the
      line gives exactly those four values (strings; ``ts`` an integer Spark read as a long, so within int64;
      no lone surrogate, which needs an escape; the bytes UTF-8, as Spark decoded and re-encoded them
      unchanged), and
    * :func:`pipeline.source.validate` accepts them: the key non-empty, the partition non-empty, without
      ``/``, not starting with ``.`` (control characters and ``\\`` excluded above).

    ``parse_line`` would return that record, so the task takes it as Spark parsed it. Every other line
    (``fast`` false: malformed, escaped, reordered, spaced differently, a ``\\r``, a number as key ...) keeps
    its raw bytes and goes through the batch split (``parse_line``) in the task, as before.
    Columns: fast, key, ts, partition, payload, line (null when fast)."""
    from pyspark.sql import functions as F

    # from_json once per line (a column the next projection reads, not the expression repeated in each use)
    parsed = df.select(F.col("line"), F.from_json(F.col("line").cast("string"), JVM_PARSE_DDL).alias("j"))
    parsed = parsed.select("line", "j.key", "j.ts", "j.partition", "j.payload")
    text = F.col("line").cast("string")
    canon = F.concat(F.lit('{"key": "'), F.col("key"), F.lit('", "partition": "'), F.col("partition"),
                     F.lit('", "payload": "'), F.col("payload"), F.lit('", "ts": '), F.col("ts").cast("string"),
                     F.lit("}"))
    part = F.col("partition")
    fast = F.coalesce((text == canon) & text.rlike(_UNESCAPED_LINE) & (F.length("key") > 0) & (F.length(part) > 0)
                      & ~part.startswith(".") & ~part.contains("/"), F.lit(False))
    return (parsed.withColumn("fast", fast)
            .select("fast", "key", "ts", "partition", "payload",
                    F.when(F.col("fast"), F.lit(None).cast("binary")).otherwise(F.col("line")).alias("line")))


def spec_is_generated(schema: pa.Schema) -> bool:
    """The run writes the generated source's records (its lines may take :func:`pipeline.source.
    parse_lines_columnar`'s fast path)."""
    return schema.equals(RECORD_SCHEMA)


def _split_rows(batch: pa.Table, split, schema: pa.Schema):
    """``batch`` -> (records of the run's schema, [(reason, raw)], what each input row became: 1 a record, 0 a
    malformed line, -1 nothing (a blank line), in order; None: records first, then the malformed, as ``split``
    returns them). The generated source's raw lines are first parsed column-wise
    (:func:`pipeline.source.parse_lines_columnar`), unless :func:`jvm_parse` did it in the JVM; the ``fast`` rows
    are taken as parsed, every other row goes through ``split`` on its own (the one validation). User data (a
    file's bytes per row) goes through ``split`` whole."""
    if "fast" not in batch.column_names and "line" in batch.column_names and spec_is_generated(schema):
        batch = src.parse_lines_columnar(batch.column("line"))  # the generated source's lines, column-wise
    if "fast" not in batch.column_names:
        good, bad = split(batch)
        return good.select(schema.names).cast(schema), bad, None
    fast = batch.column("fast").to_numpy(zero_copy_only=False)
    if fast.all():
        return batch.select(schema.names).cast(schema), [], None
    kinds = np.ones(len(fast), dtype=np.int8)
    slow_lines = batch.column("line")
    parts, bad = [], []
    run = 0  # start of the current run of fast rows
    for i in np.nonzero(~fast)[0].tolist() + [len(fast)]:
        if i > run:
            parts.append(batch.slice(run, i - run).select(schema.names).cast(schema))
        if i < len(fast):  # a slow row: the batch split on its own
            g, b = split(pa.table({"line": pa.array([slow_lines[i].as_py()], pa.binary())}))
            if g.num_rows:
                parts.append(g.select(schema.names).cast(schema))
            kinds[i] = 1 if g.num_rows else (0 if b else -1)
            bad += b
        run = i + 1
    good = pa.concat_tables(parts) if parts else schema.empty_table()
    return good, bad, kinds


def _numbered(batches):
    """Stage 1's input batches with each one's first ``seq``: the Spark partition id in the high bits, the
    row's position in the partition below (unique per input row, in input order)."""
    from pyspark import TaskContext

    part = TaskContext.get().partitionId()
    row0 = 0
    for b in batches:
        yield b, (part << 40) + row0
        row0 += b.num_rows


def _tasks_of(keys, buckets: int, parallelism: int) -> np.ndarray:
    """The writer task of each record key: its bucket (Hudi hashes the key's string; an int key: its digits),
    then the bucket's task."""
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    keys = keys if pa.types.is_string(keys.type) else keys.cast(pa.string())
    return bk.task_of(bk.bucket_ids(keys, buckets), parallelism)


def parse_and_route(spec: dict, routes: list[int], split):
    """Stage 1's ``mapInArrow`` function (see the module doc). ``split(table of the source's rows: raw lines, or
    user data's (path, content) per file) -> (records of the run's schema, [(reason, raw)])`` is the one
    validation (:func:`pipeline.job.split_batch`); rows :func:`jvm_parse` marked ``fast`` skip it."""
    schema = _schema(spec)
    wire = _wire_names(schema)
    P, B, key = spec["parallelism"], spec["buckets"], spec["record_key"]
    route_arr = np.asarray(routes, dtype=np.int32)

    def fn(batches):
        freeze_worker_heap()
        for b, base in _numbered(batches):
            good, bad, kinds = _split_rows(pa.Table.from_batches([b]), split, schema)
            n = good.num_rows
            if kinds is None:  # records first, then the malformed lines (user data: a file's rows)
                seq = np.arange(base, base + n, dtype=np.int64)
                bad_seq = np.arange(base + n, base + n + len(bad), dtype=np.int64)
            else:  # each at its input row
                seq = base + np.nonzero(kinds == 1)[0].astype(np.int64)
                bad_seq = base + np.nonzero(kinds == 0)[0].astype(np.int64)
            tasks = _tasks_of(good.column(key), B, P)
            cols = {"route": pa.array(route_arr[tasks], pa.int32()), "task": pa.array(tasks, pa.int32()),
                    "seq": pa.array(seq, pa.int64())}
            for f, w in zip(schema, wire):
                cols[w] = good.column(f.name).combine_chunks().cast(_wire_type(f.type))
            cols["_reason"] = pa.nulls(n, pa.string())
            cols["_raw"] = pa.nulls(n, pa.string())
            yield pa.RecordBatch.from_pydict(cols)
            if bad:
                bt = (bad_seq % P).astype(np.int64)
                cols = {"route": pa.array(route_arr[bt], pa.int32()), "task": pa.array(bt, pa.int32()),
                        "seq": pa.array(bad_seq, pa.int64())}
                for f, w in zip(schema, wire):
                    cols[w] = pa.nulls(len(bad), _wire_type(f.type))
                cols["_reason"] = pa.array([r for r, _ in bad], pa.string())
                cols["_raw"] = pa.array([x for _, x in bad], pa.string())
                yield pa.RecordBatch.from_pydict(cols)
    return fn


#: stage 1's rows for the generated source's raw lines: the line itself crosses the shuffle (see route_lines)
ROUTED_LINES_DDL = "route int, task int, seq bigint, line binary"


def route_lines(spec: dict, routes: list[int], split):
    """Stage 1's ``mapInArrow`` function for the generated source's raw lines (``jvm_parse`` off): each line is
    judged as in :func:`parse_and_route` (:func:`_split_rows`: the column-wise parse, ``parse_line`` for the
    rest) only to find its writer task -- a record's by its key's bucket, a malformed line's ``seq mod
    parallelism`` -- and the raw line crosses the shuffle with its route, task and ``seq`` (a blank line is
    dropped, as the split skips it). The writer task judges its lines again with the same split (a pure
    function of the line), so it writes exactly the records and quarantines exactly the lines routed to it.
    Four narrow columns instead of the parsed record's: Spark converts fewer Arrow columns to rows and back
    (measured here: stage 1 plus the shuffle about a fifth faster)."""
    schema = _schema(spec)
    P, B, key = spec["parallelism"], spec["buckets"], spec["record_key"]
    route_arr = np.asarray(routes, dtype=np.int32)

    def fn(batches):
        freeze_worker_heap()
        for b, base in _numbered(batches):
            lines = b.column(b.schema.get_field_index("line"))
            good, _bad, kinds = _split_rows(pa.table({"line": lines}), split, schema)
            if kinds is None:  # every line a record in the generator's layout
                if good.num_rows != b.num_rows:
                    raise RuntimeError("route_lines: the split did not say what each line became")
                kinds = np.ones(b.num_rows, dtype=np.int8)
            tasks = np.empty(b.num_rows, dtype=np.int64)
            tasks[np.nonzero(kinds == 1)[0]] = _tasks_of(good.column(key), B, P)
            seq = base + np.arange(b.num_rows, dtype=np.int64)
            tasks[kinds == 0] = seq[kinds == 0] % P
            keep = np.nonzero(kinds >= 0)[0]
            t = tasks[keep]
            yield pa.RecordBatch.from_pydict({
                "route": pa.array(route_arr[t], pa.int32()), "task": pa.array(t, pa.int32()),
                "seq": pa.array(seq[keep], pa.int64()),
                "line": lines if len(keep) == b.num_rows else lines.filter(pa.array(kinds >= 0))})
    return fn


#: stage 1's rows when the records cross the shuffle packed (``shuffle="packed"``, the default): one row per
#: writer task and stage-1 output batch, the batch's rows of that task as one Arrow IPC stream
PACKED_DDL = "route int, task int, seq bigint, packed binary"
SHUFFLES = ("packed", "rows")


def _pack(rows: pa.RecordBatch, route_arr: np.ndarray) -> pa.RecordBatch | None:
    """One of :func:`parse_and_route`'s output batches (route, task, seq, the record columns, reason, raw) as
    packed rows: for each writer task in it, its rows in their order (the columns but route and task) as one Arrow
    IPC stream, with its route, its task and its first ``seq``. The rows of a batch are in ``seq`` order and the
    ``seq`` ranges of two batches of a kind (records, malformed lines) do not interleave, so the writer task,
    taking its packed rows in ``seq`` order, sees its records and its malformed lines each in input order, as it
    does with one row per record."""
    if not rows.num_rows:
        return None
    tasks = rows.column(rows.schema.get_field_index("task")).to_numpy()
    body = rows.drop_columns(["route", "task"])
    out_task, out_seq, blobs = [], [], []
    for t in np.unique(tasks).tolist():
        mask = tasks == t
        mine = body if mask.all() else body.filter(pa.array(mask))
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, mine.schema) as w:
            w.write_batch(mine)
        out_task.append(t)
        out_seq.append(mine.column(0)[0].as_py())
        blobs.append(sink.getvalue())
    t = np.asarray(out_task, dtype=np.int64)
    return pa.RecordBatch.from_pydict({"route": pa.array(route_arr[t], pa.int32()), "task": pa.array(t, pa.int32()),
                                       "seq": pa.array(out_seq, pa.int64()),
                                       "packed": pa.array([b.to_pybytes() for b in blobs], pa.binary())})


def parse_route_pack(spec: dict, routes: list[int], split):
    """Stage 1's ``mapInArrow`` function with ``shuffle="packed"``: :func:`parse_and_route` (each input row
    judged once, here: a record's columns parsed, a malformed line's reason) whose rows cross the shuffle packed
    per writer task (:func:`_pack`). Spark moves a few large binary values instead of converting every record's
    columns to its rows and back, and the writer task does not parse its lines again: the same records and the
    same malformed lines (reason, raw) reach the same task in the same order as with one row per record."""
    route_arr = np.asarray(routes, dtype=np.int32)
    inner = parse_and_route(spec, routes, split)

    def fn(batches):
        for rows in inner(batches):
            packed = _pack(rows, route_arr)
            if packed is not None:
                yield packed
    return fn


def _unpack(packed) -> pa.Table:
    """The writer task's packed rows (in ``seq`` order) back as one table of :func:`parse_and_route`'s rows
    (without route and task)."""
    packed = packed.combine_chunks() if isinstance(packed, pa.ChunkedArray) else packed
    tables = [pa.ipc.open_stream(packed[i].as_buffer()).read_all() for i in range(len(packed))]
    return pa.concat_tables(tables)


# ------------------------------------------------------------------------------------------- stage 2
def quarantine_path(qdir: Path, batch: int, task: int) -> Path:
    return Path(qdir) / f"batch-{batch:06d}-task-{task:04d}.parquet"


def _write_quarantine(spec: dict, task: int, reasons: list, raws: list) -> None:
    from pipeline.run_dir import atomic_write_bytes

    path = quarantine_path(Path(spec["quarantine"]), spec["batch"], task)
    if not reasons:
        path.unlink(missing_ok=True)
        return
    t = pa.table({"batch": [spec["batch"]] * len(reasons), "reason": reasons, "raw": raws}, schema=QUARANTINE_SCHEMA)
    sink = pa.BufferOutputStream()
    pq.write_table(t, sink)
    atomic_write_bytes(path, sink.getvalue().to_pybytes())


def _open_writer(spec: dict):
    from lakeio.hudiformat.table import HudiTableWriter

    extra = {"delete_field": spec["delete_field"]} if spec.get("delete_field") else {}
    return HudiTableWriter(spec["base_path"], spec["table_type"], spec["table_version"],
                           record_key=spec["record_key"], ordering_field=spec["ordering_field"],
                           partition_field=spec["partition_field"], table_name=spec["table_name"], for_task=True,
                           log_block_format=spec.get("log_block_format", "avro"),
                           record_delegates=spec.get("record_delegates", False), **extra)


class _AfterFiles:
    """Run ``action(n)`` after each data file the writer writes (wraps the two functions data files are
    written with, looked up at call time -- the crash harness's ``write.mid`` hook, here inside a task)."""

    def __init__(self, action):
        self.action, self.n = action, 0

    def __enter__(self):
        from lakeio.hudiformat import basefile, table
        self.saved = (basefile.write_base_file, table._atomic_write)

        def wrap(f):
            def wrapped(*a, **kw):
                out = f(*a, **kw)
                self.n += 1
                self.action(self.n)
                return out
            return wrapped
        basefile.write_base_file = wrap(self.saved[0])
        table._atomic_write = wrap(self.saved[1])
        return self

    def __exit__(self, *exc):
        from lakeio.hudiformat import basefile, table
        basefile.write_base_file, table._atomic_write = self.saved


def _kill_driver(spec: dict, task: int, n: int) -> None:
    """``write.mid``: the driver is SIGKILLed after a task's n-th data file (once per driver: an exclusive
    file decides which task fires)."""
    km = spec["kill_mid"]
    if km is None or n != km["hit"]:
        return
    crash = Path(km["crash_dir"])
    try:
        fd = os.open(crash / f"write.mid.{km['driver_pid']}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    (crash / "kill_at").unlink(missing_ok=True)
    from pipeline.run_dir import append_line
    append_line(Path(km["events"]), {"kind": "crash", "point": "write.mid", "pid": km["driver_pid"], "task": task})
    os.kill(km["driver_pid"], signal.SIGKILL)


def task_rows(batches, task: int, split, schema: pa.Schema) -> tuple[pa.Table, pa.Table]:
    """What writer task ``task`` received through the shuffle (its input batches, in ``seq`` order) as (its
    records in the run's schema, its malformed lines: ``_reason``, ``_raw``), each in input order: raw lines
    (:func:`route_lines`) judged again by ``split``, :func:`parse_and_route`'s rows taken as they are, packed
    rows (:func:`parse_route_pack`) unpacked first. Raises when a row was routed to another task."""
    parts = [pa.Table.from_batches([b]) for b in batches]
    rows = pa.concat_tables(parts) if parts else None
    if rows is None or not rows.num_rows:
        return schema.empty_table(), pa.table({"_reason": pa.array([], pa.string()), "_raw": pa.array([], pa.string())})
    tasks = set(rows.column("task").unique().to_pylist())
    if tasks - {task}:
        raise RuntimeError(f"writer task {task} received rows routed to tasks {sorted(tasks)} "
                           "(Spark's partitioner and the route keys disagree)")
    if "packed" in rows.column_names:  # parse_route_pack: the records and malformed lines, parsed once
        rows = _unpack(rows.column("packed"))
    if "line" in rows.column_names:  # raw lines (route_lines): the same split as stage 1's
        good, bad_rows, _kinds = _split_rows(pa.table({"line": rows.column("line")}), split, schema)
        return good, pa.table({"_reason": pa.array([r for r, _ in bad_rows], pa.string()),
                               "_raw": pa.array([x for _, x in bad_rows], pa.string())})
    reason = rows.column("_reason")
    good = rows.filter(reason.is_null()).select(_wire_names(schema)).rename_columns(schema.names).cast(schema)
    return good, rows.filter(reason.is_valid()).select(["_reason", "_raw"])


def write_partition(spec: dict, split=None):
    """Stage 2's ``mapInArrow`` function: one writer task (see the module doc). Rows of :func:`route_lines`
    (raw lines) are judged here by ``split`` (:func:`_split_rows`), as stage 1 judged them."""
    schema = _schema(spec)

    def fn(batches):
        from pyspark import TaskContext

        freeze_worker_heap()
        ctx = TaskContext.get()
        task, attempt, stage = ctx.partitionId(), ctx.attemptNumber(), ctx.stageId()
        good, bad = task_rows(batches, task, split, schema)
        _write_quarantine(spec, task, bad.column("_reason").to_pylist(), bad.column("_raw").to_pylist())
        faults = {f["kind"] for f in spec["faults"] if f.get("task") == task} if attempt == 0 else set()
        token = f"{task}-{stage}-{attempt}"
        result = None
        if good.num_rows:
            if "duplicate-attempt" in faults:  # a speculative copy of this task, whose result Spark drops
                _open_writer(spec).write_task(spec["instant"], good, num_buckets=spec["buckets"],
                                              write_token=f"{task}-{stage}-{DUPLICATE_ATTEMPT}", task_number=task,
                                              own_pending=spec["own_pending"])

            def after_file(n: int) -> None:
                _kill_driver(spec, task, n)
                if n == 1 and "fail-after-file" in faults:
                    raise TaskFault(f"injected: task {task} attempt {attempt} fails after its first data file")
                if n == 1 and "kill-worker" in faults:
                    os.kill(os.getpid(), signal.SIGKILL)

            with _AfterFiles(after_file):
                result = _open_writer(spec).write_task(spec["instant"], good, num_buckets=spec["buckets"],
                                                       write_token=token, task_number=task,
                                                       own_pending=spec["own_pending"])
        yield pa.RecordBatch.from_pydict({
            "task": pa.array([task], pa.int32()), "attempt": pa.array([attempt], pa.int32()),
            "stage": pa.array([stage], pa.int32()), "token": [token], "records": pa.array([good.num_rows], pa.int64()),
            "quarantined": pa.array([bad.num_rows], pa.int64()),
            "stats": [json.dumps(result.write_stats if result is not None else [])],
            "schema": [result.schema if result is not None else ""],
            "delegates": pa.array([_delegate_bytes(spec, result)], pa.binary())})
    return fn


def _delegate_bytes(spec: dict, result) -> bytes | None:
    """The task's record delegates as an Arrow IPC stream (:mod:`lakeio.hudiformat.delegates`), when the spec
    asks for them (a task that wrote nothing: an empty table); else null."""
    if not spec.get("record_delegates"):
        return None
    from lakeio.hudiformat import delegates

    got = result.record_delegates if result is not None else None
    return delegates.to_bytes(got if got is not None else delegates.empty())


# -------------------------------------------------------------------------------------------- driver
_ROUTES: dict[int, list[int]] = {}


def route_keys(spark, parallelism: int) -> list[int]:
    """For each task t, an int whose Spark hash partition (``pmod(hash(k), parallelism)``, what
    ``repartition(parallelism, col)`` computes) is t: asked of Spark once per parallelism (a tiny query)."""
    if parallelism not in _ROUTES:
        rows = (spark.range(0, 64 * parallelism).selectExpr("CAST(id AS INT) AS k")
                .selectExpr("k", f"pmod(hash(k), {parallelism}) AS p").collect())
        first: dict[int, int] = {}
        for r in rows:
            first.setdefault(r["p"], r["k"])
        if len(first) < parallelism:
            raise RuntimeError(f"no route key found for every one of {parallelism} tasks")
        _ROUTES[parallelism] = [first[t] for t in range(parallelism)]
    return _ROUTES[parallelism]


def shuffled(df, spec: dict, split):
    """Stages 1 and 2's input: ``df`` (the batch's raw lines, or user data's files) parsed and routed
    (``shuffle="packed"``: :func:`parse_route_pack`; ``"rows"``: :func:`route_lines` for the generated source's
    raw lines, :func:`parse_and_route` otherwise), repartitioned so that Spark partition ``t`` holds writer task
    ``t``'s rows, in ``seq`` order."""
    P = spec["parallelism"]
    schema = _schema(spec)
    routes = route_keys(df.sparkSession, P)
    if "line" in df.columns and spec.get("jvm_parse"):  # the generated source: Spark's JVM parses
        df = jvm_parse(df)
    if spec.get("shuffle", "packed") == "packed":  # parsed once, packed per writer task
        routed = df.mapInArrow(parse_route_pack(spec, routes, split), PACKED_DDL)
    elif "line" in df.columns and spec.get("jvm_parse"):
        routed = df.mapInArrow(parse_and_route(spec, routes, split), routed_ddl(schema))
    elif "line" in df.columns:  # the generated source's raw lines cross the shuffle as they are
        routed = df.mapInArrow(route_lines(spec, routes, split), ROUTED_LINES_DDL)
    else:  # user data: a file's bytes per row, parsed records cross the shuffle
        routed = df.mapInArrow(parse_and_route(spec, routes, split), routed_ddl(schema))
    return routed.repartition(P, "route").sortWithinPartitions("seq")


def write_batch(df, spec: dict, split) -> list[dict]:
    """Run the batch's write job on ``df`` (one binary column of raw lines); the write statuses of each task's
    successful attempt, in task order. Nothing but those rows comes back to the driver. ``split``: the batch
    split the tasks run (:func:`pipeline.job.split_batch`)."""
    P = spec["parallelism"]
    out = shuffled(df, spec, split).mapInArrow(write_partition(spec, split), RESULT_DDL)
    statuses = [r.asDict() for r in out.collect()]  # one row per task: the write statuses
    statuses.sort(key=lambda r: r["task"])
    if [r["task"] for r in statuses] != list(range(P)):
        raise RuntimeError(f"write job returned statuses of tasks {[r['task'] for r in statuses]}, "
                           f"expected 0..{P - 1}")
    for r in statuses:
        r["stats"] = json.loads(r["stats"])
    return statuses
