"""Stateful property suite: the guarded Timeline driven through any mix of actions with TrueTime times.

A ``RuleBasedStateMachine`` creates instants of every ``Action`` on a table of version 6, 8 or 9,
moves them through their states, reverts and deletes them, and attempts illegal transitions. Times
come from a ``model.truetime.SkewAdjustingTimeGenerator`` (requested times via ``generate``,
completion times via ``consume_time`` with the ``complete`` call inside the lock section), with
several processes whose clocks are skewed within the configured bound.

A shadow model (a plain dict of state sets) predicts each operation's outcome; every refusal must
be a ``TimelineError`` naming the rule the shadow expects. Invariants after every step (from
``model.invariants.times``): generated times unique and strictly increasing in generation order
(I1), requested < completion (I2), visible state = highest state present (I3), the timeline equals
the shadow (legal transitions only), and no instant completes twice without an explicit revert.

Each invariant is shown able to fail: the tests at the bottom run the same machine over a broken
generator or a broken ``Timeline`` subclass and assert the machine catches it. Replay a failure with
the printed ``@reproduce_failure`` blob or ``pytest --hypothesis-seed=N``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, event, find, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from model.errors import TimelineError
from model.instant import (
    COMPLETED_ACTION,
    DATA_WRITE_ACTIONS,
    LAYOUT2_ONLY,
    STARTS_INFLIGHT,
    Action,
    InstantKey,
    State,
)
from model.invariants import violations
from model.invariants.times import (
    check_generated_times,
    check_requested_before_completion,
    check_timeline_times,
    check_times_strictly_increasing,
    check_visible_state_is_highest,
)
from model.timeline import Timeline, _Record
from model.truetime import (
    Clock,
    Lock,
    NaiveGenerator,
    SkewAdjustingTimeGenerator,
    TimeGeneratorConfig,
)

PROCESSES = ("writer-1", "writer-2", "table-service")
PICK = st.tuples(st.integers(0, 10**6), st.sampled_from(["legal", "illegal", "any"]))  # see _pick
WAIT_MS = 200
ALL_ACTIONS = list(Action)
# Every action; compaction/logcompaction a little more often so their revert path is reached in `ci`.
ACTION_ST = st.one_of(st.sampled_from(ALL_ACTIONS), st.sampled_from([Action.COMPACTION, Action.LOGCOMPACTION]))

# Clocks whose actual skew stays within the wait: offsets in [-90, 90] and a small drift over the
# horizon of a run (at most ~ stateful_step_count * (wait + latency + gaps) of true time).
clock_st = st.builds(Clock, offset_ms=st.integers(-90, 90), drift_ppm=st.integers(-200, 200))


class TimelineMachine(RuleBasedStateMachine):
    """The Timeline against a shadow, with times from TrueTime. Subclasses swap in broken parts."""

    timeline_class = Timeline

    def make_generator(self, clocks):
        return SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=WAIT_MS),
                                          clocks=clocks, lock=Lock(latency_ms=1))

    # --------------------------------------------------------------- set-up
    @initialize(version=st.sampled_from([6, 8, 9]), clocks=st.lists(clock_st, min_size=3, max_size=3))
    def setup(self, version, clocks):
        self.tl = self.timeline_class(version)
        self.gen = self.make_generator(dict(zip(PROCESSES, clocks)))
        self.now = 0
        self.shadow: dict[InstantKey, dict] = {}   # key -> {"action", "states", "completion"}
        self.known: list[tuple[str, Action]] = []  # every instant ever created (incl. deleted)
        self.completions: dict[InstantKey, int] = {}
        self.reverts: dict[InstantKey, int] = {}

    # -------------------------------------------------------------- helpers
    def _tick(self, gap):
        self.now += gap

    def _expect(self, rule_name, fn, *args, **kwargs):
        """Run a timeline operation; ``rule_name`` None means it must succeed."""
        try:
            out = fn(*args, **kwargs)
        except TimelineError as e:
            assert e.rule == rule_name, f"{fn.__name__}{args}: refused with [{e.rule}] {e.detail}; expected " \
                                        f"{'success' if rule_name is None else rule_name}"
            event(f"{fn.__name__}: refused [{e.rule}]")
            return None
        event(f"{fn.__name__}: ok")
        assert rule_name is None, f"{fn.__name__}{args} succeeded; expected TimelineError [{rule_name}]"
        return out

    def _pick(self, pick, want=lambda sh: True):
        """An instant ever created (possibly deleted since). ``pick = (index, mode)``: mode "legal"
        chooses among live instants on which ``want`` holds, "illegal" among live instants on
        which it does not (falling back to any instant when that set is empty), "any" among all."""
        if not self.known:
            return None
        idx, mode = pick
        pool = self.known
        if mode != "any":
            live = [(t, a, sh) for t, a in self.known if (sh := self.shadow.get(InstantKey.of(t, a))) is not None]
            chosen = [(t, a) for t, a, sh in live if bool(want(sh)) == (mode == "legal")]
            pool = chosen or pool
        t, a = pool[idx % len(pool)]
        return t, a, InstantKey.of(t, a), self.shadow.get(InstantKey.of(t, a))

    def _state(self, sh):
        return max(sh["states"])

    # ---------------------------------------------------------------- rules
    @rule(action=ACTION_ST, proc=st.sampled_from(PROCESSES), gap=st.integers(0, 300))
    def create(self, action, proc, gap):
        """createNewInstant with a freshly generated requested time."""
        self._tick(gap)
        rec = self.gen.generate(proc, self.now)
        self.now = rec.released_at
        t = rec.time
        key = InstantKey.of(t, action)
        expected = None
        if action in LAYOUT2_ONLY and self.tl.layout == 1:
            expected = "I4.layout-action"
        elif key in self.shadow:
            expected = "I3.create-once"
        elif action in DATA_WRITE_ACTIONS and any(
                sh["action"] is Action.RESTORE and self._state(sh) is not State.COMPLETED
                for sh in self.shadow.values()):
            expected = "I5.no-write-during-restore"
        out = self._expect(expected, self.tl.create, t, action)
        if out is not None:
            first = State.INFLIGHT if action in STARTS_INFLIGHT else State.REQUESTED
            self.shadow[key] = {"action": action, "states": {first}, "completion": None}
            self.known.append((t, action))

    @rule(pick=PICK)
    def to_inflight(self, pick):
        if (got := self._pick(pick, lambda sh: self._state(sh) is State.REQUESTED)) is None:
            return
        t, a, key, sh = got
        expected = None if sh is not None and self._state(sh) is State.REQUESTED else "I3.legal-transition"
        if self._expect(expected, self.tl.transition_to_inflight, t, a) is not None:
            sh["states"].add(State.INFLIGHT)

    @rule(pick=PICK, proc=st.sampled_from(PROCESSES), gap=st.integers(0, 300),
          hold=st.integers(0, 20))
    def complete(self, pick, proc, gap, hold):
        """saveAsComplete: the completion time and the completed file in one TrueTime lock section."""
        if (got := self._pick(pick, lambda sh: self._state(sh) is State.INFLIGHT)) is None:
            return
        t, a, key, sh = got
        if sh is None:
            expected = "I3.legal-transition"
        elif self._state(sh) is State.COMPLETED:
            expected = "I3.complete-once"
        elif self._state(sh) is not State.INFLIGHT:
            expected = "I3.legal-transition"
        else:
            expected = None
        self._tick(gap)
        rec, out = self.gen.consume_time(proc, self.now,
                                         lambda c: self._expect(expected, self.tl.complete, t, a, c), hold_ms=hold)
        self.now = rec.released_at
        if out is not None:
            sh["states"].add(State.COMPLETED)
            sh["completion"] = rec.time
            self.completions[key] = self.completions.get(key, 0) + 1

    @rule(pick=PICK)
    def complete_with_stale_time(self, pick):
        """Illegal: completing an inflight instant with a time not after its requested time (I2)."""
        if (got := self._pick(pick, lambda sh: self._state(sh) is State.INFLIGHT)) is None:
            return
        t, a, key, sh = got
        if sh is None or self._state(sh) is not State.INFLIGHT:
            return
        self._expect("I2.requested-before-completion", self.tl.complete, t, a, t)

    @rule(pick=PICK)
    def create_again(self, pick):
        """Illegal: creating an instant that exists (immutable create)."""
        if (got := self._pick(pick)) is None:
            return
        t, a, key, sh = got
        if sh is None or (a in DATA_WRITE_ACTIONS and any(
                s["action"] is Action.RESTORE and self._state(s) is not State.COMPLETED for s in self.shadow.values())):
            return  # deleted: re-creating is legal; or the restore guard would fire first
        self._expect("I3.create-once", self.tl.create, t, a)

    @rule(pick=PICK)
    def revert_inflight_to_requested(self, pick):
        if (got := self._pick(pick, lambda sh: sh["action"] in (Action.COMPACTION, Action.LOGCOMPACTION) and self._state(sh) is State.INFLIGHT)) is None:
            return
        t, a, key, sh = got
        ok = (sh is not None and sh["action"] in (Action.COMPACTION, Action.LOGCOMPACTION)
              and self._state(sh) is State.INFLIGHT)
        if self._expect(None if ok else "I3.revert", self.tl.revert_inflight_to_requested, t, a) is not None:
            sh["states"] = {State.REQUESTED}

    @rule(pick=PICK)
    def revert_to_inflight(self, pick):
        if (got := self._pick(pick, lambda sh: self._state(sh) is State.COMPLETED)) is None:
            return
        t, a, key, sh = got
        ok = sh is not None and self._state(sh) is State.COMPLETED
        if self._expect(None if ok else "I3.revert", self.tl.revert_to_inflight, t, a) is not None:
            sh["states"] = {State.INFLIGHT} if sh["action"] in STARTS_INFLIGHT else {State.REQUESTED, State.INFLIGHT}
            sh["completion"] = None
            self.reverts[key] = self.reverts.get(key, 0) + 1

    @rule(pick=PICK, allow_completed=st.booleans())
    def delete(self, pick, allow_completed):
        if (got := self._pick(pick)) is None:
            return
        t, a, key, sh = got
        ok = sh is not None and (allow_completed or self._state(sh) is not State.COMPLETED)
        if self._expect(None if ok else "I3.delete", self.tl.delete, t, a,
                        allow_completed=allow_completed) is not None:
            del self.shadow[key]

    @rule(bad=st.sampled_from(["2025", "2025010100000000x", "", "202501010000000000"]),
          action=st.sampled_from(ALL_ACTIONS))
    def create_with_malformed_time(self, bad, action):
        self._expect("I1.time-format", self.tl.create, bad, action)

    # ----------------------------------------------------------- invariants
    @invariant()
    def generated_times_unique_and_increasing(self):
        if not hasattr(self, "gen"):
            return
        bad = violations(check_generated_times(self.gen.history)
                         + [check_times_strictly_increasing(self.gen.times())])
        assert not bad, "; ".join(map(str, bad))

    @invariant()
    def timeline_times(self):
        if not hasattr(self, "tl"):
            return
        bad = violations(check_timeline_times(self.tl))
        assert not bad, "; ".join(map(str, bad))

    @invariant()
    def timeline_matches_shadow(self):
        """Legal transitions only: the state files present are exactly what the shadow predicts."""
        if not hasattr(self, "tl"):
            return
        listed = {i.key: i for i in self.tl.instants()}
        assert set(listed) == set(self.shadow), \
            f"I3.legal-transition: instants {sorted(map(str, listed))} != shadow {sorted(map(str, self.shadow))}"
        for key, sh in self.shadow.items():
            i = listed[key]
            present = self.tl.states_present(i.requested_time, i.action)
            assert present == frozenset(sh["states"]), \
                f"I3.legal-transition: {i} has state files {sorted(s.label for s in present)}, " \
                f"shadow {sorted(s.label for s in sh['states'])}"
            assert i.completion_time == sh["completion"], f"I2: {i} completion {i.completion_time} != {sh['completion']}"
            if i.is_completed:
                assert i.shown_action is COMPLETED_ACTION.get(sh["action"], sh["action"]), f"I4: {i}"
        for action in {sh["action"] for sh in self.shadow.values()}:
            want = sorted(k.requested_time for k, sh in self.shadow.items()
                          if sh["action"] is action and self._state(sh) is not State.COMPLETED)
            got = self.tl.pending_times(action)
            assert got == want, f"pending-times: {action.value} pending {got}, shadow {want}"

    @invariant()
    def completes_once(self):
        """I3.complete-once: a second completion needs an explicit revertToInflight in between."""
        if not hasattr(self, "tl"):
            return
        for key, n in self.completions.items():
            assert n <= 1 + self.reverts.get(key, 0), f"I3.complete-once: {key} completed {n} times"


TestTimeline = TimelineMachine.TestCase


# ------------------------------------------------------------------------------------------------
# Every invariant can fail: broken variants the machine must catch.

class _NoLockSkewedMachine(TimelineMachine):
    """Broken generator: 0.x-style (no lock, no wait) with clocks up to 90 ms apart."""

    def make_generator(self, clocks):
        return NaiveGenerator(clocks=clocks)


class _ShortWaitMachine(TimelineMachine):
    """Broken generator: the lock, but a wait far below the clocks' skew."""

    def make_generator(self, clocks):
        return SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=2), clocks=clocks)


