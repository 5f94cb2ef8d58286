"""The simulation's figures (matplotlib, Agg; PNG and SVG; every axis labelled with its unit)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from lakeio.plots import save  # noqa: E402  (PNG + SVG, shared with the report)

MODE_COLOURS = {"blocking": "#d62728", "async": "#1f77b4"}


def stream_runs(runs: dict, out_dir: Path, title: str, writers: int) -> list[Path]:
    """``runs``: mode -> RunMetrics of one point. Throughput, stalls, backlog and pending instants."""
    fig, axes = plt.subplots(2, 2, figsize=(12, 7.5))
    ax = axes[0][0]
    for mode, m in runs.items():
        t = np.arange(len(m.processed.values)) * m.bin_s
        ax.plot(t, m.processed.per_second(), label=f"{mode}: processed", color=MODE_COLOURS.get(mode), lw=1)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("throughput (records/s)")
    ax.set_title("writer throughput over time")
    ax.legend(fontsize=8)
    ax = axes[0][1]
    data = [m.stall_per_writer_interval(writers) or [0.0] for m in runs.values()]
    ax.boxplot(data, showfliers=True)
    ax.set_xticks(range(1, len(runs) + 1), list(runs))
    ax.set_ylabel("time waiting for an instant (s)")
    ax.set_title("writer stall per checkpoint interval (per writer)")
    ax = axes[1][0]
    for mode, m in runs.items():
        if m.backlog:
            t, b = zip(*m.backlog)
            ax.plot(t, b, label=mode, color=MODE_COLOURS.get(mode), lw=1)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("source backlog (records)")
    ax.set_title("backpressure: records waiting at the source")
    ax.legend(fontsize=8)
    ax = axes[1][1]
    for mode, m in runs.items():
        if m.pending:
            t, n = zip(*m.pending)
            ax.step(t, n, where="post", label=mode, color=MODE_COLOURS.get(mode), lw=1)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("pending instants (count)")
    ax.set_title("pending instants on the timeline")
    ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return save(fig, out_dir, "stream")


def sweep(rows: list[dict], out_dir: Path, title: str) -> list[Path]:
    """The grid: with two or more swept keys, heatmaps of the first two keys (one row per mode, one column per
    value of the third key, the rest averaged) for writer stall and throughput; with one key, lines."""
    import pandas as pd

    df = pd.DataFrame(rows)
    keys = [k for k in df.columns if k.startswith("param.")]
    if not keys:
        return []
    metrics = (("stall_per_checkpoint_s", "mean writer stall per checkpoint (s)"),
               ("throughput_rps", "throughput (records/s)"))
    modes = list(dict.fromkeys(df["mode"]))
    if len(keys) == 1:
        x = keys[0]
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        for (metric, label), ax in zip(metrics, axes):
            for mode in modes:
                g = df[df["mode"] == mode].groupby(x, as_index=False)[metric].mean().sort_values(x)
                ax.plot(g[x], g[metric], marker="o", ms=3, color=MODE_COLOURS.get(mode), label=mode)
            ax.set_xscale("log")
            ax.set_xlabel(_label(x))
            ax.set_ylabel(label)
            ax.legend(fontsize=8)
        fig.suptitle(title)
        fig.tight_layout()
        return save(fig, out_dir, "sweep")
    x, y = keys[0], keys[1]
    facet = keys[2] if len(keys) > 2 else None
    facets = sorted(df[facet].unique()) if facet else [None]
    paths = []
    for metric, label in metrics:
        fig, axes = plt.subplots(len(modes), len(facets), figsize=(3.4 * len(facets) + 1.5, 3.2 * len(modes) + 0.8),
                                 squeeze=False, constrained_layout=True)
        vmax = float(df[metric].max()) if len(df) else 1.0
        for r, mode in enumerate(modes):
            for c, fv in enumerate(facets):
                ax = axes[r][c]
                d = df[df["mode"] == mode]
                if facet is not None:
                    d = d[d[facet] == fv]
                grid = d.groupby([y, x])[metric].mean().unstack(x)
                im = ax.imshow(grid.values, origin="lower", aspect="auto", vmin=0, vmax=vmax, cmap="viridis")
                ax.set_xticks(range(len(grid.columns)), [f"{v:g}" for v in grid.columns], fontsize=7)
                ax.set_yticks(range(len(grid.index)), [f"{v:g}" for v in grid.index], fontsize=7)
                for (i, j), v in np.ndenumerate(grid.values):
                    ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=6,
                            color="white" if v < vmax / 2 else "black")
                ax.set_xlabel(_label(x), fontsize=8)
                ax.set_ylabel(_label(y), fontsize=8)
                ax.set_title(f"{mode}" + (f", {facet[6:]}={fv:g}" if facet else ""), fontsize=9)
        fig.colorbar(im, ax=axes, shrink=0.8, label=label)
        fig.suptitle(f"{title}: {label}", fontsize=10)
        paths += save(fig, out_dir, "sweep-" + metric.split("_")[0])
    return paths


_UNITS = {"commit_latency_s": "s", "interval_s": "s", "parallelism": "tasks", "rate_rps": "records/s",
          "buffer_records": "records", "max_skew_ms": "ms", "median_ms": "ms"}


def _label(param_col: str) -> str:
    key = param_col[6:]
    unit = _UNITS.get(key.rpartition(".")[2], "")
    return f"{key} ({unit})" if unit else key


def _resolution(res_ms: int) -> str:
    """A clock resolution as a panel title / legend names it."""
    return "ms clock (17-digit instants)" if res_ms == 1 else \
        ("s clock (14-digit instants)" if res_ms == 1000 else f"{res_ms:g} ms clock")


def truetime_figure(rows: list[dict], title: str):
    """One row of panels per clock resolution (``resolution_ms``, 1 when absent), one column per table count;
    in each panel one p99/p50 pair per skew bound, labelled with the resolution."""
    tables = sorted({r["tables"] for r in rows})
    resolutions = sorted({r.get("resolution_ms", 1) for r in rows})
    fig, axes = plt.subplots(len(resolutions), len(tables), figsize=(4.5 * len(tables), 4.2 * len(resolutions)),
                             squeeze=False)
    for ax_row, res in zip(axes, resolutions):
        for ax, tb in zip(ax_row, tables):
            for skew in sorted({r["skew_ms"] for r in rows}):
                pts = sorted((r["writers"], r["request_p50_s"], r["request_p99_s"]) for r in rows
                             if r["tables"] == tb and r["skew_ms"] == skew and r.get("resolution_ms", 1) == res)
                if not pts:
                    continue
                w, p50, p99 = zip(*pts)
                line, = ax.plot(w, p99, marker="o", ms=3, label=f"skew {skew:g} ms p99, {_resolution(res)}")
                ax.plot(w, p50, ls="--", color=line.get_color(), lw=1,
                        label=f"skew {skew:g} ms p50, {_resolution(res)}")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("writers per table (count)")
            ax.set_ylabel("instant-request latency (s)")
            ax.set_title(f"{tb} table(s), {_resolution(res)}", fontsize=9)
            ax.legend(fontsize=6)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def truetime(rows: list[dict], out_dir: Path, title: str) -> list[Path]:
    return save(truetime_figure(rows, title), out_dir, "truetime")


def collisions_figure(rows: list[dict], title: str):
    """One row of two panels per clock resolution (``resolution_ms``, 1 when absent): P(>= 1 collision) and
    mean collisions per day vs N, one series per period, labelled with the resolution."""
    resolutions = sorted({r.get("resolution_ms", 1) for r in rows})
    fig, axes = plt.subplots(len(resolutions), 2, figsize=(12, 4.5 * len(resolutions)), squeeze=False)
    for (ax0, ax1), res in zip(axes, resolutions):
        rr = [r for r in rows if r.get("resolution_ms", 1) == res]
        formula = "C(N,2)*86.4/T^2" if res == 1 else f"C(N,2)*86.4*{res:g}/T^2"
        for period in sorted({r["period_s"] for r in rr}):
            pts = sorted((r["writers"], r["p_collision_per_day"], r["mean_collisions_per_day"],
                          r["expected_collisions_per_day"], r["truetime_collisions"]) for r in rr
                         if r["period_s"] == period)
            n, p, mean, exp, tt = zip(*pts)
            line, = ax0.plot(n, p, marker="o", ms=3, label=f"T = {period:g} s, no TrueTime, {_resolution(res)}")
            ax0.plot(n, [0.0 if x == 0 else np.nan for x in tt], marker="x", ls="none", color=line.get_color())
            ax1.plot(n, [m if m > 0 else np.nan for m in mean], marker="o", ms=3, color=line.get_color(),
                     label=f"T = {period:g} s simulated (0: not drawn), {_resolution(res)}")
            ax1.plot(n, exp, ls="--", lw=1, color=line.get_color(), label=f"T = {period:g} s {formula}")
        ax0.plot([], [], marker="x", ls="none", color="k", label="with TrueTime: 0 collisions")
        ax0.set_xlabel("writers N (count)")
        ax0.set_ylabel("P(>= 1 collision per day)")
        ax0.set_ylim(-0.03, 1.03)
        ax0.set_title(_resolution(res), fontsize=9)
        ax0.legend(fontsize=7)
        ax1.set_yscale("log")
        ax1.set_xlabel("writers N (count)")
        ax1.set_ylabel("mean collisions per day (count)")
        ax1.set_title(_resolution(res), fontsize=9)
        ax1.legend(fontsize=6)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def collisions(rows: list[dict], out_dir: Path, title: str) -> list[Path]:
    return save(collisions_figure(rows, title), out_dir, "collisions")


def recovery(rows: list[dict], out_dir: Path, title: str) -> list[Path]:
    """Time to recover per (crash target, before/after, step), one panel per mode; red bars: records lost or
    duplicated; a grey x: the step never happened often enough in that run."""
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    n = max(1, max((sum(1 for r in rows if r["mode"] == m) for m in modes), default=1))
    fig, axes = plt.subplots(len(modes), 1, figsize=(max(8, 0.22 * n + 2), 3.2 * len(modes) + 1.2), squeeze=False,
                             constrained_layout=True)
    for ax, mode in zip(axes[:, 0], modes):
        rs = [r for r in rows if r["mode"] == mode]
        labels = [f"{r['target']} {r['when']} {r['step']}" for r in rs]
        vals = [r["recovery_s"] if r["crashed"] and r["recovery_s"] == r["recovery_s"] else 0.0 for r in rs]
        colours = ["#d62728" if (r["lost_records"] or r["duplicated_records"] or r["invariants"] != "ok") else "#2ca02c"
                   for r in rs]
        ax.bar(range(len(rs)), vals, color=colours)
        missed = [i for i, r in enumerate(rs) if not r["crashed"]]
        ax.plot(missed, [0.0] * len(missed), "x", color="grey", label="step not reached")
        ax.set_xticks(range(len(rs)), labels, rotation=80, ha="right", fontsize=6)
        ax.set_ylabel("time to recover (s)")
        ax.set_title(f"{mode}: crash target, before/after, protocol step (green: exactly-once held)", fontsize=9)
        if missed:
            ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return save(fig, out_dir, "recovery")
