"""The protocol as one specification: Init, Next (the enabled events and their effects), the drain schedule.

Read it like a TLA+ module tying the others together (Stateright's ``Model``: ``init``, ``actions``,
``next_state``, ``properties``):

* variables and Init -- :mod:`model.protocol.state` (:func:`init`);
* actions -- :mod:`model.protocol.actions` (:func:`guard` and the effect of each event kind);
* Next -- :func:`enabled`: *derived* from the guards, every candidate event (every kind x every task or every
  checkpoint whose ack is in flight) whose guard holds; :func:`step` applies one;
* properties -- :mod:`model.invariants.protocol`, predicates over state and history.

Two listing conventions, both of the engine's :meth:`engine.System.enabled_events` too: ``stop-faults`` is a
driver control, never listed (its guard still accepts it while faults are on); with
``task_failover="region"`` a crash of any write task restarts all of them, so only ``crash-task(0)`` is
listed (the guard accepts every task).

:data:`SPEC` is the spec as a :class:`model.protocol.machine.Machine`. The fast executor of the same rules
is :mod:`engine` (``engine.System``); the refinement suite keeps the two equal.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import RuleViolation
from . import actions, events as E
from .actions import guard
from .config import ProtocolConfig
from .state import (State, View, committed_offsets, committed_records, describe, emitted_offsets,  # noqa: F401
                    emitted_records, failed_writes, guard_holds_executor, initial_state, is_quiescent,
                    pending_instants, queued_request, slow_job_ahead, table_view, instant_wait, would_block,
                    writer_status)

#: Checkpoints the drain may run before giving up (liveness is judged separately).
DRAIN_LIMIT = 5


def init(config: ProtocolConfig | None = None, seed: int = 0, time_source=None) -> State:
    """The initial state. The spec's only time is its logical clock: ``time_source`` must be None."""
    if time_source is not None:
        raise ValueError("the spec takes no time source: its only time is the logical clock "
                         "(model.protocol.values.logical_time); run the engine for another one")
    return initial_state(config, seed)


def candidates(s: State) -> list[E.Event]:
    """Every event that could be enabled in ``s``, in the listing order: per task ingest, request-instant,
    flush, snapshot-task, deliver-event; then trigger, complete, the acks in flight, clean, run-job, the
    timeouts; then the faults."""
    P = range(s.config.parallelism)
    out: list[E.Event] = []
    for t in P:
        out += [E.Ingest(t), E.RequestInstant(t), E.Flush(t), E.SnapshotTask(t), E.DeliverEvent(t)]
    out += [E.TriggerCheckpoint(), E.CompleteCheckpoint()]
    out += [E.DeliverAck(n) for n in s.acks_in_flight]
    out.append(E.Clean())
    out.append(E.RunJob())
    out += [E.InstantTimeout(t) for t in P]
    out += [E.RequestExpired(t) for t in P]
    out += [E.LoseAck(n) for n in s.acks_in_flight]
    out += [E.LoseEvent(t) for t in P]
    out += [E.RequestTimeout(t) for t in P]
    out.append(E.AbortCheckpoint())
    crash_tasks = [0] if s.config.task_failover == "region" else P
    out += [E.CrashTask(t) for t in crash_tasks]
    out += [E.CrashCoordinator(), E.RestartJob()]
    return out


def enabled(s: State) -> list[E.Event]:
    """Every event enabled now: the candidates whose guard holds (``stop-faults`` is not a candidate)."""
    return [ev for ev in candidates(s) if guard(s, ev) is None]


def step(s: State, ev: E.Event) -> State:
    """The state after ``ev``; ``RuleViolation("<kind>.not-enabled")`` when its guard is false."""
    why = guard(s, ev)
    if why is not None:
        raise RuleViolation(f"{ev.kind}.not-enabled", f"{ev} is not enabled: {why}")
    s = replace(s, history=replace(s.history, steps=s.history.steps + 1))
    return actions.effect(s, ev)


def task_step(s: State, t: int, at_barrier: bool = True) -> str | None:
    """The step task ``t``'s write function takes next, read off the guards: ``"request-instant"``,
    ``"blocked"`` (needs an instant, the coordinator would block), ``"snapshot-task"`` (only when
    ``at_barrier``), ``"flush"`` or None."""
    if guard(s, E.RequestInstant(t)) is None:
        return "request-instant"
    if s.config.executor_queue and queued_request(s, t) is not None:
        return None  # its thread is in the instant request's RPC, waiting for the answer
    if writer_status(s, t) == "blocked":
        return "blocked"
    if at_barrier and guard(s, E.SnapshotTask(t)) is None:
        return "snapshot-task"
    if guard(s, E.Flush(t)) is None:
        return "flush"
    return None


