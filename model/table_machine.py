"""A small table-level state machine: writers, a compaction scheduler/executor and a clock acting on
one table's timeline and files, for bounded exhaustive exploration (``hoodie-lab explore --machine table``).

Every step is one named action ``(process, step)`` with a guard and an effect. The guard is
:func:`refusal` (``None`` when enabled, else a sentence saying why not); the effect is :func:`step`,
which returns a new :class:`TableState` (states are values: a step copies the timeline and the time
generator before changing them). The rules themselves are not restated here: each step calls the
rule modules of :mod:`model` -- :class:`model.timeline.Timeline` (create/inflight/complete guards,
put-if-absent vs overwrite storage), :mod:`model.truetime` (generating a time, completing under the
lock), :mod:`model.slicing` (which slice a tv6 log joins, what a compaction plan holds, the 0.x
scheduling guard) and :mod:`model.logblocks` (the blocks a log holds).

=====================  ======================================================  ==============================
action                 enabled when                                            effect
=====================  ======================================================  ==============================
``wN generate``        two-step publish, writer idle                           a requested time from the
                                                                               generator (``createNewInstantTime``)
``wN publish``         two-step, time generated                                requested file created
``wN start``           atomic publish, writer idle                             generate + create in one lock
                                                                               section
                                                                               (``BaseHoodieWriteClient#startCommit``
                                                                               in ``txnManager.beginTransaction``)
``wN write``           requested                                               inflight; a log file (tv6: in the
                                                                               slice before-or-on its time,
                                                                               ``getLatestFileSliceBeforeOrOn``;
                                                                               tv8: named after its own time)
``wN complete``        written                                                 completed file, completion time
                                                                               from ``consumeTime`` (lock held)
``c schedule``         compaction enabled, not yet scheduled, the 0.x guard    generate ``tc``, plan from the
                       (tv6) allows it, something to compact                   lookup, requested compaction
``c execute``          scheduled                                               inflight, base file ``tc``,
                                                                               completed (``consumeTime``)
``wN fail``            written, failures left                                  the writer dies before completing
``r rollback``         a failed writer not rolled back                         rollback instant ``trb``; tv6:
                                                                               a log with a ROLLBACK command
                                                                               block for ``tw`` (or none, see
                                                                               ``rollback``); tv8: the failed
                                                                               log deleted; ``tw`` deleted
``tick``               ticks left                                              true time + 1 ms
=====================  ======================================================  ==============================

A create that storage refuses (``I3.create-once`` on put-if-absent: another process created that
instant first) fails the writer (``HoodieIOException`` from ``createImmutableFileInPath``): it ends
``aborted``, and its generated time stays in the generator's history.

The design choices are the fields of :class:`TableConfig`; :mod:`model.table_variants` names the
combinations. The invariants checked in every state are :func:`verdicts`: the existing predicates of
:mod:`model.invariants.timeline` (``table_verdicts``: I1-I5 on the timeline including
``I3.single-writer``, I7/I6, I8 with the compaction plans' inputs, ``I8.log-blocks``, I9 -- by blocks
on tv6) and :func:`model.invariants.times.check_generation_order` over every generation.

Simplifications (for small, exhaustive bounds): one partition and one file group ``p/fg-0``; the
table starts with a completed deltacommit that wrote the base file and one that appended a log;
each writer makes one deltacommit (a log append, MOR); at most one compaction, run as one step;
at most ``failures`` writers fail (after writing their log), and the rollback process ``r`` (the next
writer's eager rollback or a clean, LAZY) rolls the oldest failed one back in one step.
"""

from __future__ import annotations

from . import machine
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import TimelineError
from .filenames import BaseFile, LogFile
from .instant import Action, format_millis
from .invariants.timeline import table_verdicts
from .invariants.times import check_generation_order
from .logblocks import data_block, rollback_block
from .slicing import FileGroupId, FileSystemView, compaction_inputs, compaction_schedule_refusal
from .timeline import PUT_IF_ABSENT, STORAGE_MODES, Timeline
from .truetime import (DEFAULT_EPOCH_MS, RESOLUTIONS_MS, Clock, NaiveGenerator, SkewAdjustingTimeGenerator,
                       TimeGeneratorConfig)

