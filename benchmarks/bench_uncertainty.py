"""Benchmark the random-item ability intervals: the Louis information, side by side.

``latentbench fit`` gives models' ability intervals from the marginal likelihood over the items
(:mod:`latentbench.irt._random_items`) up to 200 models. Its observed information (the Louis
identity) is computed with the sum over grid points expanded into matrix products on the items
that every model answered (``ours``) and, for the others, with the direct per-item sum. The
baseline ``direct`` takes the direct per-item sum on every item (the method before this
change; written out here). Both run in this process on the same posterior; the script prints
the median seconds over repeats, the ratio and the largest difference between the two
matrices, then the whole random-item fit's seconds (``fit_random_items``).

Shapes: synthetic 2PL matrices (complete, or with a share of cells missing) and the shared real
matrices in ``../shared/data``.

Usage::

    PYTHONPATH=src python benchmarks/bench_uncertainty.py
    PYTHONPATH=src python benchmarks/bench_uncertainty.py --size 200x20000 --repeats 3
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _timing import median_seconds
from scipy.special import expit

from latentbench import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.irt._random_items import _Problem, fit_random_items
from latentbench.synthetic import simulate_2pl

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
SIZES = ["30x12000:0.005", "70x1700:0", "200x20000:0", "200x20000:0.02", "100x5000:0.2"]
REAL = ["mmlu_pro", "bfcl_v2", "alpacaeval1_gpt4", "alpacaeval2_weighted"]


def direct(problem: _Problem, theta: np.ndarray, R: np.ndarray, chunk: int = 256) -> np.ndarray:
    """The Louis information with the direct sum over items and grid points, O(J N^2 G)."""
    keep = R.max(axis=0) > 1e-10
    a, b, Rk = problem.a[keep], problem.b[keep], R[:, keep]
    p = expit(np.outer(theta, a) + b)
    N = theta.size
    info = np.diag(((p * (1.0 - p)) * (problem.O @ Rk)) @ (a * a))
    for start in range(0, R.shape[0], chunk):
        sl = slice(start, start + chunk)
        s = (problem.Y[:, sl].T[:, None, :] - p.T[None] * problem.O[:, sl].T[:, None, :]) * a[
            None, :, None
        ]
        r = Rk[sl]
        mean = np.einsum("jg,jgi->ji", r, s)
        flat = (s * np.sqrt(r)[:, :, None]).reshape(-1, N)
        info -= flat.T @ flat - mean.T @ mean
    out: np.ndarray = 0.5 * (info + info.T)
    return out


def case(name: str, scores: np.ndarray, repeats: int) -> None:
    ids = ([f"m{i}" for i in range(scores.shape[0])], [f"q{j}" for j in range(scores.shape[1])])
    fit = TwoPL().fit(ResponseMatrix(scores, *ids))
    start = time.perf_counter()
    law = fit_random_items(scores, fit.U[:, 0], fit.V[:, 0], fit.b, float(fit.sigma))
    # the fit's grid is stored in the reported units (times sigma)
    whole = time.perf_counter() - start
    sigma = float(fit.sigma)
    problem = _Problem(np.asarray(scores, float), law.grid_a / sigma, law.grid_b / sigma)
    R, _ = problem.posterior(law.theta, np.log(np.maximum(law.weights, 1e-300)))
    ours = problem.information(law.theta, R)
    base = direct(problem, law.theta, R)
    t_ours = median_seconds(lambda: problem.information(law.theta, R), repeats)
    t_base = median_seconds(lambda: direct(problem, law.theta, R), repeats)
    diff = float(np.abs(ours - base).max() / np.abs(base).max())
    complete = float((~np.isnan(scores)).all(axis=0).mean())
    print(
        f"| {name} | {scores.shape[0]} x {scores.shape[1]} | {complete:.0%} | {t_ours:.3f} "
        f"| {t_base:.3f} | {t_base / t_ours:.1f} | {diff:.1e} | {whole:.1f} |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", action="append", help="NxJ:missing (repeatable)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-real", action="store_true")
    args = parser.parse_args()
    print(
        "| matrix | models x items | complete items | ours (s) | direct (s) | direct / ours "
        "| max rel. difference | whole random-item fit (s) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for spec in args.size or SIZES:
        shape, _, missing = spec.partition(":")
        n, j = (int(v) for v in shape.split("x"))
        scores = simulate_2pl(n, j, random_state=0).matrix.scores.astype(np.float64)
        if float(missing or 0) > 0:
            rng = np.random.default_rng(1)
            scores[rng.random(scores.shape) < float(missing)] = np.nan
        case(f"synthetic, {float(missing or 0):.1%} missing", scores, args.repeats)
    if not args.no_real:
        for name in REAL:
            path = SHARED / f"{name}.parquet"
            if path.exists():
                case(name, ResponseMatrix.read(path).scores.astype(np.float64), args.repeats)


if __name__ == "__main__":
    main()
