"""``latentbench select replay`` and ``latentbench experiment``: PULSE on recorded matrices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from latentbench.cli import app
from latentbench.exceptions import InputError
from latentbench.select._policies import POLICIES, policy_help

console = Console()
select_app = typer.Typer(
    help="Best-model identification (PULSE and baselines) with few evaluations.",
    no_args_is_help=True,
)
app.add_typer(select_app, name="select")


def _fail(exc: Exception) -> None:
    console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
    raise typer.Exit(2) from None


def _split_specs(text: str) -> list[str]:
    """Split ``pulse:init_batch=16;weights=precision,ucbe`` on top-level commas."""
    specs: list[str] = []
    for token in (t.strip() for t in text.split(",")):
        if not token:
            continue
        if specs and "=" in token and ":" not in token:
            specs[-1] += ";" + token
        else:
            specs.append(token)
    if not specs:
        raise InputError(f"--policies {text!r}; expected e.g. 'pulse,ucbe,naive'")
    return specs


def _rank(text: str) -> int | str:
    if text == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise InputError(f"--rank {text!r}; expected an integer or 'auto'") from None


def _read_dates(responses: Path, n_models: int, model_ids: list[str]) -> np.ndarray:
    side = responses.with_name(responses.stem + "_models.parquet")
    if not side.exists():
        raise InputError(
            f"--split date needs release dates: {side.name} with a 'created_date' column "
            "was not found; use --split random"
        )
    import pandas as pd

    frame = pd.read_parquet(side)
    column = next((c for c in ("created_date", "release_date", "date") if c in frame.columns), None)
    if column is None or "model" not in frame.columns:
        raise InputError(
            f"{side.name} has no 'model' and 'created_date' columns; use --split random"
        )
    lookup = dict(zip(frame["model"].astype(str), pd.to_datetime(frame[column]), strict=False))
    missing = [m for m in model_ids if m not in lookup]
    if missing:
        raise InputError(f"{side.name} has no date for model {missing[0]!r}")
    return np.array([lookup[m] for m in model_ids], dtype="datetime64[ns]")


@select_app.command("replay")
def replay(
    responses: Path = typer.Argument(..., help="Scores of the candidate models (Parquet/CSV)."),
    history: Path | None = typer.Option(
        None,
        help="Scores of historical models on the same items (learns the proxy). "
        "Without it, a random half of RESPONSES is used as history.",
    ),
    budget: int = typer.Option(400_000, help="Post-initialisation evaluations."),
    policy: str = typer.Option(
        "pulse",
        help=f"One of: {policy_help()}. Options as 'pulse:weights=precision;init_estimate=prior'.",
    ),
    seed: int = typer.Option(0, help="Random seed (initial batch and draws)."),
    batch_size: int = typer.Option(64, help="Evaluations per round (B)."),
    init_batch: int = typer.Option(64, help="Initial evaluations per model."),
    rank: str = typer.Option("auto", help="Rank of the low-rank logistic proxy, or 'auto'."),
    alpha: float = typer.Option(0.1, help="Simultaneous miscoverage of the intervals."),
    stop: str = typer.Option("budget", help="'budget' or 'confidence' (fixed-confidence stop)."),
    missing: str = typer.Option(
        "error", help="Missing candidate cells: 'error', or 'zero' to score them 0 explicitly."
    ),
    out: Path = typer.Option(Path("latentbench-select"), help="Output directory."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No table."),
) -> None:
    """Replay a selection on a recorded matrix; write OUT/selection.json."""
    from latentbench.io import ResponseMatrix
    from latentbench.select import (
        LowRankProxy,
        MatrixOracle,
        make_policy,
        parse_policy,
        run_selection,
        split_models,
    )

    try:
        matrix = ResponseMatrix.read(responses)
        if history is not None:
            hist = ResponseMatrix.read(history)
            absent = set(matrix.item_ids) - set(hist.item_ids)
            if absent:
                raise InputError(
                    f"--history lacks {len(absent)} items of RESPONSES, e.g. {sorted(absent)[0]!r}"
                )
            hist_scores = hist.subset(items=matrix.item_ids).scores
            candidates, ids = matrix.scores, matrix.model_ids
        else:
            h_rows, t_rows = split_models(matrix.n_models, how="random", random_state=seed)
            hist_scores = matrix.scores[h_rows]
            candidates = matrix.scores[t_rows]
            ids = [matrix.model_ids[i] for i in t_rows]
        _, name, _, run_kw = parse_policy(policy)
        extra = {"alpha": alpha} if "alpha" in POLICIES[name].options else {}
        pol = make_policy(policy, extra, where="--policy")
        proxy = None
        if pol.needs_proxy:
            with console.status("learning item factors from the history ..."):
                proxy = LowRankProxy(rank=_rank(rank), random_state=seed).fit(hist_scores)
        oracle = MatrixOracle(candidates, missing=missing)
        result = run_selection(
            oracle,
            pol,
            budget=budget,
            batch_size=batch_size,
            init_batch=int(run_kw.get("init_batch", init_batch)),
            proxy=proxy,
            random_state=seed,
            stop=stop,
            model_ids=ids,
        )
    except InputError as exc:
        _fail(exc)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "selection.json"
    result.to_json(path)
    if not quiet:
        frame = result.to_frame().sort_values("estimate", ascending=False).head(10)
        table = Table(title=f"{result.policy}: best model {escape(str(result.best_id))}")
        for col in frame.columns:
            table.add_column(col, justify="left" if col == "model" else "right")
        for _, row in frame.iterrows():
            table.add_row(
                *[escape(str(v)) if isinstance(v, str) else f"{v:.4g}" for v in row.tolist()]
            )
        console.print(table)
        console.print(
            f"evaluations: {result.evaluations_post_init:,} after the initial batch, "
            f"{result.evaluations_total:,} in total; stopped: {result.stopped}; "
            f"{result.seconds:.2f} s"
        )
        console.print(f"wrote {path}")


@app.command("experiment")
def experiment(
    responses: Path = typer.Argument(..., help="Source matrix (Parquet/CSV)."),
    split: str = typer.Option("random", help="'date' (older half = history) or 'random'."),
    pools: str = typer.Option("gap:0.02", help="Exact-gap pools, e.g. 'gap:0.01,0.02,0.03,full'."),
    policies: str = typer.Option("pulse,ucbe,naive", help="Comma-separated policy specs."),
    seeds: int = typer.Option(200, help="Number of seeds (seed = 10000 * run)."),
    budget: int = typer.Option(400_000, help="Post-initialisation evaluations per run."),
    batch_size: int = typer.Option(64, help="Evaluations per round (B)."),
    init_batch: int = typer.Option(64, help="Initial evaluations per model."),
    pool_size: int = typer.Option(1000, help="Models per pool."),
    rank: str = typer.Option("auto", help="Rank of the proxy, or 'auto'."),
    simulate: int | None = typer.Option(
        None, help="Draw this many leaderboard-like models from a fit of RESPONSES."
    ),
    sim_rank: int = typer.Option(4, help="Rank of the simulator fit."),
    engine: str = typer.Option("local", help="'local' processes or 'ray'."),
    n_jobs: int | None = typer.Option(None, help="Local processes (default: all cores)."),
    random_state: int = typer.Option(0, help="Seed of the split and the simulator."),
    missing: str = typer.Option(
        "error", help="Missing candidate cells: 'error', or 'zero' to score them 0 explicitly."
    ),
    out: Path = typer.Option(Path("latentbench-experiment"), help="Output directory."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress or table."),
) -> None:
    """Run policies x pools x seeds; write accuracy curves, budget to 95 % and coverage."""
    from rich.progress import Progress

    from latentbench.io import ResponseMatrix
    from latentbench.select import experiment_from_matrix

    try:
        matrix = ResponseMatrix.read(responses)
        dates = (
            _read_dates(responses, matrix.n_models, matrix.model_ids) if split == "date" else None
        )
        specs = _split_specs(policies)
        with Progress(console=console, disable=quiet, transient=True) as bar:
            task = bar.add_task("runs", total=None)

            def progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            result = experiment_from_matrix(
                matrix,
                split=split,
                dates=dates,
                pools=pools,
                pool_size=pool_size,
                policies=specs,
                seeds=seeds,
                budget=budget,
                batch_size=batch_size,
                init_batch=init_batch,
                rank=_rank(rank),
                simulate=simulate,
                sim_rank=sim_rank,
                random_state=random_state,
                engine=engine,
                n_jobs=n_jobs,
                missing=missing,
                progress=progress,
            )
    except InputError as exc:
        _fail(exc)
    result.write(out)
    if not quiet:
        table = Table(title="budget to 95 % identification accuracy (bootstrap mean ± SD)")
        for col in (
            "pool",
            "policy",
            "post-init",
            "total",
            "% saved post",
            "% saved total",
            "coverage",
        ):
            table.add_column(col)
        for row in result.summary:
            cov = row["coverage"]
            table.add_row(
                row["pool"],
                escape(row["policy"]),
                f"{row['budget_post_init']:,.0f} ± {row['budget_post_init_sd']:,.0f}",
                f"{row['budget_total']:,.0f}",
                f"{row.get('saved_post_init_pct', float('nan')):.1f}",
                f"{row.get('saved_total_pct', float('nan')):.1f}",
                "-" if cov is None else f"{cov:.3f}",
            )
        console.print(table)
        console.print(f"wrote {out}/summary.json, summary.csv, curves.csv")
