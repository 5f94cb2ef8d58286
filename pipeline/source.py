"""A deterministic, seeded generator of the pipeline's input files, and the schema the stream reads them with.

One input file per micro-batch (the job reads them with ``maxFilesPerTrigger=1`` and
``trigger(availableNow=True)``, so file ``i`` is batch ``i`` of a fresh run). Each file holds JSON lines:

* ``key``       record key (``k000123``); roughly ``update_fraction`` of the records of a later batch update a
                key seen before, the rest insert new keys;
* ``ts``        the ordering (precombine) field: a strictly increasing sequence number over the whole input,
                so "latest ordering value wins" and "latest arrival wins" agree;
* ``partition`` the partition path, a fixed function of the key (a key never moves partition);
* ``payload``   a short deterministic string.

Malformed records (``malformed`` of them in all, spread with the same seed) are one of: a line that is not
JSON, a record without a key, a record whose ordering field is not a number, a record without a partition.
They must land in the quarantine table with a reason and never reach the Hudi table. What is malformed is
decided in one place, :func:`parse_line` (with :func:`validate`): besides those four, a line that is not
UTF-8, a JSON value that is not an object (an array line), a non-string or empty key, a ``ts`` beyond int64,
a partition value that is not one path segment, a non-string payload, a lone surrogate.

``read_inputs(input_dir)`` reads the files back into parsed lines (record or reason), in arrival order; the
coordinator, the diff and the tests use it together with the model's predictions.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from lakeio.errors import UserError

INPUT_GLOB = "part-*"  # part-NNNNN.json (generated) or part-NNNNN.<json|csv|parquet> (user data)
PARTITIONS = ("p0", "p1", "p2")
MALFORMED_KINDS = ("not-json", "missing-key", "bad-ordering", "missing-partition")


def partition_of(key: str) -> str:
    """A key's partition: stable, so an update never moves a record."""
    return PARTITIONS[int(key[1:]) % len(PARTITIONS)]


def input_file(input_dir: Path, batch: int) -> Path:
    return Path(input_dir) / f"part-{batch:05d}.json"


@dataclass(frozen=True)
class Record:
    key: str
    ts: int
    partition: str
    payload: str

    def as_json(self) -> dict:
        return {"key": self.key, "ts": self.ts, "partition": self.partition, "payload": self.payload}

    # the same accessors as a user-data :class:`Row` (the coordinator and the diff use these)
    @property
    def ordering(self) -> int:
        return self.ts

    @property
    def deleted(self) -> bool:
        return False

    @property
    def values(self) -> tuple:
        return (self.key, self.ts, self.partition, self.payload)


