"""``-q`` drops tables and progress, never where the files went.

Found on a newcomer's walk: ``latentbench fit FILE -q`` (run twice) wrote ./latentbench-fit-2
and printed nothing, so the second fit's folder could only be guessed; ``select replay -q``
also hid the history split (half the models learn the proxy and are no longer candidates).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()


@pytest.fixture(scope="module")
def responses(tmp_path_factory) -> Path:
    rng = np.random.default_rng(0)
    ability = rng.normal(size=12)[:, None]
    difficulty = rng.normal(size=40)[None, :]
    scores = (rng.random((12, 40)) < 1 / (1 + np.exp(difficulty - ability))).astype(float)
    frame = pd.DataFrame(
        scores, index=[f"m{i:02d}" for i in range(12)], columns=[f"q{j}" for j in range(40)]
    )
    path = tmp_path_factory.mktemp("responses") / "wide.csv"
    frame.rename_axis("model").to_csv(path)
    return path


def _run(args: list[str], cwd: Path) -> str:
    import os

    here = os.getcwd()
    os.chdir(cwd)
    try:
        outcome = runner.invoke(app, args)
    finally:
        os.chdir(here)
    assert outcome.exit_code == 0, outcome.output
    return " ".join(outcome.output.split())


def test_fit_quiet_names_the_folder_it_chose(responses, tmp_path):
    _run(["fit", str(responses), "-q"], tmp_path)  # ./latentbench-fit
    text = _run(["fit", str(responses), "-q"], tmp_path)  # ./latentbench-fit-2
    assert (tmp_path / "latentbench-fit-2" / "abilities.csv").is_file()
    assert "wrote latentbench-fit-2/abilities.csv" in text, text
    assert "Top" not in text  # still no table


def test_select_replay_quiet_names_its_file_and_the_history_split(responses, tmp_path):
    _run(["select", "replay", str(responses), "--budget", "40", "-q"], tmp_path)
    text = _run(["select", "replay", str(responses), "--budget", "40", "-q"], tmp_path)
    assert (tmp_path / "latentbench-select-2" / "selection.json").is_file()
    assert "wrote latentbench-select-2/selection.json" in text, text
    assert "history split: no history given" in text, text


def test_report_quiet_names_the_page_it_chose(responses, tmp_path):
    _run(["fit", str(responses), "--out", "fit", "-q"], tmp_path)
    _run(["report", "fit", "-q"], tmp_path)  # ./report.html
    text = _run(["report", "fit", "-q"], tmp_path)  # ./report-2.html
    assert (tmp_path / "report-2.html").is_file()
    assert "wrote report-2.html" in text, text


def test_experiment_estimate_quiet_names_the_folder_it_chose(responses, tmp_path):
    args = ["experiment", str(responses), "--task", "estimate", "--seeds", "1"]
    args += ["--models", "m00", "--budgets", "5", "--precision", "0", "-q"]
    _run(args, tmp_path)
    text = _run(args, tmp_path)
    assert (tmp_path / "latentbench-experiment-2" / "summary.json").is_file()
    assert "wrote latentbench-experiment-2/runs.csv" in text, text


def test_fits_next_line_works_when_pasted_after_an_earlier_report(responses, tmp_path):
    # the first fit's next: line wrote report.html; a second fit printed the same line, which
    # then failed when pasted: "--out report.html exists; pass --force"
    import shlex

    for _ in range(3):
        text = _run(["fit", str(responses), "--out", "my fit"], tmp_path)
        line = text[text.index("next: ") :].removeprefix("next: ")
        args = shlex.split(line)
        assert args[:3] == ["latentbench", "report", "my fit"], line
        _run([*args[1:], "-q"], tmp_path)
    assert {p.name for p in tmp_path.glob("report*.html")} == {
        "report.html",
        "report-2.html",
        "report-3.html",
    }


def test_experiments_report_line_works_when_pasted(responses, tmp_path):
    # the experiment's 'report:' line printed its folder unquoted: a folder with a space was
    # split into two arguments when pasted
    import shlex

    args = ["experiment", str(responses), "--task", "estimate", "--seeds", "1"]
    args += ["--models", "m00", "--budgets", "5", "--precision", "0", "--out", "my exp"]
    text = _run(args, tmp_path)
    line = text[text.index("report: ") :].removeprefix("report: ")
    pasted = shlex.split(line)
    assert pasted == ["latentbench", "report", "my exp"], line
    _run([*pasted[1:], "--out", "page.html", "-q"], tmp_path)
    assert (tmp_path / "page.html").is_file()


@pytest.fixture(scope="module")
def split_files(responses, tmp_path_factory) -> Path:
    """The responses' first ten models as a calibration, the other two as new models."""
    wide = pd.read_csv(responses, index_col="model")
    folder = tmp_path_factory.mktemp("split")
    wide.iloc[:10].to_csv(folder / "cal.csv")
    wide.iloc[10:11].to_csv(folder / "new.csv")
    wide.iloc[11:].to_csv(folder / "other.csv")
    return folder


