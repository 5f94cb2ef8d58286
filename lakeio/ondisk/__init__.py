"""The on-disk layer: read Hudi tables into model objects, write timeline files and skeleton tables.

* :mod:`lakeio.ondisk.reader` -- :func:`read_table` -> :class:`Table` (never writes);
* :mod:`lakeio.ondisk.properties` -- ``hoodie.properties`` read/write;
* :mod:`lakeio.ondisk.metadata` -- commit metadata and plans (JSON / Avro) both ways, immutable
  timeline-file creation;
* :mod:`lakeio.ondisk.skeleton` -- write a model timeline + file listing as a table directory.
"""

from .reader import Table, read_table

__all__ = ["Table", "read_table"]
