"""``latentbench fit``: fit the 2PL / rank-r model and write tidy tables."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from latentbench.cli import app
from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix
from latentbench.irt import IRTResult, TwoPL

console = Console()


def load_matrix(
    responses: Path | None,
    store: Path | None,
    benchmark: str | None,
    metric: str | None = None,
    filter: str | None = None,
) -> ResponseMatrix:
    """Read a matrix from a file, or from the embedded store for one benchmark."""
    if store is not None:
        if benchmark is None:
            raise InputError("--store needs --benchmark NAME (see `latentbench ls --store ...`)")
        from latentbench.io.store import Store

        with Store(store, read_only=True) as db:
            return db.matrix(benchmark, metric=metric, filter=filter)
    if responses is None:
        raise InputError("give a RESPONSES file, or --store STORE --benchmark NAME")
    return ResponseMatrix.read(responses)


def write_fit(result: IRTResult, out: Path) -> dict[str, Path]:
    """Write ``abilities.csv``, ``items.csv`` and ``fit.json`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "abilities": out / "abilities.csv",
        "items": out / "items.csv",
        "fit": out / "fit.json",
    }
    result.abilities.to_csv(paths["abilities"], index=False)
    result.items.to_csv(paths["items"], index=False)
    paths["fit"].write_text(json.dumps(result.fit_info(), indent=2))
    return paths


def fit_with_progress(estimator: TwoPL, matrix: ResponseMatrix, quiet: bool = False) -> IRTResult:
    """Fit with a live status line (sweep and loss) on the console."""
    if quiet:
        return estimator.fit(matrix)
    with console.status("fitting ...") as status:

        def progress(iteration: int, loss: float) -> None:
            status.update(f"fitting: sweep {iteration}, loss {loss:.6g}")

        return estimator.fit(matrix, callback=progress)


def print_fit(result: IRTResult, top: int = 10) -> None:
    """Short rich tables: top models, most and least discriminating items."""
    console.print(
        f"[bold]cBMM fit[/bold]: {result.shape[0]} models x {result.shape[1]} items, "
        f"rank {result.rank}, sigma {result.sigma:g}; {result.n_iter} sweeps in "
        f"{result.seconds:.2f} s, converged: {result.converged}, loss {result.loss:.6g}"
    )
    abilities = result.abilities.sort_values("theta", ascending=False).head(top)
    table = Table(title=f"Top {len(abilities)} models by ability")
    for column in ("rank", "model", "theta", "accuracy", "rank by accuracy"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for row in abilities.itertuples():
        table.add_row(
            str(row.rank_theta),
            str(row.model),
            f"{row.theta:.3f}",
            f"{row.accuracy:.3f}",
            str(row.rank_accuracy),
        )
    console.print(table)
    items = result.items.sort_values("discrimination", ascending=False)
    table = Table(title="Most and least discriminating items")
    for column in ("item", "discrimination", "difficulty (-b)", "p-value"):
        table.add_column(column, justify="left" if column == "item" else "right")
    k = min(5, len(items) // 2)
    for part in (items.head(k), items.tail(k)):
        for row in part.itertuples():
            table.add_row(
                str(row.item),
                f"{row.discrimination:.3f}",
                f"{row.difficulty:.3f}",
                f"{row.p_value:.3f}",
            )
        if part is not None and k:
            table.add_section()
    console.print(table)


@app.command()
def fit(
    responses: Path | None = typer.Argument(
        None, help="Response file: Parquet or CSV, long (model,item,score) or wide."
    ),
    rank: str = typer.Option("1", help="Number of latent factors, or 'auto'."),
    sigma: float = typer.Option(1.0, help="Temperature of the logistic link."),
    l2: float = typer.Option(1e-2, help="Ridge on all parameters (keeps estimates finite)."),
    tol: float = typer.Option(1e-6, help="Relative objective change for stopping."),
    max_iter: int = typer.Option(5000, help="Maximum number of MM sweeps."),
    out: Path = typer.Option(Path("latentbench-fit"), help="Output directory."),
    store: Path | None = typer.Option(None, help="Read from this DuckDB store."),
    benchmark: str | None = typer.Option(None, help="Benchmark to read from --store."),
    metric: str | None = typer.Option(None, help="Metric, when the benchmark has several."),
    filter: str | None = typer.Option(None, help="Filter, when the benchmark has several."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No tables or progress."),
) -> None:
    """Fit the 2PL (or rank-r) model by cBMM; write abilities.csv, items.csv and fit.json."""
    try:
        matrix = load_matrix(responses, store, benchmark, metric, filter)
        rank_value: int | str = "auto" if rank == "auto" else _int_option("rank", rank)
        estimator = TwoPL(rank=rank_value, sigma=sigma, l2=l2, tol=tol, max_iter=max_iter)  # type: ignore[arg-type]
        result = fit_with_progress(estimator, matrix, quiet)
    except InputError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    paths = write_fit(result, out)
    if store is not None and benchmark is not None:
        from latentbench.io.store import Store

        with Store(store) as db:
            if hasattr(db, "record_fit"):
                db.record_fit(benchmark, result)
    if not quiet:
        print_fit(result)
        console.print(f"wrote {paths['abilities']}, {paths['items']}, {paths['fit']}")


def _int_option(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise InputError(f"--{name} {value!r}; expected an integer or 'auto'") from None
