"""lm-evaluation-harness ``--log_samples`` output (``docs/formats.md``, lm-eval).

Two layouts are read, told apart by the first non-space byte, not by the suffix:

- ≥ 0.4.3: ``<out>/<model_sanitized>/samples_<task>_<date_id>.jsonl``, one JSON object per
  line, next to ``results_<date_id>.json`` (which gives ``model_name`` and the version);
- 0.4.0–0.4.2: ``<dir>/<model_args sanitized>_<task>.jsonl`` holding **one JSON array**, next to
  ``results.json`` (whose ``configs`` name the tasks and ``config.model_args`` the model).

Also read: samples named ``samples_<task>_<date>.json`` (JSON lines; main in 2024-05/06 and the
Open LLM Leaderboard v2 details), and ``--output_path DIR/name.json`` runs, where lm-eval writes
``DIR/name_<date>.json`` and flat ``DIR/samples_<task>_<date>.jsonl``. A samples file is paired
only with the results file of **its own run** (same ``<date>``); without one, the model is named
after the folder and a note says so.

One line is one doc × one filter, so the key is (model, task, ``doc_id``, ``filter``). Files
written before lm-eval 0.4.7 have no ``filter`` field: the harness wrote a multi-filter task's
lines once per filter in the order of ``configs[task].filter_list``, so the n-th line of a doc
belongs to the n-th filter of that list (a note records it). The split is the task's
``test_split``, else its ``validation_split``, from ``configs``.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from latentbench._text import counted
from latentbench.exceptions import InputError
from latentbench.io._arrival import (
    PACKED_SUFFIXES,
    encoding_hint,
    open_unpacked,
    undecodable_at,
    unpacked_path,
)
from latentbench.io.formats._common import (
    PERPLEXITY_METRICS,
    UNKNOWN_SPLIT,
    Choice,
    Columns,
    LoadReport,
    beside,
    coerce_score,
    is_scalar_score,
    load_json,
    offered_metrics,
    parse_dashed_iso,
    parse_json,
    requested,
    resolve,
    where,
)
from latentbench.io.formats._registry import reader
from latentbench.io.formats._report import same_weights, shown_revision

PATTERNS = ("**/*.jsonl", "**/samples_*.json")

_SAMPLES = re.compile(
    r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl?$"
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
    try:  # a byte-order mark (Notepad) is no record; a .jsonl.gz is read decompressed
        with io.TextIOWrapper(open_unpacked(path), encoding="utf-8-sig") as handle:
            text = handle.read()  # universal newlines, as read_text: CR-only line ends
    except UnicodeDecodeError:  # the line and the byte, as the other JSON-lines readers say
        raise InputError(
            f"{path}: not UTF-8 text{undecodable_at(path)}{encoding_hint(path)}; expected lm-eval "
            "samples"
        ) from None
    utf16 = encoding_hint(path) if "\x00" in text else ""
    if utf16:  # UTF-16 of characters whose bytes are all ASCII: valid UTF-8, garbled
        raise InputError(
            f"{path}: not UTF-8 text (a zero byte every other byte){utf16}; expected lm-eval "
            "samples"
        )
    stripped = text.lstrip()
    if not stripped:
        raise InputError(f"{path}: the file is empty; expected lm-eval samples")
    records: list[tuple[int, dict[str, Any]]] = []
    if stripped[0] == "[":
        array = parse_json(
            text,
            str(path),
            what="JSON array",
            hint="expected the lm-eval 0.4.0-0.4.2 samples layout",
        )
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
    # lines end at "\n" only: lm-eval writes ensure_ascii=False, so a document's text may hold
    # U+2028, U+0085 (NEL) or a form feed raw, which str.splitlines() would break a record at
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        record = parse_json(
            line, str(path), line=number, what="JSON line", hint="the file may be truncated"
        )
        if not isinstance(record, dict):
            raise InputError(
                f"{path}:{number}: expected a JSON object, got {type(record).__name__}"
            )
        records.append((number, record))
    return records, False


def _holds_samples(path: Path) -> bool:
    """Whether the first record of ``path`` (a JSON line, or the first element of a JSON
    array) is an lm-eval sample: an object with ``doc_id``. A file that is not JSON, or whose
    first record is something else, is not a samples file."""
    try:
        with io.TextIOWrapper(open_unpacked(path), encoding="utf-8-sig") as handle:
            head = handle.read(1 << 16).lstrip()
            if head.startswith("["):
                loaded = json.loads(head + handle.read())
                first = loaded[0] if isinstance(loaded, list) and loaded else None
            else:
                line = head.partition("\n")[0]
                while not line.endswith("}") and (more := handle.readline()):
                    line += more.rstrip("\n")  # a first record longer than the chunk
                first = json.loads(line)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(first, dict) and "doc_id" in first


def _loc(path: Path, position: int, array: bool) -> str:
    return where(path, record=position) if array else where(path, line=position)


def _results_file(path: Path, date: str) -> Path | None:
    """The results file of the run that wrote ``path``: ``results_<date>.json`` beside it, or
    the one ``<name>_<date>.json`` that ``--output_path DIR/name.json`` writes. Never another
    run's file (each may be compressed on its own: ``results_<date>.json.gz``)."""
    exact = beside(path.parent, f"results_{date}.json")
    if exact is not None:
        return exact
    named = [
        p
        for ending in ("", *PACKED_SUFFIXES)
        for p in sorted(path.parent.glob(f"*_{date}.json{ending}"))
        if not p.name.startswith("samples_") and p.is_file()
    ]
    return named[0] if len(named) == 1 else None


