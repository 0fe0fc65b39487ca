"""Fused kernels of the random-item EM (numba, serial, float64).

:func:`e_step` makes one pass over the items: each item's log-likelihood over the grid (three
multiply-adds per grid point, plus one per grid point for every cell listed for that item),
its largest value, the exponentials, their sum, and the sums the M-step needs: the law's
column sums ``sum_j w_j R_jg``, each item's ``w_j sum_g R_jg a_g`` and the per-model
corrections ``sum_j c_ij w_j R_jg`` over the listed cells. The posterior matrix ``R`` (J, G)
is never stored. :func:`newton` takes the M-step's Newton steps on every ability in one pass
over (N, G). Both are serial (the fits run beside other processes and bootstrap workers);
float64 throughout, with an exponential and a ``log1p`` written out, and NumPy's error model
(no zero-division checks: no divisor here can be 0), so that LLVM vectorises the loops over the
grid (relative error below 3e-14, :func:`exp64`; 4e-16, :func:`log1p_unit`).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from latentbench._numba_cache import CACHE
from latentbench.irt._kernels import _FASTMATH  # the same flags (no "nnan", "ninf")

__all__ = [
    "LOG_TINY",
    "e_step",
    "exp64",
    "largest",
    "log1p_unit",
    "log_sigmoid_lower",
    "newton",
]


LOG_TINY = float(np.log(np.finfo(np.float64).tiny))
"""Log of the smallest normal double: posteriors below it are flushed to 0 (they change no
sum, and subnormal operands are slow)."""


@intrinsic
def _int64_bits_as_float64(typingctx: Any, x: Any) -> Any:  # pragma: no cover - compile-time
    signature = types.float64(types.int64)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.DoubleType())

    return signature, codegen


@numba.njit(inline="always", fastmath=_FASTMATH, error_model="numpy", cache=CACHE)
def _exp(x: Any) -> Any:  # pragma: no cover - jit
    """exp(x) for float64 x in [-708.39, 709.78] (clamped there): reduction by ln 2 in two
    parts, degree-12 Taylor polynomial on |r| <= ln2 / 2, 2^n built from its bits."""
    x = x if x > -708.39 else -708.39  # ternaries, not min/max: they vectorise
    x = x if x < 709.78 else 709.78
    n = np.floor(x * 1.4426950408889634 + 0.5)
    r = (x - n * 0.6931471803691238) - n * 1.9082149292705877e-10
    p = 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    # an intrinsic is called without its typing context (numba supplies it)
    bits: Any = _int64_bits_as_float64((np.int64(n) + np.int64(1023)) << np.int64(52))  # type: ignore[call-arg]
    return p * bits


@numba.njit(inline="always", fastmath=_FASTMATH, error_model="numpy", cache=CACHE)
def _log1p_unit(e: Any) -> Any:  # pragma: no cover - jit
    """log(1 + e) for float64 e in [0, 1] as 2 atanh(w), w = e / (2 + e) <= 1/3: the series
    to w^35 (truncation below 2e-17 relative), no library call, so loops vectorise."""
    w = e / (2.0 + e)
    w2 = w * w
    acc = 1.0 / 35.0
    acc = acc * w2 + 1.0 / 33.0
    acc = acc * w2 + 1.0 / 31.0
    acc = acc * w2 + 1.0 / 29.0
    acc = acc * w2 + 1.0 / 27.0
    acc = acc * w2 + 1.0 / 25.0
    acc = acc * w2 + 1.0 / 23.0
    acc = acc * w2 + 1.0 / 21.0
    acc = acc * w2 + 1.0 / 19.0
    acc = acc * w2 + 1.0 / 17.0
    acc = acc * w2 + 1.0 / 15.0
    acc = acc * w2 + 1.0 / 13.0
    acc = acc * w2 + 1.0 / 11.0
    acc = acc * w2 + 1.0 / 9.0
    acc = acc * w2 + 1.0 / 7.0
    acc = acc * w2 + 1.0 / 5.0
    acc = acc * w2 + 1.0 / 3.0
    acc = acc * w2 + 1.0
    return 2.0 * w * acc


@numba.njit(fastmath=_FASTMATH, error_model="numpy", cache=CACHE)
def _log1p_array(x: np.ndarray) -> np.ndarray:  # pragma: no cover - jit
    out = np.empty_like(x)
    for k in range(x.size):
        out[k] = _log1p_unit(x[k])
    return out


def log1p_unit(x: np.ndarray) -> np.ndarray:
    """The kernels' ``log(1 + x)`` over an array (for tests), float64 in [0, 1]."""
    out: np.ndarray = _log1p_array(np.ascontiguousarray(x, dtype=np.float64).ravel())
    return out.reshape(np.shape(x))


