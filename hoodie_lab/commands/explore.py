"""``hoodie-lab explore``: bounded exhaustive exploration of the writer–coordinator protocol.

Visits every interleaving of the protocol's events (normal steps and the enabled faults) up to the
bound, breadth first, checking the step invariants in every state and the drained invariants
(exactly-once, liveness) where the run can settle. Reports distinct states, transitions, max
depth and states per second, the engine that ran (compiled or pure Python: ``engine.BUILD``), and
the shortest counterexample, written as a replayable trace.
Exit status: 0 no violation, 1 a violation was found, 2 bad arguments.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from lakeio.errors import UserError

from .common import add_progress_arg, progress_enabled

#: Allowed ranges of the bound arguments (inclusive).
RANGES = {
    "--writers": (1, 8),
    "--checkpoints": (0, 20),
    "--crashes": (0, 10),
    "--records": (0, 100),
    "--buffer-size": (1, 100),
    "--max-states": (1, 1_000_000_000),
    "--workers": (0, 64),
    "--partitions": (1, 4096),
}
#: --graph draws at most this many states, and only for bounds at most this big.
GRAPH_MAX_STATES = 500
GRAPH_BOUNDS = {"--writers": 2, "--checkpoints": 2, "--records": 4, "--crashes": 1}
DEFAULT_MAX_STATES = 20_000_000  # the 2 x 3 bound with lost acks and one crash has 13.3 million
CRASH_FAULTS = frozenset({"task-crash", "coordinator-crash", "full-restart", "lost-event",
                          "request-timeout"})
DEFAULT_OUT = "out/explore"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "explore", help="exhaustively explore the writer-coordinator protocol up to a bound",
        description=__doc__.splitlines()[0] + " Unspecified design options come from --variant "
        "(default hudi-1.1; --mode blocking without --variant means hudi-1.1-blocking). The engine's hot modules "
        "run compiled (mypyc, built at install when a C compiler is there; about 1.5x the states per CPU second) "
        "unless the build is missing or stale or HOODIE_LAB_ENGINE=pure; the report names the engine used.")
    p.add_argument("--variant", metavar="NAME", help="named protocol variant (default hudi-1.1)")
    p.add_argument("--machine", choices=("protocol", "table", "concurrency", "indexing", "archival"),
                   default="protocol",
                   help="the writer-coordinator protocol (default), the table-level state machine "
                        "(hoodie_lab/commands/explore_table.py), many processes on one timeline "
                        "(explore_concurrency.py), the metadata table with the async indexer "
                        "(explore_indexing.py) or archival beside writers and a cleaner (--liveness only); "
                        "their options are listed below")
    from .explore_concurrency import add_concurrency_arguments
    from .explore_indexing import add_indexing_arguments
    from .explore_table import add_table_arguments

    add_table_arguments(p)  # the table machine's options (an argument group)
    add_concurrency_arguments(p)  # the concurrency machine's options (an argument group)
    add_indexing_arguments(p)  # the indexing machine's options (an argument group)
    p.add_argument("--writers", type=int, default=None, metavar="W",
                   help="writer tasks (1-8, default 2; other machines: default the variant's)")
    p.add_argument("--checkpoints", type=int, default=2, metavar="C",
                   help="checkpoints that may be triggered (0-20, default 2)")
    p.add_argument("--faults", metavar="LIST",
                   help="comma-separated faults: lost-ack, late-ack, abort, task-crash, coordinator-crash, "
                        "full-restart, lost-event, request-timeout; 'none' or 'all' (default: the faults the variant needs to show its "
                        "break; none for correct variants)")
    p.add_argument("--crashes", type=int, default=1, metavar="N",
                   help="crash-like faults per run (task-crash, coordinator-crash, full-restart, lost-event; 0-10, "
                        "default 1)")
    p.add_argument("--mode", choices=("blocking", "async"), help="instant generation (default: the variant's)")
    p.add_argument("--table-version", type=int, choices=(6, 8), help="table version (default: the variant's)")
    p.add_argument("--records", type=int, metavar="R", help="records per source split (0-100, default: the variant's)")
    p.add_argument("--buffer-size", type=int, metavar="B",
                   help="records per writer buffer before an eager flush (1-100, default: the variant's)")
    p.add_argument("--max-states", type=int, default=None, metavar="N",
                   help=f"stop after N distinct states (the run is then NOT exhaustive; default {DEFAULT_MAX_STATES:,})")
    p.add_argument("--drain", choices=("settled", "every", "off"), default="settled",
                   help="where exactly-once/liveness are judged after draining: states where only faults are "
                        "enabled (default), every state (slower), or nowhere")
    p.add_argument("--exact", action="store_true",
                   help="keep whole state fingerprints instead of 64-bit hashes (no collision risk, ~3x memory)")
    p.add_argument("--symmetry", action="store_true",
                   help="symmetry reduction: states equal up to renaming the writer tasks count once (<= 4 writers)")
    p.add_argument("--sleep-sets", action="store_true",
                   help="skip transitions whose target the serial search already knows (sleep sets of independent "
                        "events, from earlier siblings and inherited; engine/independence.py): same states, depths and verdicts, "
                        "fewer transitions; serial protocol search only (not with --workers, --master, --graph, "
                        "--liveness)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="processes searching in parallel (checker/parallel.py: states partitioned by fingerprint, "
                        "level by level; same counts and verdicts); default 1 = the serial search, 0 = all cores")
    p.add_argument("--master", metavar="URL",
                   help="run the search as Spark jobs (checker/spark_explore.py: one job per BFS level, the frontier "
                        "and the visited set in files partitioned by fingerprint; same counts and verdicts) on this "
                        "master: local[N], local[*] or spark://HOST:PORT")
    p.add_argument("--partitions", type=int, default=None, metavar="N",
                   help="with --master: fingerprint partitions (1-4096, default the master's default parallelism)")
    p.add_argument("--spark-dir", metavar="DIR",
                   help="with --master: the search's work directory, reachable by every executor (default a new "
                        "temporary directory; removed at the end)")
    p.add_argument("--graph", metavar="FILE", help="draw the state graph (tiny bounds only) to FILE (.png or .svg)")
    p.add_argument("--liveness", action="store_true",
                   help="judge the temporal properties under fairness (checker.liveness); --variant may name a "
                        "liveness variant (model.protocol.variants.LIVENESS_VARIANTS; --machine indexing: "
                        "model.mdt.variants.INDEXING_LIVENESS_VARIANTS; --machine archival: "
                        "model.archival_machine.ARCHIVAL_LIVENESS_VARIANTS)")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    p.add_argument("--out", metavar="DIR", default=DEFAULT_OUT,
                   help=f"directory for the counterexample trace (default {DEFAULT_OUT})")
    add_progress_arg(p)
    p.set_defaults(func=run)


# --------------------------------------------------------------------------- arguments -> config
def _check_range(name: str, value) -> None:
    if value is None:
        return
    lo, hi = RANGES[name]
    if not lo <= value <= hi:
        raise UserError(f"{name}: {value} is out of range; allowed {lo}..{hi:,}")


def parse_faults(text: str | None, default: tuple) -> frozenset:
    from model.protocol import FAULTS

    if text is None:
        return frozenset(default)
    items = [f.strip() for f in text.split(",") if f.strip()]
    if items in ([], ["none"]):
        return frozenset()
    if items == ["all"]:
        return frozenset(FAULTS)
    unknown = [f for f in items if f not in FAULTS]
    if unknown:
        raise UserError(f"--faults: unknown fault {unknown[0]!r}; allowed: {', '.join(FAULTS)}, none, all")
    return frozenset(items)


def build_config(args):
    """The ProtocolConfig the arguments describe, and the variant name it starts from."""
    from model.protocol import VARIANTS

    for name in RANGES:
        _check_range(name, getattr(args, name[2:].replace("-", "_"), None))
    name = args.variant
    if name is None:
        name = "hudi-1.1-blocking" if args.mode == "blocking" else "hudi-1.1"
    if name not in VARIANTS:
        raise UserError(f"--variant: unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    v = VARIANTS[name]
    overrides = {
        "parallelism": 2 if args.writers is None else args.writers,
        "max_checkpoints": args.checkpoints,
        "max_crashes": args.crashes,
        "faults": parse_faults(args.faults, v.faults_needed),
    }
    for arg, field in (("mode", "mode"), ("table_version", "table_version"), ("records", "records"),
                       ("buffer_size", "buffer_size")):
        value = getattr(args, arg)
        if value is not None:
            overrides[field] = value
    try:
        return name, v.config(**overrides)
    except ValueError as exc:  # a combination the config refuses
        raise UserError(f"--variant {name}: {exc}") from None


def _check_graph_args(args, cfg) -> None:
    if not args.graph:
        return
    ext = Path(args.graph).suffix.lower()
    if ext not in (".png", ".svg"):
        raise UserError(f"--graph: {args.graph}: the file name must end in .png or .svg")
    actual = {"--writers": cfg.parallelism, "--checkpoints": cfg.max_checkpoints, "--records": cfg.records,
              "--crashes": cfg.max_crashes if cfg.faults & CRASH_FAULTS else 0}
    for name, limit in GRAPH_BOUNDS.items():
        if actual[name] > limit:
            raise UserError(f"--graph: only for tiny bounds; {name} is {actual[name]}, allowed 0..{limit} with --graph")


# --------------------------------------------------------------------------- traces
def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "violation"


# --------------------------------------------------------------------------- progress
#: Measured bounds (``python benchmarks/bench_protocol.py``, hudi-1.1 and its default records and buffer):
#: a bound that contains one of these (at least as many writers, checkpoints, crashes, records, the same
#: faults and more) has at least its states. (writers, checkpoints, crashes, faults, states, CPU s, peak GB)
KNOWN_BOUNDS = [
    (2, 3, 1, frozenset({"lost-ack", "task-crash", "coordinator-crash", "full-restart"}), 13_278_453, 592, 5.4),
]


def estimate(cfg) -> str | None:
    """A line estimating a large bound's cost before it starts (None when no measured bound is inside it)."""
    from model.protocol import variant

    ref_cfg = variant("hudi-1.1")
    for writers, ckps, crashes, faults, states, cpu_s, peak_gb in KNOWN_BOUNDS:
        crash_ok = crashes <= cfg.max_crashes or not (faults & CRASH_FAULTS)
        if (cfg.parallelism >= writers and cfg.max_checkpoints >= ckps and crash_ok and cfg.faults >= faults
                and cfg.records >= ref_cfg.records and cfg.buffer_size <= ref_cfg.buffer_size
                and cfg.mode == ref_cfg.mode):
            return (f"estimate: at least {states:,} states (measured at {writers} writers x {ckps} checkpoints, "
                    f"faults {','.join(sorted(faults))}, crashes <= {crashes}: {cpu_s / 60:.0f} CPU-minutes, "
                    f"peak {peak_gb:g} GB); this bound is at least as large")
    return None


