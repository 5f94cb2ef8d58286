"""The instant request's own timeout in the simulation (``coordinator.request_timeout_s``, issue #15 item 3).

An instant request queued on the coordinator's executor behind a slow commit times out after
``request_timeout_s`` (Flink's RPC ask timeout in Hudi 1.1; 0 falls back to ``ack_timeout_s``), independently
of ``write.commit.ack.timeout``. A bad value is one line naming the key, exit 2.
"""

from __future__ import annotations

import pytest

from lakeio.errors import UserError
from sim import config as cfg
from sim.engine import run_stream

SMALL = {
    "name": "small", "kind": "stream",
    "run": {"duration_s": 120.0, "quick_duration_s": 60.0},
    "source": {"rate_rps": 8000.0},
    "writers": {"parallelism": 4, "buffer_records": 1000, "per_record_us": 20.0},
    "checkpoint": {"interval_s": 10.0},
    "coordinator": {"commit_latency_s": 12.0},
    "truetime": {"max_skew_ms": 1.0},
}


def small(**coordinator) -> cfg.Experiment:
    raw = {k: (dict(v) if isinstance(v, dict) else v) for k, v in SMALL.items()}
    raw["coordinator"].update(coordinator)
    return cfg.from_dict(raw, "test")


def test_the_request_timeout_is_its_own_setting_not_the_ack_timeout():
    # ack timeout far longer than a commit: with the fallback (request_timeout_s = 0) no request times out ...
    calm = run_stream(small(ack_timeout_s=60.0), "blocking", 1, quick=True)
    assert calm.request_timeouts == 0 and calm.verdict == "ok", calm.verdict
    # ... with its own 5 s timeout, requests queued behind the 12 s commits time out (the ack timeout unchanged)
    short = run_stream(small(ack_timeout_s=60.0, request_timeout_s=5.0), "blocking", 1, quick=True)
    assert short.request_timeouts > 0
    assert short.verdict == "ok", short.verdict
    assert short.lost_records == 0 and short.duplicated_records == 0
    # and a short ack timeout no longer decides it when the request timeout is long
    long_req = run_stream(small(ack_timeout_s=5.0, request_timeout_s=60.0), "blocking", 1, quick=True)
    assert long_req.request_timeouts == 0 and long_req.verdict == "ok", long_req.verdict


def test_the_default_falls_back_to_the_ack_timeout():
    exp = small()
    assert exp.params["coordinator"]["request_timeout_s"] == 0.0
    fallback = run_stream(small(ack_timeout_s=5.0), "blocking", 1, quick=True)
    explicit = run_stream(small(ack_timeout_s=5.0, request_timeout_s=5.0), "blocking", 1, quick=True)
    assert fallback.request_timeouts == explicit.request_timeouts > 0


@pytest.mark.parametrize("value, word", [(-1.0, "out of range"), ("10", "not valid"), (True, "not valid"),
                                         (float("nan"), "not valid"), (86_400.5, "out of range")])
def test_bad_request_timeouts_are_refused_naming_the_key(value, word):
    with pytest.raises(UserError) as exc:
        small(request_timeout_s=value)
    msg = str(exc.value)
    assert "coordinator.request_timeout_s" in msg and word in msg and "\n" not in msg, msg


def test_cli_refuses_a_bad_request_timeout_with_one_line_and_exit_2(tmp_path, capsys):
    from hoodie_lab.cli import main

    f = tmp_path / "bad.toml"
    f.write_text("[coordinator]\nrequest_timeout_s = -3\n")
    assert main(["simulate", str(f), "--out", str(tmp_path / "out")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "coordinator.request_timeout_s" in lines[0], lines
    assert not (tmp_path / "out").exists()


def test_blocking_mode_queues_the_released_request_on_the_thread_that_commits():
    """Blocking mode (issue #15 item 3): the CommitGuard's wait is the writer's ``blocked`` status (its own
    process, no coordinator thread held: the spec's ``request_thread="own"``); once released, its request
    queues on the one thread that also commits, so behind a 12 s commit it times out after 5 s and fails its
    task (model fault ``request-timeout``). Async mode answers requests on a thread of their own."""
    from sim.engine import StreamSim

    exp = small(request_timeout_s=5.0)
    blocking = StreamSim(exp, "blocking", 1, quick=True)
    assert blocking.request_thread is blocking.commit_thread
    assert blocking.pcfg.blocking and blocking.pcfg.request_thread == "own" and not blocking.pcfg.executor_queue
    assert StreamSim(exp, "async", 1, quick=True).request_thread is not StreamSim(exp, "async", 1).commit_thread
    res = blocking.run()
    assert res.request_timeouts > 0
    assert sum(ev.kind == "request-timeout" for ev in blocking.events) == res.request_timeouts
    assert res.verdict == "ok" and res.lost_records == 0 and res.duplicated_records == 0
