"""``hoodie-lab simulate EXPERIMENT``: run a discrete-event simulation experiment.

EXPERIMENT is a shipped name (``hoodie-lab simulate --list``) or a path to a TOML experiment file. Writes
``results.csv``/``results.parquet``, PNG+SVG plots and ``summary.json`` to ``--out`` (default
``runs/sim/<name>``). Exit 0 when every run held the model's invariants, 1 when one did not (its replay
command is printed), 2 on bad input.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from lakeio.errors import UserError

from .common import add_progress_arg, check_out_dir, check_seed, progress_bar, progress_enabled  # noqa: F401


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("simulate", help="run a SimPy experiment (blocking-vs-async, truetime, ...)",
                              description=__doc__.splitlines()[0])
    p.add_argument("experiment", nargs="?", help="shipped experiment name or path to a .toml file")
    p.add_argument("--mode", choices=["blocking", "async", "both", "single_writer", "occ", "nbcc"], default=None,
                   help="instant-generation mode(s) to run (default: the experiment's modes); for the concurrency "
                        "experiment the concurrency mode (single_writer, occ, nbcc)")
    p.add_argument("--seed", type=int, default=None, help="seed (default: the experiment's)")
    p.add_argument("--out", type=Path, default=None, help="output directory (default runs/sim/<name>)")
    p.add_argument("--quick", action="store_true", help="shorter runs and a reduced grid (demo size)")
    p.add_argument("--no-sweep", action="store_true", help="skip the experiment's [sweep] grid")
    p.add_argument("--list", action="store_true", help="list the shipped experiments and exit")
    p.add_argument("--set", action="append", metavar="TABLE.KEY=VALUE", default=None,
                   help="concurrency experiment: replace a key of [concurrency] or [compaction_stall] (VALUE in TOML "
                        "syntax, e.g. concurrency.table_type=cow or concurrency.writers=[8]); repeatable; validated "
                        "with the whole experiment before anything runs")
    add_progress_arg(p)
    p.set_defaults(func=run)


def modes_arg(mode: str | None) -> tuple[str, ...] | None:
    if mode is None:
        return None
    return ("blocking", "async") if mode == "both" else (mode,)


#: Columns shown per experiment kind (the results table has them all), with short headers.
COLUMNS = {
    "stream": [("mode", "mode"), ("index", "pt"), ("throughput_rps", "rec/s"), ("stall_per_checkpoint_s", "stall s"),
               ("latency_p50_s", "p50 s"), ("latency_p99_s", "p99 s"), ("backlog_max_records", "backlog"),
               ("commits_per_minute", "commits/min"), ("pending_instants_max", "pending"), ("invariants", "invariants")],
    "collisions": [("resolution_ms", "res ms"), ("writers", "N"), ("period_s", "T s"), ("p_collision_per_day", "P(>=1)/day"),
                   ("mean_collisions_per_day", "mean/day"), ("expected_collisions_per_day", "expected"),
                   ("truetime_collisions", "TrueTime")],
    "truetime": [("resolution_ms", "res ms"), ("tables", "tables"), ("writers", "writers"), ("skew_ms", "skew ms"), ("request_p50_s", "p50 s"),
                 ("request_p99_s", "p99 s"), ("lock_wait_mean_s", "lock wait s"), ("duplicate_times", "dups")],
    "history": [("mode", "mode"), ("commits", "commits"), ("commits_per_hour", "commits/h"),
                ("latency_mean_s", "mean s"), ("latency_p99_s", "p99 s"), ("listing_ms_last", "listing ms"),
                ("lookup_ms_max", "lookup ms"), ("active_instants_max", "active max"), ("lsm_files", "LSM files"),
                ("lsm_levels", "levels"), ("invariants", "invariants")],
    "concurrency": [("part", "part"), ("mode", "mode"), ("writers", "N"), ("overlap", "overlap"),
                    ("commits_per_hour", "commits/h"), ("abort_rate", "abort rate"), ("wasted_fraction", "wasted"),
                    ("latency_p99_s", "p99 s"), ("gave_up", "gave up"), ("stall_per_compaction_s", "stall s"),
                    ("refusals", "refused"), ("invariants", "invariants")],
    "recovery": [("mode", "mode"), ("target", "crash"), ("when", "when"), ("step", "step"), ("crashed", "hit"),
                 ("recovery_s", "recover s"), ("lost_records", "lost"), ("duplicated_records", "dup"),
                 ("invariants", "invariants")],
}


#: What each shown column means (printed under the table; the results table has every column, per run).
LEGEND = {
    "mode": "instant generation (blocking: 0.x/1.0; async: 1.1)",
    "pt": "grid point (-1: the experiment's own settings, the curve runs; 0, 1, ...: [sweep] points, their "
          "values in the param.* columns of the results table)",
    "rec/s": "records processed per simulated second (mean over the run)",
    "stall s": "mean writer stall per checkpoint, seconds (blocked writer-seconds / checkpoints / writers)",
    "p50 s": "median end-to-end latency (source arrival to commit), seconds",
    "p99 s": "99th-percentile end-to-end latency, seconds",
    "backlog": "most records waiting at the source at once ('-': not sampled, sweep points keep no time series)",
    "commits/min": "commits per simulated minute",
    "pending": "most instants pending at once",
    "invariants": "the model's invariants after the run (ok, or the one violated)",
    "N": "writers", "T s": "commit period T, seconds",
    "P(>=1)/day": "share of runs with at least one instant-time collision in a day, without TrueTime",
    "mean/day": "mean collisions per day without TrueTime (simulated)",
    "expected": "expected collisions per day, C(N, 2) x 86.4 / T^2",
    "TrueTime": "collisions with TrueTime, total over its runs (must be 0)",
    "tables": "tables sharing the lock service", "writers": "writers per table",
    "skew ms": "max expected clock skew, ms", "lock wait s": "mean wait for the TrueTime lock, seconds",
    "dups": "duplicate instant times (must be 0)",
    "crash": "what crashed", "when": "crash point (before/after the step)", "step": "protocol step crashed at",
    "hit": "whether the crash happened", "recover s": "time to recover, seconds",
    "lost": "records lost (must be 0)", "dup": "records duplicated (must be 0)",
    "res ms": "clock resolution, ms (1: 17-digit instants; 1000: legacy 14-digit, read to the second)",
    "commits": "commits completed in the run (total)", "commits/h": "commits per simulated hour",
    "mean s": "mean commit latency, seconds", "listing ms": "timeline listing time at the end of the run, ms",
    "lookup ms": "slowest instant look-up, ms", "active max": "most instants on the active timeline at once",
    "LSM files": "files of the LSM timeline at the end (total over levels)",
    "levels": "levels of the LSM timeline at the end",
}


#: Where a header means something else in one kind of experiment.
LEGEND_OF_KIND = {
    "truetime": {"p50 s": "median time to obtain an instant time (lock service, lock, skew wait), seconds",
                 "p99 s": "99th percentile of the time to obtain an instant time, seconds"},
    "history": {"p99 s": "99th-percentile commit latency, seconds"},
    "concurrency": {"part": "writers: the sweep of many writers; stall: the streaming writer and compaction scheduling",
                    "mode": "hoodie.write.concurrency.mode (occ, nbcc, single_writer), or the compaction-scheduling rule",
                    "N": "concurrent writers", "overlap": "share of a write's keys in the partition all writers share",
                    "abort rate": "aborted commit attempts / attempts (write-write conflicts decided by the spec)",
                    "wasted": "write time of aborted attempts / all write time",
                    "p99 s": "99th-percentile commit latency from a write's first attempt to its commit, seconds",
                    "gave up": "writes aborted more than concurrency.max_retries times",
                    "stall s": "streaming writer's wait to start an instant, per scheduled compaction, seconds",
                    "refused": "compaction schedules the spec refused (0.x: an older write is inflight)",
                    "commits/h": "commits per simulated hour"},
}


def print_outcome(outcome, kind: str = "stream", limit: int = 40) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(120, Console().width))
    rows = outcome.rows
    cols = [(c, h) for c, h in COLUMNS.get(kind, COLUMNS["stream"]) if any(c in r for r in rows)]
    table = Table(title=f"{outcome.experiment}: {len(rows)} row(s)")
    for _, h in cols:
        table.add_column(h, justify="right")
    for r in rows[:limit]:
        table.add_row(*[_fmt(r.get(c, "")) for c, _ in cols])
    console.print(table)
    legend = {**LEGEND, **LEGEND_OF_KIND.get(kind, {})}
    known = [h for _, h in cols if h in legend]
    if known:
        console.print("columns: " + "; ".join(f"{h} = {legend[h]}" for h in known), highlight=False,
                      soft_wrap=True)
    if len(rows) > limit:
        console.print(f"... {len(rows) - limit} more rows in {outcome.table}")
    console.print(f"table: {outcome.table}")
    for p in outcome.plots:
        console.print(f"plot:  {p}")


def _fmt(v) -> str:
    if isinstance(v, float) and math.isnan(v):
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def run(args) -> int:
    from sim import config as cfg
    from sim.experiments import run_named

    if args.list:
        for name in cfg.shipped_names():
            exp = cfg.load(name)
            print(f"{name:20s} {exp.kind:10s} {exp.description.splitlines()[0] if exp.description else ''}")
        return 0
    if not args.experiment:
        raise UserError("EXPERIMENT: missing; give a shipped name (see --list) or a .toml path")
    check_seed(args.seed)
    exp = cfg.load(args.experiment)  # validates before anything is written
    overrides = cfg.parse_set(args.set)
    mode = args.mode
    if exp.kind == "concurrency":
        if mode in ("blocking", "async", "both"):
            raise UserError(f"--mode: {mode} is an instant-generation mode; the concurrency experiment takes "
                            f"single_writer, occ or nbcc")
        if mode:
            overrides = {"concurrency.modes": [mode], **overrides}
        mode = None
    elif overrides:
        raise UserError(f"--set: only the concurrency experiment takes --set; {exp.name} is a {exp.kind} experiment")
    elif mode in ("single_writer", "occ", "nbcc"):
        raise UserError(f"--mode: {mode} is a concurrency mode; {exp.name} takes blocking, async or both")
    exp = cfg.override(exp, overrides)  # the overridden experiment validated before anything is written
    out = check_out_dir(args.out or Path("runs") / "sim" / exp.name)
    with progress_bar(progress_enabled(args)) as progress:
        outcome = run_named(args.experiment, out, seed=args.seed, quick=args.quick, modes=modes_arg(mode),
                            progress=progress, grid=not args.no_sweep, overrides=overrides)
    print_outcome(outcome, exp.kind)
    for f in outcome.failures:
        print(f"invariant violated: {f}", file=sys.stderr)
    return 1 if outcome.failures else 0
