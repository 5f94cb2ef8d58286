"""Sleep sets in the serial search (issue #20): ``explore(sleep_sets=True)`` skips a transition only when its target
is certain to be generated at the same depth anyway, by the independence relation of :mod:`engine.independence`
(static footprints, and a few pairs decided at the state).

Shown five ways: (1) the relation against the engine along seeded random runs of every variant under several
fault sets -- every pair it calls independent stays enabled after each other, is not refused and reaches equal
fingerprints in both orders; the pairs decided at the state also at every state of a breadth-first prefix of nine
variants, each rule met; (2) exhaustive searches of every variant at small bounds, plain and with symmetry,
find the same states, depth, verdicts and shortest counterexample lengths with and without sleep sets, and the
transitions explored plus skipped are the transitions of the search without; (3) a broken relation (every pair
independent, or one wrong pair) and four widened state rules are caught by (1)'s check, and a broken relation by
(2)'s comparison; (4) the CLI refuses ``--sleep-sets`` with what it cannot honour; (5) a model giving a pairwise
relation without the engine's ``sleep_set`` gets the same search.
"""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from checker.explorer import explore
from checker.protocol import Refused, SystemModel
from checker.symmetry import representative_function
from engine import independence
from engine.settings import settings
from model.protocol import FAULTS, VARIANTS, variant
from model.protocol import events as E

ALL_FAULTS = frozenset(FAULTS)
RESTART_FAULTS = frozenset({"lost-ack", "task-crash", "coordinator-crash", "full-restart"})


def _walk_configs(name: str) -> list:
    """The configurations a variant's random runs take: its own faults, the reference bound's, every fault, and
    three writers (the relation names tasks)."""
    return [variant(name, parallelism=2, max_checkpoints=3, records=4, max_crashes=1),
            variant(name, parallelism=2, max_checkpoints=3, records=4, max_crashes=1, faults=RESTART_FAULTS),
            variant(name, parallelism=2, max_checkpoints=3, records=4, max_crashes=2, faults=ALL_FAULTS),
            variant(name, parallelism=3, max_checkpoints=2, records=2, max_crashes=1, faults=RESTART_FAULTS)]


def pair_failure(model: SystemModel, a, b, sa, sb) -> str | None:
    """What is wrong with calling ``a`` and ``b`` (enabled at one state, leading to ``sa`` and ``sb``) independent:
    one refused, one disabled by the other, or the two orders reaching different states; None if nothing."""
    if isinstance(sa, Refused) or isinstance(sb, Refused):
        return "refused"
    if b not in model.actions(sa) or a not in model.actions(sb):
        return "disabled"
    ab, ba = model.next_state(sa, b), model.next_state(sb, a)
    if isinstance(ab, Refused) or isinstance(ba, Refused):
        return "refused"
    if model.fingerprint(ab) != model.fingerprint(ba):
        return "different states"
    return None


def commutation_failures(model: SystemModel, indep, seeds, steps: int = 60) -> tuple[list, int]:
    """Along one random run per seed, every pair of enabled events ``indep`` calls independent: each must stay
    enabled after the other (and not be refused) and both orders must reach equal fingerprints. Returns the
    failures (seed, step, what, a, b) and the number of pairs checked."""
    bad: list = []
    checked = 0
    for seed in seeds:
        rnd = random.Random(seed)
        s = model.init_states()[0]
        for step in range(steps):
            acts = model.actions(s)
            if not acts:
                break
            succ = model.successors(s, acts)
            for i, a in enumerate(acts):
                for j in range(i + 1, len(acts)):
                    b = acts[j]
                    if not indep(a, b, s):
                        continue
                    checked += 1
                    what = pair_failure(model, a, b, succ[i], succ[j])
                    if what is not None:
                        bad.append((seed, step, what, a, b))
            s = succ[rnd.randrange(len(acts))]
            if isinstance(s, Refused):
                break
    return bad, checked


def _relation(model: SystemModel):
    relation = model.independence()
    assert relation is not None
    return relation[0]


