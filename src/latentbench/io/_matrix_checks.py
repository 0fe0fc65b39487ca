"""Checks of the columns and ids that build a response matrix, with precise error messages."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from latentbench._compat import TEXT
from latentbench._text import counted
from latentbench.exceptions import InputError
from latentbench.io._arrival import unpacked_path
from latentbench.io._files import MISSING_TOKENS, csv_line

_SCORE_COLUMNS = ("score", "correct", "is_correct")
"""Score column names recognised in a long table, in order of preference."""

# column sets of latentbench's own outputs, which are not response tables
_OUTPUT_COLUMNS = {
    "abilities.csv (a fit's abilities table)": {"model", "theta", "rank_theta"},
    "items.csv (a fit's items table)": {"item", "discrimination", "easiness"},
}


def _head(columns: Sequence[str], n: int = 8) -> str:
    shown = ", ".join(repr(c) for c in columns[:n])
    return f"[{shown}{', ...' if len(columns) > n else ''}] ({counted(len(columns), 'column')})"


def refuse_long_without_score(
    columns: Sequence[str],
    source: str,
    accepted: Sequence[str],
    *,
    model: str | None = "model",
    item: str = "item",
    hint: str = "",
) -> None:
    """A table with a long layout's model and item columns (``model=None``: the item column
    alone) but none of the ``accepted`` score columns is an error that says so (read as a wide
    table, its item column would hold text)."""
    keys = [item] if model is None else [model, item]
    if all(k in columns for k in keys) and not any(c in columns for c in accepted):
        named = " and ".join(map(repr, keys))
        raise InputError(
            f"{source}: column{'s' if len(keys) > 1 else ''} {named} (a long table) but no "
            "score column; "
            f"expected one of {', '.join(map(repr, accepted))}{hint}; found columns "
            f"{_head(columns)}"
        )


def refuse_case_lookalikes(
    columns: Sequence[str], where: str, *, hint: str = "", model: bool = True
) -> None:
    """A long table's columns named in another case or with spaces (``Model``, ``ITEM``,
    ``Score `` from a spreadsheet) are an error that says which to rename: read as they are,
    the table would be taken for a wide one. Raised only where an item column and a score
    column (:data:`_SCORE_COLUMNS`) are both found, at least one of them (or, with ``model``,
    the model column) only so."""
    present = set(columns)

    def found(name: str) -> str | None:
        if name in present:
            return name
        return next((c for c in columns if c.strip().casefold() == name), None)

    item = found("item")
    score = next((c for c in map(found, _SCORE_COLUMNS) if c is not None), None)
    model_column = found("model")
    exact = item == "item" and score in _SCORE_COLUMNS
    if item is None or score is None or (exact and (not model or model_column in (None, "model"))):
        return
    pairs = [(c, c.strip().casefold()) for c in (model_column, item, score) if c is not None]
    renames = [(c, name) for c, name in pairs if c != name]
    several = len(renames) > 1
    raise InputError(
        f"{where}column{'s' if several else ''} {', '.join(repr(c) for c, _ in renames)} "
        f"look{'' if several else 's'} like a long table's "
        f"{', '.join(name for _, name in renames)} in another case (or with spaces); rename "
        f"{'them' if several else 'it'} {', '.join(name for _, name in renames)} (lower case, "
        f"as expected){hint}"
    )


def _refuse_long_without(
    frame: Any,
    accepted: Sequence[str],
    present: str,
    absent: str,
    message: Callable[[str, str, str], str],
) -> None:
    """A table with a ``present`` id column whose ids repeat and a score column, but no
    ``absent`` column, is a long table missing that column: raise ``message(score, guess,
    columns)`` (``guess`` names a text column that may hold the missing ids). Read as a
    wide table it would fail on the repeated ids or on a text column, which says nothing of
    the cause."""
    columns = [str(c) for c in frame.columns]
    score = next((c for c in accepted if c in columns), None)
    if absent in columns or present not in columns or score is None:
        return
    if not frame[present].duplicated().any():
        return
    text = [c for c in columns if c not in (present, score) and not _holds_numbers(frame[c])]
    guess = f"; column {text[0]!r} may hold them" if text else ""
    raise InputError(message(repr(score), guess, _head(columns)))


def refuse_long_without_item(
    frame: Any,
    source: str,
    accepted: Sequence[str],
    *,
    model: str = "model",
    item: str = "item",
    hint: str = "",
) -> None:
    """A long table (model ids repeat, a score column) without its ``item`` column."""
    _refuse_long_without(
        frame, accepted, model, item,
        lambda score, _, columns: (
            f"{source}: columns {model!r} (its ids repeat: a long table) and {score} but no "
            f"item column {item!r}; expected a column of item ids named {item!r}{hint}; found "
            f"columns {columns}"
        ),
    )  # fmt: skip


def refuse_long_without_model(
    frame: Any,
    source: str,
    accepted: Sequence[str],
    *,
    model: str = "model",
    item: str = "item",
    hint: str = "",
) -> None:
    """A long table (item ids repeat, a score column) whose model ids sit under another name
    (``level_0``, ``name``): the error names the text column that may hold them."""
    _refuse_long_without(
        frame, accepted, item, model,
        lambda score, guess, columns: (
            f"{source}: columns {item!r} (its ids repeat: a long table) and {score} but no "
            f"model column {model!r}{guess}; expected the model ids in a column named "
            f"{model!r}{hint}; found columns {columns}"
        ),
    )  # fmt: skip


_DESIGN_COLUMNS = {"item", "order", "probability"}
"""Columns of a fixed design (``latentbench tiny``'s items.csv), which is not a response table."""


def _design_details(frame: Any) -> str:
    """`` (30 items, seed 0, calibration 6dd2c689...)`` of a design table, as far as known."""
    parts = [counted(len(frame), "item")]
    for column, label in (("seed", "seed"), ("calibration_hash", "calibration")):
        if column in frame.columns and len(frame):
            value = str(frame[column].iloc[0])
            parts.append(f"{label} {value[:12] + '...' if len(value) > 12 else value}")
    return " (" + ", ".join(parts) + ")"


def _refuse_known_outputs(columns: Sequence[str], source: str, frame: Any = None) -> None:
    """latentbench's own outputs given where a response table is expected: say what the file
    is and which command reads it, rather than fail on its layout."""
    if _DESIGN_COLUMNS <= set(columns) and not set(columns) & set(_SCORE_COLUMNS):
        details = "" if frame is None else _design_details(frame)
        raise InputError(
            f"{source}: this is a fixed design written by `latentbench tiny`{details}, not a "
            "response table (columns item, order, probability, ...); the command that reads "
            f"it is `latentbench estimate CALIBRATION RESULTS --items {source}`, after running "
            "the model on exactly these items"
        )
    for name, required in _OUTPUT_COLUMNS.items():
        if required <= set(columns):
            raise InputError(
                f"{source}: this is {name}, not a response table; pass the responses the fit "
                "used (model, item, score), or the fit directory itself where a fit is expected"
            )


def _show(value: Any) -> str:
    """repr of a value for messages, without numpy's type wrappers (7.0, not np.float64(7.0))."""
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def _where(source: str | None) -> str:
    return f"in {source}: " if source else ""


def _row(source: str | None, position: int) -> str:
    """Where row ``position`` (0-based) of a table is: its line in a CSV file (the header is
    line 1; blank lines counted, :func:`csv_line`), else its 1-based row (a DataFrame, a
    Parquet file)."""
    if source and unpacked_path(source).suffix.lower() in (".csv", ".tsv", ".txt"):
        return f"line {csv_line(source, position)}"
    return f"row {position + 1}"


def _check_ids(ids: Sequence[Any], kind: str, source: str | None) -> list[str]:
    """Validate model or item ids (strings or integers) and return them as strings; an error
    names the id by its position among them (the file's row or line is named earlier, where
    the reader knows it: :func:`refuse_bad_ids`)."""
    out: list[str] = []
    for position, value in enumerate(ids):
        # position among the matrix's ids (a wide file's item k is its header's field k + 1)
        where = f"{_where(source)}{kind} id {position + 1:,} of {len(ids):,}"
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (str, int, np.integer)):
            raise InputError(
                f"{where}, {_show(value)}, has type {type(value).__name__}; expected a string "
                "or an integer"
            )
        text = str(value)
        if text.strip() == "":
            raise InputError(
                f"{where} is {'blank, ' + repr(text) if text else 'empty'}; expected a "
                "non-empty string or an integer"
            )
        out.append(text)
    return out


