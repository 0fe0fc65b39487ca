"""Betting confidence sequence for a mean estimated by unbiased per-round estimates.

Used by :func:`latentbench.select.estimate` (``docs/estimate.md``). Round ``t`` produces an
estimate ``Z_t`` of the finite-population mean ``mu`` with ``E[Z_t | past] = mu`` (the doubly
robust estimate of a draw with known probabilities), a range ``[lo_t, hi_t]`` that ``Z_t``
cannot leave and a predicted conditional variance ``v_t``, all three known before the draw.
For every candidate ``m`` on a grid, ``Z_t - m`` is a martingale difference when ``m = mu``,
so the hedged capital

    K_t(m) = theta prod (1 + l+_s (Z_s - m)) + (1 - theta) prod (1 - l-_s (Z_s - m))

is a nonnegative martingale at ``mu`` whatever the (predictable) bets are; by Ville's
inequality ``{m : K_t(m) < 1 / alpha}`` covers ``mu`` at every ``t`` simultaneously with
probability ``1 - alpha``. This is the construction of :class:`~latentbench.select._betting.
BettingConfSeq` (Waudby-Smith & Ramdas, JRSSB 2024 and NeurIPS 2020: hedged capital, plug-in
bets, a mixture over horizons, truncation to the true range, running intersection), written
for one arm whose rounds have *unequal, predictable* precision instead of uniform draws:

* a round's bet is proportional to its precision ``1 / v_t`` (the Kelly bet at a small edge),
  ``l_t = b_t sqrt(v_ref) / v_t``, with the dimensionless base bet
  ``b_t = sqrt(2 log(2 / (alpha w_h)) / (rho_t max(W_t, h)))`` per horizon ``h``, where
  ``W_t = sum_{s <= t} v_ref / v_s`` counts effective rounds (``v_ref = v_1``) and ``rho_t`` is
  a predictable estimate of the ratio of the true to the predicted variance (the running mean
  of ``(Z_s - C_s)^2 / v_s`` with ``C_s`` the model-only prediction, which over-estimates the
  variance when the predictor is biased: conservative bets);
* every bet is truncated to ``c / (m - lo_t)`` (up) and ``c / (hi_t - m)`` (down), so no factor
  falls below ``1 - c``; a candidate outside ``[lo_t, hi_t]`` is impossible and rejected.

With a ``target`` half-width ``d`` fixed before the first round (the requested precision), one
more capital process per side joins the mixture with weight ``target_weight`` (the horizons
share the rest): its bet is the Kelly bet for a candidate ``d`` away from the mean,
``d / (rho_t v_t)``, never above the bet sized for the current effective rounds, and truncated
at ``target_c`` of the range instead of ``c``. It is one more predictable bet, so the mixture is
still a nonnegative martingale at ``mu`` with initial value 1.

Validity never depends on ``v_t``, ``rho_t`` or ``d`` being right (they only size the bets).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from latentbench._numba_cache import CACHE
from latentbench.exceptions import InputError

__all__ = ["WeightedBettingCS"]

_TOLERANCE = 1e-9


def _logsumexp(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``log(sum(exp(a), axis=0))`` for a (H, ...) array, shape (...). With fewer than 8
    rows (every caller: 5 horizons and the target) the sum over the first axis is in row
    order whatever the other axes, so each element's bits do not depend on them; with 8 or
    more, numpy sums a single remaining column pairwise (other bits than a wider array's).
    ``out``: ``a`` itself, or a C-contiguous array of its shape, to work in (the same bits,
    without temporaries of ``a``'s size; ``a`` is then overwritten)."""
    top = np.maximum.reduce(a, axis=0)  # (a.max and a.sum, without their Python wrappers)
    if out is None:
        return np.asarray(top + np.log(np.add.reduce(np.exp(a - top), axis=0)))
    np.subtract(a, top, out=out)
    np.exp(out, out=out)
    total = np.add.reduce(out, axis=0)
    np.log(total, out=total)
    np.add(top, total, out=total)
    return np.asarray(total)


@numba.njit(cache=CACHE)
def _np_max(a: float, b: float) -> float:
    """``np.maximum`` of two numbers: a NaN propagates."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


@numba.njit(cache=CACHE)
def _np_min(a: float, b: float) -> float:
    """``np.minimum`` of two numbers: a NaN propagates."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


