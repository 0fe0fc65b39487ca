"""The HTML page of a leave-one-model-out estimate experiment (``experiment --task
estimate``): error against random items, coverage, the runs' intervals, per-model table."""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from latentbench.report import plots
from latentbench.report._blocks import (
    _figure,
    _Section,
    _table,
    refuse_existing,
    render_page,
    short_hashes,
)

if TYPE_CHECKING:
    from latentbench.select import EstimateExperiment

__all__ = ["ESTIMATE_EXPERIMENT_SECTIONS", "build_estimate_experiment_report"]

ESTIMATE_EXPERIMENT_SECTIONS = ("estimate-summary", "estimate-figures", "estimate-tables")
"""Ids of the sections of an estimate experiment's page."""


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _pm(value: Any, se: Any, digits: int) -> str:
    if not _finite(value):
        return "-"
    return f"{value:.{digits}f}" + (f" ± {se:.{digits}f}" if _finite(se) else "")


def _budget_finding(row: dict[str, Any], level: float) -> dict[str, Any]:
    """One line per budget: error against random items, coverage, width; flagged when the
    coverage is below the level beyond its interval or the estimate loses to random items."""
    text = f"After {row['budget']:,} items: mean |error| {_pm(row['mae'], row['mae_se'], 4)}"
    if _finite(row.get("uniform_mae")):
        text += (
            f", against {row['uniform_mae']:.4f} for as many random items (ratio "
            f"{_pm(row.get('mae_ratio'), row.get('mae_ratio_se'), 2)})"
        )
    lo, hi = row.get("coverage_lower"), row.get("coverage_upper")
    cover = f"{row['coverage']:.3f}" if _finite(row.get("coverage")) else "-"
    if _finite(lo) and _finite(hi):
        cover += f" (95% interval {lo:.3f} to {hi:.3f})"
    text += (
        f"; coverage {cover} over {_plural(row['models'], 'model')}, "
        f"{_plural(row['runs'], 'run')}; mean half-width "
        f"{row['half_width']:.4f}."
    )
    if row.get("contradicted"):  # the anytime guarantee is about every step, not this one
        text += (
            f" {_plural(row['contradicted'], 'run')} had the confidence sequence contradicted "
            "by the answers (interval reset to the certain range); covered after every item: "
            f"{row['coverage_throughout']:.3f}."
        )
    low_cover = hi is not None and _finite(hi) and hi < level
    worse = _finite(row.get("mae_ratio")) and (
        row["mae_ratio"] - 1.96 * (row.get("mae_ratio_se") or 0.0) > 1.0
    )
    if low_cover:
        text += f" The coverage is below the intervals' level {level:.2f}."
    if worse:
        text += " The estimate is worse than random items here."
    return {"text": text, "note": bool(low_cover or worse or row.get("contradicted"))}


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _of_matrix(params: dict[str, Any], held_out: int) -> str:
    """`` (of 7 in the matrix)`` when only some models were held out (``--models``)."""
    total = params.get("n_models")
    return f" (of {total:,} in the matrix)" if isinstance(total, int) and total > held_out else ""


