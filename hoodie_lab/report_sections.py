"""Section builders of the design-review report (``hoodie-lab report``) and helpers the notebooks share.

Every builder is ``build(ctx: hoodie_lab.report.Context) -> Section``. Builders only *call* the
parts of hoodie-lab that own a concern -- the model, its invariants, the property suites, the
simulation, the explorer, the pipeline, the audit -- and lay out what they return; no model rule is
restated here. Each section names the command that reproduces it. ``ctx.quick`` selects the small
parameters (``make demo``, the tests); ``--full`` the larger ones.

Builders in report order (:data:`BUILDERS`):

* :func:`slicing_section` -- the demo table (overlapping write + pending compaction) audited under
  both slicing rules (:func:`hoodie_lab.scenarios.run_skeleton_demo`);
* :func:`properties_section` -- the Hypothesis suites, run through :mod:`properties.runner` (no test module
  is imported here): examples run and verdicts of each property, and the shrunk counterexamples the
  suites' own searches print for the deliberately broken variants;
* :func:`simulation_section` -- blocking vs async instant generation (:func:`sim.experiments.run_named`);
* :func:`history_section` -- archival and the LSM timeline over a simulated week (experiment ``history``);
* :func:`concurrency_section` -- many writers (OCC vs NBCC) and compaction scheduling 0.x vs 1.x (experiment
  ``concurrency``);
* :func:`indexing_section` -- the metadata table and the async indexer: exhaustive exploration of every design
  (:class:`checker.indexing.IndexingModel`) and the index build beside streaming writers (experiment ``indexing``);
* :func:`exploration_section` -- bounded exhaustive exploration of the protocol (:mod:`hoodie_lab.explore`);
* :func:`pipeline_section` -- a small PySpark pipeline run and its diff against the model (:mod:`pipeline`);
* :func:`real_tables_section` -- every real fixture table: Gantt chart and invariant verdicts
  (:func:`lakeio.audit.audit_table`).

Fixture tables (shared with the notebooks): :func:`fixtures_root`, :func:`fixture_zips`,
:func:`extract_fixture` -- zips are extracted to a temporary folder, never into the repository.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable

from hoodie_lab.report import Context, Section, esc, pre, table
from lakeio.fixtures import extract_fixture, fixture_label, fixture_zips, fixtures_root  # noqa: F401 - re-exported for notebooks

REPO = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------------ fixtures
# ------------------------------------------------------------------------------------- helpers
def _missing(title: str, command: str, exc: ImportError) -> Section:
    """A FAILED section for a part of hoodie-lab that is not importable (not built, or broken)."""
    return Section(title, command, ok=False, paragraphs=[
        f"<p class='bad'>Cannot build this section: {esc(exc)}.</p>"])


def _verdict_rows(verdicts) -> list[list[object]]:
    return [[v.invariant, "holds" if v.holds else "VIOLATED",
             v.detail + (f" [{', '.join(v.involved)}]" if v.involved and not v.holds else "")] for v in verdicts]


def _verdicts_html(verdicts) -> str:
    """The verdict table; folded away (one summary line) when every invariant holds."""
    bad = [v for v in verdicts if not v.holds]
    rows = table(["invariant", "verdict", "detail"], _verdict_rows(verdicts))
    if not bad:
        return (f"<details><summary><span class='ok'>all {len(verdicts)} invariants hold</span> "
                f"({esc(', '.join(v.invariant for v in verdicts))})</summary>{rows}</details>")
    return f"<p class='bad'>{len(bad)} of {len(verdicts)} invariants violated</p>" + rows


def _fig(ctx: Context, fig, stem: str) -> Path:
    """Save a matplotlib figure under the report's figures folder; returns the PNG."""
    from lakeio.plots import save

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
    from lakeio.audit import slice_rows, timeline_rows
    from hoodie_lab.scenarios import run_skeleton_demo
    from lakeio.plots import timeline_gantt

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
    from lakeio.audit import audit_table
    from lakeio.plots import timeline_gantt

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
    cmd = f"hoodie-lab simulate blocking-vs-async --seed {ctx.seed}" + (" --quick" if ctx.quick else "")
    title = "Simulation: blocking vs async instant generation"
    try:
        from sim.experiments import run_named
    except ImportError as exc:
        return _missing(title, cmd, exc)
    s = Section(title, cmd)
    out = ctx.out_dir / "sim" / "blocking-vs-async"
    outcome = run_named("blocking-vs-async", out, seed=ctx.seed, quick=ctx.quick, grid=True)
    s.paragraphs.append("<p>The same streaming workload driven through the protocol model in simulated time "
                        "(SimPy), once with blocking instant generation and once with async generation. "
                        "Every run is checked by the model's invariants.</p>")
    cols = ["mode", "throughput_rps", "stall_per_checkpoint_s", "latency_p50_s", "latency_p99_s",
            "backlog_max_records", "commits_per_minute", "pending_instants_max", "invariants"]
    base = [r for r in outcome.rows if r.get("index", -1) == -1] or outcome.rows
    cols = [c for c in cols if any(c in r for r in base)]
    s.paragraphs.append(table(cols, [[_num(r.get(c, "")) for c in cols] for r in base]))
    if len(outcome.rows) > len(base):
        grid = [r for r in outcome.rows if r not in base]
        keys = sorted({k for r in grid for k in r if k.startswith("param.")})
        gcols = ["mode", *keys, "throughput_rps", "stall_per_checkpoint_s", "latency_p99_s", "pending_instants_max",
                 "invariants"]
        s.paragraphs.append(f"<h3>Sweep ({'quick grid: the smallest and largest value of each key' if ctx.quick else 'full grid'}"
                            f", {len(grid)} runs)</h3>")
        s.paragraphs.append(table([c.removeprefix("param.") for c in gcols],
                                  [[_num(r.get(c, "")) for c in gcols] for r in grid[:60]]))
        if len(grid) > 60:
            s.paragraphs.append(f"<p>... {len(grid) - 60} more rows in "
                                f"<code>{esc(outcome.table.relative_to(ctx.out_dir))}</code>.</p>")
    s.figures.extend(_copy_plots(outcome.plots, ctx, "sim"))
    if outcome.failures:
        s.ok = False
        s.paragraphs.append("<p class='bad'>Runs that broke an invariant (replay them):</p>"
                            + pre("\n".join(outcome.failures)))
    return s


