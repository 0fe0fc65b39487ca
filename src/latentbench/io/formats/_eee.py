"""Every Eval Ever (EvalEval Coalition) aggregate and instance-level records, schema 0.3.0.

An evaluation is an aggregate ``{uuid}.json`` (``eval.schema.json``: ``evaluation_id``,
``model_info``, ``eval_library``, ``evaluation_results``, ``detailed_evaluation_results``)
next to ``{uuid}_samples.jsonl`` (``instance_level_eval.schema.json``): one record per
sample (and per aggregate result), with ``interaction_type`` ``single_turn``, ``multi_turn``
or ``agentic`` and ``evaluation: {score, is_correct}``.

Reading (:func:`read`, ``latentbench ingest eee PATH``): one canonical row per
instance-level record. ``model`` = ``model_id``, ``benchmark`` = ``evaluation_name``,
``item`` = ``sample_id``, ``item_hash`` = ``sample_hash``. The metric is ``evaluation.score``
(default, named by the linked aggregate result's ``metric_config.metric_id`` when there is one)
or ``is_correct`` (``metric="is_correct"``, 0/1). ``source`` is the aggregate's
``eval_library`` (name and version), the run timestamp its ``evaluation_timestamp``, the split
the result's ``source_data.hf_split`` when given. An aggregate file whose instance file is
absent gives no rows and is reported. Records this package wrote carry the canonical columns in
``metadata`` (keys ``latentbench.*``), so a store survives a round trip unchanged.

Writing (:func:`~latentbench.io.formats.write_eee`, ``latentbench export --format eee OUT``):
one evaluation per (model, benchmark, metric, filter, split), laid out as the EEE datastore does:
``OUT/data/<benchmark>/<developer>/<model>/<uuid>.json`` and ``..._samples.jsonl``. The records
are checked with :func:`validate_aggregate` / :func:`validate_instance` (the required fields,
types and enums of schema 0.3.0) before anything is written; when the ``every-eval-ever``
package and ``jsonschema`` are installed (extra ``eee``), the package's own JSON schemas are
applied as well.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from latentbench._compat import text_array
from latentbench.exceptions import InputError
from latentbench.io._arrival import encoding_hint, open_unpacked, unpacked_path, unpacking
from latentbench.io.formats._common import (
    UNKNOWN_SPLIT,
    Columns,
    LoadReport,
    beside,
    coerce_score,
    load_json,
    parse_json,
    to_timestamp,
)
from latentbench.io.formats._registry import reader

__all__ = ["SCHEMA_VERSION", "validate_aggregate", "validate_instance"]

SCHEMA_VERSION = "0.3.0"
"""The Every Eval Ever schema version written."""

PATTERNS = ("**/*.jsonl", "**/*.json")

INTERACTION_TYPES = ("single_turn", "multi_turn", "agentic")
_SOURCE_TYPES = ("documentation", "evaluation_run")
_RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")
_DATA_SOURCE_TYPES = ("url", "hf_dataset", "other")
_META = "latentbench."
_AT = "_at"  # an aggregate result's place (file and index), kept beside its fields
_INSTANCE_KEYS = frozenset(
    {
        "schema_version",
        "evaluation_id",
        "model_id",
        "evaluation_name",
        "evaluation_result_id",
        "sample_id",
        "sample_hash",
        "interaction_type",
        "input",
        "output",
        "messages",
        "answer_attribution",
        "evaluation",
        "token_usage",
        "performance",
        "error",
        "metadata",
    }
)
_AGGREGATE_KEYS = frozenset(
    {
        "schema_version",
        "evaluation_id",
        "evaluation_timestamp",
        "retrieved_timestamp",
        "source_metadata",
        "eval_library",
        "model_info",
        "evaluation_results",
        "detailed_evaluation_results",
    }
)
_SAMPLES_PATH = re.compile(
    r"^data/[^/]+/[^/]+/[^/]+/[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-4[0-9A-Fa-f]{3}-[89ABab]"
    r"[0-9A-Fa-f]{3}-[0-9A-Fa-f]{12}_samples\.jsonl$"
)


# ---------------------------------------------------------------------------------- validation


def _need(obj: Any, key: str, kind: type | tuple[type, ...], loc: str, what: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise InputError(
            f"{loc}: field {what + key!r} is missing; expected an EEE {SCHEMA_VERSION} record"
        )
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
        raise InputError(
            f"{loc}: field {what + key!r}: value {_short(value)} has type "
            f"{type(value).__name__}; expected {_kind_name(kind)}"
        )
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", list: "a list", dict: "an object", bool: "a boolean"}
    # (int, float) is one kind: "a number", said once
    return " or ".join(dict.fromkeys(names.get(k, "a number") for k in _as_tuple(kind)))


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _string_map(obj: Any, loc: str, what: str) -> None:
    if obj is None:
        return
    if not isinstance(obj, dict) or not all(isinstance(v, str) for v in obj.values()):
        raise InputError(
            f"{loc}: field {what}: value {_short(obj)}; expected an object of string values"
        )


def _known_fields(record: Any, allowed: frozenset[str], loc: str, kind: str) -> None:
    """``record`` is a JSON object with no field outside ``allowed`` (EEE ``kind`` record)."""
    if not isinstance(record, dict):
        raise InputError(f"{loc}: expected a JSON object (EEE {kind} record)")
    unknown = sorted(set(record) - allowed)
    if unknown:
        raise InputError(
            f"{loc}: unknown fields {unknown}; expected only EEE {SCHEMA_VERSION} {kind} fields"
        )


def validate_instance(record: Any, loc: str) -> None:
    """Check one instance-level record against EEE 0.3.0 (required fields, types, enums).

    Raises
    ------
    InputError
        Naming ``loc``, the field, the value and what was expected.
    """
    _known_fields(record, _INSTANCE_KEYS, loc, "instance-level")
    for key in ("schema_version", "evaluation_id", "model_id", "evaluation_name", "sample_id"):
        _need(record, key, str, loc, "")
    kind = _need(record, "interaction_type", str, loc, "")
    if kind not in INTERACTION_TYPES:
        raise InputError(
            f"{loc}: field 'interaction_type': value {kind!r}; expected one of "
            f"{', '.join(INTERACTION_TYPES)}"
        )
    if kind == "single_turn":
        _need(record, "output", dict, loc, "")
    else:
        _need(record, "messages", list, loc, "")
    given = _need(record, "input", dict, loc, "")
    _need(given, "raw", str, loc, "input.")
    references = _need(given, "reference", list, loc, "input.")
    if not all(isinstance(r, str) for r in references):
        raise InputError(f"{loc}: field 'input.reference': expected a list of strings")
    attributions = _need(record, "answer_attribution", list, loc, "")
    for index, entry in enumerate(attributions):
        where = f"answer_attribution[{index}]."
        _need(entry, "turn_idx", int, loc, where)
        for key in ("source", "extracted_value", "extraction_method"):
            _need(entry, key, str, loc, where)
        _need(entry, "is_terminal", bool, loc, where)
    evaluation = _need(record, "evaluation", dict, loc, "")
    _need(evaluation, "score", (int, float), loc, "evaluation.")
    _need(evaluation, "is_correct", bool, loc, "evaluation.")
    for key in ("evaluation_result_id", "sample_hash", "error"):
        if record.get(key) is not None:
            _need(record, key, str, loc, "")
    _string_map(record.get("metadata"), loc, "'metadata'")


def validate_aggregate(doc: Any, loc: str) -> None:
    """Check one aggregate record against EEE 0.3.0 (required fields, types, enums)."""
    _known_fields(doc, _AGGREGATE_KEYS, loc, "aggregate")
    for key in ("schema_version", "evaluation_id", "retrieved_timestamp"):
        _need(doc, key, str, loc, "")
    meta = _need(doc, "source_metadata", dict, loc, "")
    for key, allowed in (
        ("source_type", _SOURCE_TYPES),
        ("evaluator_relationship", _RELATIONSHIPS),
    ):
        value = _need(meta, key, str, loc, "source_metadata.")
        if value not in allowed:
            raise InputError(
                f"{loc}: field 'source_metadata.{key}': value {value!r}; expected one of "
                f"{', '.join(allowed)}"
            )
    _need(meta, "source_organization_name", str, loc, "source_metadata.")
    library = _need(doc, "eval_library", dict, loc, "")
    _need(library, "name", str, loc, "eval_library.")
    _need(library, "version", str, loc, "eval_library.")
    info = _need(doc, "model_info", dict, loc, "")
    _need(info, "name", str, loc, "model_info.")
    _need(info, "id", str, loc, "model_info.")
    _string_map(
        _need(info, "additional_details", dict, loc, "model_info."),
        loc,
        "'model_info.additional_details'",
    )
    results = _need(doc, "evaluation_results", list, loc, "")
    for index, result in enumerate(results):
        where = f"evaluation_results[{index}]."
        _need(result, "evaluation_name", str, loc, where)
        data = _need(result, "source_data", dict, loc, where)
        _need(data, "dataset_name", str, loc, where + "source_data.")
        kind = _need(data, "source_type", str, loc, where + "source_data.")
        if kind not in _DATA_SOURCE_TYPES:
            raise InputError(
                f"{loc}: field '{where}source_data.source_type': value {kind!r}; expected one "
                f"of {', '.join(_DATA_SOURCE_TYPES)}"
            )
        _need(
            _need(result, "metric_config", dict, loc, where),
            "lower_is_better",
            bool,
            loc,
            where + "metric_config.",
        )
        _need(
            _need(result, "score_details", dict, loc, where),
            "score",
            (int, float),
            loc,
            where + "score_details.",
        )
    detail = doc.get("detailed_evaluation_results")
    if detail is not None:
        if _need(detail, "format", str, loc, "detailed_evaluation_results.") != "jsonl":
            raise InputError(f"{loc}: field 'detailed_evaluation_results.format'; expected 'jsonl'")
        path = _need(detail, "file_path", str, loc, "detailed_evaluation_results.")
        if not _SAMPLES_PATH.match(path):
            raise InputError(
                f"{loc}: field 'detailed_evaluation_results.file_path': value {path!r}; expected "
                "data/<source>/<developer>/<model>/<uuid4>_samples.jsonl"
            )


def _schema_validator(name: str) -> Any:
    """The ``every-eval-ever`` package's own JSON schema validator, when installed."""
    try:
        from importlib.resources import files

        import jsonschema  # type: ignore[import-untyped]

        text = files("every_eval_ever.schemas").joinpath(name).read_text(encoding="utf-8")
    except (ImportError, FileNotFoundError, ModuleNotFoundError):
        return None
    schema = json.loads(text)
    return jsonschema.validators.validator_for(schema)(schema)


