"""``hoodie-lab replay``: verdicts, exit codes, and one-line errors for bad traces."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lakeio.traces import write_trace
from model.protocol import ProtocolConfig, variant
from engine import System
from model.trace import TRACE_VERSION, TraceError, parse_trace, to_lines, to_text

from test_protocol_scenarios import BOUNDS_19215, SCHEDULE_19215


def cli(*args):
    return subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "replay", *map(str, args)],
                          capture_output=True, text=True, timeout=60)


def good_trace(tmp_path):
    s = System(ProtocolConfig(parallelism=1, records=2, buffer_size=1, faults=frozenset()))
    events = []
    for _ in range(12):
        evs = s.enabled_events()
        if not evs:
            break
        s.apply(evs[0])
        events.append(evs[0])
    events += s.drain()
    return write_trace(tmp_path / "good.jsonl", s.config, events, seed=3, driver="manual"), events


def test_all_invariants_hold_exit_0(tmp_path):
    path, events = good_trace(tmp_path)
    r = cli(path)
    assert r.returncode == 0, r.stderr
    assert f"all invariants held over {len(events)} steps" in r.stdout


def test_counterexample_reports_invariant_step_and_explanation_exit_1(tmp_path):
    s = System(variant("bug-19215", **BOUNDS_19215))
    for ev in SCHEDULE_19215:
        s.apply(ev)
    events = SCHEDULE_19215 + s.drain()
    path = write_trace(tmp_path / "ce.jsonl", s.config, events, seed=0, driver="hypothesis")
    r = cli(path, "--state")
    assert r.returncode == 1, r.stderr
    assert "VIOLATED at step 5 (complete-checkpoint()): I12.state-coverage" in r.stdout
    assert "what:" in r.stdout and "why:" in r.stdout and "buffer key" in r.stdout
    j = cli(path, "--json")
    doc = json.loads(j.stdout)
    assert j.returncode == 1 and doc["violation"]["invariant"] == "I12.state-coverage" and doc["violation"]["step"] == 5


def _write(tmp_path, text, name="bad.jsonl"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _lines(tmp_path):
    return to_lines(ProtocolConfig(parallelism=1, faults=frozenset()), [], seed=0, driver="manual", trailer=False)


@pytest.mark.parametrize("mutate,line,needle", [
    (lambda h: [h, '{"step":1,"kind":"teleport"}'], 2, "unknown event kind 'teleport'"),
    (lambda h: [h, '{"step":1,"kind":"ingest","task":0}', '{"step":3,"kind":"ingest","task":0}'], 3, "step 3 where step 2"),
    (lambda h: [h, "{not json"], 2, "not valid JSON"),
    (lambda h: [h.replace(f'"version":{TRACE_VERSION}', f'"version":{TRACE_VERSION + 1}')], 1, "newer than this reader"),
    (lambda h: ['{"step":1,"kind":"ingest","task":0}'], 1, "not a hoodie-lab trace header"),
    (lambda h: [h.replace('"mode":"async"', '"mode":"psychic"')], 1, "bad config"),
    (lambda h: [h, '{"step":1,"kind":"ingest","task":0}', '{"end":5}'], 3, "trailer says 5 events"),
    (lambda h: [h, '{"step":1,"kind":"ingest"}'], 2, "missing field 'task'"),
])
def test_malformed_traces_exit_2_with_one_line(tmp_path, mutate, line, needle):
    (h,) = _lines(tmp_path)
    p = _write(tmp_path, "\n".join(mutate(h)) + "\n")
    r = cli(p)
    assert r.returncode == 2
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"{p}:{line}:" in err and needle in err, err


def test_truncated_last_line_exit_2(tmp_path):
    path, _ = good_trace(tmp_path)
    text = path.read_text()
    p = _write(tmp_path, text[: len(text) - 7], "cut.jsonl")
    r = cli(p)
    assert r.returncode == 2 and "truncated" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_event_the_model_refuses_exit_2(tmp_path):
    (h,) = _lines(tmp_path)
    p = _write(tmp_path, h + '\n{"step":1,"kind":"flush","task":0}\n{"end":1}\n')
    r = cli(p)
    assert r.returncode == 2 and f"{p}:2: step 1: the model refuses flush(task=0)" in r.stderr


def test_missing_file_and_empty_file_exit_2(tmp_path):
    r = cli(tmp_path / "nope.jsonl")
    assert r.returncode == 2 and "no such file" in r.stderr
    r = cli(_write(tmp_path, ""))
    assert r.returncode == 2 and ":1: empty trace" in r.stderr


def test_trace_format_round_trip_pure():
    cfg = variant("hudi-1.1-blocking", parallelism=2)
    s = System(cfg)
    events = []
    for _ in range(10):
        ev = s.enabled_events()[-1]
        s.apply(ev)
        events.append(ev)
    t = parse_trace(to_text(cfg, events, seed=7, driver="simulate", note="x"))
    assert t.config == cfg and t.events == events and t.seed == 7 and t.driver == "simulate"
    assert t.header["note"] == "x" and t.trailer == len(events) and t.lines[0] == 2
    with pytest.raises(TraceError) as e:
        parse_trace("")
    assert e.value.line == 1


# ------------------------------------------------------------------ the end marker
def test_every_whole_trace_ends_with_its_end_marker(tmp_path):
    path, events = good_trace(tmp_path)
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["version"] == TRACE_VERSION == 2 and "write_ahead" not in json.loads(lines[0])
    assert json.loads(lines[-1]) == {"end": len(events)}


def test_a_trace_cut_at_a_line_boundary_is_refused(tmp_path):
    path, events = good_trace(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    for keep in (1, 3, len(lines) - 1):  # header only, two events, every event but no end marker
        p = _write(tmp_path, "".join(lines[:keep]), f"cut{keep}.jsonl")
        with pytest.raises(TraceError, match="no end marker"):
            parse_trace(p.read_text())
        r = cli(p)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert f"{p}: no end marker" in r.stderr and "may be truncated" in r.stderr and r.stdout == ""


def _pipeline_log(tmp_path, version=TRACE_VERSION, name="trace.jsonl"):
    """A write-ahead log as the pipeline appends it: header(driver="pipeline") + event lines, no marker."""
    from model.trace import dumps, event_record, header

    path, events = good_trace(tmp_path)
    cfg = parse_trace(path.read_text()).config
    h = header(cfg, 3, "pipeline")
    h["version"] = version
    if version == 1:
        h.pop("write_ahead", None)
    text = "\n".join([dumps(h)] + [dumps(event_record(i, e)) for i, e in enumerate(events, 1)]) + "\n"
    return _write(tmp_path, text, name), events


def test_a_write_ahead_log_replays_without_end_marker_with_a_warning(tmp_path):
    p, events = _pipeline_log(tmp_path)
    t = parse_trace(p.read_text())
    assert t.header["write_ahead"] is True and t.write_ahead and not t.complete
    r = cli(p)
    assert r.returncode == 0, r.stderr
    assert f"all invariants held over {len(events)} steps" in r.stdout
    assert len(r.stderr.strip().splitlines()) == 1 and "warning" in r.stderr and "without an end marker" in r.stderr
    j = cli(p, "--json")
    assert j.returncode == 0 and json.loads(j.stdout)["complete"] is False
    # with its end marker it is complete: no warning
    q = _write(tmp_path, p.read_text() + json.dumps({"end": len(events)}) + "\n", "closed.jsonl")
    r = cli(q)
    assert r.returncode == 0 and r.stderr == "" and parse_trace(q.read_text()).complete


def test_version_1_traces_still_read(tmp_path):
    path, events = good_trace(tmp_path)
    text = path.read_text().replace(f'"version":{TRACE_VERSION}', '"version":1', 1)
    assert cli(_write(tmp_path, text, "v1.jsonl")).returncode == 0  # with its end marker: complete
    cut = text[: text.rindex('{"end"')]
    r = cli(_write(tmp_path, cut, "v1cut.jsonl"))  # a version-1 whole trace without it: refused
    assert r.returncode == 2 and "no end marker" in r.stderr
    p, _ = _pipeline_log(tmp_path, version=1, name="v1pipe.jsonl")  # the pipeline's v1 log: a write-ahead log
    assert parse_trace(p.read_text()).write_ahead
    r = cli(p)
    assert r.returncode == 0 and "warning" in r.stderr, r.stderr


def test_the_writers_of_each_driver_close_their_traces(tmp_path):
    """explore, simulate and the Hypothesis suites write through lakeio.traces.write_trace (to_text):
    the end marker; the pipeline's header says write_ahead (its log is never closed)."""
    from model.trace import header

    cfg = ProtocolConfig(parallelism=1, faults=frozenset())
    for driver in ("hypothesis", "explore", "simulate", "manual"):
        p = write_trace(tmp_path / f"{driver}.jsonl", cfg, [], seed=1, driver=driver)
        t = parse_trace(p.read_text())
        assert t.complete and not t.write_ahead, driver
    assert header(cfg, 0, "pipeline")["write_ahead"] is True
    assert "write_ahead" not in header(cfg, 0, "explore")
