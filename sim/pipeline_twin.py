"""A SimPy twin of the PySpark pipeline's regime: predicts its async/blocking throughput ratio.

The pipeline (:mod:`pipeline.job`, :mod:`pipeline.coordinator`) runs a Structured Streaming query with trigger
``availableNow`` over a backlogged file source: micro-batches run back to back, one writer (the driver,
``parallelism=1``), and a new batch starts as soon as the previous ``foreachBatch`` returned. The twin drives one
:class:`engine.System` with the same configuration and event mapping the pipeline uses (both from
:mod:`engine.pipeline_script`), so the model decides *what* happens (which instants start, which acks commit what, whether a
clean rolls anything back) and the twin only decides *when*:

=========================  =========================================  ========================================
pipeline step              model events                               simulated cost
=========================  =========================================  ========================================
foreachBatch(n) starts     complete-checkpoint + deliver-ack (c-1)    blocking: ``L`` per instant committed, on
                                                                      the batch thread; async: each commit is
                                                                      queued to the committer thread (``L``
                                                                      each, in the model's ascending order)
(lazy policy)              clean when the model enables it            ``L`` on the batch thread
the batch's input          ingest(0) (one model record = one batch)   --
end of input               trigger-checkpoint, request-instant(0)     ``L`` per instant started (one timeline
                                                                      write: requested + inflight)
write                      --                                         ``W`` (calibrated from the L=0 run):
                                                                      ``N`` writer tasks on ``C`` cores
                           snapshot-task(0)                           --
after the last batch       complete-checkpoint + deliver-ack, then    as above; the run ends when the committer
                           the committer drains                       queue is empty
=========================  =========================================  ========================================

The write is the batch's Spark job: ``N`` writer tasks (``parallelism``) on ``C`` cores (``local[C]``), task
``t`` taking its share ``s_t`` of the batch's task work ``T`` (its records' share: the bucket index routes bucket
``b`` to task ``b mod N``, :func:`task_shares`), scheduled on the cores in task order as Spark's local scheduler
runs them, after a fixed per-batch driver/job overhead ``D``. ``W`` is that job's wall time (``D`` + the tasks'
makespan); :func:`calibrate_task_work` finds ``T`` from a measured ``W``. With ``N = C = 1`` and ``D = 0`` the write
is one task taking ``W``, the twin without tasks.

``L`` is the emulated commit-side latency (``--commit-latency-ms``, slept before every coordinator timeline
write; ``pipeline/coordinator.py`` ``_sleep_latency``). Blocking mode therefore costs ``W + 2L`` a batch, async
``W + L`` a batch plus the last commit's ``L`` (the committer keeps up as long as ``W >= 0``). The twin's
figures come from the SimPy run, not from that formula; the formula is what the test cross-checks.

Every run checks the model's invariants: :func:`model.invariants.protocol.check_step` after every batch and,
after :meth:`System.drain`, :func:`check_drained` + :func:`check_step`; a step the model refuses
(:class:`model.errors.RuleViolation`) fails the run too. Deterministic: no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import simpy

from model.errors import RuleViolation
from engine import pipeline_script as script
from engine.invariants import check_drained, check_step
from model.protocol import ProtocolConfig
from engine import System

TASK = script.TASK
MODES = ("blocking", "async")
#: Largest relative gap between the predicted and measured async/blocking ratio the issue accepts.
TOLERANCE = 0.20


@dataclass
class TwinRun:
    mode: str
    seconds: float                       # simulated wall time of the query, committer drained
    batch_seconds: list = field(default_factory=list)   # foreachBatch entry to return, per batch
    commits: int = 0                     # instants committed (timeline commit writes)
    starts: int = 0                      # instants started (timeline start writes)
    events: list = field(default_factory=list)          # model events applied, drain included
    verdict: str = "ok"                  # "ok" or the first violated invariant


def _protocol_config(mode: str, batches: int) -> ProtocolConfig:
    """The pipeline's model configuration (:func:`engine.pipeline_script.protocol_config`) for one model record
    per batch, without faults: blocking mode uses the EAGER failed-writes policy, async LAZY."""
    return script.protocol_config(mode, batches, crashes=False, max_checkpoints=batches + 16)


class PipelineTwin:
    """One simulated run of the pipeline in ``mode`` (see the module docstring)."""

    def __init__(self, mode: str, batches: int, write_s_per_batch: float, commit_latency_s: float, *,
                 tasks: int = 1, cores: int = 1, shares=None, overhead_s: float = 0.0):
        if mode not in MODES:
            raise ValueError(f"mode: {mode!r}; expected one of {MODES}")
        if batches < 1:
            raise ValueError(f"batches: {batches}; expected at least 1")
        if write_s_per_batch < 0 or commit_latency_s < 0:
            raise ValueError("write_s_per_batch and commit_latency_s must be >= 0")
        if tasks < 1 or cores < 1:
            raise ValueError(f"tasks {tasks}, cores {cores}: expected >= 1 each")
        shares = [1.0 / tasks] * tasks if shares is None else [float(x) for x in shares]
        if len(shares) != tasks or any(x < 0 for x in shares) or abs(sum(shares) - 1.0) > 1e-9:
            raise ValueError(f"shares: {tasks} non-negative fractions summing to 1 expected, got {shares}")
        if not 0 <= overhead_s <= write_s_per_batch:
            raise ValueError(f"overhead_s {overhead_s}: expected 0..write_s_per_batch")
        self.mode, self.batches = mode, batches
        self.W, self.L = float(write_s_per_batch), float(commit_latency_s)
        self.tasks, self.cores, self.shares, self.D = tasks, cores, shares, float(overhead_s)
        # the task work T whose makespan on the cores, after D, is W
        self.T = (self.W - self.D) / makespan_unit(shares, cores) if self.W > self.D else 0.0
        self.system = System(_protocol_config(mode, batches))
        self.env = simpy.Environment()
        self.commit_queue = simpy.Store(self.env) if mode == "async" else None
        self.run_ = TwinRun(mode, 0.0)

    # ------------------------------------------------------------------ model access
    def apply(self, ev) -> None:
        self.system.apply(ev)
        self.run_.events.append(ev)

    def check(self) -> None:
        if self.run_.verdict != "ok":
            return
        bad = [v for v in check_step(self.system) if not v.holds]
        if bad:
            self.run_.verdict = f"{bad[0]} (after batch at {self.env.now:.3f} s)"

    def _commits(self) -> int:
        return len(self.system.table.commit_log)

    # ------------------------------------------------------------------ the batch thread
    def deliver_acks(self):
        """``deliver_spark_acks`` (:func:`engine.pipeline_script.batch_start`): the previous batch's checkpoint
        completes, its ack commits; then a clean. The model steps take no simulated time; their costs follow:
        ``L`` per instant committed (a clean commits nothing), then ``L`` for the clean."""
        before = self._commits()
        evs = script.batch_start(self.system, self.apply)
        n = self._commits() - before
        self.run_.commits += n
        if n:
            if self.commit_queue is None:
                yield self.env.timeout(n * self.L)
            else:
                for _ in range(n):
                    yield self.commit_queue.put(self.L)
        if any(ev.kind == "clean" for ev in evs):
            yield self.env.timeout(self.L)

    def batches_proc(self):
        env = self.env
        for _ in range(self.batches):
            started = env.now
            yield from self.deliver_acks()
            pending: set = set()
            script.batch_records(self.system, self.apply, 1,  # one model record = one batch
                                 on_checkpoint=lambda _c: pending.update(self.system.table.pending_instants()))
            started_n = len(set(self.system.table.pending_instants()) - pending)
            self.run_.starts += started_n
            yield env.timeout(started_n * self.L)
            yield from self.write_job()
            script.after_write(self.system, self.apply, self.mode)
            self.run_.batch_seconds.append(env.now - started)
            self.check()
        yield from self.deliver_acks()  # job.py: the last batch's commit after its foreachBatch returned

    def write_job(self):
        """The batch's Spark job: the driver/job overhead ``D``, then the ``N`` writer tasks on the ``C`` cores
        (a SimPy resource; tasks queue for a core in task order); returns when the last task ends."""
        env = self.env
        if self.D:
            yield env.timeout(self.D)
        if self.T <= 0:
            return
        cores = simpy.Resource(env, capacity=self.cores)

        def task(share):
            with cores.request() as req:
                yield req
                yield env.timeout(self.T * share)
        yield env.all_of([env.process(task(x)) for x in self.shares])

    def committer(self):
        while True:
            cost = yield self.commit_queue.get()
            yield self.env.timeout(cost)

    def run(self) -> TwinRun:
        env = self.env
        main = env.process(self.batches_proc())
        if self.commit_queue is not None:
            env.process(self.committer())
        try:
            env.run(until=main)
        except RuleViolation as exc:  # the model refused a step the pipeline would take: the run fails
            self.run_.verdict = f"refused: {exc} (at {env.now:.3f} s)"
            self.run_.seconds = env.now
            return self.run_
        if self.commit_queue is not None:  # finish(): drain the committer
            while self.commit_queue.items or env.peek() != float("inf"):
                env.step()
        self.run_.seconds = env.now
        self.check()
        self.run_.events.extend(self.system.drain())
        bad = [v for v in check_drained(self.system) + check_step(self.system) if not v.holds]
        if self.run_.verdict == "ok" and bad:
            self.run_.verdict = str(bad[0])
        return self.run_


def makespan_unit(shares, cores: int) -> float:
    """The wall time of tasks taking ``shares`` (of one unit of work) on ``cores`` cores, each task to the first
    free core in task order (Spark's local scheduler offers tasks in partition order)."""
    free = [0.0] * cores
    for x in shares:
        i = min(range(cores), key=lambda c: free[c])
        free[i] += x
    return max(free) if shares else 0.0


def task_shares(keys, buckets: int, tasks: int) -> list[float]:
    """Each writer task's share of the records whose record keys are ``keys``: the bucket index's routing
    (:func:`lakeio.hudiformat.bucket.bucket_ids`, task = bucket mod ``tasks``)."""
    import numpy as np

    from lakeio.hudiformat import bucket as bk

    t = bk.task_of(bk.bucket_ids(keys, buckets), tasks)
    counts = np.bincount(t, minlength=tasks).astype(float)
    return (counts / counts.sum()).tolist() if counts.sum() else [1.0 / tasks] * tasks


def simulate(mode: str, batches: int, write_s_per_batch: float, commit_latency_s: float, **tasks) -> TwinRun:
    """One twin run; ``tasks``: ``tasks``, ``cores``, ``shares``, ``overhead_s`` of :class:`PipelineTwin`."""
    return PipelineTwin(mode, batches, write_s_per_batch, commit_latency_s, **tasks).run()


def predict_ratio(records: int, batches: int, write_s_per_batch: float, commit_latency_s: float, **tasks) -> dict:
    """Predicted records/s per mode and the async/blocking ratio for the pipeline's regime.

    Raises RuntimeError when a run breaks one of the model's invariants."""
    runs = {m: simulate(m, batches, write_s_per_batch, commit_latency_s, **tasks) for m in MODES}
    for r in runs.values():
        if r.verdict != "ok":
            raise RuntimeError(f"pipeline twin ({r.mode}): invariant violated: {r.verdict}")
    b, a = (records / runs[m].seconds if runs[m].seconds > 0 else float("inf") for m in MODES)
    return {"blocking_rps": b, "async_rps": a, "ratio": a / b if b != float("inf") else 1.0,
            "blocking_s": runs["blocking"].seconds, "async_s": runs["async"].seconds,
            "blocking_batch_p50": _p50(runs["blocking"].batch_seconds),
            "async_batch_p50": _p50(runs["async"].batch_seconds)}


def _p50(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else float("nan")


# ---------------------------------------------------------------------- calibration and comparison
def _measured(rows) -> dict:
    """``{latency_ms: {"blocking": rps, "async": rps}}`` from bench_pipeline rows (``what`` = "<mode> <type>")."""
    out: dict = {}
    for r in rows:
        mode = str(r["what"]).split()[0]
        if mode in MODES:
            out.setdefault(int(r["latency_ms"]), {})[mode] = float(r["rps"])
    return out


def calibrate_write_s(rows, records: int, batches: int) -> float:
    """W from the L=0 rows: with no commit latency both modes take ``batches * W`` in the twin, so W is the
    mean over the two modes of the measured seconds per batch."""
    m = _measured(rows).get(0, {})
    if set(m) != set(MODES):
        raise ValueError("rows: need blocking and async rows at latency_ms 0 to calibrate W")
    return sum(records / m[k] for k in MODES) / len(MODES) / batches


def compare(rows, records: int, batches: int, tolerance: float = TOLERANCE, out=print, **tasks) -> list[dict]:
    """Predicted vs measured async/blocking ratio per commit latency (W calibrated from L=0); prints one line
    a latency and returns the rows (``within``: relative gap <= ``tolerance``). ``tasks``: the run's writer
    tasks (``tasks``, ``cores``, ``shares``, ``overhead_s``, :class:`PipelineTwin`)."""
    W = calibrate_write_s(rows, records, batches)
    res = []
    n, c = tasks.get("tasks", 1), tasks.get("cores", 1)
    sh = tasks.get("shares") or [1.0 / n] * n
    out(f"pipeline twin: W = {W:.3f} s/batch (calibrated at L=0), {records} records in {batches} batches; "
        f"{n} writer task(s) on {c} core(s), shares {' '.join(f'{x:.2f}' for x in sh)}, "
        f"task work {(W - tasks.get('overhead_s', 0.0)) / makespan_unit(sh, c):.3f} core-s/batch")
    for lat, m in sorted(_measured(rows).items()):
        if set(m) != set(MODES):
            continue
        p = predict_ratio(records, batches, W, lat / 1000.0, **tasks)
        meas = m["async"] / m["blocking"]
        gap = abs(p["ratio"] - meas) / meas
        row = {"latency_ms": lat, "measured_ratio": meas, "predicted_ratio": p["ratio"], "gap": gap,
               "within": gap <= tolerance, "predicted": p}
        res.append(row)
        out(f"  L={lat:5d} ms  async/blocking measured {meas:.3f}  predicted {p['ratio']:.3f}  "
            f"(blocking {p['blocking_rps']:.0f} / async {p['async_rps']:.0f} rec/s predicted)  "
            f"gap {gap * 100:.1f} %: {'within' if row['within'] else 'OUTSIDE'} {tolerance * 100:.0f} %")
    return res
