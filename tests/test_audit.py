"""``hoodie-lab audit`` and the I1-I9 checks of ``model/invariants/timeline.py``.

Every check is shown able to fail: skeleton tables (written by the model, then edited the way a
broken writer would leave them) and stub views make each invariant report a violation that names
the instants or files involved, and the CLI exits 1. Runtime: about 3 s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lakeio.audit import audit_table
from hoodie_lab.cli import main
from hoodie_lab.commands.demo import run_skeleton_demo
from lakeio.ondisk.skeleton import SkeletonPlans, write_skeleton
from model import filenames as fn
from model.instant import Action
from model.invariants import timeline as inv
from model.timeline import Timeline


def T(ms: int) -> str:
    return f"2025010100{ms // 60000:02d}{(ms // 1000) % 60:02d}{ms % 1000:03d}"


def _done(tl, t0, action, t1):
    tl.create(t0, action)
    if action is not Action.SAVEPOINT:
        tl.transition_to_inflight(t0, action)
    tl.complete(t0, action, t1)


def _healthy(version=9):
    tl = Timeline(version)
    _done(tl, T(100), Action.DELTACOMMIT, T(150))
    _done(tl, T(200), Action.DELTACOMMIT, T(250))
    tl.create(T(300), Action.COMPACTION)
    _done(tl, T(400), Action.CLEAN, T(450))
    base = [fn.BaseFile("fg1-0", "0-1-1", T(100), partition="p")]
    logs = [fn.LogFile("fg1-0", T(100) if version == 6 else T(200), 1, "0-2-1", partition="p")]
    return tl, base, logs


def _verdict(result, name):
    found = [v for v in result.verdicts if v.invariant == name]
    assert found, [v.invariant for v in result.verdicts]
    return found[0]


# ------------------------------------------------------------------------------ healthy tables
@pytest.mark.parametrize("version", [6, 8, 9])
def test_healthy_skeleton_audits_clean(tmp_path, capsys, version):
    tl, base, logs = _healthy(version)
    out = write_skeleton(tmp_path / "t", tl, base, logs)
    result = audit_table(out)
    assert result.ok, [str(v) for v in result.verdicts if not v.holds]
    names = {v.invariant for v in result.verdicts}
    assert ("I2.requested-before-completion" in names) == (version != 6)
    assert ("I9.compaction-plan" in names) == (version != 6)
    assert main(["audit", str(out)]) == 0
    text = capsys.readouterr().out
    assert "timeline" in text and "latest file slices" in text and "invariants hold" in text


def test_json_output_is_one_document(tmp_path, capsys):
    tl, base, logs = _healthy()
    out = write_skeleton(tmp_path / "t", tl, base, logs)
    assert main(["audit", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["table"]["version"] == 9 and doc["rule"] == "completion-time"
    assert [r["requested"] for r in doc["timeline"]] == [T(100), T(200), T(300), T(400)]
    assert doc["timeline"][0]["duration_ms"] == 50 and doc["timeline"][2]["state"] == "requested"
    assert {r["file_id"] for r in doc["latest_file_slices"]} == {"fg1-0"}
    assert all(v["holds"] for v in doc["invariants"])


def test_as_of_and_rule_options(tmp_path, capsys):
    tl, base, logs = _healthy()
    out = write_skeleton(tmp_path / "t", tl, base, logs)
    code = main(["audit", str(out), "--json", "--as-of", T(150), "--rule", "instant-time"])
    doc = json.loads(capsys.readouterr().out)
    # tv9 log names carry the deltacommit's own time, so the 0.x rule strands the committed log of
    # 200 in its own slice after the base: the snapshot-completeness invariant says so.
    failed = [v["invariant"] for v in doc["invariants"] if not v["holds"]]
    assert (code, failed) == (1, ["I8.snapshot-completeness"]), doc["invariants"]
    assert doc["as_of"] == T(150) and doc["rule"] == "instant-time"
    (s,) = doc["latest_file_slices"]
    assert s["base_file"] == base[0].name and s["log_files"] == []  # the log of 200 is not there yet


# ------------------------------------------------------------------------------ violations on disk
def _tdir(out: Path, version: int) -> Path:
    return out / ".hoodie" if version == 6 else out / ".hoodie" / "timeline"


def test_I2_completion_before_requested_is_reported(tmp_path, capsys):
    tl, base, logs = _healthy(9)
    out = write_skeleton(tmp_path / "t", tl, base, logs)
    td = _tdir(out, 9)
    (td / f"{T(200)}_{T(250)}.deltacommit").rename(td / f"{T(200)}_{T(190)}.deltacommit")
    result = audit_table(out)
    v = _verdict(result, "I2.requested-before-completion")
    assert not v.holds and any(T(200) in x for x in v.involved)
    assert main(["audit", str(out)]) == 1
    assert "I2.requested-before-completion" in capsys.readouterr().out


def test_I1_shared_requested_time_is_reported(tmp_path):
    tl, base, logs = _healthy(6)
    out = write_skeleton(tmp_path / "t", tl, base, logs)
    (_tdir(out, 6) / f"{T(200)}.clean.requested").write_bytes(b"")
    v = _verdict(audit_table(out), "I1.unique")
    assert not v.holds and T(200) in v.involved


def test_I3_inflight_without_requested_is_reported(tmp_path):
    tl, base, logs = _healthy(9)
    tl.create(T(500), Action.DELTACOMMIT)
    tl.transition_to_inflight(T(500), Action.DELTACOMMIT)
    out = write_skeleton(tmp_path / "t", tl, base, logs)
    (_tdir(out, 9) / f"{T(500)}.deltacommit.requested").unlink()
    v = _verdict(audit_table(out), "I3.legal-states")
    assert not v.holds and f"{T(500)}.deltacommit" in v.detail


def test_I4_compaction_completed_as_deltacommit_is_reported(tmp_path):
    tl, base, logs = _healthy(9)
    out = write_skeleton(tmp_path / "t", tl, base, logs)
    (_tdir(out, 9) / f"{T(300)}.compaction.inflight").write_bytes(b"")
    (_tdir(out, 9) / f"{T(300)}_{T(350)}.deltacommit").write_bytes(b"")
    v = _verdict(audit_table(out), "I4.completed-action")
    assert not v.holds and "completed as deltacommit, not commit" in v.detail


def test_I5_write_during_pending_restore_is_reported(tmp_path):
    tl, base, logs = _healthy(9)
    tl.create(T(500), Action.RESTORE)
    tl.create(T(600), Action.DELTACOMMIT, allow_during_restore=True)  # what I5 forbids
    out = write_skeleton(tmp_path / "t", tl, base, logs)
    v = _verdict(audit_table(out), "I5.no-write-during-restore")
    assert not v.holds and f"{T(600)}.deltacommit" in v.detail and T(500) in v.detail


def test_I9_plan_with_log_completed_after_it_is_reported(tmp_path):
    tl, base, logs = _healthy(9)
    op = {"fileId": "fg1-0", "partitionPath": "p", "baseInstantTime": T(100), "dataFilePath": base[0].name,
          "deltaFilePaths": [logs[0].name, f".fg1-0_{T(500)}.log.1_0-9-9"]}
    _done(tl, T(500), Action.DELTACOMMIT, T(550))  # completes after the plan at 300
    out = write_skeleton(tmp_path / "t", tl, base, logs, plans=SkeletonPlans(compactions={T(300): [op]}))
    v = _verdict(audit_table(out), "I9.compaction-plan")
    assert not v.holds and f".fg1-0_{T(500)}.log.1_0-9-9" in v.detail and T(550) in v.detail


# ------------------------------------------------------------------------------ view-based checks on stubs
@dataclass
class _Slice:
    partition: str
    file_id: str
    base_instant: str
    base_file: fn.BaseFile | None
    log_files: list = field(default_factory=list)


@dataclass
class _Group:
    slices: list


class _StubView:
    def __init__(self, slices, groups=None):
        self._slices = slices
        self._groups = groups if groups is not None else [_Group([s]) for s in slices]

    def latest_file_slices(self):
        return self._slices

    def file_groups(self):
        return self._groups


def test_I8_uncommitted_replaced_and_pending_clustering_files_are_reported():
    tl, base, logs = _healthy(9)
    tl.create(T(500), Action.DELTACOMMIT)
    pending_base = fn.BaseFile("fg2-0", "0-5-1", T(500), partition="p")
    pending_log = fn.LogFile("fg1-0", T(500), 1, "0-5-2", partition="p")
    view = _StubView([_Slice("p", "fg1-0", T(100), base[0], [pending_log]),
                      _Slice("p", "fg2-0", T(500), pending_base)])
    v = inv.check_reader_visibility(view, tl, replaced={("p", "fg1-0"): T(900)},
                                    pending_clustering_instants=[T(500)])
    assert not v.holds
    assert {pending_base.path, pending_log.path, "p/fg1-0"} <= set(v.involved)  # who, not sentences
    assert v.detail.startswith("4 file(s)") and "replaced by" in v.detail
    clustering = inv.check_reader_visibility(_StubView([_Slice("p", "fg2-0", T(500), pending_base)]), tl,
                                             pending_clustering_instants=[T(500)])
    assert not clustering.holds and "pending clustering" in clustering.detail
    assert clustering.involved == (pending_base.path,)
    ok = inv.check_reader_visibility(_StubView([_Slice("p", "fg1-0", T(100), base[0], list(logs))]), tl)
    assert ok.holds


def test_I6_I7_file_in_no_slice_or_two_slices_or_wrong_slice_is_reported():
    tl, base, logs = _healthy(9)
    s1 = _Slice("p", "fg1-0", T(100), base[0], [])
    v = inv.check_files_in_one_slice(_StubView([s1]), base, logs, rule="completion-time")
    assert not v.holds and v.invariant == "I6.slice-by-completion-time" and "in 0 slices" in v.detail
    s2 = _Slice("p", "fg1-0", T(100), base[0], list(logs))
    v = inv.check_files_in_one_slice(_StubView([s2], [_Group([s2, s2])]), base, logs, rule="completion-time")
    assert not v.holds and "in 2 slices" in v.detail
    wrong = fn.LogFile("fg1-0", T(50), 1, "0-2-1", partition="p")  # tv6: names base instant 50
    s3 = _Slice("p", "fg1-0", T(100), base[0], [wrong])
    v = inv.check_files_in_one_slice(_StubView([s3]), base, [wrong], rule="instant-time")
    assert not v.holds and v.invariant == "I7.slice-by-instant-time" and "sits in slice" in v.detail
    assert inv.check_files_in_one_slice(_StubView([s2]), base, logs, rule="completion-time").holds


# ------------------------------------------------------------------------------ demo
def test_demo_shows_the_rules_differ(tmp_path):
    res = run_skeleton_demo(tmp_path)
    assert set(res.results) == {"completion-time", "instant-time"}
    assert res.results["completion-time"].ok
    assert any("fg1-0" in d for d in res.differences), res.differences
    assert (res.table_path / ".hoodie" / "timeline").is_dir()


# ------------------------------------------------------------------------------ I8.snapshot-files-exist
# issue #21 item 3: committed data deleted from a real table was "all invariants hold", exit 0.
V8 = "v8_trips_8i3u1d"
V8_BASE = "city=sao_paulo/8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_2-1112-3192_20251220210129235.parquet"
V8_LOG = "city=sao_paulo/.8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_20251220210130911.log.1_0-1139-3316"
V8_OLD = "city=chennai/6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_2-986-2794_20251220210108078.parquet"  # compacted
V6 = "v6_trips_8i1u"
V6_LOG = "city=san_francisco/.d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-26-85"


def _table(tmp_path, stem):
    from fixtures_util import copy_table, fixture_zips

    found = [z for z in fixture_zips() if z.stem == stem]
    if not found:
        pytest.skip(f"fixture {stem}.zip not found")
    return copy_table(found[0], tmp_path / stem)


def _remove(base: Path, rel: str) -> None:
    import shutil

    p = base / rel
    shutil.rmtree(p) if p.is_dir() else p.unlink()


@pytest.mark.parametrize("stem,gone,missing", [
    (V8, [V8_BASE], [V8_BASE]),                                            # a committed base file
    (V8, [V8_LOG], [V8_LOG]),                                              # a committed log file (tv8)
    (V6, [V6_LOG], [V6_LOG]),                                              # a committed log file (tv6)
    (V8, ["city=chennai"], ["city=chennai/6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_0-1112-3190_20251220210129235.parquet"]),
], ids=["v8-base", "v8-log", "v6-log", "v8-partition-folder"])
def test_deleted_committed_data_is_a_violation_naming_the_files(fixtures_dir, tmp_path, capsys, stem, gone, missing):
    base = _table(tmp_path, stem)
    assert audit_table(base).ok
    for rel in gone:
        _remove(base, rel)
    result = audit_table(base)
    v = _verdict(result, "I8.snapshot-files-exist")
    # tv8 fixtures have a metadata table: it still lists the deleted files and their keys (MDT.* say so too)
    assert not v.holds and [x for x in result.verdicts if not x.holds and not x.invariant.startswith("MDT.")] == [v]
    assert set(missing) <= set(v.involved) and all(m in v.detail for m in missing[:3]), v
    assert main(["audit", str(base)]) == 1
    out = capsys.readouterr().out.replace("\n", "")
    assert "I8.snapshot-files-exist" in out and "VIOLATED" in out
    assert main(["audit", str(base), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    (bad,) = [x for x in doc["invariants"] if not x["holds"] and not x["invariant"].startswith("MDT.")]
    assert bad["invariant"] == "I8.snapshot-files-exist" and set(missing) <= set(bad["involved"])


def test_a_file_of_an_older_slice_may_be_cleaned(fixtures_dir, tmp_path):
    """The cleaner deletes files of older slices (here the base file that compaction 20251220210129235
    rewrote): that is not missing data."""
    base = _table(tmp_path, V8)
    _remove(base, V8_OLD)
    result = audit_table(base)
    assert result.ok, [str(v) for v in result.verdicts if not v.holds]
    assert _verdict(result, "I8.snapshot-files-exist").holds


def test_a_broken_check_that_trusts_the_listing_is_caught(fixtures_dir, tmp_path, monkeypatch):
    """The deliberately broken variant: check the snapshot of the files *on disk* (what the audit did
    before) instead of the files commit metadata names. It cannot see deleted data; the test above
    (its assertion, replayed here) catches it."""
    import lakeio.audit as audit_mod

    real = inv.check_snapshot_files_exist
    seen = {}

    def broken_table_verdicts(tl, view, base_files, log_files, **kw):
        kw["named_view"] = view  # the listing's own view: every file it names is present by construction
        seen["called"] = True
        return inv.table_verdicts(tl, view, base_files, log_files, **kw)

    base = _table(tmp_path, V8)
    _remove(base, V8_BASE)
    assert not _verdict(audit_table(base), "I8.snapshot-files-exist").holds  # the real check
    monkeypatch.setattr(audit_mod, "table_verdicts", broken_table_verdicts)
    broken = audit_table(base)
    # the broken one misses it (the MDT check, which reads the metadata table's listing, still sees it)
    assert seen and all(v.holds for v in broken.verdicts if not v.invariant.startswith("MDT."))
    assert _verdict(broken, "I8.snapshot-files-exist").holds
    with pytest.raises(AssertionError):  # ... so the suite's assertion fails on it
        v = _verdict(broken, "I8.snapshot-files-exist")
        assert not v.holds and V8_BASE in v.involved
    assert inv.check_snapshot_files_exist is real


def test_snapshot_files_exist_is_a_pure_predicate_over_the_named_view():
    tl, base, logs = _healthy(9)
    view = _StubView([_Slice("p", "fg1-0", T(100), base[0], list(logs))])
    view.latest_merged_file_slices = view.latest_file_slices
    ok = inv.check_snapshot_files_exist(view, [base[0].path, logs[0].path, "p/other.parquet"])
    assert ok.holds and ok.invariant == "I8.snapshot-files-exist"
    v = inv.check_snapshot_files_exist(view, [base[0].path])
    assert not v.holds and v.involved == (logs[0].path,) and "1 file(s) of the latest snapshot missing" in v.detail
    v = inv.check_snapshot_files_exist(view, [])
    assert not v.holds and v.involved == (base[0].path, logs[0].path)


def test_every_real_fixture_snapshot_is_on_disk(fixtures_dir):
    """All 12 real tables: the check runs, holds, and its named snapshot is not empty where data exists."""
    from fixtures_util import extract_table, fixture_zips

    zips = fixture_zips()
    assert len(zips) == 12
    for z in zips:
        result = audit_table(extract_table(z))
        assert result.ok, (z.stem, [str(v) for v in result.verdicts if not v.holds])
        assert _verdict(result, "I8.snapshot-files-exist").holds
        named = result.table.named_view(result.rule).latest_merged_file_slices()
        assert bool(named) == bool(result.table.base_files), z.stem


# ------------------------------------------------------------------------------ I1.time-format: calendar
@pytest.mark.parametrize("t,holds", [
    ("20250101000000000", True), ("20240229235959999", True), ("00000000000000999", True),  # leap day; reserved
    ("99999999999999999", False), ("20251301000000000", False), ("20250101000099000", False),
    ("20250230000000000", False), ("20230229000000000", False), ("20250101240000000", False),
    ("20250101006000000", False), ("00000101000000000", False), ("2025010100000000", False),
])
def test_I1_time_format_rejects_times_out_of_calendar_range(t, holds):
    from model.instant import time_problem
    from model.invariants.times import check_time_format

    v = check_time_format([t])
    assert v.holds is holds and (time_problem(t) is None) is holds, (t, v, time_problem(t))
    if not holds:
        assert v.involved == (t,)


def test_I1_time_format_on_a_timeline_with_february_30():
    """The model timeline takes any 17 digits (its guard is the cheap shape check the engine shares);
    the invariant is what rejects a date that does not exist."""
    tl, _, _ = _healthy(9)
    assert inv.check_time_format(tl).holds
    tl.create("20250230000000000", Action.DELTACOMMIT)
    v = inv.check_time_format(tl)
    assert not v.holds and "20250230000000000" in v.involved
