"""Building a metadata partition asynchronously beside live writers (RFC-45; ``HoodieIndexer``,
``ScheduleIndexActionExecutor``, ``RunIndexActionExecutor``, ``AbstractIndexingCatchupTask``) on disk.

The decisions are the spec's (:mod:`model.mdt.partitions`: ``validate_indexing``, ``index_upto``,
``catchup_list``, ``catchup_decision``, ``index_plan``, ``index_commit_metadata``, ``PartitionStates`` transitions); this module does the I/O:

1. **schedule** (under the transaction lock): check the preconditions, compute ``indexUptoInstant``, write
   ``<t>.indexing.requested`` holding the ``HoodieIndexPlan``;
2. **execute** (under the lock): write ``<t>.indexing.inflight`` (empty, as Hudi 1.x writes it), add the
   partition to ``hoodie.table.metadata.partitions.inflight`` -- from then on every writer's commit adds its
   entries to the partition (``writer_partitions``) -- and take the snapshot of the data table the base file
   is built from (every instant completed at that moment);
3. **build** (no lock): the partition's base file (``record_index``: every key of the latest merged file slices)
   in an MDT deltacommit at the next free initialisation time (``00000000000000NNN``);
4. **catch up**: every write instant after the catch-up start, in order, by ``catchup_decision``: caught up
   (in the snapshot, or its MDT deltacommit wrote the partition), wait (pending, heartbeat alive: poll),
   skip (pending without a live heartbeat: its writer died, or it will write the partition itself when it
   commits, since the partition is inflight), gone (rolled back), apply (completed but missing: redo its MDT
   deltacommit under the lock with the partition included); a timeout aborts;
5. **complete** (under the lock): the partition moves to ``hoodie.table.metadata.partitions`` and
   ``<t>_<c>.indexing`` is written with the ``HoodieIndexCommitMetadata``;
   **abort** (an error, a timeout, an interrupt): the partition leaves both lists, its folder and base
   instant go, and so do the indexing instant's files.

Heartbeats: a writer's ``.hoodie/.heartbeat/<instant>`` file, alive while its mtime is within
``heartbeat_expiry_s``; hoodie-lab's pipeline writes none, so its pending instants are skipped (sound here
because a commit takes the same lock and adds the inflight partition's entries itself).
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from lakeio.background import Pacer, foreground
from lakeio.errors import UserError
from lakeio.ondisk import mdt as mdtio
from lakeio.ondisk import metadata as md
from lakeio.ondisk.mdt_lock import LOCK_PROVIDERS, TxnLock
from lakeio.ondisk.properties import read_properties
from model import filenames as fn
from model.instant import Action, State
from model.mdt.partitions import (APPLY, CAUGHT_UP, GONE, SKIP_DEAD, WAIT, ConcurrencySettings, IndexingError,
                                  catchup_decision, catchup_list, index_commit_metadata, index_plan, index_upto,
                                  validate_indexing)

INDEX_PLAN_SCHEMA = "HoodieIndexPlan"
INDEX_COMMIT_SCHEMA = "HoodieIndexCommitMetadata"
#: the partitions ``hoodie-lab index`` can build
BUILDABLE = (mdtio.RECORD_INDEX,)
WRITE_ACTIONS = (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT)
HEARTBEAT_EXPIRY_S = 120.0  # hoodie.client.heartbeat.interval_in_ms (60 s) x tolerable misses (2)


@dataclass
class IndexReport:
    """What one indexing run did (printed by ``hoodie-lab index``, measured by the benchmark)."""

    table: str
    partition: str
    instant: str | None = None
    upto: str | None = None
    init_time: str | None = None
    outcome: str = "scheduled"  # nothing-to-index / completed / aborted
    base_records: int = 0
    snapshot_instants: int = 0
    build_s: float = 0.0
    catchup_s: float = 0.0
    decisions: list[tuple[str, str]] = field(default_factory=list)
    caught_up_to: str | None = None
    error: str | None = None
    priority: str | None = None  # the CPU priority it ran at (``lakeio.background.describe_priority``)
    max_cpu: float = 1.0  # the share of one CPU the work was paced to (1: not paced)
    paced_s: float = 0.0  # seconds slept to keep that pace
    #: wall-clock times (``time.time()``) each step began: schedule, execute, build, catch-up, complete, and the end
    #: (what a benchmark beside the writers sets their commits against)
    steps: dict[str, float] = field(default_factory=dict)


class IndexAborted(UserError):
    """The indexing aborted (catch-up timeout, a failure while building): partitions and files removed."""

    def __init__(self, message: str):
        super().__init__(message, exit_code=1)


@contextmanager
def _holding(lock: TxnLock):
    """The transaction lock, taken and held at normal priority (:func:`lakeio.background.foreground`): a
    background job holding the lock its writers wait for must not wait for an idle CPU (priority inversion;
    writers are never to wait beyond the indexer's short lock steps)."""
    with foreground(), lock:
        yield


def _tl(table: Path, name: str) -> Path:
    return table / ".hoodie" / "timeline" / name


def _fresh_time(timeline) -> str:
    """A wall-clock instant time greater than every time on the timeline (the caller holds the lock); waits
    past the millisecond it returns, so no other process of this host draws it."""
    latest = max([i.requested_time for i in timeline.instants()] +
                 [i.completion_time for i in timeline.instants() if i.completion_time], default="0")
    while True:
        t = mdtio.now_time()
        if t > latest[:17]:
            time.sleep(0.002)
            return t
        time.sleep(0.001)


def settings_from(concurrency_mode: str | None, lock_provider: str | None) -> ConcurrencySettings:
    """The indexer's write config (``hoodie.write.concurrency.mode``, ``hoodie.write.lock.provider``); a lock
    provider other than the file-system one this host's writers share is refused."""
    mode = (concurrency_mode or "SINGLE_WRITER").upper()
    if lock_provider is not None and lock_provider not in LOCK_PROVIDERS:
        raise UserError(f"--lock-provider: {lock_provider!r} is not supported; the table's writers lock with "
                        f"'filesystem' ({LOCK_PROVIDERS['filesystem']})")
    return ConcurrencySettings(mode=mode, lock_provider=LOCK_PROVIDERS.get(lock_provider) if lock_provider else None)


def check_request(table: Path, partition: str, settings: ConcurrencySettings) -> None:
    """Everything refused before anything is written (exit 2, one line)."""
    from lakeio.ondisk.reader import find_base_path

    find_base_path(table)
    props = read_properties(table / ".hoodie" / "hoodie.properties")
    states = mdtio.partition_states(table, props)
    try:
        validate_indexing(settings, partition, states)
    except IndexingError as exc:
        raise UserError(f"{table}: {exc}") from None
    version = int(props.get("hoodie.table.version", "0") or 0)
    if version < 8:
        raise UserError(f"{table}: table version {version}: hoodie-lab keeps a metadata table for table "
                        f"versions 8 and 9 only")
    if partition not in BUILDABLE:
        raise UserError(f"{table}: index type {partition}: hoodie-lab builds {', '.join(BUILDABLE)} only")
    if mdtio.FILES not in states.available or not mdtio.MetadataTable(table).exists():
        raise UserError(f"{table}: no metadata table with an available files partition "
                        f"(hoodie.table.metadata.partitions); a writer creates it at its first commit")


def _index_instant_state(table: Path, t: str):
    from lakeio.ondisk.reader import read_table

    tbl = read_table(table)
    return tbl, tbl.timeline.get(t, Action.INDEXING)


def _heartbeat_alive(table: Path, t: str, expiry_s: float) -> bool:
    p = table / ".hoodie" / ".heartbeat" / t
    try:
        return time.time() - p.stat().st_mtime <= expiry_s
    except FileNotFoundError:
        return False


def _mdt_wrote(table: Path, partition: str, t: str) -> tuple[bool, bool]:
    """(MDT deltacommit ``t`` completed, and it wrote ``partition``)."""
    m = mdtio.MetadataTable(table)
    i = m.instant(t)
    done = i is not None and i.state == "completed" and i.action == "deltacommit"
    wrote = done and (m.base / partition / m._log_name(partition, t)).exists()
    return done, wrote


def _redo(table: Path, t: str, partition: str, lock: TxnLock) -> None:
    """``apply``: roll back the MDT deltacommit of completed data instant ``t`` and write it again with every
    partition writers update now and the one being built (``updateIndexForWriteAction``); the timeline is
    read under the lock (the new instant times must follow every time on it)."""
    from lakeio.ondisk.reader import read_table

    with _holding(lock):
        tbl = read_table(table)
        inst = next(i for i in tbl.timeline.completed() if i.requested_time == t)
        name = fn.timeline_file_name(t, inst.action, State.COMPLETED, inst.completion_time, 2)
        meta = md.decode_commit_metadata((tbl.timeline_dir / name).read_bytes(), name) or {}
        stats = [s for ss in (meta.get("partitionToWriteStats") or {}).values() for s in ss]
        rb = _fresh_time(tbl.timeline)
        mdtio.rollback(table, t, rb, _fresh_time(tbl.timeline))
        mdtio.apply_commit(table, t, inst.completion_time, stats, also=(partition,))


def run_index(table: str | os.PathLike, partition: str, settings: ConcurrencySettings, *,
              timeout_s: float = 900.0, poll_s: float = 0.5, heartbeat_expiry_s: float = HEARTBEAT_EXPIRY_S,
              progress=None, fail_at: str | None = None, pacer: Pacer | None = None) -> IndexReport:
    """Schedule, build, catch up and complete (or abort) one index on ``table``. ``fail_at`` (``"build"``,
    ``"catchup"``) raises there, for tests of the abort path. ``pacer`` (:class:`lakeio.background.Pacer`;
    None: unpaced) paces the work outside the lock to its share of one CPU: a pause after each file slice read,
    each HFile block written and each catch-up step; nothing is paced while the lock is held. Raises :class:`UserError` (exit 2) before
    anything is written when the request is refused, :class:`IndexAborted` (exit 1) after an abort."""
    from lakeio.ondisk.reader import read_table

    table = Path(table).resolve()
    say = progress or (lambda _msg: None)
    check_request(table, partition, settings)
    pacer = pacer if pacer is not None else Pacer(1.0)
    rep = IndexReport(str(table), partition, max_cpu=pacer.share)
    lock = TxnLock(table)
    # 1. schedule
    rep.steps["schedule"] = time.time()
    with _holding(lock):
        check_request(table, partition, settings)  # again under the lock (another indexer may have won)
        tbl = read_table(table)
        upto = index_upto(sorted(tbl.timeline.write_timeline(), key=lambda i: i.requested_time))
        if upto is None:
            rep.outcome = "nothing-to-index"
            return rep
        t = _fresh_time(tbl.timeline)
        plan = index_plan([partition], upto)
        md.write_timeline_file(_tl(table, fn.timeline_file_name(t, Action.INDEXING, State.REQUESTED, None, 2)),
                               md.encode_avro(plan, INDEX_PLAN_SCHEMA))
    rep.instant, rep.upto = t, upto
    say(f"scheduled indexing {t}: {partition} up to {upto}")
    init_time = None
    try:
        # 2. execute: inflight, partition inflight, snapshot
        rep.steps["execute"] = time.time()
        with _holding(lock):
            md.write_timeline_file(_tl(table, fn.timeline_file_name(t, Action.INDEXING, State.INFLIGHT, None, 2)),
                                   b"")
            states = mdtio.partition_states(table)
            mdtio.write_partition_states(table, states.to_inflight([partition]))
            snap = read_table(table)
            init_time = mdtio.next_init_time(table)
        rep.init_time = init_time
        snapshot = {i.requested_time for i in snap.timeline.completed()}
        rep.snapshot_instants = len(snapshot)
        # 3. build
        rep.steps["build"] = time.time()
        t0 = time.perf_counter()
        slices = snap.view().latest_merged_file_slices()
        keys, locs, loc_index = mdtio.record_index_columns(snap.base_path, slices, pace=pacer.pace)
        if fail_at == "build":
            raise RuntimeError("failure injected while building (fail_at=build)")
        values = [mdtio.rli_value(loc) for loc in locs]
        data = mdtio.base_hfile_columns(keys, values, loc_index, pace=pacer.pace)  # the long part: no lock held
        mdtio.write_index_base(table, partition, init_time, data, len(keys), mdtio.now_time())
        rep.base_records = len(keys)
        rep.build_s = time.perf_counter() - t0
        say(f"built {partition}: {len(keys)} records in {rep.build_s:.2f} s (MDT {init_time})")
        # 4. catch up
        rep.steps["catch-up"] = time.time()
        t1 = time.perf_counter()
        deadline = time.monotonic() + timeout_s
        # the spec's list (every action but indexing from the catch-up start); rollbacks, cleans and restores
        # need nothing here: a data rollback rolls back the MDT deltacommit itself (mdt.rolling_back)
        view = read_table(table)
        now = view.timeline.instants()
        writes = {i.requested_time for i in now if i.action in WRITE_ACTIONS}
        todo = [(it, pend) for it, pend in catchup_list(now, upto) if it in writes]
        last = upto
        if fail_at == "catchup":
            raise RuntimeError("failure injected while catching up (fail_at=catchup)")

        def state_of(it: str) -> str | None:
            found = [i for i in view.timeline.instants() if i.requested_time == it and i.action in WRITE_ACTIONS]
            return None if not found else ("completed" if found[0].state is State.COMPLETED else "pending")

        for it, was_pending in todo:
            while True:
                pacer.pace()
                dt_state = state_of(it)
                if dt_state != "completed":  # a completed instant stays so; any other is read again
                    view = read_table(table)
                    dt_state = state_of(it)
                done, wrote = _mdt_wrote(table, partition, it)
                decision = catchup_decision(dt_state=dt_state, heartbeat_alive=_heartbeat_alive(table, it, heartbeat_expiry_s),
                                            mdt_completed=done, mdt_wrote_partition=wrote or it in snapshot,
                                            was_pending=was_pending)
                if decision == WAIT:
                    was_pending = True
                    if time.monotonic() > deadline:
                        raise IndexAborted(f"{table}: Index catchup failed. Current indexed instant = {last} "
                                           f"(waited {timeout_s:g} s for {it})")
                    time.sleep(poll_s)
                    continue
                if decision == APPLY:
                    _redo(table, it, partition, lock)
                rep.decisions.append((it, decision))
                if decision in (CAUGHT_UP, APPLY):
                    last = it
                break
            if time.monotonic() > deadline:
                raise IndexAborted(f"{table}: Index catchup failed. Current indexed instant = {last} "
                                   f"(timeout {timeout_s:g} s)")
        rep.catchup_s = time.perf_counter() - t1
        rep.caught_up_to = last
        # 5. complete
        rep.steps["complete"] = time.time()
        with _holding(lock):
            tbl = read_table(table)
            mdtio.write_partition_states(table, mdtio.partition_states(table).to_available([partition]))
            meta = index_commit_metadata([partition], last)
            c = _fresh_time(tbl.timeline)
            md.write_timeline_file(_tl(table, fn.timeline_file_name(t, Action.INDEXING, State.COMPLETED, c, 2)),
                                   md.encode_avro(meta, INDEX_COMMIT_SCHEMA))
        rep.outcome, rep.paced_s = "completed", pacer.slept
        rep.steps["end"] = time.time()
        say(f"completed indexing {t}: {partition} caught up to {last} in {rep.catchup_s:.2f} s")
        return rep
    except BaseException as exc:
        abort(table, t, partition, init_time, lock)
        rep.outcome, rep.error, rep.paced_s = "aborted", f"{type(exc).__name__}: {exc}", pacer.slept
        if isinstance(exc, IndexAborted):
            raise
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise IndexAborted(f"{table}: indexing {t} of {partition} aborted ({type(exc).__name__}: {exc}); "
                           f"the partition and the indexing instant were removed") from exc


def abort(table: Path, t: str, partition: str, init_time: str | None, lock: TxnLock) -> None:
    """``RunIndexActionExecutor#abort``: the partition leaves both table-config lists, its MDT folder and base
    instant are deleted, and so are the indexing instant's files."""
    with _holding(lock):
        mdtio.drop_partition(table, partition, init_time)
        for st in (State.INFLIGHT, State.REQUESTED):
            p = _tl(table, fn.timeline_file_name(t, Action.INDEXING, st, None, 2))
            p.unlink(missing_ok=True)
