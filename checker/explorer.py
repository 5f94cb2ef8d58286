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
* ``terminal`` — checked only where the run can end: by default states with no enabled action;
  a model widens that with :meth:`Model.settles` (drain-based properties such as exactly-once).

A check returns ``True``/``False``, ``None`` (nothing to say), a :class:`model.invariants.Verdict`
(``holds`` decides; ``detail`` explains) or a list of Verdicts (each failing one is its own
discovery, named by its ``invariant``). Any model with this interface can be explored; the
``hoodie-lab explore`` command wraps the engine's protocol System in
:class:`checker.protocol.SystemModel`.

:func:`checker.parallel.explore_parallel` runs the same search on several processes (same counts and
verdicts; the states partitioned by fingerprint, level by level, in compact numpy fingerprint sets).

The checker owns the search, the visited set and how states are hashed into it (fingerprints or their
64-bit hashes, ``compact``); a model owns its rules. This module reads the wall clock to report states
per second, so it is not part of the pure ``model`` package.
"""

from __future__ import annotations

import textwrap
import gc
import time
from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Sequence

from engine.bfs import _holds, search, sleep_set_of

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

    #: Optional ``successors(state, actions)``: the list ``[next_state(state, a) for a in actions]`` computed in
    #: one call, for a model whose states expand faster together (the protocol's: one compiled call per state
    #: instead of one Python call per transition). None: the explorers call ``next_state`` per action.
    successors: Callable[[Any, Sequence], list] | None = None

    def properties(self) -> Sequence[Property]:
        return ()

    def fingerprint(self, state) -> Hashable:
        """A hashable canonical form; equal fingerprints mean the same state. Default: the state."""
        return state

    def fingerprint_hash(self, state) -> int:
        """The hash ``compact`` exploration keeps instead of the fingerprint. Default:
        ``hash(fingerprint(state))``; a model may compute it faster (e.g. from cached hashes of the
        parts a transition left unchanged) provided equal fingerprints give equal hashes."""
        return hash(self.fingerprint(state))

    def settles(self, state, actions: Sequence) -> bool:
        """Whether ``terminal`` properties are checked in ``state`` (given its enabled actions).
        Default: only in terminal states (no enabled action). A model may widen it, e.g. to the
        states where only fault actions remain (the run ends there once faults stop)."""
        return not actions

    def independence(self) -> tuple | None:
        """``(indep, live)`` for sleep sets (``explore(sleep_sets=True)``): ``indep(a, b, state)`` is True only
        for two actions enabled at the reachable ``state`` that stay enabled there after each other and reach
        states of equal fingerprint in either order; ``live`` is the type of successors that are expanded
        (any other type is a dead end). A model that has one takes a third argument in ``successors(state,
        actions, asleep)``: a tuple of action objects of ``actions`` to skip, each with None in its place (and
        gives None for nothing else). None (the default): no relation, no sleep sets."""
        return None

    def within_boundary(self, state) -> bool:
        """States outside the boundary are counted and checked but not expanded."""
        return True

    def format_action(self, action) -> str:
        return str(action)

    def format_state(self, state) -> str:
        return str(state)


class MachineModel(Model):
    """A spec state machine given as a module (:mod:`model.table_machine`, :mod:`model.concurrency.machine`,
    :mod:`model.mdt.machine`: ``initial_state(cfg)``, ``enabled(cfg, s)`` as (action, next state) pairs,
    ``step(cfg, s, action)`` raising ``Refused``, ``format_action``, ``describe``) as a :class:`Model`.
    Subclasses name the module (``spec``) and add their properties.

    ``actions`` computes the successors once and keeps them for the ``next_state`` calls that follow on
    the same state (the explorer expands one state at a time), so each step runs once."""

    spec: Any = None  # the machine's module

    def __init__(self, config):
        self.config = config
        self._last: tuple = (None, {})

    def init_states(self):
        return [self.spec.initial_state(self.config)]

    def actions(self, state):
        succ = dict(self.spec.enabled(self.config, state))
        self._last = (state, succ)
        return list(succ)

    def next_state(self, state, action):
        last, succ = self._last
        if last is state and action in succ:
            return succ[action]
        try:
            return self.spec.step(self.config, state, action)
        except self.spec.Refused:
            return None

    def fingerprint(self, state):
        return state.fingerprint()

    def format_action(self, action) -> str:
        return self.spec.format_action(action)

    def format_state(self, state) -> str:
        return self.spec.describe(state)


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
    verdict: Any = None  #: the Verdict the check returned, if it returned one

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
    settled_states: int = 0         #: states where ``terminal`` properties were checked
    elapsed: float = 0.0            #: wall-clock seconds
    cpu: float = 0.0                #: CPU seconds of this process (one core; robust to machine load)
    stop_reason: str = "exhausted"  #: "exhausted", "violation", "max-states" or "max-depth"
    discoveries: dict[str, Discovery] = field(default_factory=dict)
    graph: Any = None               #: networkx.DiGraph when record_graph=True
    level: int = 0                  #: the BFS level being expanded (progress reports)
    workers: int = 1                #: processes that searched (checker.parallel.explore_parallel: more than 1)
    rss: int = 0                    #: bytes resident at the end, summed over the processes (0: not measured)
    fpset_bytes: int = 0            #: bytes of the compact fingerprint sets (parallel search)
    collision_probability: float | None = None  #: TLC's optimistic estimate (parallel search; None: not computed)
    moved_states: int = 0           #: states moved between workers to even out their frontiers (parallel search)
    expanded_per_worker: list = field(default_factory=list)  #: states each worker expanded (parallel search)
    cpu_per_worker: list = field(default_factory=list)  #: CPU seconds of each worker process (parallel search)
    pruned: int = 0                 #: transitions skipped by sleep sets (``explore(sleep_sets=True)``; not in transitions)

    @property
    def complete(self) -> bool:
        """True when every state within the bounds was visited (no early stop, no truncation)."""
        return self.stop_reason == "exhausted"

    @property
    def states_per_second(self) -> float:
        """Distinct states per wall-clock second."""
        return self.states / self.elapsed if self.elapsed > 0 else float("inf")

    @property
    def states_per_cpu_second(self) -> float:
        """Distinct states per CPU second of this process: the one-core figure, robust to machine load."""
        return self.states / self.cpu if self.cpu > 0 else float("inf")

    @property
    def counterexamples(self) -> list[Discovery]:
        return [d for d in self.discoveries.values() if d.is_counterexample]

    @property
    def counterexample(self) -> Discovery | None:
        """The shortest counterexample, if any."""
        ces = self.counterexamples
        return min(ces, key=lambda d: (d.depth, d.state_id)) if ces else None


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
    compact: bool = False,
    pause_gc: bool = True,
    symmetry: Callable[[Any], Any] | None = None,
    sleep_sets: bool = False,
) -> ExploreResult:
    """Breadth-first search of every state of ``model`` reachable within its bounds.

    ``max_states`` / ``max_depth`` truncate the search (``stop_reason`` says so and ``complete`` is
    False). With ``stop_on_violation`` the search stops at the first counterexample (it is a
    shortest one); otherwise it runs to the end and keeps the first discovery of every property.
    ``progress(result_so_far, frontier_size)`` is called every ``progress_every`` new states and
    once at the end. ``record_graph`` builds a ``networkx.DiGraph`` (nodes: state numbers with
    ``depth``/``initial``/``terminal``/``violation`` attributes; edges labelled with the action) —
    for tiny bounds only. ``compact`` keeps only a 64-bit hash of each fingerprint
    (:meth:`Model.fingerprint_hash`, as Stateright does) instead of the fingerprint itself: about a
    third of the memory on the protocol model, at the price of a collision probability of about
    n²/2⁶⁵ for n states (below 10⁻⁶ for 5 million states; a model that hashes cached hashes of
    parts, as the protocol System does, adds a term of the same order per part); a collision would
    merge two states and prune the second.

    With ``pause_gc`` (default) Python's cyclic garbage collector is paused during the search: the
    search keeps every fingerprint and the whole frontier alive, so each full collection rescans a
    heap that only grows; collections took about 45% of the time on the protocol model (13,000
    instead of 7,100 states per CPU second, same peak memory: model states hold no reference
    cycles, and reference counting still frees everything else). The collector's previous state is
    restored afterwards.

    ``symmetry`` (a ``state -> representative`` function, :func:`checker.symmetry.representative_function`)
    makes the visited set hold the representative's fingerprint (or hash) instead of the state's, so a
    state equal to a known one up to a renaming of interchangeable tasks is not expanded again; the
    search still expands and records the states it actually reached (paths replay unchanged).

    ``sleep_sets`` skips transitions whose target the search is certain to know already (sleep sets of
    independent events, from earlier siblings and inherited from the parent: :func:`engine.bfs.search`, which
    proves it), by the model's independence relation
    (:meth:`Model.independence`): the same states at the same depths in the same order, the same verdicts and
    counterexamples, fewer transitions (``pruned`` counts the skipped ones). Refused with ``record_graph``
    (the graph wants every edge); a model without an independence relation, its own ``successors`` or with a
    boundary searches without (``pruned`` stays 0).
    """
    if sleep_sets and record_graph:
        raise ValueError("sleep_sets skips edges; it cannot be combined with record_graph")
    was_enabled = gc.isenabled()
    if pause_gc:
        gc.disable()
    try:
        return _explore(model, max_states, max_depth, stop_on_violation, record_graph, progress,
                        progress_every, compact, symmetry, sleep_sets)
    finally:
        if pause_gc and was_enabled:
            gc.enable()


def _explore(model: Model, max_states, max_depth, stop_on_violation, record_graph, progress, progress_every,
             compact, symmetry=None, sleep_sets: bool = False) -> ExploreResult:
    """The search itself, with the collector already paused; see :func:`explore` for the options.

    This sets the search up and numbers the initial states; :func:`engine.bfs.search` runs the loop."""
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
    init_list = list(model.init_states())
    fingerprint, actions_of, step, successors = model.fingerprint, model.actions, model.next_state, model.successors
    if compact:
        fingerprint = model.fingerprint_hash
    # With symmetry the representative's fingerprint costs more than the state's own (cached) one, and
    # interleavings that commute reach the same successor many times within a level: the plain fingerprints
    # of the successors met this level are kept (a set for one level, as checker.parallel.expand_level does)
    # and a repeat is skipped before its representative is computed. Same outcome: the first one's
    # representative is in ``seen`` already, so the repeat would be found known (not with a graph: its edge).
    plain = fingerprint if symmetry is not None and graph is None else None
    if symmetry is not None:  # the representative's fingerprint (also in _rebuild: one function)
        fingerprint = _of_representative(fingerprint, symmetry)
    form, fallback = _halves(fingerprint)
    boundary = model.within_boundary  # (the default, every state within, is not asked)
    if getattr(boundary, "__func__", None) is Model.within_boundary:
        boundary = None
    settles = model.settles
    sleep_set = live = None
    if sleep_sets and graph is None and boundary is None and successors is not None:
        relation = model.independence()
        if relation is not None:
            sleep_set = sleep_set_of(relation[0])  # (what the search calls, once per stored state)
            live = relation[1]
    if sleep_set is not None:
        # With sleep sets, computing the plain fingerprint of every successor cost more than the canonical forms
        # it spared (callgrind, 300,000-state prefix of the reference bound, 29 Nov 2026: 29,457M -> 28,842M
        # instructions without it): the canonical parts are cached per change, and 30 % of the repeats
        # within a level are restart successors kept by System.restart_key, whose hashes are kept with them
        # (1,151,532 of 3,879,234 in the whole search). Same states, numbers and counts either way.
        plain = None
    t0, c0 = time.perf_counter(), time.process_time()
    queue: deque = deque()

    def discovered(sid: int, prop: Property, name: str, detail: str, verdict) -> None:
        if name in res.discoveries:
            return
        ids, path_actions, path_states = _rebuild(model, init_list, parent, via, sid, seen, fingerprint)
        res.discoveries[name] = Discovery(name, prop.kind, detail, path_actions, path_states, ids, verdict)
        if graph is not None:
            graph.nodes[sid].setdefault("violation" if prop.kind != SOMETIMES else "example", name)

    def judge(p: Property, sid: int, value) -> bool:
        """Record the discoveries of ``p``'s check on state ``sid``, which returned ``value``; True when a
        counterexample was found.

        A check may return a list of Verdicts (e.g. ``check_step``): each is its own outcome, named
        by its ``invariant``. Only discoveries are turned into text (the hot path stays cheap)."""
        if value is None:
            return False
        want = p.kind == SOMETIMES
        if not want and type(value) is list and _all_hold(value):
            return False
        if value is True or value is False:
            if value is want:
                discovered(sid, p, p.name, "", None)
                return not want
            return False
        found = False
        for v in (value if isinstance(value, (list, tuple)) else (value,)):
            holds = v if isinstance(v, bool) else v.holds
            if bool(holds) is want:
                name = p.name if isinstance(v, bool) else (getattr(v, "invariant", None) or p.name)
                discovered(sid, p, name, "" if isinstance(v, bool) else str(v), None if isinstance(v, bool) else v)
                found = not want
        return found

    def check_new(sid: int, state) -> bool:
        """Check always/sometimes properties on a newly discovered state; True = stop the search."""
        stop = False
        for p in always:
            if judge(p, sid, p.check(state)):
                stop = stop_on_violation
        for p in sometimes:
            if p.name not in res.discoveries:
                judge(p, sid, p.check(state))
        return stop

    # Every new state's checks: ``check_new``, or, when the model has only ``always`` properties, their checks
    # called here and ``judge`` only for a value that is not "holds" (None, True, or a list of Verdicts that
    # all hold): one call per property and state.
    inline = [(p, p.check) for p in always] if not sometimes else None

    stop = False
    for i, s in enumerate(init_list):  # the initial states: numbers 0, 1, ... (depth 0)
        fp = fingerprint(s)
        if fp in seen:
            continue
        sid = seen[fp] = len(parent)
        parent.append(-1)
        via.append(i)
        queue.append(s)
        if graph is not None:
            graph.add_node(sid, depth=0, initial=True, label=model.format_state(s))
        if check_new(sid, s):
            stop = True
            res.stop_reason = "violation"
            break

    if not stop:
        search(res, queue, seen, parent, via, model, graph, actions_of, successors, step, boundary, settles, plain,
               form, fallback, terminal, inline, check_new, judge, max_depth, max_states, stop_on_violation,
               progress, progress_every, t0, c0, sleep_set, live)
    res.states = len(parent)
    res.elapsed = time.perf_counter() - t0
    res.cpu = time.process_time() - c0
    res.level = res.max_depth
    if progress is not None:
        progress(res, len(queue))
    return res




def _all_hold(verdicts: list) -> bool:
    """Every Verdict of ``verdicts`` holds (the common case, told without a Python-level loop); False when one
    does not or when an item is not a Verdict (the caller's loop then judges each)."""
    try:
        return all(map(_holds, verdicts))
    except AttributeError:
        return False


def _of_representative(fingerprint, representative):
    """``state -> fingerprint(representative(state))``, or the model's canonical form of the same kind when
    the representative carries one (:func:`checker.symmetry.representative_function`'s ``canonical``:
    equal on the renamings of a state, no state renamed)."""
    canonical = getattr(representative, "canonical", None)
    if canonical:
        f = canonical.get(fingerprint)
        if f is not None:
            return f
    return lambda state: fingerprint(representative(state))


def _halves(fingerprint) -> tuple:
    """``(form, fallback)``: a symmetric fingerprint's halves (:func:`checker.symmetry._canonical_forms`), the
    model's canonical form and the representative's fingerprint where that form returns None, which the
    search loops call instead of ``fingerprint`` (the same value, one Python call fewer per successor); for
    another function ``(fingerprint, None)``."""
    form, fallback = getattr(fingerprint, "form", None), getattr(fingerprint, "fallback", None)
    return (form, fallback) if form is not None and fallback is not None else (fingerprint, None)


def _rebuild(model: Model, init_list: list, parent, via, sid: int, seen: dict, fingerprint) -> tuple[list, list, list]:
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
        if seen.get(fingerprint(state)) != nid:
            raise RuntimeError(
                f"model is not deterministic: re-running action {model.format_action(action)!r} "
                f"did not reproduce state #{nid}; actions() order and next_state() must be deterministic")
        actions.append(action)
        states.append(state)
    return chain, actions, states


# --------------------------------------------------------------------------- graph drawing
def draw_graph(result: ExploreResult, path: str, *, title: str = "") -> None:
    """Draw ``result.graph`` to ``path`` (PNG or SVG by extension) with networkx + matplotlib.

    Initial states are green, violating states red, the other states of the shortest counterexample
    path orange (its edges drawn thick and labelled), terminal states grey, others light blue. Layout: BFS depth
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
        elif data.get("initial"):
            colours.append("#2ca02c")
        elif n in on_path:
            colours.append("#ff9f1c")
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
    ax.set_title(textwrap.fill(title or f"{n} states, {g.number_of_edges()} edges (BFS depth left to right)", width=max(40, int(width * 11))), fontsize=9)
    ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _layer_sizes(g) -> list[int]:
    sizes: dict[int, int] = {}
    for _, d in g.nodes(data="depth"):
        sizes[d] = sizes.get(d, 0) + 1
    return list(sizes.values()) or [1]
