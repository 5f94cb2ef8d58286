"""Helpers of the metadata-table tests: a table written by ``HudiTableWriter`` through the MDT commit hook (the
one the pipeline's coordinator calls), hudi-rs rows, a copy of a table without its MDT."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pyarrow as pa

from lakeio.hudiformat.table import HudiTableWriter
from lakeio.ondisk import mdt
from lakeio.ondisk.properties import format_properties, read_properties


class Clock:
    """Strictly increasing instant times (ms) from a fixed start."""

    def __init__(self, start_ms: int = 1_790_000_000_000):
        self.ms = start_ms

    def __call__(self) -> str:
        import datetime as dt

        self.ms += 7
        d = dt.datetime.fromtimestamp(self.ms / 1000, dt.timezone.utc)
        return d.strftime("%Y%m%d%H%M%S") + f"{self.ms % 1000:03d}"


def writer(path: Path, table_type: str = "MERGE_ON_READ", version: int = 8, *,
           record_delegates: bool = True) -> HudiTableWriter:
    """The tests' writer; it collects its writes' record delegates as the pipeline's tasks do while a table has a
    record index (``record_delegates=False``: a commit reads the keys from its files)."""
    return HudiTableWriter(path, table_type, version, record_key="key", ordering_field="ts",
                           partition_field="partition", table_name="mdt_t", record_delegates=record_delegates)


def batch(rng: random.Random, n: int, key_space: int, ts: int, deletes: float = 0.0) -> pa.Table:
    keys = rng.sample(range(key_space), n)
    return pa.table({"key": [f"k{k:06d}" for k in keys], "ts": [ts] * n,
                     "partition": [f"p{k % 3}" for k in keys], "v": [float(rng.random()) for _ in keys],
                     "_hoodie_is_deleted": [rng.random() < deletes for _ in keys]})


def commit(w: HudiTableWriter, clock: Clock, records: pa.Table, *, hook: bool = True) -> str:
    """One upsert committed through the MDT hook (as the pipeline's coordinator does)."""
    t = clock()
    w.start(t)
    r = w.write_batch(t, records, "upsert")
    c = clock()
    with mdt.committing(w.base_path, w.table_version, t, c, r.write_stats, enabled=hook, delegates=r.record_delegates):
        w.commit(t, c, r)
    return t


def make_table(path: Path, *, commits: int = 4, table_type: str = "MERGE_ON_READ", seed: int = 1,
               key_space: int = 60, per_commit: int = 25, deletes: float = 0.1, clock: Clock | None = None):
    clock = clock or Clock()
    rng = random.Random(seed)
    w = writer(path, table_type)
    for i in range(commits):
        commit(w, clock, batch(rng, per_commit, key_space, i, deletes if i else 0.0))
    return w, clock


def hudi_rs_rows(path: Path, options: dict | None = None) -> list[tuple]:
    from hudi import HudiTable

    t = HudiTable(str(Path(path).resolve()), options or {})
    out = []
    for b in t.read():
        cols = [b.column(c).to_pylist() for c in ("key", "ts", "partition", "v")]
        out.extend(zip(*cols))
    return sorted(out)


def hudi_rs_slices(path: Path) -> list[tuple]:
    from hudi import HudiTable

    return sorted((s.partition_path, s.file_id, s.base_file_name, tuple(sorted(s.log_file_names)))
                  for s in HudiTable(str(Path(path).resolve())).get_file_slices())


def copy_without_mdt(src: Path, dst: Path) -> Path:
    """A copy whose readers list the directories: ``.hoodie/metadata`` removed and the partitions blanked
    (what hudi-rs-oracle.md says makes hudi-rs list the folders)."""
    shutil.copytree(src, dst)
    shutil.rmtree(dst / ".hoodie" / "metadata")
    p = dst / ".hoodie" / "hoodie.properties"
    props = read_properties(p)
    props[mdt.PARTITIONS_KEY] = ""
    props[mdt.INFLIGHT_KEY] = ""
    p.write_bytes(format_properties(props, "copy without MDT").encode("latin-1"))
    return dst


def tree(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` with its bytes (to show nothing was written)."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(Path(path).rglob("*")) if p.is_file()}
