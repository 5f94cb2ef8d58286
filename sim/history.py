"""The timeline's history over a simulated week: timeline growth with and without archival (experiment ``history``).

A SimPy process commits every ``commit_every_s`` (1 minute by default) for ``days`` (7: 10,080 commits). Each
commit's latency is its fixed work plus the cost of loading the active timeline (a listing: base + per file, three
state files per instant), plus the cost of one completion-time lookup of an instant ``lookup_age_commits`` commits
old (a map hit on the active timeline; else the LSM data files the spec's ``CompletionTimeQueryView`` reads, per
file), plus, in mode ``archival``, the archival run's storage calls (each step of :mod:`model.archival`'s job: the
L0 write, manifest and ``_version_`` writes, the active-file deletions, LSM compaction and cleaning). Commits queue
when a commit takes longer than the period.

The archival decisions and the LSM state are the spec's (:func:`model.archival.archive`; nothing here restates a
rule); after every archival run the history invariants are checked (:mod:`model.invariants.history`) and the
looked-up instant's completion time must be found. Output: one row per mode (mean/p99 latency, commits per hour,
active-timeline size, LSM files per level) and per-commit series, plotted by :func:`plot`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import simpy

from model import archival as A, lsm
from model.completion_time import CompletionTimeQueryView
from model.instant import Action, State, format_millis
from model.invariants import history as H

MODES = ("archival", "no-archival")
T0_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


@dataclass
class Series:
    t_s: list[float] = field(default_factory=list)
    latency_s: list[float] = field(default_factory=list)
    listing_ms: list[float] = field(default_factory=list)
    lookup_ms: list[float] = field(default_factory=list)
    archival_ms: list[float] = field(default_factory=list)
    active_instants: list[int] = field(default_factory=list)
    levels: list[dict] = field(default_factory=list)  # level -> files in the latest manifest
    decisions: list[str] = field(default_factory=list)  # the "why" of every archival run that archived


@dataclass
class Result:
    mode: str
    seed: int
    series: Series
    summary: dict
    failures: list[str]


def archival_config(p: dict) -> A.ArchivalConfig:
    h = p["history"]
    base = A.PRESETS[h["preset"]]
    return A.ArchivalConfig(max_commits=h["keep_max_commits"] or base.max_commits,
                            min_commits=h["keep_min_commits"] or base.min_commits,
                            batch=h["archival_batch"], compaction_batch=h["timeline_compaction_batch"],
                            cleaner_commits_retained=min(base.cleaner_commits_retained,
                                                         (h["keep_min_commits"] or base.min_commits) - 1))


def run(params: dict, mode: str, seed: int, quick: bool = False) -> Result:
    """One run of ``mode`` (``archival`` | ``no-archival``)."""
    h = params["history"]
    cfg = archival_config(params).validate()
    rng = random.Random(seed)
    days = h["quick_days"] if quick else h["days"]
    period = h["commit_every_s"]
    n_commits = int(days * 86_400 // period)
    env = simpy.Environment()
    committer = simpy.Resource(env, capacity=1)
    series = Series()
    failures: list[str] = []
    state = {"s": A.HistoryState(), "n": 0, "times": []}
    per_file = h["listing_ms_per_file"]
    storage_ms = h["storage_call_ms"]

    def t_of(ms: int) -> str:
        return format_millis(T0_MS + ms)

    def commit(k: int, arrival: float):
        with committer.request() as req:
            yield req
            rt = t_of(int(env.now * 1000))
            archiving = mode == "archival"
            s = state["s"]
            if archiving:
                files = {A.ActiveFile(rt, Action.COMMIT, State.REQUESTED),
                         A.ActiveFile(rt, Action.COMMIT, State.INFLIGHT)}
                s = A.HistoryState(s.active | files, s.lsm)
                active_files = len(s.active)
            else:  # nothing leaves the active timeline: only its size matters (three files per instant)
                state["n"] += 1
                active_files = 3 * state["n"] - 1
            listing = h["listing_base_ms"] + per_file * active_files
            lookup_ms = 0.0
            if archiving and len(state["times"]) > h["lookup_age_commits"]:
                old, old_ct = state["times"][-h["lookup_age_commits"]]
                res = CompletionTimeQueryView(A.active_timeline(s), s.lsm).lookup(old)
                lookup_ms = h["lsm_file_read_ms"] * len(res.files_read)
                if res.completion_time != old_ct:
                    failures.append(f"H.completion-found: {old} -> {res.completion_time} != {old_ct} (commit {k})")
            work = h["commit_work_s"] * (1 + 0.2 * rng.random())
            yield env.timeout(work + (listing + lookup_ms) / 1000)
            ct = t_of(int(env.now * 1000))
            state["times"].append((rt, ct))
            arch_ms = 0.0
            lv: dict[int, int] = {}
            if archiving:
                s = A.HistoryState(s.active | {A.ActiveFile(rt, Action.COMMIT, State.COMPLETED, ct)}, s.lsm)
                d, started = A.start(s, cfg)
                steps = 0
                while started.job:
                    head = started.job[0]
                    started = A.step(started, cfg)
                    if head.kind not in ("compact-level", "clean-lsm"):
                        steps += 1
                s = started
                arch_ms = steps * storage_ms
                if d.archives:
                    series.decisions.append(f"{env.now:.0f}s: {d.why}")
                    bad = [v for v in H.history_verdicts(s, cfg) + H.decision_verdicts(d, cfg)
                           + [H.active_bounded(A.active_timeline(s), cfg)] if not v.holds]
                    failures.extend(f"{v} (commit {k}, seed {seed})" for v in bad)
                yield env.timeout(arch_ms / 1000)
                state["s"] = s
                for name in (lsm.latest_manifest(s.lsm) if s.lsm.manifests else ()):
                    lev = lsm.parse_data_file_name(name).level
                    lv[lev] = lv.get(lev, 0) + 1
                n_active = len({(f.requested_time, f.action) for f in s.active})
            else:
                n_active = state["n"]
            series.t_s.append(env.now)
            series.latency_s.append(env.now - arrival)
            series.listing_ms.append(listing)
            series.lookup_ms.append(lookup_ms)
            series.archival_ms.append(arch_ms)
            series.active_instants.append(n_active)
            series.levels.append(lv)

    def source():
        for k in range(n_commits):
            env.process(commit(k, env.now))
            yield env.timeout(period)

    env.process(source())
    env.run()
    lat = sorted(series.latency_s)
    hours = max(env.now / 3600, 1e-9)
    last = series.levels[-1] if series.levels else {}
    summary = {
        "commits": len(lat), "commits_per_hour": len(lat) / hours,
        "latency_mean_s": sum(lat) / len(lat) if lat else 0.0,
        "latency_p99_s": lat[int(0.99 * (len(lat) - 1))] if lat else 0.0,
        "listing_ms_last": series.listing_ms[-1] if series.listing_ms else 0.0,
        "lookup_ms_max": max(series.lookup_ms, default=0.0),
        "active_instants_max": max(series.active_instants, default=0),
        "active_instants_last": series.active_instants[-1] if series.active_instants else 0,
        "archival_runs": len(series.decisions),
        "lsm_files": sum(last.values()), "lsm_levels": max(last, default=-1) + 1,
        "invariants": "ok" if not failures else f"{len(failures)} violated",
    }
    return Result(mode, seed, series, summary, failures)


def plot(results: dict[str, Result], out_dir: Path, title: str) -> list[Path]:
    """Active-timeline size, commit latency (with its parts) and the LSM levels over simulated time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lakeio.plots import save

    colours = {"archival": "#1f77b4", "no-archival": "#d62728"}
    fig, axes = plt.subplots(2, 2, figsize=(12, 7.5))
    for mode, r in results.items():
        days = [t / 86_400 for t in r.series.t_s]
        axes[0][0].plot(days, r.series.active_instants, label=mode, color=colours.get(mode), lw=1)
        axes[0][1].plot(days, r.series.latency_s, label=mode, color=colours.get(mode), lw=0.8)
        axes[1][0].plot(days, [a + b for a, b in zip(r.series.listing_ms, r.series.lookup_ms)], label=mode,
                        color=colours.get(mode), lw=0.8)
    axes[0][0].set_ylabel("instants on the active timeline")
    axes[0][0].set_title("active timeline size")
    axes[0][1].set_ylabel("commit latency (s)")
    axes[0][1].set_title("commit latency (queueing included)")
    axes[1][0].set_ylabel("timeline load + lookup (ms per commit)")
    axes[1][0].set_title("listing and completion-time lookup cost")
    ar = results.get("archival")
    ax = axes[1][1]
    if ar is not None and ar.series.levels:
        days = [t / 86_400 for t in ar.series.t_s]
        top = max((max(lv, default=-1) for lv in ar.series.levels), default=-1)
        for lev in range(top + 1):
            ax.plot(days, [lv.get(lev, 0) for lv in ar.series.levels], label=f"L{lev}", lw=1)
        ax.legend(fontsize=8)
    ax.set_ylabel("data files in the latest manifest")
    ax.set_title("LSM timeline: files per level (mode archival)")
    for a in axes.flat:
        a.set_xlabel("simulated time (days)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return save(fig, out_dir, "history")


__all__ = ["MODES", "Series", "Result", "archival_config", "run", "plot"]
