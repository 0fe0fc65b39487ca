"""Numba kernels of the observed-cells (sparse) cBMM sweep.

A sweep is one pass over the observed cells in column order (CSC: ``indptr``, model index,
score), parallel over fixed blocks of items, followed by one small solve per model:

- :func:`column_pass`: at the point ``(U, V, b)``, for every cell the logit, the residual,
  the log-loss and the curvature of the quadratic majorizer; per item, the ``(r + 1) x (r + 1)``
  majorizer problem in ``(v_j, b_j)`` is accumulated and solved (``v_j >= 0`` by a closed form
  for r = 1, exact coordinate descent otherwise); then, with the item's new parameters, every
  cell adds its share of its model's ``r x r`` majorizer problem into that block's per-model
  statistics (scatter into an (N, s) array that stays in cache). The pass also returns the
  log-loss of the point, so the objective of a point costs no extra pass.
- :func:`solve_models`: per model, the block statistics summed in a fixed order, the
  penalty added, and the ``r x r`` system solved.

Gathers in column order are from the model factors (N x r, small, cache resident), never
from the J item parameters, which is what makes the pass run near the speed of streaming the
cells. The blocks are fixed by the data (equal shares of the cells), and every reduction is
over a fixed order, so the results do not depend on the number of threads. All kernels use
numpy's error model (no zero-division checks), which lets LLVM vectorise the per-cell work.

The two sweep kernels use the fastmath flags without ``reassoc`` (:data:`_FASTMATH_ORDERED`),
so that they give the same bits compiled in the process and loaded from numba's cache: numba
optimizes a parallel loop's body on its own, runs that copy in the process that compiled it,
and caches a copy linked into the kernel and optimized again, which ``reassoc`` let LLVM
reassociate differently (docs/performance.md, "Bit-for-bit reproducibility and the numba
cache"). Sums over cells are therefore kept out of the vectorised per-cell loop and run in
cell order.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from latentbench._numba_cache import CACHE
from latentbench.irt._kernels import _FASTMATH, _exp_neg, _log1p_unit

__all__ = [
    "column_pass",
    "model_statistics_size",
    "predict_cells",
    "solve_models",
]

_FASTMATH_ORDERED = _FASTMATH - {"reassoc"}
"""The fastmath flags of the sweep kernels: every flag of the package's but ``reassoc``, so that
the kernel compiled in a process and the one loaded from the cache add in the same order."""


def model_statistics_size(rank: int) -> int:
    """Per-model statistics of the model block: ``h`` (r) and the lower triangle of ``G``."""
    return rank + rank * (rank + 1) // 2


@numba.njit(inline="always", fastmath=_FASTMATH, error_model="numpy", cache=CACHE)
def _cell_terms(y: Any, t: Any, tight: Any) -> Any:  # pragma: no cover - jit
    """Residual ``y - sigmoid(t)``, majorizer curvature and log-loss of one cell at logit t.

    The curvature is the Jaakkola-Jordan bound ``tanh(t / 2) / (2 t)`` when ``tight`` (the
    loss is a linear term plus the even function ``log(2 cosh(t / 2))``, which that quadratic
    majorizes with contact at +-t), inflated by 1e-4 to cover float32 rounding; else Böhning's
    constant 1/4. Both are in units of t; divide by sigma^2 for the x scale. The loss is
    ``softplus(t) - y t`` (soft labels). Written without branches so the loop vectorises.
    """
    at = abs(t)
    e = _exp_neg(at)
    inv = np.float32(1.0) / (np.float32(1.0) + e)
    p = inv if t >= 0 else e * inv
    a2 = at * at
    series = np.float32(0.25) - a2 / np.float32(48.0) + a2 * a2 / np.float32(480.0)
    bound = (np.float32(2.0) * inv - np.float32(1.0)) / (np.float32(2.0) * at)
    w = (series if at < np.float32(0.05) else bound) * np.float32(1.0001)
    w = w if tight else np.float32(0.25)
    loss = max(t, np.float32(0.0)) + _log1p_unit(e) - y * t
    return y - p, w, loss


@numba.njit(inline="always", fastmath=_FASTMATH, error_model="numpy", cache=CACHE)
def _solve_spd(G: Any, h: Any, out: Any, scratch: Any) -> Any:  # pragma: no cover - jit
    """Solve G w = h (G symmetric positive definite, q x q) by Cholesky; False if not PD."""
    q = h.size
    L = scratch
    for i in range(q):
        for j in range(i + 1):
            s = G[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            if i == j:
                if not s > 1e-300:
                    return False
                L[i, i] = np.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    for i in range(q):
        s = h[i]
        for k in range(i):
            s -= L[i, k] * out[k]
        out[i] = s / L[i, i]
    for i in range(q - 1, -1, -1):
        s = out[i]
        for k in range(i + 1, q):
            s -= L[k, i] * out[k]
        out[i] = s / L[i, i]
    return True


@numba.njit(inline="always", fastmath=_FASTMATH, error_model="numpy", cache=CACHE)
def _nonneg_quadratic(G: Any, h: Any, w: Any, r: Any) -> Any:  # pragma: no cover - jit
    """Minimise 1/2 w^T G w - h^T w with w[:r] >= 0, from the feasible start ``w``.

    r = 1: exact closed form (slope at 0, intercept by its normal equation). r > 1: exact
    cyclic coordinate descent (each step minimises along one coordinate, so the quadratic never
    increases), up to 200 cycles or a relative change below 1e-12.
    """
    q = h.size
    if r == 1:
        w[0] = 0.0
        w[1] = h[1] / G[1, 1]
        return
    for _ in range(200):
        change = 0.0
        scale = 1.0
        for k in range(q):
            s = h[k]
            for m in range(q):
                s -= G[k, m] * w[m]
            new = w[k] + s / G[k, k]
            if k < r and new < 0.0:
                new = 0.0
            change = max(change, abs(new - w[k]))
            scale = max(scale, abs(new))
            w[k] = new
        if change <= 1e-12 * scale:
            break


@numba.njit(inline="always", fastmath=_FASTMATH, error_model="numpy", cache=CACHE)
def _solve_item(  # pragma: no cover - jit
    G: Any, h: Any, w: Any, L: Any, r: Any, nonneg: Any, v_old: Any, b_old: Any
) -> Any:
    """Minimise ``1/2 w^T G w - h^T w`` over ``w = (v_j, b_j)`` (``v_j >= 0`` if ``nonneg``)
    into ``w``; False (``w`` untouched) when G is singular."""
    if not _solve_spd(G, h, w, L):
        return False
    if nonneg:
        bad = False
        for m in range(r):
            if w[m] < 0.0:
                bad = True
        if bad:
            for m in range(r):
                w[m] = max(v_old[m], 0.0)
            w[r] = b_old
            _nonneg_quadratic(G, h, w, r)
    return True


@numba.njit(parallel=True, fastmath=_FASTMATH_ORDERED, error_model="numpy", cache=CACHE)
def column_pass(  # pragma: no cover - jit
    indptr: Any,
    rows: Any,
    y: Any,
    bounds: Any,
    U: Any,
    V: Any,
    b: Any,
    inv_sigma: Any,
    tight: Any,
    curvature: Any,
    target: Any,
    nonneg: Any,
    update: Any,
    V_out: Any,
    b_out: Any,
    stats: Any,
    loss: Any,
) -> Any:
    """The cell pass of one sweep from the point ``(U, V, b)`` (see the module docstring).

    Parameters
    ----------
    indptr : int64 (J + 1,)
        Column pointers (CSC).
    rows : int32 (n_obs,)
        Model index of every cell, column order.
    y : float32 (n_obs,)
        Scores, column order.
    bounds : int64 (n_blocks + 1,)
        Item blocks: block ``k`` holds items ``bounds[k]:bounds[k + 1]``.
    U, V, b : float64 (N, r), (J, r), (J,)
        The point.
    inv_sigma : float
        ``1 / sigma``.
    tight : bool
        Majorizer curvature per cell: Jaakkola-Jordan (True) or Böhning's 1/4 (False).
    curvature, target : float64 (r + 1, r + 1), (r + 1,)
        The penalty's Hessian and linear term for one item's ``(v_j, b_j)``.
    nonneg : bool
        Constrain ``v_j >= 0``.
    update : bool
        Update the items (False: they are fixed and copied to the outputs).
    V_out, b_out : float64 (J, r), (J,)
        Outputs: the items' new parameters. An item whose system is singular (no cell and no
        penalty) keeps its values.
    stats : float64 (n_blocks, N, s)
        Output: every block's share of every model's majorizer problem at the new item
        parameters, ``s = model_statistics_size(r)`` (``h``, then the lower triangle of G).
    loss : float64 (n_blocks,)
        Output: every block's log-loss at the point.
    """
    n_blocks = bounds.size - 1
    r = U.shape[1]
    q = r + 1
    inv_s2 = inv_sigma * inv_sigma
    for block in numba.prange(n_blocks):
        share = stats[block]
        share[:] = 0.0
        longest = 0
        for j in range(bounds[block], bounds[block + 1]):
            longest = max(longest, indptr[j + 1] - indptr[j])
        # per-cell scratch of one item (reused): its models' factors, then the cell terms.
        # The gathers are in a loop of their own; the loops that store contiguous results
        # from contiguous inputs then vectorise (a gather and a store in one loop do not)
        factors = np.empty((longest, r))
        weight = np.empty(longest)
        work = np.empty(longest)
        cell_loss = np.empty(longest)
        G = np.empty((q, q))
        h = np.empty(q)
        w = np.empty(q)
        L = np.empty((q, q))
        total = 0.0
        for j in range(bounds[block], bounds[block + 1]):
            lo = indptr[j]
            hi = indptr[j + 1]
            size = hi - lo
            for k in range(size):
                i = rows[lo + k]
                x = b[j]
                for m in range(r):
                    um = U[i, m]
                    factors[k, m] = um
                    x += um * V[j, m]
                work[k] = x
            # the cells: curvature, log-loss and working response z = w x + res / sigma
            for k in range(size):
                x = work[k]
                res, wt, cell = _cell_terms(y[lo + k], np.float32(x * inv_sigma), tight)
                cell_loss[k] = cell
                wc = wt * inv_s2
                weight[k] = wc
                work[k] = wc * x + inv_sigma * res
            # the sums over the item's cells, each in cell order: no reassociation (the
            # kernel's flags leave out 'reassoc'), so the cell pass compiled in this process
            # and the one loaded from numba's cache give the same bits (see the module
            # docstring). A rank-1 item's six sums in one loop (independent chains of
            # additions run side by side)
            s_w = 0.0
            s_z = 0.0
            s_wu = 0.0
            s_uz = 0.0
            s_uu = 0.0
            if update and r == 1:
                for k in range(size):
                    um = factors[k, 0]
                    wu = weight[k] * um
                    total += cell_loss[k]
                    s_w += weight[k]
                    s_z += work[k]
                    s_wu += wu
                    s_uz += work[k] * um
                    s_uu += wu * um
            else:
                for k in range(size):
                    total += cell_loss[k]
                    s_w += weight[k]
                    s_z += work[k]
            if update:
                # the item's problem: G = sum w a a^T + penalty, h = sum a z + target, a = [u, 1]
                G[r, r] = curvature[r, r] + s_w
                h[r] = target[r] + s_z
                if r == 1:
                    G[1, 0] = curvature[1, 0] + s_wu
                    h[0] = target[0] + s_uz
                    G[0, 0] = curvature[0, 0] + s_uu
                for m in range(r if r > 1 else 0):
                    s_wu = 0.0
                    s_uz = 0.0
                    for k in range(size):
                        s_wu += weight[k] * factors[k, m]
                        s_uz += work[k] * factors[k, m]
                    G[r, m] = curvature[r, m] + s_wu
                    h[m] = target[m] + s_uz
                    for n in range(m + 1):
                        s_uu = 0.0
                        for k in range(size):
                            s_uu += weight[k] * factors[k, m] * factors[k, n]
                        G[m, n] = curvature[m, n] + s_uu
                for m in range(q):
                    for n in range(m):
                        G[n, m] = G[m, n]
                if _solve_item(G, h, w, L, r, nonneg, V[j], b[j]):
                    for m in range(r):
                        V_out[j, m] = w[m]
                    b_out[j] = w[r]
                else:
                    for m in range(r):
                        V_out[j, m] = V[j, m]
                    b_out[j] = b[j]
            else:
                for m in range(r):
                    V_out[j, m] = V[j, m]
                b_out[j] = b[j]
            # the models' problems at the new item parameters: h_i += v (z - w b_new),
            # G_i += w v v^T (majorizer still built at the point)
            b_new = b_out[j]
            if r == 1:  # the same, with the loop-invariant products hoisted (measured faster)
                vm = V_out[j, 0]
                vv = vm * vm
                for k in range(size):
                    i = rows[lo + k]
                    wc = weight[k]
                    share[i, 0] += vm * (work[k] - wc * b_new)
                    share[i, 1] += wc * vv
                continue
            for k in range(size):
                i = rows[lo + k]
                wc = weight[k]
                z = work[k] - wc * b_new
                t = r
                for m in range(r):
                    vm = V_out[j, m]
                    share[i, m] += vm * z
                    for n in range(m + 1):
                        share[i, t] += wc * vm * V_out[j, n]
                        t += 1
        loss[block] = total


@numba.njit(fastmath=_FASTMATH_ORDERED, error_model="numpy", cache=CACHE)
def solve_models(  # pragma: no cover - jit
    stats: Any,
    U: Any,
    curvature: Any,
    target: Any,
    U_out: Any,
) -> Any:
    """Every model's ``r x r`` majorizer problem from the summed block statistics.

    Serial: a solve is a few dozen operations per model, less than starting a parallel loop
    (which cost 40-60 us a call on one thread, more than the solves of every model of a
    history-free run's refit), and each model's arithmetic is the same in either.

    Parameters
    ----------
    stats : float64 (n_blocks, N, s)
        From :func:`column_pass` (summed over blocks in order).
    U : float64 (N, r)
        The models' current factors (kept where a system is singular).
    curvature, target : float64 (r, r), (r,)
        Penalty Hessian and linear term of one row.
    U_out : float64 (N, r)
        Output.
    """
    n_blocks, N, _ = stats.shape
    r = U.shape[1]
    G = np.empty((r, r))
    h = np.empty(r)
    u = np.empty(r)
    L = np.empty((r, r))
    for i in range(N):
        t = r
        for m in range(r):
            h[m] = target[m]
            for n in range(m + 1):
                G[m, n] = curvature[m, n]
        for block in range(n_blocks):
            t = r
            for m in range(r):
                h[m] += stats[block, i, m]
                for n in range(m + 1):
                    G[m, n] += stats[block, i, t]
                    t += 1
        for m in range(r):
            for n in range(m):
                G[n, m] = G[m, n]
        if _solve_spd(G, h, u, L):
            for m in range(r):
                U_out[i, m] = u[m]
        else:
            for m in range(r):
                U_out[i, m] = U[i, m]


@numba.njit(parallel=True, error_model="numpy", cache=CACHE)
def predict_cells(  # pragma: no cover - jit
    rows: Any,
    cols: Any,
    U: Any,
    V: Any,
    b: Any,
    inv_sigma: Any,
    out: Any,
) -> Any:
    """``sigmoid((u_i . v_j + b_j) / sigma)`` for the requested cells, float64."""
    n = rows.size
    for k in numba.prange(n):
        i = rows[k]
        j = cols[k]
        x = b[j]
        for m in range(U.shape[1]):
            x += U[i, m] * V[j, m]
        out[k] = 0.5 * (1.0 + np.tanh(0.5 * x * inv_sigma))
