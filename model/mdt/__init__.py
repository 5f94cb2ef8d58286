"""The metadata table (MDT) and asynchronous indexing (issue #18, RFC-45) as a specification.

* :mod:`model.mdt.partitions` -- the pure rules, the stable API other layers call (the on-disk writer
  ``lakeio/ondisk/mdt*.py`` included): partition names and states in ``hoodie.properties``, the
  indexer's preconditions, ``indexUptoInstant``, the catch-up decision per instant, which partitions a
  writer updates, which partitions readers may use, the valid instants an MDT reader merges, and what
  an index rebuilt from scratch holds;
* :mod:`model.mdt.machine` -- the explorable state machine: writers, the indexer (schedule, execute,
  catch-up, timeout/abort, complete, retry), a rollback process and MDT compaction beside them;
* :mod:`model.mdt.variants` -- named designs, correct and broken (each broken one names the
  invariants it must break);
* invariants: :mod:`model.invariants.indexing` (I17 and more).
"""