def per_model_table(
    runs: pd.DataFrame,
    budget: int,
    missing: tuple[str, ...] | list[str] = (),
    max_items: int | None = None,
) -> pd.DataFrame:
    """Per held-out model at ``budget`` items (a model with fewer items at its own largest
    recorded budget, said in ``note``; ``missing``: the models with no recorded budget, as
    rows that say so): its true score, the mean estimate, mean absolute error (and random
    items' expected one), the runs' coverage and the median items to the precision; worst
    error first. The median items to the precision counts the runs that did not reach it
    (within ``max_items``, or the model's items): ``>= N`` when they bound it, ``not
    reached`` when none did."""
    from latentbench.select import EstimateExperiment

    runs = runs[runs["budget"] <= budget]
    own = runs.groupby("model", sort=False)["budget"].transform("max")
    part = runs[runs["budget"] == own].assign(abs_error=lambda f: f["error"].abs())
    agg: dict[str, tuple[str, str]] = {
        "after items": ("budget", "first"),
        "true score": ("truth", "first"),
        "items answered": ("n_items", "first"),
        "runs": ("seed", "size"),
        "mean estimate": ("score", "mean"),
        "mean |error|": ("abs_error", "mean"),
    }
    if "uniform_error" in part:
        agg["random items |error|"] = ("uniform_error", "first")
    agg["coverage"] = ("covered", "mean")
    agg["items to precision (median)"] = ("items_to_precision", "median")
    table = part.groupby("model", sort=False).agg(**agg).reset_index()
    table = table.sort_values("mean |error|", ascending=False, kind="stable")
    cells = []
    for name in table["model"]:
        own = part[part["model"] == name]
        items = own["items_to_precision"].to_numpy(dtype=float)
        limits = own["n_items"].to_numpy(dtype=float)
        if max_items is not None:
            limits = np.minimum(limits, float(max_items))
        value, exact = EstimateExperiment.censored_median(items, limits)
        if not np.isfinite(items).any() or value is None:
            cells.append("not reached")
        else:
            shown = f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"
            cells.append(shown if exact else f">= {shown}")
    table["items to precision (median)"] = cells
    notes = ["" if b == budget else f"fewer items than {budget:,}" for b in table["after items"]]
    absent = [m for m in missing if m not in set(table["model"])]
    if absent or any(notes):
        table["note"] = notes
        gone = pd.DataFrame({"model": absent, "note": "no recorded budget (too few items)"})
        table = pd.concat([table, gone], ignore_index=True) if absent else table
    return table


