"""Focused tests for model.invariants.protocol that `make mutate` showed missing (I10-I14, exactly-once,
liveness, the stall bound; hudi-semantics.md section 8).

The invariants are predicates over a protocol state and its history variables. These tests build small
states by hand -- a timeline, commit metadata, a last completed checkpoint, a history -- and pin each
verdict: whether it holds, its text (what ``explore`` and ``replay`` print) and the involved list.
"""

from __future__ import annotations

from dataclasses import replace

from model.instant import Action, Instant, State as IState
from model.invariants import Verdict
from model.invariants.protocol import (ALL_INVARIANTS, DRAIN_INVARIANTS, EXPLANATIONS, LIVENESS_CHECKPOINTS,
                                       STEP_INVARIANTS, check_async_lazy, check_blocking_one_pending,
                                       check_bounded_state, check_commit_order, check_complete_once,
                                       check_drained, check_events_before_ack, check_exactly_once, check_liveness,
                                       check_no_duplicates, check_one_instant_per_key, check_stall,
                                       check_state_coverage, check_step, check_subsume)
from model.protocol.config import ProtocolConfig
from model.protocol.state import (AckProcessed, Assignment, CheckpointCoverage, CommitAttempt, CoordinatorState,
                                  History, Pending, TableState, initial_state)
from model.protocol.values import BufferEntry, CompletedCheckpoint, TaskSnapshot, WriteMetadataEvent, WriteStatus

I1, I2, I3 = "20250101000001000", "20250101000002000", "20250101000003000"


def done(t: str, c: str) -> Instant:
    return Instant(t, Action.DELTACOMMIT, IState.COMPLETED, c)


def pending(t: str) -> Instant:
    return Instant(t, Action.DELTACOMMIT, IState.INFLIGHT)


def state(cfg: ProtocolConfig | None = None, **changes):
    return replace(initial_state(cfg or ProtocolConfig(records=4)), **changes)


def checkpoint(*offsets: int) -> CompletedCheckpoint:
    return CompletedCheckpoint(1, (), tuple(TaskSnapshot(o, 1, ()) for o in offsets))


def committed(*statuses_per_instant):
    """TableState with instant k completed holding the given statuses (completion order = list order)."""
    times = [f"2025010100000{k + 1}000" for k in range(len(statuses_per_instant))]
    return TableState(timeline=tuple(done(t, t[:-3] + "500") for t in times),
                      metadata=tuple(zip(times, statuses_per_instant)))


def test_the_invariant_lists():
    assert STEP_INVARIANTS[0] == "exactly-once.no-duplicates" and len(STEP_INVARIANTS) == 10
    assert DRAIN_INVARIANTS == ("exactly-once.drained", "liveness", "liveness.stall")
    assert ALL_INVARIANTS == STEP_INVARIANTS + DRAIN_INVARIANTS and set(EXPLANATIONS) == set(ALL_INVARIANTS)
    assert LIVENESS_CHECKPOINTS == 3


# --------------------------------------------------------------------------------- exactly-once
def test_exactly_once_holds_when_committed_equals_the_checkpointed_reads():
    s = state(table=committed((WriteStatus(0, 0, 2),), (WriteStatus(1, 0, 1),)), last_completed=checkpoint(2, 1))
    assert check_exactly_once(s) == Verdict("exactly-once.drained", True, "3 records committed exactly once")
    assert check_exactly_once(state()) == Verdict("exactly-once.drained", True, "0 records committed exactly once")


def test_exactly_once_names_lost_extra_and_duplicated_records():
    # checkpoint read split 0 [0,3) and split 1 [0,1); committed: s0 [0,1) twice, s0 [3,4), nothing of s1
    s = state(table=committed((WriteStatus(0, 0, 1),), (WriteStatus(0, 0, 1), WriteStatus(0, 3, 4))),
              last_completed=checkpoint(3, 1))
    v = check_exactly_once(s)
    assert v == Verdict("exactly-once.drained", False,
                        "3 lost (e.g. s0-r000001, s0-r000002, s1-r000000); 1 not in the last checkpoint "
                        "(e.g. s0-r000003); 1 duplicated (e.g. s0-r000000)",
                        ("s0-r000001", "s0-r000002", "s1-r000000", "s0-r000003", "s0-r000000"))
    # only lost, more than three: the example names the first three, involved up to eight
    s = state(cfg=ProtocolConfig(records=6), last_completed=checkpoint(5, 5))
    v = check_exactly_once(s)
    assert v.detail == "10 lost (e.g. s0-r000000, s0-r000001, s0-r000002)" and not v.holds
    assert v.involved == tuple(f"s0-r00000{i}" for i in range(5)) + ("s1-r000000", "s1-r000001", "s1-r000002")
    # only extra
    v = check_exactly_once(state(table=committed((WriteStatus(1, 2, 3),))))
    assert v.detail == "1 not in the last checkpoint (e.g. s1-r000002)" and v.involved == ("s1-r000002",)