@numba.njit(cache=CACHE, error_model="numpy")
def _log_factors(
    m: np.ndarray,
    lo: float,
    hi: float,
    z: float,
    bets: np.ndarray,
    stakes: np.ndarray,
    steps: np.ndarray,
) -> None:
    """Each process's bet factor before its log, shape (rows, 2, S) into ``steps``: upward
    ``max(min(bet, c / gap) x, -0.999)`` with ``gap = max(m - lo, 1e-300)`` and ``x = z - m``,
    downward the same with ``gap = max(hi - m, 1e-300)`` and ``x = -(z - m)``, the truncation
    ``c / gap`` infinite where the gap is not > 0 (``stakes``: each process's ``c``). Per
    element the operations of the numpy expressions this replaced, in their order (no
    fastmath), so the same bits in one call."""
    inf = np.inf
    for i in range(m.size):
        g0 = m[i] - lo
        g1 = hi - m[i]
        x0 = z - m[i]
        x1 = -x0
        p0 = g0 > 0
        p1 = g1 > 0
        g0 = _np_max(g0, 1e-300)
        g1 = _np_max(g1, 1e-300)
        for r in range(bets.size):
            c0 = stakes[r] / g0 if p0 else inf
            c1 = stakes[r] / g1 if p1 else inf
            steps[r, 0, i] = _np_max(_np_min(bets[r], c0) * x0, -0.999)
            steps[r, 1, i] = _np_max(_np_min(bets[r], c1) * x1, -0.999)


@numba.njit(cache=CACHE)
def _add_logs(log: np.ndarray, first: int, steps: np.ndarray, weights: np.ndarray) -> None:
    """``log[:, :, first:first + S] += steps``, then ``steps = that + weights[:, None,
    None]`` (the capital, then the weighted terms of the mixture): the same two additions
    per element as numpy's."""
    for r in range(steps.shape[0]):
        w = weights[r]
        for side in range(2):
            for i in range(steps.shape[2]):
                total = log[r, side, first + i] + steps[r, side, i]
                log[r, side, first + i] = total
                steps[r, side, i] = total + w


def _at_least(a: np.ndarray, b: np.ndarray, threshold: float) -> np.ndarray:
    """``np.logaddexp(a, b) >= threshold`` (shape of ``a``, ``b``), with ``logaddexp``
    evaluated only where the larger of ``a``, ``b`` does not decide it: numpy computes it as
    ``max + log1p(exp(-|a - b|))`` (``max + log 2`` for equal ones), at least ``max`` and at
    most ``max + log 2`` rounded up, so a ``max`` at or above the threshold passes it and
    one more than ``0.75`` below it does not (the same answers, bit for bit, without the
    scalar ``exp`` and ``log1p`` of most candidates; a NaN passes neither way)."""
    top = np.maximum(a, b)
    out = top >= threshold
    unsure = ((top >= threshold - 0.75) ^ out).nonzero()[0]  # (a NaN: False, as numpy's)
    if unsure.size:
        out[unsure] = np.logaddexp(a[unsure], b[unsure]) >= threshold
    return np.asarray(out)


