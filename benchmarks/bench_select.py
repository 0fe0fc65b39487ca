"""Compute overhead of PULSE (issue 4): replay and item-factor fit, medians with UCB-E beside.

Setting: leaderboard-like models drawn from a rank-4 fit of ``mmlu_pro.parquet`` (see
``latentbench.synthetic``), so the timings run on real item structure.

* replay: 1,000 models x 9,574 items, B = 64, budget 400,000 post-init cells, refit every
  1,000 rounds (6 refits + the prewarm), PULSE vs UCB-E;
* item factors: ``LowRankProxy.fit`` (the cBMM engine) on a 2,000 x 10,000 history.

Usage::

    python benchmarks/bench_select.py [--repeats 3] [--rank 16] [--skip-fit]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small linear algebra; see _experiment.py

import argparse
import statistics
import time
import warnings
from pathlib import Path

import numpy as np

from latentbench.io import ResponseMatrix
from latentbench.select import UCBE, LowRankProxy, MatrixOracle, Pulse, run_selection
from latentbench.synthetic import LeaderboardSimulator

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "mmlu_pro.parquet"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rank", type=int, default=16, help="proxy rank")
    parser.add_argument("--fit-max-iter", type=int, default=50)
    parser.add_argument("--skip-fit", action="store_true")
    args = parser.parse_args()

    source = ResponseMatrix.read(args.data).scores[:, :10_000]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = LeaderboardSimulator(rank=4, max_iter=150).fit(source)
    scores, _ = sim.sample(3000, random_state=0)
    history, candidates = scores[:2000], scores[2000:, :9574]

    # replay: proxy with rank-r item factors; V from the simulator padded with a fitted-looking
    # random nonnegative block when rank > 4 (timing only, the loop does not care)
    rng = np.random.default_rng(0)
    V = np.hstack([sim.V_[:9574], 0.05 * np.abs(rng.normal(size=(9574, max(args.rank - 4, 0))))])
    U_hist = np.hstack([sim.U_, rng.normal(size=(sim.U_.shape[0], max(args.rank - 4, 0)))])
    proxy = LowRankProxy.from_factors(V, sim.b_[:9574], U_history=U_hist)
    oracle = MatrixOracle(candidates)
    times: dict[str, list[float]] = {"pulse": [], "ucbe": []}
    proxy_times = []
    for rep in range(args.repeats):
        for name, policy in (("pulse", Pulse()), ("ucbe", UCBE())):
            start = time.perf_counter()
            res = run_selection(
                oracle,
                policy,
                budget=400_000,
                batch_size=64,
                init_batch=64,
                proxy=proxy,
                random_state=rep,
            )
            times[name].append(time.perf_counter() - start)
            if name == "pulse":
                proxy_times.append(res.proxy_seconds)
                refits = res.n_refits
    print(f"replay 1000 x 9574, B=64, budget 400,000 ({args.repeats} repeats, rank {args.rank})")
    print(
        f"  PULSE  median {statistics.median(times['pulse']):6.2f} s "
        f"(proxy prewarm + {refits} refits: {statistics.median(proxy_times):.2f} s)"
    )
    print(f"  UCB-E  median {statistics.median(times['ucbe']):6.2f} s")

    if not args.skip_fit:
        fit_times = []
        for rep in range(max(1, args.repeats - 2)):
            start = time.perf_counter()
            LowRankProxy(rank=args.rank, max_iter=args.fit_max_iter, random_state=rep).fit(history)
            fit_times.append(time.perf_counter() - start)
        print(
            f"item factors, history 2000 x 10000, rank {args.rank}, max_iter "
            f"{args.fit_max_iter}: median {statistics.median(fit_times):6.2f} s"
        )


if __name__ == "__main__":
    main()
