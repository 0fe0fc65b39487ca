"""Fused elementwise kernels of the cBMM sweep (numba, parallel over row blocks).

One pass over the (N, J) score matrix computes, for every cell, the logit
``t = (u_i . v_j + b_j) / sigma``, the residual ``r = y - sigmoid(t)`` (0 for a missing cell),
the Bernoulli log-loss with soft labels ``softplus(t) - y t`` (summed in float64 over observed
cells only) and the products ``A^T R`` with ``A = [U, 1]`` that the item block needs. A second
pass computes ``R @ V`` for the model block. Scores are read as float32; every reduction
accumulates in float64.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from latentbench._numba_cache import CACHE  # also chooses numba's workqueue layer

__all__ = [
    "NUMPY_MAX_CELLS",
    "batched_nnls",
    "model_gradient_curvature",
    "residual_pass",
    "residual_times_factors",
]

NUMPY_MAX_CELLS = 250_000
"""Matrices of at most this many cells (200 x 1000, the demo) take plain NumPy passes instead
of the numba kernels: a few milliseconds per sweep there, and no compilation, which costs
10-20 s of CPU the first time a fresh environment (CI, a notebook, a container) runs a fit.
Larger matrices take the fused numba kernels (compiled once, cached). Set the environment
variable ``LATENTBENCH_NUMPY_MAX_CELLS`` to move the threshold (0: numba always)."""


def _numpy_max_cells() -> int:
    value = os.environ.get("LATENTBENCH_NUMPY_MAX_CELLS")
    return NUMPY_MAX_CELLS if value is None or not value.strip().isdigit() else int(value)


def _numpy_cells(
    Y: np.ndarray, U: np.ndarray, V: np.ndarray, b: np.ndarray, inv_sigma: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Logits, observed mask, labels (0 where missing) and probabilities, float64 (N, J)."""
    T = (np.asarray(U, np.float64) @ np.asarray(V, np.float64).T + b) * inv_sigma
    observed = ~np.isnan(Y)
    y = np.where(observed, Y, 0.0)
    p = 0.5 * (1.0 + np.tanh(0.5 * T))  # sigmoid, no overflow
    return T, observed, y, p


def _residual_pass_numpy(
    Y: np.ndarray, U: np.ndarray, V: np.ndarray, b: np.ndarray, inv_sigma: float, R: np.ndarray
) -> tuple[float, np.ndarray]:
    """:func:`residual_pass` in plain NumPy (float64 throughout; no compilation).

    The operations of :func:`_numpy_cells` and :func:`~latentbench.irt._objective.softplus`,
    one by one in the same order, written into three (N, J) buffers instead of a new array
    for each (about fifteen): the same bits, at about half the time (every small fit's sweep
    runs this; ``benchmarks/bench_residual_pass.py``). The loss sums the observed cells in
    row order as before (all of them, in place, when none is missing).
    """
    T = np.asarray(U, np.float64) @ np.asarray(V, np.float64).T
    T += b
    T *= inv_sigma
    missing = np.isnan(Y)
    any_missing = bool(missing.any())
    y = Y.astype(np.float64)
    if any_missing:
        y[missing] = 0.0
    # softplus(T) - y T, softplus as max(T, 0) + log1p(exp(-|T|))
    s = np.abs(T)
    np.negative(s, out=s)
    np.exp(s, out=s)
    np.log1p(s, out=s)
    w = np.maximum(T, 0.0)
    np.add(w, s, out=s)
    np.multiply(y, T, out=w)
    np.subtract(s, w, out=s)
    loss = float(np.sum(s[~missing] if any_missing else s.ravel()))
    # the residual y - sigmoid(T), sigmoid as 0.5 (1 + tanh(T / 2)); 0 where missing
    p = np.multiply(T, 0.5, out=w)
    np.tanh(p, out=p)
    p += 1.0
    p *= 0.5
    residual = np.subtract(y, p, out=y)
    if any_missing:
        residual[missing] = 0.0
    R[...] = residual
    atr = np.vstack([U.T @ residual, residual.sum(axis=0)])
    return loss, atr


_FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}  # no 'nnan': NaN marks missing cells


@intrinsic
def _int32_bits_as_float32(typingctx: Any, x: Any) -> Any:  # pragma: no cover - compile-time
    signature = types.float32(types.int32)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.FloatType())

    return signature, codegen


@numba.njit(inline="always", fastmath=_FASTMATH, cache=CACHE)
def _exp_neg(s: Any) -> Any:  # pragma: no cover - jit
    """exp(-s) for float32 s >= 0: Cody-Waite reduction and a degree-6 polynomial (Cephes
    expf coefficients), 2^n built from its bits. Written out so LLVM can vectorise the loop."""
    x = -min(s, np.float32(87.0))
    n = math.floor(x * np.float32(1.44269504) + np.float32(0.5))
    g = x - n * np.float32(0.693359375) + n * np.float32(2.12194440e-4)
    z = g * g
    p = (
        (
            (
                (np.float32(1.9875691500e-4) * g + np.float32(1.3981999507e-3)) * g
                + np.float32(8.3334519073e-3)
            )
            * g
            + np.float32(4.1665795894e-2)
        )
        * g
        + np.float32(1.6666665459e-1)
    ) * g + np.float32(5.0000001201e-1)
    p = p * z + g + np.float32(1.0)
    # an intrinsic is called without its typing context (numba supplies it)
    bits: Any = _int32_bits_as_float32((np.int32(n) + np.int32(127)) << np.int32(23))  # type: ignore[call-arg]
    return p * bits


@numba.njit(inline="always", fastmath=_FASTMATH, cache=CACHE)
def _log1p_unit(e: Any) -> Any:  # pragma: no cover - jit
    """log(1 + e) for float32 e in [0, 1] as 2 atanh(w), w = e / (2 + e) <= 1/3 (7 terms,
    relative error ~2e-7, exact to the last bits for tiny e)."""
    w = e / (np.float32(2.0) + e)
    w2 = w * w
    acc = np.float32(1.0 / 13.0)
    acc = acc * w2 + np.float32(1.0 / 11.0)
    acc = acc * w2 + np.float32(1.0 / 9.0)
    acc = acc * w2 + np.float32(1.0 / 7.0)
    acc = acc * w2 + np.float32(1.0 / 5.0)
    acc = acc * w2 + np.float32(1.0 / 3.0)
    acc = acc * w2 + np.float32(1.0)
    return np.float32(2.0) * w * acc


def _read_only(Y: np.ndarray) -> np.ndarray:
    """``Y`` as a read-only view (no copy) for a kernel call: numba compiles a kernel once
    per signature and an array's read-only flag is part of it, so the held-out fits'
    writable copies and a :class:`~latentbench.io.ResponseMatrix`'s read-only scores made a
    second compile of each pass (5-8 s of CPU on a cold cache). Same values, same code."""
    if not Y.flags.writeable:
        return Y
    view = Y.view()
    view.flags.writeable = False
    return view


def _chunks(n: int) -> int:
    """Row blocks of a parallel pass: a fixed count (not the thread count), so the order of
    every floating-point reduction, and hence the fit, is the same whatever the number of
    threads (bootstrap workers and the main process agree bit for bit)."""
    return max(1, min(n, 32))


def _sum_in_order(parts: np.ndarray) -> float:
    """The sum of a pass's per-block parts, first to last, in Python. Summed in the parallel
    kernel (``parts.sum()``), numba made it a reduction over its threads, so the loss depended
    on the thread count in its last bits (MMLU-Pro's rank-2 fit.json: loss 142146.52305858152
    on 2 threads, 142146.5230585815 on 1)."""
    total = 0.0
    for part in parts.tolist():
        total += part
    return total


