"""Focused tests for model/timeline.py that a hand-applied mutation sample showed unchecked (issue #15 item 10):
every refusal of ``create`` / ``transition_to_inflight`` / ``complete`` / ``delete`` with its exact rule id and
text, the strict "completion after requested" bound at equality, and ``overwrite`` storage (a second create,
inflight or completion rewrites the file, records the writer, keeps the first completion time in layout 2 and
takes the new one in layout 1)."""

from __future__ import annotations

import pytest

from model.errors import TimelineError
from model.instant import Action, State
from model.timeline import OVERWRITE, Timeline

T = "2026010100000000"  # + one digit
R, I, C = State.REQUESTED, State.INFLIGHT, State.COMPLETED
DONE = f"{T}1->{T}2.commit[completed]"


def table(version: int = 8, storage: str = "put-if-absent") -> Timeline:
    """T1 commit completed at T2, T3 commit requested, T4 restore requested (pending)."""
    tl = Timeline(version, storage=storage)
    tl.create(f"{T}1", Action.COMMIT, by="x")
    tl.transition_to_inflight(f"{T}1", Action.COMMIT, by="x")
    tl.complete(f"{T}1", Action.COMMIT, f"{T}2", by="x")
    tl.create(f"{T}3", Action.COMMIT)
    tl.create(f"{T}4", Action.RESTORE)
    return tl


REFUSALS = [
    ("create", (f"{T}1", Action.COMMIT), "I3.create-once", f"instant {T}1.commit already exists ({DONE})"),
    ("create", ("123", Action.COMMIT), "I1.time-format", "requested time '123' is not 17 digits"),
    ("create", (f"{T}5", Action.DELTACOMMIT), "I5.no-write-during-restore",
     f"cannot start {T}5.deltacommit: restore {T}4 is pending"),
    ("transition_to_inflight", (f"{T}1", Action.COMMIT), "I3.legal-transition",
     f"{DONE} cannot move to inflight: it is completed, not requested"),
    ("transition_to_inflight", (f"{T}9", Action.COMMIT), "I3.legal-transition", f"no instant {T}9.commit on the timeline"),
    ("complete", (f"{T}1", Action.COMMIT, f"{T}9"), "I3.complete-once", f"{DONE} is already completed"),
    ("complete", (f"{T}3", Action.COMMIT, f"{T}9"), "I3.legal-transition",
     f"{T}3.commit[requested] cannot complete: it is requested, not inflight"),
    ("complete", (f"{T}9", Action.COMMIT, f"{T}9"), "I3.legal-transition", f"no instant {T}9.commit on the timeline"),
    ("delete", (f"{T}1", Action.COMMIT), "I3.delete", f"{DONE} is completed; deleting it needs allow_completed"),
    ("delete", (f"{T}9", Action.COMMIT), "I3.delete", f"no instant {T}9.commit on the timeline"),
]


@pytest.mark.parametrize("op,args,rule,detail", REFUSALS)
def test_refusals(op, args, rule, detail):
    tl = table()
    before = [str(i) for i in tl.instants()]
    with pytest.raises(TimelineError) as e:
        getattr(tl, op)(*args)
    assert (e.value.rule, e.value.detail) == (rule, detail)
    assert [str(i) for i in tl.instants()] == before


def test_completion_time_format_and_strict_order():
    tl = table()
    tl.transition_to_inflight(f"{T}3", Action.COMMIT)
    for ct, rule, detail in (("12", "I1.time-format", "completion time '12' is not 17 digits"),
                             (f"{T}3", "I2.requested-before-completion",
                              f"completion time {T}3 is not after requested time {T}3"),
                             (f"{T}2", "I2.requested-before-completion",
                              f"completion time {T}2 is not after requested time {T}3")):
        with pytest.raises(TimelineError) as e:
            tl.complete(f"{T}3", Action.COMMIT, ct)
        assert (e.value.rule, e.value.detail) == (rule, detail)
    assert str(tl.complete(f"{T}3", Action.COMMIT, f"{T}5")) == f"{T}3->{T}5.commit[completed]"
    with pytest.raises(TimelineError) as e:
        Timeline(6).create(f"{T}5", Action.CLUSTERING)
    assert (e.value.rule, e.value.detail) == (
        "I4.layout-action", "action clustering does not exist in timeline layout 1 (table version 6)")
    with pytest.raises(ValueError) as e:
        Timeline(8, storage="x")
    assert str(e.value) == "unknown storage mode 'x'; expected one of ('put-if-absent', 'overwrite')"