def numeric_scores(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A column as float (NaN = missing) and where it holds something that is not a number.

    Text cells (CSV is read as text) may be numbers, ``true``/``false`` or a missing marker
    (:data:`~latentbench.io._files.MISSING_TOKENS`).

    Returns
    -------
    values : ndarray of float64
        NaN at a missing marker and at every value that is not a number.
    bad : ndarray of bool
        True where a value is present but is not a number.
    """
    if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
        text = values.astype("string").str.strip().str.lower().fillna("")
        values = values.mask(text.isin(MISSING_TOKENS).to_numpy(bool))
        values = values.mask((text == "true").to_numpy(bool), 1.0)
        values = values.mask((text == "false").to_numpy(bool), 0.0)
    numeric = pd.to_numeric(values, errors="coerce")
    bad = (numeric.isna() & values.notna()).to_numpy(bool)
    if numeric.dtype == bool:
        numeric = numeric.astype(float)
    return numeric.to_numpy(dtype=np.float64, na_value=np.nan), bad


def score_advice(raw: Any, scores: np.ndarray | None = None, of: str = "") -> str:
    """How to fix a cell refused as a score, for the end of its message (``""`` when there is
    nothing to add): ``85%`` is a percentage to write as 0.85; a value outside [0, 1] by at
    most 1e-6 is a rounding error; a value above 1 where most nonzero ``scores`` (every
    observed score of the column or table, NaN = missing) are above 1 and none above 100 is a
    0-100 scale, to divide by 100 (else the count above 1 is said); ``of`` says where
    ``scores`` come from when they are not the whole table (``" in column 'q1'"``). A dash
    (``-``) may mean missing (leave the cell empty), ``#DIV/0!`` is an Excel error."""
    if isinstance(raw, np.generic):
        raw = raw.item()
    text = raw.strip() if isinstance(raw, str) else None
    if text and text.startswith("#"):
        return " (an Excel error: fix the formula, or leave the cell empty if the score is missing)"
    if text in ("-", "--", "\u2013", "\u2014", "?", "."):
        return " (if the score is missing, leave the cell empty or write NA)"
    try:
        number = float(text[:-1] if text and text.endswith("%") else raw)
    except (TypeError, ValueError):
        return ""
    if text and text.endswith("%"):
        return f" (a percentage: write {number / 100:g} for {text})"
    excess = number - 1 if number > 1 else -number
    if 0 < excess <= 1e-6:
        return (
            f" (by {excess:.1g}: a rounding error? round the scores, e.g. to 6 decimals, in the "
            "file)"
        )
    if scores is None or not number > 1 or not np.isfinite(number):
        return ""
    observed = np.asarray(scores, dtype=np.float64)
    observed = observed[~np.isnan(observed)]
    above, nonzero = int((observed > 1).sum()), int((observed != 0).sum())
    said = f"{above:,} of {observed.size:,} observed scores{of} are above 1"
    if above * 2 > nonzero and observed.min() >= 0 and observed.max() <= 100:
        return f" ({said}, none above 100: a 0-100 scale? divide the scores by 100)"
    return f" ({said})"


def _coerce_scores(values: pd.Series, source: str | None, column: str) -> np.ndarray:
    """Convert a column to float, naming the first non-numeric value if there is one
    (:func:`numeric_scores`)."""
    numeric, bad = numeric_scores(values)
    if bool(bad.any()):
        position = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{_where(source)}column {column!r}, {_row(source, position)}: value "
            f"{_show(values.iloc[position])} is not numeric; expected a score in [0, 1]"
            f"{score_advice(values.iloc[position])}"
        )
    return numeric


