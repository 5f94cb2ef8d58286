"""Indexing a large table while a pipeline keeps writing to it (issue #18): the pipeline's throughput with
``hoodie-lab index`` beside it against its throughput alone, and the index's build and catch-up times.

Setup: a merge-on-read table version 8 of ``--records`` records (default 1,000,000) with the pipeline's name and
schema, written in 100,000-record commits by ``HudiTableWriter`` through the metadata-table commit hook (the
write path the pipeline's coordinator calls), then copied twice so both runs start from the same bytes.

* ``--mode pipeline`` (default): after a warm-up run, the real Spark pipeline (async coordinator,
  ``--pipeline-records`` records in ``--pipeline-batches`` batches, 30 % updates) writes into copy A alone,
  then into copy B with ``hoodie-lab index --type record_index`` started as a separate process once
  ``--indexer-after`` commits of the run completed (the pipeline in its steady state; the same timeline
  watcher polls in both runs). Throughput alone = records per batch / the mean gap between consecutive
  commits (their completion times; the first commit left out). Throughput beside = over the indexer's
  window (its process's start to its exit): each commit gap overlapping the window counts with the share of
  its batch that falls inside (records committed at a steady rate between two commits), over the part of the
  window the gaps cover (:func:`window_rps`). The target's ratio compares those window gaps with the *same*
  commit gaps (by position in the run) of the run alone (:func:`matched_seconds`): the pipeline speeds up
  within a run, so a window early in the run set against the whole run's mean gap would count that warm-up
  against the indexer. Also printed: beside over the window against the mean gap alone, over the gaps that
  *ended* in the window (the first measure) and over the whole runs.
* ``--mode commit`` (a micro-benchmark, no Spark): the CPU time of one commit's MDT deltacommit with the
  record index inflight, its keys read back from the files the commit wrote or taken from the write's record
  delegates, against the files partition alone (:func:`commit_costs`; ``--records``: the table's first commit,
  use a small one, e.g. 20,000: the commit's cost does not depend on it).
* ``--mode writer``: no Spark; the writer commits ``--commits`` upserts of ``--batch`` records alone on A, then
  on B beside the indexer until the indexer ends; throughput over the commits made while it was alive.

The indexer runs in its own session (``setsid``): a separate job, as Hudi's ``HoodieIndexer`` is; with the
kernel's autogroup scheduling a child in the benchmark's own session would split the writer's CPU share.
``--indexer-priority background|normal``: the command's ``--priority`` (background, its default: the job at
``SCHED_IDLE``, in the idle I/O class, with its session's autogroup at nice 19, paced to a quarter of a CPU; normal: not
lowered, not paced); ``--indexer-max-cpu``: its ``--max-cpu``. ``--beside burner`` (a control): instead of the
indexer a process that only spins the CPU for ``--burn-seconds`` at the same priority (paced to
``--burn-share``): what any busy neighbour costs the pipeline on this machine. ``--beside nothing`` (the
A/A control): a process started the same way that only sleeps for ``--burn-seconds``: both runs of a round are
then the pipeline alone, so the ratio shows what the design itself reads as a difference (the noise of the
rounds, and any bias between the run made into copy A and the one into copy B).
Figures: records/s alone and beside the indexer and their ratio; the indexer's build and catch-up seconds,
records indexed, catch-up decisions; whether the audit of B holds (``MDT.record-index``: the index equals a
rebuild). Target: the ratio is >= 0.90; exit 1 when it is not or the audit fails. The figures depend on the
machine's load: say what else ran.

    python benchmarks/bench_indexing.py [--quick] [--mode pipeline|writer|commit] [--records N] [--seed S]
        [--pipeline-records R] [--pipeline-batches B] [--batch B] [--commits C] [--indexer-after K]
        [--rounds R] [--indexer-priority background|normal] [--indexer-max-cpu SHARE]
        [--beside indexer|burner|nothing] [--burn-seconds S] [--burn-share SHARE] [--keep] [--gaps] [--repeat N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PARTITIONS = 8


class Clock:
    def __init__(self):
        self.ms = int(time.time() * 1000) - 3_600_000  # an hour back: the indexer's wall-clock times come later

    def __call__(self) -> str:
        import datetime as dt

        self.ms += 3
        d = dt.datetime.fromtimestamp(self.ms / 1000, dt.timezone.utc)
        return d.strftime("%Y%m%d%H%M%S") + f"{self.ms % 1000:03d}"


def _batch(keys, ts):
    """Rows with the pipeline's schema; keys ``b<n>`` (the pipeline's own are ``k<n>``), its partitions."""
    import pyarrow as pa

    from pipeline.source import partition_of

    ks = [f"b{k:09d}" for k in keys]
    return pa.table({"key": ks, "ts": [ts] * len(ks), "partition": [partition_of(k) for k in ks],
                     "payload": [f"v{k % 997}" for k in keys]})


def _commit(w, clock, records, hook=True):
    """One upsert through the MDT hook, the write's record delegates collected while the table has a record index
    (built or being built), as the pipeline's coordinator asks its tasks."""
    from lakeio.ondisk import mdt
    from model.mdt.partitions import RECORD_INDEX, writer_partitions

    t = clock()
    w.start(t)
    w.record_delegates = hook and RECORD_INDEX in writer_partitions(mdt.partition_states(w.base_path))
    r = w.write_batch(t, records, "upsert")
    c = clock()
    with mdt.committing(w.base_path, 8, t, c, r.write_stats, enabled=hook, delegates=r.record_delegates):
        w.commit(t, c, r)
    return t


