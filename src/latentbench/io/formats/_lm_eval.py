"""lm-evaluation-harness ``--log_samples`` output (``docs/formats.md``, lm-eval).

Two layouts are read, told apart by the first non-space byte, not by the suffix:

- ≥ 0.4.3: ``<out>/<model_sanitized>/samples_<task>_<date_id>.jsonl``, one JSON object per
  line, next to ``results_<date_id>.json`` (which gives ``model_name`` and the version);
- 0.4.0–0.4.2: ``<dir>/<model_args sanitized>_<task>.jsonl`` holding **one JSON array**, next to
  ``results.json`` (whose ``configs`` name the tasks and ``config.model_args`` the model).

One line is one doc × one filter, so the key is (model, task, ``doc_id``, ``filter``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from latentbench.exceptions import InputError
from latentbench.io.formats._common import (
    PERPLEXITY_METRICS,
    Choice,
    Columns,
    LoadReport,
    coerce_score,
    is_scalar_score,
    load_json,
    parse_dashed_iso,
    requested,
    resolve,
    where,
)
from latentbench.io.formats._registry import reader

PATTERNS = ("**/*.jsonl",)

_SAMPLES = re.compile(
    r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl$"
)

#: Fields of a sample line that are not metrics (``lm_eval/result_schema.py`` SampleResult).
_NOT_METRICS = frozenset(
    {
        "doc_id",
        "doc",
        "target",
        "arguments",
        "resps",
        "filtered_resps",
        "filter",
        "metrics",
        "doc_hash",
        "prompt_hash",
        "target_hash",
        "task_name",
    }
)

#: Documented default metric per task-name prefix: the Open LLM Leaderboard v2 mapping
#: (``lm_eval/tasks/leaderboard/*``). Used only when the user names no metric.
DEFAULT_METRICS: tuple[tuple[str, str], ...] = (
    ("leaderboard_bbh", "acc_norm"),
    ("leaderboard_gpqa", "acc_norm"),
    ("leaderboard_musr", "acc_norm"),
    ("leaderboard_math", "exact_match"),
    ("leaderboard_mmlu_pro", "acc"),
    ("leaderboard_ifeval", "prompt_level_strict_acc"),
)


def _default_metric(task: str) -> str | None:
    for prefix, metric in DEFAULT_METRICS:
        if task.startswith(prefix):
            return metric
    return None


def _parse_lines(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
    """Records with their 1-based line numbers (0-based index in an array), and whether the
    file was a JSON array; sniffs JSON array vs JSONL."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: not UTF-8 text ({exc.reason}); expected lm-eval samples"
        ) from None
    stripped = text.lstrip()
    if not stripped:
        raise InputError(f"{path}: the file is empty; expected lm-eval samples")
    records: list[tuple[int, dict[str, Any]]] = []
    if stripped[0] == "[":
        try:
            array = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{path}:{exc.lineno}: invalid JSON array ({exc.msg}, column {exc.colno}); "
                "expected the lm-eval 0.4.0-0.4.2 samples layout"
            ) from None
        for index, record in enumerate(array):
            if not isinstance(record, dict):
                raise InputError(
                    f"{where(path, record=index)}: expected a JSON object, got "
                    f"{type(record).__name__}"
                )
            records.append((index, record))
        return records, True
    if stripped[0] != "{":
        raise InputError(
            f"{path}:1: starts with {stripped[0]!r}; expected lm-eval samples (JSON lines "
            "starting with '{' or a JSON array starting with '[')"
        )
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{path}:{number}: invalid JSON line ({exc.msg}, column {exc.colno}); the "
                "file may be truncated"
            ) from None
        if not isinstance(record, dict):
            raise InputError(
                f"{path}:{number}: expected a JSON object, got {type(record).__name__}"
            )
        records.append((number, record))
    return records, False


def _loc(path: Path, position: int, array: bool) -> str:
    return where(path, record=position) if array else where(path, line=position)


def _new_layout_meta(path: Path, date: str) -> tuple[str | None, str, dict[str, Any]]:
    """(model_name, source, results) from ``results_<date>.json`` next to the samples."""
    results = path.with_name(f"results_{date}.json")
    if not results.exists():
        candidates = sorted(path.parent.glob("results_*.json"))
        results = candidates[-1] if candidates else results
    if not results.exists():
        return None, "lm-eval", {}
    meta = load_json(results)
    if not isinstance(meta, dict):
        return None, "lm-eval", {}
    model = meta.get("model_name") or (meta.get("config") or {}).get("model_name")
    version = meta.get("lm_eval_version")
    if not model:
        model = _pretrained((meta.get("config") or {}).get("model_args"))
    source = f"lm-eval {version}" if version else "lm-eval"
    return (str(model) if model else None), source, meta


def _subsample_note(meta: dict[str, Any], task: str, model: str) -> str | None:
    """A note when ``n-samples`` shows a ``--limit`` / ``--samples`` subsample."""
    counts = (meta.get("n-samples") or {}).get(task) or {}
    original, effective = counts.get("original"), counts.get("effective")
    if isinstance(original, int) and isinstance(effective, int) and effective < original:
        return (
            f"{task!r} for {model!r} evaluated {effective} of {original} docs (--limit or "
            "--samples): the other items are missing by design"
        )
    return None