def test_no_duplicates_is_judged_on_the_commit_metadata():
    s = state(table=committed((WriteStatus(0, 0, 2),), (WriteStatus(0, 1, 3), WriteStatus(1, 0, 1))))
    assert check_no_duplicates(s) == Verdict("exactly-once.no-duplicates", False,
                                             "1 record(s) committed more than once, e.g. s0-r000001",
                                             ("s0-r000001",))
    assert check_no_duplicates(state(table=committed((WriteStatus(0, 0, 2),)))).holds


# ------------------------------------------------------------------------------------- liveness
def test_liveness_is_not_judged_before_faults_stop():
    s = state(pending=Pending(1, None, (None, None)))
    assert check_liveness(s) == Verdict("liveness", True, "faults not stopped; nothing to judge")


def cov(step: int, ckp: int, after_stop: bool = True, **kw) -> CheckpointCoverage:
    f = frozenset
    return CheckpointCoverage(step, ckp, f(kw.get("needed", ())), f(kw.get("coord", ())), f(kw.get("task", ())),
                              after_stop, f(kw.get("late", ())))


def test_liveness_counts_only_checkpoints_after_the_stop_and_respects_the_bound():
    hist = History(checkpoints=(cov(1, 1, False), cov(2, 2), cov(3, 3), cov(4, 4)))
    s = state(faults_stopped=True, history=hist)
    assert check_liveness(s) == Verdict("liveness", True, "quiescent after 3 checkpoint(s)")
    assert check_liveness(s, 2) == Verdict("liveness", False, "needed 3 checkpoints after 3 checkpoint(s) since "
                                                               "faults stopped (bound 2); keys with uncommitted "
                                                               "data: []", ())
    hist = History(checkpoints=tuple(cov(i, i) for i in range(1, 5)))
    assert not check_liveness(state(faults_stopped=True, history=hist)).holds


def test_liveness_names_the_keys_with_uncommitted_data():
    ev = WriteMetadataEvent(0, 2, I1, (WriteStatus(0, 0, 1),))
    buffers = ((1, BufferEntry(I1, (None, None))), (2, BufferEntry(I1, (ev, None))))
    s = state(faults_stopped=True, coordinator=CoordinatorState(buffers, I1))
    v = check_liveness(s)
    assert v == Verdict("liveness", False, "not quiescent after 0 checkpoint(s) since faults stopped (bound 3); "
                                           "keys with uncommitted data: [2]", ("key 2",))
    # a pending checkpoint, an ack in flight, a buffered record each keep the run from being quiescent
    for change in ({"pending": Pending(1, None, (None, None))}, {"acks_in_flight": (1,)}):
        assert not check_liveness(state(faults_stopped=True, **change)).holds
    w = initial_state(ProtocolConfig()).writers
    assert not check_liveness(state(faults_stopped=True, writers=(replace(w[0], offset=1), w[1]))).holds


def test_stall_bound():
    cfg = ProtocolConfig(stall_bound=1)
    assert check_stall(state(cfg, history=History(stalls=(5,)))) == Verdict(
        "liveness.stall", True, "1 instant timeout(s) after faults stopped")
    v = check_stall(state(cfg, history=History(stalls=(5, 9))))
    assert v == Verdict("liveness.stall", False, "2 instant-timeout failover(s) after faults stopped (stall bound 1), "
                                                 "first at step 5", ("step 5", "step 9"))
    assert check_stall(state(ProtocolConfig(stall_bound=-1), history=History(stalls=(1, 2, 3)))).holds  # -1: not judged
    assert not check_stall(state(history=History(stalls=(4,)))).holds  # the default bound is 0
    assert not check_stall(state(ProtocolConfig(stall_bound=0), history=History(stalls=(3,)))).holds
    assert check_stall(state(ProtocolConfig(stall_bound=0))).holds
    v = check_stall(state(ProtocolConfig(stall_bound=0), history=History(stalls=tuple(range(1, 8)))))
    assert v.involved == tuple(f"step {i}" for i in range(1, 6))


