"""Invariants of the writer-coordinator protocol (I10-I14 and the protocol properties), over the spec.

Pure predicates over a :class:`model.protocol.state.State` -- its variables and its history variables
(:class:`model.protocol.state.History`: every key assignment, every ack processed, every commit attempt and
its outcome, every rollback, the coverage of every completed checkpoint) -- returning :class:`Verdict`.
Each property is stated once, here; no verdict is decided while a step runs. Two groups:

* :func:`check_step` -- after every event: no duplicate committed record, each instant completes at most
  once, ascending commit order, one instant per key, subsume, blocking mode's single pending instant, async
  mode's LAZY policy, state coverage at each completed checkpoint, no write metadata below a checkpoint in
  flight when it completes, bounded state.
* :func:`check_drained` -- after :func:`model.protocol.spec.drain` (faults stopped, checkpoints run with
  delivered acks): exactly-once (committed records == records read up to the last completed checkpoint),
  liveness (quiescent within :data:`LIVENESS_CHECKPOINTS` checkpoints) and the stall bound (at most
  ``config.stall_bound`` instant-timeout failovers after faults stopped).

The engine evaluates the same invariants on its own state (:mod:`engine.invariants`); the refinement suite
asserts both give the same verdict in every state it visits.
"""

from __future__ import annotations

from ..protocol.state import (State, committed_offsets, duplicated_offsets, emitted_offsets, entry_statuses,
                              is_quiescent, pending_instants, source)
from . import Verdict

#: Invariant ids, in the order check_step reports them.
STEP_INVARIANTS = (
    "exactly-once.no-duplicates",
    "I11.complete-once",
    "I11.ascending-commit-order",
    "I10.one-instant-per-key",
    "I11.subsume",
    "I13.blocking-one-pending",
    "I14.async-lazy",
    "I12.state-coverage",
    "I11.events-before-ack",
    "bounded-state",
)
DRAIN_INVARIANTS = ("exactly-once.drained", "liveness", "liveness.stall")
ALL_INVARIANTS = STEP_INVARIANTS + DRAIN_INVARIANTS

#: Checkpoints after faults stop within which every flushed interval must be committed.
LIVENESS_CHECKPOINTS = 3

EXPLANATIONS = {
    "exactly-once.no-duplicates": "a source record is visible in the table more than once",
    "exactly-once.drained": "after faults stopped and the run drained, the committed records differ from "
                            "the records read up to the last completed checkpoint (lost or extra records)",
    "I11.complete-once": "an instant was completed a second time",
    "I11.ascending-commit-order": "instants were committed out of ascending checkpoint-key order",
    "I10.one-instant-per-key": "one checkpoint-id key got two instants",
    "I11.subsume": "after the ack of checkpoint n, a buffered key < n remained uncommitted",
    "I13.blocking-one-pending": "blocking mode had two pending data instants its writer still owned",
    "I14.async-lazy": "async instant generation must run with the LAZY failed-writes policy",
    "I12.state-coverage": "a completed checkpoint covered a flushed, uncommitted interval zero or two times "
                          "(coordinator state vs task state)",
    "I11.events-before-ack": "a checkpoint completed while write metadata keyed below it was still in flight "
                             "(its ack could commit an entry before the entry's events arrived)",
    "bounded-state": "coordinator or task state grew beyond O(parallelism x pending checkpoints)",
    "liveness": "a flushed interval was not committed within the bound after faults stopped",
    "liveness.stall": "progress resumed only through timeout failovers (instant timeouts after faults stopped, "
                      "instant requests expired behind a slow executor job, CommitGuard waits holding the "
                      "executor), more than the configured stall bound",
}

#: Commit outcomes in which the instant was on the timeline (and so was committed, once or again).
_REACHED_TIMELINE = ("committed", "already-completed")


def _fails(name: str, breaks: list[tuple[int, str]]) -> Verdict:
    """The verdict of a history property: ``breaks`` lists (step, what happened), oldest first."""
    if not breaks:
        return Verdict(name, True)
    step, detail = breaks[0]
    return Verdict(name, False, f"step {step}: {detail}", tuple(f"step {st}" for st, _ in breaks[:5]))


