"""Exact verdicts of the history invariants (model/invariants/history.py, I15-I16 and the H.* predicates) and the
archival retention candidates (model/archival.py), which `make mutate` showed unchecked: the suites test holds /
violated, but not what a violation says (the invariant id, the detail a counterexample prints, the instants or
files ``involved``), nor the candidate list ``earliest_instant_to_retain`` returns.

For every function that returns ``Verdict``s and every violation branch: the smallest input that violates it and
the whole ``Verdict``; for the holding cases the whole verdict list (ids, order, holds, detail, involved), so a
dropped, ``None`` or reworded entry fails. Inputs are built by hand (LSM states, decisions, active files): no
archiver run, no exploration.
"""

from __future__ import annotations

from model import archival as A
from model import lsm
from model.completion_time import CompletionTimeQueryView
from model.errors import ModelError
from model.filenames import BaseFile, LogFile
from model.instant import Action, Instant, State, format_millis
from model.invariants import Verdict
from model.invariants import history as H
from model.slicing import FileSystemView
from model.timeline import Timeline

T0 = 1_767_225_600_000
R, I, C = State.REQUESTED, State.INFLIGHT, State.COMPLETED


def t(n: int) -> str:
    return format_millis(T0 + n)


def dfile(lo: int, hi: int, level: int = 0) -> str:
    return lsm.data_file_name(t(lo), t(hi), level)


def rec(n: int, action: str = "commit") -> lsm.LSMRecord:
    return lsm.LSMRecord(t(n), t(n + 5), action)


def lsm_state(files: dict, manifests: dict, version: int | None = None, readable: bool = True) -> lsm.LSMState:
    return lsm.LSMState(tuple(sorted(files.items())), tuple(sorted(manifests.items())), version, readable)


# ------------------------------------------------------------------------------------------------ lsm_verdicts
VERSION_OK = Verdict("I15.version-is-latest", True, "", (lsm.VERSION_FILE,))
NO_VERSION = Verdict("I15.version-is-latest", True, "no readable _version_: readers list the manifests")
COMPLETE = Verdict("I15.manifest-complete", True, "", ())


def test_lsm_verdicts_hold_exactly():
    a, b = dfile(0, 10), dfile(20, 30)
    s = lsm_state({a: (rec(0),), b: (rec(20),)}, {1: (a,), 2: (a, b)}, 2)
    assert H.lsm_verdicts(s) == [VERSION_OK, COMPLETE]
    # one manifest above _version_ (written, _version_ not updated yet) is allowed; the empty history too
    assert H.lsm_verdicts(lsm_state({a: (rec(0),), b: (rec(20),)}, {1: (a,), 2: (a, b)}, 1)) == [VERSION_OK, COMPLETE]
    assert H.lsm_verdicts(lsm.EMPTY) == [NO_VERSION, COMPLETE]
    # no _version_ / an unreadable one: readers take the greatest manifest
    assert H.lsm_verdicts(lsm_state({a: (rec(0),)}, {1: (a,)})) == [NO_VERSION, COMPLETE]
    assert H.lsm_verdicts(lsm_state({a: (rec(0),)}, {1: (a,)}, 7, readable=False)) == [NO_VERSION, COMPLETE]


def test_lsm_verdicts_version_behind_by_two_or_naming_no_manifest():
    a = dfile(0, 10)
    behind = lsm_state({a: (rec(0),)}, {1: (), 2: (a,), 3: (a,)}, 1)
    assert H.lsm_verdicts(behind) == [
        Verdict("I15.version-is-latest", False, "_version_ = 1, manifests present [1, 2, 3]", (lsm.VERSION_FILE,)),
        COMPLETE]
    dangling = lsm_state({a: (rec(0),)}, {1: (a,)}, 2)
    assert H.lsm_verdicts(dangling) == [
        Verdict("I15.version-is-latest", False, "_version_ = 2, manifests present [1]", (lsm.VERSION_FILE,)),
        Verdict("I15.manifest-complete", False,
                "manifest_2: _version_ names version 2 but manifest_2 does not exist", ("manifest_2",))]


