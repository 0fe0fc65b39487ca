"""A lower bound for design-based estimators of a new model's full-benchmark score (issue 27).

Question: can **any** estimator whose interval is valid whatever the IRT model is reach the
issue's targets, (a) MAE at 100 items <= 0.6x that of uniform random items with the sample
mean and (b) items to a +-0.02 half-width at 95% <= 0.5x uniform sampling with a valid
without-replacement interval? Leave-one-model-out on a shared matrix (each model in turn is the
new one, the others calibrate; rank-1 fit as in the other ``bench_estimate*`` scripts), this
script computes a lower bound on the mean squared error of a class of such estimators, made as
generous to the class as we could, and compares it with uniform sampling.

The class
---------
Sequential design-based difference (doubly robust) estimators: round ``t = 1..n`` draws one
item ``J_t`` from the items not yet revealed ``U_t`` (or from all items: with replacement)
with probabilities ``p_t`` chosen **adaptively**, by any rule, and forms

    Z_t = (1/N) [ sum_{R_t} y + sum_{U_t} f_t + (y_J - f_{t,J}) / p_{t,J} ]

with any proxy ``f_t``; ``p_t`` and ``f_t`` are functions of the information ``I`` (below) and
of the answers revealed before round ``t``. The estimate is ``sum_t w_t Z_t`` with predictable
weights summing to 1. ``E[Z_t | past] = mu`` for every population ``y``, which is what makes an
interval valid whatever the IRT model: ``latentbench.estimate`` (``point="dr"``, up to its
normalisation of the precision weights and the clipping into the interval), active statistical
inference (Zrnic & Candes 2024), Hansen-Hurwitz and Des Raj estimators with a proxy.

The information (generous)
--------------------------
An **oracle predictor** ``m = f*`` of the held-out model's answers, fitted on its own answers to
about 90% of its items (10-fold cross-fitting over items: the prediction for an item never
uses that item's answer, but uses ~0.9 N answers where a method with 100 items has 100). Its
inputs: the calibration models' answers on the item (missing cells filled with the calibration
fit's probability), the IRT prediction (the rank-1 calibration at the model's MAP ability on
the training folds) and the item's category (one-hot: AlpacaEval ``dataset``, BFCL and
MMLU-Pro ``category``; information no method of the project uses). The family, each member's
hyper-parameter chosen per model **by its cross-fitted error** (in hindsight):

* ``irt``: the IRT prediction alone;
* ``ridge``: linear ridge on all the inputs (penalty grid 10^-2..10^4), clipped to [0, 1];
* ``logistic``: L2 logistic regression on the same inputs (soft labels for non-binary scores;
  C in 0.01, 0.1, 1);
* ``knn``: mean answer of the k nearest training items in the calibration models' answer
  pattern (k in 10, 30, 100);
* ``blend``: the mean of ``ridge``, ``logistic`` and ``knn``.

and the oracle's residual standard deviations ``s_j``: the root mean squared residual
``y - f*`` over the item's bin, ``--bins`` (10) bins of equal count of the predicted sd
``sqrt(f*(1 - f*))`` (calibrated in-sample, so the model's total residual variance is the
realized one). Per model, the member with the **smallest bound** is used (in hindsight).

The bound (Godambe-Joshi type: anticipated variance under a superpopulation model)
-------------------------------------------------------------------------------------
Model ``xi``: the answers are independent, ``E y_j = m_j``, ``Var y_j = s_j^2``, with ``m`` and
``s`` known to the method (``I``). Then for every estimator of the class,

    E_xi E_p (estimate - mu)^2 >= B_n = 1 / sum_{t <= n} 1 / L_t,
    L_t = (1/N^2) [ (sum_{U*_t} s)^2 - sum_{U*_t} s^2 ],

``U*_t`` the ``N - t + 1`` items of smallest ``s``. The same ``B_n`` bounds designs with
replacement: a proxy may set ``f = y`` on items already revealed, so a round drawn from all
items is no better than one over the unrevealed ones (``L_1 / n`` would not be a bound).
Proof:

1. For every fixed ``y``, ``Z_t - mu`` is a martingale difference sequence, so ``E_p
   (sum w_t (Z_t - mu))^2 = E_p sum_t w_t^2 V_t`` with ``V_t = Var(Z_t | past) = (1/N^2) [
   sum_{U_t} e_j^2 / p_j - (sum_{U_t} e_j)^2 ]``, ``e = y - f_t``.
2. Given the past (under ``xi`` the revealed answers say nothing about the others, so the
   selection is ignorable), with ``d_j = m_j - f_{t,j}``: ``E_xi V_t = (1/N^2) [ sum_U (s_j^2 +
   d_j^2) / p_j - sum_U s_j^2 - (sum_U d_j)^2 ]``.
3. Cauchy-Schwarz (``sum_U p = 1``): ``sum_U (s^2 + d^2) / p >= (sum_U sqrt(s^2 + d^2))^2``,
   equality at ``p ∝ sqrt(s^2 + d^2)``; Minkowski: ``sum_U sqrt(s^2 + d^2) >= sqrt((sum_U s)^2
   + (sum_U d)^2)``. So ``E_xi V_t >= (1/N^2) [(sum_U s)^2 - sum_U s^2] = (1/N^2) sum_{j != k in
   U} s_j s_k``, attained by ``f_t = m`` and ``p ∝ s`` (the oracle Neyman design): no proxy and
   no allocation does better, whatever they are.
4. The pair sum only decreases when items leave ``U``, and is smallest for the items of
   smallest ``s``: ``>= L_t`` whichever items were revealed (generous: as if the most
   uncertain items had been revealed first).
5. ``E sum_t w_t^2 L_t >= min {sum_t w_t^2 L_t : sum_t w_t = 1} = 1 / sum_t 1 / L_t``.

The super-oracle that knows the answers is not in the class: with ``p ∝ |e|`` (realized
residuals) the round variance is ``mean|e|^2 - mean(e)^2`` (reported as ``super-oracle``), and
with ``f = 0``, ``p ∝ y`` it is 0, so no bound exists over allocations that may depend on the
unrevealed answers; the bound needs the model ``xi``.

Against uniform sampling
------------------------
The sample mean of ``n`` items drawn uniformly without replacement has the exact (design)
variance ``sigma^2 (N - n) / (n (N - 1))``, ``sigma^2`` the population variance of ``y``;
its anticipated value under ``xi`` replaces ``sigma^2`` by ``[sum (m - mean m)^2 + (1 - 1/N) sum
s^2] / N`` (both reported; on the shared matrices they agree within 0.015).

Target (a): the bound on the RMSE ratio at ``n = 100`` is ``sum_i sqrt(B_i) / sum_i
sd_uniform,i`` over held-out models ``i`` (means over models, as the target's MAE). Under the
normal approximation MAE = sqrt(2/pi) RMSE for both, so it bounds the MAE ratio too (checked by
simulating the oracle Neyman design without replacement, ``--sims`` runs per model, equal
weights: its MAE / (sqrt(2/pi) RMSE) is 0.998-1.001 on the shared matrices).

Target (b): like for like, the same interval family and level for both: a half-width of ``c``
standard deviations. ``c = 1.96`` is a fixed-n 95% normal interval, the narrowest valid one
for an unbiased normal estimate (anytime-valid intervals are wider); ``c_eff`` is the ``c`` at
which uniform's median ``n_u`` equals the measured median of the project's uniform interval
sized for the target (``uniform-targeted`` in ``RESULTS_estimate.md``). Uniform needs ``n_u =
min{n : c sd_uniform(n) <= 0.02}``, the class at least ``n_o = min{n : c sqrt(B_n) <= 0.02}``
(smallest over the family); reported: median n_o / median n_u over held-out models.

Check (``--ours S``): ``latentbench.estimate``'s engine (``proxy="irt"``, ``point="dr"``, no
precision target) run to 100 items with ``S`` seeds per model, its RMSE and MAE ratios to
uniform (it is in the class, so its ratio should not be below the bound beyond Monte Carlo
error if ``xi`` is adequate).

What it does not cover
----------------------
* Point estimates that are not design-unbiased: p-IRT, gp-IRT, CAT, the composite, a
  model-based point clipped into the DR interval. The interval is valid whatever point is
  reported, so restricting the class to design-unbiased points is an assumption of the
  bound, not a consequence of the target.
* Information beyond ``I``: a method that predicts the answers better than the oracle family
  (item text, other benchmarks, a larger calibration) or knows their uncertainty item by item
  better than 10 calibrated bins. The bound is for the model ``xi`` built from the oracle; it
  is an average (anticipated) statement, so a single model's realized error can fall below
  it by luck, and it is only as right as ``xi`` is (the check above tests it end to end).
* Fixed-size designs with joint inclusion probabilities (Horvitz-Thompson with the
  Sen-Yates-Grundy variance): the Godambe-Joshi bound ``(1/N^2)[(sum s)^2 / n - sum s^2]``
  covers them for designs fixed in advance, not for adaptive ones.
* The MAE itself: the bound is on the RMSE (MAE <= RMSE); the normal approximation turns it
  into an MAE ratio and into interval widths.

    python benchmarks/bench_estimate_bound.py alpacaeval1_gpt4 --models 0:27 --ours 20 --dump a.pkl
    python benchmarks/bench_estimate_bound.py alpacaeval1_gpt4 --merge a.pkl b.pkl
"""

