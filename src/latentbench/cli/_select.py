"""``latentbench select replay`` and ``latentbench experiment``: PULSE on recorded matrices."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from latentbench.cli import Command, Group, app, example
from latentbench.cli._common import (
    clean_warnings,
    console,
    escape,
    fail,
    fmt,
    fresh_out,
    print_table,
)
from latentbench.exceptions import InputError

if TYPE_CHECKING:
    import numpy as np

select_app = typer.Typer(
    help="Best-model identification (PULSE and baselines) with few evaluations.",
    epilog=example(
        "latentbench select replay responses.parquet --budget 20000 --out run/",
        "latentbench select live --config run.toml --store run.duckdb",
    ),
    no_args_is_help=True,
    cls=Group,
)
app.add_typer(select_app, name="select")


def _fail(exc: Exception) -> None:
    fail(exc)


def check_complete(scores: Any, model_ids: list[str], item_ids: list[str], missing: str) -> None:
    """A replay needs every candidate cell unless ``--missing zero``: name the first hole by
    its model and item ids."""
    import numpy as np

    if missing != "error":
        return
    holes = np.isnan(scores)
    if holes.any():
        row, col = (int(v) for v in np.argwhere(holes)[0])
        raise InputError(
            f"{int(holes.sum()):,} candidate cells are missing (first: model "
            f"{model_ids[row]!r}, item {item_ids[col]!r}); a replay needs complete rows: pass "
            "--missing drop-items to drop the items with a missing cell, --missing zero to "
            "score them 0 explicitly, or drop incomplete models from the file"
        )


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
    import numpy as np

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


class _ReplayCommand(Command):
    # the policy registry imports numpy: list the policies only when `replay --help` is shown
    def format_help(self, ctx: Any, formatter: Any) -> None:
        from latentbench.select._policies import policy_help

        for param in self.params:
            if param.name == "policy":
                param.help = (  # type: ignore[attr-defined]
                    f"One of: {policy_help()}. Options as "
                    "'pulse:weights=precision;init_estimate=prior'."
                )
        super().format_help(ctx, formatter)


@select_app.command(
    "replay",
    cls=_ReplayCommand,
    epilog=example("latentbench select replay responses.parquet --budget 20000 --out run/"),
)
def replay(
    responses: Path = typer.Argument(..., help="Scores of the candidate models (Parquet/CSV)."),
    history: Path | None = typer.Option(
        None,
        help="Scores of historical models on the same items (learns the proxy). Without a "
        "history (this, --history-store or --no-history), a random half of RESPONSES is "
        "used as history and only the other half are candidates (printed and recorded).",
    ),
    history_store: Path | None = typer.Option(
        None,
        help="Take the history from this store (e.g. earlier runs), with --history-benchmark.",
    ),
    history_benchmark: str | None = typer.Option(
        None, help="Benchmark of --history-store whose models are the history."
    ),
    no_history: bool = typer.Option(
        False,
        "--no-history",
        help="History-free: every model of RESPONSES is a candidate and the proxy's item "
        "factors are learned online from the candidates' own revealed cells.",
    ),
    budget: int = typer.Option(400_000, help="Post-initialisation evaluations."),
    policy: str = typer.Option(
        "pulse",
        help="A policy (listed in --help), with options as "
        "'pulse:weights=precision;init_estimate=prior'.",
    ),
    seed: int = typer.Option(0, help="Random seed (initial batch and draws)."),
    batch_size: int = typer.Option(64, help="Evaluations per round (B)."),
    init_batch: int | None = typer.Option(
        None, help="Initial evaluations per model (default: the policy's; PULSE 32, others 64)."
    ),
    rank: str = typer.Option("auto", help="Rank of the low-rank logistic proxy, or 'auto'."),
    alpha: float = typer.Option(
        0.1,
        "--delta",
        "--alpha",
        help="Simultaneous miscoverage of the intervals (and of the certificate).",
    ),
    stop: str = typer.Option(
        "budget",
        help="'budget', or 'confidence': stop once the best is certified at --delta (PULSE "
        "then samples the leader and its strongest challenger, LUCB-style).",
    ),
    missing: str = typer.Option(
        "error",
        help="Missing candidate cells: 'error'; 'zero' to score them 0 explicitly; or "
        "'drop-items' to drop every item with a missing candidate cell (printed).",
    ),
    out: Path | None = typer.Option(
        None, help="Output directory (default ./latentbench-select, or -2, -3, ... if it exists)."
    ),
    quiet: bool = typer.Option(False, "--quiet/--no-quiet", "-q", help="No table."),
) -> None:
    """Replay a selection on a recorded matrix; write OUT/selection.json."""
    from latentbench.io._outputs import check_destination

    target = fresh_out(out, "latentbench-select")
    try:  # before the replay runs, so that its result is never lost to a bad --out
        check_destination(target, "dir")
    except InputError as exc:
        _fail(exc)
    with clean_warnings():
        try:
            result, split_note = _replay(
                responses,
                _HistorySource(history, history_store, history_benchmark, no_history),
                budget,
                policy,
                seed,
                batch_size,
                init_batch,
                rank,
                alpha,
                stop,
                missing,
            )
        except InputError as exc:
            _fail(exc)
    path = target / "selection.json"
    try:
        target.mkdir(parents=True, exist_ok=True)
        result.to_json(path)
    except OSError as exc:  # the disk filled during the replay
        _fail(InputError(f"--out {target}: cannot write ({exc.strerror or exc})"))
    if not quiet:
        frame = result.to_frame().sort_values("estimate", ascending=False).head(10)
        table = Table(title=f"{result.policy}: best model {escape(str(result.best_id))}")
        for col in frame.columns:
            table.add_column(col, justify="left" if col == "model" else "right")
        for _, row in frame.iterrows():
            table.add_row(*[escape(v) if isinstance(v, str) else fmt(v) for v in row.tolist()])
        print_table(table)
        full = len(result.estimates) * int(result.params.get("n_items", 0) or 0)
        share = f" ({result.evaluations_total / full:.1%} of all {fmt(full)} cells)" if full else ""
        console.print(
            f"evaluations: {fmt(result.evaluations_post_init)} after the initial batch, "
            f"{fmt(result.evaluations_total)} in total{share}; stopped: {result.stopped}; "
            f"{result.seconds:.1f} s",
            soft_wrap=True,
        )
        console.print(escape(split_note), soft_wrap=True)
        for line in milestone_lines(result, full):
            console.print(escape(line), soft_wrap=True)
    cert = result.certified
    console.print(
        "best "
        + escape(str(result.best_id))
        + (
            ": no intervals, not certified"
            if cert is None
            else f": certified at delta = {alpha:g}"
            if cert
            else f": not certified at delta = {alpha:g}"
        ),
        soft_wrap=True,
    )
    if not quiet:
        console.print(f"wrote {escape(str(path))}")


def milestone_lines(result: Any, full: int) -> list[str]:
    """When the recommendation settled and when it was first certified, for a run that went
    on after that (so a user sees what the run needed, not only what it spent)."""
    import numpy as np

    lines = []
    spent, best = result.trace_evaluations, result.trace_best
    changed = np.flatnonzero(best[1:] != best[:-1])
    since = int(spent[changed[-1] + 1]) if changed.size else 0
    if result.rounds and since < result.evaluations_post_init:
        lines.append(
            f"recommendation unchanged since {fmt(since)} evaluations after the initial "
            f"batch{_share(since + result.evaluations_init, full)}: {result.best_id}"
        )
    after, alpha = result.certified_after, result.params.get("alpha")
    if after is not None and after < result.evaluations_post_init:
        lines.append(
            f"first certified at delta = {alpha:g} with {fmt(after)} evaluations after the "
            f"initial batch{_share(after + result.evaluations_init, full)}: {result.certified_id}; "
            "--stop confidence stops at the first certificate (sampling the leader and its "
            "strongest challenger)"
        )
    return lines


def _share(total: int, full: int) -> str:
    return f" ({fmt(total)} in total, {total / full:.1%} of all cells)" if full else ""


class _HistorySource:
    """Where the proxy's history comes from: a file, a store benchmark, none (history-free)
    or, when nothing is given, a random half of the responses."""

    def __init__(
        self,
        path: Path | None,
        store: Path | None,
        benchmark: str | None,
        none: bool,
    ) -> None:
        given = [name for name, on in (("--history", path is not None),
                                       ("--history-store", store is not None),
                                       ("--no-history", none)) if on]  # fmt: skip
        if len(given) > 1:
            raise InputError(f"{' and '.join(given)} exclude each other; give one of them")
        if (store is None) != (benchmark is None):
            raise InputError("--history-store and --history-benchmark go together; give both")
        self.path, self.store, self.benchmark, self.none = path, store, benchmark, none


def _replay(
    responses: Path,
    source: _HistorySource,
    budget: int,
    policy: str,
    seed: int,
    batch_size: int,
    init_batch: int | None,
    rank: str,
    alpha: float,
    stop: str,
    missing: str,
) -> tuple[Any, str]:
    from latentbench.io import ResponseMatrix
    from latentbench.io._files import file_sha256
    from latentbench.select import (
        LowRankProxy,
        MatrixOracle,
        make_policy,
        parse_policy,
        run_selection,
        split_models,
    )
    from latentbench.select._policies import POLICIES

    matrix = ResponseMatrix.read(responses)
    history_record: dict[str, Any]
    hist_scores = None
    if source.path is not None or source.store is not None:
        if source.path is not None:
            hist = ResponseMatrix.read(source.path)
            where, flag = str(source.path), "--history"
        else:
            from latentbench.cli._fit import load_matrix

            hist = load_matrix(None, source.store, source.benchmark)
            where = f"benchmark {source.benchmark!r} of store {source.store}"
            flag = "--history-store"
        absent = set(matrix.item_ids) - set(hist.item_ids)
        if absent:
            raise InputError(
                f"{flag} ({where}) lacks {len(absent)} items of RESPONSES, e.g. "
                f"{sorted(absent)[0]!r}; the history must cover the candidates' items"
            )
        hist_scores = hist.subset(items=matrix.item_ids).scores
        candidates, ids = matrix.scores, matrix.model_ids
        split_note = (
            f"history: {hist.n_models} models of {where} learn the proxy; {len(ids)} candidates"
        )
        history_record = {
            "source": where,
            "history models": hist.n_models,
            "candidates": len(ids),
        }
    elif source.none:
        candidates, ids = matrix.scores, matrix.model_ids
        split_note = (
            f"history-free (--no-history): all {len(ids)} models are candidates; the proxy "
            "is learned from their own revealed cells as the run goes"
        )
        history_record = {"source": "none (history-free)", "history models": 0,
                          "candidates": len(ids)}  # fmt: skip
    else:
        h_rows, t_rows = split_models(matrix.n_models, how="random", random_state=seed)
        hist_scores = matrix.scores[h_rows]
        candidates = matrix.scores[t_rows]
        ids = [matrix.model_ids[i] for i in t_rows]
        split_note = (
            f"history split: no --history given, so a random half of RESPONSES "
            f"({len(h_rows)} models, seed {seed}) learns the proxy and only the other "
            f"{len(ids)} models are candidates; pass --history, --history-store or "
            "--no-history to use all of them"
        )
        history_record = {
            "source": f"random half of {responses.name} (seed {seed})",
            "history models": len(h_rows),
            "candidates": len(ids),
            "history ids": [matrix.model_ids[i] for i in h_rows],
        }
    check_complete(candidates, ids, matrix.item_ids, missing)
    oracle = MatrixOracle(candidates, missing=missing)
    kept = oracle.kept_items
    if kept.size < matrix.n_items:
        dropped = matrix.n_items - kept.size
        split_note += (
            f"; --missing drop-items: dropped {dropped:,} of {matrix.n_items:,} items with a "
            f"missing candidate cell, so the target is each model's mean over the other "
            f"{kept.size:,}"
        )
        history_record["dropped items"] = dropped
        if hist_scores is not None:
            hist_scores = hist_scores[:, kept]
    _, name, spec_options, run_kw = parse_policy(policy)
    options = POLICIES[name].options
    extra: dict[str, Any] = {"alpha": alpha} if "alpha" in options else {}
    if stop == "confidence" and "bonus" in options and "bonus" not in spec_options:
        extra["bonus"] = "ci"  # fixed confidence: LUCB sampling
    pol = make_policy(policy, extra, where="--policy")
    proxy: LowRankProxy | None = None
    if pol.needs_proxy and hist_scores is None:  # history-free
        from latentbench.select import OnlineProxy

        online_rank = _rank(rank)
        proxy = OnlineProxy(
            rank=2 if online_rank == "auto" else int(online_rank), random_state=seed
        )
        history_record["proxy rank"] = proxy.rank
    elif pol.needs_proxy and hist_scores is not None:
        with console.status("learning item factors from the history ..."):
            fitted = LowRankProxy(rank=_rank(rank), random_state=seed).fit(hist_scores)
        history_record["proxy rank"] = fitted.rank_
        proxy = fitted
    history_record["input"] = str(responses)
    history_record["input_sha256"] = file_sha256(responses)
    result = run_selection(
        oracle,
        pol,
        budget=budget,
        batch_size=batch_size,
        init_batch=run_kw.get("init_batch", init_batch),
        item_order=run_kw.get("item_order"),
        proxy=proxy,
        random_state=seed,
        stop=stop,
        model_ids=ids,
    )
    result.params.setdefault("n_items", oracle.n_items)
    result.params.setdefault("history", history_record)
    return result, split_note


@app.command(
    "experiment",
    cls=Command,
    epilog=example(
        "latentbench experiment responses.parquet --policies pulse,ucbe --seeds 20 "
        "--budget 20000 --out exp/"
    ),
)
def experiment(
    responses: Path = typer.Argument(..., help="Source matrix (Parquet/CSV)."),
    split: str = typer.Option("random", help="'date' (older half = history) or 'random'."),
    pools: str = typer.Option("gap:0.02", help="Exact-gap pools, e.g. 'gap:0.01,0.02,0.03,full'."),
    policies: str = typer.Option("pulse,ucbe,naive", help="Comma-separated policy specs."),
    seeds: int = typer.Option(200, help="Number of seeds (seed = 10000 * run)."),
    budget: int = typer.Option(400_000, help="Post-initialisation evaluations per run."),
    batch_size: int = typer.Option(64, help="Evaluations per round (B)."),
    init_batch: int | None = typer.Option(
        None, help="Initial evaluations per model (default: the policy's; PULSE 32, others 64)."
    ),
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
        "error",
        help="Missing candidate cells: 'error'; 'zero' to score them 0 explicitly; or "
        "'drop-items' to drop every item with a missing candidate cell (printed).",
    ),
    out: Path | None = typer.Option(
        None,
        help="Output directory (default ./latentbench-experiment, or -2, -3, ... if it exists).",
    ),
    quiet: bool = typer.Option(False, "--quiet/--no-quiet", "-q", help="No progress or table."),
) -> None:
    """Run policies x pools x seeds; write accuracy curves, budget to 95 % and coverage."""
    from rich.progress import Progress

    from latentbench.io import ResponseMatrix
    from latentbench.io._outputs import check_destination
    from latentbench.select import experiment_from_matrix

    target = fresh_out(out, "latentbench-experiment")
    try:  # before the runs, so that their result is never lost to a bad --out
        check_destination(target, "dir")
    except InputError as exc:
        _fail(exc)
    with clean_warnings():
        try:
            matrix = ResponseMatrix.read(responses)
            dates = (
                _read_dates(responses, matrix.n_models, matrix.model_ids)
                if split == "date"
                else None
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
    try:
        result.write(target)
    except OSError as exc:  # the disk filled during the runs
        _fail(InputError(f"--out {target}: cannot write ({exc.strerror or exc})"))
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
        print_table(table)
        console.print(f"wrote {escape(str(target))}/summary.json, summary.csv, curves.csv")
