"""Focused tests for model/concurrency/settings.py (each refusal's rule and exact sentence) and
model/concurrency/oracle.py (what a read at a time must return, the read times the retention promises, the
oracle's verdicts and their text), written against the mutants `make mutate` leaves in model/concurrency."""

from __future__ import annotations

from dataclasses import replace

import pytest

from model.concurrency import machine as M
from model.concurrency import oracle as O
from model.concurrency.settings import Settings, SettingsError, validate
from model.concurrency.state import MachineConfig
from model.invariants import Verdict

T = "2025010100000000"
T0, T0_DONE = "20241231235959990", "20241231235959995"


@pytest.mark.parametrize("kw, rule, detail", [
    (dict(mode="mvcc"), "settings.mode", "'mvcc' is not one of single_writer, occ, nbcc"),
    (dict(table_type="x"), "settings.table_type", "'x' is not one of cow, mor"),
    (dict(table_version=7), "settings.table_version", "7 is not one of 6, 8"),
    (dict(index="bloom"), "settings.index", "'bloom' is not one of bucket, simple"),
    (dict(failed_writes="x"), "settings.failed_writes", "'x' is not one of eager, lazy"),
    (dict(conflict_strategy="x"), "settings.conflict_strategy", "'x' is not one of simple, prefer-writer"),
    (dict(compaction_scheduling="2.x"), "settings.compaction_scheduling", "'2.x' is not one of 0.x, 1.x"),
    (dict(lock_provider=""), "settings.lock_provider", "'' is not a lock provider class name (or None)"),
    (dict(lock_provider=3), "settings.lock_provider", "3 is not a lock provider class name (or None)"),
    (dict(mode="nbcc", table_type="cow"), "settings.mode",
     "Non-blocking concurrency control requires the MOR table with simple bucket index (table_type=cow, "
     "index=bucket; HoodieWriteConfig validation)"),
    (dict(mode="nbcc", index="simple"), "settings.mode",
     "Non-blocking concurrency control requires the MOR table with simple bucket index (table_type=mor, "
     "index=simple; HoodieWriteConfig validation)"),
    (dict(mode="nbcc", table_version=6, compaction_scheduling="0.x"), "settings.mode",
     "Non-blocking concurrency control needs table version 8 or above (completion-time slicing, RFC-66); "
     "table_version=6"),
    (dict(mode="occ", failed_writes="eager"), "settings.failed_writes",
     "occ needs the LAZY failed-writes policy: EAGER rolls back every pending write at a writer's start, other "
     "writers' inflight writes included (HoodieWriteConfig#autoAdjustConfigsForConcurrencyMode sets LAZY; RFC-66)"),
    (dict(mode="nbcc", lock_provider=None), "settings.lock_provider",
     "nbcc needs hoodie.write.lock.provider: the conflict check and the commit (completion time + completed file) "
     "must be one lock section (TransactionManager#beginTransaction, RFC-66 'Assumption On Locks')"),
    (dict(table_version=6), "settings.compaction_scheduling",
     "1.x (decoupled) compaction scheduling needs table version 8: with instant-time slicing (tv6) an older "
     "inflight write appends to the slice the plan compacts (ScheduleCompactionActionExecutor 0.x guard)"),
])
def test_validate_refuses_with_the_rule_and_the_exact_sentence(kw, rule, detail):
    with pytest.raises(SettingsError) as e:
        validate(Settings(**kw))
    assert (e.value.rule, e.value.detail) == (rule, detail)


@pytest.mark.parametrize("kw", [
    dict(), dict(mode="single_writer", failed_writes="eager", lock_provider=None),
    dict(mode="single_writer", table_version=6, compaction_scheduling="0.x", lock_provider=None),
    dict(mode="nbcc"), dict(mode="occ", table_type="cow", index="simple", conflict_strategy="prefer-writer"),
    dict(mode="occ", table_version=6, compaction_scheduling="0.x"), dict(lock_provider="ZookeeperBasedLockProvider"),
])
def test_validate_returns_what_it_accepts(kw):
    s = Settings(**kw)
    assert validate(s) is s