def _package_check(validator: Any, record: Mapping[str, Any], loc: str) -> None:
    if validator is None:
        return
    error = next(iter(validator.iter_errors(record)), None)
    if error is not None:
        field = ".".join(map(str, error.absolute_path)) or "(record)"
        raise InputError(f"{loc}: field {field!r}: {error.message} (every-eval-ever schema)")


# ---------------------------------------------------------------------------------- reading


_SNIFF_KEYS = (b'"interaction_type"', b'"sample_id"')
_SNIFF_CHUNK = 1 << 20


def _is_instance_file(path: Path) -> bool:
    """Whether the first record of a ``.jsonl`` file (after blank and ``null`` lines) holds
    the keys of an instance-level record, however long that line is and whatever its
    encoding (the keys are ASCII); files that are not EEE cost one line's read. A file
    compressed on its own (``x_samples.jsonl.gz``) is looked at decompressed (a corrupt one is
    an :class:`InputError` naming it)."""
    if unpacked_path(path).suffix != ".jsonl":
        return False
    try:
        with open_unpacked(path) as handle:
            found: set[bytes] = set()
            carry = b""
            in_record = False
            while True:
                piece = handle.readline(_SNIFF_CHUNK)
                if not piece:
                    return False
                if not in_record and piece.strip() in (b"", b"null"):
                    continue  # a blank or null line before the first record
                in_record = True
                window = carry + piece
                found.update(k for k in _SNIFF_KEYS if k in window)
                if len(found) == len(_SNIFF_KEYS):
                    return True
                if piece.endswith(b"\n"):
                    return False  # the first record ended without both keys
                carry = piece[-32:]
    except OSError:
        return False


