"""One report from whatever the user has: the Python twin of ``latentbench report``.

A fit directory, an experiment directory, a selection run (its directory, its
``selection.json`` or a live-run store) or a responses file (fitted first) each get the page
that :func:`~latentbench.report.build_report` or
:func:`~latentbench.report.build_experiment_report` draws for it.
"""

from __future__ import annotations

import itertools
import json
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from latentbench._checks import (
    as_path,
    check_flag,
    check_jobs,
    check_seed,
    is_integer,
    user_stacklevel,
)
from latentbench._compat import TEXT
from latentbench.exceptions import DataWarning, InputError
from latentbench.io._files import _tools_hint
from latentbench.report._estimate import nested_series, series_folders

__all__ = ["MIN_REPORT_BOOTSTRAP", "Report", "report_from"]

MIN_REPORT_BOOTSTRAP = 100
"""Fewest bootstrap replicates :func:`report_from` (``report --bootstrap``) accepts: the 95%
interval's ends are the 2.5% and 97.5% quantiles of the replicates, and with fewer than 100
each tail holds fewer than 2.5 of them (2 replicates gave intervals that excluded their own
estimates, and rank intervals that excluded the rank)."""

Progress = Callable[..., None]


@dataclass(frozen=True)
class Report:
    """A written (or built) HTML report and what was said while building it.

    Attributes
    ----------
    html : str
        The self-contained page.
    path : Path or None
        Where it was written (None: not written).
    notes : tuple of str
        One line each: where the responses came from, what could not be computed and why,
        items without metadata, the bootstrap's time.
    """

    html: str
    path: Path | None
    notes: tuple[str, ...] = ()

    def __repr__(self) -> str:
        """Short: where it was written, its size and how many notes (not the page itself)."""
        where = repr(str(self.path)) if self.path is not None else "not written"
        n = len(self.notes)
        return (
            f"Report({where}, {len(self.html):,} characters of HTML, "
            f"{n} note{'s' if n != 1 else ''})"
        )


def _aligned(matrix: Any, result: Any) -> Any:
    """The matrix restricted and ordered to the fit's models and items."""
    unknown = set(result.model_ids) - set(matrix.model_ids)
    unknown |= set(result.item_ids) - set(matrix.item_ids)
    if unknown:
        raise InputError(
            f"the responses lack {len(unknown)} of the fit's models / items "
            f"(e.g. {sorted(unknown)[0]!r}); pass the file the fit used"
        )
    return matrix.subset(models=result.model_ids, items=result.item_ids)


def _responses_from_fit(directory: Path) -> tuple[Any, str | None]:
    """The responses a fit recorded in fit.json (``input``), read back while they are the ones
    it was fitted on, and a line saying where they came from or why they were not used.

    A file (``input.path``) is used while it exists with the recorded SHA-256; a store
    benchmark (``input.store``, ``benchmark``, ``metric``, ``filter``) while its cells have
    the recorded ``cells_sha256``.
    """
    from latentbench.io import ResponseMatrix, cells_sha256, file_sha256

    try:
        info = json.loads((directory / "fit.json").read_text())
    except (OSError, ValueError, RecursionError):
        return None, None
    entry = info.get("input") or {}
    if entry.get("store") and entry.get("benchmark") is not None:
        from latentbench.io.store import Store

        where = f"benchmark {entry['benchmark']!r} of store {entry['store']}"
        if not Path(entry["store"]).is_file():
            return None, f"responses: {where} (recorded in fit.json) not found; not used"
        with Store(entry["store"], read_only=True) as db:
            matrix = db.matrix(entry["benchmark"], metric=entry.get("metric"),
                               filter=entry.get("filter"), split=entry.get("split"))  # fmt: skip
        if entry.get("cells_sha256") and cells_sha256(matrix) != entry["cells_sha256"]:
            return None, (
                f"responses: {where} (recorded in fit.json) has changed since the fit; not used"
            )
        return matrix, f"responses: {where} (recorded in fit.json)"
    path = entry.get("path")
    if not path:
        return None, None
    recorded = entry.get("sha256")
    if not Path(path).is_file():  # a fit folder copied from another machine, or moved
        copy = _moved_copy(Path(path), directory, recorded)
        if copy is None:
            return None, (
                f"responses: {path} (recorded in fit.json) not found; not used: pass "
                "responses=FILE to use a copy"
            )
        return ResponseMatrix.read(copy), (
            f"responses: {copy} (fit.json records {path}, which is not there; this file has "
            "its SHA-256)"
        )
    if recorded and file_sha256(path) != recorded:
        return None, (
            f"responses: {path} (recorded in fit.json) has changed since the fit (its SHA-256 "
            "differs); not used: pass responses=FILE to use it anyway"
        )
    return ResponseMatrix.read(path), f"responses: {path} (recorded in fit.json)"


