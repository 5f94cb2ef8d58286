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

from .explorer import MachineModel, Property


class ConcurrencyModel(MachineModel):
    """Explore one :class:`~model.concurrency.state.MachineConfig` (the rules: :class:`checker.explorer.MachineModel`)."""

    spec = cm

    def __init__(self, config: cm.MachineConfig):
        super().__init__(config)

    def properties(self):
        cfg = self.config
        return [Property.always("concurrency", lambda s: cm.verdicts(cfg, s))]


__all__ = ["ConcurrencyModel"]
