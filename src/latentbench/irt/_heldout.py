"""Held-out evaluation: masks of observed cells, predictive scores, the additive baseline.

A fit is judged by how well it predicts cells it did not see: a random fraction of the observed
cells is hidden, the model is fitted on the rest and scored on the hidden cells by mean log-loss
(soft labels), Brier score and AUC (binary targets only). The reference is the additive model
``logit p_ij = c_i + b_j`` (model strength plus item easiness, no interaction), which any IRT
model worth its parameters should beat.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from latentbench._checks import user_stacklevel
from latentbench.exceptions import ConvergenceWarning, InputError
from latentbench.io._cells import ObservedCells
from latentbench.irt._objective import sigmoid
from latentbench.irt._stats import rankdata

__all__ = [
    "HeldOutScores",
    "cell_log_loss",
    "fit_additive",
    "fit_additive_converged",
    "heldout_cells",
    "heldout_mask",
    "predictive_scores",
]

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class HeldOutScores:
    """Predictive quality on held-out cells (lower log-loss / Brier and higher AUC are better).

    Attributes
    ----------
    log_loss : float
        Mean ``-[y log p + (1 - y) log(1 - p)]`` over the cells (soft labels allowed).
    brier : float
        Mean ``(y - p)^2``.
    auc : float
        Area under the ROC curve over the cells whose score is exactly 0 or 1 (NaN when there
        are none of one kind).
    n_cells : int
    """

    log_loss: float
    brier: float
    auc: float
    n_cells: int


Ids = tuple[Sequence[str], Sequence[str]]
"""Model and item ids of a matrix's rows and columns."""


def _canonical_order(
    rows: npt.NDArray[np.integer], cols: npt.NDArray[np.integer], ids: Ids | None
) -> npt.NDArray[np.intp] | None:
    """Positions (into ``rows``, ``cols``) of the observed cells sorted by (model id, item id)
    as strings; None when that is their order already (ids sorted, or not given).

    The held-out draw picks cells in this order, so that the same cells under another order
    of the rows or columns (a wide file's columns against a long file's sorted ids, renamed
    ids sorting differently) are hidden alike (it picked positions, so the prior's choice
    could change with the order of the ids)."""
    if ids is None:
        return None
    ranks: list[npt.NDArray[np.int64] | None] = []
    for names in ids:
        text = np.asarray([str(name) for name in names], dtype=str)
        if text.size < 2 or bool(np.all(text[:-1] <= text[1:])):
            ranks.append(None)  # already in string order
            continue
        rank = np.empty(text.size, dtype=np.int64)
        rank[np.argsort(text, kind="stable")] = np.arange(text.size)
        ranks.append(rank)
    if ranks[0] is None and ranks[1] is None:
        return None  # rows, cols are row-major (np.nonzero, CSR): the canonical order
    n_items = len(ids[1])
    model_rank = np.asarray(rows, dtype=np.int64) if ranks[0] is None else ranks[0][rows]
    item_rank = np.asarray(cols, dtype=np.int64) if ranks[1] is None else ranks[1][cols]
    return np.argsort(model_rank * n_items + item_rank, kind="stable")


def _pick(
    rng: np.random.Generator,
    n_obs: int,
    n_hold: int,
    rows: npt.NDArray[np.integer],
    cols: npt.NDArray[np.integer],
    ids: Ids | None,
) -> npt.NDArray[np.intp]:
    """Sorted positions of the ``n_hold`` held-out cells among the ``n_obs`` observed ones,
    drawn in the canonical (id) order of the cells."""
    pick = rng.choice(n_obs, size=n_hold, replace=False)
    order = _canonical_order(rows, cols, ids)
    return np.sort(pick if order is None else order[pick])


