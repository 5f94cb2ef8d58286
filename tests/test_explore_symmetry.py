"""Symmetry reduction (issue #20 item 1): states equal up to a renaming of the writer tasks count once.

Soundness is shown three ways: (1) renaming commutes with every step of random runs (the enabled
events of a renamed state are the renamed events, and renaming after a step gives the state reached by
the renamed step from the renamed state); (2) on every variant at a small bound the verdicts (each
invariant violated and its shortest depth) are the same with and without symmetry, and every
counterexample found with symmetry replays; (3) a deliberately broken renaming that forgets the
coordinator's buffers is caught by the equality check of (2).
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from variant_sweep import every_variant

from checker.explorer import explore
from checker.protocol import SystemModel
from checker.symmetry import SymmetryRefused, representative_function
from engine import System
from model.protocol.variants import VARIANTS

FAULTS = frozenset({"lost-ack", "task-crash"})


def small_config(variant):
    """2 writers, 1 record per split, lost-ack + task-crash (one crash); 2 checkpoints, 1 where async
    event delivery or an instant per request make the space too large for an exhaustive test run."""
    cfg = VARIANTS[variant].config(parallelism=2, max_checkpoints=2, records=1, buffer_size=1, faults=FAULTS,
                                   max_crashes=1)
    if cfg.event_delivery == "async" or not cfg.share_instant_per_key:
        cfg = VARIANTS[variant].config(parallelism=2, max_checkpoints=1, records=1, buffer_size=1, faults=FAULTS,
                                       max_crashes=1)
    return cfg


def verdicts(model, symmetry=None):
    res = explore(model, max_states=40_000, stop_on_violation=False, compact=True, symmetry=symmetry)
    assert res.complete, f"not exhaustive ({res.stop_reason}): the comparison needs the whole space"
    return res, {name: d.depth for name, d in res.discoveries.items()}


def permute_event(ev, perm, cfg=None):
    """``ev`` with its task renamed; a region failover's ``crash-task(0)`` restarts every task whichever
    failed (only task 0's is listed), so it names no task."""
    if cfg is not None and ev.kind == "crash-task" and cfg.task_failover == "region":
        return ev
    return dataclasses.replace(ev, task=perm[ev.task]) if getattr(ev, "task", None) is not None else ev


def _same(a, b) -> bool:
    """Equal states (commit metadata order aside: ``permute_tasks`` keeps it sorted)."""
    ident = tuple(range(a.config.parallelism))
    return a.permute_tasks(ident).fingerprint() == b.permute_tasks(ident).fingerprint()


# ----------------------------------------------------------------- renaming commutes with the rules
@pytest.mark.parametrize("variant", ["hudi-1.1", "hudi-1.1-blocking", "hudi-1.1-async-events", "single-task-failover",
                                     "broken-commit-eq", "ack-overtakes-events", "instant-per-request"])
def test_renaming_commutes_with_every_step(variant):
    seed = 20
    rnd = random.Random(seed)
    faults = frozenset({"lost-ack", "task-crash", "abort", "coordinator-crash"})
    cfg = VARIANTS[variant].config(parallelism=3, max_checkpoints=3, records=3, buffer_size=1, faults=faults,
                                   max_crashes=2)
    perms = [(1, 0, 2), (2, 0, 1), (1, 2, 0), (0, 2, 1)]
    for run in range(6):
        s = System(cfg, seed=0)
        for step in range(40):
            evs = s.enabled_events()
            if not evs:
                break
            for perm in perms:
                r = s.permute_tasks(perm)
                assert sorted(map(str, r.enabled_events())) == sorted(str(permute_event(e, perm, cfg)) for e in evs), \
                    f"replay: seed {seed} run {run} step {step} perm {perm}"
            ev = rnd.choice(evs)
            perm = rnd.choice(perms)
            t = s.clone()
            t.apply(ev)
            u = s.permute_tasks(perm)
            u.apply(permute_event(ev, perm, cfg))
            assert _same(t.permute_tasks(perm), u), f"replay: seed {seed} run {run} step {step} {ev} perm {perm}"
            s = t


def test_permute_tasks_leaves_the_state_alone_and_rejects_non_permutations():
    s = System(VARIANTS["hudi-1.1"].config(parallelism=2), seed=0)
    for ev in s.enabled_events()[:1]:
        s.apply(ev)
    before = s.fingerprint()
    r = s.permute_tasks((1, 0))
    assert s.fingerprint() == before and r.fingerprint() != before
    assert _same(r.permute_tasks((1, 0)), s)
    with pytest.raises(ValueError, match="not a permutation"):
        s.permute_tasks((0, 0))


# ------------------------------------------------------------- same verdicts on every variant
@pytest.mark.parametrize("variant", every_variant())
def test_same_verdicts_and_depths_with_and_without_symmetry(variant, tmp_path):
    from checker.replay import replay
    from lakeio.traces import load_trace, write_trace

    cfg = small_config(variant)
    plain, v_plain = verdicts(SystemModel(cfg))
    model = SystemModel(cfg)
    sym, v_sym = verdicts(model, representative_function(model))
    assert v_sym == v_plain
    assert sym.states <= plain.states
    if not VARIANTS[variant].expected or variant == "hudi-1.1":
        assert sym.states < plain.states
    # every counterexample found with symmetry is a real run: its actions replay to its states
    for d in sym.counterexamples:
        s = model.init_states()[0]
        for ev, want in zip(d.actions, d.states[1:]):
            s = model.next_state(s, ev)
            assert model.fingerprint(s) == model.fingerprint(want)
        # ... and its trace replays to a violation (what `hoodie-lab replay` runs)
        path = write_trace(tmp_path / f"{d.property}.jsonl", cfg, model.trace_events(d), seed=model.seed,
                           driver="explore")
        assert not replay(load_trace(path)).ok, f"{variant}: {d.property} does not replay"


def test_reduction_on_the_correct_design_is_close_to_two():
    cfg = small_config("hudi-1.1")
    plain, _ = verdicts(SystemModel(cfg))
    model = SystemModel(cfg)
    sym, _ = verdicts(model, representative_function(model))
    assert 1.5 < plain.states / sym.states <= 2.0


@pytest.mark.parametrize("variant", ["broken-commit-order", "bug-19215", "no-coordinator-snapshot",
                                     "blocking-lost-ack-stall"])
def test_counterexamples_found_with_symmetry_replay(variant, tmp_path):
    from checker.replay import replay
    from lakeio.traces import load_trace, write_trace

    cfg = small_config(variant)
    model = SystemModel(cfg)
    res = explore(model, max_states=40_000, compact=True, symmetry=representative_function(model))
    ce = res.counterexample
    assert ce is not None
    path = write_trace(tmp_path / "ce.jsonl", cfg, model.trace_events(ce), seed=model.seed, driver="explore")
    again = replay(load_trace(path))
    assert not again.ok and again.violation.invariant == ce.property
    plain = explore(SystemModel(cfg), max_states=40_000, compact=True).counterexample
    assert (plain.property, plain.depth) == (ce.property, ce.depth)


# ------------------------------------------------------------------ a broken canonicaliser is caught
class ForgetsBuffers(SystemModel):
    """Broken on purpose: renames everything but the coordinator's buffers (merges states that differ)."""

    def permute(self, s, perm):
        r = super().permute(s, perm)
        if r is not s:
            r.coordinator = s.coordinator
            r._own_c = False
            r._coordinator_hash = None
        return r


# ------------------------------------------------------------------ refusals
def test_symmetry_is_refused_where_unsound_or_too_costly():
    with pytest.raises(SymmetryRefused, match="at most 4 tasks"):
        representative_function(SystemModel(VARIANTS["hudi-1.1"].config(parallelism=5)))

    class OwnActions(SystemModel):
        def actions(self, s):
            return s.enabled_events()

    with pytest.raises(SymmetryRefused, match="lists its own actions"):
        representative_function(OwnActions(VARIANTS["hudi-1.1"].config()))


def test_cli_symmetry_flag_reports_canonical_states(tmp_path, capsys):
    from hoodie_lab.cli import main

    args = ["explore", "--checkpoints", "1", "--records", "1", "--faults", "lost-ack", "--out", str(tmp_path)]
    assert main(args) == 0
    plain = capsys.readouterr().out
    assert "symmetry" not in plain
    assert main(args + ["--symmetry"]) == 0
    out = capsys.readouterr().out
    assert "symmetry reduction on:" in out and "canonical states" in out
    assert main(["explore", "--writers", "5", "--symmetry", "--out", str(tmp_path)]) == 2
    assert "--symmetry:" in capsys.readouterr().err


# ------------------------------------------------------------------ exactly one state per orbit
def orbit_count(cfg) -> int:
    """The number of orbits of the plainly reachable states under renaming the tasks, found without the
    checker's representative: a plain BFS keeping every state, then union of the states whose
    renamings (:meth:`System.permute_tasks`) are among them."""
    from itertools import permutations

    model = SystemModel(cfg)
    ident = tuple(range(cfg.parallelism))
    start = model.init_states()[0]
    seen = {model.fingerprint(start): start}
    frontier = [start]
    while frontier:
        nxt = []
        for s in frontier:
            for ev in model.actions(s):
                t = model.next_state(s, ev)
                fp = model.fingerprint(t)
                if fp not in seen:
                    seen[fp] = t
                    nxt.append(t)
        frontier = nxt
    assert len(seen) < 40_000
    norm = {}
    for s in seen.values():
        norm[model.fingerprint(model.permute(s, ident))] = s
    classes, counted = 0, set()
    for fp, s in norm.items():
        if fp in counted:
            continue
        classes += 1
        for p in permutations(ident):
            counted.add(model.fingerprint(model.permute(s, p)))
    return classes


def symmetric_count(model) -> int:
    res = explore(model, max_states=40_000, stop_on_violation=False, compact=False,
                  symmetry=representative_function(model))
    assert res.complete
    return res.states


@pytest.mark.parametrize("variant", ["hudi-1.1", "single-task-failover", "broken-commit-eq",
                                     "hudi-1.1-async-events", "hudi-1.1-executor"])
def test_symmetric_search_keeps_exactly_one_state_per_orbit(variant):
    cfg = small_config(variant)
    assert symmetric_count(SystemModel(cfg)) == orbit_count(cfg)


def test_a_canonicaliser_that_forgets_the_buffers_merges_orbits_and_is_caught():
    """At these bounds the forgetful renaming leaves the verdicts alone (every violation is still reached
    along other paths), so the one-state-per-orbit count is what catches it."""
    cfg = small_config("hudi-1.1")
    assert symmetric_count(ForgetsBuffers(cfg)) != orbit_count(cfg)


# ------------------------------------------------------------------ the cheap canonical form (engine.canonical)
@pytest.mark.parametrize("variant", ["hudi-1.1", "hudi-1.1-async-events", "single-task-failover", "broken-commit-eq",
                                     "hudi-1.1-executor", "table-service-on-executor"])
def test_canonical_fingerprint_is_the_same_for_every_renaming(variant):
    """The column form (:mod:`engine.canonical`) is constant on an orbit: every renaming of every state of
    random runs has the state's canonical fingerprint and hash (exact and compact); the plain fingerprint
    differs for some of them, so the check is not vacuous."""
    from itertools import permutations

    seed = 31
    rnd = random.Random(seed)
    faults = frozenset({"lost-ack", "task-crash", "abort", "coordinator-crash"})
    cfg = VARIANTS[variant].config(parallelism=3, max_checkpoints=3, records=3, buffer_size=1, faults=faults,
                                   max_crashes=2)
    differ = queued = 0
    for run in range(4):
        s = System(cfg, seed=0)
        for step in range(40):
            want, want_h = s.canonical_fingerprint(), s.canonical_fingerprint_hash()
            if s.executor and s._executor_names_a_task():  # a queued request names its task: renaming instead
                assert want is None and want_h is None, f"replay: seed {seed} run {run} step {step}"
                queued += 1
            else:
                assert want is not None and want_h is not None, f"replay: seed {seed} run {run} step {step}"
            for perm in permutations(range(3)):
                r = s.permute_tasks(perm)
                assert r.canonical_fingerprint() == want, f"replay: seed {seed} run {run} step {step} perm {perm}"
                assert r.canonical_fingerprint_hash() == want_h, f"replay: seed {seed} run {run} step {step}"
                differ += r.fingerprint() != s.fingerprint()
            evs = s.enabled_events()
            if not evs:
                break
            t = s.clone()
            t.apply(rnd.choice(evs))
            s = t
    assert differ > 0
    assert (queued > 0) == cfg.executor_queue  # the executor variants reach queued requests


def test_symmetric_search_uses_the_canonical_form_and_falls_back_where_a_task_names_another():
    from checker.explorer import _of_representative

    cfg = small_config("hudi-1.1")
    model = SystemModel(cfg)
    rep = representative_function(model)
    canon = _of_representative(model.fingerprint_hash, rep)
    s = model.init_states()[0]
    for ev in s.enabled_events()[:3]:
        s = model.next_state(s, ev)
    assert canon(s) == s.canonical_fingerprint_hash() != model.fingerprint_hash(rep(s))
    # a writer holding another task's event: the column form does not apply, renaming does
    from model.protocol.values import WriteMetadataEvent, WriteStatus

    odd = s.clone()
    w = odd.writer_to_change(0)
    w.state = (WriteMetadataEvent(1, -1, "x", (WriteStatus(1, 0, 1),), True, True),)
    assert odd.canonical_fingerprint() is None and odd.canonical_fingerprint_hash() is None
    assert canon(odd) == model.fingerprint_hash(rep(odd))
    assert _of_representative(model.fingerprint, rep)(odd) == model.fingerprint(rep(odd))


@pytest.mark.pure_engine  # monkeypatches the engine (conftest.py)
def test_a_canonical_form_that_sorts_each_part_on_its_own_merges_orbits_and_is_caught(monkeypatch):
    """Broken on purpose: the writers' columns sorted on their own instead of with the rest of their task's
    column (a writer no longer tied to its channel, buffer slots, snapshots and statuses): no longer
    constant on an orbit, nor one value per orbit. The one-state-per-orbit count catches it (as it catches the
    renaming that forgets the buffers)."""
    from engine import canonical

    real, real_hashes = canonical.writers_part, canonical.writers_hashes

    def sorted_alone(writers):
        shared, cols, shared_hash, hashes = real(writers)
        order = sorted(range(len(cols)), key=lambda t: hashes[t])
        return shared, [cols[t] for t in order], shared_hash, tuple(hashes[t] for t in order)

    def hashes_sorted_alone(writers):  # (the compact form's: the writers' hashes only)
        shared_hash, hashes = real_hashes(writers)
        return shared_hash, tuple(sorted(hashes))

    cfg = small_config("hudi-1.1")
    honest = symmetric_count(SystemModel(cfg))
    monkeypatch.setattr(canonical, "writers_part", sorted_alone)
    monkeypatch.setattr(canonical, "writers_hashes", hashes_sorted_alone)
    assert symmetric_count(SystemModel(cfg)) != orbit_count(cfg) == honest


def fresh_canonical_fingerprint_hash(s) -> int | None:
    """``s.canonical_fingerprint_hash()`` computed on a copy without any cached part (the System's and its hash, the
    writers', the table's, the coordinator's buffers', the pending checkpoint's, the buffer entries'): what the
    cached value must equal."""
    from engine import canonical

    c = s.clone()
    c._canon_c = c._canon_w = c._canon_k = c._canon_ch = c._canon_fp = None
    c.writers = [w.copy() for w in c.writers]
    for w in c.writers:
        w._ctail = None
    c._own_w = None
    c.table = c.table.copy()
    c.table._canon = c.table._meta_canon = None
    coordinator = c.coordinator.copy()
    coordinator.buffers = {k: e.copy() for k, e in coordinator.buffers.items()}
    for e in coordinator.buffers.values():
        e._cslots = None
    c.replace_coordinator(coordinator)
    if c.pending_checkpoint is not None:
        c.pending_checkpoint = c.pending_checkpoint.copy()
        c.pending_checkpoint._canon = None
    saved = dict(canonical._entries)
    canonical._entries.clear()
    try:
        return c.canonical_fingerprint_hash()
    finally:
        canonical._entries.update(saved)


@pytest.mark.parametrize("variant", ["hudi-1.1", "hudi-1.1-blocking", "hudi-1.1-async-events", "single-task-failover",
                                     "bug-19215", "hudi-0.x-coordinator-start"])
def test_cached_canonical_hash_equals_a_fresh_one_along_random_runs(variant):
    """The parts are cached per change (System slots, ``WriterTask._canon``, buffer entries): the System is
    changed in place step after step (clones too), the canonical hash asked in between, and every cached
    value must equal the one computed from scratch."""
    seed = 7
    rnd = random.Random(seed)
    faults = frozenset({"lost-ack", "task-crash", "abort", "coordinator-crash", "full-restart"})
    cfg = VARIANTS[variant].config(parallelism=3, max_checkpoints=3, records=3, buffer_size=1, faults=faults,
                                   max_crashes=2)
    checked = 0
    for run in range(5):
        s = System(cfg, seed=0)
        for step in range(50):
            got = s.canonical_fingerprint_hash()
            assert got == fresh_canonical_fingerprint_hash(s), f"replay: {variant} seed {seed} run {run} step {step}"
            checked += got is not None
            evs = s.enabled_events()
            if not evs:
                break
            if rnd.random() < 0.5:
                s = s.clone()  # the old state keeps its caches, the clone shares them copy-on-write
            s.apply(rnd.choice(evs))
    assert checked > 100


def test_a_stale_writer_column_is_caught_by_the_fresh_comparison():
    """Broken on purpose: a writer changed without dropping its cached column (``_w`` bypassed)."""
    s = System(VARIANTS["hudi-1.1"].config(parallelism=2), seed=0)
    s.canonical_fingerprint_hash()
    s.writers[0].offset += 1  # no _w: the cached column is stale
    s._canon_w = s._canon_fp = None
    assert s.canonical_fingerprint_hash() != fresh_canonical_fingerprint_hash(s)


def canonical_partitions(cfg, cap: int = 6_000) -> tuple[int, int, int]:
    """Breadth first over the states of ``cfg`` (up to ``cap``, by their own fingerprints): the number of distinct
    exact canonical forms, of canonical hashes, and of (form, hash) pairs among them (None counted as one)."""
    s0 = System(cfg, seed=0)
    seen, frontier, states = {s0.fingerprint()}, [s0], [s0]
    while frontier and len(states) < cap:
        nxt = []
        for s in frontier:
            for ev in s.enabled_events():
                t = s.clone()
                t.apply(ev, check=False)
                fp = t.fingerprint()
                if fp not in seen:
                    seen.add(fp)
                    nxt.append(t)
                    states.append(t)
        frontier = nxt
    pairs = {(s.canonical_fingerprint(), s.canonical_fingerprint_hash()) for s in states}
    return len({p[0] for p in pairs}), len({p[1] for p in pairs}), len(pairs)


@pytest.mark.parametrize("variant", every_variant())
def test_the_canonical_hash_tells_states_apart_as_the_exact_form_does(variant):
    """The compact canonical fingerprint is combined from the parts' kept hashes (``System._canonical_hashes``),
    the exact form from the parts afresh (``System._canonical_parts``): on the states of a small exploration,
    two states share a hash exactly when they share the exact form (no part's hash left out or stale, none
    hashed that the form leaves out; a 64-bit collision among a few thousand states would be a ~1e-12
    event)."""
    forms, hashes, pairs = canonical_partitions(small_config(variant))
    assert forms == hashes == pairs, f"{variant}: {forms} forms, {hashes} hashes, {pairs} (form, hash) pairs"
    assert forms > 50


@pytest.mark.pure_engine  # monkeypatches the engine (conftest.py)
def test_a_canonical_hash_that_leaves_out_the_coordinators_shared_part_is_caught(monkeypatch):
    """Broken on purpose: the coordinator's shared hash (its keys, instants, highest ack and assignments) left
    out, so states differing only there share a hash while their exact forms differ. (Leaving out the buffer
    slots' or the checkpoints' columns is not caught at this bound: what they hold is told by other parts of
    these small states too.)"""
    from engine import canonical

    real = canonical.coordinator_part

    def without_shared_hash(c, n):
        shared, cols, _, col_hashes = real(c, n)
        return shared, cols, 0, col_hashes

    monkeypatch.setattr(canonical, "coordinator_part", without_shared_hash)
    forms, hashes, _ = canonical_partitions(small_config("hudi-1.1"))
    assert hashes < forms


@pytest.mark.parametrize("variant", ["hudi-1.1", "hudi-1.1-async-events", "single-task-failover", "bug-19215"])
def test_the_compact_paths_give_exactly_the_hashes_of_their_parts(variant):
    """``canonical.writers_hashes``, ``checkpoint_hashes`` and ``Table.canonical_hashes`` skip building the parts'
    columns (and keep what they can): along random runs with 3 tasks, each must equal :func:`canonical.hashes`
    of the part built afresh (``writers_part``, ``checkpoint_part``, ``Table.canonical_part``)."""
    from engine import canonical

    seed = 11
    rnd = random.Random(seed)
    cfg = VARIANTS[variant].config(parallelism=3, max_checkpoints=3, records=3, buffer_size=1, max_crashes=2,
                                   faults=frozenset({"lost-ack", "task-crash", "coordinator-crash", "full-restart"}))
    compared = pending = 0
    for run in range(5):
        s = System(cfg, seed=0)
        for step in range(50):
            n = s._k.parallelism
            where = f"replay: {variant} seed {seed} run {run} step {step}"
            try:
                writers = canonical.hashes(canonical.writers_part(s.writers))
            except canonical.Foreign:
                writers = None
            if writers is not None:
                assert canonical.writers_hashes(s.writers) == writers, where
            for cp in (s.pending_checkpoint, s.last_completed):
                try:
                    want = canonical.hashes(canonical.checkpoint_part(cp, n))
                except canonical.Foreign:
                    continue
                assert canonical.checkpoint_hashes(cp, n) == want, where
                assert canonical.checkpoint_hashes(cp, n) == want, where  # (the second time from the kept values)
                pending += cp is s.pending_checkpoint and cp is not None
            try:
                table = canonical.hashes(s.table.canonical_part(n))
            except canonical.Foreign:
                table = None
            if table is not None:
                assert s.table.canonical_hashes(n) == table, where
            compared += 1
            evs = s.enabled_events()
            if not evs:
                break
            if rnd.random() < 0.5:
                s = s.clone()
            s.apply(rnd.choice(evs))
    assert compared > 100 and pending > 20, (compared, pending)


def test_a_checkpoints_coordinator_state_keeps_its_slots_in_the_columns():
    """A completed checkpoint's coordinator state enters the canonical form per task: its slots (task ids left
    out) in the task's column. Compiled, the form once read every such column as None (``cols`` inferred as a
    list of None from ``[None] * n``), leaving the slots out; run on the engine in use."""
    from engine import canonical
    from model.protocol.values import BufferEntry, CompletedCheckpoint, WriteMetadataEvent

    ev = WriteMetadataEvent(0, 1, "001", ((0, 0, 1),), False, False)
    cp = CompletedCheckpoint(1, ((1, BufferEntry("001", (ev, None))),), (None, None))
    shared, cols, _, col_hashes = canonical.checkpoint_part(cp, 2)
    assert shared == (1, ((1, "001"),))
    assert cols == [(None, ((1, "001", ((0, 1),), False, False),)), (None, (None,))]
    assert col_hashes[0] != col_hashes[1]
    assert canonical.checkpoint_hashes(cp, 2) == (hash(shared), col_hashes)
