"""The library: everything that reads or writes files, below the drivers and the CLI.

* :mod:`lakeio.ondisk` -- read a Hudi table's ``.hoodie`` (timeline, properties, commit metadata) and write
  skeleton tables;
* :mod:`lakeio.hudiformat` -- write real Hudi data files (parquet base files, log files) and drive a table's
  timeline on disk;
* :mod:`lakeio.audit` -- audit a table against the model's invariants (never writes to it);
* :mod:`lakeio.traces` -- trace files (the :mod:`model.trace` format);
* :mod:`lakeio.errors` -- :class:`UserError`: bad input, one line, exit 2;
* :mod:`lakeio.plots` -- shared matplotlib figures; :mod:`lakeio.fixtures` -- the real fixture tables;
* ``lakeio/experiments/*.toml`` (simulation experiment files), ``lakeio/schemas/*.avsc`` (Hudi's Avro schemas).

Imports :mod:`model` only (never :mod:`engine`, the drivers or :mod:`hoodie_lab`).
"""