def generate_batches(records: int, batches: int, seed: int, *, update_fraction: float = 0.3,
                     malformed: int = 0, ts_stride: int = 1, ts_phase: int = 0) -> list[list[str]]:
    """The lines of every input file: ``batches`` lists whose well-formed records total ``records``.

    Record i's ordering value is ``i * ts_stride + ts_phase`` (i from 1): writers on one table given one
    stride and distinct phases never tie on the ordering field (two writers: multi-writer runs)."""
    if batches < 1:
        raise ValueError("batches must be >= 1")
    if records < 0 or malformed < 0:
        raise ValueError("records and malformed must be >= 0")
    rng = random.Random(seed)
    sizes = [records // batches + (1 if b < records % batches else 0) for b in range(batches)]
    next_key, ts = 0, 0
    out: list[list[str]] = []
    for b, size in enumerate(sizes):
        lines = []
        for _ in range(size):
            if next_key and rng.random() < update_fraction and b > 0:
                k = rng.randrange(next_key)
            else:
                k, next_key = next_key, next_key + 1
            key = f"k{k:06d}"
            ts += 1
            o = ts * ts_stride + ts_phase
            rec = Record(key, o, partition_of(key), f"v{o}-{rng.randrange(10**6):06d}")
            lines.append(json.dumps(rec.as_json(), sort_keys=True))
        out.append(lines)
    for i in range(malformed):
        b = rng.randrange(batches)
        kind = MALFORMED_KINDS[i % len(MALFORMED_KINDS)]
        pos = rng.randrange(len(out[b]) + 1)
        out[b].insert(pos, _malformed_line(kind, i))
    return out


def _malformed_line(kind: str, i: int) -> str:
    if kind == "not-json":
        return f'{{"key": "bad{i}", "ts": '  # truncated JSON
    if kind == "missing-key":
        return json.dumps({"ts": 10**9 + i, "partition": "p0", "payload": f"bad{i}"})
    if kind == "bad-ordering":
        return json.dumps({"key": f"bad{i:04d}", "ts": "not-a-number", "partition": "p0", "payload": "x"})
    return json.dumps({"key": f"bad{i:04d}", "ts": 10**9 + i, "payload": "x"})


def write_inputs(input_dir: Path, records: int, batches: int, seed: int, *, update_fraction: float = 0.3,
                 malformed: int = 0, ts_stride: int = 1, ts_phase: int = 0) -> list[Path]:
    """Write one file per batch (atomically each: temp name the stream ignores, then rename).

    Spark's file source takes new files oldest first (by modification time), so file i gets a modification
    time i seconds after the first: with ``maxFilesPerTrigger=1`` file i is batch i."""
    input_dir = Path(input_dir)
    input_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    base = int(time.time()) - batches - 1
    for b, lines in enumerate(generate_batches(records, batches, seed, update_fraction=update_fraction,
                                               malformed=malformed, ts_stride=ts_stride, ts_phase=ts_phase)):
        path = input_file(input_dir, b)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text("".join(line + "\n" for line in lines))
        os.utime(tmp, (base + b, base + b))
        tmp.rename(path)
        paths.append(path)
    return paths


INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
#: the generated source's record schema (what :func:`records_table` builds for it)
GENERATED_SCHEMA = pa.schema([("key", pa.string()), ("ts", pa.int64()), ("partition", pa.string()),
                              ("payload", pa.string())])


def input_lines(data: bytes) -> list[bytes]:
    """The lines of an input file as the stream reads them: split on ``\\n`` only (the job's text source runs
    with ``lineSep="\\n"``), blank lines skipped. A ``\\r`` before the ``\\n`` stays in the line (JSON
    whitespace)."""
    return [line for line in data.split(b"\n") if line.strip()]


def parse_line(line: bytes | str) -> tuple[Record | None, str | None]:
    """One input line -> (record, None) or (None, reason).

    The one validation of input records: :func:`read_inputs` (the coordinator's expected records, the diff's
    prediction) and the job's quarantine split (:func:`pipeline.job.split_batch`, on the raw bytes of each line
    Spark read) both call it, so a record the table receives is exactly a record this accepts."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, f"not UTF-8 (byte {exc.start})"
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return None, "malformed JSON"
    if not isinstance(obj, dict):
        return None, f"not a JSON object (a JSON {type(obj).__name__})"
    reason = validate(obj.get("key"), obj.get("ts"), obj.get("partition"), obj.get("payload"))
    if reason:
        return None, reason
    return Record(obj["key"], obj["ts"], obj["partition"], obj.get("payload") or ""), None


#: The generator's layout of a well-formed line (``json.dumps(record, sort_keys=True)``) with every string printable
#: ASCII without ``"`` or ``\\`` (so it holds no escape and stands for itself), ``ts`` an integer literal of at
#: most 18 digits (within int64), the partition non-empty, without ``/``, not starting with ``.``. RE2 syntax
#: (``pyarrow.compute.extract_regex``); ``$`` is the end of the line only.
_S = r"[\x20\x21\x23-\x5b\x5d-\x7e]"  # printable ASCII but " and \
_P0 = r"[\x20\x21\x23-\x2d\x30-\x5b\x5d-\x7e]"  # ... and neither . nor / (a partition's first character)
_P = r"[\x20\x21\x23-\x2e\x30-\x5b\x5d-\x7e]"  # ... and not /
CANONICAL_LINE = (r'^\{"key": "(?P<key>' + _S + r'+)", "partition": "(?P<partition>' + _P0 + _P + r'*)", '
                  r'"payload": "(?P<payload>' + _S + r'*)", "ts": (?P<ts>-?(?:0|[1-9][0-9]{0,17}))\}$')


def parse_lines_columnar(lines: pa.Array, pattern: str = CANONICAL_LINE) -> pa.Table:
    """The lines :func:`parse_line` accepts and that are in the generator's layout, parsed column-wise (one
    ``extract_regex`` over the batch's bytes, no Python per line): columns ``fast`` (the line matched
    ``pattern``), ``key``, ``ts``, ``partition``, ``payload`` (null where not fast) and ``line`` (the raw bytes
    where not fast, else null).

    A matched line is exactly ``{"key": "<k>", "partition": "<p>", "payload": "<v>", "ts": <n>}`` with ASCII
    strings free of quotes, backslashes and control characters: ``json.loads`` gives those four values
    unchanged (ASCII is UTF-8; no escape; ``n`` an integer of at most 18 digits) and :func:`validate` accepts
    them (key non-empty; partition non-empty, one path segment, not starting with ``.``), so ``parse_line``
    returns that very record. Every other line (``fast`` false) keeps its bytes and goes through
    ``parse_line`` in the writer task, which then decides -- the verdicts stay ``parse_line``'s
    (``tests/test_pipeline_speed.py`` compares the two on every kind of line, and shows a looser pattern
    caught)."""
    import pyarrow.compute as pc

    lines = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    m = pc.extract_regex(lines, pattern)
    fast = pc.fill_null(m.is_valid(), False)

    def field(name, typ):
        return pc.cast(pc.cast(pc.struct_field(m, name), pa.string()), typ)
    return pa.table({"fast": fast, "key": field("key", pa.string()), "ts": field("ts", pa.int64()),
                     "partition": field("partition", pa.string()), "payload": field("payload", pa.string()),
                     "line": pc.if_else(fast, pa.scalar(None, lines.type), lines)})


def validate(key, ts, partition, payload=None) -> str | None:
    """The reason a record is malformed, or None.

    * ``key``: a non-empty string (a number is refused, not coerced: ``"7"`` and ``7`` must not become one
      record key);
    * ``ts``: an integer (not a bool, not a string, not a float) within int64, the ordering field's type
      (a long in the table schema);
    * ``partition``: a non-empty string that is one path segment: no ``/`` or ``\\`` (it would nest
      partition folders), not starting with ``.`` (``.hoodie``, ``..``, hidden folders readers skip), no
      control characters;
    * ``payload``: a string or absent;
    * every string encodable as UTF-8 (JSON can spell a lone surrogate, ``"\\ud800"``; parquet cannot
      store it)."""
    if key is None or key == "":
        return "missing record key"
    if not isinstance(key, str):
        return f"record key is not a string (a JSON {_json_type(key)})"
    if ts is None or isinstance(ts, bool) or not isinstance(ts, int):
        return "missing or non-integer ordering field ts"
    if not INT64_MIN <= ts <= INT64_MAX:
        return "ordering field ts out of the int64 range"
    if partition is None or partition == "":
        return "missing partition"
    if not isinstance(partition, str):
        return f"partition is not a string (a JSON {_json_type(partition)})"
    if "/" in partition or "\\" in partition or partition.startswith(".") or any(ord(c) < 32 for c in partition):
        return "partition value is not a single path segment (contains / or \\ or a control character, " \
               "or starts with .)"
    if payload is not None and not isinstance(payload, str):
        return f"payload is not a string (a JSON {_json_type(payload)})"
    for name, value in (("key", key), ("partition", partition), ("payload", payload)):
        if value is not None and not _utf8_encodable(value):
            return f"{name} holds a lone UTF-16 surrogate (not encodable as UTF-8)"
    return None


def _json_type(value) -> str:
    return {bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}.get(type(value), "value")


def _utf8_encodable(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_inputs(input_dir: Path, spec: "InputSpec | None" = None) -> list[list[tuple]]:
    """Every input file (in name order), each as its parsed records: ``(record, None)`` or ``(None, reason)``.
    ``spec`` None: the generated demo source (JSON lines, :func:`parse_line`); else the user's data
    (:func:`parse_file` with the run's :class:`InputSpec`)."""
    files = sorted(Path(input_dir).glob(INPUT_GLOB))
    if spec is None:
        return [[parse_line(line) for line in input_lines(f.read_bytes())] for f in files]
    return [[(r, why) for r, why, _raw in parse_file(f.read_bytes(), spec, i)] for i, f in enumerate(files)]


def spark_schema():
    """The records' schema for Spark's JSON reader (``_corrupt_record`` for lines it cannot parse). The job does
    not read with it (it reads raw lines and validates them with :func:`parse_line`); the benchmark's
    plain-Spark ceiling does."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([
        StructField("key", StringType()),
        StructField("ts", LongType()),
        StructField("partition", StringType()),
        StructField("payload", StringType()),
        StructField("_corrupt_record", StringType()),
    ])


# ================================================================================================ user data
# ``pipeline run --input DIR --format json|csv|parquet --record-key C --partition-field C --ordering-field C
# [--delete-field C]``: the user's own files instead of the generated source. The run's schema is taken from the
# data before anything is created (:func:`build_spec`): every file's schema (:func:`file_schema`), then file by
# file the evolution Hudi allows on write (:func:`evolve`); a change Hudi refuses is one line, exit 2. Each record
# is then judged by :func:`parse_file` (the one validation for user data, as :func:`parse_line` is for the
# generated source): well-formed records are cast to the run's schema, the rest go to quarantine with a reason.

FORMATS = ("json", "csv", "parquet")
#: file name endings taken from ``--input DIR`` for each ``--format`` (other files there are not read)
FORMAT_SUFFIXES = {"json": (".json", ".jsonl", ".ndjson"), "csv": (".csv",), "parquet": (".parquet",)}

#: the column types of a user schema (Avro primitive / logical names) and the Arrow type each is written as
TYPES = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
         "double": pa.float64(), "string": pa.string(), "binary": pa.binary(), "date": pa.date32(),
         "timestamp-millis": pa.timestamp("ms", tz="UTC"), "timestamp-micros": pa.timestamp("us", tz="UTC")}
NULL_TYPE = "null"  # a JSON/CSV column that holds only nulls in a file: takes its type from the other files

#: Type promotions Hudi allows on write: ``SchemaChangeUtils#isTypeUpdateAllow`` (hudi-common,
#: ``internal/schema/utils``): int -> long/float/double/string, long -> float/double/string, float ->
#: double/string, double -> string, date -> string. (Hudi also allows string -> date/decimal; the pipeline
#: does not parse strings into dates and refuses it.)
PROMOTIONS = {"int": ("long", "float", "double", "string"), "long": ("float", "double", "string"),
              "float": ("double", "string"), "double": ("string",), "date": ("string",)}
#: column types each role may have (what the Hudi writer accepts: ``write_helper.check_records``,
#: ``keygen.partition_paths``, ``write_helper.ordering_branch``; the delete marker is a boolean column)
ROLE_TYPES = {"--record-key": ("string", "int", "long"),
              "--partition-field": ("string", "int", "long", "boolean", "date"),
              "--ordering-field": ("int", "long", "float", "double", "string", "date"),
              "--delete-field": ("boolean",)}


@dataclass(frozen=True)
class Row:
    """A well-formed user record: its values in the run schema's column order (cast to the run's types) and
    the four roles picked out of them."""
    key: object
    ordering: object
    partition: object
    deleted: bool
    values: tuple


@dataclass(frozen=True)
class InputSpec:
    """The user data of a run (saved in ``run.json`` under ``input_spec``): format, the role columns, the
    run's schema (``(name, type)`` pairs, :data:`TYPES`) and every input file's own schema (None: a file
    whose schema could not be read, e.g. a truncated parquet file: quarantined whole)."""
    format: str
    record_key: str
    partition_field: str
    ordering_field: str
    delete_field: str | None
    schema: tuple
    file_schemas: tuple
    source_files: tuple = ()

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.schema)

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(n, TYPES[t], nullable=True) for n, t in self.schema])

    def to_dict(self) -> dict:
        return {"format": self.format, "record_key": self.record_key, "partition_field": self.partition_field,
                "ordering_field": self.ordering_field, "delete_field": self.delete_field,
                "schema": [list(x) for x in self.schema],
                "file_schemas": [None if fs is None else [list(x) for x in fs] for fs in self.file_schemas],
                "source_files": list(self.source_files)}

    @staticmethod
    def from_dict(d: dict) -> "InputSpec":
        return InputSpec(d["format"], d["record_key"], d["partition_field"], d["ordering_field"],
                         d.get("delete_field"), tuple(tuple(x) for x in d["schema"]),
                         tuple(None if fs is None else tuple(tuple(x) for x in fs) for fs in d["file_schemas"]),
                         tuple(d.get("source_files") or ()))


def input_spec(cfg: dict) -> InputSpec | None:
    """A run config's user-data spec (None: the generated source)."""
    return InputSpec.from_dict(cfg["input_spec"]) if cfg.get("input_spec") else None


