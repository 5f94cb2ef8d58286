"""Issue #15 items 4 and 5: generating and publishing a time are two steps; what a compaction's base
file contains.

Item 4 (tv6, instant-time slicing): a writer obtains its instant time ``tw``, a compaction is scheduled
at ``tc > tw`` before the writer publishes its requested file (the 0.x scheduling guard sees no pending
older write), and the writer's log goes to the slice before-or-on ``tw`` -- the slice the plan already
compacted. Once the compaction completes no snapshot reads that log. With one lock around
"generate + publish" the guard sees the writer (or the writer's time is after ``tc``) and nothing is lost.

Item 5: ``I8.snapshot-completeness`` used to exempt every file in a slice older than a committed base;
with the compaction's inputs tracked it sees the lost log, for tv6 (above) and tv8 (a plan built from a
completion-time lookup that could not see a deltacommit).
"""

from __future__ import annotations

import pytest

from model.filenames import BaseFile, LogFile
from model.instant import Action
from model.invariants.timeline import check_snapshot_reads_every_commit, committed_files, table_verdicts
from model.slicing import FileGroupId, FileSystemView, compaction_inputs, compaction_schedule_refusal
from model.timeline import Timeline

FG = FileGroupId("p", "fg-0")
DC, CP = Action.DELTACOMMIT, Action.COMPACTION


def T(n: int) -> str:
    return f"2025010100000{n:04d}"


def base(t: str) -> BaseFile:
    return BaseFile("fg-0", "0-1-1", t, "parquet", "p")


def log(t: str, version: int = 1) -> LogFile:
    return LogFile("fg-0", t, version, "0-1-1", False, "p")


def done(tl: Timeline, t: str, action: Action, c: str) -> None:
    tl.create(t, action)
    tl.transition_to_inflight(t, action)
    tl.complete(t, action, c)


class Table:
    """A model table: timeline, files, pending compactions and the plans as scheduled."""

    def __init__(self, version: int):
        self.tl = Timeline(version)
        self.bases: list[BaseFile] = []
        self.logs: list[LogFile] = []
        self.pending: dict = {}
        self.plans: dict = {}

    def view(self, tl: Timeline | None = None) -> FileSystemView:
        return FileSystemView(tl or self.tl, self.bases, self.logs, pending_compactions=self.pending)

    def schedule_compaction(self, tc: str, planner_timeline: Timeline | None = None) -> None:
        self.plans[tc] = self.view(planner_timeline).compaction_plan_files(tc)
        assert self.plans[tc], "nothing to compact"
        self.tl.create(tc, CP)
        self.pending.update({g: tc for g in self.plans[tc]})

    def run_compaction(self, tc: str, completion: str) -> None:
        self.tl.transition_to_inflight(tc, CP)
        self.tl.complete(tc, CP, completion)
        self.bases.append(base(tc))
        self.pending = {g: t for g, t in self.pending.items() if t != tc}

    def verdicts(self, *, track_inputs: bool = True):
        v = self.view()
        return table_verdicts(self.tl, v, self.bases, self.logs, rule=v.rule,
                              compaction_inputs=compaction_inputs(self.plans) if track_inputs else None)

    def i8(self, *, track_inputs: bool = True):
        v = self.view()
        b, lg = committed_files(self.tl, self.bases, self.logs)
        return check_snapshot_reads_every_commit(
            v, b, lg, compaction_inputs=compaction_inputs(self.plans) if track_inputs else None)


def tv6_table() -> Table:
    """fg-0: base at t10 (deltacommit t10), log 1 appended by deltacommit t21 (named after slice t10)."""
    t = Table(6)
    done(t.tl, T(10), DC, T(11))
    t.bases.append(base(T(10)))
    done(t.tl, T(21), DC, T(22))
    t.logs.append(log(T(10), 1))
    return t


def writer_appends(t: Table, tw: str, completion: str) -> LogFile:
    """The tv6 writer at ``tw`` (already published) writes a new log into its slice and completes."""
    t.tl.transition_to_inflight(tw, DC)
    key = t.view().slice_for_write(FG, tw)
    lg = log(key, 1 + sum(1 for x in t.logs if x.instant_time == key))
    t.logs.append(lg)
    t.tl.complete(tw, DC, completion)
    return lg


