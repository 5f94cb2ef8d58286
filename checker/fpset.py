"""A compact set of 64-bit state fingerprints: a numpy open-addressing table (TLC's ``FPSet``).

TLC keeps the fingerprints of the states it has seen in an ``FPSet`` of 64-bit integers
(``tlc2.tool.fp.MultiFPSet``/``OffHeapDiskFPSet``: open addressing, partitioned by the high bits, with the
states' parents in a separate trace file) rather than in a hash table of objects, and reports at the end
the "calculated (optimistic) probability of a fingerprint collision", ``n * (transitions - n) / 2**64``
(``tlc2.tool.ModelChecker#reportSuccess``: each transition to a state whose fingerprint is already in the
set could have been a different state with the same fingerprint). :class:`FPSet` is the same idea: a
``uint64`` array with linear probing, 0 meaning empty (fingerprint 0 is stored as 1: one more collision
pair in 2**64), doubled when more than :data:`MAX_LOAD` full, and two side arrays per slot holding
what a shortest counterexample needs: the parent's fingerprint and the index of the action within the
parent's ``actions()`` list. 20 bytes a slot, so 33-67 bytes per state at load factors 0.3-0.6 (51.6
measured, ``bench_protocol.py --quick --workers 2``), instead of ~100 for a Python dict entry holding an int.

Inserts come in batches (:meth:`FPSet.add_batch`, vectorised probing: every fingerprint of a batch probes
its next slot at once; two new fingerprints racing for one empty slot are settled by writing both and
reading back which one stayed), so the per-state cost is a few numpy operations shared by the batch.
"""

from __future__ import annotations

import numpy as np

#: grow (double) the table when more than this fraction of its slots is full
MAX_LOAD = 0.6
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: multiply, take the high bits


def as_u64(fps) -> np.ndarray:
    """Signed 64-bit ``hash()`` values (a list of Python ints or an ``int64`` array) as ``uint64``; 0 becomes 1
    (0 marks an empty slot)."""
    a = np.array(fps, dtype=np.int64).view(np.uint64)
    a[a == 0] = 1
    return a


def u64(fp: int) -> int:
    """One fingerprint as the table stores it (see :func:`as_u64`)."""
    fp &= 0xFFFFFFFFFFFFFFFF
    return fp or 1


def collision_probability(states: int, transitions: int) -> float:
    """TLC's "calculated (optimistic) probability of a fingerprint collision" for 64-bit fingerprints:
    ``states * (transitions - states) / 2**64`` (``tlc2.tool.ModelChecker#reportSuccess``:
    ``d * (numOfGenStates - d) / 2^64``; TLC's generated states are our transitions plus the initial
    states, one or a few). Each of the
    ``transitions - states`` transitions that hit a known fingerprint could have met one of ``states``
    others by chance (probability ``1/2**64`` each); 0 when no transition hit a known state."""
    if states <= 0:
        return 0.0
    return states * max(transitions - states, 0) / 2.0 ** 64


