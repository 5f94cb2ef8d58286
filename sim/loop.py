"""SimPy's own event loop, with the number of events it processed.

:func:`run_counted` runs ``env.run(until)`` -- SimPy's loop, nothing added per event -- and counts the events
it processed from SimPy's event numbering: every ``Environment.schedule`` takes the next number of
``Environment._eid`` (the heap's tie-breaker), so events processed = events queued at the start + events
scheduled during the run - events still queued at the end. ``run``'s own stop event is not counted. The
simulation (:mod:`sim.engine`) and the bare-SimPy baseline of ``benchmarks/bench_sim.py`` both run through
here, so their event rates are measured the same way.

The loop runs with the cyclic garbage collector's young-generation threshold raised (to
:data:`GC_YOUNG_THRESHOLD` allocations, restored afterwards): a run allocates millions of small acyclic
objects (events, protocol values) while holding a large live heap (the trace, the metrics), and the default
threshold of 700 makes the collector re-scan the young objects every few events. Reference counting frees
the acyclic objects either way; cycles are still collected, less often. The objects that exist when the run
starts are frozen for its length (``gc.freeze``, undone after): a full collection during the run scans only
what the run allocated, not the whole interpreter heap.
"""

from __future__ import annotations

import gc
import heapq
from contextlib import contextmanager

import simpy

#: Allocations between young-generation collections during a run (CPython's default is 700).
GC_YOUNG_THRESHOLD = 100_000


@contextmanager
def _fewer_collections():
    old = gc.get_threshold()
    gc.freeze()  # what exists before the run (the model's set-up, imported modules) is not re-scanned
    gc.set_threshold(GC_YOUNG_THRESHOLD, *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


def _next_number(env: simpy.Environment) -> int:
    return next(env._eid)  # noqa: SLF001 - SimPy's event counter; taking one number keeps the order of the rest


def run_counted(env: simpy.Environment, until: float) -> int:
    """``env.run(until=until)``; returns the number of events processed (the stop event excluded).

    Like ``env.run``, events at exactly ``until`` are not processed and ``env.now`` ends at ``until``."""
    queued0, n0 = len(env._queue), _next_number(env)  # noqa: SLF001
    with _fewer_collections():
        env.run(until=until)
    queue = env._queue  # noqa: SLF001
    queued1, n1 = len(queue), _next_number(env)
    # scheduled during the run: n1 - n0 - 1 (one number taken by the first read); the stop event was
    # scheduled, processed, and (SimPy re-queues an event whose callback stopped the run, priority -1)
    # queued again
    scheduled = n1 - n0 - 1
    processed = queued0 + scheduled - queued1 - 1
    # Take the re-queued stop event out, so a later run does not process (and count) it as an event.
    stale = [i for i, entry in enumerate(queue) if entry[1] == -1]
    for i in reversed(stale):
        queue.pop(i)
    if stale:
        heapq.heapify(queue)
    return processed
