"""The concurrency machine (:mod:`model.concurrency.machine`) as a model the checker explores.

:class:`ConcurrencyModel` adapts it to :class:`checker.explorer.Model` as :class:`checker.table.TableModel`
does for the table machine: the initial state, the enabled actions in the spec's fixed order, the next
state, fingerprints (:meth:`model.concurrency.state.ConcState.fingerprint`) and one ``always`` property
whose failing verdicts (the read oracle and the process invariants) are each their own discovery, named
by invariant id. Breadth first, so each discovery is a shortest counterexample. The spec runs directly
(no engine copy). ``hoodie-lab explore --machine concurrency`` runs it.
"""

from __future__ import annotations

from model.concurrency import machine as cm

from .explorer import Model, Property


class ConcurrencyModel(Model):
    """Explore one :class:`~model.concurrency.state.MachineConfig`; ``actions`` computes the successors once
    and keeps them for the ``next_state`` calls that follow on the same state."""

    def __init__(self, config: cm.MachineConfig):
        self.config = config
        self._last: tuple = (None, {})

    def init_states(self):
        return [cm.initial_state(self.config)]

    def actions(self, state):
        succ = dict(cm.enabled(self.config, state))
        self._last = (state, succ)
        return list(succ)

    def next_state(self, state, action):
        last, succ = self._last
        if last is state and action in succ:
            return succ[action]
        try:
            return cm.step(self.config, state, action)
        except cm.Refused:
            return None

    def properties(self):
        cfg = self.config
        return [Property.always("concurrency", lambda s: cm.verdicts(cfg, s))]

    def fingerprint(self, state):
        return state.fingerprint()

    def format_action(self, action) -> str:
        return cm.format_action(action)

    def format_state(self, state) -> str:
        return cm.describe(state)


__all__ = ["ConcurrencyModel"]
