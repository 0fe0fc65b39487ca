"""Confidence sequences: agreement of the two EB implementations and anytime coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from latentbench.exceptions import InputError
from latentbench.select._bounds import EBConfSeq, FreedmanConfSeq, eb_confseq


def test_incremental_matches_functional():
    rng = np.random.default_rng(0)
    z = rng.uniform(-1, 2, 50) * 0.3 + 0.4
    lo, hi = eb_confseq(z, 0.1 / 3)
    cs = EBConfSeq(3, 0.1)
    for k, value in enumerate(z):
        cs.update(1, value)
        l_k, h_k = cs.interval()
        assert l_k[1] == pytest.approx(lo[k]) and h_k[1] == pytest.approx(hi[k])
    assert cs.count.tolist() == [0, 50, 0]


def test_intervals_shrink():
    rng = np.random.default_rng(1)
    z = rng.normal(0.5, 0.05, 400)
    lo, hi = eb_confseq(np.clip(z, -1, 2), 0.05)
    width = hi - lo
    assert width[399] < 0.5 * width[49] < width[9]


@pytest.mark.parametrize("kind", ["eb", "freedman"])
def test_anytime_coverage_iid(kind):
    """P(some k misses) <= alpha, checked with a binomial tolerance (3 SE)."""
    alpha, reps, K = 0.1, 600, 80
    rng = np.random.default_rng(2)
    mu = 0.3
    misses = 0
    for _ in range(reps):
        # bounded, skewed per-round estimates with mean mu, range within [-1, 2]
        z = mu + ((rng.random(K) < 0.1) - 0.1) * 1.5  # values mu - 0.15 or mu + 1.35
        if kind == "eb":
            lo, hi = eb_confseq(z, alpha)
        else:
            cs = FreedmanConfSeq(1, alpha, max_pulls=K)
            lo, hi = np.empty(K), np.empty(K)
            for k in range(K):
                cs.update(0, z[k], 2.0)
                lo[k], hi[k] = cs._lower[0], cs._upper[0]
        misses += bool(np.any((lo > mu) | (hi < mu)))
    rate = misses / reps
    assert rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)


def test_eb_confseq_is_not_trivially_wide():
    """With tight data the EB interval is much narrower than the range (could fail)."""
    lo, hi = eb_confseq(np.full(200, 0.42), 0.1)
    assert hi[-1] - lo[-1] < 0.2
    assert lo[-1] <= 0.42 <= hi[-1]


def test_bad_inputs():
    with pytest.raises(InputError, match="alpha"):
        eb_confseq(np.zeros(3), 1.5)
    with pytest.raises(InputError, match="outside"):
        eb_confseq(np.array([5.0]), 0.1)
    with pytest.raises(InputError, match="alpha"):
        EBConfSeq(3, 0.0)


def test_batched_update_equals_sequential():
    rng = np.random.default_rng(3)
    z = rng.uniform(-0.5, 1.5, 300)
    one, many = EBConfSeq(2, 0.1), EBConfSeq(2, 0.1)
    for value in z:
        one.update(0, value)
    for chunk in np.array_split(z, 7):
        many.update(0, chunk)
    np.testing.assert_allclose(one.interval()[0], many.interval()[0], rtol=1e-10)
    np.testing.assert_allclose(one.interval()[1], many.interval()[1], rtol=1e-10)
    np.testing.assert_allclose(one.centre()[0], many.centre()[0], rtol=1e-10)