# ------------------------------------------------------------------ (1) the relation against the engine
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_independent_events_commute_along_random_runs(name):
    checked = 0
    for cfg in _walk_configs(name):
        model = SystemModel(cfg)
        seeds = range(8)
        bad, n = commutation_failures(model, _relation(model), seeds)
        checked += n
        assert not bad, f"{name} {cfg.faults} x{cfg.parallelism}: seed {bad[0][0]}, step {bad[0][1]}: " \
                        f"{bad[0][3]} and {bad[0][4]}: {bad[0][2]} ({len(bad)} failures)"
    assert checked > 100, f"{name}: only {checked} independent pairs met"


def test_the_relation_covers_the_frequent_pairs():
    """The pairs the reference bound meets most are called independent (a relation that says "dependent" to
    everything would pass (1) and prune nothing)."""
    k = settings(variant("hudi-1.1", parallelism=2, max_checkpoints=3, faults=RESTART_FAULTS))

    def rel(a, b):
        return independence.independent(a, b, k)
    pairs = [(E.Ingest(0), E.Ingest(1)), (E.Ingest(0), E.Clean()), (E.Ingest(0), E.LoseAck(1)),
             (E.Ingest(0), E.DeliverAck(1)), (E.Ingest(0), E.RequestInstant(1)), (E.Ingest(0), E.RequestInstant(0)),
             (E.RequestInstant(0), E.LoseAck(2)), (E.RequestInstant(0), E.Clean()),
             (E.Ingest(1), E.TriggerCheckpoint()), (E.Ingest(1), E.CompleteCheckpoint()),
             (E.Ingest(1), E.SnapshotTask(0)), (E.SnapshotTask(1), E.Clean()), (E.LoseAck(1), E.DeliverAck(2)),
             (E.LoseAck(1), E.CrashTask(0))]
    for a, b in pairs:
        assert rel(a, b) and rel(b, a), (a, b)
    for a, b in [(E.Ingest(0), E.SnapshotTask(0)), (E.RequestInstant(0), E.RequestInstant(1)),
                 (E.DeliverAck(1), E.Clean()), (E.Ingest(0), E.CrashTask(0)), (E.LoseAck(1), E.DeliverAck(1)),
                 (E.Ingest(0), E.RestartJob()), (E.Ingest(0), E.Ingest(0))]:
        assert not rel(a, b) and not rel(b, a), (a, b)


def _decided_at_the_state(k):
    """The relation's state-dependent part alone: pairs :func:`engine.independence.independent` calls dependent
    and :func:`engine.independence.commute_at` calls independent at the state."""
    def rel(a, b, s):
        return (not independence.independent(a, b, k) and independence.at_state(a, b, k)
                and independence.commute_at(s, a, b))
    return rel


#: the kind pairs commute_at decides, each met at the breadth-first states of hudi-1.1 below
STATE_DECIDED = {frozenset(p) for p in [
    ("deliver-ack", "request-instant"), ("deliver-ack", "snapshot-task"), ("deliver-ack", "flush"),
    ("clean", "deliver-ack"), ("request-instant",),
    ("request-instant", "snapshot-task"), ("flush", "request-instant"), ("snapshot-task",), ("flush", "snapshot-task"),
    ("flush", "trigger-checkpoint"), ("complete-checkpoint", "flush")]}


def _states_breadth_first(model: SystemModel, limit: int) -> list:
    """The first ``limit`` states of a breadth-first walk of ``model`` (by fingerprint)."""
    first = model.init_states()[0]
    out, seen, i = [first], {model.fingerprint(first)}, 0
    while i < len(out) and len(out) < limit:
        s = out[i]
        i += 1
        for x in model.successors(s, model.actions(s)):
            if isinstance(x, Refused):
                continue
            f = model.fingerprint(x)
            if f not in seen:
                seen.add(f)
                out.append(x)
    return out


def state_rule_failures(model: SystemModel, indep, states) -> tuple[list, int]:
    """:func:`pair_failure` at each of ``states`` for every pair of enabled events ``indep(a, b, state)`` calls
    independent. Returns the failures (state, what, a, b) and the number of pairs checked."""
    bad: list = []
    checked = 0
    for s in states:
        acts = model.actions(s)
        succ = None
        for i, a in enumerate(acts):
            for b in acts[i + 1:]:
                if not indep(a, b, s):
                    continue
                checked += 1
                if succ is None:
                    succ = dict(zip(acts, model.successors(s, acts)))
                what = pair_failure(model, a, b, succ[a], succ[b])
                if what is not None:
                    bad.append((s, what, a, b))
    return bad, checked


