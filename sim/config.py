"""Experiment files: schema, loading and validation.

An experiment is a TOML file with a few top-level keys and one table per concern. Every key has a type, a
default, a unit and an allowed range; anything else is refused with **one line** naming the file, the key and
what is allowed (``lakeio.errors.UserError``, so the CLI exits 2). Shipped experiments live in
``lakeio/experiments/*.toml`` (package data) and are addressed by name (``blocking-vs-async``); any other
argument is a path.

Top level: ``name``, ``description``, ``kind`` (``stream`` | ``truetime`` | ``collisions`` | ``recovery`` | ``history``
| ``concurrency`` | ``indexing``),
``seed``, ``modes`` (subset of ``["blocking", "async"]``).

Tables (all optional; defaults below; see :data:`SCHEMA` for units and ranges):

* ``[run]`` — simulated duration, sampling bin, number of seeded repetitions, quick-mode duration;
* ``[source]`` — record rate, bursts (extra rate, period, length), record size;
* ``[writers]`` — parallelism, buffer size in records (eager flush when full), CPU cost per record, flush
  latency = base + bytes x per-MB cost (+ storage latency);
* ``[checkpoint]`` — interval, timeout, minimum pause, barrier alignment (aligned | unaligned), the barrier's
  latency to each task and the in-flight data an aligned barrier waits behind;
* ``[coordinator]`` — commit work, number of timeline and metadata-table writes per commit, timeline listing
  cost (base + per active instant), `write.commit.ack.timeout`;
* ``[truetime]`` — TrueTime on/off, max expected skew, lock acquisition latency, actual clock offsets, number
  of tables sharing the lock service;
* ``[protocol]`` — the :mod:`model.protocol.variants` name run for each mode (defaults: ``hudi-1.1`` for
  async, ``hudi-1.1-blocking`` for blocking; any registered variant, broken ones included);
* ``[storage]`` — log-normal latency of one storage call (median, sigma) with spikes (probability, factor);
* ``[faults]`` — lost-ack probability, crash schedule (every N s or at fixed times), what crashes, restart delay;
* ``[sweep]`` — a grid: dotted key -> list of values (each value validated like the key itself);
* ``[collisions]``, ``[truetime_study]``, ``[recovery]``, ``[history]`` — the parameters of those experiment kinds;
* ``[concurrency]``, ``[compaction_stall]`` — the many-writers experiment (:mod:`sim.concurrency`): the sweep
  (writers x overlaps x modes), the table's concurrency settings (checked by the spec,
  ``model.concurrency.settings.validate``: an impossible combination is refused naming the setting), the
  workload, the lock, retries; and the streaming writer's compaction-scheduling experiment (0.x vs 1.x).
* ``[indexing]`` — the async-indexing experiment (:mod:`sim.indexing`).
"""

from __future__ import annotations

import copy
import itertools
import math
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from lakeio.errors import UserError

KINDS = ("stream", "truetime", "collisions", "recovery", "history", "concurrency", "indexing")
#: An experiment name becomes a directory name (``runs/sim/<name>``): a plain file stem, nothing else.
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")

# Work bounds, checked up front (a run that would hang or exhaust memory is refused, naming the keys).
#: Time-series samples per stream run: run.duration_s / run.sample_s (each sample is a row of every series).
MAX_SAMPLES = 1_000_000
#: Requests of one no-TrueTime collision run (writers x days x 86,400 / (T (1 - jitter))): numpy holds about
#: 24 bytes per request at once, so this is about 1.2 GB.
MAX_RUN_REQUESTS = 50_000_000
#: Requests of all no-TrueTime collision runs (about 110 ns each on this machine: about 18 minutes).
MAX_TOTAL_REQUESTS = 10_000_000_000
#: TrueTime generator calls of all collision runs (about 10 us each through the model: about 8 minutes).
MAX_TRUETIME_CALLS = 50_000_000
#: Write attempts of all concurrency runs (writers x duration / write_s, summed over the sweep; ~20 us each).
MAX_CONCURRENCY_ATTEMPTS = 20_000_000
#: Writers of one truetime_study point (tables x writers: one SimPy process and one clock each).
MAX_STUDY_WRITERS = 100_000
#: Requests of all truetime_study points (tables x writers x duration / request_every_s, summed).
MAX_STUDY_REQUESTS = 20_000_000
MODES = ("blocking", "async")
CRASH_TARGETS = ("task", "coordinator", "job")
ALIGNMENTS = ("aligned", "unaligned")


@dataclass(frozen=True)
class Key:
    """One key of the schema: type, default, allowed range, unit, meaning."""

    type: type | tuple
    default: Any
    lo: float | None = None
    hi: float | None = None
    unit: str = ""
    doc: str = ""
    lo_open: bool = False  # lo excluded (value must be > lo)
    choices: tuple = ()

    def allowed(self) -> str:
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        if self.type is bool:
            return "true or false"
        if self.type is str:
            return "a string"
        lo = "" if self.lo is None else (f"> {self.lo:g}" if self.lo_open else f">= {self.lo:g}")
        hi = "" if self.hi is None else f"<= {self.hi:g}"
        rng = " and ".join(x for x in (lo, hi) if x) or "any number"
        kind = "an integer" if self.type is int else "a number"
        unit = f" ({self.unit})" if self.unit else ""
        return f"{kind} {rng}{unit}"


