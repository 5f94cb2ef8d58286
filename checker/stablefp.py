"""A 64-bit fingerprint hash that is the same in every Python process.

Python's ``hash`` is not: strings are hashed with a per-process seed (``PYTHONHASHSEED``; Spark pins it to 0
on its Python workers, but not in the driver) and, up to Python 3.11, ``hash(None)`` is the address of
``None``, which differs between two interpreters (address-space randomisation). The in-process searches
(:func:`checker.explorer.explore`, :mod:`checker.parallel`: forked workers inherit the parent's hashes) may
use ``hash``; a search whose states are hashed in several independent interpreters -- Spark executors
(:mod:`checker.spark_explore`) -- needs this one.

:func:`stable_hash` hashes a canonical text of a fingerprint with BLAKE2b (8-byte digest). The text follows
Python's equality, so that equal fingerprints give equal hashes whatever process computes them:
``True``/``1``/``1.0`` and an ``IntEnum`` member and its value are the same number; a ``str`` subclass
(``class Action(str, Enum)``) is its string; a named tuple is a tuple; a ``frozenset``/``set`` is its
elements' texts sorted (iteration order depends on the hash seed); a dataclass is its class name and its
compared fields; another ``Enum`` member is its class and name. Any other type is refused
(:class:`TypeError` naming it) rather than hashed by an address.
"""

from __future__ import annotations

import dataclasses
import enum
from hashlib import blake2b


def canonical(x) -> str:
    """The canonical text of ``x`` (see the module docstring); equal values give equal texts."""
    if x is None:
        return "N"
    if isinstance(x, int):  # bool, IntEnum: equal to their int values
        return str(int(x))
    if isinstance(x, str):  # a str-valued Enum member equals its string
        return repr(str.__str__(x))
    if isinstance(x, tuple):  # named tuples equal plain tuples
        return "(" + ",".join([canonical(y) for y in x]) + ")"
    if isinstance(x, (frozenset, set)):
        return "{" + ",".join(sorted([canonical(y) for y in x])) + "}"
    if isinstance(x, float):
        return str(int(x)) if x.is_integer() else repr(x)
    if isinstance(x, bytes):
        return "b" + repr(x)
    if isinstance(x, enum.Enum):
        return f"E{type(x).__module__}.{type(x).__qualname__}.{x.name}"
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        fields = [canonical(getattr(x, f.name)) for f in dataclasses.fields(x) if f.compare]
        return f"D{type(x).__module__}.{type(x).__qualname__}(" + ",".join(fields) + ")"
    raise TypeError(f"stable_hash: cannot hash a {type(x).__module__}.{type(x).__qualname__} value stably "
                    f"(fingerprints may hold None, numbers, strings, tuples, frozensets, enums and dataclasses)")


def _digest(text: str) -> int:
    digest = blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") or 1


def stable_hash(fingerprint) -> int:
    """A non-zero 64-bit hash of ``fingerprint`` (an unsigned int, as :func:`checker.fpset.u64` stores them),
    equal in every process for equal fingerprints."""
    return _digest(canonical(fingerprint))


class StableHasher:
    """:func:`stable_hash` with memos, for a search that hashes many states in one process: the hashes of whole
    fingerprints and the texts of their parts (the top-level tuple's items and their items), keyed by value.
    Within one process equal values find the same entry (Python's ``hash``/``==`` are consistent there) and
    :func:`canonical` gives equal values the same text, so the result is :func:`stable_hash`'s; successors
    reached again and the parts most states share (a writer's key, the table's) are hashed once. Each memo is
    emptied when it holds ``limit`` entries."""

    def __init__(self, limit: int = 200_000):
        self.limit = limit
        self.hashes: dict = {}
        self.texts: dict = {}

    def __call__(self, fingerprint) -> int:
        hashes = self.hashes
        h = hashes.get(fingerprint)
        if h is not None:
            return h
        if type(fingerprint) is tuple:
            part = self._part
            h = _digest("(" + ",".join([part(x, 1) for x in fingerprint]) + ")")
        else:
            h = _digest(canonical(fingerprint))
        if len(hashes) >= self.limit:
            hashes.clear()
        hashes[fingerprint] = h
        return h

    def _part(self, x, depth: int) -> str:
        if type(x) is not tuple:
            return canonical(x)
        texts = self.texts
        t = texts.get(x)
        if t is None:
            if depth < 2:
                t = "(" + ",".join([self._part(y, depth + 1) for y in x]) + ")"
            else:
                t = canonical(x)
            if len(texts) >= self.limit:
                texts.clear()
            texts[x] = t
        return t