def _num(v):
    return f"{v:.4g}" if isinstance(v, float) else v


# ------------------------------------------------------------------------------------- history
def history_section(ctx: Context) -> Section:
    """The timeline's history: archival and the LSM timeline over a simulated week"""
    cmd = f"hoodie-lab simulate history --seed {ctx.seed}" + (" --quick" if ctx.quick else "")
    title = "History: archival and the LSM timeline"
    try:
        from sim.experiments import run_named
        from model import archival
    except ImportError as exc:
        return _missing(title, cmd, exc)
    s = Section(title, cmd)
    out = ctx.out_dir / "sim" / "history"
    outcome = run_named("history", out, seed=ctx.seed, quick=ctx.quick)
    s.paragraphs.append(
        "<p>One commit a minute, with and without archival. With archival the active timeline stays between "
        "keep.min and keep.max completed commits (decisions by <code>model.archival</code>, Hudi's "
        "<code>TimelineArchiverV2</code>); the archived instants go to the LSM timeline (one L0 file a run, "
        "10 files of a level compacted into one of the next). Without it the timeline load grows with every "
        "commit until commits queue. Every archival run is checked by <code>model.invariants.history</code> "
        "(I15, I16, every completion time found).</p>")
    cols = ["mode", "commits", "commits_per_hour", "latency_mean_s", "latency_p99_s", "listing_ms_last",
            "lookup_ms_max", "active_instants_max", "lsm_files", "lsm_levels", "invariants"]
    s.paragraphs.append(table(cols, [[_num(r.get(c, "")) for c in cols] for r in outcome.rows]))
    decisions = (out / "decisions.txt").read_text().splitlines()
    s.paragraphs.append(f"<h3>Archival decisions ({len(decisions)} runs; the first three)</h3>"
                        + pre("\n".join(decisions[:3])))
    broken = [[n, v.description, ", ".join(v.breaks)] for n, v in archival.VARIANTS.items() if v.breaks]
    s.paragraphs.append("<h3>Broken designs the history suite must catch</h3>"
                        "<p>Each is caught by <code>pytest properties/test_history_broken.py</code> "
                        "(<code>HISTORY_SHRINK=1</code> prints the shrunk counterexamples).</p>"
                        + table(["design", "what it does", "invariants it breaks"], broken))
    s.figures.extend(_copy_plots(outcome.plots, ctx, "history"))
    if outcome.failures:
        s.ok = False
        s.paragraphs.append("<p class='bad'>Invariant violations:</p>" + pre("\n".join(outcome.failures[:20])))
    return s


