"""Self-contained HTML reports for fits and selection runs (jinja2, autoescaped)."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from latentbench._checks import is_integer
from latentbench._compat import TEXT
from latentbench._progress import ProgressCallback, notify
from latentbench.exceptions import InputError
from latentbench.report import plots
from latentbench.report._blocks import (
    DOWNLOAD_ROWS,
    _figure,
    _finite,
    _order_line,
    _plot,
    _Section,
    _table,
    _value,
    refuse_existing,
    render_page,
    short_hashes,
)
from latentbench.report._findings import (
    _findings,
    _item_flags,
    _selection_findings,
)

if TYPE_CHECKING:
    from latentbench.select import SelectionRecord, SelectionResult

__all__ = ["build_report", "selection_record"]


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


def _bootstrap_note(boot: Any, unc: Any) -> str:
    """The Findings' statement of the interval method when the table shows the bootstrap's
    intervals (it named the plug-in method, which the table did not use)."""
    text = (
        f"Ability intervals: {int(boot.level * 100)}% basic bootstrap intervals "
        f"({boot.method} bootstrap, {boot.n_boot} replicates), as in the Abilities table, in "
        f"place of the plug-in {unc.method} intervals"
        + (f" (themselves a fallback: {unc.fallback})" if unc.fallback is not None else "")
        + "."
    )
    if boot.n_boot < 100:
        text += (
            f" Only {boot.n_boot} replicates: the interval ends are the most extreme refits and "
            "may exclude the estimate; use 200 or more."
        )
    # what the refits said (bootstrap warned it): kept on the page too
    converged = np.asarray(getattr(boot, "converged", ()), dtype=bool)
    if converged.size and not converged.all():
        text += (
            f" {int((~converged).sum())} of {converged.size} refits stopped before meeting their "
            "tolerance (their draws are kept)."
        )
    for message, count in (getattr(boot, "refit_warnings", None) or {}).items():
        if not str(message).startswith("ConvergenceWarning"):  # counted above
            text += f" {count} of {converged.size or boot.n_boot} refits warned: {message}."
    return text


def _penalty_used(result: Any) -> str:
    """The penalty the fit used, for "Fit details": the prior (with its a_sd) or the ridge of
    joint ML (a prior fit recorded an unused ``l2`` before, shown as "ridge l2")."""
    options = result.options
    if options.get("prior") is None:
        l2 = options.get("l2")
        return f"ridge l2 = {1e-2 if l2 is None else float(l2):g} (joint ML)"
    chosen = getattr(result, "prior_selection", None)
    a_sd = f", a_sd = {chosen.a_sd:g}" if chosen is not None else ""
    return f"priors (MAP: theta ~ N(0, 1){a_sd})"


def _fit_sections(
    result: Any,
    matrix: Any | None,
    top: int,
    n_curves: int,
    boot: Any | None = None,
    notes: Sequence[str] = (),
    progress: ProgressCallback | None = None,
    provenance: Mapping[str, str] | None = None,
) -> tuple[list[_Section], dict[str, Any]]:
    from latentbench.irt.diagnostics import rank_agreement

    info = _fit_info(result)
    findings = _Section("findings", "Findings")
    sections: list[_Section] = [findings]
    view = _ability_view(result, matrix, top, boot, notes, progress)
    notify(progress, "report: figures and tables")
    sections.append(_abilities_section(view))
    diag = view.diag
    # the rank shifts, their rank intervals and the rank agreement of the abilities the
    # Abilities table shows (with its rank intervals), not a second computation of them: the
    # bootstrap's table and a joint-ML fit's corrected se gave other intervals there
    movers = _movers(view)
    sections.append(_rank_shift_section(view.abilities, movers, top))
    sections.append(_items_section(result, diag))
    if diag is not None:
        sections += _diagnostic_sections(result, diag, n_curves)
    agreement = rank_agreement(result, top=10, abilities=view.abilities)
    section = _Section(
        "rank-agreement",
        "Rank agreement of accuracy and ability",
        "Spearman and Kendall correlations, all models and the top models by ability.",
    )
    section.tables.append(_table(agreement, name="rank-agreement"))
    sections.append(section)
    if diag is not None:
        sections.append(_duplicates_section(diag))
    sections.append(_summary_section({**info, **(provenance or {})}, _scale_text(result)))
    findings.headline, findings.findings = _findings(
        result, view.ranks, movers, diag, view.level, view.abilities
    )
    findings.findings += [{"text": note, "note": True} for note in view.notes]
    return sections, info


def _fit_info(result: Any) -> dict[str, Any]:
    """The fit details (the ``summary`` section's table)."""
    return {
        "models": result.shape[0],
        "items": result.shape[1],
        "observed cells": result.n_observed,
        "rank": result.rank,
        "sigma": result.sigma,
        "penalty": _penalty_used(result),
        "loss": result.loss,
        "sweeps": result.n_iter,
        "converged": result.converged,
        # a joint-ML fit's own held-out check (fit.json's heldout_check), as `fit` prints it
        **(
            {
                "held-out check (10% of cells)": f"log-loss {check['log_loss']:.3f}, additive "
                f"model {check['additive_log_loss']:.3f}"
            }
            if (check := getattr(result, "joint_ml_check", None))
            else {}
        ),
        # said only where it happened (warned by the fit, kept in fit.json)
        **(
            {"start": "restarted from the accuracy-based start (the given start collapsed)"}
            if getattr(result, "restarted", False)
            else {}
        ),
    }


@dataclasses.dataclass
class _AbilityView:
    """What the ``abilities`` section shows, and what the findings need of it."""

    abilities: pd.DataFrame
    intervals: pd.DataFrame | None
    ranks: Any
    table: pd.DataFrame
    text: str
    level: float
    diag: Any
    notes: Sequence[str]


def _ability_view(
    result: Any,
    matrix: Any | None,
    top: int,
    boot: Any | None,
    notes: Sequence[str],
    progress: ProgressCallback | None,
) -> _AbilityView:
    """The abilities, their intervals and rank intervals: with the matrix (standard errors or
    the bootstrap), as a fit directory saved them, or the fit's own estimates alone."""
    if matrix is not None:
        return _matrix_ability_view(result, matrix, top, boot, notes, progress)
    if getattr(result, "saved_abilities", None) is not None:
        # a fit directory without its responses: the abilities and intervals `fit` wrote
        # (abilities.csv), not the fit's own estimates, which differ from them
        abilities = intervals = result.saved_abilities.copy()
        ranks = _normal_ranks(abilities)
        record = getattr(result, "saved_intervals", None) or {}
        method = record.get("method")
        text = (
            "95% intervals as fit saved them (abilities.csv"
            + (f"; {method}" if isinstance(method, str) else "")
            + "); rank intervals from normal draws around them. No response matrix: no item "
            "diagnostics (pass the responses). "
        )
        # what the fit said of these intervals (fit.json), said here too: a caveat or a
        # fallback was lost with the responses
        notes = [
            *notes,
            *_record_notes(
                method,
                record.get("fallback"),
                record.get("caveat"),
                record.get("checks"),
                booted=False,
                detached=record.get("detached"),
            ),
        ]
        text += "Order of the top models ('>' significant, '~' tied): " + _order_line(
            ranks, limit=min(top, 15)
        )
        table = _ability_table(abilities, intervals, ranks)
        return _AbilityView(abilities, intervals, ranks, table, text, 0.95, None, notes)
    abilities = result.abilities.copy()
    table = abilities[["model", "theta", "rank_theta", "accuracy", "rank_accuracy"]]
    text = "No response matrix was given: no standard errors (pass the responses)."
    return _AbilityView(abilities, None, None, table, text, 0.95, None, notes)


def _matrix_ability_view(
    result: Any,
    matrix: Any,
    top: int,
    boot: Any,
    notes: Sequence[str],
    progress: ProgressCallback | None,
) -> _AbilityView:
    """:func:`_ability_view` with the response matrix: intervals, ranks and diagnostics."""
    from latentbench.irt._reported import measured_models, reported_abilities
    from latentbench.irt.diagnostics import diagnose
    from latentbench.irt.inference import standard_errors

    notify(progress, "report: ability intervals")
    unc = standard_errors(result, matrix)
    level = unc.level
    booted = boot is not None and boot.theta is not None
    notes = _interval_notes(notes, boot, unc, booted=booted)
    if booted:
        abilities = result.abilities.copy()
        intervals = boot.abilities()
        ranks = boot.rank_intervals(measured=measured_models(result.abilities))
        level = boot.level
        text = (
            f"{int(boot.level * 100)}% basic bootstrap intervals ({boot.method} "
            f"bootstrap, {boot.n_boot} replicates); rank intervals from the same draws. "
            "theta and its ranks are the fit's own estimate, which the refits repeat "
            "(abilities.csv's theta_fit; its theta and rank_theta are the plug-in route's). "
        )
    else:
        # one ability per model: theta is the estimate its interval is built on
        abilities = reported_abilities(result, unc)
        intervals = abilities
        ranks = _normal_ranks(abilities)
        text = (
            f"{int(unc.level * 100)}% intervals ({unc.method}, on the reporting scale); "
            "rank intervals from normal draws around them. "
        )
    text += "'tied_with_next': not significantly better than the next model. "
    text += "Order of the top models ('>' significant, '~' tied): " + _order_line(
        ranks, limit=min(top, 15)
    )
    table = _ability_table(abilities, intervals, ranks)
    notify(progress, "report: item diagnostics")
    diag = diagnose(result, matrix, top=min(top, 10))
    return _AbilityView(abilities, intervals, ranks, table, text, level, diag, notes)


def _movers(view: _AbilityView) -> pd.DataFrame:
    """The rank-shift table of the abilities the page shows (``view.abilities``), with the
    Abilities table's rank intervals when it has them; biggest moves first (as
    :func:`~latentbench.irt.diagnostics.rank_changes`)."""
    from latentbench.irt.diagnostics import outside_rank_interval

    ab = view.abilities.reset_index(drop=True)
    out = pd.DataFrame(
        {
            column: ab[column]
            for column in ("model", "theta", "accuracy", "rank_theta", "rank_accuracy")
        }
    )
    out["rank_shift"] = ab["rank_accuracy"].astype("Int64") - ab["rank_theta"].astype("Int64")
    out["abs_shift"] = out["rank_shift"].abs()
    if view.ranks is not None:  # the rows of the ranks are the abilities' (one per model)
        ranks = view.ranks.reset_index(drop=True)
        if ranks["model"].astype(TEXT).tolist() != out["model"].astype(TEXT).tolist():
            ranks = ranks.set_index(ranks["model"].astype(TEXT)).loc[out["model"].astype(TEXT)]
            ranks = ranks.reset_index(drop=True)
        out["rank_lower"] = ranks["rank_lower"].astype("Int64").array
        out["rank_upper"] = ranks["rank_upper"].astype("Int64").array
        out["significant"] = outside_rank_interval(out)
    return out.sort_values(["abs_shift", "rank_theta"], ascending=[False, True], ignore_index=True)


def _interval_notes(notes: Sequence[str], boot: Any, unc: Any, *, booted: bool) -> Sequence[str]:
    """``notes`` and the notes on the ability intervals (the method the table uses)."""
    if booted:  # the table's intervals: the notes name the same method
        notes = [*notes, _bootstrap_note(boot, unc)]
    return [
        *notes,
        *_record_notes(
            unc.method, unc.fallback, unc.caveat, unc.checks, booted=booted, detached=unc.detached
        ),
    ]


def _record_notes(
    method: Any, fallback: Any, caveat: Any, checks: Any, *, booted: bool, detached: Any = None
) -> list[str]:
    """The statements on the ability intervals that ``standard_errors`` made (or ``fit.json``'s
    ``ability_intervals`` records): their fallback, caveat, an unconverged random-item fit, a
    kept disagreement, the models at the floor or ceiling and the detached models."""
    checks = checks if isinstance(checks, dict) else {}
    out = []
    if isinstance(fallback, str) and not booted:
        out.append(f"Ability intervals: {method} (fallback: {fallback}).")
    if isinstance(caveat, str):
        out.append(f"Ability intervals: {caveat}.")
    if checks.get("converged") is False and not isinstance(fallback, str):
        # said by the fit as a ConvergenceWarning; fit.json keeps it in checks only
        out.append(
            "Ability intervals: the random-item fit stopped at its iteration limit before "
            "converging (the data may carry little signal about model differences); the "
            "intervals are from its last iterate."
        )
    if checks.get("disagreement_action") == "kept" and not booted:
        out.append(
            f"Ability intervals: {method}. The marginal and the fit's abilities "
            f"disagree beyond their uncertainty ({float(checks['disagreement']):.1f} combined "
            "se); the intervals are kept, since the item bootstrap carries the item law's "
            "own error."
        )
    constant = [str(m) for m in checks.get("constant_models") or []]
    if constant and not (isinstance(fallback, str) and "floor or ceiling" in fallback):
        names = ", ".join(repr(m) for m in constant[:3]) + (" ..." if len(constant) > 3 else "")
        out.append(
            f"Ability intervals: {len(constant)} model(s) at the floor or ceiling ({names}: "
            "every observed score 0, or every one 1): the data bound their ability on one "
            "side only, so their theta is where the fit's prior (or ridge) stops it; compare "
            "them by their accuracy."
        )
    apart = (
        [str(m) for m in (detached or {}).get("models") or []] if isinstance(detached, dict) else []
    )
    if apart:
        names = ", ".join(repr(m) for m in apart[:3]) + (" ..." if len(apart) > 3 else "")
        text = (
            f"Ability intervals: {len(apart)} model(s) detached from the others ({names}: "
            "near a score of 0 or 1, far from every other model): they do not set the "
            "reporting scale, and their position rests on the tails of the item curves"
        )
        if not booted:
            how = detached.get("method")
            text += (
                f"; their intervals{f' ({how})' if isinstance(how, str) else ''} are open on "
                "the far side (the data do not bound how far beyond the field they are)"
            )
        out.append(text + ".")
    return out


def _abilities_section(view: _AbilityView) -> _Section:
    """The ``abilities`` section: the ability plot (with intervals) and table."""
    abilities, intervals, level = view.abilities, view.intervals, view.level
    section = _Section("abilities", "Abilities", view.text)
    # best first, a model that is not ranked (no observed cell) last, as in abilities.csv and
    # the printed table (it stood among the ranked ones by its prior's theta)
    order = _rank_order(abilities)
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
        lo = intervals["lower"].to_numpy(float)[order]
        hi = intervals["upper"].to_numpy(float)[order]
        # an interval open on one side (a detached model's) is drawn to the plot's edge
        finite = np.concatenate([lo, hi, abilities["theta"].to_numpy(float)])
        finite = finite[np.isfinite(finite)]
        if finite.size:
            edge = 0.05 * max(float(np.ptp(finite)), 1e-9)
            lo = np.where(lo == -np.inf, finite.min() - edge, lo)
            hi = np.where(hi == np.inf, finite.max() + edge, hi)
        spec["lo"] = _finite(lo)
        spec["hi"] = _finite(hi)
    section.plots.append(_plot(spec))
    section.tables.append(_table(view.table.iloc[_rank_order(view.table)], name="abilities"))
    return section


def _rank_order(table: pd.DataFrame) -> np.ndarray:
    """Row order of an abilities table: by ``theta``, best first, and the models without a
    rank (``rank_theta`` or ``rank`` missing: no observed cell) after the ranked ones."""
    column = "rank_theta" if "rank_theta" in table.columns else "rank"
    unranked = (
        pd.isna(table[column]).to_numpy(bool)
        if column in table.columns
        else np.zeros(len(table), dtype=bool)
    )
    theta = table["theta"].to_numpy(float)
    return np.lexsort((-theta, unranked))


def _rank_shift_section(abilities: pd.DataFrame, movers: pd.DataFrame, top: int) -> _Section:
    """The ``rank-shifts`` section: ability against accuracy, the largest moves labelled."""
    section = _Section(
        "rank-shifts",
        "Ability vs accuracy: rank shifts",
        "rank_shift = accuracy rank - ability rank (positive: the ability ranks the model "
        "higher). 'significant': the accuracy rank lies outside the ability-rank interval. "
        "Hover a point for its name; the five largest moves are labelled.",
    )
    # NaN for a model without observed cells (not ranked by accuracy)
    shift = pd.to_numeric(abilities["rank_shift"], errors="coerce").to_numpy(float, na_value=np.nan)
    moved = np.argsort(-np.nan_to_num(np.abs(shift), nan=-1.0), kind="stable")[:5]
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
                    if not pd.isna(a)
                    else "no observed score: not ranked"
                    for a, t, d in zip(
                        abilities["rank_accuracy"], abilities["rank_theta"], shift, strict=True
                    )
                ],
                "group": [
                    1
                    if i in set(moved.tolist()) and shift[i] != 0 and not np.isnan(shift[i])
                    else 0
                    for i in range(len(shift))
                ],
                "groups": [
                    {"label": "model", "color": "#1f77b4"},
                    {"label": "largest rank shift", "color": "#d62728"},
                ],
                "labels": [int(i) for i in moved if shift[i] != 0 and not np.isnan(shift[i])],
            }
        )
    )
    section.tables.append(
        _table(movers, limit=top, caption="Models whose rank moves most", name="rank-shifts")
    )
    return section


