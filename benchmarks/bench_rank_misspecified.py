"""Ability intervals when the truth has two factors and the fit has one (the default rank).

Truth (as in the 2026-12-05 coverage audit): ``X = U V' + b``, ``U ~ N(0, I_2)``,
``V_1 ~ LogNormal(0, 0.3)``, ``V_2 ~ U(0, 1.5)`` (both >= 0, every item loads on both), ``b ~
N(0, 1)``, binary cells, no missing cell. The ability the docs define for a rank-r truth is
``U w`` (``w`` the items' mean loading direction, ``SyntheticData.theta``), standardised over
the models. Printed per shape, over seeds (replica-clustered SE):

- the default ``TwoPL()`` (rank 1): coverage of ``U w`` by its 95% ability intervals, and of
  the population rank-1 projection ``theta*`` (a rank-1 fit with no prior to the **true**
  probability matrix as soft labels, standardised: what a rank-1 fit estimates);
- ``TwoPL(rank="auto")``: the rank it keeps, and its intervals' coverage of ``U w`` (a rank-r
  fit's ability is centred, not scaled: its intervals are put on its own standardised scale
  first, the rank-1 convention; the sd of its ``theta`` is printed).

Usage::

    python benchmarks/bench_rank_misspecified.py --shapes 30x500,50x1000,70x2000 --seeds 10
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


def simulate(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores (n, m), the true ability ``U w`` and the true probabilities."""
    rng = np.random.default_rng([n, m, seed])
    U = rng.normal(size=(n, 2))
    V = np.column_stack([rng.lognormal(0.0, 0.3, m), rng.uniform(0.0, 1.5, m)])
    b = rng.normal(0.0, 1.0, m)
    P = 1.0 / (1.0 + np.exp(-(U @ V.T + b)))
    w = V.mean(axis=0) / np.linalg.norm(V.mean(axis=0))
    Y = (rng.random((n, m)) < P).astype(np.float32)
    return Y, U @ w, P


def _standard(x: np.ndarray) -> np.ndarray:
    return (x - x.mean()) / x.std()


def _covered(abilities: Any, truth: np.ndarray, standardise: bool = False) -> float:
    """Share of ``truth`` (standardised) inside the intervals; ``standardise``: the intervals
    first put on the fit's own standardised scale (mean 0, sd 1 of its ``theta``): a rank-r
    fit's abilities are centred only, their scale is the prior's balance of the factors."""
    lo, hi = abilities["lower"].to_numpy(float), abilities["upper"].to_numpy(float)
    if standardise:
        theta = abilities["theta"].to_numpy(float)
        lo, hi = (lo - theta.mean()) / theta.std(), (hi - theta.mean()) / theta.std()
    return float(np.mean((lo <= truth) & (truth <= hi)))


def replica(shape: tuple[int, int], seed: int, auto: bool) -> dict[str, Any]:
    n, m = shape
    Y, ability, P = simulate(n, m, seed)
    models, items = [f"m{i}" for i in range(n)], [f"q{j}" for j in range(m)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = TwoPL().fit(ResponseMatrix(Y, models, items))
        ab = fit.standard_errors().abilities
        projection = TwoPL(prior=None, l2=1e-6).fit(
            ResponseMatrix(P.astype(np.float32), models, items)
        )
        out: dict[str, Any] = {
            "uw": _covered(ab, _standard(ability)),
            "projection": _covered(ab, _standard(np.asarray(projection.theta, float))),
            "corr": float(np.corrcoef(ability, projection.theta)[0, 1]),
        }
        if auto:
            chosen = TwoPL(rank="auto").fit(ResponseMatrix(Y, models, items))
            out["rank"] = int(chosen.rank)
            found = chosen.standard_errors().abilities
            out["auto_uw"] = _covered(found, _standard(ability), standardise=chosen.rank > 1)
            out["auto_sd"] = float(found["theta"].std(ddof=0))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default="30x500,50x1000,70x2000")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-auto", action="store_true", help="skip the rank='auto' fits")
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]

    def cell(rows: list[dict[str, Any]], key: str) -> str:
        x = np.array([r[key] for r in rows], float)
        return f"{x.mean():.3f} ± {x.std(ddof=1) / np.sqrt(x.size):.3f}"

    print(
        "| models x items | seeds | rank 1 (default): covers U w | covers theta* | "
        "corr(U w, theta*) | rank='auto' keeps | its intervals cover U w |"
    )
    print("|---|---|---|---|---|---|---|")
    with ProcessPoolExecutor(args.jobs) as pool:
        for shape in shapes:
            start = time.perf_counter()
            k = args.seeds
            rows = list(pool.map(replica, [shape] * k, range(k), [not args.no_auto] * k))
            ranks = (
                "-"
                if args.no_auto
                else ", ".join(
                    f"{r}: {sum(x['rank'] == r for x in rows)}"
                    for r in sorted({x["rank"] for x in rows})
                )
            )
            auto = "-" if args.no_auto else cell(rows, "auto_uw")
            if not args.no_auto:
                auto += f" (theta sd {np.mean([r['auto_sd'] for r in rows]):.2f})"
            print(
                f"| {shape[0]} x {shape[1]} | {k} | {cell(rows, 'uw')} "
                f"| {cell(rows, 'projection')} "
                f"| {np.mean([r['corr'] for r in rows]):.4f} | {ranks} | {auto} |",
                f"<!-- {time.perf_counter() - start:.0f} s -->",
            )


if __name__ == "__main__":
    main()
