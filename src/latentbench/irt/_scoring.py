"""Scoring new models against a fitted calibration (:meth:`IRTResult.score_models`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from latentbench.exceptions import InputError
from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._model_factors import fit_model_factors
from latentbench.irt._objective import sigmoid
from latentbench.irt._random_items import fit_random_items

if TYPE_CHECKING:
    from latentbench.irt._result import IRTResult

__all__ = ["score_models"]


def score_models(result: IRTResult, matrix: ResponseMatrix) -> pd.DataFrame:
    """Abilities of new models on the calibrated items, item parameters held fixed.

    Works with any subset of the calibrated items (a handful per model is enough to get an
    estimate; the standard error says how little it is worth). Items unknown to the fit
    are an error.

    Parameters
    ----------
    matrix : ResponseMatrix
        New models (rows) on items that were in the fit.

    Returns
    -------
    DataFrame
        ``model``, ``theta`` (on the fit's normalised scale, the items at their
        estimates), ``center``, ``se``, ``lower``, ``upper`` (the 95% interval
        ``center -/+ 1.96 se``), ``se_own`` (the model's own cells only, items fixed),
        ``n_observed``, ``accuracy``.

        For a rank-1 MAP fit (the default) that holds its matrix, with at most
        :data:`~latentbench.irt.inference.RANDOM_ITEMS_MAX_MODELS` calibration and new
        models together: ``center`` and ``se`` come from the marginal likelihood over the
        items of the calibration's and the new models' cells together, the scale fixed
        by the calibration models (:mod:`latentbench.irt._random_items`), so the interval
        includes the calibration's uncertainty. Otherwise ``center`` is ``theta`` and
        ``se`` the observed information at it, penalty included, plus, for rank 1 when
        the result holds its matrix, the variance the calibration passes on: for a MAP
        fit with at most 1000 models its joint Laplace covariance, abilities, items and
        the reporting scale together, see
        :func:`latentbench.irt._laplace.scoring_variance`; otherwise the items' block
        covariances by the delta method.
    """
    lookup = {item: j for j, item in enumerate(result.item_ids)}
    unknown = [item for item in matrix.item_ids if item not in lookup]
    if unknown:
        raise InputError(
            f"{len(unknown)} item(s) were not in the fit (first: {unknown[0]!r}); expected "
            "items calibrated by this fit"
        )
    cols = np.array([lookup[item] for item in matrix.item_ids])
    U, hessian = fit_model_factors(
        matrix.scores,
        result.V[cols],
        result.b[cols],
        sigma=result.sigma,
        penalty=result.penalty.on_reported_scale(result.normalisation),
        return_hessian=True,
    )
    var_own = np.linalg.inv(hessian)[:, 0, 0]
    centre, se = U[:, 0].copy(), np.sqrt(var_own)
    if _scores_with_random_items(result, matrix.n_models):
        centre, se = _random_item_scores(result, matrix.scores, cols, U[:, 0])
    elif result.rank == 1 and result.matrix is not None:
        var_items = _calibration_variance(result, matrix.scores, cols, U[:, 0], hessian)
        se = np.sqrt(var_own + var_items)
    z = 1.959963984540054
    return pd.DataFrame(
        {
            "model": matrix.model_ids,
            "theta": U[:, 0],
            "center": centre,
            "se": se,
            "lower": centre - z * se,
            "upper": centre + z * se,
            "se_own": np.sqrt(var_own),
            "n_observed": matrix.n_observed_per_model(),
            "accuracy": matrix.model_accuracy(),
        }
    )


def _scores_with_random_items(result: IRTResult, n_new: int) -> bool:
    """Whether :meth:`score_models` uses the random-item likelihood (see there)."""
    from latentbench.irt._fitted import _uses_random_items

    return (
        result.rank == 1
        and result.prior_selection is not None
        and result.matrix is not None
        and _uses_random_items(result.shape[0] + n_new, result.shape[1])
    )


def _random_item_scores(
    result: IRTResult, scores: np.ndarray, cols: np.ndarray, theta: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Scored abilities and SEs by marginal likelihood over the items, calibration kept.

    The calibration's and the new models' cells together, the items integrated out
    against a law estimated from all of them, the reporting scale fixed by the
    calibration models (mean 0, sd 1 over them): the SEs include the calibration's
    uncertainty about the items and about its own scale.
    """
    assert result.matrix is not None
    calibration = result.matrix.scores
    new = np.full((scores.shape[0], calibration.shape[1]), np.nan)
    new[:, cols] = scores
    # start from the calibration's random-item abilities when computed, else its fit
    known = result.random_items.theta if result.random_items is not None else result.U[:, 0]
    start = np.concatenate([known, theta])
    reference = np.r_[np.ones(calibration.shape[0], bool), np.zeros(scores.shape[0], bool)]
    joint = fit_random_items(
        np.vstack([calibration, new]),
        start,
        result.V[:, 0],
        result.b,
        float(result.sigma),
        reference=reference,
    )
    return joint.theta[~reference], joint.se[~reference]


def _calibration_variance(
    result: IRTResult, scores: np.ndarray, cols: np.ndarray, theta: np.ndarray, hessian: np.ndarray
) -> np.ndarray:
    """Variance the calibration adds to scored abilities (rank 1, matrix kept).

    MAP fits with at most :data:`~latentbench.irt.inference.JOINT_MAX_MODELS` models: the
    joint Laplace covariance of the calibration's abilities and items, including the
    re-standardisation of the reporting scale
    (:func:`latentbench.irt._laplace.scoring_variance`); otherwise the items' block
    covariances by the delta method.
    """
    from latentbench.irt._fitted import JOINT_MAX_MODELS, laplace_of
    from latentbench.irt._laplace import scoring_variance

    if (
        result.prior_selection is None
        or result.matrix is None
        or result.shape[0] > JOINT_MAX_MODELS
    ):
        return _item_variance_of_scores(result, scores, cols, theta, hessian)
    laplace = laplace_of(result, result.matrix.scores)
    return scoring_variance(
        laplace, result.V[:, 0], scores, cols, theta, result.b, result.sigma, hessian[:, 0, 0]
    )


def _item_variance_of_scores(
    result: IRTResult, scores: np.ndarray, cols: np.ndarray, theta: np.ndarray, hessian: np.ndarray
) -> np.ndarray:
    """Variance of scored abilities from the calibration's item-parameter uncertainty.

    The score ``theta_i`` solves ``g_i = sum_j a_j (y_ij - p_ij) / sigma - prior'(theta_i)
    = 0``, so by the delta method ``d theta_i / d eta_j = (d g_i / d eta_j) / H_i`` for
    ``eta_j = (a_j, b_j)``; with the items' block covariances from :meth:`standard_errors`
    (independent across items) the added variance is
    ``sum_j d_ij^T Cov_j d_ij / H_i^2``.
    """
    items = result.standard_errors(scale_correction=False).items
    var_a = items["discrimination_se"].to_numpy(float)[cols] ** 2
    var_b = items["easiness_se"].to_numpy(float)[cols] ** 2
    cov_ab = items["cov_discrimination_easiness"].to_numpy(float)[cols]
    a, b, sigma = result.V[cols, 0], result.b[cols], result.sigma
    observed = ~np.isnan(scores)
    y = np.where(observed, scores, 0.0)
    p = sigmoid((np.outer(theta, a) + b) / sigma)
    w = p * (1 - p) * observed
    d_a = ((y - p) * observed) / sigma - w * a * theta[:, None] / sigma**2
    d_b = -w * a / sigma**2
    spread = (d_a**2 * var_a + 2 * d_a * d_b * cov_ab + d_b**2 * var_b).sum(axis=1)
    return np.asarray(spread / hessian[:, 0, 0] ** 2)
