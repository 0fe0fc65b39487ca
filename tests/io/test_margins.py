"""One pass for the observed counts and sums per row and column (``io._margins``): the
parallel kernel and the NumPy path agree, and the matrix's accuracies are the NaN-aware means."""

from __future__ import annotations

import numpy as np
import pytest

import latentbench.io._margins as margins_module
from latentbench.io import ResponseMatrix
from latentbench.io._margins import dense_margins


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_kernel_and_the_numpy_path_agree(monkeypatch, dtype):
    rng = np.random.default_rng(0)
    for _ in range(25):
        n, m = int(rng.integers(1, 40)), int(rng.integers(1, 60))
        values = rng.random((n, m)).astype(dtype)
        values[rng.random((n, m)) < rng.random()] = np.nan
        values[:, 0] = np.nan  # an empty column
        numpy_path = dense_margins(values)
        monkeypatch.setattr(margins_module, "KERNEL_MIN_CELLS", 0)
        kernel = dense_margins(values)
        monkeypatch.setattr(margins_module, "KERNEL_MIN_CELLS", 2_000_000)
        assert np.array_equal(kernel.row_count, numpy_path.row_count)
        assert np.array_equal(kernel.col_count, numpy_path.col_count)
        np.testing.assert_allclose(kernel.row_sum, numpy_path.row_sum, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(kernel.col_sum, numpy_path.col_sum, rtol=1e-12, atol=1e-12)
        observed = ~np.isnan(values)
        assert np.array_equal(numpy_path.col_count, observed.sum(axis=0))
        np.testing.assert_allclose(
            numpy_path.row_sum, np.nansum(values.astype(np.float64), axis=1), rtol=1e-12
        )


def test_matrix_accuracies_are_nan_aware_means_and_empty_rows_are_nan():
    rng = np.random.default_rng(1)
    scores = (rng.random((6, 9)) < 0.5).astype(np.float32)
    scores[rng.random(scores.shape) < 0.3] = np.nan
    scores[2] = np.nan  # a model without data
    scores[0, 0] = 1.0
    matrix = ResponseMatrix(scores, [f"m{i}" for i in range(6)], [f"i{j}" for j in range(9)])
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        expected_models = np.nanmean(scores.astype(np.float64), axis=1)
    np.testing.assert_allclose(matrix.model_accuracy(), expected_models, equal_nan=True)
    assert np.isnan(matrix.model_accuracy()[2])
    assert np.array_equal(matrix.n_observed_per_model(), (~np.isnan(scores)).sum(axis=1))
    # the cached margins are not handed out for modification
    counts = matrix.n_observed_per_item()
    counts[:] = -1
    assert (matrix.n_observed_per_item() >= 0).all()


def test_a_sparse_matrix_has_the_margins_of_its_dense_form():
    import pandas as pd

    from latentbench.io._sparse_matrix import SparseResponseMatrix

    rng = np.random.default_rng(2)
    rows = [(f"m{i}", f"i{j}", float(rng.random() < 0.5)) for i in range(8) for j in range(40)]
    keep = rng.random(len(rows)) < 0.1
    keep[:2] = True
    long = pd.DataFrame([r for r, k in zip(rows, keep, strict=True) if k])
    long.columns = ["model", "item", "score"]
    sparse = ResponseMatrix.from_long(long)
    assert isinstance(sparse, SparseResponseMatrix)
    dense = dense_margins(sparse.scores)
    got = sparse.margins()
    assert np.array_equal(got.row_count, dense.row_count)
    assert np.array_equal(got.col_count, dense.col_count)
    np.testing.assert_allclose(got.row_sum, dense.row_sum)
    np.testing.assert_allclose(got.col_sum, dense.col_sum)


def test_numbas_fork_safe_layer_is_chosen_before_any_kernel_module():
    """The margins of a matrix of 2M cells or more run numba's first parallel kernel when
    nothing of ``latentbench.irt`` is imported yet, and only ``irt._kernels`` chose the
    fork-safe workqueue layer: numba took GNU OpenMP, and a later ``fit.bootstrap(n_jobs=2)``
    lost its forked workers ("Terminating: fork() called from a process already using GNU
    OpenMP", BrokenProcessPool; review 2026-12-07). The layer is now chosen by the module that
    every kernel module imports first (``_numba_cache``, for its ``CACHE``). Checked in a fresh
    process (this one chose its layer long ago) that imports only that module: ~0.5 s, where
    running the margins kernel there took 1.1 s (pandas, with ``latentbench.io``)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import latentbench

    code = "import numba, latentbench._numba_cache; print(numba.config.THREADING_LAYER)"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    env["PYTHONPATH"] = str(Path(latentbench.__file__).resolve().parents[1])
    ran = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "workqueue", ran.stdout
