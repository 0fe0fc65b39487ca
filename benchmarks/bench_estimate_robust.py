"""`estimate` and `compare` when the new models are not what the IRT model says.

The guarantee of :func:`latentbench.select.estimate` (and :func:`~latentbench.select.compare`)
is over the random item draws, for a **fixed** answer vector, whatever the calibration's
quality. Here the answer vectors are fixed and the seed varies; every miss is counted at the
stop (``budget``) and at any step before it (``EstimateResult.trajectory``: the interval is a
running intersection, so the two agree).

Calibration: 25 models x 1,000 items of a 2PL (``theta ~ N(0, 1)``, ``a ~ LogNormal(0, 0.3)``,
``b ~ N(0, 1)``), fitted at rank 1 (a rank-3 world for the ``rank3`` case). New models:

- ``noise2`` / ``noise4``: 2PL logits plus item-specific noise N(0, 2^2) / N(0, 4^2);
- ``rank3``: five more models of a rank-3 world with signed loadings, the calibration fitted at
  rank 1;
- ``far_above`` (abilities 4-6, scores 0.95-0.99) and ``floor`` (-5 to -7, 0.003-0.015);
- ``anti_irt``: right exactly on the items the calibration finds hardest, accuracy 0.1-0.9;
- ``fractional``: half Beta(0.5, 0.5) noise, half a 2PL answer (judge-probability scores);
- ``near_constant``: three ones among 1,000 zeros, and three zeros among ones.

``compare``: pairs whose full-benchmark difference is exactly 0 (every certified sign is
wrong) or +0.005: a near copy (80 discordant items), two independent models, two with
item-specific noise, each adjusted by flipping cells to the exact difference.

Usage::

    python benchmarks/bench_estimate_robust.py --seeds 40 --delta 0.05      # estimate, ~3 min
    python benchmarks/bench_estimate_robust.py --task compare --seeds 100 --delta 0.05   # ~4 min
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy.stats import beta as beta_dist

from latentbench import ResponseMatrix
from latentbench.select import compare, estimate


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _matrix(Y: np.ndarray) -> ResponseMatrix:
    n, m = Y.shape
    return ResponseMatrix(
        Y.astype(np.float32), [f"m{i}" for i in range(n)], [f"i{j:04d}" for j in range(m)]
    )


def _clopper_pearson(k: int, n: int) -> str:
    lo = beta_dist.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = beta_dist.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k}/{n} = {k / n:.3f} [{lo:.3f}, {hi:.3f}]"


def estimate_cases(
    rng: np.random.Generator, n: int = 25, m: int = 1000, new: int = 5
) -> dict[str, tuple[ResponseMatrix, np.ndarray]]:
    """Each case: (calibration matrix, new models' answers (k, m))."""
    theta, a, b = rng.normal(size=n), rng.lognormal(0.0, 0.3, m), rng.normal(0.0, 1.0, m)

    def draw(p: np.ndarray) -> np.ndarray:
        return (rng.random(p.shape) < p).astype(float)

    calibration = _matrix(draw(_sigmoid(np.outer(theta, a) + b)))
    U3 = rng.normal(size=(n + new, 3))
    V3 = np.abs(rng.normal(size=(m, 3))) * np.array([1.0, 1.5, 1.5])
    V3[:, 1:] *= rng.choice([-1.0, 1.0], size=(m, 2))
    Y3 = draw(_sigmoid(U3 @ V3.T + rng.normal(0.0, 1.0, m)))
    t_new = rng.normal(size=new)
    base = np.outer(t_new, a) + b
    hardest = np.argsort(b)
    anti = np.zeros((new, m))
    for k, accuracy in enumerate(np.linspace(0.1, 0.9, new)):
        anti[k, hardest[: int(accuracy * m)]] = 1.0
    near = np.zeros((2, m))
    near[0, rng.choice(m, 3, replace=False)] = 1.0
    near[1] = 1.0
    near[1, rng.choice(m, 3, replace=False)] = 0.0
    return {
        "noise2": (calibration, draw(_sigmoid(base + rng.normal(0.0, 2.0, (new, m))))),
        "noise4": (calibration, draw(_sigmoid(base + rng.normal(0.0, 4.0, (new, m))))),
        "rank3": (_matrix(Y3[:n]), Y3[n:]),
        "far_above": (calibration, draw(_sigmoid(np.outer(np.linspace(4, 6, new), a) + b))),
        "floor": (calibration, draw(_sigmoid(np.outer(np.linspace(-5, -7, new), a) + b))),
        "anti_irt": (calibration, anti),
        "fractional": (
            calibration,
            0.5 * rng.beta(0.5, 0.5, (new, m)) + 0.5 * draw(_sigmoid(base)),
        ),
        "near_constant": (calibration, near),
    }


def run_estimate(seeds: int, delta: float, budget: int) -> None:
    rng = np.random.default_rng(2026)
    print(f"| case | misses at the stop (delta {delta}) | misses at any step | mean width |")
    print("|---|---|---|---|")
    total = [0, 0, 0]
    for name, (calibration, answers) in estimate_cases(rng).items():
        stop = ever = runs = 0
        widths = []
        for i, y in enumerate(answers):
            truth = float(y.mean())
            for seed in range(seeds):
                r = estimate(
                    calibration, y, model=f"{name}{i}", budget=budget, seed=seed, delta=delta
                )
                stop += not (r.lower <= truth <= r.upper)
                path = r.trajectory
                ever += bool(((path[:, 1] > truth) | (path[:, 2] < truth)).any())
                widths.append(r.upper - r.lower)
                runs += 1
        total = [total[0] + stop, total[1] + ever, total[2] + runs]
        print(
            f"| {name} | {_clopper_pearson(stop, runs)} | {_clopper_pearson(ever, runs)} "
            f"| {np.mean(widths):.3f} |"
        )
    every = f"{_clopper_pearson(total[0], total[2])} | {_clopper_pearson(total[1], total[2])}"
    print(f"| all | {every} | |")


def run_compare(seeds: int, delta: float) -> None:
    rng = np.random.default_rng(7)
    n, m = 25, 1000
    theta, a, b = rng.normal(size=n), rng.lognormal(0.0, 0.3, m), rng.normal(0.0, 1.0, m)
    calibration = _matrix((rng.random((n, m)) < _sigmoid(np.outer(theta, a) + b)).astype(float))

    def draw(p: np.ndarray) -> np.ndarray:
        return (rng.random(p.shape) < p).astype(float)

    def adjust(A: np.ndarray, B: np.ndarray, target: float) -> np.ndarray:
        """B with cells flipped until mean(A) - mean(B) == target exactly."""
        B = B.copy()
        need = round(float(A.sum() - B.sum()) - target * m)  # > 0: B needs more ones
        if need > 0:
            B[rng.choice(np.flatnonzero(B == 0), need, replace=False)] = 1.0
        elif need < 0:
            B[rng.choice(np.flatnonzero(B == 1), -need, replace=False)] = 0.0
        return B

    print(
        f"| pair | true difference | certified | wrong sign (delta {delta}) | interval misses "
        "| mean items |"
    )
    print("|---|---|---|---|---|---|")
    for target in (0.0, 0.005):
        A = draw(_sigmoid(0.3 * a + b))
        B = A.copy()
        B[rng.choice(np.flatnonzero(A == 1), 40, replace=False)] = 0.0
        B[rng.choice(np.flatnonzero(A == 0), 40, replace=False)] = 1.0
        pairs = [("near copy", A, adjust(A, B, target))]
        A, B = draw(_sigmoid(0.3 * a + b)), draw(_sigmoid(0.35 * a + b))
        pairs.append(("independent", A, adjust(A, B, target)))
        A = draw(_sigmoid(0.3 * a + b + rng.normal(0.0, 2.0, m)))
        B = draw(_sigmoid(0.3 * a + b + rng.normal(0.0, 2.0, m)))
        pairs.append(("item noise", A, adjust(A, B, target)))
        for name, A, B in pairs:
            truth = float(A.mean() - B.mean())
            certified = wrong = miss = 0
            items = []
            for seed in range(seeds):
                r = compare(calibration, A, B, model_a="a", model_b="b", seed=seed, delta=delta)
                items.append(r.n_evaluated)
                if r.higher is not None:
                    certified += 1
                    wrong += (r.higher == "a") != (truth > 0) or truth == 0
                miss += not (r.lower <= truth <= r.upper)
            print(
                f"| {name} | {truth:+.3f} | {certified}/{seeds} | "
                f"{_clopper_pearson(wrong, seeds)} | {miss}/{seeds} | {np.mean(items):.0f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", choices=("estimate", "compare"), default="estimate")
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--budget", type=int, default=100, help="estimate's items")
    args = parser.parse_args()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if args.task == "estimate":
            run_estimate(args.seeds, args.delta, args.budget)
        else:
            run_compare(args.seeds, args.delta)
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
