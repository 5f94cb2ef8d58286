"""Archival: which instants leave the active timeline, and the order of the steps that move them to the history.

Hudi facts encoded here (``hudi-semantics.md`` section 5, invariant I16), from
``TimelineArchiverV2`` (tv8/9; ``TimelineArchiverV1`` for tv6 decides the same way and appends the records to
``.hoodie/archived/`` log files in blocks of ``hoodie.commits.archival.batch``):

* trigger (``#getCommitInstantsToArchive``): only when the completed commits timeline (commit, deltacommit,
  replacecommit) holds more than ``hoodie.keep.max.commits`` (30; Flink 50) instants; archive the oldest
  ``count - hoodie.keep.min.commits`` (20; Flink 40) of them that are before the earliest instant to retain;
* the earliest instant to retain is the smallest of: (1) the latest completed commit before the earliest pending
  write instant (the pending instant itself when no commit is before it), (2) MOR with a NUM_COMMITS compaction
  trigger: the latest completed compaction (``CompactionUtils#getEarliestInstantToRetainForCompaction``; the model
  takes the first deltacommit when none completed yet), (3) the earliest pending clustering
  (``ClusteringUtils#getEarliestInstantToRetainForClustering``, simplified), (4) metadata table enabled: the first
  commit completed after the metadata table's latest compaction (no compaction yet: archive nothing),
  (6) optionally the clean plan's earliest commit to retain;
* never at/after the first completed savepoint, unless ``hoodie.archive.beyond.savepoint`` (then savepointed commits
  are skipped);
* completed clean and rollback instants requested before the last commit archived go too
  (``#getCleanAndRollbackInstantsToArchive``);
* steps (``#archiveIfRequired``): write every state of the instants to the LSM timeline (one L0 file,
  ``LSMTimelineWriter#write``), then delete the active files: pending states (requested, inflight) first, the
  completed ones last and in ascending order (``#deleteArchivedActions``, HUDI-7207), then
  ``LSMTimelineWriter#compactAndClean``.

The state (:class:`HistoryState`) is an immutable value: the active timeline's state files, the LSM state, and the
running archival job (the steps left) with the active files it deleted so far. Every step is a named action
(:func:`guard` says why not, :func:`apply` returns the next state); a crash is :func:`crash` (the job's remaining
steps are lost, storage stays). Public API (stable):

``Design``/``HUDI``/``VARIANTS`` (Hudi's design and the broken ones), ``ArchivalConfig`` (+ ``validate``, ``FLINK``), ``ArchivalConfigError``, ``RetentionContext``,
``completed_commits``, ``earliest_instant_to_retain``, ``decide`` -> ``ArchivalDecision``, ``ActiveFile``,
``HistoryState``, ``active_timeline``, ``plan``, ``start``, ``DeleteActiveFile``, ``CompactLevel``, ``CleanLSM``,
``guard``, ``apply``, ``step``, ``crash``, ``run_to_end``, ``v1_blocks``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, NamedTuple

from . import lsm
from .errors import ModelError
from .instant import Action, Instant, State
from .timeline import Timeline

#: The completed commits timeline (``getCompletedCommitsTimeline``): shown actions.
COMMIT_ACTIONS = frozenset({Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT})
WRITE_START_ACTIONS = frozenset({Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT, Action.COMPACTION,
                                 Action.LOGCOMPACTION, Action.CLUSTERING})


@dataclass(frozen=True)
class Design:
    """How the archiver orders and bounds its work. ``HUDI`` is Hudi's; the others are broken designs the property
    suites must catch (:data:`VARIANTS` names the invariants each must break)."""

    name: str = "hudi"
    ignore_pending_write: bool = False     # archive past the earliest pending write instant
    completed_first: bool = False          # delete completed state files before pending ones
    version_before_manifest: bool = False  # write _version_ before the manifest it names
    compaction: str = "consecutive"        # "every-other": compact non-consecutive files
    lookup_history: bool = True            # False: completion-time lookups miss archived instants
    trigger_at_min: bool = False           # trigger when commits > keep.min instead of keep.max
    ignore_keep_min: bool = False          # archive every eligible commit (down to 0 instead of keep.min)
    ignore_savepoint: bool = False         # archive past the first savepoint
    max_per_run: int | None = None         # archive at most this many commits a run (a lagging archiver)


HUDI = Design()


class Variant(NamedTuple):
    design: Design
    description: str
    breaks: tuple[str, ...]  # invariants the suites must find broken (empty: a correct design)


VARIANTS: dict[str, Variant] = {
    "hudi": Variant(HUDI, "TimelineArchiverV2 + LSMTimelineWriter + CompletionTimeQueryViewV2", ()),
    "archive-past-pending": Variant(Design("archive-past-pending", ignore_pending_write=True),
                                    "retention (1) ignored: commits after the earliest pending write are archived",
                                    ("I16.before-earliest-pending",)),
    "completed-first": Variant(Design("completed-first", completed_first=True),
                               "completed state files deleted before the requested/inflight ones (before HUDI-7207)",
                               ("I16.delete-order", "H.completion-found")),
    "version-before-manifest": Variant(Design("version-before-manifest", version_before_manifest=True),
                                       "_version_ rewritten before the manifest it names exists",
                                       ("I15.version-is-latest", "I15.manifest-complete")),
    "non-consecutive-compaction": Variant(Design("non-consecutive-compaction", compaction="every-other"),
                                          "LSM compaction merges every other file of a level",
                                          ("I15.compaction-shape",)),
    "early-trigger": Variant(Design("early-trigger", trigger_at_min=True),
                             "archival triggers once commits exceed keep.min (not keep.max)", ("I16.trigger",)),
    "archive-below-min": Variant(Design("archive-below-min", ignore_keep_min=True),
                                 "every eligible commit is archived, leaving fewer than keep.min",
                                 ("I16.keeps-min",)),
    "archive-past-savepoint": Variant(Design("archive-past-savepoint", ignore_savepoint=True),
                                      "the first savepoint does not stop archival", ("I16.savepoint",)),
    "lagging-archiver": Variant(Design("lagging-archiver", max_per_run=1),
                                "one commit archived per run: the active timeline outgrows keep.max + batch",
                                ("H.active-bounded",)),
    "lookup-misses-archived": Variant(Design("lookup-misses-archived", lookup_history=False),
                                      "completion-time lookups read the active timeline only (no LSM, no "
                                      "isArchived): logs of archived deltacommits look uncommitted and the "
                                      "compaction plan drops them",
                                      ("H.completion-found", "H.reads-preserved", "H.no-write-lost")),
}


class ArchivalConfigError(ModelError):
    """An impossible archival setting; ``key`` is the Hudi configuration key."""

    def __init__(self, key: str, problem: str):
        self.key, self.problem = key, problem
        super().__init__(key, problem)

    def __str__(self) -> str:
        return f"{self.key}: {self.problem}"


@dataclass(frozen=True)
class ArchivalConfig:
    """``HoodieArchivalConfig`` / ``HoodieCleanConfig`` keys that archival reads (Spark defaults)."""

    max_commits: int = 30            # hoodie.keep.max.commits
    min_commits: int = 20            # hoodie.keep.min.commits
    batch: int = 10                  # hoodie.commits.archival.batch
    beyond_savepoint: bool = False   # hoodie.archive.beyond.savepoint
    compaction_batch: int = 10       # hoodie.timeline.compaction.batch.size
    cleaner_commits_retained: int = 10  # hoodie.cleaner.commits.retained
    manifests_retained: int = lsm.MANIFESTS_RETAINED

    KEYS = {
        "max_commits": "hoodie.keep.max.commits", "min_commits": "hoodie.keep.min.commits",
        "batch": "hoodie.commits.archival.batch", "compaction_batch": "hoodie.timeline.compaction.batch.size",
        "cleaner_commits_retained": "hoodie.cleaner.commits.retained",
        "manifests_retained": "hoodie.timeline.manifest.retained.versions",
    }

    def validate(self) -> "ArchivalConfig":
        """The checks of ``HoodieWriteConfig.Builder#validate`` / ``HoodieArchivalConfig`` (the model refuses what
        Hudi refuses, and what cannot work: a batch of 0, a compaction of fewer than 2 files)."""
        for f in ("max_commits", "min_commits", "batch", "manifests_retained"):
            if not isinstance(getattr(self, f), int) or getattr(self, f) < 1:
                raise ArchivalConfigError(self.KEYS[f], f"must be an integer >= 1, got {getattr(self, f)!r}")
        if not isinstance(self.compaction_batch, int) or self.compaction_batch < 2:
            raise ArchivalConfigError(self.KEYS["compaction_batch"],
                                      f"must be an integer >= 2 (a compaction merges >= 2 files), got {self.compaction_batch!r}")
        if self.min_commits >= self.max_commits:
            raise ArchivalConfigError(self.KEYS["max_commits"],
                                      f"must be greater than hoodie.keep.min.commits={self.min_commits}, "
                                      f"got {self.max_commits}")
        if self.cleaner_commits_retained < 0 or self.min_commits <= self.cleaner_commits_retained:
            raise ArchivalConfigError(self.KEYS["min_commits"],
                                      f"must be greater than hoodie.cleaner.commits.retained="
                                      f"{self.cleaner_commits_retained}, got {self.min_commits}")
        return self


#: Flink's defaults (``FlinkOptions.ARCHIVE_MAX_COMMITS`` 50, ``ARCHIVE_MIN_COMMITS`` 40, ``CLEAN_RETAIN_COMMITS`` 30).
FLINK = ArchivalConfig(max_commits=50, min_commits=40, cleaner_commits_retained=30)
PRESETS = {"spark": ArchivalConfig(), "flink": FLINK}


@dataclass(frozen=True)
class RetentionContext:
    """What the decision needs beyond the active timeline.

    ``compaction_num_commits``: MOR with a NUM_COMMITS / NUM_AND_TIME compaction trigger (retention 2);
    ``mdt_enabled`` / ``mdt_latest_compaction``: the metadata table and the completion time of its latest compaction
    (retention 4); ``clean_earliest_retain``: the clean plan's earliest commit to retain (retention 6).
    """

    compaction_num_commits: bool = False
    mdt_enabled: bool = False
    mdt_latest_compaction: str | None = None
    clean_earliest_retain: str | None = None


def completed_commits(tl: Timeline) -> list[Instant]:
    """``getCompletedCommitsTimeline``: completed commit/deltacommit/replacecommit instants, ascending."""
    return [i for i in tl.completed() if i.shown_action in COMMIT_ACTIONS]


def earliest_instant_to_retain(tl: Timeline, ctx: RetentionContext, design: Design = HUDI) -> tuple[str | None, tuple[tuple[str, str], ...], bool]:
    """``#getCommitInstantsToArchive`` step 1: the smallest candidate (None: no bound), every candidate as
    (reason, instant), and whether the metadata table forbids archiving at all."""
    commits = completed_commits(tl)
    cands: list[tuple[str, str]] = []
    writes = tl.write_timeline()
    pending = [i for i in writes if i.is_pending]
    if pending and not design.ignore_pending_write:  # (1)
        p = pending[0].requested_time
        before = [c.requested_time for c in commits if c.requested_time < p]
        cands.append(("earliest-pending-write", before[-1] if before else p))
    if ctx.compaction_num_commits:  # (2)
        done = [i for i in tl.completed() if i.action is Action.COMPACTION]
        if done:
            cands.append(("compaction-retention", done[-1].requested_time))
        else:
            deltas = [i.requested_time for i in commits if i.shown_action is Action.DELTACOMMIT]
            if deltas:
                cands.append(("compaction-retention", deltas[0]))
    clus = [i for i in writes if i.is_pending and i.action in (Action.CLUSTERING, Action.REPLACECOMMIT)]
    if clus:  # (3)
        cands.append(("clustering-retention", clus[0].requested_time))
    if ctx.mdt_enabled:  # (4)
        if ctx.mdt_latest_compaction is None:
            return None, tuple(cands), True
        after = sorted((c for c in commits if c.completion_time and c.completion_time > ctx.mdt_latest_compaction),
                       key=lambda c: (c.completion_time, c.requested_time))
        if after:
            cands.append(("metadata-table-compaction", after[0].requested_time))
    if ctx.clean_earliest_retain is not None:  # (6)
        cands.append(("clean-retention", ctx.clean_earliest_retain))
    bound = min((t for _, t in cands), default=None)
    return bound, tuple(cands), False


@dataclass(frozen=True)
class ArchivalDecision:
    """What one archival run decides and why."""

    commits: int                      # completed commits on the active timeline
    triggered: bool                   # commits > keep.max
    earliest_to_retain: str | None
    retention: tuple[tuple[str, str], ...]
    first_savepoint: str | None
    commits_to_archive: tuple[Instant, ...]
    to_archive: tuple[Instant, ...]   # commits + clean/rollback, ascending by requested time
    why: str

    @property
    def archives(self) -> bool:
        return bool(self.to_archive)


def decide(tl: Timeline, cfg: ArchivalConfig, ctx: RetentionContext = RetentionContext(),
           design: Design = HUDI) -> ArchivalDecision:
    """``TimelineArchiverV2#getInstantsToArchive`` over a model timeline."""
    commits = completed_commits(tl)
    n = len(commits)
    if n <= (cfg.min_commits if design.trigger_at_min else cfg.max_commits):
        return ArchivalDecision(n, False, None, (), None, (), (), f"{n} completed commits <= keep.max {cfg.max_commits}")
    bound, cands, mdt_blocks = earliest_instant_to_retain(tl, ctx, design)
    if mdt_blocks:
        return ArchivalDecision(n, True, None, cands, None, (), (), "no compaction yet on the metadata table")
    sps = [i.requested_time for i in tl.completed([Action.SAVEPOINT])]
    first_sp = sps[0] if sps else None
    out = []
    for c in commits:
        if cfg.beyond_savepoint:
            if c.requested_time in sps:
                continue
        elif first_sp is not None and c.requested_time >= first_sp and not design.ignore_savepoint:
            continue
        if bound is not None and c.requested_time >= bound:
            continue
        out.append(c)
    out = out[:n - (0 if design.ignore_keep_min else cfg.min_commits)]
    if design.max_per_run is not None:
        out = out[:design.max_per_run]
    extra = []
    if out:
        last = out[-1].requested_time
        extra = [i for i in tl.completed([Action.CLEAN, Action.ROLLBACK]) if i.requested_time < last]
    to_archive = tuple(sorted(out + extra, key=lambda i: (i.requested_time, i.action.value)))
    why = (f"{n} completed commits > keep.max {cfg.max_commits}: archive {len(out)} commits (down to keep.min "
           f"{cfg.min_commits}) before {bound or 'no bound'}"
           + (f", stopping at savepoint {first_sp}" if first_sp and not cfg.beyond_savepoint else "")
           + (f", and {len(extra)} clean/rollback" if extra else ""))
    return ArchivalDecision(n, True, bound, cands, first_sp, tuple(out), to_archive, why)


