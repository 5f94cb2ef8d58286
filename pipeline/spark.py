"""One place that configures the local SparkSession the pipeline and the tests use.

Settings follow ``shared/reference/pyspark-on-this-machine.md``: ``local[2]``, 2 shuffle partitions, no UI,
no console progress bars, adaptive execution off (not supported in streaming, and it only warns), a
quicker-starting driver JVM (C1 only, serial GC, no hsperfdata files), log level ERROR, and the environment
pinned so Spark never picks another interpreter, another JDK or the external interface.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from lakeio.errors import UserError

REPO_ROOT = Path(__file__).resolve().parent.parent
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"


def _java_home_from_path() -> str:
    """JAVA_HOME of the ``java`` on PATH (``<home>/bin/java`` after resolving links)."""
    java = shutil.which("java")
    if java is None:
        raise UserError("java: not found on PATH; install Java 17 (apt-get install openjdk-17-jre-headless)")
    return str(Path(os.path.realpath(java)).parent.parent)


def configure_environment() -> None:
    """Set the process environment Spark reads at JVM launch (idempotent; existing values are kept
    except the interpreter, which is always this one)."""
    if not os.environ.get("JAVA_HOME"):
        os.environ["JAVA_HOME"] = _java_home_from_path()
    elif not Path(os.environ["JAVA_HOME"], "bin", "java").exists() and shutil.which("java") is None:
        raise UserError(f"JAVA_HOME={os.environ['JAVA_HOME']}: no bin/java there and no java on PATH")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf_dir = REPO_ROOT / "conf"
    if (conf_dir / "log4j2.properties").exists():
        os.environ["SPARK_CONF_DIR"] = str(conf_dir)


def get_spark(master: str | None = None, app_name: str = "hoodie-lab"):
    """Return the (one per process) SparkSession, configured for small local runs.

    ``master`` defaults to ``local[2]``. Raises :class:`UserError` with one line if Java is missing.
    """
    configure_environment()
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master(master or "local[2]")
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session
