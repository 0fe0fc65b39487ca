"""The near-duplicate test on duplicate-free data: its p-values over every pair and over the
candidates (``duplicate_items``), with the fitted and with the true probabilities.

Reads a matrix and its fit written by ``bench_report_scale.py gen`` (no ``--plant``: the
generator's seed gives the true abilities and item parameters back) and prints, for all
``J (J - 1) / 2`` pairs and for the candidates (agreement >= 0.95 on >= 10 common models),
the share of Poisson p-values below 0.01, the smallest one and the count under the
Bonferroni threshold over all pairs and over the candidates. Every pair in float64 products
(``N J^2``): for shapes up to a few thousand items.

Usage: ``python benchmarks/diag_duplicate_calibration.py DIR`` (``DIR/wide.parquet``,
``DIR/fit``).
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from latentbench import ResponseMatrix
from latentbench.irt import IRTResult
from latentbench.irt._stats import poisson_cdf


def main() -> None:
    warnings.simplefilter("ignore")
    work = sys.argv[1]
    matrix = ResponseMatrix.read(f"{work}/wide.parquet")
    result = IRTResult.load(f"{work}/fit")
    N, J = matrix.scores.shape
    rng = np.random.default_rng(110)  # bench_report_scale.generate's draws, in its order
    theta = rng.normal(0, 1, N).astype(np.float32)
    a = rng.lognormal(0, 0.4, J).astype(np.float32)
    b = rng.normal(0, 1.2, J).astype(np.float32)
    obs = (~np.isnan(matrix.scores)).astype(np.float64)
    y = np.nan_to_num(matrix.scores).astype(np.float64)
    upper = np.triu_indices(J, 1)
    common = (obs.T @ obs)[upper]
    dis = (y.T @ ((1 - y) * obs) + ((1 - y) * obs).T @ y)[upper]
    cand = (common >= 10) & (1 - dis / np.maximum(common, 1) >= 0.95)
    true = 1 / (1 + np.exp(-(a[None, :] * (theta[:, None] - b[None, :]))))
    for label, prob in (("fitted", result.predict_proba()), ("true", true.astype(np.float64))):
        p, q = prob * obs, (1 - prob) * obs
        expected = (p.T @ q + q.T @ p)[upper]
        pv = poisson_cdf(np.floor(dis + 1e-9), np.maximum(expected, 1e-12))
        n, nc = pv.size, int(cand.sum())
        print(
            f"{label}: all {n:,} pairs: p<0.01 {np.mean(pv < 0.01):.4f}, min {pv.min():.2g}, "
            f"p <= 0.05/n_pairs {int((pv <= 0.05 / n).sum())}; candidates {nc:,}: p<0.01 "
            f"{np.mean(pv[cand] < 0.01):.3f}, min {pv[cand].min():.2g}, p <= 0.05/n_candidates "
            f"{int((pv[cand] <= 0.05 / nc).sum())}, median D/E "
            f"{np.median(dis[cand] / expected[cand]):.3f}"
        )


if __name__ == "__main__":
    main()
