"""lighteval ``--save-details`` parquet files (``docs/formats.md``, lighteval).

``{out}/details/{model_name}/{timestamp}/details_{task}_{timestamp}.parquet``. The benchmark is
the task name made the same across versions (:func:`canonical_task`: ``lighteval|anli:r1|0``,
``anli:r1|0`` and ``anli__r1__0`` are all ``anli:r1|0``). Two row layouts, detected from the
columns:

- struct (≥ 0.11): columns ``doc``, ``model_response``, ``metric`` (also accepted as
  ``__doc__``, ``__model_response__``, ``__metric__``); the item is ``doc.id`` (the row index
  in the evaluated split, as a string), else the row position;
- flat (≤ 0.10): a dict column ``metrics``. The rows are in the order the pipeline processed
  the documents, not the dataset's (a real 0.10.0 run wrote ``What is 9 + 9?``, the dataset's
  fourth question, first), and no column holds the dataset index; the item is therefore the
  first 16 hex digits of the SHA-256 of the ``example`` column (the document's query, before
  few-shot examples or a chat template), with ``~1``, ``~2``, ... appended to repeats of one
  query in a file. A file without ``example`` falls back to the row position, with a note.
  Items of flat files do not line up with the ``doc.id`` of later versions.

The split is the task's one ``evaluation_splits`` entry in ``config_tasks`` of the run's
``{out}/results/{model_name}/results_{timestamp}.json``, when that file is there (else
``unknown``, with a note when the task evaluated several splits). ``config_tasks`` is keyed
``anli:r1|0`` in later versions and ``suite|task`` (no few-shot count) up to 0.10.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from latentbench.exceptions import InputError
from latentbench.io._arrival import read_unpacked, unpacked_path, unpacking
from latentbench.io.formats._common import (
    PERPLEXITY_METRICS,
    UNKNOWN_SPLIT,
    Choice,
    Columns,
    LoadReport,
    coerce_score,
    load_json,
    offered_metrics,
    parse_dashed_iso,
    requested,
    resolve,
    where,
)
from latentbench.io.formats._registry import reader

PATTERNS = ("**/details_*.parquet",)

_DETAILS = re.compile(r"^details_(?P<task>.+)_(?P<ts>\d{4}-\d{2}-\d{2}T[\d\-:.]+)\.parquet$")


SUITES = frozenset(
    {
        "lighteval",
        "leaderboard",
        "helm",
        "original",
        "bigbench",
        "harness",
        "community",
        "custom",
        "extended",
    }
)
"""Suite prefixes of lighteval task names up to 0.10 (``lighteval|gsm8k|0``); later versions
name the task without a suite."""


def canonical_task(name: str) -> str:
    """One name for one task across lighteval versions: ``task[:subset]|fewshot``.

    ``lighteval|anli:r1|0`` and ``lighteval|anli:r1|0|0`` (≤ 0.10: suite, task, few-shot,
    truncation flag), ``anli:r1|0`` (≥ 0.11) and ``anli__r1__0`` (file names of some 0.12
    releases, ``:`` and ``|`` written as ``__``) all give ``anli:r1|0``.
    """
    if "|" not in name and "__" in name:
        parts = name.split("__")
        if len(parts) >= 2 and parts[-1].isdigit():
            head = parts[:-1]
            if len(head) >= 3 and head[0] in SUITES:
                head = head[1:]
            return ":".join(head) + "|" + parts[-1]
        return name
    parts = name.split("|")
    if len(parts) >= 3 and parts[0] in SUITES:
        parts = parts[1:]
    if len(parts) == 3 and parts[1].isdigit() and parts[2] in ("0", "1"):
        parts = parts[:2]  # the truncate-few-shots flag of lighteval <= 0.10
    return "|".join(parts)


def _column(table_columns: list[str], *names: str) -> str | None:
    for name in names:
        if name in table_columns:
            return name
    return None


def _model_from_path(path: Path, timestamp_dir: bool) -> str:
    parts = path.parent.parts
    if timestamp_dir:
        parts = parts[:-1]
    if "details" in parts:
        index = len(parts) - 1 - parts[::-1].index("details")
        below = parts[index + 1 :]
        if below:
            return "/".join(below)
    return parts[-1] if parts else unpacked_path(path).stem


def _results_file(path: Path, stamp: str | None, source_model: str) -> Path | None:
    """``{out}/results/{model_name}/results_{timestamp}.json`` of the run that wrote ``path``
    (``{out}/details/{model_name}/{timestamp}/details_*.parquet``)."""
    if stamp is None:
        return None
    parts = path.parent.parts
    if "details" not in parts:
        return None
    out = Path(*parts[: len(parts) - 1 - parts[::-1].index("details")])
    candidate = out / "results" / source_model / f"results_{stamp}.json"
    return candidate if candidate.is_file() else None


def _same_task(key: str, task: str) -> bool:
    """Whether ``config_tasks`` key ``key`` is canonical task ``task`` (``arith|0``):
    ``arith|0`` (later versions) or ``community|arith`` (≤ 0.10, no few-shot count)."""
    if canonical_task(key) == task:
        return True
    parts = key.split("|")
    return len(parts) == 2 and parts[0] in SUITES and parts[1] == task.rsplit("|", 1)[0]


def _query_ids(examples: list[Any]) -> list[str]:
    """Content ids of flat (≤ 0.10) rows: SHA-256 of the query, ``~k`` for its k-th repeat."""
    seen: dict[str, int] = {}
    ids = []
    for text in examples:
        digest = hashlib.sha256(str(text).encode("utf-8")).hexdigest()[:16]
        repeat = seen.get(digest, 0)
        seen[digest] = repeat + 1
        ids.append(f"{digest}~{repeat}" if repeat else digest)
    return ids


def _task_configs(results: Path | None, task: str) -> list[tuple[str, dict[str, Any]]]:
    """The ``config_tasks`` entries of ``task`` (key, config) in the run's results file."""
    if results is None:
        return []
    meta = load_json(results)
    tasks = meta.get("config_tasks") if isinstance(meta, dict) else None
    if not isinstance(tasks, dict):
        return []
    return [
        (str(name), config)
        for name, config in tasks.items()
        if _same_task(str(name), task) and isinstance(config, dict)
    ]