from __future__ import annotations

import argparse
import pickle
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _estimate_common import held_out, make_estimate

from latentbench import ResponseMatrix
from latentbench.irt._objective import sigmoid

DATA = Path("/work/shared/data")
ITEMS = {
    "alpacaeval1_gpt4": ("alpacaeval_items", "dataset"),
    "alpacaeval2_weighted": ("alpacaeval_items", "dataset"),
    "bfcl_v2": ("bfcl_v2_items", "category"),
    "mmlu_pro": ("mmlu_pro_items", "category"),
}
# medians of `uniform-targeted` (RESULTS_estimate.md, "Interval sized for the precision")
UNIFORM_TARGETED = {
    "alpacaeval1_gpt4": 568,
    "alpacaeval2_weighted": 418,
    "bfcl_v2": 1063,
    "mmlu_pro": 2801,
}
FOLDS = 10
N_ITEMS = 100
HALF_WIDTH = 0.02
LAMBDAS = 10.0 ** np.arange(-2, 5)
CS = (0.01, 0.1, 1.0)
KS = (10, 30, 100)
BINS = 10


def thetas(a: np.ndarray, b: np.ndarray, y: np.ndarray, train: np.ndarray) -> np.ndarray:
    """Rank-1 MAP abilities (N(0, 1) prior) on the training items of each fold, by bisection
    on the concave log-posterior's derivative; ``train`` is a (folds, N) mask."""
    lo = np.full(train.shape[0], -15.0)
    hi = np.full(train.shape[0], 15.0)
    for _ in range(50):
        t = 0.5 * (lo + hi)
        g = (train * a * (y - sigmoid(np.outer(t, a) + b))).sum(axis=1) - t
        lo = np.where(g > 0, t, lo)
        hi = np.where(g > 0, hi, t)
    return 0.5 * (lo + hi)


