"""Bad arguments and experiment files to the CLI (issue #21, items 5 and 6): one table of cases.

Each case runs ``hoodie-lab`` in a fresh working directory and must exit 2 with exactly one line on
stderr naming the argument, key or file, print no traceback, and write or change nothing (the working
directory's tree -- names, sizes, modification times -- is the same before and after). The cases are
refused before any work starts, so the whole table takes a few seconds (one interpreter start each).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _toml(name: str, body: str):
    """An experiment file written into the case's directory."""
    return ("file", name, body)


#: (case id, argv (``{d}`` is the case directory), files to create, words stderr must contain)
CASES = [
    # item 5: a tiny sample_s used to hang allocating the time-series bins
    ("sample-tiny", ["simulate", "{d}/e.toml"], [_toml("e.toml", "[run]\nsample_s = 1e-7\n")],
     ["run.sample_s", "allowed", ">= 0.0006", "samples"]),
    ("sample-tiny-quick", ["simulate", "{d}/e.toml", "--quick"],
     [_toml("e.toml", "[run]\nduration_s = 10\nquick_duration_s = 7200\nsample_s = 0.001\n")],
     ["run.sample_s", "allowed"]),
    ("sample-tiny-swept", ["sweep", "{d}/e.toml", "--master", "none"],
     [_toml("e.toml", '[sweep]\n"run.sample_s" = [1.0, 1e-6]\n')], ["run.sample_s", "allowed"]),
    # item 6: --out that is a file, or below a file
    ("simulate-out-file", ["simulate", "blocking-vs-async", "--quick", "--out", "{d}/f"], [("file", "f", "x")],
     ["--out", "not a directory"]),
    ("simulate-out-below-file", ["simulate", "blocking-vs-async", "--quick", "--out", "{d}/f/sub"],
     [("file", "f", "x")], ["--out", "not a directory"]),
    ("sweep-out-file", ["sweep", "blocking-vs-async", "--quick", "--master", "none", "--out", "{d}/f"],
     [("file", "f", "x")], ["--out", "not a directory"]),
    ("report-out-file", ["report", "--out", "{d}/f"], [("file", "f", "x")], ["--out", "not a directory"]),
    ("report-out-below-file", ["report", "--out", "{d}/f/sub"], [("file", "f", "x")], ["--out", "not a directory"]),
    ("pipeline-out-file", ["pipeline", "run", "--out", "{d}/f"], [("file", "f", "x")], ["--out", "not a directory"]),
    ("pipeline-out-below-file", ["pipeline", "run", "--out", "{d}/f/run"], [("file", "f", "x")],
     ["--out", "not a directory"]),
    ("pipeline-table-below-file", ["pipeline", "run", "--out", "{d}/run", "--table", "{d}/f/t"],
     [("file", "f", "x")], ["--table", "not a directory"]),
    # item 6: collision experiments at the allowed maxima (a 247 GiB array before the bound)
    ("collisions-maxima", ["simulate", "{d}/c.toml"],
     [_toml("c.toml", 'kind = "collisions"\n[collisions]\nwriters = [10000]\nperiods_s = [0.001]\ndays = 365\n'
                      'runs = 10000000\njitter = 0.99\n')],
     ["collisions.writers", "collisions.periods_s", "collisions.days", "allowed: at most"]),
    ("collisions-total-work", ["simulate", "{d}/c.toml"],
     [_toml("c.toml", 'kind = "collisions"\n[collisions]\nwriters = [20]\nperiods_s = [1.0]\nruns = 10000000\n')],
     ["collisions.runs", "allowed: at most"]),
    ("collisions-truetime-work", ["simulate", "{d}/c.toml"],
     [_toml("c.toml", 'kind = "collisions"\n[collisions]\nwriters = [20]\nperiods_s = [1.0]\n'
                      'truetime_runs = 100000\ntruetime_days = 365\n')],
     ["collisions.truetime_runs", "collisions.truetime_days", "allowed: at most"]),
    ("collisions-jitter-1", ["simulate", "{d}/c.toml"],
     [_toml("c.toml", 'kind = "collisions"\n[collisions]\njitter = 1.0\n')], ["collisions.jitter", "< 1"]),
    ("truetime-study-maxima", ["simulate", "{d}/t.toml"],
     [_toml("t.toml", 'kind = "truetime"\n[truetime_study]\nwriters = [100000]\ntables = [100000]\n')],
     ["truetime_study.writers", "truetime_study.tables", "allowed: at most"]),
    # item 6: an experiment name is a directory name
    ("name-slash", ["simulate", "{d}/e.toml", "--quick"], [_toml("e.toml", 'name = "../../escape"\n')],
     ["name", "'../../escape'", "allowed"]),
    ("name-dotdot", ["simulate", "{d}/e.toml", "--quick"], [_toml("e.toml", 'name = "a..b"\n')], ["name", "'..'"]),
    ("name-absolute", ["sweep", "{d}/e.toml", "--master", "none"],
     [_toml("e.toml", 'name = "/tmp/x"\n[sweep]\n"writers.parallelism" = [1]\n')], ["name", "allowed"]),
    # audit X.zip: bad zips
    ("audit-not-a-zip", ["audit", "{d}/t.zip"], [("file", "t.zip", "not a zip")], ["t.zip", "not a readable zip"]),
    ("audit-zip-without-table", ["audit", "{d}/t.zip"], [("zip", "t.zip", {"a/readme.txt": "x"})],
     ["t.zip", "exactly one table"]),
    ("audit-zip-two-tables", ["audit", "{d}/t.zip"],
     [("zip", "t.zip", {"a/.hoodie/hoodie.properties": "x", "b/.hoodie/hoodie.properties": "x"})],
     ["t.zip", "exactly one table"]),
    ("audit-zip-truncated", ["audit", "{d}/t.zip"], [("truncated-zip", "t.zip", None)], ["t.zip"]),
    # issue #19: pipeline input (user data) and --master, refused before the run dir or the table exists
    *[(f"pipeline-input-{case}", ["pipeline", "run", "--out", "{d}/run", "--input", "{d}", *extra], files, words)
      for case, extra, files, words in [
          ("key-absent", ["--format", "json", "--record-key", "nope", "--partition-field", "p",
                          "--ordering-field", "ts"], [("file", "a.json", '{"id": "a", "ts": 1, "p": "x"}\n')],
           ["--record-key nope", "no such column"]),
          ("format-unknown", ["--format", "xml", "--record-key", "id", "--partition-field", "p",
                              "--ordering-field", "ts"], [("file", "a.json", "{}\n")], ["--format", "'xml'"]),
          ("format-missing", ["--record-key", "id"], [("file", "a.json", "{}\n")], ["--input", "--format"]),
          ("no-files", ["--format", "csv", "--record-key", "id", "--partition-field", "p", "--ordering-field",
                        "ts"], [("file", "a.json", "{}\n")], ["--input", "no csv files"]),
          ("schema-change", ["--format", "json", "--record-key", "id", "--partition-field", "p",
                             "--ordering-field", "ts"],
           [("file", "1.json", '{"id": "a", "ts": 1, "p": "x", "f": true}\n'),
            ("file", "2.json", '{"id": "a", "ts": 2, "p": "x", "f": 3}\n')],
           ["2.json", "column 'f' changes type boolean -> long"]),
          ("dropped-column", ["--format", "csv", "--record-key", "id", "--partition-field", "p",
                              "--ordering-field", "ts"],
           [("file", "1.csv", "id,ts,p,v\na,1,x,1\n"), ("file", "2.csv", "id,ts,p\na,2,x\n")],
           ["2.csv", "column 'v'", "dropped column"]),
          ("delete-not-boolean", ["--format", "json", "--record-key", "id", "--partition-field", "p",
                                  "--ordering-field", "ts", "--delete-field", "ts"],
           [("file", "a.json", '{"id": "a", "ts": 1, "p": "x"}\n')], ["--delete-field ts", "boolean"]),
          ("nested", ["--format", "json", "--record-key", "id", "--partition-field", "p", "--ordering-field",
                      "ts"], [("file", "a.json", '{"id": "a", "ts": 1, "p": "x", "o": [1]}\n')],
           ["a.json", "column 'o'", "flat columns"]),
      ]],
    ("pipeline-key-without-input", ["pipeline", "run", "--out", "{d}/run", "--record-key", "id"], [],
     ["--record-key", "only with --input"]),
    ("pipeline-master-unreachable", ["pipeline", "run", "--out", "{d}/run", "--master", "spark://127.0.0.1:1"], [],
     ["--master spark://127.0.0.1:1", "cannot reach the Spark master", "Connection refused"]),
    ("pipeline-master-malformed", ["pipeline", "run", "--out", "{d}/run", "--master", "spark://nohost"], [],
     ["--master spark://nohost", "not HOST:PORT"]),
    ("pipeline-master-unknown-scheme", ["pipeline", "run", "--out", "{d}/run", "--master", "yarn"], [],
     ["--master yarn", "spark://HOST:PORT"]),
]


