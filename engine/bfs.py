"""The breadth-first loop of :func:`checker.explorer.explore`: take a state from the queue, expand it, number
and queue its new successors and check them.

:func:`checker.explorer._explore` sets the search up (the visited set, the parent pointers, the initial
states, the property checks, the symmetry) and calls :func:`search`, which runs until the queue is empty or
the search stops; discoveries are judged and recorded by the explorer's functions it is given (``judge``,
``check_new``), which are called only for a new state's checks when the model has ``sometimes`` properties
and otherwise only for a check that reports something.

It lives in the engine, which is compiled (:mod:`engine._compiled`), though it knows no protocol: it is the
explorer's hot loop, generic over the model (its functions are passed in), and compiled it took 6-8 % less CPU
than interpreted (a 600,000-state prefix of the reference bound with sleep sets, 29 Nov 2026). It imports
nothing of the project.

The queue holds the states alone: states are numbered in the order they are found and expanded in that same
order, so the state taken from the queue is number ``sid`` (a counter), and its depth is the level whose
numbers it falls in (a level's states are all numbered before its first one is expanded).
"""

from __future__ import annotations

import time
from collections import deque
from itertools import repeat
from operator import attrgetter
from typing import Any, Final

_holds = attrgetter("holds")
_NO_LIMIT: Final = 1 << 60


def needs_judging(value) -> bool:
    """Whether an always-property's value says anything but "holds": not None or True, nor a list of Verdicts
    that all hold (told without a Python-level loop; a list with an item that is not a Verdict is judged)."""
    if value is None or value is True:
        return False
    if type(value) is list:
        try:
            return not all(map(_holds, value))
        except AttributeError:  # not all Verdicts: judged one by one
            return True
    return True