ATOMIC, TWO_STEP = "atomic", "two-step"
PUBLISH_MODES = (ATOMIC, TWO_STEP)
TRUETIME, NAIVE = "truetime", "naive"
GENERATORS = (TRUETIME, NAIVE)
SEES_ALL, MISSES_ONE = "sees-all", "misses-one"
PLAN_LOOKUPS = (SEES_ALL, MISSES_ONE)
COMMAND_BLOCK, NO_COMMAND_BLOCK = "command-block", "no-command-block"
ROLLBACK_MODES = (COMMAND_BLOCK, NO_COMMAND_BLOCK)
ROLLBACKER = "r"

FG = FileGroupId("p", "fg-0")
TOKEN = "0-1-1"
DC, CP = Action.DELTACOMMIT, Action.COMPACTION
COMPACTOR = "c"

#: Writer phases, in order.
IDLE, GENERATED, REQUESTED, WRITTEN, DONE, ABORTED = "idle", "generated", "requested", "written", "done", "aborted"
FAILED, ROLLED_BACK = "failed", "rolled-back"


def _t(offset_ms: int) -> str:
    """A time ``offset_ms`` from the generator's epoch (the initial instants are before it)."""
    return format_millis(DEFAULT_EPOCH_MS + offset_ms)


#: The initial table: deltacommit T_BASE wrote the base file, deltacommit T_LOG appended a log.
T_BASE, T_BASE_DONE, T_LOG, T_LOG_DONE = _t(-40), _t(-35), _t(-30), _t(-25)


