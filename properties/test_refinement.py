"""Refinement: the engine (``engine.System``) implements the spec (``model.protocol.spec``).

Two searches, both through :class:`properties.refinement.Lockstep` (spec and engine run on the same events,
compared after every one: enabled sets, every guard including out-of-range tasks and ``stop-faults``,
``task_step``/``writer_status``, ``abstract(engine) == view(spec)``, every invariant verdict, the engine's
cached fingerprint hash):

* Hypothesis random walks over every variant of ``model.protocol.VARIANTS`` (and over designs drawing every
  ``ProtocolConfig`` design field at random) and random fault sets and
  small bounds (parallelism 1-3, checkpoints 1-3, a few records, crashes 0-2): at each step an enabled event,
  sometimes an event that is not enabled (both must refuse it), ``stop-faults``, or a drain (both drain the
  same way; the drained verdicts are compared too);
* breadth-first exhaustive explorations of small bounds over the spec's state space, the engine reached
  along the same path, every state compared (and drained); equal abstract states must give equal engine
  fingerprints (without the engine's monitors).

A failure prints the config, the seed and the event path (replay it with
``properties.refinement.check_refines(cfg, path, seed)``). Under ``HYPOTHESIS_PROFILE=deep`` the walks
run the profile's examples and the explorations take bigger bounds.
"""

from __future__ import annotations

import os
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.protocol import FAULTS, VARIANTS, ProtocolConfig, spec, variant
from model.protocol.config import _CHOICES
from model.protocol import events as E

from .refinement import DRAIN, Lockstep, all_candidates, check_refines, explore_refinement

DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"

#: States compared by the exhaustive explorations of this process (printed by the last test).
COMPARED = {"states": 0, "drains": 0}