def v1_blocks(instants: Iterable[Instant], batch: int) -> list[tuple[Instant, ...]]:
    """tv6 ``TimelineArchiverV1``: records appended to the archived log in blocks of ``hoodie.commits.archival.batch``."""
    xs = list(instants)
    return [tuple(xs[i:i + batch]) for i in range(0, len(xs), batch)]


# ------------------------------------------------------------------------------------------- the state
@dataclass(frozen=True, order=True)
class ActiveFile:
    """One state file of the active timeline."""

    requested_time: str
    action: Action
    state: State
    completion_time: str | None = None


@dataclass(frozen=True)
class DeleteActiveFile:
    """``HoodieActiveTimeline#deleteInstantFileIfExists`` of one archived state file."""

    file: ActiveFile
    kind: str = "delete-active-file"


@dataclass(frozen=True)
class CompactLevel:
    """``LSMTimelineWriter#compactAndClean`` at ``level``: expands into the compaction's steps, then the next
    level, and ends with :class:`CleanLSM` (``compacted`` layers so far)."""

    level: int = 0
    kind: str = "compact-level"


@dataclass(frozen=True)
class CleanLSM:
    """``LSMTimelineWriter#clean(context, compactedVersions)``: expands into the deletions."""

    compacted_layers: int = 0
    kind: str = "clean-lsm"


