"""``hoodie-lab audit``: read a table, show what the model sees, check every invariant that applies.

:func:`audit_table` returns an :class:`AuditResult` (table facts, the timeline, the latest file
slices -- or as of a time -- under a slicing rule, and the verdicts of
:func:`model.invariants.timeline.table_verdicts`); :func:`render` prints it with rich and
:func:`to_json` makes one JSON document of it. The audit never writes to the table.
"""

from __future__ import annotations

import time
from struct import error as struct_error
from dataclasses import dataclass, field
from typing import Any

from lakeio.errors import UserError
from lakeio.ondisk import metadata as md
from lakeio.ondisk import read_table
from lakeio.ondisk.reader import Table, check_readable
from model import filenames as fn
from model.instant import TIME_LEN, Action, normalize_time, time_problem, to_millis
from model.invariants import Verdict, violations
from model.invariants.timeline import table_verdicts

RULES = ("instant-time", "completion-time")


@dataclass
class AuditResult:
    table: Table
    rule: str
    as_of: str | None
    slices: list
    verdicts: list[Verdict]
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    #: the table's history (:class:`HistoryAudit`), None when it has none on disk
    history: Any = None

    @property
    def ok(self) -> bool:
        return not violations(self.verdicts)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1


def check_as_of(value: str | None) -> str | None:
    """``--as-of``: a 14- or 17-digit instant time, normalised to 17 digits."""
    if value is None:
        return None
    if value.isdigit() and len(value) > TIME_LEN:
        # Hudi cuts longer times to 17 digits when parsing; an argument that long is a mistake
        raise UserError(f"--as-of: instant time {value!r} has {len(value)} digits; expected 14 or 17")
    try:
        t = normalize_time(value)
    except ValueError as exc:
        raise UserError(f"--as-of: {exc}") from None
    problem = time_problem(t)
    if problem is not None:
        raise UserError(f"--as-of: instant time {value!r} {problem}")
    return t


def audit_table(path, *, as_of: str | None = None, rule: str | None = None) -> AuditResult:
    """Audit the table at ``path`` (raises :class:`UserError` on bad input)."""
    if rule is not None and rule not in RULES:
        raise UserError(f"--rule: {rule!r} is not one of {', '.join(RULES)}")
    as_of = check_as_of(as_of)
    t0 = time.perf_counter()
    table = read_table(path)
    rule = rule or table.default_rule
    history = audit_history(table, as_of)
    view = history_view(table, rule, history) if history is not None and history.times is not None \
        else table.view(rule)
    # as of T: the slices a time-travel read at T plans (tech spec "Reader Expectations": base =
    # greatest requested <= T; tv8 logs completed <= T), not getLatestFileSlicesBeforeOrOn, which
    # still lists logs of later deltacommits
    slices = view.as_of_read(as_of, mode="spec").slices if as_of else view.latest_file_slices()
    # base files written by a pending clustering or replace instant are hidden from readers
    # (``isBaseFileDueToPendingClustering`` looks at pending replacecommit and clustering instants)
    pending_cl = sorted(set(table.pending_clustering.values())
                        | {i.requested_time for i in table.timeline.pending([Action.CLUSTERING, Action.REPLACECOMMIT])})
    plan_logs = {tc: [fn.LogFile.parse(p, op.get("partitionPath") or "") for op in ops
                      for p in op.get("deltaFilePaths") or []]
                 for tc, ops in table.compaction_plans.items()}
    # the latest snapshot of the files completed commits name must be on disk and readable
    named_view = table.named_view(rule)
    listed = {f.path for f in table.base_files} | {f.path for f in table.log_files}
    check_readable(table.base_path, [f for s in named_view.latest_merged_file_slices()
                                     for f in ([s.base_file] if s.base_file is not None else []) + list(s.log_files)],
                   listed)
    verdicts = table_verdicts(table.timeline, view, table.base_files, table.log_files, rule=rule,
                              compaction_plans=plan_logs, replaced=table.replaced,
                              pending_clustering_instants=pending_cl,
                              compaction_inputs=compaction_inputs_on_disk(table),
                              log_blocks=log_blocks_on_disk(table), named_view=named_view)
    notes = []
    if rule != table.default_rule:
        notes.append(f"slicing rule {rule} overrides the table version's rule {table.default_rule}")
    if table.layout == 1:
        notes.append("table version 6: completion times are the completed files' modification times "
                     "(I1 uniqueness and I2 apply to requested times only)")
    if table.leftover_temp_files:
        left = table.leftover_temp_files
        notes.append(f"{len(left)} leftover temporary file(s) of interrupted timeline writes skipped, as Hudi's "
                     f"listing skips them: {', '.join(left[:3])}" + (", ..." if len(left) > 3 else ""))
    if history is not None:
        verdicts = verdicts + history.verdicts
        notes.extend(history.notes)
    latest = {f.path for s in named_view.latest_merged_file_slices()
              for f in ([s.base_file] if s.base_file is not None else []) + list(s.log_files)}
    mdt_v, mdt_notes = audit_metadata_table(table, latest)
    verdicts = verdicts + mdt_v
    notes.extend(mdt_notes)
    return AuditResult(table, rule, as_of, list(slices), verdicts, time.perf_counter() - t0, notes, history)


