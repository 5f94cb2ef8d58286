"""``Trace.replay`` (model/trace.py): the one replay loop every driver uses -- the trace's events through a
machine (the engine, the spec), ``on_step`` to stop early, a refused event as a TraceError naming its line.
Runtime: about a second."""

from __future__ import annotations

import random

import pytest

from engine import System
from model.protocol import DeliverAck, Ingest, ProtocolConfig, variant
from model.trace import Trace, TraceError, parse_trace, to_text

from test_protocol_scenarios import BOUNDS_19215, SCHEDULE_19215

CONFIGS = [
    ProtocolConfig(parallelism=1, records=2, buffer_size=1, faults=frozenset()),
    ProtocolConfig(parallelism=2, records=3, buffer_size=2),
    ProtocolConfig(mode="blocking", failed_writes="eager", parallelism=2, records=2, table_version=6),
]


def engine_machine():
    from engine.machine import ENGINE
    return ENGINE


def _abstract(system):
    """What two engine states are compared by: the refinement's abstract state when there is one, else the
    fingerprint."""
    try:
        from engine.refinement import abstract
    except ImportError:
        return system.fingerprint()
    return abstract(system)


def random_run(config: ProtocolConfig, seed: int, steps: int = 40) -> list:
    rng = random.Random(seed)
    s = System(config, seed=seed)
    events = []
    for _ in range(steps):
        evs = s.enabled_events()
        if not evs:
            break
        ev = rng.choice(evs)
        s.apply(ev)
        events.append(ev)
    return events + s.drain()


def trace_of(config, events, seed=0) -> Trace:
    return parse_trace(to_text(config, events, seed=seed, driver="manual"))


def by_hand(config, events, seed=0) -> System:
    s = System(config, seed=seed)
    for e in events:
        s.apply(e)
    return s


@pytest.mark.parametrize("config", CONFIGS, ids=["p1", "p2-faults", "blocking-v6"])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_engine_replay_is_applying_the_events_by_hand(config, seed):
    events = random_run(config, seed)
    tr = trace_of(config, events, seed=seed)
    state = tr.replay(engine_machine())
    assert isinstance(state, System)
    assert _abstract(state) == _abstract(by_hand(config, events, seed))
    assert state.fingerprint() == by_hand(config, events, seed).fingerprint()
    assert state.table.commit_log == by_hand(config, events, seed).table.commit_log


def test_a_null_seed_replays_as_seed_0():
    cfg = CONFIGS[1]
    events = random_run(cfg, 0)
    tr = trace_of(cfg, events, seed=None)
    assert tr.seed is None
    assert tr.replay(engine_machine()).fingerprint() == by_hand(cfg, events, 0).fingerprint()


def test_on_step_sees_every_step_and_stops_early():
    cfg = CONFIGS[1]
    events = random_run(cfg, 3)
    assert len(events) > 6
    tr = trace_of(cfg, events)
    seen = []
    state = tr.replay(engine_machine(), on_step=lambda n, ev, st: seen.append((n, ev, st.step_count)))
    assert [(n, ev) for n, ev, _ in seen] == list(enumerate(events, 1))
    assert state.fingerprint() == by_hand(cfg, events).fingerprint()

    seen.clear()
    state = tr.replay(engine_machine(), on_step=lambda n, ev, st: seen.append(n) or n == 5)
    assert seen == [1, 2, 3, 4, 5]
    assert state.fingerprint() == by_hand(cfg, events[:5]).fingerprint()


def test_on_step_stops_at_the_first_violation():
    """What checker.replay does with it: stop where the step invariants first fail (bug-19215: step 5)."""
    from engine.invariants import check_step

    s = System(variant("bug-19215", **BOUNDS_19215))
    for ev in SCHEDULE_19215:
        s.apply(ev)
    tr = trace_of(s.config, SCHEDULE_19215 + s.drain())
    stops = []

    def first_bad(n, ev, st):
        if any(not v.holds for v in check_step(st)):
            stops.append(n)
            return True
        return False

    tr.replay(engine_machine(), on_step=first_bad)
    assert stops == [5]


def test_time_source_reaches_the_machine():
    class Clock:
        def __init__(self):
            self.n = 0

        def next_time(self, kind="requested"):
            self.n += 1
            return f"2030010100000{self.n:04d}"

        def copy(self):
            return self

    cfg = CONFIGS[0]
    events = random_run(cfg, 0)
    clock = Clock()
    state = trace_of(cfg, events).replay(engine_machine(), time_source=clock)
    assert clock.n > 0
    assert all(t.startswith("2030") for t, _k, _h in state.table.commit_log)


@pytest.mark.parametrize("at", [0, 3])
def test_a_refused_event_is_a_trace_error_naming_its_line(at):
    cfg = CONFIGS[0]
    good = random_run(cfg, 0)[:at]
    text = to_text(cfg, good + [DeliverAck(99)] + [Ingest(0)], driver="manual")
    tr = parse_trace(text)
    with pytest.raises(TraceError) as exc:
        tr.replay(engine_machine())
    step = at + 1
    assert exc.value.line == step + 1 == tr.lines[at]           # line 1 is the header
    assert exc.value.problem.startswith(f"step {step}: the model refuses deliver-ack(checkpoint=99): ")
    assert str(exc.value).startswith(f"line {step + 1}: step {step}: the model refuses")


def test_a_refusal_stops_before_on_step():
    tr = parse_trace(to_text(CONFIGS[0], [Ingest(5)], driver="manual"))
    calls = []
    with pytest.raises(TraceError, match="step 1: the model refuses ingest"):
        tr.replay(engine_machine(), on_step=lambda *a: calls.append(a))
    assert calls == []


# ------------------------------------------------------------------------------------------- the spec
def _spec():
    return pytest.importorskip("model.protocol.spec", reason="the readable spec (model/protocol/spec.py) "
                                                             "is not written yet").SPEC


@pytest.mark.parametrize("config", CONFIGS, ids=["p1", "p2-faults", "blocking-v6"])
@pytest.mark.parametrize("seed", [0, 5])
def test_spec_replay_is_the_default_and_agrees_with_the_engine(config, seed):
    spec = _spec()
    from model.protocol.spec import view

    events = random_run(config, seed)
    tr = trace_of(config, events, seed=seed)
    state = tr.replay()                      # machine=None: the spec
    assert view(tr.replay(spec)) == view(state)
    engine_state = tr.replay(engine_machine())
    assert [(v.invariant, v.holds) for v in spec.check_step(state)] == \
           [(v.invariant, v.holds) for v in engine_machine().check_step(engine_state)]
    try:
        from engine.refinement import abstract
    except ImportError:
        return
    assert abstract(engine_state) == view(state)


def test_spec_on_step_gets_the_spec_states():
    _spec()
    from model.protocol.spec import view

    cfg = CONFIGS[1]
    events = random_run(cfg, 2)
    tr = trace_of(cfg, events)
    views = []
    tr.replay(on_step=lambda n, ev, st: views.append(view(st)) or n == 4)
    assert len(views) == 4
    assert views[-1] == view(trace_of(cfg, events[:4]).replay())


def test_spec_refuses_like_the_engine():
    _spec()
    tr = parse_trace(to_text(CONFIGS[0], [Ingest(0), DeliverAck(99)], driver="manual"))
    with pytest.raises(TraceError) as exc:
        tr.replay()
    assert exc.value.line == 3 and exc.value.problem.startswith("step 2: the model refuses deliver-ack")
