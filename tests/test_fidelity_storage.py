"""Issue #15 item 7: storage with and without put-if-absent, and TrueTime's lock.

Two writers obtain a requested time at the same true millisecond. Without TrueTime (0.x
``createNewInstantTime``: read the clock, no lock) they get the same time.
"""

import pytest

from model.errors import TimelineError
from model.instant import Action, State
from model.invariants.timeline import check_single_writer, timeline_verdicts
from model.timeline import OVERWRITE, PUT_IF_ABSENT, Timeline
from model.truetime import NaiveGenerator, SkewAdjustingTimeGenerator, TimeGeneratorConfig

C = Action.COMMIT


def two_writers(gen, tl: Timeline):
    """w1 and w2 each: generate, create, inflight, complete (completion under the generator)."""
    t1 = gen.generate("w1", 0).time
    t2 = gen.generate("w2", 0).time
    for who, t in (("w1", t1), ("w2", t2)):
        tl.create(t, C, by=who)
    for who, t in (("w1", t1), ("w2", t2)):
        tl.transition_to_inflight(t, C, by=who)
    comps = []
    for who, t in (("w1", t1), ("w2", t2)):
        rec, _ = gen.consume_time(who, 5 if who == "w1" else 9, lambda c, t=t, who=who: tl.complete(t, C, c, by=who))
        comps.append(rec.time)
    return t1, t2, comps


@pytest.mark.parametrize("version", [6, 8])
def test_overwrite_storage_lets_colliding_writers_overwrite_each_other(version):
    tl = Timeline(version, storage=OVERWRITE)
    t1, t2, (c1, c2) = two_writers(NaiveGenerator(), tl)
    assert t1 == t2  # the collision
    assert len(tl) == 1  # one instant; both writers believe it is theirs
    assert tl.writers_of(t1, C) == {State.REQUESTED: ("w1", "w2"), State.INFLIGHT: ("w1", "w2"),
                                    State.COMPLETED: ("w1", "w2")}
    # layout 1 rewrote t.commit: w1's commit metadata (and its completion) is gone
    assert tl.get(t1, C).completion_time == (c2 if version == 6 else c1)
    v = check_single_writer(tl)
    assert not v.holds and "written by 2 processes" in v.detail and v.involved == (f"{t1}.commit",)
    assert not all(x.holds for x in timeline_verdicts(tl))


def test_put_if_absent_refuses_the_second_create():
    tl = Timeline(8, storage=PUT_IF_ABSENT)
    gen = NaiveGenerator()
    t1 = gen.generate("w1", 0).time
    t2 = gen.generate("w2", 0).time
    tl.create(t1, C, by="w1")
    with pytest.raises(TimelineError) as e:
        tl.create(t2, C, by="w2")
    assert e.value.rule == "I3.create-once"
    assert tl.writers_of(t1, C) == {State.REQUESTED: ("w1",)} and check_single_writer(tl).holds


@pytest.mark.parametrize("storage", [OVERWRITE, PUT_IF_ABSENT])
def test_truetime_lock_prevents_the_collision_on_either_storage(storage):
    tl = Timeline(8, storage=storage)
    t1, t2, _ = two_writers(SkewAdjustingTimeGenerator(TimeGeneratorConfig(max_expected_skew_ms=5)), tl)
    assert t1 < t2 and len(tl) == 2
    assert all(v.holds for v in timeline_verdicts(tl))


def test_storage_mode_is_checked_and_copied():
    with pytest.raises(ValueError, match="storage mode"):
        Timeline(8, storage="s3")
    tl = Timeline(6, storage=OVERWRITE)
    tl.create("20250101000000001", C, by="a")
    cp = tl.copy()
    cp.create("20250101000000001", C, by="b")
    assert cp.storage == OVERWRITE and tl.writers_of("20250101000000001", C) == {State.REQUESTED: ("a",)}
