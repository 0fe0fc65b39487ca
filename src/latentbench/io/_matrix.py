"""The response matrix: models x items, scores in [0, 1], NaN for missing cells."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from latentbench._checks import bounded_scores, user_stacklevel
from latentbench._compat import TEXT, text_array
from latentbench._repr import html_block
from latentbench.exceptions import DataWarning, InputError
from latentbench.io._files import read_table_file
from latentbench.io._long_keys import (
    KeyColumns,
    check_key_columns,
    mean_over_trials,
    text_labels,
    trial_notes,
)
from latentbench.io._margins import Margins, dense_margins
from latentbench.io._matrix_checks import (
    _SCORE_COLUMNS,
    _axis_ids,
    _coerce_scores,
    _head,
    _holds_numbers,
    _refuse_known_outputs,
    _refuse_repeated_ids,
    _row,
    _show,
    _where,
    refuse_bad_ids,
    refuse_case_lookalikes,
    refuse_long_summary_ids,
    refuse_long_without_item,
    refuse_long_without_model,
    refuse_long_without_score,
    refuse_repeated_rows,
    refuse_summary_column,
    refuse_wide_non_items,
    score_advice,
    twin_note,
    wide_scores,
)

__all__ = ["MatrixSummary", "ResponseMatrix"]


@dataclass(frozen=True)
class MatrixSummary:
    """Descriptive summary of a :class:`ResponseMatrix`.

    Attributes
    ----------
    n_models, n_items : int
        Matrix shape.
    n_observed : int
        Number of observed (non-NaN) cells.
    observed_fraction : float
        ``n_observed / (n_models * n_items)``.
    is_binary : bool
        True when every observed score is 0 or 1.
    mean_score : float
        Mean over observed cells.
    constant_models, constant_items : list of str
        Ids of rows / columns whose observed scores are all equal (including all-correct and
        all-wrong); their IRT parameters are not identified without regularisation.
    empty_models, empty_items : list of str
        Ids of rows / columns with no observed cell.
    """

    n_models: int
    n_items: int
    n_observed: int
    observed_fraction: float
    is_binary: bool
    mean_score: float
    constant_models: list[str]
    constant_items: list[str]
    empty_models: list[str]
    empty_items: list[str]

    def __str__(self) -> str:
        kind = "binary" if self.is_binary else "fractional"
        lines = [
            f"ResponseMatrix: {self.n_models} models x {self.n_items} items, "
            f"{self.observed_fraction:.1%} observed ({self.n_observed} cells), {kind} scores, "
            f"mean {self.mean_score:.4f}",
            f"  constant models: {len(self.constant_models)}, constant items: "
            f"{len(self.constant_items)}, empty models: {len(self.empty_models)}, "
            f"empty items: {len(self.empty_items)}",
        ]
        return "\n".join(lines)

    def __repr__(self) -> str:
        # the id lists by their first few and their length (MMLU-Pro has 876 constant items:
        # the dataclass's repr printed every one, 7 kB in a notebook cell)
        from latentbench._repr import short_ids

        lists = ("constant_models", "constant_items", "empty_models", "empty_items")
        parts = []
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            parts.append(f"{name}={short_ids(value) if name in lists else repr(value)}")
        return f"MatrixSummary({', '.join(parts)})"


def _factorize_ids(ids: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Codes (int64, one per row) and the sorted distinct ids as strings.

    Factorizes the column as it is (no per-row string copy), then turns the distinct values
    into strings; values that become the same string (``1`` and ``"1"``) share one id.
    """
    codes, uniques = pd.factorize(ids, sort=False)
    text = np.array([str(value) for value in uniques], dtype=object)
    names, inverse = np.unique(text.astype(str), return_inverse=True)
    return inverse.astype(np.int64)[codes], [str(name) for name in names]


