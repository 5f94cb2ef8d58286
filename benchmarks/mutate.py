"""`make mutate`: the mutation score of the spec (model/), measured with mutmut 3.

mutmut copies ``model/`` into ``mutants/`` with every mutant behind a trampoline, copies the
packages listed in ``[tool.mutmut] also_copy`` (pyproject.toml) beside it, and runs the fast
pure-model tests there (``pytest_add_cli_args_test_selection``: no Spark, no notebooks, no CLI
subprocesses, no slow marks) with ``mutants/`` first on ``sys.path``, so every import of ``model``
(the engine's too) gets the mutated copy. Each mutant runs only the tests that reached its
function. Hypothesis runs with the ``mutate`` profile (conftest.py: the ci budget, derandomized,
no example database), so a verdict does not depend on a seed or on another mutant's examples.

This script runs ``mutmut run`` under ``nice`` (unless ``--report-only``), then reads mutmut's
results (``mutants/**/*.py.meta``) and prints, per file: killed, timed out, survived, no tests,
suspicious, equivalent and not checked, and the score

    score = (killed + timed out) / (mutants - equivalent - not checked)

It exits 1 when the score is below ``--target`` (90 %), when a mutant listed as equivalent was
killed (the claim is wrong), or when a selected mutant was not checked (an interrupted or partial run); 2 on bad arguments or a bad
equivalents file. The equivalent mutants are listed in ``benchmarks/mutate_equivalent.toml``,
one table per mutant name with the mutated line and the reason; an entry whose mutated line no
longer matches (the function changed, mutmut renumbered) is stale, reported and not applied.

mutmut keeps its results in ``mutants/``: a second run re-tests only functions that changed. Pass
mutant-name patterns to test a part (``python benchmarks/mutate.py 'model.errors*'``; mutmut then re-runs
every mutant they match, checked or not), ``--open`` to run only the selected mutants that have no verdict
yet or were not killed (continue an interrupted run, re-test survivors after adding tests), ``--unchecked`` for
only those with no verdict (a survivor runs every test that reaches it: the slowest kind), and ``--fresh``
to delete ``mutants/`` first. Source files without any result (a package added since the last run) are
listed as not measured. ``mutmut results`` and ``mutmut show NAME`` list and show survivors.

``--sample N [--seed S]`` measures the rest by sampling (mutant sampling, as in Wong and Mathur's
studies): it draws N mutants uniformly at random (seeded) from those of the selection with no verdict (the
*population*), keeps the draw in ``mutants/mutate-sample.json`` and runs them in chunks of ``--chunk`` in
random order, so that the chunks completed when a run is cut off are still a uniform sample (a run
continues the same draw). The report then adds an estimate for the whole selection: the mutants outside the
population count exactly, the population by the sample's kill rate, with a 95 % Wilson interval; the target
is judged on the interval's lower bound. Survivors in the sample count as not killed unless listed as
equivalent (conservative).

Changing the test selection or the pytest arguments of ``[tool.mutmut]`` makes mutmut discard every result;
the selection is therefore by file-name pattern, so a new ``tests/test_model_mutants_<module>.py`` joins it
without a change there.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lakeio.errors import UserError as BadInput  # noqa: E402 - one line naming the file or argument, exit 2

EQUIVALENT_FILE = Path(__file__).resolve().parent / "mutate_equivalent.toml"

# mutmut's exit code -> status (mutmut.stats.status_by_exit_code; anything else is "suspicious").
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped",
          35: "suspicious", 36: "timeout", 37: "type check", -24: "timeout", 24: "timeout", 152: "timeout",
          255: "timeout", -11: "segfault", -9: "segfault", 2: "interrupted", None: "not checked"}
COLUMNS = ["killed", "timeout", "survived", "no tests", "suspicious", "segfault", "equivalent", "not checked"]


def status_of(code) -> str:
    return STATUS.get(code, "suspicious")


def load_equivalents(path: Path) -> dict[str, dict]:
    """The equivalents file: ``["mutant.name"]`` tables with ``line`` (the mutated line) and ``reason``."""
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise BadInput(f"{path}: not valid TOML: {e}") from None
    for name, entry in data.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("reason"), str) or not entry["reason"].strip() \
                or not isinstance(entry.get("line"), str) or "__mutmut_" not in name:
            raise BadInput(f"{path}: [{name!r}] needs a mutant name (…__mutmut_N), a 'line' and a 'reason' string")
    return data


def load_results(root: Path) -> dict[str, dict[str, int | None]]:
    """mutmut's verdicts per source file (``mutants/model/x.py.meta`` -> ``model/x.py``)."""
    out = {}
    for meta in sorted((root / "mutants").rglob("*.py.meta")):
        rel = meta.relative_to(root / "mutants").as_posix()[: -len(".meta")]
        try:
            codes = json.loads(meta.read_text())["exit_code_by_key"]
        except (json.JSONDecodeError, KeyError) as e:
            raise BadInput(f"{meta}: not a mutmut result file: {e}") from None
        if codes:
            out[rel] = codes
    return out


