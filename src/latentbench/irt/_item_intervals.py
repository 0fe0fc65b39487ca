"""Discrimination intervals from the items' own likelihood, at the fit's abilities.

The default fit is a MAP fit: its prior ``a ~ N(a_mean, a_sd^2)`` (``a_sd`` chosen from a
small grid by held-out loss, :mod:`latentbench.irt._priors`) shrinks every discrimination
toward ``a_mean``. The Laplace posterior interval around that mode (the prior's curvature in
the item block) leaves the shrinkage out of the interval: in simulated 2PL data at 20-70
models x 200-2,000 items it covered the true discrimination 0.87-0.93 of the time, the most
discriminating fifth of the items 0.71-0.76 (the interval below the truth) and the least
discriminating fifth above the truth (docs/model.md, "Item intervals"). Neither the abilities'
own estimation error nor anything else mattered: with the true abilities in place of the
fitted ones the same posterior intervals covered the same.

:func:`likelihood_items` drops the prior's item part instead: Newton steps on each item's
log-likelihood alone, the abilities held at the fit's reported ones, from the fit's
``(v_j, b_j)`` to the item's maximum likelihood given the abilities, and the inverse of that
likelihood's observed information there. Every item is one ``(r + 1) x (r + 1)`` problem;
all are solved at once: one pass per step over the cells of the items not yet settled, in
blocks of about :data:`~latentbench.irt._information.CHUNK_CELLS` cells (a sparse matrix
read by columns, never made dense).
Where the likelihood has no maximum (the responses separated by the abilities: every model
above some ability right and every one below it wrong, a constant item, or too few cells), the
steps never settle: the item is reported ``bounded`` False, and the data do not bound its
discrimination above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._fitted import (
    _normalisation,
    _observed,
    fitted_matrix,
    per_trial_penalty,
    trials_of,
)
from latentbench.irt._information import CHUNK_CELLS, cells_item_terms, information_blocks
from latentbench.irt._objective import sigmoid

if TYPE_CHECKING:
    from latentbench.irt._result import IRTResult

__all__ = ["LikelihoodItems", "likelihood_items", "posterior_item_covariance"]

Array = npt.NDArray[np.float64]

MAX_STEPS = 30
"""Newton steps at most; an item not settled by then has no finite maximum (separated). A
step costs one pass over the cells of the items not yet settled (most settle in 4-8)."""

STEP_CAP = 1.0
"""Largest change of any coordinate of ``(v_j, b_j)`` in one step (units of sigma): a
separated item's steps grow without end, and the cap keeps them finite."""

TOLERANCE = 1e-9
"""An item has settled when its step is at most this times ``1 + max |(v_j, b_j)|``."""


@dataclass(frozen=True)
class LikelihoodItems:
    """Each item's maximum likelihood given the fit's abilities, in reported coordinates.

    Attributes
    ----------
    params : ndarray of shape (J, r + 1)
        ``(v_j, b_j)`` at the maximum (NaN where ``bounded`` is False).
    covariance : ndarray of shape (J, r + 1, r + 1)
        Inverse observed information of the item's likelihood there, K trials counted (NaN
        where ``bounded`` is False).
    bounded : ndarray of bool, shape (J,)
        Whether the steps settled (the likelihood has a finite maximum).
    steps : int
        Newton steps taken (the slowest item's).
    """

    params: Array
    covariance: Array
    bounded: npt.NDArray[np.bool_]
    steps: int


