"""Betting confidence sequences for finite-population means sampled without replacement.

For one arm the items are revealed in the order of a uniform random permutation (batch sizes
may depend on the past; the order does not). Before item ``t`` is revealed, the remaining
pool ``P_t`` has ``N_t`` items and the observed scores sum to ``S_t``. With a prediction
``f_j`` and a weight ``lam`` both fixed before the draw, the residual ``R_t = Y_t - lam f_t``
of the next item has, for a candidate mean ``m`` of the arm, the conditional mean

    m_t(m) = (n m - S_t - lam F_t) / N_t,      F_t = sum of f over P_t,

so ``R_t - m_t(mu)`` is a martingale difference whatever the predictions (the per-cell doubly
robust term, ``n (Z_t - mu) / N_t``). For every candidate ``m`` on a grid we bet on it with
the hedged capital of Waudby-Smith & Ramdas ("Estimating means of bounded random variables
by betting", JRSSB 2024, with the without-replacement construction of their "Confidence
sequences for sampling without replacement", NeurIPS 2020):

    K_t(m) = theta prod (1 + b+_s (R_s - m_s)) + (1 - theta) prod (1 - b-_s (R_s - m_s)),

with predictable plug-in bets scaled to each cell's weight in the mean. A cell revealed from
a pool of ``N_t`` items moves the conditional mean by ``a_t = n / N_t`` per unit of ``m``, so
the bet on it is ``a_t`` times a base bet, ``b_t = a_t sqrt(2 log(2 / a) / (sigma2 max(A_t, h)))``
with ``A_t = sum_{s <= t} a_s^2`` the *effective* number of cells (``A_t = t`` for an infinite
population, ``n t / (n - t)`` roughly under sampling without replacement). With the bet
proportional to ``a_t`` the capital grows like ``delta^2 A_t / (2 sigma2)`` at a distance
``delta`` from the mean, so the interval shrinks with the finite-population factor
``sqrt(1 - t / n)`` as a normal approximation does (unscaled bets gain only part of it). The
capital is averaged over a few horizons ``h`` (in effective cells) with fixed prior weights
(a mixture of capital processes), and every bet is truncated to ``c / (m_s - lo_s)`` and
``c / (hi_s - m_s)``, where ``[lo_s, hi_s]`` is the true range of ``R_s`` given the
predictions (``[-lam max f, 1 - lam min f]`` over the pool). ``K_t(mu)`` is a
nonnegative martingale, so by Ville's inequality ``{m : K_t(m) < 1 / a}`` covers ``mu`` at every
``t`` simultaneously with probability ``1 - a``; a rejected candidate stays rejected (running
intersection). The interval is further intersected with the deterministic bounds
``[S_t / n, (S_t + N_t) / n]``, so a fully evaluated arm has ``lower == upper == mean``.

Arms get level ``alpha / n_arms`` (union bound), so the intervals are simultaneous over arms
and time, also under adaptive choice of arms and batch sizes.

Certifying the best needs less than simultaneous coverage (:meth:`BettingConfSeq.certificate`).
The up-bets alone (``K+``, a nonnegative martingale at ``mu`` by itself) give a lower bound and
the down-bets alone an upper bound. If the true best ``i*`` keeps its upper bound and every
other arm keeps its lower bound, no arm ``j != i*`` can have its lower bound above the upper
bound of ``i*``, so a best certified with these bounds is wrong with probability at most
``a_up + (n_arms - 1) a_low``: ``a_up = alpha / 2`` for every upper bound (no union bound:
only the upper bound of the one true best is used) and ``a_low = alpha / (2 (n_arms - 1))``
for every lower bound; any other fixed split ``a_up = s alpha``,
``a_low = (1 - s) alpha / (n_arms - 1)`` gives the same total (``certificate_split``). The
same events bound a certificate within a tolerance ``epsilon`` (the recommendation's lower
bound above every other upper bound minus ``epsilon``) and one that skips fully revealed
rivals at or below a fully revealed recommendation (:mod:`latentbench.select._certify`). The
certificate bounds are not simultaneous over arms. Capitals are updated from the lowest
candidate that the interval or the certificate's lower bound has not rejected to the highest
that the interval or the upper bound has not rejected; outside that range a candidate is never
rejected afterwards (which can only widen a bound).

The certificate's one-sided mixtures may weight the horizons differently from the interval
(``certificate_weights``) and may include one more capital process per arm whose bets the
caller sizes before each batch for the distance the bound has to cover (``target_weight``,
:meth:`BettingConfSeq.set_target`). Any predictable bet keeps a capital a nonnegative
martingale at the true mean and any fixed-weight mixture of such capitals too, so the
argument above is unchanged.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from latentbench._numba_cache import CACHE
from latentbench.exceptions import InputError

__all__ = ["BettingConfSeq"]

_TOLERANCE = 1e-7
"""A candidate whose conditional mean leaves the range of the residual by more than this is
impossible (the tolerance absorbs rounding in the pool sums)."""


HORIZONS = (200, 800, 3200, 12800)
"""The default horizons of :class:`BettingConfSeq`'s mixture, in effective cells."""