_LOWER_IS_BETTER = frozenset({"edit_distance"})
"""lighteval's per-sample metrics declared ``higher_is_better=False`` that are no perplexity
(``lighteval/metrics/metrics.py``: the copyright grouping's ``edit_distance``; ``ter`` is a
corpus metric), for a run whose results file is not there to say."""


def _lower_is_better(results: Path | None, task: str, names: list[str]) -> dict[str, str]:
    """The metrics among ``names`` where lower is better, each with what says so: the run's
    results file (``config_tasks[TASK].metrics[i]``: ``higher_is_better`` false, or false for
    the name in a grouping's mapping), else lighteval's own declarations
    (:data:`_LOWER_IS_BETTER`). A metric the results file marks higher-is-better is not one."""
    marks: dict[str, tuple[bool, str]] = {}
    for key, config in _task_configs(results, task):
        metrics = config.get("metrics")
        for index, entry in enumerate(metrics if isinstance(metrics, list) else []):
            if not isinstance(entry, dict):
                continue
            named, higher = entry.get("metric_name"), entry.get("higher_is_better")
            said = f"config_tasks[{key!r}].metrics[{index}] says higher_is_better"
            if isinstance(named, str) and isinstance(higher, bool):
                marks.setdefault(named, (higher, f"{said}: {str(higher).lower()}"))
            elif isinstance(named, list) and isinstance(higher, dict):  # a MetricGrouping
                for name in map(str, named):
                    if isinstance(higher.get(name), bool):
                        shown = str(higher[name]).lower()
                        marks.setdefault(name, (higher[name], f"{said}[{name!r}]: {shown}"))
    lower: dict[str, str] = {}
    for name in names:
        if name in marks:
            if not marks[name][0]:
                lower[name] = f"{results}: {marks[name][1]}"
        elif name in _LOWER_IS_BETTER:
            lower[name] = "lighteval declares it higher_is_better=False"
    return lower


