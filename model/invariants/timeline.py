"""Invariants I1-I9 of ``hudi-semantics.md`` section 8 over one table state (pure).

Inputs are model objects only: a :class:`model.timeline.Timeline`, a
:class:`model.slicing.FileSystemView`, :class:`model.filenames.BaseFile` / ``LogFile`` values and
compaction plans as ``{compaction instant: [log files in the plan]}``. Every check returns a
:class:`model.invariants.Verdict` whose ``involved`` names the instants or files of a violation.
:func:`table_verdicts` runs every check that applies to a table version.

Which checks apply (and why):

* I1 time format and uniqueness: every table; completion times only where the file name carries
  them (layout 2). Layout 1 (tv6) completion times are file modification times
  (``InstantGeneratorV1``): second-granular, shared by files written in one second, possibly in
  another zone than the requested time, so they are neither unique nor ordered with requested times.
* I2 requested < completion: layout 2 only, for the same reason.
* I3 legal state files and visible state; I4 completed-action mapping; I5 no write during a restore.
* I6 (tv8, completion-time rule) / I7 (tv6, instant-time rule): every committed base and log file
  lies in exactly one slice of its file group; I7 also: each log in the slice named by its file name.
* I8 what readers see: no file of a non-completed instant, no replaced file group, no base file
  written by a pending clustering/replace.
* I8.snapshot-files-exist: every file of the latest snapshot that completed commits name in their
  metadata exists in the table's listing (every table; the reader gives the named files and the
  listing).
* I9 (tv8): a compaction plan at ``tc`` holds only logs whose deltacommit completed before ``tc``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Mapping

from .. import logblocks as _lb
from ..instant import COMPLETED_ACTION, DATA_WRITE_ACTIONS, STARTS_INFLIGHT, Action, State
from . import Verdict
from . import times as _times

MAX_INVOLVED = 8


def _few(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(list(items)[:MAX_INVOLVED])


def _verdict(name: str, bad: list[tuple[str, str]], what: str, ok_detail: str = "") -> Verdict:
    """``bad``: (who, sentence) per finding; the detail quotes the first sentences, ``involved`` names who."""
    if bad:
        sentences = [b for _, b in bad]
        return Verdict(name, False, f"{len(bad)} {what}: {'; '.join(sentences[:3])}",
                       _few(dict.fromkeys(w for w, _ in bad)))
    return Verdict(name, True, ok_detail)


# ----------------------------------------------------------------------------------- I1, I2
def check_time_format(tl) -> Verdict:
    """I1.time-format: requested times (and layout-2 completion times) are 17-digit strings."""
    if tl.layout == 2:
        return _times.check_timeline_time_format(tl)
    return _times.check_time_format(i.requested_time for i in tl.instants())


def check_unique_times(tl) -> Verdict:
    """I1.unique: no two instants share a requested time; in layout 2 no completion time equals any
    other time either (one TrueTime generator, ``hudi-semantics.md`` section 2)."""
    if tl.layout == 2:
        return _times.check_timeline_times_unique(tl)
    return _times.check_times_unique([i.requested_time for i in tl.instants()])


def check_requested_before_completion(tl) -> Verdict:
    """I2 (layout 2): requested < completion for every completed instant (``createCompleteFileInMetaPath``)."""
    return _times.check_requested_before_completion(tl)


# ----------------------------------------------------------------------------------- I3
def check_state_files(tl) -> Verdict:
    """I3.legal-states: the state files of each instant form a legal combination.

    A pending instant has its first state file (``requested``; ``inflight`` for savepoint, which has
    no requested state) and possibly ``inflight``: the forward path creates each file without
    deleting the earlier ones, a compaction revert deletes only the inflight file, and rollback of
    a pending instant deletes inflight before requested (``ActiveTimelineV2``). An inflight file
    without its requested file therefore never arises. A completed file may stand with any subset
    of the earlier files: archival deletes the pending-state files of archived instants before the
    completed ones (``TimelineArchiverV2``), so partial sets are legal transients.
    """
    bad = []
    for i in tl.instants():
        present = tl.states_present(i.requested_time, i.action)
        if State.COMPLETED in present:
            continue
        first = State.INFLIGHT if i.action in STARTS_INFLIGHT else State.REQUESTED
        if first not in present:
            labels = "+".join(s.label for s in sorted(present))
            bad.append((f"{i.requested_time}.{i.action.value}",
                        f"{i.requested_time}.{i.action.value} has {labels} but no {first.label} file"))
    return _verdict("I3.legal-states", bad, "instant(s) with an illegal set of state files",
                    f"{len(tl)} instants")


def check_visible_state(tl) -> Verdict:
    """I3.visible-state: the visible state is the highest state present."""
    return _times.check_visible_state_is_highest(tl)


def check_single_writer(tl) -> Verdict:
    """I3.single-writer: all state files of one instant were written by one process.

    With put-if-absent storage (``createImmutableFileInPath`` fails on an existing file) a
    second process that obtained the same instant time is refused at create, so this holds by
    construction. Without it (object stores that overwrite) the second process's requested,
    inflight and completed files replace the first's: the loser's plan or commit metadata is gone
    and its data files are referenced by nothing (``Timeline(storage="overwrite")``). Writers are a
    history kept only when callers name themselves (``by=``); a timeline read from storage has
    none, and the check holds there vacuously.
    """
    bad = []
    for i in tl.instants():
        ws = tl.writers_of(i.requested_time, i.action)
        who = sorted({w for files in ws.values() for w in files})
        if len(who) > 1:
            files = "; ".join(f"{st.label} by {', '.join(w)}" for st, w in sorted(ws.items()))
            bad.append((f"{i.requested_time}.{i.action.value}",
                        f"{i.requested_time}.{i.action.value} has files written by {len(who)} processes ({files})"))
    return _verdict("I3.single-writer", bad, "instant(s) whose files more than one process wrote")


# ----------------------------------------------------------------------------------- I4
def check_completed_action(tl) -> Verdict:
    """I4.completed-action: compaction completes as commit, logcompaction as deltacommit, clustering
    as replacecommit (``InstantFileNameGeneratorV2.getCompleteFileName``).

    A service instant whose completed file names another action shows up as two instants at one
    requested time: the pending service and a completed instant of the wrong action.
    """
    by_time: dict[str, list] = defaultdict(list)
    for i in tl.instants():
        by_time[i.requested_time].append(i)
    bad = []
    for t, insts in by_time.items():
        for svc in insts:
            if svc.action not in COMPLETED_ACTION or not svc.is_pending:
                continue
            for other in insts:
                if other is not svc and other.is_completed and other.shown_action is not COMPLETED_ACTION[svc.action]:
                    bad.append((f"{t}.{svc.action.value}",
                                f"{t}.{svc.action.value} completed as {other.shown_action.value}, "
                               f"not {COMPLETED_ACTION[svc.action].value}"))
    return _verdict("I4.completed-action", bad, "service instant(s) completed under the wrong action")


# ----------------------------------------------------------------------------------- I5
def check_no_write_during_restore(tl) -> Verdict:
    """I5.no-write-during-restore: no data write (commit/deltacommit/replacecommit) was requested
    while a restore was pending (``BaseHoodieWriteClient.startCommit``).

    A pending restore at ``r`` forbids every data write requested after ``r``; a completed restore
    forbids those requested in ``(r, completion)`` -- checked only where completion times are
    names (layout 2).
    """
    bad = []
    restores = [i for i in tl.instants() if i.action is Action.RESTORE]
    writes = [i for i in tl.instants() if i.action in DATA_WRITE_ACTIONS]
    for r in restores:
        if r.is_pending:
            end = None
        elif tl.layout == 2 and r.completion_time:
            end = r.completion_time
        else:
            continue
        for w in writes:
            if w.requested_time > r.requested_time and (end is None or w.requested_time < end):
                who = f"{w.requested_time}.{w.action.value}"
                bad.append((who, f"{who} started while restore {r.requested_time} was pending"))
    return _verdict("I5.no-write-during-restore", bad, "write(s) started during a restore")


# ----------------------------------------------------------------------------------- I6, I7
def _fg(f) -> tuple[str, str]:
    return (f.partition, f.file_id)


def check_files_in_one_slice(view, committed_base: Iterable, committed_logs: Iterable, *, rule: str) -> Verdict:
    """I6 (completion-time rule) / I7 (instant-time rule): every committed base and log file belongs
    to exactly one slice of its file group (``AbstractTableFileSystemView.buildFileGroups``).

    Under the instant-time rule (tv6, 0.x ``HoodieFileGroup.addLogFile``) a log must sit in the slice
    whose base instant is the instant in its name; under the completion-time rule the slice is the
    one with the greatest base instant <= the log's completion time (``getBaseInstantTime``), which
    :mod:`model.slicing` computes -- here we check the placement is unique and total.
    """
    name = "I7.slice-by-instant-time" if rule == "instant-time" else "I6.slice-by-completion-time"
    where: dict = defaultdict(list)
    for fg in view.file_groups():
        for s in fg.slices:
            if s.base_file is not None:
                where[s.base_file].append((fg, s))
            for lf in s.log_files:
                where[lf].append((fg, s))
    bad = []
    for f in list(committed_base) + list(committed_logs):
        places = where.get(f, [])
        if len(places) != 1:
            bad.append((f.path, f"{f.path} is in {len(places)} slices"))
            continue
        _fg_, s = places[0]
        if rule == "instant-time" and hasattr(f, "version") and s.base_instant != f.instant_time:
            bad.append((f.path, f"{f.path} names base instant {f.instant_time} but sits in slice {s.base_instant}"))
    return _verdict(name, bad, "committed file(s) not in exactly one (correct) slice")


# ----------------------------------------------------------------------------------- I8
def check_reader_visibility(view, tl, *, replaced: Mapping[tuple[str, str], str] = {},
                            pending_clustering_instants: Iterable[str] = ()) -> Verdict:
    """I8.reader-visibility: the latest slices a reader gets hold no base/log file of a
    non-completed instant (tv8 ``filterUncommittedFiles``; tv6 base files of a pending compaction),
    no file group replaced by a completed replacecommit, and no base file written by a pending
    clustering/replace instant (``AbstractTableFileSystemView``).

    For tv6 the log files of pending instants are not filtered at planning time (the log reader
    skips their blocks), so only base files are checked there.
    """
    completed = {i.requested_time for i in tl.completed()}
    first_active = min((i.requested_time for i in tl.instants()), default=None)
    pending_cl = set(pending_clustering_instants)

    def committed(t: str) -> bool:  # instants before the active timeline are archived => completed
        return t in completed or (first_active is not None and t < first_active)

    bad = []
    for s in view.latest_file_slices():
        fg = (s.partition, s.file_id)
        if fg in replaced:
            bad.append((f"{s.partition}/{s.file_id}",
                        f"file group {s.partition}/{s.file_id} replaced by {replaced[fg]} is visible"))
        if s.base_file is not None:
            if not committed(s.base_file.instant_time):
                bad.append((s.base_file.path,
                            f"{s.base_file.path} of non-completed instant {s.base_file.instant_time} is visible"))
            if s.base_file.instant_time in pending_cl:
                bad.append((s.base_file.path,
                            f"{s.base_file.path} of pending clustering {s.base_file.instant_time} is visible"))
        if tl.layout == 2:
            for lf in s.log_files:
                if not committed(lf.delta_commit_time):
                    bad.append((lf.path, f"{lf.path} of non-completed deltacommit {lf.delta_commit_time} is visible"))
    return _verdict("I8.reader-visibility", bad, "file(s) a reader must not see")


def compaction_holds(gid, base, f, f_slice: str, compaction_inputs: Mapping[str, Iterable] | None) -> bool:
    """Whether the committed base file ``base`` of file group ``gid`` holds the data of file ``f``, which
    lies in the slice with base instant ``f_slice``.

    A base file written by a compaction whose inputs are known holds exactly what its plan merged
    (``HoodieCompactionOperation``: the slice's base file ``dataFilePath`` and its
    ``deltaFilePaths``; ``CompactionUtils.buildFromFileSlice``), and transitively what the merged base
    file held. A base file written by a commit (a copy-on-write rewrite, an insert) -- or by a
    compaction whose plan is not known -- is taken to hold every file of an older slice of its group
    (the assumption the check made before compaction inputs were tracked).
    """
    if not f_slice < base.instant_time:
        return False
    inputs = None if compaction_inputs is None else compaction_inputs.get(base.instant_time)
    if inputs is None:
        return True
    mine = [x for x in inputs if (x.partition, x.file_id) == tuple(gid)]
    if f in mine:
        return True
    return any(not hasattr(x, "version") and x != base
               and compaction_holds(gid, x, f, f_slice, compaction_inputs) for x in mine)


def check_snapshot_reads_every_commit(view, committed_base: Iterable, committed_logs: Iterable, *,
                                      compaction_inputs: Mapping[str, Iterable] | None = None) -> Verdict:
    """I8.snapshot-completeness: a snapshot reader reads the data of every committed write.

    A snapshot of a file group reads its latest merged slice
    (``getLatestMergedFileSlicesBeforeOrOn``). A committed base or log file that is not
    in that slice is only legitimately skipped when the newest committed base file of the
    group holds its data (:func:`compaction_holds`): a compaction's base holds what its plan
    merged, a base rewritten by a commit holds everything older. Anything else is committed
    data no reader will ever return -- what the instant-time rule does to a write that
    overlaps a compaction (``hudi-semantics.md`` 3.2; RFC-66 "Non-Serial Compaction Plan
    Schedule"), and what a compaction whose plan missed a log does under either rule (a
    completion-time lookup that could not see a deltacommit, a write whose instant time was
    generated before the compaction's and published after it).

    ``compaction_inputs`` maps a compaction instant to the base and log files its plan merged
    (``model.slicing.compaction_inputs`` for model tables, the plans on disk for ``audit``);
    ``None`` keeps the older assumption that every newer committed base holds all older data.
    Replaced file groups are exempt (their data lives in the replacing group).
    """
    read: set = set()
    for s in view.latest_merged_file_slices():
        if s.base_file is not None:
            read.add(s.base_file)
        read.update(s.log_files)
    committed = set(committed_base) | set(committed_logs)
    newest_base: dict = {}
    for fg in view.file_groups():
        newest_base[fg.id] = next((sl.base_file for sl in fg.slices
                                   if sl.base_file is not None and sl.base_file in committed), None)
    bad = []
    for f in sorted(committed - read, key=lambda f: f.path):
        sl = view.slice_of(f)
        if sl is None or view.file_group(sl.group) is None:
            continue
        gid = sl.group
        if getattr(view, "_replaced_by", None) and view._replaced_by(gid, None):  # noqa: SLF001
            continue
        nb = newest_base.get(gid)
        if nb is not None and sl.base_instant < nb.instant_time:
            if compaction_holds(gid, nb, f, sl.base_instant, compaction_inputs):
                continue  # superseded by a newer committed base file that holds its data
            bad.append((f.path, f"{f.path} (slice {sl.base_instant}) is committed but compaction {nb.instant_time}, "
                                f"whose base file supersedes it, did not merge it: no snapshot reads it"))
            continue
        bad.append((f.path, f"{f.path} (slice {sl.base_instant}) is committed but no snapshot reads it"))
    return _verdict("I8.snapshot-completeness", bad, "committed file(s) lost to snapshot readers")


def check_snapshot_files_exist(named_view, present: Iterable[str]) -> Verdict:
    """I8.snapshot-files-exist: every base and log file of the latest snapshot exists.

    ``named_view`` is the file-system view over the files that *completed* commits name in their
    metadata (``HoodieCommitMetadata.partitionToWriteStats[*].path``; for a replacecommit also its
    ``partitionToReplaceFileIds``, which the view hides), ``present`` the relative paths of the
    data files listed in the table's folders. The snapshot is the view's latest merged slices
    (``getLatestMergedFileSlicesBeforeOrOn``): what a snapshot reader opens. No table service
    removes them: the cleaner always retains the latest file slice of a file group
    (``CleanPlanner.getFilesToCleanKeepingLatestCommits/Versions``); a rollback deletes files of an
    instant that is not completed (``BaseRollbackActionExecutor``), and a restore removes the
    completed instants it rolls back from the timeline, so their metadata names nothing any more;
    a replaced file group is hidden by the view and deleted by a later clean. A named file of
    the latest snapshot that is not listed is committed data no reader can open (Hudi's reader
    fails with ``FileNotFoundException``). Files named only by archived instants are not known
    here and are not checked.
    """
    have = set(present)
    bad = []
    for s in sorted(named_view.latest_merged_file_slices(), key=lambda s: (s.partition, s.file_id)):
        files = ([s.base_file] if s.base_file is not None else []) + list(s.log_files)
        for f in files:
            if f.path not in have:
                bad.append((f.path, f"{f.path} (file group {s.file_id}, slice {s.base_instant}) is missing"))
    return _verdict("I8.snapshot-files-exist", bad, "file(s) of the latest snapshot missing",
                    "every file of the latest snapshot named by commit metadata is present")


# ----------------------------------------------------------------------------------- I9
def check_compaction_plans(tl, plans: Mapping[str, Iterable]) -> Verdict:
    """I9.compaction-plan (tv8, RFC-66): the plan of compaction ``tc`` lists only log files whose
    deltacommit completed before ``tc`` (``CompletionTimeQueryView.isCompletedBefore``).

    ``plans`` maps compaction instant -> the :class:`~model.filenames.LogFile` values in its plan.
    A deltacommit older than the active timeline counts as completed before (archived).
    """
    first_active = min((i.requested_time for i in tl.instants()), default=None)
    bad = []
    for tc, logs in plans.items():
        for lf in logs:
            t = lf.delta_commit_time
            c = tl.completion_time(t)
            if c is None:
                if first_active is not None and t < first_active:
                    continue
                bad.append((lf.name, f"compaction {tc} plans {lf.name} of deltacommit {t}, which is not completed"))
            elif not c < tc:
                bad.append((lf.name,
                            f"compaction {tc} plans {lf.name}, whose deltacommit {t} completed at {c} >= {tc}"))
    return _verdict("I9.compaction-plan", bad, "planned log file(s) not completed before the plan",
                    f"{len(plans)} plan(s)")


def check_log_blocks_read(view, tl, log_blocks: Mapping, *, reader=_lb.scan) -> Verdict:
    """I8.log-blocks: the blocks a snapshot reader merges from each latest merged slice hold no block
    of an instant that is not committed (completed on the timeline, or archived: older than the
    active timeline) and no block of an instant a rollback command block in the file group targets
    (``AbstractHoodieLogRecordReader#scanInternal``; tech spec "Reader Expectations": blocks with a
    ROLLBACK command block mask the previous block, blocks of non-completed instants are skipped).

    ``log_blocks`` maps each log file to its blocks (:mod:`model.logblocks`); ``reader`` is the scan
    (a broken one is passed by the suites to show the check fails).
    """
    ok = _lb.committed_for_reader(tl)
    bad = []
    for s in view.latest_merged_file_slices():
        group_blocks = [b for fg in [view.file_group(s.group)] if fg for sl in fg.slices
                        for lf in sl.log_files for b in log_blocks.get(lf, ())]
        undone = _lb.rolled_back(group_blocks)
        for b in reader(_lb.slice_blocks(s.log_files, log_blocks), tl):
            where = f"{s.partition}/{s.file_id}"
            if b.instant_time in undone:
                bad.append((where, f"{where}: a reader merges {b}, which rollback command blocks roll back"))
            elif not ok(b.instant_time):
                bad.append((where, f"{where}: a reader merges {b} of non-completed instant {b.instant_time}"))
    return _verdict("I8.log-blocks", bad, "log block(s) a reader must not merge")


def check_compaction_plan_blocks(tl, plans: Mapping[str, Iterable], log_blocks: Mapping) -> Verdict:
    """I9.compaction-plan (table version 6, by blocks): every data/delete block older than ``tc`` in a
    log that the plan of compaction ``tc`` lists was written by a deltacommit completed before ``tc``
    -- unless a rollback older than ``tc`` rolled it back (the compactor's log reader then drops it).

    tv6 log names carry the slice's base instant, so the writers are read from the blocks (several
    writers share one tv6 log). A block of a write that was pending when the plan was made, or of a
    deltacommit rolled back after it (its instant gone from the timeline), is data the compacted base
    file may hold although the table does not. Archived instants (older than the active timeline)
    count as completed before.
    """
    first_active = min((i.requested_time for i in tl.instants()), default=None)
    bad = []
    for tc, logs in plans.items():
        for lf in logs:
            blocks = list(log_blocks.get(lf, ()))
            undone_before = {b.target_instant for b in blocks
                             if b.kind is _lb.BlockKind.COMMAND and b.instant_time < tc}
            for b in blocks:
                if not b.carries_data or not b.instant_time < tc or b.instant_time in undone_before:
                    continue
                t = b.instant_time
                c = tl.completion_time(t)
                if c is None and first_active is not None and t < first_active:
                    continue
                if c is None:
                    bad.append((lf.name, f"compaction {tc} plans {lf.name}, which holds {b} of {t}, not completed "
                                         f"(pending, or rolled back after the plan)"))
                elif not c < tc:
                    bad.append((lf.name, f"compaction {tc} plans {lf.name}, which holds {b} of {t} completed at {c} >= {tc}"))
    return _verdict("I9.compaction-plan", bad, "planned log block(s) not completed before the plan",
                    f"{len(plans)} plan(s), by blocks")


# ----------------------------------------------------------------------------------- all
def timeline_verdicts(tl) -> list[Verdict]:
    """The checks that need only the timeline (I1-I5)."""
    out = [check_time_format(tl), check_unique_times(tl)]
    if tl.layout == 2:
        out.append(check_requested_before_completion(tl))
    out += [check_state_files(tl), check_visible_state(tl), check_single_writer(tl), check_completed_action(tl),
            check_no_write_during_restore(tl)]
    return out


def committed_files(tl, base_files: Iterable, log_files: Iterable, log_blocks: Mapping | None = None
                    ) -> tuple[list, list]:
    """Base and log files written by completed instants (or instants older than the active timeline).

    tv8 logs are attributed to the deltacommit in their name; tv6 log names carry the slice's base
    instant, not the writer, so every tv6 log counts (the reader filters its blocks instead) --
    unless ``log_blocks`` gives its blocks: then it counts when it holds a data/delete block of a
    committed instant that no rollback command block targets.
    """
    completed = {i.requested_time for i in tl.completed()}
    first_active = min((i.requested_time for i in tl.instants()), default=None)

    def ok(t: str) -> bool:
        return t in completed or (first_active is not None and t < first_active)

    bases = [b for b in base_files if ok(b.instant_time)]
    if tl.layout == 1 and log_blocks is not None:
        undone = _lb.rolled_back(b for bl in log_blocks.values() for b in bl)
        logs = [lf for lf in log_files
                if lf not in log_blocks or any(b.carries_data and ok(b.instant_time) and b.instant_time not in undone
                                               for b in log_blocks[lf])]
        return bases, logs
    logs = [lf for lf in log_files if tl.layout == 1 or ok(lf.delta_commit_time)]
    return bases, logs


def table_verdicts(tl, view, base_files: Iterable, log_files: Iterable, *, rule: str,
                   compaction_plans: Mapping[str, Iterable] = {},
                   replaced: Mapping[tuple[str, str], str] = {},
                   pending_clustering_instants: Iterable[str] = (),
                   compaction_inputs: Mapping[str, Iterable] | None = None,
                   log_blocks: Mapping | None = None,
                   named_view=None) -> list[Verdict]:
    """Every invariant that applies to a table state, in I1..I9 order.

    ``compaction_inputs``: compaction instant -> base and log files its plan merged (for
    ``I8.snapshot-completeness``; ``None`` assumes a newer base holds all older data).
    ``log_blocks``: log file -> its blocks (:mod:`model.logblocks`); adds ``I8.log-blocks`` and, for
    table version 6, ``I9.compaction-plan`` by blocks.
    ``named_view``: the view over the files completed commits name (:func:`check_snapshot_files_exist`,
    checked against ``base_files`` and ``log_files``, the listing); ``None`` skips that check.
    """
    out = timeline_verdicts(tl)
    bases, logs = committed_files(tl, base_files, log_files, log_blocks)
    out.append(check_files_in_one_slice(view, bases, logs, rule=rule))
    out.append(check_reader_visibility(view, tl, replaced=replaced,
                                       pending_clustering_instants=pending_clustering_instants))
    out.append(check_snapshot_reads_every_commit(view, bases, logs, compaction_inputs=compaction_inputs))
    if log_blocks is not None:
        out.append(check_log_blocks_read(view, tl, log_blocks))
    if named_view is not None:
        out.append(check_snapshot_files_exist(named_view, [f.path for f in base_files] + [f.path for f in log_files]))
    if tl.layout == 2:
        out.append(check_compaction_plans(tl, compaction_plans))
    elif log_blocks is not None:
        out.append(check_compaction_plan_blocks(tl, compaction_plans, log_blocks))
    return out


__all__ = [
    "check_time_format", "check_unique_times", "check_requested_before_completion", "check_state_files",
    "check_visible_state", "check_single_writer", "check_completed_action", "check_no_write_during_restore",
    "check_files_in_one_slice", "check_reader_visibility", "check_snapshot_reads_every_commit", "compaction_holds",
    "check_snapshot_files_exist", "check_compaction_plans", "check_log_blocks_read", "check_compaction_plan_blocks",
    "timeline_verdicts", "committed_files", "table_verdicts",
]
