"""The pure rules of :mod:`model.concurrency.rules` and the validation of :mod:`model.concurrency.settings`,
each against the Hudi behaviour its docstring cites."""

from __future__ import annotations

import pytest

from model.concurrency import rules as R
from model.concurrency.settings import (EAGER, NBCC, OCC, SINGLE_WRITER, Settings, SettingsError, validate)

FG0, FG1 = ("p", "b0"), ("p", "b1")


def ws(t, fgs=(FG0,), action=R.DELTACOMMIT, op=R.UPSERT, state=R.INFLIGHT, completion=None, start=None):
    return R.WriteSummary(t, action, op, frozenset(fgs), start=start, state=state, completion=completion)


@pytest.mark.parametrize("overrides, key, words", [
    ({"mode": NBCC, "table_type": "cow"}, "settings.mode", "MOR table with simple bucket index"),
    ({"mode": NBCC, "index": "simple"}, "settings.mode", "MOR table with simple bucket index"),
    ({"mode": NBCC, "table_version": 6, "compaction_scheduling": "0.x"}, "settings.mode", "table version 8"),
    ({"mode": NBCC, "failed_writes": EAGER}, "settings.failed_writes", "LAZY"),
    ({"mode": OCC, "failed_writes": EAGER}, "settings.failed_writes", "LAZY"),
    ({"mode": OCC, "lock_provider": None}, "settings.lock_provider", "hoodie.write.lock.provider"),
    ({"mode": NBCC, "lock_provider": None}, "settings.lock_provider", "hoodie.write.lock.provider"),
    ({"table_version": 6}, "settings.compaction_scheduling", "table version 8"),
    ({"mode": "mvcc"}, "settings.mode", "not one of"),
    ({"index": "bloom"}, "settings.index", "not one of"),
    ({"lock_provider": ""}, "settings.lock_provider", "not a lock provider"),
])
def test_validate_refuses_with_one_line_naming_the_setting(overrides, key, words):
    with pytest.raises(SettingsError) as exc:
        validate(Settings(**overrides))
    assert exc.value.rule == key and words in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("overrides", [
    {}, {"mode": NBCC}, {"mode": SINGLE_WRITER, "lock_provider": None, "failed_writes": EAGER},
    {"mode": SINGLE_WRITER, "table_version": 6, "compaction_scheduling": "0.x", "table_type": "cow"},
    {"mode": OCC, "index": "simple", "table_type": "cow", "conflict_strategy": "prefer-writer"},
])
def test_validate_accepts_hudis_supported_combinations(overrides):
    s = Settings(**overrides)
    assert validate(s) is s


def test_candidates_simple_strategy():
    mine = ws("010")
    before = ws("005", state=R.COMPLETED, completion="008")          # completed before mine started
    after = ws("006", state=R.COMPLETED, completion="012")           # completed after: candidate
    pend_old = ws("004", action=R.COMPACTION, op=R.COMPACT)         # pending compaction before mine
    pend_new = ws("011", action=R.COMPACTION, op=R.COMPACT)         # pending compaction after mine: candidate
    writer = ws("009")                                              # another inflight write: not a candidate
    got = R.candidate_instants([before, after, pend_old, pend_new, writer, mine], mine)
    assert got == [after, pend_new]


def test_candidates_prefer_writer_strategy():
    mine = ws("010")
    pend_new = ws("011", action=R.COMPACTION, op=R.COMPACT)
    after = ws("006", state=R.COMPLETED, completion="012")
    writer = ws("009")
    # an ingestion write: the pending table service is not a candidate (the writer wins)
    assert R.candidate_instants([pend_new, after, writer], mine, "prefer-writer") == [after]
    # a table service: inflight ingestion writes are candidates (it yields)
    svc = ws("011", action=R.CLUSTERING, op=R.CLUSTER)
    assert R.candidate_instants([after, writer, mine], svc, "prefer-writer") == [after, writer, mine]
    with pytest.raises(ValueError):
        R.candidate_instants([], mine, "bogus")


