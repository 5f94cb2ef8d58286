"""Liveness benchmark: the cost of judging the temporal properties (``checker.liveness``) against the
safety-only exploration of the same bound, both over the spec.

Run: ``python benchmarks/bench_liveness.py [--quick]``. Bound: the Hudi 1.1 design, 2 writers x 2 checkpoints,
lost acks (``--quick``: 2 records per split instead of 4). Prints, for each run, distinct states, CPU seconds
and the ratio; target: liveness costs at most 3x the safety-only exploration (CPU time: the machine is
shared). Exit status 1 when the target is missed or a run is not exhaustive / finds a violation.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from checker.explorer import explore  # noqa: E402
from checker.liveness import SpecModel, check_liveness  # noqa: E402
from model.protocol.variants import variant  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    cfg = variant("hudi-1.1", parallelism=2, max_checkpoints=2, faults=frozenset({"lost-ack"}),
                  records=2 if args.quick else 4)
    safety = explore(SpecModel(cfg))
    print(f"safety-only : {safety.states:>9,} states  {safety.transitions:>10,} transitions  "
          f"{safety.cpu:8.1f} CPU s  ({safety.stop_reason})")
    live = check_liveness(cfg)
    print(f"liveness    : {live.states:>9,} states  {live.transitions:>10,} transitions  {live.cpu:8.1f} CPU s  "
          f"(+{live.continuation_states:,} continuation states, {live.fair_components:,} fair components, "
          f"{len(live.violations)} violations, {live.cut} cut)")
    ratio = live.cpu / safety.cpu if safety.cpu else float("inf")
    print(f"ratio       : {ratio:.2f}x (target <= 3x)")
    ok = safety.complete and not safety.counterexamples and live.holds and live.states == safety.states
    return 0 if ok and ratio <= 3.0 else 1


if __name__ == "__main__":
    sys.exit(main())
