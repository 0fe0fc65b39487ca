"""Marginal ML against the ``girth`` package on the shared binary matrices, side by side.

Both fit the 2PL by marginal maximum likelihood (abilities integrated out against N(0, 1)):
:func:`latentbench.irt.fit_marginal` with no priors (``a_log_sd=None, b_prior=None``) and
girth's ``twopl_mml`` (its defaults: 41 evenly spaced nodes on [-4.5, 4.5], 25 EM cycles).
girth fits items one at a time in Python (about 0.15 s per item on a loaded 2-core machine),
so only the first ``--items`` items of each matrix are used. girth reports
``a (theta - beta)``; its intercepts are ``b = -a beta``.

Printed per matrix: Pearson / Spearman correlation and median absolute difference of a and b,
over the items where both estimates are finite and a < 10 (items that separate the models
perfectly have no finite marginal-ML discrimination without a prior), and the seconds of each.

Usage::

    pip install girth        # the ``bench`` extra
    python benchmarks/bench_girth.py --items 200
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr, spearmanr

from latentbench import ResponseMatrix
from latentbench.irt import fit_marginal

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
BINARY = ["mmlu_pro", "bfcl_v2"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200, help="first N items of each matrix")
    parser.add_argument("--data", type=Path, default=SHARED)
    args = parser.parse_args()
    try:
        from girth import twopl_mml
        from girth.utilities import tag_missing_data
    except ImportError:
        print("girth is not installed: pip install girth (the 'bench' extra)")
        return
    warnings.simplefilter("ignore")
    for name in BINARY:
        matrix = ResponseMatrix.read(args.data / f"{name}.parquet")
        scores = matrix.scores[:, : args.items]
        start = time.perf_counter()
        ours = fit_marginal(scores, a_log_sd=None, b_prior=None)
        t_ours = time.perf_counter() - start
        data = np.where(np.isnan(scores), -1, scores).astype(int).T  # items x models
        if np.isnan(scores).any():
            data = tag_missing_data(data, [0, 1])
        start = time.perf_counter()
        theirs = twopl_mml(data)
        t_girth = time.perf_counter() - start
        a_g = np.asarray(theirs["Discrimination"], dtype=float)
        b_g = -a_g * np.asarray(theirs["Difficulty"], dtype=float)
        keep = np.isfinite(a_g) & np.isfinite(b_g) & (a_g < 10) & (ours.a < 10)
        print(
            f"\n{name}: {matrix.n_models} models x first {scores.shape[1]} items "
            f"({int(keep.sum())} compared)"
        )
        print(f"  seconds: latentbench {t_ours:.2f}   girth {t_girth:.2f}")
        for label, x, y in (("a", ours.a, a_g), ("b", ours.b, b_g)):
            print(
                f"  {label}: pearson {pearsonr(x[keep], y[keep])[0]:.4f}  spearman "
                f"{spearmanr(x[keep], y[keep])[0]:.4f}  median |diff| "
                f"{np.median(np.abs(x[keep] - y[keep])):.4f}  means {x[keep].mean():.3f} vs "
                f"{y[keep].mean():.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
