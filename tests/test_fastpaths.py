"""The fast paths equal the spec: each fast implementation against the model module it speeds up.

* ``engine.timeline.Timeline`` (copy-on-write records, memoised keys) against the spec
  ``model.timeline.Timeline``: random operation sequences -- every operation, legal and illegal,
  actions given as :class:`Action` or as strings, and copies taken along the way -- give the same
  instants, the same refusals (same ``TimelineError`` rule and message) and the same observable
  state after every step, on *every* copy taken so far (so the copies are independent: the spec's
  copies are full copies, a shared record changed in place would show up on the other twin);
* ``lakeio.ondisk.fastcodec`` against ``model.filenames``: every name of a fixture-like corpus (the
  fixture tables' file names when the fixtures are present, the names of every action, state,
  layout and time length, and data-file names) plus random mutations and random strings parse to the
  same values (``size`` included, which equality ignores) or the same error (type and message), for
  both layouts, an unknown layout and with/without a modification time; random listings rebuild the
  same timeline or fail the same way; bulk data-file parsing returns the same lists;
* ``lakeio.ondisk.fastslicing`` against ``model.slicing``: random tables (timelines with every write
  state, base and log files over a few file groups, pending compactions, replaced and clustered
  groups, ties between completion times and base instants) build the same file groups and the same
  latest slices under both rules and a custom rule.

Each comparison is shown able to fail: the ``test_*_catches_*`` tests monkeypatch a deliberately
broken fast path and assert the same check reports a difference.
"""

from __future__ import annotations

import random
import string
import zipfile
from dataclasses import replace
from pathlib import PurePosixPath

import pytest

import engine.archival as fast_archival
import engine.timeline as fast_timeline
from fixtures_util import fixture_zips
from lakeio.ondisk import fastcodec, fastslicing
from model import archival as spec_archival
from model import filenames as spec_codec
from model import lsm as spec_lsm
from model import slicing as spec_slicing
from model.errors import ModelError, TimelineError
from model.filenames import LAYOUT_1, LAYOUT_2, BaseFile, LogFile
from model.instant import Action, State
from model.timeline import Timeline as SpecTimeline

ACTIONS = list(Action)
STATES = list(State)
BASE_MS = 20250101000000000  # as an integer: times are BASE_MS + k, always 17 digits


def _time(k: int) -> str:
    return str(BASE_MS + k)


# ============================================================================================ timeline

def _outcome(fn, *args, **kwargs):
    """What an operation did: ``("ok", value)`` or the error's type and text (rule and message)."""
    try:
        return ("ok", fn(*args, **kwargs))
    except TimelineError as e:
        return ("TimelineError", e.rule, e.detail)
    except (ModelError, ValueError, KeyError) as e:
        return (type(e).__name__, str(e))


def _observe(tl, times) -> tuple:
    """Everything a caller can see of a timeline (queries only)."""
    insts = tl.instants()
    per_instant = [(i.requested_time, i.action, tl.states_present(i.requested_time, i.action),
                    tl.get(i.requested_time, i.action), tl.state_of(i.requested_time, i.action),
                    tl.get(i.requested_time, i.action.value)) for i in insts]
    per_time = [(t, tl.find(t), tl.is_completed(t), tl.completion_time(t)) for t in times]
    return (tl.table_version, tl.layout, len(tl), insts, list(tl), tl.state_signature(), per_instant, per_time,
            {a: tl.pending_times(a) for a in ACTIONS}, tl.pending(), tl.completed(), tl.write_timeline(),
            tl.completed((Action.COMMIT, Action.COMPACTION)), tl.pending([Action.DELTACOMMIT]),
            tl.contiguous_completed_prefix(), _query(tl.completed_in_range, None, None),
            _query(tl.completed_in_range, _time(5), _time(40)), tl.last_completed(), tl.last_completed([Action.CLEAN]))


def _query(fn, *args):
    """A query's answer, or the type of its error (a loaded layout-1 instant may have no completion time,
    which ``completed_in_range`` cannot compare: both implementations must fail alike)."""
    try:
        return fn(*args)
    except TypeError as e:
        return type(e).__name__


def _random_op(rng: random.Random, tl_times: list[str], pairs: list, clock: list[int]):
    """One random operation: (method name, args, kwargs), applied alike to both twins."""
    def a_time():
        r = rng.random()
        if r < 0.6 and tl_times:
            return rng.choice(tl_times)
        if r < 0.95:
            clock[0] += rng.randint(1, 3)
            t = _time(clock[0])
            tl_times.append(t)
            return t
        return rng.choice(["123", "2025010100000000x", "20250101000000", "1" * 16])

    def an_action():
        a = rng.choice(ACTIONS)
        return a.value if rng.random() < 0.2 else a

    def a_completion(t):
        r = rng.random()
        if r < 0.8 and isinstance(t, str) and t.isdigit() and len(t) == 17:
            return str(int(t) + rng.randint(1, 20))
        return rng.choice([t, _time(0), "20250101", "x" * 17]) if r < 0.97 else None

    if rng.random() < 0.5 and pairs:  # most operations address an instant created earlier
        t, a = rng.choice(pairs)
        a = a.value if isinstance(a, Action) and rng.random() < 0.2 else a
    else:
        t, a = a_time(), an_action()
        pairs.append((t, a))
    kind = rng.choices(["create", "inflight", "complete", "revert-requested", "revert-inflight", "delete",
                        "load", "copy"], weights=[6, 5, 5, 1, 2, 2, 1, 1])[0]
    if kind == "create":
        return "create", (t, a), ({"allow_during_restore": True} if rng.random() < 0.1 else {})
    if kind == "inflight":
        return "transition_to_inflight", (t, a), {}
    if kind == "complete":
        return "complete", (t, a, a_completion(t)), {}
    if kind == "revert-requested":
        return "revert_inflight_to_requested", (t, a), {}
    if kind == "revert-inflight":
        return "revert_to_inflight", (t, a), {}
    if kind == "delete":
        return "delete", (t, a), {"allow_completed": rng.random() < 0.5}
    if kind == "load":
        states = rng.sample(STATES, rng.randint(0, 3))
        comp = a_completion(t) if (State.COMPLETED in states or rng.random() < 0.1) else None
        return "load", (t, a, states, comp), {}
    return "copy", (), {}


