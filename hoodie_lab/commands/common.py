"""What several subcommands share: checks of ``--out`` and ``--seed``, and progress on stderr.

Progress goes to stderr only, so stdout (tables, ``--json``) is the same with or without it. It is on when
stderr is a terminal; ``--progress`` / ``--no-progress`` or the environment variable ``HOODIE_LAB_PROGRESS``
(``1`` or ``0``) force it on or off. On a terminal it is a rich display (bars with an ETA where the total is
known); forced on elsewhere (a log file, CI) it is one plain line per update, at most every
``HOODIE_LAB_PROGRESS_EVERY`` seconds (default 5) and at the end of each task. Long loops never call it per
step: they call ``advance()`` once per finished run, or the explorer polls its counters every few thousand
states.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from lakeio.errors import UserError

PROGRESS_ENV = "HOODIE_LAB_PROGRESS"
PROGRESS_EVERY_ENV = "HOODIE_LAB_PROGRESS_EVERY"
_ON = ("1", "true", "yes", "on", "always")
_OFF = ("0", "false", "no", "off", "never")


# --------------------------------------------------------------------------------------- arguments
def check_seed(seed: int | None) -> int | None:
    if seed is not None and not 0 <= seed < 2**63:
        raise UserError(f"--seed: {seed} is out of range; allowed: 0 .. 2^63-1")
    return seed


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_out_dir(out: Path, *, create: bool = True, arg: str = "--out") -> Path:
    """The output directory, checked before anything is written: an existing file, a path below a file or
    an unwritable place is a one-line :class:`UserError` naming ``arg``. ``create``: make the directory
    (else only check that it could be made)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"{arg}: {out} exists and is not a directory")
    base = _nearest_existing(out)
    if not base.is_dir():
        raise UserError(f"{arg}: cannot create {out}: {base} is not a directory")
    if not os.access(base, os.W_OK | os.X_OK):
        raise UserError(f"{arg}: {base} is not writable")
    if create:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"{arg}: cannot create {out} ({exc.strerror})") from None
    return out


# ---------------------------------------------------------------------------------------- progress
def add_progress_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help=f"progress on stderr (default: when stderr is a terminal; {PROGRESS_ENV}=1 or 0 "
                        f"sets the default)")


def progress_enabled(args=None) -> bool:
    """``--progress``/``--no-progress``, else ``$HOODIE_LAB_PROGRESS``, else whether stderr is a terminal."""
    flag = getattr(args, "progress", None)
    if flag is not None:
        return bool(flag)
    env = os.environ.get(PROGRESS_ENV, "").strip().lower()
    if env in _ON:
        return True
    if env in _OFF:
        return False
    return sys.stderr.isatty()


def progress_every() -> float:
    try:
        return max(0.0, float(os.environ.get(PROGRESS_EVERY_ENV, "5")))
    except ValueError:
        return 5.0


def say(enabled: bool, line: str) -> None:
    """One progress line on stderr (when progress is on)."""
    if enabled:
        print(line, file=sys.stderr, flush=True)


class _Lines:
    """Plain progress lines for a stderr that is not a terminal (progress forced on)."""

    def __init__(self):
        self.every = progress_every()
        self.tasks: list[dict] = []

    def add(self, label: str, total: int | None) -> int:
        self.tasks.append({"label": label, "total": total, "done": 0, "t0": time.monotonic(), "last": 0.0})
        self._print(self.tasks[-1])
        return len(self.tasks) - 1

    def advance(self, i: int, n: int = 1) -> None:
        t = self.tasks[i]
        t["done"] += n
        now = time.monotonic()
        if now - t["last"] >= self.every or (t["total"] is not None and t["done"] >= t["total"]):
            self._print(t)

    def _print(self, t: dict) -> None:
        t["last"] = now = time.monotonic()
        elapsed = now - t["t0"]
        total, done = t["total"], t["done"]
        if total:
            eta = elapsed / done * (total - done) if done else None
            line = (f"{t['label']}: {done}/{total} ({100 * done / total:.0f} %), {elapsed:.0f} s elapsed"
                    + (f", ETA {eta:.0f} s" if eta is not None and done < total else ""))
        else:
            line = f"{t['label']}: {done} done, {elapsed:.0f} s elapsed"
        print(line, file=sys.stderr, flush=True)


@contextmanager
def progress_bar(enabled: bool = True):
    """Yields ``progress(label, total) -> advance()``: rich bars with an ETA on a terminal, plain lines when
    progress is forced on elsewhere, nothing when off (``advance`` is then a no-op)."""
    if not enabled:
        yield lambda label, total: (lambda: None)
        return
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        lines = _Lines()

        def plain(label: str, total: int):
            i = lines.add(label, total)
            return lambda: lines.advance(i)

        yield plain
        return
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=False)

    def progress(label: str, total: int):
        task = bar.add_task(label, total=total)
        return lambda: bar.advance(task)

    with bar:
        yield progress


def rss_bytes() -> int:
    """Resident set size of this process now (``/proc/self/statm``; the peak where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


#: The most states ``explore --machine table|concurrency|indexing`` visits unless ``--max-states`` says.
MACHINE_MAX_STATES = 2_000_000


def check_machine_args(args, foreign: tuple[str, ...], why: str) -> int:
    """``explore --machine M``: refuse the options of other machines (one line naming the option and ``why``)
    and an out-of-range ``--max-states``; returns the state bound."""
    for opt in foreign:
        if getattr(args, opt, None) is not None:
            raise UserError(f"--{opt.replace('_', '-')}: {why}")
    if args.max_states is not None and not 1 <= args.max_states <= 1_000_000_000:
        raise UserError(f"--max-states: {args.max_states} is out of range; allowed 1..1,000,000,000")
    return args.max_states or MACHINE_MAX_STATES


def explore_every_violation(model, max_states: int):
    """Explore ``model`` breadth first without stopping at a violation; the result and its counterexamples,
    shortest first."""
    from checker import explore

    res = explore(model, max_states=max_states, stop_on_violation=False)
    return res, sorted(res.counterexamples, key=lambda d: (d.depth, d.property))


def violation_rows(model, found) -> list[dict]:
    """``--json``'s ``violations``: each counterexample's invariant, depth, detail and steps."""
    return [{"invariant": d.property, "depth": d.depth, "detail": d.verdict.detail if d.verdict is not None
             else d.detail, "actions": [model.format_action(a) for a in d.actions]} for d in found]


def print_outcome(model, res, found, rows: list[dict], replay: str) -> int:
    """The end of ``explore --machine M``'s text output: exhaustive or not, each shortest counterexample with
    its steps and last state, how to replay; the exit code (1 when an invariant is violated)."""
    if not res.complete:
        print(f"  NOT exhaustive (stopped: {res.stop_reason}; raise --max-states or lower the bound)")
    elif not found:
        print("  exhaustive: every state within the bound visited; no invariant violated")
    for d, v in zip(found, rows):
        print(f"  VIOLATED {d.property} at depth {d.depth} (a shortest counterexample): {v['detail']}")
        for i, a in enumerate(v["actions"], start=1):
            print(f"    {i:3d}. {a}")
        print(f"    -> {model.format_state(d.states[-1])}")
    if found:
        print(f"  ({replay})")
    return 1 if found else 0
