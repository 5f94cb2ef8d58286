"""``hoodie-lab sweep EXPERIMENT``: run an experiment's [sweep] grid as Spark tasks.

One Spark task per (grid point, mode, repetition): ``sparkContext.parallelize(tasks, len(tasks))
.map(run_task).collect()``. Seeds depend only on the experiment seed and the task's coordinates, so the
rows are the same on ``local[*]`` (default), any ``--master`` and a serial run (``--master none``).
Writes ``results.csv``/``results.parquet`` and the sweep plot to ``--out`` (default ``runs/sweep/<name>``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from lakeio.errors import UserError

from .simulate import check_seed, modes_arg, print_outcome, progress_bar


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("sweep", help="run an experiment's parameter grid on Spark",
                              description=__doc__.splitlines()[0])
    p.add_argument("experiment", help="shipped experiment name or path to a .toml file with a [sweep] table")
    p.add_argument("--master", default="local[*]",
                   help="Spark master URL (default local[*]; 'none' runs the tasks serially without Spark)")
    p.add_argument("--mode", choices=["blocking", "async", "both"], default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--out", type=Path, default=None, help="output directory (default runs/sweep/<name>)")
    p.add_argument("--quick", action="store_true", help="reduced grid and shorter runs")
    p.set_defaults(func=run)


def run_grid(tasks: list[dict], master: str | None, progress=None) -> list[dict]:
    """Run tasks serially (``master`` None/'none') or as Spark tasks; rows in task order either way."""
    from sim.experiments import run_task

    if not master or master == "none":
        step = progress("sweep", len(tasks)) if progress else None
        rows = []
        for t in tasks:
            rows.append(run_task(t))
            if step:
                step()
        return rows
    from pipeline.spark import get_spark

    spark = get_spark(master, app_name="hoodie-lab-sweep")
    # one partition per task; collect() returns the partitions in order, so rows follow the tasks
    return spark.sparkContext.parallelize(tasks, len(tasks)).map(run_task).collect()


def run(args) -> int:
    from sim import config as cfg
    from sim import plots
    from sim.experiments import Outcome, grid_tasks, write_table

    check_seed(args.seed)
    exp = cfg.load(args.experiment)
    if exp.kind != "stream":
        raise UserError(f"{args.experiment}: kind {exp.kind!r} has no grid to sweep; allowed: kind = \"stream\" "
                        f"with a [sweep] table")
    if not exp.sweep:
        raise UserError(f"{args.experiment}: no [sweep] table; add e.g. sweep.\"checkpoint.interval_s\" = [5, 10]")
    # Tasks load the experiment again on the executor: give them an absolute path.
    exp.source = str(Path(cfg.resolve(args.experiment)).resolve())
    seed = exp.seed if args.seed is None else args.seed
    modes = modes_arg(args.mode) or exp.modes
    out = args.out or Path("runs") / "sweep" / exp.name
    out.mkdir(parents=True, exist_ok=True)
    tasks = grid_tasks(exp, seed, modes, args.quick, (out / "traces").resolve())
    with progress_bar(sys.stderr.isatty()) as progress:
        rows = run_grid(tasks, args.master, progress)
    paths = plots.sweep(rows, out, f"{exp.name}: sweep ({len(tasks)} runs, master {args.master})")
    failures = [r["replay"] for r in rows if r.get("replay")]
    outcome = Outcome(exp.name, out, write_table(rows, out), paths, rows, failures)
    print_outcome(outcome, "stream")
    for f in failures:
        print(f"invariant violated: {f}", file=sys.stderr)
    return 1 if failures else 0
