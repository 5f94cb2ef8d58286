"""Liveness (issue #22): temporal properties under fairness, judged over the explored graph.

Each temporal property has a broken design caught with a lasso that replays; the correct design passes."""

from __future__ import annotations

import pytest

from checker.liveness import check_liveness, draw_lasso
from hoodie_lab.commands.explore_liveness import write_lasso
from lakeio.traces import load_trace
from model.invariants import temporal as T
from model.protocol import events as E
from model.protocol import spec
from model.protocol.variants import LIVENESS_VARIANTS

BOUND = dict(parallelism=1, max_checkpoints=1, records=2, buffer_size=2, faults=frozenset({"lost-ack"}))


def run(name, **extra):
    v = LIVENESS_VARIANTS[name]
    return v, check_liveness(v.config(**{**BOUND, **extra}), unfair=v.unfair)


def test_every_event_kind_declares_fairness_and_faults_have_none():
    assert set(E.FAIRNESS) == set(E.EVENT_TYPES)
    for kind, cls in E.EVENT_TYPES.items():
        if cls.fault is not None:
            assert E.FAIRNESS[kind] == E.NONE, kind
    assert E.FAIRNESS["instant-timeout"] == E.NONE
    assert E.fairness(E.Clean()) == E.WEAK and E.fairness(E.Clean(), frozenset({"clean"})) == E.NONE


def test_correct_design_holds_every_temporal_property():
    _, r = run("hudi-1.1")
    assert r.complete and not r.cut and r.fair_components > 0
    assert r.violations == {}


def test_correct_design_holds_with_two_writers():
    _, r = run("hudi-1.1", parallelism=2, records=1)
    assert r.holds, {p: l.describe() for p, l in r.violations.items()}


@pytest.mark.parametrize("name", [n for n, v in LIVENESS_VARIANTS.items() if v.breaks])
def test_broken_variant_caught_with_replayable_lasso(name, tmp_path):
    v, r = run(name)
    assert set(v.breaks) <= set(r.violations), (name, sorted(r.violations))
    for prop in v.breaks:
        lasso = r.violations[prop]
        # replay the prefix through the spec: it reaches the cycle's first state, where the obligation is open
        s = spec.init(v.config(**BOUND))
        for ev in lasso.prefix:
            s = spec.step(s, ev)
        assert s == lasso.last_state
        assert lasso.obligation in T.open_obligations(s)[prop]
        # the trace file round-trips the prefix, the cycle is in its header
        path = write_lasso(tmp_path / f"{name}-{prop}.jsonl", v.config(**BOUND), lasso, unfair=v.unfair)
        tr = load_trace(path)
        assert [e.to_dict() for e in tr.events] == [e.to_dict() for e in lasso.prefix]
        assert '"lasso"' in path.read_text()


def test_each_temporal_property_has_a_broken_variant():
    broken = {p for v in LIVENESS_VARIANTS.values() for p in v.breaks}
    assert broken == set(T.TEMPORAL)


def test_blocking_lasso_stutters_with_only_the_timeout_enabled():
    v, r = run("blocking-waits-for-timeout")
    lasso = r.violations[T.WRITER_UNBLOCKED]
    assert lasso.cycle == []  # stuttering
    s = lasso.last_state
    kinds = {ev.kind for ev in spec.enabled(s)}
    assert "instant-timeout" in kinds and all(E.FAIRNESS[k] == E.NONE for k in kinds)
    assert any(ev.kind == "lose-ack" for ev in lasso.prefix)  # the lost ack is what blocks it


def test_no_clean_lasso_is_a_cycle_of_checkpoints_delivering_acks():
    _, r = run("no-clean-rollback")
    lasso = r.violations[T.INSTANT_RESOLVED]
    kinds = [ev.kind for ev in lasso.cycle]
    assert "deliver-ack" in kinds and "trigger-checkpoint" in kinds and "clean" not in kinds