def record_columns(cfg: dict) -> tuple[str, str, str]:
    """(record key, ordering field, partition field) columns of a run's records."""
    spec = input_spec(cfg)
    return ("key", "ts", "partition") if spec is None else (spec.record_key, spec.ordering_field,
                                                            spec.partition_field)


def user_files(input_dir: Path, fmt: str) -> list[Path]:
    """The input files of ``--input DIR``: regular, not hidden, ending as the format's files do, by name."""
    if fmt not in FORMATS:
        raise UserError(f"--format: {fmt!r}; expected one of {', '.join(FORMATS)}")
    d = Path(input_dir)
    if not d.is_dir():
        raise UserError(f"--input {d}: not a directory")
    try:
        names = sorted(os.listdir(d))
    except OSError as exc:
        raise UserError(f"--input {d}: cannot list it ({exc.strerror})") from None
    files = [d / n for n in names if not n.startswith((".", "_")) and n.lower().endswith(FORMAT_SUFFIXES[fmt])
             and (d / n).is_file()]
    if not files:
        raise UserError(f"--input {d}: no {fmt} files (names ending {', '.join(FORMAT_SUFFIXES[fmt])})")
    return files


# ------------------------------------------------------------------------------------------------ schemas
def _json_kind(v) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "long"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "string"
    return "nested"


