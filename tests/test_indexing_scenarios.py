"""Hand-written runs of the MDT + async indexer spec (issue #18 items 1-3): each rule of
:mod:`model.mdt.partitions` on its own, and runs of :mod:`model.mdt.machine` that show the MDT mirroring the
data table, the catch-up's decisions, an abort that leaves no trace, a retry that reaches the same index,
dropping an index, and writers never waiting for the indexer (checked over every explored state)."""

from __future__ import annotations

from collections import deque

import pytest

from model.instant import Action, Instant, State
from model.invariants import indexing as inv
from model.mdt import machine as mm
from model.mdt import partitions as P
from model.mdt.variants import INDEXING_VARIANTS

DC, IDX = Action.DELTACOMMIT, Action.INDEXING


def run(cfg, *steps):
    s = mm.initial_state(cfg)
    for a in steps:
        who, what = a.split()
        s = mm.step(cfg, s, (who, what))
        bad = [v for v in mm.verdicts(cfg, s) if not v.holds]
        assert not bad, f"after {a}: {bad}"
    return s


HUDI = INDEXING_VARIANTS["hudi-1.x"].config(writers=2, failures=1, timeouts=1, retries=1, drop=True)


# ------------------------------------------------------------------------------------------ the rules
def test_validate_indexing_names_each_setting():
    ok = P.ConcurrencySettings()
    P.validate_indexing(ok, P.RECORD_INDEX, P.PartitionStates())
    P.validate_indexing(P.ConcurrencySettings(P.NBCC), P.COLUMN_STATS, P.PartitionStates())
    cases = [
        (P.ConcurrencySettings(P.SINGLE_WRITER), P.RECORD_INDEX, P.PartitionStates(), "indexing.concurrency-mode"),
        (P.ConcurrencySettings(lock_provider=None), P.RECORD_INDEX, P.PartitionStates(), "indexing.lock-provider"),
        (ok, "secondary", P.PartitionStates(), "indexing.unknown-index"),
        (ok, P.FILES, P.PartitionStates(), "indexing.exists"),
        (ok, P.RECORD_INDEX, P.PartitionStates().to_inflight({P.RECORD_INDEX}), "indexing.inflight"),
    ]
    for settings, part, states, rule in cases:
        with pytest.raises(P.IndexingError) as e:
            P.validate_indexing(settings, part, states)
        assert e.value.rule == rule and "\n" not in str(e.value)
    with pytest.raises(P.IndexingError, match="hoodie.write.concurrency.mode"):
        mm.IndexingConfig(settings=P.ConcurrencySettings(P.SINGLE_WRITER))


def test_partition_states_transitions_and_properties():
    s = P.PartitionStates()
    assert s.as_properties() == {"hoodie.table.metadata.partitions": "files",
                                 "hoodie.table.metadata.partitions.inflight": ""}
    s = s.to_inflight({P.RECORD_INDEX})
    assert s.as_properties()["hoodie.table.metadata.partitions.inflight"] == "record_index"
    with pytest.raises(P.IndexingError):
        s.to_inflight({P.RECORD_INDEX})
    with pytest.raises(P.IndexingError):
        s.to_available({P.COLUMN_STATS})
    s2 = s.to_available({P.RECORD_INDEX})
    assert s2.available == {P.FILES, P.RECORD_INDEX} and not s2.inflight
    assert s.remove({P.RECORD_INDEX}) == P.PartitionStates()
    assert s2.remove({P.RECORD_INDEX}) == P.PartitionStates()


def test_index_upto_is_the_last_contiguous_completed_write():
    def i(t, done):
        return Instant(t, DC, State.COMPLETED if done else State.INFLIGHT, "x" if done else None)
    tl = [i("1", True), i("2", True), i("3", False), i("4", True)]
    assert P.index_upto(tl) == "2"
    assert P.index_upto(tl, contiguous=False) == "4"
    assert P.index_upto([i("1", False), i("2", True)]) is None
    assert P.index_upto([]) is None


def test_catchup_start_and_decisions():
    assert P.catchup_start(["05", "09"], "07") == "05"
    assert P.catchup_start(["09"], "07") == "07"
    d = dict(heartbeat_alive=True, mdt_completed=True, mdt_wrote_partition=True)
    assert P.catchup_decision(dt_state=None, **d) == P.GONE
    assert P.catchup_decision(dt_state="completed", **d) == P.CAUGHT_UP
    assert P.catchup_decision(dt_state="pending", **d) == P.WAIT
    assert P.catchup_decision(dt_state="pending", heartbeat_alive=False, mdt_completed=False,
                              mdt_wrote_partition=False) == P.SKIP_DEAD
    no_p = dict(heartbeat_alive=True, mdt_completed=True, mdt_wrote_partition=False)
    assert P.catchup_decision(dt_state="completed", **no_p) == P.APPLY
    assert P.catchup_decision(dt_state="completed", check=P.INSTANT_TIME, **no_p) == P.CAUGHT_UP
    assert P.catchup_decision(dt_state="completed", was_pending=True, **no_p) == P.APPLY
    assert P.catchup_decision(dt_state="completed", was_pending=True, recheck_after_wait=False, **no_p) == P.CAUGHT_UP
    assert P.catchup_decision(dt_state="completed", heartbeat_alive=True, mdt_completed=False,
                              mdt_wrote_partition=False) == P.APPLY
    with pytest.raises(ValueError):
        P.catchup_decision(dt_state="completed", check="nope", **d)


