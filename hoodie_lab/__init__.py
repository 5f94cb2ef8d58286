"""hoodie-lab: executable specification and simulation testbed for Apache Hudi's timeline.

This package is the top of the house: the CLI (``hoodie_lab.cli``, one module per subcommand in
``hoodie_lab.commands``), the HTML report and the demo. Nothing below imports it; see
``docs/architecture.md`` for the layers.
"""

__version__ = "0.1.0"
