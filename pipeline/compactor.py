"""The compaction job beside the pipelines (``hoodie-lab pipeline compact --table PATH``): one compaction of a
merge-on-read table of version 8 (:mod:`lakeio.hudiformat.compaction`), its plan and its commit under the
table's transaction lock with times from the writers' shared TrueTime (:mod:`pipeline.multiwriter`)."""

from __future__ import annotations

from pathlib import Path

from lakeio.errors import UserError
from lakeio.ondisk import mdt
from model.concurrency import rules, settings as cs
from pipeline.coordinator import TABLE_NAME, WallTrueTime, check_table_path
from pipeline.multiwriter import LOCK_PROVIDER, SharedTimeFloor, txn_lock


def compact(table: Path, progress=print) -> dict:
    """One compaction beside the writers (1.x decoupled scheduling, RFC-66): under the transaction lock the plan
    time ``tc`` is drawn (above every time a writer drew) and the plan written -- so every log a plan names is
    of a write completed before ``tc``, and every write completing later has a completion time after ``tc``
    and joins the new slice; the new base files are written outside the lock; the completion time is drawn
    and the commit written under the lock, after its metadata-table deltacommit (the new base files in the
    ``files`` partition), as every writer's commit. Returns what it did."""
    from lakeio.hudiformat import compaction
    from lakeio.hudiformat.table import HudiTableWriter
    from lakeio.ondisk.properties import read_properties

    table = Path(table)
    props = table / ".hoodie" / "hoodie.properties"
    if not props.exists():
        raise UserError(f"--table {table}: not a Hudi table (no .hoodie/hoodie.properties)")
    p = read_properties(props)
    if p.get("hoodie.table.type") != "MERGE_ON_READ" or p.get("hoodie.table.version") != "8":
        raise UserError(f"--table {table}: compaction runs on merge-on-read tables of version 8 (this one: "
                        f"{p.get('hoodie.table.type')} v{p.get('hoodie.table.version')})")
    check_table_path(table, 8)  # a pipeline's table, and no single-writer run holding it
    s = cs.validate(cs.Settings(mode=cs.NBCC, lock_provider=LOCK_PROVIDER))
    w = HudiTableWriter(table, "mor", 8, record_key="key", ordering_field="ts", partition_field="partition",
                        table_name=TABLE_NAME)
    times = WallTrueTime(None, shared=SharedTimeFloor(table))
    with txn_lock(table):
        w.refresh()
        pending = [rules.WriteSummary(t, a, rules.UPSERT, frozenset()) for t, a, _ in w.pending_instants()]
        why = rules.may_schedule_compaction(s, pending)
        if why is not None:  # 1.x: never (kept: the rule decides, not this driver)
            raise UserError(f"--table {table}: compaction not scheduled: {why}")
        tc = times.next_time()
        ops = compaction.schedule(w, tc)
    if ops is None:
        progress("compaction: nothing to compact (no file slice with log files)")
        return {"instant": None, "file_groups": 0}
    progress(f"compaction {tc}: planned {len(ops)} file group(s), "
             f"{sum(len(o['deltaFilePaths']) for o in ops)} log file(s); pending writes {[x.instant for x in pending]}")
    stats = compaction.execute(w, tc, ops)
    with txn_lock(table):
        done = times.next_time()
        with mdt.committing(table, 8, tc, done, stats):  # the MDT deltacommit first, in the same transaction
            compaction.complete(w, tc, done, stats)
    progress(f"compaction {tc}: completed at {done}")
    return {"instant": tc, "completion": done, "file_groups": len(ops),
            "logs": sum(len(o["deltaFilePaths"]) for o in ops)}



__all__ = ["compact"]
