"""Scoring new models against a fitted calibration (:meth:`IRTResult.score_models`)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from latentbench._checks import bounded_scores, user_stacklevel
from latentbench.exceptions import InputError, LatentbenchWarning
from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._detached import one_sided, score_sensitivity
from latentbench.irt._fitted import per_trial_penalty, trials_of
from latentbench.irt._item_intervals import posterior_item_covariance
from latentbench.irt._model_factors import fit_model_factors
from latentbench.irt._objective import DETACHED, DETACHED_BAND, sigmoid

if TYPE_CHECKING:
    from latentbench.irt._result import IRTResult

__all__ = ["score_models"]

MAX_PATTERNS = 16
"""Largest number of distinct cell values (successes, trials) among the scored models' cells
for which :func:`_newton_batch` groups the items by value (binary cells: 2; K trials: K + 1);
above it (soft scores) every model is scored by the per-model reference
(:func:`_newton_products`)."""

_BATCHED = True
"""Whether ``score_models`` scores all new models at once (:func:`_newton_batch`); False: the
per-model reference loops (:func:`_newton`, :func:`_newton_products`), kept for comparison
(``tests/irt/test_scoring_batch.py``). The results agree to rounding."""


def score_models(
    result: IRTResult, matrix: ResponseMatrix | pd.DataFrame | pd.Series
) -> pd.DataFrame:
    """Abilities of new models on the calibrated items, with intervals.

    Works with any subset of the calibrated items, down to one model and one item (a handful
    per model gives an estimate; the interval says how little it is worth). Every new model
    is scored on its own: its result never depends on the other new models of the call.
    Items unknown to the fit are an error.

    Parameters
    ----------
    matrix : ResponseMatrix, DataFrame or Series
        New models (rows) on items that were in the fit: a :class:`ResponseMatrix`, a wide
        DataFrame (index: model ids, columns: item ids, NaN = not answered) or a Series (one
        model: index = item ids, ``name`` = the model id).

    Returns
    -------
    DataFrame
        One row per new model: ``model``, ``theta`` (the reported ability on the fit's
        normalised scale: the estimate its interval is built on), ``se``, ``lower``,
        ``upper`` (``theta -/+ 1.96 se``), ``theta_fit`` (the score with the items held at
        their estimates), ``se_own`` (its own cells only, items fixed), ``n_observed``,
        ``accuracy``, ``no_data``, ``constant`` and ``detached`` flags.

        For a rank-1 MAP fit (the default) that holds its matrix, with at most
        :data:`~latentbench.irt.inference.RANDOM_ITEMS_MAX_MODELS` calibration models plus
        one, and whose own random-item checks pass (a disagreement between its marginal and
        MAP abilities excepted, :mod:`latentbench.irt._validity`): ``theta`` is the model's
        marginal ML against the calibration's item law (the items' posterior given the calibration's
        cells, :func:`_marginal_scores`), ``se`` its inverse information plus the variance
        the calibration passes on (joint Laplace, :func:`latentbench.irt._laplace.
        scoring_variance`); where the calibration ran the item bootstrap (few models and
        cells, :func:`latentbench.irt._fitted.random_items_fit`) on at most
        :data:`~latentbench.irt._fitted.BOOTSTRAP_SCORES_MAX_CELLS` cells and
        :data:`~latentbench.irt._fitted.BOOTSTRAP_SCORES_MAX_MODELS` models, ``se`` is at least
        the sd of the model's scores against the bootstrap's replicate laws, its own items
        resampled with the calibration's (:func:`_bootstrap_scores`). On calibrations of at most
        :data:`~latentbench.irt._fitted.MODEL_JACKKNIFE_MAX_MODELS` reference models and
        :data:`~latentbench.irt._fitted.MODEL_JACKKNIFE_MAX_CELLS` cells, the calibration's
        models are treated as a sample too: ``se^2`` gains the jackknife variance
        ``(G - 1) / G sum_g (theta_g - mean)^2`` of the model's scores ``theta_g`` against
        the calibration refitted without its model g (without group g of G =
        :data:`~latentbench.irt._fitted.MODEL_JACKKNIFE_GROUPS` above that many), carried to the
        calibration's scale (:func:`_jackknife_scores`; the law of total variance: the
        variance with the calibration's models fixed plus that over them), recorded in
        ``DataFrame.attrs["checks"]["model_jackknife"]``. Otherwise ``theta`` is
        ``theta_fit`` and ``se`` the observed
        information at it, penalty included, plus, for rank 1 when the result holds its
        matrix, the calibration's variance (joint Laplace for a MAP fit with at most 1000
        models; otherwise the items' block covariances by the delta method).

        A model with no observed cell gets the calibration's spread: ``theta`` 0 (the
        calibration's mean), ``se`` 1 (its sd), ``no_data`` True. A model with all its
        scores equal (all correct or all wrong) has no finite likelihood estimate: it gets
        the prior's posterior with the items fixed (``theta_fit`` and its se, plus the
        calibration's variance), finite, flagged ``constant``. A model scored more than
        :data:`~latentbench.irt._objective.DETACHED` sds from the calibration's models, with
        a mean score within :data:`~latentbench.irt._objective.DETACHED_BAND` of 0 or 1
        (``detached``; a rank-1 MAP fit that keeps its matrix) gets an interval that spans
        its items-fixed score and its estimates in joint refits with the calibration (itself
        alone) under the fit's ``a_sd`` and every other candidate of the prior
        (:mod:`latentbench.irt._detached`), widened by ``1.96 se``, and open on the side away
        from the calibration's models (``upper`` = inf above them, ``lower`` = -inf below;
        not a ``constant`` model: :func:`latentbench.irt._detached.one_sided`), with a
        warning.
    """
    scores, model_ids, item_ids = _new_models(matrix)
    lookup = {item: j for j, item in enumerate(result.item_ids)}
    unknown = [item for item in item_ids if item not in lookup]
    if unknown:
        raise InputError(
            f"{len(unknown)} item(s) were not in the fit (first: {unknown[0]!r}); expected "
            "items calibrated by this fit"
        )
    cols = np.array([lookup[item] for item in item_ids], dtype=np.int64)
    U, hessian = fit_model_factors(
        scores,
        result.V[cols],
        result.b[cols],
        sigma=result.sigma,
        penalty=per_trial_penalty(result).on_reported_scale(result.normalisation),
        return_hessian=True,
    )
    # K trials per cell: the per-trial curvatures are the true ones divided by K
    trials = trials_of(result)
    # the ability along the fit's direction w (rank 1: the factor): U w, variance w' H^-1 w
    w = result.direction
    own = U @ w
    var_own = np.einsum("i,nij,j->n", w, np.linalg.inv(hessian), w) / trials
    observed = ~np.isnan(scores)
    n_obs = observed.sum(axis=1)
    total = np.where(observed, scores, 0.0).sum(axis=1)
    accuracy = np.where(n_obs > 0, total / np.maximum(n_obs, 1), np.nan)
    no_data = n_obs == 0
    spread = np.nanmax(scores, axis=1, initial=-1.0) - np.nanmin(scores, axis=1, initial=2.0)
    constant = ~no_data & (spread <= 0) & ((accuracy == 0) | (accuracy == 1))
    centre, se = own.copy(), np.sqrt(var_own)
    checks: dict[str, dict[str, object]] = {}
    if result.rank == 1 and result.matrix is not None:
        var_items = _calibration_variance(result, scores, cols, U[:, 0], hessian)
        se = np.sqrt(var_own + var_items)
    # a new model far from the calibration's models (more than DETACHED of their sds from
    # their mean, the rule that detaches a fitted model): its position rests on the tails of
    # the item curves, which the prior of the discriminations moves beyond its sampling error
    # (irt._detached); its interval spans its scores under every candidate prior, around the
    # items-fixed score (its marginal likelihood against the calibration's law has no finite
    # maximum in practice: -40 sds at 22 x 1000)
    near_bound = (accuracy <= DETACHED_BAND) | (accuracy >= 1.0 - DETACHED_BAND)
    detached = ~no_data & near_bound & (np.abs(own) > DETACHED)
    open_rows = np.zeros(0, dtype=np.int64)  # no finite marginal estimate (below)
    open_up = np.zeros(0, dtype=bool)
    if _scores_with_random_items(result):
        # each model on its own against the calibration's item law (independent of its
        # companions): the items' posterior given the calibration, the model's marginal ML
        rows = np.flatnonzero(~no_data & ~constant & ~detached)
        if rows.size:
            probe, probe_info = _marginal_scores(result, scores[rows], cols, own[rows])
            # near the floor or ceiling (199 of 200 right), or on a few items, the marginal
            # likelihood can rise without end (an item of the law with a ~ 0 explains a miss):
            # its Newton ran to its step limit (theta 32.8, se 2,495). Such a model keeps its
            # items-fixed score as a bound, its interval open on the side the likelihood
            # rises towards (below; the data do not bound it there), said
            runaway = (
                ~np.isfinite(probe)
                | (probe_info < _MIN_MARGINAL_INFORMATION)
                | (np.abs(probe - own[rows]) > _MAX_MARGINAL_SHIFT)
            )
            if runaway.any():
                runaways = [model_ids[i] for i in rows[runaway]]
                checks["no_marginal_estimate"] = {"models": runaways}
                warnings.warn(
                    f"score_models: {len(runaways)} model(s) have no finite marginal estimate "
                    f"(the likelihood rises without end: {', '.join(map(repr, runaways[:3]))}"
                    f"{' ...' if len(runaways) > 3 else ''}): each keeps its items-fixed score "
                    "as a bound, its interval open on the side its likelihood rises towards",
                    LatentbenchWarning,
                    stacklevel=user_stacklevel(),
                )
                open_rows = rows[runaway]
                open_up = ~(probe[runaway] < own[rows[runaway]])  # NaN: up, as a bound
                rows = rows[~runaway]
                probe, probe_info = probe[~runaway], probe_info[~runaway]
        if rows.size:
            var_items = se[rows] ** 2 - var_own[rows]
            theta_m, info = probe, probe_info
            centre[rows] = theta_m
            se[rows] = np.sqrt(1.0 / np.maximum(info, 1e-12) + var_items)
            boot = _bootstrap_scores(result, scores[rows], cols, theta_m)
            if boot is not None:
                # the calibration's item bootstrap carried to the new model (its own items
                # resampled with the calibration's): se = max(law-fixed se, bootstrap sd)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    sd = np.nanstd(boot, axis=0, ddof=1)
                se[rows] = np.where(np.isfinite(sd), np.maximum(se[rows], sd), se[rows])
            jack = _jackknife_scores(result, scores[rows], cols, theta_m)
            if jack is not None:
                # the calibration's models as a sample: how the new model's place on the
                # calibration's scale moves with the models the items were calibrated on
                # (delete-one jackknife); added to the variance with those models fixed
                # (law of total variance)
                values, n_groups, tol = jack
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    deviation = values - np.nanmean(values, axis=0)
                    var_jack = (n_groups - 1) / n_groups * np.nansum(deviation**2, axis=0)
                usable = np.isfinite(var_jack) & (np.isfinite(values).sum(axis=0) >= 2)
                var_jack = np.where(usable, var_jack, 0.0)
                ratio = np.sqrt(var_jack) / np.maximum(se[rows], 1e-300)
                se[rows] = np.sqrt(se[rows] ** 2 + var_jack)
                checks["model_jackknife"] = {
                    "refits": int(n_groups),
                    "tol": tol,
                    "rule": "se^2 = se^2 with the calibration's models fixed + the jackknife "
                    "variance over them (delete-one; delete-a-group above "
                    "MODEL_JACKKNIFE_GROUPS models)",
                    "sd_ratio_median": float(np.median(ratio[usable])) if usable.any() else None,
                    "sd_ratio_max": float(np.max(ratio[usable])) if usable.any() else None,
                }
    centre[no_data], se[no_data] = 0.0, 1.0
    z = 1.959963984540054
    lower, upper = centre - z * se, centre + z * se
    # no finite marginal estimate: open towards where the likelihood rises (a bound)
    upper[open_rows[open_up]] = np.inf
    lower[open_rows[~open_up]] = -np.inf
    if (
        detached.any()
        and result.rank == 1
        and result.prior_selection is not None
        and result.matrix is not None
    ):
        rows = np.flatnonzero(detached)
        others, candidates = score_sensitivity(result, scores[rows], cols, own[rows])
        low = np.minimum(np.minimum(others.min(axis=0), centre[rows]), own[rows])
        high = np.maximum(np.maximum(others.max(axis=0), centre[rows]), own[rows])
        # open on the far side (the data do not bound how far beyond the field it is)
        lower[rows], upper[rows] = one_sided(
            centre[rows], low - z * se[rows], high + z * se[rows], constant[rows]
        )
        names = ", ".join(repr(model_ids[i]) for i in rows[:3]) + (" ..." if rows.size > 3 else "")
        span = [*candidates, float(result.prior_selection.a_sd)]
        warnings.warn(
            f"score_models: {rows.size} model(s) detached from the calibration's models "
            f"({names}): their intervals span their scores under every candidate prior of the "
            f"discriminations (a_sd {min(span):g}-{max(span):g}), which moves them beyond their "
            "sampling error; they are bounded on the field's side only (the data do not bound "
            "how far beyond the field they are)",
            LatentbenchWarning,
            stacklevel=user_stacklevel(),
        )
    frame = pd.DataFrame(
        {
            "model": model_ids,
            "theta": centre,
            "se": se,
            "lower": lower,
            "upper": upper,
            "theta_fit": own,
            "se_own": np.sqrt(var_own),
            "n_observed": n_obs,
            "accuracy": accuracy,
            "no_data": no_data,
            "constant": constant,
            "detached": detached,
        }
    )
    if result.rank == 1 and result.matrix is not None:
        caveat = _calibration_caveat(result)
        if caveat is not None:
            checks["caveat"] = {"text": caveat}
    frame.attrs["checks"] = checks
    return frame


def _calibration_caveat(result: IRTResult) -> str | None:
    """The warned caveat when the calibration's reporting scale is a small fit
    (:func:`latentbench.irt.inference.small_fit`), else None."""
    from latentbench.irt.inference import scale_size, small_fit

    n_scale, n_items = scale_size(result)
    if not small_fit(n_scale, n_items):
        return None
    caveat = (
        f"the calibration's scale is set by {n_scale} models on {n_items:,} items, a size where "
        "its own ability intervals were measured to under-cover (docs/model.md, 'Few "
        "models'); new models' intervals on it covered 0.71 +- 0.07 on 12-model stress "
        "matrices calibrated on 6: read them as approximate"
    )
    warnings.warn(f"score_models: {caveat}", LatentbenchWarning, stacklevel=user_stacklevel())
    return caveat


def _new_models(
    matrix: ResponseMatrix | pd.DataFrame | pd.Series,
) -> tuple[np.ndarray, list[str], list[str]]:
    """Scores (float64, NaN missing), model ids and item ids of the models to score."""
    if isinstance(matrix, ResponseMatrix):
        return np.asarray(matrix.scores, float), list(matrix.model_ids), list(matrix.item_ids)
    if isinstance(matrix, pd.Series):
        matrix = matrix.to_frame().T
        if matrix.index[0] is None:
            matrix.index = pd.Index(["model"])
    if not isinstance(matrix, pd.DataFrame):
        raise InputError(
            f"score_models got a {type(matrix).__name__}; expected a ResponseMatrix, a wide "
            "DataFrame (models x items) or a Series (one model)"
        )
    if {"model", "item", "score"} <= set(matrix.columns):  # long: its ids read as scores
        raise InputError(
            "score_models: a long table (columns model, item, score); expected a wide "
            "DataFrame (models x items): frame.pivot(index='model', columns='item', "
            "values='score'), or a ResponseMatrix"
        )
    if "model" in matrix.columns:  # the ids, as ResponseMatrix.from_wide reads them
        matrix = matrix.set_index("model")
    try:
        if all(map(pd.api.types.is_numeric_dtype, set(matrix.dtypes))):  # as to_numeric left
            scores = matrix.to_numpy(float)  # them, without its call per item (column)
        else:
            scores = matrix.apply(pd.to_numeric, errors="raise").to_numpy(float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"score_models: a score is not numeric ({exc})") from None
    scores, bad = bounded_scores(scores)  # a rounding past 0 or 1 is the bound
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InputError(
            f"score_models: model {matrix.index[i]!r}, item {matrix.columns[j]!r}: score "
            f"{float(scores[i, j])!r}; expected a number in [0, 1] or NaN (missing)"
        )
    if scores.size == 0:
        raise InputError("score_models: no models or no items; expected at least one of each")
    models = [str(m) for m in matrix.index]
    if len(set(models)) != len(models):
        raise InputError("score_models: a model id appears twice; expected one row per model")
    return scores, models, [str(c) for c in matrix.columns]


def _scores_with_random_items(result: IRTResult) -> bool:
    """Whether :meth:`score_models` uses the random-item likelihood (see there)."""
    from latentbench.irt._fitted import _uses_random_items

    if not (
        result.rank == 1
        and result.prior_selection is not None
        and result.matrix is not None
        # the calibration's models with an observed cell (as its own intervals count them)
        and _uses_random_items(
            int(np.count_nonzero(result.matrix.n_observed_per_model())) + 1, result.shape[1]
        )
    ):
        return False
    # not where the random-item likelihood fails its checks on the calibration (its own
    # intervals then fall back to joint Laplace), nor on a degenerate fit (cached). A
    # disagreement with the fit's abilities is no such failure: kept, or the union with the
    # Laplace intervals, the calibration's intervals stay random-item ones
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LatentbenchWarning)
        unc = result.standard_errors()
    union = (unc.checks or {}).get("disagreement_action") == "union"
    return unc.method.startswith("random-item") and (unc.fallback is None or union)


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
    return (1.0 / trials_of(result)) * scoring_variance(
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
    # the spread of the calibration's own (MAP) estimates, which the scores are computed
    # from: the Laplace posterior's item blocks, not the items' likelihood intervals of
    # standard_errors (those are centred on the likelihood's maximum, not on the estimates)
    cov = posterior_item_covariance(result)[cols]
    var_a, var_b, cov_ab = cov[:, 0, 0], cov[:, 1, 1], cov[:, 0, 1]
    a, b, sigma = result.V[cols, 0], result.b[cols], result.sigma
    observed = ~np.isnan(scores)
    y = np.where(observed, scores, 0.0)
    p = sigmoid((np.outer(theta, a) + b) / sigma)
    w = p * (1 - p) * observed
    d_a = ((y - p) * observed) / sigma - w * a * theta[:, None] / sigma**2
    d_b = -w * a / sigma**2
    spread = (d_a**2 * var_a + 2 * d_a * d_b * cov_ab + d_b**2 * var_b).sum(axis=1)
    return np.asarray(spread / hessian[:, 0, 0] ** 2)


_MIN_MARGINAL_INFORMATION = 1e-3
"""Below this observed information (se above 30 sds) a new model's marginal estimate is taken
as not existing (a likelihood that rises without end near the floor or ceiling)."""

_MAX_MARGINAL_SHIFT = 10.0
"""A marginal estimate this many sds from the items-fixed one is taken as a runaway."""


def _marginal_scores(
    result: IRTResult, scores: np.ndarray, cols: np.ndarray, theta: np.ndarray, steps: int = 30
) -> tuple[np.ndarray, np.ndarray]:
    """Each new model's ability by marginal ML against the calibration's item law.

    ``l_i(theta) = sum_j log sum_g R_jg p(y_ij | theta, a_g, b_g)``, ``R`` the items'
    posterior over the calibration law's grid given the calibration's cells
    (:func:`latentbench.irt._fitted.random_items_fit`); Newton steps vectorised over models,
    each model alone (no companion enters). Returns the abilities on the calibration's
    reporting scale and their observed information (Louis: the complete-data information
    minus the posterior variance of the complete-data score), both shape (M,).
    """
    from latentbench.irt._fitted import law_models_of, random_items_fit
    from latentbench.irt._random_items import _Problem

    law = random_items_fit(result)
    assert result.matrix is not None
    sigma, trials = float(result.sigma), trials_of(result)
    grid_a, grid_b = law.grid_a / sigma, law.grid_b / sigma
    # the items' posterior given the models the law was fitted on (the reference models
    # with a finite marginal estimate)
    reference = law_models_of(result, law)
    calibration = _Problem(
        np.asarray(result.matrix.scores, float)[reference], grid_a, grid_b, trials
    )
    R = calibration.posterior(law.theta[reference], np.log(np.maximum(law.weights, 1e-300)))[0]
    R = R[cols]
    keep = R.max(axis=0) > 1e-12  # grid points no item uses
    R, ga, gb = R[:, keep], grid_a[keep], grid_b[keep]
    observed = ~np.isnan(scores)
    y = np.where(observed, scores, 0.0) * trials  # successes
    n = observed * float(trials)  # trials per cell
    if _BATCHED:  # all models at once, each on its own (no companion enters)
        return _newton_batch(y, n, R, ga, gb, theta, steps, tol=1e-8)
    log_R = np.log(np.maximum(R, 1e-300))
    out_theta = np.asarray(theta, float).copy()
    out_info = np.zeros(out_theta.size)
    for i in range(out_theta.size):  # one model at a time: (J, G) arrays
        out_theta[i], out_info[i] = _newton(y[i], n[i], log_R, ga, gb, out_theta[i], steps)
    return out_theta, out_info


def _safeguarded(
    grad: np.ndarray, info: np.ndarray, previous: np.ndarray, radius: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One safeguarded Newton move per model on a marginal log-likelihood (shapes (M,)).

    The Newton step ``grad / info`` (``info`` floored at 1e-8: where the likelihood is not
    concave the step follows the gradient) is clipped to a radius that starts at 1 and halves
    each time the move reverses direction: between a point of negative information and one
    beyond the maximum, the undamped step bounced for ever (0.872 <-> -0.128 on a
    mid-range model, read as a likelihood without a maximum). A likelihood that rises without
    end never reverses and keeps unit moves. Returns the raw step (for the stopping rule),
    the move and the new radius.
    """
    step = grad / np.maximum(info, 1e-8)
    reversed_ = (previous != 0.0) & (np.sign(step) != np.sign(previous))
    radius = np.where(reversed_, radius * 0.5, radius)
    return step, np.clip(step, -radius, radius), radius


