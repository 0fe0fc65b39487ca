"""ResponseMatrix backed by its observed cells: same answers as the dense matrix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbench import ResponseMatrix
from latentbench.exceptions import InputError
from latentbench.io._sparse_matrix import SparseResponseMatrix


def _long(n: int, m: int, density: float, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows, cols = np.nonzero(rng.random((n, m)) < density)
    scores = rng.integers(0, 2, rows.size).astype(float)
    scores[::7] = 0.5
    frame = pd.DataFrame({"model": [f"m{i:03d}" for i in rows], "item": cols, "score": scores})
    # an all-correct model and a model with no cell at all are legitimate
    extra = pd.DataFrame({"model": ["zz_all"] * 3, "item": [0, 1, 2], "score": [1.0] * 3})
    return pd.concat([frame, extra], ignore_index=True)


def test_from_long_low_density_is_sparse_and_agrees_with_dense() -> None:
    frame = _long(40, 60, 0.1)
    sparse = ResponseMatrix.from_long(frame)
    assert isinstance(sparse, SparseResponseMatrix) and sparse.is_sparse
    assert sparse.layout is None  # as a dense matrix's (an AttributeError before)
    dense = ResponseMatrix(sparse.scores, sparse.model_ids, sparse.item_ids)
    assert not dense.is_sparse
    assert sparse.shape == dense.shape
    assert sparse.observed_fraction == pytest.approx(dense.observed_fraction)
    assert sparse.is_binary == dense.is_binary
    for name in (
        "model_accuracy",
        "item_accuracy",
        "n_observed_per_model",
        "n_observed_per_item",
        "constant_models",
        "constant_items",
    ):
        np.testing.assert_allclose(getattr(sparse, name)(), getattr(dense, name)(), rtol=1e-6)
    assert sparse.summary() == dense.summary()
    pd.testing.assert_frame_equal(sparse.to_long(), dense.to_long())
    sub_s = sparse.subset(models=[0, 3, 5], items=sparse.item_ids[:20])
    sub_d = dense.subset(models=[0, 3, 5], items=dense.item_ids[:20])
    np.testing.assert_array_equal(
        np.nan_to_num(sub_s.scores, nan=-1), np.nan_to_num(sub_d.scores, nan=-1)
    )


def test_from_long_dense_enough_stays_dense() -> None:
    assert not ResponseMatrix.from_long(_long(10, 10, 0.9)).is_sparse


def test_from_cells_validates() -> None:
    with pytest.raises(InputError, match="appears twice"):
        ResponseMatrix.from_cells([0, 0], [1, 1], [1.0, 1.0], ["a", "b"], ["x", "y"])
    with pytest.raises(InputError, match="model id 'a' appears twice"):
        ResponseMatrix.from_cells([0], [1], [1.0], ["a", "a"], ["x", "y"])
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        ResponseMatrix.from_cells([0], [1], [2.0], ["a", "b"], ["x", "y"])
    # arrays of different lengths raised IndexError, float positions numpy's cast TypeError
    with pytest.raises(InputError, match=r"shapes \(3,\), \(2,\) and \(2,\); expected one row"):
        ResponseMatrix.from_cells([0, 1, 1], [0, 1], [1.0, 0.0], ["a", "b"], ["x", "y"])
    with pytest.raises(InputError, match=r"rows of dtype float64; expected integer positions"):
        ResponseMatrix.from_cells([0.5, 1.0], [0, 1], [1.0, 0.0], ["a", "b"], ["x", "y"])
