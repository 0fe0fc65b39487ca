"""Does the item bootstrap over-cover where the law-fixed intervals are right? (issue 28)

Coverage of the default fit's 95% ability intervals on simulated 2PL data (``simulate_2pl``,
seeds 0 to n-1, truth standardised over the models), with the item bootstrap (the library's
default at this shape) and without (``ITEM_BOOTSTRAP = 0``), on the same data sets; mean and
Monte Carlo se over the data sets, and the wall time of each pass.

Usage::

    python benchmarks/bench_item_bootstrap_sim.py --shape 30x500 --sets 16
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from latentbench.irt import TwoPL, _fitted
from latentbench.synthetic import simulate_2pl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="30x500")
    parser.add_argument("--sets", type=int, default=16)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    n_models, n_items = (int(v) for v in args.shape.split("x"))
    for replicates in (_fitted.ITEM_BOOTSTRAP, 0):
        _fitted.ITEM_BOOTSTRAP = replicates
        covered, start = [], time.perf_counter()
        for seed in range(args.sets):
            data = simulate_2pl(n_models, n_items, random_state=seed)
            theta = data.theta.ravel()
            truth = (theta - theta.mean()) / theta.std()
            ab = TwoPL().fit(data.matrix).standard_errors().abilities
            covered.append(np.mean((ab["lower"] <= truth) & (truth <= ab["upper"])))
        values = np.array(covered)
        print(
            f"simulated 2PL {args.shape}, {args.sets} sets, item bootstrap {replicates}: "
            f"coverage {values.mean():.3f} ± {values.std(ddof=1) / np.sqrt(values.size):.3f} "
            f"({time.perf_counter() - start:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