# ------------------------------------------------------------------------------ the metadata table (issue #18)
def audit_metadata_table(table: Table, latest: set[str] | None = None) -> tuple[list[Verdict], list[str]]:
    """The MDT against the data table, when ``hoodie.properties`` names metadata partitions and
    ``.hoodie/metadata`` exists (``lakeio.ondisk.mdt``; the MDT is only read):

    * ``MDT.readable``: every file of a checked partition parses (a truncated HFile or log file is a
      violation naming the partition, exit 1);
    * ``MDT.files-listing``: the files partition lists every file of a completed instant on disk, with its
      size (what hudi-rs lists a tv8 table from), and nothing else that readers would read: a listed file
      gone from disk is a violation when it is in the latest snapshot (``latest``: paths), a note otherwise
      (an older slice's file removed without a clean instant);
    * ``MDT.record-index``: the record index equals a rebuild from the latest merged file slices;
    * ``I17.partition-state``: a partition is available (readable) only once an indexing instant
      completed for it (``files``, which writers initialise, excepted), and an inflight one has a pending
      indexing instant (``model.mdt.partitions.readable_partitions``).
    Other partitions Hudi writes (column_stats, partition_stats, secondary indexes) are noted, not checked."""
    from lakeio.ondisk import mdt as mdtio

    props_parts = table.properties.get(mdtio.PARTITIONS_KEY, "") or table.properties.get(mdtio.INFLIGHT_KEY, "")
    m = mdtio.MetadataTable(table.base_path)
    if not props_parts or not m.exists():
        return [], []
    states = mdtio.partition_states(table.base_path, table.properties)
    notes = [f"metadata table: available {', '.join(sorted(states.available)) or '-'}; inflight "
             f"{', '.join(sorted(states.inflight)) or '-'}"]
    others = sorted((states.available | states.inflight) - set(mdtio.SUPPORTED))
    if others:
        notes.append(f"metadata partitions not checked: {', '.join(others)}")
    done = {i.requested_time for i in table.timeline.completed()}
    verdicts: list[Verdict] = []
    plans = indexing_plans(table)
    pending = {p for t, (st, ps) in plans.items() if st != "completed" for p in ps}
    completed = {p for t, (st, ps) in plans.items() if st == "completed" for p in ps}
    for p in sorted(states.available - {mdtio.FILES}):
        bad = p in pending or (p not in completed and any(p in ps for _, ps in plans.values()))
        verdicts.append(Verdict("I17.partition-state", not bad, f"{p} is available" + (
            " while its indexing instant is pending (readable before the index completed)" if bad else ""),
            (p,) if bad else ()))
    for p in sorted(states.inflight):
        ok = p in pending
        verdicts.append(Verdict("I17.partition-state", ok, f"{p} is inflight" + (
            " (its indexing instant is pending)" if ok else " but no pending indexing instant builds it"),
            () if ok else (p,)))
    checks = [(p, f) for p, f in ((mdtio.FILES, "files"), (mdtio.RECORD_INDEX, "record_index"))
              if p in states.available]
    for part, _ in checks:
        try:
            if part == mdtio.FILES:
                got = m.files_listing(done)
            else:
                got = m.record_index(done)
        except mdtio.MetadataTableError as exc:
            verdicts.append(Verdict("MDT.readable", False, f"metadata partition {part}: {exc}", (part,)))
            continue
        verdicts.append(Verdict("MDT.readable", True, f"metadata partition {part} reads"))
        if part == mdtio.FILES:
            want = mdtio.committed_listing(table)
            diff, stale = [], []
            for dp in sorted(set(got) | set(want)):
                g, w = got.get(dp, {}), want.get(dp, {})
                diff += [f"{dp}/{n} missing from the MDT" for n in sorted(set(w) - set(g))]
                for n in sorted(set(g) - set(w)):
                    rel = f"{dp}/{n}" if dp else n
                    if latest is None or rel in latest:
                        diff.append(f"{rel} listed by the MDT, not on disk")
                    else:
                        stale.append(rel)
                diff += [f"{dp}/{n} size {g[n]} in the MDT, {w[n]} on disk" for n in sorted(set(g) & set(w))
                         if g[n] != w[n]]
            if stale:
                notes.append(f"{len(stale)} file(s) of older slices listed by the MDT are gone from disk "
                             f"(removed without a clean instant): {', '.join(stale[:3])}"
                             + (", ..." if len(stale) > 3 else ""))
            verdicts.append(Verdict("MDT.files-listing", not diff,
                                    f"metadata partition files: {len(diff)} difference(s) with the listing"
                                    if diff else "metadata partition files equals the listing",
                                    tuple(diff[:10])))
        else:
            want = mdtio.rebuild_record_index(table)
            diff = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
            verdicts.append(Verdict("MDT.record-index", not diff,
                                    f"metadata partition record_index: {len(diff)} key(s) differ from a rebuild"
                                    if diff else f"metadata partition record_index equals a rebuild ({len(want)} keys)",
                                    tuple(f"{k}: MDT {got.get(k)} rebuild {want.get(k)}" for k in diff[:10])))
    return verdicts, notes


