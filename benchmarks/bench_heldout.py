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
   replicas), with the interval width and RMSE; the same for ``score_models`` on a
   calibrate-half / score-half split; optionally (``--synthetic NxJ``) on simulated 2PL data.

Held-out comparators also include a joint MAP fit with a lognormal prior on a
(``fit_lognormal_map``, L-BFGS; a comparator only).

Usage::

    python benchmarks/bench_heldout.py                  # all shared matrices
    python benchmarks/bench_heldout.py --only bfcl_v2 --replicas 5
    python benchmarks/bench_heldout.py --score-only --only alpacaeval2_weighted
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from latentbench import ResponseMatrix
from latentbench.irt import TwoPL, fit_additive, fit_marginal, predictive_scores
from latentbench.irt._heldout import heldout_mask
from latentbench.irt._objective import sigmoid
from latentbench.irt._priors import Prior, item_prior_moments

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
NAMES = ["mmlu_pro", "bfcl_v2", "alpacaeval1_gpt4", "alpacaeval2_weighted"]


def fit_lognormal_map(scores: np.ndarray, a_log_sd: float = 0.5) -> np.ndarray:
    """Comparator only: joint MAP of the 2PL with the issue's priors, by L-BFGS.

    theta ~ N(0, 1), log a ~ N(0, a_log_sd^2), b ~ N(b_mean, b_sd^2) (b moments from the item
    logits as in the default). Returns the fitted probabilities, shape (N, J).
    """
    from scipy.optimize import minimize

    observed = ~np.isnan(scores)
    y = np.where(observed, scores, 0.0).astype(float)
    w = observed.astype(float)
    N, J = scores.shape
    b_mean, b_sd = item_prior_moments(scores)
    p_item = np.clip((y.sum(0) + 0.5) / (w.sum(0) + 1.0), 1e-3, 1 - 1e-3)
    acc = np.clip((y.sum(1) + 0.5) / (w.sum(1) + 1.0), 1e-3, 1 - 1e-3)
    t0 = np.log(acc / (1 - acc))
    x0 = np.r_[(t0 - t0.mean()) / (t0.std() + 1e-9), np.zeros(J), np.log(p_item / (1 - p_item))]

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        theta, alpha, b = x[:N], x[N : N + J], x[N + J :]
        a = np.exp(alpha)
        t = np.outer(theta, a) + b
        loss = float((w * (np.logaddexp(0.0, t) - y * t)).sum())
        r = w * (sigmoid(t) - y)
        d = b - b_mean
        loss += 0.5 * (theta @ theta + alpha @ alpha / a_log_sd**2 + d @ d / b_sd**2)
        g_theta = r @ a + theta
        g_alpha = (r.T @ theta) * a + alpha / a_log_sd**2
        g_b = r.sum(0) + d / b_sd**2
        return loss, np.r_[g_theta, g_alpha, g_b]

    x = minimize(objective, x0, jac=True, method="L-BFGS-B", options={"maxiter": 5000}).x
    return np.asarray(sigmoid(np.outer(x[:N], np.exp(x[N : N + J])) + x[N + J :]))


