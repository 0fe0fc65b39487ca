"""``experiment --task estimate`` and ``report`` of its directory: the hostile walk's
findings on the command line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.select import EstimateExperiment

_register()
runner = CliRunner()


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """7 models x 60 items: 'short' answers 40 items, 'empty_model' none."""
    rng = np.random.default_rng(4)
    names = [f"m{i}" for i in range(5)] + ["short", "empty_model"]
    theta, b = np.linspace(-1.0, 1.0, 7), rng.normal(size=60)
    Y = (rng.random((7, 60)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    frame = pd.DataFrame(Y, index=names, columns=[f"q{j:03d}" for j in range(60)])
    frame.loc["short", frame.columns[40:]] = np.nan
    frame.loc["empty_model"] = np.nan
    path = tmp_path_factory.mktemp("walk") / "wide.csv"
    frame.rename_axis("model").to_csv(path)
    return path


def _run(wide, out, *args: str):
    return runner.invoke(
        app,
        ["experiment", str(wide), "--task", "estimate", "--seeds", "1", "-q", *args,
         "--out", str(out)],
    )  # fmt: skip


def test_a_model_without_answers_is_skipped_and_the_rest_written(wide, tmp_path):
    outcome = _run(wide, tmp_path / "e", "--budgets", "10,50", "--precision", "0")
    assert outcome.exit_code == 0, outcome.output
    assert "RuntimeWarning" not in outcome.output
    assert "'empty_model' has no observed score" in outcome.output
    params = json.loads((tmp_path / "e" / "summary.json").read_text())["params"]
    assert params["no_score"] == ["empty_model"]
    assert any("budget 50" in line and "'short'" in line for line in params["warnings"])
    assert params["not_recorded"] == {"50": ["short"]}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--budgets", "500"], "--budgets '500': more than the items"),
        (["--budgets", "30", "--models", ""], "--models '': no model name"),
        (["--budgets", "30", "--max-items", "0"], "--max-items 0"),
        (["--budgets", "30", "--max-items", "-3"], "--max-items -3"),
        (["--budgets", "0"], "--budgets '0'"),
        (["--budgets", ""], "--budgets ''"),
    ],
)
def test_options_that_would_record_nothing_are_refused(wide, tmp_path, args, said):
    outcome = _run(wide, tmp_path / "e", *args)
    assert outcome.exit_code == 2, outcome.output
    assert said in " ".join(outcome.output.split())
    assert not (tmp_path / "e").exists()


def test_a_trailing_comma_in_models_is_not_a_model(wide, tmp_path):
    outcome = _run(wide, tmp_path / "e", "--budgets", "10", "--models", "m1, ", "--precision", "0")
    assert outcome.exit_code == 0, outcome.output
    assert list(pd.read_csv(tmp_path / "e" / "runs.csv")["model"]) == ["m1"]


def test_report_shows_models_short_of_the_largest_budget(wide, tmp_path):
    assert _run(wide, tmp_path / "e", "--budgets", "10,50", "--precision", "0").exit_code == 0
    outcome = runner.invoke(app, ["report", str(tmp_path / "e"), "--out", str(tmp_path / "r.html")])
    assert outcome.exit_code == 0, outcome.output
    page = (tmp_path / "r.html").read_text()
    assert "fewer items than 50" in page and "short" in page
    assert "budget 50: more than the items" in page.lower()


def test_report_of_a_directory_without_runs_says_so(wide, tmp_path):
    folder = tmp_path / "old"  # as written before such budgets were refused
    EstimateExperiment(
        pd.DataFrame(columns=["model", "seed", "budget", "truth", "score", "lower", "upper",
                              "error", "covered", "items_to_precision", "n_items"]),
        {"task": "estimate", "input": "wide.csv", "budgets": [500], "seeds": 1},
    ).save(folder)  # fmt: skip
    outcome = runner.invoke(app, ["report", str(folder), "--out", str(tmp_path / "r.html")])
    assert outcome.exit_code == 0, outcome.output
    assert "No runs recorded" in (tmp_path / "r.html").read_text()


def test_report_top_is_used_and_bootstrap_options_refused(wide, tmp_path):
    assert _run(wide, tmp_path / "e", "--budgets", "10", "--precision", "0").exit_code == 0
    page = tmp_path / "r.html"
    outcome = runner.invoke(app, ["report", str(tmp_path / "e"), "--top", "2", "--out", str(page)])
    assert outcome.exit_code == 0, outcome.output
    assert "showing 2 of 6 rows" in page.read_text()
    for extra, said in ((["--method", "parametric"], "--method parametric: not an option"),
                        (["--seed", "5"], "--seed 5: not an option"),
                        (["--jobs", "2"], "--jobs 2: not an option")):  # fmt: skip
        outcome = runner.invoke(
            app, ["report", str(tmp_path / "e"), *extra, "--out", str(page), "--force"]
        )
        assert outcome.exit_code == 2 and said in " ".join(outcome.output.split())


def test_items_to_precision_are_set_beside_the_items_answered(wide, tmp_path):
    outcome = runner.invoke(
        app,
        ["experiment", str(wide), "--task", "estimate", "--seeds", "1", "--budgets", "10",
         "--models", "m1,m2", "--precision", "0.02", "--out", str(tmp_path / "e")],
    )  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    assert "of a median 60 answered" in " ".join(outcome.output.split())
    summary = json.loads((tmp_path / "e" / "summary.json").read_text())
    assert summary["precision"]["median_answered"] == 60


def test_a_failed_estimate_marks_the_earlier_one_in_out_as_stale(wide, tmp_path):
    from latentbench.select import EstimateSet

    frame = pd.read_csv(wide).set_index("model")
    calib, new = tmp_path / "calib.csv", tmp_path / "new.csv"
    frame.drop(index=["m4", "empty_model"]).to_csv(calib)
    answers = frame.loc["m4"].rename_axis("item").rename("score").reset_index()
    answers.to_csv(new, index=False)
    out = tmp_path / "est"
    args = ["estimate", str(calib), "--budget", "20", "--out", str(out)]
    assert runner.invoke(app, [*args[:2], str(new), *args[2:]]).exit_code == 0
    answers.assign(item="x_" + answers["item"]).to_csv(new, index=False)  # no calibrated item
    outcome = runner.invoke(app, [*args[:2], str(new), *args[2:]])
    assert outcome.exit_code == 2
    assert "is from an earlier call" in " ".join(outcome.output.split())
    assert not EstimateSet.read(out).complete


def test_an_experiment_out_reused_says_what_it_replaces(wide, tmp_path):
    args = ("--budgets", "10", "--models", "m1", "--precision", "0")
    assert _run(wide, tmp_path / "e", *args).exit_code == 0
    outcome = runner.invoke(
        app,
        ["experiment", str(wide), "--task", "estimate", "--seeds", "1", *args,
         "--out", str(tmp_path / "e")],
    )  # fmt: skip
    assert "(replacing the earlier runs.csv, summary.csv, summary.json)" in " ".join(
        outcome.output.split()
    )


def test_report_headline_says_how_many_models_the_matrix_has(wide, tmp_path):
    assert (
        _run(
            wide, tmp_path / "e", "--budgets", "10", "--models", "m1", "--precision", "0"
        ).exit_code
        == 0
    )
    page = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(tmp_path / "e"), "--out", str(page)]).exit_code == 0
    text = " ".join(page.read_text().split())
    assert "each of 1 model (of 7 in the matrix) in turn" in text and "1 run per model" in text
