"""Bounded exhaustive exploration of a state machine (breadth-first model checking).

The style follows Stateright's ``Model`` trait: a model names its initial states, the actions
enabled in a state, the state an action leads to, and the properties every reachable state must
satisfy. :func:`explore` visits every state reachable within the model's bounds exactly once:

* **breadth first**, so the first violating state found is at minimal depth and the path to it is a
  *shortest* counterexample;
* **state hashing**: each state's :meth:`Model.fingerprint` (a hashable canonical form) is kept in a
  dict; a state whose fingerprint was seen before is not expanded again;
* **parent pointers**: per state only the parent's number and the *index* of the action within the
  parent's ``actions()`` list are kept (two small ints, in compact arrays), and a path is rebuilt by
  re-running those actions from the initial state, checking each fingerprint on the way. Models must
  therefore list actions in a deterministic order (the protocol System does).

Three kinds of property (Stateright's ``always``/``sometimes``/``eventually`` adapted to bounded runs):

* ``always``   — must hold in every reachable state; a state where it fails is a counterexample;
* ``sometimes`` — should hold in some reachable state; the first such state is an *example*;
* ``terminal`` — checked only in states with no enabled action (end of the bounded run), e.g.
  drain-based properties such as exactly-once.

A check returns ``True``/``False``, ``None`` (nothing to say) or a :class:`model.invariants.Verdict`
(``holds`` decides; ``detail`` explains). Any model with this interface can be explored; the
``hoodie-lab explore`` command wraps the writer–coordinator protocol System in :class:`SystemModel`.

This module is a driver (it reads the wall clock to report states per second), so it lives in
``hoodie_lab`` and not in the pure ``model`` package.
"""

from __future__ import annotations

import time
from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Sequence

ALWAYS, SOMETIMES, TERMINAL = "always", "sometimes", "terminal"


# --------------------------------------------------------------------------- model interface
@dataclass(frozen=True)
class Property:
    """A named property; ``check(state)`` returns bool, ``None`` (no opinion) or a Verdict."""

    name: str
    check: Callable[[Any], Any]
    kind: str = ALWAYS

    def __post_init__(self):
        if self.kind not in (ALWAYS, SOMETIMES, TERMINAL):
            raise ValueError(f"property {self.name}: kind must be always, sometimes or terminal")

    @staticmethod
    def always(name: str, check: Callable[[Any], Any]) -> "Property":
        return Property(name, check, ALWAYS)

    @staticmethod
    def sometimes(name: str, check: Callable[[Any], Any]) -> "Property":
        return Property(name, check, SOMETIMES)

    @staticmethod
    def terminal(name: str, check: Callable[[Any], Any]) -> "Property":
        return Property(name, check, TERMINAL)


class Model:
    """The interface :func:`explore` needs (Stateright's ``Model`` trait). Subclass and override.

    ``init_states``, ``actions`` and ``next_state`` are required. ``next_state`` may return ``None``
    for an action that turns out to be disabled (it is then not counted as a transition).
    """

    def init_states(self) -> Iterable[Any]:
        raise NotImplementedError

    def actions(self, state) -> Sequence[Any]:
        raise NotImplementedError

    def next_state(self, state, action) -> Any | None:
        raise NotImplementedError

    def properties(self) -> Sequence[Property]:
        return ()

    def fingerprint(self, state) -> Hashable:
        """A hashable canonical form; equal fingerprints mean the same state. Default: the state."""
        return state

    def within_boundary(self, state) -> bool:
        """States outside the boundary are counted and checked but not expanded."""
        return True

    def format_action(self, action) -> str:
        return str(action)

    def format_state(self, state) -> str:
        return str(state)


# --------------------------------------------------------------------------- results
@dataclass
class Discovery:
    """A counterexample (``always``/``terminal`` property failed) or an example (``sometimes`` held).

    ``actions`` leads from ``states[0]`` (an initial state) to ``states[-1]`` (the discovered state);
    ``len(actions)`` is the depth, minimal among all discoveries of that property.
    """

    property: str
    kind: str
    detail: str
    actions: list
    states: list
    state_ids: list  #: state numbers along the path (graph node ids)

    @property
    def state_id(self) -> int:
        return self.state_ids[-1]

    @property
    def is_counterexample(self) -> bool:
        return self.kind != SOMETIMES

    @property
    def depth(self) -> int:
        return len(self.actions)


@dataclass
class ExploreResult:
    states: int = 0                 #: distinct states discovered
    transitions: int = 0            #: actions executed (edges, including ones to known states)
    max_depth: int = 0              #: deepest BFS level reached
    terminal_states: int = 0        #: states with no enabled action
    elapsed: float = 0.0            #: seconds
    stop_reason: str = "exhausted"  #: "exhausted", "violation", "max-states" or "max-depth"
    discoveries: dict[str, Discovery] = field(default_factory=dict)
    graph: Any = None               #: networkx.DiGraph when record_graph=True

    @property
    def complete(self) -> bool:
        """True when every state within the bounds was visited (no early stop, no truncation)."""
        return self.stop_reason == "exhausted"

    @property
    def states_per_second(self) -> float:
        return self.states / self.elapsed if self.elapsed > 0 else float("inf")

    @property
    def counterexamples(self) -> list[Discovery]:
        return [d for d in self.discoveries.values() if d.is_counterexample]

    @property
    def counterexample(self) -> Discovery | None:
        """The shortest counterexample, if any."""
        ces = self.counterexamples
        return min(ces, key=lambda d: (d.depth, d.state_id)) if ces else None


