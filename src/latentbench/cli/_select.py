"""``latentbench select replay`` and ``latentbench experiment``: PULSE on recorded matrices."""

from __future__ import annotations

import contextlib
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from latentbench._text import percent
from latentbench.cli import Command, Group, app, as_given, example
from latentbench.cli._common import (
    benchmark_flag,
    can_redraw,
    claim_out,
    clean_warnings,
    cli_spelling,
    console,
    deprecated_option,
    err_console,
    escape,
    fail,
    fmt,
    fresh_out,
    plain_progress,
    print_table,
    progress_heartbeat,
    say_stopping,
    shown,
    stop_on_sigint,
)
from latentbench.exceptions import DataWarning, InputError

if TYPE_CHECKING:
    from latentbench.cli._common import ProgressLines

select_app = typer.Typer(
    help="Best-model identification (PULSE and baselines) with few evaluations.",
    epilog=example(
        "latentbench select replay candidates.parquet --history history.parquet --out run/",
        "latentbench select live --config run.toml --store run.duckdb",
    ),
    no_args_is_help=True,
    cls=Group,
)
app.add_typer(select_app, name="select")


def _fail(exc: Exception) -> None:
    fail(exc)


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


class _ReplayCommand(Command):
    # the policy registry imports numpy: list the policies only when `replay --help` is shown
    def format_help(self, ctx: Any, formatter: Any) -> None:
        from latentbench.select import policy_help

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
    epilog=example(
        "latentbench select replay candidates.parquet --history history.parquet --out run/",
        "latentbench select replay --store runs.duckdb --benchmark mmlu --out run/",
    ),
)
def replay(
    ctx: typer.Context,
    responses: Path | None = typer.Argument(
        None,
        help="Scores of the candidate models (Parquet/CSV); or --store STORE --benchmark NAME.",
        show_default=False,
    ),
    store: Path | None = typer.Option(
        None, help="Read the candidates from this DuckDB store, with --benchmark."
    ),
    benchmark: str | None = typer.Option(
        None, help="Benchmark of --store whose models are the candidates."
    ),
    metric: str | None = typer.Option(
        None, help="Metric of --benchmark, when the store holds several."
    ),
    filter: str | None = typer.Option(
        None, help="Filter of --benchmark, when the store holds several."
    ),
    split: str | None = typer.Option(
        None, help="Split of --benchmark, when it has several (default: test, warned)."
    ),
    history: Path | None = typer.Option(
        None,
        help="Scores of historical models on the same items (learns the proxy). Without a "
        "history (this, --history-store or --no-history), a random half of RESPONSES is "
        "used as history and only the other half are candidates (printed and recorded).",
    ),
    history_store: Path | None = typer.Option(
        None,
        help="Take the history from this store (e.g. earlier runs), with --history-benchmark "
        "(default with --history-benchmark: --store).",
    ),
    history_benchmark: str | None = typer.Option(
        None, help="Benchmark of --history-store whose models are the history."
    ),
    history_metric: str | None = typer.Option(
        None, help="Metric of --history-benchmark, when the store holds several."
    ),
    history_filter: str | None = typer.Option(
        None, help="Filter of --history-benchmark, when the store holds several."
    ),
    history_split: str | None = typer.Option(
        None, help="Split of --history-benchmark, when it has several (default: test, warned)."
    ),
    no_history: bool = typer.Option(
        False,
        "--no-history",
        help="History-free: every model of RESPONSES is a candidate and the proxy's item "
        "factors are learned online from the candidates' own revealed cells.",
    ),
    budget: int | None = typer.Option(
        None,
        help="Post-initialisation evaluations. Default: none; the run stops when the best is "
        "certified at --delta.",
        show_default=False,
    ),
    policy: str = typer.Option(
        "pulse",
        help="A policy (listed in --help), with options as "
        "'pulse:weights=precision;init_estimate=prior'.",
    ),
    seed: int = typer.Option(0, help="Random seed (initial batch and draws)."),
    batch_size: int | None = typer.Option(
        None,
        help="Evaluations per round (B). Default: from the pool (16 to 64; see "
        "docs/selection.md, Schedule).",
        show_default=False,
    ),
    init_batch: int | None = typer.Option(
        None,
        help="Initial evaluations per model. Default: one batch, the same for every policy. "
        "The same setting as a --policy spec's init_batch (both, different: an error).",
        show_default=False,
    ),
    rank: str = typer.Option("auto", help="Rank of the low-rank proxy, or 'auto'."),
    delta: float = typer.Option(
        0.05,
        "--delta",
        help="Error probability of the certificate (a certified best is the true best with "
        "probability >= 1 - delta); also the simultaneous miscoverage of the intervals.",
    ),
    alpha: float | None = typer.Option(
        None, "--alpha", hidden=True, help="Deprecated spelling of --delta."
    ),
    epsilon: float = typer.Option(
        0.0,
        "--epsilon",
        help="Tolerance of the certificate in score units (0 to 0.5): certify a model within "
        "EPSILON of the best (e.g. 0.01) instead of the best itself, so that models tied or "
        "nearly tied at the top need not be evaluated fully. 0: the best itself.",
    ),
    stop: str | None = typer.Option(
        None,
        help="'confidence': stop once the best is certified at --delta (PULSE then samples "
        "the leader and its strongest challenger, LUCB-style; UCB-E and uniform are certified "
        "on their revealed cells); 'budget': spend --budget. Default: 'confidence' without "
        "--budget, 'budget' with it.",
        show_default=False,
    ),
    missing: str = typer.Option(
        "error",
        help="Missing candidate cells: 'error'; 'zero' to score them 0 explicitly; or "
        "'drop-items' to drop every item with a missing candidate cell (printed).",
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="Output directory (default ./latentbench-select, or -2, -3, ... if it exists).",
    ),
    quiet: bool = typer.Option(
        False,
        "--quiet/--no-quiet",
        "-q",
        help="No table (the history note and the file written are still said).",
    ),
) -> None:
    """Replay a selection on a recorded matrix; write OUT/selection.json."""
    from latentbench.io import check_destination
    from latentbench.select import SelectionRecord
    from latentbench.select import replay as replay_selection

    delta = deprecated_option(ctx, "delta", delta, "--alpha", alpha)
    target = fresh_out(out, "latentbench-select")
    try:  # before the replay runs, so that its result is never lost to a bad --out
        check_destination(target, "dir", files=["selection.json"])
    except InputError as exc:
        _fail(exc)
    with clean_warnings():
        # the history split is a warning in Python; here it is the note printed (-q too)
        warnings.filterwarnings("ignore", message="history split: ", category=DataWarning)
        # and so is the missing-cell rule (--missing zero / drop-items), which changes the
        # target: the note says it
        for rule in ("zero", "drop-items"):
            warnings.filterwarnings("ignore", message=f"missing='{rule}': ", category=DataWarning)
        try:
            # the spinner is progress: on stderr, on a terminal that can redraw, none under
            # -q; elsewhere plain lines (a dumb terminal: a line a phase; a log: rarely)
            lines = plain_progress(quiet, err_console)
            if lines is not None:
                lines("reading the responses", None, None)
            with (
                progress_heartbeat(lines),  # a long step is seen alive in a log
                contextlib.nullcontext(None)
                if quiet or not can_redraw(err_console)
                else err_console.status("reading the responses ...") as status,
            ):
                candidates = _candidates(responses, store, benchmark, metric, filter, split)
                if history_store is None and history_benchmark is not None:
                    if history is not None:  # not "--history-store" (not given)
                        raise InputError(
                            f"--history {history} and --history-benchmark "
                            f"{history_benchmark} exclude each other: the history is a file, "
                            "or a benchmark of a store (--history-store, by default --store)"
                        )
                    history_store = store  # the history's benchmark in the same store
                result = replay_selection(
                    candidates,
                    history=history,
                    history_store=history_store,
                    history_benchmark=history_benchmark,
                    history_metric=history_metric,
                    history_filter=history_filter,
                    history_split=history_split,
                    no_history=no_history,
                    policy=policy,
                    budget=budget,
                    batch_size=batch_size,
                    init_batch=init_batch,
                    rank=rank,
                    delta=delta,
                    epsilon=epsilon,
                    stop=stop,
                    missing=missing,
                    random_state=seed,
                    progress=lines
                    if status is None
                    else lambda stage, *_: status.update(f"{stage} ..."),
                )
        except InputError as exc:
            _fail(exc)
    try:
        target = claim_out(target, out, "latentbench-select")
        path = target / "selection.json"
        replaced = " (replacing the earlier selection.json)" if path.exists() else ""
        target.mkdir(parents=True, exist_ok=True)
        result.to_json(path)
    except OSError as exc:  # the disk filled during the replay
        _fail(InputError(f"--out {target}: cannot write ({exc.strerror or exc})"))
    except InputError as exc:  # a folder made at selection.json during the replay
        _fail(exc)
    record = SelectionRecord.from_result(result, source=str(path))
    if not quiet:
        print_selection_table(record)
    # the history note under -q too: it says which models are the candidates
    note = cli_spelling(str(record.params["history"]["note"]))
    console.print(escape(note), soft_wrap=True)
    if not quiet:
        for line in milestone_lines(record):
            console.print(escape(line), soft_wrap=True)
    console.print(spend_line(record) + f"; {result.seconds:.1f} s", soft_wrap=True)
    console.print(escape(certificate_line(record)), soft_wrap=True)
    # under -q too: maybe ./latentbench-select-N; an --out reused is said, never silently
    console.print(f"wrote {escape(as_given(path))}{replaced}", soft_wrap=True)


