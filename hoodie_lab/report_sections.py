"""Section builders of the design-review report (``hoodie-lab report``) and helpers the notebooks share.

Every builder is ``build(ctx: hoodie_lab.report.Context) -> Section``. Builders only *call* the
parts of hoodie-lab that own a concern -- the model, its invariants, the property suites, the
simulation, the explorer, the pipeline, the audit -- and lay out what they return; no model rule is
restated here. Each section names the command that reproduces it. ``ctx.quick`` selects the small
parameters (``make demo``, the tests); ``--full`` the larger ones.

Builders in report order (:data:`BUILDERS`):

* :func:`slicing_section` -- the demo table (overlapping write + pending compaction) audited under
  both slicing rules (:func:`hoodie_lab.commands.demo.run_skeleton_demo`);
* :func:`properties_section` -- the Hypothesis suites: examples run and verdicts of each property,
  and the shrunk counterexamples Hypothesis finds for every deliberately broken variant;
* :func:`simulation_section` -- blocking vs async instant generation (:func:`sim.experiments.run_named`);
* :func:`exploration_section` -- bounded exhaustive exploration of the protocol (:mod:`hoodie_lab.explore`);
* :func:`pipeline_section` -- a small PySpark pipeline run and its diff against the model (:mod:`pipeline`);
* :func:`real_tables_section` -- every real fixture table: Gantt chart and invariant verdicts
  (:func:`hoodie_lab.audit.audit_table`).

Fixture tables (shared with the notebooks): :func:`fixtures_root`, :func:`fixture_zips`,
:func:`extract_fixture` -- zips are extracted to a temporary folder, never into the repository.
"""

from __future__ import annotations

import importlib
import os
import shutil
import struct
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Callable

from hoodie_lab.report import Context, Section, esc, pre, table

REPO = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------------ fixtures
def fixtures_root() -> Path | None:
    """``$HOODIE_LAB_FIXTURES`` or ``../shared/fixtures`` beside the repository, if it holds ``hudi-tables``."""
    env = os.environ.get("HOODIE_LAB_FIXTURES")
    for c in ([Path(env)] if env else []) + [REPO.parent / "shared" / "fixtures"]:
        if (c / "hudi-tables").is_dir():
            return c
    return None


def fixture_zips() -> list[Path]:
    """Every fixture zip (sorted); empty when the fixtures are absent."""
    root = fixtures_root()
    return sorted((root / "hudi-tables").rglob("*.zip")) if root else []


def fixture_label(zip_path: Path) -> str:
    """``sample_table/cow/v8_empty``: the zip's path under ``hudi-tables`` without ``.zip``."""
    parts = Path(zip_path).with_suffix("").parts
    return "/".join(parts[parts.index("hudi-tables") + 1:]) if "hudi-tables" in parts else Path(zip_path).stem


def _zip_mtime(info: zipfile.ZipInfo) -> float:
    """A zip entry's modification time: the UTC extended-timestamp field (0x5455, what ``unzip``
    restores) when present, else the DOS time read as local time. Table version 6 completion times
    are the completed files' modification times, so they must survive extraction."""
    extra, i = info.extra, 0
    while i + 4 <= len(extra):
        hid, size = struct.unpack_from("<HH", extra, i)
        if hid == 0x5455 and size >= 5 and extra[i + 4] & 1:
            return float(struct.unpack_from("<i", extra, i + 5)[0])
        i += 4 + size
    return time.mktime(info.date_time + (0, 0, -1))


def extract_fixture(zip_path: Path, dest: Path) -> Path:
    """Extract a fixture zip under ``dest`` (``__MACOSX`` skipped, modification times kept).

    Returns the table's base path: the one folder holding ``.hoodie`` outside the metadata table.
    """
    dest = Path(dest) / Path(zip_path).stem
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            if info.filename.startswith("__MACOSX/"):
                continue
            zf.extract(info, dest)
            if not info.is_dir():
                ts = _zip_mtime(info)
                os.utime(dest / info.filename, (ts, ts))
    found = sorted(p.parent for p in dest.rglob(".hoodie")
                   if p.is_dir() and ".hoodie" not in p.parent.parts)
    if len(found) != 1:
        raise ValueError(f"{zip_path}: expected one table (.hoodie folder), found {len(found)}")
    return found[0]


# ------------------------------------------------------------------------------------- helpers
def _missing(title: str, command: str, exc: ImportError) -> Section:
    """A FAILED section for a part of hoodie-lab that is not importable (not built, or broken)."""
    return Section(title, command, ok=False, paragraphs=[
        f"<p class='bad'>Cannot build this section: {esc(exc)}.</p>"])