def search(res: Any, queue: Any, seen: dict, parent: Any, via: Any, model: Any, graph: Any,
           actions_of: Any, successors: Any, step: Any, boundary: Any, settles: Any,
           plain: Any, form: Any, fallback: Any,
           terminal: list, inline: Any, check_new: Any, judge: Any,
           max_depth: Any, max_states: Any, stop_on_violation: bool,
           progress: Any, progress_every: int, t0: float, c0: float,
           sleep_set: Any = None, live: Any = None) -> None:
    """Expand the states of ``queue`` (numbered ``0 .. len(queue) - 1``: the initial states) breadth first,
    filling ``res`` (an :class:`~checker.explorer.ExploreResult`).

    ``seen`` maps a fingerprint to its state's number, ``parent`` / ``via`` (arrays) give each state's parent
    and action index; ``graph`` is the networkx graph to record, or None. The model's functions:
    ``actions_of``, ``successors`` (None: ``step`` per action), ``boundary`` (None: every state is within),
    ``settles``. A successor's fingerprint is ``form(state)``, or ``fallback(state)`` where that is None (no
    ``fallback``: ``form`` is the fingerprint); ``plain`` (symmetry, no graph, no sleep sets; else None) is the
    state's own fingerprint, by which repeats within a level are skipped before ``form`` is computed. ``terminal``: the
    ``terminal`` properties; ``inline``: ``(property, check)`` of every property when all are ``always``
    (their values judged here, ``judge(property, sid, value)`` called only when one is not "holds"), else
    None and ``check_new(sid, state)`` checks each new state. The limits and ``progress`` are
    :func:`~checker.explorer.explore`'s.

    ``sleep_set`` (None: off) turns on sleep sets: ``sleep_set(ev, p, taken, before, inherited)`` gives the
    events of ``taken[:before]`` and of ``inherited`` (a tuple or None) that commute with ``ev`` at the state
    ``p``, both enabled there (each stays enabled and unrefused after the other, both orders reach equal
    fingerprints; :func:`sleep_set_of` makes it from a relation, :mod:`engine.independence`), as a tuple, or
    None when none does; ``live`` is the type of the successors that can be expanded (another type, a dead end
    such as :class:`checker.protocol.Refused`, never puts its event to sleep). Expanding a
    state skips the events of its sleep set (``successors(state, acts, asleep)`` gives None in their place;
    counted in ``res.pruned``, not in transitions). The sleep set of a successor ``x = p·e_j`` stored by the
    expansion of ``p`` holds the events independent of ``e_j`` at ``p`` among: the events ``e_i`` (``i < j``)
    that ``p`` took to a live successor ``s_i = p·e_i`` -- new or already known, under any naming -- and the
    events asleep at ``p`` (inherited, as Godefroid's sleep sets pass them on).

    Why every state is still found, with the same number and parent. Claim: once a state ``x`` is expanded,
    every event enabled at ``x`` leads to a known state, and for an event asleep at ``x`` that state was known
    before ``x`` was expanded. By induction on the states' numbers (a taken event stores or finds its
    successor). An event ``e`` asleep at ``x = p·e_j`` commutes with ``e_j`` at ``p``: ``x·e = p·e·e_j``.
    If ``e = e_i`` was taken at ``p``, ``p·e`` is ``s_i``, known as a state ``r`` (``s_i`` itself or a
    renaming of it: symmetry) before ``x`` was stored; if ``e`` was asleep at ``p``, ``p·e`` is (live, by
    independence at ``p``'s parent, and) known as ``r`` before ``p`` was expanded, by the claim for ``p``.
    Either way ``r`` is numbered before ``x``, so it is expanded before ``x`` at a depth no greater (BFS),
    with ``e_j`` (renamed) enabled there, and by the claim for ``r`` its successor, a renaming of ``x·e``, is
    known by then. And no state is found later than without sleep sets: the first transition to a state (the
    earliest-numbered state taking it, its earliest event) is never asleep, for its target would have been
    known before. So the search numbers, stores and checks the same states in the same order, with the same
    parents and actions; only the skipped transitions are not counted. Only for the model's own
    ``successors``, without a ``boundary`` (which could refuse to expand ``r``) and without a graph (which
    wants every edge); with ``max_depth`` no state at the last depth is expanded, nor is ``x`` at a depth no
    smaller."""
    # (no limit: a bound no search reaches that the compiled loop still holds as a native int, unlike sys.maxsize,
    # which it compared as a Python int at every new state)
    limit: int = max_states if max_states is not None else _NO_LIMIT
    next_report: int = progress_every if progress is not None else _NO_LIMIT
    known: dict = seen  # (a typed local: the compiled loop looks up and stores natively)
    transitions = 0
    terminal_states = 0
    settled_states = 0
    deepest = 0
    count: int = len(parent)  # states numbered so far
    sid = -1                  # the state being expanded
    d = 0                     # its depth
    level_end = count         # the first number of depth d + 1
    reached: set = set()      # the plain fingerprints of the successors met in this level (with ``plain``)
    pop = queue.popleft
    push = queue.append
    append_parent = parent.append
    append_via = via.append
    stop = False
    pruned = 0
    sleepq: Any = None        # with sleep sets: each queued state's sleep set (a tuple, None when empty)
    if sleep_set is not None:
        sleepq = deque([None] * len(queue))
    pop_sleep: Any = sleepq.popleft if sleepq is not None else None
    push_sleep: Any = sleepq.append if sleepq is not None else None
    news: Any = None          # the events this expansion took to a live successor so far (with sleep sets)
    while queue and not stop:
        state = pop()
        asleep = pop_sleep() if pop_sleep is not None else None
        sid += 1
        if sid == level_end:
            d += 1
            level_end = count
            reached.clear()
        if boundary is not None and not boundary(state):
            continue
        if max_depth is not None and d >= max_depth:
            res.stop_reason = "max-depth"
            continue
        acts = actions_of(state)
        if not acts:
            terminal_states += 1
            if graph is not None:
                graph.nodes[sid]["terminal"] = True
        if terminal and settles(state, acts):
            settled_states += 1
            for p in terminal:
                if judge(p, sid, p.check(state)) and stop_on_violation:
                    stop = True
                    res.stop_reason = "violation"
            if stop:
                break
        if not acts:
            continue
        nd = d + 1
        idx = -1
        news = None
        nexts: Any
        if asleep is not None:  # (sleep sets: the model skips these events, None in their place)
            nexts = successors(state, acts, asleep)
        else:
            nexts = successors(state, acts) if successors is not None else map(step, repeat(state), acts)
        for nxt in nexts:
            idx += 1
            if nxt is None:
                if asleep is not None:  # (counted here, not up front: a search that stops mid-state counts alike)
                    pruned += 1
                continue
            transitions += 1
            if sleepq is not None:  # (the live siblings taken before this one: news[:before])
                before = 0 if news is None else len(news)
                if type(nxt) is live:
                    if news is None:
                        news = [acts[idx]]
                    else:
                        news.append(acts[idx])
            if plain is not None:
                h = plain(nxt)
                if h in reached:
                    continue
                reached.add(h)
            fp = form(nxt)
            if fp is None and fallback is not None:
                fp = fallback(nxt)
            if fp in known:  # most transitions lead to a known state: keep this path short
                if graph is not None:
                    graph.add_edge(sid, known[fp], action=model.format_action(acts[idx]))
                continue
            if sleepq is not None:  # its sleep set: the live siblings taken before it and the parent's sleep set,
                if before or asleep is not None:  # each event independent of its own at the parent
                    push_sleep(sleep_set(acts[idx], state, news, before, asleep))
                else:
                    push_sleep(None)
            nid = count
            count += 1
            known[fp] = nid
            append_parent(sid)
            append_via(idx)
            push(nxt)
            deepest = nd
            if graph is not None:
                graph.add_node(nid, depth=nd, initial=False, label=model.format_state(nxt))
                graph.add_edge(sid, nid, action=model.format_action(acts[idx]), tree=True)
            if inline is None:
                if check_new(nid, nxt):
                    stop = True
            else:
                for p, check in inline:
                    value = check(nxt)
                    if value is None or value is True or not needs_judging(value):
                        continue
                    if judge(p, nid, value) and stop_on_violation:
                        stop = True
            if stop:
                res.stop_reason = "violation"
                break
            if count >= limit:
                stop = True
                res.stop_reason = "max-states"
                break
            if count >= next_report:
                next_report += progress_every
                res.level, res.max_depth, res.states = d, deepest, count
                res.transitions, res.terminal_states, res.settled_states = transitions, terminal_states, settled_states
                res.elapsed = time.perf_counter() - t0
                res.cpu = time.process_time() - c0
                progress(res, len(queue))
    res.transitions, res.terminal_states, res.settled_states = transitions, terminal_states, settled_states
    res.max_depth = deepest
    res.pruned = pruned


def sleep_set_of(indep: Any) -> Any:
    """``sleep_set(ev, p, taken, before, inherited)`` for :func:`search` from a pairwise relation
    ``indep(a, b, p)``: the relation's own ``sleep_set`` when it has one (one call per stored state), else
    this loop."""
    own = getattr(indep, "sleep_set", None)
    if own is not None:
        return own

    def sleep_set(ev: Any, p: Any, taken: Any, before: Any, inherited: Any) -> tuple | None:
        out = [e for e in taken[:before] if indep(e, ev, p)]
        if inherited is not None:
            out.extend([e for e in inherited if indep(e, ev, p)])
        return tuple(out) if out else None

    return sleep_set
