"""Self-contained HTML reports for fits and selection runs (jinja2, autoescaped)."""

from __future__ import annotations

import base64
import io
import json
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

#: ids of the sections a fit report has (with a matrix: all; without: findings, abilities,
#: rank-shifts, items, rank-agreement and summary)
FIT_SECTIONS = (
    "findings",
    "abilities",
    "rank-shifts",
    "items",
    "flagged-items",
    "item-curves",
    "rank-agreement",
    "duplicates",
    "summary",
)
SELECTION_SECTIONS = ("selection-summary", "selection-intervals", "selection-evaluations")


@dataclass
class _Table:
    columns: list[str]
    rows: list[list[dict[str, str]]]
    total: int
    caption: str = ""
    name: str = "table"
    download: str = ""


@dataclass
class _Section:
    id: str
    title: str
    text: str = ""
    figures: list[dict[str, str]] = field(default_factory=list)
    tables: list[_Table] = field(default_factory=list)
    plots: list[dict[str, str]] = field(default_factory=list)
    headline: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)


_PLOT_IDS = iter(range(1, 1 << 30))


def _plot(spec: dict[str, Any]) -> dict[str, str]:
    """An interactive canvas plot: the spec as JSON that is safe inside a <script> element."""
    text = json.dumps(spec, allow_nan=False, separators=(",", ":"), default=_json_default)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return {"id": f"plot-{next(_PLOT_IDS)}", "json": text}


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _finite(values: Any, digits: int = 4) -> list[float | None]:
    """Floats rounded for the page, None for NaN / inf (JSON has no NaN)."""
    array = np.asarray(values, dtype=float)
    out = np.round(array, digits).tolist()
    return [v if math.isfinite(v) else None for v in out]


def _num(value: Any) -> str:
    """A number for prose: 12,032 / 0.402 / 1.91."""
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    v = float(value)
    if not math.isfinite(v):
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}" if abs(v) < 0.01 and v != 0 else f"{v:.2f}"


def _csv_base64(frame: pd.DataFrame) -> str:
    """A table as base64 CSV for a data: download link (cells that a spreadsheet would run as
    formulas get a leading apostrophe)."""
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object or pd.api.types.is_string_dtype(safe[column]):
            text = safe[column].astype(str)
            risky = text.str.match(r"^[=+\-@\t\r]") & pd.to_numeric(text, errors="coerce").isna()
            safe[column] = text.where(~risky, "'" + text)
    return base64.b64encode(safe.to_csv(index=False).encode("utf-8")).decode("ascii")


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
    text = "" if value is None else str(value)
    if len(text) > 48:
        return {"text": text[:45] + "...", "sort": "", "title": text}
    return {"text": text, "sort": ""}


def _table(
    frame: pd.DataFrame,
    limit: int | None = None,
    caption: str = "",
    name: str = "table",
    download: bool = False,
) -> _Table:
    total = len(frame)
    shown = frame if limit is None else frame.head(limit)
    rows = [[_cell(v) for v in row] for row in shown.itertuples(index=False, name=None)]
    if limit is not None and total > limit:
        caption = (caption + " " if caption else "") + f"(showing {limit:,} of {total:,} rows)"
    data = _csv_base64(frame) if download and total > len(shown) else ""
    return _Table([str(c) for c in frame.columns], rows, total, caption, name, data)


def _order_line(ranks: pd.DataFrame, limit: int) -> str:
    """``A > B ~ C > D`` for the best ``limit`` models (``~``: tied with the next)."""
    ordered = ranks.sort_values("rank").head(limit)
    parts: list[str] = []
    for row in ordered.itertuples():
        parts.append(str(row.model))
        parts.append("~" if row.tied_with_next else ">")
    line = " ".join(parts[:-1]) if parts else ""
    return line + (" ..." if len(ranks) > limit else "")


#: severity order of the item flags (1 = act first) and what each means
FLAG_SEVERITY = {
    "constant": (1, "drop", "one observed value: says nothing about differences between models"),
    "duplicate": (2, "drop one of the pair", "answers near-identical to another item"),
    "poor_fit": (
        3,
        "review",
        "responses do not follow the fitted curve (q <= 0.05): check the key and wording",
    ),
    "uninformative": (
        4,
        "advisory",
        "discrimination not distinguishable from 0 with this many models",
    ),
}