@numba.njit(inline="always", fastmath=_FASTMATH, cache=CACHE)
def _cell(y: Any, t: Any) -> tuple[Any, Any]:  # pragma: no cover - jit
    """One cell: residual ``y - sigmoid(t)`` and loss ``softplus(t) - y t``; (0, 0) if y is NaN."""
    observed = y == y
    ys = y if observed else np.float32(0.0)
    e = _exp_neg(abs(t))
    inv = np.float32(1.0) / (np.float32(1.0) + e)
    p = inv if t >= 0 else e * inv
    residual = ys - p if observed else np.float32(0.0)
    loss = max(t, np.float32(0.0)) + _log1p_unit(e) - ys * t
    return residual, (loss if observed else np.float32(0.0))


@numba.njit(parallel=True, fastmath=_FASTMATH, cache=CACHE)
def _residual_pass_rank1(  # pragma: no cover - jit
    Y: np.ndarray,
    u: np.ndarray,
    v: np.ndarray,
    b: np.ndarray,
    inv_sigma: float,
    R: np.ndarray,
    n_chunks: int,
) -> tuple[np.ndarray, np.ndarray]:
    n, m = Y.shape
    loss_parts = np.zeros(n_chunks)
    atr_parts = np.zeros((n_chunks, 2, m))
    step = (n + n_chunks - 1) // n_chunks
    for c in numba.prange(n_chunks):
        lo = c * step
        hi = min(n, lo + step)
        acc_u = atr_parts[c, 0]
        acc_1 = atr_parts[c, 1]
        loss = 0.0
        for i in range(lo, hi):
            ui = u[i]
            us = np.float32(ui * inv_sigma)
            row = Y[i]
            out = R[i]
            row_loss = 0.0
            for j in range(m):
                r, cell = _cell(row[j], us * v[j] + b[j])
                row_loss += cell
                out[j] = r
                acc_u[j] += ui * r
                acc_1[j] += r
            loss += row_loss
        loss_parts[c] = loss
    return loss_parts, atr_parts.sum(axis=0)  # the parts: see _sum_in_order


@numba.njit(parallel=True, fastmath=_FASTMATH, cache=CACHE)
def _residual_from_logits(  # pragma: no cover - jit
    Y: np.ndarray, T: np.ndarray, R: np.ndarray, n_chunks: int
) -> Any:
    """Residuals (written to R) and the loss's parts (one per row block, see
    :func:`_sum_in_order`) from precomputed logits T, both (rows, J) float32."""
    n, m = Y.shape
    loss_parts = np.zeros(n_chunks)
    step = (n + n_chunks - 1) // n_chunks
    for c in numba.prange(n_chunks):
        lo = c * step
        hi = min(n, lo + step)
        loss = 0.0
        for i in range(lo, hi):
            row = Y[i]
            logits = T[i]
            out = R[i]
            row_loss = 0.0
            for j in range(m):
                r, cell = _cell(row[j], logits[j])
                row_loss += cell
                out[j] = r
            loss += row_loss
        loss_parts[c] = loss
    return loss_parts


def _residual_pass_blocked(
    Y: np.ndarray,
    U: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    inv_sigma: float,
    R: np.ndarray,
    block_rows: int = 512,
) -> tuple[float, np.ndarray]:
    """Rank r >= 2: logits of a block of rows by single-precision BLAS, then the fused
    elementwise kernel writes residuals in place, then ``[U, 1]^T R`` by BLAS; partial
    products are summed over blocks in float64."""
    n, m = Y.shape
    r = U.shape[1]
    U32 = np.ascontiguousarray(U * inv_sigma, dtype=np.float32)
    Vt32 = np.ascontiguousarray(V.T, dtype=np.float32)
    b32 = (np.asarray(b, dtype=np.float64) * inv_sigma).astype(np.float32)
    Ut32 = np.ascontiguousarray(U.T, dtype=np.float32)
    atr = np.zeros((r + 1, m))
    loss = 0.0
    n_chunks = _chunks(min(block_rows, n))
    logits = np.empty((min(block_rows, n), m), dtype=np.float32)
    ones = np.ones(min(block_rows, n), dtype=np.float32)
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        T = logits[: stop - start]
        np.matmul(U32[start:stop], Vt32, out=T)
        T += b32
        out = R[start:stop]
        loss += _sum_in_order(_residual_from_logits(Y[start:stop], T, out, n_chunks))
        atr[:r] += Ut32[:, start:stop] @ out
        atr[r] += ones[: stop - start] @ out
    return loss, atr


