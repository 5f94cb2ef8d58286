"""Liveness checking over the explored state graph (issue #22), as TLC checks ``~>`` under fairness.

:func:`check_liveness` explores the spec (:mod:`model.protocol.spec`) breadth first within the config's
bounds, recording the state graph (a ``networkx.DiGraph``: nodes are state numbers, edges carry the event).
The bound is not the end of a behaviour: wherever no weakly fair action is enabled (only faults, timeouts
or nothing; :data:`model.protocol.events.FAIRNESS`), the graph gets the state's *fair continuation* --
``stop-faults`` and then the first enabled weakly fair event, step by step, with checkpoints beyond
``max_checkpoints`` (the spec allows them once faults stopped) -- until no weakly fair action is enabled,
where the behaviour stutters forever (a self-loop, as TLC treats a deadlock with ``-deadlock``). A
continuation that would run longer than :data:`CONTINUATION_STEPS` is *cut* and reported, never judged.

Then, as TLC does on its behaviour graph (Lamport, *Specifying Systems* §14.3.2), each strongly connected
component (``networkx.strongly_connected_components``) with a cycle is checked for fairness: under weak
fairness a component is fair when every weakly fair event enabled in all its states is taken by one of its
edges (stuttering takes none, so a stuttering state is fair only where no weakly fair event is enabled). A
temporal property (:mod:`model.invariants.temporal`) fails when some obligation is open in every state of a
fair component -- judged per obligation on the part of a component where it is open, whose own components
are checked for fairness again -- the behaviour reaching it and looping there keeps the obligation open
forever. A property listed in :data:`model.invariants.temporal.CYCLE_REQUIRES` (``pending-while-acks``) fails
only on a cycle that also takes an event of the kind it names (its ``□◇`` premise; stuttering takes none).
The report is a lasso: the shortest path found into the component (prefix) and its cycle, replayable as a
trace file (``hoodie_lab.commands.explore_liveness.write_lasso``: the events replay the prefix, the cycle is
in the header).

The protocol's graph is acyclic (the history counts steps) except for the idle checkpoint rounds its fair
continuations close; its fair components are those rounds and the stuttering ends.

:func:`check_model_liveness` runs the same judge over any machine given as a :class:`LiveModel` adapter (the
checker owns the graph; the model owns the rules, its fairness per step and its obligations): the metadata
table's async indexer (:class:`checker.indexing.IndexingLiveModel`) and archival beside writers and a cleaner
(:class:`checker.archival.ArchivalLiveModel`). Their bounds are their own (each process's work is bounded), so
they need no continuation: a state where no weakly fair step is enabled stutters.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from model.invariants import temporal as T
from model.protocol import events as E
from model.protocol import spec
from model.protocol.state import is_quiescent

#: Longest fair continuation judged (events after ``stop-faults``); a longer one is cut, not judged.
CONTINUATION_STEPS = 400


@dataclass
class Lasso:
    """A behaviour violating ``property``: ``prefix`` (events from the initial state to the cycle's first
    state) then ``cycle`` forever (empty: stuttering). ``obligation`` stays open in every cycle state."""

    property: str
    obligation: object
    prefix: list
    cycle: list
    node_ids: list        #: graph nodes of the prefix (initial state first, cycle entry last)
    cycle_ids: list       #: graph nodes of the cycle (entry first)
    last_state: object = None
    format_action: object = None  #: action -> str for machines whose actions are not protocol events

    @property
    def events(self) -> list:
        return list(self.prefix) + list(self.cycle)

    def label(self, ev) -> str:
        """An action's short label (an event's kind, else the machine's formatted action)."""
        return ev.kind if hasattr(ev, "kind") else self.format_action(ev) if self.format_action else str(ev)

    def describe(self) -> str:
        fmt = str if self.format_action is None else self.format_action
        loop = "stutters forever" if not self.cycle else "loops on " + ", ".join(map(fmt, self.cycle))
        return (f"{self.property}: obligation {self.obligation!r} stays open -- after {len(self.prefix)} events "
                f"the behaviour {loop} ({T.DESCRIPTIONS.get(self.property, '')})")

    def header(self) -> dict:
        """The trace header's ``lasso`` entry."""
        return {"property": self.property, "obligation": repr(self.obligation), "cycle_start": len(self.prefix),
                "cycle": [ev.to_dict() if hasattr(ev, "to_dict") else self.label(ev) for ev in self.cycle]
                or "stutter"}