def _num(default, lo=None, hi=None, unit="", doc="", lo_open=False):
    return Key((int, float), default, lo, hi, unit, doc, lo_open)


def _int(default, lo=None, hi=None, unit="", doc=""):
    return Key(int, default, lo, hi, unit, doc)


DAY = 86_400.0

#: The schema: table -> key -> Key. Top-level keys live under "".
SCHEMA: dict[str, dict[str, Key]] = {
    "": {
        "name": Key(str, "experiment", doc="experiment name (file stem for shipped ones)"),
        "description": Key(str, "", doc="one paragraph: what the experiment shows"),
        "kind": Key(str, "stream", choices=KINDS, doc="which driver runs it"),
        "seed": _int(1, 0, 2**63 - 1, doc="default seed (--seed overrides)"),
        "modes": Key(list, list(MODES), choices=MODES, doc="instant-generation modes compared"),
    },
    "run": {
        "duration_s": _num(600.0, 0, 7 * DAY, "s", "simulated time per run", lo_open=True),
        "quick_duration_s": _num(120.0, 0, 7 * DAY, "s", "simulated time with --quick", lo_open=True),
        "sample_s": _num(1.0, 0, 3600, "s", "bin width of time series", lo_open=True),
        "runs": _int(1, 1, 100_000, doc="seeded repetitions per point"),
        "check_invariants": Key(bool, True, doc="check the model's invariants after every run"),
        "write_trace": Key(bool, True, doc="write the run's trace (always written when a check fails)"),
    },
    "source": {
        "rate_rps": _num(100_000.0, 0, 1e9, "records/s", "steady source rate", lo_open=True),
        "burst_rate_rps": _num(0.0, 0, 1e9, "records/s", "extra rate during a burst"),
        "burst_every_s": _num(0.0, 0, 7 * DAY, "s", "burst period (0: no bursts)"),
        "burst_s": _num(0.0, 0, 7 * DAY, "s", "burst length"),
        "record_bytes": _int(200, 1, 100_000_000, "bytes", "serialized record size"),
    },
    "writers": {
        "parallelism": _int(64, 1, 4096, doc="write tasks"),
        "buffer_records": _int(200_000, 1, 10**12, "records", "buffered records before an eager flush"),
        "per_record_us": _num(2.0, 0, 1e6, "us", "CPU cost to process one record"),
        "flush_base_ms": _num(20.0, 0, 3.6e6, "ms", "fixed cost of one flush"),
        "flush_ms_per_mb": _num(5.0, 0, 3.6e6, "ms/MB", "flush cost per MB written"),
    },
    "checkpoint": {
        "interval_s": _num(10.0, 0, DAY, "s", "Flink checkpoint interval", lo_open=True),
        "timeout_s": _num(600.0, 0, DAY, "s", "checkpoint timeout (declined after)", lo_open=True),
        "min_pause_s": _num(0.0, 0, DAY, "s", "minimum pause between checkpoints"),
        "alignment": Key(str, "aligned", choices=ALIGNMENTS,
                         doc="aligned (Flink's default): a task takes the barrier after the records in flight "
                             "ahead of it; unaligned: the barrier overtakes them"),
        "barrier_latency_ms": _num(5.0, 0, 3.6e6, "ms", "trigger to a barrier's arrival at a task's input "
                                   "(each task and checkpoint draws uniformly from [0.5x, 1.5x])"),
        "inflight_kb": _num(320.0, 0, 1e9, "KB", "network buffers a barrier waits behind when its task is "
                            "backpressured (aligned; Flink: 2 exclusive + 8 floating 32 KB buffers)"),
    },
    "coordinator": {
        "commit_latency_s": _num(0.5, 0, 3600, "s", "commit work besides timeline/metadata writes"),
        "timeline_writes": _int(2, 0, 100, doc="storage calls for timeline files per commit"),
        "metadata_writes": _int(1, 0, 100, doc="storage calls for metadata-table files per commit"),
        "listing_base_ms": _num(5.0, 0, 3.6e6, "ms", "timeline listing fixed cost"),
        "listing_ms_per_instant": _num(0.2, 0, 3.6e6, "ms", "timeline listing cost per active instant"),
        "active_instants": _int(30, 1, 10**6, doc="active-timeline size kept after archival"),
        "ack_timeout_s": _num(600.0, 0, DAY, "s", "write.commit.ack.timeout", lo_open=True),
        "request_timeout_s": _num(0.0, 0, DAY, "s", "an instant request still queued on the coordinator's "
                                  "executor this long after it was sent times out and fails its task (Hudi 1.1: "
                                  "the Correspondent's RPC, bounded by Flink's pekko.ask.timeout, 10 s by "
                                  "default; later the poll budget of Correspondent#requestInstantTime); "
                                  "0: the same as ack_timeout_s"),
    },
    "truetime": {
        "enabled": Key(bool, True, doc="generate times with the TrueTime generator (lock + skew wait)"),
        "max_skew_ms": _num(200.0, 0, 60_000, "ms", "hoodie.time.generator.max_expected_clock_skew_ms"),
        "lock_acquire_ms": _num(5.0, 0, 60_000, "ms", "lock acquisition latency (uncontended)"),
        "clock_offset_ms": _num(50.0, 0, 3.6e6, "ms", "actual clock offsets drawn from [-x, x]"),
        "tables": _int(1, 1, 10_000, doc="tables whose writers share the lock service"),
    },
    "protocol": {
        "async_variant": Key(str, "hudi-1.1", doc="model.protocol variant run for mode async"),
        "blocking_variant": Key(str, "hudi-1.1-blocking", doc="model.protocol variant run for mode blocking"),
    },
    "storage": {
        "median_ms": _num(20.0, 0, 3.6e6, "ms", "median latency of one storage call"),
        "sigma": _num(0.5, 0, 5, doc="log-normal shape"),
        "spike_probability": _num(0.001, 0, 1, doc="probability a call is a spike"),
        "spike_factor": _num(50.0, 1, 1e6, doc="latency multiplier of a spike"),
    },
    "faults": {
        "lost_ack_probability": _num(0.0, 0, 1, doc="probability a checkpoint-complete notification is lost"),
        "crash_every_s": _num(0.0, 0, 7 * DAY, "s", "mean time between crashes (0: none)"),
        "crash_at_s": Key(list, [], 0, 7 * DAY, "s", "crash times"),
        "crash_target": Key(str, "job", choices=CRASH_TARGETS, doc="what a crash takes down"),
        "restart_delay_s": _num(10.0, 0, DAY, "s", "time to restart after a crash"),
    },
    "collisions": {
        "writers": Key(list, [2, 4, 8, 12, 16, 20], 1, 10_000, doc="numbers of writers N"),
        "periods_s": Key(list, [1.0, 10.0, 60.0], 0, DAY, "s", "commit periods T"),
        "jitter": _num(0.05, 0, 1, doc="relative jitter of T (uniform +-)"),
        "days": _num(1.0, 0, 365, "days", "simulated time per run", lo_open=True),
        "runs": _int(200, 1, 10**7, doc="runs per (N, T) without TrueTime"),
        "truetime_runs": _int(2, 0, 10**5, doc="runs per (N, T) with TrueTime"),
        "truetime_days": _num(0.05, 0, 365, "days", "simulated time per TrueTime run", lo_open=True),
        "clock_offset_ms": _num(0.0, 0, 3.6e6, "ms", "writer clock offsets drawn from [-x, x]"),
        "quick_runs": _int(20, 1, 10**7, doc="runs with --quick"),
        "resolutions_ms": Key(list, [1], choices=(1, 1000),
                              doc="clock resolutions: 1 (17-digit instants) and/or 1000 (legacy 14-digit)"),
    },
    "truetime_study": {
        "writers": Key(list, [1, 2, 4, 8, 16, 32], 1, 100_000, doc="writers per table"),
        "tables": Key(list, [1, 4, 16], 1, 100_000, doc="tables"),
        "skews_ms": Key(list, [1.0, 50.0, 200.0], 0, 60_000, "ms", "max expected skew bounds"),
        "request_every_s": _num(10.0, 0, DAY, "s", "mean time between a writer's requests", lo_open=True),
        "lock_service_ms": _num(2.0, 0, 60_000, "ms", "lock-service time per acquisition (shared)"),
        "resolutions_ms": Key(list, [1], choices=(1, 1000),
                              doc="clock resolutions: 1 (17-digit instants) and/or 1000 (legacy 14-digit)"),
    },
    "history": {  # sim/history.py
        "days": _num(7.0, 0, 366, "days", "simulated time (one commit per commit_every_s)", lo_open=True),
        "quick_days": _num(1.0, 0, 366, "days", "simulated time with --quick", lo_open=True),
        "commit_every_s": _num(60.0, 0, DAY, "s", "time between commits", lo_open=True),
        "preset": Key(str, "spark", choices=("spark", "flink"), doc="archival defaults: spark 30/20, flink 50/40"),
        "keep_max_commits": _int(0, 0, 10**6, doc="hoodie.keep.max.commits (0: the preset's)"),
        "keep_min_commits": _int(0, 0, 10**6, doc="hoodie.keep.min.commits (0: the preset's)"),
        "archival_batch": _int(10, 1, 10**6, doc="hoodie.commits.archival.batch"),
        "timeline_compaction_batch": _int(10, 2, 10**6, doc="hoodie.timeline.compaction.batch.size"),
        "commit_work_s": _num(2.0, 0, 3600, "s", "a commit's work besides the timeline"),
        "listing_base_ms": _num(20.0, 0, 3.6e6, "ms", "loading the active timeline: fixed cost"),
        "listing_ms_per_file": _num(2.0, 0, 3.6e6, "ms", "loading the active timeline: per state file"),
        "lookup_age_commits": _int(600, 1, 10**7, doc="each commit looks up the completion time of the instant "
                                   "this many commits old"),
        "lsm_file_read_ms": _num(30.0, 0, 3.6e6, "ms", "reading one LSM data file"),
        "storage_call_ms": _num(20.0, 0, 3.6e6, "ms", "one storage call of an archival run"),
    },
    "indexing": {  # sim/indexing.py
        "index": Key(str, "record_index", doc="MDT partition to build (validated by model.mdt.partitions)"),
        "concurrency_mode": Key(str, "OPTIMISTIC_CONCURRENCY_CONTROL", doc="hoodie.write.concurrency.mode"),
        "lock_provider": Key(str, "InProcessLockProvider", doc="hoodie.write.lock.provider ('' for none)"),
        "file_groups": _int(256, 1, 10**6, doc="file groups of the table (the build reads each)"),
        "writers": _int(4, 1, 1000, doc="streaming writers"),
        "duration_s": _num(900.0, 0, DAY, "s", "simulated time writers start commits", lo_open=True),
        "quick_duration_s": _num(240.0, 0, DAY, "s", "simulated time with --quick", lo_open=True),
        "commit_every_s": _num(10.0, 0, DAY, "s", "time between a writer's commits", lo_open=True),
        "records_per_commit": _int(20, 1, 10**6, doc="records a commit writes"),
        "write_s": _num(4.0, 0, DAY, "s", "a write's duration before its commit"),
        "slow_write_prob": _num(0.05, 0, 1, doc="share of slow (long-running) writes"),
        "slow_write_s": _num(60.0, 0, DAY, "s", "a slow write's duration"),
        "fail_prob": _num(0.01, 0, 1, doc="share of writes whose writer dies before committing"),
        "heartbeat_expiry_s": _num(120.0, 0, DAY, "s", "a dead writer's heartbeat expires after"),
        "mdt_append_ms": _num(40.0, 0, 3.6e6, "ms", "one MDT log append per partition a commit updates"),
        "start_after_s": _num(60.0, 0, DAY, "s", "when the indexer starts"),
        "schedule_lock_ms": _num(50.0, 0, 3.6e6, "ms", "the indexer's schedule / complete lock section"),
        "build_ms_per_file_group": _num(200.0, 0, 3.6e6, "ms", "building the partition, per file group"),
        "poll_s": _num(5.0, 0, 3600, "s", "catch-up poll interval while a live writer is pending", lo_open=True),
        "apply_lock_ms": _num(30.0, 0, 3.6e6, "ms", "one catch-up apply under the lock"),
        "catchup_timeouts_s": Key(list, [30, 120, 900], 0, DAY, "s", "catch-up timeouts (one indexer run each)"),
        "retry_after_s": _num(30.0, 0, DAY, "s", "wait before retrying an aborted build"),
        "max_retries": _int(3, 0, 100, doc="retries after aborts"),
        "repetitions": _int(5, 1, 1000, doc="seeds per run (one workload per seed, shared by every run)"),
    },
    "concurrency": {  # sim/concurrency.py
        "writers": Key(list, [1, 2, 4, 8], 1, 256, doc="numbers of concurrent writers swept"),
        "overlaps": Key(list, [0.0, 0.1, 0.5, 1.0], 0, 1, doc="overlap fractions swept: the share of a write's "
                        "keys drawn from the partition all writers share"),
        "modes": Key(list, ["occ", "nbcc"], choices=("single_writer", "occ", "nbcc"),
                     doc="hoodie.write.concurrency.mode values swept"),
        "duration_s": _num(3600.0, 0, 7 * DAY, "s", "simulated time per run", lo_open=True),
        "quick_duration_s": _num(600.0, 0, 7 * DAY, "s", "simulated time per run with --quick", lo_open=True),
        "table_type": Key(str, "mor", choices=("cow", "mor"), doc="hoodie.table.type"),
        "table_version": _int(8, 6, 9, doc="hoodie.table.version (the spec takes 6 and 8)"),
        "index": Key(str, "bucket", choices=("bucket", "simple"), doc="hoodie.index.type (simple bucket or simple)"),
        "failed_writes": Key(str, "lazy", choices=("eager", "lazy"), doc="hoodie.cleaner.policy.failed.writes"),
        "lock_provider": Key(str, "ZookeeperBasedLockProvider",
                             doc="hoodie.write.lock.provider class name ('' or 'none': no lock provider)"),
        "conflict_strategy": Key(str, "simple", choices=("simple", "prefer-writer"),
                                 doc="hoodie.write.lock.conflict.resolution.strategy"),
        "compaction_scheduling": Key(str, "1.x", choices=("0.x", "1.x"),
                                     doc="compaction scheduling rule of the writers' table"),
        "keys": _int(1_000_000, 1, 10**12, doc="keys per partition"),
        "shared_buckets": _int(256, 1, 10**6, doc="buckets (file groups) of the shared partition"),
        "private_buckets": _int(64, 1, 10**6, doc="buckets (file groups) of each writer's own partition"),
        "records_per_write": _int(20, 1, 10**6, doc="keys upserted by one write"),
        "write_s": _num(30.0, 0, DAY, "s", "median duration of a write phase (log-normal)", lo_open=True),
        "write_sigma": _num(0.3, 0, 3, doc="log-normal shape of the write phase"),
        "think_s": _num(0.0, 0, DAY, "s", "mean pause between a writer's writes (exponential; 0: none)"),
        "lock_acquire_ms": _int(5, 0, 60_000, "ms", "lock acquisition latency, least"),
        "lock_acquire_max_ms": _int(50, 0, 60_000, "ms", "lock acquisition latency, most (uniform)"),
        "max_skew_ms": _int(200, 0, 60_000, "ms", "TrueTime wait (hoodie.time.generator.max_expected_clock_skew_ms)"),
        "commit_hold_ms": _int(50, 0, 3_600_000, "ms", "lock held to commit (conflict check, completed file)"),
        "max_retries": _int(3, 0, 1000, doc="retries of an aborted write before it is given up"),
        "retry_backoff_s": _num(1.0, 0, DAY, "s", "pause before a retry"),
        "rollback_s": _num(2.0, 0, DAY, "s", "rolling back a failed attempt (eager: the writer waits for it)"),
        "heartbeat_expiry_s": _num(120.0, 0, DAY, "s", "lazy: a failed attempt is rolled back this long after it"),
    },
    "compaction_stall": {  # sim/concurrency.py, run_stall
        "rules": Key(list, ["0.x", "1.x"], choices=("0.x", "1.x"), doc="compaction-scheduling rules compared"),
        "duration_s": _num(3600.0, 0, 7 * DAY, "s", "simulated time per rule", lo_open=True),
        "quick_duration_s": _num(1200.0, 0, 7 * DAY, "s", "simulated time with --quick", lo_open=True),
        "commit_interval_s": _num(60.0, 0, DAY, "s", "the streaming writer's checkpoint (deltacommit) interval",
                                  lo_open=True),
        "compaction_every_commits": _int(5, 1, 10**6, doc="compaction.delta_commits: deltacommits between "
                                         "compaction schedules"),
        "plan_s": _num(10.0, 0, DAY, "s", "writing a compaction plan"),
        "execute_s": _num(120.0, 0, DAY, "s", "running a compaction"),
        "file_groups": _int(64, 1, 10**6, doc="file groups the streaming writer writes"),
    },
    "recovery": {
        "steps": Key(list, ["all"], doc="protocol steps to crash at ('all': every event type)"),
        "targets": Key(list, list(CRASH_TARGETS), choices=CRASH_TARGETS, doc="what crashes"),
        "occurrence": _int(3, 1, 10**6, doc="crash at the n-th occurrence of the step"),
    },
}

