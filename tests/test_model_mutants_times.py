"""Focused tests for model.invariants.times that `make mutate` showed missing.

The verdicts are what ``audit``, ``replay`` and the report print: each names its invariant (I1, I2,
I3 of ``hudi-semantics.md`` section 8), says whether it holds, and on a violation names the times or
instants involved and why. These tests pin all three for every check, holding and violated.
"""

from __future__ import annotations

from dataclasses import dataclass

from model.instant import Action, Instant, State
from model.invariants import Verdict
from model.invariants.times import (MAX_INVOLVED, check_generated_times, check_generation_order,
                                    check_requested_before_completion, check_time_format,
                                    check_timeline_time_format, check_timeline_times, check_timeline_times_unique,
                                    check_times_strictly_increasing, check_times_unique,
                                    check_visible_state_is_highest)
from model.timeline import Timeline

A, B, C, D = "20250101000000100", "20250101000000200", "20250101000000300", "20250101000000400"


def completed(tl: Timeline, req: str, comp: str, action: Action = Action.COMMIT) -> None:
    tl.create(req, action)
    tl.transition_to_inflight(req, action)
    tl.complete(req, action, comp)


def test_time_format_names_the_bad_times():
    """I1.time-format (``InstantComparison``: 17-digit strings)."""
    assert check_time_format([A, B]) == Verdict("I1.time-format", True, "", ())
    bad = [str(n) for n in range(10)]
    v = check_time_format([A, *bad])
    assert v == Verdict("I1.time-format", False, f"10 time(s) are not 17-digit calendar times: {bad[:3]}",
                        tuple(bad[:MAX_INVOLVED]))
    # 17 digits out of calendar range (month 13, Feb 30) are refused too
    cal = ["20251301000000000", "20250230000000000"]
    assert check_time_format([A, *cal]) == Verdict(
        "I1.time-format", False, f"2 time(s) are not 17-digit calendar times: {cal}", tuple(cal))


def test_times_unique_names_each_duplicate_once():
    """I1.unique (``createNewInstantTime``: every generated time is new)."""
    assert check_times_unique([A, B, C]) == Verdict("I1.unique", True, "", ())
    v = check_times_unique([A, B, A, A, C, B])
    assert v == Verdict("I1.unique", False, f"2 time(s) generated more than once: {[A, B]}", (A, B))


def test_strictly_increasing_names_the_first_pair_out_of_order():
    assert check_times_strictly_increasing([A, B, C]) == Verdict("I1.strictly-increasing", True, "3 times")
    assert check_times_strictly_increasing([]) == Verdict("I1.strictly-increasing", True, "0 times")
    v = check_times_strictly_increasing([A, C, C, B])
    assert v == Verdict("I1.strictly-increasing", False, f"time #2 {C} is not after time #1 {C}", (C, C))


@dataclass
class Rec:  # the attributes of model.truetime.GeneratedTime that check_generation_order reads
    time: str
    process: str
    acquired_at: int
    released_at: int
    seq: int


def test_generation_order_verdicts():
    """I1.generation-order: a generation that began after another ended got a greater time."""
    ok = [Rec(A, "a", 0, 5, 0), Rec(B, "b", 5, 9, 1), Rec(C, "a", 10, 12, 2)]
    assert check_generation_order(ok) == Verdict("I1.generation-order", True, "3 generations")
    bad = [Rec(C, "a", 0, 5, 0), Rec(B, "b", 6, 9, 1)]
    assert check_generation_order(bad) == Verdict(
        "I1.generation-order", False,
        f"b acquired at 6 and got {B}, not after {C} that a generated and released at 5", (C, B))
    # Overlapping generations (no lock) are concurrent: no order to check.
    assert check_generation_order([Rec(C, "a", 0, 5, 0), Rec(B, "b", 3, 9, 1)]).holds
    assert [v.invariant for v in check_generated_times(ok)] == ["I1.time-format", "I1.unique", "I1.generation-order"]


def test_timeline_time_checks_name_the_instants():
    tl = Timeline(9)
    completed(tl, A, B)
    tl.create(C, Action.CLEAN)
    assert check_timeline_times_unique(tl) == Verdict("I1.unique", True)
    assert check_timeline_time_format(tl) == Verdict("I1.time-format", True, "", ())
    tl.create(B, Action.ROLLBACK)  # B is also A's completion time
    assert check_timeline_times_unique(tl) == Verdict(
        "I1.unique", False, f"time {B} is both the {A}.commit completion and the {B}.rollback requested time",
        (f"{A}.commit completion", f"{B}.rollback requested"))


class Listed:
    """A timeline as a reader may find it (the check reads ``instants()`` only): any instant records."""

    def __init__(self, *instants: Instant):
        self._instants = list(instants)

    def instants(self) -> list[Instant]:
        return self._instants


