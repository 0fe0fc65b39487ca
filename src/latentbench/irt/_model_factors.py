"""The model block with the items held fixed: per-model Newton steps and factor fits.

Used by the cBMM identifiability check (:func:`model_newton_step`), by standard errors and by
the proxy's scoring of new models (:func:`fit_model_factors`).
"""

from __future__ import annotations

import numpy as np

from latentbench.exceptions import InputError
from latentbench.irt._kernels import model_gradient_curvature
from latentbench.irt._objective import (
    GaussianPenalty,
    as_scores,
    logits,
    normalise,
    sigmoid,
    softplus,
)

__all__ = ["fit_model_factors", "model_newton_step", "normalise_rank1"]


def model_newton_step(
    scores: np.ndarray,
    U: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    sigma: float,
    penalty: GaussianPenalty,
) -> np.ndarray:
    """The Newton step of every model's factors with the items held fixed, shape (N, r).

    Exact per-row Hessian ``sum_j w_ij v_j v_j^T / sigma^2`` plus the penalty's curvature
    (``w = p (1 - p)`` on observed cells), from one parallel pass over the rows
    (:func:`~latentbench.irt._kernels.model_gradient_curvature`). A converged fit has steps ~0;
    joint ML drifting towards infinite discriminations does not.
    """
    Y = as_scores(scores)
    r = U.shape[1]
    residual_v, weight_vv = model_gradient_curvature(Y, U, V, b, sigma)
    grad = -residual_v / sigma + penalty.gradient(U, V, b)[0]
    hess = weight_vv / sigma**2 + penalty.model_curvature(r) + 1e-12 * np.eye(r)
    return np.asarray(np.linalg.solve(hess, grad[:, :, None])[:, :, 0], dtype=float)