def _is_aggregate_file(path: Path) -> bool:
    if unpacked_path(path).suffix != ".json":
        return False
    try:
        with open_unpacked(path) as handle:
            head = handle.read(65536)
    except OSError:
        return False
    return b'"evaluation_results"' in head or (
        b'"evaluation_id"' in head and b'"model_info"' in head
    )


def _beside_its_aggregate(path: Path) -> bool:
    """``<uuid>_samples.jsonl`` next to its aggregate ``<uuid>.json``: an EEE samples file
    whatever its first record holds (a defect there is refused by line, never skipped). Either
    may be compressed on its own (``.gz``, ...)."""
    aggregate = _aggregate_path(path)
    return aggregate is not None and _is_aggregate_file(aggregate)


def _aggregate_path(path: Path) -> Path | None:
    """The aggregate ``<uuid>.json`` (or ``<uuid>.json.gz``, ...) beside the samples file
    ``path`` (``<uuid>_samples.jsonl``, compressed or not); None when there is none."""
    name = unpacked_path(path).name
    if not name.endswith("_samples.jsonl"):
        return None
    return beside(path.parent, name[: -len("_samples.jsonl")] + ".json")


def looks_like_eee(path: Path) -> bool:
    """An instance-level ``.jsonl`` (by its first record, or by its name beside its aggregate)
    or an aggregate ``.json`` of Every Eval Ever."""
    return _is_instance_file(path) or _beside_its_aggregate(path) or _is_aggregate_file(path)


