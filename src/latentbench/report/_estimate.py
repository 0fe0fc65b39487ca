"""The HTML page of new models' estimates (``latentbench estimate --out DIR``): each model's
score, interval and rank, drawn among the calibration models, with the items it answered."""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from latentbench._text import percent
from latentbench.exceptions import InputError
from latentbench.report import plots
from latentbench.report._blocks import (
    _figure,
    _Section,
    _table,
    refuse_existing,
    render_page,
    short_hashes,
)
from latentbench.select._estimate import outward
from latentbench.select._estimate_weights import is_weighted, score_label

if TYPE_CHECKING:
    from latentbench.select import EstimateResult, EstimateSet

__all__ = ["ESTIMATE_SECTIONS", "build_estimate_report", "nested_series", "series_folders"]

ESTIMATE_SECTIONS = ("estimate-summary", "estimate-figures", "estimate-tables")
"""Ids of the sections of an estimate's page."""

_PLOTTED = 40
"""Most new models the placement figure draws (the best by score; the table has them all)."""
_NAMED = 5
"""Models named before a warning several carry; the others are counted."""


def _natural(name: str) -> list[Any]:
    """Sort key that orders ``step900`` before ``step1000`` (digits compared as numbers)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def series_folders(folder: Path) -> list[Path]:
    """The folders directly inside ``folder`` that hold an ``estimate.json`` (one estimate
    call each: a series of checkpoints), in natural order of their names; empty when none.

    Parameters
    ----------
    folder : Path
        The folder given to ``latentbench report`` (any path: not a folder gives none).

    Returns
    -------
    list of Path
        Its estimate folders, ``step900`` before ``step1000``.
    """
    return _folders_where(folder, lambda p: (p / "estimate.json").is_file())


def nested_series(folder: Path) -> list[Path]:
    """The folders directly inside ``folder`` that are themselves a series (hold estimate
    folders: ``est/runA/step1000``), in natural order; empty when none.

    Parameters
    ----------
    folder : Path
        The folder given to ``latentbench report`` (any path: not a folder gives none).

    Returns
    -------
    list of Path
        Its folders that hold estimate folders (each one a series to report).
    """
    return _folders_where(folder, lambda p: bool(series_folders(p)))


def _folders_where(folder: Path, keep: Callable[[Path], bool]) -> list[Path]:
    """The folders directly inside ``folder`` that ``keep`` accepts, in natural order of
    their names; empty when ``folder`` is not a folder."""
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if p.is_dir() and keep(p)]
    return sorted(found, key=lambda p: _natural(p.name))


def _not_drawn(folder: Path) -> list[str]:
    """The folders beside a series' estimate folders that hold no ``estimate.json`` (a
    comparison, a fit, notes): not drawn, named on the page."""
    return sorted(
        (
            p.name
            for p in folder.iterdir()
            if p.is_dir() and not p.name.startswith(".") and not (p / "estimate.json").is_file()
        ),
        key=_natural,
    )


def _as_set(
    estimates: Any, run_id: str | None = None
) -> tuple[EstimateSet, list[str], str, list[str]]:
    """An :class:`EstimateSet` of ``estimates`` (a set, one result, a saved record, a folder
    of saved records: a series, or a store's live estimates), each result's folder or run
    (empty when not a series), what those are called (``"folder"``, ``"run"``) and notes on
    them (a live run whose latest session did not complete; the folders beside a series'
    estimate folders, not drawn)."""
    from latentbench._checks import as_path
    from latentbench.select import EstimateResult, EstimateSet
    from latentbench.select._estimate_live import stored_estimates

    if isinstance(estimates, EstimateSet):
        return estimates, [], "folder", []
    if isinstance(estimates, EstimateResult):
        return EstimateSet(results=(estimates,), single=True), [], "folder", []
    path = as_path(estimates, "estimates")
    if path.suffix.lower() in (".duckdb", ".db"):  # estimate --live: one run per model
        entries = stored_estimates(path, run_id)
        done = [(rid, r) for rid, r, _ in entries if r is not None]
        pending = tuple(
            f"{rid} (status {status}: no session completed; re-run its command to resume it)"
            for rid, r, status in entries
            if r is None
        )
        results = EstimateSet(results=tuple(r for _, r in done), not_estimated=pending)
        notes = [
            _early_note(rid, r, status)
            if r.stopped == status  # the result of the session that stopped early
            else f"Run {rid}: its latest session "
            + (
                # a run left 'running' is one whose process ended without closing it (killed):
                # one still running holds the store, which is then not read
                f"did not finish (status {status}: its process ended before closing the run)"
                if status == "running"
                else f"stopped ({status})"
            )
            + "; the page shows its last completed session's result (re-run its command to "
            "resume it)"
            for rid, r, status in entries
            if r is not None and status != "done"
        ]
        return results, [rid for rid, _ in done] if len(entries) > 1 else [], "run", notes
    folders = [] if (path / "estimate.json").is_file() else series_folders(path)
    if not folders:
        if path.is_dir() and not (path / "estimate.json").is_file():
            nested = nested_series(path)
            if nested:  # est/runA/step1000: the series is one level down
                raise InputError(
                    f"{path} holds no estimate.json, nor folders that do, but folders of "
                    f"estimate folders ({', '.join(p.name for p in nested[:5])}"
                    f"{', ...' if len(nested) > 5 else ''}); expected one series: report "
                    f"{nested[0]} (its folders are drawn as a series)"
                )
        return EstimateSet.read(path), [], "folder", []
    sets = [EstimateSet.read(f) for f in folders]
    merged = EstimateSet(
        results=tuple(r for one in sets for r in one.results),
        failures={
            f"{f.name}/{model}": message
            for f, one in zip(folders, sets, strict=True)
            for model, message in one.failures.items()
        },
        not_estimated=tuple(
            f"{f.name}/{model}"
            for f, one in zip(folders, sets, strict=True)
            for model in one.not_estimated
        ),
    )
    names = [f.name for f, one in zip(folders, sets, strict=True) for _ in one.results]
    others = _not_drawn(path)
    notes = (
        [
            f"Not drawn: {len(others):,} folder(s) here without an estimate.json ("
            f"{', '.join(others[:5])}{', ...' if len(others) > 5 else ''})"
        ]
        if others
        else []
    )
    return merged, names, "folder", notes


def _early_note(run_id: str, result: EstimateResult, status: str) -> str:
    """The page's line on a live run whose latest session stopped early and whose estimate
    is drawn as it stood then (capped by its spend cap, interrupted, failed)."""
    why = {
        "capped": "stopped at its spend cap ([run] spend_cap: the paid requests allowed) "
        "before its budget",
        "interrupted": "was interrupted before its budget",
        "failed": "stopped before its budget: a cell failed",
    }.get(status, f"stopped before its budget ({status})")
    return (
        f"Run {run_id}: {why}, after {result.n_evaluated:,} item(s); the page shows the "
        f"estimate where it stopped (status {status}: its interval is valid at every step, "
        "so it holds, wider than a finished run's); re-run its command to resume it"
    )


def _candidates(source: str, base: Path | None) -> list[Path]:
    """Where the calibration recorded as ``source`` may be: as recorded, and, for a relative
    path (``estimate fit/ ...`` records ``fit``, relative to the folder the command ran in),
    also relative to the estimate's folder and the two folders above it (``est/step1000``
    beside ``fit/``), wherever the report runs."""
    recorded = Path(source)
    found = [recorded]
    if not recorded.is_absolute() and base is not None:
        folder = base if base.is_dir() else base.parent
        found += [up / recorded for up in (folder, *list(folder.resolve().parents)[:2])]
    unique: dict[Path, Path] = {}
    for path in found:
        if path.exists():
            unique.setdefault(path.resolve(), path)
    return list(unique.values())


def _base(estimates: Any, folders: list[str]) -> Path | None:
    """The folder of the estimates given as a path (a series: its first estimate folder);
    None for results given in Python."""
    if not isinstance(estimates, (str, os.PathLike)):
        return None
    path = Path(estimates)
    folder = path if path.is_dir() else path.parent
    return folder / folders[0] if folders else folder


def _reference(result: EstimateResult, base: Path | None = None) -> tuple[np.ndarray | None, str]:
    """The calibration models' full-benchmark scores, read again from the calibration the
    estimate recorded when it is here and unchanged (its hash), else None and why; a
    relative path is also looked for from the estimate's folder ``base`` (:func:`_candidates`)."""
    from latentbench.select import load_calibration

    weights = result.options.get("weights")
    if weights and is_weighted(weights):  # the calibration's plain scores are another quantity
        return None, (
            "the calibration models are not drawn: the estimate is a weighted score (weights "
            f"{weights.get('hash', '')}), and their plain scores are another quantity; the "
            "ranks (against their weighted scores) come from the estimate's record"
        )
    source = result.calibration_source
    candidates = _candidates(source, base) if source else []
    if not candidates:
        where = source or "not recorded"
        place = (
            "is not on this machine"
            if not source or Path(source).is_absolute()
            else "is found neither from the current folder nor beside the estimate's"
        )
        return None, (
            f"the calibration models are not drawn: their calibration ({where}) {place}; the "
            "ranks come from the estimate's record"
        )
    said = ""
    for path in candidates:
        try:
            with warnings.catch_warnings():  # the estimate said them when it ran
                warnings.simplefilter("ignore")
                calibration = load_calibration(str(path))
        except Exception as exc:  # any reason it cannot be read: the page says it
            said = said or f"the calibration models are not drawn: {path} could not be read ({exc})"
            continue
        if calibration.hash == result.calibration_hash:
            return np.asarray(calibration.model_scores, dtype=float), ""
        said = said or (
            f"the calibration models are not drawn: {path} is not the calibration the "
            f"estimate used (SHA-256 {calibration.hash}, the estimate's "
            f"{result.calibration_hash}); the ranks come from the estimate's record"
        )
    return None, said