def _csv_kind(v: str) -> str | None:
    if v == "":
        return None
    if v.lower() in ("true", "false"):
        return "boolean"
    try:
        i = int(v)
        return "long" if INT64_MIN <= i <= INT64_MAX else "string"
    except ValueError:
        pass
    try:
        float(v)
        return "double"
    except ValueError:
        return "string"


def _majority(kinds: dict[str, list[str]]) -> list[tuple[str, str]]:
    """Per column the kind most of its non-null values have (long counted as double when the column also holds
    doubles: JSON and CSV do not tell 1 from 1.0); ties go to the kind seen first."""
    from collections import Counter

    out = []
    for name, seen in kinds.items():
        if not seen:
            out.append((name, NULL_TYPE))
            continue
        if "double" in seen:
            seen = ["double" if k == "long" else k for k in seen]
        c = Counter(seen)
        best = max(c.values())
        out.append((name, next(k for k in seen if c[k] == best)))
    return out


def _arrow_type_name(t: pa.DataType) -> str | None:
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t) or pa.types.is_uint8(t) \
            or pa.types.is_uint16(t):
        return "int"
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_timestamp(t) and t.tz in (None, "UTC", "+00:00") and t.unit in ("ms", "us"):
        return "timestamp-millis" if t.unit == "ms" else "timestamp-micros"
    return None