# ----------------------------------------------------------------------------------- exactly-once
def check_no_duplicates(s: State) -> Verdict:
    """No source record is in the commit metadata twice."""
    dup = duplicated_offsets(s)
    if not dup:
        return Verdict("exactly-once.no-duplicates", True)
    recs = [source(s).record(t, o).key for t, o in dup[:5]]
    return Verdict("exactly-once.no-duplicates", False,
                   f"{len(dup)} record(s) committed more than once, e.g. {', '.join(recs)}", tuple(recs))


# ---------------------------------------------------------------------------------------------- I11
def check_complete_once(s: State) -> Verdict:
    """No commit attempt found its instant already completed."""
    return _fails("I11.complete-once",
                  [(c.step, f"{c.how} of key {c.key}: instant {c.instant} completes a second time")
                   for c in s.history.commits if c.outcome == "already-completed"])


def check_commit_order(s: State) -> Verdict:
    """The keys of the commits that reached the timeline strictly ascend (over the whole run)."""
    breaks, last = [], None
    for c in s.history.commits:
        if c.outcome not in _REACHED_TIMELINE:
            continue
        if last is not None and c.key <= last:
            breaks.append((c.step, f"{c.how} of key {c.key} (instant {c.instant}) after key {last} was committed"))
        last = c.key
    return _fails("I11.ascending-commit-order", breaks)


def check_subsume(s: State) -> Verdict:
    """After the ack of n (processed by this coordinator since its last reset), no buffered key < n."""
    acked = [a.checkpoint for a in s.history.acks if a.epoch == s.history.epoch]
    if not acked:
        return Verdict("I11.subsume", True)
    top = max(acked)
    stale = [(k, e) for k, e in s.coordinator.buffers if k < top]
    if not stale:
        return Verdict("I11.subsume", True)
    return Verdict("I11.subsume", False,
                   f"ack {top} processed but key(s) {[k for k, _ in stale]} are still buffered "
                   f"({', '.join(e.instant for _, e in stale)})", tuple(f"key {k}" for k, _ in stale))


# ---------------------------------------------------------------------------------------------- I10
def check_one_instant_per_key(s: State) -> Verdict:
    """Between two coordinator resets a checkpoint key is given one instant; a task's grant for its key is
    the instant of the key's entry (1.1's request-driven instants only)."""
    seen: dict = {}
    breaks = []
    for a in s.history.assignments:
        old = seen.get((a.epoch, a.key))
        if old is not None and old != a.instant:
            breaks.append((a.step, f"checkpoint key {a.key} got instant {a.instant} after {old}"))
        seen[(a.epoch, a.key)] = a.instant
    v = _fails("I10.one-instant-per-key", breaks)
    if not v.holds or s.config.coordinator_start:
        # 0.x writers take the last pending instant, not their key's: with no data to write a confirming task
        # may take the instant just committed (AbstractStreamWriteFunction#invalidInstant), whose empty event
        # the single buffer absorbs
        return v
    for w in s.writers:
        e = s.coordinator.entry(w.checkpoint_id) if w.instant is not None else None
        if e is not None and e.instant != w.instant:
            return Verdict("I10.one-instant-per-key", False,
                           f"task {w.task} holds {w.instant} for key {w.checkpoint_id} whose instant is {e.instant}",
                           (w.instant, e.instant))
    return v


# ---------------------------------------------------------------------------------------- I13, I14
def check_blocking_one_pending(s: State) -> Verdict:
    """Blocking mode: at most one pending data instant whose heartbeat is alive."""
    if not s.config.blocking:
        return Verdict("I13.blocking-one-pending", True, "async mode")
    owned = [t for t in pending_instants(s) if t in s.table.heartbeats]
    if len(owned) <= 1:
        return Verdict("I13.blocking-one-pending", True)
    return Verdict("I13.blocking-one-pending", False,
                   f"{len(owned)} pending data instants with a live heartbeat: {', '.join(owned)}", tuple(owned))


