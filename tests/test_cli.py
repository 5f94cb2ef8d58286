import subprocess
import sys


def test_cli_without_command_prints_help_and_exits_2():
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli"], capture_output=True, text=True)
    assert r.returncode == 2
    assert "usage: hoodie-lab" in r.stdout


def test_cli_unknown_command_is_one_line_error():
    r = subprocess.run([sys.executable, "-m", "hoodie_lab.cli", "no-such-command"], capture_output=True, text=True)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_every_column_simulate_prints_is_explained():
    """print_outcome's `columns:` line explains every header it can show, per experiment kind."""
    from hoodie_lab.commands.simulate import COLUMNS, LEGEND, LEGEND_OF_KIND

    for kind, cols in COLUMNS.items():
        legend = {**LEGEND, **LEGEND_OF_KIND.get(kind, {})}
        assert [h for _, h in cols if h not in legend] == [], kind
    assert "request" not in LEGEND["p50 s"] and "instant time" in LEGEND_OF_KIND["truetime"]["p50 s"]
