"""The stall bound (``ProtocolConfig.stall_bound``, invariant ``liveness.stall``).

After faults stop, a run that makes progress only through a ``write.commit.ack.timeout`` failover
(``instant-timeout``) has stalled: the drain reaches quiescence, but ``liveness.stall`` reports the
timeouts when the configured bound is exceeded. Blocking mode stalls after a lost ack; the async design
does not (the next ack subsumes the lost one).
"""

from __future__ import annotations

from engine import System
from engine.invariants import check_drained as engine_drained
from hoodie_lab.cli import main as cli_main
from lakeio.traces import write_trace
from model.invariants.protocol import check_drained
from model.protocol import (CompleteCheckpoint, Ingest, LoseAck, RequestInstant, SnapshotTask, TriggerCheckpoint,
                            spec, variant)

#: one task, one record: checkpoint 1 flushes it under the first instant, then its ack is lost
LOST_ACK = [Ingest(0), TriggerCheckpoint(), RequestInstant(0), SnapshotTask(0), CompleteCheckpoint(), LoseAck(1),
            Ingest(0)]
BOUNDS = dict(parallelism=1, records=2, buffer_size=1, max_checkpoints=2, faults=frozenset({"lost-ack"}))


def drained(cfg):
    st = spec.init(cfg)
    for ev in LOST_ACK:
        st = spec.step(st, ev)
    st, events = spec.drain(st)
    return st, LOST_ACK + events, {v.invariant: v for v in check_drained(st)}


def test_blocking_mode_resumes_only_through_the_timeout_and_the_stall_bound_reports_it(tmp_path, capsys):
    st, events, verdicts = drained(variant("blocking-lost-ack-stall", **BOUNDS))
    assert "instant-timeout" in [e.kind for e in events]
    # the run does drain (records exactly once, quiescent) ...
    assert verdicts["exactly-once.drained"].holds and verdicts["liveness"].holds
    # ... but only through a timeout-triggered failover: a stall
    assert not verdicts["liveness.stall"].holds
    assert "1 instant-timeout failover(s) after faults stopped (stall bound 0)" in verdicts["liveness.stall"].detail
    # the engine judges the same
    s = System(variant("blocking-lost-ack-stall", **BOUNDS))
    for ev in LOST_ACK:
        s.apply(ev)
    s.drain()
    assert {v.invariant: v.holds for v in engine_drained(s)} == {k: v.holds for k, v in verdicts.items()}
    path = write_trace(tmp_path / "stall.jsonl", st.config, events, seed=0, driver="manual")
    assert cli_main(["replay", str(path)]) == 1
    assert "liveness.stall" in capsys.readouterr().out


def test_without_a_stall_bound_the_same_run_is_not_judged():
    _, _, verdicts = drained(variant("hudi-1.1-blocking", **BOUNDS))
    assert verdicts["liveness.stall"].holds and "1 instant timeout(s)" in verdicts["liveness.stall"].detail


def test_the_async_design_needs_no_timeout_after_a_lost_ack():
    st, events, verdicts = drained(variant("hudi-1.1", stall_bound=0, **BOUNDS))
    assert "instant-timeout" not in [e.kind for e in events]
    assert all(v.holds for v in verdicts.values()), [str(v) for v in verdicts.values()]
