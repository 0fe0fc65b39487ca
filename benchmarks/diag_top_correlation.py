"""How much more the top models agree item by item than other pairs do: real matrices
against the demo's generator (a diagnosis for RESULTS_select.md §7; no product output).

With one item order shared by every candidate, two estimates' errors share the part of
their scores that the models have in common, so the shared order is worth more the more
the best models agree item by item (a difference of two models on shared items has
variance ``1 - r`` times the independent one's). For each shared matrix and for boards of
``synthetic.leaderboard_like`` at the demo's shape (200 x 1,000, several seeds) this prints
the top-two gap, the correlation over the items of the two best models' scores (``r12``),
the mean correlation over the pairs among the ten best (``top10``), over all pairs
(``all``), and their difference (``excess``: how much more the leaders agree than a
typical pair). Correlations use the items both models answered (pandas' pairwise rule);
models with constant scores have none and are left out of the means.

Run: ``python benchmarks/diag_top_correlation.py [--seeds 20]`` (a few seconds).
"""

from __future__ import annotations

import argparse
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from latentbench import synthetic

DATA = Path(
    os.environ.get("LATENTBENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)
MATRICES = ["bfcl_v2", "mmlu_pro", "alpacaeval1_gpt4", "alpacaeval2_weighted"]


def agreement(Y: np.ndarray) -> dict[str, float]:
    """Top-two gap and the correlations above for a (models, items) matrix (NaN missing)."""
    means = np.nanmean(Y, axis=1)
    order = np.argsort(-means, kind="stable")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant models: NaN, left out
        corr = pd.DataFrame(Y.T).corr().to_numpy()
    upper = np.triu_indices(len(means), k=1)
    top = order[:10]
    sub = corr[np.ix_(top, top)][np.triu_indices(len(top), k=1)]
    return {
        "gap": float(means[order[0]] - means[order[1]]),
        "r12": float(corr[order[0], order[1]]),
        "top10": float(np.nanmean(sub)),
        "all": float(np.nanmean(corr[upper])),
        "mean": float(np.nanmean(Y)),
    }


def _line(name: str, a: dict[str, float]) -> str:
    return (
        f"| {name} | {a['mean']:.3f} | {a['gap']:.3f} | {a['r12']:.2f} | {a['top10']:.2f} | "
        f"{a['all']:.2f} | {a['top10'] - a['all']:+.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20, help="generator boards (seeds 0..N-1)")
    args = parser.parse_args()
    print("| matrix | mean score | top-two gap | r12 | top10 | all | excess |")
    print("|---|---|---|---|---|---|---|")
    for name in MATRICES:
        long = pd.read_parquet(DATA / f"{name}.parquet")
        Y = long.pivot(index="model", columns="item", values="score").to_numpy(float)
        print(_line(name, agreement(Y)))
    rows = [
        agreement(np.asarray(synthetic.leaderboard_like(200, 1000, random_state=s), float))
        for s in range(args.seeds)
    ]
    for s in (7,):  # the demo's board
        print(_line(f"generator, seed {s} (the demo's)", rows[s]))
    keys = ("mean", "gap", "r12", "top10", "all")
    mean = {k: float(np.mean([r[k] for r in rows])) for k in keys}
    sd = {k: float(np.std([r[k] for r in rows], ddof=1)) for k in keys}
    excess = np.array([r["top10"] - r["all"] for r in rows])
    print(
        f"| generator, {args.seeds} seeds: mean (SD) | {mean['mean']:.3f} | "
        f"{mean['gap']:.3f} ({sd['gap']:.3f}) | {mean['r12']:.2f} ({sd['r12']:.2f}) | "
        f"{mean['top10']:.2f} ({sd['top10']:.2f}) | {mean['all']:.2f} ({sd['all']:.2f}) | "
        f"{excess.mean():+.2f} ({excess.std(ddof=1):.2f}); largest {excess.max():+.2f} |"
    )


if __name__ == "__main__":
    main()