def file_schema(data: bytes, fmt: str, name: str) -> tuple | None:
    """One input file's schema as ``(name, type)`` pairs in first-seen column order; None when the file cannot
    be read at all (it is quarantined whole by :func:`parse_file`). A column the writer cannot store (nested
    JSON, a parquet list/struct/decimal, duplicate names) is a schema-level problem: :class:`UserError`."""
    if fmt == "parquet":
        import pyarrow.parquet as pq
        try:
            schema = pq.read_schema(pa.BufferReader(data))
        except (pa.ArrowException, OSError, ValueError):
            return None
        out = []
        for f in schema:
            t = _arrow_type_name(f.type)
            if t is None:
                raise UserError(f"{name}: column {f.name!r} has type {f.type}, which the pipeline does not write "
                                f"(flat boolean/integer/float/string/binary/date/timestamp[ms|us] only)")
            out.append((f.name, t))
        _no_duplicates(name, [n for n, _ in out])
        return tuple(out)
    kinds: dict[str, list[str]] = {}
    for values in _raw_records(data, fmt, name):
        if values is None:
            continue
        for col, v in values.items():
            k = _json_kind(v) if fmt == "json" else _csv_kind(v)
            kinds.setdefault(col, [])
            if k is not None:
                kinds[col].append(k)
    if not kinds:  # no record parsed (every line malformed, or a CSV that does not parse): no schema to take
        return None
    schema = _majority(kinds)
    for col, t in schema:
        if t == "nested":
            raise UserError(f"{name}: column {col!r} holds JSON objects or arrays; the pipeline writes flat "
                            f"columns only")
    return tuple(schema)


def _no_duplicates(name: str, cols: list[str]) -> None:
    dup = sorted({c for c in cols if cols.count(c) > 1})
    if dup:
        raise UserError(f"{name}: duplicate column name(s) {dup}")
    if any(c == "" for c in cols):
        raise UserError(f"{name}: a column without a name")


def _csv_rows(data: bytes, name: str):
    """(header, rows) of a CSV file (RFC 4180 quoting, header line first); raises ValueError if it does not
    parse."""
    import csv
    import io

    text = data.decode("utf-8")  # UnicodeDecodeError is a ValueError
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    rows = [r for r in rows if r]  # blank lines
    if not rows:
        return [], []
    _no_duplicates(name, rows[0])
    return rows[0], rows[1:]


