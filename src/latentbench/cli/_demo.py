"""``latentbench demo``: the main job on a built-in synthetic leaderboard (no download)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table

from latentbench.cli import Command, app, example
from latentbench.cli._common import console
from latentbench.cli._fit import fit_with_progress, print_fit, write_fit

if TYPE_CHECKING:
    from latentbench.io import ResponseMatrix


def demo_matrix(
    n_models: int = 300, n_items: int = 2000, missing: float = 0.1, random_state: int = 7
) -> tuple[ResponseMatrix, dict[str, list[str]]]:
    """A leaderboard-like synthetic matrix with planted flaws.

    2PL responses (theta ~ N(0, 1), a ~ LogNormal(0, 0.3), b ~ N(0, 1)), a fraction
    ``missing`` of cells missing at random, plus 20 items answered at random (zero
    discrimination), 20 exact duplicates of other items and 10 items everyone gets right.
    Returns the matrix and the planted ids.
    """
    import numpy as np

    from latentbench.io import ResponseMatrix
    from latentbench.io.synthetic import simulate_2pl

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


@app.command(cls=Command, epilog=example("latentbench demo --out demo/"))
def demo(
    out: Path = typer.Option(Path("latentbench-demo"), help="Where to write the outputs."),
) -> None:
    """Run the main job on a built-in synthetic leaderboard and say what to look at next."""
    from latentbench.irt import TwoPL

    matrix, planted = demo_matrix()
    console.rule("[bold]latentbench demo")
    console.print(str(matrix.summary()))
    result = fit_with_progress(TwoPL(), matrix)
    print_fit(result)
    paths = write_fit(result, out / "fit")
    matrix.to_long().to_parquet(out / "responses.parquet", index=False)
    moved = result.abilities.reindex(
        result.abilities["rank_shift"].abs().sort_values(ascending=False).index
    ).head(5)
    console.print(
        "Models whose ability rank differs most from their accuracy rank: "
        + ", ".join(f"{r.model} ({r.rank_accuracy} -> {r.rank_theta})" for r in moved.itertuples())
    )
    flat = result.items[result.items["discrimination"] < 0.2]["item"]
    found = len(set(flat) & set(planted["zero_discrimination"]))
    console.print(
        f"Items with discrimination < 0.2: {len(flat)} ({found} of the "
        f"{len(planted['zero_discrimination'])} planted random-answer items among them)."
    )
    console.print(f"Wrote {paths['abilities']}, {paths['items']}, {paths['fit']}.")

    console.rule("[bold]best-model selection (PULSE vs UCB-E)")
    selection = _demo_selection(console)
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
    console.rule("next")
    console.print(
        "Fit your own results:  latentbench fit RESPONSES.parquet --out DIR\n"
        "Ingest harness logs:   latentbench ingest lm-eval OUTPUT_DIR --store results.duckdb\n"
        "Find the best model:   latentbench select replay RESPONSES.parquet --budget 20000\n"
        "Report:                latentbench report DIR --out report.html\n"
        f"Responses used here:   {out / 'responses.parquet'}"
    )


def _demo_selection(console: Console) -> Any:
    """Split a complete demo matrix into 150 historical and 150 candidate models and find the
    best candidate with PULSE and with UCB-E on the same seed and budget."""
    import numpy as np

    from latentbench.select import UCBE, LowRankProxy, MatrixOracle, Pulse, run_selection

    complete, _ = demo_matrix(missing=0.0)
    rows = np.random.default_rng(0).permutation(complete.n_models)
    history, candidates = rows[:150], rows[150:]
    scores = complete.scores[candidates]
    ids = [complete.model_ids[i] for i in candidates]
    truth = complete.subset(models=candidates).model_accuracy()
    proxy = LowRankProxy(rank=4, random_state=0).fit(complete.scores[history])
    full_cost = scores.size
    outcome = {}
    for policy in (Pulse(), UCBE()):
        outcome[policy.name] = run_selection(
            MatrixOracle(scores),
            policy,
            budget=8_000,
            batch_size=32,
            init_batch=32,
            proxy=proxy if policy.needs_proxy else None,
            random_state=1,
            model_ids=ids,
        )
    true_best = ids[int(np.argmax(truth))]
    for name, run in outcome.items():
        verdict = "correct" if run.best_id == true_best else f"wrong (true best {true_best})"
        console.print(
            f"{name}: best {run.best_id} ({verdict}); {run.evaluations_total:,} evaluations "
            f"({run.evaluations_total / full_cost:.0%} of evaluating all {full_cost:,} cells)"
        )
    pulse = outcome["pulse"]
    table = Table(title="PULSE: top candidates, 90% simultaneous anytime-valid intervals")
    for column in ("model", "estimate", "interval", "cells seen", "true mean"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for i in np.argsort(-pulse.estimates)[:5]:
        table.add_row(
            ids[i],
            f"{pulse.estimates[i]:.3f}",
            f"[{pulse.lower[i]:.3f}, {pulse.upper[i]:.3f}]",
            f"{int(pulse.n_observed[i]):,}",
            f"{truth[i]:.3f}",
        )
    console.print(table)
    return pulse
