"""The canonical long table, score coercion and the load report shared by every reader.

The canonical long table (``docs/formats.md``) has one row per observation. Its unique key is
(``model``, ``benchmark``, ``item``, ``metric``, ``filter``, ``trial``, ``split``). The tool
and its version (``source``) are provenance, not identity: the same result written by two tool
versions, or as an Inspect ``.eval`` and its ``.json`` conversion, is one observation; a
different value for the same key is a conflict (:func:`resolve_duplicates`).
"""

from __future__ import annotations

import io
import json
import math
import os
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pandas as pd
import pyarrow as pa

from latentbench._checks import bounded_score, json_problem
from latentbench._compat import text_array
from latentbench.exceptions import InputError
from latentbench.io._arrival import (
    encoding_hint,
    open_unpacked,
    packed_advice,
    packed_kind,
    tilde_hint,
    undecodable_at,
    unpacking,
)
from latentbench.io.formats._report import LoadReport, same_weights, shown_revision

__all__ = [
    "CANONICAL_COLUMNS",
    "CANONICAL_SCHEMA",
    "KEY_COLUMNS",
    "TEXT_COLUMNS",
    "CanonicalRow",
    "LoadReport",
]


class CanonicalRow(TypedDict):
    """One row of the canonical long table (``docs/formats.md``).

    A (model, item) pair that was not observed has no row: missing is never 0.
    """

    model: str
    """Canonical model id (Hugging Face repo id where there is one), from the tool's metadata
    before file or directory names."""
    benchmark: str
    """Suite/task as named by the source, e.g. ``leaderboard_bbh_navigate`` or
    ``mmlu:subject=anatomy,method=multiple_choice_joint``."""
    item: str
    """Item id within the benchmark, as given by the source and stringified (``doc_id``,
    ``doc.id``, HELM ``instance_id``, Inspect ``sample.id``, OpenCompass position)."""
    score: float
    """The chosen metric after coercion, in [0, 1]; non-binary values are kept, not rounded."""
    metric: str
    """The metric the score comes from: ``acc``, ``acc_norm``, ``exact_match``,
    ``extractive_match``, ``correct``; for Inspect the key of the score value (``value`` for a
    scalar)."""
    filter: str
    """lm-eval filter, Inspect scorer name or HELM perturbation; ``"none"`` if none."""
    trial: int
    """Epoch / ``train_trial_index`` / replica index; 0 when single."""
    split: str
    """The dataset split the item belongs to (``test``, ``valid``, ...) where the source
    records it (HELM stats, lm-eval ``test_split``/``validation_split``), else ``unknown``."""
    source: str
    """Tool and version when the files state it, e.g. ``lm-eval 0.4.9``; else the tool name."""
    source_file: str
    """File the row came from (absolute path)."""
    run_timestamp: datetime | None
    """When the run was made (UTC, naive), from the file name or header; None when unknown."""
    item_hash: str | None
    """Content hash of the item when the source gives one (lm-eval ``doc_hash``)."""
    source_model: str
    """The model name exactly as the tool wrote it (directory name, run-name argument, ...)."""
    flag: str | None
    """Why a row is not a plain observation, e.g. ``errored sample scored 0`` (Inspect
    ``errored="zero"``) or ``mean of 2 conflicting values`` (``duplicates="mean"``); else None."""


CANONICAL_COLUMNS: tuple[str, ...] = tuple(CanonicalRow.__annotations__)
"""Column order of the canonical long table."""

KEY_COLUMNS: tuple[str, ...] = (
    "model",
    "benchmark",
    "item",
    "metric",
    "filter",
    "trial",
    "split",
)
"""The unique key of one observation, whatever tool or tool version wrote it."""

UNKNOWN_SPLIT = "unknown"
"""``split`` when the source does not record which split an item comes from."""

DUPLICATE_POLICIES: tuple[str, ...] = ("error", "latest", "mean")
"""What to do with one key given different values: raise (default), keep the latest run,
or keep the mean (flagged)."""

SCORE_TOLERANCE = 1e-9
"""Two scores closer than this are the same value (duplicates, not a conflict)."""

