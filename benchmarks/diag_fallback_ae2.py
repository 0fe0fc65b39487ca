"""Diagnosis of issue 28's AlpacaEval 2 replica 1 (joint Laplace fallback covering 0.621).

Uses the draws of ``bench_heldout.py --score-only`` (same seeds, same calibration half) and,
for the calibration half's own theta intervals, compares the library's default with
candidate fallbacks prototyped here (no library default is changed):

- ``default``: ``standard_errors()`` as shipped;
- ``laplace``: the MAP theta +- z joint Laplace se (the current fallback);
- ``ri+boot``: the random-item theta +- z max(law-fixed se, item-bootstrap sd), the checks
  ignored (the default where they pass);
- ``ri_lapse``: the random-item theta +- z Laplace se;
- ``span``: the union of ``laplace`` and ``ri+boot``;
- ``lap_gap``: the MAP theta +- z sqrt(se_laplace^2 + (theta_ri - theta_map)^2).

Detached models (outside the random-item fit) keep the default's interval in every
candidate. Usage::

    python benchmarks/diag_fallback_ae2.py --replicas 1 0 2 3 4 --detail 1
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
from bench_heldout import _half_replicas, on_reference_scale

from latentbench import ResponseMatrix, TwoPL
from latentbench.irt import inference as inf
from latentbench.irt._fitted import random_items_fit

Z = 1.959963984540054


def candidates(calibration: object, Y: np.ndarray) -> tuple[dict, dict]:
    """The candidate intervals ``{name: (lower, upper)}`` and the per-model quantities."""
    se_out = calibration.standard_errors()
    ab = se_out.abilities
    law = random_items_fit(calibration)  # cached by standard_errors
    scores, _ = inf._observed(calibration, None)
    var_lap = np.diag(inf.laplace_of(calibration, scores).covariance()) / inf.trials_of(calibration)
    se_lap = np.sqrt(np.maximum(var_lap, 0.0))
    ref = inf.reference_of(calibration)
    t_map = calibration.U[:, 0]
    t_ri = law.theta
    boot = law.boot_sd if law.n_boot > 1 else np.full(t_ri.size, np.nan)
    s_ri = np.fmax(law.se, boot)
    d_lo, d_hi = ab["lower"].to_numpy(), ab["upper"].to_numpy()
    out = {"default": (d_lo, d_hi)}

    def put(name: str, lo: np.ndarray, hi: np.ndarray) -> None:
        out[name] = (np.where(ref, lo, d_lo), np.where(ref, hi, d_hi))

    put("laplace", t_map - Z * se_lap, t_map + Z * se_lap)
    put("ri+boot", t_ri - Z * s_ri, t_ri + Z * s_ri)
    put("ri_lapse", t_ri - Z * se_lap, t_ri + Z * se_lap)
    put(
        "span",
        np.minimum(t_map - Z * se_lap, t_ri - Z * s_ri),
        np.maximum(t_map + Z * se_lap, t_ri + Z * s_ri),
    )
    wide = np.sqrt(se_lap**2 + (t_ri - t_map) ** 2)
    put("lap_gap", t_map - Z * wide, t_map + Z * wide)
    info = {
        "method": se_out.method,
        "fallback": se_out.fallback,
        "checks": se_out.checks,
        "t_map": t_map,
        "se_lap": se_lap,
        "t_ri": t_ri,
        "se_ri": law.se,
        "boot_sd": boot,
        "ref": ref,
        "law": law,
    }
    return out, info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    parser.add_argument("--name", default="alpacaeval2_weighted")
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 0, 2, 3, 4])
    parser.add_argument(
        "--stress",
        default=None,
        help="NxJ: instead of --name, bench_coverage.stress_matrix('stress', N, J, seed "
        "--stress-seed) (replicas and halves drawn as for the real matrices)",
    )
    parser.add_argument("--stress-seed", type=int, default=0)
    parser.add_argument("--detail", type=int, nargs="*", default=[1])
    parser.add_argument(
        "--score-models", action="store_true", help="also score_models' coverage of the other half"
    )
    parser.add_argument(
        "--drop-disagreement",
        action="store_true",
        help="prototype: the disagreement check never triggers the fallback (the random-item "
        "+ item bootstrap intervals and score_models path kept; patched here, not in src/)",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.drop_disagreement:
        original = inf.check

        def check(*a: object, **kw: object) -> object:
            out = original(*a, **kw)
            out.reasons = [r for r in out.reasons if "disagree" not in r]
            return out

        inf.check = check
    if args.stress:
        from bench_coverage import stress_matrix

        n, j = (int(v) for v in args.stress.split("x"))
        matrix = stress_matrix("stress", n, j, args.stress_seed)
    else:
        matrix = ResponseMatrix.read(args.data / f"{args.name}.parquet")
    fit = TwoPL().fit(matrix)
    p = fit.predict_proba()
    truth = fit.U[:, 0]
    ids = np.array(matrix.model_ids)
    summary: dict[str, list[tuple[float, float]]] = {}
    for want in args.replicas:
        for k, Y, cal, new in _half_replicas(matrix, p, want, 1):
            calibration = TwoPL().fit(ResponseMatrix(Y[cal], list(ids[cal]), matrix.item_ids))
            ints, info = candidates(calibration, Y[cal])
            t = on_reference_scale(truth[cal], calibration)
            c = info["checks"] or {}
            law = info["law"]
            b_edge = float(law.weights[law.grid_b == law.grid_b.min()].sum())
            gaps = np.abs(info["t_ri"] - info["t_map"]) / np.hypot(info["se_ri"], info["se_lap"])
            gap_id = ids[cal][int(np.nanargmax(np.where(info["ref"], gaps, np.nan)))]
            print(
                f"replica {k}: {len(cal)} x {matrix.n_items}, method {info['method']!r}, "
                f"disagreement {c.get('disagreement', float('nan')):.2f}, edge_mass "
                f"{c.get('edge_mass', float('nan')):.3f} (grid top {c.get('grid_top', 0):.3g}),"
                f" converged {c.get('converged')}, detached {int((~info['ref']).sum())}, "
                f"law weight at b's lowest grid point {b_edge:.3f}, largest gap {gap_id}",
                flush=True,
            )
            if args.score_models:
                scored = calibration.score_models(
                    ResponseMatrix(Y[new], list(ids[new]), matrix.item_ids)
                )
                target = on_reference_scale(truth[cal], calibration, truth[new])
                inside = (scored["lower"] <= target) & (target <= scored["upper"])
                print(
                    f"  score_models coverage {float(np.mean(inside)):.3f}  mean width "
                    f"{float(np.mean(scored['upper'] - scored['lower'])):.3f}"
                )
            base = np.mean(ints["default"][1] - ints["default"][0])
            for name, (lo, hi) in ints.items():
                cov = float(np.mean((lo <= t) & (t <= hi)))
                w = float(np.mean(hi - lo))
                print(f"  {name:9s} coverage {cov:.3f}  mean width {w:.3f} ({w / base:.2f}x)")
                summary.setdefault(name, []).append((cov, w / base))
            if k in args.detail:
                print(
                    "  model                              truth    map  se_lap  z_map"
                    "     ri  se_ri   boot   z_ri    gap   mean"
                )
                obs = ~np.isnan(Y[cal])
                mean = np.where(obs, Y[cal], 0.0).sum(axis=1) / obs.sum(axis=1)
                order = np.argsort(t)
                for i in order:
                    s_ri = np.fmax(info["se_ri"][i], info["boot_sd"][i])
                    gap = abs(info["t_ri"][i] - info["t_map"][i]) / np.hypot(
                        info["se_ri"][i], info["se_lap"][i]
                    )
                    z_map = (info["t_map"][i] - t[i]) / info["se_lap"][i]
                    print(
                        f"  {ids[cal][i][:32]:32s} {t[i]:7.3f} {info['t_map'][i]:6.3f} "
                        f"{info['se_lap'][i]:6.3f} {z_map:6.2f} "
                        f"{info['t_ri'][i]:6.3f} {info['se_ri'][i]:6.3f} {info['boot_sd'][i]:6.3f} "
                        f"{(info['t_ri'][i] - t[i]) / s_ri:6.2f} {gap:6.2f} {mean[i]:6.3f}"
                        f"{'' if info['ref'][i] else '  detached'}"
                    )
                law = info["law"]
                w = law.weights
                edges = w[np.isin(law.grid_b, [law.grid_b.min(), law.grid_b.max()])].sum()
                top = np.argsort(w)[::-1][:5]
                print(
                    f"  item law: {w.size} grid points, n_iter {law.n_iter}, converged "
                    f"{law.converged}, grid a {law.grid_a.min():.2f}..{law.grid_a.max():.2f}, b "
                    f"{law.grid_b.min():.2f}..{law.grid_b.max():.2f}, weight at b's grid edges "
                    f"{edges:.3f}; top-5 support (a, b, weight): "
                    + ", ".join(
                        f"({law.grid_a[g]:.2f}, {law.grid_b[g]:.2f}, {w[g]:.3f})" for g in top
                    )
                )
                ref = info["ref"]
                shift = (info["t_ri"] - info["t_map"])[ref]
                corr = np.corrcoef(shift, info["t_map"][ref])[0, 1]
                ratio = np.std(info["t_ri"][ref]) / np.std(info["t_map"][ref])
                print(
                    f"  corr(ri - map, map) over reference models: {corr:.3f}; sd ri / sd map: "
                    f"{ratio:.3f}"
                )
    print(f"summary over replicas {args.replicas}: coverage mean (min), width / default's")
    for name, rows in summary.items():
        a = np.asarray(rows)
        print(
            f"  {name:9s} coverage {a[:, 0].mean():.3f} (min {a[:, 0].min():.3f})  width ratio "
            f"mean {a[:, 1].mean():.2f} (range {a[:, 1].min():.2f}-{a[:, 1].max():.2f})"
        )


if __name__ == "__main__":
    main()
