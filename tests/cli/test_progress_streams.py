"""Progress goes to standard error, results to standard output (docs/usability.md).

``experiment`` drew its progress bar and printed its "1 of N runs done in 3 s: about 0.4
more minutes" line on standard output, and ``select replay`` its "reading the responses"
spinner (under ``-q`` too), so ``latentbench experiment ... > table.txt`` or a CI log that
colours its output (``FORCE_COLOR``) got progress mixed into the results.
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from latentbench.cli import _common, _register, app
from latentbench.synthetic import simulate_2pl

_register()
runner = CliRunner()


@pytest.fixture()
def terminals(monkeypatch):
    """Colours forced (FORCE_COLOR, a CI job's setting): rich takes both streams for
    terminals, though they are not."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    assert _common.console.is_terminal and _common.err_console.is_terminal


def _responses(tmp_path, models=30, items=120):
    path = tmp_path / "all.parquet"
    simulate_2pl(models, items, random_state=4).matrix.to_long().to_parquet(path)
    return path


def test_experiment_progress_and_time_left_go_to_stderr(tmp_path, terminals):
    args = ["experiment", _responses(tmp_path), "--pools", "full", "--policies", "pulse,ucbe",
            "--seeds", "2", "--budget", "200", "--batch-size", "20", "--init-batch", "10",
            "--pool-size", "10", "--rank", "2", "--jobs", "1",
            "--out", tmp_path / "exp"]  # fmt: skip
    outcome = runner.invoke(app, [str(a) for a in args])
    assert outcome.exit_code == 0, outcome.output
    assert re.search(r"1 of 4 runs done in \d+ s: about [\d.]+ more minutes", outcome.stderr)
    assert "runs done" not in outcome.stdout
    assert "\x1b[?25l" not in outcome.stdout  # no live display (cursor hidden) on stdout
    assert "wrote " in outcome.stdout


def test_experiment_estimate_progress_goes_to_stderr(tmp_path, terminals):
    args = ["experiment", _responses(tmp_path), "--task", "estimate", "--seeds", "1",
            "--budgets", "10,20", "--models", "model_00,model_01",
            "--out", tmp_path / "est"]  # fmt: skip
    outcome = runner.invoke(app, [str(a) for a in args])
    assert outcome.exit_code == 0, outcome.output
    assert "\x1b[?25l" not in outcome.stdout


def test_select_replay_spinner_goes_to_stderr_and_not_under_quiet(tmp_path, terminals):
    path = _responses(tmp_path)
    base = ["select", "replay", str(path), "--no-history", "--budget", "200"]
    outcome = runner.invoke(app, [*base, "--out", str(tmp_path / "s1")])
    assert outcome.exit_code == 0, outcome.output
    assert "\x1b[?25l" not in outcome.stdout
    assert "\x1b[?25l" not in outcome.stderr  # colours forced on a pipe: no spinner either
    quiet = runner.invoke(app, [*base, "--out", str(tmp_path / "s2"), "-q"])
    assert quiet.exit_code == 0, quiet.output
    assert "\x1b" not in quiet.stderr and "reading the responses" not in quiet.output


def test_colours_forced_on_a_pipe_cut_no_number_and_draw_no_bar(tmp_path, terminals):
    """FORCE_COLOR (a CI job's setting) made rich treat a pipe as a terminal: the experiment
    table was cut at 80 columns ('gap0.…', '[0.4…') and the progress bar redrawn into the
    log at every refresh."""
    args = ["experiment", _responses(tmp_path), "--pools", "gap:0.01,full",
            "--policies", "pulse,ucbe,naive", "--seeds", "2", "--budget", "200",
            "--batch-size", "20", "--init-batch", "10", "--pool-size", "10", "--rank", "2",
            "--jobs", "1", "--out", tmp_path / "exp"]  # fmt: skip
    outcome = runner.invoke(app, [str(a) for a in args])
    assert outcome.exit_code == 0, outcome.output
    assert "…" not in outcome.stdout, outcome.stdout
    assert "\x1b[?25l" not in outcome.stderr and "━" not in outcome.stderr
