"""Properties of the file-name codec (model.filenames).

* every (action, state, layout) name round-trips, with 17-digit, 14-digit legacy
  and longer metadata-table times;
* every base and log file name round-trips and keeps the comparator order;
* any text either parses to a value that formats back to exactly that text, or is
  rejected with a :class:`CodecError` naming it (never another exception);
* whole timelines round-trip through their file listing.

Each property is a plain function over a codec so that the broken codecs at the
bottom can show it able to fail. Replay a failure with the printed
``@reproduce_failure`` blob or ``pytest --hypothesis-seed=N``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from model import filenames as fn
from model.errors import CodecError
from model.instant import LAYOUT2_ONLY, STARTS_INFLIGHT, Action, State

# ------------------------------------------------------------------------------------ strategies

times17 = st.integers(10**16, 10**17 - 2).map(str)
times = st.one_of(
    times17,
    st.integers(10**13, 10**14 - 1).map(str),  # legacy second granularity
    st.integers(10**19, 10**20 - 1).map(str),  # 0.x metadata-table suffixed times
)


@st.composite
def timeline_entries(draw, layout=None):
    layout = draw(st.sampled_from([fn.LAYOUT_1, fn.LAYOUT_2])) if layout is None else layout
    actions = [a for a in Action if not (layout == fn.LAYOUT_1 and a in LAYOUT2_ONLY)]
    action = draw(st.sampled_from(actions))
    states = [s for s in State if not (s is State.REQUESTED and action in STARTS_INFLIGHT)]
    state = draw(st.sampled_from(states))
    completion = draw(times) if state is State.COMPLETED else None
    return layout, draw(times), action, state, completion


fids = st.builds(lambda u, n: f"{u}-{n}", st.uuids().map(str) | st.sampled_from(["files-0000", "col-stats-0001"]),
                 st.integers(0, 3))
tokens = st.tuples(st.integers(0, 999), st.integers(0, 99999), st.integers(0, 99999)).map(
    lambda t: "-".join(map(str, t)))
partitions = st.sampled_from(["", "city=chennai", "2025/01/01", "p"])

base_files = st.builds(fn.BaseFile, fids, tokens, times, st.sampled_from(sorted(fn.BASE_EXTENSIONS)), partitions)
log_files = st.builds(fn.LogFile, fids, times, st.integers(1, 10**6), st.none() | tokens, st.booleans(), partitions)
log_files = log_files.filter(lambda lg: lg.write_token is not None or not lg.cdc)  # .cdc rides on a token


@st.composite
def log_pairs(draw):
    """Two logs that often tie on a prefix of the comparator key, so every tie-breaker is exercised."""
    a = draw(log_files)
    shared = draw(st.integers(0, 4))  # how many leading key fields b copies from a
    b = draw(log_files)
    fields = dict(file_id=b.file_id, instant_time=b.instant_time, version=b.version,
                  write_token=b.write_token, cdc=b.cdc, partition=b.partition)
    for f in ["instant_time", "version", "write_token", "cdc"][:shared]:
        fields[f] = getattr(a, f)
    if fields["write_token"] is None:
        fields["cdc"] = False
    return a, fn.LogFile(**fields)


# ----------------------------------------------------------------------------- property bodies

def prop_timeline_round_trip(codec, entry):
    layout, req, action, state, completion = entry
    name = codec.timeline_file_name(req, action, state, completion, layout)
    assert codec.is_timeline_file(name), name
    got = codec.parse_timeline_file(name, layout, mtime=completion)
    shown = fn.completed_action(action) if state is State.COMPLETED else action
    assert (got.requested_time, got.action, got.state, got.completion_time) == (req, shown, state, completion), name
    assert got.key == fn.InstantKey.of(req, action)
    assert codec.timeline_file_name(got.requested_time, got.action, got.state, got.completion_time, layout) == name


def prop_any_text_parses_canonically_or_is_rejected(codec, text, layout):
    try:
        got = codec.parse_timeline_file(text, layout)
    except CodecError as e:
        assert e.name == text
        return
    for t in (got.requested_time, got.completion_time):  # times: 17 digits, 14 legacy, longer for MDT
        assert t is None or (t.isdigit() and (len(t) == 14 or len(t) >= 17)), (text, t)
    assert not (got.state is State.REQUESTED and got.action in STARTS_INFLIGHT), text
    assert not (got.state is State.COMPLETED and got.action is not fn.completed_action(got.action)), text
    assert not (layout == fn.LAYOUT_1 and got.action in LAYOUT2_ONLY), text
    legacy = got.state is State.COMPLETED and got.completion_time is None  # a completed name without _c
    fmt_layout = fn.LAYOUT_1 if legacy else layout
    assert codec.timeline_file_name(got.requested_time, got.action, got.state, got.completion_time,
                                    fmt_layout) == text


def prop_data_round_trip(codec, f):
    back = codec.parse_data_file(f.name, f.partition)
    assert back == f and back.name == f.name and type(back) is type(f)


def prop_any_data_text_parses_canonically_or_is_rejected(codec, text):
    try:
        got = codec.parse_data_file(text)
    except CodecError as e:
        assert e.name == text
        return
    assert got is None or got.name == text


def prop_log_order(codec, a, b):
    """The order key is LogFileComparator: instant, then version, then token (nulls first), then suffix."""
    ka, kb = codec.log_order_key(a), codec.log_order_key(b)
    if a.instant_time != b.instant_time:
        assert (ka < kb) == (a.instant_time < b.instant_time)
    elif a.version != b.version:
        assert (ka < kb) == (a.version < b.version)
    elif a.write_token != b.write_token:
        expect = a.write_token is None or (b.write_token is not None and a.write_token < b.write_token)
        assert (ka < kb) == expect
    elif a.cdc != b.cdc:
        assert (ka < kb) == (not a.cdc)


# ------------------------------------------------------------------------------------- suites

@given(timeline_entries())
def test_timeline_names_round_trip(entry):
    prop_timeline_round_trip(fn, entry)


# Text near the grammar: digits, separators and action words, so mutations hit many rules.
_pieces = st.sampled_from(["2025010100000000", "0", "1", "_", ".", "requested", "inflight", "commit",
                           "compaction", "clustering", "savepoint", "deltacommit", "x", "-", "12345678901234"])
_shaped = st.builds(  # <digits>[_<digits>].<word>[.<word>] with digit counts around the legal ones
    lambda t, c, a, s: t + (f"_{c}" if c is not None else "") + f".{a}" + (f".{s}" if s is not None else ""),
    st.from_regex(r"\d{0,21}", fullmatch=True), st.none() | st.from_regex(r"\d{0,21}", fullmatch=True),
    st.sampled_from([a.value for a in Action] + ["inflight", "requested", "schemacommit", "x"]),
    st.none() | st.sampled_from(["requested", "inflight", "commit", "x"]))
near_names = st.lists(_pieces, min_size=1, max_size=8).map("".join) | _shaped | st.text(max_size=30)


@given(near_names, st.sampled_from([fn.LAYOUT_1, fn.LAYOUT_2]))
def test_any_text_is_canonical_or_rejected(text, layout):
    prop_any_text_parses_canonically_or_is_rejected(fn, text, layout)


@given(st.one_of(timeline_entries().map(lambda e: fn.timeline_file_name(e[1], e[2], e[3], e[4], e[0]))),
       st.integers(0, 40), st.sampled_from(["", "_", ".", "x", "9", ".requested", ".inflight"]))
def test_mutated_names_are_canonical_or_rejected(name, at, insert):
    mutated = name[:at] + insert + name[at + 1:]
    for layout in (fn.LAYOUT_1, fn.LAYOUT_2):
        prop_any_text_parses_canonically_or_is_rejected(fn, mutated, layout)


@given(base_files | log_files)
def test_data_names_round_trip(f):
    prop_data_round_trip(fn, f)


@given(st.one_of(base_files, log_files).map(lambda f: f.name), st.integers(0, 60),
       st.sampled_from(["", "_", ".", "x", "-", ".log.", "9"]))
def test_mutated_data_names_are_canonical_or_rejected(name, at, insert):
    prop_any_data_text_parses_canonically_or_is_rejected(fn, name[:at] + insert + name[at + 1:])


@given(log_pairs())
def test_log_order_key_is_the_comparator(pair):
    prop_log_order(fn, *pair)


# ------------------------------------------------------------------------ broken variants

class _Broken:
    """A codec that forwards to model.filenames except for the functions overridden."""

    def __getattr__(self, item):
        return getattr(fn, item)


class CommitInflightWithAction(_Broken):
    """Writes ``t.commit.inflight`` instead of the legacy ``t.inflight``."""

    @staticmethod
    def timeline_file_name(req, action, state, completion, layout):
        if action is Action.COMMIT and state is State.INFLIGHT:
            return f"{req}.commit.inflight"
        return fn.timeline_file_name(req, action, state, completion, layout)


class CompactionCompletesAsCompaction(_Broken):
    """Forgets I4: a completed compaction named ``.compaction``, and a parser that accepts it."""

    @staticmethod
    def timeline_file_name(req, action, state, completion, layout):
        if action is Action.COMPACTION and state is State.COMPLETED:
            return f"{req}_{completion}.compaction" if layout == fn.LAYOUT_2 else f"{req}.compaction"
        return fn.timeline_file_name(req, action, state, completion, layout)


class LenientParser(_Broken):
    """Accepts any digits as a time (drops the 14/17+ digit rule) -- and formats them back."""

    @staticmethod
    def parse_timeline_file(name, layout, *, mtime=None):
        import re
        m = re.match(r"^(\d+)\.(\w+)\.requested$", name)
        if m and m.group(2) in fn._ACTION_OF:  # noqa: SLF001
            return fn.TimelineFile(m.group(1), fn._ACTION_OF[m.group(2)], State.REQUESTED, None)  # noqa: SLF001
        return fn.parse_timeline_file(name, layout, mtime=mtime)

    @staticmethod
    def timeline_file_name(req, action, state, completion, layout):
        if state is State.REQUESTED:
            return f"{req}.{action.value}.requested"
        return fn.timeline_file_name(req, action, state, completion, layout)


class LogTokenSortedLast(_Broken):
    """Orders logs without a write token after those with one (nullsLast instead of nullsFirst)."""

    @staticmethod
    def log_order_key(lg):
        return (lg.instant_time, lg.version, lg.write_token is None, lg.write_token or "", lg.cdc)


class LogLosesPartition(_Broken):
    @staticmethod
    def parse_data_file(name, partition="", size=None):
        return fn.parse_data_file(name, "", size)


def _fails(test) -> bool:
    """Run a @given test; True when Hypothesis found a counterexample."""
    try:
        settings(max_examples=300, database=None, derandomize=True, phases=[Phase.generate],  # finding is enough: no shrinking
                 suppress_health_check=list(HealthCheck))(test)()
    except Exception:  # noqa: BLE001 - an assertion or an unexpected error both falsify the property
        return True
    return False


@pytest.mark.parametrize("broken,suite", [
    (CommitInflightWithAction(), "round_trip"),
    (CompactionCompletesAsCompaction(), "round_trip"),
    (LenientParser(), "any_text"),
    (LogTokenSortedLast(), "log_order"),
    (LogLosesPartition(), "data_round_trip"),
], ids=lambda x: type(x).__name__ if not isinstance(x, str) else x)
def test_the_suites_catch_broken_codecs(broken, suite):
    if suite == "round_trip":
        @given(timeline_entries())
        def t(entry):
            prop_timeline_round_trip(broken, entry)
    elif suite == "any_text":
        # _shaped first: near_names alone found LenientParser's bad-length times in only some runs (which
        # examples Hypothesis draws depends on the constants of the modules loaded before, so on test order)
        @given(_shaped | near_names, st.sampled_from([fn.LAYOUT_1, fn.LAYOUT_2]))
        def t(text, layout):
            prop_any_text_parses_canonically_or_is_rejected(broken, text, layout)
    elif suite == "log_order":
        @given(log_pairs())
        def t(pair):
            prop_log_order(broken, *pair)
    else:
        @given(base_files | log_files)
        def t(f):
            prop_data_round_trip(broken, f)
    assert _fails(t), f"the {suite} property did not catch {type(broken).__name__}"


@given(st.lists(timeline_entries(fn.LAYOUT_2), max_size=12))
def test_timeline_listing_round_trip(entries):
    """Timeline -> names -> Timeline keeps every instant and every state file (both layouts)."""
    from model.timeline import Timeline

    for version in (6, 9):
        tl = Timeline(version)
        for _layout, req, action, state, _c in entries:
            if len(req) != 17 or (version == 6 and action in LAYOUT2_ONLY) or tl.find(req):
                continue
            tl.create(req, action, allow_during_restore=True)
            if state >= State.INFLIGHT and action not in STARTS_INFLIGHT:
                tl.transition_to_inflight(req, action)
            if state is State.COMPLETED:
                tl.complete(req, action, str(int(req) + 1))
        back = fn.timeline_from_files(fn.timeline_files(tl), version, mtimes=fn.completion_mtimes(tl))
        assert back.instants() == tl.instants()
        assert all(back.states_present(i.requested_time, i.action) == tl.states_present(i.requested_time, i.action)
                   for i in tl)
