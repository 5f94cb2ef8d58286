"""Run the property suites (``properties/test_*.py``) and return their results as data.

A product module: callers (the report, scripts) list and run the suites through this API and never import a
test module. The suites run under pytest in a fresh interpreter (``python -m properties.runner``), where a
small pytest plugin (:class:`Collector`) records, per test: outcome, seconds, the examples Hypothesis ran
(from ``hypothesis.statistics.collector``, Hypothesis' own per-run statistics, so counts are counted, not
parsed from terminal output), the failure message and what the test printed (captured output, and output
written with ``capsys.disabled()``, e.g. a shrunk counterexample). The plugin writes JSON; :func:`run` reads it.

* :func:`list_suites` -> ``[Suite(name, path, doc)]``: every suite file and the first line of its docstring
  (read with ``ast``, not imported);
* :func:`run` ``(paths, profile="ci", max_examples=None, select=None, ...)`` -> :class:`RunResult` (per suite
  and per test, the tests deselected by ``select``, the pytest exit code, the summed ``STEPS`` counters);
* :func:`run_suites` ``(paths, profile="ci", timeout=...)`` -> ``[SuiteResult(name, passed, failed, skipped,
  seconds, output)]``.

``paths`` are files or pytest node ids. May import model, engine, checker, lakeio and pytest; not hoodie_lab.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SUITES_DIR = Path(__file__).resolve().parent
REPO = SUITES_DIR.parent


# ------------------------------------------------------------------------------------ listing
@dataclass(frozen=True)
class Suite:
    name: str  # file name, e.g. "test_slicing_props.py"
    path: Path
    doc: str  # the first line of the module docstring


def docline(path: Path) -> str:
    """The first line of a module's docstring (read with ``ast``, not imported); "" when there is none."""
    try:
        doc = ast.get_docstring(ast.parse(Path(path).read_text(encoding="utf-8"))) or ""
    except (OSError, SyntaxError):
        return ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def list_suites(root: Path = SUITES_DIR) -> list[Suite]:
    """Every suite file ``test_*.py`` under ``root`` (sorted by name) with its docline."""
    return [Suite(p.name, p, docline(p)) for p in sorted(Path(root).glob("test_*.py"))]


# ------------------------------------------------------------------------------------ results
@dataclass
class TestResult:
    nodeid: str
    outcome: str  # passed | failed | skipped
    seconds: float = 0.0
    examples: int = 0  # valid examples Hypothesis ran (generate phases, not shrinking)
    failing: int = 0  # failing examples Hypothesis found (before shrinking)
    message: str = ""  # failure (last 1500 characters) or skip reason
    output: str = ""  # what the test printed (captured, and with capture disabled)

    __test__ = False  # not a pytest test class

    @property
    def suite(self) -> str:
        return self.nodeid.split("::")[0].split("/")[-1]


@dataclass
class SuiteResult:
    name: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    output: str = ""  # the tests' printed output and failure messages, in order
    examples: int = 0
    tests: list[TestResult] = field(default_factory=list)


@dataclass
class RunResult:
    exit_code: int | None  # pytest's exit code; None when it did not finish (crash, timeout)
    tests: list[TestResult] = field(default_factory=list)
    deselected: list[str] = field(default_factory=list)  # node ids deselected by -k / -m
    steps: int = 0  # sum of the suites' ``STEPS = {"count": n}`` counters (protocol state machine steps)
    output: str = ""  # the subprocess's stdout and stderr

    @property
    def ran(self) -> bool:
        return self.exit_code is not None

    @property
    def ok(self) -> bool:
        return self.exit_code in (0, 5) and not any(t.outcome == "failed" for t in self.tests)

    @property
    def suites(self) -> list[SuiteResult]:
        """One result per suite that ran at least one test (or failed to collect), sorted by name."""
        by: dict[str, SuiteResult] = {}
        for t in self.tests:
            s = by.setdefault(t.suite, SuiteResult(t.suite))
            s.tests.append(t)
            if t.outcome in ("passed", "failed", "skipped"):
                setattr(s, t.outcome, getattr(s, t.outcome) + 1)
            s.seconds += t.seconds
            s.examples += t.examples
            text = "\n".join(x for x in (t.output.strip(), t.message.strip() if t.outcome == "failed" else "") if x)
            if text:
                s.output += f"--- {t.nodeid}\n{text}\n"
        return [by[k] for k in sorted(by)]


# ------------------------------------------------------------------------------------- running
def run(paths, *, profile: str = "ci", max_examples: int | None = None, select: str | None = None,
        markers: str | None = "not slow", timeout: float = 1800, cwd: Path = REPO) -> RunResult:
    """Run pytest over ``paths`` (files or node ids) in a fresh interpreter and return its results.

    ``profile``: the Hypothesis profile (``HYPOTHESIS_PROFILE``); ``max_examples``: lowers the profile's
    default example budget (tests with their own ``@settings`` keep theirs); ``select``: a ``-k``
    expression; ``markers``: a ``-m`` expression. A run that does not finish within ``timeout`` seconds
    returns ``exit_code=None``.
    """
    args = ["-q", "-p", "no:cacheprovider", "--no-header", *[str(p) for p in paths]]
    if markers:
        args += ["-m", markers]
    if select:
        args += ["-k", select]
    env = dict(os.environ, HYPOTHESIS_PROFILE=profile)
    with tempfile.TemporaryDirectory(prefix="hoodie-lab-suites-") as tmp:
        out = Path(tmp) / "results.json"
        cmd = [sys.executable, "-m", "properties.runner", "--json", str(out)]
        if max_examples:
            cmd += ["--max-examples", str(max_examples)]
        try:
            proc = subprocess.run([*cmd, "--", *args], cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=timeout)
            output = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            text = [x.decode(errors="replace") if isinstance(x, bytes) else (x or "") for x in (exc.stdout, exc.stderr)]
            return RunResult(None, output="".join(text) + f"\n(timed out after {timeout:g} s)")
        if not out.exists():
            return RunResult(None, output=output)
        data = json.loads(out.read_text(encoding="utf-8"))
    return RunResult(data["exit"], [TestResult(**t) for t in data["tests"]], data["deselected"], data["steps"], output)


