"""The explorer as Spark jobs (issue #20 item 3): ``checker/spark_explore.py``, ``hoodie-lab explore --master``.

On ``local[2]`` (the run's one session, the root conftest's ``spark``) the Spark search must give the serial search's counts (distinct
states, transitions, max depth, terminal and settled states, drained checks) and verdicts (each invariant
violated, at its shortest depth) on small bounds, with and without symmetry, and a broken variant's
counterexample must be shortest and replay; a routing that is not a function of the fingerprint is caught by
the same comparison. On a standalone cluster (a master and two workers started and stopped by the
``spark_cluster`` fixture) ``hoodie-lab explore --master spark://...`` prints the serial counts. The stable
fingerprint hash the executors share is shown to be needed: Python's ``hash`` of a fingerprint differs between
two interpreters. Skipped only when Java is absent.
"""

from __future__ import annotations

import enum
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from checker.explorer import explore
from checker.protocol import SystemModel
from checker.spark_explore import explore_spark
from checker.stablefp import canonical, stable_hash
from checker.symmetry import representative_function
from conftest import apps_since, finished_app_ids, needs_java
from model.protocol.variants import VARIANTS

REPO = Path(__file__).resolve().parent.parent
FAULTS = frozenset({"lost-ack", "task-crash"})


def config(variant: str, writers: int = 1, checkpoints: int = 2):
    return VARIANTS[variant].config(parallelism=writers, max_checkpoints=checkpoints, records=1, buffer_size=1,
                                    faults=FAULTS, max_crashes=1)


def summary(res, model) -> dict:
    return dict(states=res.states, transitions=res.transitions, max_depth=res.max_depth,
                terminal=res.terminal_states, settled=res.settled_states, drains=model.drains,
                complete=res.complete, verdicts={n: d.depth for n, d in res.discoveries.items()})


def serial(cfg, symmetry: bool = False, **kw) -> dict:
    model = SystemModel(cfg)
    rep = representative_function(model) if symmetry else None
    res = explore(model, max_states=60_000, stop_on_violation=False, compact=True, symmetry=rep, **kw)
    return summary(res, model)


@pytest.fixture()
def sc(spark):
    """The run's one local[2] session (the root conftest's ``spark``: a Spark start costs 7-20 s here)."""
    assert spark.sparkContext.master == "local[2]"
    return spark.sparkContext


def on_spark(sc, cfg, tmp_path, symmetry: bool = False, **kw):
    model = SystemModel(cfg)
    res = explore_spark(model, sc, tmp_path / "work", symmetric=symmetry, **{"stop_on_violation": False, **kw})
    assert not (tmp_path / "work").exists()  # the work files are removed
    return res, summary(res, model)


# ------------------------------------------------------------------ the stable fingerprint hash
class Colour(enum.Enum):
    RED = 1


class Level(enum.IntEnum):
    ONE = 1


class Kind(str, enum.Enum):
    COMMIT = "commit"


class Pair(NamedTuple):
    a: int
    b: object


def test_stable_hash_follows_python_equality():
    # values Python finds equal hash equal (the in-process searches count them once)
    assert stable_hash((True, 1.0, Level.ONE)) == stable_hash((1, 1, 1))
    assert stable_hash(Kind.COMMIT) == stable_hash("commit")
    assert stable_hash(Pair(1, None)) == stable_hash((1, None))
    assert stable_hash(frozenset({"a", "b", "c"})) == stable_hash(frozenset(["c", "a", "b"]))
    # unequal values hash apart
    assert len({stable_hash(x) for x in [None, 0, "0", (), frozenset(), ("a", "b"), ("ab",), Colour.RED, 1.5,
                                         (None,), ((),), b"0"]}) == 12
    with pytest.raises(TypeError, match="cannot hash a builtins.object"):
        canonical((1, object()))


def test_the_memoised_hasher_gives_the_stable_hash():
    from checker.stablefp import StableHasher

    model = SystemModel(config("broken-commit-eq", writers=2, checkpoints=1))
    hasher = StableHasher(limit=50)  # small: the memos are emptied many times on the way
    frontier, fps = model.init_states(), []
    for _ in range(6):
        frontier = [model.next_state(s, a) for s in frontier for a in model.actions(s)][:400]
        fps += [model.fingerprint(s) for s in frontier]
    assert len(fps) > 1_000 and len(set(fps)) > 100
    assert [hasher(f) for f in fps + fps] == [stable_hash(f) for f in fps + fps]
    assert hasher((True, (1, frozenset({"a"})))) == stable_hash((1, (True, frozenset({"a"}))))


