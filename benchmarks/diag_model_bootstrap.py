"""score_models at 22 x 1000 with the calibration's model jackknife: per-model parts.

Same draws and split as ``bench_coverage.py`` (replica k: cells redrawn from the stress
matrix's default fit with seed 1000 + k, then a random half calibrates and the other half is
scored). Per scored model: truth on the calibration's scale, the reported centre, main's se
(``se_before``, the jackknife off), the se with it (``se``) and the jackknife variance
``var_between``. Rows are appended to a CSV per replica, so that rules can be compared on the
same draws.

``--pool A.csv B.csv ...`` reads such files and prints, per kind, the coverage per replica
(mean ± Monte Carlo se over replicas) of main's intervals (``se_before``) and of
``sqrt(se_before^2 + var_between)`` (the jackknife added; the detached models keep their
intervals), the paired difference, the median ratio of the jackknife sd to ``se_before`` and
the pooled rms z of the models that are not detached.
Collection scores every replica twice with the shipped code, without the jackknife
(``MODEL_JACKKNIFE = False``: ``se_before``, main's se) and with it (``se``), so that
``var_between = se^2 - se_before^2``. (The RESULTS figures were collected by a prototype of the
same computation that returned the parts from one call; the shipped code reproduces its se's,
RESULTS_item_bootstrap.md.)

Usage::

    python benchmarks/diag_model_bootstrap.py --kinds stress --start 0 --replicas 5 \
        --csv /tmp/mb.csv
    python benchmarks/diag_model_bootstrap.py --pool /tmp/mb.csv
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


def pool(files: list[str]) -> None:
    """Coverage of main's intervals and with the jackknife added, from collected CSVs."""
    d = pd.concat([pd.read_csv(f) for f in files]).drop_duplicates(["kind", "replica", "model"])
    for kind, g in d.groupby("kind"):
        z = g["theta"] - g["truth"]
        shipped = (g["lower"] <= g["truth"]) & (g["truth"] <= g["upper"])
        per = []
        for name, se in (
            ("main", g["se_before"]),
            ("main+jackknife", np.sqrt(g["se_before"] ** 2 + g["var_between"].fillna(0.0))),
        ):
            covered = pd.Series(np.where(g["detached"], shipped, np.abs(z) <= 1.96 * se))
            covered.index = g.index
            by = covered.astype(float).groupby(g["replica"]).mean()
            per.append(by)
            rms = np.sqrt(np.mean((z / se)[~g["detached"]] ** 2))
            print(
                f"{kind} {name:15} score_models coverage {by.mean():.3f} ± "
                f"{by.std(ddof=1) / np.sqrt(by.size):.3f} over {by.size} replicas; mean se "
                f"(not detached) {se[~g['detached']].mean():.3f}; rms z {rms:.3f}"
            )
        diff = per[1] - per[0]
        mc = diff.std(ddof=1) / np.sqrt(diff.size)
        print(f"{kind} paired difference {diff.mean():+.3f} ± {mc:.3f}")
        print(f"{kind} per replica main {per[0].round(3).tolist()}")
        print(f"{kind} per replica +jackknife {per[1].round(3).tolist()}")
        nd = g[~g["detached"]]
        ratio = np.median(np.sqrt(nd["var_between"]) / nd["se_before"])
        print(f"{kind} jackknife sd / se: median {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", default="stress")
    parser.add_argument("--shape", default="22x1000")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--replicas", type=int, default=5)
    parser.add_argument("--csv", default=None)
    parser.add_argument("--pool", nargs="+", default=None, help="summarise collected CSVs")
    args = parser.parse_args()
    if args.pool:
        pool(args.pool)
        return
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
            new_matrix = ResponseMatrix(Y[new], list(ids[new]), matrix.item_ids)
            _fitted.MODEL_JACKKNIFE = False
            before = calib.score_models(new_matrix)
            _fitted.MODEL_JACKKNIFE = True
            scored = calib.score_models(new_matrix)
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
                    "se_before": before["se"],
                    "var_between": scored["se"] ** 2 - before["se"] ** 2,
                }
            )

            if args.csv:  # appended per replica (a chunk cut short keeps its replicas)
                header = not os.path.exists(args.csv)
                frame.to_csv(args.csv, mode="a", header=header, index=False)
            inside = (frame["lower"] <= target) & (target <= frame["upper"])
            z = np.abs(frame["theta"] - target)
            main_cov = np.where(frame["detached"], inside, z <= 1.96 * frame["se_before"]).mean()
            keep = ~frame["detached"].to_numpy()
            slope = np.polyfit(target[keep], frame["theta"][keep], 1)[0]
            print(
                f"{kind} replica {k}: score_models main {main_cov:.3f}, with the jackknife "
                f"{inside.mean():.3f}, slope {slope:.3f} (calibration {t1 - t0:.0f} s, "
                f"score twice {t2 - t1:.0f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
