"""The protocol state machine for Hypothesis, shared by the protocol property suites.

:func:`machine_for` builds a ``RuleBasedStateMachine`` over the protocol spec (:data:`model.protocol.SPEC`:
immutable states, :func:`model.protocol.spec.step`) with one rule per action kind (faults included, so every fault interleaves with normal steps;
Hypothesis picks a rule among those whose precondition holds, then an enabled event of that
kind). After every step it checks :func:`model.invariants.protocol.check_step`; at teardown it
drains the run (faults stop, checkpoints run with delivered acks until quiescent) and checks
:func:`~model.invariants.protocol.check_drained`. A violation writes the run as a replayable
trace and fails with the ``hoodie-lab replay <file>`` command in the message (Hypothesis reruns
the shrunk example last, so the file holds the shrunk counterexample).

Every step is counted in :data:`STEPS` (the deep profile reports the total).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from checker.replay import replay, shrink_events
from lakeio.traces import load_trace, write_trace
from model.invariants.protocol import check_drained, check_step
from model.protocol import ProtocolConfig, spec
from model.protocol import events as E
from model.protocol.state import committed_offsets, queued_request

#: Steps executed by every machine in this process (all suites).
STEPS = {"count": 0}

#: Default bounds of the suites: small enough to explore deeply, big enough for every fault.
SUITE_BOUNDS = dict(parallelism=2, records=4, buffer_size=2, max_checkpoints=5, max_crashes=2)

_KINDS = ("ingest", "request-instant", "flush", "trigger-checkpoint", "snapshot-task", "complete-checkpoint",
          "deliver-ack", "clean", "instant-timeout", "lose-ack", "abort-checkpoint", "crash-task",
          "crash-coordinator", "restart-job", "run-job", "request-expired")


def counterexample_dir() -> Path:
    d = Path(os.environ.get("HOODIE_LAB_COUNTEREXAMPLES", Path(tempfile.gettempdir()) / "hoodie-lab-counterexamples"))
    d.mkdir(parents=True, exist_ok=True)
    return d


class CounterexampleFound(AssertionError):
    """An invariant failed; ``trace`` is the file holding the run."""

    def __init__(self, message: str, invariant: str, trace: Path):
        super().__init__(message)
        self.invariant = invariant
        self.trace = trace


class ProtocolMachine(RuleBasedStateMachine):
    """Base machine; subclasses set ``CONFIG``, ``NAME`` and optionally ``ONLY`` (invariant ids
    to check -- the others are ignored, so a test can target one invariant)."""

    CONFIG: ProtocolConfig = ProtocolConfig()
    NAME = "protocol"
    ONLY: tuple = ()
    TRACE_DIR: Path | None = None

    def __init__(self):
        super().__init__()
        self.state = spec.init(self.CONFIG)
        self.events: list = []
        self._cache_step = -1
        self._cache: dict = {}

    # -------------------------------------------------------------- helpers
    def _enabled(self) -> dict:
        if self._cache_step != self.state.history.steps:
            by: dict = {}
            for ev in spec.enabled(self.state):
                by.setdefault(ev.kind, []).append(ev)
            self._cache, self._cache_step = by, self.state.history.steps
        return self._cache

    def _step(self, data, kind: str) -> None:
        choices = self._enabled()[kind]
        ev = choices[0] if len(choices) == 1 else data.draw(st.sampled_from(choices), label=kind)
        self._apply(ev)

    def _apply(self, ev) -> None:
        self.state = spec.step(self.state, ev)
        self.events.append(ev)
        STEPS["count"] += 1

    def _fail_if(self, verdicts, where: str) -> None:
        bad = [v for v in verdicts if not v.holds and (not self.ONLY or v.invariant in self.ONLY)]
        if not bad:
            return
        v = bad[0]
        d = self.TRACE_DIR or counterexample_dir()
        path = write_trace(Path(d) / f"{self.NAME}.jsonl", self.CONFIG, self.events, seed=0,
                           driver="hypothesis", variant=self.NAME)
        raise CounterexampleFound(
            f"{v.invariant} violated {where} after {len(self.events)} events: {v.detail}\n"
            f"shrunk counterexample written to {path}\nreplay it with:  hoodie-lab replay {path}",
            v.invariant, path)

    # ---------------------------------------------------------------- rules
    def _has(kind):  # noqa: N805 - used at class creation
        return lambda self: kind in self._enabled()

    @precondition(_has("ingest"))
    @rule(data=st.data())
    def ingest(self, data):
        self._step(data, "ingest")

    @precondition(_has("request-instant"))
    @rule(data=st.data())
    def request_instant(self, data):
        self._step(data, "request-instant")

    @precondition(_has("flush"))
    @rule(data=st.data())
    def flush(self, data):
        self._step(data, "flush")

    @precondition(_has("trigger-checkpoint"))
    @rule(data=st.data())
    def trigger_checkpoint(self, data):
        self._step(data, "trigger-checkpoint")

    @precondition(_has("snapshot-task"))
    @rule(data=st.data())
    def snapshot_task(self, data):
        self._step(data, "snapshot-task")

    @precondition(_has("complete-checkpoint"))
    @rule(data=st.data())
    def complete_checkpoint(self, data):
        self._step(data, "complete-checkpoint")

    @precondition(_has("deliver-ack"))
    @rule(data=st.data())
    def deliver_ack(self, data):
        self._step(data, "deliver-ack")

    @precondition(_has("clean"))
    @rule(data=st.data())
    def clean(self, data):
        self._step(data, "clean")

    @precondition(_has("deliver-event"))
    @rule(data=st.data())
    def deliver_event(self, data):
        self._step(data, "deliver-event")

    @precondition(_has("lose-event"))
    @rule(data=st.data())
    def lose_event(self, data):
        self._step(data, "lose-event")

    @precondition(_has("request-timeout"))
    @rule(data=st.data())
    def request_timeout(self, data):
        self._step(data, "request-timeout")

    @precondition(_has("instant-timeout"))
    @rule(data=st.data())
    def instant_timeout(self, data):
        self._step(data, "instant-timeout")

    @precondition(_has("run-job"))
    @rule(data=st.data())
    def run_job(self, data):
        self._step(data, "run-job")

    @precondition(_has("request-expired"))
    @rule(data=st.data())
    def request_expired(self, data):
        self._step(data, "request-expired")

    # faults
    @precondition(_has("lose-ack"))
    @rule(data=st.data())
    def lose_ack(self, data):
        self._step(data, "lose-ack")

    @precondition(_has("abort-checkpoint"))
    @rule(data=st.data())
    def abort_checkpoint(self, data):
        self._step(data, "abort-checkpoint")

    @precondition(_has("crash-task"))
    @rule(data=st.data())
    def crash_task(self, data):
        self._step(data, "crash-task")

    @precondition(_has("crash-coordinator"))
    @rule(data=st.data())
    def crash_coordinator(self, data):
        self._step(data, "crash-coordinator")

    @precondition(_has("restart-job"))
    @rule(data=st.data())
    def restart_job(self, data):
        self._step(data, "restart-job")

    @precondition(lambda self: "trigger-checkpoint" in self._enabled()
                  or self.state.pending is not None)
    @rule(partial=st.integers(0, 3))
    def run_checkpoint(self, partial):
        """Macro step (plain events, so traces stay fine-grained): complete the pending checkpoint
        or trigger one, each task getting an instant and snapshotting, when nothing blocks.
        It makes multi-checkpoint histories likely, where the interesting faults live.
        ``partial`` = 1 stops after the first task's snapshot (a checkpoint in progress)."""
        if self.state.pending is None:
            self._apply(next(e for e in spec.enabled(self.state) if e.kind == "trigger-checkpoint"))
        for t in range(self.CONFIG.parallelism):
            if partial == 1 and t == 1:
                return
            p = self.state.pending
            if p is None or p.tasks[t] is not None:
                continue
            for kind in ("request-instant", "snapshot-task"):
                ev = next((e for e in spec.enabled(self.state) if e.kind == kind and e.task == t), None)
                if ev is not None:
                    self._apply(ev)
                # executor queue: the coordinator runs the jobs up to the task's request (unless a slow job
                # holds it: the run_job / request_expired rules decide then)
                while (kind == "request-instant" and queued_request(self.state, t) is not None
                       and "run-job" in self._enabled()):
                    self._apply(E.RunJob())
        for t in range(self.CONFIG.parallelism):  # async event delivery: the messages in flight arrive
            while self.state.channels[t]:
                self._apply(E.DeliverEvent(t))
        ev = next((e for e in spec.enabled(self.state) if e.kind == "complete-checkpoint"), None)
        if ev is not None:
            self._apply(ev)

    @precondition(lambda self: not self._enabled())
    @rule()
    def nothing_enabled(self):
        """A terminal state (no event enabled): nothing happens; teardown drains."""

    # ----------------------------------------------------------- invariants
    @invariant()
    def step_invariants(self):
        self._fail_if(check_step(self.state), f"at step {len(self.events)}")

    def teardown(self):
        if getattr(self, "state", None) is None:
            return
        self.state, drained = spec.drain(self.state)
        self.events.extend(drained)
        self._fail_if(check_step(self.state) + check_drained(self.state), "after draining")


