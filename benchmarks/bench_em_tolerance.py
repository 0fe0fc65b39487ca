"""How far the random-item EM's stopping rule leaves the abilities from the optimum.

The EM (``irt/_random_items.fit_random_items``) stops when no ability moves by more than
``tol`` (default 1e-4 sd) in a SQUAREM cycle. It converges slowly (the item law's weights),
so the distance to the optimum can be much larger than ``tol``. For a shared matrix this fits
the default MAP fit, then the random-item abilities at ``tol`` 1e-4, 1e-5, 1e-6 and 1e-7 from
the same start, and prints per ``tol`` the CPU seconds, iterations and marginal
log-likelihood, and against the 1e-7 fit the largest ``|theta - theta_ref| / se`` and the
correlation of the difference with theta (a pull toward the start would show there).

    python benchmarks/bench_em_tolerance.py alpacaeval2_weighted
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import latentbench as lb
from latentbench.io import ResponseMatrix
from latentbench.irt._fitted import _observed, reference_of
from latentbench.irt._random_items import fit_random_items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("matrix", nargs="?", default="alpacaeval2_weighted")
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    args = parser.parse_args()
    matrix = ResponseMatrix.read(args.data / f"{args.matrix}.parquet")
    result = lb.TwoPL().fit(matrix)
    scores, _ = _observed(result, matrix)
    ref = reference_of(result)
    start = (scores[ref], result.U[ref, 0], result.V[:, 0], result.b, float(result.sigma))
    fits = {}
    for tol in (1e-4, 1e-5, 1e-6, 1e-7):
        t0 = time.process_time()
        fit = fit_random_items(*start, tol=tol, max_iter=20000)
        fits[tol] = fit
        print(
            f"{args.matrix} tol {tol:.0e}: cpu {time.process_time() - t0:.1f} s, "
            f"{fit.n_iter} iterations, log-likelihood {fit.log_likelihood:.3f}, "
            f"converged {fit.converged}"
        )
    best = fits[1e-7]
    for tol in (1e-4, 1e-5, 1e-6):
        diff = fits[tol].theta - best.theta
        print(
            f"tol {tol:.0e}: max |theta - theta(1e-7)| / se {np.abs(diff / best.se).max():.3f}, "
            f"corr(difference, theta) {np.corrcoef(diff, best.theta)[0, 1]:+.3f}"
        )


if __name__ == "__main__":
    main()
