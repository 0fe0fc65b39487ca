"""Counts as counts: the number of Bernoulli trials behind every cell, read from the scores.

A score ``k / K`` (pass@1 over K samples, the share of K judges) is ``k`` successes in ``K``
trials; ``TwoPL(trials=K)`` then fits the binomial likelihood (K times a single trial's
information, so intervals about ``sqrt(K)`` narrower than the soft-label fit's).
:func:`detect_trials` finds K when every observed score lies on the grid ``0, 1/K, ..., 1``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from latentbench.io._matrix import ResponseMatrix

__all__ = ["MAX_DETECTED_TRIALS", "detect_trials", "observed_values"]

MAX_DETECTED_TRIALS = 100
"""Largest K :func:`detect_trials` looks for."""

_TOLERANCE = 1e-4
"""How far ``K y`` may be from an integer (float32 scores: about 1e-7 relative)."""


def detect_trials(scores: npt.NDArray[np.floating] | ResponseMatrix) -> int:
    """The number of trials per cell implied by the scores' grid; 1 when there is none.

    K (3 to :data:`MAX_DETECTED_TRIALS`) is returned when every observed score times K is an
    integer and at least three distinct values strictly between 0 and 1 occur (so that a
    grid is seen, not guessed). Binary scores give 1, and so does a 1/2 grid: in the matrices
    we know, 0.5 codes a draw or a tie (AlpacaEval), not two trials.

    Parameters
    ----------
    scores : ndarray of shape (n_models, n_items), or ResponseMatrix
        Scores in [0, 1], NaN = missing; a matrix is read by its observed cells
        (:func:`observed_values`: a sparse matrix's dense grid is never built).

    Returns
    -------
    int
    """
    from latentbench.io._matrix import ResponseMatrix

    if isinstance(scores, ResponseMatrix):
        cells = observed_values(scores)[0] if scores.is_sparse else np.asarray(scores.scores)
    else:
        cells = np.asarray(scores)
    # binary scores (the usual case) end here: no sort of every cell (NaN compares False)
    if not ((cells > 0) & (cells < 1)).any():
        return 1
    values = np.unique(np.asarray(cells[~np.isnan(cells)], dtype=np.float64))
    interior = values[(values > 0) & (values < 1)]
    if interior.size < 3:
        return 1
    for k in range(3, MAX_DETECTED_TRIALS + 1):
        scaled = values * k
        if np.all(np.abs(scaled - np.round(scaled)) <= _TOLERANCE * k):
            return k
    return 1


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
