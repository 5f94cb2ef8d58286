"""Behaviour digest: one hash of what the simulation and the explorer produce, to compare two trees.

Run: ``python benchmarks/digest.py [--explore-only | --sim-only]``. Prints one line per part and a total.
A refactoring that keeps behaviour keeps every line identical (run it on the old and the new tree).

* simulation: 11 seeded runs -- both modes of ``blocking-vs-async`` and ``reference`` (quick), ``truetime``
  and ``collisions`` base runs, and three recovery crash plans: the protocol events (kind and fields, in
  order), the summary, and the processed/committed series bit for bit.
* explorer: distinct states, transitions and depth of the correct design and of every broken variant at
  small bounds (with the invariant each counterexample breaks).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _h(obj) -> str:
    return hashlib.sha256(repr(obj).encode()).hexdigest()[:16]


def sim_parts() -> list[tuple[str, str]]:
    from sim import config as simcfg
    from sim.engine import CrashPlan, run_stream

    out = []
    runs = [("blocking-vs-async", m, 7, None) for m in ("blocking", "async")]
    runs += [("reference", m, 11, None) for m in ("blocking", "async")]
    runs += [("truetime", "async", 3, None), ("collisions", "async", 3, None)]
    runs += [("recovery", "async", 5, CrashPlan(target="coordinator", step="deliver-ack", when="after")),
             ("recovery", "blocking", 5, CrashPlan(target="writer", step="flush", when="before")),
             ("recovery", "async", 9, CrashPlan(target="coordinator", step="snapshot-task", when="before")),
             ("blocking-vs-async", "async", 1, None), ("reference", "async", 2, None)]
    for name, mode, seed, plan in runs:
        exp = simcfg.load(name)
        try:
            res = run_stream(exp, mode, seed, quick=True, crash_plan=plan)
        except Exception as exc:  # an experiment kind run_stream does not take: record that, consistently
            out.append((f"sim {name} {mode} {seed}", f"error {type(exc).__name__}"))
            continue
        m = res.metrics
        summary = {k: v for k, v in res.summary.items() if "sim_events" not in k and "wall" not in k
                   and "cpu" not in k}
        parts = (res.verdict, res.model_events, res.lost_records, res.duplicated_records, sorted(summary.items()),
                 list(m.processed.values) if hasattr(m.processed, "values") else repr(m.processed),
                 list(m.committed.values) if hasattr(m.committed, "values") else repr(m.committed),
                 m.commits, list(m.stall_fields))
        out.append((f"sim {name} {mode} {seed} {plan.target + '/' + plan.step if plan else ''}".strip(), _h(parts)))
    return out


def explore_parts() -> list[tuple[str, str]]:
    try:  # the layout after the architecture change, then the one before it
        from checker import SystemModel, explore
    except ImportError:
        from hoodie_lab.explore import SystemModel, explore
    from model.protocol import VARIANTS, variant

    out = []
    bounds = [dict(parallelism=2, max_checkpoints=2, max_crashes=1, faults=frozenset({"lost-ack", "task-crash"})),
              dict(parallelism=1, max_checkpoints=2, max_crashes=1,
                   faults=frozenset({"lost-ack", "coordinator-crash", "full-restart"}))]
    for name in sorted(VARIANTS):
        for i, b in enumerate(bounds):
            res = explore(SystemModel(variant(name, **b)), stop_on_violation=False, max_states=300_000)
            v = sorted((k, d.depth) for k, d in res.discoveries.items())
            out.append((f"explore {name} bound{i}", f"{res.states} {res.transitions} {res.max_depth} {v}"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim-only", action="store_true")
    ap.add_argument("--explore-only", action="store_true")
    a = ap.parse_args()
    parts = []
    if not a.explore_only:
        parts += sim_parts()
    if not a.sim_only:
        parts += explore_parts()
    for k, v in parts:
        print(f"{k}: {v}", flush=True)
    print(f"total: {_h(parts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