def _verdict_rows(verdicts) -> list[list[object]]:
    return [[v.invariant, "holds" if v.holds else "VIOLATED",
             v.detail + (f" [{', '.join(v.involved)}]" if v.involved and not v.holds else "")] for v in verdicts]


def _verdicts_html(verdicts) -> str:
    bad = [v for v in verdicts if not v.holds]
    head = (f"<p class='ok'>all {len(verdicts)} invariants hold</p>" if not bad else
            f"<p class='bad'>{len(bad)} of {len(verdicts)} invariants violated</p>")
    return head + table(["invariant", "verdict", "detail"], _verdict_rows(verdicts))


def _fig(ctx: Context, fig, stem: str) -> Path:
    """Save a matplotlib figure under the report's figures folder; returns the PNG."""
    from hoodie_lab.plots import save

    return save(fig, ctx.fig_dir, stem)[0]


def _copy_plots(paths, ctx: Context, prefix: str) -> list[Path]:
    """Copy PNG (and SVG sibling) plots made elsewhere into the report's figures folder."""
    out = []
    for p in paths:
        p = Path(p)
        if p.suffix != ".png":
            continue
        dst = ctx.fig_dir / f"{prefix}-{p.name}"
        shutil.copyfile(p, dst)
        if p.with_suffix(".svg").exists():
            shutil.copyfile(p.with_suffix(".svg"), dst.with_suffix(".svg"))
        out.append(dst)
    return out


# -------------------------------------------------------------------------------------- slicing
def slicing_section(ctx: Context) -> Section:
    """File slicing by instant time vs completion time (the demo table)"""
    from hoodie_lab.audit import slice_rows, timeline_rows
    from hoodie_lab.commands.demo import run_skeleton_demo
    from hoodie_lab.plots import timeline_gantt

    s = Section("File slicing: instant time vs completion time", "hoodie-lab demo --out DIR")
    with tempfile.TemporaryDirectory(prefix="hoodie-lab-report-demo-") as tmp:
        res = run_skeleton_demo(tmp)
        first = next(iter(res.results.values()))
        s.paragraphs.append(
            "<p>A synthetic MERGE_ON_READ table (table version 9) built in the model and written as a skeleton "
            "table: deltacommit 300 is requested before compaction 400 and completes after it. Which slice its "
            "log file joins depends on the slicing rule; the same files are audited under both rules.</p>")
        s.figures.append(_fig(ctx, timeline_gantt(first.table.timeline.instants(),
                                                  "demo table: requested -> completion per instant"),
                              "slicing-demo-gantt"))
        s.paragraphs.append(table(["requested", "completion", "action", "state"],
                                  [[r["requested"], r["completion"] or "-", r["action"], r["state"]]
                                   for r in timeline_rows(first.table)]))
        for rule, result in res.results.items():
            s.paragraphs.append(f"<h3>Latest file slices under the {esc(rule)} rule</h3>")
            s.paragraphs.append(table(["file group", "base instant", "base file", "log files"],
                                      [[f"{r['partition']}/{r['file_id']}", r["base_instant"], r["base_file"] or "-",
                                        ", ".join(r["log_files"]) or "-"] for r in slice_rows(result.slices)]))
            s.paragraphs.append(_verdicts_html(result.verdicts))
        s.paragraphs.append("<h3>What differs between the rules</h3>")
        s.paragraphs.append(pre("\n".join(f"- {d}" for d in res.differences) or "nothing"))
    # The table's own rule (completion time, tv9) must hold every invariant; the instant-time
    # rule is expected to break slice placement on this table -- that is the point of the demo.
    s.ok = res.results["completion-time"].ok and bool(res.differences)
    if not res.differences:
        s.paragraphs.append("<p class='bad'>Expected the two rules to disagree on this table; they agree.</p>")
    return s


