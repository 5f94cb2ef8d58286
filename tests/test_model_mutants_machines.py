"""Focused tests for the table-level machines' descriptions, action names and the concurrency machine's crash
fault, which `make mutate` showed unchecked by the fast tests (the explorers print these strings in every
counterexample; the crash fault's bookkeeping decides what a rollback later finds)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from model import archival_machine as am
from model.concurrency import machine as M
from model.concurrency.settings import Settings
from model.concurrency.state import MachineConfig, records_of

CFG = MachineConfig(Settings(mode="occ"), writers=2, compactions=1, crashes=2)
T0_LINE = "20241231235959990->20241231235959995.deltacommit[completed]"
BASE = "b0_0-0-1_20241231235959990.parquet"


def test_concurrency_describe_names_every_process_the_timeline_and_the_files():
    s = M.initial_state(CFG)
    assert M.describe(s) == f"now=0 lock=None [w1=idle#0, w2=idle#0, c=idle] timeline: {T0_LINE}; files: {BASE}"
    s = M.step(CFG, M.step(CFG, s, ("w1", "generate")), ("w1", "publish"))
    s = replace(s, now=5, lock="w2", procs=(("w1", "written", "T1", 1, frozenset()), ("w2", "idle", None, 2, frozenset())),
                comp=("scheduled", "TC", 1), clus=("idle", None, 1), files=s.files + s.files)
    insts = f"{T0_LINE}, 20250101000000000.deltacommit[requested]"
    assert M.describe(s) == (f"now=5 lock=w2 [w1=written@T1#1, w2=idle#2, c=scheduled@TC, k=idle] "
                             f"timeline: {insts}; files: {BASE}, {BASE}")
    # the clustering service is shown once it has an instant or has run; the compactor always
    s = replace(s, clus=("scheduled", "TK", 0), comp=("idle", None, 0))
    assert M.describe(s).startswith("now=5 lock=w2 [w1=written@T1#1, w2=idle#2, c=idle, k=scheduled@TK] ")
    s = replace(s, clus=("idle", None, 0))
    assert ", k=" not in M.describe(s) and M.describe(s).endswith(f"files: {BASE}, {BASE}")
    assert M.describe(replace(s, files=())).endswith("; files: ")


def test_concurrency_action_text_round_trips():
    assert M.format_action(("w1", "generate")) == "w1 generate"
    assert M.parse_action("  w1 generate ") == ("w1", "generate")
    assert M.parse_action("c schedule now") == ("c", "schedule now")
    assert M.parse_action("cl") == ("cl", "")


def test_crash_of_a_writer_that_has_not_published_leaves_no_instant_for_a_rollback():
    s = M.step(CFG, M.initial_state(CFG), ("w1", "generate"))
    assert s.lock == "w1"
    c = M.step(CFG, s, ("w1", "crash"))
    assert c.proc("w1") == ("w1", "idle", None, 1, frozenset())
    assert c.dead == frozenset() and c.lock is None and c.crashes == 1


def test_crash_of_a_published_writer_leaves_its_instant_to_a_rollback_and_counts():
    s = M.step(CFG, M.step(CFG, M.initial_state(CFG), ("w1", "generate")), ("w1", "publish"))
    t = s.proc("w1")[2]
    s = M.step(CFG, s, ("w2", "generate"))
    c = M.step(CFG, s, ("w1", "crash"))
    assert c.proc("w1") == ("w1", "idle", None, 1, frozenset())
    assert c.dead == frozenset({t}) and c.crashes == 1
    assert c.lock == "w2"  # another writer's lock is not released by w1's crash
    c2 = M.step(CFG, c, ("w2", "crash"))
    assert c2.crashes == 2 and c2.lock is None and c2.dead == frozenset({t})  # w2 had not published
    assert M.refusal(CFG, c2, ("w1", "crash")) == "w1 is idle: nothing to crash"
    two = replace(CFG, commits=2)
    s3 = M.step(two, c2, ("w1", "generate"))
    assert M.refusal(two, s3, ("w1", "crash")) == "no crashes left (2)"
    one = replace(CFG, crashes=1)
    s = M.step(one, M.initial_state(one), ("w1", "generate"))
    assert M.refusal(one, s, ("w1", "crash")) is None
    assert M.refusal(one, M.step(one, s, ("w1", "crash")), ("w2", "crash")) == "w2 is idle: nothing to crash"
    s = M.step(one, M.step(one, s, ("w1", "crash")), ("w2", "generate"))
    assert M.refusal(one, s, ("w2", "crash")) == "no crashes left (1)"


def test_machine_config_to_dict_and_records_of():
    d = replace(CFG, flaws=frozenset({"no-0x-guard", "ignore-pending-compaction"}), validated=False).to_dict()
    assert d["settings"] == CFG.settings.to_dict() and isinstance(d["settings"], dict)
    assert d["flaws"] == ["ignore-pending-compaction", "no-0x-guard"]
    assert d["writers"] == 2 and d["crashes"] == 2
    files = {"a": (1, 2)}
    assert records_of(files, "a") == (1, 2)
    assert records_of(files, "b") == ()


def test_archival_describe_and_action_text():
    cfg = am.MachineConfig(writers=2, writes=3, initial=3)
    s = am.initial_state(cfg)
    assert am.describe(s) == "[w1=idle, w2=idle] 3 completed commits active, job 0 steps left, lock=None"
    s = am.step(cfg, s, ("w1", "start"))
    t = s.writers[0][2]
    assert am.describe(s) == (f"[w1=writing@{t[-4:]}, w2=idle] 3 completed commits active, job 0 steps left, "
                              f"lock=None")
    s = am.step(cfg, am.step(cfg, s, ("w1", "complete")), ("a", "archive"))
    assert am.describe(s) == (f"[w1=idle, w2=idle] 4 completed commits active, job {len(s.history.job)} steps "
                              f"left, lock=a")
    assert len(s.history.job) > 0
    assert am.format_action(("w2", "start")) == "w2 start"
    assert am.format_action(("a", "crash")) == "a crash"
