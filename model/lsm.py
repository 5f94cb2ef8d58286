"""The LSM timeline (the archived history of a tv8/9 table, ``.hoodie/timeline/history/``) as a spec.

Hudi facts encoded here (``hudi-semantics.md`` section 5, invariant I15):

* data files ``<min>_<max>_<level>.parquet`` (``LSMTimeline`` regex ``^(\\d+)_(\\d+)_(\\d)\\.parquet``: the level is
  ONE digit); ``min``/``max`` are the requested times of the first and last instant written
  (``LSMTimelineWriter#newFileName``; the tech spec says completion time for max, the code uses instant time);
* ``manifest_<N>``: the complete list of valid data files of snapshot N (N from 1, +1 per update);
* ``_version_``: the latest committed N; temp manifests (``*.tmp``) are ignored;
* an archival batch is written as ONE L0 file (``LSMTimelineWriter#write``); if that file already exists and the
  latest manifest lists it, the write is skipped (a previous archival committed it and failed while deleting the
  active files), else the leftover is deleted and rewritten;
* ``updateManifest``: read the latest version (``_version_``, or the greatest ``manifest_N`` when it cannot be read:
  ``LSMTimeline#latestSnapshotVersion``), write ``manifest_<v+1>`` (deleting a leftover of that name), then delete
  and recreate ``_version_`` (``#createManifestFile``, ``#updateVersionFile``);
* ``compactAndClean``: per layer L = 0, 1, ...: when the latest manifest lists >= ``hoodie.timeline.compaction.batch.size``
  files of L, the first ``batch`` of them sorted by min instant (consecutive, >= 2) are merged into
  ``<min>_<max>_<L+1>.parquet`` and the manifest is updated (sources removed, result added); cascade while a layer
  compacted; then ``clean``: keep the ``3 + compacted layers`` newest manifests, delete older manifests, then data files
  no kept manifest lists (``#doCompact``, ``#getCandidateFiles``, ``#clean``);
* readers (``ArchivedTimelineLoaderV2#loadInstants``): latest manifest -> its files, pruned by the range in their names
  (``LSMTimeline#isFileInRange``) -> records in range.

The state is an immutable value (:class:`LSMState`). Every storage step is a separate named action with a guard
(``may_*`` returning why not, or None) and an effect (``do_*`` returning the next state), in the style of
:mod:`model.protocol.actions`, so a crash between any two steps can be explored; the archiver's sequence of steps is
:func:`write_steps` / :func:`compact_steps` / :func:`clean_steps`. Public API (stable; :mod:`lakeio` and the
on-disk reader use it):

=================================  ==========================================================================
name                               what
=================================  ==========================================================================
``data_file_name``/``parse_data_file_name``   the data-file codec (``CodecError`` names the file)
``manifest_name``/``parse_manifest_name``, ``VERSION_FILE``, ``is_temp_manifest``
``LSMRecord``, ``DataFile``        one archived instant (``HoodieLSMTimelineInstant``); a parsed data-file name
``LSMState``                       data files, manifests, ``_version_`` (value, or absent/unreadable)
``latest_version``/``latest_manifest``/``read_files``  what a reader reads (``LSMReadError`` when it cannot)
``load_instants(state, start, end)``  records with start <= requested < end, and the files read (pruning)
``Step`` kinds + ``guard``/``apply``  the named storage steps; ``write_steps``, ``compact_steps``, ``clean_steps``
=================================  ==========================================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Iterable

from .errors import CodecError, ModelError

VERSION_FILE = "_version_"
MANIFEST_PREFIX = "manifest_"
TEMP_SUFFIX = ".tmp"
#: ``HoodieArchivalConfig.TIMELINE_COMPACTION_BATCH_SIZE`` (``hoodie.timeline.compaction.batch.size``)
DEFAULT_COMPACTION_BATCH = 10
#: ``HoodieArchivalConfig.MANIFEST_RETAINED_VERSIONS``-style constant of ``LSMTimelineWriter#clean`` (3)
MANIFESTS_RETAINED = 3

_DATA_RE = re.compile(r"^(\d+)_(\d+)_(\d)\.parquet$")
_MANIFEST_RE = re.compile(r"^manifest_(\d+)$")


class LSMReadError(ModelError):
    """A reader could not read the LSM timeline (e.g. ``_version_`` names a manifest that does not exist)."""

    def __init__(self, name: str, problem: str):
        self.name, self.problem = name, problem
        super().__init__(name, problem)

    def __str__(self) -> str:
        return f"{self.name}: {self.problem}"


# ------------------------------------------------------------------------------------------------ codec
@dataclass(frozen=True, order=True)
class DataFile:
    """A parsed data-file name: ``<min>_<max>_<level>.parquet``."""

    min_time: str
    max_time: str
    level: int

    @property
    def name(self) -> str:
        return data_file_name(self.min_time, self.max_time, self.level)

    def overlaps(self, start: str | None, end: str | None) -> bool:
        """``LSMTimeline#isFileInRange``: the file's [min, max] meets [start, end) (None = open)."""
        return (start is None or self.max_time >= start) and (end is None or self.min_time < end)


