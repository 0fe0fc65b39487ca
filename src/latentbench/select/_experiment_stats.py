"""Statistics of replay experiments: the budget at which a policy reaches a target accuracy,
and paired-bootstrap savings of one policy against another (``docs/selection.md``,
Experiments)."""

from __future__ import annotations

import math

import numpy as np

from latentbench.exceptions import InputError

__all__ = [
    "budget_sd_note",
    "budget_to_accuracy",
    "paired_saving",
    "paired_saving_at_stop",
    "wilson_interval",
]


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
    random_state : int, default 0
        Seed of the bootstrap resamples.

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


MIN_SEEDS_FOR_INTERVAL = 5
"""Fewest seeds whose paired bootstrap gives a saving an SE and interval: resampling 2 seeds
draws only 3 different sets of them (4 seeds: 35), so the percentiles of 200 resamples are a
few repeated values (``-890 ± 0 [-890, -890]``, or a point at one end of its interval)."""

MIN_RESAMPLE_SHARE = 0.95
"""Smallest share of the resamples that must give a saving (both policies reach the target)
for its interval: the percentiles of the others alone describe the resamples that happen to
reach it, not the saving."""


MIN_TAIL_SEEDS = 1
"""Fewest seeds that may still be wrong where the accuracy of the seeds together first reaches
the target (``floor(n (1 - target))``) for :func:`paired_saving` to give an interval: 20 seeds
at 0.95. With fewer (5 to 19 seeds at 0.95) that crossing is the budget where every seed is
right, the slowest seed's, and the bootstrap of a sample maximum fails (a resample can only
drop the slowest seed, so its crossings move one way): on the per-seed curves of 200 PULSE and
UCB-E runs on BFCL and MMLU-Pro, the 95 % interval held the 200-seed saving in 81 to 89 % of
subsets of 5 to 10 seeds (BFCL: 88 % at 15 seeds, 83 % at 19), and 93 to 95 % from 20 seeds
(``benchmarks/RESULTS_select.md``, "Saving intervals at few seeds")."""


def _tail_seeds(n_seeds: int, target: float) -> int:
    """How many of ``n_seeds`` may be wrong where their accuracy is first >= ``target``."""
    return math.floor(n_seeds * (1 - target) + 1e-9)


def _seeds_needed(target: float) -> int | None:
    """The fewest seeds of which :data:`MIN_TAIL_SEEDS` may be wrong where their accuracy is
    first >= ``target`` (20 at 0.95); None at a target of 1 (or above), where every seed must
    be right at the crossing whatever their number."""
    if not target < 1:
        return None
    return math.ceil(MIN_TAIL_SEEDS / (1 - target) - 1e-9)


def budget_sd_note(n_seeds: int, target: float = 0.95) -> str | None:
    """Why an experiment of ``n_seeds`` seeds gives its budgets to ``target`` (and to 90 %)
    accuracy no SD (None: it gives both, or one seed, said apart).

    Where fewer than :data:`MIN_TAIL_SEEDS` seeds may be wrong at the crossing (below 20
    seeds at 0.95, 10 at 0.9) the budget is the slowest seed's, and the SD of its bootstrap
    crossings is that of resamples that can only drop the slowest seed: not its spread.

    Parameters
    ----------
    n_seeds : int
    target : float, default 0.95

    Returns
    -------
    str or None
    """
    if n_seeds < 2:
        return None
    short = [t for t in sorted({target, 0.9}) if _tail_seeds(n_seeds, t) < MIN_TAIL_SEEDS]
    if not short:
        return None
    goals = " and ".join(f"{100 * t:g} %" for t in short)
    need = _seeds_needed(max(short))
    more = f"{need} or more seeds give one" if need else "no number of seeds gives one at 100 %"
    return (
        f"no SD for the budgets to {goals}: with {n_seeds} seeds each is where all of them "
        f"are first right, the slowest seed's budget, which a bootstrap over seeds cannot "
        f"spread ({more})"
    )