def _writer(path: Path):
    from lakeio.hudiformat.table import HudiTableWriter

    from pipeline.coordinator import TABLE_NAME

    return HudiTableWriter(path, "MERGE_ON_READ", 8, record_key="key", ordering_field="ts",
                           partition_field="partition", table_name=TABLE_NAME)


def build_table(path: Path, records: int, chunk: int, clock: Clock) -> float:
    w = _writer(path)
    t0 = time.perf_counter()
    for start in range(0, records, chunk):
        _commit(w, clock, _batch(range(start, min(records, start + chunk)), 0))
    return time.perf_counter() - t0


def upserts(rng: random.Random, n: int, existing: int, fresh, ts: int):
    """70 % updates of existing keys, 30 % new keys (``fresh``: an iterator of unused keys)."""
    upd = int(n * 0.7)
    keys = rng.sample(range(existing), upd) + [next(fresh) for _ in range(n - upd)]
    return _batch(keys, ts)


def run_writer(path: Path, clock: Clock, *, existing: int, batch: int, commits: int, seed: int,
               while_alive=None) -> list[tuple[float, float, bool]]:
    """(start, end, indexer alive) of every commit; with ``while_alive`` keeps going while it returns True."""
    w = _writer(path)
    rng = random.Random(seed)
    fresh = itertools.count(existing)
    out = []
    i = 0
    while i < commits or (while_alive is not None and while_alive()):
        alive = while_alive() if while_alive else False
        recs = upserts(rng, batch, existing, fresh, i + 1)
        t0 = time.perf_counter()
        _commit(w, clock, recs)
        out.append((t0, time.perf_counter(), alive and (while_alive() if while_alive else False)))
        i += 1
    return out