def _moved_copy(recorded: Path, directory: Path, sha256: str | None) -> Path | None:
    """The responses file a fit recorded at ``recorded`` (an absolute path, on the machine
    and in the folder it ran in), found by its name beside the fit folder, inside it or in
    the current folder with the recorded SHA-256 (a project copied or moved whole); None
    without a SHA-256 to check or without such a file."""
    if not sha256:
        return None
    from latentbench.io import file_sha256

    for folder in (directory.parent, directory, Path.cwd()):
        candidate = folder / recorded.name
        if candidate.is_file() and file_sha256(candidate) == sha256:
            return candidate
    return None


_Kind = Literal[
    "experiment",
    "estimate-experiment",
    "estimate",
    "compare",
    "fit",
    "selection",
    "store",
    "responses",
]


_INPUTS = (("fit.json", "the fit"), ("summary.json", "the experiment"),
           ("selection.json", "the selection run"))  # fmt: skip
"""A directory's report inputs, in the order one is chosen over the others."""


def _say_choice(source: Path) -> None:
    """Warn when ``source`` holds more than one report input (an experiment's summary.json
    beside a selection.json): which one the page reports, and how to get another (it chose
    silently)."""
    present = [(name, what) for name, what in _INPUTS if (source / name).is_file()]
    if len(present) < 2:
        return
    (name, what), others = present[0], present[1:]
    how = "; ".join(
        f"pass {source / other} to report {thing}"
        if other == "selection.json"
        else f"give {other} a directory of its own to report {thing}"
        for other, thing in others
    )
    warnings.warn(
        f"{source} holds {' and '.join(n for n, _ in present)}: reporting {what} ({name}); " + how,
        DataWarning,
        stacklevel=user_stacklevel(),
    )


def _kind(source: Path) -> _Kind:
    """What ``source`` holds, or a clear error."""
    if source.is_dir():
        _say_choice(source)
        if (source / "fit.json").is_file():
            return "fit"
        if (source / "summary.json").is_file():
            return "estimate-experiment" if _estimate_experiment(source) else "experiment"
        if (source / "selection.json").is_file():
            return "selection"
        parts = [n for n in ("curves.csv", "summary.csv", "runs.csv") if (source / n).is_file()]
        if parts:  # an experiment's other files, without the one a report reads
            raise InputError(
                f"{source} holds {', '.join(parts)} of an experiment directory but no "
                "summary.json, which its report reads; expected the whole output of "
                "`latentbench experiment --out DIR` (run it again to write it)"
            )
        if (
            (source / "estimate.json").is_file()
            or series_folders(source)
            or nested_series(source)  # a series one level down: its reader says which to give
        ):
            return "estimate"  # one call's estimates, or a folder of them (a series)
        if (source / "compare.json").is_file():
            return "compare"
        if _tool_results(source):  # a harness's output folder, not a fit directory
            raise InputError(
                f"{source} holds no fit.json but a tool's result files; expected a fit "
                "directory (latentbench fit --out DIR), an experiment or a selection"
                + _tools_hint()
            )
        return "fit"  # IRTResult.load names what is missing (fit.json)
    if not source.exists():
        raise InputError(f"{source} does not exist")
    suffix = source.suffix.lower()
    if suffix == ".json":
        if source.name in ("estimate.json", "compare.json"):
            return "estimate" if source.name == "estimate.json" else "compare"
        if not _json_has(source, "arms"):  # a tool's results (lm-eval, HELM, Inspect, ...)
            raise InputError(
                f"{source} is not a selection.json (no 'arms'); expected the output of "
                f"`latentbench select replay`{_tools_hint()}"
            )
        return "selection"
    if suffix in (".duckdb", ".db"):
        return "store"
    return "responses"


