"""Intervals of detached models: abilities that depend on the prior beyond their sampling error.

A model far from all the others (a broken model near 0 % or 100 % on every item, issue 28's
stress matrices) does not set the reporting scale (:func:`latentbench.irt._objective.
reference_models`), and its own position is weakly identified: it is read off the tails of the
item response curves, i.e. off the discriminations, which with tens of models every item's
prior shrinks. On the 22 x 1000 stress matrix the floor model sits at -9.3 sds of the others
in truth, and the MAP fit puts it at -7.4 (a_sd 0.25, the held-out choice), -8.1 (0.5),
-9.6 (1.0), -11.0 (2.0), each with a sampling se of about 0.3: no sampling interval around
one of them covers. Its interval is therefore a sensitivity interval: the range of its
estimates under every candidate prior of the held-out grid (refits warm-started from the
fit, on the fit's reporting scale), widened by ``z`` times its sampling se on each side.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from latentbench.exceptions import ConvergenceWarning
from latentbench.irt._cbmm import fit_cbmm
from latentbench.irt._fitted import reference_of, trials_of
from latentbench.irt._objective import Normalisation, normalise
from latentbench.irt._priors import Prior

if TYPE_CHECKING:
    from latentbench.irt._result import IRTResult

__all__ = [
    "SensitivityFit",
    "one_sided",
    "prior_sensitivity",
    "prior_sensitivity_fits",
    "score_sensitivity",
]


@dataclasses.dataclass(frozen=True)
class SensitivityFit:
    """The fit refitted with another ``a_sd``, on the fit's reporting scale.

    Attributes
    ----------
    a_sd : float
    theta : ndarray of shape (N,)
    a, b : ndarray of shape (J,)
        Reported discriminations and intercepts.
    normalisation : Normalisation
    """

    a_sd: float
    theta: np.ndarray
    a: np.ndarray
    b: np.ndarray
    normalisation: Normalisation


def prior_sensitivity(result: IRTResult, scores: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """The fit's abilities under every other candidate ``a_sd`` of the prior's grid.

    Parameters
    ----------
    result : IRTResult
        A rank-1 MAP fit.
    scores : ndarray of shape (N, J)
        The matrix it was fitted on (NaN = missing).

    Returns
    -------
    thetas : ndarray of shape (n_candidates, N)
        Abilities on the fit's reporting scale (mean 0, sd 1 over the same reference models),
        one row per candidate other than the fit's own ``a_sd``.
    candidates : list of float
        The ``a_sd`` values, in the rows' order.
    """
    fits = prior_sensitivity_fits(result, scores)
    thetas = np.array([f.theta for f in fits]).reshape(len(fits), result.shape[0])
    return thetas, [f.a_sd for f in fits]


def raw_start(result: IRTResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The refits' start: the fit's parameters on the raw (unnormalised) scale, rebuilt from
    the reported ones and the normalisation (``theta = s U + mu``, ``a = V / s``,
    ``b = b_reported - mu a``), never from ``result.raw``: a result loaded from disk has no
    ``raw``, and a start that differs by route moved a detached model's bound by up to 0.007
    between ``fit`` and ``fit --out d`` + load (the refits stop within their tolerance of
    different points)."""
    U, V, b = (np.asarray(x, dtype=float) for x in (result.U, result.V, result.b))
    scale = result.normalisation
    if scale is None or U.shape[1] != 1:
        return U.copy(), V.copy(), b.copy()
    mu, s = float(scale.shift[0]), float(scale.scale)
    a = V / s
    return U * s + mu, a, b - mu * a[:, 0]