class _Progress:
    """TLC-style progress on stderr, when on (``--progress``, $HOODIE_LAB_PROGRESS, or a terminal): a live rich
    line on a terminal, else a plain line every $HOODIE_LAB_PROGRESS_EVERY seconds (default 5) and one at the
    end. The explorer calls it every few thousand new states (it polls the search's counters; nothing is
    done per state)."""

    def __init__(self, enabled: bool):
        from rich.console import Console

        from .common import progress_every

        self.enabled = enabled
        self.console = Console(stderr=True)
        self.live = None
        self.every = progress_every()
        self.last_line = time.monotonic()
        self.text = ""
        self.where = ""  #: replaces ", N workers" (the Spark search: its partitions and master)
        if enabled and self.console.is_terminal:
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self.live = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                 console=self.console, transient=True)
            self.task = self.live.add_task("exploring", total=None)
            self.live.start()

    def say(self, line: str) -> None:
        if self.enabled:
            self.console.print(f"explore: {line}", highlight=False, soft_wrap=True)

    def __call__(self, res, queue: int) -> None:
        if not self.enabled:
            return
        from .common import rss_bytes

        rss = res.rss or rss_bytes()
        workers = self.where or (f", {res.workers} workers" if res.workers > 1 else "")
        self.text = (f"level {res.level}: {res.states:,} distinct states, {res.transitions:,} transitions, "
                     f"frontier {queue:,}, depth {res.max_depth}, {res.states_per_second:,.0f} states/s, "
                     f"RSS {rss / 2**20:,.0f} MiB{workers}")
        if self.live is not None:
            self.live.update(self.task, description=self.text)
        elif time.monotonic() - self.last_line >= self.every:
            self.last_line = time.monotonic()
            self.say(self.text)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
        if self.enabled and self.text:
            self.say(f"done: {self.text}")


