"""Focused tests for model.timeline and model.completion_time queries that `make mutate` showed unchecked by
the fast tests (hudi-semantics.md sections 1 and 3.4).

``HoodieActiveTimeline`` queries: an instant's visible state, the completed / pending filters by action, the
write timeline, completion-time ranges ``(start, end]`` ordered by completion time (incremental reads, tv8+),
the last completed instant, and ``CompletionTimeQueryViewV2#getInstantTimes``.
"""

from __future__ import annotations

from model.completion_time import CompletionTimeQueryView
from model.instant import Action, State
from model.timeline import Timeline


def T(n: int) -> str:
    return f"2025010100000{n:04d}"


def tl_with(*instants, version: int = 8) -> Timeline:
    tl = Timeline(version)
    for action, req, comp in instants:
        tl.create(T(req), action)
        if comp == "requested":
            continue
        tl.transition_to_inflight(T(req), action)
        if comp is not None:
            tl.complete(T(req), action, T(comp))
    return tl


def test_state_of_and_state_signature():
    tl = tl_with((Action.COMMIT, 10, 20), (Action.DELTACOMMIT, 30, None), (Action.CLEAN, 40, "requested"))
    assert tl.state_of(T(10), Action.COMMIT) is State.COMPLETED
    assert tl.state_of(T(30), Action.DELTACOMMIT) is State.INFLIGHT
    assert tl.state_of(T(40), Action.CLEAN) is State.REQUESTED
    assert tl.state_of(T(10), Action.DELTACOMMIT) is None and tl.state_of(T(50), Action.COMMIT) is None
    assert tl.state_signature() == ((T(10), State.COMPLETED), (T(30), State.INFLIGHT), (T(40), State.REQUESTED))
    assert Timeline(8).state_signature() == ()


def test_is_completed_completion_time_and_last_completed():
    tl = tl_with((Action.COMMIT, 10, 25), (Action.DELTACOMMIT, 20, 22), (Action.DELTACOMMIT, 30, None),
                 (Action.CLEAN, 40, 41))
    assert tl.is_completed(T(10)) and not tl.is_completed(T(30)) and not tl.is_completed(T(99))
    assert tl.completion_time(T(20)) == T(22) and tl.completion_time(T(30)) is None
    assert tl.completion_time(T(99)) is None
    assert tl.last_completed().requested_time == T(40)
    assert tl.last_completed([Action.COMMIT, Action.DELTACOMMIT]).requested_time == T(20)
    assert tl.last_completed([Action.ROLLBACK]) is None and Timeline(8).last_completed() is None


def test_completed_in_range_is_open_closed_and_ordered_by_completion_time():
    tl = tl_with((Action.COMMIT, 10, 40), (Action.DELTACOMMIT, 20, 30), (Action.DELTACOMMIT, 25, 30),
                 (Action.DELTACOMMIT, 50, None))
    got = lambda s, e: [i.requested_time for i in tl.completed_in_range(s, e)]  # noqa: E731
    assert got(None, None) == [T(20), T(25), T(10)]  # completion 30, 30 (by requested), 40
    assert got(T(30), None) == [T(10)] and got(None, T(30)) == [T(20), T(25)]
    assert got(T(29), T(39)) == [T(20), T(25)] and got(T(30), T(40)) == [T(10)] and got(T(40), None) == []


def test_completed_and_pending_filters_and_the_write_timeline():
    tl = tl_with((Action.COMMIT, 10, 11), (Action.COMPACTION, 20, 21), (Action.DELTACOMMIT, 30, None),
                 (Action.CLEAN, 40, 41), (Action.CLUSTERING, 50, "requested"))
    assert [i.requested_time for i in tl.completed([Action.COMMIT])] == [T(10), T(20)]  # compaction shows commit
    assert [i.requested_time for i in tl.completed([Action.COMPACTION])] == [T(20)]
    assert [i.requested_time for i in tl.pending()] == [T(30), T(50)]
    assert [i.requested_time for i in tl.pending([Action.CLUSTERING])] == [T(50)]
    assert [i.requested_time for i in tl.write_timeline()] == [T(10), T(20), T(30), T(50)]
    assert [i.requested_time for i in tl.contiguous_completed_prefix()] == [T(10), T(20)]
    assert tl.pending_times(Action.DELTACOMMIT) == [T(30)] and tl.pending_times(Action.COMMIT) == []


