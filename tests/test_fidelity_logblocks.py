"""Issue #15 item 6: log blocks (data, delete, rollback command), shared tv6 logs, and a compaction
plan that lists a log whose deltacommit is later rolled back (I9 for tv6 too)."""

from __future__ import annotations

from model import logblocks as lb
from model.filenames import BaseFile, LogFile
from model.instant import Action
from model.invariants.timeline import (
    check_compaction_plan_blocks,
    check_compaction_plans,
    check_log_blocks_read,
    committed_files,
    table_verdicts,
)
from model.slicing import FileSystemView
from model.timeline import Timeline

DC = Action.DELTACOMMIT


def T(n: int) -> str:
    return f"2025010100000{n:04d}"


BASE = BaseFile("fg-0", "0-1-1", T(10), "parquet", "p")
LOG6 = LogFile("fg-0", T(10), 1, "0-1-1", False, "p")  # tv6: named after the slice, shared by writers


def done(tl, t, c, action=DC):
    tl.create(t, action), tl.transition_to_inflight(t, action), tl.complete(t, action, c)


def ignores_rollback_blocks(blocks, timeline, latest_instant=None):
    """BROKEN reader: skips uncommitted blocks but ignores rollback command blocks."""
    return lb.scan([b for b in blocks if b.kind is not lb.BlockKind.COMMAND], timeline, latest_instant)


def reads_uncommitted_blocks(blocks, timeline, latest_instant=None):
    """BROKEN reader: merges every data block, committed or not."""
    return [b for b in blocks if b.carries_data]


def shared_log_table(archive: bool, adjacent: bool = True):
    """tv6 fg-0: base t10; d20 and d30 append to one log; d30 fails and rollback r40 appends a ROLLBACK
    block for it (right after d30's block, or after d35's block when ``adjacent`` is False); d20 and d35
    complete. ``archive``: the completed instants up to d20 leave the active timeline."""
    tl = Timeline(6)
    done(tl, T(10), T(11))
    blocks = [lb.data_block(T(20))]
    done(tl, T(20), T(21))
    tl.create(T(30), DC), tl.transition_to_inflight(T(30), DC)
    blocks.append(lb.data_block(T(30)))
    tl.create(T(35), DC), tl.transition_to_inflight(T(35), DC)
    if adjacent:
        blocks += [lb.rollback_block(T(40), T(30)), lb.data_block(T(35))]
    else:
        blocks += [lb.data_block(T(35)), lb.rollback_block(T(40), T(30))]
    tl.delete(T(30), DC)
    done(tl, T(40), T(41), Action.ROLLBACK)
    tl.complete(T(35), DC, T(36))
    if archive:
        for t in (T(10), T(20)):
            tl.delete(t, DC, allow_completed=True)
    return tl, {LOG6: tuple(blocks)}


def view(tl, logs=(LOG6,), pending=None):
    return FileSystemView(tl, [BASE], list(logs), pending_compactions=pending or {})


def test_reader_skips_rolled_back_and_uncommitted_blocks_of_a_shared_log():
    for archive in (False, True):
        tl, blocks = shared_log_table(archive)
        merged = lb.scan(blocks[LOG6], tl)
        assert [b.instant_time for b in merged] == [T(20), T(35)]
        assert lb.writers(blocks[LOG6]) == {T(20), T(30), T(35)}
        assert check_log_blocks_read(view(tl), tl, blocks).holds
        assert all(v.holds for v in table_verdicts(tl, view(tl), [BASE], [LOG6], rule="instant-time",
                                                   log_blocks=blocks))


def test_broken_readers_are_caught():
    tl, blocks = shared_log_table(archive=True)  # d30 now looks archived: only the ROLLBACK block masks it
    v = check_log_blocks_read(view(tl), tl, blocks, reader=ignores_rollback_blocks)
    assert not v.holds and "roll back" in v.detail and T(30) in v.detail
    tl, blocks = shared_log_table(archive=False)
    tl.create(T(50), DC), tl.transition_to_inflight(T(50), DC)
    blocks = {LOG6: blocks[LOG6] + (lb.data_block(T(50)),)}  # an inflight writer's block
    assert check_log_blocks_read(view(tl), tl, blocks).holds
    v = check_log_blocks_read(view(tl), tl, blocks, reader=reads_uncommitted_blocks)
    assert not v.holds and "non-completed instant" in v.detail


def test_finding_archival_resurrects_a_rolled_back_block_in_a_shared_log():
    """(Model finding, inferred from ``scanInternal``.) A ROLLBACK block pops only the queued blocks on
    top that belong to its target. When another writer's block lies between the failed block and the
    rollback block, nothing is popped; while the failed instant is on the active timeline it is skipped
    as uncommitted, but once archival moves the timeline's start past it, ``containsOrBeforeTimelineStarts``
    takes it for archived (completed) and the reader merges the rolled-back block."""
    tl, blocks = shared_log_table(archive=False, adjacent=False)
    assert check_log_blocks_read(view(tl), tl, blocks).holds
    tl, blocks = shared_log_table(archive=True, adjacent=False)
    assert [b.instant_time for b in lb.scan(blocks[LOG6], tl)] == [T(20), T(30), T(35)]
    v = check_log_blocks_read(view(tl), tl, blocks)
    assert not v.holds and f"data@{T(30)}" in v.detail


