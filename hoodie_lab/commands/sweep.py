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

from .common import add_progress_arg, check_out_dir, check_seed, progress_bar, progress_enabled, say
from .simulate import modes_arg, print_outcome


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
    add_progress_arg(p)
    p.set_defaults(func=run)


def run_grid(tasks: list[dict], master: str | None, progress=None, announce=None) -> list[dict]:
    """Run tasks serially (``master`` None/'none') or as Spark tasks; rows in task order either way.
    ``progress(label, total) -> advance()`` counts finished tasks (on Spark by polling its status tracker from
    a thread every half second); ``announce(line)`` is told before Spark starts."""
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

    if announce:
        announce(f"starting Spark ({master})…")
    spark = get_spark(master, app_name="hoodie-lab-sweep")
    sc = spark.sparkContext
    # one partition per task; collect() returns the partitions in order, so rows follow the tasks
    rdd = sc.parallelize(tasks, len(tasks)).map(run_task)
    if progress is None:
        return rdd.collect()
    with _spark_progress(sc, progress("sweep (Spark tasks)", len(tasks)), len(tasks)):
        return rdd.collect()


class _spark_progress:
    """Advances a progress bar with the finished tasks of the running Spark job (polled, not per task)."""

    def __init__(self, sc, advance, total: int, every: float = 0.5):
        import threading

        self.sc, self.advance, self.total, self.every = sc, advance, total, every
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, name="sweep-progress", daemon=True)
        self.shown = 0

    def _done(self) -> int:
        st = self.sc.statusTracker()
        done = 0
        for sid in st.getActiveStageIds():
            info = st.getStageInfo(sid)
            if info is not None:
                done += info.numCompletedTasks
        return done

    def _poll(self) -> None:
        while not self.stop.wait(self.every):
            try:
                done = min(self._done(), self.total)
            except Exception:  # noqa: BLE001 - the tracker is best effort; the job's result is what counts
                continue
            while self.shown < done:
                self.shown += 1
                self.advance()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        if exc[0] is None:
            while self.shown < self.total:
                self.shown += 1
                self.advance()


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
    out = check_out_dir(args.out or Path("runs") / "sweep" / exp.name)
    tasks = grid_tasks(exp, seed, modes, args.quick, (out / "traces").resolve())
    shown = progress_enabled(args)
    with progress_bar(shown) as progress:
        rows = run_grid(tasks, args.master, progress, announce=lambda line: say(shown, line))
    paths = plots.sweep(rows, out, f"{exp.name}: sweep ({len(tasks)} runs, master {args.master})")
    failures = [r["replay"] for r in rows if r.get("replay")]
    outcome = Outcome(exp.name, out, write_table(rows, out), paths, rows, failures)
    print_outcome(outcome, "stream")
    for f in failures:
        print(f"invariant violated: {f}", file=sys.stderr)
    return 1 if failures else 0
