"""Shared pytest set-up: Hypothesis profiles, fixture-table discovery, one Spark session, and the
``pure_engine`` tests run in a pure-Python subprocess when the compiled engine is in use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Verbosity, settings

# Profiles: `ci` (default, fast) and `deep` (`make deep`). A failing example
# prints a reproduce blob; the seed is printed in the pytest header below.
settings.register_profile(
    "ci", max_examples=60, stateful_step_count=40, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "deep", max_examples=2000, stateful_step_count=200, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("debug", parent=settings.get_profile("ci"), verbosity=Verbosity.verbose)
# `make mutate` (benchmarks/mutate.py): a sixth of the ci budget (every mutant re-runs the tests that reach
# it, thousands of times), derandomized and without the example database, so a mutant's verdict does not
# depend on the run's seed or on examples another mutant saved.
settings.register_profile("mutate", parent=settings.get_profile("ci"), max_examples=10, stateful_step_count=20,
                          derandomize=True, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

from lakeio.fixtures import fixtures_root  # noqa: E402


def pytest_report_header(config):
    import engine

    prof = settings._current_profile  # noqa: SLF001 - only for the header
    fx = fixtures_root()
    return [
        f"engine: {engine.BUILD}",
        f"hypothesis profile: {prof} (replay a failure with the printed @reproduce_failure blob "
        f"or `pytest --hypothesis-seed=N`)",
        f"fixtures: {fx / 'hudi-tables' if fx else 'NOT FOUND (set HOODIE_LAB_FIXTURES); fixture tests skip'}",
    ]


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    fx = fixtures_root()
    if fx is None:
        pytest.skip("real Hudi fixture tables not found: set HOODIE_LAB_FIXTURES or put shared/ beside the project")
    return fx / "hudi-tables"


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole run (JVM start-up costs 6-8 s)."""
    pytest.importorskip("pyspark")
    from pipeline.spark import get_spark  # the pipeline owns the session configuration

    session = get_spark()
    yield session
    session.stop()


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A test marked ``pure_engine`` breaks the engine on purpose by monkeypatching its functions or
    methods, which compiled code (calling them directly) does not see: when the compiled engine is in use,
    the test runs in a pytest subprocess on the pure-Python engine (``HOODIE_LAB_ENGINE=pure``) and passes
    or fails with it."""
    if pyfuncitem.get_closest_marker("pure_engine") is None:
        return None
    import engine

    if not engine.COMPILED:
        return None
    root = pyfuncitem.config.rootpath
    env = dict(os.environ, HOODIE_LAB_ENGINE="pure")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout=900",
                        pyfuncitem.nodeid], cwd=root, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"failed on the pure-Python engine (HOODIE_LAB_ENGINE=pure subprocess):\n"
                    f"{r.stdout[-6000:]}\n{r.stderr[-2000:]}", pytrace=False)
    return True
