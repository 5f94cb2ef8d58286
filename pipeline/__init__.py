"""The PySpark pipeline: a Structured Streaming job that writes real Hudi tables through the model's protocol.

* :mod:`pipeline.spark` -- ``get_spark(master=None)``, the one configured SparkSession, and ``check_master``
  (a ``spark://`` master refused with one line when it cannot be reached);
* :mod:`pipeline.source` -- the seeded input generator (one JSON-lines file per micro-batch, malformed
  records on request), and the user's data (``--input DIR --format json|csv|parquet``): schema from the data,
  Hudi's schema evolution, the one validation ``parse_file``;
* :mod:`pipeline.sparkcluster` -- a Spark standalone master and workers on this machine (tests, by hand);
* :mod:`pipeline.job` -- the streaming query (file source, ``availableNow``, ``foreachBatch``), the
  quarantine of malformed records, ``prepare_run`` / ``run_job`` / ``python -m pipeline.job RUN_DIR``;
* :mod:`pipeline.coordinator` -- the driver-side coordinators (blocking, async, spark-sink) that drive a
  :class:`model.protocol.System` and make the table follow it;
* :mod:`pipeline.crash` -- kill points and the SIGKILL/restart harness;
* :mod:`pipeline.diff` -- a run's table against the model's prediction (``hoodie-lab diff``);
* :mod:`pipeline.run_dir` -- the run dir layout, durable appends, the one-pipeline-per-table lock;
* :mod:`pipeline.executor` -- the write job of a batch: the writer tasks (Spark tasks) parse, route by the
  bucket index and write the records (generated or user data), the driver gets only their write statuses.

Limitations: a user data file is parsed by one task (one row of the binary-file source); deletes only from
user data (``--delete-field``); no compaction, clustering or cleaning of old file versions (the data-file
writer does not do them).
"""
