"""``hoodie-lab explore --machine indexing``: exhaustively explore the metadata table and the async indexer.

Visits every interleaving of the writers, the indexer (schedule, execute, catch-up, timeout, complete,
drop), the rollback process and the MDT compaction of :mod:`model.mdt.machine` within the bound, breadth
first (:class:`checker.indexing.IndexingModel`), checks the invariants of
:mod:`model.invariants.indexing` in every state and prints, per invariant violated, its shortest
counterexample as numbered steps (``--json`` gives them as data; no trace file: the trace format is the
protocol's). It also says whether the index could be built at all. Exit status: 0 no violation, 1 a
violation, 2 bad arguments (a concurrency mode without multi-writer, no lock provider, an unknown or
existing index: one line naming the setting).
"""

from __future__ import annotations

import json

from lakeio.errors import UserError

from .common import check_machine_args, explore_every_violation, print_outcome, violation_rows

DEFAULT_VARIANT = "hudi-1.x"
#: ``--concurrency-mode`` values (the concurrency machine's spelling) -> ``hoodie.write.concurrency.mode``.
MODE_NAMES = {"single_writer": "SINGLE_WRITER", "occ": "OPTIMISTIC_CONCURRENCY_CONTROL",
              "nbcc": "NON_BLOCKING_CONCURRENCY_CONTROL"}


def add_indexing_arguments(p) -> None:
    """The options only the indexing machine reads (``--variant``, ``--writers``, ``--failures``, and the
    concurrency machine's ``--concurrency-mode`` and ``--lock-provider`` are shared)."""
    g = p.add_argument_group("--machine indexing (also --concurrency-mode: single_writer is refused, "
                             "--lock-provider: 'none' is refused)")
    g.add_argument("--mdt-partition", metavar="PARTITION",
                   help="the MDT partition to build: record_index, column_stats, bloom_filters (default: the variant's)")
    g.add_argument("--timeouts", type=int, metavar="N", help="catch-up timeouts (aborts) that may happen (0-2)")
    g.add_argument("--retries", type=int, metavar="N", help="schedules after an abort (0-2)")
    g.add_argument("--mdt-compaction", action="store_true", default=None, help="one MDT compaction may run")
    g.add_argument("--drop", action="store_true", default=None, help="the built index may be dropped")


def build_indexing_config(args):
    """The variant name, the variant and the :class:`model.mdt.machine.IndexingConfig` the arguments describe."""
    from model.mdt.partitions import ConcurrencySettings, IndexingError
    from model.mdt.variants import INDEXING_VARIANTS

    name = args.variant or DEFAULT_VARIANT
    if name not in INDEXING_VARIANTS:
        raise UserError(f"--variant: unknown indexing variant {name!r}; known: {', '.join(INDEXING_VARIANTS)}")
    v = INDEXING_VARIANTS[name]
    overrides = {}
    if args.writers is not None:
        if not 1 <= args.writers <= 3:
            raise UserError(f"--writers: {args.writers} is out of range; the indexing machine allows 1..3")
        overrides["writers"] = args.writers
    for arg, fld, lo, hi in (("failures", "failures", 0, 3), ("timeouts", "timeouts", 0, 2), ("retries", "retries", 0, 2)):
        value = getattr(args, arg, None)
        if value is not None:
            if not lo <= value <= hi:
                raise UserError(f"--{arg}: {value} is out of range; allowed {lo}..{hi}")
            overrides[fld] = value
    for arg, fld in (("mdt_compaction", "mdt_compaction"), ("drop", "drop")):
        if getattr(args, arg, None):
            overrides[fld] = True
    if getattr(args, "mdt_partition", None) is not None:
        overrides["partition"] = args.mdt_partition
    mode, lock = getattr(args, "concurrency_mode", None), getattr(args, "lock_provider", None)
    if mode is not None or lock is not None:
        base = v.config().settings
        overrides["settings"] = ConcurrencySettings(
            MODE_NAMES.get(mode, mode) if mode is not None else base.mode,
            (None if lock.lower() in ("", "none") else lock) if lock is not None else base.lock_provider)
    if "failures" in overrides and overrides["failures"] > overrides.get("writers", v.overrides.get("writers", 2)):
        raise UserError(f"--failures: {overrides['failures']} exceeds the number of writers")
    try:
        return name, v, v.config(**overrides)
    except IndexingError as exc:
        flag = {"indexing.concurrency-mode": "--concurrency-mode", "indexing.lock-provider": "--lock-provider"}.get(
            exc.rule, "--mdt-partition")
        raise UserError(f"{flag}: {exc.detail}") from None
    except ValueError as exc:
        raise UserError(f"--variant {name}: {exc}") from None


#: Options of the other machines that mean nothing here (None unless given).
OTHER_MACHINES = ("graph", "faults", "mode", "records", "buffer_size", "ticks", "publish", "storage", "generator",
                  "resolution_ms", "plan_lookup", "rollback", "table_version", "table_type", "index", "failed_writes",
                  "conflict_strategy", "compaction_scheduling", "commits", "keys", "buckets", "compactions", "cleans",
                  "clean_policy", "writer_crashes")


def run_indexing(args) -> int:
    from checker.indexing import IndexingModel

    max_states = check_machine_args(args, OTHER_MACHINES, "not an option of --machine indexing")
    name, variant, cfg = build_indexing_config(args)
    model = IndexingModel(cfg)
    res, found = explore_every_violation(model, max_states)
    built = res.discoveries.get("index-built")
    report = {
        "machine": "indexing", "variant": name, "config": cfg.to_dict(), "expected": list(variant.expected),
        "finding": variant.finding, "states": res.states, "transitions": res.transitions,
        "max_depth": res.max_depth, "cpu_s": round(res.cpu, 3), "complete": res.complete,
        "stop_reason": res.stop_reason, "index_built_at_depth": built.depth if built else None,
        "violations": violation_rows(model, found),
    }
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 1 if found else 0
    c = cfg
    print(f"explore --machine indexing {name}: index {c.partition}, {c.settings.mode} with lock provider "
          f"{c.settings.lock_provider}; {c.writers} writer(s) (table config read {c.config_read}), "
          f"{c.failures} failure(s), {c.timeouts} timeout(s), {c.retries} retr{'y' if c.retries == 1 else 'ies'}, "
          f"MDT compaction {'on' if c.mdt_compaction else 'off'}, drop {'on' if c.drop else 'off'}")
    print(f"  {res.states:,} distinct states, {res.transitions:,} transitions, max depth {res.max_depth}, "
          f"{res.cpu:.2f} CPU s; index built "
          + (f"(shortest run: {built.depth} steps)" if built else "in NO run within the bound"))
    return print_outcome(model, res, found, report["violations"], "replay: model.mdt.machine.step from initial_state, the steps above")
