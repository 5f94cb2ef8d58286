"""The breadth-first explorer (hoodie_lab/explore.py) on toy models, then on the protocol System."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import deque

import pytest

from hoodie_lab.cli import main as cli_main
from checker.explorer import Model, Property, draw_graph, explore
from model.invariants import Verdict


# --------------------------------------------------------------------------- toy models
class Jugs(Model):
    """Die Hard water jugs (3 and 5 gallons). Shortest way to get 4 gallons: 6 pours."""

    def init_states(self):
        return [(0, 0)]

    def actions(self, s):
        return ["fill-small", "fill-big", "empty-small", "empty-big", "small-to-big", "big-to-small"]

    def next_state(self, s, a):
        small, big = s
        if a == "fill-small":
            return (3, big)
        if a == "fill-big":
            return (small, 5)
        if a == "empty-small":
            return (0, big)
        if a == "empty-big":
            return (small, 0)
        if a == "small-to-big":
            pour = min(small, 5 - big)
            return (small - pour, big + pour)
        pour = min(big, 3 - small)
        return (small + pour, big - pour)

    def properties(self):
        return [Property.always("big-is-never-4",
                                lambda s: Verdict("big-is-never-4", s[1] != 4, f"jugs {s}"))]


class Grid(Model):
    """Walk right/up on an n x n grid: n*n states, 2n(n-1) transitions, depth 2(n-1), one terminal."""

    def __init__(self, n, forbid=None):
        self.n, self.forbid = n, forbid

    def init_states(self):
        return [(0, 0)]

    def actions(self, s):
        x, y = s
        return [a for a, ok in (("right", x + 1 < self.n), ("up", y + 1 < self.n)) if ok]

    def next_state(self, s, a):
        x, y = s
        return (x + 1, y) if a == "right" else (x, y + 1)

    def properties(self):
        props = [Property.sometimes("reaches-corner", lambda s: s == (self.n - 1, self.n - 1))]
        if self.forbid is not None:
            props.append(Property.always("avoids-forbidden", lambda s: s != self.forbid))
        return props


class RacyCounter(Model):
    """Two processes each do `tmp = x; x = tmp + 1` non-atomically. At the end x must be 2.

    The lost update needs both reads before either write: shortest counterexample has 4 steps.
    State: (x, pc0, tmp0, pc1, tmp1).
    """

    def init_states(self):
        return [(0, 0, 0, 0, 0)]

    def actions(self, s):
        return [i for i in (0, 1) if s[1 + 2 * i] < 2]

    def next_state(self, s, i):
        s = list(s)
        pc, tmp = 1 + 2 * i, 2 + 2 * i
        if s[pc] == 0:
            s[tmp] = s[0]
        else:
            s[0] = s[tmp] + 1
        s[pc] += 1
        return tuple(s)

    def fingerprint(self, s):
        return s

    def properties(self):
        return [Property.terminal("no-lost-update", lambda s: Verdict("no-lost-update", s[0] == 2, f"x={s[0]}"))]


def reachable(model):
    """Independent closure (plain set, no explorer code) to cross-check state counts."""
    seen = set(model.init_states())
    todo = deque(seen)
    while todo:
        s = todo.popleft()
        for a in model.actions(s):
            t = model.next_state(s, a)
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def test_jugs_shortest_counterexample_is_six_pours():
    res = explore(Jugs())
    ce = res.counterexample
    assert ce is not None and ce.property == "big-is-never-4"
    assert ce.depth == 6
    assert ce.states[0] == (0, 0) and ce.states[-1][1] == 4
    # the path really leads there
    s = ce.states[0]
    for a in ce.actions:
        s = Jugs().next_state(s, a)
    assert s == ce.states[-1]
    assert "jugs (" in ce.detail
    assert res.stop_reason == "violation" and not res.complete


def test_jugs_full_space_matches_independent_closure():
    class Safe(Jugs):
        def properties(self):
            return []

    res = explore(Safe())
    assert res.complete and res.counterexample is None
    assert res.states == len(reachable(Safe()))
    assert res.transitions == 6 * res.states


@pytest.mark.parametrize("n", [1, 2, 5])
def test_grid_counts_depth_and_sometimes_example(n):
    res = explore(Grid(n))
    assert res.complete
    assert res.states == n * n
    assert res.transitions == 2 * n * (n - 1)
    assert res.max_depth == 2 * (n - 1)
    assert res.terminal_states == 1
    ex = res.discoveries["reaches-corner"]
    assert not ex.is_counterexample and ex.depth == 2 * (n - 1)
    assert res.counterexample is None


def test_grid_forbidden_cell_found_at_manhattan_distance():
    res = explore(Grid(6, forbid=(3, 2)))
    ce = res.counterexample
    assert ce.states[-1] == (3, 2) and ce.depth == 5
    assert sorted(ce.actions) == ["right"] * 3 + ["up"] * 2


def test_terminal_property_shortest_lost_update():
    res = explore(RacyCounter())
    ce = res.counterexample
    assert ce is not None and ce.property == "no-lost-update" and ce.depth == 4
    # both reads happen before the first write
    assert ce.states[-1][0] == 1
    assert "x=1" in ce.detail


def test_keep_going_collects_every_property_and_visits_everything():
    res = explore(Grid(4, forbid=(1, 1)), stop_on_violation=False)
    assert res.complete and res.states == 16
    assert set(res.discoveries) == {"reaches-corner", "avoids-forbidden"}


def test_max_states_truncates_and_says_so():
    res = explore(Grid(10), max_states=7)
    assert res.states == 7 and res.stop_reason == "max-states" and not res.complete


def test_max_depth_truncates_and_says_so():
    res = explore(Grid(10), max_depth=3)
    assert res.stop_reason == "max-depth" and not res.complete
    assert res.max_depth == 3 and res.states == 10  # cells with x+y <= 3


def test_nondeterministic_model_is_detected_when_rebuilding_a_path():
    class Flaky(Grid):
        calls = 0

        def actions(self, s):
            acts = super().actions(s)
            Flaky.calls += 1
            return acts if Flaky.calls % 3 else list(reversed(acts))

    with pytest.raises(RuntimeError, match="not deterministic"):
        explore(Flaky(6, forbid=(4, 4)))


def test_compact_fingerprints_give_the_same_search():
    exact = explore(Jugs(), stop_on_violation=False)
    compact = explore(Jugs(), stop_on_violation=False, compact=True)
    assert (compact.states, compact.transitions, compact.max_depth) == (exact.states, exact.transitions,
                                                                         exact.max_depth)
    assert compact.counterexample.actions == exact.counterexample.actions


def test_garbage_collector_is_paused_only_during_the_search():
    import gc

    seen = []
    explore(Grid(20), progress=lambda r, q: seen.append(gc.isenabled()), progress_every=50)
    assert seen and not any(seen)
    assert gc.isenabled()


def test_progress_callback_is_called():
    seen = []
    explore(Grid(30), progress=lambda r, q: seen.append(r.states), progress_every=100)
    assert seen and seen[-1] == 900 and seen == sorted(seen)


@pytest.mark.parametrize("ext", ["png", "svg"])
def test_graph_drawing(tmp_path, ext):
    res = explore(Grid(4, forbid=(2, 1)), record_graph=True)
    g = res.graph
    assert g.nodes[0]["initial"] and g.nodes[res.counterexample.state_id]["violation"] == "avoids-forbidden"
    out = tmp_path / f"g.{ext}"
    draw_graph(res, str(out))
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG") if ext == "png" else b"<svg" in data[:2000]


# --------------------------------------------------------------------------- the protocol System

TINY = ["--writers", "1", "--checkpoints", "2", "--records", "2", "--faults", "all", "--crashes", "1"]


def run_cli(argv, capsys):
    """Run ``hoodie-lab ARGV`` in-process: (exit code, stdout, stderr)."""
    try:
        rc = cli_main(argv)
    except SystemExit as exc:  # argparse errors
        rc = exc.code
    out = capsys.readouterr()
    return rc, out.out, out.err


def correct_variants():
    from model.protocol.variants import CORRECT

    return list(CORRECT)


def broken_variants():
    from model.protocol.variants import BROKEN

    # async-eager breaks I14 in the initial state (a configuration-level violation): its
    # counterexample has no events, and replay judges the initial state as step 0.
    return list(BROKEN)


@pytest.mark.parametrize("name", correct_variants())
def test_tiny_bound_is_exhaustive_without_violation_for_correct_variants(name, tmp_path, capsys):
    rc, out, err = run_cli(["explore", "--variant", name, *TINY, "--json", "--out", str(tmp_path)], capsys)
    rep = json.loads(out)
    assert rc == 0, rep["violation"]
    assert rep["complete"] and rep["stop_reason"] == "exhausted" and rep["violation"] is None
    assert rep["states"] > 100 and rep["transitions"] >= rep["states"] - 1 and rep["max_depth"] > 5
    assert rep["drained_checks"] > 0  # exactly-once / liveness were judged somewhere
    assert sorted(rep["config"]["faults"]) == sorted(
        ["lost-ack", "late-ack", "abort", "task-crash", "coordinator-crash", "full-restart", "lost-event",
         "request-timeout"])
    assert not list(tmp_path.iterdir())  # no counterexample, no trace


def test_hudi_default_text_report(tmp_path, capsys):
    rc, out, _ = run_cli(["explore", "--writers", "2", "--checkpoints", "1", "--records", "2",
                          "--faults", "lost-ack,task-crash", "--out", str(tmp_path)], capsys)
    assert rc == 0
    assert out.startswith("explore hudi-1.1: async, tv8, lazy, commit rule '<'; 2 writer(s), 1 checkpoint(s)")
    assert "distinct states" in out and "states/s" in out
    assert "exhaustive: every state within the bound visited; no invariant violated" in out


def test_mode_and_table_version_select_the_design(tmp_path, capsys):
    rc, out, _ = run_cli(["explore", "--mode", "blocking", "--table-version", "6", "--writers", "2",
                          "--checkpoints", "1", "--records", "2", "--faults", "lost-ack", "--json"], capsys)
    rep = json.loads(out)
    assert rc == 0 and rep["complete"]
    # --mode blocking without --variant is Hudi's blocking design (EAGER failed writes, COW)
    assert rep["variant"] == "hudi-1.1-blocking"
    cfg = rep["config"]
    assert (cfg["mode"], cfg["table_version"], cfg["failed_writes"], cfg["faults"]) == ("blocking", 6, "eager",
                                                                                        ["lost-ack"])


def test_broken_commit_eq_counterexample_replays_through_the_replay_command(tmp_path):
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "explore", "--variant", "broken-commit-eq",
                        "--writers", "1", "--checkpoints", "2", "--json", "--out", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    v = json.loads(r.stdout)["violation"]
    assert v["invariant"] == "I11.subsume"
    # the shortest way: one checkpoint whose ack commits only key 1, leaving key -1 buffered
    assert [e["kind"] for e in v["events"]] == ["trigger-checkpoint", "request-instant", "snapshot-task",
                                                "complete-checkpoint", "deliver-ack"]
    assert v["replay"] == f"hoodie-lab replay {v['trace']}" and v["replay_reports"] == "I11.subsume"
    header = json.loads(open(v["trace"]).readline())
    assert header["driver"] == "explore" and header["config"]["commit_rule"] == "=="
    rr = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "replay", v["trace"], "--json"],
                        capture_output=True, text=True)
    assert rr.returncode == 1, rr.stderr
    again = json.loads(rr.stdout)["violation"]
    assert again["invariant"] == "I11.subsume" and again["step"] == v["depth"] == 5


@pytest.mark.parametrize("name", broken_variants())
def test_every_broken_variant_yields_a_replayable_counterexample(name, tmp_path):
    """Each broken variant, at a small bound with the faults it needs, gives a shortest counterexample
    whose trace the replay driver reproduces (same invariant, same step unless judged after a drain)."""
    from checker import SystemModel, explore
    from checker.replay import replay
    from lakeio.traces import load_trace, write_trace
    from model.protocol.variants import VARIANTS

    v = VARIANTS[name]
    found = None
    for writers in (1, 2):
        cfg = v.config(parallelism=writers, max_checkpoints=2, faults=frozenset(v.faults_needed), max_crashes=1)
        model = SystemModel(cfg)
        res = explore(model, max_states=200_000)
        if res.counterexample is not None:
            found = (cfg, model, res.counterexample)
            break
    assert found is not None, f"{name}: no counterexample at 1-2 writers x 2 checkpoints"
    cfg, model, ce = found
    path = write_trace(tmp_path / "ce.jsonl", cfg, model.trace_events(ce), seed=0, driver="explore")
    again = replay(load_trace(path))
    assert not again.ok and again.violation.invariant == ce.property
    if not again.at_end:
        assert again.step == ce.depth


def test_drained_counterexample_trace_includes_the_drain(tmp_path):
    """A violation judged after draining (exactly-once) is written with the drain's events, starting
    with stop-faults, so the replay judges the drained invariants at the end and agrees."""
    from checker import SystemModel, explore
    from checker.replay import replay
    from lakeio.traces import load_trace, write_trace
    from model.protocol import variant

    class DrainOnly(SystemModel):
        def properties(self):
            return [p for p in super().properties() if p.name == "drained"]

    cfg = variant("broken-commit-le", parallelism=1, max_checkpoints=2, faults=frozenset({"full-restart"}))
    model = DrainOnly(cfg)
    ce = explore(model).counterexample
    assert ce is not None and ce.property == "exactly-once.drained"
    events = model.trace_events(ce)
    assert events[:ce.depth] == ce.actions and events[ce.depth].kind == "stop-faults"
    again = replay(load_trace(write_trace(tmp_path / "d.jsonl", cfg, events, seed=0, driver="explore")))
    assert again.at_end and again.violation.invariant == "exactly-once.drained"
    # the rule is to blame: Hudi's rule '<' at the same bound drains clean
    fixed = explore(DrainOnly(cfg.with_(commit_rule="<")))
    assert fixed.complete and fixed.counterexample is None and fixed.settled_states > 0


def test_an_enabled_event_the_system_refuses_is_a_violation():
    """If enabled_events() lists an event that apply() then refuses, the explorer reports it (with the
    shortest path to it) instead of crashing."""
    from checker import Refused, SystemModel, explore
    from model.protocol import DeliverAck, variant

    class Lying(SystemModel):
        def actions(self, s):
            acts = list(s.enabled_events())
            return acts + [DeliverAck(99)] if s.step_count == 2 else acts

    res = explore(Lying(variant("hudi-1.1", parallelism=1, max_checkpoints=1, faults=frozenset())))
    ce = res.counterexample
    assert ce.property == "model.refused:deliver-ack.not-enabled" and ce.depth == 3
    assert isinstance(ce.states[-1], Refused) and ce.actions[-1] == DeliverAck(99)


def test_graph_of_a_tiny_bound(tmp_path, capsys):
    png = tmp_path / "g.png"
    rc, out, _ = run_cli(["explore", "--variant", "broken-commit-eq", "--writers", "1", "--checkpoints", "2",
                          "--graph", str(png), "--out", str(tmp_path)], capsys)
    assert rc == 1 and f"graph: {png}" in out
    assert png.read_bytes().startswith(b"\x89PNG")
    svg = tmp_path / "g.svg"
    rc, out, _ = run_cli(["explore", "--writers", "1", "--checkpoints", "1", "--records", "2", "--faults",
                          "lost-ack", "--graph", str(svg), "--json"], capsys)
    assert rc == 0 and json.loads(out)["graph"] == str(svg) and b"<svg" in svg.read_bytes()[:2000]


@pytest.mark.parametrize("argv, names", [
    (["--writers", "0"], "--writers: 0 is out of range; allowed 1..8"),
    (["--checkpoints", "-1"], "--checkpoints: -1 is out of range; allowed 0..20"),
    (["--crashes", "11"], "--crashes: 11 is out of range; allowed 0..10"),
    (["--records", "101"], "--records: 101 is out of range"),
    (["--max-states", "0"], "--max-states: 0 is out of range"),
    (["--faults", "lost-ack,meteor"], "--faults: unknown fault 'meteor'; allowed: lost-ack, late-ack"),
    (["--variant", "nope"], "--variant: unknown variant 'nope'; known: hudi-1.1"),
    (["--writers", "3", "--graph", "g.png"], "--graph: only for tiny bounds; --writers is 3, allowed 0..2"),
    (["--writers", "1", "--graph", "g.pdf"], "--graph: g.pdf: the file name must end in .png or .svg"),
    (["--mode", "sync"], "argument --mode: invalid choice: 'sync'"),
    (["--table-version", "9"], "argument --table-version: invalid choice: 9"),
    (["--writers", "two"], "argument --writers: invalid int value: 'two'"),
])
def test_bad_bounds_exit_2_with_one_line(argv, names, capsys):
    rc, out, err = run_cli(["explore", *argv], capsys)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert names in err


def test_bad_bound_through_the_real_command_line():
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "explore", "--writers", "0"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == "hoodie-lab explore: error: --writers: 0 is out of range; allowed 1..8"


def test_graph_refuses_a_state_graph_too_big_to_draw(tmp_path, capsys, monkeypatch):
    import hoodie_lab.commands.explore as cmd

    monkeypatch.setattr(cmd, "GRAPH_MAX_STATES", 30)
    rc, out, err = run_cli(["explore", "--writers", "1", "--checkpoints", "1", "--records", "2", "--faults",
                            "lost-ack", "--graph", str(tmp_path / "g.png")], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "--graph: the state graph has more than 30 states" in err
    assert not (tmp_path / "g.png").exists()


def test_max_states_reports_not_exhaustive(capsys):
    rc, out, _ = run_cli(["explore", "--writers", "2", "--checkpoints", "2", "--max-states", "500"], capsys)
    assert rc == 0 and "NOT exhaustive (stopped: max-states" in out and "500 distinct states" in out


#: Messages in flight (async event delivery): each broken variant's shortest counterexample at 1 writer x 2
#: checkpoints x 1 record, and the correct design exhaustive at the same bound with the same faults.
ASYNC_EVENT_CASES = [
    ("ack-overtakes-events", "none", "I11.events-before-ack",
     ["trigger-checkpoint", "request-instant", "snapshot-task", "complete-checkpoint"]),
    ("stale-attempt-events", "coordinator-crash", "I12.state-coverage",
     ["trigger-checkpoint", "request-instant", "snapshot-task", "crash-coordinator", "deliver-event",
      "deliver-event", "trigger-checkpoint", "request-instant", "snapshot-task", "deliver-event", "deliver-event",
      "complete-checkpoint"]),
    ("clean-during-restart", "coordinator-crash", "exactly-once.drained",
     ["ingest", "trigger-checkpoint", "request-instant", "snapshot-task", "deliver-event", "deliver-event",
      "complete-checkpoint", "trigger-checkpoint", "crash-coordinator", "clean", "deliver-event"]),
]


@pytest.mark.parametrize("name,faults,invariant,kinds", ASYNC_EVENT_CASES, ids=[c[0] for c in ASYNC_EVENT_CASES])
def test_async_event_variants_shortest_counterexample_and_the_design_passes(name, faults, invariant, kinds, tmp_path,
                                                                           capsys):
    bound = ["--writers", "1", "--checkpoints", "2", "--records", "1", "--faults", faults, "--crashes", "1"]
    rc, out, _ = run_cli(["explore", "--variant", name, *bound, "--json", "--out", str(tmp_path)], capsys)
    rep = json.loads(out)
    assert rc == 1
    v = rep["violation"]
    assert v["invariant"] == invariant
    assert [e["kind"] for e in v["events"]][:len(kinds)] == kinds and v["depth"] == len(kinds)
    assert v["replay_reports"] == invariant
    rc, out, _ = run_cli(["explore", "--variant", "hudi-1.1-async-events", *bound, "--json", "--out",
                          str(tmp_path / "ok")], capsys)
    rep = json.loads(out)
    assert rc == 0 and rep["complete"] and rep["violation"] is None and rep["states"] > 100


@pytest.mark.parametrize("name", ["blocking-lost-ack-stall"])  # 0.x: test_coordinator_start_stall_... below
def test_stall_bound_blocking_counterexample_and_the_async_design_passes(name, tmp_path, capsys):
    """The blocking designs (1.1 CommitGuard, 0.x coordinator-started instants): the shortest settled run whose
    drain needs an instant-timeout failover; the async design explored with the same stall bound 0, bounds and
    faults has none."""
    from checker import SystemModel, explore
    from model.protocol import variant

    bound = ["--writers", "1", "--checkpoints", "2", "--records", "2", "--faults", "lost-ack"]
    rc, out, _ = run_cli(["explore", "--variant", name, *bound, "--json", "--out",
                          str(tmp_path)], capsys)
    v = json.loads(out)["violation"]
    assert rc == 1 and v["invariant"] == "liveness.stall" and v["replay_reports"] == "liveness.stall"
    kinds = [e["kind"] for e in v["events"]]
    assert kinds[v["depth"] - 1] == "lose-ack"  # the drain after it needs the instant-timeout failover
    trace_kinds = [json.loads(line).get("kind") for line in open(v["trace"]).read().splitlines()[1:]]
    assert "instant-timeout" in trace_kinds[v["depth"]:]
    for name in ("hudi-1.1", "hudi-1.1-async-events"):
        cfg = variant(name, parallelism=1, max_checkpoints=2, records=2, faults=frozenset({"lost-ack"}), stall_bound=0)
        res = explore(SystemModel(cfg), stop_on_violation=False)
        assert res.complete and not res.discoveries and res.states > 50


def test_coordinator_start_stall_and_coverage_counterexamples_at_the_same_bound(tmp_path, capsys):
    """0.x coordinator-started instants after a lost ack (issue #15 item 2): the shortest counterexample is the
    coverage finding (an interval without data reuses the instant and replaces the task state holding the
    un-acked statuses), and the shortest stall is a settled run ending in the lost ack whose drain needs the
    instant-timeout failover of the task with new data."""
    from checker import SystemModel, explore
    from model.protocol import variant

    bound = ["--writers", "1", "--checkpoints", "2", "--records", "2", "--faults", "lost-ack"]
    rc, out, _ = run_cli(["explore", "--variant", "coordinator-start-lost-ack-stall", *bound, "--json", "--out",
                          str(tmp_path)], capsys)
    v = json.loads(out)["violation"]
    assert rc == 1 and v["invariant"] == "I12.state-coverage" and v["depth"] == 10
    assert [e["kind"] for e in v["events"]] == ["ingest", "trigger-checkpoint", "request-instant", "snapshot-task",
                                                "complete-checkpoint", "lose-ack", "trigger-checkpoint",
                                                "request-instant", "snapshot-task", "complete-checkpoint"]
    cfg = variant("coordinator-start-lost-ack-stall", parallelism=1, max_checkpoints=2, records=2,
                  faults=frozenset({"lost-ack"}))
    model = SystemModel(cfg)
    res = explore(model, stop_on_violation=False)
    assert res.complete and set(res.discoveries) == {"I12.state-coverage", "exactly-once.drained", "liveness.stall"}
    stall = res.discoveries["liveness.stall"]
    kinds = [e.kind for e in stall.actions]
    assert kinds[-1] == "lose-ack" and "ingest" in kinds[kinds.index("complete-checkpoint") + 1:]
    assert "instant-timeout" in [e.kind for e in model.trace_events(stall)][stall.depth:]
    # the design's bound (1 timeout after a lost ack) holds there; without lost acks even bound 0 holds
    for name, faults, stall_bound in (("hudi-0.x-coordinator-start", {"lost-ack"}, 1),
                                      ("hudi-0.x-coordinator-start", set(), 0)):
        res = explore(SystemModel(variant(name, parallelism=1, max_checkpoints=2, records=2,
                                          faults=frozenset(faults), stall_bound=stall_bound)),
                      stop_on_violation=False)
        assert res.complete and "liveness.stall" not in res.discoveries and res.states > 50


def test_no_commit_ack_stalls_without_any_fault_and_the_design_passes(tmp_path, capsys):
    """An empty checkpoint without the CommitAckEvent (broken variant no-commit-ack): the shortest run whose drain
    needs an instant-timeout failover, no fault at all; the 0.x design with the ack passes the same bound with
    stall bound 0, exhaustively."""
    bound = ["--writers", "1", "--checkpoints", "2", "--records", "2", "--faults", "none"]
    rc, out, _ = run_cli(["explore", "--variant", "no-commit-ack", *bound, "--json", "--out", str(tmp_path)], capsys)
    v = json.loads(out)["violation"]
    assert rc == 1 and v["invariant"] == "liveness.stall" and v["replay_reports"] == "liveness.stall"
    kinds = [e["kind"] for e in v["events"]]
    # checkpoint 1 commits (the coordinator starts the next instant), checkpoint 2 is empty (its instant reused,
    # no CommitAckEvent), and the record read meanwhile waits for an instant no commit will start
    assert kinds == ["ingest", "trigger-checkpoint", "request-instant", "snapshot-task", "complete-checkpoint",
                     "deliver-ack", "trigger-checkpoint", "request-instant", "snapshot-task", "ingest",
                     "complete-checkpoint", "deliver-ack"]
    trace_kinds = [json.loads(line).get("kind") for line in open(v["trace"]).read().splitlines()[1:]]
    assert "instant-timeout" in trace_kinds[v["depth"]:]
    rc, out, _ = run_cli(["explore", "--variant", "hudi-0.x-coordinator-start", *bound, "--json", "--out",
                          str(tmp_path / "ok")], capsys)
    rep = json.loads(out)
    assert rc == 0 and rep["complete"] and rep["violation"] is None and rep["config"]["stall_bound"] == 1


def test_checkpoint_overtaking_the_notification_loses_0x_data_and_the_fifo_design_passes(tmp_path, capsys):
    """The coordinator's executor is one FIFO thread (issue #15 item 3): without that order (broken variant
    checkpoint-overtakes-notification) 0.x loses an un-acked interval after a crash, no lost ack needed; the
    shortest counterexample is the coverage break, and the design passes the same bound exhaustively."""
    bound = ["--writers", "1", "--checkpoints", "2", "--records", "2", "--faults", "coordinator-crash"]
    rc, out, _ = run_cli(["explore", "--variant", "checkpoint-overtakes-notification", *bound, "--json", "--out",
                          str(tmp_path)], capsys)
    v = json.loads(out)["violation"]
    assert rc == 1 and v["invariant"] == "I12.state-coverage" and v["replay_reports"] == "I12.state-coverage"
    kinds = [e["kind"] for e in v["events"]]
    # checkpoint 2 is triggered while checkpoint 1's notification is still in flight (never delivered)
    assert kinds.count("complete-checkpoint") == 2 and "deliver-ack" not in kinds and "lose-ack" not in kinds
    rc, out, _ = run_cli(["explore", "--variant", "hudi-0.x-coordinator-start", *bound, "--json", "--out",
                          str(tmp_path / "ok")], capsys)
    rep = json.loads(out)
    assert rc == 0 and rep["complete"] and rep["violation"] is None and rep["states"] > 100


# --------------------------------------------------------------------------- a list of verdicts
class ListJugs(Jugs):
    """Jugs whose property returns a list (as the protocol's ``check_step`` does): holding Verdicts, a bool,
    and the failing one; every failing item is its own discovery, also past the all-hold fast path."""

    def properties(self):
        return [Property.always("step", lambda s: [Verdict("small-ok", True), True,
                                                   Verdict("big-is-never-4", s[1] != 4, f"jugs {s}"),
                                                   s[0] != 2])]


def test_a_list_of_verdicts_reports_each_failing_item_serial_and_parallel():
    from checker.explorer import _all_hold
    from checker.parallel import explore_parallel, outcomes

    assert _all_hold([Verdict("a", True), Verdict("b", True)])
    assert not _all_hold([Verdict("a", True), Verdict("b", False)])
    assert not _all_hold([Verdict("a", True), True])  # a bool: the caller's loop judges the items
    prop = ListJugs().properties()[0]
    assert outcomes(prop, (0, 0)) == []
    assert [n for n, _, _ in outcomes(prop, (2, 4))] == ["big-is-never-4", "step"]
    for res in (explore(ListJugs(), stop_on_violation=False),
                explore_parallel(ListJugs(), workers=2, stop_on_violation=False)):
        assert sorted(res.discoveries) == ["big-is-never-4", "step"]
        assert res.discoveries["big-is-never-4"].depth == 6