#: [sweep] is free-form: dotted key -> list of values.
SWEEP_TABLE = "sweep"


@dataclass
class Experiment:
    """A validated experiment: ``params`` is the full nested dict with defaults filled in."""

    name: str
    kind: str
    seed: int
    modes: tuple[str, ...]
    description: str
    params: dict[str, dict[str, Any]]
    sweep: dict[str, list] = field(default_factory=dict)
    source: str = ""

    def get(self, dotted: str) -> Any:
        table, _, key = dotted.rpartition(".")
        return self.params[table][key]

    def with_values(self, values: dict[str, Any]) -> "Experiment":
        """A copy with dotted keys replaced (each validated)."""
        params = copy.deepcopy(self.params)
        for dotted, v in values.items():
            table, key = _split(dotted, self.source)
            params[table][key] = _check(SCHEMA[table][key], v, f"{self.source}: {dotted}")
        return Experiment(self.name, self.kind, self.seed, self.modes, self.description, params, {}, self.source)

    def grid(self) -> list[dict[str, Any]]:
        """Every point of the sweep grid (one empty point when there is no sweep)."""
        keys = list(self.sweep)
        return [dict(zip(keys, combo)) for combo in itertools.product(*(self.sweep[k] for k in keys))]


def shipped_dir() -> Path:
    return Path(str(resources.files("lakeio") / "experiments"))