def run_suites(paths, profile: str = "ci", timeout: float = 1800, **kw) -> list[SuiteResult]:
    """Run the suites at ``paths`` (see :func:`run` for the keywords); one :class:`SuiteResult` per suite."""
    return run(paths, profile=profile, timeout=timeout, **kw).suites


# ------------------------------------------------------------- the plugin (in the subprocess)
class _Tee:
    """``sys.stdout`` of the subprocess: passes everything on, and keeps what is written during a test.

    Installed before pytest starts, so pytest's capture restores it when a test disables capturing
    (``capsys.disabled()``): those writes are recorded for the running test too.
    """

    def __init__(self, stream):
        self._stream = stream
        self.current: list[str] | None = None

    def write(self, s):
        if self.current is not None:
            self.current.append(s)
        return self._stream.write(s)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class Collector:
    """A pytest plugin recording per-test outcome, seconds, Hypothesis statistics and output."""

    def __init__(self, max_examples: int | None = None, tee: _Tee | None = None):
        self.max_examples = max_examples
        self.tee = tee
        self.results: dict[str, dict] = {}
        self.deselected: list[str] = []
        self.modules: dict[str, object] = {}

    def pytest_configure(self, config):
        if self.max_examples:
            from hypothesis import settings

            settings.register_profile("runner-quick", parent=settings.default, max_examples=self.max_examples)
            settings.load_profile("runner-quick")

    def _rec(self, nodeid: str) -> dict:
        return self.results.setdefault(nodeid, {"nodeid": nodeid, "outcome": "passed", "seconds": 0.0, "examples": 0,
                                                "failing": 0, "message": "", "output": ""})

    def pytest_itemcollected(self, item):
        mod = getattr(item, "module", None)
        if mod is not None:
            self.modules[mod.__name__] = mod

    def pytest_deselected(self, items):
        self.deselected.extend(i.nodeid for i in items)

    def pytest_collectreport(self, report):
        if report.failed:
            rec = self._rec(report.nodeid)
            rec["outcome"] = "failed"
            rec["message"] = str(report.longrepr)[-1500:]

    def steps(self) -> int:
        counters = {}
        for mod in self.modules.values():
            c = getattr(mod, "STEPS", None)
            if isinstance(c, dict) and isinstance(c.get("count"), int):
                counters[id(c)] = c["count"]
        return sum(counters.values())

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_call(self, item):
        from hypothesis.statistics import collector

        rec = self._rec(item.nodeid)

        def note(stats):
            for phase, d in stats.items():
                if phase.endswith("-phase") and phase != "shrink-phase":
                    for case in d.get("test-cases", []):
                        rec["examples"] += case["status"] == "valid"
                        rec["failing"] += case["status"] == "interesting"

        if self.tee is not None:
            self.tee.current = []
        try:
            with collector.with_value(note):
                yield
        finally:
            if self.tee is not None:
                rec["output"] += "".join(self.tee.current)
                self.tee.current = None

    def pytest_runtest_logreport(self, report):
        rec = self._rec(report.nodeid)
        rec["seconds"] += report.duration
        if report.capstdout:
            rec["output"] += report.capstdout
        if report.failed:
            rec["outcome"] = "failed"
            rec["message"] = str(report.longrepr)[-1500:]
        elif report.skipped and rec["outcome"] == "passed":
            rec["outcome"] = "skipped"
            rec["message"] = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""


def main(argv: list[str] | None = None) -> int:
    """``python -m properties.runner --json OUT [--max-examples N] -- PYTEST_ARGS``: run pytest, write JSON."""
    ap = argparse.ArgumentParser(prog="python -m properties.runner")
    ap.add_argument("--json", required=True, type=Path)
    ap.add_argument("--max-examples", type=int, default=None)
    ap.add_argument("pytest_args", nargs=argparse.REMAINDER)
    ns = ap.parse_args(argv)
    args = ns.pytest_args[1:] if ns.pytest_args[:1] == ["--"] else ns.pytest_args
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    plugin = Collector(ns.max_examples, tee)
    try:
        code = int(pytest.main(args, plugins=[plugin]))
    finally:
        sys.stdout = tee._stream
    ns.json.write_text(json.dumps({"exit": code, "tests": list(plugin.results.values()),
                                   "deselected": plugin.deselected, "steps": plugin.steps()}), encoding="utf-8")
    return code


if __name__ == "__main__":
    sys.exit(main())
