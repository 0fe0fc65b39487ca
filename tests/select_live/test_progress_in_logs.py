"""Live runs in a log (stderr a pipe or a file: a CI job, ``nohup ... > log``): a progress
line once a minute (``_common.PROGRESS_LOG_EVERY``), with what matters there (cells spent
and left, the cap, the leader or the estimate with its interval); none for a short run,
none under ``-q``, and never on stdout (``--json`` stays one JSON document).

``estimate --live`` and ``compare --live`` printed nothing until the end, and ``select
live`` a line at once and every 5 s (its own rule), whatever the run's length.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _common, _register, app

_register()


def _invoke(s, *args: str):
    env = {s.key_env: s.api_key, "LATENTBENCH_CACHE_DIR": str(s.tmp / "cache")}
    return CliRunner().invoke(app, list(args), env=env)


def _calibration(s) -> str:
    path = s.tmp / "calib.csv"
    pd.read_csv(s.tmp / "history.csv").to_csv(path, index=False)
    return str(path)


def _commands(s, store: str) -> dict[str, list[str]]:
    config = str(s.write_config())
    cal = _calibration(s)
    return {
        "select live": ["select", "live", "--config", config, "--store", f"{store}-s.duckdb"],
        "estimate --live": ["estimate", cal, "--live", config, "--store", f"{store}-e.duckdb",
                            "--model", "model-1", "--budget", "8"],
        "compare --live": ["compare", cal, "--live", config, "--store", f"{store}-c.duckdb",
                           "--a", "model-3", "--b", "model-0", "--budget", "6",
                           "--out", f"{store}-cmp"],
    }  # fmt: skip


_LINE = {
    "select live": re.compile(
        r"^select live \.\.\. [\d,]+/[\d,]+ \(\d+ s\): batch \d+ \(.*\| run: spent \d+, .*"
        r"\| leader model-\d [\d.]+ \[[\d.]+, [\d.]+\]$",
        re.M,
    ),
    "estimate --live": re.compile(
        r"^items asked \.\.\. \d+/8 \(\d+ s\): run \S+ \(estimate --live, running; PID \d+\): "
        r"batch \d+, spent \d+ cells?, \d+ left; model-1 [\d.]+ \[[\d.]+, [\d.]+\] on \d+ items?$",
        re.M,
    ),
    "compare --live": re.compile(
        r"^items asked \.\.\. \d+/6 \(\d+ s\): run \S+ \(compare --live, running; PID \d+\): "
        r"batch \d+, spent \d+ cells?, \d+ left; model-3 - model-0 -?[\d.]+ \[-?[\d.]+, "
        r"-?[\d.]+\] on \d+ items?$",
        re.M,
    ),
}


@pytest.mark.parametrize("command", list(_LINE))
def test_a_long_live_run_says_its_progress_in_a_log_and_only_there(
    live_setup, monkeypatch, command
):
    s = live_setup
    monkeypatch.setattr(_common, "PROGRESS_LOG_EVERY", 0.0)  # every run lasts "a minute"
    args = _commands(s, str(s.tmp / "long"))[command]
    outcome = _invoke(s, *args, "--json")
    assert outcome.exit_code == 0, outcome.output
    said = _LINE[command].findall(outcome.stderr)
    assert len(said) >= 2, outcome.stderr  # at the start and as it goes
    assert "\x1b" not in outcome.stderr and "\r" not in outcome.stderr
    json.loads(outcome.stdout)  # stdout holds the JSON document only
    assert " ... " not in outcome.stdout
    quiet = _invoke(s, *_commands(s, str(s.tmp / "quiet"))[command], "-q")
    assert quiet.exit_code == 0, quiet.output
    assert " ... " not in quiet.output and "| run: spent" not in quiet.output


@pytest.mark.parametrize("command", list(_LINE))
def test_a_short_live_run_prints_no_progress_line_in_a_log(live_setup, command):
    s = live_setup
    assert _common.PROGRESS_LOG_EVERY == 60.0
    outcome = _invoke(s, *_commands(s, str(s.tmp / "short"))[command])
    assert outcome.exit_code == 0, outcome.output
    assert " ... " not in outcome.output and "| run: spent" not in outcome.output, outcome.stderr
