"""Writing Every Eval Ever files (``latentbench export --format eee OUT``): one evaluation per
(model, benchmark, metric, filter, split), laid out as the EEE datastore does, records checked
before anything is written, written into a staging folder and moved into place. The reader and
the record checks are in :mod:`latentbench.io.formats._eee`."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from latentbench.exceptions import InputError
from latentbench.io._outputs import staging_path
from latentbench.io.formats._common import CANONICAL_COLUMNS
from latentbench.io.formats._eee import (
    _META,
    SCHEMA_VERSION,
    _package_check,
    _schema_validator,
    validate_aggregate,
    validate_instance,
)

__all__ = ["write_eee"]


_SLUG_MAX = 80
"""Longest folder name written (a longer id is cut and given a hash of the whole id)."""


_WINDOWS_DEVICES = re.compile(r"(con|prn|aux|nul|com[1-9]|lpt[1-9])(\..*)?", re.I)
"""Names Windows reserves for devices, with any extension (``CON``, ``nul.json``)."""


def _slug(text: str) -> str:
    """A safe folder name for an id: ASCII letters, digits, ``._-``; never ``.``, ``..`` or a
    hidden name, nor a name Windows cannot hold (a device name such as ``CON`` or ``nul.x``,
    a trailing dot: an export is shared, and a clone holding one fails there), at most
    :data:`_SLUG_MAX` characters. Distinct ids may share a folder: the file names (hashes of
    the whole key) keep them apart."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "unknown"
    if slug.startswith(".") or _WINDOWS_DEVICES.fullmatch(slug):
        slug = "_" + slug
    if slug.endswith("."):
        slug = slug.rstrip(".") + "_"
    if len(slug) > _SLUG_MAX:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        slug = f"{slug[: _SLUG_MAX - 13]}-{digest}"
    return slug