class _NoCompletionOrderTimeline(Timeline):
    """Broken timeline: complete() skips the requested < completion guard (I2)."""

    def complete(self, requested_time, action, completion_time):
        rec = self._record(requested_time, action, "I3.legal-transition")
        if rec.state is State.COMPLETED:
            raise TimelineError("I3.complete-once", f"{rec.view()} is already completed")
        if rec.state is not State.INFLIGHT:
            raise TimelineError("I3.legal-transition", f"{rec.view()} is not inflight")
        rec.states.add(State.COMPLETED)
        rec.completion_time = completion_time
        self._pending.discard(self._key(requested_time, action))
        return rec.view()


class _StalePendingTimeline(Timeline):
    """Broken timeline: complete() forgets to take the instant out of the pending index."""

    def complete(self, requested_time, action, completion_time):
        view = super().complete(requested_time, action, completion_time)
        self._pending.add(self._key(requested_time, action))
        return view


class _CompletesTwiceTimeline(Timeline):
    """Broken timeline: a completed instant can complete again (no complete-once guard)."""

    def complete(self, requested_time, action, completion_time):
        rec = self._record(requested_time, action, "I3.legal-transition")
        if rec.state is State.COMPLETED:
            rec.completion_time = completion_time
            return rec.view()
        return super().complete(requested_time, action, completion_time)


