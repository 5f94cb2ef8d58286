"""``hoodie-lab diff RUN_DIR``: compare a pipeline run's real table with the reference model's prediction.

Replays the run's trace (inputs, checkpoints, acks, crashes) through the model and compares instants
(action, state, order, checkpoint key), committed file sets and table contents (hudi-rs; for copy-on-write
also Spark reading the latest base files). Exit 0: no difference; 1: differences (printed); 2: bad run dir.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("diff", help="compare a pipeline run's table with the model's prediction",
                              description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path, help="a run dir written by `hoodie-lab pipeline run`")
    p.add_argument("more_run_dirs", type=Path, nargs="*", metavar="RUN_DIR",
                   help="more run dirs that wrote the same --table (several writers: each run's instants against "
                        "its model, the rows against the merge of every run's prediction)")
    p.add_argument("--no-spark", action="store_true",
                   help="skip the Spark read of copy-on-write base files (saves the Spark start-up)")
    p.add_argument("--master", default=None, help="Spark master URL (default local[2])")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=run)


def run(args) -> int:
    from pipeline.diff import diff_run, diff_runs, open_run_dir

    rd, cfg = open_run_dir(args.run_dir)  # bad run dir: one line, exit 2, before Spark starts
    for more in args.more_run_dirs:
        open_run_dir(more)
    spark = None
    if args.more_run_dirs:
        report = diff_runs([args.run_dir, *args.more_run_dirs])
    else:
        if not args.no_spark and cfg["table_type"] == "cow":
            from pipeline.spark import get_spark
            spark = get_spark(args.master)
        report = diff_run(args.run_dir, spark=spark)
    if args.json:
        json.dump({"run_dir": str(report.run_dir), "ok": report.ok, "checked": report.checked,
                   "differences": report.differences}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(report.render())
    return 0 if report.ok else 1
