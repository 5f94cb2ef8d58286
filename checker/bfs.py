"""The breadth-first loop of :func:`checker.explorer.explore`: take a state from the queue, expand it, number
and queue its new successors and check them.

:func:`checker.explorer._explore` sets the search up (the visited set, the parent pointers, the initial
states, the property checks, the symmetry) and calls :func:`search`, which runs until the queue is empty or
the search stops; discoveries are judged and recorded by the explorer's functions it is given (``judge``,
``check_new``), which are called only for a new state's checks when the model has ``sometimes`` properties
and otherwise only for a check that reports something.

The queue holds the states alone: states are numbered in the order they are found and expanded in that same
order, so the state taken from the queue is number ``sid`` (a counter), and its depth is the level whose
numbers it falls in (a level's states are all numbered before its first one is expanded).
"""

from __future__ import annotations

import sys
import time
from collections import deque
from itertools import repeat
from operator import attrgetter
from typing import Any

_holds = attrgetter("holds")


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
           indep: Any = None, live: Any = None) -> None:
    """Expand the states of ``queue`` (numbered ``0 .. len(queue) - 1``: the initial states) breadth first,
    filling ``res`` (an :class:`~checker.explorer.ExploreResult`).

    ``seen`` maps a fingerprint to its state's number, ``parent`` / ``via`` (arrays) give each state's parent
    and action index; ``graph`` is the networkx graph to record, or None. The model's functions:
    ``actions_of``, ``successors`` (None: ``step`` per action), ``boundary`` (None: every state is within),
    ``settles``. A successor's fingerprint is ``form(state)``, or ``fallback(state)`` where that is None (no
    ``fallback``: ``form`` is the fingerprint); ``plain`` (symmetry, no graph; else None) is the state's own
    fingerprint, by which repeats within a level are skipped before ``form`` is computed. ``terminal``: the
    ``terminal`` properties; ``inline``: ``(property, check)`` of every property when all are ``always``
    (their values judged here, ``judge(property, sid, value)`` called only when one is not "holds"), else
    None and ``check_new(sid, state)`` checks each new state. The limits and ``progress`` are
    :func:`~checker.explorer.explore`'s.

    ``indep`` (None: off) turns on sleep sets: ``indep(a, b)`` says whether two events commute (enabled
    together, each stays enabled after the other, both orders reach equal fingerprints;
    :mod:`engine.independence`), and ``live`` is the type of the successors that can be expanded (another
    type, a dead end such as :class:`checker.protocol.Refused`, never puts its event to sleep). When state
    ``p`` is expanded, each successor ``s_j = p·e_j`` newly stored gets the sleep set of the events ``e_i``
    (``i < j``) of earlier siblings ``s_i`` also newly stored by this expansion (and live) that are
    independent of ``e_j``; expanding ``s_j`` skips them (``successors(state, acts, asleep)`` gives None in their
    place; counted in ``res.pruned``, not in transitions).
    Sound for this search: ``s_j·e_i = s_i·e_j`` (independence), ``s_i`` sits at the same level as ``s_j``
    and is numbered and expanded before it, and ``e_j`` is not asleep there (its sleep set holds only events
    of siblings before ``s_i``), so that state is generated from ``s_i`` at the same depth, before ``s_j``
    is expanded: the skipped transition would have found it known. The search numbers, stores and checks
    the same states in the same order. Only for the model's own ``successors``, without a ``boundary``
    (which could refuse to expand ``s_i``) and without a graph (which wants every edge); sleep sets are not
    passed on to further successors."""
    limit: int = max_states if max_states is not None else sys.maxsize
    next_report: int = progress_every if progress is not None else sys.maxsize
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
    if indep is not None:
        sleepq = deque([None] * len(queue))
    pop_sleep = sleepq.popleft if sleepq is not None else None
    push_sleep = sleepq.append if sleepq is not None else None
    news: Any = None          # the events whose successors this expansion stored (with sleep sets)
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
            pruned += nexts.count(None)
        else:
            nexts = successors(state, acts) if successors is not None else map(step, repeat(state), acts)
        for nxt in nexts:
            idx += 1
            if nxt is None:
                continue
            transitions += 1
            if plain is not None:
                h = plain(nxt)
                if h in reached:
                    continue
                reached.add(h)
            fp = form(nxt)
            if fp is None and fallback is not None:
                fp = fallback(nxt)
            if fp in seen:  # most transitions lead to a known state: keep this path short
                if graph is not None:
                    graph.add_edge(sid, seen[fp], action=model.format_action(acts[idx]))
                continue
            if sleepq is not None:
                ev = acts[idx]
                if news is None:  # (the first new sibling: nothing before it to sleep on)
                    push_sleep(None)
                    if type(nxt) is live:
                        news = [ev]
                else:
                    if len(news) == 1:
                        e = news[0]
                        push_sleep((e,) if indep(e, ev) else None)
                    else:
                        z = [e for e in news if indep(e, ev)]
                        push_sleep(tuple(z) if z else None)
                    if type(nxt) is live:
                        news.append(ev)
            nid = count
            count += 1
            seen[fp] = nid
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
