"""Shared pytest set-up: Hypothesis profiles, fixture-table discovery, one Spark session."""

from __future__ import annotations

import os
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
    prof = settings._current_profile  # noqa: SLF001 - only for the header
    fx = fixtures_root()
    return [
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