def test_pending_while_acks_lasso_delivers_acks_on_its_cycle():
    """pending-while-acks: the lasso's cycle delivers an ack (the premise []<>deliver-ack) while the
    obligation -- an instant requested before the lost ack -- stays pending in every cycle state."""
    v, r = run("no-clean-rollback")
    lasso = r.violations[T.PENDING_WHILE_ACKS]
    assert lasso.prefix and lasso.cycle
    assert "deliver-ack" in [ev.kind for ev in lasso.cycle] and "clean" not in [ev.kind for ev in lasso.cycle]
    assert any(ev.kind == "lose-ack" for ev in lasso.prefix)
    # the obligation is open in every state of the cycle: replay the prefix, then the cycle once around
    s = spec.init(v.config(**BOUND))
    for ev in lasso.prefix:
        s = spec.step(s, ev)
    for ev in lasso.cycle:
        assert lasso.obligation in T.open_obligations(s)[T.PENDING_WHILE_ACKS]
        assert ev in spec.enabled(s)
        s = spec.step(s, ev)
    assert lasso.obligation in T.unresolved_instants(s)


def test_pending_while_acks_needs_acks_on_the_cycle():
    """A stuttering end keeps an instant pending but delivers no ack: no-request-retry breaks instant-resolved,
    not pending-while-acks; hudi-1.1 holds both, also with two writers."""
    _, r = run("no-request-retry")
    assert T.INSTANT_RESOLVED in r.violations and r.violations[T.INSTANT_RESOLVED].cycle == []
    assert T.PENDING_WHILE_ACKS not in r.violations
    for extra in ({}, dict(parallelism=2, records=1)):
        _, ok = run("hudi-1.1", **extra)
        assert ok.holds and T.PENDING_WHILE_ACKS not in ok.violations


def test_weak_fairness_makes_the_difference():
    """The same design with clean weakly fair (hudi-1.1) holds what no-clean-rollback breaks."""
    _, fair = run("hudi-1.1")
    _, unfair = run("no-clean-rollback")
    assert T.INSTANT_RESOLVED not in fair.violations and T.INSTANT_RESOLVED in unfair.violations


def test_draw_lasso(tmp_path):
    _, r = run("no-clean-rollback")
    out = tmp_path / "lasso.png"
    draw_lasso(r.violations[T.INSTANT_RESOLVED], str(out))
    assert out.stat().st_size > 1000


def _cli(*argv):
    from hoodie_lab.cli import main

    return main(list(argv))


def test_cli_explore_liveness(tmp_path, capsys):
    common = ["explore", "--liveness", "--writers", "1", "--checkpoints", "1", "--records", "2", "--faults",
              "lost-ack", "--out", str(tmp_path)]
    assert _cli(*common) == 0
    assert "holds     instant-resolved" in capsys.readouterr().out
    png = tmp_path / "lasso.png"
    assert _cli(*common, "--variant", "no-clean-rollback", "--graph", str(png)) == 1
    out = capsys.readouterr().out
    assert "VIOLATED  instant-resolved" in out and png.exists()
    assert (tmp_path / "liveness-no-clean-rollback-instant-resolved.jsonl").exists()


def test_cli_explore_liveness_bad_arguments(tmp_path, capsys):
    assert _cli("explore", "--liveness", "--variant", "nope", "--out", str(tmp_path)) == 2
    assert "--variant: unknown variant 'nope'" in capsys.readouterr().err
    assert _cli("explore", "--liveness", "--graph", str(tmp_path / "x.gif"), "--out", str(tmp_path)) == 2


def test_report_liveness_section(tmp_path):
    from hoodie_lab.report import Context
    from hoodie_lab.report_sections import builders, liveness_section

    assert builders(["liveness"]) == [liveness_section]
    ctx = Context(tmp_path, quick=True, seed=0, log=lambda _: None)
    ctx.fig_dir.mkdir(parents=True, exist_ok=True)
    s = liveness_section(ctx)
    html = "".join(s.paragraphs)
    assert s.ok and "UNEXPECTED" not in html and "no-clean-rollback" in html
    from model.archival_machine import ARCHIVAL_LIVENESS_VARIANTS
    from model.mdt.variants import INDEXING_LIVENESS_VARIANTS
    from model.protocol.variants import LIVENESS_VARIANTS

    tables = (LIVENESS_VARIANTS, INDEXING_LIVENESS_VARIANTS, ARCHIVAL_LIVENESS_VARIANTS)
    assert all(f"<td>{name}</td>" in html for t in tables for name in t), "every design of the three machines"
    broken = [name for t in tables for name, v in t.items() if v.breaks]  # one lasso drawn for each
    assert sorted(p.stem for p in s.figures) == sorted(f"lasso-{n}" for n in broken)
    assert all(p.exists() for p in s.figures)