#: the 1.x variants the state rules are checked on (their settings differ in what the rules read)
STATE_RULE_VARIANTS = ("hudi-1.1", "hudi-1.1-blocking", "single-task-failover", "tasks-snapshot-first",
                       "broken-commit-le", "no-coordinator-snapshot", "hudi-1.1-tv6", "hudi-1.1-async-events",
                       "clean-during-restart")


@pytest.mark.parametrize("name", STATE_RULE_VARIANTS)
def test_the_pairs_decided_at_the_state_commute(name):
    """At each of the first 6,000 states (breadth first) of the reference bound's faults, every pair
    :func:`engine.independence.commute_at` calls independent commutes (both orders applied)."""
    cfg = variant(name, parallelism=2, max_checkpoints=3, records=4, max_crashes=1, faults=RESTART_FAULTS)
    model = SystemModel(cfg)
    met: set = set()
    rel = _decided_at_the_state(settings(cfg))

    def noting(a, b, s):
        out = rel(a, b, s)
        if out:
            met.add(frozenset((a.kind, b.kind)))
        return out

    bad, n = state_rule_failures(model, noting, _states_breadth_first(model, 6_000))
    assert not bad, f"{name}: {bad[0][2]} and {bad[0][3]}: {bad[0][1]} ({len(bad)} failures) at {bad[0][0].describe()}"
    assert n > 100, n
    if name == "hudi-1.1":
        assert STATE_DECIDED <= met, f"never met: {sorted(map(sorted, STATE_DECIDED - met))}"


def _widened(widen):
    """``commute_at`` with one case widened (``widen(p, a, b)``: also call the pair independent)."""
    real = independence.commute_at

    def commute_at(p, a, b):
        return real(p, a, b) or widen(p, a, b)
    return commute_at


def _kinds(a, b, x, y):
    return {type(a), type(b)} == {x, y}


def _ack_and_request_of_a_committed_key(p, a, b):
    """An ack and a request whose key the ack commits: after the ack, the request starts a new instant."""
    return _kinds(a, b, E.DeliverAck, E.RequestInstant)


def _requests_of_two_new_keys(p, a, b):
    """Two requests starting instants for two keys: the instants' order follows the requests'."""
    return _kinds(a, b, E.RequestInstant, E.RequestInstant)


def _flush_and_trigger_whatever_the_entry(p, a, b):
    """A flush and a coordinator-first trigger, even when the flush takes its entry out of the coordinator
    state."""
    return _kinds(a, b, E.Flush, E.TriggerCheckpoint)


def _clean_and_any_ack(p, a, b):
    """A clean and an ack, even one that stops an instant's heartbeat (an empty commit) or commits a failed
    write."""
    return _kinds(a, b, E.Clean, E.DeliverAck)


@pytest.mark.pure_engine  # (compiled, the relation calls commute_at directly: not patched)
@pytest.mark.parametrize("widen", [_ack_and_request_of_a_committed_key, _requests_of_two_new_keys,
                                   _flush_and_trigger_whatever_the_entry, _clean_and_any_ack])
def test_a_widened_state_rule_fails_the_commutation_check(monkeypatch, widen):
    monkeypatch.setattr(independence, "commute_at", _widened(widen))
    caught = 0
    # (with "<", no request asks with a key an ack in flight commits; two tasks at two keys not started are met first
    # with single-task failover)
    for name in ("hudi-1.1", "broken-commit-le", "single-task-failover"):
        model = SystemModel(variant(name, parallelism=2, max_checkpoints=3, records=4, max_crashes=1,
                                    faults=RESTART_FAULTS))
        bad, _ = state_rule_failures(model, _relation(model), _states_breadth_first(model, 6_000))
        caught += len(bad)
    assert caught, f"{widen.__name__}: not caught"


# ------------------------------------------------------------------ (2) the same search, fewer transitions
def small_config(name: str):
    """2 writers, 1 record per split, buffer 1, lost-ack + task-crash (one crash), 2 checkpoints; 1 checkpoint
    where async event delivery, the executor queue or an instant per request make the space large (seconds per
    variant)."""
    kw = dict(parallelism=2, max_checkpoints=2, records=1, buffer_size=1, faults=frozenset({"lost-ack", "task-crash"}),
              max_crashes=1)
    cfg = VARIANTS[name].config(**kw)
    if cfg.event_delivery == "async" or cfg.executor_queue or not cfg.share_instant_per_key:
        cfg = VARIANTS[name].config(**dict(kw, max_checkpoints=1))
    return cfg