def data_file_name(min_time: str, max_time: str, level: int) -> str:
    """``LSMTimelineWriter#newFileName`` / ``#compactedFileName``."""
    if not (min_time.isdigit() and max_time.isdigit()):
        raise CodecError(f"{min_time}_{max_time}_{level}.parquet", "bounds must be instant times (digits)")
    if min_time > max_time:
        raise CodecError(f"{min_time}_{max_time}_{level}.parquet", "min instant is after max instant")
    if not 0 <= level <= 9:
        raise CodecError(f"{min_time}_{max_time}_{level}.parquet", "the level is one digit (0-9)")
    return f"{min_time}_{max_time}_{level}.parquet"


def parse_data_file_name(name: str) -> DataFile:
    """``LSMTimeline#getMinInstantTime/getMaxInstantTime/getFileLayer``; ``CodecError`` naming the file."""
    m = _DATA_RE.match(name)
    if m is None:
        raise CodecError(name, "not an LSM timeline data file (<min>_<max>_<level>.parquet, one-digit level)")
    lo, hi, lv = m.group(1), m.group(2), int(m.group(3))
    if lo > hi:
        raise CodecError(name, "min instant is after max instant")
    return DataFile(lo, hi, lv)


def is_data_file_name(name: str) -> bool:
    return _DATA_RE.match(name) is not None


def manifest_name(version: int) -> str:
    """``LSMTimeline#getManifestFilePath``."""
    if version < 1:
        raise CodecError(f"{MANIFEST_PREFIX}{version}", "manifest versions start at 1")
    return f"{MANIFEST_PREFIX}{version}"


def parse_manifest_name(name: str) -> int:
    """``LSMTimeline#getManifestVersion``; ``CodecError`` naming the file (temp manifests are not manifests)."""
    m = _MANIFEST_RE.match(name)
    if m is None or int(m.group(1)) < 1:
        raise CodecError(name, "not a manifest file (manifest_<N>, N >= 1)")
    return int(m.group(1))


def is_temp_manifest(name: str) -> bool:
    """Temp manifests (``manifest_<N>.tmp``) are ignored by readers and writers."""
    return name.startswith(MANIFEST_PREFIX) and name.endswith(TEMP_SUFFIX)


# ------------------------------------------------------------------------------------------------ state
@dataclass(frozen=True, order=True)
class LSMRecord:
    """One archived instant (``HoodieLSMTimelineInstant``: instantTime, completionTime, action)."""

    instant_time: str
    completion_time: str
    action: str


@dataclass(frozen=True)
class LSMState:
    """The history directory as a value.

    ``files``: data file name -> its records (sorted; data files are immutable once written);
    ``manifests``: version -> the file names it lists; ``version``: the content of ``_version_``
    (None: absent); ``version_readable``: False models a corrupt/partial ``_version_`` (readers fall back to
    listing manifests); ``temp``: leftover ``*.tmp`` manifests (ignored).
    """

    files: tuple[tuple[str, tuple[LSMRecord, ...]], ...] = ()
    manifests: tuple[tuple[int, tuple[str, ...]], ...] = ()
    version: int | None = None
    version_readable: bool = True
    temp: tuple[str, ...] = ()

    # lookups (plain scans: this is the spec)
    def file(self, name: str) -> tuple[LSMRecord, ...] | None:
        for n, recs in self.files:
            if n == name:
                return recs
        return None

    def file_names(self) -> list[str]:
        return sorted(n for n, _ in self.files)

    def manifest(self, v: int) -> tuple[str, ...] | None:
        for n, names in self.manifests:
            if n == v:
                return names
        return None

    def manifest_versions(self) -> list[int]:
        return sorted(v for v, _ in self.manifests)

    def listing(self) -> list[str]:
        """Every name in the directory (what a listing returns)."""
        out = self.file_names() + [manifest_name(v) for v in self.manifest_versions()] + list(self.temp)
        if self.version is not None:
            out.append(VERSION_FILE)
        return sorted(out)

    # effects on the value
    def with_file(self, name: str, records: tuple[LSMRecord, ...]) -> "LSMState":
        return replace(self, files=tuple(sorted([(n, r) for n, r in self.files if n != name] + [(name, records)])))

    def without_file(self, name: str) -> "LSMState":
        return replace(self, files=tuple((n, r) for n, r in self.files if n != name))

    def with_manifest(self, v: int, names: Iterable[str]) -> "LSMState":
        ms = [(n, fs) for n, fs in self.manifests if n != v] + [(v, tuple(sorted(names)))]
        return replace(self, manifests=tuple(sorted(ms)))

    def without_manifest(self, v: int) -> "LSMState":
        return replace(self, manifests=tuple((n, fs) for n, fs in self.manifests if n != v))


