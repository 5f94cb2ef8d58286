"""Simulation speed: the reference workload and the event rate against bare SimPy.

Reference workload (``lakeio/experiments/reference.toml``): 1 simulated hour, 64 writers, 10 s
checkpoints, 100,000 records/s, async instant generation, the model driven through every protocol step.
Targets: under 10 s of wall time (the first run, start to end); the simulation's event rate (SimPy events
processed per CPU second of the event loop, the model work it drives included) at least 30 % of bare SimPy's
event loop (67 processes doing nothing but timeouts), both run by SimPy's ``env.run`` and counted the same way
(:mod:`sim.loop`), best of 3 alternating runs each, in this process. CPU time is the primary measure
(``time.process_time``): the machine is shared, wall time is printed too.

Where the loop's time goes (22 Nov 2026). A writer's cycle per checkpoint is about 7 SimPy events: the
barrier's arrival, the wake-up, the full-buffer timer (usually overtaken by the barrier: it rings later for
nothing, SimPy cannot cancel it), the coordinator thread's grant, the request's handling time, the reply and
the flush. Per cycle the protocol model costs about 3.4 us (``bench_model_ops.py``; snapshot-task 1.5 us of
it), and each checkpoint adds about 150 us (the trigger and its 64 barrier timers, the commit with its
TrueTime generation, commit accounting). Three changes that day made most of the difference: the
coordinator's executors used to be ``simpy.Resource`` (a request and a release event per job and about ten
Python calls around them) and are :mod:`sim.executor` (the loop went from about 0.54 s to 0.44 s CPU); the
model's pending checkpoint and the coordinator's event buffers used to be tuples, copied whole (64 slots)
for every task's snapshot, and are filled in place, copy-on-write (snapshot-task 2.6 -> 1.5 us; the loop
about 0.39 -> 0.35 s CPU). Counted instead of timed (``loop_counters.py``, under callgrind) the simulation
runs about 2.3 times the bare loop's instructions per event -- a ratio of about 44 % -- but with about ten
times its level-1 data-cache misses and four times its mispredicted branches, which the count does not
weigh. A shallower event queue did not help: the full-buffer timers kept in a queue of their own (SimPy's
queue down from about 230 to 33 events) timed the same. The timed ratio moves by a few points between runs
on a shared machine.

``--quick``: 10 simulated minutes (no wall-time target). Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import simpy  # noqa: E402

from sim import config as cfg  # noqa: E402
from sim.engine import run_stream  # noqa: E402
from sim.loop import run_counted  # noqa: E402

WALL_TARGET_S = 10.0
RATIO_TARGET = 0.30
ROUNDS = 3


def bare_simpy(processes: int, events: int) -> tuple[float, float]:
    """Events per CPU second and per wall second of a bare SimPy loop: ``processes`` processes doing nothing
    but timeouts (uniform on [0, 1) s), run by ``env.run`` and counted like the simulation's
    (:func:`sim.loop.run_counted`) for about ``events`` events."""
    env = simpy.Environment()
    rng = random.Random(1)

    def proc():
        timeout = env.timeout
        rnd = rng.random
        while True:
            yield timeout(rnd())

    for _ in range(processes):
        env.process(proc())
    until = events / (2.0 * processes)  # each process: one event per 0.5 s on average
    c0, w0 = time.process_time(), time.perf_counter()
    n = run_counted(env, until)
    return n / (time.process_time() - c0), n / (time.perf_counter() - w0)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    exp = cfg.load("reference")
    p = exp.params
    duration = p["run"]["quick_duration_s" if args.quick else "duration_s"]
    print(f"reference workload: {duration:g} s simulated, {p['writers']['parallelism']} writers, "
          f"{p['checkpoint']['interval_s']:g} s checkpoints, {p['source']['rate_rps']:g} records/s, async")
    c0, w0 = time.process_time(), time.perf_counter()
    res = run_stream(exp, "async", exp.seed, quick=args.quick, keep_series=True)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    s = res.summary
    print(f"  run:        {wall:6.2f} s wall, {cpu:6.2f} s CPU (event loop {res.wall_s:.2f} s wall; the rest is the "
          f"drain and the final invariant checks)")
    print(f"  events:     {res.sim_events:,} SimPy events, {res.model_events:,} protocol events applied, "
          f"invariants: {res.verdict}")
    print(f"  workload:   {s['throughput_rps']:,.0f} records/s processed, {s['commits']:.0f} commits, "
          f"latency p50 {s['latency_p50_s']:.2f} s p99 {s['latency_p99_s']:.2f} s, "
          f"lost {s['lost_records']:.0f} duplicated {s['duplicated_records']:.0f}")
    # The event rates: best of ROUNDS alternating runs of each (the first run also pays one-time costs).
    loops = [res.loop_cpu_s]
    bares = []
    for k in range(ROUNDS):
        bares.append(bare_simpy(p["writers"]["parallelism"] + 3, max(res.sim_events, 100_000)))
        if k + 1 < ROUNDS:
            loops.append(run_stream(exp, "async", exp.seed, quick=args.quick, keep_series=True).loop_cpu_s)
    sim_rate = res.sim_events / min(loops)
    bare_cpu, bare_wall = max(bares)
    ratio = sim_rate / bare_cpu
    print(f"  event rate: simulation {sim_rate:,.0f} events/CPU-s (event loop: {min(loops):.2f} s CPU, best of "
          f"{len(loops)} runs); bare SimPy {bare_cpu:,.0f} events/CPU-s ({bare_wall:,.0f}/wall-s, best of "
          f"{len(bares)}); ratio {ratio:.1%} (target >= {RATIO_TARGET:.0%})")
    print(f"  per event:  simulation {1e6 / sim_rate:.1f} us, bare SimPy {1e6 / bare_cpu:.1f} us; protocol events "
          f"per SimPy event {res.model_events / res.sim_events:.2f}")
    ok = True
    if not args.quick:
        hit = wall < WALL_TARGET_S
        ok &= hit
        print(f"  target wall < {WALL_TARGET_S:g} s: {'met' if hit else 'MISSED'} ({wall:.2f} s; CPU {cpu:.2f} s)")
    hit = ratio >= RATIO_TARGET
    ok &= hit
    print(f"  target event rate >= {RATIO_TARGET:.0%} of bare SimPy: {'met' if hit else 'MISSED'} ({ratio:.1%})")
    ok &= res.verdict == "ok"
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
