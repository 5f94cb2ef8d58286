"""The read oracle (the ``ConsistentRead`` invariant of Vanlightly's ``hudi/v5_spec``, over history variables).

The history variable is :attr:`~.state.ConcState.committed`: every write that completed, with its
instant, completion time and the ``(key, value)`` it wrote (and the initial commit ``T0``). From it
alone the oracle says what a read at a time must return (:func:`expected`): per key the committed value
with the greatest ordering value (the writer's instant time: ``EVENT_TIME_ORDERING``) among the writes
visible at that time -- completed at or before it on tv8 (completion-time reads), requested at or before
it on tv6. The table's answer goes through the spec's slicing (:class:`model.slicing.FileSystemView`:
``snapshot_read``, ``as_of_read``, ``incremental_read``) and the table's reader
(:func:`~.state.read_slices`); :func:`check` compares them at a state:

* ``oracle.snapshot`` -- the snapshot read returns exactly the expected values (no uncommitted, no
  rolled-back, no lost value);
* ``oracle.as-of`` -- so does a time-travel read at every completed commit that the cleaner's retention
  still promises (all of them before any clean; at and after the earliest commit retained by
  KEEP_LATEST_COMMITS; always at a savepoint);
* ``oracle.incremental`` -- tv8, while no clean deleted files: the records an incremental read over the
  whole timeline returns (files of the instants in range, ``_hoodie_commit_time`` in range) are exactly
  the committed ``(key, value)`` pairs;
* ``oracle.no-duplicate-key`` -- no key is returned by two file groups of one read.

A file the cleaner or a rollback deleted is gone from the listing the view is built from (as Hudi's
``FileSystemView`` lists storage), so a wrongly deleted file shows as a lost value.
"""

from __future__ import annotations

from ..instant import Action
from ..invariants import Verdict
from .state import INIT_VALUE, T0, T0_DONE, ConcState, MachineConfig, read_slices


def history(cfg: MachineConfig, state: ConcState) -> list[tuple]:
    """Every committed write as ``(instant, completion, key, value)``, the initial commit first."""
    out = [(T0, T0_DONE, f"k{k}", INIT_VALUE) for k in range(cfg.keys if cfg.preloaded else 0)]
    for t, c, _, kvs in state.committed:
        out.extend((t, c, k, v) for k, v in kvs)
    return out


def expected(cfg: MachineConfig, state: ConcState, at: str | None = None) -> dict:
    """What a read at ``at`` (None: now) must return: key -> value."""
    by_completion = cfg.settings.table_version >= 8
    best: dict = {}
    for t, c, k, v in history(cfg, state):
        if at is not None and (c if by_completion else t) > at:
            continue
        if k not in best or t >= best[k][0]:
            best[k] = (t, v)
    return {k: v for k, (_, v) in best.items()}


def _observe(state: ConcState, rv) -> tuple[dict, list]:
    """What the table returns for a read plan: key -> value and the duplicated keys."""
    groups, _ = read_slices(state.file_map(), rv.slices, rv.instants)
    out, dups = {}, []
    for gid, recs in sorted(groups.items()):
        for k, rec in recs.items():
            if k in out:
                dups.append(f"{k} in {out[k][0]} and {gid.file_id}")
            else:
                out[k] = (gid.file_id, rec[1])
    return {k: v for k, (_, v) in out.items()}, dups


def _diff(want: dict, got: dict) -> str:
    parts = []
    for k in sorted(set(want) | set(got)):
        if want.get(k) != got.get(k):
            parts.append(f"{k}: read {got.get(k, 'nothing')}, committed {want.get(k, 'nothing')}")
    return "; ".join(parts)


def as_of_times(cfg: MachineConfig, state: ConcState) -> list[str]:
    """The read times the retention promises (see the module docstring)."""
    done = [i for i in state.tl.completed([Action.COMMIT, Action.DELTACOMMIT, Action.COMPACTION,
                                           Action.CLUSTERING])]
    rt = (lambda i: i.completion_time) if cfg.settings.table_version >= 8 else (lambda i: i.requested_time)
    cleaned = [c for c in state.cleans if c[2]]
    times = {sp[1] for sp in state.savepoints}
    if not cleaned:
        times |= {rt(i) for i in done}
    elif all(c[0] == "KEEP_LATEST_COMMITS" and c[1] for c in cleaned):
        floor = max(c[1] for c in cleaned)
        times |= {rt(i) for i in done if i.requested_time >= floor}
    return sorted(times)


def check(cfg: MachineConfig, state: ConcState) -> list[Verdict]:
    """The oracle's verdicts at ``state`` (one per invariant id; the detail names the first failure)."""
    view = state.view()
    bad = {"oracle.snapshot": [], "oracle.as-of": [], "oracle.incremental": [], "oracle.no-duplicate-key": []}

    def judge(name: str, rv, want: dict) -> None:
        got, dups = _observe(state, rv)
        if dups:
            bad["oracle.no-duplicate-key"].append(f"{name}: {'; '.join(dups)}")
        d = _diff(want, got)
        if d:
            bad["oracle.snapshot" if name == "snapshot" else "oracle.as-of"].append(f"{name}: {d}")

    judge("snapshot", view.snapshot_read(), expected(cfg, state))
    for t in as_of_times(cfg, state):
        judge(f"as-of {t}", view.as_of_read(t), expected(cfg, state, t))
    if cfg.settings.table_version >= 8 and not any(c[2] for c in state.cleans):
        inc = view.incremental_read(None, None)
        wanted = {i.requested_time for i in inc.instants}
        files = state.file_map()
        got = {(r[0], r[1], r[3]) for f in tuple(inc.base_files) + tuple(inc.log_files or ())
               for r in files.get(f, ()) if r[3] in wanted}
        want = {(k, v, t) for t, _, k, v in history(cfg, state)}
        if got != want:
            extra, lost = sorted(got - want), sorted(want - got)
            bad["oracle.incremental"].append(f"returned but not committed {extra}; committed but not returned {lost}")
    return [Verdict(inv, not msgs, msgs[0] if msgs else "", tuple(msgs[1:3])) for inv, msgs in bad.items()]


__all__ = ["history", "expected", "as_of_times", "check"]
