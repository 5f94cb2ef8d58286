"""The run directory: everything one pipeline run leaves behind, and the small durable writes it needs.

Layout (``RUN_DIR``)::

    run.json            the run's configuration (mode, table type/version, records, batches, seed, ...)
    trace.jsonl         the model trace (model/trace.py format, driver "pipeline"), appended + fsynced per event
    times.jsonl         every instant time the driver generated (TrueTime over the wall clock), so replays of
                        the trace reproduce them; ``{"void": [...]}`` voids times a killed driver never used
    events.jsonl        what the pipeline did: batch -> checkpoint, instants started, commits, rollbacks (with
                        their rollback instant), restarts, crashes, sink skips, failed batches (``batch-failed``
                        with the error) and stalls (``stalled``: the run stopped before the end of its input)
    input/              the generated input files (pipeline/source.py), one per micro-batch
    checkpoint/         Spark's checkpoint dir (offsets/, commits/, sources/)
    table/              the Hudi table (unless --table points elsewhere)
    quarantine/         malformed records: a parquet table (one file per batch), columns batch, reason, raw
    writemeta/<t>.json  write metadata of the batch written under instant t (batch, checkpoint, key, source
                        offsets, Hudi write stats), persisted atomically before the batch returns to Spark
    crash/              kill-point hook files of the crash harness (pipeline/crash.py)

Every JSON state file is written to a temp name, fsynced and renamed, so a SIGKILL leaves either the old or
the new file. Append-only logs are fsynced per line and a torn last line is ignored on read.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from lakeio.errors import UserError
from pipeline.source import INPUT_GLOB

RUN_FILE = "run.json"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def atomic_write_json(path: Path, obj) -> None:
    atomic_write_bytes(path, (json.dumps(obj, sort_keys=True, indent=1) + "\n").encode())


def append_line(path: Path, obj: dict | str) -> None:
    """Append one JSON line (or a ready line) and fsync it: it survives a SIGKILL right after."""
    line = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True)
    with open(path, "a") as f:
        f.write(line.rstrip("\n") + "\n")
        f.flush()
        os.fsync(f.fileno())


def repair_tail(path: Path) -> None:
    """Cut a torn last line (a kill during an append) so the next append starts on a line of its own."""
    path = Path(path)
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        with open(path, "r+b") as f:
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())


def read_lines(path: Path) -> list[dict]:
    """The complete JSON lines of an append-only log (a torn last line, from a kill, is dropped)."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    lines = path.read_text().split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if i >= len(lines) - 2:  # torn tail
                break
            raise UserError(f"{path}:{i + 1}: not a JSON line") from None
    return out


@dataclass(frozen=True)
class RunDir:
    root: Path
    table_override: Path | None = None

    @property
    def run_file(self) -> Path:
        return self.root / RUN_FILE

    @property
    def trace(self) -> Path:
        return self.root / "trace.jsonl"

    @property
    def events(self) -> Path:
        return self.root / "events.jsonl"

    @property
    def input(self) -> Path:
        return self.root / "input"

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoint"

    @property
    def table(self) -> Path:
        return self.table_override or self.root / "table"

    @property
    def quarantine(self) -> Path:
        return self.root / "quarantine"

    @property
    def writemeta(self) -> Path:
        return self.root / "writemeta"

    @property
    def crash(self) -> Path:
        return self.root / "crash"

    def load_config(self) -> dict:
        if not self.run_file.exists():
            raise UserError(f"{self.root}: not a pipeline run dir (no {RUN_FILE})")
        try:
            return json.loads(self.run_file.read_text())
        except json.JSONDecodeError as exc:
            raise UserError(f"{self.run_file}: not JSON ({exc.msg})") from None

    def save_config(self, config: dict) -> None:
        atomic_write_json(self.run_file, config)

    def log(self, kind: str, **fields) -> None:
        append_line(self.events, {"kind": kind, **fields})

    def read_events(self) -> list[dict]:
        return read_lines(self.events)

    def spark_committed_batches(self) -> list[int]:
        """Batch ids Spark committed (``checkpoint/commits/N``): each one is the ack of checkpoint N."""
        d = self.checkpoint / "commits"
        if not d.is_dir():
            return []
        return sorted(int(p.name) for p in d.iterdir() if p.name.isdigit())



