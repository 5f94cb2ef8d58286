"""Focused tests for model/mdt/partitions.py that `make mutate` showed unchecked (issue #15 item 10): the
table-config transitions' error ids and messages, every precondition of ``validate_indexing`` with its exact
text, the catch-up decision over its whole input space, the catch-up list's bounds, and the records written."""

from __future__ import annotations

import itertools
from types import SimpleNamespace as NS

import pytest

from model.mdt import partitions as P

S = P.PartitionStates(available=frozenset({"files", "column_stats"}), inflight=frozenset({"record_index"}))


def refused(f, *args):
    with pytest.raises(P.IndexingError) as e:
        f(*args)
    return e.value.rule, e.value.detail, str(e.value)


def test_to_inflight():
    assert S.to_inflight({"bloom_filters"}) == P.PartitionStates(frozenset({"files", "column_stats"}),
                                                                 frozenset({"record_index", "bloom_filters"}))
    assert S.to_inflight([]) == S
    assert refused(S.to_inflight, {"files", "record_index", "bloom_filters"}) == (
        "indexing.exists", "metadata partition(s) files, record_index already available or inflight",
        "[indexing.exists] metadata partition(s) files, record_index already available or inflight")
    assert refused(S.to_inflight, ["record_index"])[1] == "metadata partition(s) record_index already available or inflight"
    assert refused(S.to_inflight, ["column_stats"])[1] == "metadata partition(s) column_stats already available or inflight"


def test_to_available_and_remove():
    assert S.to_available(["record_index"]) == P.PartitionStates(
        frozenset({"files", "column_stats", "record_index"}), frozenset())
    assert refused(S.to_available, {"files", "bloom_filters", "record_index"}) == (
        "indexing.not-inflight", "metadata partition(s) bloom_filters, files are not inflight",
        "[indexing.not-inflight] metadata partition(s) bloom_filters, files are not inflight")
    assert S.remove(["column_stats", "record_index", "bloom_filters"]) == P.PartitionStates(frozenset({"files"}),
                                                                                           frozenset())
    assert S.remove([]) == S


def test_validate_indexing_messages():
    ok = P.ConcurrencySettings()
    assert P.validate_indexing(ok, "bloom_filters", S) is None
    assert P.validate_indexing(P.ConcurrencySettings(P.NBCC), "bloom_filters", S) is None
    cases = [
        (P.ConcurrencySettings("BOGUS"), "files",
         "[indexing.concurrency-mode] hoodie.write.concurrency.mode: unknown mode 'BOGUS'; known: SINGLE_WRITER, "
         "OPTIMISTIC_CONCURRENCY_CONTROL, NON_BLOCKING_CONCURRENCY_CONTROL"),
        (P.ConcurrencySettings(P.SINGLE_WRITER), "x",
         "[indexing.concurrency-mode] hoodie.write.concurrency.mode: indexing needs OPTIMISTIC_CONCURRENCY_CONTROL "
         "or NON_BLOCKING_CONCURRENCY_CONTROL, not SINGLE_WRITER"),
        (P.ConcurrencySettings(lock_provider=None), "x",
         "[indexing.lock-provider] hoodie.write.lock.provider: indexing needs a lock provider"),
        (P.ConcurrencySettings(lock_provider=""), "x",
         "[indexing.lock-provider] hoodie.write.lock.provider: indexing needs a lock provider"),
        (ok, "x", "[indexing.unknown-index] index type 'x' is unknown; known: files, column_stats, bloom_filters, "
                  "record_index"),
        (ok, "column_stats", "[indexing.exists] index column_stats already exists (hoodie.table.metadata.partitions)"),
        (ok, "record_index", "[indexing.inflight] index record_index is already being built "
                             "(hoodie.table.metadata.partitions.inflight)"),
    ]
    for settings, part, msg in cases:
        assert refused(P.validate_indexing, settings, part, S)[2] == msg
    assert [P.ConcurrencySettings(m).multi_writer for m in ("BOGUS", P.SINGLE_WRITER, P.OCC, P.NBCC)] == [
        False, False, True, True]


def expected_decision(dt_state, alive, mdt_completed, wrote, check, was_pending, recheck):
    """``AbstractIndexingCatchupTask#run`` restated as a table (the docstring of ``catchup_decision``)."""
    if dt_state is None:
        return "gone"
    if dt_state == "pending":
        return "wait" if alive else "skip-dead"
    if was_pending and not recheck:
        return "caught-up"
    if mdt_completed and (wrote or check == "instant-time"):
        return "caught-up"
    return "apply"


