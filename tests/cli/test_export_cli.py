"""``latentbench export`` never replaces an existing file silently (it may be the source)."""

from __future__ import annotations

import pandas as pd
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()


def _ingested(tmp_path):
    """A three-row table file and the store it was ingested into."""
    source = tmp_path / "results.parquet"
    frame = pd.DataFrame({"model": ["a", "a", "b"], "item": ["x", "y", "x"], "score": [1.0, 0, 1]})
    frame.to_parquet(source, index=False)
    store = tmp_path / "s.duckdb"
    args = ["ingest", "table", str(source), "--store", str(store), "--benchmark", "b"]
    assert runner.invoke(app, args).exit_code == 0
    return source, store


def test_export_refuses_an_existing_file_unless_force(tmp_path):
    source, store = _ingested(tmp_path)
    before = source.read_bytes()
    outcome = runner.invoke(app, ["export", str(source), "--store", str(store)])
    assert outcome.exit_code == 2
    assert f"{source} exists" in " ".join(outcome.output.split()) and "--force" in outcome.output
    assert source.read_bytes() == before
    outcome = runner.invoke(app, ["export", str(source), "--store", str(store), "--force"])
    assert outcome.exit_code == 0, outcome.output
    assert len(pd.read_parquet(source)) == 3


def test_eee_export_never_mixes_with_a_folder_of_earlier_records(tmp_path):
    """An eee export into a folder of an earlier export merged with it (and `ingest eee` read
    both back); a file name made a folder named x.parquet."""
    _, store = _ingested(tmp_path)
    out = tmp_path / "eee"
    export = ["export", str(out), "--format", "eee", "--store", str(store)]
    assert runner.invoke(app, export).exit_code == 0
    files = sorted(p.name for p in out.rglob("*"))
    outcome = runner.invoke(app, export)
    assert outcome.exit_code == 2 and "not empty" in " ".join(outcome.output.split())
    assert runner.invoke(app, [*export, "--force"]).exit_code == 0
    assert sorted(p.name for p in out.rglob("*")) == files
    named = ["export", str(tmp_path / "x.parquet"), "--format", "eee", "--store", str(store)]
    outcome = runner.invoke(app, named)
    assert outcome.exit_code == 2 and not (tmp_path / "x.parquet").exists()
