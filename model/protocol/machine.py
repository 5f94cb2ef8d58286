"""What every executor of the protocol offers: the spec (:data:`model.protocol.spec.SPEC`) and the engine
(:data:`engine.machine.ENGINE`). Drivers that only replay or step a run (``hoodie-lab replay``, the
pipeline's recovery and diff, :meth:`model.trace.Trace.replay`) take a machine and work with either.
"""

from __future__ import annotations

from typing import Any, Protocol

from .config import ProtocolConfig
from .events import Event


class Machine(Protocol):
    """A protocol state machine. ``state`` is the machine's own state type."""

    name: str

    def init(self, config: ProtocolConfig, *, seed: int = 0, time_source: Any = None) -> Any:
        """The initial state. ``time_source``: where instant times come from (None: the logical clock;
        only the engine takes another one)."""

    def step(self, state: Any, event: Event) -> Any:
        """The state after ``event``. Raises :class:`model.errors.RuleViolation` (rule
        ``"<kind>.not-enabled"``, the guard's reason in the detail) when the event is not enabled. The spec
        returns a new state and leaves ``state`` as it was; the engine changes ``state`` in place and
        returns it."""

    def enabled(self, state: Any) -> list[Event]:
        """Every event enabled in ``state`` (faults included while the configuration enables them)."""

    def check_step(self, state: Any) -> list:
        """The verdicts of every step invariant (:data:`model.invariants.protocol.STEP_INVARIANTS`)."""

    def check_drained(self, state: Any) -> list:
        """The verdicts of the invariants judged after a drain (exactly-once, liveness)."""

    def drain(self, state: Any) -> tuple[Any, list[Event]]:
        """Stop faults and run checkpoints with delivered acks to quiescence: the drained state and the events
        applied."""

    def describe(self, state: Any) -> str:
        """A multi-line human-readable dump of ``state`` (for counterexamples)."""