EMPTY = LSMState()


# ----------------------------------------------------------------------------------------------- reading
def latest_version(s: LSMState) -> int:
    """``LSMTimeline#latestSnapshotVersion``: ``_version_`` if readable, else the greatest ``manifest_N``
    listed (temp manifests ignored); -1 when there is none."""
    if s.version is not None and s.version_readable:
        return s.version
    vs = s.manifest_versions()
    return vs[-1] if vs else -1


def latest_manifest(s: LSMState) -> tuple[str, ...]:
    """``LSMTimeline#latestSnapshotManifest``: the file list of the latest version (empty when none, version < 0);
    ``LSMReadError`` when ``_version_`` names a manifest that is not there -- version 0 included, which names no
    manifest at all (versions start at 1; Hudi reads ``manifest_0``, a file no writer creates), so the error names
    ``_version_``."""
    v = latest_version(s)
    if v < 0:
        return ()
    names = s.manifest(v)
    if names is None:
        if v == 0:
            raise LSMReadError(VERSION_FILE, f"names version {v} but manifest versions start at 1")
        raise LSMReadError(manifest_name(v), f"{VERSION_FILE} names version {v} but {manifest_name(v)} does not exist")
    return names


def read_files(s: LSMState, start: str | None = None, end: str | None = None) -> list[str]:
    """The data files a reader opens for requested times in [start, end): the latest manifest's files whose
    name range overlaps (``ArchivedTimelineLoaderV2#loadInstants`` with ``LSMTimeline#isFileInRange``)."""
    out = []
    for name in latest_manifest(s):
        if parse_data_file_name(name).overlaps(start, end):
            if s.file(name) is None:
                raise LSMReadError(name, "listed by the latest manifest but missing")
            out.append(name)
    return out


def load_instants(s: LSMState, start: str | None = None, end: str | None = None
                  ) -> tuple[list[LSMRecord], list[str]]:
    """Records with ``start <= instant_time < end`` (``ClosedOpenTimeRangeFilter``) from the files of the
    latest manifest, one per instant time (a duplicate left by a re-archived batch is the same instant), and the
    files read."""
    names = read_files(s, start, end)
    seen: dict[str, LSMRecord] = {}
    for name in names:
        for r in s.file(name):
            if (start is None or r.instant_time >= start) and (end is None or r.instant_time < end):
                seen.setdefault(r.instant_time, r)
    return sorted(seen.values()), names


def records(s: LSMState) -> list[LSMRecord]:
    """Every record a reader sees (the latest manifest, no range)."""
    return load_instants(s)[0]


# ----------------------------------------------------------------------------------------------- steps
@dataclass(frozen=True)
class WriteDataFile:
    """Write a data file (an L0 batch or a compaction result). ``LSMTimelineWriter#write``: if the file exists
    and the latest manifest lists it, skip; else a leftover is deleted and the file rewritten
    (``#compactFiles`` does ``deleteIfExists`` too)."""

    name: str
    records: tuple[LSMRecord, ...]
    kind: str = "write-data-file"


@dataclass(frozen=True)
class WriteManifest:
    """``#updateManifest``/``#createManifestFile``: read the latest version v and its files, write
    ``manifest_<v+1>`` = files - remove + add (a leftover of that name is replaced)."""

    remove: tuple[str, ...]
    add: str
    ahead: bool = False  # (broken design "version-before-manifest": _version_ already names the new version)
    kind: str = "write-manifest"


@dataclass(frozen=True)
class DeleteVersionFile:
    """``#updateVersionFile`` part 1: delete ``_version_``."""

    kind: str = "delete-version-file"


@dataclass(frozen=True)
class WriteVersionFile:
    """``#updateVersionFile`` part 2: create ``_version_`` with the version the preceding manifest write made
    (``None``: the greatest manifest present, which is that version when one archiver runs at a time)."""

    version: int | None = None
    ahead: bool = False  # (broken design "version-before-manifest": the version the next manifest will have)
    kind: str = "write-version-file"