# --------------------------------------------------------------------------- run
def _check_spark_args(args) -> None:
    """Refuse, with one line, what the Spark search does not do; then the master itself (a malformed URL or an
    unreachable standalone master) before anything is started."""
    master = getattr(args, "master", None)
    if master is None:
        for name in ("partitions", "spark_dir"):
            if getattr(args, name, None) is not None:
                raise UserError(f"--{name.replace('_', '-')}: only with --master")
        return
    if getattr(args, "liveness", False):
        raise UserError("--master: the liveness search runs locally; drop --master or --liveness")
    if args.machine != "protocol":
        raise UserError(f"--master: only for --machine protocol (not {args.machine})")
    if getattr(args, "workers", 1) != 1:
        raise UserError("--workers: the Spark search's parallelism is --partitions; use one of --workers, --master")
    if getattr(args, "sleep_sets", False):
        raise UserError("--sleep-sets: the serial search's pruning; not with --master")
    if args.graph:
        raise UserError("--graph: draws the serial search's state graph; not with --master")
    if args.exact:
        raise UserError("--exact: the Spark search keeps 64-bit fingerprints; not with --master")
    _check_range("--partitions", args.partitions)
    if args.spark_dir is not None:
        d = Path(args.spark_dir)
        if d.exists() and (not d.is_dir() or any(d.iterdir())):
            raise UserError(f"--spark-dir: {d} must be an empty directory or not exist")
    from pipeline.spark import check_master

    check_master(master)