def _candidates(
    responses: Path | None,
    store: Path | None,
    benchmark: str | None,
    metric: str | None,
    filter: str | None,
    split: str | None,
) -> Any:
    """RESPONSES (a path: the replay records its hash), or the matrix of a store's
    benchmark (recorded with its query and a hash of its cells)."""
    from latentbench.cli._fit import load_matrix

    if store is None and all(v is None for v in (benchmark, metric, filter, split)):
        if responses is None:
            raise InputError("give a RESPONSES file, or --store STORE --benchmark NAME")
        return responses
    return load_matrix(responses, store, benchmark, metric, filter, split=split)


def spend_line(record: Any) -> str:
    """``cells used: 2,429 of 46,690 (5.2% of a full evaluation), 280 in the initial batch;
    stopped: confidence (best certified at delta = 0.05)`` (the ``stopped`` word is
    selection.json's)."""
    full = record.full_evaluation
    share = f" ({record.share_text()} of a full evaluation)" if full else ""
    stopped = record.stopped_text()
    text = f"cells used: {fmt(record.evaluations_total)}"
    text += f" of {fmt(full)}{share}" if full else ""
    if record.evaluations_init is not None:
        text += f", {fmt(record.evaluations_init)} in the initial batch"
    return text + (f"; stopped: {stopped}" if stopped else "")


