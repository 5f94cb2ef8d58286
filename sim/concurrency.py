"""Many writers on one timeline: multi-writer OCC vs NBCC, and compaction scheduling under 0.x vs 1.x
(experiment ``concurrency``).

Two parts, both SimPy over the same spec:

**Writers** (:func:`run_writers`, the sweep ``concurrency.writers`` x ``concurrency.overlaps`` x
``concurrency.modes``). ``N`` writer processes on one table, each repeating one write: a requested time from the
model's TrueTime generator (:class:`model.truetime.SkewAdjustingTimeGenerator`: one lock with acquisition latency
drawn from ``[lock_acquire_ms, lock_acquire_max_ms]``, the skew wait), the requested and inflight files on the
spec's :class:`model.timeline.Timeline`, a write phase of log-normal duration (median ``write_s``), then the
commit: in one lock section (``consume_time``, held ``commit_hold_ms``) the writer asks the spec for the first
conflict among its candidates (``resolve_write_conflicts``: ``candidate_instants`` + ``conflict``); with none it
completes with that section's completion time, otherwise the attempt aborts and the write is retried with a new
instant after ``retry_backoff_s``, at most ``max_retries`` times (then it is given up). Failed attempts are rolled
back (``rollback_s`` each) as the spec's ``rollback_targets`` chooses: LAZY (every multi-writer mode) by a cleaner
every ``heartbeat_expiry_s / 2``, taking the writes whose heartbeat expired (a failed attempt's heartbeat stops
when it aborts and expires ``heartbeat_expiry_s`` later); EAGER (single writer only) by the writer at its next
start.

The workload maps keys to file groups: each write upserts ``records_per_write`` keys ``k<n>``; a key comes from the
partition all writers share with probability ``overlap`` (else from the writer's own partition), and its file
group is the spec's ``file_group_for`` (bucket index: the key's bucket, one file group per bucket; simple index:
where the key was committed, else a new file group). ``overlap`` 0 means disjoint writers, 1 means every key is
shared.

**Compaction scheduling** (:func:`run_stall`, ``compaction_stall.rules``). One streaming writer (a Flink job:
one deltacommit per ``commit_interval_s`` checkpoint, the next instant started right after the commit) and the
compaction scheduler of its job: every ``compaction_every_commits`` deltacommits it takes a compaction time and
asks the spec ``may_schedule_compaction``. When the spec refuses (0.x: a write older than the compaction time
is pending), the scheduler holds the writer's next instant (as 0.x's coordinator schedules compaction after a
commit and before it starts the next instant), waits for the pending write to commit, asks again with a new
time and writes the plan (``plan_s``); the writer waits all that time (its *stall*). When the spec allows it
(1.x: completion-time slicing keeps later logs out of the plan) the plan is written beside the running write.
The executor then runs the compaction (``execute_s``) and completes it.

What is the spec's and what is this module's: settings are checked (``validate``), candidates chosen, conflicts,
rollback targets, file groups and compaction scheduling decided by ``model.concurrency`` (``settings``,
``rules``); times and the lock by :mod:`model.truetime`; instant states by :class:`model.timeline.Timeline`. This
module chooses only *when* things happen and how long they take. As a speed measure a committing writer offers
the spec only the writes completed since it asked for its requested time (one completed before cannot have
completed after its start) plus every pending write; the spec filters them.

Every run is checked by the model's invariants at its end: the timeline checks I1-I5
(:func:`model.invariants.timeline.timeline_verdicts`), every generated time strictly after the previous one
(:func:`model.invariants.times.check_times_strictly_increasing`) and the spec's process invariants over the run's
history (:mod:`model.invariants.concurrency`: ``C.occ-serializable`` -- no two committed OCC writes that mutated a
common file group ran concurrently; ``C.lazy-rollback`` -- no rollback took a write whose heartbeat was alive;
``C.compaction-schedule-0x`` -- no 0.x compaction scheduled while an older write was pending). A timeline operation
the spec refuses ends its process and fails the run too. A failing run names the invariant and prints the command
replaying it (same seed, same point).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import simpy

from model.instant import Action
from model.invariants import concurrency as CI
from model.invariants.timeline import timeline_verdicts
from model.invariants.times import check_times_strictly_increasing
from model.timeline import Timeline
from model.truetime import Lock, SkewAdjustingTimeGenerator, TimeGeneratorConfig

from model.concurrency import rules as R
from model.errors import RuleViolation
from model.concurrency.settings import Settings, SettingsError, validate

MODES = ("single_writer", "occ", "nbcc")
RULES = ("0.x", "1.x")
SHARED = "shared"
#: The table version each compaction-scheduling rule runs on (0.x: instant-time slicing, tv6; 1.x: tv8).
RULE_TABLE_VERSION = {"0.x": 6, "1.x": 8}


# ------------------------------------------------------------------------------------------- settings
def settings_for(c: dict, mode: str, **over) -> Settings:
    """The spec's :class:`Settings` of the ``[concurrency]`` table for ``mode`` (``over`` replaces fields);
    ``lock_provider`` ``""`` or ``"none"`` is no lock provider."""
    lock = c["lock_provider"] if c["lock_provider"].strip().lower() not in ("", "none") else None
    values = dict(mode=mode, table_type=c["table_type"], table_version=c["table_version"], index=c["index"],
                  failed_writes=c["failed_writes"], lock_provider=lock,
                  conflict_strategy=c["conflict_strategy"], compaction_scheduling=c["compaction_scheduling"])
    values.update(over)
    return Settings(**values)


def settings_refusal(s: Settings) -> str | None:
    """The spec's refusal of ``s`` (:func:`model.concurrency.settings.validate`) as one line naming the
    setting, or None."""
    try:
        validate(s)
    except SettingsError as e:
        return f"{e.rule}: {e.detail}"
    return None


def stall_settings_for(c: dict, rule: str):
    """The streaming writer's settings under compaction-scheduling ``rule`` (one writer, MOR)."""
    return settings_for(c, "single_writer", table_type="mor", table_version=RULE_TABLE_VERSION[rule],
                        compaction_scheduling=rule)