def check_async_lazy(s: State) -> Verdict:
    """Async instant generation runs with the LAZY failed-writes policy."""
    cfg = s.config
    if cfg.mode == "async" and cfg.failed_writes != "lazy":
        lost = [c for c in s.history.commits if c.outcome == "rolled-back"]
        why = (f" ({lost[0].how} of key {lost[0].key}: instant {lost[0].instant} was rolled back; its data is lost "
               f"at step {lost[0].step})") if lost else ""
        return Verdict("I14.async-lazy", False,
                       "async mode configured with the EAGER failed-writes policy: startCommit rolls back "
                       "the job's own pending instants" + why)
    return Verdict("I14.async-lazy", True)


# ---------------------------------------------------------------------------------------------- I12
def check_state_coverage(s: State) -> Verdict:
    """Each completed checkpoint covers every flushed, uncommitted key below it exactly once: in the
    coordinator state or in the task states, not in none, not in both."""
    breaks = []
    for c in s.history.checkpoints:
        missing = sorted(c.needed - c.coordinator_keys - c.task_keys)
        twice = sorted(c.coordinator_keys & c.task_keys)
        if missing:
            breaks.append((c.step, f"checkpoint {c.checkpoint}: flushed uncommitted key(s) {missing} are in no "
                                   f"state (coordinator state keys {sorted(c.coordinator_keys)}, task state keys "
                                   f"{sorted(c.task_keys)})"))
        if twice:
            breaks.append((c.step, f"checkpoint {c.checkpoint}: key(s) {twice} are in the coordinator state "
                                   f"and in task state"))
    return _fails("I12.state-coverage", breaks)


def check_events_before_ack(s: State) -> Verdict:
    """When checkpoint n completes, every write-metadata event keyed below n has reached the coordinator
    (async event delivery: Flink delivers a task's operator events ahead of its checkpoint
    acknowledgement, so ``notifyCheckpointComplete(n)`` commits complete entries; I11)."""
    return _fails("I11.events-before-ack",
                  [(c.step, f"checkpoint {c.checkpoint} completed with write metadata of key(s) {sorted(c.late_keys)} "
                            f"still in flight") for c in s.history.checkpoints if c.late_keys])


# -------------------------------------------------------------------------------------- bounded state
def check_bounded_state(s: State) -> Verdict:
    """Coordinator entries <= U + 2 and events <= P x (U + 2), task state <= 1 event each, where U is the
    number of checkpoints triggered since the highest ack ever processed."""
    P = s.config.parallelism
    last_ack = max([0] + [a.checkpoint for a in s.history.acks])
    U = max(0, (s.next_checkpoint - 1) - last_ack)
    entries = len(s.coordinator.buffers)
    events = sum(1 for _, e in s.coordinator.buffers for slot in e.slots if slot is not None)
    if entries > U + 2 or events > P * (U + 2):
        return Verdict("bounded-state", False,
                       f"coordinator holds {entries} buffer entries / {events} events with {U} checkpoint(s) "
                       f"pending since the last ack (bound {U + 2} entries, {P * (U + 2)} events)",
                       tuple(f"key {k}" for k, _ in s.coordinator.buffers))
    big = {w.task: len(w.state) for w in s.writers if len(w.state) > 1}
    if big:
        return Verdict("bounded-state", False, f"task state holds more than one interval: {big}",
                       tuple(f"task {t}" for t in big))
    return Verdict("bounded-state", True)


def check_step(s: State) -> list[Verdict]:
    """Every invariant that must hold after every event, in :data:`STEP_INVARIANTS` order."""
    return [
        check_no_duplicates(s),
        check_complete_once(s),
        check_commit_order(s),
        check_one_instant_per_key(s),
        check_subsume(s),
        check_blocking_one_pending(s),
        check_async_lazy(s),
        check_state_coverage(s),
        check_events_before_ack(s),
        check_bounded_state(s),
    ]


# ------------------------------------------------------------------------------------------- drained
def check_exactly_once(s: State) -> Verdict:
    """Committed records == records read up to the last completed checkpoint (each once)."""
    committed = committed_offsets(s)
    expected = emitted_offsets(s, "checkpoint")
    lost = sorted(expected - set(committed))
    extra = sorted(k for k in committed if k not in expected)
    dup = sorted(k for k, n in committed.items() if n > 1)
    if not (lost or extra or dup):
        return Verdict("exactly-once.drained", True, f"{len(expected)} records committed exactly once")
    src = source(s)
    parts = []
    for name, keys in (("lost", lost), ("not in the last checkpoint", extra), ("duplicated", dup)):
        if keys:
            parts.append(f"{len(keys)} {name} (e.g. {', '.join(src.record(t, o).key for t, o in keys[:3])})")
    return Verdict("exactly-once.drained", False, "; ".join(parts),
                   tuple(src.record(t, o).key for t, o in (lost + extra + dup)[:8]))