def _refit(result: IRTResult, scores: np.ndarray, a_sd: float, init: Any) -> Any:
    """One sensitivity refit: ``result``'s rank-1 fit of ``scores`` (float32) with the prior sd
    of the discriminations set to ``a_sd``, warm-started at ``init``. A refit that stops at
    ``max_iter`` is kept (its estimate is one point of a range, not the reported one)."""
    sigma = float(result.sigma)
    options = result.options
    penalty = dataclasses.replace(result.penalty, precision_V=1.0 / (a_sd * sigma) ** 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fit_cbmm(
            scores,
            rank=1,
            sigma=sigma,
            penalty=penalty.scaled(1.0 / trials_of(result)),
            tol=float(options.get("tol", 1e-6)),
            max_iter=int(options.get("max_iter", 5000)),
            init=init,
            accelerate=bool(options.get("accelerate", True)),
        )


def prior_sensitivity_fits(result: IRTResult, scores: np.ndarray) -> list[SensitivityFit]:
    """The fit refitted under every other candidate ``a_sd`` of the prior's grid (the grid of
    the held-out choice; :class:`~latentbench.irt.Prior`'s default grid when ``a_sd`` was
    given), warm-started from the fit, normalised over the fit's reference models. Cached on
    the result for the same scores."""
    key = hash(np.ascontiguousarray(scores, dtype=np.float32).tobytes())
    cached = getattr(result, "_sensitivity_cache", None)
    if cached is not None and cached[0] == key:
        return list(cached[1])
    selection = result.prior_selection
    grid = list(selection.grid) if selection is not None and selection.grid else []
    grid = grid or list(Prior().a_sd_grid)
    own = selection.a_sd if selection is not None else float("nan")
    candidates = [float(g) for g in grid if not np.isclose(g, own)]
    start = raw_start(result)
    reference = reference_of(result)
    out = []
    for a_sd in candidates:
        fit = _refit(result, np.asarray(scores, dtype=np.float32), a_sd, start)
        U, V, b, scale = normalise(fit.U, fit.V, fit.b, reference)
        out.append(SensitivityFit(a_sd, U[:, 0], V[:, 0], b, scale))
    object.__setattr__(result, "_sensitivity_cache", (key, tuple(out)))
    return out


def score_sensitivity(
    result: IRTResult, scores: np.ndarray, cols: np.ndarray, theta: np.ndarray
) -> tuple[np.ndarray, list[float]]:
    """Detached new models, each refitted jointly with the calibration (itself alone, not its
    companions) under the fit's ``a_sd`` and every other candidate, on the calibration's
    reporting scale (its reference models: mean 0, sd 1).

    Scored with the items held fixed, a model far from the calibration's models cannot inform
    the tails of the item curves it is placed by; in a joint fit its own cells do (the way a
    detached model of the fit is placed). The range of these refits is its interval's core.

    Parameters
    ----------
    result : IRTResult
        A rank-1 MAP fit that keeps its matrix.
    scores : ndarray of shape (M, K)
        The new models' scores on the calibrated items ``cols`` (NaN = missing).
    cols : ndarray of int, shape (K,)
    theta : ndarray of shape (M,)
        Their items-fixed scores on the reporting scale (the refits' starts).

    Returns
    -------
    thetas : ndarray of shape (n_candidates + 1, M)
        The fit's own ``a_sd`` first.
    candidates : list of float
    """
    assert result.matrix is not None and result.prior_selection is not None
    calibration = np.asarray(result.matrix.scores, dtype=np.float32)
    N, J = calibration.shape
    selection = result.prior_selection
    grid = list(selection.grid) if selection.grid else list(Prior().a_sd_grid)
    candidates = [float(selection.a_sd)] + [
        float(g) for g in grid if not np.isclose(g, selection.a_sd)
    ]
    start = raw_start(result)
    scale = result.normalisation
    shift, spread = (0.0, 1.0) if scale is None else (float(scale.shift[0]), scale.scale)
    reference = np.r_[reference_of(result), False]
    out = np.empty((len(candidates), scores.shape[0]))
    for m in range(scores.shape[0]):
        row = np.full((1, J), np.nan, dtype=np.float32)
        row[0, cols] = scores[m]
        joint = np.vstack([calibration, row])
        init = (np.vstack([start[0], [[theta[m] * spread + shift]]]), start[1], start[2])
        for c, a_sd in enumerate(candidates):
            fit = _refit(result, joint, a_sd, init)
            out[c, m] = normalise(fit.U, fit.V, fit.b, reference)[0][N, 0]
    return out, candidates


def one_sided(
    theta: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    constant: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Intervals of detached models, open on the side away from the field.

    A detached model lies beyond every model that sets the reporting scale (more than
    :data:`~latentbench.irt._objective.DETACHED` of their sds from their mean, at a mean score
    within :data:`~latentbench.irt._objective.DETACHED_BAND` of 0 or 1). How far beyond is read
    off the item curves' tails past the last reference model, where no reference model's
    cells test the logistic shape: the estimate moves with the prior of the discriminations
    beyond its sampling error. On the 22 x 1000 stress replicas (20 replicas, the calibration
    halves' and the scored halves' detached models) the truth lay beyond the estimate under
    every candidate prior, widened by 1.96 se, in 19 of 40 detached models (z 3-10), and
    never on the field's side. So only the bound on the field's side is kept; the far side
    is infinite.
    ``theta`` is on the reporting scale (the reference models' mean is 0): a model above
    it is open upwards, one below downwards. A model with every score equal (all 0 or all 1)
    keeps its two-sided interval: it has no likelihood-based interval at all, and gets the
    prior's posterior by contract (finite, flagged ``constant`` by ``score_models``).

    Parameters
    ----------
    theta : ndarray of shape (M,)
        The detached models' abilities on the reporting scale.
    lower, upper : ndarray of shape (M,)
        Their two-sided intervals.
    constant : ndarray of bool, shape (M,), optional
        The models whose observed scores are all 0 or all 1 (kept two-sided).

    Returns
    -------
    lower, upper : ndarray of shape (M,)
    """
    theta = np.asarray(theta, dtype=float)
    open_ = np.ones(theta.shape, bool) if constant is None else ~np.asarray(constant, bool)
    return (
        np.where(open_ & (theta < 0), -np.inf, np.asarray(lower, dtype=float)),
        np.where(open_ & (theta > 0), np.inf, np.asarray(upper, dtype=float)),
    )