@numba.njit(fastmath=_FASTMATH, error_model="numpy", cache=CACHE)
def _exp_array(x: np.ndarray) -> np.ndarray:  # pragma: no cover - jit
    out = np.empty_like(x)
    for k in range(x.size):
        out[k] = _exp(x[k])
    return out


def exp64(x: np.ndarray) -> np.ndarray:
    """The kernels' exponential over an array (for tests), float64 in [-708.39, 709.78]."""
    out: np.ndarray = _exp_array(np.ascontiguousarray(x, dtype=np.float64).ravel())
    return out.reshape(np.shape(x))


@numba.njit(inline="always", fastmath=_FASTMATH, error_model="numpy", cache=CACHE)
def _largest(x: Any) -> Any:  # pragma: no cover - jit
    """The largest entry of a float64 array (-1e308 if none is larger; NaN skipped), in
    eight running maxima: one compare-and-select per entry in a chain was the E-step's
    longest dependency (no 'nnan' flag, so LLVM does not vectorise a max reduction). The
    largest of a set is the same whatever the order, so the result is that of the chain."""
    n = x.size
    t0 = t1 = t2 = t3 = t4 = t5 = t6 = t7 = -1e308
    n8 = n - n % 8
    for g in range(0, n8, 8):
        v = x[g]
        t0 = v if v > t0 else t0
        v = x[g + 1]
        t1 = v if v > t1 else t1
        v = x[g + 2]
        t2 = v if v > t2 else t2
        v = x[g + 3]
        t3 = v if v > t3 else t3
        v = x[g + 4]
        t4 = v if v > t4 else t4
        v = x[g + 5]
        t5 = v if v > t5 else t5
        v = x[g + 6]
        t6 = v if v > t6 else t6
        v = x[g + 7]
        t7 = v if v > t7 else t7
    for g in range(n8, n):
        v = x[g]
        t0 = v if v > t0 else t0
    t0 = t1 if t1 > t0 else t0
    t2 = t3 if t3 > t2 else t2
    t4 = t5 if t5 > t4 else t4
    t6 = t7 if t7 > t6 else t6
    t0 = t2 if t2 > t0 else t0
    t4 = t6 if t6 > t4 else t4
    return t4 if t4 > t0 else t0


@numba.njit(fastmath=_FASTMATH, error_model="numpy", cache=CACHE)
def _largest_of(x: np.ndarray) -> float:  # pragma: no cover - jit
    top: float = _largest(x)
    return top


def largest(x: np.ndarray) -> float:
    """The kernels' largest entry of a float64 array (for tests): NaN skipped, at least
    -1e308."""
    return float(_largest_of(np.ascontiguousarray(x, dtype=np.float64).ravel()))