def test_check_drained_runs_the_three_in_order_with_the_bound():
    hist = History(checkpoints=(cov(1, 1), cov(2, 2)))
    s = state(faults_stopped=True, history=hist)
    assert [v.invariant for v in check_drained(s)] == list(DRAIN_INVARIANTS)
    assert all(v.holds for v in check_drained(s)) and not check_drained(s, 1)[1].holds


# ---------------------------------------------------------------------------------- step checks
def test_complete_once_and_commit_order_name_the_steps():
    commits = (CommitAttempt(3, 1, I1, "commit", "committed"), CommitAttempt(4, 1, I1, "recommit", "already-completed"),
               CommitAttempt(5, 0, I2, "commit", "rolled-back"), CommitAttempt(6, 2, I3, "commit", "committed"))
    s = state(history=History(commits=commits))
    assert check_complete_once(s) == Verdict("I11.complete-once", False,
                                             f"step 4: recommit of key 1: instant {I1} completes a second time",
                                             ("step 4",))
    assert check_commit_order(s) == Verdict("I11.ascending-commit-order", False,
                                            f"step 4: recommit of key 1 (instant {I1}) after key 1 was committed",
                                            ("step 4",))
    ok = state(history=History(commits=(commits[0], commits[2], commits[3])))
    assert check_complete_once(ok) == Verdict("I11.complete-once", True)
    assert check_commit_order(ok) == Verdict("I11.ascending-commit-order", True)
    down = state(history=History(commits=(commits[3], commits[0])))
    assert check_commit_order(down).detail == f"step 3: commit of key 1 (instant {I1}) after key 2 was committed"


def test_subsume_looks_at_acks_of_this_coordinator_epoch_only():
    buffers = ((1, BufferEntry(I1, (None, None))), (3, BufferEntry(I2, (None, None))))
    s = state(coordinator=CoordinatorState(buffers, I2),
              history=History(epoch=1, acks=(AckProcessed(2, 1, 2), AckProcessed(1, 0, 9))))
    assert check_subsume(s) == Verdict("I11.subsume", False, f"ack 2 processed but key(s) [1] are still buffered "
                                                             f"({I1})", ("key 1",))
    assert check_subsume(replace(s, history=History(epoch=2, acks=s.history.acks))) == Verdict("I11.subsume", True)
    assert check_subsume(replace(s, history=History(epoch=1, acks=(AckProcessed(2, 1, 1),)))).holds


def test_one_instant_per_key_between_resets_and_the_tasks_grant():
    a = (Assignment(1, 0, 1, I1), Assignment(2, 1, 1, I2), Assignment(3, 1, 1, I2))
    assert check_one_instant_per_key(state(history=History(assignments=a))) == Verdict("I10.one-instant-per-key", True)
    bad = a + (Assignment(4, 1, 1, I3),)
    assert check_one_instant_per_key(state(history=History(assignments=bad))) == Verdict(
        "I10.one-instant-per-key", False, f"step 4: checkpoint key 1 got instant {I3} after {I2}", ("step 4",))
    w = initial_state(ProtocolConfig()).writers
    writers = (replace(w[0], checkpoint_id=1, instant=I2), w[1])
    coord = CoordinatorState(((1, BufferEntry(I1, (None, None))),), I1)
    assert check_one_instant_per_key(state(writers=writers, coordinator=coord)) == Verdict(
        "I10.one-instant-per-key", False, f"task 0 holds {I2} for key 1 whose instant is {I1}", (I2, I1))
    same = CoordinatorState(((1, BufferEntry(I2, (None, None))),), I2)
    assert check_one_instant_per_key(state(writers=writers, coordinator=same)).holds


def test_blocking_one_pending_counts_instants_with_a_live_heartbeat():
    blk = ProtocolConfig(mode="blocking")
    tl = (pending(I1), pending(I2), done(I3, I3))
    s = state(blk, table=TableState(timeline=tl, heartbeats=frozenset({I1, I2})))
    assert check_blocking_one_pending(s) == Verdict("I13.blocking-one-pending", False,
                                                    f"2 pending data instants with a live heartbeat: {I1}, {I2}",
                                                    (I1, I2))
    assert check_blocking_one_pending(replace(s, table=replace(s.table, heartbeats=frozenset({I2})))) == Verdict(
        "I13.blocking-one-pending", True)
    assert check_blocking_one_pending(state(table=s.table)) == Verdict("I13.blocking-one-pending", True, "async mode")


