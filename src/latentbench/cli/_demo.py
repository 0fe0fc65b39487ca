"""``latentbench demo``: the main job on a built-in synthetic leaderboard (no download)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from latentbench.cli import Command, app, example
from latentbench.cli._common import clean_warnings, console, fmt, print_table
from latentbench.cli._fit import fit_with_progress, print_fit

if TYPE_CHECKING:
    import numpy as np

    from latentbench.io import ResponseMatrix

DEMO_MODELS = 200
DEMO_ITEMS = 1000
DEMO_SEEDS = 12
TARGET = 0.95


def demo_matrix(
    n_models: int = DEMO_MODELS,
    n_items: int = DEMO_ITEMS,
    missing: float = 0.1,
    random_state: int = 7,
) -> tuple[ResponseMatrix, dict[str, list[str]]]:
    """A leaderboard-like synthetic matrix with planted flaws.

    2PL responses (theta ~ N(0, 1), a ~ LogNormal(0, 0.3), b ~ N(0, 1)), a fraction
    ``missing`` of cells missing at random, plus 20 items answered at random (zero
    discrimination), 20 exact duplicates of other items and 10 items everyone gets right.
    Returns the matrix and the planted ids.
    """
    import numpy as np

    from latentbench.io import ResponseMatrix
    from latentbench.synthetic import simulate_2pl

    data = simulate_2pl(n_models, n_items, missing=missing, random_state=random_state)
    rng = np.random.default_rng(random_state + 1)
    scores = np.array(data.matrix.scores, copy=True)
    observed = ~np.isnan(scores)
    columns = rng.choice(n_items, size=50, replace=False)
    noise, duplicate, easy = columns[:20], columns[20:40], columns[40:]
    scores[:, noise] = (rng.random((n_models, noise.size)) < 0.5).astype(np.float32)
    sources = rng.choice(np.setdiff1d(np.arange(n_items), columns), size=duplicate.size)
    scores[:, duplicate] = scores[:, sources]
    scores[:, easy] = 1.0
    scores[~observed] = np.nan
    ids = data.matrix.item_ids
    matrix = ResponseMatrix(
        scores,
        [f"llm-{i:03d}" for i in range(n_models)],
        ids,
        source="latentbench demo (synthetic)",
    )
    planted = {
        "zero_discrimination": [ids[j] for j in noise],
        "duplicates": [ids[j] for j in duplicate],
        "constant": [ids[j] for j in easy],
    }
    return matrix, planted


def first_budget(curves: np.ndarray, grid: np.ndarray, target: float = TARGET) -> np.ndarray:
    """First budget at which the mean of each row block of ``curves`` reaches ``target``.

    Parameters
    ----------
    curves : ndarray of shape (B, S, G)
        B resamples of S seeds' 0/1 identification curves over the budget grid.
    grid : ndarray of shape (G,)

    Returns
    -------
    ndarray of shape (B,)
        NaN where the mean curve never reaches the target.
    """
    import numpy as np

    reached = curves.mean(axis=1) >= target
    first = np.argmax(reached, axis=1)
    return np.where(reached.any(axis=1), grid[first].astype(float), np.nan)


def saving(
    pulse: np.ndarray,
    reference: np.ndarray,
    grid: np.ndarray,
    init: int,
    full: int | None = None,
    n_boot: int = 2000,
    random_state: int = 0,
) -> dict[str, float]:
    """Evaluations (initial batch included) at which PULSE finds the best model in
    ``TARGET`` of the seeds, and the saving against ``reference`` (UCB-E curves of the same
    seeds) or against a full evaluation of ``full`` cells; a paired bootstrap over seeds gives
    90% intervals.

    Parameters
    ----------
    pulse, reference : ndarray of bool, shape (n_seeds, G)
        Per seed, whether the recommendation after ``grid[g]`` post-init cells was right.
    grid : ndarray of shape (G,)
    init : int
        Cells of the initial batch (added to every budget).
    full : int, optional
        Cells of a full evaluation.

    Returns
    -------
    dict
        ``pulse`` (evaluations, point estimate on all seeds), ``pulse_lo`` / ``pulse_hi``,
        ``vs_full`` / ``vs_full_lo`` / ``vs_full_hi`` (% saved; NaN without ``full``),
        ``vs_reference`` / ``vs_reference_lo`` / ``vs_reference_hi`` (% saved).
    """
    import numpy as np

    rng = np.random.default_rng(random_state)
    n_seeds = pulse.shape[0]
    rows = np.vstack([np.arange(n_seeds), rng.integers(0, n_seeds, size=(n_boot, n_seeds))])
    p = first_budget(np.asarray(pulse, float)[rows], grid) + init
    r = first_budget(np.asarray(reference, float)[rows], grid) + init
    out: dict[str, float] = {"pulse": float(p[0])}
    out["pulse_lo"], out["pulse_hi"] = (float(v) for v in np.nanquantile(p[1:], [0.05, 0.95]))
    vs_ref = 100 * (1 - p / r)
    out["vs_reference"] = float(vs_ref[0])
    out["vs_reference_lo"], out["vs_reference_hi"] = (
        float(v) for v in np.nanquantile(vs_ref[1:], [0.05, 0.95])
    )
    if full:
        vs_full = 100 * (1 - p / full)
        out["vs_full"] = float(vs_full[0])
        out["vs_full_lo"], out["vs_full_hi"] = (
            float(v) for v in np.nanquantile(vs_full[1:], [0.05, 0.95])
        )
    return out


@app.command(cls=Command, epilog=example("latentbench demo --out demo/"))
def demo(
    out: Path = typer.Option(
        Path("latentbench-demo"), "--out", "-o", help="Where to write the outputs."
    ),
    seeds: int = typer.Option(DEMO_SEEDS, help="Selection runs per policy (seeds)."),
) -> None:
    """Run the main job on a built-in synthetic leaderboard and say what to look at next."""
    from latentbench.irt import TwoPL

    start = time.perf_counter()
    console.rule("[bold]latentbench demo")
    console.print(
        "A synthetic leaderboard of 200 models x 1,000 items with planted flaws; about 20 s "
        "on 2 cores. The first run in a fresh environment also compiles a few numba kernels "
        "(about 6 s, cached afterwards)."
    )
    with clean_warnings():
        matrix, planted = demo_matrix()
        console.print(str(matrix.summary()))
        result = fit_with_progress(TwoPL(), matrix)
        print_fit(result, top=5)
        paths = result.save(out / "fit", matrix)
        matrix.to_long().to_parquet(out / "responses.parquet", index=False)
        _fit_findings(result, planted)
        console.print(f"Wrote {paths['abilities']}, {paths['items']}, {paths['fit']}.")

        console.rule("[bold]best-model selection: PULSE vs UCB-E")
        selection = _demo_selection(matrix, result, seeds)
        report_path = out / "report.html"
        from latentbench.report import build_report

        build_report(
            result,
            matrix,
            selection=selection,
            path=report_path,
            title="latentbench demo: synthetic leaderboard",
        )
    console.print(f"Wrote the HTML report {report_path} (open it in a browser).")
    console.print(f"demo finished in {time.perf_counter() - start:.0f} s")
    console.rule("next")
    console.print(
        "Fit your own results:  latentbench fit RESPONSES.parquet --out DIR\n"
        "Ingest harness logs:   latentbench ingest lm-eval OUTPUT_DIR --store results.duckdb\n"
        "Find the best model:   latentbench select replay RESPONSES.parquet (stops certified)\n"
        "Report:                latentbench report DIR --out report.html\n"
        f"Responses used here:   {out / 'responses.parquet'}",
        soft_wrap=True,
    )


def _fit_findings(result: Any, planted: dict[str, list[str]]) -> None:
    moved = result.abilities.reindex(
        result.abilities["rank_shift"].dropna().abs().sort_values(ascending=False).index
    ).head(5)
    console.print(
        "Models whose ability rank differs most from their accuracy rank: "
        + ", ".join(f"{r.model} ({r.rank_accuracy} -> {r.rank_theta})" for r in moved.itertuples()),
        soft_wrap=True,
    )
    from latentbench.irt.diagnostics import uninformative_items

    info = uninformative_items(result, result.matrix)
    flat = info[info["uninformative"]]["item"]
    found = len(set(flat) & set(planted["zero_discrimination"]))
    console.print(
        "Items not significantly related to ability (score test of a = 0, one-sided 5%): "
        f"{len(flat)} ({found} of the "
        f"{len(planted['zero_discrimination'])} planted random-answer items among them).",
        soft_wrap=True,
    )


def _demo_selection(matrix: Any, result: Any, n_seeds: int) -> Any:
    """Best-model selection on a leaderboard with the structure of real ones.

    The leaderboard (:func:`latentbench.synthetic.leaderboard_like`, 200 models x 1,000
    items, seed 7) is calibrated to the shared real matrices (spread of model and item means,
    low-rank structure, residual variance; ``docs/selection.md``). Half the models are history
    (they teach PULSE's proxy the items), the other half candidates. One PULSE run stops when
    the best candidate is certified (delta = 0.05); then PULSE and UCB-E each run on
    ``n_seeds`` seeds with the same start and batch size (``default_schedule``), and the
    saving is the evaluations at which each finds the true best in 95% of the seeds, with a
    paired-bootstrap interval."""
    import numpy as np

    from latentbench.select import (
        LowRankProxy,
        MatrixOracle,
        Pulse,
        default_schedule,
        run_experiment,
        run_selection,
        split_models,
    )
    from latentbench.synthetic import leaderboard_like

    scores = leaderboard_like(DEMO_MODELS, DEMO_ITEMS, random_state=7)
    model_ids = [f"llm-{i:03d}" for i in range(DEMO_MODELS)]
    history, candidates = split_models(DEMO_MODELS, how="random", random_state=0)
    Y = scores[candidates]
    n_items = Y.shape[1]
    full = Y.size
    batch, init_cells = default_schedule(len(candidates), n_items, None)
    console.print(
        f"A second leaderboard, calibrated to the structure of real ones: {DEMO_MODELS} models "
        f"x {fmt(n_items)} items. History: {len(history)} models (they teach PULSE which items "
        f"are alike; they are not candidates). Candidates: {len(candidates)} models; a full "
        f"evaluation costs {fmt(full)} cells. Batches of {batch} cells, {init_cells} per "
        "candidate to start.",
        soft_wrap=True,
    )
    ids = [model_ids[i] for i in candidates]
    proxy = LowRankProxy(rank="auto", random_state=0).fit(scores[history])
    truth = Y.mean(axis=1, dtype=np.float64)
    true_best = ids[int(np.argmax(truth))]
    delta = 0.05
    run = run_selection(
        MatrixOracle(Y),
        Pulse(bonus="ci", delta=delta),
        budget=full,
        batch_size=batch,
        init_batch=init_cells,
        proxy=proxy,
        random_state=1,
        stop="confidence",
        model_ids=ids,
    )
    verdict = "the true best" if run.best_id == true_best else f"true best: {true_best}"
    if run.stopped == "confidence":
        console.print(
            f"[bold]PULSE certified {run.best_id} as the best candidate ({verdict}) after "
            f"{fmt(run.evaluations_total)} evaluations: {100 * run.evaluations_total / full:.1f}% "
            f"of a full evaluation[/bold] (error probability at most {delta}, whatever the "
            "data).",
            soft_wrap=True,
        )
    else:
        console.print(
            f"PULSE did not certify a best candidate before evaluating every cell ({verdict}).",
            soft_wrap=True,
        )
    budget = min(full - len(candidates) * init_cells, 8_000)
    with console.status(f"running PULSE and UCB-E on {n_seeds} seeds each ..."):
        experiment = run_experiment(
            Y,
            {"full": np.arange(len(candidates))},
            ["pulse", "ucbe"],
            seeds=n_seeds,
            budget=budget,
            batch_size=batch,
            init_batch=init_cells,
            proxy=proxy,
            n_jobs=2,
        )
    init = len(candidates) * init_cells
    stats = saving(
        experiment.curves[("full", "pulse")],
        experiment.curves[("full", "ucbe")],
        np.asarray(experiment.grid),
        init=init,
        full=full,
    )
    ucbe = (
        first_budget(np.asarray(experiment.curves[("full", "ucbe")], float)[None], experiment.grid)[
            0
        ]
        + init
    )
    console.print(
        f"[bold]PULSE finds the best candidate in {TARGET:.0%} of {n_seeds} runs after "
        f"{fmt(stats['pulse'])} evaluations[/bold] (90% interval {fmt(stats['pulse_lo'])} to "
        f"{fmt(stats['pulse_hi'])}): it saves [bold]{stats['vs_full']:.1f}%[/bold] of a full "
        f"evaluation ({stats['vs_full_lo']:.1f}% to {stats['vs_full_hi']:.1f}%).",
        soft_wrap=True,
    )
    if stats["vs_reference_lo"] > 0:
        verdict = "PULSE needs fewer evaluations than UCB-E on this leaderboard"
    elif stats["vs_reference_hi"] < 0:
        verdict = "PULSE needs more evaluations than UCB-E on this leaderboard"
    else:
        verdict = "the interval covers 0: no demonstrated difference on this leaderboard"
    console.print(
        f"UCB-E (no proxy, same start) needs {fmt(ucbe)}: PULSE saves "
        f"{stats['vs_reference']:+.1f}% against it (90% interval "
        f"{stats['vs_reference_lo']:+.1f}% to {stats['vs_reference_hi']:+.1f}%; {verdict}).",
        soft_wrap=True,
    )
    run.params["n_items"] = n_items
    run.params["history"] = {
        "split": "random half of the demo leaderboard's models (seed 0)",
        "history models": len(history),
        "candidates": len(candidates),
    }
    table = Table(title=f"PULSE at its certified stop: top candidates, {delta:.0%} certificate")
    for column in ("model", "estimate", "interval", "cells seen", "true mean"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for i in np.argsort(-run.estimates)[:5]:
        interval = (
            "-"
            if run.lower is None or run.upper is None
            else f"[{run.lower[i]:.3f}, {run.upper[i]:.3f}]"
        )
        table.add_row(
            ids[i],
            f"{run.estimates[i]:.3f}",
            interval,
            fmt(int(run.n_observed[i])),
            f"{truth[i]:.3f}",
        )
    print_table(table)
    return run
