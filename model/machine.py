"""What every table-level state machine of the spec derives from its guards.

A machine (:mod:`model.table_machine`, :mod:`model.concurrency.machine`, :mod:`model.mdt.machine`,
:mod:`model.archival_machine`) states its rules once: ``candidate_actions(cfg)`` in a fixed order and
``step(cfg, state, action)``, which returns the next state or raises the machine's ``Refused`` saying
why the guard refuses. Which actions are enabled, and why one is not, follow from ``step`` alone.
"""

from __future__ import annotations

from typing import Callable, Iterable, TypeVar

A = TypeVar("A")
S = TypeVar("S")


def enabled(candidates: Iterable[A], step: Callable[[A], S], refused: type[Exception]) -> list[tuple[A, S]]:
    """The candidates whose guard lets them run, with their next states, in the candidates' order."""
    out = []
    for a in candidates:
        try:
            out.append((a, step(a)))
        except refused:
            continue
    return out


def refusal(step: Callable[[A], object], action: A, refused: type[Exception]) -> str | None:
    """Why ``action`` is not enabled (the guard's reason), or ``None`` when it is."""
    try:
        step(action)
    except refused as exc:
        return str(exc)
    return None


__all__ = ["enabled", "refusal"]
