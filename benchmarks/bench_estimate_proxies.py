"""Screen of proxies for the new model's unseen cells (issue 27): residual variance ratio.

For every ``--step``-th model of a shared matrix (the others calibrate, rank 1), reveal ``n``
uniformly random items to :class:`latentbench.select._estimate_design.SequentialEstimate`
(``proxy="irt"``) and report ``rho = E(y - f)^2 / Var(y)`` over the unrevealed items, averaged
over the models, for the IRT predictions ``g`` and for corrections of them fitted on the
revealed answers only (so they could serve as a predictable proxy):

* ``raw16``: the ``ridge`` proxy's features (``Calibration.item_features``: the top 16
  principal directions of the calibration models' standardized answer columns);
* ``rawall``: all principal directions of those columns (a ridge on every calibration
  model's answers, i.e. the new model's row regressed on the calibration rows);
* ``resK`` / ``resall``: the top K (all) principal directions of the calibration models'
  residuals ``Y - fitted`` under the IRT fit (:func:`_estimate_common.residual_features`);
  ``res16s``: the same with each model's residual column standardized first;
* ``L<features>``: a logistic ridge with offset ``logit(g)`` instead of an additive one
  (penalty by approximate leave-one-out).

Additive corrections: ``w = argmin |y - g - X w|^2 + lam |w|^2`` with ``lam`` by exact
leave-one-out over ``--lambdas`` (a grid wider than the proxy's), used only when it beats ``g``
by one paired standard error of the leave-one-out errors (as the ``ridge`` proxy);
``-ng``: without that guard.

    python benchmarks/bench_estimate_proxies.py alpacaeval1_gpt4 --step 4
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
from _estimate_common import held_out, residual_features

from latentbench import ResponseMatrix
from latentbench.irt._objective import sigmoid
from latentbench.select._estimate_calibration import response_features
from latentbench.select._estimate_design import SequentialEstimate

DATA = Path("/work/shared/data")
LAMS = np.logspace(-2.0, 5.0, 15)
LOGIT_LAMS = np.logspace(-1.0, 4.0, 8)[::-1]


def ridge(X: np.ndarray, r: np.ndarray, guard: bool) -> np.ndarray | None:
    """Ridge of ``r`` on ``X``, penalty by exact leave-one-out; None: keep the IRT prediction."""
    d, Q = np.linalg.eigh(X.T @ X)
    XQ = X @ Q
    proj = XQ.T @ r
    inv = 1.0 / (np.maximum(d, 0.0)[:, None] + LAMS[None, :])
    fit = XQ @ (proj[:, None] * inv)
    lev = np.minimum((XQ * XQ) @ inv, 1 - 1e-9)
    err = ((r[:, None] - fit) / (1 - lev)) ** 2
    best = int(np.argmin(err.mean(0)))
    gain = err[:, best] - r * r
    if guard and not gain.mean() + gain.std(ddof=1) / math.sqrt(r.size) < 0:
        return None
    return np.asarray(Q @ (proj * inv[:, best]))


def logit_ridge(X: np.ndarray, y: np.ndarray, eta0: np.ndarray, guard: bool) -> np.ndarray | None:
    """Logistic ridge with offset ``eta0``; penalty by approximate leave-one-out (ALO)."""
    p = X.shape[1]
    w = np.zeros(p)
    best: tuple[np.ndarray, np.ndarray] | None = None
    for lam in LOGIT_LAMS:  # warm-started path from the largest penalty
        for _ in range(4):
            pr = sigmoid(eta0 + X @ w)
            W = np.maximum(pr * (1 - pr), 1e-6)
            H = (X.T * W) @ X + lam * np.eye(p)
            w = w - np.linalg.solve(H, X.T @ (pr - y) + lam * w)
        pr = sigmoid(eta0 + X @ w)
        W = np.maximum(pr * (1 - pr), 1e-6)
        Hi = np.linalg.inv((X.T * W) @ X + lam * np.eye(p))
        lev = np.minimum(((X @ Hi) * X).sum(1) * W, 1 - 1e-9)
        err = (y - sigmoid(eta0 + X @ w + lev / (1 - lev) * (pr - y) / W)) ** 2
        if best is None or err.mean() < best[0].mean():
            best = (err, w.copy())
    assert best is not None
    gain = best[0] - (y - sigmoid(eta0)) ** 2
    if guard and not gain.mean() + gain.std(ddof=1) / math.sqrt(y.size) < 0:
        return None
    return best[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("matrix")
    parser.add_argument("--n", type=int, nargs="+", default=[30, 50, 100, 300])
    parser.add_argument("--step", type=int, default=4, help="every STEP-th model")
    args = parser.parse_args()
    M = ResponseMatrix.read(DATA / f"{args.matrix}.parquet")
    Y = np.asarray(M.scores, dtype=np.float64)
    out: dict[tuple[int, str], list[float]] = {}
    for i, cal, pop, y in held_out(M, range(0, M.n_models, args.step)):
        if y.var() == 0:
            continue
        Yc = np.delete(Y, i, axis=0)
        fit = np.asarray(sigmoid((cal.model_factors @ cal.V.T + cal.b) / cal.sigma))
        assert cal.item_features is not None
        feats = {
            "raw16": cal.item_features,
            "rawall": response_features(Yc, fit, max_features=10_000),
            **{f"res{k}": residual_features(Yc, fit, k) for k in (8, 16, 32)},
            "resall": residual_features(Yc, fit, 10_000),
            "res16s": response_features(Yc - fit, np.zeros_like(fit)),
        }
        X = {k: np.column_stack([np.ones(pop.size), v[pop]]) for k, v in feats.items()}
        order = np.random.default_rng(i).permutation(pop.size)
        seq = SequentialEstimate(cal, pop, delta=0.05, proposal="uniform", proxy="irt")
        t = 0
        for n in sorted(args.n):
            while t < n:
                seq.observe(int(order[t]), float(y[order[t]]), seq.probabilities())
                t += 1
            left, idx, g = seq.unrevealed, order[:n], seq.f_irt
            preds = {"irt": g}
            eta = np.log(np.clip(g, 1e-4, 1 - 1e-4) / np.clip(1 - g, 1e-4, 1))
            for name, Xf in X.items():
                for guard in (True, False):
                    tag = name + ("" if guard else "-ng")
                    w = ridge(Xf[idx], y[idx] - g[idx], guard)
                    preds[tag] = g if w is None else np.clip(g + Xf @ w, 0, 1)
                    if name in ("raw16", "res16"):
                        w = logit_ridge(Xf[idx], y[idx], eta[idx], guard)
                        preds["L" + tag] = g if w is None else sigmoid(eta + Xf @ w)
            for name, f in preds.items():
                rho = float(np.mean((y[left] - f[left]) ** 2) / y.var())
                out.setdefault((n, name), []).append(rho)
    ns = sorted({k[0] for k in out})
    names = sorted({k[1] for k in out}, key=lambda s: (s != "irt", s))
    print(f"{args.matrix}: rho after n uniform items, {len(out[(ns[0], 'irt')])} models")
    print("variant".ljust(12) + "".join(f"n={n}".rjust(9) for n in ns))
    for name in names:
        print(name.ljust(12) + "".join(f"{np.mean(out[(n, name)]):9.3f}" for n in ns))


if __name__ == "__main__":
    main()
