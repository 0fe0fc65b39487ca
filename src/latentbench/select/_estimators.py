"""Doubly robust (AIPW / PPI++ style) per-round estimates and the plug-in lambda rule.

Pure array functions; see ``docs/selection.md``. Notation for one round that pulls arm i:
``O`` are the items already observed, ``P`` the unobserved pool (size ``N``), ``b`` the batch
drawn from ``P`` with inclusion probabilities ``pi_j``, ``f`` the current proxy and ``lam`` the
weight on the proxy, both fixed before the draw.
"""

from __future__ import annotations

import numpy as np

from latentbench.exceptions import InputError

__all__ = [
    "dr_draw_estimates",
    "dr_round_estimate",
    "dr_round_variance",
    "plugin_lambda",
]


def dr_round_estimate(
    observed_sum: float | np.ndarray,
    pool_prediction_sum: float | np.ndarray,
    batch_scores: np.ndarray,
    batch_predictions: np.ndarray,
    inclusion: float | np.ndarray,
    lam: float | np.ndarray,
    n_items: int,
) -> np.ndarray:
    """Clean doubly robust estimate of one arm's mean from one round (``docs/selection.md``).

    ``Z = (sum_O Y + lam * sum_P f + sum_b (Y - lam * f) / pi) / n``.

    Unbiased for the finite-population mean whatever ``f`` and ``lam`` are, provided both
    (and ``pi``) are fixed before the batch is drawn. Observed cells enter only through their
    exact scores; their predictions do not appear (no stale-prediction bias).

    Parameters
    ----------
    observed_sum : float or ndarray of shape (R,)
        ``sum_{j in O} Y_j`` before the draw.
    pool_prediction_sum : float or ndarray of shape (R,)
        ``sum_{j in P} f_j`` over the unobserved pool before the draw.
    batch_scores, batch_predictions : ndarray of shape (B,) or (R, B)
        Scores and current predictions of the drawn batch.
    inclusion : float or ndarray of shape (B,) or (R, B)
        Inclusion probability ``pi_j`` of each drawn item (``B / N`` for uniform sampling).
    lam : float or ndarray of shape (R,)
        Proxy weight in [0, 1]: 0 gives Horvitz-Thompson, 1 gives AIPW.
    n_items : int
        Benchmark size ``n``.

    Returns
    -------
    ndarray of shape () or (R,)
        The per-round estimate(s).
    """
    y = np.asarray(batch_scores, dtype=np.float64)
    f = np.asarray(batch_predictions, dtype=np.float64)
    pi = np.asarray(inclusion, dtype=np.float64)
    lam_arr = np.asarray(lam, dtype=np.float64)
    if np.any(pi <= 0) or np.any(pi > 1):
        raise InputError("inclusion must lie in (0, 1]")
    lam_b = lam_arr[..., None] if lam_arr.ndim and y.ndim > 1 else lam_arr
    correction = ((y - lam_b * f) / pi).sum(axis=-1)
    total = np.asarray(observed_sum) + lam_arr * np.asarray(pool_prediction_sum) + correction
    return np.asarray(total / n_items, dtype=np.float64)


