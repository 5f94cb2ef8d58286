"""``sim.loop.run_counted``: SimPy's ``env.run(until)`` with the number of events it processed.

The count is checked against a plain manual loop (``while env.peek() < until: env.step(); n += 1``) on an
identically built environment, for seeded random process mixes: timeouts at random times and at exact
multiples of a unit (so events land exactly on ``until`` and must *not* be processed), processes that
interrupt others, shared resources, stores, conditions (AnyOf/AllOf), processes spawning processes, events
triggered at time 0 before the run, and an empty environment. Both environments must also execute the same
history (same log) and ``env.now`` must end at ``until``. The cyclic GC threshold must be raised during the
run and restored afterwards, also when a process raises inside the run.

Every check is shown able to fail: the same checker functions run against deliberately broken versions of
``run_counted`` (monkeypatched into ``sim.loop``) and must report a mismatch.

A failing case names its seed; rebuild it with ``build(simpy.Environment(), seed)``.
"""

from __future__ import annotations

import gc
import random

import pytest
import simpy

from sim import loop

SEEDS = range(150)


# ------------------------------------------------------------------------------ random process mixes
def build(env: simpy.Environment, seed: int) -> tuple[float, list]:
    """Populate ``env`` with a random mix of processes (deterministic in ``seed``); return ``(until, log)``.

    Every process appends ``(env.now, tag)`` to the log when it does something, so two environments built
    with the same seed can be compared step by step."""
    rng = random.Random(seed)
    log: list = []
    unit = rng.choice([0.25, 0.5, 1.0, 2.0])
    until = env.now + unit * rng.randint(3, 30)
    if rng.random() < 0.3:
        until = int(until) if until == int(until) else until  # an int `until` too (SimPy keeps ints)
    kinds = ["ticker", "exact", "victim", "resource", "store", "zero", "condition", "spawner", "failer"]
    n_procs = 0 if seed % 17 == 0 else rng.randint(1, 12)  # some empty environments
    victims: list = []
    res = simpy.Resource(env, capacity=rng.randint(1, 3))
    store = simpy.Store(env, capacity=rng.randint(1, 4))

    def ticker(name, r, exact):
        while True:
            d = unit * r.randint(0, 3) if exact else r.random() * 2 * unit
            yield env.timeout(d)
            log.append((env.now, name))

    def victim(name, r):
        while True:
            try:
                yield env.timeout(unit * r.randint(1, 4))
                log.append((env.now, name))
            except simpy.Interrupt as it:
                log.append((env.now, name, "interrupted", it.cause))

    def interrupter(name, r, target):
        while True:
            yield env.timeout(unit * r.randint(0, 5) if r.random() < 0.5 else r.random() * 3 * unit)
            if target.is_alive:
                target.interrupt(name)
                log.append((env.now, name, "interrupts"))

    def user(name, r):
        while True:
            with res.request() as req:
                yield req
                log.append((env.now, name, "acquired"))
                yield env.timeout(unit * r.randint(0, 2))
            yield env.timeout(r.random() * unit)

    def producer(name, r):
        i = 0
        while True:
            yield store.put(i)
            log.append((env.now, name, "put", i))
            i += 1
            yield env.timeout(unit * r.randint(0, 2))

    def consumer(name, r):
        while True:
            item = yield store.get()
            log.append((env.now, name, "got", item))
            yield env.timeout(r.random() * 2 * unit)

    def conditional(name, r):
        while True:
            a, b = env.timeout(unit * r.randint(0, 3)), env.timeout(r.random() * 2 * unit)
            yield (a | b) if r.random() < 0.5 else (a & b)
            log.append((env.now, name))

    def child(name, r):
        yield env.timeout(r.random() * unit)
        log.append((env.now, name, "child done"))
        return name

    def spawner(name, r):
        k = 0
        while True:
            value = yield env.process(child(f"{name}.{k}", random.Random(r.random())))
            log.append((env.now, name, "joined", value))
            k += 1

    def failer(name, r):
        """A process that fails; its failure is caught by a waiting process (defused), never crashing."""
        yield env.timeout(unit * r.randint(0, 2))
        raise KeyError(name)

    def catcher(name, target):
        try:
            yield target
        except KeyError as exc:
            log.append((env.now, name, "caught", str(exc)))

    for i in range(n_procs):
        kind = rng.choice(kinds)
        name, r = f"{kind}{i}", random.Random(rng.random())
        if kind in ("ticker", "exact"):
            env.process(ticker(name, r, exact=kind == "exact"))
        elif kind == "victim":
            v = env.process(victim(name, r))
            victims.append(v)
            env.process(interrupter(f"int{i}", random.Random(rng.random()), rng.choice(victims)))
        elif kind == "resource":
            env.process(user(name, r))
        elif kind == "store":
            env.process(producer(name, r))
            env.process(consumer(f"cons{i}", random.Random(rng.random())))
        elif kind == "zero":  # events triggered at time 0, before the run starts
            ev = env.event()
            ev.callbacks.append(lambda e, name=name: log.append((env.now, name, "fired", e.value)))
            ev.succeed(name)
            env.timeout(0)
        elif kind == "condition":
            env.process(conditional(name, r))
        elif kind == "spawner":
            env.process(spawner(name, r))
        elif kind == "failer":
            env.process(catcher(f"catch{i}", env.process(failer(name, r))))
    return until, log


