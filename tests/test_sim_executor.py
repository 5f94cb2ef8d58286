"""``sim.executor.Executor``: a single-threaded executor, checked against ``simpy.Resource(capacity=1)``.

For seeded random job mixes (arrival times, run times, and crashes that interrupt a job while it waits in
the queue or while it runs) both must start the same jobs at the same simulated times in the same order:
FIFO, one at a time, a job given up while queued never runs, the thread passes on at once when a job ends or
is given up while running. The executor has one event per job (the grant) where the resource has two (request
and release), so only starts and ends are compared, not event counts.

The comparison is shown able to fail: a LIFO executor and one that forgets to take a given-up job out of the
queue must both be reported. A failing case names its seed.
"""

from __future__ import annotations

import random
import pytest
import simpy

from sim.executor import Executor

SEEDS = range(120)


def _mix(seed: int) -> list[tuple[float, float, float | None]]:
    """Jobs ``(arrival, run time, crash time or None)``, deterministic in ``seed``; times on a coarse grid so
    several jobs arrive, end and crash at the same instant."""
    rng = random.Random(seed)
    jobs = []
    for _ in range(rng.randint(1, 25)):
        arrival = rng.randint(0, 20) * 0.5
        run = rng.choice([0.0, 0.5, 1.0, rng.randint(1, 8) * 0.5])
        crash = arrival + rng.randint(0, 12) * 0.5 if rng.random() < 0.3 else None
        jobs.append((arrival, run, crash))
    return jobs


def _run_resource(jobs) -> list[tuple]:
    env = simpy.Environment()
    thread = simpy.Resource(env, 1)
    log: list[tuple] = []

    def job(k, arrival, run):
        yield env.timeout(arrival)
        try:
            with thread.request() as req:
                yield req
                log.append(("start", k, env.now))
                yield env.timeout(run)
                log.append(("end", k, env.now))
        except simpy.Interrupt:
            log.append(("crash", k, env.now))

    _start(env, jobs, job)
    env.run()
    return log


def _run_executor(jobs, executor=Executor) -> list[tuple]:
    env = simpy.Environment()
    thread = executor(env)
    log: list[tuple] = []

    def job(k, arrival, run):
        yield env.timeout(arrival)
        try:
            grant = thread.take()
            try:
                yield grant
                log.append(("start", k, env.now))
                yield env.timeout(run)
                log.append(("end", k, env.now))
            finally:
                thread.give(grant)
        except simpy.Interrupt:
            log.append(("crash", k, env.now))

    _start(env, jobs, job)
    env.run()
    return log


def _start(env, jobs, job) -> None:
    def crasher(proc, at):
        yield env.timeout(at)
        if proc.is_alive:
            proc.interrupt("crash")

    for k, (arrival, run, crash) in enumerate(jobs):
        proc = env.process(job(k, arrival, run))
        if crash is not None:
            env.process(crasher(proc, crash))


def _mismatch(seed: int, executor=Executor) -> str | None:
    jobs = _mix(seed)
    want, got = _run_resource(jobs), _run_executor(jobs, executor)
    # Same starts, ends and crashes at the same times; within one instant the two may log in another order
    # (the resource hands over through an extra event), so compare per instant as multisets and the start
    # order overall.
    def per_time(log):
        out: dict = {}
        for what, k, t in log:
            out.setdefault(t, []).append((what, k))
        return {t: sorted(v) for t, v in out.items()}

    if per_time(want) != per_time(got):
        return f"seed {seed}: jobs {jobs}: simpy.Resource {want} != Executor {got}"
    starts = lambda log: [k for what, k, _ in log if what == "start"]  # noqa: E731
    if starts(want) != starts(got):
        return f"seed {seed}: start order {starts(want)} != {starts(got)}"
    return None


@pytest.mark.parametrize("seed", SEEDS)
def test_executor_matches_a_capacity_one_resource(seed):
    assert _mismatch(seed) is None


def test_executor_states():
    env = simpy.Environment()
    ex = Executor(env)
    a = ex.take()
    assert a.triggered and ex.busy and len(ex) == 0  # idle thread: taken at once
    b, c = ex.take(), ex.take()
    assert not b.triggered and not c.triggered and len(ex) == 2
    ex.give(c)  # given up while queued: leaves the queue, b still waits
    assert len(ex) == 1 and not c.triggered and not b.triggered
    ex.give(a)  # a done: b is taken now
    assert b.triggered and ex.holder is b and len(ex) == 0
    ex.give(b)
    assert not ex.busy
    with pytest.raises(ValueError):
        ex.give(c)  # not queued, not running


class _Lifo(Executor):
    def give(self, grant):
        if self.holder is grant and self.queue:
            self.holder = nxt = self.queue.pop()  # newest first: wrong
            nxt.succeed()
        else:
            super().give(grant)


class _ForgetsGivenUp(Executor):
    def give(self, grant):
        if self.holder is not grant:
            return  # leaves a crashed job in the queue: it runs later (wrong)
        super().give(grant)


@pytest.mark.parametrize("broken", [_Lifo, _ForgetsGivenUp])
def test_comparison_catches_broken_executors(broken):
    assert any(_mismatch(seed, broken) is not None for seed in SEEDS), f"{broken.__name__} was not caught"