def _new_layout_meta(
    path: Path, date: str, override: bool
) -> tuple[str | None, str, dict[str, Any], Path | None]:
    """(model name, source, results, results path) from the results file of the same run.

    The name is the one lm-eval derives from ``model_args`` (see :func:`_named_in_args`):
    lm-eval writes ``model_name`` from the same derivation
    (``GeneralConfigTracker._get_model_name``), so the two agree in its output, and the
    arguments stay right where ``model_name`` was made up. Without ``model_args`` the recorded
    ``model_name`` is used. When ``model_args`` is recorded but names no model (``--model
    dummy``, an endpoint without ``model=``), lm-eval made ``model_name`` up (a random id):
    that is an error naming the file unless the caller names the model (``override``).
    """
    results = _results_file(path, date)
    if results is None:
        return None, "lm-eval", {}, None
    meta = load_json(results)
    if not isinstance(meta, dict):
        return None, "lm-eval", {}, results
    config = meta.get("config") or {}
    source = _source(meta)
    if "model_args" in config:
        model = _named_in_args(config["model_args"])
        if model is None and not override:
            raise _unnamed(results, config, meta.get("model_name"))
    else:
        model = meta.get("model_name") or config.get("model_name")
    return (str(model) if model else None), source, meta, results


def _source(meta: dict[str, Any]) -> str:
    """``lm-eval <version>``; before ``lm_eval_version`` was recorded (main up to mid-2024),
    ``lm-eval git <git_hash>`` of the harness checkout; else ``lm-eval``."""
    version = meta.get("lm_eval_version")
    if version:
        return f"lm-eval {version}"
    git_hash = meta.get("git_hash")
    if isinstance(git_hash, str) and git_hash:
        return f"lm-eval git {git_hash}"
    return "lm-eval"


def _unnamed(results: Path, config: dict[str, Any], recorded: Any) -> InputError:
    return InputError(
        f"{results}: field 'config.model_args' = {config.get('model_args')!r} names no model "
        f"(none of {', '.join(_NAME_KEYS)}) for lm-eval model {config.get('model')!r}, so "
        f"'model_name' = {recorded!r} is not a model name (lm-eval makes one up); pass "
        "model=NAME to name the model of these files"
    )


def _task_config(meta: dict[str, Any], task: str) -> dict[str, Any]:
    config = (meta.get("configs") or {}).get(task)
    return config if isinstance(config, dict) else {}


