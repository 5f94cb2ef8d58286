"""``hoodie-lab explore --machine table``: exhaustively explore the table-level state machine.

Visits every interleaving of the writers, the compaction scheduler/executor and the clock of
:mod:`model.table_machine` within the bound, breadth first (:class:`checker.table.TableModel`), checks
every invariant in every state and prints, per invariant violated, its shortest counterexample as the
numbered list of actions (the table machine has no trace file format: the steps are printed, and
``--json`` gives them as data). Exit status: 0 no violation, 1 a violation, 2 bad arguments.
"""

from __future__ import annotations

import json

from lakeio.errors import UserError

from .common import check_machine_args, explore_every_violation, print_outcome, violation_rows

DEFAULT_VARIANT = "hudi-1.x"


def add_table_arguments(p) -> None:
    """The options only the table machine reads (``--variant``, ``--writers``, ``--table-version`` are shared)."""
    g = p.add_argument_group("--machine table")
    g.add_argument("--ticks", type=int, metavar="T", help="1 ms steps of true time that may pass (0-10, default 1)")
    g.add_argument("--publish", choices=("atomic", "two-step"),
                   help="lock around generate + publish of the requested file, or not (default: the variant's)")
    g.add_argument("--storage", choices=("put-if-absent", "overwrite"), help="default: the variant's")
    g.add_argument("--generator", choices=("truetime", "naive"), help="default: the variant's")
    g.add_argument("--resolution-ms", type=int, choices=(1, 1000), help="clock resolution (default: the variant's)")
    g.add_argument("--plan-lookup", choices=("sees-all", "misses-one"),
                   help="what the compaction planner's completion-time lookup sees (default: the variant's)")
    g.add_argument("--failures", type=int, metavar="F", help="writers that may fail (0..writers, default: the variant's)")
    g.add_argument("--rollback", choices=("command-block", "no-command-block"),
                   help="tv6 rollback writes a ROLLBACK command block or not (default: the variant's)")


def build_table_config(args):
    """The variant name and the :class:`model.table_machine.TableConfig` the arguments describe."""
    from model.table_variants import TABLE_VARIANTS

    name = args.variant or DEFAULT_VARIANT
    if name not in TABLE_VARIANTS:
        raise UserError(f"--variant: unknown table variant {name!r}; known: {', '.join(TABLE_VARIANTS)}")
    overrides = {}
    for arg, fld in (("writers", "writers"), ("ticks", "max_ticks"), ("table_version", "table_version"),
                     ("publish", "publish"), ("storage", "storage"), ("generator", "generator"),
                     ("resolution_ms", "resolution_ms"), ("plan_lookup", "plan_lookup"),
                     ("failures", "failures"), ("rollback", "rollback")):
        value = getattr(args, arg, None)
        if value is not None:
            overrides[fld] = value
    if "writers" in overrides and not 1 <= overrides["writers"] <= 4:
        raise UserError(f"--writers: {overrides['writers']} is out of range; the table machine allows 1..4")
    if "max_ticks" in overrides and not 0 <= overrides["max_ticks"] <= 10:
        raise UserError(f"--ticks: {overrides['max_ticks']} is out of range; allowed 0..10")
    v = TABLE_VARIANTS[name]
    offsets = v.overrides.get("clock_offsets_ms", ())
    if len(offsets) > overrides.get("writers", v.overrides.get("writers", 1)) + 1:
        overrides["clock_offsets_ms"] = offsets[:overrides["writers"] + 1]
    try:
        return name, v, v.config(**overrides)
    except ValueError as exc:
        raise UserError(f"--variant {name}: {exc}") from None


#: Options of the protocol machine that mean nothing to the table machine (None unless given).
PROTOCOL_ONLY = ("graph", "faults", "mode", "records", "buffer_size")


def run_table(args) -> int:
    from checker.table import TableModel

    max_states = check_machine_args(args, PROTOCOL_ONLY, "only for --machine protocol")
    name, variant, cfg = build_table_config(args)
    model = TableModel(cfg)
    res, found = explore_every_violation(model, max_states)
    report = {
        "machine": "table", "variant": name, "config": cfg.to_dict(), "expected": list(variant.expected),
        "states": res.states, "transitions": res.transitions, "max_depth": res.max_depth,
        "terminal_states": res.terminal_states, "cpu_s": round(res.cpu, 3), "complete": res.complete,
        "stop_reason": res.stop_reason,
        "violations": violation_rows(model, found),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 1 if found else 0
    c = cfg
    print(f"explore --machine table {name}: tv{c.table_version}, publish {c.publish}, storage {c.storage}, "
          f"generator {c.generator} ({'no lock, no wait' if c.generator == 'naive' else f'wait {c.skew_wait_ms} ms'}, "
          f"resolution {c.resolution_ms} ms, clock offsets "
          f"{list(c.clock_offsets_ms) or [0]}), plan lookup {c.plan_lookup}; {c.writers} writer(s), "
          f"compaction {'on' if c.compaction else 'off'}, {c.failures} failure(s) (rollback {c.rollback}), "
          f"{c.max_ticks} tick(s)")
    print(f"  {res.states:,} distinct states, {res.transitions:,} transitions, max depth {res.max_depth}, "
          f"{res.terminal_states:,} terminal states, {res.cpu:.2f} CPU s")
    return print_outcome(model, res, found, report["violations"], "the table machine writes no trace file; the "
                         "steps above replay it: model.table_machine.step from initial_state")
