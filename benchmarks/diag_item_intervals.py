"""Diagnosis of the discrimination intervals' shortfall: candidate intervals side by side.

Splits the old intervals' under-coverage (the MAP fit's Laplace posterior around its
prior-shrunk estimate) into (a) the prior's shrinkage, (b) the abilities' own error and (c) the
rest, and measures the alternatives that were tried (docs/model.md, "Item intervals"). The
data are ``bench_item_coverage.py``'s (same kinds and seeds). Rows, all 95%, lower end clipped
at 0, coverage of the true a on the reporting scale, overall and by fifth of the true a:

- ``A posterior, fitted abilities``: the old intervals;
- ``B posterior, true abilities``: the same prior and Laplace interval, each item refitted with
  the true (standardised) abilities in place of the fitted ones: (b) removed;
- ``C posterior + abilities' error``: A's variance plus ``G_j Cov(theta) G_j^T``, ``G_j = H_j^-1
  C_j^T`` with the joint Laplace cross-derivatives ``C_j`` and standardised ``Cov(theta)``;
- ``D likelihood, fitted abilities``: what ``standard_errors`` now gives: (a) removed;
- ``E likelihood, true abilities``: (a) and (b) removed: what is left is (c);
- ``F one Newton step``: from the MAP on the likelihood, its information at the MAP;
- ``G empirical-Bayes normal prior``: a bivariate normal law of ``(a_j, b_j)`` fitted by EM to
  the one-step likelihood estimates and their information, the posterior under it;
- ``H random-item law posterior``: ``RandomItemsFit.item_mean -/+ z item_sd``;
- ``I Firth``: the bias-reduced (Jeffreys-penalised) likelihood's Wald interval, fitted abilities;
- ``J profile likelihood``: the likelihood-ratio interval of a, fitted abilities.

Usage::

    python benchmarks/diag_item_intervals.py --shapes 30x300 --seeds 8
"""

from __future__ import annotations

import argparse
import os
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from bench_item_coverage import KINDS, simulate  # noqa: E402
from scipy.stats import chi2  # noqa: E402

from latentbench import ResponseMatrix  # noqa: E402
from latentbench.irt import TwoPL  # noqa: E402
from latentbench.irt._fitted import (  # noqa: E402
    _normalisation,
    laplace_of,
    per_trial_penalty,
    random_items_fit,
)
from latentbench.irt._information import information_blocks  # noqa: E402
from latentbench.irt._item_intervals import posterior_item_covariance  # noqa: E402

Z = 1.959963984540054


def blocks(y: np.ndarray, theta: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, ...]:
    """p (N, J), w, and the items' likelihood information (J, 2, 2) at ``x = (a, b)``."""
    p = 1.0 / (1.0 + np.exp(-(np.outer(theta, x[:, 0]) + x[:, 1])))
    w = p * (1.0 - p)
    info = np.empty((x.shape[0], 2, 2))
    info[:, 0, 0] = w.T @ theta**2
    info[:, 0, 1] = info[:, 1, 0] = w.T @ theta
    info[:, 1, 1] = w.sum(axis=0)
    return p, w, info


def newton(
    y: np.ndarray,
    theta: np.ndarray,
    prec: np.ndarray,
    target: np.ndarray,
    start: np.ndarray,
    firth: bool = False,
    steps: int = 40,
) -> tuple[np.ndarray, np.ndarray]:
    """Every item's mode of ``loglik - x' prec x / 2 + target' x`` (Firth: plus half the
    log-determinant of the information), abilities fixed; steps capped at 1 in a.
    Returns the mode and the inverse of the (penalised) information there."""
    x = start.copy()
    for _ in range(steps):
        p, w, info = blocks(y, theta, x)
        h = info + prec
        resid = y - p
        if firth:
            k = np.linalg.inv(info)
            lev = w * (
                k[:, 0, 0] * theta[:, None] ** 2 + 2 * k[:, 0, 1] * theta[:, None] + k[:, 1, 1]
            )
            resid = resid + lev * (0.5 - p)
        g = np.stack([resid.T @ theta, resid.sum(axis=0)], axis=1) - x @ prec + target
        delta = np.linalg.solve(h + 1e-12 * np.eye(2), g[..., None])[..., 0]
        x = x + delta / np.maximum(np.abs(delta[:, 0]), 1.0)[:, None]
    return x, np.linalg.inv(blocks(y, theta, x)[2] + prec + 1e-12 * np.eye(2))


def empirical_bayes(x: np.ndarray, info: np.ndarray, iters: int = 200) -> tuple[np.ndarray, ...]:
    """EM for x_j ~ N(m, S) observed with information ``info``: the posterior means and
    covariances under the fitted law."""
    h = np.einsum("jkl,jl->jk", info, x)
    m, S = np.median(x, axis=0), np.cov(x.T)
    for _ in range(iters):
        s_inv = np.linalg.inv(S)
        C = np.linalg.inv(info + s_inv)
        mu = np.einsum("jkl,jl->jk", C, h + s_inv @ m)
        m = mu.mean(axis=0)
        d = mu - m
        S = d.T @ d / len(x) + C.mean(axis=0)
    s_inv = np.linalg.inv(S)
    C = np.linalg.inv(info + s_inv)
    return np.einsum("jkl,jl->jk", C, h + s_inv @ m), C