def _aggregate_for(path: Path) -> tuple[dict[str, Any] | None, Path | None]:
    """The aggregate next to ``<uuid>_samples.jsonl`` (``<uuid>.json``), when present."""
    candidate = _aggregate_path(path)
    if candidate is None:
        return None, None
    doc = load_json(candidate)
    validate_aggregate(doc, str(candidate))
    return doc, candidate


_TIMESTAMP_RANGE = (pd.Timestamp.min.ceil("s"), pd.Timestamp.max.floor("s"))


def _epoch_timestamp(value: Any, loc: str) -> pd.Timestamp | None:
    """``evaluation_timestamp`` (seconds since the epoch as a string; an ISO date is also
    read) as a naive UTC timestamp; an unreadable or out-of-range value is an error."""
    if value in (None, ""):
        return None
    low, high = _TIMESTAMP_RANGE
    expected = f"seconds since 1970-01-01 (UTC) between {low.year} and {high.year}, or an ISO date"
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = None
    try:
        if seconds is not None:
            if not math.isfinite(seconds) or not low.timestamp() <= seconds <= high.timestamp():
                raise ValueError
            return pd.Timestamp(seconds, unit="s")
        stamp = to_timestamp(pd.Timestamp(str(value)))
    except (ValueError, TypeError, OverflowError, OSError):
        stamp = None
    if stamp is None:
        raise InputError(
            f"{loc}: field 'evaluation_timestamp': value {_short(value)}; expected {expected}"
        )
    return stamp


def _restored_trial(text: str, loc: str) -> int:
    """``metadata['latentbench.trial']``: a whole number in [0, 2**63)."""
    if not re.fullmatch(r"[0-9]{1,19}", text) or int(text) >= 2**63:
        raise InputError(
            f"{loc}: field 'metadata.latentbench.trial': value {_short(text)}; expected a "
            "whole number >= 0 (the trial index latentbench wrote)"
        )
    return int(text)


