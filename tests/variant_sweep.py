"""Which protocol variants an every-variant test sweeps in ``make test``: one of each kind (the correct
designs of each mode and generation, a safety break, a loss, a stall, the executor queue). The others are
marked ``slow`` and run with ``make deep``."""

import pytest

from model.protocol import VARIANTS

CORE = ("hudi-1.1", "hudi-1.1-blocking", "hudi-0.x-coordinator-start", "hudi-1.1-executor", "single-task-failover",
        "broken-commit-eq", "bug-19215", "blocking-lost-ack-stall", "table-service-on-executor")


def every_variant() -> list:
    """Every variant: the core ones as they are, the others marked slow."""
    assert set(CORE) <= set(VARIANTS), sorted(set(CORE) - set(VARIANTS))
    return [v if v in CORE else pytest.param(v, marks=pytest.mark.slow, id=v) for v in VARIANTS]