# --------------------------------------------------------------------------------- concurrency
def concurrency_section(ctx: Context) -> Section:
    """Many writers on one timeline: OCC vs NBCC, and compaction scheduling 0.x vs 1.x"""
    cmd = f"hoodie-lab simulate concurrency --seed {ctx.seed}" + (" --quick" if ctx.quick else "")
    title = "Many writers: OCC vs NBCC, compaction scheduling 0.x vs 1.x"
    try:
        from sim.experiments import run_named
    except ImportError as exc:
        return _missing(title, cmd, exc)
    s = Section(title, cmd)
    out = ctx.out_dir / "sim" / "concurrency"
    outcome = run_named("concurrency", out, seed=ctx.seed, quick=ctx.quick)
    s.paragraphs.append(
        "<p>N writers on one MOR table with the simple bucket index, each repeating one write (30 s median), for "
        "every number of writers, overlap (the share of a write's keys in the partition all writers share) and "
        "concurrency mode. Under OCC a writer is checked at commit, under the lock, against the instants the spec "
        "picks (<code>model.concurrency.rules.candidate_instants</code>) and aborts on a shared file group "
        "(<code>conflict</code>: Hudi's <code>SimpleConcurrentFileWritesConflictResolutionStrategy</code>); it retries "
        "with a new instant and its write time is wasted. Under NBCC writers never abort each other "
        "(<code>HoodieWriteConfig#needResolveWriteConflict</code>). Settings are checked by "
        "<code>model.concurrency.settings.validate</code>; times and the lock are the TrueTime model's. The p99 "
        "latency counts committed writes only (first attempt to commit): given-up writes are not in it.</p>")
    cols = ["mode", "writers", "overlap", "commits_per_hour", "abort_rate", "wasted_fraction", "latency_p99_s",
            "gave_up", "invariants"]
    writers = [r for r in outcome.rows if r["part"] == "writers"]
    s.paragraphs.append(table(cols, [[_num(r.get(c, "")) for c in cols] for r in writers]))
    s.paragraphs.append(
        "<h3>Compaction scheduling with a streaming writer</h3><p>One deltacommit per checkpoint, a compaction "
        "scheduled every few deltacommits. The spec's <code>may_schedule_compaction</code> refuses under the 0.x rule "
        "while an older write is inflight, so the scheduler holds the writer's next instant until the plan is "
        "written; under the 1.x rule (completion-time slicing) the plan is written beside the running write.</p>")
    scols = ["mode", "commits_per_hour", "compactions_scheduled", "refusals", "stall_total_s",
             "stall_per_compaction_s", "stall_max_s", "invariants"]
    stall = [r for r in outcome.rows if r["part"] == "stall"]
    s.paragraphs.append(table(["rule", *scols[1:]], [[_num(r.get(c, "")) for c in scols] for r in stall]))
    reasons = sorted({r["refusal_reason"] for r in stall if r.get("refusal_reason")})
    if reasons:
        s.paragraphs.append("<p>The spec's reason for the first 0.x refusal:</p>" + pre(reasons[0]))
    s.figures.extend(_copy_plots(outcome.plots, ctx, "concurrency"))
    if outcome.failures:
        s.ok = False
        s.paragraphs.append("<p class='bad'>Runs that broke an invariant (replay them):</p>"
                            + pre("\n".join(outcome.failures[:20])))
    return s