def run(args) -> int:
    _check_spark_args(args)
    if getattr(args, "sleep_sets", False) and (getattr(args, "liveness", False) or args.machine != "protocol"):
        raise UserError("--sleep-sets: for the serial safety search of --machine protocol only (not with --liveness)")
    if getattr(args, "liveness", False):
        if args.machine in ("indexing", "archival"):
            from .explore_liveness import run_machine_liveness

            return run_machine_liveness(args)
        if args.machine != "protocol":
            raise UserError("--liveness: for --machine protocol, indexing or archival")
        from .explore_liveness import run_liveness

        return run_liveness(args, build_config, _check_range)
    if args.machine == "archival":
        raise UserError("--machine archival: only with --liveness (archival's safety invariants are checked by "
                        "properties/test_history_props.py)")
    if args.machine == "table":
        from .explore_table import run_table

        return run_table(args)
    if args.machine == "concurrency":
        from .explore_concurrency import run_concurrency

        return run_concurrency(args)
    if args.machine == "indexing":
        from .explore_indexing import run_indexing

        return run_indexing(args)
    from checker import SystemModel, draw_graph, explore

    name, cfg = build_config(args)
    _check_range("--max-states", args.max_states)
    workers = getattr(args, "workers", 1)
    _check_range("--workers", workers)
    if workers != 1 and args.graph:
        raise UserError("--graph: draws the serial search's state graph; use it with --workers 1")
    if workers != 1 and args.exact:
        raise UserError("--exact: the parallel search keeps 64-bit fingerprints; use --exact with --workers 1")
    sleep_sets = bool(getattr(args, "sleep_sets", False))
    if sleep_sets and workers != 1:
        raise UserError("--sleep-sets: prunes the serial search only; use it with --workers 1")
    if sleep_sets and args.graph:
        raise UserError("--sleep-sets: skips edges the state graph would draw; not with --graph")
    _check_graph_args(args, cfg)
    out_dir = Path(args.out)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"--out: {out_dir} exists and is not a directory")
    max_states = args.max_states or DEFAULT_MAX_STATES
    if args.graph:
        max_states = min(max_states, GRAPH_MAX_STATES + 1)

    model = SystemModel(cfg, drain_check=args.drain)
    symmetry = None
    if getattr(args, "symmetry", False):
        from checker.symmetry import SymmetryRefused, representative_function

        try:
            symmetry = representative_function(model)
        except SymmetryRefused as exc:
            raise UserError(f"--symmetry: {exc}") from None
    progress = _Progress(progress_enabled(args))
    guess = estimate(cfg)
    if guess:
        progress.say(f"{guess}; at most {max_states:,} states with --max-states")
    try:
        if getattr(args, "master", None):
            res = _run_spark(args, model, max_states, progress, symmetry is not None)
        elif workers == 1:
            res = explore(model, max_states=max_states, record_graph=bool(args.graph), progress=progress,
                          compact=not args.exact, symmetry=symmetry, sleep_sets=sleep_sets)
        else:
            from checker.parallel import explore_parallel

            res = explore_parallel(model, workers=workers, max_states=max_states, progress=progress,
                                   symmetry=symmetry)
    finally:
        progress.close()
    if args.graph and res.states > GRAPH_MAX_STATES:
        raise UserError(f"--graph: the state graph has more than {GRAPH_MAX_STATES} states at this bound; "
                        f"lower --records, --checkpoints, --writers or --faults")

    report = _report(name, cfg, model, res, args)
    ce = res.counterexample
    if ce is not None:
        from checker.replay import replay
        from lakeio.traces import load_trace, write_trace
        from model.trace import TraceError

        path = out_dir / f"explore-{_slug(name)}-{_slug(ce.property)}.jsonl"
        events = model.trace_events(ce)
        try:
            write_trace(path, cfg, events, seed=model.seed, driver="explore", variant=name,
                        note=f"shortest counterexample for {ce.property} found by hoodie-lab explore")
        except OSError as exc:
            raise UserError(f"--out: cannot write {path} ({exc.strerror})") from None
        report["violation"].update(trace=str(path), replay=f"hoodie-lab replay {path}",
                                   trace_events=len(events))
        # Self-check: the replay of the trace must report a violation too (and normally the same one).
        try:
            again = replay(load_trace(path))
            report["violation"]["replay_reports"] = None if again.ok else again.violation.invariant
        except (UserError, TraceError) as exc:  # the model refused an event of the trace
            report["violation"]["replay_reports"] = f"error: {exc}"
    if args.graph:
        title = (f"{name}: {cfg.parallelism} writer(s), {cfg.max_checkpoints} checkpoint(s), faults "
                 f"{','.join(sorted(cfg.faults)) or 'none'} — {res.states} states, {res.transitions} transitions"
                 + ("" if res.complete else " (search stopped at the first violation)"))
        try:
            Path(args.graph).parent.mkdir(parents=True, exist_ok=True)
            draw_graph(res, args.graph, title=title)
        except OSError as exc:
            raise UserError(f"--graph: cannot write {args.graph} ({exc.strerror})") from None
        report["graph"] = args.graph
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_text(report, ce, model)
    return 1 if ce is not None else 0