@dataclass(frozen=True)
class TableConfig:
    """The design choices of one table machine and its bounds.

    ``clock_offsets_ms`` are the local clock offsets of the writers ``w1..wN`` then the compactor
    ``c`` (missing ones are 0). ``skew_wait_ms`` is TrueTime's ``max_expected_clock_skew_ms`` (the
    wait after reading the clock); the naive generator (0.x ``createNewInstantTime``) has no lock
    and no wait. ``max_ticks`` bounds how many 1 ms steps of true time may pass besides the waits.
    ``failures`` bounds how many writers may fail; ``rollback`` is how a tv6 rollback undoes a failed
    write's blocks in a shared slice: a ROLLBACK command block (``HoodieCommandBlock``, Hudi 0.x) or none
    (the instant deleted only, as tv8 does -- where the failed log file itself is deleted).
    """

    table_version: int = 8
    publish: str = ATOMIC
    storage: str = PUT_IF_ABSENT
    generator: str = TRUETIME
    clock_offsets_ms: tuple = ()
    skew_wait_ms: int = 2
    resolution_ms: int = 1
    plan_lookup: str = SEES_ALL
    writers: int = 1
    compaction: bool = True
    max_ticks: int = 1
    failures: int = 0
    rollback: str = COMMAND_BLOCK

    def __post_init__(self):
        object.__setattr__(self, "clock_offsets_ms", tuple(int(x) for x in self.clock_offsets_ms))
        checks = [
            (self.table_version in (6, 8), f"table_version must be 6 or 8, not {self.table_version!r}"),
            (self.publish in PUBLISH_MODES, f"publish must be one of {PUBLISH_MODES}, not {self.publish!r}"),
            (self.storage in STORAGE_MODES, f"storage must be one of {STORAGE_MODES}, not {self.storage!r}"),
            (self.generator in GENERATORS, f"generator must be one of {GENERATORS}, not {self.generator!r}"),
            (self.plan_lookup in PLAN_LOOKUPS, f"plan_lookup must be one of {PLAN_LOOKUPS}, not {self.plan_lookup!r}"),
            (self.resolution_ms in RESOLUTIONS_MS, f"resolution_ms must be one of {RESOLUTIONS_MS}"),
            (1 <= self.writers <= 4, f"writers must be 1..4, not {self.writers}"),
            (0 <= self.max_ticks <= 10, f"max_ticks must be 0..10, not {self.max_ticks}"),
            (0 <= self.failures <= self.writers, f"failures must be 0..writers, not {self.failures}"),
            (self.rollback in ROLLBACK_MODES, f"rollback must be one of {ROLLBACK_MODES}, not {self.rollback!r}"),
            (0 <= self.skew_wait_ms <= 2000, f"skew_wait_ms must be 0..2000, not {self.skew_wait_ms}"),
            (len(self.clock_offsets_ms) <= self.writers + 1,
             f"clock_offsets_ms names {len(self.clock_offsets_ms)} clocks; there are {self.writers + 1} processes"),
            (all(0 <= x <= 1000 for x in self.clock_offsets_ms), "clock offsets must be 0..1000 ms"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(msg)

    @property
    def processes(self) -> tuple[str, ...]:
        return tuple(f"w{i + 1}" for i in range(self.writers)) + (COMPACTOR,)

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class TableState:
    """One state of the machine. ``procs``: per process ``(name, phase, time)`` (the compactor's phases:
    idle, scheduled, done). ``tl`` and ``gen`` are never changed once the state exists (steps copy them);
    :meth:`fingerprint` is the hashable canonical form."""

    now: int
    ticks: int
    procs: tuple
    bases: tuple
    logs: tuple
    blocks: tuple          # ((LogFile, (LogBlock, ...)), ...)
    plans: tuple           # ((tc, ((gid, FileSlice), ...)), ...)
    tl: Timeline = field(compare=False, repr=False)
    gen: Any = field(compare=False, repr=False)

    def proc(self, name: str) -> tuple:
        return next(p for p in self.procs if p[0] == name)

    def fingerprint(self) -> tuple:
        timeline = tuple(sorted((i.requested_time, i.action.value, i.state.value, i.completion_time,
                                 tuple(sorted((s.value, w) for s, w in self.tl.writers_of(i.requested_time,
                                                                                         i.action).items())))
                                for i in self.tl.instants()))
        hist = tuple((r.process, r.time, r.acquired_at, r.released_at) for r in self.gen.history)
        return (self.now, self.ticks, self.procs, self.bases, self.logs, self.blocks, self.plans, timeline, hist,
                tuple(sorted(self.gen.last_time.items())), self.gen.lock.last_released_at)

    def pending_compactions(self) -> dict:
        done = {i.requested_time for i in self.tl.completed([CP])}
        return {gid: tc for tc, slices in self.plans if tc not in done for gid, _ in slices}

    def view(self, tl: Timeline | None = None) -> FileSystemView:
        return FileSystemView(tl or self.tl, self.bases, self.logs, pending_compactions=self.pending_compactions())


class Refused(Exception):
    """An action's guard refused it; the message says why."""


def _base(t: str) -> BaseFile:
    return BaseFile(FG.file_id, TOKEN, t, "parquet", FG.partition)


def initial_state(cfg: TableConfig) -> TableState:
    """The table before any process acts: base file of T_BASE and one log of T_LOG, both committed."""
    tl = Timeline(cfg.table_version, storage=cfg.storage)
    for t, c in ((T_BASE, T_BASE_DONE), (T_LOG, T_LOG_DONE)):
        tl.create(t, DC)
        tl.transition_to_inflight(t, DC)
        tl.complete(t, DC, c)
    log = LogFile(FG.file_id, T_BASE if cfg.table_version == 6 else T_LOG, 1, TOKEN, False, FG.partition)
    clocks = {p: Clock(offset_ms=o) for p, o in zip(cfg.processes, cfg.clock_offsets_ms)}
    if cfg.generator == NAIVE:
        gen = NaiveGenerator(clocks=clocks, resolution_ms=cfg.resolution_ms)
    else:
        gen = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=cfg.skew_wait_ms,
                                                             resolution_ms=cfg.resolution_ms), clocks=clocks)
    procs = tuple((p, IDLE, None) for p in cfg.processes) + ((ROLLBACKER, IDLE, None),)
    return TableState(0, 0, procs, (_base(T_BASE),), (log,), ((log, (data_block(T_LOG),)),), (), tl, gen)


