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
