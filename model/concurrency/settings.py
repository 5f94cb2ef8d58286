"""The multi-writer settings of one table and their validation (``HoodieWriteConfig`` checks).

:class:`Settings` names the configuration keys a table's writers and table services share:

==========================  =========================================================================
field                       Hudi key
==========================  =========================================================================
``mode``                    ``hoodie.write.concurrency.mode``: ``single_writer`` (SINGLE_WRITER),
                            ``occ`` (OPTIMISTIC_CONCURRENCY_CONTROL), ``nbcc``
                            (NON_BLOCKING_CONCURRENCY_CONTROL) -- ``WriteConcurrencyMode``
``table_type``              ``hoodie.table.type``: ``cow`` / ``mor``
``table_version``           ``hoodie.table.version``: 6 (0.x layout, instant-time slicing), 8 (1.x)
``index``                   ``hoodie.index.type``: ``bucket`` (BUCKET, engine SIMPLE) or ``simple``
``failed_writes``           ``hoodie.clean.failed.writes.policy``: ``eager`` / ``lazy``
                            (``HoodieFailedWritesCleaningPolicy``)
``lock_provider``           ``hoodie.write.lock.provider`` (a class name) or ``None``
``conflict_strategy``       ``hoodie.write.lock.conflict.resolution.strategy``: ``simple``
                            (``SimpleConcurrentFileWritesConflictResolutionStrategy``) or
                            ``prefer-writer`` (``PreferWriterConflictResolutionStrategy``)
``compaction_scheduling``   ``0.x`` (``ScheduleCompactionActionExecutor`` refuses while an older write
                            is inflight; instant-time slicing needs it) or ``1.x`` (decoupled,
                            completion-time slicing, RFC-66 "Non-Serial Compaction Plan Schedule")
==========================  =========================================================================

:func:`validate` refuses a combination Hudi refuses, with Hudi's message as reference; it raises
:class:`SettingsError` (a :class:`model.errors.RuleViolation`) whose ``rule`` names the setting.
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import RuleViolation

SINGLE_WRITER, OCC, NBCC = "single_writer", "occ", "nbcc"
MODES = (SINGLE_WRITER, OCC, NBCC)
COW, MOR = "cow", "mor"
TABLE_TYPES = (COW, MOR)
BUCKET, SIMPLE = "bucket", "simple"
INDEXES = (BUCKET, SIMPLE)
EAGER, LAZY = "eager", "lazy"
FAILED_WRITES = (EAGER, LAZY)
STRATEGY_SIMPLE, STRATEGY_PREFER_WRITER = "simple", "prefer-writer"
STRATEGIES = (STRATEGY_SIMPLE, STRATEGY_PREFER_WRITER)
SCHEDULING_0X, SCHEDULING_1X = "0.x", "1.x"
SCHEDULINGS = (SCHEDULING_0X, SCHEDULING_1X)
TABLE_VERSIONS = (6, 8)
#: The lock provider Hudi configures itself for a single writer with async table services
#: (``HoodieWriteConfig.Builder#autoAdjustConfigsForConcurrencyMode``: ``InProcessLockProvider``).
IN_PROCESS = "InProcessLockProvider"


class SettingsError(RuleViolation):
    """An impossible combination of settings; ``rule`` is ``settings.<key>``."""


@dataclass(frozen=True)
class Settings:
    """The concurrency settings of one table (see the module docstring for the Hudi keys)."""

    mode: str = OCC
    table_type: str = MOR
    table_version: int = 8
    index: str = BUCKET
    failed_writes: str = LAZY
    lock_provider: str | None = IN_PROCESS
    conflict_strategy: str = STRATEGY_SIMPLE
    compaction_scheduling: str = SCHEDULING_1X

    @property
    def multi_writer(self) -> bool:
        """``WriteConcurrencyMode#supportsMultiWriter``: OCC and NBCC."""
        return self.mode in (OCC, NBCC)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _refuse(key: str, message: str) -> None:
    raise SettingsError(f"settings.{key}", message)