_WALK = settings(max_examples=settings.default.max_examples if DEEP else 40, deadline=None, print_blob=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def small_configs(draw, name: str):
    faults = draw(st.frozensets(st.sampled_from(FAULTS)))
    return variant(name, parallelism=draw(st.integers(1, 3)), max_checkpoints=draw(st.integers(1, 3)),
                   records=draw(st.integers(0, 3)), buffer_size=draw(st.integers(1, 2)), faults=faults,
                   max_crashes=draw(st.integers(0, 2)))


@st.composite
def any_design(draw):
    """Every design field of ProtocolConfig drawn at random (combinations no named variant has)."""
    choice = {name: draw(st.sampled_from(values), label=name) for name, values in _CHOICES.items()}
    flags = {name: draw(st.booleans(), label=name) for name in (
        "coordinator_snapshot", "snapshot_all_null_entries", "reset_keeps_memory", "resend_on_global_failover",
        "idempotent_recommit", "share_instant_per_key", "commit_guard", "partial_aborts",
        "allow_commit_on_empty_batch", "ack_behind_events", "drop_failed_attempt_events", "clean_during_restart",
        "coordinator_starts_instants", "ack_before_next_checkpoint", "commit_ack_events", "executor_queue")}
    if flags["coordinator_starts_instants"] and choice["mode"] == "blocking":
        # 0.x coordinator-started instants are modelled with sync delivery and region failover only
        choice.update(event_delivery="sync", task_failover="region")
    if flags["coordinator_starts_instants"] and choice["mode"] == "blocking":
        flags["executor_queue"] = False  # 0.x writers send no instant request to queue
    if not flags["executor_queue"] or choice["mode"] == "blocking":
        choice["table_service"] = "none"  # a table-service job runs on the queue, modelled in async mode
    if not flags["executor_queue"] or choice["mode"] != "blocking":
        choice["request_thread"] = "own"  # only blocking mode's CommitGuard waits on the request's thread
    return ProtocolConfig(**choice, **flags, parallelism=draw(st.integers(1, 3)),
                          max_checkpoints=draw(st.integers(1, 3)), records=draw(st.integers(0, 3)),
                          buffer_size=draw(st.integers(1, 2)), faults=draw(st.frozensets(st.sampled_from(FAULTS))),
                          max_crashes=draw(st.integers(0, 2)))


def _walk(cfg, data):
    seed = data.draw(st.integers(0, 3), label="seed")
    run = Lockstep(cfg, seed)
    why = run.compare()
    assert why is None, why
    for _ in range(data.draw(st.integers(0, 60 if DEEP else 35), label="steps")):
        kind = data.draw(st.integers(0, 99), label="choice")
        enabled = spec.enabled(run.spec)
        if kind < 3:
            why = run.drain()
        elif kind < 6:
            why = run.apply(E.StopFaults())
        elif kind < 12 or not enabled:
            why = run.apply(data.draw(st.sampled_from(all_candidates(cfg, run.spec.next_checkpoint)), label="any"))
        else:
            why = run.apply(data.draw(st.sampled_from(enabled), label="event"))
        assert why is None, why
    why = run.drain()
    assert why is None, why


@pytest.mark.parametrize("name", sorted(VARIANTS))
@_WALK
@given(data=st.data())
def test_random_walk_refines(name, data):
    _walk(data.draw(small_configs(name), label="config"), data)


@settings(_WALK, max_examples=settings.default.max_examples if DEEP else 150)
@given(data=st.data())
def test_random_walk_refines_any_design(data):
    _walk(data.draw(any_design(), label="config"), data)


# ------------------------------------------------------------------------------------- exhaustive

def explore_and_compare(cfg, max_states: int) -> int:
    """:func:`properties.refinement.explore_refinement` (every state drained), asserting no difference."""
    n, why = explore_refinement(cfg, max_states)
    assert why is None, why
    COMPARED["states"] += n
    COMPARED["drains"] += n
    return n


_SMALL = dict(parallelism=1, max_checkpoints=2, records=2, buffer_size=1, max_crashes=1)
_TWO = dict(parallelism=2, max_checkpoints=1, records=1, buffer_size=1, max_crashes=1)

#: (variant, bounds, faults, state budget): hudi-1.1 and broken variants, one or two tasks (the default
#: budgets cover each of these state spaces completely).
EXHAUSTIVE = [
    ("hudi-1.1", _SMALL, ("lost-ack", "task-crash"), 3000),
    ("hudi-1.1", _TWO, ("abort", "coordinator-crash"), 3000),
    ("hudi-1.1-blocking", _SMALL, ("lost-ack", "full-restart"), 3000),
    ("bug-19215", _SMALL, ("lost-ack", "full-restart"), 8000),
    ("broken-commit-le", _SMALL, ("full-restart",), 8000),
    ("non-idempotent-recommit", _SMALL, ("coordinator-crash", "late-ack"), 4000),
    ("single-task-failover", _TWO, ("task-crash",), 2000),
    ("hudi-1.1-async-events", _TWO, ("coordinator-crash", "lost-event", "abort"), 4000),
    ("hudi-1.1-async-events", _SMALL, ("lost-ack", "full-restart"), 4000),
    ("ack-overtakes-events", _SMALL, (), 3000),
    ("stale-attempt-events", _SMALL, ("coordinator-crash",), 4000),
    ("clean-during-restart", _SMALL, ("coordinator-crash",), 4000),
    ("blocking-lost-ack-stall", _SMALL, ("lost-ack",), 3000),
    ("hudi-0.x-coordinator-start", _SMALL, ("lost-ack", "full-restart", "task-crash"), 4000),
    ("hudi-0.x-coordinator-start", _TWO, ("abort", "coordinator-crash"), 3000),
    ("checkpoint-overtakes-notification", _SMALL, ("coordinator-crash", "lost-ack"), 4000),
    ("no-commit-ack", _SMALL, ("task-crash",), 3000),
    ("hudi-1.1-executor", _SMALL, ("lost-ack", "request-timeout", "task-crash"), 4500),
    ("table-service-on-executor", _TWO, ("request-timeout", "task-crash"), 2500),
    ("hudi-1.1-blocking-executor", _SMALL, ("lost-ack", "request-timeout", "task-crash"), 4500),
    ("hudi-1.1-blocking-executor", _TWO, ("coordinator-crash", "abort"), 3000),
    ("commit-guard-on-executor", _SMALL, ("task-crash", "lost-ack"), 4500),
    ("commit-guard-on-executor", _TWO, ("request-timeout",), 3000),
]
if DEEP:
    EXHAUSTIVE += [
        ("hudi-1.1", dict(parallelism=2, max_checkpoints=2, records=2, buffer_size=1, max_crashes=1),
         ("lost-ack", "late-ack", "task-crash", "coordinator-crash"), 60_000),
        ("hudi-1.1-partial-abort", dict(parallelism=2, max_checkpoints=2, records=1, buffer_size=1, max_crashes=1),
         ("abort", "lost-ack", "coordinator-crash"), 60_000),
        ("hudi-1.1-blocking", dict(parallelism=2, max_checkpoints=2, records=2, buffer_size=1, max_crashes=1),
         ("lost-ack", "full-restart", "abort"), 60_000),
    ]


@pytest.mark.parametrize("name,bounds,faults,budget", EXHAUSTIVE,
                         ids=[f"{n}-p{b['parallelism']}-{'+'.join(f)}" for n, b, f, _ in EXHAUSTIVE])
def test_exhaustive_refines(name, bounds, faults, budget):
    cfg = variant(name, faults=frozenset(faults), **bounds)
    n = explore_and_compare(cfg, budget)
    assert n > 20, "the exploration must reach more than a handful of states"
    print(f"{name} {bounds} {faults}: {n} states compared")


def test_check_refines_replays_a_path():
    """The factored check replays a path (events and drains) and reports nothing for the real engine."""
    cfg = variant("hudi-1.1", parallelism=2, records=2, buffer_size=1, max_checkpoints=2,
                  faults=frozenset({"lost-ack"}))
    path = [E.Ingest(0), E.RequestInstant(0), E.Flush(0), E.TriggerCheckpoint(), E.Flush(1), E.RequestInstant(1),
            E.SnapshotTask(0), E.SnapshotTask(1), E.CompleteCheckpoint(), E.LoseAck(1), DRAIN]
    assert check_refines(cfg, path) is None


def test_spec_takes_no_time_source():
    with pytest.raises(ValueError, match="logical clock"):
        spec.init(variant("hudi-1.1"), time_source=object())


def test_zz_report_compared_states(capsys):
    """Prints how many states the exhaustive explorations compared (runs last in this file)."""
    with capsys.disabled():
        print(f"\nrefinement: {COMPARED['states']} states compared exhaustively ({COMPARED['drains']} drained)")
