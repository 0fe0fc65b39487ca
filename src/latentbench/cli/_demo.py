"""``latentbench demo``: the main job on a built-in synthetic leaderboard (no download); a
shell over :func:`latentbench.demo`."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from latentbench._demo import DEMO_SEEDS, DEMO_SELECTION_SEED, earlier_outputs
from latentbench.cli import Command, app, as_given, example
from latentbench.cli._common import (
    clean_warnings,
    cli_spelling,
    console,
    escape,
    fmt,
    print_table,
    progress_bar,
)
from latentbench.cli._fit import print_fit


@app.command(cls=Command, epilog=example("latentbench demo --out demo/"))
def demo(
    out: Path = typer.Option(
        Path("latentbench-demo"), "--out", "-o", help="Where to write the outputs."
    ),
    seeds: int = typer.Option(DEMO_SEEDS, help="Selection runs per policy (seeds)."),
) -> None:
    """Run the main job on a built-in synthetic leaderboard and say what to look at next."""
    from latentbench import demo as run_demo
    from latentbench.exceptions import InputError

    console.rule("[bold]latentbench demo")
    console.print(
        "A synthetic leaderboard of 200 models x 1,000 items with planted flaws; about 20 s "
        "on 2 cores. The first run in a fresh environment also compiles a few numba kernels "
        "(about 6 s, cached afterwards)."
    )
    with clean_warnings():
        try:
            from latentbench.io import check_destination

            check_destination(out, "dir")  # the command's --out, before the work
            earlier = earlier_outputs(out)
            if earlier:  # never overwritten silently (a first run prints no such line)
                names = ", ".join(p.name + ("/" if p.is_dir() else "") for p in earlier)
                console.print(
                    escape(f"Replacing the earlier demo's files in {as_given(out)}: {names}."),
                    soft_wrap=True,
                )
            with progress_bar(False) as progress:
                result = run_demo(out, seeds=seeds, progress=progress)
        except InputError as exc:
            from latentbench.cli._common import fail

            fail(exc)
        console.print(str(result.matrix.summary()))
        print_fit(result.fit, top=5)
        _fit_findings(result)
        paths = result.paths
        fit_files = [  # the selection's candidates are said with its command
            p for name, p in paths.items() if name not in ("responses", "candidates", "report")
        ]
        console.print(escape(f"Wrote {', '.join(map(as_given, fit_files))}."), soft_wrap=True)
        console.rule("[bold]best-model selection: PULSE vs UCB-E")
        _print_selection(result)
        console.rule("[bold]a new model's score from a few items")
        _print_estimate(result)
    console.print(
        escape(f"Wrote the HTML report {as_given(paths['report'])} (open it in a browser)."),
        soft_wrap=True,
    )
    console.print(f"demo finished in {result.seconds:.0f} s")
    console.rule("next")
    console.print(
        "Fit your own results:  latentbench fit RESPONSES.parquet --out DIR\n"
        "Ingest harness logs:   latentbench ingest lm-eval OUTPUT_DIR --store results.duckdb\n"
        "Find the best model:   latentbench select replay RESPONSES.parquet (stops certified)\n"
        "Score a new model:     latentbench estimate CALIBRATION.parquet NEW.parquet --budget 100\n"
        "Report:                latentbench report DIR --out report.html\n"
        f"Responses used here:   {escape(as_given(paths['responses']))}",
        soft_wrap=True,
    )


def _print_estimate(result: Any) -> None:
    """The new model's estimate, its true score, and the command that gives the same line."""
    est, paths = result.estimate, result.paths
    inside = est.lower <= result.estimate_truth <= est.upper
    console.print(
        escape(
            f"A new model ({est.model}, not among the {result.n_history} calibration models, "
            f"the second leaderboard's history), from {est.n_evaluated} items chosen by the "
            "estimate:"
        ),
        soft_wrap=True,
    )
    console.print(escape(result.summary().splitlines()[-1]), soft_wrap=True)  # the estimate's
    console.print(
        escape(
            f"Its true score (all {est.n_items:,} items): {result.estimate_truth:.3f}, "
            f"{'inside' if inside else 'outside'} the {est.level:.0%} interval (which holds "
            "whether or not the IRT model fits)."
        ),
        soft_wrap=True,
    )
    console.print(
        escape(
            "The same with the command: latentbench estimate "
            f"{shlex.quote(as_given(paths['calibration']))} "
            f"{shlex.quote(as_given(paths['new_model']))} "
            f"--budget {est.n_evaluated}"
        ),
        soft_wrap=True,
    )


def _fit_findings(result: Any) -> None:
    fit, planted = result.fit, result.planted
    moved = fit.abilities.reindex(
        fit.abilities["rank_shift"].dropna().abs().sort_values(ascending=False).index
    ).head(5)
    console.print(
        "Models whose ability rank differs most from their accuracy rank: "
        + ", ".join(f"{r.model} ({r.rank_accuracy} -> {r.rank_theta})" for r in moved.itertuples()),
        soft_wrap=True,
    )
    found = len(set(result.uninformative) & set(planted["zero_discrimination"]))
    console.print(
        "Items not significantly related to ability (score test of a = 0, one-sided 5%): "
        f"{len(result.uninformative)} ({found} of the "
        f"{len(planted['zero_discrimination'])} planted random-answer items among them).",
        soft_wrap=True,
    )


def _print_selection(result: Any) -> None:
    """The selection's lines: the leaderboard, the certified run, PULSE against UCB-E with
    its paired-bootstrap interval, and the top candidates at the certified stop."""
    import numpy as np

    run = result.selection
    # the headline is the library's (DemoResult.summary, whose last line is the estimate's),
    # the bold lines are the findings
    for k, line in enumerate(result.summary().splitlines()[:-1]):
        shown = escape(cli_spelling(line))
        bold = k == 2 or (k == 1 and run.stopped == "confidence")
        console.print(f"[bold]{shown}[/bold]" if bold else shown, soft_wrap=True)
    table = Table(
        title=f"PULSE at its certified stop: top candidates, {result.delta:.0%} certificate"
    )
    for column in ("model", "estimate", "interval", "cells seen", "true mean"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for i in np.argsort(-run.estimates)[:5]:
        interval = (
            "-"
            if run.lower is None or run.upper is None
            else f"[{run.lower[i]:.3f}, {run.upper[i]:.3f}]"
        )
        table.add_row(
            result.candidates[i],
            f"{run.estimates[i]:.3f}",
            interval,
            fmt(int(run.n_observed[i])),
            f"{result.truth[i]:.3f}",
        )
    print_table(table)
    paths = result.paths
    console.print(
        escape(
            "The same run with the command: latentbench select replay "
            f"{shlex.quote(as_given(paths['candidates']))} "
            f"--history {shlex.quote(as_given(paths['calibration']))} "
            f"--seed {DEMO_SELECTION_SEED}"
        ),
        soft_wrap=True,
    )