def checked_weights(weights: object, horizons: tuple[float, ...] = HORIZONS) -> np.ndarray:
    """``weights`` as one positive finite weight per horizon, shape (len(horizons),), or an
    :class:`~latentbench.exceptions.InputError` naming ``certificate_weights``."""
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        w = np.full(1, np.nan)
    if w.shape != (len(horizons),) or not (np.isfinite(w) & (w > 0)).all():
        raise InputError(
            f"certificate_weights={weights!r}; expected 'uniform' or {len(horizons)} positive "
            f"weights, one per horizon {tuple(int(h) for h in horizons)}"
        )
    return w


def _shifted_cumsum(v: np.ndarray) -> np.ndarray:
    """Sums of the entries before each position, shape (len(v),)."""
    out = np.zeros(v.size)
    np.cumsum(v[:-1], out=out[1:])
    return out


def _capital_pass_reference(
    grid: np.ndarray,
    n: int,
    offset: np.ndarray,
    pool: np.ndarray,
    r: np.ndarray,
    lo: float,
    hi: float,
    bet: np.ndarray,
    c: float,
    log_up: np.ndarray,
    log_down: np.ndarray,
) -> np.ndarray:
    """One batch's bets on the candidates ``grid``, with NumPy (the kernel's specification).

    Parameters
    ----------
    grid : ndarray of shape (S,)
        Candidate means.
    n : int
        Population size.
    offset, pool : ndarray of shape (b,)
        ``S_t + lam F_t`` and ``N_t`` before each cell.
    r : ndarray of shape (b,)
        Residuals ``y - lam f``.
    lo, hi : float
        Range of the residuals given the predictions.
    bet : ndarray of shape (H, b)
        Base bet per horizon and cell.
    c : float
        Largest fraction of the capital at stake.
    log_up, log_down : ndarray of shape (H, S)
        Log capitals of the up- and down-bets, updated in place.

    Returns
    -------
    ndarray of bool, shape (S,)
        Candidates made impossible by the batch (conditional mean outside the range).
    """
    mt = (n * grid[None, :] - offset[:, None]) / pool[:, None]
    x = r[:, None] - mt
    with np.errstate(divide="ignore"):
        cap_up = np.where(mt > lo, c / np.maximum(mt - lo, 1e-300), np.inf)
        cap_down = np.where(mt < hi, c / np.maximum(hi - mt, 1e-300), np.inf)
    up = np.minimum(bet[:, :, None], cap_up[None])
    down = np.minimum(bet[:, :, None], cap_down[None])
    log_up += np.log1p(np.maximum(up * x, -0.999)).sum(axis=1)
    log_down += np.log1p(np.maximum(-down * x, -0.999)).sum(axis=1)
    impossible: np.ndarray = ((mt < lo - _TOLERANCE) | (mt > hi + _TOLERANCE)).any(axis=0)
    return impossible


@numba.njit(cache=CACHE, error_model="numpy")
def _capital_pass(
    grid: np.ndarray,
    n: int,
    offset: np.ndarray,
    pool: np.ndarray,
    r: np.ndarray,
    lo: float,
    hi: float,
    bet: np.ndarray,
    c: float,
    log_up: np.ndarray,
    log_down: np.ndarray,
) -> np.ndarray:  # pragma: no cover - compiled; checked against the reference
    """:func:`_capital_pass_reference`, loops over cells, horizons and candidates (the hot path).

    The factors ``1 + bet x`` of a batch are multiplied and their product's log taken once
    (or whenever the product leaves [1e-100, 1e100]), instead of a log per cell. The
    candidates are the innermost loop (independent of each other, so the compiler runs
    several at once in vector registers); each candidate's products and logs are the same
    operations in the same order as a loop over candidates outside the cells, so the
    capitals are the same to the bit.
    """
    H, b = bet.shape
    S = grid.size
    impossible = np.zeros(S, dtype=np.bool_)
    prod_up = np.ones((H, S))
    prod_down = np.ones((H, S))
    x = np.empty(S)
    cap_up = np.empty(S)
    cap_down = np.empty(S)
    for t in range(b):
        off, size, rt = offset[t], pool[t], r[t]
        for k in range(S):
            mt = (n * grid[k] - off) / size
            if mt < lo - _TOLERANCE or mt > hi + _TOLERANCE:
                impossible[k] = True
            x[k] = rt - mt
            cap_up[k] = c / max(mt - lo, 1e-300) if mt > lo else np.inf
            cap_down[k] = c / max(hi - mt, 1e-300) if mt < hi else np.inf
        for h in range(H):
            bh = bet[h, t]
            pu = prod_up[h]
            pd = prod_down[h]
            out = False
            for k in range(S):
                u = pu[k] * (1.0 + max(min(bh, cap_up[k]) * x[k], -0.999))
                d = pd[k] * (1.0 + max(-min(bh, cap_down[k]) * x[k], -0.999))
                pu[k] = u
                pd[k] = d
                out |= not (1e-100 < u < 1e100) or not (1e-100 < d < 1e100)
            if out:  # rare: a product left [1e-100, 1e100]; log it and restart at 1
                for k in range(S):
                    if not 1e-100 < pu[k] < 1e100:
                        log_up[h, k] += math.log(pu[k])
                        pu[k] = 1.0
                    if not 1e-100 < pd[k] < 1e100:
                        log_down[h, k] += math.log(pd[k])
                        pd[k] = 1.0
    for h in range(H):
        for k in range(S):
            log_up[h, k] += math.log(prod_up[h, k])
            log_down[h, k] += math.log(prod_down[h, k])
    return impossible


