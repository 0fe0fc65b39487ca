"""Uncertainty for fitted IRT models: standard errors, bootstrap, rank intervals.

Two routes to uncertainty for the reported (normalised) parameters of an :class:`IRTResult`:

- :func:`standard_errors`: for a rank-1 MAP fit with at most :data:`RANDOM_ITEMS_MAX_MODELS`
  models, the abilities' intervals come from the marginal likelihood over the items, the items
  random effects from a nonparametric law (:mod:`latentbench.irt._random_items`); with at
  most :data:`JOINT_MAX_MODELS` models, the abilities' SEs come from the joint Laplace
  approximation with the items integrated out (:mod:`latentbench.irt._laplace`); the
  discriminations of a rank-1 MAP fit, from the items' likelihood alone at the fit's abilities
  (the prior's shrinkage kept out of the interval, :mod:`latentbench.irt._item_intervals`);
  otherwise, and for the other item parameters,
  the observed information of the fitted objective (Bernoulli
  negative log-likelihood plus the fit's penalty, :mod:`latentbench.irt._objective`), in a
  block-diagonal approximation: one ``r x r`` block per model (items held fixed) and one
  ``(r + 1) x (r + 1)`` block per item (``(a_j, b_j)``, models held fixed). The blocks are
  written in the coordinates of the reported parameters: the penalty acts on the raw
  parameters, so its curvature is mapped through the
  normalisation ``theta = (theta_raw - mu) / s``, ``a = s a_raw``, ``b = b_raw + mu a_raw``.
  For rank 1 the ability variances are then passed through the Jacobian of the normalisation
  itself (centring and scaling the estimated abilities removes the two gauge directions:
  ``Var = diag(P D P)``, ``P = I - (1 1^T + theta theta^T) / N``), and corrected for the
  noise in the reporting scale (``scale_correction``, see :func:`standard_errors`).
- :func:`bootstrap`: parametric (redraw every observed cell from the fitted probabilities) or
  nonparametric (resample items, or models, with replacement), refitting from the fitted values
  (warm start), in parallel processes (``n_jobs``). Basic (bias-correcting) or percentile
  intervals; ability draws also give rank intervals (:func:`rank_intervals`).

Measured coverage of nominal 95% ability intervals for the true abilities (on the scale where the
fitted models' true abilities have mean 0, sd 1), simulated 2PL, 10 seeds, mean +/- Monte Carlo
standard error across seeds:

=================================  =================  =================
interval                           300 x 300          500 x 200
=================================  =================  =================
plug-in, scale-corrected (default) 0.944 +/- 0.005    0.947 +/- 0.002
plug-in, no scale correction       0.935 (seeds 0-5)  0.944 (seeds 0-5)
parametric bootstrap, basic        0.937 +/- 0.006
parametric bootstrap, percentile   0.931 +/- 0.007
=================================  =================  =================

(200 replicates per seed.) Discriminations: 0.946 / 0.948, intercepts 0.955 / 0.953 with the
plug-in (the MAP posterior's intervals then; since 2026-12-05 the discriminations' intervals
are the items' likelihood ones, 6 seeds: 0.951 +/- 0.006 / 0.950 +/- 0.005, the posterior ones
0.933 / 0.936 on the same fits; docs/model.md, "Item intervals"). What remains below 0.95
in the abilities is the O(1/J) incidental-parameter bias of joint ML (fitted
discriminations slightly too large make the information slightly too large); it shrinks as
both dimensions grow.

Abilities are always on the fit's reporting scale (mean 0, sd 1 over the models that set it for
rank 1), so an interval is a statement about a model's position relative to the others.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from latentbench._checks import check_flag, user_stacklevel
from latentbench.exceptions import LatentbenchWarning
from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._bootstrap import BootstrapResult, bootstrap
from latentbench.irt._detached import one_sided, prior_sensitivity
from latentbench.irt._fitted import (
    JOINT_MAX_MODELS,
    RANDOM_ITEMS_MAX_ITEMS,
    RANDOM_ITEMS_MAX_MODELS,
    _normalisation,
    _observed,
    _uses_random_items,
    _z,
    constant_models,
    fitted_matrix,
    laplace_of,
    law_models_of,
    per_trial_penalty,
    random_items_fit,
    reference_of,
    trials_of,
)
from latentbench.irt._information import information_blocks
from latentbench.irt._item_intervals import likelihood_items, posterior_item_covariance
from latentbench.irt._laplace import normalised_variance
from latentbench.irt._objective import CONSTANT_MIN_OTHERS, general_direction
from latentbench.irt._ranks import normal_draws, rank_intervals
from latentbench.irt._validity import check

if TYPE_CHECKING:
    from latentbench.irt._random_items import RandomItemsFit
    from latentbench.irt._result import IRTResult
    from latentbench.irt._validity import AbilityChecks

__all__ = [
    "FEW_ITEMS",
    "FEW_ITEMS_MODELS",
    "FEW_MODELS",
    "JOINT_MAX_MODELS",
    "RANDOM_ITEMS_MAX_ITEMS",
    "RANDOM_ITEMS_MAX_MODELS",
    "BootstrapResult",
    "Uncertainty",
    "bootstrap",
    "normal_draws",
    "random_items_fit",
    "rank_intervals",
    "scale_size",
    "small_fit",
    "standard_errors",
]


# ----------------------------------------------------------------------------- plug-in SEs
@dataclass(eq=False)  # tables: == by identity, not a ValueError
class Uncertainty:
    """Standard errors and intervals for the reported parameters of a fit.

    Attributes
    ----------
    abilities : DataFrame
        One row per model: ``model``, ``theta`` (the reported ability: the estimate the
        interval is built on, so ``lower <= theta <= upper`` always), ``se``, ``lower``,
        ``upper`` (``theta -/+ z se``), ``theta_fit`` (the fit's own estimate, the MAP or
        joint ML one that predictions use; equal to ``theta`` except for the random-item
        method), ``no_data`` (the model has no observed cell: se 1, the prior's spread on the
        reporting scale); for rank > 1
        also ``se_1`` ... ``se_r``. ``theta`` is the fit's estimate except for a rank-1 MAP
        fit of at most :data:`RANDOM_ITEMS_MAX_MODELS` models, where it is the ability by
        marginal likelihood over the items (:mod:`latentbench.irt._random_items`), which
        removes the joint estimate's few-model bias, unless a self-check fails (``checks``).
    items : DataFrame
        One row per item: ``item``, ``discrimination`` (the fit's estimate: the MAP one for
        the default fit), ``discrimination_se``, ``discrimination_lower`` (clipped at 0:
        a >= 0), ``discrimination_upper``, ``discrimination_centre`` (the estimate the
        interval is built on), ``discrimination_bounded`` (False: the item's likelihood has
        no finite maximum, interval ``[0, inf)``), ``easiness``, ``easiness_se``,
        ``easiness_lower``, ``easiness_upper``, ``difficulty`` (-b),
        ``cov_discrimination_easiness``, ``at_bound`` (a = 0 at the fit: the interval of a is
        one-sided in truth). For a rank-1 MAP fit the discrimination's interval is the
        items' likelihood interval at the fit's abilities, **not centred on**
        ``discrimination``: ``discrimination_centre`` is the item's maximum likelihood given
        the abilities (the prior left out), ``discrimination_se`` that likelihood's
        (``lower = max(centre - z se, 0)``, ``upper = max(centre, 0) + z se``; the MAP can
        lie outside it, up to about 1% of the items in simulations); see
        ``item_intervals``. Otherwise (joint ML, rank > 1) ``centre`` = ``discrimination``
        and the interval is ``centre -/+ z se`` with the fit's block information. The
        easiness columns and ``cov_discrimination_easiness`` are always the fit's block
        information at its estimate (for a MAP fit: the Laplace posterior, the prior's
        curvature included).
    level : float
        Confidence level of the intervals.
    scale_factor : float
        The correction factor k applied to the intervals (1 when not corrected).
    method : str
        ``"observed information"``, ``"random-item marginal likelihood"``,
        ``"random-item marginal likelihood + item bootstrap"`` (few models and cells,
        :data:`~latentbench.irt._fitted.ITEM_BOOTSTRAP_MAX_MODELS`,
        :data:`~latentbench.irt._fitted.ITEM_BOOTSTRAP_MAX_CELLS`: each model's se the
        larger of the law-fixed se and the item bootstrap's sd), ``"random-item marginal
        likelihood, union with joint Laplace"`` (the marginal and the fit's abilities
        disagree where no item bootstrap runs: each interval covers both), ``"joint
        Laplace"`` (abilities; items by observed information always).
    checks : dict or None
        The random-item self-checks' values (:mod:`latentbench.irt._validity`) when that
        method was tried: ``edge_mass``, ``grid_top``, ``disagreement``,
        ``min_information``, ``extreme_models``, ``converged``, and ``item_bootstrap``
        (``replicates``, ``seed``, ``rule``, ``sd_ratio_median``, ``sd_ratio_max``,
        ``models_widened``) when the item bootstrap ran, and ``disagreement_action`` when
        the ``disagreement`` check fired (``"kept"``: the bootstrapped random-item
        intervals kept, with a warning; ``"union"``: each widened to its union with the
        joint Laplace interval).
    fallback : str or None
        Why the random-item intervals were replaced by the joint Laplace ones, or widened to
        their union with them (None: no fallback).
    caveat : str or None
        Why the ability intervals are outside the conditions their coverage was measured in,
        with nothing valid to fall back to: fewer than :data:`FEW_MODELS` models with cells
        set a rank-1 reporting scale, or fewer than :data:`FEW_ITEMS_MODELS` on fewer than
        :data:`FEW_ITEMS` items (None: no caveat). Warned too.
    item_intervals : dict or None
        How the discrimination intervals were made: ``method`` (``"likelihood at the fit's
        abilities (no prior)"`` for a rank-1 MAP fit; otherwise ``"observed information of
        the fit"`` or ``"Laplace posterior (the prior's curvature included)"``), ``centre``
        (what the interval is centred on), ``unbounded`` (items whose likelihood has no
        finite maximum: ``[0, inf)``), ``fallback`` (why the likelihood intervals were not
        used: joint ML, where the fit's intervals already are the likelihood's, or rank > 1,
        not measured; None when used), and when used ``steps`` (Newton steps) and
        ``measured`` (where their coverage was measured).
    detached : dict or None
        The detached models (:func:`latentbench.irt._objective.reference_models`: far from
        all the others; they do not set the reporting scale) and how their intervals were
        made: ``models`` (ids), ``method`` (``"prior sensitivity"``: the range of their
        estimates under every candidate ``a_sd`` of the prior's grid, widened by ``z se``;
        :mod:`latentbench.irt._detached`), ``far_side`` (``"open"``: the interval is bounded
        on the field's side only, ``upper`` = inf above the field, ``lower`` = -inf below it;
        :func:`latentbench.irt._detached.one_sided`), ``a_sd`` (the candidates),
        ``estimates`` (per model, its estimate under each candidate). None when no model is
        detached.
    """

    abilities: pd.DataFrame
    items: pd.DataFrame
    level: float
    method: str
    scale_factor: float = 1.0
    checks: dict[str, Any] | None = None
    fallback: str | None = None
    detached: dict[str, Any] | None = None
    caveat: str | None = None
    item_intervals: dict[str, Any] | None = None

    def __repr__(self) -> str:
        """Short: shape, level and method, and whether a fallback or a caveat applies (the
        tables: ``abilities``, ``items``)."""
        said = "".join(
            f"; {name}" for name, value in (("fallback", self.fallback), ("caveat", self.caveat))
            if value
        )  # fmt: skip
        return (
            f"Uncertainty({len(self.abilities):,} models x {len(self.items):,} items, "
            f"{self.level:.0%} intervals by {self.method}{said})"
        )


FEW_MODELS = 7
"""Below this many models with cells setting a rank-1 reporting scale (mean 0, sd 1 over
them), the ability intervals under-cover, and a caveat is warned and recorded
(``Uncertainty.caveat``). Simulated 2PL, binary cells, 95% intervals, 120 replicas each
(``python benchmarks/bench_coverage.py --kinds binomial1 --shape NxJ --no-score``): 4 / 5 / 6
models covered 0.881 / 0.915 / 0.921 at 300 items and 0.887 / 0.920 / 0.944 at 1,000; 7
models 0.945 and 0.948, 8 models 0.950 and 0.955 (``docs/model.md``, "Few models")."""

FEW_ITEMS = 100
"""With fewer than :data:`FEW_ITEMS_MODELS` models, fewer than this many items with cells
also get the caveat: 10 models covered 0.902 / 0.924 / 0.928 / 0.951 at 20 / 30 / 50 / 100
items (100 replicas each), while 15 and 20 models at 20 items covered 0.934 and 0.937."""

FEW_ITEMS_MODELS = 15
"""See :data:`FEW_ITEMS`."""


def standard_errors(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray | None = None,
    *,
    level: float = 0.95,
    normalisation: bool = True,
    scale_correction: bool = True,
) -> Uncertainty:
    """Standard errors and intervals of the reported parameters.

    Abilities of a rank-1 MAP fit (the default) with at most :data:`RANDOM_ITEMS_MAX_MODELS`
    models: marginal likelihood over the items (the items as random effects from a law
    estimated on the grid, :mod:`latentbench.irt._random_items`), the intervals centred on that
    estimate (column ``center``); with at most :data:`JOINT_MAX_MODELS` models: the joint
    Laplace approximation; otherwise, and for the items, the block-diagonal observed
    information.

    Parameters
    ----------
    result : IRTResult
        The fit.
    matrix : ResponseMatrix or ndarray of shape (n_models, n_items), optional
        The matrix the result was fitted on (default: the one the result keeps). The
        curvatures use only its observed cells; the random-item abilities use its scores.
    level : float, default 0.95
        Level of the Wald intervals ``estimate -/+ z se`` (a union fallback's interval is
        the union of two such intervals, not centred on ``theta``; a detached model's is
        one-sided).
    normalisation : bool, default True
        Rank 1: propagate the ability variances through the Jacobian of the normalisation
        (mean 0, sd 1). Reduces every variance by O(1/N); False gives the raw block inverse.
    scale_correction : bool, default True
        Rank 1: correct the intervals for the noise in the reporting scale. The fit divides by
        the sd of the *estimated* abilities, which estimation noise inflates by
        ``k = 1 / sqrt(1 - mean(se^2))``; on the scale where the true abilities of the fitted
        models have mean 0 and sd 1, abilities are ``k theta`` with standard error ``k^2 se``
        (one k from the rescaling, one from the information being computed with
        discriminations inflated by k), and discriminations are ``a / k`` with standard error
        ``se_a / k``. The ``theta`` and ``discrimination`` columns stay the fit's estimates;
        ``se`` is the corrected one, and the ability interval ``theta -/+ z se`` is centred on
        the reported ``theta`` (so it always holds it; centring it on ``k theta`` put the
        reported ability outside its own interval in tiny fits, where ``k`` reaches 2).
        Without it, 95% intervals cover about 94% at 300 x 300 (see the module notes). A MAP
        fit (the default priors) is not corrected: its intervals are those of the Laplace
        posterior (the prior's curvature is in the information), mapped to the reporting
        scale.

    Returns
    -------
    Uncertainty

    Notes
    -----
    Per model, ``H_i = sum_j w_ij v_j v_j^T / sigma^2 + s^2 C_U`` with ``w = p (1 - p)`` on
    observed cells; per item, ``H_j = sum_i w_ij [u_i, 1][u_i, 1]^T / sigma^2 + A^T C_item A``,
    where ``C_U``, ``C_item`` are the penalty's block curvatures (``l2 I`` for the ridge) and
    ``A`` maps reported ``(a_j, b_j)`` to raw ones. The block-diagonal approximation ignores the
    estimation error of the other block; its effect on a model's ability is O(1/sqrt(N J)),
    small against the O(1/sqrt(J)) standard error when N is not small.

    Discriminations of a rank-1 MAP fit: the prior shrinks every ``a`` toward its mean, and
    a posterior interval around the mode carries that bias (it covered the most
    discriminating fifth of simulated items 59-77% of the time). Their intervals are
    therefore the items' likelihood intervals given the fit's abilities
    (:mod:`latentbench.irt._item_intervals`: Newton steps from the fit's ``(a_j, b_j)`` to
    the item's maximum likelihood with the abilities fixed, ``I_j^{-1}`` of the likelihood
    alone there). The abilities' own error is left out: measured, it moved the coverage by
    0.004 at most. The intervals are conservative at 20-30 models (0.98-0.99: the Wald
    interval of a slope on so few observations).
    The ``discrimination`` column stays the fit's estimate.

    For rank > 1 the factors are only identified up to a rotation (``V >= 0`` pins it down
    under NMF-type conditions only); the standard errors are conditional on the fitted
    rotation, and only centring is accounted for.
    """
    normalisation = check_flag(normalisation, "normalisation")  # "no" ran as True
    scale_correction = check_flag(scale_correction, "scale_correction")
    fitted = fitted_matrix(result, matrix)
    # the scale correction applies to a rank-1 joint-ML fit only (see _standard_errors):
    # asked of a MAP fit (the default), the same computation as without it
    corrected = bool(scale_correction) and result.U.shape[1] == 1 and result.prior_selection is None
    key = (float(level), bool(normalisation), corrected)
    # the same ResponseMatrix with the same options: computed once per fit (fit writes
    # abilities.csv, then prints the same table; a report asks three times: 13-18 s each at
    # 4,000 x 20,000)
    # (a ResponseMatrix's arrays are read-only; the cache keeps the one it was computed on)
    # one entry per options: a report asks with and without the scale correction
    # (uninformative_items), then again with it (rank_changes), which recomputed the first
    # (three computations of a MAP fit's: one)
    cacheable = isinstance(fitted, ResponseMatrix)
    cached = result.uncertainty_cache
    if cacheable and cached is not None and cached[0] is fitted and key in cached[1]:
        again: Uncertainty = copy.deepcopy(cached[1][key])
        return again
    found = _standard_errors(result, matrix, level, normalisation, scale_correction)
    if cacheable:
        if cached is None or cached[0] is not fitted:
            cached = result.uncertainty_cache = (fitted, {})
        cached[1][key] = copy.deepcopy(found)
    return found


def _standard_errors(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray | None,
    level: float,
    normalisation: bool,
    scale_correction: bool,
) -> Uncertainty:
    """:func:`standard_errors`, computed."""
    z = _z(level)
    # likelihood blocks from the observed cells only (a sparse matrix is never made dense)
    info_models, info_items = information_blocks(result, matrix)
    U, V = result.U, result.V
    r = U.shape[1]
    # K trials per cell: everything below in the per-trial convention (penalty / K), the
    # variances divided by K at the end
    trials = trials_of(result)
    penalty = per_trial_penalty(result)
    s = _normalisation(result)[1]
    # models: r x r blocks
    H_models = info_models + s * s * penalty.model_curvature(r)
    cov_models = np.linalg.inv(H_models)
    var_theta = np.diagonal(cov_models, axis1=1, axis2=2).copy()  # (N, r)
    # the ability for any rank is U w (w: the items' mean loading; rank 1: w = [1]), its
    # variance w^T C w; the per-factor variances stay in se_1 ... se_r
    w = general_direction(V)
    var_factors = var_theta.copy()
    if r > 1:
        var_theta[:, 0] = np.einsum("i,nij,j->n", w, cov_models, w)
    posterior = result.prior_selection is not None  # MAP fit: Laplace posterior
    reference = reference_of(result) if r == 1 else np.ones(result.shape[0], dtype=bool)
    route = _ability_route(
        result, matrix, var_theta[:, 0], U @ w, normalisation and r == 1, posterior, reference
    )
    var_theta[:, 0] = route.var
    # a model without observed cells gets the prior's spread below (flagged ``no_data``):
    # its missing variance is expected, not a degenerate fit
    no_data = _models_without_cells(result, matrix)
    caveat = None
    if r == 1 and normalisation:
        caveat = _small_fit_caveat(*scale_size(result, matrix))
    var_theta[no_data, 0] = float(trials)
    unusable = _prior_spread_where_unusable(var_theta, trials)
    se_theta = np.sqrt(var_theta / trials)
    se_factors = np.sqrt(np.maximum(var_factors, 0.0) / trials)
    k = 1.0
    if scale_correction and r == 1 and not posterior:
        k = _scale_correction(result, matrix, se_theta[:, 0], reference, no_data | unusable)
    # the prior's spread is se 1 as said, not scaled as a sampling se is
    se_theta[~unusable, 0] *= k * k
    items, item_record = _item_table(result, matrix, info_items, k, z, posterior)
    found = _ability_intervals(
        result, matrix, route, se_theta[:, 0], no_data, reference, z, level, posterior
    )
    # said for the models that keep the prior's spread: a constant or detached model's
    # interval replaces it (and is said with its own reason)
    fallback = _say_prior_spread(unusable & ~found.replaced, route.fallback)
    abilities = pd.DataFrame(
        {
            "model": result.model_ids,
            "theta": found.theta,
            "se": found.se,
            "lower": found.lower,
            "upper": found.upper,
            "theta_fit": U @ w,
            "no_data": no_data,
        }
    )
    if r > 1:  # (not k: the scale correction's, used for the items below)
        for factor in range(r):
            abilities[f"se_{factor + 1}"] = se_factors[:, factor]
    return Uncertainty(
        abilities,
        items,
        level,
        route.method,
        float(k),
        found.checks,
        fallback,
        found.detached,
        caveat,
        item_record,
    )


def _item_table(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray | None,
    info_items: np.ndarray,
    k: float,
    z: float,
    posterior: bool,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The items' table of :func:`standard_errors` and its record: ``(r + 1) x (r + 1)``
    blocks in reported coordinates from the likelihood blocks ``info_items``, the
    discriminations divided by the scale correction ``k`` (1: none)."""
    V, b = result.V, result.b
    r = V.shape[1]
    w = general_direction(V)
    cov_items = posterior_item_covariance(result, matrix, info_items)
    # discrimination along w (rank 1: a), its variance w^T C_a w
    se_a = np.sqrt(np.maximum(np.einsum("i,nij,j->n", w, cov_items[:, :r, :r], w), 0.0))
    se_b = np.sqrt(cov_items[:, r, r])
    a = V @ w
    se_a = se_a / k
    a_centre, se_a, a_lower, a_upper, bounded, item_record = _discrimination_intervals(
        result, matrix, a / k, se_a, z, posterior, w
    )
    items = pd.DataFrame(
        {
            "item": result.item_ids,
            "discrimination": a,
            "discrimination_se": se_a,
            "discrimination_lower": a_lower,
            "discrimination_upper": a_upper,
            "discrimination_centre": a_centre,
            "discrimination_bounded": bounded,
            "easiness": b,
            "easiness_se": se_b,
            "easiness_lower": b - z * se_b,
            "easiness_upper": b + z * se_b,
            "difficulty": -b,
            "cov_discrimination_easiness": cov_items[:, :r, r] @ w,
            "at_bound": a <= 0,
        }
    )
    return items, item_record


def _item_standard_errors(
    result: IRTResult, matrix: ResponseMatrix | np.ndarray | None = None
) -> pd.DataFrame:
    """The items' table of ``standard_errors(result, matrix, scale_correction=False)`` (level
    0.95), without the abilities' intervals, which it does not need: at few models those are
    a random-item fit and its item bootstrap, 0.88 s of the 0.89 s it took at 20 x 200. Taken
    from :func:`standard_errors`'s cache where that holds it, and kept there under
    ``("items", 0.95)`` (a copy returned)."""
    fitted = fitted_matrix(result, matrix)
    cacheable = isinstance(fitted, ResponseMatrix)
    cached = result.uncertainty_cache
    if cacheable and cached is not None and cached[0] is fitted:
        if ("items", 0.95) in cached[1]:
            kept: pd.DataFrame = cached[1]["items", 0.95].copy(deep=True)
            return kept
        # the scale correction and the normalisation leave k = 1 items alone
        for key, found in cached[1].items():
            if key[0] == 0.95 and not key[2]:
                whole: pd.DataFrame = found.items.copy(deep=True)
                return whole
    info_items = information_blocks(result, matrix)[1]
    posterior = result.prior_selection is not None
    items = _item_table(result, matrix, info_items, 1.0, _z(0.95), posterior)[0]
    if cacheable:
        if cached is None or cached[0] is not fitted:
            cached = result.uncertainty_cache = (fitted, {})
        cached[1]["items", 0.95] = items.copy(deep=True)
    return items


@dataclass
class _AbilityRoute:
    """How the abilities' variances were made (:func:`_ability_route`)."""

    var: np.ndarray
    """(N,): the first factor's variances, in the per-trial convention (times K)."""
    centre: np.ndarray
    """(N,): the estimates the intervals are centred on."""
    method: str
    checks: dict[str, Any] | None = None
    fallback: str | None = None
    union_sd: np.ndarray | None = None
    """Laplace sds the reference models' intervals cover as well (a union fallback)."""


def _ability_route(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray | None,
    var: np.ndarray,
    centre: np.ndarray,
    normalised: bool,
    posterior: bool,
    reference: np.ndarray,
) -> _AbilityRoute:
    """The abilities' variances (first factor) and centres, by the route the fit's shape
    takes: random-item marginal likelihood, joint Laplace, or the block information ``var``
    passed through the normalisation (``normalised``: rank 1 with ``normalisation``). The
    models counted are those with an observed cell: an unevaluated one (a wide file's empty
    row) changes no other model's route."""
    n_items = result.shape[1]
    n_models = int(np.count_nonzero(~_models_without_cells(result, matrix)))
    if normalised and posterior and _uses_random_items(n_models, n_items):
        # few models: abilities by marginal likelihood over the items (random-item 2PL),
        # checked; outside its validity, the joint Laplace intervals on the fit's theta
        return _random_item_route(result, matrix, centre)
    if normalised and posterior and n_models <= JOINT_MAX_MODELS:
        # joint Laplace: the items integrated out (Schur complement), then standardised
        scores, _ = _observed(result, matrix)
        laplace = laplace_of(result, scores)
        # (it said "observed information": review, 2026-12-05)
        return _AbilityRoute(np.diag(laplace.covariance()), centre, "joint Laplace")
    if normalised:
        var = normalised_variance(result.U[:, 0], var, reference)
    return _AbilityRoute(var, centre, "observed information")


def _random_item_route(
    result: IRTResult, matrix: ResponseMatrix | np.ndarray | None, centre: np.ndarray
) -> _AbilityRoute:
    """The random-item route: the marginal likelihood's abilities where its self-checks
    pass (:func:`_random_item_intervals`), else the joint Laplace variances around the fit's
    ``centre`` (warned)."""
    trials = trials_of(result)
    scores, _ = _observed(result, matrix)
    items_law = random_items_fit(result, matrix)
    in_law = law_models_of(result, items_law)
    var_laplace = np.diag(laplace_of(result, scores).covariance()) / trials
    found = check(
        items_law,
        result.U[:, 0],
        np.sqrt(np.maximum(var_laplace, 0.0)),
        scores,
        result.model_ids,
        reference=in_law,
    )
    checks = found.values
    # at the floor or ceiling (they never set the scale: irt._objective.reference_models)
    _say_outside_law(result, np.flatnonzero(~in_law & constant_models(scores)), checks)
    if found.valid:
        return _random_item_intervals(items_law, in_law, var_laplace, found, trials, checks)
    extra = [found.disagreement] if found.disagreement else []
    fallback = "; ".join([*found.reasons, *extra])
    warnings.warn(
        f"ability intervals: the random-item likelihood is outside its validity here "
        f"({fallback}); using the joint Laplace intervals centred on the fit's theta",
        LatentbenchWarning,
        stacklevel=user_stacklevel(),
    )
    # true already; undone below
    return _AbilityRoute(var_laplace * trials, centre, "joint Laplace", checks, fallback)


def _say_outside_law(result: IRTResult, apart: np.ndarray, checks: dict[str, Any]) -> None:
    """Record (``checks["constant_models"]``) and warn the models at the floor or ceiling
    left out of the random-item fit (rows ``apart``); nothing when there are none."""
    if not apart.size:
        return
    checks["constant_models"] = [result.model_ids[i] for i in apart]
    names = ", ".join(repr(result.model_ids[i]) for i in apart[:3])
    warnings.warn(
        f"ability intervals: {apart.size} model(s) at the floor or ceiling ({names}"
        f"{' ...' if apart.size > 3 else ''}: every observed score 0, or every one 1) "
        "have no marginal estimate; the item law is fitted without them, and each "
        "gets its exact posterior interval under the fit's prior (items fixed)",
        LatentbenchWarning,
        stacklevel=user_stacklevel(),
    )


def _random_item_intervals(
    items_law: RandomItemsFit,
    in_law: np.ndarray,
    var_laplace: np.ndarray,
    found: AbilityChecks,
    trials: int,
    checks: dict[str, Any],
) -> _AbilityRoute:
    """The route of a random-item fit whose self-checks pass: its abilities and variances
    (with the item bootstrap's where it ran); a disagreement with the fit's abilities keeps
    them (bootstrapped) or widens each interval to the union with the Laplace one."""
    # a detached or constant model is not in the random-item fit: its sampling
    # variance is the joint Laplace one (its interval: irt._detached, or the exact
    # posterior below)
    var_ri = np.where(in_law, items_law.se**2, var_laplace)
    method = "random-item marginal likelihood"
    boot_sd = items_law.boot_sd if items_law.n_boot > 1 else None
    with_law_error = boot_sd is not None and bool(np.isfinite(boot_sd[in_law]).any())
    if with_law_error:
        # the law-fixed information leaves out the item law's own error: the item
        # bootstrap's spread includes it; the law-fixed variance is a lower bound
        var_ri, summary = _with_item_bootstrap(items_law, var_ri, in_law)
        checks["item_bootstrap"] = summary
        method = "random-item marginal likelihood + item bootstrap"
    # true already; undone below
    route = _AbilityRoute(var_ri * trials, items_law.theta, method, checks)
    if found.disagrees and with_law_error:
        # measured where it fires: these intervals cover, the Laplace ones do not
        checks["disagreement_action"] = "kept"
        warnings.warn(
            f"ability intervals: {found.disagreement}; kept the random-item intervals, "
            "whose item bootstrap carries the item law's own error (the fit's own "
            "estimate is the column theta_fit)",
            LatentbenchWarning,
            stacklevel=user_stacklevel(),
        )
    elif found.disagrees:
        # no item bootstrap at this shape: neither estimate is known to be the right
        # one here, so each interval covers both (the union with the Laplace one)
        route.union_sd = np.sqrt(np.maximum(var_laplace, 0.0))
        checks["disagreement_action"] = "union"
        route.method = "random-item marginal likelihood, union with joint Laplace"
        route.fallback = found.disagreement
        warnings.warn(
            f"ability intervals: {found.disagreement}; each interval is widened to "
            "cover the joint Laplace interval around the fit's own estimate (column "
            "theta_fit) as well",
            LatentbenchWarning,
            stacklevel=user_stacklevel(),
        )
    return route


def _prior_spread_where_unusable(var_theta: np.ndarray, trials: int) -> np.ndarray:
    """Give the models without a finite positive variance (first factor, in place) the
    prior's spread; returns which (said by :func:`_say_prior_spread` for those that keep
    it)."""
    unusable: np.ndarray = ~np.isfinite(var_theta[:, 0]) | (var_theta[:, 0] <= 0)
    # a degenerate fit (e.g. every discrimination 0): no finite positive variance for
    # these models; they get the prior's spread (sd 1 on the reporting scale), never NaN
    var_theta[unusable, 0] = float(trials)
    return unusable


def _say_prior_spread(kept: np.ndarray, fallback: str | None) -> str | None:
    """Warn of the models ``kept`` at the prior's spread (no usable variance, and no interval
    of their own replaced it); returns ``fallback`` with that said (unchanged if none)."""
    if not kept.any():
        return fallback
    fallback = "; ".join(
        [*([fallback] if fallback else []), f"{int(kept.sum())} model(s) without a "
         "usable variance: the prior's spread (se 1)"]
    )  # fmt: skip
    warnings.warn(
        f"ability intervals: {int(kept.sum())} model(s) have no finite positive "
        "variance (a degenerate fit); they get the prior's spread (se 1)",
        LatentbenchWarning,
        stacklevel=user_stacklevel(),
    )
    return fallback


def _scale_correction(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray | None,
    se: np.ndarray,
    reference: np.ndarray,
    no_data: np.ndarray,
) -> float:
    """The factor ``k = 1 / sqrt(1 - mean(se^2))`` (at most 2) over the models that set
    the scale with a position of their own (1 if none), for a joint-ML fit; ``no_data``: the
    models left out besides the constant ones (without cells, or at the prior's spread)."""
    # joint ML only: a MAP fit's shrinkage and the noise inflation of the reporting scale
    # roughly cancel (measured: 95% intervals cover 0.93 at 40 x 200 and 0.95 at 70 x 1000
    # without the correction, 0.82 / 0.89 with k = s)
    # over the models that set the scale, with a position of their own: a constant
    # model's se (20-30, no maximum of its likelihood), a detached one's or one without
    # cells or a usable variance (se 1) had pushed k to its cap of 2, every ability se x 4,
    # every item se / 2
    sets = reference & ~no_data & ~_floor_or_ceiling(result, matrix, ~no_data)[0]
    if not sets.any():
        return 1.0
    return np.float64(1.0 / np.sqrt(max(1.0 - float(np.mean(se[sets] ** 2)), 0.25)))


@dataclass
class _AbilityIntervals:
    """The abilities' columns and records (:func:`_ability_intervals`)."""

    theta: np.ndarray
    se: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    checks: dict[str, Any] | None
    detached: dict[str, Any] | None
    replaced: np.ndarray
    """The models whose se is their own interval's (a MAP fit's constant models), not the one
    given: a joint ML fit's constant models and the detached ones keep it (``z se`` on their
    bounded side)."""


def _ability_intervals(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray | None,
    route: _AbilityRoute,
    se: np.ndarray,
    no_data: np.ndarray,
    reference: np.ndarray,
    z: float,
    level: float,
    posterior: bool,
) -> _AbilityIntervals:
    """The abilities' intervals ``centre -/+ z se``, then widened to a union, opened or made
    exact for the constant models, and replaced for the detached ones."""
    U = result.U
    centre = route.centre
    # a model without observed cells: the prior's spread (sd 1 on the reporting scale),
    # never a narrow interval from the prior's curvature alone; flagged ``no_data``
    se_first = np.where(no_data, 1.0, se)
    lower, upper = centre - z * se_first, centre + z * se_first
    if route.union_sd is not None:
        rows = reference & ~no_data
        # fmin / fmax: an undefined Laplace sd leaves the random-item interval as it is
        lower[rows] = np.fmin(lower[rows], U[rows, 0] - z * route.union_sd[rows])
        upper[rows] = np.fmax(upper[rows], U[rows, 0] + z * route.union_sd[rows])
        se_first = np.where(rows, (upper - lower) / (2 * z), se_first)
    checks = route.checks
    constant_rows = np.zeros(result.shape[0], dtype=bool)
    # the constant models' own se (MAP: their exact posterior interval's); a joint ML fit's
    # constant models, a rank > 1 fit's and the detached ones keep ``se`` on their bounded
    # side
    replaced = constant_rows.copy()
    if U.shape[1] == 1:
        said_constant = bool(checks and checks.get("constant_models"))
        constant_rows, se_first, how = _constant_model_intervals(
            result, matrix, no_data, level, posterior, (centre, se_first, lower, upper), z
        )
        if constant_rows.any() and not said_constant:
            checks = _say_constant(result, constant_rows, reference, how, checks)
        replaced = constant_rows & _exact_constant_intervals(result, posterior)
    else:
        # rank > 1: the ability U w of a model with every observed score 1 rises without
        # bound along w (V >= 0) as far as the data go; its Gaussian at the mode, two-sided,
        # went unsaid (joint ML: a perfect model's upper end 25.9, where the ridge stopped it)
        constant_rows, at_top = _floor_or_ceiling(result, matrix, ~no_data)
        if constant_rows.any():
            idx = np.flatnonzero(constant_rows)
            upper[idx[at_top]] = np.inf
            lower[idx[~at_top]] = -np.inf
            checks = _say_constant(
                result,
                constant_rows,
                reference,
                "at rank > 1 their intervals are open on the far side (no exact posterior "
                "along the ability is computed; the data bound it on one side only)",
                checks,
                scale=False,
            )
    detached = None
    if U.shape[1] == 1 and not (reference | constant_rows).all():
        detached = _detached_intervals(
            result, matrix, (reference | constant_rows) & ~no_data, se_first, z, posterior
        )
        if detached is not None:
            rows = detached.pop("rows")
            centre[rows] = U[rows, 0]  # the fit's estimate, inside its range
            lower[rows], upper[rows] = detached.pop("lower"), detached.pop("upper")
    return _AbilityIntervals(centre, se_first, lower, upper, checks, detached, replaced)


def _exact_constant_intervals(result: IRTResult, posterior: bool) -> bool:
    """Whether the constant models get their exact posterior interval (a MAP fit with a prior
    on the abilities), with its own se; else (joint ML) their interval is open on the far
    side and keeps ``centre -/+ z se`` on the other."""
    return posterior and float(result.penalty.precision_U) > 0


def _constant_model_intervals(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray | None,
    no_data: np.ndarray,
    level: float,
    posterior: bool,
    intervals: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    z: float,
) -> tuple[np.ndarray, np.ndarray, str]:
    """The rank-1 intervals of the models at the floor or ceiling (``lower`` and ``upper``
    of ``intervals = (centre, se, lower, upper)`` changed in place): ``(rows, se, how)``."""
    centre, se_first, lower, upper = intervals
    if not _exact_constant_intervals(result, posterior):
        # joint ML (no prior on the abilities): a constant model's likelihood has no maximum,
        # its estimate is where the fit's ridge stopped it; it does not set the reporting
        # scale either (not detached): its interval is open on its far side
        constant_rows, at_top = _floor_or_ceiling(result, matrix, ~no_data)
        idx = np.flatnonzero(constant_rows)
        upper[idx[at_top]] = np.inf
        lower[idx[~at_top]] = -np.inf
        return (
            constant_rows,
            se_first,
            "their intervals are open on the far side (no maximum of the likelihood)",
        )
    # every observed score 1 (or 0): the data bound the ability on one side only, and the
    # Gaussian at the mode (Laplace) made its interval the narrowest of all (a perfect
    # model: se 0.24, upper 2.7, below the upper 3.2 of the same model one item short);
    # the exact posterior's quantiles on the reporting scale instead (items fixed)
    # (any such model: it does not set the reporting scale, but it is not detached)
    constant_rows, lo, hi = _constant_intervals(result, matrix, ~no_data, level)
    if constant_rows.any():
        lower[constant_rows] = np.minimum(lo, centre[constant_rows])
        upper[constant_rows] = np.maximum(hi, centre[constant_rows])
        se_first = np.where(constant_rows, (upper - lower) / (2 * z), se_first)
    return (
        constant_rows,
        se_first,
        "each gets its exact posterior interval under the fit's prior (items fixed)",
    )


def _say_constant(
    result: IRTResult,
    constant_rows: np.ndarray,
    reference: np.ndarray,
    how: str,
    checks: dict[str, Any] | None,
    *,
    scale: bool = True,
) -> dict[str, Any]:
    """Warn the models at the floor or ceiling (``how``: what their intervals are; ``scale``
    False: a fit without a standardised scale, rank > 1, says nothing of it); returns
    ``checks`` with them under ``constant_models`` (a new dict)."""
    ids = [result.model_ids[i] for i in np.flatnonzero(constant_rows)]
    names = ", ".join(repr(m) for m in ids[:3]) + (" ..." if len(ids) > 3 else "")
    on_scale = ""
    if scale:
        on_scale = " and " + (
            "do not set the reporting scale"
            if not (constant_rows & reference).any()
            else "still set the reporting scale (fewer than "
            f"{CONSTANT_MIN_OTHERS} other models with a spread are left)"
        )
    warnings.warn(
        f"ability intervals: {len(ids)} model(s) at the floor or ceiling ({names}: every "
        f"observed score 0, or every one 1) have no position of their own{on_scale}; "
        f"{how}",
        LatentbenchWarning,
        stacklevel=user_stacklevel(),
    )
    return {**(checks or {}), "constant_models": ids}


ITEM_INTERVALS_MEASURED = (
    "simulated 2PL (a ~ LogNormal(0, 0.3) or (0, 0.7), b ~ N(0, 1) or N(0, 4)), 20x200 to "
    "70x2000: 95% likelihood intervals covered 0.957-0.986 (conservative: 0.98-0.99 at 20-30 "
    "models) and at least 0.955 in every fifth of the true discrimination; the posterior "
    "intervals 0.87-0.93, their top fifth 0.59-0.77 (benchmarks/bench_item_coverage.py, "
    "docs/model.md 'Item intervals')"
)
"""Where the items' likelihood intervals were measured (``Uncertainty.item_intervals``)."""


def _discrimination_intervals(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray | None,
    a: np.ndarray,
    se: np.ndarray,
    z: float,
    posterior: bool,
    w: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """The discriminations' intervals: ``(centre, se, lower, upper, bounded, record)``.

    A rank-1 MAP fit: the items' likelihood alone at the fit's abilities
    (:func:`latentbench.irt._item_intervals.likelihood_items`), ``centre -/+ z se`` around the
    maximum likelihood given the abilities (the centre clipped at 0 first, the lower end at 0:
    ``a >= 0``); an item whose likelihood has no finite maximum gets ``[0, inf)``, centre and
    se NaN. Otherwise (joint ML: the observed information is already the likelihood's; rank >
    1: not measured) the intervals around the fit's ``a`` (here already divided by the scale
    correction), ``se`` the given one, with the reason in the record.
    """
    n_items = a.size
    bounded = np.ones(n_items, dtype=bool)
    record: dict[str, Any] = {
        "method": "observed information of the fit",
        "centre": "the fit's discrimination",
        "unbounded": 0,
        "fallback": None,
    }
    if not posterior:
        record["fallback"] = (
            "joint ML: no prior on the items, the fit's intervals are the likelihood's (with "
            "its ridge l2, 0.01 by default)"
        )
    elif w.size > 1:
        record["method"] = "Laplace posterior (the prior's curvature included)"
        record["fallback"] = (
            "rank > 1: the likelihood intervals are not measured there; the posterior "
            "intervals around the MAP, which is shrunk toward the prior's mean (they "
            "under-covered the most discriminating items at rank 1)"
        )
    else:
        lik = likelihood_items(result, matrix)
        bounded = lik.bounded
        centre = lik.params[:, 0]
        se = np.sqrt(np.maximum(lik.covariance[:, 0, 0], 0.0))
        at_least_0 = np.maximum(centre, 0.0)
        lower = np.where(bounded, np.maximum(centre - z * se, 0.0), 0.0)
        upper = np.where(bounded, at_least_0 + z * se, np.inf)
        record.update(
            method="likelihood at the fit's abilities (no prior)",
            centre="the items' maximum likelihood given the fit's abilities (column "
            "discrimination_centre; discrimination stays the MAP)",
            unbounded=int((~bounded).sum()),
            steps=lik.steps,
            measured=ITEM_INTERVALS_MEASURED,
        )
        return centre, se, lower, upper, bounded, record
    return a.copy(), se, np.maximum(a - z * se, 0.0), a + z * se, bounded, record


def small_fit(n_models: int, n_items: int) -> bool:
    """Whether a rank-1 reporting scale set by ``n_models`` models on ``n_items`` items is
    outside the shapes where the ability intervals were measured to cover: fewer than
    :data:`FEW_MODELS` models, or fewer than :data:`FEW_ITEMS_MODELS` on fewer than
    :data:`FEW_ITEMS` items.

    Examples
    --------
    >>> small_fit(6, 1000), small_fit(10, 50), small_fit(10, 100), small_fit(15, 20)
    (True, True, False, False)
    """
    return n_models < FEW_MODELS or (n_models < FEW_ITEMS_MODELS and n_items < FEW_ITEMS)


def _small_fit_caveat(n_scale: int, n_items: int) -> str | None:
    """The caveat of a reporting scale set by fewer than :data:`FEW_MODELS` models, or by fewer
    than :data:`FEW_ITEMS_MODELS` on fewer than :data:`FEW_ITEMS` items (warned), else None."""
    if not small_fit(n_scale, n_items):
        return None
    if n_scale < FEW_MODELS:
        what = (
            f"only {n_scale} model(s) set the reporting scale; below {FEW_MODELS} the 95% "
            "intervals covered 0.88-0.94 in simulated 2PL data with 4-6 models (0.95 with 7 or "
            "more)"
        )
    else:
        what = (
            f"only {n_scale} models set the reporting scale, on {n_items} items; with fewer "
            f"than {FEW_ITEMS_MODELS} "
            f"models and {FEW_ITEMS} items the 95% intervals covered 0.90-0.93 in simulated "
            "2PL data (10 models, 20-50 items)"
        )
    caveat = f"{what}: read them as approximate, and compare models by their accuracy too"
    warnings.warn(f"ability intervals: {caveat}", LatentbenchWarning, stacklevel=user_stacklevel())
    return caveat


def _with_item_bootstrap(
    law: Any, var_fixed: np.ndarray, reference: np.ndarray
) -> tuple[np.ndarray, dict[str, Any]]:
    """Variances ``max(law-fixed, item-bootstrap)`` on the reference models, and a summary.

    The law-fixed information treats the estimated item law as known, so its variance is
    the one the abilities would have with the law known: a lower bound of their sampling
    variance. The item bootstrap (:func:`latentbench.irt._random_items.item_bootstrap`)
    estimates the whole variance, the law's error included, with the Monte Carlo noise of
    its replicates; the larger of the two is kept per model.
    """
    boot = law.boot_sd**2
    usable = reference & np.isfinite(boot)
    out = np.where(usable, np.maximum(var_fixed, np.where(usable, boot, 0.0)), var_fixed)
    ratio = np.sqrt(boot[usable] / np.maximum(var_fixed[usable], 1e-300))
    summary = {
        "replicates": int(law.n_boot),
        "seed": int(law.boot_seed),
        "rule": "se = max(law-fixed se, bootstrap sd) per model",
        "sd_ratio_median": float(np.median(ratio)) if ratio.size else None,
        "sd_ratio_max": float(np.max(ratio)) if ratio.size else None,
        "models_widened": int(np.sum(ratio > 1.0)),
    }
    return out, summary


def _constant_intervals(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray | None,
    candidates: np.ndarray,
    level: float,
    n_grid: int = 2001,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``candidates`` (bool, shape (N,)) whose every observed score is 1, or every one 0,
    and their equal-tailed ``level`` posterior intervals, by quadrature on a grid: the fit's
    prior on the reporting scale times the likelihood of the model's cells (K trials each),
    the items' reported parameters fixed. The open side follows the prior's tail, not the
    curvature at the mode. Cells are read without a dense grid (a sparse matrix stays so).

    Returns
    -------
    rows : ndarray of bool, shape (N,)
    lower, upper : ndarray of shape (rows.sum(),)
    """
    rows, top, cells_of = _floor_ceiling_cells(result, matrix, candidates)
    idx = np.flatnonzero(rows)
    lower, upper = np.empty(idx.size), np.empty(idx.size)
    if idx.size == 0:
        return rows, lower, upper
    prior = result.penalty.on_reported_scale(result.normalisation)
    m, sd = float(prior.mean_U), 1.0 / np.sqrt(float(prior.precision_U))
    trials = trials_of(result)
    a, b, sigma = result.V[:, 0], result.b, float(result.sigma)
    centre = result.U[idx, 0]
    lo_end = np.minimum(centre, m) - 10.0 * max(sd, 1.0)
    hi_end = np.maximum(centre, m) + 10.0 * max(sd, 1.0)
    t = np.linspace(0.0, 1.0, n_grid)
    grid = lo_end[:, None] + (hi_end - lo_end)[:, None] * t[None, :]  # (M, G)
    tail = (1.0 - level) / 2
    for k, i in enumerate(idx):  # a few constant models; each is one (G, J_i) pass
        cells = cells_of(int(i))
        sign = 1.0 if top[i] == 1.0 else -1.0
        x = (np.outer(grid[k], a[cells]) + b[cells]) / sigma  # (G, J_i)
        loglik = -trials * np.logaddexp(0.0, -sign * x).sum(axis=1)
        logpost = loglik - 0.5 * ((grid[k] - m) / sd) ** 2
        weights = np.exp(logpost - logpost.max())
        cdf = np.cumsum(weights)
        cdf /= cdf[-1]
        lower[k] = float(np.interp(tail, cdf, grid[k]))
        upper[k] = float(np.interp(1.0 - tail, cdf, grid[k]))
    return rows, lower, upper


def _floor_ceiling_cells(
    result: IRTResult, matrix: ResponseMatrix | np.ndarray | None, candidates: np.ndarray
) -> tuple[np.ndarray, np.ndarray, Callable[[int], np.ndarray]]:
    """The ``candidates`` (bool, shape (N,)) whose every observed score is 1, or every one 0,
    read without a dense grid (a sparse matrix stays so) and without listing a dense
    matrix's cells: ``rows`` (bool, (N,)), each model's highest score ``top`` (N,; -inf for
    a model without cells) and ``cells_of(i)``, the columns of model ``i``'s observed cells.
    """
    fitted = fitted_matrix(result, matrix)
    n = int(result.shape[0])
    if isinstance(fitted, ResponseMatrix) and fitted.is_sparse:
        cells = fitted.observed_cells()
        ptr = np.asarray(cells.row_ptr)
        values = np.asarray(cells.row_values, np.float64)
        row_cols = np.asarray(cells.row_cols)
        counts = np.diff(ptr)
        top, bottom = np.full(n, -np.inf), np.full(n, np.inf)
        has = counts > 0
        if values.size:  # reduceat over each row's run of cells (CSR order)
            top[has] = np.maximum.reduceat(values, ptr[:-1][has])
            bottom[has] = np.minimum.reduceat(values, ptr[:-1][has])

        def cells_of(i: int) -> np.ndarray:
            return row_cols[ptr[i] : ptr[i + 1]]

    else:
        if isinstance(fitted, ResponseMatrix):
            dense = np.asarray(fitted.scores)
        else:
            dense = np.asarray(fitted, dtype=np.float64)
        # per-row reductions (NaN = missing skipped): no (rows, cols) list of every cell
        top = np.fmax.reduce(dense, axis=1).astype(np.float64) if dense.size else np.full(n, np.nan)
        bottom = np.fmin.reduce(dense, axis=1).astype(np.float64) if dense.size else top.copy()
        empty = np.isnan(top)
        top[empty], bottom[empty] = -np.inf, np.inf

        def cells_of(i: int) -> np.ndarray:
            return np.flatnonzero(~np.isnan(dense[i]))

    rows = np.asarray(candidates, bool) & (top == bottom) & np.isin(top, (0.0, 1.0))
    return rows, top, cells_of


def _floor_or_ceiling(
    result: IRTResult, matrix: ResponseMatrix | np.ndarray | None, candidates: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` (bool, (N,)): the ``candidates`` at the floor or the ceiling; ``at_top``
    (bool, (rows.sum(),)): which of them have every score 1."""
    rows, top, _ = _floor_ceiling_cells(result, matrix, candidates)
    return rows, top[rows] == 1.0


def _detached_intervals(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray | None,
    reference: np.ndarray,
    se: np.ndarray,
    z: float,
    posterior: bool,
) -> dict[str, Any] | None:
    """Intervals of the detached models (those with cells outside ``reference``): the range of
    their estimates under every candidate prior, widened by ``z se`` (MAP fits; a fit without
    a prior keeps its sampling intervals, with the warning). Warns once."""
    no_data = _models_without_cells(result, matrix)
    rows = np.flatnonzero(~reference & ~no_data)
    if rows.size == 0:
        return None
    ids = [result.model_ids[i] for i in rows]
    names = ", ".join(repr(m) for m in ids[:3]) + (" ..." if len(ids) > 3 else "")
    out: dict[str, Any] = {"models": ids, "rows": rows}
    own = result.U[rows, 0]
    scores, _ = _observed(result, matrix)
    # every observed score 0, or every one 1: the prior's interval by contract, two-sided
    cells = np.asarray(scores[rows], dtype=float)
    constant = (np.nanmax(cells, axis=1) == np.nanmin(cells, axis=1)) & np.isin(
        np.nanmax(cells, axis=1), (0.0, 1.0)
    )
    if not posterior:
        out["method"] = "sampling (no prior to vary)"
        out["far_side"] = "open"
        out["lower"], out["upper"] = one_sided(
            own, own - z * se[rows], own + z * se[rows], constant
        )
        warnings.warn(
            f"ability intervals: {rows.size} model(s) detached from the others ({names}): they "
            "do not set the reporting scale, and their position rests on the tails of the "
            "item curves; their intervals are bounded on the field's side only",
            LatentbenchWarning,
            stacklevel=user_stacklevel(),
        )
        return out
    thetas, candidates = prior_sensitivity(result, scores)
    low = np.minimum(thetas[:, rows].min(axis=0, initial=np.inf), own)
    high = np.maximum(thetas[:, rows].max(axis=0, initial=-np.inf), own)
    lower, upper = one_sided(own, low - z * se[rows], high + z * se[rows], constant)
    out.update(
        method="prior sensitivity",
        far_side="open",
        a_sd=candidates,
        estimates={m: [float(v) for v in thetas[:, i]] for m, i in zip(ids, rows, strict=True)},
        lower=lower,
        upper=upper,
    )
    assert result.prior_selection is not None
    span = [*candidates, float(result.prior_selection.a_sd)]
    warnings.warn(
        f"ability intervals: {rows.size} model(s) detached from the others ({names}): they do "
        "not set the reporting scale, and their intervals span their estimates under every "
        f"candidate prior of the discriminations (a_sd {min(span):g}-{max(span):g}), which "
        "moves them beyond their sampling error; they are bounded on the field's side only "
        "(the data do not bound how far beyond the field they are)",
        LatentbenchWarning,
        stacklevel=user_stacklevel(),
    )
    return out


def scale_size(
    result: IRTResult, matrix: ResponseMatrix | np.ndarray | None = None
) -> tuple[int, int]:
    """The models with cells that set a rank-1 fit's reporting scale (the reference models),
    and the items with at least one observed cell: what :func:`small_fit` is asked about."""
    source = result.matrix if matrix is None else matrix
    if isinstance(source, ResponseMatrix):
        items = int((np.asarray(source.n_observed_per_item()) > 0).sum())
    else:
        items = int((~np.isnan(np.asarray(source, dtype=np.float32))).any(axis=0).sum())
    models = int((reference_of(result) & ~_models_without_cells(result, matrix)).sum())
    return models, items


def _models_without_cells(result: IRTResult, matrix: ResponseMatrix | np.ndarray | None) -> Any:
    """Boolean (N,): the models with no observed cell (counted without a dense grid)."""
    source = result.matrix if matrix is None else matrix
    if isinstance(source, ResponseMatrix):
        return np.asarray(source.n_observed_per_model()) == 0
    return ~(~np.isnan(np.asarray(source, dtype=np.float32))).any(axis=1)
