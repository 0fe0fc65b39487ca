"""Doubly robust estimate and lambda rule: unbiasedness and variance by Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest

from latentbench.exceptions import InputError
from latentbench.select._estimators import dr_round_estimate, dr_round_variance, plugin_lambda


def _draws(n_pool: int, size: int, reps: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((reps, n_pool)), axis=1)[:, :size]


@pytest.mark.parametrize("lam", [0.0, 0.5, 1.0])
def test_dr_unbiased_with_adversarial_predictions(lam):
    rng = np.random.default_rng(1)
    n, n_obs, B, reps = 200, 50, 16, 40_000
    y = (rng.random(n) < 0.55).astype(float)
    mu = y.mean()
    f = np.clip(1.0 - y + rng.normal(0, 0.05, n), 0, 1)  # anti-correlated with the truth
    pool = np.arange(n_obs, n)
    N = pool.size
    batch = pool[_draws(N, B, reps, 2)]
    z = dr_round_estimate(
        y[:n_obs].sum(), f[pool].sum(), y[batch], f[batch], B / N, np.full(reps, lam), n
    )
    se = z.std(ddof=1) / np.sqrt(reps)
    assert abs(z.mean() - mu) < 4 * se
    # the SRSWOR variance formula of pulse.md §3.3 matches the Monte Carlo variance
    r = y[pool] - lam * f[pool]
    exact = (N / n) ** 2 * (1 / B - 1 / N) * r.var(ddof=1)
    assert z.var(ddof=1) == pytest.approx(exact, rel=0.05)


def test_lambda_zero_is_horvitz_thompson():
    rng = np.random.default_rng(0)
    y, f = rng.random(10), rng.random(10)
    z = dr_round_estimate(3.0, 7.0, y, f, 10 / 40, 0.0, 100)
    assert z == pytest.approx((3.0 + 4.0 * y.sum()) / 100)


def test_plugin_lambda_rule():
    assert plugin_lambda(10.0, 5.0, 0.5, 0.0, 0) == 1.0  # no history
    assert plugin_lambda(10.0, 5.0, 0.5, -3.0, 4) == 1.0  # zbar <= 0
    F, F2, pi, zbar = 30.0, 20.0, 0.2, 12.0
    lam = float(plugin_lambda(F, F2, pi, zbar, 3))
    Q = (1 - pi) / pi * F2
    u = np.linspace(0, 1, 100_001)
    best = u[np.argmin((zbar - u * F) ** 2 + u**2 * Q)]
    assert lam == pytest.approx(1 - best, abs=1e-4)
    assert 0.0 <= float(plugin_lambda(F, F2, pi, 1e6, 3)) <= 1.0
    vec = plugin_lambda(np.array([F, F]), np.array([F2, F2]), 0.2, np.array([zbar, -1.0]), 3)
    assert vec.shape == (2,) and vec[1] == 1.0


def test_predicted_variance_matches_bernoulli_model():
    rng = np.random.default_rng(5)
    n, B, reps = 300, 20, 30_000
    f = rng.uniform(0.05, 0.95, n)
    zs = []
    batch = _draws(n, B, reps, 6)
    for k in range(reps // 1000):  # fresh Y ~ Bernoulli(f) per block
        y = (rng.random(n) < f).astype(float)
        idx = batch[k * 1000 : (k + 1) * 1000]
        z = dr_round_estimate(0.0, f.sum(), y[idx], f[idx], B / n, np.full(1000, 0.7), n)
        zs.append(z - y.mean())
    emp = np.concatenate(zs).var()
    pred = float(dr_round_variance(f.sum(), (f * f).sum(), n, B, 0.7, n))
    assert emp == pytest.approx(pred, rel=0.1)


def test_inclusion_must_be_a_probability():
    with pytest.raises(InputError, match="inclusion"):
        dr_round_estimate(0.0, 1.0, np.ones(2), np.ones(2), 0.0, 1.0, 10)


def test_per_draw_estimates_have_the_right_conditional_means():
    """Every draw's estimate is unbiased, and they average to about the per-round estimate."""
    from latentbench.select._estimators import dr_draw_estimates

    rng = np.random.default_rng(7)
    n, n_obs, B, reps = 120, 30, 8, 30_000
    y = (rng.random(n) < 0.4).astype(float)
    f = np.clip(1.0 - y + 0.2, 0, 1)  # hostile
    pool = np.arange(n_obs, n)
    batch = pool[_draws(pool.size, B, reps, 8)]
    F = f[pool].sum()
    Z = np.stack(
        [dr_draw_estimates(y[:n_obs].sum(), F, y[b], f[b], 0.8, pool.size, n) for b in batch]
    )
    se = Z.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(Z.mean(axis=0) - y.mean()) < 4.5 * se)
    assert Z.min() >= -1 and Z.max() <= 2
