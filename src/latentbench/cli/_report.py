"""``latentbench report``: one self-contained HTML page from a fit, a responses file or a
selection run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from latentbench.cli import Command, app, example
from latentbench.cli._common import clean_warnings, console, fail
from latentbench.exceptions import InputError

__all__ = ["load_fit", "report"]


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


def _responses_from_fit(directory: Path) -> Path | None:
    """The responses file a fit recorded in fit.json (``input.path``), when it still exists."""
    try:
        info = json.loads((directory / "fit.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    path = (info.get("input") or {}).get("path")
    if path and Path(path).is_file():
        return Path(path)
    return None


def read_selection(path: Path) -> dict[str, Any]:
    """A selection.json (``latentbench select replay``), checked: an ``arms`` list whose
    entries name a ``model`` and hold a numeric ``estimate``."""
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not JSON ({exc}); expected a selection.json") from None
    expected = "expected the output of `latentbench select replay`"
    if not isinstance(run, dict) or "arms" not in run:
        raise InputError(f"{path} is not a selection.json (no 'arms'); {expected}")
    arms = run["arms"]
    if not isinstance(arms, list) or not arms:
        raise InputError(f"{path}: 'arms' is {type(arms).__name__} {arms!r:.40}; {expected}")
    for k, arm in enumerate(arms):
        if not isinstance(arm, dict) or "model" not in arm or "estimate" not in arm:
            raise InputError(f"{path}: arms[{k}] lacks 'model' or 'estimate'; {expected}")
        estimate = arm["estimate"]
        if isinstance(estimate, bool) or not isinstance(estimate, (int, float)):
            raise InputError(f"{path}: arms[{k}].estimate is {estimate!r:.40}; expected a number")
    return run


def load_live_run(store: Path, run_id: str | None = None) -> dict[str, Any]:
    """A live selection run in a DuckDB store as a ``selection.json``-like dict.

    The run's final decision holds the finished selection; an unfinished run is summarised
    from its stored observations (mean score and count per model, no intervals).
    """
    from latentbench.io.store import Store

    with Store(store, read_only=True) as db:
        runs = db.connection.execute(
            "SELECT run_id, status, created_at, config FROM selection_runs ORDER BY created_at"
        ).fetchall()
        if not runs:
            raise InputError(
                f"{store}: no selection runs stored; `latentbench select live` writes them "
                "(for ingested results use `latentbench fit --store ... --benchmark ...`)"
            )
        chosen = runs[-1] if run_id is None else next((r for r in runs if r[0] == run_id), None)
        if chosen is None:
            raise InputError(
                f"{store}: no run {run_id!r}; stored runs: {', '.join(r[0] for r in runs)}"
            )
        rid, status, created, config = chosen
        decisions = db.selection_decisions(rid)
        final = next((d for d in reversed(decisions) if d.get("phase") == "final"), None)
        observations = db.selection_observations(rid)
    if final is not None:
        run: dict[str, Any] = {k: v for k, v in final.items() if k not in ("phase", "round")}
    else:
        scored = observations[observations["score"].notna()]
        grouped = scored.groupby("model")["score"].agg(["mean", "count"])
        arms = [
            {"model": str(m), "estimate": float(r["mean"]), "n_observed": int(r["count"])}
            for m, r in grouped.iterrows()
        ]
        if not arms:
            raise InputError(f"{store}: run {rid!r} ({status}) has no scored observations yet")
        best = max(arms, key=lambda a: float(a["estimate"]))  # type: ignore[arg-type]
        run = {
            "policy": "live (unfinished)",
            "best_model": best["model"],
            "arms": arms,
            "evaluations_total": len(observations),
        }
    run["live_run"] = {
        "store": str(store),
        "run_id": rid,
        "status": status,
        "created_at": str(created),
        "runs_in_store": len(runs),
        "failed_cells": int(observations["error"].notna().sum()),
    }
    try:
        run["live_run"]["config"] = json.loads(config) if config else {}
    except json.JSONDecodeError:
        pass
    return run


@app.command(
    cls=Command,
    epilog=example(
        "latentbench report fit/ --out report.html",
        "latentbench report responses.parquet --items items.csv --out report.html",
        "latentbench report run/selection.json --out selection.html",
        "latentbench report run.duckdb --out live.html",
    ),
)
def report(
    source: Path = typer.Argument(
        ...,
        help="A fit directory (latentbench fit --out DIR), a responses file (fitted first), "
        "a selection.json (latentbench select replay) or a live-run store (.duckdb).",
    ),
    out: Path = typer.Option(Path("report.html"), "--out", "-o", help="HTML file to write."),
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
    with clean_warnings():
        try:
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
            )
        except (InputError, json.JSONDecodeError, OSError) as exc:
            fail(exc)
    if not quiet:
        console.print(f"wrote {escape(str(out))} ({len(html) / 1e6:.2f} MB)")


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
) -> str:
    from latentbench.io import ResponseMatrix
    from latentbench.irt import TwoPL
    from latentbench.report import build_report, read_item_metadata

    if out.is_dir():
        raise InputError(f"--out {out} is a directory; expected the HTML file to write")
    result = matrix = run = None
    notes: list[str] = []
    if source.is_dir():
        result = load_fit(source)
        if responses is None:
            responses = _responses_from_fit(source)
            if responses is not None:
                notes.append(f"responses: {responses} (recorded in fit.json)")
        if responses is not None:
            matrix = _aligned(ResponseMatrix.read(responses), result)
    elif not source.exists():
        raise InputError(f"{source} does not exist")
    elif source.suffix.lower() == ".json":
        run = read_selection(source)
    elif source.suffix.lower() in (".duckdb", ".db"):
        run = load_live_run(source, run_id)
    else:
        from latentbench.cli._fit import _trials

        matrix = ResponseMatrix.read(source)
        # as `fit` does: trials detected from the score grid (the same answer on every route)
        estimator = TwoPL(l2=l2, trials=_trials("auto", matrix, quiet))
        if quiet:
            result = estimator.fit(matrix)
        else:
            with console.status(f"fitting {escape(source.name)} ..."):
                result = estimator.fit(matrix)
    if selection is not None:
        run = read_selection(selection)
    meta = read_item_metadata(items) if items is not None else None
    boot = None
    if n_boot and result is not None:
        if matrix is None:
            raise InputError("--bootstrap needs the responses (--responses FILE)")
        if method not in ("items", "parametric"):
            raise InputError(f"--method {method!r}; expected 'items' or 'parametric'")

        boot = _bootstrap_with_progress(result, matrix, n_boot, method, jobs, seed, quiet)
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
    )


def _bootstrap_with_progress(
    result: Any, matrix: Any, n_boot: int, method: str, jobs: int, seed: int, quiet: bool
) -> Any:
    """The bootstrap with a progress bar: replicates done of n, elapsed and remaining time."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from latentbench.irt.inference import bootstrap

    columns = (
        TextColumn("bootstrap refits"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, disable=quiet, transient=True) as bar:
        task = bar.add_task("bootstrap", total=n_boot)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        boot = bootstrap(
            result,
            matrix,
            n_boot=n_boot,
            method=method,  # type: ignore[arg-type]
            n_jobs=jobs,
            random_state=seed,
            progress=progress,
        )
    if not quiet:
        console.print(f"bootstrap: {n_boot} refits in {boot.seconds:.1f} s")
    return boot
