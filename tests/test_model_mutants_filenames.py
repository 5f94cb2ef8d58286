"""Focused tests for model.filenames that `make mutate` showed missing (mutants that survived the suites).

Each test checks what the codec does for Hudi's names (``InstantFileNameGeneratorV1/V2``,
``FSUtils.makeBaseFileName`` / ``makeLogFileName`` / ``isLogFile``, ``TimelineLayout``) and what it
says when it refuses one: a refusal is a :class:`CodecError` whose ``name`` is the offending name
and whose problem names the piece that is wrong (the CLI prints it as the one-line error).
"""

from __future__ import annotations

import pytest

from model import filenames as fn
from model.errors import CodecError
from model.instant import Action, State

T = "20250101000000000"
C = "20250101000000500"


def refusal(call, *args):
    with pytest.raises(CodecError) as e:
        call(*args)
    return e.value


# ----------------------------------------------------------------------- timeline_file_name refusals

def test_timeline_file_name_refusals_name_the_instant_and_the_wrong_piece():
    e = refusal(fn.timeline_file_name, "2025x", Action.COMMIT, State.REQUESTED, None, fn.LAYOUT_2)
    assert (e.name, e.problem) == ("2025x.commit", "requested time '2025x' is not digits")
    e = refusal(fn.timeline_file_name, "2025", Action.DELTACOMMIT, State.REQUESTED, None, fn.LAYOUT_2)
    assert (e.name, e.problem) == ("2025.deltacommit", "requested time '2025' has 4 digits; expected 17 "
                                                       "(14 legacy, more for metadata-table times)")
    e = refusal(fn.timeline_file_name, T, Action.CLUSTERING, State.REQUESTED, None, fn.LAYOUT_1)
    assert (e.name, e.problem) == (f"{T}.clustering",
                                   "action clustering does not exist in timeline layout 1 (table version 6)")
    e = refusal(fn.timeline_file_name, T, Action.SAVEPOINT, State.REQUESTED, None, fn.LAYOUT_2)
    assert (e.name, e.problem) == (f"{T}.savepoint", "savepoint has no requested state")
    e = refusal(fn.timeline_file_name, T, Action.COMMIT, State.COMPLETED, None, fn.LAYOUT_2)
    assert (e.name, e.problem) == (f"{T}.commit", "a completed layout-2 file needs a completion time")
    e = refusal(fn.timeline_file_name, T, Action.COMMIT, State.COMPLETED, "20x5", fn.LAYOUT_2)
    assert (e.name, e.problem) == (f"{T}.commit", "completion time '20x5' is not digits")
    e = refusal(fn.timeline_file_name, T, Action.COMMIT, State.COMPLETED, "2025", fn.LAYOUT_2)
    assert (e.name, e.problem) == (f"{T}.commit", "completion time '2025' has 4 digits; expected 17 "
                                                  "(14 legacy, more for metadata-table times)")
    assert str(e) == f"{T}.commit: completion time '2025' has 4 digits; expected 17 (14 legacy, more for " \
                     "metadata-table times)"


def test_timeline_file_name_refuses_an_unknown_layout_naming_it():
    with pytest.raises(ValueError, match=r"^unknown timeline layout 3; expected 1 or 2$"):
        fn.timeline_file_name(T, Action.COMMIT, State.REQUESTED, None, 3)


def test_timeline_file_object_names_itself_as_the_codec_does():
    """``TimelineFile.file_name`` is the codec's name of that one state file, in either layout."""
    for tf, layout, name in [
        (fn.TimelineFile(T, Action.COMMIT, State.REQUESTED), fn.LAYOUT_1, f"{T}.commit.requested"),
        (fn.TimelineFile(T, Action.COMMIT, State.INFLIGHT), fn.LAYOUT_2, f"{T}.inflight"),
        (fn.TimelineFile(T, Action.COMPACTION, State.COMPLETED, C), fn.LAYOUT_2, f"{T}_{C}.commit"),
        (fn.TimelineFile(T, Action.COMPACTION, State.COMPLETED, C), fn.LAYOUT_1, f"{T}.commit"),
        (fn.TimelineFile(T, Action.CLEAN, State.INFLIGHT), fn.LAYOUT_1, f"{T}.clean.inflight"),
    ]:
        assert tf.file_name(layout) == name
        assert fn.parse_timeline_file(name, layout, mtime=C).file_name(layout) == name


