"""Leave-one-model-out experiment of :func:`~latentbench.select.estimate` on a matrix.

Each model in turn is the new one and the others calibrate (one fit per held-out model);
the estimate runs to the largest budget (and on to ``precision`` when asked), and every
budget's score, interval, error and coverage is recorded. The engine of
``latentbench experiment --task estimate`` (see ``benchmarks/bench_estimate.py`` for the
comparison with the baselines).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from latentbench.exceptions import InputError
from latentbench.select._estimate import _rng
from latentbench.select._estimate_calibration import from_matrix
from latentbench.select._estimate_design import SequentialEstimate
from latentbench.select._experiment_stats import wilson_interval

if TYPE_CHECKING:
    import pandas as pd

    from latentbench.io import ResponseMatrix

__all__ = ["estimate_experiment", "summarize_estimate_experiment"]


def estimate_experiment(
    matrix: ResponseMatrix,
    *,
    budgets: tuple[int, ...] = (30, 100, 300),
    seeds: int = 1,
    models: list[str] | None = None,
    precision: float | None = 0.02,
    max_items: int | None = None,
    delta: float = 0.05,
    rank: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Leave-one-model-out estimates of every model's full-benchmark score.

    Parameters
    ----------
    matrix : ResponseMatrix
        At least 3 models.
    budgets : tuple of int
        Items at which the estimate is recorded.
    seeds : int
        Runs per model (seeds ``0 .. seeds - 1``).
    models : list of str, optional
        Held-out models (default: all).
    precision : float or None, default 0.02
        Also record the items needed for this half-width (the run continues past the largest
        budget until it is reached, or ``max_items``); the runs' confidence sequences are sized
        for it, as :func:`~latentbench.select.estimate` with ``precision`` (the intervals at
        the budgets come from the same runs).
    max_items : int, optional
        Most items per run (default: all the model answered).
    delta : float, default 0.05
        Error probability of each run's confidence sequence (the interval covers the truth at
        every step with probability at least ``1 - delta``).
    rank : int
        Rank of the calibration fits.
    progress : callable, optional
        Called as ``progress(done, total)`` after each (model, seed) run.

    Returns
    -------
    DataFrame
        One row per (model, seed, budget): ``model``, ``seed``, ``budget``, ``truth``,
        ``score``, ``lower``, ``upper``, ``error`` (score - truth), ``covered``, and
        ``items_to_precision`` (NaN when not reached), ``n_items``. ``attrs["warnings"]``
        lists the calibration fits that warned (one warning is also emitted for them all).
    """
    import pandas as pd

    if matrix.n_models < 3:
        raise InputError(f"{matrix.n_models} models; the experiment needs at least 3")
    ids = matrix.model_ids
    chosen = ids if models is None else list(models)
    unknown = [m for m in chosen if m not in ids]
    if unknown:
        raise InputError(f"models {unknown[:3]} are not in the matrix")
    if not budgets or any(int(b) < 1 for b in budgets):
        raise InputError(f"budgets={tuple(budgets)!r}; expected positive item counts")
    if seeds < 1:
        raise InputError(f"seeds={seeds!r}; expected at least 1")
    Y = np.asarray(matrix.scores, dtype=np.float64)
    rows: list[dict[str, object]] = []
    total, done = len(chosen) * seeds, 0
    fit_warnings: list[tuple[str, type[Warning], str]] = []
    for name in chosen:
        i = ids.index(name)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cal = from_matrix(matrix.subset(models=[m for m in ids if m != name]), rank=rank)
        if caught:
            fit_warnings.append((name, caught[0].category, str(caught[0].message)))
        pop = cal.positions([matrix.item_ids[j] for j in np.flatnonzero(np.isfinite(Y[i]))])
        y = Y[i][np.isfinite(Y[i])]
        truth = float(y.mean())
        limit = y.size if max_items is None else min(max_items, y.size)
        for seed in range(seeds):
            seq = SequentialEstimate(cal, pop, delta=delta, target=precision)
            rng = _rng(seed, name)
            reached = None
            marks: dict[int, tuple[float, float, float]] = {}
            for t in range(1, limit + 1):
                j, pi = seq.choose(rng)
                seq.observe(j, float(y[j]), pi)
                lo, up = seq.interval
                if t in budgets:
                    marks[t] = (seq.score, lo, up)
                if precision is not None and reached is None and (up - lo) / 2 <= precision:
                    reached = t
                if t >= max(budgets) and (precision is None or reached is not None):
                    break
            for b in budgets:
                if b not in marks:
                    continue
                score, lo, up = marks[b]
                rows.append(
                    {
                        "model": name,
                        "seed": seed,
                        "budget": b,
                        "truth": truth,
                        "score": score,
                        "lower": lo,
                        "upper": up,
                        "error": score - truth,
                        "covered": bool(lo <= truth <= up),
                        "items_to_precision": np.nan if reached is None else reached,
                        "n_items": y.size,
                    }
                )
            done += 1
            if progress is not None:
                progress(done, total)
    table = pd.DataFrame(rows)
    if fit_warnings:  # one line for all the held-out fits, kept with the table
        name, category, message = fit_warnings[0]
        note = (
            f"{len(fit_warnings)} of {len(chosen)} calibration fits warned (first, without "
            f"{name!r}: {message})"
        )
        table.attrs["warnings"] = [f"without {m!r}: {text}" for m, _, text in fit_warnings]
        warnings.warn(note, category, stacklevel=2)
    return table


