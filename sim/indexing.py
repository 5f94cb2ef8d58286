"""An asynchronous index build beside a streaming workload (experiment ``indexing``, issue #18 item 5).

A table of ``file_groups`` file groups; ``writers`` SimPy writers each start a deltacommit every
``commit_every_s`` (with jitter), write for ``write_s`` (a share ``slow_write_prob`` of writes are slow:
``slow_write_s``, the "conflicting" long writers the catch-up must wait for; a share ``fail_prob`` dies
after writing, its heartbeat expiring after ``heartbeat_expiry_s``), then commit under the table lock:
one MDT log append per partition the commit updates (``mdt_append_ms`` each) and the data-table
completion. Write latency is start to completion, lock waits included.

In mode ``indexer`` the indexer starts at ``start_after_s``: it schedules under the lock
(``schedule_lock_ms``), builds the partition (``build_ms_per_file_group`` per file group, no lock), then
catches up instant by instant (polling every ``poll_s`` while a live writer is pending; each apply under
the lock for ``apply_lock_ms``) with the timeout ``catchup_timeout_s``: a timeout aborts the build (the
partition and the inflight instant removed) and the indexer retries after ``retry_after_s``, at most
``max_retries`` times. Mode ``no-indexer`` runs the same writers (same seed) without it, so the two write
latency distributions are comparable; the experiment runs the indexer once per value of
``catchup_timeouts_s``.

Every decision is the spec's (:mod:`model.mdt.partitions`: preconditions, ``indexUptoInstant``, where the
catch-up starts, the per-instant decision, which partitions a writer updates, the table-config transitions,
the rebuild), on the spec's :class:`model.timeline.Timeline`; nothing here restates a rule. When the index
completes, ``I17.index-equals-rebuild`` is checked: the built partition (base + writers' log entries of
completed commits + the catch-up's applies) must equal :func:`model.mdt.partitions.rebuild` of the data
table at the end of the run (a violation fails the run and prints the replay command).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import simpy

from model.instant import WRITE_ACTIONS, Action, format_millis
from model.mdt import partitions as P
from model.timeline import Timeline

MODES = ("no-indexer", "indexer")
T0_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
DC, IDX = Action.DELTACOMMIT, Action.INDEXING


@dataclass
class Result:
    mode: str
    timeout_s: float | None
    seed: int
    latencies: list = field(default_factory=list)     # (start s, latency s) per completed commit
    events: list = field(default_factory=list)        # (time s, what) of the indexer
    summary: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)


def settings_of(params: dict) -> P.ConcurrencySettings:
    x = params["indexing"]
    return P.ConcurrencySettings(x["concurrency_mode"], x["lock_provider"] or None)


def validate(params: dict) -> None:
    """The indexer's preconditions on the experiment's settings (:func:`model.mdt.partitions.validate_indexing`);
    raises :class:`model.mdt.partitions.IndexingError` naming the setting."""
    P.validate_indexing(settings_of(params), params["indexing"]["index"], P.PartitionStates())


def run(params: dict, mode: str, seed: int, timeout_s: float | None = None, quick: bool = False) -> Result:
    """One run of ``mode`` (``no-indexer`` | ``indexer``); ``timeout_s`` is the catch-up timeout."""
    x = params["indexing"]
    validate(params)
    rng = random.Random(seed)
    env = simpy.Environment()
    lock = simpy.Resource(env, capacity=1)
    dt = Timeline(8)
    duration = x["quick_duration_s"] if quick else x["duration_s"]
    part = x["index"]
    res = Result(mode, timeout_s, seed)
    st = {"parts": P.PartitionStates(), "last_ms": -1, "alive": set(), "writes": {}, "wrote": {},
          "base": frozenset(), "applied": set(), "indexed": False}

    def new_time() -> str:
        ms = max(int(env.now * 1000), st["last_ms"] + 1)
        st["last_ms"] = ms
        return format_millis(T0_MS + ms)

    def writer(w: int):
        wrng = random.Random(rng.random())
        yield env.timeout(wrng.uniform(0, x["commit_every_s"]))
        while env.now < duration:
            start = env.now
            t = new_time()
            dt.create(t, DC, by=f"w{w}")
            dt.transition_to_inflight(t, DC, by=f"w{w}")
            st["alive"].add(t)
            keys = [wrng.randrange(x["file_groups"] * 10) for _ in range(x["records_per_commit"])]
            st["writes"][t] = tuple(sorted({(f"k{k}", f"fg-{k % x['file_groups']}") for k in keys}))
            slow = wrng.random() < x["slow_write_prob"]
            yield env.timeout(x["slow_write_s"] if slow else x["write_s"] * wrng.uniform(0.8, 1.2))
            if wrng.random() < x["fail_prob"]:  # the writer dies; its heartbeat expires later
                env.process(expire(t))
            else:
                with lock.request() as req:
                    yield req
                    targets = P.writer_partitions(st["parts"])  # read inside the commit lock
                    yield env.timeout(x["mdt_append_ms"] * len(targets) / 1000)
                    st["wrote"][t] = targets
                    dt.complete(t, DC, new_time(), by=f"w{w}")
                st["alive"].discard(t)
                res.latencies.append((start, env.now - start))
            yield env.timeout(max(0.0, x["commit_every_s"] * wrng.uniform(0.9, 1.1) - (env.now - start)))

    def expire(t: str):
        """The dead writer's heartbeat expires; the next writer's rollback (LAZY policy) removes its instant
        under the lock (its MDT deltacommit was never written: it died before committing)."""
        yield env.timeout(x["heartbeat_expiry_s"])
        st["alive"].discard(t)
        with lock.request() as req:
            yield req
            trb = new_time()
            dt.create(trb, Action.ROLLBACK, by="rollback")
            dt.transition_to_inflight(trb, Action.ROLLBACK)
            dt.delete(t, DC)
            st["writes"].pop(t, None)
            st["wrote"][trb] = P.writer_partitions(st["parts"])  # the rollback is mirrored in the MDT
            dt.complete(trb, Action.ROLLBACK, new_time())

    def indexer():
        yield env.timeout(x["start_after_s"])
        tries = 0
        while tries <= x["max_retries"] and env.now < duration:
            t_begin = env.now
            with lock.request() as req:  # ScheduleIndexActionExecutor#execute, under the lock
                yield req
                yield env.timeout(x["schedule_lock_ms"] / 1000)
                upto = P.index_upto(dt.write_timeline())
                if upto is not None:
                    ti = new_time()
                    dt.create(ti, IDX, by="indexer")
            if upto is None:  # no plan: the first write is still pending; schedule again later
                res.events.append((env.now, "nothing to index yet"))
                yield env.timeout(x["retry_after_s"])
                continue
            tries += 1
            res.events.append((env.now, f"scheduled upto {upto}"))
            dt.transition_to_inflight(ti, IDX, by="indexer")
            st["parts"] = st["parts"].to_inflight({part})
            done = [i.requested_time for i in dt.completed(WRITE_ACTIONS) if i.requested_time <= upto]
            yield env.timeout(x["build_ms_per_file_group"] * x["file_groups"] / 1000)
            st["base"], st["applied"] = P.rebuild(part, st["writes"], done), set()
            t_built = env.now
            todo = [t for t, _ in P.catchup_list(dt.instants(), upto)]
            deadline = env.now + timeout_s
            aborted = False
            for t in todo:
                while True:
                    inst = next((i for i in dt.find(t) if i.action is not IDX), None)
                    decision = P.catchup_decision(
                        dt_state=None if inst is None else ("completed" if inst.is_completed else "pending"),
                        heartbeat_alive=t in st["alive"], mdt_completed=t in st["wrote"],
                        mdt_wrote_partition=part in st["wrote"].get(t, ()))
                    if decision != P.WAIT:
                        break
                    if env.now + x["poll_s"] > deadline:
                        aborted = True
                        break
                    yield env.timeout(x["poll_s"])
                if aborted:
                    break
                if decision == P.APPLY:
                    with lock.request() as req:
                        yield req
                        yield env.timeout(x["apply_lock_ms"] / 1000)
                        st["applied"].add(t)
            if aborted:  # RunIndexActionExecutor#abort
                st["parts"] = st["parts"].remove({part})
                dt.delete(ti, IDX)
                res.events.append((env.now, "aborted (catch-up timeout)"))
                res.summary.setdefault("aborts", 0)
                res.summary["aborts"] += 1
                yield env.timeout(x["retry_after_s"])
                continue
            with lock.request() as req:  # updateTableConfigAndTimeline, under the lock
                yield req
                yield env.timeout(x["schedule_lock_ms"] / 1000)
                st["parts"] = st["parts"].to_available({part})
                dt.complete(ti, IDX, new_time(), by="indexer")
            st["indexed"] = True
            res.events.append((env.now, "indexed"))
            res.summary.update(build_s=t_built - t_begin, catchup_s=env.now - t_built, index_total_s=env.now - t_begin,
                               caught_up_instants=len(todo), tries=tries)
            return

    for w in range(x["writers"]):
        env.process(writer(w))
    if mode == "indexer":
        env.process(indexer())
    env.run(until=duration + x["slow_write_s"] + x["heartbeat_expiry_s"] + 10 * x["commit_every_s"])
    env.run()  # drain

    lat = sorted(v for _, v in res.latencies)
    s = res.summary
    s.setdefault("aborts", 0)
    s.update(mode=mode, timeout_s=timeout_s if mode == "indexer" else float("nan"), commits=len(lat),
             latency_mean_s=sum(lat) / len(lat) if lat else 0.0,
             latency_p50_s=lat[len(lat) // 2] if lat else 0.0,
             latency_p99_s=lat[int(0.99 * (len(lat) - 1))] if lat else 0.0,
             indexed=st["indexed"])
    for k in ("build_s", "catchup_s", "index_total_s", "tries", "caught_up_instants"):
        s.setdefault(k, float("nan"))
    if st["indexed"]:
        completed = [i.requested_time for i in dt.completed(WRITE_ACTIONS)]
        have = set(st["base"])
        for t in completed:
            if part in st["wrote"].get(t, ()) or t in st["applied"]:
                have |= P.entries_of(part, (t, st["writes"][t]))
        want = P.rebuild(part, st["writes"], completed)
        if have != want:
            res.failures.append(f"I17.index-equals-rebuild: {part} misses {len(want - have)}, extra {len(have - want)} "
                                f"(mode {mode}, timeout {timeout_s}, seed {seed}; replay: hoodie-lab simulate indexing "
                                f"--seed {seed})")
    elif mode == "indexer" and st["parts"] != P.PartitionStates():
        res.failures.append(f"I17.abort-leaves-no-trace: table config {st['parts'].as_properties()} (seed {seed})")
    s["invariants"] = "ok" if not res.failures else f"{len(res.failures)} violated"
    return res


def plot(results: list[Result], out_dir: Path, title: str) -> list[Path]:
    """Write latency over time per run with the indexer's events, and the latency distributions."""
    from lakeio.plots import indexing_runs

    return indexing_runs(results, out_dir, title)


__all__ = ["MODES", "Result", "run", "plot", "validate", "settings_of"]
