"""The fit path's ranks and tail functions equal scipy.stats' (which it no longer imports)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from latentbench.irt._stats import chi2_sf, norm_ppf, norm_sf, poisson_cdf, rankdata


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
