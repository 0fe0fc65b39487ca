"""Counts and sums of the observed scores per row and per column of a dense score matrix.

Accuracies, the fit's start and the priors' item moments all need the same four vectors. A
NumPy pass per vector (masked copies, float64 casts) costs a single-threaded sweep of the
matrix each, which at leaderboard sizes outweighs the fit itself on a GPU (8,000 x 40,000:
about 7 s of a 10.7 s fit, ``benchmarks/RESULTS_device.md``). :func:`dense_margins` gets all
four in one parallel pass: rows split in :data:`BLOCKS` blocks shared by the threads, each
block with its own column accumulators, summed at the end in block order (a fixed count, not
the thread count, so that the sums are the same on any number of threads). Below
:data:`KERNEL_MIN_CELLS` cells it uses NumPy instead (the same sums, no kernel compiled for a
small first fit: the demo, a new user's first matrix). The kernel lives in
:mod:`latentbench.io._margins_kernel`, imported only when a matrix is that large, so that
``import latentbench.io`` does not import numba (``ls``, ``ingest`` and ``export`` never need
it: about 0.3 s of CPU at each command's start).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["KERNEL_MIN_CELLS", "Margins", "dense_margins"]

BLOCKS = 32
"""Row blocks of the parallel kernel. It was four per thread: a column's float sum then
depended on the thread count (a column of one 1 and 2^-53s: ``1 + 3.5 * 2^-49`` on 2
threads, ``1 + 3 * 2^-49`` on 1). 32 keeps 16 threads busy (the column accumulators cost
``32 x 16`` bytes per item: 20 MB at 40,000 items)."""

KERNEL_MIN_CELLS = 2_000_000
"""From this many cells on, :func:`dense_margins` uses the parallel kernel (compiled once per
environment, a few seconds, then cached on disk); below, NumPy passes (a few ms here)."""


@dataclass(frozen=True)
class Margins:
    """Observed counts and score sums per row and per column.

    Attributes
    ----------
    row_count : ndarray of shape (N,), int64
    row_sum : ndarray of shape (N,), float64
    col_count : ndarray of shape (J,), int64
    col_sum : ndarray of shape (J,), float64
    """

    row_count: np.ndarray
    row_sum: np.ndarray
    col_count: np.ndarray
    col_sum: np.ndarray

    def row_mean(self) -> np.ndarray:
        """Mean observed score per row; NaN for a row without data.

        Returns
        -------
        ndarray of shape (N,)
        """
        return _mean(self.row_sum, self.row_count)

    def col_mean(self) -> np.ndarray:
        """Mean observed score per column; NaN for a column without data.

        Returns
        -------
        ndarray of shape (J,)
        """
        return _mean(self.col_sum, self.col_count)


def _mean(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def dense_margins(scores: npt.NDArray[np.floating]) -> Margins:
    """The :class:`Margins` of a dense (N, J) score matrix (NaN = missing), in one pass.

    Sums are float64 whatever the scores' dtype.
    """
    values = np.asarray(scores)
    if values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)
    if values.size < KERNEL_MIN_CELLS:
        observed = ~np.isnan(values)
        filled = np.where(observed, values, values.dtype.type(0))
        return Margins(
            np.count_nonzero(observed, axis=1).astype(np.int64),
            filled.sum(axis=1, dtype=np.float64),
            np.count_nonzero(observed, axis=0).astype(np.int64),
            filled.sum(axis=0, dtype=np.float64),
        )
    from latentbench.io._margins_kernel import _margins_kernel

    values = np.ascontiguousarray(values)
    blocks = max(1, min(values.shape[0], BLOCKS))
    row_count, row_sum, col_count, col_sum = _margins_kernel(values, blocks)
    return Margins(row_count, row_sum, col_count, col_sum)