def likelihood_items(
    result: IRTResult, matrix: ResponseMatrix | np.ndarray | None = None
) -> LikelihoodItems:
    """Newton steps on every item's log-likelihood alone, the abilities fixed at ``result.U``.

    Parameters
    ----------
    result : IRTResult
        Any fit; its reported ``(V, b)`` start the steps.
    matrix : ResponseMatrix or ndarray of shape (N, J), optional
        The matrix it was fitted on (default: the one it keeps). A sparse matrix is never made
        dense.

    Returns
    -------
    LikelihoodItems
    """
    source = fitted_matrix(result, matrix)
    U = np.asarray(result.U, dtype=np.float64)
    sigma = float(result.sigma)
    N, r = U.shape
    x = np.column_stack([result.V, result.b]).astype(np.float64)
    J = x.shape[0]
    sparse = isinstance(source, ResponseMatrix) and source.is_sparse
    scores = None if sparse else _observed(result, source)[0]
    U1 = np.hstack([U, np.ones((N, 1))])
    UU = np.einsum("ik,il->ikl", U1, U1).reshape(N, (r + 1) ** 2)

    def terms(active: npt.NDArray[np.bool_]) -> tuple[Array, Array]:
        """Gradient (n_active, r + 1) and information (n_active, r + 1, r + 1) per trial."""
        if sparse:
            assert isinstance(source, ResponseMatrix)
            cells = source.observed_cells()
            return cells_item_terms(cells, U, x[:, :r], x[:, r], sigma, np.flatnonzero(active))
        assert scores is not None
        idx = np.flatnonzero(active)
        gradient = np.empty((idx.size, r + 1))
        information = np.empty((idx.size, (r + 1) ** 2))
        width = max(1, CHUNK_CELLS // N)  # columns per block: O(chunk) memory
        for lo in range(0, idx.size, width):
            cols = idx[lo : lo + width]
            y = np.asarray(scores[:, cols], dtype=np.float64)
            seen = ~np.isnan(y)
            p = sigmoid((U @ x[cols, :r].T + x[cols, r]) / sigma)
            resid = np.where(seen, y - p, 0.0) / sigma
            w = p * (1.0 - p) * seen / sigma**2
            gradient[lo : lo + width] = resid.T @ U1
            information[lo : lo + width] = w.T @ UU
        return gradient, information.reshape(idx.size, r + 1, r + 1)

    active = np.ones(J, dtype=bool)
    bounded = np.zeros(J, dtype=bool)
    information = np.zeros((J, r + 1, r + 1))
    steps = 0
    while active.any() and steps < MAX_STEPS:
        steps += 1
        idx = np.flatnonzero(active)
        gradient, info = terms(active)
        scale = np.maximum(np.trace(info, axis1=1, axis2=2), 1e-300)
        usable = np.linalg.eigvalsh(info)[:, 0] > 1e-10 * scale
        delta = np.zeros_like(gradient)
        if usable.any():
            delta[usable] = np.linalg.solve(info[usable], gradient[usable][..., None])[..., 0]
        size = np.abs(delta).max(axis=1)
        delta /= np.maximum(size / STEP_CAP, 1.0)[:, None]
        settled = usable & (size <= TOLERANCE * (1.0 + np.abs(x[idx]).max(axis=1)))
        x[idx] += delta
        information[idx[settled]] = info[settled]
        bounded[idx[settled]] = True
        active[idx[settled | ~usable]] = False
    covariance = np.full((J, r + 1, r + 1), np.nan)
    if bounded.any():
        covariance[bounded] = np.linalg.inv(information[bounded]) / trials_of(result)
    params = np.where(bounded[:, None], x, np.nan)
    return LikelihoodItems(params, covariance, bounded, steps)


def posterior_item_covariance(
    result: IRTResult,
    matrix: ResponseMatrix | np.ndarray | None = None,
    information: Array | None = None,
) -> Array:
    """The item blocks' covariance of the fit's objective at its mode, shape (J, r + 1, r + 1).

    ``(I_j + A^T C A)^{-1} / K``: the likelihood's information of item j (abilities fixed;
    ``information``, or computed from ``matrix``) plus the penalty's item curvature ``C``
    mapped to the reported coordinates by ``A`` (reported ``(v_j, b_j)`` to raw), K trials
    per cell. For a MAP fit it is the Laplace posterior's item block: the spread of the
    prior-shrunk estimate, which is what the fit's own estimates carry into anything computed
    from them (scoring new models); it is not a sampling interval for the true
    discrimination (:func:`likelihood_items`).
    """
    if information is None:
        information = information_blocks(result, matrix)[1]
    r = result.U.shape[1]
    mu, s = _normalisation(result)
    A = np.zeros((r + 1, r + 1))
    A[:r, :r] = np.eye(r) / s
    A[r, :r] = -mu / s
    A[r, r] = 1.0
    penalty = per_trial_penalty(result)
    H = information + A.T @ penalty.item_curvature(r) @ A
    return np.asarray(np.linalg.inv(H) / trials_of(result))