class _SkipsInflightTimeline(Timeline):
    """Broken timeline: transition_to_inflight is accepted from any state (illegal transitions)."""

    def transition_to_inflight(self, requested_time, action):
        rec = self._record(requested_time, action, "I3.legal-transition")
        rec.states.add(State.INFLIGHT)
        return rec.view()


class _LowestStateRecord(_Record):
    @property
    def state(self):
        return min(self.states)


class _LowestStateTimeline(Timeline):
    """Broken timeline: the visible state is the lowest state file present, not the highest."""

    def create(self, requested_time, action, **kw):
        view = super().create(requested_time, action, **kw)
        key = self._key(requested_time, action)
        r = self._records[key]
        self._records[key] = _LowestStateRecord(r.requested_time, r.action, r.states, r.completion_time)
        return view


def _machine(base, **attrs):
    return type(f"Broken{base.__name__}", (base,), attrs)


BROKEN = {
    "no-lock generator": (_NoLockSkewedMachine, ("I1.", "I2.")),
    "short-wait generator": (_ShortWaitMachine, ("I1.", "I2.")),
    "complete without I2 guard": (_machine(TimelineMachine, timeline_class=_NoCompletionOrderTimeline),
                                  ("I2.requested-before-completion",)),
    "completes twice": (_machine(TimelineMachine, timeline_class=_CompletesTwiceTimeline),
                        ("I3.complete-once",)),
    "inflight from any state": (_machine(TimelineMachine, timeline_class=_SkipsInflightTimeline),
                                ("I3.legal-transition",)),
    "stale pending index": (_machine(TimelineMachine, timeline_class=_StalePendingTimeline), ("pending-times",)),
    "lowest visible state": (_machine(TimelineMachine, timeline_class=_LowestStateTimeline),
                             # a completed instant shown as pending also hides its completion time (I2 check)
                             ("I3.visible-state", "I3.legal-transition", "I3.complete-once", "I3.revert", "I2: ")),
}

