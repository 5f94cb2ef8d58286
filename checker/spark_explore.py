"""The level-synchronous breadth-first search as Spark jobs (issue #20 item 3).

The same search as :func:`checker.parallel.explore_parallel` -- fingerprints partitioned by owner
(:func:`checker.parallel.owner_of`), one BFS level at a time, same counts (distinct states, transitions, max
depth, terminal and settled states, drained checks) and verdicts -- with Spark tasks instead of worker
processes and files instead of in-memory sets. ``partitions`` fingerprint partitions ``0..P-1``; for each,
under ``workdir`` (a directory every executor reaches: this machine's filesystem for ``local[N]`` and the
standalone cluster on 127.0.0.1):

* ``L<d>/frontier-<o>.pkl`` -- the states new at level ``d`` that partition ``o`` owns, with their
  fingerprints (the frontier: a dataset partitioned by fingerprint, one file a partition): the senders'
  pickled lists of successors as they arrived, with the positions of the new ones (a state is pickled once,
  by the task that reached it, one list per sender and owner so parts the states share are written once;
  closures go by value through Spark's cloudpickle);
* ``L<d>/visited-<o>.npy`` -- the sorted ``uint64`` fingerprints ``o`` owns, visited up to level ``d``;
* ``L<d>/parents-<o>.npy`` -- per state new at level ``d``: fingerprint, parent fingerprint, action index
  (sorted by fingerprint), from which a counterexample's path is rebuilt.

Level ``d`` is one Spark job of two stages: task ``i`` of the first expands ``frontier-i`` of level ``d``
(terminal properties, enabled actions, successors' fingerprints; successors repeated within the task are
dropped there, the others checked against the ``always``/``sometimes`` properties) and sends owner ``o`` one
record ``(fingerprints, parent fingerprints, action indices, pickled states, discoveries)``; the shuffle
(``partitionBy`` on the owner) brings owner ``o`` one record from every sender; task ``o`` of the second stage
dedups them with numpy, in sender order (first sender wins a tie, as in :mod:`checker.parallel`), against
``visited-o`` of level ``d``, keeps the discoveries of the new states and writes the level ``d+1`` files. The
driver collects one small summary per partition (counts, discoveries), deletes level ``d``'s frontier and
visited files, and stops after the level where a counterexample was found (``stop_on_violation``: the counts
then include that whole level) or the state count passed ``max_states``. Every file a task writes is named by
its level, so a retried task rewrites the same files from the same inputs.

Fingerprints are :func:`checker.stablefp.stable_hash` of ``model.fingerprint`` (Python's ``hash`` differs
between the executors' interpreters); with ``symmetry`` the representative is picked by that hash too. Counts
therefore equal the in-process searches' (which use ``hash``) unless a 64-bit collision occurs in one and not
the other. A counterexample is shortest (BFS by levels) and is rebuilt in the driver from the parent files and
re-run from the initial state, each state's stable fingerprint checked against the recorded one.

The caller passes the ``SparkContext`` (this floor starts no Spark: ``pipeline.spark.get_spark`` does, for the
CLI); the model travels to the executors pickled (cloudpickle) and must be importable there
(``spark.executorEnv.PYTHONPATH``).
"""

from __future__ import annotations

import io
import os
import pickle
import shutil
import time
from pathlib import Path
from types import FunctionType
from typing import Any, Callable

import numpy as np

from .explorer import ALWAYS, SOMETIMES, TERMINAL, Discovery, ExploreResult, Model
from .fpset import collision_probability
from .parallel import Found, _rss, outcomes, owner_of
from .stablefp import StableHasher, stable_hash

PARENT_DTYPE = np.dtype([("fp", "<u8"), ("parent", "<u8"), ("via", "<i4")])


class _Pickler(pickle.Pickler):
    """The C pickler, except for functions pickle cannot name (the protocol's states hold closures:
    ``engine.coordinator``'s commit rule), which go by value through Spark's cloudpickle, once per code object
    (cloudpickle alone writes every such function object anew: about 12 % larger lists here, same speed)."""

    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._by_value: dict = {}

    def reducer_override(self, obj):
        if type(obj) is FunctionType and "<" in obj.__qualname__:  # <lambda>, <locals>
            # functions without closure or defaults are equal when their code is: pickled once per code object
            key = obj.__code__ if not (obj.__closure__ or obj.__defaults__ or obj.__kwdefaults__) else id(obj)
            blob = self._by_value.get(key)
            if blob is None:
                from pyspark import cloudpickle

                blob = self._by_value[key] = (obj, cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
            return pickle.loads, (blob[1],)
        return NotImplemented


def _dumps(obj) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf).dump(obj)
    return buf.getvalue()