def _mix_and_reject_reference(
    log_up: np.ndarray,
    log_down: np.ndarray,
    log_weight: np.ndarray,
    log_weight_cert: np.ndarray,
    log_theta: float,
    log_theta_down: float,
    thresholds: np.ndarray,
    impossible: np.ndarray,
    rejected: np.ndarray,
    rejected_low: np.ndarray,
    rejected_up: np.ndarray,
) -> None:
    """The capitals' mixtures and the rejections they make, with NumPy (the specification).

    Parameters
    ----------
    log_up, log_down : ndarray of shape (R, S)
        Log capitals of the up- and down-bets per capital process and candidate; the first
        ``H = len(log_weight)`` rows are the fixed horizons.
    log_weight : ndarray of shape (H,)
        Log prior weights of the horizons in the hedged interval.
    log_weight_cert : ndarray of shape (R,)
        Log prior weights of every process in the certificate's one-sided mixtures.
    log_theta, log_theta_down : float
        ``log theta`` and ``log (1 - theta)``, the hedge's weights.
    thresholds : ndarray of shape (3,)
        Log thresholds of the interval, the certificate's lower and its upper bound.
    impossible : ndarray of bool, shape (S,)
        Candidates made impossible by the batch.
    rejected, rejected_low, rejected_up : ndarray of bool, shape (S,)
        Rejections of the interval, of the certificate's lower and upper bounds, updated in
        place (a rejected candidate stays rejected).
    """
    H = log_weight.size
    mix_up = np.logaddexp.reduce(log_up[:H] + log_weight[:, None], axis=0)
    mix_down = np.logaddexp.reduce(log_down[:H] + log_weight[:, None], axis=0)
    log_capital = np.logaddexp(log_theta + mix_up, log_theta_down + mix_down)
    rejected |= impossible | (log_capital >= thresholds[0])
    cert_up = np.logaddexp.reduce(log_up + log_weight_cert[:, None], axis=0)
    cert_down = np.logaddexp.reduce(log_down + log_weight_cert[:, None], axis=0)
    rejected_low |= impossible | (cert_up >= thresholds[1])
    rejected_up |= impossible | (cert_down >= thresholds[2])


@numba.njit(cache=CACHE)
def _logaddexp(a: float, b: float) -> float:  # pragma: no cover - compiled
    """``numpy.logaddexp`` of two floats, with its branches (the same value)."""
    if a == b:
        return a + math.log(2.0)
    d = a - b
    if d > 0:
        return a + math.log1p(math.exp(-d))
    if d <= 0:
        return b + math.log1p(math.exp(d))
    return d  # nan


@numba.njit(cache=CACHE)
def _mixture(log_c: np.ndarray, k: int, log_weight: np.ndarray) -> float:
    """``logaddexp.reduce(log_c[:, k] + log_weight)`` in NumPy's order (the same value)."""
    acc = float(log_c[0, k] + log_weight[0])
    for h in range(1, log_weight.size):
        acc = _logaddexp(acc, log_c[h, k] + log_weight[h])
    return acc


@numba.njit(cache=CACHE)
def _mix_and_reject(
    log_up: np.ndarray,
    log_down: np.ndarray,
    log_weight: np.ndarray,
    log_weight_cert: np.ndarray,
    log_theta: float,
    log_theta_down: float,
    thresholds: np.ndarray,
    impossible: np.ndarray,
    rejected: np.ndarray,
    rejected_low: np.ndarray,
    rejected_up: np.ndarray,
) -> None:  # pragma: no cover - compiled; checked against the reference
    """:func:`_mix_and_reject_reference`, one loop over candidates (the hot path).

    Exact sums only near a threshold (within ``band`` nats of it): the same rejections as the
    reference with a few logarithms per batch instead of a dozen per candidate.
    """
    H = log_weight.size
    R = log_weight_cert.size
    band, band_cert = math.log(2.0 * H) + 1e-9, math.log(R) + 1e-9
    for k in range(log_up.shape[1]):
        if impossible[k]:
            rejected[k] = rejected_low[k] = rejected_up[k] = True
            continue
        # each mixture is at least its largest term (summed in the reference's order, so the
        # reference's value is at least this one) and at most that plus log(#terms): only a
        # candidate with a threshold inside that band needs the mixture itself
        if not rejected[k]:
            top_up, top_down = -np.inf, -np.inf
            for h in range(H):
                top_up = max(top_up, log_up[h, k] + log_weight[h])
                top_down = max(top_down, log_down[h, k] + log_weight[h])
            top = max(log_theta + top_up, log_theta_down + top_down)
            if top >= thresholds[0]:
                rejected[k] = True
            elif top + band >= thresholds[0]:
                log_capital = _logaddexp(
                    log_theta + _mixture(log_up[:H], k, log_weight),
                    log_theta_down + _mixture(log_down[:H], k, log_weight),
                )
                rejected[k] = log_capital >= thresholds[0]
        if not (rejected_low[k] and rejected_up[k]):
            top_up, top_down = -np.inf, -np.inf
            for h in range(R):
                top_up = max(top_up, log_up[h, k] + log_weight_cert[h])
                top_down = max(top_down, log_down[h, k] + log_weight_cert[h])
            if not rejected_low[k]:
                if top_up >= thresholds[1]:
                    rejected_low[k] = True
                elif top_up + band_cert >= thresholds[1]:
                    rejected_low[k] = _mixture(log_up, k, log_weight_cert) >= thresholds[1]
            if not rejected_up[k]:
                if top_down >= thresholds[2]:
                    rejected_up[k] = True
                elif top_down + band_cert >= thresholds[2]:
                    rejected_up[k] = _mixture(log_down, k, log_weight_cert) >= thresholds[2]


