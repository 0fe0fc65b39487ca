"""Sparse-native cBMM: cost and memory in proportion to the observed cells.

The observed cells come as :class:`~latentbench.io._cells.ObservedCells` (row and column
order, nothing per unobserved cell). :func:`fit_sparse` fits the
same model and objective as :func:`latentbench.irt.fit_cbmm` with the *exact* observed-cells
majorizer instead of the dense fill-in one:

- the surrogate of a sweep is ``(1 / (8 sigma^2)) sum_observed (X_ij - Z_ij)^2`` plus the
  penalty, with the working response ``Z = X + 4 sigma (y - p)`` at the sweep's start point
  (Böhning's bound: curvature ``1 / (4 sigma^2)`` per observed cell);
- item block: per item, a weighted least-squares problem in ``(v_j, b_j)`` over its observed
  cells (Gram of ``[u_i, 1]`` over those cells, penalty curvature added), ``v_j >= 0``;
- model block: per model, an ``r x r`` problem in ``u_i`` over its observed cells;
- rebalancing: the likelihood is unchanged by ``U -> (U + 1 d^T) diag(c)``,
  ``V -> V diag(1 / c)``, ``b -> b - V d`` (``c > 0`` keeps ``V >= 0``); the penalty is not,
  so it is minimised over ``(c, d)``. This removes the nearly flat scale / shift directions
  that block updates otherwise crawl along when few cells are observed per row and column.

Every step exactly minimises the surrogate (or the penalty along a likelihood-invariant
direction), so the objective never increases; SQUAREM extrapolation with a monotone safeguard
is used as in the dense path (the same loop, :func:`latentbench.irt._squarem.run_mm`). One
sweep costs one pass over the cells in column order, which also gives the objective of the
point it starts from (numba kernels in :mod:`latentbench.irt._sparse_kernels`), and because
nothing is filled in, the number of sweeps does not grow with the missing fraction.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from scipy.sparse import csr_matrix

from latentbench.exceptions import InputError
from latentbench.io._cells import ObservedCells
from latentbench.irt import _sparse_kernels as kernels
from latentbench.irt._blas import single_threaded_blas
from latentbench.irt._cbmm import (
    CBMMFit,
    accuracy_start,
    check_options,
    start_point,
)
from latentbench.irt._objective import GaussianPenalty
from latentbench.irt._squarem import run_mm

__all__ = [
    "fit_sparse",
    "predict_cells",
    "update_items",
    "update_models",
]


def _read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (no copy), as an :class:`ObservedCells` holds its cells."""
    view = a.view()
    view.flags.writeable = False
    return view


