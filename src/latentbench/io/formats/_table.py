"""CSV and Parquet tables, long or wide.

Long: one row per observation with columns ``model``, ``item``, ``score`` (or ``correct``,
``is_correct``, as :meth:`ResponseMatrix.read` reads them) and optionally any
other canonical column (``benchmark``, ``metric``, ``filter``, ``trial``, ``item_hash``,
``run_timestamp``, ``source``, ``source_file``, ``source_model``, ``split``, ``flag``), so a
store export reads back
with its provenance. Wide: one row per model (column ``model``, else the first column), one
column per item, empty cells missing. The layout is ``long`` when ``model``, ``item`` and
``score`` columns exist, else ``wide`` (``model`` and ``item`` without ``score``: an error).

``benchmark`` is, in order: the argument, a ``benchmark`` column, the file stem. ``metric``: the
argument (one name labels every row; a mapping is ignored), a ``metric`` column, ``"score"``.
``filter``: likewise, else ``"none"``. ``model`` overrides the ids (kept in ``source_model``).
Rows with an empty score are missing (counted in the report, never 0).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from latentbench._checks import bounded_scores
from latentbench._compat import TEXT, text_array
from latentbench.exceptions import InputError
from latentbench.io._arrival import read_unpacked, unpacked_path, unpacking
from latentbench.io._files import (
    MISSING_TOKENS,
    csv_record_lines,
    index_as_ids,
    read_csv_text,
    spreadsheet_hint,
)
from latentbench.io._matrix_checks import (
    _SCORE_COLUMNS,
    _head,
    _show,
    refuse_case_lookalikes,
    refuse_long_summary_ids,
    refuse_long_without_score,
    refuse_repeated_rows,
    refuse_summary_column,
    refuse_wide_non_items,
    score_advice,
)
from latentbench.io.formats._common import (
    CANONICAL_COLUMNS,
    TEXT_COLUMNS,
    UNKNOWN_SPLIT,
    Choice,
    LoadReport,
    constant_text,
)
from latentbench.io.formats._registry import reader

PATTERNS = ("*.csv", "*.tsv", "*.parquet", "*.pq")

_LONG = ("model", "item", "score")


def _read(path: Path) -> tuple[pd.DataFrame, int]:
    """The table and the offset from row position to what messages say: the file line of a
    CSV (header = line 1), the 1-based row of a Parquet file. A file compressed on its own
    (``.csv.gz``) is read decompressed."""
    suffix = unpacked_path(path).suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            source = io.BytesIO(read_unpacked(path)) if unpacking(path) else path
            return index_as_ids(pd.read_parquet(source)), 1
        if suffix in (".csv", ".tsv", ".txt"):
            return read_csv_text(path), 2
    except InputError:  # already names the file and the cause
        raise
    except Exception as exc:
        raise InputError(f"{path}: could not be read as {suffix[1:]} ({exc})") from None
    raise InputError(
        f"{path}: unknown file type {suffix!r}; expected .csv, .tsv or .parquet"
        f"{spreadsheet_hint(suffix)}"
    )


def _is_text(path: Path) -> bool:
    return unpacked_path(path).suffix.lower() in (".csv", ".tsv", ".txt")


def _place(path: Path, row: int, offset: int) -> str:
    """``file:LINE`` (CSV) or ``file, row N`` (Parquet, 1-based) of 0-based row ``row``."""
    return f"{path}:{row + offset}" if _is_text(path) else f"{path}, row {row + offset}"


def _scores(
    values: pd.Series, path: Path, offset: int, column: str, rows: np.ndarray
) -> np.ndarray:
    if values.dtype == bool:
        return values.to_numpy(dtype=np.float64)
    if pd.api.types.is_numeric_dtype(values.dtype):
        numeric = pd.to_numeric(values, errors="coerce")
        bad = np.zeros(len(values), dtype=bool)
    else:
        text = values.astype(TEXT).str.strip().str.lower()
        text = text.replace({"true": "1", "false": "0"})
        missing = values.isna() | text.isin(MISSING_TOKENS)  # NA, NaN, null, ...: missing
        numeric = pd.to_numeric(text.where(~missing), errors="coerce")
        bad = (numeric.isna() & ~missing).to_numpy()
    array = numeric.to_numpy(dtype=np.float64, na_value=np.nan)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{_place(path, int(rows[k]), offset)}: field {column!r}: value "
            f"{values.iloc[k]!r} is a string that is not a score; expected a number in [0, 1]"
            f"{score_advice(values.iloc[k])}"
        )
    array, outside = bounded_scores(array)  # a rounding past 0 or 1 is the bound
    if outside.any():
        k = int(np.flatnonzero(outside)[0])
        raise InputError(
            f"{_place(path, int(rows[k]), offset)}: field {column!r}: value "
            f"{_show(values.iloc[k])} is outside [0, 1]; expected a score in [0, 1]"
            f"{score_advice(values.iloc[k], array, f' in field {column!r}')}"
        )
    return array


def _ids(values: pd.Series, path: Path, offset: int, column: str, rows: np.ndarray) -> pd.Series:
    missing = values.isna().to_numpy()
    if missing.any():
        k = int(np.flatnonzero(missing)[0])
        raise InputError(
            f"{_place(path, int(rows[k]), offset)}: field {column!r} is empty; expected an id"
        )
    if pd.api.types.is_float_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype):
        raise InputError(
            f"{path}: column {column!r} holds {values.dtype} values; expected text or integer ids"
        )
    text = values.astype(TEXT)
    blank = (text.str.strip() == "").to_numpy()
    if blank.any():
        k = int(np.flatnonzero(blank)[0])
        raise InputError(
            f"{_place(path, int(rows[k]), offset)}: field {column!r}: value "
            f"{text.iloc[k]!r} is blank; expected an id"
        )
    return text


def _timestamps(values: pd.Series, path: Path, offset: int, data: pd.DataFrame) -> pd.Series:
    """UTC timestamps; an empty cell is unknown, an unreadable one is an error (never NULL)."""
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        stamps = pd.to_datetime(values, utc=True)
    else:
        text = values.astype("string").str.strip()
        stamps = pd.to_datetime(text, errors="coerce", utc=True, format="mixed")
        bad = (stamps.isna() & text.notna() & (text != "")).to_numpy()
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"{_place(path, int(data['_record'].iloc[k]) - offset, offset)}: field "
                f"'run_timestamp': value {values.iloc[k]!r}; expected a date and time such as "
                "2025-01-31T12:00:00 (or an empty cell when unknown)"
            )
    return stamps


def _wide_rows(
    frame: pd.DataFrame, path: Path, offset: int, rows: np.ndarray, report: LoadReport
) -> pd.DataFrame:
    """The observed cells of a wide table (one row per model, one column per item) as rows
    ``model``, ``item``, ``score``, ``_record``; empty cells are counted as dropped."""
    id_col = "model" if "model" in frame.columns else frame.columns[0]
    if frame.shape[1] < 2:
        raise InputError(f"{path}: a wide table needs a model column and item columns")
    ids = _ids(frame[id_col], path, offset, id_col, rows)
    items = [c for c in frame.columns if c != id_col]
    if id_col != "model":  # no 'model' column: say how the table was read
        report.notes.append(
            f"{path}: read as a wide table (no columns {', '.join(_LONG)}): model ids in "
            f"the first column {id_col!r}, {len(items):,} item column(s) "
            f"({', '.join(map(repr, items[:3]))}{', ...' if len(items) > 3 else ''}); "
            "for a long table name its columns model, item, score"
        )

    def place(k: int) -> str:
        return f"line {int(rows[k]) + offset}" if _is_text(path) else f"row {rows[k] + offset}"

    refuse_repeated_rows(ids, f"{path}: ", place)
    refuse_wide_non_items(
        frame.drop(columns=["model"]) if id_col == "model" else frame,
        ids.tolist(),
        f"{path}: ",
        place,
    )
    parts = []
    missing = 0
    total, count = np.zeros(len(ids)), np.zeros(len(ids), dtype=np.int64)
    # the first and last columns holding a score (an empty column, a spreadsheet's trailing
    # comma, is none): a summary's places
    filled: list[int] = []
    edges: dict[int, np.ndarray] = {}
    for k, column in enumerate(items):
        scores = _scores(frame[column], path, offset, column, rows)
        keep = ~np.isnan(scores)
        total += np.where(keep, scores, 0.0)
        count += keep
        if keep.any():
            if len(filled) > 1:  # keep the first and the latest only
                del edges[filled[-1]]
            filled.append(k)
            edges[k] = scores
        missing += int((~keep).sum())  # empty cells and markers (NA, null, ...) alike
        parts.append(
            pd.DataFrame(
                {
                    "model": ids[keep].to_numpy(),
                    "item": column,
                    "score": scores[keep],
                    "_record": rows[keep] + offset,
                }
            )
        )
    if len(filled) >= 4:
        for k, scores in edges.items():
            seen = ~np.isnan(scores)
            refuse_summary_column(scores, total - np.where(seen, scores, 0.0), count - seen,
                                  items[k], f"{path}: ")  # fmt: skip
    long = pd.concat(parts, ignore_index=True)
    report.drop("empty cell (missing)", missing)
    _say_without_scores(path, ids, long["model"], "model", report)
    _say_without_scores(path, pd.Series(items), long["item"], "item", report)
    return long


def _say_without_scores(
    path: Path, every: pd.Series, kept: pd.Series, what: str, report: LoadReport
) -> None:
    """A note naming the models (or items) of the table with no observed score: no row of
    theirs is stored, which the count of empty cells alone did not say."""
    gone = sorted(set(every.astype(TEXT)) - set(kept.astype(TEXT)))
    if gone:
        shown = ", ".join(map(repr, gone[:3])) + (", ..." if len(gone) > 3 else "")
        report.notes.append(
            f"{path}: {len(gone):,} {what}(s) with no observed score ({shown}): no row of "
            "theirs is stored"
        )


def _long_rows(
    frame: pd.DataFrame, path: Path, offset: int, rows: np.ndarray, report: LoadReport
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The rows of a long table with a score (empty scores counted as dropped): ``model``,
    ``item``, ``score``, ``_record``, and its other canonical columns by name."""
    scores = _scores(frame["score"], path, offset, "score", rows)
    keep = ~np.isnan(scores)
    report.drop("empty score (missing)", int((~keep).sum()))
    # every row scored (the usual case): the table as it is, not a copy of its columns
    kept = (frame if keep.all() else frame.loc[keep]).reset_index(drop=True)
    kept_rows = rows[keep]
    data = pd.DataFrame(
        {
            # string arrays stay Arrow-backed: no Python str object per cell
            "model": _ids(kept["model"], path, offset, "model", kept_rows).array,
            "item": _ids(kept["item"], path, offset, "item", kept_rows).array,
            "score": scores[keep],
            "_record": kept_rows + offset,
        }
    )
    for column in ("model", "item"):  # a summary row (item 'Average') is no response
        refuse_long_summary_ids(
            data[column], column, column, "", lambda k: _place(path, int(kept_rows[k]), offset)
        )
    extra = {c: kept[c] for c in CANONICAL_COLUMNS if c in kept.columns and c not in _LONG}
    if not keep.all():  # the ids as read (both sides alike), before any conversion
        for column in ("model", "item"):
            raw = frame[column]
            _say_without_scores(path, raw.dropna(), raw[keep].dropna(), column, report)
    return data, extra


