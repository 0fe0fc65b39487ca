"""``TwoPL.fit`` says when the models fall in groups that share no item: their abilities are
then compared only through the priors (e.g. one file's item ids are ints, another's text)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import DataWarning
from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.irt._model import disconnected_models


def _long(models: list[str], items: list[str], seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cells = [(m, i, float(rng.random() < 0.6)) for m in models for i in items]
    return pd.DataFrame(cells, columns=["model", "item", "score"])


def test_models_sharing_no_item_with_the_rest_are_named():
    frame = pd.concat(
        [
            _long(["a", "b", "c"], [f"q{j}" for j in range(30)], seed=0),
            _long(["z"], [str(j) for j in range(30)], seed=1),  # the same items, other ids
        ]
    )
    matrix = ResponseMatrix.from_long(frame)
    assert disconnected_models(matrix) == (2, ["z"])
    said = r"2 groups that share no item \(1 model\(s\) outside the largest: 'z'\)"
    with pytest.warns(DataWarning, match=said):
        TwoPL().fit(matrix)


def test_a_linked_matrix_with_an_empty_model_says_nothing():
    frame = _long(["a", "b", "c"], [f"q{j}" for j in range(30)], seed=0)
    wide = frame.pivot(index="model", columns="item", values="score")
    wide.loc["empty"] = np.nan  # no cell: flagged no_data, not a group of its own
    matrix = ResponseMatrix.from_wide(wide)
    assert disconnected_models(matrix) == (1, [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TwoPL().fit(matrix)
    assert not any("share no item" in str(w.message) for w in caught)


def test_the_groups_of_a_sparse_matrix_are_found_too():
    blocks = [
        _long([f"m{g}a", f"m{g}b"], [f"g{g}q{j}" for j in range(10)], seed=g) for g in range(5)
    ]
    matrix = ResponseMatrix.from_long(pd.concat(blocks))  # 20% observed: stored sparse
    assert matrix.is_sparse
    n_groups, outside = disconnected_models(matrix)
    assert n_groups == 5 and len(outside) == 8