def check_liveness(s: State, bound: int = LIVENESS_CHECKPOINTS) -> Verdict:
    """Once faults stopped, the run is quiescent within ``bound`` completed checkpoints."""
    if not s.faults_stopped:
        return Verdict("liveness", True, "faults not stopped; nothing to judge")
    n = sum(1 for c in s.history.checkpoints if c.after_stop)
    if is_quiescent(s) and n <= bound:
        return Verdict("liveness", True, f"quiescent after {n} checkpoint(s)")
    waiting = [k for k, e in s.coordinator.buffers if entry_statuses(e)]
    why = "not quiescent" if not is_quiescent(s) else f"needed {n} checkpoints"
    return Verdict("liveness", False,
                   f"{why} after {n} checkpoint(s) since faults stopped (bound {bound}); "
                   f"keys with uncommitted data: {waiting}", tuple(f"key {k}" for k in waiting))


def check_stall(s: State) -> Verdict:
    """Once faults stopped, at most ``config.stall_bound`` instant timeouts (-1: not judged). A run that
    resumes only through a ``write.commit.ack.timeout`` failover (blocking mode after a lost ack: the
    buffered instant is never committed, the next barrier's instant request waits on the CommitGuard) is a
    liveness violation, not quiescence. Requests that expired behind a slow job of the coordinator's executor
    (``request-expired``, ``executor_queue``) and CommitGuard timeouts of a request that held the executor
    (``request_thread="executor"``: tasks and coordinator waited on each other) count too, whenever they
    happened: no fault caused them."""
    return stall_verdict(s.config.stall_bound, s.history.stalls, s.history.expired, s.history.deadlocks)


def stall_verdict(bound: int, stalls: tuple, expired: tuple, deadlocks: tuple) -> Verdict:
    """The ``liveness.stall`` verdict from the steps of the instant timeouts after faults stopped, of the
    requests expired behind a slow executor job and of the CommitGuard timeouts on the executor."""
    n, k, d = len(stalls), len(expired), len(deadlocks)
    if bound < 0 or n + k + d <= bound:
        extra = f", {k} request(s) expired behind a slow executor job" if k else ""
        extra += f", {d} CommitGuard timeout(s) on the executor" if d else ""
        return Verdict("liveness.stall", True, f"{n} instant timeout(s) after faults stopped{extra}")
    steps = sorted(stalls + expired + deadlocks)
    examples = tuple(f"step {st}" for st in steps[:5])
    if not k and not d:
        return Verdict("liveness.stall", False,
                       f"{n} instant-timeout failover(s) after faults stopped (stall bound {bound}), first at step "
                       f"{steps[0]}", examples)
    if d:
        also = (f"; {k} instant request(s) expired behind a slow executor job" if k else "") + (
            f"; {n} instant timeout(s) after faults stopped" if n else "")
        return Verdict("liveness.stall", False,
                       f"{n + k + d} timeout failover(s) ({d} where tasks and coordinator waited on each other: an "
                       f"instant request held the coordinator's executor in the CommitGuard's wait while the commit "
                       f"that would release it was queued behind it, until write.commit.ack.timeout{also}; stall "
                       f"bound {bound}), first at step {steps[0]}", examples)
    return Verdict("liveness.stall", False,
                   f"{n + k} timeout failover(s) ({k} instant request(s) expired behind a slow job of the "
                   f"coordinator's executor, {n} instant timeout(s) after faults stopped; stall bound {bound}), "
                   f"first at step {steps[0]}", examples)


def check_drained(s: State, bound: int = LIVENESS_CHECKPOINTS) -> list[Verdict]:
    """The invariants judged once the run is drained (see :func:`model.protocol.spec.drain`)."""
    return [check_exactly_once(s), check_liveness(s, bound), check_stall(s)]
