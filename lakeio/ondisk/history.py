"""The timeline's history on disk: the LSM timeline (tv8/9) and the 0.x archived log (tv6).

This module reads and writes files; every decision (when to archive, which instants, which files an
LSM compaction merges, which manifest versions cleaning keeps) is the spec's (``model/archival.py``,
``model/lsm.py``). Facts used (``hudi-semantics.md`` 1.2/1.3 and 5; apache/hudi ``LSMTimeline``,
``LSMTimelineWriter``, ``HoodieLSMTimelineManifest``, ``JsonUtils``, ``ArchivedTimelineLoaderV2``,
``HoodieArchivedTimeline`` (v1), ``HoodieLSMTimelineInstant.avsc``, ``HoodieArchivedMetaEntry.avsc``):

LSM timeline, ``.hoodie/<hoodie.timeline.path>/<hoodie.timeline.history.path>`` (``timeline/history``):

* data files ``<min>_<max>_<level>.parquet`` (names parsed by the spec's codec), written by parquet-avro
  with the ``HoodieLSMTimelineInstant`` schema: ``instantTime``, ``completionTime``, ``action``
  (optional strings), ``metadata``, ``plan`` (optional bytes: the completed file's and the
  requested plan's bytes), ``version`` (required int, 1); the footer carries ``parquet.avro.schema``;
* ``manifest_<N>``: Jackson's pretty-printed JSON of ``HoodieLSMTimelineManifest`` -- fields only
  (``JsonUtils`` hides getters): ``{"files" : [ {"fileName" : ..., "fileLen" : ...}, ... ]}``;
* ``_version_``: the latest manifest version as UTF-8 digits. A reader that cannot read it lists the
  manifests and takes the greatest (``LSMTimeline.latestSnapshotVersion``); names ending ``.tmp`` and
  anything else are not manifests.

Archived timeline of table version 6, ``.hoodie/<hoodie.archivelog.folder>`` (``archived``):
``.commits_.archive.<N>_<writeToken>`` log files in Hudi's log format (:mod:`lakeio.hudiformat.logfile`)
whose Avro data blocks hold ``HoodieArchivedMetaEntry`` records (``commitTime``, ``actionType``,
``actionState``, ``stateTransitionTime`` and the instant's metadata in typed fields); the writer
schema is in each block's header.

Reading never writes. Lookups of a requested time prune files by the name bounds, then row groups
by their ``instantTime`` statistics, read only the three time/action columns of the row groups
needed, and keep what they read (parquet footers and decoded row groups) for the next lookup.
Everything wrong with the input raises :class:`lakeio.errors.UserError` naming the file; an
on-disk state that reads but breaks I15 (``_version_`` naming a missing manifest, a manifest naming
a missing file) is reported by the spec's predicates over :meth:`LsmHistory.disk_state`, not here.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeio.errors import UserError
from lakeio.ondisk import fastcodec as _fastcodec
from model import lsm
from model.archival import ActiveFile as _ActiveFile
from model.errors import CodecError
from model.instant import State as _State

VERSION_FILE = lsm.VERSION_FILE
#: 0.x archive files: ``HoodieArchivedTimeline`` lists ``.commits_.archive*``
ARCHIVE_FILE_PREFIX = ".commits_.archive."

#: ``HoodieLSMTimelineInstant.avsc`` (hudi-common/src/main/avro), as parquet-avro stores it in the footer.
LSM_AVRO_SCHEMA = {
    "type": "record", "name": "HoodieLSMTimelineInstant", "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "instantTime", "type": ["null", "string"], "default": None},
        {"name": "completionTime", "type": ["null", "string"], "default": None},
        {"name": "action", "type": ["null", "string"], "default": None},
        {"name": "metadata", "type": ["null", "bytes"], "default": None},
        {"name": "plan", "type": ["null", "bytes"], "default": None},
        {"name": "version", "type": "int", "default": 1},
    ],
}
LSM_AVRO_SCHEMA_JSON = json.dumps(LSM_AVRO_SCHEMA, separators=(",", ":"))
#: The parquet columns parquet-avro writes for that schema (optional binary (STRING) / optional binary /
#: required int32).
LSM_ARROW_SCHEMA = pa.schema([
    pa.field("instantTime", pa.string()),
    pa.field("completionTime", pa.string()),
    pa.field("action", pa.string()),
    pa.field("metadata", pa.binary()),
    pa.field("plan", pa.binary()),
    pa.field("version", pa.int32(), nullable=False),
])
_LOOKUP_COLUMNS = ["instantTime", "completionTime", "action"]
#: rows per row group in files written here (Hudi writes one 120 MB row group; smaller ones let a
#: lookup read a small part of a large compacted file -- readers handle any number)
ROW_GROUP_ROWS = 4096
#: decoded row groups kept by a reader (each at most ROW_GROUP_ROWS rows of three short strings)
ROW_GROUP_CACHE = 256

#: the simple fields of ``HoodieArchivedMetaEntry`` written here (typed metadata fields are left out:
#: readers resolve the writer schema in the block header against theirs, missing fields read as null)
ARCHIVED_ENTRY_SCHEMA = {
    "type": "record", "name": "HoodieArchivedMetaEntry", "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "commitTime", "type": ["null", "string"], "default": None},
        {"name": "actionType", "type": ["null", "string"], "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "actionState", "type": ["null", "string"], "default": None},
        {"name": "stateTransitionTime", "type": ["null", "string"], "default": None},
    ],
}


@dataclass(frozen=True)
class ArchivedInstant:
    """One record of the history: a completed instant (requested time, completion time, action)."""

    requested_time: str
    completion_time: str | None
    action: str
    metadata: bytes | None = None
    plan: bytes | None = None

    def as_record(self) -> dict:
        return {"instantTime": self.requested_time, "completionTime": self.completion_time,
                "action": self.action, "metadata": self.metadata, "plan": self.plan, "version": 1}


@dataclass(frozen=True)
class ManifestEntry:
    file_name: str
    file_len: int


# ------------------------------------------------------------------------------ paths
def lsm_folder(base: Path, props: dict[str, str]) -> Path:
    """``.hoodie/<hoodie.timeline.path>/<hoodie.timeline.history.path>`` (``TimelinePathProviderV2``)."""
    tpath = props.get("hoodie.timeline.path", "").strip() or "timeline"
    hpath = props.get("hoodie.timeline.history.path", "").strip() or "history"
    return base / ".hoodie" / tpath / hpath


def check_appendable(folder: Path) -> lsm.LSMState:
    """The LSM history in ``folder`` as the spec's state (empty when there is none yet), read without writing;
    :class:`UserError` naming the file when its latest manifest cannot be read (``_version_`` naming a manifest
    that is not there, or version 0): an archival run appends to that manifest, so it is refused before a
    file is written -- Hudi's ``LSMTimelineWriter#updateManifest`` fails reading it the same way."""
    folder = Path(folder)
    if not folder.is_dir() or not any(folder.iterdir()):
        return lsm.EMPTY
    state = LsmHistory(folder).disk_state()
    try:
        lsm.latest_manifest(state)
    except lsm.LSMReadError as exc:
        raise UserError(f"{folder / exc.name}: history not readable, archival refused: {exc.problem}") from None
    return state


