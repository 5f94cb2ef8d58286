"""The refinement check catches a broken engine.

Each test breaks :class:`engine.System` on purpose, inside the test only (``monkeypatch``: a clone of the
broken System stays broken), and asserts that the bounded breadth-first search of the refinement suite
(:func:`properties.refinement.explore_refinement`, the same :meth:`Lockstep.compare` as
``test_refinement.py``) finds the difference, and that its message names what differed:

* (a) an event missing from ``enabled_events()`` -- Clean dropped; the last of several acks in flight dropped;
* (b) a guard inlined wrongly in ``enabled_events()`` -- Flush listed when the buffer is one short of full;
  RequestInstant listed while the task is blocked;
* (c) a hash cache not dropped -- ``_w()`` / ``_c()`` forgetting to reset the writers' / coordinator's hash;
* (d) a wrong abstract state -- trigger-checkpoint forgetting to advance ``next_checkpoint`` in one rare case.
"""

from __future__ import annotations

import pytest

from engine import System
from engine.coordinator import Coordinator
from model.protocol import RequestInstant, events as E, variant

from .refinement import explore_refinement

_SMALL = dict(parallelism=1, max_checkpoints=2, records=2, buffer_size=1, max_crashes=1)


def _caught(cfg, max_states: int = 4000) -> str:
    n, why = explore_refinement(cfg, max_states, drain_every=False)
    assert why is not None, f"the broken engine passed {n} states of the refinement check"
    print(f"caught after {n} states: {why.splitlines()[0]}")
    return why


def _patch_enabled(monkeypatch, change):
    """``System.enabled_events`` replaced by ``change(system, listed_events)``."""
    real = System.enabled_events
    monkeypatch.setattr(System, "enabled_events", lambda self: change(self, real(self)))


# ----------------------------------------------------------------------------------- (a) missing event
@pytest.mark.pure_engine  # monkeypatches the engine (conftest.py)
def test_missing_clean_is_caught(monkeypatch):
    _patch_enabled(monkeypatch, lambda s, evs: [e for e in evs if e.kind != "clean"])
    why = _caught(variant("hudi-1.1", faults=frozenset({"full-restart"}), **_SMALL))
    assert "enabled events differ" in why and "only the spec enables ['clean()']" in why


@pytest.mark.pure_engine  # monkeypatches the engine (conftest.py)
def test_missing_last_ack_is_caught(monkeypatch):
    def drop_last_ack(s, evs):
        acks = [e for e in evs if e.kind == "deliver-ack"]
        return [e for e in evs if not (len(acks) > 1 and e == acks[-1])]

    _patch_enabled(monkeypatch, drop_last_ack)
    why = _caught(variant("hudi-1.1", faults=frozenset({"late-ack"}), parallelism=1, max_checkpoints=3, records=1,
                          buffer_size=1, max_crashes=0))
    assert "enabled events differ" in why and "deliver-ack(checkpoint=" in why


# ------------------------------------------------------------------------------- (b) guard inlined wrongly
@pytest.mark.pure_engine  # monkeypatches the engine (conftest.py)
def test_flush_one_short_of_full_is_caught(monkeypatch):
    def one_short(s, evs):
        extra = [E.Flush(w.task) for w in s.writers
                 if w.instant is not None and w.offset - w.flushed == s.config.buffer_size - 1]
        return evs + [e for e in extra if e not in evs]

    _patch_enabled(monkeypatch, one_short)
    why = _caught(variant("hudi-1.1", faults=frozenset(), parallelism=1, max_checkpoints=2, records=2,
                          buffer_size=2, max_crashes=0))
    assert "enabled events differ" in why and "only the engine enables ['flush(task=0)']" in why


@pytest.mark.pure_engine  # monkeypatches the engine (conftest.py)
def test_request_instant_while_blocked_is_caught(monkeypatch):
    def while_blocked(s, evs):
        extra = [RequestInstant(t) for t in range(s.config.parallelism) if s.writer_status(t) == "blocked"]
        return evs + [e for e in extra if e not in evs]

    _patch_enabled(monkeypatch, while_blocked)
    why = _caught(variant("hudi-1.1-blocking", faults=frozenset({"lost-ack"}), **_SMALL))
    assert "enabled events differ" in why and "only the engine enables ['request-instant(task=0)']" in why


# ------------------------------------------------------------------------------ (c) hash cache not dropped
@pytest.mark.pure_engine  # monkeypatches the engine (conftest.py)
def test_writer_hash_not_dropped_is_caught(monkeypatch):
    def stale_w(self, t):
        own = self._own_w
        if own is not None and t not in own:
            if not own:
                self.writers = list(self.writers)
            self.writers[t] = self.writers[t].copy()
            self._own_w = own + (t,)
        return self.writers[t]  # (forgets: self._writers_hash = None)

    monkeypatch.setattr(System, "_w", stale_w)
    why = _caught(variant("hudi-1.1", faults=frozenset(), **_SMALL))
    assert "stale fingerprint hash" in why


@pytest.mark.pure_engine  # monkeypatches the engine (conftest.py)
def test_coordinator_hash_not_dropped_is_caught(monkeypatch):
    def stale_c(self) -> Coordinator:
        if not self._own_c:
            self.coordinator = self.coordinator.copy()
            self._own_c = True
        return self.coordinator  # (forgets: self._coordinator_hash = None)

    monkeypatch.setattr(System, "_c", stale_c)
    why = _caught(variant("hudi-1.1", faults=frozenset(), **_SMALL))
    assert "stale fingerprint hash" in why


# ------------------------------------------------------------------------------- (d) wrong abstract state
@pytest.mark.pure_engine  # monkeypatches the engine (conftest.py)
def test_next_checkpoint_not_advanced_in_a_rare_case_is_caught(monkeypatch):
    """After a crash, the second trigger forgets ``next_checkpoint += 1`` (the abstract states differ)."""
    real = System._do_trigger

    def forgetful(self, ev):
        n = self.next_checkpoint
        real(self, ev)
        if self.crashes and n == 2:
            self.next_checkpoint = n

    system_module = __import__("engine.system", fromlist=["_EFFECTS"])
    monkeypatch.setitem(system_module._EFFECTS, "trigger-checkpoint", forgetful)
    monkeypatch.setitem(system_module._EFFECT_OF_CLASS, E.TriggerCheckpoint, forgetful)  # (apply's dispatch)
    why = _caught(variant("hudi-1.1", faults=frozenset({"task-crash"}), **_SMALL))
    assert "next_checkpoint" in why


@pytest.mark.parametrize("name", ["hudi-1.1", "hudi-1.1-blocking"])
def test_the_same_search_passes_the_real_engine(name):
    """Not vacuous: the same bounded search finds nothing in the real engine."""
    n, why = explore_refinement(variant(name, faults=frozenset({"full-restart", "lost-ack"}), **_SMALL), 4000,
                                drain_every=False)
    assert why is None, why
    assert n > 100
