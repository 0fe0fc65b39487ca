"""Leave-one-model-out check of ``latentbench tiny --precision``: predicted against realised
half-width.

For a handful of held-out models of a shared matrix (spread over the accuracy range), the
other models calibrate (a response matrix, fitted at rank 1), :func:`latentbench.select.tiny`
with ``precision=H`` chooses ``k`` from the calibration models' own answers (in-sample), and
the held-out model is scored on that design with :func:`latentbench.estimate` ``items=`` (the
public path of ``latentbench estimate --items``): its realised half-width is set against the
predicted median and 90th percentile. Also prints the seconds ``tiny(precision=)`` took.

Run::

    nice python benchmarks/bench_tiny_precision.py bfcl_v2 --precision 0.03 --held-out 5
    nice python benchmarks/bench_tiny_precision.py mmlu_pro --precision 0.03 --time-only
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from latentbench import ResponseMatrix
from latentbench.select import estimate, tiny


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("matrix", help="name in /work/shared/data (e.g. bfcl_v2, mmlu_pro)")
    parser.add_argument("--precision", type=float, default=0.03)
    parser.add_argument("--held-out", type=int, default=5)
    parser.add_argument("--data", default="/work/shared/data")
    parser.add_argument(
        "--time-only", action="store_true", help="time tiny(precision=) on the whole matrix"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    full = ResponseMatrix.read(f"{args.data}/{args.matrix}.parquet")
    if args.time_only:
        t0 = time.perf_counter()
        tiny(full, k=1)  # the fit, timed apart
        fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        design = tiny(full, precision=args.precision)
        row = design.iloc[0]
        print(
            f"{args.matrix}: precision {args.precision}: k = {len(design)}, median "
            f"{row['predicted_half_width']:.4f}, p90 {row['predicted_half_width_p90']:.4f} over "
            f"{row['predicted_models']} models; {time.perf_counter() - t0:.1f} s (fit {fit:.1f} s)"
        )
        return
    Y = np.asarray(full.scores, dtype=np.float64)
    complete = np.flatnonzero(np.isfinite(Y).all(axis=1))
    acc = np.nanmean(Y[complete], axis=1)
    ranked = complete[np.argsort(acc, kind="stable")]
    picks = ranked[np.linspace(0, ranked.size - 1, args.held_out).round().astype(int)]
    print(f"{args.matrix}: precision {args.precision}, {len(picks)} held-out models")
    print("model | k | predicted median | predicted p90 | realised | seconds")
    realised, predicted = [], []
    for i in picks.tolist():
        name = str(full.model_ids[i])
        cal = full.subset(models=[m for m in full.model_ids if m != full.model_ids[i]])
        t0 = time.perf_counter()
        design = tiny(cal, precision=args.precision, cache=False)
        seconds = time.perf_counter() - t0
        res = estimate(cal, full.subset(models=[full.model_ids[i]]), model=name, items=design,
                       cache=False)  # fmt: skip
        half = (res.upper - res.lower) / 2.0
        med = float(design["predicted_half_width"].iloc[0])
        p90 = float(design["predicted_half_width_p90"].iloc[0])
        realised.append(half)
        predicted.append(med)
        print(f"{name} | {len(design)} | {med:.4f} | {p90:.4f} | {half:.4f} | {seconds:.1f}")
    r, p = np.asarray(realised), np.asarray(predicted)
    print(
        f"realised / predicted median: mean {np.mean(r / p):.3f}, range "
        f"[{np.min(r / p):.3f}, {np.max(r / p):.3f}]; realised <= precision in "
        f"{int((r <= args.precision * (1 + 1e-9)).sum())} of {r.size}"
    )


if __name__ == "__main__":
    main()
