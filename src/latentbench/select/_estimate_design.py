"""One model's sequential estimate: posterior, sampling design, doubly robust rounds.

The functional core of :func:`latentbench.select.estimate` (``docs/estimate.md``). With ``R``
the revealed items, ``U`` the others (``n`` in all) and ``f`` the current predictions (the
posterior predictive of the calibrated model given the revealed answers only, so predictable),
round ``t`` draws one item ``J`` from ``U`` with probability

    pi_j = (1 - floor) q_j / sum_U q + floor / |U|,   q_j = sqrt(f_j (1 - f_j))  ("residual")
                                                      q_j = |V_j|^2 f_j (1 - f_j)  ("information")

and forms ``Z_t = (sum_R y + sum_U f + (y_J - f_J) / pi_J) / n``, unbiased for the
full-benchmark mean whatever ``f`` is. ``Z_t``'s range and predicted variance are known before
the draw; :class:`~latentbench.select._estimate_cs.WeightedBettingCS` turns the rounds into an
anytime-valid interval. A fixed design (``latentbench tiny``) draws with ``q`` computed from
the calibration's typical-model predictions, before any answer; the estimator then still uses
the model's own (predictable) predictions.
"""

from __future__ import annotations

import math
from typing import Literal

import numba
import numpy as np

from latentbench._checks import is_number
from latentbench._numba_cache import CACHE
from latentbench.exceptions import InputError
from latentbench.select._estimate_calibration import Calibration
from latentbench.select._estimate_cs import WeightedBettingCS

__all__ = [
    "PROPOSALS",
    "PROXIES",
    "SequentialEstimate",
    "canonical_order",
    "design_probabilities",
    "draw_item",
]


# The rank-1 posterior's and predictions' elementwise arithmetic, fused: each kernel does, per
# element, the IEEE operations the numpy expressions it replaces did, in the same order (no
# fastmath: no contraction into fma, no reassociation), so the same bits with one call
# instead of one per operation. tanh and the sums (BLAS ddot) stay numpy's.


@numba.njit(cache=CACHE, error_model="numpy")
def _half_affine(x: np.ndarray, z: float, c: np.ndarray, out: np.ndarray) -> None:
    """``out = 0.5 * (x * z + c)``: the sigmoid's argument, halved."""
    for i in range(x.size):
        out[i] = (x[i] * z + c[i]) * 0.5


@numba.njit(cache=CACHE, error_model="numpy")
def _sigmoid_parts(
    t: np.ndarray, y: np.ndarray, x: np.ndarray, r: np.ndarray, w: np.ndarray
) -> None:
    """From ``t = tanh(...)`` in place: ``p = 0.5 * (1 + t)`` (in ``t``), the residual
    ``r = p - y`` and the curvature's terms ``w = x * (p * (1 - p))``."""
    for i in range(t.size):
        p = (t[i] + 1.0) * 0.5
        t[i] = p
        r[i] = p - y[i]
        w[i] = ((1.0 - p) * p) * x[i]


@numba.njit(cache=CACHE, error_model="numpy")
def _prediction_argument(
    v: np.ndarray,
    z: float,
    bw: np.ndarray,
    sigma: float,
    sigma2: float,
    h: float,
    out: np.ndarray,
) -> None:
    """``0.5 * mu / sqrt(1 + pi s2 / 8)`` with ``mu = (v z + bw) / sigma`` and
    ``s2 = v h v / sigma2`` (``h > 0``: no floor at 0 needed)."""
    for i in range(v.size):
        mu = (v[i] * z + bw[i]) / sigma
        s2 = ((v[i] * h) * v[i]) / sigma2
        s2 = ((s2 * np.pi) / 8.0) + 1.0
        out[i] = (mu / math.sqrt(s2)) * 0.5


@numba.njit(cache=CACHE, error_model="numpy")
def _half_one_plus(t: np.ndarray) -> None:
    """``t = 0.5 * (1 + t)`` in place (the sigmoid from its tanh)."""
    for i in range(t.size):
        t[i] = (t[i] + 1.0) * 0.5


# The rounds' sums and draws, fused the same way: a sum over the unrevealed items is numpy's
# (``np.add.reduce`` of a contiguous float64 array: pairwise, eight accumulators in blocks of
# at most 128, :func:`_pairwise_sum`) of the same numbers in the same order, a cumulative sum
# is numpy's (sequential), a search the index ``np.searchsorted(side="right")`` returns; so
# the same bits as the numpy expressions they replace, in one call instead of one per
# operation (``tests/select/test_estimate_engine_bits.py`` checks them against numpy).


@numba.njit(cache=CACHE, error_model="numpy")
def _pairwise_leaf(a: np.ndarray, lo: int, n: int) -> float:
    """numpy's pairwise sum of ``a[lo:lo + n]`` for ``n <= 128``: in order below 8 items,
    else eight accumulators combined as a tree, then the rest in order."""
    if n < 8:
        res: float = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = lo + 8
    end = lo + n - n % 8
    while i < end:
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < lo + n:
        res += a[i]
        i += 1
    return res


@numba.njit(cache=CACHE, error_model="numpy")
def _pairwise_sum(a: np.ndarray) -> float:
    """``np.add.reduce(a)`` of a contiguous float64 array, the same bits: numpy's pairwise
    sum (above 128 items: the sum of the first ``h = n // 2 - (n // 2) % 8`` and the sum of
    the rest, each the same way; :func:`_pairwise_leaf` below) added to the identity 0.0. The
    recursion walks an explicit stack: a recursive kernel loaded from numba's cache crashed
    the process (a segmentation fault in the second process to run it)."""
    start = np.empty(64, dtype=np.int64)  # the segments being summed, depth <= log2(n)
    size = np.empty(64, dtype=np.int64)
    stage = np.zeros(64, dtype=np.int64)  # 0: not split yet, 1: left half, 2: right half
    left = np.empty(64)
    top = 0
    start[0], size[0], stage[0] = 0, a.size, 0
    while True:
        n = size[top]
        if n > 128:  # split: the left half first
            half = n // 2
            half -= half % 8
            stage[top] = 1
            top += 1
            start[top], size[top], stage[top] = start[top - 1], half, 0
            continue
        value = _pairwise_leaf(a, start[top], n)
        top -= 1
        while top >= 0:  # hand the value up: a left half's waits for its right half
            if stage[top] == 1:
                left[top] = value
                stage[top] = 2
                half = size[top] // 2
                half -= half % 8
                top += 1
                start[top], size[top], stage[top] = start[top - 1] + half, size[top - 1] - half, 0
                break
            value = left[top] + value
            top -= 1
        if top < 0:
            return 0.0 + value


