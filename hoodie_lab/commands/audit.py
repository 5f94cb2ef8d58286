"""``hoodie-lab audit PATH [--as-of T] [--json] [--rule instant-time|completion-time]``.

Reads a Hudi table (never writes to it), shows its facts, timeline and latest file slices, and
checks every invariant that applies. Exit 0 when all hold, 1 on a violation, 2 on bad input.
"""

from __future__ import annotations

import json
import sys


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("audit", help="check a Hudi table against the model's invariants",
                              description="Read a Hudi table (never writing to it), show its facts, timeline and "
                                          "latest file slices, and check every invariant that applies. Exit 0 when "
                                          "all hold, 1 on a violation, 2 on bad input.")
    p.add_argument("path", help="table base path (the folder holding .hoodie), or a .zip holding one table")
    p.add_argument("--as-of", metavar="T", help="show the file slices as of instant time T (yyyyMMddHHmmss[SSS])")
    p.add_argument("--rule", choices=["instant-time", "completion-time"],
                   help="slicing rule (default: by table version: 6 -> instant-time, 8/9 -> completion-time)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=run)


def run(args) -> int:
    from lakeio.audit import audit_table, render, to_json
    from lakeio.ondisk.zipped import table_path

    with table_path(args.path) as path:  # a .zip is extracted to a temporary directory, read there
        result = audit_table(path, as_of=args.as_of, rule=args.rule)
    if args.json:
        json.dump(to_json(result), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render(result)
    return result.exit_code