def _outcome(value) -> tuple[bool | None, str]:
    """Normalise a check's return value to (holds, detail)."""
    if value is None:
        return None, ""
    holds = getattr(value, "holds", None)
    if holds is not None:
        return bool(holds), str(value)
    return bool(value), ""


# --------------------------------------------------------------------------- the search
def explore(
    model: Model,
    *,
    max_states: int | None = None,
    max_depth: int | None = None,
    stop_on_violation: bool = True,
    record_graph: bool = False,
    progress: Callable[[ExploreResult, int], None] | None = None,
    progress_every: int = 4096,
) -> ExploreResult:
    """Breadth-first search of every state of ``model`` reachable within its bounds.

    ``max_states`` / ``max_depth`` truncate the search (``stop_reason`` says so and ``complete`` is
    False). With ``stop_on_violation`` the search stops at the first counterexample (it is a shortest
    one); otherwise it continues until every property has a discovery or the space is exhausted.
    ``progress(result_so_far, queue_length)`` is called every ``progress_every`` new states.
    ``record_graph`` builds a ``networkx.DiGraph`` (nodes: state numbers with ``depth``/``initial``/
    ``terminal``/``violation`` attributes; edges labelled with the action) — for tiny bounds only.
    """
    props = list(model.properties())
    always = [p for p in props if p.kind == ALWAYS]
    sometimes = [p for p in props if p.kind == SOMETIMES]
    terminal = [p for p in props if p.kind == TERMINAL]
    res = ExploreResult()
    graph = None
    if record_graph:
        import networkx as nx

        graph = nx.DiGraph()
        res.graph = graph

    seen: dict[Hashable, int] = {}
    parent = array("q")   # state id -> parent state id (-1 for initial states)
    via = array("l")      # state id -> index of the action in parent's actions() (initial: init index)
    depth = array("l")
    init_list = list(model.init_states())
    fingerprint, actions_of, step = model.fingerprint, model.actions, model.next_state
    boundary = model.within_boundary
    t0 = time.perf_counter()
    queue: deque = deque()

    def discovered(sid: int, state, prop: Property, detail: str) -> None:
        if prop.name in res.discoveries:
            return
        ids, path_actions, path_states = _rebuild(model, init_list, parent, via, sid, seen)
        res.discoveries[prop.name] = Discovery(prop.name, prop.kind, detail, path_actions, path_states, ids)
        if graph is not None:
            graph.nodes[sid]["violation" if prop.kind != SOMETIMES else "example"] = prop.name

    def check_new(sid: int, state) -> bool:
        """Check always/sometimes properties on a newly discovered state; True = stop the search."""
        stop = False
        for p in always:
            holds, detail = _outcome(p.check(state))
            if holds is False:
                discovered(sid, state, p, detail)
                stop = stop_on_violation
        for p in sometimes:
            if p.name not in res.discoveries:
                holds, detail = _outcome(p.check(state))
                if holds:
                    discovered(sid, state, p, detail)
        return stop

    def add(state, par: int, idx: int, d: int, action=None) -> int | None:
        fp = fingerprint(state)
        known = seen.get(fp)
        if known is not None:
            if graph is not None and par >= 0:
                graph.add_edge(par, known, action=model.format_action(action))
            return None
        sid = len(parent)
        seen[fp] = sid
        parent.append(par)
        via.append(idx)
        depth.append(d)
        if graph is not None:
            graph.add_node(sid, depth=d, initial=par < 0, label=model.format_state(state))
            if par >= 0:
                graph.add_edge(par, sid, action=model.format_action(action), tree=True)
        return sid

    stop = False
    for i, s in enumerate(init_list):
        sid = add(s, -1, i, 0)
        if sid is None:
            continue
        queue.append((s, sid))
        if check_new(sid, s):
            stop = True
            res.stop_reason = "violation"
            break

    next_report = progress_every
    while queue and not stop:
        state, sid = queue.popleft()
        d = depth[sid]
        if not boundary(state):
            continue
        if max_depth is not None and d >= max_depth:
            res.stop_reason = "max-depth"
            continue
        acts = actions_of(state)
        if not acts:
            res.terminal_states += 1
            if graph is not None:
                graph.nodes[sid]["terminal"] = True
            for p in terminal:
                holds, detail = _outcome(p.check(state))
                if holds is False:
                    discovered(sid, state, p, detail)
                    if stop_on_violation:
                        stop = True
                        res.stop_reason = "violation"
            continue
        nd = d + 1
        for idx, action in enumerate(acts):
            nxt = step(state, action)
            if nxt is None:
                continue
            res.transitions += 1
            nid = add(nxt, sid, idx, nd, action)
            if nid is None:
                continue
            if nd > res.max_depth:
                res.max_depth = nd
            queue.append((nxt, nid))
            if check_new(nid, nxt):
                stop = True
                res.stop_reason = "violation"
                break
            if max_states is not None and len(parent) >= max_states:
                stop = True
                res.stop_reason = "max-states"
                break
            if progress is not None and len(parent) >= next_report:
                next_report += progress_every
                res.states = len(parent)
                res.elapsed = time.perf_counter() - t0
                progress(res, len(queue))
    res.states = len(parent)
    res.elapsed = time.perf_counter() - t0
    if progress is not None:
        progress(res, len(queue))
    return res


