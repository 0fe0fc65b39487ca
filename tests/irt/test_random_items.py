"""Abilities by marginal likelihood over the items (random-item 2PL, nonparametric item law)."""

from __future__ import annotations

import numpy as np
import pytest

from latentbench import ResponseMatrix
from latentbench.exceptions import ConvergenceWarning
from latentbench.irt import TwoPL
from latentbench.irt._random_items import _first_top, _grid, _Problem, fit_random_items
from latentbench.synthetic import simulate_2pl


@pytest.fixture(scope="module")
def small():
    data = simulate_2pl(12, 150, random_state=4)
    result = TwoPL().fit(data.matrix)
    fit = fit_random_items(data.matrix.scores, result.U[:, 0], result.V[:, 0], result.b)
    return data, result, fit


def test_information_is_minus_the_hessian_of_the_marginal_likelihood(small):
    data, _, fit = small
    problem = _Problem(np.asarray(data.matrix.scores, float), fit.grid_a, fit.grid_b)
    log_w = np.log(fit.weights)

    def loglik(theta):
        return problem.posterior(theta, log_w)[1]

    theta = fit.theta
    R, _ = problem.posterior(theta, log_w)
    info = problem.information(theta, R)
    n, eps = theta.size, 1e-3
    hessian = np.zeros((n, n))
    for i in range(n):
        for k in range(n):
            e_i, e_k = np.eye(n)[i] * eps, np.eye(n)[k] * eps
            hessian[i, k] = (
                loglik(theta + e_i + e_k)
                - loglik(theta + e_i - e_k)
                - loglik(theta - e_i + e_k)
                + loglik(theta - e_i - e_k)
            ) / (4 * eps * eps)
    np.testing.assert_allclose(info, -hessian, rtol=2e-3, atol=2e-2)


def test_information_matches_the_louis_formula_term_by_term(small):
    """The expanded products on complete items and the direct sum on items with a missing
    cell both equal the Louis identity written out cell by cell (a loop over items and grid
    points, as in its definition), on a matrix with both kinds of items."""
    data, _, fit = small
    scores = np.asarray(data.matrix.scores, float)[:, :60].copy()
    rng = np.random.default_rng(0)
    scores[rng.random(scores.shape) < 0.05] = np.nan  # about half of the items lose a cell
    scores[:, 5] = 0.3  # a fractional score (soft label) on a complete item
    scores[:8, 10] = np.nan  # an item most models miss (the direct sum)
    scores[2:9, 11] = np.nan
    problem = _Problem(scores, fit.grid_a, fit.grid_b)
    R, _ = problem.posterior(fit.theta, np.log(fit.weights))
    info = problem.information(fit.theta, R)
    full = ~np.isnan(scores).any(axis=0)
    assert 0 < full.sum() < full.size
    seen = ~np.isnan(scores)
    Y = np.where(seen, scores, 0.0)
    p = 1.0 / (1.0 + np.exp(-(np.outer(fit.theta, fit.grid_a) + fit.grid_b)))
    n = fit.theta.size
    expected = np.zeros((n, n))
    for j in range(scores.shape[1]):
        mean = np.zeros(n)
        for g in range(fit.grid_a.size):
            score = seen[:, j] * fit.grid_a[g] * (Y[:, j] - p[:, g])
            curvature = seen[:, j] * fit.grid_a[g] ** 2 * p[:, g] * (1.0 - p[:, g])
            expected += R[j, g] * (np.diag(curvature) - np.outer(score, score))
            mean += R[j, g] * score
        expected += np.outer(mean, mean)
    # equal up to the grid points that no item uses (R < 1e-10), which the method skips
    np.testing.assert_allclose(info, expected, rtol=1e-7, atol=1e-7)