@dataclass
class LivenessResult:
    states: int = 0               #: explored states within the bound
    continuation_states: int = 0  #: states added by fair continuations
    transitions: int = 0
    components: int = 0           #: strongly connected components with a cycle
    fair_components: int = 0
    cut: int = 0                  #: continuations cut at CONTINUATION_STEPS (not judged)
    elapsed: float = 0.0
    cpu: float = 0.0
    complete: bool = True         #: False when max_states truncated the search
    violations: dict = field(default_factory=dict)  #: property -> shortest Lasso
    graph: object = None
    visited: list = field(default_factory=list)  #: check_model_liveness: the states by graph node

    @property
    def holds(self) -> bool:
        return not self.violations and self.complete and not self.cut


def _weak(ev, unfair) -> bool:
    return E.fairness(ev, unfair) == E.WEAK


class _StateGraph:
    """The explored state graph: node ids in discovery order, each state's id by key, the BFS tree (parent
    and the event that reached it) for shortest prefixes, and the stuttering states."""

    def __init__(self, g):
        self.g = g
        self.seen: dict = {}
        self.states: list = []
        self.parent: list[int] = []
        self.via: list = []
        self.stutter: set[int] = set()

    def add(self, s, par: int, ev, key=None) -> int:
        """A new node for state ``s`` (known by ``key``, default the state), reached from ``par`` by ``ev``."""
        nid = len(self.states)
        self.seen[s if key is None else key] = nid
        self.states.append(s)
        self.parent.append(par)
        self.via.append(ev)
        self.g.add_node(nid)
        if par >= 0:
            self.g.add_edge(par, nid, ev=ev)
        return nid


def check_liveness(config, *, unfair: frozenset = frozenset(), seed: int = 0, max_states: int | None = None,
                   properties=T.TEMPORAL) -> LivenessResult:
    """Explore ``config`` and judge the temporal ``properties`` under weak fairness of every event kind not
    in ``unfair`` (see the module docstring). ``max_states`` truncates (``complete`` False)."""
    import networkx as nx

    res = LivenessResult()
    t0, c0 = time.perf_counter(), time.process_time()
    sg = _StateGraph(nx.DiGraph())
    g, seen, states, parent, via, stutter = sg.g, sg.seen, sg.states, sg.parent, sg.via, sg.stutter
    res.graph = g
    enabled, step = spec.enabled, spec.step
    add = sg.add

    def fair_choice(s):
        """The next event of the fair continuation: a weakly fair event other than ``trigger-checkpoint``
        (the first listed), else ``trigger-checkpoint``, else None (no weakly fair event: stutter)."""
        trigger = None
        for ev in enabled(s):
            if _weak(ev, unfair):
                if ev.kind != "trigger-checkpoint":
                    return ev
                trigger = ev
        return trigger

    shared: dict = {}  # view -> (first event, first node) of a continuation already built

    def continuation(nid: int) -> None:
        s = states[nid]
        # no rule reads the history (model.protocol.state): states with equal views have the same fair
        # continuation, enabled events and obligations, so a continuation is built once per view and shared
        key = s.view()
        known = shared.get(key)
        if known is not None:
            g.add_edge(nid, known[1], ev=known[0])
            return
        evs = [] if s.faults_stopped else [E.StopFaults()]
        first = len(states)
        round_start = None  # the quiescent state the idle checkpoint round started from
        for _ in range(CONTINUATION_STEPS + 1):
            if not evs:
                ev = fair_choice(s)
                if ev is None:
                    stutter.add(nid)
                    g.add_edge(nid, nid, ev=None)
                    return
                if ev.kind == "trigger-checkpoint" and is_quiescent(s):
                    if round_start is not None:
                        # an idle checkpoint round, quiescent to quiescent: the fair behaviour repeats such
                        # rounds forever (each alike, up to checkpoint ids and fresh instants)
                        g.add_edge(nid, round_start, ev=None, round=True)
                        return
                    round_start = nid
                evs = [ev]
            ev = evs.pop()
            s = step(s, ev)
            res.transitions += 1
            known = seen.get(s)
            if known is not None:  # its continuation is (being) built: deterministic
                g.add_edge(nid, known, ev=ev)
                return
            nid = add(s, nid, ev)
            res.continuation_states += 1
            if nid == first:
                shared[key] = (ev, nid)
        res.cut += 1

    init = spec.init(config, seed)
    add(init, -1, None)
    queue = deque([0])
    while queue:
        nid = queue.popleft()
        s = states[nid]
        acts = enabled(s)
        for ev in acts:
            t = step(s, ev)
            res.transitions += 1
            known = seen.get(t)
            if known is not None:
                g.add_edge(nid, known, ev=ev)
                continue
            if max_states is not None and len(states) >= max_states:
                res.complete = False
                continue
            queue.append(add(t, nid, ev))
        if not any(_weak(ev, unfair) for ev in acts):
            continuation(nid)
    res.states = len(states) - res.continuation_states

    weak_enabled = lambda n: {ev for ev in enabled(states[n]) if _weak(ev, unfair)}  # noqa: E731
    _judge(res, g, states, parent, via, stutter, weak_enabled, T.open_obligations, properties,
           lambda ev: ev.kind)
    res.elapsed = time.perf_counter() - t0
    res.cpu = time.process_time() - c0
    return res


