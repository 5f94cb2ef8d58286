"""Pipeline throughput and per-batch latency: blocking vs async coordinator (and the Spark-sink baseline) at a
few emulated commit latencies, against plain Spark parquet output of the same input as the ceiling.

Each configuration runs the real Structured Streaming job (file source, availableNow, one input file per
micro-batch) on one shared local SparkSession. ``--commit-latency-ms`` sleeps before every timeline write of the
coordinator (instant start, commit, rollback) to emulate an object store. Figures: records/s over the query's
wall time, and per-batch latency (foreachBatch entry to return, including the blocking mode's wait for the
previous commit) p50 / p95. The ceiling writes the same files with Spark's parquet file sink.

Target (qualitative, the point of async instant generation): at the highest commit latency the async
coordinator's p50 batch latency is below the blocking one's. Exit 1 when it is not.

    python benchmarks/bench_pipeline.py [--quick] [--records N] [--batches B] [--latencies 0,250,1000]

``--scale`` (issue #19, executor-side writes) measures instead, on one input shared by every run (default
2,000,000 records in 10 batches): Spark's own parquet sink (which also writes on executors) and hoodie-lab
``async`` COW upserts and MOR, each on ``local[1]`` and ``local[2]`` (``--parallelism`` = cores; a fresh Spark
session per master, in its own process), records/s over the query's wall time; the ratio hoodie-lab / parquet
(target >= 80 % on local[2]) and the scaling ratio 2 cores / 1 core; beside them what each run wrote (records and
bytes of data files: the commits' write stats, ``numWrites`` / ``fileSizeInBytes``; the sink's part files),
written records/s and each run's CPU seconds (driver, JVM and Python workers, from ``/proc``: the work, moved far
less by the machine's load than records/s) -- a COW upsert rewrites every file group a batch
touches (Hudi's merge handle), so it writes O(table) records a batch where the sink appends O(batch).
``--cluster`` adds the same runs on a Spark standalone cluster started for it (:class:`pipeline.sparkcluster.SparkCluster`: a master and 2 workers
of 1 core on 127.0.0.1, writer tasks = 2; stopped by their process groups at the end). MOR runs write parquet
log data blocks (``log_block_format=parquet``, ``HoodieParquetDataBlock``, read by hudi-rs). ``--ab``
alternates the writer-task variants (Python or JVM parse, Avro or parquet log blocks) in one ``local[2]``
session. ``--memory`` measures the driver's peak RSS (the Python driver process, ``ru_maxrss``; the JVM is another process) for batches of 20,000 and
200,000 records (async MOR, 2 batches each, a process each): it must not grow with the batch size (target: the
larger batches' peak within 10 % + 32 MiB of the smaller's).

    python benchmarks/bench_pipeline.py --scale [--records 2000000] [--batches 10] [--masters local[1],local[2]] [--cluster]
    python benchmarks/bench_pipeline.py --memory
    python benchmarks/bench_pipeline.py --ab [--records 200000] [--batches 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


def run_pipeline(spark, base: Path, mode: str, table_type: str, records: int, batches: int, latency: int):
    from pipeline.job import prepare_run, run_job

    root = base / f"{mode}-{table_type}-{latency}"
    prepare_run(root, mode=mode, table_type=table_type, records=records, batches=batches, seed=1,
                commit_latency_ms=latency)
    s = run_job(root, spark=spark, progress=None)
    lat = s["batch_seconds"]
    return {"what": f"{mode} {table_type}", "latency_ms": latency, "seconds": s["seconds"],
            "rps": records / s["seconds"], "p50": _pct(lat, 0.5), "p95": _pct(lat, 0.95), "batches": len(lat)}


def run_plain_parquet(spark, base: Path, records: int, batches: int, name: str = "plain-parquet"):
    from pipeline import source as src

    root = base / name
    src.write_inputs(root / "input", records, batches, seed=1)
    t0 = time.monotonic()
    q = (spark.readStream.schema(src.spark_schema()).option("maxFilesPerTrigger", 1).json(str(root / "input"))
         .drop("_corrupt_record").writeStream.format("parquet").option("path", str(root / "out"))
         .option("checkpointLocation", str(root / "chk")).trigger(availableNow=True).start())
    q.awaitTermination()
    seconds = time.monotonic() - t0
    lat = [p["durationMs"]["triggerExecution"] / 1000 for p in q.recentProgress if p["numInputRows"]]
    return {"what": "plain Spark parquet", "latency_ms": 0, "seconds": seconds, "rps": records / seconds,
            "p50": _pct(lat, 0.5), "p95": _pct(lat, 0.95), "batches": len(lat)}


# ------------------------------------------------------------------------------------------ --scale / --memory
def _shared_run(base: Path, shared_input: Path, name: str, batches: int, **cfg) -> Path:
    """A run dir whose input files are hard links to ``shared_input``'s (same bytes, same mtimes)."""
    import json
    import os

    from pipeline.job import prepare_run

    root = base / name
    prepare_run(root, records=batches, batches=batches, seed=1, **cfg)
    for f in sorted((root / "input").iterdir()):
        f.unlink()
    n = 0
    for f in sorted(shared_input.iterdir()):
        os.link(f, root / "input" / f.name)
        n += 1
    assert n == batches
    run = json.loads((root / "run.json").read_text())
    run["records"] = sum(1 for f in shared_input.iterdir() for _ in open(f, "rb"))
    (root / "run.json").write_text(json.dumps(run))
    return root


