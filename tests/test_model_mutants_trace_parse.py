"""Focused tests for model.trace's reader and writer that `make mutate` showed unchecked by the fast tests
(the malformed-trace checks live in tests/test_bad_input.py, outside the mutation selection): every
TraceError's line number and exact problem, the header's checks, the end marker, and the writer's lines."""

from __future__ import annotations

import json

import pytest

from model.protocol.config import ProtocolConfig
from model.protocol.events import DeliverAck, Ingest, TriggerCheckpoint
from model.trace import (DRIVERS, TRACE_VERSION, Trace, TraceError, dumps, event_record, header, parse_event,
                         parse_header, parse_trace, to_lines, to_text)

CFG = ProtocolConfig()
HDR = header(CFG, 7, "explore")
EV1 = {"step": 1, "kind": "ingest", "task": 0}


def text(*objs, end=True) -> str:
    lines = [o if isinstance(o, str) else json.dumps(o) for o in objs]
    return "\n".join(lines) + ("\n" if end else "")


def err(t: str) -> TraceError:
    with pytest.raises(TraceError) as e:
        parse_trace(t)
    return e.value


# ------------------------------------------------------------------ writing
def test_header_fields_and_checks():
    assert HDR == {"trace": "hoodie-lab", "version": TRACE_VERSION, "config": CFG.to_dict(), "seed": 7,
                   "driver": "explore"}
    assert list(HDR) == ["trace", "version", "config", "seed", "driver"]
    assert header(CFG) == {"trace": "hoodie-lab", "version": 2, "config": CFG.to_dict(), "seed": None,
                           "driver": "manual"}
    assert header(CFG, 1, "pipeline")["write_ahead"] is True
    assert header(CFG, 1, "pipeline", write_ahead=False).get("write_ahead", "absent") == "absent"
    assert header(CFG, 1, "explore", write_ahead=True)["write_ahead"] is True
    assert header(CFG, 1, "explore", variant="v", note="n")["variant"] == "v"
    with pytest.raises(ValueError) as e:
        header(CFG, 1, "nope")
    assert str(e.value) == "driver 'nope' is not one of " + ", ".join(DRIVERS)
    with pytest.raises(ValueError) as e:
        header(CFG, 1, "explore", trace="x")
    assert str(e.value) == "header key 'trace' is reserved"


def test_writer_lines_event_records_and_end_marker():
    assert event_record(3, Ingest(1), t=5) == {"step": 3, "kind": "ingest", "task": 1, "t": 5}
    assert list(event_record(3, Ingest(1))) == ["step", "kind", "task"]
    assert dumps({"a": 1, "b": [1, 2]}) == '{"a":1,"b":[1,2]}'
    assert dumps({"b": 1, "a": 2}) == '{"b":1,"a":2}'
    lines = to_lines(CFG, [Ingest(0), TriggerCheckpoint()], seed=4, driver="explore", variant="x")
    assert len(lines) == 4
    assert json.loads(lines[0]) == header(CFG, 4, "explore", variant="x")
    assert lines[1] == '{"step":1,"kind":"ingest","task":0}'
    assert lines[2] == '{"step":2,"kind":"trigger-checkpoint"}'
    assert lines[3] == '{"end":2}'
    assert to_lines(CFG, [], driver="manual")[1:] == ['{"end":0}']
    assert to_lines(CFG, [Ingest(0)], trailer=False)[-1] == '{"step":1,"kind":"ingest","task":0}'
    # the pipeline driver writes whole traces through to_lines unless it asks for a write-ahead log
    assert "write_ahead" not in json.loads(to_lines(CFG, [], driver="pipeline")[0])
    assert json.loads(to_lines(CFG, [], driver="explore", write_ahead=True)[0])["write_ahead"] is True
    t = to_text(CFG, [Ingest(0)], 2, "explore", variant="y")
    assert t == "\n".join(to_lines(CFG, [Ingest(0)], 2, "explore", variant="y")) + "\n"
    tr = parse_trace(t)
    assert (tr.seed, tr.driver, tr.events, tr.lines, tr.trailer, tr.complete) == (2, "explore", [Ingest(0)], [2], 1, True)
    assert tr.header["variant"] == "y" and not tr.drained and not tr.write_ahead


