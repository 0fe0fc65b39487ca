"""Where ``score_models`` and the calibration half's own intervals miss on the stress replicas.

Same protocol and seeds as ``bench_coverage.py`` (a stress matrix, its default fit as the
truth of parametric replicas, a calibrate-half / score-half split per replica). For every
scored model and every calibration model whose 95 % interval misses the truth (or every
model with ``--all``) prints: the replica, the model, the path that made its interval,
its accuracy, the truth and the reported centre on the calibration's reporting scale, the se,
the signed z = (centre - truth) / se, and the side of the truth it missed on.

Paths of ``score_models``: ``marginal+boot`` (marginal ML against the calibration's item law,
se at least the item bootstrap's sd), ``marginal`` (no bootstrap), ``items-fixed``
(items-fixed score + the calibration's variance: the calibration's random-item checks
failed or do not apply), ``constant``, ``detached`` (prior-sensitivity interval),
``no_data``. Paths of the calibration's own intervals: the ``Uncertainty.method`` (or
``fallback: <reason>``), or ``detached``.

Usage::

    python benchmarks/diag_score_misses.py --shape 22x1000 --kinds stress --start 0 --replicas 10
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_coverage import on_scale, reference, stress_matrix  # noqa: E402

from latentbench import ResponseMatrix  # noqa: E402
from latentbench.irt import TwoPL  # noqa: E402
from latentbench.irt._scoring import _scores_with_random_items  # noqa: E402


def score_paths(calibration: object, scored: object) -> list[str]:
    """The path of ``score_models`` that made each scored model's interval."""
    from latentbench.irt._fitted import random_items_fit

    marginal = _scores_with_random_items(calibration)  # type: ignore[arg-type]
    boot = marginal and random_items_fit(calibration).n_boot >= 2  # type: ignore[arg-type]
    out = []
    for _, row in scored.iterrows():  # type: ignore[attr-defined]
        if row["no_data"]:
            out.append("no_data")
        elif row["constant"]:
            out.append("constant")
        elif row["detached"]:
            out.append("detached")
        elif marginal:
            out.append("marginal+boot" if boot else "marginal")
        else:
            out.append("items-fixed")
    return out