# ------------------------------------------------------------------------------------------ actions
def candidate_actions(cfg: TableConfig) -> list[tuple[str, str]]:
    """Every action of the machine in a fixed order (the explorer needs a deterministic order)."""
    steps = ("generate", "publish", "write", "complete") if cfg.publish == TWO_STEP else ("start", "write", "complete")
    out = [(w, s) for w in cfg.processes[:-1] for s in steps]
    if cfg.failures:
        out += [(w, "fail") for w in cfg.processes[:-1]] + [(ROLLBACKER, "rollback")]
    if cfg.compaction:
        out += [(COMPACTOR, "schedule"), (COMPACTOR, "execute")]
    return out + [("clock", "tick")]


def format_action(action: tuple[str, str]) -> str:
    return "tick" if action == ("clock", "tick") else f"{action[0]} {action[1]}"


def _set(state: TableState, name: str, phase: str, time: str | None, **changes) -> TableState:
    procs = tuple((name, phase, time) if p[0] == name else p for p in state.procs)
    return replace(state, procs=procs, **changes)


def _generate(state: TableState, name: str) -> tuple[str, Any, int]:
    """A new time for ``name`` at true time ``now`` (``HoodieInstantTimeGenerator#createNewInstantTime`` /
    ``TimeGenerator#generateTime``); returns the time, the copied
    generator and the true time after the generation (its waits included)."""
    gen = state.gen.copy()
    rec = gen.generate(name, state.now)
    return rec.time, gen, max(state.now, rec.released_at)


def _publish(state: TableState, name: str, t: str, gen, now: int) -> TableState:
    """``ActiveTimelineV2#createNewInstant`` of the requested deltacommit (``createImmutableFileInPath``); a
    create storage refuses aborts the writer."""
    tl = state.tl.copy()
    try:
        tl.create(t, DC, by=name)
    except TimelineError as exc:
        if exc.rule != "I3.create-once":
            raise
        return _set(state, name, ABORTED, t, gen=gen, now=now)
    return _set(state, name, REQUESTED, t, tl=tl, gen=gen, now=now)


def _write(state: TableState, name: str, t: str) -> TableState:
    """``ActiveTimelineV2#transitionRequestedToInflight``, then the log append: tv6 names the log after the
    slice before-or-on ``t`` (``AbstractTableFileSystemView#getLatestFileSliceBeforeOrOn`` via
    ``FileSystemView.slice_for_write``) and appends a new version; tv8 names it ``t``."""
    tl = state.tl.copy()
    tl.transition_to_inflight(t, DC, by=name)
    if state.tl.table_version == 6:
        key = state.view().slice_for_write(FG, t)
        version = 1 + sum(1 for lf in state.logs if lf.instant_time == key)
    else:
        key, version = t, 1 + sum(1 for lf in state.logs if lf.instant_time == t)
    log = LogFile(FG.file_id, key, version, TOKEN, False, FG.partition)
    return _set(state, name, WRITTEN, t, tl=tl, logs=state.logs + (log,),
                blocks=state.blocks + ((log, (data_block(t),)),))


def _complete(state: TableState, name: str, t: str, action: Action, phase: str, **changes) -> TableState:
    """``ActiveTimelineV2#saveAsComplete`` with the completion time from ``TimeGenerator#consumeTime`` (the
    completed file created under the lock)."""
    tl, gen = state.tl.copy(), state.gen.copy()
    rec, _ = gen.consume_time(name, state.now, lambda c: tl.complete(t, action, c, by=name))
    return _set(state, name, phase, t, tl=tl, gen=gen, now=max(state.now, rec.released_at), **changes)


