"""The few distribution functions and ranks the fits need, without importing ``scipy.stats``.

``scipy.stats`` costs about 0.5 s of CPU at import (it builds every distribution's
docstring); the fit path needs only ranks and four tail functions, which ``scipy.special``
(already imported) and NumPy give directly. Each function equals its ``scipy.stats``
counterpart, edge cases included (``tests/irt/test_stats.py``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.special import chdtrc, ndtr, ndtri, pdtr

__all__ = ["chi2_sf", "norm_ppf", "norm_sf", "poisson_cdf", "rankdata"]


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
