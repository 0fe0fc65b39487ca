"""Coverage of 95% ability intervals on stress matrices shaped like the issue-28 failure.

A stress matrix (:func:`latentbench.synthetic.simulate_stress`: 22 models x 2854 items by
default, half the items near-uninformative, ~5% constant items, a broken model near 0% and
one near 100%; ``rank2``: plus a second trait, fitted with rank 1; ``trials``: every cell the
mean of K Bernoulli trials) is fitted with the default ``TwoPL()``; that fit is the truth of
parametric replicas (same models, items and missing cells, cells redrawn from the fitted
probabilities, binomial with K trials where the matrix has them). Each replica is refitted;
per replica we record the coverage of the 95% ``theta`` intervals (truth: the generating fit's
abilities on the refit's reporting scale, i.e. standardised to mean 0 / sd 1 over the models
that set the refit's scale: every model but the detached ones, ``IRTResult.normalisation``;
when the refit detaches the same models as the generating fit this is the generating fit's
own ``theta``), their mean width, the RMSE of the reported
``theta``, whether every model's ``theta`` lies in its own interval, Spearman(theta,
accuracy), the interval method (random-item or the fallback), and the same coverage for
``score_models`` on a calibrate-half / score-half split (truth standardised over the
calibration half's reference models), and how many models were detached.

Printed: mean over replicas with its Monte Carlo standard error.

Usage::

    python benchmarks/bench_coverage.py --replicas 20 --jobs 16
    python benchmarks/bench_coverage.py --shape 22x800 --replicas 4      # small, quick
    python benchmarks/bench_coverage.py --shape 22x1000 --by-accuracy    # where score_models misses
    python benchmarks/bench_coverage.py --shape 45x400 --kinds binomial10 --no-score

``binomial<K>`` is not a stress matrix: a fresh simulated 2PL per replica whose cells are
means of K trials, fitted with ``TwoPL(trials=K)`` (the counts-as-counts check).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

from latentbench import ResponseMatrix  # noqa: E402
from latentbench.irt import TwoPL  # noqa: E402
from latentbench.synthetic import simulate_stress  # noqa: E402

KINDS = ("stress", "rank2", "trials10", "binomial10")


def stress_matrix(kind: str, n_models: int, n_items: int, seed: int) -> ResponseMatrix:
    """The stress matrix of one kind (``stress``, ``rank2`` or ``trials<K>``)."""
    trials = int(kind[6:]) if kind.startswith("trials") else 1
    return simulate_stress(
        n_models,
        n_items,
        truth_rank=2 if kind == "rank2" else 1,
        trials=trials,
        random_state=seed,
    ).matrix


def binomial_replica(kind: str, n_models: int, n_items: int, k: int) -> dict[str, float]:
    """``binomial<K>``: a fresh 2PL data set (``simulate_2pl``, seed k), every cell the mean of
    K Bernoulli trials, fitted with ``TwoPL(trials=K)``; truth: the generating abilities,
    standardised."""
    from latentbench.synthetic import simulate_2pl

    trials = int(kind[8:])
    data = simulate_2pl(n_models, n_items, random_state=k)
    rng = np.random.default_rng(100 + k)
    Y = (rng.binomial(trials, data.probabilities) / trials).astype(np.float32)
    sim = ResponseMatrix(Y, data.matrix.model_ids, data.matrix.item_ids)
    fit = TwoPL(trials=trials).fit(sim)
    unc = fit.standard_errors()
    ab = unc.abilities
    truth = on_scale(data.theta.ravel(), reference(fit))
    est = ab["theta"].to_numpy(float)
    return {
        "coverage": float(np.mean((ab["lower"] <= truth) & (truth <= ab["upper"]))),
        "width": float(np.mean(ab["upper"] - ab["lower"])),
        "sq_error": float(np.mean((est - truth) ** 2)),
        "inside": float(np.all((ab["lower"] <= ab["theta"]) & (ab["theta"] <= ab["upper"]))),
        "spearman": float(spearmanr(est, sim.model_accuracy(), nan_policy="omit")[0]),
        "fallback": float(unc.fallback is not None),
        "detached": float((~reference(fit)).sum()),
    }


def replica(
    args: tuple[str, int, int, int, int, bool, int | None, int | None],
) -> dict[str, Any]:
    """One parametric replica: redraw, refit, score; the per-replica figures."""
    kind, n_models, n_items, seed, k, scoring, boot, jackknife = args
    warnings.simplefilter("ignore")
    from latentbench.irt import _fitted

    if boot is not None:
        _fitted.ITEM_BOOTSTRAP = boot
    if jackknife is not None:
        _fitted.MODEL_JACKKNIFE = bool(jackknife)
    if kind.startswith("binomial"):
        return binomial_replica(kind, n_models, n_items, k)
    matrix = stress_matrix(kind, n_models, n_items, seed)
    trials = int(kind[6:]) if kind.startswith("trials") else 1
    fit = TwoPL(trials=trials).fit(matrix) if trials > 1 else TwoPL().fit(matrix)
    p = fit.predict_proba()
    truth = fit.U[:, 0]
    rng = np.random.default_rng(1000 + k)
    Y = (rng.binomial(trials, p) / trials).astype(np.float32)
    Y[~matrix.observed] = np.nan
    sim = ResponseMatrix(Y, matrix.model_ids, matrix.item_ids)
    model = TwoPL(trials=trials) if trials > 1 else TwoPL()
    res = model.fit(sim)
    unc = res.standard_errors()
    ab = unc.abilities
    # the truth on the refit's reporting scale (its reference models: mean 0, sd 1)
    truth = on_scale(truth, reference(res))
    theta = ab["theta"].to_numpy(float)
    ref = reference(res)  # width and RMSE over the models that set the scale
    out = {
        "coverage": float(np.mean((ab["lower"] <= truth) & (truth <= ab["upper"]))),
        "width": float(np.mean((ab["upper"] - ab["lower"])[ref])),
        "sq_error": float(np.mean((theta - truth)[ref] ** 2)),
        "inside": float(np.all((ab["lower"] <= ab["theta"]) & (ab["theta"] <= ab["upper"]))),
        "spearman": float(spearmanr(theta, sim.model_accuracy(), nan_policy="omit")[0]),
        "fallback": float(unc.fallback is not None),
        "detached": float((~reference(res)).sum()),
    }
    if scoring:
        perm = rng.permutation(matrix.n_models)
        half = matrix.n_models // 2
        cal, new = np.sort(perm[:half]), np.sort(perm[half:])
        ids = np.array(matrix.model_ids)
        calibration = model.fit(ResponseMatrix(Y[cal], list(ids[cal]), matrix.item_ids))
        scored = calibration.score_models(ResponseMatrix(Y[new], list(ids[new]), matrix.item_ids))
        target = on_scale(truth[cal], reference(calibration), truth[new])
        out["score_coverage"] = float(
            np.mean((scored["lower"] <= target) & (target <= scored["upper"]))
        )
        out["score_se"] = float(scored["se"].mean())
        out["score_sq_error"] = float(np.mean((scored["theta"].to_numpy() - target) ** 2))
        # per scored model (for --by-accuracy): its accuracy and whether it was covered
        out["score_accuracy"] = scored["accuracy"].to_numpy(float)
        inside = (scored["lower"] <= target) & (target <= scored["upper"])
        out["score_covered"] = inside.to_numpy()
        # the calibration half's own theta intervals (truth on its reporting scale)
        cab = calibration.standard_errors().abilities
        cal_truth = on_scale(truth[cal], reference(calibration))
        out["cal_coverage"] = float(
            np.mean((cab["lower"] <= cal_truth) & (cal_truth <= cab["upper"]))
        )
    return out


def reference(result: object) -> np.ndarray:
    """The models that set a fit's reporting scale (all but the detached ones)."""
    norm = getattr(result, "normalisation", None)
    n = len(result.model_ids)  # type: ignore[attr-defined]
    return np.ones(n, bool) if norm is None else norm.mask(n)