class WeightedBettingCS:
    """Anytime-valid interval for ``mu`` from unbiased rounds of unequal precision.

    Parameters
    ----------
    alpha : float
        Miscoverage (two-sided, over all times).
    grid : int, default 2000
        Candidates ``0, 1/grid, ..., 1``; reported bounds are padded by one step.
    c : float, default 0.75
        Largest fraction of the capital at stake in one bet.
    theta : float, default 0.5
        Weight of the upward bet in the hedge.
    horizons : tuple of float, default (8, 32, 128, 512, 2048)
        Horizons of the mixture in effective rounds ``W_t``.
    weights : tuple of float, optional
        Prior weights of the horizons (default 0.6 on the first, the rest shared equally).
    target : float, optional
        Half-width the interval should reach (e.g. the requested precision), fixed before the
        first round; adds the targeted capital process (module docstring). None: no target.
    target_weight : float, default 0.8
        Weight of the targeted process in the mixture (the horizons keep ``1 -
        target_weight`` of their weights); unused without a target.
    target_c : float, default 0.97
        Largest fraction of the capital the targeted process stakes in one bet.

    Raises
    ------
    InputError
        For ``alpha``, ``target_weight`` or ``target_c`` outside (0, 1), ``grid`` below 2, a
        ``target`` that is not a finite half-width > 0, or horizons without as many positive
        weights.
    """

    def __init__(
        self,
        alpha: float,
        *,
        grid: int = 2000,
        c: float = 0.75,
        theta: float = 0.5,
        horizons: tuple[float, ...] = (8.0, 32.0, 128.0, 512.0, 2048.0),
        weights: tuple[float, ...] | None = None,
        target: float | None = None,
        target_weight: float = 0.8,
        target_c: float = 0.97,
    ) -> None:
        if not 0 < alpha < 1:
            raise InputError(f"delta={alpha!r}; expected a value in (0, 1)")
        if grid < 2:
            raise InputError(f"grid={grid!r}; expected an integer >= 2")
        if target is not None and not (target > 0 and math.isfinite(target)):
            raise InputError(f"target={target!r}; expected a half-width > 0")
        if not 0 < target_weight < 1 or not 0 < target_c < 1:
            raise InputError(
                f"target_weight={target_weight!r}, target_c={target_c!r}; expected values in (0, 1)"
            )
        self.alpha = float(alpha)
        k = len(horizons)
        if weights is None:
            weights = (1.0,) if k == 1 else (0.6,) + (0.4 / (k - 1),) * (k - 1)
        w = np.asarray(weights, dtype=np.float64)
        if k == 0 or w.shape != (k,) or not (w > 0).all():
            raise InputError(f"horizons={horizons!r}, weights={weights!r}; expected matching")
        w = w / w.sum()
        self.target = None if target is None else float(target)
        self.target_weight = float(target_weight)
        if self.target is not None:  # the targeted process is the last row of the mixture
            w = np.r_[w * (1.0 - target_weight), target_weight]
        self._log_weight = np.log(w)
        self._horizons = np.asarray(horizons, dtype=np.float64)
        self._threshold = math.log(1.0 / alpha)
        self._bet_log = math.log(2.0 / alpha) - self._log_weight
        self.c, self.theta = float(c), float(theta)
        # truncation per process (the targeted one may stake more), shape (rows, 1)
        self._c = np.full((w.size, 1), self.c)
        if self.target is not None:
            self._c[-1] = float(target_c)
        self._grid = np.linspace(0.0, 1.0, grid + 1)
        self._step = 1.0 / grid
        # the log capital of each process, upward bets then downward ones, shape (rows, 2,
        # candidates): both sides go through each round's arithmetic as one array
        self._log = np.zeros((w.size, 2, grid + 1))
        self._log_up, self._log_down = self._log[:, 0], self._log[:, 1]  # views
        self._rejected = np.zeros(grid + 1, dtype=bool)
        self._alive = (0, grid)
        """The first and last candidates not rejected (first > last: none), which every
        round updates from the candidates it updated (no scan of the whole grid)."""
        self._v_ref = 0.0
        self._effective = 0.0
        self._rho_sum = 1.0  # prior: the predicted variance is right (one pseudo-round)
        self._rho_count = 1.0
        self.count = 0
        self.lower, self.upper = 0.0, 1.0
        self._det = (0.0, 1.0)
        self.contradicted_at: int | None = None
        """The round after which every candidate was rejected (None: never): a miscoverage
        event, of probability at most ``alpha`` when the rounds are unbiased; the interval is
        then the deterministic bounds (certain, and wider)."""

    @property
    def variance_ratio(self) -> float:
        """Running estimate of the true over the predicted variance of a round (>= 0.05)."""
        return min(max(self._rho_sum / self._rho_count, 0.05), 50.0)

    def update(
        self,
        z: float,
        lo: float,
        hi: float,
        variance: float,
        center: float,
        bounds: tuple[float, float] = (0.0, 1.0),
    ) -> None:
        """Add one round.

        Parameters
        ----------
        z : float
            The round's estimate (unbiased for ``mu`` given the past).
        lo, hi : float
            Range of ``z`` given the past (before the draw).
        variance : float
            Predicted conditional variance of ``z`` (> 0), fixed before the draw.
        center : float
            The model-only prediction of ``mu`` fixed before the draw (``z`` minus its
            inverse-probability-weighted correction).
        bounds : (float, float)
            Deterministic bounds on ``mu`` after the round (e.g. from the revealed scores).
        """
        self._advance(z, lo, hi, variance, center)
        self._refresh(bounds)

    def _replay(
        self, rounds: list[tuple[float, float, float, float, float, tuple[float, float]]]
    ) -> None:
        """:meth:`update` with each of ``rounds`` (``(z, lo, hi, variance, center,
        bounds)``), the interval refreshed after the last only: the same capital, rejections,
        bounds and ``contradicted_at`` bit for bit (a round never reads the interval), for a
        caller that reads the interval at the end only (``tiny --precision``)."""
        for z, lo, hi, variance, center, _ in rounds:
            self._advance(z, lo, hi, variance, center)
        if rounds:
            self._refresh(rounds[-1][5])

    def _advance(self, z: float, lo: float, hi: float, variance: float, center: float) -> None:
        """One round's bets, capital and rejections (:meth:`update` without the interval)."""
        v = max(float(variance), 1e-12)
        if self.count == 0:
            self._v_ref = v
        self._effective += self._v_ref / v
        rho = self.variance_ratio
        k = self._horizons.size
        base = np.sqrt(
            2.0 * self._bet_log[:k] / (rho * np.maximum(self._effective, self._horizons))
        )  # (H,)
        scale = math.sqrt(self._v_ref) / v
        bets = np.empty(self._log.shape[0])  # one per process
        np.multiply(base, scale, out=bets[:k])
        if self.target is not None:  # Kelly at distance d, never above the current-size bet
            now = math.sqrt(2.0 * self._bet_log[k] / (rho * self._effective)) * scale
            bets[k] = min(self.target / (rho * v), now)
        # only candidates still alive are updated (a rejected one stays rejected): those
        # from the first alive candidate to the last, kept up to date by every round
        first, last = self._alive
        if first > last and self.contradicted_at is None:  # (:meth:`_replay`: its
            self.contradicted_at = self.count  # rounds are not refreshed one by one)
        if first <= last:
            sl = slice(first, last + 1)
            m = self._grid[sl]
            # both sides at once, shape (rows, 2, S): each element's arithmetic is the one
            # side's alone (m > lo iff m - lo > 0; the downward -min(bet, cap) x is
            # min(bet, cap) -x), fused (:func:`_log_factors`, :func:`_add_logs`)
            steps = np.empty((self._log.shape[0], 2, m.size))  # the bets' factors
            _log_factors(m, lo, hi, z, bets, self._c[:, 0], steps)
            np.log1p(steps, out=steps)
            _add_logs(self._log, first, steps, self._log_weight)
            mix = _logsumexp(steps, out=steps)
            up = math.log(self.theta) + mix[0]
            down = math.log1p(-self.theta) + mix[1]
            rejected = self._rejected[sl]
            rejected |= _at_least(up, down, self._threshold)
            if m[0] < lo - _TOLERANCE or m[-1] > hi + _TOLERANCE:  # (m ascending: else none)
                rejected |= (m < lo - _TOLERANCE) | (m > hi + _TOLERANCE)  # impossible
            alive = (~rejected).nonzero()[0]
            self._alive = (first + int(alive[0]), first + int(alive[-1])) if alive.size else (
                first, first - 1)  # fmt: skip
        self._rho_sum += (float(z) - float(center)) ** 2 / v
        self._rho_count += 1.0
        self.count += 1

    def excludes_at_or_below(self, x: float) -> bool:
        """Whether every value ``<= x`` is excluded: below the deterministic lower bound, or
        at or below a rejected candidate that every candidate still alive lies above (the
        reported lower bound is that candidate, itself excluded).

        Parameters
        ----------
        x : float
            The value tested.

        Returns
        -------
        bool
        """
        if x < self._det[0]:
            return True
        first, last = self._alive
        return first <= last and first >= 1 and x <= self._grid[first - 1]

    def excludes_at_or_above(self, x: float) -> bool:
        """Whether every value ``>= x`` is excluded (the mirror of
        :meth:`excludes_at_or_below`).

        Parameters
        ----------
        x : float
            The value tested.

        Returns
        -------
        bool
        """
        if x > self._det[1]:
            return True
        first, last = self._alive
        return first <= last and last + 1 < self._grid.size and x >= self._grid[last + 1]

    def _refresh(self, bounds: tuple[float, float]) -> None:
        det_lo, det_hi = float(bounds[0]), float(bounds[1])
        self._det = (det_lo, det_hi)
        first, last = self._alive
        if first <= last:  # padded by one step: the neighbouring (rejected) candidate
            below = self._grid[first - 1] if first >= 1 else 0.0
            above = self._grid[last + 1] if last + 1 < self._grid.size else 1.0
            lower = max(below, det_lo, 0.0)
            upper = min(above, det_hi, 1.0)
        else:  # every candidate rejected (a miscoverage event): keep the certain bounds,
            lower, upper = det_lo, det_hi  # and record when (the caller says so)
            if self.contradicted_at is None:
                self.contradicted_at = self.count
        if det_hi - det_lo <= 1e-12:
            lower = upper = det_lo
        self.lower, self.upper = lower, max(upper, lower)
