"""The engine's speed tricks say the same as what they stand for: :class:`engine.settings.Settings` is its
``ProtocolConfig``, :meth:`engine.System.successors` is ``clone()`` + ``apply()`` per event (the explorers'
:attr:`checker.explorer.Model.successors`), and the writer tasks' cached key hashes follow their changes."""

from __future__ import annotations

import random
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
            fresh.writers = [w.copy() for w in s.writers]
            for w in fresh.writers:  # (from the keys: a copy that carried a stale hash over must not hide it)
                w._key_hash = w._canon = None
            assert fresh.fingerprint_hash() == s.fingerprint_hash()
            assert fresh.fingerprint() == s.fingerprint()