def mutated_line(name: str) -> str | None:
    """The '+' line(s) of the mutant's diff against the original function, stripped (None if unknown)."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant, find_mutant

    try:
        diff = get_diff_for_mutant(name, path=find_mutant(name).path)
    except Exception:  # noqa: BLE001 - any failure means the mutant is not there as listed
        return None
    plus = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return "\n".join(plus)


def check_equivalents(equivalents: dict[str, dict], codes: dict[str, int | None], patterns: list[str],
                      line_of=None) -> tuple[set, list, list]:
    """(applied names, stale entries, entries that were killed: the claim is wrong).

    An entry is stale when its mutant is gone (in the selected part) or its mutated line is no longer
    the listed one; ``line_of(name)`` gives the mutated line (mutmut's diff by default)."""
    line_of = line_of or mutated_line
    applied, stale, contradicted = set(), [], []
    for name, entry in equivalents.items():
        if patterns and not any(fnmatch.fnmatch(name, p) for p in patterns):
            continue  # outside the selected part
        if name not in codes:
            stale.append((name, entry["line"], None))
            continue
        got = line_of(name)
        if got is None or " ".join(entry["line"].split()) != " ".join(got.split()):
            stale.append((name, entry["line"], got))
            continue
        if status_of(codes[name]) in ("killed", "timeout"):
            contradicted.append(name)
            continue
        applied.add(name)
    return applied, stale, contradicted


def table(results: dict[str, dict[str, int | None]], equivalent: set[str], patterns: list[str]):
    rows = []
    for path, codes in results.items():
        c = Counter()
        for name, code in codes.items():
            if patterns and not any(fnmatch.fnmatch(name, p) for p in patterns):
                continue
            c["equivalent" if name in equivalent else status_of(code)] += 1
        if sum(c.values()):
            rows.append((path, c))
    return rows


def unmeasured_files(root: Path, results: dict, patterns: list[str]) -> list[str]:
    """Source files of ``[tool.mutmut] source_paths`` without mutmut results: new since the last run (a package
    added after it), or never run. Files mutmut made no mutant of (imports, docstrings: an empty ``.meta``) and,
    with patterns, files no pattern selects are left out."""
    try:
        sources = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mutmut"]["source_paths"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        sources = ["model/"]  # mutmut itself would refuse to run; report on the spec
    out = []
    for src in sources:
        for f in sorted((root / src).rglob("*.py")):
            rel = f.relative_to(root).as_posix()
            if rel in results or (root / "mutants" / (rel + ".meta")).exists():
                continue
            module = rel[: -len(".py")].replace("/", ".")
            if patterns and not any(fnmatch.fnmatch(module + ".x_", p) or fnmatch.fnmatch(module + ".xǁ", p)
                                    for p in patterns):
                continue
            out.append(rel)
    return out


def score(c: Counter) -> float | None:
    tested = sum(c.values()) - c["equivalent"] - c["not checked"] - c["skipped"]
    return None if tested <= 0 else 100.0 * (c["killed"] + c["timeout"]) / tested


def print_report(rows, target: float) -> Counter:
    total = Counter()
    w = max([len(p) for p, _ in rows] + [len("total")])
    print(f"{'file':{w}s} " + " ".join(f"{h:>11s}" for h in COLUMNS) + "      score")
    for path, c in rows:
        total.update(c)
        s = score(c)
        print(f"{path:{w}s} " + " ".join(f"{c[h]:11d}" for h in COLUMNS) + (f"  {s:8.1f} %" if s is not None else "        —"))
    s = score(total)
    print(f"{'total':{w}s} " + " ".join(f"{total[h]:11d}" for h in COLUMNS) + (f"  {s:8.1f} %" if s is not None else "        —"))
    return total


SAMPLE_FILE = "mutate-sample.json"  # in mutants/: the draw of --sample


def draw_sample(population: list[str], n: int, seed: int, chunk: int) -> dict:
    """``n`` names drawn uniformly at random (``seed``) from ``population``, cut into chunks of ``chunk`` in
    random order (a prefix of the chunks is itself a uniform sample)."""
    if n > len(population):
        raise BadInput(f"--sample: {n} is more than the {len(population)} mutants with no verdict")
    picked = random.Random(seed).sample(sorted(population), n)  # already in random order
    return {"seed": seed, "size": n, "population": sorted(population),
            "chunks": [picked[i:i + chunk] for i in range(0, n, chunk)]}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion k/n (95 % for z = 1.96)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, mid - half), min(1.0, mid + half)