def build_estimate_experiment_report(
    experiment: EstimateExperiment | str | os.PathLike[str],
    *,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
    force: bool = False,
    top: int = 100,
) -> str:
    """One self-contained HTML page for an estimate experiment (``latentbench experiment
    --task estimate --out DIR``).

    Sections ``estimate-summary`` (per budget: the error against the uniform sample mean's,
    the coverage with its interval, the width; the items to the precision; the fits that
    warned), ``estimate-figures`` (error and width against items; every run's interval at
    the largest budget against the truth) and ``estimate-tables`` (per budget, per model,
    and the runs whose interval missed).

    Parameters
    ----------
    experiment : EstimateExperiment or path-like
        The experiment, or its output directory.
    path : path-like, optional
        Also write the page there.
    title : str, optional
        The page's title (default ``"latentbench estimate experiment"``).
    force : bool, default False
        Overwrite an existing ``path`` (refused otherwise, before any work).
    top : int, default 100
        Rows shown of the per-model table and of the runs that missed (the rest are in the
        page's CSV download); ``report --top``.

    Returns
    -------
    str
        The HTML text.
    """
    refuse_existing(path, force)
    from latentbench.select import EstimateExperiment

    record = (
        experiment
        if isinstance(experiment, EstimateExperiment)
        else EstimateExperiment.read(experiment)
    )
    params, summary, runs = record.params, record.summary, record.runs
    level = 1.0 - float(params.get("delta") or 0.05)
    by_budget = record.by_budget()
    models = runs["model"].nunique()
    not_recorded = params.get("not_recorded") or {}
    missing = sorted(
        {str(m) for names in not_recorded.values() for m in names} - set(runs["model"])
    )
    seeds = params.get("seeds", "?")
    section = _Section("estimate-summary", "Experiment findings")
    section.headline = (
        f"Leave-one-model-out on {params.get('input') or 'a matrix'}: each of "
        f"{_plural(models + len(missing), 'model')}"
        f"{_of_matrix(params, models + len(missing))} in turn is the new one and the others "
        f"calibrate (rank {params.get('rank', 1)} fit); "
        f"{_plural(seeds, 'run') if isinstance(seeds, int) else seeds} per model; intervals "
        f"at {level:.0%}, anytime-valid"
        + (
            ", each budget's as 'estimate --budget B' reports it (sized for B)."
            if params.get("sized_for") == "budget"
            else ", sized for the precision (written before 2026-12-06)."
            if params.get("precision")
            else "."
        )
    )
    said = []  # which version of the input, and which latentbench ran it (when recorded)
    if params.get("input_sha256"):
        said.append(f"input SHA-256 {params['input_sha256']}")
    if params.get("latentbench_version"):
        said.append(f"run by latentbench {params['latentbench_version']}")
    if said:
        text = "; ".join(said)
        section.findings.append({"text": short_hashes(text[:1].upper() + text[1:] + ".")})
    for line in record.warnings:  # what the experiment said, kept in summary.json
        text = "Calibration fit " + line if line.startswith("without ") else line
        section.findings.append({"text": text[:1].upper() + text[1:], "note": True})
    if missing:
        section.findings.append(
            {
                "text": f"{_plural(len(missing), 'held-out model')} ha"
                f"{'s' if len(missing) == 1 else 've'} no recorded budget (fewer items than "
                f"{min(int(b) for b in not_recorded):,}): "
                f"{', '.join(repr(m) for m in missing[:5])}"
                f"{', ...' if len(missing) > 5 else ''}; every figure leaves "
                f"{'it' if len(missing) == 1 else 'them'} out.",
                "note": True,
            }
        )
    if runs.empty:  # e.g. a directory written before budgets beyond every model were refused
        section.findings.append(
            {
                "text": "No runs recorded: every budget "
                f"{params.get('budgets')} is above the items of every held-out model.",
                "note": True,
            }
        )
        return render_page([section], title or "latentbench estimate experiment", path)
    if record.not_run:
        rest = record.not_run
        section.findings.append(
            {
                "text": f"Interrupted: {len(rest)} held-out models were not run "
                f"({', '.join(rest[:5])}{', ...' if len(rest) > 5 else ''}); every figure "
                f"covers the {models} models finished before.",
                "note": True,
            }
        )
    section.findings.extend(_budget_finding(row, level) for row in summary["by_budget"])
    precision, reach = params.get("precision"), summary["precision"]
    if precision:  # the runs and models that did not reach it count (they were left out)
        line = record.precision_text(float(precision), reach)
        text = line[:1].upper() + line[1:] + "."
        section.findings.append({"text": text, "note": reach["reached"] < reach["runs"]})
    missed = runs[~runs["covered"].astype(bool)]
    if len(missed):
        section.findings.append(
            {
                "text": f"{len(missed)} of {len(runs)} (run, budget) intervals missed the "
                "truth: listed under the tables.",
                "note": False,
            }
        )
    figures = _Section(
        "estimate-figures",
        "Error and intervals",
        "First: mean absolute error over held-out models (bars ±1.96 SE), random items' "
        "expected error and the mean half-width, by items evaluated. Second: every run's "
        "estimate and interval at the largest budget against the model's true score.",
    )
    figures.figures.append(
        {
            "png": _figure(lambda ax: plots.plot_estimate_errors(by_budget, ax)),
            "alt": "mean absolute error and half-width against items evaluated",
        }
    )
    last = int(by_budget["budget"].max())
    figures.figures.append(
        {
            "png": _figure(lambda ax: plots.plot_estimate_intervals(runs, last, ax)),
            "alt": f"estimates and intervals after {last} items against the true scores",
        }
    )
    tables = _Section("estimate-tables", "Tables")
    tables.tables.append(  # each column in one number format (consistent)
        _table(by_budget, name="estimate-by-budget", caption="Per budget.", consistent=True)
    )
    per_model = per_model_table(runs, last, missing, max_items=params.get("max_items"))
    if not precision:  # --precision 0: not measured (the column said "not reached" for all)
        per_model = per_model.drop(columns="items to precision (median)")
    tables.tables.append(
        _table(
            per_model,
            name="estimate-per-model",
            caption=f"Per held-out model after {last:,} items (a model with fewer, at its "
            "largest recorded budget), worst error first.",
            download=True,
            limit=top,
            consistent=True,
        )
    )
    if len(missed):
        tables.tables.append(
            _table(
                missed,
                name="estimate-missed",
                row_header=False,  # a row is one run: its model repeats (one per seed)
                caption="Runs whose interval missed the truth.",
                download=True,
                limit=top,
                consistent=True,
            )
        )
    return render_page([section, figures, tables], title or "latentbench estimate experiment", path)
