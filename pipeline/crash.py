"""Crash injection: kill points inside the job, and a harness that SIGKILLs the driver and restarts it.

Kill points
-----------
The job calls :func:`kill_point` at named places (``write.mid`` is reached inside a writer task, which kills the
driver: :mod:`pipeline.executor`). A point fires when it is armed, either by the environment
variable ``HOODIE_LAB_KILL_AT`` or by the file ``RUN_DIR/crash/kill_at`` (one line, same syntax; the file is
removed when it fires so a restart does not fire again). Syntax: ``POINT`` or ``POINT#N`` (fire on the N-th
time the process reaches POINT; default 1). Firing appends a ``crash`` event to ``events.jsonl`` (fsynced) and
sends SIGKILL to the driver's own process: no ``finally`` block, no Spark shutdown hook, no flush runs. The
driver's JVM (a child of the Python driver) exits when its stdin closes; the harness also kills the
subprocess's whole process group, which it created, so nothing of the killed run survives into the restart.

``KILL_POINTS`` lists the points with what has happened when each fires.

Harness
-------
:func:`run_with_crashes` runs ``python -m pipeline.job RUN_DIR`` in a subprocess once per planned kill, each
time on the same run dir (same inputs, same Spark checkpoint, same table), then once more without a kill to
finish the run. :func:`seeded_plan` draws a plan from a seed.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "HOODIE_LAB_KILL_AT"

#: Every kill point, and the state the run is in when it fires.
KILL_POINTS: dict[str, str] = {
    "batch.start": "foreachBatch entered; acks of earlier batches delivered, nothing written for this batch",
    "write.instant-started": "the batch's instant is requested/inflight on the timeline; no data file yet",
    "write.mid": "a writer task has written its N-th data file of the batch and SIGKILLs the driver (the one "
                 "task that gets there first; the other tasks may be mid-write)",
    "write.files-written": "every data file of the batch is written; its write metadata is not persisted",
    "writemeta.persisted": "write metadata persisted in the run dir; the batch has not returned to Spark",
    "commit.before-complete": "a commit is under way: its completion time is taken, the completed file is "
                              "not yet written",
    "commit.after-complete": "the completed timeline file is written; the coordinator has not recorded it",
    "async.commit": "inside the async committer thread, before it commits an acked instant",
    "sink.after-commit": "spark-sink mode: the batch's instant is committed; Spark has not committed the batch",
}


@dataclass(frozen=True)
class KillSpec:
    point: str
    hit: int = 1

    def __str__(self) -> str:
        return f"{self.point}#{self.hit}"

    @staticmethod
    def parse(text: str) -> "KillSpec":
        text = text.strip()
        point, _, n = text.partition("#")
        if point not in KILL_POINTS:
            raise ValueError(f"unknown kill point {point!r}; known: {', '.join(KILL_POINTS)}")
        hit = int(n) if n else 1
        if hit < 1:
            raise ValueError(f"kill point hit count must be >= 1, got {n}")
        return KillSpec(point, hit)


class KillSwitch:
    """The armed kill point of this process (if any) and how often each point has been reached."""

    def __init__(self, run_root: Path | None = None):
        self.file = Path(run_root) / "crash" / "kill_at" if run_root else None
        spec = os.environ.get(ENV_VAR)
        if not spec and self.file is not None and self.file.exists():
            spec = self.file.read_text()
        self.spec = KillSpec.parse(spec) if spec and spec.strip() else None
        self.hits: dict[str, int] = {}
        self.on_fire = None  # callable(point) run just before the kill (logs the crash event)

    def __call__(self, point: str) -> None:
        assert point in KILL_POINTS, point
        n = self.hits[point] = self.hits.get(point, 0) + 1
        if self.spec is None or self.spec.point != point or n != self.spec.hit:
            return
        if self.file is not None:
            self.file.unlink(missing_ok=True)
        if self.on_fire is not None:
            self.on_fire(point)
        os.kill(os.getpid(), signal.SIGKILL)


# -------------------------------------------------------------------------------------------------- harness
def seeded_plan(seed: int, batches: int, kills: int, points: list[str] | None = None) -> list[KillSpec]:
    """``kills`` kill specs drawn with ``random.Random(seed)`` from ``points`` (default: all that apply)."""
    rng = random.Random(seed)
    pool = list(points or KILL_POINTS)
    return [KillSpec(rng.choice(pool), rng.randint(1, max(1, batches // 2))) for _ in range(kills)]


@dataclass
class Attempt:
    kill: KillSpec | None
    returncode: int
    seconds: float
    killed: bool  # the kill point fired (SIGKILL), as planned
    stderr_tail: str


def _run_job(run_root: Path, kill: KillSpec | None, timeout: float, extra_env: dict | None,
             progress=None) -> Attempt:
    env = dict(os.environ)
    env.pop(ENV_VAR, None)
    if kill is not None:
        env[ENV_VAR] = str(kill)
    env.update(extra_env or {})
    repo = Path(__file__).resolve().parent.parent
    env["PYTHONPATH"] = os.pathsep.join([str(repo), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "pipeline.job", str(run_root)], cwd=repo, env=env,
                                stdout=subprocess.PIPE, stderr=err, start_new_session=True, text=True)
        timer = threading.Timer(timeout, _kill_group, (proc.pid,))
        timer.start()
        try:
            for line in proc.stdout:  # the job's progress lines, as they come
                if progress and not line.startswith("done:"):
                    progress("  " + line.rstrip())
            proc.wait()
        finally:
            timer.cancel()
            _kill_group(proc.pid)  # the driver's JVM and Python workers, if any outlived the driver
        timed_out = time.monotonic() - t0 >= timeout
        err.seek(0)
        tail = err.read()[-3000:]
    if timed_out:
        raise RuntimeError(f"pipeline job timed out after {timeout:.0f} s (kill {kill}); stderr:\n{tail}")
    return Attempt(kill, proc.returncode, time.monotonic() - t0, proc.returncode == -signal.SIGKILL, tail)


def _kill_group(pgid: int) -> None:
    """SIGKILL the process group this harness created for one job (and only that group)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_with_crashes(run_root: Path, plan: list[KillSpec], *, timeout: float = 300.0,
                     extra_env: dict | None = None, progress=None) -> list[Attempt]:
    """Run the job on ``run_root`` (already prepared by :func:`pipeline.job.prepare_run`) once per kill in
    ``plan`` and then to the end. A planned kill that does not fire (the run finished first) is reported as
    such (``killed`` False), not as an error; a job that fails otherwise raises with its stderr."""
    attempts = []
    for kill in [*plan, None]:
        a = _run_job(run_root, kill, timeout, extra_env, progress)
        attempts.append(a)
        if progress:
            state = "killed" if a.killed else f"exit {a.returncode}"
            progress(f"attempt {len(attempts)}: kill at {kill or '-'}: {state} ({a.seconds:.1f} s)")
        if not a.killed and a.returncode == 1 and "run stalled" in a.stderr_tail:  # PipelineStalled: one line
            from pipeline.run_dir import PipelineStalled
            line = next(ln for ln in reversed(a.stderr_tail.splitlines()) if "run stalled" in ln)
            raise PipelineStalled(line.split("error: ", 1)[-1])
        if not a.killed and a.returncode != 0:
            raise RuntimeError(f"pipeline job failed (exit {a.returncode}, kill {kill}):\n{a.stderr_tail}")
    return attempts