def _make(d: Path, kind: str, name: str, body) -> None:
    import zipfile

    p = d / name
    if kind == "file":
        p.write_text(body)
    elif kind == "zip":
        with zipfile.ZipFile(p, "w") as zf:
            for entry, text in body.items():
                zf.writestr(entry, text)
    elif kind == "truncated-zip":
        with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("t/.hoodie/hoodie.properties", "hoodie.table.name=t\n" * 2000)
        data = p.read_bytes()
        p.write_bytes(data[: len(data) // 2])


def _tree(d: Path) -> dict:
    out = {}
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = Path(root) / n
            st = p.lstat()
            out[str(p.relative_to(d))] = (p.is_dir(), st.st_size, st.st_mtime_ns)
    return out


@pytest.mark.parametrize("case, argv, files, words", CASES, ids=[c[0] for c in CASES])
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, case, argv, files, words):
    d = tmp_path / "case"
    d.mkdir()
    for kind, name, body in files:
        _make(d, kind, name, body)
    before = _tree(d)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("HOODIE_LAB_PROGRESS", None)
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", *[a.format(d=d) for a in argv]],
                       capture_output=True, text=True, cwd=d, env=env, timeout=120)
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert r.stdout == ""
    assert _tree(d) == before, "the refused command wrote or changed something"


def test_shipped_experiments_pass_the_work_bounds():
    """The bounds refuse only what would hang: every shipped experiment stays within them."""
    from sim import config as cfg

    for name in cfg.shipped_names():
        cfg.load(name)


def test_real_fixture_zip_is_audited_in_place_read_only(tmp_path):
    """``audit X.zip`` reads the table inside the zip (exit 0 on a good fixture) and leaves the zip as it was."""
    from fixtures_util import fixture_zips

    zips = [z for z in fixture_zips() if z.stem == "v8_simplekeygen_nonhivestyle"] or fixture_zips()[:1]
    if not zips:
        pytest.skip("no fixture zips")
    z = tmp_path / zips[0].name
    shutil.copy2(zips[0], z)
    before = (z.read_bytes(), z.stat().st_mtime_ns)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "audit", str(z), "--json"], capture_output=True,
                       text=True, cwd=tmp_path, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    import json

    doc = json.loads(r.stdout)
    assert doc  # a whole audit document
    assert (z.read_bytes(), z.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [z.name]