def test_completion_time_query_view_instant_times():
    """``getInstantTimes(start, end)``: completed instants by completion time in ``(start, end]``."""
    tl = tl_with((Action.COMMIT, 10, 40), (Action.DELTACOMMIT, 20, 30), (Action.DELTACOMMIT, 25, 30),
                 (Action.DELTACOMMIT, 50, None))
    q = CompletionTimeQueryView(tl)
    got = lambda s, e: [i.requested_time for i in q.instant_times(s, e)]  # noqa: E731
    assert got(None, None) == [T(20), T(25), T(10)]
    assert got(T(30), None) == [T(10)] and got(None, T(30)) == [T(20), T(25)] and got(T(40), None) == []
    assert got(T(29), T(39)) == [T(20), T(25)]


def test_revert_inflight_to_requested_only_for_inflight_compactions():
    """``revertInstantFromInflightToRequested``: compaction/logcompaction only, from inflight only; each refusal
    is an I3.revert TimelineError naming the instant."""
    import pytest
    from model.errors import TimelineError
    tl = tl_with((Action.COMPACTION, 10, None), (Action.COMMIT, 20, None), (Action.LOGCOMPACTION, 30, "requested"))
    assert tl.revert_inflight_to_requested(T(10), Action.COMPACTION).state is State.REQUESTED
    assert tl.states_present(T(10), Action.COMPACTION) == frozenset({State.REQUESTED})
    cases = [((T(20), Action.COMMIT), "only compaction/logcompaction revert to requested, not commit"),
             ((T(30), Action.LOGCOMPACTION), f"{T(30)}.logcompaction[requested] is not inflight"),
             ((T(99), Action.COMPACTION), f"no instant {T(99)}.compaction on the timeline")]
    for args, detail in cases:
        with pytest.raises(TimelineError) as e:
            tl.revert_inflight_to_requested(*args)
        assert (e.value.rule, e.value.detail) == ("I3.revert", detail)


def test_revert_to_inflight_restores_the_pending_files():
    """``revertToInflight``: requested+inflight (a savepoint: inflight only) again, no completion time; only a
    completed instant can be reverted."""
    import pytest
    from model.errors import TimelineError
    tl = tl_with((Action.COMMIT, 10, 20), (Action.SAVEPOINT, 30, "requested"), (Action.DELTACOMMIT, 40, None))
    back = tl.revert_to_inflight(T(10), Action.COMMIT)
    assert back.state is State.INFLIGHT and back.completion_time is None and tl.completion_time(T(10)) is None
    assert tl.states_present(T(10), Action.COMMIT) == frozenset({State.REQUESTED, State.INFLIGHT})
    assert [i.requested_time for i in tl.pending()][0] == T(10)
    sp = Timeline(8)
    sp.load(T(30), Action.SAVEPOINT, [State.INFLIGHT, State.COMPLETED], T(31))
    sp.revert_to_inflight(T(30), Action.SAVEPOINT)
    assert sp.states_present(T(30), Action.SAVEPOINT) == frozenset({State.INFLIGHT})
    with pytest.raises(TimelineError) as e:
        tl.revert_to_inflight(T(40), Action.DELTACOMMIT)
    assert (e.value.rule, e.value.detail) == ("I3.revert", f"{T(40)}.deltacommit[inflight] is not completed")
    with pytest.raises(TimelineError) as e:
        tl.revert_to_inflight(T(99), Action.COMMIT)
    assert e.value.rule == "I3.revert"


def test_completion_time_query_view_archived_and_completed_before():
    """``CompletionTimeQueryViewV2``: ``isArchived(t)`` := t < the first non-savepoint commit of the active timeline
    (never with the broken history-less lookup); ``isCompletedBefore(base, t)``: completion(t) < base, strictly."""
    tl = tl_with((Action.COMMIT, 10, 20), (Action.DELTACOMMIT, 30, 40))
    q = CompletionTimeQueryView(tl)
    assert q.is_archived(T(9)) and not q.is_archived(T(10)) and not q.is_archived(T(11))
    assert not CompletionTimeQueryView(tl, use_history=False).is_archived(T(9))
    assert not CompletionTimeQueryView(Timeline(8)).is_archived(T(9))
    assert q.is_completed_before(T(21), T(10)) and not q.is_completed_before(T(20), T(10))
    assert not q.is_completed_before(T(99), T(50))


def test_rolled_back_lists_the_targets_of_rollback_command_blocks_only():
    from model.logblocks import BlockKind, LogBlock, data_block, rolled_back, rollback_block
    blocks = [data_block(T(1)), rollback_block(T(3), T(1)), LogBlock(BlockKind.COMMAND, T(4)),
              LogBlock(BlockKind.DATA, T(5), T(2))]
    assert rolled_back(blocks) == frozenset({T(1)})
