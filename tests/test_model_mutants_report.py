"""benchmarks/mutate.py (`make mutate`): how it reads mutmut's results, applies the equivalent-mutant list
and scores -- without running mutmut (its real run is `make mutate`)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "mutate.py"
_spec = importlib.util.spec_from_file_location("mutate_script", SCRIPT)
mutate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutate)

K, S, NT, TO, SUS = 1, 0, 33, 36, -15  # killed, survived, no tests, timeout, an unknown code (suspicious)


def write_meta(root: Path, rel: str, codes: dict) -> None:
    meta = root / "mutants" / (rel + ".meta")
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps({"exit_code_by_key": codes, "hash_by_function_name": {}, "durations_by_key": {},
                                "estimated_durations_by_key": {}, "type_check_error_by_key": {}}))


def test_score_counts_timeouts_as_killed_and_leaves_out_equivalent_and_unchecked():
    c = Counter({"killed": 8, "timeout": 1, "survived": 1, "no tests": 1, "suspicious": 1, "equivalent": 3,
                 "not checked": 5})
    assert mutate.score(c) == pytest.approx(100 * 9 / 12)
    assert mutate.score(Counter({"equivalent": 2, "not checked": 1})) is None


def test_results_are_read_per_file_and_filtered_by_pattern(tmp_path):
    write_meta(tmp_path, "model/a.py", {"model.a.x_f__mutmut_1": K, "model.a.x_f__mutmut_2": S,
                                         "model.a.x_g__mutmut_1": None})
    write_meta(tmp_path, "model/p/b.py", {"model.p.b.x_h__mutmut_1": TO, "model.p.b.x_h__mutmut_2": SUS,
                                           "model.p.b.x_h__mutmut_3": NT})
    write_meta(tmp_path, "model/empty.py", {})
    results = mutate.load_results(tmp_path)
    assert sorted(results) == ["model/a.py", "model/p/b.py"]
    rows = dict(mutate.table(results, {"model.a.x_f__mutmut_2"}, []))
    assert rows["model/a.py"] == Counter({"killed": 1, "equivalent": 1, "not checked": 1})
    assert rows["model/p/b.py"] == Counter({"timeout": 1, "suspicious": 1, "no tests": 1})
    only = dict(mutate.table(results, set(), ["model.a.x_f*"]))
    assert list(only) == ["model/a.py"] and only["model/a.py"] == Counter({"killed": 1, "survived": 1})


def test_equivalents_apply_only_when_the_listed_line_still_matches():
    eq = {"m.x_f__mutmut_1": {"line": "return a >= 0", "reason": "r"},
          "m.x_f__mutmut_2": {"line": "return b", "reason": "r"},
          "m.x_f__mutmut_3": {"line": "return c", "reason": "r"},
          "m.x_gone__mutmut_1": {"line": "x", "reason": "r"}}
    codes = {"m.x_f__mutmut_1": S, "m.x_f__mutmut_2": S, "m.x_f__mutmut_3": K}
    lines = {"m.x_f__mutmut_1": "return  a >= 0", "m.x_f__mutmut_2": "return b + 1", "m.x_f__mutmut_3": "return c"}
    applied, stale, wrong = mutate.check_equivalents(eq, codes, [], line_of=lines.get)
    assert applied == {"m.x_f__mutmut_1"}  # whitespace does not matter
    assert [s[0] for s in stale] == ["m.x_f__mutmut_2", "m.x_gone__mutmut_1"]
    assert wrong == ["m.x_f__mutmut_3"]  # listed as equivalent, but a test told it apart
    # a gone mutant outside the selected part is not stale
    applied, stale, _ = mutate.check_equivalents(eq, codes, ["m.x_f*"], line_of=lines.get)
    assert [s[0] for s in stale] == ["m.x_f__mutmut_2"] and applied == {"m.x_f__mutmut_1"}
    applied, stale, wrong = mutate.check_equivalents(eq, codes, ["m.other*"], line_of=lines.get)
    assert (applied, stale, wrong) == (set(), [], [])  # nothing listed is in the selected part


def test_the_shipped_equivalents_file_is_well_formed():
    eq = mutate.load_equivalents(mutate.EQUIVALENT_FILE)
    assert all(e["reason"].strip() and e["line"].strip() for e in eq.values())


@pytest.mark.parametrize("text", ["[x\n", '["model.a.x_f__mutmut_1"]\nline = "a"\n', '["nomutant"]\nline="a"\nreason="b"\n'])
def test_a_bad_equivalents_file_is_one_line_and_exit_2(tmp_path, text):
    bad = tmp_path / "eq.toml"
    bad.write_text(text)
    r = subprocess.run([sys.executable, str(SCRIPT), "--report-only", "--equivalent", str(bad)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and str(bad) in r.stderr, r.stderr


@pytest.mark.parametrize("args,name", [(["--max-children", "0"], "--max-children"), (["--target", "120"], "--target"),
                                       (["--report-only", "--fresh"], "--fresh")])
def test_bad_arguments_are_one_line_and_exit_2(args, name):
    r = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.startswith(f"error: {name}") and r.stderr.count("\n") == 1, r.stderr


@pytest.mark.parametrize("codes,target,rc", [
    ({"model.a.x_f__mutmut_1": K, "model.a.x_f__mutmut_2": K, "model.a.x_f__mutmut_3": S}, 90, 1),  # 66.7 %
    ({"model.a.x_f__mutmut_1": K, "model.a.x_f__mutmut_2": K, "model.a.x_f__mutmut_3": S}, 60, 0),
    ({"model.a.x_f__mutmut_1": K, "model.a.x_f__mutmut_2": TO}, 90, 0),
    ({"model.a.x_f__mutmut_1": None}, 90, 1),  # nothing checked
    ({"model.a.x_f__mutmut_1": K, "model.a.x_f__mutmut_2": None}, 90, 1),  # 100 % of a partial run: not a score
])
def test_the_run_fails_below_the_target(tmp_path, monkeypatch, capsys, codes, target, rc):
    write_meta(tmp_path, "model/a.py", codes)
    (tmp_path / "eq.toml").write_text("")
    monkeypatch.chdir(tmp_path)  # main() changes into the root; restored after the test
    monkeypatch.setattr(mutate, "ROOT", tmp_path)
    assert mutate.main(["--report-only", "--target", str(target), "--equivalent", str(tmp_path / "eq.toml")]) == rc
    out = capsys.readouterr().out
    assert "model/a.py" in out
    if rc == 0:
        assert "met" in out and "INCOMPLETE" not in out
    elif None in codes.values():
        assert "INCOMPLETE" in out
    else:
        assert "MISSED" in out


def test_a_pattern_matching_no_mutant_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    write_meta(tmp_path, "model/a.py", {"model.a.x_f__mutmut_1": K})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(mutate, "ROOT", tmp_path)
    with pytest.raises(mutate.BadInput, match=r"^patterns: \['model.nothing\*'\] match no mutant"):
        mutate.main(["--report-only", "--equivalent", str(tmp_path / "none.toml"), "model.nothing*"])


def test_files_without_results_are_listed_as_not_measured(tmp_path, monkeypatch, capsys):
    """A package added after the last run (model/concurrency/, model/mdt/) has no results: listed, not
    silently left out of the total; a file mutmut made no mutant of (an empty .meta) is not listed."""
    (tmp_path / "pyproject.toml").write_text('[tool.mutmut]\nsource_paths = ["model/"]\n')
    for rel in ("model/a.py", "model/only_imports.py", "model/newpkg/b.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    write_meta(tmp_path, "model/a.py", {"model.a.x_f__mutmut_1": K})
    write_meta(tmp_path, "model/only_imports.py", {})
    results = mutate.load_results(tmp_path)
    assert mutate.unmeasured_files(tmp_path, results, []) == ["model/newpkg/b.py"]
    assert mutate.unmeasured_files(tmp_path, results, ["model.newpkg*"]) == ["model/newpkg/b.py"]
    assert mutate.unmeasured_files(tmp_path, results, ["model.a*"]) == []
    monkeypatch.setattr(mutate, "ROOT", tmp_path)
    assert mutate.main(["--report-only", "--equivalent", str(tmp_path / "none.toml")]) == 0
    assert "not measured (no mutmut result: new since the last run, or never run): model/newpkg/b.py" in \
        capsys.readouterr().out


def test_open_selects_the_unchecked_and_not_killed_mutants_of_the_part(tmp_path):
    write_meta(tmp_path, "model/a.py", {"model.a.x_f__mutmut_1": K, "model.a.x_f__mutmut_2": S,
                                         "model.a.x_g__mutmut_1": None, "model.a.x_g__mutmut_2": TO,
                                         "model.a.x_g__mutmut_3": NT})
    write_meta(tmp_path, "model/b.py", {"model.b.x_h__mutmut_1": SUS, "model.b.x_h__mutmut_2": K})
    results = mutate.load_results(tmp_path)
    assert mutate.open_mutants(results, []) == ["model.a.x_f__mutmut_2", "model.a.x_g__mutmut_1",
                                                "model.a.x_g__mutmut_3", "model.b.x_h__mutmut_1"]
    assert mutate.open_mutants(results, ["model.b*"]) == ["model.b.x_h__mutmut_1"]
    # --unchecked: only the ones with no verdict (the survivor, no-tests and suspicious ones are left)
    assert mutate.open_mutants(results, [], {"not checked"}) == ["model.a.x_g__mutmut_1"]


@pytest.mark.parametrize("args", [["--open", "--fresh"], ["--open", "--report-only"], ["--unchecked", "--fresh"],
                                  ["--unchecked", "--open"], ["--sample", "0"], ["--sample", "5", "--open"],
                                  ["--sample", "5", "--report-only"]])
def test_open_with_fresh_or_report_only_is_refused(args):
    r = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and args[0] in r.stderr


# ------------------------------------------------------------------------------------------- --sample
def test_the_draw_is_seeded_uniform_and_cut_into_chunks():
    pop = [f"model.a.x_f__mutmut_{i}" for i in range(100)]
    a, b = mutate.draw_sample(pop, 30, 7, 8), mutate.draw_sample(list(reversed(pop)), 30, 7, 8)
    assert a == b  # the population's order does not matter, the seed does
    assert [len(c) for c in a["chunks"]] == [8, 8, 8, 6] and len({n for c in a["chunks"] for n in c}) == 30
    assert a["chunks"] != mutate.draw_sample(pop, 30, 8, 8)["chunks"]
    with pytest.raises(mutate.BadInput, match="--sample"):
        mutate.draw_sample(pop, 101, 1, 8)


def test_wilson_interval():
    lo, hi = mutate.wilson(90, 100)
    assert lo == pytest.approx(0.8256, abs=1e-3) and hi == pytest.approx(0.9448, abs=1e-3)  # the textbook values
    assert mutate.wilson(0, 0) == (0.0, 1.0) and mutate.wilson(10, 10)[1] == 1.0


def test_the_estimate_counts_outside_the_population_exactly_and_the_population_by_its_completed_chunks():
    codes = {f"model.a.x_f__mutmut_{i}": (K if i < 90 else S) for i in range(100)}  # checked before the draw
    pop = [f"model.b.x_g__mutmut_{i}" for i in range(1000)]
    sample = {"seed": 1, "size": 40, "population": pop, "chunks": [pop[:20], pop[20:40]]}
    codes.update({n: None for n in pop})
    codes.update({n: K for n in pop[:15]} | {n: S for n in pop[15:20]})  # chunk 1: 15 of 20 killed
    codes.update({n: K for n in pop[20:30]})  # chunk 2 only half checked: left out (its order was mutmut's)
    est = mutate.sample_estimate(sample, codes, set(), [])
    assert (est["chunks_done"], est["sampled"], est["killed"], est["non_equivalent"]) == (1, 20, 15, 20)
    assert (est["exact_killed"], est["exact_non_equivalent"], est["population"]) == (90, 100, 1000)
    assert est["estimate"] == pytest.approx(100 * (90 + 1000 * 0.75) / 1100)
    lo, hi = mutate.wilson(15, 20)
    assert est["low"] == pytest.approx(100 * (90 + 1000 * lo) / 1100) and est["low"] < est["estimate"] < est["high"]
    # a sampled survivor listed as equivalent leaves the sample's denominator (and the population's share)
    est2 = mutate.sample_estimate(sample, codes, {pop[15]}, [])
    assert est2["non_equivalent"] == 19 and est2["estimate"] > est["estimate"]
