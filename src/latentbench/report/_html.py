"""Self-contained HTML reports for fits and selection runs (jinja2, autoescaped)."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from jinja2 import Environment, FileSystemLoader
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from latentbench.exceptions import InputError
from latentbench.report import plots

__all__ = ["build_report"]

TEMPLATES = Path(__file__).parent / "templates"

#: ids of the sections a fit report has (with a matrix: all; without: the first four)
FIT_SECTIONS = (
    "summary",
    "abilities",
    "rank-shifts",
    "items",
    "flagged-items",
    "item-curves",
    "rank-agreement",
    "duplicates",
)
SELECTION_SECTIONS = ("selection-summary", "selection-intervals", "selection-evaluations")


@dataclass
class _Table:
    columns: list[str]
    rows: list[list[dict[str, str]]]
    total: int
    caption: str = ""


@dataclass
class _Section:
    id: str
    title: str
    text: str = ""
    figures: list[dict[str, str]] = field(default_factory=list)
    tables: list[_Table] = field(default_factory=list)


def _figure(draw: Callable[[Axes], Any], size: tuple[float, float] = (7.0, 4.6)) -> str:
    """Render ``draw(ax)`` on an Agg figure (no pyplot); return base64 PNG."""
    fig = Figure(figsize=size, layout="constrained")
    ax = fig.add_subplot()
    draw(ax)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _cell(value: Any) -> dict[str, str]:
    if isinstance(value, (bool, np.bool_)):
        return {"text": "yes" if value else "", "sort": "1" if value else "0"}
    if isinstance(value, (int, np.integer)):
        return {"text": str(int(value)), "sort": str(int(value))}
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return {"text": "", "sort": ""}
        if math.isinf(v):
            return {"text": str(v), "sort": "1e308" if v > 0 else "-1e308"}
        text = f"{v:.3g}" if (v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e4)) else f"{v:.3f}"
        return {"text": text, "sort": repr(v)}
    return {"text": "" if value is None else str(value), "sort": ""}


def _table(frame: pd.DataFrame, limit: int | None = None, caption: str = "") -> _Table:
    total = len(frame)
    shown = frame if limit is None else frame.head(limit)
    rows = [[_cell(v) for v in row] for row in shown.itertuples(index=False, name=None)]
    if limit is not None and total > limit:
        caption = (caption + " " if caption else "") + f"(showing {limit} of {total} rows)"
    return _Table([str(c) for c in frame.columns], rows, total, caption)


def _order_line(ranks: pd.DataFrame, limit: int) -> str:
    """``A > B ~ C > D`` for the best ``limit`` models (``~``: tied with the next)."""
    ordered = ranks.sort_values("rank").head(limit)
    parts: list[str] = []
    for row in ordered.itertuples():
        parts.append(str(row.model))
        parts.append("~" if row.tied_with_next else ">")
    line = " ".join(parts[:-1]) if parts else ""
    return line + (" ..." if len(ranks) > limit else "")


def _fit_sections(
    result: Any, matrix: Any | None, top: int, n_curves: int, boot: Any | None = None
) -> tuple[list[_Section], dict[str, Any]]:
    from latentbench.irt.diagnostics import diagnose, rank_agreement, rank_changes
    from latentbench.irt.inference import normal_draws, rank_intervals, standard_errors

    sections: list[_Section] = []
    info = {
        "models": result.shape[0],
        "items": result.shape[1],
        "observed cells": result.n_observed,
        "rank": result.rank,
        "sigma": result.sigma,
        "ridge l2": result.options.get("l2"),
        "loss": result.loss,
        "sweeps": result.n_iter,
        "converged": result.converged,
    }
    summary = _Section(
        "summary",
        "Summary",
        "Abilities are on the fit's reporting scale: mean 0, sd 1 over the fitted models.",
    )
    summary.tables.append(
        _table(pd.DataFrame({"quantity": list(info), "value": [str(v) for v in info.values()]}))
    )
    sections.append(summary)

    abilities = result.abilities.copy()
    diag = None
    if matrix is not None:
        unc = standard_errors(result, matrix)
        if boot is not None and boot.theta is not None:
            intervals = boot.abilities()
            ranks = boot.rank_intervals()
            text = (
                f"{int(boot.level * 100)}% basic bootstrap intervals ({boot.method} "
                f"bootstrap, {boot.n_boot} replicates); rank intervals from the same draws. "
            )
        else:
            intervals = unc.abilities
            draws = normal_draws(intervals["theta"], intervals["se"], 2000, 0)
            ranks = rank_intervals(draws, result.model_ids, estimate=result.U[:, 0])
            text = (
                f"{int(unc.level * 100)}% intervals from the observed information "
                f"(block-diagonal, normalisation and reporting-scale corrections, k = "
                f"{unc.scale_factor:.4f}); rank intervals from normal draws around them. "
            )
        text += "'tied_with_next': not significantly better than the next model. "
        text += "Order of the top models ('>' significant, '~' tied): " + _order_line(
            ranks, limit=min(top, 15)
        )
        table = pd.DataFrame(
            {
                "model": abilities["model"],
                "theta": abilities["theta"],
                "se": intervals["se"],
                "lower": intervals["lower"],
                "upper": intervals["upper"],
                "rank": abilities["rank_theta"],
                "rank_lower": ranks["rank_lower"],
                "rank_upper": ranks["rank_upper"],
                "tied_with_next": ranks["tied_with_next"],
                "accuracy": abilities["accuracy"],
                "rank_accuracy": abilities["rank_accuracy"],
            }
        )
        diag = diagnose(result, matrix, top=min(top, 10))
    else:
        table = abilities[["model", "theta", "rank_theta", "accuracy", "rank_accuracy"]]
        intervals = None
        text = "No response matrix was given: no standard errors (pass the responses)."
    section = _Section("abilities", "Abilities", text)
    if intervals is not None:
        section.figures.append(
            {
                "png": _figure(
                    lambda ax: plots.plot_abilities(intervals, ax, top=top),
                    (7.0, max(3.0, 0.22 * min(top, len(intervals)) + 1.4)),
                ),
                "alt": "abilities with intervals",
            }
        )
    section.tables.append(_table(table.sort_values("theta", ascending=False)))
    sections.append(section)

    movers = diag.rank_changes if diag is not None else rank_changes(result)
    section = _Section(
        "rank-shifts",
        "Ability vs accuracy: rank shifts",
        "rank_shift = accuracy rank - ability rank (positive: the ability ranks the model "
        "higher). 'significant': the accuracy rank lies outside the ability-rank interval.",
    )
    section.figures.append(
        {"png": _figure(lambda ax: plots.plot_ability_accuracy(result, ax)), "alt": "rank shifts"}
    )
    section.tables.append(_table(movers, limit=top, caption="Models whose rank moves most"))
    sections.append(section)

    flagged = diag.items["flagged"].to_numpy() if diag is not None else None
    section = _Section("items", "Items", "Discrimination a against difficulty -b.")
    section.figures.append(
        {
            "png": _figure(lambda ax: plots.plot_item_map(result, ax, flagged=flagged)),
            "alt": "item map",
        }
    )
    counts = {
        "items": len(result.items),
        "constant": int(result.items["constant"].sum()),
        "zero discrimination": int(result.items["zero_discrimination"].sum()),
    }
    if diag is not None:
        counts.update(
            {
                "uninformative": int(diag.items["uninformative"].sum()),
                "poor fit": int(diag.items["poor_fit"].sum()),
                "duplicates": int((diag.items["duplicate_of"] != "").sum()),
                "flagged (any)": int(diag.items["flagged"].sum()),
            }
        )
    section.tables.append(
        _table(pd.DataFrame({"flag": list(counts), "items": list(counts.values())}))
    )
    sections.append(section)

    if diag is not None:
        flagged_items = diag.flagged_items.copy()
        flagged_items["n_flags"] = flagged_items[["uninformative", "constant", "poor_fit"]].sum(
            axis=1
        ) + (flagged_items["duplicate_of"] != "")
        flagged_items = flagged_items.sort_values(
            ["poor_fit", "n_flags", "discrimination"], ascending=[False, False, True]
        )
        section = _Section(
            "flagged-items",
            "Flagged items",
            "uninformative: a below 0.1 or not significantly above 0 (one-sided 5%); "
            "poor_fit: grouped chi-square (Yen's Q1 type), Benjamini-Hochberg q <= 0.05; "
            "duplicate_of: near-identical responses beyond what the model explains "
            "(Bonferroni over candidate pairs); constant: one observed value.",
        )
        section.tables.append(_table(flagged_items, limit=300))
        sections.append(section)

        chosen = list(diag.items.loc[diag.items["poor_fit"], "item"][: n_curves // 2])
        by_a = result.items.sort_values("discrimination", ascending=False)["item"]
        for item in list(by_a.head(2)) + list(by_a.tail(1)):
            if len(chosen) < n_curves and item not in chosen:
                chosen.append(item)
        section = _Section(
            "item-curves",
            "Item characteristic curves",
            "Poorly fitting items first, then the most and least discriminating.",
        )
        section.figures.append(
            {
                "png": _figure(lambda ax: plots.plot_item_curves(result, chosen, ax)),
                "alt": "item characteristic curves",
            }
        )
        sections.append(section)

    agreement = diag.rank_agreement if diag is not None else rank_agreement(result, top=10)
    section = _Section(
        "rank-agreement",
        "Rank agreement of accuracy and ability",
        "Spearman and Kendall correlations, all models and the top models by ability.",
    )
    section.tables.append(_table(agreement))
    sections.append(section)

    if diag is not None:
        section = _Section(
            "duplicates",
            "Near-duplicate items",
            "Candidate pairs (agreement >= 0.95), most significant first; 'duplicate' "
            "after the Bonferroni correction.",
        )
        section.tables.append(_table(diag.duplicates, limit=50))
        sections.append(section)
    return sections, info


def _category_sections(result: Any, matrix: Any | None, meta: pd.DataFrame) -> list[_Section]:
    """Per category column of the item metadata: items, mean proportion correct, median
    discrimination, and (with the matrix) the best model on the category's items."""
    from latentbench.report._metadata import category_columns

    items = result.items
    correct = "proportion_correct" if "proportion_correct" in items.columns else "p_value"
    lookup = meta.set_index("item")
    matched = int(items["item"].isin(lookup.index).sum())
    text = (
        f"{matched:,} of {len(items):,} fitted items have metadata. Per category: items, mean "
        "proportion correct over models, median discrimination"
        + (", and the model with the highest accuracy on its items." if matrix is not None else ".")
    )
    section = _Section("categories", "Results by category", text)
    for column in category_columns(meta):
        category = items["item"].map(lookup[column]).astype(object)
        frame = pd.DataFrame(
            {
                column: category.fillna("(no metadata)").astype(str),
                "proportion_correct": items[correct].to_numpy(float),
                "discrimination": items["discrimination"].to_numpy(float),
            }
        )
        table = (
            frame.groupby(column, sort=True)
            .agg(
                items=("proportion_correct", "size"),
                mean_proportion_correct=("proportion_correct", "mean"),
                median_discrimination=("discrimination", "median"),
            )
            .reset_index()
        )
        if matrix is not None:
            scores = np.asarray(matrix.scores, dtype=float)
            ids = np.array(matrix.model_ids)
            codes = frame[column].to_numpy()
            best, best_acc = [], []
            for value in table[column]:
                block = scores[:, codes == value]
                observed = ~np.isnan(block)
                acc = np.where(observed, block, 0.0).sum(1) / np.maximum(observed.sum(1), 1)
                acc[observed.sum(1) == 0] = np.nan
                k = int(np.nanargmax(acc)) if np.isfinite(acc).any() else -1
                best.append(ids[k] if k >= 0 else "")
                best_acc.append(acc[k] if k >= 0 else np.nan)
            table["best_model"] = best
            table["best_accuracy"] = best_acc
        section.tables.append(
            _table(table.sort_values("items", ascending=False), caption=f"by {column}")
        )
    return [section]