def _live_estimate(source: Path, run_id: str | None) -> bool:
    """Does the store ``source`` hold, as ``run_id`` (or as its latest run), a live estimate
    (``estimate --live``) rather than a selection? Its page is the estimates'."""
    from latentbench.io.store import Store
    from latentbench.select.live._run import is_estimate_run

    try:
        with Store(source, read_only=True) as db:
            runs = db.selection_runs()
    except InputError:
        return False  # the selection reader names what is wrong with the store
    chosen = runs[-1:] if run_id is None else [r for r in runs if r["run_id"] == run_id]
    return bool(chosen) and is_estimate_run(chosen[0])


def _live_comparison(source: Path, run_id: str | None) -> str | None:
    """The id of the live comparison (``compare --live``) that the store ``source`` holds as
    ``run_id`` (or as its latest run); None when that run is not one. Its page is the
    comparison's."""
    from latentbench.io.store import Store
    from latentbench.select.live._run import is_compare_run

    try:
        with Store(source, read_only=True) as db:
            runs = db.selection_runs()
    except InputError:
        return None  # the selection reader names what is wrong with the store
    chosen = runs[-1:] if run_id is None else [r for r in runs if r["run_id"] == run_id]
    return str(chosen[0]["run_id"]) if chosen and is_compare_run(chosen[0]) else None


def _tool_results(folder: Path) -> bool:
    """Does ``folder`` (no fit's files in it) hold a tool's result files (``.json``,
    ``.jsonl``, ``.eval``: lm-eval, HELM, Inspect, ...)? The first 2,000 entries are looked at."""
    if any((folder / name).is_file() for name in ("abilities.csv", "items.csv")):
        return False  # a fit directory lacking fit.json: IRTResult.load names what is missing
    entries = itertools.islice(folder.rglob("*"), 2000)
    return any(p.suffix.lower() in (".json", ".jsonl", ".eval") for p in entries)


def _json_has(path: Path, key: str) -> bool:
    """Is ``path`` a JSON object with ``key``? (Unreadable JSON: True, for the reader that
    follows to name what is wrong.)"""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return True
    return isinstance(data, dict) and key in data


def _estimate_experiment(source: Path) -> bool:
    """Is ``source`` an estimate experiment's directory (``experiment --task estimate``)?"""
    try:
        params = json.loads((source / "summary.json").read_text()).get("params") or {}
    except (OSError, ValueError, RecursionError, AttributeError):
        return False  # not readable here: the experiment reader names what is wrong
    return isinstance(params, dict) and params.get("task") == "estimate"


def _metadata_notes(meta: Any, items: Any, result: Any) -> list[str]:
    """Refuse item metadata that matches none of the fit's items; note the items it lacks."""
    known = set(map(str, result.item_ids))
    matched = int(meta["item"].astype(TEXT).isin(known).sum())
    if matched == 0:
        raise InputError(
            f"items={items}: none of its {len(meta)} item ids is an item of the fit "
            f"(first {str(meta['item'].iloc[0])!r}; the fit's first "
            f"{str(result.item_ids[0])!r}); expected the fit's item ids in column 'item'"
        )
    if matched < len(known):
        missing = len(known) - matched
        return [f"items={items}: {missing} of the fit's {len(known)} items have no metadata"]
    return []