def plugin_lambda(
    pool_sum: np.ndarray | float,
    pool_sq_sum: np.ndarray | float,
    inclusion: np.ndarray | float,
    zbar: np.ndarray | float,
    zcount: np.ndarray | int,
) -> np.ndarray:
    """Predictable plug-in lambda of the reference release (``docs/selection.md``, Choosing λ).

    With ``F = sum_P f``, ``Q = (1 - pi) / pi * sum_P f^2`` and ``zbar`` the running mean of the
    arm's past corrections ``z_s = sum_{b_s} (Y - lam_s f) / pi_s`` since the last refit::

        lam = 1                                   if zcount == 0, zbar <= 0 or Q + F^2 <= 0
        lam = clip(1 - F * zbar / (Q + F^2), 0, 1) otherwise

    Any value in [0, 1] fixed before the draw keeps the estimate unbiased; this rule only
    aims at a small variance.

    Parameters
    ----------
    pool_sum, pool_sq_sum : float or ndarray of shape (R,)
        ``sum_P f`` and ``sum_P f^2``.
    inclusion : float or ndarray of shape (R,)
        Uniform inclusion probability ``B' / N``.
    zbar : float or ndarray of shape (R,)
        Running mean of past corrections.
    zcount : int or ndarray of shape (R,)
        Number of corrections in ``zbar``.

    Returns
    -------
    ndarray of shape () or (R,)
        lambda in [0, 1].
    """
    F = np.asarray(pool_sum, dtype=np.float64)
    pi = np.asarray(inclusion, dtype=np.float64)
    Q = (1.0 - pi) / pi * np.asarray(pool_sq_sum, dtype=np.float64)
    zb = np.asarray(zbar, dtype=np.float64)
    denom = Q + F * F
    use_one = (np.asarray(zcount) == 0) | (zb <= 0) | (denom <= 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.clip(1.0 - F * zb / np.where(denom > 0, denom, 1.0), 0.0, 1.0)
    return np.where(use_one, 1.0, lam)


def dr_round_variance(
    pool_sum: np.ndarray | float,
    pool_sq_sum: np.ndarray | float,
    pool_size: np.ndarray | int,
    batch: np.ndarray | int,
    lam: np.ndarray | float,
    n_items: int,
) -> np.ndarray:
    """Model-based prediction of ``Var(Z | past)`` for uniform sampling (``docs/selection.md``).

    ``(N/n)^2 (1/B' - 1/N) s2`` where ``s2`` is the pool variance of ``r = Y - lam f`` computed
    as if ``Y_j ~ Bernoulli(f_j)``. It depends only on the past, so weights built from it are
    predictable and keep a weighted average of per-round estimates unbiased.

    Parameters
    ----------
    pool_sum, pool_sq_sum : float or ndarray of shape (R,)
        ``sum_P f`` and ``sum_P f^2``.
    pool_size : int or ndarray of shape (R,)
        ``N``.
    batch : int or ndarray of shape (R,)
        ``B' = min(B, N)``.
    lam : float or ndarray of shape (R,)
        Proxy weight used in the round.
    n_items : int
        ``n``.

    Returns
    -------
    ndarray of shape () or (R,)
        Predicted variance (>= 0; exactly 0 when the batch empties the pool).
    """
    F = np.asarray(pool_sum, dtype=np.float64)
    F2 = np.asarray(pool_sq_sum, dtype=np.float64)
    N = np.maximum(np.asarray(pool_size, dtype=np.float64), 1.0)
    Bp = np.asarray(batch, dtype=np.float64)
    lam_a = np.asarray(lam, dtype=np.float64)
    mean_f, mean_f2 = F / N, F2 / N
    second = mean_f - 2.0 * lam_a * mean_f2 + lam_a**2 * mean_f2
    s2 = np.maximum(second - ((1.0 - lam_a) * mean_f) ** 2, 0.0) * N / np.maximum(N - 1.0, 1.0)
    return (N / n_items) ** 2 * np.maximum(1.0 / Bp - 1.0 / N, 0.0) * s2


def dr_draw_estimates(
    observed_sum: float,
    pool_prediction_sum: float,
    batch_scores: np.ndarray,
    batch_predictions: np.ndarray,
    lam: float,
    pool_size: int,
    n_items: int,
) -> np.ndarray:
    """Per-draw DR estimates of one uniform batch, read as ``B'`` successive single draws.

    A uniform ``B'``-subset taken in random order is a sequence of single uniform draws
    without replacement. The ``l``-th draw (0-based) has pool ``P_l`` of size ``N - l`` and the
    single-draw estimate

    ``Z_l = (sum_{O_l} Y + lam * sum_{P_l} f + (N - l) (Y_l - lam f_l)) / n``,

    whose conditional mean given everything before it (earlier draws of the batch included)
    is the arm's mean, because ``lam`` and ``f`` are fixed for the whole batch. The confidence
    sequences use these ``B'`` martingale increments per round: their range is that of one
    item while their number grows ``B'`` times faster, which removes the range-dominated
    lower-order term a per-batch sequence would have. The mean of the ``Z_l`` differs from
    :func:`dr_round_estimate`; both are unbiased.

    Parameters
    ----------
    observed_sum : float
        ``sum_O Y`` before the batch.
    pool_prediction_sum : float
        ``sum_P f`` before the batch.
    batch_scores, batch_predictions : ndarray of shape (B',)
        In draw order.
    lam : float
    pool_size : int
        ``N`` before the batch.
    n_items : int

    Returns
    -------
    ndarray of shape (B',)
    """
    y = np.asarray(batch_scores, dtype=np.float64)
    f = np.asarray(batch_predictions, dtype=np.float64)
    before_y = np.concatenate(([0.0], np.cumsum(y)[:-1]))
    before_f = np.concatenate(([0.0], np.cumsum(f)[:-1]))
    remaining = pool_size - np.arange(y.size, dtype=np.float64)
    return (
        observed_sum + before_y + lam * (pool_prediction_sum - before_f) + remaining * (y - lam * f)
    ) / n_items
