"""The certificate's one-sided radii over the fixed-sample normal ones, by horizon settings.

One population of ``n`` Bernoulli(0.45) scores (MMLU-Pro's size and accuracy range by
default), revealed in ``--reps`` random orders, 16 plain cells per update, into arm 0 of a
:class:`~latentbench.select._betting.BettingConfSeq` for 15 arms (MMLU-Pro's candidates) at
``alpha = 0.05``. At each check the mean over orders of the upper radius (upper bound minus
the population mean) is divided by the normal ``z_{a_up} sd sqrt(1/t - 1/n)`` at the
certificate's upper level of the default split (``a_up = alpha / 2``), and the lower radius by
``z_{a_low}`` at ``a_low = alpha / 28``, so that the settings compare on one scale (a split
of 0.9 lowers the upper ratio through its level). Plain cells, no proxy.

    python benchmarks/diag_certificate_width.py --n 10326 --reps 12
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.stats import norm

from latentbench.select._betting import BettingConfSeq

SETTINGS = {
    "interval's weights, split 0.5 (before)": {},
    "uniform weights": {"certificate_weights": "uniform"},
    "weights 0.55/0.15/0.15/0.15": {"certificate_weights": (0.55, 0.15, 0.15, 0.15)},
    "split 0.9": {"certificate_split": 0.9},
    "split 0.9, weights 0.55/0.15/0.15/0.15 (now)": {
        "certificate_split": 0.9,
        "certificate_weights": (0.55, 0.15, 0.15, 0.15),
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10326)
    parser.add_argument("--reps", type=int, default=12)
    parser.add_argument("--checks", default="100,200,500,1000,2000,4000,6000")
    args = parser.parse_args()
    n, alpha, m = args.n, 0.05, 15
    checks = [int(c) for c in args.checks.split(",")]
    rng = np.random.default_rng(1)
    pop = (rng.random(n) < 0.45).astype(np.float64)
    mu = pop.mean()
    radii = {name: np.zeros((args.reps, len(checks), 2)) for name in SETTINGS}
    zero = np.zeros(16)
    for r in range(args.reps):
        y = pop[rng.permutation(n)]
        for name, options in SETTINGS.items():
            cs = BettingConfSeq(m, n, alpha, **options)
            done = 0
            for i, t in enumerate(checks):
                while done < t:
                    b = min(16, t - done)
                    cs.update(0, y[done : done + b], zero[:b], 0.0, 0.0, 0.0, 0.0)
                    done += b
                lo, hi = cs.certificate()
                radii[name][r, i] = (mu - lo[0], hi[0] - mu)
    fpc = pop.std() * np.sqrt(1 / np.array(checks) - 1 / n)
    z_up, z_low = norm.isf(alpha / 2), norm.isf(alpha / (2 * (m - 1)))
    print(f"n = {n}, {args.reps} orders; radius over the normal one at t = {checks}")
    print("| setting | upper radius / normal | lower radius / normal |")
    print("|---|---|---|")
    for name in SETTINGS:
        mean = radii[name].mean(axis=0)
        up = " / ".join(f"{v:.2f}" for v in mean[:, 1] / (z_up * fpc))
        low = " / ".join(f"{v:.2f}" for v in mean[:, 0] / (z_low * fpc))
        print(f"| {name} | {up} | {low} |")
    print(
        f"(Ville's floor for a bet tuned to t: sqrt(2 log(1 / a)) / z_a = "
        f"{math.sqrt(2 * math.log(2 / alpha)) / z_up:.2f} at a_up = alpha / 2)"
    )


if __name__ == "__main__":
    main()