def _split(results: Path | None, task: str, report: LoadReport) -> str:
    """The one evaluated split of ``task`` from the run's results file."""
    for name, config in _task_configs(results, task):
        splits = config.get("evaluation_splits")
        if isinstance(splits, list) and len(splits) == 1 and isinstance(splits[0], str):
            return splits[0]
        if isinstance(splits, list) and splits:
            report.notes.append(
                f"{results}: config_tasks[{name!r}] evaluated several splits {splits}; the "
                f"split of its rows is recorded as {UNKNOWN_SPLIT!r}"
            )
    return UNKNOWN_SPLIT


@reader(
    "lighteval",
    summary="lighteval --save-details (details_*.parquet)",
    patterns=PATTERNS,
    item_field="doc.id",
    packed=True,
)
def read(
    path: Path,
    report: LoadReport,
    *,
    benchmark: str | None,
    metric: Choice,
    model: str | None,
) -> pd.DataFrame:
    """Read one details parquet file into canonical rows."""
    plain = unpacked_path(path)  # details_x.parquet.gz: a details file compressed on its own
    match = _DETAILS.match(plain.name)
    raw_task = match.group("task") if match else plain.stem.removeprefix("details_")
    task = canonical_task(raw_task)
    stamp = match.group("ts") if match else None
    timestamp = parse_dashed_iso(stamp) if stamp else None
    in_ts_dir = bool(stamp) and path.parent.name == stamp
    source_model = _model_from_path(path, in_ts_dir)
    canonical = model or source_model
    name = benchmark or task
    report.rename(benchmark, task)
    table = _read_table(path)
    metric_col, doc_col, layout = _layout(table.column_names, path)
    metric_values: list[Any] = table.column(metric_col).to_pylist()
    ids = _item_ids(table, layout, doc_col, path, report)
    report.records_read += len(metric_values)
    source = "lighteval"
    results = _results_file(path, stamp, source_model)
    available = _available(metric_values, metric_col, path)
    lower = _lower_is_better(results, task, [requested(metric, name) or "", *available])
    chosen = _chosen_metric(
        metric,
        name,
        (available, lower),
        path,
        report,
        lambda m: _check_values(metric_values, m, metric_col, path),
    )
    out = Columns(split=_split(results, task, report))
    for row, values in enumerate(metric_values):
        value = None if values is None else values.get(chosen)
        score = coerce_score(value, where(path, record=row), f"{metric_col}.{chosen}")
        if score is None:
            report.drop("metric value missing (null/NaN)")
            continue
        item = ids[row] if ids is not None and ids[row] is not None else row
        out.add(canonical, name, str(item), score, chosen, "none", 0, source_model, row)
    return out.frame(source, str(path), timestamp)


def _read_table(path: Path) -> Any:
    """The details file as a pyarrow table (decompressed first when it is compressed on its
    own, ``details_x.parquet.gz``)."""
    import io

    import pyarrow.parquet as pq  # deferred: ~0.25 s to import

    source = io.BytesIO(read_unpacked(path)) if unpacking(path) else path
    try:
        return pq.read_table(source)
    except Exception as exc:
        raise InputError(
            f"{path}: not a readable parquet file ({exc}); expected lighteval details"
        ) from None


