"""Invariants of the writer-coordinator protocol (I10-I14 and the protocol properties).

Pure functions of a :class:`model.protocol.System` returning :class:`Verdict`. Two groups:

* :func:`check_step` -- after every event: no duplicate committed record, each instant completes
  at most once, ascending commit order, one instant per key, subsume, blocking mode's single
  pending instant, async mode's LAZY policy, state coverage at each completed checkpoint, bounded
  state.
* :func:`check_drained` -- after :meth:`System.drain` (faults stopped, checkpoints run with
  delivered acks): exactly-once (committed records == records read up to the last completed
  checkpoint) and liveness (quiescent within :data:`LIVENESS_CHECKPOINTS` checkpoints).

Some invariants are about transitions (a second completion, a key re-assigned, the coverage of a
checkpoint when it completes); the model records those moments as *observations*
(``System.observations``: step, rule, detail) and the invariant reads them, so every verdict is
a function of the (fingerprinted) state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from model.invariants import Verdict

if TYPE_CHECKING:
    from .system import System

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
#: One shared "holds" verdict per invariant: verdicts are frozen, and the step checks run after
#: every event of every explored state (building nine Verdicts per state cost ~6 us).
_HOLDS: Final = {name: Verdict(name, True) for name in ALL_INVARIANTS}
_ASYNC_MODE: Final = Verdict("I13.blocking-one-pending", True, "async mode")
# (the shared verdicts the checks return most, as Final names: compiled, C statics instead of dict look-ups)
_NO_DUPLICATES: Final = _HOLDS["exactly-once.no-duplicates"]
_ONE_INSTANT: Final = _HOLDS["I10.one-instant-per-key"]
_SUBSUME: Final = _HOLDS["I11.subsume"]
_ONE_PENDING: Final = _HOLDS["I13.blocking-one-pending"]
_ASYNC_LAZY: Final = _HOLDS["I14.async-lazy"]
_BOUNDED: Final = _HOLDS["bounded-state"]

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
                      "instant requests expired behind a slow executor job), more than the configured stall bound",
}


def _from_observations(system: System, rule: str) -> Verdict:
    if rule not in system.observed_rules:  # (most states: no System.observed call)
        return _HOLDS.get(rule) or Verdict(rule, True)
    obs = system.observed(rule)
    if not obs:
        return _HOLDS.get(rule) or Verdict(rule, True)
    o = obs[0]
    return Verdict(rule, False, f"step {o.step}: {o.detail}", tuple(f"step {x.step}" for x in obs[:5]))


def check_no_duplicates(system: System) -> Verdict:
    dup = system.table.duplicated_offsets()
    if not dup:
        return _NO_DUPLICATES
    recs = [system.source.record(t, o).key for t, o in dup[:5]]
    return Verdict("exactly-once.no-duplicates", False,
                   f"{len(dup)} record(s) committed more than once, e.g. {', '.join(recs)}", tuple(recs))


def check_complete_once(system: System) -> Verdict:
    return _from_observations(system, "I11.complete-once")


def check_commit_order(system: System) -> Verdict:
    return _from_observations(system, "I11.ascending-commit-order")


def check_one_instant_per_key(system: System) -> Verdict:
    v = _from_observations(system, "I10.one-instant-per-key")
    if not v.holds:
        return v
    if system._k.coordinator_start:
        return v  # 0.x: no per-key grant (model.invariants.protocol.check_one_instant_per_key)
    buffers = system.coordinator.buffers
    for w in system.writers:
        if w.instant is None:  # (most tasks hold no grant: no buffer look-up for them)
            continue
        e = buffers.get(w.checkpoint_id)
        if e is not None and e.instant != w.instant:
            return Verdict("I10.one-instant-per-key", False,
                           f"task {w.task} holds {w.instant} for key {w.checkpoint_id} whose instant is {e.instant}",
                           (w.instant, e.instant))
    return v


def check_subsume(system: System) -> Verdict:
    coord = system.coordinator
    acked = coord.max_acked
    for k in coord.buffers:
        if k < acked:
            break
    else:  # (every state of an exploration: no sorted list)
        return _SUBSUME
    stale = sorted(k for k in coord.buffers if k < acked)
    return Verdict("I11.subsume", False,
                   f"ack {coord.max_acked} processed but key(s) {stale} are still buffered "
                   f"({', '.join(coord.buffers[k].instant for k in stale)})",
                   tuple(f"key {k}" for k in stale))


def check_blocking_one_pending(system: System) -> Verdict:
    if not system._k.blocking:
        return _ASYNC_MODE
    owned = [t for t in system.table.pending_instants() if t in system.table.heartbeats]
    if len(owned) <= 1:
        return _ONE_PENDING
    return Verdict("I13.blocking-one-pending", False,
                   f"{len(owned)} pending data instants with a live heartbeat: {', '.join(owned)}", tuple(owned))


def check_async_lazy(system: System) -> Verdict:
    cfg = system._k
    if cfg.mode == "async" and cfg.failed_writes != "lazy":
        return Verdict("I14.async-lazy", False,
                       "async mode configured with the EAGER failed-writes policy: startCommit rolls back "
                       "the job's own pending instants" + _rolled_back_owned(system))
    return _ASYNC_LAZY


def _rolled_back_owned(system: System) -> str:
    lost = system.observed("commit-of-rolled-back-instant")
    return f" ({lost[0].detail} at step {lost[0].step})" if lost else ""


def check_state_coverage(system: System) -> Verdict:
    return _from_observations(system, "I12.state-coverage")


def check_events_before_ack(system: System) -> Verdict:
    return _from_observations(system, "I11.events-before-ack")


def check_bounded_state(system: System) -> Verdict:
    """Coordinator entries <= U + 2 and events <= P x (U + 2), task state <= 1 event each, where U
    is the number of checkpoints triggered since the last ack the coordinator processed."""
    P = system._k.parallelism
    U = max(0, (system.next_checkpoint - 1) - system.last_ack)
    entries = len(system.coordinator.buffers)
    # (every buffer has one slot per task, so events <= P x entries: only when entries > U + 2 can the events
    # break their bound, and they are counted only then -- the verdict is the same, most states count nothing)
    events = (sum(len(e.slots) - e.slots.count(None) for e in system.coordinator.buffers.values())
              if entries > U + 2 else 0)
    if entries <= U + 2 and events <= P * (U + 2):
        for w in system.writers:
            if len(w.state) > 1:
                break
        else:  # (every state of an exploration: no list built)
            return _BOUNDED
    big_tasks = [w.task for w in system.writers if len(w.state) > 1]
    if entries > U + 2 or events > P * (U + 2):
        return Verdict("bounded-state", False,
                       f"coordinator holds {entries} buffer entries / {events} events with {U} checkpoint(s) "
                       f"pending since the last ack (bound {U + 2} entries, {P * (U + 2)} events)",
                       tuple(f"key {k}" for k in sorted(system.coordinator.buffers)))
    if big_tasks:
        sizes = {t: len(system.writers[t].state) for t in big_tasks}
        return Verdict("bounded-state", False, f"task state holds more than one interval: {sizes}",
                       tuple(f"task {t}" for t in big_tasks))
    return _HOLDS["bounded-state"]


def check_step(system: System) -> list[Verdict]:
    """Every invariant that must hold after every event."""
    return [
        check_no_duplicates(system),
        check_complete_once(system),
        check_commit_order(system),
        check_one_instant_per_key(system),
        check_subsume(system),
        check_blocking_one_pending(system),
        check_async_lazy(system),
        check_state_coverage(system),
        check_events_before_ack(system),
        check_bounded_state(system),
    ]


#: check_step's verdicts when they hold, in its order (the shared ones its checks return)
_STEP_HOLDS: Final = tuple(_HOLDS[name] for name in STEP_INVARIANTS)


def step_violations(system: System) -> list[Verdict] | None:
    """The verdicts of :func:`check_step` that do not hold, or None when all hold (the explorers' check of
    every new state: the shared "holds" verdicts are told by identity, not read one by one).

    While no rule has been observed (most states), the four checks that only read the observations hold
    (:func:`_from_observations` gives the shared verdict) and are not called; the other six are, in
    :func:`check_step`'s order. ``tests/test_engine_speedups.py`` compares this with :func:`check_step`."""
    out: list[Verdict] | None = None
    if not system.observed_rules:
        for v in (check_no_duplicates(system), check_one_instant_per_key(system), check_subsume(system),
                  check_blocking_one_pending(system), check_async_lazy(system), check_bounded_state(system)):
            if (v is not _NO_DUPLICATES and v is not _ONE_INSTANT and v is not _SUBSUME and v is not _ONE_PENDING
                    and v is not _ASYNC_MODE and v is not _ASYNC_LAZY and v is not _BOUNDED and not v.holds):
                if out is None:
                    out = [v]
                else:
                    out.append(v)
        return out
    i = 0
    for v in check_step(system):
        if v is not _STEP_HOLDS[i] and v is not _ASYNC_MODE and not v.holds:
            if out is None:
                out = [v]
            else:
                out.append(v)
        i += 1
    return out


