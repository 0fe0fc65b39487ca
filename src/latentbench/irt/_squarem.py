"""SQUAREM extrapolation and the stopping measures shared by the dense and sparse cBMM loops.

SQUAREM (Varadhan & Roland 2008, scheme S3): from a point ``x0`` and two MM sweeps ``x1``,
``x2``, with ``r = x1 - x0`` and ``v = x2 - 2 x1 + x0``, the extrapolated point is
``x0 - 2 alpha r + alpha^2 v`` with ``alpha = -clip(|r| / |v|, 1, step_max)``. The caller keeps
it only if its objective is not above the MM point's (the monotone safeguard); the step bound
grows after an accepted long step and shrinks after a rejected one.

A point is the tuple ``(U, V, b)`` of arrays of shape (N, r), (J, r), (J,).
"""

from __future__ import annotations

import numpy as np

__all__ = ["extrapolate", "next_step_max", "relative_change", "remaining_gap", "squarem_step"]

Params = tuple[np.ndarray, np.ndarray, np.ndarray]


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
    r_norm = np.sqrt(sum(float(np.sum(x * x)) for x in r_parts))
    v_norm = np.sqrt(sum(float(np.sum(x * x)) for x in v_parts))
    alpha = -min(max(r_norm / v_norm, 1.0), step_max) if v_norm > 0 else -1.0
    return alpha, r_parts, v_parts


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