def test_allowed_variants_of_the_refused_operations():
    tl = table()
    assert str(tl.create(f"{T}5", Action.COMMIT, allow_during_restore=True)) == f"{T}5.commit[requested]"
    assert str(tl.create(f"{T}6", Action.CLEAN)) == f"{T}6.clean[requested]"  # no data write: not blocked
    assert str(tl.delete(f"{T}1", Action.COMMIT, allow_completed=True)) == DONE
    assert tl.pending_times(Action.COMMIT) == [f"{T}3", f"{T}5"] and tl.writers_of(f"{T}1", Action.COMMIT) == {}
    assert str(tl.delete(f"{T}3", Action.COMMIT)) == f"{T}3.commit[requested]"
    assert tl.pending_times(Action.COMMIT) == [f"{T}5"]


@pytest.mark.parametrize("version,completion", [(6, f"{T}7"), (8, f"{T}2")])
def test_overwrite_storage_rewrites_and_records_the_writer(version, completion):
    tl = table(version, OVERWRITE)
    assert str(tl.create(f"{T}1", Action.COMMIT, by="y")) == DONE
    assert tl.writers_of(f"{T}1", Action.COMMIT) == {R: ("x", "y"), I: ("x",), C: ("x",)}
    assert str(tl.transition_to_inflight(f"{T}1", Action.COMMIT, by="y")) == DONE
    for ct, rule, detail in (("12", "I1.time-format", "completion time '12' is not 17 digits"),
                             (f"{T}1", "I2.requested-before-completion",
                              f"completion time {T}1 is not after requested time {T}1")):
        with pytest.raises(TimelineError) as e:
            tl.complete(f"{T}1", Action.COMMIT, ct)
        assert (e.value.rule, e.value.detail) == (rule, detail)
    assert str(tl.complete(f"{T}1", Action.COMMIT, f"{T}7", by="z")) == f"{T}1->{completion}.commit[completed]"
    assert tl.writers_of(f"{T}1", Action.COMMIT) == {R: ("x", "y"), I: ("x", "y"), C: ("x", "z")}
    # a requested instant is moved to inflight normally; an instant without a requested file cannot be
    tl.create(f"{T}8", Action.COMMIT, allow_during_restore=True)
    assert str(tl.transition_to_inflight(f"{T}8", Action.COMMIT, by="w")) == f"{T}8.commit[inflight]"
    assert tl.writers_of(f"{T}8", Action.COMMIT) == {I: ("w",)}
    sp = tl.create(f"{T}9", Action.SAVEPOINT)  # starts inflight: no requested file
    with pytest.raises(TimelineError) as e:
        tl.transition_to_inflight(f"{T}9", Action.SAVEPOINT)
    assert (e.value.rule, e.value.detail) == (
        "I3.legal-transition", f"{sp} cannot move to inflight: it is inflight, not requested")


def test_put_if_absent_storage_refuses_the_rewrites():
    tl = table()
    tl.transition_to_inflight(f"{T}3", Action.COMMIT)
    with pytest.raises(TimelineError) as e:
        tl.transition_to_inflight(f"{T}3", Action.COMMIT)
    assert (e.value.rule, e.value.detail) == (
        "I3.legal-transition", f"{T}3.commit[inflight] cannot move to inflight: it is inflight, not requested")
