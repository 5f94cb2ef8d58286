"""The one trace format every driver writes (Hypothesis suites, ``explore``, ``simulate``, the
pipeline): JSON lines, pure functions to and from dicts and text (file I/O lives in
:mod:`lakeio.traces`).

Format, version 2::

    {"trace": "hoodie-lab", "version": 2, "config": {...ProtocolConfig.to_dict()...},
     "seed": 0, "driver": "hypothesis|explore|simulate|pipeline", ...optional extra keys}
    {"step": 1, "kind": "ingest", "task": 0}
    {"step": 2, "kind": "request-instant", "task": 0}
    ...
    {"end": 2}                                  # the end marker: number of events

* line 1 is the header; ``version`` is an integer, a reader refuses versions newer than its own;
  ``config`` is a :class:`model.protocol.ProtocolConfig` as a dict; ``seed`` an integer or null;
  ``driver`` one of :data:`DRIVERS`; writers may add keys (``variant``, ``note``, ``time``: a
  simulation may put simulated milliseconds in each event line as ``"t"``, readers ignore it).
* then one event per line, ``step`` numbered 1, 2, 3, ... without gaps, the other keys being
  :meth:`model.protocol.Event.to_dict` (``kind`` plus ``task`` or ``checkpoint``); extra keys
  whose name starts with ``t`` or ``x_`` are tolerated and ignored (``t``: simulated time).
* a ``stop-faults`` event marks the start of a drain: a replay then judges the drain-based
  invariants at the end of the trace.
* the end marker ``{"end": N}`` is the last line and states the number of events. A trace cut at
  a line boundary looks like a shorter complete run; the marker is how a reader tells them
  apart, so a trace without it is refused as possibly truncated (:class:`TraceError`).
* one exception: a **write-ahead log** (header ``"write_ahead": true``) is appended event by event
  while its run goes and cannot know its end -- the pipeline's ``trace.jsonl``, which a restarted
  driver replays and appends to (``pipeline/coordinator.py``). It may lack the end marker;
  :attr:`Trace.complete` is then False and ``hoodie-lab replay`` says so on stderr. :func:`header`
  marks the ``pipeline`` driver's traces so by default.

Version 1 (before the end marker was required) is still read: with an end marker it is a
complete trace; without one it is refused as possibly truncated, except the ``pipeline`` driver's
(its write-ahead log, as above).

:func:`parse_trace` raises :class:`TraceError` (a ``ValueError``) with the 1-based line number
and the problem for anything malformed: bad JSON (nesting too deep included), a truncated last
line, a missing end marker, a missing header, a newer version, an unknown event kind, a gap in
step numbers, a bad config.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .errors import RuleViolation
from .protocol.config import ProtocolConfig
from .protocol.events import EVENT_TYPES, Event, event_from_dict

TRACE_MAGIC = "hoodie-lab"
TRACE_VERSION = 2
DRIVERS = ("hypothesis", "explore", "simulate", "pipeline", "manual")


class TraceError(ValueError):
    """A malformed trace. ``line`` is 1-based (0 when the whole text is at fault)."""

    def __init__(self, line: int, problem: str):
        self.line = line
        self.problem = problem
        super().__init__(f"line {line}: {problem}" if line else problem)


@dataclass
class Trace:
    config: ProtocolConfig
    seed: int | None
    driver: str
    header: dict
    events: list[Event] = field(default_factory=list)
    #: line number (1-based) of each event, parallel to ``events``
    lines: list[int] = field(default_factory=list)
    trailer: int | None = None

    @property
    def write_ahead(self) -> bool:
        """A write-ahead log (see the module docstring): it may end without the end marker."""
        return is_write_ahead(self.header)

    @property
    def complete(self) -> bool:
        """The trace ends with its end marker ``{"end": N}``: every event of the run is in it."""
        return self.trailer is not None

    @property
    def drained(self) -> bool:
        """True when the trace contains a ``stop-faults`` event (drain-based checks apply)."""
        return any(e.kind == "stop-faults" for e in self.events)

    def replay(self, machine=None, *, time_source: Any = None,
               on_step: Callable[[int, Event, Any], bool | None] | None = None) -> Any:
        """The state after the trace's events: ``machine.init(config, seed=seed or 0, time_source=...)``
        then ``machine.step`` for every event, in order. ``machine`` is a
        :class:`model.protocol.machine.Machine`; None means the spec (:data:`model.protocol.spec.SPEC`).

        ``on_step(step, event, state)`` is called after each event (``step`` 1-based); when it returns
        True the replay stops there and returns that state. An event the machine refuses raises
        :class:`TraceError` naming the event's line: ``step N: the model refuses EV: why``."""
        if machine is None:
            from .protocol.spec import SPEC
            machine = SPEC
        state = machine.init(self.config, seed=self.seed or 0, time_source=time_source)
        for i, ev in enumerate(self.events):
            step = i + 1
            try:
                state = machine.step(state, ev)
            except RuleViolation as exc:
                line = self.lines[i] if i < len(self.lines) else 0
                raise TraceError(line, f"step {step}: the model refuses {ev}: {exc.detail}") from None
            if on_step is not None and on_step(step, ev, state):
                break
        return state


# ------------------------------------------------------------------ writing
def header(config: ProtocolConfig, seed: int | None = None, driver: str = "manual", *,
           write_ahead: bool | None = None, **extra) -> dict:
    """The header line. ``write_ahead`` marks a log appended while its run goes, which may end
    without the end marker; ``None`` means: the ``pipeline`` driver's traces are (its
    ``trace.jsonl`` is its write-ahead log), every other driver writes whole traces."""
    if driver not in DRIVERS:
        raise ValueError(f"driver {driver!r} is not one of {', '.join(DRIVERS)}")
    if write_ahead is None:
        write_ahead = driver == "pipeline"
    h = {"trace": TRACE_MAGIC, "version": TRACE_VERSION, "config": config.to_dict(), "seed": seed,
         "driver": driver}
    if write_ahead:
        h["write_ahead"] = True
    for k, v in extra.items():
        if k in h:
            raise ValueError(f"header key {k!r} is reserved")
        h[k] = v
    return h