# ------------------------------------------------------------------- the async indexer (model/mdt)
from checker.archival import ArchivalLiveModel  # noqa: E402
from checker.indexing import IndexingLiveModel  # noqa: E402
from checker.liveness import check_model_liveness  # noqa: E402
from model import archival as A  # noqa: E402
from model import archival_machine as am  # noqa: E402
from model.mdt import machine as mm  # noqa: E402
from model.mdt.variants import INDEXING_LIVENESS_VARIANTS  # noqa: E402


def run_indexing(name, unfair=None, **extra):
    v = INDEXING_LIVENESS_VARIANTS[name]
    cfg = v.config(**extra)
    return cfg, check_model_liveness(IndexingLiveModel(cfg, v.unfair if unfair is None else unfair))


def run_archival(name, unfair=None, **extra):
    v = am.ARCHIVAL_LIVENESS_VARIANTS[name]
    cfg = v.config(**extra)
    return cfg, check_model_liveness(ArchivalLiveModel(cfg, v.unfair if unfair is None else unfair))


def test_indexing_and_archival_steps_declare_fairness_and_faults_have_none():
    full = mm.IndexingConfig(writers=1, failures=1, timeouts=1, drop=True, mdt_compaction=True)
    assert {a[1] for a in mm.candidate_actions(full)} == set(mm.FAIRNESS)
    assert mm.FAIRNESS["fail"] == mm.NONE and mm.FAIRNESS["timeout"] == mm.WEAK
    assert mm.fairness(("i", "catchup")) == mm.WEAK and mm.fairness(("i", "catchup"), frozenset({"catchup"})) == mm.NONE
    cfg = am.MachineConfig(crashes=1)
    assert {a[1] for a in am.candidate_actions(cfg)} == set(am.FAIRNESS)
    assert am.FAIRNESS["fail"] == am.FAIRNESS["crash"] == am.NONE
    with pytest.raises(ValueError, match="unknown indexing step"):
        IndexingLiveModel(full, frozenset({"nope"}))
    with pytest.raises(ValueError, match="unknown archival step"):
        ArchivalLiveModel(cfg, frozenset({"nope"}))


@pytest.mark.parametrize("name", [n for n, v in INDEXING_LIVENESS_VARIANTS.items() if not v.breaks])
def test_indexing_correct_designs_resolve_every_index_build(name):
    _, r = run_indexing(name, writers=1)
    assert r.complete and r.fair_components > 0
    assert r.holds, {p: l.describe() for p, l in r.violations.items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, v in INDEXING_LIVENESS_VARIANTS.items() if not v.breaks])
def test_indexing_correct_designs_resolve_every_index_build_at_their_bound(name):
    """At the variants' own bounds (two writers for the hudi-1.x designs: up to 16 k states)."""
    _, r = run_indexing(name)
    assert r.complete and r.holds, {p: l.describe() for p, l in r.violations.items()}


@pytest.mark.parametrize("name", [n for n, v in INDEXING_LIVENESS_VARIANTS.items() if v.breaks])
def test_indexing_broken_design_caught_with_replayable_lasso(name):
    cfg, r = run_indexing(name)
    v = INDEXING_LIVENESS_VARIANTS[name]
    assert set(r.violations) == set(v.breaks)
    lasso = r.violations[T.INDEX_BUILD_RESOLVED]
    s = mm.initial_state(cfg)
    for a in lasso.prefix:
        s = mm.step(cfg, s, a)
    assert s.fingerprint() == lasso.last_state.fingerprint()
    assert lasso.obligation in T.pending_index_builds(s) and s.idx[0] == "catching-up"
    # the lasso stutters: no weakly fair step is enabled, the indexing instant stays inflight
    assert lasso.cycle == []
    assert all(mm.fairness(a, v.unfair) == mm.NONE for a, _ in mm.enabled(cfg, s))
    assert mm.refusal(cfg, s, ("i", "catchup")).startswith("waiting for the live writer")