def _labels(results: tuple[EstimateResult, ...], folders: list[str]) -> list[str]:
    """Each result's name on the page: its model, or ``folder/model`` in a series whose
    folders share a model name (lm-eval names every revision by its ``pretrained=``)."""
    models = [r.model for r in results]
    if not folders or len(set(models)) == len(models):
        return models
    return [f"{folder}/{model}" for folder, model in zip(folders, models, strict=True)]


def _items_table(results: tuple[EstimateResult, ...], names: list[str]) -> pd.DataFrame:
    """Every model's items in the order asked: ``model``, ``order``, ``item``, ``answer``,
    ``probability`` (the draw's), and, when some score is weighted, ``target_weight`` (the
    item's ``w``, summing to 1 over the items of its target; blank for a plain mean's)."""
    weighted = any(r.target_weights for r in results)
    frames = [
        pd.DataFrame(
            {
                "model": name,
                "order": np.arange(1, len(r.items) + 1),
                "item": list(r.items),
                "answer": list(r.answers),
                "probability": list(r.probabilities) or np.nan,
                **({"target_weight": list(r.target_weights) or np.nan} if weighted else {}),
            }
        )
        for name, r in zip(names, results, strict=True)
    ]
    columns = ["model", "order", "item", "answer", "probability"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


_OPTIONS = ("design", "budget", "precision", "delta", "seed", "proposal")
"""The options an estimate's page names (its ``options`` record holds more)."""


def _option(options: Mapping[str, Any], name: str) -> str:
    """An estimate's option ``name`` as the page says it: ``none`` where the call did not set
    it (a fixed design's budget, no precision), ``not recorded`` where its record does not hold
    it (an ``estimate.json`` written before the option existed)."""
    if name not in options:
        return "not recorded"
    value = options[name]
    return "none" if value is None else str(value)


def _provenance(
    result: EstimateResult, results: tuple[EstimateResult, ...], names: list[str]
) -> str:
    """Where the estimates came from: the calibration and its hash, and the options (those
    that differ between ``results``, a series of calls, named with each estimate's value)."""
    options = result.options
    said = [f"calibration {result.calibration_source} (SHA-256 {result.calibration_hash})"]
    if result.calibration_fit:
        said.append(
            "theta on the scale of "
            + ("its `latentbench fit`" if result.calibration_fit == "fit" else "a fit made here")
        )
    differ = [k for k in _OPTIONS if len({repr(r.options.get(k)) for r in results}) > 1]
    chosen = [
        f"{k} {options[k]}" for k in _OPTIONS if options.get(k) is not None and k not in differ
    ]
    if chosen:
        said.append("options: " + ", ".join(chosen))
    for k in differ:  # a series of calls made with other options: each one's, not the first's
        values = [f"{name} {_option(r.options, k)}" for name, r in zip(names, results, strict=True)]
        shown = ", ".join(values[:5]) + (f", ... ({len(values):,})" if len(values) > 5 else "")
        said.append(f"{k} differs between the estimates: {shown}")
    return short_hashes("Estimated against " + "; ".join(said) + ".")


def build_estimate_report(
    estimates: EstimateSet | EstimateResult | str | os.PathLike[str],
    *,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
    force: bool = False,
    top: int = 100,
    run_id: str | None = None,
) -> str:
    """One self-contained HTML page of new models' estimates (``latentbench estimate --out
    DIR``; ``latentbench report DIR``).

    Sections ``estimate-summary`` (each model's score, interval and rank as the command
    printed it, what the interval guarantees, the warnings, the models not estimated, the
    calibration and options), ``estimate-figures`` (the scores and intervals among the
    calibration models' scores, when that calibration is here and unchanged) and
    ``estimate-tables`` (the estimates, and the items each model answered, in order).

    Parameters
    ----------
    estimates : EstimateSet, EstimateResult or path-like
        The estimates, or an ``estimate.json`` / the directory holding one, or a folder of
        such directories (a series of checkpoints, ``estimate --out est/step3000``): drawn in
        the natural order of their names (``step900`` before ``step1000``); or a store's live
        estimates (``estimate --live --store run.duckdb``): every run's last completed
        session, oldest run first.
    path : path-like, optional
        Also write the page there.
    title : str, optional
        The page's title (default ``"latentbench estimate"``).
    force : bool, default False
        Overwrite an existing ``path`` (refused otherwise, before any work).
    top : int, default 100
        Rows shown of each table (the rest are in the page's CSV download); ``report --top``.
    run_id : str, optional
        With a store: only this live estimate run (``latentbench ls --store`` lists them).

    Returns
    -------
    str
        The HTML text.
    """
    refuse_existing(path, force)
    record, folders, kind, run_notes = _as_set(estimates, run_id)
    base = _base(estimates, folders)
    results = record.results
    title = title or "latentbench estimate"
    section = _Section("estimate-summary", "Estimates")
    if not results:
        section.headline = "No model was estimated."
        section.findings += _not_estimated(record)
        return render_page([section], title, path)
    names = _labels(results, folders)
    first = results[0]
    order = (  # a series in its folders' order; else the highest score first
        list(range(len(results)))
        if folders
        else sorted(range(len(results)), key=lambda k: -results[k].score)
    )
    hashes = list(dict.fromkeys(r.calibration_hash for r in results))
    if len(hashes) > 1:
        reference, why = None, "the calibration models are not drawn: there are several"
    else:
        reference, why = _reference(first, base)
    if len(results) == 1:
        section.headline = f"{names[0]}: {first.summary()}."
    else:
        best = max(range(len(results)), key=lambda k: results[k].score)
        lower, upper = outward(results[best].lower, results[best].upper)
        what = (
            f"{len(results):,} estimates from {len(set(folders)):,} {kind}s"
            if folders
            else f"{len(results):,} models estimated"
        )
        # the calibration's models: a model named like one of them ranks among one fewer
        n_cal = (
            int(np.isfinite(reference).sum())
            if reference is not None
            else max(r.n_ranked for r in results) - 1
        )
        against = (
            f"{len(hashes):,} calibrations" if len(hashes) > 1 else f"{n_cal:,} calibration models"
        )
        section.headline = (
            f"{what} against {against}; highest: "
            f"{names[best]}, score {results[best].score:.3f} [{lower}, {upper}]."
        )
        for k in order[:top]:
            section.findings.append({"text": f"{names[k]}: {results[k].summary()}."})
        if len(results) > top:  # the lines stopped: said, not left to look like all of them
            section.findings.append(
                {
                    "text": f"The first {top:,} of {len(results):,} "
                    + (f"{kind}s" if folders else "models by score")
                    + f"; the other {len(results) - top:,} are in the estimates table's CSV"
                    # (a store of live estimates has no estimates.csv)
                    + (" (estimates.csv)." if kind == "folder" else " (its 'download all' link)."),
                    "note": True,
                }
            )
    levels = sorted({r.level for r in results}, reverse=True)
    level = (
        f"a {percent(first.level)} anytime-valid interval"
        if len(levels) == 1  # a series of calls with several --delta: each at its own level
        else "an anytime-valid interval at its own level ("
        + ", ".join(percent(v) for v in levels)
        + ": the table's level column)"
    )
    # a model that answered some of the calibration's items only: its score is over those
    # (the command's legend: "of the score on the items answered")
    subset = [names[k] for k, r in enumerate(results) if r.answered_subset]
    over = (
        "over the benchmark's items"
        if not subset
        else "over the items it answered (not the full benchmark"
        + (
            f" for {', '.join(subset[:3])}{', ...' if len(subset) > 3 else ''}"
            if len(results) > 1
            else ""
        )
        + ")"
    )
    # a weighted estimate's score is no mean score: named as its summary line names it
    labels = {score_label(r.options.get("weights")) for r in results}
    what = (
        "mean score"
        if labels == {"score"}
        else labels.pop()
        if len(labels) == 1
        else "mean or weighted score (as its line says)"
    )
    section.findings.append(
        {
            "text": f"Each interval is {level} of the "
            f"model's {what} {over}, design-based: it holds whether or "
            "not the IRT model fits the new model (docs/estimate.md). The rank's range "
            "follows from it; theta restates it on the calibration's ability scale."
            + (
                " Two intervals that overlap do not show the models equal, nor do two apart "
                "test their difference as well as `latentbench compare` on the same items."
                if len(results) > 1
                else ""
            )
        }
    )
    section.findings += _warnings(results, names, "estimates" if folders else "models")
    section.findings += _not_estimated(record)
    section.findings += [{"text": line + ".", "note": True} for line in run_notes]
    section.findings.append({"text": _provenance(first, results, names)})
    if len(hashes) > 1:  # their ranks and abilities are on different references
        section.findings.append(
            {
                "text": short_hashes(
                    f"The estimates are against {len(hashes)} calibrations (SHA-256 "
                    f"{', '.join(hashes[:3])}{', ...' if len(hashes) > 3 else ''}): their ranks "
                    "and abilities are not comparable; their scores are, when the items are "
                    "the same benchmark's."
                ),
                "note": True,
            }
        )
    if why:
        section.findings.append({"text": why[:1].upper() + why[1:] + ".", "note": True})
    frame = record.to_frame()
    if folders:  # the folder (or live run) beside the model's own name
        frame.insert(0, kind, folders)
    shown = frame.iloc[order]
    drawn = shown.assign(model=[names[k] for k in order])
    plotted = min(len(shown), _PLOTTED)
    if folders and len(drawn) > _PLOTTED:  # a long series: its latest checkpoints
        drawn = drawn.tail(_PLOTTED)
        which = f"the last {plotted} of {len(shown):,} {kind}s, in order"
    elif folders:
        which = f"the first {plotted} {kind}s, in order"
    else:
        which = f"the highest {plotted} by score"
    figures = _Section(
        "estimate-figures",
        "Where each model would rank",
        f"Each new model's score and interval ({which})"
        + (
            "; ticks on the bottom row: the calibration models' scores over all items."
            if reference is not None
            else "."
        ),
    )
    figures.figures.append(
        {
            "png": _figure(
                lambda ax: plots.plot_estimate_placement(drawn.head(_PLOTTED), reference, ax),
                size=(7.0, max(2.6, 1.2 + 0.32 * (plotted + 1))),
            ),
            # what it shows, and where its numbers are (WCAG 1.1.1)
            "alt": f"The full-benchmark score of {plotted} new model"
            + ("s" if plotted != 1 else "")
            + ", a point and its interval each, against the score scale"
            + (", above ticks at the calibration models' scores" if reference is not None else "")
            + "; the tables below hold each score, interval and rank.",
        }
    )
    tables = _Section("estimate-tables", "Tables")
    table = shown.drop(columns=["warnings"] + (["calibration_hash"] if len(hashes) == 1 else []))
    for low, high in (("lower", "upper"), ("theta_lower", "theta_upper")):
        ends = [outward(a, b) for a, b in zip(table[low], table[high], strict=True)]
        table[low] = [float(a) for a, _ in ends]
        table[high] = [float(b) for _, b in ends]
    tables.tables.append(
        _table(
            table,
            name="estimates",
            caption=(
                "The estimates (estimates.csv, which keeps every digit), "
                if kind == "folder"
                else "The estimates, "  # a store's: no estimates.csv
            )
            + (f"in the {kind}s' order" if folders else "highest score first")
            + "; interval ends rounded outward to 3 decimals, so that the interval shown "
            "holds the one computed.",
            download=True,
            limit=top,
            consistent=True,
        )
    )
    tables.tables.append(
        _table(
            _items_table(results, names),
            name="estimate-items",
            row_header=False,  # a row is one answer: its model repeats down the rows
            caption="The items each model answered, in the order asked, with the probability "
            + _draw_weight(results),
            download=True,
            limit=top,
            consistent=True,
        )
    )
    return render_page([section, figures, tables], title, path)


def _draw_weight(results: Sequence[Any]) -> str:
    """What a draw weighs in the estimate, for the items table's caption: ``1 / (items x
    probability)`` in a plain mean, ``w / probability`` in a weighted score (``w`` normalised
    over the items of its target: ``W_j / (n pi_j)`` with ``W`` of mean 1)."""
    weighted = {is_weighted(r.options.get("weights")) for r in results}
    plain = "1 / (items x probability)"
    scaled = (
        "w / probability, w the item's target_weight: its weight normalised to sum 1 over the "
        "items of the target"
    )
    said = (
        scaled
        if weighted == {True}
        else f"{plain}; in a weighted score {scaled}"
        if True in weighted
        else plain
    )
    return f"of each draw (its weight in the estimate is {said})."


def _warnings(
    results: Sequence[EstimateResult], names: Sequence[str], noun: str
) -> list[dict[str, Any]]:
    """Findings for the results' warnings, each message once with the models that carry it.

    A note that every model of a call carries (what reading the answers file said, the
    calibration's fit warnings) is one line, not one per model: 300 models' page listed the
    same line 300 times above everything else.
    """
    carriers: dict[str, list[str]] = {}
    for name, r in zip(names, results, strict=True):
        for line in r.warnings:
            who = carriers.setdefault(line, [])
            if not who or who[-1] != name:
                who.append(name)
    out: list[dict[str, Any]] = []
    for line, who in carriers.items():
        if len(results) == 1:
            prefix = ""
        elif len(who) == len(results):
            prefix = f"all {len(who):,} {noun}: " if len(who) > 2 else f"both {noun}: "
        elif len(who) <= _NAMED:
            prefix = f"{', '.join(who)}: "
        else:
            prefix = f"{', '.join(who[:_NAMED])} and {len(who) - _NAMED:,} more: "
        out.append({"text": prefix + line, "note": True})
    return out


def _not_estimated(record: EstimateSet) -> list[dict[str, Any]]:
    """Findings for the models that failed or were not reached (an interrupted call)."""
    out: list[dict[str, Any]] = []
    for model, message in record.failures.items():
        out.append({"text": f"{model}: not estimated ({message}).", "note": True})
    if record.not_estimated:
        rest = record.not_estimated
        out.append(
            {
                "text": f"Interrupted: {len(rest):,} model(s) not estimated ("
                f"{', '.join(rest[:5])}{', ...' if len(rest) > 5 else ''}).",
                "note": True,
            }
        )
    return out