def _items_section(result: Any, diag: Any) -> _Section:
    """The ``items`` section: the item map and the counts of flagged items."""
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
        + (
            "Flagged items are red crosses, and their hover tip says so. "
            if flagged is not None
            else ""
        )
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
                "info": [  # a flag in words too, not in colour only
                    f"a {ai:.2f}, location {'-' if not math.isfinite(li) else f'{li:.2f}'}, "
                    f"correct {pi:.2f}" + (", flagged" if flag else "")
                    for ai, li, pi, flag in zip(
                        a,
                        location,
                        items[correct].to_numpy(float),
                        np.zeros(len(items), bool) if flagged is None else flagged,
                        strict=True,
                    )
                ],
                "group": [] if flagged is None else [int(f) for f in flagged],
                # a dark colour, see-through: a lone point stands out at 3:1 or more (WCAG
                # 1.4.11), piled-up points still show where the map is dense; the few
                # flagged crosses opaque, red on the white page and on the blue pile
                "groups": [{"label": "item", "color": plots._ITEM_POINT}]
                + (
                    []
                    if flagged is None
                    else [{"label": "flagged", "color": plots._FLAG, "alpha": 1}]
                ),
                "radius": 2.5 if len(items) > 2000 else 3,
                "alpha": plots._POINT_ALPHA if len(items) > 2000 else 0.75,
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
    return section