def report_from(
    source: str | os.PathLike[str],
    path: str | os.PathLike[str] | None = None,
    *,
    responses: str | os.PathLike[str] | None = None,
    items: str | os.PathLike[str] | None = None,
    selection: str | os.PathLike[str] | None = None,
    run_id: str | None = None,
    title: str | None = None,
    l2: float | None = None,
    top: int = 30,
    n_boot: int = 0,
    method: Literal["items", "parametric"] = "items",
    n_jobs: int = 1,
    seed: int = 0,
    progress: Progress | None = None,
    force: bool = False,
) -> Report:
    """Build (and write to ``path``) the HTML report of a fit, experiment, selection or matrix.

    Parameters
    ----------
    source : path
        A fit directory (``latentbench fit --out``), an experiment directory
        (``latentbench experiment --out``), a selection run's directory or its
        ``selection.json``, a live-run store (``.duckdb``), or a responses file (fitted first
        with ``TwoPL()``: the default priors).
    path : path, optional
        The HTML file to write (its folder must exist; a name ending in another suffix
        than ``.html`` or ``.htm``, such as ``x.pdf``, is refused); None builds the page
        only. An existing file is refused unless ``force``.
    responses : path, optional
        With a fit directory: the responses it was fitted on (standard errors, item flags).
        Default: the input recorded in ``fit.json`` while it is unchanged.
    items : path, optional
        Item metadata (``item`` plus category columns): results broken down by category.
    selection : path, optional
        A ``selection.json`` to add to a fit's page.
    run_id : str, optional
        The run of a live-run store (default: the latest). A store whose run (the latest, or
        ``run_id``) is a live estimate (``estimate --live``) gets the estimates' page: that
        run's, or without ``run_id`` every live estimate's, oldest first.
    title : str, optional
    l2 : None
        Refused when given: a responses file is fitted with the default priors, which a ridge
        does not enter (it was accepted and ignored). For a joint-ML fit, fit with
        ``TwoPL(prior=None, l2=...)`` and save it (``latentbench fit --joint-ml --l2``), then
        report that directory.
    top : int
        Models / rows shown in figures and long tables.
    n_boot : int
        Bootstrap replicates for ability and rank intervals (0: plug-in, at least
        :data:`MIN_REPORT_BOOTSTRAP` otherwise); needs responses. A fit directory or a
        responses file only (a selection run's page has no fit to bootstrap).
    method : {"items", "parametric"}
        The bootstrap's resampling (with ``n_boot`` only).
    n_jobs : int
        Bootstrap worker processes (-1: all cores; with ``n_boot`` only).
    seed : int
        Bootstrap seed (with ``n_boot`` only).
    progress : callable, optional
        ``progress(phase, done=None, total=None)``, called as the work goes.
    force : bool, default False
        Overwrite an existing ``path`` (as ``latentbench report --force``).

    Returns
    -------
    Report

    Raises
    ------
    InputError
        An option the page of ``source`` does not read (it was accepted and ignored):
        ``responses``, ``n_boot`` and the bootstrap's options for a selection run,
        ``run_id`` for anything but a live-run store, ``responses`` for a responses file,
        ``method``, ``n_jobs`` or ``seed`` without ``n_boot``; an option refused by value.
    """
    seed = check_seed(seed, "seed")
    from latentbench.report._html import build_report
    from latentbench.report._metadata import read_item_metadata
    from latentbench.select import SelectionRecord

    tell = progress or _quiet
    _check_options(l2, method, top, n_boot)
    check_jobs(n_jobs)  # 0 or "2": refused before the fit, as bootstrap() would refuse it
    check_flag(force, "force")  # force="no" overwrote the file
    if path is not None and as_path(path, "path").is_file() and not force:  # before any work
        raise InputError(f"path={path} exists; pass force=True to overwrite it, or another path")
    source = as_path(source, "source")
    out = _destination(path)
    kind = _kind(source)
    live_estimate = kind == "store" and _live_estimate(source, run_id)
    if live_estimate:  # estimate --live: the store's estimates, not a selection
        kind = "estimate"
    compared = _live_comparison(source, run_id) if kind == "store" else None
    if compared is not None:  # compare --live: the comparison's page, not a selection's
        kind, run_id = "compare", compared
    if kind in ("experiment", "estimate-experiment", "estimate", "compare"):
        live = live_estimate or compared is not None
        given = {"responses": responses, "items": items, "selection": selection,
                 "run_id": None if live else run_id, "n_boot": n_boot or None,
                 "method": None if method == "items" else method,
                 "n_jobs": None if n_jobs == 1 else n_jobs,
                 "seed": seed or None}  # fmt: skip
        return _experiment_page(kind, source, out, title=title, top=top, given=given, run_id=run_id)
    _check_page_options(kind, source, responses=responses, run_id=run_id, n_boot=n_boot,
                        method=method, n_jobs=n_jobs, seed=seed)  # fmt: skip
    if 0 < n_boot < MIN_REPORT_BOOTSTRAP:  # (after an experiment's report refused it)
        raise _too_few_replicates(n_boot)
    if kind in ("selection", "store"):
        _check_run_options(source, selection, items)
    result, matrix, run, notes = _read_source(kind, source, responses, run_id, tell)
    if selection is not None:
        run = SelectionRecord.read_json(selection)
    meta = read_item_metadata(items) if items is not None else None
    if meta is not None and result is not None:
        notes += _metadata_notes(meta, items, result)
    boot = None
    if n_boot and result is not None:
        boot, note = _bootstrap_with_note(result, matrix, n_boot, method, n_jobs, seed, tell)
        notes.append(note)
    notes += _missing_responses_notes(result, matrix)
    # the items the reader left out (no observed score): on the page too, as fit.json has them
    dropped = _dropped_items_notes(kind, source, matrix)
    notes += dropped
    # a file compressed on its own is titled as its plain file (r.csv.gz: r, not r.csv)
    name = _unpacked(source).stem if source.is_file() else source.name
    if kind == "selection" and source.is_file() and source.parent.name:
        name = f"{source.parent.name}/{source.name}"  # 'selection' alone names no run
    provenance = _provenance(kind, source, responses, notes) if result is not None else {}
    html = build_report(
        result,
        matrix,
        selection=run,
        path=out,
        force=True,  # an existing file was refused above unless force
        title=title or f"latentbench report: {name}",
        top=top,
        bootstrap=boot,
        item_metadata=meta,
        notes=dropped,
        provenance=provenance,
        progress=tell,
    )
    return Report(html, out, tuple(notes))


