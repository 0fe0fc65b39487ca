"""The observed cells of a sparse score matrix, in row and column order.

:class:`ObservedCells` holds only the observed cells of a (models x items) score matrix, once
in row order (CSR) and once in column order (CSC): about 16 bytes per observed cell (int32
index + float32 score, twice) and nothing per unobserved cell. It is the data the sparse
response matrix (:mod:`latentbench.io._sparse_matrix`) keeps and the sparse-native fit
(:mod:`latentbench.irt._sparse`) sweeps over.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from latentbench._checks import bounded_scores
from latentbench._numba_cache import CACHE
from latentbench._text import counted
from latentbench.exceptions import InputError

__all__ = ["SPARSE_DENSITY", "ObservedCells", "build_transpose"]

SPARSE_DENSITY = 0.25
"""Observed fraction below which :class:`~latentbench.irt.TwoPL` uses the sparse path.

Measured with ``benchmarks/bench_sparse.py`` (1000 x 5000, 2 cores): the dense fill-in path is
faster on complete or nearly complete matrices (one streaming pass, no gathers), the sparse
path from about half the cells missing on, and by a growing factor beyond (see the README)."""


class ObservedCells:
    """The observed cells of an (n_rows, n_cols) score matrix, in row and column order.

    Build it with :meth:`from_coo`, :meth:`from_csr` or :meth:`from_dense`; nothing here ever
    allocates ``n_rows * n_cols`` memory except :meth:`to_dense`.

    Attributes
    ----------
    shape : tuple (n_rows, n_cols)
    row_ptr : ndarray of int64, shape (n_rows + 1,)
    row_cols : ndarray of int32, shape (n_obs,)
        Column index of every cell in row order (increasing within a row).
    row_values : ndarray of float32, shape (n_obs,)
    col_ptr : ndarray of int64, shape (n_cols + 1,)
    col_rows : ndarray of int32, shape (n_obs,)
        Row index of every cell in column order (increasing within a column).
    col_values : ndarray of float32, shape (n_obs,)
    """

    def __init__(
        self,
        shape: tuple[int, int],
        row_ptr: np.ndarray,
        row_cols: np.ndarray,
        row_values: np.ndarray,
        col_ptr: np.ndarray,
        col_rows: np.ndarray,
        col_values: np.ndarray,
    ) -> None:
        """Store the two compressed layouts as given (made read-only; not checked: build it with
        :meth:`from_coo`, :meth:`from_csr` or :meth:`from_dense`, which check them).

        Parameters
        ----------
        shape : tuple of (int, int)
            ``(n_rows, n_cols)``.
        row_ptr : ndarray of int64 of shape (n_rows + 1,)
            Where each row's cells start in ``row_cols`` and ``row_values``.
        row_cols : ndarray of int32 of shape (n_obs,)
            Column index of every cell in row order (increasing within a row).
        row_values : ndarray of float32 of shape (n_obs,)
            Score of every cell in row order.
        col_ptr : ndarray of int64 of shape (n_cols + 1,)
            Where each column's cells start in ``col_rows`` and ``col_values``.
        col_rows : ndarray of int32 of shape (n_obs,)
            Row index of every cell in column order (increasing within a column).
        col_values : ndarray of float32 of shape (n_obs,)
            Score of every cell in column order.
        """
        self.shape = (int(shape[0]), int(shape[1]))
        self.row_ptr, self.row_cols, self.row_values = row_ptr, row_cols, row_values
        self.col_ptr, self.col_rows, self.col_values = col_ptr, col_rows, col_values
        for array in (row_ptr, row_cols, row_values, col_ptr, col_rows, col_values):
            array.setflags(write=False)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # pickle and deepcopy rebuild the arrays writeable: they stay read-only
        self.__dict__.update(state)
        for value in state.values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_csr(
        cls,
        row_ptr: np.ndarray,
        cols: np.ndarray,
        values: np.ndarray,
        shape: tuple[int, int],
        *,
        source: str | None = None,
    ) -> ObservedCells:
        """Build from a row-compressed layout (the column order is derived, O(n_obs)).

        Arrays already of the stored dtypes (int64, int32, float32) with increasing columns
        within every row are kept without a copy (and made read-only).

        Parameters
        ----------
        row_ptr : array of int, shape (n_rows + 1,)
            Where each row's cells start in ``cols`` and ``values``.
        cols : array of int, shape (n_obs,)
            Column of every cell, rows one after another.
        values : array of float, shape (n_obs,)
            Scores in [0, 1] (no NaN: an unobserved cell is simply absent).
        shape : (n_rows, n_cols)
            The matrix's shape.
        source : str, optional
            Named in error messages.

        Returns
        -------
        ObservedCells

        Raises
        ------
        InputError
            For row pointers that are not a CSR layout of ``n_rows`` rows, a count of columns
            or scores that does not match them, no cell at all, a column index out of range,
            a score outside [0, 1], or a cell given twice.
        """
        where = f"{source}: " if source else ""
        n_rows, n_cols = int(shape[0]), int(shape[1])
        row_ptr = np.ascontiguousarray(row_ptr, dtype=np.int64)
        cols = np.ascontiguousarray(cols, dtype=np.int32)
        values = np.ascontiguousarray(values, dtype=np.float32)
        if row_ptr.shape != (n_rows + 1,) or row_ptr[0] != 0 or np.any(np.diff(row_ptr) < 0):
            raise InputError(
                f"{where}row pointers are not a valid CSR layout for {counted(n_rows, 'row')}"
            )
        if cols.shape != values.shape or cols.size != row_ptr[-1]:
            raise InputError(
                f"{where}{cols.size} column indices and {values.size} scores for "
                f"{row_ptr[-1]} cells; expected one of each per cell"
            )
        if cols.size == 0:
            raise InputError(f"{where}no observed cell; expected observed scores")
        if cols.min() < 0 or cols.max() >= n_cols:
            raise InputError(f"{where}column index outside 0..{n_cols - 1}")
        low, high = float(values.min()), float(values.max())
        if not (0.0 <= low and high <= 1.0):
            values, _ = bounded_scores(values)  # a rounding past 0 or 1 is the bound
        if not (0.0 <= float(values.min()) and float(values.max()) <= 1.0):
            raise InputError(
                f"{where}scores must lie in [0, 1] (an unobserved cell is absent, not NaN); "
                f"found [{low}, {high}]"
            )
        col_ptr, col_rows, col_values, dup_row, dup_col, increasing = build_transpose(
            row_ptr, cols, values, n_cols
        )
        if dup_row >= 0:
            raise InputError(f"{where}cell (row {dup_row}, column {dup_col}) appears twice")
        if not increasing:
            # row order again from the column order: columns increasing within every row
            row_ptr, cols, values, *_ = build_transpose(col_ptr, col_rows, col_values, n_rows)
        return cls((n_rows, n_cols), row_ptr, cols, values, col_ptr, col_rows, col_values)

    @classmethod
    def from_coo(
        cls,
        rows: np.ndarray,
        cols: np.ndarray,
        values: np.ndarray,
        shape: tuple[int, int],
        *,
        source: str | None = None,
    ) -> ObservedCells:
        """Build from coordinates (any order): one entry per observed cell.

        Parameters
        ----------
        rows : ndarray of int of shape (n_obs,)
            Row of every cell.
        cols : ndarray of int of shape (n_obs,)
            Column of every cell.
        values : ndarray of float of shape (n_obs,)
            Score of every cell, in [0, 1].
        shape : tuple of (int, int)
            ``(n_rows, n_cols)``.
        source : str, optional
            Named in error messages.

        Returns
        -------
        ObservedCells

        Raises
        ------
        InputError
            For arrays that are not 1-D of one length, non-integer positions, a row index
            out of range, or what :meth:`from_csr` refuses.
        """
        where = f"{source}: " if source else ""
        rows, cols, values = np.asarray(rows), np.asarray(cols), np.asarray(values)
        if not (
            rows.ndim == cols.ndim == values.ndim == 1 and rows.size == cols.size == values.size
        ):
            raise InputError(
                f"{where}rows, cols and values of shapes {rows.shape}, {cols.shape} and "
                f"{values.shape}; expected one row, column and score per cell (1-D, one length)"
            )
        for name, index in (("rows", rows), ("cols", cols)):
            if index.size and not np.issubdtype(index.dtype, np.integer):
                raise InputError(
                    f"{where}{name} of dtype {index.dtype}; expected integer positions"
                )
        n_rows = int(shape[0])
        if rows.size and (rows.min() < 0 or rows.max() >= n_rows):
            raise InputError(f"{where}row index outside 0..{n_rows - 1}")
        order = np.argsort(rows, kind="stable")
        row_ptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n_rows), out=row_ptr[1:])
        return cls.from_csr(row_ptr, cols[order], values[order], shape, source=source)

    @classmethod
    def from_dense(cls, scores: np.ndarray) -> ObservedCells:
        """The non-NaN cells of a dense (n_rows, n_cols) array.

        Parameters
        ----------
        scores : ndarray of shape (n_rows, n_cols)
            Scores in [0, 1]; NaN where unobserved.

        Returns
        -------
        ObservedCells

        Raises
        ------
        InputError
            For an array that is not 2-D, or what :meth:`from_coo` refuses.
        """
        Y = np.asarray(scores, dtype=np.float32)
        if Y.ndim != 2:
            raise InputError(f"scores have shape {Y.shape}; expected a 2-D array")
        rows, cols = np.nonzero(~np.isnan(Y))
        return cls.from_coo(rows, cols, Y[rows, cols], Y.shape)

    # ------------------------------------------------------------------ accessors
    @property
    def n_observed(self) -> int:
        return int(self.row_cols.size)

    @property
    def density(self) -> float:
        """Observed fraction ``n_obs / (n_rows * n_cols)``."""
        return self.n_observed / (self.shape[0] * self.shape[1])

    @property
    def nbytes(self) -> int:
        """Bytes held (both orders)."""
        return sum(
            a.nbytes
            for a in (
                self.row_ptr,
                self.row_cols,
                self.row_values,
                self.col_ptr,
                self.col_rows,
                self.col_values,
            )
        )

    def row_counts(self) -> np.ndarray:
        """Observed cells per row, shape (n_rows,).

        Returns
        -------
        ndarray of int64 of shape (n_rows,)
        """
        return np.diff(self.row_ptr)

    def col_counts(self) -> np.ndarray:
        """Observed cells per column, shape (n_cols,).

        Returns
        -------
        ndarray of int64 of shape (n_cols,)
        """
        return np.diff(self.col_ptr)

    def row_sums(self) -> np.ndarray:
        """Sum of observed scores per row (float64), shape (n_rows,); no per-cell copy.

        Returns
        -------
        ndarray of float64 of shape (n_rows,)
        """
        return line_sums(self.row_ptr, self.row_values)

    def col_sums(self) -> np.ndarray:
        """Sum of observed scores per column (float64), shape (n_cols,); no per-cell copy.

        Returns
        -------
        ndarray of float64 of shape (n_cols,)
        """
        return line_sums(self.col_ptr, self.col_values)

    def row_index(self) -> np.ndarray:
        """Row of every cell in row order, shape (n_obs,) (allocates 8 bytes per cell).

        Returns
        -------
        ndarray of int64 of shape (n_obs,)
        """
        return np.repeat(np.arange(self.shape[0], dtype=np.int64), self.row_counts())

    def to_dense(self) -> np.ndarray:
        """Dense float32 (n_rows, n_cols) array with NaN for unobserved cells (O(N J) memory).

        Returns
        -------
        ndarray of float32 of shape (n_rows, n_cols)
        """
        out = np.full(self.shape, np.nan, dtype=np.float32)
        out[self.row_index(), self.row_cols] = self.row_values
        return out

    def __repr__(self) -> str:
        return (
            f"ObservedCells({self.shape[0]} x {self.shape[1]}, {self.n_observed} observed, "
            f"{self.density:.2%})"
        )


@numba.njit(cache=CACHE)
def line_sums(indptr: Any, values: Any) -> Any:  # pragma: no cover - jit
    """Sum of every line's values (float64) of a compressed layout, shape (n_lines,)."""
    out = np.zeros(indptr.size - 1)
    for line in range(indptr.size - 1):
        total = 0.0
        for k in range(indptr[line], indptr[line + 1]):
            total += values[k]
        out[line] = total
    return out


