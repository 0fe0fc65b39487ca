"""Reference fits of the same objective, for benchmarks and correctness tests.

- :func:`fit_textbook_cbmm`: the cBMM algorithm as published (exact masked majorizer, blocks
  a, then b, then theta; one SciPy ``nnls`` call per item in a Python loop; no acceleration).
  Slow on purpose: it is the correctness reference for :func:`latentbench.irt.fit_cbmm`.
- :func:`fit_lbfgsb`: joint maximum likelihood of the same objective with
  ``scipy.optimize.minimize(method="L-BFGS-B")``, analytic gradients and bounds ``V >= 0``.

Both minimise ``sum_observed [softplus(x / sigma) - y x / sigma]`` plus the penalty of
:mod:`latentbench.irt._objective` (by default the ridge ``l2/2 (|U|^2 + |V|^2 + |b|^2)``) with
``X = U V^T + 1 b^T`` and return a :class:`~latentbench.irt.CBMMFit`.
"""

from __future__ import annotations

import time
from typing import Literal

import numpy as np
from scipy.optimize import minimize, nnls
from scipy.special import expit

from latentbench.irt._cbmm import CBMMFit, initial_parameters
from latentbench.irt._objective import GaussianPenalty, as_scores, logits

__all__ = ["fit_lbfgsb", "fit_textbook_cbmm", "objective"]


def objective(
    scores: np.ndarray,
    U: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    sigma: float,
    l2: float,
    penalty: GaussianPenalty | None = None,
) -> float:
    """The penalised negative log-likelihood, computed plainly in float64 (reference).

    ``penalty`` (default ``GaussianPenalty.ridge(l2)``) is the penalty on (U, V, b).
    """
    Y = np.asarray(scores, dtype=np.float64)
    observed = ~np.isnan(Y)
    return _objective(np.where(observed, Y, 0.0), observed, U, V, b, sigma,
                      penalty or GaussianPenalty.ridge(l2))  # fmt: skip


def _objective(
    y: np.ndarray,
    observed: np.ndarray,
    U: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    sigma: float,
    penalty: GaussianPenalty,
) -> float:
    """:func:`objective` from the scores' labels ``y`` (0 where missing) and ``observed``
    mask, made once by a fit that evaluates it at every sweep (the same float64 operations)."""
    t = logits(U, V, b, sigma)
    cell = np.logaddexp(0.0, t) - y * t
    value = float(np.sum(cell, where=observed))
    return value + penalty.value(U, V, b)


def fit_textbook_cbmm(
    scores: np.ndarray,
    *,
    rank: int = 1,
    sigma: float = 1.0,
    l2: float = 1e-2,
    penalty: GaussianPenalty | None = None,
    tol: float = 1e-6,
    max_iter: int = 1000,
    init: Literal["accuracy", "random"] = "accuracy",
    random_state: int | None = None,
) -> CBMMFit:
    """The published cBMM, block by block, with a Python loop of per-item NNLS (reference).

    Parameters are those of :func:`latentbench.irt.fit_cbmm`. Stops when the relative change
    of the objective falls below ``tol`` (the reference rule).
    """
    start = time.perf_counter()
    Y = as_scores(scores).astype(np.float64)
    m = Y.shape[1]
    observed = ~np.isnan(Y)
    y = np.where(observed, Y, 0.0)
    mask = observed.astype(np.float64)
    U, V, b = initial_parameters(Y.astype(np.float32), rank, sigma, init, random_state)
    c = 1.0 / (4.0 * sigma * sigma)
    pen = penalty or GaussianPenalty.ridge(l2)
    f = _objective(y, observed, U, V, b, sigma, pen)
    history = [f]
    converged = False
    iteration = 0
    # the penalty on v_j as extra least-squares rows: c |sqrt(lam/c) (v - m)|^2 = lam |v - m|^2
    ridge_rows = np.sqrt(pen.precision_V / c) * np.eye(rank)
    ridge_target = ridge_rows @ np.full(rank, pen.mean_V)
    # each item's observed rows, and its NNLS problem's arrays (filled whole before each call:
    # the same values as stacking them anew, without a boolean mask per item and iteration)
    rows_of = [np.flatnonzero(observed[:, j]) for j in range(m)]
    designs = [np.empty((idx.size + rank, rank)) for idx in rows_of]
    targets = [np.empty(idx.size + rank) for idx in rows_of]
    # the penalty's block terms and the b-block's denominator: constants of the fit
    b_target, u_curvature, u_target = (
        pen.item_target(rank)[rank],
        pen.model_curvature(rank),
        pen.model_target(rank),
    )
    b_denominator = c * mask.sum(axis=0) + pen.precision_b
    for iteration in range(1, max_iter + 1):  # noqa: B007
        X = U @ V.T + b
        Z = np.where(observed, X + 4.0 * sigma * (y - expit(X / sigma)), 0.0)
        # a-block (V): one NNLS per item over its observed rows
        residual = np.ascontiguousarray((Z - b).T)  # item j's row: Z[:, j] - b[j]
        for j, idx in enumerate(rows_of):
            design, target, k = designs[j], targets[j], idx.size
            U.take(idx, axis=0, out=design[:k])  # the method: np.take's wrapper costs
            design[k:] = ridge_rows  # as much as the copy at this size
            residual[j].take(idx, out=target[:k])
            target[k:] = ridge_target
            V[j] = nnls(design, target)[0]
        # b-block: closed form
        fitted = U @ V.T
        b = (c * np.sum(mask * (Z - fitted), axis=0) + b_target) / b_denominator
        # theta-block (U): per-row normal equations over observed items, batched
        gram = c * np.einsum("nj,jk,jl->nkl", mask, V, V) + u_curvature
        rhs = c * (mask * (Z - b)) @ V + u_target
        U = np.linalg.solve(gram, rhs[:, :, None])[:, :, 0]
        f_new = _objective(y, observed, U, V, b, sigma, pen)
        history.append(f_new)
        if abs(f - f_new) / (abs(f) + 1e-12) < tol:
            f = f_new
            converged = True
            break
        f = f_new
    return CBMMFit(
        U=U,
        V=V,
        b=b,
        loss=f,
        loss_history=history,
        n_iter=iteration,
        n_passes=iteration,
        converged=converged,
        seconds=time.perf_counter() - start,
        neg_log_likelihood=objective(Y, U, V, b, sigma, 0.0),
    )


