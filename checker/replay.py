"""Replay a protocol trace through the model and report the first invariant violated.

``replay(trace)`` runs the trace through the engine (:meth:`model.trace.Trace.replay` with
:data:`engine.machine.ENGINE`: a fresh :class:`engine.System` with the trace's config and seed), checks
:func:`engine.invariants.check_step` after every event and, when the trace drained (contains
``stop-faults``), :func:`~engine.invariants.check_drained` at the end; ``format_result`` renders the
outcome; ``shrink_events`` shrinks a counterexample (every candidate run is a ``Trace.replay`` too).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine import System
from engine.invariants import EXPLANATIONS, check_drained, check_step
from engine.machine import ENGINE
from model.invariants import Verdict
from model.protocol import Event, ProtocolConfig
from model.trace import Trace, TraceError


@dataclass
class ReplayResult:
    trace: Trace
    steps: int                      # events applied
    violation: Verdict | None = None
    step: int | None = None         # 1-based step of the violation (None: at the end / none)
    event: Event | None = None
    at_end: bool = False            # violation found by the drain-based checks at the end
    system: System | None = None
    verdicts: list = field(default_factory=list)  # the verdicts of the violating check (or the last)

    @property
    def ok(self) -> bool:
        return self.violation is None

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1


def replay(trace: Trace) -> ReplayResult:
    """Apply every event; stop at the first violated invariant. An event the model refuses raises
    :class:`model.trace.TraceError` naming its line."""
    system = ENGINE.init(trace.config, seed=trace.seed or 0)
    result = ReplayResult(trace, 0, system=system)
    verdicts = check_step(system)  # a configuration can break an invariant before any event (step 0)
    bad = [v for v in verdicts if not v.holds]
    if bad:
        result.violation, result.step, result.event, result.verdicts = bad[0], 0, "the initial state", verdicts
        return result

    def check(step: int, ev: Event, state: System) -> bool:
        result.steps = step
        verdicts = check_step(state)
        bad = [v for v in verdicts if not v.holds]
        if bad:
            result.violation, result.step, result.event, result.verdicts = bad[0], step, ev, verdicts
        return bool(bad)

    system = result.system = trace.replay(ENGINE, on_step=check)
    if result.violation is not None:
        return result
    if trace.drained:
        verdicts = check_drained(system)
        bad = [v for v in verdicts if not v.holds]
        result.verdicts = verdicts
        if bad:
            result.violation, result.at_end = bad[0], True
    return result


def format_result(result: ReplayResult, show_state: bool = False) -> str:
    cfg = result.trace.config
    head = (f"trace: {len(result.trace.events)} events, driver {result.trace.driver}, seed {result.trace.seed}, "
            f"{cfg.mode} mode, table version {cfg.table_version}, parallelism {cfg.parallelism}")
    lines = [head]
    if result.ok:
        drained = " and the drain-based invariants (exactly-once, liveness)" if result.trace.drained else ""
        lines.append(f"all invariants held over {result.steps} steps{drained}")
        return "\n".join(lines)
    v = result.violation
    if result.at_end:
        lines.append(f"VIOLATED at the end of the drained run (after step {result.steps}): {v.invariant}")
    else:
        lines.append(f"VIOLATED at step {result.step} ({result.event}): {v.invariant}")
    lines.append(f"  what: {EXPLANATIONS.get(v.invariant, v.invariant)}")
    lines.append(f"  why:  {v.detail}")
    others = [x.invariant for x in result.verdicts if not x.holds and x is not v]
    if others:
        lines.append(f"  also violated: {', '.join(others)}")
    if show_state and result.system is not None:
        lines.append("  state:")
        lines.extend("    " + ln for ln in result.system.describe().splitlines())
    return "\n".join(lines)


def _violating_run(config: ProtocolConfig, events, invariant: str, seed: int, drain: bool):
    """Apply ``events`` (refusing any that is not enabled); return the events of the run up to
    the first violation of ``invariant`` -- after draining when ``drain`` -- or None."""
    events = list(events)
    kinds = [e.kind for e in events]
    stop = kinds.index("stop-faults") if "stop-faults" in kinds else None  # a candidate run never drains itself
    out: list = []
    found: list = []

    def violated(step: int, ev: Event, state: System) -> bool:
        out.append(ev)
        if any(not v.holds and v.invariant == invariant for v in check_step(state)):
            found.append(step)
        return bool(found)

    try:
        system = Trace(config, seed, "manual", {}, events[:stop]).replay(ENGINE, on_step=violated)
    except TraceError:  # an event that is not enabled
        return None
    if found:
        return out
    if stop is not None or not drain:
        return None
    out.extend(system.drain())
    if any(not v.holds and v.invariant == invariant for v in check_step(system) + check_drained(system)):
        return out
    return None


def _machine_part(run: list) -> list:
    """The events before ``stop-faults`` (the drain is recomputed by every candidate run)."""
    kinds = [e.kind for e in run]
    return run[:kinds.index("stop-faults")] if "stop-faults" in kinds else run


def shrink_events(config: ProtocolConfig, events, invariant: str, seed: int = 0, drain: bool = True) -> list:
    """Shrink a counterexample at the trace level (greedy delta debugging).

    ``events`` is a run that violates ``invariant`` (drain events, from ``stop-faults`` on, are
    dropped and recomputed). Chunks of events are removed while the rest still replays (every
    event enabled) and still violates ``invariant`` (after a deterministic drain when
    ``drain``); chunk sizes halve down to single events. Returns the shrunk run including its
    drain events. Deterministic; O(n^2) replays of a short run.
    """
    best = _violating_run(config, _machine_part(list(events)), invariant, seed, drain)
    if best is None:
        raise ValueError(f"the events do not violate {invariant}")
    cur = _machine_part(best)
    chunk = max(1, len(cur) // 2)
    while chunk >= 1:
        i, changed = 0, False
        while i < len(cur):
            run = _violating_run(config, cur[:i] + cur[i + chunk:], invariant, seed, drain)
            if run is not None:
                best, cur, changed = run, _machine_part(run), True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    return best
