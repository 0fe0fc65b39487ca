"""Adversarial coverage audit of ``estimate``, ``tiny`` + ``estimate(items=)`` and ``compare``.

The guarantee (docs/estimate.md, "The guarantee") is over the item draws for fixed answers,
whatever the calibration. Each scenario fixes a calibration (often deliberately wrong) and a
few answer vectors, varies the seed, and counts a miss when the interval failed to hold the
target at the stop or at any earlier step (``trajectory``). Every run is also checked for the
internal statements: the point inside the interval, the rank and ability intervals implied by
the score interval, ``stopped`` / ``n_evaluated`` / the items agreeing with what was revealed,
and every draw probability at least ``floor / |U|``.

Scenarios the existing tests and benchmarks leave open (``bench_estimate_robust.py`` covers a
25 x 1,000 calibration; ``test_coverage_simulation`` one seed per model):

- ``small``: 20 models x 100 items (rank-3 truth at rank 1), budget 60 (most of the pool:
  without replacement matters), and stopped at precision 0.08;
- ``frac``: 70 x 2,000, a third of the items' parameters scrambled, answers mostly 0/1 with
  a fifth at 0.5;
- ``big``: 30 x 12,000, rank-3 truth at rank 1;
- ``far``: a new model above every calibration model, and one near 0 everywhere;
- ``ties``: 40 x 500 where items come in 25 groups of identical columns (tied parameters) and
  calibration models share scores; new answers that split each group;
- ``nan``: new models that skipped 40% of the items, more often where they were right
  (the target is the mean over the answered items);
- ``precision``: 40 x 2,000 scrambled, stopped at precision 0.03;
- ``tiny``: fixed designs of k = 30 (``tiny`` seeds varied) on a scrambled rank-1 calibration
  of a rank-3 world;
- ``tinycompare``: ``compare(items=)`` of two models that answered a ``tiny`` design (k = 30,
  its seed varied) of a scrambled rank-1 calibration of a rank-3 world, 30 x 400: coverage of
  the full-benchmark difference and wrong certified signs;
- ``margin``: ``compare`` with a true difference of +0.03 and ``margin=0.02`` (a verdict
  ``equivalent`` is wrong) and with a true difference of 0 (a certified sign is wrong);
- ``weighted``: the macro score (``weights=`` a group per item: every group weighs the
  same, its items equally) on a shared matrix's own item groups (``--data``: BFCL v2's 12
  categories, MMLU-Pro's 14 subjects, AlpacaEval's 5 instruction sources), leave-one-model-
  out (``--models`` held-out models evenly spaced by name, 0 for all; each calibrated by
  the others at rank 1): ``estimate(weights=)`` at ``--budget`` (coverage of the macro
  score at the stop and at every step with its Monte Carlo SE, mean absolute error, items
  used, the held-out models whose misses exceed ``delta`` by 3 binomial SE), and
  ``compare(weights=)`` at ``--compare-budget`` of each held-out model with the model of the
  nearest macro score and with the next held-out model (both left out of the calibration):
  coverage of the macro difference at the stop, the share of runs certified and the wrong
  signs (a sign certified for an exact tie is wrong). The target is the library's:
  ``sum w y / sum w`` over the answered items (both answered, for ``compare``) with the
  macro weights of the calibrated items, computed here from the matrix. Every run is also
  checked: the point inside the interval, the rank interval the one implied by the
  calibration models' weighted observed scores, items / answers / ``n_evaluated`` /
  ``stopped`` consistent, and every draw probability at least ``floor w_J / sum_U w``.
  The default (``bfcl_v2``, 4 held-out models, 20 seeds, ``delta`` 0.05) takes about a
  minute; figures in ``RESULTS_estimate.md``, "Weighted (macro) scores audited".

Usage::

    python benchmarks/bench_estimate_audit.py --scenario small --seeds 200 --delta 0.2
    python benchmarks/bench_estimate_audit.py --scenario weighted --data mmlu_pro --models 0 \
        --seeds 20 --delta 0.2
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from latentbench import ResponseMatrix
from latentbench.select import EstimateResult, compare, estimate, tiny
from latentbench.select._estimate_calibration import (
    Calibration,
    from_matrix,
    score_ability,
    score_ability_knots,
)

DATA = Path("/work/shared/data")
# each matrix's item groups: (items table, column)
GROUPS = {
    "bfcl_v2": ("bfcl_v2_items", "category"),
    "mmlu_pro": ("mmlu_pro_items", "category"),
    "alpacaeval2_weighted": ("alpacaeval_items", "dataset"),
    "alpacaeval1_gpt4": ("alpacaeval_items", "dataset"),
}


def simulate(m: int, n: int, rank: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(m, rank))
    V = np.abs(rng.normal(size=(n, rank))) * (1.2 / math.sqrt(rank))
    if rank > 1:
        V[:, 1:] *= rng.choice([-1.0, 1.0], size=(n, rank - 1)) * 1.5
    b = rng.normal(size=n)
    P = 1.0 / (1.0 + np.exp(-(U @ V.T + b)))
    return (rng.random((m, n)) < P).astype(np.float64)


def matrix(Y: np.ndarray) -> ResponseMatrix:
    models = [f"m{i}" for i in range(Y.shape[0])]
    items = [f"q{j:05d}" for j in range(Y.shape[1])]
    return ResponseMatrix.from_wide(pd.DataFrame(Y, index=models, columns=items))


def scramble(cal: Calibration, share: float, seed: int) -> Calibration:
    rng = np.random.default_rng(seed)
    n = cal.n_items
    idx = rng.choice(n, size=int(share * n), replace=False)
    perm = idx[rng.permutation(idx.size)]
    V, b = cal.V.copy(), cal.b.copy()
    V[idx], b[idx] = cal.V[perm], cal.b[perm]
    feats = None
    if cal.item_features is not None:
        feats = cal.item_features.copy()
        feats[idx] = cal.item_features[perm]
    return Calibration(
        cal.item_ids,
        V,
        b,
        cal.sigma,
        cal.model_ids,
        cal.model_scores,
        cal.model_factors,
        "scrambled",
        "x",
        feats,
    )


def check_run(
    cal: Calibration, r, y: np.ndarray, floor: float = 0.5, knots_of: dict | None = None
) -> list[str]:
    """Internal statements of one result; returns the problems found. ``knots_of``: a dict
    kept across the runs of one calibration, holding the score -> ability knots per answered
    population (they depend on ``cal`` and the population only, not on the run)."""
    bad = []
    if not r.lower <= r.score <= r.upper:
        bad.append(f"point {r.score} outside [{r.lower}, {r.upper}]")
    if not r.rank_lower <= r.rank <= r.rank_upper:
        bad.append("rank outside its interval")
    if not r.theta_lower <= r.theta <= r.theta_upper:
        bad.append("theta outside its interval")
    others = np.asarray(cal.model_scores, dtype=float)
    others = others[np.isfinite(others) & np.asarray([m != r.model for m in cal.model_ids])]
    if r.rank_lower != 1 + int((others > r.upper).sum()):
        bad.append("rank_lower not implied by upper")
    if r.rank_upper != 1 + int((others > r.lower).sum()):
        bad.append("rank_upper not implied by lower")
    pop = np.flatnonzero(np.isfinite(y))
    if r.options.get("design") == "adaptive":
        key = pop.tobytes()
        knots = None if knots_of is None else knots_of.get(key)
        if knots is None:
            knots = score_ability_knots(cal, pop, None)
            if knots_of is not None:
                knots_of[key] = knots
        a_lo, a_hi = score_ability(knots, [r.lower, r.upper])
        if not (r.theta_lower <= a_lo + 1e-12 and a_hi - 1e-12 <= r.theta_upper):
            bad.append("theta interval misses the restated score interval")
        keep = np.isfinite(cal.model_scores) & np.asarray([m != r.model for m in cal.model_ids])
        th = np.asarray(cal.abilities, dtype=float)[keep]
        if not (
            1 + int((th > r.theta_upper).sum()) <= r.rank_lower
            and 1 + int((th > r.theta_lower).sum()) >= r.rank_upper
        ):
            bad.append("theta interval implies fewer ranks than the rank interval")
        n_th, rk = th.size, r.rank
        exists = rk in (1, n_th + 1) or np.sort(th)[n_th - rk] < np.sort(th)[n_th - rk + 1]
        if exists and 1 + int((th > r.theta).sum()) != r.rank:  # (a tie can leave no such)
            bad.append(f"theta's rank {1 + int((th > r.theta).sum())} is not rank {r.rank}")
    k = r.n_evaluated
    if not (len(r.items) == len(r.answers) == len(r.probabilities) == k == len(set(r.items))):
        bad.append("items / answers / probabilities / n_evaluated disagree")
    if r.trajectory.shape[0] != k:
        bad.append("trajectory length")
    pos = cal.positions(list(r.items))
    if not np.array_equal(np.asarray(r.answers), y[pos]):
        bad.append("answers are not the model's")
    n = r.n_items
    for t, p in enumerate(r.probabilities):
        if not floor / (n - t) * (1 - 1e-9) <= p <= 1.0:
            bad.append(f"probability {p} below floor / |U| = {floor / (n - t)} at round {t}")
            break
    half = (r.upper - r.lower) / 2
    stopped = r.stopped
    if stopped == "budget" and k != r.options["budget"]:
        bad.append("stopped at budget with another count")
    if stopped == "precision" and not half <= r.options["precision"]:
        bad.append("stopped at precision without reaching it")
    if stopped == "exhausted" and (k != n or r.lower != r.upper):
        bad.append("exhausted but not fully revealed")
    if stopped != "exhausted" and stopped != "items" and k >= n:
        bad.append("fully revealed but not 'exhausted'")
    return bad


def run_estimates(
    cal: Calibration,
    rows: np.ndarray,
    seeds: int,
    delta: float,
    budget: int | None = 100,
    precision: float | None = None,
    truths: np.ndarray | None = None,
) -> dict[str, object]:
    tally = Tally()
    for i, y in enumerate(rows):
        truth = float(np.nanmean(y)) if truths is None else float(truths[i])
        for s in range(seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = estimate(
                    cal,
                    y,
                    model=f"new{i}",
                    budget=budget,
                    precision=precision,
                    delta=delta,
                    seed=s,
                )
            tally.add(r, truth, [f"row {i} seed {s}: {p}" for p in check_run(cal, r, y)])
    return tally.summary(delta)


class Tally:
    """Misses (at the stop and at any step), widths, items and problems of a set of runs."""

    def __init__(self) -> None:
        self.misses_end = self.misses_any = self.runs = 0
        self.problems: list[str] = []
        self.widths: list[float] = []
        self.evals: list[int] = []

    def add(self, r: EstimateResult, truth: float, problems: list[str]) -> None:
        self.runs += 1
        self.misses_end += not (r.lower <= truth <= r.upper)
        tr = r.trajectory
        self.misses_any += bool(((tr[:, 1] > truth) | (tr[:, 2] < truth)).any())
        self.widths.append((r.upper - r.lower) / 2)
        self.evals.append(r.n_evaluated)
        self.problems += problems

    def summary(self, delta: float) -> dict[str, object]:
        runs = self.runs
        cov = 1 - self.misses_any / runs
        se = math.sqrt(max(cov * (1 - cov), (1 - delta) * delta) / runs)
        return {
            "runs": runs,
            "coverage_end": round(1 - self.misses_end / runs, 4),
            "coverage_throughout": round(cov, 4),
            "mc_se": round(se, 4),
            "floor_3se": round(1 - delta - 3 * math.sqrt((1 - delta) * delta / runs), 4),
            "mean_half_width": round(float(np.mean(self.widths)), 4),
            "mean_items": round(float(np.mean(self.evals)), 1),
            "problems": self.problems[:5],
            "n_problems": len(self.problems),
        }


def scenario(name: str, seeds: int, delta: float) -> dict[str, object]:
    rng = np.random.default_rng(zlib.crc32(name.encode()))  # not hash(): salted
    if name == "small":
        Y = simulate(24, 100, 3, seed=1)
        cal = from_matrix(matrix(Y[:20]), rank=1)
        return run_estimates(cal, Y[20:], seeds, delta, budget=60)
    if name == "small_precision":
        Y = simulate(24, 100, 3, seed=1)
        cal = from_matrix(matrix(Y[:20]), rank=1)
        return run_estimates(cal, Y[20:], seeds, delta, budget=None, precision=0.08)
    if name == "skew":  # rare large inverse-probability jumps: right on the hardest items only
        Y = simulate(24, 200, 1, seed=10)
        cal = from_matrix(matrix(Y[:20]), rank=1)
        order = np.argsort(cal.population_prediction())
        rows = []
        for k in (2, 6, 20):
            hard = np.zeros(200)
            hard[order[:k]] = 1.0  # right on the k items predicted hardest, wrong elsewhere
            easy = np.ones(200)
            easy[order[-k:]] = 0.0  # wrong on the k items predicted easiest
            rows += [hard, easy]
        return run_estimates(cal, np.asarray(rows), seeds, delta, budget=60)
    if name == "frac":
        Y = simulate(74, 2000, 3, seed=2)
        cal = scramble(from_matrix(matrix(Y[:70]), rank=1), 1 / 3, seed=0)
        rows = Y[70:].copy()
        half = rng.random(rows.shape) < 0.2
        rows[half] = 0.5
        return run_estimates(cal, rows, seeds, delta, budget=100)
    if name == "big":
        Y = simulate(33, 12000, 3, seed=3)
        cal = from_matrix(matrix(Y[:30]), rank=1)
        return run_estimates(cal, Y[30:], seeds, delta, budget=100)
    if name == "far":
        Y = simulate(40, 1000, 1, seed=4)
        cal = from_matrix(matrix(Y[:40]), rank=1)
        top = np.ones((2, 1000))
        top[0, rng.choice(1000, 15, replace=False)] = 0.0  # 0.985, above every model
        top[1, rng.choice(1000, 2, replace=False)] = 0.0
        low = np.zeros((2, 1000))
        low[0, rng.choice(1000, 8, replace=False)] = 1.0  # 0.008
        # right exactly on the items the calibration finds hardest
        low[1, np.argsort(cal.b)[:30]] = 1.0
        return run_estimates(cal, np.vstack([top, low]), seeds, delta, budget=100)
    if name == "ties":
        base = simulate(40, 25, 1, seed=5)
        Y = np.repeat(base, 20, axis=1)  # 25 groups of 20 identical columns
        Y[:10] = Y[0]  # ten calibration models with the same answers: tied scores
        cal = from_matrix(matrix(Y[:36]), rank=1)
        rows = Y[36:].copy()
        for k in range(rows.shape[0]):  # split each group: half right, half wrong
            rows[k] = np.tile((np.arange(20) < 4 * (k + 1)).astype(float), 25)
        return run_estimates(cal, rows, seeds, delta, budget=100)
    if name == "nan":
        Y = simulate(44, 1000, 3, seed=6)
        cal = from_matrix(matrix(Y[:40]), rank=1)
        rows = Y[40:].copy()
        skip = rng.random(rows.shape) < np.where(rows == 1, 0.6, 0.2)
        rows[skip] = np.nan
        return run_estimates(cal, rows, seeds, delta, budget=100)
    if name == "precision":
        Y = simulate(44, 2000, 3, seed=7)
        cal = scramble(from_matrix(matrix(Y[:40]), rank=1), 1 / 3, seed=1)
        return run_estimates(cal, Y[40:], seeds, delta, budget=2000, precision=0.03)
    if name == "tiny":
        Y = simulate(35, 1000, 3, seed=8)
        cal = scramble(from_matrix(matrix(Y[:30]), rank=1), 1 / 3, seed=2)
        return run_tiny(cal, Y[30:], seeds, delta, k=30)
    if name == "tinycompare":
        return run_tiny_compare(seeds, delta)
    if name == "margin":
        return run_margin(seeds, delta)
    if name == "sign0":  # no margin: every certified sign is wrong
        return run_margin(seeds, delta, margin=None, budget=300, cases=(("diff0", 0.0),))
    raise SystemExit(f"unknown scenario {name}")


def run_tiny(cal: Calibration, rows: np.ndarray, seeds: int, delta: float, k: int):
    tally = Tally()
    for s in range(seeds):
        design = tiny(cal, k=k, seed=s)
        for i, y in enumerate(rows):
            truth = float(y.mean())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = estimate(cal, y, model=f"new{i}", items=design, delta=delta)
            problems = [f"row {i} design {s}: {p}" for p in check_run(cal, r, y)]
            if list(r.items) != design["item"].tolist():
                problems.append(f"row {i} design {s}: items are not the design's")
            tally.add(r, truth, problems)
    return tally.summary(delta)


def run_tiny_compare(
    seeds: int, delta: float, k: int = 30, first_seed: int = 0
) -> dict[str, object]:
    """``compare(items=)`` on ``tiny`` designs of ``k`` items (their seeds varied) of a
    scrambled rank-1 calibration of a rank-3 world (30 models x 400 items), three pairs (one
    of exactly equal scores: B's answers are A's reversed): misses of the full-benchmark
    difference, wrong certified signs, certified runs and the median interval width."""
    Y = simulate(34, 400, 3, seed=8)
    cal = scramble(from_matrix(matrix(Y[:30]), rank=1), 1 / 3, seed=2)
    pairs = [(Y[30], Y[31]), (Y[32], Y[33]), (Y[30], Y[30][::-1].copy())]
    runs = misses = wrong = certified = 0
    widths: list[float] = []
    problems: list[str] = []
    for s in range(first_seed, first_seed + seeds):
        design = tiny(cal, k=k, seed=s)
        for ya, yb in pairs:
            truth = float(ya.mean() - yb.mean())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = compare(cal, ya, yb, model_a="A", model_b="B", items=design, delta=delta)
            if list(r.items) != design["item"].tolist() or r.stopped != "items":
                problems.append(f"design {s}: not the design's items, or stopped {r.stopped}")
            if not np.allclose(r.probabilities, design["probability"], rtol=1e-12):
                problems.append(f"design {s}: probabilities are not the design's")
            if not r.lower <= r.difference <= r.upper:
                problems.append(f"design {s}: the point is outside its interval")
            runs += 1
            misses += not (r.lower <= truth <= r.upper)
            certified += r.higher is not None
            # a sign certified for an exact tie is wrong whichever it is
            wrong += r.higher is not None and (truth == 0 or (truth > 0) != (r.higher == "A"))
            widths.append(r.upper - r.lower)
    return {
        "runs": runs,
        "coverage": round(1 - misses / runs, 4),
        "mc_se": round(math.sqrt(delta * (1 - delta) / runs), 4),
        "wrong_signs": wrong,
        "certified": certified,
        "median_width": round(float(np.median(widths)), 3),
        "problems": problems,
    }


def run_margin(
    seeds: int,
    delta: float,
    margin: float | None = 0.02,
    budget: int = 1000,
    cases=None,
    n: int = 1000,
) -> dict[str, object]:
    Y = simulate(42, n, 3, seed=9)
    cal = from_matrix(matrix(Y[:40]), rank=1)
    rng = np.random.default_rng(9)
    a = Y[40].copy()
    b = a.copy()
    flip = rng.choice(n, n // 5, replace=False)  # a fifth of the items discordant
    b[flip] = 1 - b[flip]
    out = {}
    for label, target in cases or (("diff0.03_margin0.02", 0.03), ("diff0", 0.0)):
        bb = b.copy()
        gap = round(float(a.mean() - bb.mean() - target) * n)
        cand = np.flatnonzero(bb == (0 if gap > 0 else 1))
        bb[rng.choice(cand, abs(gap), replace=False)] = 1 if gap > 0 else 0
        truth = a.mean() - bb.mean()
        assert abs(truth - target) < 1e-9, truth
        wrong = miss = 0
        verdicts: dict[str, int] = {}
        for s in range(seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = compare(
                    cal, a, bb, model_a="A", model_b="B", margin=margin, delta=delta, seed=s,
                    budget=budget,
                )  # fmt: skip
            verdicts[r.stopped] = verdicts.get(r.stopped, 0) + 1
            miss += not (r.lower - 1e-12 <= truth <= r.upper + 1e-12)
            if target > 0 and r.stopped == "equivalent":
                wrong += 1
            if target == 0 and r.higher is not None:
                wrong += 1
        out[label] = {
            "runs": seeds,
            "wrong_verdicts": wrong,
            "misses": miss,
            "verdicts": verdicts,
            "mc_se_at_delta": round(math.sqrt(delta * (1 - delta) / seeds), 4),
        }
    return out


def load_groups(data: str, root: Path = DATA) -> tuple[pd.DataFrame, pd.Series]:
    """A shared matrix in long form (``model``, ``item``, ``score``) and its items' groups
    (a Series item -> group name), read as ``/work/shared/data/README.md`` describes them."""
    if data not in GROUPS:
        raise SystemExit(
            f"--data {data!r}: expected one of {sorted(GROUPS)} (matrices with groups)"
        )
    table, column = GROUPS[data]
    long = pd.read_parquet(root / f"{data}.parquet")
    groups = pd.read_parquet(root / f"{table}.parquet").set_index("item")[column].astype(str)
    return long, groups


def macro_weights(items: list[str], groups: pd.Series) -> np.ndarray:
    """The macro weights of ``items`` (every group the same total, its items equally), summing
    to 1, shape (len(items),)."""
    g = groups.reindex(items)
    if g.isna().any():
        raise SystemExit(f"{int(g.isna().sum())} items have no group, e.g. {g.index[g.isna()][0]}")
    codes, names = pd.factorize(g.to_numpy())
    return 1.0 / (names.size * np.bincount(codes)[codes])


def weighted_scores(w: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """``sum w y / sum w`` over each row's observed (finite) cells, shape (rows,)."""
    Y = np.atleast_2d(Y)
    seen = np.isfinite(Y)
    return np.where(seen, Y, 0.0) @ w / (seen @ w)