def _progress_spy(monkeypatch, module) -> list[bool]:
    """The ``quiet`` each progress bar of ``module`` was drawn with."""
    from latentbench.cli import _common

    asked: list[bool] = []

    def spy(quiet: bool = False, stream=None):
        asked.append(quiet)
        return _common.progress_bar(quiet, stream)

    monkeypatch.setattr(module, "progress_bar", spy)
    return asked


def test_estimate_quiet_keeps_the_result_and_wrote_lines(split_files, tmp_path, monkeypatch):
    from latentbench.cli import _estimate

    asked = _progress_spy(monkeypatch, _estimate)
    args = ["estimate", "cal.csv", "new.csv", "--budget", "20", "--out", str(tmp_path / "e")]
    loud = _run(args, split_files)
    quiet = _run([*args, "-q"], split_files)
    for text in (loud, quiet):
        assert "score " in text and " after 20 of 40 items" in text, text
        assert f"wrote {tmp_path / 'e' / 'estimate.json'}" in text, text
    assert "[ ]: the 95% interval" in loud and "[ ]:" not in quiet, quiet
    assert asked == [False, True]  # the progress bar is off under -q


def test_compare_quiet_keeps_the_result_and_wrote_lines(split_files, tmp_path):
    args = ["compare", "cal.csv", "new.csv", "other.csv", "--budget", "20"]
    args += ["--out", str(tmp_path / "c")]
    loud = _run(args, split_files)
    quiet = _run([*args, "-q"], split_files)
    for text in (loud, quiet):
        assert "m10 - m11" in text and f"wrote {tmp_path / 'c' / 'compare.json'}" in text, text
    assert "[ ]: the 95% interval of the difference" in loud and "[ ]:" not in quiet, quiet


def test_ingest_quiet_keeps_the_rows_line_and_what_was_dropped(tmp_path, monkeypatch):
    from latentbench.cli import _ingest

    asked = _progress_spy(monkeypatch, _ingest)
    table = tmp_path / "long.csv"
    table.write_text("model,item,score\nm1,q1,1\nm1,q2,\nm2,q1,0\nm2,q2,1\nm3,q1,1\nm3,q2,1\n")
    texts = []
    for name, extra in (("loud", []), ("quiet", ["-q"])):
        args = ["ingest", "table", "long.csv", "--store", f"{name}.duckdb", "--benchmark", "b"]
        texts.append(_run([*args, *extra], tmp_path))
    loud, quiet = texts
    for text, store in ((loud, "loud"), (quiet, "quiet")):
        assert f"5 new rows in {store}.duckdb (0 already present, 0 replaced)" in text, text
        assert "dropped 1: empty score (missing)" in text, text  # rows lost: said under -q too
    for said in ("table: 1 file, 6 records, 5 rows", "metric='score'", "next: latentbench fit"):
        assert said in loud and said not in quiet, (said, quiet)
    assert asked == [False, True]


def test_a_progress_bar_that_is_off_writes_nothing():
    """Off (``-q``, or stderr not a terminal: a log, a pipe, CI), the bar writes nothing, not
    even an empty line: rich before 14.3 printed one when a disabled ``Progress`` stopped, which
    put a blank first line above ``estimate``'s result and into ``--json`` output."""
    import io

    from rich.console import Console
    from rich.progress import Progress

    from latentbench.cli._common import progress_bar, shown

    for quiet in (False, True):  # not a terminal either way
        buffer = io.StringIO()
        with progress_bar(quiet, Console(file=buffer, force_terminal=False)) as progress:
            progress("fitting", 3, 10)
        assert buffer.getvalue() == ""
    buffer = io.StringIO()
    with shown(Progress(console=Console(file=buffer), disable=True, transient=True)) as bar:
        task = bar.add_task("runs", total=4)
        bar.update(task, completed=2)
    assert buffer.getvalue() == "" and bar.tasks[0].completed == 2