def fit_lbfgsb(
    scores: np.ndarray,
    *,
    rank: int = 1,
    sigma: float = 1.0,
    l2: float = 1e-2,
    penalty: GaussianPenalty | None = None,
    tol: float = 1e-6,
    max_iter: int = 15000,
    init: Literal["accuracy", "random"] = "accuracy",
    random_state: int | None = None,
    dtype: type = np.float64,
) -> CBMMFit:
    """Joint ML of the same objective with SciPy's L-BFGS-B (analytic gradient, V >= 0).

    ``tol`` is passed as L-BFGS-B's ``ftol`` (relative reduction of the objective), the
    analogue of cBMM's relative stopping rule; ``gtol`` is set tiny so ``ftol`` decides.
    Elementwise work is done in ``dtype`` (float64 by default) and reduced in float64.
    """
    start = time.perf_counter()
    Y32 = as_scores(scores)
    n, m = Y32.shape
    observed = ~np.isnan(Y32)
    y: np.ndarray = np.where(observed, Y32, 0).astype(dtype)
    mask = observed.astype(dtype)
    U0, V0, b0 = initial_parameters(Y32, rank, sigma, init, random_state)
    sizes = (n * rank, m * rank, m)
    pen = penalty or GaussianPenalty.ridge(l2)
    history: list[float] = []

    def unpack(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        U = w[: sizes[0]].reshape(n, rank)
        V = w[sizes[0] : sizes[0] + sizes[1]].reshape(m, rank)
        return U, V, w[sizes[0] + sizes[1] :]

    def value_and_grad(w: np.ndarray) -> tuple[float, np.ndarray]:
        U, V, b = unpack(w)
        t = ((U @ V.T + b) / sigma).astype(dtype)
        loss = float(np.sum(mask * (np.logaddexp(0, t) - y * t), dtype=np.float64))
        G = (mask * (expit(t) - y) / sigma).astype(np.float64)
        value = loss + pen.value(U, V, b)
        gU, gV, gb = pen.gradient(U, V, b)
        grad = np.concatenate([(G @ V + gU).ravel(), (G.T @ U + gV).ravel(), G.sum(axis=0) + gb])
        history.append(value)
        return value, grad

    w0 = np.concatenate([U0.ravel(), V0.ravel(), b0])
    bounds = [(None, None)] * sizes[0] + [(0.0, None)] * sizes[1] + [(None, None)] * sizes[2]
    outcome = minimize(
        value_and_grad,
        w0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-12, "maxfun": 10 * max_iter},
    )
    U, V, b = unpack(outcome.x)
    return CBMMFit(
        U=U.copy(),
        V=V.copy(),
        b=b.copy(),
        loss=float(outcome.fun),
        loss_history=history,
        n_iter=int(outcome.nit),
        n_passes=int(outcome.nfev),
        converged=bool(outcome.success),
        seconds=time.perf_counter() - start,
        neg_log_likelihood=objective(Y32, U, V, b, sigma, 0.0),
    )