def _interval(
    draws: np.ndarray,
    point: float,
    name: str,
    n_seeds: int,
    what: str,
    target: float | None = None,
) -> dict[str, float | int | str | None]:
    """``point`` with the SE and 95 % interval of the finite ``draws``, ``{name}_resamples``
    (how many resamples gave a saving) and ``{name}_no_interval`` (None, or why the SE and
    interval are NaN: a NaN point, since a spread of the resamples that happen to reach the
    target would describe a number that is not there; fewer than
    :data:`MIN_SEEDS_FOR_INTERVAL` seeds; with a ``target`` accuracy (a saving to a
    crossing), fewer than :data:`MIN_TAIL_SEEDS` seeds that may be wrong at it; fewer than
    :data:`MIN_RESAMPLE_SHARE` of the resamples giving a saving). ``what`` says what a
    resample without a saving lacks."""
    finite = draws[np.isfinite(draws)]
    n_boot = draws.size
    why = None
    if not np.isfinite(point):
        why = "no saving on all the seeds"
    elif n_seeds < MIN_SEEDS_FOR_INTERVAL:
        why = (
            f"{n_seeds} seed{'' if n_seeds == 1 else 's'}: too few to resample "
            f"({MIN_SEEDS_FOR_INTERVAL} or more give an interval)"
        )
    elif target is not None and _tail_seeds(n_seeds, target) < MIN_TAIL_SEEDS:
        need = _seeds_needed(target)
        why = (
            f"{n_seeds} seeds: {target:g} accuracy is first reached where all of them are "
            f"right, the slowest seed's budget, whose bootstrap interval undercovers "
            + (
                f"({need} or more seeds give an interval)"
                if need
                else "(at this target whatever the number of seeds)"
            )
        )
    elif finite.size < max(2, math.ceil(MIN_RESAMPLE_SHARE * n_boot)):
        why = (
            f"only {finite.size} of {n_boot} resamples give a saving ({what}); an interval "
            f"needs {100 * MIN_RESAMPLE_SHARE:.0f} %"
        )
    out: dict[str, float | int | str | None] = {
        name: point,
        f"{name}_resamples": int(finite.size),
        f"{name}_no_interval": why,
    }
    if why is not None:
        nan = float("nan")
        return {**out, f"{name}_se": nan, f"{name}_lo": nan, f"{name}_hi": nan}
    lo, hi = np.percentile(finite, [2.5, 97.5])
    return {
        **out,
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
) -> dict[str, float | int | str | None]:
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
        (resamples where either never reaches ``target`` are left out), ``_resamples`` (how
        many gave a saving) and ``_no_interval``: None, or why ``_se``, ``_lo`` and ``_hi``
        are NaN (the full-sample saving is NaN; fewer than :data:`MIN_SEEDS_FOR_INTERVAL`
        seeds; fewer than ``1 / (1 - target)`` seeds (20 at 0.95,
        :data:`MIN_TAIL_SEEDS`), where the crossing is the slowest seed's and a bootstrap
        interval undercovers; fewer than :data:`MIN_RESAMPLE_SHARE` of the resamples gave a
        saving).
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
    what = f"both policies reaching {target:g} accuracy"
    return {
        **_interval(post, point_post, "saved_post_init_pct", n, what, target),
        **_interval(total, point_total, "saved_total_pct", n, what, target),
    }


def paired_saving_at_stop(
    post: np.ndarray,
    ref_post: np.ndarray,
    init: int = 0,
    ref_init: int = 0,
    *,
    n_boot: int = 200,
    random_state: int = 0,
) -> dict[str, float | int | str | None]:
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
    what = "the reference using post-init cells"
    return {
        **_interval(draws_post, point_post, "saved_post_init_pct", a.size, what),
        **_interval(draws_total, point_total, "saved_total_pct", a.size, what),
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
