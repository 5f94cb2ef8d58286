"""The ``hoodie-lab`` command line.

Each subcommand lives in ``hoodie_lab/commands/<name>.py`` and provides
``add_parser(subparsers)`` (which registers the parser and sets ``func``) and a
``run(args) -> int``. Bad input is reported as one line naming the file or
argument, exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from lakeio.errors import UserError

#: Subcommand modules, in the order ``--help`` lists them.
COMMANDS = ["audit", "replay", "explore", "simulate", "sweep", "pipeline", "diff", "report", "demo", "index"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="hoodie-lab", description="Executable specification and simulation testbed for Apache Hudi's transaction timeline.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f"hoodie_lab.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"hoodie_lab.commands.{name}":
                continue  # not built yet
            raise
        mod.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"hoodie-lab {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"hoodie-lab {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
