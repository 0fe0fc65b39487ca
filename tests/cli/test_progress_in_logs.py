"""Progress in a log (stderr a pipe or a file: a CI job, ``nohup ... > log``, a scheduler):
every command printed nothing until its end there, so an experiment of an hour looked dead.
Now one mechanism (``_common.plain_progress``): no line for a command shorter than
``PROGRESS_LOG_EVERY`` (a minute), then ``PHASE ... DONE/TOTAL (N s)`` at most once a
minute, on stderr only, never under ``-q``."""

from __future__ import annotations

import io
import re
import time

import pytest
from rich.console import Console
from typer.testing import CliRunner

from latentbench.cli import _common, _register, app
from latentbench.synthetic import simulate_2pl

_register()
runner = CliRunner()


def _responses(tmp_path):
    path = tmp_path / "all.parquet"
    simulate_2pl(16, 60, random_state=4).matrix.to_long().to_parquet(path)
    return str(path)


def _experiments(tmp_path, name: str) -> list[tuple[list[str], str]]:
    path = _responses(tmp_path)
    return [
        (["experiment", path, "--seeds", "2", "--budget", "100", "--jobs", "1",
          "--out", str(tmp_path / f"{name}-a")], "runs"),
        (["experiment", path, "--task", "estimate", "--seeds", "1", "--budgets", "30",
          "--models", "model_00,model_01", "--out", str(tmp_path / f"{name}-b")],
         "held-out runs"),
    ]  # fmt: skip


def test_a_long_experiment_says_its_runs_in_a_log(tmp_path, monkeypatch):
    monkeypatch.setattr(_common, "PROGRESS_LOG_EVERY", 0.0)  # every run lasts "a minute"
    for argv, phase in _experiments(tmp_path, "long"):
        outcome = runner.invoke(app, argv)
        assert outcome.exit_code == 0, outcome.output
        said = re.findall(rf"^{phase} \.\.\. (\d+)(?:/(\d+))? \(\d+ s\)$", outcome.stderr, re.M)
        assert said and said[-1][0] == said[-1][1] != "", outcome.stderr  # the last: n/n
        assert f"{phase} ..." not in outcome.stdout and "wrote " in outcome.stdout
        assert "\x1b" not in outcome.stderr and "\r" not in outcome.stderr
        quiet = runner.invoke(app, [*argv[:-1], argv[-1] + "-q", "-q"])
        assert quiet.exit_code == 0, quiet.output
        assert f"{phase} ..." not in quiet.output


def test_a_short_experiment_prints_what_it_printed_in_a_log(tmp_path):
    assert _common.PROGRESS_LOG_EVERY == 60.0
    for argv, phase in _experiments(tmp_path, "short"):
        outcome = runner.invoke(app, argv)
        assert outcome.exit_code == 0, outcome.output
        assert f"{phase} ..." not in outcome.output, outcome.stderr


@pytest.fixture()
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    return now


def test_log_lines_come_after_a_minute_then_once_a_minute(clock):
    buffer = io.StringIO()
    stream = Console(file=buffer, width=80)  # a file: not a terminal
    show = _common.plain_progress(False, stream, detail=lambda: "spent 12 cells")
    assert show is not None and _common.plain_progress(True, stream) is None  # -q: none
    show("choosing the prior", 1, 5)
    for sweep in range(1, 200):  # 2 s apart: 398 s in all
        clock[0] += 2.0
        show("fitting", sweep, None)
    lines = buffer.getvalue().splitlines()
    assert lines[0] == "fitting ... 30 (58 s): spent 12 cells"  # none before a minute
    assert len(lines) == 398 // 60  # then one a minute
    assert all(line.startswith("fitting ... ") for line in lines)


def test_progress_bar_gives_the_log_lines_on_a_pipe_and_none_for_a_short_call(clock):
    for quiet, minutes, expected in ((False, 0.5, 0), (False, 3, 3), (True, 3, 0)):
        buffer = io.StringIO()
        with _common.progress_bar(quiet, Console(file=buffer, width=80)) as progress:
            for k in range(int(minutes * 6)):
                clock[0] += 10.0
                progress("bootstrap refits", k + 1, 100)
        lines = buffer.getvalue().splitlines()
        assert len(lines) == expected, (quiet, minutes, lines)
        assert all(re.fullmatch(r"bootstrap refits \.\.\. \d+/100 \(\d+ s\)", x) for x in lines)