# --------------------------------------------------------------------------- timeline_from_files

def test_timeline_from_files_skips_non_timeline_names_anywhere_in_the_listing():
    """A listing of ``.hoodie/timeline`` holds other entries (``.aux``, ``history``, ``hoodie.properties``);
    they are skipped wherever they come, and the instants after them are still read."""
    names = ["hoodie.properties", f"{T}.commit.requested", ".aux", f"{T}.inflight", "history", f"{T}_{C}.commit"]
    tl = fn.timeline_from_files(names, 9)
    [i] = tl.instants()
    assert (i.requested_time, i.action, i.state, i.completion_time) == (T, Action.COMMIT, State.COMPLETED, C)


def test_timeline_from_files_names_both_files_of_a_duplicated_state():
    first, second = f"{T}_{C}.commit", f"{T}_20250101000000900.commit"
    e = refusal(fn.timeline_from_files, [f"{T}.commit.requested", first, second], 9)
    assert e.name == second
    assert e.problem == f"instant {T}.commit already has a completed file {first}"


# ------------------------------------------------------------------------------------ data files

def test_data_file_refusals_name_the_file_and_the_expected_shape():
    e = refusal(fn.BaseFile.parse, "f1_1-0-1.parquet")
    assert (e.name, e.problem) == ("f1_1-0-1.parquet",
                                   "malformed base file name; expected <fileId>_<a-b-c>_<instantTime>.<ext>")
    e = refusal(fn.BaseFile.parse, "f1_1-0-1_2025.parquet")
    assert e.problem == "instant time '2025' has 4 digits; expected 17 (14 legacy, more for metadata-table times)"
    e = refusal(fn.LogFile.parse, ".f1_2025.log.1_1-0-1")
    assert (e.name, e.problem) == (".f1_2025.log.1_1-0-1",
                                   "instant time '2025' has 4 digits; expected 17 (14 legacy, more for "
                                   "metadata-table times)")
    e = refusal(fn.LogFile.parse, ".f1_x.log.1")
    assert e.problem == "malformed log file name; expected .<fileId>_<instant>.log.<version>_<a-b-c>[.cdc]"


def test_parsed_data_files_keep_size_and_default_to_the_root_partition():
    """``size`` rides along (the listing's file length; not part of equality); no partition = the table root."""
    b = fn.parse_data_file(f"f1_1-0-1_{T}.parquet", size=1234)
    lg = fn.parse_data_file(f".f1_{T}.log.2_1-0-1", size=77)
    assert isinstance(b, fn.BaseFile) and b.size == 1234 and b.partition == "" and b.path == b.name
    assert isinstance(lg, fn.LogFile) and lg.size == 77 and lg.partition == "" and lg.path == lg.name
    assert fn.BaseFile.parse(f"f1_1-0-1_{T}.parquet").partition == ""
    assert fn.LogFile.parse(f".f1_{T}.log.2_1-0-1").partition == ""
    assert fn.LogFile.parse(f".f1_{T}.log.2_1-0-1", "p", 5).size == 5
    assert fn.BaseFile.parse(f"f1_1-0-1_{T}.parquet", "p", 6).size == 6


def test_is_base_file_looks_at_the_last_extension_only():
    """``is_base_file``: not a dot file and the text after the *last* dot is a base format."""
    assert fn.is_base_file("a.parquet")  # a one-character file id
    assert not fn.is_base_file("parquet")  # no extension at all
    assert not fn.is_base_file("")
    assert fn.is_base_file("f.v2_1-0-1_x.orc")  # a dot inside the name: the extension is the last part
    # ... and such a file parses (Hudi's file ids are UUIDs, but the grammar allows any id without '_')
    b = fn.parse_data_file(f"f.v2_1-0-1_{T}.parquet", "p")
    assert isinstance(b, fn.BaseFile) and (b.file_id, b.partition) == ("f.v2", "p")