def test_python_hash_differs_between_interpreters_and_the_stable_hash_does_not():
    """Why the executors cannot use ``hash``: a fingerprint holding None (every protocol state's does) hashes
    differently in two interpreters, even with the same PYTHONHASHSEED; the stable hash is equal."""
    code = ("from checker.protocol import SystemModel; from checker.stablefp import stable_hash; "
            "from model.protocol.variants import VARIANTS; m = SystemModel(VARIANTS['hudi-1.1'].config()); "
            "s = m.init_states()[0]; print(hash(m.fingerprint(s)), stable_hash(m.fingerprint(s)))")
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=str(REPO))
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
            .stdout.split() for _ in range(3)]
    assert len({r[0] for r in runs}) > 1, "hash(None) is an address: it should differ between interpreters"
    assert len({r[1] for r in runs}) == 1


@pytest.mark.parametrize("variant", ["hudi-1.1", "broken-commit-eq", "hudi-1.1-async-events"])
def test_the_serial_search_with_the_stable_hash_gives_its_counts(variant):
    class Stable(SystemModel):
        def fingerprint_hash(self, s):
            return stable_hash(self.fingerprint(s))

    cfg = config(variant, writers=2, checkpoints=1)
    model = Stable(cfg)
    res = explore(model, max_states=60_000, stop_on_violation=False, compact=True)
    assert summary(res, model) == serial(cfg)


# ------------------------------------------------------------------ local[2] = the serial search
#: (variant, writers, checkpoints, symmetry): symmetry only where there are two writers to rename
BOUNDS = [("hudi-1.1", 1, 2, False), ("hudi-1.1-blocking", 1, 2, False), ("hudi-1.1", 2, 1, False),
          ("hudi-1.1", 2, 1, True)]


@pytest.mark.parametrize("variant,writers,checkpoints,symmetry", BOUNDS,
                         ids=[f"{v}-{w}x{c}{'-symmetry' if s else ''}" for v, w, c, s in BOUNDS])
@pytest.mark.spark
@needs_java
def test_spark_gives_the_serial_counts(sc, tmp_path, variant, writers, checkpoints, symmetry):
    cfg = config(variant, writers, checkpoints)
    res, got = on_spark(sc, cfg, tmp_path, symmetry)
    assert got == serial(cfg, symmetry)
    assert res.workers == sc.defaultParallelism == 2 and res.fpset_bytes == 8 * res.states


@pytest.mark.spark
@needs_java
def test_a_broken_variant_has_the_serial_verdicts_and_a_shortest_replayable_counterexample(sc, tmp_path):
    from checker.replay import replay
    from lakeio.traces import load_trace, write_trace

    cfg = config("broken-commit-eq")
    want = serial(cfg)
    assert want["verdicts"], "the variant must break something at this bound"
    _, got = on_spark(sc, cfg, tmp_path, partitions=3)  # 3 partitions on 2 cores: owners != executors
    assert got == want
    # stopping at the first violation: the shortest depth, a path that replays to the violation
    model = SystemModel(cfg)
    res = explore_spark(model, sc, tmp_path / "w2")
    ce = res.counterexample
    assert res.stop_reason == "violation" and ce.depth == min(want["verdicts"].values())
    assert len(ce.states) == len(ce.actions) + 1 == ce.depth + 1
    path = tmp_path / "ce.jsonl"
    write_trace(path, cfg, model.trace_events(ce), seed=0, driver="explore", variant="broken-commit-eq")
    again = replay(load_trace(path))
    assert not again.ok and again.violation.invariant == ce.property


@pytest.mark.spark
@needs_java
def test_bounds_truncate_like_the_serial_search(sc, tmp_path):
    cfg = config("hudi-1.1")
    a = explore(SystemModel(cfg), compact=True, max_depth=6)
    b = explore_spark(SystemModel(cfg), sc, tmp_path / "a", max_depth=6)
    assert (b.states, b.transitions, b.max_depth, b.stop_reason) == (a.states, a.transitions, a.max_depth,
                                                                      "max-depth")
    c = explore_spark(SystemModel(cfg), sc, tmp_path / "b", max_states=100)
    assert c.stop_reason == "max-states" and c.states >= 100 and not c.complete
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x").write_text("")
    with pytest.raises(ValueError, match="must be empty"):
        explore_spark(SystemModel(cfg), sc, tmp_path / "c")