def _calibrate(long: pd.DataFrame, drop: list[str]) -> Calibration:
    """The rank-1 calibration of every model but ``drop`` (fit warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return from_matrix(ResponseMatrix.from_long(long[~long["model"].isin(drop)]), rank=1)


def _floor_problems(cal: Calibration, r, w: np.ndarray, pop: np.ndarray, floor: float) -> list[str]:
    """Every draw probability at least ``floor w_J / sum_U w`` (``pop``: the items that could
    be drawn, a boolean mask over the calibrated items), the items drawn in it and distinct."""
    pos = cal.positions(list(r.items))
    if len(set(pos.tolist())) != pos.size or not pop[pos].all():
        return ["an item drawn twice, of weight 0, or not answered"]
    left = w[pop].sum() - np.concatenate([[0.0], np.cumsum(w[pos])[:-1]])
    low = floor * w[pos] / left * (1 - 1e-9)
    bad = np.flatnonzero(np.asarray(r.probabilities) < low)
    return [f"probability below floor w_J / sum_U w at round {bad[0]}"] if bad.size else []


def check_weighted(
    cal: Calibration, r, y: np.ndarray, w: np.ndarray, others: np.ndarray, floor: float = 0.5
) -> list[str]:
    """Internal statements of one weighted ``estimate`` run: ``y`` the answers over the
    calibrated items (NaN where not answered), ``w`` their weights, ``others`` the calibration
    models' weighted observed scores (what the rank compares with)."""
    bad = []
    if not r.lower <= r.score <= r.upper:
        bad.append(f"point {r.score} outside [{r.lower}, {r.upper}]")
    if not r.rank_lower <= r.rank <= r.rank_upper:
        bad.append("rank outside its interval")
    if r.rank_lower != 1 + int((others > r.upper).sum()):
        bad.append("rank_lower not implied by upper and the weighted scores")
    if r.rank_upper != 1 + int((others > r.lower).sum()):
        bad.append("rank_upper not implied by lower and the weighted scores")
    k = r.n_evaluated
    if not (len(r.items) == len(r.answers) == len(r.probabilities) == k):
        bad.append("items / answers / probabilities / n_evaluated disagree")
    if not np.array_equal(np.asarray(r.answers), y[cal.positions(list(r.items))]):
        bad.append("answers are not the model's")
    pop = np.isfinite(y) & (w > 0)
    bad += _floor_problems(cal, r, w, pop, floor)
    if r.stopped == "budget" and k != r.options["budget"]:
        bad.append("stopped at budget with another count")
    if r.stopped == "exhausted" and (k != int(pop.sum()) or r.lower != r.upper):
        bad.append("exhausted but not fully revealed")
    return bad


