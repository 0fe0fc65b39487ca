"""Ids with a carriage return through the CSV files we write and read back: ``tiny``'s design
(a file or standard output) into ``estimate --items``, ``experiment --task estimate``'s
runs.csv into :meth:`EstimateExperiment.read`. pandas quotes a field with ``\\n`` but not one
with a lone ``\\r``, which a reader then takes for the end of a row."""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.io import csv_text
from latentbench.select import EstimateExperiment

_register()
runner = CliRunner()
ODD_ITEMS = ["cr\ritem", "crlf\r\nitem", "lf\nitem", 'q"uote', "a,b", "NA"]
ODD_MODELS = ["m\r1", "m\r\n2", "NA"]


def _long() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    items = ODD_ITEMS + [f"it{j:02d}" for j in range(30 - len(ODD_ITEMS))]
    models = ODD_MODELS + [f"m{i}" for i in range(3, 14)]
    scores = (rng.random((len(models), len(items))) < 0.6).astype(float)
    frame = pd.DataFrame(scores, index=models, columns=items)
    return frame.rename_axis(index="model", columns="item").stack().rename("score").reset_index()


def test_a_tiny_design_with_carriage_returns_reads_back_into_estimate(tmp_path):
    long = _long()
    new = long["model"].isin(ODD_MODELS)
    calibration, answers = tmp_path / "cal.parquet", tmp_path / "new.parquet"
    long[~new].to_parquet(calibration, index=False)
    long[new].to_parquet(answers, index=False)
    design = tmp_path / "items.csv"
    outcome = runner.invoke(app, ["tiny", str(calibration), "--k", "30", "--out", str(design)])
    assert outcome.exit_code == 0, outcome.output
    rows = list(csv.DictReader(io.StringIO(design.read_bytes().decode("utf-8"), newline="")))
    assert sorted(row["item"] for row in rows) == sorted(long["item"].unique())
    printed = runner.invoke(app, ["tiny", str(calibration), "--k", "30", "--out", "-"])
    assert printed.exit_code == 0, printed.output
    assert printed.stdout_bytes == design.read_bytes()  # the same text
    out = tmp_path / "est"
    args = ["estimate", str(calibration), str(answers), "--items", str(design)]
    outcome = runner.invoke(app, [*args, "--out", str(out)])
    assert outcome.exit_code == 0, outcome.output  # before: a row too many, refused
    table = pd.read_csv(out / "estimates.csv", dtype={"model": str}, keep_default_na=False)
    assert sorted(table["model"]) == sorted(ODD_MODELS)
    assert (table["n_evaluated"] == 30).all()


def test_estimate_experiment_runs_keep_a_model_id_with_a_carriage_return(tmp_path):
    responses = tmp_path / "responses.parquet"
    _long().to_parquet(responses, index=False)
    out = tmp_path / "exp"
    args = ["experiment", str(responses), "--task", "estimate", "--seeds", "1"]
    outcome = runner.invoke(
        app, [*args, "--budgets", "10", "--models", "m\r1,m5", "--out", str(out), "-q"]
    )
    assert outcome.exit_code == 0, outcome.output
    back = EstimateExperiment.read(out)
    assert set(back.runs["model"]) == {"m5", "m\r1"}


def test_csv_text_is_pandas_own_text_without_carriage_returns():
    frame = pd.DataFrame({"item": ["a,b", 'q"', "x\ny", "NA"], "p": [0.1, np.nan, 1e-300, 2.0]})
    assert csv_text(frame) == frame.to_csv(index=False)
    odd = frame.assign(item=["a\rb", *frame["item"][1:]])
    back = pd.read_csv(io.StringIO(csv_text(odd)), keep_default_na=False, na_values=[""])
    assert back["item"].tolist() == odd["item"].tolist()
    assert back["p"].equals(odd["p"])