def _filter_names(meta: dict[str, Any], task: str) -> list[str]:
    """Filter names of ``task`` in the order the harness applied them (``filter_list``)."""
    names = []
    for entry in _task_config(meta, task).get("filter_list") or []:
        if isinstance(entry, dict) and entry.get("name"):
            names.append(str(entry["name"]))
    return names


def _split(meta: dict[str, Any], task: str) -> str:
    """The evaluated split: ``test_split``, else ``validation_split`` (lm-eval's order)."""
    config = _task_config(meta, task)
    for key in ("test_split", "validation_split"):
        if config.get(key):
            return str(config[key])
    return UNKNOWN_SPLIT


#: ``model_args`` keys lm-eval takes the model name from, in its order
#: (``GeneralConfigTracker._get_model_name``: an adapter before its base model), then
#: ``model_version``, ``model_name`` and ``model_id``, which lmms-eval's variant also reads
#: (after lm-eval's own keys, so that the name is lm-eval's whenever it gives one).
_NAME_KEYS = (
    "peft",
    "delta",
    "pretrained",
    "model",
    "path",
    "engine",
    "model_version",
    "model_name",
    "model_id",
)


def _args(model_args: Any) -> dict[str, Any]:
    """``model_args`` as a mapping (lm-eval records a dict or ``k=v,k=v``)."""
    if isinstance(model_args, str):
        pairs = (part.partition("=") for part in model_args.split(","))
        return {key.strip(): value.strip() for key, _, value in pairs}
    return model_args if isinstance(model_args, dict) else {}


def _note_revision(
    report: LoadReport, model: str, meta: dict[str, Any], results: Path | None, samples: Path
) -> None:
    """Record the weights' ``revision`` in ``config.model_args`` of the run that wrote
    ``samples``, and say when runs read as one ``model`` name other revisions.

    lm-eval names a model after ``pretrained=`` and leaves ``revision=`` out, so two
    checkpoints of one repository are one model to it: their docs that agree are kept once,
    and one that differs is a conflict, for which ``duplicates=`` would keep one checkpoint's
    answer or mix both (the conflict's error says so instead: ``LoadReport.revisions``).
    """
    config = meta.get("config") or {}
    if results is None or not isinstance(config, dict) or "model_args" not in config:
        return
    revision = _args(config["model_args"]).get("revision") or None
    revision = None if revision is None else str(revision)
    weights = same_weights(revision)  # no revision and 'main' are one
    runs = report._revisions.setdefault(model, {})
    report.revisions[str(samples)] = revision
    if weights in runs:
        return
    if runs:
        first, at = next(iter(runs.values()))
        report.notes.append(
            f"model {model!r}: runs of other weights are read as this one model, the name "
            f"lm-eval gives them both (their 'config.model_args': {shown_revision(first)} in "
            f"{at}, {shown_revision(revision)} in {results}); if they are two models "
            "(checkpoints of one), read each run with model=NAME"
        )
    runs[weights] = (revision, str(results))


def _named_in_args(model_args: Any) -> str | None:
    """The model name in ``model_args`` (a dict or ``k=v,k=v``), as lm-eval derives it."""
    model_args = _args(model_args)
    if model_args:
        for key in _NAME_KEYS:
            value = model_args.get(key)
            if value:
                return str(value)
    return None


def _old_layout_meta(
    path: Path, override: bool
) -> tuple[str | None, str | None, str, dict[str, Any]]:
    """(model, task, source, results) for a 0.4.0-0.4.2 file from ``results.json`` beside it."""
    results = beside(path.parent, "results.json")
    model = task = None
    meta: dict[str, Any] = {}
    if results is not None:
        loaded = load_json(results)
        if isinstance(loaded, dict):
            meta = loaded
            config = meta.get("config") or {}
            if "model_args" in config:
                model = _named_in_args(config["model_args"])
                if model is None and not override:
                    raise _unnamed(results, config, None)
            tasks = sorted(
                (meta.get("configs") or meta.get("results") or {}), key=len, reverse=True
            )
            for name in tasks:
                if unpacked_path(path).stem.endswith(f"_{name}"):
                    task = name
                    break
    return model, task, _source(meta), meta


