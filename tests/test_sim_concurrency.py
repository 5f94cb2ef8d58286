"""The many-writers simulation (experiment ``concurrency``, :mod:`sim.concurrency`): seeded runs repeat, OCC aborts
rise with the overlap and the writers while NBCC on MOR + bucket index never aborts, the 0.x compaction-scheduling
rule stalls the streaming writer and the 1.x rule does not, the decisions are the spec's (a changed spec rule
changes the outcome), a broken time configuration fails the run with a replay line, and impossible settings
in an experiment file or on the command line exit 2 with one line, nothing run."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from hoodie_lab.cli import main
from lakeio.errors import UserError
from model.concurrency import rules as spec_rules
from sim import concurrency as C
from sim import config as cfg

SMALL = {"kind": "concurrency", "name": "cc",
         "concurrency": {"quick_duration_s": 900, "writers": [1, 8], "overlaps": [0.0, 1.0]},
         "compaction_stall": {"quick_duration_s": 1200}}


def params(**over):
    raw = {**SMALL, "concurrency": {**SMALL["concurrency"], **over}}
    return cfg.from_dict(raw).params


def test_same_seed_same_run_other_seed_other_run():
    p = params()
    a, b = (C.run_writers(p, "occ", 4, 0.5, seed=3, quick=True) for _ in range(2))
    assert a.summary == b.summary and a.latencies_s == b.latencies_s
    c = C.run_writers(p, "occ", 4, 0.5, seed=4, quick=True)
    assert c.latencies_s != a.latencies_s
    s1, s2 = (C.run_stall(p, "0.x", seed=3, quick=True) for _ in range(2))
    assert s1.summary == s2.summary and s1.stall_s == s2.stall_s


def test_occ_aborts_rise_with_overlap_and_writers():
    p = params()
    rate = {o: C.run_writers(p, "occ", 8, o, seed=1, quick=True).summary["abort_rate"] for o in (0.0, 0.1, 0.5, 1.0)}
    assert rate[0.0] == 0.0
    assert 0.0 < rate[0.1] < rate[0.5] < rate[1.0], rate
    by_writers = [C.run_writers(p, "occ", w, 0.5, seed=1, quick=True).summary for w in (1, 2, 8)]
    assert by_writers[0]["aborts"] == 0  # one writer has nobody to conflict with
    assert by_writers[1]["abort_rate"] < by_writers[2]["abort_rate"]
    assert by_writers[2]["wasted_fraction"] > 0.2 and by_writers[2]["abort_reason"].startswith("simple strategy")
    for s in by_writers:
        assert s["invariants"] == "ok"


def test_nbcc_on_mor_bucket_has_no_write_write_aborts():
    p = params()
    occ = C.run_writers(p, "occ", 8, 1.0, seed=2, quick=True).summary
    for o in (0.0, 0.5, 1.0):
        nb = C.run_writers(p, "nbcc", 8, o, seed=2, quick=True).summary
        assert nb["aborts"] == 0 and nb["gave_up"] == 0 and nb["invariants"] == "ok"
    assert nb["commits_per_hour"] > 2 * occ["commits_per_hour"]
    assert nb["latency_p99_s"] < occ["latency_p99_s"]


def test_the_0x_rule_stalls_the_streaming_writer_and_1x_does_not():
    p = params()
    old, new = C.run_stall(p, "0.x", seed=1, quick=True), C.run_stall(p, "1.x", seed=1, quick=True)
    assert old.summary["refusals"] > 0 and old.summary["compactions_scheduled"] > 0
    assert "Earliest write inflight instant time must be later than compaction time" in old.refusals[0]
    # each compaction holds the writer at least while its plan is written (the last may fall after the run's end)
    assert old.summary["stall_total_s"] >= (old.summary["compactions_scheduled"] - 1) * p["compaction_stall"]["plan_s"]
    assert old.summary["stall_max_s"] >= p["compaction_stall"]["plan_s"]
    assert new.summary["refusals"] == 0 and new.summary["stall_total_s"] == 0.0
    assert new.summary["compactions_scheduled"] >= old.summary["compactions_scheduled"]
    assert old.summary["invariants"] == new.summary["invariants"] == "ok"


def test_decisions_are_the_specs_and_a_broken_rule_is_caught(monkeypatch):
    """The simulation restates no rule: changing the spec's rule changes what the simulation does, and the spec's
    process invariants, checked at the end of every run, catch the broken design (with the replay line)."""
    p = params()
    ok = C.run_writers(p, "occ", 8, 1.0, seed=1, quick=True)
    assert ok.summary["aborts"] > 0 and ok.summary["invariants"] == "ok"
    with monkeypatch.context() as m:  # OCC without its conflict check
        m.setattr(spec_rules, "resolve_write_conflicts", lambda settings, view, mine: None)
        r = C.run_writers(p, "occ", 8, 1.0, seed=1, quick=True, replay="REPLAY")
    assert r.summary["aborts"] == 0 and r.summary["invariants"] == "C.occ-serializable violated"
    assert any(f.startswith("C.occ-serializable") and f.endswith("replay: REPLAY") for f in r.failures)
    # NBCC runs the same writes with the same (unpatched) spec: no abort, and C.occ-serializable does not apply
    assert C.run_writers(p, "nbcc", 8, 1.0, seed=1, quick=True).summary["invariants"] == "ok"
    with monkeypatch.context() as m:  # 0.x scheduling without its guard
        m.setattr(spec_rules, "may_schedule_compaction", lambda settings, pending, tc=None: None)
        r = C.run_stall(p, "0.x", seed=1, quick=True, replay="REPLAY")
    assert r.summary["stall_total_s"] == 0.0 and r.summary["invariants"] == "C.compaction-schedule-0x violated"
    with monkeypatch.context() as m:  # a LAZY cleaner that ignores heartbeats
        m.setattr(spec_rules, "rollback_targets",
                  lambda settings, pending, alive, me=None: sorted(w.instant for w in pending))
        r = C.run_writers(p, "occ", 4, 1.0, seed=1, quick=True, replay="REPLAY")
    assert any(f.startswith("C.lazy-rollback") for f in r.failures), r.failures[:3]
    assert r.summary["invariants"] != "ok"


def test_a_broken_time_configuration_fails_the_run_with_a_replay_line():
    """No skew wait and an instant lock hand-off on one clock: two writers take the same millisecond; the
    spec's timeline refuses the second instant (I3.create-once) and I1 fails -- the run says so and how to replay."""
    p = params(max_skew_ms=0, lock_acquire_ms=0, lock_acquire_max_ms=0, commit_hold_ms=0, write_s=0.5,
               writers=[32])
    r = C.run_writers(p, "nbcc", 32, 1.0, seed=1, quick=True, replay="hoodie-lab simulate X --seed 1")
    assert r.summary["invariants"] != "ok"
    assert r.failures and all("replay: hoodie-lab simulate X --seed 1" in f for f in r.failures)
    assert any(f.startswith(("I1.", "[I3.", "[I2.")) for f in r.failures)