def test_lsm_verdicts_name_every_missing_file_of_the_latest_manifest():
    a, b, c = dfile(0, 10), dfile(20, 30), dfile(40, 50)
    s = lsm_state({b: (rec(20),)}, {1: (b,), 2: (a, b, c)}, 2)
    assert H.lsm_verdicts(s) == [VERSION_OK, Verdict("I15.manifest-complete", False,
                                                     f"latest manifest lists missing files {[a, c]}", (a, c))]
    # an older manifest's missing file does not count (clean deleted it)
    assert H.lsm_verdicts(lsm_state({b: (rec(20),)}, {1: (a, b), 2: (b,)}, 2)) == [VERSION_OK, COMPLETE]


# ------------------------------------------------------------------------------------------- lsm_step_verdicts
IMMUTABLE = Verdict("I15.immutable-files", True, "", ())
MONOTONE = Verdict("I15.version-monotone", True, "")


def test_lsm_step_verdicts_hold_exactly_for_a_write_and_a_compaction():
    a, b, c = dfile(0, 10), dfile(20, 30), dfile(40, 50)
    s1 = lsm_state({a: (rec(0),), b: (rec(20),)}, {1: (a, b)}, 1)
    assert H.lsm_step_verdicts(s1, s1) == [IMMUTABLE, MONOTONE]
    # an L0 write adds a file and a manifest: no file removed, no shape verdict
    s2 = lsm_state({a: (rec(0),), b: (rec(20),), c: (rec(40),)}, {1: (a, b), 2: (a, b, c)}, 2)
    assert H.lsm_step_verdicts(s1, s2) == [IMMUTABLE, MONOTONE]
    merged = dfile(0, 30, 1)
    s3 = lsm_state(dict(s2.files) | {merged: (rec(0), rec(20))}, {1: (a, b), 2: (a, b, c), 3: (c, merged)}, 3)
    assert H.lsm_step_verdicts(s2, s3) == [IMMUTABLE, MONOTONE,
                                           Verdict("I15.compaction-shape", True, "", (a, b, merged))]
    # clean deletes the sources: a committed file gone is not a rewritten one
    s4 = lsm_state({c: (rec(40),), merged: (rec(0), rec(20))}, {3: (c, merged)}, 3)
    assert H.lsm_step_verdicts(s3, s4) == [IMMUTABLE, MONOTONE]


def test_lsm_step_verdicts_rewritten_file_and_version_going_back():
    a, b = dfile(0, 10), dfile(20, 30)
    s1 = lsm_state({a: (rec(0),), b: (rec(20),)}, {1: (a,), 2: (a, b)}, 2)
    rewritten = lsm_state({a: (rec(1),), b: (rec(20),)}, {1: (a,), 2: (a, b)}, 2)
    assert H.lsm_step_verdicts(s1, rewritten) == [
        Verdict("I15.immutable-files", False, f"committed data files rewritten: {[a]}", (a,)), MONOTONE]
    # a file no manifest lists (a leftover being rewritten) is not committed
    leftover = dfile(40, 50)
    s2 = lsm_state(dict(s1.files) | {leftover: (rec(40),)}, dict(s1.manifests), 2)
    s3 = lsm_state(dict(s1.files) | {leftover: (rec(41),)}, dict(s1.manifests), 2)
    assert H.lsm_step_verdicts(s2, s3) == [IMMUTABLE, MONOTONE]
    same_lists = lsm_state(dict(s1.files), {1: (a, b), 2: (a, b)}, 2)
    back = lsm_state(dict(s1.files), {1: (a, b), 2: (a, b)}, 1)
    assert H.lsm_step_verdicts(same_lists, back) == [IMMUTABLE,
                                                     Verdict("I15.version-monotone", False, "latest version 2 -> 1")]
    # going back to a manifest with fewer files also "removes" files: the shape verdict says it is no compaction
    assert H.lsm_step_verdicts(s1, lsm_state(dict(s1.files), dict(s1.manifests), 1)) == [
        IMMUTABLE, Verdict("I15.version-monotone", False, "latest version 2 -> 1"),
        Verdict("I15.compaction-shape", False, f"compaction of fewer than 2 files {[b]}", (b,))]
    # from "no history" (-1) to the first version is forward
    assert H.lsm_step_verdicts(lsm.EMPTY, lsm_state({a: (rec(0),)}, {1: (a,)}, 1)) == [IMMUTABLE, MONOTONE]