def _restored_timestamp(text: str, loc: str) -> pd.Timestamp | None:
    """``metadata['latentbench.run_timestamp']``: an ISO timestamp (naive UTC); ``NaT``
    (which earlier exports wrote for an unknown time) is missing."""
    if text == "NaT":
        return None
    try:
        stamp = to_timestamp(pd.Timestamp(text))
    except (ValueError, TypeError, OverflowError):
        stamp = None
    if stamp is None:
        raise InputError(
            f"{loc}: field 'metadata.latentbench.run_timestamp': value {_short(text)}; expected "
            "an ISO timestamp between 1677 and 2262 (the run time latentbench wrote)"
        )
    return stamp


@reader(
    "eee",
    summary="Every Eval Ever aggregate .json + instance-level _samples.jsonl (schema 0.3.0)",
    patterns=PATTERNS,
    keep=looks_like_eee,
    nothing_found="no Every Eval Ever files found (aggregate .json or instance-level .jsonl)",
    item_field="sample_id",
    packed=True,
)
def read(
    path: Path,
    report: LoadReport,
    *,
    benchmark: str | None,
    metric: Any,
    model: str | None,
) -> pd.DataFrame:
    """Read one EEE file: an instance-level ``.jsonl`` gives rows, an aggregate is checked."""
    name = unpacked_path(path).name  # x_samples.jsonl.gz is a samples file, x.json.gz too
    if name.endswith(".json"):
        return _aggregate_only(path, report)
    wanted = _wanted_metric(metric, benchmark)
    aggregate, aggregate_path = _aggregate_for(path)
    library, timestamp, results = _aggregate_context(aggregate, aggregate_path)
    validator = _schema_validator("instance_level_eval.schema.json")
    rows = _InstanceRows(path, report, benchmark, model, wanted, results, library, timestamp)
    rows.read(validator)
    if not rows.n_records:  # a copy cut at 0 bytes: no rows and no word, before
        if unpacking(path) is None:
            size = path.stat().st_size
        else:
            with open_unpacked(path) as handle:
                size = len(handle.read(1))
        what = "empty (0 bytes)" if not size else "blank lines only"
        raise InputError(
            f"{path}: the file is {what}; expected Every Eval Ever instance-level records, one "
            "JSON object per line (a copy or download that stopped? copy it again)"
        )
    report.records_read += rows.n_records
    if aggregate is None and rows.schema_versions:
        library = f"every_eval_ever {'/'.join(sorted(rows.schema_versions))}"
    frame = rows.out.frame(library, str(path), timestamp)
    if rows.restored and len(frame):
        rows.restore_columns(frame)
    _report_choices(frame, report, wanted)
    if aggregate_path is None:
        report.notes.append(
            f"{path}: no aggregate {name.replace('_samples.jsonl', '.json')} "
            "beside it; source and metric names are unknown"
        )
    return frame


def _aggregate_only(path: Path, report: LoadReport) -> pd.DataFrame:
    """Check an aggregate file; no rows (they are in its instance-level file), and the file is
    reported as skipped when that file is absent."""
    doc = load_json(path)
    validate_aggregate(doc, str(path))
    detail = doc.get("detailed_evaluation_results") or {}
    samples = f"{unpacked_path(path).stem}_samples.jsonl"
    if beside(path.parent, samples) is None:
        report.skip_file(
            path,
            "aggregate only: no instance-level records "
            f"({Path(str(detail.get('file_path', samples))).name} not found)",
        )
    return Columns().frame("every_eval_ever", str(path), None)


def _wanted_metric(metric: Any, benchmark: str | None) -> str | None:
    """The metric asked for (``metric`` or its entry for ``benchmark``, else ``"*"``): None,
    ``score`` or ``is_correct``."""
    wanted = (
        metric
        if isinstance(metric, str) or metric is None
        else metric.get(benchmark or "", metric.get("*"))
    )
    if wanted not in (None, "score", "is_correct"):
        raise InputError(f"metric={wanted!r}; EEE records give 'score' or 'is_correct'")
    return wanted


