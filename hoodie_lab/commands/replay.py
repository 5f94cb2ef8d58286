"""``hoodie-lab replay TRACE [--state] [--json]``.

Replays a protocol trace (the :mod:`model.trace` format) through the model and reports the first
invariant violated, with its step and an explanation, or that all held. Exit 0 when all hold, 1 on
a violation, 2 on a malformed, truncated (no end marker) or newer trace or one that is not a regular file
(one line naming the line and the problem). A write-ahead log (the pipeline's trace) may lack the end
marker: it is replayed, with a one-line warning on stderr.
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
    if not trace.complete:  # only a write-ahead log gets here without its end marker
        print(f"hoodie-lab replay: warning: {args.trace} is a write-ahead log without an end marker (its run was "
              f"killed, is still running, or the file was cut): replayed the {len(trace.events)} events it holds",
              file=sys.stderr)
    if args.json:
        v = result.violation
        json.dump({"trace": args.trace, "steps": result.steps, "ok": result.ok, "complete": trace.complete,
                   "violation": None if v is None else {"invariant": v.invariant, "detail": v.detail,
                                                        "step": result.step, "at_end": result.at_end,
                                                        "event": None if result.event is None else result.event.to_dict()}},
                  sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_result(result, show_state=args.state))
    return result.exit_code