def test_lsm_step_verdicts_compaction_shape_problems_name_removed_and_added():
    a, b, c = dfile(0, 10), dfile(20, 30), dfile(40, 50)
    files = {a: (rec(0),), b: (rec(20),), c: (rec(40),)}
    before = lsm_state(files, {1: (a, b, c)}, 1)

    def after(listed, *new):
        return lsm_state(files | {n: () for n in new}, {1: (a, b, c), 2: tuple(listed)}, 2)

    def shape(s):
        vs = H.lsm_step_verdicts(before, s)
        assert vs[:2] == [IMMUTABLE, MONOTONE] and len(vs) == 3
        return vs[2]

    one = dfile(0, 10, 1)
    assert shape(after([one, b, c], one)) == Verdict(
        "I15.compaction-shape", False, f"compaction of fewer than 2 files {[a]}", (a, one))
    ac = dfile(0, 50, 1)
    assert shape(after([ac, b], ac)) == Verdict(
        "I15.compaction-shape", False, "compacted files are not consecutive in level 0 (positions [0, 2])", (a, c, ac))
    for bad in (dfile(0, 30, 2), dfile(0, 20, 1), dfile(10, 30, 1)):
        assert shape(after([bad, c], bad)) == Verdict(
            "I15.compaction-shape", False, f"{bad} is not level 1 with the union bounds of {[a, b]}", (a, b, bad))
    x, y = dfile(0, 30, 1), dfile(1, 30, 1)
    assert shape(after([c, x, y], x, y)) == Verdict(
        "I15.compaction-shape", False, f"compaction must add exactly one file, added {[x, y]}", (a, b, x, y))
    assert shape(after([c], )) == Verdict(
        "I15.compaction-shape", False, "compaction must add exactly one file, added []", (a, b))
    up = dfile(0, 10, 1)
    mixed_before = lsm_state({a: (), up: (), b: ()}, {1: (up, b)}, 1)
    merged = dfile(0, 30, 2)
    mixed_after = lsm_state({a: (), up: (), b: (), merged: ()}, {1: (up, b), 2: (merged,)}, 2)
    assert H.lsm_step_verdicts(mixed_before, mixed_after)[2] == Verdict(
        "I15.compaction-shape", False, "compaction across levels [0, 1]", (up, b, merged))


def test_lsm_step_verdicts_check_no_shape_without_both_manifests_or_a_new_version():
    a, b = dfile(0, 10), dfile(20, 30)
    before = lsm_state({a: (), b: ()}, {1: (a, b)}, 1)
    # the same version with another file list (a manifest rewritten in place): no update happened
    same_version = lsm_state({a: (), b: ()}, {1: (a,)}, 1)
    assert H.lsm_step_verdicts(before, same_version) == [IMMUTABLE, MONOTONE]
    # _version_ names a missing manifest after the step: I15.version-is-latest's business, no shape verdict
    unreadable = lsm_state({a: (), b: ()}, {1: (a, b)}, 3)
    assert H.lsm_step_verdicts(before, unreadable) == [IMMUTABLE, MONOTONE]
    assert H.lsm_step_verdicts(lsm_state({a: (), b: ()}, {1: (a, b)}, 5), lsm_state({a: ()}, {1: (a, b), 6: (a,)}, 6)
                               ) == [IMMUTABLE, MONOTONE]


# ------------------------------------------------------------------------------------------- decision_verdicts
def inst(n: int, action: Action = Action.COMMIT) -> Instant:
    return Instant(t(n), action, C, t(n + 5))


def decision(commits: int, archived: list[int], retain: int | None = None, savepoint: int | None = None
             ) -> A.ArchivalDecision:
    xs = tuple(inst(n) for n in archived)
    return A.ArchivalDecision(commits, True, None if retain is None else t(retain), (),
                              None if savepoint is None else t(savepoint), xs, xs, "")


CFG = A.ArchivalConfig(max_commits=4, min_commits=2, batch=1, cleaner_commits_retained=1)


def test_decision_verdicts_hold_exactly():
    """A holding verdict carries no violation sentence (the convention of ``Verdict.detail``: it explains a
    violation; a holding one is empty or says what was checked) -- the audit and the report print it."""
    holding = [Verdict("I16.trigger", True), Verdict("I16.keeps-min", True), Verdict("I16.before-retain", True),
               Verdict("I16.savepoint", True)]
    assert H.decision_verdicts(decision(5, [0, 10, 20], retain=30, savepoint=30), CFG) == holding
    # nothing archived: every verdict holds whatever the counts
    assert H.decision_verdicts(decision(1, []), CFG) == holding


