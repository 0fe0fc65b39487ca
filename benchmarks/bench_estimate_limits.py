"""What bounds the estimate's gain over uniform sampling: predictions, allocation, floor.

For every ``--step``-th model of a shared matrix (the others calibrate, rank 1), reveal 100
uniformly random items to :class:`~latentbench.select._estimate_design.SequentialEstimate`
(``proxy="irt"``) and, over the unrevealed items ``U`` with the predictions ``f`` and the true
residuals ``e = y - f``, report (means over models):

* ``rho``: ``mean(e^2) / Var(y)``, the residual variance ratio;
* ``calibration``: ``mean(e^2) / mean(f (1 - f))``, whether the predicted variance that drives
  the allocation is right on average, and the correlation of ``sqrt(f (1 - f))`` with ``|e|``;
* ``design``: the variance of one round's inverse-probability term under the design with
  floor ``F`` (``sum_U e^2 / pi - (sum_U e)^2``) over that of the uniform design (floor 1),
  for floors 0.5 (the default), 0.3, 0.1, 0; ``overdispersed``: the same at floor 0.5 with
  ``q_j`` scaled by the item's residual over predicted variance among the calibration models;
  ``oracle Neyman``: with ``q_j = |e_j|`` (not available to a method: a bound);
* ``range / sd``: the range of one round's inverse-probability term under the floor-0.5 design
  (``max_U (1 - f) / pi + max_U f / pi``) over its true standard deviation: how far the bets'
  truncation (which must hold over the whole range) sits from the bets the variance alone
  would allow; ``uniform range / sd`` the same for uniform draws without predictions;
* ``oracle linear``: ``rho`` of a ridge regression (penalty 1) of ``y`` on the calibration
  models' answers fitted on **all** the model's items (in-sample: a bound no predictor from
  these calibration models can beat by much); ``best single model``: the closest calibration
  model's answers as the prediction.

    python benchmarks/bench_estimate_limits.py alpacaeval1_gpt4 --step 4
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
from _estimate_common import held_out

from latentbench import ResponseMatrix
from latentbench.select._estimate_calibration import _fitted
from latentbench.select._estimate_design import SequentialEstimate

DATA = Path("/work/shared/data")


def design(U: np.ndarray, q: np.ndarray, floor: float) -> np.ndarray:
    q = np.where(U, q, 0.0)
    return np.asarray((1 - floor) * q / q.sum() + floor * U / U.sum())


def design_variance(e: np.ndarray, U: np.ndarray, q: np.ndarray, floor: float) -> float:
    pi = design(U, q, floor)
    return float((e[U] ** 2 / pi[U]).sum() - e[U].sum() ** 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("matrix")
    parser.add_argument("--step", type=int, default=4, help="every STEP-th model")
    args = parser.parse_args()
    M = ResponseMatrix.read(DATA / f"{args.matrix}.parquet")
    Y = np.asarray(M.scores, dtype=np.float64)
    out: dict[str, list[float]] = {}

    def add(key: str, value: float) -> None:
        out.setdefault(key, []).append(value)

    for i, cal, pop, y in held_out(M, range(0, M.n_models, args.step)):
        n = pop.size
        if y.var() == 0:
            continue
        order = np.random.default_rng(i).permutation(n)
        seq = SequentialEstimate(cal, pop, delta=0.05, proposal="uniform")
        for t in range(100):
            seq.observe(int(order[t]), float(y[order[t]]), seq.probabilities())
        U, f = seq.unrevealed, seq.f
        e = y - f
        fv = f * (1 - f)
        add("rho", float((e[U] ** 2).mean() / y.var()))
        add("calibration mean(e^2)/mean(f(1-f))", float((e[U] ** 2).mean() / fv[U].mean()))
        add("corr(sqrt(f(1-f)), |e|)", float(np.corrcoef(np.sqrt(fv[U]), np.abs(e[U]))[0, 1]))
        uniform = design_variance(e, U, np.ones(n), 1.0)
        for floor in (0.5, 0.3, 0.1, 0.0):
            v = design_variance(e, U, np.sqrt(fv), max(floor, 1e-12))
            add(f"design floor {floor}", v / uniform)
        pi = design(U, np.sqrt(fv), 0.5)
        span = float(((1 - f[U]) / pi[U]).max() + (f[U] / pi[U]).max())
        add("range / sd, floor 0.5", span / math.sqrt(design_variance(e, U, np.sqrt(fv), 0.5)))
        add("uniform range / sd", 1.0 / float(y[U].std()))
        P = _fitted(cal.model_factors, cal.V, cal.b, cal.sigma)[:, pop]
        Yc = np.delete(Y, i, axis=0)[:, pop]
        ok = np.isfinite(Yc)
        r2 = np.where(ok, (np.nan_to_num(Yc) - P) ** 2, 0.0).sum(axis=0) + 0.25
        pv = np.where(ok, P * (1 - P), 0.0).sum(axis=0) + 0.25
        over = design_variance(e, U, np.sqrt(r2 / pv * fv), 0.5)
        add("design overdispersed, floor 0.5", over / uniform)
        add("design oracle Neyman, floor 0", design_variance(e, U, np.abs(e), 1e-12) / uniform)
        Xc = np.nan_to_num(Yc, nan=float(np.nanmean(Yc))).T
        X = np.column_stack([np.ones(n), Xc])
        w = np.linalg.solve(X.T @ X + np.eye(X.shape[1]), X.T @ y)
        add("rho oracle linear (in-sample)", float(((y - X @ w) ** 2).mean() / y.var()))
        best = min(float(((y - Xc[:, k]) ** 2).mean()) for k in range(Xc.shape[1]))
        add("rho best single calibration model", best / float(y.var()))
    models = len(out["rho"])
    print(f"{args.matrix}: every {args.step}th model ({models} models), after 100 uniform items")
    for key, values in out.items():
        print(f"  {key}: {np.mean(values):.3f} (sd {np.std(values):.3f})")


if __name__ == "__main__":
    main()