def _canonical_model(raw: str) -> str:
    """Undo ``sanitize_model_name`` when unambiguous (``org__model`` -> ``org/model``)."""
    return raw.replace("__", "/") if raw.count("__") == 1 else raw


@dataclass(frozen=True)
class _Origin:
    """Where one samples file comes from: its task (None: not a samples file, skipped), the
    tool version, the run's results, the model as the files name it and canonically, the
    run's time, and the results file (None: none found)."""

    task: str | None
    source: str
    meta: dict[str, Any]
    source_model: str
    canonical: str
    timestamp: pd.Timestamp | None
    results: Path | None = None


@dataclass
class _Scan:
    """What the first pass over a file's records found: each record's filter, the filters and
    scalar metrics seen (with the first position of each), and whether filters were assigned
    by line order (files before lm-eval 0.4.7)."""

    row_filters: list[str] = field(default_factory=list)
    filters_seen: dict[str, int] = field(default_factory=dict)
    metrics_seen: dict[str, int] = field(default_factory=dict)
    recovered: bool = False


def _new_layout_origin(
    path: Path, task: str, date: str, report: LoadReport, model: str | None
) -> _Origin:
    """The origin of a ``samples_<task>_<date>`` file, from the results file of its run (notes
    on how the model was named and on a subsample go to ``report``)."""
    meta_model, source, meta, results_path = _new_layout_meta(path, date, model is not None)
    canonical = meta_model or _canonical_model(path.parent.name)
    if model is None:
        _note_revision(report, canonical, meta, results_path, path)
    note = _naming_note(path, date, results_path, meta, meta_model, canonical, model)
    if note:
        report.notes.append(note)
    counts = (meta.get("n-samples") or {}).get(task) or {}
    original, effective = counts.get("original"), counts.get("effective")
    if isinstance(original, int) and isinstance(effective, int) and effective < original:
        report.subsample(canonical, task, effective, original)  # said in one note per model
    return _Origin(
        task,
        source,
        meta,
        meta_model or path.parent.name,
        canonical,
        parse_dashed_iso(date),
        results_path,
    )


def _say_short(
    path: Path,
    task: str,
    meta: dict[str, Any],
    records: list[tuple[int, dict[str, Any]]],
    report: LoadReport,
) -> None:
    """Note a samples file holding fewer docs than its run's results file says the task
    evaluated (``n-samples`` ``effective``): a file cut short or edited loses those docs
    without a word otherwise (they are missing, never 0)."""
    counts = (meta.get("n-samples") or {}).get(task) or {}
    effective = counts.get("effective")
    docs = {str(record.get("doc_id")) for _, record in records}
    if isinstance(effective, int) and 0 < len(docs) < effective:
        report.notes.append(
            f"{path}: {counted(len(docs), 'doc')} of task {task!r}, but its run's results file "
            f"says {effective:,} were evaluated (n-samples 'effective'): "
            f"{effective - len(docs):,} {'is' if effective - len(docs) == 1 else 'are'} missing "
            "(a file cut short or edited?)"
        )


def _naming_note(
    path: Path,
    date: str,
    results_path: Path | None,
    meta: dict[str, Any],
    meta_model: str | None,
    canonical: str,
    model: str | None,
) -> str | None:
    """A note when the model is named after the folder (no results file of the run, or one
    naming no model) or when the results file's ``model_name`` was edited; None otherwise."""
    if results_path is None:
        return (
            f"{path}: no results file of run {date} beside it (results_{date}.json or "
            f"<name>_{date}.json); the model is named after the folder: {canonical!r} "
            "(model= sets it)"
        )
    if meta_model is None and model is None:
        return (
            f"{results_path}: names no model (no 'config.model_args', no 'model_name'); "
            f"the model is named after the folder: {canonical!r} (model= sets it)"
        )
    if model is None:
        recorded = meta.get("model_name")
        if isinstance(recorded, str) and recorded and recorded != meta_model:
            return (
                f"{results_path}: 'model_name' {recorded!r} differs from the model of "
                f"'config.model_args' {meta_model!r} (lm-eval writes the one from the "
                f"other; the file was edited?); the model is {meta_model!r} (model= sets it)"
            )
    return None


