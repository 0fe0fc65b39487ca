"""Leave-one-model-out experiment of :func:`~latentbench.select.estimate` on a matrix.

Each model in turn is the new one and the others calibrate (one fit per held-out model);
the estimate runs to the largest budget (and on to ``precision`` when asked), and every
budget's score, interval, error and coverage is recorded. The engine of
``latentbench experiment --task estimate`` (see ``benchmarks/bench_estimate.py`` for the
comparison with the baselines).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from latentbench.exceptions import InputError
from latentbench.select._estimate import _rng
from latentbench.select._estimate_calibration import from_matrix
from latentbench.select._estimate_design import SequentialEstimate

if TYPE_CHECKING:
    import pandas as pd

    from latentbench.io import ResponseMatrix

__all__ = ["estimate_experiment"]


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
        budget until it is reached, or ``max_items``).
    max_items : int, optional
        Most items per run (default: all the model answered).
    delta : float
    rank : int
        Rank of the calibration fits.

    Returns
    -------
    DataFrame
        One row per (model, seed, budget): ``model``, ``seed``, ``budget``, ``truth``,
        ``score``, ``lower``, ``upper``, ``error`` (score - truth), ``covered``, and
        ``items_to_precision`` (NaN when not reached), ``n_items``.
    """
    import pandas as pd

    if matrix.n_models < 3:
        raise InputError(f"{matrix.n_models} models; the experiment needs at least 3")
    ids = matrix.model_ids
    chosen = ids if models is None else list(models)
    unknown = [m for m in chosen if m not in ids]
    if unknown:
        raise InputError(f"models {unknown[:3]} are not in the matrix")
    Y = np.asarray(matrix.scores, dtype=np.float64)
    rows: list[dict[str, object]] = []
    for name in chosen:
        i = ids.index(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cal = from_matrix(matrix.subset(models=[m for m in ids if m != name]), rank=rank)
        pop = cal.positions([matrix.item_ids[j] for j in np.flatnonzero(np.isfinite(Y[i]))])
        y = Y[i][np.isfinite(Y[i])]
        truth = float(y.mean())
        limit = y.size if max_items is None else min(max_items, y.size)
        for seed in range(seeds):
            seq = SequentialEstimate(cal, pop, delta=delta)
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
    return pd.DataFrame(rows)
