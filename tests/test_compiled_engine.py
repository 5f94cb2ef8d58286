"""The optional compiled engine (``setup.py``: mypyc; :mod:`engine._compiled`): which engine runs is visible,
CI runs the compiled one, a stale build is never used, and the pure and compiled engines explore alike.

The rest of the suite runs on whichever engine :mod:`engine` picked (the compiled one when the install
built it: the refinement suite then checks the compiled engine against the spec); the tests marked
``pure_engine`` run on the pure one in a subprocess (``conftest.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import engine
from engine import _compiled

ROOT = Path(__file__).resolve().parent.parent

needs_build = pytest.mark.skipif(not engine.COMPILED, reason=f"no compiled engine in use: {engine.BUILD}")


def test_the_engine_in_use_is_visible():
    import engine.system

    assert isinstance(engine.COMPILED, bool) and engine.BUILD
    if engine.COMPILED:
        assert engine.BUILD.startswith("compiled")
        for name in _compiled.HOT:
            mod = sys.modules[f"engine.{name}"]
            assert mod.__name__ == f"engine._compiled.{name}" and mod.__file__.endswith(".so")
        assert engine.System.__module__ == "engine._compiled.system"
    else:
        assert engine.BUILD.startswith("pure") and engine.system.__file__.endswith("system.py")


def test_ci_runs_the_compiled_engine():
    """CI (``.ci/run`` sets ``HOODIE_LAB_EXPECT_COMPILED=1``; most CI services set ``CI``) installs with a C
    compiler, so the speed the README claims is the compiled engine's: a build that fell back to pure
    Python, or went stale, fails here."""
    if os.environ.get("HOODIE_LAB_EXPECT_COMPILED") != "1" and not os.environ.get("CI"):
        pytest.skip("not CI (HOODIE_LAB_EXPECT_COMPILED=1 or CI not set)")
    assert engine.COMPILED, f"CI runs the pure-Python engine: {engine.BUILD}"


def _engine_in(tmp: Path, env_engine: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(tmp))
    env.pop("HOODIE_LAB_ENGINE", None)
    if env_engine:
        env["HOODIE_LAB_ENGINE"] = env_engine
    code = "import engine, engine.system; print(engine.COMPILED, engine.system.__file__)"
    return subprocess.run([sys.executable, "-c", code], cwd=tmp, env=env, capture_output=True, text=True)


@needs_build
def test_a_stale_build_is_not_used(tmp_path):
    """A copy of the package with its build: used as it is; not used once ``engine/system.py`` is edited
    (a warning, then the edited pure Python runs); an error with ``HOODIE_LAB_ENGINE=compiled``."""
    shutil.copytree(ROOT / "engine", tmp_path / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "model").symlink_to(ROOT / "model")
    r = _engine_in(tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "True" and r.stdout.split()[1].startswith(str(tmp_path / "engine" / "_compiled"))

    with open(tmp_path / "engine" / "system.py", "a") as f:
        f.write("\n# an edit after the build\n")
    r = _engine_in(tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", str(tmp_path / "engine" / "system.py")]
    assert "stale compiled build: engine/system.py changed" in r.stderr and r.stderr.count("StaleBuildWarning") == 1

    r = _engine_in(tmp_path, "compiled")
    assert r.returncode != 0 and "HOODIE_LAB_ENGINE=compiled but stale compiled build" in r.stderr


def test_pure_is_used_when_asked(tmp_path):
    r = subprocess.run([sys.executable, "-c", "import engine, engine.system; print(engine.COMPILED, engine.BUILD)"],
                       cwd=ROOT, env=dict(os.environ, HOODIE_LAB_ENGINE="pure"), capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("False pure Python (HOODIE_LAB_ENGINE=pure)"), r.stderr


_EXPLORE = """
import json, sys
import engine
from checker import SystemModel, explore
from checker.symmetry import representative_function
from model.protocol import variant
out = {"compiled": engine.COMPILED}
small = dict(parallelism=2, records=1, buffer_size=1, max_crashes=1)
for name, kw in [("hudi-1.1", dict(small, max_checkpoints=2, faults=frozenset({"lost-ack", "task-crash"}))),
                 ("broken-commit-eq", dict(small, max_checkpoints=2, faults=frozenset({"lost-ack"}))),
                 ("hudi-1.1-async-events", dict(small, max_checkpoints=1, faults=frozenset({"task-crash"})))]:
    model = SystemModel(variant(name, **kw))
    for sym in (False, True):
        res = explore(model, max_states=100_000, stop_on_violation=False, compact=True,
                      symmetry=representative_function(model) if sym else None)
        out[f"{name} sym={sym}"] = [res.states, res.transitions, res.max_depth, res.stop_reason,
                                    sorted((k, len(d.actions)) for k, d in res.discoveries.items())]
print(json.dumps(out))
"""


def _explorations(env_engine: str) -> dict:
    r = subprocess.run([sys.executable, "-c", _EXPLORE], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, HOODIE_LAB_ENGINE=env_engine))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@needs_build
def test_pure_and_compiled_engines_explore_alike():
    """Same states, transitions, depth and discoveries (with their depths), plainly and with symmetry
    reduction, on the correct design, a broken one and async event delivery."""
    pure, compiled = _explorations("pure"), _explorations("compiled")
    assert pure.pop("compiled") is False and compiled.pop("compiled") is True
    assert pure == compiled