def refusal(c: dict, modes=None) -> tuple[str, str] | None:
    """``(what, why)`` of the first settings the spec refuses among the experiment's, else None."""
    for mode in modes if modes is not None else c["modes"]:
        why = settings_refusal(settings_for(c, mode))
        if why:
            return f"mode {mode}", why
    return None


# ------------------------------------------------------------------------------------------- records
@dataclass
class Run:
    """One writers run: its point, summary row and per-commit series."""

    mode: str
    writers: int
    overlap: float
    seed: int
    summary: dict
    failures: list[str]
    latencies_s: list[float] = field(default_factory=list)


@dataclass
class StallRun:
    rule: str
    seed: int
    summary: dict
    failures: list[str]
    commit_t_s: list[float] = field(default_factory=list)  # deltacommit completion times (simulated s)
    start_t_s: list[float] = field(default_factory=list)  # when each instant could start (after its stall)
    stall_s: list[float] = field(default_factory=list)  # the writer's wait before each instant
    refusals: list[str] = field(default_factory=list)  # the spec's reasons, in order


def _p(sorted_vals: list[float], q: float) -> float:
    if not sorted_vals:
        return 0.0
    return sorted_vals[min(len(sorted_vals) - 1, max(0, math.ceil(q * len(sorted_vals)) - 1))]


class _Times:
    """The model's TrueTime generator in simulated time (one lock, the skew wait) and its generation order."""

    def __init__(self, c: dict, rng: random.Random):
        lo, hi = c["lock_acquire_ms"], max(c["lock_acquire_ms"], c["lock_acquire_max_ms"])
        self.gen = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=c["max_skew_ms"]),
                                              lock=Lock(latency_ms=lo, latency_max_ms=hi, rng=rng),
                                              keep_history=False)
        self.generated: list[tuple[int, str]] = []  # (seq, time)
        self.lock_wait_ms: list[int] = []

    def _note(self, rec):
        self.generated.append((rec.seq, rec.time))
        self.lock_wait_ms.append(rec.lock_wait_ms)

    def generate(self, name: str, now_s: float):
        rec = self.gen.generate(name, int(round(now_s * 1000)))
        self._note(rec)
        return rec

    def consume(self, name: str, now_s: float, action, hold_ms: int):
        rec, result = self.gen.consume_time(name, int(round(now_s * 1000)), action, hold_ms=hold_ms)
        self._note(rec)
        return rec, result

    def verdict(self):
        return check_times_strictly_increasing([t for _, t in sorted(self.generated)])


@dataclass
class History:
    """The run's history variables, in the shape the spec's process invariants judge
    (:mod:`model.invariants.concurrency`, the fields of ``model.concurrency.state.ConcState`` they read):
    ``committed`` ``(instant, completion, writer, ())``, ``touched`` ``(instant, file groups)``, ``rollbacks``
    ``(target, its heartbeat was alive)``, ``unsafe_schedules`` ``(compaction, older pending writes)`` (recorded
    only when some were pending: the 0.x invariant's history variable)."""

    committed: list = field(default_factory=list)
    touched: list = field(default_factory=list)
    rollbacks: list = field(default_factory=list)
    unsafe_schedules: list = field(default_factory=list)


