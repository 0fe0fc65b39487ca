"""The benchmarks' proxy variants of issue 27 (``benchmarks/_estimate_common.py``).

The ``resridge`` variant (the ridge proxy on principal directions of the calibration models'
IRT residuals) and :class:`ProxyVariant` (design or predicted variance from the IRT
predictions) are measured in ``benchmarks/RESULTS_estimate.md`` ("Residual ridge proxy"); these
seeded checks keep the measured code honest: the residual features carry the item structure a
rank-1 fit misses, and the variants keep the round estimate exactly unbiased.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from latentbench.io import ResponseMatrix
from latentbench.irt._objective import sigmoid
from latentbench.select._estimate_calibration import from_matrix
from latentbench.select._estimate_design import SequentialEstimate

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _estimate_common import make_estimate, residual_features


def two_groups(m: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Binary (m, n) matrix: a common ability plus a second one that two item groups load on
    with opposite signs (structure a rank-1 fit misses); its probabilities and item groups."""
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(m, 2))
    V = np.column_stack([np.abs(rng.normal(size=n)) + 0.3, rng.choice([-1.5, 1.5], size=n)])
    P = 1.0 / (1.0 + np.exp(-(U @ V.T + rng.normal(size=n))))
    return (rng.random((m, n)) < P).astype(np.float64), P, V[:, 1] > 0


def matrix(Y: np.ndarray) -> ResponseMatrix:
    frame = pd.DataFrame(
        Y, index=[f"m{i}" for i in range(Y.shape[0])], columns=[f"q{j}" for j in range(Y.shape[1])]
    )
    return ResponseMatrix.from_wide(frame)


@pytest.fixture(scope="module")
def groups():
    Y, P, group = two_groups(48, 800, seed=5)
    return from_matrix(matrix(Y[:40]), rank=1), Y, P, group


def test_residual_features_scale_and_missing_cells(groups):
    cal, Y, _, group = groups
    fit = np.asarray(sigmoid((cal.model_factors @ cal.V.T + cal.b) / cal.sigma))
    X = residual_features(Y[:40], fit)
    assert X.shape == (800, 16) and np.mean(X * X) == pytest.approx(1.0)
    # the leading direction separates the two item groups (the structure rank 1 misses)
    assert abs(np.corrcoef(X[:, 0], group)[0, 1]) > 0.7
    gaps = Y[:40] - fit
    Yn = Y[:40].copy()
    Yn[0, :100] = np.nan  # a missing cell counts as a zero residual, never as a 0 answer
    Xn = residual_features(Yn, fit)
    gaps[0, :100] = 0.0
    _, S, Vt = np.linalg.svd(gaps, full_matrices=False)
    expect = Vt[:16].T * S[:16]
    expect /= np.sqrt(np.mean(expect * expect))
    assert np.allclose(np.abs(Xn), np.abs(expect))


def test_residual_ridge_reduces_residual_variance(groups):
    """From the same 100 uniformly random revealed items, the ridge on the residual features
    predicts the new models' unrevealed items better than the rank-1 IRT predictions (mean
    squared error ratio < 0.95 over 8 new models, none above 1.05), and the truth better still."""
    cal, Y, P, _ = groups
    ratios, oracle = [], []
    for i in range(40, 48):
        order = np.random.default_rng(i).permutation(800)[:100]
        mse = {}
        for proxy in ("irt", "resridge"):
            seq = make_estimate(cal, Y[:40], np.arange(800), proxy, None)
            seq.proposal = "uniform"
            assert seq.proxy_used == ("irt" if proxy == "irt" else "ridge")
            for j in order:
                seq.observe(int(j), float(Y[i, j]), seq.probabilities())
            left = seq.unrevealed
            mse[proxy] = float(np.mean((Y[i, left] - seq.f[left]) ** 2))
        ratios.append(mse["resridge"] / mse["irt"])
        oracle.append(float(np.mean((Y[i, left] - P[i, left]) ** 2)) / mse["irt"])
    assert np.mean(ratios) < 0.95, ratios
    assert max(ratios) < 1.05, ratios
    assert np.mean(oracle) < np.mean(ratios)


def test_design_from_irt_draws_as_irt_and_stays_unbiased(groups):
    """``resridge-vd`` draws exactly the items ``irt`` draws on the same random stream, with the
    corrected predictions in use, and its round estimate's expectation over the design is the
    full-benchmark mean (exact identity)."""
    cal, Y, _, _ = groups
    row = Y[44]
    irt = SequentialEstimate(cal, np.arange(800), delta=0.05)
    var = make_estimate(cal, Y[:40], np.arange(800), "resridge-vd", None)
    r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
    for _ in range(300):
        j1, p1 = irt.choose(r1)
        j2, p2 = var.choose(r2)
        assert j1 == j2 and np.allclose(p1, p2)
        irt.observe(j1, float(row[j1]), p1)
        var.observe(j2, float(row[j2]), p2)
    assert not np.allclose(var.f, var.f_irt)  # the correction is in use
    assert np.allclose(var.f_irt, irt.f)
    pi = var.probabilities()
    U = var.unrevealed
    center = (var.revealed_sum + var.f[U].sum()) / var.n
    z = center + (row - var.f) / (var.n * np.where(U, pi, 1.0))
    assert float((pi[U] * z[U]).sum()) == pytest.approx(row.mean(), abs=1e-12)