@numba.njit(cache=CACHE, error_model="numpy")
def _draw_index(pi: np.ndarray, unrevealed: np.ndarray, order: np.ndarray, uniform: float) -> int:
    """:func:`draw_item`'s inversion for the uniform number ``uniform``: ``ranked =
    pi[order]``, ``cum = cumsum(ranked)``, ``k = min(searchsorted(cum, uniform * cum[-1],
    "right"), n - 1)``, stepped back over revealed items and zero probabilities (as numpy
    indexes, from the end below 0); -1 when no item of ``order`` is unrevealed with a
    positive probability (numpy's step past ``-n`` raised an IndexError; without bounds
    checks the kernel read before ``order``). ``pi`` float64 (a float32 cumulative sum is
    summed in float32: other bits)."""
    n = pi.size
    ranked = np.empty(n)
    cum = np.empty(n)
    total = 0.0
    for i in range(n):
        ranked[i] = pi[order[i]]
        total = total + ranked[i]
        cum[i] = total
    u = uniform * cum[n - 1]
    # the first index whose cum exceeds u (cum is non-decreasing), in numpy's order of
    # floats, where a NaN is above every number: searchsorted's comparison, so a NaN u (a
    # NaN total) gives n, as numpy's did
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        c = cum[mid]
        if not (u < c or (c != c and u == u)):
            lo = mid + 1
        else:
            hi = mid
    k = min(lo, n - 1)
    while not unrevealed[order[k]] or ranked[k] <= 0:  # rounding at the end of the cumsum
        k -= 1
        if k < -n:  # nothing left to draw (numpy: IndexError)
            return -1
    return int(order[k])


@numba.njit(cache=CACHE, error_model="numpy")
def _plain_design(
    f: np.ndarray, unrevealed: np.ndarray, floor: float, kind: int, norm2: np.ndarray
) -> np.ndarray:
    """:func:`design_probabilities` without weights, the same bits: ``kind`` 0 residual, 1
    information, 2 uniform."""
    n = f.size
    count = 0
    for i in range(n):
        count += unrevealed[i]
    out = np.zeros(n)
    if count == 0:
        return out
    q = np.zeros(n)
    for i in range(n):
        if unrevealed[i]:
            var = min(max(f[i] * (1.0 - f[i]), 0.0), 0.25)
            if kind == 0:
                q[i] = math.sqrt(var)
            elif kind == 1:
                q[i] = norm2[i] * var
            else:
                q[i] = 1.0
    uniform = 1.0 / count
    total = _pairwise_sum(q)
    if not math.isfinite(total) or total <= 0:
        for i in range(n):
            if unrevealed[i]:
                out[i] = uniform
        return out
    share = floor * uniform
    for i in range(n):
        out[i] = ((1.0 - floor) * q[i]) / total + (share if unrevealed[i] else floor * 0.0)
    return out


@numba.njit(cache=CACHE, error_model="numpy")
def _nan_min(low: float, x: float) -> float:
    """The running minimum ``low`` with ``x``, as ``ndarray.min`` reduces: a NaN, once met,
    is the result (the builtin ``min(low, nan)`` kept ``low``)."""
    return x if x < low or x != x else low


@numba.njit(cache=CACHE, error_model="numpy")
def _nan_max(high: float, x: float) -> float:
    """The running maximum ``high`` with ``x``, as ``ndarray.max`` reduces (a NaN sticks)."""
    return x if x > high or x != x else high


@numba.njit(cache=CACHE, error_model="numpy")
def _plain_round(
    f: np.ndarray,
    pi: np.ndarray,
    unrevealed: np.ndarray,
    j: int,
    y: float,
    revealed_sum: float,
    variance_floor: float,
) -> tuple[float, float, float, float, float]:
    """One unweighted round of :meth:`SequentialEstimate.observe` before the answer is taken
    in, the same bits: ``(center, z, lo, hi, variance)`` over the unrevealed items ``U`` (in
    their order): ``center = (revealed_sum + sum_U f) / n``, ``z = center + (y - f_j) / (n
    pi_j)``, ``lo``/``hi`` the range of ``z``, ``variance = sum_U max(f (1 - f), floor) / pi
    / n^2`` (at least 1e-12)."""
    n = f.size
    count = 0
    for i in range(n):
        count += unrevealed[i]
    f_u = np.empty(count)
    spread = np.empty(count)
    low = np.inf
    high = -np.inf
    k = 0
    for i in range(n):
        if unrevealed[i]:
            fi = f[i]
            f_u[k] = fi
            safe = n * pi[i]
            low = _nan_min(low, -fi / safe)
            high = _nan_max(high, (1.0 - fi) / safe)
            spread[k] = max(fi * (1.0 - fi), variance_floor) / pi[i]
            k += 1
    center = (revealed_sum + _pairwise_sum(f_u)) / n
    z = center + (1.0 * (y - f[j])) / (n * pi[j])
    variance = _pairwise_sum(spread) / (n * n)
    return center, z, center + low, center + high, max(variance, 1e-12)


@numba.njit(cache=CACHE, error_model="numpy")
def _pair_variance(fa: float, fb: float) -> float:
    """A paired item's variance ``clip(fa (1 - fa), 0, 1/4) + clip(fb (1 - fb), 0, 1/4)``."""
    return min(max(fa * (1.0 - fa), 0.0), 0.25) + min(max(fb * (1.0 - fb), 0.0), 0.25)


@numba.njit(cache=CACHE, error_model="numpy")
def _paired_design(
    fa: np.ndarray, fb: np.ndarray, unrevealed: np.ndarray, floor: float, count: int
) -> np.ndarray:
    """The unweighted adaptive design of a paired run (``compare``), the same bits:
    ``q = sqrt(var)`` on the ``count`` unrevealed items (0 elsewhere), ``pi = (1 - floor) q /
    sum q + floor unrevealed / count`` (uniform when ``sum q`` is not > 0)."""
    n = fa.size
    q = np.zeros(n)
    for i in range(n):
        if unrevealed[i]:
            q[i] = math.sqrt(_pair_variance(fa[i], fb[i]))
    total = _pairwise_sum(q)
    out = np.empty(n)
    if total > 0:
        for i in range(n):
            out[i] = ((1.0 - floor) * q[i]) / total + (floor * unrevealed[i]) / count
    else:
        for i in range(n):
            out[i] = unrevealed[i] / count
    return out


