"""Anytime-valid confidence sequences on per-round estimates (``docs/selection.md``, Intervals).

Two constructions, both vectorised over arms and updated one pull at a time:

* :class:`EBConfSeq` (default): the predictable plug-in empirical-Bernstein (PrPl-EB)
  confidence sequence of Waudby-Smith & Ramdas, "Estimating means of bounded random variables
  by betting", JRSSB 2024 (arXiv 2010.09686), Theorem 2, on ``x = (Z - lo) / (hi - lo)``.
* :class:`FreedmanConfSeq`: Freedman's (1975) inequality with a predictable variance bound and
  peeling over a geometric grid (for comparison only).

Both hold uniformly over the number of pulls, so they stay valid under adaptive selection as
long as every per-round estimate has conditional mean ``mu_i`` and lies in its stated range.
``eb_confseq`` is the functional form of the first on one whole sequence.
"""

from __future__ import annotations

import math

import numpy as np

from latentbench.exceptions import InputError

__all__ = ["EBConfSeq", "FreedmanConfSeq", "eb_confseq"]


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise InputError(f"alpha={alpha!r}; expected a value in (0, 1)")


def _psi(eta: np.ndarray) -> np.ndarray:
    return np.asarray(-np.log1p(-eta) - eta, dtype=np.float64)


def eb_confseq(
    z: np.ndarray, alpha: float, *, lo: float = -1.0, hi: float = 2.0
) -> tuple[np.ndarray, np.ndarray]:
    """PrPl-EB confidence sequence for a common conditional mean of a bounded sequence.

    Parameters
    ----------
    z : ndarray of shape (K,)
        Per-round estimates with ``E[z_k | past] = mu`` and ``lo <= z_k <= hi``.
    alpha : float
        Miscoverage of the whole sequence (two-sided, ``alpha / 2`` per side).
    lo, hi : float
        Range of each ``z_k``.

    Returns
    -------
    lower, upper : ndarray of shape (K,)
        Bounds after each pull, clipped to ``[max(lo, 0), min(hi, 1)]``;
        ``P(exists k: mu not in [lower_k, upper_k]) <= alpha``.
    """
    _check_alpha(alpha)
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 1 or z.size == 0:
        raise InputError(f"z has shape {z.shape}; expected a non-empty 1-d array")
    width = hi - lo
    x = (z - lo) / width
    if np.any(x < -1e-9) or np.any(x > 1 + 1e-9):
        raise InputError(f"z has values outside [lo, hi] = [{lo}, {hi}]")
    K = x.size
    k = np.arange(1, K + 1, dtype=np.float64)
    mu_t = (0.5 + np.cumsum(x)) / (k + 1)  # mu~_k, k = 1..K
    var_t = (0.25 + np.cumsum((x - mu_t) ** 2)) / (k + 1)  # sigma~^2_k
    var_prev = np.concatenate(([0.25], var_t[:-1]))
    mu_prev = np.concatenate(([0.5], mu_t[:-1]))
    log_term = math.log(2.0 / alpha)
    eta = np.minimum(np.sqrt(2.0 * log_term / (var_prev * k * np.log1p(k))), 0.5)
    s_eta = np.cumsum(eta)
    centre = np.cumsum(eta * x) / s_eta
    margin = (log_term + np.cumsum((x - mu_prev) ** 2 * _psi(eta))) / s_eta
    lower = lo + width * (centre - margin)
    upper = lo + width * (centre + margin)
    return np.clip(lower, max(lo, 0.0), min(hi, 1.0)), np.clip(upper, max(lo, 0.0), min(hi, 1.0))