def check_timelines_agree(seed: int, sequences: int = 60, steps: int = 70) -> None:
    """Random operation sequences on spec/engine twins; AssertionError at the first difference."""
    rng = random.Random(seed)
    for n in range(sequences):
        version = rng.choice([6, 8, 9])
        pairs = [(SpecTimeline(version), fast_timeline.Timeline(version))]
        times: list[str] = []
        instants: list[tuple] = []
        clock = [0]
        for step in range(steps):
            name, args, kwargs = _random_op(rng, times, instants, clock)
            spec, fast = pairs[rng.randrange(len(pairs))]
            where = f"seed {seed}, sequence {n}, step {step}: {name}{args}{kwargs}"
            if name == "copy":
                pairs.append((spec.copy(), fast.copy()))
            else:
                want = _outcome(getattr(spec, name), *args, **kwargs)
                got = _outcome(getattr(fast, name), *args, **kwargs)
                assert got == want, f"{where}: engine {got} != spec {want}"
            for i, (s, f) in enumerate(pairs):  # every copy, so a change leaking into another shows
                known = list(times)
                assert _observe(f, known) == _observe(s, known), f"{where}: timeline copy #{i} differs"


def test_engine_timeline_equals_the_spec():
    check_timelines_agree(seed=1)


def test_engine_timeline_equals_the_spec_more_seeds():
    for seed in (2, 3, 4):
        check_timelines_agree(seed, sequences=25)


def test_engine_copies_are_independent():
    """The direct check: change each side of a copy; the other side does not move."""
    tl = fast_timeline.Timeline(9)
    for k in range(1, 4):
        tl.create(_time(k), Action.COMMIT)
        tl.transition_to_inflight(_time(k), Action.COMMIT)
    twin = tl.copy()
    before = _observe(tl, [_time(k) for k in range(1, 4)])
    twin.complete(_time(1), Action.COMMIT, _time(10))
    twin.delete(_time(2), Action.COMMIT)
    assert _observe(tl, [_time(k) for k in range(1, 4)]) == before
    tl.complete(_time(3), Action.COMMIT, _time(11))
    assert twin.state_of(_time(3), Action.COMMIT) is State.INFLIGHT


def _shared_records_copy(self):
    """Broken copy-on-write: the copy shares the records *and* the owner token, so both change them in place."""
    other = fast_timeline.Timeline.__new__(fast_timeline.Timeline)
    other.table_version, other.layout = self.table_version, self.layout
    other._records, other._restores, other._pending = dict(self._records), set(self._restores), set(self._pending)
    other._token = self._token
    return other


def test_timeline_check_catches_a_copy_that_shares_records(monkeypatch):
    monkeypatch.setattr(fast_timeline.Timeline, "copy", _shared_records_copy)
    with pytest.raises(AssertionError, match="copy #"):
        check_timelines_agree(seed=1)


def test_timeline_check_catches_a_missing_guard(monkeypatch):
    """Broken engine guard: complete() accepts a completion time that is not after the requested time."""
    original = fast_timeline.Timeline.complete

    def complete(self, requested_time, action, completion_time):
        if isinstance(completion_time, str) and completion_time.isdigit() and len(completion_time) == 17:
            rec = self._record(requested_time, action, "I3.legal-transition")
            if rec.state is State.INFLIGHT and completion_time <= requested_time:
                rec.states.add(State.COMPLETED)
                rec.completion_time = completion_time
                self._pending.discard(self._key(requested_time, action))
                return rec.view()
        return original(self, requested_time, action, completion_time)

    monkeypatch.setattr(fast_timeline.Timeline, "complete", complete)
    with pytest.raises(AssertionError, match="engine"):
        check_timelines_agree(seed=1)


# =============================================================================================== codec

T17, TC17 = "20251220210129235", "20251220210129883"
TIME_FORMS = ["20251220210129", T17, "20251220210129235001", "2025122021012923", "2025"]  # 14, 17, 20; bad
PARTITIONS = ["", "region=eu", "2025/01/02"]


def _fixture_names() -> list[str]:
    """The base names of every entry of the fixture tables (empty without the fixtures)."""
    names: set[str] = set()
    for z in fixture_zips():
        with zipfile.ZipFile(z) as zf:
            names.update(PurePosixPath(n).name for n in zf.namelist() if not n.startswith("__MACOSX/"))
    names.discard("")
    return sorted(names)


def _systematic_timeline_names() -> list[str]:
    """Every (time forms, action text, suffix) combination, well-formed or not."""
    acts = [a.value for a in ACTIONS] + ["inflight", "requested", "bogus", "Commit"]
    out = []
    for req in TIME_FORMS:
        for comp in [None] + TIME_FORMS[:3] + ["2025"]:
            for act in acts:
                for suffix in (None, "requested", "inflight", "completed", "x"):
                    head = req if comp is None else f"{req}_{comp}"
                    out.append(f"{head}.{act}" + ("" if suffix is None else f".{suffix}"))
    return out


