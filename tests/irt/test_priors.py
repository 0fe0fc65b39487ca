"""The default MAP fit (priors), held-out evaluation, marginal ML and the stopping rule."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import spearmanr

from latentbench import ResponseMatrix
from latentbench.exceptions import ConvergenceWarning, InputError
from latentbench.irt import Prior, TwoPL, fit_cbmm, fit_marginal
from latentbench.irt._model_factors import model_newton_step
from latentbench.irt._objective import GaussianPenalty
from latentbench.synthetic import simulate_2pl


def _degenerate(n_models: int = 22, n_items: int = 300, seed: int = 0) -> ResponseMatrix:
    """Few models, steep items, one all-correct item and one much weaker model."""
    data = simulate_2pl(n_models, n_items, a_log_sd=0.8, random_state=seed)
    Y = data.matrix.scores.copy()
    Y[:, 0] = 1.0
    Y[0, : n_items // 2] = 0.0
    return ResponseMatrix(Y, data.matrix.model_ids, data.matrix.item_ids)


@pytest.mark.parametrize("n_models", [22, 45, 70])
def test_default_fit_has_no_degenerate_parameters_at_small_shapes(n_models):
    matrix = _degenerate(n_models, seed=n_models)
    result = TwoPL().fit(matrix)
    assert result.converged and result.n_iter <= 200
    assert result.V.max() <= 10.0
    assert np.abs(result.U).max() <= 5.0
    assert spearmanr(result.U[:, 0], matrix.model_accuracy())[0] >= 0.9
    assert result.prior_selection is not None
    assert result.prior_selection.a_sd in Prior().a_sd_grid
    # joint ML on the same matrix drifts: larger discriminations
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        joint = TwoPL(prior=None, max_iter=300).fit(matrix)
    assert joint.V.max() > result.V.max()


def test_prior_none_is_joint_ml_with_the_ridge():
    data = simulate_2pl(40, 30, random_state=4)
    result = TwoPL(prior=None, l2=0.05).fit(data.matrix)
    raw = fit_cbmm(data.matrix.scores, l2=0.05)
    np.testing.assert_allclose(result.raw.U, raw.U)
    assert result.penalty == GaussianPenalty.ridge(0.05) and result.prior_selection is None


def test_fixed_prior_is_used_as_given():
    data = simulate_2pl(40, 30, random_state=5)
    prior = Prior(a_sd=0.7, b_mean=0.0, b_sd=2.0)
    result = TwoPL(prior=prior).fit(data.matrix)
    assert result.penalty == GaussianPenalty(1.0, 1 / 0.7**2, 0.25, mean_V=1.0, mean_b=0.0)
    with pytest.raises(InputError, match="a_sd=-1"):
        Prior(a_sd=-1)


def test_cross_validate_beats_the_additive_model_when_discriminations_vary():
    data = simulate_2pl(60, 200, a_log_sd=0.7, random_state=6)
    cv = TwoPL().cross_validate(data.matrix, n_splits=2, random_state=0)
    assert set(cv.table["fit"]) == {"model", "additive"} and len(cv.table) == 4
    model, additive = cv.scores("model"), cv.scores("additive")
    assert model.log_loss < additive.log_loss
    assert model.auc > additive.auc and 0.5 < model.auc < 1
    assert list(cv.summary()["fit"]) == ["model", "additive"]


def test_laplace_intervals_cover_at_a_small_shape():
    # parametric simulation at 40 models x 200 items from a fixed 2PL; MC tolerance: 12 replicas
    # x 40 abilities, binomial sd of the mean coverage ~0.01, plus correlation within replicas
    data = simulate_2pl(40, 200, a_log_sd=0.4, random_state=7)
    truth = data.theta
    truth = (truth - truth.mean()) / truth.std()
    covered = []
    for k in range(12):
        rng = np.random.default_rng(100 + k)
        Y = (rng.random(data.probabilities.shape) < data.probabilities).astype(np.float32)
        matrix = ResponseMatrix(Y, data.matrix.model_ids, data.matrix.item_ids)
        ab = TwoPL().fit(matrix).standard_errors().abilities
        covered.append(np.mean((ab["lower"] <= truth) & (truth <= ab["upper"])))
    assert 0.90 <= float(np.mean(covered)) <= 0.985


def test_marginal_ml_recovers_the_2pl():
    data = simulate_2pl(300, 60, random_state=8)
    fit = fit_marginal(data.matrix.scores)
    assert fit.converged
    assert spearmanr(fit.theta, data.theta)[0] > 0.95
    assert spearmanr(fit.a, data.a)[0] > 0.6
    assert np.corrcoef(fit.b, data.b)[0, 1] > 0.95
    assert (fit.theta_sd > 0).all() and (fit.theta_sd < 1).all()
    p = fit.predict_proba()
    assert p.shape == (300, 60) and np.isfinite(p).all()


def test_convergence_requires_block_optimality():
    data = simulate_2pl(50, 80, random_state=9)
    penalty = GaussianPenalty(1.0, 1.0, 0.1, mean_V=1.0)
    fit = fit_cbmm(data.matrix.scores, penalty=penalty)
    assert fit.converged
    step = model_newton_step(data.matrix.scores, fit.U, fit.V, fit.b, 1.0, penalty)
    assert np.abs(step).max() < 1e-2
    # a point away from the optimum has a large Newton step
    far = model_newton_step(data.matrix.scores, fit.U * 0.5, fit.V, fit.b, 1.0, penalty)
    assert np.abs(far).max() > 0.1


def test_additive_baseline_converges_to_its_ridge_optimum_and_warns_when_stopped():
    """The additive model's logits after its default stop equal those of a long run (the
    ridge fixes the shift between c and b in closed form); a stop at max_iter warns."""
    from latentbench.irt import fit_additive

    scores = np.array(simulate_2pl(60, 300, missing=0.2, random_state=4).matrix.scores)
    scores[0] = np.where(np.isnan(scores[0]), np.nan, 1.0)  # an all-correct model
    c, b = fit_additive(scores)
    c_long, b_long = fit_additive(scores, max_iter=20_000, tol=1e-14)
    np.testing.assert_allclose(c[:, None] + b, c_long[:, None] + b_long, rtol=0, atol=1e-8)
    np.testing.assert_allclose(c.sum(), b.sum(), atol=1e-8)  # the ridge's balance
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        fit_additive(scores, max_iter=2)


def test_additive_baseline_converges_on_models_in_groups_that_share_no_item():
    """Two groups of models with no item in common: each group's shift between c and b is
    fixed by the ridge alone, which the Newton blocks reach very slowly, so the additive
    model stopped at max_iter with a ConvergenceWarning (printed by `fit` as '--max-iter 200
    ... --tol 1e-09', options the user never gave) although no logit of a cell moved. Each
    group's shift is now solved in closed form, as the single shift of a linked matrix."""
    from latentbench.irt import fit_additive

    rng = np.random.default_rng(0)
    scores = np.full((10, 30), np.nan)
    scores[:5, :15] = rng.random((5, 15)) < 0.5
    scores[5:, 15:] = rng.random((5, 15)) < 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        c, b = fit_additive(scores)
    c_long, b_long = fit_additive(scores, max_iter=20_000, tol=1e-14)
    np.testing.assert_allclose(c[:, None] + b, c_long[:, None] + b_long, rtol=0, atol=1e-8)
    for rows, cols in ((slice(0, 5), slice(0, 15)), (slice(5, 10), slice(15, 30))):
        np.testing.assert_allclose(c[rows].sum(), b[cols].sum(), atol=1e-8)  # each group's


def test_the_heldout_mask_and_the_prior_do_not_depend_on_the_order_of_the_ids():
    """The same cells with rows and columns in another order (a long file's sorted ids
    q0, q1, q10, ... against a wide file's q0..q39) hid other cells in the prior's held-out
    choice, and chose another a_sd (0.25 against 1.0 on a 10 x 40 matrix)."""
    from latentbench.irt._heldout import heldout_cells, heldout_mask

    data = simulate_2pl(10, 40, missing=0.1, random_state=7)
    models = [f"m{i}" for i in range(10)]
    items = [f"q{j}" for j in range(40)]  # position order is not string order: q10 < q2
    matrix = ResponseMatrix(data.matrix.scores, models, items)
    rng = np.random.default_rng(1)
    rperm, cperm = rng.permutation(10), rng.permutation(40)
    shuffled = matrix[rperm, cperm]

    def hidden(m: ResponseMatrix) -> set[tuple[str, str]]:
        _, rows, cols = heldout_mask(m.scores, 0.1, 0, (m.model_ids, m.item_ids))
        return {(m.model_ids[r], m.item_ids[c]) for r, c in zip(rows, cols, strict=True)}

    assert hidden(matrix) == hidden(shuffled)
    # the observed-cells twin hides the same cells
    from latentbench.io._cells import ObservedCells

    cells = ObservedCells.from_dense(shuffled.scores)
    _, rows, cols, _ = heldout_cells(cells, 0.1, 0, (shuffled.model_ids, shuffled.item_ids))
    assert {
        (shuffled.model_ids[r], shuffled.item_ids[c]) for r, c in zip(rows, cols, strict=True)
    } == hidden(shuffled)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one, two = TwoPL().fit(matrix), TwoPL().fit(shuffled)
    assert one.prior_selection.a_sd == two.prior_selection.a_sd
    assert one.prior_selection.heldout_log_loss == pytest.approx(
        two.prior_selection.heldout_log_loss, rel=1e-4
    )
    assert one.loss == pytest.approx(two.loss, rel=1e-6)