# Generation only (no shrinking needed to show the catch); long runs so multi-step chains occur.
_CATCH = settings(max_examples=1000, stateful_step_count=50, database=None, deadline=None,
                  phases=[Phase.generate], print_blob=False, report_multiple_bugs=False,
                  suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_machine_catches_broken_variant(name):
    machine, rules = BROKEN[name]
    with pytest.raises(AssertionError) as e:
        run_state_machine_as_test(machine, settings=_CATCH)
    msg = str(e.value)
    assert any(r in msg for r in rules), f"{name}: caught, but by an unexpected check: {msg}"
    print(f"{name}: caught: {msg.splitlines()[0]}")


def test_invariant_checks_flag_a_broken_timeline_directly():
    tl = _NoCompletionOrderTimeline(9)
    tl.create("20250101000000100", Action.COMMIT)
    tl.transition_to_inflight("20250101000000100", Action.COMMIT)
    tl.complete("20250101000000100", Action.COMMIT, "20250101000000050")
    assert not check_requested_before_completion(tl).holds
    low = _LowestStateTimeline(8)
    low.create("20250101000000100", Action.DELTACOMMIT)
    low.transition_to_inflight("20250101000000100", Action.DELTACOMMIT)
    v = check_visible_state_is_highest(low)
    assert not v.holds and "requested" in v.detail


# ------------------------------------------------------------------------------------------------
# Storage with and without put-if-absent (issue #15 item 7): writers colliding on one instant time.
#
# Each process runs one write: obtain a requested time, create, go inflight, complete (completion
# time from consume_time with the completed-file write inside the lock section), steps interleaved
# as drawn. Property I3.single-writer: no instant's files are written by two processes. It holds
# with TrueTime's lock on either storage (times are unique), and with put-if-absent storage for any
# generator (the loser's create is refused: its write fails, nothing is lost). The broken variant
# -- a naive 0.x generator on overwrite storage -- is found and shrunk by Hypothesis.

from model.invariants.timeline import check_single_writer  # noqa: E402
from model.timeline import OVERWRITE, PUT_IF_ABSENT  # noqa: E402

WRITE_STEPS = ("create", "inflight", "complete")
storage_schedule = st.tuples(
    st.lists(st.integers(-3, 3), min_size=2, max_size=3),             # clock offsets (ms) of the writers
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4)), min_size=1, max_size=12),  # (writer, gap ms)
    st.sampled_from([6, 8]),
)