def _provenance(
    kind: _Kind, source: Path, responses: str | os.PathLike[str] | None, notes: Sequence[str]
) -> dict[str, str]:
    """Where a fit's page came from, for the fit details of a reader who did not run it: the
    fit directory and the version that wrote it, the responses (as fit.json records them, and
    whether the report used them) and their SHA-256."""
    from latentbench.io import file_sha256

    if kind != "fit":  # a responses file, fitted for this page
        return {"responses": str(source), "responses SHA-256": file_sha256(source)}
    out = {"fit directory": str(source)}
    try:
        info = json.loads((source / "fit.json").read_text())
    except (OSError, ValueError, RecursionError):
        info = {}
    info = info if isinstance(info, dict) else {}
    if info.get("latentbench_version"):
        out["fitted by"] = f"latentbench {info['latentbench_version']}"
    if responses is not None:
        out["responses"] = f"{responses} (given to the report)"
        out["responses SHA-256"] = file_sha256(Path(responses))
        return out
    entry: dict[str, Any] = info["input"] if isinstance(info.get("input"), dict) else {}
    said = [n.removeprefix("responses: ") for n in notes if n.startswith("responses: ")]
    if said:
        out["responses"] = said[0]
    elif entry.get("path") or entry.get("store"):
        out["responses"] = str(entry.get("path") or entry.get("store"))
    else:
        out["responses"] = "not recorded in fit.json"
    digest = entry.get("sha256") or entry.get("cells_sha256")
    if digest:
        out["responses SHA-256" if entry.get("sha256") else "cells SHA-256"] = str(digest)
    return out


def _dropped_items_notes(kind: _Kind, source: Path, matrix: Any) -> list[str]:
    """A note naming the items with no observed score that the reader left out of the
    fitted matrix: those ``fit.json`` records (``input.dropped_items``) for a fit directory,
    those of the responses file read here otherwise; none when there are none."""
    if kind == "fit":
        try:
            entry = json.loads((source / "fit.json").read_text()).get("input") or {}
        except (OSError, ValueError, RecursionError, AttributeError):
            return []  # IRTResult.load has read it: not reached
        items = entry.get("dropped_items") if isinstance(entry, dict) else None
    elif kind == "responses":
        items = getattr(matrix, "dropped_items", ())
    else:
        return []
    if not items or not isinstance(items, list | tuple):
        return []
    shown = ", ".join(repr(str(i)) for i in items[:3]) + (", ..." if len(items) > 3 else "")
    return [
        f"responses: {len(items)} item(s) with no observed score left out when the responses "
        f"were read ({shown}): the fit has no parameters for them"
    ]