# ------------------------------------------------------------------ reading: lines
def test_empty_and_blank_lines():
    for t in ("", "  \n", "\n"):
        e = err(t)
        assert (e.line, e.problem) == (1, "empty trace: no header line")
    e = err(text(HDR, "", EV1, {"end": 1}))
    assert (e.line, e.problem) == (2, "empty line")
    e = err(text(HDR, "   ", EV1, {"end": 1}))
    assert (e.line, e.problem) == (2, "empty line")
    # a blank last line is the end of the file, not an error (terminated or not)
    assert parse_trace(text(HDR, EV1, {"end": 1}) + "\n").complete
    tr = parse_trace(text(HDR, EV1, {"end": 1}) + "  ")
    assert tr.complete and len(tr.events) == 1


def test_bad_json_and_truncated_last_line():
    e = err(text(HDR, '{"step": 1,', {"end": 1}))
    assert e.line == 2 and e.problem.startswith("not valid JSON (") and "at column" in e.problem
    assert e.problem == "not valid JSON (Expecting property name enclosed in double quotes at column 12)"
    e = err(text(HDR, '{"step": 1, "ki', end=False))
    assert e.line == 2 and e.problem.startswith("truncated: the last line is incomplete (")
    assert e.problem == "truncated: the last line is incomplete (Unterminated string starting at)"
    # the same broken line, terminated by a newline, is bad JSON (not a truncation)
    e = err(text(HDR, '{"step": 1, "ki', end=True))
    assert e.problem.startswith("not valid JSON")
    # a broken line before the last one of an unterminated text is bad JSON too
    e = err(text(HDR, '{"step": 1, "ki', '{"end": 0}', end=False))
    assert e.line == 2 and e.problem.startswith("not valid JSON")
    e = err(text(HDR, "[" * 100000 + "]" * 100000))
    assert (e.line, e.problem) == (2, "JSON nested too deeply to be a trace line")
    e = err(text(HDR, "[1]", {"end": 0}))
    assert (e.line, e.problem) == (2, "expected a JSON object")
    e = err(text("3"))
    assert (e.line, e.problem) == (1, "expected a JSON object")


def test_unterminated_complete_trace_is_read():
    tr = parse_trace(text(HDR, EV1, {"end": 1}, end=False))
    assert tr.complete and tr.events == [Ingest(0)] and tr.lines == [2]


# ------------------------------------------------------------------ reading: header
@pytest.mark.parametrize("change, problem", [
    ({"trace": "other"}, 'not a hoodie-lab trace header (expected "trace": "hoodie-lab")'),
    ({"version": "2"}, "bad version '2'"),
    ({"version": True}, "bad version True"),
    ({"version": 0}, "bad version 0"),
    ({"version": -1}, "bad version -1"),
    ({"version": 3}, "trace version 3 is newer than this reader's (2); upgrade hoodie-lab"),
    ({"driver": "nope"}, "driver 'nope' is not one of " + ", ".join(DRIVERS)),
    ({"seed": "1"}, "seed '1' is not an integer or null"),
    ({"seed": True}, "seed True is not an integer or null"),
    ({"seed": 1.5}, "seed 1.5 is not an integer or null"),
    ({"write_ahead": 1}, "write_ahead 1 is not true or false"),
    ({"write_ahead": None}, "write_ahead None is not true or false"),
])
def test_header_problems(change, problem):
    h = dict(HDR, **change)
    e = err(text(h, EV1, {"end": 1}))
    assert (e.line, e.problem) == (1, problem)
    with pytest.raises(TraceError) as e2:
        parse_header(h, 5)
    assert (e2.value.line, e2.value.problem) == (5, problem)
    with pytest.raises(TraceError) as e3:
        parse_header(h)
    assert e3.value.line == 1


def test_header_without_trace_key_or_config():
    h = dict(HDR)
    del h["trace"]
    assert err(text(h, {"end": 0})).problem.startswith("not a hoodie-lab trace header")
    h = dict(HDR)
    del h["version"]
    assert err(text(h, {"end": 0})).problem == "bad version None"
    h = dict(HDR)
    del h["driver"]
    assert err(text(h, {"end": 0})).problem == "driver None is not one of " + ", ".join(DRIVERS)
    h = dict(HDR)
    del h["config"]
    e = err(text(h, {"end": 0}))
    assert (e.line, e.problem) == (1, "header has no config")
    e = err(text(dict(HDR, config={"tasks": "many"}), {"end": 0}))
    assert e.line == 1 and e.problem.startswith("bad config: ")
    e = err(text(dict(HDR, config=[1]), {"end": 0}))
    assert e.line == 1 and e.problem.startswith("bad config: ")


