"""``hoodie-lab index``: building the record index asynchronously beside live writers (``lakeio/ondisk/mdt_index.py``
over ``model/mdt/partitions.py``), checked by the audit (``MDT.record-index``: the index equals a rebuild); the
broken designs the catch-up exists for are caught; aborts leave nothing; bad input is one line, exit 2, nothing
written."""

from __future__ import annotations

import random
import threading
import time

import pytest

from hoodie_lab.cli import main as cli
from lakeio.audit import audit_table
from lakeio.ondisk import mdt, mdt_index
from lakeio.ondisk.reader import read_table
from mdt_util import batch, commit, copy_without_mdt, hudi_rs_rows, make_table, tree, writer
from model.mdt import partitions as spec

OK_ARGS = ["--type", "record_index", "--concurrency-mode", "optimistic_concurrency_control",
           "--lock-provider", "filesystem"]
SETTINGS = mdt_index.settings_from("optimistic_concurrency_control", "filesystem")


def _verdict(path, name):
    return next(v for v in audit_table(str(path)).verdicts if v.invariant == name)


def _run_with_writes(path, w, clock, *, at_schedule=0, at_build=0, pending_at_build=False, **kw):
    """Run the indexer, committing ``at_schedule`` batches between its schedule and execute steps and
    ``at_build`` batches between its build and catch-up (the writer's commits take the same lock)."""
    rng = random.Random(99)
    pending = {}

    def hook(msg):
        if msg.startswith("scheduled"):
            for i in range(at_schedule):
                commit(w, clock, batch(rng, 15, 80, 100 + i, 0.2))
        if msg.startswith("built"):
            for i in range(at_build):
                commit(w, clock, batch(rng, 15, 80, 200 + i, 0.2))
            if pending_at_build:
                t = clock()
                w.start(t)
                pending["t"] = t
                pending["r"] = w.write_batch(t, batch(rng, 10, 80, 300), "upsert")

    rep = mdt_index.run_index(path, "record_index", SETTINGS, progress=hook, poll_s=0.05, **kw)
    return rep, pending


