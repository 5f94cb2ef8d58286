"""Focused tests for model/invariants/indexing.py that `make mutate` showed unchecked (issue #15 item 10): the
exact ``Verdict`` (id, holds, detail, involved) of every violation branch of each MDT/indexer invariant, on
states reached by the machine and then changed by hand (``dataclasses.replace``) to break one rule at a time."""

from __future__ import annotations

from dataclasses import replace

from model.instant import Action
from model.invariants import Verdict
from model.invariants import indexing as inv
from model.mdt import machine as M
from model.mdt import partitions as P
from model.timeline import Timeline

CFG = M.IndexingConfig(timeouts=1)
T = "2026010100000000"  # + one digit: the machine's counter


def run(*acts, cfg=CFG):
    s = M.initial_state(cfg)
    for a in acts:
        s = M.step(cfg, s, tuple(a.split()))
    return s


BUILT = run("i schedule", "i execute", "i catchup", "i complete")  # indexing T2 completed at T3
BUILDING = run("i schedule", "i execute")
BOTH = frozenset({"files", "record_index"})
RI = ("record_index", "k0", "fg-0")


def test_readable_when_completed_every_branch():
    f = inv.check_readable_when_completed
    assert f(M.initial_state(CFG), {"files"}) == Verdict("I17.readable-when-completed", True, "", ())
    assert f(BUILT, BOTH) == Verdict("I17.readable-when-completed", True, "", ())
    # built (its indexing instant completed) but not in the available list: readers must not use it
    not_listed = replace(BUILT, parts=P.PartitionStates(frozenset({"files"}), frozenset({"record_index"})))
    assert f(not_listed, BOTH) == Verdict("I17.readable-when-completed", False,
                                          "readers use record_index before its indexing instant completed",
                                          ("record_index",))
    # listed, but its indexing instant is still inflight
    assert f(replace(BUILDING, parts=BUILT.parts), BOTH) == Verdict(
        "I17.readable-when-completed", False, "readers use record_index before its indexing instant completed",
        ("record_index",))
    # listed, and an index commit exists, but for another partition / another (not completed) instant
    other = replace(BUILT, index_commits=((f"{T}2", "column_stats", f"{T}0"),))
    assert not f(other, BOTH).holds
    pending_ti = replace(BUILT, index_commits=((f"{T}9", "record_index", f"{T}0"),))
    assert not f(pending_ti, BOTH).holds
    two = replace(BUILDING, parts=P.PartitionStates(frozenset({"files", "record_index", "column_stats"})))
    assert f(two, {"files", "record_index", "column_stats"}) == Verdict(
        "I17.readable-when-completed", False, "readers use column_stats, record_index before its indexing instant "
                                              "completed", ("column_stats", "record_index"))


def test_index_equals_rebuild_every_branch():
    f = inv.check_index_equals_rebuild
    assert f(BUILT, BOTH) == Verdict("I17.index-equals-rebuild", True, "", ())
    files, (name, base, logs) = BUILT.mdt
    extra = ("record_index", "k9", "fg-1")
    wrong = replace(BUILT, mdt=(files, (name, frozenset({extra}), ())))
    assert f(wrong, BOTH) == Verdict("I17.index-equals-rebuild", False,
                                     "record_index misses [('record_index', 'k0', 'fg-0')]; "
                                     "record_index holds uncommitted [('record_index', 'k9', 'fg-1')]",
                                     ("record_index",))
    missing = replace(BUILT, mdt=(files,))
    assert f(missing, BOTH) == Verdict("I17.index-equals-rebuild", False,
                                       "record_index misses [('record_index', 'k0', 'fg-0')]", ("record_index",))
    assert f(missing, {"files"}).holds  # only the partitions readers use are checked


