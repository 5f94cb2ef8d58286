"""Fixtures for tests/ on top of the root conftest.py: a Spark standalone cluster on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


def java_available() -> bool:
    """Java is what the cluster needs (scripts/env.sh installs it; CI has it)."""
    home = os.environ.get("JAVA_HOME")
    return shutil.which("java") is not None or bool(home and Path(home, "bin", "java").exists())


#: the cluster tests are skipped only when Java is absent
needs_java = pytest.mark.skipif(not java_available(), reason="Java is not installed (source scripts/env.sh)")


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A master and two workers (1 core, 1 GiB each) from the installed PySpark distribution
    (:class:`pipeline.sparkcluster.SparkCluster`); every process it started is stopped by its process group at
    the end, also when the test or the start fails. One cluster for the session (a start costs 15-25 s): the
    tests that use it (``test_explore_spark``, ``test_pipeline_cluster``) judge only the applications they ran
    themselves (:func:`apps_since`)."""
    from pipeline.sparkcluster import SparkCluster

    cluster = SparkCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2, cores=1, memory="1g")
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def finished_app_ids(cluster) -> set[str]:
    """The ids of the applications the cluster's master lists as completed."""
    return {a["id"] for a in cluster.state()["completedapps"]}


def apps_since(cluster, before: set[str]) -> tuple[list[dict], dict[int, list[Path]]]:
    """The applications completed on ``cluster`` whose ids are not in ``before`` and, per worker, the executor
    directories of those applications (``<work-dir>/<app id>/<executor id>``: proof that they ran there)."""
    apps = [a for a in cluster.state()["completedapps"] if a["id"] not in before]
    ids = {a["id"] for a in apps}
    return apps, {i: [p for p in dirs if p.parent.name in ids] for i, dirs in cluster.executor_dirs().items()}