@numba.njit(cache=CACHE, error_model="numpy")
def _paired_round(
    fa: np.ndarray,
    fb: np.ndarray,
    pi: np.ndarray,
    unrevealed: np.ndarray,
    j: int,
    d: float,
    revealed: float,
    variance_floor: float,
) -> tuple[float, float, float, float, float]:
    """One unweighted round of a paired run before the answer is taken in, the same bits:
    ``(center, z, lo, hi, v)`` with ``g = fa - fb`` over the unrevealed items ``U`` (in their
    order): ``center = (revealed + sum_U g) / n``, ``z = center + (d - g_j) / (n pi_j)``,
    ``lo``/``hi`` the range of ``z`` (``d`` in [-1, 1]), ``v = sum_U max(var, variance_floor)
    / pi / n^2``."""
    n = fa.size
    count = 0
    for i in range(n):
        count += unrevealed[i]
    g_u = np.empty(count)
    spread = np.empty(count)
    low = np.inf
    high = -np.inf
    k = 0
    for i in range(n):
        if unrevealed[i]:
            g = fa[i] - fb[i]
            g_u[k] = g
            npi = n * pi[i]
            low = _nan_min(low, (-1.0 - g) / npi)
            high = _nan_max(high, (1.0 - g) / npi)
            spread[k] = max(_pair_variance(fa[i], fb[i]), variance_floor) / pi[i]
            k += 1
    center = (revealed + _pairwise_sum(g_u)) / n
    z = center + (d - (fa[j] - fb[j])) / (n * pi[j])
    v = _pairwise_sum(spread) / (n * n)
    return center, z, center + low, center + high, v


def canonical_order(item_ids: object) -> np.ndarray:
    """The permutation that sorts ``item_ids`` as strings, shape (n,): the order in which
    :func:`draw_item` lays the items out, so that a draw depends on the items' ids and
    probabilities, never on the order a file, a store or a fit listed them in."""
    return np.argsort(np.asarray(item_ids, dtype=str), kind="stable")  # one array op


def draw_item(
    pi: np.ndarray, unrevealed: np.ndarray, rng: np.random.Generator, order: np.ndarray
) -> int:
    """One item drawn with the probabilities ``pi`` (shape (n,), zero off ``unrevealed``)
    from one uniform of ``rng``, inverting their cumulative sum in the canonical ``order``
    (:func:`canonical_order`); returns its index in ``pi``.

    Raises
    ------
    InputError
        When no unrevealed item has a positive probability in ``pi``: nothing to draw.
    """
    if pi.dtype != np.float64:  # numpy's steps (a float32 cumsum is summed in float32)
        ranked = pi[order]
        cum = np.cumsum(ranked)
        k = min(int(np.searchsorted(cum, rng.random() * cum[-1], side="right")), pi.size - 1)
        while -pi.size <= k and (not unrevealed[order[k]] or ranked[k] <= 0):
            k -= 1
        j = int(order[k]) if k >= -pi.size else -1
    else:
        j = _draw_index(pi, unrevealed, order, rng.random())  # (the numpy steps, fused)
    if j < 0:
        raise InputError(
            f"pi: no unrevealed item has a positive probability (of {pi.size:,} items, "
            f"{int(np.count_nonzero(unrevealed)):,} unrevealed); expected a design that "
            "gives some unrevealed item a positive probability (design_probabilities')"
        )
    return j


def _check_population(pop: np.ndarray, calibration: Calibration) -> None:
    """Refuse a population that is not a set of the calibration's positions: one out of
    range (a -1 indexed the last item) or one given twice, each named."""
    n_items = calibration.n_items
    bad = (pop < 0) | (pop >= n_items)
    if bad.any():
        k = int(np.argmax(bad))
        raise InputError(
            f"population: position {int(pop[k])} (entry {k}) is not one of the calibration's "
            f"{n_items:,} items; expected positions in [0, {n_items - 1}] "
            "(Calibration.positions gives -1 for an item id it does not hold)"
        )
    counts = np.bincount(pop, minlength=n_items)
    if counts.max() > 1:
        k = int(np.argmax(counts))
        raise InputError(
            f"population: item {calibration.item_ids[k]!r} (position {k}) is listed "
            f"{int(counts[k])} times; expected each item once (the target is the mean over "
            "the population: a repeat would weigh it double)"
        )


PROPOSALS = ("residual", "information", "uniform")
PROXIES = ("irt", "ridge")
"""The predictions ``f``: ``irt`` the calibrated model's posterior predictive alone; ``ridge``
that plus a ridge regression of the revealed residuals on the calibration responses' item
features, its penalty chosen by leave-one-out on the revealed answers (:class:`RidgeCorrection`)."""
_LAMBDAS = np.logspace(-1.0, 4.0, 11)
"""Ridge penalties tried by leave-one-out (features: standardized calibration columns, so a
feature's sum of squares over ``t`` revealed items is about ``t``); no correction is the
further candidate that an infinite penalty gives."""
_RIDGE_MIN_ITEMS = 50
"""Fewer revealed answers than this: no correction. Chosen on the benchmark: with a first
version that corrected from 20 answers, the correction increased the residual variance at 30
items on AlpacaEval 1 and 2 (``benchmarks/RESULTS_estimate.md``)."""
_VARIANCE_FLOOR = 0.01
"""Smallest per-item Bernoulli variance used for a round's predicted variance (bet sizing
only: an over-confident prediction must not make one round look nearly exact)."""


