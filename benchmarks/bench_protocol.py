"""Protocol benchmarks: exhaustive exploration figures and the protocol property suites' run times.

Run: ``python benchmarks/bench_protocol.py [--quick]``.

1. Explores the Hudi 1.1 protocol (``hoodie-lab explore``'s engine) at the reference bound — 2 writers x
   3 checkpoints, lost acks and one crash (task crash, coordinator crash or full restart) — and
   prints distinct states, transitions, max depth, the time taken and distinct states per second, per
   wall-clock second and per CPU second (the one-core figure; the machine is shared, so CPU time is
   the fair measure). Target: the run is exhaustive with no violation and reaches >= 20,000 distinct
   states per CPU second. Measured 22 Nov 2026 on a 2-core machine with
   ``.venv/bin/python benchmarks/bench_protocol.py``: 13,278,453 distinct states, 44,705,898
   transitions, max depth 43, 578 CPU seconds (under 10 CPU minutes) and 5.3 GB peak memory with
   64-bit fingerprints: 22,967 states per CPU second, target met (16,397 earlier that day, before
   the protocol System got slots, cached hashes of unchanged parts and copy-on-write timeline
   records, and the explorer stopped re-asking the guards of enabled events). Re-run later that day, after
   the pending checkpoint and the coordinator's event buffers became mutable and copy-on-write: the same
   states, transitions and depth, 592 CPU seconds, 22,448 states per CPU second, 5.4 GB.
2. Times each protocol property suite (``properties/test_protocol_*.py``) in the default Hypothesis
   profile (``ci``), one pytest process per file, and prints its wall time and outcome.

``--symmetry``: explore the bound twice, plainly and with symmetry reduction (``explore --symmetry``:
states equal up to renaming the writer tasks count once), and print the state-count reduction and both
runs' states per CPU second (the states-per-CPU-second target applies to the plain run).

``--workers N`` (issue #20): explore the bound twice in the same run, first serially and plainly (today's
search), then with ``checker.parallel.explore_parallel`` on N processes (0: all cores), with symmetry reduction
unless ``--no-symmetry``; print both runs' wall and CPU seconds, the wall-time speed-up (target >= 3x at the
reference bound), canonical states per CPU second (target >= 50,000), bytes resident per state (all processes)
and of the fingerprint sets, TLC's collision probability, and whether the verdicts agree. ``--bound 3x2``:
3 writers x 2 checkpoints, lost acks and one crash (task crash, coordinator crash or full restart), parallel
run only (``--workers``, default all cores), with the level sizes printed as they finish.

``--symmetric-only``: one serial run of the bound with symmetry reduction (no plain run, no suites): the one-core
figure of the states-per-CPU-second target of issue #20, canonical states per CPU second (target >= 50,000),
without the parallel search's coordination and pickling. Exit 1 below the target. With ``--sleep-sets`` the run
skips transitions by sleep sets (``explore(sleep_sets=True)``, :mod:`engine.independence`) and prints the
transitions explored and skipped; it must find the known canonical state count, depth and transitions (explored
plus skipped) of the bound (:data:`KNOWN_SYMMETRIC`), else exit 1.

``--no-serial`` (with ``--workers``): the parallel run only, compared with the recorded serial run at the
reference bound (:data:`SERIAL_REFERENCE_CPU_S`): CPU seconds, and the wall time every process on a free core
would take (the busiest worker's CPU plus the coordinator's: an estimate, printed as one). Each parallel run
prints each worker's states and CPU seconds (the frontiers are evened out after every level) and the load
average, as the machine is shared.

The engine is printed first (``engine.BUILD``): the compiled hot modules (mypyc, ``setup.py``) when the
install built them and they are current, else pure Python; ``HOODIE_LAB_ENGINE=pure`` benchmarks the pure one.

``--quick``: a smaller bound (2 writers x 2 checkpoints, lost acks and one task crash) and the suites
are not run. Exit status 1 when a target is missed (not exhaustive, a violation, too slow, a suite
failed), as ``benchmarks/run.py`` expects.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_STATES_PER_CPU_SECOND = 20_000
FULL_BOUND = dict(parallelism=2, max_checkpoints=3, max_crashes=1,
                  faults=frozenset({"lost-ack", "task-crash", "coordinator-crash", "full-restart"}))
BOUND_3X2 = dict(FULL_BOUND, parallelism=3, max_checkpoints=2)
TARGET_SPEEDUP = 3.0
TARGET_CANONICAL_PER_CPU_SECOND = 50_000
QUICK_BOUND = dict(parallelism=2, max_checkpoints=2, max_crashes=1, faults=frozenset({"lost-ack", "task-crash"}))
#: (canonical states, transitions, max depth) of the serial symmetric search without sleep sets, per bound: a run
#: with sleep sets must reach the same states and depth, and explore plus skip the same transitions
KNOWN_SYMMETRIC = {"2x3": (6_708_784, 22_592_024, 43), "quick": (76_207, 247_739, 32)}


def bench_explore(bound: dict, max_states: int, symmetry: bool = False, sleep_sets: bool = False) -> dict:
    from checker import SystemModel, explore
    from checker.symmetry import representative_function
    from model.protocol import variant

    cfg = variant("hudi-1.1", **bound)
    model = SystemModel(cfg)
    rep = representative_function(model) if symmetry else None
    last = [time.monotonic()]

    def progress(res, queue):
        if time.monotonic() - last[0] >= 15:
            last[0] = time.monotonic()
            print(f"  ... {res.states:,} states, frontier {queue:,}, {res.states_per_cpu_second:,.0f} states/CPU-s",
                  file=sys.stderr, flush=True)

    res = explore(model, max_states=max_states, progress=progress, compact=True, symmetry=rep, sleep_sets=sleep_sets)
    sys.stdout.flush()
    faults = ",".join(sorted(cfg.faults))
    print(f"explore hudi-1.1, {cfg.parallelism} writers x {cfg.max_checkpoints} checkpoints, {cfg.records} records/split, "
          f"buffer {cfg.buffer_size}, faults {faults}, crashes <= {cfg.max_crashes}"
          + (", symmetry reduction (canonical states)" if symmetry else "")
          + (", sleep sets" if sleep_sets else ""))
    print(f"  distinct states        {res.states:>12,}")
    print(f"  transitions            {res.transitions:>12,}" + (" explored" if sleep_sets else ""))
    if sleep_sets:
        total = res.transitions + res.pruned
        print(f"  transitions skipped    {res.pruned:>12,} ({res.pruned / max(total, 1):.1%} of {total:,})")
    print(f"  max depth              {res.max_depth:>12,}")
    print(f"  terminal states        {res.terminal_states:>12,}")
    print(f"  drained checks         {model.drains:>12,}")
    print(f"  wall / CPU seconds     {res.elapsed:>12.2f} / {res.cpu:.2f}")
    print(f"  peak memory (RSS)      {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:>12,.0f} MB")
    print(f"  states per second      {res.states_per_second:>12,.0f} wall, {res.states_per_cpu_second:,.0f} per CPU "
          f"second (target >= {TARGET_STATES_PER_CPU_SECOND:,})")
    ce = res.counterexample
    print(f"  outcome                {'exhaustive' if res.complete else 'NOT exhaustive: ' + res.stop_reason}, "
          f"{'no violation' if ce is None else 'VIOLATION ' + ce.property + ': ' + ce.detail}")
    return {"states": res.states, "transitions": res.transitions, "max_depth": res.max_depth,
            "elapsed_s": res.elapsed, "cpu_s": res.cpu, "states_per_second": res.states_per_second,
            "states_per_cpu_second": res.states_per_cpu_second, "complete": res.complete,
            "violation": None if ce is None else ce.property, "pruned": res.pruned}


def bench_parallel(bound: dict, max_states: int, workers: int, symmetry: bool) -> dict:
    from checker import SystemModel
    from checker.parallel import all_cores, explore_parallel
    from checker.symmetry import representative_function
    from model.protocol import variant

    cfg = variant("hudi-1.1", **bound)
    model = SystemModel(cfg)
    rep = representative_function(model) if symmetry else None
    n = workers or all_cores()
    last = [time.monotonic(), -1]

    def progress(res, queue):
        if res.level != last[1] or time.monotonic() - last[0] >= 30:
            last[0], last[1] = time.monotonic(), res.level
            print(f"  ... level {res.level}: {res.states:,} states, frontier {queue:,}, {res.elapsed:,.0f} s",
                  file=sys.stderr, flush=True)

    res = explore_parallel(model, workers=n, max_states=max_states, progress=progress, symmetry=rep)
    faults = ",".join(sorted(cfg.faults))
    print(f"explore hudi-1.1 in parallel, {n} workers, {cfg.parallelism} writers x {cfg.max_checkpoints} checkpoints, "
          f"{cfg.records} records/split, buffer {cfg.buffer_size}, faults {faults}, crashes <= {cfg.max_crashes}"
          + (", symmetry reduction (canonical states)" if symmetry else ""))
    print(f"  distinct states        {res.states:>12,}")
    print(f"  transitions            {res.transitions:>12,}")
    print(f"  max depth              {res.max_depth:>12,}")
    print(f"  terminal states        {res.terminal_states:>12,}")
    print(f"  drained checks         {model.drains:>12,}")
    print(f"  wall / CPU seconds     {res.elapsed:>12.2f} / {res.cpu:.2f} (CPU: all processes)")
    print(f"  memory at the end      {res.rss / 2**20:>12,.0f} MiB resident over all processes, "
          f"{res.rss / max(res.states, 1):,.0f} bytes per state; fingerprint sets {res.fpset_bytes / 2**20:,.1f} MiB "
          f"({res.fpset_bytes / max(res.states, 1):,.1f} bytes per state); {res.moved_states:,} states moved to even out the frontiers")
    print(f"  states per second      {res.states_per_second:>12,.0f} wall, {res.states_per_cpu_second:,.0f} per CPU "
          f"second (target >= {TARGET_CANONICAL_PER_CPU_SECOND:,})")
    print(f"  collision probability  {res.collision_probability:>12.2e} (TLC's calculated, optimistic)")
    coord_cpu = res.cpu - sum(res.cpu_per_worker)
    print(f"  per worker             {', '.join(f'{e:,} states / {c:,.1f} CPU-s' for e, c in zip(res.expanded_per_worker, res.cpu_per_worker))}"
          f"; coordinator {coord_cpu:,.1f} CPU-s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    ce = res.counterexample
    print(f"  outcome                {'exhaustive' if res.complete else 'NOT exhaustive: ' + res.stop_reason}, "
          f"{'no violation' if ce is None else 'VIOLATION ' + ce.property + ': ' + ce.detail}")
    return {"states": res.states, "transitions": res.transitions, "max_depth": res.max_depth,
            "elapsed_s": res.elapsed, "cpu_s": res.cpu, "states_per_second": res.states_per_second,
            "states_per_cpu_second": res.states_per_cpu_second, "complete": res.complete,
            "violation": None if ce is None else ce.property,
            "busiest_s": max(res.cpu_per_worker, default=0.0) + coord_cpu}


#: The serial search at the reference bound, 22 Nov 2026 (module docstring): CPU seconds; alone on a core its
#: wall time is its CPU time. ``--no-serial`` compares with it.
SERIAL_REFERENCE_CPU_S = 578.0


def bench_suites() -> list[tuple[str, int, float]]:
    suites = sorted((ROOT / "properties").glob("test_protocol_*.py"))
    if not suites:
        print("protocol property suites: none found (properties/test_protocol_*.py)")
        return []
    env = dict(os.environ)
    env.pop("HYPOTHESIS_PROFILE", None)  # the default profile (ci)
    out = []
    print("protocol property suites (default profile 'ci'):")
    for path in suites:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path.relative_to(ROOT))],
                           cwd=ROOT, env=env, capture_output=True, text=True)
        secs = time.perf_counter() - t0
        tail = (r.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"  {path.name:40s} {secs:7.1f} s   {tail}")
        out.append((path.name, r.returncode, secs))
    print(f"  {'total':40s} {sum(s for _, _, s in out):7.1f} s")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller bound, property suites not run")
    ap.add_argument("--symmetry", action="store_true",
                    help="also explore with symmetry reduction and print the state-count reduction")
    ap.add_argument("--max-states", type=int, default=20_000_000, help="safety cap on distinct states")
    ap.add_argument("--workers", type=int, default=None, metavar="N",
                    help="also explore in parallel on N processes (0: all cores) and compare with the serial run")
    ap.add_argument("--no-symmetry", action="store_true", help="the parallel run without symmetry reduction")
    ap.add_argument("--bound", choices=("2x3", "3x2"), default="2x3",
                    help="3x2: 3 writers x 2 checkpoints, parallel run only (default 2x3, the reference bound)")
    ap.add_argument("--symmetric-only", action="store_true",
                    help="one serial run with symmetry reduction: canonical states per CPU second (target >= 50,000)")
    ap.add_argument("--sleep-sets", action="store_true",
                    help="with --symmetric-only: skip transitions by sleep sets; the counts must be the bound's known ones")
    ap.add_argument("--no-serial", action="store_true",
                    help="with --workers: skip the serial run (compare with its figure in the README instead)")
    args = ap.parse_args(argv)
    import engine

    print(f"engine: {engine.BUILD}", flush=True)
    if args.sleep_sets and not args.symmetric_only:
        ap.error("--sleep-sets: only with --symmetric-only")
    if args.symmetric_only:
        if args.workers is not None or args.bound != "2x3" or args.symmetry:
            ap.error("--symmetric-only: one serial run of the 2x3 bound (or --quick); not with --workers, --bound "
                     "or --symmetry")
        sym = bench_explore(QUICK_BOUND if args.quick else FULL_BOUND, args.max_states, symmetry=True,
                            sleep_sets=args.sleep_sets)
        rate = sym["states_per_cpu_second"]
        print(f"canonical states per CPU second: {rate:,.0f} (target >= {TARGET_CANONICAL_PER_CPU_SECOND:,}: "
              f"{'met' if rate >= TARGET_CANONICAL_PER_CPU_SECOND else 'NOT met'})")
        counts_ok = True
        if args.sleep_sets:
            want = KNOWN_SYMMETRIC["quick" if args.quick else "2x3"]
            got = (sym["states"], sym["transitions"] + sym["pruned"], sym["max_depth"])
            counts_ok = got == want
            print(f"known counts (states, transitions explored + skipped, depth) {want}: "
                  + ("the same" if counts_ok else f"DIFFER: {got}"))
        return 0 if (sym["complete"] and sym["violation"] is None and counts_ok
                     and rate >= TARGET_CANONICAL_PER_CPU_SECOND) else 1
    if args.bound == "3x2" or (args.workers is not None and args.no_serial):
        if args.bound == "2x3":
            fig = bench_parallel(QUICK_BOUND if args.quick else FULL_BOUND, args.max_states, args.workers,
                                 not args.no_symmetry)
            if not args.quick:
                print(f"vs the recorded serial run ({SERIAL_REFERENCE_CPU_S:.0f} CPU-s, alone on a core): "
                      f"{SERIAL_REFERENCE_CPU_S / fig['cpu_s']:.2f}x less CPU; wall {fig['elapsed_s']:.0f} s under "
                      f"this load; with every process on a free core the wall time would be about the busiest "
                      f"worker's CPU plus the coordinator's, {fig['busiest_s']:.0f} s: "
                      f"{SERIAL_REFERENCE_CPU_S / max(fig['busiest_s'], 1e-9):.2f}x (estimate, target >= "
                      f"{TARGET_SPEEDUP:g}x)")
            return 0 if fig["complete"] and fig["violation"] is None else 1
        fig = bench_parallel(BOUND_3X2, args.max_states, args.workers or 0, not args.no_symmetry)
        return 0 if fig["complete"] and fig["violation"] is None else 1
    if args.workers is not None:
        bound = QUICK_BOUND if args.quick else FULL_BOUND
        base = bench_explore(bound, args.max_states)
        fig = bench_parallel(bound, args.max_states, args.workers, not args.no_symmetry)
        same = fig["complete"] == base["complete"] and fig["violation"] == base["violation"]
        if args.no_symmetry:
            same = same and all(fig[k] == base[k] for k in ("states", "transitions", "max_depth"))
        else:
            same = same and fig["max_depth"] == base["max_depth"]
        speedup = base["elapsed_s"] / fig["elapsed_s"]
        print(f"parallel vs serial: wall {base['elapsed_s']:.1f} s -> {fig['elapsed_s']:.1f} s ({speedup:.2f}x, "
              f"target >= {TARGET_SPEEDUP:g}x), CPU {base['cpu_s']:.1f} s -> {fig['cpu_s']:.1f} s; "
              f"{fig['states_per_cpu_second']:,.0f} {'canonical ' if not args.no_symmetry else ''}states per CPU "
              f"second (target >= {TARGET_CANONICAL_PER_CPU_SECOND:,}); verdict and depth {'the same' if same else 'DIFFER'}; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        if speedup < TARGET_SPEEDUP:
            print(f"  TARGET MISSED: {speedup:.2f}x < {TARGET_SPEEDUP:g}x wall-time speed-up")
        if fig["states_per_cpu_second"] < TARGET_CANONICAL_PER_CPU_SECOND:
            print(f"  TARGET MISSED: {fig['states_per_cpu_second']:,.0f} < {TARGET_CANONICAL_PER_CPU_SECOND:,} states "
                  f"per CPU second")
        return 0 if same and speedup >= TARGET_SPEEDUP else 1
    fig = bench_explore(QUICK_BOUND if args.quick else FULL_BOUND, args.max_states)
    ok = fig["complete"] and fig["violation"] is None
    if args.symmetry:
        sym = bench_explore(QUICK_BOUND if args.quick else FULL_BOUND, args.max_states, symmetry=True)
        same = sym["complete"] and sym["violation"] == fig["violation"]
        print(f"symmetry reduction: {fig['states']:,} -> {sym['states']:,} states "
              f"({fig['states'] / max(sym['states'], 1):.2f}x fewer), {fig['states_per_cpu_second']:,.0f} -> "
              f"{sym['states_per_cpu_second']:,.0f} states per CPU second, CPU {fig['cpu_s']:.1f} s -> "
              f"{sym['cpu_s']:.1f} s; verdict {'the same' if same else 'DIFFERS'}")
        ok = ok and same
    fast = fig["states_per_cpu_second"] >= TARGET_STATES_PER_CPU_SECOND
    if not fast:
        print(f"  TARGET MISSED: {fig['states_per_cpu_second']:,.0f} < {TARGET_STATES_PER_CPU_SECOND:,} distinct "
              f"states per CPU second")
    suites_ok = True
    if args.quick:
        print("protocol property suites: skipped (--quick)")
    else:
        suites_ok = all(rc == 0 for _, rc, _ in bench_suites())
    return 0 if ok and fast and suites_ok else 1


if __name__ == "__main__":
    sys.exit(main())