def standardize(X: np.ndarray, train: np.ndarray) -> np.ndarray:
    mean = X[train].mean(axis=0)
    sd = X[train].std(axis=0)
    return (X - mean) / np.where(sd > 1e-12, sd, 1.0)


def logistic_ridge(X: np.ndarray, y: np.ndarray, lam: float) -> tuple[float, np.ndarray]:
    """L2 logistic regression with soft labels ``y`` in [0, 1] (intercept not penalized):
    damped Newton (step halved until the objective decreases) on ``sum_j [log(1 + exp(eta_j))
    - y_j eta_j] + lam |w|^2 / 2``, the objective of scikit-learn's ``LogisticRegression``
    with ``C = 1 / lam``."""
    A = np.column_stack([np.ones(len(y)), X])
    pen = np.full(A.shape[1], lam)
    pen[0] = 0.0

    def objective(beta: np.ndarray) -> float:
        eta = A @ beta
        return float(np.sum(np.logaddexp(0.0, eta) - y * eta) + 0.5 * (pen * beta**2).sum())

    beta = np.zeros(A.shape[1])
    m = float(np.clip(y.mean(), 1e-3, 1 - 1e-3))
    beta[0] = np.log(m / (1 - m))
    value = objective(beta)
    for _ in range(100):
        p = sigmoid(A @ beta)
        grad = A.T @ (p - y) + pen * beta
        H = (A * (p * (1 - p))[:, None]).T @ A + np.diag(pen + 1e-9)
        step = np.linalg.solve(H, grad)
        t = 1.0
        while t > 1e-6 and objective(beta - t * step) > value:
            t /= 2
        beta = beta - t * step
        new = objective(beta)
        if value - new < 1e-10 * (1 + abs(value)):
            break
        value = new
    return float(beta[0]), beta[1:]


