"""``--store S`` without ``--benchmark``: the error names the store and its benchmarks.

Found on a newcomer's walk: ``latentbench fit --store results.duckdb`` said "--store needs
--benchmark NAME (see `latentbench ls --store ...`)": neither the store's path nor any of the
names it expected, though the store held one benchmark.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("store")
    table = folder / "wide.csv"
    table.write_text("model,q1,q2,q3\nm1,1,0,1\nm2,0,0,1\nm3,1,1,1\nm4,0,1,0\n")
    path = folder / "results.duckdb"
    for name in ("mmlu", "arc"):
        args = ["ingest", "table", str(table), "--store", str(path), "--benchmark", name]
        assert runner.invoke(app, args).exit_code == 0
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["fit"],
        ["select", "replay"],
        ["estimate", "new.parquet"],
        ["tiny"],
        ["compare", "a.parquet", "b.parquet"],
        ["experiment"],
    ],
)
def test_the_error_lists_the_benchmarks_of_the_store(store, command):
    outcome = runner.invoke(app, [*command, "--store", str(store)])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2 and "Traceback" not in text, text
    assert str(store) in text and "arc, mmlu" in text, text
    assert "--store ..." not in text


def test_a_missing_store_is_said_missing(tmp_path):
    outcome = runner.invoke(app, ["fit", "--store", str(tmp_path / "nope.duckdb")])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2 and "store not found" in text, text


def test_report_of_a_store_of_ingested_results_names_the_fit_to_run(store, tmp_path):
    # it said "for ingested results use `latentbench fit --store ... --benchmark ...`"
    outcome = runner.invoke(app, ["report", str(store), "--out", str(tmp_path / "r.html")])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2 and "Traceback" not in text, text
    assert f"latentbench fit --store {store} --benchmark arc" in text, text
    assert "2 benchmarks (arc, mmlu)" in text and "--store ..." not in text, text
