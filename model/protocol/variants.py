"""Named protocol variants: historical designs, hypothetical ones, and deliberately broken ones.

Each :class:`Variant` is a set of :class:`~model.protocol.config.ProtocolConfig` overrides with a
description and ``expected``: the invariant ids (see :mod:`model.invariants.protocol`) the
variant is known to break -- empty for designs that should hold every invariant. The property
suites assert that each broken variant is caught, so every invariant is shown able to fail.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .config import ProtocolConfig


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    overrides: dict = field(default_factory=dict)
    expected: tuple = ()  # invariant ids it breaks (empty: it should hold all)
    faults_needed: tuple = ()  # faults a run needs to show the break (documentation + tests)

    def config(self, **extra) -> ProtocolConfig:
        d = dict(self.overrides)
        d.update(extra)
        return ProtocolConfig(**d)


_V = [
    Variant("hudi-1.1",
            "Hudi 1.1 Flink writer (MOR): async instant generation, tv 8, LAZY, commit keys < n in "
            "ascending order, coordinator snapshots completed buffers before the task snapshots, "
            "with the #19215 fixes (PR #19237)."),
    Variant("hudi-1.1-tv6", "Hudi 1.1 async protocol on a table version 6 timeline.",
            {"table_version": 6}),
    Variant("hudi-1.1-blocking",
            "Hudi 1.1 COW upsert: blocking instant generation (CommitGuard), EAGER failed-writes policy. "
            "Stall bound 1: after a lost ack the CommitGuard blocks the next instant until the "
            "write.commit.ack.timeout failover, which recovers in one (variant blocking-lost-ack-stall: bound 0).",
            {"mode": "blocking", "failed_writes": "eager", "table_type": "cow", "stall_bound": 1}),
    Variant("hudi-0.x-blocking",
            "Hudi 0.x/1.0 blocking flow on a tv6 table: one pending data instant, the next one only "
            "after a commit, EAGER rollback of failed writes at startCommit. Stall bound 1 (as hudi-1.1-blocking).",
            {"mode": "blocking", "failed_writes": "eager", "table_type": "cow", "table_version": 6,
             "stall_bound": 1}),
    Variant("hudi-0.x-coordinator-start",
            "Hudi 0.x blocking flow with coordinator-started instants on a tv6 table: the coordinator "
            "starts the next instant right after a successful commit, writers take the instant it started "
            "(instantToWrite polls lastPendingInstant; after a checkpoint a task is confirming until an "
            "instant other than the one it wrote appears, or a CommitAckEvent arrives), an empty checkpoint "
            "is not committed, its instant is reused and every task gets a CommitAckEvent; the coordinator "
            "checkpoints nothing (checkpointCoordinator completes with empty bytes), a restarted task re-sends "
            "its write metadata of the pending instant and the coordinator, once every task's bootstrap event "
            "arrived, recommits it and starts a new instant (initInstant); a writer's instant wait times out "
            "into a task failover; the next checkpoint is triggered only after the previous notification "
            "ran on the coordinator's executor; EAGER rollback of failed writes at startCommit; stall bound 1. "
            "Model finding (not confirmed against Hudi): when a checkpoint's notification is lost, a task with "
            "no new data takes the same instant at the next barrier (invalidInstant: no data) and its "
            "write-metadata-state of that checkpoint replaces the one holding the un-acked statuses, which the "
            "empty coordinator state does not hold either; a failover before the next commit (a second lost "
            "notification and the instant timeout, or a crash) re-sends an empty event, initInstant finds no "
            "statuses, and the next startCommit rolls the instant back: the un-acked interval is lost. Without "
            "lost notifications the design passes exhaustively.",
            {"mode": "blocking", "failed_writes": "eager", "table_type": "cow", "table_version": 6,
             "coordinator_starts_instants": True, "coordinator_snapshot": False,
             "ack_before_next_checkpoint": True, "stall_bound": 1},
            ("I12.state-coverage", "exactly-once.drained"), ("lost-ack", "coordinator-crash")),
    Variant("hudi-1.1-executor",
            "Hudi 1.1 with the coordinator's executor as an explicit FIFO queue (one job at a time, "
            "NonThrownExecutor): the commit of a checkpoint (notifyCheckpointComplete), each instant request "
            "(handleInstantRequest) and, after a commit, the table-service scheduling (scheduleTableServices) "
            "are jobs; a task waits for the answer to its request; the scheduling is bounded (ends within the "
            "RPC timeout of a request queued behind it), so a request times out only through the "
            "request-timeout fault while another job is ahead of it. Stall bound 0 holds.",
            {"executor_queue": True, "table_service": "bounded"}),
    Variant("hudi-1.1-blocking-executor",
            "Hudi 1.1 COW upsert (blocking instant generation, CommitGuard, EAGER) with the coordinator's executor "
            "as an explicit FIFO queue: the commit of a checkpoint is a job of the executor, and instant requests "
            "are answered on their own thread (instantRequestExecutor): the CommitGuard's wait "
            "(awaitAllInstantsToCompleteIfNecessary) happens there, off the executor, so the queued commit runs "
            "and releases it; the released request then joins the queue (the instant lock orders it behind the "
            "commits queued before it). No deadlock: without faults stall bound 0 holds; after a lost ack the "
            "guard waits for the write.commit.ack.timeout failover as in hudi-1.1-blocking, hence stall bound 1.",
            {"mode": "blocking", "failed_writes": "eager", "table_type": "cow", "executor_queue": True,
             "request_thread": "own", "stall_bound": 1}),
    Variant("hudi-1.1-partial-abort",
            "Hudi 1.1 where a checkpoint may abort after some tasks snapshotted it: those tasks "
            "advanced their last-known checkpoint id, the others did not, so one key's entry collects "
            "lastBatch events of intervals that ended at different checkpoints. The coordinator then "
            "serializes an entry whose missing slots are null (allEventsCompleted), restoreEvents "
            "recommits it partially, and the tasks whose part was in their own state do not re-send "
            "it (the instant is no longer pending): data is lost after a lost ack and a failover. "
            "Found by this model; not confirmed against Hudi.",
            {"partial_aborts": True}, ("exactly-once.drained", "I12.state-coverage"),
            ("abort", "lost-ack", "coordinator-crash")),
    Variant("single-task-failover",
            "Hypothetical deployment with point-wise failover regions: one failed write task restarts "
            "alone while the others go on. Entries whose restarted task's slot is null count as "
            "complete (allEventsCompleted), so the coordinator can serialize a key before the "
            "restarted task re-flushed it; after a restore its data is neither recommitted nor re-sent.",
            {"task_failover": "single"}, ("exactly-once.drained", "I12.state-coverage"),
            ("task-crash", "coordinator-crash")),
    Variant("hudi-1.1-async-events",
            "Hudi 1.1 with write-metadata and bootstrap events as messages in flight: one FIFO channel per "
            "task, channels interleaving freely, the checkpoint acknowledgement behind the task's events, "
            "the failed attempts' events dropped on failover, bootstrap events arriving one by one while "
            "the coordinator keeps committing (a non-atomic failover), and the lost-event fault.",
            {"event_delivery": "async"}),
    Variant("clean-during-restart",
            "Hudi 1.1 with async event delivery where a restart is slower than the heartbeat tolerance: "
            "after a coordinator or global failover the dead writers' heartbeats expire and a LAZY clean "
            "rolls back a pending instant while the restarted tasks' bootstrap events for it are still "
            "in flight; the recommit then finds the instant gone and its data is lost. Found by this "
            "model; not confirmed against Hudi.",
            {"event_delivery": "async", "clean_during_restart": True},
            ("exactly-once.drained",), ("coordinator-crash",)),
    # ------------------------------------------------------------------ broken
    Variant("ack-overtakes-events",
            "Async event delivery where a task's checkpoint acknowledgement overtakes the write-metadata "
            "events it sent before its snapshot: checkpoint n completes and its ack commits key n-1 "
            "before that key's last events arrive; they then re-create an entry below the acked "
            "checkpoint.",
            {"event_delivery": "async", "ack_behind_events": False},
            ("I11.events-before-ack", "I11.subsume", "I11.complete-once", "I11.ascending-commit-order",
             "I12.state-coverage", "bounded-state", "exactly-once.drained"), ()),
    Variant("stale-attempt-events",
            "Async event delivery where the events of a failed execution attempt are still delivered "
            "after the failover: a restarted task replays records whose old write metadata then reaches "
            "the coordinator too.",
            {"event_delivery": "async", "drop_failed_attempt_events": False},
            ("exactly-once.no-duplicates", "I12.state-coverage", "exactly-once.drained"), ("coordinator-crash",)),
    Variant("broken-commit-eq",
            "Commit rule k == n: the ack of n commits only key n, but data of interval n is keyed n "
            "and only flushed at checkpoint n+1, and no later ack subsumes older keys.",
            {"commit_rule": "=="},
            ("I11.subsume", "liveness", "exactly-once.drained", "bounded-state"), ()),
    Variant("broken-commit-le",
            "Commit rule k <= n: the ack of n also commits the in-progress interval keyed n (data "
            "after checkpoint n), which a failover then replays.",
            {"commit_rule": "<="},
            ("exactly-once.no-duplicates", "I10.one-instant-per-key"), ("full-restart",)),
    Variant("broken-commit-order",
            "Commits the buffered keys < n in descending order.",
            {"commit_order": "descending"}, ("I11.ascending-commit-order",), ("lost-ack",)),
    Variant("no-coordinator-snapshot",
            "The coordinator serializes nothing: an interval whose ack was lost is covered only by "
            "the coordinator's memory and is lost on failover.",
            {"coordinator_snapshot": False},
            ("exactly-once.drained", "I12.state-coverage"), ("lost-ack", "coordinator-crash")),
    Variant("tasks-snapshot-first",
            "The coordinator snapshots after the tasks: the interval the tasks just flushed is in the "
            "coordinator state and in every task state (covered twice; safety then rests on the "
            "recommit idempotence check alone).",
            {"snapshot_order": "tasks-first"}, ("I12.state-coverage",), ()),
    Variant("bug-19215",
            "Hudi 1.1.1 (#19215): an in-progress all-null entry is serialized into the coordinator "
            "state; a same-graph global failover merges it over the complete in-memory entry of the "
            "same key, restoreEvents finds it all-null and resets it, and the restarted tasks "
            "(attempt > 0) only send cleanup events: the interval's data is never committed.",
            {"snapshot_all_null_entries": True, "reset_keeps_memory": True,
             "resend_on_global_failover": False},
            ("exactly-once.drained", "I12.state-coverage"), ("lost-ack", "full-restart")),
    Variant("async-eager",
            "Async instant generation with the EAGER failed-writes policy: startCommit of a new "
            "instant rolls back the job's own pending instants (I14).",
            {"failed_writes": "eager"}, ("I14.async-lazy", "exactly-once.drained"), ()),
    Variant("blocking-no-guard",
            "Blocking mode whose instant request does not wait for the previous commit.",
            {"mode": "blocking", "failed_writes": "lazy", "table_type": "cow", "commit_guard": False},
            ("I13.blocking-one-pending",), ()),
    Variant("non-idempotent-recommit",
            "recommitInstant does not skip instants already completed on the timeline.",
            {"idempotent_recommit": False},
            ("I11.complete-once", "exactly-once.no-duplicates"), ("coordinator-crash",)),
    Variant("instant-per-request",
            "Every instant request starts a new instant, even for a key that already has one.",
            {"share_instant_per_key": False}, ("I10.one-instant-per-key",), ()),
    Variant("blocking-lost-ack-stall",
            "Hudi 1.1 blocking mode (COW upsert, CommitGuard) judged with stall bound 0: a lost ack leaves "
            "the buffered instant uncommitted, the next barrier's instant request waits on the CommitGuard, "
            "the checkpoint that would subsume the lost ack cannot complete, and only the "
            "write.commit.ack.timeout failover resumes progress. The async design passes the same bound "
            "(the next ack subsumes the lost one).",
            {"mode": "blocking", "failed_writes": "eager", "table_type": "cow", "stall_bound": 0},
            ("liveness.stall",), ("lost-ack",)),
    Variant("coordinator-start-lost-ack-stall",
            "Hudi 0.x coordinator-started instants judged with stall bound 0: the coordinator starts a new "
            "instant only after a successful commit, so after a lost ack no instant appears; a task with new "
            "data waits for one (confirming, the instant unchanged), and only the write.commit.ack.timeout "
            "failover of that task resumes progress (a task without new data reuses the instant and the next "
            "ack subsumes the lost one). Lost acks also show the coverage finding of hudi-0.x-coordinator-start.",
            {"mode": "blocking", "failed_writes": "eager", "table_type": "cow", "table_version": 6,
             "coordinator_starts_instants": True, "coordinator_snapshot": False,
             "ack_before_next_checkpoint": True, "stall_bound": 0},
            ("liveness.stall", "I12.state-coverage", "exactly-once.drained"), ("lost-ack",)),
    Variant("no-commit-ack",
            "Hudi 0.x coordinator-started instants without the CommitAckEvent: an empty checkpoint is not "
            "committed and its instant is reused, but nothing tells the tasks; a task that wrote the empty "
            "interval under that instant stays confirming, and when new data arrives it waits for an instant "
            "other than the one it wrote -- which no commit will start -- until the write.commit.ack.timeout "
            "fails it. Judged with stall bound 0: no fault is needed.",
            {"mode": "blocking", "failed_writes": "eager", "table_type": "cow", "table_version": 6,
             "coordinator_starts_instants": True, "coordinator_snapshot": False,
             "ack_before_next_checkpoint": True, "commit_ack_events": False, "stall_bound": 0},
            ("liveness.stall",), ()),
    Variant("checkpoint-overtakes-notification",
            "Hudi 0.x coordinator-started instants where checkpointCoordinator(n+1) does not queue behind "
            "notifyCheckpointComplete(n) on the coordinator's executor (as if they ran on different threads): "
            "checkpoint n+1's barriers reach a task before checkpoint n's commit, a task without new data "
            "takes the same instant, and its state of checkpoint n+1 replaces the one holding interval n's "
            "statuses, which the 0.x coordinator does not checkpoint; a failover before the commit loses "
            "them. No lost ack needed: the executor's order is what keeps 0.x's task state covering.",
            {"mode": "blocking", "failed_writes": "eager", "table_type": "cow", "table_version": 6,
             "coordinator_starts_instants": True, "coordinator_snapshot": False,
             "ack_before_next_checkpoint": False, "stall_bound": 1},
            ("I12.state-coverage", "exactly-once.drained"), ("coordinator-crash",)),
    Variant("table-service-on-executor",
            "Hudi 1.1 with the executor queue where the table service is scheduled (and run) inline on the "
            "coordinator's executor thread, with no async offload: the job outlasts the RPC timeout, so an "
            "instant request the tasks send after a commit waits behind it, times out and fails its task "
            "(Hudi #19902's shape); progress resumes only through that failover, a stall (bound 0). No fault "
            "needed. hudi-1.1-executor (bounded scheduling) holds the same bound.",
            {"executor_queue": True, "table_service": "slow", "stall_bound": 0},
            ("liveness.stall",), ()),
    Variant("commit-guard-on-executor",
            "Blocking mode (COW upsert, CommitGuard) where instant requests are answered on the coordinator's "
            "executor that also commits: a task that needs a new instant while the previous one is buffered "
            "queues its request before the checkpoint's commit; at the head of the queue the request's CommitGuard "
            "waits for a commit, holding the executor thread, and the commit that would release it is queued "
            "behind it. Tasks and coordinator wait on each other until write.commit.ack.timeout fails the job (a "
            "global failover): a stall (bound 0) with no fault. hudi-1.1-blocking-executor (the request on its own "
            "thread) holds the same bound without faults. With a task crash it also loses data (found by this "
            "model): the crashed attempt's request stays queued, runs once the restart's cleanup emptied the "
            "buffered entry, and its startCommit (EAGER) rolls back the instant that entry still maps to, which "
            "the restarted task is then given and writes under; the guard's failover finds it rolled back.",
            {"mode": "blocking", "failed_writes": "eager", "table_type": "cow", "executor_queue": True,
             "request_thread": "executor", "stall_bound": 0},
            ("liveness.stall", "exactly-once.drained"), ()),
    Variant("unbounded-task-state",
            "Tasks append each interval's write metadata to their state instead of replacing it.",
            {"task_state": "append"}, ("bounded-state", "I12.state-coverage"), ()),
]

VARIANTS: dict[str, Variant] = {v.name: v for v in _V}

#: Variants that should hold every invariant.
CORRECT = tuple(n for n, v in VARIANTS.items() if not v.expected)
#: Variants built to break at least one invariant.
BROKEN = tuple(n for n, v in VARIANTS.items() if v.expected)


def variant(name: str, **overrides) -> ProtocolConfig:
    """The config of a named variant, with extra overrides (bounds, faults, ...)."""
    try:
        v = VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}") from None
    return v.config(**overrides)


# ------------------------------------------------------------------------------- liveness variants
@dataclass(frozen=True)
class LivenessVariant:
    """A design judged by the temporal properties (:mod:`model.invariants.temporal`): a protocol variant
    (``base``, plus config ``overrides``) and the event kinds whose action is *not* weakly fair in it
    (``unfair``: the implementation may never take that step; :data:`model.protocol.events.FAIRNESS`).
    ``breaks``: the temporal properties it must violate (empty: it must satisfy all)."""

    name: str
    description: str
    base: str = "hudi-1.1"
    overrides: dict = field(default_factory=dict)
    unfair: frozenset = frozenset()
    breaks: tuple = ()

    def config(self, **extra) -> ProtocolConfig:
        return variant(self.base, **{**self.overrides, **extra})


_L = [
    LivenessVariant("hudi-1.1", "Hudi 1.1 async design with every own step weakly fair."),
    LivenessVariant("no-request-retry",
                    "A writer whose instant request, once it got no instant (lost with a request timeout or a "
                    "failover), is never sent again: request-instant is not weakly fair (Hudi's "
                    "Correspondent#requestInstantTime retries until the coordinator answers).",
                    unfair=frozenset({"request-instant"}), breaks=("interval-committed", "instant-resolved")),
    LivenessVariant("blocking-waits-for-timeout",
                    "Hudi 1.1 COW blocking design (CommitGuard) after a lost ack: the writer waits for the "
                    "commit of the un-acked instant, which only the write.commit.ack.timeout failover "
                    "(instant-timeout, not fair) brings.",
                    base="hudi-1.1-blocking", breaks=("writer-unblocked", "interval-committed", "instant-resolved")),
    LivenessVariant("guard-holds-executor",
                    "Blocking mode with the CommitGuard's wait on the coordinator's executor (commit-guard-on-executor): "
                    "an instant request that overtook the commit it waits for holds the executor thread, and only the "
                    "write.commit.ack.timeout failover (instant-timeout, not fair) ends it: the instant stays "
                    "requested and the flushed interval uncommitted forever (no fault needed from two checkpoints "
                    "on; at one checkpoint with a lost ack, too). The waiting task's request is queued, so it is not "
                    "'blocked' and writer-unblocked does not see it. hudi-1.1-blocking-executor (the wait on the "
                    "request's own thread) holds every temporal property without faults.",
                    base="commit-guard-on-executor", breaks=("instant-resolved", "interval-committed")),
    LivenessVariant("no-clean-rollback",
                    "A LAZY cleaner that never rolls back an expired instant: clean is not weakly fair, so a "
                    "failed write stays requested forever while the coordinator keeps committing checkpoints "
                    "(acks keep arriving).",
                    unfair=frozenset({"clean"}), breaks=("instant-resolved", "pending-while-acks")),
]

LIVENESS_VARIANTS: dict[str, LivenessVariant] = {v.name: v for v in _L}
