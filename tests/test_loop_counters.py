"""benchmarks/loop_counters.py: reading callgrind's loop dump, and its errors (valgrind itself is not run)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "loop_counters.py"
_spec = importlib.util.spec_from_file_location("loop_counters", _PATH)
lc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lc)

DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
desc: Trigger: dump loop-events-1234
events: Ir Dr Dw I1mr D1mr D1mw Bc Bcm Bi Bim
summary: 1000 10 20 3 40 50 60 7 80 9
totals: 1001 10 20 3 40 50 60 7 80 9
"""


def test_reads_events_and_counters_of_the_first_dump(tmp_path):
    (tmp_path / "cg.42.1").write_text(DUMP)
    (tmp_path / "cg.42").write_text(DUMP.replace("dump loop-events-1234", "Program termination"))
    events, counters = lc._read_dump(tmp_path)
    assert events == 1234
    assert counters["Ir"] == 1000 and counters["D1mr"] == 40 and counters["Bim"] == 9


@pytest.mark.parametrize("text", [DUMP.replace("loop-events-1234", "Program termination"),  # not the loop's
                                  DUMP.replace("summary: 1000 10", "summary: 1000"),         # columns missing
                                  ""])
def test_a_dump_that_is_not_the_loop_is_refused_naming_the_file(tmp_path, text):
    (tmp_path / "cg.7.1").write_text(text)
    with pytest.raises(SystemExit, match=r"cg\.7\.1: not a loop dump"):
        lc._read_dump(tmp_path)


def test_no_dump_is_one_line_naming_the_folder(tmp_path):
    with pytest.raises(SystemExit, match="no callgrind dump in"):
        lc._read_dump(tmp_path)


def test_without_valgrind_it_exits_2_with_one_line(monkeypatch, capsys):
    monkeypatch.setattr(lc.shutil, "which", lambda tool: None)
    assert lc.main([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["loop_counters: valgrind not found (install valgrind)"]
