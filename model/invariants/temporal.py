"""Temporal properties (issue #22) of the writer-coordinator protocol, the async indexer and archival, beside
the safety invariants.

Each property has the form ``□(p(x) ⇒ ◇¬p(x))`` for every obligation ``x`` (TLA+ ``p(x) ~> ¬p(x)``, "leads
to"): a state function returns the obligations open in that state, and a behaviour violates the property when
some obligation stays open forever (``◇□ p(x)``). :mod:`checker.liveness` judges them over the explored
graph under the fairness declared per event kind (:data:`model.protocol.events.FAIRNESS`): a violation is a
fair cycle (a strongly connected component, or stuttering where no weakly fair action is enabled) in every
state of which ``x`` is open.

* ``interval-committed`` -- every flushed interval is eventually committed: offset ``o`` of split ``t``
  flushed by the writer (``StreamWriteFunction#flushRemaining`` / eager flush) and not in the metadata of a
  completed instant (``StreamWriteOperatorCoordinator#commitInstant``). hudi-semantics §4.3, I11.
* ``instant-resolved`` -- every requested instant eventually completes or is rolled back
  (``HoodieActiveTimeline#saveAsComplete`` / ``BaseHoodieTableServiceClient#rollbackFailedWrites``). I14.
* ``writer-unblocked`` -- a blocked writer (it must flush, the coordinator refuses it a new instant:
  ``CommitGuard`` / 0.x ``instantToWrite``) is eventually unblocked by the protocol's own steps. I13.
* ``pending-while-acks`` -- no instant stays pending forever while acks keep arriving:
  ``□◇ deliver-ack ⇒ ◇¬pending(x)`` for every requested or inflight instant ``x``. Its obligations are
  ``instant-resolved``'s; a violation must in addition deliver an ack on its cycle
  (:data:`CYCLE_REQUIRES`): the coordinator keeps committing checkpoints
  (``StreamWriteOperatorCoordinator#notifyCheckpointComplete``) while ``x`` is neither completed nor rolled
  back. It is implied by ``instant-resolved``; a stuttering end (no ack) does not violate it.

The metadata table's async indexer (:mod:`model.mdt.machine`, fairness
:data:`model.mdt.machine.FAIRNESS`):

* ``index-build-resolved`` -- an index build that is scheduled eventually completes or aborts: the
  indexing instant ``ti`` requested (``ScheduleIndexActionExecutor#execute``) or inflight
  (``RunIndexActionExecutor#execute``) ~> completed (``#updateTableConfigAndTimeline``) or deleted by an
  abort (``RunIndexActionExecutor#abort``, the catch-up timeout
  ``hoodie.metadata.index.check.timeout.seconds``). RFC-45.

Archival (:mod:`model.archival_machine`: writers, a LAZY cleaner and the archiver of :mod:`model.archival`;
fairness :data:`model.archival_machine.FAIRNESS`):

* ``archival-bounded`` -- the active timeline over ``hoodie.keep.max.commits`` completed commits is
  eventually brought back to at most keep.max (``TimelineArchiverV2#archiveIfRequired`` run after commits,
  ``#getCommitInstantsToArchive``; the retention of the earliest pending write may hold it up only while
  that write is pending). hudi-semantics §5, I16.
* ``archival-finishes`` -- a running archival job eventually finishes or is abandoned by a crash (its steps:
  ``LSMTimelineWriter#write``, ``#deleteArchivedActions``, ``LSMTimelineWriter#compactAndClean``).

Pure functions of the machines' states (:class:`model.protocol.state.State`, :class:`model.mdt.machine.IndexingState`,
:class:`model.archival.HistoryState`); no rule is restated.
"""

from __future__ import annotations

from .. import archival as A
from ..mdt import machine as MM
from ..protocol.state import State, committed_offsets, pending_instants, writer_status