def _newton(
    y: np.ndarray,
    n: np.ndarray,
    log_R: np.ndarray,
    ga: np.ndarray,
    gb: np.ndarray,
    theta: float,
    steps: int,
    weights: np.ndarray | None = None,
) -> tuple[float, float]:
    """Newton steps on one model's marginal log-likelihood against items' posteriors ``R``.

    ``y``, ``n`` (J,): successes and trials per item; ``log_R`` (J, G) on the grid ``ga``,
    ``gb``; ``weights`` (J,): item multiplicities (an item bootstrap's resample). Returns the
    ability and its observed information (Louis)."""
    yi, ni = y[:, None], n[:, None]
    th, info = float(theta), 0.0
    previous, radius = np.zeros(1), np.ones(1)
    for _ in range(steps):
        z = ga * th + gb
        p = 1.0 / (1.0 + np.exp(-z))
        log_lik = yi * z - ni * np.logaddexp(0.0, z) + log_R  # (J, G)
        log_lik -= log_lik.max(axis=1, keepdims=True)
        Q = np.exp(log_lik)
        Q /= Q.sum(axis=1, keepdims=True)
        score = ga * (yi - ni * p)  # (J, G)
        mean = (Q * score).sum(axis=1)
        complete = (Q * (ni * ga * ga * p * (1.0 - p))).sum(axis=1)
        variance = (Q * score * score).sum(axis=1) - mean * mean
        if weights is None:
            grad, info = float(mean.sum()), float((complete - variance).sum())
        else:
            grad, info = float(weights @ mean), float(weights @ (complete - variance))
        step, previous, radius = _safeguarded(np.array([grad]), np.array([info]), previous, radius)
        th += float(previous[0])
        if abs(float(step[0])) < 1e-8:
            break
    return th, info


