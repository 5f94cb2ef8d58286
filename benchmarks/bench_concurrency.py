"""Concurrency machine benchmark: exhaustive exploration of many processes on one timeline (issue #17).

Run: ``python benchmarks/bench_concurrency.py [--quick]``.

Explores (:class:`checker.concurrency.ConcurrencyModel`, the spec run directly) 2 writers + 1 compactor,
2 keys in one bucket, 2 commits per writer, one compaction, under OCC (``occ-mor-compaction``: MOR, tv8,
simple strategy) and NBCC (``nbcc``), and prints per mode the distinct states, transitions, max depth,
wall and CPU seconds and states per second (wall and CPU). No speed target: the figures are reported.
Exit status 1 when a run is not exhaustive or finds a violation (both designs are correct).
``--quick``: one commit per writer.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checker.concurrency import ConcurrencyModel  # noqa: E402
from checker.explorer import explore  # noqa: E402
from model.concurrency.variants import VARIANTS  # noqa: E402

MODES = {"OCC": "occ-mor-compaction", "NBCC": "nbcc"}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one commit per writer")
    args = ap.parse_args(argv)
    commits = 1 if args.quick else 2
    ok = True
    print(f"bench_concurrency: 2 writers x {commits} commit(s) + 1 compactor (1 compaction), 2 keys, 1 bucket")
    print(f"{'mode':6} {'states':>9} {'transitions':>12} {'depth':>6} {'wall s':>8} {'CPU s':>8} "
          f"{'states/s':>9} {'states/CPU-s':>13}  verdict")
    for mode, name in MODES.items():
        cfg = VARIANTS[name].config(writers=2, commits=commits, keys=2, buckets=1, compactions=1)
        t0 = time.perf_counter()
        res = explore(ConcurrencyModel(cfg), stop_on_violation=False)
        wall = time.perf_counter() - t0
        verdict = "exhaustive, no violation" if res.complete and not res.counterexamples else (
            f"FAILED: complete={res.complete}, violations {[d.property for d in res.counterexamples]}")
        ok &= res.complete and not res.counterexamples
        print(f"{mode:6} {res.states:>9,} {res.transitions:>12,} {res.max_depth:>6} {wall:>8.1f} {res.cpu:>8.1f} "
              f"{res.states / wall:>9,.0f} {res.states_per_cpu_second:>13,.0f}  {verdict}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