def _indexer(table: Path, priority: str = "background", max_cpu: float | None = None) -> subprocess.Popen:
    """``hoodie-lab index`` as a separate job (its own session, as Hudi's ``HoodieIndexer`` is a job of its own;
    with the kernel's autogroup scheduling a child in the benchmark's session would split the benchmark's CPU
    share instead of taking its own). ``priority``: the command's ``--priority`` (background, its default:
    ``SCHED_IDLE`` and its session's autogroup at nice 19, ``lakeio/background.py``)."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    cmd = [sys.executable, "-m", "hoodie_lab.cli", "index", str(table), "--type", "record_index",
           "--concurrency-mode", "optimistic_concurrency_control", "--lock-provider", "filesystem",
           "--poll", "0.1", "--priority", priority, "--json"] + ([] if max_cpu is None else ["--max-cpu", str(max_cpu)])
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)


def _burner(seconds: float, priority: str = "background", share: float = 1.0) -> subprocess.Popen:
    """The control for ``--beside burner``: a process that only spins the CPU for ``seconds`` (no files, no
    memory traffic to speak of; ``share`` < 1: paced to that share of a CPU by
    :class:`lakeio.background.Pacer`), started as the indexer is (its own session; at ``background`` priority
    lowered by the same :func:`lakeio.background.lower_priority`). What the pipeline loses beside it is what
    any busy process on the other core costs it here, whatever the indexer does."""
    from lakeio.background import lower_priority

    if share == 0:  # --beside nothing: the same kind of process, idle
        code = f"import time\nimport lakeio.background\ntime.sleep({seconds!r})\n"
    else:
        code = ("import time\nfrom lakeio.background import Pacer\n"
                f"p = Pacer({share!r})\nend = time.perf_counter() + {seconds!r}\n"
                "while time.perf_counter() < end:\n"
                "    t = time.process_time() + 0.005\n"
                "    while time.process_time() < t: pass\n"
                "    p.pace()\n")  # 5 ms pieces, paced like the indexer's build
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True,
                            preexec_fn=lower_priority if priority == "background" else None)


def _commit_gaps(table: Path, after: float = 0.0) -> list[tuple[float, float]]:
    """(start, end) in wall-clock seconds of the intervals between consecutive data commits (their
    completion times) of the pipeline's run, those completed at or after ``after``: the first commit's
    interval is left out (it includes the query's start)."""
    from lakeio.ondisk.reader import read_table
    from model.instant import to_millis

    done = sorted(c for c in (to_millis(i.completion_time) / 1000 for i in read_table(table).timeline.completed()
                              if i.action.value == "deltacommit") if c >= after)  # the run's own commits
    return list(zip(done, done[1:]))


def window_rps(gaps: list[tuple[float, float]], per_batch: float, start: float, end: float) -> tuple[float, float]:
    """The pipeline's records/s over the window [start, end]: every commit gap overlapping it counts with the
    share of the gap inside the window (its batch's records committed at a steady rate between the two
    commits), over the part of the window the gaps cover; and that covered part in seconds."""
    recs = covered = 0.0
    for a, b in gaps:
        ov = min(b, end) - max(a, start)
        if ov > 0 and b > a:
            recs += per_batch * ov / (b - a)
            covered += ov
    return (recs / covered if covered else float("nan")), covered


def matched_seconds(window_gaps: list[tuple[int, float, float]], alone_gaps: list[tuple[float, float]]) -> float:
    """How long the run alone took for the records the run beside committed in the indexer's window: each
    window gap ``(i, overlap, length)`` of the run beside (the ``i``-th commit gap of its run, ``overlap``
    seconds of it inside the window) counts the alone run's ``i``-th gap times the same share. The pipeline
    speeds up within a run (its later commit gaps are shorter, the last one shortest), so the window's
    gaps are compared with the same gaps of the run alone, not with its mean gap."""
    return sum((alone_gaps[i][1] - alone_gaps[i][0]) * ov / length for i, ov, length in window_gaps)


def _after_commits(table: Path, start: float, n: int, stop) -> None:
    """Wait until ``n`` data commits completed on ``table`` since ``start`` (polls the timeline folder every
    20 ms: completed files ``<requested>_<completion>.deltacommit``; gives up when ``stop`` is set)."""
    from model.instant import to_millis

    tl = table / ".hoodie" / "timeline"
    while not stop.is_set():
        done = sum(1 for x in os.listdir(tl) if x.endswith(".deltacommit") and "_" in x
                   and to_millis(x[:-len(".deltacommit")].split("_")[1][:17]) / 1000 >= start)
        if done >= n:
            return
        time.sleep(0.02)


def _pipeline_run(tmp: Path, name: str, table: Path, args, spark, beside: bool, share: float | None = None) -> dict:
    """One pipeline run into ``table``; with ``beside`` the indexer starts once ``--indexer-after`` commits of
    the run completed (the same timeline watcher polls in both kinds of run)."""
    import threading

    from pipeline.job import prepare_run, run_job

    per_batch = args.pipeline_records / args.pipeline_batches
    root = tmp / f"run-{name}"
    prepare_run(root, mode="async", table_type="mor", table_version=8, records=args.pipeline_records,
                batches=args.pipeline_batches, seed=args.seed, table=str(table))
    start = time.time()
    box: dict = {}
    stop = threading.Event()

    def watch():
        _after_commits(table, start, args.indexer_after, stop)
        if not beside or stop.is_set():
            return
        box["start"] = time.time()
        proc = box["proc"] = (_indexer(table, args.indexer_priority, share) if args.beside == "indexer"
                              else _burner(args.burn_seconds, args.indexer_priority,
                                           0 if args.beside == "nothing" else args.burn_share))
        box["out"], box["err"] = proc.communicate()
        box["end"] = time.time()

    th = threading.Thread(target=watch)
    th.start()
    s = run_job(root, spark=spark, progress=None)
    stop.set()  # the alone run's watcher (and a beside run that ended before its start) stop here
    th.join()
    res = {"run_rps": args.pipeline_records / s["seconds"], "seconds": time.time() - start}
    gaps = res["gaps"] = _commit_gaps(table, start)
    if not beside:
        res["rps"] = per_batch / (sum(y - x for x, y in gaps) / len(gaps)) if gaps else float("nan")
        return res
    if "proc" not in box:
        raise SystemExit("the pipeline ended before the indexer was to start: nothing measured")
    ws, we = box["start"], box["end"]
    res.update(proc=box["proc"], out=box["out"], err=box["err"], idx_wall=we - ws, idx_start=ws - start, ws=ws, we=we)
    res["rps"], res["covered"] = window_rps(gaps, per_batch, ws, we)
    res["window_gaps"] = [(i, min(b, we) - max(a, ws), b - a) for i, (a, b) in enumerate(gaps)
                          if min(b, we) - max(a, ws) > 0 and b > a]
    res["window_records"] = res["rps"] * res["covered"] if res["covered"] else 0.0
    ended = [y - x for x, y in gaps if ws <= y <= we]
    res["ended_gaps"] = len(ended)
    res["ended_rps"] = per_batch / (sum(ended) / len(ended)) if ended else float("nan")
    return res


def warm_up(tmp: Path, src: Path, args, spark) -> None:
    """A run of the measured size into a copy of ``src``, not counted: Spark's first query pays its start-up,
    and the JVM keeps compiling the job's code over the next runs (after a 2-batch warm-up a run alone went
    from 13,952 records/s in the 1st round to 17,504 in the 6th)."""
    from pipeline.job import prepare_run, run_job

    warm, wtab = tmp / "run-warm-up", tmp / "warm-up"
    shutil.copytree(src, wtab)
    prepare_run(warm, mode="async", table_type="mor", table_version=8, records=args.pipeline_records,
                batches=args.pipeline_batches, seed=args.seed, table=str(wtab))
    run_job(warm, spark=spark, progress=None)
    shutil.rmtree(wtab, ignore_errors=True)
    shutil.rmtree(warm, ignore_errors=True)


def pipeline_rounds(tmp: Path, src: Path, args, spark, share: float | None, tag: str = "") -> list[tuple[dict, dict, Path]]:
    """``--rounds`` pairs of pipeline runs, each into fresh copies of ``src``: alone, then beside the indexer
    (paced to ``share``; None: the command's default), the order swapped every other round (a load that drifts
    during a pair then counts against both sides). Records/s over the whole run; alone over every commit gap
    of the run; beside over the indexer's window (its process's start to its exit; :func:`window_rps`) and
    over the gaps that ended in it."""
    out = []
    for i in range(args.rounds):
        a, b = tmp / f"alone{tag}-{i}", tmp / f"beside{tag}-{i}"
        shutil.copytree(src, a)
        shutil.copytree(src, b)
        os.sync()  # the copies' dirty pages written out now, not during the round's first run
        got = {}
        for beside in ((False, True) if i % 2 == 0 else (True, False)):
            got[beside] = _pipeline_run(tmp, f"{'beside' if beside else 'alone'}{tag}-{i}", b if beside else a,
                                        args, spark, beside, share)
        out.append((got[False], got[True], b))
        if i < args.rounds - 1:
            shutil.rmtree(a, ignore_errors=True)
            shutil.rmtree(b, ignore_errors=True)
    return out


def gaps_by_step(beside: list[tuple[float, float]], alone: list[tuple[float, float]], job_start: float,
                 job_end: float, steps: dict[str, float]) -> list[tuple[str, int, float, float]]:
    """The run beside's commit gaps grouped by what the indexer was doing at each gap's midpoint: ``before`` it
    started, ``start-up`` (its process's start to its schedule step), each of its ``steps`` (wall-clock start
    times, ``IndexReport.steps``; ``end`` starts the ``exit``), ``after`` its process ended. Returns (step, gaps,
    seconds beside, seconds of the same gaps alone) for each step with a gap, in time order."""
    marks = [("before", float("-inf")), ("start-up", job_start)]
    marks += sorted(((("exit" if k == "end" else k), v) for k, v in steps.items()), key=lambda kv: kv[1])
    marks.append(("after", job_end))
    out: dict[str, list] = {}
    for (a, b), (x, y) in zip(beside, alone):
        mid = (a + b) / 2
        name = [n for n, t in marks if t <= mid][-1]
        row = out.setdefault(name, [0, 0.0, 0.0])
        row[0] += 1
        row[1] += b - a
        row[2] += y - x
    order = [n for n, _ in marks]
    return [(n, *out[n]) for n in sorted(out, key=order.index)]


def round_interval(matched: list[float], covered: list[float], seed: int, n: int = 10_000) -> tuple[float, float]:
    """The 95 % percentile-bootstrap interval of the pooled ratio sum(matched) / sum(covered) over the rounds
    (each round resampled as a whole, ``n`` times, seeded): how far the rounds' spread leaves the pooled figure
    from what more rounds would give. Few rounds make it optimistic (a bootstrap of six values is narrow)."""
    import numpy as np

    m, c = np.asarray(matched, dtype=float), np.asarray(covered, dtype=float)
    pick = np.random.default_rng(seed).integers(0, len(m), size=(n, len(m)))
    ratios = m[pick].sum(axis=1) / c[pick].sum(axis=1)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(lo), float(hi)


def report_rounds(rounds, args) -> dict | None:
    """Print each round and the pooled figures of one share; returns ``ratio`` (the target's measure),
    ``covered`` (the share of the indexer's windows the pipeline's commit gaps covered), ``build_s`` and
    ``catchup_s`` (means over the rounds), or None when a round measured nothing (said why)."""
    per_batch = args.pipeline_records / args.pipeline_batches
    builds, catchups = [], []
    for i, (al, be, _) in enumerate(rounds):
        if be["proc"].returncode != 0:
            print(f"indexer failed (exit {be['proc'].returncode}): {be['err'].strip()}")
            return None
        if not be["covered"]:
            print(f"round {i + 1}: no pipeline commit gap overlapped the indexer's window: no overlap measured")
            return None
        print(f"round {i + 1} ({'alone first' if i % 2 == 0 else 'beside first'}): alone "
              f"{al['rps']:,.0f} records/s over its {len(al['gaps'])} commit gaps; beside {_who(args)} "
              f"{be['rps']:,.0f} records/s over its window ({be['rps'] / al['rps']:.1%}; {be['covered']:.1f} "
              f"of its {be['idx_wall']:.1f} s covered by commit gaps, from {be['idx_start']:.1f} s "
              f"on); over the {be['ended_gaps']} gaps that ended in it {be['ended_rps']:,.0f} "
              f"({be['ended_rps'] / al['rps']:.1%}); whole runs {al['run_rps']:,.0f} and {be['run_rps']:,.0f} "
              f"({be['run_rps'] / al['run_rps']:.1%})")
        if be["covered"] < 0.9 * be["idx_wall"]:
            print(f"  WARNING: the pipeline's commits covered only {be['covered']:.1f} of {_who(args)}'s "
                  f"{be['idx_wall']:.1f} s: the rest of its run is not measured (raise --pipeline-batches)")
        if len(al["gaps"]) == len(be["gaps"]):
            m = matched_seconds(be["window_gaps"], al["gaps"]) / be["covered"]
            print(f"  matched gaps: beside / alone over the same commit gaps of the two runs {m:.1%}")
        if args.beside == "indexer":
            rep = json.loads(be["out"])
            builds.append(rep["build_s"])
            catchups.append(rep["catchup_s"])
            print(f"  {_indexer_line(be['out'])}")
        else:
            print(f"  {args.beside}: {args.burn_seconds} s")
        if args.gaps:
            ms = lambda gs: " ".join(f"{(y - x) * 1000:.0f}" for x, y in gs)  # noqa: E731
            inside = {i for i, _, _ in be["window_gaps"]}
            print(f"  commit gaps, ms: alone {ms(al['gaps'])}; beside {ms(be['gaps'])} (in the window: "
                  f"{', '.join(str(i + 1) for i in sorted(inside))})")
            if args.beside == "indexer" and len(al["gaps"]) == len(be["gaps"]):
                steps = json.loads(be["out"]).get("steps") or {}
                print("  by the indexer's step (gap midpoints; alone = the same gaps of the run alone): " + "; ".join(
                    f"{name} {n} gaps, beside {b * 1000 / n:.0f} ms, alone {a * 1000 / n:.0f} ms ({a / b:.1%})"
                    for name, n, b, a in gaps_by_step(be["gaps"], al["gaps"], be["ws"], be["we"], steps)))
    gaps_alone = [g for al, _, _ in rounds for g in al["gaps"]]
    rps_alone = per_batch * len(gaps_alone) / sum(y - x for x, y in gaps_alone)
    covered = sum(be["covered"] for _, be, _ in rounds)
    rps_beside = sum(be["window_records"] for _, be, _ in rounds) / covered
    ratio = rps_beside / rps_alone
    each = ", ".join(f"{be['rps'] / al['rps']:.1%}" for al, be, _ in rounds)
    print(f"pipeline ({args.pipeline_records:,} records in {args.pipeline_batches} batches, {len(rounds)} "
          f"round(s)), pooled: alone {rps_alone:,.0f} records/s over {len(gaps_alone)} commit gaps, beside "
          f"{_who(args)} {rps_beside:,.0f} records/s over {covered:.1f} s of its windows ({ratio:.1%} of "
          f"the mean gap alone); per round {each}")
    if any(len(al["gaps"]) != len(be["gaps"]) for al, be, _ in rounds):
        print("matched gaps: the runs made different numbers of commits; judged on the mean gap")
    else:
        matched = [matched_seconds(be["window_gaps"], al["gaps"]) for al, be, _ in rounds]
        ratio = sum(matched) / covered
        print(f"pooled over the same commit gaps of the runs alone (the target's measure): {ratio:.1%} (the runs "
              f"alone took {sum(matched):.1f} s for what the runs beside committed in {covered:.1f} s: add these up "
              f"to pool several runs)")
        if len(rounds) > 1:
            lo, hi = round_interval(matched, [be["covered"] for _, be, _ in rounds], args.seed)
            print(f"  95 % bootstrap interval over the {len(rounds)} rounds (resampled 10,000 times, seed "
                  f"{args.seed}): {lo:.1%} - {hi:.1%}")
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
    return {"ratio": ratio, "covered": covered / sum(be["idx_wall"] for _, be, _ in rounds),
            "build_s": mean(builds), "catchup_s": mean(catchups)}


def plot_sweep(rows: list[dict], path: Path, title: str) -> Path:
    """The pace sweep: the pipeline's throughput beside the indexer (the target's measure) against the share of
    a CPU the indexer is paced to, with the 90 % target, and the index's build and catch-up seconds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [r["share"] for r in rows]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    ax.plot(xs, [100 * r["ratio"] for r in rows], "o-")
    ax.axhline(90, color="#d62728", ls="--", lw=1, label="target 90 %")
    for r in rows:
        if r["covered"] < 0.9:
            ax.annotate(f"{r['covered']:.0%} of the window", (r["share"], 100 * r["ratio"]), fontsize=7)
    ax.set_xlabel("indexer paced to (share of one CPU)")
    ax.set_ylabel("pipeline throughput beside the indexer (% of alone)")
    ax.legend(fontsize=8)
    bx.bar([str(x) for x in xs], [r["build_s"] for r in rows], label="build")
    bx.bar([str(x) for x in xs], [r["catchup_s"] for r in rows], bottom=[r["build_s"] for r in rows],
           label="catch-up")
    bx.set_xlabel("indexer paced to (share of one CPU)")
    bx.set_ylabel("seconds (mean over the rounds)")
    bx.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def commit_costs(tmp: Path, args) -> dict:
    """``--mode commit``: the CPU time of one commit's MDT deltacommit (``mdt.apply_commit``) with the record index
    inflight, on a merge-on-read table written as the pipeline writes (the bucket index, ``--buckets`` buckets a
    partition, so a commit appends a log file to each of its file groups): ``--records`` records in one commit,
    then ``--commits`` upserts of ``--batch`` records (:func:`upserts`: 70 % updates, 30 % new keys). Timed on
    each written commit before it completes: the files partition only (as with no record index), the record
    index from the keys read back from the commit's files, and from the write's record delegates (what the
    pipeline's tasks return), ``--repeat`` times each in turns (each call redoes the MDT deltacommit; median per
    commit, then over the commits). Also the delegates' trip from a task (Arrow IPC out and in). No Spark."""
    import statistics

    from lakeio.hudiformat import delegates as dg
    from lakeio.ondisk import mdt
    from model.mdt.partitions import RECORD_INDEX, PartitionStates

    clock = Clock()
    path = tmp / "commit"
    w = _writer(path)
    w.record_delegates = True

    def write(records):
        t = clock()
        w.start(t)
        return t, w.write_batch(t, records, "upsert", num_buckets=args.buckets), clock()

    t, r, c = write(_batch(range(args.records), 0))
    with mdt.committing(path, 8, t, c, r.write_stats):
        w.commit(t, c, r)
    rng = random.Random(args.seed)
    fresh = itertools.count(args.records)
    files_only = mdt.partition_states(path)
    with_ri = PartitionStates(files_only.available, files_only.inflight | {RECORD_INDEX})
    kinds = ("files only", "record index, keys read from the files", "record index, keys from the delegates")
    per = {k: [] for k in kinds}
    trip = []
    files = []
    for i in range(args.commits):
        t, r, c = write(upserts(rng, args.batch, args.records, fresh, i + 1))
        files.append(len(r.write_stats))
        runs = {k: [] for k in kinds}
        for j in range(args.repeat):
            order = kinds if (i + j) % 2 == 0 else kinds[::-1]
            for k in order:
                mdt.write_partition_states(path, files_only if k == kinds[0] else with_ri)
                d = r.record_delegates if k == kinds[2] else None
                t0 = time.process_time()
                mdt.apply_commit(path, t, c, r.write_stats, delegates=d)
                runs[k].append(time.process_time() - t0)
        t0 = time.process_time()
        dg.concat([dg.from_bytes(dg.to_bytes(r.record_delegates))])
        trip.append(time.process_time() - t0)
        mdt.write_partition_states(path, with_ri)
        mdt.apply_commit(path, t, c, r.write_stats, delegates=r.record_delegates)
        w.commit(t, c, r)
        for k in kinds:
            per[k].append(statistics.median(runs[k]))
    med = {k: statistics.median(v) * 1000 for k, v in per.items()}
    ri_files, ri_dg = med[kinds[1]] - med[kinds[0]], med[kinds[2]] - med[kinds[0]]
    print(f"one commit's MDT deltacommit, {args.batch:,} records (70 % updates) into {statistics.median(files):g} "
          f"files ({args.buckets} buckets a partition), {args.commits} commits x {args.repeat} runs each, CPU ms "
          "(median):")
    for k in kinds:
        print(f"  {k}: {med[k]:.2f} ms")
    print(f"  the record index's share: {ri_files:.2f} ms with the keys read from the files, {ri_dg:.2f} ms from "
          f"the delegates ({ri_dg / ri_files:.0%}); the whole deltacommit {med[kinds[2]] / med[kinds[1]]:.0%} "
          f"of the re-reading one")
    print(f"  the delegates' trip from a task (Arrow IPC out and in): {statistics.median(trip) * 1000:.2f} ms")
    return med


def _who(args) -> str:
    """What ran beside the pipeline, for a sentence: the indexer, the burner, nothing (the A/A control)."""
    return "nothing" if args.beside == "nothing" else f"the {args.beside}"


def _beside_label(args) -> str:
    if args.beside == "indexer":
        return "indexer"
    if args.beside == "nothing":
        return f"nothing (a process that sleeps {args.burn_seconds:g} s: the A/A control)"
    return f"burner ({args.burn_seconds:g} s at {args.burn_share:g} of a CPU, a control)"


def _indexer_line(out: str) -> str:
    rep = json.loads(out)
    counts: dict[str, int] = {}
    for _, d in rep["decisions"]:
        counts[d] = counts.get(d, 0) + 1
    return (f"indexer: {rep['base_records']:,} records built in {rep['build_s']:.1f} s, catch-up "
            f"{rep['catchup_s']:.1f} s over {len(rep['decisions'])} instants ({counts}); paced to "
            f"{rep.get('max_cpu', 1):g} of a CPU ({rep.get('paced_s', 0):.1f} s of pauses); {rep.get('priority')}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="100,000 records; a short pipeline run")
    ap.add_argument("--mode", choices=["pipeline", "writer", "commit"], default="pipeline")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--pipeline-records", type=int, default=300_000)
    ap.add_argument("--pipeline-batches", type=int, default=60,
                    help="default 60 batches of 5,000 (about 19 s): the run outlasts the paced indexer, so its whole "
                         "window is measured")
    ap.add_argument("--batch", type=int, default=20_000)
    ap.add_argument("--commits", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=5, help="--mode commit: timed runs of each kind per commit")
    ap.add_argument("--buckets", type=int, default=4, help="--mode commit: bucket-index buckets a partition "
                    "(the pipeline's default)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--indexer-after", type=int, default=2,
                    help="start the indexer when this many pipeline commits of the run completed (pipeline mode)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="pairs of pipeline runs (pipeline mode; default 3, --quick 1)")
    ap.add_argument("--indexer-priority", choices=["background", "normal"], default="background",
                    help="hoodie-lab index --priority: background (its default: SCHED_IDLE, autogroup nice 19) "
                         "or normal")
    ap.add_argument("--indexer-max-cpu", default=None, metavar="SHARE[,SHARE...]",
                    help="hoodie-lab index --max-cpu (default: the command's own); several, comma-separated: a "
                         "sweep, each share its --rounds (pipeline mode; the target is judged on the first)")
    ap.add_argument("--plot", type=Path, default=None, metavar="PNG",
                    help="draw the throughput and the build and catch-up times against the share (pipeline mode)")
    ap.add_argument("--beside", choices=["indexer", "burner", "nothing"], default="indexer",
                    help="what runs beside the pipeline (pipeline mode): the indexer, or as a control a process that "
                         "only spins the CPU for --burn-seconds at the same priority (what any busy neighbour costs), "
                         "or (the A/A control) one that only sleeps for --burn-seconds")
    ap.add_argument("--burn-seconds", type=float, default=3.5, help="the burner's run time (default 3.5 s: about "
                    "the indexer's window on the default table)")
    ap.add_argument("--burn-share", type=float, default=1.0, help="the burner's pace: this share of a CPU "
                    "(default 1: unpaced)")
    ap.add_argument("--keep", action="store_true", help="keep the tables (printed)")
    ap.add_argument("--gaps", action="store_true", help="print every commit gap of each run (pipeline mode)")
    args = ap.parse_args(argv)
    if args.quick:
        args.records, args.commits, args.batch = 100_000, 10, 5_000
        args.pipeline_records, args.pipeline_batches = 10_000, 4
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    if args.rounds < 1:
        ap.error(f"--rounds: {args.rounds}: at least 1")
    if args.beside != "indexer" and args.mode != "pipeline":
        ap.error(f"--beside {args.beside}: only in --mode pipeline")
    if not 0 < args.burn_share <= 1:
        ap.error(f"--burn-share: {args.burn_share}: a share of one CPU in (0, 1]")
    if not args.burn_seconds > 0:
        ap.error(f"--burn-seconds: {args.burn_seconds}: must be positive")
    try:
        args.shares = ([None] if args.indexer_max_cpu is None
                       else [float(x) for x in str(args.indexer_max_cpu).split(",")])
    except ValueError:
        ap.error(f"--indexer-max-cpu: {args.indexer_max_cpu!r}: shares of one CPU in (0, 1], comma-separated")
    if any(x is not None and not 0 < x <= 1 for x in args.shares):
        ap.error(f"--indexer-max-cpu: {args.indexer_max_cpu!r}: every share in (0, 1]")
    if len(args.shares) > 1 and (args.mode != "pipeline" or args.beside != "indexer"):
        ap.error("--indexer-max-cpu: several shares (a sweep) only in --mode pipeline beside the indexer")
    if args.indexer_after < 0:
        ap.error(f"--indexer-after: {args.indexer_after}: not negative")
    if args.mode == "commit":
        if args.repeat < 1 or args.buckets < 1:
            ap.error(f"--repeat {args.repeat} / --buckets {args.buckets}: at least 1")
        tmp = Path(tempfile.mkdtemp(prefix="bench-indexing-commit-"))
        try:
            print(f"bench_indexing --mode commit: {args.records:,}-record table, seed {args.seed}; load average "
                  f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
            commit_costs(tmp, args)
            print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            return 0
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    from lakeio.audit import audit_table

    print(f"bench_indexing: mode {args.mode}, seed {args.seed} (replay: --seed {args.seed}); beside the pipeline: "
          f"{_beside_label(args)}, priority "
          f"{args.indexer_priority}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-indexing-"))
    try:
        clock = Clock()
        src = tmp / "src"
        built = build_table(src, args.records, 100_000, clock)
        print(f"table: {args.records:,} records in {built:.1f} s ({src})", flush=True)
        ok = True
        if args.mode == "pipeline":
            from pipeline.spark import get_spark

            spark = get_spark()
            warm_up(tmp, src, args, spark)
            rows = []
            for k, share in enumerate(args.shares):
                if len(args.shares) > 1:
                    print(f"-- the indexer paced to {'its default' if share is None else share} "
                          f"({k + 1} of {len(args.shares)})", flush=True)
                rounds = pipeline_rounds(tmp, src, args, spark, share, tag=f"-{k}")
                got = report_rounds(rounds, args)
                if got is None:
                    return 1
                b = rounds[-1][2]
                if args.beside == "indexer":
                    got["share"] = json.loads(rounds[-1][1]["out"]).get("max_cpu", share)
                    t0 = time.perf_counter()
                    res = audit_table(str(b))
                    holds = next(v for v in res.verdicts if v.invariant == "MDT.record-index").holds and res.exit_code == 0
                    ok = ok and holds
                    print(f"audit of the (last) indexed table: {'holds' if holds else 'VIOLATED'} "
                          f"({time.perf_counter() - t0:.1f} s)", flush=True)
                else:
                    got["share"] = 0.0 if args.beside == "nothing" else args.burn_share
                rows.append(got)
                if k < len(args.shares) - 1:
                    shutil.rmtree(b, ignore_errors=True)
            ratio = rows[0]["ratio"]
            if len(rows) > 1:
                print("sweep: share of a CPU -> throughput beside / alone (the target's measure), part of the "
                      "indexer's windows measured, build s, catch-up s")
                for r in rows:
                    print(f"  {r['share']:g}: {r['ratio']:.1%}, {r['covered']:.0%}, {r['build_s']:.1f}, "
                          f"{r['catchup_s']:.1f}")
                print(f"the target is judged on the first share listed ({rows[0]['share']:g})")
            if args.plot:
                print(f"plot: {plot_sweep(rows, args.plot, f'indexing {args.records:,} records beside the pipeline ({args.pipeline_records:,} records in {args.pipeline_batches} batches, {args.rounds} rounds a share)')}")
        else:
            a, b = tmp / "alone", tmp / "beside"
            shutil.copytree(src, a)
            shutil.copytree(src, b)
            wclock = Clock()
            wclock.ms = clock.ms + 1000
            alone = run_writer(a, wclock, existing=args.records, batch=args.batch, commits=args.commits,
                               seed=args.seed)
            rps_alone = len(alone) * args.batch / sum(e - s for s, e, _ in alone)
            wclock2 = Clock()
            wclock2.ms = clock.ms + 1000
            proc = _indexer(b, args.indexer_priority, args.shares[0])
            beside = run_writer(b, wclock2, existing=args.records, batch=args.batch, commits=args.commits,
                                seed=args.seed, while_alive=lambda: proc.poll() is None)
            out, err = proc.communicate()
            during = [(s, e) for s, e, alive in beside if alive]
            if not during:
                print("the indexer finished before the writer's first commit: no overlap measured")
                return 1
            if proc.returncode != 0:
                print(f"indexer failed (exit {proc.returncode}): {err.strip()}")
                return 1
            rps_beside = len(during) * args.batch / sum(e - s for s, e in during)
            ratio = rps_beside / rps_alone
            print(f"writer ({args.batch:,}-record commits; {len(during)} while the indexer ran): alone "
                  f"{rps_alone:,.0f} records/s, beside the indexer {rps_beside:,.0f} records/s ({ratio:.1%})")
            print(_indexer_line(out))
            t0 = time.perf_counter()
            res = audit_table(str(b))
            ok = next(v for v in res.verdicts if v.invariant == "MDT.record-index").holds and res.exit_code == 0
            print(f"audit of the indexed table: {'holds' if ok else 'VIOLATED'} ({time.perf_counter() - t0:.1f} s)")
        target = ratio >= 0.90
        print(f"target throughput >= 90 % beside {_who(args)}: {'met' if target else 'NOT met'}")
        if args.keep:
            print(f"tables kept in {tmp}")
        print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0 if target and ok else 1
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