def _rebalance(
    U: np.ndarray, V: np.ndarray, b: np.ndarray, penalty: Any, nonneg: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimise the penalty over the likelihood-invariant maps (see the module docstring).

    Zero-mean Gaussian penalties: alternate the two closed forms (shift d given the scales,
    then every scale c_k given d); each step lowers the penalty. Other penalties: a small
    quasi-Newton search over ``(log c, d)``. The result is kept only if the penalty is lower.
    """
    r = U.shape[1]
    lam_u = float(getattr(penalty, "precision_U", np.nan))
    lam_v = float(getattr(penalty, "precision_V", np.nan))
    lam_b = float(getattr(penalty, "precision_b", np.nan))
    means = [float(getattr(penalty, name, np.nan)) for name in ("mean_U", "mean_V", "mean_b")]
    before = penalty.value(U, V, b)

    def transform(c: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (U + d) * c, V / c, b - V @ d

    if all(m == 0.0 for m in means) and lam_u > 0 and lam_v > 0 and lam_b >= 0:
        n = U.shape[0]
        su, suu = U.sum(axis=0), (U * U).sum(axis=0)
        svv = (V * V).sum(axis=0)
        VtV, Vtb = V.T @ V, V.T @ b
        # what the loop's expressions compute the same way at every pass, once (the same
        # operations on the same operands, so the same bits): lam_u n, lam_b V^T V (its
        # off-diagonal, 0 + lam_b V^T V of the sum below, is lam_b V^T V + 0: the sign of a
        # zero as there), lam_b V^T b, lam_v |v_k|^2 and whether one of them is 0
        scale_u = lam_u * n
        coupling = lam_b * VtV
        off = coupling + 0.0
        on = coupling.diagonal().copy()
        target = lam_b * Vtb
        pull = lam_v * svv
        flat = bool((svv <= 0).any())
        c, d = _scales(scale_u, off, on, target, su, suu, pull, lam_u, n, flat)
    else:

        def value(x: np.ndarray) -> float:
            return float(penalty.value(*transform(np.exp(x[:r]), x[r:])))

        from scipy.optimize import minimize  # here: slow to import, non-zero-mean priors only

        x = minimize(value, np.zeros(2 * r), method="BFGS", options={"maxiter": 50}).x
        c, d = np.exp(x[:r]), x[r:]
    return _kept(U, V, b, c, d, penalty, nonneg, before)


def _kept(
    U: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    d: np.ndarray,
    penalty: Any,
    nonneg: bool,
    before: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The point mapped by scales ``c`` and shift ``d`` (:func:`_rebalance`'s transform), kept
    only if its penalty is below ``before``."""
    U_new, V_new, b_new = (U + d) * c, V / c, b - V @ d
    if nonneg:
        np.maximum(V_new, 0.0, out=V_new)
    if penalty.value(U_new, V_new, b_new) < before:
        return U_new, V_new, b_new
    return U, V, b


def _scales(
    scale_u: float,
    off: np.ndarray,
    on: np.ndarray,
    target: np.ndarray,
    su: np.ndarray,
    suu: np.ndarray,
    pull: np.ndarray,
    lam_u: float,
    n: int,
    flat: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_rebalance`'s zero-mean loop with its per-factor arithmetic on Python floats:
    the scales ``c`` and the shift ``d``, each of shape (r,).

    The same operations in the same order as the loop on arrays (:func:`_scales_on_arrays`:
    ``+ - * /`` are correctly rounded either way); the solve and the fourth root stay NumPy's
    (LAPACK's and the ufunc's own results), so the same bits with about a third of the array
    calls per pass (measured on the fits of a history-free selection: 106 -> 68 us a call at
    rank 1, where the loop on arrays was a quarter of the selection's CPU). A zero
    denominator, a scale that is 0 or not finite (where a Python division would raise and
    NumPy's returns inf or NaN), or a diagonal, right-hand side or spread that is not finite
    (an overflow or inf - inf: NumPy warns, Python does not) hands over to the loop on arrays
    from the start: the same result, NumPy's warnings included.
    """
    r = on.size
    on_, target_, su_, suu_ = on.tolist(), target.tolist(), su.tolist(), suu.tolist()
    pull_ = pull.tolist()
    c = [1.0] * r
    d: np.ndarray = np.zeros(r)
    A = np.empty((r, r))
    rhs = np.empty(r)
    ratio = np.empty(r)
    for _ in range(20):
        A[...] = off
        finite = True
        for k in range(r):
            A[k, k] = a_kk = scale_u * (c[k] * c[k]) + on_[k]
            rhs[k] = rhs_k = target_[k] - lam_u * c[k] * c[k] * su_[k]
            finite = finite and math.isfinite(a_kk) and math.isfinite(rhs_k)
        try:
            d = np.linalg.solve(A, rhs)
        except np.linalg.LinAlgError:
            break
        shift = d.tolist()
        spread = [suu_[k] + 2 * shift[k] * su_[k] + n * shift[k] * shift[k] for k in range(r)]
        if not (finite and all(map(math.isfinite, spread))):
            # an overflow or inf - inf, which NumPy's arithmetic warns of and Python's does not
            # (the loop may stop here, on a flat factor): the loop on arrays, and its warnings
            return _scales_on_arrays(scale_u, off, on, target, su, suu, pull, lam_u, n, flat)
        if any(x <= 0 for x in spread) or flat:
            break
        for k in range(r):
            denominator = lam_u * spread[k]
            if denominator == 0.0:  # (an underflow)
                return _scales_on_arrays(scale_u, off, on, target, su, suu, pull, lam_u, n, flat)
            ratio[k] = pull_[k] / denominator
        c_new = (ratio**0.25).tolist()
        if not all(0.0 < x < math.inf for x in c_new):
            return _scales_on_arrays(scale_u, off, on, target, su, suu, pull, lam_u, n, flat)
        if max(abs(c_new[k] / c[k] - 1) for k in range(r)) < 1e-12:
            c = c_new
            break
        c = c_new
    return np.array(c, dtype=np.float64), d


def _scales_on_arrays(
    scale_u: float,
    off: np.ndarray,
    on: np.ndarray,
    target: np.ndarray,
    su: np.ndarray,
    suu: np.ndarray,
    pull: np.ndarray,
    lam_u: float,
    n: int,
    flat: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_scales` on (r,) arrays: the loop as :func:`_rebalance` ran it before."""
    r = on.size
    c, d = np.ones(r), np.zeros(r)
    A = np.empty((r, r))
    diagonal = A.reshape(-1)[:: r + 1]  # a view of A's diagonal
    for _ in range(20):
        # shift: minimise lam_u sum_k c_k^2 |u_k + d_k|^2 + lam_b |b - V d|^2 over d
        # (A = lam_u n diag(c^2) + lam_b V^T V, rhs = lam_b V^T b - lam_u c c su)
        cc = c * c
        A[...] = off
        np.add(scale_u * cc, on, out=diagonal)
        rhs = target - lam_u * c * c * su
        try:
            d = np.linalg.solve(A, rhs)
        except np.linalg.LinAlgError:
            break
        # scales: c_k^4 = lam_v |v_k|^2 / (lam_u |u_k + d_k|^2)
        spread = suu + 2 * d * su + n * d * d
        if (spread <= 0).any() or flat:
            break
        c_new = (pull / (lam_u * spread)) ** 0.25
        if np.abs(c_new / c - 1).max() < 1e-12:
            c = c_new
            break
        c = c_new
    return c, d


def sparse_initial_parameters(
    cells: ObservedCells, rank: int, sigma: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The accuracy-based start of :func:`latentbench.irt._cbmm.initial_parameters`, computed
    from the observed cells only (same values on the same data)."""
    n_row = cells.row_counts()

    def residual(row_acc: np.ndarray, col_acc: np.ndarray, grand: float) -> csr_matrix:
        resid = cells.row_values - (
            np.repeat(row_acc, n_row) + col_acc[cells.row_cols] - grand
        ).astype(np.float32)
        return csr_matrix((resid, cells.row_cols, cells.row_ptr), shape=cells.shape)

    return accuracy_start(
        n_row, cells.col_counts(), cells.row_sums(), cells.col_sums(), rank, sigma, residual
    )


def predict_cells(
    U: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    sigma: float = 1.0,
) -> np.ndarray:
    """Probabilities ``sigmoid((u_i . v_j + b_j) / sigma)`` of the requested cells only.

    Parameters
    ----------
    U : ndarray of shape (N, r)
    V : ndarray of shape (J, r)
    b : ndarray of shape (J,)
    rows, cols : ndarray of int, shape (n,)
        The cells (row i, column j).

    Returns
    -------
    ndarray of shape (n,), float64
    """
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    cols = np.ascontiguousarray(cols, dtype=np.int64)
    if rows.shape != cols.shape:
        raise InputError(f"rows {rows.shape} and cols {cols.shape} differ; expected one per cell")
    U = np.ascontiguousarray(np.atleast_2d(np.asarray(U, float).T).T)
    V = np.ascontiguousarray(np.atleast_2d(np.asarray(V, float).T).T)
    if rows.size and (rows.min() < 0 or rows.max() >= U.shape[0]):
        raise InputError(f"row index outside 0..{U.shape[0] - 1}")
    if cols.size and (cols.min() < 0 or cols.max() >= V.shape[0]):
        raise InputError(f"column index outside 0..{V.shape[0] - 1}")
    out = np.empty(rows.size)
    # one compiled signature (numba's includes the read-only flag): a result's factors are
    # read-only, a caller's own arrays writable; both reach the kernel read-only (no copy)
    U, V, b = _read_only(U), _read_only(V), _read_only(np.asarray(b, float))
    kernels.predict_cells(rows, cols, U, V, b, 1.0 / sigma, out)
    return out


@single_threaded_blas
def fit_sparse(
    cells: ObservedCells,
    *,
    rank: int = 1,
    sigma: float = 1.0,
    l2: float = 1e-2,
    penalty: Any = None,
    tol: float = 1e-6,
    max_iter: int = 5000,
    nonneg: bool = True,
    init: Literal["accuracy"] | tuple[np.ndarray, np.ndarray, np.ndarray] = "accuracy",
    fixed_items: tuple[np.ndarray, np.ndarray] | None = None,
    accelerate: bool = True,
    rebalance: bool = True,
    tight: bool = True,
    check_monotone: bool = False,
    callback: Callable[[int, float], None] | None = None,
) -> CBMMFit:
    """Fit the rank-r logistic model on the observed cells only (see the module docstring).

    Parameters
    ----------
    cells : ObservedCells
        The observed scores, shape (N, J).
    rank, sigma, l2, tol, max_iter, nonneg, fixed_items, accelerate, check_monotone, callback
        As in :func:`latentbench.irt.fit_cbmm` (same objective, same stopping rule).
    penalty : GaussianPenalty, optional
        The penalty / priors (:mod:`latentbench.irt._objective`: its value and per-block
        curvature and target enter the block solves); default ``GaussianPenalty.ridge(l2)``.
    init : "accuracy" or tuple (U0, V0, b0)
        Deterministic start from accuracies, or a warm start (shapes (N, r), (J, r), (J,)).
    rebalance : bool, default True
        Minimise the penalty along the likelihood-invariant scale / shift maps every sweep.
    tight : bool, default True
        Per-cell majorizer curvature from the Jaakkola-Jordan bound ``tanh(t / 2) / (2 t)``
        at the current logit ``t`` (tighter than Böhning's 1/4 away from t = 0, which is what
        makes far-from-0.5 cells converge quickly). ``False``: Böhning's 1/4, the dense path's
        majorizer (identical iterates on complete data).

    Returns
    -------
    CBMMFit
        ``n_passes`` counts passes over the observed cells.
    """
    start = time.perf_counter()
    if not isinstance(cells, ObservedCells):
        raise InputError(f"expected ObservedCells, got {type(cells).__name__}")
    n, m = cells.shape
    penalty = check_options(rank, sigma, l2, penalty)

    def initial(r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if init != "accuracy":
            raise InputError(f"init={init!r}; expected 'accuracy' or a tuple (U0, V0, b0)")
        return sparse_initial_parameters(cells, r, sigma)

    U, V, b = start_point((n, m), rank, init, fixed_items, initial)
    inv_sigma = 1.0 / sigma
    item_curv, item_target, model_curv, model_target = _penalty_terms(penalty, U.shape[1])
    bounds = item_blocks(cells.col_ptr)
    # buffers of the pass, reused every sweep (nothing per cell is allocated in the loop)
    stats = np.empty((bounds.size - 1, n, kernels.model_statistics_size(U.shape[1])))
    block_loss = np.empty(bounds.size - 1)
    do_rebalance = rebalance and fixed_items is None
    Params = tuple[np.ndarray, np.ndarray, np.ndarray]

    def evaluate(x: Params) -> tuple[float, float, Params]:
        """One pass at x: its objective, and the next iterate (before rebalancing)."""
        U_, V_, b_ = x
        V_new, b_new, U_new = np.empty_like(V_), np.empty_like(b_), np.empty_like(U_)
        kernels.column_pass(
            *(cells.col_ptr, cells.col_rows, cells.col_values, bounds, U_, V_, b_),
            *(inv_sigma, tight, item_curv, item_target, nonneg, fixed_items is None),
            *(V_new, b_new, stats, block_loss),
        )
        kernels.solve_models(stats, U_, model_curv, model_target, U_new)
        nll_ = float(block_loss.sum())
        return nll_ + penalty.value(U_, V_, b_), nll_, (U_new, V_new, b_new)

    def mm_map(x: Params, following: Params) -> Params:
        if not do_rebalance:
            return following
        U_, V_, b_ = _rebalance(*following, penalty, nonneg)
        return np.ascontiguousarray(U_), np.ascontiguousarray(V_), b_

    run = run_mm(
        (U, V, b),
        evaluate,
        mm_map,
        tol=tol,
        max_iter=max_iter,
        accelerate=accelerate,
        nonneg=nonneg and fixed_items is None,
        check_monotone=check_monotone,
        callback=callback,
        name="sparse cBMM",
    )
    return CBMMFit.from_run(run, start)


def item_blocks(col_ptr: np.ndarray, n_blocks: int = 16) -> np.ndarray:
    """Boundaries of ``n_blocks`` item blocks with about equal shares of the cells.

    Fixed by the data (not by the thread count), so the order of every reduction, and hence
    the fit, is the same on any number of threads. Shape (n_blocks + 1,), int64.
    """
    n_items = col_ptr.size - 1
    shares = np.linspace(0, col_ptr[-1], min(n_blocks, max(n_items, 1)) + 1)
    bounds = np.searchsorted(col_ptr, shares, side="left").astype(np.int64)
    bounds[0], bounds[-1] = 0, n_items
    return np.maximum.accumulate(bounds)


def _penalty_terms(penalty: Any, r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The penalty's curvature and target for one item and for one model, as the kernels
    take them."""
    return tuple(  # type: ignore[return-value]
        np.ascontiguousarray(term(r), dtype=np.float64)
        for term in (
            penalty.item_curvature,
            penalty.item_target,
            penalty.model_curvature,
            penalty.model_target,
        )
    )


def _penalty_or_ridge(penalty: Any, l2: float) -> Any:
    return GaussianPenalty.ridge(float(l2)) if penalty is None else penalty


def update_items(
    col_ptr: np.ndarray,
    col_rows: np.ndarray,
    col_values: np.ndarray,
    U: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    *,
    sigma: float = 1.0,
    l2: float = 1e-2,
    penalty: Any = None,
    nonneg: bool = True,
    tight: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The cell pass of one sweep for a block of items (any subset of the columns).

    Items are independent given U, so the columns can be split into blocks and passed on
    different machines; this is the unit of work of a distributed sweep. Every block also
    returns its share of the models' problems; :func:`update_models` solves their sum.

    Parameters
    ----------
    col_ptr, col_rows, col_values : arrays
        The block's cells in column order (pointers start at 0), as in :class:`ObservedCells`.
    U : ndarray of shape (N, r)
        All model factors at the sweep's start.
    V, b : ndarrays of shape (J_block, r), (J_block,)
        The block's item parameters at the sweep's start.
    sigma, l2, penalty, nonneg, tight
        As in :func:`~latentbench.irt.fit_cbmm` (``tight``: as in the sparse fit, the
        Jaakkola-Jordan curvature; ``False``: Böhning's 1/4). ``penalty`` defaults to
        ``GaussianPenalty.ridge(l2)``.

    Returns
    -------
    V_new, b_new : ndarrays of shape (J_block, r), (J_block,)
        The block's updated item parameters.
    model_stats : ndarray of shape (N, s)
        The block's share of every model's problem (add the blocks' shares up).
    loss : float
        The block's negative log-likelihood at the sweep's start.
    """
    penalty = _penalty_or_ridge(penalty, l2)
    # the signature the sparse fit compiles the pass for (numba compiles once per signature,
    # an array's read-only flag part of it): its cells read-only (an ObservedCells'), the
    # point writable. A caller's writable cells or read-only point (a result's factors) made
    # a second compile (~9 s on a cold cache)
    U = np.array(U, dtype=np.float64, order="C")
    V = np.array(V, dtype=np.float64, order="C")
    b = np.array(b, dtype=np.float64, order="C")
    r = U.shape[1]
    item_curv, item_target, _, _ = _penalty_terms(penalty, r)
    V_new, b_new = np.empty_like(V), np.empty_like(b)
    stats = np.empty((1, U.shape[0], kernels.model_statistics_size(r)))
    loss = np.empty(1)
    kernels.column_pass(
        _read_only(np.ascontiguousarray(col_ptr, dtype=np.int64)),
        _read_only(np.ascontiguousarray(col_rows, dtype=np.int32)),
        _read_only(np.ascontiguousarray(col_values, dtype=np.float32)),
        np.array([0, V.shape[0]], dtype=np.int64),
        *(U, V, b, 1.0 / sigma, tight, item_curv, item_target, nonneg, True),
        *(V_new, b_new, stats, loss),
    )
    return V_new, b_new, stats[0], float(loss[0])


def update_models(
    model_stats: np.ndarray,
    U: np.ndarray,
    *,
    l2: float = 1e-2,
    penalty: Any = None,
) -> np.ndarray:
    """The model block of one sweep for a block of models (any subset of the rows).

    Parameters
    ----------
    model_stats : ndarray of shape (N_block, s)
        The sum over all item blocks of :func:`update_items`' ``model_stats``, rows of the
        block.
    U : ndarray of shape (N_block, r)
        The block's factors at the sweep's start (kept where a system is singular).
    l2 : float, default 1e-2
        Ridge on U; ignored when ``penalty`` is given.
    penalty : GaussianPenalty, optional
        Default ``GaussianPenalty.ridge(l2)``; must be the one given to :func:`update_items`.

    Returns
    -------
    U_new : ndarray of shape (N_block, r)
    """
    penalty = _penalty_or_ridge(penalty, l2)
    # the signature the sparse fit compiles the model solve for (numba's includes the
    # read-only flag): writable copies, whatever the caller holds (a result's factors are
    # read-only), so a process running both compiles it once
    U = np.array(U, dtype=np.float64, order="C")
    _, _, model_curv, model_target = _penalty_terms(penalty, U.shape[1])
    U_new = np.empty_like(U)
    stats = np.array(model_stats, dtype=np.float64, order="C")[None]
    kernels.solve_models(stats, U, model_curv, model_target, U_new)
    return U_new