def _selection_sections(selection: Any, top: int) -> tuple[list[_Section], dict[str, Any]]:
    arms, trace = plots.selection_frame(selection)
    data = selection.to_dict(trace=False) if hasattr(selection, "to_dict") else dict(selection)
    info = {
        key: data.get(key)
        for key in (
            "policy",
            "best_model",
            "evaluations_post_init",
            "evaluations_init",
            "evaluations_total",
            "rounds",
            "stopped",
            "seconds",
        )
        if key in data
    }
    info["models"] = len(arms)
    sections = []
    summary = _Section("selection-summary", "Selection summary")
    summary.tables.append(
        _table(pd.DataFrame({"quantity": list(info), "value": [str(v) for v in info.values()]}))
    )
    sections.append(summary)
    has_bounds = "lower" in trace and "upper" in trace
    section = _Section(
        "selection-intervals",
        "Intervals over evaluations",
        "Per-round intervals of the leading models."
        if has_bounds
        else "The run recorded no per-round bounds: recommended model after each round, and "
        "the final intervals.",
    )
    section.figures.append(
        {
            "png": _figure(lambda ax: plots.plot_selection_intervals(selection, ax, top=8)),
            "alt": "interval trajectories",
        }
    )
    if {"lower", "upper"} <= set(arms.columns):
        section.figures.append(
            {
                "png": _figure(
                    lambda ax: plots.plot_abilities(
                        arms, ax, top=top, estimate="estimate", title="Final intervals"
                    ),
                    (7.0, max(3.0, 0.22 * min(top, len(arms)) + 1.4)),
                ),
                "alt": "final intervals",
            }
        )
    sections.append(section)
    section = _Section("selection-evaluations", "Evaluations per model")
    section.figures.append(
        {
            "png": _figure(
                lambda ax: plots.plot_selection_evaluations(selection, ax, top=top),
                (7.0, max(3.0, 0.22 * min(top, len(arms)) + 1.4)),
            ),
            "alt": "evaluations per model",
        }
    )
    section.tables.append(_table(arms.sort_values("estimate", ascending=False)))
    sections.append(section)
    return sections, info