def outcome(model: SystemModel, symmetry: bool, sleep_sets: bool, stop_on_violation: bool = False):
    res = explore(model, max_states=60_000, stop_on_violation=stop_on_violation, compact=True,
                  symmetry=representative_function(model) if symmetry else None, sleep_sets=sleep_sets)
    assert res.stop_reason in ("exhausted", "violation"), res.stop_reason
    return res, (res.states, res.max_depth, res.transitions + res.pruned, res.terminal_states, res.settled_states,
                 sorted((n, d.depth, d.state_id) for n, d in res.discoveries.items()))


def differences(cfg) -> list:
    """What differs between searches with and without sleep sets (plain and with symmetry, every discovery
    and the first counterexample); empty when nothing does. Also asserts something was pruned."""
    out = []
    pruned = 0
    violations = False
    for symmetry in (False, True):
        for stop in (False, True):
            if stop and not violations:
                continue  # (the search stopping at the first counterexample: only where there is one)
            base, want = outcome(SystemModel(cfg), symmetry, False, stop)
            if not stop:
                violations = bool(base.counterexamples)
            assert base.pruned == 0
            res, got = outcome(SystemModel(cfg), symmetry, True, stop)
            pruned += res.pruned
            if got != want:
                out.append((symmetry, stop, want, got))
            if stop and base.counterexample is not None:
                if res.counterexample is None or res.counterexample.depth != base.counterexample.depth:
                    out.append((symmetry, stop, "counterexample", base.counterexample.depth))
    assert pruned > 0, "nothing was pruned"
    return out


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_same_search_with_and_without_sleep_sets(name):
    diff = differences(small_config(name))
    assert not diff, f"{name}: {diff[0]}"


@pytest.mark.parametrize("name", ["hudi-1.1", "hudi-1.1-async-events", "hudi-0.x-coordinator-start",
                                  "single-task-failover", "hudi-1.1-blocking", "hudi-1.1-executor"])
def test_same_search_with_every_fault(name):
    """Every fault on (late acks, aborts, lost events, request timeouts, every kind of crash), 1 checkpoint,
    2 records per split (1 with async delivery), and 3 writers with the reference bound's faults (not with async
    delivery or the executor queue: too many states for a test)."""
    base = VARIANTS[name].config()
    records = 1 if base.event_delivery == "async" else 2
    cfg = VARIANTS[name].config(parallelism=2, max_checkpoints=1, records=records, buffer_size=1,
                                faults=ALL_FAULTS, max_crashes=1)
    diff = differences(cfg)
    assert not diff, f"{name}: {diff[0]}"
    if base.event_delivery == "async" or base.executor_queue:
        return
    cfg = VARIANTS[name].config(parallelism=3, max_checkpoints=1, records=1, buffer_size=1,
                                faults=RESTART_FAULTS, max_crashes=1)
    diff = differences(cfg)
    assert not diff, f"{name}, 3 writers: {diff[0]}"


def test_reference_bound_prefix_is_the_same(monkeypatch):
    """The first 30,000 canonical states of the 2x3 reference bound: the same states in the same order, with the
    same parents and actions (the search's parent and action arrays, compared whole), fewer transitions."""
    import checker.explorer as explorer_module

    real = explorer_module.search
    arrays: list = []

    def keeping_the_arrays(res, queue, seen, parent, via, *args):
        arrays.append((parent, via))
        return real(res, queue, seen, parent, via, *args)

    monkeypatch.setattr(explorer_module, "search", keeping_the_arrays)
    cfg = variant("hudi-1.1", parallelism=2, max_checkpoints=3, max_crashes=1, faults=RESTART_FAULTS)
    runs = []
    for sleep_sets in (False, True):
        m = SystemModel(cfg)
        res = explore(m, max_states=30_000, compact=True, symmetry=representative_function(m), sleep_sets=sleep_sets)
        runs.append(res)
    a, b = runs
    assert (a.states, a.max_depth, a.transitions) == (b.states, b.max_depth, b.transitions + b.pruned)
    assert b.pruned > 0.05 * a.transitions, (b.pruned, a.transitions)
    (pa, va), (pb, vb) = arrays
    assert len(pa) == a.states and list(pa) == list(pb) and list(va) == list(vb)


