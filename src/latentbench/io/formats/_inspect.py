"""Inspect AI logs: ``.eval`` zip archives and ``.json`` logs (``docs/formats.md``).

A ``.eval`` file is recognised by its zip signature, not its suffix. It holds ``header.json``
(or ``_journal/start.json`` for an unfinished log) with the ``eval`` spec, and one
``samples/<id>_epoch_<n>.json`` per sample and epoch. A ``.json`` log is one ``EvalLog`` with
``eval`` and ``samples``. This reader uses only the standard library, so ``inspect_ai`` stays
optional; the zip layout is an Inspect internal and is checked loudly.

Mapping: ``benchmark`` = ``eval.task``, ``model`` = ``eval.model``, ``item`` = ``sample.id``,
``trial`` = ``epoch - 1``, ``filter`` = the scorer name, ``metric`` = ``value`` (or the key of a
dict-valued score). Values ``C``/``I``/``P``/``N`` map to 1/0/0.5/0 and ``yes``/``no`` to 1/0.
A sample with an ``error`` is missing by default; ``errored="zero"`` keeps it as an explicit 0
row flagged ``errored sample scored 0``.

One log that gives no rows (header only, cancelled before any sample was scored, every sample
errored, or run without a scorer) does not stop a folder: it is listed in
``LoadReport.skipped_files`` with the reason, and its samples count as dropped. A cancelled or
errored run that did score some samples is read, with a note.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from latentbench._text import counted
from latentbench.exceptions import InputError
from latentbench.io._arrival import unpacked_path
from latentbench.io.formats._common import (
    Choice,
    Columns,
    LoadReport,
    coerce_score,
    load_json,
    parse_json,
    requested,
    resolve,
    text_head,
    where,
)
from latentbench.io.formats._registry import reader

PATTERNS = ("**/*.eval", "**/*.json")

_ZIP_MAGIC = b"PK\x03\x04"


def is_zip(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4) == _ZIP_MAGIC


#: zip compression method of zstd; Inspect writes ``.eval`` members with it by default.
_ZSTD = 93


MAX_MEMBER_BYTES = 1 << 30
"""Most bytes one ``.eval`` member may unpack to (1 GiB; an Inspect sample is far smaller):
a zip bomb among downloaded logs is refused before it is unpacked into memory."""


def _member(archive: zipfile.ZipFile, path: Path, member: str) -> bytes:
    """The bytes of one member; zstd needs ``zipfile-zstd`` (an ``inspect_ai`` dependency).
    A member declared larger than :data:`MAX_MEMBER_BYTES` is refused unread (zipfile stops
    unpacking at the declared size, so the declaration bounds the memory)."""
    info = archive.getinfo(member)
    if info.file_size > MAX_MEMBER_BYTES:
        raise InputError(
            f"{path}: member {member} unpacks to {info.file_size:,} bytes, more than "
            f"{MAX_MEMBER_BYTES:,} ({info.compress_size:,} packed); expected an Inspect log "
            "of ordinary size (a damaged or hostile archive?)"
        )
    if info.compress_type == _ZSTD:
        try:
            import zipfile_zstd  # noqa: F401  (registers zstd with zipfile)
        except ImportError:
            raise InputError(
                f"{path}: member {member} is zstd-compressed (zip method {_ZSTD}), as recent "
                "Inspect versions write .eval logs; install inspect_ai (or zipfile-zstd) to "
                "read it"
            ) from None
    return archive.read(member)


def _zip_json(archive: zipfile.ZipFile, path: Path, member: str) -> Any:
    text = _member(archive, path, member)
    return parse_json(text, f"{path}: member {member}", hint="the log may be truncated")


Sample = tuple[str, str | None, dict[str, Any]]
"""(location for messages, ``.eval`` member or None, the EvalSample)."""


def _load(path: Path) -> tuple[dict[str, Any], dict[str, Any], list[Sample]]:
    """(eval spec, log header, samples) from a .eval zip or a .json log."""
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
            if header_name != "header.json":
                header = {**header, "status": header.get("status", "started")}
            samples: list[Sample] = []
            for member in sorted(
                n for n in names if n.startswith("samples/") and n.endswith(".json")
            ):
                sample = _zip_json(archive, path, member)
                if not isinstance(sample, dict):
                    raise InputError(
                        f"{path}: member {member}: expected a JSON object (EvalSample)"
                    )
                samples.append((f"{path}: member {member}", member, sample))
            return header["eval"], header, samples
    log = load_json(path)
    if _is_manifest(log):
        raise _Manifest(len(log))
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
        samples.append((f"{where(path, record=index)} (samples[{index}])", None, sample))
    return log["eval"], log, samples


class _Manifest(Exception):
    """A log folder's manifest (``logs.json``) instead of a log; ``args[0]``: the logs it
    lists."""


def _is_manifest(log: Any) -> bool:
    """Whether a JSON document is the manifest ``inspect eval-set`` (and ``inspect view
    bundle``) writes as ``logs.json`` in a log folder: an object keyed by log file names whose
    values are EvalLog headers (an ``eval`` object each, no samples)."""
    return (
        isinstance(log, dict)
        and bool(log)
        and "eval" not in log
        and all(
            isinstance(header, dict) and isinstance(header.get("eval"), dict)
            for header in log.values()
        )
    )


def _declared_scorers(spec: dict[str, Any], header: dict[str, Any]) -> list[str]:
    """Scorer names the log declares (``eval.scorers``, else ``results.scores``)."""
    names: list[str] = []
    for entry in spec.get("scorers") or []:
        if isinstance(entry, dict) and entry.get("name"):
            names.append(str(entry["name"]))
    if not names:
        results = header.get("results") or {}
        for entry in results.get("scores") or [] if isinstance(results, dict) else []:
            if isinstance(entry, dict) and entry.get("name"):
                names.append(str(entry["name"]))
    return list(dict.fromkeys(names))


def looks_like_log(path: Path) -> bool:
    """Cheap check used when walking directories: a zip, or JSON with an ``eval`` object."""
    if is_zip(path):
        return True
    head = text_head(path)
    return head is not None and head.lstrip().startswith("{") and '"eval"' in head


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
    item_field="id",
    packed=True,
    keep=looks_like_log,
    nothing_found="no Inspect logs found (.eval archives or .json logs with an 'eval' object)",
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
    """Read one Inspect log into canonical rows (a log that gives none is reported, not fatal)."""
    try:
        spec, header, samples = _load(path)
    except _Manifest as manifest:  # beside the logs it lists, which are read
        report.skip_file(
            path,
            f"a log folder's manifest (the headers of {counted(manifest.args[0], 'log')}, no "
            "samples: "
            "inspect eval-set writes it as logs.json); the logs it lists are the files to read",
        )
        return Columns().frame("inspect_ai", str(path), None)
    task = str(spec.get("task") or unpacked_path(path).stem)
    named = spec.get("model")
    source_model = str(named or "unknown")
    canonical = model or source_model
    name = benchmark or task
    report.rename(benchmark, task)
    source = _source_name(spec)
    timestamp = spec.get("created")
    status = str(header.get("status") or "unknown")
    report.records_read += len(samples)
    out = Columns()
    if not samples:
        report.skip_file(path, f"no samples (status {status}; a header-only or empty log)")
        return out.frame(source, str(path), timestamp)
    if model is None and (named is None or str(named) == ""):
        # every such log was model 'unknown': two models' logs read as one, without a word
        state = "is missing" if named is None else "is ''"
        raise InputError(
            f"{path}: field 'eval.model' {state}; expected the model the log evaluated (the "
            "logs of several models would read as one model): pass model=NAME to name the "
            "model of this log"
        )
    scorers = _sample_scorers(path, report, spec, header, samples, errored)
    if scorers is None:
        return out.frame(source, str(path), timestamp)
    chosen, how = resolve("scorer", filter, name, scorers, str(path), keyword="filter")
    report.choose(name, "filter", chosen, how)
    key = requested(metric, name)
    metric_name: str | None = None
    first_loc = ""
    for index, (loc, member, sample) in enumerate(samples):
        got = _read_sample(
            out,
            report,
            sample,
            loc,
            (canonical, name, source_model, chosen),
            index=index,
            member=member,
            key=key,
            errored=errored,
        )
        if got is not None and metric_name is not None and got != metric_name:
            # one scorer giving a dict {KEY: v} here and a plain value (or another key)
            # there: the rows would all carry the first sample's metric name
            single = "a single value" if got == "value" else f"metric {got!r}"
            raise InputError(
                f"{loc}: scorer {chosen!r} gives {single}, where {first_loc} gives metric "
                f"{metric_name!r}; expected one metric for every sample of a scorer (choose "
                "one with metric=KEY when every sample gives a dict)"
            )
        if metric_name is None and got is not None:
            metric_name, first_loc = got, loc
    final = metric_name or key or "value"
    report.choose(name, "metric", final, "given" if key else "only")
    out.metric = [final] * len(out)
    if status not in ("success", "unknown"):
        report.notes.append(
            f"{path}: status {status}; {counted(len(out), 'row')} from "
            f"{counted(len(samples), 'sample')} {'was' if len(out) == 1 else 'were'} read"
        )
    return out.frame(source, str(path), timestamp)


def _source_name(spec: dict[str, Any]) -> str:
    """``inspect_ai VERSION`` as the log's spec records it (``inspect_ai`` without one)."""
    packages = spec.get("packages") or {}
    version = packages.get("inspect_ai") if isinstance(packages, dict) else None
    return f"inspect_ai {version}" if version else "inspect_ai"