def _level_dir(workdir: str, depth: int) -> Path:
    return Path(workdir) / f"L{depth:04d}"


def _write_atomic(path: Path, write: Callable[[Any], None]) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        write(f)
    os.replace(tmp, path)


def _save_npy(path: Path, arr: np.ndarray) -> None:
    _write_atomic(path, lambda f: np.save(f, arr, allow_pickle=False))


class _StableView:
    """``model`` with :func:`stable_hash` as its ``fingerprint_hash``, for :mod:`checker.symmetry` (which picks
    the renaming with the smallest hash: it must be the same renaming on every executor)."""

    def __init__(self, model, hasher=stable_hash):
        self.model = model
        fingerprint = model.fingerprint
        self.fingerprint = fingerprint
        self.fingerprint_hash = lambda s: hasher(fingerprint(s))
        self.symmetry_tasks = model.symmetry_tasks
        self.permute = model.permute


def fingerprinter(model, symmetric: bool) -> Callable[[Any], int]:
    """``state -> 64-bit stable fingerprint`` (of the symmetry representative when ``symmetric``)."""
    fingerprint = model.fingerprint
    hasher = StableHasher()
    if not symmetric:
        return lambda s: hasher(fingerprint(s))
    from .symmetry import representative_function

    rep = representative_function(_StableView(model, hasher))
    return lambda s: hasher(fingerprint(rep(s)))


class _Plan:
    """What every task needs (pickled into the job's closure)."""

    def __init__(self, model, workdir: str, partitions: int, symmetric: bool, max_depth: int | None,
                 route: Callable[[int, int], int] = owner_of):
        self.model, self.workdir, self.partitions = model, workdir, partitions
        self.symmetric, self.max_depth, self.route = symmetric, max_depth, route


class _Checker:
    """The properties of a task's model and the ``sometimes`` names already found (reported once)."""

    def __init__(self, model, sometimes_done: frozenset):
        props = list(model.properties())
        self.always = [p for p in props if p.kind == ALWAYS]
        self.sometimes = [p for p in props if p.kind == SOMETIMES]
        self.terminal = [p for p in props if p.kind == TERMINAL]
        self.done = set(sometimes_done)

    def check_new(self, state, fp: int, depth: int, mark: bool = True) -> list:
        """The discoveries on ``state``; a ``sometimes`` hit is marked done (not reported again by this task)
        only when ``mark`` (a successor that may turn out not new must not hide a later new one's hit)."""
        found = []
        for p in self.always:
            found += [Found(n, p.kind, d, v, fp, depth) for n, d, v in outcomes(p, state)]
        for p in self.sometimes:
            if p.name not in self.done:
                hits = outcomes(p, state)
                if hits and mark:
                    self.done.update(n for n, _, _ in hits)
                    self.done.add(p.name)
                found += [Found(n, p.kind, d, v, fp, depth) for n, d, v in hits]
        return found


def _write_level(plan: _Plan, depth: int, o: int, visited: np.ndarray, fps: list, parents: list, vias: list,
                 chunks: list) -> None:
    """Level ``depth``'s files of partition ``o``; ``chunks``: ``(pickled list of states, indices)`` whose picked
    states, in order, are the new states ``fps`` (the senders' pickles are written as they came, not re-pickled)."""
    d = _level_dir(plan.workdir, depth)
    d.mkdir(parents=True, exist_ok=True)
    new = np.array(fps, dtype=np.uint64)
    rec = np.empty(len(fps), dtype=PARENT_DTYPE)
    rec["fp"], rec["parent"], rec["via"] = new, np.array(parents, dtype=np.uint64), np.array(vias, dtype=np.int32)
    rec.sort(order="fp")
    _save_npy(d / f"parents-{o:04d}.npy", rec)
    _save_npy(d / f"visited-{o:04d}.npy", np.union1d(visited, new))
    _write_atomic(d / f"frontier-{o:04d}.pkl",
                  lambda f: pickle.dump((new, chunks), f, protocol=pickle.HIGHEST_PROTOCOL))


def _load_frontier(plan: _Plan, depth: int, i: int) -> tuple[np.ndarray, list]:
    with open(_level_dir(plan.workdir, depth) / f"frontier-{i:04d}.pkl", "rb") as f:
        fps, chunks = pickle.load(f)
    states = []
    for blob, picked in chunks:
        batch = pickle.loads(blob)
        states += [batch[j] for j in picked]
    if len(states) != len(fps):
        raise RuntimeError(f"spark explore: frontier {i} of level {depth}: {len(states)} states, "
                           f"{len(fps)} fingerprints")
    return fps, states


