"""The HTML page of a replay experiment: accuracy curves with bands, budgets, savings."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from latentbench._compat import TEXT
from latentbench.report import plots
from latentbench.report._blocks import (
    _figure,
    _Section,
    _table,
    refuse_existing,
    render_page,
    short_hashes,
)
from latentbench.select._experiment_record import (
    budget_text,
    censored_bound,
    number,
    reference_row,
    saving_missing,
    seeds_text,
)

if TYPE_CHECKING:
    from latentbench.select import ExperimentRecord, ExperimentResult

__all__ = ["EXPERIMENT_SECTIONS", "build_experiment_report"]

EXPERIMENT_SECTIONS = ("experiment-summary", "experiment-curves", "experiment-table")
"""Ids of the sections of an experiment page."""


def _finite(value: Any) -> bool:
    return number(value) is not None


def _saving(row: dict[str, Any], name: str) -> str:
    """A saving with its SE and 95 % interval (the value alone without them: one seed; with
    why not from more seeds, as ``summary.json``'s ``_no_interval`` says);
    ``-`` when there is none (the findings and the table's other columns say why)."""
    value = number(row.get(name))
    if value is None:
        return "-"
    se, lo, hi = (number(row.get(f"{name}_{k}")) for k in ("se", "lo", "hi"))
    if se is None or lo is None or hi is None:
        why = row.get(f"{name}_no_interval")
        n_seeds = number(row.get("n_seeds"))
        if isinstance(why, str) and why and n_seeds is not None and n_seeds > 1:
            return f"{value:.1f} % (no interval: {why})"
        return f"{value:.1f} %"
    return f"{value:.1f} % ± {se:.1f} (95 % interval {lo:.1f} to {hi:.1f})"


def _saving_cell(record: Any, row: dict[str, Any], name: str, reference: Any, at_stop: bool) -> str:
    """:func:`_saving`, or why there is none, in words; with which bound it is where some
    runs did not certify (``saving_censored``)."""
    ref = reference_row(record.summary, row, reference)
    if ref is not None and ref.get("policy") == row.get("policy"):
        return "reference"
    if number(row.get(name)) is None:
        return saving_missing(row, ref, reference, at_stop=at_stop)
    bound = censored_bound(row, ref) if row.get("saving_censored") else None
    return _saving(row, name) + ("" if bound is None else f" ({bound})")


def _budget(value: Any) -> Any:
    """A budget as a number (sortable), or ``not reached``."""
    v = number(value)
    return "not reached" if v is None else v


def _record(experiment: ExperimentRecord | ExperimentResult | str | os.PathLike[str]) -> Any:
    from latentbench.select import ExperimentRecord, ExperimentResult

    if isinstance(experiment, ExperimentRecord):
        return experiment
    if isinstance(experiment, ExperimentResult):
        return ExperimentRecord.from_result(experiment)
    return ExperimentRecord.read(experiment)


def experiment_table(record: Any) -> pd.DataFrame:
    """Per pool and policy: measured top-two gap, budgets to 90 % and 95 % accuracy
    (post-init: the crossing of all the seeds' accuracy curve, ``not reached`` when it never
    gets there; the SD of the crossing over bootstrap resamples of the seeds), the final
    accuracy, cells at a certified stop when the runs stopped so, and the savings against the
    reference with their paired-bootstrap SE and interval (or why there is none).

    Parameters
    ----------
    record : ExperimentRecord
        The experiment (:meth:`ExperimentRecord.read <latentbench.select.ExperimentRecord.read>`
        of its output directory).

    Returns
    -------
    DataFrame
        One row per (pool, policy).
    """
    params = record.params
    reference = params.get("reference")
    at_stop = params.get("stop") == "confidence"
    goal = f"{100 * float(params.get('target', 0.95)):g} %"  # the run's target (default 95 %)
    rows = []
    for row in record.summary:
        gap = (record.pools.get(row["pool"]) or {}).get("top2_gap")
        out = {
            "pool": row["pool"],
            "top-2 gap": gap,
            "policy": row["policy"],
            "seeds": row.get("n_seeds"),
            "initial cells": row.get("init_evaluations"),
            "to 90 % (post-init)": _budget(row.get("budget_post_init_90")),
            f"to {goal} (post-init)": _budget(row.get("budget_post_init")),
            # the spread of a crossing that is there (as the printed table): none beside
            # "not reached", where it would be that of the resamples that happen to reach it
            f"to {goal} SD": (
                None
                if number(row.get("budget_post_init")) is None
                else number(row.get("budget_post_init_sd"))
            ),
            f"to {goal} (total)": _budget(row.get("budget_total")),
            "final accuracy": number(row.get("final_accuracy")),
        }
        if "cells_at_stop_post_init" in row:
            out["cells at certified stop"] = row["cells_at_stop_post_init"]
            out["certified"] = row.get("certified_fraction")
            out["certified and right"] = row.get("certified_correct")
        if reference is not None:
            out["saved post-init"] = _saving_cell(
                record, row, "saved_post_init_pct", reference, at_stop
            )
            out["saved total"] = _saving_cell(record, row, "saved_total_pct", reference, at_stop)
        out["coverage"] = row.get("coverage")
        out["coverage 95% interval"] = _share_interval(row)
        rows.append(out)
    return pd.DataFrame(rows)


def _share_interval(row: Mapping[str, Any]) -> str | None:
    """``[lower, upper]`` of the coverage's Wilson interval (None in records without it)."""
    lo, hi = row.get("coverage_lower"), row.get("coverage_upper")
    return None if lo is None or hi is None else f"[{lo:.2f}, {hi:.2f}]"


def build_experiment_report(
    experiment: ExperimentRecord | ExperimentResult | str | os.PathLike[str],
    *,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
    force: bool = False,
) -> str:
    """One self-contained HTML page for an experiment (``latentbench experiment --out DIR``).

    Sections ``experiment-summary`` (each policy's saving against the reference with its
    paired-bootstrap SE and 95 % interval, per pool), ``experiment-curves`` (identification
    accuracy against post-init cells, one figure per pool, bands of +-1.96 SE) and
    ``experiment-table`` (budgets to 90 % and 95 %, savings, coverage).

    Parameters
    ----------
    experiment : ExperimentRecord, ExperimentResult or path-like
        The experiment, or its output directory.
    path : path-like, optional
        Also write the page there.
    title : str, optional
        The page's title (default ``"latentbench experiment report"``).
    force : bool, default False
        Overwrite an existing ``path`` (refused otherwise, before any work).

    Returns
    -------
    str
        The HTML text.
    """
    refuse_existing(path, force)
    record = _record(experiment)
    params = record.params
    goal = f"{100 * float(params.get('target', 0.95)):g} %"  # the run's target
    reference = params.get("reference")
    summary = _Section("experiment-summary", "Experiment findings")
    stop = params.get("stop", "budget")
    summary.headline = _experiment_headline(params, reference, stop, goal)
    summary.findings += _run_notes(params)
    budget = number(params.get("budget"))
    within = "" if budget is None else f" within {budget:,.0f} post-init cells"
    for row in record.summary:
        if reference is None or row["policy"] == reference:
            continue
        text = _saving_text(record, row, reference, stop, goal, within)
        summary.findings.append(
            {
                "text": text,
                "note": (_finite(row.get("saved_post_init_hi")) and row["saved_post_init_hi"] < 0)
                or bool(row.get("saving_censored")),
            }
        )
    summary.findings.append({"text": _schedule_text(params, stop)})
    source = _input_text(params)
    if source:
        summary.findings.append({"text": source})
    curves = _curves_section(record)
    table = _Section("experiment-table", "Budgets and savings")
    table.tables.append(
        _table(
            experiment_table(record),
            name="experiment-summary",
            consistent=True,
            row_header=False,  # a row is a (pool, policy): its pool repeats down the rows
        )
    )
    return render_page([summary, curves, table], title or "latentbench experiment report", path)


def _experiment_headline(params: Mapping[str, Any], reference: Any, stop: Any, goal: str) -> str:
    """The summary's headline: seeds per policy and pool, and what the savings measure."""
    measure = (
        "mean cells at the certified stop"
        if stop == "confidence"
        else f"cells to {goal} identification accuracy"
    )
    n_seeds = params.get("n_seeds")
    if reference is None:
        return (
            f"{seeds_text(n_seeds)} per policy and pool; no savings: no reference policy (the "
            "savings are against UCB-E, ucbe, which was not among the policies)."
        )
    return (
        f"{seeds_text(n_seeds)} per policy and pool; savings in {measure} against "
        f"{reference} (paired bootstrap over seeds: same initial cells for every policy)."
    )


def _run_notes(params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Notes on the run itself: recomputed budgets, a single seed, the missing cells' rule,
    an interrupted run."""
    notes: list[dict[str, Any]] = []
    if params.get("budgets_recomputed"):
        notes.append({"text": str(params["budgets_recomputed"]) + ".", "note": True})
    if params.get("n_seeds") == 1:
        notes.append(
            {
                "text": "1 seed: every budget and saving is that of one run, with no "
                "uncertainty (no SD or interval); run 2 or more seeds (20 by default) for them.",
                "note": True,
            }
        )
    if params.get("budget_sd_note"):  # the crossing is the slowest seed's: no SD of it
        notes.append({"text": str(params["budget_sd_note"]) + ".", "note": True})
    # the --missing rule's effect on the targets (said by the run, kept in params)
    if params.get("dropped_items"):
        notes.append(
            {
                "text": f"--missing drop-items: {params['dropped_items']:,} item(s) with a missing "
                "candidate cell were dropped (for the history too); each model's target is its "
                "mean over the other items.",
                "note": True,
            }
        )
    if params.get("missing_cells_scored_0"):
        notes.append(
            {
                "text": f"--missing zero: {params['missing_cells_scored_0']:,} missing candidate "
                "cell(s) were scored 0, so each model's target is its mean with those zeros.",
                "note": True,
            }
        )
    if params.get("seeds_asked"):
        notes.append(
            {
                "text": f"Interrupted: {params.get('n_seeds')} of {params['seeds_asked']} seeds "
                "were completed by every pool and policy; every figure covers those.",
                "note": True,
            }
        )
    return notes


def _saving_text(
    record: Any, row: dict[str, Any], reference: Any, stop: Any, goal: str, within: str
) -> str:
    """One policy's finding in one pool: its saving against the reference, or why none."""
    gap = (record.pools.get(row["pool"]) or {}).get("top2_gap")
    gap_text = f" (top-two gap {gap:.3f})" if _finite(gap) else ""
    head = f"Pool {row['pool']}{gap_text}: {row['policy']}"
    if _finite(row.get("saved_post_init_pct")):
        censored = row.get("saving_censored")  # some runs did not certify: which bound
        return (
            f"{head} saves {_saving(row, 'saved_post_init_pct')} post-init, "
            f"{_saving(row, 'saved_total_pct')} in total."
            + (f" {censored[:1].upper()}{censored[1:]}." if isinstance(censored, str) else "")
        )
    if stop == "confidence":
        why = row.get("saved_post_init_pct_no_interval")
        if isinstance(why, str) and why.startswith("no saving measured"):
            return f"{head}: {why}."
        return f"{head}: no saving, {reference} used no post-init cells before its stop."
    ref = reference_row(record.summary, row, reference) or {}
    parts = []
    for who, r in ((row["policy"], row), (reference, ref)):
        b = number(r.get("budget_post_init"))
        if b is None:
            final = number(r.get("final_accuracy"))
            end = "" if final is None else f" (final accuracy {100 * final:.0f} %)"
            parts.append(f"{who} does not reach {goal} accuracy{within}{end}")
        else:
            parts.append(f"{who} reaches {goal} at {budget_text(b)} post-init cells")
    return f"Pool {row['pool']}{gap_text}: " + "; ".join(parts) + ": no saving to state."


def _said(value: Any, unit: str) -> str:
    """``VALUE UNIT``, or ``UNIT not recorded``."""
    return f"{value} {unit}" if value is not None else f"{unit} not recorded"


def _input_text(params: Mapping[str, Any]) -> str:
    """Where the experiment's matrix came from and which version ran it (``params["input"]``,
    ``params["latentbench_version"]``; empty when summary.json records neither)."""
    entry, version = params.get("input"), params.get("latentbench_version")
    parts = []
    if isinstance(entry, Mapping) and entry.get("path"):
        digest = f" (SHA-256 {entry['sha256']})" if entry.get("sha256") else ""
        parts.append(f"Input: {entry['path']}{digest}")
    elif isinstance(entry, Mapping) and entry.get("store"):
        digest = f" (cells SHA-256 {entry['cells_sha256']})" if entry.get("cells_sha256") else ""
        parts.append(f"Input: benchmark {entry.get('benchmark')!r} of {entry['store']}{digest}")
    if version:
        parts.append(f"run by latentbench {version}")
    return short_hashes("; ".join(parts) + ".") if parts else ""


def _schedule_text(params: Mapping[str, Any], stop: Any) -> str:
    """The run's schedule: cells per round, initial cells, budget and stop rule."""
    batch, init = params.get("batch_size"), params.get("init_batch")
    return (
        f"Schedule: {_said(batch, 'cells per round')}, "
        f"{_said(init, 'initial cells per model')}; budget "
        f"{_said(params.get('budget'), 'post-init cells per run')}; stop: {stop}."
    )


def _curves_section(record: Any) -> _Section:
    """The ``experiment-curves`` section: one accuracy figure per pool."""
    curves = _Section(
        "experiment-curves",
        "Identification accuracy over evaluations",
        "The fraction of seeds whose recommendation is the true best, against the cells spent "
        "after the initial batch; bands are pointwise 95 % (binomial SE over seeds); dotted "
        "lines at 90 % and 95 %.",
    )

    def draw(pool: str) -> Callable[[Any], Any]:
        return lambda ax: plots.plot_experiment_curves(record.curves, pool, ax)

    for pool in dict.fromkeys(record.curves["pool"].astype(TEXT)):
        curves.figures.append(
            {
                "png": _figure(draw(pool)),
                "alt": f"Identification accuracy of each policy against evaluations after "
                f"the initial batch, pool {pool}: one line per policy with its pointwise 95 % "
                "band, dotted lines at 90 % and 95 %; each policy's budget to 95 % is in the "
                "tables of this page.",
            }
        )
    return curves
