"""Hardware-independent counters of the event loop: the simulation against bare SimPy, under callgrind.

``bench_sim.py`` times the two loops; on a shared machine its ratio moves by several points between runs.
This script counts instead: it runs each loop under ``valgrind --tool=callgrind`` (cache and branch
simulation on) and counts only the loop (the counters are zeroed when ``run_counted`` starts and dumped when
it returns, with ``callgrind_control``). Counts repeat exactly for the same code and inputs, so a change to
the simulation's hot path can be judged by its instructions per event without timing noise.

It prints, per SimPy event: instructions, level-1 data-cache misses (reads + writes), mispredicted
conditional and indirect branches, for the simulation (the reference workload, async) and the bare loop
of ``bench_sim.py`` (same number of processes, about as many events), and the ratio of instructions.
The event-rate target is about time, not instructions: a ratio of instructions above 30 % does not meet
it (cache misses and mispredictions cost cycles the count does not show). This is a diagnostic with no
target; it takes about 4 minutes (``--quick``: 10 simulated minutes, about 1 minute; ``--no-cache``: no
cache or branch simulation, about half the time).

Needs valgrind (``callgrind_control`` included). Not run by ``make bench``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COLUMNS = {"Ir": "instructions", "D1mr": "L1 data read misses", "D1mw": "L1 data write misses",
           "Bcm": "conditional branches mispredicted", "Bim": "indirect branches mispredicted"}


def _child(which: str, quick: bool) -> None:
    """Inside valgrind: run one loop with the counters zeroed at its start and dumped at its end."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_sim
    import sim.engine as engine
    from sim import config as cfg
    from sim.loop import run_counted

    pid = str(os.getpid())

    def counted(env, until):
        subprocess.run(["callgrind_control", "-z", pid], check=True, capture_output=True)
        n = run_counted(env, until)
        subprocess.run(["callgrind_control", "-d", f"loop-events-{n}", pid], check=True, capture_output=True)
        return n

    engine.run_counted = counted
    bench_sim.run_counted = counted
    exp = cfg.load("reference")
    if which == "sim":
        engine.run_stream(exp, "async", exp.seed, quick=quick, keep_series=True)
    else:
        p = exp.params
        duration = p["run"]["quick_duration_s" if quick else "duration_s"]
        # about as many events as the simulation (164,248 in the hour; 10 minutes: a sixth)
        bench_sim.bare_simpy(p["writers"]["parallelism"] + 3, int(164_248 * duration / 3600))


def _read_dump(folder: Path) -> tuple[int, dict[str, int]]:
    """(events, counters) from the first dump of the run (the loop's)."""
    dumps = sorted(folder.glob("cg.*.1"))
    if not dumps:
        raise SystemExit(f"loop_counters: no callgrind dump in {folder} (did callgrind_control reach the run?)")
    events, names, values = 0, [], []
    for line in dumps[0].read_text().splitlines():
        if line.startswith("desc: Trigger: dump loop-events-"):
            events = int(line.rsplit("-", 1)[1])
        elif line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith("summary:"):
            values = [int(v) for v in line.split()[1:]]
    if not events or not names or len(names) != len(values):
        raise SystemExit(f"loop_counters: {dumps[0]}: not a loop dump")
    return events, dict(zip(names, values))


def _measure(which: str, quick: bool, cache: bool) -> tuple[int, dict[str, int]]:
    with tempfile.TemporaryDirectory(prefix="hoodie-lab-callgrind-") as tmp:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.%p"]
        if cache:
            cmd += ["--cache-sim=yes", "--branch-sim=yes"]
        cmd += [sys.executable, __file__, "--child", which] + (["--quick"] if quick else [])
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise SystemExit(f"loop_counters: the {which} run under valgrind failed (exit {proc.returncode}): {last}")
        return _read_dump(Path(tmp))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10 simulated minutes instead of the hour")
    ap.add_argument("--no-cache", action="store_true", help="count instructions only (about twice as fast)")
    ap.add_argument("--child", choices=("sim", "bare"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child, args.quick)
        return 0
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            print(f"loop_counters: {tool} not found (install valgrind)", file=sys.stderr)
            return 2
    cache = not args.no_cache
    rows = {}
    for which, label in (("sim", "simulation (reference workload, async)"), ("bare", "bare SimPy loop")):
        print(f"counting the {label} under callgrind ...", flush=True)
        rows[which] = _measure(which, args.quick, cache)
    shown = [c for c in COLUMNS if c in rows["sim"][1]]
    print(f"\nper SimPy event{'' if cache else ' (no cache or branch simulation)'}:")
    print(f"  {'':38s} {'simulation':>12s} {'bare SimPy':>12s}")
    print(f"  {'events counted':38s} {rows['sim'][0]:>12,d} {rows['bare'][0]:>12,d}")
    for c in shown:
        s, b = (rows[w][1][c] / rows[w][0] for w in ("sim", "bare"))
        print(f"  {COLUMNS[c]:38s} {s:>12,.0f} {b:>12,.0f}")
    si, bi = (rows[w][1]["Ir"] / rows[w][0] for w in ("sim", "bare"))
    print(f"\n  instructions: bare SimPy's per event are {bi / si:.1%} of the simulation's "
          f"(the event-rate target is about time: see bench_sim.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
