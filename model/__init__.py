"""The reference model of Apache Hudi's transaction timeline.

Pure and deterministic: no file I/O, no wall clock, randomness only from an
explicit seed. One concept per module:

* :mod:`model.instant` — instant times, actions, states, identity;
* :mod:`model.timeline` — the active timeline and its guarded operations;
* :mod:`model.filenames` — file-name codec for timeline, base and log files;
* :mod:`model.truetime` — clocks with skew, the lock, TrueTime generation;
* :mod:`model.slicing` — file groups, slices (instant-time vs completion-time
  rules) and what readers see;
* :mod:`model.protocol` — the Flink-style writer/coordinator protocol, blocking
  and async instant generation, checkpoint subsume, failover;
* :mod:`model.trace` — the one trace format every driver writes;
* :mod:`model.invariants` — every invariant, in one place.

Nothing in ``model`` imports from the rest of hoodie-lab.
"""
