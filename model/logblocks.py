"""Log blocks: what a log file holds, and which blocks a log reader merges (pure).

Hudi facts (``hudi-semantics.md`` 1.9, 3.5; sources cited per function):

* a log file is a sequence of blocks (``HoodieLogFormat``); each block has a type
  (``HoodieLogBlock.HoodieLogBlockType``: ``AVRO_DATA_BLOCK`` / ``PARQUET_DATA_BLOCK`` /
  ``HFILE_DATA_BLOCK`` = data, ``DELETE_BLOCK``, ``COMMAND_BLOCK``, ``CORRUPT_BLOCK``) and a header
  with the ``INSTANT_TIME`` of the instant that wrote it;
* a command block (``HoodieCommandBlock``) of type ``ROLLBACK_BLOCK`` (``ROLLBACK_PREVIOUS_BLOCK``)
  carries ``TARGET_INSTANT_TIME``: written by a rollback into the log files a failed deltacommit
  appended to (table version 6; tv8 rollbacks delete the failed instant's own log files -- inferred);
* in table version 6 a log file is named after the base instant of its slice, so several writers
  append to the same log file (each block names its writer); in tv8/9 every deltacommit writes its
  own log files (one writer per file);
* the reader (``AbstractHoodieLogRecordReader#scanInternal``) walks the blocks of a slice's logs in
  order: it stops at a block newer than the latest instant to read; skips a data/delete block whose
  instant is not completed (``!completedInstantsTimeline.containsOrBeforeTimelineStarts(t) ||
  inflightInstantsTimeline.containsInstant(t)``: an instant *before the timeline starts* counts as
  completed -- it was archived); queues the others; a rollback command block pops queued blocks from
  the top while their instant is the target ("invalid or extra rollback block" otherwise).

The model keeps a table's blocks as ``{LogFile: (LogBlock, ...)}`` beside the file listing; readers,
invariants (``model.invariants.timeline``: ``I8.log-blocks``, ``I9.compaction-plan`` for tv6) and
property suites take that mapping.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Callable, Iterable, Mapping, Sequence

from .filenames import LogFile, log_order_key
from .instant import State


class BlockKind(str, Enum):
    """``HoodieLogBlock.HoodieLogBlockType`` as the reader distinguishes them."""

    DATA = "data"          # AVRO_DATA_BLOCK, PARQUET_DATA_BLOCK, HFILE_DATA_BLOCK
    DELETE = "delete"      # DELETE_BLOCK
    COMMAND = "command"    # COMMAND_BLOCK (ROLLBACK_BLOCK)
    CORRUPT = "corrupt"    # CORRUPT_BLOCK (a torn write)


@dataclass(frozen=True)
class LogBlock:
    """One block: its kind, the ``INSTANT_TIME`` header and, for a rollback command block, the
    ``TARGET_INSTANT_TIME`` header."""

    kind: BlockKind
    instant_time: str
    target_instant: str | None = None

    @property
    def carries_data(self) -> bool:
        return self.kind in (BlockKind.DATA, BlockKind.DELETE)

    def __str__(self) -> str:
        tgt = f"->{self.target_instant}" if self.target_instant else ""
        return f"{self.kind.value}@{self.instant_time}{tgt}"


def data_block(instant: str) -> LogBlock:
    return LogBlock(BlockKind.DATA, instant)


def delete_block(instant: str) -> LogBlock:
    return LogBlock(BlockKind.DELETE, instant)


def rollback_block(rollback_instant: str, target: str) -> LogBlock:
    """``HoodieCommandBlock`` of type ``ROLLBACK_BLOCK``, written by rollback ``rollback_instant``."""
    return LogBlock(BlockKind.COMMAND, rollback_instant, target)


def committed_for_reader(timeline) -> Callable[[str], bool]:
    """``completedInstantsTimeline.containsOrBeforeTimelineStarts(t) && !inflight.containsInstant(t)``
    over the write timeline (commits, deltacommits, compactions, replace): completed, or older
    than the first instant of the active timeline (archived)."""
    writes = timeline.write_timeline()
    completed = {i.requested_time for i in writes if i.state is State.COMPLETED}
    pending = {i.requested_time for i in writes if i.state is not State.COMPLETED}
    start = min((i.requested_time for i in writes), default=None)

    def ok(t: str) -> bool:
        if t in pending:
            return False
        return t in completed or (start is not None and t < start)
    return ok


def scan(blocks: Sequence[LogBlock], timeline, latest_instant: str | None = None) -> list[LogBlock]:
    """``AbstractHoodieLogRecordReader#scanInternal``: the data and delete blocks a reader merges.

    ``blocks`` in log order (``LogFileComparator`` order of the files, then block order in each
    file); ``latest_instant`` the newest instant to read (``None``: no limit).
    """
    ok = committed_for_reader(timeline)
    queue: list[LogBlock] = []
    for b in blocks:
        if b.kind is not BlockKind.CORRUPT and latest_instant is not None and b.instant_time > latest_instant:
            break  # a block newer than the instant being read: stop
        if b.carries_data:
            if not ok(b.instant_time):
                continue  # an uncommitted block, possibly from a failed write
            queue.append(b)
        elif b.kind is BlockKind.COMMAND:
            while queue and (queue[-1].kind is BlockKind.CORRUPT or queue[-1].instant_time == b.target_instant):
                queue.pop()  # ROLLBACK_PREVIOUS_BLOCK: pop while the top is the target
        else:
            queue.append(b)  # a corrupt block is queued; a following rollback block pops it
    return [b for b in queue if b.carries_data]


def slice_blocks(log_files: Iterable[LogFile], blocks: Mapping[LogFile, Sequence[LogBlock]]) -> list[LogBlock]:
    """The blocks of a slice's log files in reading order (``LogFileComparator``, then file order)."""
    return [b for lf in sorted(log_files, key=log_order_key) for b in blocks.get(lf, ())]


def rolled_back(blocks: Iterable[LogBlock]) -> frozenset[str]:
    """Instants targeted by a rollback command block among ``blocks``."""
    return frozenset(b.target_instant for b in blocks if b.kind is BlockKind.COMMAND and b.target_instant)


def writers(blocks: Iterable[LogBlock]) -> frozenset[str]:
    """Instants that wrote data or delete blocks (several in a shared tv6 log)."""
    return frozenset(b.instant_time for b in blocks if b.carries_data)


__all__ = ["BlockKind", "LogBlock", "data_block", "delete_block", "rollback_block", "committed_for_reader",
           "scan", "slice_blocks", "rolled_back", "writers"]