JobStep = lsm.Step | DeleteActiveFile | CompactLevel | CleanLSM


@dataclass(frozen=True)
class HistoryState:
    """Active timeline files, the LSM timeline, the running archival job.

    ``deleted``: the active files the running (or last) job deleted, in order (a history variable for I16's
    deletion order); ``archived``: the instants the last decision chose (history variable).
    """

    active: frozenset[ActiveFile] = frozenset()
    lsm: lsm.LSMState = lsm.EMPTY
    job: tuple[JobStep, ...] = ()
    deleted: tuple[ActiveFile, ...] = ()
    table_version: int = 8


def active_timeline(s: HistoryState) -> Timeline:
    """The active timeline a reader rebuilds from the state files present (``Timeline.load``)."""
    tl = Timeline(s.table_version)
    by: dict[tuple, list[ActiveFile]] = {}
    for f in s.active:
        by.setdefault((f.requested_time, f.action), []).append(f)
    for (rt, action), fs in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1].value)):
        ct = next((f.completion_time for f in fs if f.state is State.COMPLETED), None)
        tl.load(rt, action, {f.state for f in fs}, ct)
    return tl


def _files_of(s: HistoryState, i: Instant) -> list[ActiveFile]:
    return [f for f in s.active if f.requested_time == i.requested_time and f.action is i.action]


