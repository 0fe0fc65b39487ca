"""Low-rank proxy: recovery, compacted refits equal the dense engine call, priors."""

from __future__ import annotations

import numpy as np
import pytest

from latentbench.exceptions import InputError, NotFittedError
from latentbench.irt import fit_model_factors
from latentbench.select import LowRankProxy

from .conftest import lowrank_data


def _mask(Y, per_row, seed):
    rng = np.random.default_rng(seed)
    out = np.full(Y.shape, np.nan, dtype=np.float32)
    for i in range(Y.shape[0]):
        cols = rng.choice(Y.shape[1], per_row[i] if np.ndim(per_row) else per_row, replace=False)
        out[i, cols] = Y[i, cols]
    return out


def test_compacted_fit_equals_dense_engine_call():
    Y, _U, V, b = lowrank_data(40, 500, r=3, seed=1)
    proxy = LowRankProxy.from_factors(
        V, b, prior="ridge", l2_model=1.0, newton_tol=1e-10, max_cells=2000
    )
    counts = np.random.default_rng(0).integers(5, 400, size=40)
    obs = _mask(Y, counts, 2)
    U_compact = proxy.fit_models(obs)
    U_dense = fit_model_factors(obs, V, b, l2=1.0, max_iter=50, tol=1e-10)
    np.testing.assert_allclose(U_compact, U_dense, atol=1e-5)


def test_population_prior_recovers_factors_and_beats_the_mean():
    Y, U, V, b = lowrank_data(300, 600, r=2, seed=4)
    proxy = LowRankProxy.from_factors(V, b, U_history=U[:200])
    obs = _mask(Y[200:], 150, 3)
    U_hat = proxy.fit_models(obs)
    f = proxy.predict(U_hat)
    truth = 1.0 / (1.0 + np.exp(-(U[200:] @ V.T + b)))
    unseen = np.isnan(obs)
    r = np.corrcoef(f[unseen], truth[unseen])[0, 1]
    assert r > 0.9
    # refitting only some rows leaves the others untouched
    rows = np.array([0, 5])
    U_part = proxy.fit_models(obs, U0=np.zeros_like(U_hat), rows=rows)
    assert np.all(U_part[1] == 0) and np.allclose(U_part[rows], U_hat[rows], atol=1e-3)


def test_fit_on_history_with_the_engine():
    Y, _, _, _ = lowrank_data(80, 200, r=2, seed=6)
    proxy = LowRankProxy(rank=2, max_iter=100).fit(Y[:60])
    assert proxy.V_.shape == (200, 2) and np.all(proxy.V_ >= 0)
    obs = _mask(Y[60:], 60, 7)
    f = proxy.predict(proxy.fit_models(obs))
    unseen = np.isnan(obs)
    # better than predicting each model's observed mean everywhere (Brier score)
    rowmean = np.nanmean(obs, axis=1, keepdims=True) * np.ones_like(obs)
    brier = np.mean((f[unseen] - Y[60:][unseen]) ** 2)
    base = np.mean((rowmean[unseen] - Y[60:][unseen]) ** 2)
    assert brier < base


def test_bad_inputs():
    with pytest.raises(InputError, match="rank"):
        LowRankProxy(rank=0).fit(np.zeros((3, 4)))
    with pytest.raises(InputError, match="prior"):
        LowRankProxy(prior="flat").fit(np.zeros((3, 4)))
    with pytest.raises(NotFittedError):
        LowRankProxy().predict(np.zeros((1, 2)))
    proxy = LowRankProxy.from_factors(np.ones((4, 1)), np.zeros(4))
    with pytest.raises(InputError, match="shape"):
        proxy.fit_models(np.zeros((2, 5)))


def test_rank_auto_cross_validates_on_small_histories():
    """rank="auto" picks the rank by held-out residuals at any history size (no n // 16 rule)."""
    Y3, _, _, _ = lowrank_data(36, 400, r=3, seed=11, spread=2.0)
    Y1, _, _, _ = lowrank_data(36, 400, r=1, seed=12, spread=2.0)
    rich = LowRankProxy(random_state=0).fit(Y3)
    plain = LowRankProxy(random_state=0).fit(Y1)
    assert rich.rank_ in (2, 4) and plain.rank_ in (1, 2)
    assert set(rich.cv_scores_) == {1, 2, 4, 8, 16}
    assert rich.cv_scores_[rich.rank_].mean() < rich.cv_scores_[1].mean()


def test_history_free_refit_on_revealed_cells_is_sparse_and_warm() -> None:
    import warnings

    from latentbench.select import LowRankProxy

    rng = np.random.default_rng(3)
    n, m = 150, 2000
    theta = rng.normal(size=(n, 1))
    P = 1 / (1 + np.exp(-(theta @ rng.uniform(0.3, 1, (1, m)))))
    full = (rng.random((n, m)) < P).astype(np.float32)
    draw = rng.random((n, m))
    revealed = np.where(draw < 0.05, full, np.nan)
    proxy = LowRankProxy(rank=1, max_iter=5000).fit(revealed)
    more = np.where(draw < 0.06, full, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warm refit converges
        warm = LowRankProxy(rank=1, max_iter=5000)
        warm.V_, warm.b_, warm.U_history_ = proxy.V_, proxy.b_, proxy.U_history_
        warm.fit(more, warm_start=True)
    cold = LowRankProxy(rank=1, max_iter=5000).fit(more)
    # ~100 revealed cells per candidate: the warm refit recovers abilities as well as a cold fit
    recovery_warm = np.corrcoef(warm.U_history_[:, 0], theta[:, 0])[0, 1]
    recovery_cold = np.corrcoef(cold.U_history_[:, 0], theta[:, 0])[0, 1]
    assert recovery_warm > recovery_cold - 0.02, (recovery_warm, recovery_cold)
