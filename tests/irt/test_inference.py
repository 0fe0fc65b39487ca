"""Standard errors, bootstrap and rank intervals (latentbench.irt.inference)."""

from __future__ import annotations

import numpy as np
import pytest

from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL, fit_model_factors
from latentbench.irt.inference import (
    bootstrap,
    normal_draws,
    rank_intervals,
    standard_errors,
)
from latentbench.synthetic import simulate_2pl


@pytest.fixture(scope="module")
def small():
    data = simulate_2pl(200, 150, missing=0.1, random_state=3)
    return data, TwoPL(prior=None).fit(data.matrix)  # the joint-ML formulas below


def _truth(data):
    """True parameters on the reporting scale of the fitted models (mean 0, sd 1)."""
    theta = data.theta
    mu, sd = theta.mean(), theta.std()
    return (theta - mu) / sd, data.a * sd, data.b + mu * data.a


def test_ability_block_matches_independent_newton_hessian(small):
    data, result = small
    raw = result.raw
    s = raw.U[:, 0].std()
    unc = standard_errors(result, data.matrix, normalisation=False, scale_correction=False)
    # fit_model_factors (an independent implementation) with items fixed at the fit: its
    # Hessian is the per-model block of the objective; the ridge on raw theta is l2 s^2
    _, hessian = fit_model_factors(
        data.matrix.scores,
        result.V,
        result.b,
        l2=result.options["l2"] * s * s,
        U0=result.U,
        max_iter=0,  # the Hessian at the fitted abilities
        return_hessian=True,
    )
    expected = 1.0 / np.sqrt(hessian[:, 0, 0])
    np.testing.assert_allclose(unc.abilities["se"], expected, rtol=1e-6)
    # the normalisation Jacobian changes each variance by O((1 + theta^2) / N)
    norm_se = standard_errors(result, data.matrix, scale_correction=False).abilities["se"]
    ratio = norm_se / unc.abilities["se"]
    assert ratio.between(0.9, 1.05).all() and not np.allclose(ratio, 1.0)


def test_item_block_is_inverse_information(small):
    data, result = small
    unc = standard_errors(result, data.matrix, scale_correction=False).items
    j = 7
    theta, p = result.theta, result.predict_proba()[:, j]
    w = p * (1 - p) * ~np.isnan(data.matrix.scores[:, j])
    raw = result.raw
    mu, s = raw.U[:, 0].mean(), raw.U[:, 0].std()
    A = np.array([[1 / s, 0.0], [-mu / s, 1.0]])
    info = np.array([[w @ theta**2, w @ theta], [w @ theta, w.sum()]]) + 0.01 * A.T @ A
    cov = np.linalg.inv(info)
    assert unc.loc[j, "discrimination_se"] == pytest.approx(np.sqrt(cov[0, 0]), rel=1e-9)
    assert unc.loc[j, "easiness_se"] == pytest.approx(np.sqrt(cov[1, 1]), rel=1e-9)
    assert unc.loc[j, "cov_discrimination_easiness"] == pytest.approx(cov[0, 1], rel=1e-9)
    assert (unc["discrimination_lower"] >= 0).all()


def _coverage(n_models, n_items, seeds):
    cov = {"theta": [], "a": [], "b": []}
    for seed in seeds:
        data = simulate_2pl(n_models, n_items, random_state=seed)
        result = TwoPL().fit(data.matrix)
        theta, a, b = _truth(data)
        unc = standard_errors(result, data.matrix)
        ab, it = unc.abilities, unc.items
        cov["theta"].append(np.mean((ab["lower"] <= theta) & (theta <= ab["upper"])))
        cov["a"].append(
            np.mean((it["discrimination_lower"] <= a) & (a <= it["discrimination_upper"]))
        )
        cov["b"].append(np.mean((it["easiness_lower"] <= b) & (b <= it["easiness_upper"])))
    return {k: np.array(v) for k, v in cov.items()}


@pytest.mark.slow
@pytest.mark.parametrize(("n_models", "n_items"), [(300, 300), (500, 200)])
def test_interval_coverage_in_simulation(n_models, n_items):
    """95% Wald intervals cover the true (normalised) parameters ~95% of the time.

    Monte Carlo error: errors within one data set are correlated (shared items and scale),
    so the standard error of the mean coverage is taken from the spread across seeds, and
    never below the binomial one (6 seeds: the suite's time).
    """
    seeds = range(6)
    cov = _coverage(n_models, n_items, seeds)
    for name, values in cov.items():
        n_units = n_models if name == "theta" else n_items
        binomial = np.sqrt(0.95 * 0.05 / (n_units * len(values)))
        mc = max(values.std(ddof=1) / np.sqrt(len(values)), binomial)
        assert abs(values.mean() - 0.95) <= 3.5 * mc, (name, values.mean(), mc)


