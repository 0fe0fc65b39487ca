"""Numba kernels of the observed-cells (sparse) cBMM sweep.

The observed cells are held twice, in row order (CSR: ``indptr``, item index, score) and in
column order (CSC: ``indptr``, model index, score), so that both block updates stream through
their cells. Every kernel touches each observed cell a fixed number of times, so the cost of a
sweep is proportional to the number of observed cells, never to ``n_models * n_items``.

- :func:`item_update`: one pass in column order. For every item j it accumulates the Gram
  matrix ``sum_i a_i a_i^T`` (``a_i = [u_i, 1]``) and ``sum_i a_i r_ij`` over the item's observed
  cells, then solves the item's ``(r + 1) x (r + 1)`` majorizer problem (penalty curvature and
  target added), with ``v_j >= 0`` by a closed form (r = 1) or exact coordinate descent.
- :func:`model_update`: one pass in row order. For every model i it rebuilds the working
  response of its cells at the sweep's start point, solves its ``r x r`` problem with the new
  item parameters, then evaluates the log-loss of its cells at the new point (the cells are
  still in cache), so one sweep returns the next iterate and its negative log-likelihood.
- :func:`row_losses`: the negative log-likelihood of every row at a given point.

All rows and items are independent inside a pass, and every reduction is over a fixed order,
so the results do not depend on the number of threads.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from latentbench.irt._kernels import _FASTMATH, _cell, _exp_neg

__all__ = [
    "item_update",
    "model_update",
    "predict_cells",
    "row_losses",
]

_N_CHUNKS = 256  # parallel work units (items or models); fixed, for load balance


@numba.njit(inline="always", fastmath=_FASTMATH, cache=True)
def _cell_curvature(y: Any, t: Any, tight: Any) -> Any:  # pragma: no cover - jit
    """Residual ``y - sigmoid(t)`` and the curvature of the quadratic majorizer at ``t``.

    ``tight``: the Jaakkola-Jordan bound ``tanh(t / 2) / (2 t)`` (the loss is a linear term
    plus the even function ``log(2 cosh(t / 2))``, which that quadratic majorizes with contact
    at +-t), inflated by 1e-4 to cover float32 rounding; else Böhning's constant 1/4. Both are
    in units of t; divide by sigma^2 for the x scale.
    """
    at = abs(t)
    e = _exp_neg(at)
    inv = np.float32(1.0) / (np.float32(1.0) + e)
    p = inv if t >= 0 else e * inv
    if not tight:
        return y - p, np.float32(0.25)
    if at < np.float32(0.05):
        a2 = at * at
        w = np.float32(0.25) - a2 / np.float32(48.0) + a2 * a2 / np.float32(480.0)
    else:
        w = (np.float32(2.0) * inv - np.float32(1.0)) / (np.float32(2.0) * at)
    return y - p, w * np.float32(1.0001)


@numba.njit(inline="always", fastmath=_FASTMATH, cache=True)
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


@numba.njit(inline="always", cache=True)
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


@numba.njit(inline="always", cache=True)
def _lines(chunk: Any, n: Any) -> Any:  # pragma: no cover - jit
    """The lines (items or models) of work unit ``chunk`` out of ``n``: ``(start, stop)``."""
    step = (n + _N_CHUNKS - 1) // _N_CHUNKS
    return chunk * step, min(n, (chunk + 1) * step)


@numba.njit(inline="always", fastmath=_FASTMATH, cache=True)
def _predictor(U: Any, i: Any, V: Any, j: Any, b: Any) -> Any:  # pragma: no cover - jit
    """The linear predictor ``x_ij = b_j + u_i . v_j`` (rank r, 2-D factors)."""
    x = b[j]
    for m in range(U.shape[1]):
        x += U[i, m] * V[j, m]
    return x


@numba.njit(inline="always", fastmath=_FASTMATH, cache=True)
def _row_loss(  # pragma: no cover - jit
    lo: Any, hi: Any, cols: Any, y: Any, U: Any, i: Any, V: Any, b: Any, inv_sigma: Any
) -> Any:
    """Log-loss of row ``i``'s cells ``lo:hi`` (row order) at (U, V, b), rank r."""
    loss = 0.0
    for k in range(lo, hi):
        _, cell = _cell(y[k], np.float32(_predictor(U, i, V, cols[k], b) * inv_sigma))
        loss += cell
    return loss