# -------------------------------------------------------------------------------- real tables
def real_tables_section(ctx: Context) -> Section:
    """Real fixture tables: Gantt charts and invariant verdicts"""
    from hoodie_lab.audit import audit_table
    from hoodie_lab.plots import timeline_gantt

    s = Section("Real tables written by Apache Hudi", "hoodie-lab audit <table>  (each fixture zip, extracted)")
    zips = fixture_zips()
    if not zips:
        s.paragraphs.append("<p>No fixture tables found: set <code>HOODIE_LAB_FIXTURES</code> or put "
                            "<code>shared/fixtures</code> beside the repository. Section skipped.</p>")
        return s
    s.paragraphs.append(f"<p>{len(zips)} tables from <code>{esc(fixtures_root())}/hudi-tables</code>, each "
                        "extracted to a temporary folder and audited read-only under its own slicing rule.</p>")
    rows, details = [], []
    with tempfile.TemporaryDirectory(prefix="hoodie-lab-report-fixtures-") as tmp:
        for i, z in enumerate(zips):
            label = fixture_label(z)
            ctx.log(f"    audit {label}")
            try:
                res = audit_table(extract_fixture(z, Path(tmp) / str(i)))
            except Exception as exc:  # noqa: BLE001 - one unreadable table must not hide the others
                s.ok = False
                rows.append([label, "-", "-", "-", "-", f"ERROR: {exc}"])
                continue
            f = res.table.facts()
            bad = [v for v in res.verdicts if not v.holds]
            s.ok &= res.ok
            rows.append([label, f["type"], f["version"], f["instants"], f"{f['base_files']}/{f['log_files']}",
                         "all hold" if not bad else f"{len(bad)} VIOLATED"])
            stem = "table-" + label.replace("/", "-")
            png = _fig(ctx, timeline_gantt(res.table.timeline.instants(), f"{label} (tv{f['version']})"), stem)
            details.append((label, res, png))
    s.paragraphs.append(table(["table", "type", "version", "instants", "base/log files", "invariants"], rows))
    for label, res, png in details:
        s.paragraphs.append(f"<h3>{esc(label)}</h3>")
        s.paragraphs.append(f"<p>Reproduce: <code class='cmd'>unzip {esc(label)}.zip -d /tmp/t &amp;&amp; "
                            f"hoodie-lab audit /tmp/t/...</code> (rule: {esc(res.rule)})</p>")
        s.paragraphs.append(_img(png))
        s.paragraphs.append(_verdicts_html(res.verdicts))
        for n in res.notes:
            s.paragraphs.append(f"<p><small>note: {esc(n)}</small></p>")
    return s


def _img(png: Path) -> str:
    """An inline figure (for sections with one figure per item, placed next to its text)."""
    import base64

    data = base64.b64encode(Path(png).read_bytes()).decode("ascii")
    svg = Path(png).with_suffix(".svg")
    link = f" <a href='figures/{esc(svg.name)}'>SVG</a>" if svg.exists() else ""
    return (f"<figure><img alt='{esc(Path(png).stem)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{esc(Path(png).stem)}{link}</figcaption></figure>")


# ---------------------------------------------------------------------------------- simulation
def simulation_section(ctx: Context) -> Section:
    """Simulation: blocking vs async instant generation"""
    cmd = f"hoodie-lab simulate blocking-vs-async --seed {ctx.seed}" + (" --quick --no-sweep" if ctx.quick else "")
    title = "Simulation: blocking vs async instant generation"
    try:
        from sim.experiments import run_named
    except ImportError as exc:
        return _missing(title, cmd, exc)
    s = Section(title, cmd)
    out = ctx.out_dir / "sim" / "blocking-vs-async"
    outcome = run_named("blocking-vs-async", out, seed=ctx.seed, quick=ctx.quick, grid=not ctx.quick)
    s.paragraphs.append("<p>The same streaming workload driven through the protocol model in simulated time "
                        "(SimPy), once with blocking instant generation and once with async generation. "
                        "Every run is checked by the model's invariants.</p>")
    cols = ["mode", "throughput_rps", "stall_per_checkpoint_s", "latency_p50_s", "latency_p99_s",
            "backlog_max_records", "commits_per_minute", "pending_instants_max", "invariants"]
    base = [r for r in outcome.rows if r.get("index", -1) == -1] or outcome.rows
    cols = [c for c in cols if any(c in r for r in base)]
    s.paragraphs.append(table(cols, [[_num(r.get(c, "")) for c in cols] for r in base]))
    if len(outcome.rows) > len(base):
        s.paragraphs.append(f"<p>Sweep: {len(outcome.rows) - len(base)} more runs in "
                            f"<code>{esc(outcome.table.relative_to(ctx.out_dir))}</code>.</p>")
    s.figures.extend(_copy_plots(outcome.plots, ctx, "sim"))
    if outcome.failures:
        s.ok = False
        s.paragraphs.append("<p class='bad'>Runs that broke an invariant (replay them):</p>"
                            + pre("\n".join(outcome.failures)))
    return s


def _num(v):
    return f"{v:.4g}" if isinstance(v, float) else v


# -------------------------------------------------------------------------- property suites
#: Default examples per property in quick mode (tests with their own ``@settings`` keep theirs).
QUICK_MAX_EXAMPLES = 15


