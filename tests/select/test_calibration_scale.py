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