def residual_pass(
    Y: np.ndarray, U: np.ndarray, V: np.ndarray, b: np.ndarray, sigma: float, R: np.ndarray
) -> tuple[float, np.ndarray]:
    """Residuals, loss and ``A^T R`` in one pass.

    Parameters
    ----------
    Y : ndarray of shape (N, J), float32
        Scores in [0, 1], NaN = missing.
    U : ndarray of shape (N, r), float64
    V : ndarray of shape (J, r), float64
    b : ndarray of shape (J,), float64
    sigma : float
    R : ndarray of shape (N, J), float32
        Output buffer, overwritten with ``y - sigmoid(x / sigma)`` (0 where missing).

    Returns
    -------
    loss : float
        Sum over observed cells of ``softplus(t) - y t`` (the Bernoulli negative log-likelihood
        with soft labels; for binary y it equals ``log(1 + exp(-y_pm t))``).
    atr : ndarray of shape (r + 1, J)
        ``[U, 1]^T R``.
    """
    inv_sigma = 1.0 / sigma
    if Y.size <= _numpy_max_cells():
        return _residual_pass_numpy(Y, U, V, np.asarray(b, dtype=np.float64), inv_sigma, R)
    Y = _read_only(Y)  # one compiled signature (read-only scores) for every caller
    n_chunks = _chunks(Y.shape[0])
    b32 = (np.asarray(b, dtype=np.float64) * inv_sigma).astype(np.float32)
    if U.shape[1] == 1:
        parts, atr = _residual_pass_rank1(
            Y,
            np.ascontiguousarray(U[:, 0], dtype=np.float64),
            np.ascontiguousarray(V[:, 0], dtype=np.float32),
            b32,
            inv_sigma,
            R,
            n_chunks,
        )
        loss = _sum_in_order(parts)
    else:
        loss, atr = _residual_pass_blocked(Y, U, V, b, inv_sigma, R)
    return float(loss), atr


