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
import time
from pathlib import Path

from lakeio.errors import UserError

TXN_LOCK_NAME = "hoodie-lab-txn.lock"
#: ``hoodie.write.lock.provider`` values this lock stands for (the name Hudi gives the file-system lock)
LOCK_PROVIDERS = {"filesystem": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
                  "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider":
                      "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"}
DEFAULT_WAIT_S = 60.0  # hoodie.write.lock.wait_time_ms order of magnitude


class TxnLock:
    """A blocking, re-entrant-per-object flock on ``.hoodie/.aux/hoodie-lab-txn.lock``."""

    def __init__(self, table: str | os.PathLike, wait_s: float = DEFAULT_WAIT_S):
        self.path = Path(table) / ".hoodie" / ".aux" / TXN_LOCK_NAME
        self.wait_s = wait_s
        self._fd: int | None = None
        self._depth = 0

    def acquire(self) -> None:
        if self._depth:
            self._depth += 1
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise UserError(f"{self.path}: transaction lock busy for {self.wait_s:g} s") from None
                time.sleep(0.002)
        self._fd = fd
        self._depth = 1

    def release(self) -> None:
        if not self._depth:
            return
        self._depth -= 1
        if self._depth == 0:
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    @property
    def held(self) -> bool:
        return self._depth > 0

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