def _bootstrap_scores(
    result: IRTResult, scores: np.ndarray, cols: np.ndarray, theta: np.ndarray, steps: int = 2
) -> np.ndarray | None:
    """New models' abilities in each replicate of the calibration's item bootstrap.

    Replicate ``r`` resampled the items with multiplicities ``m_r`` and refitted the
    calibration's abilities and item law (:func:`latentbench.irt._random_items.
    item_bootstrap`); each new model is scored against that replicate's items' posterior
    ``R`` (given the calibration's cells), its own per-item terms counted ``m_r`` times, by
    ``steps`` Newton steps from its full-data score mapped to the replicate's scale (2 steps:
    at most 0.05 se from the converged score, 5 replicates x 6 models of an AlpacaEval 2
    half). Per step the items' posterior given the model's
    cells is ``Q_jg ~ R_jg exp(y_j z_g - n_j log(1 + e^z_g))`` and every sum over the grid a
    product of ``Q`` with six grid vectors, for all new models at once
    (:func:`_newton_batch`). Returns (B, M) abilities on the replicates'
    reporting scales, or None when the calibration has no bootstrap, more than
    :data:`~latentbench.irt._fitted.BOOTSTRAP_SCORES_MAX_CELLS` cells or more than
    :data:`~latentbench.irt._fitted.BOOTSTRAP_SCORES_MAX_MODELS` reference models.
    """
    from latentbench.irt._fitted import (
        BOOTSTRAP_SCORES_MAX_CELLS,
        BOOTSTRAP_SCORES_MAX_MODELS,
        law_models_of,
        random_items_fit,
    )
    from latentbench.irt._random_items import SUPPORT, _Problem, resamples

    law = random_items_fit(result)
    reference = law_models_of(result, law)
    cells = int(reference.sum()) * int(result.shape[1])
    if (
        law.n_boot < 2
        or cells > BOOTSTRAP_SCORES_MAX_CELLS
        or int(reference.sum()) > BOOTSTRAP_SCORES_MAX_MODELS
    ):
        return None
    assert result.matrix is not None
    sigma, trials = float(result.sigma), trials_of(result)
    calibration = np.asarray(result.matrix.scores, float)[reference][:, cols]
    observed = ~np.isnan(scores)
    y = np.where(observed, scores, 0.0) * trials  # successes
    n = observed * float(trials)  # trials per cell
    out = np.full((law.n_boot, scores.shape[0]), np.nan)
    draws = resamples(law.boot_seed, int(result.shape[1]), law.n_boot, law.boot_order)
    for r, counts in enumerate(draws):
        th_ref = law.boot_theta[r, reference]
        if not np.all(np.isfinite(th_ref)):
            continue
        keep = law.boot_weights[r] > SUPPORT
        ga, gb = law.grid_a[keep] / sigma, law.grid_b[keep] / sigma
        problem = _Problem(calibration, ga, gb, trials)
        R = problem.posterior(th_ref, np.log(law.boot_weights[r, keep]))[0]
        weights = counts[cols].astype(np.float64)
        used = weights > 0
        R_used, w_used = R[used], weights[used]
        # start: the full-data score carried to the replicate's scale (the affine map of
        # the calibration's abilities from the fit to the replicate)
        slope, shift = np.polyfit(law.theta[reference], th_ref, 1)
        start = shift + slope * np.asarray(theta, float)
        if _BATCHED:
            out[r] = _newton_batch(y[:, used], n[:, used], R_used, ga, gb, start, steps, w_used)[0]
            continue
        for i in range(scores.shape[0]):  # one model at a time: (J, G) arrays
            out[r, i] = _newton_products(
                y[i, used], n[i, used], R_used, ga, gb, float(start[i]), steps, w_used
            )[0]
    return out