@pytest.mark.spark
@needs_java
def test_a_routing_that_is_not_a_function_of_the_fingerprint_is_caught(sc, tmp_path):
    """Broken on purpose: owners alternate for the same fingerprint, so a state reached twice is kept by two
    partitions (or by none): the counts comparison fails."""
    cfg = config("hudi-1.1")
    want = serial(cfg)
    turn = itertools.count()

    def alternating(fp, partitions):  # pickled by value into the tasks; each task alternates on its own
        return next(turn) % partitions

    _, got = on_spark(sc, cfg, tmp_path, route=alternating)
    assert got != want and got["states"] != want["states"]


# ------------------------------------------------------------------ the CLI
def _cli(*argv, cwd, timeout=600):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("HOODIE_LAB_PROGRESS", None)
    return subprocess.run([sys.executable, "-m", "hoodie_lab.cli", *argv], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


@pytest.mark.parametrize("argv,message", [
    (["--master", "local[0]"], "--master local[0]: expected local"),
    (["--master", "yarn"], "--master yarn: expected local"),
    (["--master", "spark://127.0.0.1:1"], "cannot reach the Spark master"),
    (["--master", "local[2]", "--workers", "2"], "--workers: the Spark search's parallelism is --partitions"),
    (["--master", "local[2]", "--exact"], "--exact: the Spark search keeps 64-bit fingerprints"),
    (["--master", "local[2]", "--liveness"], "--master: the liveness search runs locally"),
    (["--master", "local[2]", "--machine", "table"], "--master: only for --machine protocol"),
    (["--master", "local[2]", "--partitions", "0"], "--partitions: 0 is out of range"),
    (["--partitions", "2"], "--partitions: only with --master"),
])
def test_bad_spark_arguments_are_one_line_exit_2(tmp_path, argv, message):
    r = _cli("explore", "--writers", "1", "--out", str(tmp_path / "out"), *argv, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.spark
@needs_java
def test_explore_on_a_standalone_cluster(tmp_path, spark_cluster):
    """``hoodie-lab explore --master spark://...``: its own driver, executors on both workers, the serial
    counts, the shortest counterexample written as a trace that replays."""
    assert spark_cluster.state()["aliveworkers"] == 2
    before = finished_app_ids(spark_cluster)  # the session's cluster: other modules' applications run on it too
    cfg = config("broken-commit-eq")
    model = SystemModel(cfg)
    want = explore(model, max_states=60_000, compact=True)
    r = _cli("explore", "--variant", "broken-commit-eq", "--writers", "1", "--checkpoints", "2", "--records", "1",
             "--buffer-size", "1", "--faults", "lost-ack,task-crash", "--crashes", "1", "--master", spark_cluster.url,
             "--partitions", "4", "--json", "--out", str(tmp_path / "out"), "--no-progress", cwd=tmp_path)
    assert r.returncode == 1, (r.stdout[-3000:], r.stderr[-3000:])
    rep = json.loads(r.stdout)
    assert rep["master"] == spark_cluster.url and rep["partitions"] == 4
    assert rep["violation"]["depth"] == want.counterexample.depth
    assert rep["violation"]["replay_reports"] == rep["violation"]["invariant"]
    assert Path(rep["violation"]["trace"]).exists()
    # the whole space: the serial counts (no early stop: the CLI stops at the first violation's level)
    r = _cli("explore", "--variant", "hudi-1.1", "--writers", "1", "--checkpoints", "2", "--records", "1",
             "--buffer-size", "1", "--faults", "lost-ack,task-crash", "--crashes", "1", "--master", spark_cluster.url,
             "--json", "--out", str(tmp_path / "out"), "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    rep = json.loads(r.stdout)
    want = serial(config("hudi-1.1"))
    assert (rep["states"], rep["transitions"], rep["max_depth"], rep["terminal_states"], rep["drained_checks"],
            rep["complete"]) == (want["states"], want["transitions"], want["max_depth"], want["terminal"],
                                 want["drains"], True)
    apps, dirs = apps_since(spark_cluster, before)
    assert len(apps) == 2 and all(a["state"] == "FINISHED" for a in apps), apps
    assert len(dirs) == 2 and all(dirs[i] for i in range(2)), f"executors ran on both workers: {dirs}"