def _sample_scorers(
    path: Path,
    report: LoadReport,
    spec: dict[str, Any],
    header: dict[str, Any],
    samples: list[Sample],
    errored: str,
) -> list[str] | None:
    """The scorers of the samples, in order; None (the file skipped, said in ``report``)
    when no sample has a score and errored samples are not scored 0."""
    status = str(header.get("status") or "unknown")
    scorers: dict[str, None] = {}
    n_errored = 0
    for _loc, _member, sample in samples:
        n_errored += bool(sample.get("error"))
        for scorer in sample.get("scores") or {}:
            scorers.setdefault(str(scorer), None)
    if scorers:
        return list(scorers)
    if n_errored and errored == "zero":
        declared = _declared_scorers(spec, header)
        return list(dict.fromkeys(declared or ["none"]))
    if n_errored == len(samples):
        reason = (
            f"{'its one sample' if n_errored == 1 else f'all {n_errored:,} samples'} errored "
            f"(status {status}; --errored zero scores {'it' if n_errored == 1 else 'them'} 0)"
        )
    else:
        reason = (
            f"no sample has a score (status {status}; run without a scorer or "
            f"cancelled before scoring; {n_errored:,} of {len(samples):,} samples errored)"
        )
    report.skip_file(path, reason, len(samples))
    return None


