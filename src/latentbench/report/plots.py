"""Figures for fits and selection runs (matplotlib).

Every function takes ``ax=None`` and returns the axes, so figures compose and tests can inspect
the artists. With ``ax=None`` a new pyplot figure is made (matplotlib chooses the non-interactive
Agg backend when there is no display); the HTML report never touches pyplot: it draws on
``matplotlib.figure.Figure`` objects rendered by the Agg canvas. Importing this module does not
change the user's backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter

from latentbench._checks import check_flag
from latentbench._compat import TEXT
from latentbench.exceptions import InputError

__all__ = [
    "plot_abilities",
    "plot_ability_accuracy",
    "plot_estimate_errors",
    "plot_estimate_intervals",
    "plot_estimate_placement",
    "plot_experiment_curves",
    "plot_item_curves",
    "plot_item_map",
    "plot_selection_evaluations",
    "plot_selection_intervals",
    "selection_frame",
    "selection_interval_bounds",
]

_FLAG = "#d62728"
_BASE = "#1f77b4"
_ITEM_POINT = "#0b3d6e"
"""An item map's point: a dark blue that, see-through (:data:`_POINT_ALPHA`, so that a
dense map shows where points pile up), still stands out from a white background at 3.6:1
(WCAG 2.1 1.4.11 asks 3:1 of a graphic needed to read the figure; ``_BASE`` at 50% gave
2.0:1, at 60% 2.4:1)."""
_POINT_ALPHA = 0.6
"""Opacity of a point of a dense item map (over 2,000 items; 0.75 below)."""
_LINESTYLES = ("-", "--", ":", "-.")
_MARKERS = ("", "o", "s", "^", "D")


def _series_style(k: int, *data: Any) -> dict[str, Any]:
    """The line style of a figure's ``k``-th series (and past four a marker as well): each
    series differs by more than its colour, in a grey or colour-blind view too (WCAG 1.4.1).
    ``data``: the series' coordinates; one without a finite value gets no ``markevery``
    (matplotlib spaces the markers along the drawn line, and raised IndexError for none)."""
    marker = _MARKERS[k // len(_LINESTYLES) % len(_MARKERS)]
    style: dict[str, Any] = {"linestyle": _LINESTYLES[k % len(_LINESTYLES)], "marker": marker}
    if all(np.isfinite(np.asarray(d, dtype=float)).any() for d in data):
        style["markevery"] = 0.1
    return style


def _text(value: Any) -> str:
    """Data-derived text for matplotlib: '$' would start mathtext, so escape it."""
    return str(value).replace("$", r"\$")


def _axes(ax: Axes | None, size: tuple[float, float] = (6.4, 4.4)) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=size, layout="constrained")
    return ax


def plot_ability_accuracy(result: Any, ax: Axes | None = None, *, annotate: int = 5) -> Axes:
    """Ability (theta) against accuracy; models whose rank moves most are labelled.

    Parameters
    ----------
    result : IRTResult or DataFrame
        A fit, or its ``abilities`` table (``model``, ``theta``, ``accuracy``,
        ``rank_shift``).
    ax : Axes, optional
        Draw into these axes (default: a new figure's).
    annotate : int, default 5
        Label this many models with the largest ``|rank_shift|`` as ``name (+k)``: +k = the
        ability ranks it k places higher than accuracy does.

    Returns
    -------
    Axes
        One scatter collection (x = accuracy, y = theta, colour = |rank shift|) and one text
        artist per labelled model.
    """
    ab = result if isinstance(result, pd.DataFrame) else getattr(result, "abilities", None)
    if not isinstance(ab, pd.DataFrame):
        raise InputError(
            f"result: a {type(result).__name__}; expected an IRTResult (TwoPL().fit(matrix)) "
            "or its abilities table"
        )
    ax = _axes(ax)
    # NaN for a model without observed cells (not ranked by accuracy)
    shift = pd.to_numeric(ab["rank_shift"], errors="coerce").to_numpy(float, na_value=np.nan)
    points = ax.scatter(
        ab["accuracy"], ab["theta"], c=np.abs(shift), cmap="viridis", s=22, edgecolors="none"
    )
    cbar = ax.figure.colorbar(points, ax=ax)
    cbar.set_label("|rank shift| (accuracy rank - ability rank)")
    order = np.argsort(-np.abs(shift), kind="stable")[: max(0, annotate)]
    for i in order:
        if not shift[i] or np.isnan(shift[i]):
            continue
        row = ab.iloc[i]
        ax.annotate(
            f"{_text(row['model'])} ({int(shift[i]):+d})",
            (row["accuracy"], row["theta"]),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=7,
        )
    ax.set_xlabel("accuracy (mean observed score)")
    ax.set_ylabel("ability theta")
    ax.set_title("Ability vs accuracy")
    return ax


def plot_item_curves(
    result: Any,
    items: Sequence[Any],
    ax: Axes | None = None,
    *,
    theta_range: tuple[float, float] = (-3.0, 3.0),
    show_models: bool = True,
) -> Axes:
    """Item characteristic curves ``P(correct | theta)`` for chosen items.

    Parameters
    ----------
    result : IRTResult
    items : sequence of item ids or integer positions
    ax : Axes, optional
        Draw into these axes (default: a new figure's).
    theta_range : (float, float)
        Ability range of the curves (widened to cover the fitted abilities).
    show_models : bool, default True
        Rug of the fitted abilities along the x-axis.

    Returns
    -------
    Axes
        One line per item (``label`` = item id), in the order given, then (with
        ``show_models``) one unlabelled marker line for the rug.
    """
    if isinstance(items, str):  # a str is a sequence of its characters: 'unknown item 'i''
        raise InputError(f"items={items!r}: one item; expected a list of item ids ([{items!r}])")
    show_models = check_flag(show_models, "show_models")  # "no" drew them
    ax = _axes(ax)
    ids = result.item_ids
    lookup = {name: j for j, name in enumerate(ids)}
    cols = []
    for item in items:
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            cols.append(int(item))
        elif str(item) in lookup:
            cols.append(lookup[str(item)])
        else:
            raise InputError(f"unknown item {item!r}")
    theta = result.theta  # rank > 1: along the items' mean loading
    lo = min(theta_range[0], float(theta.min()))
    hi = max(theta_range[1], float(theta.max()))
    grid = np.linspace(lo, hi, 200)
    discrimination = result.discrimination
    for k, j in enumerate(cols):
        a, b = discrimination[j], result.b[j]
        prob = 1.0 / (1.0 + np.exp(-(a * grid + b) / result.sigma))
        ax.plot(grid, prob, label=_text(ids[j]), **_series_style(k, grid, prob))
    if show_models:
        # 0.4 grey at 80%: 3.6:1 on white (WCAG 1.4.11), still see-through where models crowd
        ax.plot(theta, np.zeros_like(theta), "|", color="0.4", markersize=8, alpha=0.8)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("ability theta")
    ax.set_ylabel("P(correct)")
    ax.set_title("Item characteristic curves")
    if cols:
        ax.legend(fontsize=7, loc="best")
    return ax


def plot_item_map(
    result: Any, ax: Axes | None = None, *, flagged: Sequence[Any] | np.ndarray | None = None
) -> Axes:
    """Discrimination against difficulty (-b), flagged items highlighted.

    Parameters
    ----------
    result : IRTResult or DataFrame
        A fit, or its ``items`` table (``item``, ``discrimination``, ``difficulty``).
    ax : Axes, optional
        Draw into these axes (default: a new figure's).
    flagged : boolean mask of shape (n_items,) or sequence of item ids, optional
        Items drawn as red crosses (e.g. ``Diagnostics.items["flagged"]``); an id that is not
        an item, or a mask of another shape, is an :class:`~latentbench.InputError`.

    Returns
    -------
    Axes
        Collections: ``ax.collections[0]`` = unflagged items, ``[1]`` = flagged items (present
        even when empty).
    """
    items = result if isinstance(result, pd.DataFrame) else result.items
    mask = np.zeros(len(items), dtype=bool)
    if flagged is not None:
        mask = _flag_mask(flagged, items["item"].astype(TEXT))
    ax = _axes(ax)
    x, y = items["difficulty"].to_numpy(), items["discrimination"].to_numpy()
    ax.scatter(x[~mask], y[~mask], s=10, alpha=_POINT_ALPHA, color=_ITEM_POINT, label="item")
    ax.scatter(x[mask], y[mask], s=26, marker="x", color=_FLAG, label=f"flagged ({mask.sum()})")
    ax.set_xlabel("difficulty (-b: log-odds of failure at theta = 0)")
    ax.set_ylabel("discrimination a")
    ax.set_title("Item map")
    ax.legend(fontsize=8, loc="best")
    return ax


def _flag_mask(flagged: Sequence[Any] | np.ndarray, ids: pd.Series) -> np.ndarray:
    """The boolean mask of ``flagged`` (a mask of shape (n_items,) or item ids) over ``ids``;
    an id that is not an item, or a mask of another shape, is refused."""
    if isinstance(flagged, str):  # a str is a sequence of its characters
        raise InputError(
            f"flagged={flagged!r}: one item; expected a list of item ids ([{flagged!r}]) or a "
            f"boolean mask of shape ({len(ids)},)"
        )
    arr = np.asarray(flagged)
    if arr.dtype == bool:
        if arr.shape != (len(ids),):
            raise InputError(
                f"flagged: a boolean mask of shape {arr.shape}; expected shape ({len(ids)},), "
                "one value per item, or a list of item ids"
            )
        return arr.copy()
    wanted = [str(x) for x in arr.reshape(-1).tolist()]
    unknown = sorted(set(wanted) - set(ids))
    if unknown:
        shown = ", ".join(map(repr, unknown[:5])) + (" ..." if len(unknown) > 5 else "")
        raise InputError(
            f"flagged: {len(unknown)} id(s) that are not items of the fit: {shown}; expected "
            f"item ids (e.g. {ids.iloc[0]!r}) or a boolean mask of shape ({len(ids)},)"
        )
    return ids.isin(set(wanted)).to_numpy()


def plot_abilities(
    intervals: pd.DataFrame,
    ax: Axes | None = None,
    *,
    top: int | None = 30,
    estimate: str = "theta",
    title: str = "Abilities with intervals",
) -> Axes:
    """Forest plot: point estimates with intervals, best on top.

    Parameters
    ----------
    intervals : DataFrame
        ``model``, an estimate column (``theta``) and ``lower``, ``upper`` (e.g.
        :func:`~latentbench.irt.inference.standard_errors` ``.abilities``, or a bootstrap's
        ``abilities()``).
    ax : Axes, optional
        Draw into these axes (default: a new figure's).
    top : int or None, default 30
        Show the best ``top`` models only.
    estimate : str, default "theta"
        The column of point estimates.
    title : str, default "Abilities with intervals"

    Returns
    -------
    Axes
        One errorbar container (``ax.containers[0]``) with one point per shown model.
    """
    if not isinstance(intervals, pd.DataFrame):
        raise InputError(
            f"intervals: a {type(intervals).__name__}; expected a DataFrame with model, "
            f"{estimate}, lower, upper (e.g. result.standard_errors().abilities, or a "
            "bootstrap's abilities())"
        )
    missing = {"model", estimate, "lower", "upper"} - set(intervals.columns)
    if missing:
        raise InputError(f"intervals lack column(s) {sorted(missing)}")
    frame = intervals.sort_values(estimate, ascending=False)
    if top is not None:
        frame = frame.head(top)
    frame = frame.iloc[::-1]
    height = max(3.0, 0.22 * len(frame) + 1.2)
    ax = _axes(ax, (6.4, height))
    pos = np.arange(len(frame))
    est = frame[estimate].to_numpy()
    lower, upper = frame["lower"].to_numpy(float), frame["upper"].to_numpy(float)
    # an interval open on one side (a detached model's) is drawn to the edge of the plot
    finite = np.concatenate([est, lower, upper])
    finite = finite[np.isfinite(finite)]
    if finite.size:
        edge = 0.05 * max(float(np.ptp(finite)), 1e-9)
        lower = np.where(lower == -np.inf, finite.min() - edge, lower)
        upper = np.where(upper == np.inf, finite.max() + edge, upper)
    ax.errorbar(
        est,
        pos,
        xerr=[np.maximum(est - lower, 0.0), np.maximum(upper - est, 0.0)],
        fmt="o",
        markersize=3,
        color=_BASE,
        ecolor="0.5",
        capsize=2,
    )
    ax.set_yticks(pos, [_text(m) for m in frame["model"]], fontsize=7)
    ax.set_xlabel(estimate)
    ax.set_title(title)
    return ax


# ----------------------------------------------------------------------------- selection
def selection_frame(selection: Any) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per-arm table and trace of a selection run (a ``SelectionResult`` or its JSON dict).

    Returns
    -------
    arms : DataFrame
        ``model``, ``estimate``, ``n_observed``, and ``lower``, ``upper`` when recorded.
    trace : dict
        ``evaluations_post_init`` (list), ``best_index`` (list) and, when the run recorded
        them, ``lower`` / ``upper`` / ``estimates`` (lists of per-round lists, one value per
        arm).
    """
    if hasattr(selection, "to_dict"):
        data = selection.to_dict(trace=True)
        for key in ("trace_lower", "trace_upper", "trace_estimates"):
            value = getattr(selection, key, None)
            if value is not None:
                data.setdefault("trace", {})[key.removeprefix("trace_")] = np.asarray(
                    value
                ).tolist()
    elif isinstance(selection, Mapping):
        data = dict(selection)
    else:
        raise InputError(f"expected a SelectionResult or its JSON dict, got {type(selection)}")
    if "arms" not in data:
        raise InputError("the selection record has no 'arms'; expected selection.json")
    arms = pd.DataFrame(data["arms"])
    trace = dict(data.get("trace") or {})
    return arms, trace


def selection_interval_bounds(
    selection: Any, top: int = 4
) -> tuple[np.ndarray, pd.Index, tuple[np.ndarray, np.ndarray] | None]:
    """The per-round bounds of the ``top`` models by final estimate, when the run kept them.

    Returns
    -------
    spend : ndarray of shape (R,)
        Evaluations after the initial batch, per round.
    order : Index
        Rows of :func:`selection_frame`'s ``arms`` of the shown models, best first.
    bounds : (lower, upper), each of shape (R, len(order)), or None
        None when the record has no per-round bounds.
    """
    arms, trace = selection_frame(selection)
    spend = np.asarray(trace.get("evaluations_post_init", []), dtype=float)
    order = arms.sort_values("estimate", ascending=False).index[:top]
    bounds = None
    if trace.get("initial_lower") and trace.get("arm") and len(spend):
        from latentbench.select import interval_trajectories

        bounds = interval_trajectories(trace, np.asarray(order))
    elif "lower" in trace and "upper" in trace and len(spend):
        lower, upper = np.asarray(trace["lower"], float), np.asarray(trace["upper"], float)
        bounds = lower[:, order], upper[:, order]
    return spend, order, bounds


def plot_selection_intervals(selection: Any, ax: Axes | None = None, *, top: int = 4) -> Axes:
    """Interval trajectories over evaluations for the leading models.

    With per-round bounds in the record (the compact ``trace`` of ``selection.json``: ``arm``,
    ``arm_lower`` / ``arm_upper``, ``initial_lower`` / ``initial_upper``; or dense ``lower`` /
    ``upper``), the final ``top`` models by estimate each get a light band edged by its lower and
    upper bound in one colour and line style, over post-initialisation evaluations, the legend
    outside the axes. Without them, the recommended model after each round as a step line.

    Parameters
    ----------
    selection : SelectionResult or dict
        A selection run, or its ``selection.json`` record (a dict with ``arms``); anything
        else is an :class:`~latentbench.InputError`.
    ax : Axes, optional
        Draw into these axes (default: a new figure's).
    top : int, default 4
        Models shown (the final ``top`` by estimate).

    Returns
    -------
    Axes
        Bands: one ``PolyCollection`` per shown model; fallback: one step line.
    """
    arms, trace = selection_frame(selection)
    ax = _axes(ax)
    spend, order, bounds = selection_interval_bounds(selection, top)
    if bounds is not None:
        lower, upper = bounds
        colours = plt.get_cmap("tab10").colors  # type: ignore[attr-defined]
        keys = []
        for col, i in enumerate(order):
            colour = colours[col % len(colours)]
            style = _series_style(col)  # edges told apart without colour
            band = ax.fill_between(
                spend, lower[:, col], upper[:, col], alpha=0.12, step="post", color=colour
            )
            band.set_label(_text(arms.loc[i, "model"]))
            for edge in (lower[:, col], upper[:, col]):
                ax.step(spend, edge, where="post", color=colour, linewidth=1.2,
                        **_series_style(col, spend, edge))  # fmt: skip
            # the legend's key: a band edge, in its colour and line style
            keys.append(
                Line2D([], [], color=colour, linewidth=1.2, label=band.get_label(), **style)
            )
        ax.set_ylabel("interval for the mean score")
        ax.legend(
            handles=keys, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False
        )
    else:
        if len(spend):
            best = np.asarray(trace.get("best_index", []), dtype=float)
            names = [_text(m) for m in arms["model"]]
            ax.step(spend, best, where="post", color=_BASE, label="recommended model")
            shown = sorted({int(b) for b in best})[:12]
            ax.set_yticks(shown, [names[b] for b in shown], fontsize=7)
        ax.set_ylabel("recommended model after each round")
    ax.set_xlabel("evaluations after the initial batch")
    ax.set_title(f"Intervals of the {len(order)} leading models over evaluations")
    return ax


def plot_selection_evaluations(selection: Any, ax: Axes | None = None, *, top: int = 30) -> Axes:
    """Evaluations spent per model (bars, most evaluated on top).

    Parameters
    ----------
    selection : SelectionResult or dict
        A selection run, or its ``selection.json`` record (a dict with ``arms``); anything
        else is an :class:`~latentbench.InputError`.
    ax : Axes, optional
        Draw into these axes (default: a new figure's).
    top : int, default 30
        Models shown (the ``top`` most evaluated).

    Returns
    -------
    Axes
        One bar container with ``min(top, n_models)`` bars (widths = ``n_observed``).
    """
    arms, _ = selection_frame(selection)
    frame = arms.sort_values("n_observed", ascending=False).head(top).iloc[::-1]
    ax = _axes(ax, (6.4, max(3.0, 0.22 * len(frame) + 1.2)))
    pos = np.arange(len(frame))
    ax.barh(pos, frame["n_observed"].to_numpy(), color=_BASE)
    ax.set_yticks(pos, [_text(m) for m in frame["model"]], fontsize=7)
    ax.set_xlabel("evaluations (revealed cells)")
    ax.set_title("Evaluations per model")
    return ax


# ----------------------------------------------------------------------------- experiments
def plot_experiment_curves(
    curves: pd.DataFrame, pool: str, ax: Axes | None = None, *, z: float = 1.96
) -> Axes:
    """Identification accuracy against post-init cells for every policy of one pool.

    Parameters
    ----------
    curves : DataFrame
        Long, the columns of ``curves.csv``: ``pool``, ``policy``, ``evaluations``,
        ``accuracy``, ``se``.
    pool : str
    ax : Axes, optional
    z : float, default 1.96
        Band half-width in standard errors (pointwise 95 %).

    Returns
    -------
    Axes
        One line and one band (``PolyCollection``) per policy, dotted lines at 90 % and 95 %.
    """
    ax = _axes(ax)
    frame = curves[curves["pool"].astype(TEXT) == str(pool)]
    if frame.empty:
        raise InputError(f"no curves for pool {pool!r}; pools: {sorted(set(curves['pool']))}")
    colours = plt.get_cmap("tab10").colors  # type: ignore[attr-defined]
    for k, (policy, part) in enumerate(frame.groupby("policy", sort=False)):
        x = part["evaluations"].to_numpy(dtype=float)
        y = part["accuracy"].to_numpy(dtype=float)
        se = part["se"].to_numpy(dtype=float)
        colour = colours[k % len(colours)]
        ax.plot(x, y, color=colour, linewidth=1.4, label=_text(policy), **_series_style(k, x, y))
        ax.fill_between(x, np.clip(y - z * se, 0, 1), np.clip(y + z * se, 0, 1), color=colour,
                        alpha=0.15, linewidth=0)  # fmt: skip
    for level in (0.9, 0.95):
        ax.axhline(level, color="0.5", linestyle=":", linewidth=0.8)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("evaluations after the initial batch")
    ax.set_ylabel("identification accuracy (band: 95 % pointwise)")
    ax.set_title(f"Pool {_text(pool)}")
    ax.legend(fontsize=8, loc="lower right", frameon=False)
    return ax


def plot_estimate_errors(by_budget: pd.DataFrame, ax: Axes | None = None) -> Axes:
    """Mean absolute error of a leave-one-model-out estimate experiment against the items
    evaluated, beside the uniform sample mean's expected error, with the mean half-width.

    Parameters
    ----------
    by_budget : DataFrame
        ``EstimateExperiment.by_budget()``: ``budget``, ``mae``, ``mae_se``, ``half_width``
        and, when recorded, ``uniform_mae``.
    ax : Axes, optional

    Returns
    -------
    Axes
        Log-log axes: the estimate's error (bars: +-1.96 SE over held-out models), random
        items' expected error (dashed) and the interval's mean half-width (dotted).
    """
    ax = _axes(ax)
    frame = by_budget.sort_values("budget")
    x = frame["budget"].to_numpy(dtype=float)
    mae = frame["mae"].to_numpy(dtype=float)
    se = (
        pd.to_numeric(frame["mae_se"], errors="coerce").to_numpy(dtype=float)
        if "mae_se" in frame
        else np.zeros(len(frame))
    )
    ax.errorbar(x, mae, yerr=np.nan_to_num(1.96 * se), color=_BASE, marker="o", capsize=3,
                linewidth=1.4, label="estimate: mean |error|")  # fmt: skip
    if "uniform_mae" in frame and frame["uniform_mae"].notna().any():
        ax.plot(x, frame["uniform_mae"].to_numpy(dtype=float), color="0.35", linestyle="--",
                marker="s", linewidth=1.2, label="random items: expected |error|")  # fmt: skip
    ax.plot(x, frame["half_width"].to_numpy(dtype=float), color=_FLAG, linestyle=":",
            marker="^", linewidth=1.2, label="interval half-width (mean)")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(x, [f"{int(b):,}" for b in x])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("items evaluated")
    ax.set_ylabel("score units")
    ax.legend(fontsize=8, frameon=False)
    return ax


def plot_estimate_intervals(runs: pd.DataFrame, budget: int, ax: Axes | None = None) -> Axes:
    """Every run's estimate and interval at ``budget`` items against the model's true
    score; runs whose interval missed the truth as red crosses.

    Parameters
    ----------
    runs : DataFrame
        ``EstimateExperiment.runs``: ``budget``, ``truth``, ``score``, ``lower``, ``upper``,
        ``covered``.
    budget : int
    ax : Axes, optional

    Returns
    -------
    Axes
        One vertical interval per run, the diagonal score = truth.
    """
    ax = _axes(ax)
    part = runs[runs["budget"] == budget]
    if part.empty:
        raise InputError(f"no runs at budget {budget}; budgets: {sorted(set(runs['budget']))}")
    covered = part["covered"].astype(bool).to_numpy()
    # a miss is a red cross, not only red (WCAG 1.4.1)
    kinds = ((covered, _BASE, "o", "interval holds the truth"),
             (~covered, _FLAG, "X", "interval misses the truth"))  # fmt: skip
    for mask, colour, marker, label in kinds:
        if not mask.any():
            continue
        sub = part[mask]
        truth, score = sub["truth"].to_numpy(float), sub["score"].to_numpy(float)
        ax.errorbar(truth, score, yerr=[score - sub["lower"].to_numpy(float),
                    sub["upper"].to_numpy(float) - score], fmt=marker,
                    markersize=3 if marker == "o" else 5, color=colour,
                    elinewidth=0.7, alpha=0.8, label=f"{label} ({int(mask.sum())})")  # fmt: skip
    low = float(min(part["truth"].min(), part["lower"].min()))
    high = float(max(part["truth"].max(), part["upper"].max()))
    ax.plot([low, high], [low, high], color="0.5", linewidth=0.8)
    ax.set_xlabel("true score (all the model's items)")
    ax.set_ylabel(f"estimate after {int(budget):,} items")
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    return ax


def plot_estimate_placement(
    estimates: pd.DataFrame, reference: Any = None, ax: Axes | None = None
) -> Axes:
    """New models' scores and intervals among the calibration models' scores: where each
    would rank, and how far its interval reaches.

    Parameters
    ----------
    estimates : DataFrame
        ``EstimateSet.to_frame()`` (or its first rows): ``model``, ``score``, ``lower``,
        ``upper``; drawn in its order, the first on top.
    reference : array-like of shape (n_calibration_models,), optional
        The calibration models' full-benchmark scores, drawn as a rug on the bottom row and
        as faint vertical lines; None: not drawn.
    ax : Axes, optional
        Where to draw (default: a new figure sized to the rows).

    Returns
    -------
    Axes
        One horizontal interval per new model (its point estimate marked).
    """
    n = len(estimates)
    ax = _axes(ax, (6.4, max(2.4, 0.9 + 0.32 * (n + 1))))
    rows = np.arange(n, 0, -1, dtype=float)
    score = estimates["score"].to_numpy(float)
    lower, upper = estimates["lower"].to_numpy(float), estimates["upper"].to_numpy(float)
    # a point outside its own interval (a hand-made row) is drawn, not a matplotlib error
    ax.errorbar(score, rows, xerr=[np.clip(score - lower, 0, None),
                np.clip(upper - score, 0, None)], fmt="o", color=_BASE,
                markersize=4, elinewidth=1.4, capsize=3,
                label="new model: score, interval")  # fmt: skip
    labels = [_text(m) for m in estimates["model"]]
    if reference is not None and len(reference):
        values = np.asarray(reference, dtype=float)
        values = values[np.isfinite(values)]
        for value in values:
            ax.axvline(value, color="0.85", linewidth=0.6, zorder=0)
        ax.plot(values, np.zeros(len(values)), "|", color="0.35", markersize=12,
                label=f"calibration models ({len(values):,})")  # fmt: skip
        ticks, labels = np.r_[rows, 0.0], [*labels, "calibration models"]
    else:
        ticks = rows
    ax.set_yticks(ticks, labels, fontsize=8)
    ax.set_ylim(-0.8 if reference is not None else 0.4, n + 0.6)
    ax.set_xlabel("full-benchmark score (mean over items)")
    ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2,
              frameon=False)  # fmt: skip
    return ax
