"""``latentbench select live``: a durable, resumable selection against real endpoints."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from latentbench.cli import Command, example
from latentbench.cli._common import (
    can_redraw,
    clean_warnings,
    escape,
    plain_progress,
    progress_heartbeat,
    refuse_memory_store,
    shown,
    stop_on_sigint,
    store_refused,
    store_write_error,
)
from latentbench.cli._common import err_console as err
from latentbench.exceptions import InputError

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from latentbench.cli._common import ProgressLines
    from latentbench.select import LiveConfig, LiveResult, SelectionResult

try:
    from latentbench.cli._select import select_app
except ImportError:  # pragma: no cover - the select group is missing: make our own
    from latentbench.cli import app

    select_app = typer.Typer(help="Best-model identification.", no_args_is_help=True)
    app.add_typer(select_app, name="select")

__all__ = ["EXIT_CODES", "live"]

EXIT_CODES = {"done": 0, "failed": 1, "capped": 3, "waiting": 4, "interrupted": 130}
"""Exit status of ``select live`` per run status (2: bad input)."""


def _progress_line(p: Any, init_total: int | None = None) -> str:
    leader = ""
    if p.leader is not None:
        leader = f" | leader {escape(p.leader)} {p.estimate:.3f}"
        if p.lower is not None and p.upper is not None:
            leader += f" [{p.lower:.3f}, {p.upper:.3f}]"
    errors = f" | [red]{p.n_errors} failed[/red]" if p.n_errors else ""
    return (
        f"batch {p.call} ({p.phase}, {escape(p.model)}): {p.n_new} new, {p.n_replayed} from "
        f"store{errors} | run: spent {p.paid_total:,}, {_left(p, init_total)}{leader}"
    )


def _left(p: Any, init_total: int | None) -> str:
    """What is left, in the config's terms: the post-initialisation ``budget`` is separate from
    the initial batch (``n_models * init_batch``), so never show one number as "budget".
    The run's, all sessions, as ``spent`` beside it (a resumed session replaying its stored
    cells showed "initial batch 8/32" beside "spent 56")."""
    if init_total is None:
        return f"{p.budget_left:,} cells left of {p.planned:,} planned"
    budget = p.planned - init_total
    if p.run_revealed < init_total:
        return f"initial batch {p.run_revealed:,}/{init_total:,}, then budget {budget:,}"
    return f"budget left {min(p.budget_left, budget):,} of {budget:,}"


class _LiveCommand(Command):
    """The help of ``select live`` lists the registered oracle kinds (the registry is imported
    only when the help is shown, so that ``latentbench --help`` stays fast)."""

    def format_help(self, ctx: typer.Context, formatter: Any) -> None:  # type: ignore[override]
        from latentbench.select.live import ORACLES

        kinds = "\n".join(f"  {k:<10} {v.summary}" for k, v in ORACLES.items())
        base = (self.help or "").split("\n\b\nOracle kinds")[0]
        self.help = (
            f"{base}\n\b\nOracle kinds (kind = ... in the oracle table; docs/live.md):\n{kinds}"
        )
        super().format_help(ctx, formatter)


@select_app.command(
    "live",
    cls=_LiveCommand,
    epilog=example("latentbench select live --config run.toml --store run.duckdb"),
)
def live(
    config: Path = typer.Option(..., "--config", help="Run configuration (TOML)."),
    store: Path = typer.Option(
        ..., "--store", help="DuckDB store: every observation is committed there first."
    ),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print the outcome as JSON."),
    quiet: bool = typer.Option(False, "--quiet/--no-quiet", "-q", help="No progress display."),
) -> None:
    """Run a live selection; re-run the same command to resume after any interruption.

    Cells already stored are never requested again. Ctrl-C stops after the batch in flight
    (press it twice to abort at once; stored cells are kept either way).
    """
    refuse_memory_store(store, "every answer paid for (and the run a re-run resumes)")
    resume = shlex.join(
        ["latentbench", "select", "live", "--config", str(config), "--store", str(store)]
    )
    cfg = _read_config(config)
    result = _run(cfg, store, quiet, resume)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=1))
    code = EXIT_CODES.get(result.status, 1)
    summary = live_summary(result)
    if result.status == "done" and result.selection is not None:
        _say_done(result, result.selection, summary)
    else:
        _say_not_done(result, summary, config, resume)
    sys.stderr.flush()
    if code:
        raise typer.Exit(code)


def live_summary(result: Any) -> str:
    """``run r1: done; 1,845 new evaluations, 0 from the store, 1,845 stored in all``."""
    return (
        f"run {result.run_id}: {result.status}; {result.n_paid:,} new evaluations, "
        f"{result.n_replayed:,} from the store, {result.paid_total:,} stored in all"
    )


def _read_config(config: Path) -> LiveConfig:
    """The run's :class:`~latentbench.select.LiveConfig`; a bad one is said, exit 2."""
    from latentbench.select.live import LiveConfig

    try:
        with clean_warnings(err):  # e.g. a deprecated key, one clean line
            return LiveConfig.from_toml(config)
    except InputError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None


