"""benchmarks/bench_liveness.py at its quick bounds for the indexing and archival machines (the protocol's takes
minutes: ``make bench``): both runs exhaust the same states, the correct designs hold, the ratio is printed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_liveness.py"
_spec = importlib.util.spec_from_file_location("bench_liveness", _PATH)
bl = importlib.util.module_from_spec(_spec)
sys.modules["bench_liveness"] = bl
_spec.loader.exec_module(bl)


def test_quick_bounds_of_the_indexing_and_archival_machines(capsys):
    assert bl.main(["--quick", "--machines", "indexing,archival"]) == 0
    out = capsys.readouterr().out
    for machine, states in (("indexing", "3,765"), ("archival", "9,293")):
        block = out.split(f"{machine}:", 1)[1]
        assert block.count(f"{states} states") == 2, out  # safety-only and liveness: the same graph
    assert out.count("ratio") == 2 and "0 violations" in out


@pytest.mark.parametrize("arg", ["", "indexing,bogus"])
def test_bad_machines_exit_2(arg, capsys):
    with pytest.raises(SystemExit) as e:
        bl.main(["--machines", arg])
    assert e.value.code == 2 and "--machines" in capsys.readouterr().err
