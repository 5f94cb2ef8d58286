"""Completion-time lookups across the active timeline and the LSM history (``CompletionTimeQueryViewV2``).

Hudi facts encoded here (``hudi-semantics.md`` 3.4, ``hudi-common/.../timeline/versioning/v2/CompletionTimeQueryViewV2.java``):

* ``load()`` maps requested -> completion time for every completed instant of the active timeline; the cursor is
  the first instant of the active timeline;
* ``getCompletionTime(t)``: a map hit; else ``t >= cursor`` -> empty (pending); else load the history for
  ``[t, cursor)`` (``loadCompletionTimeIncrementally``, ``ClosedOpenTimeRangeFilter``, pruned by the data files'
  name ranges) and return what is found;
* ``isCompleted(t)`` = in the map, or ``isArchived(t)`` := ``t <`` the first non-savepoint commit of the active
  commits timeline ("archival does not proceed beyond the first savepoint, so any instant before that is
  completed");
* ``isCompletedBefore(base, t)``: completion(t) present and ``< base``;
* ``getInstantTimes(start, end)`` (incremental reads): completed instants by completion time in ``(start, end]``.

:class:`CompletionTimeQueryView` has the interface of :class:`model.slicing.CompletionTimes` (``completion_time``,
``is_completed``, ``is_completed_before``, ``is_archived``, ``archived_instants``), so
``FileSystemView(..., times=CompletionTimeQueryView(timeline, history))`` slices and reads with the history.
``use_history=False`` is the broken lookup that misses archived instants (used to show the invariants catch it).
Public API (stable): ``CompletionTimeQueryView``, ``Lookup``.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from . import lsm
from .instant import WRITE_ACTIONS, Action, Instant, State
from .timeline import Timeline

_COMMITS = frozenset({Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT})


class Lookup(NamedTuple):
    """One ``getCompletionTime``: the answer, where it came from (``active``/``history``/``pending``/``missing``)
    and the history data files read (pruned by name range)."""

    completion_time: str | None
    source: str
    files_read: tuple[str, ...]


class CompletionTimeQueryView:
    """``CompletionTimeQueryViewV2`` over a model timeline and an :class:`model.lsm.LSMState`."""

    def __init__(self, timeline: Timeline, history: lsm.LSMState | None = None, *, use_history: bool = True):
        self.timeline = timeline
        self.history = history if history is not None else lsm.EMPTY
        self.use_history = use_history
        insts = timeline.instants()
        #: requested time -> completion time of each completed instant of the active timeline
        self._completion = {i.requested_time: (i.completion_time or i.requested_time) for i in insts if i.is_completed}
        #: ``cursorInstant``: the first instant of the active timeline
        self.cursor = min((i.requested_time for i in insts), default=None)
        sps = {i.requested_time for i in timeline.completed([Action.SAVEPOINT])}
        commits = [i.requested_time for i in insts if i.action in WRITE_ACTIONS]
        #: ``getFirstNonSavepointCommit``: the first write instant that is not savepointed
        self.first_non_savepoint = next((t for t in commits if t not in sps), None)

    # ------------------------------------------------------------------------------------ lookups
    def lookup(self, instant: str) -> Lookup:
        """``getCompletionTime`` with its provenance and cost."""
        c = self._completion.get(instant)
        if c is not None:
            return Lookup(c, "active", ())
        if self.cursor is not None and instant >= self.cursor:
            return Lookup(None, "pending", ())
        if not self.use_history:
            return Lookup(None, "missing", ())
        recs, files = lsm.load_instants(self.history, instant, self.cursor)
        for r in recs:
            if r.instant_time == instant:
                return Lookup(r.completion_time, "history", tuple(files))
        return Lookup(None, "missing", tuple(files))

    def completion_time(self, instant: str) -> str | None:
        return self.lookup(instant).completion_time

    def is_archived(self, instant: str) -> bool:
        """``isArchived``: before the first non-savepoint commit of the active timeline."""
        if not self.use_history:
            return False
        return self.first_non_savepoint is not None and instant < self.first_non_savepoint

    def is_completed(self, instant: str) -> bool:
        """``isCompleted``: completed on the active timeline, or archived."""
        return instant in self._completion or self.is_archived(instant)

    def is_completed_before(self, base: str, instant: str) -> bool:
        """``isCompletedBefore(base, t)``: completion(t) present and ``< base`` (I9)."""
        c = self.completion_time(instant)
        return c is not None and c < base

    def completed_predicate(self) -> Callable[[str], bool]:
        return self.is_completed

    # ------------------------------------------------------------------------------- history
    def archived_instants(self) -> list[Instant]:
        """The completed instants the history holds that are older than the active timeline (as readers load them:
        ``ArchivedTimelineLoaderV2#loadInstants`` over ``[.., cursor)``)."""
        if not self.use_history:
            return []
        recs, _ = lsm.load_instants(self.history, None, self.cursor)
        return [Instant(r.instant_time, Action(r.action), State.COMPLETED, r.completion_time) for r in recs
                if r.instant_time not in self._completion]

    def instant_times(self, start: str | None, end: str | None) -> list[Instant]:
        """``getInstantTimes``: completed instants (active and history) whose completion time is in ``(start, end]``,
        by completion time."""
        out = [i for i in self.timeline.completed()] + self.archived_instants()
        out = [i for i in out if (start is None or i.completion_time > start) and (end is None or i.completion_time <= end)]
        return sorted(out, key=lambda i: (i.completion_time, i.requested_time))


__all__ = ["CompletionTimeQueryView", "Lookup"]
