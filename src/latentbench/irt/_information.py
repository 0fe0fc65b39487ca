"""Observed information of a fit, block by block, from the observed cells only.

The block-diagonal observed information of :func:`latentbench.irt.standard_errors` sums
``w_ij = p_ij (1 - p_ij)`` over the observed cells: per model ``sum_j w_ij v_j v_j^T``, per
item ``sum_i w_ij [u_i, 1] [u_i, 1]^T`` (divided by ``sigma^2``). On a dense matrix it is two
matrix products over the (N, J) grid; on a matrix that stores only its observed cells
(:class:`~latentbench.io._sparse_matrix.SparseResponseMatrix`) it is computed cell by cell in
chunks, in memory proportional to the chunk (never the grid), with the same values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from latentbench.io._cells import ObservedCells
from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._fitted import _observed, fitted_matrix

if TYPE_CHECKING:
    from latentbench.irt._result import IRTResult

__all__ = ["cells_information", "information_blocks"]

Array = npt.NDArray[np.float64]

CHUNK_CELLS = 1 << 21
"""Cells per chunk of the observed-cells sums (a few arrays of this many float64)."""


def information_blocks(
    result: IRTResult, matrix: ResponseMatrix | np.ndarray | None = None
) -> tuple[Array, Array]:
    """The likelihood's information blocks of a fit, in its reported parameters.

    Parameters
    ----------
    result : IRTResult
    matrix : ResponseMatrix or ndarray of shape (N, J), optional
        The matrix the result was fitted on (default: the one it keeps). A matrix that stores
        only its observed cells is never made dense.

    Returns
    -------
    models : ndarray of shape (N, r, r)
        ``sum_j w_ij v_j v_j^T / sigma^2`` (observed cells only).
    items : ndarray of shape (J, r + 1, r + 1)
        ``sum_i w_ij [u_i, 1][u_i, 1]^T / sigma^2``.
    """
    matrix = fitted_matrix(result, matrix)
    if isinstance(matrix, ResponseMatrix) and matrix.is_sparse:
        return cells_information(
            matrix.observed_cells(), result.U, result.V, result.b, float(result.sigma)
        )
    scores, _ = _observed(result, matrix)
    U, V, sigma = result.U, result.V, float(result.sigma)
    N, J = scores.shape
    r = U.shape[1]
    p = result.predict_proba()
    w = p * (1.0 - p) * ~np.isnan(scores)
    VV = np.einsum("jk,jl->jkl", V, V).reshape(J, r * r)
    U1 = np.hstack([U, np.ones((N, 1))])
    UU = np.einsum("ik,il->ikl", U1, U1).reshape(N, (r + 1) ** 2)
    models = (w @ VV).reshape(N, r, r) / sigma**2
    items = (w.T @ UU).reshape(J, r + 1, r + 1) / sigma**2
    return models, items


def cells_information(
    cells: ObservedCells, U: Array, V: Array, b: Array, sigma: float
) -> tuple[Array, Array]:
    """:func:`information_blocks` from the observed cells, in chunks of
    :data:`CHUNK_CELLS` cells (memory O(chunk + (N + J) r^2), never O(N J)).

    Parameters
    ----------
    cells : ObservedCells
        Shape (N, J).
    U : ndarray of shape (N, r)
    V : ndarray of shape (J, r)
    b : ndarray of shape (J,)
    sigma : float

    Returns
    -------
    models : ndarray of shape (N, r, r)
    items : ndarray of shape (J, r + 1, r + 1)
    """
    N, J = cells.shape
    r = U.shape[1]
    models = np.zeros((N, r * r))
    items = np.zeros((J, (r + 1) * (r + 1)))
    for lo in range(0, cells.n_observed, CHUNK_CELLS):
        hi = min(cells.n_observed, lo + CHUNK_CELLS)
        # the row of each cell of the chunk: rows whose pointer range meets [lo, hi)
        first = int(np.searchsorted(cells.row_ptr, lo, side="right")) - 1
        last = int(np.searchsorted(cells.row_ptr, hi, side="left"))
        ptr = np.clip(cells.row_ptr[first : last + 1], lo, hi) - lo
        rows = np.repeat(np.arange(first, last, dtype=np.int64), np.diff(ptr))
        cols = cells.row_cols[lo:hi]
        Ur, Vc = U[rows], V[cols]
        logit = (np.einsum("nk,nk->n", Ur, Vc) + b[cols]) / sigma
        p = 1.0 / (1.0 + np.exp(-logit))
        w = p * (1.0 - p) / sigma**2
        del logit, p
        for k in range(r):
            for m in range(r):
                models[:, k * r + m] += np.bincount(rows, w * Vc[:, k] * Vc[:, m], minlength=N)
        U1 = np.hstack([Ur, np.ones((rows.size, 1))])
        for k in range(r + 1):
            for m in range(r + 1):
                items[:, k * (r + 1) + m] += np.bincount(cols, w * U1[:, k] * U1[:, m], minlength=J)
    return models.reshape(N, r, r), items.reshape(J, r + 1, r + 1)


def cells_item_terms(
    cells: ObservedCells,
    U: Array,
    V: Array,
    b: Array,
    sigma: float,
    items: npt.NDArray[np.intp] | None = None,
) -> tuple[Array, Array]:
    """The items' log-likelihood gradients and information at ``(V, b)``, the abilities ``U``
    fixed, from the observed cells of the items asked about only (read column by column),
    in groups of about :data:`CHUNK_CELLS` cells: memory O(chunk), time O(their cells).

    Parameters
    ----------
    cells : ObservedCells
        Shape (N, J).
    U : ndarray of shape (N, r)
    V : ndarray of shape (J, r)
    b : ndarray of shape (J,)
    sigma : float
    items : ndarray of int, shape (M,), optional
        The items asked about, in increasing order (default: all J).

    Returns
    -------
    gradient : ndarray of shape (M, r + 1)
        ``sum_i (y_ij - p_ij) [u_i, 1] / sigma`` (per trial: the scores are proportions).
    information : ndarray of shape (M, r + 1, r + 1)
        ``sum_i w_ij [u_i, 1][u_i, 1]^T / sigma^2``.
    """
    idx = np.arange(cells.shape[1]) if items is None else np.asarray(items, dtype=np.intp)
    r = U.shape[1]
    counts = np.diff(cells.col_ptr)[idx]
    gradient = np.zeros((idx.size, r + 1))
    information = np.zeros((idx.size, (r + 1) * (r + 1)))
    # consecutive groups of items with about CHUNK_CELLS cells each (an item is never split)
    group = np.cumsum(counts) // CHUNK_CELLS
    bounds = np.flatnonzero(np.diff(group)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, idx.size], strict=True):
        n_cells = counts[lo:hi]
        total = int(n_cells.sum())
        if total == 0:
            continue
        starts = cells.col_ptr[idx[lo:hi]]
        offset = np.repeat(starts - (np.cumsum(n_cells) - n_cells), n_cells)
        where = offset + np.arange(total)
        local = np.repeat(np.arange(hi - lo), n_cells)
        rows = cells.col_rows[where]
        y = np.asarray(cells.col_values[where], dtype=np.float64)
        item = idx[lo:hi][local]
        U1 = np.hstack([U[rows], np.ones((total, 1))])
        logit = (np.einsum("nk,nk->n", U1[:, :r], V[item]) + b[item]) / sigma
        p = 1.0 / (1.0 + np.exp(-logit))
        resid = (y - p) / sigma
        w = p * (1.0 - p) / sigma**2
        del logit, p, y
        for k in range(r + 1):
            gradient[lo:hi, k] = np.bincount(local, resid * U1[:, k], minlength=hi - lo)
            for m in range(r + 1):
                information[lo:hi, k * (r + 1) + m] = np.bincount(
                    local, w * U1[:, k] * U1[:, m], minlength=hi - lo
                )
    return gradient, information.reshape(idx.size, r + 1, r + 1)
