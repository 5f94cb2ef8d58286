"""Two streaming pipelines on one MOR table (issue #17 item 6): NBCC with the bucket index, each run its own
process (own Spark, own run dir, own model), one table; read back by hudi-rs, audited. Plus what the
multi-writer mode refuses (one line, exit 2) and the two guards that make sharing the table safe: the time
floor across writers and rolling back only a run's own instants (the single-writer behaviour, which would
roll back the other writer's inflight write, shown failing the same check)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hoodie_lab.cli import main as cli
from pipeline import source as src

STRIDE = 3  # ordering values i*3+phase: the seed run phase 0, writer A phase 1, writer B phase 2 (no ties)


def _rows(table: Path) -> list[tuple]:
    from hudi import HudiTable

    t = HudiTable(str(table))
    return sorted(r for b in t.read() for r in zip(*(b.column(c).to_pylist() for c in ("key", "ts", "partition",
                                                                                          "payload"))))


def _merge_by_ordering(*run_dirs: Path) -> list[tuple]:
    """Per key the record with the greatest ordering value over every run's input (EVENT_TIME_ORDERING)."""
    best: dict[str, tuple] = {}
    for root in run_dirs:
        for lines in src.read_inputs(root / "input"):
            for rec, _ in lines:
                if rec is not None and (rec.key not in best or rec.ts > best[rec.key][1]):
                    best[rec.key] = (rec.key, rec.ts, rec.partition, rec.payload)
    return sorted(best.values())