def test_cli_replay_line_reruns_the_failing_point(tmp_path):
    exp = tmp_path / "broken.toml"
    exp.write_text('kind = "concurrency"\nname = "broken"\n[concurrency]\nwriters = [16]\noverlaps = [1.0]\n'
                   'modes = ["nbcc"]\nquick_duration_s = 20\nmax_skew_ms = 0\nlock_acquire_ms = 0\n'
                   'lock_acquire_max_ms = 0\ncommit_hold_ms = 0\nwrite_s = 0.5\n[compaction_stall]\nrules = []\n')
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "simulate", str(exp), "--quick", "--seed", "5",
                        "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    failed = sorted(ln for ln in r.stderr.splitlines() if "replay: " in ln)
    replay = failed[0].split("replay: ", 1)[1]
    assert replay.startswith(f"hoodie-lab simulate {exp} --seed 5 --quick") and "concurrency.writers=[16]" in replay
    # the printed command reruns that point: the same violations, bit for bit
    argv = shlex.split(replay)[1:]
    again = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", *argv, "--out", str(tmp_path / "again")],
                           capture_output=True, text=True)
    assert again.returncode == 1, again.stderr
    assert sorted(ln for ln in again.stderr.splitlines() if "replay: " in ln) == failed


def test_cli_quick_run_writes_table_and_plots(tmp_path):
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "simulate", "concurrency", "--quick", "--mode", "nbcc",
                        "--set", "concurrency.writers=[2]", "--set", "concurrency.overlaps=[0.5]",
                        "--set", "compaction_stall.quick_duration_s=600", "--out", str(tmp_path / "o"),
                        "--progress"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "o"
    for name in ("results.csv", "concurrency.png", "compaction-stall.png", "summary.json"):
        assert (out / name).is_file(), name
    assert "runs:" in r.stderr  # progress on stderr
    rows = (out / "results.csv").read_text().splitlines()
    assert len(rows) == 1 + 1 + 2  # header, one writers point, two rules