# --------------------------------------------------------------------------- the tasks
def _init_task(plan: _Plan, sometimes_done: frozenset, o: int, _items):
    """Level 0 for partition ``o``: the initial states it owns."""
    model = plan.model
    drains0 = getattr(model, "drains", 0)
    fp_of = fingerprinter(model, plan.symmetric)
    checker = _Checker(model, sometimes_done)
    fps, parents, vias, states, found = [], [], [], [], []
    for i, s in enumerate(model.init_states()):
        fp = fp_of(s)
        if plan.route(fp, plan.partitions) != o or fp in fps:
            continue
        fps.append(fp)
        parents.append(0)  # parent 0: an initial state (0 is never a fingerprint)
        vias.append(i)
        states.append(s)
        found += checker.check_new(s, fp, 0)
    _write_level(plan, 0, o, np.zeros(0, dtype=np.uint64), fps, parents, vias,
                 [(_dumps(states), list(range(len(states))))] if states else [])
    yield dict(partition=o, new=len(fps), found=found, transitions=0, terminal=0, settled=0, cut=False,
               drains=getattr(model, "drains", 0) - drains0, visited_bytes=8 * len(fps))


def _expand_task(plan: _Plan, depth: int, sometimes_done: frozenset, i: int, _items):
    """Stage 1 of a level: expand partition ``i``'s frontier; one record per owner. The ``always``/``sometimes``
    properties are checked here, on every successor new to this task (the owner keeps the discoveries of the
    ones it finds new), so the owner never unpickles a state."""
    model = plan.model
    drains0 = getattr(model, "drains", 0)
    P, max_depth, route = plan.partitions, plan.max_depth, plan.route
    fps, states = _load_frontier(plan, depth, i)
    checker = _Checker(model, sometimes_done)
    actions_of, step, boundary, settles = model.actions, model.next_state, model.within_boundary, model.settles
    terminal_props = [p for p in model.properties() if p.kind == TERMINAL]
    fp_of = fingerprinter(model, plan.symmetric)
    batches = [([], [], [], [], []) for _ in range(P)]
    local: set[int] = set()
    transitions = terminal = settled = 0
    found: list = []
    cut = False
    for sfp, state in zip(fps.tolist(), states):
        if not boundary(state):
            continue
        if max_depth is not None and depth >= max_depth:
            cut = True
            continue
        acts = actions_of(state)
        if not acts:
            terminal += 1
        if terminal_props and settles(state, acts):
            settled += 1
            for p in terminal_props:
                found += [Found(nm, p.kind, d, v, sfp, depth) for nm, d, v in outcomes(p, state)]
        for idx, action in enumerate(acts):
            nxt = step(state, action)
            if nxt is None:
                continue
            transitions += 1
            fp = fp_of(nxt)
            if fp in local:
                continue
            local.add(fp)
            b = batches[route(fp, P)]
            b[0].append(fp)
            b[1].append(sfp)
            b[2].append(idx)
            b[3].append(nxt)
            b[4].append(checker.check_new(nxt, fp, depth + 1, mark=False) or None)
    stats = dict(transitions=transitions, terminal=terminal, settled=settled, found=found, cut=cut,
                 drains=getattr(model, "drains", 0) - drains0)
    for o, (f, p, v, s, found_on) in enumerate(batches):
        yield o, (i, np.array(f, dtype=np.uint64), np.array(p, dtype=np.uint64), np.array(v, dtype=np.int32),
                  _dumps(s) if s else None, {j: x for j, x in enumerate(found_on) if x}, stats if o == i else None)