def on_scale(values: np.ndarray, ref: np.ndarray, target: np.ndarray | None = None) -> np.ndarray:
    """``target`` (default ``values``) standardised by the mean and sd of ``values[ref]``."""
    target = values if target is None else target
    return (target - values[ref].mean()) / values[ref].std()


def print_by_accuracy(rows: list[dict[str, Any]]) -> None:
    """``score_models`` coverage of the scored models pooled over replicas, by accuracy band."""
    accuracy = np.concatenate([r["score_accuracy"] for r in rows])
    covered = np.concatenate([r["score_covered"] for r in rows]).astype(float)
    edges = (0.0, 0.05, 0.3, 0.5, 0.7, 0.95, 1.0)
    band = np.clip(np.searchsorted(edges, accuracy, side="left") - 1, 0, len(edges) - 2)
    for b in range(len(edges) - 1):
        sel = band == b
        if sel.any():
            print(
                f"    score_models, accuracy ({edges[b]:.2f}, {edges[b + 1]:.2f}]: "
                f"{covered[sel].mean():.3f} of {int(sel.sum())} scored models"
            )


def mean_se(values: list[float]) -> tuple[float, float]:
    arr = np.asarray(values, float)
    se = float(arr.std(ddof=1) / np.sqrt(arr.size)) if arr.size > 1 else float("nan")
    return float(arr.mean()), se


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", default="22x2854", help="models x items (default 22x2854)")
    parser.add_argument("--kinds", default=",".join(KINDS[:2]), help=f"among {KINDS}")
    parser.add_argument("--replicas", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0, help="seed of the stress matrix")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--no-score", action="store_true", help="skip score_models")
    parser.add_argument(
        "--by-accuracy",
        action="store_true",
        help="also score_models coverage by the scored models' accuracy band",
    )
    parser.add_argument("--start", type=int, default=0, help="first replica (chunks of a run)")
    parser.add_argument("--per-replica", action="store_true", help="print every replica")
    parser.add_argument(
        "--item-bootstrap",
        type=int,
        default=None,
        help="replicates of the random-item fit's item bootstrap (0: off; default: the "
        "library's, latentbench.irt._fitted.ITEM_BOOTSTRAP)",
    )
    parser.add_argument(
        "--model-jackknife",
        type=int,
        default=None,
        help="score_models: 0 leaves out the jackknife over the calibration's models, 1 adds "
        "it (default: the library's, latentbench.irt._fitted.MODEL_JACKKNIFE)",
    )
    args = parser.parse_args()
    n_models, n_items = (int(x) for x in args.shape.split("x"))
    print(f"bench_coverage: {args.shape}, {args.replicas} replicas, stress seed {args.seed}")
    header = (
        f"{'matrix':10} {'theta coverage':>16} {'width':>7} {'RMSE':>7} {'1.96 RMSE':>9} "
        f"{'inside own':>10} {'spearman':>8} {'fallback':>8} {'detached':>8} "
        f"{'score_models cov':>17} "
        f"{'mean se':>7} {'RMSE':>6} {'s':>5}"
    )
    print(header)
    for kind in args.kinds.split(","):
        start = time.perf_counter()
        tasks = [
            (
                kind,
                n_models,
                n_items,
                args.seed,
                k,
                not args.no_score,
                args.item_bootstrap,
                args.model_jackknife,
            )
            for k in range(args.start, args.start + args.replicas)
        ]
        if args.jobs > 1:
            with ProcessPoolExecutor(args.jobs) as pool:
                rows = list(pool.map(replica, tasks))
        else:
            rows = [replica(t) for t in tasks]
        if args.per_replica:
            for t, r in zip(tasks, rows, strict=True):
                print(
                    f"  replica {t[4]}: theta {r['coverage']:.4f}"
                    + (f", score_models {r['score_coverage']:.4f}" if "score_coverage" in r else "")
                    + (f", calibration half {r['cal_coverage']:.4f}" if "cal_coverage" in r else "")
                )
        cov, cov_se = mean_se([r["coverage"] for r in rows])
        rmse = float(np.sqrt(np.mean([r["sq_error"] for r in rows])))
        line = (
            f"{kind:10} {cov:8.3f} ± {cov_se:5.3f} {np.mean([r['width'] for r in rows]):7.3f} "
            f"{rmse:7.3f} {2 * 1.96 * rmse:9.3f} {np.mean([r['inside'] for r in rows]):10.2f} "
            f"{min(r['spearman'] for r in rows):8.3f} {np.mean([r['fallback'] for r in rows]):8.2f}"
            f" {np.mean([r.get('detached', 0.0) for r in rows]):8.2f}"
        )
        if not args.no_score and "score_coverage" in rows[0]:
            sc, sc_se = mean_se([r["score_coverage"] for r in rows])
            srmse = float(np.sqrt(np.mean([r["score_sq_error"] for r in rows])))
            line += f" {sc:9.3f} ± {sc_se:5.3f} {np.mean([r['score_se'] for r in rows]):7.3f}"
            line += f" {srmse:6.3f}"
            cc, cc_se = mean_se([r["cal_coverage"] for r in rows])
            line += f" (calibration half's own theta {cc:.3f} ± {cc_se:.3f})"
        else:
            line += f" {'':17} {'':7} {'':6}"
        print(line + f" {time.perf_counter() - start:5.0f}", flush=True)
        if args.by_accuracy and not args.no_score and "score_accuracy" in rows[0]:
            print_by_accuracy(rows)
    print(
        "width: mean 95% interval width (compare 2 x 1.96 RMSE; both over the models that set "
        "the scale, not the detached ones); inside own: share of replicas "
        "where every model's theta is in its own interval; spearman: the smallest over "
        "replicas; fallback: share of replicas whose intervals fell back (to joint Laplace, or "
        "the disagreement union); "
        "detached: mean number of detached models (not setting the scale; prior-sensitivity "
        "intervals)"
    )


if __name__ == "__main__":
    main()
