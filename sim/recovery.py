"""Crash at every protocol step; time to recover; exactly-once (lost and duplicated records must be 0).

For each mode, crash target (a write task, the coordinator, the whole job) and protocol step (every event
kind the simulation applies), one run crashes right *before* and one right *after* the ``occurrence``-th
application of that step (:class:`sim.engine.CrashPlan`): "before" is a crash in the middle of the step
(its effect never happens), "after" a crash just after it. The model performs the failover (restore from
the last completed checkpoint, bootstrap events, recommits, rollbacks); the simulation charges the restart
delay and rewinds the sources to what the model restored.

Per run: whether the step occurred, the time to recover (crash -> the table has committed every record
the writers had consumed at the crash), lost and duplicated records after the drain (must be 0), and the
model's verdict (a violation writes the trace and its replay command).
"""

from __future__ import annotations

from pathlib import Path

from .engine import CrashPlan, run_stream
from .seeds import derive_seed

#: Every protocol step the stream simulation applies (``model.protocol`` event kinds).
STEPS = ("ingest", "request-instant", "flush", "trigger-checkpoint", "snapshot-task", "complete-checkpoint",
         "deliver-ack", "clean", "lose-ack")


def plans(exp, quick: bool) -> list[CrashPlan]:
    r = exp.params["recovery"]
    steps = STEPS if "all" in r["steps"] else tuple(r["steps"])
    whens = ("after",) if quick else ("before", "after")
    return [CrashPlan(target=t, step=s, when=w, occurrence=r["occurrence"])
            for t in r["targets"] for s in steps for w in whens]


def run(exp, seed: int, quick: bool, modes, progress=None, trace_dir: Path | None = None) -> list[dict]:
    unknown = [s for s in exp.params["recovery"]["steps"] if s != "all" and s not in STEPS]
    if unknown:
        from lakeio.errors import UserError

        raise UserError(f"{exp.source}: recovery.steps: {unknown[0]!r} not allowed; allowed: all, {', '.join(STEPS)}")
    todo = [(m, p) for m in modes for p in plans(exp, quick)]
    step = progress("crash runs", len(todo)) if progress else None
    rows = []
    for mode, plan in todo:
        s = derive_seed(seed, "recovery", mode, plan.target, plan.step, plan.when)
        res = run_stream(exp, mode, s, quick=quick, keep_series=False, crash_plan=plan, failed_trace_dir=trace_dir)
        crashed = bool(res.crash_log)
        rec = res.crash_log[0].get("recovery_s", float("nan")) if crashed else float("nan")
        rows.append({"mode": mode, "target": plan.target, "step": plan.step, "when": plan.when,
                     "occurrence": plan.occurrence, "crashed": crashed,
                     "crash_at_s": res.crash_log[0]["t"] if crashed else float("nan"),
                     "recovery_s": rec, "lost_records": res.lost_records,
                     "duplicated_records": res.duplicated_records, "invariants": res.verdict,
                     "replay": res.replay or "", "seed": s, "commits": res.summary["commits"]})
        if step:
            step()
    return rows