def test_two_step_start_lets_a_compaction_in_between_and_strands_the_log():
    t = tv6_table()
    tw = T(30)                                        # step 1: the writer generates its time ...
    assert compaction_schedule_refusal(t.tl, T(40)) is None  # ... invisible to the 0.x guard
    t.schedule_compaction(T(40))                      # plans slice t10 = {base t10, log 1}
    t.tl.create(tw, DC)                               # step 2: the writer publishes t30 < t40
    lg = writer_appends(t, tw, T(45))
    assert lg.instant_time == T(10)                   # named after (and placed in) the slice the plan took
    t.run_compaction(T(40), T(50))
    (s,) = t.view().latest_merged_file_slices()
    assert s.base_instant == T(40) and lg not in s.log_files    # no snapshot reads it
    # the old I8 exempted it ("a newer committed base holds all older data") ...
    assert t.i8(track_inputs=False).holds
    # ... with the compaction's inputs tracked, I8 names the stranded log
    v = t.i8()
    assert not v.holds and v.involved == (lg.path,) and "did not merge it" in v.detail
    assert any(x.invariant == "I8.snapshot-completeness" and not x.holds for x in t.verdicts())


@pytest.mark.parametrize("writer_first", [True, False])
def test_one_lock_around_generate_and_publish_keeps_every_write(writer_first):
    t = tv6_table()
    if writer_first:  # the writer holds the lock through publishing: the guard sees it pending
        t.tl.create(T(30), DC)
        refusal = compaction_schedule_refusal(t.tl, T(40))
        assert refusal is not None and T(30) in refusal
        writer_appends(t, T(30), T(35))
        assert compaction_schedule_refusal(t.tl, T(40)) is None
        t.schedule_compaction(T(40))
        t.run_compaction(T(40), T(50))
    else:  # the compaction generated and published first: the writer's time comes after it
        t.schedule_compaction(T(40))
        t.tl.create(T(45), DC)
        lg = writer_appends(t, T(45), T(47))
        assert lg.instant_time == T(40)               # the log joins the compaction's new slice
        t.run_compaction(T(40), T(50))
    assert t.i8().holds and all(v.holds for v in t.verdicts())


def test_tv8_plan_from_a_lookup_that_could_not_see_a_deltacommit_loses_it():
    """The planner's completion-time lookup cannot see that deltacommit t21 completed (at t25 < t40):
    the plan leaves log t21 out (``isCompletedBefore`` false), completion-time slicing still puts the log
    in the old slice, and the compaction's base does not hold it. I9 holds (the plan lists only logs
    completed before t40); only I8 with the compaction's inputs sees the loss."""
    t = Table(8)
    done(t.tl, T(10), DC, T(11))
    t.bases.append(base(T(10)))
    done(t.tl, T(21), DC, T(25))
    t.logs.append(log(T(21)))
    done(t.tl, T(26), DC, T(27))
    t.logs.append(log(T(26)))
    blind = t.tl.copy()
    blind.revert_to_inflight(T(21), DC)               # the lookup the planner used: t21 looks pending
    t.schedule_compaction(T(40), planner_timeline=blind)
    assert sorted(f.name for s in t.plans[T(40)].values() for f in s.files) == sorted(
        [base(T(10)).name, log(T(26)).name])
    t.run_compaction(T(40), T(50))
    v = t.i8()
    assert not v.holds and v.involved == (log(T(21)).path,)
    assert t.i8(track_inputs=False).holds             # the blind spot
    assert [x.invariant for x in t.verdicts() if not x.holds] == ["I8.snapshot-completeness"]
    # a planner that sees the whole timeline merges both logs: I8 holds
    ok = Table(8)
    ok.tl, ok.bases, ok.logs = t.tl.copy(), [base(T(10))], [log(T(21)), log(T(26))]
    ok.tl.delete(T(40), CP, allow_completed=True)
    ok.schedule_compaction(T(40))
    ok.run_compaction(T(40), T(50))
    assert ok.i8().holds and all(x.holds for x in ok.verdicts())