def table_written(table: Path) -> tuple[int, int]:
    """(records, bytes) of the data files the table's completed commits wrote: the sums of ``numWrites`` and
    ``fileSizeInBytes`` over their write stats (Hudi's commit metadata; a COW merge counts every row of the
    rewritten base file, a MOR log file the rows of its data block). The metadata table is not counted."""
    from lakeio.ondisk.metadata import decode_commit_metadata

    records = size = 0
    hoodie = Path(table) / ".hoodie"
    for d in (hoodie, hoodie / "timeline"):  # table version 6 | 8
        for f in sorted(d.glob("*")) if d.is_dir() else ():
            if f.suffix not in (".commit", ".deltacommit"):
                continue  # requested / inflight instants end in .requested / .inflight
            md = decode_commit_metadata(f.read_bytes(), str(f)) or {}
            for stats in (md.get("partitionToWriteStats") or {}).values():
                for st in stats:
                    records += int(st.get("numWrites") or 0)
                    size += int(st.get("fileSizeInBytes") or 0)
    return records, size


def sink_written(out: Path, records: int) -> tuple[int, int]:
    """(records, bytes) the parquet sink wrote: every input record once, the size of its ``part-*`` files."""
    return records, sum(f.stat().st_size for f in Path(out).rglob("part-*") if f.is_file())


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and every process below it -- the JVM it started and the
    JVM's Python workers -- from ``/proc``, with the children they have reaped (a worker that exited). The
    difference over a run is the run's work on this machine (``local`` masters; a cluster's executors are not
    below the driver)."""
    hz = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    own: dict[int, float] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        f = stat[stat.rindex(")") + 2:].split()
        children.setdefault(int(f[1]), []).append(int(d))
        own[int(d)] = sum(int(x) for x in f[11:15]) / hz  # utime, stime, cutime, cstime
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += own.get(pid, 0.0)
        todo += children.get(pid, [])
    return total


def scale_child(master: str, records: int, batches: int, base: Path, shared: Path, kinds: list[str],
                cluster_cores: int = 2) -> dict:
    """One Spark session on ``master``: plain parquet, then hoodie-lab async COW and MOR; one JSON line.
    ``cluster_cores``: the cores of a ``spark://`` master (its workers' total): the writer tasks' parallelism."""
    import json
    import resource

    from pipeline.job import run_job
    from pipeline.spark import get_spark

    cores = cluster_cores if master.startswith("spark://") else int(master[len("local["):].split(",")[0].rstrip("]"))
    spark = get_spark(master, app_name="bench-scale")
    out = {"master": master, "records": records, "batches": batches}
    try:
        warm = base / f"warm-{cores}"
        run_plain_parquet(spark, warm, 1000, 2, name="warm-parquet")
        src_warm = warm / "warm-parquet" / "input"
        run_job(_shared_run(warm, src_warm, "warm-run", 2, mode="async", table_type="mor",
                            parallelism=cores, buckets=max(4, cores)), spark=spark, progress=None)
        for kind in kinds:
            cpu0 = tree_cpu_seconds()
            if kind == "parquet":
                t0 = time.monotonic()
                q = (spark.readStream.schema(_schema()).option("maxFilesPerTrigger", 1).json(str(shared))
                     .drop("_corrupt_record").writeStream.format("parquet").option("path", str(base / f"pq-{cores}"))
                     .option("checkpointLocation", str(base / f"pq-chk-{cores}")).trigger(availableNow=True).start())
                q.awaitTermination()
                out["parquet"] = records / (time.monotonic() - t0)
                out["parquet_written"] = sink_written(base / f"pq-{cores}", records)
            else:
                table_type, _, fmt = kind.partition("-")  # mor: parquet log blocks; mor-avro: Avro log blocks
                root = _shared_run(base, shared, f"{kind}-{cores}", batches, mode="async", table_type=table_type,
                                   parallelism=cores, buckets=4, log_block_format=fmt or "parquet")
                s = run_job(root, spark=spark, progress=None)
                out[kind] = records / s["seconds"]
                out[f"{kind}_written"] = table_written(root / "table")
                shutil.rmtree(root / "table", ignore_errors=True)  # the next run's disk cache, not this table's
            out[f"{kind}_cpu"] = tree_cpu_seconds() - cpu0
            wr, wb = out[f"{kind}_written"]
            print(f"    {master} {kind}: {out[kind]:,.0f} records/s; wrote {wr:,} records, {wb / 2**20:,.0f} MiB; "
                  f"{out[f'{kind}_cpu']:.1f} CPU s", file=sys.stderr, flush=True)
    finally:
        spark.stop()
    out["driver_peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out), flush=True)
    return out


def _schema():
    from pipeline import source as src
    return src.spark_schema()


def _child(args: list[str]) -> dict:
    import json
    import subprocess

    p = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    sys.stderr.write(p.stderr[-2000:] if p.returncode else "".join(
        ln + "\n" for ln in p.stderr.splitlines() if ln.startswith("    ")))
    if p.returncode:
        raise RuntimeError(f"bench child {args} failed (exit {p.returncode})")
    return json.loads(p.stdout.strip().splitlines()[-1])


def memory_child(records: int, base: Path) -> dict:
    """One process: async MOR, 2 batches of ``records // 2``; the driver's peak RSS."""
    import json
    import resource

    from pipeline.job import run_job
    from pipeline.spark import get_spark

    spark = get_spark("local[2]", app_name="bench-memory")
    try:
        shared = base / "input"  # written by the parent: generating it here would set the peak
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        s = run_job(_shared_run(base, shared, "run", 2, mode="async", table_type="mor"), spark=spark, progress=None)
    finally:
        spark.stop()
    out = {"batch_records": records // 2, "seconds": s["seconds"], "rss_before_mib": before,
           "driver_peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    print(json.dumps(out), flush=True)
    return out


def scale_main(args) -> int:
    from pipeline import source as src

    records = args.records or 2_000_000
    batches = args.batches or 10
    masters = [m for m in args.masters.split(",") if m]  # --masters '' --cluster: the cluster only
    base = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    load0 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    try:
        t0 = time.monotonic()
        shared = base / "input"
        src.write_inputs(shared, records, batches, seed=1)
        print(f"input: {records:,} records in {batches} batches ({sum(f.stat().st_size for f in shared.iterdir()) / 2**20:.0f}"
              f" MiB JSON lines) in {time.monotonic() - t0:.1f} s", flush=True)
        rows = []
        for m in masters:
            rows.append(_child(["--scale-child", "--masters", m, "--records", str(records), "--batches", str(batches),
                                "--base", str(base)]))
        if args.cluster:  # a standalone master + 2 workers (1 core each) on 127.0.0.1, stopped by their pids
            from pipeline.sparkcluster import SparkCluster

            os.environ.setdefault("HOODIE_LAB_EXECUTOR_MEMORY", "1g")  # the child's executors (spark.executor.memory)
            cluster = SparkCluster(base / "cluster", workers=2, cores=1, memory="2g")
            try:
                cluster.start()
                print(f"standalone cluster {cluster.url}: 2 workers x 1 core (pids {cluster.pids})", flush=True)
                row = _child(["--scale-child", "--masters", cluster.url, "--records", str(records),
                              "--batches", str(batches), "--base", str(base)])
                row["master"] = "cluster 2x1"
                rows.append(row)
            finally:
                cluster.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"\nload average before/after: {load0} / {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"\ninput records/s (records / the query's wall time) and the ratio to the parquet sink's:")
    print(f"{'master':11s} {'parquet sink':>14s} {'async COW':>12s} {'COW/pq':>7s} {'async MOR':>12s} {'MOR/pq':>7s} "
          f"{'driver RSS':>11s}")
    for r in rows:
        print(f"{r['master']:11s} {r['parquet']:14,.0f} {r['cow']:12,.0f} {r['cow'] / r['parquet']:6.0%} "
              f"{r['mor']:12,.0f} {r['mor'] / r['parquet']:6.0%} {r['driver_peak_rss_mib']:8.0f} MiB")
    print("\nwritten per run (data files; hoodie-lab: the commits' write stats, numWrites and fileSizeInBytes; the "
          "sink: its part files), and written records/s with its ratio to the sink's:")
    print(f"{'master':11s} {'run':8s} {'records':>12s} {'MiB':>8s} {'written rec/s':>14s} {'/pq':>6s}")
    for r in rows:
        secs = {k: r["records"] / r[k] for k in ("parquet", "cow", "mor")}
        pq_wps = r["parquet_written"][0] / secs["parquet"]
        for k in ("parquet", "cow", "mor"):
            wr, wb = r[f"{k}_written"]
            print(f"{r['master']:11s} {k:8s} {wr:12,d} {wb / 2**20:8,.0f} {wr / secs[k]:14,.0f} "
                  f"{wr / secs[k] / pq_wps:6.0%}")
    local = [r for r in rows if not r["master"].startswith("cluster")]
    if local and all("cow_cpu" in r for r in local):  # a cluster's executors are not this process's children
        print("\nwork per run: CPU seconds of the driver, its JVM and the Python workers (local masters; moved "
              "far less by the machine's load than records/s):")
        print(f"{'master':11s} {'parquet sink':>14s} {'async COW':>12s} {'COW/pq':>7s} {'async MOR':>12s} "
              f"{'MOR/pq':>7s}")
        for r in rows:
            if r["master"].startswith("cluster"):
                continue
            pq_cpu = r["parquet_cpu"]
            print(f"{r['master']:11s} {pq_cpu:14.1f} {r['cow_cpu']:12.1f} {r['cow_cpu'] / pq_cpu:6.0%} "
                  f"{r['mor_cpu']:12.1f} {r['mor_cpu'] / pq_cpu:6.0%}")
    ok = True
    by = {r["master"]: r for r in rows}
    if "local[1]" in by and "local[2]" in by:
        for k in ("parquet", "cow", "mor"):
            print(f"scaling 2 cores / 1 core, {k}: {by['local[2]'][k] / by['local[1]'][k]:.2f}x")
    two = by.get("local[2]")
    if two:
        for k in ("cow", "mor"):
            ratio = two[k] / two["parquet"]
            met = ratio >= 0.8
            ok &= met
            print(f"target: async {k.upper()} >= 80 % of Spark's parquet sink on local[2]: {ratio:.0%} "
                  f"{'met' if met else 'MISSED'}")
    return 0 if ok else 1


AB_VARIANTS = {"Python parse_line, Avro blocks": dict(jvm_parse=False, log_block_format="avro"),
               "JVM parse, Avro blocks": dict(jvm_parse=True, log_block_format="avro"),
               "Python parse_line, parquet blocks": dict(jvm_parse=False, log_block_format="parquet"),
               "JVM parse, parquet blocks": dict(jvm_parse=True, log_block_format="parquet")}


def ab_main(args) -> int:
    """``--ab``: the writer-task variants (who parses the lines; MOR log block format) alternated in one
    ``local[2]`` session on the same input, twice each: records/s and the load average at each run's end."""
    from pipeline.job import prepare_run, run_job
    from pipeline.spark import get_spark

    records, batches = args.records or 200_000, args.batches or 2
    spark = get_spark("local[2]", app_name="bench-ab")
    base = Path(tempfile.mkdtemp(prefix="bench-ab-"))
    try:
        prepare_run(base / "warm", mode="async", table_type="mor", records=2000, batches=2, seed=1)
        run_job(base / "warm", spark=spark, progress=None)
        n = 0
        for table_type in ("mor", "cow"):
            for rep in range(2):
                for name, kw in AB_VARIANTS.items():
                    if table_type == "cow" and "parquet" in name:
                        continue  # COW writes no log blocks
                    n += 1
                    root = base / f"run-{n}"
                    prepare_run(root, mode="async", table_type=table_type, records=records, batches=batches, seed=1,
                                **kw)
                    s = run_job(root, spark=spark, progress=None)
                    print(f"{table_type} {name:36s} {records / s['seconds']:9,.0f} records/s  "
                          f"(load average {os.getloadavg()[0]:.1f})", flush=True)
                    shutil.rmtree(root)
    finally:
        shutil.rmtree(base, ignore_errors=True)
        spark.stop()
    return 0


def memory_main(args) -> int:
    rows = []
    for n in (40_000, 400_000):
        base = Path(tempfile.mkdtemp(prefix="bench-memory-"))
        try:
            from pipeline import source as src
            src.write_inputs(base / "input", n, 2, seed=1)
            rows.append(_child(["--memory-child", "--records", str(n), "--base", str(base)]))
        finally:
            shutil.rmtree(base, ignore_errors=True)
    for r in rows:
        print(f"batches of {r['batch_records']:7,d} records: driver peak RSS {r['driver_peak_rss_mib']:.0f} MiB "
              f"(before the run {r['rss_before_mib']:.0f} MiB), {r['seconds']:.1f} s")
    small, large = rows[0]["driver_peak_rss_mib"], rows[1]["driver_peak_rss_mib"]
    met = large <= small * 1.10 + 32
    print(f"target: the driver's peak RSS does not grow with the batch size (x10 records a batch: "
          f"{small:.0f} -> {large:.0f} MiB): {'met' if met else 'MISSED'}")
    return 0 if met else 1


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["--scale-child"], ["--memory-child"]):
        cp = argparse.ArgumentParser()
        cp.add_argument(argv[0], action="store_true")
        cp.add_argument("--masters", default="local[2]")
        cp.add_argument("--records", type=int)
        cp.add_argument("--batches", type=int, default=2)
        cp.add_argument("--base", type=Path)
        a = cp.parse_args(argv)
        if argv[0] == "--memory-child":
            memory_child(a.records, a.base)
        else:
            scale_child(a.masters, a.records, a.batches, a.base, a.base / "input", ["parquet", "cow", "mor"])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small run (10,000 records, 5 batches, 0 and 500 ms)")
    ap.add_argument("--records", type=int, default=None)
    ap.add_argument("--batches", type=int, default=None)
    ap.add_argument("--latencies", default=None, help="commit latencies in ms, comma-separated")
    ap.add_argument("--table-type", choices=["cow", "mor"], default="mor")
    ap.add_argument("--scale", action="store_true", help="executor-side writes: 2M records, parquet sink vs async")
    ap.add_argument("--masters", default="local[1],local[2]", help="--scale: Spark masters, comma-separated")
    ap.add_argument("--cluster", action="store_true",
                    help="--scale: also on a standalone master + 2 workers (1 core each) on 127.0.0.1")
    ap.add_argument("--memory", action="store_true", help="driver peak RSS at two batch sizes")
    ap.add_argument("--ab", action="store_true", help="writer-task variants (JVM/Python parse, Avro/parquet log "
                    "blocks) alternated on local[2] (default 200,000 records in 2 batches)")
    args = ap.parse_args(argv)
    if args.scale:
        return scale_main(args)
    if args.memory:
        return memory_main(args)
    if args.ab:
        return ab_main(args)
    records = args.records or (10_000 if args.quick else 50_000)
    batches = args.batches or (5 if args.quick else 10)
    latencies = [int(x) for x in (args.latencies or ("0,500" if args.quick else "0,250,1000")).split(",")]
    modes = ["blocking", "async"] + ([] if args.quick else ["spark-sink"])

    from pipeline.spark import get_spark

    t0 = time.monotonic()
    spark = get_spark(app_name="bench-pipeline")
    print(f"SparkSession in {time.monotonic() - t0:.1f} s; {records} records in {batches} batches, "
          f"{args.table_type}, table version 8", flush=True)
    base = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    rows = []
    try:
        run_pipeline(spark, base / "warm-up", "async", args.table_type, 1000, 2, 0)  # codegen, first write
        run_plain_parquet(spark, base, 1000, 2, name="warm-up-parquet")
        rows.append(run_plain_parquet(spark, base, records, batches))
        for latency in latencies:
            for mode in modes:
                rows.append(run_pipeline(spark, base, mode, args.table_type, records, batches, latency))
                r = rows[-1]
                print(f"  {r['what']:22s} L={latency:5d} ms  {r['rps']:9.0f} rec/s  p50 {r['p50']:.3f} s", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
        spark.stop()
    print(f"\n{'configuration':24s} {'commit latency':>14s} {'records/s':>10s} {'batch p50':>10s} "
          f"{'batch p95':>10s} {'wall':>7s}")
    for r in rows:
        print(f"{r['what']:24s} {r['latency_ms']:11d} ms {r['rps']:10.0f} {r['p50']:9.3f}s {r['p95']:9.3f}s "
              f"{r['seconds']:6.1f}s")
    if 0 in latencies:
        from sim.pipeline_twin import compare

        print("\nsimulation (sim.pipeline_twin, W calibrated at L=0) vs measured async/blocking ratio:")
        from pipeline import source as src
        from pipeline.job import default_config
        from sim.pipeline_twin import task_shares

        cfg = default_config()  # the runs' writer tasks (parallelism) and buckets; local[2]: 2 cores
        keys = [json.loads(ln)["key"] for b in src.generate_batches(records, batches, seed=1) for ln in b]
        compare(rows, records, batches, tasks=cfg["parallelism"], cores=2,
                shares=task_shares(keys, cfg["buckets"], cfg["parallelism"]))  # within +-20 % is the target
    top = max(latencies)
    p50 = {r["what"].split()[0]: r["p50"] for r in rows if r["latency_ms"] == top and r["what"] != "plain Spark parquet"}
    ok = p50["async"] < p50["blocking"]
    print(f"\ntarget: at {top} ms commit latency async p50 {p50['async']:.3f} s < blocking p50 "
          f"{p50['blocking']:.3f} s: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
