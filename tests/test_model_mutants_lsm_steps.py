"""model/lsm.py's codec refusals and the effects of its storage steps, exactly (hudi-semantics.md section 5, I15):
what a refused data-file name says (``LSMTimeline`` file-name regex, ``LSMTimelineWriter#newFileName``), and the
state each step leaves -- a leftover L0 file rewritten when the manifest cannot be read, the first manifest,
``_version_`` deleted and rewritten, and the broken "version before manifest" order the suites must catch
(``#updateManifest`` / ``#updateVersionFile``). Small hand-built states, no archiver run.
"""

from __future__ import annotations

import pytest

from model import lsm
from model.errors import CodecError
from model.instant import format_millis


def t(n: int) -> str:
    return format_millis(1_767_225_600_000 + n)


def rec(n: int) -> lsm.LSMRecord:
    return lsm.LSMRecord(t(n), t(n + 5), "commit")


def refused(fn, *args) -> tuple[str, str]:
    with pytest.raises(CodecError) as e:
        fn(*args)
    return e.value.name, e.value.problem


# ------------------------------------------------------------------------------------------------ codec
def test_data_file_name_refusals_name_the_file_and_the_problem():
    a, b = t(0), t(10)
    assert lsm.data_file_name(a, b, 0) == f"{a}_{b}_0.parquet"
    assert lsm.data_file_name(a, a, 9) == f"{a}_{a}_9.parquet"
    digits = "bounds must be instant times (digits)"
    assert refused(lsm.data_file_name, "x1", b, 0) == (f"x1_{b}_0.parquet", digits)
    assert refused(lsm.data_file_name, a, "1x", 0) == (f"{a}_1x_0.parquet", digits)
    assert refused(lsm.data_file_name, b, a, 0) == (f"{b}_{a}_0.parquet", "min instant is after max instant")
    assert refused(lsm.data_file_name, a, b, 10) == (f"{a}_{b}_10.parquet", "the level is one digit (0-9)")
    assert refused(lsm.data_file_name, a, b, -1) == (f"{a}_{b}_-1.parquet", "the level is one digit (0-9)")


def test_parse_data_file_name_refusals():
    a, b = t(0), t(10)
    assert lsm.parse_data_file_name(f"{a}_{b}_3.parquet") == lsm.DataFile(a, b, 3)
    assert lsm.parse_data_file_name(f"{a}_{a}_0.parquet") == lsm.DataFile(a, a, 0)  # one instant: min == max
    shape = "not an LSM timeline data file (<min>_<max>_<level>.parquet, one-digit level)"
    for bad in (f"{a}_{b}_10.parquet", f"{a}_{b}.parquet", f"{a}_{b}_0.parquet.tmp", "manifest_1", f"x{a}_{b}_0.parquet"):
        assert refused(lsm.parse_data_file_name, bad) == (bad, shape)
        assert not lsm.is_data_file_name(bad)
    assert refused(lsm.parse_data_file_name, f"{b}_{a}_0.parquet") == (f"{b}_{a}_0.parquet",
                                                                      "min instant is after max instant")


# ------------------------------------------------------------------------------------------------ steps
def test_write_data_file_rewrites_a_leftover_when_the_manifest_cannot_be_read():
    f = lsm.data_file_name(t(0), t(10), 0)
    unreadable = lsm.LSMState(files=((f, (rec(0),)),), version=2)  # _version_ names a missing manifest_2
    after = lsm.apply(unreadable, lsm.WriteDataFile(f, (rec(10), rec(0))))
    assert after == lsm.LSMState(files=((f, (rec(0), rec(10))),), version=2)
    # listed by the readable latest manifest: skipped ("Skip archiving for the redundant file")
    committed = lsm.LSMState(files=((f, (rec(0),)),), manifests=((1, (f,)),), version=1)
    assert lsm.apply(committed, lsm.WriteDataFile(f, (rec(10),))) == committed


def test_write_manifest_first_version_and_an_already_committed_file():
    a, b = lsm.data_file_name(t(0), t(0), 0), lsm.data_file_name(t(10), t(10), 0)
    s = lsm.LSMState(files=((a, (rec(0),)), (b, (rec(10),))))
    first = lsm.apply(s, lsm.WriteManifest((), a))
    assert first == lsm.LSMState(files=s.files, manifests=((1, (a,)),))  # _version_ is a separate step
    second = lsm.apply(lsm.LSMState(s.files, first.manifests, 1), lsm.WriteManifest((), b))
    assert second.manifests == ((1, (a,)), (2, (a, b)))
    # the file is already listed and nothing is removed: no new manifest
    again = lsm.LSMState(s.files, second.manifests, 2)
    assert lsm.apply(again, lsm.WriteManifest((), b)) == again
    merged = lsm.data_file_name(t(0), t(10), 1)
    done = lsm.apply(lsm.LSMState(s.files + ((merged, ()),), second.manifests, 2), lsm.WriteManifest((a, b), merged))
    assert done.manifests[-1] == (3, (merged,)) and done.version == 2


