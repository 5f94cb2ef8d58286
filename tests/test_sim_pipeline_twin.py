"""The SimPy twin of the PySpark pipeline (sim/pipeline_twin.py). Runtime: well under 1 s."""

from __future__ import annotations

import dataclasses

import pytest

from sim import pipeline_twin as twin

#: bench_pipeline.py's measured MOR figures (50,000 records in 10 batches), records/s.
MEASURED = [("blocking mor", 0, 16688), ("async mor", 0, 15399), ("blocking mor", 250, 6715),
            ("async mor", 250, 9683), ("blocking mor", 1000, 2169), ("async mor", 1000, 3603)]
ROWS = [{"what": w, "latency_ms": lat, "rps": rps} for w, lat, rps in MEASURED]


def test_deterministic():
    a = twin.simulate("async", 6, 0.3, 0.25)
    b = twin.simulate("async", 6, 0.3, 0.25)
    assert (a.seconds, a.batch_seconds, a.events) == (b.seconds, b.batch_seconds, b.events)
    assert twin.predict_ratio(50_000, 10, 0.3, 1.0) == twin.predict_ratio(50_000, 10, 0.3, 1.0)


@pytest.mark.parametrize("latency", [0.05, 0.25, 1.0, 3.0])
def test_async_beats_blocking_with_commit_latency(latency):
    p = twin.predict_ratio(50_000, 10, 0.3, latency)
    assert p["ratio"] > 1.0
    assert p["async_batch_p50"] < p["blocking_batch_p50"]


def test_ratio_is_one_without_commit_latency():
    assert twin.predict_ratio(50_000, 10, 0.3, 0.0)["ratio"] == pytest.approx(1.0)


@pytest.mark.parametrize("mode", twin.MODES)
@pytest.mark.parametrize("batches,W,L", [(1, 0.3, 0.25), (10, 0.3, 1.0), (7, 0.0, 0.5), (5, 0.2, 0.0)])
def test_every_run_holds_the_invariants_and_the_cost_formula(mode, batches, W, L):
    r = twin.simulate(mode, batches, W, L)
    assert r.verdict == "ok"
    assert r.commits == r.starts == batches          # every batch's instant started and committed once
    # blocking: W + 2L a batch; async: W + L a batch, the last commit's L after the loop
    expected = batches * (W + 2 * L) if mode == "blocking" else batches * (W + L) + L
    assert r.seconds == pytest.approx(expected)


def test_invariant_checks_can_fail(monkeypatch):
    """A deliberately broken commit rule (the ack of n commits only key n) is caught by the twin's checks."""
    good = twin._protocol_config
    monkeypatch.setattr(twin, "_protocol_config",
                        lambda mode, batches: dataclasses.replace(good(mode, batches), commit_rule="=="))
    assert "I11.subsume" in twin.simulate("async", 4, 0.3, 0.25).verdict      # an invariant fails
    assert twin.simulate("blocking", 4, 0.3, 0.25).verdict.startswith("refused")  # the model refuses a step
    with pytest.raises(RuntimeError, match="invariant violated"):
        twin.predict_ratio(1000, 4, 0.3, 0.25)


def test_compare_with_the_measured_pipeline():
    lines = []
    res = twin.compare(ROWS, 50_000, 10, out=lines.append)
    assert [r["latency_ms"] for r in res] == [0, 250, 1000]
    assert twin.calibrate_write_s(ROWS, 50_000, 10) == pytest.approx((50_000 / 16688 + 50_000 / 15399) / 20)
    for r in res:
        assert r["measured_ratio"] == pytest.approx(dict(((w.split()[0], l), v) for w, l, v in MEASURED)
                                                    [("async", r["latency_ms"])] /
                                                    dict(((w.split()[0], l), v) for w, l, v in MEASURED)
                                                    [("blocking", r["latency_ms"])])
        assert r["within"] == (r["gap"] <= twin.TOLERANCE)
    assert all(r["within"] for r in res if r["latency_ms"] in (250, 1000))
    assert len(lines) == 4 and "L= 1000 ms" in lines[-1]


def test_compare_needs_the_zero_latency_rows():
    with pytest.raises(ValueError, match="latency_ms 0"):
        twin.compare([r for r in ROWS if r["latency_ms"] != 0], 50_000, 10, out=lambda s: None)


# ---------------------------------------------------------------------- one pipeline script
@pytest.mark.parametrize("mode", twin.MODES)
@pytest.mark.parametrize("batches", [1, 4, 9])
def test_twin_runs_the_shared_pipeline_script(mode, batches):
    """The twin's configuration and events are the pipeline script's (engine/pipeline_script.py): a run of N
    one-record batches is the script's run, then the drain."""
    from engine import System
    from engine import pipeline_script as script

    cfg = twin._protocol_config(mode, batches)
    assert cfg == script.protocol_config(mode, batches, crashes=False, max_checkpoints=batches + 16)
    system = System(cfg)
    expected = script.run_batches(system, system.apply, mode, [1] * batches)
    r = twin.simulate(mode, batches, 0.3, 0.25)
    assert r.events[:len(expected)] == expected
    assert r.events[len(expected):] == system.drain()


