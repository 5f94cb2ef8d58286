"""The table machine (:mod:`model.table_machine`) as a model the checker explores.

:class:`TableModel` adapts the spec's table-level state machine to :class:`checker.explorer.Model`:
the initial table, the enabled actions (:func:`model.table_machine.enabled`, in the spec's fixed
order), the next state, fingerprints (:meth:`model.table_machine.TableState.fingerprint`) and one
``always`` property, ``table``, whose failing verdicts (:func:`model.table_machine.verdicts`) are each
their own discovery, named by invariant id. Breadth first, so each discovery is a shortest
counterexample. ``hoodie-lab explore --machine table`` runs it.
"""

from __future__ import annotations

from model import table_machine as tm

from .explorer import Model, Property


class TableModel(Model):
    """Explore one :class:`~model.table_machine.TableConfig`.

    ``actions`` computes the successors once and keeps them for the ``next_state`` calls that follow
    on the same state (the explorer expands one state at a time), so each step runs once.
    """

    def __init__(self, config: tm.TableConfig):
        self.config = config
        self._last: tuple = (None, {})

    def init_states(self):
        return [tm.initial_state(self.config)]

    def actions(self, state):
        succ = dict(tm.enabled(self.config, state))
        self._last = (state, succ)
        return list(succ)

    def next_state(self, state, action):
        last, succ = self._last
        if last is state and action in succ:
            return succ[action]
        try:
            return tm.step(self.config, state, action)
        except tm.Refused:
            return None

    def properties(self):
        return [Property.always("table", tm.verdicts)]

    def fingerprint(self, state):
        return state.fingerprint()

    def format_action(self, action) -> str:
        return tm.format_action(action)

    def format_state(self, state) -> str:
        return tm.describe(state)


__all__ = ["TableModel"]
