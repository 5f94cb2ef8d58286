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


#: `make test` runs on two pytest-xdist workers (``-n 2 --dist loadgroup``). A session or module fixture is set up
#: once per worker, so the tests sharing an expensive one are kept on one worker, a group (scheduled as one unit):
#: node-id prefix -> group. ``spark-cluster``: every test using :func:`spark_cluster` (one cluster start per run,
#: 15-25 s; :func:`pytest_collection_modifyitems` refuses a run where one is missing here); ``report``: the module
#: fixture of ``test_report.py`` (the quick report, 40-90 s). The groups are kept here, not as ``xdist_group``
#: marks: with pytest 9.2 pytest-xdist 3.8 no longer sees the marks (it renames the node ids to carry them, which
#: pytest 9.2 ignores: pytest-dev/pytest-xdist#1386), and the tests would be spread as if unmarked.
XDIST_GROUPS = {
    "tests/test_pipeline_cluster.py::": "spark-cluster",
    "tests/test_explore_spark.py::test_explore_on_a_standalone_cluster": "spark-cluster",
    "tests/test_report.py::": "report",
    # Jupyter kernels pick their ports by binding free ones and letting them go: two kernels started at the same
    # moment on the two workers could pick the same (never seen; one worker rules it out)
    "tests/test_notebooks.py::": "notebooks",
}


def xdist_group_of(nodeid: str) -> str | None:
    """The group of a test (:data:`XDIST_GROUPS`), or None."""
    return next((g for prefix, g in XDIST_GROUPS.items() if nodeid.startswith(prefix)), None)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` with :data:`XDIST_GROUPS` as groups; every other test is scheduled on its own (a
    worker asks for the next test when it runs out), as by pytest-xdist's ``loadgroup``."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class Scheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group_of(nodeid) or super()._split_scope(nodeid)

    return Scheduling(config, log)


def pytest_collection_modifyitems(config, items):
    if not hasattr(config, "workerinput"):  # not an xdist worker: no groups to keep
        return
    for item in items:
        if "spark_cluster" in getattr(item, "fixturenames", ()) and xdist_group_of(item.nodeid) != "spark-cluster":
            raise pytest.UsageError(f"{item.nodeid} uses spark_cluster: add it to XDIST_GROUPS in tests/conftest.py "
                                    "(under -n 2 a worker without the group would start a second cluster)")


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
