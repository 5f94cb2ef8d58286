"""The state of many processes on one table, its bounds and what its files hold.

:class:`MachineConfig` is one design (the :class:`~model.concurrency.settings.Settings`, the bounds and
named design flaws a broken variant switches on); :class:`ConcState` one state: the processes, the table
lock, the timeline (:class:`model.timeline.Timeline`), the TrueTime generator
(:mod:`model.truetime`), the data files with the records they hold, the markers, the compaction
plans, and the *history variables* the read oracle and the invariants judge (every committed write,
every rollback with its target's heartbeat, every clean, every savepoint, every compaction scheduled
while a write was pending). States are values: actions copy what they change.

Data: keys ``k0..k{keys-1}``; a record is ``(key, value, ordering, commit_time)`` -- ``ordering`` is the
precombine / ordering field (the writer's instant time, an event time) and ``commit_time`` the
``_hoodie_commit_time`` meta column (the instant that wrote the value; kept when a base file carries a
record over or a compaction merges it). One partition ``p``. The initial table: one completed commit
``T0`` that wrote every key (value ``v0``) into base files -- one per bucket (bucket index) or one file
group ``f0`` (simple index).

:func:`read_slices` is the table's reader (what a query returns for the slices a
:class:`model.slicing.ReadView` planned): the base file's records, then the admitted records of the
slice's logs (blocks of non-admitted instants skipped: ``AbstractHoodieLogRecordReader#scanInternal``),
merged per key by the ordering field (``EVENT_TIME_ORDERING``, ``DefaultHoodieRecordPayload``;
ties: the later file wins).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..filenames import BaseFile, LogFile
from ..instant import Action, format_millis
from ..slicing import FileSystemView
from ..timeline import PUT_IF_ABSENT, STORAGE_MODES, Timeline
from ..truetime import DEFAULT_EPOCH_MS, NaiveGenerator, SkewAdjustingTimeGenerator, TimeGeneratorConfig
from .rules import CLEAN_POLICIES
from .settings import BUCKET, MOR, Settings, validate

PARTITION = "p"
TRUETIME, NAIVE = "truetime", "naive"
GENERATORS = (TRUETIME, NAIVE)
T0 = format_millis(DEFAULT_EPOCH_MS - 10)          # the initial commit
T0_DONE = format_millis(DEFAULT_EPOCH_MS - 5)
INIT_VALUE = "v0"

#: Named design flaws (a broken variant switches some on; every correct design has none).
FLAWS = {
    "no-commit-lock": "the conflict check and the commit are not one lock section (no lock is taken)",
    "ignore-pending-compaction": "the OCC check leaves pending compaction plans out of the candidates",
    "no-0x-guard": "0.x compaction scheduling without the 'no older inflight write' guard",
    "clustering-no-check": "clustering commits without the conflict check (an update committed meanwhile is lost)",
    "clean-ignores-plans": "the cleaner deletes files a pending compaction plan needs",
    "clean-ignores-savepoints": "the cleaner deletes files a savepoint needs",
}

#: Writer phases, in order; the compactor: idle, scheduled, executed; cleaner/savepointer: idle.
IDLE, GENERATED, REQUESTED, WRITTEN, LOCKED, CHECKED = (
    "idle", "generated", "requested", "written", "locked", "checked")
SCHEDULED, EXECUTED = "scheduled", "executed"
COMPACTOR, CLEANER, SAVEPOINTER, CLUSTERER = "c", "cl", "s", "k"


@dataclass(frozen=True)
class MachineConfig:
    """One design and its bounds.

    ``writers`` writer clients ``w1..wN`` make ``commits`` commits each; commit ``j`` of writer ``i``
    upserts key ``k{(i-1+j) mod keys}``. ``buckets``: buckets of the bucket index. ``compactions``:
    compactions the compactor may schedule (MOR). ``clusterings``:
    clusterings the clustering service may schedule (tv8, simple index: it rewrites file groups into a new one). ``clean_policy``: ``None`` or a
    :data:`~model.concurrency.rules.CLEAN_POLICIES` name with ``clean_retained``; ``cleans`` bounds the
    cleaner's runs (it also rolls back failed writes under LAZY). ``savepoint``: one savepoint may be
    taken. ``preloaded``: the initial commit wrote every key (else the table starts empty and the first
    writes are inserts). ``crashes``: writer crashes (faults). ``generator``/``storage``: TrueTime or the 0.x naive
    generator; put-if-absent or overwrite storage. ``flaws``: named design flaws (:data:`FLAWS`).
    ``validated``: the settings must pass :func:`~model.concurrency.settings.validate` (broken variants
    that model a configuration Hudi refuses set it False).
    """

    settings: Settings = field(default_factory=Settings)
    writers: int = 2
    commits: int = 1
    keys: int = 2
    buckets: int = 1
    compactions: int = 0
    clusterings: int = 0
    clean_policy: str | None = None
    clean_retained: int = 1
    cleans: int = 0
    savepoint: bool = False
    preloaded: bool = True
    crashes: int = 0
    generator: str = TRUETIME
    storage: str = PUT_IF_ABSENT
    flaws: frozenset = frozenset()
    validated: bool = True

    def __post_init__(self):
        object.__setattr__(self, "flaws", frozenset(self.flaws))
        if self.validated:
            validate(self.settings)
        checks = [
            (1 <= self.writers <= 3, f"writers must be 1..3, not {self.writers}"),
            (1 <= self.commits <= 3, f"commits must be 1..3, not {self.commits}"),
            (1 <= self.keys <= 3, f"keys must be 1..3, not {self.keys}"),
            (1 <= self.buckets <= 3, f"buckets must be 1..3, not {self.buckets}"),
            (0 <= self.compactions <= 2, f"compactions must be 0..2, not {self.compactions}"),
            (0 <= self.clusterings <= 1, f"clusterings must be 0..1, not {self.clusterings}"),
            (not self.clusterings or (self.settings.table_version >= 8 and self.settings.index == "simple"),
             "clustering is modelled on table version 8 with the simple index (a bucket index fixes file groups)"),
            (self.clean_policy is None or self.clean_policy in CLEAN_POLICIES,
             f"clean_policy must be one of {CLEAN_POLICIES} or None, not {self.clean_policy!r}"),
            (1 <= self.clean_retained <= 3, f"clean_retained must be 1..3, not {self.clean_retained}"),
            (0 <= self.cleans <= 2, f"cleans must be 0..2, not {self.cleans}"),
            (0 <= self.crashes <= 2, f"crashes must be 0..2, not {self.crashes}"),
            (self.generator in GENERATORS, f"generator must be one of {GENERATORS}, not {self.generator!r}"),
            (self.storage in STORAGE_MODES, f"storage must be one of {STORAGE_MODES}, not {self.storage!r}"),
            (self.flaws <= set(FLAWS), f"unknown flaw(s) {sorted(self.flaws - set(FLAWS))}; known: {sorted(FLAWS)}"),
            (not self.compactions or self.settings.table_type == MOR, "compactions need a MOR table"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(msg)

    @property
    def processes(self) -> tuple[str, ...]:
        return tuple(f"w{i + 1}" for i in range(self.writers))

    def key_of(self, writer: str, commit: int) -> str:
        return f"k{(int(writer[1:]) - 1 + commit) % self.keys}"

    def token(self, writer: str) -> str:
        """The write token of a process (unique per writer: concurrent writers never collide on names)."""
        return {COMPACTOR: "9-0-1", CLEANER: "8-0-1", CLUSTERER: "7-0-1"}.get(writer, f"{writer[1:]}-0-1")

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["settings"] = self.settings.to_dict()
        d["flaws"] = sorted(self.flaws)
        return d


@dataclass(frozen=True)
class ConcState:
    """One state. ``procs``: per writer ``(name, phase, instant, commit index, file groups written)``;
    ``comp``: the compactor ``(phase, instant, compactions done)``; ``lock``: the holder of the table lock
    (``hoodie.write.lock.provider``) or None; ``files``: ``((file, records), ...)`` sorted -- the data
    files present; ``markers``: ``((instant, file), ...)``; ``plans``: ``((tc, ((fg, FileSlice), ...)),
    ...)``; ``dead``: instants whose heartbeat expired (crashed or aborted writers); history variables:
    ``committed`` ``((instant, completion, writer, ((key, value), ...)), ...)``, ``rollbacks``
    ``((target, target_alive), ...)``, ``cleans`` ``((policy, earliest, deleted files, protected
    deleted), ...)``, ``savepoints`` ``((instant, read time, files), ...)``, ``unsafe_schedules`` (0.x:
    compactions scheduled while an older write was pending), ``crashes`` used; ``touched``: ``((instant, file groups), ...)`` what each write mutated
    (``getMutatedPartitionAndFileIds``); ``clus``: the clustering service ``(phase, instant, done)`` and
    ``cplans`` its plans ``((tk, (file group, ...)), ...)``."""

    now: int
    procs: tuple
    comp: tuple
    lock: str | None
    files: tuple
    markers: tuple
    plans: tuple
    dead: frozenset
    committed: tuple
    rollbacks: tuple
    cleans: tuple
    savepoints: tuple
    unsafe_schedules: tuple
    crashes: int
    touched: tuple
    clus: tuple
    cplans: tuple
    tl: Timeline = field(compare=False, repr=False)
    gen: Any = field(compare=False, repr=False)

    def proc(self, name: str) -> tuple:
        return next(p for p in self.procs if p[0] == name)

    def file_map(self) -> dict:
        return dict(self.files)

    def base_files(self) -> list[BaseFile]:
        return [f for f, _ in self.files if isinstance(f, BaseFile)]

    def log_files(self) -> list[LogFile]:
        return [f for f, _ in self.files if isinstance(f, LogFile)]

    def pending_compactions(self) -> dict:
        done = {i.requested_time for i in self.tl.completed([Action.COMPACTION])}
        return {gid: tc for tc, slices in self.plans if tc not in done for gid, _ in slices}

    def pending_plan_files(self) -> frozenset:
        done = {i.requested_time for i in self.tl.completed([Action.COMPACTION])}
        return frozenset(f for tc, slices in self.plans if tc not in done for _, s in slices for f in s.files)

    def clustering_maps(self) -> tuple[dict, dict]:
        """(replaced, pending clustering): file group -> clustering instant, from the completed and the pending
        clustering plans (``resetFileGroupsReplaced``, ``getFileGroupsInPendingClustering``)."""
        done = {i.requested_time for i in self.tl.completed([Action.CLUSTERING])}
        present = {i.requested_time for i in self.tl.instants()}
        replaced, pending = {}, {}
        for tk, gids in self.cplans:
            for g in gids:
                if tk in done:
                    replaced[g] = tk
                elif tk in present:
                    pending[g] = tk
        return replaced, pending

    def view(self) -> FileSystemView:
        """``AbstractTableFileSystemView`` over the files present (the spec's slicing, model/slicing.py)."""
        replaced, pending = self.clustering_maps()
        return FileSystemView(self.tl, self.base_files(), self.log_files(),
                              pending_compactions=self.pending_compactions(), replaced=replaced,
                              pending_clustering=pending)

    def fingerprint(self) -> tuple:
        timeline = tuple(sorted((i.requested_time, i.action.value, i.state.value, i.completion_time,
                                 tuple(sorted((s.value, w) for s, w in self.tl.writers_of(i.requested_time,
                                                                                         i.action).items())))
                                for i in self.tl.instants()))
        return (self.now, self.procs, self.comp, self.lock, self.files, self.markers, self.plans, self.dead,
                self.committed, self.rollbacks, self.cleans, self.savepoints, self.unsafe_schedules, self.crashes, self.touched, self.clus, self.cplans,
                timeline, tuple(sorted(self.gen.last_time.items())), self.gen.lock.last_released_at)


def records_of(files: dict, f) -> tuple:
    return files.get(f, ())


def merge_records(records) -> dict:
    """Merge records per key by the ordering field (``EVENT_TIME_ORDERING``: the greater ordering value
    wins; on a tie the later one, as ``DefaultHoodieRecordPayload#preCombine`` keeps the incoming)."""
    out: dict = {}
    for rec in records:
        key, _, ordering, _ = rec
        old = out.get(key)
        if old is None or ordering >= old[2]:
            out[key] = rec
    return out


def read_slices(files: dict, slices, admitted) -> tuple[dict, list]:
    """What a query returns for ``slices`` (one per file group) admitting the instants ``admitted``:
    per file group the merged records (:func:`merge_records`) and the list of files the plan names
    that are not present (a read that cannot be served)."""
    out, missing = {}, []
    for s in slices:
        recs = []
        if s.base_file is not None:
            if s.base_file not in files:
                missing.append(s.base_file)
            recs.extend(files.get(s.base_file, ()))
        for lg in s.log_files:
            if lg not in files:
                missing.append(lg)
            recs.extend(r for r in files.get(lg, ()) if r[3] in admitted)
        out[s.group] = merge_records(recs)
    return out, missing


def initial_state(cfg: MachineConfig) -> ConcState:
    """The table after commit ``T0`` wrote every key; every process idle."""
    s = cfg.settings
    tl = Timeline(s.table_version, storage=cfg.storage)
    action = Action.DELTACOMMIT if s.table_type == MOR else Action.COMMIT
    tl.create(T0, action)
    tl.transition_to_inflight(T0, action)
    tl.complete(T0, action, T0_DONE)
    groups: dict = {}
    for k in range(cfg.keys if cfg.preloaded else 0):
        fid = f"b{k % cfg.buckets}" if s.index == BUCKET else "f0"
        groups.setdefault(fid, []).append((f"k{k}", INIT_VALUE, T0, T0))
    files = tuple(sorted(((BaseFile(fid, "0-0-1", T0, "parquet", PARTITION), tuple(recs))
                          for fid, recs in groups.items()), key=lambda x: x[0].name))
    clocks = {}
    if cfg.generator == NAIVE:
        gen = NaiveGenerator(clocks=clocks)
    else:
        gen = SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=1), clocks=clocks)
    procs = tuple((w, IDLE, None, 0, frozenset()) for w in cfg.processes)
    return ConcState(0, procs, (IDLE, None, 0), None, files, (), (), frozenset(), (), (), (), (), (), 0, (), (IDLE, None, 0), (), tl, gen)


def set_proc(state: ConcState, name: str, phase: str, instant, commit: int, fgs=frozenset(), **changes) -> ConcState:
    procs = tuple((name, phase, instant, commit, frozenset(fgs)) if p[0] == name else p for p in state.procs)
    return replace(state, procs=procs, **changes)


__all__ = [
    "MachineConfig", "ConcState", "FLAWS", "initial_state", "read_slices", "merge_records", "set_proc",
    "PARTITION", "T0", "T0_DONE", "INIT_VALUE", "TRUETIME", "NAIVE", "GENERATORS", "IDLE", "GENERATED", "REQUESTED",
    "WRITTEN", "LOCKED", "CHECKED", "CLUSTERER", "SCHEDULED", "EXECUTED", "COMPACTOR", "CLEANER", "SAVEPOINTER",
]