def replica(kind: str, n_models: int, n_items: int, seed: int, k: int) -> list[dict]:
    """The per-model rows of one replica (same draws as bench_coverage.replica)."""
    warnings.simplefilter("ignore")
    matrix = stress_matrix(kind, n_models, n_items, seed)
    fit = TwoPL().fit(matrix)
    p = fit.predict_proba()
    truth_all = fit.U[:, 0]
    rng = np.random.default_rng(1000 + k)
    Y = (rng.binomial(1, p) / 1).astype(np.float32)
    Y[~matrix.observed] = np.nan
    sim = ResponseMatrix(Y, matrix.model_ids, matrix.item_ids)
    del sim  # the full refit is not needed: the truth is re-standardised over each half
    truth = truth_all
    perm = rng.permutation(matrix.n_models)
    half = matrix.n_models // 2
    cal, new = np.sort(perm[:half]), np.sort(perm[half:])
    ids = np.array(matrix.model_ids)
    calibration = TwoPL().fit(ResponseMatrix(Y[cal], list(ids[cal]), matrix.item_ids))
    scored = calibration.score_models(ResponseMatrix(Y[new], list(ids[new]), matrix.item_ids))
    target = on_scale(truth[cal], reference(calibration), truth[new])
    rows = []
    paths = score_paths(calibration, scored)
    for i, (_, r) in enumerate(scored.iterrows()):
        rows.append(
            {
                "k": k,
                "who": "score",
                "model": r["model"],
                "path": paths[i],
                "accuracy": float(r["accuracy"]),
                "truth": float(target[i]),
                "centre": float(r["theta"]),
                "theta_fit": float(r["theta_fit"]),
                "se": float(r["se"]),
                "lower": float(r["lower"]),
                "upper": float(r["upper"]),
            }
        )
    unc = calibration.standard_errors()
    cab = unc.abilities
    cal_truth = on_scale(truth[cal], reference(calibration))
    det = set(unc.detached["models"]) if unc.detached else set()
    method = unc.method if unc.fallback is None else f"fallback: {unc.fallback}"
    acc = ResponseMatrix(Y[cal], list(ids[cal]), matrix.item_ids).model_accuracy()
    for i, (_, r) in enumerate(cab.iterrows()):
        rows.append(
            {
                "k": k,
                "who": "calib",
                "model": r["model"],
                "path": "detached" if r["model"] in det else method,
                "accuracy": float(np.asarray(acc)[i]),
                "truth": float(cal_truth[i]),
                "centre": float(r["theta"]),
                "theta_fit": float(r["theta_fit"]),
                "se": float(r["se"]),
                "lower": float(r["lower"]),
                "upper": float(r["upper"]),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", default="22x1000")
    parser.add_argument("--kinds", default="stress")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--replicas", type=int, default=10)
    parser.add_argument("--all", action="store_true", help="print every model, not only misses")
    args = parser.parse_args()
    n_models, n_items = (int(x) for x in args.shape.split("x"))
    for kind in args.kinds.split(","):
        t0 = time.perf_counter()
        rows: list[dict] = []
        print(
            f"diag_score_misses: {kind} {args.shape}, replicas {args.start}-"
            f"{args.start + args.replicas - 1}"
        )
        print(
            f"{'rep':>3} {'who':5} {'model':>10} {'path':38} {'acc':>6} {'truth':>7} "
            f"{'centre':>7} {'fit':>7} {'se':>6} {'z':>6} miss"
        )
        for k in range(args.start, args.start + args.replicas):
            rs = replica(kind, n_models, n_items, args.seed, k)
            rows.extend(rs)
            for r in rs:
                covered = r["lower"] <= r["truth"] <= r["upper"]
                if covered and not args.all:
                    continue
                z = (r["centre"] - r["truth"]) / r["se"]
                side = "" if covered else ("high" if r["centre"] > r["truth"] else "low")
                print(
                    f"{r['k']:3d} {r['who']:5} {str(r['model'])[-10:]:>10} {r['path'][:38]:38} "
                    f"{r['accuracy']:6.3f} {r['truth']:7.3f} {r['centre']:7.3f} "
                    f"{r['theta_fit']:7.3f} {r['se']:6.3f} {z:6.2f} {side}",
                    flush=True,
                )
        # summary by who x path x accuracy band
        print("summary (coverage by who, path, accuracy band; z: mean and sd of the signed z):")
        edges = (0.0, 0.05, 0.3, 0.7, 0.95, 1.0)
        for who in ("score", "calib"):
            sel = [r for r in rows if r["who"] == who]
            for path in sorted({r["path"] for r in sel}):
                for b in range(len(edges) - 1):
                    grp = [
                        r
                        for r in sel
                        if r["path"] == path
                        and (
                            edges[b] < r["accuracy"] <= edges[b + 1]
                            or (b == 0 and r["accuracy"] == 0.0)
                        )
                    ]
                    if not grp:
                        continue
                    cov = np.mean([r["lower"] <= r["truth"] <= r["upper"] for r in grp])
                    z = np.array([(r["centre"] - r["truth"]) / r["se"] for r in grp])
                    print(
                        f"  {who:5} {path[:38]:38} acc ({edges[b]:.2f}, {edges[b + 1]:.2f}]: "
                        f"{cov:.3f} of {len(grp):3d}, z mean {z.mean():+.2f} sd {z.std():.2f}"
                    )
            cov = np.mean([r["lower"] <= r["truth"] <= r["upper"] for r in sel])
            print(f"  {who:5} all: {cov:.3f} of {len(sel)}")
        print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
