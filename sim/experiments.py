"""Running experiments: named files -> runs -> results table + plots.

Entry points:

* :func:`run_named` ``(name_or_path, out_dir, seed=None, quick=False, modes=None, progress=None)`` -> :class:`Outcome`
  (the paths of the plots, the results table and the summary). ``make demo`` calls
  ``run_named("blocking-vs-async", out_dir, seed, quick=True)``.
* :func:`grid_tasks` / :func:`run_task` — the sweep grid as independent, picklable tasks (what
  ``hoodie-lab sweep`` ships to Spark). Every task's seed is derived from (experiment seed, point index, mode,
  repetition) only, so a grid gives the same rows serially, on ``local[*]`` or on a cluster.

Results are written to ``out_dir``: ``results.csv`` and ``results.parquet`` (one row per run), plus
``<plot>.png``/``<plot>.svg``, ``summary.json`` and ``traces/`` (the model traces of the curve runs, and of
any run that broke an invariant; ``hoodie-lab replay traces/<file>``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from . import config as cfg
from . import plots
from .seeds import derive_seed


@dataclass
class Outcome:
    experiment: str
    out_dir: Path
    table: Path
    plots: list[Path] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # replay commands of runs whose invariants failed

    @property
    def paths(self) -> list[Path]:
        return [*self.plots, self.table]


def quick_grid(exp: cfg.Experiment) -> dict[str, list]:
    """A small grid for --quick: the smallest and largest value of each key, checkpoint intervals only up to
    a quarter of the quick run (so every point completes checkpoints), and the experiment's own parallelism
    (or the swept value nearest to it)."""
    out = {}
    dur = exp.params["run"]["quick_duration_s"]
    for k, vals in exp.sweep.items():
        vals = sorted(set(vals))
        if k == "writers.parallelism":
            base = exp.params["writers"]["parallelism"]
            out[k] = [min(vals, key=lambda v: abs(v - base))]
            continue
        if k == "checkpoint.interval_s":
            vals = [v for v in vals if v <= dur / 4] or vals[:1]
        out[k] = sorted({vals[0], vals[-1]})
    return out


# --------------------------------------------------------------------------------------- the grid
def grid_tasks(exp: cfg.Experiment, seed: int, modes: tuple[str, ...], quick: bool,
               trace_dir: Path | str | None = None) -> list[dict]:
    """Independent tasks: one per (grid point, mode, repetition). A task whose run breaks an invariant writes
    its trace to ``trace_dir`` (default ``runs/sim/failed``)."""
    sweep = quick_grid(exp) if quick else exp.sweep
    keys = list(sweep)
    import itertools

    points = [dict(zip(keys, combo)) for combo in itertools.product(*(sweep[k] for k in keys))] if keys else []
    runs = 1 if quick else exp.params["run"]["runs"]
    tasks = []
    for idx, point in enumerate(points):
        for mode in modes:
            for rep in range(runs):
                tasks.append({"source": exp.source, "raw_point": point, "index": idx, "mode": mode, "rep": rep,
                              "seed": derive_seed(seed, "grid", idx, mode, rep), "quick": quick,
                              "trace_dir": str(trace_dir) if trace_dir else None})
    return tasks


def run_task(task: dict) -> dict:
    """Run one grid task (in this process or on a Spark executor); returns one results row."""
    from .engine import run_stream

    exp = cfg.load(task["source"]).with_values(task["raw_point"])
    res = run_stream(exp, task["mode"], task["seed"], quick=task["quick"], keep_series=False,
                     failed_trace_dir=Path(task["trace_dir"]) if task.get("trace_dir") else None)
    row = {"index": task["index"], "mode": task["mode"], "rep": task["rep"], "seed": task["seed"]}
    row.update({f"param.{k}": v for k, v in task["raw_point"].items()})
    row.update(res.summary)
    row["invariants"] = res.verdict
    row["replay"] = res.replay or ""
    return row


# ----------------------------------------------------------------------------------- experiments
def run_named(name_or_path: str, out_dir: Path | str, seed: int | None = None, quick: bool = False,
              modes: tuple[str, ...] | None = None, progress: Callable[[str, int], Callable[[], None]] | None = None,
              grid: bool = True, overrides: dict | None = None) -> Outcome:
    """Run a shipped experiment (by name) or an experiment file; write its table and plots to ``out_dir``.

    ``progress(label, total)`` may return a callable advanced once per finished run (the CLI's rich bar).
    ``overrides``: dotted key -> value of the concurrency experiment's tables (``hoodie-lab simulate --set``),
    validated with the whole experiment (:func:`sim.config.override`).
    """
    exp = cfg.override(cfg.load(name_or_path), overrides or {})
    seed = exp.seed if seed is None else seed
    modes = tuple(modes or exp.modes)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if exp.kind == "concurrency":
        outcome = _concurrency(exp, out, seed, quick, progress or (lambda label, total: None),
                               name_or_path, overrides or {})
    else:
        runner = {"stream": _stream, "truetime": _truetime, "collisions": _collisions, "recovery": _recovery,
                  "history": _history}[exp.kind]
        outcome = runner(exp, out, seed, quick, modes, progress or (lambda label, total: None), grid)
    (out / "summary.json").write_text(json.dumps({
        "experiment": exp.name, "kind": exp.kind, "seed": seed, "quick": quick,
        "modes": list(exp.params["concurrency"]["modes"] if exp.kind == "concurrency" else modes),
        "plots": [str(p) for p in outcome.plots], "table": str(outcome.table), "failures": outcome.failures,
    }, indent=2))
    return outcome


def write_table(rows: list[dict], out: Path) -> Path:
    df = pd.DataFrame(rows)
    csv = out / "results.csv"
    df.to_csv(csv, index=False)
    try:
        df.to_parquet(out / "results.parquet", index=False)
    except (ImportError, ValueError):  # pragma: no cover - pyarrow is a dependency; CSV is the contract
        pass
    return csv


def _tick(progress, label, total):
    step = progress(label, total)
    return step if step is not None else (lambda: None)


def _stream(exp, out, seed, quick, modes, progress, grid) -> Outcome:
    from .engine import run_stream

    runs = {}
    rows = []
    failures = []
    tick = _tick(progress, "curves", len(modes))
    for mode in modes:
        res = run_stream(exp, mode, derive_seed(seed, "base", mode), quick=quick, trace_dir=out / "traces")
        runs[mode] = res.metrics
        rows.append({"index": -1, "mode": mode, "rep": 0, "seed": res.seed, **res.summary,
                     "invariants": res.verdict, "replay": res.replay or ""})
        if res.replay:
            failures.append(res.replay)
        tick()
    paths = plots.stream_runs(runs, out, f"{exp.name}: {_describe(exp, quick)}", exp.get("writers.parallelism"))
    if grid and exp.sweep:
        tasks = grid_tasks(exp, seed, modes, quick, out / "traces")
        tick = _tick(progress, "sweep", len(tasks))
        grid_rows = []
        for t in tasks:
            grid_rows.append(run_task(t))
            tick()
        failures += [r["replay"] for r in grid_rows if r["replay"]]
        rows += grid_rows
        paths += plots.sweep(grid_rows, out, f"{exp.name}: sweep")
    return Outcome(exp.name, out, write_table(rows, out), paths, rows, failures)


def _describe(exp, quick) -> str:
    p = exp.params
    dur = p["run"]["quick_duration_s" if quick else "duration_s"]
    return (f"{p['writers']['parallelism']} writers, {p['source']['rate_rps']:g} records/s, "
            f"checkpoint {p['checkpoint']['interval_s']:g} s, commit {p['coordinator']['commit_latency_s']:g} s, "
            f"{dur:g} s simulated")


def _truetime(exp, out, seed, quick, modes, progress, grid) -> Outcome:
    from . import truetime_study

    st = exp.params["truetime_study"]
    total = len(st["skews_ms"]) * len(st["tables"]) * len(st["writers"]) * len(st["resolutions_ms"])
    rows = truetime_study.run(exp.params, seed, quick, _tick(progress, "points", total))
    failures = [f"{r['invariant']} (tables={r['tables']} writers={r['writers']} skew={r['skew_ms']:g} ms "
                f"resolution={r['resolution_ms']} ms, {r['duplicate_times']} duplicate times)"
                for r in rows if r["invariant"] != "ok" or r["duplicate_times"]]
    paths = plots.truetime(rows, out, f"{exp.name}: instant-request latency under the TrueTime lock")
    return Outcome(exp.name, out, write_table(rows, out), paths, rows, failures)


def _collisions(exp, out, seed, quick, modes, progress, grid) -> Outcome:
    from . import collisions

    c = exp.params["collisions"]
    points = len(c["writers"]) * len(c["periods_s"]) * len(c.get("resolutions_ms", [1]))
    rows = collisions.run(exp.params, seed, quick, _tick(progress, "points", points))
    failures = [f"{r['truetime_collisions']} collisions with TrueTime at N={r['writers']} T={r['period_s']} "
                f"resolution={r.get('resolution_ms', 1)} ms: "
                f"{r['truetime_invariant']}" for r in rows if r["truetime_collisions"] or r["truetime_invariant"] != "ok"]
    paths = plots.collisions(rows, out, f"{exp.name}: instant-time collisions per simulated day")
    return Outcome(exp.name, out, write_table(rows, out), paths, rows, failures)


def _recovery(exp, out, seed, quick, modes, progress, grid) -> Outcome:
    from . import recovery

    rows = recovery.run(exp, seed, quick, modes, progress, trace_dir=out / "traces")
    failures = [r["replay"] for r in rows if r.get("replay")]
    failures += [f"{r['mode']} {r['target']}@{r['step']}: lost {r['lost_records']}, duplicated "
                 f"{r['duplicated_records']}" for r in rows if r["lost_records"] or r["duplicated_records"]]
    paths = plots.recovery(rows, out, f"{exp.name}: time to recover after a crash at each protocol step")
    return Outcome(exp.name, out, write_table(rows, out), paths, rows, failures)


def _history(exp, out, seed, quick, modes, progress, grid) -> Outcome:
    from . import history

    tick = _tick(progress, "modes", len(history.MODES))
    results, rows, failures = {}, [], []
    for mode in history.MODES:
        res = history.run(exp.params, mode, derive_seed(seed, "history", mode), quick=quick)
        results[mode] = res
        rows.append({"mode": mode, "seed": res.seed, **res.summary})
        failures += res.failures
        tick()
    days = exp.params["history"]["quick_days" if quick else "days"]
    paths = history.plot(results, out, f"{exp.name}: one commit every {exp.params['history']['commit_every_s']:g} s "
                                       f"for {days:g} days, with and without archival")
    (out / "decisions.txt").write_text("\n".join(results["archival"].series.decisions) + "\n")
    return Outcome(exp.name, out, write_table(rows, out), paths, rows, failures)


def _concurrency(exp, out, seed, quick, progress, name, overrides) -> Outcome:
    """The many-writers sweep (writers x overlaps x modes) and the compaction-scheduling stall runs
    (:mod:`sim.concurrency`). Each run's seed comes from (seed, its point), so the replay line printed for a
    failing run (the same seed, ``--set`` narrowing the sweep to its point) reruns it exactly."""
    from . import concurrency

    c, st = exp.params["concurrency"], exp.params["compaction_stall"]
    points = [(m, w, o) for m in c["modes"] for w in c["writers"] for o in c["overlaps"]]
    import shlex

    def sets(values: dict) -> str:
        return " ".join(f"--set {shlex.quote(f'{k}={_toml(v)}')}" for k, v in values.items())

    kept = {k: v for k, v in overrides.items() if k not in ("concurrency.modes", "concurrency.writers",
                                                             "concurrency.overlaps", "compaction_stall.rules")}
    base = f"hoodie-lab simulate {shlex.quote(name)} --seed {seed}" + (" --quick" if quick else "") + \
        (f" {sets(kept)}" if kept else "")
    tick = _tick(progress, "runs", len(points) + len(st["rules"]))
    rows, failures, runs, stalls = [], [], [], {}
    for mode, writers, overlap in points:
        s = derive_seed(seed, "concurrency", mode, writers, overlap)
        replay = f"{base} " + sets({"concurrency.modes": [mode], "concurrency.writers": [writers],
                                   "concurrency.overlaps": [overlap], "compaction_stall.rules": []})
        r = concurrency.run_writers(exp.params, mode, writers, overlap, s, quick=quick, replay=replay)
        runs.append(r)
        rows.append({"part": "writers", "mode": mode, "writers": writers, "overlap": overlap, "seed": s, **r.summary,
                     "replay": replay if r.failures else ""})
        failures += r.failures
        tick()
    for rule in st["rules"]:
        s = derive_seed(seed, "compaction-stall", rule)
        replay = f"{base} " + sets({"compaction_stall.rules": [rule], "concurrency.writers": []})
        r = concurrency.run_stall(exp.params, rule, s, quick=quick, replay=replay)
        stalls[rule] = r
        rows.append({"part": "stall", "mode": rule, "rule": rule, "writers": 1, "seed": s,
                     **r.summary, "replay": replay if r.failures else ""})
        failures += r.failures
        tick()
    from lakeio import plots as lplots

    dur = c["quick_duration_s" if quick else "duration_s"]
    paths = []
    wrows = [r for r in rows if r["part"] == "writers"]
    if wrows:
        paths += lplots.concurrency_sweep(wrows, out, f"{exp.name}: {len(c['modes'])} modes x "
                                          f"{len(c['writers'])} writer counts x {len(c['overlaps'])} overlaps, "
                                          f"{dur:g} s simulated each")
    if stalls:
        sdur = st["quick_duration_s" if quick else "duration_s"]
        paths += lplots.compaction_stall(
            {rule: {"start_t_s": r.start_t_s, "stall_s": r.stall_s, **r.summary} for rule, r in stalls.items()},
            out, f"{exp.name}: a streaming writer (one deltacommit per {st['commit_interval_s']:g} s) and compaction "
                 f"every {st['compaction_every_commits']} deltacommits, {sdur:g} s simulated")
    return Outcome(exp.name, out, write_table(rows, out), paths, rows, failures)


def _toml(v) -> str:
    """A value as ``--set`` reads it back (TOML)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ",".join(_toml(x) for x in v) + "]"
    return repr(v)
