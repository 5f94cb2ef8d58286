"""benchmarks/bench_indexing.py: the throughput over the indexer's window (the benchmark itself runs Spark and a
million-record table: ``make bench``)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_indexing.py"
_spec = importlib.util.spec_from_file_location("bench_indexing", _PATH)
bi = importlib.util.module_from_spec(_spec)
sys.modules["bench_indexing"] = bi
_spec.loader.exec_module(bi)


def test_window_rps_counts_the_share_of_each_gap_inside_the_window():
    gaps = [(0.0, 1.0), (1.0, 3.0), (3.0, 4.0)]  # 100 records per gap: 100, 50, 100 records/s
    # the window [0.5, 3.5]: half of gap 1 (50 records), all of gap 2 (100), half of gap 3 (50) over 3 s
    rps, covered = bi.window_rps(gaps, 100, 0.5, 3.5)
    assert covered == pytest.approx(3.0) and rps == pytest.approx(200 / 3)
    # inside the slow gap only: its rate, not the mean of the gaps that end later
    assert bi.window_rps(gaps, 100, 1.5, 2.5) == (pytest.approx(50.0), pytest.approx(1.0))
    # a window reaching past the last commit counts the covered part only
    rps, covered = bi.window_rps(gaps, 100, 3.5, 10.0)
    assert covered == pytest.approx(0.5) and rps == pytest.approx(100.0)
    # no overlap: nothing measured
    rps, covered = bi.window_rps(gaps, 100, 5.0, 6.0)
    assert covered == 0 and math.isnan(rps)


def test_matched_seconds_sets_the_window_against_the_same_gaps_alone():
    alone = [(0.0, 1.0), (1.0, 1.5), (1.5, 2.0)]  # gaps 1.0, 0.5, 0.5 s
    # the run beside: gap 0 (2 s long) half inside the window, gap 1 (1 s) whole -> alone took 0.5 + 0.5 s
    assert bi.matched_seconds([(0, 1.0, 2.0), (1, 1.0, 1.0)], alone) == pytest.approx(1.0)
    # the same gaps alone as beside: the ratio (alone seconds / covered seconds) is 1
    assert bi.matched_seconds([(2, 0.25, 0.5)], alone) == pytest.approx(0.25)


def test_gaps_by_step_groups_the_gaps_by_what_the_indexer_did_at_their_midpoint():
    beside = [(0, 1), (1, 2), (2, 4), (4, 5), (5, 8), (8, 9)]  # midpoints 0.5, 1.5, 3, 4.5, 6.5, 8.5
    alone = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)]
    steps = {"schedule": 2.5, "build": 4.0, "catch-up": 6.0, "end": 7.0}
    got = bi.gaps_by_step(beside, alone, 1.0, 8.0, steps)
    assert got == [("before", 1, 1, 1), ("start-up", 1, 1, 1), ("schedule", 1, 2, 1), ("build", 1, 1, 1),
                   ("catch-up", 1, 3, 1), ("after", 1, 1, 1)]
    # no step reported (an indexer of an older tree): its whole process is start-up
    assert [r[0] for r in bi.gaps_by_step(beside, alone, 1.0, 8.0, {})] == ["before", "start-up", "after"]


def test_round_interval_brackets_the_pooled_ratio_and_narrows_with_agreeing_rounds():
    # rounds of 90 %, 80 % and 100 % over 10 s each: pooled 90 %; every resample lies within the rounds' range
    lo, hi = bi.round_interval([9.0, 8.0, 10.0], [10.0, 10.0, 10.0], seed=1)
    assert 0.8 <= lo < 0.9 < hi <= 1.0
    # the same seed, the same interval; rounds that agree leave no spread
    assert bi.round_interval([9.0, 8.0, 10.0], [10.0, 10.0, 10.0], seed=1) == (lo, hi)
    assert bi.round_interval([9.0, 4.5], [10.0, 5.0], seed=3) == (pytest.approx(0.9), pytest.approx(0.9))
    # a longer round weighs more: the pooled ratio, not the mean of the rounds' ratios. Rounds A (1 of 2 s, 50 %)
    # and three B (18 of 20 s, 90 %): the 2.5th percentile is a resample of three A and one B (P(4 A) = 0.4 %,
    # P(3 A) = 4.7 %), pooled 21 / 26 = 80.8 % (the mean of the ratios would say 60 %); the top is all B, 90 %
    lo, hi = bi.round_interval([1.0, 18.0, 18.0, 18.0], [2.0, 20.0, 20.0, 20.0], seed=2)
    assert lo == pytest.approx(21 / 26) and hi == pytest.approx(0.9)


@pytest.mark.parametrize("argv", [["--rounds", "0"], ["--indexer-priority", "idle"], ["--indexer-priority", "20"],
                                  ["--indexer-after", "-1"]])
def test_bad_arguments_exit_2_before_anything_runs(argv, capsys):
    with pytest.raises(SystemExit) as e:
        bi.main(argv)
    assert e.value.code == 2
    assert argv[0] in capsys.readouterr().err


def test_commit_mode_times_the_three_deltacommits(capsys):
    """``--mode commit`` (the micro-benchmark of one commit's record-index upkeep) runs on a small table and
    prints the three costs and the delegates' share."""
    assert bi.main(["--mode", "commit", "--records", "300", "--batch", "100", "--commits", "2", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "keys read from the files:" in out and "keys from the delegates:" in out and "the record index's share" in out


def test_commit_mode_refuses_a_repeat_of_0(capsys):
    with pytest.raises(SystemExit) as e:
        bi.main(["--mode", "commit", "--repeat", "0"])
    assert e.value.code == 2 and "--repeat" in capsys.readouterr().err


def test_the_a_a_control_starts_a_process_that_only_sleeps():
    """``--beside nothing``: a process started as the burner is (its own session, lowered) that sleeps for the
    given seconds and uses next to no CPU; the burner at a share spins."""
    import argparse
    import resource
    import time

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = bi._burner(0.4, "background", 0)
    out, err = proc.communicate(timeout=30)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, err
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert took >= 0.4 and cpu < 0.4, (took, cpu)  # slept: its CPU is the interpreter's start-up only
    ns = argparse.Namespace(beside="nothing", burn_seconds=0.4, burn_share=1.0)
    assert bi._who(ns) == "nothing" and "A/A" in bi._beside_label(ns)
    assert bi._who(argparse.Namespace(beside="indexer")) == "the indexer"