def test_header_accepts_every_version_and_driver_and_null_seed():
    for v in (1, 2):
        for d in DRIVERS:
            cfg, seed, driver = parse_header(dict(HDR, version=v, driver=d, seed=None))
            assert (cfg, seed, driver) == (CFG, None, d)
    cfg, seed, driver = parse_header(dict(HDR, seed=0, write_ahead=False))
    assert seed == 0 and driver == "explore" and cfg == CFG
    parse_header(dict(HDR, write_ahead=True))


# ------------------------------------------------------------------ reading: events and end marker
def test_event_problems():
    with pytest.raises(TraceError) as e:
        parse_event({"kind": "ingest", "task": 0}, 4, 1)
    assert (e.value.line, e.value.problem) == (4, "event line has no integer step (None)")
    with pytest.raises(TraceError) as e:
        parse_event({"step": True, "kind": "ingest", "task": 0}, 4, 1)
    assert e.value.problem == "event line has no integer step (True)"
    with pytest.raises(TraceError) as e:
        parse_event({"step": "1", "kind": "ingest", "task": 0}, 4, 1)
    assert e.value.problem == "event line has no integer step ('1')"
    with pytest.raises(TraceError) as e:
        parse_event({"step": 2, "kind": "ingest", "task": 0}, 4, 1)
    assert (e.value.line, e.value.problem) == (4, "step 2 where step 1 was expected (missing or reordered lines)")
    with pytest.raises(TraceError) as e:
        parse_event({"step": 1, "kind": "nope"}, 4, 1)
    assert (e.value.line, e.value.problem) == (4, "unknown event kind 'nope'")
    with pytest.raises(TraceError) as e:
        parse_event({"step": 1, "kind": 3}, 4, 1)
    assert e.value.problem == "unknown event kind 3"
    with pytest.raises(TraceError) as e:
        parse_event({"step": 1}, 4, 1)
    assert e.value.problem == "unknown event kind None"
    with pytest.raises(TraceError) as e:
        parse_event({"step": 1, "kind": "ingest"}, 4, 1)
    assert (e.value.line, e.value.problem) == (4, "event ingest: missing field 'task'")
    with pytest.raises(TraceError) as e:
        parse_event({"step": 1, "kind": "ingest", "task": 0, "tx": 1, "y": 2}, 4, 1)
    assert e.value.problem == "event ingest: unexpected field(s) tx, y"


def test_event_ignores_t_and_x_keys_only():
    assert parse_event({"step": 1, "kind": "ingest", "task": 2, "t": 10, "x_note": "a", "x_": 0}, 4, 1) == Ingest(2)
    assert parse_event({"step": 3, "kind": "deliver-ack", "checkpoint": 2}, 9, 3) == DeliverAck(2)
    with pytest.raises(TraceError):
        parse_event({"step": 1, "kind": "ingest", "task": 2, "ty": 10}, 4, 1)
    with pytest.raises(TraceError):
        parse_event({"step": 1, "kind": "ingest", "task": 2, "X_a": 10}, 4, 1)
    with pytest.raises(TraceError):
        parse_event({"step": 1, "kind": "ingest", "task": 2, "note_x_": 10}, 4, 1)


def test_events_are_numbered_from_one_without_gaps():
    e = err(text(HDR, dict(EV1, step=2), {"end": 1}))
    assert (e.line, e.problem) == (2, "step 2 where step 1 was expected (missing or reordered lines)")
    e = err(text(HDR, EV1, dict(EV1, step=3), {"end": 2}))
    assert (e.line, e.problem) == (3, "step 3 where step 2 was expected (missing or reordered lines)")
    tr = parse_trace(text(HDR, EV1, dict(EV1, step=2, task=1), {"end": 2}))
    assert tr.events == [Ingest(0), Ingest(1)] and tr.lines == [2, 3] and tr.trailer == 2


@pytest.mark.parametrize("end, shown", [(2, "2"), (0, "0"), ("1", "'1'"), (True, "True"), (None, "None")])
def test_end_marker_must_count_the_events(end, shown):
    e = err(text(HDR, EV1, {"end": end}))
    assert (e.line, e.problem) == (3, f"trailer says {shown} events but the trace has 1 (truncated?)")