def test_fit_is_standardised_and_its_covariance_has_the_gauge_directions_removed(small):
    data, result, fit = small
    assert fit.converged
    np.testing.assert_allclose([fit.theta.mean(), fit.theta.std()], [0.0, 1.0], atol=1e-10)
    np.testing.assert_allclose(fit.covariance @ np.ones(12), 0.0, atol=1e-10)
    np.testing.assert_allclose(fit.covariance @ fit.theta, 0.0, atol=1e-10)
    assert np.all(fit.se > 0)
    np.testing.assert_allclose(fit.weights.sum(), 1.0)
    # the EM climbs from the joint fit's abilities with a uniform law on the grid
    grid_a, grid_b = _grid(_first_top(result.V[:, 0]), result.b)
    problem = _Problem(np.asarray(data.matrix.scores, float), grid_a, grid_b)
    start = problem.posterior(result.U[:, 0], np.full(grid_a.size, -np.log(grid_a.size)))[1]
    assert fit.log_likelihood > start
    # item summaries: posterior means inside the grid, sds positive
    assert fit.item_mean.shape == (150, 2) and np.all(fit.item_sd > 0)
    assert np.all(fit.item_mean[:, 0] >= 0)


def test_missing_cells_are_missing_not_zero(small):
    data, result, fit = small
    scores = np.asarray(data.matrix.scores, float)
    holes = scores.copy()
    holes[:, :10] = np.nan  # ten items nobody answered: no information about anyone
    padded = np.hstack([scores, np.full((12, 10), np.nan)])
    a = np.concatenate([result.V[:, 0], result.V[:10, 0]])
    b = np.concatenate([result.b, result.b[:10]])
    with_empty = fit_random_items(padded, result.U[:, 0], a, b)
    np.testing.assert_allclose(with_empty.theta, fit.theta, atol=5e-3)
    zeros = np.hstack([scores, np.zeros((12, 10))])
    with_zeros = fit_random_items(zeros, result.U[:, 0], a, b)
    assert with_zeros.log_likelihood != pytest.approx(with_empty.log_likelihood)


def test_standard_errors_of_a_small_map_fit_use_the_random_item_abilities():
    data = simulate_2pl(25, 300, random_state=2)
    result = TwoPL().fit(data.matrix)
    unc = result.standard_errors()
    # at most 30 models and 2,000 items: the law-fixed se widened by the item bootstrap
    assert unc.method == "random-item marginal likelihood + item bootstrap"
    ab = unc.abilities
    centre = result.random_items.theta
    # one ability per model: the reported theta is the interval's estimate, the fit's kept
    np.testing.assert_allclose(ab["theta"], centre)
    np.testing.assert_allclose(ab["theta_fit"], result.theta)
    np.testing.assert_allclose(ab["upper"] - ab["theta"], 1.959964 * ab["se"], rtol=1e-5)
    np.testing.assert_allclose(ab["theta"] - ab["lower"], 1.959964 * ab["se"], rtol=1e-5)
    assert unc.fallback is None and unc.checks["edge_mass"] <= 0.05
    cached = result.random_items
    result.standard_errors(level=0.9)
    assert result.random_items is cached
    # the cache follows the scores, not the object: a copy reuses it, other scores do not
    copy = ResponseMatrix(data.matrix.scores.copy(), data.matrix.model_ids, data.matrix.item_ids)
    result.standard_errors(copy)
    assert result.random_items is cached
    flipped = data.matrix.scores.copy()
    flipped[0, :5] = 1 - flipped[0, :5]
    other = ResponseMatrix(flipped, data.matrix.model_ids, data.matrix.item_ids)
    assert not np.allclose(result.standard_errors(other).abilities["theta"], centre)
    assert result.random_items is not cached
    # the joint ML fit keeps the observed-information intervals around its own estimate
    ml = TwoPL(prior=None).fit(data.matrix).standard_errors()
    assert ml.method == "observed information"
    np.testing.assert_allclose(ml.abilities["theta_fit"], ml.abilities["theta"])


