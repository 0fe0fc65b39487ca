"""A response matrix backed by its observed cells only (no dense array)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from latentbench._compat import text_array
from latentbench.exceptions import InputError
from latentbench.io._cells import ObservedCells
from latentbench.io._margins import Margins
from latentbench.io._matrix import MatrixSummary, ResponseMatrix
from latentbench.io._matrix_checks import _axis_ids, _refuse_repeated_ids, _where

__all__ = ["SparseResponseMatrix"]


class SparseResponseMatrix(ResponseMatrix):
    """A :class:`ResponseMatrix` that stores only its observed cells.

    Memory is about 16 bytes per observed cell (the cells in row and in column order, see
    :class:`~latentbench.io._cells.ObservedCells`) and nothing per missing cell, so a
    50,000 x 200,000 matrix with 1% observed takes 1.6 GB instead of 40 GB. Every summary
    (accuracies, counts, constant rows and columns, :meth:`summary`, :meth:`to_long`,
    :meth:`subset`) works on the observed cells. :attr:`scores`, :attr:`observed` and
    :meth:`to_wide` are dense by definition: they build (and keep) the dense array on first
    use, which costs ``4 * n_models * n_items`` bytes.

    :meth:`ResponseMatrix.from_long` returns this class when fewer than
    :data:`latentbench.io._cells.SPARSE_DENSITY` of the cells are observed;
    :class:`~latentbench.irt.TwoPL` then fits it with the observed-cells path.

    Parameters
    ----------
    cells : ObservedCells
        The observed scores, shape (n_models, n_items).
    model_ids, item_ids : sequence of str or int
        Unique ids, one per row / column.
    source : str, optional
        Where the data came from; used in error messages.

    Raises
    ------
    InputError
        For ``cells`` that are not :class:`ObservedCells`, ids that do not match the shape or
        repeat, or fewer than 2 models or 2 items.
    """

    def __init__(
        self,
        cells: ObservedCells,
        model_ids: Sequence[Any],
        item_ids: Sequence[Any],
        *,
        source: str | None = None,
    ) -> None:
        if not isinstance(cells, ObservedCells):
            raise InputError(f"{_where(source)}expected ObservedCells, got {type(cells).__name__}")
        n_models, n_items = cells.shape
        models, items = _axis_ids(model_ids, item_ids, cells.shape, source, "matrix")
        if n_models < 2 or n_items < 2:
            raise InputError(
                f"{_where(source)}{n_models} model(s) x {n_items} item(s); expected at least 2 "
                "models and 2 items"
            )
        _refuse_repeated_ids(models, items, source)
        self._cells = cells
        self._dense: np.ndarray | None = None
        self._model_ids = models
        self._item_ids = items
        self.source = source
        self.layout: str | None = None
        """As :attr:`ResponseMatrix.layout`: how the file or the table's key columns were
        read; None otherwise."""

    # ------------------------------------------------------------------ sparse access
    @property
    def is_sparse(self) -> bool:
        return True

    def observed_cells(self) -> ObservedCells:
        """The observed cells (no copy).

        Returns
        -------
        ObservedCells
            Of shape (n_models, n_items).
        """
        return self._cells

    # ------------------------------------------------------------------ dense views
    @property
    def _scores(self) -> np.ndarray:  # type: ignore[override]
        if self._dense is None:
            dense = self._cells.to_dense()
            dense.setflags(write=False)
            self._dense = dense
        return self._dense

    @_scores.setter
    def _scores(self, value: np.ndarray) -> None:  # pragma: no cover - base class only
        raise AttributeError("a SparseResponseMatrix has no dense array to set")

    # ------------------------------------------------------------------ shape & counts
    @property
    def shape(self) -> tuple[int, int]:
        return self._cells.shape

    @property
    def observed_fraction(self) -> float:
        """Share of the cells that are observed, in [0, 1]."""
        return self._cells.density

    @property
    def is_binary(self) -> bool:
        values = self._cells.row_values
        return bool(np.all((values == 0) | (values == 1)))

    def _compute_margins(self) -> Margins:
        cells = self._cells  # the observed cells themselves: no dense grid
        return Margins(
            np.asarray(cells.row_counts(), np.int64),
            np.asarray(cells.row_sums(), np.float64),
            np.asarray(cells.col_counts(), np.int64),
            np.asarray(cells.col_sums(), np.float64),
        )

    def constant_models(self) -> np.ndarray:
        """Indices of rows whose observed scores are all equal (at least one observed), shape
        (k,).

        Returns
        -------
        ndarray of int of shape (k,)
            Row positions, ascending.
        """
        return np.flatnonzero(_constant(self._cells.row_ptr, self._cells.row_values))

    def constant_items(self) -> np.ndarray:
        """Indices of columns whose observed scores are all equal (at least one observed),
        shape (k,).

        Returns
        -------
        ndarray of int of shape (k,)
            Column positions, ascending.
        """
        return np.flatnonzero(_constant(self._cells.col_ptr, self._cells.col_values))

    def summary(self) -> MatrixSummary:
        """Shape, observed fraction, binary or fractional, constant and empty rows/columns.

        Returns
        -------
        MatrixSummary
            The counts, and the ids of the constant and empty models and items.
        """
        cells = self._cells
        models, items = np.array(self._model_ids), np.array(self._item_ids)
        return MatrixSummary(
            n_models=self.n_models,
            n_items=self.n_items,
            n_observed=cells.n_observed,
            observed_fraction=cells.density,
            is_binary=self.is_binary,
            mean_score=float(cells.row_values.mean(dtype=np.float64)),
            constant_models=models[self.constant_models()].tolist(),
            constant_items=items[self.constant_items()].tolist(),
            empty_models=models[cells.row_counts() == 0].tolist(),
            empty_items=items[cells.col_counts() == 0].tolist(),
        )

    def to_long(self) -> pd.DataFrame:
        """Long table with columns ``model``, ``item``, ``score``: one row per observed cell.

        Returns
        -------
        DataFrame of shape (n_observed, 3)
            Rows in row-major cell order; scores as float64.
        """
        cells = self._cells
        return pd.DataFrame(
            {
                "model": text_array(np.array(self._model_ids, dtype=object)[cells.row_index()]),
                "item": text_array(np.array(self._item_ids, dtype=object)[cells.row_cols]),
                "score": cells.row_values.astype(np.float64),
            }
        )

    def subset(
        self,
        models: Sequence[Any] | np.ndarray | None = None,
        items: Sequence[Any] | np.ndarray | None = None,
    ) -> SparseResponseMatrix:
        """A new matrix with the chosen rows and columns (its observed cells only).

        Parameters
        ----------
        models, items : sequence of ids, integer positions or a boolean mask, optional
            ``None`` keeps all. A mask has shape (n_models,) or (n_items,).

        Returns
        -------
        SparseResponseMatrix
            Of shape (len(models), len(items)), in the order selected.

        Raises
        ------
        InputError
            For a single id or position (not a sequence), an unknown id, a position out of
            range, a mask of the wrong shape, an id selected twice, or an empty selection.
        """
        rows = self._resolve(models, self._model_ids, "model")
        cols = self._resolve(items, self._item_ids, "item")
        if rows.size == 0 or cols.size == 0:
            raise InputError("the subset is empty; select at least one model and one item")
        row_map = np.full(self.n_models, -1, dtype=np.int64)
        row_map[rows] = np.arange(rows.size)
        col_map = np.full(self.n_items, -1, dtype=np.int64)
        col_map[cols] = np.arange(cols.size)
        cells = self._cells
        new_rows = row_map[cells.row_index()]
        new_cols = col_map[cells.row_cols]
        keep = (new_rows >= 0) & (new_cols >= 0)
        out = object.__new__(SparseResponseMatrix)
        out._cells = (
            ObservedCells.from_coo(
                new_rows[keep], new_cols[keep], cells.row_values[keep], (rows.size, cols.size)
            )
            if keep.any()
            else _empty_cells(rows.size, cols.size)
        )
        out._dense = None
        out._model_ids = [self._model_ids[i] for i in rows]
        out._item_ids = [self._item_ids[j] for j in cols]
        out.source = self.source
        # as the dense subset: the file's content (every row and column, reordered at most)
        # keeps what was read from it (layout, labels, the items left out)
        whole = (len(rows) == len(set(rows.tolist())) == self.n_models
                 and len(cols) == len(set(cols.tolist())) == self.n_items)  # fmt: skip
        out.layout = getattr(self, "layout", None) if whole else None
        out.labels = getattr(self, "labels", None) if whole else None
        out.dropped_items = self.dropped_items if whole else ()
        return out


def _empty_cells(n: int, m: int) -> ObservedCells:
    empty_i = np.zeros(0, dtype=np.int32)
    empty_v = np.zeros(0, dtype=np.float32)
    return ObservedCells(
        (n, m),
        np.zeros(n + 1, np.int64),
        empty_i,
        empty_v,
        np.zeros(m + 1, np.int64),
        empty_i.copy(),
        empty_v.copy(),
    )


def _constant(indptr: np.ndarray, values: np.ndarray) -> np.ndarray:
    counts = np.diff(indptr)
    nonempty = counts > 0
    out = np.zeros(counts.size, dtype=bool)
    if values.size == 0:
        return out
    starts = indptr[:-1][nonempty]
    high = np.maximum.reduceat(values, starts)
    low = np.minimum.reduceat(values, starts)
    out[nonempty] = high == low
    return out
