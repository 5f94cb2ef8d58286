"""The archival machine (:mod:`model.archival_machine`: writers, a LAZY cleaner and the archiver of
:mod:`model.archival`) as a model the liveness checker explores (issue #22).

:class:`ArchivalLiveModel` is a :class:`checker.liveness.LiveModel`: the spec's enabled steps and next states
(:func:`model.archival_machine.enabled`), weak fairness from :data:`model.archival_machine.FAIRNESS` minus a
design's ``unfair`` steps, and the obligations of :func:`model.invariants.temporal.archival_obligations`.
``hoodie-lab explore --machine archival --liveness`` runs it. :class:`ArchivalModel` is the same machine for the
safety explorer (:func:`checker.explorer.explore`), checking the history's archival invariants
(:func:`model.invariants.history.archival_verdicts`) in every state: the baseline the liveness benchmark sets
the temporal judgement against.
"""

from __future__ import annotations

from model import archival_machine as am
from model.invariants import temporal as T
from model.invariants.history import archival_verdicts

from .explorer import MachineModel, Property
from .liveness import LiveModel


class ArchivalModel(MachineModel):
    """Explore one :class:`~model.archival_machine.MachineConfig` for safety (the rules:
    :class:`checker.explorer.MachineModel`); a state is its own fingerprint (a frozen dataclass)."""

    spec = am

    def fingerprint(self, state):
        return state

    def properties(self):
        return [Property.always("archival", lambda s: archival_verdicts(s.history, self.config.archival))]


class ArchivalLiveModel(LiveModel):
    def __init__(self, config: am.MachineConfig, unfair: frozenset = frozenset()):
        unknown = set(unfair) - set(am.FAIRNESS)
        if unknown:
            raise ValueError(f"unfair: unknown archival step(s) {sorted(unknown)}; known: {sorted(am.FAIRNESS)}")
        self.config, self.unfair = config, frozenset(unfair)
        self.properties = T.ARCHIVAL_TEMPORAL

    def init_states(self):
        return [am.initial_state(self.config)]

    def successors(self, state):
        return am.enabled(self.config, state)

    def weak(self, action) -> bool:
        return am.fairness(action, self.unfair) == am.WEAK

    def obligations(self, state) -> dict:
        return T.archival_obligations(state.history, self.config.archival)

    def kind(self, action) -> str:
        return action[1]

    def key(self, state):
        return state

    def format_action(self, action) -> str:
        return am.format_action(action)


__all__ = ["ArchivalModel", "ArchivalLiveModel"]