def _diagnostic_sections(result: Any, diag: Any, n_curves: int) -> list[_Section]:
    """The ``flagged-items`` and ``item-curves`` sections (with the matrix only)."""
    sections: list[_Section] = []
    flagged_items = _item_flags(diag)
    # the models with an observed cell (one without says nothing about an item)
    n_models = int((pd.to_numeric(result.abilities["n_observed"], errors="coerce") > 0).sum())
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
            # what the figure shows (WCAG 1.1.1), not only what it is
            "alt": f"Item characteristic curves of {len(chosen)} items "
            f"({', '.join(map(str, chosen))}): the probability of a correct answer against "
            "ability (theta), one curve per item; each item's discrimination and difficulty "
            "are in the Items table.",
        }
    )
    sections.append(section)
    return sections


def _duplicates_section(diag: Any) -> _Section:
    """The ``duplicates`` section: near-duplicate item pairs (with the matrix only)."""
    pairs = diag.duplicates
    n_sig = int(pairs["duplicate"].sum()) if "duplicate" in pairs.columns else 0
    section = _Section(
        "duplicates",
        "Near-duplicate items",
        f"{len(pairs):,} candidate pairs answered alike by at least 95% of models; "
        f"{n_sig:,} of them are flagged as duplicates ('duplicate': more agreement than "
        "the fitted model explains, exact tail, Bonferroni over every pair of items). "
        "Identical answers ('identical: yes') are expected for very easy or very hard items "
        "and are not by themselves evidence of a duplicate."
        + (
            f" The download holds the {DOWNLOAD_ROWS:,} most significant; all of them: "
            "result.diagnostics(matrix).duplicates in Python."
            if len(pairs) > DOWNLOAD_ROWS
            else ""
        ),
    )
    section.tables.append(_table(pairs, limit=50, name="near-duplicates", download=True))
    return section


