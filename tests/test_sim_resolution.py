"""Issue #15 item 8: the truetime and collisions experiments take the clock resolution; plots split by it."""

from __future__ import annotations

import pytest

from lakeio.errors import UserError
from sim import collisions, plots, truetime_study
from sim import config as cfg


def _truetime_exp(resolutions):
    return cfg.from_dict({"kind": "truetime", "truetime_study": {
        "writers": [8], "tables": [1], "skews_ms": [200], "request_every_s": 0.5, "resolutions_ms": resolutions}})


def test_truetime_study_second_resolution_ties_where_millisecond_does_not_for_the_same_wait():
    exp = _truetime_exp([1, 1000])
    rows = truetime_study.run(exp.params, seed=5, quick=True)
    by_res = {r["resolution_ms"]: r for r in rows}
    assert set(by_res) == {1, 1000}
    ms, s = by_res[1], by_res[1000]
    assert ms["requests"] > 0 and s["requests"] > 0
    assert ms["duplicate_times"] == 0 and ms["invariant"] == "ok"
    # a 200 ms wait is below skew + 1000 ms: two writers take the same second, and the I1 check says so
    assert s["duplicate_times"] > 0
    assert "VIOLATED" in s["invariant"]


def test_truetime_study_default_resolution_is_the_millisecond_and_rows_stay_as_before():
    exp = cfg.from_dict({"kind": "truetime"})
    assert exp.params["truetime_study"]["resolutions_ms"] == [1]
    shipped = cfg.load("truetime")
    assert shipped.params["truetime_study"]["resolutions_ms"] == [1]
    # same seed, same draws: the default run equals an explicit millisecond run point for point
    a = truetime_study.run(_truetime_exp([1]).params, seed=9, quick=True)
    p = _truetime_exp([1]).params
    b = truetime_study.run_point(p, 8, 1, 200, seed=__import__("random").Random(9).getrandbits(63),
                                 duration_s=p["run"]["quick_duration_s"])
    assert a == [b]


@pytest.mark.parametrize("value", [[], [10], [1, 60_000], "1000"])
def test_truetime_resolutions_are_validated(value):
    with pytest.raises(UserError, match="truetime_study.resolutions_ms"):
        cfg.from_dict({"kind": "truetime", "truetime_study": {"resolutions_ms": value}}, "x.toml")


def test_collisions_second_resolution_collides_where_millisecond_does_not_for_the_same_period():
    exp = cfg.from_dict({"kind": "collisions", "truetime": {"max_skew_ms": 200, "lock_acquire_ms": 5},
                         "collisions": {"writers": [2], "periods_s": [60.0], "days": 0.2, "runs": 3,
                                        "truetime_runs": 0, "clock_offset_ms": 0, "resolutions_ms": [1, 1000]}})
    rows = collisions.run(exp.params, seed=2)
    by_res = {r["resolution_ms"]: r for r in rows}
    assert by_res[1]["mean_collisions_per_day"] == 0
    assert by_res[1000]["mean_collisions_per_day"] > 0


def _labels(ax):
    return [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]


def test_truetime_plot_has_one_labelled_panel_and_series_per_resolution():
    rows = truetime_study.run(_truetime_exp([1, 1000]).params, seed=5, quick=True)
    fig = plots.truetime_figure(rows, "t")
    axes = fig.axes
    assert len(axes) == 2  # one table count x two resolutions
    titles = [ax.get_title() for ax in axes]
    assert titles == ["1 table(s), ms clock (17-digit instants)", "1 table(s), s clock (14-digit instants)"]
    for ax, word in zip(axes, ("ms clock", "s clock")):
        labels = _labels(ax)
        assert labels == [f"skew 200 ms p99, {word}" + (" (17-digit instants)" if word == "ms clock"
                                                         else " (14-digit instants)"),
                          f"skew 200 ms p50, {word}" + (" (17-digit instants)" if word == "ms clock"
                                                         else " (14-digit instants)")]
        assert len(ax.get_lines()[0].get_xdata()) == 1  # only this resolution's point, not both


def test_collisions_plot_has_one_labelled_row_of_panels_per_resolution():
    rows = [{"writers": n, "period_s": 1.0, "resolution_ms": res, "p_collision_per_day": 0.5,
             "mean_collisions_per_day": float(n * res), "expected_collisions_per_day":
             collisions.expected_collisions(n, 1.0, 1.0, res), "truetime_collisions": 0}
            for res in (1, 1000) for n in (2, 4)]
    fig = plots.collisions_figure(rows, "c")
    assert len(fig.axes) == 4
    for ax, res in zip(fig.axes, (1, 1, 1000, 1000)):
        word = "ms clock" if res == 1 else "s clock"
        assert word in ax.get_title()
        sims = [ln for ln in ax.get_lines() if "simulated" in ln.get_label() or "no TrueTime" in ln.get_label()]
        assert len(sims) == 1 and word in sims[0].get_label()
        assert list(sims[0].get_xdata()) == [2, 4]  # one series per resolution, not mixed
    mean = next(ln for ln in fig.axes[3].get_lines() if "simulated" in ln.get_label())
    assert list(mean.get_ydata()) == [2000.0, 4000.0]
