"""Building blocks of the HTML report: sections, tables, cells, figures and plot specs."""

from __future__ import annotations

import base64
import io
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from latentbench._checks import as_path, check_flag
from latentbench._compat import TEXT
from latentbench.exceptions import InputError

DOWNLOAD_ROWS = 20_000
"""Most rows a table's CSV download holds: the page stays a few MB (122,131 near-duplicate
candidate pairs of MMLU-Pro made a 17 MB page); the full tables come from Python
(``result.diagnostics(matrix)``)."""


@dataclass
class _Table:
    columns: list[str]
    rows: list[list[dict[str, str]]]
    total: int
    caption: str = ""
    name: str = "table"
    download: str = ""
    wrap: bool = False
    """A short key-value table: cells wrap instead of being cut (narrow screens)."""
    download_rows: int = 0
    """Rows in the download (its first rows, when ``total`` is more than the cap)."""
    row_header: bool = True
    """The first column names the row (a model, an item, a quantity): its cells are the
    rows' headers (``<th scope="row">``), which a screen reader says with each cell."""


@dataclass
class _Section:
    id: str
    title: str
    text: str = ""
    figures: list[dict[str, str]] = field(default_factory=list)
    tables: list[_Table] = field(default_factory=list)
    plots: list[dict[str, str]] = field(default_factory=list)
    headline: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)


_PLOT_IDS = iter(range(1, 1 << 30))


def _plot(spec: dict[str, Any]) -> dict[str, str]:
    """An interactive canvas plot: the spec as JSON that is safe inside a <script> element,
    and the text a reader sees in its place with scripts off (an e-mail client strips them)."""
    text = json.dumps(spec, allow_nan=False, separators=(",", ":"), default=_json_default)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return {"id": f"plot-{next(_PLOT_IDS)}", "json": text, "alt": _plot_text(spec)}


def _plot_text(spec: dict[str, Any]) -> str:
    """What an interactive plot shows, in words, for a reader whose viewer runs no script."""
    title = str(spec.get("title") or "Plot")
    axes = [str(spec[k]) for k in ("y_label", "x_label") if spec.get(k)]
    what = f" ({axes[0]} against {axes[1]})" if len(axes) == 2 else ""
    return (
        f"{title}{what}: an interactive plot drawn by the page's script, which this viewer "
        "did not run; the findings and the tables on this page hold its numbers."
    )


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _finite(values: Any, digits: int = 4) -> list[float | None]:
    """Floats rounded for the page, None for NaN / inf (JSON has no NaN)."""
    array = np.asarray(values, dtype=float)
    out = np.round(array, digits).tolist()
    return [v if math.isfinite(v) else None for v in out]


def _num(value: Any) -> str:
    """A number for prose: 12,032 / 0.402 / 1.91."""
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    v = float(value)
    if not math.isfinite(v):
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}" if abs(v) < 0.01 and v != 0 else f"{v:.2f}"


def _csv_base64(frame: pd.DataFrame) -> str:
    """A table as base64 CSV for a data: download link (cells that a spreadsheet would run as
    formulas get a leading apostrophe)."""
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object or pd.api.types.is_string_dtype(safe[column]):
            text = safe[column].astype(TEXT)
            risky = text.str.match(r"^[=+\-@\t\r]") & pd.to_numeric(text, errors="coerce").isna()
            safe[column] = text.where(~risky, "'" + text)
    from latentbench.io._outputs import csv_text

    return base64.b64encode(csv_text(safe).encode("utf-8")).decode("ascii")


def _figure(draw: Callable[[Axes], Any], size: tuple[float, float] = (7.0, 4.6)) -> str:
    """Render ``draw(ax)`` on an Agg figure (no pyplot); return base64 PNG."""
    fig = Figure(figsize=size, layout="constrained")
    ax = fig.add_subplot()
    draw(ax)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _cell(value: Any) -> dict[str, str]:
    if isinstance(value, (bool, np.bool_)):
        # "no" in words: a blank cell is a missing value (said in the page's header)
        return {"text": "yes" if value else "no", "sort": "1" if value else "0"}
    if isinstance(value, (int, np.integer)):
        return {"text": str(int(value)), "sort": str(int(value))}
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return {"text": "", "sort": ""}
        if math.isinf(v):
            return {"text": str(v), "sort": "1e308" if v > 0 else "-1e308"}
        text = f"{v:.3g}" if (v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e4)) else f"{v:.3f}"
        return {"text": text, "sort": repr(v)}
    text = "" if value is None or value is pd.NA else str(value)  # NA: a rank not given
    if len(text) > 48:  # whole in the cell (cut by the screen's CSS, whole on paper), and
        return {"text": text, "sort": "", "title": text}  # whole on hover
    return {"text": text, "sort": ""}


