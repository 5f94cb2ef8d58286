"""``hoodie-lab demo`` (``make demo``): the skeleton audit, the blocking-vs-async curves, then the report.

1. a synthetic table with overlapping writes and a pending compaction, audited under both slicing rules
   (:func:`hoodie_lab.scenarios.run_skeleton_demo`);
2. the blocking-vs-async curves from the simulation (:func:`sim.experiments.run_named`, quick size);
3. the design-review report (:func:`hoodie_lab.commands.report.build`, quick size); its path is the last
   line printed. Exit 0 when the audit, the simulation and every report section are ok, else 1.

The scenario and its audit live in :mod:`hoodie_lab.scenarios` (the report's slicing section uses them
too); :func:`build_scenario`, :func:`run_skeleton_demo` and :class:`DemoResult` are re-exported here.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hoodie_lab.scenarios import DemoResult, build_scenario, run_skeleton_demo  # noqa: F401 - re-exported


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("demo", help="skeleton audit under both slicing rules, blocking-vs-async curves, "
                                           "then the design-review report",
                              description="Build a synthetic table with overlapping writes and a pending compaction "
                                          "in the model, write it as a skeleton table and audit it under both "
                                          "slicing rules; run the blocking-vs-async simulation; build the "
                                          "design-review report and print its path last.")
    p.add_argument("--out", metavar="DIR", help="write the skeleton table under DIR (default: a temporary folder)")
    p.add_argument("--report-out", metavar="DIR", type=Path, default=None,
                   help="where the report goes (default: <repo>/reports inside the repository, else ./reports)")
    p.add_argument("--seed", type=int, default=20251220, help="seed of the simulation and the report (default 20251220)")
    p.add_argument("--section", action="append", metavar="NAME",
                   help="build only these report sections (repeatable; default: all)")
    p.set_defaults(func=run)


def run(args) -> int:
    import sys

    from lakeio.audit import make_console, render
    from hoodie_lab.commands.report import build, check_out_dir, check_seed, default_out_dir
    from lakeio.errors import UserError

    console = make_console()
    check_seed(args.seed)
    if args.out and (Path(args.out) / "demo_overlap_v9").exists():
        raise UserError(f"{Path(args.out) / 'demo_overlap_v9'}: exists; choose another --out")
    report_out = check_out_dir(args.report_out or default_out_dir())
    console.rule("1. the skeleton table, audited under both slicing rules")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        res = run_skeleton_demo(out)
        _print(console, res, render)
    else:
        with tempfile.TemporaryDirectory(prefix="hoodie-lab-demo-") as tmp:
            res = run_skeleton_demo(tmp)
            _print(console, res, render)
            console.print("(the skeleton table was written to a temporary folder; use --out DIR to keep it)")
    sim_ok = _simulate(console, report_out / "sim" / "demo-blocking-vs-async", args.seed)
    console.rule("3. the design-review report")
    sys.stdout.flush()
    path, sections = build(report_out, full=False, seed=args.seed, sections=args.section,
                           log=lambda line: print(line, file=sys.stderr, flush=True))
    for s in sections:
        console.print(f"{'ok    ' if s.ok else 'FAILED'} {s.title} ({s.seconds:.1f} s)")
    print(path, flush=True)
    return 0 if res.ok and sim_ok and all(s.ok for s in sections) else 1


def _simulate(console, out: Path, seed: int) -> bool:
    """The blocking-vs-async curves (quick size): a summary table and the plot paths."""
    from sim.experiments import run_named

    console.rule("2. blocking vs async instant generation (simulation, quick size)")
    outcome = run_named("blocking-vs-async", out, seed=seed, quick=True, grid=False)
    from rich.table import Table as RTable

    cols = ["mode", "throughput_rps", "stall_per_checkpoint_s", "latency_p50_s", "latency_p99_s",
            "backlog_max_records", "pending_instants_max", "invariants"]
    t = RTable(title=f"blocking-vs-async, seed {seed} (hoodie-lab simulate blocking-vs-async --quick --no-sweep "
                     f"--seed {seed})", title_justify="left")
    for c in cols:
        t.add_column(c, justify="right")
    for r in outcome.rows:
        t.add_row(*[f"{r.get(c, ''):.4g}" if isinstance(r.get(c), float) else str(r.get(c, "")) for c in cols])
    console.print(t)
    for p in outcome.plots:
        console.print(f"plot: {p}")
    for f in outcome.failures:
        console.print(f"[bold red]invariant violated[/]: {f}")
    return not outcome.failures


def _print(console, res: DemoResult, render) -> None:
    console.rule(f"skeleton table {res.table_path} (placeholder data files)")
    for rule, result in res.results.items():
        console.rule(f"audit under the {rule} rule")
        render(result, console)
    console.rule("what differs between the rules")
    console.print("expected: the completion-time (1.x) audit holds; the instant-time (0.x) rule loses committed "
                  "data of the write that overlaps the pending compaction (I8.snapshot-completeness)")
    if res.differences:
        for d in res.differences:
            console.print(f"- {d}")
    else:
        console.print("nothing: both rules give the same latest slices and verdicts")