def _uuid4_from(*parts: str) -> str:
    """A deterministic id shaped as a version-4 UUID (the EEE file-name pattern)."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()[:16]
    return str(uuid.UUID(bytes=digest, version=4))


def _as_text(value: Any) -> str | None:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    if isinstance(value, (pd.Timestamp, datetime, np.datetime64)):
        return pd.Timestamp(value).isoformat()
    return str(value)


def _records(group: pd.DataFrame, evaluation_id: str, result_id: str) -> Iterable[dict[str, Any]]:
    columns = {c: group[c].to_numpy() for c in CANONICAL_COLUMNS}
    for k in range(len(group)):
        score = float(columns["score"][k])
        metadata = {}
        for column in CANONICAL_COLUMNS:
            if column in ("model", "item", "score"):
                continue
            text = _as_text(columns[column][k])
            if text is not None:
                metadata[_META + column] = text
        item_hash = _as_text(columns["item_hash"][k])
        yield {
            "schema_version": SCHEMA_VERSION,
            "evaluation_id": evaluation_id,
            "model_id": str(columns["model"][k]),
            "evaluation_name": str(columns["benchmark"][k]),
            "evaluation_result_id": result_id,
            "sample_id": str(columns["item"][k]),
            "sample_hash": item_hash,
            "interaction_type": "single_turn",
            "input": {"raw": "", "reference": []},
            "output": {"raw": []},
            "answer_attribution": [],
            "evaluation": {"score": score, "is_correct": score == 1.0},
            "metadata": metadata,
        }


def write_eee(frame: pd.DataFrame, out: str | Path) -> list[Path]:
    """Write a canonical long table as Every Eval Ever 0.3.0 evaluations under ``out``.

    Parameters
    ----------
    frame : DataFrame of shape (n_rows, 14)
        Canonical rows (``Store.long()``).
    out : path-like
        Output folder; ``out/data/<benchmark>/<developer>/<model>/<uuid>.json`` and
        ``<uuid>_samples.jsonl`` are written, one pair per (model, benchmark, metric, filter,
        split). The ids are deterministic, so exporting twice writes the same files.

    Returns
    -------
    list of Path
        The aggregate files written.

    Raises
    ------
    InputError
        A record that does not validate, ``out`` is a file, a record's path inside an
        existing ``out`` is taken by a folder (or one of its folders by a file), or writing
        fails (disk full, ...); nothing is written then: the files are written into a
        staging folder beside ``out`` and moved into place once all are complete.
    """
    out = Path(out)
    planned: list[tuple[Path, dict[str, Any], Path, list[dict[str, Any]]]] = []
    aggregate_validator = _schema_validator("eval.schema.json")
    instance_validator = _schema_validator("instance_level_eval.schema.json")
    keys = ["model", "benchmark", "metric", "filter", "split"]
    for (model, bench, metric, filt, split), group in frame.groupby(keys, sort=True):
        model, bench = str(model), str(bench)
        ident = _uuid4_from(model, bench, str(metric), str(filt), str(split))
        developer, _, name = model.rpartition("/")
        folder = Path("data") / _slug(bench) / _slug(developer or "unknown") / _slug(name)
        result_id = f"{bench}/{metric}/{filt}/{split}"
        evaluation_id = f"latentbench/{model}/{ident}"
        records = list(_records(group, evaluation_id, result_id))
        samples_rel = (folder / f"{ident}_samples.jsonl").as_posix()
        sources = group["source"].value_counts()
        tool, _, version = str(sources.index[0]).partition(" ")
        stamps = group["run_timestamp"].dropna()
        aggregate: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "evaluation_id": evaluation_id,
            "retrieved_timestamp": str(datetime.now(UTC).timestamp()),
            "source_metadata": {
                "source_name": "latentbench",
                "source_type": "evaluation_run",
                "source_organization_name": "latentbench export",
                "evaluator_relationship": "other",
            },
            "eval_library": {"name": tool, "version": version or "unknown"},
            "model_info": {
                "name": name,
                "id": model,
                "additional_details": {
                    "deployment_type": "unknown",
                    "model_availability": "unknown",
                },
            },
            "evaluation_results": [
                {
                    "evaluation_result_id": result_id,
                    "evaluation_name": bench,
                    "source_data": {
                        "dataset_name": bench,
                        "source_type": "other",
                        "additional_details": {"split": str(split), "filter": str(filt)},
                    },
                    "metric_config": {
                        "metric_id": str(metric),
                        "metric_name": str(metric),
                        "lower_is_better": False,
                        "score_type": "continuous",
                        "min_score": 0.0,
                        "max_score": 1.0,
                    },
                    "score_details": {"score": float(group["score"].mean())},
                }
            ],
            "detailed_evaluation_results": {
                "format": "jsonl",
                "file_path": samples_rel,
                "hash_algorithm": "sha256",
                "total_rows": len(records),
            },
        }
        if len(stamps):
            aggregate["evaluation_timestamp"] = str(pd.Timestamp(stamps.max()).timestamp())
        loc = str(out / folder / f"{ident}.json")
        validate_aggregate(aggregate, loc)
        _package_check(aggregate_validator, aggregate, loc)
        for number, record in enumerate(records, start=1):
            where = f"{out / samples_rel}:{number}"
            validate_instance(record, where)
            _package_check(instance_validator, record, where)
        planned.append((out / folder / f"{ident}.json", aggregate, out / samples_rel, records))
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} is a file; expected a folder (new or to add to)")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        # mkdir (not mkdtemp, which makes it private): the export keeps the umask's mode
        staging = staging_path(out)
        staging.mkdir()
    except OSError as exc:
        raise InputError(f"{out}: cannot write ({exc.strerror or exc})") from None
    written: list[Path] = []
    try:
        moves: list[Path] = []
        for aggregate_path, aggregate, samples_path, records in planned:
            samples_part = samples_path.relative_to(out)
            aggregate_rel = aggregate_path.relative_to(out)
            (staging / samples_part).parent.mkdir(parents=True, exist_ok=True)
            text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
            (staging / samples_part).write_text(text, encoding="utf-8")
            aggregate["detailed_evaluation_results"]["checksum"] = hashlib.sha256(
                text.encode("utf-8")
            ).hexdigest()
            (staging / aggregate_rel).write_text(
                json.dumps(aggregate, indent=2, sort_keys=True), encoding="utf-8"
            )
            moves += [samples_part, aggregate_rel]  # each aggregate after its records
            written.append(aggregate_path)
        if not out.exists():
            os.replace(staging, out)
        else:
            _check_in_the_way(out, moves)
            for rel in moves:
                (out / rel).parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / rel, out / rel)
    except OSError as exc:  # disk full, a name the file system refuses, ...
        raise InputError(f"{out}: cannot write ({exc.strerror or exc}); nothing written") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written


def _check_in_the_way(out: Path, moves: list[Path]) -> None:
    """Refuse, before any record moves into the existing folder ``out``, a destination taken
    by something of the other kind: a folder where a record file goes, or a file where one
    of its folders goes (``os.replace`` would fail there with some records already moved)."""
    folders = {parent for rel in moves for parent in rel.parents if parent != Path(".")}
    for folder in sorted(folders, key=lambda p: len(p.parts)):
        if (out / folder).exists() and not (out / folder).is_dir():
            raise InputError(f"{out / folder} is a file; expected a folder; nothing written")
    for rel in moves:
        if (out / rel).is_dir():
            raise InputError(f"{out / rel} is a folder; expected a record file; nothing written")