def shipped_names() -> list[str]:
    d = shipped_dir()
    return sorted(p.stem for p in d.glob("*.toml")) if d.is_dir() else []


def resolve(name_or_path: str) -> Path:
    """A shipped experiment name or a path to a TOML file."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists() or "/" in name_or_path:
        if not p.is_file():
            raise UserError(f"{name_or_path}: no such experiment file")
        return p
    cand = shipped_dir() / f"{name_or_path}.toml"
    if cand.is_file():
        return cand
    raise UserError(f"{name_or_path}: unknown experiment; shipped: {', '.join(shipped_names())} (or give a path)")


def load(name_or_path: str) -> Experiment:
    path = resolve(name_or_path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read: {exc.__class__.__name__}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}") from None
    return from_dict(raw, str(path))


def from_dict(raw: dict, source: str = "<experiment>") -> Experiment:
    """Validate a parsed experiment; raise UserError (one line) on the first problem."""
    params: dict[str, dict[str, Any]] = {t: {k: copy.deepcopy(s.default) for k, s in keys.items()}
                                         for t, keys in SCHEMA.items()}
    sweep: dict[str, list] = {}
    tables = [t for t in SCHEMA if t] + [SWEEP_TABLE]
    for key, value in raw.items():
        if isinstance(value, dict):
            if key not in tables:
                raise UserError(f"{source}: unknown table [{key}]; allowed: {', '.join(tables)}")
            if key == SWEEP_TABLE:
                sweep = _check_sweep(value, source)
                continue
            for k, v in value.items():
                if k not in SCHEMA[key]:
                    raise UserError(f"{source}: unknown key {key}.{k}; allowed in [{key}]: "
                                    f"{', '.join(SCHEMA[key])}")
                params[key][k] = _check(SCHEMA[key][k], v, f"{source}: {key}.{k}")
        else:
            if key not in SCHEMA[""]:
                raise UserError(f"{source}: unknown key {key}; allowed top-level keys: {', '.join(SCHEMA[''])} "
                                f"and tables [{'], ['.join(tables)}]")
            params[""][key] = _check(SCHEMA[""][key], value, f"{source}: {key}")
    top = params.pop("")
    exp = Experiment(name=top["name"], kind=top["kind"], seed=top["seed"], modes=tuple(top["modes"]),
                     description=top["description"], params=params, sweep=sweep, source=source)
    _cross_checks(exp)
    return exp


def _split(dotted: str, source: str) -> tuple[str, str]:
    table, _, key = dotted.rpartition(".")
    if not table or table not in SCHEMA or key not in SCHEMA[table]:
        raise UserError(f"{source}: unknown key {dotted}; use table.key, e.g. checkpoint.interval_s")
    return table, key


def _check_sweep(value: dict, source: str) -> dict[str, list]:
    out = {}
    for dotted, values in value.items():
        where = f"{source}: sweep.{dotted}"
        if isinstance(values, dict):  # TOML dotted keys without quotes become nested tables
            for k, v in values.items():
                out.update(_check_sweep({f"{dotted}.{k}": v}, source))
            continue
        table, key = _split(dotted, f"{source}: sweep")
        if not isinstance(values, list) or not values:
            raise UserError(f"{where}: must be a non-empty list of values")
        out[dotted] = [_check(SCHEMA[table][key], v, where) for v in values]
    return out


def _check(spec: Key, value: Any, where: str) -> Any:
    if spec.type is list:
        if not isinstance(value, list):
            raise UserError(f"{where}: must be a list; allowed: {_list_allowed(spec)}")
        return [_check_item(spec, v, where) for v in value]
    if spec.type is bool:
        if not isinstance(value, bool):
            raise UserError(f"{where}: {value!r} is not true/false")
        return value
    if spec.type is str:
        if not isinstance(value, str) or (spec.choices and value not in spec.choices):
            raise UserError(f"{where}: {value!r} not allowed; allowed: {spec.allowed()}")
        return value
    return _check_number(spec, value, where)


def _list_allowed(spec: Key) -> str:
    if spec.choices:
        return "a list of " + ", ".join(map(str, spec.choices))
    item = Key((int, float), None, spec.lo, spec.hi, spec.unit)
    return f"a list of {item.allowed()}" if spec.lo is not None or spec.hi is not None else "a list"


def _check_item(spec: Key, v: Any, where: str) -> Any:
    if spec.choices:
        if v not in spec.choices:
            raise UserError(f"{where}: {v!r} not allowed; allowed: {_list_allowed(spec)}")
        return v
    if spec.lo is None and spec.hi is None:
        if not isinstance(v, str):
            raise UserError(f"{where}: {v!r} must be a string")
        return v
    return _check_number(Key((int, float), None, spec.lo, spec.hi, spec.unit), v, where)


def _check_number(spec: Key, value: Any, where: str) -> Any:
    ok_type = isinstance(value, int) if spec.type is int else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok_type or (isinstance(value, float) and not math.isfinite(value)):
        raise UserError(f"{where}: {value!r} is not valid; allowed: {spec.allowed()}")
    if (spec.lo is not None and (value <= spec.lo if spec.lo_open else value < spec.lo)) or \
            (spec.hi is not None and value > spec.hi):
        raise UserError(f"{where}: {value!r} is out of range; allowed: {spec.allowed()}")
    return value


def _cross_checks(exp: Experiment) -> None:
    from model.protocol import VARIANTS

    p, src = exp.params, exp.source
    if not NAME_RE.fullmatch(exp.name) or ".." in exp.name:
        raise UserError(f"{src}: name: {exp.name!r} not allowed; allowed: 1-100 letters, digits, '_', '-' or '.', "
                        f"starting with a letter or digit, no '..' (it names the output directory)")
    for key in ("async_variant", "blocking_variant"):
        if p["protocol"][key] not in VARIANTS:
            raise UserError(f"{src}: protocol.{key}: {p['protocol'][key]!r} is not a protocol variant; "
                            f"allowed: {', '.join(VARIANTS)}")
        if VARIANTS[p["protocol"][key]].overrides.get("executor_queue"):
            raise UserError(f"{src}: protocol.{key}: {p['protocol'][key]!r} models the coordinator's executor queue "
                            f"in the spec (executor_queue); the simulation runs that queue itself on the "
                            f"coordinator's threads: pick a variant without it")
    if not exp.modes:
        raise UserError(f"{src}: modes: must name at least one of {', '.join(MODES)}")
    if p["source"]["burst_rate_rps"] > 0 and p["source"]["burst_every_s"] > 0 and \
            p["source"]["burst_s"] > p["source"]["burst_every_s"]:
        raise UserError(f"{src}: source.burst_s: {p['source']['burst_s']!r} is out of range; "
                        f"allowed: <= source.burst_every_s ({p['source']['burst_every_s']:g} s)")
    if exp.kind == "collisions":
        if not p["collisions"]["writers"] or not p["collisions"]["periods_s"]:
            raise UserError(f"{src}: collisions.writers: must be a non-empty list")
        if any(w < 2 for w in p["collisions"]["writers"]):
            raise UserError(f"{src}: collisions.writers: a collision needs >= 2 writers; allowed: integers >= 2")
        if any(t <= 0 for t in p["collisions"]["periods_s"]):
            raise UserError(f"{src}: collisions.periods_s: periods must be > 0 s")
    table = {"collisions": "collisions", "truetime": "truetime_study"}.get(exp.kind)
    if table and not p[table]["resolutions_ms"]:
        raise UserError(f"{src}: {table}.resolutions_ms: must be a non-empty list; allowed: a list of 1, 1000")
    if exp.kind == "history":
        from model.archival import ArchivalConfigError
        from sim.history import archival_config
        try:
            archival_config(p).validate()
        except ArchivalConfigError as e:
            raise UserError(f"{src}: history: {e}") from None
    if exp.kind == "indexing":
        from model.mdt.partitions import IndexingError
        from sim.indexing import validate as validate_indexing
        try:
            validate_indexing(p)
        except IndexingError as e:
            key = {"indexing.concurrency-mode": "concurrency_mode", "indexing.lock-provider": "lock_provider"}.get(
                e.rule, "index")
            raise UserError(f"{src}: indexing.{key}: {e.detail}") from None
        tos = p["indexing"]["catchup_timeouts_s"]
        if not tos or any(not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 < v <= DAY for v in tos):
            raise UserError(f"{src}: indexing.catchup_timeouts_s: {tos!r} not allowed; allowed: a non-empty list "
                            f"of numbers > 0 and <= 86400 (s)")
        if p["indexing"]["duration_s"] / p["indexing"]["commit_every_s"] * p["indexing"]["writers"] > 200_000:
            raise UserError(f"{src}: indexing.writers: too many commits for one run (writers x duration_s / "
                            f"commit_every_s > 200,000)")
    for dotted in exp.sweep:
        if dotted.startswith(("collisions.", "truetime_study.", "recovery.", "protocol.", "history.", "concurrency.",
                              "compaction_stall.", "indexing.")):
            raise UserError(f"{src}: sweep.{dotted}: only run, source, writers, checkpoint, coordinator, truetime, "
                            f"storage and faults keys can be swept")
    if exp.kind == "concurrency":
        _check_concurrency(exp)
    _check_samples(exp)
    if exp.kind == "collisions":
        _check_collision_work(exp)
    if exp.kind == "truetime":
        _check_study_work(exp)


def _values(exp: Experiment, dotted: str) -> list:
    """The values a key takes in the runs: its own, or every value of its [sweep] list."""
    return exp.sweep.get(dotted) or [exp.get(dotted)]


def _check_samples(exp: Experiment) -> None:
    """``run.duration_s / run.sample_s`` (and the quick duration) at most :data:`MAX_SAMPLES`: the metrics
    bin every run's series at ``sample_s`` (a tiny bin width used to hang in allocating the bins)."""
    src = exp.source
    longest = max(max(_values(exp, "run.duration_s")), exp.params["run"]["quick_duration_s"])
    for sample_s in _values(exp, "run.sample_s"):
        if longest / sample_s > MAX_SAMPLES * (1 + 1e-9):  # the edge itself is allowed (float rounding)
            lo = longest / MAX_SAMPLES
            raise UserError(f"{src}: run.sample_s: {sample_s!r} gives {longest / sample_s:,.0f} samples of "
                            f"{longest:g} s (run.duration_s); allowed: >= {lo:.6g} s and <= 3600 s "
                            f"(at most {MAX_SAMPLES:,} samples a run)")