def test_indexer_holding_the_lock_deadlocks_with_the_writer_it_waits_for():
    cfg, r = run_indexing("indexer-holds-lock")
    s = r.violations[T.INDEX_BUILD_RESOLVED].last_state
    assert s.lock == mm.INDEXER
    assert mm.refusal(cfg, s, ("w1", "commit")) == "the table lock is held by i"
    # the same design with a catch-up timeout (weakly fair: the executor's own timer) resolves by aborting;
    # with the timeout not fair it is the deadlock again
    _, timed = run_indexing("indexer-holds-lock-times-out")
    assert timed.holds
    _, unfair = run_indexing("indexer-holds-lock-times-out", unfair=frozenset({"timeout"}))
    assert T.INDEX_BUILD_RESOLVED in unfair.violations


def test_heartbeat_check_is_what_frees_the_catchup_from_a_dead_writer():
    """Same bound, same unfair rollback: Hudi's catch-up skips the dead writer's instant; without the heartbeat
    check it waits for it forever (and a fair cleaner's rollback would free it: the instant is gone)."""
    _, hudi = run_indexing("hudi-1.x-failures", writers=1)
    assert hudi.holds
    _, broken = run_indexing("catchup-ignores-heartbeat")
    lasso = broken.violations[T.INDEX_BUILD_RESOLVED]
    assert any(a[1] == "fail" for a in lasso.prefix)
    _, fair_cleaner = run_indexing("catchup-ignores-heartbeat", unfair=frozenset())
    assert fair_cleaner.holds


# ------------------------------------------------------------------- archival (model/archival.py)
def test_archival_correct_design_holds():
    _, r = run_archival("hudi")
    assert r.complete and r.fair_components > 0
    assert r.holds, {p: l.describe() for p, l in r.violations.items()}
    # the bound reaches the states the properties are about: over keep.max, and a running job
    assert any(T.over_keep_max(s.history, am.SMALL) for s in r.visited) and any(s.history.job for s in r.visited)


@pytest.mark.parametrize("name", [n for n, v in am.ARCHIVAL_LIVENESS_VARIANTS.items() if v.breaks])
def test_archival_broken_design_caught_with_replayable_lasso(name):
    cfg, r = run_archival(name)
    v = am.ARCHIVAL_LIVENESS_VARIANTS[name]
    assert set(r.violations) == set(v.breaks)
    for prop in v.breaks:
        lasso = r.violations[prop]
        s = am.initial_state(cfg)
        for a in lasso.prefix:
            s = am.step(cfg, s, a)
        assert s == lasso.last_state
        assert lasso.obligation in T.archival_obligations(s.history, cfg.archival)[prop]
        assert lasso.cycle == []
        assert all(am.fairness(a, v.unfair) == am.NONE for a, _ in am.enabled(cfg, s))


def test_archival_blocked_by_a_failed_write_only_the_cleaner_frees():
    cfg, r = run_archival("no-failed-write-rollback")
    s = r.violations[T.ARCHIVAL_BOUNDED].last_state
    d = A.decide(A.active_timeline(s.history), cfg.archival)
    assert d.triggered and not d.archives and d.retention[0][0] == "earliest-pending-write"
    assert [a for a, _ in am.enabled(cfg, s)] == [("c", "rollback")]
    _, fair = run_archival("no-failed-write-rollback", unfair=frozenset())
    assert fair.holds


def test_each_machine_temporal_property_has_a_broken_variant():
    assert {p for v in INDEXING_LIVENESS_VARIANTS.values() for p in v.breaks} == set(T.INDEXING_TEMPORAL)
    assert {p for v in am.ARCHIVAL_LIVENESS_VARIANTS.values() for p in v.breaks} == set(T.ARCHIVAL_TEMPORAL)