def _jackknife_scores(
    result: IRTResult, scores: np.ndarray, cols: np.ndarray, theta: np.ndarray, steps: int = 4
) -> tuple[np.ndarray, int, float] | None:
    """New models' abilities against every jackknife refit of the calibration, on its scale.

    Refit g (:func:`latentbench.irt._fitted.model_jackknife_of`) left the calibration models
    of group g out (one model each up to
    :data:`~latentbench.irt._fitted.MODEL_JACKKNIFE_GROUPS` models); each new model is scored
    against that refit's items' posterior ``R`` (given the
    other calibration models' cells), its own cells all counted, by ``steps`` Newton steps
    on its marginal likelihood from its full-data score carried to the refit's scale, and the
    score is carried back by the affine map of the remaining calibration models' abilities
    from the fit to the refit (least squares; the refit's scale is set by N - 1 models, the
    calibration's by N: the map removes that difference, which is not an error of the new
    model). Returns (G, M) scores on the calibration's reporting scale (a row of NaN where a
    refit's map is degenerate), the number of groups G and the refits' tolerance, or None
    where the jackknife does not apply.
    """
    from latentbench.irt._fitted import law_models_of, model_jackknife_of, random_items_fit
    from latentbench.irt._random_items import SUPPORT, _Problem

    jack = model_jackknife_of(result)
    if jack is None:
        return None
    law = random_items_fit(result)
    assert result.matrix is not None
    sigma, trials = float(result.sigma), trials_of(result)
    reference = law_models_of(result, law)
    calibration = np.asarray(result.matrix.scores, float)[reference][:, cols]
    full = law.theta[reference]
    observed = ~np.isnan(scores)
    y = np.where(observed, scores, 0.0) * trials  # successes
    n = observed * float(trials)  # trials per cell
    G = jack.n_groups
    out = np.full((G, scores.shape[0]), np.nan)
    for g in range(G):
        rows = np.flatnonzero(jack.group != g)
        keep = jack.weights[g] > SUPPORT
        ga, gb = law.grid_a[keep] / sigma, law.grid_b[keep] / sigma
        R = _Problem(calibration[rows], ga, gb, trials).posterior(
            jack.theta[g, rows], np.log(jack.weights[g, keep])
        )[0]
        used = R.max(axis=0) > 1e-12  # grid points no item uses
        R, ga, gb = R[:, used], ga[used], gb[used]
        slope, shift = np.polyfit(full[rows], jack.theta[g, rows], 1)
        if not slope > 0:
            continue
        start = shift + slope * np.asarray(theta, float)
        if _BATCHED:
            out[g] = (_newton_batch(y, n, R, ga, gb, start, steps)[0] - shift) / slope
            continue
        for i in range(scores.shape[0]):  # one model at a time: (J, G) arrays
            th = _newton_products(y[i], n[i], R, ga, gb, float(start[i]), steps)[0]
            out[g, i] = (th - shift) / slope
    return out, G, jack.tol