def _why_failed(runs: list[Path], outs: list[str]) -> str:
    """What a failed run said: its failure events and the tail of its output (pytest would cut the middle)."""
    import json

    lines = []
    for root, out in zip(runs, outs):
        ev = root / "events.jsonl"
        bad = [e for e in map(json.loads, ev.read_text().splitlines()) if e["kind"] in (
            "batch-failed", "stalled", "occ-retry")] if ev.exists() else []
        lines += [f"--- {root.name}: {len(bad)} failure event(s)", *map(str, bad[-6:]),
                  *[x for x in out.splitlines() if not x.startswith("\tat ")][-25:]]
    return "\n".join(lines)


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.spark
def test_two_nbcc_pipelines_on_one_mor_table(tmp_path, spark):
    from hudi import HudiTable

    from lakeio.audit import audit_table
    from pipeline.job import prepare_run, run_job
    from pipeline.compactor import compact
    from pipeline.diff import diff_runs
    from pipeline.run_dir import read_lines

    table = tmp_path / "table"
    common = dict(table_type="mor", table_version=8, parallelism=2, buckets=4, ts_stride=STRIDE, table=str(table))
    # 1. a single writer creates the table and every bucket's file group (hudi-rs reads no log-only group)
    seed = tmp_path / "seed"
    prepare_run(seed, mode="async", records=90, batches=1, seed=1, ts_phase=0, **common)
    run_job(seed, spark=spark, progress=lambda s: None)
    slices = HudiTable(str(table)).get_file_slices()
    assert len({(s.partition_path, s.file_id) for s in slices}) == len(src.PARTITIONS) * 4
    # 2. two NBCC pipelines at once, two processes, overlapping keys (both generate k000000...)
    runs = [tmp_path / "a", tmp_path / "b"]
    for i, root in enumerate(runs):
        prepare_run(root, mode="async", records=80, batches=4, seed=20 + i, ts_phase=1 + i,
                    update_fraction=0.5, concurrency_mode="nbcc", master="local[1]", commit_latency_ms=300,
                    **common)
    procs = [subprocess.Popen([sys.executable, "-m", "pipeline.job", str(r)], env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in runs]
    # 3. the compaction job beside them (this process, no Spark): a compaction every second while they run (on an
    #    idle machine the four batches of a writer take a few seconds: a slower pace could miss them all)
    compactions = []
    try:
        deadline = time.monotonic() + 600
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(1)
            done = compact(table, progress=lambda s: None)
            if done["instant"]:
                compactions.append(done)
        outs = [p.communicate(timeout=600)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0], _why_failed(runs, outs)
    # both wrote every batch; each commit was checked by the model's rule under the lock (NBCC: no conflict)
    commits = {}
    for root in runs:
        ev = read_lines(root / "events.jsonl")
        commits[root.name] = [(e["instant"], e["completion"]) for e in ev if e["kind"] == "committed"]
        checks = [e for e in ev if e["kind"] == "conflict-check"]
        assert len(commits[root.name]) == 4 and len(checks) == 4 and all(c["conflict"] is None for c in checks)
    # the writers ran at the same time: an instant of one was inflight while the other committed
    a, b = commits["a"], commits["b"]
    assert any(ra < cb < ca for ra, ca in a for _, cb in b) or any(rb < ca < cb for rb, cb in b for _, ca in a), \
        commits
    # a compaction ran while a writer's instant was inflight (1.x: scheduled beside pending writes)
    assert compactions, outs
    assert any(r < c["instant"] < cw for c in compactions for x in commits.values() for r, cw in x), (compactions,
                                                                                                      commits)
    # one timeline: no instant time twice; completion times in the order the completed files were written
    times = [t for c in commits.values() for t, _ in c]
    assert len(set(times)) == len(times)
    # hudi-rs reads exactly the merge by ordering value over all three writers' inputs
    assert _rows(table) == _merge_by_ordering(seed, *runs)
    assert audit_table(str(table)).exit_code == 0
    # the diff: every run against its own model, the rows against the merge of the three predictions
    report = diff_runs([seed, *runs])
    assert report.ok, report.render()
    assert sum("row(s) read through hudi-rs" in c for c in report.checked) == 1
    assert sum("exactly once" in c for c in report.checked) >= 3, report.checked
    # the same diff without the seed run: its rows are in the table but in no prediction -- found
    partial = diff_runs(runs)
    assert not partial.ok and any("not predicted" in d for d in partial.differences), partial.render()


def _nbcc_table(tmp_path) -> Path:
    """A (metadata-only) table of the pipeline with a bucket file group, for the refusals below."""
    from lakeio.hudiformat.table import HudiTableWriter
    from pipeline.coordinator import TABLE_NAME

    table = tmp_path / "t"
    HudiTableWriter(table, "mor", 8, record_key="key", ordering_field="ts", partition_field="partition",
                    table_name=TABLE_NAME)
    return table


@pytest.mark.parametrize("extra,expect", [
    (["--concurrency-mode", "bogus"], "--concurrency-mode: 'bogus'"),
    (["--concurrency-mode", "nbcc", "--table-type", "cow"], "requires the MOR table with simple bucket index"),
    (["--concurrency-mode", "nbcc", "--table-version", "6"], "needs table version 8"),
    (["--concurrency-mode", "nbcc", "--mode", "blocking"], "needs the LAZY failed-writes policy"),
    (["--concurrency-mode", "occ"], "occ: needs --mode spark-sink"),
    (["--concurrency-mode", "occ", "--mode", "spark-sink", "--table-type", "cow", "--ts-phase", "1"],
     "--ts-phase: 1"),
    (["--concurrency-mode", "nbcc", "--ts-stride", "2", "--ts-phase", "2"], "--ts-phase: 2"),
    (["--ts-stride", "0"], "--ts-stride: 0"),
    (["--concurrency-mode", "nbcc", "--diff"], "--diff: a nbcc run shares its table"),
])
def test_bad_concurrency_settings_one_line(tmp_path, capsys, extra, expect):
    rc = cli(["pipeline", "run", "--records", "10", "--batches", "1", "--out", str(tmp_path / "run")] + extra)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and expect in err[0], err
    assert not (tmp_path / "run").exists()


def _holder(table: Path, shared: bool):
    p = subprocess.Popen([sys.executable, "-c", "import time; from pipeline.run_dir import TableLock; "
                          f"TableLock({str(table)!r}).acquire(shared={shared}); print('ready', flush=True); "
                          "time.sleep(60)"], stdout=subprocess.PIPE, text=True, env=_env())
    assert p.stdout.readline().strip() == "ready"
    return p


@pytest.mark.parametrize("holder_shared,mode,refused_at", [
    (True, "single_writer", "open"),   # an NBCC run is writing: a single writer may not
    (False, "nbcc", "prepare"),        # a single writer holds the table: an NBCC run may not
    (True, "nbcc", None),              # NBCC next to NBCC: allowed (the run would then start Spark: not here)
])
def test_pipeline_lock_single_writer_vs_nbcc(tmp_path, holder_shared, mode, refused_at):
    from lakeio.errors import UserError
    from pipeline.coordinator import PipelineCoordinator
    from pipeline.job import open_run, prepare_run

    table = _nbcc_table(tmp_path)
    other = _holder(table, holder_shared)
    try:
        kw = dict(mode="async", records=10, batches=1, table=str(table), concurrency_mode=mode)
        if refused_at == "prepare":  # check_table_path: an exclusive holder refuses every other run
            with pytest.raises(UserError, match=f"another pipeline \\(pid {other.pid}\\)"):
                prepare_run(tmp_path / "run", **kw)
            return
        prepare_run(tmp_path / "run", **kw)
        rd, cfg = open_run(tmp_path / "run")
        coord = PipelineCoordinator(rd, cfg, progress=None)
        if refused_at == "open":
            with pytest.raises(UserError, match="another pipeline"):
                coord.open()
        else:
            coord.open()
            assert coord.lock.held and coord.lock.shared
            coord.close()
    finally:
        other.kill()
        other.wait()


@pytest.mark.parametrize("mode,kept", [("nbcc", True), ("single_writer", False)])
def test_a_run_rolls_back_only_its_own_instants(tmp_path, mode, kept):
    """Another writer's inflight deltacommit on disk: an NBCC run leaves it (LAZY: never another writer's
    inflight write); the single-writer run rolls back every pending instant it does not know -- the behaviour
    a second writer must not have, caught by the same assertion."""
    from lakeio.hudiformat.table import HudiTableWriter
    from pipeline.coordinator import TABLE_NAME, PipelineCoordinator
    from pipeline.job import open_run, prepare_run

    table = _nbcc_table(tmp_path)
    w = HudiTableWriter(table, "mor", 8, record_key="key", ordering_field="ts", partition_field="partition",
                        table_name=TABLE_NAME)
    foreign = "20260101000000000"
    w.start(foreign)
    prepare_run(tmp_path / "run", mode="async", records=10, batches=1, table=str(table), concurrency_mode=mode)
    rd, cfg = open_run(tmp_path / "run")
    coord = PipelineCoordinator(rd, cfg, progress=None)
    coord.open()  # recovery + sync: what the model does not have on disk is rolled back -- own instants only
    coord.close()
    w.refresh()
    assert (foreign in [t for t, _, _ in w.pending_instants()]) == kept


def test_time_floor_is_shared_across_processes(tmp_path):
    """Two processes drawing instant times for one table at once never draw the same time, and each draws
    increasing times (TrueTime under the table's lock, ``SharedTimeFloor``)."""
    table = _nbcc_table(tmp_path)
    code = ("import sys; from pathlib import Path; from pipeline.coordinator import WallTrueTime; "
            "from pipeline.multiwriter import SharedTimeFloor; "
            "g = WallTrueTime(None, shared=SharedTimeFloor(Path(sys.argv[1]))); "
            "print('\\n'.join(g.next_time() for _ in range(200)))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(table)], stdout=subprocess.PIPE, text=True,
                              env=_env()) for _ in range(2)]
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert [len(o) for o in outs] == [200, 200]
    assert len(set(outs[0]) | set(outs[1])) == 400
    assert all(x < y for o in outs for x, y in zip(o, o[1:]))