def print_selection_table(record: Any, rows: int = 10) -> None:
    """The leading ``rows`` models of a run (estimate, bounds, cells), best first."""
    every = record.to_frame()
    frame = every.sort_values("estimate", ascending=False).head(rows)
    if (
        "estimate_unclipped" in frame.columns
        and (every["estimate_unclipped"] == every["estimate"]).all()
    ):
        frame = frame.drop(columns="estimate_unclipped")  # no estimate was clipped: a copy
    title = f"{record.policy}: best model {escape(str(record.best_model))}"
    if len(every) > len(frame):  # say that the rest exist (selection.json has them all)
        title += f" (top {len(frame)} of {len(every)} models by estimate)"
    table = Table(title=title)
    for col in frame.columns:
        table.add_column(col, justify="left" if col == "model" else "right")
    for _, row in frame.iterrows():
        table.add_row(*[escape(v) if isinstance(v, str) else fmt(v) for v in row.tolist()])
    print_table(table, caption=lambda shown: _bounds_caption(record, shown))


def _bounds_caption(record: Any, columns: Any) -> str | None:
    """What the table's bound columns are (their level from the run's delta), or None."""
    parts = []
    delta = record.delta
    level = f"{percent(1 - delta)} " if delta is not None else ""
    if "lower" in columns:
        parts.append(
            f"lower, upper: simultaneous {level}intervals of each model's full-benchmark mean "
            "(all models at once, valid under the adaptive choice of cells)"
        )
    if "certificate_lower" in columns:
        parts.append(
            "certificate_lower, certificate_upper: the one-sided bounds the certificate "
            "compares (the best's lower above every other's upper)"
        )
    if "estimate_unclipped" in columns:
        parts.append("estimate_unclipped: the policy's estimate before clipping to [0, 1]")
    return escape("; ".join(parts)) if parts else None


def certificate_line(record: Any) -> str:
    """``best M: certified at delta = D`` (or not certified, or no intervals), naming the
    models tied with it when their every cell is revealed."""
    if record.certified is None:
        arms, n_items = record.to_frame(), record.n_items
        if n_items and "n_observed" in arms.columns and (arms["n_observed"] >= n_items).all():
            return f"best {record.best_model}: exact, every cell of every model revealed"
        return f"best {record.best_model}: no intervals, not certified"
    word = "certified" if record.certified else "not certified"
    within = f" {record.certificate_text}" if record.epsilon > 0 else ""
    line = f"best {record.best_model}: {word}{within} at delta = {record.delta:g}"
    history = (record.params or {}).get("history") or {}
    if str(history.get("source", "")).startswith("random half"):
        # the other half of the file's models learned the proxy: not among the candidates
        line += f" among the {len(record.arms)} candidates"
    arms = record.to_frame()
    n_items = record.n_items
    if n_items and "n_observed" in arms.columns:
        # exact ties: the leader and others with every cell revealed and the same mean
        full = arms["n_observed"] >= n_items
        mine = arms["model"].astype(str) == str(record.best_model)
        top = arms["estimate"] == arms.loc[mine, "estimate"].max()
        tied = arms[full & top & ~mine] if bool((full & mine).any()) else arms.iloc[:0]
        if len(tied):
            names = ", ".join(str(m) for m in tied["model"].head(3))
            more = f" and {len(tied) - 3} more" if len(tied) > 3 else ""
            line += (
                f" (tied with {names}{more} at {arms.loc[mine, 'estimate'].max():.4f}, every cell "
                "of each revealed"
            )
            if record.certified and record.epsilon == 0:
                line += ": a best model, not the only one"
            if record.epsilon == 0:
                line += "; --epsilon 0.01 certifies a model within 0.01 of the best, usually "
                line += "without evaluating tied leaders fully"
            line += ")"
    return line


def milestone_lines(record: Any) -> list[str]:
    """When the recommendation was first certified, for a run that went on after that (so a
    user sees what the run needed, not only what it spent)."""
    lines = []
    post = record.evaluations_post_init or 0
    init = record.evaluations_init or 0
    after = record.certified_after
    within = f" {record.certificate_text}" if record.epsilon > 0 else ""
    if after is not None and after < post:
        lines.append(
            f"first certified{within} at delta = {record.delta:g} with {fmt(after)} "
            f"evaluations after the initial batch{_cells(after + init, record)}: "
            f"{record.certified_model}; --stop confidence stops at the first certificate "
            "(sampling the leader and its strongest challenger)"
        )
    return lines


def _cells(total: int, record: Any) -> str:
    share = record.share_text(total)
    return f" ({fmt(total)} in total, {share} of all cells)" if share else ""


def _runs_lines(quiet: bool) -> ProgressLines | None:
    """Plain progress lines of an experiment's runs where no bar is drawn: a dumb terminal
    (``TERM=dumb``) or a log (:func:`plain_progress`); None on a terminal that can redraw and
    under ``-q``.

    Parameters
    ----------
    quiet : bool
        ``-q``: no progress at all.

    Returns
    -------
    ProgressLines or None
        ``lines(phase, done, total)`` (``with`` :func:`progress_heartbeat`: also a line
        while a run lasts with no report).
    """
    return plain_progress(quiet, err_console)