def _old_layout_origin(
    path: Path, report: LoadReport, benchmark: str | None, model: str | None
) -> _Origin:
    """The origin of a 0.4.0-0.4.2 file (task and model from ``results.json`` beside it). A
    file that holds no samples is skipped (said in ``report``; its origin has no task)."""
    meta_model, task, source, meta = _old_layout_meta(path, model is not None)
    stem = unpacked_path(path).stem  # samples_x.jsonl.gz: samples_x
    eee = re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}_samples", stem)
    hint = (
        " (a '<uuid>_samples.jsonl' file is an Every Eval Ever record: "
        "`latentbench ingest eee FOLDER` reads it)"
        if eee
        else ""
    )
    if task is None and not _holds_samples(path):  # notes.jsonl beside the samples
        report.skip_file(
            path,
            "not an lm-eval samples file (its name is not samples_<task>_<date>.jsonl and "
            f"its first record has no 'doc_id'){hint}",
        )
        return _Origin(None, source, meta, "", "", None)
    if task is None:
        task = benchmark
    if task is None:
        raise InputError(
            f"{path}: cannot tell the task from the file name (no 'samples_<task>_<date>' "
            f"pattern and no results.json naming the tasks); pass benchmark=NAME{hint}"
        )
    source_model = meta_model or stem[: -len(task) - 1] or stem
    results = beside(path.parent, "results.json") if meta else None
    if model is None:
        _note_revision(report, meta_model or source_model, meta, results, path)
    return _Origin(task, source, meta, source_model, meta_model or source_model, None, results)


def _row_filter(
    record: dict[str, Any], occurrences: dict[str, int], listed_filters: list[str]
) -> tuple[str, bool]:
    """The filter of one record, and whether it was recovered from line order (a doc's n-th
    line belongs to the n-th filter of ``filter_list`` in files before lm-eval 0.4.7)."""
    if "filter" in record:
        return str(record["filter"]), False
    doc = str(record["doc_id"])
    nth = occurrences.get(doc, 0)
    occurrences[doc] = nth + 1
    if nth < len(listed_filters):
        return listed_filters[nth], nth > 0
    # a repeat the filter list cannot explain: reported as a repeat by the caller
    return (listed_filters[0] if listed_filters else "none"), False


def _repeat_error(
    path: Path,
    array: bool,
    record: dict[str, Any],
    filt: str,
    positions: tuple[int, int],
    task: str,
    listed_filters: list[str],
) -> InputError:
    """The error for a (doc, filter) that a record at ``positions[0]`` repeats from
    ``positions[1]``."""
    hint = (
        " and no 'filter' field (a multi-filter task written before lm-eval 0.4.7; "
        f"results configs[{task!r}].filter_list names {counted(len(listed_filters), 'filter')}, "
        "so its lines cannot be told apart)"
        if "filter" not in record
        else ""
    )
    return InputError(
        f"{_loc(path, positions[0], array)}: doc_id {record['doc_id']!r} with filter {filt!r} "
        f"repeats {_loc(path, positions[1], array)}{hint}; expected one row per doc "
        "and filter"
    )


def _scalar_metrics(record: dict[str, Any]) -> list[str]:
    """The record's metrics (its ``metrics`` list, else its fields that are not sample fields)
    that hold a scalar score and are not perplexities."""
    listed = record.get("metrics")
    keys = listed if isinstance(listed, list) else [k for k in record if k not in _NOT_METRICS]
    return [
        str(field_name)
        for field_name in keys
        if (
            field_name in record
            and field_name not in PERPLEXITY_METRICS
            and is_scalar_score(record[field_name])
        )
    ]