def _raw_records(data: bytes, fmt: str, name: str):
    """The records of a JSON-lines or CSV file as dicts (None for a line that is not a JSON object)."""
    if fmt == "json":
        for line in input_lines(data):
            try:
                obj = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                yield None
                continue
            yield obj if isinstance(obj, dict) else None
        return
    import csv
    try:
        header, rows = _csv_rows(data, name)
    except UserError:
        raise
    except (ValueError, csv.Error):  # not UTF-8, bad quoting: the file is quarantined whole
        return
    for r in rows:
        yield dict(zip(header, r)) if len(r) == len(header) else None


def evolve(table: tuple, incoming: tuple, name: str) -> tuple:
    """The table schema after a batch with schema ``incoming`` (file ``name``), by Hudi's schema-on-write rules
    (``HoodieSchemaUtils#deduceWriterSchema``, hudi-spark-client, with its defaults):

    * a column the table has and the batch lacks is refused (``hoodie.datasource.write.schema.allow.auto.
      evolution.column.drop=false``, ``hoodie.write.set.null.for.missing.columns=false``);
    * a new column is added, nullable, at the end (every data column is nullable here);
    * a type change is allowed along :data:`PROMOTIONS` (``SchemaChangeUtils#isTypeUpdateAllow``): the table
      takes the wider type; a batch whose column is narrower than the table's is written in the table's type
      (the table schema never narrows, ``AvroSchemaEvolutionUtils#reconcileSchemaRequirements``); any other
      change is refused.

    Raises :class:`UserError` (one line naming the file and the column) for a refused change."""
    inc = dict(incoming)
    out = []
    for col, t in table:
        if col not in inc:
            raise UserError(f"{name}: column {col!r} of the earlier input is missing; Hudi refuses a dropped column "
                            f"(HoodieSchemaUtils#deduceWriterSchema, allow.auto.evolution.column.drop=false)")
        out.append((col, _wider(t, inc[col], col, name)))
    have = {c for c, _ in table}
    out += [(c, t) for c, t in incoming if c not in have]
    return tuple(out)


def _wider(a: str, b: str, col: str, name: str) -> str:
    if a == b or b == NULL_TYPE:
        return a
    if a == NULL_TYPE:
        return b
    if b in PROMOTIONS.get(a, ()):
        return b
    if a in PROMOTIONS.get(b, ()):
        return a
    raise UserError(f"{name}: column {col!r} changes type {a} -> {b}; Hudi allows only int -> long -> float -> "
                    f"double -> string and date -> string (SchemaChangeUtils#isTypeUpdateAllow)")


def build_spec(input_dir: Path, fmt: str, record_key: str | None, partition_field: str | None,
               ordering_field: str | None, delete_field: str | None = None) -> InputSpec:
    """The :class:`InputSpec` of ``--input DIR`` (read only; nothing is written). Every schema-level problem is
    one :class:`UserError`: an unknown format, no files, a role column absent from the data or of a type its
    role cannot have, a schema change Hudi refuses, an unsupported column type."""
    files = user_files(input_dir, fmt)
    for flag, col in (("--record-key", record_key), ("--partition-field", partition_field),
                      ("--ordering-field", ordering_field)):
        if not col:
            raise UserError(f"{flag}: required with --input")
    schemas: list[tuple | None] = []
    run: tuple = ()
    for f in files:
        try:
            data = f.read_bytes()
        except OSError as exc:
            raise UserError(f"{f}: cannot read it ({exc.strerror})") from None
        fs = file_schema(data, fmt, str(f))
        schemas.append(fs)
        if fs is not None:
            run = evolve(run, fs, str(f)) if run else fs
    run = tuple((c, "string" if t == NULL_TYPE else t) for c, t in run)
    if not run:
        raise UserError(f"--input {input_dir}: no file has a readable record, so there is no schema to take")
    types = dict(run)
    for flag, col in (("--record-key", record_key), ("--partition-field", partition_field),
                      ("--ordering-field", ordering_field), ("--delete-field", delete_field)):
        if col is None:
            continue
        if col not in types:
            raise UserError(f"{flag} {col}: no such column in the data (columns: {', '.join(types)})")
        if types[col] not in ROLE_TYPES[flag]:
            raise UserError(f"{flag} {col}: column type {types[col]}; expected one of {', '.join(ROLE_TYPES[flag])}")
    return InputSpec(fmt, record_key, partition_field, ordering_field, delete_field, run, tuple(schemas),
                     tuple(str(f) for f in files))