def _run_spark(args, model, max_states, progress, symmetric: bool):
    """The search as Spark jobs on ``--master`` (:func:`checker.spark_explore.explore_spark`)."""
    import shutil
    import tempfile

    from checker.spark_explore import explore_spark
    from pipeline.spark import get_spark

    progress.say(f"starting Spark ({args.master})… (the first start takes 10-30 s)")
    spark = get_spark(args.master, app_name="hoodie-lab explore")
    own_dir = args.spark_dir is None
    work = Path(tempfile.mkdtemp(prefix="hoodie-lab-explore-")) if own_dir else Path(args.spark_dir)
    try:
        sc = spark.sparkContext
        partitions = args.partitions or sc.defaultParallelism
        progress.where = f", {partitions} partitions on {args.master}"
        return explore_spark(model, sc, work, partitions=partitions, max_states=max_states, progress=progress,
                             symmetric=symmetric)
    finally:
        if own_dir:
            shutil.rmtree(work, ignore_errors=True)
        spark.stop()


def _describe_config(cfg) -> str:
    from model.protocol import FAULTS

    faults = ", ".join(f for f in FAULTS if f in cfg.faults) or "none"
    return (f"{cfg.mode}, tv{cfg.table_version}, {cfg.failed_writes}, commit rule '{cfg.commit_rule}'"
            + (", async event delivery" if cfg.event_delivery == "async" else "") + "; "
            f"{cfg.parallelism} writer(s), {cfg.max_checkpoints} checkpoint(s), {cfg.records} record(s)/split, "
            f"buffer {cfg.buffer_size}; faults: {faults}"
            + (f"; crashes <= {cfg.max_crashes}" if cfg.faults & CRASH_FAULTS else ""))


def _engine_build() -> str:
    """Which engine runs: the compiled (mypyc) hot modules or pure Python, and why (``engine.BUILD``)."""
    import engine

    return engine.BUILD