def sample_estimate(sample: dict, codes: dict[str, int | None], equivalent: set[str], patterns: list[str]) -> dict:
    """The estimated score of the selection: the mutants outside the sample's population exactly, the
    population (U mutants) by the kill rate of the completed chunks of its sample (stratified estimation)."""
    population = set(sample["population"])
    done = [c for c in sample["chunks"] if all(status_of(codes.get(n)) != "not checked" for n in c)]
    members = [n for c in done for n in c]
    det = lambda ns: sum(1 for n in ns if n not in equivalent and status_of(codes.get(n)) in ("killed", "timeout"))  # noqa: E731
    ne = lambda ns: sum(1 for n in ns if n not in equivalent and status_of(codes.get(n)) not in ("not checked", "skipped"))  # noqa: E731
    outside = [n for n in codes if n not in population and (not patterns or any(fnmatch.fnmatch(n, p) for p in patterns))]
    unchecked_outside = sum(1 for n in outside if status_of(codes[n]) == "not checked")
    k, n, u = det(members), ne(members), len(population)
    out = {"chunks_done": len(done), "chunks": len(sample["chunks"]), "sampled": len(members), "killed": k,
           "non_equivalent": n, "population": u, "seed": sample["seed"], "size": sample["size"],
           "exact_killed": det(outside), "exact_non_equivalent": ne(outside), "unchecked_outside": unchecked_outside}
    if not members or not n:
        return out
    q = n / len(members)  # share of the population that is not equivalent (as in the sample)
    lo, hi = wilson(k, n)

    def over_all(rate):
        return 100.0 * (out["exact_killed"] + u * q * rate) / (out["exact_non_equivalent"] + u * q)

    out.update(rate=k / n, estimate=over_all(k / n), low=over_all(lo), high=over_all(hi))
    return out


