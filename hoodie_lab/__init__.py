"""hoodie-lab: executable specification and simulation testbed for Apache Hudi's timeline.

This package holds everything that is not the pure model: the on-disk layer,
the CLI, replay/explore drivers, reports. ``model/`` imports nothing from here.
"""

__version__ = "0.1.0"