def _process_verdicts(settings: Settings, h: History) -> list:
    """``C.occ-serializable``, ``C.lazy-rollback`` and ``C.compaction-schedule-0x`` over the run's history."""
    return [CI.check_occ_serializable(settings, h), CI.check_lazy_rollback(h),
            CI.check_compaction_schedule_0x(settings, h)]


def _guarded(proc, failures: list[str], replay: str):
    """Run a process; a timeline operation the spec refuses (``RuleViolation``: a duplicate instant, a
    completion time not after its requested time, ...) ends it and fails the run, naming the rule."""
    try:
        yield from proc
    except RuleViolation as e:
        failures.append(f"{e} -- replay: {replay}")


def _check(tl: Timeline, times: _Times, failures: list[str], replay: str, process: list = ()) -> str:
    bad = [v for v in timeline_verdicts(tl) + [times.verdict(), *process] if not v.holds]
    refused = list(failures)
    failures.extend(f"{v} -- replay: {replay}" for v in bad)
    if bad:
        return f"{bad[0].invariant} violated"
    return "ok" if not refused else refused[0].split("]", 1)[0].lstrip("[") + " violated"


# --------------------------------------------------------------------------------------- the writers
def run_writers(params: dict, mode: str, writers: int, overlap: float, seed: int, quick: bool = False,
                replay: str = "") -> Run:
    """One run of ``writers`` writers in ``mode`` (``occ`` | ``nbcc`` | ``single_writer``) at ``overlap``."""
    c = params["concurrency"]
    S = settings_for(c, mode)
    why = settings_refusal(S)
    if why:
        raise ValueError(f"settings refused by the spec: {why}")
    rng = random.Random(seed)
    duration = c["quick_duration_s" if quick else "duration_s"]
    env = simpy.Environment()
    times = _Times(c, rng)
    tl = Timeline(table_version=c["table_version"])
    act = R.DELTACOMMIT if c["table_type"] == "mor" else R.COMMIT
    action = Action(act)
    completed: list[R.WriteSummary] = []  # every completed write, in completion order
    pending: dict[str, R.WriteSummary] = {}  # every pending write (running, or failed and not rolled back)
    running: set[str] = set()  # pending writes whose writer is alive (heartbeating)
    failed_at: dict[str, float] = {}  # failed attempts: when their heartbeat stopped
    located: dict[tuple[str, str], str] = {}  # (partition, key) -> file id of the committed table (simple index)
    hist = History()
    hold = int(c["commit_hold_ms"])
    stats = {"attempts": 0, "aborts": 0, "gave_up": 0, "commits": 0, "write_s": 0.0, "wasted_s": 0.0,
             "rolled_back": 0}
    reasons: dict[str, int] = {}
    latencies: list[float] = []

    def draw_keys(i: int) -> list[tuple[str, str, int]]:
        """(partition, key, buckets) of one write: shared with probability ``overlap``, else the writer's own."""
        out = []
        for _ in range(c["records_per_write"]):
            key = f"k{rng.randrange(c['keys'])}"
            if rng.random() < overlap:
                out.append((SHARED, key, c["shared_buckets"]))
            else:
                out.append((f"w{i}", key, c["private_buckets"]))
        return out

    def write_duration() -> float:
        return c["write_s"] * math.exp(c["write_sigma"] * rng.gauss(0.0, 1.0))

    def roll_back(targets):
        for rt in targets:
            hist.rollbacks.append((rt, heartbeat_alive(rt)))
            yield env.timeout(c["rollback_s"])
            if rt in pending:
                tl.delete(rt, action)
                del pending[rt]
                failed_at.pop(rt, None)
                stats["rolled_back"] += 1

    def heartbeat_alive(rt: str) -> bool:
        """A write's heartbeat: alive while its writer works on it, and ``heartbeat_expiry_s`` after it failed."""
        return rt in running or (rt in failed_at and env.now - failed_at[rt] < c["heartbeat_expiry_s"])

    def cleaner():
        """LAZY: rolls back the failed writes whose heartbeat expired (the spec chooses them)."""
        every = max(c["heartbeat_expiry_s"] / 2, 1.0)
        while env.now < duration:
            yield env.timeout(every)
            alive = {rt: heartbeat_alive(rt) for rt in pending}
            yield from roll_back(R.rollback_targets(S, list(pending.values()), alive))

    def writer(i: int):
        name = f"w{i}"
        yield env.timeout(rng.uniform(0, c["write_s"] / max(writers, 1)))  # staggered starts
        while env.now < duration:
            keys = draw_keys(i)
            first = env.now
            tries = 0
            while True:
                if c["failed_writes"] == "eager":  # a starting writer rolls back what the spec says
                    yield from roll_back(R.rollback_targets(S, list(pending.values()), {}, me=None))
                seen = len(completed)  # completed before this start: not later than it (speed only)
                rec = times.generate(name, env.now)
                yield env.timeout(max(0.0, rec.released_at / 1000 - env.now))
                rt = rec.time
                tl.create(rt, action, by=name)
                tl.transition_to_inflight(rt, action, by=name)
                tagged = [(p, k, R.file_group_for(S, k, located.get((p, k)), rt, b)) for p, k, b in keys]
                fgs = frozenset((p, f) for p, _k, f in tagged)
                mine = R.WriteSummary(rt, act, R.UPSERT, fgs)
                pending[rt] = mine
                running.add(rt)
                d = write_duration()
                yield env.timeout(d)
                stats["attempts"] += 1
                stats["write_s"] += d

                def check(_ct, mine=mine, seen=seen):
                    return R.resolve_write_conflicts(S, [*completed[seen:], *pending.values()], mine)

                rec, reason = times.consume(name, env.now, check, hold)
                if reason is None:  # completed inside the lock section, in lock order
                    tl.complete(rt, action, rec.time, by=name)
                    del pending[rt]
                    completed.append(R.WriteSummary(rt, act, R.UPSERT, fgs, state=R.COMPLETED, completion=rec.time))
                    hist.committed.append((rt, rec.time, name, ()))
                    hist.touched.append((rt, fgs))
                    for p, k, f in tagged:
                        located[(p, k)] = f
                else:  # its heartbeat stops when the abort leaves the lock section
                    failed_at[rt] = rec.released_at / 1000
                running.discard(rt)
                yield env.timeout(max(0.0, rec.released_at / 1000 - env.now))
                if reason is None:
                    stats["commits"] += 1
                    latencies.append(env.now - first)
                    break
                stats["aborts"] += 1
                stats["wasted_s"] += d
                reasons[reason] = reasons.get(reason, 0) + 1
                tries += 1
                if tries > c["max_retries"]:
                    stats["gave_up"] += 1
                    break
                yield env.timeout(c["retry_backoff_s"])
            if c["think_s"]:
                yield env.timeout(rng.expovariate(1.0 / c["think_s"]))

    failures: list[str] = []
    for i in range(writers):
        env.process(_guarded(writer(i), failures, replay))
    if c["failed_writes"] == "lazy":
        env.process(_guarded(cleaner(), failures, replay))
    env.run()
    verdict = _check(tl, times, failures, replay, _process_verdicts(S, hist))
    lat = sorted(latencies)
    hours = duration / 3600
    summary = {
        "commits": stats["commits"], "commits_per_hour": stats["commits"] / hours,
        "attempts": stats["attempts"], "aborts": stats["aborts"],
        "abort_rate": stats["aborts"] / stats["attempts"] if stats["attempts"] else 0.0,
        "retries": stats["aborts"] - stats["gave_up"], "gave_up": stats["gave_up"],
        "rolled_back": stats["rolled_back"],
        "wasted_s": stats["wasted_s"],
        "wasted_fraction": stats["wasted_s"] / stats["write_s"] if stats["write_s"] else 0.0,
        "latency_p50_s": _p(lat, 0.50), "latency_p99_s": _p(lat, 0.99),
        "lock_wait_mean_ms": (sum(times.lock_wait_ms) / len(times.lock_wait_ms)) if times.lock_wait_ms else 0.0,
        "abort_reason": _kind(max(reasons, key=reasons.get)) if reasons else "",
        "invariants": verdict,
    }
    return Run(mode, writers, overlap, seed, summary, failures, lat)