def cross_fit(
    y: np.ndarray, Xcal: np.ndarray, a: np.ndarray, b: np.ndarray, cats: np.ndarray, seed: int
) -> dict[str, np.ndarray]:
    """Cross-fitted predictions of the held-out model's answers ``y`` (N,) for every member of
    the family (see the module docstring); ``Xcal`` (N, K) the calibration models' answers,
    ``a``, ``b`` the rank-1 slopes and intercepts on the logit scale, ``cats`` (N, C) one-hot."""
    N = y.size
    fold = np.random.default_rng(seed).permutation(N) % FOLDS
    train = fold[None, :] != np.arange(FOLDS)[:, None]
    g = np.empty(N)
    th = thetas(a, b, y, train)
    for k in range(FOLDS):
        te = fold == k
        g[te] = sigmoid(a[te] * th[k] + b[te])
    logit_g = np.log(np.clip(g, 1e-4, 1 - 1e-4) / (1 - np.clip(g, 1e-4, 1 - 1e-4)))
    Xall = np.column_stack([Xcal, logit_g, cats])
    ridge = np.empty((LAMBDAS.size, N))
    logistic = np.empty((len(CS), N))
    knn = np.empty((len(KS), N))
    for k in range(FOLDS):
        tr, te = fold != k, fold == k
        X = standardize(Xall, tr)
        ym = y[tr].mean()
        Xtr = X[tr]
        d, E = np.linalg.eigh(Xtr.T @ Xtr)
        proj = E.T @ (Xtr.T @ (y[tr] - ym))
        W = (proj[None, :] / (np.maximum(d, 0.0)[None, :] + LAMBDAS[:, None])) @ E.T  # (L, p)
        ridge[:, te] = np.clip(ym + W @ X[te].T, 0.0, 1.0)
        for c_i, C in enumerate(CS):
            w0, w = logistic_ridge(Xtr, y[tr], 1.0 / C)
            logistic[c_i, te] = sigmoid(w0 + X[te] @ w)
        Z = standardize(Xcal, tr)
        Ztr, Zte = Z[tr], Z[te]
        dist = (Zte**2).sum(1)[:, None] + (Ztr**2).sum(1)[None, :] - 2.0 * Zte @ Ztr.T
        kmax = min(max(KS), int(tr.sum()))
        near = np.argpartition(dist, kmax - 1, axis=1)[:, :kmax]
        order = np.take_along_axis(dist, near, axis=1).argsort(axis=1)
        ysorted = y[tr][np.take_along_axis(near, order, axis=1)]
        csum = ysorted.cumsum(axis=1)
        for k_i, kk in enumerate(KS):
            kk = min(kk, kmax)
            knn[k_i, te] = csum[:, kk - 1] / kk

    def best(P: np.ndarray) -> np.ndarray:
        return np.asarray(P[((P - y) ** 2).mean(axis=1).argmin()])

    out = {"irt": g, "ridge": best(ridge), "logistic": best(logistic), "knn": best(knn)}
    out["blend"] = (out["ridge"] + out["logistic"] + out["knn"]) / 3.0
    return out


def binned_sd(s: np.ndarray, e: np.ndarray, bins: int = BINS) -> np.ndarray:
    """The oracle model's residual standard deviations: ``sqrt(mean e^2)`` over the item's bin,
    ``BINS`` bins of equal count of the predicted sd ``s`` (ties broken by item order)."""
    rank = np.empty(s.size, dtype=np.int64)
    rank[np.argsort(s, kind="stable")] = np.arange(s.size)
    b = rank * bins // s.size
    msq = np.bincount(b, weights=e**2, minlength=bins) / np.bincount(b, minlength=bins)
    return np.asarray(np.sqrt(msq[b]))


