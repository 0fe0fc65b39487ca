"""Errors the command-line parser raises before a command runs (an unknown option or command,
a value that does not convert, a missing argument, an extra one) follow the exit-status
contract of docs/usability.md ("In scripts, CI jobs and containers"): exit 2, nothing on
stdout and one ``error: ...`` line on stderr naming the option and the value as typed, with
a pointer to the command's ``--help``. They were typer's usage line and a boxed ``Error``,
some naming neither the option nor the value ("Input should be a valid number").
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()

CASES = [
    # (arguments, what the line must name, the --help it points to)
    (["fit", "x.csv", "--rnak", "2"], ["--rnak", "did you mean --rank?"], "latentbench fit"),
    (["fit", "x.csv", "--tol", "abc"], ["--tol abc", "number"], "latentbench fit"),
    (["fit", "x.csv", "--tol="], ["--tol ''", "number"], "latentbench fit"),
    (["fit", "x.csv", "--tol", "1\n2"], ["--tol '1\\n2'", "number"], "latentbench fit"),
    (["fit", "x.csv", "--r\nnk"], ["--r\\nnk", "no such option"], "latentbench fit"),
    (
        ["experiment", "x.csv", "--seeds", "1.5"],
        ["--seeds 1.5", "integer"],
        "latentbench experiment",
    ),
    (
        ["select", "replay", "x.csv", "--budget", "ten"],
        ["--budget ten", "integer"],
        "latentbench select replay",
    ),
    (["experiment", "x.csv", "--task", "bogus"], ["--task", "bogus", "'select'"], None),
    (["fit", "x.csv", "--rank"], ["--rank", "no value"], "latentbench fit"),
    (["report"], ["SOURCE", "missing"], "latentbench report"),
    # a folder given without the source was taken as SOURCE, and "PATHS: missing" alone
    # misled: the usage's arguments are named, with what SOURCE took
    (
        ["ingest", "results/"],
        ["PATHS: missing; expected latentbench ingest SOURCE PATHS... (SOURCE was results/)"],
        "latentbench ingest",
    ),
    (["ingest"], ["SOURCE: missing; expected latentbench ingest SOURCE PATHS..."], None),
    (["ls"], ["--store", "missing", "--store STORE"], "latentbench ls"),
    (["select", "live", "--store", "s.duckdb"], ["--config", "missing"], "latentbench select live"),
    (["fitt"], ["fitt", "did you mean 'fit'?"], "latentbench"),
    (["select", "replayy"], ["replayy", "did you mean 'replay'?"], "latentbench select"),
    (["--frobnicate"], ["--frobnicate"], "latentbench"),
    (["fit", "a.csv", "b.csv"], ["b.csv", "extra argument"], "latentbench fit"),
]


@pytest.mark.parametrize(
    ("args", "named", "command"), CASES, ids=[" ".join(case[0]) for case in CASES]
)
def test_a_parser_error_is_one_error_line_and_exit_2(tmp_path, monkeypatch, args, named, command):
    monkeypatch.chdir(tmp_path)
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 2, outcome.output
    assert outcome.stdout == ""
    lines = outcome.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), outcome.stderr
    for text in named:
        assert text in lines[0], lines[0]
    if command is not None:  # an error of the parser points to the command's --help
        assert lines[0].endswith(f" ({command} --help)"), lines[0]
    for box in ("Usage:", "Error", "╭", "│", "Try '"):
        assert box not in outcome.stderr


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"FORCE_COLOR": "1", "COLUMNS": "40"}])
def test_the_console_script_says_it_in_one_plain_line(tmp_path, env):
    """Through ``main()`` (the console script) on pipes, whatever the colour settings: no
    escape codes, no box, no line wrapped at the terminal's width."""
    code = "import sys; from latentbench.cli import main; sys.argv[0] = 'latentbench'; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "fit", "x.csv", "--tol", "abc"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "\x1b" not in done.stderr, done.stderr
    assert done.stderr.startswith("error: --tol abc: expected ")
    assert done.stderr.endswith(" (latentbench fit --help)\n")


def test_help_still_prints_help():
    for args in (["--help"], ["fit", "--help"], ["select", "--help"]):
        outcome = runner.invoke(app, args)
        assert outcome.exit_code == 0
        assert "Usage:" in outcome.stdout and outcome.stderr == ""