def heldout_mask(
    scores: npt.NDArray[np.floating],
    fraction: float,
    random_state: int | np.random.Generator | None = None,
    ids: Ids | None = None,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Hide a random ``fraction`` of the observed cells.

    Parameters
    ----------
    scores : ndarray of shape (N, J)
        NaN = missing.
    fraction : float
        In (0, 1); at least one cell is hidden.
    random_state : int, Generator or None
    ids : (model_ids, item_ids), optional
        The ids of the rows and columns: the cells are drawn in the order of (model id, item
        id) as strings, so the same cells give the same mask whatever the order of the rows
        and columns. Without them, in the order of the positions.

    Returns
    -------
    train : ndarray of shape (N, J), float32
        The scores with the held-out cells set to NaN.
    rows, cols : ndarray of int
        Positions of the held-out cells.
    """
    if not 0 < fraction < 1:
        raise InputError(f"heldout fraction={fraction!r}; expected a number in (0, 1)")
    rng = np.random.default_rng(random_state)
    rows, cols = np.nonzero(~np.isnan(scores))
    n_hold = max(1, round(fraction * rows.size))
    if n_hold >= rows.size:
        raise InputError(
            f"heldout={fraction!r} hides all {rows.size} observed cells, leaving none to fit "
            "on; expected a smaller held-out fraction (e.g. 0.1)"
        )
    pick = _pick(rng, rows.size, n_hold, rows, cols, ids)
    train = np.array(scores, dtype=np.float32, copy=True)
    train[rows[pick], cols[pick]] = np.nan
    return train, rows[pick], cols[pick]


def heldout_cells(
    cells: ObservedCells,
    fraction: float,
    random_state: int | np.random.Generator | None = None,
    ids: Ids | None = None,
) -> tuple[ObservedCells, npt.NDArray[np.intp], npt.NDArray[np.intp], Array]:
    """:func:`heldout_mask` on observed cells (no dense array): the same cells are hidden as
    :func:`heldout_mask` hides on the dense form of the same matrix with the same seed (and
    ``ids``).

    Returns
    -------
    train : ObservedCells
        The cells that are not held out.
    rows, cols : ndarray of int, shape (n_hold,)
        Positions of the held-out cells.
    truth : ndarray of float64, shape (n_hold,)
        Their scores.
    """
    if not 0 < fraction < 1:
        raise InputError(f"heldout fraction={fraction!r}; expected a number in (0, 1)")
    rng = np.random.default_rng(random_state)
    n_obs = cells.n_observed
    n_hold = max(1, round(fraction * n_obs))
    rows = cells.row_index()
    pick = _pick(rng, n_obs, n_hold, rows, cells.row_cols, ids)
    keep = np.ones(n_obs, dtype=bool)
    keep[pick] = False
    row_ptr = np.zeros(cells.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=cells.shape[0]), out=row_ptr[1:])
    train = ObservedCells.from_csr(
        row_ptr, cells.row_cols[keep], cells.row_values[keep], cells.shape
    )
    truth = cells.row_values[pick].astype(np.float64)
    return train, rows[pick], cells.row_cols[pick].astype(np.intp), truth


def cell_log_loss(p: npt.NDArray[np.floating], y: npt.NDArray[np.floating]) -> Array:
    """Per-cell log-loss of predictions ``p`` (clipped to [1e-12, 1 - 1e-12]) for targets
    ``y`` in [0, 1] (soft labels too), same shape as both; its mean is
    :func:`predictive_scores`' ``log_loss``."""
    p = np.clip(np.asarray(p, dtype=float), 1e-12, 1 - 1e-12)
    y = np.asarray(y, dtype=float)
    return np.asarray(-(y * np.log(p) + (1 - y) * np.log1p(-p)), dtype=np.float64)


def predictive_scores(p: npt.NDArray[np.floating], y: npt.NDArray[np.floating]) -> HeldOutScores:
    """Log-loss, Brier and AUC of predictions ``p`` for targets ``y`` in [0, 1] (same shape).

    Parameters
    ----------
    p : ndarray of any shape
        Predicted probabilities (clipped to [1e-12, 1 - 1e-12]).
    y : ndarray of the shape of ``p``
        Targets in [0, 1]; the AUC counts only the cells with ``y`` 0 or 1 (NaN when one class
        is absent).

    Returns
    -------
    HeldOutScores
    """
    log_loss = float(np.mean(cell_log_loss(p, y)))
    p = np.clip(np.asarray(p, dtype=float), 1e-12, 1 - 1e-12)
    y = np.asarray(y, dtype=float)
    brier = float(np.mean((y - p) ** 2))
    binary = (y == 0) | (y == 1)
    pos, neg = int((y[binary] == 1).sum()), int((y[binary] == 0).sum())
    auc = float("nan")
    if pos and neg:
        ranks = rankdata(p[binary])
        auc = float((ranks[y[binary] == 1].sum() - pos * (pos + 1) / 2) / (pos * neg))
    return HeldOutScores(log_loss, brier, auc, int(y.size))


def _linked_groups(observed: npt.NDArray[np.bool_]) -> tuple[Array, Array, Array] | None:
    """The groups of models and items linked by observed cells: each model's and each
    item's group and the groups' sizes (models plus items); None when there is one group."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n_models, n_items = observed.shape
    with_cells = observed.any(axis=1)
    if not with_cells.any():
        return None
    # the usual case, linked, checked without a list of the cells (a dense matrix's would
    # take 16 bytes a cell): the models and items reached from one model, as boolean sweeps
    models = np.zeros(n_models, dtype=bool)
    models[int(np.argmax(with_cells))] = True
    items = np.zeros(n_items, dtype=bool)
    while True:
        reached = np.asarray(observed.any(axis=0, where=models[:, None]))
        more = np.asarray(observed.any(axis=1, where=reached[None, :])) | models
        if np.array_equal(reached, items) and np.array_equal(more, models):
            break
        items, models = reached, more
    if models.sum() == with_cells.sum() and items.sum() == observed.any(axis=0).sum():
        return None  # one group (models and items without a cell take the one shift too)
    rows, cols = np.nonzero(observed)
    graph = coo_matrix(
        (np.ones(rows.size), (rows, n_models + cols)), shape=(n_models + n_items,) * 2
    )
    n_groups, labels = connected_components(graph, directed=False)
    if n_groups == 1:
        return None
    sizes = np.bincount(labels, minlength=n_groups).astype(float)
    return labels[:n_models], labels[n_models:], sizes


def fit_additive(
    scores: npt.NDArray[np.floating],
    l2: float = 1e-2,
    max_iter: int = 200,
    tol: float = 1e-9,
) -> tuple[Array, Array]:
    """The additive baseline ``logit p_ij = c_i + b_j``; see :func:`fit_additive_converged`
    (this is its ``(c, b)``; a stop at ``max_iter`` is said by a ``ConvergenceWarning``).

    Parameters
    ----------
    scores : ndarray of shape (N, J)
        Scores in [0, 1]; NaN = missing.
    l2 : float, default 1e-2
        Ridge on ``c`` and ``b`` (keeps all-correct rows and columns finite).
    max_iter : int, default 200
        Cap on iterations.
    tol : float, default 1e-9
        Stop when no logit ``c_i + b_j`` changes by more than this in an iteration.

    Returns
    -------
    c : ndarray of shape (N,)
    b : ndarray of shape (J,)
    """
    c, b, _ = fit_additive_converged(scores, l2, max_iter, tol)
    return c, b


def fit_additive_converged(
    scores: npt.NDArray[np.floating],
    l2: float = 1e-2,
    max_iter: int = 200,
    tol: float = 1e-9,
) -> tuple[Array, Array, bool]:
    """The additive baseline ``logit p_ij = c_i + b_j`` by alternating exact Newton blocks.

    Each block (all c_i given b, then all b_j given c) is a set of independent one-variable
    logistic regressions; one damped Newton step per block per iteration, with a small ridge
    ``l2`` keeping all-correct rows and columns finite; after each iteration the exact ridge
    minimiser along ``c + d, b - d`` (which no logit depends on; one ``d`` per group of
    models and items linked by observed cells). Stops when no logit
    ``c_i + b_j`` changes by more than ``tol`` in an iteration (a ``ConvergenceWarning`` when
    ``max_iter`` comes first).

    Returns
    -------
    c : ndarray of shape (N,)
    b : ndarray of shape (J,)
    converged : bool
        False when ``max_iter`` came first (warned; the fits that use this baseline record it).
    """
    Y = np.asarray(scores, dtype=np.float64)
    observed = ~np.isnan(Y)
    y = np.where(observed, Y, 0.0)
    w = observed.astype(float)
    c = np.zeros(Y.shape[0])
    b = np.zeros(Y.shape[1])
    groups = _linked_groups(observed)

    def step(x: Array, other: Array, axis: int, fn: Callable[[Array, Array], Array]) -> Array:
        p = sigmoid(fn(x, other))
        grad = ((p - y) * w).sum(axis=axis) + l2 * x
        hess = (p * (1 - p) * w).sum(axis=axis) + l2
        return np.asarray(x - np.clip(grad / hess, -2.0, 2.0))

    for _ in range(max_iter):
        c_new = step(c, b, 1, lambda c_, b_: c_[:, None] + b_[None, :])
        b_new = step(b, c_new, 0, lambda b_, c_: c_[:, None] + b_[None, :])
        # c + d, b - d leaves every logit unchanged: only the ridge sets d, in closed form
        # (the Newton blocks alone move along this direction very slowly); models in groups
        # that share no item have one such d per group
        if groups is None:
            shift = (b_new.sum() - c_new.sum()) / (c_new.size + b_new.size)
            c_new, b_new = c_new + shift, b_new - shift
        else:
            of_c, of_b, sizes = groups
            k = sizes.size
            shifts = (np.bincount(of_b, b_new, k) - np.bincount(of_c, c_new, k)) / sizes
            c_new, b_new = c_new + shifts[of_c], b_new - shifts[of_b]
        dc, db = c_new - c, b_new - b  # the largest change of a logit c_i + b_j
        change = max(float(dc.max() + db.max()), -float(dc.min() + db.min()))
        c, b = c_new, b_new
        if change < tol:
            break
    else:
        warnings.warn(
            f"the additive model stopped at max_iter={max_iter} with a logit still changing by "
            f"{change:.2e} (tol={tol:g})",
            ConvergenceWarning,
            stacklevel=user_stacklevel(),
        )
        return c, b, False
    return c, b, True