CANONICAL_SCHEMA = pa.schema(
    [
        pa.field("model", pa.string(), nullable=False),
        pa.field("benchmark", pa.string(), nullable=False),
        pa.field("item", pa.string(), nullable=False),
        pa.field("score", pa.float64(), nullable=False),
        pa.field("metric", pa.string(), nullable=False),
        pa.field("filter", pa.string(), nullable=False),
        pa.field("trial", pa.int64(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("run_timestamp", pa.timestamp("us")),
        pa.field("item_hash", pa.string()),
        pa.field("source_model", pa.string(), nullable=False),
        pa.field("flag", pa.string()),
    ]
)
"""Arrow schema of the canonical long table (used for the bulk insert into the store)."""

TEXT_COLUMNS = tuple(f.name for f in CANONICAL_SCHEMA if pa.types.is_string(f.type))
"""The string columns of the canonical long table."""

# ---------------------------------------------------------------------------------- locations


def where(file: str | Path, line: int | None = None, record: int | str | None = None) -> str:
    """``file:line`` or ``file, record N`` for error messages."""
    if line is not None:
        return f"{file}:{line}"
    if record is not None:
        return f"{file}, record {record}"
    return str(file)


# ---------------------------------------------------------------------------------- coercion

_INSPECT_STRINGS = {"c": 1.0, "i": 0.0, "p": 0.5, "n": 0.0, "yes": 1.0, "no": 0.0}
_BOOL_STRINGS = {"true": 1.0, "false": 0.0}

PERPLEXITY_METRICS = frozenset(
    {"perplexity", "word_perplexity", "byte_perplexity", "bits_per_byte", "ppl", "likelihood"}
)
"""Metric names whose values are not item scores (rejected when chosen)."""


def coerce_score(value: Any, loc: str, field_name: str, *, inspect: bool = False) -> float | None:
    """Convert one raw metric value to a score in [0, 1], or None when it is missing.

    Accepted: bools (0/1), finite numbers in [0, 1] (a float rounding past 0 or 1, within
    :data:`~latentbench._checks.SCORE_ROUNDING`, is the bound), numeric strings and
    ``"True"``/``"False"`` (lm-eval stringifies), and with ``inspect=True`` the Inspect
    conventions ``C``/``I``/``P``/``N`` (1, 0, 0.5, 0) and ``yes``/``no``. ``None`` and NaN are
    missing. Anything else raises :class:`InputError` naming ``loc``, the field, the value and
    what was expected.
    """
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip().lower()
        if inspect and text in _INSPECT_STRINGS:
            return _INSPECT_STRINGS[text]
        if text in _BOOL_STRINGS:
            return _BOOL_STRINGS[text]
        try:
            number = float(text)
        except ValueError:
            expected = (
                "a number, a bool or one of C, I, P, N, yes, no"
                if inspect
                else "a number in [0, 1], a bool or a numeric string"
            )
            raise InputError(
                f"{loc}: field {field_name!r}: value {value!r} is a string that is not a "
                f"score; expected {expected}"
            ) from None
    elif isinstance(value, (list, tuple, np.ndarray)):
        raise InputError(
            f"{loc}: field {field_name!r}: value {_short(value)} is a list; expected a single "
            "score (lists come from dataset-level metrics such as f1, mcc, brier_score or "
            "per-instruction metrics such as IFEval inst_level_*; choose another metric)"
        )
    elif isinstance(value, dict):
        raise InputError(
            f"{loc}: field {field_name!r}: value {_short(value)} is a mapping; expected a "
            f"single score (choose one of its keys: {sorted(map(str, value))})"
        )
    else:
        raise InputError(
            f"{loc}: field {field_name!r}: value {_short(value)} has type "
            f"{type(value).__name__}; expected a number in [0, 1]"
        )
    if math.isnan(number):
        return None
    score = bounded_score(number)  # a rounding past 0 or 1 (1.0000000000000002) is the bound
    if score is None:
        shown = value.item() if isinstance(value, np.generic) else value  # 2.0, not np.float64
        raise InputError(
            f"{loc}: field {field_name!r}: value {shown!r} is outside [0, 1]; expected a score "
            "in [0, 1] (rescale percentages or perplexities before ingesting)"
        )
    return score


def is_scalar_score(value: Any) -> bool:
    """True when ``value`` looks like an item score (bool, number or numeric string)."""
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        return True
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _BOOL_STRINGS:
            return True
        try:
            float(text)
        except ValueError:
            return False
        return True
    return False


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------- choices

Choice = str | Mapping[str, str] | None
"""A metric or filter choice: one name for every benchmark, or a mapping benchmark -> name."""


def requested(choice: Choice, benchmark: str) -> str | None:
    """The name asked for ``benchmark`` (a mapping may also hold the key ``"*"``)."""
    if choice is None or isinstance(choice, str):
        return choice
    if benchmark in choice:
        return choice[benchmark]
    return choice.get("*")


def resolve(
    kind: str,
    choice: Choice,
    benchmark: str,
    available: Sequence[str],
    loc: str,
    *,
    default: str | None = None,
    keyword: str | None = None,
) -> tuple[str, str]:
    """Pick a metric/filter/scorer for one benchmark, refusing to guess.

    Returns ``(name, how)`` where ``how`` is ``"given"``, ``"default"`` or ``"only"``.
    ``keyword`` is the argument of ``read_results`` that makes the choice (default
    ``kind``; Inspect's scorer is ``filter``): messages name it as Python spells it
    (``metric=NAME``), and the command line rewrites that into its flag (``--metric NAME``).

    Raises
    ------
    InputError
        When the requested name is not available, or nothing was requested, no documented
        default applies and several names are available; the message lists the choices.
    """
    keyword = keyword or kind
    names = sorted(dict.fromkeys(available))
    wanted = requested(choice, benchmark)
    if wanted is not None:
        if wanted not in names and isinstance(choice, str) and len(names) == 1:
            # a name given for every benchmark, not offered by this one: its only choice is
            # taken; read_results raises if no benchmark at all offers the name (a typo)
            return names[0], "only"
        if wanted not in names:
            task, eq, name = wanted.partition("=")
            # the command line's TASK=NAME given to Python as one string
            hint = (
                f"; expected a name, or TASK=NAME as a mapping: {keyword}={{{task!r}: {name!r}}}"
                if isinstance(choice, str) and eq and name in names
                else ""
            )
            raise InputError(
                f"{loc}: unknown {kind} {wanted!r} for {benchmark!r}; available: "
                f"{', '.join(names) if names else '(none)'}{hint}"
            )
        return wanted, "given"
    if default is not None and default in names:
        return default, "default"
    if len(names) == 1:
        return names[0], "only"
    if not names:
        raise InputError(f"{loc}: no usable {kind} found for {benchmark!r}")
    raise InputError(
        f"{loc}: {benchmark!r} has several {kind}s ({', '.join(names)}); choose one with "
        f"{keyword}=NAME or {keyword}={{{benchmark!r}: NAME}}"
    )


def lower_is_better_error(
    loc: str, what: str, name: str, why: str, available: Sequence[str]
) -> InputError:
    """The refusal of ``what`` (``stat``, ``metric``) ``name``, one where lower is better
    (``why``: what marks it so), asked for or the only one: every fit reads 1 as a correct
    answer, so stored as it is the models' order would be reversed without a word."""
    return InputError(
        f"{loc}: {what} {name!r} is one where lower is better ({why}); expected a score where "
        "higher is better (1 a correct answer), as every fit reads it: choose one of "
        f"{', '.join(sorted(available)) or '(none)'}, or write the scores the other way round"
    )


def only_lower_is_better_error(
    loc: str, what: str, benchmark: str, lower: Mapping[str, str]
) -> InputError:
    """The refusal of a benchmark whose only item scores are ones where lower is better
    (``lower``: name -> what marks it so), where no name was asked for."""
    said = "; ".join(f"{n!r}: {why}" for n, why in sorted(lower.items()))
    return InputError(
        f"{loc}: no {what} of {benchmark!r} is a score where higher is better: its item scores "
        f"are ones where lower is better ({said}); expected a score where higher is better "
        "(1 a correct answer), as every fit reads it: write the scores the other way round"
    )


def also_lower_is_better(error: InputError, what: str, name: str, why: str) -> InputError:
    """``error`` (a value of ``name`` that is no score: outside [0, 1], a list) with the word
    that ``name`` is one where lower is better too, which no rescaling changes."""
    return InputError(
        f"{error}; and {what} {name!r} is one where lower is better ({why}): rescaled to "
        "[0, 1] it would still read reversed, as every fit reads 1 as a correct answer"
    )


def offered_metrics(
    loc: str,
    name: str,
    wanted: str | None,
    available: Sequence[str],
    lower: Mapping[str, str],
    check: Callable[[str], None],
) -> list[str]:
    """The metrics of ``available`` that are offered as scores (not in ``lower``: metric ->
    what marks it lower-is-better). A lower-is-better metric asked for (``wanted``), or the
    only metric, is refused after ``check`` (which raises for a value of it that is no score:
    that refusal comes first, saying lower is better too); a benchmark whose metrics are all
    lower-is-better, with none asked for among them, is refused naming them. The lm-eval and
    lighteval readers' rule; benchmark ``name``, file ``loc``."""
    offered = [m for m in available if m not in lower]
    present = [m for m in available if m in lower]
    the_one = wanted if wanted is not None and wanted in lower else None
    if the_one is None and not offered and len(present) == 1:
        the_one = present[0]  # the only metric: as if asked for
    if the_one is not None:
        try:
            check(the_one)
        except InputError as error:  # e.g. mae's inf: no score, and lower is better as well
            raise also_lower_is_better(error, "metric", the_one, lower[the_one]) from None
        if the_one == wanted:
            raise lower_is_better_error(loc, "metric", wanted, lower[wanted], offered)
    if present and not offered and (wanted is None or wanted not in available):
        raise only_lower_is_better_error(loc, "metric", name, {m: lower[m] for m in present})
    return offered


# ---------------------------------------------------------------------------------- frames


class Columns:
    """Column-wise accumulator for the rows of one file (no per-row dicts).

    The per-file constants (``source``, ``source_file``, ``run_timestamp``) are broadcast when
    :meth:`frame` is called. ``record`` keeps the line or record number for error messages;
    ``at`` says which (``"line"``: ``file:N``; ``"record"``: ``file, record N``), and
    ``members`` (Inspect ``.eval``) holds the archive member of each row instead.
    """

    def __init__(self, at: str = "record", split: str = UNKNOWN_SPLIT) -> None:
        self.at = at
        self.default_split = split
        self.model: list[str] = []
        self.benchmark: list[str] = []
        self.item: list[str] = []
        self.score: list[float] = []
        self.metric: list[str] = []
        self.filter: list[str] = []
        self.trial: list[int] = []
        self.split: list[str] | None = None
        self.item_hash: list[str | None] = []
        self.source_model: list[str] = []
        self.record: list[int] = []
        self.flag: list[str | None] | None = None
        self.members: list[str] | None = None

    def add(
        self,
        model: str,
        benchmark: str,
        item: str,
        score: float,
        metric: str,
        filter_: str,
        trial: int,
        source_model: str,
        record: int,
        item_hash: str | None = None,
        *,
        split: str | None = None,
        flag: str | None = None,
        member: str | None = None,
    ) -> None:
        n = len(self.score)
        self.model.append(model)
        self.benchmark.append(benchmark)
        self.item.append(item)
        self.score.append(score)
        self.metric.append(metric)
        self.filter.append(filter_)
        self.trial.append(trial)
        self.item_hash.append(item_hash)
        self.source_model.append(source_model)
        self.record.append(record)
        # rarely used columns are only materialised once a row sets them
        if split is not None or self.split is not None:
            if self.split is None:
                self.split = [self.default_split] * n
            self.split.append(split if split is not None else self.default_split)
        if flag is not None or self.flag is not None:
            if self.flag is None:
                self.flag = [None] * n
            self.flag.append(flag)
        if member is not None or self.members is not None:
            if self.members is None:
                self.members = [""] * n
            self.members.append(member or "")

    def __len__(self) -> int:
        return len(self.score)

    def frame(self, source: str, source_file: str, run_timestamp: Any) -> pd.DataFrame:
        n = len(self.score)
        data = {
            "model": text_array(self.model),
            "benchmark": text_array(self.benchmark),
            "item": text_array(self.item),
            "score": np.asarray(self.score, dtype=np.float64),
            "metric": text_array(self.metric),
            "filter": text_array(self.filter),
            "trial": np.asarray(self.trial, dtype=np.int64),
            "split": (
                text_array(self.split)
                if self.split is not None
                else constant_text(self.default_split, n)
            ),
            "source": constant_text(source, n),
            "source_file": constant_text(source_file, n),
            "run_timestamp": pd.Series([to_timestamp(run_timestamp)] * n, dtype="datetime64[us]"),
            "item_hash": text_array(self.item_hash),
            "source_model": text_array(self.source_model),
            "flag": (text_array(self.flag) if self.flag is not None else constant_text(None, n)),
            "_record": np.asarray(self.record, dtype=np.int64),
            "_at": constant_text(self.at, n),
        }
        if self.members is not None:
            data["_member"] = text_array(self.members)
        return pd.DataFrame(data)


def constant_text(value: str | None, n: int) -> pd.api.extensions.ExtensionArray:
    """``n`` copies of one string (or missing) as a string array, without a Python list.

    A value from the system (a file's path or name) under a locale that is not UTF-8 spells
    its non-ASCII bytes as surrogate escapes, which Arrow refuses: it is kept as the UTF-8
    text of those bytes (``é``, the file's name as the user sees it)."""
    if value is not None and not value.isascii():
        value = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text_array([value]).repeat(n)


PRIVATE_COLUMNS = ("_record", "_at", "_member", "_file")
"""Per-row locations for error messages; dropped before a frame leaves the readers
(``_file``: the file read, when ``source_file`` is provenance restored from the records)."""


def location(row: Mapping[Hashable, Any]) -> str:
    """Where one row of a reader frame came from: ``file:line``, ``file, row N`` (a Parquet
    table, 1-based), ``file, record N`` or ``file: member samples/...`` (Inspect ``.eval``)."""
    read = row.get("_file")
    file = read if isinstance(read, str) and read else row["source_file"]
    member = row.get("_member")
    if isinstance(member, str) and member:
        return f"{file}: member {member}"
    record = row.get("_record")
    if record is None or (isinstance(record, float) and math.isnan(record)):
        return str(file)
    if row.get("_at") == "line":
        return f"{file}:{int(record)}"
    if row.get("_at") == "row":  # a Parquet table's 1-based row
        return f"{file}, row {int(record)}"
    return where(file, record=int(record))


def empty_frame() -> pd.DataFrame:
    """A canonical frame with no rows."""
    return Columns().frame("", "", None).drop(columns=["_record", "_at"])


def to_timestamp(value: Any) -> pd.Timestamp | None:
    """A naive UTC timestamp from a datetime, an ISO string or None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError):
        return None
    if stamp is pd.NaT:
        return None
    if stamp.tzinfo is not None:
        stamp = stamp.tz_convert(UTC).tz_localize(None)
    return stamp


_DASHED_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})(\.\d+)?$")


def parse_dashed_iso(text: str) -> pd.Timestamp | None:
    """Parse ``2024-05-01T12-30-45.123456`` (ISO with ``:`` replaced by ``-``)."""
    match = _DASHED_TIME.match(text)
    if not match:
        return to_timestamp(text)
    day, hh, mm, ss, frac = match.groups()
    return to_timestamp(f"{day}T{hh}:{mm}:{ss}{frac or ''}")


def finish(
    frames: list[pd.DataFrame],
    duplicates: str = "error",
    report: LoadReport | None = None,
    *,
    named: bool = False,
    item_field: str = "item",
) -> pd.DataFrame:
    """Concatenate per-file frames and resolve repeated keys (:func:`resolve_duplicates`),
    once :func:`refuse_blank_ids` has checked the ids.

    Parameters
    ----------
    frames : list of DataFrame
        Per-file frames with the canonical columns plus the private location columns.
    duplicates : {"error", "latest", "mean"}
        What to do with one key given different values.
    report : LoadReport, optional
        Receives the counts of rows merged away.
    named : bool
        Whether every row was given one model name (``model=``), as
        :func:`resolve_duplicates` takes it.
    item_field : str
        The field of the files that the item ids come from, as errors name it.
    """
    frames = [f for f in frames if len(f)]
    if not frames:
        return empty_frame()
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    refuse_blank_ids(frame, item_field)
    frame = resolve_duplicates(frame, duplicates, report, named=named)
    private = [c for c in PRIVATE_COLUMNS if c in frame.columns]
    return frame.drop(columns=private).reset_index(drop=True)


def refuse_blank_ids(frame: pd.DataFrame, item_field: str = "item") -> None:
    """Refuse an empty item or model id, naming its first record and how many there are.

    A reader keeps ids as the files give them; records whose id a tool left empty (a
    ``Doc.id`` of ``""``, a sample id never set) would all be one item, merged as "the same
    observation" or reported as a conflict whose suggested ``duplicates="mean"`` would
    average different items. An id of spaces or other invisible characters is an id, kept
    as given (the store and an Every Eval Ever export keep it); a table refuses it
    (:mod:`._table`), where it is a cell left blank by hand.
    """
    for column, field_name in (("item", item_field), ("model", "model")):
        blank = (frame[column] == "").to_numpy(dtype=bool, na_value=False)
        if blank.any():
            k = int(np.flatnonzero(blank)[0])
            n = int(blank.sum())
            others = f" (and in {n - 1:,} more rows)" if n > 1 else ""
            raise InputError(
                f"{location(frame.iloc[k].to_dict())}: field {field_name!r}: {column} id '' is "
                f"empty{others}; expected an id (records with empty ids would read as one "
                f"{column}): give each record its own id in the files"
            )


def _describe_key(row: Mapping[Hashable, Any]) -> str:
    return (
        f"model {row['model']!r}, benchmark {row['benchmark']!r}, item {row['item']!r}, "
        f"metric {row['metric']!r}, filter {row['filter']!r}, trial {int(row['trial'])}, "
        f"split {row['split']!r}"
    )


def _varying(frame: pd.DataFrame, keys: list[str]) -> list[str]:
    """The ``keys`` of ``frame`` that are not one value in every row (a column a reader
    filled with its benchmark, metric or split name), at least one: rows equal on those are
    equal on all of ``keys``, and grouping 24M rows by fewer columns holds fewer codes."""
    varying = []
    for key in keys:
        column = frame[key]
        first = column.iloc[0] if len(column) else None
        same = first is not None and not pd.isna(first) and not column.isna().any()
        same = same and bool((column == first).all())
        if not same:
            varying.append(key)
    return varying or keys[:1]


def resolve_duplicates(
    frame: pd.DataFrame,
    duplicates: str = "error",
    report: LoadReport | None = None,
    *,
    named: bool = False,
    averaged: list[pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """One row per key (:data:`KEY_COLUMNS`); the tool version is provenance, not identity.

    Rows repeating a key with the same score (within :data:`SCORE_TOLERANCE`) are one
    observation: the first is kept (``.eval`` and ``.json`` of one log, the same run read by two
    tool versions). Rows with different scores are a conflict:

    - ``"error"``: :class:`InputError` naming both locations and both scores;
    - ``"latest"``: the row with the latest ``run_timestamp`` wins (ties: the later file);
    - ``"mean"``: one row with the mean score, flagged ``mean of N conflicting values``.

    Nothing is averaged unless ``duplicates="mean"`` is asked for. With ``named`` (every row
    was given one model name, ``model=``), a conflict between rows the files give to two
    models names them and the cause, instead of advising ``latest`` or ``mean`` (which would
    keep one model's answer, or mix two models'). ``averaged`` (or else ``report``'s) receives
    the rows that ``"mean"`` averaged (key columns, ``score``, ``source``, ``source_file``), which
    :meth:`~latentbench.io.Store.ingest` records as the values of the mean (``merged_values``).
    """
    if duplicates not in DUPLICATE_POLICIES:
        raise InputError(
            f"duplicates={duplicates!r}; expected one of {', '.join(DUPLICATE_POLICIES)}"
        )
    keys = list(KEY_COLUMNS)
    dup = frame.duplicated(_varying(frame, keys), keep=False).to_numpy()
    if not dup.any():
        return frame
    sub = frame.loc[dup]
    group = sub.groupby(keys, sort=False, dropna=False)["score"]
    spread = (group.transform("max") - group.transform("min")).to_numpy()
    conflicting = spread > SCORE_TOLERANCE
    same_index = sub.index[~conflicting]
    # identical values: keep the first row of each key
    same_rows = frame.loc[same_index]
    drop_same = same_rows.duplicated(keys, keep="first")
    n_same = int(drop_same.sum())
    frame = frame.drop(index=drop_same.index[drop_same.to_numpy()])
    if report is not None:
        # a repeat inside the file that holds the kept row, or one from another file
        in_file = np.zeros(len(same_rows), dtype=bool)
        if "source_file" in same_rows:
            group_files = same_rows.groupby(keys, sort=False, dropna=False)["source_file"]
            kept_file = group_files.transform("first")
            in_file = (same_rows["source_file"] == kept_file).to_numpy(dtype=bool)
        n_in_file = int((drop_same.to_numpy() & in_file).sum())
        report.drop("same observation repeated in one file (kept once)", n_in_file)
        report.drop(
            "same observation in another file or tool version (kept once)", n_same - n_in_file
        )
    if not conflicting.any():
        return frame
    bad = sub.loc[conflicting].sort_values(keys, kind="stable")
    if duplicates == "error":
        first = bad.iloc[0].to_dict()
        # the first row of the same key whose score differs (rows in between may repeat the
        # first's value: naming one of those said 'different scores (0.0 and 0.0)')
        group_ids = bad.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
        same_key = group_ids == group_ids[0]
        differs = np.abs(bad["score"].to_numpy(dtype=float) - float(first["score"]))
        other = bad.iloc[int(np.flatnonzero(same_key & (differs > SCORE_TOLERANCE))[0])].to_dict()
        advice = (
            'choose duplicates="latest" or duplicates="mean" to resolve conflicts'
            if not named or first["source_model"] == other["source_model"]
            else f"the files name the models {str(first['source_model'])!r} and "
            f"{str(other['source_model'])!r}; model=NAME gave every row one name: read each "
            "model's files on their own"
        )  # (latest or mean would keep one model's answer, or mix two models', unsaid)
        advice = _other_weights(report, first, other) or advice  # checkpoints: model=NAME
        raise InputError(
            f"{location(first)} and {location(other)} give different scores "
            f"({float(first['score'])!r} and {float(other['score'])!r}) for "
            f"{_describe_key(first)}; expected one value per key ({advice})"
        )
    n_conflicting = len(bad)
    if duplicates == "latest":
        ordered = frame.assign(_order=np.arange(len(frame))).sort_values(
            ["run_timestamp", "_order"], kind="stable", na_position="first"
        )
        latest = ordered.drop_duplicates(keys, keep="last").index
        if report is not None:
            _note_untimed_latest(bad, latest, keys, report)
        frame = frame.loc[frame.index.isin(latest)]
        if report is not None:
            n_keys = bad.groupby(keys, sort=False).ngroups
            report.drop(
                "conflicting value replaced by a later run (--duplicates latest)",
                n_conflicting - n_keys,
            )
        return frame
    # mean
    if "source_file" in bad:
        # a row repeated in its own file (same key, same score) is one observation, as when
        # nothing conflicts and as the store counts a file's values (merged_values: one per
        # file and score); it was one more value of the mean (0 with a file's 1 and 1 gave
        # 2/3 read together, 1/2 ingested one file after the other)
        ordered = bad.sort_values([*keys, "source_file", "score"], kind="stable")
        in_file = ordered.duplicated([*keys, "source_file"]).to_numpy()
        close = (ordered["score"].diff().abs() <= SCORE_TOLERANCE).to_numpy()
        repeats = ordered.index[in_file & close]
        if len(repeats):
            bad = bad.drop(index=repeats)
            frame = frame.drop(index=repeats)
            if report is not None:
                report.drop("same observation repeated in one file (kept once)", len(repeats))
    n_conflicting = len(bad)
    if averaged is None and report is not None:
        averaged = report._averaged
    if averaged is not None:  # the values of each mean, so that the store keeps them
        averaged.append(bad[[*keys, "score", "source", "source_file"]].reset_index(drop=True))
    means = bad.groupby(keys, sort=False, dropna=False)["score"].agg(["mean", "size"])
    firsts = bad.drop_duplicates(keys, keep="first").set_index(keys)
    firsts["score"] = means["mean"]
    firsts["flag"] = [f"mean of {int(n)} conflicting values" for n in means["size"]]
    merged = firsts.reset_index()[frame.columns]
    frame = pd.concat([frame.drop(index=bad.index), merged], ignore_index=True)
    if report is not None:
        report.drop(
            "conflicting value averaged into one flagged row (--duplicates mean)",
            n_conflicting - len(merged),
        )
        report.flag("mean of conflicting values (--duplicates mean)", len(merged))
    return frame


def _other_weights(
    report: LoadReport | None, first: Mapping[Hashable, Any], other: Mapping[Hashable, Any]
) -> str | None:
    """The advice for a conflict between the runs of two revisions of one model's weights
    that lm-eval names alike (``LoadReport.revisions``), or None."""
    known = report.revisions if report is not None else {}
    files = [str(row.get("source_file")) for row in (first, other)]
    if any(f not in known for f in files):
        return None
    if same_weights(known[files[0]]) == same_weights(known[files[1]]):  # none and 'main'
        return None
    a, b = (shown_revision(known[f]) for f in files)
    return (
        f"the runs name other weights in 'config.model_args' ({a} and {b}), which lm-eval "
        "names as one model: if they are two models (checkpoints of one), read each run with "
        'model=NAME; duplicates="latest" or duplicates="mean" would keep one checkpoint\'s '
        "answer or mix both"
    )


def _note_untimed_latest(
    bad: pd.DataFrame,
    latest: pd.Index,
    keys: list[str],
    report: LoadReport,
) -> None:
    """Say in ``report`` where ``duplicates="latest"`` chose by reading order: conflicting
    rows whose run times do not tell them apart (none recorded, as in HELM files, or one
    time twice), where the row read last won (a folder's files in path order, so suite
    ``v9`` after ``v10``)."""
    stamps = bad["run_timestamp"].astype("datetime64[us]").to_numpy().view(np.int64)  # NaT: min
    top = (
        pd.Series(stamps, index=bad.index)
        .groupby([bad[k] for k in keys], sort=False, dropna=False)
        .transform("max")
    )
    at_top = bad.loc[stamps == top.to_numpy()]
    tied = at_top.loc[at_top.duplicated(keys, keep=False)]
    if tied.empty:
        return
    n_keys = int(tied.drop_duplicates(keys).shape[0])
    won = tied.loc[tied.index.isin(latest)].iloc[0]
    lost = tied.loc[
        (tied[keys] == won[keys]).all(axis=1).to_numpy() & ~tied.index.isin(latest)
    ].iloc[0]
    report.notes.append(
        f"duplicates='latest': {n_keys:,} conflicting key{' has' if n_keys == 1 else 's have'} "
        f"no run time that tells {'its' if n_keys == 1 else 'their'} rows apart; the row read "
        f"last won (files in the order given, a folder's in path order), e.g. "
        f"{location(won.to_dict())} over {location(lost.to_dict())}: give the later run's "
        "files alone, or after the others, to keep its scores"
    )


# ---------------------------------------------------------------------------------- files


def expand(
    paths: Iterable[str | Path], patterns: Sequence[str], *, shown: Sequence[str] | None = None
) -> list[Path]:
    """Files named directly plus files under directories matching any glob in ``patterns``.

    Raises :class:`InputError` for a path that does not exist or a directory with no match
    (naming the globs ``shown``, by default ``patterns``).
    """
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted({p for pattern in patterns for p in _glob(path, pattern) if p.is_file()})
            if not found:
                raise InputError(
                    f"{path}: no result files found (looked for "
                    f"{', '.join(patterns if shown is None else shown)})"
                )
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise InputError(f"{path}: no such file or directory{tilde_hint(path)}")
    unique: dict[Path, Path] = {}
    for p in out:
        unique.setdefault(p.resolve(), _as_named(p))
    return list(unique.values())


def _as_named(path: Path) -> Path:
    """The absolute path a reader reads ``path`` by: the real file, unless ``path`` is a
    symbolic link named otherwise than its target (the Hugging Face hub cache links
    ``samples_<task>_<date>.jsonl`` to ``blobs/<hash>``), whose name and folder carry the task,
    the date and the run: then the link, made absolute."""
    real = path.resolve()
    return real if real.name == path.name else Path(os.path.abspath(path))


def _glob(folder: Path, pattern: str) -> Iterable[Path]:
    """``folder.glob(pattern)``, except that ``**/NAME`` also descends into folders that are
    symbolic links (a results folder often links each model's run in; ``Path.glob`` before
    Python 3.13 does not follow them), each real folder once (a link back up is no cycle)."""
    if not pattern.startswith("**/") or "/" in pattern[3:]:
        return folder.glob(pattern)
    import fnmatch

    name, seen, found = pattern[3:], set(), []
    for root, dirs, files in os.walk(folder, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        found += [Path(root) / f for f in sorted(files) if fnmatch.fnmatch(f, name)]
    return found


def parse_json(
    text: str | bytes, at: str, *, line: int | None = None, what: str = "JSON", hint: str = ""
) -> Any:
    """``json.loads(text)``; a syntax error is an :class:`InputError` naming the place.

    The message reads ``<at>:<line>: invalid <what> (<reason>, column <c>); <hint>``, where
    ``line`` is the error's line in ``text`` unless the caller gives the line ``text`` is.
    """
    tail = f"; {hint}" if hint else ""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{at}:{exc.lineno if line is None else line}: invalid {what} ({exc.msg}, column "
            f"{exc.colno}){tail}"
        ) from None
    except (RecursionError, ValueError) as exc:  # nested too deeply, or a huge integer
        place = at if line is None else f"{at}:{line}"
        expected = (
            "records nested at most a few hundred levels"
            if isinstance(exc, RecursionError)
            else "numbers of ordinary size"
        )
        raise InputError(
            f"{place}: invalid {what} ({json_problem(exc)}); expected {expected}{tail}"
        ) from None


def load_json(path: Path) -> Any:
    """Parse a JSON file (a byte-order mark before it is skipped; a file compressed on its own,
    ``x.json.gz``, decompressed); a syntax error names the file, line and column, and an
    archive or a UTF-16 file says so."""
    kind = packed_kind(path)
    if kind is not None and unpacking(path) is None:
        raise InputError(packed_advice(path, kind, "a JSON file"))
    try:
        with io.TextIOWrapper(open_unpacked(path), encoding="utf-8-sig") as handle:
            text = handle.read()
        utf16 = encoding_hint(path) if "\x00" in text else ""
        if utf16:  # UTF-16 of characters whose bytes are all ASCII: valid UTF-8, garbled
            raise InputError(f"{path}: not UTF-8 text (a zero byte every other byte){utf16}; "
                             "expected a JSON file")  # fmt: skip
        if not text.strip():
            raise InputError(
                f"{path}: the file is empty{' (0 bytes)' if not text else ''}; expected a JSON "
                "file (a copy or download that stopped? copy it again)"
            )
        cut = (
            "the file ends mid-document: it seems cut short (a run killed while writing it, a "
            "copy that stopped); expected a whole JSON file: write or copy it again"
            if text.rstrip()[-1:] not in ("}", "]")  # a JSON file of results ends so
            else ""
        )
        return parse_json(text, str(path), hint=cut)
    except UnicodeDecodeError:  # the line and the byte (a name in cp1252, a cut character)
        raise InputError(
            f"{path}: not UTF-8 text{undecodable_at(path)}{encoding_hint(path)}; expected a JSON "
            "file"
        ) from None


def beside(folder: Path, name: str) -> Path | None:
    """The file ``name`` in ``folder``, or the same compressed on its own (``name.gz``,
    ``name.bz2``, ...: a run's folder gzipped file by file); None when there is none."""
    from latentbench.io._arrival import PACKED_SUFFIXES

    for candidate in (name, *(name + suffix for suffix in PACKED_SUFFIXES)):
        path = folder / candidate
        if path.is_file():
            return path
    return None


def text_head(path: Path, size: int = 4096, *, line: bool = False) -> str | None:
    """The first ``size`` characters (or the first line, at most ``size``) of a text file.

    For cheap sniffing while walking directories (a compressed file's decompressed text):
    ``None`` when the file cannot be read as UTF-8 text.
    """
    try:
        with io.TextIOWrapper(open_unpacked(path), encoding="utf-8-sig") as handle:
            return handle.readline(size) if line else handle.read(size)
    except (OSError, UnicodeDecodeError, InputError):
        return None
