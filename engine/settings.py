"""The protocol configuration as the engine reads it on every transition: :class:`Settings`.

A :class:`model.protocol.config.ProtocolConfig` is the spec's frozen dataclass: each field read is an instance
dictionary look-up and each derived flag (``blocking``, ``coordinator_start``, ``eager``) a Python property
call, several per transition (hundreds of thousands per second of exploration, most of them from compiled
code). :class:`Settings` holds the same fields, under the same names, and the derived flags as plain
attributes of one class per configuration (:func:`settings`), which mypyc compiles to native attributes.

A speed trick of the engine only: the System keeps the ``ProtocolConfig`` as ``config`` (drivers, pickles and
equality see the spec's value) and reads its ``Settings`` (``System._k``, ``Coordinator.cfg``) in the rules.
"""

from __future__ import annotations


class Settings:
    """Every field of a ``ProtocolConfig`` and its derived flags, as attributes (see the module docstring)."""

    def __init__(self, cfg: object = None):
        # called with no argument: blank -- for pickle, whose __new__ runs __init__ without arguments once mypyc
        # compiled the class (the parallel search moves states), and __setstate__ fills it
        if cfg is None:
            return
        self.config = cfg  # the ProtocolConfig these settings are of
        c: object = cfg
        self.mode: str = getattr(c, "mode")
        self.table_version: int = getattr(c, "table_version")
        self.table_type: str = getattr(c, "table_type")
        self.failed_writes: str = getattr(c, "failed_writes")
        self.commit_rule: str = getattr(c, "commit_rule")
        self.commit_order: str = getattr(c, "commit_order")
        self.coordinator_snapshot: bool = getattr(c, "coordinator_snapshot")
        self.snapshot_order: str = getattr(c, "snapshot_order")
        self.snapshot_all_null_entries: bool = getattr(c, "snapshot_all_null_entries")
        self.reset_keeps_memory: bool = getattr(c, "reset_keeps_memory")
        self.resend_on_global_failover: bool = getattr(c, "resend_on_global_failover")
        self.idempotent_recommit: bool = getattr(c, "idempotent_recommit")
        self.share_instant_per_key: bool = getattr(c, "share_instant_per_key")
        self.commit_guard: bool = getattr(c, "commit_guard")
        self.task_state: str = getattr(c, "task_state")
        self.task_failover: str = getattr(c, "task_failover")
        self.partial_aborts: bool = getattr(c, "partial_aborts")
        self.allow_commit_on_empty_batch: bool = getattr(c, "allow_commit_on_empty_batch")
        self.event_delivery: str = getattr(c, "event_delivery")
        self.coordinator_starts_instants: bool = getattr(c, "coordinator_starts_instants")
        self.ack_before_next_checkpoint: bool = getattr(c, "ack_before_next_checkpoint")
        self.commit_ack_events: bool = getattr(c, "commit_ack_events")
        self.ack_behind_events: bool = getattr(c, "ack_behind_events")
        self.drop_failed_attempt_events: bool = getattr(c, "drop_failed_attempt_events")
        self.clean_during_restart: bool = getattr(c, "clean_during_restart")
        self.executor_queue: bool = getattr(c, "executor_queue")
        self.table_service: str = getattr(c, "table_service")
        self.request_thread: str = getattr(c, "request_thread")
        self.parallelism: int = getattr(c, "parallelism")
        self.max_checkpoints: int = getattr(c, "max_checkpoints")
        self.records: int = getattr(c, "records")
        self.buffer_size: int = getattr(c, "buffer_size")
        self.faults: frozenset = getattr(c, "faults")
        self.max_crashes: int = getattr(c, "max_crashes")
        self.stall_bound: int = getattr(c, "stall_bound")
        # the derived flags (ProtocolConfig's properties), read once
        self.blocking: bool = getattr(c, "blocking")
        self.coordinator_start: bool = getattr(c, "coordinator_start")
        self.async_events: bool = getattr(c, "async_events")
        self.eager: bool = getattr(c, "eager")
        self.action: str = getattr(c, "action")


#: ``ProtocolConfig -> Settings``: one per configuration (a frozen, hashable value)
_SETTINGS: dict = {}


def settings(cfg: object) -> Settings:
    """The :class:`Settings` of ``cfg`` (a ``ProtocolConfig``, or Settings already), made once per configuration."""
    if isinstance(cfg, Settings):
        return cfg
    s = _SETTINGS.get(cfg)
    if s is None:
        if len(_SETTINGS) >= 1024:  # (tests build many configurations; keep the table small)
            _SETTINGS.clear()
        s = _SETTINGS[cfg] = Settings(cfg)
    return s

