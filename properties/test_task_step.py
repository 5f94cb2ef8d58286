"""``System.task_step(t, at_barrier)`` agrees with the per-action guards (``System.is_enabled``).

Hypothesis drives a :class:`model.protocol.System` through sequences of enabled events (chosen among
``enabled_events()``, faults included where the variant enables them), then drains it (stop faults, run
checkpoints with delivered acks). After every step, for every task ``t`` and both values of ``at_barrier``,
:func:`check_task_step` asserts:

* ``"request-instant"`` iff ``RequestInstant(t)`` is enabled;
* ``"blocked"`` iff ``writer_status(t) == "blocked"``;
* ``"snapshot-task"`` implies ``SnapshotTask(t)`` enabled and ``at_barrier``;
* ``"flush"`` implies ``Flush(t)`` enabled and (not ``at_barrier`` or ``SnapshotTask(t)`` not enabled);
* None implies neither ``RequestInstant(t)`` nor ``Flush(t)`` enabled, nor (if ``at_barrier``)
  ``SnapshotTask(t)``; and the answer is one of those five values.

Together these say a driver at the barrier that snapshots whenever ``task_step`` says so never misses a
snapshot (if ``SnapshotTask(t)`` is enabled and ``at_barrier``, every other answer is excluded).

The checker is shown able to fail: :func:`test_broken_task_step_is_caught` monkeypatches deliberately broken
versions of ``System.task_step`` and the same drive + checker must report them (``hypothesis.find``, shrunk
event sequence printed). A failure of the property prints the variant and the event sequence (``note``);
replay it with the printed ``@reproduce_failure`` blob or ``pytest --hypothesis-seed=N``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, find, given, note, settings
from hypothesis import strategies as st

from model.protocol import ALL_FAULTS, Flush, RequestInstant, SnapshotTask, variant
from engine import System

STEPS = ("request-instant", "blocked", "snapshot-task", "flush", None)

#: Small bounds (like the stateful suites): three tasks so a barrier can be waiting at some tasks only.
BOUNDS = dict(parallelism=3, records=4, buffer_size=2, max_checkpoints=4, max_crashes=2)

CONFIGS = {
    "hudi-1.1": variant("hudi-1.1", faults=frozenset(), **BOUNDS),
    "hudi-1.1-blocking": variant("hudi-1.1-blocking", faults=frozenset(), **BOUNDS),
    "hudi-1.1+faults": variant("hudi-1.1", faults=ALL_FAULTS, **BOUNDS),
    "hudi-1.1-blocking+faults": variant("hudi-1.1-blocking", faults=ALL_FAULTS, **BOUNDS),
    "single-task-failover+faults": variant("single-task-failover", faults=frozenset({"task-crash", "abort"}),
                                           **BOUNDS),
    "instant-per-request": variant("instant-per-request", faults=frozenset(), **BOUNDS),
    "blocking-buffer-1": variant("hudi-1.1-blocking", faults=frozenset({"lost-ack", "abort"}),
                                 **{**BOUNDS, "buffer_size": 1, "parallelism": 2}),
}


# -------------------------------------------------------------------------------------- the checker
def check_task_step(s: System, where: str = "") -> None:
    """Assert ``task_step`` agrees with the guards for every task of ``s`` and both ``at_barrier`` values."""
    for t in range(s.config.parallelism):
        req = s.is_enabled(RequestInstant(t)) is None
        flush = s.is_enabled(Flush(t)) is None
        snap = s.is_enabled(SnapshotTask(t)) is None
        blocked = s.writer_status(t) == "blocked"
        for at_barrier in (True, False):
            step = s.task_step(t, at_barrier)
            ctx = (f"task_step({t}, at_barrier={at_barrier}) = {step!r} {where}; guards: request-instant "
                   f"{req}, flush {flush}, snapshot-task {snap}, writer_status {s.writer_status(t)!r}\n{s.describe()}")
            assert step in STEPS, f"unknown answer: {ctx}"
            assert (step == "request-instant") == req, f"'request-instant' iff RequestInstant enabled: {ctx}"
            assert (step == "blocked") == blocked, f"'blocked' iff writer_status == 'blocked': {ctx}"
            if step == "snapshot-task":
                assert snap and at_barrier, f"'snapshot-task' needs SnapshotTask enabled and at_barrier: {ctx}"
            if step == "flush":
                assert flush, f"'flush' needs Flush enabled: {ctx}"
                assert not (at_barrier and snap), f"'flush' while a snapshot is due at the barrier: {ctx}"
            if step is None:
                assert not req and not flush, f"None while RequestInstant or Flush is enabled: {ctx}"
                assert not (at_barrier and snap), f"None while SnapshotTask is enabled at the barrier: {ctx}"


def drive(name: str, choices: list[int]) -> None:
    """Run ``CONFIGS[name]``: event ``k`` is ``enabled_events()[choices[k] % len]``; then drain. The checker
    runs on the initial state and after every event (drained ones included)."""
    s = System(CONFIGS[name])
    events: list = []
    check_task_step(s, f"[{name}] initially")
    for c in choices:
        enabled = s.enabled_events()
        if not enabled:
            break
        ev = enabled[c % len(enabled)]
        s.apply(ev)
        events.append(ev)
        check_task_step(s, f"[{name}] after {len(events)} events: {[str(e) for e in events]}")
    # the drain's own steps (stop-faults, checkpoints run to quiescence) on a clone, then replayed here
    for ev in s.clone().drain():
        s.apply(ev)
        events.append(ev)
        check_task_step(s, f"[{name}] draining, after {len(events)} events: {[str(e) for e in events]}")


choices = st.lists(st.integers(0, 63), min_size=1, max_size=60)


# ------------------------------------------------------------------------------------- the property
#: A drive costs about a millisecond: run more examples than the profile's default, never fewer (the deep
#: profile's 2000 apply). Everything else (no deadline, printed blob) comes from the profile in conftest.py.
MORE = settings(max_examples=max(150, settings.default.max_examples))


@pytest.mark.parametrize("name", sorted(CONFIGS))
@MORE
@given(choices=choices)
def test_task_step_agrees_with_the_guards(name, choices):
    note(f"variant {name}: {CONFIGS[name].to_dict()}")
    note(f"choices (index into enabled_events() at each step): {choices}")
    drive(name, choices)


def test_the_drive_reaches_every_answer(monkeypatch):
    """Not vacuous: across the variants the drive sees every answer (also with at_barrier False)."""
    seen: set = set()

    def spy(self, t, at_barrier=True):
        step = _ORIG(self, t, at_barrier)
        seen.add((step, at_barrier))
        return step

    monkeypatch.setattr(System, "task_step", spy)
    for name in CONFIGS:
        for seed in range(15):
            drive(name, [(seed * 7919 + k * 104729) % 64 for k in range(60)])
    want = {(st_, b) for st_ in STEPS for b in (True, False)} - {("snapshot-task", False)}
    assert want <= seen, f"never seen: {sorted(want - seen, key=str)}"
    assert ("snapshot-task", False) not in seen


# ------------------------------------------------------------------------------ the checker can fail
def _flush_before_snapshot(self, t, at_barrier=True):
    """Prefers "flush" over "snapshot-task" when both are possible."""
    step = _ORIG(self, t, at_barrier)
    w = self.writers[t]
    if step == "snapshot-task" and w.offset - w.flushed >= self.config.buffer_size:
        return "flush"
    return step


def _snapshot_ignores_at_barrier(self, t, at_barrier=True):
    """Snapshots even when the driver says its task has not reached the barrier."""
    return _ORIG(self, t, True)


def _never_blocked(self, t, at_barrier=True):
    """Forgets the blocking-mode commit guard: asks for an instant the coordinator would refuse."""
    step = _ORIG(self, t, at_barrier)
    return "request-instant" if step == "blocked" else step


def _requests_only_when_full(self, t, at_barrier=True):
    """Does not ask for an instant at a barrier when the buffer is not full (the snapshot then never comes)."""
    step = _ORIG(self, t, at_barrier)
    w = self.writers[t]
    if step in ("request-instant", "blocked") and w.offset - w.flushed < self.config.buffer_size:
        return None
    return step


_ORIG = System.task_step

BROKEN = {
    "flush-before-snapshot": (_flush_before_snapshot, "hudi-1.1"),
    "snapshot-ignores-at-barrier": (_snapshot_ignores_at_barrier, "hudi-1.1"),
    "never-blocked": (_never_blocked, "hudi-1.1-blocking"),
    "requests-only-when-full": (_requests_only_when_full, "hudi-1.1"),
}

_FIND = settings(max_examples=2000, database=None, derandomize=True, deadline=None,
                 phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_broken_task_step_is_caught(broken, monkeypatch):
    fn, name = BROKEN[broken]
    monkeypatch.setattr(System, "task_step", fn)

    def fails(ch):
        try:
            drive(name, ch)
        except AssertionError:
            return True
        return False

    shrunk = find(choices, fails, settings=_FIND)
    with pytest.raises(AssertionError) as exc:
        drive(name, shrunk)
    print(f"\n[{broken}] caught on {name} with choices {shrunk}: {str(exc.value).splitlines()[0]}")