def _mor_table_with_logs(tmp_path):
    """Two deltacommits on a bucket-index MOR v8 table (driver-side writer): k000003's update carries a lower
    ordering value than the record it updates."""
    import pyarrow as pa

    from lakeio.hudiformat.table import HudiTableWriter
    from pipeline.coordinator import TABLE_NAME

    table = tmp_path / "t"
    w = HudiTableWriter(table, "mor", 8, record_key="key", ordering_field="ts", partition_field="partition",
                        table_name=TABLE_NAME)
    for t, c, recs in (("20260101000000001", "20260101000000002", [("k000000", 1, "a"), ("k000003", 3, "b"),
                                                                    ("k000004", 4, "c")]),
                       ("20260101000000003", "20260101000000004", [("k000000", 10, "a2"), ("k000003", 2, "old"),
                                                                    ("k000005", 5, "d")])):
        w.start(t)
        r = w.write_batch(t, pa.table({"key": [x[0] for x in recs], "ts": [x[1] for x in recs],
                                       "partition": ["p0"] * len(recs), "payload": [x[2] for x in recs]}),
                          num_buckets=2)
        w.commit(t, c, r)
    return table


@pytest.mark.parametrize("broken", [False, True])
def test_compaction_merges_by_ordering_value(tmp_path, monkeypatch, broken):
    """The compaction's new base files hold, per key, the greatest ordering value (hudi-rs reads them; audit
    passes). Broken variant: a merge by arrival order (the ordering field ignored) -- the same check fails."""
    from hudi import HudiTable

    from lakeio.audit import audit_table
    from lakeio.hudiformat import compaction
    from pipeline.compactor import compact

    table = _mor_table_with_logs(tmp_path)
    if broken:
        real = compaction._merge
        monkeypatch.setattr(compaction, "_merge", lambda rows, block_rows, ordering: real(rows, block_rows, None))
    out = compact(table, progress=lambda s: None)
    assert out["file_groups"] >= 1 and out["logs"] >= 2
    t = HudiTable(str(table))
    slices = t.get_file_slices()
    assert all(s.creation_instant_time == out["instant"] and not s.log_file_names for s in slices)
    got = sorted(r for b in t.read() for r in zip(*(b.column(c).to_pylist() for c in ("key", "ts", "payload"))))
    want = [("k000000", 10, "a2"), ("k000003", 3, "b"), ("k000004", 4, "c"), ("k000005", 5, "d")]
    assert (got == want) != broken
    assert audit_table(str(table)).exit_code == 0