@dataclass(frozen=True)
class DeleteManifest:
    """``#clean``: delete a manifest not kept."""

    version: int
    kind: str = "delete-manifest"


@dataclass(frozen=True)
class DeleteDataFile:
    """``#clean``: delete a data file no kept manifest lists."""

    name: str
    kind: str = "delete-data-file"


Step = WriteDataFile | WriteManifest | DeleteVersionFile | WriteVersionFile | DeleteManifest | DeleteDataFile


def may_write_data_file(s: LSMState, st: WriteDataFile) -> str | None:
    parse_data_file_name(st.name)
    if not st.records:
        return "the instant actions to write should not be empty"
    return None


def do_write_data_file(s: LSMState, st: WriteDataFile) -> LSMState:
    try:
        committed = st.name in latest_manifest(s)
    except LSMReadError:
        committed = False
    if s.file(st.name) is not None and committed:
        return s  # "Skip archiving for the redundant file": the previous archival committed it
    return s.with_file(st.name, tuple(sorted(st.records)))


def may_write_manifest(s: LSMState, st: WriteManifest) -> str | None:
    if s.file(st.add) is None:
        return f"{st.add} does not exist (getFileEntry reads its length)"
    if st.ahead:
        return None
    try:
        latest_manifest(s)
    except LSMReadError as e:
        return f"the latest manifest cannot be read ({e})"
    return None


def do_write_manifest(s: LSMState, st: WriteManifest) -> LSMState:
    if st.ahead:  # the broken order: the new version is already in _version_, the base is the one before
        v_new = max(latest_version(s), 1)
        names = [n for n in (s.manifest(v_new - 1) or ()) if n not in st.remove and n != st.add] + [st.add]
        return s.with_manifest(v_new, names)
    v = latest_version(s)
    if not st.remove and st.add in latest_manifest(s):
        return s  # ``#write`` returned early: the file is already committed (no new manifest)
    names = [n for n in latest_manifest(s) if n not in st.remove and n != st.add] + [st.add]
    return s.with_manifest(1 if v < 0 else v + 1, names)


def do_delete_version_file(s: LSMState, st: DeleteVersionFile) -> LSMState:
    return replace(s, version=None, version_readable=True)


def do_write_version_file(s: LSMState, st: WriteVersionFile) -> LSMState:
    if st.ahead:
        v = latest_version(s) + 1 if latest_version(s) >= 0 else 1
    else:
        v = st.version if st.version is not None else max(s.manifest_versions(), default=0)
    return replace(s, version=v, version_readable=True)


def may_delete_manifest(s: LSMState, st: DeleteManifest) -> str | None:
    return None if s.manifest(st.version) is not None else f"{manifest_name(st.version)} does not exist"


def do_delete_manifest(s: LSMState, st: DeleteManifest) -> LSMState:
    return s.without_manifest(st.version)


def may_delete_data_file(s: LSMState, st: DeleteDataFile) -> str | None:
    return None if s.file(st.name) is not None else f"{st.name} does not exist"


def do_delete_data_file(s: LSMState, st: DeleteDataFile) -> LSMState:
    return s.without_file(st.name)


def _always(s, st) -> str | None:
    return None


ACTIONS = {
    "write-data-file": (may_write_data_file, do_write_data_file),
    "write-manifest": (may_write_manifest, do_write_manifest),
    "delete-version-file": (_always, do_delete_version_file),
    "write-version-file": (_always, do_write_version_file),
    "delete-manifest": (may_delete_manifest, do_delete_manifest),
    "delete-data-file": (may_delete_data_file, do_delete_data_file),
}


def guard(s: LSMState, st: Step) -> str | None:
    """None when the step may run, else why not."""
    return ACTIONS[st.kind][0](s, st)


def apply(s: LSMState, st: Step) -> LSMState:
    """The state after the step (``ModelError`` subclass ``LSMStepRefused`` if its guard refuses)."""
    why = guard(s, st)
    if why is not None:
        raise LSMStepRefused(st.kind, why)
    return ACTIONS[st.kind][1](s, st)


class LSMStepRefused(ModelError):
    def __init__(self, kind: str, why: str):
        self.kind, self.why = kind, why
        super().__init__(kind, why)

    def __str__(self) -> str:
        return f"[{self.kind}] {self.why}"


def commit_steps(remove: tuple[str, ...], add: str, version_first: bool = False) -> tuple[Step, ...]:
    """``#updateManifest``: manifest, then ``_version_`` (delete, recreate). ``version_first`` is the broken order
    (``_version_`` names a manifest not written yet) the suites must catch."""
    if version_first:
        return (DeleteVersionFile(), WriteVersionFile(ahead=True), WriteManifest(remove, add, ahead=True))
    return (WriteManifest(remove, add), DeleteVersionFile(), WriteVersionFile())