class LiveModel:
    """What :func:`check_model_liveness` needs of a machine (the checker owns the graph, the model owns the
    rules): its initial states, each state's enabled actions with their next states, which actions are
    weakly fair (the machine's fairness declaration minus the design's ``unfair`` ones), the obligations
    open in a state per temporal property, and how to print an action. Adapters:
    :class:`checker.indexing.IndexingLiveModel`, :class:`checker.archival.ArchivalLiveModel`."""

    properties: tuple = ()

    def init_states(self) -> list:
        raise NotImplementedError

    def successors(self, state) -> list:
        """``[(action, next_state), ...]`` in a fixed order."""
        raise NotImplementedError

    def weak(self, action) -> bool:
        raise NotImplementedError

    def obligations(self, state) -> dict:
        raise NotImplementedError

    def kind(self, action) -> str:
        return self.format_action(action)

    def key(self, state):
        """A hashable value equal for equal states."""
        return state

    def format_action(self, action) -> str:
        return str(action)


def check_model_liveness(model: LiveModel, *, max_states: int | None = None) -> LivenessResult:
    """Explore ``model`` breadth first, recording its state graph, and judge its temporal properties under
    weak fairness of the actions ``model.weak`` names. The machines checked this way are finite by their own
    bounds (every process's work is bounded), so no continuation is needed: a state where no weakly fair
    action is enabled (nothing at all, or only faults and unfair steps) stutters forever (a self-loop), and a
    fair behaviour ends in a fair component like the protocol's."""
    import networkx as nx

    res = LivenessResult()
    t0, c0 = time.perf_counter(), time.process_time()
    sg = _StateGraph(nx.DiGraph())
    g, seen, states, parent, via, stutter = sg.g, sg.seen, sg.states, sg.parent, sg.via, sg.stutter
    res.graph = g
    weak_sets: dict[int, frozenset] = {}

    def add(s, par: int, ev) -> int:
        return sg.add(s, par, ev, model.key(s))

    queue = deque(add(s, -1, None) for s in model.init_states())
    while queue:
        nid = queue.popleft()
        succ = model.successors(states[nid])
        for a, t in succ:
            res.transitions += 1
            known = seen.get(model.key(t))
            if known is not None:
                g.add_edge(nid, known, ev=a)
                continue
            if max_states is not None and len(states) >= max_states:
                res.complete = False
                continue
            queue.append(add(t, nid, a))
        weak_sets[nid] = frozenset(a for a, _ in succ if model.weak(a))
        if not weak_sets[nid]:
            stutter.add(nid)
            g.add_edge(nid, nid, ev=None)
    res.states = len(states)
    res.visited = states
    _judge(res, g, states, parent, via, stutter, lambda n: weak_sets.get(n, frozenset()), model.obligations,
           model.properties, model.kind, model.format_action)
    res.elapsed = time.perf_counter() - t0
    res.cpu = time.process_time() - c0
    return res