def anticipated_bound(sd: np.ndarray) -> np.ndarray:
    """The bound ``B_n`` (module docstring) for ``n = 1..N`` given the oracle's predictive
    standard deviations ``sd`` (N,): ``L_t = [(sum_{U*_t} sd)^2 - sum_{U*_t} sd^2] / N^2``, ``U*_t``
    the items left after removing the ``t - 1`` largest, and ``B_n = 1 / sum_{t <= n} 1 / L_t``."""
    N = sd.size
    s = np.sort(sd)[::-1]
    s1 = s.sum() - np.r_[0.0, np.cumsum(s)[:-1]]  # sum over U*_t, t = 1..N
    s2 = (s**2).sum() - np.r_[0.0, np.cumsum(s**2)[:-1]]
    L = np.maximum(s1**2 - s2, 0.0) / N**2
    with np.errstate(divide="ignore"):
        cum = np.cumsum(np.where(L > 0, 1.0 / np.maximum(L, 1e-300), np.inf))
    return np.asarray(np.where(np.isfinite(cum), 1.0 / cum, 0.0))


def simulate(e: np.ndarray, w: np.ndarray, n: int, sims: int, seed: int) -> np.ndarray:
    """Errors after ``n`` rounds of the sequential difference estimator without replacement,
    ``p_t ∝ w`` over the unrevealed items, residuals ``e = y - f`` (``f`` fixed), equal
    weights: shape (sims,). Successive sampling is drawn by exponential keys ``E_j / w_j``
    (the order of the keys is the order of the draws)."""
    N = e.size
    rng = np.random.default_rng(seed)
    keys = rng.exponential(size=(sims, N)) / w
    first = np.argpartition(keys, n - 1, axis=1)[:, :n]
    drawn = np.take_along_axis(first, np.take_along_axis(keys, first, axis=1).argsort(1), 1)
    ew, ed = w[drawn], e[drawn]
    before_w = np.cumsum(ew, axis=1) - ew  # mass of w revealed before round t
    before_e = np.cumsum(ed, axis=1) - ed
    # Z_t - mu = (1/N) [ sum_R e + e_J / p_J - sum_all e ],  p_J = w_J / (W - before_w)
    Z = (before_e + ed * (w.sum() - before_w) / ew - e.sum()) / N
    return np.asarray(Z.mean(axis=1))


def items_needed(ts: np.ndarray, var: np.ndarray, c: float, cap: int) -> int:
    ok = np.flatnonzero(c * np.sqrt(var) <= HALF_WIDTH)
    return int(ts[ok[0]]) if ok.size else cap