def test_explore_refuses_sleep_sets_with_a_graph():
    with pytest.raises(ValueError, match="record_graph"):
        explore(SystemModel(small_config("hudi-1.1")), record_graph=True, sleep_sets=True)


def test_models_without_the_engines_steps_search_without_pruning():
    """A subclass listing its own actions gets no relation (its events may not be the engine's): the search runs
    unpruned."""
    class Own(SystemModel):
        def actions(self, s):
            return s.enabled_events()

    m = Own(small_config("hudi-1.1"))
    assert m.independence() is None
    assert explore(m, max_states=2_000, sleep_sets=True).pruned == 0


# ------------------------------------------------------------------ (3) a broken relation is caught
def _everything_independent(a, b, k):
    return a != b


def _ingest_and_own_snapshot_independent(a, b, k, real=independence.independent):
    """The real relation, but a task's ingest and its snapshot called independent: they are not (the snapshot
    flushes the buffer, with or without the record the ingest reads)."""
    if {type(a), type(b)} == {E.Ingest, E.SnapshotTask} and a.task == b.task:
        return True
    return real(a, b, k)


@pytest.mark.pure_engine  # (compiled, engine.independence.Relation calls independent directly: not patched)
@pytest.mark.parametrize("broken", [_everything_independent, _ingest_and_own_snapshot_independent])
def test_a_broken_relation_fails_the_commutation_check(monkeypatch, broken):
    monkeypatch.setattr(independence, "independent", broken)
    model = SystemModel(variant("hudi-1.1", parallelism=2, max_checkpoints=3, records=4, max_crashes=1,
                                faults=RESTART_FAULTS))
    bad, _ = commutation_failures(model, _relation(model), range(8))
    assert bad, "the broken relation was not caught"


@pytest.mark.pure_engine
def test_a_broken_relation_fails_the_search_comparison(monkeypatch):
    monkeypatch.setattr(independence, "independent", _everything_independent)
    assert differences(small_config("hudi-1.1")), "the broken relation was not caught"



def test_a_pairwise_relation_without_sleep_set_gets_the_same_search():
    """A model whose relation is a plain function ``indep(a, b, state)`` (no ``sleep_set`` of its own) is searched
    through :func:`engine.bfs.sleep_set_of`'s loop: the same states, transitions and skips as the engine's
    relation."""
    class Pairwise(SystemModel):
        def independence(self):
            relation, live = super().independence()
            return (lambda a, b, s: relation(a, b, s)), live

    cfg = variant("hudi-1.1", parallelism=2, max_checkpoints=2, records=2, max_crashes=1, faults=RESTART_FAULTS)
    runs = []
    for cls in (SystemModel, Pairwise):
        res = explore(cls(cfg), max_states=20_000, compact=True, sleep_sets=True)
        runs.append((res.states, res.max_depth, res.transitions, res.pruned))
    assert runs[0] == runs[1] and runs[0][3] > 0, runs

# ------------------------------------------------------------------ (4) the CLI
def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "explore", "--variant", "hudi-1.1",
                           "--checkpoints", "1", *argv], capture_output=True, text=True)


@pytest.mark.parametrize("argv", [("--workers", "2"), ("--graph", "g.png"), ("--master", "local[1]"), ("--liveness",)])
def test_cli_refuses_sleep_sets_with_what_it_cannot_honour(argv, tmp_path):
    r = _cli("--sleep-sets", "--out", str(tmp_path), *argv)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--sleep-sets" in lines[0], r.stderr


def test_cli_sleep_sets_reports_the_skipped_transitions(tmp_path):
    r = _cli("--sleep-sets", "--symmetry", "--json", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    import json

    rep = json.loads(r.stdout)
    plain = _cli("--symmetry", "--json", "--out", str(tmp_path))
    base = json.loads(plain.stdout)
    assert rep["sleep_sets"] and rep["pruned_transitions"] > 0 and not base["sleep_sets"]
    assert rep["states"] == base["states"] and rep["max_depth"] == base["max_depth"]
    assert rep["transitions"] + rep["pruned_transitions"] == base["transitions"]
