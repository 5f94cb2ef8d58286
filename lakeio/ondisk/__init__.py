"""The on-disk layer: read Hudi tables into model objects, write timeline files and skeleton tables.

* :mod:`lakeio.ondisk.reader` -- :func:`read_table` -> :class:`Table` (never writes);
* :mod:`lakeio.ondisk.properties` -- ``hoodie.properties`` read/write;
* :mod:`lakeio.ondisk.metadata` -- commit metadata and plans (JSON / Avro) both ways, immutable
  timeline-file creation;
* :mod:`lakeio.ondisk.skeleton` -- write a model timeline + file listing as a table directory;
* :mod:`lakeio.ondisk.history` -- the timeline's history: the LSM timeline (tv8/9) and the archived log (tv6),
  read and written, lookups across it, and ``TableArchiver`` (archival as the spec decides it, done on disk).
"""

from .reader import Table, read_table

__all__ = ["Table", "read_table"]
