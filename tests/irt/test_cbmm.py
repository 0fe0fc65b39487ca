"""cBMM: parameter recovery, monotonicity, parity with the references, degenerate data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from latentbench import ConvergenceWarning, IdentifiabilityWarning, ResponseMatrix, TwoPL
from latentbench.irt import fit_cbmm, fit_model_factors, normalise_rank1
from latentbench.irt.baselines import fit_lbfgsb, fit_textbook_cbmm, objective
from latentbench.synthetic import simulate_2pl, simulate_low_rank


def _spearman(x, y):
    return spearmanr(x, y)[0]


@pytest.fixture(scope="module")
def recovery():
    """The issue's design: 1000 x 1000, theta ~ N(0,1), a ~ LogNormal(0, 0.3), b ~ N(0,1)."""
    out = {}
    for missing in (0.0, 0.2):
        data = simulate_2pl(1000, 1000, missing=missing, random_state=2024)
        result = TwoPL().fit(data.matrix)
        out[missing] = (
            _spearman(result.theta, data.theta),
            _spearman(result.discrimination, data.a),
            _spearman(result.b, data.b),
        )
    return out


def test_recovery_complete_data(recovery):
    theta, a, b = recovery[0.0]
    assert theta >= 0.99
    assert a >= 0.93
    assert b >= 0.99


def test_recovery_with_20_percent_mcar_missing(recovery):
    theta, a, b = recovery[0.2]
    # within 0.01 of the thresholds for complete data
    assert theta >= 0.98
    assert a >= 0.92
    assert b >= 0.98


@pytest.mark.slow
def test_objective_never_increases_across_sweeps():
    """Monotone in every sweep, plain and accelerated, deep into the slow tail.

    The plain iteration needs about 8,500 sweeps to meet ``tol=1e-8`` here (70 s); 1,500 are
    enough to be far into its tail (it meets ``tol=1e-7`` after about 110), where rounding
    noise of the float32 kernels would show, and it must then be at the accelerated optimum.
    """
    data = simulate_2pl(300, 200, missing=0.3, random_state=7)
    fits = {}
    for accelerate, max_iter in ((False, 1500), (True, 20000)):
        fit = fit_cbmm(
            data.matrix.scores,
            accelerate=accelerate,
            tol=1e-8,
            max_iter=max_iter,
            check_monotone=True,
        )
        history = np.array(fit.loss_history)
        increases = np.diff(history)
        # float32 kernels: allow rounding noise far below any real step
        assert np.all(increases <= 1e-9 * np.abs(history[:-1])), increases.max()
        assert len(history) >= min(max_iter, 10)
        fits[accelerate] = fit
    assert fits[True].converged
    # both at the optimum to within the flat tail's slack (1.6e-6 relative here)
    assert fits[False].loss == pytest.approx(fits[True].loss, rel=1e-5)


@pytest.mark.filterwarnings("ignore::latentbench.ConvergenceWarning")
def test_objective_never_increases_rank_r_and_soft_labels():
    data = simulate_low_rank(150, 100, rank=3, missing=0.2, random_state=1)
    soft = np.where(np.isnan(data.matrix.scores), np.nan, data.probabilities)
    for scores in (data.matrix.scores, soft):
        fit = fit_cbmm(scores, rank=3, tol=1e-7, check_monotone=True, max_iter=300)
        assert np.all(np.diff(fit.loss_history) <= 1e-9 * np.abs(fit.loss_history[0]))
        assert np.all(fit.V >= 0)


def test_same_normalised_estimates_from_different_random_starts():
    data = simulate_2pl(300, 100, random_state=11)
    estimates = []
    for seed in (0, 1, 2):
        result = TwoPL(init="random", random_state=seed, tol=1e-10, max_iter=5000).fit(data.matrix)
        estimates.append((result.theta, result.discrimination, result.b))
    deterministic = TwoPL(tol=1e-10, max_iter=5000).fit(data.matrix)
    others = [*estimates[1:], (deterministic.theta, deterministic.discrimination, deterministic.b)]
    for theta, a, b in others:
        np.testing.assert_allclose(theta, estimates[0][0], atol=2e-3)
        np.testing.assert_allclose(a, estimates[0][1], atol=2e-3)
        np.testing.assert_allclose(b, estimates[0][2], atol=2e-3)


@pytest.mark.slow
def test_parity_with_textbook_cbmm_at_tight_tolerance():
    data = simulate_2pl(400, 30, missing=0.1, random_state=3)
    ours = fit_cbmm(data.matrix.scores, tol=1e-12, max_iter=20000)
    reference = fit_textbook_cbmm(data.matrix.scores, tol=1e-12, max_iter=20000)
    mine = normalise_rank1(ours.U[:, 0], ours.V[:, 0], ours.b)
    theirs = normalise_rank1(reference.U[:, 0], reference.V[:, 0], reference.b)
    for k in range(3):
        assert np.abs(mine[k] - theirs[k]).max() <= 1e-4
    scores = data.matrix.scores
    assert (
        objective(scores, ours.U, ours.V, ours.b, 1.0, 1e-2)
        <= reference.loss + 1e-6 * reference.loss
    )


