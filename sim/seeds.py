"""Seeds of simulation runs, derived from the experiment seed and a run's coordinates.

Shared by :mod:`sim.experiments` (grid points, curve runs) and :mod:`sim.recovery` (crash runs), so
neither imports the other for it.
"""

from __future__ import annotations

import hashlib


def derive_seed(seed: int, *parts) -> int:
    """A 63-bit seed from the experiment seed and a task's coordinates (stable across processes)."""
    h = hashlib.sha256(repr((seed, *parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1
