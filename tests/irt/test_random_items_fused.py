"""The fused numba kernels of the random-item EM equal the NumPy reference path."""

from __future__ import annotations

import numpy as np
import pytest

from latentbench.irt import _em_kernels, _random_items
from latentbench.irt._random_items import fit_random_items, item_bootstrap


def _scores(kind: str) -> tuple[np.ndarray, int, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    N, J = 10, 160
    theta, a, b = rng.normal(size=N), rng.uniform(0.3, 2.0, J), rng.normal(size=J)
    p = 1.0 / (1.0 + np.exp(-(np.outer(theta, a) + b)))
    trials = 3 if kind == "trials3" else 1
    Y = rng.binomial(trials, p) / trials
    if kind == "sparse":  # below SPARSE_MISSING: the sparse correction
        Y[rng.random(Y.shape) < 0.02] = np.nan
    if kind == "dense":  # NumPy: the dense observed factor; fused: the missing cells listed
        Y[rng.random(Y.shape) < 0.3] = np.nan
    if kind == "mostly-missing":  # fused: the observed cells listed (fewer than the missing)
        Y[rng.random(Y.shape) < 0.7] = np.nan
    return Y, trials, theta, a, b


@pytest.mark.parametrize("kind", ["complete", "sparse", "dense", "mostly-missing", "trials3"])
def test_fused_em_equals_the_numpy_reference(kind, monkeypatch):
    Y, trials, theta, a, b = _scores(kind)
    out = {}
    for fused in (False, True):
        monkeypatch.setattr(_random_items, "_FUSED", fused)
        fit = fit_random_items(Y, theta, a, b, trials=trials)
        # bootstrap weights: item multiplicities in the per-item log-likelihood terms; a
        # fixed number of iterations (tol 0): with a tolerance, a replicate whose last change
        # lands within rounding of it may stop one SQUAREM cycle earlier on one path
        # (measured: trials3, replicate 3 at tol 1e-4, 159 against 165 iterations, 3e-4 apart)
        boot = item_bootstrap(Y, fit, n_boot=3, trials=trials, tol=0.0, max_iter=90)
        out[fused] = fit, boot
    (f0, (t0, w0)), (f1, (t1, w1)) = out[False], out[True]
    assert f0.n_iter == f1.n_iter
    np.testing.assert_allclose(f1.theta, f0.theta, rtol=0, atol=1e-10)
    np.testing.assert_allclose(f1.weights, f0.weights, rtol=0, atol=1e-10)
    np.testing.assert_allclose(f1.log_likelihood, f0.log_likelihood, rtol=1e-12)
    # with 70% of the cells missing the information matrix is ill-conditioned: rounding
    # differences of the two paths reach 4e-9 relative in its inverse (1e-10 absolute elsewhere)
    rtol = 1e-8 if kind == "mostly-missing" else 0.0
    np.testing.assert_allclose(f1.covariance, f0.covariance, rtol=rtol, atol=1e-10)
    np.testing.assert_allclose(t1, t0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(w1, w0, rtol=0, atol=1e-9)


@pytest.mark.parametrize("kind", ["complete", "sparse", "dense", "mostly-missing", "trials3"])
def test_one_fused_step_equals_the_reference_step(kind):
    Y, trials, theta, _, b = _scores(kind)
    grid_a, grid_b = _random_items._grid(2.5, b)
    weights = np.random.default_rng(5).integers(0, 3, Y.shape[1]).astype(float)
    problem = _random_items._Problem(Y, grid_a, grid_b, trials, weights=weights)
    log_w = np.log(np.random.default_rng(6).dirichlet(np.ones(grid_a.size)))
    w, theta_new, loglik = problem.fused_step(theta, log_w)
    R, loglik_ref = problem.posterior(theta, log_w)
    R *= weights[:, None]
    np.testing.assert_allclose(loglik, loglik_ref, rtol=1e-13)
    np.testing.assert_allclose(w, R.sum(axis=0) / weights.sum(), rtol=1e-11, atol=1e-300)
    np.testing.assert_allclose(theta_new, problem.newton(theta, R, 3), rtol=0, atol=1e-11)


def test_kernel_functions_match_numpy():
    x = np.random.default_rng(0).uniform(-708.0, 709.0, 100_000)
    np.testing.assert_allclose(_em_kernels.exp64(x), np.exp(x), rtol=5e-14)
    e = np.concatenate([[0.0, 1.0, 1e-300, 1e-17], np.random.default_rng(1).random(10_000)])
    np.testing.assert_allclose(_em_kernels.log1p_unit(e), np.log1p(e), rtol=1e-15, atol=0)
    theta, a, b = np.linspace(-4, 4, 7), np.linspace(0, 40, 50), np.linspace(-60, 60, 50)
    z = np.outer(theta, a) + b
    np.testing.assert_allclose(
        _em_kernels.log_sigmoid_lower(theta, a, b), -np.logaddexp(0.0, z), rtol=1e-14, atol=1e-15
    )


def test_the_e_steps_largest_is_the_running_maximum_in_any_grouping():
    """The E-step takes each item's largest log-likelihood in eight running maxima (one
    chain of compare-and-select was its longest dependency): the same value as the one
    chain over the entries in order, at every length around the groups of eight, NaN
    skipped and -1e308 the floor (as the chain started there)."""
    rng = np.random.default_rng(0)

    def chain(x):
        top = -1e308
        for v in x:
            top = v if v > top else top
        return top

    for n in [*range(0, 26), 640]:
        x = rng.normal(0.0, 50.0, n)
        if n > 3:
            x[rng.integers(0, n, 2)] = np.nan
            x[n // 2] = rng.choice([np.inf, -np.inf, -2e308, 0.0])
        assert _em_kernels.largest(x) == chain(x), n
    assert _em_kernels.largest(np.full(9, np.nan)) == -1e308
    assert _em_kernels.largest(np.full(17, -np.inf)) == -1e308
    peak = np.full(640, -5.0)
    for where in (0, 7, 8, 633, 639):  # the largest in every accumulator and the tail
        peak[where] = 3.0
        assert _em_kernels.largest(peak) == 3.0
        peak[where] = -5.0
