"""Invariants over generated instant times and the times on a timeline (I1, I2, and I3's visible state).

Pure functions returning :class:`model.invariants.Verdict`. They take plain sequences of 17-digit
strings, generation records (anything with the attributes of :class:`model.truetime.GeneratedTime`
that a check names), or a :class:`model.timeline.Timeline`.

* I1 (``HoodieInstantTimeGenerator.createNewInstantTime``, ``SkewAdjustingTimeGenerator``,
  ``TimeGenerator`` javadoc, ``InstantComparison``): instant times are 17-digit strings compared
  lexicographically; every generated time is strictly greater than every time generated before it.
* I2 (``ActiveTimelineV2.createCompleteFileInMetaPath``, RFC-66 "Assumption On Locks"): for every
  completed instant, requested time < completion time.
* I3 (``TimelineLayout.filterHoodieInstantsByLatestState``): the visible state of an instant is the
  highest state among its files.
"""

from __future__ import annotations

from typing import Iterable, Protocol, Sequence

from ..instant import is_calendar_time
from . import Verdict

MAX_INVOLVED = 6


class _Record(Protocol):  # the attributes of model.truetime.GeneratedTime the checks use
    time: str
    process: str
    acquired_at: int
    released_at: int
    seq: int


def _few(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(list(items)[:MAX_INVOLVED])


def check_time_format(times: Iterable[str]) -> Verdict:
    """I1.time-format: every time is a canonical 17-digit string naming a real date and time
    (:func:`model.instant.time_problem`: ``yyyyMMddHHmmssSSS``, no month 13, second 99 or February 30;
    the reserved times of ``HoodieTimeline`` are legal)."""
    bad = [t for t in times if not is_calendar_time(t)]
    return Verdict("I1.time-format", not bad,
                   f"{len(bad)} time(s) are not 17-digit calendar times: {bad[:3]}" if bad else "",
                   _few(map(str, bad)))


def check_times_unique(times: Sequence[str]) -> Verdict:
    """I1.unique: no time was generated twice."""
    seen: set[str] = set()
    dups: list[str] = []
    for t in times:
        if t in seen and t not in dups:
            dups.append(t)
        seen.add(t)
    return Verdict("I1.unique", not dups,
                   f"{len(dups)} time(s) generated more than once: {dups[:3]}" if dups else "", _few(dups))


def check_times_strictly_increasing(times: Sequence[str]) -> Verdict:
    """I1.strictly-increasing: in generation order, each time is ``>`` the one before (lexicographic)."""
    for i in range(1, len(times)):
        if not times[i] > times[i - 1]:
            return Verdict("I1.strictly-increasing", False,
                           f"time #{i} {times[i]} is not after time #{i - 1} {times[i - 1]}",
                           (times[i - 1], times[i]))
    return Verdict("I1.strictly-increasing", True, f"{len(times)} times")


def _ended(r: _Record) -> tuple[int, int]:
    """When a generation ended, as a sort key: (release ms, tie-break).

    Under the lock, generations at the same millisecond are ordered by ``seq`` (the lock order).
    Without it, a tie at one millisecond is concurrent: the end sorts after every start at that
    millisecond (see :func:`_began`), so only a release strictly before an acquisition orders two
    generations.
    """
    return (r.released_at, r.seq if getattr(r, "locked", True) else 1)


def _began(r: _Record) -> tuple[int, int]:
    """When a generation began (accepted attempt's acquisition), as a sort key comparable with :func:`_ended`."""
    return (r.acquired_at, r.seq if getattr(r, "locked", True) else 0)


def check_generation_order(records: Sequence[_Record]) -> Verdict:
    """I1.generation-order: a generation that began after another ended got a strictly greater time.

    "Began" is the accepted attempt's lock acquisition (``acquired_at``) and "ended" is the release
    (``released_at``); under the lock, ties at the same millisecond are ordered by ``seq``
    (completion order = lock order); without the lock a tie at one millisecond is concurrent. Under
    the TrueTime lock every pair of generations is ordered this way, so this is the global order;
    without the lock, overlapping generations are concurrent and only the ordered pairs are checked.
    A generation that takes no time (release = acquisition, e.g. the naive 0.x generator) still
    orders every later one: a record is compared with every record that ended strictly before it
    began, never with itself. O(n log n): prefix maxima over records sorted by end.
    """
    by_end = sorted(records, key=_ended)
    by_start = sorted(records, key=_began)
    j = 0
    best: _Record | None = None  # record with the max time among those ended before the current start
    for b in by_start:
        start = _began(b)
        while j < len(by_end) and _ended(by_end[j]) < start:
            a = by_end[j]
            if best is None or a.time > best.time:
                best = a
            j += 1
        if best is not None and not b.time > best.time:
            return Verdict("I1.generation-order", False,
                           f"{b.process} acquired at {b.acquired_at} and got {b.time}, not after "
                           f"{best.time} that {best.process} generated and released at {best.released_at}",
                           (best.time, b.time))
    return Verdict("I1.generation-order", True, f"{len(records)} generations")


def _timeline_times(timeline) -> list[tuple[str, str]]:
    out = []
    for i in timeline.instants():
        out.append((i.requested_time, f"{i.requested_time}.{i.action.value} requested"))
        if i.completion_time is not None:
            out.append((i.completion_time, f"{i.requested_time}.{i.action.value} completion"))
    return out


def check_timeline_time_format(timeline) -> Verdict:
    """I1.time-format over every requested and completion time on a timeline."""
    return check_time_format(t for t, _ in _timeline_times(timeline))


def check_timeline_times_unique(timeline) -> Verdict:
    """I1.unique over a timeline: all requested and completion times are distinct.

    Holds when every time came from one TrueTime generator (the model abstraction of section 2).
    """
    where: dict[str, str] = {}
    for t, what in _timeline_times(timeline):
        if t in where:
            return Verdict("I1.unique", False, f"time {t} is both the {where[t]} and the {what} time",
                           (where[t], what))
        where[t] = what
    return Verdict("I1.unique", True)


def check_requested_before_completion(timeline) -> Verdict:
    """I2.requested-before-completion: every completed instant has requested < completion time,
    and carries a completion time (pending instants carry none)."""
    for i in timeline.instants():
        if i.is_completed:
            if i.completion_time is None:
                return Verdict("I2.requested-before-completion", False, f"{i} is completed without a completion time",
                               (str(i),))
            if not i.completion_time > i.requested_time:
                return Verdict("I2.requested-before-completion", False,
                               f"{i}: completion {i.completion_time} is not after requested {i.requested_time}",
                               (str(i),))
        elif i.completion_time is not None:
            return Verdict("I2.requested-before-completion", False, f"pending {i} has a completion time",
                           (str(i),))
    return Verdict("I2.requested-before-completion", True)


def check_visible_state_is_highest(timeline) -> Verdict:
    """I3.visible-state: each instant's visible state is the highest state among its files."""
    for i in timeline.instants():
        present = timeline.states_present(i.requested_time, i.action)
        if not present:
            return Verdict("I3.visible-state", False, f"{i} is listed but has no state file", (str(i),))
        if i.state is not max(present):
            labels = sorted(s.label for s in present)
            return Verdict("I3.visible-state", False,
                           f"{i} shows {i.state.label} but its files are {labels}", (str(i),))
    return Verdict("I3.visible-state", True)


def check_generated_times(records: Sequence[_Record]) -> list[Verdict]:
    """All time checks over generation records (in completion order)."""
    times = [r.time for r in records]
    return [check_time_format(times), check_times_unique(times), check_generation_order(records)]


def check_timeline_times(timeline) -> list[Verdict]:
    """All time checks over a timeline."""
    return [check_timeline_time_format(timeline), check_timeline_times_unique(timeline),
            check_requested_before_completion(timeline), check_visible_state_is_highest(timeline)]


__all__ = [
    "check_time_format", "check_times_unique", "check_times_strictly_increasing", "check_generation_order",
    "check_timeline_time_format", "check_timeline_times_unique", "check_requested_before_completion",
    "check_visible_state_is_highest", "check_generated_times", "check_timeline_times",
]
