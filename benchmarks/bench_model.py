"""Model benchmark: parse, rebuild and slice a large synthetic table in memory.

Run: ``python benchmarks/bench_model.py [--small|--quick] [--seed N]``.

The table (table version 8, MOR) is synthetic and lives only in memory:

* 100,000 instants: one bulk-insert ``commit`` that writes a base file in every file group, then
  deltacommits and, every 10th instant, a compaction. Requested and completion times come from
  ``model.truetime`` (``SkewAdjustingTimeGenerator`` with the in-process config, 1 ms wait) with
  completions lagging 0-3 requests behind, so deltacommits complete after later compactions were
  requested (the case where the two slicing rules differ). The last instants stay pending
  (4 inflight deltacommits, and the last 4 compactions with their plans).
* 1,000,000 data files over 20,000 file groups in 20 partitions: 20,000 bulk-insert base files,
  10 log files per deltacommit and 8 base files per compaction. Every timeline and data file name is
  produced by the codec (``model.filenames``: ``timeline_file_name``, ``BaseFile.name``, ``LogFile.name``).

Phases, each timed (wall and CPU) with the peak RSS of the process after it:

1. ``generate``: TrueTime times and every name (set-up; not part of the target);
2. ``parse``: every data-file name (``parse_data_files``);
3. ``rebuild``: parse every timeline name and rebuild the model timeline (``timeline_from_files``);
4. ``slice completion-time``: ``FileSystemView`` with the tv8 rule + ``latest_file_slices()``;
5. ``slice instant-time``: the same files with the tv6 rule (a cost figure: tv8 log names carry the
   writer's instant, so under the tv6 rule every log starts its own slice).

Phases 2-5 run the implementations the product reads tables with: ``lakeio.ondisk.fastcodec``
(``parse_data_files``, ``timeline_from_files``) and ``lakeio.ondisk.fastslicing.FileSystemView``,
the fast equals of the model's spec (``model.filenames``, ``model.slicing``; ``tests/test_fastpaths.py``
keeps them equal). ``--spec`` runs the model's spec functions instead (a cost figure, no target).

Targets: phases 2-5 *together* take < 10 s, and the process's peak RSS stays < 2 GiB. The time
target is judged on CPU time (the one-core figure: the machine is shared, so wall time mostly
measures the other jobs); wall time is printed too, with the verdict each phase would get alone.
``--small`` (alias ``--quick``, as ``benchmarks/run.py`` passes): 10,000 instants and 100,000 files,
same targets. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import random
import resource
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lakeio.ondisk import fastcodec, fastslicing  # noqa: E402
from model import filenames as spec_codec  # noqa: E402
from model import slicing as spec_slicing  # noqa: E402
from model.filenames import LAYOUT_2, BaseFile, LogFile, timeline_file_name  # noqa: E402
from model.instant import Action, State  # noqa: E402
from model.slicing import COMPLETION_TIME, INSTANT_TIME  # noqa: E402
from model.truetime import SkewAdjustingTimeGenerator, TimeGeneratorConfig  # noqa: E402

TARGET_SECONDS = 10.0
TARGET_BYTES = 2 * 1024**3
FULL = dict(instants=100_000, groups=20_000, partitions=20, logs_per_delta=10, bases_per_compaction=8)
SMALL = dict(instants=10_000, groups=2_000, partitions=20, logs_per_delta=10, bases_per_compaction=8)
COMPACTION_EVERY = 10
PENDING_TAIL = 4  # the last instants that never complete


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def current_rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except OSError:
        return peak_rss_bytes()


def synthesize(instants: int, groups: int, partitions: int, logs_per_delta: int, bases_per_compaction: int,
               seed: int) -> dict:
    """The synthetic table as names: timeline file names and (data file name, partition) pairs."""
    rng = random.Random(seed)
    gen = SkewAdjustingTimeGenerator(TimeGeneratorConfig.in_process())
    parts = [f"region={p:02d}" for p in range(partitions)]
    gids = [(parts[g % partitions], f"{uuid.UUID(int=rng.getrandbits(128))}-0") for g in range(groups)]
    token = "0-1-2"
    now = 0
    inflight: list[tuple[int, int]] = []  # heap of (complete after request #, instant index)
    reqs: list[tuple[str, Action]] = []
    completion: dict[int, str] = {}
    data: list[tuple[str, str]] = []
    pending_compactions: dict[tuple[str, str], str] = {}

    def complete(idx: int) -> None:
        nonlocal now
        rec = gen.consume_time("writer", now)[0]
        now = rec.released_at
        completion[idx] = rec.time

    cursor = 0
    for i in range(instants):
        rec = gen.generate("writer", now)
        now = rec.released_at
        t = rec.time
        if i == 0:
            action = Action.COMMIT
            data.extend((BaseFile(fid, token, t, "parquet", p).name, p) for p, fid in gids)
        elif i % COMPACTION_EVERY == 0:
            action = Action.COMPACTION
            plan = [gids[(cursor + k) % groups] for k in range(bases_per_compaction)]
            cursor = (cursor + bases_per_compaction) % groups
            data.extend((BaseFile(fid, token, t, "parquet", p).name, p) for p, fid in plan)
            if i >= instants - PENDING_TAIL * COMPACTION_EVERY:
                pending_compactions.update({g: t for g in plan})
        else:
            action = Action.DELTACOMMIT
            for g in rng.sample(range(groups), logs_per_delta):
                p, fid = gids[g]
                data.append((LogFile(fid, t, 1, token, False, p).name, p))
        reqs.append((t, action))
        if i < instants - PENDING_TAIL and not (action is Action.COMPACTION and i >= instants - PENDING_TAIL
                                                * COMPACTION_EVERY):
            heapq.heappush(inflight, (i + rng.randint(0, 3), i))
        while inflight and inflight[0][0] <= i:
            complete(heapq.heappop(inflight)[1])
    while inflight:  # everything scheduled completes; the pending tail stays pending
        complete(heapq.heappop(inflight)[1])
    # Drop compaction-plan entries whose compaction did complete (only the last pending one remains).
    done = {reqs[i][0] for i in completion}
    pending_compactions = {g: t for g, t in pending_compactions.items() if t not in done}
    timeline: list[str] = []
    for i, (t, action) in enumerate(reqs):
        timeline.append(timeline_file_name(t, action, State.REQUESTED, None, LAYOUT_2))
        timeline.append(timeline_file_name(t, action, State.INFLIGHT, None, LAYOUT_2))
        if i in completion:
            timeline.append(timeline_file_name(t, action, State.COMPLETED, completion[i], LAYOUT_2))
    rng.shuffle(timeline)  # a listing has no order
    return dict(timeline=timeline, data=data, pending_compactions=pending_compactions,
                completed=len(completion), times=len(gen.history))


class Phases:
    def __init__(self):
        self.rows: list[tuple[str, float, float, int, int]] = []

    def run(self, name: str, fn):
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        self.rows.append((name, wall, cpu, peak_rss_bytes(), current_rss_bytes()))
        print(f"  {name:24s} {wall:7.2f} s wall {cpu:7.2f} s CPU   peak RSS {peak_rss_bytes() / 2**20:8.0f} MiB"
              f"   RSS now {current_rss_bytes() / 2**20:8.0f} MiB", flush=True)
        return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", "--quick", action="store_true", help="10,000 instants and 100,000 files")
    ap.add_argument("--seed", type=int, default=20250101)
    ap.add_argument("--spec", action="store_true",
                    help="run the model's spec parser and slicer (model.filenames, model.slicing), not the fast ones")
    args = ap.parse_args(argv)
    codec, slicing = (spec_codec, spec_slicing) if args.spec else (fastcodec, fastslicing)
    parse_data_files, timeline_from_files = codec.parse_data_files, codec.timeline_from_files
    FileSystemView = slicing.FileSystemView  # noqa: N806
    size = SMALL if args.small else FULL
    print(f"bench_model: {size['instants']:,} instants, {size['groups']:,} file groups in {size['partitions']} "
          f"partitions, seed {args.seed} (replay: --seed {args.seed}{' --small' if args.small else ''}"
          f"{' --spec' if args.spec else ''}); parser and slicer: {codec.__name__}, {slicing.__name__}")
    ph = Phases()
    table = ph.run("generate (set-up)", lambda: synthesize(seed=args.seed, **size))
    names, data = table["timeline"], table["data"]
    print(f"  -> {len(names):,} timeline files, {len(data):,} data files, {table['times']:,} TrueTime times, "
          f"{table['completed']:,} completed instants, {len(table['pending_compactions'])} groups in a pending plan")

    bases, logs = ph.run("parse data files", lambda: parse_data_files(data))
    assert len(bases) + len(logs) == len(data)
    tl = ph.run("parse + rebuild timeline", lambda: timeline_from_files(names, 8))
    assert len(tl) == size["instants"], (len(tl), size["instants"])

    def slice_with(rule):
        def go():
            view = FileSystemView(tl, bases, logs, rule=rule, pending_compactions=table["pending_compactions"])
            latest = view.latest_file_slices()
            return sum(len(g.slices) for g in view.file_groups()), len(latest)
        return go

    n_ct, latest_ct = ph.run("slice completion-time", slice_with(COMPLETION_TIME))
    n_it, latest_it = ph.run("slice instant-time", slice_with(INSTANT_TIME))
    print(f"  -> completion-time rule: {n_ct:,} slices, {latest_ct:,} latest; "
          f"instant-time rule: {n_it:,} slices, {latest_it:,} latest")

    measured = [r for r in ph.rows if not r[0].startswith("generate")]
    total_wall = sum(r[1] for r in measured)
    total_cpu = sum(r[2] for r in measured)
    peak = max(r[3] for r in ph.rows)
    for name, wall, cpu, _, _ in measured:
        print(f"  {name:24s} alone < {TARGET_SECONDS:.0f} s: CPU {'yes' if cpu < TARGET_SECONDS else 'NO'}, "
              f"wall {'yes' if wall < TARGET_SECONDS else 'NO'}")
    ok_time, ok_mem = total_cpu < TARGET_SECONDS, peak < TARGET_BYTES
    print(f"parse + rebuild + slice (both rules): {total_cpu:.2f} s CPU ({total_wall:.2f} s wall) -- target "
          f"< {TARGET_SECONDS:.0f} s (CPU): {'MET' if ok_time else 'MISSED'}"
          f"{'' if total_wall < TARGET_SECONDS else '; wall time over the target'}")
    print(f"peak RSS {peak / 2**20:.0f} MiB -- target < {TARGET_BYTES / 2**30:.0f} GiB: {'MET' if ok_mem else 'MISSED'}")
    return 0 if ok_time and ok_mem else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
