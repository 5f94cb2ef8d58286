"""Focused tests for model/mdt/machine.py that `make mutate` showed unchecked (issue #15 item 10): every step of
the MDT + async indexer machine pinned whole -- each guard's exact refusal text, and for each effect exactly the
fields of the state it changes (the clock advance, who holds the lock, the timelines' instants with their
completion times, the MDT log entries) and, by omission, that no other field changes.

Times are written ``T<n>`` (the machine's counter: ``EPOCH_MS + n``), frozensets as sorted tuples, timeline
instants as ``(requested, action, state value, completion)``."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from model.mdt import machine as M
from model.mdt import partitions as P
from model.timeline import Timeline

_T = re.compile(r"20260101000000(\d{3})")
FIELDS = ("clock", "procs", "idx", "lock", "parts", "writes", "mdt", "plans", "index_commits", "compacted", "dt",
          "mdt_tl")


def short(x):
    if isinstance(x, str):
        return _T.sub(lambda m: f"T{int(m.group(1))}", x)
    if isinstance(x, (frozenset, set)):
        return tuple(sorted((short(e) for e in x), key=repr))
    if isinstance(x, P.PartitionStates):
        return ("parts", short(x.available), short(x.inflight))
    if isinstance(x, tuple):
        return tuple(short(e) for e in x)
    return x


def view(s):
    return short(s.fingerprint())


def changed(before, after) -> dict:
    """The fields ``after`` differs in, with their new values (every other field is unchanged)."""
    return {f: y for f, x, y in zip(FIELDS, view(before), view(after)) if x != y}


def run(cfg, *acts, s=None):
    s = s or M.initial_state(cfg)
    for a in acts:
        s = M.step(cfg, s, tuple(a.split()))
    return s


F = M.IndexingConfig(failures=1, timeouts=1, retries=1, drop=True, mdt_compaction=True)
D = M.IndexingConfig(commit_order="dt-first", config_read="in-lock")
H = M.IndexingConfig(indexer_lock="held", timeouts=1, abort_cleanup=False, retries=1)
H2 = M.IndexingConfig(indexer_lock="held")
N = M.IndexingConfig(catchup=False)
A = M.IndexingConfig(failures=1, mdt_compaction=True, compaction_input="all-logs")
R0 = M.IndexingConfig(timeouts=1)
W = ("w1 start", "w1 write")
X = ("i schedule", "w1 start", "w1 write", "i execute", "i catchup")  # the catch-up waits on w1's T3
X2 = ("i schedule", "w1 start", "i execute", "w1 write", "w1 commit", "w1 complete", "i catchup")
IDX0 = ("idle", None, None, (), None, 0, 0)
DC0 = ("T0", "deltacommit", 3, "T1")
FILES0 = ("T0", "w", (("files", "fg-0_T0", "T0"),))
RI0 = (("record_index", "k0", "fg-0"),)
W1 = ("w1", "idle", None, None)
W2 = ("w2", "idle", None, None)


def test_initial_state_whole():
    assert view(M.initial_state(F)) == (
        2, (W1, W2), IDX0, None, ("parts", ("files",), ()), (("T0", (("k0", "fg-0"),)),),
        (("files", (), (FILES0,)),), (), (), 0, (DC0,), (DC0,))
    assert view(M.initial_state(M.IndexingConfig(writers=1)))[1] == (W1,)


REFUSALS = [
    (F, ("w1 start",), "w1 start", "w1 is requested; start needs idle"),
    (F, (), "w1 write", "w1 is idle; write needs requested"),
    (F, ("w1 start",), "w1 commit", "w1 is requested; commit needs written"),
    (F, W + ("w2 start", "w2 write", "w2 commit"), "w1 commit", "the table lock is held by w2"),
    (F, W, "w1 complete", "w1 is written; complete needs its commit started"),
    (F, ("w1 start",), "w1 fail", "w1 is requested; fail needs a write in progress"),
    (F, (), "w1 fail", "w1 is idle; fail needs a write in progress"),
    (D, W + ("w1 commit",), "w1 fail", "no failures left (0)"),
    (F, W + ("w1 fail", "w2 start", "w2 write"), "w2 fail", "no failures left (1)"),
    (F, (), "w1 frob", "unknown writer step frob"),
    (F, (), "w3 start", "unknown process w3"),
    (F, (), "x start", "unknown process x"),
    (F, (), "r rollback", "no failed pending write to roll back"),
    (F, W + ("w1 fail", "w2 start", "w2 write", "w2 commit"), "r rollback", "the table lock is held by w2"),
    (F, ("i schedule",), "i schedule", "indexer is scheduled"),
    (F, W + ("w1 commit",), "i schedule", "the table lock is held by w1"),
    (R0, X + ("i timeout",), "i schedule", "indexer is aborted; no retries left (0)"),
    (F, X + ("i timeout", "w1 fail", "r rollback", "i schedule", "i execute", "i catchup", "i catchup", "i complete"),
     "i schedule", "indexer is indexed"),
    (H, W + ("i schedule", "i execute", "i catchup", "i timeout"), "i schedule",
     "[indexing.inflight] index record_index is already being built (hoodie.table.metadata.partitions.inflight)"),
    (F, (), "i execute", "indexer is idle; execute needs scheduled"),
    (H, W + ("i schedule", "w1 commit"), "i execute", "the table lock is held by w1"),
    (F, (), "i catchup", "indexer is idle"),
    (F, ("i schedule", "i execute", "i catchup"), "i catchup", "nothing to catch up"),
    (N, ("i schedule", "i execute"), "i catchup", "nothing to catch up"),
    (F, X, "i catchup", "waiting for the live writer of 20260101000000003"),
    (F, X + ("w1 commit",), "i catchup", "waiting for the live writer of 20260101000000003"),
    (F, (), "i timeout", "no catch-up in progress"),
    (R0, X + ("i timeout",), "i timeout", "no catch-up in progress"),
    (F, ("i schedule", "i execute"), "i timeout", "the catch-up is not waiting"),
    (M.IndexingConfig(timeouts=1, retries=1), X + ("i timeout", "i schedule", "w2 start", "w2 write", "i execute"),
     "i timeout", "no timeouts left (1)"),
    (F, (), "i complete", "indexer is idle"),
    (F, ("i schedule", "i execute"), "i complete", "catch-up not finished"),
    (F, ("i schedule", "i execute", "i catchup", "w1 start", "w1 write", "w1 commit"), "i complete",
     "the table lock is held by w1"),
    (F, ("i schedule", "i execute", "i catchup"), "i drop", "indexer is catching-up; drop needs the index built"),
    (F, ("i schedule", "i execute", "i catchup", "i complete", "w1 start", "w1 write", "w1 commit"), "i drop",
     "the table lock is held by w1"),
    (F, ("i schedule", "i execute", "i catchup", "i complete"), "i frob", "unknown indexer step frob"),
    (F, ("m compact",), "m compact", "the MDT compaction already ran"),
    (F, W + ("w1 commit",), "m compact", "the table lock is held by w1"),
    (F, ("w1 start", "w2 start", "w2 write", "w2 commit", "w2 complete"), "m compact",
     "data-table write 20260101000000002 is pending before the latest MDT deltacommit"),
]


@pytest.mark.parametrize("cfg,pre,act,why", REFUSALS)
def test_refusals_say_why(cfg, pre, act, why):
    s = run(cfg, *pre)
    assert M.refusal(cfg, s, tuple(act.split())) == why
    with pytest.raises(M.Refused) as e:
        M.step(cfg, s, tuple(act.split()))
    assert str(e.value) == why


def test_refusals_of_constructed_states():
    s = M.initial_state(F)
    # a timeline rule refusing the effect refuses the action, naming the rule
    assert M.refusal(F, replace(s, clock=0), ("w1", "start")) == (
        "I3.create-once: [I3.create-once] instant 20260101000000000.deltacommit already exists "
        "(20260101000000000->20260101000000001.deltacommit[completed])")
    scheduled = run(F, "i schedule")
    assert M.refusal(F, replace(scheduled, idx=IDX0), ("i", "schedule")) == "an indexing instant is pending"
    assert M.refusal(F, replace(s, dt=Timeline(8)), ("i", "schedule")) == "no completed write to index up to"
    assert M.refusal(F, replace(s, mdt=(("files", frozenset(), ()),)), ("m", "compact")) == "no log entry to compact"
    assert M.refusal(F, s, ("w1", "start")) is None


EFFECTS = [
    # writers
    (F, (), "w1 start", {"clock": 3, "dt": (DC0, ("T2", "deltacommit", 1, None)),
                         "procs": (("w1", "requested", "T2", None), W2)}),
    (F, ("w1 start",), "w1 write", {"dt": (DC0, ("T2", "deltacommit", 2, None)),
                                    "procs": (("w1", "written", "T2", ("files",)), W2),
                                    "writes": (("T0", (("k0", "fg-0"),)), ("T2", (("k1", "fg-1"),)))}),
    (D, ("w1 start",), "w1 write", {"dt": (DC0, ("T2", "deltacommit", 2, None)),
                                    "procs": (("w1", "written", "T2", None), W2),
                                    "writes": (("T0", (("k0", "fg-0"),)), ("T2", (("k1", "fg-1"),)))}),
    (F, ("w1 start", "w2 start"), "w2 write", {"dt": (DC0, ("T2", "deltacommit", 1, None),
                                                      ("T3", "deltacommit", 2, None)),
                                               "procs": (("w1", "requested", "T2", None),
                                                         ("w2", "written", "T3", ("files",))),
                                               "writes": (("T0", (("k0", "fg-0"),)), ("T3", (("k2", "fg-0"),)))}),
    (F, W, "w1 commit", {"clock": 4, "lock": "w1",
                         "mdt": (("files", (), (FILES0, ("T2", "w", (("files", "fg-1_T2", "T2"),)))),),
                         "mdt_tl": (DC0, ("T2", "deltacommit", 3, "T3")),
                         "procs": (("w1", "mdt-done", "T2", ("files",)), W2)}),
    (D, W, "w1 commit", {"clock": 4, "dt": (DC0, ("T2", "deltacommit", 3, "T3")), "lock": "w1",
                         "procs": (("w1", "dt-done", "T2", None), W2)}),
    (F, W + ("w1 commit",), "w1 complete", {"clock": 5, "dt": (DC0, ("T2", "deltacommit", 3, "T4")), "lock": None,
                                            "procs": (("w1", "done", "T2", ("files",)), W2)}),
    (D, W + ("w1 commit",), "w1 complete", {
        "clock": 5, "lock": None, "mdt": (("files", (), (FILES0, ("T2", "w", (("files", "fg-1_T2", "T2"),)))),),
        "mdt_tl": (DC0, ("T2", "deltacommit", 3, "T4")), "procs": (("w1", "done", "T2", None), W2)}),
    (F, W, "w1 fail", {"procs": (("w1", "failed", "T2", ("files",)), W2)}),
    (F, W + ("w1 commit",), "w1 fail", {"lock": None, "procs": (("w1", "failed", "T2", ("files",)), W2)}),
    (F, W + ("w2 start", "w2 write", "w2 commit"), "w1 fail", {
        "procs": (("w1", "failed", "T2", ("files",)), ("w2", "mdt-done", "T3", ("files",)))}),
    (F, W + ("w1 commit",), "w1 fail", {"lock": None, "procs": (("w1", "failed", "T2", ("files",)), W2)}),
    # rollback: without and with the failed write's MDT deltacommit
    (F, W + ("w1 fail",), "r rollback", {
        "clock": 6, "dt": (DC0, ("T3", "rollback", 3, "T5")), "mdt_tl": (DC0, ("T3", "deltacommit", 3, "T4")),
        "procs": (("w1", "rolled-back", "T2", None), W2), "writes": (("T0", (("k0", "fg-0"),)),)}),
    (F, W + ("w1 commit", "w1 fail"), "r rollback", {
        "clock": 7, "dt": (DC0, ("T4", "rollback", 3, "T6")), "mdt": (("files", (), (FILES0,)),),
        "mdt_tl": (DC0, ("T4", "deltacommit", 3, "T5")),
        "procs": (("w1", "rolled-back", "T2", None), W2), "writes": (("T0", (("k0", "fg-0"),)),)}),
    # the oldest FAILED write is rolled back, not an older pending write of a live writer
    (F, ("w2 start", "w1 start", "w1 write", "w1 fail"), "r rollback", {
        "clock": 7, "dt": (DC0, ("T2", "deltacommit", 1, None), ("T4", "rollback", 3, "T6")),
        "mdt_tl": (DC0, ("T4", "deltacommit", 3, "T5")),
        "procs": (("w1", "rolled-back", "T3", None), ("w2", "requested", "T2", None)),
        "writes": (("T0", (("k0", "fg-0"),)),)}),
    # indexUptoInstant past a pending hole: contiguous stops before it, last-completed (broken) does not
    (F, ("w1 start", "w2 start", "w2 write", "w2 commit", "w2 complete"), "i schedule", {
        "clock": 7, "dt": (DC0, ("T2", "deltacommit", 1, None), ("T3", "deltacommit", 3, "T5"),
                           ("T6", "indexing", 1, None)),
        "idx": ("scheduled", "T6", "T0", (), None, 1, 0), "plans": (("T6", "record_index", "T0"),)}),
    (M.IndexingConfig(upto="last-completed"), ("w1 start", "w2 start", "w2 write", "w2 commit", "w2 complete"),
     "i schedule", {
        "clock": 7, "dt": (DC0, ("T2", "deltacommit", 1, None), ("T3", "deltacommit", 3, "T5"),
                           ("T6", "indexing", 1, None)),
        "idx": ("scheduled", "T6", "T3", (), None, 1, 0), "plans": (("T6", "record_index", "T3"),)}),
    # a skipped head leaves the rest of the catch-up list
    (F, ("i schedule", "w1 start", "w1 write", "w2 start", "i execute", "i catchup", "w1 fail"), "i catchup", {
        "idx": ("catching-up", "T2", "T0", (("T4", True),), "T0", 1, 0)}),
    # the indexer
    (F, (), "i schedule", {"clock": 3, "dt": (DC0, ("T2", "indexing", 1, None)),
                           "idx": ("scheduled", "T2", "T0", (), None, 1, 0),
                           "plans": (("T2", "record_index", "T0"),)}),
    (F, X + ("i timeout",), "i schedule", {
        "clock": 5, "dt": (DC0, ("T3", "deltacommit", 2, None), ("T4", "indexing", 1, None)),
        "idx": ("scheduled", "T4", "T0", (), None, 2, 1),
        "plans": (("T2", "record_index", "T0"), ("T4", "record_index", "T0"))}),
    (F, ("i schedule",), "i execute", {
        "dt": (DC0, ("T2", "indexing", 2, None)), "idx": ("catching-up", "T2", "T0", (("T0", False),), "T0", 1, 0),
        "mdt": (("files", (), (FILES0,)), ("record_index", RI0, ())), "parts": ("parts", ("files",), ("record_index",))}),
    (F, W + ("i schedule",), "i execute", {
        "dt": (DC0, ("T2", "deltacommit", 2, None), ("T3", "indexing", 2, None)),
        "idx": ("catching-up", "T3", "T0", (("T0", False), ("T2", True)), "T0", 1, 0),
        "mdt": (("files", (), (FILES0,)), ("record_index", RI0, ())), "parts": ("parts", ("files",), ("record_index",))}),
    (H, ("i schedule",), "i execute", {
        "dt": (DC0, ("T2", "indexing", 2, None)), "idx": ("catching-up", "T2", "T0", (("T0", False),), "T0", 1, 0),
        "lock": "i", "mdt": (("files", (), (FILES0,)), ("record_index", RI0, ())),
        "parts": ("parts", ("files",), ("record_index",))}),
    (N, ("i schedule",), "i execute", {
        "dt": (DC0, ("T2", "indexing", 2, None)), "idx": ("catching-up", "T2", "T0", (), "T0", 1, 0),
        "mdt": (("files", (), (FILES0,)), ("record_index", RI0, ())), "parts": ("parts", ("files",), ("record_index",))}),
    # catch-up: apply (T0 not yet in the partition), apply of a write that read the config before execute,
    # caught-up (the write's own MDT deltacommit wrote the partition), skip-dead, gone
    (F, ("i schedule", "i execute"), "i catchup", {
        "idx": ("catching-up", "T2", "T0", (), "T0", 1, 0),
        "mdt": (("files", (), (FILES0,)), ("record_index", RI0, (("T0", "i", RI0),)))}),
    (F, X + ("w1 commit", "w1 complete"), "i catchup", {
        "idx": ("catching-up", "T2", "T0", (), "T3", 1, 0),
        "mdt": (("files", (), (FILES0, ("T3", "w", (("files", "fg-1_T3", "T3"),)))),
                ("record_index", RI0, (("T0", "i", RI0), ("T3", "i", (("record_index", "k1", "fg-1"),)))))}),
    (F, X2, "i catchup", {"idx": ("catching-up", "T2", "T0", (), "T3", 1, 0)}),
    (F, X + ("w1 fail",), "i catchup", {"idx": ("catching-up", "T2", "T0", (), "T0", 1, 0)}),
    (F, X + ("w1 fail", "r rollback"), "i catchup", {"idx": ("catching-up", "T2", "T0", (), "T0", 1, 0)}),
    # abort
    (F, X, "i timeout", {"dt": (DC0, ("T3", "deltacommit", 2, None)), "idx": ("aborted", "T2", "T0", (), "T0", 1, 1),
                         "mdt": (("files", (), (FILES0,)),), "parts": ("parts", ("files",), ())}),
    (H, W + ("i schedule", "i execute", "i catchup"), "i timeout", {
        "dt": (DC0, ("T2", "deltacommit", 2, None)), "idx": ("aborted", "T3", "T0", (), "T0", 1, 1), "lock": None}),
    # complete, drop
    (F, ("i schedule", "i execute", "i catchup"), "i complete", {
        "clock": 4, "dt": (DC0, ("T2", "indexing", 3, "T3")), "idx": ("indexed", "T2", "T0", (), "T0", 1, 0),
        "index_commits": (("T2", "record_index", "T0"),), "parts": ("parts", ("files", "record_index"), ())}),
    (H2, ("i schedule", "i execute", "i catchup"), "i complete", {
        "clock": 4, "dt": (DC0, ("T2", "indexing", 3, "T3")), "idx": ("indexed", "T2", "T0", (), "T0", 1, 0),
        "index_commits": (("T2", "record_index", "T0"),), "lock": None,
        "parts": ("parts", ("files", "record_index"), ())}),
    (F, ("i schedule", "i execute", "i catchup", "i complete"), "i drop", {
        "idx": ("dropped", "T2", "T0", (), "T0", 1, 0), "mdt": (("files", (), (FILES0,)),),
        "parts": ("parts", ("files",), ())}),
    # the MDT compaction
    (F, (), "m compact", {"clock": 4, "compacted": 1, "mdt": (("files", (("files", "fg-0_T0", "T0"),), ()),),
                          "mdt_tl": (DC0, ("T2", "compaction", 3, "T3"))}),
    (F, W + ("w1 commit", "w1 complete"), "m compact", {
        "clock": 7, "compacted": 1, "mdt": (("files", (("files", "fg-0_T0", "T0"), ("files", "fg-1_T2", "T2")), ()),),
        "mdt_tl": (DC0, ("T2", "deltacommit", 3, "T3"), ("T5", "compaction", 3, "T6"))}),
    # a failed write's completed MDT deltacommit (same time as the latest: not "before" it) stays a log ...
    (F, W + ("w1 commit", "w1 fail"), "m compact", {
        "clock": 6, "compacted": 1,
        "mdt": (("files", (("files", "fg-0_T0", "T0"),), (("T2", "w", (("files", "fg-1_T2", "T2"),)),)),),
        "mdt_tl": (DC0, ("T2", "deltacommit", 3, "T3"), ("T4", "compaction", 3, "T5"))}),
    # ... but all-logs (broken) merges it
    (A, W + ("w1 commit", "w1 fail"), "m compact", {
        "clock": 6, "compacted": 1, "mdt": (("files", (("files", "fg-0_T0", "T0"), ("files", "fg-1_T2", "T2")), ()),),
        "mdt_tl": (DC0, ("T2", "deltacommit", 3, "T3"), ("T4", "compaction", 3, "T5"))}),
    (A, W + ("w1 commit", "w1 fail", "r rollback"), "m compact", {
        "clock": 9, "compacted": 1, "mdt": (("files", (("files", "fg-0_T0", "T0"),), ()),),
        "mdt_tl": (DC0, ("T4", "deltacommit", 3, "T5"), ("T7", "compaction", 3, "T8"))}),
    # an inflight partition is not compacted; the indexer's entries of an available one are
    (F, ("i schedule", "i execute", "i catchup"), "m compact", {
        "clock": 5, "compacted": 1,
        "mdt": (("files", (("files", "fg-0_T0", "T0"),), ()), ("record_index", RI0, (("T0", "i", RI0),))),
        "mdt_tl": (DC0, ("T3", "compaction", 3, "T4"))}),
    (F, ("i schedule", "i execute", "i catchup", "i complete", "w1 start", "w1 write", "w1 commit", "w1 complete"),
     "m compact", {
        "clock": 9, "compacted": 1,
        "mdt": (("files", (("files", "fg-0_T0", "T0"), ("files", "fg-1_T4", "T4")), ()),
                ("record_index", (("record_index", "k0", "fg-0"), ("record_index", "k1", "fg-1")), ())),
        "mdt_tl": (DC0, ("T4", "deltacommit", 3, "T5"), ("T7", "compaction", 3, "T8"))}),
]


@pytest.mark.parametrize("cfg,pre,act,want", EFFECTS)
def test_effects_change_exactly(cfg, pre, act, want):
    s0 = run(cfg, *pre)
    before = view(s0)
    s1 = M.step(cfg, s0, tuple(act.split()))
    assert changed(s0, s1) == want
    assert view(s0) == before  # a step copies: the old state (and its timelines) is unchanged
    assert M.refusal(cfg, s0, tuple(act.split())) is None


def test_enabled_in_candidate_order():
    s = M.initial_state(F)
    assert [a for a, _ in M.enabled(F, s)] == [("w1", "start"), ("w2", "start"), ("i", "schedule"), ("m", "compact")]
    s = run(F, *W, "w1 commit")
    got = M.enabled(F, s)
    assert [a for a, _ in got] == [("w1", "complete"), ("w2", "start"), ("w1", "fail")]
    assert [view(n) for _, n in got] == [view(M.step(F, s, a)) for a, _ in got]


def test_candidate_actions_fairness_and_names():
    assert M.candidate_actions(M.IndexingConfig(writers=1)) == [
        ("w1", "start"), ("w1", "write"), ("w1", "commit"), ("w1", "complete"),
        ("i", "schedule"), ("i", "execute"), ("i", "catchup"), ("i", "complete")]
    assert M.candidate_actions(F) == [
        ("w1", "start"), ("w1", "write"), ("w1", "commit"), ("w1", "complete"), ("w2", "start"), ("w2", "write"),
        ("w2", "commit"), ("w2", "complete"), ("w1", "fail"), ("w2", "fail"), ("r", "rollback"), ("i", "schedule"),
        ("i", "execute"), ("i", "catchup"), ("i", "complete"), ("i", "timeout"), ("i", "drop"), ("m", "compact")]
    assert M.fairness(("w1", "fail")) == "none" and M.fairness(("w1", "start")) == "weak"
    assert M.fairness(("w1", "start"), frozenset({"start"})) == "none"
    assert M.format_action(("i", "catchup")) == "i catchup"
    assert M.IndexingConfig(writers=3).writer_names == ("w1", "w2", "w3")


def test_readable_index_built_and_verdicts():
    building = run(F, "i schedule", "i execute")
    assert M.readable(F, building) == {"files"}
    assert M.readable(M.IndexingConfig(readers_allow_inflight=True), building) == {"files", "record_index"}
    assert not M.index_built(building)
    built = run(F, "i schedule", "i execute", "i catchup", "i complete")
    assert M.index_built(built) and M.readable(F, built) == {"files", "record_index"}
    assert all(v.holds for v in M.verdicts(F, built))
    # aborted=... is passed from the indexer's phase: the abort check runs only after an abort
    aborted = run(H, *W, "i schedule", "i execute", "i catchup", "i timeout")
    bad = [v for v in M.verdicts(H, aborted) if not v.holds]
    assert [(v.invariant, v.detail) for v in bad] == [
        ("I17.abort-leaves-no-trace", "record_index still in the table config; MDT partition record_index still has files"),
        ("MDT.table-config", "record_index inflight with no pending indexing instant")]
    held = run(H2, "i schedule", "i execute")
    assert [v.invariant for v in M.verdicts(H2, held) if not v.holds] == ["I17.writers-not-blocked"]


CONFIG_ERRORS = [
    (dict(writers=0), "writers must be 1..3, not 0"),
    (dict(writers=4), "writers must be 1..3, not 4"),
    (dict(failures=-1), "failures must be 0..writers, not -1"),
    (dict(failures=3), "failures must be 0..writers, not 3"),
    (dict(config_read="x"), "config_read must be one of ('before-lock', 'in-lock'), not 'x'"),
    (dict(upto="x"), "upto must be one of ('contiguous', 'last-completed'), not 'x'"),
    (dict(catchup_check="x"), "catchup_check must be one of ('per-partition', 'instant-time'), not 'x'"),
    (dict(indexer_lock="x"), "indexer_lock must be one of ('short', 'held'), not 'x'"),
    (dict(commit_order="x"), "commit_order must be one of ('mdt-first', 'dt-first'), not 'x'"),
    (dict(compaction_input="x"), "compaction_input must be one of ('valid-only', 'all-logs'), not 'x'"),
    (dict(timeouts=-1), "timeouts must be 0..2, not -1"),
    (dict(timeouts=3), "timeouts must be 0..2, not 3"),
    (dict(retries=-1), "retries must be 0..2, not -1"),
    (dict(retries=3), "retries must be 0..2, not 3"),
]


@pytest.mark.parametrize("kw,msg", CONFIG_ERRORS)
def test_config_bounds(kw, msg):
    with pytest.raises(ValueError) as e:
        M.IndexingConfig(**kw)
    assert str(e.value) == msg


def test_config_bounds_inclusive_edges():
    for kw in (dict(writers=1), dict(writers=3), dict(writers=3, failures=3), dict(failures=0), dict(timeouts=0),
               dict(timeouts=2), dict(retries=0), dict(retries=2), dict(upto="last-completed"),
               dict(config_read="in-lock"), dict(catchup_check="instant-time"), dict(indexer_lock="held"),
               dict(commit_order="dt-first"), dict(compaction_input="all-logs")):
        assert M.IndexingConfig(**kw)
    with pytest.raises(P.IndexingError) as e:
        M.IndexingConfig(partition="files")
    assert str(e.value) == "[indexing.exists] index files already exists (hoodie.table.metadata.partitions)"
    assert M.IndexingConfig().to_dict() == {
        "writers": 2, "failures": 0, "partition": "record_index",
        "settings": {"mode": "OPTIMISTIC_CONCURRENCY_CONTROL", "lock_provider": "InProcessLockProvider"},
        "config_read": "before-lock", "writers_include_inflight": True, "readers_allow_inflight": False,
        "upto": "contiguous", "catchup": True, "catchup_check": "per-partition", "recheck_after_wait": True,
        "indexer_lock": "short", "commit_order": "mdt-first", "abort_cleanup": True, "mdt_compaction": False,
        "compaction_input": "valid-only", "timeouts": 0, "retries": 0, "drop": False, "heartbeat_check": True}


def test_a_process_holding_the_lock_may_go_on():
    """``_need_lock`` refuses only a lock held by another process: each process passes with its own lock
    (constructed states: the rollbacker, the indexer and the compactor never keep it between their steps)."""
    failed = run(F, *W, "w1 fail")
    assert changed(failed, M.step(F, replace(failed, lock="r"), ("r", "rollback")))["lock"] == "r"
    assert M.refusal(F, replace(failed, lock="i"), ("r", "rollback")) == "the table lock is held by i"
    s = M.initial_state(F)
    assert view(M.step(F, replace(s, lock="i"), ("i", "schedule")))[3] == "i"
    assert M.refusal(F, replace(s, lock="m"), ("i", "schedule")) == "the table lock is held by m"
    assert view(M.step(F, replace(s, lock="m"), ("m", "compact")))[3] == "m"
    assert M.refusal(F, replace(s, lock="i"), ("m", "compact")) == "the table lock is held by i"
    built = run(F, "i schedule", "i execute", "i catchup", "i complete")
    assert view(M.step(F, replace(built, lock="i"), ("i", "drop")))[3] == "i"
    assert M.refusal(F, replace(built, lock="r"), ("i", "drop")) == "the table lock is held by r"


def test_an_abort_keeps_a_writers_lock():
    s = run(F, *X, "w1 commit")
    assert changed(s, M.step(F, s, ("i", "timeout"))) == {
        "dt": (DC0, ("T3", "deltacommit", 2, None)), "idx": ("aborted", "T2", "T0", (), "T0", 1, 1),
        "mdt": (("files", (), (FILES0, ("T3", "w", (("files", "fg-1_T3", "T3"),)))),),
        "parts": ("parts", ("files",), ())}
    assert view(M.step(F, s, ("i", "timeout")))[3] == "w1"


def test_fairness_table():
    assert M.FAIRNESS == {
        "start": "weak", "write": "weak", "commit": "weak", "complete": "weak", "fail": "none", "rollback": "weak",
        "schedule": "none", "execute": "weak", "catchup": "weak", "timeout": "weak", "drop": "none", "compact": "weak"}


def test_all_logs_compaction_takes_completed_mdt_deltacommits_and_the_indexers_entries():
    """``all-logs`` (broken) merges a writer's entry whose MDT deltacommit completed -- not one without an MDT
    deltacommit (constructed: the machine never leaves one) -- and every entry of the indexer's catch-up."""
    s = run(A, *W, "w1 commit", "w1 complete")
    ghost = ("20260101000000009", "w", frozenset({("files", "ghost", "20260101000000009")}))
    applied = ("20260101000000008", "i", frozenset({("files", "applied", "20260101000000008")}))
    name, base, logs = s.mdt[0]
    s = replace(s, mdt=((name, base, logs + (ghost, applied)),))
    assert changed(s, M.step(A, s, ("m", "compact"))) == {
        "clock": 7, "compacted": 1,
        "mdt": (("files", (("files", "applied", "T8"), ("files", "fg-0_T0", "T0"), ("files", "fg-1_T2", "T2")),
                 (("T9", "w", (("files", "ghost", "T9"),)),)),),
        "mdt_tl": (DC0, ("T2", "deltacommit", 3, "T3"), ("T5", "compaction", 3, "T6"))}


def test_timeline_writers_are_recorded():
    """Each timeline file names the process that wrote it (``Timeline.writers_of``): the writer its requested and
    inflight files, the indexer all three of its indexing instant, the rollbacker its rollback's request."""
    from model.instant import State

    R, I, C = State.REQUESTED, State.INFLIGHT, State.COMPLETED
    s = run(F, *W, "w1 commit", "w1 complete", "i schedule", "i execute", "i catchup", "i complete")
    assert [(short(i.requested_time), s.dt.writers_of(i.requested_time, i.action)) for i in s.dt.instants()] == [
        ("T0", {}), ("T2", {R: ("w1",), I: ("w1",)}), ("T5", {R: ("i",), I: ("i",), C: ("i",)})]
    s = run(F, *W, "w1 fail", "r rollback")
    assert [(short(i.requested_time), s.dt.writers_of(i.requested_time, i.action)) for i in s.dt.instants()] == [
        ("T0", {}), ("T3", {R: ("r",)})]