def check_exactly_once(system: System) -> Verdict:
    """Committed records == records read up to the last completed checkpoint (each once)."""
    committed = system.committed_offsets()
    expected = system.emitted_offsets("checkpoint")
    lost = sorted(expected - set(committed))
    extra = sorted(k for k in committed if k not in expected)
    dup = sorted(k for k, n in committed.items() if n > 1)
    if not (lost or extra or dup):
        return Verdict("exactly-once.drained", True, f"{len(expected)} records committed exactly once")
    src = system.source
    parts = []
    for name, keys in (("lost", lost), ("not in the last checkpoint", extra), ("duplicated", dup)):
        if keys:
            parts.append(f"{len(keys)} {name} (e.g. {', '.join(src.record(t, o).key for t, o in keys[:3])})")
    return Verdict("exactly-once.drained", False, "; ".join(parts),
                   tuple(src.record(t, o).key for t, o in (lost + extra + dup)[:8]))


def check_liveness(system: System, bound: int = LIVENESS_CHECKPOINTS) -> Verdict:
    if not system.faults_stopped:
        return Verdict("liveness", True, "faults not stopped; nothing to judge")
    n = system.checkpoints_after_stop
    if system.is_quiescent() and n <= bound:
        return Verdict("liveness", True, f"quiescent after {n} checkpoint(s)")
    waiting = sorted(k for k, e in system.coordinator.buffers.items() if e.statuses())
    why = "not quiescent" if not system.is_quiescent() else f"needed {n} checkpoints"
    return Verdict("liveness", False,
                   f"{why} after {n} checkpoint(s) since faults stopped (bound {bound}); "
                   f"keys with uncommitted data: {waiting}", tuple(f"key {k}" for k in waiting))


def check_stall(system: System) -> Verdict:
    bound = system._k.stall_bound
    stalls, expired, deadlocks = system.stalls_after_stop, system.expired_requests, system.guard_deadlocks
    n, k, d = len(stalls), len(expired), len(deadlocks)
    if bound < 0 or n + k + d <= bound:
        extra = f", {k} request(s) expired behind a slow executor job" if k else ""
        if d:
            extra += f", {d} CommitGuard timeout(s) on the executor"
        return Verdict("liveness.stall", True, f"{n} instant timeout(s) after faults stopped{extra}")
    steps = sorted(stalls + expired + deadlocks)
    examples = tuple(f"step {st}" for st in steps[:5])
    if not k and not d:
        return Verdict("liveness.stall", False,
                       f"{n} instant-timeout failover(s) after faults stopped (stall bound {bound}), first at "
                       f"step {steps[0]}", examples)
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


def check_drained(system: System, bound: int = LIVENESS_CHECKPOINTS) -> list[Verdict]:
    """The invariants judged once the run is drained (see :meth:`System.drain`)."""
    return [check_exactly_once(system), check_liveness(system, bound), check_stall(system)]
