"""Ability-interval coverage when one model is at the floor (every observed score 0).

A broken model (every answer wrong: a parsing failure, a dead endpoint) is common. Its marginal
likelihood has no finite maximum, so it cannot sit in the random-item fit that gives a small
fit's ability intervals. Until 2026-12-05 one such model switched **every** model of the fit
to the joint Laplace intervals (the check's ``constant_models`` reason); now the item law is
fitted without it (as without a detached model) and it gets its exact posterior interval.

Each replica: a fresh 2PL (``simulate_2pl``, N - 1 models with N(0, 1) abilities) plus one
model of true ability ``--floor`` whose row is redrawn until every cell is 0 (a draw from
the data's law given that it is constant). Fitted with the default ``TwoPL()``; the truth is
the generating abilities standardised over the models that set the fit's reporting scale
(``IRTResult.normalisation``; since 2026-12-05 the constant model never does), as in
``bench_coverage.py``. Printed per shape, over the N - 1 other models: coverage of the
default 95% intervals (``standard_errors()``: what a user gets now) and of the joint Laplace
intervals centred on the fit's ability (what the fallback gave before), each with its Monte
Carlo SE (replicas as clusters), their mean widths, the method used, and how often the
constant model is detached instead. Also the constant model's own interval coverage.

Usage::

    python benchmarks/bench_constant_models.py --replicas 100 --jobs 2
    python benchmarks/bench_constant_models.py --shapes 12x40 --replicas 10   # quick
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

from latentbench import ResponseMatrix  # noqa: E402
from latentbench.irt import TwoPL  # noqa: E402
from latentbench.irt._fitted import laplace_of, trials_of  # noqa: E402
from latentbench.synthetic import simulate_2pl  # noqa: E402

Z = 1.959963984540054


def replica(shape: tuple[int, int], floor: float, k: int, clean: bool = False) -> dict[str, Any]:
    """One replica: coverage of the other models under both interval methods (``clean``:
    the last model's row drawn as it comes, not redrawn until constant)."""
    n, m = shape
    data = simulate_2pl(n - 1, m, random_state=k)
    rng = np.random.default_rng(10_000 + k)
    a, b = data.V[:, 0], data.b
    # the highest ability from --floor down (steps of 0.25) at which an all-zero row comes
    # within 2,000 draws (more items: a lower one)
    for _ in range(40):
        p = 1.0 / (1.0 + np.exp(-(a * floor + b)))
        row = (rng.random((2_000, m)) < p).astype(np.float32)
        hit = np.flatnonzero(~row.any(axis=1))
        if clean or hit.size:
            row = row[0 if clean else hit[0]]
            break
        floor -= 0.25
    else:  # pragma: no cover
        raise RuntimeError(f"no all-zero row down to ability {floor}")
    Y = np.vstack([data.matrix.scores, row[None, :]])
    truth_raw = np.r_[data.theta, floor]
    mat = ResponseMatrix(Y, [f"m{i}" for i in range(n)], [f"q{j}" for j in range(m)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = TwoPL().fit(mat)
        unc = fit.standard_errors()
        laplace = laplace_of(fit, Y.astype(float))
        var_l = np.diag(laplace.covariance()) / trials_of(fit)
    ref = fit.normalisation.mask(n) if fit.normalisation is not None else np.ones(n, bool)
    truth = (truth_raw - truth_raw[ref].mean()) / truth_raw[ref].std()
    ab = unc.abilities
    lo, hi = ab["lower"].to_numpy(float), ab["upper"].to_numpy(float)
    centre = fit.theta
    sd_l = np.sqrt(np.maximum(var_l, 0.0))
    lo_l, hi_l = centre - Z * sd_l, centre + Z * sd_l
    others = np.arange(n - 1)
    return {
        "cov_new": float(np.mean((lo[others] <= truth[others]) & (truth[others] <= hi[others]))),
        "cov_old": float(
            np.mean((lo_l[others] <= truth[others]) & (truth[others] <= hi_l[others]))
        ),
        # finite intervals only; a far model of the others may be detached (one-sided)
        "width_new": float(np.mean((hi - lo)[others][np.isfinite((hi - lo)[others])])),
        "others_open": int(np.sum(~np.isfinite((hi - lo)[others]))),
        "width_old": float(np.mean(hi_l[others] - lo_l[others])),
        "random_item": unc.method.startswith("random-item"),
        # (it never sets the scale since 2026-12-05; detached: it got the detached interval)
        "detached": unc.detached is not None and mat.model_ids[-1] in unc.detached["models"],
        "floor_covered": bool(lo[-1] <= truth[-1] <= hi[-1]),
        "floor": float(floor),
    }


def summarise(shape: tuple[int, int], rows: list[dict[str, Any]]) -> str:
    def mean_se(key: str) -> str:
        x = np.array([r[key] for r in rows], float)
        return f"{x.mean():.3f} ± {x.std(ddof=1) / np.sqrt(x.size):.3f}"

    kept = [r for r in rows if not r["detached"]]
    floor = np.mean([r["floor_covered"] for r in rows])
    return (
        f"| {shape[0]} x {shape[1]} | {len(rows)} | {mean_se('cov_new')} | {mean_se('cov_old')} "
        f"| {np.mean([r['width_new'] for r in rows]):.3f} / "
        f"{np.mean([r['width_old'] for r in rows]):.3f} "
        f"| {np.mean([r['random_item'] for r in rows]):.2f} "
        f"| {np.mean([r['others_open'] > 0 for r in rows]):.2f} "
        f"| {1 - len(kept) / len(rows):.2f} | {floor:.2f} "
        f"| {np.mean([r['floor'] for r in rows]):.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default="12x40,20x60,30x100,20x200")
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--floor", type=float, default=-3.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--clean", action="store_true", help="the last row as drawn (a baseline, no constant)"
    )
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    print(
        "| shape (models x items) | replicas | coverage, other models: default now | joint "
        "Laplace (before) | mean width now (finite) / before | random-item share | another "
        "model detached | constant model detached | its interval covers | its ability (mean) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    with ProcessPoolExecutor(args.jobs) as pool:
        for shape in shapes:
            start = time.perf_counter()
            rows = list(
                pool.map(
                    replica,
                    [shape] * args.replicas,
                    [args.floor] * args.replicas,
                    range(args.replicas),
                    [args.clean] * args.replicas,
                )
            )
            print(summarise(shape, rows), f"<!-- {time.perf_counter() - start:.0f} s -->")


if __name__ == "__main__":
    main()
