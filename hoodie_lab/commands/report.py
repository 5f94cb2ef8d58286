"""``hoodie-lab report``: build the design-review report, one self-contained HTML file plus its plots.

Runs every section builder of :mod:`hoodie_lab.report_sections` (property suites, simulation curves,
exploration counts, a small pipeline run and its diff, real-table audits), each with the command that
reproduces it, and writes ``index.html`` and ``figures/*.png|svg`` to ``--out`` (default: ``reports/``
of the repository when run inside it, else ``./reports``). Progress lines go to stderr; the report's
path is the last line on stdout. Exit 0 when every section is ok, 1 otherwise, 2 on bad arguments.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lakeio.errors import UserError

from .common import check_out_dir, check_seed  # noqa: F401 - demo imports them from here


def default_out_dir() -> Path:
    """``<repo>/reports`` when the working directory is inside the repository, else ``./reports``."""
    from hoodie_lab.report_sections import REPO

    cwd = Path.cwd().resolve()
    if (REPO / "pyproject.toml").exists() and (cwd == REPO or REPO in cwd.parents):
        return REPO / "reports"
    return cwd / "reports"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("report", help="build the design-review HTML report (plots embedded, offline)",
                              description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="output directory (default: <repo>/reports inside the repository, else ./reports)")
    p.add_argument("--full", action="store_true",
                   help="larger parameters: full simulation grid, ci-profile property suites (minutes)")
    p.add_argument("--seed", type=int, default=7, help="seed of every random part (default 7)")
    p.add_argument("--section", action="append", metavar="NAME",
                   help="build only the sections whose builder name starts with NAME (repeatable): "
                        "slicing, properties, simulation, history, concurrency, exploration, pipeline, real_tables")
    p.set_defaults(func=run)


def build(out: Path, *, full: bool = False, seed: int = 7, sections: list[str] | None = None,
          log=None) -> tuple[Path, list]:
    """Build the report into ``out``; returns ``(index.html path, sections)``."""
    from hoodie_lab.report import build_report
    from hoodie_lab.report_sections import builders

    chosen = builders(sections)
    if sections and not chosen:
        raise UserError(f"--section: no section matches {', '.join(sections)}")
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    return build_report(out, chosen, quick=not full, seed=seed, log=log)


def run(args) -> int:
    check_seed(args.seed)
    out = check_out_dir(args.out or default_out_dir())
    path, sections = build(out, full=args.full, seed=args.seed, sections=args.section)
    for s in sections:
        print(f"{'ok    ' if s.ok else 'FAILED'} {s.title} ({s.seconds:.1f} s)", file=sys.stderr)
    print(path)
    return 0 if all(s.ok for s in sections) else 1