@numba.njit(inline="always", fastmath=_FASTMATH, cache=True)
def _row_loss_rank1(  # pragma: no cover - jit
    lo: Any, hi: Any, cols: Any, y: Any, us: Any, v: Any, b: Any, inv_sigma: Any
) -> Any:
    """:func:`_row_loss` for r = 1, with ``us = u_i / sigma``."""
    loss = 0.0
    for k in range(lo, hi):
        j = cols[k]
        _, cell = _cell(y[k], np.float32(us * v[j] + b[j] * inv_sigma))
        loss += cell
    return loss


@numba.njit(parallel=True, fastmath=_FASTMATH, cache=True)
def item_update(  # pragma: no cover - jit
    indptr: Any,
    rows: Any,
    y: Any,
    U: Any,
    V: Any,
    b: Any,
    inv_sigma: Any,
    tight: Any,
    curvature: Any,
    target: Any,
    nonneg: Any,
    V_out: Any,
    b_out: Any,
) -> Any:
    """Exact minimiser of the observed-cells majorizer over every item's (v_j, b_j).

    Parameters
    ----------
    indptr : int64 (J + 1,)
        Column pointers (CSC).
    rows : int32 (n_obs,)
        Model index of every cell, column order.
    y : float32 (n_obs,)
        Scores, column order.
    U, V, b : float64 (N, r), (J, r), (J,)
        The sweep's start point.
    inv_sigma : float
        ``1 / sigma``.
    tight : bool
        Majorizer curvature per cell: Jaakkola-Jordan (True) or Böhning's 1/4 (False).
    curvature, target : float64 (r + 1, r + 1), (r + 1,)
        The penalty's Hessian and linear term for one item's ``(v_j, b_j)``.
    nonneg : bool
        Constrain ``v_j >= 0``.
    V_out, b_out : float64 (J, r), (J,)
        Outputs. An item whose system is singular (no cell and no penalty) keeps its values.
    """
    J = indptr.size - 1
    r = U.shape[1]
    q = r + 1
    inv_s2 = inv_sigma * inv_sigma
    for chunk in numba.prange(_N_CHUNKS):
        gram = np.empty((q, q))
        G = np.empty((q, q))
        atr = np.empty(q)
        ax = np.empty(q)
        h = np.empty(q)
        w = np.empty(q)
        a = np.empty(q)
        L = np.empty((q, q))
        a[r] = 1.0
        start, stop = _lines(chunk, J)
        for j in range(start, stop):
            gram[:] = 0.0
            atr[:] = 0.0
            ax[:] = 0.0
            for k in range(indptr[j], indptr[j + 1]):
                i = rows[k]
                x = _predictor(U, i, V, j, b)
                for m in range(r):
                    a[m] = U[i, m]
                res, wt = _cell_curvature(y[k], np.float32(x * inv_sigma), tight)
                wc = wt * inv_s2
                for m in range(q):
                    atr[m] += a[m] * res
                    ax[m] += wc * a[m] * x
                    for n in range(m + 1):
                        gram[m, n] += wc * a[m] * a[n]
            for m in range(q):
                for n in range(m):
                    gram[n, m] = gram[m, n]
            for m in range(q):
                for n in range(q):
                    G[m, n] = gram[m, n] + curvature[m, n]
                h[m] = ax[m] + inv_sigma * atr[m] + target[m]
            if not _solve_spd(G, h, w, L):
                for m in range(r):
                    V_out[j, m] = V[j, m]
                b_out[j] = b[j]
                continue
            if nonneg:
                bad = False
                for m in range(r):
                    if w[m] < 0.0:
                        bad = True
                if bad:
                    for m in range(r):
                        w[m] = max(V[j, m], 0.0)
                    w[r] = b[j]
                    _nonneg_quadratic(G, h, w, r)
            for m in range(r):
                V_out[j, m] = w[m]
            b_out[j] = w[r]


