"""What a built record index costs the pipeline by itself (issue #18, a diagnostic; not in ``make bench``).

``bench_indexing.py`` sets the pipeline beside ``hoodie-lab index`` against the pipeline alone on a table without
the index. Part of that difference outlasts the indexer's process: once the table has a record index, every commit
keeps it (the writer tasks return their record delegates, the MDT deltacommit writes a record-index log file).
This script measures that part alone: the same 1,000,000-record table as ``bench_indexing.py`` builds, once as it
is and once with the record index built beforehand by ``hoodie-lab index --priority normal`` (no indexer runs
during the measurement), then ``--pairs`` pairs of pipeline runs (async, MOR, ``--pipeline-records`` records in
``--pipeline-batches`` batches), each into a fresh copy, the order swapped every other pair, after the same
warm-up run. Throughput = records per batch / the mean commit gap (``bench_indexing._pipeline_run``). Prints
each pair's ratio and the pooled one; no target.

    python benchmarks/bench_indexing_upkeep.py [--records N] [--pipeline-records R] [--pipeline-batches B]
        [--pairs P] [--seed S]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_indexing as bi  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--pipeline-records", type=int, default=300_000)
    ap.add_argument("--pipeline-batches", type=int, default=60)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    for name in ("records", "pipeline_records", "pipeline_batches", "pairs"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')}: {getattr(args, name)}: at least 1")
    # what bench_indexing._pipeline_run reads besides the sizes (no indexer is started: beside=False)
    args.indexer_after, args.indexer_priority, args.beside = 2, "background", "indexer"
    print(f"bench_indexing_upkeep: seed {args.seed} (replay: --seed {args.seed}); load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-indexing-upkeep-"))
    try:
        src = tmp / "src"
        built = bi.build_table(src, args.records, 100_000, bi.Clock())
        indexed = tmp / "src-indexed"
        shutil.copytree(src, indexed)
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
        r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "index", str(indexed), "--type", "record_index",
                            "--concurrency-mode", "optimistic_concurrency_control", "--lock-provider", "filesystem",
                            "--priority", "normal"], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"hoodie-lab index failed ({r.returncode}): {r.stderr.strip()[-500:]}", file=sys.stderr)
            return 1
        print(f"table: {args.records:,} records in {built:.1f} s; record index built beforehand", flush=True)
        from pipeline.spark import get_spark

        spark = get_spark()
        bi.warm_up(tmp, src, args, spark)
        rps: dict[bool, list[float]] = {False: [], True: []}
        for i in range(args.pairs):
            for with_index in ((False, True) if i % 2 == 0 else (True, False)):
                table = tmp / f"table-{i}-{'indexed' if with_index else 'plain'}"
                shutil.copytree(indexed if with_index else src, table)
                os.sync()
                got = bi._pipeline_run(tmp, table.name, table, args, spark, False)
                rps[with_index].append(got["rps"])
                shutil.rmtree(table, ignore_errors=True)
            print(f"pair {i + 1}: without the index {rps[False][-1]:,.0f} records/s, with it {rps[True][-1]:,.0f} "
                  f"({rps[True][-1] / rps[False][-1]:.1%})", flush=True)
        plain, with_idx = (sum(v) / len(v) for v in (rps[False], rps[True]))
        print(f"pooled: without the index {plain:,.0f} records/s, with it {with_idx:,.0f}: {with_idx / plain:.1%}")
        print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