def _dedup_task(plan: _Plan, depth: int, o: int, items):
    """Stage 2 of a level: owner ``o`` dedups what the senders routed to it and writes level ``depth + 1``
    (numpy only: the senders' pickled states go to the frontier file as they came)."""
    records = sorted((rec for _, rec in items), key=lambda r: r[0])  # sender order
    if len(records) != plan.partitions:
        raise RuntimeError(f"spark explore: partition {o} got {len(records)} records, expected {plan.partitions}")
    stats = next(r[6] for r in records if r[0] == o)
    visited = np.load(_level_dir(plan.workdir, depth) / f"visited-{o:04d}.npy", allow_pickle=False)
    incoming = np.concatenate([r[1] for r in records]) if records else np.zeros(0, dtype=np.uint64)
    if len(visited) and len(incoming):
        pos = np.minimum(np.searchsorted(visited, incoming), len(visited) - 1)
        old = visited[pos] == incoming
    else:
        old = np.zeros(len(incoming), dtype=bool)
    first = np.zeros(len(incoming), dtype=bool)
    if len(incoming):
        first[np.unique(incoming, return_index=True)[1]] = True  # first occurrence, in sender order
    new = first & ~old
    fps, parents, vias, chunks, found = [], [], [], [], []
    start = 0
    for _, f, p, v, blob, found_on, _ in records:
        mask = new[start:start + len(f)]
        start += len(f)
        if not mask.any():
            continue
        picked = np.flatnonzero(mask)
        fps += f[picked].tolist()
        parents += p[picked].tolist()
        vias += v[picked].tolist()
        chunks.append((blob, picked.tolist()))
        for j in picked.tolist():
            found += found_on.get(j, ())
    _write_level(plan, depth + 1, o, visited, fps, parents, vias, chunks)
    yield dict(stats, partition=o, new=len(fps), found=stats["found"] + found,
               visited_bytes=8 * (len(visited) + len(fps)))


def _identity(key: int) -> int:
    return key


# --------------------------------------------------------------------------- the search
def explore_spark(
    model: Model,
    sc,
    workdir: str | os.PathLike,
    *,
    partitions: int | None = None,
    max_states: int | None = None,
    max_depth: int | None = None,
    stop_on_violation: bool = True,
    progress: Callable[[ExploreResult, int], None] | None = None,
    symmetric: bool = False,
    keep_files: bool = False,
    route: Callable[[int, int], int] = owner_of,
) -> ExploreResult:
    """Breadth-first search of ``model`` as Spark jobs on ``sc`` (see the module docstring).

    ``partitions``: fingerprint partitions (default ``sc.defaultParallelism``); ``workdir``: an empty or absent
    directory every executor can reach (removed at the end unless ``keep_files``); ``symmetric``: count states
    equal up to renaming the model's tasks once (:mod:`checker.symmetry`). Other options as
    :func:`checker.parallel.explore_parallel`. The result's ``workers`` is the partition count, ``fpset_bytes``
    the size of the visited files, ``rss`` the driver's; ``progress(result, frontier)`` is called after every
    level. ``route(fp, partitions)`` names a fingerprint's owner (:func:`checker.parallel.owner_of`); it must be
    a function of the fingerprint (the tests pass one that is not and see the counts go wrong)."""
    P = partitions or sc.defaultParallelism
    if P < 1:
        raise ValueError("partitions must be >= 1")
    if P > 1 << 24:
        raise ValueError("partitions must be <= 2**24 (owner_of uses 24 bits)")
    work = Path(workdir)
    if work.exists() and any(work.iterdir()):
        raise ValueError(f"{work}: the work directory must be empty (it holds one search's files)")
    work.mkdir(parents=True, exist_ok=True)
    if symmetric:
        fingerprinter(model, True)  # refuses (SymmetryRefused) here rather than on an executor
    plan = _Plan(model, str(work.resolve()), P, symmetric, max_depth, route)
    try:
        return _search(model, sc, plan, max_states, stop_on_violation, progress)
    finally:
        if not keep_files:
            shutil.rmtree(work, ignore_errors=True)


