"""Is ``score_models``' remaining miss at 22 x 1000 a common (per-replica) scale error?

Same draws and split as ``bench_coverage.py`` / ``diag_score_misses.py``. Modes:

- ``--slopes``: per replica, the slope of the scored half's centres (not detached) on their
  truth, the sd of that slope implied by their se's if their errors were independent, and
  the calibration half's own slope; then mean and sd over replicas.
- ``--joint K``: replica K, every scored model (not detached) also placed by a full default
  fit of the calibration plus that model alone (its random-item ``theta`` and MAP
  ``theta_fit``, re-standardised over the calibration's reference models).
- ``--loo K1,K2``: replicas K: each calibration refitted without one of its reference
  models, that model scored; the slope of these scores on its in-calibration estimate.

The item bootstrap is off (``ITEM_BOOTSTRAP = 0``: the centres do not depend on it; the
implied slope sd uses the law-fixed se's, a lower bound of the shipped ones).

Usage::

    python benchmarks/diag_score_scale.py --kinds stress --slopes
    python benchmarks/diag_score_scale.py --kinds stress --joint 12
    python benchmarks/diag_score_scale.py --kinds stress --loo 8,12,2,4
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_coverage import on_scale, reference, stress_matrix  # noqa: E402

from latentbench import ResponseMatrix  # noqa: E402
from latentbench.irt import TwoPL, _fitted  # noqa: E402


def split(kind: str, k: int) -> tuple:
    """Replica k: the matrix, the generating abilities, the redrawn scores, the halves."""
    matrix = stress_matrix(kind, 22, 1000, 0)
    fit = TwoPL().fit(matrix)
    p, truth = fit.predict_proba(), fit.U[:, 0]
    rng = np.random.default_rng(1000 + k)
    Y = rng.binomial(1, p).astype(np.float32)
    Y[~matrix.observed] = np.nan
    perm = rng.permutation(22)
    cal, new = np.sort(perm[:11]), np.sort(perm[11:])
    return matrix, truth, Y, cal, new


def calibrate(matrix: ResponseMatrix, truth: np.ndarray, Y: np.ndarray, cal, new) -> tuple:
    """The calibration half's fit, the scored half and its truth on the calibration's scale."""
    ids = np.array(matrix.model_ids)
    calib = TwoPL().fit(ResponseMatrix(Y[cal], list(ids[cal]), matrix.item_ids))
    scored = calib.score_models(ResponseMatrix(Y[new], list(ids[new]), matrix.item_ids))
    return calib, scored, on_scale(truth[cal], reference(calib), truth[new])


def slopes(kind: str, replicas: int) -> None:
    out, implied, own = [], [], []
    for k in range(replicas):
        matrix, truth, Y, cal, new = split(kind, k)
        calib, scored, target = calibrate(matrix, truth, Y, cal, new)
        keep = ~scored["detached"].to_numpy()
        m, t = scored["theta"].to_numpy()[keep], target[keep]
        se = scored["se"].to_numpy()[keep]
        x = t - t.mean()
        out.append(np.polyfit(t, m, 1)[0])
        implied.append(np.sqrt(np.sum(x**2 * se**2)) / np.sum(x**2))
        ref = reference(calib)
        ct = on_scale(truth[cal], ref)
        own.append(np.polyfit(ct[ref], calib.standard_errors().abilities["theta"][ref], 1)[0])
        print(
            f"  replica {k}: scored-half slope {out[-1]:.3f} (implied sd {implied[-1]:.3f}), "
            f"calibration half's own slope {own[-1]:.3f}",
            flush=True,
        )
    print(
        f"{kind}: scored-half slope mean {np.mean(out):.3f}, sd {np.std(out, ddof=1):.3f} "
        f"(implied sd {np.mean(implied):.3f}); calibration half's own slope mean "
        f"{np.mean(own):.3f}, sd {np.std(own, ddof=1):.3f}"
    )


def joint(kind: str, k: int) -> None:
    matrix, truth, Y, cal, new = split(kind, k)
    calib, scored, target = calibrate(matrix, truth, Y, cal, new)
    ids = np.array(matrix.model_ids)
    refc = reference(calib)
    for i, m in enumerate(new):
        if scored["detached"].iloc[i]:
            continue
        rows = np.r_[cal, m]
        fit = TwoPL().fit(ResponseMatrix(Y[rows], list(ids[rows]), matrix.item_ids))
        ab = fit.standard_errors().abilities
        r2 = np.r_[refc, False]
        marginal = on_scale(ab["theta"].to_numpy(), r2)[-1]
        map_ = on_scale(ab["theta_fit"].to_numpy(), r2)[-1]
        print(
            f"  {ids[m]} accuracy {scored['accuracy'].iloc[i]:.3f} truth {target[i]:+.3f} "
            f"score_models {scored['theta'].iloc[i]:+.3f} items-fixed "
            f"{scored['theta_fit'].iloc[i]:+.3f} joint random-item {marginal:+.3f} joint MAP "
            f"{map_:+.3f} se {scored['se'].iloc[i]:.3f}",
            flush=True,
        )


def loo(kind: str, ks: list[int]) -> None:
    for k in ks:
        start = time.perf_counter()
        matrix, truth, Y, cal, new = split(kind, k)
        calib, scored, target = calibrate(matrix, truth, Y, cal, new)
        ids = np.array(matrix.model_ids)
        refc = reference(calib)
        own_all = calib.standard_errors().abilities["theta"].to_numpy()
        left, own = [], []
        for i in np.flatnonzero(refc):
            keep = np.delete(np.arange(len(cal)), i)
            c2 = TwoPL().fit(ResponseMatrix(Y[cal[keep]], list(ids[cal[keep]]), matrix.item_ids))
            s2 = c2.score_models(
                pd.DataFrame(
                    Y[[cal[i]]].astype(float), index=[ids[cal[i]]], columns=matrix.item_ids
                )
            )
            o = own_all[keep]
            r2 = reference(c2)
            own.append((own_all[i] - o[r2].mean()) / o[r2].std())
            left.append(s2["theta"].iloc[0])
        det = scored["detached"].to_numpy()
        s_new = np.polyfit(target[~det], scored["theta"].to_numpy()[~det], 1)[0]
        print(
            f"  replica {k}: leave-one-out slope {np.polyfit(own, left, 1)[0]:.3f} (on the "
            f"in-calibration estimate); scored half's slope on truth {s_new:.3f} "
            f"({time.perf_counter() - start:.0f} s)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", default="stress")
    parser.add_argument("--replicas", type=int, default=20)
    parser.add_argument("--slopes", action="store_true")
    parser.add_argument("--joint", type=int, default=None)
    parser.add_argument("--loo", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    _fitted.ITEM_BOOTSTRAP = 0
    for kind in args.kinds.split(","):
        if args.slopes:
            slopes(kind, args.replicas)
        if args.joint is not None:
            joint(kind, args.joint)
        if args.loo:
            loo(kind, [int(v) for v in args.loo.split(",")])


if __name__ == "__main__":
    main()
