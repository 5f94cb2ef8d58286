"""Liveness benchmark: the cost of judging the temporal properties (``checker.liveness``) against the
safety-only exploration of the same bound, both over the spec, for each machine that has temporal properties.

Run: ``python benchmarks/bench_liveness.py [--quick] [--machines protocol,indexing,archival]``. Bounds:

* ``protocol``: the Hudi 1.1 design, 2 writers x 2 checkpoints, lost acks, 4 records a split (``--quick``: 2);
  safety-only :class:`checker.liveness.SpecModel` with the protocol invariants, then ``check_liveness``;
* ``indexing``: the MDT + asynchronous indexer, liveness design ``hudi-1.x-failures`` (``--quick``: ``hudi-1.x``),
  :class:`checker.indexing.IndexingModel` (invariants I17, MDT) then :class:`~checker.indexing.IndexingLiveModel`;
* ``archival``: writers, a LAZY cleaner and the archiver, design ``hudi`` with 3 writers and 4 writes
  (``--quick``: its own bound, 2 writers and 3 writes), :class:`checker.archival.ArchivalModel` (the history's
  archival invariants) then :class:`~checker.archival.ArchivalLiveModel`.

Prints, for each machine, distinct states, transitions, CPU seconds and the ratio liveness / safety; target:
liveness costs at most 3x the safety-only exploration (CPU time: the machine is shared). Exit status 1 when a
target is missed, a run is not exhaustive, finds a violation, or the two runs disagree on the state count.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from checker.explorer import explore  # noqa: E402
from checker.liveness import SpecModel, check_liveness, check_model_liveness  # noqa: E402

MACHINES = ("protocol", "indexing", "archival")


def _protocol(quick: bool):
    from model.protocol.variants import variant

    cfg = variant("hudi-1.1", parallelism=2, max_checkpoints=2, faults=frozenset({"lost-ack"}),
                  records=2 if quick else 4)
    return ("hudi-1.1, 2 writers x 2 checkpoints, lost acks, " + ("2" if quick else "4") + " records a split",
            lambda: explore(SpecModel(cfg)), lambda: check_liveness(cfg))


def _indexing(quick: bool):
    from checker.indexing import IndexingLiveModel, IndexingModel
    from model.mdt.variants import INDEXING_LIVENESS_VARIANTS, INDEXING_VARIANTS

    lv = INDEXING_LIVENESS_VARIANTS["hudi-1.x" if quick else "hudi-1.x-failures"]
    cfg = replace(INDEXING_VARIANTS[lv.base].config(), **lv.overrides)
    return (f"{lv.name}, {cfg.writers} writers", lambda: explore(IndexingModel(cfg)),
            lambda: check_model_liveness(IndexingLiveModel(cfg, lv.unfair)))


def _archival(quick: bool):
    from checker.archival import ArchivalLiveModel, ArchivalModel
    from model.archival_machine import ARCHIVAL_LIVENESS_VARIANTS

    lv = ARCHIVAL_LIVENESS_VARIANTS["hudi"]
    cfg = lv.config() if quick else lv.config(writers=3, writes=4)
    return (f"{lv.name}, {cfg.writers} writers, {cfg.writes} writes", lambda: explore(ArchivalModel(cfg)),
            lambda: check_model_liveness(ArchivalLiveModel(cfg, lv.unfair)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the smaller bounds")
    ap.add_argument("--machines", default=",".join(MACHINES), help=f"comma-separated, of {', '.join(MACHINES)}")
    args = ap.parse_args(argv)
    machines = [m.strip() for m in args.machines.split(",") if m.strip()]
    bad = [m for m in machines if m not in MACHINES]
    if bad or not machines:
        ap.error(f"--machines: {', '.join(bad) or 'none given'}: not one of {', '.join(MACHINES)}")
    ok = True
    for name in machines:
        bound, safety_run, live_run = {"protocol": _protocol, "indexing": _indexing, "archival": _archival}[name](
            args.quick)
        print(f"{name}: {bound}", flush=True)
        safety = safety_run()
        print(f"  safety-only : {safety.states:>9,} states  {safety.transitions:>10,} transitions  "
              f"{safety.cpu:8.1f} CPU s  ({safety.stop_reason})", flush=True)
        live = live_run()
        extra = (f"+{live.continuation_states:,} continuation states, "
                 if getattr(live, "continuation_states", 0) else "")
        print(f"  liveness    : {live.states:>9,} states  {live.transitions:>10,} transitions  {live.cpu:8.1f} CPU s  "
              f"({extra}{live.fair_components:,} fair components, {len(live.violations)} violations, {live.cut} cut"
              f"{', INCOMPLETE' if not live.complete else ''})")
        ratio = live.cpu / safety.cpu if safety.cpu else float("inf")
        print(f"  ratio       : {ratio:.2f}x (target <= 3x)", flush=True)
        ok &= (safety.complete and not safety.counterexamples and live.holds and live.states == safety.states
               and ratio <= 3.0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