def test_lbfgsb_baseline_reaches_the_same_optimum():
    data = simulate_2pl(200, 80, missing=0.1, random_state=5)
    # tol 1e-11 stops 2.0e-10 (relative) above L-BFGS-B's optimum here, 500 times inside the
    # claim's 1e-7 (tol 1e-12: 3.8e-12, at twice the sweeps: 3352 against 1790)
    ours = fit_cbmm(data.matrix.scores, tol=1e-11, max_iter=20000)
    reference = fit_lbfgsb(data.matrix.scores, tol=1e-14)
    scores = data.matrix.scores
    ours_value = objective(scores, ours.U, ours.V, ours.b, 1.0, 1e-2)
    assert ours_value == pytest.approx(reference.loss, rel=1e-7)
    assert np.all(reference.V >= 0)


def test_item_block_nnls_is_the_exact_constrained_minimiser():
    """The item block's batched NNLS (active set, warm-started) against SciPy's bounded
    least squares (BVLS) on the same quadratic: w[:r] >= 0, the intercept free; random
    Gram matrices, right-hand sides over six orders of magnitude, feasible warm starts."""
    from scipy.optimize import lsq_linear

    from latentbench.irt._kernels import batched_nnls

    rng = np.random.default_rng(0)
    for _ in range(60):
        r = int(rng.integers(1, 17))
        A = rng.standard_normal((3 * (r + 1), r + 1))
        G = A.T @ A + 0.01 * np.eye(r + 1)
        rhs = rng.standard_normal((r + 1, 12)) * rng.choice([1e-3, 1.0, 1e3])
        start = np.abs(rng.standard_normal((r + 1, 12))) * (rng.random((r + 1, 12)) < 0.5)
        W = batched_nnls(G, rhs, start, r)
        assert np.all(W[:r] >= 0)
        L = np.linalg.cholesky(G)  # 0.5 w'Gw - c'w = 0.5 |L'w - L^-1 c|^2 + const
        bounds = (np.r_[np.zeros(r), -np.inf], np.full(r + 1, np.inf))
        for j in range(12):
            best = lsq_linear(L.T, np.linalg.solve(L, rhs[:, j]), bounds, "bvls", tol=1e-14).x
            value = 0.5 * W[:, j] @ G @ W[:, j] - rhs[:, j] @ W[:, j]
            optimum = 0.5 * best @ G @ best - rhs[:, j] @ best
            assert value <= optimum + 1e-10 * (1 + abs(optimum))
            np.testing.assert_allclose(W[:, j], best, atol=1e-6 * (1 + np.abs(best).max()))


@pytest.mark.slow
def test_rank_r_not_worse_than_textbook_reference():
    data = simulate_low_rank(100, 40, rank=2, missing=0.1, random_state=3)
    ours = fit_cbmm(data.matrix.scores, rank=2, tol=1e-9, max_iter=5000)
    reference = fit_textbook_cbmm(data.matrix.scores, rank=2, tol=1e-8, max_iter=1000)
    assert ours.loss <= reference.loss * (1 + 1e-6)


def test_degenerate_rows_and_columns_stay_finite():
    data = simulate_2pl(50, 40, random_state=0)
    scores = np.array(data.matrix.scores, copy=True)
    scores[:, 0] = 1.0  # an all-correct item
    scores[:, 1] = 0.0  # an all-wrong item
    scores[0, 2:] = 1.0  # an all-correct model
    scores[1, 2:] = 0.0  # an all-wrong model
    scores[:2, :2] = np.nan
    scores[2:, 2] = np.nan  # an item seen by two models only
    scores[3, 3:] = np.nan  # a model that saw three items
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    result = TwoPL().fit(matrix)
    # location -b/a is NaN by design where a = 0; everything else is finite
    for frame in (result.abilities, result.items.drop(columns="location")):
        numeric = frame.select_dtypes("number").to_numpy(dtype=float)
        assert np.isfinite(numeric).all()
    zero = result.items["discrimination"] == 0
    assert (result.items["location"].isna() == zero).all()
    assert result.abilities.loc[0, "constant"] and result.items.loc[0, "constant"]
    assert result.abilities["theta"].idxmax() == 0
    assert result.abilities["theta"].idxmin() == 1
    assert np.isfinite(result.predict_proba()).all()


