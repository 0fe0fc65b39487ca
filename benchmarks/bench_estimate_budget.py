"""The estimate's interval sized for its budget, against the horizons' mixture alone.

Leave-one-model-out on a shared matrix (every ``--models A:B:S`` model; the others calibrate,
rank 1, ``proxy="irt"``, floor 0.5): for each budget B, one run of the estimate's engine draws
B items, and the same rounds feed

* ``sized`` (the default since 2026-12-06): the sequence with the targeted process sized for
  the half-width anticipated after B rounds (``SequentialEstimate.budget_target``, fixed before
  the first draw, exactly what ``estimate(..., budget=B)`` uses);
* ``unsized`` (the default before): the horizons' mixture alone;
* ``K=...`` (``--scales``): the targeted process at ``K sqrt(v_1 / B)`` instead, to show how
  the width depends on the anticipated half-width (the default's ``K`` is
  ``sqrt(2 log(2 / (delta w)))`` = 2.80 at delta 0.05, w 0.8; not chosen on these runs);
* ``shrink`` (``--shrink``, a variant, not the default): the target with the pool's shrinking,
  ``H_B sqrt(B / S_B)``, ``S_B = sum_t (n / (n - t + 1))^2`` (a round's predicted variance
  falls as the square of the unrevealed items under a design proportional to a fixed score).

``--items N`` runs on N items drawn at random (seed 123) from the matrix: a smaller benchmark,
where budgets are a larger share of the items.

Printed per budget: mean half-width at B, the paired ratio to ``unsized`` (mean ± SE over
runs), coverage at B and over the whole path up to B, and, for scale, the half-width of a
fixed-n normal interval for the mean of B uniformly random items (not anytime-valid, not a
method of the project).

    python benchmarks/bench_estimate_budget.py alpacaeval2_weighted --models 0:58:1 --seeds 2
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
from _estimate_common import held_out

from latentbench import ResponseMatrix
from latentbench.select._estimate_cs import WeightedBettingCS
from latentbench.select._estimate_design import SequentialEstimate

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DELTA = 0.05
K0 = math.sqrt(2 * math.log(2 / (DELTA * 0.8)))  # the default's K (the targeted weight 0.8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("matrix")
    parser.add_argument("--models", default="0:1000:1", help="A:B:S")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--budgets", default="30,100,300")
    parser.add_argument("--scales", default="", help="comma-separated K of extra variants")
    parser.add_argument("--shrink", action="store_true", help="add the 'shrink' variant")
    parser.add_argument("--items", type=int, default=0, help="N random items (0: all)")
    args = parser.parse_args()
    M = ResponseMatrix.read(DATA / f"{args.matrix}.parquet")
    if 0 < args.items < M.n_items:
        keep = np.random.default_rng(123).choice(M.n_items, args.items, replace=False)
        M = M.subset(items=[M.item_ids[j] for j in sorted(keep)])
    a, b, s_ = (int(x) for x in args.models.split(":"))
    budgets = tuple(int(x) for x in args.budgets.split(","))
    scales = [float(x) for x in args.scales.split(",") if x]
    names = ["sized", "unsized", *(f"K={k:g}" for k in scales), *(["shrink"] * args.shrink)]
    rec: dict[str, list[float]] = {}

    def add(key: str, value: float) -> None:
        rec.setdefault(key, []).append(value)

    tic = time.time()
    for i, cal, pop, y in held_out(M, list(range(M.n_models))[a:b:s_]):
        n, truth = pop.size, float(y.mean())
        for seed in range(args.seeds):
            for B in (B for B in budgets if B < n):
                seq = SequentialEstimate(cal, pop, delta=DELTA)
                target = seq.budget_target(B)
                seq.set_target(target)
                assert target is not None  # B < n
                css = {"sized": seq.cs, "unsized": WeightedBettingCS(DELTA)}
                for k in scales:  # K sqrt(v_1 / B) is the default's target times K / K_0
                    css[f"K={k:g}"] = WeightedBettingCS(DELTA, target=target * k / K0)
                if args.shrink:
                    s_b = float(np.sum((n / (n - np.arange(B))) ** 2))
                    css["shrink"] = WeightedBettingCS(DELTA, target=target * math.sqrt(B / s_b))
                path = dict.fromkeys(css, True)
                rng = np.random.default_rng([seed, i, 7])
                for _ in range(B):
                    j, pi = seq.choose(rng)
                    seq.observe(j, float(y[j]), pi)  # updates seq.cs ("sized")
                    for name, cs in css.items():
                        if name != "sized":
                            cs.update(*seq.last_round)  # type: ignore[misc]
                        path[name] &= cs.lower <= truth <= cs.upper
                for name, cs in css.items():
                    add(f"{B}-{name}-hw", (cs.upper - cs.lower) / 2)
                    add(f"{B}-{name}-cov", float(cs.lower <= truth <= cs.upper))
                    add(f"{B}-{name}-path", float(path[name]))
                sd = float(y.std())
                add(f"{B}-normal", 1.96 * sd * math.sqrt((n - B) / (B * (n - 1))))
        print(f"model {i} done ({time.time() - tic:.0f} s)", flush=True)
    print(f"\n{args.matrix} ({M.n_items} items), models {args.models}, {args.seeds} seed(s)")
    for B in budgets:
        if f"{B}-unsized-hw" not in rec:
            continue
        base = np.asarray(rec[f"{B}-unsized-hw"])
        print(f"B = {B}: {base.size} runs; fixed-n normal, uniform items: half-width "
              f"{np.mean(rec[f'{B}-normal']):.4f}")  # fmt: skip
        for name in names:
            hw = np.asarray(rec[f"{B}-{name}-hw"])
            r = hw / base
            print(
                f"  {name:<8} half-width {hw.mean():.4f}  / unsized {r.mean():.3f} ± "
                f"{r.std(ddof=1) / math.sqrt(r.size):.3f}  coverage at B "
                f"{np.mean(rec[f'{B}-{name}-cov']):.3f}, on the path "
                f"{np.mean(rec[f'{B}-{name}-path']):.3f}"
            )


if __name__ == "__main__":
    main()