def _check_page_options(
    kind: _Kind,
    source: Path,
    *,
    responses: str | os.PathLike[str] | None,
    run_id: str | None,
    n_boot: int,
    method: str,
    n_jobs: int,
    seed: int,
) -> None:
    """Refuse an option that the page of ``source`` (a fit, a responses file or a selection
    run: ``kind``) does not read, which was accepted and ignored: a selection run's page has
    no fit to bootstrap and no responses to add; ``run_id`` chooses a run of a live-run store
    only; a responses file is its own responses; ``method``, ``n_jobs`` and ``seed`` are the
    bootstrap's, which ``n_boot=0`` does not run. Options left at their defaults are not
    given (as :func:`_experiment_page` reads them)."""
    bootstrap = {"method": None if method == "items" else method,
                 "n_jobs": None if n_jobs == 1 else n_jobs, "seed": seed or None}  # fmt: skip
    refused: list[tuple[str, object, str]] = []
    if kind in ("selection", "store"):
        run = (
            f"a selection run's report ({source} is a selection run, whose page is drawn from "
            "its record: no fit to bootstrap and no responses to add); expected it only with a "
            "fit directory or a responses file"
        )
        given = {"responses": responses, "n_boot": n_boot or None, **bootstrap}
        refused += [(name, value, run) for name, value in given.items()]
    if run_id is not None and kind != "store":
        what = {"fit": f"a fit directory ({source})", "responses": f"a responses file ({source})"}
        of = what.get(kind, f"a selection run ({source}: its selection.json holds one run)")
        refused.append(
            ("run_id", run_id, f"a report of {of}; expected run_id only with a live-run store "
             "(.duckdb), to choose one of its runs")
        )  # fmt: skip
    if kind == "responses" and responses is not None:
        refused.append(
            ("responses", responses, f"a responses file's report ({source} is the responses, "
             "fitted for the page); expected responses only with a fit directory")
        )  # fmt: skip
    if kind in ("fit", "responses") and not n_boot:
        why = (
            "a report without n_boot (a bootstrap option, and n_boot=0 draws no replicates: "
            "the intervals are plug-in); expected n_boot=N (N >= "
            f"{MIN_REPORT_BOOTSTRAP}) with it, or drop it"
        )
        refused += [(name, value, why) for name, value in bootstrap.items()]
    for name, value, why in refused:
        if value is not None:
            raise InputError(f"{name}={value}: not an option of {why}")


def _check_run_options(
    source: Path,
    selection: str | os.PathLike[str] | None,
    items: str | os.PathLike[str] | None,
) -> None:
    """Refuse, for a selection run's source, a second ``selection`` (the page would show it
    instead of the source's) and item metadata (a run's page has no item table)."""
    for name, value, why in (
        ("selection", selection, "its page shows the source's own run"),
        ("items", items, "its page has no item table to annotate"),
    ):
        if value is not None:
            raise InputError(
                f"{name}={value}: {source} is a selection run and {why}; expected {name} only "
                "with a fit directory or a responses file"
            )


def _quiet(phase: str, done: int | None = None, total: int | None = None) -> None:
    """The progress callback that says nothing."""
    return None


def _too_few_replicates(n_boot: object) -> InputError:
    """The error for an ``n_boot`` that is neither 0 nor at least :data:`MIN_REPORT_BOOTSTRAP`."""
    return InputError(
        f"n_boot={n_boot!r}; expected 0 (plug-in intervals) or an integer >= "
        f"{MIN_REPORT_BOOTSTRAP}: a 95% interval's ends are the 2.5% and 97.5% quantiles of "
        f"the replicates, which fewer than {MIN_REPORT_BOOTSTRAP} leave to the one or two "
        "most extreme refits (200 or more is better)"
    )


