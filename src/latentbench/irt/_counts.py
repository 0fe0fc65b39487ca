"""Counts as counts: the number of Bernoulli trials behind every cell, read from the scores.

A score ``k / K`` (pass@1 over K samples, the share of K judges) is ``k`` successes in ``K``
trials; ``TwoPL(trials=K)`` then fits the binomial likelihood (K times a single trial's
information, so intervals about ``sqrt(K)`` narrower than the soft-label fit's).
:func:`detect_trials` finds K when every observed score lies on the grid ``0, 1/K, ..., 1``
and the fractional cells are a substantial share of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from latentbench.io._matrix import ResponseMatrix

__all__ = [
    "MAX_DETECTED_TRIALS",
    "MIN_FRACTIONAL_SHARE",
    "TrialsGrid",
    "detect_trials",
    "observed_values",
    "trials_grid",
]

MAX_DETECTED_TRIALS = 100
"""Largest K :func:`detect_trials` looks for."""

MIN_FRACTIONAL_SHARE = 0.1
"""Share of the observed cells that must be fractional for :func:`detect_trials` to read a
1/K grid as K trials. With K >= 3 trials a cell is 0 or 1 only when all K agree, so a K-trial
matrix has many fractional cells unless nearly every item is solved by all samples or by none
(a 1/10 grid simulated from a 2PL: about 60%); three partial-credit cells among 397 binary
answers, or one average column among 40 binary items, are not K trials per cell."""

_TOLERANCE = 1e-4
"""How far ``K y`` may be from an integer (float32 scores: about 1e-7 relative)."""


def detect_trials(scores: npt.NDArray[np.floating] | ResponseMatrix) -> int:
    """The number of trials per cell implied by the scores' grid; 1 when there is none.

    K (3 to :data:`MAX_DETECTED_TRIALS`) is returned when every observed score times K is an
    integer, at least three distinct values strictly between 0 and 1 occur (so that a grid
    is seen, not guessed; for K = 3 both of its two, 1/3 and 2/3) and at least
    :data:`MIN_FRACTIONAL_SHARE` of the observed cells are fractional. Binary scores give
    1, and so does a 1/2 grid: in the matrices we know, 0.5 codes a draw or a tie
    (AlpacaEval), not two trials. So do a few fractional cells
    among binary ones (partial credit, an average column): K trials per cell would multiply
    the information of every binary cell by K (see :func:`trials_grid`).

    Parameters
    ----------
    scores : ndarray of shape (n_models, n_items), or ResponseMatrix
        Scores in [0, 1], NaN = missing; a matrix is read by its observed cells
        (:func:`observed_values`: a sparse matrix's dense grid is never built).

    Returns
    -------
    int
    """
    grid = trials_grid(scores)
    return grid.trials if grid.enough else 1


class TrialsGrid(NamedTuple):
    """The score grid of a matrix (:func:`trials_grid`).

    Attributes
    ----------
    trials : int
        K of the grid ``0, 1/K, ..., 1`` every observed score lies on (3 or more, with at
        least three distinct fractional values); 1 when there is none.
    n_fractional : int
        Observed cells strictly between 0 and 1.
    n_observed : int
        Observed cells.
    """

    trials: int
    n_fractional: int
    n_observed: int

    @property
    def enough(self) -> bool:
        """Whether the grid is read as K trials: a grid, on a substantial share of the cells
        (at least :data:`MIN_FRACTIONAL_SHARE` of them fractional)."""
        return self.trials > 1 and (
            self.n_fractional >= MIN_FRACTIONAL_SHARE * max(self.n_observed, 1)
        )


def trials_grid(scores: npt.NDArray[np.floating] | ResponseMatrix) -> TrialsGrid:
    """The grid ``0, 1/K, ..., 1`` the observed scores lie on, with the count of fractional
    cells; :func:`detect_trials` reads K trials from it only when the fractional cells are a
    substantial share.

    Parameters
    ----------
    scores : ndarray of shape (n_models, n_items), or ResponseMatrix
        Scores in [0, 1], NaN = missing.

    Returns
    -------
    TrialsGrid
    """
    from latentbench.io._matrix import ResponseMatrix

    if isinstance(scores, ResponseMatrix):
        cells = observed_values(scores)[0] if scores.is_sparse else np.asarray(scores.scores)
    else:
        cells = np.asarray(scores)
    fractional = (cells > 0) & (cells < 1)  # NaN compares False
    n_observed = int(cells.size - np.count_nonzero(np.isnan(cells)))
    n_fractional = int(np.count_nonzero(fractional))
    # binary scores (the usual case) end here: no sort of every cell
    if n_fractional == 0:
        return TrialsGrid(1, 0, n_observed)
    values = np.unique(np.asarray(cells[~np.isnan(cells)], dtype=np.float64))
    interior = values[(values > 0) & (values < 1)]
    # float32 scores give each grid value a few neighbours (1/3 as 0.33333334 and
    # 0.3333333): counted once per grid point below
    if interior.size < 2:
        return TrialsGrid(1, n_fractional, n_observed)
    for k in range(3, MAX_DETECTED_TRIALS + 1):
        scaled = values * k
        if np.all(np.abs(scaled - np.round(scaled)) <= _TOLERANCE * k):
            # a grid is seen, not guessed: three distinct fractional values, or a 1/3
            # grid's two (both of them: 1/3 and 2/3)
            points = np.unique(np.round(interior * k)).size
            if points < min(3, k - 1):
                break
            return TrialsGrid(k, n_fractional, n_observed)
    return TrialsGrid(1, n_fractional, n_observed)


def observed_values(matrix: ResponseMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The observed scores with their rows and columns, without building a sparse matrix's
    dense grid.

    Returns
    -------
    values, rows, cols : ndarray of shape (n_observed,)
    """
    if matrix.is_sparse:
        cells = matrix.observed_cells()
        counts = np.diff(np.asarray(cells.row_ptr))
        rows = np.repeat(np.arange(counts.size), counts)
        return np.asarray(cells.row_values, np.float64), rows, np.asarray(cells.row_cols)
    scores = np.asarray(matrix.scores)
    rows, cols = np.nonzero(~np.isnan(scores))
    return scores[rows, cols].astype(np.float64), rows, cols