def _newton_products(
    y: np.ndarray,
    n: np.ndarray,
    R: np.ndarray,
    ga: np.ndarray,
    gb: np.ndarray,
    theta: float,
    steps: int,
    weights: np.ndarray | None = None,
    tol: float = 1e-6,
) -> tuple[float, float]:
    """Newton steps on one model's marginal log-likelihood against items' posteriors ``R``
    (as :func:`_newton`), every sum over the grid a product of the items' posterior given
    the model's cells, ``Q_jg ~ R_jg exp(y_j z_g - n_j log(1 + e^z_g))``, with six grid
    vectors; ``weights`` (J,): item multiplicities; stops after a step below ``tol``.
    Returns the ability and its observed information (Louis) at the last evaluated point:
    the per-model reference of :func:`_newton_batch`."""
    th, info = float(theta), 0.0
    a2 = ga * ga
    previous, radius = np.zeros(1), np.ones(1)
    for _ in range(steps):
        z = ga * th + gb
        p = 1.0 / (1.0 + np.exp(-z))
        log_lik = np.outer(y, z) - np.outer(n, np.logaddexp(0.0, z))
        log_lik -= log_lik.max(axis=1, keepdims=True)
        Q = R * np.exp(log_lik)
        Q /= np.maximum(Q.sum(axis=1, keepdims=True), 1e-300)
        S = Q @ np.column_stack([ga, ga * p, a2, a2 * p, a2 * p * p, a2 * p * (1 - p)])
        mean = y * S[:, 0] - n * S[:, 1]
        second = y * y * S[:, 2] - 2.0 * y * n * S[:, 3] + n * n * S[:, 4]
        per_item = n * S[:, 5] - (second - mean * mean)
        if weights is None:
            grad, info = float(mean.sum()), float(per_item.sum())
        else:
            grad, info = float(weights @ mean), float(weights @ per_item)
        step, previous, radius = _safeguarded(np.array([grad]), np.array([info]), previous, radius)
        th += float(previous[0])
        if abs(float(step[0])) < tol:
            break
    return th, info