def drain(s: State, max_checkpoints: int = DRAIN_LIMIT) -> tuple[State, list[E.Event]]:
    """Stop faults, then run checkpoints with delivered acks until quiescent: the drained state and the
    events applied.

    Deterministic: deliver the messages in flight (async event delivery: channel by channel in task order)
    and the acks, oldest first; complete or trigger a checkpoint, each task getting an instant and
    snapshotting in task order (then the messages in flight again); a task blocked (blocking mode, the ack
    that would free it lost) times out. Gives up after ``max_checkpoints`` checkpoints; then a LAZY clean if
    failed writes remain.

    With the executor queue: the executor runs its jobs after the acks are delivered, but stops before a slow
    table-service job (the tasks are faster than it: a request they send meanwhile waits behind it); a task's
    request is answered by running the jobs up to it, or times out behind a slow job (``request-expired``, a
    stall). With ``request_thread="executor"`` an instant request the CommitGuard holds at the head of the
    queue (:func:`~model.protocol.state.guard_holds_executor`) ends only by the guard's timeout
    (``instant-timeout``, a global failover, recorded as a deadlock); the round counts as a checkpoint round.
    Once the run is quiescent the jobs left run too."""
    out: list[E.Event] = []

    def do(ev: E.Event) -> None:
        nonlocal s
        s = step(s, ev)
        out.append(ev)

    def deliver_messages() -> None:
        for t in range(s.config.parallelism):
            while s.channels[t]:
                do(E.DeliverEvent(t))

    def run_jobs() -> None:
        while s.executor and not slow_job_ahead(s, 1) and guard_holds_executor(s) is None:
            do(E.RunJob())

    def answer(t: int) -> bool:
        """Run the jobs until task t's request ran (True), or until it expired behind a slow job or the
        CommitGuard's wait holding the executor timed out (False)."""
        while queued_request(s, t) is not None:
            if guard(s, E.RequestExpired(t)) is None:
                do(E.RequestExpired(t))
                return False
            held = guard_holds_executor(s)
            if held is not None:
                do(E.InstantTimeout(held.task))
                return False
            do(E.RunJob())
        return True

    if not s.faults_stopped:
        do(E.StopFaults())
    rounds = 0
    while True:
        deliver_messages()
        while s.acks_in_flight:
            do(E.DeliverAck(s.acks_in_flight[0]))
        run_jobs()
        held = guard_holds_executor(s)
        if held is not None and rounds < max_checkpoints:
            do(E.InstantTimeout(held.task))
            rounds += 1
            continue
        if is_quiescent(s, executor=False) or rounds >= max_checkpoints:
            break
        if s.pending is None:
            do(E.TriggerCheckpoint())
        aborted = False
        for t in range(s.config.parallelism):
            if s.pending is None or s.pending.tasks[t] is not None:
                continue
            if s.writers[t].instant is None:
                if instant_wait(s, t):
                    do(E.InstantTimeout(t))
                    aborted = True
                    break
                if queued_request(s, t) is None:
                    do(E.RequestInstant(t))
                if not answer(t):
                    aborted = True
                    break
            do(E.SnapshotTask(t))
        rounds += 1
        if aborted:
            continue
        deliver_messages()
        do(E.CompleteCheckpoint())
    while s.executor:
        expired = next((t for t in range(s.config.parallelism) if guard(s, E.RequestExpired(t)) is None), None)
        held = guard_holds_executor(s)
        if expired is not None:
            do(E.RequestExpired(expired))
        elif held is not None:
            do(E.InstantTimeout(held.task))
        else:
            do(E.RunJob())
    if not s.config.eager and failed_writes(s):
        do(E.Clean())
    return s, out


def view(s: State) -> View:
    """The abstract state: ``s`` without its constants and history variables (a comparable value)."""
    return s.view()


class _Spec:
    """The spec as a :class:`model.protocol.machine.Machine` (name ``"spec"``): states are values, ``step``
    returns a new one."""

    name = "spec"

    def init(self, config: ProtocolConfig, *, seed: int = 0, time_source=None) -> State:
        return init(config, seed, time_source)

    def step(self, state: State, event: E.Event) -> State:
        return step(state, event)

    def enabled(self, state: State) -> list[E.Event]:
        return enabled(state)

    def guard(self, state: State, event: E.Event) -> str | None:
        return guard(state, event)

    def check_step(self, state: State) -> list:
        from ..invariants.protocol import check_step
        return check_step(state)

    def check_drained(self, state: State) -> list:
        from ..invariants.protocol import check_drained
        return check_drained(state)

    def drain(self, state: State) -> tuple[State, list[E.Event]]:
        return drain(state)

    def view(self, state: State) -> View:
        return view(state)

    def describe(self, state: State) -> str:
        return describe(state)

    def __repr__(self) -> str:
        return "SPEC"


#: The spec as a machine.
SPEC = _Spec()