def test_async_lazy_names_the_rolled_back_commit():
    eager = ProtocolConfig(failed_writes="eager")
    assert check_async_lazy(state()) == Verdict("I14.async-lazy", True)
    assert check_async_lazy(state(ProtocolConfig(mode="blocking", failed_writes="eager"))).holds
    base = ("async mode configured with the EAGER failed-writes policy: startCommit rolls back the job's own "
            "pending instants")
    assert check_async_lazy(state(eager)) == Verdict("I14.async-lazy", False, base)
    commits = (CommitAttempt(3, 1, I1, "commit", "committed"), CommitAttempt(7, 2, I2, "commit", "rolled-back"),
               CommitAttempt(9, 3, I3, "commit", "rolled-back"))
    v = check_async_lazy(state(eager, history=History(commits=commits)))
    assert v.detail == base + f" (commit of key 2: instant {I2} was rolled back; its data is lost at step 7)"


def test_state_coverage_names_missing_and_twice_covered_keys():
    h = History(checkpoints=(cov(5, 3, needed=(1, 2), coord=(1,), task=()),
                             cov(6, 4, needed=(1,), coord=(1, 2), task=(2, 1)),
                             cov(7, 5, needed=(1, 2), coord=(1,), task=(2,))))
    v = check_state_coverage(state(history=h))
    assert v == Verdict("I12.state-coverage", False,
                        "step 5: checkpoint 3: flushed uncommitted key(s) [2] are in no state (coordinator state "
                        "keys [1], task state keys [])", ("step 5", "step 6"))
    assert check_state_coverage(state(history=History(checkpoints=h.checkpoints[1:2]))).detail == \
        "step 6: checkpoint 4: key(s) [1, 2] are in the coordinator state and in task state"
    assert check_state_coverage(state(history=History(checkpoints=h.checkpoints[2:]))).holds


def test_events_before_ack_names_the_late_keys():
    h = History(checkpoints=(cov(5, 3), cov(8, 4, late=(3, 1))))
    assert check_events_before_ack(state(history=h)) == Verdict(
        "I11.events-before-ack", False, "step 8: checkpoint 4 completed with write metadata of key(s) [1, 3] still "
                                        "in flight", ("step 8",))
    assert check_events_before_ack(state(history=History(checkpoints=(cov(5, 3),)))).holds


def test_bounded_state_entries_events_and_task_state():
    """Entries <= U + 2, events <= P x (U + 2), one interval per task state; U = triggered since the last ack."""
    ev = WriteMetadataEvent(0, 1, I1, ())
    e2 = BufferEntry(I1, (ev, ev))

    def with_entries(n, next_ckp=1, acks=()):
        return state(coordinator=CoordinatorState(tuple((k, e2) for k in range(n)), I1), next_checkpoint=next_ckp,
                     history=History(acks=acks))
    assert check_bounded_state(with_entries(2)) == Verdict("bounded-state", True)
    v = check_bounded_state(with_entries(3))
    assert v == Verdict("bounded-state", False, "coordinator holds 3 buffer entries / 6 events with 0 checkpoint(s) "
                                                "pending since the last ack (bound 2 entries, 4 events)",
                        ("key 0", "key 1", "key 2"))
    assert check_bounded_state(with_entries(3, next_ckp=2)).holds  # U = 1
    assert check_bounded_state(with_entries(3, next_ckp=3, acks=(AckProcessed(1, 0, 1),))).holds  # U = 1
    # entries alone over the bound (their slots empty): 3 entries, 0 events, U = 0
    empty = state(coordinator=CoordinatorState(tuple((k, BufferEntry(I1, (None, None))) for k in range(3)), I1))
    assert check_bounded_state(empty).detail == ("coordinator holds 3 buffer entries / 0 events with 0 checkpoint(s) "
                                                 "pending since the last ack (bound 2 entries, 4 events)")
    assert not check_bounded_state(with_entries(4, next_ckp=3, acks=(AckProcessed(1, 0, 1),))).holds
    # events alone over the bound: 2 entries, 3 events with P = 1
    one = ProtocolConfig(parallelism=1)
    e3 = BufferEntry(I1, (ev,))
    s = replace(initial_state(one), coordinator=CoordinatorState(((1, e3), (2, e3), (3, BufferEntry(I1, (None,)))), I1),
                next_checkpoint=2)
    assert check_bounded_state(s).holds  # 3 entries <= 3, 2 events <= 3
    w = initial_state(ProtocolConfig()).writers
    big = (replace(w[0], state=(ev, ev)), w[1])
    assert check_bounded_state(state(writers=big)) == Verdict("bounded-state", False,
                                                              "task state holds more than one interval: {0: 2}",
                                                              ("task 0",))


def test_check_step_reports_every_step_invariant_in_order():
    vs = check_step(state())
    assert [v.invariant for v in vs] == list(STEP_INVARIANTS) and all(v.holds for v in vs)
