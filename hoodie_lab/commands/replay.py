"""``hoodie-lab replay TRACE [--state] [--json]``.

Replays a protocol trace (the :mod:`model.trace` format) through the model and reports the first
invariant violated, with its step and an explanation, or that all held. Exit 0 when all hold, 1 on
a violation, 2 on a malformed, truncated or newer trace (one line naming the line and the problem).
"""

from __future__ import annotations

import json
import sys


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("replay", help="replay a protocol trace and check every invariant",
                              description="Replay a protocol trace through the model and report the first "
                                          "invariant violated (exit 1) or that all held (exit 0); a bad trace "
                                          "exits 2.")
    p.add_argument("trace", metavar="TRACE", help="a trace file (JSON lines, model/trace.py format)")
    p.add_argument("--state", action="store_true", help="also print the model state at the violation")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=run)


def run(args) -> int:
    from checker.replay import format_result, replay
    from lakeio.errors import UserError
    from lakeio.traces import load_trace
    from model.trace import TraceError

    trace = load_trace(args.trace)
    try:
        result = replay(trace)
    except TraceError as exc:
        raise UserError(f"{args.trace}:{exc.line}: {exc.problem}") from None
    if args.json:
        v = result.violation
        json.dump({"trace": args.trace, "steps": result.steps, "ok": result.ok,
                   "violation": None if v is None else {"invariant": v.invariant, "detail": v.detail,
                                                        "step": result.step, "at_end": result.at_end,
                                                        "event": None if result.event is None else result.event.to_dict()}},
                  sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_result(result, show_state=args.state))
    return result.exit_code
