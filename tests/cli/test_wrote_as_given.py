"""The ``wrote ...`` lines print a path as the user gave it: ``--out ./res`` printed
``wrote res/abilities.csv`` (pathlib drops a leading ``./``), a path the user never typed.
Every command that writes files spells its wrote line the same way (``as_given``)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app, as_given

_register()
runner = CliRunner()


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """cal.csv (six models), new.csv and other.csv (one model each), a fit of cal.csv, and a
    store holding cal.csv."""
    folder = tmp_path_factory.mktemp("given")
    bits = ("110101", "100100", "111100", "010010", "110011", "101110", "011011", "100111")
    rows = [f"m{k}," + ",".join(b) for k, b in enumerate(bits)]
    header = "model," + ",".join(f"q{j}" for j in range(1, 7))
    (folder / "cal.csv").write_text("\n".join([header, *rows[:6]]) + "\n")
    (folder / "new.csv").write_text("\n".join([header, rows[6]]) + "\n")
    (folder / "other.csv").write_text("\n".join([header, rows[7]]) + "\n")
    for args in (
        ["fit", str(folder / "cal.csv"), "--out", str(folder / "fit"), "-q"],
        ["ingest", "table", str(folder / "cal.csv"), "--benchmark", "b", "--store",
         str(folder / "s.duckdb")],
    ):  # fmt: skip
        outcome = runner.invoke(app, args)
        assert outcome.exit_code == 0, outcome.output
    return folder


COMMANDS = {
    "fit": (["fit", "cal.csv", "--out", "./res", "-q"], "./res/abilities.csv, ./res/items.csv"),
    "fit-slash": (["fit", "cal.csv", "--out=./res2/", "-q"], "./res2/fit.json"),
    "report": (["report", "fit", "--out", "./r.html", "-q"], "wrote ./r.html ("),
    "select": (
        ["select", "replay", "cal.csv", "--no-history", "-q", "--out", "./sel"],
        "wrote ./sel/selection.json",
    ),
    "experiment": (
        ["experiment", "cal.csv", "--seeds", "2", "-q", "--init-batch", "2", "--out", "./exp"],
        "wrote ./exp/summary.json, summary.csv, curves.csv",
    ),
    "experiment-slash": (  # printed 'wrote ./exp2//summary.json' (the folder, then '/')
        ["experiment", "cal.csv", "--seeds", "2", "-q", "--init-batch", "2", "--out=./exp2/"],
        "wrote ./exp2/summary.json, summary.csv, curves.csv",
    ),
    "tiny": (["tiny", "fit", "--k", "2", "--out", "./i.csv"], "wrote 2 items to ./i.csv"),
    "export": (["export", "./e.csv", "--store", "s.duckdb"], "rows to ./e.csv"),
    "estimate": (
        ["estimate", "fit", "new.csv", "--budget", "3", "--out", "./est", "-q"],
        "wrote ./est/estimate.json, ./est/estimates.csv",
    ),
    "compare": (
        ["compare", "cal.csv", "new.csv", "other.csv", "--budget", "3", "-o", "./c", "-q"],
        "wrote ./c/compare.json",
    ),
}


@pytest.fixture(scope="module")
def demo_output(shared_demo) -> tuple[str, str]:
    """``latentbench demo --out ./LONG/my demo``: its ``--out`` as given (a leading ``./``,
    longer than 80 columns with its text) and what it printed, read by the tests of its wrote
    lines (the path as given and a long path kept on one line). One run for the session
    (``conftest.shared_demo``, read by the demo's own test too; was a ``--seeds 2`` demo of
    this module's own, ~4 s of CPU)."""
    _, given, output, _ = shared_demo
    assert given.startswith("./") and len(f"Wrote {given}/fit/abilities.csv") > 80
    return given, output


@pytest.mark.parametrize("command", [*COMMANDS, "demo"])
def test_wrote_lines_print_the_path_as_given(folder, monkeypatch, request, command):
    if command == "demo":
        given, output = request.getfixturevalue("demo_output")
        said = f"Wrote {given}/fit/abilities.csv"
    else:
        args, said = COMMANDS[command]
        monkeypatch.chdir(folder)
        outcome = runner.invoke(app, args)
        assert outcome.exit_code == 0, outcome.output
        output = outcome.output
    assert said in " ".join(output.split()), output


def test_demo_wrote_lines_keep_a_long_path_on_one_line(demo_output):
    # outside a terminal rich folded these lines at 80 columns, cutting the path in two
    given, output = demo_output
    lines = output.splitlines()
    page = f"{given}{os.sep}report.html"
    assert f"Wrote the HTML report {page} (open it in a browser)." in lines, output
    wrote = next(x for x in lines if x.startswith(f"Wrote {given}"))
    assert f"{given}{os.sep}fit{os.sep}fit.json, " in wrote, output


def test_demo_command_lines_spell_the_out_folder_as_given(demo_output):
    # the estimate command the demo suggests and the responses it names dropped the
    # leading ./ that its wrote lines keep: one spelling of the folder in every line
    given, output = demo_output
    lines = output.splitlines()
    calibration = shlex.quote(f"{given}{os.sep}calibration.parquet")
    new_model = shlex.quote(f"{given}{os.sep}new_model.parquet")
    suggested = f"The same with the command: latentbench estimate {calibration} {new_model} "
    assert any(line.startswith(suggested) for line in lines), output
    assert f"Responses used here:   {given}{os.sep}responses.parquet" in lines, output


def test_as_given_keeps_a_path_the_user_did_not_spell_otherwise(monkeypatch):
    from latentbench import cli

    monkeypatch.setattr(cli, "_GIVEN", {"res": "./res/", "a/b": "a//b"})
    assert as_given(Path("res")) == "./res/"
    assert as_given(Path("res") / "fit.json") == f".{os.sep}res{os.sep}fit.json"
    assert as_given(Path("a/b/c.csv")) == f"a//b{os.sep}c.csv"
    assert as_given(Path("resx/fit.json")) == str(Path("resx/fit.json"))  # not under res
    assert as_given(Path("/abs/x")) == str(Path("/abs/x"))