def design_probabilities(
    f: np.ndarray,
    unrevealed: np.ndarray,
    floor: float,
    proposal: str,
    norm2: np.ndarray,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Draw probabilities over the items, zero on revealed ones, shape (n,).

    With item ``weights`` ``W`` (the target ``sum W y / n``), every item's share is
    multiplied by its weight, the floor's included: ``pi_j = (1 - floor) W_j q_j / sum_U W q
    + floor W_j / sum_U W``, the Neyman-like allocation for a weighted mean, with ``W_j /
    pi_j <= sum_U W / floor`` bounded (an item of weight 0 is never drawn).

    Parameters
    ----------
    f : ndarray of shape (n,)
        Predictions fixed before the draw.
    unrevealed : ndarray of bool, shape (n,)
    floor : float
        Share of the uniform distribution over the unrevealed items, in (0, 1].
    proposal : {"residual", "information", "uniform"}
    norm2 : ndarray of shape (n,)
        Squared norms of the item factors over sigma squared (for ``information``).
    weights : ndarray of shape (n,), optional
        Non-negative item weights ``W`` (default: all 1, the unweighted design; weights of
        exactly 1 give the same probabilities bit for bit).

    Returns
    -------
    ndarray of shape (n,)
        The probabilities, summing to 1 over the unrevealed items of positive weight.
    """
    if (
        weights is None
        and proposal in PROPOSALS
        and f.dtype == norm2.dtype == np.float64
        and f.ndim == 1
        and f.shape == norm2.shape == unrevealed.shape
    ):  # the same bits, fused (_plain_design; float64 only: numpy keeps a float32 in float32;
        # arrays of one length only: the kernel reads them unchecked, numpy raised)
        return _plain_design(f, unrevealed, float(floor), PROPOSALS.index(proposal), norm2)
    if proposal not in PROPOSALS:  # it fell back to a uniform design without a word
        raise InputError(f"proposal={proposal!r}; expected one of {', '.join(PROPOSALS)}")
    if weights is not None:
        unrevealed = unrevealed & (weights > 0)
    count = int(unrevealed.sum())
    if count == 0:
        return np.zeros_like(f)
    var = (f * (1.0 - f)).clip(0.0, 0.25)  # what np.clip calls, without its dispatch
    if proposal == "residual":
        q = np.sqrt(var)
    elif proposal == "information":
        q = norm2 * var
    else:  # uniform
        q = np.ones_like(f)
    if weights is None:
        q[~unrevealed] = 0.0  # np.where(unrevealed, q, 0.0), in place (q is this call's)
        uniform = unrevealed / count
    else:  # the floor in proportion to the weights (1.0 * x is x: all-1 weights change no bit)
        q = np.where(unrevealed, weights * q, 0.0)
        base = np.where(unrevealed, weights, 0.0)
        uniform = base / float(base.sum())
    total = float(q.sum())
    if not np.isfinite(total) or total <= 0:
        return np.asarray(uniform, dtype=np.float64)
    return np.asarray((1.0 - floor) * q / total + floor * uniform, dtype=np.float64)


class RidgeCorrection:
    """Predictable correction of the IRT predictions from the calibration responses.

    With ``X`` the items' features (column 0 a constant, then
    :func:`~latentbench.select._estimate_calibration.response_features`), ``R`` the revealed
    items and ``r = y_R - f_R`` the residuals of the IRT predictions there, the correction is
    ``X w`` with ``w = argmin |r - X_R w|^2 + lam |w|^2``; ``lam`` is the penalty of
    :data:`_LAMBDAS` with the smallest exact leave-one-out error on the revealed items (one
    eigendecomposition of ``X_R' X_R`` for the whole grid), and the correction is used only
    when that error beats no correction (the IRT prediction, ``lam`` infinite) by more than
    one standard error of the item-by-item difference (a guard against the optimism of
    picking the best of the grid on few answers). Everything uses revealed answers only, so
    predictions built on it stay predictable. Refits are scheduled every ``max(1, t // 50)``
    answers (a stale ``w`` is still predictable); the cost of a refit is ``O(t p^2 + p^3)``,
    of a prediction ``O(n p)``.
    """

    def __init__(self, features: np.ndarray) -> None:
        n = features.shape[0]
        self.X = np.ascontiguousarray(np.column_stack([np.ones(n), features]))
        self.w = np.zeros(self.X.shape[1])
        self.lam = math.inf
        self._fitted_at = 0

    def due(self, t: int) -> bool:
        return t >= _RIDGE_MIN_ITEMS and t - self._fitted_at >= max(1, t // 50)

    def fit(self, idx: np.ndarray, r: np.ndarray) -> None:
        """Refit on the residuals ``r`` of the revealed items ``idx``."""
        t = idx.size
        self._fitted_at = t
        XR = self.X[idx]
        d, Q = np.linalg.eigh(XR.T @ XR)
        d = np.maximum(d, 0.0)
        XQ = XR @ Q
        proj = XQ.T @ r
        inv = 1.0 / (d[:, None] + _LAMBDAS[None, :])  # (p, L)
        fit = XQ @ (proj[:, None] * inv)  # (t, L)
        lev = np.minimum((XQ * XQ) @ inv, 1.0 - 1e-9)
        err = ((r[:, None] - fit) / (1.0 - lev)) ** 2  # (t, L) leave-one-out squared errors
        best = int(np.argmin(err.mean(axis=0)))
        gain = err[:, best] - r * r  # against no correction, item by item
        if not gain.mean() + gain.std(ddof=1) / math.sqrt(t) < 0:
            self.w[:] = 0.0
            self.lam = math.inf
            return
        self.lam = float(_LAMBDAS[best])
        self.w = Q @ (proj * inv[:, best])

    def correction(self) -> np.ndarray:
        return np.asarray(self.X @ self.w, dtype=np.float64)


def check_floor(floor: object) -> None:
    """Refuse a design's uniform share ``floor`` outside (0, 1] (a string, a bool: named)."""
    if not (is_number(floor) and 0 < floor <= 1):  # type: ignore[operator]
        raise InputError(f"floor={floor!r}; expected a value in (0, 1]")


def check_design_options(floor: float, proposal: str, point: str, proxy: str) -> None:
    """Refuse a design option outside its range (before any calibration or answer is read)."""
    check_floor(floor)
    if proposal not in PROPOSALS:
        raise InputError(f"proposal={proposal!r}; expected one of {', '.join(PROPOSALS)}")
    if point not in ("composite", "dr", "model"):
        raise InputError(f"point={point!r}; expected 'composite', 'dr' or 'model'")
    if proxy not in PROXIES:
        raise InputError(f"proxy={proxy!r}; expected one of {', '.join(PROXIES)}")


def _mean_one(weights: np.ndarray | None, n: int) -> np.ndarray:
    """``weights`` rescaled to mean 1, shape (n,); exactly 1 everywhere when they are all
    equal (or None), so that the weighted formulas give the unweighted estimate bit for bit."""
    if weights is None:
        return np.ones(n)
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.shape != (n,) or not (np.isfinite(w).all() and (w > 0).all()):
        raise InputError(
            f"weights: expected {n:,} positive finite weights over the population, got "
            f"{w.size:,} (smallest {float(w.min()) if w.size else float('nan'):g})"
        )
    if (w == w[0]).all():
        return np.ones(n)
    return np.asarray(w * (n / float(w.sum())), dtype=np.float64)


class SequentialEstimate:
    """State of one model's estimate over a population of calibrated items.

    Parameters
    ----------
    calibration : Calibration
        The calibrated items (item parameters and the population prior).
    population : ndarray of int, shape (n,)
        Calibration positions of the items whose mean is the target.
    delta : float
        Miscoverage of the score interval (anytime-valid).
    floor : float, default 0.5
        Uniform share of the design (``pi_j >= floor / |U|``).
    proposal : {"residual", "information", "uniform"}, default "residual"
        How the rest of the design is spread over the unrevealed items.
    design_prediction : ndarray of shape (n,), optional
        Predictions that drive the design (a fixed design: independent of the answers);
        default: the model's current predictions (adaptive).
    newton_steps : int, default 2
        Newton steps on the model's factors after each answer (warm-started; any number keeps
        the predictions predictable, hence the estimate unbiased).
    grid : int, default 2000
        Candidate means of the confidence sequence: ``0, 1/grid, ..., 1``
        (:class:`~latentbench.select._estimate_cs.WeightedBettingCS`).
    point : {"dr", "composite", "model"}, default "dr"
        The point estimate (:meth:`point`); the interval does not depend on it.
    proxy : {"irt", "ridge"}, default "irt"
        The predictions ``f``: the IRT posterior predictive alone, or corrected by a ridge
        regression on the calibration responses' item features (:class:`RidgeCorrection`; not
        the default: see the comparison in ``benchmarks/RESULTS_estimate.md``). A calibration
        without item features (no responses) gives ``irt`` whatever is asked;
        :attr:`proxy_used` says which ran.
    target : float, optional
        Half-width the interval is meant to reach (the requested precision), fixed before the
        first draw: sizes one more capital process of the confidence sequence
        (:class:`~latentbench.select._estimate_cs.WeightedBettingCS`); None: none. The design
        and the point estimate do not depend on it.
    weights : ndarray of shape (n,), optional
        Positive item weights over the population: the target is ``sum W y / sum W`` instead
        of the plain mean. They are rescaled to ``W`` with mean 1 (weights that are all equal
        become exactly 1, the unweighted estimate bit for bit); the rounds become
        ``Z = (sum_R W y + sum_U W f + W_J (y_J - f_J) / pi_J) / n`` and the design draws in
        proportion to the weights (:func:`design_probabilities`).

    Raises
    ------
    InputError
        For an empty population, one holding a position that is not the calibration's
        (``Calibration.positions``' -1 for an unknown id indexed the last item, silently) or
        an item twice (its answer would weigh double in the target), weights that are not
        positive and finite over it, or ``floor``, ``proposal``, ``point`` or ``proxy``
        outside their values.
    """

    def __init__(
        self,
        calibration: Calibration,
        population: np.ndarray,
        *,
        delta: float,
        floor: float = 0.5,
        proposal: Literal["residual", "information", "uniform"] = "residual",
        design_prediction: np.ndarray | None = None,
        newton_steps: int = 2,
        grid: int = 2000,
        point: str = "dr",
        proxy: str = "irt",
        target: float | None = None,
        weights: np.ndarray | None = None,
    ) -> None:
        check_design_options(floor, proposal, point, proxy)
        pop = np.asarray(population, dtype=np.int64)
        if pop.size == 0:
            raise InputError("no item to estimate over: the population is empty")
        _check_population(pop, calibration)
        self.cal = calibration
        self.population = pop
        self.n = int(pop.size)
        self.W = _mean_one(weights, self.n)
        """Item weights with mean 1, shape (n,): all exactly 1 for the plain mean."""
        self.W2 = self.W * self.W
        self.weighted = bool((self.W != 1.0).any())
        """Whether the weights differ (False: the plain mean, every formula as unweighted)."""
        self.draw_order = canonical_order(np.asarray(calibration.item_ids, dtype=object)[pop])
        self.Vw = np.ascontiguousarray(calibration.Vw[pop])
        self.bw = np.ascontiguousarray(calibration.bw[pop])
        self.sigma = float(calibration.sigma)
        self.norm2 = (calibration.V[pop] ** 2).sum(axis=1) / self.sigma**2
        self.floor, self.proposal, self.delta = float(floor), proposal, float(delta)
        self.design_prediction = (
            None if design_prediction is None else np.asarray(design_prediction, dtype=float)
        )
        self.newton_steps = int(newton_steps)
        self.point_kind = point
        feats = calibration.item_features
        self.ridge: RidgeCorrection | None = None
        if proxy == "ridge" and feats is not None and feats.shape[1] > 0:
            self.ridge = RidgeCorrection(feats[pop])
        self.proxy_used = "ridge" if self.ridge is not None else "irt"
        r = self.Vw.shape[1]
        self._v = np.ascontiguousarray(self.Vw[:, 0], dtype=np.float64) if r == 1 else None
        self.z = np.zeros(r)
        self.Hinv: np.ndarray = np.eye(r)
        self._eye = np.eye(r)
        self._X = np.empty((self.n, r))  # the revealed items' rows Vw / sigma, in order
        self._c = np.empty(self.n)  # and bw / sigma
        self._y = np.empty(self.n)  # and the answers
        self._rows = 0
        self.unrevealed = np.ones(self.n, dtype=bool)
        self.order: list[int] = []
        self.answers: list[float] = []
        self.revealed_sum = 0.0
        self._grid = int(grid)
        self.cs = WeightedBettingCS(delta, grid=grid, target=target)
        self.last_round: tuple[float, float, float, float, float, tuple[float, float]] | None = None
        """The last round's ``(z, lo, hi, variance, center, bounds)`` as given to the sequence."""
        self._wsum = 0.0
        self._wz = 0.0
        self.trajectory: list[tuple[float, float, float]] = []
        self._predict()

    # ---------------------------------------------------------------- the posterior
    def _predict(self) -> None:
        if self._v is not None:  # rank 1: products of numbers, the bits of the matrix ones
            v = self._v  # (a zero's sign, which they may not keep, is lost in + bw, 1 + s2)
            h = float(self.Hinv[0, 0])
            if h > 0:  # (every fit's): the same operations, fused (_prediction_argument)
                f = np.empty(v.size)
                _prediction_argument(v, float(self.z[0]), self.bw, self.sigma, self.sigma**2,
                                     h, f)  # fmt: skip
                np.tanh(f, out=f)
                _half_one_plus(f)
                self._set_predictions(f)
                return
            # in place, each the operation of the expression it replaces on the same operands
            # (x + y is y + x, x * y is y * x, bit for bit): the bits of
            # mu = (v z + bw) / sigma, s2 = v h v / sigma^2, without a temporary per step
            mu = v * float(self.z[0])
            mu += self.bw
            mu /= self.sigma
            h = float(self.Hinv[0, 0])
            s2 = v * h
            s2 *= v
            s2 /= self.sigma**2
            if not h > 0:  # (h > 0, as every fit gives: s2 >= 0 or NaN, max(s2, 0) is s2)
                s2 = np.maximum(s2, 0.0)
        else:
            mu = (self.Vw @ self.z + self.bw) / self.sigma
            s2 = ((self.Vw @ self.Hinv) * self.Vw).sum(axis=1) / self.sigma**2
            s2 = np.maximum(s2, 0.0)
        # x = mu / sqrt(1 + pi s2 / 8), f = sigmoid(x) = (1 + tanh(x / 2)) / 2, in place (the
        # same operations in the same order: pi * s2, / 8, 1 + , sqrt, mu / , 0.5 * , tanh,
        # 1 + , 0.5 * ); mu and s2 are this call's own arrays
        s2 *= np.pi
        s2 /= 8.0
        s2 += 1.0
        np.sqrt(s2, out=s2)
        mu /= s2
        mu *= 0.5
        np.tanh(mu, out=mu)
        mu += 1.0
        mu *= 0.5
        self._set_predictions(mu)  # sigmoid, inlined

    def _set_predictions(self, f_irt: np.ndarray) -> None:
        """Take the IRT predictions ``f_irt`` and, with the ridge proxy, correct them."""
        self.f_irt = f_irt
        self.f = self.f_irt
        if self.ridge is None:
            return
        t = len(self.order)
        if self.ridge.due(t):
            idx = np.asarray(self.order, dtype=np.int64)
            y = np.asarray(self.answers, dtype=np.float64)
            self.ridge.fit(idx, y - self.f_irt[idx])
        if self.ridge.lam < math.inf:
            self.f = np.clip(self.f_irt + self.ridge.correction(), 0.0, 1.0)

    def _fit(self, steps: int) -> None:
        t = len(self.order)
        if self._rows == t - 1:  # one answer more (every round): its row, as below
            j = self.order[-1]
            self._X[t - 1] = self.Vw[j] / self.sigma
            self._c[t - 1] = self.bw[j] / self.sigma
            self._y[t - 1] = self.answers[-1]
            self._rows = t
        elif self._rows < t:  # the revealed items' rows, cached: order and answers only grow
            new = np.asarray(self.order[self._rows :], dtype=np.int64)
            self._X[self._rows : t] = self.Vw[new] / self.sigma
            self._c[self._rows : t] = self.bw[new] / self.sigma
            self._y[self._rows : t] = self.answers[self._rows :]
            self._rows = t
        # the same operations on the same (t, r) C-contiguous rows as Vw[order] / sigma: the
        # same bits, without re-indexing every revealed item every round
        X, c, y = self._X[:t], self._c[:t], self._y[:t]
        XT = X.T
        r = X.shape[1]
        if r == 1:
            self._fit_rank1(X, XT, c, y, steps)
            return
        eye = self._eye
        tanh = np.tanh
        for _ in range(steps):
            p = 0.5 * (1.0 + tanh(0.5 * (X @ self.z + c)))  # sigmoid, inlined
            grad = XT @ (p - y) + self.z
            H = (XT * (p * (1.0 - p))) @ X + eye
            step = np.linalg.solve(H, grad)  # (rank 1: :meth:`_fit_rank1`)
            norm = math.sqrt(float(step @ step))
            if norm > 1.0:  # a trust region (prior sd units): saturated answers overshoot
                step = step / norm
            self.z = self.z - step
        p = 0.5 * (1.0 + tanh(0.5 * (X @ self.z + c)))
        H = (XT * (p * (1.0 - p))) @ X + eye
        self.Hinv = np.linalg.inv(H)

    def _fit_rank1(
        self, X: np.ndarray, XT: np.ndarray, c: np.ndarray, y: np.ndarray, steps: int
    ) -> None:
        """:meth:`_fit` at rank 1, the same bits: the posterior mode ``z`` and its curvature
        are numbers, so the Newton step's arithmetic on them (``grad / H``, the trust region,
        ``z - step``) is done on Python floats (one rounding each, as on the 1-element
        arrays), and ``X @ z`` is ``x z`` (one product per row; a zero's sign, which a matrix
        product may not keep, is lost in ``+ c`` and ``1 + tanh``). The two sums over the
        revealed rows, ``X^T (p - y)`` and ``X^T diag(w) X``, are the same BLAS ``ddot`` (numpy's
        matmul of a (1, t) row by a (t,) or (t, 1) column, as of two 1-d arrays, is ``ddot``)
        of the same numbers, so summed in the same order; the elementwise arithmetic around
        them is fused (:func:`_half_affine`, :func:`_sigmoid_parts`: the same operations)."""
        x = X[:, 0]
        z = float(self.z[0])
        t = x.size
        p, r, w = np.empty(t), np.empty(t), np.empty(t)
        tanh = np.tanh
        for _ in range(steps):
            # p = sigmoid(x z + c), r = p - y, w = x (p (1 - p)): the numpy expressions'
            # operations, fused (the same bits)
            _half_affine(x, z, c, p)
            tanh(p, out=p)
            _sigmoid_parts(p, y, x, r, w)
            grad = float(x @ r) + z
            h = float(w @ x) + 1.0
            step = grad / h
            norm = math.sqrt(step * step)
            if norm > 1.0:  # a trust region (prior sd units): saturated answers overshoot
                step = step / norm
            z = z - step
        _half_affine(x, z, c, p)
        tanh(p, out=p)
        _sigmoid_parts(p, y, x, r, w)
        h = float(w @ x) + 1.0
        self.z = np.array([z])
        self.Hinv = np.array([[1.0 / h]])

    def set_target(self, target: float | None) -> None:
        """Size the confidence sequence for ``target`` (before the first answer only).

        Parameters
        ----------
        target : float or None
            The half-width the interval is meant to reach; None: no targeted process.

        Raises
        ------
        InputError
            If an answer was already added (a target chosen after seeing answers would not
            be predictable).
        """
        if self.order:
            raise InputError("the target half-width must be set before the first answer")
        self.cs = WeightedBettingCS(self.delta, grid=self._grid, target=target)

    def sized_sequence(self, budget: int) -> WeightedBettingCS:
        """A confidence sequence like this run's, sized for ending after ``budget`` items
        (:meth:`budget_target`), to be fed the same rounds (:attr:`last_round`) beside it:
        the interval :func:`~latentbench.select.estimate` with that budget reports, from the
        same draws (before the first answer only, as :meth:`budget_target`).

        Parameters
        ----------
        budget : int
            Items the run would end after.

        Returns
        -------
        WeightedBettingCS

        Raises
        ------
        InputError
            If an answer was already added.
        """
        return WeightedBettingCS(self.delta, grid=self._grid, target=self.budget_target(budget))

    def budget_target(self, budget: int) -> float | None:
        """The half-width to size the confidence sequence for when the run ends after
        ``budget`` items (a budget fixed before the first draw; None when the budget reveals
        every item, where the interval closes on the mean anyway).

        ``sqrt(2 log(2 / (delta w)) v_1 / budget)``: the half-width of a normal interval at
        level ``delta w`` (``w`` the targeted process's weight in the mixture) from
        ``budget`` rounds of the first round's predicted variance ``v_1`` (computed from the
        design and predictions before any answer, so the target is predictable).
        docs/estimate.md, Method 4.

        Parameters
        ----------
        budget : int
            Items the run ends after.

        Returns
        -------
        float or None

        Raises
        ------
        InputError
            If an answer was already added.
        """
        if self.order:
            raise InputError("the budget's target must be set before the first answer")
        if budget >= self.n:
            return None
        pi = self.probabilities()
        U = self.unrevealed
        v1 = float((self.W2[U] * self._item_variance()[U] / pi[U]).sum()) / self.n**2
        weight = self.cs.target_weight
        ratio = 2.0 / (self.delta * weight)  # overflows for a delta near 5e-324: in logs then
        log_ratio = math.log(ratio) if math.isfinite(ratio) else (
            math.log(2.0) - math.log(self.delta) - math.log(weight))  # fmt: skip
        return math.sqrt(2.0 * log_ratio * max(v1, 1e-12) / budget)

    # ---------------------------------------------------------------- one round
    def _item_variance(self, items: np.ndarray | None = None) -> np.ndarray:
        """Per-item variance behind a round's predicted variance (bet sizing and precision
        weights only): the Bernoulli variance of the current predictions, floored, shape (n,)
        (of ``items``, indices into the population, only when given: the same numbers)."""
        f = self.f if items is None else self.f[items]
        return np.asarray(np.maximum(f * (1.0 - f), _VARIANCE_FLOOR))

    @property
    def exhausted(self) -> bool:
        return not self.unrevealed.any()

    def probabilities(self) -> np.ndarray:
        """The design of the next round over the population, shape (n,).

        Returns
        -------
        ndarray of shape (n,)
            Drawing probabilities (0 for revealed items).
        """
        f = self.f if self.design_prediction is None else self.design_prediction
        # unweighted: no weights (weights of exactly 1 give the same bits, with more passes)
        return design_probabilities(
            f, self.unrevealed, self.floor, self.proposal, self.norm2,
            self.W if self.weighted else None,
        )  # fmt: skip

    def choose(self, rng: np.random.Generator) -> tuple[int, np.ndarray]:
        """Draw the next item: its population index and the design it was drawn from.

        Parameters
        ----------
        rng : numpy.random.Generator
            The draw's random generator.

        Returns
        -------
        j : int
            The item's index in the population (an unrevealed one).
        pi : ndarray of shape (n,)
            The design (:meth:`probabilities`) it was drawn from.

        Raises
        ------
        InputError
            When every item is revealed (:attr:`exhausted`): nothing is left to draw.
        """
        if self.exhausted:
            raise InputError(
                f"every item of the population ({self.n:,}) is revealed: nothing left to "
                "draw (the interval is the exact mean); expected a call while some item is "
                "unrevealed (check exhausted first)"
            )
        pi = self.probabilities()
        return draw_item(pi, self.unrevealed, rng, self.draw_order), pi

    def observe(self, j: int, y: float, pi: np.ndarray) -> None:
        """Add the answer ``y`` to item ``j`` drawn with the design ``pi``.

        Parameters
        ----------
        j : int
            The item's index in the population, as :meth:`choose` returned it.
        y : float
            The model's score on it, in [0, 1].
        pi : ndarray of shape (n,)
            The design it was drawn from.

        Raises
        ------
        InputError
            When ``y`` is outside [0, 1], ``j`` is not an index of the population, the item
            was already observed (its answer counted twice would bias the estimate and
            narrow the interval, silently), or ``pi`` gave it no probability.
        """
        if not 0.0 <= y <= 1.0:
            raise InputError(f"score {y!r}; expected a value in [0, 1]")
        if not 0 <= j < self.n:  # (a negative j would index from the end, silently)
            raise InputError(
                f"item index j={j!r}; expected an index of the population in [0, {self.n - 1}]"
            )
        if not self.unrevealed[j] or not pi[j] > 0:
            item = self.cal.item_ids[int(self.population[j])]
            said = (
                f"item {item!r} (index {j}) was already observed (answer {y!r} given again)"
                if not self.unrevealed[j]
                else f"item {item!r} (index {j}) has probability {float(pi[j])!r} in pi"
            )
            raise InputError(
                f"{said}; expected an unrevealed item drawn from pi with a positive "
                "probability, as choose() returns it (each item is observed once)"
            )
        n, W = self.n, self.W
        f = self.f
        if not self.weighted and pi.dtype == np.float64 and pi.shape == f.shape:
            # the numpy expressions below, fused: the same bits (of a float64 design of the
            # population's length only: numpy computes a float32 one in float32, and the
            # kernel reads pi unchecked)
            center, z, lo, hi, variance = _plain_round(
                f, pi, self.unrevealed, j, float(y), self.revealed_sum, _VARIANCE_FLOOR
            )
            self._take(j, y, z, lo, hi, variance, center)
            return
        # every quantity below is over the unrevealed items U only, so computed on them only
        # (``_u``: in U's order, the order a boolean mask selects them in): the same numbers,
        # and the same arrays wherever one is summed, as over all items masked
        U = self.unrevealed.nonzero()[0]
        f_u, pi_u = f[U], pi[U]
        # unweighted, every weight is exactly 1: W * x is x, a sum of them a count (the same
        # bits, without those passes over the items)
        W_u = W[U] if self.weighted else None
        Wf_u = W_u * f_u if W_u is not None else f_u
        pool_f = float(Wf_u.sum())
        center = (self.revealed_sum + pool_f) / n
        z = center + W[j] * (y - f[j]) / (n * pi[j])
        # the range of Z given the past: W_j / pi_j <= sum_U W / floor keeps it finite (the
        # min and max over U of what np.where filled with inf and -inf elsewhere)
        safe_u = n * pi_u
        ratio_lo = -Wf_u / safe_u
        ratio_hi = ((W_u if W_u is not None else W[U]) - Wf_u) / safe_u
        lo, hi = center + float(ratio_lo.min()), center + float(ratio_hi.max())
        var_u = self._item_variance(U)
        spread = self.W2[U] * var_u if self.weighted else var_u
        variance = float((spread / pi_u).sum()) / n**2
        variance = max(variance, 1e-12)
        self._take(j, y, z, lo, hi, variance, center)

    def _take(
        self, j: int, y: float, z: float, lo: float, hi: float, variance: float, center: float
    ) -> None:
        """Take in the answer ``y`` to item ``j`` and the round ``(z, lo, hi, variance,
        center)`` it gave (:meth:`observe` after its checks and the round's arithmetic)."""
        n, W = self.n, self.W
        self.unrevealed[j] = False
        self.order.append(j)
        self.answers.append(float(y))
        self.revealed_sum += float(W[j] * y)
        remaining = float(W[self.unrevealed].sum()) if self.weighted else float(n - len(self.order))
        bounds = (self.revealed_sum / n, (self.revealed_sum + remaining) / n)
        if self.weighted:  # the mean-1 weights sum to n only up to rounding: 1 + 4e-16 is 1
            bounds = (min(max(bounds[0], 0.0), 1.0), min(max(bounds[1], 0.0), 1.0))
        self.cs.update(z, lo, hi, variance, center, bounds)
        self.last_round = (z, lo, hi, variance, center, bounds)
        self._wsum += 1.0 / variance
        self._wz += z / variance
        self._fit(self.newton_steps if len(self.order) > 1 else 5)
        self._predict()
        # weighted and exhausted: the exact mean, as :attr:`interval` says (the sequence's
        # bounds are sums over n, off by a rounding)
        low, high = self.interval if self.weighted else (self.cs.lower, self.cs.upper)
        self.trajectory.append((self.score, low, high))

    # ---------------------------------------------------------------- results
    def point(self, kind: str = "dr", cs: WeightedBettingCS | None = None) -> float:
        """Point estimate of the mean, inside the interval (of ``cs`` when given: a
        confidence sequence fed the same rounds, :attr:`last_round`, sized otherwise).

        ``dr`` (default): the precision-weighted mean of the rounds (design-based). ``model``:
        the revealed scores plus the current predictions of the others (p-IRT). ``composite``:
        ``model + k (dr - model)`` with the positive-part shrinkage
        ``k = max(0, 1 - Var(dr) / (dr - model)^2)``: the model-based estimate where the rounds
        agree with it within their noise, the design-based one where they do not.

        Parameters
        ----------
        kind : {"dr", "model", "composite"}, default "dr"
            Which estimate (any other value is taken as ``composite``).
        cs : WeightedBettingCS, optional
            The confidence sequence whose interval clips it; default: this run's.

        Returns
        -------
        float
            The revealed mean once every item is revealed.
        """
        if self.exhausted:
            return self.revealed_mean()
        cs = self.cs if cs is None else cs
        if not self.order or kind != "dr":  # (the model-based estimate: not read by "dr")
            Wf = self.W * self.f if self.weighted else self.f  # (unweighted: 1.0 * f is f)
            model = float((self.revealed_sum + Wf[self.unrevealed].sum()) / self.n)
            if not self.order:
                return model
        dr = self._wz / self._wsum
        if kind == "dr":
            value = dr
        elif kind == "model":
            value = model
        else:
            var = cs.variance_ratio / self._wsum
            gap2 = (dr - model) ** 2
            k = 0.0 if gap2 <= 0 else max(0.0, 1.0 - var / gap2)
            value = model + k * (dr - model)
        return float(min(max(value, cs.lower), cs.upper))

    def revealed_mean(self) -> float:
        """The mean of the revealed answers (weighted: ``sum W y / sum W`` over them).

        Unweighted it is ``revealed_sum / n`` as before; weighted, the numerator and the
        denominator are summed over the same items in the same order, so that every answer 1
        gives 1 exactly (``revealed_sum / n`` gave 1 + 7e-16: the mean-1 weights sum to ``n``
        only up to rounding) and the mean never passes 0 or 1.

        Returns
        -------
        float
            The exact (weighted) mean of the revealed answers; NaN before any answer.
        """
        if not self.weighted:
            return self.revealed_sum / self.n
        if not self.order:
            return math.nan
        W = self.W[np.asarray(self.order, dtype=np.int64)]
        return float((W * np.asarray(self.answers)).sum() / W.sum())

    @property
    def score(self) -> float:
        """The point estimate of the kind chosen at construction (:meth:`point`)."""
        return self.point(self.point_kind)

    @property
    def interval(self) -> tuple[float, float]:
        if self.exhausted:
            mean = self.revealed_mean()
            return mean, mean
        return self.cs.lower, self.cs.upper

    def theta(self) -> tuple[float, float]:
        """Ability (``u w``, calibration scale; rank 1: the factor) and its posterior standard
        deviation.

        Returns
        -------
        theta : float
        sd : float
        """
        L = self.cal.prior_chol
        u = self.cal.prior_mean + L @ self.z
        cov = L @ self.Hinv @ L.T
        w = self.cal.direction
        return float(u @ w), float(np.sqrt(max(float(w @ cov @ w), 0.0)))
