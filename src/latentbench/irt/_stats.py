"""The few distribution functions and ranks the fits need, without importing ``scipy.stats``.

``scipy.stats`` costs about 0.5 s of CPU at import (it builds every distribution's
docstring); the fit path needs only ranks and four tail functions, which ``scipy.special``
(already imported) and NumPy give directly. Each function equals its ``scipy.stats``
counterpart, edge cases included (``tests/irt/test_stats.py``).
"""

from __future__ import annotations

from typing import Literal

import numba
import numpy as np
import numpy.typing as npt
from scipy.special import chdtrc, ndtr, ndtri, pdtr

from latentbench._numba_cache import CACHE

__all__ = [
    "chi2_sf",
    "norm_ppf",
    "norm_sf",
    "pair_disagreement_cdf",
    "poisson_cdf",
    "rankdata",
]


def rankdata(
    values: npt.ArrayLike, method: Literal["average", "min"] = "average"
) -> npt.NDArray[np.float64]:
    """Ranks 1..n of a 1-d array, ties by ``method`` (``scipy.stats.rankdata``'s "average" or
    "min"); all NaN when any value is NaN (its default ``nan_policy``). Shape (n,), float."""
    x = np.asarray(values, dtype=float).ravel()
    if np.isnan(x).any():
        return np.full(x.size, np.nan)
    order = np.argsort(x, kind="mergesort")
    ordered = x[order]
    new = np.ones(x.size, dtype=bool)
    new[1:] = ordered[1:] != ordered[:-1]
    starts = np.flatnonzero(new)  # first sorted position of each group of ties
    counts = np.diff(np.append(starts, x.size))
    group_rank = starts + 1.0 if method == "min" else starts + (counts + 1) / 2.0
    out = np.empty(x.size)
    out[order] = np.repeat(group_rank, counts)
    return out


def norm_ppf(q: float) -> float:
    """Standard normal quantile (``scipy.stats.norm.ppf``)."""
    return float(ndtri(q))


def norm_sf(z: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Standard normal upper tail ``P(Z > z)`` (``scipy.stats.norm.sf``)."""
    return np.asarray(ndtr(-np.asarray(z, dtype=np.float64)), dtype=np.float64)


def chi2_sf(x: npt.ArrayLike, df: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Chi-square upper tail (``scipy.stats.chi2.sf``: NaN where ``df <= 0``)."""
    dof = np.asarray(df, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = chdtrc(np.where(dof > 0, dof, 1.0), np.asarray(x, dtype=np.float64))
    return np.asarray(np.where(dof > 0, out, np.nan), dtype=np.float64)


def poisson_cdf(k: npt.ArrayLike, mu: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Poisson ``P(X <= k)`` (``scipy.stats.poisson.cdf``: 0 for ``k < 0``, ``k`` floored)."""
    count = np.floor(np.asarray(k, dtype=np.float64))
    out = pdtr(np.maximum(count, 0.0), np.asarray(mu, dtype=np.float64))
    return np.asarray(np.where(count < 0, 0.0, out), dtype=np.float64)


def pair_disagreement_cdf(
    fitted: npt.NDArray[np.float64],
    observed: npt.NDArray[np.bool_],
    item_a: npt.NDArray[np.integer],
    item_b: npt.NDArray[np.integer],
    count: npt.ArrayLike,
) -> npt.NDArray[np.float64]:
    """Exact ``P(D <= count)`` for pairs of items, ``D`` the number of models on which the two
    disagree when they answer independently with the fitted probabilities.

    ``D`` is Poisson-binomial: a sum over the models observed on both items of Bernoulli
    variables with probabilities ``p_a (1 - p_b) + (1 - p_a) p_b``. Its lower tail is computed
    exactly (the recursion over models of the probabilities of ``0..count`` disagreements),
    not bounded.

    Parameters
    ----------
    fitted : ndarray, shape (n_models, n_items)
        Fitted probabilities.
    observed : ndarray of bool, shape (n_models, n_items)
        Observed cells.
    item_a, item_b : ndarray of int, shape (n_pairs,)
        The pairs' items (columns).
    count : array-like, shape (n_pairs,)
        Disagreements observed (floored; below 0: probability 0).

    Returns
    -------
    ndarray, shape (n_pairs,)
    """
    counts = np.floor(np.asarray(count, dtype=np.float64))
    return np.asarray(
        _pair_disagreement_cdf(
            np.ascontiguousarray(fitted, dtype=np.float64),
            np.ascontiguousarray(observed, dtype=np.bool_),
            np.asarray(item_a, dtype=np.int64),
            np.asarray(item_b, dtype=np.int64),
            np.where(counts < 0, -1, counts).astype(np.int64),
        ),
        dtype=np.float64,
    )


@numba.njit(cache=CACHE)
def _pair_disagreement_cdf(
    fitted: np.ndarray,
    observed: np.ndarray,
    item_a: np.ndarray,
    item_b: np.ndarray,
    count: np.ndarray,
) -> np.ndarray:  # pragma: no cover - compiled (tests/irt/test_stats.py checks it)
    out = np.zeros(item_a.size)
    for k in range(item_a.size):
        d = count[k]
        if d < 0:
            continue
        a, b = item_a[k], item_b[k]
        f = np.zeros(d + 1)
        f[0] = 1.0
        for i in range(fitted.shape[0]):
            if observed[i, a] and observed[i, b]:
                pa, pb = fitted[i, a], fitted[i, b]
                q = pa * (1.0 - pb) + (1.0 - pa) * pb
                for t in range(d, 0, -1):
                    f[t] = f[t] * (1.0 - q) + f[t - 1] * q
                f[0] *= 1.0 - q
        out[k] = min(f.sum(), 1.0)
    return out