INTERVAL_COMMITTED, INSTANT_RESOLVED, WRITER_UNBLOCKED = "interval-committed", "instant-resolved", "writer-unblocked"
PENDING_WHILE_ACKS = "pending-while-acks"
INDEX_BUILD_RESOLVED = "index-build-resolved"
ARCHIVAL_BOUNDED, ARCHIVAL_FINISHES = "archival-bounded", "archival-finishes"
#: Property ids of the protocol, in the order they are reported.
TEMPORAL = (INTERVAL_COMMITTED, INSTANT_RESOLVED, WRITER_UNBLOCKED, PENDING_WHILE_ACKS)
#: Property ids of the indexing machine and of the archival machine.
INDEXING_TEMPORAL = (INDEX_BUILD_RESOLVED,)
ARCHIVAL_TEMPORAL = (ARCHIVAL_BOUNDED, ARCHIVAL_FINISHES)
DESCRIPTIONS = {
    INTERVAL_COMMITTED: "every flushed interval is eventually committed (flushed ~> committed)",
    INSTANT_RESOLVED: "every requested instant eventually completes or is rolled back (requested ~> done)",
    WRITER_UNBLOCKED: "a blocked writer is eventually unblocked by the protocol's own steps (blocked ~> not blocked)",
    PENDING_WHILE_ACKS: "no instant stays pending forever while acks keep arriving ([]<>deliver-ack => <>not pending)",
    INDEX_BUILD_RESOLVED: "a scheduled index build eventually completes or aborts (indexing pending ~> done)",
    ARCHIVAL_BOUNDED: "the active timeline over keep.max completed commits is eventually back under keep.max",
    ARCHIVAL_FINISHES: "a running archival job eventually finishes or is abandoned (job running ~> no job)",
}
#: A property whose violation needs more than an open obligation: every cycle of its lasso takes an event
#: of this kind (the ``□◇`` premise; stuttering takes none).
CYCLE_REQUIRES = {PENDING_WHILE_ACKS: "deliver-ack"}


def uncommitted_flushes(s: State) -> frozenset:
    """``(task, offset)`` flushed by the writer's current attempt and not committed."""
    done = committed_offsets(s)
    return frozenset((w.task, o) for w in s.writers for o in range(w.flushed) if (w.task, o) not in done)


def unresolved_instants(s: State) -> frozenset:
    """Requested or inflight data instants (neither completed nor rolled back)."""
    return frozenset(pending_instants(s))


def blocked_writers(s: State) -> frozenset:
    """Tasks whose writer is blocked (``writer_status == "blocked"``)."""
    return frozenset(t for t in range(s.config.parallelism) if writer_status(s, t) == "blocked")


OBLIGATIONS = {INTERVAL_COMMITTED: uncommitted_flushes, INSTANT_RESOLVED: unresolved_instants,
               WRITER_UNBLOCKED: blocked_writers, PENDING_WHILE_ACKS: unresolved_instants}


def open_obligations(s: State) -> dict[str, frozenset]:
    """Per temporal property of the protocol, the obligations open in ``s``."""
    return {name: f(s) for name, f in OBLIGATIONS.items()}


# ------------------------------------------------------------------------------------- the indexer
def pending_index_builds(s: MM.IndexingState) -> frozenset:
    """The indexing instant while it is requested or inflight (scheduled or catching up)."""
    phase, ti = s.idx[0], s.idx[1]
    return frozenset({ti}) if phase in (MM.SCHEDULED, MM.CATCHING_UP) else frozenset()


def indexing_obligations(s: MM.IndexingState) -> dict[str, frozenset]:
    """Per temporal property of the indexing machine, the obligations open in ``s``."""
    return {INDEX_BUILD_RESOLVED: pending_index_builds(s)}


# ------------------------------------------------------------------------------------- archival
def over_keep_max(history: A.HistoryState, cfg: A.ArchivalConfig) -> frozenset:
    """``{"keep.max"}`` while the active timeline holds more than ``keep.max`` completed commits."""
    n = len(A.completed_commits(A.active_timeline(history)))
    return frozenset({"keep.max"}) if n > cfg.max_commits else frozenset()


def running_archival(history: A.HistoryState) -> frozenset:
    """``{"job"}`` while an archival job has steps left."""
    return frozenset({"job"}) if history.job else frozenset()


def archival_obligations(history: A.HistoryState, cfg: A.ArchivalConfig) -> dict[str, frozenset]:
    """Per temporal property of the archival machine, the obligations open in ``history``."""
    return {ARCHIVAL_BOUNDED: over_keep_max(history, cfg), ARCHIVAL_FINISHES: running_archival(history)}
