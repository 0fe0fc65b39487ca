"""``compare --items`` against two separate ``estimate --items`` intervals on real matrices.

Two held-out models of a shared matrix both answer the items of one ``latentbench tiny``
design (k items, the design's seed varied); the other models calibrate (a rank-1 fit, once).
For each design: does ``compare(items=)`` certify which is higher, are the two models'
``estimate(items=)`` 95% intervals apart (the weaker test a user may try instead), and does
the comparison's interval hold the true full-benchmark difference?

Run (about 1-3 minutes per pair on a 2-core machine)::

    python benchmarks/bench_compare_design.py mmlu_pro Meta-Llama-3-8B \
        Meta-Llama-3_1-8B-Instruct --k 300 --designs 200
    python benchmarks/bench_compare_design.py bfcl_v2 gpt-4-0613 \
        claude-3-5-sonnet-20240620 --k 100 --designs 200
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import pandas as pd

from latentbench.io import ResponseMatrix
from latentbench.select import compare, estimate, load_calibration, tiny


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("matrix", help="a shared matrix's stem, e.g. mmlu_pro")
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--designs", type=int, default=200)
    parser.add_argument("--data", default="/work/shared/data")
    args = parser.parse_args()
    t0 = time.perf_counter()
    cells = pd.read_parquet(f"{args.data}/{args.matrix}.parquet")
    cells["model"], cells["item"] = cells["model"].astype(str), cells["item"].astype(str)
    cal = load_calibration(ResponseMatrix.from_long(cells[~cells["model"].isin([args.a, args.b])]))
    ya, yb = (cells[cells["model"] == m].set_index("item")["score"].rename(m)
              for m in (args.a, args.b))  # fmt: skip
    truth = float(ya.mean() - yb.mean())
    certified = apart = covered = 0
    for seed in range(args.designs):
        design = tiny(cal, k=args.k, seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = compare(cal, ya, yb, model_a=args.a, model_b=args.b, items=design)
            ea, eb = estimate(cal, ya, items=design), estimate(cal, yb, items=design)
        certified += r.higher is not None
        apart += ea.lower > eb.upper or eb.lower > ea.upper
        covered += r.lower <= truth <= r.upper
    n = args.designs
    cover = covered / n
    print(
        f"{args.matrix}: {args.a} - {args.b} = {truth:+.3f} over {cal.n_items:,} items; "
        f"k = {args.k}, {n} designs: compare certified {certified} ({certified / n:.2f}), "
        f"the two estimate intervals apart {apart} ({apart / n:.2f}); compare's interval "
        f"held the difference in {cover:.3f} (MC SE {math.sqrt(0.95 * 0.05 / n):.3f} at "
        f"0.95); {time.perf_counter() - t0:.0f} s"
    )


if __name__ == "__main__":
    main()
