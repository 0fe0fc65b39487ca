"""Why PULSE saves less against UCB-E on the demo's leaderboard than on BFCL gap 0.02.

The demo's setup (``latentbench.synthetic.leaderboard_like(200, 1000, random_state=7)``, a
random half of the models as history, the default schedule) on pools of known top-two gap,
each with three policies on the same seeds: PULSE (default), UCB-E (default, its paper order)
and UCB-E given PULSE's shared item order (no proxy). The shared order alone is what PULSE
would save without its proxy; the rest is the proxy's.

Pools: the demo's own (100 candidates, top-two gap 0.036), its 35 best (BFCL gap 0.02's size),
and two exact-gap pools of 35 from the same generator with 400 models (200 candidates), whose
nearest gaps to 0.02 and 0.01 are 0.019 and 0.018.

Usage: ``PYTHONPATH=src python benchmarks/bench_demo_pools.py [--seeds 200]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from latentbench.select import LowRankProxy, default_schedule, run_experiment, split_models
from latentbench.select._experiment import exact_gap_pool
from latentbench.synthetic import leaderboard_like

POLICIES = ["pulse", "ucbe", "ucbe:item_order=shared"]
COLUMNS = ["policy", "budget_post_init", "budget_post_init_sd", "saved_post_init_pct"]


def _board(n_models: int) -> tuple[np.ndarray, LowRankProxy]:
    scores = leaderboard_like(n_models, 1000, random_state=7)
    history, candidates = split_models(n_models, how="random", random_state=0)
    proxy = LowRankProxy(rank="auto", random_state=0).fit(scores[history])
    return scores[candidates], proxy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    args = parser.parse_args()
    demo, demo_proxy = _board(200)
    big, big_proxy = _board(400)
    big_means = big.mean(axis=1)
    runs = [
        ("demo (100 candidates)", np.arange(demo.shape[0]), demo, demo_proxy),
        ("demo's 35 best", exact_gap_pool(demo.mean(axis=1), None, 35), demo, demo_proxy),
        ("gap 0.02 x 35 (400-model board)", exact_gap_pool(big_means, 0.02, 35), big, big_proxy),
        ("gap 0.01 x 35 (400-model board)", exact_gap_pool(big_means, 0.01, 35), big, big_proxy),
    ]
    for name, pool, Y, proxy in runs:
        batch, init = default_schedule(len(pool), Y.shape[1], None)
        start = time.perf_counter()
        result = run_experiment(
            Y,
            {"pool": pool},
            POLICIES,
            seeds=args.seeds,
            budget=min(Y[pool].size - len(pool) * init, 12_000),
            batch_size=batch,
            init_batch=init,
            proxy=proxy,
            n_jobs=1,
        )
        frame = result.to_frame()
        gap = result.pools["pool"]["top2_gap"]
        print(
            f"{name}: top-two gap {gap:.3f}, B={batch}, start {init}, {args.seeds} seeds, "
            f"{time.perf_counter() - start:.0f} s"
        )
        shown = frame[COLUMNS].copy()
        shown["saved_se"] = frame["saved_post_init_pct_se"]
        print(shown.to_string(index=False, float_format=lambda v: f"{v:,.1f}"), flush=True)


if __name__ == "__main__":
    main()