def collision_work(params: dict) -> tuple[int, int, int]:
    """(largest run's requests, requests of all no-TrueTime runs, TrueTime calls of all runs) of a
    collisions experiment, counted from its parameters as :func:`sim.collisions.run` makes them
    (``--quick`` runs fewer; the larger of ``runs`` and ``quick_runs`` is counted), for every clock resolution."""
    c = params["collisions"]
    runs = max(c["runs"], c["quick_runs"]) * max(1, len(c.get("resolutions_ms", [1])))  # runs per resolution
    tt_runs = c["truetime_runs"] * max(1, len(c.get("resolutions_ms", [1])))
    per_run = total = calls = 0
    for n in c["writers"]:
        for period in c["periods_s"]:
            req = n * math.ceil(c["days"] * DAY / (period * (1 - c["jitter"])))
            per_run = max(per_run, req)
            total += runs * req
            calls += tt_runs * n * math.ceil(c["truetime_days"] * DAY / (period * (1 - c["jitter"])))
    return per_run, total, calls


def _check_collision_work(exp: Experiment) -> None:
    c, src = exp.params["collisions"], exp.source
    if c["jitter"] >= 1:
        raise UserError(f"{src}: collisions.jitter: {c['jitter']!r} is out of range; allowed: >= 0 and < 1")
    per_run, total, calls = collision_work(exp.params)
    keys = "collisions.writers, collisions.periods_s, collisions.days"
    if per_run > MAX_RUN_REQUESTS:
        raise UserError(f"{src}: {keys}: one run makes {per_run:,} requests (largest writers / shortest period); "
                        f"allowed: at most {MAX_RUN_REQUESTS:,} (about 1.2 GB); fewer writers or days, longer periods")
    if total > MAX_TOTAL_REQUESTS:
        raise UserError(f"{src}: {keys}, collisions.runs: all runs make {total:,} requests; allowed: at most "
                        f"{MAX_TOTAL_REQUESTS:,} (about 18 minutes); fewer runs, writers or days")
    if calls > MAX_TRUETIME_CALLS:
        raise UserError(f"{src}: collisions.truetime_runs, collisions.truetime_days, collisions.writers, "
                        f"collisions.periods_s: the TrueTime runs make {calls:,} generator calls; allowed: at most "
                        f"{MAX_TRUETIME_CALLS:,} (about 8 minutes)")