# ------------------------------------------------------------------------------------- indexing
def indexing_section(ctx: Context) -> Section:
    """The metadata table and the async indexer: every design explored, and the simulation"""
    cmd = ("hoodie-lab explore --machine indexing --variant NAME; hoodie-lab simulate indexing --seed "
           f"{ctx.seed}" + (" --quick" if ctx.quick else ""))
    title = "Metadata table and async indexing"
    try:
        from checker.explorer import explore
        from checker.indexing import IndexingModel
        from model.mdt import machine as mm
        from model.mdt.variants import INDEXING_VARIANTS
        from sim.experiments import run_named
    except ImportError as exc:
        return _missing(title, cmd, exc)
    s = Section(title, cmd)
    s.paragraphs.append(
        "<p>The spec (<code>model/mdt/</code>): writers mirror each data-table commit by an MDT deltacommit of "
        "the same time before completing it; the indexer schedules up to the last contiguous completed write "
        "under the lock, marks the partition inflight, builds it, catches up instant by instant (wait for live "
        "writers, skip dead ones, apply completed ones missing from the partition under the lock), times out "
        "and aborts, or completes. Each design below is explored exhaustively at its bound; broken ones must "
        "break exactly the invariants they name, at the shortest depth recorded "
        "(<code>model.invariants.indexing</code>).</p>")
    rows, ok, example = [], True, None
    for name, v in INDEXING_VARIANTS.items():
        # quick: the correct designs at one writer (their full bounds: tests/test_explore_indexing.py)
        cfg = v.config(writers=1) if ctx.quick and not v.expected else v.config()
        model = IndexingModel(cfg)
        res = explore(model, max_states=500_000, stop_on_violation=False)
        found = {d.property: d for d in res.counterexamples}
        got = {k: d.depth for k, d in found.items()}
        good = res.complete and got == dict(v.depths)
        ok &= good
        if example is None and name == "schedule-past-hole" and found:
            d = found["I17.index-equals-rebuild"]
            example = (name, d, [model.format_action(a) for a in d.actions])
        rows.append([name + (" (finding)" if v.finding else ""), cfg.writers, f"{res.states:,}",
                     ", ".join(f"{k} @ {n}" for k, n in sorted(got.items())) or "none",
                     "index built" if "index-built" in res.discoveries else "never built",
                     "ok" if good else "UNEXPECTED"])
    s.paragraphs.append(table(["design", "writers", "states", "violations (shortest depth)", "liveness", "as expected"],
                              rows))
    if example:
        name, d, steps = example
        s.paragraphs.append(f"<h3>Shortest counterexample: {esc(name)}</h3><p>{esc(d.verdict.detail)}</p>"
                            + pre("\n".join(f"{i:3d}. {a}" for i, a in enumerate(steps, 1))))
    finding = [v for v in INDEXING_VARIANTS.values() if v.finding]
    if finding:
        s.paragraphs.append("<h3>Model finding (not confirmed against Hudi)</h3>"
                            + "".join(f"<p><b>{esc(v.name)}</b>: {esc(v.description)}</p>" for v in finding))
    out = ctx.out_dir / "sim" / "indexing"
    outcome = run_named("indexing", out, seed=ctx.seed, quick=ctx.quick)
    s.paragraphs.append(
        "<h3>An index build beside streaming writers</h3><p>The same writers (same seed per repetition) without "
        "and with the indexer, for each catch-up timeout: write latency moves only by the one extra MDT append "
        "a commit makes into the inflight partition; a short timeout aborts builds while slow writers are "
        "pending, and the indexer retries.</p>")
    cols = ["rep", "mode", "timeout_s", "commits", "latency_p50_s", "latency_p99_s", "build_s", "catchup_s",
            "aborts", "tries", "indexed", "invariants"]
    s.paragraphs.append(table(cols, [[_num(r.get(c, "")) for c in cols] for r in outcome.rows]))
    s.figures.extend(_copy_plots(outcome.plots, ctx, "indexing"))
    if outcome.failures or not ok:
        s.ok = False
        s.paragraphs.append("<p class='bad'>Unexpected results:</p>" + pre("\n".join(outcome.failures[:20])))
    return s


# -------------------------------------------------------------------------- property suites
#: Default examples per property in quick mode (tests with their own ``@settings`` keep theirs).
QUICK_MAX_EXAMPLES = 15

#: In quick mode the tests that search for counterexamples of broken variants (minutes of shrinking
#: under load: ``*catch*``, ``*finds*``, ``*_is_caught``) and the exhaustive refinement checks are deselected;
#: the report shows a few counterexamples itself and --full runs them all (``make test`` runs them too).
QUICK_DESELECT = "not catch and not finds and not caught and not exhaustive_refines"

#: The counterexample searches the report shows: suite file -> (test name part, heading). Each test
#: finds and shrinks a counterexample of a broken variant with ``hypothesis.find`` and prints it.
#: Quick mode shows the first of each suite (run on their own); full mode every one (run with the suites).
COUNTEREXAMPLE_TESTS = {
    "test_truetime_props.py": ("finds", "TrueTime, {param}"),
    "test_slicing_props.py": ("finds", "Slicing, instant-time rule on an overlapping write"),
}
#: The timeline state machine against each broken timeline (one test per broken variant; full mode).
BROKEN_TIMELINE_TEST = ("test_timeline_props.py", "test_machine_catches_broken_variant")


def _param(nodeid: str) -> str:
    """The parameter id of a test node id (``...::test[param]`` -> ``param``), else ""."""
    return nodeid.split("[", 1)[1][:-1] if nodeid.endswith("]") and "[" in nodeid else ""


def _is(nodeid: str, suite: str, name_part: str) -> bool:
    file, _, test = nodeid.partition("::")
    return file.split("/")[-1] == suite and name_part in test