def _layout(columns: list[str], path: Path) -> tuple[str, str | None, str]:
    """The metric column, the doc column and the layout: ``struct`` (``metric`` and ``doc``,
    lighteval >= 0.11) or ``flat`` (``metrics``, <= 0.10)."""
    metric_col = _column(columns, "metric", "__metric__")
    doc_col = _column(columns, "doc", "__doc__")
    layout = "struct"
    if metric_col is None:
        metric_col = _column(columns, "metrics")
        layout = "flat"
    if metric_col is None:
        raise InputError(
            f"{path}: no 'metric' (lighteval >= 0.11) or 'metrics' (<= 0.10) column; found "
            f"{columns}; expected a lighteval details file"
        )
    return metric_col, doc_col, layout


def _item_ids(
    table: Any, layout: str, doc_col: str | None, path: Path, report: LoadReport
) -> list[Any] | None:
    """Each row's item id (the doc's ``id``, or the example's query hash), or None when the
    rows are items by position (noted for a flat file without an ``example`` column)."""
    columns = table.column_names
    ids: list[Any] | None = None
    if layout == "struct" and doc_col is not None:
        doc_type = table.schema.field(doc_col).type
        if hasattr(doc_type, "names") and "id" in doc_type.names:
            column = table.column(doc_col).combine_chunks().field("id")
            n_null, n = column.null_count, len(column)
            if n_null and n_null < n:  # a position would be another doc's id (its row index)
                first = int(column.is_null().to_numpy(zero_copy_only=False).argmax())
                raise InputError(
                    f"{where(path, record=first)}: field 'doc.id' is null in {n_null:,} of "
                    f"{n:,} rows; expected an id in every row (or in none, when the rows are "
                    "items by position)"
                )
            ids = column.to_pylist() if n_null < n else None  # none at all: by position
    elif layout == "flat" and "example" in columns:
        ids = _query_ids(table.column("example").to_pylist())
    elif layout == "flat":
        report.notes.append(
            f"{path}: no 'example' column; items are row positions, which follow lighteval's "
            "processing order, not the dataset's"
        )
    return ids


def _available(metric_values: list[Any], metric_col: str, path: Path) -> dict[str, int]:
    """The metrics with a value (perplexity-type ones left out), each with its first row;
    every row must be a mapping or null."""
    available: dict[str, int] = {}
    for row, values in enumerate(metric_values):
        if values is None:
            continue
        if not isinstance(values, dict):
            raise InputError(
                f"{where(path, record=row)}: field {metric_col!r}: value {values!r} has type "
                f"{type(values).__name__}; expected a mapping of metric name to value"
            )
        for key, value in values.items():
            if value is not None and key not in PERPLEXITY_METRICS:
                available.setdefault(key, row)
    return available


def _check_values(metric_values: list[Any], metric: str, metric_col: str, path: Path) -> None:
    """Raise as the reading would for the first value of ``metric`` that is no score."""
    for row, values in enumerate(metric_values):
        if isinstance(values, dict):
            coerce_score(values.get(metric), where(path, record=row), f"{metric_col}.{metric}")


def _chosen_metric(
    metric: Choice,
    name: str,
    offered: tuple[dict[str, int], dict[str, str]],
    path: Path,
    report: LoadReport,
    check: Callable[[str], None],
) -> str:
    """The metric read (a perplexity-type one is refused), recorded with the filter.

    ``offered``: the metrics present (name -> first row) and those where lower is better
    (name -> what says so), which are not offered; one asked for, or the only one, is refused,
    after ``check`` (a value that is no score is refused as such first, saying so too)."""
    available, lower = offered
    wanted = requested(metric, name)
    scores = [m for m in available if m not in lower]
    if wanted in PERPLEXITY_METRICS:
        raise InputError(
            f"{path}: metric {wanted!r} is a perplexity-type value, not an item score; choose "
            f"one of {', '.join(sorted(scores)) or '(none)'}"
        )
    scores = offered_metrics(str(path), name, wanted, list(available), lower, check)
    chosen, how = resolve("metric", metric, name, scores, str(path))
    report.choose(name, "metric", chosen, how)
    report.choose(name, "filter", "none", "only")
    return chosen
