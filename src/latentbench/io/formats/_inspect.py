"""Inspect AI logs: ``.eval`` zip archives and ``.json`` logs (``docs/formats.md``).

A ``.eval`` file is recognised by its zip signature, not its suffix. It holds ``header.json``
(or ``_journal/start.json`` for an unfinished log) with the ``eval`` spec, and one
``samples/<id>_epoch_<n>.json`` per sample and epoch. A ``.json`` log is one ``EvalLog`` with
``eval`` and ``samples``. This reader uses only the standard library, so ``inspect_ai`` stays
optional; the zip layout is an Inspect internal and is checked loudly.

Mapping: ``benchmark`` = ``eval.task``, ``model`` = ``eval.model``, ``item`` = ``sample.id``,
``trial`` = ``epoch - 1``, ``filter`` = the scorer name, ``metric`` = ``value`` (or the key of a
dict-valued score). Values ``C``/``I``/``P``/``N`` map to 1/0/0.5/0 and ``yes``/``no`` to 1/0.
A sample with an ``error`` is missing by default (``errored="zero"`` scores it 0).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from latentbench.exceptions import InputError
from latentbench.io.formats._common import (
    Choice,
    Columns,
    LoadReport,
    coerce_score,
    load_json,
    requested,
    resolve,
    where,
)
from latentbench.io.formats._registry import reader

PATTERNS = ("**/*.eval", "**/*.json")

_ZIP_MAGIC = b"PK\x03\x04"


def is_zip(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4) == _ZIP_MAGIC


def _zip_json(archive: zipfile.ZipFile, path: Path, member: str) -> Any:
    try:
        return json.loads(archive.read(member))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}: member {member}:{exc.lineno}: invalid JSON ({exc.msg}); the log may be "
            "truncated"
        ) from None


def _load(path: Path) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """(eval spec, [(location, sample)]) from a .eval zip or a .json log."""
    if is_zip(path):
        try:
            archive = zipfile.ZipFile(path)
        except zipfile.BadZipFile as exc:
            raise InputError(
                f"{path}: damaged zip archive ({exc}); expected an Inspect .eval log"
            ) from None
        with archive:
            names = archive.namelist()
            header_name = next(
                (n for n in ("header.json", "_journal/start.json") if n in names), None
            )
            if header_name is None:
                raise InputError(
                    f"{path}: is a zip archive but not an Inspect .eval log (no header.json or "
                    f"_journal/start.json; members: {', '.join(names[:5]) or '(none)'})"
                )
            header = _zip_json(archive, path, header_name)
            if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
                raise InputError(
                    f"{path}: member {header_name}: field 'eval' is missing; expected an Inspect "
                    "EvalLog header"
                )
            samples = []
            for member in sorted(
                n for n in names if n.startswith("samples/") and n.endswith(".json")
            ):
                sample = _zip_json(archive, path, member)
                if not isinstance(sample, dict):
                    raise InputError(
                        f"{path}: member {member}: expected a JSON object (EvalSample)"
                    )
                samples.append((f"{path}: member {member}", sample))
            return header["eval"], samples
    log = load_json(path)
    if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
        raise InputError(
            f"{path}: field 'eval' is missing; expected an Inspect EvalLog (.json log or .eval zip)"
        )
    raw = log.get("samples") or []
    if not isinstance(raw, list):
        raise InputError(f"{path}: field 'samples': expected a list of EvalSample")
    samples = []
    for index, sample in enumerate(raw):
        if not isinstance(sample, dict):
            raise InputError(f"{where(path, record=index)}: expected a JSON object (EvalSample)")
        samples.append((f"{where(path, record=index)} (samples[{index}])", sample))
    return log["eval"], samples


def looks_like_log(path: Path) -> bool:
    """Cheap check used when walking directories: a zip, or JSON with an ``eval`` object."""
    if is_zip(path):
        return True
    try:
        with open(path, encoding="utf-8") as handle:
            head = handle.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    return head.lstrip().startswith("{") and '"eval"' in head


def _value(score: Any, key: str | None, loc: str, scorer: str) -> tuple[str, Any]:
    value = score.get("value") if isinstance(score, dict) else score
    if isinstance(value, dict):
        if key is None:
            names = sorted(map(str, value))
            if len(names) != 1:
                raise InputError(
                    f"{loc}: scorer {scorer!r} gives a dict value with keys {names}; choose one "
                    "with metric=KEY"
                )
            key = names[0]
        if key not in value:
            raise InputError(
                f"{loc}: scorer {scorer!r}: unknown metric {key!r}; available: {sorted(value)}"
            )
        return key, value[key]
    if key not in (None, "value"):
        raise InputError(
            f"{loc}: scorer {scorer!r} gives a single value; unknown metric {key!r} (use 'value')"
        )
    return "value", value


@reader(
    "inspect",
    summary="Inspect AI logs (.eval archives, .json logs)",
    patterns=PATTERNS,
    keep=looks_like_log,
)
def read(
    path: Path,
    report: LoadReport,
    *,
    benchmark: str | None,
    metric: Choice,
    filter: Choice,
    model: str | None,
    errored: Literal["missing", "zero"] = "missing",
) -> pd.DataFrame:
    """Read one Inspect log into canonical rows."""
    spec, samples = _load(path)
    task = str(spec.get("task") or path.stem)
    source_model = str(spec.get("model") or "unknown")
    canonical = model or source_model
    name = benchmark or task
    packages = spec.get("packages") or {}
    version = packages.get("inspect_ai") if isinstance(packages, dict) else None
    source = f"inspect_ai {version}" if version else "inspect_ai"
    timestamp = spec.get("created")
    report.records_read += len(samples)

    scorers: dict[str, None] = {}
    for _loc, sample in samples:
        for scorer in sample.get("scores") or {}:
            scorers.setdefault(str(scorer), None)
    out = Columns()
    if not samples:
        return out.frame(source, str(path), timestamp)
    chosen, how = resolve("scorer", filter, name, list(scorers), str(path), flag="--filter")
    report.choose(name, "filter", chosen, how)
    key = requested(metric, name)
    metric_name: str | None = None
    for index, (loc, sample) in enumerate(samples):
        if "id" not in sample:
            raise InputError(f"{loc}: field 'id' is missing; expected an EvalSample")
        epoch = sample.get("epoch", 1)
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1:
            raise InputError(f"{loc}: field 'epoch': value {epoch!r}; expected an integer >= 1")
        scores = sample.get("scores") or {}
        if sample.get("error"):
            if errored == "zero":
                out.add(
                    canonical,
                    name,
                    str(sample["id"]),
                    0.0,
                    "",
                    chosen,
                    epoch - 1,
                    source_model,
                    index,
                )
                continue
            report.drop("errored sample (missing; errored='missing')")
            continue
        if chosen not in scores:
            report.drop("scorer absent")
            continue
        got, raw = _value(scores[chosen], key, loc, chosen)
        metric_name = metric_name or got
        score = coerce_score(raw, loc, f"scores.{chosen}.value", inspect=True)
        if score is None:
            report.drop("score value missing (null)")
            continue
        out.add(
            canonical, name, str(sample["id"]), score, got, chosen, epoch - 1, source_model, index
        )
    final = metric_name or key or "value"
    report.choose(name, "metric", final, "given" if key else "only")
    out.metric = [final] * len(out)
    return out.frame(source, str(path), timestamp)
