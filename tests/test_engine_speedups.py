"""The engine's speed tricks say the same as what they stand for: :class:`engine.settings.Settings` is its
``ProtocolConfig``, :meth:`engine.System.successors` is ``clone()`` + ``apply()`` per event (the explorers'
:attr:`checker.explorer.Model.successors`), and the writer tasks' cached key hashes follow their changes."""

from __future__ import annotations

import random

import pytest
from dataclasses import fields

from checker import SystemModel
from checker.protocol import Refused
from engine.settings import Settings, settings
from model.protocol import VARIANTS, variant
from model.protocol.config import ProtocolConfig

DERIVED = ("blocking", "coordinator_start", "async_events", "eager", "action")


def test_settings_are_the_config():
    for name in sorted(VARIANTS):
        cfg = variant(name)
        k = settings(cfg)
        for f in fields(ProtocolConfig):
            assert getattr(k, f.name) == getattr(cfg, f.name), (name, f.name)
        for d in DERIVED:
            assert getattr(k, d) == getattr(cfg, d), (name, d)
        assert k.config == cfg and settings(cfg) is k and settings(k) is k  # (equal configurations share one)
    assert isinstance(settings(ProtocolConfig()), Settings)


def _walk(model, steps: int, seed: int):
    """The states of one random run of ``model`` (at most ``steps`` events), each fingerprinted before its
    successor is made, as the explorer does (so the parts' cached hashes are there when the successor changes)."""
    rnd = random.Random(seed)
    s = model.init_states()[0]
    out = [s]
    for _ in range(steps):
        model.fingerprint_hash(s)
        acts = model.actions(s)
        if not acts:
            break
        s = model.next_state(s, rnd.choice(acts))
        if isinstance(s, Refused):
            break
        out.append(s)
    return out


def test_successors_are_next_state_per_event():
    for name in ("hudi-1.1", "hudi-1.1-async-events", "hudi-0.x-coordinator-start", "commit-guard-on-executor",
                 "broken-commit-eq"):
        model = SystemModel(variant(name, max_checkpoints=2))
        for seed in range(3):
            for s in _walk(model, 40, seed):
                acts = model.actions(s)
                got = model.successors(s, acts)
                want = [model.next_state(s, a) for a in acts]
                assert [model.fingerprint(x) for x in got] == [model.fingerprint(x) for x in want], name
                assert [model.fingerprint_hash(x) for x in got] == [model.fingerprint_hash(x) for x in want]


def test_cached_hashes_follow_changes():
    """``fingerprint_hash`` from cached part hashes equals the one of a copy that computes them afresh."""
    model = SystemModel(variant("hudi-1.1", max_checkpoints=2))
    for seed in range(5):
        for s in _walk(model, 60, seed):
            fresh = s.clone()
            fresh._coordinator_hash = fresh._writers_hash = fresh._checkpoints_hash = None
            fresh.coordinator = s.coordinator.copy()  # (its entries and the pending checkpoint without their hashes)
            fresh.coordinator.buffers = {k: e.copy() for k, e in s.coordinator.buffers.items()}
            for e in fresh.coordinator.buffers.values():
                e._frozen_h = None
            if s.pending_checkpoint is not None:
                fresh.pending_checkpoint = s.pending_checkpoint.copy()
                fresh.pending_checkpoint._cs_h = fresh.pending_checkpoint._tasks_h = None
            fresh.writers = [w.copy() for w in s.writers]
            for w in fresh.writers:  # (from the keys: a copy that carried a stale hash over must not hide it)
                w._key_hash = w._canon = w._tail = w._ctail = None
            assert fresh.fingerprint_hash() == s.fingerprint_hash()
            assert fresh.fingerprint() == s.fingerprint()


RESTART_FAULTS = frozenset({"lost-ack", "task-crash", "coordinator-crash", "full-restart"})


def _restart_model(name: str, checkpoints: int = 2) -> SystemModel:
    return SystemModel(variant(name, parallelism=2, max_checkpoints=checkpoints, records=2, max_crashes=2,
                               faults=RESTART_FAULTS))


def _breadth_first(model: SystemModel, limit: int) -> list:
    """The first ``limit`` states of ``model`` in breadth-first order (every state of a small bound)."""
    from collections import deque

    s0 = model.init_states()[0]
    seen, out, queue = {s0.fingerprint()}, [s0], deque([s0])
    while queue and len(out) < limit:
        s = queue.popleft()
        for nxt in model.successors(s, model.actions(s)):
            if isinstance(nxt, Refused) or nxt.fingerprint() in seen:
                continue
            seen.add(nxt.fingerprint())
            out.append(nxt)
            queue.append(nxt)
    return out


