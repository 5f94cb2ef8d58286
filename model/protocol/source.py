"""A replayable source: one split per writer task, records addressed by offset.

Like a Kafka partition read by one Flink source subtask chained to one writer task: the record
at (split, offset) is always the same, so rewinding to a checkpointed offset replays exactly
the records read after it. Records are ``(key, value)``; keys are unique per (split, offset) so
a committed table can be compared with the emitted records as a multiset (a duplicate is
visible, not hidden by upsert semantics).
"""

from __future__ import annotations

from typing import NamedTuple


class Record(NamedTuple):
    key: str
    value: int


class Source:
    """Deterministic records: ``record(split, offset)``; ``records`` per split."""

    __slots__ = ("splits", "records", "seed")

    def __init__(self, splits: int, records: int, seed: int = 0):
        self.splits = splits
        self.records = records
        self.seed = seed

    def record(self, split: int, offset: int) -> Record:
        if not (0 <= split < self.splits and 0 <= offset < self.records):
            raise IndexError(f"no record at split {split} offset {offset}")
        # A small deterministic mix; any function of (seed, split, offset) would do.
        value = (self.seed * 1_000_003 + split * 7919 + offset * 104_729) % 1_000_000_007
        return Record(f"s{split}-r{offset:06d}", value)

    def records_between(self, split: int, start: int, end: int) -> list[Record]:
        """The records at offsets ``[start, end)`` of ``split`` (what one data file holds)."""
        return [self.record(split, o) for o in range(start, end)]

    def has(self, split: int, offset: int) -> bool:
        return offset < self.records
