"""The concurrency machine: initial state, enabled actions, steps, invariants, descriptions.

The explorer (:class:`checker.concurrency.ConcurrencyModel`), the Hypothesis suites and the scenario
tests drive it through these functions only; designs are :class:`~.state.MachineConfig` values, named
ones in :mod:`model.concurrency.variants`.
"""

from __future__ import annotations

from .. import machine
from ..invariants.concurrency import concurrency_verdicts
from .actions import Refused, candidate_actions, step
from .state import ConcState, MachineConfig, initial_state


def enabled(cfg: MachineConfig, state: ConcState) -> list[tuple[tuple[str, str], ConcState]]:
    """The enabled actions with their next states, in :func:`~.actions.candidate_actions` order."""
    return machine.enabled(candidate_actions(cfg), lambda a: step(cfg, state, a), Refused)


def refusal(cfg: MachineConfig, state: ConcState, action: tuple[str, str]) -> str | None:
    """Why ``action`` is not enabled in ``state`` (None: it is)."""
    return machine.refusal(lambda a: step(cfg, state, a), action, Refused)


def verdicts(cfg: MachineConfig, state: ConcState) -> list:
    return concurrency_verdicts(cfg, state)


def violated(cfg: MachineConfig, state: ConcState) -> set[str]:
    return {v.invariant for v in verdicts(cfg, state) if not v.holds}


def run(cfg: MachineConfig, actions) -> list[ConcState]:
    """The states of a run of ``actions`` from the initial state (raises :class:`Refused`)."""
    states = [initial_state(cfg)]
    for a in actions:
        states.append(step(cfg, states[-1], a))
    return states


def format_action(action: tuple[str, str]) -> str:
    return f"{action[0]} {action[1]}"


def parse_action(text: str) -> tuple[str, str]:
    who, _, what = text.strip().partition(" ")
    return who, what


def describe(state: ConcState) -> str:
    procs = ", ".join(f"{n}={ph}" + (f"@{t}" if t else "") + f"#{c}" for n, ph, t, c, _ in state.procs)
    comp = f"c={state.comp[0]}" + (f"@{state.comp[1]}" if state.comp[1] else "")
    if state.clus[1] or state.clus[2]:
        comp += f", k={state.clus[0]}" + (f"@{state.clus[1]}" if state.clus[1] else "")
    insts = ", ".join(str(i) for i in state.tl.instants())
    files = ", ".join(f.name for f, _ in state.files)
    return f"now={state.now} lock={state.lock} [{procs}, {comp}] timeline: {insts}; files: {files}"


__all__ = ["enabled", "refusal", "verdicts", "violated", "run", "format_action", "parse_action", "describe",
           "initial_state", "step", "Refused", "MachineConfig", "ConcState"]