def test_decision_verdicts_each_violation():
    trig, keep, retain, sp = H.decision_verdicts(decision(4, [0, 10, 20, 30], retain=20, savepoint=10), CFG)
    assert trig == Verdict("I16.trigger", False, "archived 4 with 4 commits <= keep.max 4")
    assert keep == Verdict("I16.keeps-min", False, "4 - 4 < keep.min 2")
    assert retain == Verdict("I16.before-retain", False, f"archived at/after {t(20)}: {[t(20), t(30)]}",
                             (t(20), t(30)))
    assert sp == Verdict("I16.savepoint", False, f"archived at/after savepoint {t(10)}: {[t(10), t(20), t(30)]}",
                         (t(10), t(20), t(30)))
    # keep.min is kept exactly: 5 - 3 == 2 holds, 5 - 4 does not
    assert H.decision_verdicts(decision(5, [0, 10, 20, 30]), CFG)[1] == Verdict("I16.keeps-min", False,
                                                                                 "5 - 4 < keep.min 2")
    # beyond-savepoint: archiving past the savepoint is allowed
    beyond = A.ArchivalConfig(max_commits=4, min_commits=2, batch=1, cleaner_commits_retained=1, beyond_savepoint=True)
    assert H.decision_verdicts(decision(6, [0, 10], savepoint=0), beyond)[3] == Verdict("I16.savepoint", True)


# ------------------------------------------------------------------------------------------- archival_verdicts
def files_of(n: int, action: Action = Action.COMMIT, states=(R, I, C)) -> set:
    return {A.ActiveFile(t(n), action, st, t(n + 5) if st is C else None) for st in states}


def archived(*recs: lsm.LSMRecord) -> lsm.LSMState:
    name = lsm.data_file_name(min(r.instant_time for r in recs), max(r.instant_time for r in recs), 0)
    return lsm_state({name: tuple(sorted(recs))}, {1: (name,)}, 1)


def history(active: set, history_lsm: lsm.LSMState = lsm.EMPTY, **kw) -> A.HistoryState:
    return A.HistoryState(frozenset(active), history_lsm, **kw)


ORDER_OK = Verdict("I16.delete-order", True)


def no_pending_after(late=(), pend: str = "") -> Verdict:
    return Verdict("I16.before-earliest-pending", not late,
                   f"archived commits {list(late)} are after pending write {pend}" if late else "", tuple(late))


def test_archival_verdicts_hold_exactly():
    # nothing archived: no keep.min verdict, no savepoint verdict without a savepoint
    assert H.archival_verdicts(history(files_of(0)), CFG) == [no_pending_after(), ORDER_OK]
    active = files_of(20) | files_of(30) | files_of(40, Action.DELTACOMMIT, (R,))
    s = history(active, archived(rec(0), rec(10)))
    assert H.archival_verdicts(s, CFG) == [Verdict("I16.keeps-min", True, ""), no_pending_after(pend=t(40)), ORDER_OK]
    sp = history(active | files_of(30, Action.SAVEPOINT, (I, C)), archived(rec(0), rec(10)))
    assert H.archival_verdicts(sp, CFG) == [Verdict("I16.keeps-min", True, ""), no_pending_after(pend=t(40)),
                                            Verdict("I16.savepoint", True),
                                            ORDER_OK]


def test_archival_verdicts_keep_min_only_between_jobs():
    s = history(files_of(20), archived(rec(0), rec(10)))
    assert H.archival_verdicts(s, CFG) == [
        Verdict("I16.keeps-min", False, "1 completed commits < keep.min 2"), no_pending_after(), ORDER_OK]
    running = history(files_of(20), archived(rec(0), rec(10)), job=(A.CompactLevel(0),))
    assert H.archival_verdicts(running, CFG) == [no_pending_after(), ORDER_OK]
    # archived cleans are not commits: no keep.min verdict for them
    assert H.archival_verdicts(history(files_of(20), archived(rec(0, "clean"))), CFG) == [no_pending_after(), ORDER_OK]