def profile_intervals(
    y: np.ndarray, theta: np.ndarray, a0: np.ndarray, b0: np.ndarray, se: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Likelihood-ratio 95% interval of each a (b profiled out), by bisection; a >= 0."""
    q = chi2.ppf(0.95, 1)

    def profile(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        for _ in range(8):
            p = 1.0 / (1.0 + np.exp(-(np.outer(theta, a) + b)))
            step = (y - p).sum(axis=0) / np.maximum((p * (1 - p)).sum(axis=0), 1e-12)
            b = b + np.clip(step, -1.0, 1.0)
        p = np.clip(1.0 / (1.0 + np.exp(-(np.outer(theta, a) + b))), 1e-300, 1 - 1e-16)
        return (y * np.log(p) + (1 - y) * np.log1p(-p)).sum(axis=0), b

    top, b_top = profile(a0, b0)
    excess = lambda a: 2 * (top - profile(a, b_top)[0]) - q  # noqa: E731
    lo, hi = np.zeros_like(a0), a0.copy()
    below = excess(lo) > 0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        out = excess(mid) > 0
        lo, hi = np.where(out, mid, lo), np.where(out, hi, mid)
    lower = np.where(below, 0.5 * (lo + hi), 0.0)
    step = np.where(np.isfinite(se) & (se > 0), 2 * se, 1.0)
    lo, hi, found = a0.copy(), a0 + step, np.zeros(a0.size, bool)
    for _ in range(12):
        found |= excess(hi) > 0
        lo, hi = np.where(found, lo, hi), np.where(found, hi, a0 + 2 * (hi - a0))
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        out = excess(mid) > 0
        hi, lo = np.where(out, mid, hi), np.where(out, lo, mid)
    return lower, np.where(found, 0.5 * (lo + hi), np.inf)


def one(kind: str, n: int, m: int, seed: int) -> list[dict[str, object]]:
    y, theta_true, a, _ = simulate(kind, n, m, seed)
    ids = [f"m{i:03d}" for i in range(n)], [f"i{j:05d}" for j in range(m)]
    matrix = ResponseMatrix.from_wide(pd.DataFrame(y, index=ids[0], columns=ids[1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(matrix)
        items = result.standard_errors().items
        law = random_items_fit(result, matrix)
    truth = a * theta_true.std()
    theta_std = (theta_true - theta_true.mean()) / theta_true.std()
    theta = result.U[:, 0]
    x = np.column_stack([result.V[:, 0], result.b])
    mu, s = _normalisation(result)
    A = np.array([[1 / s, 0.0], [-float(mu[0]) / s, 1.0]])
    penalty = per_trial_penalty(result)
    prec, target = A.T @ penalty.item_curvature(1) @ A, A.T @ penalty.item_target(1)
    info = information_blocks(result, matrix)[1]
    post = posterior_item_covariance(result, matrix, info)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def wald(name: str, centre: np.ndarray, var: np.ndarray) -> None:
        se = np.sqrt(np.maximum(var, 0.0))
        out[name] = (centre - Z * se, centre + Z * se)

    wald("A posterior, fitted abilities (old)", x[:, 0], post[:, 0, 0])
    xb, cb = newton(y, theta_std, prec, target, x)
    wald("B posterior, true abilities", xb[:, 0], cb[:, 0, 0])
    lap = laplace_of(result, y)
    G = np.einsum("jkl,jln->jkn", post, np.stack([lap.cross_a.T, lap.cross_b.T], axis=1))
    extra = np.einsum("jn,nm,jm->j", G[:, 0], lap.covariance(), G[:, 0])
    wald("C posterior + abilities' error", x[:, 0], post[:, 0, 0] + extra)
    out["D likelihood, fitted abilities (new)"] = (
        items["discrimination_lower"].to_numpy(),
        items["discrimination_upper"].to_numpy(),
    )
    zero = np.zeros((2, 2))
    xe, ce = newton(y, theta_std, zero, np.zeros(2), x)
    wald("E likelihood, true abilities", xe[:, 0], ce[:, 0, 0])
    info_inv = np.linalg.inv(info + 1e-12 * np.eye(2))
    one_step = x + np.einsum("jkl,jl->jk", info_inv, x @ prec - target)
    wald("F one Newton step", one_step[:, 0], info_inv[:, 0, 0])
    xg, cg = empirical_bayes(one_step, info)
    wald("G empirical-Bayes normal prior", xg[:, 0], cg[:, 0, 0])
    wald("H random-item law posterior", law.item_mean[:, 0], law.item_sd[:, 0] ** 2)
    xf, cf = newton(y, theta, zero, np.zeros(2), x, firth=True)
    wald("I Firth, fitted abilities", xf[:, 0], cf[:, 0, 0])
    bounded = items["discrimination_bounded"].to_numpy(bool)
    centre = np.where(bounded, np.maximum(items["discrimination_centre"].to_numpy(), 0.0), 0.0)
    out["J profile likelihood, fitted abilities"] = profile_intervals(
        y, theta, centre, result.b.copy(), items["discrimination_se"].to_numpy()
    )
    fifth = np.searchsorted(np.quantile(truth, [0.2, 0.4, 0.6, 0.8]), truth)
    rows = []
    for name, (lo, hi) in out.items():
        covered = (np.maximum(lo, 0.0) <= truth) & (truth <= hi)
        row: dict[str, object] = {"kind": kind, "shape": f"{n}x{m}", "interval": name}
        row["all"] = covered.mean()
        row.update({f"q{q + 1}": covered[fifth == q].mean() for q in range(5)})
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--shapes", default="30x300")
    parser.add_argument("--seeds", type=int, default=8)
    args = parser.parse_args()
    rows = []
    for kind in args.kinds.split(","):
        for shape in args.shapes.split(","):
            n, m = (int(v) for v in shape.split("x"))
            for seed in range(args.seeds):
                with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                    rows.extend(one(kind, n, m, seed))
    table = pd.DataFrame(rows).groupby(["kind", "shape", "interval"]).mean().round(3)
    pd.set_option("display.width", 200)
    print(table.to_string())


if __name__ == "__main__":
    main()
