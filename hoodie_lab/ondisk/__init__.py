"""The on-disk layer: read Hudi tables into model objects, write timeline files and skeleton tables.

* :mod:`hoodie_lab.ondisk.reader` -- :func:`read_table` -> :class:`Table` (never writes);
* :mod:`hoodie_lab.ondisk.properties` -- ``hoodie.properties`` read/write;
* :mod:`hoodie_lab.ondisk.metadata` -- commit metadata and plans (JSON / Avro) both ways, immutable
  timeline-file creation;
* :mod:`hoodie_lab.ondisk.skeleton` -- write a model timeline + file listing as a table directory.
"""

from .reader import Table, read_table

__all__ = ["Table", "read_table"]