def run_sample(sample: dict, codes: dict[str, int | None], max_children: int, niceness: int) -> int:
    """Run the sample's chunks in order, skipping chunks whose mutants all have verdicts."""
    rc = 0
    for i, chunk in enumerate(sample["chunks"]):
        todo = [n for n in chunk if status_of(codes.get(n)) == "not checked"]
        if not todo:
            continue
        print(f"--sample: chunk {i + 1} of {len(sample['chunks'])} ({len(todo)} mutants)", flush=True)
        rc = run_mutmut(todo, max_children, niceness) or rc
    return rc


#: Verdicts ``--open`` runs again: no verdict yet, or not killed.
OPEN = ("not checked", "survived", "no tests", "suspicious", "interrupted")


def open_mutants(results: dict[str, dict[str, int | None]], patterns: list[str],
                 statuses: frozenset | set = OPEN) -> list[str]:
    """The mutants of the selected part (all with no patterns) that have no verdict yet or were not killed
    (``statuses``; ``{"not checked"}`` for ``--unchecked``).

    mutmut re-runs every mutant a name pattern matches, checked or not; ``--open`` passes it these names
    instead, so an interrupted run continues and survivors are re-tested after new tests, nothing else."""
    return sorted(n for codes in results.values() for n, c in codes.items() if status_of(c) in statuses
                  and (not patterns or any(fnmatch.fnmatch(n, p) for p in patterns)))