def _aggregate_context(
    aggregate: dict[str, Any] | None, aggregate_path: Path | None
) -> tuple[str, pd.Timestamp | None, dict[str, Mapping[str, Any]]]:
    """From the aggregate, when there is one: the source (``eval_library``), the run time and
    the evaluation results by id."""
    results: dict[str, Mapping[str, Any]] = {}
    if aggregate is None:
        return "every_eval_ever", None, results
    lib = aggregate["eval_library"]
    version = "" if lib["version"] == "unknown" else lib["version"]
    library = f"{lib['name']} {version}".strip()
    timestamp = _epoch_timestamp(aggregate.get("evaluation_timestamp"), str(aggregate_path))
    for index, result in enumerate(aggregate["evaluation_results"]):
        key = result.get("evaluation_result_id") or result["evaluation_name"]
        # where the result is, for a message about it (a lower-is-better metric)
        results[str(key)] = {**result, _AT: f"{aggregate_path}: evaluation_results[{index}]"}
    return library, timestamp, results


def _decode_line(raw: bytes, number: int, path: Path) -> str:
    """Line ``number`` as UTF-8 text (a byte-order mark allowed on the first); UTF-16 whose
    bytes are all below 0x80 (valid UTF-8, garbled) is refused as UTF-16 too."""
    utf16 = encoding_hint(path) if b"\x00" in raw else ""
    if utf16:
        raise InputError(
            f"{path}:{number}: not UTF-8 text (a zero byte every other byte); expected UTF-8 "
            f"JSON lines{utf16}"
        )
    try:
        return raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        hint = encoding_hint(path) or " (re-encode the file, e.g. iconv -f latin1 -t utf-8)"
        raise InputError(
            f"{path}:{number}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
            f"{exc.start + 1}); expected UTF-8 JSON lines{hint}"
        ) from None


def _record_score(
    evaluation: Mapping[str, Any],
    result: Mapping[str, Any] | None,
    wanted: str | None,
    loc: str,
) -> tuple[float | None, str]:
    """The record's score (None: missing) and its metric name (``is_correct``, or the linked
    result's ``metric_id``, else ``score``)."""
    if wanted == "is_correct":
        return float(evaluation["is_correct"]), "is_correct"
    score = coerce_score(evaluation["score"], loc, "evaluation.score")
    config = (result or {}).get("metric_config") or {}
    name = str(config.get("metric_id") or "score")
    if config.get("lower_is_better") is True:
        # an error rate or a loss: stored as it is, 0 would be the best answer to every fit
        raise InputError(
            f"{loc}: field 'evaluation.score': value {evaluation['score']!r} is metric "
            f"{name!r}, where lower is better ({(result or {}).get(_AT)}: field "
            "'metric_config.lower_is_better' is true); expected a score where higher is "
            "better (1 a correct answer), as every fit reads it: read each record's 0/1 "
            "correctness with metric='is_correct', or write the scores the other way round"
        )
    return score, name


def _result_split(result: Mapping[str, Any] | None) -> str:
    """The linked result's ``source_data.hf_split``, else the unknown split."""
    split = UNKNOWN_SPLIT
    source_data = (result or {}).get("source_data") or {}
    if source_data.get("hf_split"):
        split = str(source_data["hf_split"])
    return split