class EBConfSeq:
    """Incremental PrPl-EB confidence sequences for many arms (see :func:`eb_confseq`).

    Parameters
    ----------
    n_arms : int
        Number of arms; each arm gets level ``alpha / n_arms`` (union bound).
    alpha : float
        Simultaneous miscoverage over arms and pull counts.
    lo, hi : float
        Range of every per-round estimate (``[-1, 2]`` for the DR estimate, ``docs/selection.md``).
    running_intersection : bool
        Report the intersection of all intervals so far (also valid, never wider).

    Raises
    ------
    InputError
        When ``[lo, hi]`` is empty.
    """

    def __init__(
        self,
        n_arms: int,
        alpha: float = 0.1,
        *,
        lo: float = -1.0,
        hi: float = 2.0,
        running_intersection: bool = False,
    ) -> None:
        _check_alpha(alpha)
        if hi <= lo:
            raise InputError(f"range [lo, hi] = [{lo}, {hi}] is empty")
        self.n_arms, self.alpha, self.lo, self.hi = n_arms, alpha, lo, hi
        self.running_intersection = running_intersection
        self._log = math.log(2.0 * n_arms / alpha)
        self.count = np.zeros(n_arms, dtype=np.int64)
        self._sum_x = np.zeros(n_arms)
        self._mu_prev = np.full(n_arms, 0.5)
        self._var_sum = np.zeros(n_arms)
        self._s_eta = np.zeros(n_arms)
        self._s_eta_x = np.zeros(n_arms)
        self._s_psi = np.zeros(n_arms)
        self._lower = np.full(n_arms, max(lo, 0.0))
        self._upper = np.full(n_arms, min(hi, 1.0))

    def update(self, arm: int, z: float | np.ndarray) -> None:
        """Add one or more successive estimates of ``arm`` (in the order they were made).

        Parameters
        ----------
        arm : int
        z : float or ndarray of shape (L,)
            Each with conditional mean ``mu_arm`` given everything before it.
        """
        width = self.hi - self.lo
        x = np.clip((np.atleast_1d(np.asarray(z, dtype=np.float64)) - self.lo) / width, 0.0, 1.0)
        L = x.size
        k0 = int(self.count[arm])
        ks = k0 + 1 + np.arange(L, dtype=np.float64)
        mu = (0.5 + self._sum_x[arm] + np.cumsum(x)) / (ks + 1)
        mu_prev = np.concatenate(([self._mu_prev[arm]], mu[:-1]))
        var_cum = self._var_sum[arm] + np.cumsum((x - mu) ** 2)
        var_prev = (0.25 + np.concatenate(([self._var_sum[arm]], var_cum[:-1]))) / ks
        eta = np.minimum(np.sqrt(2.0 * self._log / (var_prev * ks * np.log1p(ks))), 0.5)
        self._s_psi[arm] += float(((x - mu_prev) ** 2 * _psi(eta)).sum())
        self._s_eta[arm] += float(eta.sum())
        self._s_eta_x[arm] += float((eta * x).sum())
        self._sum_x[arm] += float(x.sum())
        self._var_sum[arm] = float(var_cum[-1])
        self._mu_prev[arm] = float(mu[-1])
        self.count[arm] = k0 + L
        centre = self._s_eta_x[arm] / self._s_eta[arm]
        margin = (self._log + self._s_psi[arm]) / self._s_eta[arm]
        lower = max(self.lo + width * (centre - margin), self.lo, 0.0)
        upper = min(self.lo + width * (centre + margin), self.hi, 1.0)
        if self.running_intersection:
            lower, upper = max(lower, self._lower[arm]), min(upper, self._upper[arm])
        self._lower[arm], self._upper[arm] = lower, upper

    def set_exact(self, arm: int, value: float) -> None:
        """Collapse ``arm``'s interval to a known exact mean (row fully observed).

        Parameters
        ----------
        arm : int
            The arm fully observed.
        value : float
            Its exact mean.
        """
        self._lower[arm] = self._upper[arm] = value

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """Current ``(lower, upper)``, each of shape (n_arms,).

        Returns
        -------
        lower, upper : ndarray of shape (n_arms,)
            Copies.
        """
        return self._lower.copy(), self._upper.copy()

    def centre(self) -> np.ndarray:
        """eta-weighted centre per arm, shape (n_arms,) (NaN before the first pull).

        Returns
        -------
        ndarray of shape (n_arms,)
        """
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.lo + (self.hi - self.lo) * self._s_eta_x / self._s_eta