def test_bootstrap_agrees_with_plugin_and_is_reproducible(small):
    data, result = small
    boot = bootstrap(result, data.matrix, n_boot=60, random_state=11)
    assert boot.theta.shape == (60, 200) and boot.discrimination.shape == (60, 150)
    plug = standard_errors(result, data.matrix, scale_correction=False)
    ratio = boot.theta.std(axis=0, ddof=1) / plug.abilities["se"].to_numpy()
    # sd of a sd from 60 draws is ~9%; averaged over 200 models ~1%
    assert abs(np.mean(ratio) - 1) < 0.06
    ab = boot.abilities()
    assert (ab["lower"] <= ab["upper"]).all() and list(ab.columns) == [
        "model",
        "theta",
        "se",
        "lower",
        "upper",
    ]
    pct = boot.abilities(interval="percentile")
    np.testing.assert_allclose(ab["lower"], 2 * ab["theta"] - pct["upper"])
    np.testing.assert_allclose(ab["upper"], 2 * ab["theta"] - pct["lower"])
    assert (boot.items()["discrimination_lower"] >= 0).all()
    with pytest.raises(InputError):
        boot.abilities(interval="bca")
    again = bootstrap(result, data.matrix, n_boot=5, random_state=11)
    np.testing.assert_array_equal(again.theta, boot.theta[:5])


def test_bootstrap_parallel_equals_serial():
    data = simulate_2pl(60, 40, random_state=1)
    result = TwoPL().fit(data.matrix)
    serial = bootstrap(result, data.matrix, n_boot=6, random_state=2)
    parallel = bootstrap(result, data.matrix, n_boot=6, random_state=2, n_jobs=2)
    np.testing.assert_allclose(parallel.theta, serial.theta, atol=1e-10)
    np.testing.assert_allclose(parallel.easiness, serial.easiness, atol=1e-10)


def test_nonparametric_bootstraps(small):
    data, result = small
    by_items = bootstrap(result, data.matrix, n_boot=4, method="items", random_state=0)
    assert by_items.discrimination is None and by_items.theta.shape == (4, 200)
    with pytest.raises(InputError):
        by_items.items()
    by_models = bootstrap(result, data.matrix, n_boot=4, method="models", random_state=0)
    assert by_models.theta is None and by_models.items().shape[0] == 150
    with pytest.raises(InputError):
        by_models.rank_intervals()
    with pytest.raises(InputError):
        bootstrap(result, data.matrix, n_boot=4, method="jackknife")


def test_rank_intervals_separated_and_tied():
    rng = np.random.default_rng(0)
    theta = np.array([3.0, 2.0, 2.0, 0.0])
    draws = theta + 0.05 * rng.standard_normal((4000, 4))
    ranks = rank_intervals(draws, ["a", "b", "c", "d"], estimate=theta)
    assert ranks.loc[0, ["rank_lower", "rank_upper"]].tolist() == [1, 1]
    assert ranks.loc[3, ["rank_lower", "rank_upper"]].tolist() == [4, 4]
    # b and c are exchangeable: both intervals are [2, 3] and they are tied
    assert ranks.loc[1, ["rank_lower", "rank_upper"]].tolist() == [2, 3]
    assert ranks.loc[2, ["rank_lower", "rank_upper"]].tolist() == [2, 3]
    assert ranks.loc[1, "tied_with_next"] and not ranks.loc[0, "tied_with_next"]
    assert ranks.loc[0, "prob_best"] == 1.0
    assert np.isnan(ranks.loc[3, "prob_above_next"])


def test_swapped_arguments_of_the_public_helpers_are_input_errors(small):
    # reported_abilities(unc, result) raised AttributeError ('Uncertainty' object has no
    # attribute 'theta'), rank_intervals(unc) a TypeError of float()
    import latentbench.irt as irt

    data, result = small
    unc = standard_errors(result, data.matrix)
    with pytest.raises(InputError, match=r"uncertainty=IRTResult\): swapped; expected result an"):
        irt.reported_abilities(unc, result)
    with pytest.raises(InputError, match=r"uncertainty=DataFrame\); expected result an IRTResult"):
        irt.reported_abilities(result, unc.abilities)
    with pytest.raises(InputError, match=r"draws of type Uncertainty; expected an array .*"
                       r"normal_draws\(unc\.abilities\['theta'\]"):  # fmt: skip
        rank_intervals(unc)
    assert len(irt.reported_abilities(result, unc)) == result.abilities.shape[0]


