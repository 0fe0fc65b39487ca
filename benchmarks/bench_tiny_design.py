"""Leave-one-model-out benchmark of ``latentbench tiny``'s default design against a uniform one.

Each model of a shared matrix in turn is the new model. Its benchmark is the items it answered
(a fixed design needs an answer to every one of its items); the other models calibrate on
those items (a rank-1 fit, once per held-out model, shared by both designs). For each design
seed and each ``k``, two fixed designs are drawn with :func:`latentbench.select.tiny` on the
same seed: the default (``floor=0.5``: half uniform, half proportional to the calibration's
predicted residual standard deviation for a typical model) and the uniform design
(``floor=1.0``); each is scored with :func:`latentbench.estimate` ``items=`` (the public path
of ``latentbench estimate --items``).

Prints per matrix and ``k``: for both designs the MAE of the score, the mean half-width and
the coverage of the 95% intervals; the paired differences (default - uniform) with their
standard errors over models (each model's differences are first averaged over the seeds, so
the SE counts models, not runs); and the ratios default / uniform.

Run (about 5-15 minutes of CPU per matrix at 3 seeds)::

    nice -n 10 python benchmarks/bench_tiny_design.py --seeds 3
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

from latentbench import ResponseMatrix
from latentbench.select import estimate, tiny
from latentbench.select._estimate_calibration import from_matrix

MATRICES = ("alpacaeval1_gpt4", "alpacaeval2_weighted", "bfcl_v2")
DESIGNS = {"default": 0.5, "uniform": 1.0}


def run(
    path: str, ks: tuple[int, ...], seeds: int, max_models: int | None = None
) -> dict[int, dict[str, np.ndarray]]:
    """``k -> design -> array (models, seeds, 3)`` of |error|, half-width, covered."""
    M = ResponseMatrix.read(path)
    if max_models is not None:
        M = M.subset(models=list(M.model_ids)[:max_models])
    Y = np.asarray(M.scores, dtype=np.float64)
    out = {k: {d: np.full((M.n_models, seeds, 3), np.nan) for d in DESIGNS} for k in ks}
    for i in range(M.n_models):
        answered = np.flatnonzero(np.isfinite(Y[i]))
        items = [M.item_ids[j] for j in answered]
        others = [M.model_ids[m] for m in range(M.n_models) if m != i]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cal = from_matrix(M.subset(models=others, items=items), rank=1)
            answers = dict(zip(items, Y[i][answered], strict=True))
            truth = float(Y[i][answered].mean())
            for k in ks:
                for s in range(seeds):
                    for design, floor in DESIGNS.items():
                        r = estimate(cal, answers, items=tiny(cal, k, seed=s, floor=floor))
                        out[k][design][i, s] = (
                            abs(r.score - truth),
                            r.half_width,
                            float(r.lower <= truth <= r.upper),
                        )
    return out


def report(name: str, results: dict[int, dict[str, np.ndarray]]) -> None:
    for k, by_design in results.items():
        per_model = {d: np.nanmean(v, axis=1) for d, v in by_design.items()}  # (models, 3)
        n = per_model["default"].shape[0]
        runs = int(np.isfinite(by_design["default"][..., 0]).sum())
        print(f"{name}  k={k}  models={n}  runs per design={runs}")
        for c, label in enumerate(("MAE", "mean half-width", "coverage")):
            a, b = per_model["default"][:, c], per_model["uniform"][:, c]
            diff = a - b
            se = float(np.std(diff, ddof=1) / math.sqrt(n))
            ratio = float(np.mean(a) / np.mean(b)) if np.mean(b) > 0 else math.nan
            print(
                f"  {label:16s} default {np.mean(a):.4f}  uniform {np.mean(b):.4f}  "
                f"default-uniform {np.mean(diff):+.4f} +- {se:.4f} (paired SE)  "
                f"ratio {ratio:.3f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/work/shared/data")
    parser.add_argument("--matrices", nargs="+", default=list(MATRICES))
    parser.add_argument("--k", nargs="+", type=int, default=[30, 100])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--max-models", type=int, help="the first N models only (a quick check)")
    args = parser.parse_args()
    for name in args.matrices:
        start = time.perf_counter()
        results = run(f"{args.data}/{name}.parquet", tuple(args.k), args.seeds, args.max_models)
        report(name, results)
        print(f"  ({time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