def wide_scores(frame: pd.DataFrame, source: str | None) -> np.ndarray:
    """The item columns of a wide table as floats (NaN = missing), shape (rows, columns).

    Columns that share one dtype (a CSV read as text, a numeric Parquet) are converted in one
    :func:`numeric_scores` over all their cells, which is what converting each column gives,
    cell by cell, at a fraction of the cost (12,032 columns: 17 s column by column); mixed
    dtypes go column by column. A cell that is not a number is refused as
    :func:`_coerce_scores` refuses it: in the first column that has one, at its first row.
    """
    dtypes = frame.dtypes
    first = dtypes.iloc[0]
    if frame.shape[1] > 1 and all(dtype == first for dtype in dtypes):
        if isinstance(first, np.dtype):  # numbers stay numbers (no object per cell)
            flat = frame.to_numpy(dtype=first).ravel(order="F")
        else:  # text (a CSV), nullable types: one Series of that dtype
            flat = frame.to_numpy(dtype=object).ravel(order="F")
        values, bad = numeric_scores(pd.Series(flat, dtype=first))
        if not bool(bad.any()):
            return np.ascontiguousarray(values.reshape(frame.shape, order="F"))
    # mixed dtypes (a Parquet leaderboard: int8 columns, and float64 where a cell is
    # missing), or the error of the first cell that is not a number: the NumPy numeric and
    # bool columns at once (they hold no cell to refuse), the others column by column
    numeric = np.array(
        [isinstance(dtype, np.dtype) and dtype.kind in "biuf" for dtype in dtypes], dtype=bool
    )
    scores = np.empty(frame.shape, dtype=np.float64)
    if numeric.any():
        scores[:, numeric] = frame.iloc[:, np.flatnonzero(numeric)].to_numpy(dtype=np.float64)
    for j in np.flatnonzero(~numeric).tolist():
        column: pd.Series = frame.iloc[:, j]
        scores[:, j] = _coerce_scores(column, source, str(frame.columns[j]))
    return scores