def _property_counterexamples(ctx: Context, run) -> tuple[list[str], bool]:
    """Shrunk counterexamples of the broken variants, as printed by the suites' own counterexample tests.

    ``run`` is the suites' :class:`properties.runner.RunResult`. In quick mode those tests were deselected;
    the first of each suite of :data:`COUNTEREXAMPLE_TESTS` is run here on its own.
    """
    from properties.runner import run as run_tests

    paras, ok = [], True
    if ctx.quick:
        picked = []
        for suite, (part, _) in COUNTEREXAMPLE_TESTS.items():
            picked += [n for n in run.deselected if _is(n, suite, part)][:1]
        tests = run_tests([str(REPO / n.split("::")[0]) + "::" + n.split("::", 1)[1] for n in picked],
                          profile=os.environ.get("HYPOTHESIS_PROFILE", "ci"), markers=None, timeout=900).tests
        if len(tests) != len(picked):
            ok = False
            paras.append(f"<p class='bad'>Expected {len(picked)} counterexample searches, ran {len(tests)}.</p>")
    else:
        tests = run.tests
    for suite, (part, heading) in COUNTEREXAMPLE_TESTS.items():
        for t in (t for t in tests if _is(t.nodeid, suite, part)):
            ok &= t.outcome == "passed"
            paras.append(f"<h4>{esc(heading.format(param=_param(t.nodeid)))}</h4>")
            paras.append(pre(t.output.strip() if t.outcome == "passed" else f"{t.outcome}: {t.message}"))

    if ctx.quick:
        paras.append("<p>Quick mode: the other broken variants (timeline state machine, codec, protocol) are "
                     "searched by their suites with <code>hoodie-lab report --full</code> or "
                     "<code>pytest properties</code>; protocol counterexamples are also in the exploration "
                     "section.</p>")
        return paras, ok

    # Timeline: each broken timeline / generator variant is caught by the state machine; the test prints
    # "<variant>: caught: <first violated check>" when the check is one it expects.
    rows = []
    for t in sorted((t for t in tests if _is(t.nodeid, *BROKEN_TIMELINE_TEST)), key=lambda t: t.nodeid):
        name = _param(t.nodeid)
        if t.outcome == "passed":
            rows.append([name, "caught", t.output.partition(": caught: ")[2].strip().splitlines()[0][:300]
                         if ": caught: " in t.output else ""])
        else:
            ok = False
            caught = "DID NOT RAISE" not in t.message
            rows.append([name, "caught by an unexpected check" if caught else "NOT CAUGHT",
                         t.message.strip().splitlines()[-1][:300] if caught and t.message.strip() else ""])
    paras.append("<h4>Timeline state machine vs broken timelines</h4>")
    paras.append(table(["broken variant", "result", "first invariant violated"], rows))
    return paras, ok


def properties_section(ctx: Context) -> Section:
    """Property suites: examples, verdicts and counterexamples of broken variants"""
    from properties.runner import list_suites, run as run_tests

    mode = "quick" if ctx.quick else "full"
    s = Section("Property suites (Hypothesis)",
                "pytest properties -m 'not slow'" + ("" if not ctx.quick else
                                                      f" -k '{QUICK_DESELECT}'  (quick: {QUICK_MAX_EXAMPLES} "
                                                      "examples per property; --full: the ci profile, every test)"))
    suites = list_suites(REPO / "properties")
    s.paragraphs.append(f"<p>{len(suites)} suites run by pytest in a fresh interpreter ({mode} mode); example "
                        "counts come from Hypothesis' own statistics. Tests with their own settings (the "
                        "searches for counterexamples of broken variants) keep their budgets.</p>")
    run = run_tests([str(x.path) for x in suites], profile=os.environ.get("HYPOTHESIS_PROFILE", "ci"),
                    max_examples=QUICK_MAX_EXAMPLES if ctx.quick else None,
                    select=QUICK_DESELECT if ctx.quick else None, timeout=1800)
    if not run.ran:
        s.ok = False
        s.paragraphs.append("<p class='bad'>The suites did not run:</p>" + pre(run.output[-3000:]))
        return s
    docs = {x.name: x.doc for x in suites}
    s.paragraphs.append(table(["suite", "what it checks", "tests", "passed", "failed", "skipped", "examples",
                               "seconds"],
                              [[r.name, docs.get(r.name, ""), len(r.tests), r.passed, r.failed, r.skipped, r.examples,
                                f"{r.seconds:.1f}"] for r in run.suites]))
    if run.steps:
        s.paragraphs.append(f"<p>Protocol state machines executed {run.steps:,} steps "
                            "(<code>properties/test_protocol_machine.STEPS</code>), each followed by every step "
                            "invariant of <code>model.invariants.protocol</code>.</p>")
    s.paragraphs.append("<details><summary>Every test</summary>" + table(
        ["test", "outcome", "examples", "seconds"],
        [[t.nodeid.split("/")[-1], t.outcome, t.examples, f"{t.seconds:.2f}"]
         for t in sorted(run.tests, key=lambda t: t.nodeid)]) + "</details>")
    failed = [t for t in run.tests if t.outcome == "failed"]
    if failed or not run.ok:
        s.ok = False
        s.paragraphs.append("<p class='bad'>Failing tests:</p>"
                            + "".join(f"<h4>{esc(t.nodeid)}</h4>" + pre(t.message) for t in failed))
    s.paragraphs.append("<h3>Counterexamples of the broken variants</h3><p>Each deliberately broken variant "
                        "is searched with the suite's own strategy and check (<code>hypothesis.find</code>); "
                        "the shrunk counterexample the suite's test prints is shown.</p>")
    paras, ok = _property_counterexamples(ctx, run)
    s.paragraphs.extend(paras)
    s.ok &= ok
    return s


