"""``hoodie-lab diff RUN_DIR``: the real table of a pipeline run against the reference model's prediction.

The run's trace (its inputs as ``ingest`` events, checkpoints, acks and crashes, in order) is replayed through a
fresh :class:`engine.System` (:meth:`model.trace.Trace.replay` with :data:`engine.machine.ENGINE`, via
:func:`pipeline.coordinator.replay_system`) with the run's recorded instant times. The model's prediction is then
compared with what is on disk, read independently of the pipeline:

* **instants** -- the data instants of the model's timeline against the table's timeline (read by
  :mod:`lakeio.ondisk.reader`): requested time, action, state, completion time, order, and the
  checkpoint key (model: the key each commit came from; disk: ``flink_checkpoint_id`` in commit metadata);
  the instants the model rolled back against the targets of the table's completed rollback instants;
* **committed files** -- the data files the committed instants wrote (the write metadata the pipeline
  persisted for exactly the instants the model committed) against the files the table's commit metadata
  lists, and data files on disk that no completed or pending instant accounts for;
* **table contents** -- the rows the model predicts (the input records at the committed source offsets,
  upserted by key with the greatest ordering value) against the rows hudi-rs reads, and, for copy-on-write,
  against Spark reading the latest base parquet files (the file slices hudi-rs lists) when a SparkSession is
  given;
* **exactly once** -- for a finished run, every well-formed input record committed exactly once (model), and
  the quarantine holding exactly the malformed input lines;
* **the run reached its end** -- a run whose last driver did not finish (a batch failed and never committed,
  the query ended early, or the driver was killed and not resumed) is a difference, with one line saying
  which batch stalled and why (:func:`run_unfinished`).

Exit status of the command: 0 no difference, 1 differences (each printed), 2 a bad run dir.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from lakeio.errors import UserError
from lakeio.ondisk.history import include_history
from model.instant import to_millis
from pipeline import source as src
from pipeline.coordinator import CHECKPOINT_KEY, replay_system
from pipeline.run_dir import RunDir, stall_message, uncommitted_batches

DATA_COLUMNS = ("key", "ts", "partition", "payload")


@dataclass
class DiffReport:
    run_dir: Path
    differences: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences

    def add(self, what: str, model, disk) -> None:
        self.differences.append(f"{what}\n    model: {model}\n    table: {disk}")

    def render(self) -> str:
        head = f"diff {self.run_dir}: " + ("no differences" if self.ok else f"{len(self.differences)} difference(s)")
        lines = [head] + [f"  checked {c}" for c in self.checked]
        lines += [f"  - {d}" for d in self.differences]
        return "\n".join(lines)


def open_run_dir(root: Path) -> tuple[RunDir, dict]:
    from pipeline.job import open_run

    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{root}: not a directory")
    rd, cfg = open_run(root.resolve())  # hudi-rs takes absolute table paths only ("relative URL without a base")
    for need in (rd.trace, rd.input):
        if not need.exists():
            raise UserError(f"{root}: not a complete pipeline run dir ({need.name} missing)")
    if not (rd.table / ".hoodie").is_dir():
        raise UserError(f"{rd.table}: no Hudi table (the run wrote nothing?)")
    return rd, cfg


def diff_run(root: Path, spark=None) -> DiffReport:
    rd, cfg = open_run_dir(root)
    from lakeio.ondisk.reader import read_table

    try:
        system, events, _times = replay_system(rd)
    except UserError:
        raise
    except Exception as exc:  # the trace does not replay: a finding about the run, not bad input
        report = DiffReport(rd.root)
        report.differences.append(f"the trace does not replay through the model: {exc}")
        return report
    table = include_history(read_table(rd.table))  # archived instants compared as if never archived
    report = DiffReport(rd.root)
    spec = src.input_spec(cfg)
    columns = DATA_COLUMNS if spec is None else spec.columns
    inputs = src.read_inputs(rd.input, spec)
    units = task_units(inputs, system.config.parallelism, cfg.get("buckets", 1), cfg)
    _instants(report, system, table)
    _files(report, system, table, rd)
    predicted = _predicted_rows(system, units)
    _rows_hudi_rs(report, predicted, rd.table, columns)
    if spark is not None and table.table_type == "COPY_ON_WRITE":
        _rows_spark(report, predicted, rd.table, spark, columns)
    unfinished = run_unfinished(rd)
    if unfinished is None:
        _exactly_once(report, system, units)
        _quarantine(report, rd, inputs)
    _model_invariants(report, system)
    if unfinished is not None:  # first: the reason the rest may differ
        report.differences.insert(0, unfinished)
    return report


def run_unfinished(rd: RunDir) -> str | None:
    """None when the run reached the end of its input (its last driver logged ``finished`` and Spark committed
    every input file's batch), else one line saying why not: a stalled run (a batch failed and never
    committed, or the query ended early) or a driver that was killed or interrupted. Either is a failure of
    the run, never a clean diff."""
    events = rd.read_events()
    missing = uncommitted_batches(rd)
    if events and events[-1]["kind"] == "finished" and not missing:
        return None
    starts = [i for i, e in enumerate(events) if e["kind"] == "start"]
    since = events[starts[-1]:] if starts else events
    stalled = [e for e in since if e["kind"] == "stalled"]
    if stalled:
        return stall_message(rd, f"the run stalled ({stalled[-1]['reason']})")
    n = len(missing)
    return (f"{rd.root}: the run did not reach the end of its input: {n} batch(es) not committed by Spark "
            f"{missing[:5]}{' ...' if n > 5 else ''}; its last driver was killed or interrupted "
            f"(`hoodie-lab pipeline resume {rd.root}` finishes it)" if missing else
            f"{rd.root}: the run did not reach its end: its last driver did not log `finished` "
            f"(`hoodie-lab pipeline resume {rd.root}` finishes it)")


# ------------------------------------------------------------------------------------------------ instants
def _instants(report: DiffReport, system, table, only: set | None = None) -> None:
    """``only`` (several writers on one table, :func:`diff_runs`): compare just these instants of the disk."""
    action = system.table.action
    mine = (lambda t: True) if only is None else (lambda t: t in only)
    keys = {}
    for t, key, _how in system.table.commit_log:
        keys[t] = key
    model = [(i.requested_time, i.shown_action.value, i.state.label, i.completion_time, keys.get(i.requested_time))
             for i in system.table.timeline.instants() if i.action is action]
    disk = []
    for i in table.timeline.instants():
        if i.action is not action or not mine(i.requested_time):
            continue
        key = None
        md = table.commit_metadata.get(i.requested_time) if i.is_completed else None
        if md:
            raw = (md.get("extraMetadata") or {}).get(CHECKPOINT_KEY)
            key = int(raw) if raw is not None else None
        disk.append((i.requested_time, i.shown_action.value, i.state.label, i.completion_time, key))
    model.sort()
    disk.sort()
    if table.version == 6:
        # Layout 1 keeps no completion time in the name: it is the completed file's modification time
        # (millisecond precision through a float), so it is compared within 1 ms and then left out.
        dm = {x[0]: x[3] for x in disk}
        for x in model:
            if x[3] and dm.get(x[0]) and abs(to_millis(x[3]) - to_millis(dm[x[0]])) > 1:
                report.add(f"completion time of {x[0]} (file modification time, tv6)", x[3], dm[x[0]])
        model = [x[:3] + (None,) + x[4:] for x in model]
        disk = [x[:3] + (None,) + x[4:] for x in disk]
    report.checked.append(f"{len(model)} data instant(s): action, state, completion time, order, checkpoint key")
    if model != disk:
        m, d = set(model), set(disk)
        for x in sorted(m - d):
            report.add(f"instant {x[0]}", _fmt_instant(x), _fmt_instant(_find(disk, x[0])))
        for x in sorted(d - m):
            if _find(model, x[0]) is None:
                report.add(f"instant {x[0]}", "absent", _fmt_instant(x))
    # completion order = commit order of the model
    order_m = [t for t, _k, _h in system.table.commit_log]
    order_d = [i.requested_time for i in sorted(table.timeline.completed((action,)),
                                                key=lambda i: (i.completion_time, i.requested_time))
               if mine(i.requested_time)]
    if order_m != order_d:
        report.add("commit order (by completion time)", order_m, order_d)
    # rollbacks
    rolled = set(system.table.rollbacks)
    disk_rolled = set()
    for name, content in table.timeline_content.items():
        if ".rollback" in name and content and not name.endswith((".requested", ".inflight")):
            for t in content.get("commitsRollback") or []:
                if mine(t):
                    disk_rolled.add(t)
    report.checked.append(f"{len(rolled)} rollback(s) of failed instants")
    if rolled != disk_rolled:
        report.add("rolled-back instants", sorted(rolled), sorted(disk_rolled))


def _find(rows, t):
    return next((x for x in rows if x[0] == t), None)


def _fmt_instant(x) -> str:
    if x is None:
        return "absent"
    t, a, st, c, k = x
    return f"{t}{'->' + c if c else ''}.{a}[{st}] key {k}"


# --------------------------------------------------------------------------------------------------- files
def _files(report: DiffReport, system, table, rd: RunDir, others: frozenset = frozenset()) -> None:
    """``others``: instants of other writers and table services on the same table (:func:`diff_runs`): their
    files are theirs, not orphans of this run."""
    import json

    action = system.table.action
    committed = [i.requested_time for i in system.table.timeline.completed((action,))]
    pending = [i.requested_time for i in system.table.timeline.pending((action,))]
    expected: set[str] = set()
    for t in committed:
        p = rd.writemeta / f"{t}.json"
        if not p.exists():
            report.add(f"write metadata of committed instant {t}", "persisted", "missing in the run dir")
            continue
        wm = json.loads(p.read_text())
        for s in (wm.get("result") or {}).get("write_stats", []):
            expected.add(s["path"])
    listed: set[str] = set()
    for t in committed:
        md = table.commit_metadata.get(t) or {}
        for stats in (md.get("partitionToWriteStats") or {}).values():
            for s in stats:
                listed.add(s["path"])
    report.checked.append(f"{len(expected)} committed data file(s) in commit metadata")
    if expected != listed:
        report.add("files of committed instants", f"{len(expected)} files, not in table: "
                   f"{sorted(expected - listed)[:5]}", f"{len(listed)} files, not predicted: {sorted(listed - expected)[:5]}")
    on_disk = {(f"{b.partition}/{b.name}" if b.partition else b.name): b.instant_time for b in table.base_files}
    on_disk.update({(f"{lg.partition}/{lg.name}" if lg.partition else lg.name): lg.instant_time
                    for lg in table.log_files})
    missing = sorted(p for p in expected if p not in on_disk)
    if missing:
        report.add("committed data files present on storage", "all", f"missing {missing[:5]}")
    alive = set(committed) | set(pending) | set(others)
    orphans = sorted(p for p, t in on_disk.items() if t not in alive and p not in expected)
    if orphans:
        report.add("data files of no committed or pending instant (not rolled back)", "none", orphans[:5])
    # a committed instant's files on storage are exactly those its commit names: a failed, retried or duplicate
    # attempt's files were reconciled away (markers) before the commit
    named = {(f"{b.partition}/{b.name}" if b.partition else b.name): b.instant_time for b in table.base_files}
    if table.version != 6:  # a tv6 log is named with its slice's base instant, not the instant that wrote it
        named.update({(f"{lg.partition}/{lg.name}" if lg.partition else lg.name): lg.instant_time
                      for lg in table.log_files})
    done = set(committed)
    extra = sorted(p for p, t in named.items() if t in done and p not in listed)
    report.checked.append("no data file of a failed or duplicate task attempt of a committed instant")
    if extra:
        report.add("data files of committed instants not in their commit (failed or duplicate attempts)",
                   "none", f"{len(extra)}: {extra[:5]}")


# ------------------------------------------------------------------------------------ several writers, one table
def diff_runs(roots: list[Path], spark=None) -> DiffReport:
    """Several runs that wrote one table (multi-writer, :mod:`pipeline.multiwriter`) against their models: per
    run its own instants (action, state, completion time, order, checkpoint key, rollbacks), its committed
    files, exactly once and the quarantine, the model's invariants; once for the table: the rows hudi-rs reads
    against the merge by ordering value of every run's predicted rows (each run's committed units), and no data
    file of an instant no run and no table service (a completed or pending compaction) accounts for."""
    from lakeio.ondisk.reader import read_table

    opened = [open_run_dir(Path(r)) for r in roots]
    tables = {str(rd.table.resolve()) for rd, _ in opened}
    if len(tables) != 1:
        raise UserError(f"diff: the run dirs wrote {len(tables)} different tables; several run dirs must share "
                        f"one --table")
    report = DiffReport(Path(roots[0]))
    table = include_history(read_table(opened[0][0].table))
    systems = []
    for rd, cfg in opened:
        try:
            system, _events, _times = replay_system(rd)
        except UserError:
            raise
        except Exception as exc:
            report.differences.append(f"{rd.root}: the trace does not replay through the model: {exc}")
            return report
        systems.append((rd, cfg, system))
    owned = {rd.root: {e["instant"] for e in rd.read_events() if e["kind"] == "started"} for rd, _ in opened}
    every = {i.requested_time for i in table.timeline.instants()}
    predicted: dict[str, tuple] = {}
    for rd, cfg, system in systems:
        sub = DiffReport(rd.root)
        inputs = src.read_inputs(rd.input)
        units = task_units(inputs, system.config.parallelism, cfg.get("buckets", 1), cfg)
        _instants(sub, system, table, only=owned[rd.root])
        _files(sub, system, table, rd, others=frozenset(every - owned[rd.root]))
        unfinished = run_unfinished(rd)
        if unfinished is None:
            _exactly_once(sub, system, units)
            _quarantine(sub, rd, inputs)
        else:
            sub.differences.insert(0, unfinished)
        _model_invariants(sub, system)
        report.checked.extend(f"{rd.root.name}: {c}" for c in sub.checked)
        report.differences.extend(f"{rd.root.name}: {d}" for d in sub.differences)
        for k, row in _predicted_rows(system, units).items():  # the greatest ordering value over every writer
            if k not in predicted or row[1] > predicted[k][1]:
                predicted[k] = row
    _rows_hudi_rs(report, predicted, opened[0][0].table)
    return report


# ---------------------------------------------------------------------------------------------------- rows
def task_units(inputs, parallelism: int, buckets: int, cfg: dict) -> dict[tuple[int, int], list]:
    """(task, batch) -> the input records of batch ``batch`` the writer tasks route to ``task`` (bucket index:
    :func:`lakeio.hudiformat.bucket.bucket_id` of the record key's string, then ``task_of``), in input order:
    what one model record of task ``task`` at offset ``batch`` stands for
    (:func:`pipeline.coordinator.protocol_config`). The same routing the run used: the model and the diff use
    the run's number of tasks and buckets. (``cfg``: the run config; the records carry their key as ``.key``,
    generated or the user's ``--record-key``.)"""
    from lakeio.hudiformat import bucket as bk

    units: dict[tuple[int, int], list] = {(t, b): [] for b in range(len(inputs)) for t in range(parallelism)}
    for b, lines in enumerate(inputs):
        for r, _ in lines:
            if r is not None:
                units[(bk.task_of(bk.bucket_id(str(r.key), buckets), parallelism), b)].append(r)
    return units


def _predicted_rows(system, units: dict) -> dict[tuple, tuple]:
    """(partition, key) -> the record's values: committed (task, offset) units mapped to their input records,
    upserted in (batch, task, input) order with event-time ordering (a record replaces the stored one when its
    ordering value is >= the stored one's: a tie goes to the later batch); a delete record (user data,
    ``--delete-field`` true) removes the stored one under the same rule and is not stored itself. A record is
    identified within its partition (the writer's non-global index)."""
    out: dict[tuple, tuple] = {}
    order: dict[tuple, object] = {}
    for (task, offset), _n in sorted(system.committed_offsets().items(), key=lambda kv: (kv[0][1], kv[0][0])):
        for r in units.get((task, offset), ()):
            ident = (r.partition, r.key)
            cur = order.get(ident)
            if cur is not None and r.ordering < cur:
                continue
            if r.deleted:
                out.pop(ident, None)
                order.pop(ident, None)
            else:
                out[ident] = r.values
                order[ident] = r.ordering
    return out


def _rows_from_batches(batches, columns=DATA_COLUMNS) -> list[tuple]:
    rows = []
    for b in batches:
        cols = [b.column(c).to_pylist() for c in columns]
        rows.extend(zip(*cols))
    return rows


def _compare_rows(report: DiffReport, reader: str, predicted: dict[str, tuple], rows: list[tuple]) -> None:
    got = Counter(rows)
    want = Counter(predicted.values())
    report.checked.append(f"{len(want)} row(s) read through {reader}")
    if got != want:
        extra = sorted((got - want).elements(), key=repr)
        lost = sorted((want - got).elements(), key=repr)
        dup = sorted((k for k, n in Counter(r[0] for r in rows).items() if n > 1), key=repr) if len(predicted) == len(
            {r[0] for r in predicted.values()}) else []  # keys unique across partitions: a repeat is a duplicate
        report.add(f"table contents read through {reader}",
                   f"{len(want)} rows; not read: {lost[:3]}{' ...' if len(lost) > 3 else ''}",
                   f"{len(rows)} rows; not predicted: {extra[:3]}{' ...' if len(extra) > 3 else ''}"
                   + (f"; duplicate keys {dup[:5]}" if dup else ""))


def _rows_hudi_rs(report: DiffReport, predicted: dict, table_path: Path, columns=DATA_COLUMNS) -> None:
    from hudi import HudiTable

    try:
        batches = HudiTable(str(table_path)).read()
    except BaseException as exc:  # hudi-rs panics are BaseException
        report.differences.append(f"hudi-rs cannot read the table: {type(exc).__name__}: {exc}")
        return
    _compare_rows(report, "hudi-rs", predicted, _rows_from_batches(batches, columns))


def latest_base_files(table_path: Path) -> list[str]:
    """Absolute paths of the latest base files, as hudi-rs slices the table."""
    from hudi import HudiTable

    slices = HudiTable(str(table_path)).get_file_slices()
    return [str(Path(table_path) / s.base_file_relative_path()) for s in slices if s.base_file_name]


def _rows_spark(report: DiffReport, predicted: dict, table_path: Path, spark, columns=DATA_COLUMNS) -> None:
    try:
        paths = latest_base_files(table_path)
    except BaseException as exc:  # hudi-rs refuses the table (reported by _rows_hudi_rs too); panics are BaseException
        report.differences.append(f"hudi-rs cannot list the latest base files for Spark: {type(exc).__name__}: {exc}")
        return
    if not paths:
        _compare_rows(report, "Spark (latest base parquet files)", predicted, [])
        return
    df = spark.read.parquet(*paths).select(*columns)
    _compare_rows(report, "Spark (latest base parquet files)", predicted,
                  [tuple(r) for r in df.collect()])


# ------------------------------------------------------------------------------------------- exactly once
def _exactly_once(report: DiffReport, system, units: dict) -> None:
    """Every (task, batch) unit -- so every input record -- committed exactly once."""
    got = system.committed_offsets()
    dup = sorted(u for u, n in got.items() if n > 1)
    lost = sorted(u for u in units if u not in got)
    n = sum(len(v) for v in units.values())
    report.checked.append(f"{n} input record(s) committed exactly once (finished run; "
                          f"{system.config.parallelism} writer task(s))")
    if dup or lost:
        report.add("every input record committed exactly once", "each once",
                   f"lost (task, batch) {lost[:10]} ({sum(len(units[u]) for u in lost)} records), "
                   f"duplicated {dup[:10]}")


def _quarantine(report: DiffReport, rd: RunDir, inputs) -> None:
    from pipeline.job import read_quarantine

    want = sum(1 for lines in inputs for r, _ in lines if r is None)
    q = read_quarantine(rd)
    report.checked.append(f"{want} malformed record(s) quarantined with a reason")
    if q.num_rows != want or q.column("reason").null_count:
        report.add("quarantined records", want, q.num_rows)


def _model_invariants(report: DiffReport, system) -> None:
    try:
        from engine.invariants import check_step
    except ImportError:
        return
    bad = [v for v in check_step(system) if not v.holds]
    report.checked.append("the model's protocol invariants on the replayed run")
    for v in bad:
        report.differences.append(f"model invariant on the replayed run: {v}")