# ------------------------------------------------------------------------------------------------ records
def _conforms(v, t: str, fmt: str):
    """(value as the file's column type, None) or (None, why not). JSON values must have the column's JSON
    type (no coercion: ``"7"`` is not a long); CSV values are text parsed as the column's type."""
    if fmt == "csv":
        if t == "boolean":
            return (v.lower() == "true", None) if v.lower() in ("true", "false") else (None, "not a boolean")
        if t == "long":
            try:
                i = int(v)
            except ValueError:
                return None, "not an integer"
            return (i, None) if INT64_MIN <= i <= INT64_MAX else (None, "out of the int64 range")
        if t == "double":
            try:
                return float(v), None
            except ValueError:
                return None, "not a number"
        return v, None
    if t == "boolean":
        return (v, None) if isinstance(v, bool) else (None, f"a JSON {_json_type(v)}, not a boolean")
    if t == "long":
        if isinstance(v, bool) or not isinstance(v, int):
            return None, f"a JSON {_json_type(v) if not isinstance(v, str) else 'string'}, not an integer"
        return (v, None) if INT64_MIN <= v <= INT64_MAX else (None, "out of the int64 range")
    if t == "double":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None, f"a JSON {_json_type(v) if not isinstance(v, str) else 'string'}, not a number"
        return float(v), None
    if t == "string":
        if not isinstance(v, str):
            return None, f"a JSON {_json_type(v)}, not a string"
        if not _utf8_encodable(v):
            return None, "a lone UTF-16 surrogate (not encodable as UTF-8)"
        return v, None
    return None, f"a JSON value for a column of type {t}"


def _role_reason(spec: InputSpec, values: dict) -> str | None:
    """Why a record's role values make it malformed (null key, null ordering value, bad partition value)."""
    key = values.get(spec.record_key)
    if key is None or key == "":
        return f"missing record key ({spec.record_key})"
    if values.get(spec.ordering_field) is None:
        return f"missing ordering field ({spec.ordering_field})"
    part = values.get(spec.partition_field)
    if part is None or part == "":
        return f"missing partition ({spec.partition_field})"
    s = str(part).lower() if isinstance(part, bool) else str(part)
    if "/" in s or "\\" in s or s.startswith(".") or any(ord(c) < 32 for c in s):
        return (f"partition value of {spec.partition_field} is not a single path segment (contains / or \\ or a "
                f"control character, or starts with .)")
    return None


def parse_file(data: bytes, spec: InputSpec, index: int) -> list[tuple[Row | None, str | None, str]]:
    """The records of input file ``index`` (its bytes ``data``) as ``(row, None, raw)`` or ``(None, reason, raw)``.

    The one validation of user data: the coordinator's expected records, the job's quarantine split and the
    diff's prediction all call it. A record is malformed when its line/row does not parse (not JSON, not an
    object, a CSV row with another number of fields than the header), a value does not have its column's type
    in this file, the record key or ordering value is null/absent, or the partition value is null or not one path
    segment. A file that cannot be read at all (a truncated parquet file, a CSV that is not UTF-8) is one
    quarantined entry naming why. Well-formed records are cast to the run's schema (a column the file lacks is
    null; a narrower type promoted)."""
    fs = spec.file_schemas[index] if index < len(spec.file_schemas) else None
    fmt = spec.format
    out: list[tuple[Row | None, str | None, str]] = []
    good: list[dict] = []
    if fmt == "parquet":
        import pyarrow.parquet as pq
        try:
            table = pq.read_table(pa.BufferReader(data))
        except (pa.ArrowException, OSError, ValueError) as exc:
            return [(None, f"not a readable parquet file ({_first_line(exc)})", f"<input file {index}>")]
        if fs is None:
            return [(None, "not a readable parquet file (its schema could not be read)", f"<input file {index}>")]
        for rec in table.to_pylist():
            raw = json.dumps(rec, default=str, sort_keys=True)
            why = _role_reason(spec, rec)
            out.append((None, why, raw) if why else (len(good), None, raw))
            if not why:
                good.append(rec)
    else:
        types = dict(fs or ())
        if fmt == "json":
            items = []
            for line in input_lines(data):
                raw = line.decode("utf-8", errors="backslashreplace")
                try:
                    obj = json.loads(line.decode("utf-8"))
                except UnicodeDecodeError as exc:
                    items.append((None, f"not UTF-8 (byte {exc.start})", raw))
                    continue
                except (json.JSONDecodeError, RecursionError):
                    items.append((None, "malformed JSON", raw))
                    continue
                if not isinstance(obj, dict):
                    items.append((None, f"not a JSON object (a JSON {_json_type(obj)})", raw))
                    continue
                items.append((obj, None, raw))
        else:
            import csv
            import io
            try:
                header, rows = _csv_rows(data, f"input file {index}")
            except (ValueError, csv.Error) as exc:
                return [(None, f"not a readable CSV file ({_first_line(exc)})", f"<input file {index}>")]
            items = []
            for r in rows:
                buf = io.StringIO()
                csv.writer(buf, lineterminator="").writerow(r)
                if len(r) != len(header):
                    items.append((None, f"{len(r)} fields where the header has {len(header)}", buf.getvalue()))
                else:
                    items.append(({c: (v if v != "" else None) for c, v in zip(header, r)}, None, buf.getvalue()))
        for obj, why, raw in items:
            if why:
                out.append((None, why, raw))
                continue
            rec, why = {}, None
            for col, v in obj.items():
                if v is None:
                    rec[col] = None
                    continue
                t = types.get(col)
                value, bad = _conforms(v, t, fmt) if t not in (None, NULL_TYPE) else (None, None)
                if bad:
                    why = f"column {col}: {bad} (the column is {t} in this file)"
                    break
                rec[col] = value
            why = why or _role_reason(spec, rec)
            out.append((None, why, raw) if why else (len(good), None, raw))
            if not why:
                good.append(rec)
    rows = _cast_rows(good, fs, spec)
    return [(rows[x] if why is None else None, why, raw) for x, why, raw in out]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