def _judge(res, g, states, parent, via, stutter, weak_enabled, obligations, properties, kind_of,
           format_action=None) -> None:
    """Find the fair components of ``g`` and, per property, the shortest lasso whose cycle keeps one
    obligation open in every state (and takes an event of :data:`model.invariants.temporal.CYCLE_REQUIRES`'s
    kind when the property names one); ``res.violations`` gets them in ``properties`` order.

    As TLC does for ``p ~> q``: inside a fair component with several states, per open obligation ``x`` the
    states where ``x`` is open are taken apart and their own strongly connected components judged (under weak
    fairness a part of an unfair component is never fair, so only fair components are taken apart), and a
    stuttering state inside a larger component is a fair behaviour of its own."""
    import networkx as nx

    depth = _depths(parent)
    best: dict[str, Lasso] = {}

    def consider(prop, x, comp) -> None:
        entry = min(comp, key=lambda n: (depth[n], n))
        need = T.CYCLE_REQUIRES.get(prop)
        if need is None:
            cycle_ids = _cycle(g, comp, entry, stutter)
        else:
            cycle_ids = _cycle_taking(g, comp, entry, lambda ev: ev is not None and kind_of(ev) == need)
            if cycle_ids is None:
                return
        key = (depth[entry], len(cycle_ids))
        old = best.get(prop)
        if old is not None and (len(old.prefix), len(old.cycle_ids)) <= key:
            return
        ids = _path(parent, entry)
        best[prop] = Lasso(prop, x, [via[i] for i in ids[1:]],
                           [g.edges[a, b]["ev"] for a, b in zip(cycle_ids, cycle_ids[1:] + cycle_ids[:1])
                            if g.edges[a, b]["ev"] is not None],
                           ids, cycle_ids, states[entry], format_action)

    def single(n) -> None:  # a fair one-state component (stuttering, or a fair self-loop)
        ob = obligations(states[n])
        for prop in properties:
            if ob[prop]:
                consider(prop, sorted(ob[prop], key=repr)[0], {n})

    for comp in nx.strongly_connected_components(g):
        if len(comp) == 1:
            (n,) = comp
            if n not in stutter and not g.has_edge(n, n):
                continue
        res.components += 1
        fair = _fair(g, comp, weak_enabled)
        res.fair_components += fair
        if len(comp) == 1:
            if fair:
                single(next(iter(comp)))
            continue
        for n in sorted(comp & stutter):
            single(n)
        if not fair:
            continue
        obs = {n: obligations(states[n]) for n in comp}
        for prop in properties:
            for x in sorted(frozenset().union(*(obs[n][prop] for n in comp)), key=repr):
                part = [n for n in comp if x in obs[n][prop]]
                for sub in nx.strongly_connected_components(g.subgraph(part)):
                    if len(sub) == 1 and not g.has_edge(*(2 * tuple(sub))):
                        continue
                    if _fair(g, sub, weak_enabled):
                        consider(prop, x, sub)
    res.violations = {p: best[p] for p in properties if p in best}


def _depths(parent: list[int]) -> list[int]:
    d = [0] * len(parent)
    for i, p in enumerate(parent):  # a parent always has a smaller number
        if p >= 0:
            d[i] = d[p] + 1
    return d


def _path(parent: list[int], n: int) -> list[int]:
    ids = []
    while n >= 0:
        ids.append(n)
        n = parent[n]
    return ids[::-1]


def _fair(g, comp, weak_enabled) -> bool:
    """Weak fairness: every weakly fair event enabled in all of ``comp``'s states is taken inside it
    (``weak_enabled(node)``: the weakly fair events enabled in that node's state)."""
    always = None
    for n in comp:
        en = weak_enabled(n)
        always = en if always is None else always & en
        if not always:
            return True
    taken = {d["ev"] for a, b, d in g.subgraph(comp).edges(data=True) if d["ev"] is not None}
    return always <= taken