def uniform_items(sigma2: float, N: int, c: float) -> int:
    # sigma^2 (N - n) / (n (N - 1)) <= (H / c)^2  <=>  n >= N sigma^2 / ((N - 1) h2 + sigma^2)
    h2 = (HALF_WIDTH / c) ** 2
    return int(min(N, np.ceil(N * sigma2 / ((N - 1) * h2 + sigma2))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("matrix")
    parser.add_argument("--dump", type=Path, help="also write the rows to this pickle")
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        help="print the table of these dumps (no computation; rows of --models only)",
    )
    parser.add_argument(
        "--ours-from", type=Path, nargs="+", help="with --merge: take --ours' figures from these"
    )
    parser.add_argument("--models", default="0:1000", help="A:B or A:B:STEP")
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--bins", type=int, default=BINS, help="bins of the variance model")
    parser.add_argument(
        "--ours",
        type=int,
        default=0,
        help="also run latentbench.estimate's engine (proxy irt, point dr) to 100 items with "
        "this many seeds per model: its realized RMSE / MAE against the bound",
    )
    args = parser.parse_args()
    a_, b_, s_ = (int(x) for x in [*args.models.split(":"), "1"][:3])
    if args.merge:
        rows = [r for path in args.merge for r in pickle.loads(path.read_bytes())]
        keep = range(a_, b_, s_)
        if args.ours_from:
            # the check's figures from other dumps of the same models (--ours does not
            # depend on the bound's computation)
            old = {
                r["model"]: r for path in args.ours_from for r in pickle.loads(path.read_bytes())
            }
            for r in rows:
                if "ours_rmse" not in r and "ours_rmse" in old.get(r["model"], {}):
                    r["ours_rmse"] = old[r["model"]]["ours_rmse"]
                    r["ours_mae"] = old[r["model"]]["ours_mae"]
        report(
            args.matrix, sorted((r for r in rows if r["model"] in keep), key=lambda r: r["model"])
        )
        return
    start = time.time()
    M = ResponseMatrix.read(DATA / f"{args.matrix}.parquet")
    Y = np.asarray(M.scores, dtype=np.float64)
    table, column = ITEMS[args.matrix]
    meta = pd.read_parquet(DATA / f"{table}.parquet").set_index("item")[column]
    cats_all = pd.get_dummies(meta.reindex(list(M.item_ids)).astype(str)).to_numpy(float)
    models = range(a_, min(b_, M.n_models), s_)
    rows = []
    for i, cal, pop, y in held_out(M, models):
        N = y.size
        sigma2 = float(y.var())
        if sigma2 == 0:
            continue
        fitted = sigmoid((cal.model_factors @ cal.V.T + cal.b) / cal.sigma)[:, pop]
        Yc = np.delete(Y, i, axis=0)[:, pop]
        Xcal = np.where(np.isfinite(Yc), Yc, fitted).T
        a = cal.V[pop, 0] / cal.sigma
        b = cal.b[pop] / cal.sigma
        preds = cross_fit(y, Xcal, a, b, cats_all[pop], seed=i)
        row: dict = {"model": i, "N": N, "sigma2": sigma2, "var_u": uniform_var(sigma2, N)}
        members = {}
        for name, f in preds.items():
            e = y - f
            s = np.sqrt(np.maximum(f * (1 - f), 1e-4))
            sd = binned_sd(s, e, args.bins)
            kappa = float((e**2).mean() / (s**2).mean())
            bound = anticipated_bound(sd)
            ey2 = float(((f - f.mean()) ** 2).sum() + (1 - 1 / N) * (sd**2).sum()) / N
            members[name] = {
                "rho": float((e**2).mean() / sigma2),
                "kappa": kappa,
                "bound": bound,
                "B": float(bound[N_ITEMS - 1]),
                "var_u_model": uniform_var(ey2, N),
                "neyman": float(s.mean() * (e**2 / s).mean() - e.mean() ** 2) / N_ITEMS,
                "neyman_binned": float(
                    sd.mean() * (e**2 / np.maximum(sd, 1e-12)).mean() - e.mean() ** 2
                )
                / N_ITEMS,
                "super": float(np.abs(e).mean() ** 2 - e.mean() ** 2) / N_ITEMS,
            }
        star = min(members, key=lambda k: members[k]["B"])
        row.update({k: v for k, v in members[star].items() if k != "bound"})
        row["star"] = star
        row["rho_min"] = min(m["rho"] for m in members.values())
        row["super_min"] = min(m["super"] for m in members.values())
        for name, m in members.items():
            row[f"rho_{name}"] = m["rho"]
        row["bounds"] = [m["bound"] for m in members.values()]
        f = preds[star]
        sd = binned_sd(np.sqrt(np.maximum(f * (1 - f), 1e-4)), y - f, args.bins)
        err = simulate(y - f, np.maximum(sd, 1e-6), N_ITEMS, args.sims, seed=i)
        row["mc_mae"] = float(np.abs(err).mean())
        row["mc_rmse"] = float(np.sqrt((err**2).mean()))
        if args.ours:
            errs = []
            for seed in range(args.ours):
                seq = make_estimate(cal, np.delete(Y, i, axis=0), pop, "irt", None)
                srng = np.random.default_rng([seed, i, 7])
                for _ in range(N_ITEMS):
                    j, pi = seq.choose(srng)
                    seq.observe(j, float(y[j]), pi)
                errs.append(seq.point("dr") - float(y.mean()))
            row["ours_mae"] = float(np.abs(errs).mean())
            row["ours_rmse"] = float(np.sqrt(np.mean(np.square(errs))))
        rows.append(row)
        print(
            f"  model {i:3d} N={N:5d} f*={star:8s} rho={row['rho']:.3f} kappa={row['kappa']:.2f} "
            f"sqrt(B/var_u)={np.sqrt(row['B'] / row['var_u']):.3f} "
            f"oracle-Neyman MC MAE {row['mc_mae']:.4f} "
            + (
                f"ours RMSE/sd_u {row['ours_rmse'] / np.sqrt(row['var_u']):.3f} "
                if args.ours
                else ""
            )
            + f"[{time.time() - start:.0f}s]",
            flush=True,
        )
    if args.dump:
        args.dump.write_bytes(pickle.dumps(rows))
    report(args.matrix, rows)


def uniform_var(sigma2: float, N: int, n: int = N_ITEMS) -> float:
    """Variance of the mean of n items drawn uniformly without replacement (population
    variance ``sigma2``, N items)."""
    return sigma2 * (N - n) / (n * (N - 1))


def report(matrix: str, rows: list[dict]) -> None:
    sd_u = np.sqrt([r["var_u"] for r in rows]).sum()
    sd_um = np.sqrt([r["var_u_model"] for r in rows]).sum()
    mae_u = np.sqrt(2 / np.pi) * sd_u
    print(f"\n{matrix}: {len(rows)} held-out models, n = {N_ITEMS}")
    for name in ("irt", "ridge", "logistic", "knn", "blend"):
        print(f"  rho of {name:8s}: mean {np.mean([r[f'rho_{name}'] for r in rows]):.3f}")
    stars = pd.Series([r["star"] for r in rows]).value_counts().to_dict()
    print(f"  f* (member with the smallest bound): {stars}")
    print(
        f"  f*: rho {np.mean([r['rho'] for r in rows]):.3f}, "
        f"kappa {np.mean([r['kappa'] for r in rows]):.3f}"
    )
    for key, label in (
        ("B", "BOUND (anticipated, any proxy / allocation)"),
        ("neyman", "oracle Neyman p ∝ sqrt(f*(1-f*)), with replacement, realized"),
        ("neyman_binned", "oracle Neyman p ∝ binned sd, with replacement, realized"),
        ("super", "super-oracle p ∝ |e| (knows the answers), with replacement, realized"),
        ("super_min", "same, smallest over the family"),
    ):
        ratio = np.sqrt([r[key] for r in rows]).sum() / sd_u
        print(f"  RMSE ratio to uniform @{N_ITEMS}, {label}: {ratio:.3f}")
    ratio_m = np.sqrt([r["B"] for r in rows]).sum() / sd_um
    print(f"  BOUND against uniform's anticipated RMSE under the same model: {ratio_m:.3f}")
    mc = np.array([r["mc_mae"] for r in rows])
    rmse = np.array([r["mc_rmse"] for r in rows])
    print(
        f"  oracle Neyman without replacement, simulated: MAE {mc.mean():.4f} "
        f"(uniform analytic {mae_u / len(rows):.4f}), MAE ratio {mc.sum() / mae_u:.3f}; "
        f"MAE / (sqrt(2/pi) RMSE) = {mc.sum() / (np.sqrt(2 / np.pi) * rmse.sum()):.3f}"
    )
    if all("ours_rmse" in r for r in rows):
        o_rmse = np.array([r["ours_rmse"] for r in rows])
        o_mae = np.array([r["ours_mae"] for r in rows])
        below = int((o_rmse**2 < np.array([r["B"] for r in rows])).sum())
        print(
            f"  ours (irt, dr) @{N_ITEMS}: RMSE ratio to uniform {o_rmse.sum() / sd_u:.3f}, "
            f"MAE ratio {o_mae.sum() / mae_u:.3f} (MAE {o_mae.mean():.4f}); "
            f"models with ours' MSE < B: {below} of {len(rows)}"
        )
    for c in (1.96, None):
        if c is None:
            target = UNIFORM_TARGETED[matrix]
            lo, hi = 1.0, 20.0
            for _ in range(60):
                mid = 0.5 * (lo + hi)
                med = np.median([uniform_items(r["sigma2"], r["N"], mid) for r in rows])
                lo, hi = (mid, hi) if med < target else (lo, mid)
            c = hi
        n_u = np.array([uniform_items(r["sigma2"], r["N"], c) for r in rows])
        n_o = np.array(
            [
                min(items_needed(np.arange(1, r["N"] + 1), B, c, r["N"]) for B in r["bounds"])
                for r in rows
            ]
        )
        print(
            f"  items to ±{HALF_WIDTH} at c = {c:.2f}: uniform median {np.median(n_u):.0f}, "
            f"bound median {np.median(n_o):.0f}, ratio {np.median(n_o) / np.median(n_u):.3f}"
        )


if __name__ == "__main__":
    main()
