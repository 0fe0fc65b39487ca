"""Statistics of replay experiments: the budget at which a policy reaches a target accuracy,
and paired-bootstrap savings of one policy against another (``docs/selection.md``,
Experiments)."""

from __future__ import annotations

import math

import numpy as np

from latentbench.exceptions import InputError

__all__ = ["budget_to_accuracy", "paired_saving", "paired_saving_at_stop", "wilson_interval"]


def budget_to_accuracy(
    correct: np.ndarray,
    grid: np.ndarray,
    *,
    target: float = 0.95,
    n_boot: int = 200,
    random_state: int = 0,
) -> dict[str, float]:
    """Budget at which identification accuracy reaches ``target``, bootstrapped over seeds.

    Parameters
    ----------
    correct : ndarray of bool, shape (n_seeds, G)
        Whether the recommendation after ``grid[g]`` post-init cells was the true best.
    grid : ndarray of shape (G,)
        Budgets (increasing).
    target : float
    n_boot : int
        Bootstrap resamples of seeds (``default_rng(random_state)``).

    Returns
    -------
    dict
        ``point``: the estimate, the first budget where the accuracy curve of all the seeds
        together is >= target (NaN: it never is, within ``grid``); ``sustained_point``: the
        first budget after which that curve stays >= target. The bootstrap gives only their
        spread: ``first_sd`` / ``sustained_sd`` are the SDs of the resamples' crossings,
        ``reached`` the fraction of resamples whose curve reaches the target (those that
        never do have no crossing and are left out of the SDs). ``first`` / ``sustained``
        are the means of the resamples' crossings (biased towards the early crossings of the
        resamples that reach the target: not an estimate to report).
    """
    correct = np.asarray(correct, dtype=np.float64)
    grid = np.asarray(grid)
    rng = np.random.default_rng(random_state)
    S = correct.shape[0]
    first = np.full(n_boot, np.nan)
    sustained = np.full(n_boot, np.nan)
    for k in range(n_boot):
        curve = correct[rng.integers(0, S, S)].mean(axis=0)
        first[k], sustained[k] = _crossings(curve, grid, target)
    point, sustained_point = _crossings(correct.mean(axis=0), grid, target)

    def mean(draws: np.ndarray) -> float:
        return float(np.nanmean(draws)) if np.isfinite(draws).any() else float("nan")

    def sd(draws: np.ndarray) -> float:
        return float(np.nanstd(draws)) if np.isfinite(draws).any() else float("nan")

    return {
        "point": point,
        "sustained_point": sustained_point,
        "first": mean(first),
        "first_sd": sd(first),
        "sustained": mean(sustained),
        "sustained_sd": sd(sustained),
        "reached": float(np.isfinite(first).mean()),
    }


def _crossings(curve: np.ndarray, grid: np.ndarray, target: float) -> tuple[float, float]:
    """The first budget of ``grid`` where ``curve`` is >= ``target``, and the first after
    which it stays there (NaN, NaN: never; a curve that dips at the last budget has a first
    crossing but no sustained one)."""
    ok = curve >= target - 1e-12
    if not ok.any():
        return float("nan"), float("nan")
    first = float(grid[int(np.argmax(ok))])
    bad = np.flatnonzero(~ok)
    if bad.size == 0:
        return first, float(grid[0])
    if bad[-1] + 1 < grid.size:
        return first, float(grid[bad[-1] + 1])
    return first, float("nan")


