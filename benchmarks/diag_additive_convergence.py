"""The additive comparator's held-out log-loss before and after fit_additive converged.

Until 2026-12-03 ``fit_additive`` alternated damped Newton blocks without the ridge's exact
shift between ``c`` and ``b`` and stopped at its 200 iterations up to 0.004-0.02 logits from
its optimum (silently). ``old_additive`` below is that iteration, kept only for this
comparison; the masks are those of ``bench_heldout.py`` (10% of cells, seeds 0-2).

    python benchmarks/diag_additive_convergence.py
"""

from __future__ import annotations

import warnings

import numpy as np

from latentbench import ResponseMatrix
from latentbench.irt import fit_additive, predictive_scores
from latentbench.irt._heldout import heldout_mask
from latentbench.irt._objective import sigmoid

warnings.simplefilter("ignore")


def old_additive(scores, l2=1e-2, max_iter=200, tol=1e-9):
    Y = np.asarray(scores, dtype=np.float64)
    observed = ~np.isnan(Y)
    y = np.where(observed, Y, 0.0)
    w = observed.astype(float)
    c = np.zeros(Y.shape[0])
    b = np.zeros(Y.shape[1])

    def step(x, other, axis, fn):
        p = sigmoid(fn(x, other))
        grad = ((p - y) * w).sum(axis=axis) + l2 * x
        hess = (p * (1 - p) * w).sum(axis=axis) + l2
        return np.asarray(x - np.clip(grad / hess, -2.0, 2.0))

    for _ in range(max_iter):
        c_new = step(c, b, 1, lambda c_, b_: c_[:, None] + b_[None, :])
        b_new = step(b, c_new, 0, lambda b_, c_: c_[:, None] + b_[None, :])
        change = max(float(np.abs(c_new - c).max()), float(np.abs(b_new - b).max()))
        c, b = c_new, b_new
        if change < tol:
            break
    return c, b


for name in ("mmlu_pro", "bfcl_v2", "alpacaeval1_gpt4", "alpacaeval2_weighted"):
    m = ResponseMatrix.read(f"/work/shared/data/{name}.parquet")
    o, n = [], []
    for seed in range(3):
        train, rows, cols = heldout_mask(m.scores, 0.1, seed)
        truth = m.scores[rows, cols].astype(float)
        for fn, acc in ((old_additive, o), (fit_additive, n)):
            c, b = fn(train)
            acc.append(predictive_scores(sigmoid(c[rows] + b[cols]), truth).log_loss)
    print(
        f"{name}: additive held-out log-loss, 3 masks: "
        f"before {np.mean(o):.5f}, converged {np.mean(n):.5f}"
    )
