"""``latentbench estimate`` / ``tiny`` / ``compare`` on hostile command lines: a clear error
naming the option and the value, before any work."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from latentbench.cli import _register, app

_register()
runner = CliRunner()


def _long(n: int = 40) -> pd.DataFrame:
    return pd.DataFrame({"item": [str(j) for j in range(n)], "score": np.tile([1.0, 0.0], n // 2)})


def test_cli_refuses_budget_or_precision_with_items(tmp_path):
    calibration, new, items = (tmp_path / n for n in ("calib.parquet", "new.csv", "items.csv"))
    _long().assign(model="a").to_parquet(calibration)  # never read: refused before
    _long().to_csv(new, index=False)
    items.write_text("item,order,probability\n0,1,0.1\n")
    for option in (["--budget", "10"], ["--precision", "0.01"]):
        args = ["estimate", str(calibration), str(new), "--items", str(items), *option]
        outcome = runner.invoke(app, args)
        assert outcome.exit_code == 2, outcome.output
        assert f"{option[0]} with --items" in outcome.output

    args = ["estimate", str(calibration), "--items", str(items), "--live", "run.toml"]
    outcome = runner.invoke(app, [*args, "--store", str(tmp_path / "run.duckdb")])
    assert outcome.exit_code == 2 and "with --live" in outcome.output
    assert not (tmp_path / "run.duckdb").exists()
    outcome = runner.invoke(app, ["estimate", "--store", str(tmp_path / "s.duckdb"), str(new)])
    assert outcome.exit_code == 2 and "needs --benchmark NAME" in outcome.output


def test_compare_names_the_option_for_a_file_of_several_models(tmp_path):
    calibration, many = tmp_path / "calib.parquet", tmp_path / "many.csv"
    _long().assign(model="a").to_parquet(calibration)  # never read: refused before
    pd.concat([_long().assign(model=m) for m in ("x", "y", "z")]).to_csv(many, index=False)
    outcome = runner.invoke(app, ["compare", str(calibration), str(many)])
    assert outcome.exit_code == 2
    assert "many.csv holds 3 models ('x', 'y', 'z'); name model A with --a" in outcome.output
    assert "model=" not in outcome.output and "estimate_many" not in outcome.output
    outcome = runner.invoke(app, ["compare", str(calibration), str(many), "--a", "x"])
    assert "name model B with --b" in outcome.output


def test_compare_of_one_model_with_itself_speaks_cli(tmp_path):
    calibration, one = tmp_path / "calib.parquet", tmp_path / "one.csv"
    _long().assign(model="a").to_parquet(calibration)
    _long().assign(model="x").to_csv(one, index=False)
    outcome = runner.invoke(app, ["compare", str(calibration), str(one), str(one)])
    assert outcome.exit_code == 2
    assert "A and B are both model 'x'" in outcome.output and "model_a" not in outcome.output


def test_compare_of_two_models_with_the_same_answers_says_so(tmp_path):
    rng = np.random.default_rng(0)
    cells = [(f"m{i}", str(j), float(rng.random() < 0.6)) for i in range(8) for j in range(40)]
    calibration, two = tmp_path / "calib.parquet", tmp_path / "two.csv"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    pd.concat([_long().assign(model=m) for m in ("x", "y")]).to_csv(two, index=False)
    args = ["compare", str(calibration), str(two), "--a", "x", "--b", "y", "--budget", "3"]
    outcome = runner.invoke(app, args)
    text = " ".join(outcome.output.split())
    assert outcome.exit_code == 0, outcome.output
    assert "same answer on every one of the" in text and "--margin" in text
    assert "not certified (the two answered all 3 evaluated items identically)" in text


def test_tiny_never_overwrites_a_design_silently(tmp_path, monkeypatch):
    calibration = tmp_path / "calib.parquet"
    rng = np.random.default_rng(0)
    cells = [(f"m{i}", str(j), float(rng.random() < 0.6)) for i in range(6) for j in range(20)]
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    monkeypatch.chdir(tmp_path)
    for expected in ("items.csv", "items-2.csv"):  # the default: a free name
        outcome = runner.invoke(app, ["tiny", str(calibration), "--k", "3"])
        assert outcome.exit_code == 0, outcome.output
        assert f"to {expected}" in outcome.output
    design = (tmp_path / "items.csv").read_text()
    outcome = runner.invoke(app, ["tiny", str(calibration), "--k", "4", "--out", "items.csv"])
    assert outcome.exit_code == 2 and "--out items.csv exists" in outcome.output
    assert (tmp_path / "items.csv").read_text() == design
    args = ["tiny", str(calibration), "--k", "4", "--out", "items.csv", "--force"]
    assert runner.invoke(app, args).exit_code == 0
    assert len(pd.read_csv(tmp_path / "items.csv")) == 4


def test_a_model_without_answers_does_not_cost_the_others_their_estimates(tmp_path):
    rng = np.random.default_rng(0)
    cells = [(f"m{i}", str(j), float(rng.random() < 0.6)) for i in range(8) for j in range(40)]
    calibration, new, out = tmp_path / "calib.parquet", tmp_path / "new.csv", tmp_path / "est"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    good = _long().assign(model="good")
    empty = _long().assign(model="empty", score=np.nan)
    pd.concat([good, empty]).to_csv(new, index=False)
    args = ["estimate", str(calibration), str(new), "--budget", "5", "--out", str(out)]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 2
    text = " ".join(outcome.output.split())
    assert "good: score" in text and "model 'empty' not estimated" in text
    written = json.loads((out / "estimate.json").read_text())
    assert [r["model"] for r in written] == ["good"]
    assert list(pd.read_csv(out / "estimates.csv")["model"]) == ["good"]
    again = " ".join(runner.invoke(app, args).output.split())  # --out DIR reused: said
    assert "(replacing the earlier estimate.json, estimates.csv)" in again
