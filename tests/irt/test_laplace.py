"""Joint Laplace approximation of rank-1 fits (latentbench.irt._laplace)."""

from __future__ import annotations

import numpy as np
import pytest

from latentbench.irt import TwoPL
from latentbench.irt._laplace import joint_laplace
from latentbench.irt._objective import sigmoid
from latentbench.synthetic import simulate_2pl

SIGMA = 1.3
LAM = np.array([[1.5, 0.2], [0.2, 0.5]])  # item penalty curvature (a, b), with a cross term
MEAN = np.array([2.0, 0.1])
LAM_THETA = 0.7


def _problem():
    rng = np.random.default_rng(0)
    n, m = 8, 30
    theta = rng.normal(size=n)
    a = 2 * np.exp(rng.normal(0, 0.3, m))
    b = rng.normal(size=m)
    Y = (rng.random((n, m)) < sigmoid((np.outer(theta, a) + b) / SIGMA)).astype(float)
    Y[0, 3] = np.nan
    return Y


def _item_mode(Y, theta, a, b):
    """Each item's (a_j, b_j) minimising the penalised loss given theta (Newton)."""
    obs = ~np.isnan(Y)
    y = np.where(obs, Y, 0.0)
    for _ in range(60):
        p = sigmoid((np.outer(theta, a) + b) / SIGMA)
        w, r = p * (1 - p) * obs / SIGMA**2, (p - y) * obs / SIGMA
        ga = r.T @ theta + LAM[0, 0] * (a - MEAN[0]) + LAM[0, 1] * (b - MEAN[1])
        gb = r.sum(0) + LAM[1, 0] * (a - MEAN[0]) + LAM[1, 1] * (b - MEAN[1])
        haa, hab, hbb = w.T @ theta**2 + LAM[0, 0], w.T @ theta + LAM[0, 1], w.sum(0) + LAM[1, 1]
        det = haa * hbb - hab**2
        a, b = a - (hbb * ga - hab * gb) / det, b - (haa * gb - hab * ga) / det
    return a, b, haa * hbb - hab**2


def _profiles(Y, theta, a, b):
    """(profiled objective, 1/2 sum log det H_j) at theta, items at their mode."""
    obs = ~np.isnan(Y)
    y = np.where(obs, Y, 0.0)
    a, b, det = _item_mode(Y, theta, a, b)
    t = (np.outer(theta, a) + b) / SIGMA
    d = np.stack([a - MEAN[0], b - MEAN[1]], 1)
    value = (
        ((np.logaddexp(0, t) - y * t) * obs).sum()
        + 0.5 * np.einsum("jk,kl,jl->", d, LAM, d)
        + 0.5 * LAM_THETA * theta @ theta
    )
    return value, 0.5 * np.log(det).sum()


def test_schur_complement_and_adjustment_match_finite_differences():
    Y = _problem()
    n, m = Y.shape
    obs = ~np.isnan(Y)
    theta, a, b = np.zeros(n), np.full(m, 2.0), np.zeros(m)
    for _ in range(200):  # joint mode: alternate exact item and ability Newton steps
        a, b, _ = _item_mode(Y, theta, a, b)
        p = sigmoid((np.outer(theta, a) + b) / SIGMA)
        w = p * (1 - p) * obs / SIGMA**2
        g = ((p - np.where(obs, Y, 0)) * obs / SIGMA) @ a + LAM_THETA * theta
        theta = theta - g / (w @ (a * a) + LAM_THETA)
    assert (a > 0).all()
    laplace = joint_laplace(Y, theta, a, b, SIGMA, LAM_THETA, LAM)
    eps, eye = 1e-3, np.eye(n)
    hessian = np.empty((n, n))
    for i in range(n):
        for k in range(n):
            f = [
                _profiles(Y, theta + s * eps * eye[i] + t * eps * eye[k], a, b)[0]
                for s, t in ((1, 1), (1, -1), (-1, 1), (-1, -1))
            ]
            hessian[i, k] = (f[0] - f[1] - f[2] + f[3]) / (4 * eps * eps)
    np.testing.assert_allclose(laplace.schur, hessian, atol=1e-4 * np.abs(hessian).max())
    eps = 1e-6
    gradient = np.array(
        [
            (
                _profiles(Y, theta + eps * eye[i], a, b)[1]
                - _profiles(Y, theta - eps * eye[i], a, b)[1]
            )
            / (2 * eps)
            for i in range(n)
        ]
    )
    np.testing.assert_allclose(laplace.adjustment_gradient, gradient, rtol=1e-4, atol=1e-7)


def test_joint_covariance_exceeds_block_and_is_standardised():
    data = simulate_2pl(30, 400, random_state=3)
    result = TwoPL().fit(data.matrix)
    s = result.normalisation.scale
    block = 1.0 / np.sqrt(
        (result.predict_proba() * (1 - result.predict_proba())) @ result.V[:, 0] ** 2
        + result.penalty.precision_U * s * s
    )
    mu = float(result.normalisation.shift[0])
    A = np.array([[1 / s, 0.0], [-mu / s, 1.0]])
    laplace = joint_laplace(
        data.matrix.scores,
        result.theta,
        result.V[:, 0],
        result.b,
        1.0,
        result.penalty.precision_U * s * s,
        A.T @ result.penalty.item_curvature(1) @ A,
    )
    cov = laplace.covariance()
    # the items' uncertainty adds variance; the standardisation removes two directions (O(1/N))
    assert np.median(np.sqrt(np.diag(cov)) / block) > 1.0
    np.testing.assert_allclose(cov @ np.ones(30), 0.0, atol=1e-10)
    np.testing.assert_allclose(cov @ result.theta, 0.0, atol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize(("n_models", "n_items", "n_sets"), [(30, 500, 16), (70, 1700, 5)])
def test_ability_coverage_at_small_shapes(n_models, n_items, n_sets):
    """95% intervals of the default fit cover the (standardised) true abilities.

    The default intervals at these shapes come from the random-item marginal likelihood
    (``_random_items``): 0.944 +/- 0.007 at 30 x 500 (30 sets) and 0.949 +/- 0.007 at 70 x 1700
    (12 sets). Before, the joint Laplace SEs gave 0.947 / 0.949 and the block-diagonal ones
    0.938 / 0.945 here (truth drawn from the model; on replicas of real matrices only the
    random-item intervals cover, ``benchmarks/bench_heldout.py``). Tolerance: 3.5 Monte Carlo
    se, from the spread across data sets (abilities within a set are correlated), never below
    the binomial one. The test runs 16 and 5 data sets (the suite's time).
    """
    covered = []
    for seed in range(n_sets):
        data = simulate_2pl(n_models, n_items, random_state=seed)
        theta = data.theta.ravel()
        truth = (theta - theta.mean()) / theta.std()
        ab = TwoPL().fit(data.matrix).standard_errors().abilities
        covered.append(np.mean((ab["lower"] <= truth) & (truth <= ab["upper"])))
    values = np.array(covered)
    binomial = np.sqrt(0.95 * 0.05 / (n_models * n_sets))
    mc = max(values.std(ddof=1) / np.sqrt(n_sets), binomial)
    assert abs(values.mean() - 0.95) <= 3.5 * mc, (values.mean(), mc)