def _check_options(l2: float | None, method: str, top: object, n_boot: object) -> None:
    """Refuse, before any work, an ``l2``, an unknown ``method``, a ``top`` that is not an
    integer >= 1 and an ``n_boot`` that is not an integer >= 0."""
    if l2 is not None:  # was passed to TwoPL(l2=l2), whose default priors never used it
        raise InputError(
            f"l2={l2!r}: a report fits a responses file with the default priors, which the "
            "ridge does not enter; expected no l2 (for a joint-ML fit, save "
            "TwoPL(prior=None, l2=...).fit(matrix) or run `latentbench fit FILE --joint-ml "
            "--l2 X --out DIR`, and report the directory)"
        )
    if method not in ("items", "parametric"):
        raise InputError(f"method={method!r}; expected 'items' or 'parametric'")
    if not is_integer(top) or top < 1:  # type: ignore[operator]
        raise InputError(f"top={top!r}; expected an integer >= 1 (models / rows shown)")
    if not is_integer(n_boot) or n_boot < 0:  # type: ignore[operator]
        raise _too_few_replicates(n_boot)


def _destination(path: str | os.PathLike[str] | None) -> Path | None:
    """The HTML file to write (None: none), checked before the fit or bootstrap (not cheap)."""
    from latentbench.io import check_destination

    if path is None:
        return None
    out = Path(path)
    if out.is_dir():
        raise InputError(f"path={out} is a directory; expected the HTML file to write")
    if out.suffix and out.suffix.lower() not in (".html", ".htm"):  # x.pdf held HTML
        raise InputError(
            f"path={out}: the report is an HTML page, and a {out.suffix} file would hold HTML; "
            "expected a file ending in .html or .htm (for a PDF, print the page from a browser)"
        )
    check_destination(out, "file", flag="path=")
    return out


def _experiment_page(
    kind: _Kind,
    source: Path,
    out: Path | None,
    *,
    title: str | None,
    top: int,
    given: dict[str, Any],
    run_id: str | None = None,
) -> Report:
    """The report of an experiment directory or of estimates, drawn from their own files: an
    option of a fit's report among ``given`` (None: not given) is refused."""
    from latentbench.report._compare import build_compare_report
    from latentbench.report._estimate import build_estimate_report
    from latentbench.report._estimate_experiment import build_estimate_experiment_report
    from latentbench.report._experiment import build_experiment_report

    extra = [f"{name}={value}" for name, value in given.items() if value is not None]
    if extra:
        what = {
            "estimate": "an estimate's report ({source} holds estimates; their page is drawn "
            "from estimate.json and its calibration)",
            "compare": "a comparison's report ({source} holds a comparison; its page is drawn "
            "from compare.json)",
        }.get(
            kind,
            "an experiment's report ({source} is an experiment directory; its page is drawn "
            "from its own files)",
        )
        raise InputError(f"{extra[0]}: not an option of " + what.format(source=source))
    if kind == "compare":
        name = source.parent.name if source.is_file() else source.name
        comparison: Any = source
        if source.suffix.lower() in (".duckdb", ".db"):  # compare --live: the run's result
            comparison, name = _stored_comparison(source, run_id), source.stem
        title = title or f"latentbench compare: {name}"
        html = build_compare_report(comparison, path=out, title=title, top=top, force=True)
        return Report(html, out)
    if kind == "estimate":
        name = (  # est/estimate.json: est; run.duckdb: run (as a selection store's page)
            source.parent.name
            if source.name == "estimate.json"
            else source.stem
            if source.is_file()
            else source.name
        )
        title = title or f"latentbench estimate: {name}"
        html = build_estimate_report(
            source, path=out, title=title, top=top, force=True, run_id=run_id
        )
        return Report(html, out)
    if kind == "experiment":
        title = title or f"latentbench experiment: {source.name}"
        return Report(build_experiment_report(source, path=out, title=title, force=True), out)
    title = title or f"latentbench estimate experiment: {source.name}"
    html = build_estimate_experiment_report(source, path=out, title=title, top=top, force=True)
    return Report(html, out)