def _kind(reason: str) -> str:
    """A conflict reason without its instant times and file groups (the kind of conflict, for the table)."""
    head = reason.split(":", 1)[0]
    tail = reason[reason.rfind("("):] if "(" in reason else ""
    return f"{head}: {tail}".strip()


# ------------------------------------------------------------------------------ compaction scheduling
def run_stall(params: dict, rule: str, seed: int, quick: bool = False, replay: str = "") -> StallRun:
    """One run of the streaming writer and its compaction scheduler under ``rule`` (``0.x`` | ``1.x``)."""
    c, st = params["concurrency"], params["compaction_stall"]
    S = stall_settings_for(c, rule)
    why = settings_refusal(S)
    if why:
        raise ValueError(f"settings refused by the spec: {why}")
    rng = random.Random(seed)
    duration = st["quick_duration_s" if quick else "duration_s"]
    env = simpy.Environment()
    times = _Times(c, rng)
    tl = Timeline(table_version=RULE_TABLE_VERSION[rule])
    hold = int(c["commit_hold_ms"])
    fgs = frozenset(("p", f"b{b}") for b in range(st["file_groups"]))
    pending: dict[str, object] = {}  # the writer's pending deltacommit(s): WriteSummary by requested time
    gate = {"closed": False, "opened": env.event(), "committed": env.event()}
    out = StallRun(rule, seed, {}, [])
    stats = {"commits": 0, "scheduled": 0, "compacted": 0, "delay_s": []}
    hist = History()

    def streaming():
        since = 0
        while env.now < duration:
            ready = env.now
            while gate["closed"]:
                yield gate["opened"]
            out.stall_s.append(env.now - ready)
            out.start_t_s.append(env.now)
            rec = times.generate("writer", env.now)
            yield env.timeout(max(0.0, rec.released_at / 1000 - env.now))
            rt = rec.time
            tl.create(rt, Action.DELTACOMMIT, by="writer")
            tl.transition_to_inflight(rt, Action.DELTACOMMIT, by="writer")
            pending[rt] = R.WriteSummary(rt, R.DELTACOMMIT, R.UPSERT, fgs)
            yield env.timeout(st["commit_interval_s"] * (1 + 0.1 * (rng.random() - 0.5)))
            rec, _ = times.consume("writer", env.now, None, hold)
            tl.complete(rt, Action.DELTACOMMIT, rec.time, by="writer")
            del pending[rt]
            yield env.timeout(max(0.0, rec.released_at / 1000 - env.now))
            stats["commits"] += 1
            out.commit_t_s.append(env.now)
            ev, gate["committed"] = gate["committed"], env.event()
            ev.succeed()
            since += 1
            if since >= st["compaction_every_commits"]:
                since = 0
                env.process(_guarded(schedule(), out.failures, replay))

    def schedule():
        wanted = env.now
        while True:
            rec = times.generate("scheduler", env.now)
            yield env.timeout(max(0.0, rec.released_at / 1000 - env.now))
            tc = rec.time
            reason = R.may_schedule_compaction(S, list(pending.values()), tc)
            if reason is None:
                break
            out.refusals.append(reason)
            gate["closed"] = True  # the coordinator starts no new instant until the plan is written
            yield gate["committed"]
        older = tuple(sorted(rt for rt in pending if rt < tc))
        if older:
            hist.unsafe_schedules.append((tc, older))
        tl.create(tc, Action.COMPACTION, by="compactor")
        yield env.timeout(st["plan_s"])
        stats["scheduled"] += 1
        stats["delay_s"].append(env.now - wanted)
        if gate["closed"]:
            gate["closed"] = False
            ev, gate["opened"] = gate["opened"], env.event()
            ev.succeed()
        env.process(_guarded(execute(tc), out.failures, replay))

    def execute(tc: str):
        tl.transition_to_inflight(tc, Action.COMPACTION, by="compactor")
        yield env.timeout(st["execute_s"])
        rec, _ = times.consume("executor", env.now, None, hold)
        tl.complete(tc, Action.COMPACTION, rec.time, by="compactor")
        yield env.timeout(max(0.0, rec.released_at / 1000 - env.now))
        stats["compacted"] += 1

    env.process(_guarded(streaming(), out.failures, replay))
    env.run(until=duration + st["plan_s"] + st["execute_s"] + 3600)
    verdict = _check(tl, times, out.failures, replay, _process_verdicts(S, hist))
    stalls = sorted(out.stall_s)
    hours = duration / 3600
    out.summary = {
        "commits": stats["commits"], "commits_per_hour": stats["commits"] / hours,
        "compactions_scheduled": stats["scheduled"], "compactions_completed": stats["compacted"],
        "refusals": len(out.refusals),
        "stall_total_s": sum(stalls), "stall_max_s": stalls[-1] if stalls else 0.0,
        "stall_per_compaction_s": sum(stalls) / stats["scheduled"] if stats["scheduled"] else 0.0,
        "stall_share": sum(stalls) / duration,
        "schedule_delay_mean_s": (sum(stats["delay_s"]) / len(stats["delay_s"])) if stats["delay_s"] else 0.0,
        "refusal_reason": out.refusals[0] if out.refusals else "",
        "invariants": verdict,
    }
    return out


__all__ = ["MODES", "RULES", "RULE_TABLE_VERSION", "Run", "StallRun", "settings_for", "stall_settings_for",
           "settings_refusal", "refusal", "run_writers", "run_stall"]