def refuse_bad_ids(ids: pd.Series, kind: str, source: str | None, column: str) -> None:
    """Refuse a missing id, or one that is neither a string nor an integer (e.g. ``7.0``,
    which would not match ``7``), naming its row; vectorised when all are str or all int."""
    if ids.isna().any():
        position = int(np.flatnonzero(ids.isna().to_numpy())[0])
        raise InputError(
            f"{_where(source)}column {column!r}, {_row(source, position)}: {kind} id is "
            "missing; expected a string or an integer"
        )
    inferred = pd.api.types.infer_dtype(ids, skipna=False)
    if inferred in ("string", "mixed", "mixed-integer"):  # spaces only: its row, not later
        blanks = [v for v in ids.unique() if isinstance(v, str) and not v.strip()]
        if blanks:
            position = int(np.flatnonzero(ids.isin(blanks).to_numpy(bool))[0])
            raise InputError(
                f"{_where(source)}column {column!r}, {_row(source, position)}: {kind} id "
                f"{str(ids.iloc[position])!r} is blank; expected a non-empty string or an integer"
            )
    if inferred in ("string", "integer"):
        return  # all str or all int (checked in C, no per-row Python call)
    for value_type in ids.map(type).unique():
        if not issubclass(value_type, (str, int, np.integer)) or issubclass(
            value_type, (bool, np.bool_)
        ):
            position = int(np.flatnonzero((ids.map(type) == value_type).to_numpy())[0])
            raise InputError(
                f"{_where(source)}column {column!r}, {_row(source, position)}: {kind} id "
                f"{_show(ids.iloc[position])} has type {value_type.__name__}; expected a "
                "string or an integer"
            )


SUMMARY_LABELS = frozenset({"average", "avg", "mean", "total", "sum", "overall", "accuracy"})
"""Column or row names (stripped, any case) of a spreadsheet's summary, refused as an item or
a model in a wide table: an average column read as an item would be fitted as one. (``score``
is not among them: a wide table may have an item named so, as tests/io/test_hardening.py
pins.)"""

_PANDAS_INDEX = re.compile(r"Unnamed: \d+")


def refuse_wide_non_items(
    items: pd.DataFrame, models: Sequence[Any], where: str, place: Callable[[int], str]
) -> None:
    """Refuse what a spreadsheet adds to a wide table that is not a response: a summary
    column (``Average``, ``Total``, ...: :data:`SUMMARY_LABELS`), a summary row, or the row
    numbers 0, 1, 2, ... that pandas writes as its index (``Unnamed: 0``).

    Parameters
    ----------
    items : DataFrame
        The item columns (scores as read: text or numbers).
    models : sequence
        The model id of every row.
    where : str
        The file, as the caller's messages start (``"in results.csv: "``).
    place : callable
        Where row ``k`` (0-based) is, as the caller's messages say it (``"line 6"``).
    """
    for name in items.columns:
        label = str(name).strip().casefold()
        if label in SUMMARY_LABELS:
            raise InputError(
                f"{where}column {str(name)!r} looks like a summary of the other columns (an "
                "average or a total), not an item; delete the column from the file (or rename "
                "it, if it is an item)"
            )
        if _PANDAS_INDEX.fullmatch(str(name)) and len(items) >= 3:
            numbers = pd.to_numeric(items[name], errors="coerce").to_numpy(dtype=np.float64)
            start = numbers[0] if len(numbers) else np.nan
            if start in (0, 1) and np.array_equal(numbers, start + np.arange(len(numbers))):
                raise InputError(
                    f"{where}column {str(name)!r} holds the row numbers {int(start)}, "
                    f"{int(start) + 1}, {int(start) + 2}, ... (the index pandas writes with "
                    "to_csv, under an empty header), not an item; write the file with "
                    "index=False, or delete the column"
                )
    for k, model in enumerate(models):
        if str(model).strip().casefold() in SUMMARY_LABELS:
            raise InputError(
                f"{where}{place(k)}: model {str(model)!r} looks like a summary row (an average "
                "or a total), not a model; delete the row from the file (or rename the model)"
            )


