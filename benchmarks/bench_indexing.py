"""Indexing a large table while a writer keeps committing (issue #18): the writer's throughput with the indexer
beside it, against its throughput alone; the index's build and catch-up times.

Setup: a merge-on-read table version 8 of ``--records`` records (default 1,000,000; 8 partitions) written in
chunks by ``HudiTableWriter`` through the metadata-table commit hook (the write path the pipeline's coordinator
calls: ``mdt.committing`` around ``writer.commit``), then copied twice so both runs start from the same bytes.

* alone: the writer commits ``--commits`` upsert batches of ``--batch`` records (70 % updates) on copy A;
* beside the indexer: ``hoodie-lab index --type record_index`` runs as a separate process on copy B while the
  writer commits on B until the indexer has finished and at least ``--commits`` batches are done; the writer's
  throughput is taken over the batches that ran while the indexer was alive.

Figures: writer records/s alone and beside the indexer and their ratio; the indexer's build and catch-up
seconds, records indexed, catch-up decisions; whether the audit of B holds (``MDT.record-index``: the index
equals a rebuild). Target: the ratio is >= 0.90; exit 1 when it is not or the audit fails.
Every figure depends on the machine's load: run it on a quiet machine and say what else ran.

    python benchmarks/bench_indexing.py [--quick] [--records N] [--batch B] [--commits C] [--seed S]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PARTITIONS = 8


class Clock:
    def __init__(self):
        self.ms = int(time.time() * 1000) - 3_600_000  # an hour back: the indexer's wall-clock times come later

    def __call__(self) -> str:
        import datetime as dt

        self.ms += 3
        d = dt.datetime.fromtimestamp(self.ms / 1000, dt.timezone.utc)
        return d.strftime("%Y%m%d%H%M%S") + f"{self.ms % 1000:03d}"


def _batch(keys, ts):
    import pyarrow as pa

    return pa.table({"key": [f"k{k:09d}" for k in keys], "ts": [ts] * len(keys),
                     "partition": [f"p{k % PARTITIONS}" for k in keys], "v": [float(k % 997) for k in keys]})


def _commit(w, clock, records, hook=True):
    from lakeio.ondisk import mdt

    t = clock()
    w.start(t)
    r = w.write_batch(t, records, "upsert")
    c = clock()
    with mdt.committing(w.base_path, 8, t, c, r.write_stats, enabled=hook):
        w.commit(t, c, r)
    return t


def _writer(path: Path):
    from lakeio.hudiformat.table import HudiTableWriter

    return HudiTableWriter(path, "MERGE_ON_READ", 8, record_key="key", ordering_field="ts",
                           partition_field="partition", table_name="bench_idx")


def build_table(path: Path, records: int, chunk: int, clock: Clock) -> float:
    w = _writer(path)
    t0 = time.perf_counter()
    for start in range(0, records, chunk):
        _commit(w, clock, _batch(range(start, min(records, start + chunk)), 0))
    return time.perf_counter() - t0


def upserts(rng: random.Random, n: int, existing: int, fresh, ts: int):
    """70 % updates of existing keys, 30 % new keys (``fresh``: an iterator of unused keys)."""
    upd = int(n * 0.7)
    keys = rng.sample(range(existing), upd) + [next(fresh) for _ in range(n - upd)]
    return _batch(keys, ts)


def run_writer(path: Path, clock: Clock, *, existing: int, batch: int, commits: int, seed: int,
               while_alive=None) -> list[tuple[float, float, bool]]:
    """(start, end, indexer alive) of every commit; with ``while_alive`` keeps going while it returns True."""
    w = _writer(path)
    rng = random.Random(seed)
    fresh = itertools.count(existing)
    out = []
    i = 0
    while i < commits or (while_alive is not None and while_alive()):
        alive = while_alive() if while_alive else False
        recs = upserts(rng, batch, existing, fresh, i + 1)
        t0 = time.perf_counter()
        _commit(w, clock, recs)
        out.append((t0, time.perf_counter(), alive and (while_alive() if while_alive else False)))
        i += 1
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="100,000 records, 10 commits")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=20_000)
    ap.add_argument("--commits", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the tables (printed)")
    args = ap.parse_args(argv)
    if args.quick:
        args.records, args.commits, args.batch = 100_000, 10, 5_000
    from lakeio.audit import audit_table

    tmp = Path(tempfile.mkdtemp(prefix="bench-indexing-"))
    try:
        clock = Clock()
        src = tmp / "src"
        built = build_table(src, args.records, 100_000, clock)
        print(f"table: {args.records:,} records in {built:.1f} s ({src})", flush=True)
        a, b = tmp / "alone", tmp / "beside"
        shutil.copytree(src, a)
        shutil.copytree(src, b)
        wclock = Clock()
        wclock.ms = clock.ms + 1000
        alone = run_writer(a, wclock, existing=args.records, batch=args.batch, commits=args.commits, seed=args.seed)
        secs = sum(e - s for s, e, _ in alone)
        rps_alone = len(alone) * args.batch / secs
        print(f"writer alone: {len(alone)} commits of {args.batch:,}, {rps_alone:,.0f} records/s", flush=True)

        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
        cmd = [sys.executable, "-m", "hoodie_lab.cli", "index", str(b), "--type", "record_index",
               "--concurrency-mode", "optimistic_concurrency_control", "--lock-provider", "filesystem",
               "--poll", "0.1", "--json"]
        wclock2 = Clock()
        wclock2.ms = clock.ms + 1000
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        beside = run_writer(b, wclock2, existing=args.records, batch=args.batch, commits=args.commits,
                            seed=args.seed, while_alive=lambda: proc.poll() is None)
        out, err = proc.communicate()
        if proc.returncode != 0:
            print(f"indexer failed (exit {proc.returncode}): {err.strip()}")
            return 1
        rep = json.loads(out)
        during = [(s, e) for s, e, alive in beside if alive]
        if not during:
            print("the indexer finished before the writer's first commit: no overlap measured")
            return 1
        rps_beside = len(during) * args.batch / sum(e - s for s, e in during)
        ratio = rps_beside / rps_alone
        counts = {}
        for _, d in rep["decisions"]:
            counts[d] = counts.get(d, 0) + 1
        print(f"writer beside the indexer: {len(during)} commits while it ran, {rps_beside:,.0f} records/s "
              f"({ratio:.1%} of alone)")
        print(f"indexer: {rep['base_records']:,} records built in {rep['build_s']:.1f} s, catch-up "
              f"{rep['catchup_s']:.1f} s over {len(rep['decisions'])} instants ({counts})")
        t0 = time.perf_counter()
        res = audit_table(str(b))
        ok = next(v for v in res.verdicts if v.invariant == "MDT.record-index").holds and res.exit_code == 0
        print(f"audit of the indexed table: {'holds' if ok else 'VIOLATED'} ({time.perf_counter() - t0:.1f} s)")
        target = ratio >= 0.90
        print(f"target writer throughput >= 90 % beside the indexer: {'met' if target else 'NOT met'}")
        if args.keep:
            print(f"tables kept in {tmp}")
        return 0 if target and ok else 1
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