def _column_format(values: pd.Series) -> Callable[[float], str] | None:
    """One number format for a whole column, so that its cells read alike (each cell's own
    format gave ``0.021`` beside ``0.0004`` and ``1.23e+04``): counts stored as floats (every
    value whole, some above 1) as whole numbers; otherwise fixed decimals, 3 unless the
    smallest non-zero value needs more (at most 6; below 1e-6 the column is in scientific
    notation); thousands separated. None when the column holds no finite float."""
    floats = [
        float(v)
        for v in values
        if isinstance(v, (float, np.floating))
        and not isinstance(v, (bool, np.bool_))
        and math.isfinite(float(v))
    ]
    if not floats:
        return None
    array = np.abs(np.asarray(floats))
    if np.all(array == np.round(array)) and array.max() > 1:
        return lambda v: f"{v:,.0f}"
    nonzero = array[array > 0]
    smallest = float(nonzero.min()) if nonzero.size else 1.0
    if smallest < 1e-6:
        return lambda v: f"{v:.2e}"
    digits = 3 if smallest >= 1e-3 else min(6, 1 - math.floor(math.log10(smallest)))
    return lambda v: f"{v:,.{digits}f}"


def _consistent_cell(value: Any, form: Callable[[float], str] | None) -> dict[str, str]:
    """:func:`_cell`, a finite float written in its column's format."""
    if form is not None and isinstance(value, (float, np.floating)) and math.isfinite(float(value)):
        return {"text": form(float(value)), "sort": repr(float(value))}
    return _cell(value)


def _table(
    frame: pd.DataFrame,
    limit: int | None = None,
    caption: str = "",
    name: str = "table",
    download: bool = False,
    wrap: bool = False,
    download_limit: int = DOWNLOAD_ROWS,
    consistent: bool = False,
    row_header: bool = True,
) -> _Table:
    """A page table of ``frame`` (its first ``limit`` rows); ``consistent``: every float
    column in one format (:func:`_column_format`), decided over all its rows. ``name`` (its
    CSV's file name, which may come from an item-metadata column) keeps ASCII letters, digits,
    ``_`` and ``-``: no path, markup or device name is left to each browser to clean.
    ``row_header``: the first column names the row (``False`` for one whose values repeat
    down the rows, e.g. the model of each answer)."""
    name = re.sub(r"[^A-Za-z0-9_]+", "-", name).strip("-") or "table"
    total = len(frame)
    shown = frame if limit is None else frame.head(limit)
    if consistent:
        forms = [_column_format(frame.iloc[:, j]) for j in range(frame.shape[1])]
        rows = [
            [_consistent_cell(v, f) for v, f in zip(row, forms, strict=True)]
            for row in shown.itertuples(index=False, name=None)
        ]
    else:
        rows = [[_cell(v) for v in row] for row in shown.itertuples(index=False, name=None)]
    if limit is not None and total > limit:
        caption = (caption + " " if caption else "") + f"(showing {limit:,} of {total:,} rows)"
    kept = frame.head(download_limit)
    data = _csv_base64(kept) if download and total > len(shown) else ""
    return _Table(
        [str(c) for c in frame.columns],
        rows,
        total,
        caption,
        name,
        data,
        wrap,
        len(kept),
        row_header,
    )


def _order_line(ranks: pd.DataFrame, limit: int) -> str:
    """``A > B ~ C > D`` for the best ``limit`` models (``~``: tied with the next)."""
    ordered = ranks.dropna(subset=["rank"]).sort_values("rank").head(limit)  # ranked only
    parts: list[str] = []
    for row in ordered.itertuples():
        parts.append(str(row.model))
        parts.append("~" if row.tied_with_next else ">")
    line = " ".join(parts[:-1]) if parts else ""
    return line + (" ..." if len(ranks) > limit else "")


#: severity order of the item flags (1 = act first) and what each means


_HASH = re.compile(r"\b([0-9a-fA-F]{12})[0-9a-fA-F]{28,}\b")


def short_hashes(text: str) -> str:
    """Long hex digests (SHA-1 / SHA-256, 40+ characters) cut to their first 12 characters
    and an ellipsis, as git shows them: a page for people, not a checksum list."""
    return _HASH.sub(lambda m: m.group(1) + "\u2026", text)


def _value(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return _num(value)
    return short_hashes(str(value))


def refuse_existing(path: str | os.PathLike[str] | None, force: bool) -> None:
    """Refuse to overwrite an existing file at ``path`` unless ``force``, and a ``path`` that
    cannot be written (a folder, a missing folder), before any work: every report builder, as
    :func:`~latentbench.report.report_from` and ``latentbench report`` do."""
    check_flag(force, "force")  # force="no" overwrote the file
    if path is None:
        return
    if as_path(path, "path").is_file() and not force:
        raise InputError(f"path={path} exists; pass force=True to overwrite it, or another path")
    from latentbench.io import check_destination

    check_destination(Path(path), "file", flag="path=")  # a folder, no parent: said now


def render_page(
    sections: list[_Section], title: str, path: str | os.PathLike[str] | None = None
) -> str:
    """The self-contained HTML page of ``sections`` (the one template of every report),
    also written to ``path`` when given."""
    from jinja2 import Environment, FileSystemLoader

    from latentbench import __version__

    env = Environment(
        loader=FileSystemLoader(str(Path(__file__).parent / "templates")),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    html = env.get_template("report.html.j2").render(
        title=title,
        sections=sections,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
    )
    if path is not None:
        from latentbench.io._outputs import replace_whole

        # whole or not at all: a browser reloading it, or a failed write, never sees half
        replace_whole(Path(path), html, encoding="utf-8")
    return html