def _item_flags(diag: Any) -> pd.DataFrame:
    """Flagged items with their most severe flag, the action and the reason, most severe first
    (within a severity: lowest discrimination first)."""
    items = diag.flagged_items.copy()
    masks = {
        "constant": items["constant"].to_numpy(bool),
        "duplicate": (items["duplicate_of"] != "").to_numpy(bool),
        "poor_fit": items["poor_fit"].to_numpy(bool),
        "uninformative": items["uninformative"].to_numpy(bool),
    }
    severity = np.full(len(items), 9)
    flag = np.full(len(items), "", dtype=object)
    for name in reversed(list(FLAG_SEVERITY)):  # the most severe flag wins
        severity = np.where(masks[name], FLAG_SEVERITY[name][0], severity)
        flag = np.where(masks[name], name, flag)
    items.insert(1, "severity", severity)
    items.insert(2, "flag", flag)
    items.insert(3, "action", [FLAG_SEVERITY[f][1] if f else "" for f in flag])
    items["n_flags"] = sum(m.astype(int) for m in masks.values())
    reason = np.array([FLAG_SEVERITY[f][2] if f else "" for f in flag], dtype=object)
    dup = masks["duplicate"]
    reason[dup] = "answers near-identical to item " + items.loc[dup, "duplicate_of"].astype(str)
    items["reason"] = reason
    return items.sort_values(["severity", "discrimination"], ascending=[True, True]).reset_index(
        drop=True
    )


def _findings(
    result: Any, ranks: pd.DataFrame | None, movers: pd.DataFrame, diag: Any | None, level: float
) -> tuple[str, list[dict[str, Any]]]:
    """The headline and the bullet findings of a fit."""
    out: list[dict[str, Any]] = []
    ab = result.abilities
    n_models, n_items = result.shape
    leader = ab.sort_values("theta", ascending=False).iloc[0]
    headline = f"{leader['model']} leads {n_models:,} models on {n_items:,} items"
    if ranks is not None:
        ordered = ranks.sort_values("rank").reset_index(drop=True)
        top = ordered.iloc[0]
        contenders = ranks[ranks["rank_lower"] <= 1]
        contenders = contenders[contenders["model"] != top["model"]]
        if top["rank_upper"] <= 1 and len(contenders) == 0:
            headline += ", statistically separated from the rest."
            out.append(
                {
                    "text": f"Leader: {top['model']} ranks first with a {int(level * 100)}% rank "
                    f"interval of [1, 1]: no other model could plausibly be best."
                }
            )
        else:
            names = ", ".join(map(str, contenders["model"].head(6)))
            more = f" and {len(contenders) - 6} more" if len(contenders) > 6 else ""
            headline += ", but is not statistically separated from the next."
            out.append(
                {
                    "text": f"Leader: {top['model']} ranks first, but its {int(level * 100)}% rank "
                    f"interval is [{int(top['rank_lower'])}, {int(top['rank_upper'])}]: "
                    f"{len(contenders)} other model(s) could also be best ({names}{more})."
                }
            )
        k = min(10, len(ordered))
        tied = int(ordered["tied_with_next"].head(k - 1).sum()) if k > 1 else 0
        out.append(
            {
                "text": f"Ties: among the top {k}, {tied} of {k - 1} adjacent pairs are not "
                "significantly different ('~' in the ability order below); differences "
                "there are within noise."
            }
        )
    else:
        headline += "."
        out.append(
            {
                "text": "Standard errors, rank intervals and item flags were not computed: the "
                "report had no responses (pass --responses FILE, or keep the file that fit.json "
                "records).",
                "note": True,
            }
        )
    if len(movers):
        big = movers.reindex(movers["rank_shift"].abs().sort_values(ascending=False).index)
        big = big[big["rank_shift"] != 0].head(3)
        if len(big):
            parts = []
            for row in big.to_dict("records"):
                shift = int(row["rank_shift"])
                by_accuracy, by_theta = int(row["rank_accuracy"]), int(row["rank_theta"])
                sign = "up" if shift > 0 else "down"
                tag = " (significant)" if row.get("significant") is True else ""
                parts.append(
                    f"{row['model']} {sign} {abs(shift)} "
                    f"(accuracy #{by_accuracy} -> ability #{by_theta}){tag}"
                )
            out.append(
                {"text": "Largest rank shifts, ability vs accuracy: " + "; ".join(parts) + "."}
            )
    if diag is not None:
        items = diag.items
        constant = int(items["constant"].sum())
        duplicate = int((items["duplicate_of"] != "").sum())
        poor = int(items["poor_fit"].sum())
        weak = int(items["uninformative"].sum())
        drop = int((items["constant"] | (items["duplicate_of"] != "")).sum())
        out.append(
            {
                "text": f"Items to drop: {drop:,} of {n_items:,} ({constant:,} constant: every "
                f"model scored the same; {duplicate:,} duplicates of another item). Items to "
                f"review: {poor:,} fit the model poorly (q <= 0.05)."
            }
        )
        if weak:
            out.append(
                {
                    "text": f"Weakly informative: {weak:,} items ({weak / n_items:.0%}) have a "
                    f"discrimination not distinguishable from 0 with {n_models:,} models. This "
                    "is advisory: with few models even useful items cannot be shown to "
                    "discriminate; it is not a reason to drop them on its own.",
                    "note": weak / n_items > 0.25,
                }
            )
    return headline, out