def _restart_successors(model: SystemModel, states: list) -> tuple[int, int]:
    """Every restart of ``states`` checked: equal :meth:`~engine.System.restart_key`, equal successor
    fingerprints. Returns how many keys were met and how many were met again from another state."""
    from model.protocol import events as E

    by_key: dict = {}
    shared = 0
    for s in states:
        for ev in (E.CrashCoordinator(), E.RestartJob(), E.CrashTask(0), E.CrashTask(1)):
            key = s.restart_key(ev)
            if key is None or s.is_enabled(ev) is not None:
                continue
            nxt = model.next_state(s, ev)
            fp = nxt.fingerprint() if not isinstance(nxt, Refused) else ("refused", str(nxt.error))
            known = by_key.get(key)
            if known is None:
                by_key[key] = (fp, s.fingerprint())
                continue
            assert known[0] == fp, f"equal restart keys, different successors after {ev}"
            shared += known[1] != s.fingerprint()
    return len(by_key), shared


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_equal_restart_keys_give_equal_successors(name):
    """``System.successors`` hands out a kept successor for a restart whose
    :meth:`~engine.System.restart_key` it met before: the restarts of every pair of states with equal keys must
    have successors with equal fingerprints (random runs of every variant)."""
    model = _restart_model(name)
    states = [s for seed in range(8) for s in _walk(model, 80, seed)]
    keys, _ = _restart_successors(model, states)
    assert keys, f"{name}: no restart was tried"


@pytest.mark.parametrize("name", ["hudi-1.1", "hudi-1.1-async-events", "hudi-0.x-coordinator-start", "bug-19215",
                                  "single-task-failover",
                                  "hudi-1.1-blocking", "non-idempotent-recommit"])
def test_restart_keys_over_every_state_of_a_small_bound(name):
    """The same over the first 20,000 states of a breadth-first search, where many different states share a key
    (a key of the whole state would never be met again)."""
    model = _restart_model(name, checkpoints=1)
    keys, shared = _restart_successors(model, _breadth_first(model, 20_000))
    assert keys and shared > keys, (name, keys, shared)


def test_kept_restart_successors_change_no_count():
    """An exhaustive search with the kept restart successors equals one without them (states, transitions,
    depth, discoveries), with and without symmetry reduction."""
    from checker import explore
    from checker.symmetry import representative_function

    for name, checkpoints in (("hudi-1.1", 2), ("hudi-1.1-async-events", 1), ("hudi-0.x-coordinator-start", 2)):
        cfg = variant(name, parallelism=2, max_checkpoints=checkpoints, records=2, max_crashes=1, faults=RESTART_FAULTS)
        for sym in (False, True):
            got = []
            for keep in (True, False):
                m = SystemModel(cfg)
                if not keep:
                    m._restarts = None
                r = explore(m, compact=True, symmetry=representative_function(m) if sym else None,
                            stop_on_violation=False)
                got.append((r.states, r.transitions, r.max_depth, sorted(r.discoveries)))
                if keep:
                    assert m._restarts, f"{name}: no restart successor was kept"
            assert got[0] == got[1], (name, sym)


def test_step_violations_are_the_failing_verdicts_of_check_step():
    """``engine.invariants.step_violations`` (the explorers' check, the holding verdicts told by identity) gives
    the verdicts of ``check_step`` that do not hold, or None: along random runs of every variant, the broken
    ones included, so that failing verdicts are met too."""
    from engine import System
    from engine import invariants as inv

    failing_states = unobserved = 0
    for name in sorted(VARIANTS):
        rnd = random.Random(3)
        cfg = variant(name, parallelism=2, max_checkpoints=3, records=3, max_crashes=1,
                      faults=frozenset({"lost-ack", "task-crash", "coordinator-crash"}))
        for run in range(4):
            s = System(cfg, seed=0)
            for step in range(60):
                failing = [v for v in inv.check_step(s) if not v.holds]
                assert inv.step_violations(s) == (failing or None), f"replay: {name} seed 3 run {run} step {step}"
                failing_states += bool(failing)
                unobserved += bool(failing) and not s.observed_rules  # (step_violations' own path for these)
                evs = s.enabled_events()
                if not evs:
                    break
                s = s.clone()
                try:
                    s.apply(rnd.choice(evs))
                except Exception:  # noqa: BLE001 - a broken variant may refuse its own event: the run ends there
                    break
    assert failing_states > 50, failing_states
    assert unobserved > 20, unobserved
