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


def indexing_runs(results, out_dir: Path, title: str) -> list[Path]:
    """The ``indexing`` experiment (``sim/indexing.py``): per run, write latency against simulated time with the
    indexer's events marked (left), and the write-latency distributions side by side (right). ``results``
    are objects with ``mode``, ``timeout_s``, ``latencies`` ((start s, latency s), ...) and ``events``
    ((time s, what), ...)."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 4.8))
    labels, data = [], []
    for k, r in enumerate(results):
        label = r.mode if r.mode != "indexer" else f"indexer, catch-up timeout {r.timeout_s:g} s"
        xs = [s for s, _ in r.latencies]
        ys = [v for _, v in r.latencies]
        dots = ax.scatter(xs, ys, s=6, alpha=0.6, label=label)
        for t, what in r.events:
            colour = "#d62728" if what.startswith("aborted") else ("#2ca02c" if what == "indexed" else dots.get_facecolor()[0])
            ax.axvline(t, color=colour, lw=0.8, ls="--", alpha=0.7)
        labels.append(label)
        data.append(ys or [0.0])
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("write latency (s)")
    ax.set_yscale("log")
    ax.set_title("write latency by start; dashed: indexer events (aborted red, indexed green)", fontsize=9)
    ax.legend(fontsize=7)
    bx.boxplot(data, showfliers=True)
    bx.set_xticks(range(1, len(labels) + 1), [lb.replace(", ", "\n") for lb in labels], fontsize=7)
    bx.set_ylabel("write latency (s)")
    bx.set_yscale("log")
    bx.set_title("write latency per run")
    fig.suptitle(title)
    fig.tight_layout()
    return save(fig, out_dir, "indexing")