def manual_count(env: simpy.Environment, until: float) -> int:
    """The reference: step while the next event is strictly before ``until``."""
    n = 0
    while env.peek() < until:
        env.step()
        n += 1
    return n


def check_count(seed: int, initial_time: float = 0.0) -> dict:
    """Assert ``loop.run_counted`` agrees with :func:`manual_count` on the mix of ``seed``; return facts about
    the run (for the coverage checks)."""
    env_a, env_b = simpy.Environment(initial_time), simpy.Environment(initial_time)
    until, log_a = build(env_a, seed)
    until_b, log_b = build(env_b, seed)
    assert until == until_b
    replay = (f"(seed {seed}, initial_time {initial_time}; "
              f"rebuild with build(simpy.Environment({initial_time}), {seed}))")
    got = loop.run_counted(env_a, until)
    want = manual_count(env_b, until)
    assert got == want, f"run_counted={got} events, manual loop={want} {replay}"
    assert env_a.now == until, f"env.now={env_a.now} != until={until} {replay}"
    assert log_a == log_b, f"the two environments ran different histories {replay}"
    return {"count": want, "on_until": env_b.peek() == until, "log": log_b}


# ------------------------------------------------------------------------------------------ checks
def test_count_matches_manual_loop_on_random_mixes():
    facts = [check_count(seed) for seed in SEEDS]
    # the mixes exercise what they claim to (otherwise the comparison above proves little)
    assert any(f["count"] == 0 for f in facts), "an empty environment"
    assert sum(f["on_until"] for f in facts) >= 10, "events scheduled exactly at `until` (left unprocessed)"
    assert any(any(len(e) > 2 and e[2] == "interrupted" for e in f["log"]) for f in facts), "interrupts"
    assert any(any(len(e) > 2 and e[2] == "acquired" for e in f["log"]) for f in facts), "resources"
    assert any(any(len(e) > 2 and e[2] == "caught" for e in f["log"]) for f in facts), "failed processes"
    assert any(any(e[0] == 0 and len(e) > 2 and e[2] == "fired" for e in f["log"]) for f in facts), "events at 0"
    assert max(f["count"] for f in facts) > 100


@pytest.mark.parametrize("initial_time", [3.0, 7])
def test_count_matches_manual_loop_from_a_nonzero_start(initial_time):
    for seed in range(0, 150, 7):
        check_count(seed, initial_time)


def test_empty_environment_counts_zero():
    env = simpy.Environment()
    assert loop.run_counted(env, 5.0) == 0
    assert env.now == 5.0


def test_event_exactly_at_until_is_not_processed():
    env = simpy.Environment()
    fired = []
    env.timeout(2.0).callbacks.append(lambda e: fired.append(2.0))
    env.timeout(1.0).callbacks.append(lambda e: fired.append(1.0))
    assert loop.run_counted(env, 2.0) == 1
    assert fired == [1.0] and env.now == 2.0


# ------------------------------------------------------------------------------------ GC threshold
#: A distinctive threshold, so "restored" means "restored to what it was", not "reset to CPython's default".
_THRESHOLD = (811, 13, 17)


def check_gc_restored(seed: int) -> None:
    """After a normal run the GC threshold is back to what it was; during the run it was raised."""
    old = gc.get_threshold()
    gc.set_threshold(*_THRESHOLD)
    try:
        env = simpy.Environment()
        until, _ = build(env, seed)
        seen = []

        def probe():
            yield env.timeout(0)
            seen.append(gc.get_threshold())

        env.process(probe())
        loop.run_counted(env, until)
        after = gc.get_threshold()
    finally:
        gc.set_threshold(*old)
    assert seen == [(loop.GC_YOUNG_THRESHOLD, *_THRESHOLD[1:])], f"threshold during the run: {seen}"
    assert after == _THRESHOLD, f"threshold after the run {after} != before {_THRESHOLD} (seed {seed})"