SUMMARY_TOLERANCE = 0.005
"""How far (on the score's scale) a column may lie from its row's average of the other
columns and still be read as that average (a spreadsheet's, rounded to two decimals)."""


def refuse_summary_column(
    column: np.ndarray,
    others_sum: np.ndarray,
    others_count: np.ndarray,
    name: Any,
    where: str,
) -> None:
    """Refuse a wide table's item column that holds, row by row, the average of the other
    columns: a spreadsheet's summary under a name that is not one (``score``, ``result``,
    ``MMLU``), which would be fitted as an item.

    Parameters
    ----------
    column : ndarray of shape (n_models,)
        The column's scores (NaN = missing).
    others_sum, others_count : ndarray of shape (n_models,)
        Each row's sum and number of observed scores over the other item columns.
    name : object
        The column's header, as messages name it.
    where : str
        The file, as the caller's messages start (``"in results.csv: "``).

    Raises
    ------
    InputError
        When on at least 5 rows with 3 or more other scores the column is within
        :data:`SUMMARY_TOLERANCE` of the other columns' average on every one, and is not all
        0 and 1 (an average of 0/1 items is fractional; a 0/1 item matching it on 5 rows
        needs every one of those rows all right or all wrong).
    """
    rows = np.isfinite(column) & (others_count >= 3)
    if int(rows.sum()) < 5:
        return
    x = column[rows]
    if np.isin(x, (0.0, 1.0)).all():
        return
    mean = others_sum[rows] / others_count[rows]
    gap = float(np.abs(x - mean).max())
    if gap <= SUMMARY_TOLERANCE + 1e-9:  # (a rounded 0.625 is 0.005000000000000004 off)
        within = "exactly" if gap < 1e-12 else f"within {gap:.2g}"
        raise InputError(
            f"{where}column {str(name)!r} holds each row's average of the other columns ({within}"
            f" on all {int(rows.sum()):,} rows where both are there): a summary (an average), "
            "not an item; delete the column from the file"
        )


def refuse_long_summary_ids(
    ids: pd.Series, kind: str, column: str, where: str, place: Callable[[int], str]
) -> None:
    """Refuse a long table's summary rows: an item id such as ``Average`` or ``Total``
    (:data:`SUMMARY_LABELS`; a model's average written as one more row), or such a model id
    (every item's average over the models). Read as an item or a model, it would be fitted as
    one, as a wide table's summary column would.

    Parameters
    ----------
    ids : Series
        The ``column`` of the table (model or item ids, as read).
    kind : {"model", "item"}
    column : str
        The column's name in the file.
    where : str
        The file, as the caller's messages start (``"in results.csv: "``).
    place : callable
        Where row ``k`` (0-based position in ``ids``) is, as the caller's messages say it.
    """
    labels = pd.Series(ids.dropna().unique()).astype(TEXT)
    summary = labels[labels.str.strip().str.casefold().isin(SUMMARY_LABELS)]
    if summary.empty:
        return
    name = summary.iloc[0]
    k = int(np.flatnonzero((ids.astype(TEXT) == name).to_numpy())[0])
    what = "a model's average or total" if kind == "item" else "the items' average or total"
    raise InputError(
        f"{where}{place(k)}, column {column!r}: {kind} {name!r} looks like a summary row "
        f"({what}), not {'an item' if kind == 'item' else 'a model'}; delete its rows from "
        f"the file (or rename the {kind}, if it is one)"
    )


