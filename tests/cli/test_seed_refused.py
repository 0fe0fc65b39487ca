"""A negative --seed is an error that names it (numpy's generators raised a bare
ValueError with a traceback, exit 1), on every command that takes one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    rng = np.random.default_rng(2)
    Y = (rng.random((8, 60)) < 0.6).astype(float)
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(8)])
    frame.columns = [f"q{j}" for j in range(60)]
    long = frame.rename_axis("model").reset_index().melt(id_vars="model", var_name="item")
    long = long.rename(columns={"value": "score"})
    tmp = tmp_path_factory.mktemp("seed")
    long.to_parquet(tmp / "all.parquet")
    long[long.model != "m7"].to_parquet(tmp / "cal.parquet")
    long[long.model == "m7"].to_parquet(tmp / "new.parquet")
    long[long.model == "m6"].to_parquet(tmp / "other.parquet")
    return tmp


@pytest.mark.parametrize(
    "args",
    [
        ["estimate", "{t}/cal.parquet", "{t}/new.parquet"],
        ["tiny", "{t}/cal.parquet", "--k", "5"],
        ["compare", "{t}/cal.parquet", "{t}/new.parquet", "{t}/other.parquet"],
        ["select", "replay", "{t}/all.parquet", "--budget", "10"],
        ["experiment", "{t}/all.parquet", "--seeds", "1"],
    ],
    ids=["estimate", "tiny", "compare", "select-replay", "experiment"],
)
def test_negative_seed_is_refused_by_name(files, tmp_path, args):
    out = tmp_path / ("o.csv" if args[0] == "tiny" else "o")  # tiny writes a .csv file
    argv = [a.format(t=files) for a in args] + ["--seed", "-1", "--out", str(out)]
    outcome = runner.invoke(app, argv)
    assert outcome.exit_code == 2, outcome.output
    assert "--seed -1; expected an integer >= 0" in " ".join(outcome.output.split())
    assert "Traceback" not in outcome.output


@pytest.mark.parametrize("command", [["tiny"], ["compare"]])
def test_a_store_as_calibration_points_to_its_store_options(files, tmp_path, command):
    """tiny / compare on a .duckdb advised '--store STORE --benchmark NAME' when they did not
    have those options (then they pointed to `fit --store`); they have them now."""
    store = tmp_path / "s.duckdb"
    store.write_bytes(b"")
    extra = [] if command == ["tiny"] else [str(files / "new.parquet")]
    outcome = runner.invoke(app, [*command, str(store), *extra])
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 2
    assert f"or calibrates on a benchmark of a store with --store {store} --benchmark NAME" in text


def test_ctrl_c_is_said_not_a_silent_exit(files, monkeypatch, tmp_path):
    """typer turned Ctrl-C into a silent exit 130; every command now says it stopped."""
    import latentbench.select as select

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(select, "estimate_experiment", interrupted)
    argv = ["experiment", str(files / "all.parquet"), "--task", "estimate", "--out"]
    outcome = runner.invoke(app, [*argv, str(tmp_path / "o")])
    assert outcome.exit_code == 130
    assert "interrupted (Ctrl-C): latentbench experiment stopped" in outcome.output
