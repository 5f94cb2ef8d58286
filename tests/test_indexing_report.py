"""The report's indexing section (quick): every indexing design explored as expected, the shortest counterexample
of the hole design, the model finding, the simulation table and its plot."""

from __future__ import annotations


def test_indexing_section_alone(tmp_path):
    from hoodie_lab.report import Context
    from hoodie_lab.report_sections import builders, indexing_section

    assert builders(["indexing"]) == [indexing_section]
    ctx = Context(tmp_path, quick=True, seed=7, log=lambda _: None)
    s = indexing_section(ctx)
    html = "".join(s.paragraphs)
    assert s.ok, html[-2000:]
    assert "UNEXPECTED" not in html and "schedule-past-hole" in html and "hudi-catchup-by-instant-time (finding)" in html
    assert "Shortest counterexample: schedule-past-hole" in html and "i complete" in html
    assert "no-indexer" in html and s.command.startswith("hoodie-lab explore --machine indexing")
    assert s.figures and all(p.exists() for p in s.figures)
