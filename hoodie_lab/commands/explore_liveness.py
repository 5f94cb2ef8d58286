"""``hoodie-lab explore --liveness``: judge the temporal properties (:mod:`model.invariants.temporal`) under the
fairness declared per event kind, over the explored graph (:mod:`checker.liveness`).

``--variant`` may name a liveness variant (:data:`model.protocol.variants.LIVENESS_VARIANTS`: a protocol variant
plus the actions it does not take fairly) or any protocol variant (every own step weakly fair). Each violated
property's shortest lasso is written as a trace (prefix events; the cycle in the header) under ``--out``;
``--graph FILE`` draws the first lasso with its cycle in red. Exit 1 when a property is violated or the
check is incomplete (``--max-states`` reached, a continuation cut).

``--machine indexing --liveness`` judges ``index-build-resolved`` over the MDT + async indexer machine
(:class:`checker.indexing.IndexingLiveModel`; ``--variant``: :data:`model.mdt.variants.INDEXING_LIVENESS_VARIANTS`
or any indexing variant, every own step fair; the indexing options apply), ``--machine archival --liveness``
``archival-bounded`` and ``archival-finishes`` over writers, a cleaner and the archiver
(:class:`checker.archival.ArchivalLiveModel`; ``--variant``: :data:`model.archival_machine.ARCHIVAL_LIVENESS_VARIANTS`;
``--writers``, ``--failures``). Their lassos are printed as numbered steps (``--json``: as data), as
``explore --machine indexing`` prints its counterexamples: the trace format is the protocol's."""

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


#: Options of the protocol and the other machines that mean nothing to the archival machine (None unless given).
_NOT_ARCHIVAL = ("faults", "mode", "records", "buffer_size", "table_version", "mdt_partition", "timeouts", "retries",
                 "mdt_compaction", "drop", "ticks", "publish", "storage", "generator", "resolution_ms", "plan_lookup",
                 "rollback", "table_type", "index", "failed_writes", "conflict_strategy", "compaction_scheduling",
                 "commits", "keys", "buckets", "compactions", "cleans", "clean_policy", "writer_crashes",
                 "concurrency_mode", "lock_provider")


def _indexing_model(args):
    from dataclasses import replace

    from checker.indexing import IndexingLiveModel
    from model.mdt.variants import INDEXING_LIVENESS_VARIANTS, INDEXING_VARIANTS

    from .explore_indexing import OTHER_MACHINES, build_indexing_config

    for opt in OTHER_MACHINES:
        if getattr(args, opt, None) is not None:
            raise UserError(f"--{opt.replace('_', '-')}: not an option of --machine indexing")
    name = args.variant or "hudi-1.x"
    lv = INDEXING_LIVENESS_VARIANTS.get(name)
    if lv is None and name not in INDEXING_VARIANTS:
        known = sorted(set(INDEXING_VARIANTS) | set(INDEXING_LIVENESS_VARIANTS))
        raise UserError(f"--variant: unknown indexing variant {name!r}; known: {', '.join(known)}")
    args.variant = lv.base if lv is not None else name
    try:
        _, _, cfg = build_indexing_config(args)
    finally:
        args.variant = name
    unfair, breaks = frozenset(), ()
    if lv is not None:
        unfair, breaks = lv.unfair, lv.breaks
        given = {"writers": args.writers, "failures": getattr(args, "failures", None),
                 "timeouts": getattr(args, "timeouts", None), "retries": getattr(args, "retries", None),
                 "mdt_compaction": getattr(args, "mdt_compaction", None), "drop": getattr(args, "drop", None)}
        keep = {k: v for k, v in lv.overrides.items() if given.get(k) is None}  # the command line wins
        try:
            cfg = replace(cfg, **keep)
        except ValueError as exc:
            raise UserError(f"--variant {name}: {exc}") from None
    return name, unfair, breaks, IndexingLiveModel(cfg, unfair)


def _archival_model(args):
    from checker.archival import ArchivalLiveModel
    from model.archival_machine import ARCHIVAL_LIVENESS_VARIANTS

    for opt in _NOT_ARCHIVAL:
        if getattr(args, opt, None) is not None:
            raise UserError(f"--{opt.replace('_', '-')}: not an option of --machine archival")
    name = args.variant or "hudi"
    lv = ARCHIVAL_LIVENESS_VARIANTS.get(name)
    if lv is None:
        raise UserError(f"--variant: unknown archival variant {name!r}; known: {', '.join(ARCHIVAL_LIVENESS_VARIANTS)}")
    extra = {}
    if args.writers is not None:
        extra["writers"] = args.writers
    if getattr(args, "failures", None) is not None:
        extra["failures"] = args.failures
    try:
        cfg = lv.config(**extra)
    except ValueError as exc:
        flag = "--failures" if "failures" in str(exc) else "--writers"
        raise UserError(f"{flag}: {exc}") from None
    return name, lv.unfair, lv.breaks, ArchivalLiveModel(cfg, lv.unfair)


def run_machine_liveness(args) -> int:
    """``explore --machine indexing|archival --liveness``: the temporal properties of that machine."""
    from checker.liveness import check_model_liveness, draw_lasso
    from model.invariants.temporal import DESCRIPTIONS

    if args.graph and Path(args.graph).suffix.lower() not in (".png", ".svg"):
        raise UserError(f"--graph: {args.graph}: the file name must end in .png or .svg")
    if args.max_states is not None and not 1 <= args.max_states <= 1_000_000_000:
        raise UserError(f"--max-states: {args.max_states} is out of range; allowed 1..1,000,000,000")
    build = _indexing_model if args.machine == "indexing" else _archival_model
    name, unfair, breaks, model = build(args)
    res = check_model_liveness(model, max_states=args.max_states)
    fmt = model.format_action
    report = {"machine": args.machine, "variant": name, "unfair": sorted(unfair), "must_break": list(breaks),
              "states": res.states, "transitions": res.transitions, "fair_components": res.fair_components,
              "components": res.components, "complete": res.complete, "cpu_s": round(res.cpu, 3),
              "violations": {p: {"prefix": [fmt(a) for a in l.prefix], "cycle": [fmt(a) for a in l.cycle] or "stutter",
                                 "obligation": repr(l.obligation), "detail": l.describe()}
                             for p, l in res.violations.items()}}
    if args.graph and res.violations:
        draw_lasso(next(iter(res.violations.values())), args.graph)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"liveness of --machine {args.machine} {name} (unfair: {', '.join(sorted(unfair)) or 'none'}): "
              f"{res.states:,} states, {res.fair_components:,} fair components, {res.cpu:.2f} CPU s")
        if not res.complete:
            print("  INCOMPLETE: --max-states reached")
        for prop in model.properties:
            lasso = res.violations.get(prop)
            if lasso is None:
                print(f"  holds     {prop}: {DESCRIPTIONS[prop]}")
                continue
            print(f"  VIOLATED  {lasso.describe()}")
            for i, a in enumerate(lasso.prefix, start=1):
                print(f"    {i:3d}. {fmt(a)}")
            loop = ", ".join(fmt(a) for a in lasso.cycle) or "stutter"
            print(f"    then forever: {loop}")
        if res.violations:
            print(f"  (replay: model.{'mdt.machine' if args.machine == 'indexing' else 'archival_machine'}.step "
                  "from initial_state, the steps above)")
        if args.graph and res.violations:
            print(f"  lasso drawn to {args.graph}")
    return 0 if res.holds else 1