def _search(model, sc, plan: _Plan, max_states, stop_on_violation, progress) -> ExploreResult:
    from functools import partial

    P = plan.partitions
    res = ExploreResult()
    res.workers = P
    t0, c0 = time.perf_counter(), time.process_time()
    found_all: list[Found] = []
    drains = 0

    def sometimes_done() -> frozenset:
        return frozenset(x.name for x in found_all if x.kind == SOMETIMES)

    def violated() -> bool:
        return any(x.kind != SOMETIMES for x in found_all)

    sums = sc.parallelize(range(P), P).mapPartitionsWithIndex(partial(_init_task, plan, sometimes_done())).collect()
    states = frontier = sum(s["new"] for s in sums)
    for s in sums:
        found_all += s["found"]
        drains += s["drains"]
    visited_bytes = sum(s["visited_bytes"] for s in sums)
    transitions = 0
    level = 0
    if violated() and stop_on_violation:
        res.stop_reason = "violation"
    while frontier and res.stop_reason == "exhausted":
        res.level = level
        sc.setJobDescription(f"hoodie-lab explore: level {level}, frontier {frontier:,}")
        job = (sc.parallelize(range(P), P)
               .mapPartitionsWithIndex(partial(_expand_task, plan, level, sometimes_done()))
               .partitionBy(P, _identity)
               .mapPartitionsWithIndex(partial(_dedup_task, plan, level)))
        sums = job.collect()
        frontier = 0
        cut = False
        for s in sums:
            transitions += s["transitions"]
            res.terminal_states += s["terminal"]
            res.settled_states += s["settled"]
            drains += s["drains"]
            found_all += s["found"]
            frontier += s["new"]
            cut |= s["cut"]
        visited_bytes = sum(s["visited_bytes"] for s in sums)
        for o in range(P):  # level's frontier and visited set are superseded by level + 1's
            for name in (f"frontier-{o:04d}.pkl", f"visited-{o:04d}.npy"):
                (_level_dir(plan.workdir, level) / name).unlink(missing_ok=True)
        if cut:
            res.stop_reason = "max-depth"
        states += frontier
        if frontier:
            res.max_depth = level + 1
        level += 1
        if stop_on_violation and violated():
            res.stop_reason = "violation"
        elif max_states is not None and states >= max_states and frontier:
            res.stop_reason = "max-states"
        if progress is not None:
            res.states, res.transitions, res.level = states, transitions, level
            res.elapsed, res.cpu = time.perf_counter() - t0, time.process_time() - c0
            progress(res, frontier)
    res.states, res.transitions = states, transitions
    if hasattr(model, "drains"):
        model.drains += drains
    best: dict[str, Found] = {}
    for x in found_all:  # per name the shallowest; ties: the smallest fingerprint (deterministic)
        if x.name not in best or (x.depth, x.fp) < (best[x.name].depth, best[x.name].fp):
            best[x.name] = x
    init_list = list(model.init_states())
    fp_of = fingerprinter(model, plan.symmetric)
    for name, x in sorted(best.items()):
        ids, acts, sts = rebuild(model, plan, init_list, x.fp, x.depth, fp_of)
        res.discoveries[name] = Discovery(name, x.kind, x.detail, acts, sts, ids, x.verdict)
    res.elapsed = time.perf_counter() - t0
    res.cpu = time.process_time() - c0  # the driver's; the executors' CPU is not collected
    res.rss = _rss()
    res.fpset_bytes = visited_bytes
    res.collision_probability = collision_probability(res.states, res.transitions)
    res.level = res.max_depth
    if progress is not None:
        progress(res, frontier)
    return res


def parent_of(plan: _Plan, fp: int, depth: int) -> tuple[int, int]:
    """(parent fingerprint, action index) of the state with fingerprint ``fp`` new at level ``depth``."""
    path = _level_dir(plan.workdir, depth) / f"parents-{plan.route(fp, plan.partitions):04d}.npy"
    rec = np.load(path, allow_pickle=False)
    i = int(np.searchsorted(rec["fp"], np.uint64(fp)))
    if i >= len(rec) or int(rec["fp"][i]) != fp:
        raise RuntimeError(f"spark explore: fingerprint {fp:#x} is not in {path}")
    return int(rec["parent"][i]), int(rec["via"][i])


def rebuild(model, plan: _Plan, init_list: list, fp: int, depth: int, fp_of) -> tuple[list, list, list]:
    """The path to the state with fingerprint ``fp`` (new at level ``depth``): parent pointers read from the
    parent files, level by level, then the recorded action indices re-run from the initial state with each
    state's stable fingerprint checked against the recorded one."""
    chain, vias = [fp], []
    cur = fp
    for d in range(depth, -1, -1):
        parent, via = parent_of(plan, cur, d)
        vias.append(via)
        if d == 0:
            if parent != 0:
                raise RuntimeError(f"spark explore: level-0 state {cur:#x} has a parent")
            break
        chain.append(parent)
        cur = parent
    chain.reverse()
    vias.reverse()
    state = init_list[vias[0]]
    if fp_of(state) != chain[0]:
        raise RuntimeError("model is not deterministic: the initial state's fingerprint changed")
    states, actions = [state], []
    for nfp, via in zip(chain[1:], vias[1:]):
        action = model.actions(state)[via]
        state = model.next_state(state, action)
        if fp_of(state) != nfp:
            raise RuntimeError(
                f"model is not deterministic: re-running action {model.format_action(action)!r} did not "
                f"reproduce the recorded state; actions() order and next_state() must be deterministic")
        actions.append(action)
        states.append(state)
    return chain, actions, states