def test_end_marker_is_the_last_line_and_an_end_key_with_a_step_is_an_event():
    e = err(text(HDR, EV1, {"end": 1}, EV1))
    assert (e.line, e.problem) == (4, 'line after the trailer {"end": ...}')
    e = err(text(HDR, {"end": 0}, {"end": 0}))
    assert (e.line, e.problem) == (3, 'line after the trailer {"end": ...}')
    e = err(text(HDR, dict(EV1, end=1), {"end": 1}))
    assert e.line == 2 and e.problem == "event ingest: unexpected field(s) end"
    tr = parse_trace(text(HDR, {"end": 0}))
    assert tr.complete and tr.trailer == 0 and tr.events == []


def test_missing_end_marker():
    e = err(text(HDR, EV1, dict(EV1, step=2)))
    assert e.line == 0
    assert e.problem == ('no end marker {"end": N} after the last line (3, 2 events): the trace may be truncated')
    assert str(e) == e.problem
    e = err(text(HDR))
    assert e.problem == ('no end marker {"end": N} after the last line (1, 0 events): the trace may be truncated')
    tr = parse_trace(text(dict(HDR, write_ahead=True), EV1))
    assert not tr.complete and tr.trailer is None and tr.write_ahead and tr.events == [Ingest(0)]


def test_trace_properties():
    tr = Trace(CFG, None, "manual", {"version": 2})
    assert tr.events == [] and tr.lines == [] and tr.trailer is None
    assert not tr.complete and not tr.drained and not tr.write_ahead
    tr2 = Trace(CFG, None, "manual", {})
    tr2.events.append(Ingest(0))
    assert tr.events == []  # each trace has its own list
    tr = parse_trace(to_text(CFG, [Ingest(0), TriggerCheckpoint()]))
    assert not tr.drained
    from model.protocol.events import StopFaults
    assert parse_trace(to_text(CFG, [Ingest(0), StopFaults()])).drained


class _Recorder:
    """A machine that records how replay calls it and refuses events of one kind."""

    def __init__(self, refuse: str = ""):
        self.refuse, self.inits = refuse, []

    def init(self, config, *, seed=1234, time_source=None):
        self.inits.append((config, seed, time_source))
        return 0

    def step(self, state, ev):
        if ev.kind == self.refuse:
            from model.errors import RuleViolation
            raise RuleViolation("R.rule", "not now")
        return state + 1


def test_replay_passes_config_seed_and_time_source_and_stops_where_asked():
    tr = parse_trace(to_text(CFG, [Ingest(0), Ingest(1), TriggerCheckpoint()], seed=5))
    m = _Recorder()
    assert tr.replay(m, time_source="clock") == 3
    assert m.inits == [(CFG, 5, "clock")]
    tr.seed = None
    assert tr.replay(m) == 3 and m.inits[-1] == (CFG, 0, None)
    seen = []
    assert tr.replay(m, on_step=lambda step, ev, s: seen.append((step, ev, s)) or step == 2) == 2
    assert seen == [(1, Ingest(0), 1), (2, Ingest(1), 2)]


def test_replay_names_the_refused_events_line():
    tr = parse_trace(to_text(CFG, [Ingest(0), TriggerCheckpoint()], seed=5))
    with pytest.raises(TraceError) as e:
        tr.replay(_Recorder(refuse="trigger-checkpoint"))
    assert (e.value.line, e.value.problem) == (3, "step 2: the model refuses trigger-checkpoint(): not now")
    # a trace built in memory has no line numbers: the error names line 0
    built = Trace(CFG, 1, "manual", {}, events=[Ingest(0), TriggerCheckpoint()], lines=[2])
    with pytest.raises(TraceError) as e:
        built.replay(_Recorder(refuse="trigger-checkpoint"))
    assert (e.value.line, e.value.problem) == (0, "step 2: the model refuses trigger-checkpoint(): not now")
    built = Trace(CFG, 1, "manual", {}, events=[TriggerCheckpoint()], lines=[7])
    with pytest.raises(TraceError) as e:
        built.replay(_Recorder(refuse="trigger-checkpoint"))
    assert e.value.line == 7


def test_to_lines_defaults():
    assert json.loads(to_lines(CFG, [])[0]) == header(CFG)
    assert json.loads(to_text(CFG, []).split("\n")[0]) == header(CFG)
    assert to_text(CFG, [Ingest(0)]).endswith('\n{"end":1}\n')