def _scale_text(result: Any) -> str:
    """What the reporting scale is, over which models (fit.json's ``off_scale_models`` do not
    set it: the page said "mean 0, sd 1 over the fitted models" when they had sd 1.4)."""
    if result.rank > 1:
        return (
            "Abilities (theta = U w, along the items' mean loading) have mean 0 over the "
            "fitted models: the factors are centred; their sd is not fixed to 1."
        )
    n = int(result.shape[0])
    norm = getattr(result, "normalisation", None)
    sets = np.ones(n, dtype=bool) if norm is None else norm.mask(n)
    off = [str(m) for m, k in zip(result.model_ids, sets, strict=True) if not k]
    if not off:
        return "Abilities are on the fit's reporting scale: mean 0, sd 1 over the fitted models."
    names = ", ".join(off[:5]) + (f" and {len(off) - 5} more" if len(off) > 5 else "")
    return (
        f"Abilities are on the fit's reporting scale: mean 0, sd 1 over the {n - len(off):,} "
        f"of {n:,} models that set it; {len(off):,} do not ({names}: every observed score 0 "
        "or every one 1, no observed cell, or detached; fit.json's off_scale_models)."
    )


def _summary_section(info: dict[str, Any], scale: str) -> _Section:
    """The ``summary`` section: the fit details (``scale``: what the reporting scale is)."""
    summary = _Section("summary", "Fit details", scale)
    summary.tables.append(
        _table(
            pd.DataFrame({"quantity": list(info), "value": [_value(v) for v in info.values()]}),
            name="fit-details",
            wrap=True,
        )
    )
    return summary


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
                column: category.fillna("(no metadata)").astype(TEXT),
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
            _table(
                table.sort_values("items", ascending=False),
                caption=f"by {column}",
                name=f"by-{column}",  # its CSV's file name (every one was table.csv)
            )
        )
    return [section]