class FPSet:
    """A growable set of 64-bit fingerprints with a (parent fingerprint, action index) per entry."""

    def __init__(self, capacity: int = 1 << 16):
        size = 1
        while size < max(capacity, 16):
            size <<= 1
        self._alloc(size)
        self.count = 0

    def _alloc(self, size: int) -> None:
        self.keys = np.zeros(size, dtype=np.uint64)
        self.parents = np.zeros(size, dtype=np.uint64)
        self.via = np.zeros(size, dtype=np.int32)
        self.mask = np.uint64(size - 1)
        self.shift = np.uint64(64 - (size.bit_length() - 1))

    def __len__(self) -> int:
        return self.count

    @property
    def capacity(self) -> int:
        return len(self.keys)

    @property
    def nbytes(self) -> int:
        """Bytes held by the table (keys, parents, action indices)."""
        return self.keys.nbytes + self.parents.nbytes + self.via.nbytes

    def _slots(self, keys: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return ((keys * _MIX) >> self.shift).astype(np.int64)

    def _grow(self, need: int) -> None:
        size = len(self.keys)
        while need > MAX_LOAD * size:
            size <<= 1
        if size == len(self.keys):
            return
        full = self.keys != 0
        keys, parents, via = self.keys[full], self.parents[full], self.via[full]
        self._alloc(size)
        self.count = 0
        self._insert(keys, parents, via)

    def add_batch(self, keys: np.ndarray, parents: np.ndarray | None = None,
                  via: np.ndarray | None = None) -> np.ndarray:
        """Insert ``keys`` (``uint64``, no zeros: :func:`as_u64`); returns a boolean mask, True where the
        key was new. Within the batch the first occurrence of a key is the new one (later ones are
        known), so the order of the batch decides which parent is kept."""
        keys = np.asarray(keys, dtype=np.uint64)
        n = len(keys)
        if parents is None:
            parents = np.zeros(n, dtype=np.uint64)
        if via is None:
            via = np.zeros(n, dtype=np.int32)
        new = np.zeros(n, dtype=bool)
        if n == 0:
            return new
        uniq, first = np.unique(keys, return_index=True)
        self._grow(self.count + len(uniq))
        first.sort()  # keep batch order among the first occurrences
        inserted = self._insert(keys[first], np.asarray(parents, dtype=np.uint64)[first],
                                np.asarray(via, dtype=np.int32)[first])
        new[first[inserted]] = True
        return new

    def _insert(self, keys: np.ndarray, parents: np.ndarray, via: np.ndarray) -> np.ndarray:
        """Insert distinct ``keys``; returns the mask of those that were not present."""
        table = self.keys
        mask = self.mask
        pos = self._slots(keys)
        todo = np.arange(len(keys))
        inserted = np.zeros(len(keys), dtype=bool)
        while len(todo):
            p = pos[todo]
            k = keys[todo]
            cur = table[p]
            found = cur == k
            empty = cur == 0
            if empty.any():
                e = todo[empty]
                pe = p[empty]
                table[pe] = keys[e]           # racing keys: the last write stays
                won = table[pe] == keys[e]
                w = e[won]
                inserted[w] = True
                self.parents[pos[w]] = parents[w]
                self.via[pos[w]] = via[w]
                settled = found.copy()
                settled[np.flatnonzero(empty)[won]] = True
            else:
                settled = found
            todo = todo[~settled]
            pos[todo] = (pos[todo] + 1) & int(mask)
        self.count += int(inserted.sum())
        return inserted

    def add(self, key: int, parent: int = 0, via: int = 0) -> bool:
        """Insert one fingerprint (a Python int); True if it was new."""
        return bool(self.add_batch(np.array([u64(key)], dtype=np.uint64), np.array([parent & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64),
                                   np.array([via], dtype=np.int32))[0])

    def _find(self, key: int) -> int:
        k = np.uint64(u64(key))
        p = int(self._slots(np.array([k], dtype=np.uint64))[0])
        m = int(self.mask)
        while True:
            cur = self.keys[p]
            if cur == k:
                return p
            if cur == 0:
                return -1
            p = (p + 1) & m

    def __contains__(self, key: int) -> bool:
        return self._find(key) >= 0

    def contains_batch(self, keys: np.ndarray) -> np.ndarray:
        """Membership of every key of ``keys`` (``uint64``, no zeros)."""
        keys = np.asarray(keys, dtype=np.uint64)
        pos = self._slots(keys)
        out = np.zeros(len(keys), dtype=bool)
        todo = np.arange(len(keys))
        while len(todo):
            cur = self.keys[pos[todo]]
            hit = cur == keys[todo]
            out[todo[hit]] = True
            todo = todo[~(hit | (cur == 0))]
            pos[todo] = (pos[todo] + 1) & int(self.mask)
        return out

    def parent(self, key: int) -> tuple[int, int]:
        """``(parent fingerprint, action index)`` recorded with ``key``; KeyError when absent."""
        p = self._find(key)
        if p < 0:
            raise KeyError(key)
        return int(self.parents[p]), int(self.via[p])