def _scan(
    path: Path,
    records: list[tuple[int, dict[str, Any]]],
    array: bool,
    task: str,
    listed_filters: list[str],
) -> _Scan:
    """The first pass: every record's doc_id and filter, refusing a repeated (doc, filter),
    and the filters and metrics offered."""
    scan = _Scan()
    first_line: dict[tuple[str, str], int] = {}
    occurrences: dict[str, int] = {}
    for position, record in records:
        if "doc_id" not in record:
            raise InputError(
                f"{_loc(path, position, array)}: field 'doc_id' is missing; expected an lm-eval "
                "sample with doc_id"
            )
        doc = record["doc_id"]
        if isinstance(doc, bool) or not isinstance(doc, (int, str)):
            # NaN, Infinity (literals Python's JSON reads), 2.0: items no calibration holds
            raise InputError(
                f"{_loc(path, position, array)}: field 'doc_id' is {doc!r}; expected an integer "
                "document index, as lm-eval writes it"
            )
        filt, recovered = _row_filter(record, occurrences, listed_filters)
        scan.recovered = scan.recovered or recovered
        scan.row_filters.append(filt)
        scan.filters_seen.setdefault(filt, position)
        key = (str(record["doc_id"]), filt)
        if key in first_line:
            raise _repeat_error(
                path, array, record, filt, (position, first_line[key]), task, listed_filters
            )
        first_line[key] = position
        for name in _scalar_metrics(record):
            scan.metrics_seen.setdefault(name, position)
    return scan


#: lm-eval's own metrics registered ``higher_is_better=False`` (``lm_eval/api/metrics.py``)
#: that are no perplexity, for a run whose results file does not say (none found, or written
#: before it recorded ``higher_is_better``): ``mae`` (a regression's error; ``inf`` when
#: unparsable) and ``brier_score`` (logged per doc as the (gold, probabilities) pair).
_LOWER_IS_BETTER = frozenset({"brier_score", "mae"})


def _lower_is_better(
    results: Path | None, meta: dict[str, Any], task: str, names: list[str]
) -> dict[str, str]:
    """The metrics among ``names`` where lower is better, each with what says so: the run's
    results file (``higher_is_better[task][metric]``, what the run used; else the task's
    ``configs[task].metric_list[i].higher_is_better``), else lm-eval's registry
    (:data:`_LOWER_IS_BETTER`). A metric the results file marks higher-is-better is not one."""
    marks: dict[str, tuple[bool, str]] = {}
    for index, entry in enumerate(_task_config(meta, task).get("metric_list") or []):
        if isinstance(entry, dict) and isinstance(entry.get("higher_is_better"), bool):
            said = f"configs[{task!r}].metric_list[{index}] says higher_is_better"
            marks.setdefault(str(entry.get("metric")), (entry["higher_is_better"], said))
    recorded = (meta.get("higher_is_better") or {}).get(task)
    for metric, higher in (recorded if isinstance(recorded, dict) else {}).items():
        if isinstance(higher, bool):
            marks[str(metric)] = (higher, f"higher_is_better[{task!r}] says {metric}")
    lower: dict[str, str] = {}
    for name in names:
        if name in marks:
            higher, said = marks[name]
            if not higher:
                lower[name] = f"{results}: {said}: false"
        elif name in _LOWER_IS_BETTER:
            lower[name] = "lm-eval registers it with higher_is_better=False"
    return lower


def _choose_metric(
    metric: Choice,
    name: str,
    task: str,
    metrics_seen: dict[str, int],
    records: list[tuple[int, dict[str, Any]]],
    where_said: tuple[Path, str, Path | None, dict[str, Any]],
    check: Callable[[str], None],
) -> tuple[str, str]:
    """The metric for benchmark ``name`` and how it was chosen; a metric asked for by name is
    offered when a record has it (its values are judged when read), a perplexity is refused.

    A metric where lower is better (the run's results file says ``higher_is_better``: false)
    is not offered; asked for, or the only one, it is refused, after ``check`` (which raises
    for a value that is no score: that refusal comes first, saying lower is better too).
    ``where_said``: the samples file, its first record's place, the results file and its
    contents.
    """
    path, first, results, meta = where_said
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
    lower = _lower_is_better(results, meta, task, list(metrics_seen))
    offered = offered_metrics(str(path), name, wanted, list(metrics_seen), lower, check)
    return resolve("metric", metric, name, offered, first, default=_default_metric(task))


