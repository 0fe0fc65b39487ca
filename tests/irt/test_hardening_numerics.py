"""Issue 15, items 4, 9 and 10: missing is never 0 in the fit tables, non-finite or extreme
options are errors, and ability intervals always hold the reported ability."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.irt.inference import standard_errors
from latentbench.synthetic import simulate_2pl

pytestmark = pytest.mark.filterwarnings("ignore::latentbench.exceptions.DataWarning")

_register()
runner = CliRunner()


def _with_empty_row_and_column() -> ResponseMatrix:
    rng = np.random.default_rng(0)
    scores = (rng.random((6, 8)) < 0.6).astype(float)
    scores[2, :] = np.nan  # a model with no observed cell
    scores[:, 5] = np.nan  # an item nobody answered
    models = [f"m{k}" for k in range(6)]
    items = [f"q{k}" for k in range(8)]
    return ResponseMatrix(scores, models, items)


def test_all_missing_row_and_column_are_nan_not_zero():
    result = TwoPL().fit(_with_empty_row_and_column())
    ab = result.abilities.set_index("model")
    it = result.items.set_index("item")
    assert math.isnan(ab.loc["m2", "accuracy"])  # was 0.0
    assert pd.isna(ab.loc["m2", "rank_accuracy"]) and pd.isna(ab.loc["m2", "rank_shift"])
    assert ab.loc["m2", "n_observed"] == 0
    assert math.isnan(it.loc["q5", "proportion_correct"])  # was 0.0
    assert it.loc["q5", "n_observed"] == 0
    # the others are ranked among themselves: 1..5, none pushed below an unmeasured model
    observed = ab.drop(index="m2")
    assert sorted(observed["rank_accuracy"].astype(int)) == sorted(
        pd.Series(observed["accuracy"]).rank(ascending=False, method="min").astype(int)
    )
    assert observed["rank_accuracy"].max() <= 5


def test_all_missing_row_in_the_cli_tables(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("model,q1,q2,q3,q4\nm1,1,0,1,\nm2,0,0,1,\nm3,,,,\nm4,1,1,0,\n")
    out = tmp_path / "fit"
    outcome = runner.invoke(app, ["fit", str(path), "--out", str(out), "-q"])
    assert outcome.exit_code == 0, outcome.output
    ab = pd.read_csv(out / "abilities.csv").set_index("model")
    it = pd.read_csv(out / "items.csv").set_index("item")
    assert math.isnan(ab.loc["m3", "accuracy"]) and pd.isna(ab.loc["m3", "rank_accuracy"])
    # an empty item column is left out and named, as in the long layout (the empty-item
    # table row is covered by the Python fit below)
    assert "q4" not in it.index
    assert "1 item column(s) with no observed score left out ('q4')" in " ".join(
        outcome.output.split()
    )
    json.loads((out / "fit.json").read_text(), parse_constant=_no_constant)  # strict JSON
    report = runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "r.html"), "-q"])
    assert report.exit_code == 0, report.output


def _no_constant(name: str) -> None:
    raise AssertionError(f"fit.json holds {name}, which is not JSON")


def test_fit_json_is_strict_json_with_null_for_non_finite_numbers(tmp_path):
    # issue 15, item 9: fit.json held NaN (not JSON); a non-finite number is now null
    result = TwoPL().fit(_with_empty_row_and_column())
    paths = result.save(tmp_path / "fit", info={"note": {"nan": float("nan"), "inf": [math.inf]}})
    record = json.loads(paths["fit"].read_text(), parse_constant=_no_constant)
    assert record["note"] == {"nan": None, "inf": [None]}


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--sigma", "inf"),
        ("--sigma", "1e300"),
        ("--sigma", "1e-300"),
        ("--sigma", "nan"),
        ("--l2", "inf"),
        ("--l2", "nan"),
        ("--l2", "1e300"),
        ("--tol", "nan"),
    ],
)
def test_extreme_options_are_clean_errors(tmp_path, option, value):
    path = tmp_path / "wide.csv"
    path.write_text("model,q1,q2,q3\nm1,1,0,1\nm2,0,0,1\nm3,1,1,0\n")
    args = ["fit", str(path), "--out", str(tmp_path / "fit"), "-q", option, value]
    if option == "--l2":
        args.append("--joint-ml")
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 2, (outcome.output, outcome.exception)
    assert "error:" in outcome.output and option.lstrip("-") in outcome.output
    assert not (tmp_path / "fit").exists()


@pytest.mark.parametrize("sigma", [math.inf, 1e300, 1e-300, math.nan])
def test_extreme_sigma_in_python(sigma):
    with pytest.raises(InputError, match="sigma"):
        TwoPL(sigma=sigma).fit(simulate_2pl(10, 12, random_state=0).matrix)


def test_rank_larger_than_the_matrix_is_refused_at_once():
    matrix = simulate_2pl(6, 20, random_state=0).matrix
    with pytest.raises(InputError, match=r"rank=20.*6 models"):
        TwoPL(rank=20).fit(matrix)


@pytest.mark.slow
def test_interval_always_holds_the_reported_ability():
    """Small joint-ML fits (the scale correction applies): the interval contains theta and
    the report draws it (it crashed on 'xerr' with negative values)."""
    bad = 0
    for seed in range(40):
        data = simulate_2pl(3 + seed % 5, 6 + seed % 7, random_state=seed)
        result = TwoPL(prior=None).fit(data.matrix)
        ab = standard_errors(result, data.matrix).abilities
        inside = (ab["lower"] <= ab["theta"] + 1e-12) & (ab["theta"] <= ab["upper"] + 1e-12)
        bad += int((~inside).sum())
        assert (ab["se"] >= 0).all()
    assert bad == 0


def test_report_draws_intervals_of_a_tiny_joint_ml_fit(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("model,q1,q2,q3,q4\nm1,1,1,1,0\nm2,0,0,1,0\nm3,0,0,1,0\n")
    out = tmp_path / "fit"
    fit = runner.invoke(app, ["fit", str(path), "--out", str(out), "-q", "--joint-ml"])
    assert fit.exit_code == 0, fit.output
    ab = pd.read_csv(out / "abilities.csv")
    assert ((ab["lower"] <= ab["theta"] + 1e-12) & (ab["theta"] <= ab["upper"] + 1e-12)).all()
    report = runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "r.html"), "-q"])
    assert report.exit_code == 0, (report.output, report.exception)