def _benchmarks(
    data: pd.DataFrame,
    extra: dict[str, Any],
    path: Path,
    offset: int,
    benchmark: str | None,
    report: LoadReport,
) -> Any:
    """The ``benchmark`` column: the argument (the names a ``benchmark`` column gives are
    recorded as renamed), else the column, else the file stem."""
    if benchmark is not None:
        if "benchmark" in extra:  # the names a column gives (a file stem is no task name:
            # split files of one benchmark still go in under one name)
            for original in extra["benchmark"].dropna().astype(TEXT).unique():
                report.rename(benchmark, str(original))
        return benchmark
    if "benchmark" in extra:
        return _ids(
            extra["benchmark"], path, offset, "benchmark", data["_record"].to_numpy() - offset
        ).to_numpy()
    return constant_text(unpacked_path(path).stem, len(data))


def _add_metric_and_filter(
    out: pd.DataFrame, extra: dict[str, Any], metric: Choice, filter: Choice
) -> None:
    """Fill ``metric`` and ``filter`` of ``out``: the name given for every row, else the
    table's column (empty cells: ``"score"`` / ``"none"``), else that default."""
    n = len(out)
    for name, given, fallback in (("metric", metric, "score"), ("filter", filter, "none")):
        if isinstance(given, str):
            out[name] = constant_text(given, n)
        elif name in extra:
            out[name] = extra[name].fillna(fallback).astype(TEXT).to_numpy()
        else:
            out[name] = constant_text(fallback, n)