def _number(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def summarize_estimate_experiment(table: pd.DataFrame) -> dict[str, Any]:
    """Per-budget error, coverage and width of an :func:`estimate_experiment` table, and the
    items its runs needed to reach the precision.

    Standard errors are over held-out models (each model's runs averaged first), since a
    model's seeds share its calibration and truth.

    Parameters
    ----------
    table : DataFrame
        The output of :func:`estimate_experiment`.

    Returns
    -------
    dict
        ``by_budget``: one dict per budget with ``budget``, ``models``, ``runs``, ``mae``
        (mean absolute error of the score), ``mae_se``, ``coverage`` (fraction of runs whose
        interval held the truth), ``coverage_se``, ``coverage_lower`` and ``coverage_upper``
        (the Wilson 95% interval of ``coverage`` over the held-out models, which stays
        informative where every run covered and the SE is 0), ``half_width`` (mean); ``precision``:
        ``runs``, ``reached`` (runs that reached the precision), ``median_items`` and
        ``mean_items`` over those (None when none did). SEs are None with one model.
    """
    needed = {"model", "seed", "budget", "error", "covered", "lower", "upper"}
    missing = sorted(needed - set(table.columns))
    if missing:
        raise InputError(f"table lacks column(s) {missing}; expected estimate_experiment's")
    frame = table.assign(
        abs_error=table["error"].abs(),
        covered=table["covered"].astype(float),
        half_width=(table["upper"] - table["lower"]) / 2,
    )
    by_budget: list[dict[str, Any]] = []
    for _, part in frame.groupby("budget", sort=True):
        per_model = part.groupby("model")[["abs_error", "covered", "half_width"]].mean()
        n = len(per_model)
        se = per_model.std(ddof=1) / math.sqrt(n) if n > 1 else None
        wilson = wilson_interval(float(per_model["covered"].mean()), n)
        by_budget.append(
            {
                "budget": int(part["budget"].iloc[0]),
                "models": n,
                "runs": len(part),
                "mae": _number(per_model["abs_error"].mean()),
                "mae_se": None if se is None else _number(se["abs_error"]),
                "coverage": _number(per_model["covered"].mean()),
                "coverage_se": None if se is None else _number(se["covered"]),
                "coverage_lower": _number(wilson[0]),
                "coverage_upper": _number(wilson[1]),
                "half_width": _number(per_model["half_width"].mean()),
            }
        )
    runs = frame.drop_duplicates(["model", "seed"])
    items = runs["items_to_precision"] if "items_to_precision" in runs else runs["budget"] * np.nan
    reached = items.dropna()
    precision = {
        "runs": len(runs),
        "reached": len(reached),
        "median_items": _number(float(reached.median())) if len(reached) else None,
        "mean_items": _number(float(reached.mean())) if len(reached) else None,
    }
    return {"by_budget": by_budget, "precision": precision}