def test_archival_verdicts_archived_after_the_earliest_pending_write():
    active = files_of(10, Action.COMMIT, (R, I)) | files_of(40) | files_of(50) | files_of(60, Action.COMPACTION, (R,))
    s = history(active, archived(rec(0), rec(20), rec(30, "deltacommit"), rec(35, "clean")))
    assert H.archival_verdicts(s, CFG) == [Verdict("I16.keeps-min", True, ""),
                                           no_pending_after([t(20), t(30)], t(10)), ORDER_OK]
    # an archived commit still on the active timeline (files not deleted yet) is not counted
    still = history(active | files_of(20), archived(rec(0), rec(20)))
    assert H.archival_verdicts(still, CFG)[1] == no_pending_after(pend=t(10))
    # a pending clean is not a pending write
    clean = history(files_of(5, Action.CLEAN, (R,)) | files_of(40) | files_of(50), archived(rec(0), rec(20)))
    assert H.archival_verdicts(clean, CFG)[1] == no_pending_after()


def test_archival_verdicts_savepoint_unless_beyond():
    active = files_of(30) | files_of(40) | files_of(10, Action.SAVEPOINT, (I, C)) | files_of(20, Action.SAVEPOINT, (I, C))
    s = history(active, archived(rec(0), rec(10), rec(20), rec(25, "rollback")))
    assert H.archival_verdicts(s, CFG) == [
        Verdict("I16.keeps-min", True, ""), no_pending_after(),
        Verdict("I16.savepoint", False, f"archived at/after savepoint {t(10)}: {[t(10), t(20)]}", (t(10), t(20))),
        ORDER_OK]
    beyond = A.ArchivalConfig(max_commits=4, min_commits=2, batch=1, cleaner_commits_retained=1, beyond_savepoint=True)
    assert H.archival_verdicts(s, beyond) == [Verdict("I16.keeps-min", True, ""), no_pending_after(), ORDER_OK]


def test_archival_verdicts_unreadable_history_and_delete_order_included():
    broken = lsm_state({dfile(0, 10): (rec(0), rec(10))}, {1: (dfile(0, 10),)}, 2)
    wrong = (A.ActiveFile(t(10), Action.COMMIT, C, t(15)), A.ActiveFile(t(0), Action.COMMIT, C, t(5)))
    s = history(files_of(20), broken, deleted=wrong)
    assert H.archival_verdicts(s, CFG) == [
        no_pending_after(), Verdict("I16.delete-order", False, f"completed {t(0)} deleted after {t(10)}", (t(0),))]


def test_history_verdicts_are_the_lsm_then_the_archival_verdicts():
    s = history(files_of(20) | files_of(30), archived(rec(0), rec(10)))
    assert H.history_verdicts(s, CFG) == [VERSION_OK, COMPLETE, Verdict("I16.keeps-min", True, ""),
                                          no_pending_after(), ORDER_OK]
    assert H.history_verdicts(history(set()), CFG) == [NO_VERSION, COMPLETE, no_pending_after(), ORDER_OK]


# ------------------------------------------------------------------------------------------------ delete_order
def af(n: int, st: State) -> A.ActiveFile:
    return A.ActiveFile(t(n), Action.COMMIT, st, t(n + 5) if st is C else None)


def test_delete_order_holds_for_pending_first_then_completed_ascending():
    assert H.delete_order(()) == ORDER_OK
    assert H.delete_order([af(10, R), af(0, I), af(10, I), af(0, C), af(10, C), af(20, C)]) == ORDER_OK
    # two completed files of one requested time (e.g. a commit and a clean at the same time) are not descending
    same = A.ActiveFile(t(10), Action.CLEAN, C, t(12))
    assert H.delete_order([af(0, C), af(10, C), same]) == ORDER_OK


def test_delete_order_names_the_first_file_out_of_order():
    assert H.delete_order([af(0, C), af(20, C), af(10, C), af(5, C)]) == Verdict(
        "I16.delete-order", False, f"completed {t(10)} deleted after {t(20)}", (t(10),))
    assert H.delete_order([af(0, R), af(0, C), af(10, I), af(0, R)]) == Verdict(
        "I16.delete-order", False, f"inflight file of {t(10)} deleted after completed {t(0)}", (t(10),))
    assert H.delete_order([af(30, C), af(20, R)]) == Verdict(
        "I16.delete-order", False, f"requested file of {t(20)} deleted after completed {t(30)}", (t(20),))


# ------------------------------------------------------------------------------------------- completion_found
class FakeView:
    """A lookup answering from a dict (``None``: not found), raising for the broken instants."""

    def __init__(self, times: dict, broken=()):
        self.times, self.broken = times, broken

    def completion_time(self, x):
        if x in self.broken:
            raise ModelError(f"cannot read {x}")
        return self.times.get(x)


