"""Temporal properties of the writer-coordinator protocol (issue #22), beside the safety invariants.

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

Not here yet: "no instant pending forever while acks keep arriving" needs a fair cycle that delivers acks;
the explored graph of the protocol is acyclic (the history counts steps) and its continuations end in
stuttering, so that form would be vacuous (see docs). The archiver (:mod:`model.archival`) and the metadata
indexer have no temporal property yet.

Pure functions of :class:`model.protocol.state.State`; no rule is restated.
"""

from __future__ import annotations

from ..protocol.state import State, committed_offsets, pending_instants, writer_status

INTERVAL_COMMITTED, INSTANT_RESOLVED, WRITER_UNBLOCKED = "interval-committed", "instant-resolved", "writer-unblocked"
#: Property ids, in the order they are reported.
TEMPORAL = (INTERVAL_COMMITTED, INSTANT_RESOLVED, WRITER_UNBLOCKED)
DESCRIPTIONS = {
    INTERVAL_COMMITTED: "every flushed interval is eventually committed (flushed ~> committed)",
    INSTANT_RESOLVED: "every requested instant eventually completes or is rolled back (requested ~> done)",
    WRITER_UNBLOCKED: "a blocked writer is eventually unblocked by the protocol's own steps (blocked ~> not blocked)",
}


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
               WRITER_UNBLOCKED: blocked_writers}


def open_obligations(s: State) -> dict[str, frozenset]:
    """Per temporal property, the obligations open in ``s``."""
    return {name: f(s) for name, f in OBLIGATIONS.items()}
