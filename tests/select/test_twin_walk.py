"""The Python twins say what their commands print (the hostile walk of 2026-12-05)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import DataWarning
from latentbench.io import ResponseMatrix


def _holey(n_models: int = 8, n_items: int = 40) -> ResponseMatrix:
    rng = np.random.default_rng(0)
    Y = (rng.random((n_models, n_items)) < np.linspace(0.2, 0.8, n_models)[:, None]).astype(float)
    Y[0, :3] = np.nan  # three holes in one candidate row
    frame = pd.DataFrame(
        Y, index=[f"m{i}" for i in range(n_models)], columns=[f"q{j:02d}" for j in range(n_items)]
    )
    return ResponseMatrix.from_wide(frame)


@pytest.mark.parametrize(
    ("missing", "said"),
    [("zero", "3 missing candidate cell(s) are scored 0"), ("drop-items", "dropped 3 of 40 items")],
)
def test_replay_warns_of_its_missing_rule_without_a_history(missing, said):
    # F1: with no_history=True, missing="zero" was never said to a Python user
    from latentbench.select import replay

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        replay(_holey(), no_history=True, missing=missing, budget=40, random_state=0)
    ours = [w for w in caught if issubclass(w.category, DataWarning) and said in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    assert ours[0].filename == __file__  # it points at the caller's line