def test_settings_multi_writer_and_dict():
    assert [Settings(mode=m).multi_writer for m in ("single_writer", "occ", "nbcc")] == [False, True, True]
    assert Settings().to_dict() == {"mode": "occ", "table_type": "mor", "table_version": 8, "index": "bucket",
                                    "failed_writes": "lazy", "lock_provider": "InProcessLockProvider",
                                    "conflict_strategy": "simple", "compaction_scheduling": "1.x"}


# ----------------------------------------------------------------------------------------- the oracle
def _committed(tv=8):
    """k0 written by w1 at T2 (completed T5) and by w2 at T1 (completed T6): the greater ordering (T2) wins."""
    extra = dict(table_version=6, compaction_scheduling="0.x", mode="single_writer", lock_provider=None) if tv == 6 \
        else {}
    cfg = MachineConfig(Settings(**extra), writers=2, keys=2)
    s = M.initial_state(cfg)
    s = replace(s, committed=((f"{T}2", f"{T}5", "w1", (("k0", "w1.0"),)), (f"{T}1", f"{T}6", "w2", (("k0", "w2.0"),
                                                                                                   ("k1", "w2.0")))))
    return cfg, s


def test_history_and_expected_reads_by_completion_time_on_tv8():
    cfg, s = _committed(8)
    assert O.history(cfg, s) == [(T0, T0_DONE, "k0", "v0"), (T0, T0_DONE, "k1", "v0"), (f"{T}2", f"{T}5", "k0", "w1.0"),
                                 (f"{T}1", f"{T}6", "k0", "w2.0"), (f"{T}1", f"{T}6", "k1", "w2.0")]
    assert O.expected(cfg, s) == {"k0": "w1.0", "k1": "w2.0"}
    assert O.expected(cfg, s, f"{T}5") == {"k0": "w1.0", "k1": "v0"}       # completed at the time: visible
    assert O.expected(cfg, s, f"{T}4") == {"k0": "v0", "k1": "v0"}
    assert O.expected(cfg, s, T0_DONE) == {"k0": "v0", "k1": "v0"}
    assert O.expected(cfg, s, T0) == {}
    assert O.history(replace(cfg, preloaded=False), s)[0] == (f"{T}2", f"{T}5", "k0", "w1.0")


def test_expected_reads_by_requested_time_on_tv6():
    cfg, s = _committed(6)
    assert O.expected(cfg, s, f"{T}1") == {"k0": "w2.0", "k1": "w2.0"}
    assert O.expected(cfg, s, f"{T}2") == {"k0": "w1.0", "k1": "w2.0"}
    assert O.expected(cfg, s, T0) == {"k0": "v0", "k1": "v0"}


def test_expected_a_tie_on_ordering_goes_to_the_later_listed_write():
    cfg, s = _committed(8)
    s = replace(s, committed=((f"{T}2", f"{T}5", "w1", (("k0", "a"),)), (f"{T}2", f"{T}6", "w2", (("k0", "b"),))))
    assert O.expected(cfg, s)["k0"] == "b"


def test_diff_names_each_key_that_differs():
    assert O._diff({"k0": "a", "k1": "b"}, {"k0": "a", "k1": "c", "k2": "d"}) == (
        "k1: read c, committed b; k2: read d, committed nothing")
    assert O._diff({"k3": "x"}, {}) == "k3: read nothing, committed x"
    assert O._diff({"k0": "a"}, {"k0": "a"}) == ""


