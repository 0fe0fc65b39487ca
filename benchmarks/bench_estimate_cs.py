"""Paired comparison of the estimate's confidence-sequence variants and floors.

Leave-one-model-out on a shared matrix (every ``--models A:B:S`` model; the others calibrate,
rank 1): the estimate's draws with one design (``--floors``) feed several
:class:`~latentbench.select._estimate_cs.WeightedBettingCS` variants with the same rounds, and
the items to a +-0.02 half-width are compared per (model, seed) with the first floor's
untargeted sequence (``cur``: the engine before the precision target). Uniform draws (the same
random order for every variant) are scored with the selection code's
:class:`~latentbench.select._betting.BettingConfSeq` (``uni-bcs``, checked after every item)
and with WeightedBettingCS on the rounds ``Z_t = (S_t + N_t y_t) / n`` (``uni-cur``,
``uni-t80ct97``).

Variants (``t``: targeted process for +-0.02 with weight 0.5 / 0.8; ``ct``: truncation of the
targeted process only; ``c``: truncation of every process):
``cur``, ``c90``, ``c97``, ``t50``, ``t80``, ``t50c97``, ``t50ct90``, ``t50ct97``, ``t80ct97``
(the default with a precision).

    python benchmarks/bench_estimate_cs.py alpacaeval2_weighted --models 0:58:3
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _estimate_common import held_out

from latentbench import ResponseMatrix
from latentbench.select._betting import BettingConfSeq
from latentbench.select._estimate_cs import WeightedBettingCS
from latentbench.select._estimate_design import SequentialEstimate

DATA = Path("/work/shared/data")
H = 0.02
BUDGETS = (30, 100, 300)


def variants() -> dict[str, WeightedBettingCS]:
    def cs(**kw: float) -> WeightedBettingCS:
        return WeightedBettingCS(0.05, **kw)  # type: ignore[arg-type]

    return {
        "cur": cs(),
        "c90": cs(c=0.9),
        "c97": cs(c=0.97),
        "t50": cs(target=H, target_weight=0.5, target_c=0.75),
        "t80": cs(target=H, target_weight=0.8, target_c=0.75),
        "t50c97": cs(target=H, target_weight=0.5, c=0.97, target_c=0.97),
        "t50ct90": cs(target=H, target_weight=0.5, target_c=0.9),
        "t50ct97": cs(target=H, target_weight=0.5, target_c=0.97),
        "t80ct97": cs(target=H, target_weight=0.8, target_c=0.97),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("matrix")
    parser.add_argument("--models", default="0:1000:1", help="A:B:S")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--cap", type=int, default=3000)
    parser.add_argument("--floors", default="0.5", help="comma-separated uniform floors")
    args = parser.parse_args()
    M = ResponseMatrix.read(DATA / f"{args.matrix}.parquet")
    a, b, s_ = (int(x) for x in args.models.split(":"))
    floors = [float(x) for x in args.floors.split(",")]
    rec: dict[str, list[float]] = {}

    def add(key: str, value: float) -> None:
        rec.setdefault(key, []).append(value)

    tic = time.time()
    for i, cal, pop, y in held_out(M, list(range(M.n_models))[a:b:s_]):
        n, truth = pop.size, float(y.mean())
        cap = min(args.cap, n)
        for seed in range(args.seeds):
            perm = np.random.default_rng([seed, i]).permutation(n)
            uni = {
                "cur": WeightedBettingCS(0.05),
                "t80ct97": WeightedBettingCS(0.05, target=H),
            }
            bcs = BettingConfSeq(1, n, alpha=0.05, union=False)
            reached: dict[str, int] = {}
            total, guess = 0.0, 0.5
            for t in range(1, cap + 1):
                yj, pool = float(y[perm[t - 1]]), n - t + 1
                z, center = (total + pool * yj) / n, (total + pool * guess) / n
                lo, hi = total / n, (total + pool) / n
                total += yj
                guess = (0.5 + total) / (t + 1)
                bounds = (total / n, (total + n - t) / n)
                bcs.update(0, y[perm[t - 1 : t]], np.zeros(1), 0.0, 0.0, 0.0, 0.0)
                lb, ub = bcs.interval()
                for cs in uni.values():
                    cs.update(z, lo, hi, (pool / n) ** 2 * 0.25, center, bounds)
                ends = {f"uni-{k}": (cs.lower, cs.upper) for k, cs in uni.items()}
                ends["uni-bcs"] = (float(lb[0]), float(ub[0]))
                for k, (low, up) in ends.items():
                    if k not in reached and (up - low) / 2 <= H:
                        reached[k] = t
                    if t in BUDGETS and t < n:
                        add(f"{k}-cov{t}", float(low <= truth <= up))
                if len(reached) == len(ends) and t >= max(BUDGETS):
                    break
            for k in ("uni-cur", "uni-t80ct97", "uni-bcs"):
                add(f"{k}-items", float(reached.get(k, cap)))
            for floor in floors:
                seq = SequentialEstimate(cal, pop, delta=0.05, floor=floor)
                css = variants()
                rng = np.random.default_rng([seed, i, 7])
                reached = {}
                for t in range(1, cap + 1):
                    j, pi = seq.choose(rng)
                    seq.observe(j, float(y[j]), pi)
                    assert seq.last_round is not None
                    for k, cs in css.items():
                        cs.update(*seq.last_round)
                        if k not in reached and (cs.upper - cs.lower) / 2 <= H:
                            reached[k] = t
                        if t in BUDGETS and t < n:
                            add(f"f{floor}-{k}-cov{t}", float(cs.lower <= truth <= cs.upper))
                    if t in BUDGETS and t < n:
                        add(f"f{floor}-mae{t}", abs(seq.point("dr") - truth))
                    if len(reached) == len(css) and t >= max(BUDGETS):
                        break
                for k in css:
                    add(f"f{floor}-{k}-items", float(reached.get(k, cap)))
        print(f"model {i} done ({time.time() - tic:.0f} s)", flush=True)
    base = np.asarray(rec[f"f{floors[0]}-cur-items"])
    print(f"\n{args.matrix}, models {args.models}, {args.seeds} seed(s), cap {args.cap}")
    print("items to +-0.02: median, mean; paired difference to the first floor's cur (± SE)")
    for k in sorted(rec):
        if not k.endswith("-items"):
            continue
        v = np.asarray(rec[k])
        line = f"  {k[:-6]:<16} median {np.median(v):7.0f}  mean {v.mean():8.1f}"
        if k.startswith("f"):
            d = v - base
            line += f"  diff {d.mean():+8.1f} ± {d.std(ddof=1) / np.sqrt(d.size):.1f}"
        print(line)
    print("coverage of the 95% interval at 30 / 100 / 300 items (runs)")
    for k in sorted({k.rsplit("-cov", 1)[0] for k in rec if "-cov" in k}):
        cells = [
            f"{np.mean(rec[f'{k}-cov{t}']):.3f} ({len(rec[f'{k}-cov{t}'])})"
            for t in BUDGETS
            if f"{k}-cov{t}" in rec
        ]
        print(f"  {k:<16} " + " / ".join(cells))
    if len(floors) > 1:
        b100 = np.asarray(rec[f"f{floors[0]}-mae100"])
        for floor in floors[1:]:
            d = np.asarray(rec[f"f{floor}-mae100"]) - b100
            print(
                f"MAE@100 floor {floor} - floor {floors[0]}: {d.mean():+.5f} ± "
                f"{d.std(ddof=1) / np.sqrt(d.size):.5f}"
            )


if __name__ == "__main__":
    main()
