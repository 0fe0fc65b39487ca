"""Residual variance ratio of the estimate's predictions, leave-one-model-out.

For every ``--step``-th model of a shared matrix (the others calibrate, rank 1), reveal ``n``
uniformly random items (the same ones for each proxy) to
:class:`latentbench.select._estimate_design.SequentialEstimate` and report
``rho = E(y - f)^2 / Var(y)`` over the unrevealed items, averaged over the models, for the
``irt`` and the ``ridge`` proxies (``docs/estimate.md``, "Limits").

    python benchmarks/bench_estimate_rho.py bfcl_v2 --n 100 300 --step 3
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _estimate_common import held_out

from latentbench import ResponseMatrix
from latentbench.select._estimate_design import PROXIES, SequentialEstimate

DATA = Path("/work/shared/data")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("matrix")
    parser.add_argument("--n", type=int, nargs="+", default=[100])
    parser.add_argument("--step", type=int, default=3, help="every STEP-th model")
    args = parser.parse_args()
    M = ResponseMatrix.read(DATA / f"{args.matrix}.parquet")
    out: dict[tuple[int, str], list[float]] = {}
    for i, cal, pop, y in held_out(M, range(0, M.n_models, args.step)):
        if y.var() == 0:
            continue
        order = np.random.default_rng(i).permutation(pop.size)
        for proxy in PROXIES:
            seq = SequentialEstimate(cal, pop, delta=0.05, proposal="uniform", proxy=proxy)
            t = 0
            for n in sorted(args.n):
                while t < n:
                    seq.observe(int(order[t]), float(y[order[t]]), seq.probabilities())
                    t += 1
                left = seq.unrevealed
                rho = float(np.mean((y[left] - seq.f[left]) ** 2) / y.var())
                out.setdefault((n, proxy), []).append(rho)
    for (n, proxy), values in sorted(out.items()):
        print(f"{args.matrix} n={n} {proxy}: rho {np.mean(values):.3f} ({len(values)} models)")


if __name__ == "__main__":
    main()
