"""Many processes on one timeline (issue #17): writer clients under single-writer, OCC and NBCC, table
services (compaction, cleaning), the lock, heartbeats and the failed-writes policy, a read oracle.

``settings`` (the settings and ``validate``) and ``rules`` (pure conflict/scheduling/cleaning rules) are
the stable API the simulation calls; ``machine`` is the explorable state machine.
"""

from .rules import (WriteSummary, candidate_instants, conflict, may_schedule_compaction,
                    resolve_write_conflicts, rollback_targets)
from .settings import Settings, SettingsError, validate

__all__ = ["Settings", "SettingsError", "validate", "WriteSummary", "candidate_instants", "conflict",
           "resolve_write_conflicts", "may_schedule_compaction", "rollback_targets"]