def build_report(
    result: Any | None = None,
    matrix: Any | None = None,
    *,
    selection: Any | None = None,
    path: str | Path | None = None,
    title: str | None = None,
    top: int = 30,
    n_curves: int = 6,
    bootstrap: Any | None = None,
    item_metadata: pd.DataFrame | None = None,
) -> str:
    """Build one self-contained HTML page for a fit and/or a selection run.

    Figures are embedded as base64 PNG; tables sort on a header click (a small inline script,
    no network). Every name from the inputs (models, items, policies) is HTML-escaped.

    Parameters
    ----------
    result : IRTResult, optional
        A fit. With ``matrix`` the page has standard errors, rank intervals and diagnostics
        (sections ``summary``, ``abilities``, ``rank-shifts``, ``items``, ``flagged-items``,
        ``item-curves``, ``rank-agreement``, ``duplicates``); without it, the first four and
        ``rank-agreement``.
    matrix : ResponseMatrix, optional
        The matrix the fit used.
    selection : SelectionResult or dict, optional
        A selection run (or the dict of its ``selection.json``); adds sections
        ``selection-summary``, ``selection-intervals``, ``selection-evaluations``.
    path : str or Path, optional
        Also write the page there.
    title : str, optional
    top : int, default 30
        Rows / models shown in figures and the longer tables.
    n_curves : int, default 6
        Item characteristic curves drawn.
    bootstrap : BootstrapResult, optional
        With ability draws (``"parametric"`` or ``"items"``), the ability and rank intervals
        come from it instead of the plug-in standard errors.
    item_metadata : DataFrame, optional
        An ``item`` column and category columns (see
        :func:`~latentbench.report.read_item_metadata`); adds section ``categories``: per
        category the items, mean proportion correct, discrimination, flags and the best model.

    Returns
    -------
    str
        The HTML text.
    """
    if result is None and selection is None:
        raise InputError("build_report needs a fit result, a selection run, or both")
    sections: list[_Section] = []
    facts: dict[str, Any] = {}
    if result is not None:
        s, facts = _fit_sections(result, matrix, top, n_curves, bootstrap)
        sections += s
        if item_metadata is not None:
            sections += _category_sections(result, matrix, item_metadata)
    if selection is not None:
        s, info = _selection_sections(selection, top)
        sections += s
        facts = facts or info
    from latentbench import __version__

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    html = env.get_template("report.html.j2").render(
        title=title or "latentbench report",
        sections=sections,
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
    )
    if path is not None:
        Path(path).write_text(html, encoding="utf-8")
    return html


def section_ids(html: str) -> Sequence[str]:
    """Section ids present in a report (for tests and tools)."""
    import re

    return re.findall(r'<section id="([^"]+)"', html)