class Boom(Exception):
    pass


def check_gc_restored_on_error(seed: int) -> None:
    """A process raising inside the run: the exception propagates and the GC threshold is still restored."""
    old = gc.get_threshold()
    gc.set_threshold(*_THRESHOLD)
    try:
        env = simpy.Environment()
        until, _ = build(env, seed)

        def bomb():
            yield env.timeout(until / 2)
            raise Boom(seed)

        env.process(bomb())
        with pytest.raises(Boom):
            loop.run_counted(env, until)
        after = gc.get_threshold()
    finally:
        gc.set_threshold(*old)
    assert env.now == until / 2
    assert after == _THRESHOLD, f"threshold after a failed run {after} != before {_THRESHOLD} (seed {seed})"


@pytest.mark.parametrize("seed", [0, 1, 5, 42])
def test_gc_threshold_restored_after_the_run(seed):
    check_gc_restored(seed)


@pytest.mark.parametrize("seed", [0, 1, 5, 42])
def test_gc_threshold_restored_when_a_process_raises(seed):
    check_gc_restored_on_error(seed)


# --------------------------------------------------------------------- the checks can fail
def _queue_len(env):
    return len(env._queue)  # noqa: SLF001 - the broken versions mimic sim.loop's own arithmetic


def _broken_no_stop_correction(env, until):
    """Forgets that the stop event is re-queued: one too many."""
    q0, n0 = _queue_len(env), next(env._eid)  # noqa: SLF001
    env.run(until=until)
    q1, n1 = _queue_len(env), next(env._eid)  # noqa: SLF001
    return q0 + (n1 - n0 - 1) - q1


def _broken_ignores_queued_at_start(env, until):
    """Counts only events scheduled during the run (misses those queued before it)."""
    n = _queue_len(env)
    return _real(env, until) - n


def _broken_scheduled_only(env, until):
    """Events scheduled during the run, ignoring what is still queued at the end."""
    n0 = next(env._eid)  # noqa: SLF001
    env.run(until=until)
    return next(env._eid) - n0 - 3  # noqa: SLF001


def _broken_gc_never_restored(env, until):
    gc.set_threshold(loop.GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    return _real(env, until)


def _broken_gc_not_restored_on_error(env, until):
    old = gc.get_threshold()
    gc.set_threshold(loop.GC_YOUNG_THRESHOLD, *old[1:])
    n = _real(env, until)  # no try/finally: an exception skips the restore
    gc.set_threshold(*old)
    return n


#: The implementation under test, captured before any test monkeypatches ``loop.run_counted``.
_real = loop.run_counted


@pytest.fixture
def broken(monkeypatch):
    """``broken(fn)`` installs ``fn`` as ``sim.loop.run_counted`` for the test (undone afterwards)."""
    return lambda fn: monkeypatch.setattr(loop, "run_counted", fn)


@pytest.mark.parametrize("fn", [_broken_no_stop_correction, _broken_ignores_queued_at_start,
                                _broken_scheduled_only], ids=lambda f: f.__name__)
def test_broken_counts_are_caught(broken, fn):
    broken(fn)
    caught = []
    for seed in SEEDS:
        try:
            check_count(seed)
        except AssertionError as exc:
            caught.append(str(exc))
    assert caught, f"{fn.__name__} was not caught"
    assert "run_counted=" in caught[0]
    print(f"{fn.__name__}: caught on {len(caught)} of {len(SEEDS)} seeds, first: {caught[0]}")


def test_broken_gc_restore_is_caught(broken):
    broken(_broken_gc_never_restored)
    with pytest.raises(AssertionError, match="threshold after the run"):
        check_gc_restored(0)


def test_broken_gc_restore_on_error_is_caught(broken):
    broken(_broken_gc_not_restored_on_error)
    check_gc_restored(0)  # the normal path of this broken version is fine ...
    with pytest.raises(AssertionError, match="threshold after a failed run"):
        check_gc_restored_on_error(0)  # ... the error path is not


# ------------------------------------------------------------------------------ known issue
def test_consecutive_runs_add_up():
    """SimPy re-queues the stop event of a run; run_counted takes it out, so a second run does not count it."""
    env_a, env_b = simpy.Environment(), simpy.Environment()
    until, _ = build(env_a, 3)
    build(env_b, 3)
    half = until / 2
    a = loop.run_counted(env_a, half) + loop.run_counted(env_a, until)
    b = manual_count(env_b, half) + manual_count(env_b, until)
    assert a == b, f"two consecutive runs counted {a}, the manual loop {b}"