def plan(s: HistoryState, cfg: ArchivalConfig, ctx: RetentionContext = RetentionContext(), design: Design = HUDI
         ) -> tuple[ArchivalDecision, tuple[JobStep, ...]]:
    """``#archiveIfRequired``: the decision and its steps -- the L0 write and manifest commit, the active-file
    deletions (pending states first, then completed ones ascending), then ``compactAndClean``."""
    d = decide(active_timeline(s), cfg, ctx, design)
    if not d.archives:
        return d, ()
    recs = [lsm.LSMRecord(i.requested_time, i.completion_time or i.requested_time, i.shown_action.value)
            for i in d.to_archive]
    files = [f for i in d.to_archive for f in _files_of(s, i)]
    pending = sorted(f for f in files if f.state is not State.COMPLETED)
    done = sorted(f for f in files if f.state is State.COMPLETED)
    order = done + pending if design.completed_first else pending + done
    steps = (lsm.write_steps(recs, design.version_before_manifest) + tuple(DeleteActiveFile(f) for f in order)
             + (CompactLevel(0),))
    return d, steps


def start(s: HistoryState, cfg: ArchivalConfig, ctx: RetentionContext = RetentionContext(), design: Design = HUDI
          ) -> tuple[ArchivalDecision, HistoryState]:
    """Begin an archival run (``archiveIfRequired`` under the table lock): the job is the planned steps."""
    if s.job:
        raise ArchivalStepRefused("start", "an archival job is running")
    d, steps = plan(s, cfg, ctx, design)
    return d, replace(s, job=steps, deleted=())


