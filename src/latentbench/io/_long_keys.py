"""The canonical key columns of a long table read as one matrix.

A long table written by the store (``latentbench export``, ``docs/formats.md``) keys one
observation by (model, benchmark, item, metric, filter, trial, split). A response matrix has
one score per (model, item), so the other key columns must hold one value each, or be reduced
the way :meth:`~latentbench.io.store.Store.matrix` reduces them:

- ``metric``, ``filter``, ``split`` with several values: refused (the scores are different
  quantities, or different items);
- ``benchmark`` with several values: refused when an item id occurs under two benchmarks (their
  rows would merge into one item); with disjoint ids the benchmarks are read as one matrix, said;
- ``trial`` with several trials of one (model, item): the cell is the mean of its trials, said.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from latentbench._compat import TEXT
from latentbench.exceptions import InputError
from latentbench.io._matrix_checks import _show

__all__ = ["KeyColumns", "check_key_columns", "mean_over_trials", "text_labels", "trial_notes"]

ONE_VALUE_COLUMNS: tuple[str, ...] = ("metric", "filter", "split")
"""Key columns whose values are different quantities: a matrix holds one of each."""

_STORE_KEYWORD = {"metric": "metric=M", "filter": "filter=F", "split": "split=S"}


@dataclass
class KeyColumns:
    """What :func:`check_key_columns` found.

    Attributes
    ----------
    trial : str or None
        The ``trial`` column when some (model, item) has several trials (to average), else None.
    labels : dict
        The one value of each of ``benchmark``, ``metric``, ``filter``, ``split`` present.
    notes : list of str
        One sentence per thing read in a way the user should know (several benchmarks as one
        matrix), without the file name; the caller says each in a
        :class:`~latentbench.exceptions.DataWarning`.
    """

    trial: str | None = None
    notes: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    """``benchmark``, ``metric``, ``filter`` and ``split`` when the column holds one
    (non-empty) value: what the rows say they are (e.g. to check that a new model's answers
    are labelled as its calibration's)."""


def text_labels(values: pd.Series) -> pd.Series:
    """Values as text, an empty cell as ``<empty>`` (a value of its own)."""
    return values.astype("string").fillna("<empty>").astype(TEXT)


def _first(values: Sequence[str], n: int = 4) -> str:
    shown = ", ".join(map(repr, values[:n]))
    return shown + (f", ... ({len(values)} in all)" if len(values) > n else "")


def _fix(column: str) -> str:
    keyword = _STORE_KEYWORD.get(column, "")
    if not keyword:  # several benchmarks: export one
        return (
            f"keep one {column}: filter the rows, export one benchmark (`latentbench export "
            "FILE --store STORE --benchmark NAME`), or read the store instead: "
            "Store(STORE).matrix(NAME)"
        )
    option = keyword.split("=")[0]
    return (
        f"keep one {column}: filter the rows, export one (`latentbench export FILE --store "
        f"STORE --benchmark NAME --{option} {option[0].upper()}`), or read the store instead: "
        f"Store(STORE).matrix(NAME, {keyword})"
    )


def check_key_columns(
    frame: pd.DataFrame,
    where: str,
    *,
    model: pd.Series,
    item: pd.Series,
    used: Sequence[str] = (),
) -> KeyColumns:
    """Refuse or describe the canonical key columns of a long table read as one matrix.

    Parameters
    ----------
    frame : DataFrame
        The long table (columns with the exact names ``benchmark``, ``metric``, ``filter``,
        ``split`` and ``trial`` are the key columns; others are ignored).
    where : str
        Message prefix naming the file (``"in FILE: "``).
    model, item : Series
        Model and item id of every row, as text (same index as ``frame``).
    used : sequence of str
        Columns the caller reads as model, item or score: never key columns here.

    Returns
    -------
    KeyColumns

    Raises
    ------
    InputError
        ``metric``, ``filter`` or ``split`` with several values, or ``benchmark`` with several
        values sharing an item id; the message names the column, its values and the fix.
    """
    found = KeyColumns()
    columns = {str(c) for c in frame.columns} - set(used)
    for column in ONE_VALUE_COLUMNS:
        if column not in columns:
            continue
        values = sorted(pd.unique(text_labels(frame[column])))
        if len(values) > 1:
            raise InputError(
                f"{where}column {column!r} holds {len(values)} values ({_first(values)}); a "
                f"matrix holds one score per (model, item), so the rows of different "
                f"{column}s cannot be read together; {_fix(column)}"
            )
    if "benchmark" in columns:
        benchmarks = text_labels(frame["benchmark"])
        names = sorted(pd.unique(benchmarks))
        if len(names) > 1:
            pairs = pd.DataFrame({"i": item.to_numpy(), "b": benchmarks.to_numpy()})
            per_item = pairs.drop_duplicates().groupby("i", sort=True)["b"].agg(list)
            shared = per_item[per_item.map(len) > 1]
            if len(shared):
                first = str(shared.index[0])
                raise InputError(
                    f"{where}column 'benchmark' holds {len(names)} benchmarks "
                    f"({_first(names)}) and item {first!r} is in "
                    f"{_first(sorted(shared.iloc[0]))} ({len(shared):,} shared item id(s) in "
                    "all): read as one matrix their rows would merge into one item; "
                    f"{_fix('benchmark')}"
                )
            found.notes.append(
                f"column 'benchmark' holds {len(names)} benchmarks ({_first(names)}), "
                "with disjoint item ids: read as one matrix"
            )
    for column in ("benchmark", *ONE_VALUE_COLUMNS):
        if column in columns:
            distinct = pd.unique(frame[column].dropna().astype(TEXT))
            if len(distinct) == 1 and str(distinct[0]).strip():
                found.labels[column] = str(distinct[0])
    if "trial" in columns:
        cells = pd.DataFrame(
            {
                "m": model.to_numpy(),
                "i": item.to_numpy(),
                "t": text_labels(frame["trial"]).to_numpy(),
            }
        )
        if cells.drop_duplicates().duplicated(["m", "i"]).any():
            found.trial = "trial"
    return found


def trial_notes(n_collapsed: int, n_averaged: int, most: int, column: str) -> tuple[str, str]:
    """What :func:`mean_over_trials` did, in words: the repeated rows collapsed and the cells
    averaged (each ``""`` when there were none)."""
    collapsed = (
        f"{n_collapsed:,} repeated (model, item, trial) rows with identical scores were collapsed"
        if n_collapsed
        else ""
    )
    averaged = (  # (the other trials of a cell may all have been unobserved)
        f"{n_averaged:,} (model, item) cell(s) have several trials (column {column!r}, up to "
        f"{most:,} per cell): each is the mean of its trials"
        if n_averaged
        else ""
    )
    return collapsed, averaged


def mean_over_trials(
    model: pd.Series,
    item: pd.Series,
    trial: pd.Series,
    values: np.ndarray,
    where: str,
    row: Callable[[int], str],
) -> tuple[np.ndarray, np.ndarray, int, int, int]:
    """Reduce the trials of every (model, item) to their mean, as ``Store.matrix`` does.

    Parameters
    ----------
    model, item, trial : Series
        The key of every row (text), same length as ``values``.
    values : ndarray of float, shape (n_rows,)
        Observed scores (no NaN).
    where : str
        Message prefix naming the file.
    row : callable
        ``row(k)``: where row ``k`` (0-based position in ``values``) is, for messages.

    Returns
    -------
    first : ndarray of int
        Position of the first row of every (model, item), in the order of first appearance.
    means : ndarray of float
        The cell's mean over its trials, aligned with ``first``.
    n_averaged : int
        Cells with more than one trial.
    max_trials : int
        The most trials of one cell.
    n_collapsed : int
        Rows repeated within one trial with the same score (collapsed).

    Raises
    ------
    InputError
        A (model, item, trial) given twice with different scores; names both rows.
    """
    keys = pd.DataFrame(
        {"m": model.to_numpy(), "i": item.to_numpy(), "t": trial.to_numpy(), "v": values}
    )
    exact = keys.duplicated(keep="first").to_numpy()
    clash = keys[~exact].duplicated(["m", "i", "t"], keep=False).to_numpy()
    if clash.any():
        a_pos = int(np.flatnonzero(~exact)[clash][0])
        m, i, t = keys["m"].iloc[a_pos], keys["i"].iloc[a_pos], keys["t"].iloc[a_pos]
        same = ((keys["m"] == m) & (keys["i"] == i) & (keys["t"] == t)).to_numpy() & ~exact
        a, b = (int(k) for k in np.flatnonzero(same)[:2])
        raise InputError(
            f"{where}{row(a)} and {row(b)} both give model {m!r}, item {i!r}, trial {t}, with "
            f"different scores {_show(values[a])} and {_show(values[b])}; expected one "
            "score per (model, item, trial)"
        )
    kept = keys[~exact]
    positions = np.flatnonzero(~exact)
    grouped = kept.assign(p=positions).groupby(["m", "i"], sort=False)
    first = grouped["p"].min().to_numpy(dtype=np.int64)
    means = grouped["v"].mean().to_numpy(dtype=np.float64)
    counts = grouped["v"].size().to_numpy()
    return first, means, int((counts > 1).sum()), int(counts.max()), int(exact.sum())