def suite_collector(max_examples: int | None = None):
    """A pytest plugin that records, per test: outcome, seconds, and Hypothesis' own statistics.

    The statistics come from ``hypothesis.statistics.collector`` (the raw per-run dict Hypothesis
    publishes), so example counts are counted, not parsed from terminal output. With
    ``max_examples`` set it also lowers the default example budget of the loaded profile.
    Returns the plugin; its ``results`` maps node id -> {outcome, seconds, examples, failing, message}.
    """
    import pytest

    class SuiteCollector:
        def __init__(self):
            self.results: dict[str, dict] = {}

        def pytest_configure(self, config):
            if max_examples:
                from hypothesis import settings

                settings.register_profile("report-quick", parent=settings.default, max_examples=max_examples)
                settings.load_profile("report-quick")

        def _rec(self, nodeid: str) -> dict:
            return self.results.setdefault(nodeid, {"outcome": "passed", "seconds": 0.0, "examples": 0,
                                                    "failing": 0, "message": ""})

        @pytest.hookimpl(hookwrapper=True, trylast=True)
        def pytest_runtest_call(self, item):
            from hypothesis.statistics import collector

            rec = self._rec(item.nodeid)

            def note(stats):
                for phase, d in stats.items():
                    if phase.endswith("-phase") and phase != "shrink-phase":
                        for case in d.get("test-cases", []):
                            rec["examples"] += case["status"] == "valid"
                            rec["failing"] += case["status"] == "interesting"

            with collector.with_value(note):
                yield

        def pytest_runtest_logreport(self, report):
            rec = self._rec(report.nodeid)
            rec["seconds"] += report.duration
            if report.failed:
                rec["outcome"] = "failed"
                rec["message"] = str(report.longrepr)[-1500:]
            elif report.skipped and rec["outcome"] == "passed":
                rec["outcome"] = "skipped"
                rec["message"] = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""

    return SuiteCollector()


def run_suites(paths: list[str], json_out: str, quick: bool) -> int:
    """Run pytest over ``paths`` in this process with :class:`SuiteCollector`; write its results as JSON.

    Meant to run in a fresh interpreter (``python -c``) so the suites get a clean pytest session.
    """
    import json

    import pytest

    plugin = suite_collector(QUICK_MAX_EXAMPLES if quick else None)
    code = pytest.main(["-q", "-p", "no:cacheprovider", "-m", "not slow", "--no-header", "-o",
                        "console_output_style=classic", *paths], plugins=[plugin])
    Path(json_out).write_text(json.dumps({"exit": int(code), "results": plugin.results}))
    return int(code)


def _property_counterexamples(ctx: Context) -> tuple[list[str], bool]:
    """Shrunk counterexamples of the broken variants, found by calling the suites' own search functions."""
    from hypothesis import HealthCheck, Phase, find, settings

    paras, ok = [], True
    find_settings = settings(max_examples=3000, database=None, deadline=None, derandomize=True,
                             phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))

    # TrueTime: each weaker generator configuration breaks strictly increasing times (I1).
    from model.truetime import actual_skew, guarantee_holds
    from properties import test_truetime_props as tt

    for name, (config, latency, skew) in tt.WEAKER.items():
        shrunk = find(tt.schedules(skew, max_moves=12),
                      lambda sch: bool(tt.time_violations(tt.run_schedule(sch, config, latency)[0])),
                      settings=find_settings)
        gen, end = tt.run_schedule(shrunk, config, latency)
        bad = tt.time_violations(gen)
        ok &= bool(bad) and not guarantee_holds(config, actual_skew(shrunk.clocks, 0, end), latency)
        paras.append(f"<h4>TrueTime, {esc(name)}</h4>")
        paras.append(pre(f"{shrunk}\n" + "\n".join(f"  {r.process} {r.kind} read@{r.read_at}ms -> {r.time}"
                                                    for r in gen.history)
                         + f"\n=> {bad[0] if bad else 'no violation (unexpected)'}"))

    # Slicing: instant-time slicing (tv6) loses a committed write that completion-time slicing keeps.
    from properties import test_slicing_props as sp

    evs = find(sp.events, sp.tv6_loses_what_tv8_keeps, settings=find_settings)
    s6, story = sp.run(evs, 6)
    s8, _ = sp.run(evs, 8)
    ok &= sp.tv6_loses_what_tv8_keeps(evs)
    paras.append("<h4>Slicing, instant-time rule on an overlapping write</h4>")
    paras.append(pre("\n".join(story) + f"\ninstant-time (tv6) reader sees writes {sorted(s6.seen())}"
                     f"\ncompletion-time (tv8) reader sees writes {sorted(s8.seen())}"))

    # Timeline: each broken timeline / generator variant is caught by the state machine.
    from hypothesis.stateful import run_state_machine_as_test

    from properties import test_timeline_props as tp

    catch = getattr(tp, "_CATCH", None) or settings(max_examples=300, stateful_step_count=25, database=None)
    rows = []
    for name, (machine, rules) in sorted(tp.BROKEN.items()):
        try:
            run_state_machine_as_test(machine, settings=catch)
            rows.append([name, "NOT CAUGHT", ""])
            ok = False
        except AssertionError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            caught = any(r in str(exc) for r in rules)
            ok &= caught
            rows.append([name, "caught" if caught else "caught by an unexpected check", first[:300]])
    paras.append("<h4>Timeline state machine vs broken timelines</h4>")
    paras.append(table(["broken variant", "result", "first invariant violated"], rows))
    return paras, ok