def _cast_rows(good: list[dict], fs: tuple | None, spec: InputSpec) -> list[Row]:
    """Records (as values of their file's types) in the run schema: missing columns null, types promoted by
    Arrow's casts (long -> double, long/double -> their decimal text, date -> ISO text)."""
    if not good:
        return []
    file_types = dict(fs or ())
    cols = {}
    for name, t in spec.schema:
        vals = [r.get(name) for r in good]
        ft = file_types.get(name, NULL_TYPE)
        if ft in (NULL_TYPE, t):
            arr = pa.array(vals, type=TYPES[t])
        else:
            arr = pa.array(vals, type=TYPES[ft]).cast(TYPES[t])
        cols[name] = arr.to_pylist()
    names = spec.columns
    idx = {n: i for i, n in enumerate(names)}
    rows = []
    for values in zip(*(cols[n] for n in names)):
        deleted = bool(values[idx[spec.delete_field]]) if spec.delete_field else False
        rows.append(Row(values[idx[spec.record_key]], values[idx[spec.ordering_field]],
                        values[idx[spec.partition_field]], deleted, tuple(values)))
    return rows


def records_table(rows: list, spec: InputSpec | None) -> pa.Table:
    """Well-formed records as the Arrow table handed to the writer: the user's columns in the run schema, or
    the generated source's four columns."""
    if spec is None:
        return pa.table({"key": [r.key for r in rows], "ts": [r.ts for r in rows],
                         "partition": [r.partition for r in rows], "payload": [r.payload for r in rows]},
                        schema=GENERATED_SCHEMA)
    schema = spec.arrow_schema()
    return pa.table({n: [r.values[i] for r in rows] for i, n in enumerate(spec.columns)}, schema=schema)


def copy_inputs(spec: InputSpec, input_dir: Path) -> list[Path]:
    """Copy the user's files into the run dir as ``part-NNNNN.<format>`` (their name order is the batch order;
    modification times one second apart, as :func:`write_inputs` does, so Spark's file source takes file i as
    batch i). The user's files are only read."""
    import shutil

    input_dir = Path(input_dir)
    input_dir.mkdir(parents=True, exist_ok=True)
    base = int(time.time()) - len(spec.source_files) - 1
    out = []
    for i, f in enumerate(spec.source_files):
        path = input_dir / f"part-{i:05d}.{spec.format}"
        tmp = path.with_name(f".{path.name}.tmp")
        shutil.copyfile(f, tmp)
        os.utime(tmp, (base + i, base + i))
        tmp.rename(path)
        out.append(path)
    return out


def batch_index(path: str) -> int:
    """The batch (input file) number of a copied input file's path or URI (``.../part-00003.csv`` -> 3)."""
    name = str(path).rstrip("/").rsplit("/", 1)[-1]
    return int(name.split("-", 1)[1].split(".", 1)[0])
