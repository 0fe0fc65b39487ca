"""A calibration of thousands of models x tens of thousands of items: the item features keep
16 directions, and only those are computed (a full SVD took 67 s of a 92 s estimate at
4,000 x 20,000); the features are those of the full SVD."""

from __future__ import annotations

import numpy as np

import latentbench.select._estimate_calibration as calibration


def _responses(k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    theta, a = rng.normal(size=(k, 3)), rng.lognormal(size=(n, 3)) * 0.5
    p = 1.0 / (1.0 + np.exp(-(theta @ a.T + rng.normal(size=n))))
    y = (rng.random((k, n)) < p).astype(float)
    y[rng.random((k, n)) < 0.3] = np.nan  # missing cells, filled with the fit
    return y, p


def test_large_calibration_features_skip_the_full_svd(monkeypatch):
    y, p = _responses(calibration._PARTIAL_SVD_MIN_SIDE + 50, 900)
    # the reference: the full SVD, forced by raising the threshold
    monkeypatch.setattr(calibration, "_PARTIAL_SVD_MIN_SIDE", 10**9)
    full = calibration.response_features(y, p)
    monkeypatch.undo()

    def no_full_svd(*args, **kwargs):
        raise AssertionError("full SVD of a large calibration")

    monkeypatch.setattr(calibration.np.linalg, "svd", no_full_svd)
    partial = calibration.response_features(y, p)
    assert partial.shape == full.shape == (900, calibration._MAX_FEATURES)
    np.testing.assert_allclose(partial, full, rtol=0, atol=1e-9 * np.abs(full).max())
    # deterministic: the same matrix gives the same features, bit for bit
    np.testing.assert_array_equal(calibration.response_features(y, p), partial)


def test_small_calibration_keeps_the_full_svd(monkeypatch):
    y, p = _responses(60, 300)
    calls = []
    original = calibration.np.linalg.svd
    monkeypatch.setattr(
        calibration.np.linalg, "svd", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    calibration.response_features(y, p)
    assert calls == [1]


def test_a_matrix_calibration_holds_few_copies_of_the_matrix_at_once():
    """``from_matrix`` held five N x J float64 arrays at once (the float64 scores beside their
    permuted copy, the fit's probabilities with two temporaries of the sigmoid, the filled
    answers beside them, and ``std``'s temporary): 16 GB at 5,000 models x 50,000 items.
    The scores are freed once permuted, the sigmoid and the fill-in work in place and the
    spreads go by blocks of rows; the features are the same bits."""
    import tracemalloc

    from latentbench.io import ResponseMatrix

    y, _ = _responses(600, 4000)
    matrix = ResponseMatrix(
        y.astype(np.float32), [f"m{i}" for i in range(600)], [f"i{j}" for j in range(4000)]
    )
    calibration.from_matrix(matrix, digest="warm")  # compiled kernels, imports
    tracemalloc.start()
    try:
        cal = calibration.from_matrix(matrix, digest="x")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak / y.size / 8 < 3.5  # (was 5.0)
    # the in-place fill gives the features of the copying one, bit for bit
    fitted = calibration._fitted(cal.model_factors, cal.V, cal.b, cal.sigma)
    np.testing.assert_array_equal(
        calibration.response_features(y, fitted.copy()),
        calibration.response_features(y, fitted, overwrite_fitted=True),
    )