def write_steps(batch: Iterable[LSMRecord], version_first: bool = False) -> tuple[Step, ...]:
    """``LSMTimelineWriter#write`` of one archival batch: one L0 file named by the first and last instant time
    of the batch (sorted), then the manifest update."""
    recs = tuple(sorted(batch))
    if not recs:
        return ()
    name = data_file_name(recs[0].instant_time, recs[-1].instant_time, 0)
    return (WriteDataFile(name, recs),) + commit_steps((), name, version_first)


def compaction_candidates(names: Iterable[str], level: int, batch: int = DEFAULT_COMPACTION_BATCH) -> list[str]:
    """``#doCompact``/``#getCandidateFiles``: when the level has >= ``batch`` files, its first ``batch`` files
    sorted by min instant (the size cap of ~1 GB is not modelled: timeline files are small); [] otherwise."""
    files = sorted((parse_data_file_name(n), n) for n in names if parse_data_file_name(n).level == level)
    if len(files) < batch:
        return []
    picked = [n for _, n in files[:batch]]
    return picked if len(picked) >= 2 else []


def compaction_candidates_every_other(names: Iterable[str], level: int, batch: int = DEFAULT_COMPACTION_BATCH
                                       ) -> list[str]:
    """BROKEN (for the suites): every other file of the level -- not consecutive in instant order."""
    files = sorted((parse_data_file_name(n), n) for n in names if parse_data_file_name(n).level == level)
    if len(files) < batch:
        return []
    picked = [n for _, n in files[::2]][:batch]
    return picked if len(picked) >= 2 else []


CANDIDATE_RULES = {"consecutive": compaction_candidates, "every-other": compaction_candidates_every_other}


def compacted_name(sources: Iterable[str]) -> str:
    """``#compactedFileName``: union bounds, next level."""
    parsed = [parse_data_file_name(n) for n in sources]
    return data_file_name(min(p.min_time for p in parsed), max(p.max_time for p in parsed), parsed[0].level + 1)


def compact_steps(s: LSMState, level: int, batch: int = DEFAULT_COMPACTION_BATCH,
                  candidates=compaction_candidates, version_first: bool = False) -> tuple[tuple[Step, ...], bool]:
    """The steps of compacting ``level`` of the latest manifest (and whether it compacts): write the merged
    file, then commit (sources removed, result added). ``candidates`` is the selection rule (a broken one may be
    passed to show the invariants catch it)."""
    names = latest_manifest(s)
    src = candidates(names, level, batch)
    if not src:
        return (), False
    recs: dict[str, LSMRecord] = {}
    for n in src:
        for r in s.file(n):
            recs.setdefault(r.instant_time, r)
    target = compacted_name(src)
    return ((WriteDataFile(target, tuple(sorted(recs.values()))),)
            + commit_steps(tuple(src), target, version_first)), True


def clean_steps(s: LSMState, compacted_layers: int, retained: int = MANIFESTS_RETAINED) -> tuple[Step, ...]:
    """``#clean``: when more than ``retained + compacted_layers`` manifests exist, delete the older ones first,
    then every data file no kept manifest lists."""
    versions = s.manifest_versions()
    keep_n = retained + compacted_layers
    if len(versions) <= keep_n:
        return ()
    keep = versions[-keep_n:]
    kept_files = {n for v in keep for n in s.manifest(v)}
    out: list[Step] = [DeleteManifest(v) for v in versions if v not in keep]
    out += [DeleteDataFile(n) for n in s.file_names() if n not in kept_files]
    return tuple(out)


__all__ = [
    "VERSION_FILE", "DEFAULT_COMPACTION_BATCH", "MANIFESTS_RETAINED", "LSMReadError", "LSMStepRefused", "DataFile",
    "data_file_name", "parse_data_file_name", "is_data_file_name", "manifest_name", "parse_manifest_name",
    "is_temp_manifest", "LSMRecord", "LSMState", "EMPTY", "latest_version", "latest_manifest", "read_files",
    "load_instants", "records", "WriteDataFile", "WriteManifest", "DeleteVersionFile", "WriteVersionFile",
    "DeleteManifest", "DeleteDataFile", "Step", "guard", "apply", "commit_steps", "write_steps",
    "compaction_candidates", "compaction_candidates_every_other", "CANDIDATE_RULES", "compacted_name", "compact_steps", "clean_steps",
]
