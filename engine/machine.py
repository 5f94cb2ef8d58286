"""The engine as a :class:`model.protocol.machine.Machine`: :data:`ENGINE` (name ``"engine"``).

States are :class:`engine.System` objects, changed in place: :meth:`_Engine.step` applies the event to the
system given and returns it; :meth:`_Engine.drain` drains a clone.
"""

from __future__ import annotations

from model.protocol.config import ProtocolConfig
from model.protocol.events import Event

from . import invariants
from .system import System


class _Engine:
    name = "engine"

    def init(self, config: ProtocolConfig, *, seed: int = 0, time_source=None) -> System:
        return System(config, seed=seed, time_source=time_source)

    def step(self, state: System, event: Event) -> System:
        state.apply(event)
        return state

    def enabled(self, state: System) -> list[Event]:
        return state.enabled_events()

    def guard(self, state: System, event: Event) -> str | None:
        return state.is_enabled(event)

    def check_step(self, state: System) -> list:
        return invariants.check_step(state)

    def check_drained(self, state: System) -> list:
        return invariants.check_drained(state)

    def drain(self, state: System) -> tuple[System, list[Event]]:
        s = state.clone()
        return s, s.drain()

    def describe(self, state: System) -> str:
        return state.describe()

    def __repr__(self) -> str:
        return "ENGINE"


#: The engine as a machine.
ENGINE = _Engine()
