"""``hoodie-lab demo`` (what ``make demo`` runs): audit, simulation, report; the report path is the last line.

The demo is run in-process with one cheap report section (``--section slicing``) so the test stays
fast (about 10-15 s: the skeleton audit and the quick blocking-vs-async simulation); the full quick report
is covered by ``tests/test_report.py``.
"""

from __future__ import annotations

from pathlib import Path

from hoodie_lab.cli import main


def test_demo_prints_the_report_path_last(tmp_path, capsys):
    code = main(["demo", "--out", str(tmp_path / "table"), "--report-out", str(tmp_path / "report"),
                 "--section", "slicing"])
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert code == 0, out[-3000:]
    last = Path(lines[-1])
    assert last == tmp_path / "report" / "index.html" and last.is_file()
    # the skeleton audit under both rules and the simulation curves came before the report
    assert "audit under the completion-time rule" in out and "audit under the instant-time rule" in out
    assert "what differs between the rules" in out
    assert "blocking-vs-async" in out
    plots = [Path(ln.split("plot:", 1)[1].strip()) for ln in lines if ln.startswith("plot:")]
    assert plots and all(p.is_file() for p in plots)
    assert (tmp_path / "table" / "demo_overlap_v9" / ".hoodie").is_dir()
    html = last.read_text(encoding="utf-8")
    assert "File slicing: instant time vs completion time" in html


def test_demo_refuses_an_existing_table(tmp_path, capsys):
    (tmp_path / "demo_overlap_v9").mkdir()
    assert main(["demo", "--out", str(tmp_path), "--report-out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "exists" in err[0]
    assert not (tmp_path / "r").exists(), "nothing is written on bad input"