def test_committed_files_attributes_tv6_logs_by_block():
    tl, _ = shared_log_table(archive=False)
    only_failed = LogFile("fg-0", T(10), 2, "0-1-1", False, "p")
    blocks = {LOG6: (lb.data_block(T(20)),), only_failed: (lb.data_block(T(30)), lb.rollback_block(T(40), T(30)))}
    _, logs = committed_files(tl, [BASE], [LOG6, only_failed], blocks)
    assert logs == [LOG6]
    _, logs = committed_files(tl, [BASE], [LOG6, only_failed])  # names alone: every tv6 log counts
    assert logs == [LOG6, only_failed]


def test_plan_listing_a_log_whose_deltacommit_is_later_rolled_back_tv6():
    """d20 completed (at t25) and compaction t50 plans the shared log; then d20 is rolled back
    (restore, r60 > t50): the base file the compaction writes holds data the table rolled back."""
    tl = Timeline(6)
    done(tl, T(10), T(11))
    done(tl, T(20), T(25))
    blocks = {LOG6: (lb.data_block(T(20)),)}
    plans = {T(50): [LOG6]}
    tl.create(T(50), Action.COMPACTION)
    assert check_compaction_plan_blocks(tl, plans, blocks).holds
    tl.delete(T(20), DC, allow_completed=True)
    done(tl, T(60), T(61), Action.ROLLBACK)
    blocks = {LOG6: blocks[LOG6] + (lb.rollback_block(T(60), T(20)),)}
    v = check_compaction_plan_blocks(tl, plans, blocks)
    assert not v.holds and "rolled back after the plan" in v.detail
    names = [x.invariant for x in table_verdicts(tl, view(tl, pending={("p", "fg-0"): T(50)}), [BASE], [LOG6],
                                                 rule="instant-time", compaction_plans=plans) if not x.holds]
    assert "I9.compaction-plan" not in names  # without blocks tv6 has no I9: the blind spot
    names = [x.invariant for x in table_verdicts(tl, view(tl, pending={("p", "fg-0"): T(50)}), [BASE], [LOG6],
                                                 rule="instant-time", compaction_plans=plans, log_blocks=blocks)
             if not x.holds]
    assert "I9.compaction-plan" in names


def test_plan_made_while_an_older_write_was_pending_tv6():
    """Without the 0.x scheduling guard, a plan at t50 lists the shared log while d30 (older) is still
    writing into it: I9 by blocks names d30's block."""
    tl = Timeline(6)
    done(tl, T(10), T(11))
    done(tl, T(20), T(25))
    tl.create(T(30), DC), tl.transition_to_inflight(T(30), DC)
    blocks = {LOG6: (lb.data_block(T(20)), lb.data_block(T(30)))}
    v = check_compaction_plan_blocks(tl, {T(50): [LOG6]}, blocks)
    assert not v.holds and f"data@{T(30)}" in v.detail


def test_plan_listing_a_log_whose_deltacommit_is_later_rolled_back_tv8():
    tl = Timeline(8)
    done(tl, T(10), T(11))
    done(tl, T(20), T(25))
    lg = LogFile("fg-0", T(20), 1, "0-1-1", False, "p")
    plans = {T(50): [lg]}
    assert check_compaction_plans(tl, plans).holds
    tl.delete(T(20), DC, allow_completed=True)  # rolled back (restore): tv8 deletes its log too
    done(tl, T(60), T(61), Action.ROLLBACK)
    v = check_compaction_plans(tl, plans)
    assert not v.holds and "not completed" in v.detail


# ------------------------------------------------------------------ real tv6 log blocks, read by audit
def test_audit_reads_the_blocks_of_a_real_tv6_rollback_table(fixtures_dir):
    """v6_nonpartitioned_rollback (written by Apache Hudi): deltacommit 20250126040826878 failed; its data
    block sits in log.1 and rollback 20250126040936578 wrote a ROLLBACK command block into log.2. The
    audit reads the blocks, I8.log-blocks and I9 by blocks hold. After (modelled) archival of the first
    instant the failed instant is older than the active timeline -- only the command block masks it: the
    spec reader still drops it, a reader ignoring command blocks is caught."""
    import pytest

    from fixtures_util import extract_table, fixture_zips
    from lakeio.audit import audit_table, log_blocks_on_disk
    from lakeio.ondisk import read_table

    z = next((z for z in fixture_zips() if z.stem == "v6_nonpartitioned_rollback"), None)
    if z is None:
        pytest.skip("v6_nonpartitioned_rollback.zip not found")
    path = extract_table(z)
    t = read_table(path)
    blocks = log_blocks_on_disk(t)
    failed, rb = "20250126040826878", "20250126040936578"
    kinds = sorted((b.kind.value, b.instant_time, b.target_instant) for bl in blocks.values() for b in bl)
    assert ("command", rb, failed) in kinds and ("data", failed, None) in kinds
    res = audit_table(path)
    got = {v.invariant: v.holds for v in res.verdicts}
    assert got["I8.log-blocks"] and got["I9.compaction-plan"] and res.ok
    tl = t.timeline.copy()
    tl.delete("20250126040823628", DC, allow_completed=True)  # archived: the timeline now starts after the failed instant
    v = FileSystemView(tl, t.base_files, t.log_files)
    assert check_log_blocks_read(v, tl, blocks).holds
    bad = check_log_blocks_read(v, tl, blocks, reader=ignores_rollback_blocks)
    assert not bad.holds and failed in bad.detail