# ------------------------------------------------------------------------- audit, from the plans on disk
def _ops(plan) -> list[dict]:
    return [{"fileId": g.file_id, "partitionPath": g.partition, "baseInstantTime": s.base_instant,
             "dataFilePath": s.base_file.name if s.base_file else None,
             "deltaFilePaths": [lf.name for lf in s.log_files]} for g, s in sorted(plan.items())]


@pytest.mark.parametrize("version", [6, 8])
def test_audit_sees_the_log_the_compaction_did_not_merge(tmp_path, version):
    from lakeio.audit import audit_table, compaction_inputs_on_disk
    from lakeio.ondisk import read_table
    from lakeio.ondisk.skeleton import SkeletonPlans, write_skeleton

    if version == 6:
        t = tv6_table()
        t.schedule_compaction(T(40))
        t.tl.create(T(30), DC)
        lost = writer_appends(t, T(30), T(45))
        writers = {log(T(10), 1).name: T(21), lost.name: T(30)}
    else:
        t = Table(8)
        done(t.tl, T(10), DC, T(11))
        t.bases.append(base(T(10)))
        for req, comp in ((21, 25), (26, 27)):
            done(t.tl, T(req), DC, T(comp))
            t.logs.append(log(T(req)))
        blind = t.tl.copy()
        blind.revert_to_inflight(T(21), DC)
        t.schedule_compaction(T(40), planner_timeline=blind)
        lost, writers = log(T(21)), {}
    t.run_compaction(T(40), T(50))
    out = write_skeleton(tmp_path / "t", t.tl, t.bases, t.logs,
                         plans=SkeletonPlans(compactions={T(40): _ops(t.plans[T(40)])}, log_writers=writers))
    inputs = compaction_inputs_on_disk(read_table(out))
    assert sorted(f.name for f in inputs[T(40)]) == sorted(f.name for s in t.plans[T(40)].values() for f in s.files)
    res = audit_table(out)
    bad = [v for v in res.verdicts if not v.holds]
    assert [v.invariant for v in bad] == ["I8.snapshot-completeness"] and bad[0].involved == (lost.path,)
    assert res.exit_code == 1


def test_a_plan_naming_no_data_file_is_bad_input(tmp_path):
    from lakeio.audit import compaction_inputs_on_disk
    from lakeio.errors import UserError
    from lakeio.ondisk import read_table
    from lakeio.ondisk.skeleton import SkeletonPlans, write_skeleton

    t = tv6_table()
    t.schedule_compaction(T(40))
    ops = _ops(t.plans[T(40)])
    ops[0]["dataFilePath"] = "not-a-base-file.txt"
    out = write_skeleton(tmp_path / "t", t.tl, t.bases, t.logs, plans=SkeletonPlans(compactions={T(40): ops}))
    with pytest.raises(UserError, match=f"compaction plan {T(40)}"):
        compaction_inputs_on_disk(read_table(out))
    from hoodie_lab.cli import main

    assert main(["audit", str(out)]) == 2


def test_tv8_two_step_start_is_safe_under_completion_time_slicing():
    """The same interleaving on tv8: the writer's log is named after its own deltacommit t30 and
    completes at t45 > t40, so completion-time slicing puts it in the compaction's slice t40, which the
    snapshot reads (HUDI-8464: a compaction request time is "just a barrier in file slicing")."""
    t = Table(8)
    done(t.tl, T(10), DC, T(11))
    t.bases.append(base(T(10)))
    done(t.tl, T(21), DC, T(22))
    t.logs.append(log(T(21)))
    tw = T(30)                                        # generated, not yet published
    t.schedule_compaction(T(40))
    t.tl.create(tw, DC), t.tl.transition_to_inflight(tw, DC)
    t.logs.append(log(tw))
    t.tl.complete(tw, DC, T(45))
    t.run_compaction(T(40), T(50))
    (s,) = t.view().latest_merged_file_slices()
    assert s.base_instant == T(40) and log(tw) in s.log_files
    assert all(v.holds for v in t.verdicts())