@numba.njit(cache=CACHE, error_model="numpy")
def _batch_bets(
    y: np.ndarray,
    f: np.ndarray,
    lam: float,
    n: int,
    t0: int,
    sum_y: float,
    pool_sum: float,
    sum_r: float,
    sum_dev: float,
    effective: np.ndarray,
    bet_log: np.ndarray,
    horizons: np.ndarray,
    target: float,
    target_log: float,
    targeted: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """A batch's pool sizes, offsets, residuals, squared deviations and bets, one pass.

    The same operations in the same order as the NumPy expressions they replace in
    :meth:`BettingConfSeq.update` (running sums from the first cell, as ``numpy.cumsum``;
    elementwise ``+ - * /`` and ``sqrt`` are correctly rounded either way), so the same bits
    with one call instead of a few dozen small array operations.

    Parameters
    ----------
    y, f : ndarray of shape (b,)
        Scores and predictions in reveal order.
    lam : float
        Proxy weight.
    n, t0 : int
        Population size and the arm's cells before the batch.
    sum_y, pool_sum : float
        The arm's revealed sum and the predictions' sum over its pool, before the batch.
    sum_r, sum_dev : float
        The arm's sums of residuals and of squared deviations before the batch.
    effective : ndarray of shape (b,)
        Effective cells ``A_t`` at the batch's cells.
    bet_log, horizons : ndarray of shape (H,)
        Each horizon's threshold and size in effective cells.
    target, target_log : float
        The targeted process's distance and threshold (used when ``targeted``).
    targeted : bool
        Add the targeted process's bets as a last row.

    Returns
    -------
    pool, offset, r, dev : ndarray of shape (b,)
        ``N_t``, ``S_t + lam F_t``, ``y - lam f`` and ``(r - mean before the cell)^2``.
    bet : ndarray of shape (H + targeted, b)
        Base bets per capital process and cell.
    """
    b = y.size
    H = bet_log.size
    pool = np.empty(b)
    offset = np.empty(b)
    r = np.empty(b)
    dev = np.empty(b)
    bet = np.empty((H + (1 if targeted else 0), b))
    mean0 = 0.5 + sum_r
    var0 = 0.25 + sum_dev
    cum_y = cum_f = cum_r = cum_dev = 0.0  # sums of the cells before t (0 before the first)
    for t in range(b):
        size = (n - t0) - float(t)
        pool[t] = size
        offset[t] = (sum_y + cum_y) + lam * (pool_sum - cum_f)
        rt = y[t] - lam * f[t]
        r[t] = rt
        k = float(t0) + float(t + 1)
        mean_prev = (mean0 + cum_r) / k
        d = (rt - mean_prev) * (rt - mean_prev)
        dev[t] = d
        var_prev = (var0 + cum_dev) / k
        weight = n / size
        eff = effective[t]
        for h in range(H):
            bet[h, t] = weight * math.sqrt(2.0 * bet_log[h] / (var_prev * max(eff, horizons[h])))
        if targeted:
            base = min(target / var_prev, math.sqrt(2.0 * target_log / (var_prev * eff)))
            bet[H, t] = weight * max(base, 0.0)
        if t == 0:  # numpy.cumsum starts from the first entry, not from 0 + it
            cum_y, cum_f, cum_r, cum_dev = y[0], f[0], rt, d
        else:
            cum_y += y[t]
            cum_f += f[t]
            cum_r += rt
            cum_dev += d
    return pool, offset, r, dev, bet


@numba.njit(cache=CACHE)
def _ends(rejected: np.ndarray) -> tuple[int, int]:  # pragma: no cover - compiled
    """First and last candidate not rejected in a row of shape (S,); ``-1`` for none."""
    first = last = -1
    for k in range(rejected.size):
        if not rejected[k]:
            first = k
            break
    for k in range(rejected.size - 1, -1, -1):
        if not rejected[k]:
            last = k
            break
    return first, last


@numba.njit(cache=CACHE)
def _alive_ends(
    rejected: np.ndarray, rejected_low: np.ndarray, rejected_up: np.ndarray
) -> tuple[int, int, int, int, int, int]:  # pragma: no cover - compiled
    """:func:`_ends` of the interval's, the certificate's lower and upper bound's rows."""
    a0, a1 = _ends(rejected)
    l0, l1 = _ends(rejected_low)
    u0, u1 = _ends(rejected_up)
    return a0, a1, l0, l1, u0, u1


def _wager_reference(
    log_up: np.ndarray,
    log_down: np.ndarray,
    rejected: np.ndarray,
    rejected_low: np.ndarray,
    rejected_up: np.ndarray,
    first: int,
    last: int,
    grid: np.ndarray,
    n: int,
    offset: np.ndarray,
    pool: np.ndarray,
    r: np.ndarray,
    lo: float,
    hi: float,
    bet: np.ndarray,
    c: float,
    log_weight: np.ndarray,
    log_weight_cert: np.ndarray,
    log_theta: float,
    log_theta_down: float,
    thresholds: np.ndarray,
) -> None:
    """:func:`_wager` with the NumPy specifications of its two kernels (for benchmarks).

    Parameters
    ----------
    log_up, log_down : ndarray of shape (R, S)
        One arm's log capitals, updated in place on candidates ``first..last``.
    rejected, rejected_low, rejected_up : ndarray of bool, shape (S,)
        The arm's rejections, updated in place.
    first, last : int
        The candidates bet on.
    grid : ndarray of shape (S,)
        Every candidate mean.
    n : int
        Population size.
    offset, pool, r : ndarray of shape (b,)
        As in :func:`_capital_pass_reference`.
    lo, hi : float
        Range of the residuals.
    bet : ndarray of shape (R, b)
        Base bets.
    c : float
        Largest fraction of the capital at stake.
    log_weight, log_weight_cert : ndarray
        As in :func:`_mix_and_reject_reference`.
    log_theta, log_theta_down : float
        The hedge's log weights.
    thresholds : ndarray of shape (3,)
        Log thresholds.
    """
    sl = slice(first, last + 1)
    up, down = np.ascontiguousarray(log_up[:, sl]), np.ascontiguousarray(log_down[:, sl])
    impossible = _capital_pass_reference(grid[sl], n, offset, pool, r, lo, hi, bet, c, up, down)
    log_up[:, sl], log_down[:, sl] = up, down
    _mix_and_reject_reference(
        up,
        down,
        log_weight,
        log_weight_cert,
        log_theta,
        log_theta_down,
        thresholds,
        impossible,
        rejected[sl],
        rejected_low[sl],
        rejected_up[sl],
    )


@numba.njit(cache=CACHE)
def _wager(
    log_up: np.ndarray,
    log_down: np.ndarray,
    rejected: np.ndarray,
    rejected_low: np.ndarray,
    rejected_up: np.ndarray,
    first: int,
    last: int,
    grid: np.ndarray,
    n: int,
    offset: np.ndarray,
    pool: np.ndarray,
    r: np.ndarray,
    lo: float,
    hi: float,
    bet: np.ndarray,
    c: float,
    log_weight: np.ndarray,
    log_weight_cert: np.ndarray,
    log_theta: float,
    log_theta_down: float,
    thresholds: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """:func:`_capital_pass` then :func:`_mix_and_reject` on one arm's candidates
    ``first..last``, in place on its rows (shapes (R, S) and (S,)): one call, no copies."""
    sl = slice(first, last + 1)
    up, down = log_up[:, sl], log_down[:, sl]
    impossible = _capital_pass(grid[sl], n, offset, pool, r, lo, hi, bet, c, up, down)
    _mix_and_reject(
        up,
        down,
        log_weight,
        log_weight_cert,
        log_theta,
        log_theta_down,
        thresholds,
        impossible,
        rejected[sl],
        rejected_low[sl],
        rejected_up[sl],
    )


class BettingConfSeq:
    """Hedged-capital betting confidence sequences, one per arm, on a grid of candidate means.

    Parameters
    ----------
    n_arms, n_items : int
        Pool size and benchmark size (the finite population of each arm).
    alpha : float, default 0.1
        Simultaneous miscoverage over arms and time.
    union : bool, default True
        Level ``alpha / n_arms`` per arm (simultaneous); ``False`` gives each arm level
        ``alpha`` (per-arm coverage only).
    grid : int, default 1000
        Candidate means ``0, 1/grid, ..., 1``; reported bounds are padded by one step.
    c : float, default 0.5
        Largest fraction of the capital put at stake in one bet.
    theta : float, default 0.5
        Weight of the upward bet in the hedge.
    horizons : tuple of int, default (200, 800, 3200, 12800)
        Horizons of the mixture, in effective cells ``A_t`` (see the module docstring): one
        capital process per horizon ``h``, its base bet sized for ``max(A_t, h)`` effective
        cells. A bet sized for the current ``t`` is about 1.7 times the normal width after
        200 cells, and a bet sized for a fixed ``h`` is within about 6 % of the best
        constant bet for ``t`` between ``h / 2`` and ``2 h``, so a geometric grid with ratio
        4 covers every ``t`` from 100 cells on at that cost plus the prior weight's.
    weights : tuple of float, optional
        Prior weights of the horizons (normalised to sum to 1); by default 0.85 on the
        first horizon and the rest shared equally by the others ((0.85, 0.05, 0.05, 0.05)).
        Each costs ``log(1 / w)`` in the threshold ``log(1 / a)``: most of the weight sits
        on the shortest horizon (the width after a few hundred cells), the longer ones pay
        ``log 20`` (the interval after thousands of cells).
    certificate_weights : "uniform", tuple of float or None, default None
        Prior weights of the horizons in the certificate's one-sided mixtures
        (:meth:`certificate`); None uses ``weights``. Any fixed weights give a valid
        certificate (each mixture of the horizons' capitals is a nonnegative martingale with
        initial value 1). ``"uniform"`` spends ``log(#horizons)`` on every horizon instead of
        ``log 20`` on the long ones: narrower certificates after thousands of effective cells
        (MMLU-Pro), wider after a few hundred (AlpacaEval; ``benchmarks/RESULTS_select.md``
        §3). The bets are unchanged (sized with ``weights``).
    target_weight : float, default 0.0
        Weight, in the certificate's one-sided mixtures, of one more capital process per arm
        whose bet is sized for the distance given by :meth:`set_target` before each batch
        (the fixed horizons share ``1 - target_weight``); 0 adds none.
    certificate_levels : tuple of float, optional
        ``(a_low, a_up)``: the levels of the certificate's lower and upper bounds instead of
        ``alpha / (2 (n_arms - 1))`` and ``alpha / 2``; the bets are then sized for the
        larger of the two (any predictable bet is valid). Used by the paired certificate
        (:mod:`latentbench.select._paired`), one arm per pair.
    certificate_split : float, default 0.5
        Share ``s`` of ``alpha`` on the certificate's upper bounds: each upper bound at level
        ``s alpha``, each lower bound at ``(1 - s) alpha / (n_arms - 1)`` (the module
        docstring's ``a_up`` and ``a_low``; any fixed ``s`` in (0, 1) keeps a certified best
        wrong with probability at most ``a_up + (n_arms - 1) a_low = alpha``). Ignored when
        ``certificate_levels`` is given.

    Raises
    ------
    InputError
        For a level, ``c``, ``theta`` or ``certificate_split`` outside (0, 1), ``grid`` below 2,
        horizons without as many positive weights, or ``target_weight`` outside [0, 1).

    Attributes
    ----------
    count : ndarray of int, shape (n_arms,)
        Cells seen per arm.

    Notes
    -----
    :meth:`interval` gives the hedged, simultaneous intervals; :meth:`certificate` the
    one-sided bounds for a best-arm certificate at level ``alpha`` (module docstring), from the
    same bets.
    """

    def __init__(
        self,
        n_arms: int,
        n_items: int,
        alpha: float = 0.1,
        *,
        union: bool = True,
        grid: int = 1000,
        c: float = 0.5,
        theta: float = 0.5,
        horizons: tuple[int, ...] = HORIZONS,
        weights: tuple[float, ...] | None = None,
        certificate_weights: tuple[float, ...] | str | None = None,
        target_weight: float = 0.0,
        certificate_levels: tuple[float, float] | None = None,
        certificate_split: float = 0.5,
    ) -> None:
        if not 0 < alpha < 1:
            raise InputError(f"alpha={alpha!r}; expected a value in (0, 1)")
        if grid < 2:
            raise InputError(f"grid={grid!r}; expected an integer >= 2")
        if not 0 < c < 1 or not 0 < theta < 1:
            raise InputError(f"c={c!r}, theta={theta!r}; expected values in (0, 1)")
        self.n_arms, self.n_items = int(n_arms), int(n_items)
        self.alpha = float(alpha)
        level = alpha / n_arms if union else alpha
        self._threshold = math.log(1.0 / level)
        # certificate: each lower bound at (1 - s) alpha / (n_arms - 1), each upper bound at
        # s alpha, s = certificate_split (1 / 2 by default; module docstring)
        if not 0 < certificate_split < 1:
            raise InputError(f"certificate_split={certificate_split!r}; expected a value in (0, 1)")
        others = max(self.n_arms - 1, 1) if union else 1
        self._threshold_low = math.log(others / ((1.0 - certificate_split) * alpha))
        self._threshold_up = math.log(1.0 / (certificate_split * alpha))
        bet_threshold = math.log(2.0 / level)
        if certificate_levels is not None:
            a_low, a_up = (float(a) for a in certificate_levels)
            if not (0 < a_low < 1 and 0 < a_up < 1):
                raise InputError(
                    f"certificate_levels={certificate_levels!r}; expected two levels in (0, 1)"
                )
            self._threshold_low = math.log(1.0 / a_low)
            self._threshold_up = math.log(1.0 / a_up)
            bet_threshold = math.log(1.0 / max(a_low, a_up))
        if weights is None:  # 0.85 on the first horizon, the rest shared equally
            k = len(horizons)
            weights = (1.0,) if k == 1 else (0.85,) + (0.15 / (k - 1),) * (k - 1)
        w = np.asarray(weights, dtype=np.float64)
        if len(horizons) == 0 or w.shape != (len(horizons),) or not (w > 0).all():
            raise InputError(
                f"horizons={horizons!r}, weights={weights!r}; expected as many positive "
                "weights as horizons (at least one)"
            )
        self.horizons = np.maximum(np.asarray(horizons, dtype=np.float64), 1.0)
        self._log_weight = np.log(w / w.sum())
        if certificate_weights is None:
            wc = w
        elif isinstance(certificate_weights, str) and certificate_weights == "uniform":
            wc = np.ones(len(horizons))
        else:
            wc = checked_weights(certificate_weights, tuple(horizons))
        if not 0 <= target_weight < 1:
            raise InputError(f"target_weight={target_weight!r}; expected a value in [0, 1)")
        self.target_weight = float(target_weight)
        # the certificate's mixture: the fixed horizons, and (target_weight > 0) one more
        # capital process whose bet is sized for a distance set before each batch
        # (set_target)
        cert = wc / wc.sum() * (1.0 - self.target_weight)
        if self.target_weight > 0:
            cert = np.r_[cert, self.target_weight]
        self._log_weight_cert = np.log(cert)
        self._thresholds = np.array([self._threshold, self._threshold_low, self._threshold_up])
        self._target = np.zeros(self.n_arms)  # distance; 0: no bet
        self._target_log = np.zeros(self.n_arms)  # the threshold the bet is sized for
        # each horizon's bet is sized for its own threshold log(2 / (level w))
        self._bet_log = bet_threshold - self._log_weight
        # effective cells after t cells: A_t = sum_{s <= t} (n / N_s)^2, N_s = n - s + 1
        self._effective = np.cumsum(
            (n_items / (n_items - np.arange(n_items, dtype=np.float64))) ** 2
        )
        self.c, self.theta = float(c), float(theta)
        self._log_theta, self._log_theta_down = math.log(self.theta), math.log1p(-self.theta)
        self._grid = np.linspace(0.0, 1.0, grid + 1)
        self._step = 1.0 / grid
        shape = (self.n_arms, grid + 1)
        rows = self.horizons.size + (self.target_weight > 0)
        # one (rows, S) block per arm, C-contiguous whatever the number of arms, so that
        # _wager is compiled for one signature (a (rows, 1, S) array's [:, 0] was C-contiguous
        # and typed 'C', more arms' 'A': two compiles)
        self._log_up = np.zeros((self.n_arms, rows, grid + 1))
        self._log_down = np.zeros((self.n_arms, rows, grid + 1))
        self._rejected = np.zeros(shape, dtype=bool)
        self._rejected_low = np.zeros(shape, dtype=bool)  # by the up-bets alone
        self._rejected_up = np.zeros(shape, dtype=bool)  # by the down-bets alone
        self.count = np.zeros(self.n_arms, dtype=np.int64)
        self._sum_y = np.zeros(self.n_arms)
        self._sums = np.zeros((self.n_arms, 2))  # sum of residuals, of squared deviations
        self._lower = np.zeros(self.n_arms)
        self._upper = np.ones(self.n_arms)
        self._cert_lower = np.zeros(self.n_arms)
        self._cert_upper = np.ones(self.n_arms)

    def update(
        self,
        arm: int,
        scores: np.ndarray,
        predictions: np.ndarray,
        lam: float,
        pool_sum: float,
        pool_min: float,
        pool_max: float,
        *,
        wager: bool = True,
    ) -> None:
        """Add one batch of an arm, revealed in order from its unobserved pool.

        Parameters
        ----------
        arm : int
        scores : ndarray of shape (b,)
            Revealed scores in [0, 1], in reveal order.
        predictions : ndarray of shape (b,)
            Predictions ``f`` of those items, fixed before the batch was drawn.
        lam : float
            Proxy weight in [0, 1], fixed before the draw.
        pool_sum, pool_min, pool_max : float
            Sum, minimum and maximum of ``f`` over the pool before the batch.
        wager : bool, default True
            False: no bet on these cells (the capitals stay as they are, a bet of 0); they
            still count in the sums, the deterministic bounds and the later bets' variance.
            The paired certificate reveals the initial batch this way when its levels were
            set from that batch (the capitals then start after it).

        Raises
        ------
        InputError
            When the arm would have more cells than items.
        """
        y = np.asarray(scores, dtype=np.float64)
        f = np.asarray(predictions, dtype=np.float64)
        b = y.size
        if b == 0:
            return
        n = self.n_items
        t0 = int(self.count[arm])
        if n - t0 - (b - 1) < 1:  # the pool before the last cell
            raise InputError(f"arm {arm}: more cells than items ({t0 + b} > {n})")
        # the pool N_t and S_t + lam F_t before each cell, the residuals r = y - lam f, and
        # predictable plug-in bets from the residuals before each cell (WSR's PrPl), scaled
        # by the cell's weight a = n / N and sized for max(A_t, h) effective cells per
        # horizon h, shape (H, b); with target_weight > 0 one more row, the targeted
        # process: the bet that makes the capital at the target distance d reach the
        # threshold L soonest, d / var per unit weight, never above the bet sized for the
        # current effective cells (sqrt(2 L / (var A)))
        N, offset, r, dev, bet = _batch_bets(
            y,
            f,
            float(lam),
            n,
            t0,
            float(self._sum_y[arm]),
            float(pool_sum),
            float(self._sums[arm, 0]),
            float(self._sums[arm, 1]),
            self._effective[t0 : t0 + b],
            self._bet_log,
            self.horizons,
            float(self._target[arm]),
            float(self._target_log[arm]),
            self.target_weight > 0,
        )
        # floats whatever the caller passed (an int 0 made lo an int64: a second compile of
        # _wager and _capital_pass)
        lo, hi = float(-lam * pool_max), float(1.0 - lam * pool_min)
        # capitals are updated from the lowest candidate alive in the interval or in the
        # certificate's lower bound to the highest alive in the interval or in its upper bound
        # (the hot path: not the whole grid); a candidate outside that range stays as it is,
        # which can only widen a bound
        a0, a1, l0, _, _, u1 = _alive_ends(
            self._rejected[arm], self._rejected_low[arm], self._rejected_up[arm]
        )
        first = min(k for k in (a0, l0, self._grid.size) if k >= 0)
        last = max(a1, u1)
        if first <= last and wager:
            # bets on every candidate of the range, capitals updated in place (a candidate
            # whose conditional mean leaves the range of R is impossible), then the hedged
            # interval's and the certificate's mixtures and their rejections
            _wager(
                self._log_up[arm],
                self._log_down[arm],
                self._rejected[arm],
                self._rejected_low[arm],
                self._rejected_up[arm],
                first,
                last,
                self._grid,
                n,
                offset,
                N,
                r,
                lo,
                hi,
                bet,
                self.c,
                self._log_weight,
                self._log_weight_cert,
                self._log_theta,
                self._log_theta_down,
                self._thresholds,
            )
        self._sums[arm] += (r.sum(), dev.sum())
        self.count[arm] = t0 + b
        self._sum_y[arm] += y.sum()
        self._refresh(arm)

    def _refresh(self, arm: int) -> None:
        n = self.n_items
        remaining = n - int(self.count[arm])
        det_lo = self._sum_y[arm] / n
        det_hi = (self._sum_y[arm] + remaining) / n
        a0, a1, l0, _, _, u1 = _alive_ends(
            self._rejected[arm], self._rejected_low[arm], self._rejected_up[arm]
        )
        if a0 >= 0:
            lower = max(self._grid[a0] - self._step, det_lo)
            upper = min(self._grid[a1] + self._step, det_hi)
        else:  # every candidate rejected (a miscoverage event): keep the certain bounds
            lower, upper = det_lo, det_hi
        self._lower[arm], self._upper[arm] = max(lower, 0.0), min(upper, 1.0)
        lower = self._grid[l0] - self._step if l0 >= 0 else det_lo
        upper = self._grid[u1] + self._step if u1 >= 0 else det_hi
        self._cert_lower[arm] = min(max(lower, det_lo, 0.0), det_hi)
        self._cert_upper[arm] = max(min(upper, det_hi, 1.0), det_lo)
        if remaining == 0:
            self._lower[arm] = self._upper[arm] = det_lo
            self._cert_lower[arm] = self._cert_upper[arm] = det_lo

    def set_target(self, arm: int, distance: float, lower: bool) -> None:
        """Size the targeted process's bets on ``arm``'s next batch (``target_weight > 0``).

        The bet is the one under which the capital of a candidate ``distance`` away from the
        arm's mean reaches the certificate's threshold (its lower bound's when ``lower``,
        else its upper bound's) soonest; ``distance <= 0`` places no bet. Must be computed
        from the past only (before the batch is drawn); any such value keeps every bound
        valid, since a predictable bet keeps the capital a nonnegative martingale.

        Parameters
        ----------
        arm : int
            The arm whose next batch is bet on.
        distance : float
            How far from the arm's mean the targeted candidate is (``<= 0``: no bet).
        lower : bool
            Target the certificate's lower bound (else its upper bound).
        """
        if self.target_weight <= 0:
            return
        self._target[arm] = max(float(distance), 0.0)
        threshold = self._threshold_low if lower else self._threshold_up
        self._target_log[arm] = threshold - math.log(self.target_weight)

    def set_exact(self, arm: int, value: float) -> None:
        """Mark an arm fully evaluated with mean ``value`` (zero-width interval).

        Parameters
        ----------
        arm : int
            The arm fully evaluated.
        value : float
            Its exact mean.
        """
        self._lower[arm] = self._upper[arm] = value
        self._cert_lower[arm] = self._cert_upper[arm] = value

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """Current ``(lower, upper)`` of every arm, each of shape (n_arms,).

        Returns
        -------
        lower, upper : ndarray of shape (n_arms,)
            Copies.
        """
        return self._lower.copy(), self._upper.copy()

    def certificate(self) -> tuple[np.ndarray, np.ndarray]:
        """One-sided ``(lower, upper)`` bounds for certifying the best, each of shape (n_arms,).

        The arm whose lower bound exceeds every other arm's upper bound is the true best with
        probability at least ``1 - alpha`` (at any time, whatever the stopping rule; module
        docstring). Not simultaneous intervals: report :meth:`interval`.

        Returns
        -------
        lower, upper : ndarray of shape (n_arms,)
            Copies.
        """
        return self._cert_lower.copy(), self._cert_upper.copy()