def _run(cfg: LiveConfig, store: Path, quiet: bool, resume: str) -> LiveResult:
    """:func:`~latentbench.select.run_live` under the progress display and the Ctrl-C
    handler; bad input (exit 2), a store that cannot be written (1) and an abort (130) are
    said with the command that resumes."""
    import duckdb

    from latentbench.select.live import run_live

    progress = _progress_display(quiet)
    try:
        with stop_on_sigint(_say_stopping) as stop_event, shown(progress):
            task = progress.add_task("starting", total=None)
            show, lines = _progress_callback(progress, task, cfg, quiet)
            # its heartbeat: a long batch is seen alive in a log; clean_warnings: one clean
            # line each, not a file path and source
            with progress_heartbeat(lines), clean_warnings(err):
                return run_live(cfg, store, progress=show, stop_event=stop_event)
    except InputError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    except duckdb.InterruptException:  # a second Ctrl-C inside a query: as one outside
        err.print(
            f"[red]aborted[/red]; stored cells are kept. Resume with: {escape(resume)}",
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    except (duckdb.Error, OSError) as exc:  # the store cannot be written: disk full, ...
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, duckdb.Error) and not store_write_error(exc):
            err.print(
                f"[red]error:[/red] {escape(store_refused(store, reason, 'cells'))}",
                soft_wrap=True,
            )
            raise typer.Exit(1) from None
        err.print(
            f"[red]error:[/red] {escape(str(store))}: the store could not be written "
            f"({escape(reason)}); the cells committed before are kept. Free the space or fix "
            f"the store's folder, then resume with: {escape(resume)}",
            soft_wrap=True,
        )
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err.print(
            f"[red]aborted[/red]; stored cells are kept. Resume with: {escape(resume)}",
            soft_wrap=True,
        )
        raise typer.Exit(130) from None


def _say_stopping() -> None:
    """What a first Ctrl-C says."""
    err.print("[yellow]stopping after the batch in flight (Ctrl-C again to abort)[/yellow]")


def _progress_display(quiet: bool) -> Progress:
    """The progress bar on stderr (off with ``quiet`` or when stderr is not a terminal)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    return Progress(
        TextColumn("[bold]select live[/bold]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        console=err,
        disable=quiet or not can_redraw(err),
        transient=False,
        auto_refresh=False,  # redrawn by shown()
    )


def _progress_callback(
    progress: Progress, task: TaskID, cfg: LiveConfig, quiet: bool
) -> tuple[Callable[[Any], None], ProgressLines | None]:
    """The ``progress`` callback of :func:`~latentbench.select.run_live`: it updates the bar
    and, where no bar is drawn (a dumb terminal, a log), gives the command line's plain
    progress lines (:func:`~latentbench.cli._common.plain_progress`: in a log the first
    after a minute, then at most one a minute) the batch's line (spent, budget left,
    leader and interval); a batch with failures is said at once. Returned with those
    lines (None where a bar is drawn, or under ``-q``), whose heartbeat the caller runs."""
    latest: list[str] = []
    lines = plain_progress(quiet, err, detail=lambda: latest[0] if latest else None)

    def show(p: Any) -> None:
        # planned = the initial batch of every model + the budget
        init_total = None if cfg.run.budget is None else p.planned - cfg.run.budget
        line = _progress_line(p, init_total)
        progress.update(task, completed=p.run_revealed, total=p.planned, description=line)
        if lines is None:
            return
        latest[:] = [line]
        if p.n_errors:  # failed cells: not progress, said as they come
            err.print(line, soft_wrap=True)
        else:
            lines("select live", p.run_revealed, p.planned)

    return show, lines


def _say_done(result: LiveResult, sel: SelectionResult, summary: str) -> None:
    """The outcome of a finished run (``sel``: its selection): the best model, the
    ``summary`` line, the spend and certificate lines, and the notes (or the failures'
    message)."""
    from latentbench.cli._select import certificate_line, milestone_lines, spend_line
    from latentbench.select import SelectionRecord

    best = sel.best
    interval = ""
    if sel.lower is not None and sel.upper is not None:
        interval = f" [{sel.lower[best]:.3f}, {sel.upper[best]:.3f}]"
    err.print(  # the cells and the stop: in the spend line below
        f"[green]best model[/green] {escape(str(sel.best_id))}: estimate "
        f"{sel.estimates[best]:.3f}{interval}",
        soft_wrap=True,
    )
    err.print(escape(summary), soft_wrap=True)
    record = SelectionRecord.from_result(sel)
    for line in [*milestone_lines(record), spend_line(record), certificate_line(record)]:
        err.print(escape(line), soft_wrap=True)
    if result.message and "failed" in result.message:  # the notes are in it
        err.print(f"[yellow]{escape(result.message)}[/yellow]", soft_wrap=True)
    else:
        for note in result.notes:  # answers without text: scored, and said
            err.print(f"[yellow]{escape(note)}[/yellow]", soft_wrap=True)


def _say_not_done(result: LiveResult, summary: str, config: Path, resume: str) -> None:
    """The outcome of a run that did not finish: the ``summary``, its message and failed
    cells, and how to go on (run the plan, raise the cap, or resume)."""
    err.print(f"[yellow]{escape(summary)}[/yellow]", soft_wrap=True)
    err.print(escape(result.message), soft_wrap=True)
    for model, item, error in result.errors.itertuples(index=False):
        err.print(f"  failed: {escape(model)} / {escape(item)}: {escape(error)}", soft_wrap=True)
    if result.status == "waiting":
        err.print(f"run the plan, then resume with: {escape(resume)}", soft_wrap=True)
    elif result.status == "capped":
        err.print(
            escape(
                f"raise [run] spend_cap in {config} (every paid request counts, all "
                f"sessions), then resume with: {resume}"
            ),
            soft_wrap=True,
        )
    else:
        err.print(f"resume with: {escape(resume)}", soft_wrap=True)
