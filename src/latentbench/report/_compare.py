"""The HTML page of a paired comparison of two models (``latentbench compare --out DIR``):
the difference, its interval and verdict, and the items both answered."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from latentbench._text import percent
from latentbench.report._blocks import (
    _Section,
    _table,
    refuse_existing,
    render_page,
    short_hashes,
)
from latentbench.select._estimate_weights import is_weighted, score_label

if TYPE_CHECKING:
    from latentbench.select import CompareResult

__all__ = ["COMPARE_SECTIONS", "build_compare_report"]

COMPARE_SECTIONS = ("compare-summary", "compare-tables")
"""Ids of the sections of a comparison's page."""


def _verdict(result: CompareResult) -> dict[str, Any]:
    """What the verdict means, in words: certified, equivalent or not certified (and then
    what would decide it)."""
    level = percent(result.level)
    if result.higher is not None:
        lower = result.model_b if result.higher == result.model_a else result.model_a
        return {
            "text": f"{result.higher} is higher than {lower}: the {level} interval of the "
            "difference excludes 0."
        }
    if result.stopped == "equivalent":
        margin = result.options.get("margin")
        return {
            "text": f"Equivalent within ±{margin}: the {level} interval of the difference lies "
            f"inside [-{margin}, +{margin}]."
        }
    if result.stopped in ("capped", "interrupted", "failed", "waiting"):
        more = (
            f"yet: the live run stopped early ({result.stopped}) after "
            f"{result.n_evaluated:,} items; the same command resumes it (latentbench compare "
            "--live, its stored answers replayed for free)."
        )
    elif result.options.get("design") == "fixed":
        more = (
            "with this design; the point difference does not rank the two. A larger design "
            "(latentbench tiny --k, both models run on its items) or a margin (margin=M in "
            "Python, --margin M on the command line: to certify that they are within M) can "
            "decide it."
        )
    else:
        more = (
            "at this budget; the point difference does not rank the two. A larger budget "
            "(budget= in Python, --budget on the command line; each item is answered by both) "
            "or a margin (margin=M, --margin M: to certify that they are within M) can decide "
            "it."
        )
    return {
        "text": f"Not certified: the {level} interval of the difference holds 0, so no "
        f"difference is detectable {more}",
        "note": True,
    }


def _provenance(result: CompareResult) -> str:
    """Where the comparison came from: the calibration, its hash and the options."""
    options = result.options
    keys = ("budget", "delta", "margin", "seed", "proposal", "floor", "k")
    chosen = [f"{k} {options[k]}" for k in keys if options.get(k) is not None]
    if options.get("design") == "fixed":  # its seed, floor and k are the design's
        chosen.insert(0, "a fixed design (latentbench tiny)")
    text = (
        f"Compared against calibration {result.calibration_source} (SHA-256 "
        f"{result.calibration_hash})" + (f"; options: {', '.join(chosen)}" if chosen else "") + "."
    )
    return short_hashes(text)


def build_compare_report(
    comparison: CompareResult | str | os.PathLike[str],
    *,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
    force: bool = False,
    top: int = 100,
) -> str:
    """One self-contained HTML page of a paired comparison (``latentbench compare --out DIR``;
    ``latentbench report DIR``).

    Sections ``compare-summary`` (the line the command printed, what the interval guarantees
    and what the verdict means, the warnings, the calibration and options) and
    ``compare-tables`` (the items both models answered, in the order asked, with both answers
    and each draw's probability).

    Parameters
    ----------
    comparison : CompareResult or path-like
        The comparison, or a ``compare.json`` / the directory holding one.
    path : path-like, optional
        Also write the page there.
    title : str, optional
        The page's title (default ``"latentbench compare"``).
    force : bool, default False
        Overwrite an existing ``path`` (refused otherwise, before any work).
    top : int, default 100
        Rows shown of the items table (the rest are in the page's CSV download);
        ``report --top``.

    Returns
    -------
    str
        The HTML text.
    """
    refuse_existing(path, force)
    from latentbench._checks import as_path
    from latentbench.select import CompareResult

    result = (
        comparison
        if isinstance(comparison, CompareResult)
        else CompareResult.read(as_path(comparison, "comparison"))
    )
    section = _Section("compare-summary", "Comparison")
    section.headline = f"{result.summary()}."
    # over the items both answered when they are not all the calibration's (as the
    # command's line says: "of the two scores on the items both answered")
    shared = (
        "of the configuration"  # live: both asked, over the configured items
        if isinstance(result.options.get("live"), dict)
        else "both answered"
    )
    # compare --weights: the weighted or macro scores, over the items of positive weight
    weights = result.options.get("weights") or {}
    weighted = is_weighted(weights)
    score = score_label(weights) if weighted else "mean score"
    full = int(weights.get("n_positive") or 0) if weights else result.n_calibrated
    if full > result.n_items:
        of = "items of positive weight," if weighted else "calibration's"
        over = (
            f"over the {result.n_items:,} items {shared} (of the {of} {full:,}; not the "
            "full-benchmark difference)"
        )
    elif weighted:
        over = f"over the benchmark's {full:,} items of positive weight (weights {weights['hash']})"
    else:
        over = "over the benchmark's items"
    section.findings.append(
        {
            "text": f"The interval is a {percent(result.level)} anytime-valid interval of "
            f"{result.model_a}'s {score} minus {result.model_b}'s {over}, from items both "
            "answered (paired), design-based: it holds whether or not the IRT model fits "
            "either model (docs/estimate.md, Two models)."
        }
    )
    section.findings.append(_verdict(result))
    for line in result.warnings:
        section.findings.append({"text": line, "note": True})
    section.findings.append({"text": _provenance(result)})
    fixed: tuple[str, ...] = ("order", "item", "probability")
    if weighted:  # the columns a weighted difference adds
        fixed += ("group", "target_weight", "design_weight")
    own = (result.model_a, result.model_b)
    # each answer column named by its model, unless two columns would share a name (a dict's
    # keys merge: a model named "item" replaced the item ids with its answers)
    a, b = own if own[0] != own[1] and not set(own) & set(fixed) else ("answer_a", "answer_b")
    items = pd.DataFrame(
        {
            "order": np.arange(1, len(result.items) + 1),
            "item": list(result.items),
            a: list(result.answers_a),
            b: list(result.answers_b),
            "probability": list(result.probabilities) or np.nan,
        }
    )
    if weighted:  # each item's weight in the target, and its draw's in the estimate
        frame = result.to_frame()
        if "group" in frame:
            items.insert(2, "group", frame["group"].to_numpy())
        for name in ("target_weight", "design_weight"):
            if name in frame:  # (a record written before them has neither)
                items[name] = frame[name].to_numpy()
    tables = _Section("compare-tables", "Tables")
    tables.tables.append(
        _table(
            items,
            name="compare-items",
            caption="The items both models answered, in the order asked, with each draw's "
            + (
                # a weighted difference weighs a draw w_j / pi_j (W_j / (n pi_j), W mean 1)
                "probability (its weight in the estimate is w / probability, the "
                "design_weight, w the item's target_weight: its weight normalised to sum 1 "
                f"over the {result.n_items:,} items of the target)."
                if weighted
                else "probability (its weight in the estimate is 1 / (items x probability))."
            ),
            download=True,
            limit=top,
            consistent=True,
        )
    )
    return render_page([section, tables], title or "latentbench compare", path)