def test_write_manifest_ahead_builds_on_the_manifest_before_the_announced_version():
    """The broken order (``_version_`` first): ``_version_`` already names the new version v, so the manifest is
    manifest_(v-1)'s files - removed + added, written as manifest_v."""
    a, b, c = (lsm.data_file_name(t(n), t(n), 0) for n in (0, 10, 20))
    files = tuple((n, ()) for n in (a, b, c))
    s = lsm.LSMState(files, ((1, (a, b)),), 2)
    assert lsm.apply(s, lsm.WriteManifest((), c, ahead=True)).manifests == ((1, (a, b)), (2, (a, b, c)))
    assert lsm.apply(s, lsm.WriteManifest((a,), c, ahead=True)).manifests == ((1, (a, b)), (2, (b, c)))
    assert lsm.apply(s, lsm.WriteManifest((), b, ahead=True)).manifests == ((1, (a, b)), (2, (a, b)))
    # nothing before: the first manifest holds the added file only
    empty = lsm.LSMState(files)
    assert lsm.apply(empty, lsm.WriteManifest((), a, ahead=True)).manifests == ((1, (a,)),)
    assert lsm.apply(lsm.LSMState(files, (), 1), lsm.WriteManifest((), a, ahead=True)).manifests == ((1, (a,)),)


def test_version_file_steps():
    a = lsm.data_file_name(t(0), t(0), 0)
    s = lsm.LSMState(((a, ()),), ((1, (a,)), (3, (a,))), 1, False)
    assert lsm.apply(s, lsm.DeleteVersionFile()) == lsm.LSMState(s.files, s.manifests, None, True)
    assert lsm.apply(s, lsm.WriteVersionFile()) == lsm.LSMState(s.files, s.manifests, 3, True)
    assert lsm.apply(s, lsm.WriteVersionFile(2)) == lsm.LSMState(s.files, s.manifests, 2, True)
    # ahead: one past the latest version (the unreadable _version_ falls back to the greatest manifest, 3)
    assert lsm.apply(s, lsm.WriteVersionFile(ahead=True)).version == 4
    assert lsm.apply(lsm.LSMState(s.files, s.manifests, 1), lsm.WriteVersionFile(ahead=True)).version == 2
    assert lsm.apply(lsm.EMPTY, lsm.WriteVersionFile(ahead=True)) == lsm.LSMState(version=1)
    assert lsm.apply(lsm.EMPTY, lsm.WriteVersionFile()) == lsm.LSMState(version=0)  # no manifest at all


def test_commit_and_write_steps_in_both_orders():
    a = lsm.data_file_name(t(0), t(10), 0)
    assert lsm.commit_steps((), a) == (lsm.WriteManifest((), a), lsm.DeleteVersionFile(), lsm.WriteVersionFile())
    assert lsm.commit_steps(("x",), a, True) == (lsm.DeleteVersionFile(), lsm.WriteVersionFile(ahead=True),
                                                 lsm.WriteManifest(("x",), a, ahead=True))
    assert lsm.write_steps([]) == ()
    assert lsm.write_steps([rec(10), rec(0)]) == (lsm.WriteDataFile(a, (rec(0), rec(10))),) + lsm.commit_steps((), a)
    assert lsm.write_steps([rec(10), rec(0)], True) == ((lsm.WriteDataFile(a, (rec(0), rec(10))),)
                                                        + lsm.commit_steps((), a, True))
    # the L0 file is named by the first and the last instant of the batch
    three = lsm.data_file_name(t(0), t(20), 0)
    assert lsm.write_steps([rec(20), rec(0), rec(10)])[0] == lsm.WriteDataFile(three, (rec(0), rec(10), rec(20)))


def test_compact_steps_merge_records_once_and_commit_in_the_order_asked():
    f1, f2 = lsm.data_file_name(t(0), t(10), 0), lsm.data_file_name(t(10), t(20), 0)
    dup = lsm.LSMRecord(t(10), t(99), "commit")  # a re-archived duplicate: the first file's record wins
    s = lsm.LSMState(((f1, (rec(0), rec(10))), (f2, (dup, rec(20)))), ((1, (f1, f2)),), 1)
    target = lsm.data_file_name(t(0), t(20), 1)
    steps, did = lsm.compact_steps(s, 0, 2)
    assert did and steps == (lsm.WriteDataFile(target, (rec(0), rec(10), rec(20))),) + lsm.commit_steps((f1, f2), target)
    steps, _ = lsm.compact_steps(s, 0, 2, version_first=True)
    assert steps[1:] == lsm.commit_steps((f1, f2), target, True)
    assert lsm.compact_steps(s, 0, 3) == ((), False) and lsm.compact_steps(s, 1, 2) == ((), False)
