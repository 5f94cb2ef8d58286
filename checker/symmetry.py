"""Symmetry reduction: states equal up to a renaming of interchangeable writer tasks count once.

As in TLC (``SYMMETRY``) and Stateright (``Representative``): the model says how a state's task ids
are renamed (:meth:`checker.protocol.SystemModel.permute`, built on :meth:`engine.System.permute_tasks`)
and whether renaming them is sound for its configuration; the checker chooses the representative of a
state's orbit and hashes that instead of the state (:func:`checker.explorer.explore`'s ``symmetry``).

The representative of ``s`` is the renaming ``perm(s)``, over all ``n!`` permutations of the ``n``
tasks, whose fingerprint has the smallest hash (``model.fingerprint_hash``, a function of the fingerprint) (ties: the first permutation in lexicographic order).
Sound by construction: the fingerprint kept is the exact fingerprint of a state of ``s``'s orbit, so
two states share it only when they are renamings of one another (orbits are disjoint). Canonical up
to hash ties: every member of an orbit has the same set of renamings, so the same smallest hash; a
tie between two different renamings (a 64-bit collision) could only keep an orbit twice (a state
counted twice, never a state lost). The search still expands the actual states it reached, so every
path is a real run and counterexamples replay unchanged; BFS depth is preserved (a renamed run is a
run of the same length), so counterexamples stay shortest.

Renaming a state by every permutation and hashing each costs ``n!`` copies of the state per successor. A
model may offer a cheaper canonical form instead, ``canonical_forms()`` (the protocol's:
:mod:`engine.canonical`, the state's task-independent parts plus its per-task parts sorted): any function
equal on the renamings of a state and different (up to hash collisions) on states that are not renamings
of one another picks one value per orbit, as the smallest-hash renaming does. The explorers then keep that
value (the representative's fingerprint becomes a different but equally canonical number) and fall back to
renaming for the states where the model's form returns None.
"""

from __future__ import annotations

from itertools import permutations
from typing import Any, Callable

#: Tasks at most: the representative tries every permutation (4! = 24 renamings per state).
MAX_TASKS = 4


class SymmetryRefused(ValueError):
    """The model's tasks are not interchangeable (or too many to canonicalise); the message says why."""


def representative_function(model, max_tasks: int = MAX_TASKS) -> Callable[[Any], Any]:
    """``state -> representative`` for ``model``, which supplies ``symmetry_tasks()`` (the number of
    interchangeable tasks; it raises :class:`SymmetryRefused` when renaming is unsound) and
    ``permute(state, perm)``. Raises :class:`SymmetryRefused` with a one-line reason."""
    tasks = getattr(model, "symmetry_tasks", None)
    if tasks is None or not hasattr(model, "permute"):
        raise SymmetryRefused(f"{type(model).__name__} declares no task symmetry (symmetry_tasks/permute)")
    n = tasks()
    if n > max_tasks:
        raise SymmetryRefused(f"symmetry reduction tries all {n}! task renamings per state; "
                              f"at most {max_tasks} tasks are supported")
    perms = [p for p in permutations(range(n))]
    permute = model.permute
    fingerprint_hash = getattr(model, "fingerprint_hash", None) or (lambda s: hash(model.fingerprint(s)))

    def representative(state):
        best, best_h = None, None
        for p in perms:
            r = permute(state, p)
            h = fingerprint_hash(r)
            if best_h is None or h < best_h:
                best, best_h = r, h
        return best

    representative.canonical = _canonical_forms(model, representative)
    return representative


def _canonical_forms(model, representative) -> dict:
    """``{model's fingerprint function: the representative's fingerprint}`` for the model's
    ``canonical_forms()`` (``(exact, compact)``: functions of a state, equal on the renamings of a state
    and None where they do not apply), the representative's fingerprint where they return None; empty
    when the model has none. :func:`checker.explorer._of_representative` uses them instead of renaming.

    Each function also carries its halves: ``form`` (the model's form, None where it does not apply) and
    ``fallback`` (the representative's fingerprint), so ``f(s)`` is ``f.form(s)``, or ``f.fallback(s)`` where
    that is None."""
    forms = getattr(model, "canonical_forms", None)
    forms = forms() if forms is not None else None
    if not forms:
        return {}
    exact, compact = forms
    fingerprint, fingerprint_hash = model.fingerprint, model.fingerprint_hash

    def exact_fp(state):
        v = exact(state)
        return fingerprint(representative(state)) if v is None else v

    def compact_fp(state):
        v = compact(state)
        return fingerprint_hash(representative(state)) if v is None else v

    # each also as its two halves, for a caller that calls the model's form itself (one call fewer per state)
    exact_fp.form, exact_fp.fallback = exact, lambda state: fingerprint(representative(state))
    compact_fp.form, compact_fp.fallback = compact, lambda state: fingerprint_hash(representative(state))
    return {fingerprint: exact_fp, fingerprint_hash: compact_fp}