def _stored_comparison(source: Path, run_id: str | None) -> Any:
    """The :class:`~latentbench.select.CompareResult` of the live comparison ``run_id`` in
    the store ``source``: its last completed session's, or that of a later session that
    stopped early; a run with none stored is an error saying what the store holds."""
    from latentbench.select import stored_comparisons

    [(rid, result, status)] = stored_comparisons(source, run_id)
    if result is None:
        raise InputError(
            f"{source}: run {rid!r} is a live comparison (latentbench compare --live) with no "
            f"result stored yet (status {status}: no session completed or stopped); re-run "
            "its command to resume it"
        )
    return result


def _read_source(
    kind: _Kind,
    source: Path,
    responses: str | os.PathLike[str] | None,
    run_id: str | None,
    tell: Progress,
) -> tuple[Any, Any, Any, list[str]]:
    """``(result, matrix, run, notes)`` of a fit directory (with its responses when known),
    a selection, a live-run store or a responses file (fitted with the default priors)."""
    from latentbench.io import ResponseMatrix
    from latentbench.irt import IRTResult, TwoPL
    from latentbench.select import SelectionRecord

    result = matrix = run = None
    notes: list[str] = []
    if kind == "fit":
        result = IRTResult.load(source)
        if responses is not None:
            matrix = _aligned(ResponseMatrix.read(responses), result)
        else:
            recorded, note = _responses_from_fit(source)
            notes += [note] if note is not None else []
            matrix = _aligned(recorded, result) if recorded is not None else None
    elif kind == "selection":
        run = SelectionRecord.read_json(source / "selection.json" if source.is_dir() else source)
    elif kind == "store":
        run = SelectionRecord.from_store(source, run_id)
    else:
        tell(f"reading {source.name}")
        matrix = ResponseMatrix.read(source)
        # as `fit` does: trials detected from the score grid (TwoPL's default, trials="auto")
        result = TwoPL().fit(matrix, progress=tell)
    return result, matrix, run, notes


def _bootstrap_with_note(
    result: Any, matrix: Any, n_boot: int, method: str, n_jobs: int, seed: int, tell: Progress
) -> tuple[Any, str]:
    """:func:`_bootstrap` (refused without the responses) and a note of its time."""
    if matrix is None:
        raise InputError(f"n_boot={n_boot} needs the responses (responses=FILE)")
    boot = _bootstrap(result, matrix, n_boot, method, n_jobs, seed, tell)
    return boot, f"bootstrap: {n_boot} refits in {boot.seconds:.1f} s"


def _missing_responses_notes(result: Any, matrix: Any) -> list[str]:
    """What a fit's page lacks without the responses (none with them, or without a fit)."""
    if result is None or matrix is not None:
        return []
    if result.saved_abilities is not None:
        return [
            "no responses: the abilities and intervals are those fit saved (abilities.csv); "
            "item flags were not computed (pass responses=FILE)"
        ]
    if result.rank > 1 and result.saved_intervals is not None:
        # fit.json records the intervals that abilities.csv holds, but load set them aside: a
        # rank > 1 directory written before its theta was the ability (the first factor's
        # intervals then), or a table edited since (load warned of that one)
        return [
            f"no responses: the intervals in abilities.csv were not used: a rank-{result.rank} "
            "fit directory written by a version before its theta was the ability (they are "
            "its first factor's) or a table edited since; standard errors and item flags were "
            "not computed (pass responses=FILE, or refit with `latentbench fit` to save them)"
        ]
    return ["no responses: standard errors and item flags were not computed (pass responses=FILE)"]


def _bootstrap(
    result: Any, matrix: Any, n_boot: int, method: str, n_jobs: int, seed: int, tell: Progress
) -> Any:
    """The bootstrap, its replicates done of n passed on to ``tell``."""
    from latentbench.irt.inference import bootstrap

    def replicates(done: int, total: int) -> None:
        tell("bootstrap refits", done, total)

    return bootstrap(
        result,
        matrix,
        n_boot=n_boot,
        method=method,  # type: ignore[arg-type]
        n_jobs=n_jobs,
        random_state=seed,
        progress=replicates,
    )


def _unpacked(path: Path) -> Path:
    """``path`` less its compression suffix (``io._arrival.unpacked_path``)."""
    from latentbench.io._arrival import unpacked_path

    return unpacked_path(path)
