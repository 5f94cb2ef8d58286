"""The demo scenario: a synthetic table with overlapping writes and a pending compaction, audited under both
slicing rules (shared by ``hoodie-lab demo`` and the report's slicing section, so neither imports the other).

Builds the scenario in the model (:class:`model.timeline.Timeline`, model file names), writes it
as a skeleton table (placeholder data files, real timeline files and plans:
:mod:`lakeio.ondisk.skeleton`) into a given folder and audits it under both slicing rules
(:func:`run_skeleton_demo`); ``hoodie-lab demo`` prints both and what differs.

The scenario (table version 9, MERGE_ON_READ, times are ms after 2025-01-01 00:00:00 UTC):

* deltacommit 100 inserts file groups ``fg1`` and ``fg2`` (completes 150);
* deltacommit 200 appends a log to ``fg1`` (completes 250);
* deltacommits 300 and 350 start; 350 (log on ``fg2``) completes at 380;
* compaction 400 is scheduled (pending) -- its plan takes only logs completed before 400 (I9);
* deltacommit 300 (log on ``fg1``) completes at 450: it **overlaps** the compaction;
* deltacommit 500 appends to ``fg1`` (completes 550); deltacommit 600 is still inflight (log on ``fg2``).

Under the completion-time rule (tv8+, the table's own rule) log 300 completed after compaction 400
was requested, so it joins the pending compaction's slice 400 together with log 500; log 350
completed before, stays in slice 100 and is in the plan. Under the instant-time rule (0.x) a log
goes to the slice named by the instant in its file name -- a 0.x writer put the base instant there,
but a 1.x writer puts its own instant, so a 0.x reader of these files makes every log the start of
a slice of its own: the latest slice of ``fg1`` holds only log 500, and the base file and logs 200
and 300 drop out of the latest view. :func:`run_skeleton_demo` reports the differences.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from model import filenames as fn
from model.instant import Action
from model.timeline import Timeline

EPOCH_PREFIX = "2025010100"


def t(ms: int) -> str:
    """A 17-digit time ``ms`` milliseconds after 2025-01-01 00:00:00 UTC (ms < 60 000)."""
    return f"{EPOCH_PREFIX}{ms // 60000:02d}{(ms // 1000) % 60:02d}{ms % 1000:03d}"


def build_scenario(version: int = 9) -> tuple[Timeline, list[fn.BaseFile], list[fn.LogFile]]:
    """The model timeline and files of the demo (see module doc)."""
    tl = Timeline(version)

    def start(x, action=Action.DELTACOMMIT):
        tl.create(t(x), action)
        tl.transition_to_inflight(t(x), action)

    start(100); tl.complete(t(100), Action.DELTACOMMIT, t(150))
    start(200); tl.complete(t(200), Action.DELTACOMMIT, t(250))
    start(300)
    start(350); tl.complete(t(350), Action.DELTACOMMIT, t(380))
    tl.create(t(400), Action.COMPACTION)
    tl.complete(t(300), Action.DELTACOMMIT, t(450))
    start(500); tl.complete(t(500), Action.DELTACOMMIT, t(550))
    start(600)
    base = [fn.BaseFile("fg1-0", "0-1-1", t(100), partition="region=eu"),
            fn.BaseFile("fg2-0", "0-1-2", t(100), partition="region=eu")]
    logs = [fn.LogFile("fg1-0", t(200), 1, "0-2-1", partition="region=eu"),
            fn.LogFile("fg1-0", t(300), 1, "0-3-1", partition="region=eu"),
            fn.LogFile("fg2-0", t(350), 1, "0-4-1", partition="region=eu"),
            fn.LogFile("fg1-0", t(500), 1, "0-5-1", partition="region=eu"),
            fn.LogFile("fg2-0", t(600), 1, "0-6-1", partition="region=eu")]
    return tl, base, logs


@dataclass
class DemoResult:
    """What the demo built and found; ``results`` maps rule -> :class:`lakeio.audit.AuditResult`."""

    table_path: Path
    results: dict = field(default_factory=dict)
    differences: list[str] = field(default_factory=list)

    #: What the scenario is built to show: the 1.x rule keeps every committed write, and the
    #: 0.x rule applied to the same overlap loses some (and only that invariant fails).
    EXPECTED_INSTANT_TIME_VIOLATIONS = ("I8.snapshot-completeness",)

    @property
    def ok(self) -> bool:
        ct, it = self.results.get("completion-time"), self.results.get("instant-time")
        if ct is None or it is None:
            return False
        failed = tuple(sorted(v.invariant for v in it.verdicts if not v.holds))
        return ct.ok and failed == self.EXPECTED_INSTANT_TIME_VIOLATIONS


def _slices_by_group(result) -> dict[tuple[str, str], tuple[str, str | None, tuple[str, ...]]]:
    return {(s.partition, s.file_id): (s.base_instant, s.base_file.name if s.base_file else None,
                                       tuple(lf.name for lf in s.log_files)) for s in result.slices}


def run_skeleton_demo(out_dir: str | Path) -> DemoResult:
    """Write the demo skeleton table under ``out_dir`` and audit it under both rules.

    Returns a :class:`DemoResult`; ``differences`` lists, per file group, how the latest slices
    differ between the rules, then verdicts that differ.
    """
    from lakeio.audit import audit_table
    from lakeio.ondisk.skeleton import write_skeleton

    tl, base, logs = build_scenario()
    path = write_skeleton(Path(out_dir) / "demo_overlap_v9", tl, base, logs, name="demo_overlap_v9")
    res = DemoResult(path)
    for rule in ("completion-time", "instant-time"):
        res.results[rule] = audit_table(path, rule=rule)
    a = _slices_by_group(res.results["completion-time"])
    b = _slices_by_group(res.results["instant-time"])
    for fg in sorted(set(a) | set(b)):
        if a.get(fg) != b.get(fg):
            res.differences.append(f"file group {fg[0]}/{fg[1]}: completion-time latest slice {_fmt(a.get(fg))}; "
                                   f"instant-time latest slice {_fmt(b.get(fg))}")
    # the slice-placement invariant is I6 under one rule and I7 under the other: compare them as one
    def by_name(result):
        return {("I6/I7.slice-placement" if v.invariant.startswith(("I6.", "I7.")) else v.invariant): v
                for v in result.verdicts}

    va, vb = by_name(res.results["completion-time"]), by_name(res.results["instant-time"])
    for name in sorted(set(va) | set(vb)):
        x, y = va.get(name), vb.get(name)
        if x is None or y is None or x.holds != y.holds:
            res.differences.append(f"{name}: completion-time {x or 'n/a'}; instant-time {y or 'n/a'}")
    return res


def _fmt(s) -> str:
    if s is None:
        return "(none)"
    base_instant, base, logs = s
    return f"base instant {base_instant}, base {base or '-'}, logs [{', '.join(logs) or '-'}]"
