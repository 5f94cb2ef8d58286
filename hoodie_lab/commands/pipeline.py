"""``hoodie-lab pipeline``: run the PySpark Structured Streaming pipeline that writes a real Hudi table.

``pipeline run`` generates seeded input files, runs the streaming query (file source, ``availableNow``,
``foreachBatch`` into the driver-side coordinator) and prints one line per micro-batch. With ``--kill`` or
``--crashes`` the query runs in subprocesses that are SIGKILLed at kill points and restarted on the same
checkpoint (``pipeline kill-points`` lists them). ``pipeline resume RUN_DIR`` restarts a stopped run.
Every run leaves a run dir (trace, inputs, Spark checkpoint, table, quarantine) for ``hoodie-lab diff``.
"""

from __future__ import annotations

import time
from pathlib import Path

from lakeio.errors import UserError

from .common import add_progress_arg, check_out_dir, check_seed, progress_enabled, say


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("pipeline", help="run the PySpark streaming pipeline into a real Hudi table",
                              description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="pipeline_command", metavar="SUBCOMMAND")
    r = sub.add_parser("run", help="generate inputs and run the streaming query",
                       description="Generate seeded input files and run the streaming query into a Hudi table; "
                                   "one progress line per micro-batch.")
    r.add_argument("--mode", choices=["blocking", "async", "spark-sink"], default="async",
                   help="coordinator: blocking or async instant generation, or Hudi's Spark sink (default async)")
    r.add_argument("--table-type", choices=["cow", "mor"], default="mor", help="copy-on-write or merge-on-read")
    r.add_argument("--table-version", type=int, choices=[8, 6], default=8, help="Hudi table version (default 8)")
    r.add_argument("--records", type=int, default=1000, help="well-formed input records in all (default 1000)")
    r.add_argument("--batches", type=int, default=5, help="input files = micro-batches (default 5)")
    r.add_argument("--malformed", type=int, default=0, help="malformed input records to mix in (default 0)")
    r.add_argument("--commit-latency-ms", type=int, default=0,
                   help="sleep before each timeline write of the coordinator (object-store latency)")
    r.add_argument("--master", default=None, help="Spark master URL: local[N] (default local[2]) or "
                   "spark://HOST:PORT (a standalone cluster; checked for reachability before anything is created)")
    r.add_argument("--parallelism", type=int, default=2,
                   help="writer tasks: the Spark tasks that write each batch (the model's tasks too; default 2)")
    r.add_argument("--buckets", type=int, default=4,
                   help="bucket-index buckets per partition (hoodie.bucket.index.num.buckets; default 4)")
    r.add_argument("--log-block-format", choices=["avro", "parquet"], default="avro",
                   help="MOR log data blocks: avro (HoodieAvroDataBlock, default) or parquet (HoodieParquetDataBlock, "
                        "hoodie.logfile.data.block.format=parquet; hudi-rs reads both)")
    r.add_argument("--jvm-parse", action="store_true",
                   help="let Spark's JVM parse the generated lines (from_json); lines not in the generator's exact "
                        "layout still go through the Python validation")
    g = r.add_argument_group("your own data (instead of the generated source)")
    g.add_argument("--input", type=Path, default=None, metavar="DIR",
                   help="read the files of DIR (in name order, one micro-batch each) instead of generating inputs")
    g.add_argument("--format", default=None, help="format of the --input files: json (JSON lines), csv (header "
                   "line first) or parquet")
    g.add_argument("--record-key", default=None, metavar="COL", help="the record key column")
    g.add_argument("--partition-field", default=None, metavar="COL", help="the partition column")
    g.add_argument("--ordering-field", default=None, metavar="COL",
                   help="the ordering (precombine) column: the greatest value of a key wins")
    g.add_argument("--delete-field", default=None, metavar="COL",
                   help="a boolean column: true marks the record as a delete of its key")
    # multi-writer (pipeline.multiwriter): several runs with --table on one table
    r.add_argument("--concurrency-mode", default="single_writer", metavar="MODE",
                   help="hoodie.write.concurrency.mode: single_writer (default; the run holds the table), nbcc "
                        "(several runs on one --table: MOR, table version 8, async or spark-sink mode), occ (spark-sink "
                        "mode: a conflicting batch aborts and is replayed with a new instant)")
    r.add_argument("--ts-stride", type=int, default=1,
                   help="ordering values are i*stride+phase (writers on one table: one stride, distinct phases)")
    r.add_argument("--ts-phase", type=int, default=0, help="see --ts-stride (default 0)")
    r.add_argument("--out", type=Path, default=None, help="run dir (default runs/pipeline/<mode>-<type>-seed<S>)")
    r.add_argument("--table", type=Path, default=None, help="table path (default RUN_DIR/table)")
    r.add_argument("--seed", type=int, default=0, help="seed of the input generator and of --crashes")
    r.add_argument("--kill", action="append", default=[], metavar="POINT[#N]",
                   help="SIGKILL the driver the N-th time it reaches POINT, then restart (repeatable)")
    r.add_argument("--crashes", type=int, default=0, help="this many kills at seeded random kill points")
    r.add_argument("--diff", action="store_true", help="run `hoodie-lab diff` on the run dir at the end")
    for opt, what in (("--archive-max-commits", "archive when more completed commits than this (hoodie.keep.max.commits)"),
                      ("--archive-min-commits", "keep this many completed commits (hoodie.keep.min.commits)"),
                      ("--archive-batch", "hoodie.commits.archival.batch")):
        r.add_argument(opt, type=int, default=None, help=f"{what}; any of the --archive-* options turns archival "
                       "on after every commit (table version 8; others keep Hudi's defaults 30/20/10)")
    add_progress_arg(r)
    r.set_defaults(func=run)
    s = sub.add_parser("resume", help="restart a run on its checkpoint (after a crash or an interrupt)")
    s.add_argument("run_dir", type=Path)
    s.add_argument("--master", default=None)
    add_progress_arg(s)
    s.set_defaults(func=resume)
    c = sub.add_parser("compact", help="schedule and run one compaction of a MOR v8 table beside NBCC pipelines")
    c.add_argument("--table", type=Path, required=True, help="the table (merge-on-read, version 8)")
    c.set_defaults(func=compact)
    k = sub.add_parser("kill-points", help="list the kill points of the crash harness")
    k.set_defaults(func=kill_points)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


