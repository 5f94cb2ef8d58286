"""A task-symmetric fingerprint of a :class:`engine.System`: equal for states that are renamings of one another.

For symmetry reduction (:mod:`checker.symmetry`). The state is split into *shared* parts, which name no
task, and one *column* per task, which holds everything indexed by that task with the task's own id left
out: its writer (offsets, grant, interval, state), its channel of messages in flight, its slot in every
coordinator buffer, its snapshot and slots in the pending and the last completed checkpoint, and its
statuses in every instant's commit metadata (as a sorted tuple: ``permute_tasks`` sorts commit metadata,
no rule reads its order). The canonical fingerprint is the shared parts plus the columns sorted (by
hash): renaming the tasks permutes the columns and changes nothing else, so every member of an orbit
gets the same value; and the shared parts plus the multiset of columns determine the state up to a
renaming, so two orbits share a value only by a hash collision. This holds when every task id inside
task ``t``'s column is ``t`` itself (a writer's events and statuses are its own, a slot holds its task's
event); a part naming another task raises :class:`Foreign` and the caller falls back to renaming the
state by every permutation (:func:`checker.symmetry.representative_function`). The result is one
``permute_tasks`` + hash per permutation avoided per state, and parts unchanged since the last state
(the System's copy-on-write parts) are not recomputed: the System caches each part's result.

Each ``*_part`` function returns ``(shared, columns, shared_hash, column_hashes)``: the exact values
(for exact fingerprints) and their hashes (for compact, 64-bit ones). The System keeps only the hashes
(:func:`hashes`), computed once per change; the exact form is built afresh when asked for. Two parts have
a compact path that builds no column tuple: :func:`writers_hashes` (each writer's column hash, kept on the
writer) and :func:`checkpoint_hashes` (a pending checkpoint keeps its coordinator state's hashes and each
task's column hash); both give exactly :func:`hashes` of their part. A coordinator buffer keeps its slots'
column form (``EventBuffer._cslots``) until a slot changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from model.protocol.values import CompletedCheckpoint, TaskSnapshot, WriteMetadataEvent

if TYPE_CHECKING:
    from .coordinator import Coordinator
    from .writer import WriterTask


class Foreign(Exception):
    """A task-indexed part names another task: the column form does not apply to this state."""


_FOREIGN: Final = Foreign()


_EMPTY_HASH: Final = hash(())

# (the value classes as Final names: compiled, a C static each instead of a look-up in the module's dict)
_WRITE_METADATA: Final = WriteMetadataEvent
_TASK_SNAPSHOT: Final = TaskSnapshot
_COMPLETED: Final = CompletedCheckpoint


def _part(shared, columns: list) -> tuple:
    hs = []
    for c in columns:  # (a loop, not map(hash, ...): compiled, each hash is a direct call)
        hs.append(hash(c))
    return shared, columns, hash(shared), tuple(hs)


def hashes(part: tuple) -> tuple:
    """A part's ``(shared_hash, column_hashes)``: what a System keeps of it (:meth:`engine.System.
    canonical_fingerprint_hash` reads only these)."""
    return part[2], part[3]


def _statuses(sts: tuple, t: int) -> tuple:
    """``WriteStatus`` tuple of task ``t`` without the task: ``(start, end)`` pairs."""
    if not sts:
        return ()
    out = []
    for s in sts:
        if s[0] != t:
            raise _FOREIGN
        out.append((s[1], s[2]))
    return tuple(out)


def _event(e, t: int):
    """A ``WriteMetadataEvent`` of task ``t`` (or None) without the task id."""
    if e is None:
        return None
    if type(e) is not _WRITE_METADATA or e[0] != t:
        raise _FOREIGN
    return (e[1], e[2], _statuses(e[3], t), e[4], e[5])


def _events(evs: tuple, t: int) -> tuple:
    return tuple([_event(e, t) for e in evs]) if evs else ()


def _snapshot(s, t: int):
    if s is None:
        return None
    if type(s) is not _TASK_SNAPSHOT:
        raise _FOREIGN
    return ("snapshot", s[0], s[1], _events(s[2], t))


def _message(m, t: int):
    return _snapshot(m, t) if type(m) is _TASK_SNAPSHOT else _event(m, t)


def writer_column(w: WriterTask) -> tuple:
    """``(column, hash)`` of writer task ``w`` (its own task id left out), cached on the writer (``_canon``:
    :meth:`engine.System._w` drops it before the writer changes, a copy starts without it)."""
    c = w._canon
    if c is None:
        tail = _writer_tail(w)
        ct = tail[2]
        col = (w.offset, w.flushed, w.checkpoint_id, w.instant, w.current_instant, ct[0], ct[1], w.attempt > 0,
               w.confirming)
        c = w._canon = (col, writer_hash(w))
    return c


def _writer_tail(w: WriterTask) -> tuple:
    """``(interval, state, their column form, its hash)`` of ``w``, kept on the writer (``_ctail``) while both
    are the same objects (immutable tuples: an event that changed only an offset does not walk them again)."""
    tail = w._ctail
    if tail is None or tail[0] is not w.interval or tail[1] is not w.state:
        t = w.task
        ct = (_statuses(w.interval, t), _events(w.state, t))
        tail = w._ctail = (w.interval, w.state, ct, hash(ct))
    return tail


def writer_hash(w: WriterTask) -> int:
    """The hash of ``w``'s column (:func:`writer_column`): its fields but the interval and state, and the hash of
    those two together (a function of the column, so equal columns hash equal; the nested interval and state
    are not walked again when only an offset changed). Cached on the writer (``_canon_h``, dropped with
    ``_canon``); the compact fingerprint reads it without building the column."""
    h = w._canon_h
    if h is None:
        tail: tuple = _writer_tail(w)
        h = w._canon_h = hash((w.offset, w.flushed, w.checkpoint_id, w.instant, w.current_instant, tail[3],
                               w.attempt > 0, w.confirming))
    return h


def writers_hashes(writers: list[WriterTask]) -> tuple:
    """:func:`hashes` of :func:`writers_part`, from each writer's :func:`writer_hash`."""
    hs = []
    t = 0
    for w in writers:
        if w.task != t:
            raise _FOREIGN
        hs.append(writer_hash(w))
        t += 1
    return _EMPTY_HASH, tuple(hs)


def writers_part(writers: list[WriterTask]) -> tuple:
    cols, hashes = [], []
    for t, w in enumerate(writers):
        if w.task != t:
            raise _FOREIGN
        col, h = writer_column(w)
        cols.append(col)
        hashes.append(h)
    return (), cols, _EMPTY_HASH, tuple(hashes)


def channels_part(channels: tuple) -> tuple:
    return _part((), [tuple([_message(m, t) for m in ch]) if ch else () for t, ch in enumerate(channels)])


#: ``id(BufferEntry) -> (entry, its slots without task ids)``, for the checkpoints' coordinator state (the live
#: buffers keep their own form, ``EventBuffer._cslots``): a buffer entry is an immutable value shared by the
#: states after it (checkpoints hold it), so its slots are stripped once; the entry is kept alive with its result (its id cannot be reused) and the cache
#: is emptied when it reaches _ENTRIES_MAX.
_entries: Final[dict] = {}
_ENTRIES_MAX: Final = 1 << 16


def _entry_slots(be) -> tuple:
    c = _entries.get(id(be))
    if c is not None and c[0] is be:
        return c[1]
    slots = tuple([_event(e, t) for t, e in enumerate(be[1])])  # (be.slots: by index, a NamedTuple's field)
    if len(_entries) >= _ENTRIES_MAX:
        _entries.clear()
    _entries[id(be)] = (be, slots)
    return slots


def _buffers(entries, n: int) -> tuple:
    """``((key, BufferEntry), ...)``: shared keys and instants, per task the tuple of its slots."""
    m: int = n  # (a parameter is compiled as an object: a native int for the loops)
    keys = []
    cols: list[list] = [[] for _ in range(m)]
    for k, be in entries:
        _add_row(cols, _entry_slots(be), m)
        keys.append((k, be[0]))  # (be.instant)
    return tuple(keys), [tuple(c) for c in cols]


def _add_row(cols: list, row: tuple, m: int) -> None:
    """One buffer's slots (task ids left out) appended to the ``m`` tasks' columns."""
    r: tuple = row  # (parameters are compiled as objects: typed locals)
    n: int = m
    if len(r) != n:
        raise _FOREIGN
    for t in range(n):
        col: list = cols[t]
        col.append(r[t])


def coordinator_part(c: Coordinator, n: int) -> tuple:
    """The coordinator's buffers by key (:func:`_buffers`, in one pass) and its instant, highest ack and
    assignments (shared)."""
    m: int = n  # (a parameter is compiled as an object: a native int for the loops)
    buffers = c.buffers
    keys = []
    cols: list[list] = [[] for _ in range(m)]
    for k in sorted(buffers):
        e = buffers[k]
        s: tuple | None = e._cslots  # (kept by the buffer until a slot changes, and by its copies)
        if s is None:
            s = e._cslots = tuple([_event(x, t) for t, x in enumerate(e.slots)])
        _add_row(cols, s, m)
        keys.append((k, e.instant))
    assigned = c.assigned
    given = tuple(sorted(assigned.items())) if len(assigned) > 1 else tuple(assigned.items())
    return _part((tuple(keys), c.instant, c.max_acked, given), [tuple(x) for x in cols])


def checkpoint_part(cp, n: int) -> tuple:
    """A pending (:class:`engine.checkpoint.PendingCheckpoint`) or completed checkpoint, or None."""
    if cp is None:
        return _part(None, [None] * n)
    tasks = cp.tasks
    if len(tasks) != n:
        raise _FOREIGN
    cs = cp.coordinator_state
    # (typed as any list: inferred from ``[None] * n`` as a list of None, the compiled code read every column of a
    # coordinator state as None -- the checkpoint's slots were left out of the form)
    cols: list
    if cs is None:
        keys, cols = None, [None] * n
    else:
        keys, cols = _buffers(cs, n)
    return _part((cp.id, keys), [(_snapshot(tasks[t], t), cols[t]) for t in range(n)])


def checkpoint_hashes(cp, n: int) -> tuple:
    """:func:`hashes` of :func:`checkpoint_part` (the same values). For a pending checkpoint (a mutable object:
    one task's snapshot arrives at a time) the coordinator state's shared hash and columns and each task's
    column hash are kept on it (``_canon``, each checked by the identity of what it was made from: the
    coordinator state, the task's snapshot), so an acknowledgement hashes that task's column alone."""
    if cp is None or type(cp) is _COMPLETED:
        return hashes(checkpoint_part(cp, n))
    m: int = n
    tasks = cp.tasks
    if len(tasks) != m:
        raise _FOREIGN
    cs = cp.coordinator_state
    c = cp._canon  # (coordinator state, shared hash, its columns, per task (snapshot, column hash) or None)
    if c is None or c[0] is not cs:
        cols: list  # (not inferred from [None] * m: see checkpoint_part)
        if cs is None:
            keys, cols = None, [None] * m
        else:
            keys, cols = _buffers(cs, m)
        c = cp._canon = (cs, hash((cp.id, keys)), cols, [None] * m)
    cols_: list = c[2]
    per: list = c[3]
    out = []
    for t in range(m):
        snap = tasks[t]
        p = per[t]
        if p is None or p[0] is not snap:
            p = per[t] = (snap, hash((_snapshot(snap, t), cols_[t])))
        out.append(p[1])
    return c[1], tuple(out)


def combine(a: tuple, b: tuple) -> tuple:
    """Two parts as one."""
    return (a[0], b[0]), list(zip(a[1], b[1])), hash((a[2], b[2])), tuple(map(hash, zip(a[3], b[3])))


def combine_hashes(a: tuple, b: tuple) -> tuple:
    """:func:`hashes` of :func:`combine` (a, b), from the hashes of ``a`` and ``b``."""
    ac: tuple = a[1]
    bc: tuple = b[1]
    hs = []
    for t in range(len(ac)):
        hs.append(hash((ac[t], bc[t])))
    return hash((a[0], b[0])), tuple(hs)


def _metadata_columns(metadata: dict, n: int) -> tuple:
    """``(instants, columns)`` of the commit metadata: the instants sorted, per task its statuses of each."""
    instants = sorted(metadata)
    cols: list = [[] for _ in range(n)]
    for i in instants:
        per: list = [[] for _ in range(n)]
        for s in metadata[i]:
            t = s[0]
            if not 0 <= t < n:
                raise _FOREIGN
            per[t].append((s[1], s[2]))
        for t in range(n):
            p = per[t]
            if len(p) > 1:
                p.sort()
            cols[t].append(tuple(p))
    return tuple(instants), [tuple(c) for c in cols]


def metadata_part(timeline_signature, metadata: dict, n: int) -> tuple:
    """The table's timeline (shared) and commit metadata: the instants shared, per task its statuses of
    each instant, sorted."""
    instants, cols = _metadata_columns(metadata, n)
    return _part((timeline_signature, instants), cols)


def metadata_hashes(metadata: dict, n: int) -> tuple:
    """``(instants, column hashes)`` of :func:`metadata_part`: its column hashes, and the instants that its
    shared part holds beside the timeline signature (:func:`hashes` of the part is ``(hash((signature,
    instants)), column hashes)``; :meth:`engine.table.Table.canonical_hashes` keeps this while the metadata
    stays the same)."""
    instants, cols = _metadata_columns(metadata, n)
    return instants, _part((), cols)[3]
