"""Discrete-event simulation (SimPy) of the writer/coordinator protocol through simulated time.

The simulation drives the *same* model objects as every other driver (:class:`model.protocol.System`,
:mod:`model.truetime` generators, :mod:`model.invariants.protocol`); it adds time, workload and faults and
never restates a protocol rule.

* :mod:`sim.config` -- experiment files (TOML): schema, defaults, validation (one-line errors, exit 2);
* :mod:`sim.fluid` -- records as a fluid (source rate + bursts, writer capacity) and storage latency;
* :mod:`sim.engine` -- the streaming simulation (:func:`sim.engine.run_stream`): writers, checkpoints, the
  coordinator's threads, TrueTime charges, crashes; every run checked by the model's invariants and
  written as a replayable trace when it fails;
* :mod:`sim.executor` -- a single-threaded executor in simulated time (the coordinator's threads);
* :mod:`sim.loop` -- SimPy's ``env.run`` with the number of events it processed;
* :mod:`sim.metrics` -- throughput over time, stalls, end-to-end latency, backlog, commits, pending
  instants, recovery time;
* :mod:`sim.collisions`, :mod:`sim.truetime_study`, :mod:`sim.recovery`, :mod:`sim.history` -- the other
  experiment kinds; :mod:`sim.concurrency` -- many writers (OCC vs NBCC) and compaction scheduling 0.x vs 1.x,
  every decision from ``model.concurrency``;
* :mod:`sim.experiments` -- :func:`sim.experiments.run_named` (results table + plots; ``make demo`` uses
  ``run_named("blocking-vs-async", out_dir, seed, quick=True, grid=False)``) and the sweep grid as
  independent tasks (:func:`sim.experiments.grid_tasks`, :func:`sim.experiments.run_task`);
* :mod:`sim.plots` -- the figures (PNG + SVG);
* :mod:`sim.pipeline_twin` -- the PySpark pipeline's regime (one writer, back-to-back micro-batches,
  commit-side latency) on the same model, predicting the pipeline's async/blocking ratio.

CLI: ``hoodie-lab simulate EXPERIMENT`` and ``hoodie-lab sweep EXPERIMENT [--master URL]``.
"""