def _rebuild(model: Model, init_list: list, parent, via, sid: int, seen: dict) -> tuple[list, list, list]:
    """Re-run the recorded action indices from the initial state to ``sid`` (see module docstring).

    Each state reached must have the fingerprint recorded for that step; otherwise the model's
    ``actions``/``next_state`` are not deterministic and no path can be trusted.
    """
    chain = []
    cur = sid
    while cur >= 0:
        chain.append(cur)
        cur = parent[cur]
    chain.reverse()
    state = init_list[via[chain[0]]]
    states, actions = [state], []
    for nid in chain[1:]:
        acts = model.actions(state)
        action = acts[via[nid]]
        state = model.next_state(state, action)
        if seen.get(model.fingerprint(state)) != nid:
            raise RuntimeError(
                f"model is not deterministic: re-running action {model.format_action(action)!r} "
                f"did not reproduce state #{nid}; actions() order and next_state() must be deterministic")
        actions.append(action)
        states.append(state)
    return chain, actions, states


# --------------------------------------------------------------------------- graph drawing
def draw_graph(result: ExploreResult, path: str, *, title: str = "") -> None:
    """Draw ``result.graph`` to ``path`` (PNG or SVG by extension) with networkx + matplotlib.

    Initial states are green, violating states red, states of the shortest counterexample path
    orange (with its edges drawn thick), terminal states grey, others light blue. Layout: BFS depth
    left to right (``multipartite_layout``), so the picture reads like the search.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx

    g = result.graph
    if g is None:
        raise ValueError("the exploration did not record a graph (record_graph=True)")
    ce = result.counterexample
    on_path: set[int] = set()
    path_edges: set[tuple[int, int]] = set()
    if ce is not None:
        on_path = set(ce.state_ids)
        path_edges = set(zip(ce.state_ids, ce.state_ids[1:]))
    colours = []
    for n, data in g.nodes(data=True):
        if data.get("violation"):
            colours.append("#d62728")
        elif n in on_path:
            colours.append("#ff9f1c")
        elif data.get("initial"):
            colours.append("#2ca02c")
        elif data.get("terminal"):
            colours.append("#b0b0b0")
        else:
            colours.append("#9ecae1")
    for n in g.nodes:
        g.nodes[n]["layer"] = g.nodes[n]["depth"]
    pos = nx.multipartite_layout(g, subset_key="layer")
    n = g.number_of_nodes()
    width = max(6.0, 1.2 * (result.max_depth + 1))
    height = max(4.0, min(40.0, 0.25 * max(_layer_sizes(g))))
    fig, ax = plt.subplots(figsize=(width, height))
    node_size = 300 if n < 60 else 80 if n < 400 else 20
    other = [e for e in g.edges if e not in path_edges]
    nx.draw_networkx_edges(g, pos, edgelist=other, ax=ax, alpha=0.35, arrowsize=6, node_size=node_size)
    if path_edges:
        nx.draw_networkx_edges(g, pos, edgelist=sorted(path_edges), ax=ax, width=2.5, edge_color="#ff9f1c",
                               arrowsize=10, node_size=node_size)
        if n <= 120:
            labels = {e: g.edges[e]["action"] for e in path_edges}
            nx.draw_networkx_edge_labels(g, pos, edge_labels=labels, ax=ax, font_size=6)
    nx.draw_networkx_nodes(g, pos, node_color=colours, node_size=node_size, ax=ax, linewidths=0.3,
                           edgecolors="black")
    if n <= 60:
        nx.draw_networkx_labels(g, pos, ax=ax, font_size=6)
    legend = [("initial", "#2ca02c"), ("violating", "#d62728"), ("counterexample path", "#ff9f1c"),
              ("terminal", "#b0b0b0"), ("other", "#9ecae1")]
    for name, colour in legend:
        ax.scatter([], [], c=colour, label=name, edgecolors="black", linewidths=0.3)
    ax.legend(loc="upper left", fontsize=7, frameon=False)
    ax.set_title(title or f"{n} states, {g.number_of_edges()} edges (BFS depth left to right)", fontsize=9)
    ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _layer_sizes(g) -> list[int]:
    sizes: dict[int, int] = {}
    for _, d in g.nodes(data="depth"):
        sizes[d] = sizes.get(d, 0) + 1
    return list(sizes.values()) or [1]
