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

INPUT_GLOB = "part-*.json"
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


def read_inputs(input_dir: Path) -> list[list[tuple[Record | None, str | None]]]:
    """Every input file (in name order), each as its parsed lines."""
    files = sorted(Path(input_dir).glob(INPUT_GLOB))
    return [[parse_line(line) for line in input_lines(f.read_bytes())] for f in files]


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