def test_draw_machine_lasso(tmp_path):
    _, r = run_indexing("indexer-holds-lock")
    out = tmp_path / "lasso.png"
    draw_lasso(r.violations[T.INDEX_BUILD_RESOLVED], str(out))
    assert out.stat().st_size > 1000


def test_cli_explore_liveness_indexing_and_archival(tmp_path, capsys):
    base = ["explore", "--liveness", "--out", str(tmp_path)]
    assert _cli(*base, "--machine", "indexing", "--writers", "1") == 0
    assert "holds     index-build-resolved" in capsys.readouterr().out
    assert _cli(*base, "--machine", "indexing", "--variant", "indexer-holds-lock") == 1
    out = capsys.readouterr().out
    assert "VIOLATED  index-build-resolved" in out and "5. i catchup" in out and "then forever: stutter" in out
    assert _cli(*base, "--machine", "archival", "--variant", "archiver-stalls", "--json") == 1
    import json

    rep = json.loads(capsys.readouterr().out)
    assert set(rep["violations"]) == {"archival-bounded", "archival-finishes"}
    assert rep["violations"]["archival-finishes"]["prefix"][-1] == "a archive"
    assert _cli(*base, "--machine", "archival") == 0
    assert "holds     archival-finishes" in capsys.readouterr().out


def test_cli_machine_liveness_bad_arguments(tmp_path, capsys):
    base = ["explore", "--liveness", "--out", str(tmp_path)]
    assert _cli(*base, "--machine", "archival", "--variant", "nope") == 2
    assert "--variant: unknown archival variant 'nope'" in capsys.readouterr().err
    assert _cli(*base, "--machine", "indexing", "--variant", "nope") == 2
    assert "--variant: unknown indexing variant 'nope'" in capsys.readouterr().err
    assert _cli(*base, "--machine", "archival", "--failures", "5") == 2
    assert "--failures" in capsys.readouterr().err
    assert _cli(*base, "--machine", "archival", "--records", "2") == 2
    assert _cli("explore", "--machine", "archival", "--out", str(tmp_path)) == 2
    assert _cli(*base, "--machine", "table") == 2


# ------------------------------------------------------------------- the checker on a toy graph
from checker.liveness import LiveModel  # noqa: E402


class Toy(LiveModel):
    """States 0..3; actions u, v, w weakly fair, f a fault. The whole graph is one fair component in which no
    obligation is open everywhere: only judging the states where an obligation is open finds the lassos."""

    properties = ("toy",)

    def __init__(self, edges, open_):
        self.edges, self.open = edges, open_

    def init_states(self):
        return [0]

    def successors(self, s):
        return self.edges[s]

    def weak(self, a):
        return a != "f"

    def obligations(self, s):
        return {"toy": frozenset(self.open.get(s, ()))}


EDGES = {0: [("u", 1), ("v", 2)], 1: [("u", 0)], 2: [("v", 0), ("w", 3)], 3: [("f", 0)]}


def test_checker_judges_the_part_of_a_component_where_the_obligation_stays_open():
    r = check_model_liveness(Toy(EDGES, {0: {"x"}, 1: {"x"}}))
    assert r.fair_components == 1
    lasso = r.violations["toy"]
    assert (lasso.obligation, lasso.prefix, lasso.cycle) == ("x", [], ["u", "u"])


def test_checker_a_part_whose_always_enabled_action_leaves_it_is_not_fair():
    edges = {**EDGES, 1: [("u", 0), ("v", 2)]}  # v now enabled in 0 and 1, taken only out of {0, 1}
    r = check_model_liveness(Toy(edges, {0: {"x"}, 1: {"x"}}))
    assert r.violations == {}


def test_checker_a_stuttering_state_inside_a_component_is_a_fair_end():
    r = check_model_liveness(Toy(EDGES, {3: {"y"}}))  # in 3 only the fault f is enabled: it may stutter
    lasso = r.violations["toy"]
    assert (lasso.obligation, lasso.prefix, lasso.cycle) == ("y", ["v", "w"], [])
    assert check_model_liveness(Toy({**EDGES, 3: [("u", 0)]}, {3: {"y"}})).violations == {}
