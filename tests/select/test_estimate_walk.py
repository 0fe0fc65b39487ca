"""The estimate workflow's hostile walk (experiment --task estimate, its report, Python
``estimate()`` inputs): each test reproduces one finding."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import DataWarning, InputError
from latentbench.io import ResponseMatrix
from latentbench.select import EstimateExperiment, estimate, estimate_experiment
from latentbench.select._estimate_calibration import from_matrix


def _matrix(names: list[str], n_items: int = 60, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    theta, b = np.linspace(-1.0, 1.0, len(names)), rng.normal(size=n_items)
    Y = (rng.random((len(names), n_items)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    return pd.DataFrame(Y, index=names, columns=[f"q{j:03d}" for j in range(n_items)])


@pytest.fixture(scope="module")
def cal():
    return from_matrix(ResponseMatrix.from_wide(_matrix([f"m{i}" for i in range(8)])), rank=1)


# -- 1. ids that read as missing values --------------------------------------------------------
def test_model_ids_that_look_missing_are_read_back_as_text(tmp_path):
    names = ["NA", "null", "None", "spaced model", "ok"]
    result = estimate_experiment(
        ResponseMatrix.from_wide(_matrix(names)), budgets=(10,), seeds=1, precision=None
    )
    result.save(tmp_path)
    back = EstimateExperiment.read(tmp_path)
    assert sorted(back.runs["model"]) == sorted(names)
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert back.summary["by_budget"] == saved["by_budget"]
    assert saved["by_budget"][0]["models"] == 5


def test_a_design_item_called_na_keeps_its_name(tmp_path):
    from latentbench.io._files import read_csv_ids

    path = tmp_path / "items.csv"
    pd.DataFrame({"item": ["NA", "null", "7"], "probability": [0.5, np.nan, 0.25]}).to_csv(
        path, index=False
    )
    frame = read_csv_ids(path, ("item",))
    assert list(frame["item"]) == ["NA", "null", "7"]
    assert np.isnan(frame["probability"].iloc[1]) and frame["probability"].iloc[2] == 0.25


# -- 2. Python estimate() with a Series or a mapping -------------------------------------------
def _answers() -> pd.Series:
    return pd.Series(np.tile([1.0, 0.0, 1.0], 20), index=[f"q{j:03d}" for j in range(60)])


def test_a_text_score_in_a_series_is_refused_naming_item_and_value(cal):
    text = _answers().astype(object)
    text[text == 1.0] = "correct"
    with pytest.raises(InputError, match=r"item 'q000': value 'correct' is not numeric"):
        estimate(cal, text, budget=20, seed=1)
    with pytest.raises(InputError, match="'correct' is not numeric"):
        estimate(cal, dict(text), budget=20, seed=1)


def test_missing_markers_and_booleans_in_a_series_read_as_in_a_file(cal):
    answers = _answers().astype(object)
    answers.iloc[0], answers.iloc[1], answers.iloc[2] = "NA", None, True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        result = estimate(cal, answers, budget=60, seed=1)
    assert result.n_evaluated == 58 and 1.0 in result.answers


def test_conflicting_repeats_in_a_series_are_refused_and_equal_ones_said(cal):
    answers = _answers()
    with pytest.raises(InputError, match=r"item 'q000': given 2 times with different scores"):
        estimate(cal, pd.concat([answers, 1.0 - answers]), budget=20, seed=1)
    with pytest.warns(DataWarning, match="60 item.s. given more than once with the same score"):
        twice = estimate(cal, pd.concat([answers, answers]), budget=20, seed=1)
    once = estimate(cal, answers, budget=20, seed=1)
    assert (twice.score, twice.lower, twice.upper) == (once.score, once.lower, once.upper)


def test_a_named_series_is_that_model_unless_model_is_given(cal):
    answers = _answers()
    assert estimate(cal, answers.rename("my-model"), budget=20, seed=1).model == "my-model"
    assert estimate(cal, answers.rename("score"), budget=20, seed=1).model == "model"
    named = estimate(cal, answers.rename("my-model"), model="other", budget=20, seed=1)
    assert named.model == "other"