@numba.njit(parallel=True, fastmath=_FASTMATH, cache=True)
def model_update(  # pragma: no cover - jit
    indptr: Any,
    cols: Any,
    y: Any,
    U_old: Any,
    V_old: Any,
    b_old: Any,
    V: Any,
    b: Any,
    inv_sigma: Any,
    tight: Any,
    curvature: Any,
    target: Any,
    update: Any,
    U_out: Any,
    row_loss: Any,
) -> Any:
    """Exact minimiser of the majorizer (built at the old point) over every model's u_i.

    Parameters
    ----------
    indptr : int64 (N + 1,)
        Row pointers (CSR).
    cols : int32 (n_obs,)
        Item index of every cell, row order.
    y : float32 (n_obs,)
        Scores, row order.
    U_old, V_old, b_old : float64
        The sweep's start point (defines the working response).
    V, b : float64 (J, r), (J,)
        The new item parameters.
    inv_sigma : float
    tight : bool
        As in :func:`item_update`.
    curvature, target : float64 (r, r), (r,)
        Penalty Hessian and linear term of one row.
    update : bool
        False: keep ``U_old`` (item parameters only changed) and only evaluate the loss.
    U_out : float64 (N, r)
        Output; a row whose system is singular keeps its old values.
    row_loss : float64 (N,)
        Output: log-loss of every row at ``(U_out, V, b)``.
    """
    N = indptr.size - 1
    r = U_old.shape[1]
    inv_s2 = inv_sigma * inv_sigma
    for chunk in numba.prange(_N_CHUNKS):
        G = np.empty((r, r))
        h = np.empty(r)
        u = np.empty(r)
        L = np.empty((r, r))
        start, stop = _lines(chunk, N)
        for i in range(start, stop):
            lo = indptr[i]
            hi = indptr[i + 1]
            if update:
                G[:] = 0.0
                h[:] = 0.0
                for k in range(lo, hi):
                    j = cols[k]
                    x = _predictor(U_old, i, V_old, j, b_old)
                    res, wt = _cell_curvature(y[k], np.float32(x * inv_sigma), tight)
                    w = wt * inv_s2
                    z = w * (x - b[j]) + inv_sigma * res
                    for m in range(r):
                        h[m] += V[j, m] * z
                        for n in range(m + 1):
                            G[m, n] += w * V[j, m] * V[j, n]
                for m in range(r):
                    h[m] = h[m] + target[m]
                    for n in range(m + 1):
                        G[m, n] = G[m, n] + curvature[m, n]
                        G[n, m] = G[m, n]
                if _solve_spd(G, h, u, L):
                    for m in range(r):
                        U_out[i, m] = u[m]
                else:
                    for m in range(r):
                        U_out[i, m] = U_old[i, m]
            else:
                for m in range(r):
                    U_out[i, m] = U_old[i, m]
            row_loss[i] = _row_loss(lo, hi, cols, y, U_out, i, V, b, inv_sigma)


@numba.njit(parallel=True, fastmath=_FASTMATH, cache=True)
def row_losses(  # pragma: no cover - jit
    indptr: Any,
    cols: Any,
    y: Any,
    U: Any,
    V: Any,
    b: Any,
    inv_sigma: Any,
    row_loss: Any,
) -> Any:
    """Log-loss (soft labels) of every row's observed cells at (U, V, b), into ``row_loss``."""
    N = indptr.size - 1
    for chunk in numba.prange(_N_CHUNKS):
        start, stop = _lines(chunk, N)
        for i in range(start, stop):
            row_loss[i] = _row_loss(indptr[i], indptr[i + 1], cols, y, U, i, V, b, inv_sigma)


@numba.njit(parallel=True, cache=True)
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
        x = _predictor(U, rows[k], V, cols[k], b)
        out[k] = 0.5 * (1.0 + np.tanh(0.5 * x * inv_sigma))


# ----------------------------------------------------------------------------- rank 1
# The same three passes specialised to r = 1 (1-D parameter vectors; the inner loops then
# vectorise: about 4x faster per cell than the general kernels).


