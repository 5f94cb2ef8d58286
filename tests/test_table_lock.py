"""The one-pipeline-per-table lock (``pipeline.run_dir.TableLock``) under real concurrent processes.

Each trial forks four processes that start together (a barrier) and try to take the lock of one table; a
process that gets it appends ``enter <pid>`` to a shared log (O_APPEND, one write per line), holds it a few
milliseconds, appends ``exit <pid>`` and releases. Two ``enter`` lines without an ``exit`` between them are an
overlap. Trials start from no lock file and from a stale one (its holder was SIGKILLed while holding it).
The harness is shown able to fail: the previous test-then-delete lock overlaps under it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from pathlib import Path

import pytest

from lakeio.errors import UserError
from pipeline.run_dir import TableLock, _pid_alive

WORKERS = 4
HOLD_S = 0.003


def _log(log: str, line: str) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


def _worker(tables: list[str], barrier, lock_cls) -> None:
    for table in tables:
        log = f"{table}.log"
        lock = lock_cls(Path(table))
        barrier.wait()  # the trial starts: all workers at once
        try:
            lock.acquire()
        except UserError:
            _log(log, f"refused {os.getpid()}")
            continue
        _log(log, f"enter {os.getpid()}")
        time.sleep(HOLD_S)
        _log(log, f"exit {os.getpid()}")
        lock.release()
    os._exit(0)


def _killed_holder(table: str) -> None:
    TableLock(Path(table)).acquire()
    os.kill(os.getpid(), signal.SIGKILL)  # the state after any SIGKILL: the lock file stays behind


def _overlaps(lines: list[str]) -> int:
    inside, overlaps = 0, 0
    for ln in lines:
        if ln.startswith("enter"):
            inside += 1
            overlaps += inside > 1
        elif ln.startswith("exit"):
            inside -= 1
    return overlaps


def _trials(tmp_path: Path, n: int, stale: bool, lock_cls=TableLock) -> tuple[int, int]:
    """(trials with an overlap, trials in which nobody got the lock). The same four worker processes run
    every trial, each trial on its own table; a stale trial's table holds the lock file a SIGKILLed holder
    left (a real one for the first table, the same bytes copied for the others)."""
    ctx = mp.get_context("fork")
    tables = []
    stale_bytes = None
    for i in range(n):
        table = tmp_path / f"{'stale' if stale else 'fresh'}-{i}"
        (table / ".hoodie").mkdir(parents=True)
        tables.append(str(table))
        if stale:
            path = TableLock(table).path
            if stale_bytes is None:
                p = ctx.Process(target=_killed_holder, args=(str(table),))
                p.start()
                p.join(30)
                assert p.exitcode == -signal.SIGKILL and path.exists() and not _pid_alive(p.pid)
                stale_bytes = path.read_bytes()
                assert stale_bytes == f"{p.pid}\n".encode()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(stale_bytes)
    barrier = ctx.Barrier(WORKERS)
    procs = [ctx.Process(target=_worker, args=(tables, barrier, lock_cls)) for _ in range(WORKERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    overlapped = nobody = 0
    for table in tables:
        lines = Path(f"{table}.log").read_text().splitlines()
        assert len(lines) == WORKERS + sum(ln.startswith("enter") for ln in lines)
        overlapped += _overlaps(lines) > 0
        nobody += not any(ln.startswith("enter") for ln in lines)
    return overlapped, nobody


def test_concurrent_acquires_from_no_lock_never_overlap(tmp_path):
    overlapped, nobody = _trials(tmp_path, 50, stale=False)
    assert (overlapped, nobody) == (0, 0)


def test_concurrent_acquires_from_a_stale_lock_never_overlap(tmp_path):
    overlapped, nobody = _trials(tmp_path, 50, stale=True)
    assert (overlapped, nobody) == (0, 0)


class _TestThenDeleteLock(TableLock):
    """The previous algorithm (O_EXCL create; on failure: is its pid alive? else delete and retry), with the
    window between the staleness test and the delete widened a little so the harness hits it reliably."""

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    pid = int(self.path.read_text().strip() or 0)
                except (OSError, ValueError):
                    pid = 0
                if pid and pid != os.getpid() and _pid_alive(pid):
                    raise UserError(f"{self.path}: held by {pid}") from None
                time.sleep(0.002)
                self.path.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as f:
                f.write(f"{os.getpid()}\n")
            self.held = True
            return
        raise UserError(f"{self.path}: could not take the table lock")

    def release(self) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False


def test_the_harness_catches_a_test_then_delete_lock(tmp_path):
    overlapped, _ = _trials(tmp_path, 20, stale=True, lock_cls=_TestThenDeleteLock)
    assert overlapped > 0


def test_a_live_holder_is_refused_with_its_pid_and_a_killed_one_is_taken_over(tmp_path):
    table = tmp_path / "t"
    ctx = mp.get_context("fork")
    ready, done = ctx.Event(), ctx.Event()

    def hold():
        lock = TableLock(table)
        lock.acquire()
        ready.set()
        done.wait(30)
        os.kill(os.getpid(), signal.SIGKILL)

    p = ctx.Process(target=hold)
    p.start()
    try:
        assert ready.wait(30)
        mine = TableLock(table)
        assert mine.holder() == p.pid
        with pytest.raises(UserError, match=f"another pipeline \\(pid {p.pid}\\)"):
            mine.acquire()
        assert not mine.held
    finally:
        done.set()
        p.join(30)
    assert TableLock(table).holder() is None  # the kernel dropped the dead holder's lock
    with TableLock(table) as lock:
        assert lock.path.read_text().strip() == str(os.getpid())
        assert lock.holder() is None  # this process holds it
    assert not lock.path.exists()
