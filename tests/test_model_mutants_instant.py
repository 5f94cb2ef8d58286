"""Focused tests for model.instant (hudi-semantics.md section 1): instant-time validity at every calendar
boundary (``parseDateFromInstantTime``), legacy/long normalisation (``fixInstantTimeCompatibility``),
epoch conversions, identity by comparable action (``InstantComparatorV2``) and the printed form."""

from __future__ import annotations

import pytest

from model.instant import (Action, Instant, InstantKey, State, as_action, comparable_action, completed_action,
                           format_millis, is_calendar_time, is_time, normalize_time, time_problem, to_millis)


@pytest.mark.parametrize("value,problem", [
    ("20250101000000000", None), ("20251231235959999", None), ("00000000000000", None),
    ("00000000000001999", None), ("00000000000002", None), ("20240229000000000", None),
    ("20000229000000000", None), ("2025010100000000012", None), ("20250101000000", None),
    (12, "is not a string of digits"), ("2025-01-01", "is not a string of digits"),
    ("²0250101000000000", "is not a string of digits"),
    ("2025010100000", "has 13 digits; expected 14 or 17"), ("202501010000000", "has 15 digits; expected 14 or 17"),
    ("00000101000000000", "year 0000 is out of range"),
    ("20250001000000000", "month 00 is out of range 01-12"), ("20251301000000000", "month 13 is out of range 01-12"),
    ("20250100000000000", "day 00 is out of range 01-31"), ("20250132000000000", "day 32 is out of range 01-31"),
    ("20250101240000000", "hour 24 is out of range 00-23"), ("20250101006000000", "minute 60 is out of range 00-59"),
    ("20250101000060000", "second 60 is out of range 00-59"),
    ("20250229000000000", "day 29 does not exist in month 02 of 2025"),
    ("19000229000000000", "day 29 does not exist in month 02 of 1900"),
    ("20250431000000000", "day 31 does not exist in month 04 of 2025"),
    ("20251231000000000", None), ("20250131000000000", None),
])
def test_time_problem(value, problem):
    assert time_problem(value) == problem


def test_time_predicates_and_normalisation():
    assert is_time("20250101000000000") and not is_time("2025010100000000") and not is_time(20250101000000000)
    assert not is_time("2025010100000000a") and is_calendar_time("20250101000000000")
    assert not is_calendar_time("20251301000000000") and not is_calendar_time("20250101000000")
    assert normalize_time("20250101000000") == "20250101000000999"
    assert normalize_time("2025010100000012345") == "20250101000000123"
    assert normalize_time("20250101000000123") == "20250101000000123"
    with pytest.raises(ValueError, match=r"instant time '2025' has 4 digits; expected 14 or 17"):
        normalize_time("2025")
    with pytest.raises(ValueError, match=r"instant time 'x' is not a string of digits"):
        normalize_time("x")


def test_epoch_conversions_round_trip():
    assert format_millis(0) == "19700101000000000" and format_millis(1_735_689_600_001) == "20250101000000001"
    assert format_millis(86_399_999) == "19700101235959999"
    assert to_millis("20250101000000001") == 1_735_689_600_001 and to_millis("19700101000000") == 999
    for ms in (0, 1, 999, 1000, 1_735_689_600_000, 4_102_444_800_123):
        assert to_millis(format_millis(ms)) == ms
    with pytest.raises(ValueError, match="negative epoch milliseconds -1"):
        format_millis(-1)


def test_identity_and_printed_form():
    """Identity is (requested time, comparable action); a completed compaction shows as commit (I4)."""
    assert as_action("commit") is Action.COMMIT and as_action(Action.CLEAN) is Action.CLEAN
    assert comparable_action(Action.COMPACTION) is Action.COMMIT and comparable_action(Action.CLEAN) is Action.CLEAN
    assert completed_action(Action.LOGCOMPACTION) is Action.DELTACOMMIT
    assert completed_action(Action.CLUSTERING) is Action.REPLACECOMMIT
    assert InstantKey.of("1", "compaction") == InstantKey("1", Action.COMMIT)
    t = "20250101000000100"
    pend = Instant(t, Action.COMPACTION, State.INFLIGHT)
    done = Instant(t, Action.COMPACTION, State.COMPLETED, "20250101000000200")
    assert pend.key == done.key == InstantKey(t, Action.COMMIT)
    assert pend.is_pending and not pend.is_completed and done.is_completed and not done.is_pending
    assert (pend.shown_action, done.shown_action) == (Action.COMPACTION, Action.COMMIT)
    assert str(pend) == f"{t}.compaction[inflight]"
    assert str(done) == f"{t}->20250101000000200.commit[completed]"
    assert State.REQUESTED.label == "requested" and State.REQUESTED < State.INFLIGHT < State.COMPLETED


def test_normalize_time_refusals_and_the_17_digit_boundary():
    for bad, msg in ((None, "instant time None is not a string of digits"),
                     ("12a", "instant time '12a' is not a string of digits"),
                     ("123456789012345", "instant time '123456789012345' has 15 digits; expected 14 or 17")):
        with pytest.raises(ValueError) as e:
            normalize_time(bad)
        assert str(e.value) == msg
    assert normalize_time("20250101000000123") == "20250101000000123"  # exactly 17: kept, not cut
    assert normalize_time("202501010000001234") == "20250101000000123"
