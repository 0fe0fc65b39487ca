"""score_models at 22 x 1000 with the calibration's model bootstrap: variance components.

Same draws and split as ``bench_coverage.py`` (replica k: cells redrawn from the stress
matrix's default fit with seed 1000 + k, then a random half calibrates and the other half is
scored). Per scored model (not detached): truth on the calibration's scale, the reported
centre, the shipped se's parts (``var_own``: law-fixed marginal information; ``var_calib``:
joint Laplace calibration variance; ``se_before``: with the item bootstrap's max rule) and
the model bootstrap's between-replicate variance ``var_between``. Rows are appended to a CSV
so that combination rules can be compared on the same draws.

Usage::

    python benchmarks/diag_model_bootstrap.py --kinds stress --start 0 --replicas 5 \
        --csv /tmp/mb.csv
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", default="stress")
    parser.add_argument("--shape", default="22x1000")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--replicas", type=int, default=5)
    parser.add_argument("--csv", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    n_models, n_items = (int(x) for x in args.shape.split("x"))

    for kind in args.kinds.split(","):
        matrix = stress_matrix(kind, n_models, n_items, 0)
        fit = TwoPL().fit(matrix)
        p, truth = fit.predict_proba(), fit.U[:, 0]
        ids = np.array(matrix.model_ids)
        for k in range(args.start, args.start + args.replicas):
            t0 = time.perf_counter()
            rng = np.random.default_rng(1000 + k)
            Y = rng.binomial(1, p).astype(np.float32)
            Y[~matrix.observed] = np.nan
            perm = rng.permutation(n_models)
            half = n_models // 2
            cal, new = np.sort(perm[:half]), np.sort(perm[half:])
            calib = TwoPL().fit(ResponseMatrix(Y[cal], list(ids[cal]), matrix.item_ids))
            t1 = time.perf_counter()
            scored = calib.score_models(ResponseMatrix(Y[new], list(ids[new]), matrix.item_ids))
            t2 = time.perf_counter()
            target = on_scale(truth[cal], reference(calib), truth[new])
            frame = pd.DataFrame(
                {
                    "kind": kind,
                    "replica": k,
                    "model": scored["model"],
                    "truth": target,
                    "theta": scored["theta"],
                    "se": scored["se"],
                    "lower": scored["lower"],
                    "upper": scored["upper"],
                    "detached": scored["detached"],
                    "accuracy": scored["accuracy"],
                    "cal_min": on_scale(truth[cal], reference(calib))[reference(calib)].min(),
                    "cal_max": on_scale(truth[cal], reference(calib))[reference(calib)].max(),
                    **{key: value for key, value in scored.attrs.items()},
                }
            )

            if args.csv:  # appended per replica (a chunk cut short keeps its replicas)
                header = not os.path.exists(args.csv)
                frame.to_csv(args.csv, mode="a", header=header, index=False)
            keep = ~frame["detached"].to_numpy()
            cov = ((frame["lower"] <= target) & (target <= frame["upper"])).mean()
            f = frame[keep]
            extra = ""
            if "var_between" in f:
                alt = np.sqrt(f["se"] ** 2 + f["var_between"])
                c1 = (np.abs(f["theta"] - f["truth"]) <= 1.96 * alt).mean()
                ratio = np.sqrt(f["var_between"] / f["var_calib"]).median()
                extra = f", +between {c1:.3f} (non-detached), sd_between/sd_calib {ratio:.2f}"
            slope = np.polyfit(f["truth"], f["theta"], 1)[0]
            print(
                f"{kind} replica {k}: score_models {cov:.3f}, slope {slope:.3f}{extra} "
                f"(calibration {t1 - t0:.0f} s, score {t2 - t1:.0f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
