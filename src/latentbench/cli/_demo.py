"""``latentbench demo``: the main job on a built-in synthetic leaderboard (no download)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import typer

from latentbench.cli import app
from latentbench.cli._fit import console, fit_with_progress, print_fit, write_fit
from latentbench.io import ResponseMatrix
from latentbench.io.synthetic import simulate_2pl
from latentbench.irt import TwoPL


def demo_matrix(
    n_models: int = 300, n_items: int = 2000, random_state: int = 7
) -> tuple[ResponseMatrix, dict[str, list[str]]]:
    """A leaderboard-like synthetic matrix with planted flaws.

    2PL responses (theta ~ N(0, 1), a ~ LogNormal(0, 0.3), b ~ N(0, 1)), 10% of cells missing
    at random, plus 20 items answered at random (zero discrimination), 20 exact duplicates of
    other items and 10 items everyone gets right. Returns the matrix and the planted ids.
    """
    data = simulate_2pl(n_models, n_items, missing=0.1, random_state=random_state)
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


@app.command()
def demo(
    out: Path = typer.Option(Path("latentbench-demo"), help="Where to write the outputs."),
) -> None:
    """Run the main job on a built-in synthetic leaderboard and say what to look at next."""
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
    console.rule("next")
    console.print(
        "Fit your own results:  latentbench fit RESPONSES.parquet --out DIR\n"
        "Ingest harness logs:   latentbench ingest lm-eval OUTPUT_DIR --store results.duckdb\n"
        f"Responses used here:   {out / 'responses.parquet'}"
    )