def normalise_rank1(
    theta: np.ndarray, a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Identifiability normalisation for reporting: mean(theta) = 0, sd(theta) = 1 over the
    models that set the scale (all but the detached ones,
    :func:`latentbench.irt._objective.reference_models`).

    theta <- (theta - mu) / s, a <- s a, b <- b + mu a. X = theta a^T + 1 b^T is unchanged and
    a >= 0 is kept. (Any rank: :func:`latentbench.irt._objective.normalise`.)

    Parameters
    ----------
    theta : ndarray of shape (N,)
        Abilities.
    a : ndarray of shape (J,)
        Discriminations.
    b : ndarray of shape (J,)
        Intercepts (``logit P = a theta + b``).

    Returns
    -------
    theta, a, b : ndarrays of shapes (N,), (J,), (J,)
        The normalised parameters.
    """
    U, V, b_new, _ = normalise(np.asarray(theta, float)[:, None], np.asarray(a, float)[:, None], b)
    return U[:, 0], V[:, 0], b_new


def fit_model_factors(
    scores: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    *,
    sigma: float = 1.0,
    l2: float = 1e-2,
    penalty: GaussianPenalty | None = None,
    U0: np.ndarray | None = None,
    max_iter: int = 50,
    tol: float = 1e-12,
    return_hessian: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Fit model factors U for fixed item parameters by batched damped Newton.

    Each row's u_i independently minimises
    ``sum_{j observed} [softplus(t_ij) - y_ij t_ij] + l2/2 |u_i|^2`` with
    ``t_ij = (v_j . u_i + b_j) / sigma`` (the ``U`` part of ``penalty`` when given, instead of the
    ridge): a small regularised logistic regression. All rows are
    solved at once (r x r systems batched), with per-row step halving so the objective of every
    row never increases.

    Parameters
    ----------
    scores : ndarray of shape (M, J)
        Scores in [0, 1], NaN = missing (a row may have only a handful of observed cells).
    V : ndarray of shape (J, r)
    b : ndarray of shape (J,)
    sigma : float, default 1.0
        Temperature of the link (as in :func:`~latentbench.irt.fit_cbmm`).
    l2 : float, default 1e-2
        Ridge on U; ignored when ``penalty`` is given.
    penalty : GaussianPenalty, optional
        The penalty whose ``U`` part is used; default ``GaussianPenalty.ridge(l2)``.
    U0 : ndarray of shape (M, r), optional
        Warm start (default zeros).
    max_iter : int
    tol : float
        Newton-decrement threshold: a row is done once its decrement is below ``tol`` (or once no
        step along its Newton direction lowers its objective, i.e. it is optimal up to rounding).
    return_hessian : bool
        Also return the per-row Hessians at the solution, shape (M, r, r).

    Returns
    -------
    U : ndarray of shape (M, r)
    hessian : ndarray of shape (M, r, r), only when ``return_hessian``.
    """
    Y = as_scores(scores)
    V = np.atleast_2d(np.asarray(V, dtype=float).T).T
    b = np.asarray(b, dtype=float)
    M, J = Y.shape
    r = V.shape[1]
    if V.shape[0] != J or b.shape != (J,):
        raise InputError(f"V has shape {V.shape} and b {b.shape}; expected ({J}, r) and ({J},)")
    observed = ~np.isnan(Y)
    y = np.where(observed, Y, 0).astype(np.float64)
    w_obs = observed.astype(np.float64)
    U = np.zeros((M, r)) if U0 is None else np.array(U0, dtype=float).reshape(M, r)
    VV = np.einsum("jk,jl->jkl", V, V).reshape(J, r * r)
    if penalty is None:
        penalty = GaussianPenalty.ridge(l2)
    curvature = penalty.model_curvature(r)

    obj = _rows_obj(U, V, b, y, w_obs, sigma, penalty)
    settled = np.zeros(M, dtype=bool)
    hessian = None
    for _ in range(max_iter):
        p = sigmoid(logits(U, V, b, sigma))
        grad = ((p - y) * w_obs) @ V / sigma + penalty.gradient(U, V, b)[0]
        weight = p * (1.0 - p) * w_obs
        hessian = (weight @ VV).reshape(M, r, r) / (sigma * sigma) + curvature
        direction = np.linalg.solve(hessian, grad[:, :, None])[:, :, 0]
        decrement = np.einsum("mk,mk->m", grad, direction)
        todo = (decrement >= tol) & ~settled
        if not todo.any():
            break
        scale = np.ones(M)
        active = todo.copy()
        new_obj = obj.copy()
        U_try = U.copy()
        for _halving in range(30):
            U_try[active] = U[active] - scale[active, None] * direction[active]
            new_obj[active] = _rows_obj(
                U_try[active], V, b, y[active], w_obs[active], sigma, penalty
            )
            worse = active & (new_obj > obj + 1e-12 * np.abs(obj))
            if not worse.any():
                break
            scale[worse] *= 0.5
            active = worse
        ok = todo & (new_obj <= obj + 1e-12 * np.abs(obj))
        # a row whose Newton step cannot decrease its objective even at 1/2^29 of its length
        # is at the optimum up to rounding: stop working on it
        settled |= todo & ~ok
        U = np.where(ok[:, None], U_try, U)
        obj = np.where(ok, new_obj, obj)
    if return_hessian:
        p = sigmoid(logits(U, V, b, sigma))
        weight = p * (1.0 - p) * w_obs
        hessian = (weight @ VV).reshape(M, r, r) / (sigma * sigma) + curvature
        return U, hessian
    return U


def _rows_obj(
    U_: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    y: np.ndarray,
    w_obs: np.ndarray,
    sigma: float,
    penalty: GaussianPenalty,
) -> np.ndarray:
    """Per-row penalised negative log-likelihood (observed cells only), shape (M,)."""
    t = logits(U_, V, b, sigma)
    cells = w_obs * (softplus(t) - y * t)
    return np.asarray(cells.sum(axis=1) + penalty.model_rows(U_), dtype=float)