def _systematic_data_names() -> list[str]:
    out = []
    for t in TIME_FORMS:
        for ext in ("parquet", "orc", "hfile", "lance", "log", "avro", "parquet.crc"):
            out.append(f"6d3e1a9c-1b2a-4c1e-9a1b-000000000001-0_1-0-1_{t}.{ext}")
            out.append(f"f1-0_12-34-567_{t}.{ext}")
        for ver in ("1", "12"):
            for tail in ("", "_1-0-1", "_1-0-1.cdc", ".cdc", "_1-0-1.crc", ".crc"):
                out.append(f".6d3e1a9c-1b2a-4c1e-9a1b-000000000001-0_{t}.log.{ver}{tail}")
                out.append(f".f1-0_{t}.log.{ver}{tail}")
    out += [".hoodie_partition_metadata", ".hoodie_partition_metadata.parquet", "_SUCCESS", ".f1.log.",
            "hoodie.properties", ".aux", "metadata", "", ".", "_", "a_b_c.parquet", ".log.1",
            "20250101000000000_20250101000000001_0.parquet", "manifest_1", "_version_"]
    return out


_ALPHABET = string.digits + "._-" + "abcdefghilmnoprstuvwxyz" + "CZ"


def _mutate(rng: random.Random, name: str) -> str:
    chars = list(name)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(6)
        i = rng.randrange(len(chars) + 1)
        if op == 0 and chars:
            del chars[min(i, len(chars) - 1)]
        elif op == 1:
            chars.insert(i, rng.choice(_ALPHABET))
        elif op == 2 and chars:
            chars[min(i, len(chars) - 1)] = rng.choice(_ALPHABET)
        elif op == 3:
            chars = chars[:i]
        elif op == 4 and chars:
            j = rng.randrange(len(chars))
            chars[j:j] = chars[j:j + rng.randint(1, 6)]
        else:
            chars = chars[i:] + chars[:i]
    return "".join(chars)