@pytest.mark.parametrize("table,setting,message", [
    ('table_type = "cow"', "settings.mode", "requires the MOR table with simple bucket index"),
    ('index = "simple"', "settings.mode", "requires the MOR table with simple bucket index"),
    ('lock_provider = "none"', "settings.lock_provider", "needs hoodie.write.lock.provider"),
    ('failed_writes = "eager"', "settings.failed_writes", "LAZY"),
    ('modes = ["single_writer"]\nwriters = [2]', "concurrency.modes", "single_writer runs one writer"),
])
def test_impossible_settings_in_an_experiment_file_exit_2_with_one_line(tmp_path, capsys, table, setting, message):
    bad = tmp_path / "bad.toml"
    bad.write_text(f'kind = "concurrency"\nname = "bad"\n[concurrency]\n{table}\n')
    with pytest.raises(UserError) as e:
        cfg.load(str(bad))
    assert setting in str(e.value) and message in str(e.value) and "\n" not in str(e.value)
    out = tmp_path / "out"
    assert main(["simulate", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and setting in err and str(bad) in err
    assert not out.exists()  # nothing run, nothing written


@pytest.mark.parametrize("args,setting", [
    (["--set", "concurrency.table_type=cow"], "settings.mode"),
    (["--mode", "nbcc", "--set", "concurrency.index=simple"], "settings.mode"),
    (["--mode", "occ", "--set", "concurrency.lock_provider=none"], "settings.lock_provider"),
    (["--set", "compaction_stall.rules=[\"2.x\"]"], "compaction_stall.rules"),
    (["--set", "concurrency.nope=1"], "concurrency.nope"),
    (["--set", "concurrency.writers=[0]"], "concurrency.writers"),
    (["--mode", "blocking"], "--mode"),
])
def test_impossible_cli_arguments_exit_2_with_one_line(tmp_path, capsys, args, setting):
    out = tmp_path / "out"
    assert main(["simulate", "concurrency", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and setting in err, err
    assert not out.exists()


def test_set_is_refused_for_other_experiments_and_concurrency_modes_for_stream(tmp_path, capsys):
    for args in (["history", "--set", "concurrency.writers=[2]"], ["blocking-vs-async", "--mode", "occ"]):
        assert main(["simulate", *args, "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and args[1] in err, err
    assert not (tmp_path / "o").exists()


def test_report_section_embeds_both_plots(tmp_path):
    from hoodie_lab.report import build_report
    from hoodie_lab.report_sections import concurrency_section

    path, sections = build_report(tmp_path, [concurrency_section], quick=True, seed=7, log=lambda _line: None)
    (s,) = sections
    assert s.ok, s.paragraphs[-1][:2000]
    assert s.command == "hoodie-lab simulate concurrency --seed 7 --quick"
    assert sorted(p.name for p in s.figures) == ["concurrency-compaction-stall.png", "concurrency-concurrency.png"]
    html = path.read_text(encoding="utf-8")
    assert html.count("data:image/png;base64,") == 2
    assert "Earliest write inflight instant time must be later than compaction time" in html