def _with_estimate(
    bar: Any, task: Any, n_jobs: int | None, quiet: bool, lines: ProgressLines | None = None
) -> Any:
    """The experiment's progress callback: advances the bar (``lines``, the plain lines of
    :func:`_runs_lines`, on a dumb terminal or in a log) and, once the first runs are done,
    says how long the rest will take at that pace (runs go n_jobs at a time)."""
    import os
    import time

    start, told = time.perf_counter(), [quiet]
    workers = n_jobs if n_jobs and n_jobs > 0 else os.cpu_count() or 1
    if lines is not None:
        lines("runs", 0, None)  # said before the first run ends

    def progress(phase: str, done: int, total: int) -> None:  # phase: "runs"
        bar.update(task, completed=done, total=total)
        if lines is not None:
            lines("runs", done, total)
        if done >= 1 and not told[0]:
            told[0] = True
            elapsed = time.perf_counter() - start
            rest = (total - done) * elapsed / max(done, min(workers, total))
            bar.console.print(
                f"{done:,} of {total:,} runs done in {elapsed:.0f} s: about {rest / 60:.1f} "
                "more minutes at this pace (fewer --seeds or a smaller --budget is faster)",
                soft_wrap=True,
            )

    return progress


_SELECT_ONLY = ("split", "pools", "policies", "budget", "batch_size", "init_batch", "stop",
                "pool_size", "simulate", "sim_rank", "engine", "jobs", "n_jobs", "seed",
                "random_state", "missing")  # fmt: skip
