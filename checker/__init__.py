"""The checker: breadth-first exhaustive exploration in the style of Stateright's checker.

* :mod:`checker.explorer` -- the search (:func:`explore`), the :class:`Model` interface, properties,
  results, shortest counterexamples, the state graph (networkx) and its drawing;
* :mod:`checker.protocol` -- :class:`SystemModel`: the protocol engine (:class:`engine.System`) as an
  explorable model, its invariants as properties.

The checker owns hashing (fingerprints or their 64-bit hashes in the visited set); models own rules.
Imports :mod:`model` and :mod:`engine`.
"""

from .explorer import ALWAYS, SOMETIMES, TERMINAL, Discovery, ExploreResult, Model, Property, draw_graph, explore
from .protocol import DRAIN_CHECKS, Refused, SystemModel

__all__ = ["ALWAYS", "SOMETIMES", "TERMINAL", "Discovery", "ExploreResult", "Model", "Property", "draw_graph",
           "explore", "DRAIN_CHECKS", "Refused", "SystemModel"]