def _pretrained(model_args: Any) -> str | None:
    if isinstance(model_args, dict):
        value = model_args.get("pretrained")
        return str(value) if value else None
    if isinstance(model_args, str):
        for part in model_args.split(","):
            key, _, value = part.partition("=")
            if key.strip() == "pretrained" and value:
                return value.strip()
    return None


def _old_layout_meta(path: Path) -> tuple[str | None, str | None, str]:
    """(model, task, source) for a 0.4.0-0.4.2 file from ``results.json`` next to it."""
    results = path.with_name("results.json")
    model = task = None
    if results.exists():
        meta = load_json(results)
        if isinstance(meta, dict):
            model = _pretrained((meta.get("config") or {}).get("model_args"))
            tasks = sorted(
                (meta.get("configs") or meta.get("results") or {}), key=len, reverse=True
            )
            for name in tasks:
                if path.stem.endswith(f"_{name}"):
                    task = name
                    break
    return model, task, "lm-eval"


def _canonical_model(raw: str) -> str:
    """Undo ``sanitize_model_name`` when unambiguous (``org__model`` -> ``org/model``)."""
    return raw.replace("__", "/") if raw.count("__") == 1 else raw


@reader(
    "lm-eval",
    summary="lm-evaluation-harness --log_samples (samples_*.jsonl)",
    patterns=PATTERNS,
    keep=lambda path: not path.name.startswith("results"),
)
def read(
    path: Path,
    report: LoadReport,
    *,
    benchmark: str | None,
    metric: Choice,
    filter: Choice,
    model: str | None,
) -> pd.DataFrame:
    """Read one samples file into canonical rows."""
    match = _SAMPLES.match(path.name)
    if match:
        task, date = match.group("task"), match.group("date")
        meta_model, source, meta = _new_layout_meta(path, date)
        source_model = meta_model or path.parent.name
        canonical = meta_model or _canonical_model(path.parent.name)
        timestamp = parse_dashed_iso(date)
        note = _subsample_note(meta, task, canonical)
        if note:
            report.notes.append(note)
    else:
        meta_model, task, source = _old_layout_meta(path)
        if task is None:
            task = benchmark
        if task is None:
            raise InputError(
                f"{path}: cannot tell the task from the file name (no 'samples_<task>_<date>' "
                "pattern and no results.json naming the tasks); pass benchmark=NAME"
            )
        source_model = meta_model or path.stem[: -len(task) - 1] or path.stem
        canonical = meta_model or source_model
        timestamp = None
    if model is not None:
        canonical = model
    name = benchmark or task
    records, array = _parse_lines(path)
    report.records_read += len(records)
    if not records:
        return Columns().frame(source, str(path), timestamp)

    metrics_seen: dict[str, int] = {}
    filters_seen: dict[str, int] = {}
    first_line: dict[tuple[str, str], int] = {}
    for position, record in records:
        if "doc_id" not in record:
            raise InputError(
                f"{_loc(path, position, array)}: field 'doc_id' is missing; expected an lm-eval "
                "sample with doc_id"
            )
        filt = str(record.get("filter", "none"))
        filters_seen.setdefault(filt, position)
        key = (str(record["doc_id"]), filt)
        if key in first_line:
            hint = (
                " and no 'filter' field (a multi-filter task written before lm-eval 0.4.7 "
                "cannot tell its filters apart)"
                if "filter" not in record
                else ""
            )
            raise InputError(
                f"{_loc(path, position, array)}: doc_id {record['doc_id']!r} with filter {filt!r} "
                f"repeats {_loc(path, first_line[key], array)}{hint}; expected one row per doc "
                "and filter"
            )
        first_line[key] = position
        listed = record.get("metrics")
        keys = listed if isinstance(listed, list) else [k for k in record if k not in _NOT_METRICS]
        for key in keys:
            if key in record and key not in PERPLEXITY_METRICS and is_scalar_score(record[key]):
                metrics_seen.setdefault(str(key), position)
    first = _loc(path, records[0][0], array)
    chosen_filter, how_f = resolve("filter", filter, name, list(filters_seen), first)
    wanted = requested(metric, name)
    if wanted is not None and wanted not in metrics_seen:
        present = any(wanted in rec for _, rec in records)
        if present:
            metrics_seen[wanted] = records[0][0]  # chosen explicitly; coerce_score will judge it
        if wanted in PERPLEXITY_METRICS:
            raise InputError(
                f"{first}: metric {wanted!r} is a perplexity-type value, not an item score; "
                f"choose one of {', '.join(sorted(metrics_seen)) or '(none)'}"
            )
    chosen_metric, how_m = resolve(
        "metric", metric, name, list(metrics_seen), first, default=_default_metric(task)
    )
    report.choose(name, "metric", chosen_metric, how_m)
    report.choose(name, "filter", chosen_filter, how_f)

    columns = Columns()
    for position, record in records:
        filt = str(record.get("filter", "none"))
        if filt != chosen_filter:
            report.drop("other filter")
            continue
        if chosen_metric not in record:
            report.drop("metric absent")
            continue
        loc = _loc(path, position, array)
        score = coerce_score(record[chosen_metric], loc, chosen_metric)
        if score is None:
            report.drop("metric value missing (null/NaN)")
            continue
        doc_hash = record.get("doc_hash")
        columns.add(
            canonical,
            name,
            str(record["doc_id"]),
            score,
            chosen_metric,
            filt,
            0,
            source_model,
            position,
            str(doc_hash) if doc_hash is not None else None,
        )
    return columns.frame(source, str(path), timestamp)
