"""Leave-one-model-out check of ``latentbench tiny --precision``: predicted against realised
half-width.

For a handful of held-out models of a shared matrix (spread over the accuracy range), the
other models calibrate (a response matrix, fitted at rank 1), :func:`latentbench.select.tiny`
with ``precision=H`` chooses ``k`` from the calibration models' own answers (in-sample), and
the held-out model is scored on that design with :func:`latentbench.estimate` ``items=`` (the
public path of ``latentbench estimate --items``): its realised half-width is set against the
predicted median and 90th percentile. Also prints the seconds ``tiny(precision=)`` took.

With ``--weights W.csv`` (``item`` and ``weight``, or ``item`` and ``group``) or
``--macro-by COLUMN`` (the macro score over an item metadata column of the shared matrix,
``<matrix>_items.parquet``, e.g. BFCL's ``category``), the same runs for the weighted target:
``tiny(precision=, weights=)`` sizes the design, the held-out model is scored with
``estimate(items=, weights=)``, and each line also says whether the interval covered the
held-out model's true weighted score (its answers on every item, weighted; computed here from
the table, not by the package).

Run::

    nice python benchmarks/bench_tiny_precision.py bfcl_v2 --precision 0.03 --held-out 5
    nice python benchmarks/bench_tiny_precision.py mmlu_pro --precision 0.03 --time-only
    nice python benchmarks/bench_tiny_precision.py bfcl_v2 --precision 0.03 --held-out 5 \
        --macro-by category
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

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
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--weights", help="a weights CSV/Parquet (item + weight, or item + group): weighted target"
    )
    target.add_argument(
        "--macro-by",
        metavar="COLUMN",
        help="macro target over this column of <matrix>_items.parquet (e.g. category)",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    full = ResponseMatrix.read(f"{args.data}/{args.matrix}.parquet")
    weights = _weights(args, full)
    w = None if weights is None else _normalised(weights, full)
    if args.time_only:
        t0 = time.perf_counter()
        tiny(full, k=1)  # the fit, timed apart
        fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        design = tiny(full, precision=args.precision, weights=weights)
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
    what = "" if weights is None else f", target {_describe(args, weights)}"
    print(f"{args.matrix}: precision {args.precision}, {len(picks)} held-out models{what}")
    print(
        "model | k | predicted median | predicted p90 | realised | seconds"
        + ("" if w is None else " | true score | interval | covered")
    )
    realised, predicted, covered = [], [], []
    p90s: list[float] = []
    for i in picks.tolist():
        name = str(full.model_ids[i])
        cal = full.subset(models=[m for m in full.model_ids if m != full.model_ids[i]])
        t0 = time.perf_counter()
        design = tiny(cal, precision=args.precision, cache=False, weights=weights)
        seconds = time.perf_counter() - t0
        res = estimate(cal, full.subset(models=[full.model_ids[i]]), model=name, items=design,
                       cache=False, weights=weights)  # fmt: skip
        half = (res.upper - res.lower) / 2.0
        med = float(design["predicted_half_width"].iloc[0])
        p90 = float(design["predicted_half_width_p90"].iloc[0])
        realised.append(half)
        predicted.append(med)
        p90s.append(p90)
        line = f"{name} | {len(design)} | {med:.4f} | {p90:.4f} | {half:.4f} | {seconds:.1f}"
        if w is not None:
            truth = float(w @ Y[i])
            hit = bool(res.lower <= truth <= res.upper)
            covered.append(hit)
            line += f" | {truth:.4f} | [{res.lower:.4f}, {res.upper:.4f}] | {hit}"
        print(line, flush=True)
    r, p = np.asarray(realised), np.asarray(predicted)
    print(
        f"realised / predicted median: mean {np.mean(r / p):.3f}, range "
        f"[{np.min(r / p):.3f}, {np.max(r / p):.3f}]; realised <= precision in "
        f"{int((r <= args.precision * (1 + 1e-9)).sum())} of {r.size}; realised <= "
        f"predicted p90 in {int((r <= np.asarray(p90s) * (1 + 1e-9)).sum())} of {r.size}"
        + ("" if w is None else f"; the interval covered the true score in {sum(covered)}")
    )


def _weights(args: argparse.Namespace, full: ResponseMatrix) -> pd.DataFrame | None:
    """The weights table (``item`` + ``weight`` or ``group``) the options ask for, or None."""
    if args.weights is not None:
        path = str(args.weights)
        return pd.read_parquet(path) if path.endswith(".parquet") else pd.read_csv(path)
    if args.macro_by is None:
        return None
    meta = pd.read_parquet(f"{args.data}/{args.matrix}_items.parquet")
    if args.macro_by not in meta.columns:
        raise SystemExit(
            f"{args.data}/{args.matrix}_items.parquet: no column {args.macro_by!r}; "
            f"expected one of {sorted(map(str, meta.columns))}"
        )
    table = meta[["item", args.macro_by]].rename(columns={args.macro_by: "group"})
    table["group"] = table["group"].astype(str)
    return table[table["item"].isin(list(full.item_ids))].reset_index(drop=True)


def _normalised(weights: pd.DataFrame, full: ResponseMatrix) -> np.ndarray:
    """Item weights summing to 1 in ``full``'s item order (macro: each group 1/G, split evenly)."""
    table = weights.set_index(weights["item"].astype(str))
    if "group" in table.columns:
        group = table["group"].astype(str)
        raw = 1.0 / group.map(group.value_counts()).astype(float)
    else:
        raw = table["weight"].astype(float)
    vec = raw.reindex([str(m) for m in full.item_ids]).to_numpy(dtype=np.float64)
    if not np.isfinite(vec).all():
        raise SystemExit("the weights table does not list every item of the matrix")
    return vec / vec.sum()


def _describe(args: argparse.Namespace, weights: pd.DataFrame) -> str:
    """``macro over 12 groups (category)`` or ``weighted (W.csv)``."""
    if "group" in weights.columns:
        where = args.macro_by if args.macro_by is not None else args.weights
        return f"macro over {weights['group'].nunique()} groups ({where})"
    return f"weighted ({args.weights})"


if __name__ == "__main__":
    main()