def heldout(matrix: ResponseMatrix, seeds: list[int]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {
        k: []
        for k in (
            "default",
            "additive",
            "joint_ml",
            "marginal_ml",
            "lognormal_map",
            "brier_d",
            "brier_a",
        )
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
        lognormal = fit_lognormal_map(train)[rows, cols]
        out["lognormal_map"].append(predictive_scores(lognormal, truth).log_loss)
        out["brier_d"].append(s_d.brier)
        out["brier_a"].append(s_a.brier)
        out["auc_d"].append(s_d.auc)
        out["auc_a"].append(s_a.auc)
    return out


def split_half(matrix: ResponseMatrix, seeds: list[int]) -> tuple[float, float, float]:
    """Mean Spearman correlation between two random item halves of: the reported ability
    (``standard_errors().abilities['theta']``, what users read), the fit's MAP ability
    (``theta_fit``) and plain accuracy."""
    rel_theta, rel_fit, rel_acc = [], [], []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        perm = rng.permutation(matrix.n_items)
        halves = [perm[: matrix.n_items // 2], perm[matrix.n_items // 2 :]]
        thetas, fits, accs = [], [], []
        for half in halves:
            sub = matrix.subset(items=[matrix.item_ids[j] for j in half])
            result = TwoPL().fit(sub)
            thetas.append(result.standard_errors().abilities["theta"].to_numpy())
            fits.append(result.U[:, 0])
            accs.append(sub.model_accuracy())
        rel_theta.append(spearmanr(*thetas)[0])
        rel_fit.append(spearmanr(*fits)[0])
        rel_acc.append(spearmanr(*accs)[0])
    return float(np.mean(rel_theta)), float(np.mean(rel_fit)), float(np.mean(rel_acc))


def coverage(
    matrix: ResponseMatrix, replicas: int, model: TwoPL | None = None
) -> tuple[float, float, float, float]:
    """Mean coverage, its Monte Carlo se, mean width and RMSE (of the intervals' centre) of
    theta over replicas.

    ``model`` (default ``TwoPL()``) generates the truth (its fit of ``matrix``) and is refitted
    on every replica."""
    model = TwoPL() if model is None else model
    fit = clone(model).fit(matrix)
    p = fit.predict_proba()
    observed = matrix.observed
    truth = fit.U[:, 0]
    covered, widths, sq = [], [], []
    for k in range(replicas):
        rng = np.random.default_rng(1000 + k)
        Y = (rng.random(p.shape) < p).astype(np.float32)
        Y[~observed] = np.nan
        sim = ResponseMatrix(Y, matrix.model_ids, matrix.item_ids)
        res = clone(model).fit(sim)
        ab = res.standard_errors().abilities
        truth = on_reference_scale(fit.U[:, 0], res)
        covered.append(float(np.mean((ab["lower"] <= truth) & (truth <= ab["upper"]))))
        widths.append(float(np.mean(ab["upper"] - ab["lower"])))
        sq.append(float(np.mean((ab["theta"].to_numpy() - truth) ** 2)))
    cov = np.asarray(covered)
    return (
        float(cov.mean()),
        float(cov.std(ddof=1) / np.sqrt(cov.size)) if cov.size > 1 else float("nan"),
        float(np.mean(widths)),
        float(np.sqrt(np.mean(sq))),
    )


def on_reference_scale(
    values: np.ndarray, result: object, target: np.ndarray | None = None
) -> np.ndarray:
    """``target`` (default ``values``) standardised by the mean and sd of ``values`` over the
    models that set ``result``'s reporting scale (all but its detached ones): the truth on
    the refit's scale."""
    norm = getattr(result, "normalisation", None)
    ref = np.ones(values.size, bool) if norm is None else norm.mask(values.size)
    target = values if target is None else target
    return (target - values[ref].mean()) / values[ref].std()


def clone(model: TwoPL) -> TwoPL:
    """An unfitted copy of ``model`` with the same parameters."""
    return TwoPL(**model.get_params())


def _half_replicas(
    matrix: ResponseMatrix, p: np.ndarray, start: int, replicas: int
) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """Parametric replicas of ``matrix`` from the fit's probabilities ``p`` (its missing cells
    kept missing), each split into a calibration half and a scored half of the models:
    ``(k, Y, cal, new)``, replica ``k`` seeded ``2000 + k``."""
    observed = matrix.observed
    for k in range(start, start + replicas):
        rng = np.random.default_rng(2000 + k)
        Y = (rng.random(p.shape) < p).astype(np.float32)
        Y[~observed] = np.nan
        perm = rng.permutation(matrix.n_models)
        cal, new = np.sort(perm[: matrix.n_models // 2]), np.sort(perm[matrix.n_models // 2 :])
        yield k, Y, cal, new


def score_coverage(
    matrix: ResponseMatrix,
    replicas: int,
    start: int = 0,
    per_replica: bool = False,
    own_only: bool = False,
    paired_without: bool = False,
    compare_reference: bool = False,
    paired_variants: bool = False,
) -> tuple[float, float, float, float]:
    """``score_models`` on a calibrate-half / score-half split of parametric replicas.

    Each replica redraws the matrix from the default fit, calibrates the default fit on a
    random half of the models and scores the other half with the items held fixed; the truth
    is on the calibration's scale (the generating abilities standardised over the calibration
    half's models that set its scale). Returns mean coverage of the 95% intervals
    ``lower``-``upper``, its Monte Carlo se, mean se and RMSE of the intervals' centre.
    ``own_only``: only the calibration half's own theta intervals (no ``score_models``; the
    returned ``score_models`` figures are NaN). ``paired_without``: per replica also the
    coverage of ``score_models`` on the same calibration without the bootstrap's replicate
    scores and the model jackknife (``BOOTSTRAP_SCORES_MAX_CELLS = 0``, ``MODEL_JACKKNIFE =
    False``), and its mean over the replicas; ``paired_variants``: likewise with the
    bootstrap's replicate scores only and with the jackknife only. ``compare_reference``:
    per replica also ``score_models`` by the per-model reference loops
    (``_scoring._BATCHED = False``): the largest difference of the frames and whether any
    model's coverage differs.
    """
    from latentbench.irt import _fitted, _scoring

    fit = TwoPL().fit(matrix)
    p = fit.predict_proba()
    truth = fit.U[:, 0]
    ids = np.array(matrix.model_ids)
    covered, ses, sq, own = [], [], [], []
    paired: dict[str, list[float]] = {}
    for k, Y, cal, new in _half_replicas(matrix, p, start, replicas):
        calibration = TwoPL().fit(ResponseMatrix(Y[cal], list(ids[cal]), matrix.item_ids))
        if own_only:
            ab = calibration.standard_errors().abilities
            cal_truth = on_reference_scale(truth[cal], calibration)
            inside = (ab["lower"] <= cal_truth) & (cal_truth <= ab["upper"])
            own.append(float(np.mean(inside)))
            covered.append(float("nan"))
            ses.append(float("nan"))
            sq.append(float("nan"))
            if per_replica:
                print(
                    f"  replica {k}: calibration half's theta {own[-1]:.3f} (mean se "
                    f"{float(ab['se'].mean()):.4f})",
                    flush=True,
                )
            continue
        new_matrix = ResponseMatrix(Y[new], list(ids[new]), matrix.item_ids)
        scored = calibration.score_models(new_matrix)
        target = on_reference_scale(truth[cal], calibration, truth[new])
        err = scored["theta"].to_numpy() - target
        se = scored["se"].to_numpy()
        inside_new = (scored["lower"] <= target) & (target <= scored["upper"])
        covered.append(float(np.mean(inside_new)))
        extra = ""
        variants = []
        if paired_without:
            variants.append(("without bootstrap scores / jackknife", 0, False))
        if paired_variants:
            variants += [("bootstrap scores only", None, False), ("jackknife only", 0, True)]
        for label, cells, jackknife in variants:
            limits = (_fitted.BOOTSTRAP_SCORES_MAX_CELLS, _fitted.MODEL_JACKKNIFE)
            if cells is not None:
                _fitted.BOOTSTRAP_SCORES_MAX_CELLS = cells
            _fitted.MODEL_JACKKNIFE = jackknife
            try:
                plain = calibration.score_models(new_matrix)
            finally:
                _fitted.BOOTSTRAP_SCORES_MAX_CELLS, _fitted.MODEL_JACKKNIFE = limits
            value = float(np.mean((plain["lower"] <= target) & (target <= plain["upper"])))
            paired.setdefault(label, []).append(value)
            extra += f", {label} {value:.3f}"
        if compare_reference:
            _scoring._BATCHED = False
            try:
                ref = calibration.score_models(new_matrix)
            finally:
                _scoring._BATCHED = True
            diff = max(
                float(np.nanmax(np.abs(ref[c].to_numpy() - scored[c].to_numpy())))
                for c in ("theta", "se", "lower", "upper")
            )
            inside_ref = (ref["lower"] <= target) & (target <= ref["upper"])
            flips = int(np.sum(inside_ref.to_numpy() != inside_new.to_numpy()))
            extra += f", reference loops: max |diff| {diff:.2g}, coverage flips {flips}"
        ses.append(float(se.mean()))
        sq.append(float(np.mean(err**2)))
        # the calibration half's own theta intervals (truth on its reporting scale)
        ab = calibration.standard_errors().abilities
        cal_truth = on_reference_scale(truth[cal], calibration)
        own.append(float(np.mean((ab["lower"] <= cal_truth) & (cal_truth <= ab["upper"]))))
        if per_replica:
            print(
                f"  replica {k}: score_models {covered[-1]:.3f} (mean se {ses[-1]:.3f}), "
                f"calibration half's theta {own[-1]:.3f}{extra}",
                flush=True,
            )
    mean_own, se_own = float(np.mean(own)), float(np.std(own, ddof=1) / np.sqrt(len(own)))
    print(f"  calibration half's own theta coverage: {mean_own:.3f} +/- {se_own:.3f}", flush=True)
    for label, values in paired.items():
        print(f"  score_models, {label}: {np.mean(values):.3f} over {len(values)} replicas")
    cov = np.asarray(covered)
    return (
        float(cov.mean()),
        float(cov.std(ddof=1) / np.sqrt(cov.size)) if cov.size > 1 else float("nan"),
        float(np.mean(ses)),
        float(np.sqrt(np.mean(sq))),
    )


def count_detached(matrix: ResponseMatrix, replicas: int, start: int = 0) -> None:
    """Per replica of :func:`score_coverage` (same draws and split): how many calibration
    models are detached and how many scored models ``score_models`` flags ``detached`` (the
    only models whose intervals are open on one side). Cheap: MAP fits and items-fixed
    scores only (the random-item path does not decide who is detached)."""
    from latentbench.irt import _scoring

    _scoring._scores_with_random_items = lambda result: False  # type: ignore[assignment]
    fit = TwoPL().fit(matrix)
    p = fit.predict_proba()
    ids = np.array(matrix.model_ids)
    total_cal = total_new = 0
    for k, Y, cal, new in _half_replicas(matrix, p, start, replicas):
        calibration = TwoPL().fit(ResponseMatrix(Y[cal], list(ids[cal]), matrix.item_ids))
        scored = calibration.score_models(ResponseMatrix(Y[new], list(ids[new]), matrix.item_ids))
        norm = calibration.normalisation
        n_cal = 0 if norm is None else int((~norm.mask(len(cal))).sum())
        n_new = int(scored["detached"].sum())
        total_cal, total_new = total_cal + n_cal, total_new + n_new
        print(f"  replica {k}: detached calibration models {n_cal}, scored {n_new}", flush=True)
    print(f"  detached over {replicas} replicas: calibration {total_cal}, scored {total_new}")


def synthetic_coverage(n_models: int, n_items: int, replicas: int) -> tuple[float, float]:
    """Coverage of 95% theta intervals of the default fit on ``simulate_2pl`` data (truth:
    the generating abilities standardised), one data set per replica; mean and MC se."""
    from latentbench.synthetic import simulate_2pl

    covered = []
    for k in range(replicas):
        data = simulate_2pl(n_models, n_items, random_state=k)
        theta = data.theta.ravel()
        truth = (theta - theta.mean()) / theta.std()
        ab = TwoPL().fit(data.matrix).standard_errors().abilities
        covered.append(float(np.mean((ab["lower"] <= truth) & (truth <= ab["upper"]))))
    cov = np.asarray(covered)
    return float(cov.mean()), float(cov.std(ddof=1) / np.sqrt(cov.size))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", help="matrix name (repeatable)")
    parser.add_argument("--replicas", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--no-coverage", action="store_true")
    parser.add_argument(
        "--score-only", action="store_true", help="only the score_models coverage, per matrix"
    )
    parser.add_argument(
        "--synthetic",
        action="append",
        default=[],
        help="also synthetic coverage at NxJ (repeatable, e.g. 300x300, 2211x1324)",
    )
    parser.add_argument(
        "--count-detached",
        action="store_true",
        help="with the --score-only replicas' draws: count the detached models per replica",
    )
    parser.add_argument("--skip-real", action="store_true", help="only the --synthetic runs")
    parser.add_argument(
        "--coverage-a-sd",
        type=float,
        action="append",
        default=[],
        help="diagnostic: also theta coverage with the prior's a_sd fixed at this value (no "
        "held-out choice), for truth and replicas (repeatable)",
    )
    parser.add_argument("--data", type=Path, default=SHARED, help="folder of the matrices")
    parser.add_argument(
        "--start", type=int, default=0, help="--score-only: first replica (chunks of a run)"
    )
    parser.add_argument(
        "--per-replica", action="store_true", help="--score-only: print every replica"
    )
    parser.add_argument(
        "--own-only",
        action="store_true",
        help="--score-only: only the calibration half's own theta coverage (no score_models)",
    )
    parser.add_argument(
        "--item-bootstrap",
        type=int,
        default=None,
        help="replicates of the random-item fit's item bootstrap (0: off; default: the "
        "library's, latentbench.irt._fitted.ITEM_BOOTSTRAP)",
    )
    parser.add_argument(
        "--item-bootstrap-max-cells",
        type=int,
        default=None,
        help="diagnostic: run the item bootstrap on fits of up to this many cells, reference "
        "models x items (default: the library's, latentbench.irt._fitted."
        "ITEM_BOOTSTRAP_MAX_CELLS)",
    )
    parser.add_argument(
        "--model-jackknife-max-cells",
        type=int,
        default=None,
        help="diagnostic: run score_models' model jackknife on calibrations of up to this many "
        "cells, reference models x items (default: the library's, latentbench.irt._fitted."
        "MODEL_JACKKNIFE_MAX_CELLS)",
    )
    parser.add_argument(
        "--bootstrap-scores-max-cells",
        type=int,
        default=None,
        help="diagnostic: score_models carries the calibration's item bootstrap to new models "
        "on calibrations of up to this many cells (default: the library's, "
        "latentbench.irt._fitted.BOOTSTRAP_SCORES_MAX_CELLS)",
    )
    parser.add_argument(
        "--paired-without",
        action="store_true",
        help="--score-only: per replica also score_models without the bootstrap's replicate "
        "scores and the model jackknife (same calibration)",
    )
    parser.add_argument(
        "--paired-variants",
        action="store_true",
        help="--score-only: per replica also score_models with the bootstrap's replicate "
        "scores only and with the model jackknife only (same calibration)",
    )
    parser.add_argument(
        "--compare-reference",
        action="store_true",
        help="--score-only: per replica also score_models by the per-model reference loops "
        "(largest difference, coverage flips)",
    )
    parser.add_argument(
        "--model-jackknife",
        type=int,
        default=None,
        help="score_models: 0 leaves out the jackknife over the calibration's models, 1 adds "
        "it (default: the library's, latentbench.irt._fitted.MODEL_JACKKNIFE)",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from latentbench.irt import _fitted

    if args.model_jackknife is not None:
        _fitted.MODEL_JACKKNIFE = bool(args.model_jackknife)
    if args.item_bootstrap is not None:
        _fitted.ITEM_BOOTSTRAP = args.item_bootstrap
    from bench_item_bootstrap_cost import set_cell_limits

    set_cell_limits(args)
    for size in args.synthetic:
        n, j = (int(v) for v in size.split("x"))
        start = time.perf_counter()
        cov, cov_se = synthetic_coverage(n, j, args.replicas)
        print(
            f"synthetic {n} x {j}: theta 95% coverage ({args.replicas} data sets) "
            f"{cov:.3f} +/- {cov_se:.3f} ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )
    for name in [] if args.skip_real else (args.only or NAMES):
        path = args.data / f"{name}.parquet"
        if not path.exists():
            print(f"{name}: not found at {path}")
            continue
        matrix = ResponseMatrix.read(path)
        start = time.perf_counter()
        if args.count_detached:
            print(f"{name}: detached models in the calibrate-half / score-half replicas")
            count_detached(matrix, args.replicas, args.start)
            continue
        if args.score_only:
            cov, cov_se, se, rmse = score_coverage(
                matrix,
                args.replicas,
                args.start,
                args.per_replica,
                args.own_only,
                args.paired_without,
                args.compare_reference,
                args.paired_variants,
            )
            if args.own_only:
                print(f"{name}: ({time.perf_counter() - start:.0f} s)", flush=True)
                continue
            print(
                f"{name}: score_models 95% coverage, calibrate half / score half "
                f"({args.replicas} replicas): {cov:.3f} +/- {cov_se:.3f}, mean se {se:.3f}, "
                f"RMSE {rmse:.3f} ({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
            continue
        h = heldout(matrix, list(range(args.seeds)))
        mean = {k: float(np.mean(v)) for k, v in h.items()}
        best = min(mean["default"], mean["marginal_ml"], mean["lognormal_map"])
        print(f"\n{name}: {matrix.n_models} x {matrix.n_items}")
        print(
            f"  held-out log-loss ({args.seeds} seeds): default {mean['default']:.4f}  "
            f"additive {mean['additive']:.4f}  joint ML {mean['joint_ml']:.4f}  "
            f"marginal ML {mean['marginal_ml']:.4f}  MAP lognormal-a {mean['lognormal_map']:.4f}  "
            f"(default - best {mean['default'] - best:+.4f})"
        )
        print(
            f"  per seed default {np.round(h['default'], 4).tolist()} additive "
            f"{np.round(h['additive'], 4).tolist()}"
        )
        print(
            f"  Brier default {mean['brier_d']:.4f} additive {mean['brier_a']:.4f}; "
            f"AUC default {mean['auc_d']:.4f} additive {mean['auc_a']:.4f}"
        )
        rel_t, rel_f, rel_a = split_half(matrix, list(range(5)))
        verdict = "meets" if rel_t >= rel_a - 0.005 else "BELOW"
        print(
            f"  split-half reliability (5 seeds): theta {rel_t:.4f} (fit's MAP {rel_f:.4f})  "
            f"accuracy {rel_a:.4f}: {verdict} accuracy - 0.005"
        )
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
            for a_sd in args.coverage_a_sd:
                cov, cov_se, width, rmse = coverage(
                    matrix, args.replicas, TwoPL(prior=Prior(a_sd=a_sd))
                )
                print(
                    f"  diagnostic, a_sd fixed at {a_sd}: theta 95% coverage ({args.replicas} "
                    f"replicas) {cov:.3f} +/- {cov_se:.3f}, mean width {width:.3f}, RMSE {rmse:.3f}"
                )
            cov, cov_se, se, rmse = score_coverage(
                matrix, args.replicas, args.start, args.per_replica
            )
            print(
                f"  score_models 95% coverage, calibrate half / score half ({args.replicas} "
                f"replicas): {cov:.3f} +/- {cov_se:.3f}, mean se {se:.3f}, RMSE {rmse:.3f}"
            )
        print(f"  ({time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
