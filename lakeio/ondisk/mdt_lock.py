"""The table's transaction lock: what Hudi's lock provider gives its writers and its indexer.

Hudi serialises the commit of a write (its metadata-table update, then the completed file) and the indexer's
state changes (schedule, turning a partition inflight, every catch-up apply, completion) with one lock
(``TransactionManager.beginStateChange`` / ``beginTransaction`` over a ``LockProvider``; for files on one host,
``FileSystemBasedLockProvider``). hoodie-lab's writers and ``hoodie-lab index`` use this one:
``<table>/.hoodie/.aux/hoodie-lab-txn.lock`` held with ``fcntl.flock`` for the duration of one transaction
(the kernel releases it when its holder dies). It is not the one-pipeline-per-table lock
(``pipeline.run_dir.TableLock``), which a pipeline holds for its whole run.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

from lakeio.errors import UserError

TXN_LOCK_NAME = "hoodie-lab-txn.lock"
#: ``hoodie.write.lock.provider`` values this lock stands for (the name Hudi gives the file-system lock)
LOCK_PROVIDERS = {"filesystem": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
                  "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider":
                      "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"}
DEFAULT_WAIT_S = 60.0  # hoodie.write.lock.wait_time_ms order of magnitude


def flock_within(path: Path, wait_s: float, what: str = "lock", said_wait_s: float | None = None) -> int:
    """Open ``path`` (created, close-on-exec: a child JVM never inherits it) and take an exclusive ``flock``
    on it within ``wait_s`` seconds; returns the fd (closing it drops the lock; so does the holder's death).
    Busy for longer: one line naming the file (:class:`~lakeio.errors.UserError`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise UserError(f"{path}: {what} busy for {said_wait_s if said_wait_s is not None else wait_s:g} s") \
                    from None
            time.sleep(0.002)
        except BaseException:
            os.close(fd)
            raise


class _Holding:
    """This process's hold on one lock file: a thread-re-entrant mutex and, while held, the flocked fd."""

    def __init__(self):
        self.mutex = threading.RLock()
        self.fd: int | None = None
        self.depth = 0


_HOLDINGS: dict[str, _Holding] = {}
_HOLDINGS_MUTEX = threading.Lock()


class TxnLock:
    """A blocking flock on ``.hoodie/.aux/hoodie-lab-txn.lock``, re-entrant within one thread of one process.

    ``flock`` locks belong to open file descriptions: a second ``open`` + ``flock`` of the same file in the same
    process would wait for the first, so a thread that already holds the lock (a pipeline committing under the
    transaction lock, whose commit updates the metadata table under the same lock) must not take it twice.
    Every ``TxnLock`` of one path shares this process's holding: the thread holding it re-enters, other threads
    of the process wait on the mutex, other processes on the flock."""

    def __init__(self, table: str | os.PathLike, wait_s: float = DEFAULT_WAIT_S):
        self.path = Path(table) / ".hoodie" / ".aux" / TXN_LOCK_NAME
        self.wait_s = wait_s
        self._depth = 0
        with _HOLDINGS_MUTEX:
            self._holding = _HOLDINGS.setdefault(os.path.abspath(self.path), _Holding())

    def acquire(self) -> None:
        h = self._holding
        deadline = time.monotonic() + self.wait_s
        if not h.mutex.acquire(timeout=self.wait_s):
            raise UserError(f"{self.path}: transaction lock busy for {self.wait_s:g} s")
        if h.depth == 0:
            try:
                h.fd = flock_within(self.path, deadline - time.monotonic(), "transaction lock", self.wait_s)
            except BaseException:
                h.mutex.release()
                raise
        h.depth += 1
        self._depth += 1

    def release(self) -> None:
        if not self._depth:
            return
        h = self._holding
        self._depth -= 1
        h.depth -= 1
        if h.depth == 0:
            os.close(h.fd)  # closing drops the flock
            h.fd = None
        h.mutex.release()

    @property
    def held(self) -> bool:
        return self._depth > 0

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