def _report(name, cfg, model, res, args) -> dict:
    ce = res.counterexample
    rep = {
        "variant": name,
        "config": cfg.to_dict(),
        "states": res.states,
        "transitions": res.transitions,
        "max_depth": res.max_depth,
        "terminal_states": res.terminal_states,
        "drained_checks": model.drains,
        "drain": args.drain,
        "fingerprints": "exact" if args.exact else "64-bit hashes",
        "symmetry": bool(getattr(args, "symmetry", False)),
        "sleep_sets": bool(getattr(args, "sleep_sets", False)),
        "pruned_transitions": res.pruned,
        "collision_probability": 0.0 if args.exact else (
            res.collision_probability if res.collision_probability is not None else res.states * res.states / 2.0 ** 65),
        "workers": res.workers,
        "elapsed_s": round(res.elapsed, 3),
        "cpu_s": round(res.cpu, 3),
        "states_per_second": round(res.states_per_second, 1),
        "states_per_cpu_second": round(res.states_per_cpu_second, 1),
        "engine": _engine_build(),
        "complete": res.complete,
        "stop_reason": res.stop_reason,
        "violation": None,
    }
    if getattr(args, "master", None):
        rep.update(master=args.master, partitions=res.workers, visited_bytes=res.fpset_bytes)
    elif res.workers > 1:
        rep.update(rss_bytes=res.rss, fpset_bytes=res.fpset_bytes,
                   memory_bytes_per_state=round(res.rss / max(res.states, 1), 1))
    if ce is not None:
        rep["violation"] = {
            "invariant": ce.property,
            "detail": ce.verdict.detail if ce.verdict is not None else ce.detail,
            "depth": ce.depth,
            "events": [ev.to_dict() for ev in ce.actions],
        }
    return rep


def _print_text(rep: dict, ce, model) -> None:
    from model.protocol import ProtocolConfig

    cfg = ProtocolConfig.from_dict(rep["config"])
    print(f"explore {rep['variant']}: {_describe_config(cfg)}")
    print(f"  {rep['states']:,} distinct states, {rep['transitions']:,} transitions, max depth {rep['max_depth']}, "
          f"{rep['terminal_states']:,} terminal states, {rep['drained_checks']:,} drained checks ({rep['drain']})")
    print(f"  {rep['elapsed_s']:.2f} s: {rep['states_per_second']:,.0f} states/s "
          f"({rep['states_per_cpu_second']:,.0f} per CPU second); fingerprints: {rep['fingerprints']}"
          + ("" if rep["fingerprints"] == "exact" else f" (collision probability < {max(rep['collision_probability'], 1e-12):.0e})"))
    print(f"  engine: {rep['engine']}")
    if rep.get("master"):
        print(f"  Spark {rep['master']}: one job per level, {rep['partitions']} fingerprint partitions; visited sets "
              f"{rep['visited_bytes'] / 2**20:,.1f} MiB in files; the CPU figure is the driver's only")
    elif rep.get("workers", 1) > 1:
        print(f"  {rep['workers']} worker processes (states partitioned by fingerprint); "
              f"{rep['memory_bytes_per_state']:,.0f} bytes resident per state ({rep['rss_bytes'] / 2**20:,.0f} MiB "
              f"over all processes, fingerprint sets {rep['fpset_bytes'] / 2**20:,.1f} MiB)")
    if rep.get("sleep_sets"):
        total = rep["transitions"] + rep["pruned_transitions"]
        print(f"  sleep sets on: {rep['pruned_transitions']:,} transitions skipped "
              f"({rep['pruned_transitions'] / max(total, 1):.1%} of {total:,}), their targets reached anyway")
    if rep.get("symmetry"):
        print(f"  symmetry reduction on: {rep['states']:,} canonical states (each stands for its renamings "
              f"of the {cfg.parallelism} writer tasks)")
    if ce is None:
        if rep["complete"]:
            print("  exhaustive: every state within the bound visited; no invariant violated")
        else:
            print(f"  NOT exhaustive (stopped: {rep['stop_reason']}; raise --max-states or lower the bound); "
                  "no invariant violated in the states visited")
        if rep.get("graph"):
            print(f"  graph: {rep['graph']}")
        return
    v = rep["violation"]
    print(f"  VIOLATED {v['invariant']} at depth {v['depth']} (a shortest counterexample): {v['detail']}")
    for i, ev in enumerate(ce.actions, start=1):
        print(f"    {i:3d}. {ev}")
    extra = v["trace_events"] - len(ce.actions)
    if extra:
        print(f"    ... then drain: {extra} event(s) (faults stop, checkpoints run with delivered acks)")
    if rep.get("graph"):
        print(f"  graph: {rep['graph']}")
    again = v.get("replay_reports")
    if again != v["invariant"]:
        print(f"  NOTE: replaying the trace reports {again or 'no violation'} (the explorer found {v['invariant']})")
    print(f"  trace: {v['trace']}")
    print(f"  replay: {v['replay']}")