def _check_values(
    path: Path,
    records: list[tuple[int, dict[str, Any]]],
    array: bool,
    row_filters: list[str],
    chosen_filter: str,
    metric: str,
) -> None:
    """Raise as :func:`_add_rows` would for the first value of ``metric`` under
    ``chosen_filter`` that is no score (outside [0, 1], a list)."""
    for (position, record), filt in zip(records, row_filters, strict=True):
        if filt == chosen_filter and metric in record:
            coerce_score(record[metric], _loc(path, position, array), metric)


def _add_rows(
    columns: Columns,
    report: LoadReport,
    path: Path,
    records: list[tuple[int, dict[str, Any]]],
    array: bool,
    row_filters: list[str],
    chosen: tuple[str, str],
    labels: tuple[str, str, str],
) -> None:
    """Add the records of the ``chosen`` (filter, metric) to ``columns``, counting the others
    as dropped; ``labels`` are the canonical model, the benchmark and the source model."""
    chosen_filter, chosen_metric = chosen
    canonical, name, source_model = labels
    for (position, record), filt in zip(records, row_filters, strict=True):
        if filt != chosen_filter:
            report.drop("other filter")
            continue
        if chosen_metric not in record:
            report.drop(f"metric {chosen_metric!r} absent in {path}")
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


@reader(
    "lm-eval",
    summary="lm-evaluation-harness --log_samples (samples_*.jsonl)",
    patterns=PATTERNS,
    keep=lambda path: not path.name.startswith("results"),
    item_field="doc_id",
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
) -> pd.DataFrame:
    """Read one samples file into canonical rows."""
    match = _SAMPLES.match(unpacked_path(path).name)
    if match:
        origin = _new_layout_origin(path, match.group("task"), match.group("date"), report, model)
    else:
        origin = _old_layout_origin(path, report, benchmark, model)
    task, meta = origin.task, origin.meta
    if task is None:  # not a samples file: skipped
        return Columns().frame(origin.source, str(path), None)
    canonical = model if model is not None else origin.canonical
    name = benchmark or task
    report.rename(benchmark, task)  # the files' task names, refused when several
    records, array = _parse_lines(path)
    report.records_read += len(records)
    if not records:
        return Columns().frame(origin.source, str(path), origin.timestamp)

    _say_short(path, task, meta, records, report)
    listed_filters = _filter_names(meta, task)
    scan = _scan(path, records, array, task, listed_filters)
    first = _loc(path, records[0][0], array)
    chosen_filter, how_f = resolve("filter", filter, name, list(scan.filters_seen), first)
    chosen_metric, how_m = _choose_metric(
        metric,
        name,
        task,
        scan.metrics_seen,
        records,
        (path, first, origin.results, meta),
        lambda m: _check_values(path, records, array, scan.row_filters, chosen_filter, m),
    )
    report.choose(name, "metric", chosen_metric, how_m)
    report.choose(name, "filter", chosen_filter, how_f)

    if scan.recovered:
        report.notes.append(
            f"{path}: no 'filter' field (lm-eval < 0.4.7); filters assigned by line order from "
            f"configs[{task!r}].filter_list: {', '.join(listed_filters)}"
        )
    columns = Columns(at="record" if array else "line", split=_split(meta, task))
    _add_rows(
        columns,
        report,
        path,
        records,
        array,
        scan.row_filters,
        (chosen_filter, chosen_metric),
        (canonical, name, origin.source_model),
    )
    return columns.frame(origin.source, str(path), origin.timestamp)
