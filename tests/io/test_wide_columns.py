"""A wide table's item columns: numeric ones converted at once, text ones checked per column
(leaderboard scale: 20,000 item columns were each a pandas round trip)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import latentbench.io._matrix_checks as checks_module
from latentbench import InputError, ResponseMatrix


def _wide(n_models: int = 6, n_items: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    y = (rng.random((n_models, n_items)) < 0.5).astype(np.int8)
    frame = pd.DataFrame(y, columns=[f"q{j}" for j in range(n_items)])
    frame["q1"] = frame["q1"].astype(float)
    frame.loc[2, "q1"] = np.nan  # a missing cell in a float column
    frame["q2"] = frame["q2"].astype(bool)
    frame["q3"] = frame["q3"].astype(np.int64)
    frame.insert(0, "model", [f"m{i}" for i in range(n_models)])
    return frame


def test_numeric_columns_are_not_converted_one_by_one(monkeypatch):
    calls: list[str] = []
    original = checks_module._coerce_scores

    def counting(values, source, column):
        calls.append(column)
        return original(values, source, column)

    monkeypatch.setattr(checks_module, "_coerce_scores", counting)
    frame = _wide()
    frame["q5"] = frame["q5"].map({0: "false", 1: "TRUE"})  # text: checked per column
    matrix = ResponseMatrix.from_wide(frame)
    assert calls == ["q5"]
    expected = frame.drop(columns="model").replace({"false": 0, "TRUE": 1}).astype(float)
    np.testing.assert_array_equal(matrix.scores, expected.to_numpy(np.float32))
    assert np.isnan(matrix.scores[2, 1])  # missing stays missing, never 0
    assert matrix.item_ids == [f"q{j}" for j in range(40)]


def test_text_columns_still_name_the_bad_cell():
    frame = _wide()
    frame["q7"] = frame["q7"].astype(object)
    frame.loc[4, "q7"] = "85%"
    with pytest.raises(InputError, match=r"column 'q7'.*'85%'.*percentage"):
        ResponseMatrix.from_wide(frame)


def test_numeric_out_of_range_still_refused():
    frame = _wide()
    frame.loc[3, "q9"] = 7
    with pytest.raises(InputError, match="7"):
        ResponseMatrix.from_wide(frame)