def test_catchup_decision_whole_table():
    for args in itertools.product([None, "pending", "completed"], [True, False], [True, False], [True, False],
                                  P.CATCHUP_CHECKS, [True, False], [True, False]):
        dt_state, alive, mc, mw, check, wp, rr = args
        got = P.catchup_decision(dt_state=dt_state, heartbeat_alive=alive, mdt_completed=mc, mdt_wrote_partition=mw,
                                 check=check, was_pending=wp, recheck_after_wait=rr)
        assert got == expected_decision(*args), args
    assert P.catchup_decision(dt_state="completed", heartbeat_alive=False, mdt_completed=False,
                              mdt_wrote_partition=False) == "apply"  # defaults: per-partition, not pending, recheck
    assert P.catchup_decision(dt_state="completed", heartbeat_alive=False, mdt_completed=True,
                              mdt_wrote_partition=False) == "apply"
    with pytest.raises(ValueError) as e:
        P.catchup_decision(dt_state=None, heartbeat_alive=True, mdt_completed=True, mdt_wrote_partition=True, check="x")
    assert str(e.value) == "check must be one of ('per-partition', 'instant-time'), not 'x'"


def test_catchup_start_and_list_bounds():
    assert P.catchup_start(["1", "3", "0"], "2") == "0"
    assert P.catchup_start(["2", "3"], "2") == "2"  # a service at upto itself is not before it
    assert P.catchup_start([], "2") == "2"
    insts = [NS(requested_time="5", action="deltacommit", is_pending=True),
             NS(requested_time="1", action="clean", is_pending=True),
             NS(requested_time="0", action="deltacommit", is_pending=False),
             NS(requested_time="3", action="indexing", is_pending=True),
             NS(requested_time="2", action="deltacommit", is_pending=False),
             NS(requested_time="4", action="rollback", is_pending=False)]
    assert P.catchup_list(insts, "3") == (("1", True), ("2", False), ("4", False), ("5", True))
    done_clean = [NS(requested_time="1", action="clean", is_pending=False)] + insts[:1] + insts[2:]
    assert P.catchup_list(done_clean, "3") == (("4", False), ("5", True))
    assert P.catchup_list(insts, "3", service_actions=()) == (("4", False), ("5", True))
    assert P.catchup_list(insts, "2", indexing_action="x") == (("1", True), ("2", False), ("3", True), ("4", False),
                                                               ("5", True))


def test_partitions_writers_and_readers_use():
    assert P.writer_partitions(S) == {"files", "column_stats", "record_index"}
    assert P.writer_partitions(S, include_inflight=False) == {"files", "column_stats"}
    assert P.readable_partitions(S) == {"files", "column_stats"}
    assert P.readable_partitions(S, allow_inflight=True) == {"files", "column_stats", "record_index"}
    assert P.valid_instants(["1", "2"], ["3"]) == {"1", "2", "3"} and P.valid_instants(["1"]) == {"1"}


def test_index_records_and_entries():
    assert P.index_plan(["record_index", "column_stats"], "T5") == {"version": 1, "indexPartitionInfos": [
        {"version": 1, "metadataPartitionPath": "column_stats", "indexUptoInstant": "T5", "extraMetadata": None},
        {"version": 1, "metadataPartitionPath": "record_index", "indexUptoInstant": "T5", "extraMetadata": None}]}
    assert P.index_commit_metadata(["record_index"], "T7") == {"version": 1, "operationType": None,
                                                               "indexPartitionInfos": [
        {"version": 1, "metadataPartitionPath": "record_index", "indexUptoInstant": "T7", "extraMetadata": None}]}
    w = ("t1", (("a", "fg-0"), ("b", "fg-1")))
    assert P.entries_of("record_index", w) == {("record_index", "a", "fg-0"), ("record_index", "b", "fg-1")}
    assert P.entries_of("bloom_filters", w) == {("bloom_filters", "fg-0_t1", "t1"), ("bloom_filters", "fg-1_t1", "t1")}
    writes = {"t1": (("a", "fg-0"),), "t2": (("b", "fg-1"),), "t3": (("c", "fg-0"),)}
    assert P.rebuild("record_index", writes, ["t1", "t3", "t9"]) == {("record_index", "a", "fg-0"),
                                                                     ("record_index", "c", "fg-0")}
    assert P.rebuild("files", writes, []) == frozenset()
