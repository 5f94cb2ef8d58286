"""Background jobs: run a command at the lowest CPU priority, so the work it shares a machine with keeps its pace.

An asynchronous table service (``hoodie-lab index``) must not slow the writers it runs beside. Hudi runs
``HoodieIndexer`` as a job with its own resources; on one machine the same effect comes from the scheduler:

* ``SCHED_IDLE`` (sched(7)): the job's threads run only on a CPU no other thread wants, and a waking
  normal thread preempts them at once (a ``nice`` value only lowers the share: a niced job still
  holds a CPU for its slice when a writer's thread wakes);
* its own session, with the session's autogroup at nice 19 (``/proc/self/autogroup``): with autogroup
  scheduling the kernel first shares the CPUs between sessions, so a job in a session of its own would
  otherwise get a whole session's share;
* the idle I/O class (ioprio_set(2), ``IOPRIO_CLASS_IDLE``, what ``ionice -c 3`` sets): its reads and
  writes reach the disk only when no other process has I/O waiting. Without it the job's large writes sit
  in the same queue as a writer's small synced commit files, and each of the writer's ``fsync`` calls waits
  behind them (measured beside the pipeline: the commit's ``fsync`` time tripled while the index was
  built, ``benchmarks/bench_indexing.py``) -- with an I/O scheduler that has priority classes (BFQ, mq-deadline); under
  ``none`` (``/sys/block/DEV/queue/scheduler``, as on this project's virtio disks) the class is set and changes
  nothing;
* one CPU (``sched_setaffinity``; on a machine with several): the job is paced to a share of one CPU, so one is all
  it needs, and what it does besides computing -- cache and memory traffic, the TLB flushes its memory unmapping
  sends to every CPU its threads ran on -- stays on that CPU; the writers have the others to themselves.

Elsewhere (no ``SCHED_IDLE``) the job is niced to 19. :func:`run_as_background_job` starts the command, forwards
SIGINT / SIGTERM / SIGHUP to it (it is not in the terminal's process group any more) and returns its exit code.

A lock the writers wait for is never held at the lowest priority (:func:`foreground`): a ``SCHED_IDLE`` thread in
a nice-19 autogroup runs only when a CPU has nothing else to do, so on a busy machine it can hold a lock for seconds
while using milliseconds of CPU, and the writer waiting for the lock waits that long (priority inversion; measured:
the indexer's transaction-lock holds took 1.2 s and 2.2 s of wall time for 7-9 ms of CPU beside four busy
processes). The holder runs at normal priority (``SCHED_OTHER``, the session's autogroup at nice 0, best-effort
I/O) for the duration of the hold and drops back after it -- by hand what a priority-inheriting lock does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import psutil

JOB_ENV = "HOODIE_LAB_BACKGROUND_JOB"  # set in the job's environment: it is the job (do not start another)


def lower_priority() -> str:
    """Make this process (and the threads and children it starts later) a background job; returns what was
    applied, for the report. Called in a new session's leader it also lowers the session's autogroup."""
    applied = []
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        applied.append("SCHED_IDLE")
    except (AttributeError, OSError):
        try:
            os.nice(19 - os.nice(0))
            applied.append("nice 19")
        except OSError:
            pass
    try:
        psutil.Process().ionice(psutil.IOPRIO_CLASS_IDLE)
        applied.append("I/O idle")
    except (AttributeError, OSError, psutil.Error):
        pass  # no I/O priorities here
    one = _confine_to_one_cpu()
    if one is not None:
        applied.append(f"CPU {one} only")
    # only a session of our own: the autogroup is the whole session's (refused: no autogroup scheduling here)
    if os.getsid(0) == os.getpid() and _set_autogroup_nice(19):
        applied.append("autogroup nice 19")
    return ", ".join(applied) or "not lowered (the system refused)"


def _confine_to_one_cpu() -> int | None:
    """Let this process (and the threads and children it starts later) run on one CPU only, the highest-numbered
    one it may use, when it may use several; returns that CPU, or None when nothing changed. A background job is
    paced to a share of one CPU, so one CPU is all it needs; confined there, whatever it does besides using the CPU
    -- its threads' cache and memory traffic, the TLB flushes its memory unmapping sends to every CPU its threads
    ran on -- stays on that one, and the writers have the other CPUs to themselves."""
    try:
        cpus = os.sched_getaffinity(0)
        if len(cpus) < 2:
            return None
        one = max(cpus)
        os.sched_setaffinity(0, {one})
        return one
    except (AttributeError, OSError):
        return None


def _autogroup_nice() -> int | None:
    try:
        with open("/proc/self/autogroup") as fh:  # "/autogroup-123 nice 19"
            return int(fh.read().split()[-1])
    except (OSError, IndexError, ValueError):
        return None


def _set_autogroup_nice(nice: int) -> bool:
    try:
        with open("/proc/self/autogroup", "w") as fh:
            fh.write(str(nice))
        return True
    except OSError:
        return False


@contextmanager
def foreground():
    """Run the block at normal priority when this thread runs as a background job (:func:`lower_priority`),
    then lower it again: the calling thread leaves ``SCHED_IDLE`` for ``SCHED_OTHER``, the session's autogroup
    (a background job's session is its own) goes from its nice value to 0 and the process's I/O class from idle to
    best-effort. What the system refuses (no ``SCHED_IDLE`` here, no right to raise the autogroup) stays as it
    was. For a lock other processes wait for: the holder must not wait for an idle CPU while they wait for it."""
    restore = []
    try:
        try:
            if os.sched_getscheduler(0) == os.SCHED_IDLE:
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
                restore.append(lambda: os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)))
        except (AttributeError, OSError):
            pass
        if os.getsid(0) == os.getpid():  # a session of our own: its autogroup is this job's alone
            nice = _autogroup_nice()
            if nice is not None and nice > 0 and _set_autogroup_nice(0):
                restore.append(lambda: _set_autogroup_nice(nice))
        try:
            proc = psutil.Process()
            if proc.ionice().ioclass == psutil.IOPRIO_CLASS_IDLE:
                proc.ionice(psutil.IOPRIO_CLASS_BE)
                restore.append(lambda: proc.ionice(psutil.IOPRIO_CLASS_IDLE))
        except (AttributeError, OSError, psutil.Error):
            pass
        yield
    finally:
        for undo in reversed(restore):
            try:
                undo()
            except (OSError, psutil.Error):
                pass


class Pacer:
    """Keeps this process's CPU use to ``share`` of one CPU, averaged from its start: :meth:`pace`, called
    between pieces of work, sleeps for as long as the process is ahead of that rate. The pieces run at full
    speed, so the finer they are, the closer the rate holds over short spans (a duty cycle, as Postgres'
    ``vacuum_cost_delay`` or RocksDB's rate limiter for compactions pace background work). ``share`` 1 (or
    more) never sleeps. ``since_process_start``: count from the process's start (its CPU time and age), so a
    background job's start-up is paced for too."""

    def __init__(self, share: float = 1.0, *, since_process_start: bool = False):
        if not share > 0:
            raise ValueError(f"share: {share!r} is not a positive fraction of a CPU")
        self.share = float(share)
        self.cpu0, self.wall0 = time.process_time(), time.monotonic()
        if since_process_start:  # a job of its own: its start-up (imports) counts against the pace too
            self.cpu0 = 0.0
            self.wall0 -= max(0.0, time.time() - psutil.Process().create_time())
        self.slept = 0.0

    def pace(self) -> None:
        if self.share >= 1.0:
            return
        ahead = (time.process_time() - self.cpu0) / self.share - (time.monotonic() - self.wall0)
        if ahead > 0:
            time.sleep(ahead)
            self.slept += ahead


def describe_priority() -> str:
    """This process's CPU priority as the kernel holds it: policy, nice value, the session's autogroup."""
    parts = []
    try:
        policy = os.sched_getscheduler(0)
        parts.append({getattr(os, "SCHED_IDLE", -1): "SCHED_IDLE", getattr(os, "SCHED_BATCH", -1): "SCHED_BATCH",
                      os.SCHED_OTHER: "SCHED_OTHER"}.get(policy, f"policy {policy}"))
    except (AttributeError, OSError):
        pass
    parts.append(f"nice {os.nice(0)}")
    try:
        io = psutil.Process().ionice().ioclass
        parts.append({psutil.IOPRIO_CLASS_IDLE: "I/O idle", psutil.IOPRIO_CLASS_BE: "I/O best-effort",
                      psutil.IOPRIO_CLASS_RT: "I/O realtime"}.get(io, "I/O default"))
    except (AttributeError, OSError, psutil.Error):
        pass
    try:
        cpus = sorted(os.sched_getaffinity(0))
        parts.append(f"CPU {cpus[0]} only" if len(cpus) == 1 and (os.cpu_count() or 1) > 1 else f"{len(cpus)} CPUs")
    except (AttributeError, OSError):
        pass
    try:
        with open("/proc/self/autogroup") as fh:  # "/autogroup-123 nice 19"
            parts.append("autogroup nice " + fh.read().split()[-1])
    except (OSError, IndexError):
        pass
    return ", ".join(parts)


def run_as_background_job(argv: list[str], env: dict | None = None) -> int:
    """Run ``argv`` in a session of its own at background priority; its stdout/stderr are ours. Returns its
    exit code (128 + N when signal N ended it). SIGINT, SIGTERM and SIGHUP sent to us are passed on, so a
    Ctrl-C still reaches the job, which ends as it would in the foreground."""
    env = dict(os.environ if env is None else env, **{JOB_ENV: "1"})
    proc = subprocess.Popen(argv, env=env, start_new_session=True, preexec_fn=lower_priority)  # after setsid, before exec
    forwarded = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {}
    try:
        for sig in forwarded:
            old[sig] = signal.signal(sig, lambda n, _f: proc.send_signal(n))
    except ValueError:  # not the main thread: no handlers, the job still ends with its own work
        pass
    try:
        rc = proc.wait()
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
        sys.stdout.flush()
    return rc if rc >= 0 else 128 - rc