def run_writers(schedule, generator: str, storage: str):
    """Drive the writers; returns the timeline and how many creates put-if-absent refused."""
    offsets, moves, version = schedule
    names = [f"w{i}" for i in range(len(offsets))]
    clocks = {n: Clock(offset_ms=o) for n, o in zip(names, offsets)}
    gen = (NaiveGenerator(clocks=clocks) if generator == "naive" else
           SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=7), clocks=clocks,
                                      lock=Lock(latency_ms=1)))
    tl = Timeline(version, storage=storage)
    progress = {n: 0 for n in names}  # next step index; 3 = done, -1 = failed
    mine: dict[str, str] = {}
    refused = 0
    now = 0
    for w, gap in moves:
        now += gap
        p = names[w % len(names)]
        step = progress[p]
        if step < 0 or step >= len(WRITE_STEPS):
            continue
        try:
            if step == 0:
                rec = gen.generate(p, now)
                now = max(now, rec.released_at)
                mine[p] = rec.time
                tl.create(rec.time, Action.COMMIT, by=p)
            elif step == 1:
                tl.transition_to_inflight(mine[p], Action.COMMIT, by=p)
            else:
                rec, _ = gen.consume_time(p, now, lambda c: tl.complete(mine[p], Action.COMMIT, c, by=p))
                now = max(now, rec.released_at)
            progress[p] += 1
        except TimelineError as e:
            # put-if-absent refuses a colliding create (and the loser's later steps); a naive generator
            # can also hand out a completion time equal to the requested one (no lock, no wait)
            allowed = ({"I3.create-once", "I3.legal-transition"} if storage == PUT_IF_ABSENT else set()) | \
                ({"I2.requested-before-completion"} if generator == "naive" else set())
            assert e.rule in allowed, str(e)
            refused += e.rule == "I3.create-once"
            progress[p] = -1  # the writer fails; it wrote nothing it does not own
    return tl, refused


@pytest.mark.parametrize("generator,storage", [("truetime", OVERWRITE), ("truetime", PUT_IF_ABSENT),
                                               ("naive", PUT_IF_ABSENT)])
@settings(max_examples=300, deadline=None)
@given(schedule=storage_schedule)
def test_one_writer_per_instant(generator, storage, schedule):
    tl, refused = run_writers(schedule, generator, storage)
    v = check_single_writer(tl)
    assert v.holds, f"{v}\n{schedule}"
    if generator == "truetime":
        assert refused == 0  # unique times: put-if-absent never has to refuse


def test_naive_generator_on_overwrite_storage_is_caught_and_shrunk(capsys):
    """The broken variant: no TrueTime lock and storage without put-if-absent. Two writers that read
    the same millisecond write one instant's files; I3.single-writer fails."""

    def fails(schedule):
        return not check_single_writer(run_writers(schedule, "naive", OVERWRITE)[0]).holds

    shrunk = find(storage_schedule, fails, settings=settings(max_examples=3000, database=None, deadline=None,
                                                             phases=[Phase.generate, Phase.shrink]))
    tl, _ = run_writers(shrunk, "naive", OVERWRITE)
    v = check_single_writer(tl)
    assert not v.holds and "2 processes" in v.detail
    assert len(shrunk[1]) <= 4, shrunk  # two creates at one millisecond suffice
    with capsys.disabled():
        print(f"\n[naive generator, overwrite storage] shrunk: {shrunk}\n  => {v}")