# ------------------------------------------------------------------------------------------------ stalls
class PipelineStalled(UserError):
    """The run stopped before the end of its input (a batch failed and never committed, or the query ended or
    timed out early): one line, exit 1. Nothing is lost: ``pipeline resume`` retries from the failed batch."""

    def __init__(self, message: str):
        super().__init__(message, exit_code=1)


def input_batches(rd: RunDir) -> int:
    return len(list(rd.input.glob(INPUT_GLOB)))


def uncommitted_batches(rd: RunDir) -> list[int]:
    """Input files (= batch ids of the run) Spark has not committed (``checkpoint/commits/<n>`` missing)."""
    done = set(rd.spark_committed_batches())
    return [b for b in range(input_batches(rd)) if b not in done]


def stall_message(rd: RunDir, why: str) -> str:
    """One line: the run stalled -- which batch never committed and why, how far it got, what to do."""
    failed = [e for e in rd.read_events() if e["kind"] == "batch-failed"]
    missing = uncommitted_batches(rd)
    n = input_batches(rd)
    where = (f"batch {failed[-1]['batch']} failed and never committed ({failed[-1]['error']})" if failed
             and failed[-1]["batch"] in missing else why)
    return (f"{rd.root}: run stalled: {where}; {n - len(missing)} of {n} batches committed; "
            f"`hoodie-lab pipeline resume {rd.root}` retries from batch {missing[0] if missing else '-'}")


# ---------------------------------------------------------------------------------------------- the table lock
LOCK_NAME = "hoodie-lab-pipeline.lock"
LOCK_WAIT_S = 0.5  # how long acquire retries a lock that is busy (a check() probing it holds it for microseconds)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class TableLock:
    """One pipeline per table: ``<table>/.hoodie/.aux/hoodie-lab-pipeline.lock``, held with ``fcntl.flock``.

    The kernel's lock on the open file is the truth, not the file's content: it is taken atomically
    (``LOCK_EX | LOCK_NB``) and released by the kernel when its holder dies, so the lock file a SIGKILLed
    pipeline leaves behind is simply locked again by the next one (no "is the pid alive, then delete" race,
    no pid-reuse trap). The holder writes its pid into the file for the refusal message. After taking the
    lock, the holder checks the path still names the file it locked (a releasing holder unlinks it; a
    process that opened the old file before the unlink must not count its lock) and retries otherwise.
    The file is opened close-on-exec, so the Spark JVM the driver starts never inherits the lock.
    Limitation: flock is per host; the table must not be written by pipelines on two hosts at once.
    """

    def __init__(self, table: Path):
        self.path = Path(table) / ".hoodie" / ".aux" / LOCK_NAME
        self.held = False
        self.shared = False
        self._fd: int | None = None

    def _pid_in_file(self) -> int | None:
        try:
            return int(self.path.read_text().strip() or 0) or None
        except (OSError, ValueError):
            return None

    def holder(self) -> int | None:
        """The pid of another live process holding the lock (0 if its pid is not written yet), else None.
        None when this process holds it."""
        if self.held:
            return None
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = self._pid_in_file()
            return 0 if pid is None else pid
        finally:
            os.close(fd)  # closing drops a shared lock taken just now
        return None

    def _refuse(self, pid: int | None) -> UserError:
        return UserError(f"{self.path.parent.parent.parent}: another pipeline (pid {pid or '?'}) is writing this "
                         f"table (lock {self.path})")

    def check(self) -> None:
        pid = self.holder()
        if pid is not None:
            raise self._refuse(pid)

    def acquire(self, shared: bool = False) -> None:
        """Take the lock exclusively (a single-writer run) or ``shared`` (multi-writer runs: several may hold
        it, none while a single-writer run does; :mod:`pipeline.multiwriter`)."""
        if self.held:
            return
        self.shared = shared
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() >= deadline:
                    raise self._refuse(self._pid_in_file()) from None
                time.sleep(0.01)
                continue
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # its holder released (unlinked) it between our open and our flock: try again
                os.close(fd)
                continue
            if not shared:  # (shared holders leave the file as it is)
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                os.fsync(fd)
            self._fd = fd
            self.held = True
            return

    def release(self) -> None:
        if self.held:
            if not self.shared:  # a shared holder must not unlink what others hold
                self.path.unlink(missing_ok=True)  # while still locked: the next holder creates a fresh file
            os.close(self._fd)
            self._fd = None
            self.held = False

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
