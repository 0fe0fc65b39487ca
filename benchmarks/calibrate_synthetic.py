"""Calibrate the demo's synthetic leaderboard (``latentbench.synthetic.leaderboard_like``) to
the structure of the shared real matrices; prints markdown tables.

Statistics of a matrix ``Y`` (models x items, complete items only):

* ``sd_model``: the SD of the models' mean scores (how spread out a leaderboard is);
* ``p_item`` / ``sd_item``: mean and SD of the items' mean scores (difficulty);
* ``top1`` / ``top2_5``: shares of the variance of the double-centred matrix (model and item
  means removed) in its first and in its 2nd-5th principal components: the low-rank
  structure beyond "good models are good, hard items are hard";
* ``resid``: the share of that variance outside the first 5 components (residual variance,
  mostly Bernoulli noise).

The generator is ``logit = b_j + u_i1 a_j + sum_{k=2..3} u_ik v_jk`` with ``u_i1 ~ N(0, s1^2)``,
``a_j ~ LogNormal(0, 0.3)``, ``u_ik, v_jk ~ N(0, s2)`` and ``b_j ~ N(mu_b, sb^2)``; a grid over
``(s1, s2, sb, mu_b)`` picks the values whose statistics are closest (sum of squared relative
errors) to the average of the binary matrices' (BFCL, MMLU-Pro), at 50 x 2,000.

Usage: ``PYTHONPATH=src python benchmarks/calibrate_synthetic.py``
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pulse import REAL, complete

from latentbench.synthetic import leaderboard_like

SHAPE = (50, 2000)
"""Models x items of the synthetic matrices compared (the eigenvalue shares depend on the
number of models; the real matrices have 29-71)."""
KEYS = ("sd_model", "p_item", "sd_item", "top1", "top2_5", "resid")


def stats(Y: np.ndarray) -> dict[str, float]:
    Y = np.asarray(Y, dtype=np.float64)
    Z = Y - Y.mean(axis=1, keepdims=True) - Y.mean(axis=0, keepdims=True) + Y.mean()
    ev = np.sort(np.linalg.eigvalsh(Z @ Z.T))[::-1]
    total = ev.sum()
    return {
        "sd_model": float(Y.mean(axis=1).std()),
        "p_item": float(Y.mean()),
        "sd_item": float(Y.mean(axis=0).std()),
        "top1": float(ev[0] / total),
        "top2_5": float(ev[1:5].sum() / total),
        "resid": float(ev[5:].sum() / total),
    }


def main() -> None:
    real = {name: stats(complete(name)) for name in REAL}
    print("| matrix | models x items | " + " | ".join(KEYS) + " |")
    print("|---|---|" + "---|" * len(KEYS))
    for name, st in real.items():
        shape = complete(name).shape
        print(
            f"| {name} | {shape[0]} x {shape[1]} | "
            + " | ".join(f"{st[k]:.3f}" for k in KEYS)
            + " |"
        )
    target = {k: float(np.mean([real[n][k] for n in ("bfcl", "mmlu_pro")])) for k in KEYS}
    best = None
    for s1, s2, sb, mu_b in itertools.product(
        (1.2, 1.6, 2.0, 2.5), (0.5, 0.8, 1.2, 1.6), (1.5, 2.0), (0.5,)
    ):
        Y = leaderboard_like(SHAPE[0], SHAPE[1], s1=s1, s2=s2, sb=sb, mu_b=mu_b, random_state=0)
        st = stats(Y)
        err = sum(((st[k] - target[k]) / max(target[k], 0.02)) ** 2 for k in KEYS)
        if best is None or err < best[0]:
            best = (err, (s1, s2, sb, mu_b), st)
    assert best is not None
    err, params, st = best
    print()
    print("target (mean of bfcl and mmlu_pro): " + ", ".join(f"{k} {target[k]:.3f}" for k in KEYS))
    print(f"best grid point s1, s2, sb, mu_b = {params} (squared relative error {err:.3f}):")
    print(", ".join(f"{k} {st[k]:.3f}" for k in KEYS))
    default = stats(leaderboard_like(SHAPE[0], SHAPE[1], random_state=0))
    print("leaderboard_like defaults: " + ", ".join(f"{k} {default[k]:.3f}" for k in KEYS))


if __name__ == "__main__":
    main()