def test_writer_and_reader_partitions():
    s = P.PartitionStates().to_inflight({P.RECORD_INDEX})
    assert P.writer_partitions(s) == {P.FILES, P.RECORD_INDEX}
    assert P.writer_partitions(s, include_inflight=False) == {P.FILES}
    assert P.readable_partitions(s) == {P.FILES}
    assert P.readable_partitions(s, allow_inflight=True) == {P.FILES, P.RECORD_INDEX}


def test_rebuild_indexes_completed_writes_only():
    writes = {"1": (("k1", "fg-1"),), "2": (("k2", "fg-0"),)}
    assert P.rebuild(P.RECORD_INDEX, writes, ["1"]) == {(P.RECORD_INDEX, "k1", "fg-1")}
    assert P.rebuild(P.FILES, writes, ["1", "2"]) == {(P.FILES, "fg-1_1", "1"), (P.FILES, "fg-0_2", "2")}
    assert P.valid_instants(["1"], ["9"]) == {"1", "9"}


# ------------------------------------------------------------------------------------------ the MDT
def test_mdt_deltacommit_mirrors_the_commit_with_the_same_time():
    s = run(HUDI, "w1 start", "w1 write", "w1 commit")
    t = s.proc("w1")[2]
    assert s.mdt_tl.get(t, DC).is_completed and not s.dt.get(t, DC).is_completed  # MDT first
    assert s.lock == "w1"
    assert (P.FILES, f"fg-1_{t}", t) not in inv.reader_view(s, P.FILES)  # the DT commit is not complete yet
    s = mm.step(HUDI, s, ("w1", "complete"))
    assert s.dt.get(t, DC).is_completed and s.lock is None
    assert (P.FILES, f"fg-1_{t}", t) in inv.reader_view(s, P.FILES)


def test_rollback_is_mirrored_in_the_mdt():
    s = run(HUDI, "w1 start", "w1 write", "w1 commit", "w1 fail", "r rollback")
    t = s.proc("w1")[2]
    assert s.proc("w1")[1] == mm.ROLLED_BACK and s.lock is None
    assert s.dt.find(t) == [] and s.mdt_tl.get(t, DC) is None
    rb = s.dt.completed([Action.ROLLBACK])[0].requested_time
    assert s.mdt_tl.get(rb, DC).is_completed
    assert all(lg[0] != t for _, _, logs in s.mdt for lg in logs)
    # tv8: the rollback deletes the failed deltacommit's own MDT log entries; the rollback's deltacommit writes none
    assert all(lg[0] != rb for _, _, logs in s.mdt for lg in logs)


def test_the_log_sources_documented_are_the_ones_written():
    """``IndexingState``'s docstring names each MDT log entry's ``source``; every reachable state of a design with a
    failed write and its rollback holds exactly those (a source documented but never written misleads a reader of
    the invariants that filter on it)."""
    import re
    doc = " ".join(mm.IndexingState.__doc__.split())
    listed = doc.split("(``source``", 1)[1].split(")", 1)[0]
    documented = set(re.findall(r"``(\w+)``:", listed))
    cfg = INDEXING_VARIANTS["hudi-1.x"].config(writers=1, failures=1)
    states = _states(cfg)
    assert any(s.proc("w1")[1] == mm.ROLLED_BACK for s in states)
    written = {lg[1] for s in states for _, _, logs in s.mdt for lg in logs}
    assert written == documented == {"w", "i"}, (written, documented)


def test_mdt_compaction_waits_for_a_pending_write_before_the_latest_deltacommit():
    cfg = INDEXING_VARIANTS["hudi-1.x-failures"].config()
    s = run(cfg, "w1 start", "w1 write", "w2 start", "w2 write", "w2 commit", "w2 complete")
    assert "pending before the latest MDT deltacommit" in mm.refusal(cfg, s, ("m", "compact"))
    s = run(cfg, "w1 start", "w1 write", "w1 commit", "w1 fail", "m compact")
    files = s.mdt_partition(P.FILES)
    assert len(files[2]) == 1 and files[2][0][0] == s.proc("w1")[2]  # the uncommitted entry stays a log