def _trials(extra: dict[str, Any], data: pd.DataFrame, path: Path, offset: int) -> Any:
    """The ``trial`` column: whole numbers >= 0 from a ``trial`` column, else 0."""
    if "trial" not in extra:
        return 0
    trial = pd.to_numeric(extra["trial"], errors="coerce").astype("float64")
    values = trial.to_numpy()
    # an integer in [0, 2**53): 1.5 is not rounded, 1e30 does not wrap around
    bad = ~np.isfinite(values) | (values != np.round(values)) | (values < 0)
    bad |= np.abs(values) >= 2.0**53
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{_place(path, int(data['_record'].iloc[k]) - offset, offset)}: field 'trial': "
            f"value {_show(extra['trial'].iloc[k])}; expected a whole number >= 0"
        )
    return values.astype(np.int64)


def _add_provenance(
    out: pd.DataFrame, extra: dict[str, Any], data: pd.DataFrame, path: Path, offset: int
) -> None:
    """Fill ``split``, ``source``, ``source_file``, ``run_timestamp``, ``item_hash``,
    ``source_model`` and ``flag`` of ``out`` from the table's columns, else their defaults."""
    n = len(data)
    out["split"] = (
        extra["split"].fillna(UNKNOWN_SPLIT).astype(TEXT).to_numpy()
        if "split" in extra
        else constant_text(UNKNOWN_SPLIT, n)
    )
    out["source"] = (
        extra["source"].fillna("table").to_numpy()
        if "source" in extra
        else constant_text("table", n)
    )
    out["source_file"] = (
        extra["source_file"].fillna(str(path)).to_numpy()
        if "source_file" in extra
        else constant_text(str(path), n)
    )
    stamps = (
        _timestamps(extra["run_timestamp"], path, offset, data)
        if "run_timestamp" in extra
        else None
    )
    out["run_timestamp"] = (
        stamps.dt.tz_localize(None).astype("datetime64[us]").to_numpy()
        if stamps is not None
        else pd.Series([None] * n, dtype="datetime64[us]")
    )
    out["item_hash"] = extra["item_hash"].to_numpy() if "item_hash" in extra else None
    out["source_model"] = (
        extra["source_model"].fillna("").astype(TEXT).to_numpy()
        if "source_model" in extra
        else data["model"].astype(TEXT).array
    )
    out["flag"] = extra["flag"].to_numpy() if "flag" in extra else constant_text(None, n)


