"""Write throughput of lakeio.hudiformat: rows/s for COW base files (the target) and MOR log files.

Run: ``python benchmarks/bench_hudiformat.py [--rows N] [--partitions P]``. Prints one line per case and returns
the figures from :func:`run` (a dict) for a benchmark runner. Each case writes fresh tables in a temporary
directory (median of ``--repeats`` runs, after a warm-up write); the timed part is ``write_batch`` + ``commit`` (data files, markers, timeline files). The row count is
checked through hudi-rs after each case, so a fast but wrong writer does not pass unnoticed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lakeio.hudiformat import HudiTableWriter  # noqa: E402


def _records(n: int, partitions: int, seed: int, ts: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    keys = np.arange(n)
    return pa.table({
        "key": pa.array([f"key-{k:08d}" for k in keys]),
        "ts": pa.array(np.full(n, ts, dtype=np.int64)),
        "p": pa.array([f"p{k % partitions}" for k in keys]),
        "amount": pa.array(rng.random(n)),
        "payload": pa.array([f"payload-{k}-{seed}" for k in keys]),
    })


class _Clock:
    def __init__(self):
        self.t = dt.datetime(2026, 1, 1)

    def __call__(self) -> str:
        self.t += dt.timedelta(seconds=1)
        return self.t.strftime("%Y%m%d%H%M%S") + "000"


def _commit(w: HudiTableWriter, clock: _Clock, records: pa.Table) -> float:
    t = clock()
    w.start(t)
    t0 = time.perf_counter()
    res = w.write_batch(t, records)
    w.commit(t, clock(), res)
    return time.perf_counter() - t0


def _count(path: Path) -> int:
    try:
        from hudi import HudiTable
    except ImportError:  # pragma: no cover - hudi is a project dependency
        return -1
    return sum(b.num_rows for b in HudiTable(str(path)).read())


def run(rows: int = 100_000, partitions: int = 4, repeats: int = 3) -> dict[str, float]:
    figures: dict[str, float] = {}
    base = Path(tempfile.mkdtemp(prefix="bench-hudiformat-"))
    try:
        first = _records(rows, partitions, seed=1, ts=1)
        second = _records(rows, partitions, seed=2, ts=2)
        cases = [
            ("cow_v8_insert", "cow", 8, "avro", [first]),
            ("cow_v8_upsert_all", "cow", 8, "avro", [first, second]),
            ("cow_v6_insert", "cow", 6, "avro", [first]),
            ("mor_v8_upsert_avro_log", "mor", 8, "avro", [first, second]),
            ("mor_v8_upsert_parquet_log", "mor", 8, "parquet", [first, second]),
        ]
        # warm-up: first use of the Arrow compute kernels and the parquet writer
        warm = HudiTableWriter(base / "warmup", "cow", 8, record_key="key", ordering_field="ts", partition_field="p")
        _commit(warm, _Clock(), _records(1000, partitions, seed=0, ts=1))
        for name, ttype, version, fmt, batches in cases:
            timings = []
            for rep in range(repeats):
                path = base / f"{name}-{rep}"
                w = HudiTableWriter(path, ttype, version, record_key="key", ordering_field="ts",
                                    partition_field="p", log_block_format=fmt)
                clock = _Clock()
                timings.append([_commit(w, clock, b) for b in batches][-1])
            n = _count(path)
            if n not in (-1, rows):
                raise SystemExit(f"{name}: hudi-rs reads {n} rows, expected {rows}")
            secs = statistics.median(timings)
            figures[name] = rows / secs
            print(f"{name:28s} {rows:>8d} rows in {secs:6.3f} s (median of {repeats}) = "
                  f"{rows / secs:>10,.0f} rows/s (hudi-rs reads {n} rows)")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    run(args.rows, args.partitions, args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
