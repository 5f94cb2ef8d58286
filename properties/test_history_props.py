"""The timeline's history under Hypothesis: writers + archiver + LSM compactor + readers, crashes at every step.

:func:`machine_for` builds a ``RuleBasedStateMachine`` over the spec (:mod:`model.archival`, :mod:`model.lsm`,
:mod:`model.completion_time`, :mod:`model.slicing`) for one archiver design (:data:`model.archival.VARIANTS`).
A MOR table of two file groups: writers start deltacommits (a log file each), complete or roll them back;
compactions are planned with the completion-time lookup (``FileSystemView.compaction_plan_files``) and run;
cleans add instants; every completed commit runs inline archival (``autoArchiveOnCommit``) under the table lock,
one storage step at a time, and the archiver may crash between any two steps; ``_version_`` may be unreadable
and temp manifests may be left behind.

After every step the machine checks :mod:`model.invariants.history`: I15 (state and step), I16 (state, decision,
deletion order), ``H.completion-found`` (every instant ever completed is found with its completion time, before,
during and after archival), ``H.reads-preserved`` (snapshot and incremental reads planned with the history equal
those on the timeline with nothing archived, the "ghost"), ``H.no-write-lost``, and ``H.active-bounded`` when an
archival run ends. A violation raises :class:`HistoryViolation` with the run's steps; Hypothesis shrinks the run,
so the message holds the shortest counterexample it found, and the seed to replay it.

``ci`` profile: a few seconds; ``HYPOTHESIS_PROFILE=deep``: more and longer runs.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from model import archival as A, lsm
from model.completion_time import CompletionTimeQueryView, Lookup
from model.errors import ModelError
from model.filenames import BaseFile, LogFile
from model.instant import Action, State, format_millis
from model.invariants import history as H
from model.slicing import FileSystemView

#: Small bounds so archival, LSM compaction (2 files a level) and cleaning happen within a few dozen steps.
SMALL = A.ArchivalConfig(max_commits=4, min_commits=2, batch=2, compaction_batch=2, cleaner_commits_retained=1,
                         manifests_retained=1).validate()
GROUPS = ("fg1", "fg2")
TOKEN = "1-0-1"
T0 = 1_760_000_000_000
#: the seed of the catching runs (printed with every counterexample; HISTORY_SEED=N replays another)
SEED = int(os.environ.get("HISTORY_SEED", "20261125"))
STEPS = {"count": 0}


class LoadedView(CompletionTimeQueryView):
    """The spec's lookup with the history below the cursor loaded once (``loadCompletionTimeIncrementally`` loads
    lazily; the answers are the same, ``tests/test_history_scenarios.py`` checks it): the suites call it thousands
    of times per run."""

    def __init__(self, timeline, history, *, use_history=True):
        super().__init__(timeline, history, use_history=use_history)
        self._loaded = None

    def lookup(self, instant):
        if not self.use_history or (self.cursor is not None and instant >= self.cursor) \
                or instant in self._completion:
            return super().lookup(instant)
        if self._loaded is None:
            self._loaded = {r.instant_time: r.completion_time for r in lsm.load_instants(self.history, None,
                                                                                         self.cursor)[0]}
        c = self._loaded.get(instant)
        return Lookup(c, "history" if c is not None else "missing", ())


class HistoryViolation(AssertionError):
    def __init__(self, invariant: str, detail: str, steps: list[str], design: str):
        self.invariant, self.detail, self.steps, self.design = invariant, detail, list(steps), design
        lines = "\n".join(f"  {i + 1:>2}. {s}" for i, s in enumerate(steps))
        super().__init__(f"[{design}] {invariant} violated: {detail}\nafter {len(steps)} steps:\n{lines}\n"
                         f"replay: HISTORY_SEED={SEED} HISTORY_SHRINK=1 pytest -s properties/test_history_broken.py "
                         f"(the suite: pytest --hypothesis-seed=N, or the @reproduce_failure blob printed above)")


class HistoryMachine(RuleBasedStateMachine):
    design: A.Design = A.HUDI
    cfg: A.ArchivalConfig = SMALL
    ctx: A.RetentionContext = A.RetentionContext()
    only: frozenset | None = None  # check only these invariants (None: all)

    def __init__(self):
        super().__init__()
        self.clock = 0
        self.hs = A.HistoryState(table_version=8)
        self.ghost: frozenset[A.ActiveFile] = frozenset()
        self.bases: set[BaseFile] = set()
        self.logs: set[LogFile] = set()
        self.contents: dict[str, frozenset[str]] = {}
        self.plans: dict[str, dict] = {}       # pending compaction tc -> {group id: planned slice}
        self.expected: dict[str, str] = {}     # requested -> completion time of every instant ever completed
        self.records: set[str] = set()         # record ids of completed writes
        self.pending_writes: list[str] = []    # pending deltacommits
        self.steps: list[str] = []
        self._tl_of, self._tl = None, None
        # the initial commit writes one base file per group
        t0 = self._instant(Action.COMMIT)
        for g in GROUPS:
            b = BaseFile(g, TOKEN, t0)
            self.bases.add(b)
            self.contents[b.name] = frozenset({f"{g}@{t0}"})
            self.records.add(f"{g}@{t0}")
        self._complete(t0, Action.COMMIT)

    # ------------------------------------------------------------------------------ helpers
    def _t(self) -> str:
        self.clock += 1
        return format_millis(T0 + self.clock)

    def _add(self, *files: A.ActiveFile) -> None:
        self.hs = A.HistoryState(self.hs.active | set(files), self.hs.lsm, self.hs.job, self.hs.deleted, 8)
        self.ghost = self.ghost | set(files)

    def _remove(self, rt: str, action: Action) -> None:
        keep = lambda fs: frozenset(f for f in fs if not (f.requested_time == rt and f.action is action))  # noqa: E731
        self.hs = A.HistoryState(keep(self.hs.active), self.hs.lsm, self.hs.job, self.hs.deleted, 8)
        self.ghost = keep(self.ghost)

    def _instant(self, action: Action) -> str:
        rt = self._t()
        first = State.INFLIGHT if action is Action.SAVEPOINT else State.REQUESTED
        self._add(A.ActiveFile(rt, action, first))
        if action is not Action.COMPACTION:
            self._add(A.ActiveFile(rt, action, State.INFLIGHT))
        return rt

    def _complete(self, rt: str, action: Action) -> None:
        ct = self._t()
        self._add(A.ActiveFile(rt, action, State.COMPLETED, ct))
        self.expected[rt] = ct

    def _lock_free(self) -> bool:
        return not self.hs.job

    def _auto_archive(self) -> None:
        """``BaseHoodieWriteClient#autoArchiveOnCommit``: inline archival after a commit, under the table lock."""
        d, self.hs = A.start(self.hs, self.cfg, self.ctx, self.design)
        self._check(H.decision_verdicts(d, self.cfg))
        if d.archives:
            self.steps.append(f"archival starts: {d.why}")

    def _view(self, history: bool) -> FileSystemView:
        pc = {(("", g) if isinstance(g, str) else tuple(g)): tc for tc, plan in self.plans.items() for g in plan}
        if history:
            tl = self._timeline()
            times = LoadedView(tl, self.hs.lsm, use_history=self.design.lookup_history)
            return FileSystemView(tl, self.bases, self.logs, pending_compactions=pc, times=times)
        gtl = A.active_timeline(A.HistoryState(self.ghost, table_version=8))
        return FileSystemView(gtl, self.bases, self.logs, pending_compactions=pc)

    def _check(self, verdicts) -> None:
        for v in verdicts:
            if not v.holds and (self.only is None or v.invariant in self.only):
                raise HistoryViolation(v.invariant, v.detail, self.steps, self.design.name)

    # ------------------------------------------------------------------------------ writers
    @precondition(lambda self: len(self.pending_writes) < 2)
    @rule(g=st.sampled_from(GROUPS))
    def write(self, g):
        rt = self._instant(Action.DELTACOMMIT)
        lg = LogFile(g, rt, 1, TOKEN)
        self.logs.add(lg)
        self.contents[lg.name] = frozenset({f"{g}@{rt}"})
        self.pending_writes.append(rt)
        self.steps.append(f"write deltacommit {rt} -> log of {g}")

    @precondition(lambda self: self.pending_writes and not self.hs.job)
    @rule(i=st.integers(0, 1))
    def complete_write(self, i):
        rt = self.pending_writes.pop(i % len(self.pending_writes))
        self._complete(rt, Action.DELTACOMMIT)
        self.records |= {r for lg in self.logs if lg.instant_time == rt for r in self.contents[lg.name]}
        self.steps.append(f"complete deltacommit {rt}")
        self._auto_archive()

    @precondition(lambda self: not self.hs.job)
    @rule(g=st.sampled_from(GROUPS))
    def write_and_complete(self, g):
        """A whole deltacommit in one step (so runs reach archival, LSM compaction and cleaning quickly)."""
        self.write(g)
        self.complete_write(len(self.pending_writes) - 1)

    @precondition(lambda self: not self.hs.job)
    @rule(k=st.integers(1, 6), g=st.sampled_from(GROUPS))
    def commits_with_archival(self, k, g):
        """``k`` whole deltacommits, each followed by its inline archival run to the end (checked after every
        archiver step): long histories in one rule, while the other rules interleave crashes and writers."""
        for _ in range(k):
            self.write_and_complete(g)
            while self.hs.job:
                self.archive_step()
                self.history_holds(reads=False)

    @precondition(lambda self: self.pending_writes and not self.hs.job)
    @rule(i=st.integers(0, 1))
    def rollback_write(self, i):
        rt = self.pending_writes.pop(i % len(self.pending_writes))
        self._remove(rt, Action.DELTACOMMIT)
        self.logs = {lg for lg in self.logs if lg.instant_time != rt}
        rb = self._instant(Action.ROLLBACK)
        self._complete(rb, Action.ROLLBACK)
        self.steps.append(f"roll back deltacommit {rt} (rollback {rb})")

    @precondition(lambda self: not self.plans and not self.hs.job)
    @rule()
    def schedule_compaction(self):
        tc = self._t()
        try:
            plan = self._view(history=True).compaction_plan_files(tc)
        except ModelError as e:
            self.steps.append(f"compaction at {tc} not scheduled: {e}")
            return
        if not plan:
            return
        self._add(A.ActiveFile(tc, Action.COMPACTION, State.REQUESTED))
        self.plans[tc] = {g.file_id: s for g, s in plan.items()}
        self.steps.append(f"schedule compaction {tc}: " + ", ".join(
            f"{g} <- {[lg.instant_time for lg in s.log_files]}" for g, s in sorted(self.plans[tc].items())))

    @precondition(lambda self: self.plans and not self.hs.job)
    @rule()
    def run_compaction(self):
        tc, plan = next(iter(self.plans.items()))
        self._add(A.ActiveFile(tc, Action.COMPACTION, State.INFLIGHT))
        for g, s in plan.items():
            content = set(self.contents.get(s.base_file.name, ())) if s.base_file else set()
            for lg in s.log_files:
                content |= self.contents[lg.name]
            b = BaseFile(g, TOKEN, tc)
            self.bases.add(b)
            self.contents[b.name] = frozenset(content)
        del self.plans[tc]
        self._complete(tc, Action.COMPACTION)
        self.steps.append(f"run + complete compaction {tc}")
        self._auto_archive()

    @precondition(lambda self: not self.hs.job)
    @rule()
    def clean(self):
        c = self._instant(Action.CLEAN)
        self._complete(c, Action.CLEAN)
        self.steps.append(f"clean {c}")

    # ------------------------------------------------------------------------------ archiver
    @precondition(lambda self: bool(self.hs.job))
    @rule(n=st.integers(1, 6))
    def archive_steps(self, n):
        """Several archiver steps (a crash can still fall between any two: ``n`` = 1 is one step)."""
        for _ in range(n):
            if self.hs.job:
                self.archive_step()
                self.history_holds()

    @precondition(lambda self: bool(self.hs.job))
    @rule()
    def archive_step(self):
        before = self.hs
        head = before.job[0]
        try:
            self.hs = A.step(before, self.cfg, self.design)
        except ModelError as e:
            self.hs = A.crash(before)
            self.steps.append(f"archiver step {head.kind} refused ({e}); the archival fails")
            if self.design == A.HUDI:
                raise AssertionError(f"Hudi's archiver was refused a step: {e}") from None
            return
        STEPS["count"] += 1
        self.steps.append(f"archiver: {_describe(head)}")
        self._check(H.lsm_step_verdicts(before.lsm, self.hs.lsm))
        if not self.hs.job:
            self.steps.append("archival run ends")
            self._check([H.active_bounded(A.active_timeline(self.hs), self.cfg, self.ctx)])

    @precondition(lambda self: bool(self.hs.job))
    @rule()
    def crash_archiver(self):
        self.hs = A.crash(self.hs)
        self.steps.append("archiver crashes")

    @precondition(lambda self: self.hs.lsm.version is not None and self.hs.lsm.version_readable)
    @rule()
    def corrupt_version_file(self):
        self.hs = A.HistoryState(self.hs.active, lsm.LSMState(self.hs.lsm.files, self.hs.lsm.manifests,
                                                              self.hs.lsm.version, False, self.hs.lsm.temp),
                                 self.hs.job, self.hs.deleted, 8)
        self.steps.append("_version_ becomes unreadable")

    @precondition(lambda self: len(self.hs.lsm.temp) < 1)
    @rule()
    def leave_temp_manifest(self):
        v = lsm.latest_version(self.hs.lsm) + 1
        self.hs = A.HistoryState(self.hs.active, lsm.LSMState(self.hs.lsm.files, self.hs.lsm.manifests,
                                                              self.hs.lsm.version, self.hs.lsm.version_readable,
                                                              (f"manifest_{max(v, 1)}.tmp",)),
                                 self.hs.job, self.hs.deleted, 8)
        self.steps.append("a temp manifest is left behind")

    # ------------------------------------------------------------------------------ readers
    def _wants(self, *names: str) -> bool:
        return self.only is None or any(n in self.only for n in names)

    def _timeline(self):
        """The active timeline of the current state (rebuilt once per state)."""
        if self._tl_of is not self.hs:
            self._tl_of, self._tl = self.hs, A.active_timeline(self.hs)
        return self._tl

    @invariant()
    def history_holds(self, reads: bool = True):
        if self._wants("I15.version-is-latest", "I15.manifest-complete", "I16.keeps-min",
                       "I16.before-earliest-pending", "I16.savepoint", "I16.delete-order"):
            self._check(H.history_verdicts(self.hs, self.cfg))
        if self._wants("H.completion-found"):
            view = LoadedView(self._timeline(), self.hs.lsm, use_history=self.design.lookup_history)
            self._check([H.completion_found(view, self.expected)])
        if not reads or not self._wants("H.reads-preserved", "H.no-write-lost"):
            return
        try:
            hist = self._view(history=True)
        except ModelError as e:
            self._check([H.Verdict("H.reads-preserved", False, f"history unreadable: {e}")])
            return
        if self._wants("H.reads-preserved"):
            ghost = self._view(history=False)
            cts = sorted(self.expected.values())
            ranges = [(None, None), (cts[len(cts) // 2], None)]
            self._check([H.reads_preserved(hist, ghost, ranges)])
        self._check([H.no_write_lost(hist.snapshot_read(), self.contents, self.records)])


def _describe(st_) -> str:
    if isinstance(st_, A.DeleteActiveFile):
        f = st_.file
        return f"delete {f.requested_time}.{f.action.value}.{f.state.label}"
    if isinstance(st_, lsm.WriteDataFile):
        return f"write {st_.name}"
    if isinstance(st_, lsm.WriteManifest):
        return f"write manifest (+{st_.add}, -{list(st_.remove)})"
    if isinstance(st_, lsm.DeleteManifest):
        return f"delete manifest_{st_.version}"
    if isinstance(st_, lsm.DeleteDataFile):
        return f"delete {st_.name}"
    return st_.kind


def machine_for(name: str, only=None, cfg: A.ArchivalConfig = SMALL,
                ctx: A.RetentionContext = A.RetentionContext()) -> type[HistoryMachine]:
    """The machine for the design of variant ``name`` (:data:`model.archival.VARIANTS`)."""
    v = A.VARIANTS[name]
    return type(f"HistoryMachine_{name.replace('-', '_')}", (HistoryMachine,),
                {"design": v.design, "cfg": cfg, "ctx": ctx, "only": None if only is None else frozenset(only)})


#: Shrink counterexamples? Finding one takes well under a second, shrinking it 5-30 s; so the ci profile shrinks
#: only where a test asks (``shrink=True``), the deep profile (or ``HISTORY_SHRINK=1``) always.
SHRINK = os.environ.get("HISTORY_SHRINK") == "1" or os.environ.get("HYPOTHESIS_PROFILE") == "deep"


def catch_settings(max_examples: int = 400, steps: int = 40, shrink: bool | None = None) -> settings:
    phases = [Phase.generate, Phase.shrink] if (SHRINK if shrink is None else shrink) else [Phase.generate]
    return settings(max_examples=max_examples, stateful_step_count=steps, deadline=None, database=None,
                    report_multiple_bugs=False, phases=phases, suppress_health_check=list(HealthCheck))


def find_counterexample(name: str, only=None, max_examples: int = 400, steps: int = 40,
                        shrink: bool | None = None) -> HistoryViolation | None:
    """Run the machine of a (broken) design with the fixed :data:`SEED`; the violation (shrunk when asked or under
    the deep profile; printed with the seed), or None."""
    machine = seed(SEED)(machine_for(name, only))
    try:
        run_state_machine_as_test(machine, settings=catch_settings(max_examples, steps, shrink))
    except HistoryViolation as exc:
        print(f"seed {SEED}: {exc}")
        return exc
    return None


# ------------------------------------------------------------------------------ the suite (Hudi's design)
#: ci: 25 runs of <= 40 steps each (a few seconds); deep: the profile's (2000 runs of <= 200 steps)
_SUITE = None if os.environ.get("HYPOTHESIS_PROFILE") == "deep" else 25

TestHistoryHudi = machine_for("hudi").TestCase


class _Compaction(HistoryMachine):
    """Hudi's design with MOR compaction retention (NUM_COMMITS trigger): deltacommits after the last compaction
    stay on the active timeline."""

    ctx = A.RetentionContext(compaction_num_commits=True)


TestHistoryHudiCompactionRetention = _Compaction.TestCase
if _SUITE is not None:
    TestHistoryHudi.settings = settings(TestHistoryHudi.settings, max_examples=25)
    TestHistoryHudiCompactionRetention.settings = settings(TestHistoryHudiCompactionRetention.settings, max_examples=25)


def test_flink_defaults_machine_runs():
    """Flink's defaults (50/40) are a valid configuration and the machine runs under them (few archivals)."""
    m = machine_for("hudi", cfg=A.FLINK.validate())
    run_state_machine_as_test(m, settings=settings(max_examples=5, stateful_step_count=30, deadline=None))