def test_valid_log_and_reader_view():
    s = run("w1 start", "w1 write", "w1 commit")  # MDT deltacommit T2 completed, DT T2 inflight
    ok = inv.valid_log(s)
    assert [ok(lg) for lg in s.mdt[0][2]] == [True, False]
    assert ok((f"{T}2", "i", frozenset())) is False  # its DT instant is not completed
    done = M.step(CFG, s, ("w1", "complete"))
    ok = inv.valid_log(done)
    assert ok((f"{T}2", "w", frozenset())) and ok((f"{T}0", "i", frozenset()))
    # a writer's entry also needs its MDT deltacommit (an empty MDT timeline here); the indexer's does not
    assert inv.valid_log(replace(done, mdt_tl=Timeline(8)))((f"{T}0", "w", frozenset())) is False
    assert inv.valid_log(replace(done, mdt_tl=Timeline(8)))((f"{T}0", "i", frozenset())) is True
    assert inv.reader_view(s, "files") == {("files", f"fg-0_{T}0", f"{T}0")}
    assert inv.reader_view(done, "files") == {("files", f"fg-0_{T}0", f"{T}0"), ("files", f"fg-1_{T}2", f"{T}2")}
    assert inv.reader_view(s, "record_index") == frozenset()
    assert inv.expected_index(done, "files") == inv.reader_view(done, "files")
    assert inv.expected_index(s, "files") == {("files", f"fg-0_{T}0", f"{T}0")}


def test_writers_not_blocked_every_branch():
    f = inv.check_writers_not_blocked
    writers = ("w1", "w2")
    assert f(BUILT, writers, "i") == Verdict("I17.writers-not-blocked", True, "", ())
    held = replace(BUILT, lock="i")
    assert f(held, writers, "i") == Verdict(
        "I17.writers-not-blocked", False,
        "the indexer holds the table lock between steps; writers waiting to commit: none yet", ())
    waiting = replace(run("w1 start", "w1 write", "w2 start"), lock="i")
    assert f(waiting, writers, "i") == Verdict(
        "I17.writers-not-blocked", False,
        "the indexer holds the table lock between steps; writers waiting to commit: ['w1']", ("w1",))
    assert f(waiting, ("w2",), "i").involved == ()
    # a writer holding the lock (or nobody) is no violation, and its waiting peers are not reported
    assert f(replace(waiting, lock="w2"), writers, "i") == Verdict("I17.writers-not-blocked", True, "", ("w1",))


def test_abort_leaves_no_trace_every_branch():
    f = inv.check_abort_leaves_no_trace
    ok = Verdict("I17.abort-leaves-no-trace", True, "", ())
    assert f(BUILDING, False) == ok
    assert f(M.initial_state(CFG), True) == ok  # aborted without a plan: nothing to check
    aborted = run("i schedule", "w1 start", "w1 write", "i execute", "i catchup", "i timeout")
    assert f(aborted, True) == ok
    ti = f"{T}2"
    assert f(BUILDING, True) == Verdict(
        "I17.abort-leaves-no-trace", False, f"record_index still in the table config; MDT partition record_index "
                                            f"still has files; indexing instant {ti} still on the timeline",
        (ti, "record_index"))
    assert f(replace(aborted, parts=BUILT.parts), True) == Verdict(
        "I17.abort-leaves-no-trace", False, "record_index still in the table config", (ti, "record_index"))
    assert f(replace(aborted, mdt=BUILT.mdt), True) == Verdict(
        "I17.abort-leaves-no-trace", False, "MDT partition record_index still has files", (ti, "record_index"))
    assert f(replace(aborted, dt=BUILT.dt), True) == Verdict(
        "I17.abort-leaves-no-trace", False, f"indexing instant {ti} still on the timeline", (ti, "record_index"))


