"""Can the data bound a detached model on its far side? (issue 28, 22 x 1000 stress replicas)

One replica of ``bench_coverage.py``'s draws (``--replica K``, the model ``--model``, which
must be in the scored half): its ``score_models`` row, its joint-refit estimates under every
candidate ``a_sd`` (``score_sensitivity``) against the truth on the calibration's scale,
then a parametric bootstrap from the joint fit (calibration + the model, the fit's
``a_sd``): 10 redraws at the fit, then 20 redraws at each of five true positions of the
model (the fit's and 1.5 / 3 / 4.5 / 6 sds further out), each refitted; the mean and 95 %
range of the refits' estimates and the model's accuracy at that position. Inverting it
gives the interval a parametric bootstrap would report.

Usage::

    python benchmarks/diag_detached_far_bound.py --replica 8 --model model_01
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
from latentbench.irt import TwoPL  # noqa: E402
from latentbench.irt._detached import _refit, score_sensitivity  # noqa: E402
from latentbench.irt._fitted import reference_of  # noqa: E402
from latentbench.irt._objective import normalise, sigmoid  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kind", default="stress")
    parser.add_argument("--replica", type=int, default=8)
    parser.add_argument("--model", default="model_01")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    matrix = stress_matrix(args.kind, 22, 1000, 0)
    fit = TwoPL().fit(matrix)
    p, truth = fit.predict_proba(), fit.U[:, 0]
    rng = np.random.default_rng(1000 + args.replica)
    Y = rng.binomial(1, p).astype(np.float32)
    Y[~matrix.observed] = np.nan
    perm = rng.permutation(22)
    cal = np.sort(perm[:11])
    ids = np.array(matrix.model_ids)
    m = list(ids).index(args.model)
    if m in cal:
        raise SystemExit(f"{args.model} is in the calibration half of replica {args.replica}")
    calib = TwoPL().fit(ResponseMatrix(Y[cal], list(ids[cal]), matrix.item_ids))
    print(
        f"generating a_sd {fit.prior_selection.a_sd}, calibration a_sd "
        f"{calib.prior_selection.a_sd}, reference models {reference_of(calib).sum()}"
    )
    target = on_scale(truth[cal], reference(calib), truth[[m]])[0]
    row = Y[[m]].astype(float)
    scored = calib.score_models(pd.DataFrame(row, index=[args.model], columns=matrix.item_ids))
    print(scored[["theta", "se", "lower", "upper", "theta_fit", "accuracy"]].to_string())
    cols = np.arange(matrix.n_items)
    thetas, candidates = score_sensitivity(calib, row, cols, scored["theta_fit"].to_numpy())
    print(
        f"truth {target:.3f}; joint refits under a_sd {candidates}: "
        f"{np.round(thetas.ravel(), 3).tolist()}"
    )
    joint = np.vstack([np.asarray(calib.matrix.scores, np.float32), Y[[m]]])
    a_sd = calib.prior_selection.a_sd
    raw = calib.raw
    shift, spread = float(calib.normalisation.shift[0]), calib.normalisation.scale
    init = (np.vstack([raw.U, [[thetas[0, 0] * spread + shift]]]), raw.V, raw.b)
    ref = np.r_[reference_of(calib), False]
    jf = _refit(calib, joint, a_sd, init)
    U, _, _, scale = normalise(jf.U, jf.V, jf.b, ref)
    est, n = float(U[-1, 0]), joint.shape[0] - 1
    observed = ~np.isnan(joint)
    boot_rng = np.random.default_rng(5)
    P = sigmoid((jf.U @ jf.V.T + jf.b) / calib.sigma)
    redraws = []
    for _ in range(10):
        Ys = boot_rng.binomial(1, P).astype(np.float32)
        Ys[~observed] = np.nan
        f2 = _refit(calib, Ys, a_sd, (jf.U, jf.V, jf.b))
        redraws.append(normalise(f2.U, f2.V, f2.b, ref)[0][n, 0])
    print(
        f"joint fit {est:.3f}; 10 redraws at it: mean {np.mean(redraws):.3f}, "
        f"sd {np.std(redraws):.3f}"
    )
    s2, sp2 = float(scale.shift[0]), scale.scale
    sign = 1.0 if est > 0 else -1.0
    for step in (0.0, 1.5, 3.0, 4.5, 6.0):
        t = est + sign * step
        Ut = jf.U.copy()
        Ut[n, 0] = t * sp2 + s2
        Pt = sigmoid((Ut @ jf.V.T + jf.b) / calib.sigma)
        out = []
        for _ in range(20):
            Ys = boot_rng.binomial(1, Pt).astype(np.float32)
            Ys[~observed] = np.nan
            f2 = _refit(calib, Ys, a_sd, (Ut, jf.V, jf.b))
            out.append(normalise(f2.U, f2.V, f2.b, ref)[0][n, 0])
        q = np.quantile(out, [0.025, 0.975])
        print(
            f"true {t:.2f}: accuracy {Pt[n].mean():.3f}, refits' mean {np.mean(out):.2f}, "
            f"sd {np.std(out):.2f}, 95% range [{q[0]:.2f}, {q[1]:.2f}]"
        )
    print(f"observed accuracy {np.nanmean(Y[m]):.3f} ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