def test_conflict_by_mode_and_overlap():
    occ, nbcc, single = Settings(), Settings(mode=NBCC), Settings(mode=SINGLE_WRITER)
    mine = ws("010")
    other = ws("009", state=R.COMPLETED, completion="012")
    assert "overlapping writes" in R.conflict(occ, mine, other)
    assert R.conflict(occ, mine, ws("009", fgs=(FG1,), state=R.COMPLETED, completion="012")) is None
    assert R.conflict(nbcc, mine, other) is None                     # NBCC: log writers never conflict
    assert R.conflict(single, mine, other) is None
    bulk = ws("010", op=R.BULK_INSERT)
    assert R.conflict(nbcc, bulk, ws("009", action=R.COMMIT, state=R.COMPLETED, completion="012")) is not None
    # a compaction planned before mine is resolved; one planned after mine conflicts (OCC), not under NBCC
    assert R.conflict(occ, mine, ws("008", action=R.COMPACTION, op=R.COMPACT)) is None
    assert "compaction 011" in R.conflict(occ, mine, ws("011", action=R.COMPACTION, op=R.COMPACT))
    assert R.conflict(nbcc, mine, ws("011", action=R.COMPACTION, op=R.COMPACT)) is None


def test_resolve_write_conflicts_takes_the_first_candidate():
    occ = Settings()
    mine = ws("010")
    a = ws("006", fgs=(FG1,), state=R.COMPLETED, completion="011")
    b = ws("007", state=R.COMPLETED, completion="012")
    assert "007" in R.resolve_write_conflicts(occ, [a, b, mine], mine)
    assert R.resolve_write_conflicts(occ, [a, mine], mine) is None
    assert R.resolve_write_conflicts(Settings(mode=NBCC), [a, b, mine], mine) is None


def test_may_schedule_compaction():
    s0, s1 = Settings(mode=SINGLE_WRITER, compaction_scheduling="0.x"), Settings()
    pending = [ws("005"), ws("003", action=R.COMPACTION, op=R.COMPACT)]
    assert "005" in R.may_schedule_compaction(s0, pending, "010")
    assert R.may_schedule_compaction(s0, pending, "004") is None           # the write is newer than tc
    assert R.may_schedule_compaction(s0, [ws("005", state=R.COMPLETED, completion="006")], "010") is None
    assert R.may_schedule_compaction(s1, pending, "010") is None


def test_rollback_targets_eager_vs_lazy():
    pending = [ws("005"), ws("006"), ws("007", state=R.COMPLETED, completion="008"),
               ws("004", action=R.COMPACTION, op=R.COMPACT)]
    alive = {"005": True, "006": False}
    assert R.rollback_targets(Settings(mode=SINGLE_WRITER, failed_writes=EAGER), pending, alive, me="009") == [
        "005", "006"]
    assert R.rollback_targets(Settings(), pending, alive, me="009") == ["006"]


def test_index_assignment():
    s_bucket, s_simple = Settings(), Settings(index="simple", mode=OCC)
    assert R.file_group_for(s_bucket, "k3", None, "t1", 2) == "b1" == R.file_group_for(s_bucket, "k3", "x", "t2", 2)
    assert R.file_group_for(s_simple, "k3", None, "t1", 2) == "nt1"
    assert R.file_group_for(s_simple, "k3", "nt0", "t1", 2) == "nt0"


def test_files_to_clean_respects_savepoints_and_plans():
    slices = {"b0": [("t5", ("B5",)), ("t3", ("B3", "L3")), ("t1", ("B1",))]}
    out, earliest = R.files_to_clean(R.KEEP_LATEST_FILE_VERSIONS, 1, slices, ["t1", "t3", "t5"])
    assert sorted(out) == ["B1", "B3", "L3"] and earliest is None
    out, _ = R.files_to_clean(R.KEEP_LATEST_FILE_VERSIONS, 1, slices, ["t1", "t3", "t5"], savepointed={"B3"},
                              pending_plan_files={"L3"})
    assert out == ["B1"]
    out, earliest = R.files_to_clean(R.KEEP_LATEST_COMMITS, 1, slices, ["t1", "t3", "t5"])
    assert earliest == "t5" and sorted(out) == ["B1"]          # t3's slice is what a query at t5's start reads
    assert R.files_to_clean(R.KEEP_LATEST_COMMITS, 4, slices, ["t1"]) == ([], None)