def residual_times_factors(R: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``R @ V`` for R (N, J) float32 and V (J, r): single-precision BLAS (a memory-bound
    matrix-vector product, blocked accumulation), returned as float64 (N, r)."""
    return (R @ np.ascontiguousarray(V, dtype=np.float32)).astype(np.float64)


@numba.njit(parallel=True, fastmath=_FASTMATH, cache=CACHE)
def _model_gradient_curvature(  # pragma: no cover - jit
    Y: np.ndarray, U: np.ndarray, V: np.ndarray, b: np.ndarray, inv_sigma: float
) -> tuple[np.ndarray, np.ndarray]:
    n, m = Y.shape
    r = U.shape[1]
    grad = np.zeros((n, r))
    curv = np.zeros((n, r, r))
    for i in numba.prange(n):
        g = np.zeros(r)
        h = np.zeros((r, r))
        row = Y[i]
        u = U[i]
        for j in range(m):
            y = row[j]
            if np.isnan(y):
                continue
            x = b[j]
            for k in range(r):
                x += u[k] * V[j, k]
            # the sweep's single-precision cell (fast exp): p = y - residual
            residual32, _ = _cell(y, np.float32(x * inv_sigma))
            residual = float(residual32)
            p = y - residual
            w = p * (1.0 - p)
            for k in range(r):
                vk = V[j, k]
                g[k] += residual * vk
                for q in range(r):
                    h[k, q] += w * vk * V[j, q]
        grad[i] = g
        curv[i] = h
    return grad, curv


@numba.njit(parallel=True, fastmath=_FASTMATH, cache=CACHE)
def _model_gradient_curvature_rank1(  # pragma: no cover - jit
    Y: np.ndarray, u: np.ndarray, v: np.ndarray, b: np.ndarray, inv_sigma: float
) -> tuple[np.ndarray, np.ndarray]:
    n, m = Y.shape
    grad = np.zeros(n)
    curv = np.zeros(n)
    v32 = v.astype(np.float32)
    b32 = b.astype(np.float32)
    for i in numba.prange(n):
        us = np.float32(u[i] * inv_sigma)
        row = Y[i]
        g = np.float32(0.0)
        h = np.float32(0.0)
        for j in range(m):
            y = row[j]
            residual, _ = _cell(y, us * v32[j] + b32[j] * np.float32(inv_sigma))
            p = (y if y == y else np.float32(0.0)) - residual
            w = p * (np.float32(1.0) - p) if y == y else np.float32(0.0)
            g += residual * v32[j]
            h += w * v32[j] * v32[j]
        grad[i] = g
        curv[i] = h
    return grad, curv


def model_gradient_curvature(
    Y: np.ndarray, U: np.ndarray, V: np.ndarray, b: np.ndarray, sigma: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per-model sums over observed cells, in one parallel pass over the rows.

    Parameters
    ----------
    Y : ndarray of shape (N, J), float32
        Scores in [0, 1], NaN = missing.
    U : ndarray of shape (N, r)
    V : ndarray of shape (J, r)
    b : ndarray of shape (J,)
    sigma : float

    Returns
    -------
    residual_v : ndarray of shape (N, r)
        ``sum_j (y_ij - p_ij) v_j`` with ``p = sigmoid((U V^T + b) / sigma)``.
    weight_vv : ndarray of shape (N, r, r)
        ``sum_j p_ij (1 - p_ij) v_j v_j^T``.
    """
    if Y.size <= _numpy_max_cells():  # plain NumPy: no compilation for small matrices
        V64 = np.asarray(V, dtype=np.float64)
        _, observed, y, p = _numpy_cells(Y, U, V64, np.asarray(b, np.float64), 1.0 / sigma)
        residual = np.where(observed, y - p, 0.0)
        w = p * (1.0 - p) * observed
        return residual @ V64, np.einsum("ij,jk,jl->ikl", w, V64, V64)
    Y = _read_only(Y)  # one compiled signature (read-only scores) for every caller
    if U.shape[1] == 1:
        g, h = _model_gradient_curvature_rank1(
            Y,
            np.ascontiguousarray(U[:, 0], dtype=np.float64),
            np.ascontiguousarray(V[:, 0], dtype=np.float64),
            np.ascontiguousarray(b, dtype=np.float64),
            1.0 / float(sigma),
        )
        return g[:, None], h[:, None, None]
    return _model_gradient_curvature(
        Y,
        np.ascontiguousarray(U, dtype=np.float64),
        np.ascontiguousarray(V, dtype=np.float64),
        np.ascontiguousarray(b, dtype=np.float64),
        1.0 / float(sigma),
    )


@numba.njit(cache=CACHE)
def _solve_free(  # pragma: no cover - jit
    G: np.ndarray, rhs: np.ndarray, free: np.ndarray, z: np.ndarray
) -> None:
    """``z`` minimises ``0.5 z^T G z - rhs^T z`` with ``z = 0`` off ``free`` (Cholesky)."""
    K = rhs.size
    idx = np.empty(K, dtype=np.int64)
    n = 0
    for k in range(K):
        if free[k]:
            idx[n] = k
            n += 1
    L = np.empty((n, n))
    y = np.empty(n)
    for p in range(n):
        y[p] = rhs[idx[p]]
        for q in range(n):
            L[p, q] = G[idx[p], idx[q]]
    for p in range(n):  # L L^T, in place (lower triangle)
        s = L[p, p]
        for q in range(p):
            s -= L[p, q] * L[p, q]
        d = math.sqrt(max(s, 1e-300))
        L[p, p] = d
        for t in range(p + 1, n):
            v = L[t, p]
            for q in range(p):
                v -= L[t, q] * L[p, q]
            L[t, p] = v / d
    for p in range(n):  # forward
        v = y[p]
        for q in range(p):
            v -= L[p, q] * y[q]
        y[p] = v / L[p, p]
    for p in range(n - 1, -1, -1):  # backward
        v = y[p]
        for q in range(p + 1, n):
            v -= L[q, p] * y[q]
        y[p] = v / L[p, p]
    z[:] = 0.0
    for p in range(n):
        z[idx[p]] = y[p]


@numba.njit(cache=CACHE)
def _batched_nnls(  # pragma: no cover - jit
    G: np.ndarray, rhs: np.ndarray, W0: np.ndarray, r: int
) -> np.ndarray:
    K, J = rhs.shape
    W = np.empty((K, J))
    w = np.empty(K)
    z = np.empty(K)
    g = np.empty(K)
    c = np.empty(K)
    free = np.empty(K, dtype=np.bool_)
    for j in range(J):
        scale = 0.0
        for k in range(K):
            w[k] = W0[k, j] if k >= r else max(W0[k, j], 0.0)
            free[k] = k >= r or w[k] > 0.0
            c[k] = rhs[k, j]
            scale = max(scale, abs(c[k]))
        tol = 1e-12 * (1.0 + scale)
        for _ in range(4 * K + 8):  # Lawson-Hanson: finite; the cap guards rounding
            for _ in range(K + 1):  # optimal on the free set, staying feasible
                _solve_free(G, c, free, z)
                alpha = 1.0
                block = -1
                for k in range(r):
                    if free[k] and z[k] <= 0.0:
                        gap = w[k] - z[k]
                        step = w[k] / gap if gap > 0.0 else 0.0
                        if block < 0 or step < alpha:
                            alpha = step
                            block = k
                if block < 0:
                    for k in range(K):
                        w[k] = z[k]
                    break
                for k in range(K):
                    w[k] += alpha * (z[k] - w[k])
                w[block] = 0.0
                for k in range(r):
                    if free[k] and w[k] <= 0.0:
                        free[k] = False
                        w[k] = 0.0
            worst = -1
            most = -tol
            for k in range(K):
                v = -c[k]
                for m in range(K):
                    v += G[k, m] * w[m]
                g[k] = v
                if k < r and not free[k] and v < most:
                    most = v
                    worst = k
            if worst < 0:
                break
            free[worst] = True
        for k in range(K):
            W[k, j] = w[k]
    return W


def batched_nnls(G: np.ndarray, rhs: np.ndarray, W0: np.ndarray, r: int) -> np.ndarray:
    """Minimise ``0.5 w^T G w - rhs^T w`` with ``w[:r] >= 0`` for every column (shared ``G``).

    An exact active-set method (Lawson-Hanson) per column, warm-started from ``W0``: it
    solves the problem on a set of free coordinates (Cholesky), steps back to feasibility
    along the segment when a constrained coordinate would turn negative (fixing it at 0), and
    frees the fixed coordinate with the most negative gradient until none is left. Every
    iterate is feasible and no step increases the objective, so the result is never worse
    than the start (all that monotone MM needs); at convergence it is the exact minimiser.

    Parameters
    ----------
    G : ndarray of shape (K, K)
        Symmetric positive definite (``K = r + 1``: the factors and the intercept).
    rhs : ndarray of shape (K, J)
    W0 : ndarray of shape (K, J)
        Starting points (their first ``r`` rows are clipped at 0).
    r : int
        The constrained leading coordinates.

    Returns
    -------
    ndarray of shape (K, J), float64
    """
    out: np.ndarray = _batched_nnls(
        np.ascontiguousarray(G, dtype=np.float64),
        np.ascontiguousarray(rhs, dtype=np.float64),
        np.ascontiguousarray(W0, dtype=np.float64),
        int(r),
    )
    return out
