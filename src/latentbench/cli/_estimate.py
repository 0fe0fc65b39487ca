"""``latentbench estimate`` and ``latentbench tiny``: a new model's score from a few items."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import typer

from latentbench._text import percent
from latentbench.cli import Command, app, as_given, example
from latentbench.cli._common import (
    benchmark_flag,
    clean_warnings,
    cli_spelling,
    console,
    err_console,
    escape,
    fail,
    live_detail,
    live_store_written,
    progress_bar,
    refuse_memory_store,
    say_stopping,
    stop_on_sigint,
    store_needs_benchmark,
    store_option_without_store,
)
from latentbench.exceptions import InputError

PROPOSALS = ("residual", "information", "uniform")
"""The item proposals of ``--proposal`` (``estimate``'s ``proposal``)."""
PROXIES = ("irt", "ridge")
"""The predictions of ``--proxy`` (``estimate``'s ``proxy``)."""

__all__ = ["compare_command", "estimate_command", "tiny_command"]


def _writable_dir(out: Path, files: tuple[str, ...]) -> None:
    """Fail before any work when ``out`` cannot receive the outputs ``files`` (a folder at
    one of their names is named). A folder that does not exist yet is not created here (the
    results create it), so that a command that fails leaves no empty ``--out`` folder behind:
    its nearest existing folder must be writable."""
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: exists and is not a directory; expected a directory to write into")
    if out.is_dir():
        from latentbench.io import check_destination

        try:
            check_destination(out, "dir", files=files)
        except InputError as exc:
            fail(exc)
    if not out.exists():
        above = next((p for p in out.absolute().parents if p.exists()), Path("/"))
        if not above.is_dir():
            fail(f"--out {out}: {above} is not a directory; expected a directory to write into")
        _probe_destination(out, "dir")  # os.access says yes to root, even in /proc
        return
    try:
        probe = out / ".latentbench-write-check"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        fail(f"--out {out}: cannot write there ({exc.strerror or exc})")


_ESTIMATE_FILES = ("estimates.csv", "estimate.json", "estimate_status.json")
"""What ``estimate --out DIR`` writes there (:meth:`latentbench.select.EstimateSet.save`)."""
_COMPARE_FILES = ("compare_items.csv", "compare.json")
"""What ``compare --out DIR`` writes there (:meth:`latentbench.select.CompareResult.save`)."""


def _mark_stale(out: Path, message: str, outcome: Any = None) -> None:
    """After a failed call (or one that estimated no model: ``outcome``, its empty
    :class:`~latentbench.select.EstimateSet`), an ``estimate.json`` already in ``--out`` is
    an earlier call's: record the failure in ``estimate_status.json`` beside it
    (``EstimateSet.read`` then reads the set as not complete) and say so, rather than leave
    it looking current."""
    from latentbench.select import EstimateSet

    if not (out / "estimate.json").is_file():
        return
    # the earlier call's own status (a partial call's) is kept: failures and not_estimated
    # describe the models of the estimate.json here; the last call's go under last_call (a
    # model estimated earlier and failed now is not both in one set)
    earlier: dict[str, Any] = {}
    try:
        loaded = json.loads((out / EstimateSet.STATUS_FILE).read_text(encoding="utf-8"))
        earlier = loaded if isinstance(loaded, dict) else {}
    except (OSError, ValueError):
        pass
    failures = {**dict(earlier.get("failures") or {}), "(the last call)": message}
    status = {
        "complete": False,
        "not_estimated": list(earlier.get("not_estimated") or []),
        "failures": failures,
        "last_call": {
            "message": message,
            "failures": {} if outcome is None else dict(outcome.failures),
            "not_estimated": [] if outcome is None else list(outcome.not_estimated),
        },
        "note": "estimate.json and estimates.csv here are from an earlier call; the last "
        "call failed and wrote nothing else (last_call)",
    }
    try:
        (out / EstimateSet.STATUS_FILE).write_text(json.dumps(status, indent=1), encoding="utf-8")
    except OSError:
        return
    err_console.print(
        escape(
            f"note: {out / 'estimate.json'} is from an earlier call (the failure is recorded "
            f"in {out / EstimateSet.STATUS_FILE})"
        ),
        soft_wrap=True,
    )


def _wrote_line(out: Path, names: tuple[str, ...]) -> str:
    """``wrote DIR/a, DIR/b``, saying which files it replaces (``--out DIR`` is reused on
    purpose, as ``fit``'s: never silently)."""
    line = "wrote " + ", ".join(as_given(out / n) for n in names)
    there = [n for n in names if (out / n).exists()]
    return line + (f" (replacing the earlier {', '.join(there)})" if there else "")


def _writable_file(out: Path) -> None:
    if out.exists() and out.is_dir():
        fail(f"--out {out}: is a directory; expected a file name such as items.csv")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.exists():
        fail(f"--out {out}: folder {parent} does not exist")
    _probe_destination(out, "file")


def _probe_destination(out: Path, kind: str) -> None:
    """Fail (exit 2) before any work when ``out`` (a folder or a file, by ``kind``) cannot
    be written: its nearest existing folder is probed by writing in it."""
    from latentbench.io import check_destination

    try:
        check_destination(out, kind)
    except InputError as exc:
        fail(exc)


def _claim_default_design(out: Path) -> Path:
    """``out`` (tiny's default ``./items.csv`` or ``./items-k.csv``) created empty now, or
    the next free name when another run created it since this one chose it (two runs started
    together in one folder each keep their own design). Creating a file exclusively is
    atomic, so two processes never claim the same name."""
    while True:
        try:
            os.close(os.open(out, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return out
        except FileExistsError:
            out, _ = _tiny_destination(None, False)


def _write_design(frame: Any, out: Path) -> None:
    """Write ``tiny``'s design to ``out`` (.parquet or CSV) whole or not at all: through a
    temporary file beside it, renamed over it (a symlink or a device is written in place); a
    write that fails is an error naming ``out`` (exit 2), and leaves no partial file."""

    from latentbench.io import csv_text

    def write(path: Path) -> None:
        if out.suffix.lower() == ".parquet":
            frame.to_parquet(path, index=False)
        else:  # an item id with a carriage return quoted: read back as one row
            path.write_bytes(csv_text(frame).encode("utf-8"))

    in_place = out.is_symlink() or (out.exists() and not out.is_file())
    target = out if in_place else out.with_name(f".{out.name}.tmp{os.getpid()}")
    try:
        write(target)
        if not in_place:
            os.replace(target, out)
    except OSError as exc:
        fail(f"--out {out}: cannot write it ({exc.strerror or exc})")
    finally:
        if not in_place:
            target.unlink(missing_ok=True)


@app.command(
    "estimate",
    cls=Command,
    epilog=example(
        "latentbench estimate fit/ new_model.parquet --budget 100 --seed 0 --out est/",
        "latentbench estimate calibration.parquet new.parquet --precision 0.02 --budget 2000",
        "latentbench estimate fit/ new.parquet --items items.csv --out est/",
        "latentbench estimate fit/ --live run.toml --store run.duckdb --precision 0.02",
        "latentbench estimate --store runs.duckdb --benchmark mmlu new.parquet --budget 100",
    ),
)
def estimate_command(
    ctx: typer.Context,
    calibration: Path | None = typer.Argument(
        None,
        help="Fit directory (latentbench fit --out) or response-matrix file; with --benchmark, "
        "the new model's results.",
    ),
    responses: Path | None = typer.Argument(
        None,
        help="The new model's results (long or wide file, or a tool's results with --source); "
        "only asked items are read.",
    ),
    source: str = typer.Option(
        "table",
        help="What wrote RESPONSES: table (a CSV/Parquet file), or a tool, read as `latentbench "
        "ingest SOURCE` reads it (lm-eval, lighteval, helm, inspect, opencompass, eee; a file "
        "or folder of one benchmark's results).",
    ),
    group: str | None = typer.Option(
        None,
        help="With --source: read the tool's tasks as one benchmark of this name, items "
        "TASK/ID, as `latentbench ingest --group` did for the calibration.",
    ),
    duplicates: str | None = typer.Option(
        None,
        help="With --source: an answer scored differently by two runs in RESPONSES: error "
        "(default), latest (later run wins) or mean, as `latentbench ingest` takes it.",
    ),
    budget: int | None = typer.Option(
        100,
        help="Most items to evaluate (per model; with --precision and no --budget, as many "
        "as it takes); without --precision the interval is sized for the end of the budget "
        "(narrowest there).",
    ),
    precision: float | None = typer.Option(
        None,
        help="Stop when the score interval's half-width is at most this; the interval is "
        "then sized to reach it (narrower there, wider before; a live run keeps its first "
        "session's precision for that).",
    ),
    delta: float = typer.Option(
        0.05,
        help="Error probability of the anytime-valid interval (it holds the score at every "
        "step with probability >= 1 - delta; estimate.json's level is 1 - delta).",
    ),
    seed: int = typer.Option(0, help="Seed; a model's draws depend on it and its name only."),
    model: str | None = typer.Option(None, help="Estimate only this model of RESPONSES."),
    label: str | None = typer.Option(
        None,
        help="The model's name in the outputs instead of the one RESPONSES gives it (its "
        "file's stem or model column): it is the model's name, so its draws follow it. One "
        "model only (with --model when RESPONSES holds several); not with --live (the "
        "configuration's model id names it there).",
        show_default=False,
    ),
    items: Path | None = typer.Option(
        None,
        help="A fixed design from `latentbench tiny` (.csv or .parquet): the model answered "
        "these items (the draw is replayed: an edited item is refused).",
    ),
    weights: Path | None = typer.Option(
        None,
        "--weights",
        help="Estimate a weighted score: a CSV/Parquet file with columns item and weight "
        "(any scale) or group (macro: each group weighs the same), listing every calibrated "
        "item once (weight 0 leaves one out). With --items, the design must be drawn for "
        "the same weights (tiny --weights).",
    ),
    proposal: str = typer.Option(
        "residual", help="Design: residual (predicted sd), information or uniform."
    ),
    floor: float = typer.Option(
        0.5, help="Uniform share of the design, in (0, 1] (--proposal uniform has no use for it)."
    ),
    proxy: str = typer.Option(
        "irt",
        help="Predictions: irt (the IRT model alone) or ridge (IRT corrected from the "
        "calibration responses). Either keeps the interval valid.",
    ),
    rank: int = typer.Option(1, help="Rank of the fit when CALIBRATION is a matrix file."),
    live: Path | None = typer.Option(
        None, "--live", help="A `select live` configuration: ask its endpoint (no RESPONSES)."
    ),
    store: Path | None = typer.Option(
        None,
        "--store",
        help="With --benchmark: calibrate on its benchmark. With --live: the durable store "
        "(re-run to resume).",
    ),
    benchmark: str | None = typer.Option(
        None, help="Calibrate on this benchmark of --store (instead of CALIBRATION)."
    ),
    metric: str | None = typer.Option(
        None,
        help="With --benchmark: its metric, when the store holds several; with --source: the "
        "metric read from the tool's results (NAME or TASK=NAME, as ingest takes it).",
    ),
    filter: str | None = typer.Option(
        None,
        help="With --benchmark: its filter, when the store holds several; with --source: the "
        "filter read from the tool's results (NAME or TASK=NAME, as ingest takes it).",
    ),
    split: str | None = typer.Option(
        None,
        help="With --benchmark: its split, when it has several (default: test, warned); with "
        "--source helm: the split read.",
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="Write estimate.json and estimates.csv into this directory (and "
        "estimate_status.json when some model was not estimated).",
    ),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print the result as JSON."),
    quiet: bool = typer.Option(
        False,
        "--quiet/--no-quiet",
        "-q",
        help="Only the result lines and the files written (no progress or interval legend).",
    ),
) -> None:
    """Estimate a new model's full-benchmark score from a few adaptively chosen items.

    Prints e.g. "score 0.612 [0.597, 0.627] after 140 of 12,032 items; would rank 7th (5th–9th) of 29".

    The interval is anytime-valid at 1 - delta whatever the calibration's quality; rank and theta restate it against the calibration models (docs/estimate.md).
    """  # noqa: E501

    if out is not None:
        _writable_dir(out, _ESTIMATE_FILES)
    choice = {"metric": metric, "filter": filter, "split": split}
    if group is not None and source == "table":
        fail("--group reads a tool's tasks as one benchmark: give --source TOOL")
    if duplicates is not None and source == "table":
        fail("--duplicates reads a tool's results: give --source TOOL")
    if live is not None:
        refuse_memory_store(store, "every answer paid for (and the run a re-run resumes)")
    if label is not None and live is not None:
        fail(
            f"--label {label} with --live {live}: a live run names its model by the "
            "configuration's [[models]] name (its answers in the store, the run resumed and "
            "the answers reused are keyed by it, and the items drawn follow it as a label's "
            "do); expected no --label: give that name in [[models]] before the run starts (a "
            "name changed afterwards starts a new run that draws other items and pays for its "
            "answers again)"
        )
    calibration, responses = _sources(
        calibration, responses, live, store, benchmark, choice, source
    )
    given = _given(ctx, ("budget", "seed", "floor", "proposal"))
    _check_design(items, live, precision, proposal, proxy, given=given)
    if precision is not None and "budget" not in given:  # until the precision is reached
        budget = None
    proposal_kind: Any = proposal  # one of PROPOSALS (checked above)
    proxy_kind: Any = proxy
    with clean_warnings():
        outcome = _estimate_or_fail(
            out,
            calibration,
            responses,
            live=live,
            store=store,
            benchmark=benchmark,
            choice=choice,
            source=source,
            group=group,
            duplicates=duplicates,
            model=model,
            label=label,
            budget=budget,
            precision=precision,
            delta=delta,
            seed=seed,
            items=items,
            proposal=proposal_kind,
            rank=rank,
            proxy=proxy_kind,
            quiet=quiet,
            weights=weights,
            # given only: the default's own object tells a floor the uniform proposal does
            # not use (warned) from none
            **({"floor": floor} if "floor" in given else {}),
        )
    wrote = _save_estimates(out, outcome)
    if as_json:
        typer.echo(json.dumps(outcome.to_dict(), indent=2))
    else:
        for line in outcome.summary().splitlines():
            console.print(escape(line), soft_wrap=True)
        legend = None if quiet else interval_legend(outcome.results)
        if legend:
            console.print(escape(legend), soft_wrap=True)
    if wrote is not None:
        (err_console if as_json else console).print(escape(wrote), soft_wrap=True)
    _exit_live(outcome, live)
    _exit_estimate(outcome)


def tool_choice(choice: dict[str, str | None]) -> dict[str, Any]:
    """``--metric`` / ``--filter`` / ``--split`` as a tool's results are read with them: a
    ``TASK=NAME`` metric or filter is a choice for that task, as ``latentbench ingest`` takes
    it (and as the reader's own error advises), not a name with an ``=`` in it."""
    from latentbench.cli._ingest import parse_choice

    read: dict[str, Any] = dict(choice)
    for key in ("metric", "filter"):
        value = choice.get(key)
        read[key] = None if value is None else parse_choice([value], f"--{key}")
    return read


def _level(level: float) -> str:
    """``0.95`` as ``95%``, ``0.975`` as ``97.5%``, never ``100%`` below 1 (:func:`percent`)."""
    return percent(level)


def _delta(result: Any) -> str:
    """The ``--delta`` a result was made with, as given (its options), for the legend:
    ``1 - level`` printed ``0`` for a delta under 1e-16, where the level rounds to 1."""
    delta = result.options.get("delta")
    if not isinstance(delta, float | int) or isinstance(delta, bool) or not 0 < delta < 1:
        delta = 1 - result.level  # a record without it
    return f"{delta:g}"


def interval_legend(results: Any) -> str | None:
    """What the bracket of the estimate lines is (their level and guarantee), or None when
    every score is exact (every item answered)."""
    shown = [r for r in results if r.lower != r.upper]
    if not shown:
        return None
    levels = sorted({_level(r.level) for r in shown})
    subset = any(r.answered_subset for r in shown)  # items of weight 0 are none of the score's
    what = "of the score on the items answered" if subset else "of the full-benchmark score"
    # --weights: the weighted score (unless all equal: the plain mean)
    records = [r.options.get("weights") for r in shown]
    if any(w and not w.get("equal") for w in records):
        what = what.replace("of the ", "of the weighted ", 1)
    return (
        f"[ ]: the {'/'.join(levels)} interval {what}, valid at every step whether or not "
        f"the IRT model fits (--delta {_delta(shown[0])}); the rank's range follows from it"
    )


def _given(ctx: typer.Context, names: tuple[str, ...]) -> set[str]:
    """The options among ``names`` given on the command line (not left at their default)."""
    return {
        name
        for name in names
        if getattr(ctx.get_parameter_source(name), "name", "") not in ("DEFAULT", "DEFAULT_MAP")
    }


def _estimate_or_fail(out: Path | None, *args: Any, **kwargs: Any) -> Any:
    """:func:`_estimate` of ``args`` and ``kwargs``; on an :class:`InputError`, an earlier
    ``estimate.json`` in ``out`` is marked stale and the command fails (exit 2)."""
    try:
        return _estimate(*args, **kwargs)
    except InputError as exc:
        if out is not None:
            _mark_stale(out, cli_spelling(str(exc)))
        fail(exc)


def _save_estimates(out: Path | None, outcome: Any) -> str | None:
    """Save ``outcome`` (an :class:`~latentbench.select.EstimateSet`) into ``out``, returning
    the ``wrote ...`` line (None when nothing was written); a call that estimated no model
    marks an earlier ``estimate.json`` there stale instead."""
    if out is None:
        return None
    if len(outcome):
        names = ("estimate.json", "estimates.csv")
        wrote = _wrote_line(out, names if outcome.complete else (*names, outcome.STATUS_FILE))
        try:
            outcome.save(out)
        except InputError as exc:  # a disk that filled since the check: said, exit 2
            fail(exc)
        return wrote
    if not outcome.complete:  # no model estimated: nothing written, and an earlier
        # call's estimate.json there must not look like this one's
        missed = len(outcome.failures) + len(outcome.not_estimated)
        _mark_stale(out, f"no model estimated ({missed:,} not estimated)", outcome)
    return None


def _exit_live(outcome: Any, live: Path | None) -> None:
    """Exit as ``select live`` does when a live run stopped early (interrupted 130, capped 3,
    failed 1, waiting 4: an lm-eval plan to run), saying how to resume; return otherwise."""
    _exit_stopped(outcome[0].stopped if live is not None and len(outcome) else None)


def _exit_stopped(stopped: str | None) -> None:
    """Exit as :func:`_exit_live` does for a live result that ``stopped`` early; return
    otherwise."""
    codes = {"interrupted": 130, "capped": 3, "failed": 1, "waiting": 4}
    if stopped in codes:  # the exit status of select live's
        first = {"capped": " (raise [run] spend_cap first)", "waiting": " (run the plan first)"}
        err_console.print(
            f"live run {stopped}: the interval printed is valid (anytime); the stored answers are "
            "kept: re-run the same command to resume" + escape(first.get(stopped, "")),
            soft_wrap=True,
        )
        raise typer.Exit(codes[stopped])


def _exit_estimate(outcome: Any) -> None:
    """Say what was not estimated: exit 2 when a model failed, 130 when Ctrl-C stopped the
    call; return when every model was estimated."""
    if outcome.not_estimated:
        err_console.print(
            "interrupted (Ctrl-C): the estimates above are complete; re-run the command for "
            "the rest (every model's estimate is the same again), or --model NAME for one",
            soft_wrap=True,
        )
    if outcome.failures:
        for name, message in outcome.failures.items():
            line = f"model {name!r} not estimated: {cli_spelling(message)}"
            err_console.print(f"[red]error:[/red] {escape(line)}", soft_wrap=True)
        raise typer.Exit(2)
    if outcome.not_estimated:
        raise typer.Exit(130)


def _estimate(
    calibration: Path | None,
    responses: Path | None,
    *,
    live: Path | None,
    store: Path | None,
    benchmark: str | None,
    choice: dict[str, str | None],
    source: str,
    group: str | None,
    model: str | None,
    rank: int,
    duplicates: str | None = None,
    quiet: bool = False,
    **options: Any,
) -> Any:
    """The :class:`~latentbench.select.EstimateSet` of a checked ``estimate`` command line."""
    from latentbench.select import (
        EstimateSet,
        estimate_live,
        estimate_many,
        read_responses,
    )

    cal = _calibration(calibration, store, benchmark, choice, rank)
    if live is not None and store is not None:  # --live without --store: refused before
        options.pop("items")  # refused with --live before
        options.pop("label")  # refused with --live before
        with (
            live_store_written(store),
            progress_bar(quiet, detail=live_detail(store)) as progress,
            stop_on_sigint(say_stopping("item")) as stop,
        ):
            one = estimate_live(cal, live, store, model=model, rank=rank, stop_event=stop,
                                progress=progress, **options)  # fmt: skip
        return EstimateSet((one,), single=True)
    if options["items"] is not None:  # a fixed design: its own size, seed, floor (checked)
        del options["budget"], options["seed"], options["proposal"]
        options.pop("floor", None)  # passed only when given (refused with --items)
    answers: Any = responses
    if source != "table" and responses is not None:  # a tool's results, read as ingest does
        answers = read_responses(
            responses, source=source, group=group, duplicates=duplicates, **tool_choice(choice)
        )
    models = [model] if model is not None else None
    # a file of many models takes a while: say how far, and keep the finished ones on Ctrl-C
    with progress_bar(quiet) as progress, stop_on_sigint(say_stopping("model")) as stop:
        return estimate_many(
            cal,
            answers,
            models=models,
            errors="collect",
            rank=rank,
            progress=progress,
            stop_event=stop,
            **options,
        )


def _sources(
    calibration: Path | None,
    responses: Path | None,
    live: Path | None,
    store: Path | None,
    benchmark: str | None,
    choice: dict[str, str | None],
    source: str = "table",
) -> tuple[Path | None, Path | None]:
    """``(calibration, responses)`` of the command line, or a clear error (exit 2)."""
    _check_source(source, live)
    if store_calibration(
        store,
        benchmark,
        choice,
        source=source,
        live=live,
        alternative="(calibrate on that benchmark) or --live RUN.toml (a live estimate's)",
    ):
        if responses is not None:
            fail(
                "with --store/--benchmark the calibration comes from the store: give only the "
                f"new model's results (got {calibration} and {responses})"
            )
        responses, calibration = calibration, None
    elif calibration is None:
        fail("give CALIBRATION (a fit directory or response-matrix file), or --store --benchmark")
    else:
        _refuse_missing(calibration)
    if (live is None) == (responses is None):
        fail("give either RESPONSES (a results file) or --live RUN.toml --store RUN.duckdb")
    if live is not None and store is None:
        fail("--live needs --store RUN.duckdb (every answer is stored there first)")
    if source == "table" and responses is not None:
        _refuse_tool_results(responses, "RESPONSES")
    return calibration, responses


def store_calibration(
    store: Path | None,
    benchmark: str | None,
    choice: dict[str, str | None],
    *,
    source: str | None = "table",
    live: Path | None = None,
    alternative: str = "(the benchmark to calibrate on)",
) -> bool:
    """Whether the calibration of ``estimate``, ``tiny`` or ``compare`` is a store benchmark
    (``--store STORE --benchmark NAME``, with ``choice``: ``--metric`` / ``--filter`` /
    ``--split``); the options that cannot go together fail (exit 2) naming the flag.

    ``source`` is the command's ``--source`` (None: it has none), whose tool reads
    ``--metric`` / ``--filter`` / ``--split`` too; ``live``: estimate's ``--live``, whose
    store is the run's; ``alternative``: what the ``--store`` without ``--benchmark`` error
    offers."""
    if benchmark is not None:
        if store is None:
            fail(store_option_without_store("--benchmark"))
        return True
    if source in ("table", None) and any(value is not None for value in choice.values()):
        given = [f"--{name}" for name, value in choice.items() if value is not None]
        verb = "applies" if len(given) == 1 else "apply"
        tool = "" if source is None else ", or with --source TOOL (the tool's results to read)"
        fail(f"{' and '.join(given)} {verb} only with --store STORE --benchmark NAME{tool}")
    if store is not None and live is None:
        fail(store_needs_benchmark(store, alternative))
    return False


def _calibration(
    calibration: Path | None,
    store: Path | None,
    benchmark: str | None,
    choice: dict[str, str | None],
    rank: int,
) -> Any:
    """The calibration of a checked command line (:func:`store_calibration`): CALIBRATION
    as given, or the store benchmark's :class:`~latentbench.select.Calibration` (fitted at
    ``rank``, cached on its cells); raises :class:`InputError` (an unknown benchmark, ...)."""
    if benchmark is None or store is None:
        return calibration
    from latentbench.select import load_calibration

    try:
        return load_calibration(
            store,
            benchmark=benchmark,
            rank=rank,
            metric=_store_choice(choice["metric"], "--metric", benchmark),
            filter=_store_choice(choice["filter"], "--filter", benchmark),
            split=choice["split"],
        )
    except InputError as exc:
        raise benchmark_flag(exc, benchmark) from None


def _store_choice(value: str | None, flag: str, benchmark: str) -> str | None:
    """A ``--metric`` / ``--filter`` as the store benchmark's choice: ``NAME``, or ``TASK=NAME``
    (as the same option chooses for a tool's results, :func:`tool_choice`) when ``TASK`` is
    the benchmark; a ``TASK=NAME`` for another task is refused (it chose nothing here)."""
    from latentbench.cli._ingest import parse_choice

    parsed = parse_choice([value], flag) if value is not None else None
    if not isinstance(parsed, dict):
        return parsed
    name = parsed.get(benchmark, parsed.get("*"))
    if name is None:
        raise InputError(
            f"{flag} {value}: a choice for task {next(iter(parsed))!r}, and the calibration is "
            f"the store's benchmark {benchmark!r}; expected {flag} NAME or "
            f"{flag} {benchmark}=NAME"
        )
    return name


def _calibration_words(
    calibration: Path | None,
    store: Path | None,
    benchmark: str | None,
    choice: dict[str, str | None],
) -> str:
    """The calibration as a command line gives it (quoted to paste): ``fit/`` or ``--store
    runs.duckdb --benchmark mmlu`` with its ``--metric`` / ``--filter`` / ``--split``."""
    if benchmark is None or store is None:
        return shlex.quote(str(calibration))
    words = ["--store", str(store), "--benchmark", benchmark]
    for name, value in choice.items():
        words += [] if value is None else [f"--{name}", value]
    return " ".join(shlex.quote(word) for word in words)


def _tools() -> list[str]:
    """The tools ``--source`` reads (every ingest source but ``table``)."""
    from latentbench.io.formats import SOURCES

    return [name for name in SOURCES if name != "table"]


def _check_source(source: str, live: Path | None) -> None:
    """``--source``: ``table`` or a registered tool, and not with ``--live``."""
    if source != "table" and source not in _tools():
        fail(f"--source {source!r}: expected table or one of {', '.join(_tools())}")
    if source != "table" and live is not None:
        fail("--source reads a results file; with --live the endpoint answers (no RESPONSES)")


TOOL_SUFFIXES = (".json", ".jsonl", ".eval")
"""Suffixes of the tools' result files (lm-eval, HELM, Inspect, OpenCompass, EEE), never a
table's: a RESPONSES path with one of them (or a folder) names ``--source``."""


def _refuse_tool_results(path: Path, name: str) -> None:
    """A folder or a tool's result file given as a table: fail naming ``--source``."""
    suffix = path.suffix.lower()
    packed = suffix in (".gz", ".bz2", ".xz", ".zst")  # samples_x.jsonl.gz: a .jsonl file
    inner = Path(path.stem).suffix.lower() if packed else suffix
    if path.is_dir() or inner in TOOL_SUFFIXES:
        what = "a folder" if path.is_dir() else f"a {inner} file{' (compressed)' * packed}"
        fail(
            f"{name} {path}: {what}, not a results table (.csv or .parquet); a tool's results? "
            f"give --source TOOL ({', '.join(_tools())}), which reads them as `latentbench "
            "ingest TOOL` does"
        )


def _check_design(
    items: Path | None,
    live: Path | None,
    precision: float | None,
    proposal: str,
    proxy: str,
    *,
    given: set[str],
) -> None:
    """Refuse the design options that cannot go together (exit 2); ``given`` holds the
    options among ``budget``, ``seed``, ``floor`` and ``proposal`` given on the command
    line."""
    if items is not None and "budget" in given:
        fail(
            f"--budget with --items {items}: a fixed design scores every one of its items; "
            "make a smaller design (latentbench tiny --k), or drop --items to run adaptively"
        )
    if items is not None and "seed" in given:
        fail(
            f"--seed with --items {items}: the design's items were drawn by latentbench tiny "
            "with its own seed (the file's seed column); drop --seed, or make another design "
            "(latentbench tiny --seed)"
        )
    for name in ("floor", "proposal"):  # as compare --items refuses --floor
        if items is not None and name in given:
            fail(
                f"--{name} with --items {items}: a fixed design's items were drawn by "
                "latentbench tiny with its own probabilities (its floor in the file's columns); "
                f"drop --{name}, or drop --items to run adaptively"
            )
    if items is not None and live is not None:
        fail(
            f"--items {items} with --live: a live run chooses its items as it goes; score a "
            "fixed design by running the model on those items and giving its results file"
        )
    if items is not None and precision is not None:
        fail(
            f"--precision with --items {items}: a fixed design scores every one of its items "
            "and cannot stop at a precision; drop --precision, or drop --items to run adaptively"
        )
    if proposal not in PROPOSALS:
        fail(f"--proposal {proposal!r}: expected one of {', '.join(PROPOSALS)}")
    if proxy not in PROXIES:
        fail(f"--proxy {proxy!r}: expected one of {', '.join(PROXIES)}")


def _refuse_missing(calibration: Path) -> None:
    """A CALIBRATION that does not exist is said first, before the results files are read
    (``compare cal a`` with neither file named ``a``, the second argument)."""
    if not calibration.exists() and calibration.is_symlink():
        fail(
            f"calibration {calibration}: a symbolic link to {os.readlink(calibration)}, which "
            "does not exist; expected a fit directory or a response-matrix file"
        )
    if not calibration.exists():
        fail(
            f"calibration {calibration}: no such file or directory; expected a fit directory or "
            "a response-matrix file"
        )


def _refuse_store(calibration: Path, command: str) -> None:
    """A store given as ``tiny`` / ``compare``'s CALIBRATION (a fit directory or a matrix
    file) is pointed to ``--store STORE --benchmark NAME`` (exit 2)."""
    if calibration.suffix.lower() in (".duckdb", ".db"):
        fail(
            f"CALIBRATION {calibration} is a store; {command} takes a fit directory or a "
            f"response-matrix file, or calibrates on a benchmark of a store with --store "
            f"{calibration} --benchmark NAME (`latentbench ls --store {calibration}` lists them)"
            + (
                " (and score with the same calibration: a design records it)"
                if command == "tiny"
                else ""
            )
        )


@app.command(
    "tiny",
    cls=Command,
    epilog=example(
        "latentbench tiny fit/ --k 100 --out items.csv",
        "latentbench tiny --store runs.duckdb --benchmark mmlu --k 100 --out items.csv",
    ),
)
def tiny_command(
    calibration: Path | None = typer.Argument(
        None,
        help="Fit directory (latentbench fit --out) or response-matrix file; or --store STORE "
        "--benchmark NAME.",
        show_default=False,
    ),
    store: Path | None = typer.Option(
        None, "--store", help="Calibrate on a benchmark of this DuckDB store, with --benchmark."
    ),
    benchmark: str | None = typer.Option(
        None, help="Calibrate on this benchmark of --store (instead of CALIBRATION)."
    ),
    metric: str | None = typer.Option(
        None, help="With --benchmark: its metric, when the store holds several."
    ),
    filter: str | None = typer.Option(
        None, help="With --benchmark: its filter, when the store holds several."
    ),
    split: str | None = typer.Option(
        None, help="With --benchmark: its split, when it has several (default: test, warned)."
    ),
    k: int | None = typer.Option(
        None,
        "--k",
        help="Number of items (default 100; or choose it with --precision).",
        show_default=False,
    ),
    precision: float | None = typer.Option(
        None,
        "--precision",
        help="Choose k: the fewest items whose interval half-width, median over the "
        "calibration models' own answers replayed on the design (in-sample), is at most this "
        "(with --weights: the weighted score's; a fit directory needs --responses).",
        show_default=False,
    ),
    delta: float | None = typer.Option(
        None,
        "--delta",
        help="Error probability of the interval --precision is predicted for (estimate --delta; "
        "default 0.05; estimate --items at another --delta warns).",
        show_default=False,
    ),
    responses: Path | None = typer.Option(
        None,
        "--responses",
        help="With --precision on a fit directory (which keeps no answers): the response-matrix "
        "file the fit was made from, whose calibration models' answers are replayed.",
        show_default=False,
    ),
    seed: int = typer.Option(0, help="Seed of the draw."),
    floor: float = typer.Option(
        0.5,
        help="Uniform share of the design, in (0, 1]; 1 draws uniform items (narrower "
        "intervals, a larger error at 30 items: docs/estimate.md).",
    ),
    rank: int = typer.Option(1, help="Rank of the fit when CALIBRATION is a matrix file."),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="File to write: .csv (the default ./items.csv, or ./items-2.csv, -3, ... when "
        "that exists) or .parquet; - prints the CSV. An existing --out file (a design someone "
        "may have run) is refused unless --force.",
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --out file."),
    weights: Path | None = typer.Option(
        None,
        "--weights",
        help="Draw for a weighted score: a CSV/Parquet file with columns item and weight (any "
        "scale) or group (macro: each group weighs the same), every calibrated item once; "
        "items of weight 0 are never drawn. estimate --items then needs the same --weights.",
    ),
    samples_out: Path | None = typer.Option(
        None,
        "--lm-eval-samples",
        # \\[: rich took "[doc ids]" for markup and printed "({task: }, sorted)"
        help="Also write the items as lm-eval's --samples JSON ({task: \\[doc ids]}, doc ids "
        "sorted) to this .json file.",
    ),
    task: str | None = typer.Option(
        None,
        help="With --lm-eval-samples: the lm-eval task of a benchmark whose item ids are doc "
        "ids (default: the calibration's benchmark name); unset for TASK/ID ids (--group).",
    ),
) -> None:
    """Choose k items to pre-register, with their design probabilities.

    Run the model on exactly these items (e.g. lm-eval --samples, written by
    --lm-eval-samples), then score it with `latentbench estimate CALIBRATION RESULTS --items
    items.csv` (--source lm-eval for lm-eval's logs), CALIBRATION being the one given here
    (with --store --benchmark: the same options).
    """
    from latentbench.select import check_tiny_options, lm_eval_samples, load_calibration, tiny

    choice = {"metric": metric, "filter": filter, "split": split}
    if store_calibration(store, benchmark, choice, source=None):
        if calibration is not None:
            fail(
                f"give CALIBRATION ({calibration}) or --store {store} --benchmark {benchmark}, "
                "not both"
            )
    elif calibration is None:
        fail("give CALIBRATION (a fit directory or response-matrix file), or --store --benchmark")

    if k is not None and precision is not None:
        fail(f"give --k {k} or --precision {precision:g}, not both (--precision chooses k)")
    if delta is not None and precision is None:
        fail(
            f"--delta {delta:g} without --precision: it is the level the precision is "
            "predicted at; estimate --delta sets the interval's own"
        )
    if responses is not None and precision is None:
        fail(
            f"--responses {responses} without --precision: the responses are replayed to "
            "choose k for a precision; give --precision H, or drop --responses"
        )
    if responses is not None and store is not None:
        fail(
            f"--responses {responses} with --store {store}: the store benchmark's own matrix "
            "is replayed; give one"
        )
    if responses is not None and not responses.is_file():
        state = "is a folder" if responses.is_dir() else "no such file"
        fail(
            f"--responses {responses}: {state}; expected the response-matrix file the fit "
            "was made from (Parquet or CSV)"
        )
    try:  # wrong whatever the data: said before --out (it may exist) and the calibration
        given_k = {} if k is None else {"k": k}  # no --k: tiny's default
        check_tiny_options(**given_k, precision=precision, delta=delta, floor=floor, rank=rank,
                           seed=seed)  # fmt: skip
    except InputError as exc:
        fail(exc)
    defaulted = out is None
    out, to_stdout = _tiny_destination(out, force)
    _check_tiny_files(calibration, None if to_stdout else out, samples_out, task, force)
    samples = None
    with clean_warnings():
        try:
            given_cal = _calibration(calibration, store, benchmark, choice, rank)
            cal = load_calibration(given_cal, rank=rank)
            answers: Any = responses
            if precision is not None and store is not None and benchmark is not None:
                answers = _store_responses(store, benchmark, choice)
            if precision is None:  # --k, or tiny's own default
                sized = (cal,) if k is None else (cal, k)
                frame = tiny(*sized, seed=seed, floor=floor, rank=rank, weights=weights)
            else:
                frame = tiny(
                    given_cal,
                    precision=precision,
                    delta=delta,
                    responses=answers,
                    seed=seed,
                    floor=floor,
                    rank=rank,
                    weights=weights,
                )
            if samples_out is not None:
                samples = lm_eval_samples(frame, task=_samples_task(task, frame, cal))
        except InputError as exc:
            fail(exc)
    noun = "item" if len(frame) == 1 else "items"
    if precision is not None:
        (err_console if to_stdout else console).print(_sized_line(frame), soft_wrap=True)
    if samples is not None and samples_out is not None:
        design = "ITEMS.csv" if to_stdout else str(out)
        grouped = task is None and not all(str(item).isdigit() for item in frame["item"])
        group = (cal.labels.get("benchmark") or "NAME") if grouped else None
        given = _calibration_words(calibration, store, benchmark, choice)
        _write_samples(samples, samples_out, design, given, group)
    if to_stdout:
        from latentbench.io import csv_text

        typer.echo(csv_text(frame), nl=False)
        err_console.print(f"wrote {len(frame):,} {noun} to standard output", soft_wrap=True)
        return
    if defaulted:  # another run may have taken ./items.csv since: never write over it
        out = _claim_default_design(out)
    try:
        _write_design(frame, out)
    except typer.Exit:
        if defaulted:  # the empty file claimed above: not left behind
            out.unlink(missing_ok=True)
        raise
    console.print(f"wrote {len(frame):,} {noun} to {escape(as_given(out))}", soft_wrap=True)


def _sized_line(frame: Any) -> str:
    """The line ``tiny --precision`` prints: the k chosen and the half-widths predicted."""
    row = frame.iloc[0]
    return (
        f"k = {len(frame):,} items for a predicted half-width of "
        f"{row['predicted_half_width']:.3f} (median over the {int(row['predicted_models'])} "
        f"calibration models; 90th percentile {row['predicted_half_width_p90']:.3f}; at delta "
        f"{row['delta']:g}; in-sample: a new model unlike them may need more)"
    )


def _store_responses(store: Path, benchmark: str, choice: dict[str, str | None]) -> Any:
    """The store benchmark's response matrix (the calibration models' answers that
    ``tiny --precision`` replays)."""
    from latentbench.io import Store

    with Store(store, read_only=True) as db:
        return db.matrix(
            benchmark,
            metric=_store_choice(choice["metric"], "--metric", benchmark),
            filter=_store_choice(choice["filter"], "--filter", benchmark),
            split=choice["split"],
        )


def _tiny_destination(out: Path | None, force: bool) -> tuple[Path, bool]:
    """``tiny``'s ``--out`` and whether it is standard output (``-``): None is ./items.csv,
    or ./items-2.csv, -3, ... when that exists; another file must end in .csv or .parquet and
    not exist unless ``--force``."""
    if out is None:
        out, k_free = Path("items.csv"), 2
        while out.exists():
            out, k_free = Path(f"items-{k_free}.csv"), k_free + 1
        return out, False
    if str(out) == "-":
        return out, True
    if out.suffix.lower() not in (".csv", ".parquet"):
        fail(
            f"--out {out}: expected a file name ending in .csv (the design as tiny's CSV) or "
            ".parquet, or - for the CSV on standard output"
        )
    if out.is_file() and not force:
        fail(
            f"--out {out} exists (a design that may have been run); pass --force to overwrite "
            "it, or another --out FILE"
        )
    return out, False


def _check_tiny_files(
    calibration: Path | None,
    out: Path | None,
    samples_out: Path | None,
    task: str | None,
    force: bool,
) -> None:
    """Refuse, before the calibration is read, a CALIBRATION that is a store, an ``out``
    (None: standard output) or ``--lm-eval-samples`` file that would overwrite the
    calibration or cannot be written, and ``--task`` without ``--lm-eval-samples``."""
    if calibration is not None:
        _refuse_store(calibration, "tiny")
    if out is not None:
        if calibration is not None:
            _refuse_calibration_file(out, calibration, "--out")
        _writable_file(out)
    if samples_out is not None:
        if calibration is not None:
            _refuse_calibration_file(samples_out, calibration, "--lm-eval-samples")
        _check_samples_out(samples_out, force)
    elif task is not None:
        fail("--task names the lm-eval task of --lm-eval-samples FILE: give that too")


def _write_samples(
    samples: dict[str, list[int]],
    path: Path,
    design: str,
    calibration: str,
    group: str | None,
) -> None:
    """Write lm-eval's ``--samples`` JSON and say (on stderr) how to run and score it: the
    estimate command names the calibration given to ``tiny`` (``calibration``: its words,
    quoted) and, for a group's ``TASK/ID`` items, the ``--group`` that reads the logs with
    those ids."""
    path.write_text(json.dumps(samples, indent=1) + "\n")
    grouped = f" --group {shlex.quote(group)}" if group is not None else ""
    err_console.print(
        escape(
            f"wrote lm-eval's --samples for {len(samples)} task(s) to {as_given(path)}: run "
            f"`lm-eval run ... --tasks {','.join(samples)} --samples "
            f"{shlex.quote(str(path))} --log_samples --output_path OUT`, then "
            f"`latentbench estimate {calibration} OUT --source lm-eval{grouped} --items "
            f"{shlex.quote(design)}`"
        ),
        soft_wrap=True,
    )


def _refuse_calibration_file(path: Path, calibration: Path, option: str) -> None:
    """Refuse to write ``tiny``'s output over its calibration: the matrix file itself, or a
    file of the fit directory (its ``items.csv`` is the item parameters), even with --force,
    which would destroy the calibration the design was drawn from."""
    target, source = path.resolve(), calibration.resolve()
    if target == source:
        what = "the calibration itself"
    elif source.is_dir() and target.parent == source and target.exists():
        what = f"a file of the calibration, the fit directory {calibration}"
    else:
        return
    fail(
        f"{option} {path} is {what}; writing there would destroy the calibration the design "
        "is drawn from (--force does not allow it): expected another file, e.g. "
        f"{'items.csv' if option == '--out' else 'samples.json'} outside it"
    )


def _check_samples_out(path: Path, force: bool) -> None:
    """``--lm-eval-samples``: a ``.json`` file name, not an existing file unless ``--force``."""
    if path.suffix.lower() != ".json":
        fail(f"--lm-eval-samples {path}: expected a file name ending in .json")
    if path.is_dir():
        fail(f"--lm-eval-samples {path} is a directory; expected a file name such as samples.json")
    if path.exists() and not force:
        fail(f"--lm-eval-samples {path} exists; pass --force to overwrite it")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        fail(f"--lm-eval-samples {path}: folder {parent} does not exist")


def _samples_task(task: str | None, frame: Any, cal: Any) -> str | None:
    """The lm-eval task of the design's doc ids: ``--task``, else the calibration's benchmark
    name when its ids are doc ids (not a group's ``TASK/ID``), else None."""
    if task is not None:
        return task
    if all(str(item).isdigit() for item in frame["item"]):
        name = cal.labels.get("benchmark")
        if not name:
            fail(
                "--lm-eval-samples: the calibration names no benchmark; give --task, the lm-eval "
                "task whose doc ids these items are"
            )
        return str(name)
    return None


@app.command(
    "compare",
    cls=Command,
    epilog=example(
        "latentbench compare fit/ results.parquet --a model-x --b model-y --budget 500",
        "latentbench compare fit/ a.parquet b.parquet --margin 0.01 --out cmp/",
        "latentbench compare --store runs.duckdb --benchmark mmlu a.parquet b.parquet",
        "latentbench compare fit/ ckpt1000.parquet ckpt2000.parquet --items items.csv",
        "latentbench compare fit/ a.parquet b.parquet --weights subjects.csv",
        "latentbench compare fit/ --live run.toml --store run.duckdb --a ckpt-1000 --b ckpt-2000",
    ),
)
def compare_command(
    ctx: typer.Context,
    calibration: Path | None = typer.Argument(
        None,
        help="Fit directory (latentbench fit --out) or response-matrix file; with --benchmark, "
        "the results of model A.",
        show_default=False,
    ),
    responses_a: Path | None = typer.Argument(
        None, help="Results of model A (or of both models).", show_default=False
    ),
    responses_b: Path | None = typer.Argument(
        None, help="Results of model B (default: RESPONSES_A)."
    ),
    live: Path | None = typer.Option(
        None,
        "--live",
        help="A `select live` configuration: ask its endpoint for both models' answers (no "
        "results files; --a and --b name two of its models).",
    ),
    store: Path | None = typer.Option(
        None,
        "--store",
        help="Calibrate on a benchmark of this DuckDB store, with --benchmark. With --live: "
        "the durable store (re-run to resume).",
    ),
    benchmark: str | None = typer.Option(
        None, help="Calibrate on this benchmark of --store (instead of CALIBRATION)."
    ),
    source: str = typer.Option(
        "table",
        help="What wrote the results: table (CSV/Parquet files), or a tool, read as "
        "`latentbench ingest SOURCE` reads it (lm-eval, ...; one benchmark's results).",
    ),
    metric: str | None = typer.Option(
        None,
        help="With --benchmark: its metric, when the store holds several; with --source: the "
        "metric read (NAME or TASK=NAME).",
    ),
    filter: str | None = typer.Option(
        None,
        help="With --benchmark: its filter, when the store holds several; with --source: the "
        "filter read (NAME or TASK=NAME).",
    ),
    split: str | None = typer.Option(
        None,
        help="With --benchmark: its split, when it has several (default: test, warned); with "
        "--source helm: the split read.",
    ),
    group: str | None = typer.Option(
        None, help="With --source: read the tasks as one benchmark of this name (TASK/ID)."
    ),
    duplicates: str | None = typer.Option(
        None, help="With --source: an answer scored differently by two runs: error, latest, mean."
    ),
    a: str | None = typer.Option(
        None, "--a", help="Model A's name in its file (with --live: in the configuration)."
    ),
    b: str | None = typer.Option(
        None, "--b", help="Model B's name in its file (with --live: in the configuration)."
    ),
    budget: int | None = typer.Option(500, help="Most items (each answered by both)."),
    margin: float | None = typer.Option(
        None, help="Also stop when the difference is certified within +-MARGIN."
    ),
    delta: float = typer.Option(0.05, help="Error probability of the certificate."),
    seed: int = typer.Option(0, help="Seed."),
    floor: float = typer.Option(0.5, help="Uniform share of the design, in (0, 1]."),
    rank: int = typer.Option(1, help="Rank of the fit when CALIBRATION is a matrix file."),
    proxy: str = typer.Option(
        "irt",
        help="Predictions: irt (the IRT model alone) or ridge (IRT corrected from the "
        "calibration responses). Either keeps the interval valid.",
    ),
    items: Path | None = typer.Option(
        None,
        help="A fixed design from `latentbench tiny` (.csv or .parquet) that both models "
        "answered: the full-benchmark scores are compared from its items (without it, two "
        "models that answered only some items are compared on those).",
    ),
    weights: Path | None = typer.Option(
        None,
        "--weights",
        help="Compare weighted scores: a CSV/Parquet file with columns item and weight "
        "(any scale) or group (macro: each group weighs the same, e.g. MMLU's subjects), "
        "listing every calibrated item once (weight 0 leaves one out), as estimate --weights "
        "reads it. With --items, the design must be drawn for the same weights (tiny "
        "--weights).",
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="Write compare.json and compare_items.csv (one row per item drawn: its "
        "probability, weights, both scores and the round's estimate) into this directory.",
    ),
    as_json: bool = typer.Option(False, "--json/--no-json", help="Print the result as JSON."),
    quiet: bool = typer.Option(
        False,
        "--quiet/--no-quiet",
        "-q",
        help="Only the result line and the file written (no interval legend).",
    ),
) -> None:
    """Is A's full-benchmark score higher than B's? Paired items, stops when certified."""
    from latentbench.select import compare

    _check_source(source, live)
    choice = {"metric": metric, "filter": filter, "split": split}
    if live is not None:
        files = [p for p in (calibration, responses_a, responses_b) if p is not None]
        options = {"budget": budget, "margin": margin, "delta": delta, "seed": seed,
                   "floor": floor, "rank": rank, "proxy": proxy, "weights": weights}  # fmt: skip
        result = _compare_live(live, store, benchmark, choice, files, a, b, items, group,
                               duplicates, out, options, quiet)  # fmt: skip
        _show_comparison(result, out, as_json, quiet)
        _exit_stopped(result.stopped)
        return
    calibration, responses_a, responses_b = _compare_files(
        calibration,
        responses_a,
        responses_b,
        store_calibration(store, benchmark, choice, source=source),
    )
    if source == "table":
        if group is not None or duplicates is not None:
            fail("--group and --duplicates read a tool's results: give --source TOOL")
        for path in (responses_a, responses_b):
            if path is not None:
                _refuse_tool_results(path, "RESPONSES")
    if proxy not in PROXIES:
        fail(f"--proxy {proxy!r}: expected one of {', '.join(PROXIES)}")
    proxy_kind: Any = proxy
    design: dict[str, Any] = {}
    if items is not None:  # a fixed design: its own size, seed and floor
        for name in sorted(_given(ctx, ("budget", "seed", "floor"))):
            fail(
                f"--{name} with --items {items}: a fixed design scores every one of its items, "
                "drawn by latentbench tiny with its own seed and floor (the file's columns); "
                f"drop --{name}, or drop --items to compare adaptively"
            )
        design["items"] = items
    else:
        design.update(budget=budget, seed=seed, floor=floor)
    if out is not None:
        _writable_dir(out, _COMPARE_FILES)
    with clean_warnings():
        try:
            read: dict[str, Any] = {"source": source, "group": group, "duplicates": duplicates}
            if source != "table":  # the tool's metric, filter and split (and the store's)
                read.update(tool_choice(choice))
            data_a, data_b, a, b = _compare_sides(responses_a, responses_b, a, b, read)
            result = compare(
                _calibration(calibration, store, benchmark, choice, rank),
                data_a,
                data_b,
                model_a=a,
                model_b=b,
                margin=margin,
                delta=delta,
                rank=rank,
                proxy=proxy_kind,
                weights=weights,
                **design,
            )
        except InputError as exc:
            fail(exc)
    _show_comparison(result, out, as_json, quiet)


def _show_comparison(result: Any, out: Path | None, as_json: bool, quiet: bool) -> None:
    """Save ``result`` into ``out`` (when given) and print it (as JSON with ``as_json``)."""
    wrote = None
    if out is not None:
        wrote = _wrote_line(out, ("compare.json", "compare_items.csv"))
        try:
            result.save(out)
        except InputError as exc:
            fail(exc)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
    else:
        _print_comparison(result, quiet)
    if wrote is not None:
        (err_console if as_json else console).print(escape(wrote), soft_wrap=True)


def _compare_live(
    live: Path,
    store: Path | None,
    benchmark: str | None,
    choice: dict[str, str | None],
    files: list[Path],
    a: str | None,
    b: str | None,
    items: Path | None,
    group: str | None,
    duplicates: str | None,
    out: Path | None,
    options: dict[str, Any],
    quiet: bool = False,
) -> Any:
    """The :class:`~latentbench.select.CompareResult` of a checked ``compare --live``
    command line (``files``: its positional paths); what cannot go with ``--live`` fails
    (exit 2) naming the flag. Its progress is the command line's (``quiet``: none)."""
    from latentbench.select import compare_live

    if store is None:
        fail("--live needs --store RUN.duckdb (every answer is stored there first)")
    refuse_memory_store(store, "every answer paid for (and the run a re-run resumes)")
    if items is not None:
        fail(
            f"--items {items} with --live: a live comparison chooses its items as it goes; "
            "compare a fixed design's answers from their files (without --live)"
        )
    if group is not None or duplicates is not None:
        fail("--group and --duplicates read a tool's results; with --live the endpoint answers")
    from_store = store_calibration(store, benchmark, choice, source=None, live=live)
    expected = 0 if from_store else 1
    if len(files) != expected:
        where = (
            "with --store/--benchmark the calibration comes from the store"
            if from_store
            else "give CALIBRATION (a fit directory or response-matrix file) only"
        )
        fail(
            f"{where}; with --live the endpoint answers for both models (no results files; "
            f"got {', '.join(map(str, files)) or 'none'})"
        )
    if not from_store:
        _refuse_store(files[0], "compare")
        _refuse_missing(files[0])  # before the configuration is read, as estimate --live
    if options["proxy"] not in PROXIES:
        fail(f"--proxy {options['proxy']!r}: expected one of {', '.join(PROXIES)}")
    if out is not None:
        _writable_dir(out, _COMPARE_FILES)
    rank = options["rank"]
    with clean_warnings():
        try:
            cal = _calibration(files[0] if files else None, store, benchmark, choice, rank)
            with (
                live_store_written(store),
                progress_bar(quiet, detail=live_detail(store)) as progress,
                stop_on_sigint(say_stopping("item")) as stop,
            ):
                return compare_live(cal, live, store, model_a=a, model_b=b, stop_event=stop,
                                    progress=progress, **options)  # fmt: skip
        except InputError as exc:
            fail(exc)


def _compare_files(
    calibration: Path | None,
    responses_a: Path | None,
    responses_b: Path | None,
    from_store: bool,
) -> tuple[Path | None, Path, Path | None]:
    """``compare``'s positional files as (CALIBRATION, RESPONSES_A, RESPONSES_B): with
    ``--store --benchmark`` (``from_store``) the calibration comes from the store and the
    positional files are the results (shifted by one); a missing calibration or results file,
    or a CALIBRATION that is a store, is refused."""
    if from_store:
        if responses_b is not None:
            fail(
                "with --store/--benchmark the calibration comes from the store: give only the "
                f"models' results (got {calibration}, {responses_a} and {responses_b})"
            )
        calibration, responses_a, responses_b = None, calibration, responses_a
    elif calibration is None:
        fail("give CALIBRATION (a fit directory or response-matrix file), or --store --benchmark")
    else:
        _refuse_store(calibration, "compare")
        _refuse_missing(calibration)
    if responses_a is None:
        fail("give RESPONSES_A, the results of model A (or of both models)")
    return calibration, responses_a, responses_b


def _print_comparison(result: Any, quiet: bool) -> None:
    """The comparison's summary and (unless ``quiet``) what its interval is."""
    console.print(escape(result.summary()), soft_wrap=True)
    if result.lower != result.upper and not quiet:
        weights = result.options.get("weights")
        # --weights: the weighted or macro scores (unless all equal: the plain means)
        scores = "scores"
        if weights and not weights.get("equal"):
            groups = f"{int(weights.get('n_groups') or 0):,} groups"
            if weights.get("n_groups_answered") is not None:  # some left out (as the line)
                groups = f"{int(weights['n_groups_answered']):,} of {groups}"
            groups = (
                f"scores over {groups} (each weighed by the share of its items "
                f"{weights['weighed_by_share']})"
                if weights.get("weighed_by_share")  # unequal shares: no longer macro scores
                else f"macro scores over {groups}"
            )
            scores = groups if weights.get("kind") == "groups" else "weighted scores"
        full = int(weights.get("n_positive") or 0) if weights else result.n_calibrated
        console.print(
            f"[ ]: the {_level(result.level)} interval of the difference of the two "
            + (
                f"full-benchmark {scores}"
                if full <= result.n_items
                else f"{scores} on the configuration's {result.n_items:,} items"
                if isinstance(result.options.get("live"), dict)  # live: both asked
                else f"{scores} on the items both answered"
            )
            + ", valid at every step whether or not the IRT model fits "
            f"(--delta {_delta(result)})",
            soft_wrap=True,
            markup=False,
        )


def _compare_sides(
    responses_a: Path,
    responses_b: Path | None,
    a: str | None,
    b: str | None,
    read: dict[str, Any] | None = None,
) -> tuple[Any, Any, str, str]:
    """``(data A, data B, name A, name B)`` of ``compare``'s files (read with ``read``:
    ``source`` and its ``metric`` / ``filter``) and ``--a`` / ``--b``: read, named
    (:func:`_compare_names`) and, for one model name in two files, labelled by file; raises
    :class:`InputError`."""
    from latentbench.select import read_responses

    read = read or {}
    for path in (responses_a, responses_b):
        if path is not None and not path.exists():
            raise InputError(f"responses {path}: no such file")
    data_a = read_responses(responses_a, **read)
    data_b = data_a if responses_b is None else read_responses(responses_b, **read)
    if responses_b is None and len(data_a) == 1 and {a, b} <= {None, *data_a}:
        (only,) = data_a  # one model, and B's file left out: not "name them with --a / --b"
        raise InputError(
            f"{responses_a} holds one model ({only!r}); expected model B's results too: give "
            "RESPONSES_B, B's file (latentbench compare CALIBRATION A_FILE B_FILE), or one "
            "file of both models"
        )
    if responses_b is None:
        a, b = _other_model(a, b, data_a)
    name_a, name_b = _compare_names(a, b, data_a, data_b, responses_a, responses_b or responses_a)
    if name_a == name_b and responses_b is not None:  # one name in two files (checkpoints)
        return _checkpoints(name_a, data_a, data_b, responses_a, responses_b)
    return data_a, data_b, name_a, name_b


def _other_model(a: str | None, b: str | None, data: Any) -> tuple[str | None, str | None]:
    """In one file of two models, a name left out is the other one (as ``compare()`` does);
    otherwise ``(a, b)`` as given."""
    if (a is None or b is None) and len(data) == 2:
        first, second = list(data)
        if a is None and b is None:
            return first, second
        if a is None:
            return (first if b == second else second), b
        return a, (first if a == second else second)
    return a, b


def _unpacked_stem(path: Path) -> str:
    """The stem of ``path`` less a compression suffix (``ckpt1000.csv.gz``: ``ckpt1000``, as
    ``ckpt1000.csv``), as :func:`~latentbench.select.compare` labels a checkpoint's file."""
    packed = path.suffix.lower() in (".gz", ".bz2", ".xz", ".zst") and bool(path.stem)
    return Path(path.stem).stem if packed else path.stem


def _checkpoints(
    name: str, data_a: Any, data_b: Any, path_a: Path, path_b: Path
) -> tuple[Any, Any, str, str]:
    """One model ``name`` in two files: each side labelled by its file's stem (by its path
    when the stems are the same)."""
    stem_a, stem_b = _unpacked_stem(path_a), _unpacked_stem(path_b)
    a, b = f"{name} ({stem_a})", f"{name} ({stem_b})"
    if a == b:
        a, b = f"{name} ({path_a})", f"{name} ({path_b})"
    return {a: data_a[name]}, {b: data_b[name]}, a, b


def _near_name(name: str, ids: list[str]) -> str:
    """``; did you mean 'm3'? ...`` when an id differs from ``name`` only by case, surrounding
    spaces or Unicode normalisation (as ``estimate`` points them out), else empty."""
    import unicodedata

    def key(text: str) -> str:
        return unicodedata.normalize("NFC", text).strip().casefold()

    near = [m for m in ids if m != name and key(m) == key(name)]
    if not near:
        return ""
    return (
        f"; did you mean {near[0]!r}? It differs only by case or surrounding spaces; model "
        "names are matched exactly"
    )


def _compare_names(
    a: str | None, b: str | None, data_a: Any, data_b: Any, path_a: Path, path_b: Path
) -> tuple[str, str]:
    """Model A's and B's names: given, or the one model of their file; two different ones."""
    names = []
    sides = (("A", "--a", a, data_a, path_a), ("B", "--b", b, data_b, path_b))
    for label, flag, name, data, path in sides:
        if name is None:
            if len(data) != 1:
                shown = ", ".join(repr(m) for m in list(data)[:3])
                raise InputError(
                    f"{path} holds {len(data)} models ({shown}{', ...' if len(data) > 3 else ''})"
                    f"; name model {label} with {flag}"
                )
            name = next(iter(data))
        elif name not in data:
            shown = ", ".join(repr(m) for m in list(data)[:5])
            raise InputError(
                f"{flag} {name!r}: no such model in {path} ({len(data):,} "
                f"model{'s' if len(data) != 1 else ''}: {shown}"
                f"{', ...' if len(data) > 5 else ''}){_near_name(name, list(data))}"
            )
        names.append(str(name))
    if names[0] == names[1] and path_a == path_b:
        raise InputError(
            f"A and B are both model {names[0]!r} ({path_a}); expected two different models "
            "(name them with --a / --b)"
        )
    return names[0], names[1]