def indexing_plans(table: Table) -> dict[str, tuple[str, set[str]]]:
    """requested time -> (state, MDT partitions its ``HoodieIndexPlan`` names) of every indexing instant on
    the active timeline (the plan is in ``<t>.indexing.requested``; an unreadable plan names none)."""
    out = {}
    for i in table.timeline.instants():
        if i.action is not Action.INDEXING:
            continue
        name = fn.timeline_file_name(i.requested_time, Action.INDEXING, 1, None, table.layout)
        parts: set[str] = set()
        try:
            plan = md.decode_avro((table.timeline_dir / name).read_bytes(), name) or {}
            parts = {p.get("metadataPartitionPath") for p in plan.get("indexPartitionInfos") or []} - {None}
        except (OSError, UserError, ValueError):
            pass
        out[i.requested_time] = ("completed" if i.is_completed else "pending", parts)
    return out


# ------------------------------------------------------------------------------ history (archival, LSM timeline)
#: archival settings a table may record in hoodie.properties (hoodie-lab's writers do; Hudi keeps them in the
#: write config): hoodie.properties key -> model.archival.ArchivalConfig field
ARCHIVAL_KEYS = {"hoodie.keep.max.commits": "max_commits", "hoodie.keep.min.commits": "min_commits",
                 "hoodie.commits.archival.batch": "batch",
                 "hoodie.timeline.compaction.batch.size": "compaction_batch",
                 "hoodie.cleaner.commits.retained": "cleaner_commits_retained"}