_ESTIMATE_ONLY = ("budgets", "precision", "max_items", "models")
DEFAULT_SEEDS = {"select": 20, "estimate": 3}
"""``--seeds`` when not given, per ``--task`` (light enough for a first try)."""


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether option ``name`` was given on the command line (not its default)."""
    return getattr(ctx.get_parameter_source(name), "name", "DEFAULT") != "DEFAULT"


def _refuse_other_task(ctx: typer.Context, task: str) -> None:
    """Options of the other ``--task`` given on the command line are refused, not ignored."""
    other = _SELECT_ONLY if task == "estimate" else _ESTIMATE_ONLY
    given = [name for name in other if _given(ctx, name)]
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise InputError(
            f"{flags}: not an option of --task {task}; see latentbench experiment --help"
        )


@app.command(
    "experiment",
    cls=Command,
    epilog=example(
        "latentbench experiment responses.parquet --policies pulse,ucbe --seeds 20 "
        "--budget 20000 --out exp/",
        "latentbench experiment responses.parquet --task estimate --budgets 30,100,300 "
        "--seeds 3 --out exp-estimate/",
        "latentbench experiment --store runs.duckdb --benchmark mmlu --benchmark-split valid "
        "--seeds 20 --out exp/",
    ),
)
def experiment(
    ctx: typer.Context,
    responses: Path | None = typer.Argument(
        None,
        help="Source matrix (Parquet/CSV); or --store STORE --benchmark NAME.",
        show_default=False,
    ),
    store: Path | None = typer.Option(
        None, help="Read the matrix from this DuckDB store, with --benchmark."
    ),
    benchmark: str | None = typer.Option(None, help="Benchmark of --store to experiment on."),
    metric: str | None = typer.Option(
        None, help="Metric of --benchmark, when the store holds several."
    ),
    filter: str | None = typer.Option(
        None, help="Filter of --benchmark, when the store holds several."
    ),
    benchmark_split: str | None = typer.Option(
        None,
        help="The data split of --benchmark (the store's --split of fit and select replay), "
        "when it has several (default: test, warned). Not --split, which halves the models.",
        show_default=False,
    ),
    task: str = typer.Option(
        "select",
        help="'select': best-model identification, policies x pools x seeds. 'estimate': "
        "leave-one-model-out estimates (each model in turn is the new one, the others "
        "calibrate; see docs/estimate.md): error, interval coverage and items used.",
    ),
    split: str = typer.Option(
        "random",
        help="--task select: how the models are halved into history and candidates: 'date' "
        "(older half = history; release dates in RESPONSES_models.parquet) or 'random'. Not "
        "the data split of a store benchmark (--benchmark-split).",
    ),
    pools: str = typer.Option(
        "gap:0.02", help="--task select: exact-gap pools, e.g. 'gap:0.01,0.02,0.03,full'."
    ),
    policies: str = typer.Option(
        "pulse,ucbe,naive", help="--task select: comma-separated policy specs."
    ),
    seeds: int | None = typer.Option(
        None,
        help="Number of seeds. Default: 20 for select (seed = 10000 * run; 200 for "
        "publication-grade curves; a saving to 95 % needs 20 or more for its interval), 3 "
        "for estimate (runs per held-out model).",
        show_default=False,
    ),
    budget: int = typer.Option(
        400_000, help="--task select: post-initialisation evaluations per run."
    ),
    budgets: str = typer.Option(
        "30,100,300", help="--task estimate: items at which each estimate is recorded."
    ),
    precision: float = typer.Option(
        0.02,
        help="--task estimate: also record the items each run needs for this interval "
        "half-width (runs continue past the largest budget until then; 0: skip). The "
        "interval at each budget B is the one 'estimate --budget B' prints.",
    ),
    max_items: int | None = typer.Option(
        None,
        help="--task estimate: most items per run (default: all the model answered).",
        show_default=False,
    ),
    models: str | None = typer.Option(
        None,
        help="--task estimate: held-out models, comma-separated (default: every model).",
        show_default=False,
    ),
    batch_size: int | None = typer.Option(
        None,
        help="--task select: evaluations per round (B). Default: set by the largest pool's shape "
        "and --budget, the same for every policy (16 to 64; see docs/selection.md, Schedule); "
        "summary.json records it.",
        show_default=False,
    ),
    init_batch: int | None = typer.Option(
        None,
        help="--task select: initial evaluations per model. Default: one batch, the same for "
        "every policy; a --policies spec's init_batch sets its policy's own (an --init-batch "
        "that every spec overrides, used by none: an error).",
        show_default=False,
    ),
    stop: str = typer.Option(
        "budget",
        help="--task select: 'budget', or 'confidence': every run also stops at its first "
        "certificate at --delta; the table then compares the cells at the stop.",
    ),
    delta: float = typer.Option(
        0.05,
        help="Error probability of the certificates (select) or of each estimate's interval "
        "(estimate: it covers the truth at every step with probability >= 1 - delta).",
    ),
    pool_size: int = typer.Option(1000, help="--task select: models per pool."),
    rank: str = typer.Option(
        "auto",
        help="Rank of the proxy (select) or of the calibration fits (estimate: 'auto' is 1).",
    ),
    simulate: int | None = typer.Option(
        None,
        help="--task select: draw this many leaderboard-like models, simulated by a fit of "
        "RESPONSES.",
    ),
    sim_rank: int | None = typer.Option(
        None,
        help="--task select: rank of the simulator fit (default 4, or min(models, items) "
        "of a smaller RESPONSES).",
    ),
    engine: str = typer.Option("local", help="--task select: 'local' processes or 'ray'."),
    jobs: int | None = typer.Option(
        None,
        help="--task select: local processes, >= 1 (default or -1: all cores).",
        show_default=False,
    ),
    n_jobs: int | None = typer.Option(
        None, "--n-jobs", hidden=True, help="Deprecated spelling of --jobs."
    ),
    seed: int = typer.Option(0, help="--task select: seed of the split and the simulator."),
    random_state: int | None = typer.Option(
        None, "--random-state", hidden=True, help="Deprecated spelling of --seed."
    ),
    missing: str = typer.Option(
        "error",
        help="--task select: missing candidate cells: 'error'; 'zero' to score them 0 "
        "explicitly; or 'drop-items' to drop every item with a missing candidate cell (printed).",
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="Output directory (default ./latentbench-experiment, or -2, -3, ... if it exists).",
    ),
    quiet: bool = typer.Option(
        False,
        "--quiet/--no-quiet",
        "-q",
        help="No progress or table (the files written are still named).",
    ),
) -> None:
    """Run policies x pools x seeds: accuracy curves, budget to 95 % and coverage.

    With --task estimate: leave-one-model-out score estimates (each model in turn is the new
    one, the others calibrate).
    """

    from latentbench.io import check_destination
    from latentbench.select import experiment_from_matrix, refuse_spec_delta, release_dates

    if task not in ("select", "estimate"):
        _fail(InputError(f"--task {task!r}; expected 'select' or 'estimate'"))
    try:
        _refuse_other_task(ctx, task)
    except InputError as exc:
        _fail(exc)
    source = (responses, store, benchmark, metric, filter, benchmark_split)
    if task == "estimate":
        _estimate_task(
            source,
            budgets=budgets,
            seeds=DEFAULT_SEEDS["estimate"] if seeds is None else seeds,
            models=models,
            precision=precision,
            max_items=max_items,
            delta=delta,
            rank=rank,
            out=out,
            quiet=quiet,
        )
        return
    seeds = DEFAULT_SEEDS["select"] if seeds is None else seeds
    if simulate is None and _given(ctx, "sim_rank"):  # refused, not ignored
        _fail(InputError(f"--sim-rank {sim_rank} without --simulate: it is the rank of the "
                         "simulator that --simulate N fits; expected --simulate N with it, "
                         "or no --sim-rank"))  # fmt: skip
    jobs = deprecated_option(ctx, "jobs", jobs, "--n-jobs", n_jobs)
    seed = deprecated_option(ctx, "seed", seed, "--random-state", random_state)

    target = fresh_out(out, "latentbench-experiment")
    try:  # before the runs, so that their result is never lost to a bad --out
        check_destination(target, "dir", files=["summary.json", "summary.csv", "curves.csv"])
    except InputError as exc:
        _fail(exc)
    with clean_warnings():
        try:
            specs = _split_specs(policies)
            for spec in specs:  # before reading the data: --delta sets it for every run
                refuse_spec_delta(spec, "--policies")
            if split == "date" and store is not None:
                raise InputError(
                    f"--split date with --store {store}: the release dates are read from "
                    "RESPONSES_models.parquet beside a RESPONSES file, and a store holds none; "
                    "expected --split random, or a RESPONSES file with its release dates "
                    "beside it"
                )
            matrix = experiment_matrix(*source)
            dates = None
            if split == "date" and responses is not None:
                dates = release_dates(responses, matrix.model_ids)
            lines = _runs_lines(quiet)
            with (
                shown(_runs_progress(quiet)) as bar,
                progress_heartbeat(lines),  # a long run is seen alive in a log
                # Ray runs cannot stop part-way: there Ctrl-C interrupts as before
                (
                    stop_on_sigint(say_stopping("runs"))
                    if engine == "local"
                    else contextlib.nullcontext(None)
                ) as stop_now,
            ):
                runs = bar.add_task("runs", total=None)

                progress = _with_estimate(bar, runs, jobs, quiet, lines)
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
                    stop=stop,
                    delta=delta,
                    rank=_rank(rank),
                    simulate=simulate,
                    sim_rank=sim_rank,
                    random_state=seed,
                    engine=engine,
                    n_jobs=jobs,
                    missing=missing,
                    progress=progress,
                    stop_event=stop_now,
                )
        except InputError as exc:
            _fail(exc)
    try:
        target = claim_out(target, out, "latentbench-experiment")
        names = ("summary.json", "summary.csv", "curves.csv")
        there = [n for n in names if (target / n).exists()]  # --out reused: never silently
        result.save(target)
    except OSError as exc:  # the disk filled during the runs
        _fail(InputError(f"--out {target}: cannot write ({exc.strerror or exc})"))
    except InputError as exc:  # a folder made at one of its files during the runs
        _fail(exc)
    if not quiet:
        print_experiment_table(result)
    replaced = f" (replacing the earlier {', '.join(there)})" if there else ""
    console.print(
        f"wrote {escape(as_given(target / 'summary.json'))}, summary.csv, curves.csv"
        f"{escape(replaced)}",
        soft_wrap=True,
    )
    if "seeds_asked" in result.params:
        err_console.print(
            f"interrupted (Ctrl-C): the table and {escape(str(target))} cover the "
            f"{result.params['n_seeds']:,} of {result.params['seeds_asked']:,} seeds that every "
            "pool and policy completed; re-run the command for all (the runs are deterministic)",
            soft_wrap=True,
        )
        raise typer.Exit(130)


def experiment_matrix(
    responses: Path | None,
    store: Path | None,
    benchmark: str | None,
    metric: str | None,
    filter: str | None,
    benchmark_split: str | None,
) -> Any:
    """``experiment``'s matrix: RESPONSES, or a store's benchmark read as ``fit`` and ``select
    replay`` read it (:func:`~latentbench.cli._fit.load_matrix`), with the store's data
    split spelled ``--benchmark-split`` in what it says (``--split`` is the history split
    here); raises :class:`InputError`."""
    from latentbench.cli._fit import load_matrix

    def respelled(text: str) -> str:
        return re.sub(r"--split\b", "--benchmark-split", cli_spelling(text))

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            matrix = load_matrix(responses, store, benchmark, metric, filter, split=benchmark_split)
    except InputError as exc:
        if benchmark is not None:
            exc = benchmark_flag(exc, benchmark)  # type: ignore[assignment]
        raise InputError(respelled(str(exc))) from None
    for said in caught:  # shown by the caller's clean_warnings, spelled for this command
        warnings.warn(respelled(str(said.message)), said.category, stacklevel=1)
    return matrix


def _estimate_task(
    source: tuple[Any, ...],
    *,
    budgets: str,
    seeds: int,
    models: str | None,
    precision: float,
    max_items: int | None,
    delta: float,
    rank: str,
    out: Path | None,
    quiet: bool,
) -> None:
    """``experiment --task estimate``: a shell over :func:`latentbench.select.
    estimate_experiment` (its :class:`~latentbench.select.EstimateExperiment` is saved and
    printed)."""

    from latentbench.io import check_destination
    from latentbench.select import estimate_experiment

    target = fresh_out(out, "latentbench-experiment")
    with clean_warnings():
        try:
            check_destination(target, "dir", files=["runs.csv", "summary.csv", "summary.json"])
            try:
                marks = tuple(int(b) for b in budgets.split(",") if b.strip())
            except ValueError:
                marks = ()
            if not marks or min(marks) < 1:
                raise InputError(
                    f"--budgets {budgets!r}; expected positive item counts such as '30,100,300'"
                )
            if max_items is not None and max_items < 1:
                raise InputError(f"--max-items {max_items}; expected an item count of at least 1")
            fit_rank = 1 if rank == "auto" else _rank(rank)
            if not 0 <= precision < 0.5:
                raise InputError(
                    f"--precision {precision!r}; expected a half-width in (0, 0.5), or 0 to skip"
                )
            matrix = experiment_matrix(*source)
            held_out = None if models is None else _held_out(models, matrix.model_ids)
            lines = _runs_lines(quiet)
            with (
                shown(_runs_progress(quiet)) as bar,
                progress_heartbeat(lines),  # a long run is seen alive in a log
                stop_on_sigint(say_stopping("held-out model")) as stop,
            ):
                runs = bar.add_task("held-out runs", total=None)
                if lines is not None:
                    lines("held-out runs", 0, None)  # said before the first run ends

                def progress(_phase: str, done: int | None, total: int | None) -> None:
                    bar.update(runs, completed=done, total=total)
                    if lines is not None:
                        lines("held-out runs", done, total)

                result = estimate_experiment(
                    matrix,
                    budgets=marks,
                    seeds=seeds,
                    models=held_out,
                    precision=precision or None,
                    max_items=max_items,
                    delta=delta,
                    rank=int(fit_rank),
                    progress=progress,
                    stop_event=stop,
                )
        except InputError as exc:
            said = str(exc)  # the function's argument, as the command spells it
            if said.startswith("rank=") and ":" in said:
                said = f"--rank {rank}:{said.split(':', 1)[1]}"
            if said.startswith("budgets=") and ":" in said:
                said = f"--budgets {budgets!r}:{said.split(':', 1)[1]}"
            _fail(InputError(said))
    names = ("runs.csv", "summary.csv", "summary.json")
    there = [n for n in names if (target / n).exists()]  # --out reused: never silently
    try:
        target = claim_out(target, out, "latentbench-experiment")
        result.save(target)
    except OSError as exc:  # the disk filled during the runs
        _fail(InputError(f"--out {target}: cannot write ({exc.strerror or exc})"))
    except InputError as exc:  # a folder made at one of its files during the runs
        _fail(exc)
    if not quiet:
        print_estimate_experiment(result.summary, delta=delta, precision=precision or None)
    replaced = f" (replacing the earlier {', '.join(there)})" if there else ""
    console.print(  # under -q too: the folder may be a fresh default one
        f"wrote {escape(as_given(target / 'runs.csv'))}, summary.csv, summary.json"
        f"{escape(replaced)}",
        soft_wrap=True,
    )
    if not quiet:
        import shlex

        here = shlex.quote(str(target))  # pasted as it is printed (a folder with a space)
        console.print(f"report: latentbench report {escape(here)}", soft_wrap=True)
    if result.not_run:
        err_console.print(
            f"interrupted (Ctrl-C): the table and {escape(str(target))} cover the held-out "
            "models finished before it; re-run the command for all (the runs are "
            "deterministic), or --models for the rest",
            soft_wrap=True,
        )
        raise typer.Exit(130)


def _held_out(text: str, ids: list[str]) -> list[str]:
    """``--models a,b``: the names, each as written when the matrix has a model of that
    exact id (``'  padded  '``), else stripped; empty pieces (a trailing comma) are skipped,
    and no name at all is an error."""
    known = set(ids)
    names = [m if m in known else m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise InputError(
            f"--models {text!r}: no model name; expected names separated by commas (leave "
            "--models out to hold out every model)"
        )
    return names


def print_estimate_experiment(
    summary: dict[str, Any], *, delta: float, precision: float | None
) -> None:
    """Per budget: mean absolute error (± its SE over held-out models), coverage with its
    Wilson 95% interval over held-out models, and the mean half-width; then the items needed
    for ``precision``."""
    table = Table(
        title=f"leave-one-model-out ({1 - delta:.0%} intervals): error ± SE, coverage [95% CI]"
    )
    rows = summary["by_budget"]
    against = any(row.get("uniform_mae") is not None for row in rows)
    columns = ["items", "models", "runs", "mean |error|", "coverage", "half-width"]
    if against:
        columns += ["random items |error|", "ratio"]
    for col in columns:
        table.add_column(col, justify="right")

    def pm(value: float | None, se: float | None, digits: int) -> str:
        if value is None:
            return "-"
        return f"{value:.{digits}f}" + ("" if se is None else f" ± {se:.{digits}f}")

    for row in rows:
        cov, lo, hi = row["coverage"], row.get("coverage_lower"), row.get("coverage_upper")
        cells = [
            fmt(row["budget"]),
            fmt(row["models"]),
            fmt(row["runs"]),
            pm(row["mae"], row["mae_se"], 4),
            "-" if cov is None else f"{cov:.3f}" + ("" if lo is None else f" [{lo:.3f}, {hi:.3f}]"),
            pm(row["half_width"], None, 4),
        ]
        if against:
            cells += [pm(row.get("uniform_mae"), None, 4),
                      pm(row.get("mae_ratio"), row.get("mae_ratio_se"), 2)]  # fmt: skip
        table.add_row(*cells)
    print_table(table)
    if against:
        console.print(
            "random items |error|: the expected error of the mean of as many items drawn "
            "uniformly from the model's answers (exact for 0/1 scores); ratio: mean |error| / "
            "that, ± SE over held-out models",
            soft_wrap=True,
        )
    emptied = [r for r in rows if r.get("contradicted")]
    if emptied:  # the per-budget coverage overstates the anytime guarantee there
        said = "; ".join(
            f"{fmt(r['budget'])} items: {fmt(r['contradicted'])} of {fmt(r['runs'])} runs "
            f"contradicted, covered after every item {r['coverage_throughout']:.3f}"
            for r in emptied
        )
        console.print(
            f"confidence sequences the answers contradicted (interval reset to the certain "
            f"range): {said}",
            soft_wrap=True,
        )
    if precision is not None:  # the runs and models that did not reach it count
        from latentbench.select import EstimateExperiment

        line = EstimateExperiment.precision_text(precision, summary["precision"])
        console.print(escape(line), soft_wrap=True)


def _pct(
    row: dict[str, Any], name: str, ref: dict[str, Any] | None, reference: Any, at_stop: bool
) -> str:
    """A saving with its SE and interval (without them from one seed), or why there is none;
    under it, which bound it is where some runs did not certify (``saving_censored``)."""
    from latentbench.select import ExperimentRecord

    number, saving_missing = ExperimentRecord.number, ExperimentRecord.saving_missing

    if ref is not None and ref.get("policy") == row.get("policy"):
        return "reference"
    value = number(row.get(name))
    if value is None:
        return escape(saving_missing(row, ref, reference, at_stop=at_stop))
    se, lo, hi = (number(row.get(f"{name}_{k}")) for k in ("se", "lo", "hi"))
    text = f"{value:.1f}"
    if se is not None and lo is not None and hi is not None:
        text += f" ± {se:.1f} [{lo:.1f}, {hi:.1f}]"
    bound = ExperimentRecord.censored_bound(row, ref) if row.get("saving_censored") else None
    return text if bound is None else f"{text}\n({bound})"


def _budget_cell(row: dict[str, Any]) -> str:
    """The budget to 95 % (± its bootstrap SD), with the share of resamples that reach it
    when some do not, or ``not reached (final accuracy 92 %)``."""
    from latentbench.select import ExperimentRecord

    budget_text, number = ExperimentRecord.budget_text, ExperimentRecord.number

    text = budget_text(row.get("budget_post_init"), row.get("budget_post_init_sd"),
                       row.get("final_accuracy"))  # fmt: skip
    share = number(row.get("reached_fraction"))
    if number(row.get("budget_post_init")) is not None and share is not None and share < 1:
        text += f" (reached in {100 * share:.0f} % of resamples)"
    return text


def print_experiment_table(result: Any) -> None:
    """Per pool and policy: the budget to 95 % (the crossing of all the seeds' accuracy
    curve, ± its bootstrap SD; ``not reached`` with the final accuracy when the curve never
    gets there) or the cells at a certified stop, and each saving with its paired-bootstrap
    SE and 95 % interval (the saving columns only with a reference policy; no SD or interval
    from one seed, said under the table)."""
    from latentbench.select import ExperimentRecord

    budget_text, number = ExperimentRecord.budget_text, ExperimentRecord.number
    reference_row, seeds_text = ExperimentRecord.reference_row, ExperimentRecord.seeds_text

    at_stop = result.params.get("stop") == "confidence"
    reference = result.params.get("reference")
    n_seeds = result.params.get("n_seeds")
    one = n_seeds == 1
    title = (
        f"cells at the certified stop (delta = {result.params.get('delta'):g}; mean"
        + ("" if one else " ± SE")
        + ")"
        if at_stop
        else "budget to 95 % identification accuracy (all seeds' curve"
        + ("" if one else "; ± bootstrap SD")
        + ")"
    )
    table = Table(title=title)
    first = ("cells post-init", "certified", "certified right") if at_stop else (
        "post-init", "total", "to 90 %")  # fmt: skip
    savings = () if reference is None else (
        f"% saved post vs {escape(str(reference))}", "% saved total")  # fmt: skip
    columns = ("pool", "top-2 gap", "policy", *first, *savings, "coverage")
    for col in columns:
        table.add_column(col)
    for row in result.summary:
        cov = row["coverage"]
        lo, hi = row.get("coverage_lower"), row.get("coverage_upper")
        gap = (result.pools.get(row["pool"]) or {}).get("top2_gap")
        if at_stop:
            right = row.get("certified_correct")
            cells: tuple[str, ...] = (
                budget_text(
                    row.get("cells_at_stop_post_init"), row.get("cells_at_stop_post_init_se")
                ),
                f"{row['certified_fraction']:.0%}",
                "-" if right is None else f"{right:.0%}",
            )
        else:
            total = number(row.get("budget_total"))
            cells = (
                _budget_cell(row),
                "not reached" if total is None else f"{total:,.0f}",
                budget_text(row.get("budget_post_init_90"), row.get("budget_post_init_90_sd")),
            )
        if reference is not None:
            ref = reference_row(result.summary, row, reference)
            cells += (
                _pct(row, "saved_post_init_pct", ref, reference, at_stop),
                _pct(row, "saved_total_pct", ref, reference, at_stop),
            )
        table.add_row(
            row["pool"],
            "-" if gap is None else f"{gap:.3f}",
            escape(row["policy"]),
            *cells,
            "-" if cov is None else f"{cov:.2f}" + ("" if lo is None else f" [{lo:.2f}, {hi:.2f}]"),
        )
    print_table(table)
    if reference is None:
        console.print(
            "no saving columns: no reference policy (the savings are against UCB-E; add ucbe "
            "to --policies)",
            soft_wrap=True,
        )
    unbounded = sorted(
        {
            str(row[f"{name}_no_interval"])
            for row in result.summary
            for name in ("saved_post_init_pct", "saved_total_pct")
            if number(row.get(name)) is not None and row.get(f"{name}_no_interval")
        }
    )
    if reference is not None and unbounded and not one:
        console.print("savings without an SE or interval: " + "; ".join(unbounded), soft_wrap=True)
    unmeasured = sorted(
        {
            str(row["saved_post_init_pct_no_interval"])
            for row in result.summary
            if at_stop
            and number(row.get("saved_post_init_pct")) is None
            and str(row.get("saved_post_init_pct_no_interval") or "").startswith(
                "no saving measured"
            )
        }
    )
    for line in unmeasured:  # no run certified: what the table's "not measured" means
        console.print(escape(cli_spelling(line)), soft_wrap=True)
    for row in result.summary:  # some runs did not certify: which bound a saving is
        if at_stop and reference is not None and row.get("saving_censored"):
            said = f"pool {row['pool']}, {row['policy']}: {row['saving_censored']}"
            console.print(escape(said), soft_wrap=True)
    spread_note = (getattr(result, "params", None) or {}).get("budget_sd_note")
    if spread_note and not one and not at_stop:  # the table at a stop shows no budget
        console.print(str(spread_note), soft_wrap=True)
    if one:
        console.print(
            f"{seeds_text(n_seeds)}: every figure is that of one run, with no uncertainty (no SD "
            "or interval); use --seeds 2 or more (20 by default) for them",
            soft_wrap=True,
        )


def _runs_progress(quiet: bool) -> Any:
    """An experiment's bar of runs on stderr (a rich ``Progress``, imported here to keep the
    command line's start light), drawn on a terminal only (not under ``-q``)."""
    from rich.progress import Progress

    return Progress(
        console=err_console,
        disable=quiet or not can_redraw(err_console),
        transient=True,
        auto_refresh=False,
    )