@pytest.mark.slow
def test_score_models_with_few_calibration_models_covers():
    """20 calibration models, 10 new ones on a random half of the items each: the 95%
    intervals (random-item likelihood, the calibration's uncertainty included) cover the new
    models' true abilities on the calibration's scale. Tolerance: 3.5 Monte Carlo se from
    the spread across data sets, never below the binomial one. Eight data sets (twelve
    before the calibration-model jackknife tripled each set's cost: the suite's time)."""
    covered = []
    for seed in range(8):
        data = simulate_2pl(30, 400, random_state=seed)
        result = TwoPL().fit(data.matrix.subset(models=np.arange(20)))
        new = np.array(data.complete[20:], copy=True)
        rng = np.random.default_rng(seed)
        new[rng.random(new.shape) < 0.5] = np.nan
        matrix = ResponseMatrix(new, [f"new{i}" for i in range(10)], data.matrix.item_ids)
        scored = result.score_models(matrix)
        assert not np.allclose(scored["theta_fit"], scored["theta"])  # the random-item path
        theta = data.theta.ravel()
        truth = (theta[20:] - theta[:20].mean()) / theta[:20].std()
        covered.append(np.mean((scored["lower"] <= truth) & (truth <= scored["upper"])))
    values = np.array(covered)
    mc = max(values.std(ddof=1) / np.sqrt(values.size), np.sqrt(0.95 * 0.05 / 80))
    assert abs(values.mean() - 0.95) <= 3.5 * mc, (values.mean(), mc)


def test_stopping_before_convergence_warns(small):
    data, result, _ = small
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        fit = fit_random_items(
            data.matrix.scores, result.U[:, 0], result.V[:, 0], result.b, max_iter=3
        )
    assert not fit.converged and np.all(np.isfinite(fit.se))


def test_grid_widens_when_the_law_sits_on_its_largest_discrimination():
    """Items more discriminating than the starting estimates (as after a strongly shrunk MAP
    fit): the grid starts at a <= 1.25, the estimated law must not pile up on its edge."""
    rng = np.random.default_rng(7)
    theta = rng.standard_normal(25)
    a, b = np.full(600, 2.5), rng.normal(0.0, 2.0, 600)
    scores = (rng.random((25, 600)) < 1 / (1 + np.exp(-(np.outer(theta, a) + b)))).astype(float)
    fit = fit_random_items(scores, theta, np.full(600, 1.0), b)
    assert fit.converged
    assert fit.grid_a.max() > 2.5
    assert fit.weights[fit.grid_a == fit.grid_a.max()].sum() <= 0.01
    assert np.corrcoef(fit.theta, theta)[0, 1] > 0.99


@pytest.mark.parametrize("trials", [1, 3])
def test_sparse_missing_correction_equals_the_dense_observed_factor(small, monkeypatch, trials):
    """With few missing cells the E- and M-steps count all cells minus a sparse correction on
    the missing ones; the posterior, the marginal log-likelihood, the Newton steps and the
    whole fit equal those of the dense observed-cell factor."""
    import latentbench.irt._random_items as module

    data, result, fit = small
    scores = np.asarray(data.matrix.scores, float).copy()
    rng = np.random.default_rng(1)
    scores[rng.random(scores.shape) < 0.03] = np.nan
    if trials != 1:
        scores = np.round(scores * trials) / trials
    log_w = np.log(fit.weights)
    sparse = _Problem(scores, fit.grid_a, fit.grid_b, trials)
    monkeypatch.setattr(module, "SPARSE_MISSING", 0.0)
    dense = _Problem(scores, fit.grid_a, fit.grid_b, trials)
    assert sparse.sparse and not dense.sparse and not dense.complete
    R_sparse, ll_sparse = sparse.posterior(fit.theta, log_w)
    R_dense, ll_dense = dense.posterior(fit.theta, log_w)
    np.testing.assert_allclose(R_sparse, R_dense, rtol=1e-9, atol=1e-12)
    assert ll_sparse == pytest.approx(ll_dense, rel=1e-12)
    np.testing.assert_allclose(
        sparse.newton(fit.theta, R_dense, 3), dense.newton(fit.theta, R_dense, 3), atol=1e-10
    )
    args = (scores, result.U[:, 0], result.V[:, 0], result.b)
    fit_dense = fit_random_items(*args, trials=trials)
    monkeypatch.setattr(module, "SPARSE_MISSING", 1.0)
    fit_sparse = fit_random_items(*args, trials=trials)
    np.testing.assert_allclose(fit_sparse.theta, fit_dense.theta, atol=1e-8)
    np.testing.assert_allclose(fit_sparse.covariance, fit_dense.covariance, atol=1e-8)