_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


def _interval_trajectories_spec(
    selection: Any, arms: pd.DataFrame, trace: dict[str, Any], top: int = 4, points: int = 300
) -> dict[str, Any]:
    """The interactive 'intervals over evaluations' plot: one step band per leading model
    (lower and upper bound over evaluations, at most ``points`` rounds drawn), hover on the
    band edges; without per-round bounds, the recommended model after each round."""
    spend, order, bounds = plots.selection_interval_bounds(selection, top)
    if len(spend) > points:  # thin out the rounds; keep the first and the last
        keep = np.unique(np.r_[np.linspace(0, len(spend) - 1, points).round().astype(int)])
    else:
        keep = np.arange(len(spend))
    x = spend[keep]
    spec: dict[str, Any] = {
        "x_label": "evaluations after the initial batch",
        "height": 380,
        "radius": 1.5,
        "hint": "hover a band edge for the model and its interval; wheel or +/- to zoom",
    }
    if bounds is None:
        best = np.asarray(trace.get("best_index", []), dtype=int)[keep]
        names = [str(m) for m in arms["model"]]
        spec.update(
            title="Recommended model after each round",
            y_label="model (row of the run)",
            x=_finite(x),
            y=[int(b) for b in best],
            name=[names[b] for b in best],
            info=[f"after {int(v):,} evaluations" for v in x],
            radius=3,
        )
        return spec
    lower, upper = bounds[0][keep], bounds[1][keep]
    bands, px, py, names, info, group = [], [], [], [], [], []
    for col, row in enumerate(order):
        model = str(arms.loc[row, "model"])
        colour = _COLOURS[col % len(_COLOURS)]
        bands.append(
            {"x": _finite(x), "lo": _finite(lower[:, col]), "hi": _finite(upper[:, col])}
            | {"color": colour, "label": model}
        )
        for edge in (lower[:, col], upper[:, col]):
            px += _finite(x)
            py += _finite(edge)
            names += [model] * len(x)
            group += [col] * len(x)
        info += [
            f"after {int(v):,}: lower {lo:.3f}" for v, lo in zip(x, lower[:, col], strict=True)
        ]
        info += [
            f"after {int(v):,}: upper {hi:.3f}" for v, hi in zip(x, upper[:, col], strict=True)
        ]
    spec.update(
        title=f"Intervals of the {len(order)} leading models over evaluations",
        y_label="interval for the mean score",
        x=px,
        y=py,
        name=names,
        info=info,
        group=group,
        groups=[{"label": b["label"], "color": b["color"]} for b in bands],
        bands=bands,
    )
    return spec