@dataclass
class HistoryAudit:
    """What ``audit`` shows and checks of a table's history (:mod:`lakeio.ondisk.history`)."""

    summary: dict[str, Any]
    verdicts: list[Verdict]
    #: the spec's CompletionTimeQueryView over active timeline + history (tv8/9), None for tv6
    times: Any = None
    notes: list[str] = field(default_factory=list)


def archival_config_of(table: Table):
    """The archival settings recorded in ``hoodie.properties`` (None when none is): :class:`UserError` naming the
    file and key for a bad value."""
    from model.archival import ArchivalConfig, ArchivalConfigError

    given = {f: table.properties[k] for k, f in ARCHIVAL_KEYS.items() if table.properties.get(k, "").strip()}
    if not given:
        return None
    props_path = table.base_path / ".hoodie" / "hoodie.properties"
    values = {}
    for f, raw in given.items():
        key = next(k for k, v in ARCHIVAL_KEYS.items() if v == f)
        try:
            values[f] = int(raw.strip())
        except ValueError:
            raise UserError(f"{props_path}: {key}={raw!r} is not a number") from None
    try:
        return ArchivalConfig(**values).validate()
    except ArchivalConfigError as exc:
        raise UserError(f"{props_path}: {exc}") from None


def audit_history(table: Table, as_of: str | None = None) -> HistoryAudit | None:
    """Open the table's history (never writing), summarise it and check I15 (LSM layout) and I16 (what was
    archived) with the spec's predicates; None when the table has no history on disk."""
    from lakeio.ondisk.history import (LsmHistory, active_files, archived_as_lsm_state, open_history)
    from model import lsm
    from model.archival import ArchivalConfig, HistoryState
    from model.completion_time import CompletionTimeQueryView
    from model.invariants.history import archival_verdicts, lsm_verdicts

    h = open_history(table.base_path, table.properties, table.version)
    if h is None:
        return None
    cfg = archival_config_of(table)
    notes = []
    active = frozenset(af for af, _ in active_files(table.timeline))
    times = None
    if isinstance(h, LsmHistory):
        state = h.disk_state()  # every data file's three columns; UserError for one that is not history parquet
        verdicts = lsm_verdicts(state)
        readable = h.read_error is None
        times = CompletionTimeQueryView(table.timeline, state if readable else lsm.EMPTY)
        if not readable:
            notes.append(f"history not readable ({h.read_error}): archived completion times are not looked up")
    else:
        state = archived_as_lsm_state(h.instants())
        verdicts = []
    i16 = archival_verdicts(HistoryState(active=active, lsm=state, table_version=table.version),
                            cfg or ArchivalConfig())
    if cfg is None:
        i16 = [v for v in i16 if v.invariant != "I16.keeps-min"]
        notes.append("archival settings not recorded in hoodie.properties (hoodie.keep.min.commits, ...): "
                     "I16.keeps-min not checked")
    summary = h.summary()
    if as_of and times is not None:
        lk = times.lookup(as_of)
        summary["as_of_lookup"] = {"requested": as_of, "completion": lk.completion_time, "source": lk.source,
                                   "files_read": list(lk.files_read)}
    return HistoryAudit(summary, verdicts + i16, times, notes)


def history_view(table: Table, rule: str, history: HistoryAudit):
    """The spec's file-system view with completion times looked up across the history."""
    from model.slicing import FileSystemView

    return FileSystemView(table.timeline, table.base_files, table.log_files, rule=rule,
                          pending_compactions=table.pending_compactions, replaced=table.replaced,
                          pending_clustering=table.pending_clustering, times=history.times)


def history_json(result: AuditResult) -> dict[str, Any] | None:
    return None if result.history is None else dict(result.history.summary)


