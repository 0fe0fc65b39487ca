"""The fit path's ranks and tail functions equal scipy.stats' (which it no longer imports)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from latentbench.irt._stats import (
    chi2_sf,
    norm_ppf,
    norm_sf,
    pair_disagreement_cdf,
    poisson_cdf,
    rankdata,
)


@pytest.mark.parametrize("method", ["average", "min"])
def test_rankdata_equals_scipy_with_ties(method):
    rng = np.random.default_rng(0)
    for values in (
        rng.normal(size=50),
        rng.integers(0, 5, size=200).astype(float),  # many ties
        np.array([3.0]),
        np.array([], dtype=float),
        np.array([2.0, -np.inf, np.inf, 2.0, 0.0]),
    ):
        np.testing.assert_array_equal(
            rankdata(values, method), stats.rankdata(values, method=method)
        )
    assert np.isnan(rankdata([1.0, np.nan, 0.0], method)).all()
    assert np.isnan(stats.rankdata([1.0, np.nan, 0.0], method=method)).all()


def test_tail_functions_equal_scipy_including_edge_cases():
    z = np.array([-40.0, -1.5, 0.0, 0.3, 8.0, 40.0, np.nan])
    np.testing.assert_allclose(norm_sf(z), stats.norm.sf(z), rtol=1e-14, equal_nan=True)
    for q in (0.5, 0.9, 0.95, 0.975, 0.999):
        assert norm_ppf(q) == pytest.approx(stats.norm.ppf(q), rel=1e-14)
    x = np.array([0.0, 0.5, 3.0, 10.0, 100.0, np.nan, 1.0, 2.0])
    df = np.array([1.0, 2.0, 3.0, 0.0, 5.0, 2.0, np.nan, -1.0])
    np.testing.assert_allclose(chi2_sf(x, df), stats.chi2.sf(x, df), rtol=1e-13, equal_nan=True)
    k = np.array([-1.0, 0.0, 1.0, 2.5, 3.0, 10.0, np.nan, 0.99])
    mu = np.array([1e-12, 0.5, 1.0, 2.0, 3.0, 4.0, 1.0, 7.0])
    np.testing.assert_allclose(
        poisson_cdf(k, mu), stats.poisson.cdf(k, mu), rtol=1e-13, equal_nan=True
    )


def test_pair_disagreement_cdf_is_the_exact_poisson_binomial_tail():
    """Against enumeration of every answer pattern (8 models), scipy's binomial where the
    disagreement probability is the same on every model, 0 below zero disagreements, and only
    the models observed on both items counted."""
    rng = np.random.default_rng(3)
    fitted = rng.uniform(0.05, 0.95, size=(8, 3))
    observed = np.ones((8, 3), dtype=bool)
    observed[[1, 5], 2] = False
    pairs_a, pairs_b = np.array([0, 0, 1, 0]), np.array([1, 2, 2, 1])
    counts = np.array([2.0, 0.0, 3.7, -1.0])
    got = pair_disagreement_cdf(fitted, observed, pairs_a, pairs_b, counts)
    for k, (a, b) in enumerate(zip(pairs_a, pairs_b, strict=True)):
        both = observed[:, a] & observed[:, b]
        q = fitted[both, a] * (1 - fitted[both, b]) + (1 - fitted[both, a]) * fitted[both, b]
        patterns = np.array(np.meshgrid(*[[0, 1]] * q.size)).reshape(q.size, -1).T
        prob = np.prod(np.where(patterns == 1, q, 1 - q), axis=1)
        want = prob[patterns.sum(axis=1) <= np.floor(counts[k])].sum()
        assert got[k] == pytest.approx(want, rel=1e-12, abs=0)
    same = np.full((40, 2), 0.5)
    same[:, 1] = 0.2  # q = 0.5 on every model
    got = pair_disagreement_cdf(same, np.ones((40, 2), bool), [0] * 4, [1] * 4, [0, 5, 20, 40])
    np.testing.assert_allclose(got, stats.binom.cdf([0, 5, 20, 40], 40, 0.5), rtol=1e-12)