def test_parse_data_files_splits_bases_and_logs_and_skips_the_rest():
    bases, logs = fn.parse_data_files([
        (f"f1_1-0-1_{T}.parquet", "p", 10),
        (f".f1_{T}.log.1_1-0-1", "p", 20),
        (".hoodie_partition_metadata", "p"),
        (f".f1_{T}.log.1_1-0-1.crc", "p"),
        (f"f2_1-0-1_{T}.parquet", ""),
    ])
    assert [(b.file_id, b.partition, b.size) for b in bases] == [("f1", "p", 10), ("f2", "", None)]
    assert [(lg.file_id, lg.partition, lg.size) for lg in logs] == [("f1", "p", 20)]
    with pytest.raises(CodecError):
        fn.parse_data_files([("f1_1-0-1_2025.parquet", "p")])


# ----------------------------------------------------------------------------- parse_timeline_file

_DIGITS = "has 4 digits; expected 17 (14 legacy, more for metadata-table times)"


@pytest.mark.parametrize("name,layout,problem", [
    ("hoodie.properties", fn.LAYOUT_2, "not a timeline file"),
    (f"{T}.commit.requested.x", fn.LAYOUT_2,
     "malformed instant file name; expected <time>[_<completion>].<action>[.requested|.inflight]"),
    ("2025.commit.requested", fn.LAYOUT_2, f"requested time '2025' {_DIGITS}"),
    (f"{T}.frobnicate.requested", fn.LAYOUT_2, "unknown action 'frobnicate'"),
    (f"{T}.commit.done", fn.LAYOUT_2, "unknown state suffix 'done'; expected requested or inflight"),
    (f"{T}.clustering.requested", fn.LAYOUT_1, "action clustering does not exist in timeline layout 1 (table version 6)"),
    (f"{T}.compaction", fn.LAYOUT_2, "no completed compaction file exists: it completes as commit"),
    (f"{T}_{C}.commit", fn.LAYOUT_1, "completion time in the name is timeline layout 2 (table version 8+) only"),
    (f"{T}_2025.commit", fn.LAYOUT_2, f"completion time '2025' {_DIGITS}"),
    (f"{T}_{C}.commit.inflight", fn.LAYOUT_2, "a inflight file carries no completion time"),
    (f"{T}.savepoint.requested", fn.LAYOUT_2, "savepoint has no requested state"),
    (f"{T}.commit.inflight", fn.LAYOUT_2, "commit inflight is written <time>.inflight, not <time>.commit.inflight"),
])
def test_parse_timeline_file_refusals_name_the_file_and_the_rule(name, layout, problem):
    """``InstantFileNameParserV2`` / ``InstantGeneratorV1/V2`` grammar: each refusal says which rule the name breaks."""
    e = refusal(fn.parse_timeline_file, name, layout)
    assert (e.name, e.problem) == (name, problem)


def test_parse_timeline_file_refuses_an_unknown_layout_naming_it():
    with pytest.raises(ValueError, match=r"^unknown timeline layout 0; expected 1 or 2$"):
        fn.parse_timeline_file(f"{T}.commit.requested", 0)


def test_codec_error_is_rebuilt_from_its_arguments():
    """SimPy re-raises a failed process's exception as ``type(e)(*e.args)``: a CodecError must keep the offending
    name and the problem through that (pickling also restores ``__dict__``, so it alone does not show this)."""
    e = refusal(fn.parse_timeline_file, "2025.commit.requested", fn.LAYOUT_2)
    assert e.args == ("2025.commit.requested", e.problem)
    back = type(e)(*e.args)
    assert (back.name, back.problem, str(back)) == (e.name, e.problem, str(e))
