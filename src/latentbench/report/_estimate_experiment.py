"""The HTML page of a leave-one-model-out estimate experiment (``experiment --task
estimate``): error against random items, coverage, the runs' intervals, per-model table."""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

import pandas as pd

from latentbench.report import plots
from latentbench.report._blocks import _figure, _Section, _table, render_page

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
        f"; coverage {cover} over {row['models']} models, {row['runs']} runs; mean half-width "
        f"{row['half_width']:.4f}."
    )
    low_cover = hi is not None and _finite(hi) and hi < level
    worse = _finite(row.get("mae_ratio")) and (
        row["mae_ratio"] - 1.96 * (row.get("mae_ratio_se") or 0.0) > 1.0
    )
    if low_cover:
        text += f" The coverage is below the intervals' level {level:.2f}."
    if worse:
        text += " The estimate is worse than random items here."
    return {"text": text, "note": bool(low_cover or worse)}


def per_model_table(runs: pd.DataFrame, budget: int) -> pd.DataFrame:
    """Per held-out model at ``budget`` items: its true score, the mean estimate, mean
    absolute error (and random items' expected one), the runs' coverage and the median items
    to the precision; worst error first."""
    part = runs[runs["budget"] == budget].assign(abs_error=lambda f: f["error"].abs())
    agg: dict[str, tuple[str, str]] = {
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
    return table.sort_values("mean |error|", ascending=False, kind="stable")


def build_estimate_experiment_report(
    experiment: EstimateExperiment | str | os.PathLike[str],
    *,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
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

    Returns
    -------
    str
        The HTML text.
    """
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
    section = _Section("estimate-summary", "Experiment findings")
    section.headline = (
        f"Leave-one-model-out on {params.get('input') or 'a matrix'}: each of {models} models "
        f"in turn is the new one and the others calibrate (rank {params.get('rank', 1)} fit); "
        f"{params.get('seeds', '?')} runs per model; intervals at {level:.0%}, anytime-valid."
    )
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
    if precision:
        if reach["reached"]:
            text = (
                f"Items to ±{precision:g}: median {reach['median_items']:,.0f} (mean "
                f"{reach['mean_items']:,.0f}) in the {reach['reached']} of {reach['runs']} runs "
                "that reached it."
            )
        else:
            text = f"Items to ±{precision:g}: not reached in any of {reach['runs']} runs."
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
    for line in record.warnings:
        section.findings.append({"text": f"Calibration fit {line}", "note": True})
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
    tables.tables.append(_table(by_budget, name="estimate-by-budget", caption="Per budget."))
    tables.tables.append(
        _table(
            per_model_table(runs, last),
            name="estimate-per-model",
            caption=f"Per held-out model after {last:,} items, worst error first.",
            download=True,
            limit=100,
        )
    )
    if len(missed):
        tables.tables.append(
            _table(
                missed,
                name="estimate-missed",
                caption="Runs whose interval missed the truth.",
                download=True,
                limit=100,
            )
        )
    return render_page([section, figures, tables], title or "latentbench estimate experiment", path)