# ------------------------------------------------------------------------------------------ the indexer
def test_index_build_with_catchup_and_commit_metadata():
    s = run(HUDI, "w1 start", "w1 write", "i schedule", "w1 commit", "w1 complete", "i execute")
    ti, upto = s.idx[1], s.idx[2]
    t1 = s.proc("w1")[2]
    assert upto == mm.T0 and s.plans == ((ti, P.RECORD_INDEX, mm.T0),)
    assert s.parts.inflight == {P.RECORD_INDEX} and s.dt.get(ti, IDX).state is State.INFLIGHT
    assert [t for t, _ in s.idx[3]] == [mm.T0, t1]
    s = run(HUDI, "w1 start", "w1 write", "i schedule", "w1 commit", "w1 complete", "i execute",
            "i catchup", "i catchup")
    assert any(lg[0] == t1 and lg[1] == "i" for lg in s.mdt_partition(P.RECORD_INDEX)[2])  # applied
    s = mm.step(HUDI, s, ("i", "complete"))
    assert s.parts.available == {P.FILES, P.RECORD_INDEX} and s.dt.get(ti, IDX).is_completed
    assert s.index_commits == ((ti, P.RECORD_INDEX, t1),)
    assert inv.reader_view(s, P.RECORD_INDEX) == inv.expected_index(s, P.RECORD_INDEX) == {
        (P.RECORD_INDEX, "k0", "fg-0"), (P.RECORD_INDEX, "k1", "fg-1")}


def test_catchup_waits_for_a_live_writer_and_skips_a_dead_one():
    s = run(HUDI, "w1 start", "i schedule", "i execute", "i catchup")
    assert "waiting for the live writer" in mm.refusal(HUDI, s, ("i", "catchup"))
    assert mm.refusal(HUDI, s, ("i", "complete")) == "catch-up not finished"
    s = run(HUDI, "w1 start", "w1 write", "i schedule", "i execute", "i catchup", "w1 fail", "i catchup", "i complete")
    assert s.idx[0] == mm.INDEXED and s.idx[4] == mm.T0  # the dead write was skipped, not caught up
    s = mm.step(HUDI, s, ("r", "rollback"))
    assert not [v for v in mm.verdicts(HUDI, s) if not v.holds]


def test_schedule_refused_for_an_existing_or_pending_index():
    s = run(HUDI, "i schedule")
    assert "indexer is scheduled" in mm.refusal(HUDI, s, ("i", "schedule"))
    s = run(HUDI, "i schedule", "i execute", "i catchup", "i complete")
    assert mm.refusal(HUDI, s, ("i", "schedule")).startswith("indexer is indexed")
    s = run(HUDI, "w1 start")
    assert mm.refusal(HUDI, s, ("i", "schedule")) is None  # T0 is contiguous; w1 pending after it


def test_abort_leaves_no_trace_and_a_retry_reaches_the_same_index():
    s = run(HUDI, "w1 start", "i schedule", "i execute", "i catchup", "i timeout")
    ti = s.plans[-1][0]
    assert s.idx[0] == mm.ABORTED and s.parts == P.PartitionStates()
    assert s.mdt_partition(P.RECORD_INDEX) is None and s.dt.get(ti, IDX) is None
    assert inv.check_abort_leaves_no_trace(s, True).holds
    retried = run(HUDI, "w1 start", "i schedule", "i execute", "i catchup", "i timeout", "w1 write", "w1 commit",
                  "w1 complete", "i schedule", "i execute", "i catchup", "i complete")
    plain = run(HUDI, "w1 start", "w1 write", "w1 commit", "w1 complete", "i schedule", "i execute", "i catchup",
                "i complete")
    assert retried.idx[0] == plain.idx[0] == mm.INDEXED and retried.idx[5] == 2
    assert inv.reader_view(retried, P.RECORD_INDEX) == inv.reader_view(plain, P.RECORD_INDEX) == \
        inv.expected_index(plain, P.RECORD_INDEX)
    assert "no retries left" in mm.refusal(INDEXING_VARIANTS["hudi-1.x"].config(timeouts=1), run(
        INDEXING_VARIANTS["hudi-1.x"].config(timeouts=1), "w1 start", "i schedule", "i execute", "i catchup",
        "i timeout"), ("i", "schedule"))


def test_drop_index_removes_it_from_readers():
    s = run(HUDI, "i schedule", "i execute", "i catchup", "i complete", "i drop")
    assert s.parts == P.PartitionStates() and s.mdt_partition(P.RECORD_INDEX) is None
    assert P.RECORD_INDEX not in mm.readable(HUDI, s)
    s = run(HUDI, "i schedule", "i execute", "i catchup", "i complete", "i drop", "w1 start", "w1 write",
            "w1 commit", "w1 complete")
    assert all(m[0] != P.RECORD_INDEX for m in s.mdt)  # writers no longer update the dropped partition