def selection_record(
    selection: SelectionRecord | SelectionResult | Mapping[str, Any],
) -> SelectionRecord:
    """The :class:`~latentbench.select.SelectionRecord` of a run, its result or its
    ``selection.json`` dict (checked)."""
    from latentbench.select import SelectionRecord, SelectionResult

    if isinstance(selection, SelectionRecord):
        return selection
    if isinstance(selection, SelectionResult):
        return SelectionRecord.from_result(selection)
    if isinstance(selection, Mapping):
        return SelectionRecord.from_dict(selection)
    path = (
        f" (a file: SelectionRecord.read_json({str(selection)!r}), or report_from of it)"
        if isinstance(selection, str | os.PathLike)
        else ""
    )
    raise InputError(
        f"selection is a {type(selection).__name__}; expected a SelectionRecord, a "
        f"SelectionResult or the dict of a selection.json{path}"
    )


def _selection_sections(record: SelectionRecord, top: int) -> tuple[list[_Section], dict[str, Any]]:
    data = record.to_dict()
    selection = data
    arms, trace = plots.selection_frame(data)
    info: dict[str, Any] = {
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
    if "stopped" in info:  # as the printed lines say it
        info["stopped"] = record.stopped_text()
    info["models"] = len(arms)
    sections: list[_Section] = []
    findings = _Section("selection-summary", "Selection findings")
    findings.headline, findings.findings = _selection_findings(data, arms)
    findings.tables.append(
        _table(
            pd.DataFrame({"quantity": list(info), "value": [_value(v) for v in info.values()]}),
            name="selection-details",
            wrap=True,
        )
    )
    sections.append(findings)
    has_trace = bool(trace.get("initial_lower") and trace.get("arm")) or (
        "lower" in trace and "upper" in trace
    )
    final = {"lower", "upper"} <= set(arms.columns)
    section = _Section(
        "selection-intervals",
        "Intervals over evaluations",
        "How the intervals of the four leading models narrowed as evaluations were spent."
        if has_trace
        else "The run recorded no per-round bounds"
        + (" (a live run keeps only the final ones)" if data.get("live_run") else "")
        + (": the final intervals." if final else ", and no intervals: its policy has none."),
    )
    if has_trace:
        section.plots.append(_plot(_interval_trajectories_spec(selection, arms, trace)))
    if final:
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
    spent = arms.sort_values("n_observed", ascending=False).head(top).reset_index(drop=True)
    n_obs = spent["n_observed"].to_numpy(float)
    section.plots.append(
        _plot(
            {
                "title": f"Evaluations per model, the {len(spent)} most evaluated first",
                "x_label": "evaluations (revealed cells)",
                "y_label": "rank by evaluations",
                "x": _finite(n_obs),
                "y": list(range(1, len(spent) + 1)),
                "lo": [0.0] * len(spent),
                "hi": _finite(n_obs),
                "name": [str(m) for m in spent["model"]],
                "info": [
                    f"{int(n):,} cells, estimate {e:.3f}"
                    for n, e in zip(n_obs, spent["estimate"].to_numpy(float), strict=True)
                ],
                "flip_y": True,
                "height": int(min(640, max(300, 16 * len(spent) + 90))),
                "labels": list(range(len(spent))),
            }
        )
    )
    section.tables.append(
        _table(arms.sort_values("estimate", ascending=False), name="selection-arms")
    )
    sections.append(section)
    return sections, info


def _normal_ranks(abilities: pd.DataFrame) -> pd.DataFrame:
    """Rank intervals from normal draws around ``theta`` with sd ``se`` (the measured models)."""
    from latentbench.irt._reported import measured_models
    from latentbench.irt.inference import normal_draws, rank_intervals

    theta = abilities["theta"].to_numpy(float)
    draws = normal_draws(theta, abilities["se"].to_numpy(float), 2000, 0)
    return rank_intervals(
        draws, abilities["model"].tolist(), estimate=theta, measured=measured_models(abilities)
    )


def _ability_table(
    abilities: pd.DataFrame, intervals: pd.DataFrame, ranks: pd.DataFrame
) -> pd.DataFrame:
    """The report's abilities table: estimate, interval, rank and its interval, accuracy."""
    return pd.DataFrame(
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


def build_report(
    result: Any | None = None,
    matrix: Any | None = None,
    *,
    selection: SelectionRecord | SelectionResult | Mapping[str, Any] | None = None,
    path: str | Path | None = None,
    title: str | None = None,
    top: int = 30,
    n_curves: int = 6,
    bootstrap: Any | None = None,
    item_metadata: pd.DataFrame | None = None,
    notes: Sequence[str] = (),
    provenance: Mapping[str, str] | None = None,
    progress: ProgressCallback | None = None,
    force: bool = False,
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
    selection : SelectionRecord, SelectionResult or dict, optional
        A selection run (its record, its result, or the dict of its ``selection.json``);
        adds sections ``selection-summary``, ``selection-intervals``,
        ``selection-evaluations``.
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
    provenance : mapping of str to str, optional
        Where the fit came from, as rows of its ``summary`` table (fit details): e.g. the
        fit directory, the version that fitted it, the responses file and its SHA-256
        (:func:`~latentbench.report.report_from` fills it in), for a reader who did not run it.
    progress : callable(phase, done, total), optional
        Told each phase as it starts (intervals, diagnostics, figures, the selection, writing
        the page); see :mod:`latentbench._progress`.
    force : bool, default False
        Overwrite an existing ``path`` (refused otherwise, before any work).

    Returns
    -------
    str
        The HTML text.
    """
    if result is None and selection is None:
        raise InputError("build_report needs a fit result, a selection run, or both")
    if not is_integer(top) or top < 1:  # "10" or 10.5: named, not a TypeError from the tables
        raise InputError(f"top={top!r}; expected an integer >= 1 (models / rows shown)")
    if not is_integer(n_curves) or n_curves < 0:
        raise InputError(f"n_curves={n_curves!r}; expected an integer >= 0 (item curves drawn)")
    if isinstance(notes, str):  # one note given bare: shown letter by letter
        raise InputError(f"notes={notes!r}; expected a sequence of str, e.g. [{notes!r}]")
    refuse_existing(path, force)
    sections: list[_Section] = []
    facts: dict[str, Any] = {}
    if result is not None:
        s, facts = _fit_sections(
            result, matrix, top, n_curves, bootstrap, notes, progress, provenance or {}
        )
        sections += s
        if item_metadata is not None:
            sections += _category_sections(result, matrix, item_metadata)
    if selection is not None:
        notify(progress, "report: selection figures")
        s, info = _selection_sections(selection_record(selection), top)
        sections += s
        facts = facts or info
    for section in sections:  # findings name files by path, never by a 64-character digest
        section.headline = short_hashes(section.headline)
        for finding in section.findings:
            finding["text"] = short_hashes(str(finding["text"]))
    notify(progress, "report: writing the page")
    return render_page(sections, title or "latentbench report", path)