assert all(k.replace("-", "_") in ProtocolMachine.__dict__ for k in _KINDS), "a rule per action kind"


def machine_for(config: ProtocolConfig, name: str, only: tuple = (), trace_dir: Path | None = None):
    """A machine class for ``config`` (named ``name``; ``only`` restricts the checked invariants)."""
    return type(f"Machine_{name.replace('-', '_')}", (ProtocolMachine,),
                {"CONFIG": config, "NAME": name, "ONLY": tuple(only), "TRACE_DIR": trace_dir})


def catch_settings(max_examples: int = 300, steps: int = 40) -> settings:
    """Settings for "this broken variant is caught": deterministic, no example database, and no
    Hypothesis shrinking (:func:`find_counterexample` shrinks the trace itself, much faster)."""
    return settings(max_examples=max_examples, stateful_step_count=steps, derandomize=True, database=None,
                    deadline=None, print_blob=False, report_multiple_bugs=False,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def find_counterexample(config: ProtocolConfig, name: str, only: tuple, trace_dir: Path,
                        max_examples: int = 300, steps: int = 40) -> CounterexampleFound | None:
    """Run the machine for a (broken) config; return the shrunk counterexample, or None.

    Hypothesis generates until the first failure; the failing run is then shrunk at the trace
    level (:func:`checker.replay.shrink_events`), rewritten to the trace file and printed."""
    from hypothesis.stateful import run_state_machine_as_test

    machine = machine_for(config, name, only, trace_dir)
    found = None
    try:
        run_state_machine_as_test(machine, settings=catch_settings(max_examples, steps))
    except CounterexampleFound as exc:
        found = exc
    except ExceptionGroup as group:  # pragma: no cover - report_multiple_bugs=False avoids it
        found = next((e for e in group.exceptions if isinstance(e, CounterexampleFound)), None)
        if found is None:
            raise
    if found is None:
        return None
    trace = load_trace(found.trace)
    events = shrink_events(config, trace.events, found.invariant)
    path = write_trace(found.trace, config, events, seed=0, driver="hypothesis", variant=name, shrunk=True)
    msg = (f"{name}: {found.invariant} violated; shrunk counterexample ({len(events)} events) written to {path}\n"
           f"replay it with:  hoodie-lab replay {path}")
    print(msg)
    return CounterexampleFound(msg, found.invariant, path)


# ------------------------------------------------------------- own tests
def test_machine_replays_its_own_trace(tmp_path):
    """A trace the machine writes replays to the same verdict through checker.replay (the engine: the
    committed records the spec run shows are the ones the replay commits)."""
    s = spec.init(ProtocolConfig(parallelism=1, records=2, buffer_size=1, max_checkpoints=2))
    events = []
    for _ in range(30):
        evs = [e for e in spec.enabled(s) if e.fault is None]
        if not evs:
            break
        s = spec.step(s, evs[-1])
        events.append(evs[-1])
    s, drained = spec.drain(s)
    events += drained
    path = write_trace(tmp_path / "t.jsonl", s.config, events, seed=0, driver="hypothesis")
    result = replay(load_trace(path))
    assert result.ok and result.steps == len(events)
    assert committed_offsets(s) == result.system.committed_offsets()
