"""Why PULSE saves less against UCB-E on the demo's leaderboard than on BFCL gap 0.02.

The demo's setup (``latentbench.synthetic.leaderboard_like(200, 1000, random_state=7)``, a
random half of the models as history, the default schedule) on pools of known top-two gap,
each with three policies on the same seeds: PULSE (default), UCB-E (default, its paper order)
and UCB-E given PULSE's shared item order (no proxy). The shared order alone is what PULSE
would save without its proxy; the rest is the proxy's.

Pools: the demo's own (100 candidates, top-two gap 0.036), its 35 best (BFCL gap 0.02's size),
and two exact-gap pools of 35 from the same generator with 400 models (200 candidates), whose
nearest gaps to 0.02 and 0.01 are 0.019 and 0.018.

Which feature of BFCL makes PULSE's proxy worth more than on the generator
(RESULTS_select.md section 7): ``--runs`` picks the pools (default: the four above);
``--mu-b``, ``--n-items``, ``--board-seed`` (7, the demo's) and ``--history`` change the
generator's item intercept, its number of items, its seed and the number of history models
(the first ``--history`` of the random half); the run ``bfcl`` is BFCL v2's gap-0.02 pool (a
random half of its 71 models as history, as in ``bench_pulse.py``) with the same three
policies and budget rule. Each run also prints the correlation of the top two models' scores
over the items (shared-order pairs differ with variance ``1 - r`` times the independent one's).

Usage: ``PYTHONPATH=src python benchmarks/bench_demo_pools.py [--seeds 200]
[--runs demo,demo35,gap0.02,gap0.01,bfcl] [--mu-b 0.5] [--n-items 1000] [--history N]
[--board-seed 7]``
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from latentbench.io import ResponseMatrix
from latentbench.select import LowRankProxy, default_schedule, run_experiment, split_models
from latentbench.select._experiment import exact_gap_pool
from latentbench.synthetic import leaderboard_like

POLICIES = ["pulse", "ucbe", "ucbe:item_order=shared"]
COLUMNS = ["policy", "budget_post_init", "budget_post_init_sd", "saved_post_init_pct"]
RUNS = ["demo", "demo35", "gap0.02", "gap0.01", "bfcl"]
# the shared data beside the checkout; LATENTBENCH_DATA overrides it (e.g. from a git worktree)
_DATA = Path(
    os.environ.get("LATENTBENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)
BFCL = _DATA / "bfcl_v2.parquet"


def _split(scores: np.ndarray, history_size: int | None) -> tuple[np.ndarray, LowRankProxy, str]:
    history, candidates = split_models(scores.shape[0], how="random", random_state=0)
    if history_size is not None:
        history = history[:history_size]
    proxy = LowRankProxy(rank="auto", random_state=0).fit(scores[history])
    mean = float(scores.mean())
    return scores[candidates], proxy, f"{len(history)} history models, mean score {mean:.3f}"


def _board(
    n_models: int, n_items: int, mu_b: float, history_size: int | None, board_seed: int
) -> tuple[np.ndarray, LowRankProxy, str]:
    scores = leaderboard_like(n_models, n_items, mu_b=mu_b, random_state=board_seed)
    return _split(scores, history_size)


def _bfcl(path: Path, history_size: int | None) -> tuple[np.ndarray, LowRankProxy, str]:
    scores = ResponseMatrix.read(path).scores.astype(np.float32)
    return _split(scores[:, ~np.isnan(scores).any(axis=0)], history_size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--runs", default="demo,demo35,gap0.02,gap0.01", help=",".join(RUNS))
    parser.add_argument("--mu-b", type=float, default=0.5, help="generator's item intercept")
    parser.add_argument("--n-items", type=int, default=1000, help="generator's items")
    parser.add_argument("--board-seed", type=int, default=7, help="generator's seed")
    parser.add_argument("--history", type=int, default=None, help="history models (all)")
    parser.add_argument("--bfcl", type=Path, default=BFCL, help="BFCL v2 parquet")
    args = parser.parse_args()
    names = [r.strip() for r in args.runs.split(",") if r.strip()]
    unknown = sorted(set(names) - set(RUNS))
    if unknown:
        parser.error(f"--runs {args.runs!r}: unknown {unknown}; expected names among {RUNS}")
    boards: dict = {}

    def board(key: str) -> tuple[np.ndarray, LowRankProxy, str]:
        if key not in boards:
            if key == "bfcl":
                boards[key] = _bfcl(args.bfcl, args.history)
            else:
                n = 200 if key == "demo" else 400  # "gap0"
                boards[key] = _board(n, args.n_items, args.mu_b, args.history, args.board_seed)
        return boards[key]  # type: ignore[no-any-return]

    runs = []
    for key in names:
        Y, proxy, about = board("demo" if key.startswith("demo") else key[:4])
        means = Y.mean(axis=1)
        if key == "demo":
            name, pool = "demo (100 candidates)", np.arange(Y.shape[0])
        elif key == "demo35":
            name, pool = "demo's 35 best", exact_gap_pool(means, None, 35)
        elif key == "bfcl":
            pool = exact_gap_pool(means, 0.02, 1000)
            name = f"BFCL v2 gap 0.02 ({len(pool)} candidates)"
        else:
            gap = float(key[3:])
            name, pool = f"gap {gap} x 35 (400-model board)", exact_gap_pool(means, gap, 35)
        runs.append((f"{name}; {Y.shape[1]} items, {about}", pool, Y, proxy))
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
        r = np.corrcoef(Y[pool[0]], Y[pool[1]])[0, 1]
        print(
            f"{name}: top-two gap {gap:.3f}, their correlation {r:.2f}, B={batch}, "
            f"start {init}, {args.seeds} seeds, "
            f"{time.perf_counter() - start:.0f} s"
        )
        shown = frame[COLUMNS].copy()
        shown["saved_se"] = frame["saved_post_init_pct_se"]
        print(shown.to_string(index=False, float_format=lambda v: f"{v:,.1f}"), flush=True)


if __name__ == "__main__":
    main()
