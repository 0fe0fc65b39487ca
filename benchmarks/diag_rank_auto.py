"""``rank="auto"`` (``TwoPL.select_rank``) at users' shapes: held-out scores and rank recovery.

Two parts:

- ``heldout``: mean held-out log-likelihood per cell of every rank tried, for each prior
  option (the default ``"auto"``, ``None`` = joint ML with the ridge, fixed ``Prior(a_sd=)``),
  next to the additive model ``logit p = c_i + b_j`` on the same held-out cells (a constant
  0.5 scores ``log 0.5 = -0.693``): ``simulate_2pl`` at 30 x 60 and subsamples of the shared
  matrices (random models and items, seeded; optionally 20% of the cells hidden).
- ``recovery``: share of seeded simulations whose chosen rank is the true one, with its
  binomial Monte Carlo se: rank 1 from ``simulate_2pl``, ranks 2-3 from
  ``simulate_low_rank(sparsity=0.6)``; ``--sigma 0.5`` doubles the logits (a stronger signal).

Run:
``nice -n 5 python benchmarks/diag_rank_auto.py heldout --data ../shared/data``
``nice -n 5 python benchmarks/diag_rank_auto.py recovery --shapes 20x100 70x400 --seeds 40``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

from latentbench.io import ResponseMatrix
from latentbench.irt import Prior, TwoPL
from latentbench.synthetic import simulate_2pl, simulate_low_rank

PRIORS = {"auto": "auto", "None": None, "a_sd=0.5": Prior(a_sd=0.5), "a_sd=2": Prior(a_sd=2.0)}


def _line(label: str, matrix: ResponseMatrix) -> None:
    for name, prior in PRIORS.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sel = TwoPL(prior=prior).select_rank(matrix)
        said = any("worse than the additive model" in str(w.message) for w in caught)
        scores = " ".join(f"{x:.4f}" for x in sel.heldout_log_likelihood)
        print(
            f"{label:34s} {name:8s} | {scores} | additive {sel.additive_log_likelihood:.4f} "
            f"| chose {sel.chosen}{' (warned)' if said else ''}",
            flush=True,
        )


def heldout(data: Path) -> None:
    """The held-out table."""
    for missing in (0.0, 0.2):
        _line(
            f"simulate_2pl 30x60 miss={missing}",
            simulate_2pl(30, 60, missing=missing, random_state=0).matrix,
        )
    for bench in ("bfcl_v2", "mmlu_pro", "alpacaeval1_gpt4", "alpacaeval2_weighted"):
        full = ResponseMatrix.read(data / f"{bench}.parquet")
        for n, j in ((20, 60), (30, 60), (50, 200), (70, 400)):
            for missing in (0.0, 0.2):
                rng = np.random.default_rng(n * 1000 + j)
                rows = np.sort(rng.choice(full.n_models, min(n, full.n_models), replace=False))
                cols = np.sort(rng.choice(full.n_items, j, replace=False))
                scores = np.array(full.scores[np.ix_(rows, cols)], dtype=float)
                if missing:
                    scores[rng.random(scores.shape) < missing] = np.nan
                matrix = ResponseMatrix(
                    scores, [full.model_ids[i] for i in rows], [full.item_ids[k] for k in cols]
                )
                label = f"{bench} {rows.size}x{j} miss={np.isnan(scores).mean():.2f}"
                _line(label, matrix)


def recovery(shapes: list[str], seeds: int, sigma: float) -> None:
    """Recovery rates of the default's choice."""
    warnings.simplefilter("ignore")
    for shape in shapes:
        n, j = (int(x) for x in shape.split("x"))
        for true in (1, 2, 3):
            chosen = []
            for s in range(seeds):
                seed = 1000 * true + s
                data = (
                    simulate_2pl(n, j, sigma=sigma, random_state=seed)
                    if true == 1
                    else simulate_low_rank(n, j, true, sparsity=0.6, sigma=sigma, random_state=seed)
                )
                chosen.append(TwoPL().select_rank(data.matrix).chosen)
            got = np.asarray(chosen)
            p = float(np.mean(got == true))
            counts = {int(k): int((got == k).sum()) for k in np.unique(got)}
            print(
                f"{n}x{j} sigma {sigma} true rank {true}: recovered {p:.2f} +- "
                f"{np.sqrt(p * (1 - p) / seeds):.2f} (n={seeds}); chosen {counts}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["heldout", "recovery"])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--shapes", nargs="+", default=["20x100", "30x200", "50x300", "70x400"])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--sigma", type=float, default=1.0)
    args = parser.parse_args()
    if args.part == "heldout":
        heldout(args.data)
    else:
        recovery(args.shapes, args.seeds, args.sigma)


if __name__ == "__main__":
    main()
