"""Where the certified stop's cells go: PULSE variants on the same seeds, per-arm cells.

For one shared pool (``bench_pulse.halves``: a seeded half of the models as history, the
other half as candidates) and each ``|``-separated PULSE spec (the first is the reference of
the paired changes), the certified run at ``delta = 0.05`` with the default schedule
(``bonus="ci"``, as ``bench_pulse.py certify``) on seeds ``10000 k``: the cells used, whether
the true best was certified, and the cells of the true best, the runner-up, the third and
the others together. A spec may give ``certificate_weights`` as ``a/b/c/d`` (a tuple).
Prints one line per run, then per spec the mean ± SE of the cells over seeds and the paired
change against the first spec.

    python benchmarks/diag_certified_cells.py mmlu_pro 'pulse|pulse:certificate_split=0.9' \
        --seeds 10
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_pulse as bp

from latentbench.select import LowRankProxy
from latentbench.select._policies import make_policy
from latentbench.select._schedule import default_schedule


def _tuple_weights(spec: str, options: dict) -> tuple[str, dict]:
    """Take ``certificate_weights=a/b/c/d`` out of ``spec`` into ``options`` as a tuple."""
    name, _, rest = spec.partition(":")
    parts = []
    for part in filter(None, rest.replace(";", ",").split(",")):
        key, _, value = part.partition("=")
        if key.strip() == "certificate_weights" and "/" in value:
            options = {**options, "certificate_weights": tuple(map(float, value.split("/")))}
        else:
            parts.append(part)
    return (f"{name}:{';'.join(parts)}" if parts else name), options


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("pool")
    parser.add_argument("specs", help="'|'-separated PULSE specs; the first is the reference")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--delta", type=float, default=0.05)
    args = parser.parse_args()
    history, Y = bp.halves(args.pool)
    mu = Y.mean(axis=1, dtype=np.float64)
    best = int(np.argmax(mu))
    order = np.argsort(-mu)
    proxy = LowRankProxy(random_state=0).fit(history)
    batch, init = default_schedule(Y.shape[0], Y.shape[1], None)
    specs = [s for s in args.specs.split("|") if s]
    cells = np.zeros((len(specs), args.seeds))
    arms = np.zeros((len(specs), args.seeds, 4))
    for i, spec in enumerate(specs):
        for k in range(args.seeds):
            start = time.perf_counter()
            policy = make_policy(*_tuple_weights(spec, {"bonus": "ci", "delta": args.delta}))
            res = bp._certified_run(Y, policy, batch, init, proxy, 10000 * k)
            count = policy._cs.count
            ok = res.best == best and res.stopped == "confidence"
            cells[i, k] = res.evaluations_total
            arms[i, k] = [*count[order[:3]], count[order[3:]].sum()]
            print(
                f"{spec} seed {10000 * k} cells {res.evaluations_total} ok {ok} top3 "
                f"{count[order[:3]].tolist()} others {int(count[order[3:]].sum())} "
                f"{time.perf_counter() - start:.1f}s",
                flush=True,
            )
    print(f"\n{args.pool}, {args.seeds} seeds: cells (mean ± SE), change against the first spec")
    print("| spec | cells | change (paired) | best, runner-up, third, others |")
    print("|---|---|---|---|")
    root = math.sqrt(args.seeds)
    for i, spec in enumerate(specs):
        d = cells[i] - cells[0]
        se_d = d.std(ddof=1) / root if args.seeds > 1 else float("nan")
        top = ", ".join(f"{v:,.0f}" for v in arms[i].mean(axis=0))
        print(
            f"| {spec} | {cells[i].mean():,.0f} ± {cells[i].std(ddof=1) / root:,.0f} "
            f"| {d.mean():+,.0f} ± {se_d:,.0f} ({100 * d.mean() / cells[0].mean():+.1f} %) "
            f"| {top} |"
        )


if __name__ == "__main__":
    main()