# --------------------------------------------------------------------------------- exploration
#: (variant, bounds) explored exhaustively; quick and full sizes. A correct design must show no
#: violation; a broken variant must yield its shortest counterexample.
_LOST_ACK_CRASH = ("lost-ack", "task-crash")
_BROKEN_RUNS = [("broken-commit-eq", dict(parallelism=1, max_checkpoints=2), ()),
                ("no-coordinator-snapshot", dict(parallelism=1, max_checkpoints=3, max_crashes=1),
                 ("lost-ack", "coordinator-crash")),
                ("bug-19215", dict(parallelism=1, max_checkpoints=3, max_crashes=1), ("lost-ack", "full-restart"))]
EXPLORE_RUNS = {
    True: [("hudi-1.1", dict(parallelism=1, max_checkpoints=2, max_crashes=1), _LOST_ACK_CRASH),
           ("hudi-1.1-blocking", dict(parallelism=1, max_checkpoints=3, max_crashes=1), _LOST_ACK_CRASH),
           *_BROKEN_RUNS],
    False: [("hudi-1.1", dict(parallelism=2, max_checkpoints=2), ()),
            ("hudi-1.1", dict(parallelism=1, max_checkpoints=3, max_crashes=1), _LOST_ACK_CRASH),
            ("hudi-1.1-blocking", dict(parallelism=2, max_checkpoints=2), ()),
            ("hudi-1.1-blocking", dict(parallelism=1, max_checkpoints=3, max_crashes=1), _LOST_ACK_CRASH),
            *_BROKEN_RUNS],
}


def explore_variant(name: str, bounds: dict, faults: tuple = (), max_states: int = 2_000_000):
    """Explore one named protocol variant; returns ``(config, model, ExploreResult)``."""
    from checker import SystemModel, explore
    from model.protocol import variant

    cfg = variant(name, faults=frozenset(faults), **bounds)
    model = SystemModel(cfg)
    return cfg, model, explore(model, max_states=max_states)


def exploration_section(ctx: Context) -> Section:
    """Exhaustive exploration of the writer-coordinator protocol"""
    from checker.replay import format_result, replay
    from lakeio.traces import load_trace, write_trace
    from model.protocol import VARIANTS

    s = Section("Exhaustive exploration of the protocol",
                "hoodie-lab explore --variant NAME --writers W --checkpoints C [--faults F --crashes N]")
    s.paragraphs.append("<p>Every interleaving of the protocol's events up to a bound, breadth first "
                        "(<code>hoodie_lab.explore</code> over <code>model.protocol.System</code>); the step "
                        "invariants are checked in every state, exactly-once and liveness after draining the "
                        "states where the run can settle. Correct designs must show no violation; a broken "
                        "variant must show its shortest counterexample, which is replayed through "
                        "<code>hoodie-lab replay</code>.</p>")
    rows, traces = [], []
    for name, bounds, faults in EXPLORE_RUNS[ctx.quick]:
        cfg, model, res = explore_variant(name, bounds, faults)
        ce = res.counterexample
        expected_bad = bool(VARIANTS[name].expected)
        good = (ce is not None) if expected_bad else (ce is None and res.complete)
        s.ok &= good
        cmd = (f"hoodie-lab explore --variant {name} --writers {cfg.parallelism} --checkpoints {cfg.max_checkpoints}"
               + (f" --faults {','.join(faults)} --crashes {cfg.max_crashes}" if faults else " --faults none"))
        rows.append([name, cmd, f"{res.states:,}", f"{res.transitions:,}", res.max_depth, res.stop_reason,
                     ce.property if ce else "none", "as expected" if good else "UNEXPECTED"])
        if ce is not None:
            events = model.trace_events(ce)
            path = write_trace(ctx.out_dir / "traces" / f"explore-{name}.jsonl", cfg, events, seed=0,
                               driver="explore", variant=name)
            rep = replay(load_trace(path))
            steps = "\n".join(f"{i:3d}. {ev}" for i, ev in enumerate(events, 1))
            traces.append((name, path, steps, format_result(rep)))
            s.ok &= not rep.ok
    s.paragraphs.append(table(["variant", "command", "states", "transitions", "depth", "stopped", "counterexample",
                               "verdict"], rows))
    for name, path, steps, replayed in traces:
        s.paragraphs.append(f"<h3>Shortest counterexample of {esc(name)}</h3>"
                            f"<p>Replay: <code class='cmd'>hoodie-lab replay {esc(path.relative_to(ctx.out_dir))}</code>"
                            f" (in the report folder)</p>" + pre(steps) + pre(replayed))
    return s


