"""Intervals for ability ranks from draws of the abilities (bootstrap or normal draws)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from latentbench.exceptions import InputError
from latentbench.irt._fitted import _z

__all__ = ["normal_draws", "rank_intervals"]


def normal_draws(
    theta: np.ndarray,
    se: np.ndarray,
    n_draws: int = 2000,
    random_state: int | np.random.Generator | None = None,
) -> np.ndarray:
    """Independent normal draws ``theta_i + se_i * eps``, shape (n_draws, n_models).

    The cheap stand-in for bootstrap draws when only plug-in standard errors are available
    (the block-diagonal information treats abilities as independent).
    """
    rng = np.random.default_rng(random_state)
    theta, se = np.asarray(theta, float), np.asarray(se, float)
    return theta + se * rng.standard_normal((int(n_draws), theta.size))


def rank_intervals(
    draws: np.ndarray,
    model_ids: Sequence[str] | None = None,
    *,
    estimate: np.ndarray | None = None,
    level: float = 0.95,
    measured: np.ndarray | None = None,
) -> pd.DataFrame:
    """Intervals for ability ranks (1 = best) from draws of the abilities.

    Parameters
    ----------
    draws : ndarray of shape (n_draws, n_models)
        Bootstrap replicates (:class:`BootstrapResult` ``theta``) or :func:`normal_draws`.
    model_ids : sequence of str, optional
    estimate : ndarray of shape (n_models,), optional
        Point estimates (default: the mean of the draws).
    level : float, default 0.95
    measured : ndarray of bool, shape (n_models,), optional
        Models with an observed cell. The others (their ability is the prior's) are not
        ranked: they never outrank a measured model, and their rank, interval and
        ``prob_best`` are missing (NaN).

    Returns
    -------
    DataFrame
        One row per model, in the input order: ``model``, ``theta`` (estimate), ``rank`` (of
        the estimate), ``rank_lower`` and ``rank_upper`` (equal-tailed interval of the rank over
        the draws, at ``level``; integers, widened outwards), ``prob_best`` (share of draws in
        which the model ranks first), ``prob_above_next`` (share of draws in which it beats the
        model ranked just below it by the estimate; NaN for the last), ``tied_with_next``
        (True when that share is below ``1 - (1 - level) / 2``: the two are statistically tied).
    """
    try:
        draws = np.asarray(draws, dtype=float)
    except (TypeError, ValueError):  # e.g. an Uncertainty or a BootstrapResult itself
        raise InputError(
            f"draws of type {type(draws).__name__}; expected an array of shape (n_draws, "
            "n_models) of ability draws: a BootstrapResult's theta (or its rank_intervals()), "
            "or for an Uncertainty normal_draws(unc.abilities['theta'], unc.abilities['se'])"
        ) from None
    if draws.ndim != 2 or draws.shape[0] < 2:
        raise InputError(f"draws have shape {draws.shape}; expected (n_draws >= 2, n_models)")
    _z(level)
    n = draws.shape[1]
    ids = list(model_ids) if model_ids is not None else [str(i) for i in range(n)]
    est = np.asarray(estimate, float) if estimate is not None else np.nanmean(draws, axis=0)
    unranked = np.zeros(n, dtype=bool) if measured is None else ~np.asarray(measured, bool)
    if unranked.any():  # below every measured model, in every draw and in the estimate
        draws = np.where(unranked[None, :], -np.inf, draws)
        est_rank = np.where(unranked, -np.inf, est)
    else:
        est_rank = est
    keep = ~np.isnan(draws).any(axis=1)
    draws = draws[keep]
    ranks = np.empty(draws.shape, dtype=np.int64)
    order = np.argsort(-draws, axis=1, kind="stable")
    np.put_along_axis(ranks, order, np.arange(1, n + 1)[None, :].repeat(draws.shape[0], 0), 1)
    alpha = 1 - level
    lower = np.quantile(ranks, alpha / 2, axis=0, method="lower").astype(int)
    upper = np.quantile(ranks, 1 - alpha / 2, axis=0, method="higher").astype(int)
    point_order = np.argsort(-est_rank, kind="stable")
    point_rank = np.empty(n, dtype=int)
    point_rank[point_order] = np.arange(1, n + 1)
    above_next = np.full(n, np.nan)
    for pos in range(n - 1):
        i, k = point_order[pos], point_order[pos + 1]
        above_next[i] = float(np.mean(draws[:, i] > draws[:, k]))
    if unranked.any():
        above_next[unranked] = np.nan
        last = point_order[int((~unranked).sum()) - 1] if (~unranked).any() else None
        if last is not None:
            above_next[last] = np.nan  # the last ranked model has no ranked model below
    table = pd.DataFrame(
        {
            "model": ids,
            "theta": est,
            "rank": point_rank,
            "rank_lower": lower,
            "rank_upper": upper,
            "prob_best": (ranks == 1).mean(axis=0),
            "prob_above_next": above_next,
            "tied_with_next": np.where(np.isnan(above_next), False, above_next < 1 - alpha / 2),
        }
    )
    if unranked.any():
        for column in ("rank", "rank_lower", "rank_upper"):
            table[column] = table[column].astype("Int64").mask(unranked)
        table["prob_best"] = table["prob_best"].mask(unranked)
    return table