def render_history(result: AuditResult, console) -> None:
    """The history table of :func:`render` (nothing when the table has none)."""
    from rich.table import Table as RTable

    if result.history is None:
        return
    s = result.history.summary
    ht = RTable(title="history", show_header=False, title_justify="left")
    ht.add_row("layout", "LSM timeline" if s["kind"] == "lsm" else "archived log (table version 6)")
    ht.add_row("folder", s["folder"])
    ht.add_row("archived instants", str(s["instants"]))
    ht.add_row("files", str(s["files"]))
    if s["kind"] == "lsm":
        ht.add_row("manifest version", str(s["manifest_version"]))
        ht.add_row("levels", ", ".join(f"L{k}: {v}" for k, v in s["levels"].items()) or "-")
        ht.add_row("manifests on disk", ", ".join(map(str, s["manifests_on_disk"])) or "-")
        if s.get("read_error"):
            ht.add_row("not readable", s["read_error"], style="bold red")
    if "as_of_lookup" in s:
        lk = s["as_of_lookup"]
        ht.add_row("completion of --as-of", f"{lk['completion'] or '-'} ({lk['source']})")
    console.print(ht)


def compaction_inputs_on_disk(table: Table) -> dict[str, list]:
    """Per compaction instant, the base and log files its plan (``<tc>.compaction.requested``) merges:
    each operation's ``dataFilePath`` and ``deltaFilePaths`` in its ``partitionPath``
    (``HoodieCompactionOperation``). ``I8.snapshot-completeness`` uses them to tell which older files
    a compaction's base file holds. Names are taken after the last ``/`` (plans may hold paths); a
    name that is not a data file name is bad input naming the plan.
    """
    out: dict[str, list] = {}
    for tc, ops in table.compaction_plans.items():
        files: list = []
        for op in ops or []:
            part = op.get("partitionPath") or ""
            names = ([op["dataFilePath"]] if op.get("dataFilePath") else []) + list(op.get("deltaFilePaths") or [])
            for name in names:
                try:
                    f = fn.parse_data_file(str(name).rsplit("/", 1)[-1], part)
                except fn.CodecError as e:
                    raise UserError(f"compaction plan {tc}: {e}") from None
                if f is None:
                    raise UserError(f"compaction plan {tc}: {name!r} is not a base or log file name")
                files.append(f)
        out[tc] = files
    return out


def log_blocks_on_disk(table: Table) -> dict | None:
    """Every log file's blocks as the model's :class:`model.logblocks.LogBlock` values (block type and
    the ``INSTANT_TIME`` / ``TARGET_INSTANT_TIME`` headers), for ``I8.log-blocks`` and tv6
    ``I9.compaction-plan`` by blocks. A file that does not start with Hudi's block magic (a skeleton
    table's placeholder) has no known blocks and is left out (names decide for it); bytes that stop
    being a block sequence after the magic end in a corrupt block, as Hudi's reader treats them.
    ``None`` when no log file holds blocks. Never writes.
    """
    from lakeio.hudiformat import logfile as lf_io  # heavy (pyarrow): imported only when auditing logs
    from model import logblocks as lb

    kinds = {lf_io.COMMAND_BLOCK: lb.BlockKind.COMMAND, lf_io.DELETE_BLOCK: lb.BlockKind.DELETE}
    out: dict = {}
    for lf in table.log_files:
        path = table.base_path / lf.path
        try:
            data = path.read_bytes()
        except OSError as e:
            raise UserError(f"{path}: cannot read log file ({e.strerror or e})") from None
        if not data.startswith(lf_io.MAGIC):
            continue
        blocks = []
        try:
            for b in lf_io.read_blocks(data):
                kind = kinds.get(b.block_type, lb.BlockKind.DATA if b.block_type != 2 else lb.BlockKind.CORRUPT)
                target = b.header.get(lf_io.TARGET_INSTANT_TIME) if kind is lb.BlockKind.COMMAND else None
                blocks.append(lb.LogBlock(kind, b.instant, target))
        except (ValueError, struct_error, UnicodeDecodeError, EOFError):
            blocks.append(lb.LogBlock(lb.BlockKind.CORRUPT, ""))
        out[lf] = tuple(blocks)
    return out or None


