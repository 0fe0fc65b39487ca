"""The HTML page of a replay experiment: accuracy curves with bands, budgets, savings."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from latentbench.report import plots
from latentbench.report._blocks import _figure, _Section, _table, render_page

if TYPE_CHECKING:
    from latentbench.select import ExperimentRecord, ExperimentResult

__all__ = ["EXPERIMENT_SECTIONS", "build_experiment_report"]

EXPERIMENT_SECTIONS = ("experiment-summary", "experiment-curves", "experiment-table")
"""Ids of the sections of an experiment page."""


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _saving(row: dict[str, Any], name: str) -> str:
    value = row.get(name)
    if not _finite(value):
        return "-"
    se, lo, hi = (row.get(f"{name}_{k}") for k in ("se", "lo", "hi"))
    if not _finite(se):
        return f"{value:.1f} %"
    return f"{value:.1f} % ± {se:.1f} (95 % interval {lo:.1f} to {hi:.1f})"


def _record(experiment: ExperimentRecord | ExperimentResult | str | os.PathLike[str]) -> Any:
    from latentbench.select import ExperimentRecord, ExperimentResult

    if isinstance(experiment, ExperimentRecord):
        return experiment
    if isinstance(experiment, ExperimentResult):
        return ExperimentRecord.from_result(experiment)
    return ExperimentRecord.read(experiment)


def experiment_table(record: Any) -> pd.DataFrame:
    """Per pool and policy: measured top-two gap, budgets to 90 % and 95 % accuracy
    (post-init, bootstrap mean), cells at a certified stop when the runs stopped so, and the
    savings against the reference with their paired-bootstrap SE and interval."""
    rows = []
    for row in record.summary:
        gap = (record.pools.get(row["pool"]) or {}).get("top2_gap")
        out = {
            "pool": row["pool"],
            "top-2 gap": gap,
            "policy": row["policy"],
            "seeds": row.get("n_seeds"),
            "initial cells": row.get("init_evaluations"),
            "to 90 % (post-init)": row.get("budget_post_init_90"),
            "to 95 % (post-init)": row.get("budget_post_init"),
            "to 95 % SD": row.get("budget_post_init_sd"),
            "to 95 % (total)": row.get("budget_total"),
        }
        if "cells_at_stop_post_init" in row:
            out["cells at certified stop"] = row["cells_at_stop_post_init"]
            out["certified"] = row.get("certified_fraction")
            out["certified and right"] = row.get("certified_correct")
        out["saved post-init"] = _saving(row, "saved_post_init_pct")
        out["saved total"] = _saving(row, "saved_total_pct")
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

    Returns
    -------
    str
        The HTML text.
    """
    record = _record(experiment)
    params = record.params
    reference = params.get("reference")
    summary = _Section("experiment-summary", "Experiment findings")
    stop = params.get("stop", "budget")
    measure = (
        "mean cells at the certified stop"
        if stop == "confidence"
        else "cells to 95 % identification accuracy"
    )
    summary.headline = (
        f"{params.get('n_seeds', '?')} seeds per policy and pool; savings in {measure} against "
        f"{reference} (paired bootstrap over seeds: same initial cells for every policy)."
    )
    if params.get("seeds_asked"):
        summary.findings.append(
            {
                "text": f"Interrupted: {params.get('n_seeds')} of {params['seeds_asked']} seeds "
                "were completed by every pool and policy; every figure covers those.",
                "note": True,
            }
        )
    for row in record.summary:
        if reference is None or row["policy"] == reference:
            continue
        gap = (record.pools.get(row["pool"]) or {}).get("top2_gap")
        gap_text = f" (top-two gap {gap:.3f})" if _finite(gap) else ""
        summary.findings.append(
            {
                "text": f"Pool {row['pool']}{gap_text}: {row['policy']} saves "
                f"{_saving(row, 'saved_post_init_pct')} post-init, "
                f"{_saving(row, 'saved_total_pct')} in total.",
                "note": _finite(row.get("saved_post_init_hi")) and row["saved_post_init_hi"] < 0,
            }
        )
    batch, init = params.get("batch_size"), params.get("init_batch")
    summary.findings.append(
        {
            "text": f"Schedule: {batch} cells per round, {init} initial cells per model; budget "
            f"{params.get('budget')} post-init cells per run; stop: {stop}."
        }
    )
    curves = _Section(
        "experiment-curves",
        "Identification accuracy over evaluations",
        "The fraction of seeds whose recommendation is the true best, against the cells spent "
        "after the initial batch; bands are pointwise 95 % (binomial SE over seeds); dotted "
        "lines at 90 % and 95 %.",
    )

    def draw(pool: str) -> Callable[[Any], Any]:
        return lambda ax: plots.plot_experiment_curves(record.curves, pool, ax)

    for pool in dict.fromkeys(record.curves["pool"].astype(str)):
        curves.figures.append(
            {
                "png": _figure(draw(pool)),
                "alt": f"accuracy curves of pool {pool}",
            }
        )
    table = _Section("experiment-table", "Budgets and savings")
    table.tables.append(_table(experiment_table(record), name="experiment-summary"))
    return render_page([summary, curves, table], title or "latentbench experiment report", path)