#: What the coordinator's per-batch line shows (printed once before the batches).
BATCH_LEGEND = ("per batch: checkpoint = the batch's checkpoint id, instant = the instant it wrote, records = its "
                "well-formed records, files = data files it wrote, quarantined = its malformed records, tasks = writer "
                "tasks (retried: tasks Spark re-ran; reconciled: files of failed or duplicate attempts deleted), "
                "(s) = its wall time")


def _default_out(args) -> Path:
    base = Path("runs") / "pipeline" / f"{args.mode}-{args.table_type}-seed{args.seed}"
    out, n = base, 1
    while out.exists():
        n += 1
        out = base.with_name(f"{base.name}-{n}")
    return out


def run(args) -> int:
    from pipeline.crash import KillSpec, run_with_crashes, seeded_plan
    from pipeline.job import prepare_run, run_job

    if args.crashes < 0:
        raise UserError(f"--crashes: {args.crashes}; expected >= 0")
    if args.diff and args.concurrency_mode != "single_writer":
        raise UserError(f"--diff: a {args.concurrency_mode} run shares its table; diff every run dir that wrote it "
                        "at once after they finished: hoodie-lab diff RUN_DIR RUN_DIR...")
    check_seed(args.seed)
    if args.out is not None:  # checked before anything is written; prepare_run makes the directory
        check_out_dir(args.out, create=False)
    if args.table is not None:
        check_out_dir(args.table, create=False, arg="--table")
    from pipeline.spark import check_master
    check_master(args.master)  # an unreachable master: one line, exit 2, before the run dir or table exists
    try:
        plan = [KillSpec.parse(k) for k in args.kill]
    except ValueError as exc:
        raise UserError(f"--kill: {exc}") from None
    if args.input is not None and args.crashes:
        from pipeline.source import user_files
        plan += seeded_plan(args.seed, len(user_files(args.input, args.format or "")), args.crashes)
    else:
        plan += seeded_plan(args.seed, args.batches, args.crashes)
    from lakeio.ondisk.history import archival_settings
    archival = archival_settings(args.archive_max_commits, args.archive_min_commits, args.archive_batch)
    if archival and args.table_version != 8:
        raise UserError(f"--archive-max-commits: the pipeline archives table version 8 tables only, not "
                        f"{args.table_version}")
    if archival and args.table is not None:
        from lakeio.ondisk.history import check_table_archivable
        check_table_archivable(args.table)  # an unreadable history: one line, exit 2, before anything is written
    out = args.out or _default_out(args)
    rd = prepare_run(out, mode=args.mode, table_type=args.table_type, table_version=args.table_version,
                     records=args.records, batches=args.batches, seed=args.seed, malformed=args.malformed,
                     commit_latency_ms=args.commit_latency_ms, master=args.master,
                     parallelism=args.parallelism, buckets=args.buckets, log_block_format=args.log_block_format,
                     jvm_parse=args.jvm_parse,
                     concurrency_mode=args.concurrency_mode, ts_stride=args.ts_stride, ts_phase=args.ts_phase,
                     table=str(args.table) if args.table else None, archival=archival,
                     input_dir=str(args.input) if args.input else None, format=args.format,
                     record_key=args.record_key, partition_field=args.partition_field,
                     ordering_field=args.ordering_field, delete_field=args.delete_field)
    cfg = rd.load_config()
    what = (f"{cfg['records']} well-formed records in {cfg['batches']} {args.format} files of {args.input}"
            if args.input else f"{args.records} records in {args.batches} batches")
    print(f"run dir {rd.root}: {args.mode} {args.table_type} v{args.table_version}, {what}"
          + (f", kills {', '.join(map(str, plan))}" if plan else ""), flush=True)
    if cfg.get("input_spec"):
        print("schema (from the data): " + ", ".join(f"{c} {t}" for c, t in cfg["input_spec"]["schema"]), flush=True)
    print(BATCH_LEGEND, flush=True)
    t0 = time.monotonic()
    say(progress_enabled(args), f"starting Spark ({args.master or 'local[2]'})… (the first start takes 10-30 s)")
    if plan:
        run_with_crashes(rd.root, plan, progress=lambda s: print(s, flush=True))
        print(f"finished after {len(plan)} planned kill(s) in {time.monotonic() - t0:.1f} s")
    else:
        summary = run_job(rd.root, progress=lambda s: print(s, flush=True))
        lat = summary["batch_seconds"]
        print(f"finished, totals: {summary['batches']} batches, {summary['records']} records, "
              f"{summary['quarantined']} quarantined, {len(summary['commits'])} commits in "
              f"{summary['seconds']:.1f} s" + (f" (batch p50 {sorted(lat)[len(lat) // 2]:.2f} s)" if lat else ""))
    return _after(rd.root, args.diff)