@numba.njit(fastmath=_FASTMATH, error_model="numpy", cache=CACHE)
def e_step(  # pragma: no cover - jit
    s1: np.ndarray,
    s2: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    base: np.ndarray,
    indptr: np.ndarray,
    models: np.ndarray,
    coef: np.ndarray,
    lower: np.ndarray,
    mult: np.ndarray,
    col: np.ndarray,
    ra: np.ndarray,
    corr: np.ndarray,
) -> float:
    """One E-step, fused: ``sum_j mult_j log sum_g exp(l_jg)`` with
    ``l_jg = s1_j a_g + s2_j b_g + base_g + sum_k coef_k lower[models_k, g]`` (k over the
    cells ``indptr[j]:indptr[j + 1]`` of item j). Writes ``col_g = sum_j mult_j R_jg``,
    ``ra_j = mult_j sum_g R_jg a_g`` and ``corr[i, g] = sum_k coef_k mult_j R_jg`` over the
    listed cells (i = models_k), with ``R_j`` the normalised posterior of item j (entries
    below the smallest normal double flushed to 0)."""
    J = s1.size
    G = a.size
    ll = np.empty(G)
    col[:] = 0.0
    corr[:, :] = 0.0
    total = 0.0
    for j in range(J):
        x1 = s1[j]
        x2 = s2[j]
        k0 = indptr[j]
        k1 = indptr[j + 1]
        for g in range(G):
            ll[g] = x1 * a[g] + x2 * b[g] + base[g]
        for k in range(k0, k1):
            i = models[k]
            c = coef[k]
            for g in range(G):
                ll[g] += c * lower[i, g]
        top = _largest(ll)
        norm = 0.0
        for g in range(G):
            d = ll[g] - top
            e = _exp(d)
            e = e if d >= LOG_TINY else 0.0
            ll[g] = e
            norm += e
        scale = mult[j] / norm
        acc = 0.0
        for g in range(G):
            r = ll[g] * scale
            ll[g] = r
            col[g] += r
            acc += r * a[g]
        ra[j] = acc
        for k in range(k0, k1):
            i = models[k]
            c = coef[k]
            for g in range(G):
                corr[i, g] += c * ll[g]
        total += mult[j] * (math.log(norm) + top)
    return total


@numba.njit(fastmath=_FASTMATH, error_model="numpy", cache=CACHE)
def newton(  # pragma: no cover - jit
    theta: np.ndarray,
    correct: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    counts: np.ndarray,
    steps: int,
) -> np.ndarray:
    """``steps`` Newton steps on each ability: gradient ``correct_i - sum_g p_ig M_ig a_g``,
    curvature ``sum_g p_ig (1 - p_ig) M_ig a_g^2``, ``p = sigmoid(theta_i a_g + b_g)``, ``M``
    the expected observed counts ``counts`` (N, G)."""
    N = theta.size
    G = a.size
    out = np.empty(N)
    am = np.empty(G)
    for i in range(N):
        t = theta[i]
        for g in range(G):
            am[g] = counts[i, g] * a[g]
        for _ in range(steps):
            down = 0.0
            curv = 0.0
            for g in range(G):
                p = 1.0 / (1.0 + _exp(-(t * a[g] + b[g])))
                pm = p * am[g]
                down += pm
                curv += pm * (1.0 - p) * a[g]
            t = t + (correct[i] - down) / max(curv, 1e-12)
        out[i] = t
    return out


@numba.njit(fastmath=_FASTMATH, error_model="numpy", cache=CACHE)
def log_sigmoid_lower(
    theta: np.ndarray, a: np.ndarray, b: np.ndarray
) -> np.ndarray:  # pragma: no cover - jit
    """``log sigmoid(-z)``, ``z = theta_i a_g + b_g``, shape (N, G), as
    ``-(max(z, 0) + log1p(exp(-|z|)))``."""
    N = theta.size
    G = a.size
    out = np.empty(N * G)
    for i in range(N):
        t = theta[i]
        for g in range(G):
            z = t * a[g] + b[g]
            m = z if z > 0.0 else 0.0
            out[i * G + g] = -(m + _log1p_unit(_exp(z - 2.0 * m)))  # exp(-|z|)
    return out.reshape((N, G))