class ArchivalStepRefused(ModelError):
    def __init__(self, kind: str, why: str):
        self.kind, self.why = kind, why
        super().__init__(kind, why)

    def __str__(self) -> str:
        return f"[{self.kind}] {self.why}"


def guard(s: HistoryState, st: JobStep) -> str | None:
    """None when ``st`` may run now, else why not."""
    if isinstance(st, DeleteActiveFile):
        return None if st.file in s.active else f"{st.file} is not on the active timeline"
    if isinstance(st, (CompactLevel, CleanLSM)):
        return None
    return lsm.guard(s.lsm, st)


def apply(s: HistoryState, st: JobStep, cfg: ArchivalConfig = ArchivalConfig(), design: Design = HUDI
          ) -> HistoryState:
    """Run ``st`` (not necessarily the job's head: drivers normally use :func:`step`). ``CompactLevel`` and
    ``CleanLSM`` change no file: they put their concrete steps at the head of the job."""
    why = guard(s, st)
    if why is not None:
        raise ArchivalStepRefused(st.kind, why)
    if isinstance(st, DeleteActiveFile):
        return replace(s, active=s.active - {st.file}, deleted=s.deleted + (st.file,))
    if isinstance(st, CompactLevel):
        steps, did = lsm.compact_steps(s.lsm, st.level, cfg.compaction_batch, lsm.CANDIDATE_RULES[design.compaction],
                                       design.version_before_manifest)
        more = (CompactLevel(st.level + 1),) if did else (CleanLSM(st.level),)
        return replace(s, job=steps + more + s.job)
    if isinstance(st, CleanLSM):
        return replace(s, job=lsm.clean_steps(s.lsm, st.compacted_layers, cfg.manifests_retained) + s.job)
    return replace(s, lsm=lsm.apply(s.lsm, st))


def step(s: HistoryState, cfg: ArchivalConfig = ArchivalConfig(), design: Design = HUDI) -> HistoryState:
    """Run the job's next step."""
    if not s.job:
        raise ArchivalStepRefused("step", "no archival job is running")
    head, rest = s.job[0], s.job[1:]
    return apply(replace(s, job=rest), head, cfg, design)


def crash(s: HistoryState) -> HistoryState:
    """The archiving process dies: the steps left are lost; storage stays as it is."""
    return replace(s, job=())


def run_to_end(s: HistoryState, cfg: ArchivalConfig = ArchivalConfig(), design: Design = HUDI) -> HistoryState:
    while s.job:
        s = step(s, cfg, design)
    return s


def archive(s: HistoryState, cfg: ArchivalConfig = ArchivalConfig(), ctx: RetentionContext = RetentionContext(),
            design: Design = HUDI) -> tuple[ArchivalDecision, HistoryState]:
    """A whole archival run without crashes."""
    d, s = start(s, cfg, ctx, design)
    return d, run_to_end(s, cfg, design)


__all__ = [
    "Design", "HUDI", "Variant", "VARIANTS", "COMMIT_ACTIONS", "ArchivalConfig", "ArchivalConfigError", "FLINK", "PRESETS", "RetentionContext",
    "completed_commits", "earliest_instant_to_retain", "ArchivalDecision", "decide", "v1_blocks", "ActiveFile",
    "DeleteActiveFile", "CompactLevel", "CleanLSM", "HistoryState", "active_timeline", "plan", "start",
    "ArchivalStepRefused", "guard", "apply", "step", "crash", "run_to_end", "archive",
]