def _planner_timeline(cfg: TableConfig, tl: Timeline) -> Timeline:
    """The timeline the compaction planner's completion-time lookup sees: all of it, or (``misses-one``)
    one in which the most recently completed deltacommit still looks inflight (a lookup that could not
    see its completed file, e.g. a stale listing)."""
    if cfg.plan_lookup == SEES_ALL:
        return tl
    done = sorted(tl.completed([DC]), key=lambda i: (i.completion_time, i.requested_time))
    blind = tl.copy()
    if done:
        blind.revert_to_inflight(done[-1].requested_time, DC)
    return blind


def _schedule(cfg: TableConfig, state: TableState) -> TableState:
    """``ScheduleCompactionActionExecutor#execute``: generate ``tc`` (under the lock), 0.x guard on tv6, plan the
    slices (``compaction_plan_files`` over the planner's lookup), create the requested compaction."""
    tc, gen, now = _generate(state, COMPACTOR)
    if cfg.table_version == 6:
        why = compaction_schedule_refusal(state.tl, tc)
        if why is not None:
            raise Refused(f"0.x scheduling guard: {why}")
    plan = state.view(_planner_timeline(cfg, state.tl)).compaction_plan_files(tc)
    if not plan:
        raise Refused(f"nothing to compact at {tc}")
    tl = state.tl.copy()
    tl.create(tc, CP, by=COMPACTOR)
    return _set(state, COMPACTOR, "scheduled", tc, tl=tl, gen=gen, now=now,
                plans=state.plans + ((tc, tuple(sorted(plan.items()))),))


def _execute(state: TableState, tc: str) -> TableState:
    """``RunCompactionActionExecutor#execute``: inflight, write the merged base file ``tc``, commit."""
    tl = state.tl.copy()
    tl.transition_to_inflight(tc, CP, by=COMPACTOR)
    mid = replace(state, tl=tl)
    return _complete(mid, COMPACTOR, tc, CP, "done", bases=state.bases + (_base(tc),))


def _rollback(cfg: TableConfig, state: TableState) -> TableState:
    """Roll back the oldest failed write ``tw`` (``BaseRollbackActionExecutor#execute``): generate ``trb`` and
    request the rollback; tv6 (``rollback="command-block"``) appends a log holding a ROLLBACK command
    block targeting ``tw`` to the failed log's slice (a new version, as Hudi writes ``log.N+1``); tv8
    deletes the failed log file; the instant's files are deleted (``HoodieActiveTimeline#deleteInstantFileIfExists``); the
    rollback completes (``consumeTime``)."""
    failed = sorted((t, n) for n, ph, t in state.procs if ph == FAILED)
    if not failed:
        raise Refused("no failed write to roll back")
    tw, who = failed[0]
    trb, gen, now = _generate(state, ROLLBACKER)
    tl = state.tl.copy()
    tl.create(trb, Action.ROLLBACK, by=ROLLBACKER)
    tl.transition_to_inflight(trb, Action.ROLLBACK, by=ROLLBACKER)
    logs, blocks = state.logs, state.blocks
    mine = [lf for lf, bl in blocks if any(b.carries_data and b.instant_time == tw for b in bl)]
    if cfg.table_version == 8:
        logs = tuple(lf for lf in logs if lf not in mine)
        blocks = tuple((lf, bl) for lf, bl in blocks if lf not in mine)
    elif cfg.rollback == COMMAND_BLOCK:
        key = mine[0].instant_time
        log = LogFile(FG.file_id, key, 1 + sum(1 for lf in logs if lf.instant_time == key), TOKEN, False,
                      FG.partition)
        logs, blocks = logs + (log,), blocks + ((log, (rollback_block(trb, tw),)),)
    tl.delete(tw, DC)
    mid = _set(replace(state, tl=tl, gen=gen, now=now, logs=logs, blocks=blocks), who, ROLLED_BACK, tw)
    return _complete(mid, ROLLBACKER, trb, Action.ROLLBACK, IDLE)