# ------------------------------------------------------------------------------------- pipeline
#: The report's pipeline run: small and quick (one Spark start).
PIPELINE_RUN = {True: dict(mode="async", table_type="mor", records=60, batches=3),
                False: dict(mode="async", table_type="mor", records=400, batches=5)}


def java_available() -> str | None:
    """Why Spark cannot run here (no Java, no PySpark), or None when it can."""
    if importlib.util.find_spec("pyspark") is None:
        return "PySpark is not installed"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java is not installed (no `java` on PATH and JAVA_HOME unset)"
    return None


def pipeline_section(ctx: Context) -> Section:
    """A small pipeline run on Spark and its diff against the model"""
    import subprocess

    run = PIPELINE_RUN[ctx.quick]
    args = ["pipeline", "run", "--mode", run["mode"], "--table-type", run["table_type"], "--records",
            str(run["records"]), "--batches", str(run["batches"]), "--seed", str(ctx.seed)]
    s = Section("The pipeline vs the model", "hoodie-lab " + " ".join(args) + " --out RUN && hoodie-lab diff RUN")
    why = java_available()
    if why:
        s.paragraphs.append(f"<p>Skipped: {esc(why)}. The pipeline needs a local Spark.</p>")
        return s
    with tempfile.TemporaryDirectory(prefix="hoodie-lab-report-pipeline-") as tmp:
        rd = Path(tmp) / "run"
        proc = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", *args, "--out", str(rd)], cwd=REPO,
                              capture_output=True, text=True, timeout=900)
        s.paragraphs.append("<p>The PySpark Structured Streaming job (file source, one micro-batch per input "
                            "file) writes a real Hudi table through the protocol model; <code>diff</code> replays "
                            "the run through the model and compares instants, committed files and table "
                            "contents (read back by hudi-rs).</p>")
        s.paragraphs.append("<h3>Run</h3><p><small>(in a temporary run dir, removed after the report)</small></p>"
                            + pre(proc.stdout.strip()[-4000:]))
        if proc.returncode != 0:
            s.ok = False
            s.paragraphs.append(f"<p class='bad'>pipeline run exited {proc.returncode}</p>"
                                + pre(proc.stderr.strip()[-4000:]))
            return s
        from pipeline.diff import diff_run

        rep = diff_run(rd)
        s.ok &= rep.ok
        s.paragraphs.append("<h3>Diff against the model</h3>" + pre(rep.render()))
        s.paragraphs.append("<h3>The table read back by hudi-rs</h3>" + _hudi_rs_summary(rd / "table"))
    return s


def _hudi_rs_summary(path: Path) -> str:
    """Rows and timeline as hudi-rs (the independent reader) sees the table."""
    from hudi import HudiTable

    t = HudiTable(str(path))
    batches = t.read()
    n = sum(b.num_rows for b in batches)
    tl = t.get_timeline()
    commits = [f"{i.timestamp} {i.action}" for i in tl.get_completed_commits() + tl.get_completed_deltacommits()]
    slices = t.get_file_slices()
    rows = [[fs.partition_path, fs.file_id, fs.creation_instant_time, fs.base_file_name or "-",
             len(fs.log_file_names)] for fs in slices]
    sample = []
    if batches:
        import pyarrow as pa

        tbl = pa.Table.from_batches(batches)
        cols = [c for c in ("key", "ts", "partition", "payload") if c in tbl.column_names]
        sample = tbl.select(cols).sort_by([(cols[0], "ascending")]).slice(0, 5).to_pylist() if cols else []
    return (f"<p>{n} rows; {len(commits)} completed commits/deltacommits; {len(slices)} file slices.</p>"
            + table(["partition", "file id", "base instant", "base file", "log files"], rows)
            + (table(list(sample[0]), [list(r.values()) for r in sample]) if sample else ""))