def properties_section(ctx: Context) -> Section:
    """Property suites: examples, verdicts and counterexamples of broken variants"""
    import json
    import subprocess

    mode = "quick" if ctx.quick else "full"
    s = Section("Property suites (Hypothesis)",
                "pytest properties -m 'not slow'" + ("" if not ctx.quick else
                                                      f"  (the report runs them with {QUICK_MAX_EXAMPLES} "
                                                      "examples per property; --full uses the ci profile)"))
    paths = sorted(str(p) for p in (REPO / "properties").glob("test_*.py"))
    s.paragraphs.append(f"<p>{len(paths)} suites run by pytest in a fresh interpreter ({mode} mode); example "
                        "counts come from Hypothesis' own statistics. Tests with their own settings (the "
                        "searches for counterexamples of broken variants) keep their budgets.</p>")
    with tempfile.TemporaryDirectory(prefix="hoodie-lab-report-props-") as tmp:
        out = Path(tmp) / "suites.json"
        code = (f"import sys; from hoodie_lab.report_sections import run_suites; "
                f"sys.exit(run_suites({paths!r}, {str(out)!r}, {ctx.quick!r}))")
        env = dict(os.environ, HYPOTHESIS_PROFILE=os.environ.get("HYPOTHESIS_PROFILE", "ci"))
        proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=1800)
        if not out.exists():
            s.ok = False
            s.paragraphs.append("<p class='bad'>The suites did not run:</p>" + pre((proc.stdout + proc.stderr)[-3000:]))
            return s
        data = json.loads(out.read_text())
    results = data["results"]
    by_suite: dict[str, list] = {}
    for nodeid, r in results.items():
        by_suite.setdefault(nodeid.split("::")[0].split("/")[-1], []).append((nodeid, r))
    summary = []
    for suite, items in sorted(by_suite.items()):
        n = {k: sum(1 for _, r in items if r["outcome"] == k) for k in ("passed", "failed", "skipped")}
        summary.append([suite, len(items), n["passed"], n["failed"], n["skipped"],
                        sum(r["examples"] for _, r in items), f"{sum(r['seconds'] for _, r in items):.1f}"])
    s.paragraphs.append(table(["suite", "tests", "passed", "failed", "skipped", "examples", "seconds"], summary))
    s.paragraphs.append("<details><summary>Every test</summary>" + table(
        ["test", "outcome", "examples", "seconds"],
        [[nodeid.split("/")[-1], r["outcome"], r["examples"], f"{r['seconds']:.2f}"]
         for nodeid, r in sorted(results.items())]) + "</details>")
    failed = {k: r for k, r in results.items() if r["outcome"] == "failed"}
    if failed or data["exit"] not in (0, 5):
        s.ok = False
        s.paragraphs.append("<p class='bad'>Failing tests:</p>"
                            + "".join(f"<h4>{esc(k)}</h4>" + pre(r["message"]) for k, r in failed.items()))
    s.paragraphs.append("<h3>Counterexamples of the broken variants</h3><p>Each deliberately broken variant "
                        "is searched with the suite's own strategy and check (<code>hypothesis.find</code>, "
                        "derandomized); the shrunk counterexample is shown.</p>")
    paras, ok = _property_counterexamples(ctx)
    s.paragraphs.extend(paras)
    s.ok &= ok
    return s


# ----------------------------------------------------------------------------------- registry
#: Section builders in report order.
BUILDERS: list[Callable[[Context], Section]] = [
    slicing_section,
    properties_section,
    simulation_section,
    real_tables_section,
]


def builders(names: list[str] | None = None) -> list[Callable[[Context], Section]]:
    """The builders to run (all by default, else those whose name starts with one of ``names``)."""
    if not names:
        return list(BUILDERS)
    return [b for b in BUILDERS if any(b.__name__.startswith(n) for n in names)]
