"""Property suite: TrueTime gives strictly increasing times across processes for any clock schedule.

A *schedule* is a set of process clocks (offset, drift, backward and forward jumps) and an
arbitrary interleaving of generation steps (request / acquire / read / finish_wait / release of
``model.truetime``), with arbitrary gaps of true time between moves. The driver performs a chosen
process's next step when it is enabled, then drains every pending generation.

Property: with the shared lock and ``wait + lock hand-off > actual skew`` (the condition of
``model.truetime.guarantee_holds``; concretely: a wait >= the actual maximum skew and at least 1 ms of
lock acquisition, or a wait strictly above the skew), every generated time is unique and strictly
greater than all earlier ones, in completion order and in real-time order (I1).

Each weaker configuration fails and the tests assert that Hypothesis finds and shrinks a
counterexample (``hypothesis.find``), printing the shrunk schedule:

* the lock but a wait below the skew;
* no lock (0.x: read the clock, per-JVM guard only);
* the lock and a wait exactly equal to the skew with instantaneous lock hand-off (millisecond
  truncation: equal times across processes are possible -- the off-by-one noted in model.truetime);
* clocks read to the second (legacy 14-digit instants) with a wait that covers the skew but not the
  resolution (``wait + hand-off >= skew + resolution`` is needed).

The clock resolution is a parameter of every property (``RESOLUTIONS``: milliseconds and seconds).

Replay a failure of the @given property with the printed ``@reproduce_failure`` blob or
``pytest --hypothesis-seed=N``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, Phase, assume, find, given, settings
from hypothesis import strategies as st

from model.invariants import violations
from model.invariants.times import check_generated_times, check_times_strictly_increasing
from model.truetime import (
    Clock,
    Lock,
    TimeGenerator,
    TimeGeneratorConfig,
    actual_skew,
    guarantee_holds,
)

WAIT_MS = 40
HORIZON_MS = 20_000     # moves stop once true time passes this; drift is small over it
MAX_DRIFT_PPM = 100     # |drift| <= 100 ppm -> a few ms over a run
DRIFT_SPAN_HORIZON_MS = HORIZON_MS + 5_000  # bounds the final true time (moves stop + the drain)


@dataclass(frozen=True)
class Schedule:
    """Clocks of the processes and the interleaving: moves of (process index, gap ms, kind, hold ms)."""

    clocks: tuple[Clock, ...]
    moves: tuple[tuple[int, int, str, int], ...]

    def __str__(self) -> str:
        cl = "\n".join(f"  p{i}: offset={c.offset_ms} drift={c.drift_ppm}ppm jumps={list(c.jumps)}"
                       for i, c in enumerate(self.clocks))
        mv = ", ".join(f"p{p}+{g}ms{'' if k == 'generate' else f'/consume(hold {h})'}" for p, g, k, h in self.moves)
        return f"clocks:\n{cl}\nmoves: {mv}"


@st.composite
def clocks_within(draw, skew_ms: int) -> Clock:
    """A clock whose error stays inside the window ``[0, skew_ms]`` over the run.

    The drift is drawn first; its span over ``DRIFT_SPAN_HORIZON_MS`` is reserved at the side it
    moves towards, and error levels are drawn in what remains (boundaries included, so the actual
    skew can equal ``skew_ms``; the edges are drawn often). Jumps move between levels, backwards as
    well as forwards.
    """
    ppm = draw(st.one_of(st.just(0), st.integers(-MAX_DRIFT_PPM, MAX_DRIFT_PPM)))
    span = (abs(ppm) * DRIFT_SPAN_HORIZON_MS + 999_999) // 1_000_000 + (1 if ppm else 0)
    lo, hi = (span, skew_ms) if ppm < 0 else (0, skew_ms - span)
    hi = max(lo, hi)
    level = st.one_of(st.sampled_from([lo, hi]), st.integers(lo, hi))  # the edges of the window are where it breaks
    levels = draw(st.lists(level, min_size=1, max_size=4))
    times = sorted(draw(st.lists(st.integers(1, HORIZON_MS), min_size=len(levels) - 1,
                                 max_size=len(levels) - 1, unique=True)))
    jumps = tuple((t, levels[i + 1] - levels[i]) for i, t in enumerate(times))
    return Clock(offset_ms=levels[0], drift_ppm=ppm, jumps=jumps)


move_st = st.tuples(st.integers(0, 3), st.integers(0, 3 * WAIT_MS), st.sampled_from(["generate", "consume"]),
                    st.integers(0, 5))


def schedules(skew_ms: int, max_moves: int = 60) -> st.SearchStrategy[Schedule]:
    return st.builds(Schedule,
                     clocks=st.lists(clocks_within(skew_ms), min_size=2, max_size=4).map(tuple),
                     moves=st.lists(move_st, min_size=1, max_size=max_moves).map(tuple))


def run_schedule(schedule: Schedule, config: TimeGeneratorConfig, latency_ms: int) -> tuple[TimeGenerator, int]:
    """Drive the generator through the schedule; returns it and the final true time."""
    names = [f"p{i}" for i in range(len(schedule.clocks))]
    gen = TimeGenerator(config, clocks=dict(zip(names, schedule.clocks)), lock=Lock(latency_ms=latency_ms))
    now = 0
    for p_idx, gap, kind, hold in schedule.moves:
        if now > HORIZON_MS:
            break
        now += gap
        p = names[p_idx % len(names)]
        nxt = gen.next_step(p)
        if nxt is None:
            gen.request(p, now, kind, hold)
        elif nxt[1] is not None:  # enabled (not blocked behind the lock): do it now or when due
            now = max(now, nxt[1])
            gen.step(p, now)
    while gen.pending:  # drain: always the earliest enabled step
        due = sorted((e, p) for p in gen.pending if (e := gen.earliest(p)) is not None)
        e, p = due[0]
        now = max(now, e)
        gen.step(p, now)
    return gen, now


def time_violations(gen: TimeGenerator) -> list:
    return violations(check_generated_times(gen.history) + [check_times_strictly_increasing(gen.times())])


# ------------------------------------------------------------------------------------ properties
#: Clock resolutions the properties run with: 17-digit millisecond and 14-digit second instants.
RESOLUTIONS = (1, 1000)


@pytest.mark.parametrize("resolution_ms", RESOLUTIONS)
@pytest.mark.parametrize("latency_ms,skew_ms", [(1, WAIT_MS), (0, WAIT_MS - 1), (3, WAIT_MS + 2)])
def test_truetime_strictly_increasing_when_wait_covers_skew(latency_ms, skew_ms, resolution_ms):
    # the wait covers the skew plus the resolution less one (WAIT_MS at millisecond resolution)
    config = TimeGeneratorConfig(max_expected_skew_ms=WAIT_MS + resolution_ms - 1, resolution_ms=resolution_ms)

    @given(schedules(skew_ms))
    def prop(schedule):
        gen, end = run_schedule(schedule, config, latency_ms)
        s = actual_skew(schedule.clocks, 0, end)
        assume(guarantee_holds(config, s, latency_ms))  # the construction keeps this true
        bad = time_violations(gen)
        assert not bad, f"{'; '.join(map(str, bad))}\nactual skew {s} ms\n{schedule}"
        assert len(gen.history) >= 1

    prop()


@given(schedules(WAIT_MS), st.integers(0, 2), st.sampled_from(RESOLUTIONS))
def test_per_process_guard_alone_keeps_each_process_increasing(schedule, latency_ms, resolution_ms):
    """Even without the lock, each process's own ``generate`` times strictly increase (LAST_INSTANT_TIME),
    at either clock resolution (at seconds the loop spins until the reading ticks)."""
    gen, _ = run_schedule(schedule, TimeGeneratorConfig(max_expected_skew_ms=0, use_lock=False,
                                                        resolution_ms=resolution_ms), latency_ms)
    for p in {r.process for r in gen.history}:
        mine = [r.time for r in gen.history if r.process == p and r.kind == "generate"]
        v = check_times_strictly_increasing(mine)
        assert v.holds, f"{p}: {v}\n{schedule}"


# ------------------------------------------------------------------ weaker configs must fail
# No "explain" phase: it re-runs the shrunk example many times and dominates the runtime.
_FIND = settings(max_examples=3000, database=None, deadline=None,
                 phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))

WEAKER = {
    "lock, wait below the skew": (TimeGeneratorConfig(max_expected_skew_ms=10), 1, 3 * WAIT_MS),
    "no lock (0.x)": (TimeGeneratorConfig(max_expected_skew_ms=0, use_lock=False), 0, WAIT_MS),
    "lock, wait == skew, instant hand-off": (TimeGeneratorConfig(max_expected_skew_ms=WAIT_MS), 0, WAIT_MS),
    "lock, second clocks, wait covers the skew only": (
        TimeGeneratorConfig(max_expected_skew_ms=WAIT_MS + 1, resolution_ms=1000), 1, WAIT_MS),
}


@pytest.mark.parametrize("name", list(WEAKER))
def test_hypothesis_finds_and_shrinks_a_counterexample(name, capsys):
    config, latency_ms, skew_ms = WEAKER[name]

    def fails(schedule):
        gen, _ = run_schedule(schedule, config, latency_ms)
        return bool(time_violations(gen))

    shrunk = find(schedules(skew_ms, max_moves=12), fails, settings=_FIND)
    gen, end = run_schedule(shrunk, config, latency_ms)
    bad = time_violations(gen)
    assert bad and not guarantee_holds(config, actual_skew(shrunk.clocks, 0, end), latency_ms)
    # Shrunk: a handful of moves suffices to break it (the minimum is 2).
    assert len(shrunk.moves) <= 8, str(shrunk)
    with capsys.disabled():
        print(f"\n[{name}] shrunk counterexample (actual skew {actual_skew(shrunk.clocks, 0, end)} ms, "
              f"wait {config.max_expected_skew_ms} ms, lock {'on' if config.use_lock else 'off'}, "
              f"hand-off {latency_ms} ms):\n{shrunk}\n"
              + "\n".join(f"  {r.process} {r.kind} read@{r.read_at} -> {r.time}" for r in gen.history)
              + f"\n  => {bad[0]}")
