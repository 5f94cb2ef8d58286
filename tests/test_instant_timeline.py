import pytest

from model.errors import TimelineError
from model.instant import Action, State, format_millis, normalize_time, to_millis
from model.timeline import Timeline

T0, T1, T2 = "20250101000000000", "20250101000000100", "20250101000000200"


def test_time_codec_round_trip_and_legacy():
    assert normalize_time("20250101000000") == "20250101000000999"
    assert normalize_time("2025010100000012345") == "20250101000000123"
    assert format_millis(to_millis(T1)) == T1
    with pytest.raises(ValueError):
        normalize_time("2025")


def test_forward_state_machine_and_guards():
    tl = Timeline(8)
    tl.create(T0, Action.COMPACTION)
    with pytest.raises(TimelineError) as e:
        tl.complete(T0, Action.COMPACTION, T1)
    assert e.value.rule == "I3.legal-transition"
    tl.transition_to_inflight(T0, Action.COMPACTION)
    done = tl.complete(T0, Action.COMPACTION, T1)
    assert done.shown_action is Action.COMMIT and done.state is State.COMPLETED
    with pytest.raises(TimelineError) as e:
        tl.complete(T0, Action.COMMIT, T2)  # same identity: compaction ~ commit
    assert e.value.rule == "I3.complete-once"


def test_completion_must_follow_request_and_restore_blocks_writes():
    tl = Timeline(9)
    tl.create(T1, Action.DELTACOMMIT)
    tl.transition_to_inflight(T1, Action.DELTACOMMIT)
    with pytest.raises(TimelineError) as e:
        tl.complete(T1, Action.DELTACOMMIT, T0)
    assert e.value.rule == "I2.requested-before-completion"
    tl.create(T2, Action.RESTORE)
    with pytest.raises(TimelineError) as e:
        tl.create("20250101000000300", Action.COMMIT)
    assert e.value.rule == "I5.no-write-during-restore"


def test_clustering_is_layout2_only_and_savepoint_starts_inflight():
    with pytest.raises(TimelineError):
        Timeline(6).create(T0, Action.CLUSTERING)
    tl = Timeline(6)
    assert tl.create(T0, Action.SAVEPOINT).state is State.INFLIGHT


def test_queries():
    tl = Timeline(8)
    for t, c in [(T0, "20250101000000050"), (T1, None), (T2, "20250101000000250")]:
        tl.create(t, Action.DELTACOMMIT)
        tl.transition_to_inflight(t, Action.DELTACOMMIT)
        if c:
            tl.complete(t, Action.DELTACOMMIT, c)
    assert [i.requested_time for i in tl.contiguous_completed_prefix()] == [T0]
    assert [i.requested_time for i in tl.completed_in_range("20250101000000050", None)] == [T2]
    assert tl.completion_time(T1) is None and tl.completion_time(T2) == "20250101000000250"
    tl.revert_to_inflight(T2, Action.DELTACOMMIT)
    assert tl.get(T2, Action.DELTACOMMIT).state is State.INFLIGHT
    tl.delete(T2, Action.DELTACOMMIT)
    assert tl.get(T2, Action.DELTACOMMIT) is None
