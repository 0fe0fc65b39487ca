"""Cost and accuracy of the item bootstrap of the random-item fit (issue 28, small calibrations).

On a calibration half of a parametric replica of a shared matrix (the protocol of
``bench_heldout.py --score-only``: replica ``k`` redrawn from the default fit with seed
``2000 + k``, a random half of the models calibrates), fits the default ``TwoPL()`` and its
random-item law (:func:`latentbench.irt._fitted.random_items_fit`, bootstrap off), then the
item bootstrap (:func:`latentbench.irt._random_items.item_bootstrap`) in several variants
``support:mix:tol`` (grid points kept: those above ``support`` in the fitted law; starting
law: ``mix`` of uniform, the rest the fitted law; the EM's tolerance), and prints per variant
the seconds and EM iterations per replicate and the ratio of the bootstrap sd to the
law-fixed se over the models (median, mean, rms). With ``--cold N`` it also refits the first
N resamples from scratch (the items copied by their multiplicities): the random-item fit from
the calibration's MAP fit (a fresh grid, uniform start), and the whole default pipeline (a
new MAP fit with its prior choice, then the random-item fit): what the bootstrap must
reproduce. Each variant's slope of its replicate deviations on the fresh random-item fit's
(same resamples) says whether it is tied to the fit (below 1).

Usage::

    python benchmarks/bench_item_bootstrap.py --only alpacaeval2_weighted --boot 10 --cold 10
    python benchmarks/bench_item_bootstrap.py --only mmlu_pro --boot 3 --variants 0:1:3e-3
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from latentbench import ResponseMatrix
from latentbench.irt import TwoPL, _fitted, _random_items
from latentbench.irt._fitted import random_items_fit, reference_of
from latentbench.irt._random_items import fit_random_items, item_bootstrap, resamples

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def calibration_half(matrix: ResponseMatrix, k: int, full: bool) -> ResponseMatrix:
    """Replica ``k`` of ``bench_heldout.score_coverage`` (its calibration half, or all)."""
    fit = TwoPL().fit(matrix)
    p = fit.predict_proba()
    rng = np.random.default_rng(2000 + k)
    Y = (rng.random(p.shape) < p).astype(np.float32)
    Y[~matrix.observed] = np.nan
    if full:
        return ResponseMatrix(Y, matrix.model_ids, matrix.item_ids)
    perm = rng.permutation(matrix.n_models)
    cal = np.sort(perm[: matrix.n_models // 2])
    ids = np.array(matrix.model_ids)
    return ResponseMatrix(Y[cal], list(ids[cal]), matrix.item_ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="alpacaeval2_weighted")
    parser.add_argument("--replica", type=int, default=0)
    parser.add_argument("--full", action="store_true", help="the whole replica, not a half")
    parser.add_argument("--boot", type=int, default=10)
    parser.add_argument(
        "--variants",
        default="1e-10:0:1e-3,1e-10:0:1e-6,0:1:1e-4,0:1:1e-3,0:1:3e-3,0:1:1e-2",
        help="support:mix:tol, comma-separated",
    )
    parser.add_argument("--cold", type=int, default=0, help="also N refits from scratch")
    parser.add_argument("--data", type=Path, default=SHARED)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    _fitted.ITEM_BOOTSTRAP = 0
    matrix = calibration_half(
        ResponseMatrix.read(args.data / f"{args.only}.parquet"), args.replica, args.full
    )
    start = time.perf_counter()
    result = TwoPL().fit(matrix)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    law = random_items_fit(result)
    law_s = time.perf_counter() - start
    ref = reference_of(result)
    scores = np.asarray(matrix.scores, float)[ref]
    print(
        f"{args.only} replica {args.replica} {'full' if args.full else 'half'}: "
        f"{matrix.n_models} x {matrix.n_items}; MAP fit {fit_s:.1f} s, random-item fit "
        f"{law_s:.1f} s ({law.n_iter} EM iterations), law support "
        f"{int((law.weights > 1e-10).sum())} of {law.weights.size} grid points",
        flush=True,
    )
    se = law.se[ref]
    sub = _sub(law, ref)
    draws = {}
    iterations: list[int] = []
    original = _random_items._run_em

    def counted(*a, **k):  # type: ignore[no-untyped-def]
        out = original(*a, **k)
        iterations.append(out[2])
        return out

    _random_items._run_em = counted
    for variant in args.variants.split(","):
        support, mix, tol = (float(v) for v in variant.split(":"))
        iterations.clear()
        start = time.perf_counter()
        theta, _ = item_bootstrap(
            scores, sub, float(result.sigma), n_boot=args.boot, tol=tol, max_iter=20000,
            support=support, mix=mix,
        )  # fmt: skip
        seconds = (time.perf_counter() - start) / args.boot
        draws[variant] = theta
        _report(f"support {support:g}, mix {mix:g}, tol {tol:g}", theta, se, seconds, iterations)
    _random_items._run_em = original
    if args.cold:
        fresh, pipeline = [], []
        start = time.perf_counter()
        for counts in resamples(0, matrix.n_items, args.cold):
            idx = np.repeat(np.arange(matrix.n_items), counts)
            fit = fit_random_items(
                scores[:, idx], result.U[ref, 0], result.V[idx, 0], result.b[idx]
            )
            fresh.append(fit.theta)
            copy = ResponseMatrix(
                scores[:, idx].astype(np.float32),
                [m for m, r in zip(matrix.model_ids, ref, strict=True) if r],
                [f"i{k}" for k in range(idx.size)],
            )
            refit = TwoPL().fit(copy)
            keep = reference_of(refit).all()
            pipeline.append(random_items_fit(refit).theta if keep else np.full(se.size, np.nan))
        seconds = (time.perf_counter() - start) / args.cold
        cold = np.array(fresh)
        _report("fresh random-item fit (cold)", cold, se, seconds / 2, [])
        _report("whole default pipeline (cold)", np.array(pipeline), se, seconds / 2, [])
        for variant, theta in draws.items():
            dev, dev_cold = theta[: args.cold] - sub.theta, cold - sub.theta
            slope = float(np.sum(dev * dev_cold) / np.sum(dev_cold**2))
            print(f"  {variant}: slope of its deviations on the cold refits' {slope:.3f}")


def _report(name: str, theta: np.ndarray, se: np.ndarray, seconds: float, its: list[int]) -> None:
    ratio = np.nanstd(theta, axis=0, ddof=1) / se
    print(
        f"  {name}: {seconds:.2f} s per replicate"
        + (f", {np.mean(its):.0f} EM iterations" if its else "")
        + f"; bootstrap sd / law-fixed se: median {np.median(ratio):.3f}, mean "
        f"{np.mean(ratio):.3f}, rms {np.sqrt(np.mean(ratio**2)):.3f}",
        flush=True,
    )


def _sub(law, ref):  # type: ignore[no-untyped-def]
    """The law with its abilities restricted to the reference models."""
    from dataclasses import replace

    return replace(law, theta=law.theta[ref], covariance=law.covariance[np.ix_(ref, ref)])


if __name__ == "__main__":
    main()
