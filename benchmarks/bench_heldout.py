"""Is the IRT fit right on the matrices users have? Held-out prediction, reliability, coverage.

On each shared real matrix (``../shared/data``), side by side:

1. Held-out log-loss (10% of observed cells hidden, 3 seeds, the same masks for every method) of
   the default fit (``TwoPL()``: MAP with data-chosen priors), the additive baseline
   ``logit p = c_i + b_j``, joint ML (``TwoPL(prior=None)``, ridge 0.01) and marginal ML
   (``fit_marginal``: Bock-Aitkin EM, lognormal prior on a); Brier and AUC of the default and
   the additive model.
2. Split-half reliability: Spearman correlation of the abilities fitted on two random halves
   of the items (5 seeds), against the same for plain accuracy.
3. On the full matrix with default settings: largest discrimination, range of theta,
   Spearman(theta, accuracy), sweeps.
4. Coverage of 95% theta intervals (``standard_errors``) in parametric simulations shaped like
   the matrix (same models, items and missing cells; parameters from the default fit; 20
   replicas), with the interval width and RMSE.

Usage::

    python benchmarks/bench_heldout.py                  # all shared matrices
    python benchmarks/bench_heldout.py --only bfcl_v2 --replicas 5
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from latentbench import ResponseMatrix
from latentbench.irt import TwoPL, fit_additive, fit_marginal, predictive_scores
from latentbench.irt._heldout import heldout_mask
from latentbench.irt._objective import sigmoid

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
NAMES = ["mmlu_pro", "bfcl_v2", "alpacaeval1_gpt4", "alpacaeval2_weighted"]


def heldout(matrix: ResponseMatrix, seeds: list[int]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {
        k: [] for k in ("default", "additive", "joint_ml", "marginal_ml", "brier_d", "brier_a")
    }
    out.update({"auc_d": [], "auc_a": []})
    for seed in seeds:
        train, rows, cols = heldout_mask(matrix.scores, 0.1, seed)
        truth = matrix.scores[rows, cols].astype(float)
        sub = ResponseMatrix(train, matrix.model_ids, matrix.item_ids)
        default = TwoPL().fit(sub).predict_proba()[rows, cols]
        joint = TwoPL(prior=None).fit(sub).predict_proba()[rows, cols]
        c, b = fit_additive(train)
        additive = sigmoid(c[rows] + b[cols])
        marginal = fit_marginal(train).predict_proba()[rows, cols]
        s_d, s_a = predictive_scores(default, truth), predictive_scores(additive, truth)
        out["default"].append(s_d.log_loss)
        out["additive"].append(s_a.log_loss)
        out["joint_ml"].append(predictive_scores(joint, truth).log_loss)
        out["marginal_ml"].append(predictive_scores(marginal, truth).log_loss)
        out["brier_d"].append(s_d.brier)
        out["brier_a"].append(s_a.brier)
        out["auc_d"].append(s_d.auc)
        out["auc_a"].append(s_a.auc)
    return out


def split_half(matrix: ResponseMatrix, seeds: list[int]) -> tuple[float, float]:
    rel_theta, rel_acc = [], []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        perm = rng.permutation(matrix.n_items)
        halves = [perm[: matrix.n_items // 2], perm[matrix.n_items // 2 :]]
        thetas, accs = [], []
        for half in halves:
            sub = matrix.subset(items=[matrix.item_ids[j] for j in half])
            thetas.append(TwoPL().fit(sub).U[:, 0])
            accs.append(sub.model_accuracy())
        rel_theta.append(spearmanr(*thetas)[0])
        rel_acc.append(spearmanr(*accs)[0])
    return float(np.mean(rel_theta)), float(np.mean(rel_acc))


def coverage(matrix: ResponseMatrix, replicas: int) -> tuple[float, float, float, float]:
    """Mean coverage, its Monte Carlo se, mean width and RMSE of theta over replicas."""
    fit = TwoPL().fit(matrix)
    p = fit.predict_proba()
    observed = matrix.observed
    truth = fit.U[:, 0]
    covered, widths, sq = [], [], []
    for k in range(replicas):
        rng = np.random.default_rng(1000 + k)
        Y = (rng.random(p.shape) < p).astype(np.float32)
        Y[~observed] = np.nan
        sim = ResponseMatrix(Y, matrix.model_ids, matrix.item_ids)
        res = TwoPL().fit(sim)
        ab = res.standard_errors().abilities
        covered.append(float(np.mean((ab["lower"] <= truth) & (truth <= ab["upper"]))))
        widths.append(float(np.mean(ab["upper"] - ab["lower"])))
        sq.append(float(np.mean((res.U[:, 0] - truth) ** 2)))
    cov = np.asarray(covered)
    return (
        float(cov.mean()),
        float(cov.std(ddof=1) / np.sqrt(cov.size)) if cov.size > 1 else float("nan"),
        float(np.mean(widths)),
        float(np.sqrt(np.mean(sq))),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", help="matrix name (repeatable)")
    parser.add_argument("--replicas", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--no-coverage", action="store_true")
    parser.add_argument("--data", type=Path, default=SHARED, help="folder of the matrices")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    for name in args.only or NAMES:
        path = args.data / f"{name}.parquet"
        if not path.exists():
            print(f"{name}: not found at {path}")
            continue
        matrix = ResponseMatrix.read(path)
        start = time.perf_counter()
        h = heldout(matrix, list(range(args.seeds)))
        mean = {k: float(np.mean(v)) for k, v in h.items()}
        best = min(mean["default"], mean["marginal_ml"])
        print(f"\n{name}: {matrix.n_models} x {matrix.n_items}")
        print(
            f"  held-out log-loss ({args.seeds} seeds): default {mean['default']:.4f}  "
            f"additive {mean['additive']:.4f}  joint ML {mean['joint_ml']:.4f}  "
            f"marginal ML {mean['marginal_ml']:.4f}  (default - best {mean['default'] - best:+.4f})"
        )
        print(
            f"  per seed default {np.round(h['default'], 4).tolist()} additive "
            f"{np.round(h['additive'], 4).tolist()}"
        )
        print(
            f"  Brier default {mean['brier_d']:.4f} additive {mean['brier_a']:.4f}; "
            f"AUC default {mean['auc_d']:.4f} additive {mean['auc_a']:.4f}"
        )
        rel_t, rel_a = split_half(matrix, list(range(5)))
        print(f"  split-half reliability (5 seeds): theta {rel_t:.4f}  accuracy {rel_a:.4f}")
        fit = TwoPL().fit(matrix)
        rho = spearmanr(fit.U[:, 0], matrix.model_accuracy())[0]
        a_sd = fit.prior_selection.a_sd if fit.prior_selection else None
        print(
            f"  default fit: max a {fit.V.max():.3f}, theta [{fit.U.min():.3f}, "
            f"{fit.U.max():.3f}], Spearman(theta, accuracy) {rho:.4f}, {fit.n_iter} sweeps, "
            f"converged {fit.converged}, a_sd {a_sd}"
        )
        if not args.no_coverage:
            cov, cov_se, width, rmse = coverage(matrix, args.replicas)
            print(
                f"  theta 95% coverage ({args.replicas} replicas): {cov:.3f} +/- {cov_se:.3f}, "
                f"mean width {width:.3f}, RMSE {rmse:.3f}"
            )
        print(f"  ({time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
