"""``latentbench ingest``, ``ls`` and ``export``: result files in and out of the store."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from latentbench.cli import Command, app, as_given, example
from latentbench.cli._common import (
    cli_spelling,
    console,
    err_console,
    escape,
    print_table,
    progress_bar,
    refuse_memory_store,
)
from latentbench.exceptions import DataWarning, InputError, StoreInUse


def parse_choice(values: list[str] | None, flag: str) -> str | dict[str, str] | None:
    """``--metric acc`` -> ``"acc"``; ``--metric arc_easy=acc --metric gsm8k=exact_match`` ->
    a mapping. The last ``=`` splits, so HELM names such as ``mmlu:subject=anatomy=exact_match``
    work. A plain name next to ``TASK=NAME`` entries is the default for other tasks (``"*"``)."""
    if not values:
        return None
    mapping: dict[str, str] = {}
    plain: list[str] = []
    for value in values:
        if "=" in value:
            task, _, name = value.rpartition("=")
            if not task or not name:
                raise InputError(f"{flag} {value!r}; expected NAME or TASK=NAME")
            if mapping.get(task, name) != name:
                raise InputError(
                    f"{flag} {task}={mapping[task]} and {flag} {value}: two choices for one "
                    f"task; give one {flag} per task"
                )
            mapping[task] = name
        else:
            plain.append(value)
    if len(plain) > 1:
        raise InputError(f"{flag} given {len(plain)} plain names {plain}; give one, or TASK=NAME")
    if not mapping:
        return plain[0]
    if plain:
        mapping["*"] = plain[0]
    return mapping


def _fail(exc: Exception) -> None:
    text = escape(cli_spelling(str(exc)))
    err_console.print(f"[red]error:[/red] {text}", highlight=False, soft_wrap=True)
    raise typer.Exit(2) from None


def _sources_help() -> str:
    """The ``ingest`` help: one line per registered reader (typer keeps ``\b`` blocks as is)."""
    from latentbench.io.formats import READERS

    lines = [f"  {r.name:<12} {r.summary}" for r in READERS.values()]
    return (
        "Read result files into the store (all rows or none; re-ingesting is a no-op).\n\n"
        "\b\nSources:\n" + "\n".join(lines)
    )


def _option_help(name: str, text: str) -> str:
    """Help of a source-specific option, prefixed with the sources that take it."""
    from latentbench.io.formats import READERS

    owners = ", ".join(r.name for r in READERS.values() if name in r.options)
    return f"{owners}: {text}"


# the registry imports pandas: its help texts are filled in when `ingest --help` is shown, so
# that `latentbench --help` stays fast
_SOURCE_OPTIONS = {
    "include_perturbed": "keep perturbed instances.",
    "errored": "errored samples are missing, or zero (flagged 0 rows).",
    "layout": "auto, long or wide.",
    "split": "the split to keep (default test).",
}


class _IngestCommand(Command):
    def format_help(self, ctx: typer.Context, formatter: object) -> None:  # type: ignore[override]
        from latentbench.io.formats import READERS

        self.help = _sources_help()
        for param in self.params:
            if param.name == "source":
                param.help = f"One of: {', '.join(READERS)}."  # type: ignore[attr-defined]
            elif param.name in _SOURCE_OPTIONS:
                param.help = _option_help(param.name, _SOURCE_OPTIONS[param.name])  # type: ignore[attr-defined]
        super().format_help(ctx, formatter)  # type: ignore[arg-type]


@app.command(
    help="Read result files into the store (all rows or none; re-ingesting is a no-op).",
    cls=_IngestCommand,
    epilog=example(
        "latentbench ingest lm-eval results/ --store results.duckdb --metric acc",
        "latentbench ingest table scores.csv --store results.duckdb --benchmark mybench",
        "latentbench ingest lm-eval mmlu-out/ --store results.duckdb --group mmlu",
    ),
)
def ingest(
    source: str = typer.Argument(..., help="The source format (see the list above)."),
    paths: list[Path] = typer.Argument(..., help="Result files or folders (searched recursively)."),
    store: Path = typer.Option(..., "--store", help="DuckDB store file (created if absent)."),
    benchmark: str | None = typer.Option(None, help="Benchmark name for every row."),
    group: str | None = typer.Option(
        None,
        help="Read every task as one benchmark of this name, items TASK/ID (e.g. lm-eval's "
        "57 mmlu_* tasks as mmlu); the tasks must share a metric and filter.",
    ),
    metric: list[str] | None = typer.Option(
        None, help="Metric: NAME, or TASK=NAME (repeatable). Required when a task has several."
    ),
    filter: list[str] | None = typer.Option(
        None,
        "--filter",
        help="lm-eval filter / Inspect scorer: NAME or TASK=NAME (repeatable).",
    ),
    model: str | None = typer.Option(
        None,
        help="Canonical model id for every row (needed for lm-eval runs that name no model, "
        "e.g. --model dummy).",
    ),
    include_perturbed: bool = typer.Option(
        False,
        "--include-perturbed/--no-include-perturbed",
        help=_SOURCE_OPTIONS["include_perturbed"],
    ),
    errored: str = typer.Option("missing", help=_SOURCE_OPTIONS["errored"]),
    layout: str = typer.Option("auto", help=_SOURCE_OPTIONS["layout"]),
    split: str | None = typer.Option(None, help=_SOURCE_OPTIONS["split"]),
    duplicates: str = typer.Option(
        "error",
        help="One key with different values (across files, tool versions or the store): "
        "error, latest (later run wins) or mean (flagged). Identical values are kept once.",
    ),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print the load report as JSON."),
    quiet: bool = typer.Option(
        False,
        "--quiet/--no-quiet",
        "-q",
        help="Only the rows line and what was not read as it stands (rows dropped, files "
        "skipped, notes); no load summary, next: hints or progress.",
    ),
) -> None:
    """Read result files into the store (all rows or none; re-ingesting is a no-op)."""
    from latentbench.io.formats import read_results
    from latentbench.io.store import Store

    refuse_memory_store(store, "the rows read")

    try:
        with warnings.catch_warnings(), progress_bar(as_json or quiet) as progress:
            # the notes are printed with the report below; no second copy on stderr
            warnings.simplefilter("ignore", DataWarning)
            frame, report = read_results(
                source,
                paths,
                benchmark=benchmark,
                metric=parse_choice(metric, "--metric"),
                filter=parse_choice(filter, "--filter"),
                model=model,
                include_perturbed=include_perturbed,
                errored=errored,
                duplicates=duplicates,
                layout=layout,
                split=split,
                group=group,
                progress=progress,
            )
            progress(f"writing {len(frame):,} rows to the store")
            with Store(store) as db:
                result = db.ingest(frame, report, duplicates=duplicates)
    except InputError as exc:
        _fail(exc)
    if as_json:
        console.print_json(
            json.dumps({"ingest": dict(result), "report": report.to_dict()}), ensure_ascii=True
        )
        return
    said = cli_spelling(str(report))  # the library's keywords (model=) as this command's flags
    if quiet:  # what was lost or changed is said under -q too, as other commands' warnings
        kept = ("  dropped ", "  skipped ", "  note: ")
        said = "\n".join(line for line in said.splitlines() if line.startswith(kept))
    if said:
        console.print(escape(said), highlight=False, soft_wrap=True)
    older = result.get("n_older", 0)
    console.print(
        f"[bold]{result['n_new']:,}[/bold] new rows in {escape(store)} "
        f"({result['n_present']:,} already present, {result['n_replaced']:,} replaced"
        + (f", {older:,} older than the stored row: not written" if older else "")
        + ")",
        highlight=False,
        soft_wrap=True,
    )
    if quiet:
        return
    names = sorted(str(name) for name in frame["benchmark"].unique()) if len(frame) else []
    for line in next_lines(store, names, grouped=group is not None or source == "table"):
        console.print(escape(line), highlight=False, soft_wrap=True)


def next_lines(store: Path, names: list[str], grouped: bool) -> list[str]:
    """What to run after an ingest of the benchmarks ``names`` into ``store`` (commands that
    work when pasted), and, unless the tasks were read as one (``grouped``), a note naming
    ``--group P`` where three or more tasks share the family ``P_*`` (lm-eval's 57
    ``mmlu_*``)."""
    import shlex

    where = shlex.quote(str(store))
    if not names:
        return []
    if len(names) == 1:
        return [
            f"next: latentbench fit --store {where} --benchmark {shlex.quote(names[0])} --out fit/"
        ]
    lines = []
    families: dict[str, list[str]] = {}
    for name in names:
        if "_" in name.strip("_"):
            families.setdefault(name.split("_")[0], []).append(name)
    for family, tasks in sorted(families.items()):
        if not grouped and len(tasks) >= 3:
            lines.append(
                f"note: the {len(tasks)} tasks {family}_* are stored as {len(tasks)} "
                f"benchmarks; if they are the parts of one benchmark (as lm-eval's mmlu_*), "
                f"ingest them again with --group {shlex.quote(family)} (into a new store) to "
                "read them as one, items TASK/ID"
            )
    lines.append(
        f"next: latentbench ls --store {where} lists the {len(names)} benchmarks; "
        f"latentbench fit --store {where} --benchmark NAME --out fit/ fits one"
    )
    return lines


@app.command(
    "ls",
    cls=Command,
    epilog=example(
        "latentbench ls --store results.duckdb",
        "latentbench ls --store results.duckdb --benchmark mmlu --json",
    ),
)
def ls(
    store: Path = typer.Option(..., "--store", help="DuckDB store file."),
    benchmark: str | None = typer.Option(None, help="Show per-model coverage of one benchmark."),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print JSON instead of a table."),
) -> None:
    """List benchmarks, models and coverage in the store."""
    from latentbench.io.store import Store

    try:
        if not store.exists():
            raise InputError(f"{store}: store not found")
        with Store(store, read_only=True) as db:
            frame = db.summary() if benchmark is None else db.coverage(benchmark)
            runs = db.selection_runs() if benchmark is None else []
    except StoreInUse as exc:  # a live run holds it: its last snapshot, if it wrote one
        _show_snapshot(store, exc, as_json)
        return
    except InputError as exc:
        _fail(exc)
    live = _live_runs(runs) if runs else None
    if as_json:
        # every digit (to_json rounded to 10 decimals); a missing value is null, not NaN
        records = [
            {k: None if isinstance(v, float) and v != v else v for k, v in row.items()}
            for row in frame.to_dict(orient="records")
        ]
        # a store with live runs: the list under "benchmarks", the runs beside it (they were
        # left out, and a store of live runs only listed as empty, [])
        data = records if live is None else {"benchmarks": records, "live_runs": live}
        console.print_json(data=data, ensure_ascii=True, allow_nan=False, default=str)
        return
    title = f"{store}" if benchmark is None else f"{benchmark} in {store}"
    table = Table(title=escape(title))
    for column in frame.columns:
        numeric = frame[column].dtype.kind in "iuf"
        table.add_column(escape(column), justify="right" if numeric else "left", overflow="fold")
    for row in frame.itertuples(index=False):
        table.add_row(*(f"{v:.3f}" if isinstance(v, float) else escape(v) for v in row))
    print_table(table)
    if live is not None:  # live runs are not benchmarks: said, so that a live store does not
        # look empty
        from latentbench._text import counted

        latest = live["latest"]
        compared = live["compare"]
        console.print(
            f"live runs: {counted(live['selection'], 'selection')} (select live), "
            f"{counted(live['estimate'], 'estimate')} (estimate --live)"
            + (f", {counted(compared, 'comparison')} (compare --live)" if compared else "")
            + "; latest "
            f"{escape(str(latest['run_id']))} ({escape(str(latest['status']))}"
            + (f": {latest['note']}" if "note" in latest else "")
            + f"). Their report: {live['report']}",
            soft_wrap=True,
        )


_RUNS_REPORT = (
    "latentbench report STORE (the latest run; its live estimates all together when it is "
    "one), --run-id RUN for one run"
)


_NOT_RUNNING = (
    "stored as running, but no process holds the store (a live run holds it until it stops): "
    "its last session was killed or crashed before it recorded how it ended; the same command "
    "resumes it"
)
"""What ``ls`` says of a latest run stored as ``running``: the store it opened is free."""


def _live_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """What ``ls`` says of a store's live runs (:meth:`Store.selection_runs` rows, oldest
    first), in its text and its ``--json`` alike: the count of each kind (``selection``:
    ``select live``, ``estimate``: ``estimate --live``, ``compare``: ``compare --live``), the
    latest run (``run_id``, ``kind``, ``status``, and a ``note`` when it is stored as
    ``running``, which no live run can be while ``ls`` reads its store) and how to report
    them."""
    from latentbench.select.live import is_compare_run, is_estimate_run

    kinds = [
        "estimate" if is_estimate_run(r) else "compare" if is_compare_run(r) else "selection"
        for r in runs
    ]
    latest = {
        "run_id": str(runs[-1]["run_id"]),
        "kind": kinds[-1],
        "status": str(runs[-1]["status"]),
    }
    if latest["status"] == "running":  # ls opened the store: no live run holds it
        latest["note"] = _NOT_RUNNING
    return {
        "selection": kinds.count("selection"),
        "estimate": kinds.count("estimate"),
        "compare": kinds.count("compare"),
        "latest": latest,
        "report": _RUNS_REPORT,
    }


def _show_snapshot(store: Path, exc: StoreInUse, as_json: bool) -> None:
    """``ls`` of a store a live run holds: the run's last progress snapshot (exit 0), or the
    refusal (exit 2) when it is not a live run or its snapshot is missing or stale."""
    from latentbench.io import read_snapshot, snapshot_path, snapshot_summary

    snapshot = read_snapshot(store, holder=exc.pid) if exc.live else None
    if snapshot is None or not snapshot["live"]:  # never a stale snapshot as the live run's
        _fail(exc)
        return
    note = (
        f"{store} is held by a live run (PID {exc.pid}); shown: its last progress snapshot "
        f"({snapshot_path(store).name}), not the store, which can be listed when the run ends"
    )
    if as_json:
        console.print_json(
            data={"live_snapshot": snapshot, "note": note},
            ensure_ascii=True,
            allow_nan=False,
            default=str,
        )
        return
    console.print(f"[yellow]{escape(note)}[/yellow]", soft_wrap=True)
    console.print(escape(snapshot_summary(snapshot)), highlight=False, soft_wrap=True)


@app.command(
    cls=Command,
    epilog=example(
        "latentbench export responses.parquet --store results.duckdb --benchmark mmlu",
        "latentbench export arc_test.csv --store results.duckdb --benchmark arc --split test",
    ),
)
def export(
    out: Path | None = typer.Argument(
        None,
        help="Output file (.parquet or .csv), or a folder for --format eee (or --out OUT).",
        show_default=False,
    ),
    out_option: Path | None = typer.Option(
        None, "--out", "-o", help="The same as OUT, spelled as the other commands spell it."
    ),
    store: Path = typer.Option(..., "--store", help="DuckDB store file."),
    benchmark: str | None = typer.Option(None, help="Only this benchmark."),
    metric: str | None = typer.Option(None, help="Only the rows of this metric."),
    filter: str | None = typer.Option(None, help="Only the rows of this filter."),
    split: str | None = typer.Option(
        None,
        help="Only the rows of this split (one matrix's rows, for `fit FILE`, where the "
        "benchmark holds several).",
    ),
    format: str = typer.Option(
        "table",
        "--format",
        help="table (.parquet/.csv, reads back with `ingest table`) or eee (Every Eval Ever "
        "0.3.0 aggregate + instance-level files, reads back with `ingest eee`).",
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Overwrite an existing OUT file, or write eee records into a folder that is not "
        "empty (refused otherwise).",
    ),
) -> None:
    """Write the canonical long table as a table file or as Every Eval Ever records."""
    from latentbench.io import check_destination
    from latentbench.io.formats import write_eee
    from latentbench.io.store import TABLE_SUFFIXES, Store

    try:
        if out is not None and out_option is not None:
            raise InputError(f"give OUT ({out}) or --out {out_option}, not both")
        out = out if out is not None else out_option
        if out is None:
            raise InputError(
                "give OUT (or --out OUT): the file to write (.parquet or .csv), or a folder "
                "for --format eee"
            )
        if format not in ("table", "eee"):
            raise InputError(f"--format {format!r}; expected table or eee")
        check_destination(out, "dir" if format == "eee" else "file", flag="OUT")
        if format == "table" and out.is_file() and not force:
            raise InputError(
                f"OUT {out} exists (it may be the file you ingested); pass --force to overwrite "
                "it, or another OUT"
            )
        if format == "eee" and out.suffix.lower() in (*TABLE_SUFFIXES, ".duckdb", ".db"):
            raise InputError(
                f"OUT {out}: --format eee writes a folder of records; expected a folder name "
                "(not a file name), or --format table for a table file"
            )
        if format == "eee" and out.is_dir() and any(out.iterdir()) and not force:
            raise InputError(
                f"OUT {out} is a folder that is not empty: records written there would mix "
                "with the ones it holds (and `ingest eee` would read them all back); pass "
                "--force to write into it anyway, or another OUT"
            )
        if not store.exists():
            raise InputError(f"{store}: store not found")
        with Store(store, read_only=True) as db:
            if format == "table":
                n = db.export(
                    out, benchmark=benchmark, metric=metric, filter=filter, split=split,
                    force=force,
                )  # fmt: skip
            else:  # an unknown benchmark (metric, filter, split): an error naming the others
                frame = db.long(benchmark, metric=metric, filter=filter, split=split)
                n = len(frame)
                files = write_eee(frame, out)
            # a store of live estimates only: their answers stay with their runs, said
            runs = db.selection_runs() if n == 0 and benchmark is None else []
    except InputError as exc:
        _fail(exc)
    except OSError as exc:  # unwritable folder, disk full
        _fail(InputError(f"{out}: cannot write ({exc.strerror or exc})"))
    if format == "eee":
        console.print(
            f"wrote {n:,} rows as {len(files):,} evaluations under {escape(as_given(out))}",
            highlight=False,
            soft_wrap=True,
        )
    else:
        console.print(
            f"wrote {n:,} rows to {escape(as_given(out))}", highlight=False, soft_wrap=True
        )
    if runs:
        err_console.print(
            f"note: {escape(str(store))} holds no responses, only {len(runs):,} live run(s) "
            f"(e.g. {escape(str(runs[0]['run_id']))}) whose answers stay with the run: "
            "`estimate --live` and `compare --live` never copy them into the responses (that "
            "would change the calibration's benchmark), `select live` copies them when its run "
            "ends; `latentbench report STORE` draws an estimate's items and answers, or a live "
            "comparison's result, and in Python "
            "Store(STORE).selection_observations(RUN_ID) returns them",
            soft_wrap=True,
        )