class FreedmanConfSeq:
    """Freedman-type confidence sequences on the equal-weight mean of per-round estimates.

    For the martingale ``S_K = sum_k (Z_k - mu)`` with increments bounded by ``R`` and
    predictable quadratic variation ``W_K <= V_K = sum_k w_k^2 / 4`` (``w_k`` the predictable
    width of the conditional range of ``Z_k``), Freedman's inequality with peeling over the
    geometric grid ``v_j = v0 * 2^j`` (``j < J``) and a union over both sides and all arms gives,
    with ``L = log(2 m J / alpha)``: ``|S_K| <= sqrt(2 v L) + (2/3) R L`` for all ``K`` and arms,
    where ``v`` is the smallest grid point ``>= V_K``.

    This bound uses only predictable ranges, not the empirical variance of the estimates (the
    second Freedman step bounding the variance is not implemented), so it does not shrink when
    the proxy is good. Offered for comparison.

    Parameters
    ----------
    n_arms : int
        Number of arms.
    alpha : float
        Simultaneous miscoverage.
    max_pulls : int
        Largest possible number of pulls per arm (sets the peeling grid).
    bound : float
        ``R``, an upper bound on every increment (2 for the DR estimate).
    """

    def __init__(self, n_arms: int, alpha: float = 0.1, *, max_pulls: int, bound: float = 2.0):
        _check_alpha(alpha)
        self.n_arms, self.alpha, self.bound = n_arms, alpha, bound
        self._v0 = 1e-6
        v_max = max(max_pulls, 1) * bound**2 / 4.0
        self._n_grid = math.ceil(math.log2(max(v_max / self._v0, 2.0))) + 1
        self._L = math.log(2.0 * n_arms * self._n_grid / alpha)
        self.count = np.zeros(n_arms, dtype=np.int64)
        self._sum = np.zeros(n_arms)
        self._V = np.zeros(n_arms)
        self._lower = np.zeros(n_arms)
        self._upper = np.ones(n_arms)

    def update(self, arm: int, z: float | np.ndarray, width: float | np.ndarray) -> None:
        """Add estimates ``z`` of ``arm`` whose conditional ranges had widths ``width``.

        Parameters
        ----------
        arm : int
            The arm the estimates are of.
        z : float or ndarray of shape (k,)
            The estimates.
        width : float or ndarray of shape (k,)
            Width of each estimate's conditional range (capped at ``bound``); a float is used
            for every estimate.
        """
        z = np.atleast_1d(np.asarray(z, dtype=np.float64))
        w = np.broadcast_to(np.asarray(width, dtype=np.float64), z.shape)
        self.count[arm] += z.size
        self._sum[arm] += float(z.sum())
        self._V[arm] += float((np.minimum(w, self.bound) ** 2).sum() / 4.0)
        v = self._v0 * 2.0 ** math.ceil(math.log2(max(self._V[arm] / self._v0, 1.0)))
        half = (math.sqrt(2.0 * v * self._L) + 2.0 / 3.0 * self.bound * self._L) / self.count[arm]
        mean = self._sum[arm] / self.count[arm]
        self._lower[arm] = max(mean - half, 0.0)
        self._upper[arm] = min(mean + half, 1.0)

    def set_exact(self, arm: int, value: float) -> None:
        """Collapse ``arm``'s interval to a known exact mean (row fully observed).

        Parameters
        ----------
        arm : int
            The arm fully observed.
        value : float
            Its exact mean.
        """
        self._lower[arm] = self._upper[arm] = value

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """Current ``(lower, upper)``, each of shape (n_arms,).

        Returns
        -------
        lower, upper : ndarray of shape (n_arms,)
            Copies.
        """
        return self._lower.copy(), self._upper.copy()
