"""``properties.runner``: lists every property suite with its docline, runs suites in a subprocess and counts.

The runs use tiny suites written to ``tmp_path`` (a passing one, a failing one, one that prints with capture
disabled and one Hypothesis property), so the test takes a few seconds; the report runs the real suites.
"""

from __future__ import annotations

import ast
from pathlib import Path

from properties.runner import list_suites, run, run_suites

ROOT = Path(__file__).resolve().parent.parent

PASSING = '''"""A tiny passing suite."""
import pytest
from hypothesis import given, settings, strategies as st


def test_one():
    assert 1 + 1 == 2


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@settings(max_examples=7, database=None)
@given(st.integers())
def test_property(n):
    assert n == n


def test_prints_with_capture_disabled(capsys):
    with capsys.disabled():
        print("shrunk: the counterexample")
'''

FAILING = '''"""A tiny failing suite."""


def test_ok():
    pass


def test_broken():
    assert 1 == 2, "one is not two"
'''


def test_lists_every_suite_file_with_its_docline():
    suites = list_suites()
    files = sorted(p.name for p in (ROOT / "properties").glob("test_*.py"))
    assert [s.name for s in suites] == files and files
    for s in suites:
        doc = ast.get_docstring(ast.parse(s.path.read_text(encoding="utf-8")))
        assert doc and s.doc == doc.strip().splitlines()[0], s.name


def test_list_suites_reads_docstrings_without_importing(tmp_path):
    (tmp_path / "test_a.py").write_text('"""First line.\n\nMore."""\nraise SystemExit("imported!")\n')
    (tmp_path / "test_b.py").write_text("x = 1\n")
    (tmp_path / "helper.py").write_text('"""not a suite"""\n')
    assert [(s.name, s.doc) for s in list_suites(tmp_path)] == [("test_a.py", "First line."), ("test_b.py", "")]


def test_runs_a_tiny_suite_and_counts(tmp_path):
    (tmp_path / "test_tiny.py").write_text(PASSING)
    res = run([tmp_path / "test_tiny.py"], timeout=300)
    assert res.ran and res.ok and res.exit_code == 0, res.output[-3000:]
    [suite] = res.suites
    assert (suite.name, suite.passed, suite.failed, suite.skipped) == ("test_tiny.py", 3, 0, 1)
    assert suite.seconds >= 0 and suite.examples >= 7
    by = {t.nodeid.split("::")[-1]: t for t in res.tests}
    assert by["test_property"].examples >= 7  # counted from Hypothesis' statistics
    assert "shrunk: the counterexample" in by["test_prints_with_capture_disabled"].output
    assert "shrunk: the counterexample" in suite.output
    assert by["test_skipped"].outcome == "skipped" and "not today" in by["test_skipped"].message


def test_a_failing_suite_gives_failed_counts(tmp_path):
    (tmp_path / "test_tiny.py").write_text(PASSING)
    (tmp_path / "test_failing.py").write_text(FAILING)
    results = run_suites([tmp_path / "test_failing.py", tmp_path / "test_tiny.py"], timeout=300)
    by = {r.name: r for r in results}
    assert [r.name for r in results] == ["test_failing.py", "test_tiny.py"]
    assert (by["test_failing.py"].passed, by["test_failing.py"].failed) == (1, 1)
    assert "one is not two" in by["test_failing.py"].output
    assert by["test_tiny.py"].failed == 0 and by["test_tiny.py"].passed == 3


def test_select_deselects_and_reports_the_deselected(tmp_path):
    (tmp_path / "test_failing.py").write_text(FAILING)
    res = run([tmp_path / "test_failing.py"], select="not broken", timeout=300)
    assert res.ok and [t.nodeid.split("::")[-1] for t in res.tests] == ["test_ok"]
    assert [d.split("::")[-1] for d in res.deselected] == ["test_broken"]


def test_a_suite_that_does_not_import_is_a_failure(tmp_path):
    (tmp_path / "test_bad_import.py").write_text("import no_such_module_here\n")
    [suite] = run_suites([tmp_path / "test_bad_import.py"], timeout=300)
    assert suite.failed == 1 and "no_such_module_here" in suite.output
