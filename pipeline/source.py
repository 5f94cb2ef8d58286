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
They must land in the quarantine table with a reason and never reach the Hudi table.

``expected_records(input_dir)`` reads the files back into the well-formed records, in arrival order; the
diff and the tests use it together with the model's predictions.
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
                     malformed: int = 0) -> list[list[str]]:
    """The lines of every input file: ``batches`` lists whose well-formed records total ``records``."""
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
            rec = Record(key, ts, partition_of(key), f"v{ts}-{rng.randrange(10**6):06d}")
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
                 malformed: int = 0) -> list[Path]:
    """Write one file per batch (atomically each: temp name the stream ignores, then rename).

    Spark's file source takes new files oldest first (by modification time), so file i gets a modification
    time i seconds after the first: with ``maxFilesPerTrigger=1`` file i is batch i."""
    input_dir = Path(input_dir)
    input_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    base = int(time.time()) - batches - 1
    for b, lines in enumerate(generate_batches(records, batches, seed, update_fraction=update_fraction,
                                               malformed=malformed)):
        path = input_file(input_dir, b)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text("".join(line + "\n" for line in lines))
        os.utime(tmp, (base + b, base + b))
        tmp.rename(path)
        paths.append(path)
    return paths


def parse_line(line: str) -> tuple[Record | None, str | None]:
    """One input line -> (record, None) or (None, reason). The same rules as the job's quarantine split."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return None, "malformed JSON"
    if not isinstance(obj, dict):
        return None, "malformed JSON"
    reason = validate(obj.get("key"), obj.get("ts"), obj.get("partition"))
    if reason:
        return None, reason
    return Record(obj["key"], int(obj["ts"]), obj["partition"], obj.get("payload") or ""), None


def validate(key, ts, partition) -> str | None:
    """The reason a record is malformed, or None. ``ts`` must be an integer (not a bool, not a string)."""
    if not key:
        return "missing record key"
    if ts is None or isinstance(ts, bool) or not isinstance(ts, int):
        return "missing or non-integer ordering field ts"
    if not partition:
        return "missing partition"
    return None


def read_inputs(input_dir: Path) -> list[list[tuple[Record | None, str | None]]]:
    """Every input file (in name order), each as its parsed lines."""
    files = sorted(Path(input_dir).glob(INPUT_GLOB))
    return [[parse_line(line) for line in f.read_text().splitlines() if line.strip()] for f in files]


def spark_schema():
    """The schema the stream reads with; malformed lines land in ``_corrupt_record`` (PERMISSIVE)."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([
        StructField("key", StringType()),
        StructField("ts", LongType()),
        StructField("partition", StringType()),
        StructField("payload", StringType()),
        StructField("_corrupt_record", StringType()),
    ])