class ResponseMatrix:
    """A partly observed matrix of scores: rows are models, columns are items.

    Attributes
    ----------
    store_query : dict or None
        Set by :meth:`Store.matrix <latentbench.io.store.Store.matrix>`: the store, benchmark,
        metric, filter and split the matrix holds, so that a fit saved with it records its
        input (``fit.json``) as ``latentbench fit --store`` does. None otherwise, and on every
        subset.
    labels : dict or None
        What the rows were labelled, where a long table or the store says it: the one
        ``benchmark``, ``metric``, ``filter`` and ``split`` read (set by :meth:`from_long`,
        :meth:`read` and :meth:`Store.matrix <latentbench.io.store.Store.matrix>`; a fit
        saved with the matrix records them, and ``estimate`` compares a new model's answers
        with them). None otherwise, and on a true subset.
    dropped_items : tuple of str
        The items the reader left out because no model has an observed score on them (a
        wide file's empty columns, a long file's items whose every score is missing), set by
        :meth:`from_long`, :meth:`from_wide` and :meth:`read` (said in a
        :class:`~latentbench.exceptions.DataWarning` and in ``layout``; a fit saved with the
        matrix records them in ``fit.json``'s ``input``, and its report says them). Empty
        otherwise, and on a true subset. A model with no observed score is never left out: it
        is a row with no data, in either layout (``no_data`` in the fit's abilities).
    source : str or None
        The file (or table) the matrix was read from, named in error messages; None when
        built from arrays without one.
    layout : str or None
        How the file or the table's key columns were read, e.g. ``"long: columns model,
        item, score"`` (set by :meth:`read`, and by :meth:`from_long` when it had something
        to say about the key columns; kept by a subset of all the rows and columns); None
        otherwise.

    Parameters
    ----------
    scores : array-like of shape (n_models, n_items)
        Scores in [0, 1]; NaN marks a missing cell (never zero). Stored as float32: scores in
        [0, 1] need no more precision, and it halves memory at leaderboard scale.
    model_ids : sequence of str or int, length n_models
        Unique model identifiers (stored as strings).
    item_ids : sequence of str or int, length n_items
        Unique item identifiers (stored as strings).
    source : str, optional
        Where the data came from (a file name); used in error messages.

    Raises
    ------
    InputError
        For scores that are not 2-D, an empty matrix, ids that do not match the shape or
        repeat, an infinite score or one outside [0, 1], fewer than 2 models or 2 items, or
        no observed cell.

    Examples
    --------
    >>> import numpy as np
    >>> m = ResponseMatrix(np.array([[1, 0, np.nan], [1, 1, 0]]), ["m1", "m2"], ["q1", "q2", "q3"])
    >>> m.shape
    (2, 3)
    >>> round(m.observed_fraction, 3)
    0.833
    """

    store_query: dict[str, Any] | None = None
    labels: dict[str, str] | None = None
    dropped_items: tuple[str, ...] = ()

    def __init__(
        self,
        scores: Any,
        model_ids: Sequence[Any],
        item_ids: Sequence[Any],
        *,
        source: str | None = None,
    ) -> None:
        array = _score_array(scores, source)
        if array.ndim != 2:
            raise InputError(
                f"{_where(source)}scores have {array.ndim} dimensions; expected a 2-D "
                "(n_models, n_items) array"
            )
        n_models, n_items = array.shape
        if n_models == 0 or n_items == 0:
            raise InputError(f"{_where(source)}the response matrix is empty; expected data")
        models, items = _axis_ids(model_ids, item_ids, array.shape, source, "score array")
        _refuse_repeated_ids(models, items, source)
        values = array.astype(np.float32, copy=True)
        finite = np.isfinite(values)
        if np.isinf(values).any():
            row, col = np.argwhere(np.isinf(values))[0]
            raise InputError(
                f"{_where(source)}model {models[row]!r}, item {items[col]!r}: value "
                f"{_show(array[row, col])} is infinite; expected a score in [0, 1] or NaN"
            )
        # checked before float32 rounds it: 1.00000001 is no score, as the other readers say;
        # a rounding past 0 or 1 (1.0000000000000002, -1e-17) is the bound, as they read it
        checked = array if array.dtype == np.float64 else values
        bounded, outside = bounded_scores(checked)
        if outside.any():
            row, col = np.argwhere(outside)[0]
            raise InputError(
                f"{_where(source)}model {models[row]!r}, item {items[col]!r}: score "
                f"{_show(array[row, col])} is outside [0, 1]; expected a score in [0, 1]"
                f"{score_advice(array[row, col], values)}"
            )
        if bounded is not checked:
            values = bounded.astype(np.float32)
        if n_models < 2:
            raise InputError(
                f"{_where(source)}only one model ({models[0]!r}); expected at least 2 models"
            )
        if n_items < 2:
            raise InputError(
                f"{_where(source)}only one item ({items[0]!r}); expected at least 2 items"
            )
        if not finite.any():
            raise InputError(f"{_where(source)}every cell is missing; expected observed scores")
        values.setflags(write=False)
        self._scores = values
        self._model_ids = models
        self._item_ids = items
        self.source = source
        self.layout: str | None = None
        """How :meth:`read` interpreted the file, or how :meth:`from_long` read the key columns
        of its table (several benchmarks, trials averaged), or the store and benchmark that
        :meth:`Store.matrix <latentbench.io.store.Store.matrix>` read (trials averaged); None
        otherwise."""

    def __setstate__(self, state: dict[str, Any]) -> None:
        # pickle (joblib, multiprocessing) and deepcopy rebuild the arrays writeable: the
        # scores stay read-only, as documented (margins are cached on them)
        self.__dict__.update(state)
        for value in state.values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_long(
        cls,
        frame: pd.DataFrame,
        *,
        model: str = "model",
        item: str = "item",
        score: str = "score",
        source: str | None = None,
    ) -> ResponseMatrix:
        """Build a matrix from a long table with one row per observed cell.

        When fewer than :data:`~latentbench.io._cells.SPARSE_DENSITY` of the
        (model, item) cells are present, the result stores only those cells (a
        :class:`~latentbench.io._sparse_matrix.SparseResponseMatrix`, same interface).

        Parameters
        ----------
        frame : DataFrame
            Columns ``model``, ``item``, ``score`` (names configurable). A (model, item) pair
            that is absent is missing, never zero; so is a row whose score is missing. A
            model whose every score is missing is kept as a row with no data (as a wide
            table's empty row); an item whose every score is missing is left out (as a wide
            table's empty column), in ``dropped_items`` and ``layout`` (both said in a
            :class:`DataWarning`). Repeated pairs with the same score are
            collapsed (with a :class:`DataWarning`); repeated pairs with different scores are an
            error. The canonical key columns of the store's long table (``latentbench
            export``), when present, are read as :meth:`Store.matrix
            <latentbench.io.store.Store.matrix>` reads them: ``metric``, ``filter`` or
            ``split`` with several values is an error (one matrix, one quantity); several
            ``benchmark`` values are an error when an item id occurs under two of them, else
            read as one matrix (said in a :class:`DataWarning` and in ``layout``); several
            ``trial`` values of one (model, item) are averaged into the cell (said, with the
            count). Other columns are ignored.
        model, item, score : str
            Column names.
        source : str, optional
            File name for error messages.

        Returns
        -------
        ResponseMatrix
        """
        frame, keys = _long_frame_and_keys(frame, model, item, score, source)
        values, missing = _observed_long_scores(frame, model, item, score, source)
        kept = np.flatnonzero(~missing)  # the file's rows of the observed cells
        empty_models: list[str] = []
        dropped: list[str] = []
        if kept.size < len(frame):
            # a model with no observed score stays, a row with no data (as in a wide file);
            # an item with none is left out (as a wide file's empty column), recorded
            empty_models = _without_score(frame[model], missing)
            dropped = _without_score(frame[item], missing)
            frame = frame.loc[kept].reset_index(drop=True)
            values = values[kept]
        if keys.trial is not None:  # several trials of a cell: their mean, as Store.matrix
            frame, values, kept = _mean_of_long_trials(
                frame, values, kept, keys.trial, keys.notes, model, item, source
            )
        matrix = _matrix_of_cells(cls, frame, values, kept, model, item, source, empty_models)
        notes = [*keys.notes, *([_left_out(dropped, "item")] if dropped else [])]
        if notes:  # how the key columns were read, the items left out: said in the layout too
            matrix.layout = f"long: columns {model}, {item}, {score}; " + "; ".join(notes)
        matrix.labels = dict(keys.labels) or None
        matrix.dropped_items = tuple(dropped)
        return matrix

    @classmethod
    def from_cells(
        cls,
        rows: np.ndarray,
        cols: np.ndarray,
        values: np.ndarray,
        model_ids: Sequence[Any],
        item_ids: Sequence[Any],
        *,
        source: str | None = None,
    ) -> ResponseMatrix:
        """A sparse-backed matrix from its observed cells (never builds the dense array).

        Parameters
        ----------
        rows, cols : array of int, shape (n_obs,)
            Row (model) and column (item) position of every observed cell, any order, each
            cell once.
        values : array of float, shape (n_obs,)
            Scores in [0, 1].
        model_ids, item_ids : sequence of str or int
            One id per row / column.
        source : str, optional
            File name for error messages.

        Returns
        -------
        SparseResponseMatrix
            About 16 bytes per observed cell; see
            :class:`~latentbench.io._sparse_matrix.SparseResponseMatrix`.
        """
        from latentbench.io._cells import ObservedCells
        from latentbench.io._sparse_matrix import SparseResponseMatrix

        cells = ObservedCells.from_coo(
            np.asarray(rows),
            np.asarray(cols),
            np.asarray(values),
            (len(model_ids), len(item_ids)),
            source=source,
        )
        return SparseResponseMatrix(cells, model_ids, item_ids, source=source)

    @classmethod
    def from_wide(
        cls, frame: pd.DataFrame, *, model: str | None = None, source: str | None = None
    ) -> ResponseMatrix:
        """Build a matrix from a wide table: one row per model, one column per item.

        Parameters
        ----------
        frame : DataFrame
            Scores with items as columns. Model ids are taken from the column ``model`` when
            given (or when a column named ``model`` exists), else from the index. Empty cells
            are missing; an empty row is a model with no data (kept); an empty column is left
            out (in ``dropped_items``, said in a :class:`DataWarning`).
        model : str, optional
            Name of the column holding model ids.
        source : str, optional
            File name for error messages.

        Returns
        -------
        ResponseMatrix
            Scores of shape (n_models, n_items), NaN where missing.

        Raises
        ------
        InputError
            For something other than a DataFrame, MultiIndex rows or columns, an empty table,
            a missing ``model`` column, repeated or non-text ids, or a score outside [0, 1].
        """
        if not isinstance(frame, pd.DataFrame):
            raise InputError(
                f"{_where(source)}expected a pandas DataFrame, got {type(frame).__name__}"
            )
        if isinstance(frame.columns, pd.MultiIndex):  # e.g. a pivot of (task, item) columns
            raise InputError(
                f"{_where(source)}the columns have {frame.columns.nlevels} levels (a "
                f"MultiIndex, first {tuple(frame.columns[0])!r}); expected one item id per "
                "column: join the levels first, e.g. frame.columns = ['/'.join(map(str, c)) "
                "for c in frame.columns]"
            )
        if model is None and "model" in frame.columns:
            model = "model"
        if model is not None:
            if model not in frame.columns:
                raise InputError(f"{_where(source)}column {model!r} is missing; expected model ids")
            refuse_bad_ids(frame[model].reset_index(drop=True), "model", source, str(model))
            frame = frame.set_index(model)
        if isinstance(frame.index, pd.MultiIndex) and len(frame):  # e.g. (model, setting)
            raise InputError(
                f"{_where(source)}the rows have {frame.index.nlevels} levels (a MultiIndex, "
                f"first {tuple(frame.index[0])!r}); expected one model id per row: join the "
                "levels first, e.g. frame.index = ['/'.join(map(str, k)) for k in frame.index]"
            )
        if frame.shape[0] == 0 or frame.shape[1] == 0:
            header = f"{frame.index.name or ''}{''.join(map(str, frame.columns))}"
            separator = next((c for c in (";", "\t", "|") if c in header), None)
            if separator is not None and frame.shape[1] <= 1:  # one column: another separator
                raise InputError(
                    f"{_where(source)}one column named {header!r}: the file seems separated by "
                    f"{separator!r}; expected a comma-separated CSV (or Parquet)"
                )
            raise InputError(f"{_where(source)}the table is empty; expected models x items")
        # before frame[name], which gives a DataFrame for a repeated name
        _refuse_repeated_ids([], list(frame.columns), source)
        refuse_wide_non_items(frame, list(frame.index), _where(source), lambda k: _row(source, k))
        scores = wide_scores(frame, source)
        items = list(frame.columns)
        _refuse_edge_summaries(scores, items, _where(source))
        empty = np.isnan(scores).all(axis=0)
        gone: list[str] = []
        if empty.any() and not empty.all():  # all empty: the constructor's error
            # an empty column (a trailing comma: 'Unnamed: 41') is no item, as from_long
            # leaves out an item with no observed score
            gone = [str(items[j]) for j in np.flatnonzero(empty)]
            warnings.warn(
                f"{_where(source)}{_left_out(gone, 'item column')}",
                DataWarning,
                stacklevel=user_stacklevel(),
            )
            scores = scores[:, ~empty]
            items = [name for name, drop in zip(items, empty, strict=True) if not drop]
        # a model on two rows: both lines named (after the cells, which say more of a long
        # table read as wide)
        refuse_repeated_rows(pd.Series(frame.index), _where(source), lambda k: _row(source, k))
        matrix = cls(scores, list(frame.index), items, source=source)
        matrix.dropped_items = tuple(gone)
        return matrix

    @classmethod
    def read(
        cls,
        path: str | os.PathLike[str],
        *,
        layout: str = "auto",
        model: str | None = None,
        item: str | None = None,
        score: str | None = None,
    ) -> ResponseMatrix:
        """Read a Parquet or CSV file in long or wide layout.

        Parameters
        ----------
        path : path-like
            ``.parquet`` / ``.pq`` or ``.csv`` / ``.tsv`` file.
        layout : {"auto", "long", "wide"}
            ``auto`` picks ``long`` when a model, an item and a score column exist (by default
            ``model``, ``item`` and the first of ``score``, ``correct``, ``is_correct``), and
            ``wide`` otherwise: one row per model, ids in the ``model`` column (or ``model``
            given here), else in the first column when it is not numeric.
        model, item, score : str, optional
            Column names of the model ids, item ids and scores (long layout); ``model`` also
            names the id column of a wide table.

        Returns
        -------
        ResponseMatrix
            With ``layout`` set to a one-line description of what was read (e.g.
            ``"long: columns model, item, correct"``).

        Raises
        ------
        InputError
            No such file, an unreadable one, a column not found, a score outside [0, 1], a
            repeated (model, item) cell, ...; the message names the file, the column and the value.
        """
        if not isinstance(path, str | os.PathLike):  # a table in memory: not a path
            raise InputError(
                f"path of type {type(path).__name__}; expected a file path (str or Path)"
                + (
                    ": a table in memory is ResponseMatrix.from_long(frame) or "
                    "ResponseMatrix.from_wide(frame)"
                    if isinstance(path, pd.DataFrame)
                    else ""
                )
            )
        file = Path(path)
        source = str(file)
        frame = read_table_file(file)  # CSV cells stay text: ids such as 007 are kept as is
        if layout not in ("auto", "long", "wide"):
            raise InputError(f"layout={layout!r}; expected 'auto', 'long' or 'wide'")
        columns = [str(c) for c in frame.columns]
        _refuse_known_outputs(columns, source, frame)
        model_col = model or "model"
        item_col = item or "item"
        score_col = score or next((c for c in _SCORE_COLUMNS if c in columns), "score")
        roles = {"model": model_col, "item": item_col, "score": score_col}
        given = [name for name, value in (("model", model), ("item", item), ("score", score))
                 if value is not None]  # fmt: skip
        for name in given:
            other = next((k for k, v in roles.items() if k != name and v == roles[name]), None)
            if other is not None:
                raise InputError(
                    f"{source}: column {roles[name]!r} given as the {name} column is also the "
                    f"{other} column; expected a column of its own for each"
                )
        if layout == "auto":
            layout = "long" if {model_col, item_col, score_col} <= set(columns) else "wide"
            if layout == "wide" and item is None and score is None:
                refuse_case_lookalikes(
                    columns,
                    f"{source}: ",
                    hint=" (or name them: model=, item=, score=, `latentbench fit "
                    "--model-col/--item-col/--score-col`)",
                )
            if layout == "wide" and item is None:
                refuse_long_without_item(
                    frame,
                    source,
                    _SCORE_COLUMNS if score is None else (score,),
                    model=model_col,
                    hint=" (or name it: item=...)",
                )
            if layout == "wide" and model is None:
                refuse_long_without_model(
                    frame,
                    source,
                    _SCORE_COLUMNS if score is None else (score,),
                    item=item_col,
                    hint=" (or name it: model=...)",
                )
            if layout == "wide" and score is None:
                refuse_long_without_score(
                    columns,
                    source,
                    _SCORE_COLUMNS,
                    model=model_col,
                    item=item_col,
                    hint=" (or name it: score=...)",
                )
            if layout == "wide" and (item is not None or score is not None):
                given = [c for c in (model, item, score) if c is not None and c not in columns]
                raise InputError(
                    f"{source}: column {given[0] if given else score_col!r} not found; found "
                    f"columns {_head(columns)}"
                )
        if layout == "long":
            matrix = cls.from_long(
                frame, model=model_col, item=item_col, score=score_col, source=source
            )
            # from_long's layout, when set, also says how the key columns were read
            matrix.layout = (
                getattr(matrix, "layout", None)
                or f"long: columns {model_col}, {item_col}, {score_col}"
            )
            return _said_twins(matrix, source)
        if model is not None or "model" in columns:
            id_col = model_col
            if id_col not in columns:
                raise InputError(
                    f"{source}: model column {id_col!r} not found; found columns {_head(columns)}"
                )
            matrix = cls.from_wide(frame, model=id_col, source=source)
        else:
            first = frame.columns[0]
            if _holds_numbers(frame[first]):
                raise InputError(
                    f"{source}: read as a wide table (one row per model), but no model-id column "
                    f"was found: the first column {str(first)!r} holds numbers, and there is no "
                    f"'model' column (columns: {_head(columns)}); add a first column of model "
                    "ids, name it with model=..., or for a long table name the columns with "
                    "model=, item= and score="
                )
            id_col = str(first)
            frame = frame.rename(columns={first: id_col})
            try:
                matrix = cls.from_wide(frame, model=id_col, source=source)
            except InputError as exc:  # say how the file was read: maybe a long table
                raise InputError(
                    f"{exc} (read as a wide table (one row per model, ids in the first column "
                    f"{id_col!r}), as no columns {model_col!r}, {item_col!r} and a score "
                    f"({', '.join(repr(c) for c in _SCORE_COLUMNS)}) were all found; for a long "
                    "table name its columns: model=, item=, score=, `latentbench fit "
                    "--model-col/--item-col/--score-col`)"
                ) from None
        # the file's item columns, the empty ones among them (left out) said
        dropped = matrix.dropped_items
        matrix.layout = (
            f"wide: model ids in column {id_col!r}, {matrix.n_items + len(dropped)} item columns"
            + (f"; {_left_out(list(dropped), 'item column')}" if dropped else "")
        )
        return _said_twins(matrix, source)

    # ------------------------------------------------------------------ accessors
    @property
    def is_sparse(self) -> bool:
        """True when only the observed cells are stored (see :meth:`from_cells`)."""
        return False

    def observed_cells(self) -> Any:
        """The observed cells in row and column order.

        Returns
        -------
        ObservedCells
            The cells as :class:`~latentbench.io._cells.ObservedCells` (row- and column-
            compressed), of shape (n_models, n_items).
        """
        from latentbench.io._cells import ObservedCells

        return ObservedCells.from_dense(self._scores)

    @property
    def scores(self) -> np.ndarray:
        """Read-only float32 array of shape (n_models, n_items); NaN = missing."""
        return self._scores

    @property
    def model_ids(self) -> list[str]:
        """Model ids, length n_models."""
        return list(self._model_ids)

    @property
    def item_ids(self) -> list[str]:
        """Item ids, length n_items."""
        return list(self._item_ids)

    @property
    def shape(self) -> tuple[int, int]:
        """(n_models, n_items)."""
        return self._scores.shape  # type: ignore[return-value]

    @property
    def n_models(self) -> int:
        """Number of models (rows)."""
        return self.shape[0]

    @property
    def n_items(self) -> int:
        """Number of items (columns)."""
        return self.shape[1]

    @property
    def observed(self) -> np.ndarray:
        """Boolean mask of shape (n_models, n_items), True where a score is observed."""
        return ~np.isnan(self._scores)

    @property
    def observed_fraction(self) -> float:
        """Share of the cells that are observed, in [0, 1]."""
        return float(self.observed.mean())

    @property
    def is_binary(self) -> bool:
        """True when every observed score is exactly 0 or 1."""
        values = self._scores[~np.isnan(self._scores)]
        return bool(np.all((values == 0) | (values == 1)))

    def margins(self) -> Margins:
        """Observed counts and score sums per model and per item (computed once: the scores
        are read-only).

        Returns
        -------
        Margins
            Counts and sums of shape (n_models,) per model and (n_items,) per item.
        """
        cached: Margins | None = getattr(self, "_margins", None)
        if cached is None:
            cached = self._compute_margins()
            self._margins = cached
        return cached

    def _compute_margins(self) -> Margins:
        return dense_margins(self._scores)

    def model_accuracy(self) -> np.ndarray:
        """Mean observed score per model, shape (n_models,); NaN for a row with no data.

        Returns
        -------
        ndarray of shape (n_models,)
        """
        return self.margins().row_mean()

    def item_accuracy(self) -> np.ndarray:
        """Mean observed score per item (the classical p-value), shape (n_items,).

        Returns
        -------
        ndarray of shape (n_items,)
            NaN for a column with no data.
        """
        return self.margins().col_mean()

    def n_observed_per_model(self) -> np.ndarray:
        """Observed cells of each model, shape (n_models,).

        Returns
        -------
        ndarray of int of shape (n_models,)
        """
        return self.margins().row_count.copy()

    def n_observed_per_item(self) -> np.ndarray:
        """Observed cells of each item, shape (n_items,).

        Returns
        -------
        ndarray of int of shape (n_items,)
        """
        return self.margins().col_count.copy()

    def constant_models(self) -> np.ndarray:
        """Indices of rows whose observed scores are all equal (at least one observed), shape
        (k,).

        Returns
        -------
        ndarray of int of shape (k,)
            Row positions, ascending.
        """
        return np.flatnonzero(_constant(self._scores, axis=1))

    def constant_items(self) -> np.ndarray:
        """Indices of columns whose observed scores are all equal (at least one observed),
        shape (k,).

        Returns
        -------
        ndarray of int of shape (k,)
            Column positions, ascending.
        """
        return np.flatnonzero(_constant(self._scores, axis=0))

    def _repr_html_(self) -> str:
        """A notebook's view: the one-line repr and the summary's lines (not the cells: a
        matrix can hold millions; ``to_wide()`` and ``to_long()`` have them)."""
        return html_block(f"{self!r}\n{self.summary()}")

    def summary(self) -> MatrixSummary:
        """Shape, observed fraction, binary or fractional, constant and empty rows/columns.

        Returns
        -------
        MatrixSummary
            The counts, and the ids of the constant and empty models and items.
        """
        obs = self.observed
        n_obs = int(obs.sum())
        models, items = np.array(self._model_ids), np.array(self._item_ids)
        return MatrixSummary(
            n_models=self.n_models,
            n_items=self.n_items,
            n_observed=n_obs,
            observed_fraction=n_obs / obs.size,
            is_binary=self.is_binary,
            mean_score=float(np.nanmean(self._scores, dtype=np.float64)),
            constant_models=models[self.constant_models()].tolist(),
            constant_items=items[self.constant_items()].tolist(),
            empty_models=models[~obs.any(axis=1)].tolist(),
            empty_items=items[~obs.any(axis=0)].tolist(),
        )

    # ------------------------------------------------------------------ conversion
    def to_long(self) -> pd.DataFrame:
        """Long table with columns ``model``, ``item``, ``score``: one row per observed cell.

        Returns
        -------
        DataFrame of shape (n_observed, 3)
            Rows in row-major cell order; scores as float64.
        """
        rows, cols = np.nonzero(self.observed)
        return pd.DataFrame(
            {
                "model": text_array(np.array(self._model_ids, dtype=object)[rows]),
                "item": text_array(np.array(self._item_ids, dtype=object)[cols]),
                "score": self._scores[rows, cols].astype(np.float64),
            }
        )

    def to_wide(self) -> pd.DataFrame:
        """Wide DataFrame: index = model ids, columns = item ids, NaN = missing.

        Returns
        -------
        DataFrame of shape (n_models, n_items)
            A copy of the scores (float32), index named ``model``.
        """
        frame = pd.DataFrame(
            self._scores,
            index=pd.Index(self._model_ids, dtype=TEXT, name="model"),
            columns=pd.Index(self._item_ids, dtype=TEXT),
            copy=True,  # the frame is the caller's: pandas 2 would share the (read-only) scores
        )
        return frame

    def subset(
        self,
        models: Sequence[Any] | np.ndarray | None = None,
        items: Sequence[Any] | np.ndarray | None = None,
    ) -> ResponseMatrix:
        """A new matrix with the chosen rows and columns.

        Parameters
        ----------
        models, items : sequence of ids, integer positions or a boolean mask, optional
            ``None`` keeps all. A mask has shape (n_models,) or (n_items,).

        Returns
        -------
        ResponseMatrix
            Scores of shape (len(models), len(items)), in the order selected.

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
        # values were validated when this matrix was built: no re-validation (a subset may
        # legitimately have a single row or column, e.g. one model's scores)
        out = object.__new__(ResponseMatrix)
        scores = self._scores[np.ix_(rows, cols)]
        scores.setflags(write=False)
        out._scores = scores
        out._model_ids = [self._model_ids[i] for i in rows]
        out._item_ids = [self._item_ids[j] for j in cols]
        out.source = self.source
        # still the file's content (every row and column, reordered at most): its layout, so
        # that IRTResult.save records the file as the fit's input; a true subset is not it
        whole = (len(rows) == len(set(rows.tolist())) == self.n_models
                 and len(cols) == len(set(cols.tolist())) == self.n_items)  # fmt: skip
        out.layout = getattr(self, "layout", None) if whole else None
        out.labels = getattr(self, "labels", None) if whole else None
        out.dropped_items = self.dropped_items if whole else ()
        return out

    def __getitem__(self, key: tuple[Any, Any]) -> ResponseMatrix:
        if not isinstance(key, tuple) or len(key) != 2:
            raise TypeError("index a ResponseMatrix with [models, items]")
        models, items = key
        return self.subset(
            None if isinstance(models, slice) and models == slice(None) else models,
            None if isinstance(items, slice) and items == slice(None) else items,
        )

    @staticmethod
    def _resolve(selection: Any, ids: list[str], kind: str) -> np.ndarray:
        """Positions of ``selection`` among ``ids``; a repeated one is refused (a matrix's
        ids are unique)."""
        positions = ResponseMatrix._positions(selection, ids, kind)
        unique, counts = np.unique(positions, return_counts=True)
        if (counts > 1).any():
            twice = ids[int(unique[counts > 1][0])]
            raise InputError(f"{kind} id {twice!r} is selected twice; ids must be unique")
        return positions

    @staticmethod
    def _positions(selection: Any, ids: list[str], kind: str) -> np.ndarray:
        n = len(ids)
        if selection is None:
            return np.arange(n)
        if isinstance(selection, slice):
            return np.arange(n)[selection]
        if isinstance(selection, str | int | np.integer | np.str_):
            raise InputError(
                f"{kind}s={selection!r}: one id; expected a list of ids ({kind}s=[{selection!r}]),"
                " positions or a boolean mask"
            )
        array = np.asarray(selection)
        if array.dtype == bool:
            if array.shape != (n,):
                raise InputError(f"boolean {kind} mask has shape {array.shape}; expected ({n},)")
            return np.flatnonzero(array)
        if np.issubdtype(array.dtype, np.integer):
            if array.size and (array.min() < -n or array.max() >= n):
                raise InputError(f"{kind} position out of range 0..{n - 1}")
            return array.astype(np.int64) % n if array.size else array.astype(np.int64)
        lookup = {name: i for i, name in enumerate(ids)}
        positions = []
        for name in array.astype(str).tolist():
            if name not in lookup:
                raise InputError(f"unknown {kind} id {name!r}")
            positions.append(lookup[name])
        return np.array(positions, dtype=np.int64)

    def __repr__(self) -> str:
        models = f"{self.n_models:,} model{'' if self.n_models == 1 else 's'}"
        items = f"{self.n_items:,} item{'' if self.n_items == 1 else 's'}"
        return f"ResponseMatrix({models} x {items}, {self.observed_fraction:.1%} observed)"


def _score_array(scores: Any, source: str | None) -> np.ndarray:
    """``scores`` as a numeric array (not yet checked for shape or range): a missing value of
    any kind (NaN, None, the ``pd.NA`` of pandas' nullable dtypes) becomes NaN, never an
    error or a 0; rows of different lengths and complex numbers are refused."""
    try:
        array = np.asarray(scores)
    except ValueError as exc:  # a list of lists of different lengths
        raise InputError(
            f"{_where(source)}scores have rows of different lengths ({exc}); expected a 2-D "
            "(n_models, n_items) array, NaN for a missing cell"
        ) from None
    if np.iscomplexobj(array):  # a cast to float would drop the imaginary part, unsaid
        raise InputError(
            f"{_where(source)}scores are complex numbers (dtype {array.dtype}); expected scores "
            "in [0, 1]"
        )
    if array.dtype == object:  # e.g. a nullable frame's values: pd.NA / None are missing
        missing = pd.isna(array)
        if missing.any():
            array = array.copy()
            array[missing] = np.nan
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        try:
            array = array.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"{_where(source)}scores are not numeric{_first_non_number(array) or f' ({exc})'}"
                "; expected scores in [0, 1]"
            ) from None
    return array


def _first_non_number(array: np.ndarray) -> str:
    """``: scores[i, j] = 'yes'``, the first cell of a 2-D ``array`` that is no number (an
    id is not known yet: the position), or empty."""
    if array.ndim != 2:
        return ""
    for (i, j), value in np.ndenumerate(array):
        try:
            float(value)
        except (TypeError, ValueError):
            shown = value.item() if isinstance(value, np.generic) else value
            return f": scores[{i}, {j}] = {shown!r}"
    return ""


def _constant(values: np.ndarray, axis: int) -> np.ndarray:
    # fmax / fmin skip NaN (all missing: NaN, which equals nothing): no masked copies
    high = np.fmax.reduce(values, axis=axis)
    low = np.fmin.reduce(values, axis=axis)
    return np.asarray(high == low)


def _long_frame_and_keys(
    frame: Any, model: str, item: str, score: str, source: str | None
) -> tuple[pd.DataFrame, KeyColumns]:
    """``frame`` with a fresh index, refused when it is not a DataFrame, lacks a column, has
    no rows or holds bad ids; and its key columns as ``Store.matrix`` reads them (their notes
    warned)."""
    if isinstance(frame, pd.Series) and frame.index.nlevels == 2:  # a groupby's mean
        raise InputError(
            f"{_where(source)}expected a pandas DataFrame, got a Series indexed by "
            f"{list(frame.index.names)}: make it a table first, e.g. "
            f"series.rename({score!r}).reset_index() (index names {model!r}, {item!r})"
        )
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"{_where(source)}expected a pandas DataFrame, got {type(frame).__name__}")
    for column in (model, item, score):
        if column not in frame.columns:
            hint = ""
            if column in frame.index.names:
                hint = f" ({column!r} is a level of the index: frame.reset_index())"
            raise InputError(
                f"{_where(source)}column {column!r} is missing; found columns "
                f"{list(map(str, frame.columns))}, expected {model!r}, {item!r}, {score!r}{hint}"
            )
    if len(frame) == 0:
        raise InputError(f"{_where(source)}the table has no rows; expected observed scores")
    frame = frame.reset_index(drop=True)
    for column, kind in ((model, "model"), (item, "item")):
        refuse_bad_ids(frame[column], kind, source, column)
        refuse_long_summary_ids(
            frame[column], kind, column, _where(source), lambda k: _row(source, k)
        )
    keys = check_key_columns(
        frame,
        _where(source),
        model=frame[model].astype(TEXT),
        item=frame[item].astype(TEXT),
        used=(model, item, score),
    )
    for note in keys.notes:
        warnings.warn(f"{_where(source)}{note}", DataWarning, stacklevel=user_stacklevel())
    return frame, keys


def _observed_long_scores(
    frame: pd.DataFrame, model: str, item: str, score: str, source: str | None
) -> tuple[np.ndarray, np.ndarray]:
    """The scores of a long table and its mask of missing ones: every score missing, or one
    outside [0, 1], is refused; missing ones are warned about (rows read as unobserved)."""
    values = _coerce_scores(frame[score], source, score)
    missing = np.isnan(values)
    if missing.all():
        raise InputError(
            f"{_where(source)}column {score!r}: every score is missing (NaN, NA, empty); "
            "expected observed scores"
        )
    if missing.any():  # NA rows (R's write.csv): unobserved cells, said, never 0
        _warn_missing_scores(frame, missing, model, item, source)
    values, bad = bounded_scores(values)  # a rounding past 0 or 1 is the bound
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{_where(source)}column {score!r}, {_row(source, position)} (model="
            f"{frame[model].iloc[position]!r}, item={frame[item].iloc[position]!r}): score "
            f"{_show(values[position])} is outside [0, 1]; expected a score in [0, 1]"
            f"{score_advice(values[position], values)}"
        )
    return values, missing


def _warn_missing_scores(
    frame: pd.DataFrame, missing: np.ndarray, model: str, item: str, source: str | None
) -> None:
    """Warn that the rows with a missing score are read as unobserved cells, naming the first,
    the models left with no observed score (kept, with no data) and the items (left out)."""
    position = int(np.flatnonzero(missing)[0])
    left_out = ""
    empty = _without_score(frame[model], missing)
    if empty:
        left_out += (
            f"; {len(empty)} model(s) with no observed score kept as rows with no data "
            f"({_shown(empty)})"
        )
    gone = _without_score(frame[item], missing)
    if gone:
        left_out += f"; {_left_out(gone, 'item')}"
    warnings.warn(
        f"{_where(source)}{int(missing.sum()):,} row(s) with a missing score (NaN, NA, "
        f"empty) read as unobserved cells (first: {_row(source, position)}, model "
        f"{frame[model].iloc[position]!r}, item {frame[item].iloc[position]!r}){left_out}",
        DataWarning,
        stacklevel=user_stacklevel(),
    )


def _without_score(ids: pd.Series, missing: np.ndarray) -> list[str]:
    """The ids (as text, sorted) whose every row has a missing score."""
    text = ids.astype(TEXT)
    return sorted(set(text[missing]) - set(text[~missing]))


def _shown(ids: Sequence[str]) -> str:
    """The first three ids, quoted."""
    return ", ".join(map(repr, ids[:3])) + (", ..." if len(ids) > 3 else "")


def _left_out(ids: Sequence[str], what: str) -> str:
    """``N item(s) with no observed score left out ('a', 'b', ...)``."""
    return f"{len(ids)} {what}(s) with no observed score left out ({_shown(ids)})"


def _mean_of_long_trials(
    frame: pd.DataFrame,
    values: np.ndarray,
    kept: np.ndarray,
    trial: str,
    notes: list[str],
    model: str,
    item: str,
    source: str | None,
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """One row per (model, item), its score the mean of the cell's trials (column ``trial``,
    as ``Store.matrix``), and the file rows (``kept``) of the rows left; said in warnings and
    in ``notes`` (the key columns' notes)."""
    rows_in_file = kept
    first, means, n_averaged, most, n_collapsed = mean_over_trials(
        frame[model].astype(TEXT),
        frame[item].astype(TEXT),
        text_labels(frame[trial]),
        values,
        _where(source),
        lambda k: _row(source, int(rows_in_file[k])),
    )
    collapsed, averaged = trial_notes(n_collapsed, n_averaged, most, trial)
    if averaged:
        notes.append(averaged)
    for note in (collapsed, averaged):
        if note:
            warnings.warn(f"{_where(source)}{note}", DataWarning, stacklevel=user_stacklevel())
    return frame.loc[first].reset_index(drop=True), means, kept[first]


def _collapse_repeated_cells(
    order: np.ndarray,
    repeated: np.ndarray,
    values: np.ndarray,
    kept: np.ndarray,
    codes: tuple[np.ndarray, np.ndarray],
    ids: tuple[list[str], list[str]],
    source: str | None,
) -> None:
    """Refuse a (model, item) given twice with different scores (naming both file rows), else
    warn that the repeats are collapsed; ``repeated`` indexes the repeats in cell ``order``."""
    (model_codes, item_codes), (model_ids, item_ids) = codes, ids
    first, second = order[repeated], order[repeated + 1]
    differ = values[first] != values[second]
    if differ.any():
        k = int(np.flatnonzero(differ)[0])
        a, b = int(first[k]), int(second[k])
        la, lb = sorted((int(kept[a]), int(kept[b])))
        raise InputError(
            f"{_where(source)}{_row(source, la)} and {_row(source, lb)} both "
            f"give model {model_ids[model_codes[a]]!r}, item "
            f"{item_ids[item_codes[a]]!r}, with different scores "
            f"{_show(values[a])} and {_show(values[b])}; expected one score per pair"
        )
    warnings.warn(
        f"{_where(source)}{repeated.size} repeated (model, item) rows with identical "
        "scores were collapsed",
        DataWarning,
        stacklevel=user_stacklevel(),
    )


def _matrix_of_cells(
    cls: type[ResponseMatrix],
    frame: pd.DataFrame,
    values: np.ndarray,
    kept: np.ndarray,
    model: str,
    item: str,
    source: str | None,
    empty_models: Sequence[str] = (),
) -> ResponseMatrix:
    """The matrix of the long table's observed rows (``kept``: their rows in the file), a
    repeated (model, item) collapsed or refused, and a row with no data for each of
    ``empty_models`` (models whose every score is missing); sparse-backed below
    :data:`~latentbench.io._cells.SPARSE_DENSITY`, else a dense ``cls``."""
    model_codes, model_ids = _factorize_ids(frame[model])
    if empty_models:  # in the sorted order of the others (no model is observed and empty)
        every = np.unique(np.array([*model_ids, *empty_models], dtype=str))
        model_codes = np.searchsorted(every, np.array(model_ids, dtype=str))[model_codes]
        model_ids = [str(name) for name in every]
    item_codes, item_ids = _factorize_ids(frame[item])
    n_items = len(item_ids)
    flat = model_codes.astype(np.int64) * n_items + item_codes
    order = np.argsort(flat, kind="stable")
    sorted_flat = flat[order]
    repeated = np.flatnonzero(sorted_flat[1:] == sorted_flat[:-1])
    if repeated.size:
        _collapse_repeated_cells(
            order, repeated, values, kept, (model_codes, item_codes), (model_ids, item_ids), source
        )
    from latentbench.io._cells import SPARSE_DENSITY

    if len(frame) < SPARSE_DENSITY * len(model_ids) * n_items:
        # cells already in row-major order: straight to the row-compressed layout
        from latentbench.io._cells import ObservedCells
        from latentbench.io._sparse_matrix import SparseResponseMatrix

        del flat
        if repeated.size:  # the first of each repeated pair (scores equal, checked above)
            unique = np.r_[True, sorted_flat[1:] != sorted_flat[:-1]]
            order, sorted_flat = order[unique], sorted_flat[unique]
        cell_values = values[order]
        del order
        rows, cols = np.divmod(sorted_flat, n_items)
        del sorted_flat
        row_ptr = np.zeros(len(model_ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=len(model_ids)), out=row_ptr[1:])
        del rows
        cells = ObservedCells.from_csr(
            row_ptr,
            cols.astype(np.int32),
            cell_values,
            (len(model_ids), n_items),
            source=source,
        )
        return SparseResponseMatrix(cells, list(model_ids), list(item_ids), source=source)
    dense = np.full((len(model_ids), n_items), np.nan, dtype=np.float32)
    dense.reshape(-1)[flat] = values
    return cls(dense, list(model_ids), list(item_ids), source=source)


def _said_twins(matrix: ResponseMatrix, source: str) -> ResponseMatrix:
    """``matrix``, after a warning naming its model ids and its item ids that differ only by
    case, surrounding spaces or Unicode normalisation (``'modél'`` typed and pasted: NFC and
    NFD): ids are kept verbatim, so they are read as distinct, and the warning says which is
    which (non-ASCII ids shown escaped)."""
    for kind, ids in (("model", matrix.model_ids), ("item", matrix.item_ids)):
        note = twin_note(kind, ids)
        if note:
            warnings.warn(f"{_where(source)}{note}", DataWarning, stacklevel=user_stacklevel())
    return matrix


def _refuse_edge_summaries(scores: np.ndarray, items: list[Any], where: str) -> None:
    """Refuse a first or last item column of a wide table (where a spreadsheet puts its
    summaries) that holds each row's average of the other columns
    (:func:`~latentbench.io._matrix_checks.refuse_summary_column`); ``scores`` has shape
    (n_models, n_items). The edges are the first and last columns holding a score: an empty
    column (a spreadsheet's trailing comma, left out as no item) is not one."""
    observed = np.isfinite(scores)
    filled = np.flatnonzero(observed.any(axis=0))
    if filled.size < 4:
        return
    total = np.where(observed, scores, 0.0).sum(axis=1)
    count = observed.sum(axis=1)
    for j in sorted({int(filled[0]), int(filled[-1])}):
        x = scores[:, j]
        seen = np.isfinite(x)
        refuse_summary_column(x, total - np.where(seen, x, 0.0), count - seen, items[j], where)