def validate(s: Settings) -> Settings:
    """Refuse what Hudi refuses (or what cannot be run correctly); returns ``s`` when valid.

    Each refusal is one sentence naming the setting and why:

    * unknown values of any field (``WriteConcurrencyMode.valueOf`` etc.);
    * NBCC on COW or without the simple bucket index: ``HoodieWriteConfig`` validation
      "Non-blocking concurrency control requires the MOR table with simple bucket index or it has to
      be Metadata table";
    * NBCC below table version 8: it needs completion-time slicing (RFC-66; ``WriteConcurrencyMode``
      NBCC is a 1.x mode, HUDI-6997);
    * NBCC or OCC with the EAGER failed-writes policy: ``autoAdjustConfigsForConcurrencyMode`` forces
      LAZY for multi-writer modes ("a writer must not roll back another writer's inflight write");
      RFC-66 requires LAZY for NBCC;
    * OCC or NBCC without a lock provider: the conflict check and the commit (completion time + completed
      file) must run under ``hoodie.write.lock.provider`` (``TransactionManager``, RFC-66 "Assumption On
      Locks");
    * 1.x (decoupled) compaction scheduling on table version 6: instant-time slicing puts a log written
      by an older inflight write into the slice the plan compacts -- the 0.x guard is needed there.
    """
    for key, value, allowed in (("mode", s.mode, MODES), ("table_type", s.table_type, TABLE_TYPES),
                                ("table_version", s.table_version, TABLE_VERSIONS), ("index", s.index, INDEXES),
                                ("failed_writes", s.failed_writes, FAILED_WRITES),
                                ("conflict_strategy", s.conflict_strategy, STRATEGIES),
                                ("compaction_scheduling", s.compaction_scheduling, SCHEDULINGS)):
        if value not in allowed:
            _refuse(key, f"{value!r} is not one of {', '.join(map(str, allowed))}")
    if s.lock_provider is not None and (not isinstance(s.lock_provider, str) or not s.lock_provider):
        _refuse("lock_provider", f"{s.lock_provider!r} is not a lock provider class name (or None)")
    if s.mode == NBCC and (s.table_type != MOR or s.index != BUCKET):
        _refuse("mode", "Non-blocking concurrency control requires the MOR table with simple bucket index "
                        f"(table_type={s.table_type}, index={s.index}; HoodieWriteConfig validation)")
    if s.mode == NBCC and s.table_version < 8:
        _refuse("mode", f"Non-blocking concurrency control needs table version 8 or above (completion-time "
                        f"slicing, RFC-66); table_version={s.table_version}")
    if s.multi_writer and s.failed_writes == EAGER:
        _refuse("failed_writes", f"{s.mode} needs the LAZY failed-writes policy: EAGER rolls back every pending "
                                 "write at a writer's start, other writers' inflight writes included "
                                 "(HoodieWriteConfig#autoAdjustConfigsForConcurrencyMode sets LAZY; RFC-66)")
    if s.multi_writer and s.lock_provider is None:
        _refuse("lock_provider", f"{s.mode} needs hoodie.write.lock.provider: the conflict check and the commit "
                                 "(completion time + completed file) must be one lock section "
                                 "(TransactionManager#beginTransaction, RFC-66 'Assumption On Locks')")
    if s.compaction_scheduling == SCHEDULING_1X and s.table_version < 8:
        _refuse("compaction_scheduling", "1.x (decoupled) compaction scheduling needs table version 8: with "
                                         "instant-time slicing (tv6) an older inflight write appends to the slice "
                                         "the plan compacts (ScheduleCompactionActionExecutor 0.x guard)")
    return s


__all__ = [
    "Settings", "SettingsError", "validate", "MODES", "TABLE_TYPES", "INDEXES", "FAILED_WRITES", "STRATEGIES",
    "SCHEDULINGS", "TABLE_VERSIONS", "SINGLE_WRITER", "OCC", "NBCC", "COW", "MOR", "BUCKET", "SIMPLE", "EAGER",
    "LAZY", "STRATEGY_SIMPLE", "STRATEGY_PREFER_WRITER", "SCHEDULING_0X", "SCHEDULING_1X", "IN_PROCESS",
]