def refuse_repeated_rows(models: pd.Series, where: str, place: Callable[[int], str]) -> None:
    """A wide table's model on two rows is an error naming both (``place(k)``: where row
    ``k`` is), in every route: not two models, nor one row kept silently."""
    text = models.astype(TEXT).reset_index(drop=True)
    repeated = text.duplicated(keep=False).to_numpy()
    if repeated.any():
        first, second = np.flatnonzero(repeated & (text == text[repeated].iloc[0]).to_numpy())[:2]
        raise InputError(
            f"{where}model {text.iloc[first]!r} is on {place(int(first))} and "
            f"{place(int(second))}; expected one row per model in a wide table"
        )


def _holds_numbers(values: pd.Series) -> bool:
    """Whether a column holds numbers (typed, or CSV text that all parses as numbers)."""
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return True
    present = values.dropna()
    return len(present) > 0 and bool(pd.to_numeric(present, errors="coerce").notna().all())


def _axis_ids(
    model_ids: Sequence[Any],
    item_ids: Sequence[Any],
    shape: tuple[int, int],
    source: str | None,
    what: str,
) -> tuple[list[str], list[str]]:
    """Checked model and item ids, one per row and per column of a ``what`` of ``shape``."""
    n_models, n_items = shape
    for name, ids, axis in (("model_ids", model_ids, "row"), ("item_ids", item_ids, "column")):
        # a str is iterable too: its letters would be taken as the ids when they are as many
        if ids is None or isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            shown = repr(ids) if len(repr(ids)) <= 60 else repr(ids)[:57] + "..."
            raise InputError(
                f"{_where(source)}{name}={shown}; expected one id per {axis} of the {what} "
                "(a sequence of str or int)"
            )
    models = _check_ids(list(model_ids), "model", source)
    items = _check_ids(list(item_ids), "item", source)
    if len(models) != n_models or len(items) != n_items:
        raise InputError(
            f"{_where(source)}got {len(models)} model ids and {len(items)} item ids for a "
            f"{n_models} x {n_items} {what}; expected one id per row and per column"
        )
    return models, items


def _refuse_repeated_ids(models: list[str], items: list[str], source: str | None) -> None:
    """Refuse a model or item id that appears twice (naming the first repeat)."""
    for kind, ids in (("model", models), ("item", items)):
        index = pd.Index(ids)
        if index.has_duplicates:
            dup = index[index.duplicated()][0]
            raise InputError(f"{_where(source)}{kind} id {dup!r} appears twice; ids must be unique")


def not_a_score(values: np.ndarray, *, missing_ok: bool) -> np.ndarray:
    """Where ``values`` breaks the one score rule: a score is a number in [0, 1].

    Parameters
    ----------
    values : ndarray of any shape
    missing_ok : bool
        True where NaN marks a missing cell (a matrix); False where every value must be a
        score (a long table or the store, which have no row for a missing cell).

    Returns
    -------
    ndarray of bool, the shape of ``values``
        True at every value outside [0, 1] or infinite, and at NaN unless ``missing_ok``.
    """
    with np.errstate(invalid="ignore"):
        bad = ~((values >= 0) & (values <= 1))
    return bad & ~np.isnan(values) if missing_ok else bad


def same_id(name: str) -> str:
    """An id as compared for near twins: NFC-normalised, stripped and case-folded (ids are
    kept verbatim; this only finds the ones a reader could take for one)."""
    return unicodedata.normalize("NFC", name).strip().casefold()


def twin_note(kind: str, ids: Sequence[str], most: int = 3) -> str:
    """The note naming ``kind`` ids (``"model"``, ``"item"``) that differ only by case,
    surrounding spaces or Unicode normalisation, each group with the ids escaped where they
    are not ASCII (so NFC ``'mod\\xe9l'`` and NFD ``'mode\\u0301l'`` read apart); empty when
    there are none."""
    groups: dict[str, list[str]] = {}
    for name in ids:
        groups.setdefault(same_id(str(name)), []).append(str(name))
    twins = [group for group in groups.values() if len(group) > 1]
    if not twins:
        return ""
    shown = "; ".join(" and ".join(map(ascii, group)) for group in twins[:most])
    more = f" (and {len(twins) - most:,} more groups)" if len(twins) > most else ""
    return (
        f"{kind} ids that differ only by case, surrounding spaces or Unicode normalisation: "
        f"{shown}{more}; ids are kept verbatim, so each is a {kind} of its own: if they are "
        "one, write them alike in the file"
    )