def _sample_epoch(sample: dict[str, Any], loc: str) -> int:
    """The sample's epoch (from 1), once its ``id`` and ``epoch`` are checked."""
    if "id" not in sample:
        raise InputError(f"{loc}: field 'id' is missing; expected an EvalSample")
    ident = sample["id"]
    if isinstance(ident, bool) or not isinstance(ident, (int, str)):
        # NaN, Infinity (literals Python's JSON reads), 1.5, null: items no other log holds
        raise InputError(
            f"{loc}: field 'id' is {ident!r}; expected an integer or a string, as Inspect "
            "writes a sample id"
        )
    epoch = sample.get("epoch", 1)
    if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1:
        raise InputError(f"{loc}: field 'epoch': value {epoch!r}; expected an integer >= 1")
    return epoch


def _read_sample(
    out: Columns,
    report: LoadReport,
    sample: dict[str, Any],
    loc: str,
    names: tuple[str, str, str, str],
    *,
    index: int,
    member: str | None,
    key: str | None,
    errored: str,
) -> str | None:
    """Add one sample's row to ``out`` (or say in ``report`` why it has none); ``names`` is
    (model, benchmark, source model, scorer). Returns the metric its score was read from."""
    canonical, name, source_model, chosen = names
    epoch = _sample_epoch(sample, loc)
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
                flag="errored sample scored 0",
                member=member,
            )
            report.flag("errored sample scored 0 (--errored zero)")
            return None
        report.drop("errored sample (missing; --errored zero scores it 0)")
        return None
    if chosen not in scores:
        report.drop("scorer absent")
        return None
    got, raw = _value(scores[chosen], key, loc, chosen)
    score = coerce_score(raw, loc, f"scores.{chosen}.value", inspect=True)
    if score is None:
        report.drop("score value missing (null)")
        return got
    out.add(
        canonical,
        name,
        str(sample["id"]),
        score,
        got,
        chosen,
        epoch - 1,
        source_model,
        index,
        member=member,
    )
    return got