def test_as_of_times_follow_the_retention():
    cfg = MachineConfig(Settings(mode="occ"), writers=2, keys=2)
    s = M.run(cfg, [("w1", "generate"), ("w1", "publish"), ("w1", "write"), ("w1", "acquire"), ("w1", "check"),
                    ("w1", "complete")])[-1]
    assert O.as_of_times(cfg, s) == [T0_DONE, f"{T}1"]
    six = MachineConfig(Settings(mode="single_writer", table_version=6, compaction_scheduling="0.x",
                                 lock_provider=None), writers=1, keys=1)
    s6 = M.run(six, [("w1", "generate"), ("w1", "publish"), ("w1", "write"), ("w1", "acquire"), ("w1", "check"),
                     ("w1", "complete")])[-1]
    assert O.as_of_times(six, s6) == [T0, f"{T}0"]
    # a clean that deleted nothing changes nothing; KEEP_LATEST_COMMITS keeps times from its earliest commit on
    assert O.as_of_times(cfg, replace(s, cleans=(("KEEP_LATEST_FILE_VERSIONS", None, (), ()),))) == [T0_DONE, f"{T}1"]
    kept = replace(s, cleans=(("KEEP_LATEST_COMMITS", f"{T}0", ("f",), ()),))
    assert O.as_of_times(cfg, kept) == [f"{T}1"]
    later = replace(s, cleans=(("KEEP_LATEST_COMMITS", T0, ("f",), ()), ("KEEP_LATEST_COMMITS", f"{T}0", ("g",), ())))
    assert O.as_of_times(cfg, later) == [f"{T}1"]
    # KEEP_LATEST_FILE_VERSIONS promises no time travel, a savepoint always
    versions = replace(s, cleans=(("KEEP_LATEST_FILE_VERSIONS", None, ("f",), ()),), savepoints=((T0, "X", ()),))
    assert O.as_of_times(cfg, versions) == ["X"]
    no_floor = replace(s, cleans=(("KEEP_LATEST_COMMITS", None, ("f",), ()),))
    assert O.as_of_times(cfg, no_floor) == []


def test_check_holds_on_a_correct_run_and_names_a_lost_value():
    cfg = MachineConfig(Settings(mode="occ"), writers=2, keys=2)
    s = M.run(cfg, [("w1", "generate"), ("w1", "publish"), ("w1", "write"), ("w1", "acquire"), ("w1", "check"),
                    ("w1", "complete")])[-1]
    names = ["oracle.snapshot", "oracle.as-of", "oracle.incremental", "oracle.no-duplicate-key"]
    assert O.check(cfg, s) == [Verdict(n, True, "", ()) for n in names]
    lost = replace(s, files=tuple((f, r) for f, r in s.files if not f.name.startswith(".")))   # w1's log gone
    v = O.check(cfg, lost)
    assert v[0] == Verdict("oracle.snapshot", False, "snapshot: k0: read v0, committed w1.0", ())
    assert v[1] == Verdict("oracle.as-of", False, f"as-of {T}1: k0: read v0, committed w1.0", ())
    assert v[2] == Verdict("oracle.incremental", False,
                           f"returned but not committed []; committed but not returned [('k0', 'w1.0', '{T}0')]", ())
    assert v[3] == Verdict("oracle.no-duplicate-key", True, "", ())


def test_check_names_a_key_returned_by_two_file_groups():
    from model.filenames import BaseFile

    cfg = MachineConfig(Settings(mode="occ"), writers=2, keys=2)
    s = M.run(cfg, [(w, a) for w in ("w1", "w2") for a in ("generate", "publish", "write", "acquire", "check",
                                                             "complete")])[-1]
    twin = BaseFile("b9", "0-0-1", T0, "parquet", "p")
    dup = replace(s, files=s.files + ((twin, (("k0", "v0", T0, T0),)),))
    v = O.check(cfg, dup)
    # four reads return k0 twice (the snapshot and three as-of times): the detail quotes the first, involved the
    # next two
    assert O.as_of_times(cfg, dup) == [T0_DONE, f"{T}1", f"{T}3"]
    assert v[3] == Verdict("oracle.no-duplicate-key", False, "snapshot: k0 in b0 and b9",
                           (f"as-of {T0_DONE}: k0 in b0 and b9", f"as-of {T}1: k0 in b0 and b9"))
    assert v[0].holds and v[1].holds


def test_variant_config_splits_overrides_into_settings_and_bounds():
    from model.concurrency.variants import VARIANTS

    v = VARIANTS["lazy-crash"]
    cfg = v.config(conflict_strategy="prefer-writer", writers=3, keys=3)
    assert cfg == MachineConfig(Settings(mode="occ", conflict_strategy="prefer-writer"), writers=3, crashes=1, cleans=1,
                                keys=3)
    assert v.config() == MachineConfig(Settings(mode="occ"), writers=2, crashes=1, cleans=1)
    assert v.bounds == {"writers": 2, "crashes": 1, "cleans": 1} and v.settings == {"mode": "occ"}  # not changed
    naive = VARIANTS["naive-overwrite"]
    assert naive.fixed() == naive.config(generator="truetime") and naive.fixed().generator == "truetime"
    assert naive.config().generator == "naive"