def test_rank_intervals_cover_true_ranks(small):
    data, result = small
    unc = standard_errors(result, data.matrix)
    draws = normal_draws(unc.abilities["theta"], unc.abilities["se"], 1000, random_state=0)
    ranks = rank_intervals(draws, result.model_ids, estimate=result.theta)
    true_rank = (-data.theta).argsort().argsort() + 1
    inside = (ranks["rank_lower"] <= true_rank) & (true_rank <= ranks["rank_upper"])
    # marginal intervals for 200 models; a loose check that they are not overconfident
    assert inside.mean() > 0.85


def test_score_models_few_items_coverage():
    """New models with 30 of 200 calibrated items each: 95% intervals cover ~95%."""
    covered = []
    for seed in range(4):
        data = simulate_2pl(500, 200, random_state=seed)
        calibration = data.matrix.subset(models=np.arange(300))
        result = TwoPL().fit(calibration)
        theta = data.theta
        mu, sd = theta[:300].mean(), theta[:300].std()
        new = np.array(data.complete[300:], copy=True)
        rng = np.random.default_rng(seed)
        for row in new:
            hide = np.ones(200, dtype=bool)
            hide[rng.choice(200, 30, replace=False)] = False
            row[hide] = np.nan
        matrix = ResponseMatrix(new, [f"new{i}" for i in range(200)], data.matrix.item_ids)
        scored = result.score_models(matrix)
        assert (scored["n_observed"] == 30).all()
        truth = (theta[300:] - mu) / sd
        covered.append(np.mean((scored["lower"] <= truth) & (truth <= scored["upper"])))
    covered = np.array(covered)
    mc = max(covered.std(ddof=1) / 2, np.sqrt(0.95 * 0.05 / 800))
    assert abs(covered.mean() - 0.95) <= 3.5 * mc


def test_input_checks(small):
    data, result = small
    with pytest.raises(InputError):
        standard_errors(result, data.matrix.scores[:, :10])
    with pytest.raises(InputError):
        standard_errors(result, data.matrix, level=1.5)
    other = simulate_2pl(200, 150, random_state=9).matrix
    renamed = ResponseMatrix(other.scores, [f"x{i}" for i in range(200)], other.item_ids)
    with pytest.raises(InputError):
        standard_errors(result, renamed)
    # delegating methods on IRTResult
    # model, theta, se, lower, upper, theta_fit, no_data
    assert result.standard_errors(data.matrix).abilities.shape == (200, 7)


def test_degenerate_fit_gets_the_priors_spread_not_nan():
    """Two models, two items, opposite answers: an intercept-only fit whose Laplace variance
    is not positive. Every model gets a finite interval (the prior's spread, se 1), with a
    warning naming it, and the rank intervals work (they raised IndexError on NaN draws)."""
    from latentbench import LatentbenchWarning
    from latentbench.irt import rank_intervals
    from latentbench.irt._ranks import normal_draws

    matrix = ResponseMatrix(np.array([[1.0, 0.0], [0.0, 1.0]]), ["0", "1"], ["0", "1"])
    with pytest.warns(LatentbenchWarning):
        result = TwoPL().fit(matrix)
        unc = result.standard_errors(matrix)
    se = unc.abilities["se"].to_numpy()
    assert np.isfinite(se).all() and (se > 0).all()
    theta = unc.abilities["theta"].to_numpy()
    ranks = rank_intervals(normal_draws(theta, se, 200, 0), ["0", "1"])
    assert ranks["rank_lower"].between(1, 2).all() and ranks["rank_upper"].between(1, 2).all()


def test_the_priors_spread_is_said_only_for_the_models_that_keep_it():
    """A degenerate fit where one model of the two is constant (its one answer right): the
    warning said "2 model(s) ... get the prior's spread (se 1)" while the constant model's
    interval was its own (se 23.8 in the table); it counts the models that keep se 1 now."""
    import warnings

    Y = np.full((2, 12), np.nan)
    Y[0] = [1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1]
    Y[1, 0] = 1.0  # model 1: one answer, right (every item is constant too)
    matrix = ResponseMatrix(Y, ["a", "b"], [f"i{j}" for j in range(12)])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        unc = TwoPL().fit(matrix).standard_errors(matrix)
    said = [str(w.message) for w in seen if "prior's spread (se 1)" in str(w.message)]
    se = unc.abilities.set_index("model")["se"]
    kept = int(np.isclose(se, 1.0).sum())
    assert se["b"] > 1.0 and kept == 1, se
    assert len(said) == 1 and said[0].startswith(f"ability intervals: {kept} model(s) have no")
    assert f"{kept} model(s) without a usable variance" in (unc.fallback or "")