def _record_choices(
    out: pd.DataFrame, extra: dict[str, Any], metric: Choice, filter: Choice, report: LoadReport
) -> None:
    """Record each benchmark's metric and filter names in ``report``, and how they were set."""
    # the distinct (benchmark, metric, filter) first, by Arrow: grouping every row by pandas
    # held about 0.9 GB of temporaries at 24M rows
    keys = ["benchmark", "metric", "filter"]
    table = pa.Table.from_pandas(out[keys], preserve_index=False)
    distinct = table.group_by(keys).aggregate([]).to_pandas()
    for bench, group in distinct.groupby("benchmark", sort=True):
        for kind, choice in (("metric", metric), ("filter", filter)):
            names = sorted(group[kind].unique().tolist())
            how = "given" if isinstance(choice, str) else ("column" if kind in extra else "default")
            report.choose(str(bench), kind, ", ".join(names), how)


@reader(
    "table",
    summary="CSV or Parquet tables, long or wide (a store export reads back)",
    patterns=PATTERNS,
    names_choices=False,
    packed=True,
)
def read(
    path: Path,
    report: LoadReport,
    *,
    benchmark: str | None,
    metric: Choice,
    filter: Choice,
    model: str | None,
    layout: Literal["auto", "long", "wide"] = "auto",
) -> pd.DataFrame:
    """Read one table into canonical rows."""
    frame, offset = _read(path)
    frame.columns = [str(c) for c in frame.columns]
    if len(frame) == 0:
        raise InputError(f"{path}: no rows after the header; expected at least one observation")
    if layout != "wide" and "score" not in frame.columns:
        # the score column under another name that fit reads (correct, is_correct)
        named = next((c for c in _SCORE_COLUMNS if c in frame.columns), None)
        if named is not None and {"model", "item"} <= set(frame.columns):
            frame = frame.rename(columns={named: "score"})
    if layout == "auto":
        layout = "long" if set(_LONG) <= set(frame.columns) else "wide"
        if layout == "wide":
            refuse_case_lookalikes(list(frame.columns), f"{path}: ")
            refuse_long_without_score(list(frame.columns), str(path), _SCORE_COLUMNS)
    elif layout == "long":
        lacking = [c for c in _LONG if c not in frame.columns]
        if lacking:
            raise InputError(
                f"{path}: layout='long'; expected a long table with the columns model, item "
                f"and score ({', '.join(map(repr, lacking))} missing; found columns "
                f"{_head(list(frame.columns))}), or the wide layout (models as rows, items as "
                "columns)"
            )
    report.records_read += len(frame)
    rows = np.arange(len(frame))
    if _is_text(path):  # messages name the file's line, blank lines counted
        lines = csv_record_lines(path, len(frame))
        if len(lines) == len(frame):
            rows = lines - offset
    extra: dict[str, Any] = {}
    if layout == "wide":
        data = _wide_rows(frame, path, offset, rows, report)
    else:
        data, extra = _long_rows(frame, path, offset, rows, report)
    n = len(data)
    out = pd.DataFrame(index=pd.RangeIndex(n))
    if model is None:
        out["model"] = text_array(data["model"].astype(TEXT))  # type: ignore[call-overload]
    else:
        out["model"] = model
    out["benchmark"] = _benchmarks(data, extra, path, offset, benchmark, report)
    out["item"] = data["item"].astype(TEXT).array
    out["score"] = data["score"].to_numpy(dtype=np.float64)
    _add_metric_and_filter(out, extra, metric, filter)
    out["trial"] = _trials(extra, data, path, offset)
    _add_provenance(out, extra, data, path, offset)
    for column in TEXT_COLUMNS:
        if out[column].dtype != TEXT:
            out[column] = out[column].astype(TEXT)
    out["_record"] = data["_record"].to_numpy()
    out["_at"] = "line" if _is_text(path) else "row"
    _record_choices(out, extra, metric, filter, report)
    return out