def _after(root: Path, diff: bool) -> int:
    if not diff:
        from pipeline.job import open_run
        from pipeline.multiwriter import is_multi_writer
        more = " RUN_DIR... (every run dir that wrote the table)" if is_multi_writer(open_run(root)[1]) else ""
        print(f"compare with the model: hoodie-lab diff {root}{more}\nreplay the model trace: hoodie-lab replay "
              f"{Path(root) / 'trace.jsonl'}")
        return 0
    from pipeline.diff import diff_run, open_run_dir

    _, cfg = open_run_dir(root)
    spark = None
    if cfg["table_type"] == "cow":  # Spark reads the latest base files too, as `hoodie-lab diff` does
        from pipeline.spark import get_spark
        spark = get_spark(cfg.get("master"))
    report = diff_run(root, spark=spark)
    print(report.render())
    return 0 if report.ok else 1


def resume(args) -> int:
    from pipeline.job import run_job

    say(progress_enabled(args), "starting Spark…")
    print(BATCH_LEGEND, flush=True)
    summary = run_job(args.run_dir, progress=lambda s: print(s, flush=True))
    print(f"resumed, totals: {summary['batches']} batch(es) in {summary['seconds']:.1f} s")
    return _after(args.run_dir, False)


def compact(args) -> int:
    from pipeline.compactor import compact as run_compaction

    out = run_compaction(args.table, progress=lambda s: print(s, flush=True))
    print(f"done: {out}")
    return 0


def kill_points(args) -> int:
    from pipeline.crash import KILL_POINTS

    for name, what in KILL_POINTS.items():
        print(f"{name:24s} {what}")
    return 0
