"""Replay oracle: a known response matrix stands in for the LLM calls."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from latentbench._checks import bounded_scores, first_outside
from latentbench.exceptions import InputError

if TYPE_CHECKING:
    from latentbench.io import ResponseMatrix

__all__ = ["MatrixOracle"]


class MatrixOracle:
    """Replay oracle over a known score matrix (one cell = one "LLM call").

    Parameters
    ----------
    scores : array-like of shape (n_models, n_items) or ResponseMatrix
        Scores in [0, 1]; a float rounding past 0 or 1 (within
        :data:`~latentbench._checks.SCORE_ROUNDING`) is that bound. A replay needs every
        cell: the target is each model's mean over all items.
    missing : {"error", "zero", "drop-items"}, default "error"
        What to do with missing (NaN) cells: refuse the matrix with an error naming the first
        one (default: missing is never silently zero), score them 0 on purpose (the PULSE
        release's loader convention; the choice is then explicit), or drop every item (column)
        with a missing cell, so that the target is each model's mean over the items every
        model has (``kept_items`` says which; an error if none is left).

    Raises
    ------
    InputError
        For scores that are not a non-empty 2-D array or outside [0, 1], an unknown ``missing``,
        a missing cell with ``missing="error"``, or no item left by ``missing="drop-items"``.

    Attributes
    ----------
    n_calls : int
        Number of cells revealed so far.
    kept_items : ndarray of int, shape (n_items,)
        Columns of ``scores`` that are replayed (all of them unless ``missing="drop-items"``
        dropped some); item ``k`` of the oracle is column ``kept_items[k]``.
    """

    def __init__(self, scores: np.ndarray | ResponseMatrix, *, missing: str = "error") -> None:
        from latentbench.io import ResponseMatrix

        if isinstance(scores, ResponseMatrix):  # its scores (numpy read it as one object)
            scores = scores.scores
        given = np.asarray(scores)
        values = np.asarray(given, dtype=np.float32)
        # checked before float32 rounds it, as the readers of files do (1.00000001 is no score)
        precise = given if given.dtype == np.float64 else values
        full = precise
        if values.ndim != 2 or values.shape[0] < 1 or values.shape[1] < 1:
            raise InputError(f"scores has shape {values.shape}; expected (n_models, n_items)")
        if missing not in ("error", "zero", "drop-items"):
            raise InputError(f"missing={missing!r}; expected 'error', 'zero' or 'drop-items'")
        holes = np.isnan(values)
        self.kept_items = np.arange(values.shape[1])
        if missing == "drop-items" and holes.any():
            self.kept_items = np.flatnonzero(~holes.any(axis=0))
            if self.kept_items.size == 0:
                raise InputError(
                    f"missing='drop-items': every one of the {values.shape[1]} items has a "
                    "missing cell, so none is left; expected at least one item that every "
                    "model has (drop incomplete models first)"
                )
            values, holes = values[:, self.kept_items], holes[:, self.kept_items]
            precise = precise[:, self.kept_items]
        if holes.any():
            if missing == "error":
                row, col = np.argwhere(holes)[0]
                raise InputError(
                    f"the replay matrix has {int(holes.sum())} missing cells (first: model row "
                    f"{row}, item column {col}); a replay needs complete rows: pass "
                    "missing='drop-items' to drop the items with a missing cell, missing='zero' "
                    "to score them 0 explicitly, or drop incomplete models"
                )
        # a rounding past 0 or 1 (1.0000000000000002, -1e-17) is the bound, as every reader
        # of scores reads it; a value further out (or infinite) is refused
        bounded, outside = bounded_scores(precise)
        if outside.any():
            observed = precise[~np.isnan(precise)]
            where = np.zeros(full.shape, dtype=bool)  # columns as given, not after a drop
            where[:, self.kept_items] = outside
            raise InputError(
                f"scores range [{float(observed.min())!r}, {float(observed.max())!r}]: "
                f"{first_outside(full, where)}"
            )
        if bounded is not precise:
            values = bounded.astype(np.float32)
        if holes.any():
            values = np.where(holes, np.float32(0), values)
        self._scores = values
        self.n_models, self.n_items = values.shape
        self.n_calls = 0

    def __repr__(self) -> str:
        """``MatrixOracle(71 models x 1,700 items, 48 cells revealed)``."""
        return (
            f"MatrixOracle({self.n_models:,} models x {self.n_items:,} items, "
            f"{self.n_calls:,} cells revealed)"
        )

    @property
    def scores(self) -> np.ndarray:
        """The replayed matrix, shape (n_models, n_items)."""
        return self._scores

    def true_means(self) -> np.ndarray:
        """Finite-population means per model, shape (n_models,).

        Returns
        -------
        ndarray of float64 of shape (n_models,)
            Each model's mean over the replayed items.
        """
        return np.asarray(self._scores.mean(axis=1, dtype=np.float64))

    def evaluate(self, model_index: int, item_indices: np.ndarray) -> np.ndarray:
        """Return ``scores[model_index, item_indices]``, shape (len(item_indices),) (see
        :class:`Oracle`).

        Parameters
        ----------
        model_index : int
            The model's row, in ``range(n_models)``.
        item_indices : ndarray of int of shape (batch,)
            The items' columns, in ``range(n_items)``.

        Returns
        -------
        ndarray of shape (batch,)
            The replayed scores (missing cells 0 when ``missing="zero"``).
        """
        items = np.asarray(item_indices)
        self.n_calls += int(items.size)
        return np.asarray(self._scores[model_index, items])
