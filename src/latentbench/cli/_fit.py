"""``latentbench fit``: fit the 2PL / rank-r model and write tidy tables."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import typer
from rich.table import Table

from latentbench.cli import Command, app, as_given, example
from latentbench.cli._common import (
    claim_out,
    clean_warnings,
    column_flags,
    console,
    err_console,
    escape,
    fail,
    fmt,
    fresh_out,
    print_table,
    progress_bar,
    store_needs_benchmark,
    store_option_without_store,
)
from latentbench.exceptions import InputError

if TYPE_CHECKING:
    from latentbench.io import ResponseMatrix
    from latentbench.irt import IRTResult, TwoPL

__all__ = ["describe_input", "fit", "fit_with_progress", "load_matrix", "print_fit"]


def load_matrix(
    responses: Path | None,
    store: Path | None,
    benchmark: str | None,
    metric: str | None = None,
    filter: str | None = None,
    *,
    split: str | None = None,
    model_col: str | None = None,
    item_col: str | None = None,
    score_col: str | None = None,
    column_options: bool = False,
) -> ResponseMatrix:
    """Read a matrix from a file, or from the embedded store for one benchmark;
    ``column_options``: the command has ``--model-col`` and the like, which a file's column
    advice then names."""
    from latentbench.io import ResponseMatrix

    if store is not None and responses is not None:
        raise InputError(
            f"give RESPONSES ({responses}) or --store {store} --benchmark NAME, not both"
        )
    if store is None:  # the store's options alone would be ignored: refused
        options = {"--benchmark": benchmark, "--metric": metric, "--filter": filter,
                   "--split": split}  # fmt: skip
        given = [flag for flag, value in options.items() if value is not None]
        if given:
            raise InputError(store_option_without_store(given[0]))
    else:
        if benchmark is None:
            raise InputError(store_needs_benchmark(store))
        columns = {"--model-col": model_col, "--item-col": item_col, "--score-col": score_col}
        named = [flag for flag, value in columns.items() if value is not None]
        if named:  # a store's columns are fixed: the option would be ignored
            raise InputError(f"{named[0]} names a column of a RESPONSES file, not of a store")
        from latentbench.io.store import Store

        with Store(store, read_only=True) as db:
            # its layout names the store and benchmark, and the trials averaged, if any
            return db.matrix(benchmark, metric=metric, filter=filter, split=split)
    if responses is None:
        raise InputError("give a RESPONSES file, or --store STORE --benchmark NAME")
    if responses.suffix.lower() in (".duckdb", ".db"):
        raise InputError(
            f"{responses} is a store: read one of its benchmarks with --store {responses} "
            "--benchmark NAME (`latentbench ls --store` lists them)"
        )
    if responses.is_dir() and (responses / "fit.json").exists():
        raise InputError(
            f"{responses} is a directory (it is a fit directory: `latentbench report DIR` "
            "reports it); expected a .parquet or .csv file of responses"
        )
    try:
        return ResponseMatrix.read(responses, model=model_col, item=item_col, score=score_col)
    except InputError as exc:
        if not column_options:
            raise
        raise InputError(column_flags(str(exc))) from None


def describe_input(matrix: ResponseMatrix, quiet: bool = False) -> None:
    """Print how the input was read (layout, models x items, missing, constant items) and warn
    when a wide table looks transposed."""
    summary = matrix.summary()
    layout = getattr(matrix, "layout", None)
    if not quiet:
        kind = "binary" if summary.is_binary else "fractional"
        console.print(
            f"[bold]input[/bold]: {escape(layout or 'matrix')}\n"
            f"  {fmt(summary.n_models)} models x {fmt(summary.n_items)} items, "
            f"{summary.observed_fraction:.1%} observed "
            f"({1 - summary.observed_fraction:.1%} missing), {kind} scores, "
            f"mean {summary.mean_score:.3f}\n"
            f"  constant items: {fmt(len(summary.constant_items))}, constant models: "
            f"{fmt(len(summary.constant_models))}, empty items: "
            f"{fmt(len(summary.empty_items))}, empty models: {fmt(len(summary.empty_models))}",
            soft_wrap=True,
        )
    if layout and layout.startswith("wide") and summary.n_models > 2 * summary.n_items:
        err_console.print(
            f"[yellow]warning:[/yellow] read {fmt(summary.n_models)} models x "
            f"{fmt(summary.n_items)} items: far more models than items. A wide table has one row "
            "per model and one column per item; if the rows are items, transpose the file.",
            soft_wrap=True,
        )


def fit_with_progress(estimator: TwoPL, matrix: ResponseMatrix, quiet: bool = False) -> IRTResult:
    """Fit with a progress bar on stderr naming the phase (choosing the prior, choosing the
    rank, fitting: sweep count; see :func:`~latentbench.cli._common.progress_bar`);
    ``rank="auto"`` then says which rank it chose (the fit's own choice, as
    ``TwoPL(rank="auto").fit`` makes it)."""
    with progress_bar(quiet) as progress:
        result = estimator.fit(matrix, progress=progress)
    selection = result.rank_selection
    if selection is not None:
        if not quiet:
            scores = ", ".join(
                f"{r}: {s:.4f}"
                for r, s in zip(selection.ranks, selection.heldout_log_likelihood, strict=True)
            )
            console.print(
                f"rank auto: chose rank [bold]{selection.chosen}[/bold] (the smallest within one "
                f"standard error of the highest held-out log-likelihood per cell; {scores}; "
                f"additive model c_i + b_j: {selection.additive_log_likelihood:.4f})"
            )
    return result


def _prior_unsearched(result: IRTResult) -> str | None:
    """The line that says a MAP fit's ``a_sd`` was left at the grid's middle because the matrix
    has more models than the held-out choice runs on (nothing held out, so no check line
    either); None otherwise."""
    from latentbench.irt import Prior

    sel, limit = result.prior_selection, Prior().heldout_max_models
    prior = result.options.get("prior")
    chosen = not isinstance(prior, dict) or prior.get("a_sd", "auto") == "auto"
    if sel is None or sel.grid or not chosen or result.shape[0] <= limit:
        return None
    return (
        f"prior: a_sd {sel.a_sd:g}, the grid's middle (above {fmt(limit)} models the "
        "held-out choice and its check are skipped: the data outweigh the prior)"
    )


def print_fit(result: IRTResult, top: int = 10, abilities: Any = None) -> None:
    """Short rich tables: top models (``abilities``: the reported table with intervals, when
    computed), the fit's own held-out check, most and least discriminating items."""
    import pandas as pd

    state = "converged" if result.converged else "[yellow]not converged[/yellow]"
    console.print(
        f"[bold]cBMM fit[/bold]: {fmt(result.shape[0])} models x {fmt(result.shape[1])} items, "
        f"rank {result.rank}, sigma {fmt(result.sigma)}; {fmt(result.n_iter)} sweeps in "
        f"{result.seconds:.1f} s, {state}, loss {fmt(result.loss)}",
        soft_wrap=True,
    )
    check = result.fit_info().get("heldout_check")
    if check is not None:
        worse = check["difference"] > 0.002
        console.print(
            f"held-out check (10% of cells): log-loss {fmt(check['log_loss'])}, additive model "
            + (
                f"not fitted ({check['additive_missing'].split(': ', 1)[1]})"
                if "additive_missing" in check
                else fmt(check["additive_log_loss"])
            )
            + (" (its fit did not converge)" if "additive_note" in check else "")
            + (
                f" [yellow](the {'2PL' if result.rank == 1 else f'rank-{result.rank} fit'} "
                "predicts worse than the additive model)[/yellow]"
                if worse
                else ""
            ),
            soft_wrap=True,
        )
    elif (unsearched := _prior_unsearched(result)) is not None:
        console.print(unsearched, soft_wrap=True)
    table_in = result.abilities if abilities is None else abilities
    ranked = table_in["rank_theta"].isna() if "rank_theta" in table_in.columns else None
    shown = (
        table_in.assign(_unranked=ranked).sort_values(
            ["_unranked", "theta"], ascending=[True, False]
        )
        if ranked is not None
        else table_in.sort_values("theta", ascending=False)
    ).head(top)  # a model without data (not ranked) after the ranked ones
    with_interval = "lower" in shown.columns
    table = Table(title=f"Top {len(shown)} models by ability")
    columns = ["rank", "model", "theta"] + (["95% interval"] if with_interval else [])
    for column in (*columns, "accuracy", "rank by accuracy"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for row in shown.itertuples():
        rank: Any = row.rank_theta
        cells = [fmt(None if rank is pd.NA else rank), escape(str(row.model)), fmt(row.theta)]
        if with_interval:
            cells.append(f"[{fmt(row.lower)}, {fmt(row.upper)}]")
        cells += [fmt(row.accuracy), fmt(None if row.rank_accuracy is pd.NA else row.rank_accuracy)]
        table.add_row(*cells)
    print_table(table)
    items = result.items.sort_values("discrimination", ascending=False)
    correct = "proportion_correct"
    table = Table(title="Most and least discriminating items")
    for column in ("item", "discrimination", "difficulty (-b)", "location (-b/a)", "correct"):
        table.add_column(column, justify="left" if column == "item" else "right")
    k = min(5, len(items) // 2)
    for part in (items.head(k), items.tail(k)):
        for row in part.itertuples():
            table.add_row(
                escape(str(row.item)),
                fmt(row.discrimination),
                fmt(row.difficulty),
                fmt(row.location),
                fmt(getattr(row, correct)),
            )
        if k:
            table.add_section()
    print_table(table)


@app.command(
    cls=Command,
    epilog=example(
        "latentbench fit responses.parquet --out fit/",
        "latentbench fit scores.csv --model-col name --item-col question --score-col correct",
    ),
)
def fit(
    responses: Path | None = typer.Argument(
        None,
        help="Response file: Parquet or CSV, long (model, item, score or correct) or wide "
        "(one row per model, one column per item).",
    ),
    rank: str = typer.Option(
        "1",
        help="Number of latent factors, or 'auto': the smallest rank (1-5) within one standard "
        "error of the best held-out log-likelihood on 10% of the cells, printed with the "
        "additive model's and kept in fit.json.",
    ),
    sigma: float = typer.Option(1.0, help="Temperature of the logistic link."),
    joint_ml: bool = typer.Option(
        False,
        "--joint-ml",
        help="Joint maximum likelihood with the ridge --l2 instead of the default priors.",
    ),
    l2: float | None = typer.Option(
        None,
        help="Ridge of the --joint-ml fit (keeps estimates finite; default 0.01). Only with "
        "--joint-ml: the default fit's priors take its place.",
    ),
    holdout: float | None = typer.Option(
        None,
        help="Also hide this fraction of the observed cells (e.g. 0.1), refit on the rest and "
        "report held-out log-loss, Brier and AUC against the additive model; writes "
        "heldout.csv.",
    ),
    tol: float = typer.Option(1e-6, help="Relative objective change for stopping."),
    max_iter: int = typer.Option(5000, help="Maximum number of MM sweeps."),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="Output directory (reused when given). Default ./latentbench-fit, or "
        "./latentbench-fit-2, -3, ... when that exists: never overwritten silently.",
    ),
    model_col: str | None = typer.Option(None, help="Column of model ids (default 'model')."),
    item_col: str | None = typer.Option(None, help="Long layout: column of item ids ('item')."),
    score_col: str | None = typer.Option(
        None, help="Long layout: column of scores (default 'score', else 'correct')."
    ),
    store: Path | None = typer.Option(None, help="Read from this DuckDB store."),
    benchmark: str | None = typer.Option(None, help="Benchmark to read from --store."),
    metric: str | None = typer.Option(None, help="Metric, when the benchmark has several."),
    filter: str | None = typer.Option(None, help="Filter, when the benchmark has several."),
    split: str | None = typer.Option(
        None, help="Split, when the benchmark has several (default: test, with a warning)."
    ),
    trials: str = typer.Option(
        "auto",
        help="Bernoulli trials behind every cell (a score k/K is k of K: pass@1 over K "
        "samples, K judges): binomial likelihood. 'auto': detected from a score grid of 1/K "
        "(K >= 3) on at least 10% of the cells, with a note; 1: every cell one trial "
        "(fractions are soft labels).",
    ),
    device: str | None = typer.Option(
        None,
        help="Run the fit's passes on this PyTorch device, e.g. 'cuda', 'cuda:1' or 'mps' "
        "(needs the extra 'torch'; the same estimates within the stopping rule's tolerance). "
        "Default: the CPU kernels.",
    ),
    quiet: bool = typer.Option(
        False,
        "--quiet/--no-quiet",
        "-q",
        help="No tables or progress (the files written are still named).",
    ),
) -> None:
    """Fit the 2PL (or rank-r) model by cBMM; write abilities.csv, items.csv and fit.json."""
    from latentbench.io import check_destination
    from latentbench.irt import TwoPL

    with clean_warnings():
        try:
            if out is not None:
                # before the (not cheap) load and fit; a folder at one of its files too
                check_destination(out, "dir", files=["abilities.csv", "items.csv", "fit.json"])
            # the options before the load, so that a bad value is refused at once
            if l2 is not None and not joint_ml:
                raise InputError(
                    f"--l2 {l2:g} without --joint-ml: the ridge is the penalty of the joint-ML "
                    "fit, and the default fit uses priors instead; expected --joint-ml with "
                    "--l2, or no --l2"
                )
            rank_value: int | str = "auto" if rank == "auto" else _int_option("rank", rank)
            n_trials = _trials(trials)
            estimator = TwoPL(
                rank=rank_value,  # type: ignore[arg-type]
                sigma=sigma,
                prior=None if joint_ml else "auto",
                l2=1e-2 if l2 is None else l2,
                tol=tol,
                max_iter=max_iter,
                trials=n_trials,
                device=device,
            ).validate()
            matrix = load_matrix(
                responses,
                store,
                benchmark,
                metric,
                filter,
                split=split,
                model_col=model_col,
                item_col=item_col,
                score_col=score_col,
                column_options=True,
            )
            describe_input(matrix, quiet)
            result = fit_with_progress(estimator, matrix, quiet)
            validation = None
            with progress_bar(quiet) as progress:
                if holdout is not None:
                    progress(f"held-out check: refitting on {1 - holdout:.0%} of the cells")
                    validation = estimator.cross_validate(matrix, heldout=holdout, n_splits=1)
                target = claim_out(fresh_out(out, "latentbench-fit"), out, "latentbench-fit")
                progress("95% ability intervals, writing the tables")
                paths = result.save(
                    target,
                    matrix,
                    # the input (a responses file, or the store's benchmark) is recorded by
                    # save itself, as for a fit saved from Python
                    tables=None if validation is None else {"heldout": validation.table},
                )
                from latentbench.irt import reported_abilities

                # the table abilities.csv holds (cached intervals; the same warning deduplicated)
                reported = reported_abilities(result, result.standard_errors(matrix))
        except InputError as exc:
            fail(exc)
    if store is not None and benchmark is not None:
        from latentbench.io.store import Store

        try:
            with Store(store) as db:
                db.record_fit(benchmark, result)
        except InputError as exc:  # the fit's files are written: said, not a failure
            err_console.print(
                f"[yellow]warning:[/yellow] the fit's files are written in "
                f"{escape(as_given(target))}, but the fit was not recorded in {escape(store)}: "
                f"the store was not updated ({escape(exc)})",
                soft_wrap=True,
            )
    if not quiet:
        print_fit(result, abilities=reported)
        if validation is not None:
            print_heldout(validation)
    # the wrote line under -q too: the folder may be a fresh ./latentbench-fit-N
    note = (
        ""
        if out is not None or target.name == "latentbench-fit"
        else (" (./latentbench-fit exists and was kept; pass --out DIR to choose)")
    )
    written = ", ".join(escape(as_given(p)) for p in paths.values())  # every file it wrote
    removed = getattr(paths, "removed", [])  # an earlier fit's files this one replaces
    if removed:
        names = ", ".join(escape(p.name) for p in removed)
        note += f"; removed {names} (from an earlier fit in {escape(as_given(target))})"
    console.print(f"wrote {written}{note}", soft_wrap=True)
    if not quiet:  # a command that works when pasted: quoted, and a page not yet written
        import shlex

        from latentbench.cli._report import report_path

        page = shlex.quote(str(report_path(None)))  # report.html, else report-2.html, ...
        console.print(
            f"next: latentbench report {escape(shlex.quote(str(target)))} --out {escape(page)}",
            soft_wrap=True,
        )


def print_heldout(validation: Any) -> None:
    """Held-out scores of the fit next to the additive model's (a CrossValidation)."""
    table = Table(title=f"Held-out cells ({validation.heldout:.0%} of the observed)")
    for column in ("fit", "log-loss", "Brier", "AUC"):
        table.add_column(column, justify="left" if column == "fit" else "right")
    for row in validation.summary().itertuples():
        name = "IRT fit" if row.fit == "model" else "additive (c_i + b_j)"
        table.add_row(name, f"{row.log_loss:.4f}", f"{row.brier:.4f}", f"{row.auc:.4f}")
    print_table(table)


def _int_option(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise InputError(f"--{name} {value!r}; expected an integer or 'auto'") from None


def _trials(value: str) -> int | Literal["auto"]:
    """``--trials``: an integer >= 1, or 'auto' (TwoPL detects K from the score grid and
    says so in a warning)."""
    if value == "auto":
        return "auto"
    count = _int_option("trials", value)
    if count < 1:
        raise InputError(f"--trials {value}: expected an integer >= 1 or 'auto'")
    return count