@pytest.mark.parametrize("mode,table_version,table_type", [("blocking", 8, "mor"), ("async", 6, "cow"),
                                                           ("spark-sink", 8, "cow")])
def test_pipeline_takes_its_config_from_the_shared_script(mode, table_version, table_type):
    pytest.importorskip("pyarrow")
    from engine import pipeline_script as script
    from pipeline import coordinator

    cfg = {"mode": mode, "table_version": table_version, "table_type": table_type}
    got = coordinator.protocol_config(cfg, 120)
    assert got == script.protocol_config(mode, 120, table_version=table_version, table_type=table_type)
    assert got.faults == frozenset({"coordinator-crash"}) and got.parallelism == 1
    assert got.failed_writes == ("lazy" if mode == "async" else "eager")
    assert coordinator.TASK == script.TASK


def test_pipeline_script_spark_sink_commits_inside_the_batch():
    """spark-sink: the batch's instant is committed when the batch returns; the other modes commit it at the
    next batch start (the deliver-ack of batch_start)."""
    from engine import System
    from engine import pipeline_script as script

    for mode in script.MODES:
        s = System(script.protocol_config(mode, 4, crashes=False))
        evs = script.batch_start(s, s.apply) + script.batch_records(s, s.apply, 4)
        assert [e.kind for e in evs] == ["ingest"] * 4 + ["trigger-checkpoint", "request-instant"]
        after = script.after_write(s, s.apply, mode)
        committed = len(s.table.commit_log)
        if mode == "spark-sink":
            assert [e.kind for e in after] == ["snapshot-task", "complete-checkpoint", "deliver-ack"]
            assert committed == 1
        else:
            assert [e.kind for e in after] == ["snapshot-task"] and committed == 0
            settled = []
            nxt = script.batch_start(s, s.apply, settle=lambda: settled.append(len(s.table.commit_log)))
            assert [e.kind for e in nxt] == ["complete-checkpoint", "deliver-ack"] and settled == [1]


# ------------------------------------------------------------------------------------ N writer tasks on C cores
def test_makespan_and_task_shares():
    assert twin.makespan_unit([0.5, 0.5], 2) == pytest.approx(0.5)
    assert twin.makespan_unit([0.5, 0.5], 1) == pytest.approx(1.0)
    assert twin.makespan_unit([0.7, 0.2, 0.1], 2) == pytest.approx(0.7)
    assert twin.makespan_unit([0.25] * 4, 3) == pytest.approx(0.5)
    keys = [f"k{i:06d}" for i in range(1000)]
    sh = twin.task_shares(keys, 4, 2)
    from lakeio.hudiformat.bucket import bucket_id
    assert sh[0] == pytest.approx(sum(bucket_id(k, 4) % 2 == 0 for k in keys) / 1000)
    assert sum(sh) == pytest.approx(1.0)


@pytest.mark.parametrize("mode", twin.MODES)
@pytest.mark.parametrize("tasks,cores,shares,D", [(2, 2, None, 0.0), (2, 2, [0.7, 0.3], 0.05), (4, 2, None, 0.1),
                                                   (3, 1, [0.2, 0.3, 0.5], 0.0)])
def test_n_tasks_keep_the_cost_formula_and_the_invariants(mode, tasks, cores, shares, D):
    """The write is D + N tasks on C cores, calibrated so the job takes W: the batch costs stay W + 2L / W + L."""
    W, L, batches = 0.3, 0.25, 5
    r = twin.simulate(mode, batches, W, L, tasks=tasks, cores=cores, shares=shares, overhead_s=D)
    assert r.verdict == "ok" and r.commits == r.starts == batches
    expected = batches * (W + 2 * L) if mode == "blocking" else batches * (W + L) + L
    assert r.seconds == pytest.approx(expected)


def test_the_task_schedule_is_simulated():
    """The tasks really run on the cores resource: with the task work fixed, fewer cores make the job longer."""
    t2 = twin.PipelineTwin("async", 2, 0.4, 0.0, tasks=2, cores=2)
    assert t2.T == pytest.approx(0.8)  # two tasks of 0.4 s side by side
    t1 = twin.PipelineTwin("async", 2, 0.4, 0.0, tasks=2, cores=2)
    t1.cores = 1  # the same task work on one core: the tasks queue
    assert t1.run().seconds == pytest.approx(2 * 0.8)
    assert t2.run().seconds == pytest.approx(2 * 0.4)


def test_bad_task_settings_are_refused():
    for kw in ({"tasks": 0}, {"cores": 0}, {"tasks": 2, "shares": [1.0]}, {"tasks": 2, "shares": [0.9, 0.2]},
               {"overhead_s": 5.0}):
        with pytest.raises(ValueError):
            twin.PipelineTwin("async", 2, 0.4, 0.1, **kw)


def test_compare_with_n_tasks():
    lines = []
    res = twin.compare(ROWS, 50_000, 10, out=lines.append, tasks=2, cores=2, shares=[0.5, 0.5])
    plain = twin.compare(ROWS, 50_000, 10, out=[].append)
    assert "2 writer task(s) on 2 core(s)" in lines[0]
    assert [r["predicted_ratio"] for r in res] == pytest.approx([r["predicted_ratio"] for r in plain])
