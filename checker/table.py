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

from .explorer import MachineModel, Property


class TableModel(MachineModel):
    """Explore one :class:`~model.table_machine.TableConfig` (the rules: :class:`checker.explorer.MachineModel`)."""

    spec = tm

    def __init__(self, config: tm.TableConfig):
        super().__init__(config)

    def properties(self):
        return [Property.always("table", tm.verdicts)]


__all__ = ["TableModel"]