def _fit_sections(
    result: Any,
    matrix: Any | None,
    top: int,
    n_curves: int,
    boot: Any | None = None,
    notes: Sequence[str] = (),
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
    findings = _Section("findings", "Findings")
    sections.append(findings)

    abilities = result.abilities.copy()
    diag = None
    ranks = None
    level = 0.95
    if matrix is not None:
        unc = standard_errors(result, matrix)
        level = unc.level
        if boot is not None and boot.theta is not None:
            intervals = boot.abilities()
            ranks = boot.rank_intervals()
            level = boot.level
            text = (
                f"{int(boot.level * 100)}% basic bootstrap intervals ({boot.method} "
                f"bootstrap, {boot.n_boot} replicates); rank intervals from the same draws. "
            )
        else:
            intervals = unc.abilities
            draws = normal_draws(intervals["theta"].to_numpy(), intervals["se"].to_numpy(), 2000, 0)
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
    order = np.argsort(-abilities["theta"].to_numpy(float), kind="stable")
    spec: dict[str, Any] = {
        "title": "Abilities (theta), best first",
        "x_label": "ability theta"
        + (f" with {int(level * 100)}% interval" if intervals is not None else ""),
        "y_label": "rank by ability",
        "x": _finite(abilities["theta"].to_numpy(float)[order]),
        "y": list(range(1, len(order) + 1)),
        "name": [str(m) for m in abilities["model"].to_numpy()[order]],
        "info": [
            f"theta {t:.2f}, accuracy {a:.3f}"
            for t, a in zip(
                abilities["theta"].to_numpy(float)[order],
                abilities["accuracy"].to_numpy(float)[order],
                strict=True,
            )
        ],
        "flip_y": True,
        "height": int(min(640, max(300, 14 * len(order) + 80))),
        "labels": list(range(min(5, len(order)))),
    }
    if intervals is not None:
        spec["lo"] = _finite(intervals["lower"].to_numpy(float)[order])
        spec["hi"] = _finite(intervals["upper"].to_numpy(float)[order])
    section.plots.append(_plot(spec))
    section.tables.append(_table(table.sort_values("theta", ascending=False), name="abilities"))
    sections.append(section)

    movers = diag.rank_changes if diag is not None else rank_changes(result)
    section = _Section(
        "rank-shifts",
        "Ability vs accuracy: rank shifts",
        "rank_shift = accuracy rank - ability rank (positive: the ability ranks the model "
        "higher). 'significant': the accuracy rank lies outside the ability-rank interval. "
        "Hover a point for its name; the five largest moves are labelled.",
    )
    shift = abilities["rank_shift"].to_numpy()
    moved = np.argsort(-np.abs(shift), kind="stable")[:5]
    section.plots.append(
        _plot(
            {
                "title": "Ability against accuracy",
                "x_label": "accuracy (mean observed score)",
                "y_label": "ability theta",
                "x": _finite(abilities["accuracy"]),
                "y": _finite(abilities["theta"]),
                "name": [str(m) for m in abilities["model"]],
                "info": [
                    f"accuracy #{int(a)} -> ability #{int(t)} (shift {int(d):+d})"
                    for a, t, d in zip(
                        abilities["rank_accuracy"], abilities["rank_theta"], shift, strict=True
                    )
                ],
                "group": [
                    1 if i in set(moved.tolist()) and shift[i] != 0 else 0
                    for i in range(len(shift))
                ],
                "groups": [
                    {"label": "model", "color": "#1f77b4"},
                    {"label": "largest rank shift", "color": "#d62728"},
                ],
                "labels": [int(i) for i in moved if shift[i] != 0],
            }
        )
    )
    section.tables.append(
        _table(movers, limit=top, caption="Models whose rank moves most", name="rank-shifts")
    )
    sections.append(section)

    items = result.items
    correct = "proportion_correct"
    flagged = diag.items["flagged"].to_numpy() if diag is not None else None
    a = items["discrimination"].to_numpy(float)
    location = np.where(a > 0, items["difficulty"].to_numpy(float) / np.where(a > 0, a, 1), np.nan)
    # with N models the proportion correct takes N + 1 values: spread each column a little
    n_models = max(result.shape[0], 1)
    jitter = np.random.default_rng(0).uniform(-0.3, 0.3, len(items)) / n_models
    section = _Section(
        "items",
        "Items",
        "Item map: each point is an item, proportion of models answering it correctly against "
        "its discrimination a (how sharply it separates stronger from weaker models); the "
        "proportion is jittered by at most 0.3/N (N models) so that items do not stack. "
        + ("Flagged items are red. " if flagged is not None else "")
        + "Hover for the item id; zoom into dense regions. The location -b/a (the ability at "
        "which a model has a 50% chance) is in items.csv; it is undefined (NaN) where a = 0.",
    )
    section.plots.append(
        _plot(
            {
                "title": f"Item map ({len(items):,} items)",
                "x_label": "proportion correct",
                "y_label": "discrimination a",
                "x": _finite(items[correct].to_numpy(float) + jitter),
                "y": _finite(a),
                "name": [str(i) for i in items["item"]],
                "info": [
                    f"a {ai:.2f}, location {'-' if not math.isfinite(li) else f'{li:.2f}'}, "
                    f"correct {pi:.2f}"
                    for ai, li, pi in zip(a, location, items[correct].to_numpy(float), strict=True)
                ],
                "group": [] if flagged is None else [int(f) for f in flagged],
                "groups": [{"label": "item", "color": "#1f77b4"}]
                + ([] if flagged is None else [{"label": "flagged", "color": "#d62728"}]),
                "radius": 2.5 if len(items) > 2000 else 3,
                "alpha": 0.5 if len(items) > 2000 else 0.75,
            }
        )
    )
    if diag is None or flagged is None:
        section.plots[-1]["json"] = section.plots[-1]["json"].replace('"group":[],', "")
    counts: dict[str, Any] = {
        "items": len(items),
        "constant": int(items["constant"].sum()),
        "zero discrimination": int(items["zero_discrimination"].sum()),
    }
    if diag is not None:
        counts.update(
            {
                "duplicates (significant)": int((diag.items["duplicate_of"] != "").sum()),
                "poor fit": int(diag.items["poor_fit"].sum()),
                "uninformative (advisory)": int(diag.items["uninformative"].sum()),
                "flagged (any)": int(diag.items["flagged"].sum()),
            }
        )
    section.tables.append(
        _table(
            pd.DataFrame({"flag": list(counts), "items": list(counts.values())}), name="item-flags"
        )
    )
    sections.append(section)

    if diag is not None:
        flagged_items = _item_flags(diag)
        n_models = result.shape[0]
        section = _Section(
            "flagged-items",
            "Flagged items",
            "Most severe first: 1 constant (drop), 2 duplicate (drop one of the pair), 3 poor "
            "fit (review: grouped chi-square, Yen's Q1 type, Benjamini-Hochberg q <= 0.05), 4 "
            f"uninformative (advisory: a below 0.1 or not significantly above 0, one-sided 5%; "
            f"with {n_models:,} models many sound items cannot be shown to discriminate). "
            "Within a severity, lowest discrimination first.",
        )
        section.tables.append(_table(flagged_items, limit=300, name="flagged-items", download=True))
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
    section.tables.append(_table(agreement, name="rank-agreement"))
    sections.append(section)

    if diag is not None:
        pairs = diag.duplicates
        n_sig = int(pairs["duplicate"].sum()) if "duplicate" in pairs.columns else 0
        section = _Section(
            "duplicates",
            "Near-duplicate items",
            f"{len(pairs):,} candidate pairs answered alike by at least 95% of models; "
            f"{n_sig:,} of them are flagged as duplicates ('duplicate': more agreement than "
            "the fitted model explains, Bonferroni over candidate pairs). Identical answers "
            "('identical: yes') are expected for very easy or very hard items and are not by "
            "themselves evidence of a duplicate.",
        )
        section.tables.append(_table(pairs, limit=50, name="near-duplicates", download=True))
        sections.append(section)

    summary = _Section(
        "summary",
        "Fit details",
        "Abilities are on the fit's reporting scale: mean 0, sd 1 over the fitted models.",
    )
    summary.tables.append(
        _table(
            pd.DataFrame({"quantity": list(info), "value": [_value(v) for v in info.values()]}),
            name="fit-details",
        )
    )
    sections.append(summary)

    findings.headline, findings.findings = _findings(result, ranks, movers, diag, level)
    findings.findings += [{"text": note, "note": True} for note in notes]
    return sections, info


def _value(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return _num(value)
    return str(value)


def _category_sections(result: Any, matrix: Any | None, meta: pd.DataFrame) -> list[_Section]:
    """Per category column of the item metadata: items, mean proportion correct, median
    discrimination, and (with the matrix) the best model on the category's items."""
    from latentbench.report._metadata import category_columns

    items = result.items
    correct = "proportion_correct"
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


def _selection_findings(
    data: dict[str, Any], arms: pd.DataFrame
) -> tuple[str, list[dict[str, Any]]]:
    """Headline and findings of a selection run (a selection.json dict)."""
    out: list[dict[str, Any]] = []
    ranked = arms.sort_values("estimate", ascending=False).reset_index(drop=True)
    best = ranked.iloc[0]
    name = data.get("best_model", best["model"])
    matching = arms[arms["model"].astype(str) == str(name)]
    row = matching.iloc[0] if len(matching) else best
    has_bounds = {"lower", "upper"} <= set(arms.columns) and arms["lower"].notna().all()
    headline = f"Best model: {name} (estimate {_num(row['estimate'])}"
    if has_bounds:
        headline += f", interval [{_num(row['lower'])}, {_num(row['upper'])}]"
        others = arms[arms["model"].astype(str) != str(name)]
        overlap = int((others["upper"] >= row["lower"]).sum())
        if overlap == 0:
            out.append(
                {
                    "text": "Certified: the best model's lower bound exceeds every other "
                    "model's upper bound (simultaneous anytime-valid intervals)."
                }
            )
        else:
            out.append(
                {
                    "text": f"Not certified: {overlap} other model(s) have intervals reaching the "
                    "best model's lower bound, so the data do not yet rule them out; a larger "
                    "budget (or --stop confidence) would separate them.",
                    "note": True,
                }
            )
    headline += ")."
    total = int(data.get("evaluations_total") or arms["n_observed"].sum())
    n_models = len(arms)
    params = data.get("params") or {}
    live = data.get("live_run") or {}
    n_items = params.get("n_items") or (live.get("config") or {}).get("n_items")
    text = f"Evaluations: {total:,} cells"
    if data.get("evaluations_init") is not None:
        text += f" ({int(data['evaluations_init']):,} in the initial batch)"
    if n_items:
        full = n_models * int(n_items)
        text += (
            f", {total / full:.1%} of a full evaluation ({n_models:,} models x "
            f"{int(n_items):,} items = {full:,} cells): {1 - total / full:.1%} saved."
        )
    else:
        text += "."
    out.append({"text": text})
    leader_n = int(float(row["n_observed"]))
    out.append(
        {
            "text": f"Baseline: spread evenly, the same {total:,} cells would give every model "
            f"{total / max(n_models, 1):,.0f}; the policy gave the best model {leader_n:,} "
            "and spent little on clearly weaker ones (see 'Evaluations per model')."
        }
    )
    history = params.get("history") or data.get("history")
    if isinstance(history, dict):
        parts = ", ".join(f"{k}: {v}" for k, v in history.items() if not isinstance(v, list))
        out.append({"text": f"History (learns the proxy, not candidates): {parts}."})
    elif isinstance(history, str):
        out.append({"text": f"History: {history}"})
    if live:
        text = (
            f"Live run {live.get('run_id')} in {live.get('store')}: status {live.get('status')}, "
            f"{int(live.get('failed_cells', 0)):,} failed cell(s)"
        )
        if int(live.get("runs_in_store", 1)) > 1:
            text += f"; the store holds {live['runs_in_store']} runs (choose with --run-id)"
        out.append({"text": text + ".", "note": live.get("status") != "done"})
    return headline, out


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
    findings = _Section("selection-summary", "Selection findings")
    findings.headline, findings.findings = _selection_findings(data, arms)
    findings.tables.append(
        _table(
            pd.DataFrame({"quantity": list(info), "value": [_value(v) for v in info.values()]}),
            name="selection-details",
        )
    )
    sections.append(findings)
    has_trace = bool(trace.get("initial_lower") and trace.get("arm")) or (
        "lower" in trace and "upper" in trace
    )
    section = _Section(
        "selection-intervals",
        "Intervals over evaluations",
        "How the intervals of the four leading models narrowed as evaluations were spent."
        if has_trace
        else "The run recorded no per-round bounds"
        + (" (a live run keeps only the final ones)" if data.get("live_run") else "")
        + ": the final intervals.",
    )
    if has_trace:
        section.figures.append(
            {
                "png": _figure(lambda ax: plots.plot_selection_intervals(selection, ax, top=4)),
                "alt": "interval trajectories",
            }
        )
    if {"lower", "upper"} <= set(arms.columns):
        order = arms.sort_values("estimate", ascending=False).reset_index(drop=True)
        section.plots.append(
            _plot(
                {
                    "title": "Final intervals, best first",
                    "x_label": "mean score (estimate and interval)",
                    "y_label": "rank by estimate",
                    "x": _finite(order["estimate"]),
                    "y": list(range(1, len(order) + 1)),
                    "lo": _finite(order["lower"]),
                    "hi": _finite(order["upper"]),
                    "name": [str(m) for m in order["model"]],
                    "info": [
                        f"{e:.3f} [{lo:.3f}, {hi:.3f}], {int(n):,} cells"
                        for e, lo, hi, n in zip(
                            order["estimate"],
                            order["lower"],
                            order["upper"],
                            order["n_observed"],
                            strict=True,
                        )
                    ],
                    "flip_y": True,
                    "height": int(min(640, max(300, 14 * len(order) + 80))),
                    "labels": list(range(min(3, len(order)))),
                }
            )
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
    section.tables.append(
        _table(arms.sort_values("estimate", ascending=False), name="selection-arms")
    )
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
    notes: Sequence[str] = (),
) -> str:
    """Build one self-contained HTML page for a fit and/or a selection run.

    The page opens with findings (the leader and whether it is separated, ties, the largest
    rank shifts, items to drop and why). Ability, rank-shift and item maps are interactive
    canvas plots (zoom, pan, hover names) drawn by a small inline script; other figures are
    base64 PNG; tables sort on a header click and export to CSV. No network: a
    Content-Security-Policy forbids every request. Every name from the inputs is escaped.

    Parameters
    ----------
    result : IRTResult, optional
        A fit. With ``matrix`` the page has standard errors, rank intervals and diagnostics
        (sections ``summary``, ``abilities``, ``rank-shifts``, ``items``, ``flagged-items``,
        ``item-curves``, ``rank-agreement``, ``duplicates``); without it, the first four and
        ``rank-agreement``; a ``findings`` section comes first and ``summary`` (fit details)
        last.
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
    notes : sequence of str, optional
        Extra findings shown at the top (e.g. what was not computed and why).

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
        s, facts = _fit_sections(result, matrix, top, n_curves, bootstrap, notes)
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