def _check_study_work(exp: Experiment) -> None:
    st, src = exp.params["truetime_study"], exp.source
    writers = max(st["writers"], default=1) * max(st["tables"], default=1)
    if writers > MAX_STUDY_WRITERS:
        raise UserError(f"{src}: truetime_study.writers, truetime_study.tables: {writers:,} writers at one point "
                        f"(tables x writers); allowed: at most {MAX_STUDY_WRITERS:,}")
    duration = max(max(_values(exp, "run.duration_s")), exp.params["run"]["quick_duration_s"])
    total = sum(w * t * duration / st["request_every_s"] for w in st["writers"] for t in st["tables"])
    total *= len(st["skews_ms"]) * max(1, len(st.get("resolutions_ms", [1])))
    if total > MAX_STUDY_REQUESTS:
        raise UserError(f"{src}: truetime_study.writers, truetime_study.tables, truetime_study.request_every_s, "
                        f"run.duration_s: all points make about {total:,.0f} requests; allowed: at most "
                        f"{MAX_STUDY_REQUESTS:,}")


# ------------------------------------------------------------------------------------ concurrency
#: Keys ``hoodie-lab simulate --set`` may change (the concurrency experiment's own tables).
SETTABLE_TABLES = ("concurrency", "compaction_stall")


def _check_concurrency(exp: Experiment) -> None:
    """The many-writers experiment: settings the spec refuses (NBCC on COW, NBCC without the bucket index, OCC
    without a lock provider, ...) are refused naming the setting and the spec's reason; empty sweeps; work bound."""
    from sim import concurrency

    c, st, src = exp.params["concurrency"], exp.params["compaction_stall"], exp.source
    if not (c["writers"] and c["overlaps"] and c["modes"]) and not st["rules"]:
        raise UserError(f"{src}: concurrency.writers, concurrency.overlaps, concurrency.modes, compaction_stall.rules: "
                        f"nothing to run; allowed: non-empty writers, overlaps and modes, or non-empty rules")
    if any(not isinstance(w, int) for w in c["writers"]):
        raise UserError(f"{src}: concurrency.writers: {c['writers']!r} not allowed; allowed: a list of integers >= 1")
    if c["lock_acquire_max_ms"] < c["lock_acquire_ms"]:
        raise UserError(f"{src}: concurrency.lock_acquire_max_ms: {c['lock_acquire_max_ms']!r} is below "
                        f"concurrency.lock_acquire_ms ({c['lock_acquire_ms']}); allowed: >= it")
    if "single_writer" in c["modes"] and max(c["writers"], default=1) > 1:
        raise UserError(f"{src}: concurrency.modes: single_writer runs one writer, but concurrency.writers has "
                        f"{max(c['writers'])}; use occ or nbcc for more")
    bad = concurrency.refusal(c)
    if bad:
        what, why = bad
        raise UserError(f"{src}: concurrency ({what}): {why}")
    for rule in st["rules"]:
        why = concurrency.settings_refusal(concurrency.stall_settings_for(c, rule))
        if why:
            raise UserError(f"{src}: compaction_stall.rules ({rule}): {why}")
    duration = max(c["duration_s"], c["quick_duration_s"])
    attempts = sum(w * duration / c["write_s"] for w in c["writers"]) * len(c["overlaps"]) * len(c["modes"])
    if attempts > MAX_CONCURRENCY_ATTEMPTS:
        raise UserError(f"{src}: concurrency.writers, concurrency.duration_s, concurrency.write_s: the sweep makes "
                        f"about {attempts:,.0f} write attempts; allowed: at most {MAX_CONCURRENCY_ATTEMPTS:,}")


