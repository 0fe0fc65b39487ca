"""``latentbench export`` never replaces an existing file silently (it may be the source)."""

from __future__ import annotations

import pandas as pd
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()


def test_export_refuses_an_existing_file_unless_force(tmp_path):
    source = tmp_path / "results.parquet"
    frame = pd.DataFrame({"model": ["a", "a", "b"], "item": ["x", "y", "x"], "score": [1.0, 0, 1]})
    frame.to_parquet(source, index=False)
    store = tmp_path / "s.duckdb"
    args = ["ingest", "table", str(source), "--store", str(store), "--benchmark", "b"]
    assert runner.invoke(app, args).exit_code == 0
    before = source.read_bytes()
    outcome = runner.invoke(app, ["export", str(source), "--store", str(store)])
    assert outcome.exit_code == 2
    assert f"{source} exists" in " ".join(outcome.output.split()) and "--force" in outcome.output
    assert source.read_bytes() == before
    outcome = runner.invoke(app, ["export", str(source), "--store", str(store), "--force"])
    assert outcome.exit_code == 0, outcome.output
    assert len(pd.read_parquet(source)) == 3
