"""OpenCompass per-dataset results with ``--dump-eval-details`` (``docs/formats.md``).

``outputs/default/<YYYYMMDD_HHMMSS>/results/<model_abbr>/<dataset_abbr>.json`` holds the
aggregate scores (in percent) and ``details``: a list (or a dict keyed ``"0"``, ``"1"``, ...)
of per-example entries. The correctness field is a **list over replicas** (``[true]`` for one
replica; one row per replica, ``trial`` = position) or a bool. One record is one replica of an
entry (an entry without the chosen field counts once).

The item is the example's index in the dataset, the same in every version (checked on real
files of 0.3.9 and 0.5.4): the dict key of 0.3.x ``details``; since 0.4 the entries are a list
and ``BaseEvaluator.evaluate`` names each ``example_abbr = "<dataset_abbr>_<index>"``
(``opencompass/datasets/base.py``), whose dataset prefix is dropped (any other
``example_abbr`` is kept as it is; a list without it gives the position). The
metric is ``correct`` by default; ``is_correct`` and ``cascade_correct`` are used when they are
the only correctness field, and must be named when several are present. The model is the
``<model_abbr>`` directory, the benchmark the ``<dataset_abbr>`` file stem, the run timestamp the
``YYYYMMDD_HHMMSS`` directory above ``results``. ``predictions/`` files hold no correctness and
are refused.

Since 2023-10 (through 0.5.x) ``OpenCompassTask.format_details`` writes ``details`` as
``{"type": "PPL" | "GEN", "0": {...}, "1": {...}}``: PPL entries hold ``predictions``,
``references`` and ``correct`` (a bool), GEN entries the evaluator's ``correct`` when it gave
one (0.3.x moves the marker to the top level). The ``type`` marker is skipped; a GEN file
without any correctness field is reported and gives no rows.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from latentbench.exceptions import InputError
from latentbench.io._arrival import unpacked_path
from latentbench.io.formats._common import (
    Choice,
    Columns,
    LoadReport,
    coerce_score,
    load_json,
    resolve,
)
from latentbench.io.formats._registry import reader

PATTERNS = ("**/*.json",)

CORRECTNESS_FIELDS = ("correct", "is_correct", "cascade_correct")
"""Per-entry correctness fields, in default order (``correct`` is the default)."""

_RUN_DIR = re.compile(r"^\d{8}_\d{6}$")


def _timestamp(path: Path) -> datetime | None:
    """The time of the run folder (``YYYYMMDD_HHMMSS``, OpenCompass's work-dir name) the file
    lies in, or None; a folder of that shape that is no date is refused by name."""
    for part in reversed(path.parts):
        if _RUN_DIR.match(part):
            try:
                return datetime.strptime(part, "%Y%m%d_%H%M%S")
            except ValueError:
                raise InputError(
                    f"{path}: folder {part!r} has the shape of an OpenCompass run folder "
                    "(YYYYMMDD_HHMMSS) but is no date and time; expected a run folder as "
                    "OpenCompass names it (e.g. '20240915_101010'), or rename the folder"
                ) from None
    return None


def _item(abbr: object, dataset: str, key: str) -> str:
    """``"<dataset>_<index>"`` -> ``"<index>"``; other ``example_abbr`` values as they are."""
    if abbr is None:
        return key
    text = str(abbr)
    index = text.removeprefix(f"{dataset}_")
    return index if index != text and index.isdigit() else text


@reader(
    "opencompass",
    summary="OpenCompass --dump-eval-details (results/<model>/*.json)",
    patterns=PATTERNS,
    item_field="example_abbr",
    packed=True,
    keep=lambda path: path.parent.parent.name == "results",
    nothing_found="no OpenCompass results/<model>/<dataset>.json found",
)
def read(
    path: Path,
    report: LoadReport,
    *,
    benchmark: str | None,
    metric: Choice,
    model: str | None,
) -> pd.DataFrame:
    """Read one OpenCompass results file into canonical rows."""
    entries, kind = _entries(_load_results(path), path)
    source_model = path.parent.name
    canonical = model or source_model
    dataset = unpacked_path(path).stem  # results/<model>/<dataset>.json(.gz)
    name = benchmark or dataset
    report.rename(benchmark, dataset)
    present = _correctness_fields(entries, path)
    if not present and entries:
        return _predictions_only(path, report, entries, kind)
    chosen, how = resolve("metric", metric, name, list(present), str(path), default="correct")
    report.choose(name, "metric", chosen, how)
    report.choose(name, "filter", "none", "only")
    out = Columns()
    for position, (key, entry) in enumerate(entries):
        _add_entry(out, report, path, key, entry, chosen, (canonical, name, source_model, position))
    return out.frame("opencompass", str(path), _timestamp(path))


def _load_results(path: Path) -> dict[str, Any]:
    """A results file's top-level object, with its ``details`` (a predictions file holds no
    correctness and is refused)."""
    if "predictions" in path.parts[-3:-1]:
        raise InputError(
            f"{path}: an OpenCompass predictions file holds no correctness; ingest "
            "results/<model>/<dataset>.json instead"
        )
    data = load_json(path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: top level is {type(data).__name__}; expected an object")
    if "details" not in data:
        raise InputError(
            f"{path}: field 'details' is missing; expected per-example details (run OpenCompass "
            "with --dump-eval-details)"
        )
    return data


def _entries(data: dict[str, Any], path: Path) -> tuple[list[tuple[str, Any]], str | None]:
    """The per-example entries as ``(key, entry)`` pairs, and the ``type`` marker (PPL, GEN).

    ``OpenCompassTask.format_details`` (since 2023-10) marks the entries ``{"type": "PPL" |
    "GEN"}``; 0.3.x moves the marker out of ``details`` to the top level.
    """
    details = data["details"]
    kind = data.get("type") if isinstance(data.get("type"), str) else None
    if isinstance(details, dict) and isinstance(details.get("type"), str):
        kind = details["type"]
        details = {k: v for k, v in details.items() if k != "type"}
    if isinstance(details, dict):
        return list(details.items()), kind
    if isinstance(details, list):
        return [(str(i), e) for i, e in enumerate(details)], kind
    raise InputError(
        f"{path}: field 'details' has type {type(details).__name__}; expected a list or a "
        "dict of per-example entries"
    )


def _correctness_fields(entries: list[tuple[str, Any]], path: Path) -> dict[str, None]:
    """The correctness fields the entries hold, in order of appearance (every entry must be
    an object)."""
    present: dict[str, None] = {}
    for key, entry in entries:
        if not isinstance(entry, dict):
            raise InputError(
                f"{path}: details[{key}]: value {entry!r}; expected an object with 'correct'"
            )
        for field_name in CORRECTNESS_FIELDS:
            if field_name in entry:
                present.setdefault(field_name, None)
    return present


def _predictions_only(
    path: Path, report: LoadReport, entries: list[tuple[str, Any]], kind: str | None
) -> pd.DataFrame:
    """No rows: the entries hold no correctness field (the file is reported as skipped)."""
    what = f"{kind} details" if kind else "details"
    report.records_read += len(entries)
    report.skip_file(
        path,
        f"{what} without a correctness field ({', '.join(CORRECTNESS_FIELDS)}): the "
        "evaluator wrote predictions only",
        len(entries),
    )
    return Columns().frame("opencompass", str(path), _timestamp(path))


def _add_entry(
    out: Columns,
    report: LoadReport,
    path: Path,
    key: str,
    entry: dict[str, Any],
    chosen: str,
    row: tuple[str, str, str, int],
) -> None:
    """Add the rows of entry ``key``, one per replica of its ``chosen`` field; ``row`` is the
    model, benchmark, source model and position. A missing field or replica is dropped."""
    canonical, name, source_model, position = row
    loc = f"{path}: details[{key}]"
    if chosen not in entry:
        report.records_read += 1
        report.drop("correctness field absent")
        return
    item = _item(entry.get("example_abbr"), unpacked_path(path).stem, key)
    value = entry[chosen]
    replicas = value if isinstance(value, list) else [value]
    if not replicas:  # no replica scored: said, as a missing field is
        report.records_read += 1
        report.drop("correctness list empty (no replica)")
        return
    report.records_read += len(replicas)
    for trial, replica in enumerate(replicas):
        score = coerce_score(
            replica, loc, f"{chosen}[{trial}]" if isinstance(value, list) else chosen
        )
        if score is None:
            report.drop("replica value missing (null)")
            continue
        out.add(canonical, name, item, score, chosen, "none", trial, source_model, position)
