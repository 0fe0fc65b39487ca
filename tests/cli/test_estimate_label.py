"""``latentbench estimate --label NAME`` (``label=`` in Python): a results file's model was
named after the file (``results/run_17.parquet``: ``run_17``) or its ``model`` column, with no
way to name it. The label is the model's name: in estimate.json, estimates.csv and the
notes, and its draws follow it (the items a file naming the model so draws)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.select import EstimateSet, estimate, estimate_many

_register()
runner = CliRunner()


def _files(tmp_path, n_new: int = 1):
    """A 10-model, 40-item calibration file and a results file of ``n_new`` new models
    (without a model column when one: named after the file, ``run_17``)."""
    rng = np.random.default_rng(3)
    theta, b = rng.normal(size=10 + n_new), rng.normal(size=40)
    Y = (rng.random((10 + n_new, 40)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    cells = [(f"m{i}", str(j), Y[i, j]) for i in range(10 + n_new) for j in range(40)]
    frame = pd.DataFrame(cells, columns=["model", "item", "score"])
    calibration, new = tmp_path / "calib.parquet", tmp_path / "run_17.csv"
    frame[frame.model.isin([f"m{i}" for i in range(10)])].to_parquet(calibration)
    rows = frame[~frame.model.isin([f"m{i}" for i in range(10)])]
    (rows.drop(columns="model") if n_new == 1 else rows).to_csv(new, index=False)
    return calibration, new


def test_the_label_names_the_model_everywhere_and_the_twin_agrees(tmp_path):
    calibration, new = _files(tmp_path)
    args = ["estimate", str(calibration), str(new), "--budget", "15"]
    outcome = runner.invoke(app, [*args, "--label", "my-ckpt-1000", "--out", str(tmp_path / "e")])
    assert outcome.exit_code == 0, outcome.output
    record = json.loads((tmp_path / "e" / "estimate.json").read_text())
    assert record["model"] == "my-ckpt-1000"
    table = pd.read_csv(tmp_path / "e" / "estimates.csv")
    assert table["model"].tolist() == ["my-ckpt-1000"]
    # the Python twin: the same record, and the command's summary line
    twin = estimate_many(calibration, new, label="my-ckpt-1000", budget=15)
    assert EstimateSet.read(tmp_path / "e") == twin
    assert twin.summary() in outcome.stdout
    one = estimate(calibration, new, label="my-ckpt-1000", budget=15)
    assert one == twin.results[0]
    # the label is the model's name: the draws of a file that names the model so
    named = pd.read_csv(new).assign(model="my-ckpt-1000")
    assert estimate(calibration, named, budget=15) == one
    # without it, the file's stem as before (its draws its own)
    plain = estimate(calibration, new, budget=15)
    assert plain.model == "run_17" and plain.items != one.items


def test_the_label_of_one_model_among_several_and_its_refusal(tmp_path):
    calibration, many = _files(tmp_path, n_new=3)  # models m10, m11, m12
    outcome = runner.invoke(app, ["estimate", str(calibration), str(many), "--label", "x"])
    assert outcome.exit_code == 2, outcome.output
    assert (
        f"error: --label 'x' names one model, and {many} holds 3 models ('m10', 'm11', "
        "'m12'); expected one: choose the one it names with --model NAME, or drop the label"
    ) in " ".join(outcome.output.split())
    for call in (
        lambda: estimate_many(calibration, many, label="x"),
        lambda: estimate_many(calibration, many, models=["m10", "m11"], label="x"),
        lambda: estimate(calibration, many, label="x"),
    ):
        with pytest.raises(InputError, match=r"^label='x' names one model, and .* [23] models"):
            call()
    outcome = runner.invoke(app, ["estimate", str(calibration), str(many), "--model", "m11",
                                  "--label", "x", "--json", "--budget", "15"])  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    record = json.loads(outcome.stdout)
    twin = estimate_many(calibration, many, models=["m11"], label="x", budget=15)
    assert record == twin.to_dict() and record["model"] == "x"
    assert twin.results[0] == estimate(calibration, many, model="m11", label="x", budget=15)


def test_a_blank_label_and_a_live_label_are_refused(tmp_path):
    calibration, new = _files(tmp_path)
    outcome = runner.invoke(app, ["estimate", str(calibration), str(new), "--label", " "])
    assert outcome.exit_code == 2
    assert "error: --label ' '; expected the model's name (a non-empty str)" in outcome.output
    with pytest.raises(InputError, match="expected the model's name"):
        estimate(calibration, new, label="")
    args = ["estimate", str(calibration), "--live", "run.toml", "--store", "run.duckdb"]
    outcome = runner.invoke(app, [*args, "--label", "x"])
    assert outcome.exit_code == 2
    said = " ".join(outcome.output.split())
    assert "--label x with --live run.toml: a live run names its model by" in said
    # renaming the model to name it otherwise pays for its answers again: said before it is done
    assert "give that name in [[models]] before the run starts" in said, said
    assert "starts a new run that draws other items and pays for its answers again" in said