# ----------------------------------------------------------------------------------- registry
#: Section builders in report order.
def liveness_section(ctx: Context) -> Section:
    """Liveness: the temporal properties under fairness, each broken design's lasso drawn"""
    cmd = "hoodie-lab explore --liveness --variant NAME --writers 1 --checkpoints 1 --records 2 --faults lost-ack"
    title = "Liveness: temporal properties under fairness"
    try:
        from checker.archival import ArchivalLiveModel
        from checker.indexing import IndexingLiveModel
        from checker.liveness import check_liveness, check_model_liveness, draw_lasso
        from model.archival_machine import ARCHIVAL_LIVENESS_VARIANTS
        from model.invariants.temporal import ARCHIVAL_TEMPORAL, DESCRIPTIONS, INDEXING_TEMPORAL, TEMPORAL
        from model.mdt.variants import INDEXING_LIVENESS_VARIANTS
        from model.protocol.variants import LIVENESS_VARIANTS
    except ImportError as exc:
        return _missing(title, cmd, exc)
    s = Section(title, cmd)
    s.paragraphs.append(
        "<p>Leads-to properties (<code>model.invariants.temporal</code>) judged by <code>checker.liveness</code> "
        "over the explored graph plus each stuck state's fair continuation, under weak fairness of the "
        "protocol's own steps (faults and the instant timeout are not fair). A violation is a lasso: a prefix, "
        "then a cycle forever (stuttering or an idle checkpoint round) with one obligation open throughout.</p>"
        + table(["property", "meaning"], [[p, DESCRIPTIONS[p]] for p in (*TEMPORAL, *INDEXING_TEMPORAL,
                                                                          *ARCHIVAL_TEMPORAL)]))
    def judge(rows: list, name: str, v, r) -> None:
        """One design's row (its must-break set against what the checker found) and its first lasso drawn."""
        found = sorted(r.violations)
        ok = set(v.breaks) == set(found) if v.breaks else r.holds
        s.ok = s.ok and ok
        rows.append([name, ", ".join(sorted(v.unfair)) or "-", f"{r.states:,}", ", ".join(v.breaks) or "(none)",
                     ", ".join(found) or "(none)", "as expected" if ok else "UNEXPECTED"])
        for prop in v.breaks[:1]:
            lasso = r.violations.get(prop)
            if lasso is not None:
                png = ctx.fig_dir / f"lasso-{name}.png"
                draw_lasso(lasso, str(png), title=f"{name}: {prop}")
                s.figures.append(png)

    header = ["design", "not fair", "states", "must break", "violated", "verdict"]
    rows: list = []
    for name, v in LIVENESS_VARIANTS.items():
        cfg = v.config(parallelism=1, max_checkpoints=1, records=2, buffer_size=2, faults=frozenset({"lost-ack"}))
        judge(rows, name, v, check_liveness(cfg, unfair=v.unfair))
    s.paragraphs.append("<h3>The streaming protocol</h3>" + table(header, rows))
    rows = []
    for name, v in INDEXING_LIVENESS_VARIANTS.items():  # correct designs at one writer, broken at their bound
        cfg = v.config() if v.breaks else v.config(writers=1)
        judge(rows, name, v, check_model_liveness(IndexingLiveModel(cfg, v.unfair)))
    s.paragraphs.append(
        "<h3>The asynchronous indexer</h3><p><code>hoodie-lab explore --machine indexing --liveness --variant NAME"
        "</code> (the correct designs here with <code>--writers 1</code>).</p>" + table(header, rows))
    rows = []
    for name, v in ARCHIVAL_LIVENESS_VARIANTS.items():
        judge(rows, name, v, check_model_liveness(ArchivalLiveModel(v.config(), v.unfair)))
    s.paragraphs.append(
        "<h3>Archival</h3><p><code>hoodie-lab explore --machine archival --liveness --variant NAME</code>: "
        "writers, a LAZY cleaner and the archiver.</p>" + table(header, rows))
    return s


BUILDERS: list[Callable[[Context], Section]] = [
    slicing_section,
    properties_section,
    simulation_section,
    history_section,
    concurrency_section,
    indexing_section,
    liveness_section,
    exploration_section,
    pipeline_section,
    real_tables_section,
]


def builders(names: list[str] | None = None) -> list[Callable[[Context], Section]]:
    """The builders to run (all by default, else those whose name starts with one of ``names``)."""
    if not names:
        return list(BUILDERS)
    return [b for b in BUILDERS if any(b.__name__.startswith(n) for n in names)]
