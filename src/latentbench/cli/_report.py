"""``latentbench report``: one self-contained HTML page from a fit, a responses file or a
selection run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from latentbench.cli import Command, app, as_given, example
from latentbench.cli._common import (
    clean_warnings,
    cli_spelling,
    console,
    escape,
    fail,
    progress_bar,
)
from latentbench.exceptions import InputError

__all__ = ["report", "report_path"]


@app.command(
    cls=Command,
    epilog=example(
        "latentbench report fit/ --out report.html",
        "latentbench report responses.parquet --items items.csv --out report.html",
        "latentbench report run/selection.json --out selection.html",
        "latentbench report run.duckdb --out live.html",
        "latentbench report exp/ --out experiment.html",
        "latentbench report est/ --out estimate.html",
    ),
)
def report(
    source: Path = typer.Argument(
        ...,
        help="A fit directory (latentbench fit --out DIR), an experiment directory "
        "(latentbench experiment --out DIR), estimates (latentbench estimate --out DIR, its "
        "estimate.json, or a folder of such directories), a comparison (latentbench compare "
        "--out DIR), a responses file (fitted first), a "
        "selection run's directory or its selection.json (latentbench select replay) or a "
        "live-run store (.duckdb). A directory holding more than one reports the fit, else "
        "the experiment, and says so (pass DIR/selection.json for the selection).",
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="HTML file to write (.html or .htm; x.pdf is refused). Default ./report.html, "
        "or ./report-2.html, -3, ... when that exists. An existing --out file is refused "
        "unless --force.",
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
    run_id: str | None = typer.Option(
        None,
        help="Live-run store: the run (default: the latest; a store of live estimates: all of "
        "them, as a series).",
    ),
    title: str | None = typer.Option(None, help="Page title."),
    l2: float | None = typer.Option(
        None,
        help="Not supported: a responses file is fitted with the default priors, which a ridge "
        "does not enter; for a joint-ML fit run `latentbench fit FILE --joint-ml --l2 X --out "
        "DIR` and report DIR.",
        hidden=True,
    ),
    top: int = typer.Option(30, help="Models / rows shown in figures and long tables."),
    n_boot: int = typer.Option(
        0,
        "--bootstrap",
        help="Bootstrap replicates for ability and rank intervals (0: plug-in; else at least "
        "100, 200 or more recommended).",
    ),
    method: str = typer.Option("items", help="Bootstrap: 'items' or 'parametric'."),
    jobs: int = typer.Option(1, help="Bootstrap worker processes (-1: all cores)."),
    seed: int = typer.Option(0, help="Bootstrap seed."),
    quiet: bool = typer.Option(
        False,
        "--quiet/--no-quiet",
        "-q",
        help="No notes or progress (the page written is still named).",
    ),
) -> None:
    """Build a self-contained HTML report that opens with findings.

    Interactive plots and sortable tables with CSV export, in one file that needs no network.
    """
    from latentbench.report import report_from

    claimed = out is None  # ./report.html or -k: created when chosen, this run's alone
    with clean_warnings(), progress_bar(quiet) as progress:
        try:
            if l2 is not None:
                raise InputError(
                    f"--l2 {l2:g}: report fits a responses file with the default priors, which "
                    "the ridge does not enter; expected no --l2 (for a joint-ML fit, run "
                    "`latentbench fit FILE --joint-ml --l2 X --out DIR` and report DIR)"
                )
            out = report_path(out, force, claim=claimed)
            page = report_from(
                source,
                out,
                responses=responses,
                items=items,
                selection=selection,
                run_id=run_id,
                title=title,
                top=top,
                n_boot=n_boot,
                method=method,  # type: ignore[arg-type]  # checked by report_from
                n_jobs=jobs,
                seed=seed,
                progress=progress,
                force=force or claimed,  # the empty file claimed above is this run's
            )
        except (InputError, json.JSONDecodeError, OSError) as exc:
            _unclaim(out, claimed)
            fail(exc)
        except BaseException:  # Ctrl-C: no empty ./report.html left behind either
            _unclaim(out, claimed)
            raise
    if not quiet:
        for note in page.notes:
            console.print(escape(cli_spelling(note)), soft_wrap=True)
    # under -q too: without --out the page may be a fresh ./report-N.html
    console.print(f"wrote {escape(as_given(out))} ({len(page.html) / 1e6:.2f} MB)", soft_wrap=True)


def report_path(out: Path | None, force: bool = False, claim: bool = False) -> Path:
    """Where ``report`` writes: ``out`` (an existing file only with ``force``), else
    ``./report.html`` or the first free ``./report-2.html``, ``-3``, ... (as ``fit`` never
    overwrites a previous run silently). With ``claim``, that default file is created empty
    here, exclusively (atomic), so that two runs started together never pick the same one."""
    if out is None:
        candidate, k = Path("report.html"), 2
        while True:
            if not claim and not candidate.exists():
                return candidate
            if claim:
                try:
                    os.close(os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                    return candidate
                except FileExistsError:
                    pass
            candidate, k = Path(f"report-{k}.html"), k + 1
    if out.exists() and not out.is_dir() and not force:
        raise InputError(f"--out {out} exists; pass --force to overwrite it, or another --out FILE")
    return out


def _unclaim(out: Path | None, claimed: bool) -> None:
    """Remove the default report file this run claimed when it writes no page there (only
    while it is still the empty file claimed)."""
    if claimed and out is not None and out.is_file() and out.stat().st_size == 0:
        out.unlink(missing_ok=True)
