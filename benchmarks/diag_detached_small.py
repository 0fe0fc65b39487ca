"""Detached new models on small stress replicas: two-sided (before) vs one-sided intervals.

The setting of ``tests/irt/test_detached.py::test_detached_new_models_are_open_on_the_far_side``
(14 x 300 stress matrix, seed 3; parametric replicas from its default fit, ``default_rng(0)``;
the 12 ordinary models calibrate, the two broken models are scored; the random-item path off,
as in the test). For every detached scored model: the truth on the calibration's scale, the
previous two-sided interval (the range of ``score_sensitivity``'s estimates and the
items-fixed score, widened by 1.96 se on both sides) and the shipped one-sided interval, and
whether each contains the truth.

Usage::

    python benchmarks/diag_detached_small.py --replicas 12
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

import latentbench.irt._scoring as scoring
from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.synthetic import simulate_stress


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicas", type=int, default=12)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    scoring._scores_with_random_items = lambda result: False  # type: ignore[assignment]
    matrix = simulate_stress(14, 300, random_state=3).matrix
    ids = list(matrix.model_ids)
    truth_fit = TwoPL().fit(matrix)
    p, t = truth_fit.predict_proba(), truth_fit.theta
    rng = np.random.default_rng(0)
    n = before = after = 0
    for k in range(args.replicas):
        Y = rng.binomial(1, p).astype(float)
        calibration = TwoPL().fit(ResponseMatrix(Y[2:], ids[2:], matrix.item_ids))
        scored = calibration.score_models(
            pd.DataFrame(Y[:2], index=ids[:2], columns=matrix.item_ids)
        )
        ref = calibration.normalisation.mask(12)
        truth = (t[:2] - t[2:][ref].mean()) / t[2:][ref].std()
        rows = np.flatnonzero(scored["detached"].to_numpy())
        if rows.size == 0:
            continue
        fixed = scored["theta_fit"].to_numpy()[rows]
        others, _ = scoring.score_sensitivity(
            calibration, Y[:2][rows], np.arange(matrix.n_items), fixed
        )
        for c, i in enumerate(rows):
            se = scored["se"].iloc[i]
            lo = min(others[:, c].min(), fixed[c]) - 1.96 * se
            hi = max(others[:, c].max(), fixed[c]) + 1.96 * se
            old = lo <= truth[i] <= hi
            new = scored["lower"].iloc[i] <= truth[i] <= scored["upper"].iloc[i]
            n, before, after = n + 1, before + old, after + new
            print(
                f"  replica {k}, {ids[i]}: truth {truth[i]:+.3f}, two-sided [{lo:.3f}, "
                f"{hi:.3f}] {'covers' if old else 'misses'}, one-sided "
                f"[{scored['lower'].iloc[i]:.3f}, {scored['upper'].iloc[i]:.3f}] "
                f"{'covers' if new else 'misses'}",
                flush=True,
            )
    print(f"detached scored models: {n}; two-sided covers {before}, one-sided covers {after}")


if __name__ == "__main__":
    main()