class _InstanceRows:
    """The rows of one instance-level file, with the columns our metadata restores.

    Attributes
    ----------
    out : Columns
        The canonical rows.
    extra : dict of str to list
        Per row: ``source``, ``source_file`` and ``run_timestamp`` (used when ``restored``).
    restored : bool
        Whether a record carried our ``latentbench.*`` metadata.
    n_records : int
        Records read (blank lines are not records).
    schema_versions : set of str
        The records' ``schema_version`` values.
    """

    def __init__(
        self,
        path: Path,
        report: LoadReport,
        benchmark: str | None,
        model: str | None,
        wanted: str | None,
        results: dict[str, Mapping[str, Any]],
        library: str,
        timestamp: pd.Timestamp | None,
    ) -> None:
        self.path, self.report = path, report
        self.benchmark, self.model, self.wanted = benchmark, model, wanted
        self.results, self.library, self.timestamp = results, library, timestamp
        self.out = Columns(at="line")
        self.extra: dict[str, list[Any]] = {
            c: [] for c in ("source", "source_file", "run_timestamp")
        }
        self.restored = False
        self.n_records = 0
        self.schema_versions: set[str] = set()

    def read(self, validator: Any) -> None:
        """Read, check and add every record of the file."""
        with open_unpacked(self.path) as handle:  # x_samples.jsonl.gz decompressed
            for number, raw in enumerate(handle, start=1):
                if not raw.strip():
                    continue
                line = _decode_line(raw, number, self.path)
                self.n_records += 1
                loc = f"{self.path}:{number}"
                record = parse_json(line, str(self.path), line=number, what="JSON line")
                validate_instance(record, loc)
                _package_check(validator, record, loc)
                self.schema_versions.add(record["schema_version"])
                self.add(record, number, loc)

    def add(self, record: Mapping[str, Any], number: int, loc: str) -> None:
        """Add one checked record's row (a missing score is dropped and reported)."""
        meta = record.get("metadata") or {}
        ours = {k[len(_META) :]: v for k, v in meta.items() if k.startswith(_META)}
        result = self.results.get(
            str(record.get("evaluation_result_id") or record["evaluation_name"])
        )
        score, metric_name = _record_score(record["evaluation"], result, self.wanted, loc)
        if score is None:
            self.report.drop("evaluation.score missing (NaN)")
            return
        split = _result_split(result)
        if ours:
            self.restored = True
            if self.wanted != "is_correct":
                metric_name = ours.get("metric", metric_name)
        source_model = ours.get("source_model", record["model_id"])
        original = ours.get("benchmark", record["evaluation_name"])
        self.report.rename(self.benchmark, str(original))
        self.out.add(
            self.model or record["model_id"],
            self.benchmark or original,
            str(record["sample_id"]),
            score,
            metric_name,
            ours.get("filter", "none"),
            _restored_trial(ours["trial"], loc) if "trial" in ours else 0,
            source_model,
            number,
            ours.get("item_hash", record.get("sample_hash")),
            split=ours.get("split", split),
            flag=ours.get("flag"),
        )
        self.extra["source"].append(ours.get("source", self.library))
        self.extra["source_file"].append(ours.get("source_file", str(self.path)))
        stamp = ours.get("run_timestamp")
        restored_stamp = _restored_timestamp(stamp, loc) if stamp else None
        # a record with our metadata and no run time had none (the aggregate's time is
        # the latest of its group)
        self.extra["run_timestamp"].append(restored_stamp if ours else self.timestamp)

    def restore_columns(self, frame: pd.DataFrame) -> None:
        """Set the per-row ``source``, ``source_file`` and ``run_timestamp`` our metadata
        gave, and ``_file`` (the file read)."""
        frame["source"] = text_array(self.extra["source"])
        frame["source_file"] = text_array(self.extra["source_file"])
        stamps = pd.to_datetime(pd.Series(self.extra["run_timestamp"], dtype=object), utc=True)
        frame["run_timestamp"] = stamps.dt.tz_localize(None).astype("datetime64[us]").to_numpy()
        frame["_file"] = text_array([str(self.path)] * len(frame))


def _report_choices(frame: pd.DataFrame, report: LoadReport, wanted: str | None) -> None:
    """Record each benchmark's metric (given or the default) and filter (the only one)."""
    for name in frame["benchmark"].unique():
        report.choose(
            str(name),
            "metric",
            ", ".join(sorted(set(frame["metric"]))),
            "given" if wanted else "default",
        )
        report.choose(str(name), "filter", "none", "only")


# ---------------------------------------------------------------------------------- writing
