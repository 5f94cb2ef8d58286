"""Focused tests for surviving mutants outside the MDT (issue #15 item 10): the archival job's guard and the
archival machine's refusal of a job step (``model/archival.py`` ``guard``, ``model/archival_machine.py``), a
process passing its own lock in the archival machine, the LSM data-file name's ``CodecError`` (name and
problem), ``Timeline.load``'s rule ids and texts and ``revert_to_inflight``/``states_present``, TrueTime's
"blocked" refusal, and the as-of slice bound (a slice based exactly at the as-of time is visible)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from model import archival as A
from model import archival_machine as am
from model import lsm
from model.errors import CodecError, RuleViolation, TimelineError
from model.filenames import BaseFile
from model.instant import Action, State
from model.slicing import FileSystemView
from model.timeline import Timeline
from model.truetime import STEP_RULE, TimeGenerator, TimeGeneratorConfig

R, I, C = State.REQUESTED, State.INFLIGHT, State.COMPLETED
T = "2026010100000000"  # + one digit


# ------------------------------------------------------------------------------------ archival
def test_archival_guard_refuses_deleting_a_file_not_on_the_active_timeline():
    s = am.initial_state(am.MachineConfig(initial=1)).history
    present = A.ActiveFile(f"{T}1", Action.COMMIT, C, f"{T}2")
    gone = A.ActiveFile(f"{T}9", Action.COMMIT, R)
    assert present in s.active
    assert A.guard(s, A.DeleteActiveFile(present)) is None
    assert A.guard(s, A.DeleteActiveFile(gone)) == f"{gone} is not on the active timeline"
    with pytest.raises(A.ArchivalStepRefused) as e:
        A.apply(s, A.DeleteActiveFile(gone))
    assert (e.value.kind, e.value.why) == ("delete-active-file", f"{gone} is not on the active timeline")
    after = A.apply(s, A.DeleteActiveFile(present))
    assert after.active == s.active - {present} and after.deleted == (present,)


def test_archival_machine_step_refusal_carries_the_archival_refusal():
    cfg = am.MachineConfig(writers=2, writes=3, initial=3, failures=1)
    s = am.initial_state(cfg)
    gone = A.ActiveFile(f"{T}9", Action.COMMIT, R)
    bad = replace(s, history=replace(s.history, job=(A.DeleteActiveFile(gone),)), lock="a")
    with pytest.raises(am.Refused) as e:
        am.step(cfg, bad, ("a", "step"))
    assert str(e.value) == f"[delete-active-file] {gone} is not on the active timeline"


def test_archival_machine_a_lock_holder_may_go_on():
    cfg = am.MachineConfig(writers=2, writes=3, initial=3, failures=1)
    why = lambda st, a: am.machine.refusal(lambda x: am.step(cfg, st, x), a, am.Refused)  # noqa: E731
    s = am.initial_state(cfg)
    assert am.step(cfg, replace(s, lock="w1"), ("w1", "start")).lock == "w1"
    assert why(replace(s, lock="w2"), ("w1", "start")) == "the table lock is held by w2"
    writing = am.step(cfg, s, ("w1", "start"))
    assert am.step(cfg, replace(writing, lock="w1"), ("w1", "complete")).lock == "w1"
    assert why(replace(writing, lock="a"), ("w1", "complete")) == "the table lock is held by a"
    failed = am.step(cfg, writing, ("w1", "fail"))
    assert am.step(cfg, replace(failed, lock="c"), ("c", "rollback")).lock == "c"
    assert why(replace(failed, lock="w2"), ("c", "rollback")) == "the table lock is held by w2"
    started = am.step(cfg, replace(s, lock="a"), ("a", "archive"))
    assert started.lock == "a" and started.history.job
    assert why(replace(s, lock="w1"), ("a", "archive")) == "the table lock is held by w1"


# ------------------------------------------------------------------------------------ LSM names
@pytest.mark.parametrize("args,name,problem", [
    ((f"{T}2", f"{T}1", 0), f"{T}2_{T}1_0.parquet", "min instant is after max instant"),
    (("x", "1", 0), "x_1_0.parquet", "bounds must be instant times (digits)"),
    (("1", "x", 0), "1_x_0.parquet", "bounds must be instant times (digits)"),
    (("1", "2", 10), "1_2_10.parquet", "the level is one digit (0-9)"),
    (("1", "2", -1), "1_2_-1.parquet", "the level is one digit (0-9)"),
])
def test_lsm_data_file_name_refusals(args, name, problem):
    with pytest.raises(CodecError) as e:
        lsm.data_file_name(*args)
    assert (e.value.name, e.value.problem, str(e.value)) == (name, problem, f"{name}: {problem}")


def test_lsm_data_file_name_edges():
    assert lsm.data_file_name(f"{T}1", f"{T}1", 9) == f"{T}1_{T}1_9.parquet"
    assert lsm.data_file_name(f"{T}1", f"{T}2", 0) == f"{T}1_{T}2_0.parquet"


# ------------------------------------------------------------------------------------ Timeline.load
def test_timeline_load_rules():
    tl = Timeline(8)
    cases = [
        ((f"{T}1", "commit", [], None), "I3.visible-state", f"instant {T}1.commit has no state file"),
        ((f"{T}1", "commit", [R], f"{T}2"), "I2.requested-before-completion",
         f"pending instant {T}1.commit has a completion time"),
        ((f"{T}1", "commit", [R, I], f"{T}2"), "I2.requested-before-completion",
         f"pending instant {T}1.commit has a completion time"),
    ]
    for args, rule, detail in cases:
        with pytest.raises(TimelineError) as e:
            tl.load(*args)
        assert (e.value.rule, e.value.detail) == (rule, detail)
    assert tl.instants() == []  # a refused load records nothing
    assert str(tl.load(f"{T}1", "commit", [R, I], None)) == f"{T}1.commit[inflight]"
    with pytest.raises(TimelineError) as e:
        tl.load(f"{T}1", "commit", [R], None)
    assert (e.value.rule, e.value.detail) == ("I3.create-once", f"instant {T}1.commit loaded twice")
    assert str(tl.load(f"{T}3", "commit", [C], None)) == f"{T}3.commit[completed]"  # layout 1: time unknown
    assert str(tl.load(f"{T}4", "commit", [R, C], f"{T}5")) == f"{T}4->{T}5.commit[completed]"
    assert tl.pending_times(Action.COMMIT) == [f"{T}1"]
    assert tl.states_present(f"{T}9", Action.COMMIT) == frozenset()
    assert tl.states_present(f"{T}1", Action.COMMIT) == {R, I}
    assert tl.states_present(f"{T}4", Action.COMMIT) == {R, C}


def test_timeline_revert_to_inflight_clears_the_completion_time():
    tl = Timeline(8)
    tl.load(f"{T}4", "commit", [R, C], f"{T}5")
    v = tl.revert_to_inflight(f"{T}4", Action.COMMIT)
    assert (v.state, v.completion_time) == (I, None)
    assert tl.get(f"{T}4", Action.COMMIT).completion_time is None
    assert tl.states_present(f"{T}4", Action.COMMIT) == {R, I}
    assert tl.pending_times(Action.COMMIT) == [f"{T}4"]


# ------------------------------------------------------------------------------------ TrueTime
def test_truetime_a_blocked_step_says_so():
    g = TimeGenerator(TimeGeneratorConfig(use_lock=True))
    g.request("w1", 0)
    g.acquire("w1", 0)
    g.request("w2", 0)
    with pytest.raises(RuleViolation) as e:
        g.acquire("w2", 10**6)
    assert (e.value.rule, e.value.detail) == (
        STEP_RULE, "w2: acquire is blocked (the lock is held or others are ahead in the queue)")


# ------------------------------------------------------------------------------------ slicing
def test_as_of_includes_a_slice_based_at_the_as_of_time():
    """``getLatestFileSlicesBeforeOrOn``: base instant ``<= t`` (not ``< t``)."""
    tl = Timeline(8)
    for t, ct in ((f"{T}1", f"{T}2"), (f"{T}3", f"{T}4")):
        tl.create(t, Action.COMMIT)
        tl.transition_to_inflight(t, Action.COMMIT)
        tl.complete(t, Action.COMMIT, ct)
    v = FileSystemView(tl, [BaseFile("fg-0", "0-1-1", f"{T}1", "parquet", "p"),
                            BaseFile("fg-0", "0-1-1", f"{T}3", "parquet", "p")], [])
    assert [s.base_instant for s in v.latest_file_slices_as_of(f"{T}3")] == [f"{T}3"]
    assert [s.base_instant for s in v.latest_file_slices_as_of(f"{T}2")] == [f"{T}1"]
    assert [s.base_instant for s in v.latest_file_slices_as_of(f"{T}1")] == [f"{T}1"]
    assert v.latest_file_slices_as_of(f"{T}0") == []
    # getLatestMergedFileSlicesBeforeOrOn: the same bound
    assert [s.base_instant for s in v.latest_merged_file_slices(f"{T}3")] == [f"{T}3"]
    assert [s.base_instant for s in v.latest_merged_file_slices(f"{T}2")] == [f"{T}1"]
    assert v.latest_merged_file_slices(f"{T}0") == []
    with pytest.raises(ValueError) as e:
        v.as_of_read(f"{T}3", mode="x")
    assert str(e.value) == "unknown as-of mode 'x'; expected 'spec' or 'hudi-rs'"


def test_archival_machine_actions_fairness_and_variants():
    assert am.candidate_actions(am.MachineConfig(crashes=1)) == [
        ("w1", "start"), ("w1", "complete"), ("w2", "start"), ("w2", "complete"), ("w1", "fail"), ("w2", "fail"),
        ("c", "rollback"), ("a", "archive"), ("a", "step"), ("a", "crash")]
    assert am.candidate_actions(am.MachineConfig(writers=1, failures=0)) == [
        ("w1", "start"), ("w1", "complete"), ("a", "archive"), ("a", "step")]
    assert am.FAIRNESS == {"start": "weak", "complete": "weak", "fail": "none", "rollback": "weak", "archive": "weak",
                           "step": "weak", "crash": "none"}
    assert am.fairness(("a", "step")) == "weak" and am.fairness(("a", "step"), frozenset({"step"})) == "none"
    assert am.format_action(("c", "rollback")) == "c rollback"
    cfg = am.MachineConfig(crashes=1)
    s = am.initial_state(cfg)
    assert am.describe(s) == "[w1=idle, w2=idle] 1 completed commits active, job 0 steps left, lock=None"
    assert am.describe(am.step(cfg, s, ("w1", "start"))) == (
        "[w1=writing@0003, w2=idle] 1 completed commits active, job 0 steps left, lock=None")
    v = am.ARCHIVAL_LIVENESS_VARIANTS
    assert [(x.name, x.overrides, x.unfair, x.breaks) for x in v.values()] == [
        ("hudi", {"crashes": 1}, frozenset(), ()),
        ("no-failed-write-rollback", {}, frozenset({"rollback"}), ("archival-bounded",)),
        ("archiver-stalls", {}, frozenset({"step"}), ("archival-bounded", "archival-finishes"))]
    assert list(v) == [x.name for x in v.values()]
    assert v["hudi"].config(writers=1) == am.MachineConfig(writers=1, crashes=1)
    assert v["hudi"].description == ("TimelineArchiverV2 after every commit, a LAZY cleaner rolling back failed "
                                     "writes, every own step weakly fair; one writer may die, one archiver crash.")
    assert v["no-failed-write-rollback"].description == (
        "The failed write is never rolled back (the cleaner's rollback not fair, e.g. hoodie.clean.automatic=false): "
        "retention (1), the latest commit before the earliest pending write, holds archival back forever and the "
        "active timeline stays over keep.max.")
    assert v["archiver-stalls"].description == (
        "The archiver's run may stop between two storage steps and never go on (its step not fair): the job never "
        "finishes, the lock is never released and the timeline stays over keep.max.")


def test_lsm_file_name_parsing():
    with pytest.raises(CodecError) as e:
        lsm.parse_data_file_name("2_1_0.parquet")
    assert (e.value.name, e.value.problem) == ("2_1_0.parquet", "min instant is after max instant")
    with pytest.raises(CodecError) as e:
        lsm.parse_data_file_name("1_2_10.parquet")
    assert (e.value.name, e.value.problem) == (
        "1_2_10.parquet", "not an LSM timeline data file (<min>_<max>_<level>.parquet, one-digit level)")
    assert lsm.parse_data_file_name("1_1_3.parquet") == lsm.DataFile("1", "1", 3)
    with pytest.raises(CodecError) as e:
        lsm.manifest_name(0)
    assert str(e.value) == "manifest_0: manifest versions start at 1"
    assert lsm.manifest_name(1) == "manifest_1" and lsm.parse_manifest_name("manifest_1") == 1
    with pytest.raises(CodecError) as e:
        lsm.parse_manifest_name("manifest_0")
    assert str(e.value) == "manifest_0: not a manifest file (manifest_<N>, N >= 1)"


def test_lsm_latest_manifest_version_zero_and_none():
    """``_version_`` holding 0 names a manifest that does not exist (manifests start at 1): a read error, not
    an empty timeline; no ``_version_`` and no manifest is the empty one."""
    assert lsm.latest_manifest(lsm.EMPTY) == ()
    with pytest.raises((lsm.LSMReadError, CodecError)):  # (today the CodecError of manifest_name(0))
        lsm.latest_manifest(replace(lsm.EMPTY, version=0))
    s = replace(lsm.EMPTY, manifests=((1, ("a",)), (2, ("a", "b"))))
    assert lsm.latest_manifest(s) == ("a", "b")


def test_lsm_clean_keeps_exactly_retained_plus_compacted_manifests():
    s = replace(lsm.EMPTY, manifests=((1, ("a",)), (2, ("b",)), (3, ("c",))), files=(("z", ()),))
    assert lsm.clean_steps(s, 0, retained=3) == ()  # nothing to clean: not even the unlisted leftover z
    assert lsm.clean_steps(s, 1, retained=2) == ()
    assert lsm.clean_steps(s, 0, retained=2)[0] == lsm.DeleteManifest(1)