# ------------------------------------------------------------------------------ presentation
def timeline_rows(table: Table) -> list[dict[str, Any]]:
    rows = []
    for i in table.timeline.instants():
        dur = None
        if i.completion_time:
            dur = to_millis(i.completion_time) - to_millis(i.requested_time)
        rows.append({"requested": i.requested_time, "completion": i.completion_time, "duration_ms": dur,
                     "action": i.shown_action.value, "started_as": i.action.value, "state": i.state.label})
    return rows


def slice_rows(slices) -> list[dict[str, Any]]:
    rows = []
    for s in slices:
        rows.append({"partition": s.partition, "file_id": s.file_id, "base_instant": s.base_instant,
                     "base_file": s.base_file.name if s.base_file is not None else None,
                     "log_files": [lf.name for lf in s.log_files]})
    return sorted(rows, key=lambda r: (r["partition"], r["file_id"]))


def to_json(result: AuditResult) -> dict[str, Any]:
    return {
        "table": result.table.facts(),
        "rule": result.rule,
        "as_of": result.as_of,
        "timeline": timeline_rows(result.table),
        "latest_file_slices": slice_rows(result.slices),
        "invariants": [{"invariant": v.invariant, "holds": v.holds, "detail": v.detail, "involved": list(v.involved)}
                       for v in result.verdicts],
        "ok": result.ok,
        "notes": result.notes,
        "history": history_json(result),
    }


def make_console():
    """A rich console; wide when output is not a terminal, so times and file names are not cut."""
    import sys

    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=220)


def render(result: AuditResult, console=None) -> None:
    """Print the audit as rich tables."""
    from rich.table import Table as RTable

    console = console or make_console()
    facts = result.table.facts()
    ft = RTable(title=f"table {facts['name']}", show_header=False, title_justify="left")
    for k in ("path", "type", "version", "timeline_layout", "timeline_dir", "timezone", "partition_fields",
              "record_key_fields", "metadata_partitions", "partitions", "instants", "base_files", "log_files"):
        v = facts[k]
        ft.add_row(k, ", ".join(v) if isinstance(v, list) else str(v))
    ft.add_row("slicing rule", result.rule)
    console.print(ft)

    tt = RTable(title="timeline", title_justify="left")
    for col in ("requested", "completion"):
        tt.add_column(col, no_wrap=True, min_width=17)
    for col in ("duration ms", "action", "state"):
        tt.add_column(col)
    for r in timeline_rows(result.table):
        action = r["action"] if r["action"] == r["started_as"] else f"{r['action']} ({r['started_as']})"
        style = None if r["state"] == "completed" else "yellow"
        tt.add_row(r["requested"], r["completion"] or "-", "-" if r["duration_ms"] is None else str(r["duration_ms"]),
                   action, r["state"], style=style)
    console.print(tt)

    title = f"latest file slices as of {result.as_of}" if result.as_of else "latest file slices"
    st = RTable(title=title, title_justify="left")
    st.add_column("partition")
    st.add_column("file id", overflow="fold")
    st.add_column("base instant", no_wrap=True, min_width=17)
    st.add_column("base file", overflow="fold")
    st.add_column("log files", overflow="fold")
    for r in slice_rows(result.slices):
        st.add_row(r["partition"] or "(none)", r["file_id"], r["base_instant"], r["base_file"] or "-",
                   "\n".join(r["log_files"]) or "-")
    console.print(st)
    render_history(result, console)

    vt = RTable(title="invariants", title_justify="left")
    for col in ("invariant", "verdict", "detail"):
        vt.add_column(col)
    for v in result.verdicts:
        detail = v.detail + (f" [{', '.join(v.involved)}]" if v.involved and not v.holds else "")
        vt.add_row(v.invariant, "holds" if v.holds else "VIOLATED", detail,
                   style=None if v.holds else "bold red")
    console.print(vt)
    for n in result.notes:
        console.print(f"note: {n}")
    bad = violations(result.verdicts)
    if bad:
        console.print(f"[bold red]{len(bad)} invariant(s) violated[/]: " + "; ".join(str(v) for v in bad))
    else:
        console.print(f"all {len(result.verdicts)} invariants hold")
