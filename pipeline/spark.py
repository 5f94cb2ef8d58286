"""One place that configures the local SparkSession the pipeline and the tests use.

Settings follow ``shared/reference/pyspark-on-this-machine.md``: ``local[2]``, 2 shuffle partitions, no UI,
no console progress bars, adaptive execution off (not supported in streaming, and it only warns), a
quicker-starting driver JVM (C1 only, serial GC, no hsperfdata files), log level ERROR, and the environment
pinned so Spark never picks another interpreter, another JDK or the external interface.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
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


#: how long :func:`check_master` waits for a TCP connection to a standalone master
CONNECT_TIMEOUT_S = 3.0
_LOCAL = re.compile(r"local(\[(\*|[1-9][0-9]*)(,[1-9][0-9]*)?\])?")
_HOSTPORT = re.compile(r"\[?([A-Za-z0-9_.:-]+?)\]?:([0-9]{1,5})")


def standalone_addresses(master: str, arg: str = "--master") -> list[tuple[str, int]]:
    """The (host, port) pairs of a ``spark://h1:p1[,h2:p2...]`` URL (several: standby masters); [] for a
    ``local`` master. Anything else is refused with one line (the pipeline runs local or on a standalone
    cluster)."""
    if _LOCAL.fullmatch(master):
        return []
    if not master.startswith("spark://"):
        raise UserError(f"{arg} {master}: expected local, local[N], local[*] or spark://HOST:PORT")
    out = []
    for part in master[len("spark://"):].split(","):
        m = _HOSTPORT.fullmatch(part)
        if not m or not 0 < int(m.group(2)) < 65536:
            raise UserError(f"{arg} {master}: {part!r} is not HOST:PORT")
        out.append((m.group(1), int(m.group(2))))
    return out


def check_master(master: str | None, timeout_s: float = CONNECT_TIMEOUT_S, arg: str = "--master") -> None:
    """Refuse, with one line, a master that cannot be used: a malformed URL, or a standalone master none of
    whose addresses accepts a TCP connection within ``timeout_s`` (Spark itself would retry for a minute and
    more before giving up). Called before a run creates anything."""
    if not master:
        return
    problems = []
    for host, port in standalone_addresses(master, arg):
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return
        except TimeoutError:
            problems.append(f"{host}:{port}: no answer within {timeout_s:g} s")
        except OSError as exc:
            problems.append(f"{host}:{port}: {exc.strerror or type(exc).__name__}")
    if problems:
        raise UserError(f"{arg} {master}: cannot reach the Spark master ({'; '.join(problems)})")


def get_spark(master: str | None = None, app_name: str = "hoodie-lab"):
    """Return the (one per process) SparkSession, configured for small local runs.

    ``master`` defaults to ``local[2]``; a ``spark://`` master is checked for reachability first
    (:func:`check_master`) and gets small executors (512 MiB; the driver binds to ``SPARK_LOCAL_IP``) whose
    Python workers import this source tree (``spark.executorEnv.PYTHONPATH``: the writer tasks run it).
    Raises :class:`UserError` with one line if Java is missing or the master cannot be reached.
    """
    check_master(master)
    configure_environment()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    if master and master.startswith("spark://"):
        builder = (builder.config("spark.executor.memory", os.environ.get("HOODIE_LAB_EXECUTOR_MEMORY", "512m"))
                   .config("spark.driver.host", os.environ["SPARK_LOCAL_IP"])
                   .config("spark.executor.extraJavaOptions", DRIVER_JAVA_OPTIONS)
                   # the writer tasks run this project's Python (pipeline.executor): the executors' Python workers
                   # import it from the driver's source tree, whatever environment the workers were started with
                   .config("spark.executorEnv.PYTHONPATH", os.pathsep.join(
                       [str(REPO_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])))
    session = (
        builder.master(master or "local[2]")
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
