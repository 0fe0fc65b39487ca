"""Coverage of ``experiment``'s paired-bootstrap saving interval at the seed counts users run.

Reads the per-seed correctness curves that ``bench_pulse.py schedule --save FILE.npz`` wrote
(UCB-E and PULSE, same seeds, same grid), takes the saving from all the seeds as the truth,
and draws many subsets of ``n`` seeds; on each it calls :func:`paired_saving` (what
``latentbench experiment`` prints) and records whether its 95 % interval holds the truth,
whether there is an interval at all (``_no_interval``), its SE and its point.

Two ways of drawing the subsets:

* ``without``: ``n`` distinct seeds of the saved ones (the brief's design; for ``n`` near the
  saved count the subsets overlap and the truth is partly their own seeds: coverage is
  flattered).
* ``with``: ``n`` seeds drawn with replacement, so the population is exactly the saved
  seeds' empirical distribution and the truth is exactly the all-seed saving (no
  finite-population caveat; ties between seeds are more frequent than in a continuous
  population).

Usage::

    python benchmarks/bench_saving_coverage.py FILE.npz [--config 16/16] [--subsets 500]
        [--ns 5,7,10,20,50] [--draw without|with|both] [--old-rule]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import latentbench.select._experiment_stats as stats
from latentbench.select._experiment_stats import paired_saving


def coverage(
    U: np.ndarray,
    P: np.ndarray,
    grid: np.ndarray,
    init: int,
    ns: list[int],
    subsets: int,
    replace: bool,
    seed: int = 1,
) -> None:
    """Print one table row per ``n``: interval given, coverage (with its MC SE), mean SE
    against the SD of the point, the point's mean and bias against the truth."""
    truth = paired_saving(P, U, grid, init=init, ref_init=init, n_boot=2)
    t_post = truth["saved_post_init_pct"]
    t_total = truth["saved_total_pct"]
    print(f"truth (all {U.shape[0]} seeds): post-init {t_post:.2f} %, total {t_total:.2f} %")
    print(
        "| draw | n | n (1 - 0.95) | interval given | covers (given) ± MC SE | misses low / high "
        "| mean / median SE | SD of point | mean point - truth | point at an end of its interval "
        "| total: covers ± MC SE |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(seed)
    S = U.shape[0]
    for n in ns:
        rows = []
        for _ in range(subsets):
            idx = rng.choice(S, n, replace=replace)
            r = paired_saving(P[idx], U[idx], grid, init=init, ref_init=init)
            rows.append(
                (
                    r["saved_post_init_pct"],
                    r["saved_post_init_pct_se"],
                    r["saved_post_init_pct_lo"],
                    r["saved_post_init_pct_hi"],
                    r["saved_total_pct_lo"],
                    r["saved_total_pct_hi"],
                )
            )
        a = np.array(rows, dtype=float)
        point, se, lo, hi, tlo, thi = a.T
        given = np.isfinite(lo)
        g = int(given.sum())
        if g:
            cov = (lo[given] <= t_post + 1e-9) & (t_post - 1e-9 <= hi[given])
            c = float(cov.mean())
            mc = float(np.sqrt(c * (1 - c) / g))
            low = float((hi[given] < t_post - 1e-9).mean())
            high = float((lo[given] > t_post + 1e-9).mean())
            edge = float(
                (np.isclose(point[given], lo[given]) | np.isclose(point[given], hi[given])).mean()
            )
            cov_s = f"{c:.3f} ± {mc:.3f}"
            miss = f"{low:.3f} / {high:.3f}"
            se_s = f"{np.nanmean(se[given]):.1f} / {np.nanmedian(se[given]):.1f}"
            edge_s = f"{edge:.2f}"
        else:
            cov_s = miss = se_s = edge_s = "-"
        fin = np.isfinite(point)
        tg = np.isfinite(tlo)
        tcov = "-"
        if tg.any():
            tc = float(((tlo[tg] <= t_total + 1e-9) & (t_total - 1e-9 <= thi[tg])).mean())
            tcov = f"{tc:.3f} ± {np.sqrt(tc * (1 - tc) / tg.sum()):.3f}"
        print(
            f"| {'with' if replace else 'without'} | {n} | {n * 0.05:.2f} | {g / subsets:.2f} "
            f"| {cov_s} | {miss} | {se_s} | {np.std(point[fin], ddof=1):.1f} "
            f"| {np.mean(point[fin]) - t_post:+.1f} | {edge_s} | {tcov} |",
            flush=True,
        )


def main() -> None:
    """Parse the arguments and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--config", default="16/16", help="batch/initial batch in the file")
    parser.add_argument("--subsets", type=int, default=500)
    parser.add_argument("--ns", default="5,7,10,20,50")
    parser.add_argument("--draw", default="without", choices=["without", "with", "both"])
    parser.add_argument(
        "--old-rule",
        action="store_true",
        help="intervals wherever 5 or more seeds (the rule before MIN_TAIL_SEEDS)",
    )
    args = parser.parse_args()
    if args.old_rule:
        stats.MIN_TAIL_SEEDS = 0
    b, i = args.config.split("/")
    with np.load(args.file) as z:
        U = z[f"ucbe|{b}|{i}|correct"].astype(float)
        P = z[f"pulse|{b}|{i}|correct"].astype(float)
        grid = z["grid"]
        m = int(z["shape"][0])
    ns = [int(x) for x in args.ns.split(",")]
    print(f"{args.file}: config {args.config}, {U.shape[0]} seeds, {grid.size} budgets")
    start = time.perf_counter()
    for replace in {"without": [False], "with": [True], "both": [False, True]}[args.draw]:
        coverage(U, P, grid, m * int(i), ns, args.subsets, replace)
    print(f"<!-- {time.perf_counter() - start:.0f} s -->")


if __name__ == "__main__":
    main()
