"""Probe (issue 27, branch comb27): combinations ``w dr + (1 - w) model`` of the engine's points.

Leave-one-model-out on a shared matrix, the runs of ``bench_estimate.py``'s ``ours-irt``
(the same calibration, the same random stream ``[seed, i, 7]``, the interval sized for
+-0.02). At 30, 100 and 300 items each run records: the truth, ``dr``, ``model``,
``composite`` (all clipped into the interval, as the engine reports them), the engine's
Var(dr) estimate (``cs.variance_ratio / _wsum``), the interval, and per model the analytic
MAE of uniform random items with the sample mean (exact finite-population sd without
replacement times sqrt(2/pi)). ``--dump`` writes the records; ``--analyse DUMPS`` prints the
tables (fixed-w ceiling, cross-validated w, empirical-Bayes weights).

    python benchmarks/probe_comb27.py run bfcl_v2 --models 0:100:3 --seeds 10 --dump DIR
    python benchmarks/probe_comb27.py analyse DIR/*.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from _estimate_common import held_out, make_estimate

from latentbench import ResponseMatrix

DATA = Path("/work/shared/data")
BUDGETS = (30, 100, 300)
PRECISION = 0.02
W_GRID = np.linspace(0.0, 1.0, 101)


def uniform_mae(y: np.ndarray, n: int) -> float:
    N = y.size
    s2 = float(y.var())
    return float(np.sqrt(2 / np.pi) * np.sqrt(s2 * (N - n) / (n * (N - 1))))


def regressions(
    X: np.ndarray, tc: np.ndarray, ynew: np.ndarray, winv: np.ndarray
) -> dict[str, tuple[float, float]]:
    """Predictions of the new model's mean from the calibration models' answers on the
    revealed items (``X``, K x t, NaN filled) and their population means ``tc`` (K,), each with
    its leave-one-calibration-model-out mean squared error (what a user can compute).

    ``reg``: OLS of ``tc`` on the plain mean over the revealed items; ``regw``: on the Hajek
    mean weighted by the rounds' ``1 / pi``; ``ridge``: ridge of ``tc`` on the item vector,
    the penalty chosen by leave-one-out over the calibration models.
    """
    out: dict[str, tuple[float, float]] = {}
    K = tc.size
    for name, w in (("reg", np.ones_like(winv)), ("regw", winv)):
        x = X @ w / w.sum()
        A = np.column_stack([np.ones(K), x])
        G = np.linalg.pinv(A.T @ A)
        beta = G @ A.T @ tc
        h = np.einsum("ij,jk,ik->i", A, G, A)
        loo = (tc - A @ beta) / np.maximum(1.0 - h, 1e-6)
        xn = float(ynew @ w / w.sum())
        out[name] = (float(beta[0] + beta[1] * xn), float(np.mean(loo**2)))
    xm, tm = X.mean(axis=0), tc.mean()
    Xc, tcc = X - xm, tc - tm
    U, sv, Vt = np.linalg.svd(Xc, full_matrices=False)
    Ut = U.T @ tcc
    best = None
    for lam in sv[0] ** 2 * np.logspace(-4, 1, 26):
        d = sv**2 / (sv**2 + lam)
        fit = U @ (d * Ut)
        h = (U**2) @ d + 1.0 / K
        loo = (tcc - fit) / np.maximum(1.0 - h, 1e-6)
        mse = float(np.mean(loo**2))
        if best is None or mse < best[0]:
            beta = Vt.T @ (d / np.where(sv > 0, sv, 1.0) * Ut)
            best = (mse, float(tm + (ynew - xm) @ beta))
    assert best is not None
    out["ridge"] = (best[1], best[0])
    return out


def run(args: argparse.Namespace) -> None:
    M = ResponseMatrix.read(DATA / f"{args.matrix}.parquet")
    Y = np.asarray(M.scores, dtype=np.float64)
    a, b, s_ = (int(x) for x in args.models.split(":"))
    ids = list(range(M.n_models))[a:b:s_]
    recs = []
    tic = time.perf_counter()
    for i, cal, pop, y in held_out(M, ids):
        n, truth = pop.size, float(y.mean())
        Ycal = np.delete(Y, i, axis=0)
        Yp = Ycal[:, pop]
        keep = np.isfinite(Yp).mean(axis=1) >= 0.5  # calibration models answering the items
        Yp = Yp[keep]
        tc = np.nanmean(Yp, axis=1)  # their means over the population
        Yf = np.where(np.isfinite(Yp), Yp, np.nanmean(Yp, axis=0, keepdims=True))
        Yf = np.where(np.isfinite(Yf), Yf, 0.5)
        umae = {t: uniform_mae(y, t) for t in BUDGETS if t < n}
        for s in range(args.seed0, args.seed0 + args.seeds):
            seq = make_estimate(cal, Ycal, pop, "irt", PRECISION)
            rng = np.random.default_rng([s, i, 7])
            probs = []
            for t in range(1, max(umae) + 1):
                j, pi = seq.choose(rng)
                probs.append(float(pi[j]))
                seq.observe(j, float(y[j]), pi)
                if t in umae:
                    lo, hi = seq.interval
                    S = np.asarray(seq.order)
                    alt = regressions(Yf[:, S], tc, y[S], 1.0 / np.asarray(probs))
                    alt = {k: (min(max(v, lo), hi), tau2) for k, (v, tau2) in alt.items()}
                    recs.append(
                        dict(
                            model=i,
                            seed=s,
                            n=t,
                            N=n,
                            truth=truth,
                            dr=seq.point("dr"),
                            model_pt=seq.point("model"),
                            comp=seq.point("composite"),
                            var=seq.cs.variance_ratio / seq._wsum,
                            var_pred=1.0 / seq._wsum,
                            lo=lo,
                            hi=hi,
                            umae=umae[t],
                            **{k: v for k, (v, _) in alt.items()},
                            **{f"tau2_{k}": tau2 for k, (_, tau2) in alt.items()},
                        )
                    )
        print(f"model {i} done ({time.perf_counter() - tic:.0f} s)", flush=True)
    folder = Path(args.dump)
    folder.mkdir(parents=True, exist_ok=True)
    tag = args.models.replace(":", "-") + f"_s{args.seed0}"
    (folder / f"{args.matrix}_{tag}.json").write_text(
        json.dumps({"name": args.matrix, "recs": recs})
    )


def ratio(err: np.ndarray, um: np.ndarray, models: np.ndarray) -> tuple[float, float]:
    """MAE ratio sum|err| / sum umae and its SE by the delta method over models (clusters)."""
    ids = np.unique(models)
    e = np.array([np.abs(err[models == m]).mean() for m in ids])
    u = np.array([um[models == m].mean() for m in ids])
    r = e.mean() / u.mean()
    d = (e - r * u) / u.mean()
    return float(r), float(d.std(ddof=1) / np.sqrt(ids.size))


def _mae_by_model(err: np.ndarray, models: np.ndarray) -> np.ndarray:
    return np.array([np.abs(err[models == m]).mean() for m in np.unique(models)])


def _best_w(dr: np.ndarray, alt: np.ndarray, truth: np.ndarray) -> float:
    maes = [np.abs(w * dr + (1 - w) * alt - truth).mean() for w in W_GRID]
    return float(W_GRID[int(np.argmin(maes))])


def analyse(args: argparse.Namespace) -> None:
    by: dict[str, list[dict]] = {}
    for path in args.dumps:
        data = json.loads(Path(path).read_text())
        by.setdefault(data["name"], []).extend(data["recs"])
    for name, recs in by.items():
        print(f"\n### {name}\n")
        # a model with constant answers (AlpacaEval 2's reference judged against itself):
        # uniform's error is 0 there; left out, as in bench_estimate_bound's tables
        const = sorted({r["model"] for r in recs if r["umae"] == 0.0})
        if const:
            print(f"left out: model(s) {const} (constant answers, uniform MAE 0)")
            recs = [r for r in recs if r["model"] not in const]
        for t in BUDGETS:
            R = [r for r in recs if r["n"] == t]
            if not R:
                continue
            g = {k: np.array([r[k] for r in R]) for k in R[0]}
            mods, truth, dr, um = g["model"], g["truth"], g["dr"], g["umae"]
            ids = np.unique(mods)
            u = np.array([um[mods == m].mean() for m in ids]).mean()
            base = _mae_by_model(dr - truth, mods)
            cov = np.mean((g["lo"] <= truth) & (truth <= g["hi"]))
            print(
                f"\n{t} items, {ids.size} models x {len(R) // ids.size} seeds, uniform MAE "
                f"{u:.4f}, coverage {cov:.3f}; MAE ratio to uniform (SE over models); "
                "diff = paired difference with dr's ratio (SE)\n"
            )
            print(
                "| point P | P alone | (a) ceiling: best fixed w dr + (1-w) P, in-sample | "
                "per-model oracle w | (b) w by LOMO-CV (diff) | (c) EB k = tau2/(tau2+Var dr) "
                "(diff) | mean k |"
            )
            print("|---|---|---|---|---|---|---|")
            r, se = ratio(dr - truth, um, mods)
            print(f"| dr | {r:.3f} ({se:.3f}) | | | | | |")
            r, se = ratio(g["comp"] - truth, um, mods)
            d = _mae_by_model(g["comp"] - truth, mods) - base
            print(
                f"| composite | {r:.3f} ({se:.3f}), diff {d.mean() / u:+.3f} "
                f"({d.std(ddof=1) / np.sqrt(ids.size) / u:.3f}) | | | | | |"
            )
            for key in ("model_pt", "reg", "regw", "ridge"):
                if key not in g:
                    continue
                alt = g[key]
                cells = [key.replace("_pt", "")]
                r, se = ratio(alt - truth, um, mods)
                cells.append(f"{r:.3f} ({se:.3f})")
                wa = _best_w(dr, alt, truth)
                r, se = ratio(wa * dr + (1 - wa) * alt - truth, um, mods)
                cells.append(f"**{r:.3f}** ({se:.3f}), w={wa:.2f}")
                est_o, est_b, est_c = (np.empty_like(dr) for _ in range(3))
                ks = np.empty_like(dr)
                for m in ids:
                    sel, o = mods == m, mods != m
                    w = _best_w(dr[sel], alt[sel], truth[sel])
                    est_o[sel] = w * dr[sel] + (1 - w) * alt[sel]
                    w = _best_w(dr[o], alt[o], truth[o])
                    est_b[sel] = w * dr[sel] + (1 - w) * alt[sel]
                    if key == "model_pt":  # the other held-out models' squared errors
                        tau2 = np.full(sel.sum(), np.mean((alt[o] - truth[o]) ** 2))
                    else:  # leave-one-out over this run's calibration models
                        tau2 = g[f"tau2_{key}"][sel]
                    ks[sel] = tau2 / (tau2 + g["var"][sel])
                    est_c[sel] = alt[sel] + ks[sel] * (dr[sel] - alt[sel])
                r, se = ratio(est_o - truth, um, mods)
                cells.append(f"{r:.3f} ({se:.3f})")
                for est in (est_b, est_c):
                    r, se = ratio(est - truth, um, mods)
                    d = _mae_by_model(est - truth, mods) - base
                    cells.append(
                        f"{r:.3f} ({se:.3f}), diff {d.mean() / u:+.3f} "
                        f"({d.std(ddof=1) / np.sqrt(ids.size) / u:.3f})"
                    )
                cells.append(f"{ks.mean():.2f}")
                print("| " + " | ".join(cells) + " |")
            keys = [k for k in ("model_pt", "reg", "regw", "ridge") if k in g]
            E = np.column_stack([g[k] - dr for k in keys])  # stack: dr + sum c_k (P_k - dr)
            c, *_ = np.linalg.lstsq(E, truth - dr, rcond=None)
            r, se = ratio(dr + E @ c - truth, um, mods)
            print(
                f"\nceiling, least-squares stack of dr and {', '.join(keys)} (in-sample, "
                f"weights {np.round(c, 2).tolist()}): {r:.3f} ({se:.3f})"
            )
            errs = {k: g[k] - truth for k in ("dr", *keys)}
            corr = " ".join(f"{k}:{np.corrcoef(errs['dr'], errs[k])[0, 1]:.2f}" for k in keys)
            print(
                f"corr of errors with dr's: {corr}; mean (dr-truth)^2 / mean Var(dr) "
                f"{np.mean(errs['dr'] ** 2) / np.mean(g['var']):.2f}"
            )
            for k in keys[1:]:
                print(
                    f"{k}: LOO tau2 {np.mean(g['tau2_' + k]):.2e} vs realized "
                    f"{np.mean(errs[k] ** 2):.2e}"
                )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("matrix")
    r.add_argument("--models", default="0:1000:3")
    r.add_argument("--seeds", type=int, default=10)
    r.add_argument("--seed0", type=int, default=0, help="first seed")
    r.add_argument("--dump", required=True)
    a = sub.add_parser("analyse")
    a.add_argument("dumps", nargs="+")
    args = p.parse_args()
    run(args) if args.cmd == "run" else analyse(args)


if __name__ == "__main__":
    main()