def run_mutmut(patterns: list[str], max_children: int, niceness: int) -> int:
    exe = Path(sys.executable).parent / "mutmut"
    if not exe.exists():
        raise BadInput(f"{exe}: mutmut is not installed (pip install 'mutmut>=3.8,<4', the dev extra)")
    # the pure-Python engine (as before the compiled one existed): the tests that monkeypatch the engine
    # (pure_engine) then run in mutmut's own process, where it records which tests reach which mutant
    env = dict(os.environ, HYPOTHESIS_PROFILE="mutate", HOODIE_LAB_ENGINE="pure")
    env.pop("PYTHONPATH", None)  # mutants/ must win; mutmut puts it first on sys.path itself
    cmd = ["nice", "-n", str(niceness), str(exe), "run", "--max-children", str(max_children), *patterns]
    shown = cmd if len(patterns) <= 8 else cmd[: len(cmd) - len(patterns) + 3] + [f"... ({len(patterns)} names)"]
    print("running:", "HYPOTHESIS_PROFILE=mutate HOODIE_LAB_ENGINE=pure", " ".join(shown), flush=True)
    return subprocess.call(cmd, cwd=ROOT, env=env)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("patterns", nargs="*", help="mutant-name patterns (fnmatch), e.g. 'model.errors*'; default all")
    ap.add_argument("--max-children", type=int, default=2, help="parallel mutant runs (default 2: the machine is shared)")
    ap.add_argument("--nice", type=int, default=15, help="niceness of the mutmut run (default 15)")
    ap.add_argument("--target", type=float, default=90.0, help="required score in percent (default 90)")
    ap.add_argument("--report-only", action="store_true", help="do not run mutmut; report the results in mutants/")
    ap.add_argument("--fresh", action="store_true", help="delete mutants/ first (mutmut otherwise re-tests only changes)")
    ap.add_argument("--equivalent", type=Path, default=EQUIVALENT_FILE, help="the equivalent-mutants file")
    ap.add_argument("--open", action="store_true", help="run only the selected mutants with no verdict yet or not "
                    "killed (continue an interrupted run; re-test survivors after adding tests)")
    ap.add_argument("--unchecked", action="store_true", help="run only the selected mutants with no verdict yet "
                    "(continue an interrupted run without re-testing its survivors, the slowest mutants to run)")
    ap.add_argument("--sample", type=int, default=None, metavar="N",
                    help="estimate the rest: draw N of the mutants with no verdict at random, run them, and report "
                         "the estimated score of the whole selection with a 95 %% interval (see above)")
    ap.add_argument("--seed", type=int, default=1, help="the draw's seed (default 1; replay: the same --seed)")
    ap.add_argument("--chunk", type=int, default=50, help="sampled mutants per mutmut run (default 50)")
    ap.add_argument("--list-survivors", action="store_true", help="print every surviving / untested mutant's name")
    args = ap.parse_args(argv)
    if args.max_children < 1:
        raise BadInput(f"--max-children: must be at least 1, got {args.max_children}")
    if not 0 <= args.target <= 100:
        raise BadInput(f"--target: a percentage between 0 and 100, got {args.target}")
    if args.sample is not None and (args.sample < 1 or args.open or args.unchecked or args.fresh or args.report_only):
        raise BadInput(f"--sample: {args.sample}: a positive number of mutants, not with --open, --unchecked, "
                       "--fresh or --report-only")
    if args.chunk < 1:
        raise BadInput(f"--chunk: must be at least 1, got {args.chunk}")
    if args.open and args.unchecked:
        raise BadInput("--unchecked: a part of what --open runs; pass one of them")
    if (args.open or args.unchecked) and (args.fresh or args.report_only):
        raise BadInput(f"--{'open' if args.open else 'unchecked'}: continues the results in mutants/; not with "
                       "--fresh or --report-only")
    if args.report_only and args.fresh:
        raise BadInput("--fresh: deletes the results --report-only would read; pass one of them")

    os.chdir(ROOT)  # mutmut reads pyproject.toml and mutants/ relative to the project root
    equivalents = load_equivalents(args.equivalent)
    elapsed = None
    if not args.report_only:
        if args.fresh and (ROOT / "mutants").exists():
            shutil.rmtree(ROOT / "mutants")
        names = args.patterns
        if args.open or args.unchecked:
            flag = "--open" if args.open else "--unchecked"
            if not (ROOT / "mutants").exists():
                raise BadInput(f"{flag}: {ROOT / 'mutants'} holds no results yet; run without {flag} first")
            names = open_mutants(load_results(ROOT), args.patterns, OPEN if args.open else {"not checked"})
            print(f"{flag}: {len(names)} mutants without a verdict{' or not killed' if args.open else ''}", flush=True)
        started = time.perf_counter()
        if args.sample is not None:
            if not (ROOT / "mutants").exists():
                raise BadInput(f"--sample: {ROOT / 'mutants'} holds no results yet; run without --sample first")
            results = load_results(ROOT)
            codes = {n: c for per_file in results.values() for n, c in per_file.items()}
            path = ROOT / "mutants" / SAMPLE_FILE
            sample = json.loads(path.read_text()) if path.exists() else None
            if sample is None or (sample["seed"], sample["size"]) != (args.seed, args.sample):
                sample = draw_sample(open_mutants(results, args.patterns, {"not checked"}), args.sample, args.seed,
                                     args.chunk)
                path.write_text(json.dumps(sample))
                print(f"--sample: drew {args.sample} of {len(sample['population'])} mutants with no verdict "
                      f"(seed {args.seed}; {path})", flush=True)
            else:
                print(f"--sample: continuing the draw in {path}", flush=True)
            rc = run_sample(sample, codes, args.max_children, args.nice)
        else:
            rc = run_mutmut(names, args.max_children, args.nice) if names or not (args.open or args.unchecked) else 0
        elapsed = time.perf_counter() - started
        if rc != 0:
            print(f"mutmut run failed (exit {rc}); the results below are what it recorded", flush=True)

    results = load_results(ROOT)
    if not results:
        raise BadInput(f"{ROOT / 'mutants'}: no mutmut results (run without --report-only first)")
    codes = {name: code for per_file in results.values() for name, code in per_file.items()}
    unmatched = [p for p in args.patterns if not any(fnmatch.fnmatch(n, p) for n in codes)]
    if unmatched:
        raise BadInput(f"patterns: {unmatched} match no mutant of model/ (names look like "
                       f"model.filenames.x_is_base_file__mutmut_12; `mutmut results --all` lists them)")
    applied, stale, contradicted = check_equivalents(equivalents, codes, args.patterns)

    print()
    rows = table(results, applied, args.patterns)
    total = print_report(rows, args.target)
    s = score(total)
    missing = unmeasured_files(ROOT, results, args.patterns)
    if missing:
        print(f"\nnot measured (no mutmut result: new since the last run, or never run): {', '.join(missing)}")
    if elapsed is not None:
        print(f"\nmutmut run: {elapsed:.0f} s wall")

    print(f"\nequivalent mutants excluded ({len(applied)}, from {args.equivalent.relative_to(ROOT) if args.equivalent.is_relative_to(ROOT) else args.equivalent}):")
    for name in sorted(applied):
        print(f"  {name}: {equivalents[name]['line']}\n      why: {equivalents[name]['reason']}")
    for name, line, got in stale:
        print(f"  STALE, not applied: {name}: listed {line!r}, the mutant now is {got!r}")
    for name in contradicted:
        print(f"  WRONG: {name} is listed as equivalent but the tests killed it")

    if args.list_survivors:
        print("\nnot killed:")
        for name, code in sorted(codes.items()):
            if name not in applied and status_of(code) in ("survived", "no tests", "suspicious") \
                    and (not args.patterns or any(fnmatch.fnmatch(name, p) for p in args.patterns)):
                print(f"  {status_of(code):10s} {name}")

    est = None
    sample_path = ROOT / "mutants" / SAMPLE_FILE
    if total["not checked"] and sample_path.exists():
        try:
            est = sample_estimate(json.loads(sample_path.read_text()), codes, applied, args.patterns)
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise BadInput(f"{sample_path}: not a sample file of this script: {e}") from None
        print(f"\nsample (--sample {est['size']} --seed {est['seed']}): {est['chunks_done']} of {est['chunks']} chunks "
              f"done, {est['sampled']} of the {est['population']} mutants that had no verdict at the draw; killed "
              f"{est['killed']} of its {est['non_equivalent']} non-equivalent ones")
        if est["unchecked_outside"]:
            print(f"  ({est['unchecked_outside']} mutants outside the draw's population have no verdict: the estimate "
                  "counts them as not killed)")
            est["exact_non_equivalent"] += est["unchecked_outside"]
        if "estimate" in est:
            print(f"estimated mutation score of {'the selection' if args.patterns else 'model/'}: {est['estimate']:.1f} % "
                  f"(95 % interval {est['low']:.1f}-{est['high']:.1f} %): {est['exact_killed']} of "
                  f"{est['exact_non_equivalent']} checked outside the population, the population's "
                  f"{est['population']} at the sample's kill rate {100 * est['rate']:.1f} %")
    if total["not checked"]:
        print(f"\nINCOMPLETE: {total['not checked']} mutants not checked; the score is over the checked ones "
              "(exit 1: run the rest, or pass the patterns of the part you measured)")
    if s is None:
        print("FAILED: no mutant was checked")
        return 1
    verdict = "met" if s >= args.target else "MISSED"
    what = f"the mutants matching {' '.join(args.patterns)}" if args.patterns else "model/"
    if total["not checked"]:
        checked = sum(total.values()) - total["not checked"] - total["equivalent"]
        verdict += f" over the {checked} checked mutants only ({total['not checked']} not checked)"
    print(f"\nmutation score of {what}: {s:.1f} % (target >= {args.target:g} %): {verdict}")
    if est is not None and "estimate" in est:
        met = est["low"] >= args.target
        print(f"estimated over all of {what}: {est['estimate']:.1f} %, lower bound {est['low']:.1f} % "
              f"(target >= {args.target:g} %): {'met' if met else 'MISSED'} by the lower bound")
        if met and not contradicted:
            return 0
    print("replay one mutant: mutmut run NAME; show it: mutmut show NAME (HYPOTHESIS_PROFILE=mutate)")
    return 0 if s >= args.target and not contradicted and not total["not checked"] else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