def _cycle(g, comp, entry, stutter) -> list[int]:
    """A shortest cycle through ``entry`` inside ``comp`` (the stuttering self-loop: ``[entry]``)."""
    if entry in stutter or g.has_edge(entry, entry):
        return [entry]
    import networkx as nx

    sub = g.subgraph(comp)
    best = None
    for succ in sub.successors(entry):
        p = nx.shortest_path(sub, succ, entry)
        if best is None or len(p) < len(best):
            best = p
    return [entry] + best[:-1]


def _cycle_taking(g, comp, entry, takes) -> list[int] | None:
    """A shortest cycle through ``entry`` inside ``comp`` that takes an edge whose event satisfies ``takes``
    (None: no such edge in ``comp``)."""
    import networkx as nx

    sub = g.subgraph(comp)
    best = None
    for a, b, d in sub.edges(data=True):
        if not takes(d["ev"]):
            continue
        to_a = nx.shortest_path(sub, entry, a)           # entry .. a
        back = [entry] if b == entry else nx.shortest_path(sub, b, entry)  # b .. entry
        ids = to_a + back[:-1] if b != entry else to_a
        if best is None or len(ids) < len(best):
            best = ids
    return best


def draw_lasso(lasso: Lasso, path: str, *, title: str = "") -> None:
    """Draw the lasso (prefix left to right, the cycle in red; stuttering as a red self-loop) to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx

    h = nx.DiGraph()
    ids = lasso.node_ids
    for i, n in enumerate(ids):
        h.add_node(n, pos=(i, 0))
    for (a, b), ev in zip(zip(ids, ids[1:]), lasso.prefix):
        h.add_edge(a, b, label=lasso.label(ev) if ev is not None else "")
    cyc = lasso.cycle_ids
    for j, n in enumerate(cyc[1:], 1):
        h.add_node(n, pos=(len(ids) - 1 + j * 0.5, -1))
    cycle_edges = list(zip(cyc, cyc[1:] + cyc[:1]))
    for (a, b), ev in zip(cycle_edges, lasso.cycle or [None] * len(cycle_edges)):
        h.add_edge(a, b, label=lasso.label(ev) if ev is not None else "stutter")
    pos = nx.get_node_attributes(h, "pos")
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(ids)), 3.2))
    prefix_edges = [e for e in h.edges if e not in cycle_edges]
    nx.draw_networkx_edges(h, pos, edgelist=prefix_edges, ax=ax, arrowsize=8)
    nx.draw_networkx_edges(h, pos, edgelist=cycle_edges, ax=ax, edge_color="#d62728", width=2.5, arrowsize=12)
    colours = ["#2ca02c" if n == ids[0] else "#d62728" if n in cyc else "#9ecae1" for n in h.nodes]
    nx.draw_networkx_nodes(h, pos, node_color=colours, node_size=220, ax=ax, edgecolors="black", linewidths=0.3)
    labels = {e: h.edges[e]["label"] for e in h.edges if e[0] != e[1]}
    nx.draw_networkx_edge_labels(h, pos, edge_labels=labels, ax=ax, font_size=6, rotate=True)
    if cyc and cyc[0] in h.nodes and h.has_edge(cyc[0], cyc[0]):
        x, y = pos[cyc[0]]
        ax.annotate("stutter (forever)", (x, y), xytext=(x, y + 0.35), color="#d62728", fontsize=8, ha="center")
    ax.set_title(title or lasso.describe()[:160], fontsize=8)
    ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


class SpecModel:
    """The spec itself as an explorable model (:func:`checker.explorer.explore`) with the safety invariants
    (:func:`model.invariants.protocol.check_step`): the safety-only baseline of the liveness benchmark."""

    def __new__(cls, config, seed: int = 0):
        from model.invariants.protocol import check_step

        from .explorer import Model, Property

        class _Spec(Model):
            def init_states(self):
                return [spec.init(config, seed)]

            actions = staticmethod(spec.enabled)
            next_state = staticmethod(spec.step)

            def properties(self):
                return [Property.always("step", check_step)]

        return _Spec()