# ------------------------------------------------------------------------------------------ writers never blocked
def _states(cfg, limit=200_000):
    seen, todo = {}, deque([mm.initial_state(cfg)])
    while todo and len(seen) < limit:
        s = todo.popleft()
        fp = s.fingerprint()
        if fp in seen:
            continue
        seen[fp] = s
        todo.extend(n for _, n in mm.enabled(cfg, s))
    return list(seen.values())


def _indexer_blocks_a_writer(cfg, s) -> bool:
    for w, phase, _, _ in s.procs:
        if phase == mm.WRITTEN:
            why = mm.refusal(cfg, s, (w, "commit"))
            if why is not None and "held by i" in why:
                return True
    return False


def test_writers_never_wait_for_the_indexer_in_any_explored_state():
    """The property over all reachable states of Hudi's design (with an abort and a retry): a writer ready
    to commit is refused only while another *writer* holds the lock; never because of the indexer, whose
    lock sections are single steps. The broken design that holds the lock during the build is caught."""
    cfg = INDEXING_VARIANTS["hudi-1.x-abort-retry"].config(writers=2, drop=False)
    states = _states(cfg)
    assert len(states) > 1000
    assert not any(_indexer_blocks_a_writer(cfg, s) for s in states)
    assert any(s.lock == "w1" and mm.refusal(cfg, s, ("w2", "commit")) == "the table lock is held by w1"
               for s in states)  # the property is not vacuous: writers do wait for each other
    bad = INDEXING_VARIANTS["indexer-holds-lock"].config()
    assert any(_indexer_blocks_a_writer(bad, s) for s in _states(bad))


def test_catchup_list_starts_at_an_earlier_pending_service_and_skips_indexing():
    def i(t, action, pending):
        return Instant(t, action, State.INFLIGHT if pending else State.COMPLETED, None if pending else "x")
    tl = [i("01", DC, False), i("02", Action.ROLLBACK, True), i("03", DC, False), i("04", IDX, True),
          i("05", DC, True)]
    assert P.catchup_list(tl, "03") == (("02", True), ("03", False), ("05", True))
    tl[1] = i("02", Action.ROLLBACK, False)
    assert P.catchup_list(tl, "03") == (("03", False), ("05", True))


def test_plan_and_commit_metadata_match_hudis_avro_schemas():
    import io
    import json as _json

    import fastavro

    from pathlib import Path
    root = Path(__file__).resolve().parent.parent / "lakeio" / "schemas"
    for name, rec in (("HoodieIndexPlan", P.index_plan({P.RECORD_INDEX}, mm.T0)),
                      ("HoodieIndexCommitMetadata", P.index_commit_metadata({P.RECORD_INDEX}, mm.T0))):
        schema = fastavro.parse_schema(_json.loads((root / f"{name}.avsc").read_text()))
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, schema, rec)
        buf.seek(0)
        assert fastavro.schemaless_reader(buf, schema) == rec
    s = run(HUDI, "i schedule", "i execute", "i catchup", "i complete")
    ti, part, caught = s.index_commits[0]
    assert P.index_commit_metadata({part}, caught)["indexPartitionInfos"][0]["indexUptoInstant"] == mm.T0


def test_mdt_file_groups_and_key_mapping():
    assert P.file_group_ids(P.FILES) == ("files-0000-0",)
    assert P.file_group_ids(P.RECORD_INDEX, 3) == ("record-index-0000-0", "record-index-0001-0", "record-index-0002-0")
    assert len(P.file_group_ids(P.COLUMN_STATS)) == 2 and P.file_group_ids(P.BLOOM_FILTERS)[-1] == "bloom-filters-0003-0"
    with pytest.raises(ValueError):
        P.file_group_ids(P.FILES, 0)
    # Java: "k1".hashCode() == 107 * 31 + 49 == 3366 -> 6; "polygenelubricants".hashCode() == Integer.MIN_VALUE,
    # Math.abs keeps it negative, MIN_VALUE % 10 == -8, Math.abs(-8) == 8; "Aa" and "BB" collide (2112)
    assert P.file_group_index("k1", 10) == 6
    assert P.file_group_index("", 7) == 0
    assert P.file_group_index("polygenelubricants", 10) == 8
    assert P.file_group_index("Aa", 1000) == P.file_group_index("BB", 1000) == 112
    assert P.file_group_index("\U0001F600", 100_000) == (0xD83D * 31 + 0xDE00) % 100_000
    assert all(0 <= P.file_group_index(f"key-{i}", 10) < 10 for i in range(200))