def run_weighted(
    long: pd.DataFrame,
    groups: pd.Series,
    models: int = 4,
    seeds: int = 10,
    delta: float = 0.05,
    budget: int = 100,
    compare_budget: int = 500,
) -> dict[str, object]:
    """The ``weighted`` scenario (module docstring) on one matrix: ``long`` its cells
    (``model``, ``item``, ``score``), ``groups`` a Series item -> group over its items."""
    wide = long.pivot(index="model", columns="item", values="score")
    names = [str(m) for m in wide.index]
    held = names if models <= 0 else names[:: max(1, len(names) // models)][:models]
    full = weighted_scores(macro_weights(list(wide.columns), groups), wide.to_numpy(float))
    tally, errors, problems = Tally(), [], []
    below: list[tuple[str, int, float]] = []
    limit = delta * seeds + 3 * math.sqrt(delta * (1 - delta) * seeds)
    gaps = []
    for name in held:
        cal = _calibrate(long, [name])
        items = list(cal.item_ids)
        w = macro_weights(items, groups)
        y = wide.loc[name].reindex(items).to_numpy(float)
        truth = float(weighted_scores(w, y)[0])
        gaps.append(abs(truth - float(np.nanmean(y))))
        others = weighted_scores(
            w, wide.reindex(index=list(cal.model_ids), columns=items).to_numpy(float)
        )
        answers, by_item = pd.Series(y, index=items), groups.reindex(items)
        misses = 0
        for s in range(seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = estimate(cal, answers, model=name, budget=budget, delta=delta, seed=s,
                             weights=by_item)  # fmt: skip
            tr = r.trajectory
            misses += bool(((tr[:, 1] > truth) | (tr[:, 2] < truth)).any())
            errors.append(abs(r.score - truth))
            found = check_weighted(cal, r, y, w, others)
            tally.add(r, truth, [f"{name} seed {s}: {p}" for p in found])
        if misses > limit:
            below.append((name, misses, round(truth, 4)))
    est = tally.summary(delta)
    est["mae"] = round(float(np.mean(errors)), 4)
    est["mae_se"] = round(float(np.std(errors, ddof=1) / math.sqrt(len(errors))), 4)
    est["mean_abs_macro_minus_plain"] = round(float(np.mean(gaps)), 4)
    est["models_missing_beyond_3se"] = below  # (model, misses of seeds, macro score)
    problems += est.pop("problems")
    # compare: each held-out model with the nearest macro score, and with the next held-out one
    pairs: list[tuple[str, str]] = []
    for i, a in enumerate(held):
        j = names.index(a)
        gap = np.abs(full - full[j])
        gap[j] = np.inf
        for b in (names[int(np.argmin(gap))], held[(i + 1) % len(held)]):
            if b != a and {a, b} not in [set(p) for p in pairs]:
                pairs.append((a, b))
    runs = misses = certified = wrong = 0
    items_used, cerrors, wrong_pairs = [], [], []
    for a, b in pairs:
        cal = _calibrate(long, [a, b])
        items = list(cal.item_ids)
        w = macro_weights(items, groups)
        ya = wide.loc[a].reindex(items).to_numpy(float)
        yb = wide.loc[b].reindex(items).to_numpy(float)
        both = np.isfinite(ya) & np.isfinite(yb) & (w > 0)
        truth = float((w[both] * (ya[both] - yb[both])).sum() / w[both].sum())
        by_item, wrong_here = groups.reindex(items), 0
        for s in range(seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = compare(cal, pd.Series(ya, index=items), pd.Series(yb, index=items),
                            model_a=a, model_b=b, budget=compare_budget, delta=delta, seed=s,
                            weights=by_item)  # fmt: skip
            runs += 1
            misses += not (r.lower - 1e-12 <= truth <= r.upper + 1e-12)
            certified += r.higher is not None
            bad = r.higher is not None and (truth == 0 or (truth > 0) != (r.higher == a))
            wrong += bad
            wrong_here += bad
            items_used.append(r.n_evaluated)
            cerrors.append(abs(r.difference - truth))
            found = [] if r.lower <= r.difference <= r.upper else ["point outside its interval"]
            if (r.higher == a and r.lower < 0) or (r.higher == b and r.upper > 0):
                found.append(f"sign {r.higher} against the interval")
            pos = cal.positions(list(r.items))
            if not (np.array_equal(r.answers_a, ya[pos]) and np.array_equal(r.answers_b, yb[pos])):
                found.append("answers are not the models'")
            found += _floor_problems(cal, r, w, both, 0.5)
            problems += [f"{a} vs {b} seed {s}: {p}" for p in found]
        if wrong_here:
            wrong_pairs.append((a, b, round(truth, 4), wrong_here))
    cov = 1 - misses / runs
    apart = [abs(full[names.index(a)] - full[names.index(b)]) for a, b in pairs]
    return {
        "held_out": len(held),
        "estimate": est,
        "compare": {
            "pairs": len(pairs),
            "runs": runs,
            "coverage": round(cov, 4),
            "mc_se": round(math.sqrt(max(cov * (1 - cov), delta * (1 - delta)) / runs), 4),
            "certified_share": round(certified / runs, 4),
            "wrong_signs": wrong,
            "wrong_rate": round(wrong / runs, 4),
            "wrong_rate_se_at_delta": round(math.sqrt(delta * (1 - delta) / runs), 4),
            "mean_items": round(float(np.mean(items_used)), 1),
            "mae": round(float(np.mean(cerrors)), 4),
            "median_abs_difference": round(float(np.median(apart)), 4),
            "pairs_with_wrong_signs": wrong_pairs,  # (a, b, macro difference, wrong of seeds)
        },
        "problems": problems[:5],
        "n_problems": len(problems),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", required=True)
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--delta", type=float, default=0.05)
    p.add_argument(
        "--data",
        default="bfcl_v2",
        choices=sorted(GROUPS),
        help="weighted: the matrix (its item groups make the macro score)",
    )
    p.add_argument(
        "--models",
        type=int,
        default=4,
        help="weighted: held-out models, evenly spaced by name (0: all)",
    )
    p.add_argument("--budget", type=int, default=100, help="weighted: estimate's budget")
    p.add_argument("--compare-budget", type=int, default=500,
                   help="weighted: compare's budget (its default)")  # fmt: skip
    args = p.parse_args()
    t0 = time.perf_counter()
    if args.scenario == "weighted":
        result = run_weighted(*load_groups(args.data), models=args.models, seeds=args.seeds,
                              delta=args.delta, budget=args.budget,
                              compare_budget=args.compare_budget)  # fmt: skip
        print(args.data, f"models={args.models}", f"budget={args.budget}",
              f"compare_budget={args.compare_budget}", end=" ")  # fmt: skip
    else:
        result = scenario(args.scenario, args.seeds, args.delta)
    print(args.scenario, f"delta={args.delta}", f"seeds={args.seeds}", result,
          f"{time.perf_counter() - t0:.0f}s", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