def check_table_archivable(table_path) -> None:
    """:func:`check_appendable` for a table's history, when the table exists and has one (version 8+)."""
    from lakeio.ondisk.reader import _read_facts, find_base_path

    if not (Path(table_path) / ".hoodie").is_dir():
        return  # no table yet: the run creates it
    base = find_base_path(table_path)
    props, version, _, _ = _read_facts(base)
    if version >= 8:
        check_appendable(lsm_folder(base, props))


def archive_folder(base: Path, props: dict[str, str]) -> Path:
    """``.hoodie/<hoodie.archivelog.folder>`` (``archived``), the tv6 archive (``TimelinePathProviderV1``)."""
    return base / ".hoodie" / (props.get("hoodie.archivelog.folder", "").strip() or "archived")


# ------------------------------------------------------------------------------ small file helpers
def _create_immutable(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Create ``path`` with ``data``, never overwriting (``HoodieStorage.createImmutableFileInPath``):
    a hidden temporary file in the same folder, hard-linked to the final name, so a killed process
    leaves the whole file or none. No fsync unless ``durable`` (Hudi's storage call does not sync
    either; the manifest/``_version_`` protocol is what makes a history update atomic)."""
    # the temporary name: ``.<name>.<pid>-<n>.tmp`` created exclusively (mode 0600, as mkstemp's), mkstemp's
    # random name when that one exists (another process of the same pid); plain os calls, no file object
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}-{next(_TMP_SEQ)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=os.path.dirname(path))
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, path)
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


_TMP_SEQ = itertools.count()


def _read_bytes(path: str) -> bytes:
    """A file's bytes with plain os calls (no buffered file object: a fourth of the time for small files)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            c = os.read(fd, 1 << 20)
            if not c:
                return b"".join(chunks) if len(chunks) != 1 else chunks[0]
            chunks.append(c)
    finally:
        os.close(fd)


def _unlink(path: Path | str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def manifest_json(entries: Iterable[ManifestEntry]) -> str:
    """A manifest as Jackson's default pretty printer writes ``HoodieLSMTimelineManifest``."""
    entries = list(entries)
    if not entries:
        return '{\n  "files" : [ ]\n}'
    items = ", ".join("{\n    \"fileName\" : " + json.dumps(e.file_name) + ",\n    \"fileLen\" : " + str(e.file_len)
                      + "\n  }" for e in entries)
    return '{\n  "files" : [ ' + items + " ]\n}"


def parse_manifest(data: bytes, source: str) -> list[ManifestEntry]:
    """Entries of a manifest; :class:`UserError` naming ``source`` when it is not one.

    An empty file reads as an empty manifest (``HoodieLSMTimelineManifest.fromJsonString``)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{source}: corrupt manifest: not UTF-8") from None
    if not text.strip():
        return []
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{source}: corrupt manifest: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("files", []), list):
        raise UserError(f"{source}: corrupt manifest: expected an object with a \"files\" list")
    out = []
    for i, e in enumerate(doc.get("files", [])):
        if not isinstance(e, dict) or not isinstance(e.get("fileName"), str):
            raise UserError(f"{source}: corrupt manifest: entry {i} has no fileName")
        length = e.get("fileLen", 0)
        if not isinstance(length, int) or isinstance(length, bool) or length < 0:
            raise UserError(f"{source}: corrupt manifest: entry {i} ({e['fileName']}) has fileLen {length!r}")
        try:
            lsm.parse_data_file_name(e["fileName"])
        except CodecError as exc:
            raise UserError(f"{source}: corrupt manifest: entry {i} names {e['fileName']!r}: {exc.problem}") from None
        out.append(ManifestEntry(e["fileName"], length))
    return out


# ------------------------------------------------------------------------------ parquet
def check_schema(schema: pa.Schema, source: str) -> None:
    """A history data file must have the ``HoodieLSMTimelineInstant`` columns with their types."""
    for f in LSM_ARROW_SCHEMA:
        idx = schema.get_field_index(f.name)
        if idx < 0:
            raise UserError(f"{source}: wrong schema for an LSM history file: no column {f.name!r} "
                            f"(HoodieLSMTimelineInstant has {', '.join(LSM_ARROW_SCHEMA.names)})")
        got = schema.field(idx).type
        ok = got == f.type or (f.type == pa.string() and got == pa.large_string()) \
            or (f.type == pa.binary() and got == pa.large_binary())
        if not ok:
            raise UserError(f"{source}: wrong schema for an LSM history file: column {f.name!r} is {got}, "
                            f"expected {f.type}")


def records_table(records: Iterable[ArchivedInstant | dict]) -> pa.Table:
    rows = [r.as_record() if isinstance(r, ArchivedInstant) else r for r in records]
    return pa.Table.from_pylist(rows, schema=LSM_ARROW_SCHEMA)


def _parquet_bytes(table: pa.Table) -> bytes:
    """The parquet file of ``table``: snappy, row groups of :data:`ROW_GROUP_ROWS`, plain encoding (no
    dictionary pages: every instant time is distinct, and readers need none), and column statistics for
    ``instantTime`` only -- the one column lookups prune row groups by (:meth:`LsmHistory._groups_covering`)."""
    buf = pa.BufferOutputStream()
    with pq.ParquetWriter(buf, LSM_ARROW_SCHEMA, compression="snappy", use_dictionary=False,
                          write_statistics=["instantTime"]) as w:
        w.write_table(table, row_group_size=ROW_GROUP_ROWS)
        w.add_key_value_metadata({"parquet.avro.schema": LSM_AVRO_SCHEMA_JSON, "writer.model.name": "avro"})
    return buf.getvalue().to_pybytes()


def _open_parquet(path: Path) -> pq.ParquetFile:
    try:
        pf = pq.ParquetFile(path)
    except FileNotFoundError:
        raise UserError(f"{path}: missing LSM history file") from None
    except (OSError, pa.ArrowException) as exc:
        raise UserError(f"{path}: not a readable parquet file ({str(exc).splitlines()[0]})") from None
    check_schema(pf.schema_arrow, str(path))
    return pf


# ------------------------------------------------------------------------------ LSM reader
@dataclass
class LsmListing:
    """The names in a history folder and the small files read as they are."""

    version_text: str | None                      # content of ``_version_`` (None: no such file)
    manifests: dict[int, list[ManifestEntry]]     # every manifest_<N> on disk, parsed
    data_files: dict[str, int]                    # LSM data files on disk -> length
    temp: list[str] = field(default_factory=list)  # temp manifests (ignored by readers)

    @property
    def version(self) -> int | None:
        """``_version_`` as a number; None when absent or unreadable."""
        if self.version_text is None:
            return None
        try:
            return int(self.version_text.strip())
        except ValueError:
            return None

    def state(self, records: dict[str, tuple] | None = None) -> lsm.LSMState:
        """The spec's :class:`model.lsm.LSMState` of this folder; a data file's records are those given
        (``records[name]``) or empty (enough for :func:`model.lsm.latest_manifest` and the names)."""
        records = records or {}
        return lsm.LSMState(
            files=tuple(sorted((n, records.get(n, ())) for n in self.data_files)),
            manifests=tuple(sorted((v, tuple(sorted(e.file_name for e in es))) for v, es in self.manifests.items())),
            version=None if self.version_text is None else (self.version if self.version is not None else 0),
            version_readable=self.version_text is None or self.version is not None,
            temp=tuple(sorted(self.temp)))


def list_lsm_folder(folder: Path) -> LsmListing:
    """List a history folder and read ``_version_`` and every manifest (:class:`UserError` for a corrupt one)."""
    try:
        with os.scandir(folder) as it:
            entries = {e.name: e for e in it}
    except FileNotFoundError:
        return LsmListing(None, {}, {})
    except OSError as exc:
        raise UserError(f"{folder}: unreadable ({exc.strerror or exc})") from None
    version_text = None
    if VERSION_FILE in entries:
        try:
            version_text = (folder / VERSION_FILE).read_bytes().decode("utf-8", "replace")
        except OSError as exc:
            raise UserError(f"{folder / VERSION_FILE}: unreadable ({exc.strerror or exc})") from None
    manifests: dict[int, list[ManifestEntry]] = {}
    data_files: dict[str, int] = {}
    temp: list[str] = []
    for name, entry in entries.items():
        if lsm.is_temp_manifest(name):
            temp.append(name)
        elif name.startswith(lsm.MANIFEST_PREFIX):
            try:
                v = lsm.parse_manifest_name(name)
            except CodecError:
                continue  # not a manifest: Hudi's listing filter skips it
            p = folder / name
            try:
                data = p.read_bytes()
            except OSError as exc:
                raise UserError(f"{p}: unreadable ({exc.strerror or exc})") from None
            manifests[v] = parse_manifest(data, str(p))
        elif lsm.is_data_file_name(name) and entry.is_file():
            data_files[name] = entry.stat().st_size
    return LsmListing(version_text, manifests, data_files, temp)


class LsmHistory:
    """A read-only view of a table's LSM history folder: the snapshot of the latest manifest at open time.

    Which manifest is the latest, and which files a range reads, are the spec's
    (:func:`model.lsm.latest_manifest`, :meth:`model.lsm.DataFile.overlaps`); this class only reads the
    files, pruning row groups by their statistics and keeping what it read.
    """

    kind = "lsm"

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.listing = list_lsm_folder(self.folder)
        names_state = self.listing.state()
        self.manifest_version: int | None = lsm.latest_version(names_state)
        if self.manifest_version < 0:
            self.manifest_version = None
        #: why the latest snapshot cannot be read (I15 names it too); None when it can
        self.read_error: str | None = None
        try:
            latest = lsm.latest_manifest(names_state)
        except lsm.LSMReadError as exc:
            latest, self.read_error = (), str(exc)
        missing = [n for n in latest if n not in self.listing.data_files]
        if missing and self.read_error is None:
            self.read_error = f"{missing[0]}: listed by manifest_{self.manifest_version} but missing"
        self._files = sorted((lsm.parse_data_file_name(n), n) for n in latest if n in self.listing.data_files)
        self._pf: dict[str, pq.ParquetFile] = {}
        self._groups: dict[tuple[str, int], pa.Table] = {}

    @property
    def files(self) -> list[str]:
        """Data files of the latest manifest (present on disk), by (min, max, level)."""
        return [n for _, n in self._files]

    def levels(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for df, _ in self._files:
            out[df.level] = out.get(df.level, 0) + 1
        return dict(sorted(out.items()))

    def _parquet(self, name: str) -> pq.ParquetFile:
        pf = self._pf.get(name)
        if pf is None:
            pf = self._pf[name] = _open_parquet(self.folder / name)
        return pf

    def count(self) -> int:
        """Instants in the latest snapshot (from the parquet footers only)."""
        return sum(self._parquet(n).metadata.num_rows for n in self.files)

    def disk_state(self) -> lsm.LSMState:
        """The whole folder as the spec's :class:`model.lsm.LSMState`, every data file's records read
        (three columns). :class:`UserError` naming a data file that is not a history parquet file."""
        recs = {}
        for n in sorted(self.listing.data_files):
            t = self.read_columns(n)
            recs[n] = tuple(sorted(lsm.LSMRecord(a, b, c) for a, b, c in
                                   zip(*(t.column(c).to_pylist() for c in _LOOKUP_COLUMNS))))
        return self.listing.state(recs)

    # -- reads
    def read_columns(self, name: str, columns: list[str] = _LOOKUP_COLUMNS) -> pa.Table:
        try:
            return self._parquet(name).read(columns=columns)
        except UserError:
            raise
        except (OSError, pa.ArrowException) as exc:
            raise UserError(f"{self.folder / name}: unreadable ({str(exc).splitlines()[0]})") from None

    def _row_group(self, name: str, i: int) -> pa.Table:
        key = (name, i)
        t = self._groups.get(key)
        if t is None:
            try:
                t = self._parquet(name).read_row_group(i, columns=_LOOKUP_COLUMNS)
            except UserError:
                raise
            except (OSError, pa.ArrowException) as exc:
                raise UserError(f"{self.folder / name}: unreadable row group {i} "
                                f"({str(exc).splitlines()[0]})") from None
            if len(self._groups) >= ROW_GROUP_CACHE:
                self._groups.pop(next(iter(self._groups)))
            self._groups[key] = t
        return t

    def _groups_covering(self, name: str, start: str | None, end: str | None) -> list[int]:
        """Row groups of ``name`` whose instantTime statistics meet [start, end) (all, without statistics)."""
        md = self._parquet(name).metadata
        col = md.schema.to_arrow_schema().get_field_index("instantTime")
        out = []
        for i in range(md.num_row_groups):
            st = md.row_group(i).column(col).statistics
            if st is None or not st.has_min_max:
                out.append(i)
                continue
            mn, mx = st.min, st.max
            mn = mn.decode() if isinstance(mn, bytes) else mn
            mx = mx.decode() if isinstance(mx, bytes) else mx
            if (start is None or mx >= start) and (end is None or mn < end):
                out.append(i)
        return out

    def _candidates(self, start: str | None, end: str | None) -> list[str]:
        """Files of the latest manifest a reader opens for [start, end) (``LSMTimeline.isFileInRange``)."""
        return [n for df, n in self._files if df.overlaps(start, end)]

    def lookup(self, requested_time: str) -> ArchivedInstant | None:
        """The archived instant with this requested time, or None."""
        end = requested_time + "\x00"  # the smallest string after it: [t, end) holds t only
        for name in self._candidates(requested_time, end):
            for i in self._groups_covering(name, requested_time, end):
                t = self._row_group(name, i)
                idx = pc.index(t.column("instantTime"), requested_time).as_py()
                if idx >= 0:
                    return ArchivedInstant(requested_time, t.column("completionTime")[idx].as_py(),
                                           t.column("action")[idx].as_py())
        return None

    def completion_time(self, requested_time: str) -> str | None:
        hit = self.lookup(requested_time)
        return hit.completion_time if hit else None

    def load_range(self, start: str | None, end: str | None) -> list[ArchivedInstant]:
        """Archived instants with ``start <= requested < end`` (``ClosedOpenTimeRangeFilter``; None = open),
        one per requested time."""
        out: dict[str, ArchivedInstant] = {}
        for name in self._candidates(start, end):
            for i in self._groups_covering(name, start, end):
                t = self._row_group(name, i)
                for rt, ct, act in zip(*(t.column(c).to_pylist() for c in _LOOKUP_COLUMNS)):
                    if (start is None or rt >= start) and (end is None or rt < end) and rt not in out:
                        out[rt] = ArchivedInstant(rt, ct, act)
        return [out[k] for k in sorted(out)]

    def instants(self) -> list[ArchivedInstant]:
        return self.load_range(None, None)

    def summary(self) -> dict:
        return {"kind": self.kind, "folder": str(self.folder), "manifest_version": self.manifest_version,
                "version_file": self.listing.version_text, "manifests_on_disk": sorted(self.listing.manifests),
                "files": len(self.files), "levels": {str(k): v for k, v in self.levels().items()},
                "instants": self.count(), "read_error": self.read_error}


# ------------------------------------------------------------------------------ LSM writer
class LsmWriter:
    """Carries out the spec's storage steps (:mod:`model.lsm` ``Step``s) on a history folder, keeping the
    spec's state of the folder beside it (:attr:`state`): every step is checked by the spec's guard and
    applied to that state before it is done on disk. It decides nothing itself.

    Records carry their bytes (``metadata``, ``plan``) from ``payload`` (requested time -> (metadata, plan))
    for new L0 files; a compaction copies the source files' rows (``LSMTimelineWriter.compactFiles``).
    """

    def __init__(self, folder: Path, *, durable: bool = False, state: lsm.LSMState | None = None):
        self.folder = Path(folder)
        self.durable = durable
        self.folder.mkdir(parents=True, exist_ok=True)
        if state is None:
            state = LsmHistory(self.folder).disk_state() if any(self.folder.iterdir()) else lsm.EMPTY
        self.state = state
        #: what this writer wrote and has not deleted: data file name -> (its rows for an L0 file, else None;
        #: its length on disk). A manifest takes its files' lengths from here, an L0 compaction (every
        #: ``compaction_batch`` archival runs) its sources' rows; higher levels, and files written by others,
        #: are read from disk and stat'ed (keeping every level's rows would hold the whole history's metadata
        #: in memory). An entry goes when its file is deleted.
        self._written: dict[str, tuple[pa.Table | None, int]] = {}

    # -- the steps
    def run(self, steps, payload: dict[str, tuple[bytes | None, bytes | None]] | None = None) -> None:
        """Apply the spec's ``steps`` in order: each to :attr:`state` (spec first, its guard may refuse),
        then on disk."""
        steps = list(steps)
        for k, st in enumerate(steps):
            before = self.state
            self.state = lsm.apply(before, st)
            self.do(st, before, self.state, steps[k + 1:], payload or {})

    def do(self, st, before: lsm.LSMState, after: lsm.LSMState, following, payload) -> None:
        """Carry out one step on disk, given the spec's states before and after it and the steps that follow
        (a data file followed by a manifest update that removes files is a compaction of those files)."""
        if st.kind == "write-data-file":
            if after is before:
                return  # the spec skips a file the latest manifest already lists
            nxt = next(iter(following), None)
            sources = nxt.remove if nxt is not None and nxt.kind == "write-manifest" and nxt.add == st.name else ()
            if sources:
                self._compact(list(sources), st.name, st.records)
            else:
                self._write_records(st.name, st.records, payload)
        elif st.kind == "write-manifest":
            # the manifest the spec just made (``_version_`` still names the previous one)
            for v in after.manifest_versions():
                if after.manifest(v) != before.manifest(v):
                    self._write_manifest(v, after.manifest(v))
        elif st.kind == "delete-version-file":
            _unlink(self.folder / VERSION_FILE)
        elif st.kind == "write-version-file":
            _create_immutable(self.folder / VERSION_FILE, str(after.version).encode("utf-8"), durable=self.durable)
        elif st.kind == "delete-manifest":
            _unlink(self.folder / lsm.manifest_name(st.version))
        elif st.kind == "delete-data-file":
            self._written.pop(st.name, None)
            _unlink(self.folder / st.name)
        else:  # pragma: no cover - a new step kind must be taught here
            raise ValueError(f"unknown LSM step {st.kind!r}")

    # -- files
    def _write_table(self, name: str, table: pa.Table) -> None:
        path = self.folder / name
        _unlink(path)  # a leftover not committed: "delete the corrupt file and retry"
        self._written.pop(name, None)
        data = _parquet_bytes(table)
        _create_immutable(path, data, durable=self.durable)
        self._written[name] = (table if lsm.parse_data_file_name(name).level == 0 else None, len(data))

    def _write_records(self, name: str, records, payload) -> None:
        none = (None, None)
        got = [payload.get(r.instant_time, none) for r in records]
        cols = [[r.instant_time for r in records], [r.completion_time for r in records],
                [r.action for r in records], [g[0] for g in got], [g[1] for g in got], [1] * len(records)]
        # from_pandas=False: plain Python values (None is null); the default looks for pandas' NaN semantics,
        # ~25x slower for a short string column
        self._write_table(name, pa.Table.from_arrays([pa.array(c, f.type, from_pandas=False)
                                                      for c, f in zip(cols, LSM_ARROW_SCHEMA)], schema=LSM_ARROW_SCHEMA))

    def _source_rows(self, name: str) -> pa.Table:
        kept = self._written.get(name)
        if kept is not None and kept[0] is not None:
            return kept[0]
        return _open_parquet(self.folder / name).read().select(LSM_ARROW_SCHEMA.names).cast(LSM_ARROW_SCHEMA)

    def _compact(self, sources: list[str], target: str, records) -> None:
        tables = [self._source_rows(s) for s in sources]
        merged = pa.concat_tables(tables)
        # one row per instant, as the spec's merged record set (a re-archived batch can repeat one)
        times = merged.column("instantTime").to_pylist()
        first: dict[str, int] = {}
        for i, t in enumerate(times):
            first.setdefault(t, i)
        if len(first) != len(times):
            keep = sorted(first.values())
            merged = merged.take(keep)
            times = [times[i] for i in keep]
        if any(a > b for a, b in zip(times, times[1:])):  # sources in time order need no sort
            order = pc.sort_indices(merged, sort_keys=[("instantTime", "ascending")])
            merged = merged.take(order)
            times = [times[i] for i in order.to_pylist()]
        want = [r.instant_time for r in records]
        if times != want:
            raise ValueError(f"{self.folder / target}: the sources' rows are not the spec's merged records")
        self._write_table(target, merged)

    def _write_manifest(self, version: int, names) -> None:
        entries = [ManifestEntry(n, self._written[n][1] if n in self._written else (self.folder / n).stat().st_size)
                   for n in names]
        path = self.folder / lsm.manifest_name(version)
        _unlink(path)  # a leftover of a failed update (createManifestFile deletes it first)
        _create_immutable(path, manifest_json(entries).encode("utf-8"), durable=self.durable)


# ------------------------------------------------------------------------------ tv6 archived log
class ArchivedLogHistory:
    """The 0.x archived timeline: every ``.commits_.archive.*`` log file, read once and kept."""

    kind = "archived"

    def __init__(self, folder: Path):
        from lakeio.hudiformat import logfile

        self.folder = Path(folder)
        try:
            names = sorted(n for n in os.listdir(self.folder) if n.startswith(ARCHIVE_FILE_PREFIX))
        except FileNotFoundError:
            names = []
        except OSError as exc:
            raise UserError(f"{self.folder}: unreadable ({exc.strerror or exc})") from None
        self.files = sorted(names, key=_archive_file_number)
        self._by_time: dict[str, ArchivedInstant] = {}
        for n in self.files:
            path = self.folder / n
            try:
                blocks = logfile.read_blocks(path.read_bytes())
            except ValueError as exc:
                raise UserError(f"{path}: corrupt archived log ({exc})") from None
            for b in blocks:
                if b.block_type != logfile.AVRO_DATA_BLOCK:
                    continue
                try:
                    rows = b.data_rows()
                except Exception as exc:  # fastavro raises several kinds on bad bytes
                    raise UserError(f"{path}: corrupt archived log block ({type(exc).__name__}: {exc})") from None
                for r in rows:
                    t, act = r.get("commitTime"), r.get("actionType")
                    if not t or not act:
                        raise UserError(f"{path}: archived entry without commitTime/actionType")
                    state = r.get("actionState")
                    if state not in (None, "COMPLETED"):
                        continue  # 0.x archives every state file; the completed one is the instant
                    self._by_time.setdefault(t, ArchivedInstant(t, r.get("stateTransitionTime"), act))

    def count(self) -> int:
        return len(self._by_time)

    def lookup(self, requested_time: str) -> ArchivedInstant | None:
        return self._by_time.get(requested_time)

    def completion_time(self, requested_time: str) -> str | None:
        hit = self.lookup(requested_time)
        return hit.completion_time if hit else None

    def load_range(self, start: str | None, end: str | None) -> list[ArchivedInstant]:
        lo, hi = start or "", end or "\uffff"
        return [self._by_time[k] for k in sorted(self._by_time) if lo <= k < hi]

    def instants(self) -> list[ArchivedInstant]:
        return self.load_range(None, None)

    def levels(self) -> dict[int, int]:
        return {}

    def summary(self) -> dict:
        return {"kind": self.kind, "folder": str(self.folder), "manifest_version": None, "version_file": None,
                "manifests_on_disk": [], "files": len(self.files), "levels": {}, "instants": self.count()}


def _archive_file_number(name: str) -> tuple[int, str]:
    rest = name[len(ARCHIVE_FILE_PREFIX):]
    num = rest.split("_", 1)[0]
    return (int(num) if num.isdigit() else -1, name)


def write_archived_log(folder: Path, number: int, blocks: Iterable[Iterable[ArchivedInstant]], *,
                       durable: bool = False) -> Path:
    """Write ``.commits_.archive.<number>_1-0-1``: one Avro data block of ``HoodieArchivedMetaEntry`` records
    (the simple fields, :data:`ARCHIVED_ENTRY_SCHEMA`) per batch in ``blocks``."""
    from lakeio.hudiformat import logfile

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    schema_json = json.dumps(ARCHIVED_ENTRY_SCHEMA, separators=(",", ":"))
    parsed = fastavro.parse_schema(ARCHIVED_ENTRY_SCHEMA)
    out = []
    for entries in blocks:
        rows = pa.Table.from_pylist([{"commitTime": e.requested_time, "actionType": e.action, "version": 1,
                                      "actionState": "COMPLETED", "stateTransitionTime": e.completion_time}
                                     for e in entries])
        # archive blocks carry the writer schema only (no instant time header)
        out.append(logfile.encode_block(logfile.AVRO_DATA_BLOCK, {logfile.SCHEMA: schema_json},
                                        logfile.avro_data_content(rows, parsed)))
    path = folder / f"{ARCHIVE_FILE_PREFIX}{number}_1-0-1"
    _create_immutable(path, b"".join(out), durable=durable)
    return path


# ------------------------------------------------------------------------------ entry point
History = LsmHistory | ArchivedLogHistory


def open_history(base: Path, props: dict[str, str], version: int) -> History | None:
    """The table's history (None when it has none on disk): LSM for tv8/9, the archived log for tv6."""
    if version >= 8:
        folder = lsm_folder(base, props)
        if not folder.is_dir():
            return None
        h = LsmHistory(folder)
        if not h.listing.manifests and h.listing.version_text is None and not h.listing.data_files:
            return None
        return h
    folder = archive_folder(base, props)
    if not folder.is_dir():
        return None
    h6 = ArchivedLogHistory(folder)
    return h6 if h6.files else None


def iter_lookup_times(history: History) -> Iterator[str]:
    """Every archived requested time (for tests and benchmarks)."""
    for i in history.instants():
        yield i.requested_time


# ------------------------------------------------------------------------------ archiving a table on disk
def active_files(tl) -> list:
    """The state files of a model timeline as the spec's :class:`model.archival.ActiveFile`s, each with its
    instant's identity key."""
    from model.archival import ActiveFile
    from model.instant import State

    out = []
    for inst in tl.instants():
        for st in tl.states_present(inst.requested_time, inst.action):
            ct = inst.completion_time if st is State.COMPLETED else None
            out.append((ActiveFile(inst.requested_time, inst.action, st, ct), inst.key))
    return out


def archived_as_lsm_state(records: Iterable[ArchivedInstant]) -> lsm.LSMState:
    """A tv6 archive's records presented to the spec as a one-file LSM state (for the I16 predicates over
    archived records; I15 is about the LSM layout and does not apply to tv6)."""
    recs = tuple(sorted(lsm.LSMRecord(r.requested_time, r.completion_time or r.requested_time, r.action)
                        for r in records))
    if not recs:
        return lsm.EMPTY
    name = lsm.data_file_name(recs[0].instant_time, recs[-1].instant_time, 0)
    return lsm.LSMState(files=((name, recs),), manifests=((1, (name,)),), version=1)


class TableArchiver:
    """Archive a table on disk the way the spec decides (:mod:`model.archival`: which instants, the order of
    the steps; :mod:`model.lsm`: the LSM steps). Keeps the spec's state of the history in memory between
    runs (as a long-running writer keeps its meta client); the active timeline is listed at every run.

    tv8/9: each run writes one L0 file with the instants' completed-file bytes as ``metadata`` and their
    requested-file bytes as ``plan``, commits the manifest, deletes the active files (pending states first,
    completed ones ascending), then compacts and cleans the LSM tree. tv6: the records go to a new
    ``.commits_.archive.<N>`` log file, one block per ``hoodie.commits.archival.batch``
    (:func:`model.archival.v1_blocks`), then the active files are deleted in the same order.
    """

    def __init__(self, base, cfg=None, ctx=None, *, durable: bool = False, executor=None):
        from lakeio.ondisk.reader import _read_facts, _timeline_dir, find_base_path
        from model import archival

        #: who decides a run and steps its job: the spec (:mod:`model.archival`: ``start``, ``step``) unless the
        #: caller passes an executor of the same rules with the same two functions (:mod:`engine.archival`, kept
        #: equal to the spec by ``tests/test_fastpaths.py``; lakeio does not import the engine)
        self.executor = executor or archival
        self.base = find_base_path(base)
        self.cfg = (cfg or archival.ArchivalConfig()).validate()
        self.ctx = ctx or archival.RetentionContext()
        self.props, self.version, self.layout, self.tz = _read_facts(self.base)
        self.tdir = _timeline_dir(self.base, self.props, self.version)
        self.durable = durable
        self._listing: set[str] = set()  # every name in the timeline folder at the last listing
        self._names: set[str] = set()  # the state-file names among them
        self._parsed: dict = {}     # file name -> (TimelineFile, its key, mtime time or None), None = not one
        self._groups: dict = {}     # instant key -> its file names
        self._instants: dict = {}   # instant key -> its ActiveFiles
        self._files: dict = {}      # ActiveFile -> file name (what _active returns; read-only for callers)
        if self.version >= 8:
            folder = lsm_folder(self.base, self.props)
            state = check_appendable(folder)
            self.writer = LsmWriter(folder, durable=durable, state=state)
        else:
            self.writer = None
            self.archive_dir = archive_folder(self.base, self.props)

    def _active(self):
        """The active timeline's state files as the spec's ``ActiveFile``s, and each one's file name.

        Names are listed at every call; only names that appeared or went since the last call are looked at:
        each is parsed once, and an instant's files are turned into ``ActiveFile``s (by
        :func:`lakeio.ondisk.fastcodec.timeline_from_files` over that instant's names) only when its set of
        names changed -- a writer calls this after every commit."""
        try:
            listing = set(os.listdir(self.tdir))
        except OSError as exc:
            raise UserError(f"{self.tdir}: unreadable ({exc.strerror or exc})") from None
        # a state file's name starts with a digit and names a file (not a folder); only names not listed last
        # time are looked at (a name listed at both calls is the same entry, kept or skipped as before)
        try:
            return self._update(listing)
        except BaseException:
            # a refused name (or an interrupted update): forget everything, the next call starts afresh
            self._listing, self._names = set(), set()
            self._parsed, self._groups, self._instants, self._files = {}, {}, {}, {}
            raise

    def _update(self, listing: set[str]) -> dict:
        """:meth:`_active`'s work on one listing."""
        from lakeio.ondisk.reader import _mtime_time, leftover_temp_target

        fastcodec, _CodecError, State = _fastcodec, CodecError, _State
        gone, fresh = self._changes(listing)
        self._listing = listing
        touched = set()
        for n in gone:
            entry = self._parsed.pop(n)
            self._names.discard(n)
            if entry is not None:
                self._groups[entry[1]].discard(n)
                touched.add(entry[1])
        for n in fresh:
            entry = None
            if fastcodec.is_timeline_file(n) and leftover_temp_target(n, self.layout) is None:
                try:
                    tf = fastcodec.parse_timeline_file(n, self.layout)
                except _CodecError as exc:
                    raise UserError(f"{self.tdir / n}: {exc.problem}") from None
                mtime = _mtime_time(self.tdir / n, self.tz) \
                    if tf.state is State.COMPLETED and tf.completion_time is None else None
                key = tf.key
                entry = (tf, key, mtime)
                self._groups.setdefault(key, set()).add(n)
                touched.add(key)
            self._parsed[n] = entry
            self._names.add(n)
        for key in touched:
            for af in self._instants.pop(key, ()):
                del self._files[af]
            ns = self._groups.get(key)
            if not ns:
                self._groups.pop(key, None)
                continue
            afs = self._instant_files(ns)
            if afs is None:  # anything else: the codec's own timeline of the instant's names (its checks)
                mtimes = {n: self._parsed[n][2] for n in ns if self._parsed[n][2] is not None}
                tl = fastcodec.timeline_from_files(sorted(ns), self.version, mtimes=mtimes)
                by_state = {self._parsed[n][0].state: n for n in ns}
                afs = [(af, by_state[af.state]) for af, _ in active_files(tl)]
            self._instants[key] = [af for af, _ in afs]
            self._files.update(afs)
        return self._files

    def _changes(self, listing: set[str]) -> tuple:
        """The state-file names gone since the last listing, and the names new in ``listing`` that may be
        state files (a name starting with a digit that names a file, not a folder)."""
        tdir = str(self.tdir)
        gone = (self._listing - listing) & self._names if self._listing else ()
        fresh = [n for n in listing - self._listing if n[:1].isdigit() and os.path.isfile(os.path.join(tdir, n))]
        return gone, fresh

    def _instant_files(self, ns) -> list | None:
        """One instant's ``(ActiveFile, name)``s from its parsed names, as :func:`active_files` of
        :func:`lakeio.ondisk.fastcodec.timeline_from_files` over those names gives them, in the common case:
        one file per state. The instant's action is that of its lowest state file (``Timeline.load`` keeps
        the action of ``g[min(g)]``); the completed file carries the completion time of its name, else its
        mtime's. None otherwise (two files of one state: the codec's error)."""
        ActiveFile, State = _ActiveFile, _State
        by_state = {}
        for n in ns:
            tf, _, mtime = self._parsed[n]
            if tf.state in by_state:
                return None
            by_state[tf.state] = (n, tf, mtime)
        first = by_state[min(by_state)][1]
        rt, action = first.requested_time, first.action
        out = []
        for st in sorted(by_state):
            n, tf, mtime = by_state[st]
            ct = (tf.completion_time if tf.completion_time is not None else mtime) if st is State.COMPLETED else None
            out.append((ActiveFile(rt, action, st, ct), n))
        return out

    def _payload(self, files: dict, to_archive) -> dict[str, tuple[bytes | None, bytes | None]]:
        from model.instant import State

        by: dict[tuple, list] = {}
        for af, name in files.items():
            by.setdefault((af.requested_time, af.action), []).append((af, name))
        tdir = str(self.tdir)
        out = {}
        for i in to_archive:
            meta = plan = None
            for af, name in by.get((i.requested_time, i.action), ()):
                if af.state is not State.COMPLETED and af.state is not State.REQUESTED:
                    continue  # an inflight file's bytes go nowhere
                data = _read_bytes(os.path.join(tdir, name))
                if af.state is State.COMPLETED:
                    meta = data or None
                elif af.state is State.REQUESTED:
                    plan = data or None
            out[i.requested_time] = (meta, plan)
        return out

    def archive(self, *, crash_after: int | None = None):
        """One archival run (``archiveIfRequired``); returns the spec's :class:`ArchivalDecision`.

        ``crash_after=k`` stops after k of the job's steps, as a killed process would (tests; tv8/9):
        what is on disk stays, the rest of the job is lost (:func:`model.archival.crash`)."""
        from model import archival

        files = self._active()
        state = archival.HistoryState(active=frozenset(files), lsm=self.writer.state if self.writer else lsm.EMPTY,
                                      table_version=self.version)
        if self.writer is None:
            d, steps = archival.plan(state, self.cfg, self.ctx)
            if d.archives:
                self._write_v1(d)
                for st in steps:
                    if isinstance(st, archival.DeleteActiveFile):
                        _unlink(self.tdir / files[st.file])
            return d
        d, state = self.executor.start(state, self.cfg, self.ctx)
        if not d.archives:
            return d
        payload = self._payload(files, d.to_archive)
        tdir = str(self.tdir)
        done = 0
        while state.job:
            if crash_after is not None and done >= crash_after:
                break
            done += 1
            head = state.job[0]
            before = state
            state = self.executor.step(state, self.cfg)
            if isinstance(head, archival.DeleteActiveFile):
                _unlink(os.path.join(tdir, files[head.file]))
            elif isinstance(head, (archival.CompactLevel, archival.CleanLSM)):
                continue  # they only put their concrete steps at the head of the job
            else:
                self.writer.do(head, before.lsm, state.lsm, state.job, payload)
        self.writer.state = state.lsm
        return d

    def _write_v1(self, d) -> Path:
        from model import archival

        existing = [_archive_file_number(n)[0] for n in (os.listdir(self.archive_dir)
                                                          if self.archive_dir.is_dir() else [])
                    if n.startswith(ARCHIVE_FILE_PREFIX)]
        blocks = [[ArchivedInstant(i.requested_time, i.completion_time, i.shown_action.value) for i in b]
                  for b in archival.v1_blocks(d.to_archive, self.cfg.batch)]
        return write_archived_log(self.archive_dir, max(existing, default=0) + 1, blocks, durable=self.durable)


# ------------------------------------------------------------------------------ writers that archive as they go
#: CLI option -> ``model.archival.ArchivalConfig`` field (``hoodie-lab pipeline run``)
ARCHIVE_OPTIONS = {"--archive-max-commits": "max_commits", "--archive-min-commits": "min_commits",
                   "--archive-batch": "batch"}


def archival_settings(max_commits: int | None = None, min_commits: int | None = None,
                      batch: int | None = None) -> dict | None:
    """The archival settings of CLI options (None when none is given), checked by the spec
    (``ArchivalConfig.validate``); a bad value is a :class:`UserError` naming the option. Options not given
    keep Hudi's defaults; ``hoodie.cleaner.commits.retained`` (which must stay below keep.min) becomes
    ``min(10, keep.min - 1)``."""
    from model.archival import ArchivalConfig, ArchivalConfigError

    given = {"max_commits": max_commits, "min_commits": min_commits, "batch": batch}
    if all(v is None for v in given.values()):
        return None
    values = {k: v for k, v in given.items() if v is not None}
    m = values.get("min_commits", ArchivalConfig.min_commits)
    values["cleaner_commits_retained"] = max(0, min(ArchivalConfig.cleaner_commits_retained, m - 1))
    opt_of = {f: o for o, f in ARCHIVE_OPTIONS.items()}
    try:
        cfg = ArchivalConfig(**values).validate()
    except ArchivalConfigError as exc:
        field_ = next((f for f, key in ArchivalConfig.KEYS.items() if key == exc.key), None)
        raise UserError(f"{opt_of.get(field_, exc.key)}: {exc.problem}") from None
    return {f: getattr(cfg, f) for f in ("max_commits", "min_commits", "batch", "cleaner_commits_retained")}


_ARCHIVERS: dict[str, TableArchiver] = {}


def archive_after_commit(table_path, settings: dict | None):
    """A writer's post-commit archival (``autoArchiveOnCommit``) with the settings of
    :func:`archival_settings`; nothing when they are None. One :class:`TableArchiver` per table per process."""
    if not settings:
        return None
    from model.archival import ArchivalConfig

    key = str(Path(table_path).resolve())
    arch = _ARCHIVERS.get(key)
    if arch is None:
        arch = _ARCHIVERS[key] = TableArchiver(table_path, ArchivalConfig(**settings))
    return arch.archive()


def archived_times(table_path) -> set[str]:
    """Requested times of every instant in the table's history (empty when it has none)."""
    from lakeio.ondisk.reader import _read_facts, find_base_path

    base = find_base_path(table_path)
    props, version, _layout, _tz = _read_facts(base)
    h = open_history(base, props, version)
    return {i.requested_time for i in h.instants()} if h is not None else set()


def include_history(table):
    """The table as if nothing had been archived (for comparisons with a model that never archives): every
    archived instant is loaded into ``table.timeline`` as completed, with its commit metadata (decoded from the
    history's ``metadata`` bytes) in ``table.commit_metadata``. tv8/9 only (the tv6 archive written here keeps
    no metadata). Returns the table."""
    from lakeio.ondisk import metadata as md
    from model.instant import Action, State

    h = open_history(table.base_path, table.properties, table.version)
    if not isinstance(h, LsmHistory) or h.read_error is not None:
        return table
    active = {i.requested_time for i in table.timeline.instants()}
    for name in h.files:
        t = h.read_columns(name, ["instantTime", "completionTime", "action", "metadata"])
        for rt, ct, act, meta in zip(*(t.column(c).to_pylist() for c in ("instantTime", "completionTime", "action",
                                                                           "metadata"))):
            if rt in active:
                continue
            active.add(rt)
            table.timeline.load(rt, Action(act), {State.COMPLETED}, ct)
            if meta and Action(act) in (Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT):
                table.commit_metadata[rt] = md.decode_commit_metadata(meta, f"{h.folder / name} ({rt})") or {}
    return table