def step(cfg: TableConfig, state: TableState, action: tuple[str, str]) -> TableState:
    """The state after ``action``; raises :class:`Refused` (why) when the action is not enabled.

    A rule of the timeline that refuses an effect (``TimelineError``, e.g. a completion time not after
    the requested time on a skewed clock) refuses the action too, naming the rule."""
    who, what = action
    if what == "tick":
        if state.ticks >= cfg.max_ticks:
            raise Refused(f"no ticks left ({cfg.max_ticks})")
        return replace(state, now=state.now + 1, ticks=state.ticks + 1)
    _, phase, t = state.proc(who)
    need = {"generate": IDLE, "start": IDLE, "publish": GENERATED, "write": REQUESTED, "complete": WRITTEN,
            "schedule": IDLE, "execute": "scheduled", "fail": WRITTEN, "rollback": IDLE}[what]
    if phase != need:
        raise Refused(f"{who} is {phase}; {what} needs {need}")
    try:
        if what == "generate":
            t, gen, now = _generate(state, who)
            return _set(state, who, GENERATED, t, gen=gen, now=now)
        if what == "start":
            t, gen, now = _generate(state, who)
            return _publish(state, who, t, gen, now)
        if what == "publish":
            return _publish(state, who, t, state.gen, state.now)
        if what == "write":
            return _write(state, who, t)
        if what == "complete":
            return _complete(state, who, t, DC, DONE)
        if what == "fail":
            if sum(1 for p in state.procs if p[1] in (FAILED, ROLLED_BACK)) >= cfg.failures:
                raise Refused(f"no failures left ({cfg.failures})")
            return _set(state, who, FAILED, t)
        if what == "rollback":
            return _rollback(cfg, state)
        if what == "schedule":
            return _schedule(cfg, state)
        return _execute(state, t)
    except TimelineError as exc:
        raise Refused(f"{exc.rule}: {exc}") from None


def refusal(cfg: TableConfig, state: TableState, action: tuple[str, str]) -> str | None:
    """Why ``action`` is not enabled in ``state`` (``None``: it is)."""
    return machine.refusal(lambda a: step(cfg, state, a), action, Refused)


def enabled(cfg: TableConfig, state: TableState) -> list[tuple[tuple[str, str], TableState]]:
    """The enabled actions with their next states, in :func:`candidate_actions` order."""
    return machine.enabled(candidate_actions(cfg), lambda a: step(cfg, state, a), Refused)


# ------------------------------------------------------------------------------------------ invariants
def verdicts(state: TableState) -> list:
    """Every invariant of a table state: ``table_verdicts`` (I1-I9 with compaction inputs and log blocks)
    and ``I1.generation-order`` over the generator's history."""
    view = state.view()
    plans = {tc: dict(slices) for tc, slices in state.plans}
    plan_logs = {tc: [lf for s in slices.values() for lf in s.log_files] for tc, slices in plans.items()}
    out = table_verdicts(state.tl, view, state.bases, state.logs, rule=view.rule, compaction_plans=plan_logs,
                         compaction_inputs=compaction_inputs(plans), log_blocks=dict(state.blocks))
    out.append(check_generation_order(state.gen.history))
    return out


def describe(state: TableState) -> str:
    procs = ", ".join(f"{n}={ph}" + (f"@{t}" if t else "") for n, ph, t in state.procs)
    insts = ", ".join(str(i) for i in state.tl.instants())
    return f"now={state.now} [{procs}] timeline: {insts}; logs: {', '.join(lf.name for lf in state.logs)}"


__all__ = [
    "TableConfig", "TableState", "Refused", "initial_state", "candidate_actions", "format_action", "step",
    "refusal", "enabled", "verdicts", "describe", "ATOMIC", "TWO_STEP", "TRUETIME", "NAIVE", "SEES_ALL",
    "MISSES_ONE", "PUBLISH_MODES", "GENERATORS", "PLAN_LOOKUPS", "COMMAND_BLOCK", "NO_COMMAND_BLOCK",
    "ROLLBACK_MODES",
]