@numba.njit(cache=CACHE)
def build_transpose(  # pragma: no cover - jit
    indptr: Any,
    index: Any,
    values: Any,
    n_other: Any,
) -> Any:
    """Transpose a compressed layout (CSR <-> CSC) by a counting sort: O(n_obs + n).

    Returns ``(indptr_t, index_t, values_t, dup_line, dup_other, increasing)``; within each
    output line the indices come out in increasing order; ``(dup_line, dup_other)`` is the
    first repeated cell found (``(-1, -1)`` when there is none); ``increasing`` tells whether
    the indices of every input line were already strictly increasing.
    """
    n = indptr.size - 1
    counts = np.zeros(n_other + 1, dtype=np.int64)
    for k in range(index.size):
        counts[index[k] + 1] += 1
    for t in range(n_other):
        counts[t + 1] += counts[t]
    indptr_t = counts.copy()
    index_t = np.empty(index.size, dtype=np.int32)
    values_t = np.empty(values.size, dtype=values.dtype)
    fill = counts[:-1].copy()
    dup_line = -1
    dup_other = -1
    increasing = True
    for line in range(n):
        for k in range(indptr[line], indptr[line + 1]):
            t = index[k]
            if k > indptr[line] and t <= index[k - 1]:
                increasing = False
            pos = fill[t]
            if dup_line < 0 and pos > indptr_t[t] and index_t[pos - 1] == line:
                dup_line = line
                dup_other = t
            index_t[pos] = line
            values_t[pos] = values[k]
            fill[t] = pos + 1
    return indptr_t, index_t, values_t, dup_line, dup_other, increasing
