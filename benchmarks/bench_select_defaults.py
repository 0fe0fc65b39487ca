"""What ``latentbench select replay FILE`` does with no option, on the shared matrices.

For each matrix and seed: a random half of the models is the history, the other half the
candidates (the command's default); PULSE runs with the default schedule and stops when the
best is certified at delta = 0.05. Prints, per matrix, the mean share of a full evaluation
used (with its SE over seeds and the largest), the fraction of seeds certified and the
fraction whose recommendation is the true best of the candidates.

    nice -n 10 python benchmarks/bench_select_defaults.py --seeds 10
    nice -n 10 python benchmarks/bench_select_defaults.py --seeds 10 --matrices mmlu_pro
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from latentbench.io import ResponseMatrix
from latentbench.select import replay

DATA = Path("/work/shared/data")
MATRICES = ("bfcl_v2", "alpacaeval2_weighted", "alpacaeval1_gpt4", "mmlu_pro")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--matrices",
        default=",".join(MATRICES),
        help="comma-separated matrix names (default: all four shared matrices)",
    )
    args = parser.parse_args()
    for name in args.matrices.split(","):
        matrix = ResponseMatrix.read(args.data / f"{name}.parquet")
        shares, certified, right = [], [], []
        for seed in range(args.seeds):
            run = replay(matrix, missing="drop-items", random_state=seed)
            cand = matrix.subset(models=run.model_ids).scores
            kept = ~np.isnan(cand).any(axis=0)  # --missing drop-items
            means = cand[:, kept].mean(axis=1)
            shares.append(run.evaluations_total / cand[:, kept].size)
            certified.append(bool(run.certified))
            right.append(bool(means[run.best] >= means.max() - 1e-12))  # ties: any tied best
        s = 100 * np.asarray(shares)
        print(
            f"{name}: {len(s)} seeds, cells used {s.mean():.1f}% +- "
            f"{s.std(ddof=1) / np.sqrt(len(s)):.1f} (max {s.max():.1f}%), certified "
            f"{np.mean(certified):.0%}, best right {np.mean(right):.0%}",
            flush=True,
        )


if __name__ == "__main__":
    main()