def _newton_batch(
    y: np.ndarray,
    n: np.ndarray,
    R: np.ndarray,
    ga: np.ndarray,
    gb: np.ndarray,
    theta: np.ndarray,
    steps: int,
    weights: np.ndarray | None = None,
    tol: float = 1e-6,
    chunk_columns: int = 512,
) -> tuple[np.ndarray, np.ndarray]:
    """Newton steps on every new model's marginal log-likelihood against items' posteriors
    ``R`` at once: the per-model loops of :func:`_newton_products` (and :func:`_newton`) as
    products of ``R`` with few grid vectors per model.

    A cell's likelihood over the grid, ``exp(y z_g - n log(1 + e^z_g))`` with
    ``z_g = a_g theta + b_g``, depends on the item only through the cell's value ``(y, n)``:
    binary cells take two values (``p_g`` or ``1 - p_g``) and a missing cell (``n = 0``)
    none. So for each model and each value ``u`` the seven sums over the grid that a Newton
    step needs (the items' posterior given the cell, ``Q_jg ~ R_jg L_ug``, times
    ``1, a, a p, a^2, a^2 p, a^2 p^2, a^2 p (1 - p)``) are one column each of a single
    product ``R @ X``, X of shape (G, models x values x 7), and every item picks the columns
    of its own value: O(J G M U) multiply-adds per step and no (J, G) exponential. Models
    stop individually when a step is below ``tol`` (as the reference). Falls back to the
    reference loop above :data:`MAX_PATTERNS` values.

    Parameters
    ----------
    y, n : ndarray of shape (M, J)
        Successes and trials per cell (0 and 0 where missing).
    R : ndarray of shape (J, G)
        The items' posterior over the grid given the calibration.
    ga, gb : ndarray of shape (G,)
        The grid (units of sigma).
    theta : ndarray of shape (M,)
        Starting abilities.
    steps : int
        Most Newton steps.
    weights : ndarray of shape (J,), optional
        Item multiplicities (an item bootstrap's resample).
    tol : float, default 1e-6
    chunk_columns : int, default 512
        Most columns of ``X`` per product (memory: ``8 J chunk_columns`` bytes).

    Returns
    -------
    theta, info : ndarray of shape (M,)
        The abilities and the observed information (Louis) at the last evaluated point.
    """
    y = np.asarray(y, np.float64)
    n = np.asarray(n, np.float64)
    th = np.asarray(theta, np.float64).copy()
    info = np.zeros(th.size)
    observed = n > 0
    # one number per cell value (y <= n, n a whole number of trials): n (top + 1) + y
    top = float(n.max(initial=0.0))
    y_obs, n_obs = y[observed], n[observed]
    _, first, inverse = np.unique(
        n_obs * (top + 1.0) + y_obs, return_index=True, return_inverse=True
    )
    values = np.stack([y_obs[first], n_obs[first]])
    U = values.shape[1]
    if U > MAX_PATTERNS or U == 0:
        for i in range(th.size):
            th[i], info[i] = _newton_products(y[i], n[i], R, ga, gb, th[i], steps, weights, tol)
        return th, info
    pattern = np.zeros(y.shape, np.int64)
    pattern[observed] = inverse.ravel()
    yu, nu = values[0], values[1]
    w = None if weights is None else np.asarray(weights, np.float64)
    a2 = ga * ga
    active = np.ones(th.size, bool)
    previous, radius = np.zeros(th.size), np.ones(th.size)
    per_chunk = max(1, chunk_columns // (7 * U))
    for _ in range(steps):
        rows = np.flatnonzero(active)
        if rows.size == 0:
            break
        for start in range(0, rows.size, per_chunk):
            part = rows[start : start + per_chunk]
            m = part.size
            z = np.outer(th[part], ga) + gb  # (m, G)
            p = 1.0 / (1.0 + np.exp(-z))
            log_l = (
                yu[None, :, None] * z[:, None, :]
                - nu[None, :, None] * np.logaddexp(0.0, z)[:, None, :]
            )  # (m, U, G)
            log_l -= log_l.max(axis=2, keepdims=True)
            L = np.exp(log_l)
            V = np.stack(
                [
                    np.ones_like(p),
                    np.broadcast_to(ga, p.shape),
                    ga * p,
                    np.broadcast_to(a2, p.shape),
                    a2 * p,
                    a2 * p * p,
                    a2 * p * (1.0 - p),
                ],
                axis=1,
            )  # (m, 7, G)
            X = (L[:, :, None, :] * V[:, None, :, :]).reshape(m * U * 7, -1)
            T = (R @ X.T).reshape(R.shape[0], m, U, 7)  # (J, m, U, 7)
            idx = pattern[part].T[:, :, None, None]  # (J, m, 1, 1)
            S = np.take_along_axis(T, idx, axis=2)[:, :, 0, :]  # (J, m, 7)
            S = S[:, :, 1:] / np.maximum(S[:, :, :1], 1e-300)
            yj, nj = y[part].T, n[part].T  # (J, m)
            mean = yj * S[..., 0] - nj * S[..., 1]
            second = yj * yj * S[..., 2] - 2.0 * yj * nj * S[..., 3] + nj * nj * S[..., 4]
            per_item = nj * S[..., 5] - (second - mean * mean)
            if w is None:
                grad, inf = mean.sum(axis=0), per_item.sum(axis=0)
            else:
                grad, inf = w @ mean, w @ per_item
            step, move, radius[part] = _safeguarded(grad, inf, previous[part], radius[part])
            previous[part] = move
            info[part] = inf
            th[part] += move
            active[part] = np.abs(step) >= tol
    return th, info
