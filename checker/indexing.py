"""The MDT + indexer machine (:mod:`model.mdt.machine`) as a model the checker explores.

:class:`IndexingModel` adapts the spec to :class:`checker.explorer.Model`: the initial table, the enabled
actions (:func:`model.mdt.machine.enabled`, in the spec's fixed order), the next state, fingerprints
(:meth:`model.mdt.machine.IndexingState.fingerprint`), one ``always`` property ``indexing`` whose failing
verdicts (:func:`model.mdt.machine.verdicts`, :mod:`model.invariants.indexing`) are each their own
discovery named by invariant id, and one ``sometimes`` property ``index-built`` (the indexer completed:
a design that can never finish building is reported by its absence). Breadth first, so each discovery
is a shortest counterexample. ``hoodie-lab explore --machine indexing`` runs it.
"""

from __future__ import annotations

from model.mdt import machine as mm

from .explorer import MachineModel, Property
from .liveness import LiveModel


class IndexingModel(MachineModel):
    """Explore one :class:`~model.mdt.machine.IndexingConfig` (the rules: :class:`checker.explorer.MachineModel`)."""

    spec = mm

    def __init__(self, config: mm.IndexingConfig):
        super().__init__(config)

    def properties(self):
        return [Property.always("indexing", lambda s: mm.verdicts(self.config, s)),
                Property.sometimes("index-built", mm.index_built)]


__all__ = ["IndexingModel"]


class IndexingLiveModel(LiveModel):
    """The indexing machine for :func:`checker.liveness.check_model_liveness` (a
    :class:`checker.liveness.LiveModel`): the spec's enabled steps and next states, weak fairness from
    :data:`model.mdt.machine.FAIRNESS` minus ``unfair``, the obligations of
    :func:`model.invariants.temporal.indexing_obligations`."""

    def __init__(self, config: mm.IndexingConfig, unfair: frozenset = frozenset()):
        from model.invariants import temporal as T

        unknown = set(unfair) - set(mm.FAIRNESS)
        if unknown:
            raise ValueError(f"unfair: unknown indexing step(s) {sorted(unknown)}; known: {sorted(mm.FAIRNESS)}")
        self.config, self.unfair = config, frozenset(unfair)
        self.properties = T.INDEXING_TEMPORAL
        self.obligations = T.indexing_obligations

    def init_states(self):
        return [mm.initial_state(self.config)]

    def successors(self, state):
        return mm.enabled(self.config, state)

    def weak(self, action) -> bool:
        return mm.fairness(action, self.unfair) == mm.WEAK

    def kind(self, action) -> str:
        return action[1]

    def key(self, state):
        return state.fingerprint()

    def format_action(self, action) -> str:
        return mm.format_action(action)


__all__ += ["IndexingLiveModel"]
