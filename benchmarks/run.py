"""`make bench`: run every benchmark script in this folder and print its figures.

Each ``bench_*.py`` prints its own figures and exits non-zero when a target is
missed; this runner runs them one after another (they measure on a 2-core
machine, so never in parallel), prints a summary and exits 1 if any failed.
Pass ``--quick`` to forward it to every script.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    only = [a for a in argv if not a.startswith("-")]
    if only:
        scripts = [s for s in scripts if any(o in s.stem for o in only)]
    flags = [a for a in argv if a.startswith("-")]
    results = []
    for script in scripts:
        print(f"\n=== {script.name} {' '.join(flags)} ===", flush=True)
        started = time.perf_counter()
        rc = subprocess.call([sys.executable, str(script), *flags], cwd=HERE.parent)
        results.append((script.name, rc, time.perf_counter() - started))
    print("\n=== summary ===")
    for name, rc, secs in results:
        print(f"{name:28s} {'ok' if rc == 0 else f'FAILED (exit {rc})':18s} {secs:7.1f} s")
    return 0 if all(rc == 0 for _, rc, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
