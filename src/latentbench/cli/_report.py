"""``latentbench report``: one self-contained HTML page from a fit, a responses file or a
selection run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from latentbench.cli import Command, app, example
from latentbench.cli._common import clean_warnings, console, escape, fail, progress_bar
from latentbench.exceptions import InputError

__all__ = ["load_fit", "report", "report_path"]


def load_fit(directory: Path) -> Any:
    """Rebuild an :class:`~latentbench.irt.IRTResult` from ``latentbench fit --out DIR``.

    The directory format is owned by :meth:`latentbench.irt.IRTResult.load`.
    """
    from latentbench.irt import IRTResult

    return IRTResult.load(directory)


def _aligned(matrix: Any, result: Any) -> Any:
    """The matrix restricted and ordered to the fit's models and items."""
    unknown = set(result.model_ids) - set(matrix.model_ids)
    unknown |= set(result.item_ids) - set(matrix.item_ids)
    if unknown:
        raise InputError(
            f"--responses lacks {len(unknown)} of the fit's models / items "
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
    from latentbench.io import ResponseMatrix, file_sha256

    try:
        info = json.loads((directory / "fit.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None, None
    entry = info.get("input") or {}
    if entry.get("store") and entry.get("benchmark") is not None:
        from latentbench.cli._fit import cells_sha256
        from latentbench.io.store import Store

        where = f"benchmark {entry['benchmark']!r} of store {entry['store']}"
        if not Path(entry["store"]).is_file():
            return None, f"responses: {where} (recorded in fit.json) not found; not used"
        with Store(entry["store"], read_only=True) as db:
            matrix = db.matrix(entry["benchmark"], metric=entry.get("metric"),
                               filter=entry.get("filter"))  # fmt: skip
        if entry.get("cells_sha256") and cells_sha256(matrix) != entry["cells_sha256"]:
            return None, (
                f"responses: {where} (recorded in fit.json) has changed since the fit; not used"
            )
        return matrix, f"responses: {where} (recorded in fit.json)"
    path = entry.get("path")
    if not (path and Path(path).is_file()):
        return None, None
    recorded = entry.get("sha256")
    if recorded and file_sha256(path) != recorded:
        return None, (
            f"responses: {path} (recorded in fit.json) has changed since the fit (its SHA-256 "
            "differs); not used: pass --responses FILE to use it anyway"
        )
    return ResponseMatrix.read(path), f"responses: {path} (recorded in fit.json)"


@app.command(
    cls=Command,
    epilog=example(
        "latentbench report fit/ --out report.html",
        "latentbench report responses.parquet --items items.csv --out report.html",
        "latentbench report run/selection.json --out selection.html",
        "latentbench report run.duckdb --out live.html",
        "latentbench report exp/ --out experiment.html",
    ),
)
def report(
    source: Path = typer.Argument(
        ...,
        help="A fit directory (latentbench fit --out DIR), an experiment directory "
        "(latentbench experiment --out DIR), a responses file (fitted first), a "
        "selection run's directory or its selection.json (latentbench select replay) or a "
        "live-run store (.duckdb).",
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="HTML file to write. Default ./report.html, or ./report-2.html, -3, ... when that "
        "exists. An existing --out file is refused unless --force.",
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --out file."),
    responses: Path | None = typer.Option(
        None,
        help="With a fit directory: the responses it was fitted on (adds standard errors and "
        "item flags). Default: the input recorded in fit.json, when that file still exists.",
    ),
    items: Path | None = typer.Option(
        None,
        help="Item metadata (CSV/Parquet with an 'item' column and category columns such as "
        "'subject'): results are broken down by category.",
    ),
    selection: Path | None = typer.Option(
        None, help="Also include this selection.json in the page."
    ),
    run_id: str | None = typer.Option(None, help="Live-run store: the run (default: latest)."),
    title: str | None = typer.Option(None, help="Page title."),
    l2: float = typer.Option(1e-2, help="Ridge, when SOURCE is a responses file."),
    top: int = typer.Option(30, help="Models / rows shown in figures and long tables."),
    n_boot: int = typer.Option(
        0, "--bootstrap", help="Bootstrap replicates for ability and rank intervals (0: plug-in)."
    ),
    method: str = typer.Option("items", help="Bootstrap: 'items' or 'parametric'."),
    jobs: int = typer.Option(1, help="Bootstrap worker processes (-1: all cores)."),
    seed: int = typer.Option(0, help="Bootstrap seed."),
    quiet: bool = typer.Option(False, "--quiet/--no-quiet", "-q", help="No messages."),
) -> None:
    """Build a self-contained HTML report that opens with findings (interactive plots,
    sortable tables with CSV export; no network)."""
    with clean_warnings(), progress_bar(quiet) as progress:
        try:
            out = report_path(out, force)
            html = _report(
                source,
                out,
                responses,
                items,
                selection,
                run_id,
                title,
                l2,
                top,
                n_boot,
                method,
                jobs,
                seed,
                quiet,
                progress,
            )
        except (InputError, json.JSONDecodeError, OSError) as exc:
            fail(exc)
    if not quiet:
        console.print(f"wrote {escape(str(out))} ({len(html) / 1e6:.2f} MB)")


def report_path(out: Path | None, force: bool = False) -> Path:
    """Where ``report`` writes: ``out`` (an existing file only with ``force``), else
    ``./report.html`` or the first free ``./report-2.html``, ``-3``, ... (as ``fit`` never
    overwrites a previous run silently)."""
    if out is None:
        candidate, k = Path("report.html"), 2
        while candidate.exists():
            candidate, k = Path(f"report-{k}.html"), k + 1
        return candidate
    if out.exists() and not out.is_dir() and not force:
        raise InputError(f"--out {out} exists; pass --force to overwrite it, or another --out FILE")
    return out


def _report(
    source: Path,
    out: Path,
    responses: Path | None,
    items: Path | None,
    selection: Path | None,
    run_id: str | None,
    title: str | None,
    l2: float,
    top: int,
    n_boot: int,
    method: str,
    jobs: int,
    seed: int,
    quiet: bool,
    progress: Any = None,
) -> str:
    if progress is None:

        def progress(phase: str, done: int | None = None, total: int | None = None) -> None:
            return None

    from latentbench.io import ResponseMatrix, check_destination
    from latentbench.irt import TwoPL
    from latentbench.report import build_report, read_item_metadata
    from latentbench.select import SelectionRecord

    if out.is_dir():
        raise InputError(f"--out {out} is a directory; expected the HTML file to write")
    check_destination(out, "file")  # before the fit or bootstrap, which are not cheap
    result = matrix = run = None
    notes: list[str] = []
    if (
        source.is_dir()
        and (source / "summary.json").is_file()
        and not (source / "fit.json").is_file()
    ):  # an experiment directory
        from latentbench.report import build_experiment_report

        return build_experiment_report(
            source, path=out, title=title or f"latentbench experiment: {source.name}"
        )
    if source.is_dir() and not (source / "fit.json").is_file():
        if (source / "selection.json").is_file():  # a `select replay / live --out DIR`
            source = source / "selection.json"
        elif (source / "estimate.json").is_file():
            raise InputError(
                f"{source} holds an estimate (estimate.json), which has no report; expected a "
                "fit directory, an experiment directory, a selection (its directory or its "
                "selection.json, or a store) or a responses file"
            )
    if source.is_dir():
        result = load_fit(source)
        if responses is None:
            recorded, note = _responses_from_fit(source)
            notes += [note] if note is not None else []
            if recorded is not None:
                matrix = _aligned(recorded, result)
        else:
            matrix = _aligned(ResponseMatrix.read(responses), result)
    elif not source.exists():
        raise InputError(f"{source} does not exist")
    elif source.suffix.lower() == ".json":
        run = SelectionRecord.read_json(source)
    elif source.suffix.lower() in (".duckdb", ".db"):
        run = SelectionRecord.from_store(source, run_id)
    else:
        progress(f"reading {source.name}")
        matrix = ResponseMatrix.read(source)
        # as `fit` does: trials detected from the score grid (TwoPL's default, trials="auto")
        estimator = TwoPL(l2=l2)
        result = estimator.fit(matrix, progress=progress)
    if selection is not None:
        run = SelectionRecord.read_json(selection)
    meta = read_item_metadata(items) if items is not None else None
    if meta is not None and result is not None:
        known = set(map(str, result.item_ids))
        matched = int(meta["item"].astype(str).isin(known).sum())
        if matched == 0:
            raise InputError(
                f"--items {items}: none of its {len(meta)} item ids is an item of the fit "
                f"(first {str(meta['item'].iloc[0])!r}; the fit's first "
                f"{str(result.item_ids[0])!r}); expected the fit's item ids in column 'item'"
            )
        if matched < len(known):
            missing = len(known) - matched
            notes.append(
                f"--items {items}: {missing} of the fit's {len(known)} items have no metadata"
            )
    boot = None
    if n_boot and result is not None:
        if matrix is None:
            raise InputError("--bootstrap needs the responses (--responses FILE)")
        if method not in ("items", "parametric"):
            raise InputError(f"--method {method!r}; expected 'items' or 'parametric'")

        boot = _bootstrap_with_progress(result, matrix, n_boot, method, jobs, seed, quiet, progress)
    if result is not None and matrix is None:
        console.print(
            "no responses: standard errors and item flags were not computed (pass "
            "--responses FILE)",
            soft_wrap=True,
        )
    for note in notes if not quiet else []:
        console.print(escape(note), soft_wrap=True)
    name = source.stem if source.is_file() else source.name
    return build_report(
        result,
        matrix,
        selection=run,
        path=out,
        title=title or f"latentbench report: {name}",
        top=top,
        bootstrap=boot,
        item_metadata=meta,
        progress=progress,
    )


def _bootstrap_with_progress(
    result: Any,
    matrix: Any,
    n_boot: int,
    method: str,
    jobs: int,
    seed: int,
    quiet: bool,
    progress: Any,
) -> Any:
    """The bootstrap, its replicates done of n shown on the command's progress bar."""
    from latentbench.irt.inference import bootstrap

    def replicates(done: int, total: int) -> None:
        progress("bootstrap refits", done, total)

    boot = bootstrap(
        result,
        matrix,
        n_boot=n_boot,
        method=method,  # type: ignore[arg-type]
        n_jobs=jobs,
        random_state=seed,
        progress=replicates,
    )
    if not quiet:
        console.print(f"bootstrap: {n_boot} refits in {boot.seconds:.1f} s")
    return boot