def parse_set(items: list[str] | None) -> dict[str, Any]:
    """``--set TABLE.KEY=VALUE`` arguments (VALUE in TOML syntax; a bare word is a string) -> dotted key -> value.
    Only the keys of :data:`SETTABLE_TABLES`; each is validated when applied (:func:`override`)."""
    out: dict[str, Any] = {}
    for item in items or []:
        dotted, eq, text = item.partition("=")
        dotted = dotted.strip()
        if not eq or not dotted:
            raise UserError(f"--set: {item!r} is not TABLE.KEY=VALUE")
        table, _, key = dotted.rpartition(".")
        if table not in SETTABLE_TABLES or key not in SCHEMA[table]:
            raise UserError(f"--set: unknown key {dotted}; allowed: the keys of "
                            f"[{'], ['.join(SETTABLE_TABLES)}], e.g. concurrency.table_type=mor")
        try:
            value = tomllib.loads(f"v = {text.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = text.strip()
        out[dotted] = value
    return out


def override(exp: Experiment, values: dict[str, Any]) -> Experiment:
    """``exp`` with dotted keys replaced, every value and the whole experiment validated again (one-line
    ``UserError`` naming ``--set KEY``); the sweep is kept."""
    if not values:
        return exp
    params = copy.deepcopy(exp.params)
    for dotted, v in values.items():
        table, key = _split(dotted, "--set")
        params[table][key] = _check(SCHEMA[table][key], v, f"--set {dotted}")
    new = Experiment(exp.name, exp.kind, exp.seed, exp.modes, exp.description, params, dict(exp.sweep),
                     f"{exp.source} with --set {', '.join(f'{k}={v!r}' for k, v in values.items())}")
    _cross_checks(new)
    return new