def test_index_with_writes_at_every_step_passes_audit(tmp_path):
    path = tmp_path / "t"
    w, clock = make_table(path, commits=4)
    rep, pending = _run_with_writes(path, w, clock, at_schedule=2, at_build=3, pending_at_build=True)
    assert rep.outcome == "completed" and rep.base_records > 0
    decisions = dict(rep.decisions)
    assert list(decisions.values()).count(spec.CAUGHT_UP) >= 5  # in the snapshot or written by the writer
    assert decisions[pending["t"]] == spec.SKIP_DEAD  # pending, no heartbeat
    # the pending write commits after the index completed: the writer maintains the available partition
    c = clock()
    with mdt.committing(path, 8, pending["t"], c, pending["r"].write_stats):
        w.commit(pending["t"], c, pending["r"])
    props = (path / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.table.metadata.partitions=files,record_index" in props
    assert "hoodie.table.metadata.partitions.inflight=\n" in props
    tl = sorted(p.name for p in (path / ".hoodie" / "timeline").glob(f"{rep.instant}*"))
    assert tl[:2] == [f"{rep.instant}.indexing.inflight", f"{rep.instant}.indexing.requested"]
    assert len(tl) == 3 and tl[2].startswith(f"{rep.instant}_") and tl[2].endswith(".indexing")
    r = audit_table(str(path))
    assert r.exit_code == 0, [str(v) for v in r.verdicts if not v.holds]
    assert _verdict(path, "MDT.record-index").holds
    assert hudi_rs_rows(path) == hudi_rs_rows(copy_without_mdt(path, tmp_path / "nometa"))


def test_the_catchup_reads_the_timeline_again_only_for_instants_not_completed(tmp_path, monkeypatch):
    """The catch-up decides every instant completed in its last read of the timeline from that read; it reads
    the timeline again only for one that was not (pending: it may have completed since). Six instants
    committed during the build and one left pending: the reads do not grow with the completed ones."""
    from lakeio.ondisk import reader

    path = tmp_path / "t"
    w, clock = make_table(path, commits=3)
    calls = []
    real = reader.read_table
    monkeypatch.setattr(reader, "read_table", lambda *a, **k: calls.append(a) or real(*a, **k))
    rep, pending = _run_with_writes(path, w, clock, at_build=6, pending_at_build=True)
    decisions = dict(rep.decisions)
    assert rep.outcome == "completed" and decisions[pending["t"]] == spec.SKIP_DEAD
    assert list(decisions.values()).count(spec.CAUGHT_UP) >= 6
    # schedule, execute's snapshot, the catch-up's list, one read for the pending instant, complete
    assert len(calls) == 5, len(calls)
    assert _verdict(path, "MDT.record-index").holds


def test_index_beside_a_writer_thread(tmp_path):
    """A writer thread commits without pause while the indexer runs in this thread (real interleavings)."""
    path = tmp_path / "t"
    w, clock = make_table(path, commits=3)
    stop, started = threading.Event(), threading.Event()
    errors, done, after = [], [], []
    lock = threading.Lock()

    def tick():
        with lock:
            return clock()

    def write():
        rng = random.Random(4)
        try:
            i = 0
            while not stop.is_set() or len(after) < 3:  # at least 3 commits once the indexer started
                t = commit(w, tick, batch(rng, 10, 200, 1000 + i, 0.1))
                (after if started.is_set() else done).append(t)
                i += 1
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    th = threading.Thread(target=write)
    th.start()
    try:
        while len(done) < 2:
            time.sleep(0.01)
        started.set()
        rep = mdt_index.run_index(path, "record_index", SETTINGS, poll_s=0.02)
        stop.set()
    finally:
        stop.set()
        th.join()
    assert not errors, errors
    assert rep.outcome == "completed" and len(after) >= 3
    r = audit_table(str(path))
    assert r.exit_code == 0, [str(v) for v in r.verdicts if not v.holds]


def test_catchup_repairs_a_writer_that_ignores_the_inflight_partition(tmp_path, monkeypatch):
    """A writer that updates only available partitions (``writer_partitions(include_inflight=False)``) leaves
    its commits during the build out of the index; the catch-up finds them (completed, MDT deltacommit
    without the partition) and applies them, so the index still passes."""
    path = tmp_path / "t"
    w, clock = make_table(path, commits=3)
    monkeypatch.setattr(mdt, "writer_partitions", lambda s: spec.writer_partitions(s, include_inflight=False))
    rep, _ = _run_with_writes(path, w, clock, at_build=2)
    assert [d for _, d in rep.decisions].count(spec.APPLY) == 2
    assert _verdict(path, "MDT.record-index").holds


def test_broken_catchup_by_instant_time_is_caught(tmp_path, monkeypatch):
    """The same writer with a catch-up that takes any completed MDT instant of the same time as caught up
    (``check=instant-time``, the reading of Hudi's set-of-timestamps check): the index misses the keys those
    commits moved, and the audit says which (``MDT.record-index``, exit 1)."""
    path = tmp_path / "t"
    w, clock = make_table(path, commits=3)
    monkeypatch.setattr(mdt, "writer_partitions", lambda s: spec.writer_partitions(s, include_inflight=False))
    real = spec.catchup_decision
    monkeypatch.setattr(mdt_index, "catchup_decision", lambda **kw: real(**kw, check=spec.INSTANT_TIME))
    rep, _ = _run_with_writes(path, w, clock, at_build=2)
    assert rep.outcome == "completed"
    v = _verdict(path, "MDT.record-index")
    assert not v.holds and v.involved and "differ from a rebuild" in v.detail
    assert audit_table(str(path)).exit_code == 1


def test_readable_before_complete_is_caught(tmp_path):
    """I17: a partition made available while its indexing instant is still pending is a violation."""
    path = tmp_path / "t"
    w, clock = make_table(path, commits=3)
    seen = {}

    def hook(msg):
        if msg.startswith("built"):  # flip the table config to "available" under the indexer's feet
            st = mdt.partition_states(path)
            mdt.write_partition_states(path, spec.PartitionStates(st.available | {"record_index"},
                                                                  st.inflight - {"record_index"}))
            r = audit_table(str(path))
            seen["v"] = [v for v in r.verdicts if v.invariant == "I17.partition-state"]
            mdt.write_partition_states(path, st)

    mdt_index.run_index(path, "record_index", SETTINGS, progress=hook)
    assert any(not v.holds and "pending" in v.detail for v in seen["v"])
    assert all(v.holds for v in audit_table(str(path)).verdicts if v.invariant == "I17.partition-state")


@pytest.mark.parametrize("where", ["build", "catchup"])
def test_abort_leaves_nothing(tmp_path, capsys, where):
    path = tmp_path / "t"
    make_table(path, commits=3)
    with pytest.raises(mdt_index.IndexAborted) as e:
        mdt_index.run_index(path, "record_index", SETTINGS, fail_at=where)
    assert e.value.exit_code == 1 and "removed" in str(e.value)
    props = (path / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.table.metadata.partitions=files\n" in props and "record_index" not in props
    assert not (mdt.MetadataTable(path).base / "record_index").exists()
    assert not list((path / ".hoodie" / "timeline").glob("*.indexing*"))
    assert [i.requested for i in mdt.MetadataTable(path).instants()][0] == mdt.INIT_TIME
    assert audit_table(str(path)).exit_code == 0
    # the same index can be built afterwards
    assert mdt_index.run_index(path, "record_index", SETTINGS).outcome == "completed"


def _table_with_a_live_pending_write(path) -> str:
    """A table of 3 commits and a pending write whose heartbeat file is fresh; returns its instant time."""
    w, clock = make_table(path, commits=3)
    t = clock()
    w.start(t)
    w.write_batch(t, batch(random.Random(2), 10, 60, 9), "upsert")
    hb = path / ".hoodie" / ".heartbeat"
    hb.mkdir(parents=True)
    (hb / t).write_text("")
    return t


def test_catchup_timeout_on_a_live_pending_write_aborts(tmp_path, capfd):
    """A pending write whose heartbeat is alive is waited for; past ``--timeout`` the index aborts, exit 1,
    one line (from the background job: capfd sees its output)."""
    path = tmp_path / "t"
    t = _table_with_a_live_pending_write(path)
    assert cli(["index", str(path), *OK_ARGS, "--timeout", "0.3", "--poll", "0.05"]) == 1
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Index catchup failed" in err[0] and t in err[0]
    assert "record_index" not in (path / ".hoodie" / "hoodie.properties").read_text()
    assert audit_table(str(path)).exit_code == 0


def test_cli_completes_and_reports(tmp_path, capfd):
    path = tmp_path / "t"
    make_table(path, commits=3)
    assert cli(["index", str(path), *OK_ARGS]) == 0
    out = capfd.readouterr().out
    assert "background job" in out and "index record_index: completed" in out and "records built" in out
    assert cli(["audit", str(path)]) == 0


@pytest.mark.parametrize("priority", ["background", "normal"])
def test_the_index_runs_at_the_priority_asked(tmp_path, capfd, priority):
    """By default the work runs as a background job: a process of its own, in a session of its own, at
    SCHED_IDLE, in the idle I/O class, on one CPU, with its session's autogroup at nice 19 (what the kernel
    holds, read back by the job);
    ``--priority normal`` runs it here, as this process runs."""
    import json
    import os

    from lakeio.background import describe_priority

    path = tmp_path / "t"
    make_table(path, commits=2)
    assert cli(["index", str(path), *OK_ARGS, "--priority", priority, "--json"]) == 0
    rep = json.loads(capfd.readouterr().out)
    assert rep["outcome"] == "completed"
    assert rep["max_cpu"] == (1.0 if priority == "normal" else 0.25)  # the background job is paced by default
    if priority == "normal":
        assert rep["priority"] == describe_priority() and rep["paced_s"] == 0.0
    else:
        assert rep["priority"].startswith("SCHED_IDLE") and rep["priority"] != describe_priority()
        assert "I/O idle" in rep["priority"] and "I/O idle" not in describe_priority()
        if os.path.exists("/proc/self/autogroup"):
            assert rep["priority"].endswith("autogroup nice 19")
        if len(os.sched_getaffinity(0)) > 1:  # confined to one CPU, the highest this process may use
            assert f"CPU {max(os.sched_getaffinity(0))} only" in rep["priority"], rep["priority"]
            assert "only" not in describe_priority()


def test_a_paced_index_keeps_to_its_share_of_a_cpu_and_builds_the_same_index(tmp_path):
    """``max_cpu``: the work outside the lock pauses so that it uses at most that share of one CPU (over the
    run, as the pacer measures it); the index it builds is the one an unpaced run builds (the audit's rebuild)."""
    from lakeio.background import Pacer

    path = tmp_path / "t"
    make_table(path, commits=3)
    rep = mdt_index.run_index(path, "record_index", SETTINGS, poll_s=0.05, pacer=Pacer(0.1))
    assert rep.outcome == "completed" and rep.max_cpu == 0.1 and rep.base_records > 0
    assert rep.paced_s > 0  # it paused (unless this process waited for a CPU 10x longer than it ran)
    assert _verdict(path, "MDT.record-index").holds

    p = Pacer(0.25)  # the pacer itself: 0.1 CPU-s of work in pieces of 5 ms take at least 0.4 s
    t0, c0 = time.monotonic(), time.process_time()
    while time.process_time() - c0 < 0.1:
        end = time.process_time() + 0.005
        while time.process_time() < end:
            pass
        p.pace()
    share = (time.process_time() - c0) / (time.monotonic() - t0)
    assert share <= 0.25 + 0.03, share
    assert Pacer(1.0).share == 1.0
    with pytest.raises(ValueError, match="share"):
        Pacer(0)
    # a background job counts from its process's start: its start-up (imports) is paced for too
    import psutil

    job = Pacer(0.25, since_process_start=True)
    age = time.time() - psutil.Process().create_time()
    assert job.cpu0 == 0.0 and abs((time.monotonic() - job.wall0) - age) < 0.5


_HOLDS_SCRIPT = """
import json, os, sys
from pathlib import Path
from lakeio.background import Pacer, describe_priority, lower_priority
from lakeio.ondisk import mdt_index, mdt_lock
lowered = lower_priority()
seen = []
acquire = mdt_lock.TxnLock.acquire
def spy(self):
    acquire(self)
    seen.append(describe_priority())
mdt_lock.TxnLock.acquire = spy
rep = mdt_index.run_index(Path(sys.argv[1]), "record_index", mdt_index.settings_from(
    "optimistic_concurrency_control", "filesystem"), poll_s=0.05, pacer=Pacer(0.5))
print(json.dumps({"lowered": lowered, "holds": seen, "after": describe_priority(), "outcome": rep.outcome}))
"""


def test_a_background_indexer_holds_the_lock_at_normal_priority_and_drops_back(tmp_path):
    """Priority inversion: a background job (SCHED_IDLE, idle I/O class, its autogroup at nice 19) that held the
    transaction lock at that priority would wait for an idle CPU while the writers wait for the lock. Every hold
    of the indexer runs at normal priority (SCHED_OTHER, best-effort I/O, autogroup nice 0, as the kernel holds it
    in the hold) and the job is back at the lowest priority after it (``lakeio.background.foreground``)."""
    import json
    import os
    import subprocess
    import sys

    path = tmp_path / "t"
    make_table(path, commits=3)
    out = subprocess.run([sys.executable, "-c", _HOLDS_SCRIPT, str(path)], capture_output=True, text=True,
                         start_new_session=True, timeout=300, check=True).stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert got["outcome"] == "completed"
    if not got["lowered"].startswith("SCHED_IDLE"):
        pytest.skip(f"no SCHED_IDLE here ({got['lowered']})")
    assert len(got["holds"]) >= 3  # schedule, execute, complete (and any catch-up apply)
    for held in got["holds"]:
        assert held.startswith("SCHED_OTHER") and "I/O best-effort" in held, held
        if os.path.exists("/proc/self/autogroup") and "autogroup nice 19" in got["lowered"]:
            assert held.endswith("autogroup nice 0"), held
    assert got["after"].startswith("SCHED_IDLE") and "I/O idle" in got["after"], got["after"]
    if "autogroup nice 19" in got["lowered"]:
        assert got["after"].endswith("autogroup nice 19")


def test_ctrl_c_reaches_the_background_job_which_aborts_cleanly(tmp_path):
    """The background job is not in the terminal's process group: SIGINT sent to the command is passed on,
    the job aborts the index and ends as the command does in the foreground (exit 130, one line), leaving no
    trace of the index."""
    import signal
    import subprocess
    import sys

    path = tmp_path / "t"
    _table_with_a_live_pending_write(path)  # the catch-up waits for it
    proc = subprocess.Popen([sys.executable, "-m", "hoodie_lab.cli", "index", str(path), *OK_ARGS, "--poll", "0.05"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list((path / ".hoodie" / "timeline").glob("*.indexing.inflight")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert err.strip() == "hoodie-lab index: interrupted"
    assert not list((path / ".hoodie" / "timeline").glob("*.indexing*"))
    assert "record_index" not in (path / ".hoodie" / "hoodie.properties").read_text()
    assert audit_table(str(path)).exit_code == 0


# ---------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("args,expect", [
    (["--type", "record_index", "--lock-provider", "filesystem"], "SINGLE_WRITER"),
    (["--type", "record_index", "--concurrency-mode", "single_writer", "--lock-provider", "filesystem"],
     "SINGLE_WRITER"),
    (["--type", "record_index", "--concurrency-mode", "optimistic_concurrency_control"], "lock provider"),
    (["--type", "record_index", "--concurrency-mode", "bogus", "--lock-provider", "filesystem"], "unknown mode"),
    (["--type", "record_index", "--concurrency-mode", "optimistic_concurrency_control", "--lock-provider", "zk"],
     "--lock-provider"),
    (["--type", "secondary", *OK_ARGS[2:]], "unknown"),
    (["--type", "column_stats", *OK_ARGS[2:]], "record_index only"),
    (["--type", "files", *OK_ARGS[2:]], "already exists"),
    ([*OK_ARGS, "--timeout", "0"], "--timeout"),
    ([*OK_ARGS, "--poll", "-1"], "--poll"),
    ([*OK_ARGS, "--max-cpu", "0"], "--max-cpu"),
    ([*OK_ARGS, "--max-cpu", "1.5"], "--max-cpu"),
    ([*OK_ARGS, "--max-cpu", "nan"], "--max-cpu"),
])
def test_bad_requests_one_line_exit_2_nothing_written(tmp_path, capfd, args, expect):
    path = tmp_path / "t"
    make_table(path, commits=2)
    before = tree(path)
    assert cli(["index", str(path), *args]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expect in err[0], err
    assert tree(path) == before


def test_existing_and_inflight_index_refused(tmp_path, capfd):
    path = tmp_path / "t"
    w, clock = make_table(path, commits=2)
    # inflight: an indexer still running (stopped here, between build and catch-up)
    seen = {}

    def hook(msg):
        if msg.startswith("built"):
            before = tree(path)
            seen["rc"] = cli(["index", str(path), *OK_ARGS])
            seen["err"] = capfd.readouterr().err
            seen["same"] = tree(path) == before

    mdt_index.run_index(path, "record_index", SETTINGS, progress=hook)
    assert seen["rc"] == 2 and "already being built" in seen["err"] and seen["same"]
    before = tree(path)
    assert cli(["index", str(path), *OK_ARGS]) == 2
    assert "already exists" in capfd.readouterr().err and tree(path) == before


@pytest.mark.parametrize("case", ["tv6", "no-mdt", "not-a-table"])
def test_tables_it_cannot_index(tmp_path, capfd, case):
    path = tmp_path / "t"
    if case == "tv6":
        commit(writer(path, version=6), __import__("mdt_util").Clock(), batch(random.Random(1), 10, 30, 0))
    elif case == "no-mdt":
        commit(writer(path), __import__("mdt_util").Clock(), batch(random.Random(1), 10, 30, 0), hook=False)
    else:
        path.mkdir()
    before = tree(path)
    assert cli(["index", str(path), *OK_ARGS]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0]
    assert tree(path) == before


def test_nothing_to_index_when_the_first_write_is_pending(tmp_path, capfd):
    path = tmp_path / "t"
    w, clock = make_table(path, commits=0)
    t = clock()
    w.start(t)
    # the MDT exists once a hooked commit ran; create it from the (empty) listing
    with mdt.committing(path, 8, t, clock(), []):
        pass
    mdt.rolling_back(path, 8, t, clock(), clock())
    w.start(clock())  # a pending first write: no contiguous completed write
    before = tree(path)
    assert cli(["index", str(path), *OK_ARGS]) == 0
    assert "nothing to index" in capfd.readouterr().out
    assert tree(path) == before


# ------------------------------------------------------------------------------------ live Spark pipeline
@pytest.mark.spark
def test_index_built_during_a_live_pipeline_run_passes_audit(tmp_path, spark, monkeypatch):
    """The index built beside a live pipeline run passes the audit; the batches written while the table had a
    record index (inflight or built) had their tasks return record delegates, and their commits wrote the
    record index from those (``mdt.delegate_entries``), not from the files."""
    from pipeline.coordinator import PipelineCoordinator
    from pipeline.job import prepare_run, run_job

    wanted, used = [], []
    wants, entries = PipelineCoordinator._wants_delegates, mdt.delegate_entries
    monkeypatch.setattr(PipelineCoordinator, "_wants_delegates", lambda self: wanted.append(wants(self)) or wanted[-1])
    monkeypatch.setattr(mdt, "delegate_entries", lambda *a: used.append(entries(*a)) or used[-1])
    root = tmp_path / "run"
    prepare_run(root, mode="async", table_type="mor", table_version=8, records=400, batches=8, seed=3,
                malformed=0, commit_latency_ms=150)
    table = root / "table"
    box = {}
    th = threading.Thread(target=lambda: box.setdefault("summary", run_job(root, spark=spark, progress=None)))
    th.start()
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not box:
            tl = table / ".hoodie" / "timeline"
            if tl.is_dir() and len([p for p in tl.iterdir() if p.name.endswith(".deltacommit") and "_" in p.name]) >= 2:
                break
            time.sleep(0.05)
        rep = mdt_index.run_index(table, "record_index", SETTINGS, poll_s=0.05)
        live = "summary" not in box
    finally:
        th.join()
    assert rep.outcome == "completed"
    assert live, "the pipeline finished before the index: no overlap"
    assert len(box["summary"]["commits"]) == 8
    dt = {i.requested_time for i in read_table(table).timeline.completed()}
    assert any(t > rep.instant for t in dt)  # commits after the indexer started maintained the index
    r = audit_table(str(table))
    assert r.exit_code == 0, [str(v) for v in r.verdicts if not v.holds]
    assert next(v for v in r.verdicts if v.invariant == "MDT.record-index").holds
    assert len(wanted) == 8 and not wanted[0] and any(wanted)  # none before the index was scheduled
    assert len(used) == sum(wanted) and all(u is not None for u in used)
