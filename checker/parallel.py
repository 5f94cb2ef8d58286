"""Parallel breadth-first exploration on several cores: states partitioned by fingerprint, one level at a time.

Same search as :func:`checker.explorer.explore` (same states, transitions, depth and verdicts when it runs
to the end), spread over ``workers`` processes (``fork``: the model, and Python's string-hash seed that the
64-bit fingerprints depend on, are inherited). Every fingerprint has an *owner*, :func:`owner_of` (its
high bits, as TLC's ``MultiFPSet`` picks a sub-set), and only the owner keeps it, in a compact
:class:`checker.fpset.FPSet` with the state's parent fingerprint and action index. A level is three
steps, each a plain function that other drivers (a Spark explorer) can call on their own partitions:

1. :func:`expand_level` — each worker expands its share of the frontier: terminal properties of the
   states, their enabled actions, each successor's fingerprint (of the symmetry representative when
   symmetry is on); successors repeated within the worker are dropped there; the rest are grouped by
   owner as ``(fingerprint, parent fingerprint, action index)`` batches (:class:`Expansion`);
2. :func:`dedup_level` — each owner inserts the batches routed to it, from worker 0, 1, ... in order, into
   its set; the mask of new fingerprints goes back to the sender (first sender wins a tie);
3. :func:`accept_level` — each worker keeps its successors the owners found new: checks the ``always`` and
   ``sometimes`` properties on them and makes them its share of the next frontier.

Only fingerprints travel between processes (numpy arrays through pipes, via the coordinating process);
a state stays with the worker that reached it, which expands it at the next level. That alone would leave
every state with the worker owning the initial state (its successors stay with it, and theirs), the other
workers only answering dedup questions; so after each level the coordinator evens out the next frontiers
(:func:`rebalance_plan`: when the largest and smallest differ by more than 5 % of the level, the surplus
states are pickled and moved, :func:`give_states` / :func:`take_states`). Once split, the halves grow
alike: at the quick bound 1,253 of 76,207 states moved. The coordinator sums the counts, reports progress (shared counters the workers update every
few hundred states) and stops after the level where a counterexample was found (``stop_on_violation``:
the counts then include that whole level, unlike the serial search, which stops at the state) or where
the state count passed ``max_states``.

Counterexamples are shortest and replayable: BFS by levels finds a violation at its minimal depth, and
its path is rebuilt from the owners' parent pointers (fingerprint → parent fingerprint and action index,
one question to one owner per step) and then re-run from the initial state, each state's fingerprint
checked against the recorded one (as :func:`checker.explorer._rebuild` does). When several states of the
shallowest level violate, the one kept per invariant is the first in (worker, expansion) order and
``ExploreResult.counterexample`` is the shallowest (ties: smallest fingerprint), which is deterministic but
may name a different invariant than the serial search's first one (both at the same depth). A parallel
discovery's ``state_ids`` are the fingerprints along the path (the serial search numbers its states).
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import pickle
import resource
import time
import traceback
from dataclasses import dataclass, field
from itertools import repeat
from multiprocessing.connection import wait as wait_any
from typing import Any, Callable

import numpy as np

from .explorer import (ALWAYS, SOMETIMES, TERMINAL, Discovery, ExploreResult, Model, Property, _all_hold, _halves,
                       _of_representative)
from engine.bfs import needs_judging
from .fpset import FPSet, collision_probability, u64

#: shared counters per worker: states expanded so far, transitions so far
_COUNTERS = 2
_REPORT_EVERY = 256  # states between updates of the shared counters


def owner_of(fp: int, workers: int) -> int:
    """The worker owning fingerprint ``fp`` (a stored ``uint64`` value, :func:`checker.fpset.u64`): its high bits
    (the table probes from the low bits' product, so the two are independent)."""
    return ((fp >> 40) * workers) >> 24


def all_cores() -> int:
    """The cores this process may use (``--workers 0``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


# --------------------------------------------------------------------------- property checks
def outcomes(prop: Property, state) -> list[tuple[str, str, Any]]:
    """The discoveries ``prop`` makes on ``state``: ``(name, detail, verdict)`` for each failing check of an
    ``always``/``terminal`` property or each holding one of a ``sometimes`` (the explorer's rules: bool,
    None, a Verdict or a list of Verdicts, each named by its ``invariant``)."""
    return judged(prop, prop.check(state))


def judged(prop: Property, value) -> list[tuple[str, str, Any]]:
    """:func:`outcomes` of ``prop`` on a state where its check returned ``value``."""
    if value is None:
        return []
    want = prop.kind == SOMETIMES
    if not want and type(value) is list and _all_hold(value):
        return []
    if value is True or value is False:
        return [(prop.name, "", None)] if value is want else []
    found = []
    for v in (value if isinstance(value, (list, tuple)) else (value,)):
        holds = v if isinstance(v, bool) else v.holds
        if bool(holds) is want:
            if isinstance(v, bool):
                found.append((prop.name, "", None))
            else:
                found.append((getattr(v, "invariant", None) or prop.name, str(v), v))
    return found


@dataclass
class Found:
    """A discovery made by a worker, before its path is rebuilt."""

    name: str
    kind: str
    detail: str
    verdict: Any
    fp: int
    depth: int


@dataclass
class Expansion:
    """What :func:`expand_level` produced on one worker."""

    batches: list            #: per owner: (fingerprints uint64, parent fingerprints uint64, action indices int32)
    pending: list            #: the successor states, in expansion order
    where: list              #: per pending state: (owner, position in that owner's batch)
    transitions: int = 0
    terminal: int = 0
    settled: int = 0
    found: list = field(default_factory=list)
    cut: bool = False        #: a state was left unexpanded by max_depth


class Worker:
    """One worker's part of the search: the fingerprints it owns (an :class:`FPSet`), its frontier, the
    properties. Used in-process by the level functions and inside each worker process."""

    def __init__(self, model: Model, index: int, workers: int, symmetry=None, counters=None):
        self.model = model
        self.index, self.workers = index, workers
        fp = model.fingerprint_hash
        self.fingerprint = _of_representative(fp, symmetry) if symmetry is not None else fp
        #: ``fingerprint`` as :func:`expand_level` calls it: ``form(s)``, or ``fallback(s)`` where that is None
        #: (no fallback: ``form`` is ``fingerprint``; see :func:`checker.explorer._explore`)
        self.form, self.fallback = _halves(self.fingerprint)
        self.symmetric = symmetry is not None
        props = list(model.properties())
        self.always = [p for p in props if p.kind == ALWAYS]
        self.sometimes = [p for p in props if p.kind == SOMETIMES]
        self.terminal = [p for p in props if p.kind == TERMINAL]
        #: ``(property, check)`` of every property when all are ``always``, checked in :func:`accept_level`
        #: itself (:meth:`check_new` otherwise)
        self.inline = [(p, p.check) for p in self.always] if not self.sometimes else None
        self.seen = FPSet()
        self.frontier: list = []   # (state, fp) of the current level
        self.expansion: Expansion | None = None
        self.sometimes_found: set[str] = set()
        self.counters = counters
        self.expanded = 0
        self.transitions = 0

    def fp(self, state) -> int:
        return u64(self.fingerprint(state))

    def check_new(self, state, fp: int, depth: int) -> list:
        found = []
        for p in self.always:
            found += [Found(n, p.kind, d, v, fp, depth) for n, d, v in outcomes(p, state)]
        for p in self.sometimes:
            if p.name not in self.sometimes_found:
                hits = outcomes(p, state)
                if hits:
                    self.sometimes_found.update(n for n, _, _ in hits)
                    self.sometimes_found.add(p.name)
                found += [Found(n, p.kind, d, v, fp, depth) for n, d, v in hits]
        return found


def init_level(w: Worker) -> list:
    """Put the initial states ``w`` owns into its set and frontier; returns their discoveries."""
    found = []
    for i, s in enumerate(w.model.init_states()):
        fp = w.fp(s)
        if owner_of(fp, w.workers) != w.index:
            continue
        if w.seen.add(fp, 0, i):  # parent 0: an initial state (0 is never a stored fingerprint)
            w.frontier.append((s, fp))
            found += w.check_new(s, fp, 0)
    return found


def expand_level(w: Worker, depth: int, max_depth: int | None = None) -> Expansion:
    """Step 1: expand ``w``'s frontier (its states at ``depth``); successors grouped by owner."""
    model = w.model
    actions_of, step, settles = model.actions, model.next_state, model.settles
    boundary = model.within_boundary  # (the default, every state within, is not asked)
    if getattr(boundary, "__func__", None) is Model.within_boundary:
        boundary = None
    successors = getattr(model, "successors", None)
    form, fallback, workers, terminal, route = w.form, w.fallback, w.workers, w.terminal, owner_of
    batches = [([], [], []) for _ in range(workers)]
    pending, where = [], []
    local: dict[int, int] = {}
    # With symmetry the representative's fingerprint costs a renaming per successor; interleavings that
    # commute reach the same successor many times within a level, so the plain fingerprints seen this level
    # are kept (a set for one level) and a repeat is dropped before it is renamed (same outcome: a repeat is
    # dropped by ``local`` anyway).
    plain_hash = model.fingerprint_hash if w.symmetric else None
    reached: set[int] = set()
    ex = Expansion(batches, pending, where)
    counters, base = w.counters, w.index * _COUNTERS
    transitions = 0
    for n, (state, sfp) in enumerate(w.frontier):
        if counters is not None and n % _REPORT_EVERY == 0:
            counters[base] = w.expanded + n
            counters[base + 1] = w.transitions + transitions
        if boundary is not None and not boundary(state):
            continue
        if max_depth is not None and depth >= max_depth:
            ex.cut = True
            continue
        acts = actions_of(state)
        if not acts:
            ex.terminal += 1
        if terminal and settles(state, acts):
            ex.settled += 1
            for p in terminal:
                ex.found += [Found(nm, p.kind, d, v, sfp, depth) for nm, d, v in outcomes(p, state)]
        if not acts:
            continue
        nexts = successors(state, acts) if successors is not None else map(step, repeat(state), acts)
        for idx, nxt in enumerate(nexts):
            if nxt is None:
                continue
            transitions += 1
            if plain_hash is not None:  # symmetry: a repeat of a successor of this level needs no renaming
                h = plain_hash(nxt)
                if h in reached:
                    continue
                reached.add(h)
            fp = form(nxt)
            if fp is None and fallback is not None:
                fp = fallback(nxt)
            fp = fp & 0xFFFFFFFFFFFFFFFF or 1  # u64
            if fp in local:
                continue
            local[fp] = len(pending)
            o = route(fp, workers)
            b = batches[o]
            where.append((o, len(b[0])))
            b[0].append(fp)
            b[1].append(sfp)
            b[2].append(idx)
            pending.append(nxt)
    ex.transitions = transitions
    w.expanded += len(w.frontier)
    w.transitions += transitions
    ex.batches = [(np.array(f, dtype=np.uint64), np.array(p, dtype=np.uint64), np.array(v, dtype=np.int32))
                  for f, p, v in batches]
    w.frontier = []
    w.expansion = ex
    return ex


def dedup_level(w: Worker, inbox: list) -> list:
    """Step 2: insert the batches routed to ``w`` (one per sender, in sender order) into its set; returns
    per sender the mask of fingerprints that were new."""
    return [w.seen.add_batch(f, p, v) if len(f) else np.zeros(0, dtype=bool) for f, p, v in inbox]


def accept_level(w: Worker, masks: list, depth: int) -> list:
    """Step 3: keep the successors the owners found new (``masks[o]``: owner ``o``'s answer for the batch
    ``w`` sent it) as ``w``'s next frontier, checking them; returns their discoveries."""
    ex = w.expansion
    found = []
    frontier = w.frontier = []
    masks = [m.tolist() for m in masks]  # (Python bools and ints: a numpy scalar per successor costs more)
    fps = [b[0].tolist() for b in ex.batches]
    inline, check_new = w.inline, w.check_new
    for state, (o, i) in zip(ex.pending, ex.where):
        if masks[o][i]:
            fp = fps[o][i]
            frontier.append((state, fp))
            if inline is None:
                found += check_new(state, fp, depth)
                continue
            for p, check in inline:  # (as engine.bfs.search: judged only when the value is not "holds")
                value = check(state)
                if value is None or value is True or not needs_judging(value):
                    continue
                found += [Found(n, p.kind, d, v, fp, depth) for n, d, v in judged(p, value)]
    w.expansion = None
    return found


def give_states(w: Worker, counts: list) -> list:
    """Rebalancing: the last ``counts[j]`` states of ``w``'s frontier for worker ``j`` (pickled ``(state,
    fingerprint)`` lists, None for 0), removed from ``w``'s frontier."""
    out = []
    for k in counts:
        if not k:
            out.append(None)
            continue
        moved = w.frontier[-k:]
        del w.frontier[-k:]
        out.append(pickle.dumps(moved, protocol=pickle.HIGHEST_PROTOCOL))
    return out


def take_states(w: Worker, payloads: list) -> int:
    """Rebalancing: add the states other workers gave (:func:`give_states`) to ``w``'s frontier; its size."""
    for p in payloads:
        if p is not None:
            w.frontier.extend(pickle.loads(p))
    return len(w.frontier)


def rebalance_plan(sizes: list, slack: float = 0.05, least: int = 256) -> list:
    """``moves[i][j]``: states worker ``i`` gives worker ``j`` so that every frontier is within one state of the
    mean; no moves while the largest and smallest differ by at most ``max(least, slack * total)``."""
    n, total = len(sizes), sum(sizes)
    moves = [[0] * n for _ in range(n)]
    if n < 2 or max(sizes) - min(sizes) <= max(least, slack * total):
        return moves
    target = [total // n + (1 if i < total % n else 0) for i in range(n)]
    surplus = [sizes[i] - target[i] for i in range(n)]
    takers = [j for j in range(n) if surplus[j] < 0]
    for i in range(n):
        for j in takers:
            if surplus[i] <= 0:
                break
            k = min(surplus[i], -surplus[j])
            if k > 0:
                moves[i][j] += k
                surplus[i] -= k
                surplus[j] += k
    return moves


# --------------------------------------------------------------------------- worker processes
def _rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # pragma: no cover - not Linux
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _serve(conn, model, index, workers, symmetry, counters, pause_gc) -> None:
    if pause_gc:
        gc.disable()
    w = Worker(model, index, workers, symmetry, counters)
    c0 = time.process_time()
    try:
        while True:
            msg = conn.recv()
            cmd = msg[0]
            if cmd == "init":
                conn.send(("ok", init_level(w), len(w.frontier)))
            elif cmd == "expand":
                ex = expand_level(w, msg[1], msg[2])
                out = [None if o == index else b for o, b in enumerate(ex.batches)]
                conn.send(("ok", out, ex.transitions, ex.terminal, ex.settled, ex.found, ex.cut))
            elif cmd == "dedup":
                inbox = [w.expansion.batches[index] if b is None else b for b in msg[1]]
                conn.send(("ok", dedup_level(w, inbox)))
            elif cmd == "accept":
                found = accept_level(w, msg[1], msg[2])
                conn.send(("ok", found, len(w.frontier)))
            elif cmd == "give":
                conn.send(("ok", give_states(w, msg[1])))
            elif cmd == "take":
                conn.send(("ok", take_states(w, msg[1])))
            elif cmd == "parent":
                conn.send(("ok", w.seen.parent(msg[1])))
            elif cmd == "stats":
                conn.send(("ok", time.process_time() - c0, _rss(), len(w.seen), w.seen.nbytes,
                           getattr(model, "drains", 0), w.expanded))
            elif cmd == "stop":
                conn.send(("ok",))
                return
    except BaseException:  # noqa: BLE001 - reported to the coordinator, which raises it
        try:
            conn.send(("error", traceback.format_exc()))
        except OSError:
            pass


class _Pool:
    def __init__(self, model, workers, symmetry, pause_gc):
        ctx = mp.get_context("fork")
        self.counters = ctx.RawArray("q", workers * _COUNTERS)
        self.conns, self.procs = [], []
        for i in range(workers):
            a, b = ctx.Pipe()
            p = ctx.Process(target=_serve, args=(b, model, i, workers, symmetry, self.counters, pause_gc),
                            daemon=True, name=f"explore-worker-{i}")
            p.start()
            b.close()
            self.conns.append(a)
            self.procs.append(p)

    def send_all(self, msgs) -> None:
        for c, m in zip(self.conns, msgs):
            c.send(m)

    def recv(self, i):
        reply = self.conns[i].recv()
        if reply[0] == "error":
            raise RuntimeError(f"explore worker {i} failed:\n{reply[1]}")
        return reply[1:]

    def gather(self, tick: Callable[[], None] | None = None, every: float = 0.5) -> list:
        """Every worker's reply, in worker order; ``tick()`` every ``every`` seconds while waiting."""
        out: list = [None] * len(self.conns)
        left = set(range(len(self.conns)))
        while left:
            ready = wait_any([self.conns[i] for i in left], timeout=every if tick else None)
            for c in ready:
                i = self.conns.index(c)
                out[i] = self.recv(i)
                left.discard(i)
            if tick and left:
                tick()
        return out

    def ask(self, i, msg):
        self.conns[i].send(msg)
        return self.recv(i)

    def close(self) -> None:
        for c, p in zip(self.conns, self.procs):
            try:
                if p.is_alive():
                    c.send(("stop",))
                    c.recv()
            except (OSError, EOFError):
                pass
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
            c.close()


# --------------------------------------------------------------------------- the search
def explore_parallel(
    model: Model,
    *,
    workers: int = 2,
    max_states: int | None = None,
    max_depth: int | None = None,
    stop_on_violation: bool = True,
    progress: Callable[[ExploreResult, int], None] | None = None,
    progress_seconds: float = 0.5,
    pause_gc: bool = True,
    symmetry: Callable[[Any], Any] | None = None,
) -> ExploreResult:
    """Breadth-first search of ``model`` by ``workers`` processes (``0``: all cores); see the module docstring.

    Options as :func:`checker.explorer.explore` (always ``compact``: 64-bit fingerprints; no graph). The result
    also has ``workers``, ``rss`` (bytes, summed over the worker processes and this one at the end),
    ``fpset_bytes`` and ``collision_probability`` (TLC's optimistic estimate). ``progress(result, frontier)``
    is called about every ``progress_seconds`` with the counts so far (``level``: the level being expanded)
    and once at the end."""
    if workers == 0:
        workers = all_cores()
    if workers < 1:
        raise ValueError("workers must be >= 0")
    pool = _Pool(model, workers, symmetry, pause_gc)
    try:
        return _search(model, pool, workers, max_states, max_depth, stop_on_violation, progress, progress_seconds,
                       symmetry)
    finally:
        pool.close()


def _search(model, pool: _Pool, workers, max_states, max_depth, stop_on_violation, progress, progress_seconds,
            symmetry) -> ExploreResult:
    res = ExploreResult()
    res.workers = workers
    t0, c0 = time.perf_counter(), time.process_time()
    found_all: list[Found] = []
    states = 0
    transitions = 0

    def tick(frontier: int) -> None:
        if progress is None:
            return
        cnt = pool.counters
        res.states = states
        res.transitions = transitions + sum(cnt[i * _COUNTERS + 1] for i in range(workers)) - done_transitions[0]
        res.elapsed = time.perf_counter() - t0
        res.cpu = time.process_time() - c0  # this process only while running; summed at the end
        progress(res, max(frontier - (sum(cnt[i * _COUNTERS] for i in range(workers)) - done_expanded[0]), 0))

    done_transitions, done_expanded = [0], [0]
    pool.send_all([("init",)] * workers)
    frontier = 0
    for f, n in pool.gather():
        found_all += f
        frontier += n
        states += n
    level = 0
    if any(x.kind != SOMETIMES for x in found_all) and stop_on_violation:
        res.stop_reason = "violation"
    while frontier and res.stop_reason == "exhausted":
        res.level = level
        pool.send_all([("expand", level, max_depth)] * workers)
        replies = pool.gather(lambda: tick(frontier), progress_seconds)
        done_expanded[0] += frontier
        cut = False
        for out, tr, term, settled, found, c in replies:
            transitions += tr
            res.terminal_states += term
            res.settled_states += settled
            found_all += found
            cut |= c
        done_transitions[0] = transitions
        if cut:
            res.stop_reason = "max-depth"
        # route: owner o gets, from each sender i in order, the batch i built for o (None: o's own, kept there)
        pool.send_all([("dedup", [replies[i][0][o] for i in range(workers)]) for o in range(workers)])
        masks = pool.gather()
        pool.send_all([("accept", [masks[o][0][i] for o in range(workers)], level + 1) for i in range(workers)])
        frontier = 0
        sizes = []
        for found, n in pool.gather():
            found_all += found
            frontier += n
            sizes.append(n)
        states += frontier
        _rebalance(pool, sizes, res)
        if frontier:
            res.max_depth = level + 1
        level += 1
        if stop_on_violation and any(x.kind != SOMETIMES for x in found_all):
            res.stop_reason = "violation"
        elif max_states is not None and states >= max_states and frontier:
            res.stop_reason = "max-states"
        if progress is not None:
            res.level = level
            tick(frontier)
    res.states, res.transitions = states, transitions
    # discoveries: per name the shallowest, first in (level, worker, expansion) order
    best: dict[str, Found] = {}
    for x in found_all:
        if x.name not in best or x.depth < best[x.name].depth:
            best[x.name] = x
    init_list = list(model.init_states())
    for name, x in best.items():
        ids, acts, sts = _rebuild_parallel(model, pool, workers, init_list, x.fp, symmetry)
        res.discoveries[name] = Discovery(name, x.kind, x.detail, acts, sts, ids, x.verdict)
    stats = [pool.ask(i, ("stats",)) for i in range(workers)]
    res.elapsed = time.perf_counter() - t0
    res.cpu = time.process_time() - c0 + sum(s[0] for s in stats)
    res.rss = _rss() + sum(s[1] for s in stats)
    res.fpset_bytes = sum(s[3] for s in stats)
    res.expanded_per_worker = [s[5] for s in stats]
    res.cpu_per_worker = [s[0] for s in stats]
    res.collision_probability = collision_probability(res.states, res.transitions)
    if hasattr(model, "drains"):
        model.drains += sum(s[4] for s in stats)
    res.level = res.max_depth
    if progress is not None:
        progress(res, frontier)
    return res


def _rebalance(pool: _Pool, sizes: list, res: ExploreResult) -> None:
    """Even out the workers' next frontiers (:func:`rebalance_plan`): a state stays with the worker that
    reached it, so without this every state descends from the worker owning the initial state and the other
    workers only answer dedup questions. The surplus states are pickled and sent through this process."""
    moves = rebalance_plan(sizes)
    n = len(sizes)
    if not any(any(row) for row in moves):
        return
    pool.send_all([("give", moves[i]) for i in range(n)])
    given = pool.gather()
    pool.send_all([("take", [given[i][0][j] for i in range(n)]) for j in range(n)])
    pool.gather()
    res.moved_states += sum(map(sum, moves))


def _rebuild_parallel(model: Model, pool: _Pool, workers: int, init_list: list, fp: int, symmetry):
    """The path to the state with fingerprint ``fp``: parent pointers asked of their owners, then the
    recorded action indices re-run from the initial state, each fingerprint checked."""
    chain = [fp]
    vias = []
    cur = fp
    while True:
        parent, via = pool.ask(owner_of(cur, workers), ("parent", cur))[0]
        vias.append(via)
        if parent == 0:
            break
        chain.append(parent)
        cur = parent
    chain.reverse()
    vias.reverse()
    fingerprint = model.fingerprint_hash
    if symmetry is not None:
        fingerprint = _of_representative(fingerprint, symmetry)
    state = init_list[vias[0]]
    if u64(fingerprint(state)) != chain[0]:
        raise RuntimeError("model is not deterministic: the initial state's fingerprint changed")
    states, actions = [state], []
    for nfp, via in zip(chain[1:], vias[1:]):
        action = model.actions(state)[via]
        state = model.next_state(state, action)
        if u64(fingerprint(state)) != nfp:
            raise RuntimeError(
                f"model is not deterministic: re-running action {model.format_action(action)!r} did not "
                f"reproduce the recorded state; actions() order and next_state() must be deterministic")
        actions.append(action)
        states.append(state)
    return chain, actions, states
