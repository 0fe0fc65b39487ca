"""Coverage of the discrimination intervals: the old posterior ones and the likelihood ones.

``standard_errors(...).items`` gave, until 2026-12-05, the Laplace posterior interval of the
default MAP fit around its estimate: the prior's curvature in the item block, the prior's
shrinkage toward ``a_mean`` not in the interval. It now gives the items' likelihood interval
at the fit's abilities (:mod:`latentbench.irt._item_intervals`). Both are computed here on the
same fits: the old one as ``a_MAP -/+ z sqrt(posterior variance)`` (lower end clipped at 0),
exactly what the old code returned for a rank-1 MAP fit (its scale factor is 1).

Simulated binary 2PL, no missing cells, theta ~ N(0, 1), b ~ N(0, s_b^2),
a ~ LogNormal(0, s_a): kind ``2pl`` (s_a = 0.3, s_b = 1) and ``2pl_wide`` (s_a = 0.7,
s_b = 2: many very easy or very hard items, and a few very sharp ones), the seeds of the
coverage audit (``fit_cov.py``). The truth is put on the reporting scale (docs/model.md,
"Normalisation"): with mu, s the mean and sd (ddof 0) of the true theta over the models that
set the scale, ``a <- s a``. Coverage is over every item (an unbounded likelihood interval,
``[0, inf)``, counts as covering), overall and by fifth of the true discrimination within
each data set (q1 lowest); the new intervals' coverage is also given over the items with a
finite likelihood maximum only. ``±`` is the Monte Carlo SE with data sets as clusters (the sd of
the per-data-set coverage over sqrt(n)).

Usage::

    python benchmarks/bench_item_coverage.py --kinds 2pl --seeds 20
    python benchmarks/bench_item_coverage.py --kinds 2pl_wide --seeds 20
    python benchmarks/bench_item_coverage.py --shapes 20x200 --seeds 3   # quick
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from latentbench import ResponseMatrix  # noqa: E402
from latentbench.irt import TwoPL  # noqa: E402
from latentbench.irt._item_intervals import posterior_item_covariance  # noqa: E402

Z = 1.959963984540054
KINDS = {"2pl": (0.3, 1.0, 0), "2pl_wide": (0.7, 2.0, 1)}


def simulate(
    kind: str, n: int, m: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(scores, theta, a, b) with the audit's seeds."""
    s_a, s_b, code = KINDS[kind]
    rng = np.random.default_rng(10_000 * n + m + seed * 7 + code * 100_003)
    theta = rng.normal(size=n)
    a = rng.lognormal(0.0, s_a, m)
    b = rng.normal(0.0, s_b, m)
    p = 1.0 / (1.0 + np.exp(-(np.outer(theta, a) + b)))
    return (rng.random((n, m)) < p).astype(float), theta, a, b


def one(kind: str, n: int, m: int, seed: int) -> dict[str, object]:
    """Per-item coverage of both intervals on one data set, summarised."""
    scores, theta, a, _ = simulate(kind, n, m, seed)
    models = [f"m{i:03d}" for i in range(n)]
    matrix = ResponseMatrix.from_wide(
        pd.DataFrame(scores, index=models, columns=[f"i{j:05d}" for j in range(m)])
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(matrix)
        unc = result.standard_errors()
    detached = set(unc.detached["models"]) if unc.detached else set()
    ref = np.array([mid not in detached for mid in models])
    truth = a * theta[ref].std()
    items = unc.items
    new_lo = items["discrimination_lower"].to_numpy()
    new_hi = items["discrimination_upper"].to_numpy()
    est = items["discrimination"].to_numpy()
    se_old = np.sqrt(posterior_item_covariance(result, matrix)[:, 0, 0])
    old_lo, old_hi = np.maximum(est - Z * se_old, 0.0), est + Z * se_old
    fifth = np.searchsorted(np.quantile(truth, [0.2, 0.4, 0.6, 0.8]), truth)
    out: dict[str, object] = {"kind": kind, "shape": f"{n}x{m}", "seed": seed}
    for name, lo, hi in (("old", old_lo, old_hi), ("new", new_lo, new_hi)):
        covered = (lo <= truth) & (truth <= hi)
        out[f"{name}"] = covered.mean()
        for q in range(5):
            out[f"{name}_q{q + 1}"] = covered[fifth == q].mean()
        out[f"{name}_width"] = float(np.median(hi - lo))
    bounded = items["discrimination_bounded"].to_numpy(bool)
    out["new_bounded"] = ((new_lo <= truth) & (truth <= new_hi))[bounded].mean()
    out["unbounded"] = int((~bounded).sum())
    out["map_outside"] = int(np.sum((est < new_lo) | (est > new_hi)))
    out["a_sd"] = result.prior_selection.a_sd if result.prior_selection else np.nan
    return out


def fmt(values: pd.Series) -> str:
    """Mean ± cluster SE."""
    se = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else np.nan
    return f"{values.mean():.3f} ± {se:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", default="2pl,2pl_wide")
    parser.add_argument("--shapes", default="20x200,30x500,50x1000,70x2000")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--csv", default=None, help="write the per-data-set rows here")
    args = parser.parse_args()
    rows = []
    start = time.time()
    for kind in args.kinds.split(","):
        for shape in args.shapes.split(","):
            n, m = (int(v) for v in shape.split("x"))
            for seed in range(args.seeds):
                rows.append(one(kind, n, m, seed))
    df = pd.DataFrame(rows)
    if args.csv:
        df.to_csv(args.csv, index=False)
    print(f"{len(df)} data sets, {time.time() - start:.0f} s\n")
    print("| kind | shape | intervals | all items | q1 (lowest a) | q2 | q3 | q4 | q5 (highest a) "
          "| median width |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (kind, shape), part in df.groupby(["kind", "shape"], sort=False):
        for name in ("old", "new"):
            cells = [fmt(part[name])] + [f"{part[f'{name}_q{q}'].mean():.3f}" for q in range(1, 6)]
            print(
                f"| {kind} | {shape} | {name} | " + " | ".join(cells)
                + f" | {part[f'{name}_width'].mean():.2f} |"
            )  # fmt: skip
    print(
        "\nper data set: items whose likelihood has no finite maximum (new interval [0, inf)), "
        "the new intervals' coverage over the other items, MAP outside the new interval, "
        "the prior's a_sd"
    )
    summary = df.groupby(["kind", "shape"], sort=False)[
        ["unbounded", "new_bounded", "map_outside", "a_sd"]
    ].mean()
    print(summary.round(3).to_string())


if __name__ == "__main__":
    main()
