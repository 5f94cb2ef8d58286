"""Plots shared by the report, the notebooks and the CLI (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from model.instant import Action, Instant, to_millis  # noqa: E402

#: One colour per action, stable across every figure of the project.
ACTION_COLOURS = {
    Action.COMMIT: "#1f77b4",
    Action.DELTACOMMIT: "#2ca02c",
    Action.COMPACTION: "#d62728",
    Action.LOGCOMPACTION: "#ff7f0e",
    Action.REPLACECOMMIT: "#9467bd",
    Action.CLUSTERING: "#8c564b",
    Action.CLEAN: "#7f7f7f",
    Action.ROLLBACK: "#e377c2",
    Action.SAVEPOINT: "#bcbd22",
    Action.RESTORE: "#17becf",
    Action.INDEXING: "#393b79",
}


def timeline_gantt(instants: Iterable[Instant], title: str = "", ax=None, now: str | None = None):
    """Draw requested -> completion per instant, one row each, coloured by action.

    Pending instants are drawn hatched up to ``now`` (default: the latest time
    on the timeline). Times are shown in seconds since the first instant.
    Returns the matplotlib Figure.
    """
    instants = sorted(instants, key=lambda i: (i.requested_time, i.action.value))
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 0.35 * max(len(instants), 3) + 1.2))
    else:
        fig = ax.figure
    if not instants:
        ax.set_title(title or "empty timeline")
        return fig
    t0 = min(to_millis(i.requested_time) for i in instants)
    ends = [to_millis(i.completion_time) for i in instants if i.completion_time]
    horizon = to_millis(now) if now else max(ends + [to_millis(i.requested_time) for i in instants])
    seen: set[Action] = set()
    for row, inst in enumerate(instants):
        start = (to_millis(inst.requested_time) - t0) / 1000.0
        end = (to_millis(inst.completion_time) - t0) / 1000.0 if inst.completion_time else (horizon - t0) / 1000.0
        # a minimum width (0.2 % of the span, in seconds) keeps instantaneous instants visible
        width = max(end - start, 0.002 * max(horizon - t0, 1) / 1000.0)
        colour = ACTION_COLOURS.get(inst.action, "#333333")
        label = inst.action.value if inst.action not in seen else None
        seen.add(inst.action)
        ax.barh(row, width, left=start, color=colour, alpha=0.9 if inst.completion_time else 0.35,
                hatch=None if inst.completion_time else "//", edgecolor=colour, label=label)
    ax.set_yticks(range(len(instants)))
    ax.set_yticklabels([f"{i.requested_time} {i.state.label}" for i in instants], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the first requested time")
    ax.set_title(title or "timeline: requested -> completion per instant")
    # outside the axes, so it never hides a bar
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    fig.tight_layout()
    return fig


def save(fig, out_dir: Path, stem: str) -> list[Path]:
    """Save a figure as PNG and SVG; returns both paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=110)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths


#: Line style per concurrency mode (the many-writers experiment), colours per overlap fraction.
MODE_STYLES = {"occ": "-", "nbcc": "--", "single_writer": ":"}


def concurrency_sweep(rows: list[dict], out_dir: Path, title: str) -> list[Path]:
    """The many-writers sweep against the number of writers: commit throughput, abort rate, p99 commit latency
    and wasted work, one line per (mode, overlap) -- solid OCC, dashed NBCC; colour by overlap.

    ``rows``: one dict per run with ``mode``, ``writers``, ``overlap``, ``commits_per_hour``, ``abort_rate``,
    ``latency_p99_s``, ``wasted_fraction`` (what :func:`sim.concurrency.run_writers` summarises).
    """
    panels = [("commits_per_hour", "commits per simulated hour", "commit throughput"),
              ("abort_rate", "aborted attempts / attempts", "abort rate (write-write conflicts)"),
              ("latency_p99_s", "p99 commit latency (s, retries included)", "p99 commit latency"),
              ("wasted_fraction", "write time of aborted attempts / all", "wasted work")]
    overlaps = sorted({r["overlap"] for r in rows})
    cmap = plt.get_cmap("viridis")
    colours = {o: cmap(0.85 * k / max(len(overlaps) - 1, 1)) for k, o in enumerate(overlaps)}
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    for ax, (key, ylabel, sub) in zip(axes.flat, panels):
        for mode in sorted({r["mode"] for r in rows}):
            for o in overlaps:
                pts = sorted((r["writers"], r[key]) for r in rows if r["mode"] == mode and r["overlap"] == o)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], MODE_STYLES.get(mode, "-."), marker="o",
                            ms=4, color=colours[o], label=f"{mode}, overlap {o:g}")
        writers = sorted({r["writers"] for r in rows})
        ax.set_xscale("log", base=2)
        ax.set_xticks(writers)
        ax.set_xticklabels([str(w) for w in writers])
        ax.set_xlabel("concurrent writers")
        ax.set_ylabel(ylabel)
        ax.set_title(sub)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, ncol=2)
    fig.suptitle(title)
    fig.tight_layout()
    return save(fig, out_dir, "concurrency")


def compaction_stall(runs: dict[str, dict], out_dir: Path, title: str) -> list[Path]:
    """Writer stall under each compaction-scheduling rule: the streaming writer's cumulative wait before its
    instants over simulated time, and the stall per scheduled compaction with the commits per hour.

    ``runs``: rule -> dict with ``start_t_s`` (when each instant started) and ``stall_s`` (the wait before it),
    in order, and the run's summary
    (``stall_per_compaction_s``, ``stall_total_s``, ``commits_per_hour``).
    """
    colours = {"0.x": "#d62728", "1.x": "#1f77b4"}
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5))
    for rule, r in runs.items():
        n = min(len(r["start_t_s"]), len(r["stall_s"]))
        total, cum = 0.0, []
        for s in r["stall_s"][:n]:
            total += s
            cum.append(total)
        ax.step([t / 60 for t in r["start_t_s"][:n]], cum, where="post", label=f"{rule} scheduling",
                color=colours.get(rule), lw=1.5)
    ax.set_xlabel("simulated time (min)")
    ax.set_ylabel("cumulative writer stall (s)")
    ax.set_title("streaming writer: time waiting to start an instant")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    rules = list(runs)
    vals = [runs[r]["stall_per_compaction_s"] for r in rules]
    bars = bx.bar(rules, vals, color=[colours.get(r, "#777") for r in rules])
    for b, r in zip(bars, rules):
        bx.annotate(f"{runs[r]['stall_per_compaction_s']:.1f} s/compaction\n{runs[r]['commits_per_hour']:.0f} "
                    f"commits/h", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                    fontsize=8)
    bx.set_ylabel("writer stall per scheduled compaction (s)")
    bx.set_title("stall per compaction")
    bx.set_ylim(0, max(vals + [1.0]) * 1.35)
    fig.suptitle(title)
    fig.tight_layout()
    return save(fig, out_dir, "compaction-stall")
