"""``hoodie-lab report`` in quick mode: every section ok, the HTML opens offline, the embedded plots decode.

One report is built per test session (module fixture) and shared by the assertions; it runs every
section builder of ``hoodie_lab.report_sections`` with the quick parameters (the simulation without its sweep,
small explorations, one small pipeline run on Spark in a subprocess, every fixture table). Its property section
runs the suites of :data:`REPORT_SUITES` only (``properties.runner.list_suites`` narrowed for the fixture): the
default run executes every property suite itself, under the ``ci`` profile (60 examples a property, more than
the report's quick 15), and ``test_every_property_suite_in_the_report`` (slow, ``make deep``) builds the property
section over all of them. Runtime: 70 s at load 4.7 on the 2 cores (28 Nov 2026; the whole report with every
suite took 281 s in a loaded suite run); its largest part the pipeline run on Spark (21 s).
"""

from __future__ import annotations

import base64
import io
import re

import pytest

from hoodie_lab.cli import main

#: The property suites the default run's report runs: both suites whose counterexample searches the quick
#: report shows (``COUNTEREXAMPLE_TESTS``) and the file-name codec.
REPORT_SUITES = ("test_codec_props.py", "test_slicing_props.py", "test_truetime_props.py")


@pytest.fixture(scope="module")
def report(tmp_path_factory, fixtures_dir):
    out = tmp_path_factory.mktemp("report")
    import properties.runner as runner
    from hoodie_lab.commands.report import build

    every = runner.list_suites
    lines: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "list_suites", lambda *a, **kw: [x for x in every(*a, **kw) if x.name in REPORT_SUITES])
        path, sections = build(out, full=False, seed=7, log=lines.append)
    return out, path, sections, lines


def test_every_section_is_ok(report):
    _out, path, sections, lines = report
    assert path.name == "index.html" and path.exists()
    names = [s.title for s in sections]
    from hoodie_lab.report_sections import BUILDERS

    assert len(sections) == len(BUILDERS) >= 10, names
    assert "Metadata table and async indexing" in names
    assert "Liveness" in " ".join(names), names
    bad = {s.title: s.paragraphs[-1][:2000] for s in sections if not s.ok}
    assert not bad, bad
    assert all(s.command for s in sections), "every section names the command that reproduces it"
    assert len(lines) >= len(sections), "one progress line per section at least"


def test_html_is_self_contained(report):
    _out, path, _sections, _lines = report
    text = path.read_text(encoding="utf-8")
    # no network: no http(s) URL in any src/href attribute, no external scripts, styles or fonts
    refs = re.findall(r"""(?:src|href)\s*=\s*['"]([^'"]*)['"]""", text, flags=re.I)
    assert refs, "the report has images and links"
    assert not [r for r in refs if re.match(r"\s*(https?:)?//", r, flags=re.I)], refs
    assert not re.search(r"<script[^>]+src|<link[^>]+stylesheet|@import|@font-face", text, flags=re.I)


def test_embedded_pngs_decode(report):
    _out, path, _sections, _lines = report
    from PIL import Image  # matplotlib depends on pillow

    text = path.read_text(encoding="utf-8")
    blobs = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", text)
    # the demo's Gantt chart, the simulation curves and one Gantt chart per fixture table
    assert len(blobs) >= 3, len(blobs)
    for b in blobs:
        img = Image.open(io.BytesIO(base64.b64decode(b)))
        img.verify()
        assert img.size[0] > 200 and img.size[1] > 100


def test_svg_links_point_at_written_files(report):
    out, path, _sections, _lines = report
    text = path.read_text(encoding="utf-8")
    for rel in re.findall(r"href='(figures/[^']+\.svg)'", text):
        assert (out / rel).is_file(), rel


def test_bad_arguments_exit_2(tmp_path, capsys):
    f = tmp_path / "a-file"
    f.write_text("x")
    assert main(["report", "--out", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--out" in err[0] and "not a directory" in err[0]
    assert main(["report", "--out", str(tmp_path / "r"), "--section", "nonexistent"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--section" in err[0]
    assert main(["report", "--seed", "-1", "--out", str(tmp_path / "r")]) == 2
    assert "--seed" in capsys.readouterr().err


def _property_text(sections) -> str:
    [s] = [s for s in sections if s.title.startswith("Property suites")]
    assert s.ok, s.paragraphs[-1][:2000]
    return "\n".join(s.paragraphs)


def test_property_section_comes_from_the_runner(report):
    """The suites' table and the counterexamples come from ``properties.runner`` runs, not imported test modules."""
    _out, _path, sections, _lines = report
    text = _property_text(sections)
    from properties.runner import list_suites

    names = [x.name for x in list_suites()]
    assert set(REPORT_SUITES) < set(names)
    for name in names:  # the suites listed (narrowed by the fixture) are the ones run, each with its row
        assert (f"<td>{name}</td>" in text) == (name in REPORT_SUITES), name
    assert "TrueTime, lock, wait below the skew" in text and "VIOLATED" in text
    assert "Slicing, instant-time rule on an overlapping write" in text and "tv6 sees" in text


@pytest.mark.slow
def test_every_property_suite_in_the_report(tmp_path):
    """Slow (``make deep``): the property section as ``hoodie-lab report`` builds it, over every suite (the
    default run runs every suite itself, under the ci profile, and the section over :data:`REPORT_SUITES`)."""
    from hoodie_lab.commands.report import build
    from properties.runner import list_suites

    _path, sections = build(tmp_path, full=False, seed=7, sections=["properties"], log=lambda _: None)
    text = _property_text(sections)
    for suite in list_suites():
        assert f"<td>{suite.name}</td>" in text, suite.name
    assert "Protocol state machines executed" in text  # the protocol suites' step counters, summed
    assert "TrueTime, lock, wait below the skew" in text and "VIOLATED" in text
    assert "Slicing, instant-time rule on an overlapping write" in text and "tv6 sees" in text


def test_history_section_alone(tmp_path):
    """The history section (quick): the simulation's two modes, the decisions, the broken designs, its plot."""
    from hoodie_lab.report import Context
    from hoodie_lab.report_sections import builders, history_section

    assert builders(["history"]) == [history_section]
    ctx = Context(tmp_path, quick=True, seed=7, log=lambda _: None)
    ctx.fig_dir.mkdir(parents=True, exist_ok=True)
    s = history_section(ctx)
    assert s.ok and s.command.startswith("hoodie-lab simulate history")
    html = "".join(s.paragraphs)
    assert "no-archival" in html and "keep.max 30" in html and "lookup-misses-archived" in html
    assert s.figures and all(p.exists() for p in s.figures)
