"""SQUAREM extrapolation and the stopping measures shared by the dense and sparse cBMM loops.

SQUAREM (Varadhan & Roland 2008, scheme S3): from a point ``x0`` and two MM sweeps ``x1``,
``x2``, with ``r = x1 - x0`` and ``v = x2 - 2 x1 + x0``, the extrapolated point is
``x0 - 2 alpha r + alpha^2 v`` with ``alpha = -clip(|r| / |v|, 1, step_max)``. The caller keeps
it only if its objective is not above the MM point's (the monotone safeguard); the step bound
grows after an accepted long step and shrinks after a rejected one.

A point is the tuple ``(U, V, b)`` of arrays of shape (N, r), (J, r), (J,).

:func:`run_mm` is the one MM loop of the dense and sparse fits: plain MM sweeps, SQUAREM
with the safeguard, the stopping rule; the fits supply the cell passes as two callables.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from latentbench._checks import user_stacklevel
from latentbench.exceptions import ConvergenceWarning

__all__ = [
    "MMRun",
    "extrapolate",
    "next_step_max",
    "relative_change",
    "remaining_gap",
    "run_mm",
    "squarem_step",
]

Params = tuple[np.ndarray, np.ndarray, np.ndarray]
Evaluation = tuple[float, float, Any]
"""``(objective, negative log-likelihood, aux)``: what the fit's evaluation of a point gives;
``aux`` is whatever its MM map needs from that pass (residual products, the next iterate)."""


@dataclass
class MMRun:
    """The outcome of :func:`run_mm`: the last point, its evaluation and the counts."""

    point: Params
    loss: float
    neg_log_likelihood: float
    history: list[float]
    sweeps: int
    passes: int
    converged: bool


def run_mm(
    point: Params,
    evaluate: Callable[[Params], Evaluation],
    mm_map: Callable[[Params, Any], Params],
    *,
    tol: float,
    max_iter: int,
    accelerate: bool,
    nonneg: bool,
    check_monotone: bool = False,
    callback: Callable[[int, float], None] | None = None,
    block_optimal: Callable[[Params], bool] | None = None,
    name: str = "cBMM",
) -> MMRun:
    """MM sweeps from ``point`` with SQUAREM acceleration until the stopping rule holds.

    Parameters
    ----------
    point : (U, V, b)
        The start.
    evaluate : callable(point) -> (objective, nll, aux)
        One pass over the cells at a point.
    mm_map : callable(point, aux) -> point
        One MM sweep from a point, given the ``aux`` of its evaluation.
    tol, max_iter, accelerate, check_monotone, callback
        As in :func:`latentbench.irt.fit_cbmm`.
    nonneg : bool
        Clip ``V`` at 0 in extrapolated points.
    block_optimal : callable(point) -> bool, optional
        Extra test once the objective and parameter tests hold (checked at most every 10
        sweeps); the fit stops only when it returns True.
    name : str
        Named in the :class:`ConvergenceWarning` at ``max_iter``.

    Notes
    -----
    Each iteration: ``x1 = M(x0)``; with acceleration also ``x2 = M(x1)`` and the SQUAREM
    point ``x_e``, kept if its objective is not above ``x1``'s, else ``x2`` (never worse than
    ``x1``). The fit stops when the estimated relative distance of the objective from its
    limit (:func:`remaining_gap`) is below ``tol`` and the largest relative parameter change
    (:func:`relative_change`) below ``sqrt(tol)``.
    """
    f, nll, aux = evaluate(point)
    history = [f]
    passes, sweeps = 1, 0
    converged = False
    rel = float("inf")
    param_tol = float(np.sqrt(tol))
    next_check = 0
    step_max = 4.0
    while sweeps < max_iter:
        x1 = mm_map(point, aux)
        f1, nll1, aux1 = evaluate(x1)
        passes += 1
        sweeps += 1
        if check_monotone and f1 > f + 1e-9 * abs(f):
            raise AssertionError(f"MM sweep {sweeps} increased the objective: {f} -> {f1}")
        new: tuple[Params, float, float, Any] = (x1, f1, nll1, aux1)
        if accelerate and sweeps < max_iter:
            # SQUAREM (Varadhan & Roland 2008, scheme S3) with a monotone safeguard
            x2 = mm_map(x1, aux1)
            sweeps += 1
            alpha, r_parts, v_parts = squarem_step(point, x1, x2, step_max)
            x_e = extrapolate(point, r_parts, v_parts, alpha, nonneg)
            f_e, nll_e, aux_e = evaluate(x_e)
            passes += 1
            accepted = bool(np.isfinite(f_e) and f_e <= f1)
            step_max = next_step_max(step_max, alpha, accepted)
            if accepted:
                new = (x_e, f_e, nll_e, aux_e)
            else:
                # fall back to the second plain MM point, which cannot be worse than x1
                f2, nll2, aux2 = evaluate(x2)
                passes += 1
                if check_monotone and f2 > f1 + 1e-9 * abs(f1):
                    raise AssertionError(f"MM sweep {sweeps} increased the objective: {f1} -> {f2}")
                new = (x2, f2, nll2, aux2)
        change = relative_change(new[0], point)
        point, f, nll, aux = new
        history.append(f)
        if callback is not None:
            callback(sweeps, f)
        rel = remaining_gap(history) / (abs(f) + 1e-12)
        if rel < tol and change < param_tol and sweeps >= next_check:
            if block_optimal is None or block_optimal(point):
                converged = True
                break
            next_check = sweeps + 10
    if not converged:
        warnings.warn(
            f"{name} stopped at max_iter={max_iter} before meeting tol={tol} (last relative "
            f"gap estimate {rel:.2e}); see the fit's loss history",
            ConvergenceWarning,
            stacklevel=user_stacklevel(),  # through the fit's wrappers: the caller's line
        )
    return MMRun(point, f, nll, history, sweeps, passes, converged)


def squarem_step(
    x0: Params, x1: Params, x2: Params, step_max: float
) -> tuple[float, Params, Params]:
    """The step length ``alpha`` (<= -1) and the differences ``r``, ``v`` of three points."""
    r_parts = (x1[0] - x0[0], x1[1] - x0[1], x1[2] - x0[2])
    v_parts = (
        x2[0] - 2 * x1[0] + x0[0],
        x2[1] - 2 * x1[1] + x0[1],
        x2[2] - 2 * x1[2] + x0[2],
    )
    r_norm = np.sqrt(_squared_norm(r_parts))
    v_norm = np.sqrt(_squared_norm(v_parts))
    alpha = -min(max(r_norm / v_norm, 1.0), step_max) if v_norm > 0 else -1.0
    return alpha, r_parts, v_parts


def _squared_norm(parts: Params) -> float:
    """The squared norm of ``parts``, their squared sums added left to right.

    Not the builtin ``sum()``: over floats it compensates its rounding from Python 3.12
    (Neumaier) and not on 3.11, so its last bit differed by interpreter, and the EM grew
    that into differences of 0.006 in an item bootstrap's interval. Plain float additions
    in a fixed order give the same bits on every Python (3.11's, which fixed the shipped
    numbers).
    """
    total = 0.0
    for x in parts:
        total += float(np.sum(x * x))
    return total


def extrapolate(x0: Params, r_parts: Params, v_parts: Params, alpha: float, nonneg: bool) -> Params:
    """The extrapolated point ``x0 - 2 alpha r + alpha^2 v`` (``V`` clipped at 0 if
    ``nonneg``)."""
    U_e = x0[0] - 2 * alpha * r_parts[0] + alpha * alpha * v_parts[0]
    V_e = x0[1] - 2 * alpha * r_parts[1] + alpha * alpha * v_parts[1]
    b_e = x0[2] - 2 * alpha * r_parts[2] + alpha * alpha * v_parts[2]
    if nonneg:
        np.maximum(V_e, 0.0, out=V_e)
    return U_e, V_e, b_e


def next_step_max(step_max: float, alpha: float, accepted: bool) -> float:
    """The step bound after an extrapolation: x4 (at most 1e4) after an accepted step at the
    bound, unchanged after a shorter accepted one, /4 (at least 1) after a rejected one."""
    if accepted:
        return min(step_max * 4.0, 1e4) if -alpha >= step_max else step_max
    return max(1.0, step_max / 4.0)


def relative_change(new: Params, old: Params) -> float:
    """Largest parameter change, relative to ``1 + `` the largest parameter of ``new``."""
    scale = 1.0 + max(np.abs(new[0]).max(), np.abs(new[1]).max(), np.abs(new[2]).max())
    change = max(
        np.abs(new[0] - old[0]).max(), np.abs(new[1] - old[1]).max(), np.abs(new[2] - old[2]).max()
    )
    return float(change / scale)


def remaining_gap(history: list[float], window: int = 10) -> float:
    """Estimated distance of the objective from its limit, from the recent decreases.

    MM converges linearly, so the decreases shrink geometrically at some rate rho; on
    ill-conditioned data (rho near 1) the rest of the way is far larger than the last step.
    With S1 the sum of the last ``w`` decreases and S0 the sum of the ``w`` before
    (``w = min(window, n // 2)``; sums smooth out the irregular accelerated steps), the rate
    over a window is q = S1 / S0 and the distance still to go is about ``S1 q / (1 - q)``.
    Returns the larger of that and the last decrease, so ``tol`` bounds the relative distance
    to the limit rather than the size of one step.
    """
    decreases = np.maximum(-np.diff(np.asarray(history, dtype=float)), 0.0)
    if decreases.size < 2:
        return float("inf")
    w = max(1, min(window, decreases.size // 2))
    recent = float(decreases[-w:].sum())
    older = float(decreases[-2 * w : -w].sum())
    last = float(decreases[-1])
    if older <= 0.0:
        return last
    q = min(recent / older, 0.9999)
    return max(last, recent * q / (1.0 - q))