def _corpus(seed: int, mutations: int) -> list[str]:
    rng = random.Random(seed)
    valid = _fixture_names() + _systematic_timeline_names() + _systematic_data_names()
    for k in range(200):  # names the codec writes, of random values
        t, c = _time(rng.randrange(10**6)), _time(10**6 + rng.randrange(10**6))
        a, s = rng.choice(ACTIONS), rng.choice(STATES)
        for layout in (LAYOUT_1, LAYOUT_2):
            try:
                valid.append(spec_codec.timeline_file_name(t, a, s, c, layout))
            except ModelError:
                pass
        tok = rng.choice([None, f"{rng.randrange(9)}-{rng.randrange(99)}-{rng.randrange(999)}"])
        valid.append(LogFile(f"fg{k}-0", t, rng.randint(1, 30), tok, tok is not None and rng.random() < 0.3).name)
        valid.append(BaseFile(f"fg{k}-0", tok or "1-0-1", t, rng.choice(sorted(spec_codec.BASE_EXTENSIONS))).name)
    bad = [_mutate(rng, rng.choice(valid)) for _ in range(mutations)]
    junk = ["".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 30))) for _ in range(mutations // 10)]
    return valid + bad + junk


def _parsed(fn, *args, **kwargs):
    """A parse result with every field (``size`` too, which equality ignores), or the error's type and text."""
    try:
        v = fn(*args, **kwargs)
    except (ModelError, ValueError) as e:
        return (type(e).__name__, str(e), e.args)
    if v is None:
        return None
    return (type(v).__name__, v, tuple(getattr(v, f) for f in type(v).__dataclass_fields__))


def check_codecs_agree(seed: int, mutations: int = 4000) -> int:
    """Every corpus name through both parsers; AssertionError at the first difference. Returns the count."""
    rng = random.Random(seed)
    names = _corpus(seed, mutations)
    for name in names:
        for layout in (LAYOUT_1, LAYOUT_2, 3):
            for mtime in (None, "20260101000000000"):
                want = _parsed(spec_codec.parse_timeline_file, name, layout, mtime=mtime)
                got = _parsed(fastcodec.parse_timeline_file, name, layout, mtime=mtime)
                assert got == want, f"parse_timeline_file({name!r}, {layout}, mtime={mtime}): fast {got} != spec {want}"
        part, size = rng.choice(PARTITIONS), rng.choice([None, 0, 1234])
        want = _parsed(spec_codec.parse_data_file, name, part, size)
        got = _parsed(fastcodec.parse_data_file, name, part, size)
        assert got == want, f"parse_data_file({name!r}, {part!r}, {size}): fast {got} != spec {want}"
    return len(names)


def _timeline_view(tl) -> tuple:
    return (tl.table_version, tl.instants(),
            [tl.states_present(i.requested_time, i.action) for i in tl.instants()], [i for i in tl])


def check_listings_agree(seed: int, listings: int = 300) -> None:
    """Random listings through both ``timeline_from_files`` and both ``parse_data_files``."""
    rng = random.Random(seed)
    pool = _corpus(seed, 400)
    for n in range(listings):
        version = rng.choice([6, 8, 9])
        layout = spec_codec.layout_for_version(version)
        names, mtimes = [], {}
        for k in range(rng.randint(0, 12)):  # whole instants, some states, as a writer leaves them
            t, a = _time(rng.randrange(40)), rng.choice(ACTIONS)
            for s in rng.sample(STATES, rng.randint(1, 3)):
                try:
                    name = spec_codec.timeline_file_name(t, a, s, _time(100 + rng.randrange(40)), layout)
                except ModelError:
                    continue
                names.append(name)
                if s is State.COMPLETED and rng.random() < 0.5:
                    mtimes[name] = _time(200 + k)
        names += rng.sample(pool, rng.choice([0, 0, 0, 1, 3]))  # junk, claimed-but-malformed, foreign names
        rng.shuffle(names)
        mt = mtimes if rng.random() < 0.5 else None

        def rebuild(codec):
            try:
                return ("ok", _timeline_view(codec.timeline_from_files(iter(names), version, mtimes=mt)))
            except (ModelError, ValueError) as e:
                return (type(e).__name__, str(e))

        want, got = rebuild(spec_codec), rebuild(fastcodec)
        assert got == want, f"listing {n} (version {version}) {names}: fast {got} != spec {want}"

        entries = [(nm, rng.choice(PARTITIONS)) + ((rng.randrange(10**6),) if rng.random() < 0.5 else ())
                   for nm in rng.sample(pool, rng.randint(0, 20))]

        def bulk(codec):
            try:
                bases, logs = codec.parse_data_files(iter(entries))
            except (ModelError, ValueError) as e:
                return (type(e).__name__, str(e))
            return ("ok", [(f, f.size) for f in bases], [(f, f.size) for f in logs])

        want, got = bulk(spec_codec), bulk(fastcodec)
        assert got == want, f"parse_data_files({entries}): fast {got} != spec {want}"


def test_fast_codec_equals_the_spec_on_the_corpus():
    n = check_codecs_agree(seed=7)
    assert n > 5000


def test_fast_codec_equals_the_spec_on_random_listings():
    check_listings_agree(seed=11)


def test_corpus_holds_valid_and_invalid_names_of_every_kind():
    """The corpus is not vacuous: it parses to every kind of value and to errors."""
    kinds = set()
    for name in _corpus(7, 2000):
        for layout in (LAYOUT_1, LAYOUT_2):
            r = _parsed(spec_codec.parse_timeline_file, name, layout)
            kinds.add(r[0] if r[0] != "TimelineFile" else ("TimelineFile", r[1].state))
        r = _parsed(spec_codec.parse_data_file, name)
        kinds.add(None if r is None else r[0])
    assert {("TimelineFile", s) for s in STATES} | {"CodecError", "BaseFile", "LogFile", None} <= kinds


def test_codec_check_catches_an_accepted_bad_name(monkeypatch):
    """Broken fast path: it accepts ``t.compaction`` (no completed compaction file exists)."""
    monkeypatch.setitem(fastcodec._KINDS[LAYOUT_2], ("compaction", None), (Action.COMPACTION, State.COMPLETED))
    with pytest.raises(AssertionError, match="parse_timeline_file"):
        check_codecs_agree(seed=7, mutations=0)


def test_codec_check_catches_a_wrong_value(monkeypatch):
    """Broken fast path: log files lose their ``.cdc`` flag."""
    make = fastcodec._make_log
    monkeypatch.setattr(fastcodec, "_make_log", lambda fid, t, v, tok, cdc, part, size: make(fid, t, v, tok, False,
                                                                                              part, size))
    with pytest.raises(AssertionError, match="parse_data_file"):
        check_codecs_agree(seed=7, mutations=0)


def test_codec_check_catches_a_lost_size(monkeypatch):
    """Broken fast path: base files drop ``size`` (not part of equality, so compared field by field)."""
    make = fastcodec._make_base
    monkeypatch.setattr(fastcodec, "_make_base", lambda fid, tok, t, ext, part, size: make(fid, tok, t, ext, part, None))
    with pytest.raises(AssertionError, match="parse_data_file"):
        check_codecs_agree(seed=7, mutations=0)


def test_listing_check_catches_a_wrong_rebuild(monkeypatch):
    """Broken fast rebuild: a layout-1 completed file ignores its modification time."""
    parse = fastcodec.parse_timeline_file
    monkeypatch.setattr(fastcodec, "parse_timeline_file", lambda name, layout, mtime=None: parse(name, layout))
    with pytest.raises(AssertionError, match="listing"):
        check_listings_agree(seed=11)


# ============================================================================================ slicing

GROUPS = [(p, f) for p in ("", "p=1") for f in ("fa-0", "fb-0", "fc-0")]
WRITE_ACTIONS = [Action.COMMIT, Action.DELTACOMMIT, Action.DELTACOMMIT, Action.COMPACTION, Action.LOGCOMPACTION,
                 Action.REPLACECOMMIT, Action.CLUSTERING, Action.CLEAN]


def _random_table(rng: random.Random) -> dict:
    version = rng.choice([6, 8, 9])
    tl = SpecTimeline(version)
    pool = sorted(rng.sample(range(10, 80), 14))
    for k in pool[: rng.randint(0, len(pool))]:
        t = _time(k)
        action = rng.choice(WRITE_ACTIONS)
        if action is Action.CLUSTERING and version == 6:
            action = Action.REPLACECOMMIT
        state = rng.choice(STATES)
        states = {State.REQUESTED, State.INFLIGHT, state} if state is not State.REQUESTED else {state}
        # completion times land on other requested times too: ties with base instants
        comp = _time(rng.choice([k2 for k2 in pool if k2 > k] or [k + 1])) if state is State.COMPLETED else None
        tl.load(t, action, states, comp)
    times = [_time(k) for k in pool] + [_time(1), _time(2)]  # 1, 2: before the active timeline (archived)
    toks = ["1-0-1", "2-0-1", "10-3-7"]
    bases = [BaseFile(f, rng.choice(toks), rng.choice(times), "parquet", p, size=rng.randrange(100))
             for p, f in (rng.choice(GROUPS) for _ in range(rng.randint(0, 10)))]
    logs = []
    for _ in range(rng.randint(0, 25)):
        p, f = rng.choice(GROUPS)
        tok = rng.choice([None] + toks)
        logs.append(LogFile(f, rng.choice(times), rng.randint(1, 3), tok, tok is not None and rng.random() < 0.2, p))
    rng.shuffle(bases)
    rng.shuffle(logs)

    def some():
        return {g: rng.choice(times) for g in rng.sample(GROUPS, rng.randint(0, 2))}

    return dict(tl=tl, bases=bases, logs=logs, pending_compactions=some(), replaced=some(), pending_clustering=some())


def _custom_rule(lg, keys, times):
    """A rule that is neither built-in one (exercises the fast builder's call-the-rule path)."""
    return keys[0] if keys and lg.version % 2 == 0 else lg.instant_time


def check_slicing_agrees(seed: int, tables: int = 300) -> None:
    rng = random.Random(seed)
    for n in range(tables):
        tb = _random_table(rng)
        for rule in (None, spec_slicing.INSTANT_TIME, spec_slicing.COMPLETION_TIME, _custom_rule):
            kw = dict(rule=rule, pending_compactions=tb["pending_compactions"], replaced=tb["replaced"],
                      pending_clustering=tb["pending_clustering"])
            spec = spec_slicing.FileSystemView(tb["tl"], tb["bases"], tb["logs"], **kw)
            fast = fastslicing.FileSystemView(tb["tl"], tb["bases"], tb["logs"], **kw)
            where = f"seed {seed}, table {n}, rule {getattr(rule, '__name__', rule)}"
            assert fast.file_groups() == spec.file_groups(), f"{where}: file groups differ"
            assert fast.latest_file_slices() == spec.latest_file_slices(), f"{where}: latest slices differ"
            assert fast.latest_merged_file_slices() == spec.latest_merged_file_slices(), f"{where}: merged differ"


def test_fast_slicing_equals_the_spec():
    check_slicing_agrees(seed=5)


def test_slicing_tables_are_not_vacuous():
    """The random tables hold multi-slice groups under the completion-time rule and log-only groups."""
    rng = random.Random(5)
    multi = log_only = 0
    for _ in range(300):
        tb = _random_table(rng)
        v = spec_slicing.FileSystemView(tb["tl"], tb["bases"], tb["logs"], rule=spec_slicing.COMPLETION_TIME)
        multi += sum(len(g.slices) > 1 for g in v.file_groups())
        log_only += sum(all(s.base_file is None for s in g.slices) for g in v.file_groups())
    assert multi > 100 and log_only > 10


def test_slicing_check_catches_a_wrong_log_order(monkeypatch):
    """Broken fast path: logs sorted by instant only (versions and write tokens keep listing order)."""
    monkeypatch.setattr(fastslicing, "_log_key", lambda lg: (lg.instant_time,))
    with pytest.raises(AssertionError, match="differ"):
        check_slicing_agrees(seed=5)


def test_slicing_check_catches_an_exclusive_boundary(monkeypatch):
    """Broken fast path: a log whose completion time equals a base instant goes to the slice before it
    (``bisect_left``: RFC-66's strict ``<`` instead of the code's inclusive ``>=``)."""
    from bisect import bisect_left
    monkeypatch.setattr(fastslicing, "bisect_right", bisect_left)
    with pytest.raises(AssertionError, match="differ"):
        check_slicing_agrees(seed=5)


# ============================================================================================ archival decision
# ``engine.archival.start`` against the spec's ``model.archival.start``: random active timelines (every action,
# every subset of states, comparable-action collisions, double completed files), random settings and retention
# contexts, running jobs; and the benchmark's own sequence (a deltacommit, then an archival run, 600 times).


def _archival_outcome(fn, s, cfg, ctx, design=spec_archival.HUDI):
    try:
        return ("ok",) + tuple(fn(s, cfg, ctx, design))
    except ModelError as e:
        return (type(e).__name__, str(e))


def _random_history_state(rng: random.Random) -> spec_archival.HistoryState:
    files = set()
    k = 0
    for _ in range(rng.randrange(0, 40)):
        k += rng.choice((1, 1, 1, 2, 0))  # 0: a second instant at the same time (a collision or not)
        action = rng.choice(ACTIONS if rng.random() < 0.3 else [Action.COMMIT, Action.DELTACOMMIT, Action.CLEAN,
                                                                 Action.REPLACECOMMIT, Action.COMPACTION])
        states = [st for st in STATES if rng.random() < 0.5] or [State.COMPLETED]
        if rng.random() < 0.6 and State.COMPLETED not in states:
            states.append(State.COMPLETED)
        for st in states:
            ct = _time(10 * k + 5) if st is State.COMPLETED else None
            files.add(spec_archival.ActiveFile(_time(10 * k), action, st, ct))
        if State.COMPLETED in states and rng.random() < 0.03:  # a second completed file, another completion
            files.add(spec_archival.ActiveFile(_time(10 * k), action, State.COMPLETED, _time(10 * k + 7)))
    job = (spec_archival.CompactLevel(0),) if rng.random() < 0.03 else ()
    return spec_archival.HistoryState(active=frozenset(files), lsm=spec_lsm.EMPTY, job=job,
                                      table_version=rng.choice((8, 9)))


def _random_archival_settings(rng: random.Random):
    mx = rng.randrange(2, 12)
    mn = rng.randrange(1, mx)
    cfg = spec_archival.ArchivalConfig(max_commits=mx, min_commits=mn, cleaner_commits_retained=rng.randrange(0, mn),
                                       beyond_savepoint=rng.random() < 0.3, batch=rng.randrange(1, 5))
    ctx = spec_archival.RetentionContext(
        compaction_num_commits=rng.random() < 0.3, mdt_enabled=rng.random() < 0.2,
        mdt_latest_compaction=rng.choice((None, _time(rng.randrange(0, 300)))),
        clean_earliest_retain=rng.choice((None, None, _time(10 * rng.randrange(0, 30)))))
    return cfg, ctx


def _step_outcome(fn, s, cfg):
    try:
        return ("ok", fn(s, cfg))
    except ModelError as e:
        return (type(e).__name__, str(e))


def _check_steps_agree(rng: random.Random, s, cfg, where: str, seen: dict) -> None:
    """Run the job with both ``step``s, comparing every state; now and then an active file the job deletes
    is taken away first (both must refuse alike), and one more step after the end (both refuse)."""
    if s.job and rng.random() < 0.2:
        dels = [st.file for st in s.job if isinstance(st, spec_archival.DeleteActiveFile)]
        if dels:
            s = replace(s, active=s.active - {rng.choice(dels)})
    # now and then a storage step of the job runs twice (done again, its guard refuses or it is skipped)
    storage = [j for j, st in enumerate(s.job) if not isinstance(st, (spec_archival.DeleteActiveFile,
                                                                     spec_archival.CompactLevel,
                                                                     spec_archival.CleanLSM))]
    if storage and storage[0] == 0 and rng.random() < 0.15:  # the L0 file never written: the manifest
        s = replace(s, job=s.job[1:])                           # update naming it is refused
        storage = [j - 1 for j in storage[1:]]
    again = rng.choice(storage) + 1 if storage and rng.random() < 0.3 else None
    repeat = s.job[again - 1] if again is not None else None
    for k in range(len(s.job) + 2):
        if k == again:
            s = replace(s, job=(repeat,) + s.job)
        want = _step_outcome(spec_archival.step, s, cfg)
        got = _step_outcome(fast_archival.step, s, cfg)
        assert got == want, f"engine.archival.step and the spec differ at step {k} ({where}):\n spec:   {want}\n engine: {got}"
        if want[0] != "ok":
            seen["step-refused"] = seen.get("step-refused", 0) + 1
            if "no archival job" not in want[1]:
                seen["step-guard-refused"] = seen.get("step-guard-refused", 0) + 1
            return
        s = want[1]
        seen["steps"] = seen.get("steps", 0) + 1


def check_archival_agrees(seed: int, cases: int = 1500) -> dict:
    """Both executors on random states; raises AssertionError (with the replay seed) on the first difference.
    Returns how many cases triggered, archived, or were refused (so the caller can check it is not vacuous)."""
    rng = random.Random(seed)
    seen = {"triggered": 0, "archived": 0, "clean-rollback": 0, "refused": 0, "savepoint": 0}
    for case in range(cases):
        s = _random_history_state(rng)
        cfg, ctx = _random_archival_settings(rng)
        want = _archival_outcome(spec_archival.start, s, cfg, ctx)
        got = _archival_outcome(fast_archival.start, s, cfg, ctx)
        assert got == want, (f"engine.archival.start and the spec differ (case {case}; replay: "
                             f"check_archival_agrees(seed={seed})):\n spec:   {want}\n engine: {got}")
        if want[0] != "ok":
            seen["refused"] += 1
            continue
        d = want[1]
        _check_steps_agree(rng, want[2], cfg, f"case {case}; replay: check_archival_agrees(seed={seed})", seen)
        seen["triggered"] += d.triggered
        seen["archived"] += d.archives
        seen["clean-rollback"] += any(i.action in (Action.CLEAN, Action.ROLLBACK) for i in d.to_archive)
        seen["savepoint"] += d.first_savepoint is not None
    return seen


def test_fast_archival_equals_the_spec_on_random_timelines():
    seen = check_archival_agrees(seed=11)
    # not vacuous: every branch of the decision is reached, jobs run and steps are refused
    assert all(v >= 10 for v in seen.values()) and seen["steps"] >= 1000 and seen["step-refused"] >= 10, seen


def test_fast_archival_equals_the_spec_on_the_benchmarks_sequence():
    """``benchmarks/bench_history.py --part archive`` in memory: a deltacommit's three state files, then a run."""
    cfg = spec_archival.ArchivalConfig()
    s = spec_archival.HistoryState(table_version=9)
    runs = 0
    for i in range(600):
        t, c = _time(10 * i), _time(10 * i + 5)
        s = replace(s, active=s.active | {spec_archival.ActiveFile(t, Action.DELTACOMMIT, st)
                                          for st in (State.REQUESTED, State.INFLIGHT)}
                    | {spec_archival.ActiveFile(t, Action.DELTACOMMIT, State.COMPLETED, c)})
        want = spec_archival.start(s, cfg)
        assert fast_archival.start(s, cfg) == want, f"differ at commit {i}"
        runs += want[0].archives
        s = want[1]
        while s.job:
            nxt = spec_archival.step(s, cfg)
            assert fast_archival.step(s, cfg) == nxt, f"step differs at commit {i}"
            s = nxt
    assert runs >= 50 and len(s.active) <= 3 * (cfg.max_commits + 1)


def test_archival_check_catches_a_wrong_commit_count(monkeypatch):
    """Broken fast path: replacecommits (and clustering) left off the completed commits timeline."""
    broken = dict(fast_archival._IS_COMMIT, **{Action.REPLACECOMMIT: False, Action.CLUSTERING: False})
    monkeypatch.setattr(fast_archival, "_IS_COMMIT", broken)
    with pytest.raises(AssertionError, match="differ"):
        check_archival_agrees(seed=11)


def test_archival_check_catches_a_lost_retention_rule(monkeypatch):
    """Broken fast path: no write action counts as pending (retention rules 1 and 3 never apply)."""
    monkeypatch.setattr(fast_archival, "WRITE_ACTIONS", frozenset())
    with pytest.raises(AssertionError, match="differ"):
        check_archival_agrees(seed=11)


def test_archival_check_catches_a_step_that_forgets_the_deletion_order(monkeypatch):
    """Broken fast path: a deletion step that does not record the file in ``deleted`` (I16's history)."""
    real = fast_archival.step

    def broken(s, cfg=spec_archival.ArchivalConfig(), design=spec_archival.HUDI):
        out = real(s, cfg, design)
        return replace(out, deleted=s.deleted) if isinstance(s.job[0], spec_archival.DeleteActiveFile) else out

    monkeypatch.setattr(fast_archival, "step", broken)
    with pytest.raises(AssertionError, match="differ"):
        check_archival_agrees(seed=11)


def test_archival_check_catches_a_storage_step_without_its_guard(monkeypatch):
    """Broken fast path: storage steps run without the LSM guard (a refused step fails differently)."""
    from types import SimpleNamespace
    monkeypatch.setattr(fast_archival, "lsm", SimpleNamespace(guard=lambda s, st: None, apply=spec_lsm.apply,
                                                              write_steps=spec_lsm.write_steps,
                                                              LSMRecord=spec_lsm.LSMRecord))
    with pytest.raises(AssertionError, match="differ"):
        check_archival_agrees(seed=11)


def test_archival_check_catches_a_missed_collision(monkeypatch):
    """Broken fast path: instants keyed by their own action, not the comparable one (a compaction and a commit
    at one time pass as two instants; the spec's ``Timeline.load`` refuses them as one instant loaded twice)."""
    monkeypatch.setattr(fast_archival, "_SHOWN", {a: a for a in Action})
    with pytest.raises(AssertionError, match="differ"):
        check_archival_agrees(seed=11)


def test_table_archiver_with_the_fast_planner_writes_the_same_history(tmp_path):
    """On disk: the same table archived with the spec's planner and with the engine's gives the same decisions,
    the same history folder (names and bytes of manifests/_version_, rows of the data files) and timeline."""
    from lakeio.ondisk import history as H
    from lakeio.ondisk.skeleton import write_skeleton
    from model.timeline import Timeline as _TL

    cfg = spec_archival.ArchivalConfig(max_commits=6, min_commits=3, cleaner_commits_retained=1, compaction_batch=3)
    outs = []
    for label, executor in (("spec", None), ("engine", fast_archival)):
        base = write_skeleton(tmp_path / label, _TL(9), [], [], name="t")
        tdir = base / ".hoodie" / "timeline"
        arch = H.TableArchiver(base, cfg, executor=executor)
        decisions = []
        for i in range(80):
            t, c = _time(10 * i), _time(10 * i + 5)
            (tdir / f"{t}.deltacommit.requested").write_bytes(b"")
            (tdir / f"{t}.deltacommit.inflight").write_bytes(b"")
            (tdir / f"{t}_{c}.deltacommit").write_bytes(b'{"i": %d}' % i)
            decisions.append(arch.archive())
        folder = H.lsm_folder(base, {})
        small = {p.name: p.read_bytes() for p in folder.iterdir() if not p.name.endswith(".parquet")}
        data = {p.name: H.LsmHistory(folder).read_columns(p.name, H.LSM_ARROW_SCHEMA.names).to_pylist()
                for p in folder.iterdir() if p.name.endswith(".parquet")}
        outs.append((decisions, small, data, sorted(p.name for p in tdir.iterdir())))
    assert sum(d.archives for d in outs[0][0]) >= 10 and len(outs[0][2]) >= 2
    assert outs[0] == outs[1]


# ------------------------------------------------------------------- the archiver's incremental listing
# ``lakeio.ondisk.history.TableArchiver._active`` keeps the previous listing and parses only names that
# appeared; it must give exactly what a full rebuild gives: the spec's codec
# (``model.filenames.timeline_from_files``) over the whole listing, turned into ``ActiveFile``s.

_ACTIVE_ACTIONS = (Action.COMMIT, Action.DELTACOMMIT, Action.CLEAN, Action.ROLLBACK, Action.REPLACECOMMIT,
                   Action.COMPACTION)


def _full_rebuild(arch) -> dict:
    """The archiver's ``_active()`` result rebuilt from nothing with the spec's codec."""
    import os

    from lakeio.ondisk import history as H
    from lakeio.ondisk.reader import _mtime_time, leftover_temp_target

    tdir = arch.tdir
    names = sorted(n for n in os.listdir(tdir) if n[:1].isdigit() and (tdir / n).is_file()
                   and spec_codec.is_timeline_file(n) and leftover_temp_target(n, arch.layout) is None)
    mtimes = {n: _mtime_time(tdir / n, arch.tz) for n in names
              if spec_codec.parse_timeline_file(n, arch.layout).state is State.COMPLETED
              and spec_codec.parse_timeline_file(n, arch.layout).completion_time is None}
    tl = spec_codec.timeline_from_files(names, arch.version, mtimes=mtimes)
    by = {(f.requested_time, f.key, f.state): n for n in names
          for f in [spec_codec.parse_timeline_file(n, arch.layout)]}
    return {af: by[(af.requested_time, key, af.state)] for af, key in H.active_files(tl)}


def _write_instant(rng: random.Random, tdir, k: int) -> None:
    """Some state files of one instant at time ``k`` (a random action; names as Hudi writes them for tv9,
    sometimes a legacy completed name without completion time)."""
    from model.instant import STARTS_INFLIGHT

    action = rng.choice(_ACTIVE_ACTIONS)
    states = [s for s in (State.REQUESTED, State.INFLIGHT, State.COMPLETED)
              if not (s is State.REQUESTED and action in STARTS_INFLIGHT)]
    chosen = states if rng.random() < 0.93 else [s for s in states if rng.random() < 0.6] or [State.COMPLETED]
    for st in chosen:
        ct = _time(k + 1) if st is State.COMPLETED and rng.random() < 0.9 else None
        # no completion time: the legacy name (as layout 1 writes it), read with the file's mtime
        name = spec_codec.timeline_file_name(_time(k), action, st, ct, LAYOUT_2 if ct else LAYOUT_1)
        (tdir / name).write_bytes(b"")


def check_incremental_listing(seed: int, tmp_path, steps: int = 160) -> int:
    """After every step of a random sequence -- commits written by others, this archiver's runs (its own
    deletions), a file deleted or renamed by someone else, a folder and a foreign file -- the archiver's
    incremental ``_active()`` equals a full rebuild. Returns how many of its runs archived (deleted files)."""
    import os

    from lakeio.ondisk import history as H
    from lakeio.ondisk.skeleton import write_skeleton

    rng = random.Random(seed)
    base = write_skeleton(tmp_path / f"t{seed}", SpecTimeline(9), [], [], name="incr")
    tdir = base / ".hoodie" / "timeline"
    arch = H.TableArchiver(base, spec_archival.ArchivalConfig(max_commits=6, min_commits=4,
                                                             cleaner_commits_retained=2),
                           executor=fast_archival)
    k = 1000
    archived = 0
    for step in range(steps):
        r = rng.random()
        names = sorted(n for n in os.listdir(tdir) if n[:1].isdigit() and (tdir / n).is_file())
        if r < 0.45 or r >= 0.8 or not names:
            k += 10
            _write_instant(rng, tdir, k)
        elif r < 0.62:
            try:  # first, often, someone removes the pending instants (they bound what may be archived)
                cur = _full_rebuild(arch) if rng.random() < 0.7 else {}
            except Exception:  # noqa: BLE001 - a listing with a bad name: leave it
                cur = {}
            pend = {af.requested_time for af in cur} - {af.requested_time for af in cur if af.state is State.COMPLETED}
            for n in names:
                if n[:17] in pend:
                    os.unlink(tdir / n)
            try:
                archived += bool(arch.archive().archives)
            except Exception:  # noqa: BLE001 - a refused run leaves what it did; the listing must follow
                pass
        elif r < 0.68:
            bad = [n for n in names if n.endswith(".notes")]
            gone = rng.choice(bad or names)
            # one file (the instant may turn pending), or every file of its instant (a pending one goes)
            for n in [gone] if rng.random() < 0.4 else [n for n in names if n[:17] == gone[:17]]:
                os.unlink(tdir / n)
        elif r < 0.74:
            os.rename(tdir / rng.choice(names), tdir / f".{rng.choice(names)}.leftover")  # no longer a state file
        elif r < 0.76:
            old = rng.choice(names)
            k += 10
            os.rename(tdir / old, tdir / (_time(k) + old[len(_time(0)):]))
        elif r < 0.78:
            (tdir / f"{_time(k)}.notes").write_bytes(b"x")  # a bad timeline name: both must refuse
        elif r < 0.8:
            d = tdir / f"{_time(k + 3)}.commit"
            if not d.exists():
                d.mkdir()  # a folder named like a state file
        try:
            got = dict(arch._active())
        except Exception as exc:  # noqa: BLE001
            got = ("refused",)  # a UserError naming one bad name (which one first is listing order)
        try:
            want = _full_rebuild(arch)
        except Exception as exc:  # noqa: BLE001
            want = ("refused",)
        assert got == want, f"seed {seed} step {step}: incremental listing differs from a full rebuild " \
                            f"(replay: check_incremental_listing({seed}, tmp_path))"
    return archived


@pytest.mark.parametrize("seed", range(4))
def test_incremental_listing_equals_a_full_rebuild(seed, tmp_path):
    assert check_incremental_listing(seed, tmp_path) >= 3  # its own deletions are part of every sequence


def test_incremental_listing_check_catches_never_dropping_removed_names(tmp_path, monkeypatch):
    from lakeio.ondisk import history as H

    real = H.TableArchiver._changes
    monkeypatch.setattr(H.TableArchiver, "_changes", lambda self, listing: ((), real(self, listing)[1]))
    with pytest.raises(AssertionError, match="differs from a full rebuild"):
        for seed in range(4):
            check_incremental_listing(seed, tmp_path)


def test_incremental_listing_check_catches_a_wrong_instant_action(tmp_path, monkeypatch):
    """A fast instant builder taking each file's action from its own name (a compaction's completed file
    would show as a commit, not as the instant's action) is caught."""
    from lakeio.ondisk import history as H

    real = H.TableArchiver._instant_files

    def broken(self, ns):
        out = real(self, ns)
        return None if out is None else [(replace(af, action=self._parsed[n][0].action), n) for af, n in out]

    monkeypatch.setattr(H.TableArchiver, "_instant_files", broken)
    with pytest.raises(AssertionError, match="differs from a full rebuild"):
        for seed in range(4):
            check_incremental_listing(seed, tmp_path)
