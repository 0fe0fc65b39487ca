"""``latentbench report``: one self-contained HTML page from a fit, a responses file or a
selection run."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import typer
from rich.console import Console
from rich.markup import escape

from latentbench.cli import app
from latentbench.exceptions import InputError

console = Console()

__all__ = ["load_fit", "report"]


def load_fit(directory: Path) -> Any:
    """Rebuild an :class:`~latentbench.irt.IRTResult` from ``latentbench fit --out DIR``.

    Reads ``abilities.csv``, ``items.csv`` and ``fit.json``. The raw (unnormalised) parameters
    are not saved, so ``raw`` is None (standard errors then put the ridge on the reported
    scale, a negligible difference for a small ridge).
    """
    from latentbench.irt import IRTResult

    paths = {name: directory / name for name in ("abilities.csv", "items.csv", "fit.json")}
    missing = [name for name, p in paths.items() if not p.exists()]
    if missing:
        raise InputError(
            f"{directory} lacks {', '.join(missing)}; expected the output of "
            "`latentbench fit --out DIR`"
        )
    abilities = pd.read_csv(paths["abilities.csv"], dtype={"model": str}, keep_default_na=False)
    items = pd.read_csv(paths["items.csv"], dtype={"item": str}, keep_default_na=False)
    info = json.loads(paths["fit.json"].read_text())
    rank = int(info.get("rank", 1))
    if rank == 1:
        U = abilities[["theta"]].to_numpy(float)
        V = items[["discrimination"]].to_numpy(float)
    else:
        U = abilities[[f"theta_{k + 1}" for k in range(rank)]].to_numpy(float)
        V = items[[f"discrimination_{k + 1}" for k in range(rank)]].to_numpy(float)
    return IRTResult(
        abilities=abilities,
        items=items,
        U=U,
        V=V,
        b=items["easiness"].to_numpy(float),
        sigma=float(info.get("sigma", 1.0)),
        rank=rank,
        loss=float(info.get("loss", np.nan)),
        neg_log_likelihood=float(info.get("neg_log_likelihood", np.nan)),
        loss_history=[],
        n_iter=int(info.get("iterations", 0)),
        converged=bool(info.get("converged", False)),
        seconds=float(info.get("seconds", 0.0)),
        options=dict(info.get("options", {})),
        shape=(len(abilities), len(items)),
        n_observed=int(info.get("n_observed", 0)),
    )


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


@app.command()
def report(
    source: Path = typer.Argument(
        ...,
        help="A fit directory (latentbench fit --out DIR), a responses file (fitted first), "
        "or a selection.json (latentbench select replay).",
    ),
    out: Path = typer.Option(Path("report.html"), "--out", "-o", help="HTML file to write."),
    responses: Path | None = typer.Option(
        None,
        help="With a fit directory: the responses it was fitted on (adds standard "
        "errors and diagnostics).",
    ),
    selection: Path | None = typer.Option(
        None, help="Also include this selection.json in the page."
    ),
    title: str | None = typer.Option(None, help="Page title."),
    l2: float = typer.Option(1e-2, help="Ridge, when SOURCE is a responses file."),
    top: int = typer.Option(30, help="Models / rows shown in figures and long tables."),
    n_boot: int = typer.Option(
        0, "--bootstrap", help="Bootstrap replicates for ability and rank intervals (0: plug-in)."
    ),
    method: str = typer.Option("items", help="Bootstrap: 'items' or 'parametric'."),
    jobs: int = typer.Option(1, help="Bootstrap worker processes (-1: all cores)."),
    seed: int = typer.Option(0, help="Bootstrap seed."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No messages."),
) -> None:
    """Build a self-contained HTML report (figures embedded, sortable tables, no network)."""
    from latentbench.io import ResponseMatrix
    from latentbench.irt import TwoPL
    from latentbench.report import build_report

    try:
        result = matrix = run = None
        if source.is_dir():
            result = load_fit(source)
            if responses is not None:
                matrix = _aligned(ResponseMatrix.read(responses), result)
        elif not source.exists():
            raise InputError(f"{source} does not exist")
        elif source.suffix.lower() == ".json":
            run = json.loads(source.read_text())
            if not isinstance(run, dict) or "arms" not in run:
                raise InputError(f"{source} is not a selection.json (no 'arms')")
        else:
            matrix = ResponseMatrix.read(source)
            if quiet:
                result = TwoPL(l2=l2).fit(matrix)
            else:
                with console.status(f"fitting {escape(source.name)} ..."):
                    result = TwoPL(l2=l2).fit(matrix)
        if selection is not None:
            run = json.loads(selection.read_text())
        boot = None
        if n_boot and result is not None:
            if matrix is None:
                raise InputError("--bootstrap needs the responses (--responses FILE)")
            if method not in ("items", "parametric"):
                raise InputError(f"--method {method!r}; expected 'items' or 'parametric'")
            from latentbench.irt.inference import bootstrap

            status = nullcontext() if quiet else console.status(f"bootstrap: {n_boot} refits")
            with status:
                boot = bootstrap(
                    result, matrix, n_boot=n_boot, method=method, n_jobs=jobs, random_state=seed
                )
        name = source.stem if source.is_file() else source.name
        html = build_report(
            result,
            matrix,
            selection=run,
            path=out,
            title=title or f"latentbench report: {name}",
            top=top,
            bootstrap=boot,
        )
    except (InputError, json.JSONDecodeError, OSError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    if not quiet:
        console.print(f"wrote {escape(str(out))} ({len(html) / 1e6:.2f} MB)")