def test_completion_found_exact_verdicts():
    expected = {t(10 * k): t(10 * k + 5) for k in range(7)}
    assert H.completion_found(FakeView(expected), expected) == Verdict("H.completion-found", True, "", ())
    assert H.completion_found(FakeView({}), {}) == Verdict("H.completion-found", True, "", ())
    wrong = dict(expected)
    for k in (6, 1, 2, 4, 5):
        wrong[t(10 * k)] = None if k == 2 else t(10 * k + 9)
    del wrong[t(60)]
    # 5 wrong: the detail names the first 3 (by requested time), involved all 5
    assert H.completion_found(FakeView(wrong), expected) == Verdict(
        "H.completion-found", False,
        f"{t(10)}: {t(19)} != {t(15)}; {t(20)}: None != {t(25)}; {t(40)}: {t(49)} != {t(45)}",
        (t(10), t(20), t(40), t(50), t(60)))
    # 6 wrong: involved is capped at the first 5
    assert H.completion_found(FakeView(dict(wrong, **{t(0): t(1)})), expected) == Verdict(
        "H.completion-found", False,
        f"{t(0)}: {t(1)} != {t(5)}; {t(10)}: {t(19)} != {t(15)}; {t(20)}: None != {t(25)}",
        (t(0), t(10), t(20), t(40), t(50)))
    # a lookup that fails stops the check and names that instant (not the earlier mismatch)
    v = H.completion_found(FakeView(wrong, broken=(t(30),)), expected)
    assert v == Verdict("H.completion-found", False, f"lookup of {t(30)} failed: cannot read {t(30)}", (t(30),))


def test_completion_found_on_an_unreadable_history():
    tl = Timeline(8)
    tl.load(t(100), Action.COMMIT, {R, I, C}, t(105))
    broken = lsm_state({dfile(0, 10): (rec(0),)}, {1: (dfile(0, 10),)}, 2)
    view = CompletionTimeQueryView(tl, broken)
    assert H.completion_found(view, {t(100): t(105)}) == Verdict("H.completion-found", True, "", ())
    assert H.completion_found(view, {t(0): t(5), t(100): t(105)}) == Verdict(
        "H.completion-found", False,
        f"lookup of {t(0)} failed: manifest_2: _version_ names version 2 but manifest_2 does not exist", (t(0),))


# ------------------------------------------------------------------------------- reads_preserved, no_write_lost
def mor(states: dict[int, set], tv: int = 8) -> Timeline:
    """A commit at t(0) writing the base file, then deltacommits at t(n) with the given state files."""
    tl = Timeline(tv)
    tl.load(t(0), Action.COMMIT, {R, I, C}, t(5))
    for n, sts in states.items():
        tl.load(t(n), Action.DELTACOMMIT, sts, t(n + 5) if C in sts else None)
    return tl


BASE = BaseFile("fg", "1-0-1", t(0))
LOGS = [LogFile("fg", t(10), 1, "1-0-1"), LogFile("fg", t(20), 2, "1-0-1")]


def test_reads_preserved_holds_exactly_on_equal_views():
    ghost = FileSystemView(mor({10: {R, I, C}, 20: {R, I, C}}), [BASE], LOGS)
    same = FileSystemView(mor({10: {R, I, C}, 20: {R, I, C}}), [BASE], LOGS)
    assert H.reads_preserved(same, ghost) == Verdict("H.reads-preserved", True, "")
    assert H.reads_preserved(same, ghost, [(None, None), (t(5), t(15)), (t(15), None)]) == Verdict(
        "H.reads-preserved", True, "")


def test_reads_preserved_compares_files_by_name_not_size():
    """A read plans files by name (``size`` is not part of a file's identity): the same files with other sizes
    are the same read."""
    tl = mor({10: {R, I, C}})
    small, big = BaseFile("fg", "1-0-1", t(0), size=10), BaseFile("fg", "1-0-1", t(0), size=99)
    assert H.reads_preserved(FileSystemView(tl, [big], LOGS[:1]), FileSystemView(tl, [small], LOGS[:1])) == Verdict(
        "H.reads-preserved", True, "")


