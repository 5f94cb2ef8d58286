"""``hoodie-lab explore --liveness``: judge the temporal properties (:mod:`model.invariants.temporal`) under the
fairness declared per event kind, over the explored graph (:mod:`checker.liveness`).

``--variant`` may name a liveness variant (:data:`model.protocol.variants.LIVENESS_VARIANTS`: a protocol variant
plus the actions it does not take fairly) or any protocol variant (every own step weakly fair). Each violated
property's shortest lasso is written as a trace (prefix events; the cycle in the header) under ``--out``;
``--graph FILE`` draws the first lasso with its cycle in red. Exit 1 when a property is violated or the
check is incomplete (``--max-states`` reached, a continuation cut)."""

from __future__ import annotations

import json
from pathlib import Path

from lakeio.errors import UserError


def write_lasso(path, config, lasso: Lasso, *, seed: int = 0, unfair: frozenset = frozenset()):
    """The lasso as a trace file (the project's one format): the prefix's events; the cycle in the header."""
    from lakeio.traces import write_trace

    return write_trace(path, config, lasso.prefix, seed, driver="explore", lasso=lasso.header(),
                       unfair=sorted(unfair))


def run_liveness(args, build_config, _check_range) -> int:
    """``build_config``/``_check_range``: the explore command's (passed in: no import circle)."""
    from checker.liveness import check_liveness, draw_lasso
    from model.protocol.variants import LIVENESS_VARIANTS, VARIANTS

    name = args.variant or "hudi-1.1"
    lv = LIVENESS_VARIANTS.get(name)
    if lv is None and name not in VARIANTS:
        raise UserError(f"--variant: unknown variant {name!r}; known: {', '.join(sorted(set(VARIANTS) | set(LIVENESS_VARIANTS)))}")
    if args.graph and Path(args.graph).suffix.lower() not in (".png", ".svg"):
        raise UserError(f"--graph: {args.graph}: the file name must end in .png or .svg")
    _check_range("--max-states", args.max_states)
    base = lv.base if lv is not None else name
    args.variant = base
    try:
        _, cfg = build_config(args)
    finally:
        args.variant = name
    unfair = frozenset()
    if lv is not None:
        unfair = lv.unfair
        if lv.overrides:
            cfg = cfg.with_(**lv.overrides)
    out_dir = Path(args.out)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"--out: {out_dir} exists and is not a directory")
    res = check_liveness(cfg, unfair=unfair, max_states=args.max_states)
    traces = {}
    for prop, lasso in res.violations.items():
        traces[prop] = str(write_lasso(out_dir / f"liveness-{name}-{prop}.jsonl", cfg, lasso, unfair=unfair))
    if args.graph and res.violations:
        draw_lasso(next(iter(res.violations.values())), args.graph)
    report = {"variant": name, "unfair": sorted(unfair), "states": res.states,
              "continuation_states": res.continuation_states, "transitions": res.transitions,
              "fair_components": res.fair_components, "components": res.components, "cut": res.cut,
              "complete": res.complete, "cpu_s": round(res.cpu, 3),
              "violations": {p: {"lasso": l.header(), "prefix_events": len(l.prefix), "trace": traces[p],
                                 "detail": l.describe()} for p, l in res.violations.items()}}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"liveness of {name} (unfair: {', '.join(sorted(unfair)) or 'none'}): {res.states:,} states, "
              f"{res.continuation_states:,} continuation states, {res.fair_components:,} fair components, "
              f"{res.cpu:.2f} CPU s")
        if not res.complete:
            print("  INCOMPLETE: --max-states reached")
        if res.cut:
            print(f"  {res.cut} continuation(s) cut (not judged)")
        from model.invariants.temporal import DESCRIPTIONS, TEMPORAL

        for prop in TEMPORAL:
            lasso = res.violations.get(prop)
            if lasso is None:
                print(f"  holds     {prop}: {DESCRIPTIONS[prop]}")
            else:
                print(f"  VIOLATED  {lasso.describe()}")
                print(f"            lasso trace: {traces[prop]} (replay: hoodie-lab replay {traces[prop]})")
        if args.graph and res.violations:
            print(f"  lasso drawn to {args.graph}")
    return 0 if res.holds else 1