def test_a_joint_ml_constant_model_at_the_priors_spread_is_said():
    """Without a prior (joint ML) a constant model's interval is open on its far side and
    keeps ``theta -/+ z se`` on the other: a degenerate fit where every score is 0 gave both
    models se 1 and upper = theta + 1.96 (the prior's spread) without a word, the warning
    counting them as having an interval of their own."""
    import warnings

    Y = np.zeros((2, 5))
    Y[0, 2] = np.nan
    matrix = ResponseMatrix(Y, ["a", "b"], [f"i{j}" for j in range(5)])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        unc = TwoPL(prior=None).fit(matrix).standard_errors(matrix)
    table = unc.abilities.set_index("model")
    assert np.allclose(table["se"], 1.0) and np.isinf(table["lower"]).all(), table
    assert np.allclose(table["upper"] - table["theta"], 1.959964, atol=1e-5), table
    said = [str(w.message) for w in seen if "prior's spread (se 1)" in str(w.message)]
    assert said == [
        "ability intervals: 2 model(s) have no finite positive variance (a degenerate fit); "
        "they get the prior's spread (se 1)"
    ], said
    assert "2 model(s) without a usable variance" in (unc.fallback or "")


def test_the_priors_spread_is_se_1_not_scaled_by_the_joint_ml_correction():
    """A joint ML fit's scale correction (k, at most 2; se x k^2) counted a model at the
    prior's spread (se 1) among those that set the scale, which pushed k to its cap, and
    scaled that se as a sampling se: abilities.csv said se 4 for it (and for the constant
    model beside it) under the warning "they get the prior's spread (se 1)"."""
    import warnings

    nan = np.nan
    Y = np.array(
        [
            [nan, 0, 0, nan, nan, 0, nan, 0, nan, nan],  # constant
            [0, nan, 1, 0, 0, 0, 0, 0, 0, 1],
        ]
    )
    matrix = ResponseMatrix(Y, ["a", "b"], [f"i{j}" for j in range(10)])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        unc = TwoPL(prior=None).fit(matrix).standard_errors(matrix)
    said = [str(w.message) for w in seen if "prior's spread (se 1)" in str(w.message)]
    assert len(said) == 1 and said[0].startswith("ability intervals: 2 model(s)"), said
    table = unc.abilities.set_index("model")
    assert np.allclose(table["se"], 1.0), table
    assert np.allclose(table.loc["b", "upper"] - table.loc["b", "theta"], 1.959964), table


@pytest.mark.parametrize("flip", [1.0, 0.0])
def test_a_perfect_model_is_not_the_most_precise_one(flip):
    """A model with every answer right (or wrong) is bounded by the data on one side only;
    its interval came from the curvature at the mode (Laplace) and was the narrowest of all
    (se 0.24, upper 2.75 against a median se of 0.25). It is now the equal-tailed quantiles of
    its posterior under the fit's prior (items fixed), checked here by adaptive quadrature."""
    import warnings

    from scipy import integrate, optimize

    rng = np.random.default_rng(0)
    theta, a, b = np.linspace(-1.5, 1.5, 10), rng.uniform(0.8, 1.6, 40), rng.normal(0, 1, 40)
    Y = (rng.random((10, 40)) < 1 / (1 + np.exp(-(np.outer(theta, a) + b)))).astype(float)
    top = 9 if flip == 1.0 else 0
    Y[top] = flip
    matrix = ResponseMatrix(Y, [f"m{i}" for i in range(10)], [f"q{j}" for j in range(40)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(matrix)
        ab = standard_errors(result, matrix).abilities
    perfect = ab.iloc[top]
    assert perfect["lower"] <= perfect["theta"] <= perfect["upper"]
    assert perfect["se"] > ab.drop(index=top)["se"].median()
    # the same quantiles by adaptive quadrature of the posterior density
    prior = result.penalty.on_reported_scale(result.normalisation)
    m, sd = prior.mean_U, 1 / np.sqrt(prior.precision_U)
    V, c, sigma = result.V[:, 0], result.b, result.sigma
    sign = 1.0 if flip == 1.0 else -1.0

    def density(t):
        x = (V * t + c) / sigma
        return np.exp(-np.logaddexp(0.0, -sign * x).sum() - 0.5 * ((t - m) / sd) ** 2)

    lo, hi = m - 12 * max(sd, 1), m + 12 * max(sd, 1)
    total = integrate.quad(density, lo, hi, limit=200)[0]

    def quantile(q):
        return optimize.brentq(lambda x: integrate.quad(density, lo, x, limit=200)[0] / total - q,
                               lo, hi)  # fmt: skip

    assert perfect["lower"] == pytest.approx(
        max(min(quantile(0.025), perfect["theta"]), lo), abs=0.02
    )
    assert perfect["upper"] == pytest.approx(max(quantile(0.975), perfect["theta"]), abs=0.02)
