"""A Spark standalone cluster on this machine: one master and N workers from the installed PySpark distribution.

Spark's own launcher starts them (``<pyspark>/bin/spark-class org.apache.spark.deploy.master.Master --host H
--port P --webui-port W`` and ``... org.apache.spark.deploy.worker.Worker spark://H:P --cores C --memory M``;
``spark-class`` ``exec``s the JVM, so the process started is the daemon itself). Each daemon is started in a
session of its own, so its process group holds it and the executors its worker launches; :meth:`SparkCluster.stop`
signals exactly those groups (SIGTERM, then SIGKILL after a grace period) and waits for them -- nothing else.
Everything a daemon writes (logs, worker dirs with the executors' stdout/stderr, local dirs) goes under
``workdir``; the ports are free ones picked at start.

Used by the cluster test (``tests/conftest.py``'s ``spark_cluster`` fixture) and by hand::

    python -m pipeline.sparkcluster --workers 2 --workdir /tmp/cluster    # prints the master URL, Ctrl-C stops
    hoodie-lab pipeline run --master spark://127.0.0.1:PORT --table /shared/path/table ...
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from lakeio.errors import UserError
from pipeline.spark import DRIVER_JAVA_OPTIONS, REPO_ROOT, configure_environment

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    """The installed PySpark distribution (it carries ``bin/spark-class`` and the jars)."""
    try:
        import pyspark
    except ImportError:
        raise UserError("pyspark: not installed (pip install pyspark)") from None
    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").exists():
        raise UserError(f"{home}: no bin/spark-class in the PySpark installation")
    return home


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class SparkCluster:
    """A standalone master and ``workers`` workers (``cores`` cores, ``memory`` each) on ``host``.

    Use as a context manager (``with SparkCluster(d) as c: ... c.url``) or call :meth:`start` and, in a
    ``finally``, :meth:`stop`. :meth:`start` returns once the master lists every worker as ALIVE, and stops what it
    started if that does not happen within ``start_timeout_s``."""

    def __init__(self, workdir: Path, workers: int = 2, cores: int = 1, memory: str = "1g",
                 host: str = "127.0.0.1", daemon_memory: str = "256m", start_timeout_s: float = 120.0):
        if workers < 1 or cores < 1:
            raise UserError(f"cluster: workers {workers}, cores {cores}; expected >= 1 each")
        self.workdir = Path(workdir).resolve()
        self.n_workers, self.cores, self.memory, self.host = workers, cores, memory, host
        self.daemon_memory = daemon_memory
        self.start_timeout_s = start_timeout_s
        self.procs: list[subprocess.Popen] = []
        self.port = self.webui_port = None
        self.worker_dirs: list[Path] = []

    # ------------------------------------------------------------------------------------------ properties
    @property
    def url(self) -> str:
        return f"spark://{self.host}:{self.port}"

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def state(self) -> dict:
        """The master's status (its web UI's ``/json/``: workers, alive workers, applications)."""
        with urllib.request.urlopen(f"http://{self.host}:{self.webui_port}/json/", timeout=5) as r:
            return json.loads(r.read().decode())

    def executor_dirs(self) -> dict[int, list[Path]]:
        """Per worker, the executor directories it created (``<work-dir>/app-*/<executor id>``): proof that an
        application's executors ran on that worker."""
        return {i: sorted(p for app in d.glob("app-*") for p in app.iterdir() if p.is_dir())
                for i, d in enumerate(self.worker_dirs)}

    # ------------------------------------------------------------------------------------------ start/stop
    def _env(self) -> dict:
        configure_environment()
        env = dict(os.environ)
        env.update({"SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": self.host,
                    "SPARK_DAEMON_MEMORY": self.daemon_memory, "SPARK_LOG_DIR": str(self.workdir / "logs"),
                    "SPARK_LOCAL_DIRS": str(self.workdir / "local"),
                    "SPARK_DAEMON_JAVA_OPTS": DRIVER_JAVA_OPTIONS})
        if (REPO_ROOT / "conf" / "log4j2.properties").exists():
            env["SPARK_CONF_DIR"] = str(REPO_ROOT / "conf")
        return env

    def _launch(self, name: str, args: list[str], env: dict) -> subprocess.Popen:
        log = open(self.workdir / "logs" / f"{name}.log", "ab")
        try:
            proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.workdir,
                                    start_new_session=True)
        finally:
            log.close()
        self.procs.append(proc)
        return proc

    def start(self) -> "SparkCluster":
        for sub in ("logs", "local"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        env = self._env()
        try:
            self.port, self.webui_port = free_port(self.host), free_port(self.host)
            self._launch("master", [MASTER_CLASS, "--host", self.host, "--port", str(self.port),
                                    "--webui-port", str(self.webui_port)], env)
            deadline = time.monotonic() + self.start_timeout_s
            self._wait(lambda s: True, deadline, "the master to answer")
            for i in range(self.n_workers):
                wdir = self.workdir / f"worker-{i}"
                wdir.mkdir(exist_ok=True)
                self.worker_dirs.append(wdir)
                self._launch(f"worker-{i}", [WORKER_CLASS, self.url, "--host", self.host,
                                             "--port", str(free_port(self.host)),
                                             "--webui-port", str(free_port(self.host)),
                                             "--cores", str(self.cores), "--memory", self.memory,
                                             "--work-dir", str(wdir)], env)
            self._wait(lambda s: s.get("aliveworkers", 0) >= self.n_workers, deadline,
                       f"{self.n_workers} alive worker(s)")
        except BaseException:
            self.stop()
            raise
        return self

    def _wait(self, ready, deadline: float, what: str) -> None:
        while True:
            for p, name in zip(self.procs, ["master"] + [f"worker-{i}" for i in range(len(self.procs) - 1)]):
                if p.poll() is not None:
                    raise RuntimeError(f"spark cluster: {name} (pid {p.pid}) exited with {p.returncode} while "
                                       f"waiting for {what}; log: {self.workdir / 'logs' / (name + '.log')}")
            try:
                if ready(self.state()):
                    return
            except (OSError, ValueError):  # not listening yet, or a web UI still starting (an empty or partial body)
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"spark cluster: no {what} within {self.start_timeout_s:.0f} s; logs in "
                                   f"{self.workdir / 'logs'}")
            time.sleep(0.5)

    def stop(self, grace_s: float = 20.0) -> None:
        """Stop every daemon this object started (workers first), each by its process group (the daemon and the
        executors it launched): SIGTERM, then SIGKILL after ``grace_s``. Idempotent."""
        for p in reversed(self.procs):
            _signal_group(p, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for p in reversed(self.procs):
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for p in reversed(self.procs):
            _signal_group(p, signal.SIGKILL)  # what is left of the group (an executor that outlived its worker)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.procs.clear()

    def __enter__(self) -> "SparkCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    """Signal the process group led by ``p`` (started with ``start_new_session``: its pgid is its pid)."""
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m pipeline.sparkcluster",
                                 description="Start a Spark standalone master and workers on this machine "
                                             "until interrupted.")
    ap.add_argument("--workdir", type=Path, required=True, help="logs, worker and local dirs go here")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cores", type=int, default=1)
    ap.add_argument("--memory", default="1g")
    ap.add_argument("--host", default="127.0.0.1")
    args = ap.parse_args(argv)
    try:
        cluster = SparkCluster(args.workdir, args.workers, args.cores, args.memory, args.host).start()
    except UserError as exc:
        print(f"sparkcluster: error: {exc}", file=sys.stderr)
        return 2
    try:
        print(f"master {cluster.url} (web UI http://{args.host}:{cluster.webui_port}), {args.workers} worker(s); "
              f"pids {cluster.pids}; Ctrl-C stops them", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        while all(p.poll() is None for p in cluster.procs):
            time.sleep(1)
        print("a daemon exited; stopping the rest", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
