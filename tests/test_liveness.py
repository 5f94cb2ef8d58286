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
    assert len(s.figures) == 3 and all(p.exists() for p in s.figures)
