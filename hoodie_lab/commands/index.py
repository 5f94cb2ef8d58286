"""``hoodie-lab index TABLE --type record_index --concurrency-mode optimistic_concurrency_control
--lock-provider filesystem [--timeout S] [--poll S] [--priority background|normal] [--max-cpu SHARE] [--json]``.

Builds a metadata-table partition asynchronously on a table that writers keep writing (RFC-45, Hudi's
``HoodieIndexer``): schedule (``<t>.indexing.requested`` with the ``HoodieIndexPlan``), build the base file,
catch up with the commits made meanwhile, complete (``<t>_<c>.indexing``, the partition joins
``hoodie.table.metadata.partitions``) or abort (nothing of the index left). The steps and their rules:
``lakeio/ondisk/mdt_index.py`` over the spec's ``model/mdt/partitions.py``.
The work, the request's checks included, runs as a background job (``--priority
background``, the default; ``lakeio/background.py``: its own session, ``SCHED_IDLE``, the idle I/O class, the
session's autogroup at nice 19) paced to a quarter of a CPU (``--max-cpu``, :class:`lakeio.background.Pacer`), so the
writers beside it keep their pace -- Hudi runs the indexer as a job with its own resources. ``--priority
normal`` runs it in this process at normal priority, unpaced unless ``--max-cpu`` says otherwise.
Exit 0 when the index completed (or there was nothing to index), 1 when it aborted, 2 on bad input (a
single-writer mode, no lock provider, an unknown index type, an index that exists or is inflight, a table
without a metadata table): then nothing is written.
"""

from __future__ import annotations

import json
import sys


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("index", help="build a metadata-table index asynchronously beside live writers",
                              description="Build a metadata-table partition (record_index) on a table while "
                                          "writers keep writing: schedule, build, catch up, complete or abort. "
                                          "Exit 0 done, 1 aborted, 2 bad input (nothing written).")
    p.add_argument("path", help="table base path (the folder holding .hoodie)")
    p.add_argument("--type", dest="index_type", required=True, metavar="TYPE",
                   help="metadata partition to build: record_index")
    p.add_argument("--concurrency-mode", default="single_writer", metavar="MODE",
                   help="hoodie.write.concurrency.mode: optimistic_concurrency_control or "
                        "non_blocking_concurrency_control (indexing refuses single_writer, the default)")
    p.add_argument("--lock-provider", default=None, metavar="NAME",
                   help="hoodie.write.lock.provider: filesystem (the lock the table's writers take); required")
    p.add_argument("--timeout", type=float, default=900.0, metavar="S",
                   help="catch-up timeout in seconds (hoodie.metadata.index.check.timeout.seconds, default 900)")
    p.add_argument("--poll", type=float, default=0.5, metavar="S",
                   help="how often the catch-up re-reads the timeline while it waits, seconds (default 0.5)")
    p.add_argument("--priority", choices=["background", "normal"], default="background",
                   help="background (default): run as a job of its own at the lowest CPU priority (SCHED_IDLE, "
                        "its session's autogroup at nice 19), so live writers keep their pace; normal: in this "
                        "process at normal priority")
    p.add_argument("--max-cpu", type=float, default=None, metavar="SHARE",
                   help="pace the work outside the lock to this share of one CPU, in (0, 1] (default: 0.25 with "
                        "--priority background, 1 = unpaced with normal): even at the lowest priority a job "
                        "busy on the other core slows the writers (benchmarks/bench_indexing.py --beside burner)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON document")
    p.set_defaults(func=run)


def _job_argv(args) -> list[str]:
    """This command again, for the background job (which runs it in its own process)."""
    argv = [sys.executable, "-m", "hoodie_lab.cli", "index", str(args.path), "--type", args.index_type,
            "--concurrency-mode", args.concurrency_mode, "--timeout", repr(args.timeout), "--poll", repr(args.poll),
            "--max-cpu", repr(max_cpu(args))]
    if args.lock_provider is not None:
        argv += ["--lock-provider", args.lock_provider]
    return argv + (["--json"] if args.json else [])


def max_cpu(args) -> float:
    """The share of a CPU the work is paced to: ``--max-cpu``, else a quarter of a CPU in the background (on a
    2-core machine shared with a writer, even a job that only spins the CPU at the lowest priority costs the writer
    about a tenth of its throughput at full pace: ``benchmarks/bench_indexing.py --beside burner``), 1 otherwise."""
    return args.max_cpu if args.max_cpu is not None else (0.25 if args.priority == "background" else 1.0)


def run(args) -> int:
    import os
    from dataclasses import asdict
    from pathlib import Path

    from lakeio.background import JOB_ENV, describe_priority, run_as_background_job
    from lakeio.errors import UserError

    if args.timeout <= 0:
        raise UserError(f"--timeout: {args.timeout:g}; expected > 0")
    if args.poll <= 0:
        raise UserError(f"--poll: {args.poll:g}; expected > 0")
    if args.max_cpu is not None and not 0 < args.max_cpu <= 1:
        raise UserError(f"--max-cpu: {args.max_cpu:g}; expected a share of one CPU in (0, 1]")
    say = None if args.json else (lambda m: print(m, flush=True))
    if args.priority == "background" and not os.environ.get(JOB_ENV):
        # everything else, the request's checks included, runs in the job: this process only waits for it
        if say:
            say(f"indexing as a background job (lowest CPU and I/O priority, paced to {max_cpu(args):g} of a CPU; "
                "--priority normal to run at normal priority)")
        root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
        return run_as_background_job(_job_argv(args), env=env)
    from lakeio.background import Pacer
    from lakeio.ondisk.mdt_index import run_index, settings_from

    settings = settings_from(args.concurrency_mode, args.lock_provider)
    rep = run_index(Path(args.path), args.index_type, settings, timeout_s=args.timeout, poll_s=args.poll,
                    progress=say, pacer=Pacer(max_cpu(args), since_process_start=bool(os.environ.get(JOB_ENV))))
    rep.priority = describe_priority()
    if args.json:
        json.dump(asdict(rep), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif rep.outcome == "nothing-to-index":
        print(f"nothing to index: {rep.table} has no completed write with no pending write before it")
    else:
        counts: dict[str, int] = {}
        for _, d in rep.decisions:
            counts[d] = counts.get(d, 0) + 1
        print(f"index {rep.partition}: {rep.outcome}; {rep.base_records} records built in {rep.build_s:.2f} s, "
              f"catch-up {rep.catchup_s:.2f} s over {len(rep.decisions)} instant(s) "
              f"({', '.join(f'{k} {v}' for k, v in sorted(counts.items())) or 'none'}); CPU priority: "
              f"{rep.priority}; paced to {rep.max_cpu:g} of a CPU ({rep.paced_s:.2f} s of pauses)")
    return 0
