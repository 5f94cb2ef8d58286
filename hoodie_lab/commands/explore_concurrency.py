"""``hoodie-lab explore --machine concurrency``: exhaustively explore many processes on one timeline.

Writers (single writer, OCC or NBCC), a compactor, a cleaner and a savepoint over one table
(:mod:`model.concurrency`), breadth first (:class:`checker.concurrency.ConcurrencyModel`); the read oracle
and the process invariants are checked in every state, and each violated invariant's shortest
counterexample is printed as numbered steps (``--json``: as data). Settings Hudi refuses (NBCC on COW,
NBCC without a bucket index, OCC without a lock provider, ...) are refused with one line naming the
setting, exit 2 -- unless the named broken variant models exactly that configuration.
Exit status: 0 no violation, 1 a violation, 2 bad arguments.
"""

from __future__ import annotations

import json

from lakeio.errors import UserError

from .common import check_machine_args, explore_every_violation, print_outcome, violation_rows

DEFAULT_VARIANT = "occ-mor-compaction"

#: option -> (MachineConfig or Settings field, range for ints)
_INTS = {"commits": (1, 3), "keys": (1, 3), "buckets": (1, 3), "compactions": (0, 2), "cleans": (0, 2),
         "writer_crashes": (0, 2), "clean_retained": (1, 3)}


def add_concurrency_arguments(p) -> None:
    """The options only the concurrency machine reads (``--variant``, ``--writers``, ``--table-version``,
    ``--storage``, ``--generator`` are shared with the other machines)."""
    g = p.add_argument_group("--machine concurrency")
    g.add_argument("--concurrency-mode", choices=("single_writer", "occ", "nbcc"),
                   help="hoodie.write.concurrency.mode (default: the variant's)")
    g.add_argument("--table-type", choices=("cow", "mor"), help="default: the variant's")
    g.add_argument("--index", choices=("bucket", "simple"), help="default: the variant's")
    g.add_argument("--failed-writes", choices=("eager", "lazy"), help="hoodie.clean.failed.writes.policy")
    g.add_argument("--lock-provider", metavar="CLASS", help="hoodie.write.lock.provider ('none': no provider)")
    g.add_argument("--conflict-strategy", choices=("simple", "prefer-writer"), help="conflict resolution strategy")
    g.add_argument("--compaction-scheduling", choices=("0.x", "1.x"), help="default: the variant's")
    g.add_argument("--commits", type=int, metavar="N", help="commits per writer (1-3)")
    g.add_argument("--keys", type=int, metavar="K", help="record keys (1-3)")
    g.add_argument("--buckets", type=int, metavar="B", help="buckets of the bucket index (1-3)")
    g.add_argument("--compactions", type=int, metavar="N", help="compactions the compactor may run (0-2)")
    g.add_argument("--cleans", type=int, metavar="N", help="cleaner runs (0-2)")
    g.add_argument("--clean-policy", choices=("KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"))
    g.add_argument("--writer-crashes", type=int, metavar="N", help="writer crashes (faults, 0-2)")


def build_concurrency_config(args):
    """The variant name, the variant and the :class:`model.concurrency.state.MachineConfig` the arguments
    describe; bad arguments and refused settings raise :class:`UserError`."""
    from model.concurrency.settings import SettingsError
    from model.concurrency.variants import VARIANTS

    name = args.variant or DEFAULT_VARIANT
    if name not in VARIANTS:
        raise UserError(f"--variant: unknown concurrency variant {name!r}; known: {', '.join(VARIANTS)}")
    v = VARIANTS[name]
    extra = {}
    for arg, fld in (("concurrency_mode", "mode"), ("table_type", "table_type"), ("index", "index"),
                     ("failed_writes", "failed_writes"), ("conflict_strategy", "conflict_strategy"),
                     ("compaction_scheduling", "compaction_scheduling"), ("table_version", "table_version"),
                     ("storage", "storage"), ("generator", "generator"), ("clean_policy", "clean_policy"),
                     ("commits", "commits"), ("keys", "keys"), ("buckets", "buckets"),
                     ("compactions", "compactions"), ("cleans", "cleans"), ("writer_crashes", "crashes")):
        value = getattr(args, arg, None)
        if value is None:
            continue
        if arg in _INTS:
            lo, hi = _INTS[arg]
            if not lo <= value <= hi:
                raise UserError(f"--{arg.replace('_', '-')}: {value} is out of range; allowed {lo}..{hi}")
        extra[fld] = value
    if getattr(args, "lock_provider", None) is not None:
        extra["lock_provider"] = None if args.lock_provider.lower() == "none" else args.lock_provider
    writers = getattr(args, "writers", None)
    if writers is not None:
        if not 1 <= writers <= 3:
            raise UserError(f"--writers: {writers} is out of range; the concurrency machine allows 1..3")
        extra["writers"] = writers
    from model.concurrency.settings import Settings

    if set(extra) & set(Settings.__dataclass_fields__) and not v.bounds.get("validated", True):
        extra["validated"] = True   # a broken-config variant with changed settings: the new settings must be valid
    try:
        return name, v, v.config(**extra)
    except SettingsError as exc:
        raise UserError(f"--variant {name}: {exc}") from None
    except (ValueError, TypeError) as exc:
        raise UserError(f"--variant {name}: {exc}") from None


#: Options of the protocol machine that mean nothing here (None unless given).
PROTOCOL_ONLY = ("graph", "faults", "mode", "records", "buffer_size")


def run_concurrency(args) -> int:
    from checker.concurrency import ConcurrencyModel

    max_states = check_machine_args(args, PROTOCOL_ONLY, "only for --machine protocol")
    name, variant, cfg = build_concurrency_config(args)
    model = ConcurrencyModel(cfg)
    res, found = explore_every_violation(model, max_states)
    report = {
        "machine": "concurrency", "variant": name, "config": cfg.to_dict(), "expected": list(variant.expected),
        "states": res.states, "transitions": res.transitions, "max_depth": res.max_depth,
        "terminal_states": res.terminal_states, "cpu_s": round(res.cpu, 3),
        "states_per_second": round(res.states_per_second, 1), "complete": res.complete,
        "stop_reason": res.stop_reason,
        "violations": violation_rows(model, found),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 1 if found else 0
    s, c = cfg.settings, cfg
    print(f"explore --machine concurrency {name}: {s.mode}, {s.table_type}, tv{s.table_version}, index {s.index}, "
          f"{s.failed_writes}, lock {s.lock_provider or 'none'}, strategy {s.conflict_strategy}, compaction "
          f"scheduling {s.compaction_scheduling}; {c.writers} writer(s) x {c.commits} commit(s), {c.keys} key(s), "
          f"{c.compactions} compaction(s), {c.cleans} clean(s)"
          + (f" ({c.clean_policy})" if c.clean_policy else "") + f", {c.crashes} crash(es)"
          + (f"; flaws: {', '.join(sorted(c.flaws))}" if c.flaws else ""))
    print(f"  {res.states:,} distinct states, {res.transitions:,} transitions, max depth {res.max_depth}, "
          f"{res.terminal_states:,} terminal states, {res.cpu:.2f} CPU s, {res.states_per_second:,.0f} states/s")
    return print_outcome(model, res, found, report["violations"], "replay: model.concurrency.machine.run(config, actions) from the initial state")