def event_record(step: int, ev: Event, **extra) -> dict:
    d = {"step": step}
    d.update(ev.to_dict())
    d.update(extra)
    return d


def dumps(obj: dict) -> str:
    return json.dumps(obj, separators=(",", ":"), sort_keys=False)


def to_lines(config: ProtocolConfig, events: Iterable[Event], seed: int | None = None,
             driver: str = "manual", trailer: bool = True, **extra) -> list[str]:
    """The whole trace as JSON lines (without newlines), ending with the end marker ``{"end": N}``
    (``trailer=False`` leaves it out: only for tests of truncated traces)."""
    out = [dumps(header(config, seed, driver, write_ahead=extra.pop("write_ahead", False), **extra))]
    n = 0
    for n, ev in enumerate(events, 1):
        out.append(dumps(event_record(n, ev)))
    if trailer:
        out.append(dumps({"end": n}))
    return out


def to_text(config: ProtocolConfig, events: Iterable[Event], seed: int | None = None,
            driver: str = "manual", **extra) -> str:
    return "\n".join(to_lines(config, events, seed, driver, **extra)) + "\n"


# ------------------------------------------------------------------ reading
def _json_line(text: str, no: int, last_unterminated: bool):
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        if last_unterminated:
            raise TraceError(no, f"truncated: the last line is incomplete ({exc.msg})") from None
        raise TraceError(no, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise TraceError(no, "JSON nested too deeply to be a trace line") from None
    if not isinstance(obj, dict):
        raise TraceError(no, "expected a JSON object")
    return obj


def is_write_ahead(hdr: dict) -> bool:
    """The header is a write-ahead log's: ``"write_ahead": true``, or a version-1 ``pipeline`` trace
    (the pipeline's log before the flag existed)."""
    return hdr.get("write_ahead") is True or (hdr.get("version") == 1 and hdr.get("driver") == "pipeline")


def parse_header(obj: dict, no: int = 1) -> tuple[ProtocolConfig, int | None, str]:
    if obj.get("trace") != TRACE_MAGIC:
        raise TraceError(no, f'not a hoodie-lab trace header (expected "trace": "{TRACE_MAGIC}")')
    version = obj.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TraceError(no, f"bad version {version!r}")
    if version > TRACE_VERSION:
        raise TraceError(no, f"trace version {version} is newer than this reader's ({TRACE_VERSION}); "
                             f"upgrade hoodie-lab")
    driver = obj.get("driver")
    if driver not in DRIVERS:
        raise TraceError(no, f"driver {driver!r} is not one of {', '.join(DRIVERS)}")
    seed = obj.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise TraceError(no, f"seed {seed!r} is not an integer or null")
    if "write_ahead" in obj and not isinstance(obj["write_ahead"], bool):
        raise TraceError(no, f"write_ahead {obj['write_ahead']!r} is not true or false")
    if "config" not in obj:
        raise TraceError(no, "header has no config")
    try:
        config = ProtocolConfig.from_dict(obj["config"])
    except (TypeError, ValueError) as exc:
        raise TraceError(no, f"bad config: {exc}") from None
    return config, seed, driver


def parse_event(obj: dict, no: int, expected_step: int) -> Event:
    step = obj.get("step")
    if not isinstance(step, int) or isinstance(step, bool):
        raise TraceError(no, f"event line has no integer step ({obj.get('step')!r})")
    if step != expected_step:
        raise TraceError(no, f"step {step} where step {expected_step} was expected (missing or reordered lines)")
    d = {k: v for k, v in obj.items() if k != "t" and not k.startswith("x_")}
    if not isinstance(d.get("kind"), str) or d["kind"] not in EVENT_TYPES:
        raise TraceError(no, f"unknown event kind {d.get('kind')!r}")
    try:
        return event_from_dict(d)
    except ValueError as exc:
        raise TraceError(no, str(exc)) from None


def parse_trace(text: str) -> Trace:
    """Parse a whole trace (the file's text). Raises :class:`TraceError`."""
    if not text.strip():
        raise TraceError(1, "empty trace: no header line")
    raw = text.split("\n")
    unterminated = not text.endswith("\n")
    if not unterminated:
        raw = raw[:-1]
    last = len(raw)
    trace: Trace | None = None
    for no, line in enumerate(raw, 1):
        if not line.strip():
            if no == last:
                continue
            raise TraceError(no, "empty line")
        obj = _json_line(line, no, unterminated and no == last)
        if trace is None:
            config, seed, driver = parse_header(obj, no)
            trace = Trace(config, seed, driver, obj)
            continue
        if trace.trailer is not None:
            raise TraceError(no, "line after the trailer {\"end\": ...}")
        if "end" in obj and "step" not in obj:
            n = obj["end"]
            if not isinstance(n, int) or isinstance(n, bool) or n != len(trace.events):
                raise TraceError(no, f"trailer says {n!r} events but the trace has {len(trace.events)} (truncated?)")
            trace.trailer = n
            continue
        trace.events.append(parse_event(obj, no, len(trace.events) + 1))
        trace.lines.append(no)
    assert trace is not None
    if trace.trailer is None and not trace.write_ahead:
        last_line = trace.lines[-1] if trace.lines else 1
        raise TraceError(0, f"no end marker {{\"end\": N}} after the last line ({last_line}, "
                            f"{len(trace.events)} events): the trace may be truncated")
    return trace
