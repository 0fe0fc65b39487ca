"""Stated levels of the analysis outputs, measured by seeded simulation from the 2PL.

For each shape (models x items) and seed: ``simulate_2pl`` (the null holds: the data are
2PL), a fraction of the items replaced by random answers (a = 0, for the level of the
``uninformative`` test), the default fit, and every flag that states a level:

- ``item_fit`` ``poor_fit`` (BH q <= 0.05; every item fits, so any flag is false: the
  family-wise rate of a BH procedure under the global null is its FDR level, 0.05), and the
  per-item rate of ``p_value <= 0.05``;
- ``uninformative_items``: rate of ``p_value <= 0.05`` among the a = 0 items (one-sided test
  of a = 0 at 0.05);
- rank intervals (the report's: normal draws around the reported abilities): per-model
  coverage of the true rank (95%);
- ``tied_with_next`` among the top 10: share of the pairs called separated whose true order is
  reversed (a one-sided 2.5% test whose direction the estimate picks: <= 5%), and the share of
  matrices with any such pair;
- the report's leader line: share of matrices where the leader is called "statistically
  separated from the rest" but is not the true best (<= 5%);
- ``rank_changes`` ``significant``: share of models flagged among those whose accuracy rank
  equals their true rank (a flag there is false; <= 5% when rank intervals cover);
- ability intervals: coverage of the standardised true abilities (95%);
- ``duplicate_items`` ``duplicate``: share of matrices with any pair flagged (no pair is a
  duplicate: family-wise level 0.05).

Monte Carlo se: binomial over seeds for per-matrix rates; for per-unit rates the spread across
seeds (units within a matrix are correlated), never below the binomial one.

Run: ``nice -n 5 python benchmarks/diag_levels.py --shapes 20x200 30x400 70x1000 --seeds 100``
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from scipy.special import expit

from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL, reported_abilities
from latentbench.irt._reported import measured_models
from latentbench.irt.diagnostics import (
    duplicate_items,
    item_fit,
    rank_changes,
    uninformative_items,
)
from latentbench.irt.inference import normal_draws, rank_intervals, standard_errors
from latentbench.synthetic import simulate_2pl

ZERO_A_SHARE = 0.1


def one(n_models: int, n_items: int, seed: int, missing: float) -> dict[str, float]:
    data = simulate_2pl(n_models, n_items, missing=missing, random_state=seed)
    rng = np.random.default_rng(10_000 + seed)
    scores = np.array(data.matrix.scores, dtype=float, copy=True)
    n_zero = max(1, int(ZERO_A_SHARE * n_items))
    zero = np.arange(n_zero)
    rates = expit(rng.normal(size=n_zero))
    random_answers = (rng.random((n_models, n_zero)) < rates).astype(float)
    scores[:, zero] = np.where(np.isnan(scores[:, zero]), np.nan, random_answers)
    matrix = ResponseMatrix(scores, data.matrix.model_ids, data.matrix.item_ids)
    result = TwoPL().fit(matrix)
    theta_true = data.theta.ravel()
    true_rank = (-theta_true).argsort().argsort() + 1
    out: dict[str, float] = {}
    keep = np.ones(n_items, dtype=bool)
    keep[zero] = False
    const = np.zeros(n_items, dtype=bool)
    const[matrix.constant_items()] = True
    fit = item_fit(result, matrix)
    fit_ok = keep & ~const
    out["poor_fit_any"] = float(fit["poor_fit"].to_numpy()[fit_ok].any())
    out["fit_p05"] = float(np.mean(fit["p_value"].to_numpy()[fit_ok] <= 0.05))
    info = uninformative_items(result, matrix)
    zero_ok = ~keep & ~const
    out["uninf_p05_zero_a"] = float(np.mean(info["p_value"].to_numpy()[zero_ok] <= 0.05))
    unc = standard_errors(result, matrix)
    # the reported table is sorted by rank: back to the matrix's model order
    ab = reported_abilities(result, unc).set_index("model").loc[list(matrix.model_ids)]
    ab = ab.reset_index()
    th = ab["theta"].to_numpy(float)
    draws = normal_draws(th, ab["se"].to_numpy(float), 2000, 0)
    ranks = rank_intervals(draws, ab["model"].tolist(), estimate=th, measured=measured_models(ab))
    lo, hi = ranks["rank_lower"].to_numpy(float), ranks["rank_upper"].to_numpy(float)
    out["rank_cover"] = float(np.mean((lo <= true_rank) & (true_rank <= hi)))
    order = np.argsort(ranks["rank"].to_numpy(float))
    top = order[:10]
    sep_pairs = rev = 0
    for i, k in itertools.pairwise(top):
        if not ranks["tied_with_next"].iloc[i]:
            sep_pairs += 1
            rev += theta_true[i] < theta_true[k]
    out["sep_pairs"] = float(sep_pairs)
    out["sep_reversed"] = float(rev)
    out["any_sep_reversed"] = float(rev > 0)
    leader = order[0]
    separated = (hi[leader] <= 1) and not ((lo <= 1) & (np.arange(n_models) != leader)).any()
    out["leader_sep"] = float(separated)
    out["leader_sep_wrong"] = float(separated and true_rank[leader] != 1)
    moves = rank_changes(result, matrix).set_index("model").loc[ab["model"]]
    same = moves["rank_accuracy"].to_numpy(float) == true_rank
    sig = moves["significant"].to_numpy(bool)
    out["sig_same_n"] = float(same.sum())
    out["sig_same_flagged"] = float((sig & same).sum())
    truth = (theta_true - theta_true.mean()) / theta_true.std()
    out["theta_cover"] = float(np.mean((ab["lower"] <= truth) & (truth <= ab["upper"])))
    out["dup_any"] = float(duplicate_items(result, matrix)["duplicate"].any())
    return out


def se_units(values: np.ndarray, p: float, units: int) -> float:
    binomial = np.sqrt(max(p * (1 - p), 1e-12) / (units * len(values)))
    return float(max(values.std(ddof=1) / np.sqrt(len(values)), binomial))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", nargs="+", default=["20x200", "30x400", "70x1000"])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--missing", type=float, default=0.0)
    args = parser.parse_args()
    for shape in args.shapes:
        n_models, n_items = (int(x) for x in shape.split("x"))
        t0 = time.perf_counter()
        rows = [one(n_models, n_items, s, args.missing) for s in range(args.seeds)]
        r = {k: np.array([row[k] for row in rows]) for k in rows[0]}
        n = args.seeds
        print(f"## {shape} missing={args.missing} seeds={n} ({time.perf_counter() - t0:.0f}s)")

        def rate(name: str, stated: str, x: np.ndarray, units: int = 1) -> None:
            m = float(x.mean())
            se = se_units(x, m, units) if units > 1 else np.sqrt(max(m * (1 - m), 1e-12) / len(x))
            print(f"| {name} | {stated} | {m:.3f} | {se:.3f} |")

        rate("poor_fit: any item flagged (BH 0.05, global null)", "<= 0.05", r["poor_fit_any"])
        rate("item_fit p <= 0.05, per item", "0.05", r["fit_p05"], n_items)
        rate(
            "uninformative: p <= 0.05 at a = 0",
            "<= 0.05",
            r["uninf_p05_zero_a"],
            max(1, int(ZERO_A_SHARE * n_items)),
        )
        rate("rank interval covers the true rank", "0.95", r["rank_cover"], n_models)
        pairs = r["sep_pairs"].sum()
        m = r["sep_reversed"].sum() / max(pairs, 1)
        print(
            f"| separated top-10 pair reversed (of {int(pairs)}) | <= 0.05 | {m:.3f} | "
            f"{np.sqrt(max(m * (1 - m), 1e-12) / max(pairs, 1)):.3f} |"
        )
        rate("matrix with a reversed separated top-10 pair", "-", r["any_sep_reversed"])
        rate("leader called separated", "-", r["leader_sep"])
        rate("leader called separated, not the true best", "<= 0.05", r["leader_sep_wrong"])
        same = r["sig_same_n"].sum()
        m = r["sig_same_flagged"].sum() / max(same, 1)
        print(
            f"| rank shift 'significant' where accuracy rank = true rank (of {int(same)}) "
            f"| <= 0.05 | {m:.3f} | {np.sqrt(max(m * (1 - m), 1e-12) / max(same, 1)):.3f} |"
        )
        rate("ability interval covers true theta", "0.95", r["theta_cover"], n_models)
        rate("near-duplicate: any pair flagged (none is)", "<= 0.05", r["dup_any"])


if __name__ == "__main__":
    main()
