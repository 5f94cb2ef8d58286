"""Read a Hudi table directory into model objects. Never writes to the table.

What is read, and where (``hudi-semantics.md`` 1.2, 1.3, 1.6, 3.5; ``hudi-rs-oracle.md`` 1-2):

* ``.hoodie/hoodie.properties`` -> table facts (name, type, version, layout, time zone, ...).
  Only table versions 6, 8 and 9 are supported (as in hudi-rs ``table/validation.rs``); version 6
  must use timeline layout 1 and 8/9 layout 2.
* the active timeline: ``.hoodie/`` for tv6, ``.hoodie/<hoodie.timeline.path>`` (``timeline``) for
  tv8/9 -> :class:`model.timeline.Timeline` through :func:`model.filenames.timeline_from_files`.
  A completed file without a completion time in its name (every tv6 file) gets the file's
  modification time, formatted in the table's time zone, as Hudi 1.x does for legacy files
  (``InstantGeneratorV1``; ``CompletionTimeQueryViewV1``).
* every non-empty timeline file is decoded (:mod:`lakeio.ondisk.metadata`): commit metadata
  (JSON in tv6, Avro in tv8+) and plans (Avro in every version). From them: completed
  replacecommits' ``partitionToReplaceFileIds`` (replaced file groups), compaction plans (pending
  ones give the file groups with a pending compaction; all are kept for I9) and pending
  clustering plans (``t.clustering.requested`` in tv8+, a pending ``replacecommit`` whose
  requested metadata has operation ``CLUSTER`` in tv6).
* base and log files of every partition folder (a folder holding ``.hoodie_partition_metadata``
  or data files), parsed with :mod:`model.filenames`.

Unknown files in the timeline folder. Hudi's listing keeps only names whose extension
(``InstantFileNameParserV1/V2.getTimelineFileExtension``; empty for a name its pattern does not
match) is valid (``VALID_EXTENSIONS_IN_ACTIVE_TIMELINE``;
``HoodieTableMetaClient.scanHoodieInstantsFromFileSystem``) and skips the rest silently; hudi-rs
skips every name that does not make an instant (``timeline/loader.rs``). Here:

* a name not starting with a digit (``.crc`` files, folders, ...) is skipped, as in Hudi;
* a leftover temporary file of an interrupted immutable create (:func:`leftover_temp_target`:
  Hudi's ``<instant file>.<UUID>`` from ``HoodieStorage.createImmutableFileInPath`` on hdfs/file,
  0.x ``<instant file>.tmp`` from ``HoodieWrapperFileSystem``, hoodie-lab's own
  ``.<instant file>.<random>.tmp``, in the timeline folder from older versions and in
  ``.hoodie/.temp`` now) is skipped, as in Hudi, and listed in :attr:`Table.leftover_temp_files`
  (and the facts): a writer was killed mid-create;
* any other name starting with a digit claims to be an instant and must parse -- stricter than
  Hudi, which would skip it; it is bad input (below).

Everything wrong with the input raises :class:`lakeio.errors.UserError` naming the file and
the problem: missing ``.hoodie``, unreadable or incomplete ``hoodie.properties``, unknown table
version, an instant or data file name that does not parse, truncated or garbage JSON/Avro.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import stat as _stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakeio.errors import UserError, check_regular_file, file_kind
from lakeio.ondisk import fastcodec as fn
from model.errors import CodecError
from model.instant import Action, State, time_problem
from model.timeline import LAYOUT_OF_VERSION, Timeline

from . import metadata as md
from .properties import read_properties

SUPPORTED_VERSIONS = tuple(sorted(LAYOUT_OF_VERSION))
#: Folders under the base path that never hold table data.
_SKIP_DIRS = {".hoodie", "__MACOSX"}
PARTITION_METAFILE = ".hoodie_partition_metadata"

#: (partition path, file id): identity of a file group.
FileGroupId = tuple[str, str]


@dataclass
class Table:
    """A table as read from disk: facts, the model timeline, data files and what the plans say.

    ``view(rule)`` builds the model :class:`model.slicing.FileSystemView` over it.
    """

    base_path: Path
    properties: dict[str, str]
    name: str
    table_type: str
    version: int
    layout: int
    timezone: str
    timeline_dir: Path
    timeline: Timeline
    partitions: list[str]
    base_files: list[fn.BaseFile]
    log_files: list[fn.LogFile]
    #: timeline file name -> decoded content (None for an empty file)
    timeline_content: dict[str, Any] = field(default_factory=dict)
    #: requested time -> commit metadata of completed commit/deltacommit/replacecommit instants
    commit_metadata: dict[str, dict] = field(default_factory=dict)
    #: file group -> completed replacecommit (requested time) that replaced it
    replaced: dict[FileGroupId, str] = field(default_factory=dict)
    #: compaction instant -> plan operations (pending and completed compactions)
    compaction_plans: dict[str, list[dict]] = field(default_factory=dict)
    #: file group -> pending compaction instant
    pending_compactions: dict[FileGroupId, str] = field(default_factory=dict)
    #: file group -> pending clustering instant (input file groups of the plan)
    pending_clustering: dict[FileGroupId, str] = field(default_factory=dict)
    #: leftover temporary files of interrupted timeline writes (paths relative to the base path),
    #: ignored for the timeline as Hudi ignores them
    leftover_temp_files: list[str] = field(default_factory=list)
    #: base and log files named by completed commits' metadata (``partitionToWriteStats[*].path``),
    #: whether or not they are on disk
    named_base_files: list[fn.BaseFile] = field(default_factory=list)
    named_log_files: list[fn.LogFile] = field(default_factory=list)

    @property
    def is_mor(self) -> bool:
        return self.table_type == "MERGE_ON_READ"

    @property
    def default_rule(self) -> str:
        """The slicing rule the table version implies (tv6: instant time; tv8/9: completion time)."""
        return "instant-time" if self.version == 6 else "completion-time"

    @property
    def metadata_partitions(self) -> list[str]:
        raw = self.properties.get("hoodie.table.metadata.partitions", "")
        return [p for p in raw.split(",") if p]

    def facts(self) -> dict[str, Any]:
        """Table facts for display and JSON output."""
        return {
            "path": str(self.base_path),
            "name": self.name,
            "type": self.table_type,
            "version": self.version,
            "timeline_layout": self.layout,
            "timeline_dir": str(self.timeline_dir.relative_to(self.base_path)),
            "timezone": self.timezone,
            "partitions": list(self.partitions),
            "partition_fields": self.properties.get("hoodie.table.partition.fields", ""),
            "record_key_fields": self.properties.get("hoodie.table.recordkey.fields", ""),
            "metadata_partitions": self.metadata_partitions,
            "instants": len(self.timeline),
            "base_files": len(self.base_files),
            "log_files": len(self.log_files),
            "leftover_temp_files": list(self.leftover_temp_files),
        }

    def view(self, rule: str | None = None):
        """The model file-system view of this table under ``rule`` (default: by table version)."""
        from lakeio.ondisk.fastslicing import FileSystemView

        return FileSystemView(self.timeline, self.base_files, self.log_files, rule=rule,
                              pending_compactions=self.pending_compactions, replaced=self.replaced,
                              pending_clustering=self.pending_clustering)

    def named_view(self, rule: str | None = None):
        """The view over the files completed commits name in their metadata (not the listing):
        its latest snapshot is what must exist on disk (``I8.snapshot-files-exist``)."""
        from lakeio.ondisk.fastslicing import FileSystemView

        return FileSystemView(self.timeline, self.named_base_files, self.named_log_files, rule=rule,
                              pending_compactions=self.pending_compactions, replaced=self.replaced,
                              pending_clustering=self.pending_clustering)


# ------------------------------------------------------------------------------ helpers
def _mtime_time(path: Path, tz: str) -> str:
    """A file's modification time as a 17-digit instant time in the table time zone.

    ``hoodie.table.timeline.timezone``: ``UTC``, or ``LOCAL`` (default) = this process's zone, as the
    JVM default zone is for Hudi.
    """
    ns = path.stat().st_mtime_ns
    secs, rem = divmod(ns, 1_000_000_000)
    if tz.upper() == "UTC":
        d = _dt.datetime.fromtimestamp(secs, _dt.timezone.utc)
    else:
        d = _dt.datetime.fromtimestamp(secs)
    return d.strftime("%Y%m%d%H%M%S") + f"{rem // 1_000_000:03d}"


def find_base_path(path: str | os.PathLike) -> Path:
    """The table base path: ``path`` itself, which must hold a ``.hoodie`` folder."""
    p = Path(path)
    _stat_link(p)
    if not p.exists():
        raise UserError(f"{p}: no such directory")
    if not p.is_dir():
        raise UserError(f"{p}: not a directory")
    _stat_link(p / ".hoodie")
    if not (p / ".hoodie").is_dir():
        raise UserError(f"{p}: not a Hudi table (no .hoodie folder)")
    return p


def _stat_link(p: Path) -> None:
    """A symlink that cannot be followed (a loop, a dangling link) is bad input naming it."""
    if os.path.islink(p):
        try:
            os.stat(p)
        except OSError as exc:
            raise UserError(f"{p}: unreadable ({exc.strerror or exc})") from None


def _read_facts(base: Path) -> tuple[dict[str, str], int, int, str]:
    props_path = base / ".hoodie" / "hoodie.properties"
    props = read_properties(props_path)
    raw_version = props.get("hoodie.table.version")
    if raw_version is None or not raw_version.strip():
        raise UserError(f"{props_path}: incomplete: hoodie.table.version is missing")
    try:
        version = int(raw_version.strip())
    except ValueError:
        raise UserError(f"{props_path}: hoodie.table.version={raw_version!r} is not a number") from None
    if version not in SUPPORTED_VERSIONS:
        raise UserError(f"{props_path}: unknown table version {version}; supported: "
                        f"{', '.join(map(str, SUPPORTED_VERSIONS))}")
    ttype = props.get("hoodie.table.type", "").strip()
    if not ttype:
        raise UserError(f"{props_path}: incomplete: hoodie.table.type is missing")
    if ttype not in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        raise UserError(f"{props_path}: hoodie.table.type={ttype!r}; expected COPY_ON_WRITE or MERGE_ON_READ")
    layout = LAYOUT_OF_VERSION[version]
    raw_layout = props.get("hoodie.timeline.layout.version", "").strip()
    if raw_layout and raw_layout != str(layout):
        raise UserError(f"{props_path}: table version {version} needs timeline layout {layout}, "
                        f"found hoodie.timeline.layout.version={raw_layout}")
    tz = props.get("hoodie.table.timeline.timezone", "LOCAL").strip() or "LOCAL"
    return props, version, layout, tz


def _timeline_dir(base: Path, props: dict[str, str], version: int) -> Path:
    if version == 6:
        return base / ".hoodie"
    d = base / ".hoodie" / (props.get("hoodie.timeline.path", "").strip() or "timeline")
    _stat_link(d)
    if not d.is_dir():
        raise UserError(f"{d}: missing timeline folder of a table version {version} table")
    return d


_UUID_SUFFIX = re.compile(r"\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_OWN_TEMP = re.compile(r"^\.(?P<target>.+)\.[^.]+\.tmp$")


def leftover_temp_target(name: str, layout: int) -> str | None:
    """The instant file a leftover temporary file was written for, or ``None`` if ``name`` is not one.

    Recognised: ``<instant file>.<UUID>`` (``HoodieStorage.createImmutableFileInPath``, 1.x, on
    hdfs and file storage), ``<instant file>.tmp`` (``HoodieWrapperFileSystem`` /
    ``TMP_PATH_POSTFIX``, 0.x) and ``.<instant file>.<random>.tmp``
    (:func:`lakeio.ondisk.metadata.write_timeline_file`), where ``<instant file>`` is a
    well-formed instant file name of ``layout``. Hudi's listing ignores all three (their extension
    is not a valid one).
    """
    candidates = []
    own = _OWN_TEMP.match(name)
    if own:
        candidates.append(own.group("target"))
    if name.endswith(".tmp"):
        candidates.append(name[: -len(".tmp")])
    hudi = _UUID_SUFFIX.search(name)
    if hudi:
        candidates.append(name[: hudi.start()])
    for target in candidates:
        if not fn.is_timeline_file(target):
            continue
        try:
            fn.parse_timeline_file(target, layout)
        except CodecError:
            continue
        return target
    return None


def _entry_stat(entry: os.DirEntry) -> os.stat_result:
    try:
        return entry.stat()  # follows symlinks
    except OSError as exc:
        raise UserError(f"{entry.path}: unreadable ({exc.strerror or exc})") from None


def _check_time(path, value: str | None, what: str) -> None:
    """Refuse an instant time that names no calendar date and time (:func:`model.instant.time_problem`)."""
    if value is None:
        return
    problem = time_problem(value)
    if problem is not None:
        raise UserError(f"{path}: {what} {value!r} {problem}")


def _scan(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError as exc:
        raise UserError(f"{folder}: unreadable ({exc.strerror or exc})") from None


def _list_leftover_temp(base: Path, layout: int) -> list[str]:
    """hoodie-lab's temporary timeline files left in ``.hoodie/.temp`` (relative paths).

    Only the folder's own files are looked at (Hudi's markers live in ``.temp/<instant>/``); an
    unreadable or missing ``.temp`` lists nothing, since no reader depends on it.
    """
    try:
        with os.scandir(base / ".hoodie" / md.TEMP_FOLDER) as it:
            names = [e.name for e in it if e.name.startswith(".") and e.is_file()]
    except OSError:
        return []
    return [f".hoodie/{md.TEMP_FOLDER}/{n}" for n in sorted(names) if leftover_temp_target(n, layout) is not None]


def _list_timeline(tdir: Path, layout: int, tz: str) -> tuple[list[str], dict[str, str], list[str]]:
    """Instant file names, modification times of completed files without a completion time, and
    the names of leftover temporary files (skipped, see :func:`leftover_temp_target`)."""
    names, mtimes, leftovers = [], {}, []
    for entry in _scan(tdir):
        if entry.is_dir(follow_symlinks=False):
            continue
        if not entry.is_file(follow_symlinks=False):  # a symlink or a special file (d_type: no syscall above)
            st = _entry_stat(entry)
            if _stat.S_ISDIR(st.st_mode):
                continue
            check_regular_file(entry.path, st)  # a FIFO, device or socket here is never opened
        if leftover_temp_target(entry.name, layout) is not None:
            leftovers.append(entry.name)
            continue
        if not fn.is_timeline_file(entry.name):
            continue
        names.append(entry.name)
        try:
            tf = fn.parse_timeline_file(entry.name, layout)
        except CodecError as exc:
            raise UserError(f"{tdir / entry.name}: {exc.problem}") from None
        _check_time(tdir / entry.name, tf.requested_time, "requested time")
        _check_time(tdir / entry.name, tf.completion_time, "completion time")
        if tf.state is State.COMPLETED and tf.completion_time is None:
            mtimes[entry.name] = _mtime_time(Path(entry.path), tz)
    return sorted(names), mtimes, leftovers


def _claims_data_file(name: str) -> bool:
    """The name claims to be a base or log file (``model.filenames.is_log_file`` / ``is_base_file``)."""
    if name[:1] == ".":
        return ".log." in name
    dot = name.rfind(".")
    return dot > 0 and name[dot + 1:] in fn.BASE_EXTENSIONS


def _list_data_files(base: Path) -> tuple[list[str], list[fn.BaseFile], list[fn.LogFile]]:
    partitions: list[str] = []
    bases: list[fn.BaseFile] = []
    logs: list[fn.LogFile] = []
    checked_times: set[str] = set()

    def refuse(exc: OSError) -> None:  # os.walk skips an unreadable folder silently without this
        raise UserError(f"{exc.filename}: unreadable folder ({exc.strerror or exc})")

    for root, dirs, files in os.walk(base, onerror=refuse):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        rel = os.path.relpath(root, base)
        part = "" if rel == "." else rel.replace(os.sep, "/")
        found = False
        for name in sorted(files):
            path = os.path.join(root, name)
            if not _claims_data_file(name):
                if os.path.islink(path) and not os.path.exists(path):
                    check_regular_file(path)  # a symlink loop or a dangling link: one line, exit 2
                continue
            try:
                st = check_regular_file(path)  # never opened; a FIFO named like a data file is refused
            except UserError:
                if not os.path.lexists(path):
                    continue  # gone since the folder was listed (another writer's rollback or clean): as if
                    # listed after that delete; a dangling symlink still exists as a name and is refused
                raise
            try:
                f = fn.parse_data_file(name, part, st.st_size)
            except CodecError as exc:
                raise UserError(f"{path}: {exc.problem}") from None
            if f is not None and f.instant_time not in checked_times:
                _check_time(path, f.instant_time, "instant time")
                checked_times.add(f.instant_time)
            if isinstance(f, fn.BaseFile):
                bases.append(f)
                found = True
            elif isinstance(f, fn.LogFile):
                logs.append(f)
                found = True
        if found or PARTITION_METAFILE in files:
            partitions.append(part)
    return partitions, bases, logs


def _plan_operations(plan: dict | None) -> list[dict]:
    return list((plan or {}).get("operations") or [])


def _clustering_groups(requested: dict | None) -> list[FileGroupId]:
    out: list[FileGroupId] = []
    plan = (requested or {}).get("clusteringPlan") or {}
    for group in plan.get("inputGroups") or []:
        for s in group.get("slices") or []:
            out.append((s.get("partitionPath") or "", s["fileId"]))
    return out


_COMMIT_LIKE = {Action.COMMIT, Action.DELTACOMMIT, Action.REPLACECOMMIT}


class _Vanished(Exception):
    """A listed timeline file was gone when read: the timeline changed under the read (another writer's rollback)."""


#: how many times :func:`read_table` lists the timeline again when a listed file vanished before it was read
_RELISTS = 5


def _decode_file(path: Path, tf: fn.TimelineFile) -> Any:
    """Decode one timeline file by what it is; ``None`` when empty; :class:`_Vanished` when it is gone."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if os.path.lexists(path):  # (a dangling symlink is still a name: refused below as unreadable)
            raise UserError(f"{path}: unreadable (dangling symlink)") from None
        raise _Vanished(path) from None
    except OSError as exc:
        raise UserError(f"{path}: unreadable ({exc.strerror or exc})") from None
    if not data.strip():
        return None
    if tf.action in _COMMIT_LIKE and not data.startswith(md.AVRO_MAGIC):
        # commit metadata of 0.x (JSON); 1.x writes Avro, and Avro plans are recognised by magic
        return md.decode_commit_metadata(data, str(path))
    return md.decode_avro(data, str(path))


def _named_files(meta: dict, source: Path, out: dict) -> None:
    """Add the data files commit metadata names (``partitionToWriteStats[*].path``, relative to the
    base path; the types were checked by :func:`lakeio.ondisk.metadata.check_commit_metadata` for
    JSON and by the schema for Avro) to ``out`` (path -> parsed file). A path whose name is not a
    data file name is skipped, as a listing skips it; one that claims to be one and does not parse,
    or whose instant is no calendar time, is bad input naming ``source``."""
    for part, stats in (meta.get("partitionToWriteStats") or {}).items():
        for stat in stats or []:
            path = stat.get("path") if isinstance(stat, dict) else None
            if not path or not isinstance(path, str) or path in out:
                continue
            folder, _, name = path.rpartition("/")
            if not _claims_data_file(name):
                continue
            try:
                f = fn.parse_data_file(name, folder)
            except CodecError as exc:
                raise UserError(f"{source}: write stat path {path!r}: {exc.problem}") from None
            if f is not None:
                _check_time(f"{source}: write stat path {path!r}:", f.instant_time, "instant time")
                out[path] = f


def _check_partition_folders(base: Path, named) -> None:
    """A partition folder of a file that commit metadata names must be a readable folder when it
    exists (a missing one is missing data: ``I8.snapshot-files-exist``)."""
    for part in sorted({f.partition for f in named if f.partition}):
        p = base / part
        try:
            st = os.stat(p)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise UserError(f"{p}: unreadable partition folder ({exc.strerror or exc})") from None
        if not _stat.S_ISDIR(st.st_mode):
            raise UserError(f"{p}: partition folder of committed files is {file_kind(st.st_mode)}, not a folder")


def check_readable(base: Path, files, listed) -> None:
    """Every file of ``files`` (the latest snapshot of the named files) that exists must be a
    readable regular file: one that is listed (``listed``: relative paths) is opened and closed;
    one that is not listed but exists under its name (a folder, a FIFO) is refused without opening
    it. Either is bad input, one line naming the file; a file that does not exist is left to
    ``I8.snapshot-files-exist``."""
    for f in files:
        p = base / f.path
        if f.path not in listed:
            if os.path.lexists(p):
                check_regular_file(p)
            continue
        try:
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise UserError(f"{p}: unreadable ({exc.strerror or exc})") from None
        os.close(fd)


# ------------------------------------------------------------------------------ entry point
def read_table(path: str | os.PathLike) -> Table:
    """Read the table at ``path`` (its base path). Raises :class:`UserError` on bad input."""
    base = find_base_path(path)
    props, version, layout, tz = _read_facts(base)
    tdir = _timeline_dir(base, props, version)
    # A file listed and gone before it is read (a rollback by another writer between the two) means the listing is
    # stale: the timeline is listed and read again, as a reader listing after the delete would.
    for _ in range(_RELISTS):
        names, mtimes, leftovers = _list_timeline(tdir, layout, tz)
        try:
            timeline = fn.timeline_from_files(names, version, mtimes=mtimes)
        except CodecError as exc:
            raise UserError(f"{tdir / exc.name}: {exc.problem}") from None
        content: dict[str, Any] = {}
        parsed = {n: fn.parse_timeline_file(n, layout, mtime=mtimes.get(n)) for n in names}
        try:
            for n in names:
                content[n] = _decode_file(tdir / n, parsed[n])
        except _Vanished:
            continue
        break
    else:
        raise UserError(f"{tdir}: the timeline kept changing while it was read ({_RELISTS} listings, each with a "
                        f"file gone before it was read)")
    leftover_temp = sorted({str((tdir / n).relative_to(base)).replace(os.sep, "/") for n in leftovers}
                           | set(_list_leftover_temp(base, layout)))

    by_state = {(tf.key, tf.state): n for n, tf in parsed.items()}

    def file_of(inst, state: State) -> str | None:
        return by_state.get((inst.key, state))

    commit_metadata: dict[str, dict] = {}
    named: dict[str, fn.BaseFile | fn.LogFile] = {}
    replaced: dict[FileGroupId, str] = {}
    compaction_plans: dict[str, list[dict]] = {}
    pending_compactions: dict[FileGroupId, str] = {}
    pending_clustering: dict[FileGroupId, str] = {}
    for inst in timeline.instants():
        states = timeline.states_present(inst.requested_time, inst.action)
        if inst.is_completed and inst.shown_action in _COMMIT_LIKE:
            name = file_of(inst, State.COMPLETED)
            meta = content.get(name) or {}
            commit_metadata[inst.requested_time] = meta
            _named_files(meta, tdir / name, named)
            if inst.shown_action is Action.REPLACECOMMIT:
                for part, ids in (meta.get("partitionToReplaceFileIds") or {}).items():
                    for fid in ids or []:
                        key = (part, fid)
                        # resetFileGroupsReplaced keeps the greater instant on duplicate keys
                        if key not in replaced or replaced[key] < inst.requested_time:
                            replaced[key] = inst.requested_time
        if inst.action is Action.COMPACTION and State.REQUESTED in states:
            ops = _plan_operations(content.get(file_of(inst, State.REQUESTED)))
            compaction_plans[inst.requested_time] = ops
            if inst.is_pending:
                for op in ops:
                    pending_compactions[(op.get("partitionPath") or "", op["fileId"])] = inst.requested_time
        if inst.is_pending and State.REQUESTED in states and (
                inst.action is Action.CLUSTERING
                or (inst.action is Action.REPLACECOMMIT
                    and (content.get(file_of(inst, State.REQUESTED)) or {}).get("operationType") == "CLUSTER")):
            for fg in _clustering_groups(content.get(file_of(inst, State.REQUESTED))):
                pending_clustering[fg] = inst.requested_time

    partitions, bases, logs = _list_data_files(base)
    _check_partition_folders(base, named.values())
    return Table(
        base_path=base, properties=props, name=props.get("hoodie.table.name", ""),
        table_type=props["hoodie.table.type"].strip(), version=version, layout=layout, timezone=tz,
        timeline_dir=tdir, timeline=timeline, partitions=partitions, base_files=bases, log_files=logs,
        timeline_content=content, commit_metadata=commit_metadata, replaced=replaced,
        compaction_plans=compaction_plans, pending_compactions=pending_compactions,
        pending_clustering=pending_clustering, leftover_temp_files=leftover_temp,
        named_base_files=[f for f in named.values() if isinstance(f, fn.BaseFile)],
        named_log_files=[f for f in named.values() if isinstance(f, fn.LogFile)],
    )