def test_table_config_every_branch():
    f = inv.check_table_config
    ok = Verdict("MDT.table-config", True, "", ())
    assert f(BUILT, ) == ok and f(BUILDING) == ok
    both = P.PartitionStates(frozenset({"files", "record_index"}), frozenset({"record_index"}))
    assert f(replace(BUILDING, parts=both)) == Verdict("MDT.table-config", False,
                                                       "['record_index'] both available and inflight")
    assert f(replace(BUILT, mdt=BUILT.mdt[:1])) == Verdict("MDT.table-config", False,
                                                           "record_index listed without MDT files")
    no_files = P.PartitionStates(frozenset({"files", "column_stats"}), frozenset({"bloom_filters"}))
    assert f(replace(BUILT, parts=no_files)) == Verdict(
        "MDT.table-config", False, "bloom_filters listed without MDT files; column_stats listed without MDT files; "
                                   "bloom_filters inflight with no pending indexing instant")
    # inflight while its indexing instant completed (the plan's ti not pending), or a plan of another partition
    assert f(replace(BUILT, parts=BUILDING.parts)) == Verdict(
        "MDT.table-config", False, "record_index inflight with no pending indexing instant")
    other_plan = ((f"{T}2", "column_stats", f"{T}0"),)
    assert f(replace(BUILDING, plans=other_plan)) == Verdict(
        "MDT.table-config", False, "record_index inflight with no pending indexing instant")


def test_mirrors_dt_every_branch():
    f = inv.check_mirrors_dt
    ok = Verdict("MDT.mirrors-dt", True, "", ())
    done = run("w1 start", "w1 write", "w1 commit", "w1 complete")
    assert f(done) == ok
    before = run("w1 start", "w1 write", "w1 commit")
    assert f(replace(done, mdt_tl=M.initial_state(CFG).mdt_tl)) == Verdict(
        "MDT.mirrors-dt", False, f"DT {T}2.deltacommit completed without its MDT deltacommit")
    # an MDT deltacommit still inflight does not mirror a completed DT instant
    inflight = before.mdt_tl.copy()
    inflight.create(f"{T}7", Action.DELTACOMMIT)
    dt = done.dt.copy()
    dt.create(f"{T}7", Action.DELTACOMMIT)
    dt.transition_to_inflight(f"{T}7", Action.DELTACOMMIT)
    dt.complete(f"{T}7", Action.DELTACOMMIT, f"{T}8")
    assert f(replace(done, dt=dt, mdt_tl=inflight)) == Verdict(
        "MDT.mirrors-dt", False, f"DT {T}7.deltacommit completed without its MDT deltacommit")
    rb = run("w1 start", "w1 write", "w1 fail", "r rollback", cfg=M.IndexingConfig(failures=1))
    assert f(rb) == ok
    assert f(replace(rb, mdt_tl=M.initial_state(CFG).mdt_tl)) == Verdict(
        "MDT.mirrors-dt", False, f"DT {T}3.rollback completed without its MDT deltacommit")
    assert f(replace(before, dt=M.initial_state(CFG).dt)) == Verdict(
        "MDT.mirrors-dt", False, f"MDT deltacommit {T}2 has no data-table instant")
    assert f(replace(done, dt=M.initial_state(CFG).dt, mdt_tl=done.mdt_tl)) == Verdict(
        "MDT.mirrors-dt", False, f"MDT deltacommit {T}2 has no data-table instant")
    # an indexing instant of the same time as an MDT compaction is no write to mirror
    assert f(run("m compact", cfg=M.IndexingConfig(mdt_compaction=True))) == ok


def test_indexing_verdicts_runs_all_in_order():
    got = inv.indexing_verdicts(replace(BUILDING, lock="i"), readable=BOTH, writers=("w1",), indexer="i",
                                aborted=True)
    assert [v.invariant for v in got] == list(inv.INVARIANTS) == [
        "I17.readable-when-completed", "I17.index-equals-rebuild", "I17.writers-not-blocked",
        "I17.abort-leaves-no-trace", "MDT.table-config", "MDT.mirrors-dt"]
    assert [v.holds for v in got] == [False, True, False, False, True, True]