def _se(values: np.ndarray) -> float:
    """Standard error of a mean over seeds (NaN with fewer than two)."""
    values = np.asarray(values, dtype=float)
    return float(values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else float("nan")


def _first_crossing(curve: np.ndarray, grid: np.ndarray, target: float) -> float:
    ok = curve >= target - 1e-12
    return float(grid[int(np.argmax(ok))]) if ok.any() else float("nan")


def _interval(draws: np.ndarray, point: float, name: str) -> dict[str, float]:
    """``point`` with the SE and 95 % interval of the finite ``draws``; all NaN around a
    point that is NaN (no saving on the full sample: a spread from the resamples that happen
    to reach the target would describe a number that is not there)."""
    finite = draws[np.isfinite(draws)]
    if finite.size < 2 or not np.isfinite(point):
        nan = float("nan")
        return {name: point, f"{name}_se": nan, f"{name}_lo": nan, f"{name}_hi": nan}
    lo, hi = np.percentile(finite, [2.5, 97.5])
    return {
        name: point,
        f"{name}_se": float(finite.std(ddof=1)),
        f"{name}_lo": float(lo),
        f"{name}_hi": float(hi),
    }


def paired_saving(
    correct: np.ndarray,
    reference: np.ndarray,
    grid: np.ndarray,
    *,
    init: int = 0,
    ref_init: int = 0,
    target: float = 0.95,
    n_boot: int = 200,
    random_state: int = 0,
) -> dict[str, float]:
    """Saving in the budget to ``target`` accuracy against a reference, with a paired bootstrap.

    Both policies ran on the same seeds (the same initial cells), so seeds are resampled
    together: each resample gives both first-crossing budgets and their saving; the spread
    of those savings is the standard error, their 2.5 and 97.5 percentiles the interval.

    Parameters
    ----------
    correct, reference : ndarray of bool, shape (n_seeds, G)
        Per seed (same order in both) whether the recommendation after ``grid[g]`` post-init
        cells was the true best.
    grid : ndarray of shape (G,)
    init, ref_init : int
        Initial cells of each (added for the total saving).
    target : float
    n_boot : int
    random_state : int

    Returns
    -------
    dict
        ``saved_post_init_pct`` and ``saved_total_pct`` (``100 (ref - policy) / ref`` from
        the full-sample curves), each with ``_se``, ``_lo``, ``_hi`` from the resamples
        (resamples where either never reaches ``target`` are left out; all NaN when the
        full-sample saving is NaN).
    """
    a = np.asarray(correct, dtype=np.float64)
    r = np.asarray(reference, dtype=np.float64)
    if a.shape != r.shape:
        raise InputError(f"paired curves of shapes {a.shape} and {r.shape}; expected the same")
    rng = np.random.default_rng(random_state)
    n = a.shape[0]
    post = np.full(n_boot, np.nan)
    total = np.full(n_boot, np.nan)
    for k in range(n_boot):
        idx = rng.integers(0, n, n)
        x = _first_crossing(a[idx].mean(axis=0), grid, target)
        y = _first_crossing(r[idx].mean(axis=0), grid, target)
        if y > 0:
            post[k] = 100 * (y - x) / y
        total[k] = 100 * ((y + ref_init) - (x + init)) / (y + ref_init)
    x = _first_crossing(a.mean(axis=0), grid, target)
    y = _first_crossing(r.mean(axis=0), grid, target)
    point_post = 100 * (y - x) / y if y > 0 else float("nan")
    point_total = 100 * ((y + ref_init) - (x + init)) / (y + ref_init)
    return {
        **_interval(post, point_post, "saved_post_init_pct"),
        **_interval(total, point_total, "saved_total_pct"),
    }


def paired_saving_at_stop(
    post: np.ndarray,
    ref_post: np.ndarray,
    init: int = 0,
    ref_init: int = 0,
    *,
    n_boot: int = 200,
    random_state: int = 0,
) -> dict[str, float]:
    """Saving in mean cells at the certified stop against a reference, paired over seeds.

    Returns
    -------
    dict
        As :func:`paired_saving`, from the mean post-init (and total) cells at the stop.
    """
    a, r = np.asarray(post, dtype=float), np.asarray(ref_post, dtype=float)
    rng = np.random.default_rng(random_state)
    idx = rng.integers(0, a.size, (n_boot, a.size))
    x, y = a[idx].mean(axis=1), r[idx].mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws_post = 100 * (y - x) / y
    draws_total = 100 * ((y + ref_init) - (x + init)) / (y + ref_init)
    mx, my = a.mean(), r.mean()
    point_post = 100 * (my - mx) / my if my > 0 else float("nan")
    point_total = 100 * ((my + ref_init) - (mx + init)) / (my + ref_init)
    return {
        **_interval(draws_post, point_post, "saved_post_init_pct"),
        **_interval(draws_total, point_total, "saved_total_pct"),
    }


# ---------------------------------------------------------------------------- workers


def wilson_interval(share: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval of a share observed on ``n`` units (95% by default).

    Unlike ``share -/+ z se`` it does not collapse at a share of 0 or 1: 53 of 53 intervals
    covering gives [0.932, 1], where the standard error is 0. NaN in, NaN out.

    Examples
    --------
    >>> [round(v, 3) for v in wilson_interval(1.0, 53)]
    [0.932, 1.0]
    """
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return max(centre - half, 0.0), min(centre + half, 1.0)