def test_compact_refuses_bad_tables(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    rc = cli(["pipeline", "compact", "--table", str(tmp_path / "empty")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "not a Hudi table" in err[0]
    from lakeio.hudiformat.table import HudiTableWriter
    from pipeline.coordinator import TABLE_NAME
    HudiTableWriter(tmp_path / "cow", "cow", 8, record_key="key", ordering_field="ts", partition_field="partition",
                    table_name=TABLE_NAME)
    rc = cli(["pipeline", "compact", "--table", str(tmp_path / "cow")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "merge-on-read tables of version 8" in err[0]


@pytest.mark.spark
def test_two_occ_pipelines_abort_and_retry_as_the_rule_says(tmp_path, spark):
    """Two OCC pipelines (spark-sink: the instant commits inside the batch) on overlapping keys: under the
    transaction lock each batch's instant is checked by the model's rule over the timeline on disk; a conflict
    aborts the batch, the restarted query replays it with a new instant. Every logged decision is recomputed
    from the final timeline (the instants completed before the check) with the same rule: the aborts are
    exactly the decisions the rule makes. The table then holds the merge by ordering value; audit and the
    multi-run diff pass."""
    from lakeio.audit import audit_table
    from lakeio.ondisk.reader import read_table
    from model.concurrency import rules
    from pipeline.diff import diff_runs
    from pipeline.job import prepare_run, run_job
    from pipeline.multiwriter import settings_of
    from pipeline.run_dir import read_lines

    table = tmp_path / "table"
    common = dict(table_type="mor", table_version=8, parallelism=2, buckets=4, ts_stride=STRIDE, table=str(table))
    seed = tmp_path / "seed"
    prepare_run(seed, mode="spark-sink", records=90, batches=1, seed=1, ts_phase=0, **common)
    run_job(seed, spark=spark, progress=lambda s: None)
    runs = [tmp_path / "a", tmp_path / "b"]
    for i, root in enumerate(runs):
        prepare_run(root, mode="spark-sink", records=60, batches=4, seed=30 + i, ts_phase=1 + i,
                    update_fraction=0.5, concurrency_mode="occ", master="local[1]", commit_latency_ms=150, **common)
    procs = [subprocess.Popen([sys.executable, "-m", "pipeline.job", str(r)], env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in runs]
    try:
        outs = [p.communicate(timeout=900)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0], _why_failed(runs, outs)
    t = read_table(table)
    done = []
    for i in t.timeline.completed():
        md = t.commit_metadata.get(i.requested_time) or {}
        fgs = {(p, s["fileId"]) for p, ss in (md.get("partitionToWriteStats") or {}).items() for s in ss}
        done.append(rules.WriteSummary(i.requested_time, i.action.value, rules.UPSERT, frozenset(fgs),
                                       state=rules.COMPLETED, completion=i.completion_time))
    aborts = 0
    for root in runs:
        cfg = json_load(root / "run.json")
        for e in read_lines(root / "events.jsonl"):
            if e["kind"] != "occ-check":
                continue
            mine = rules.WriteSummary(e["instant"], "deltacommit", rules.UPSERT,
                                      frozenset(tuple(g.split("/", 1)) for g in e["file_groups"]))
            view = [d for d in done if d.completion < e["at"]]
            want = rules.resolve_write_conflicts(settings_of(cfg), view, mine)
            assert (want is None) == (e["conflict"] is None), (root.name, e, want)
            aborts += e["conflict"] is not None
    assert aborts >= 1, outs  # the writers overlapped on file groups: at least one abort
    assert _rows(table) == _merge_by_ordering(seed, *runs)
    assert audit_table(str(table)).exit_code == 0
    report = diff_runs([seed, *runs])
    assert report.ok, report.render()


def json_load(p: Path) -> dict:
    import json
    return json.loads(p.read_text())


@pytest.mark.parametrize("mode,started,touch,plan,conflict", [
    ("occ", "20260101000000005", "same", None, True),     # the other write completed (6) after mine started (5)
    ("occ", "20260101000000007", "same", None, False),    # ... before mine started: not a candidate
    ("occ", "20260101000000005", "other", None, False),   # disjoint file groups
    ("nbcc", "20260101000000005", "same", None, False),   # NBCC: an upsert is never checked
    ("occ", "20260101000000007", "same", "20260101000000008", True),   # a compaction planned after mine started
    ("occ", "20260101000000009", "same", "20260101000000008", False),  # planned before: mine writes the next slice
])
def test_check_conflicts_over_the_timeline_on_disk(tmp_path, mode, started, touch, plan, conflict):
    """The check the coordinator runs under the lock: the model's rule over the table's timeline on disk."""
    import pyarrow as pa

    from lakeio.hudiformat.table import HudiTableWriter, WriteResult
    from lakeio.ondisk import metadata as md
    from pipeline.coordinator import TABLE_NAME
    from pipeline.multiwriter import check_conflicts

    table = tmp_path / "t"
    w = HudiTableWriter(table, "mor", 8, record_key="key", ordering_field="ts", partition_field="partition",
                        table_name=TABLE_NAME)
    for t, c in (("20260101000000001", "20260101000000002"), ("20260101000000003", "20260101000000006")):
        w.start(t)
        r = w.write_batch(t, pa.table({"key": ["k000000"], "ts": [int(t[-1])], "partition": ["p0"],
                                       "payload": ["x"]}), num_buckets=2)
        w.commit(t, c, r)
    fid = r.write_stats[0]["fileId"] if touch == "same" else "00000099-0000-0000-0000-000000000000-0"
    part = r.write_stats[0]["partitionPath"]
    mine = WriteResult(started, "deltacommit", "UPSERT", None,
                       [md.make_write_stat(part, f"{part}/.{fid}_{started}.log.1_0-1-0", fid)])
    if plan is not None:  # a pending compaction of the file group (its plan on the timeline)
        from lakeio.hudiformat import compaction
        assert compaction.schedule(w, plan)
    w.refresh()
    cfg = {"concurrency_mode": mode, "mode": "spark-sink", "table_type": "mor", "table_version": 8}
    why = check_conflicts(cfg, w, started, mine)
    assert (why is not None) == conflict, why
    if conflict:
        assert (plan or "20260101000000003") in why and fid in why


def test_new_group_collisions(tmp_path):
    """A bucket's first write under two instants at once: the second commit is refused (two base files in one
    file group would hide the first one's records); a bucket created once is fine."""
    import pyarrow as pa

    from lakeio.hudiformat.table import HudiTableWriter
    from pipeline.coordinator import TABLE_NAME
    from pipeline.multiwriter import new_group_collisions

    table = tmp_path / "t"
    ws = [HudiTableWriter(table, "mor", 8, record_key="key", ordering_field="ts", partition_field="partition",
                          table_name=TABLE_NAME) for _ in range(2)]
    results = []
    times = ("20260101000000001", "20260101000000002")
    for w, t in zip(ws, times):  # both start before either writes or commits
        w.refresh()
        w.start(t)
    for w, t in zip(ws, times):
        w.refresh()  # each sees the other's instant pending (a task reads the timeline when it starts)
        results.append((t, w.write_batch(t, pa.table({"key": ["k000000"], "ts": [1], "partition": ["p0"],
                                                      "payload": ["x"]}), num_buckets=1)))
    (t1, r1), (t2, r2) = results
    assert new_group_collisions(table, t1, r1) and new_group_collisions(table, t2, r2)
    ws[1].rollback(t2, "20260101000000003", "20260101000000004")
    assert new_group_collisions(table, t1, r1) == []