def test_requested_before_completion_verdicts():
    """I2 (``ActiveTimelineV2.createCompleteFileInMetaPath``): requested < completion for a completed instant,
    and only completed instants carry a completion time."""
    tl = Timeline(9)
    completed(tl, A, B)
    assert check_requested_before_completion(tl) == Verdict("I2.requested-before-completion", True)
    ok = Instant(A, Action.COMMIT, State.COMPLETED, B)
    for bad, detail in [
        (Instant(C, Action.COMMIT, State.COMPLETED, None), "is completed without a completion time"),
        (Instant(C, Action.COMMIT, State.COMPLETED, C), f": completion {C} is not after requested {C}"),
        (Instant(C, Action.COMMIT, State.COMPLETED, B), f": completion {B} is not after requested {C}"),
        (Instant(C, Action.COMMIT, State.INFLIGHT, D), "has a completion time"),
    ]:
        v = check_requested_before_completion(Listed(ok, bad))
        expected = f"pending {bad} has a completion time" if bad.is_pending else (
            f"{bad} is completed without a completion time" if bad.completion_time is None else f"{bad}{detail}")
        assert v == Verdict("I2.requested-before-completion", False, expected, (str(bad),))
    assert check_requested_before_completion(Listed(ok, Instant(C, Action.CLEAN, State.INFLIGHT))).holds


def test_visible_state_verdicts():
    """I3 (``TimelineLayout.filterHoodieInstantsByLatestState``): the visible state is the highest file's."""
    tl = Timeline(9)
    completed(tl, A, B)
    tl.create(C, Action.CLEAN)
    assert check_visible_state_is_highest(tl) == Verdict("I3.visible-state", True)
    assert [v.invariant for v in check_timeline_times(tl)] == [
        "I1.time-format", "I1.unique", "I2.requested-before-completion", "I3.visible-state"]
    assert all(v.holds for v in check_timeline_times(tl))


def test_verdict_text_shows_who_only_when_violated():
    assert str(Verdict("I1.unique", True, "ok", ("x",))) == "I1.unique holds: ok"
    assert str(Verdict("I1.unique", False, "twice", ("x", "y"))) == "I1.unique VIOLATED: twice [x, y]"
    assert str(Verdict("I1.unique", False)) == "I1.unique VIOLATED"


class Files(Listed):
    """A listing whose state files are given per instant (``states_present``), as a reader would see them."""

    def __init__(self, files: dict, *instants: Instant):
        super().__init__(*instants)
        self._files = files

    def states_present(self, requested_time, action):
        return self._files[requested_time]


def test_visible_state_violations_name_the_instant():
    """I3: an instant listed without any state file, or showing a state lower than its highest file."""
    a, c = Instant(A, Action.COMMIT, State.COMPLETED, B), Instant(C, Action.CLEAN, State.INFLIGHT)
    ok = {A: {State.REQUESTED, State.INFLIGHT, State.COMPLETED}}
    assert check_visible_state_is_highest(Files({**ok, C: {State.REQUESTED, State.INFLIGHT}}, a, c)).holds
    assert check_visible_state_is_highest(Files({**ok, C: set()}, a, c)) == Verdict(
        "I3.visible-state", False, f"{c} is listed but has no state file", (str(c),))
    assert check_visible_state_is_highest(Files({**ok, C: {State.COMPLETED, State.REQUESTED}}, a, c)) == Verdict(
        "I3.visible-state", False, f"{c} shows inflight but its files are ['completed', 'requested']", (str(c),))


def test_times_unique_detail_shows_the_first_three_duplicates():
    times = [A, B, C, D, A, B, C, D]
    v = check_times_unique(times)
    assert v.detail == f"4 time(s) generated more than once: {[A, B, C]}" and v.involved == (A, B, C, D)


def test_generation_order_blames_the_first_released_of_equal_times():
    """Two concurrent generations that got the same time, then a later one that got less: the verdict
    names the earliest-released holder of the greatest time (``best`` keeps the first of equals)."""
    recs = [Rec(C, "a", 0, 5, 0), Rec(C, "b", 1, 6, 1), Rec(B, "c", 7, 9, 2)]
    assert check_generation_order(recs) == Verdict(
        "I1.generation-order", False, f"c acquired at 7 and got {B}, not after {C} that a generated and released at 5",
        (C, B))


def test_strictly_increasing_checks_the_first_pair_too():
    assert check_times_strictly_increasing([B, A]) == Verdict(
        "I1.strictly-increasing", False, f"time #1 {A} is not after time #0 {B}", (B, A))


def test_generation_order_sees_every_earlier_release():
    """The greatest time among *all* generations released before b began counts, whichever came first; and an
    equal time is not after it (I1: strictly greater)."""
    recs = [Rec(A, "a", 0, 1, 0), Rec(C, "b", 0, 2, 1), Rec(B, "c", 5, 6, 2)]  # a and b concurrent, then c
    assert check_generation_order(recs) == Verdict(
        "I1.generation-order", False, f"c acquired at 5 and got {B}, not after {C} that b generated and released at 2",
        (C, B))
    assert check_generation_order([Rec(C, "a", 0, 1, 0), Rec(C, "b", 2, 3, 1)]) == Verdict(
        "I1.generation-order", False, f"b acquired at 2 and got {C}, not after {C} that a generated and released at 1",
        (C, C))
