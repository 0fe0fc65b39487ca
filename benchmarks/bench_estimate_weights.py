"""A macro (group-weighted) score from 100 items: ``estimate(weights=)`` against a stratified
uniform sample, leave-one-model-out on a shared matrix.

For a few held-out models (every ``--every``-th by name) the rest calibrate (fitted at rank
1 each time); the target is the held-out model's macro score over the item groups (each
group weighs the same, its items equally: MMLU-Pro's 14 categories, BFCL's 12). Per seed:

- ``weighted``: ``estimate(..., budget=100, weights=groups)`` (its anytime-valid interval);
- ``unweighted``: the plain estimate, read as if it were the macro score (what a user got
  before ``weights``);
- ``stratified``: a uniform sample of 100 items allocated equally over the groups (the rest
  by the largest remainders; at most a group's size), the mean of the group means, and the
  normal interval with the finite-population correction (a group with one item drawn: its
  variance taken as 0.25).

Prints per method: mean absolute error, coverage of the 95% interval and mean half-width.

Usage::

    python benchmarks/bench_estimate_weights.py --data mmlu_pro --models 4 --seeds 10
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd

from latentbench import ResponseMatrix
from latentbench.select import estimate
from latentbench.select._estimate_calibration import from_matrix

DATA = Path("/work/shared/data")


def stratified(
    y: np.ndarray, codes: np.ndarray, k: int, rng: np.random.Generator, z: float
) -> tuple[float, float, float]:
    """Macro mean of an equal-allocation stratified uniform sample of ``k`` items, and its
    normal interval (finite-population corrected)."""
    G = int(codes.max()) + 1
    sizes = np.bincount(codes, minlength=G)
    take = np.minimum(np.full(G, k // G), sizes)
    order = np.argsort(-(sizes - take), kind="stable")
    for g in order[: k - int(take.sum())]:
        take[g] = min(take[g] + 1, sizes[g])
    means, var = np.empty(G), 0.0
    for g in range(G):  # a loop over the (few) groups, not the items
        members = np.flatnonzero(codes == g)
        drawn = y[rng.choice(members, size=int(take[g]), replace=False)]
        means[g] = drawn.mean()
        s2 = drawn.var(ddof=1) if drawn.size > 1 else 0.25
        var += s2 / drawn.size * (1.0 - drawn.size / members.size) / G**2
    est = float(means.mean())
    half = z * float(np.sqrt(var))
    return est, est - half, est + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="mmlu_pro", choices=("mmlu_pro", "bfcl_v2"))
    parser.add_argument("--models", type=int, default=4, help="held-out models")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=100)
    args = parser.parse_args()
    long = pd.read_parquet(DATA / f"{args.data}.parquet")
    meta = pd.read_parquet(DATA / f"{args.data}_items.parquet")
    wide = long.pivot(index="model", columns="item", values="score")
    groups = meta.set_index("item")["category"].astype(str).reindex(wide.columns)
    codes = pd.factorize(groups, sort=True)[0]
    names = list(wide.index)
    held_out = names[:: max(1, len(names) // args.models)][: args.models]
    z = NormalDist().inv_cdf(0.975)
    rows: list[dict[str, object]] = []
    gaps: list[float] = []
    start = time.perf_counter()
    for name in held_out:
        rest = long[long["model"] != name]
        cal = from_matrix(ResponseMatrix.from_long(rest), rank=1)
        y = wide.loc[name].reindex(list(cal.item_ids)).to_numpy(dtype=float)
        g = groups.reindex(list(cal.item_ids))
        truth = float(pd.Series(y, index=g.to_numpy()).groupby(level=0).mean().mean())
        answers = pd.Series(y, index=list(cal.item_ids))
        gaps.append(abs(truth - float(np.nanmean(y))))
        c = pd.factorize(g, sort=True)[0]
        for seed in range(args.seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                w = estimate(cal, answers, model=name, budget=args.budget, seed=seed, weights=g)
                u = estimate(cal, answers, model=name, budget=args.budget, seed=seed)
            s = stratified(y, c, args.budget, np.random.default_rng(seed), z)
            for method, (est, lo, hi) in (
                ("weighted", (w.score, w.lower, w.upper)),
                ("unweighted", (u.score, u.lower, u.upper)),
                ("stratified", s),
            ):
                rows.append({"model": name, "method": method, "error": abs(est - truth),
                             "covered": lo <= truth <= hi, "half": (hi - lo) / 2})  # fmt: skip
    frame = pd.DataFrame(rows)
    table = frame.groupby("method", sort=False).agg(
        mae=("error", "mean"), coverage=("covered", "mean"), half_width=("half", "mean")
    )
    print(
        f"{args.data}: macro over {int(codes.max()) + 1} groups, {len(held_out)} held-out "
        f"models x {args.seeds} seeds, budget {args.budget} "
        f"({time.perf_counter() - start:.0f} s); mean |macro - plain mean| "
        f"{np.mean(gaps):.4f}"
    )
    print(table.round(4).to_string())


if __name__ == "__main__":
    main()