def test_max_iter_emits_convergence_warning():
    data = simulate_2pl(100, 50, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        result = TwoPL(max_iter=2).fit(data.matrix)
    assert not result.converged


def test_bad_start_does_not_collapse():
    """The reference solver collapses to a = 0 from theta0 = -theta_true; ours must not."""
    data = simulate_2pl(300, 200, random_state=9)
    m = data.matrix.shape[1]
    start = (-data.theta[:, None], np.full((m, 1), 0.5), np.zeros(m))
    with pytest.warns(IdentifiabilityWarning, match="restarting from the accuracy-based start"):
        fit = fit_cbmm(data.matrix.scores, init=start, max_iter=3000)
    assert fit.restarted  # the fit says so, not the warning alone
    theta, a, _ = normalise_rank1(fit.U[:, 0], fit.V[:, 0], fit.b)
    assert _spearman(theta, data.theta) > 0.95
    assert np.all(np.isfinite(a)) and a.max() > 0


def test_fit_model_factors_matches_per_row_scipy_solution():
    from scipy.optimize import minimize

    data = simulate_low_rank(30, 60, rank=2, missing=0.5, random_state=4)
    V, b = data.V, data.b
    U = fit_model_factors(data.matrix.scores, V, b, l2=0.1)
    for i in (0, 7, 19):
        row = data.matrix.scores[i]
        seen = ~np.isnan(row)

        def f(u, row=row, seen=seen):
            t = V[seen] @ u + b[seen]
            return np.sum(np.logaddexp(0, t) - row[seen] * t) + 0.05 * u @ u

        best = minimize(f, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).x
        np.testing.assert_allclose(U[i], best, atol=1e-5)


def test_fixed_items_fit_only_abilities():
    data = simulate_2pl(200, 100, random_state=2)
    fit = fit_cbmm(data.matrix.scores, fixed_items=(data.V, data.b), l2=0.0, tol=1e-10)
    np.testing.assert_array_equal(fit.V, data.V)
    np.testing.assert_array_equal(fit.b, data.b)
    direct = fit_model_factors(data.matrix.scores, data.V, data.b, l2=0.0)
    np.testing.assert_allclose(fit.U, direct, atol=1e-3)


@pytest.mark.filterwarnings("ignore::latentbench.ConvergenceWarning")
def test_the_penalty_terms_are_made_once_per_fit_not_per_sweep(monkeypatch):
    """The penalty's block terms (targets and curvatures) are constants of a fit: they were
    built again in every sweep, a tenth of a small fit's time (tiny joint-ML fits: 3.1 ->
    2.6 s of CPU for 40, the same bits). Counted over a fit of a few hundred sweeps."""
    from latentbench.irt._objective import GaussianPenalty

    made = {"item": 0, "model": 0}
    item_curvature = GaussianPenalty.item_curvature
    model_curvature = GaussianPenalty.model_curvature

    def counted_item(self, r):
        made["item"] += 1
        return item_curvature(self, r)

    def counted_model(self, r):
        made["model"] += 1
        return model_curvature(self, r)

    monkeypatch.setattr(GaussianPenalty, "item_curvature", counted_item)
    monkeypatch.setattr(GaussianPenalty, "model_curvature", counted_model)
    data = simulate_2pl(6, 9, random_state=1)
    fit = fit_cbmm(data.matrix.scores, l2=0.0, tol=1e-10, max_iter=400)
    assert fit.n_iter >= 50
    assert made == {"item": 1, "model": 1}, (made, fit.n_iter)


def test_the_textbook_reference_makes_its_constants_once_and_keeps_the_objective(monkeypatch):
    """The textbook reference rebuilt its penalty terms, the b-block's denominator and the
    objective's labels and mask at every sweep (a fifth of the parity test's 6 s): made once
    per fit now, the same operations on the same values (iterates bit for bit). Counted over
    a fit of a few hundred sweeps; its loss is the public objective's, to the bit."""
    from latentbench.irt._objective import GaussianPenalty

    made = {"item": 0, "model": 0, "target": 0}
    originals = {
        "item": GaussianPenalty.item_target,
        "model": GaussianPenalty.model_curvature,
        "target": GaussianPenalty.model_target,
    }
    names = {"item": "item_target", "model": "model_curvature", "target": "model_target"}

    def counted(key):
        def call(self, r):
            made[key] += 1
            return originals[key](self, r)

        return call

    for key, name in names.items():
        monkeypatch.setattr(GaussianPenalty, name, counted(key))
    data = simulate_2pl(40, 12, missing=0.2, random_state=2)
    fit = fit_textbook_cbmm(data.matrix.scores, tol=1e-12, max_iter=300)
    assert fit.n_iter >= 50
    assert made == {"item": 1, "model": 1, "target": 1}, (made, fit.n_iter)
    assert fit.loss == objective(data.matrix.scores, fit.U, fit.V, fit.b, 1.0, 1e-2)
