"""The breadth-first explorer (hoodie_lab/explore.py) on toy models, then on the protocol System."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import deque

import pytest

from hoodie_lab.explore import Model, Property, draw_graph, explore
from model.invariants import Verdict


# --------------------------------------------------------------------------- toy models
class Jugs(Model):
    """Die Hard water jugs (3 and 5 gallons). Shortest way to get 4 gallons: 6 pours."""

    def init_states(self):
        return [(0, 0)]

    def actions(self, s):
        return ["fill-small", "fill-big", "empty-small", "empty-big", "small-to-big", "big-to-small"]

    def next_state(self, s, a):
        small, big = s
        if a == "fill-small":
            return (3, big)
        if a == "fill-big":
            return (small, 5)
        if a == "empty-small":
            return (0, big)
        if a == "empty-big":
            return (small, 0)
        if a == "small-to-big":
            pour = min(small, 5 - big)
            return (small - pour, big + pour)
        pour = min(big, 3 - small)
        return (small + pour, big - pour)

    def properties(self):
        return [Property.always("big-is-never-4",
                                lambda s: Verdict("big-is-never-4", s[1] != 4, f"jugs {s}"))]


class Grid(Model):
    """Walk right/up on an n x n grid: n*n states, 2n(n-1) transitions, depth 2(n-1), one terminal."""

    def __init__(self, n, forbid=None):
        self.n, self.forbid = n, forbid

    def init_states(self):
        return [(0, 0)]

    def actions(self, s):
        x, y = s
        return [a for a, ok in (("right", x + 1 < self.n), ("up", y + 1 < self.n)) if ok]

    def next_state(self, s, a):
        x, y = s
        return (x + 1, y) if a == "right" else (x, y + 1)

    def properties(self):
        props = [Property.sometimes("reaches-corner", lambda s: s == (self.n - 1, self.n - 1))]
        if self.forbid is not None:
            props.append(Property.always("avoids-forbidden", lambda s: s != self.forbid))
        return props


class RacyCounter(Model):
    """Two processes each do `tmp = x; x = tmp + 1` non-atomically. At the end x must be 2.

    The lost update needs both reads before either write: shortest counterexample has 4 steps.
    State: (x, pc0, tmp0, pc1, tmp1).
    """

    def init_states(self):
        return [(0, 0, 0, 0, 0)]

    def actions(self, s):
        return [i for i in (0, 1) if s[1 + 2 * i] < 2]

    def next_state(self, s, i):
        s = list(s)
        pc, tmp = 1 + 2 * i, 2 + 2 * i
        if s[pc] == 0:
            s[tmp] = s[0]
        else:
            s[0] = s[tmp] + 1
        s[pc] += 1
        return tuple(s)

    def fingerprint(self, s):
        return s

    def properties(self):
        return [Property.terminal("no-lost-update", lambda s: Verdict("no-lost-update", s[0] == 2, f"x={s[0]}"))]


def reachable(model):
    """Independent closure (plain set, no explorer code) to cross-check state counts."""
    seen = set(model.init_states())
    todo = deque(seen)
    while todo:
        s = todo.popleft()
        for a in model.actions(s):
            t = model.next_state(s, a)
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def test_jugs_shortest_counterexample_is_six_pours():
    res = explore(Jugs())
    ce = res.counterexample
    assert ce is not None and ce.property == "big-is-never-4"
    assert ce.depth == 6
    assert ce.states[0] == (0, 0) and ce.states[-1][1] == 4
    # the path really leads there
    s = ce.states[0]
    for a in ce.actions:
        s = Jugs().next_state(s, a)
    assert s == ce.states[-1]
    assert "jugs (" in ce.detail
    assert res.stop_reason == "violation" and not res.complete


def test_jugs_full_space_matches_independent_closure():
    class Safe(Jugs):
        def properties(self):
            return []

    res = explore(Safe())
    assert res.complete and res.counterexample is None
    assert res.states == len(reachable(Safe()))
    assert res.transitions == 6 * res.states


@pytest.mark.parametrize("n", [1, 2, 5])
def test_grid_counts_depth_and_sometimes_example(n):
    res = explore(Grid(n))
    assert res.complete
    assert res.states == n * n
    assert res.transitions == 2 * n * (n - 1)
    assert res.max_depth == 2 * (n - 1)
    assert res.terminal_states == 1
    ex = res.discoveries["reaches-corner"]
    assert not ex.is_counterexample and ex.depth == 2 * (n - 1)
    assert res.counterexample is None


def test_grid_forbidden_cell_found_at_manhattan_distance():
    res = explore(Grid(6, forbid=(3, 2)))
    ce = res.counterexample
    assert ce.states[-1] == (3, 2) and ce.depth == 5
    assert sorted(ce.actions) == ["right"] * 3 + ["up"] * 2


def test_terminal_property_shortest_lost_update():
    res = explore(RacyCounter())
    ce = res.counterexample
    assert ce is not None and ce.property == "no-lost-update" and ce.depth == 4
    # both reads happen before the first write
    assert ce.states[-1][0] == 1
    assert "x=1" in ce.detail


def test_keep_going_collects_every_property_and_visits_everything():
    res = explore(Grid(4, forbid=(1, 1)), stop_on_violation=False)
    assert res.complete and res.states == 16
    assert set(res.discoveries) == {"reaches-corner", "avoids-forbidden"}


def test_max_states_truncates_and_says_so():
    res = explore(Grid(10), max_states=7)
    assert res.states == 7 and res.stop_reason == "max-states" and not res.complete


def test_max_depth_truncates_and_says_so():
    res = explore(Grid(10), max_depth=3)
    assert res.stop_reason == "max-depth" and not res.complete
    assert res.max_depth == 3 and res.states == 10  # cells with x+y <= 3


def test_nondeterministic_model_is_detected_when_rebuilding_a_path():
    class Flaky(Grid):
        calls = 0

        def actions(self, s):
            acts = super().actions(s)
            Flaky.calls += 1
            return acts if Flaky.calls % 3 else list(reversed(acts))

    with pytest.raises(RuntimeError, match="not deterministic"):
        explore(Flaky(6, forbid=(4, 4)))


def test_progress_callback_is_called():
    seen = []
    explore(Grid(30), progress=lambda r, q: seen.append(r.states), progress_every=100)
    assert seen and seen[-1] == 900 and seen == sorted(seen)


@pytest.mark.parametrize("ext", ["png", "svg"])
def test_graph_drawing(tmp_path, ext):
    res = explore(Grid(4, forbid=(2, 1)), record_graph=True)
    g = res.graph
    assert g.nodes[0]["initial"] and g.nodes[res.counterexample.state_id]["violation"] == "avoids-forbidden"
    out = tmp_path / f"g.{ext}"
    draw_graph(res, str(out))
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG") if ext == "png" else b"<svg" in data[:2000]