@numba.njit(parallel=True, fastmath=_FASTMATH, cache=True)
def item_update_rank1(  # pragma: no cover - jit
    indptr: Any,
    rows: Any,
    y: Any,
    u: Any,
    v: Any,
    b: Any,
    inv_sigma: Any,
    tight: Any,
    curvature: Any,
    target: Any,
    nonneg: Any,
    v_out: Any,
    b_out: Any,
) -> Any:
    """:func:`item_update` for r = 1 with u, v, v_out as 1-D arrays."""
    J = indptr.size - 1
    inv_s2 = inv_sigma * inv_sigma
    for chunk in numba.prange(_N_CHUNKS):
        start, stop = _lines(chunk, J)
        for j in range(start, stop):
            s_uu = 0.0
            s_u = 0.0
            s_1 = 0.0
            s_ux = 0.0
            s_x = 0.0
            vj = v[j]
            bj = b[j]
            for k in range(indptr[j], indptr[j + 1]):
                ui = u[rows[k]]
                x = ui * vj + bj
                res, wt = _cell_curvature(y[k], np.float32(x * inv_sigma), tight)
                w = wt * inv_s2
                s_uu += w * ui * ui
                s_u += w * ui
                s_1 += w
                z = w * x + inv_sigma * res
                s_ux += ui * z
                s_x += z
            h0 = s_ux + target[0]
            h1 = s_x + target[1]
            g00 = s_uu + curvature[0, 0]
            g01 = s_u + curvature[0, 1]
            g11 = s_1 + curvature[1, 1]
            det = g00 * g11 - g01 * g01
            if not (g00 > 0.0 and det > 1e-300 * max(1.0, g00 * g11)):
                if g11 > 0.0 and nonneg and vj == 0.0:
                    v_out[j] = 0.0
                    b_out[j] = h1 / g11
                else:
                    v_out[j] = vj
                    b_out[j] = bj
                continue
            a = (g11 * h0 - g01 * h1) / det
            if nonneg and a < 0.0:
                v_out[j] = 0.0
                b_out[j] = h1 / g11
            else:
                v_out[j] = a
                b_out[j] = (g00 * h1 - g01 * h0) / det


@numba.njit(parallel=True, fastmath=_FASTMATH, cache=True)
def model_update_rank1(  # pragma: no cover - jit
    indptr: Any,
    cols: Any,
    y: Any,
    u_old: Any,
    v_old: Any,
    b_old: Any,
    v: Any,
    b: Any,
    inv_sigma: Any,
    tight: Any,
    curvature: Any,
    target: Any,
    u_out: Any,
    row_loss: Any,
) -> Any:
    """:func:`model_update` for r = 1 with u, v as 1-D arrays."""
    N = indptr.size - 1
    inv_s2 = inv_sigma * inv_sigma
    for chunk in numba.prange(_N_CHUNKS):
        start, stop = _lines(chunk, N)
        for i in range(start, stop):
            lo = indptr[i]
            hi = indptr[i + 1]
            ui = u_old[i]
            g = 0.0
            h = 0.0
            for k in range(lo, hi):
                j = cols[k]
                x = ui * v_old[j] + b_old[j]
                res, wt = _cell_curvature(y[k], np.float32(x * inv_sigma), tight)
                w = wt * inv_s2
                vj = v[j]
                g += w * vj * vj
                h += vj * (w * (x - b[j]) + inv_sigma * res)
            g = g + curvature[0, 0]
            if g > 0.0:
                ui = (h + target[0]) / g
            u_out[i] = ui
            row_loss[i] = _row_loss_rank1(lo, hi, cols, y, ui * inv_sigma, v, b, inv_sigma)


@numba.njit(parallel=True, fastmath=_FASTMATH, cache=True)
def row_losses_rank1(  # pragma: no cover - jit
    indptr: Any,
    cols: Any,
    y: Any,
    u: Any,
    v: Any,
    b: Any,
    inv_sigma: Any,
    row_loss: Any,
) -> Any:
    """:func:`row_losses` for r = 1 with u, v as 1-D arrays."""
    N = indptr.size - 1
    for chunk in numba.prange(_N_CHUNKS):
        start, stop = _lines(chunk, N)
        for i in range(start, stop):
            row_loss[i] = _row_loss_rank1(
                indptr[i], indptr[i + 1], cols, y, u[i] * inv_sigma, v, b, inv_sigma
            )