def test_reads_preserved_names_the_snapshot_and_each_incremental_range_that_differ():
    ghost = FileSystemView(mor({10: {R, I, C}, 20: {R, I}}), [BASE], LOGS)
    hist = FileSystemView(mor({10: {R, I}, 20: {R, I, C}}), [BASE], LOGS)
    # the snapshots differ both ways: hist reads the second log, ghost the first
    files = sorted({str(LOGS[0]), str(LOGS[1])})
    v = H.reads_preserved(hist, ghost, [(None, None), (None, t(10)), (t(10), None)])
    assert v == Verdict("H.reads-preserved", False,
                        f"snapshot: files {files}, instants {[t(10), t(20)]}; "
                        f"incremental (None, None]: instants {[t(0), t(20)]} != {[t(0), t(10)]}; "
                        f"incremental ({t(10)}, None]: instants {[t(20)]} != {[t(10)]}")
    # only the ranges asked for are compared; the default range is the whole timeline
    assert H.reads_preserved(hist, ghost, [(None, t(10))]).detail == f"snapshot: files {files}, instants {[t(10), t(20)]}"
    assert H.reads_preserved(hist, ghost).detail == v.detail.rsplit("; ", 1)[0]


def test_reads_preserved_compares_the_files_of_an_incremental_read():
    tl = mor({10: {R, I, C}})
    other = BaseFile("fg2", "1-0-1", t(0))
    hist, ghost = FileSystemView(tl, [BASE, other], LOGS[:1]), FileSystemView(tl, [BASE], LOGS[:1])
    assert H.reads_preserved(hist, ghost, [(t(5), None)]) == Verdict(
        "H.reads-preserved", False, f"snapshot: files {[str(other)]}, instants []")
    assert H.reads_preserved(hist, ghost, [(None, None)]) == Verdict(
        "H.reads-preserved", False,
        f"snapshot: files {[str(other)]}, instants []; incremental (None, None]: instants {[t(0), t(10)]} != "
        f"{[t(0), t(10)]}")


def test_snapshot_records_and_no_write_lost():
    tl = mor({10: {R, I, C}, 20: {R, I}})
    view = FileSystemView(tl, [BASE], LOGS).snapshot_read()
    contents = {BASE.name: ["k1", "k2"], LOGS[0].name: ["k3"], LOGS[1].name: ["k9"]}
    assert H.snapshot_records(view, contents) == {"k1", "k2", "k3"}  # the pending deltacommit's log is not read
    assert H.snapshot_records(view, {LOGS[0].name: ["k3"]}) == {"k3"}  # a file with no known content
    assert H.no_write_lost(view, contents, ["k1", "k3"]) == Verdict("H.no-write-lost", True)
    lost = ["k8", "k7", "k6", "k5", "k4", "k9", "k1"]
    assert H.no_write_lost(view, contents, lost) == Verdict(
        "H.no-write-lost", False, "records of completed writes not read: ['k4', 'k5', 'k6', 'k7', 'k8']",
        ("k4", "k5", "k6", "k7", "k8"))
    # a log-only slice (no base file) is read too
    only_logs = FileSystemView(mor({10: {R, I, C}}), [], LOGS[:1]).snapshot_read()
    assert H.snapshot_records(only_logs, contents) == {"k3"}


# ------------------------------------------------------------------------------------------- active_bounded
def commits_tl(n: int, pending_first: bool = False) -> Timeline:
    tl = Timeline(8)
    for k in range(n):
        tl.load(t(10 * k + 10), Action.COMMIT, {R, I, C}, t(10 * k + 15))
    if pending_first:
        tl.load(t(1), Action.COMMIT, {R}, None)
    return tl


def test_active_bounded_exact_verdicts():
    assert H.active_bounded(commits_tl(5), CFG) == Verdict("H.active-bounded", True)  # 5 == keep.max + batch
    assert H.active_bounded(commits_tl(6), CFG) == Verdict(
        "H.active-bounded", False, "6 completed commits > keep.max + batch 5 and 4 archivable")
    assert H.active_bounded(commits_tl(6, pending_first=True), CFG) == Verdict("H.active-bounded", True, "")
    # the retention context is the decision's: a metadata table never compacted forbids archiving
    assert H.active_bounded(commits_tl(6), CFG, A.RetentionContext(mdt_enabled=True)) == Verdict(
        "H.active-bounded", True, "")
    assert H.active_bounded(commits_tl(6), CFG, A.RetentionContext(clean_earliest_retain=t(30))) == Verdict(
        "H.active-bounded", False, "6 completed commits > keep.max + batch 5 and 2 archivable")
