"""The engine: the fast executor of the protocol spec (:mod:`model.protocol`).

The explorer (:mod:`checker`) and the simulation (:mod:`sim`) run the engine; the spec is what a design
reviewer reads. The engine has no rules of its own: every guard and effect is the spec's, made fast (slots,
copy-on-write parts, cached hashes, shared event instances), and the refinement suite
(``properties/test_refinement.py``) asserts on random walks and on every state of small explorations that
engine and spec enable the same events, reach the same abstract state after each event
(:func:`engine.refinement.abstract`) and give every invariant the same verdict.

* :mod:`engine.system` -- :class:`System`: the whole protocol as one mutable state machine
  (``enabled_events``, ``is_enabled``, ``apply``, ``clone``, ``fingerprint``/``fingerprint_hash``, ``drain``);
* :mod:`engine.coordinator`, :mod:`engine.writer`, :mod:`engine.checkpoint`, :mod:`engine.table`,
  :mod:`engine.failover` -- its parts (the pipeline's driver-side coordinator uses them too);
* :mod:`engine.invariants` -- the invariants of :mod:`model.invariants.protocol`, evaluated on an engine
  state (``check_step``, ``check_drained``): same ids, same verdicts;
* :mod:`engine.refinement` -- the abstraction function engine state -> spec state;
* :mod:`engine.bfs` -- the explorer's breadth-first loop (:func:`checker.explorer.explore` sets it up): generic
  over the model, here to be compiled with the rest;
* :mod:`engine.archival` -- :func:`model.archival.start` / ``step`` made fast (``TableArchiver(executor=...)``;
  kept equal to the spec by ``tests/test_fastpaths.py``).

Compiled or pure: the install compiles the hot modules (system, coordinator, writer, table, timeline,
checkpoint, canonical, failover, invariants, independence, and the search loop bfs) with mypyc when it can
(``setup.py``); importing :mod:`engine` then puts them in place of the ``.py`` modules, unless a source changed
since the build (a stale build is never used: :mod:`engine._compiled`) or ``HOODIE_LAB_ENGINE=pure``. :data:`COMPILED` tells which runs and
:data:`BUILD` why; both run the same source, and the refinement suite runs on the one in use.

Imports :mod:`model` only.
"""

from __future__ import annotations

import sys as _sys

from . import _compiled

#: whether the compiled (mypyc) hot modules are in use, and a one-line description of the choice
COMPILED, BUILD = _compiled.select(_sys.modules[__name__])

from .checkpoint import PendingCheckpoint
from .coordinator import Coordinator, EventBuffer
from .system import DRAIN_LIMIT, Observation, System
from .table import LogicalClock, Table, TimeSource, TrueTimeSource
from .writer import WriterTask
from .machine import ENGINE
from .refinement import abstract

__all__ = ["PendingCheckpoint", "Coordinator", "EventBuffer", "DRAIN_LIMIT", "Observation", "System",
           "LogicalClock", "Table", "TimeSource", "TrueTimeSource", "WriterTask"]
__all__ += ["ENGINE", "abstract", "COMPILED", "BUILD"]
