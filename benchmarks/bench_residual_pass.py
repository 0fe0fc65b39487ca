"""Time of the plain-NumPy residual pass (every sweep of a fit of at most ``NUMPY_MAX_CELLS``
cells), and of the parametric bootstrap of the README's BFCL matrix that repeats it.

Prints the median milliseconds of one pass at BFCL's size (70 x 1700, dense), at the demo's
(200 x 1000) and with 20% of the cells missing, then the CPU and wall seconds of
``result.bootstrap(matrix, n_boot=N)`` with one worker. Compare two trees by running it with
each first on the path (on a loaded machine the CPU column is the one to compare)::

    PYTHONPATH=src python benchmarks/bench_residual_pass.py
    PYTHONPATH=/old/tree/src python benchmarks/bench_residual_pass.py --n-boot 40
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path

import numpy as np
from _timing import median_seconds

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200, help="Passes per size.")
    parser.add_argument("--n-boot", type=int, default=40, help="Bootstrap replicates (0: none).")
    args = parser.parse_args()

    from latentbench.irt import _kernels as k

    rng = np.random.default_rng(0)
    for n, m, missing in ((70, 1700, 0.0), (200, 1000, 0.0), (200, 1000, 0.2)):
        Y = (rng.random((n, m)) < 0.6).astype(np.float32)
        Y[rng.random((n, m)) < missing] = np.nan
        U, V, b = rng.normal(size=(n, 1)), rng.normal(size=(m, 1)), rng.normal(size=m)
        R = np.empty((n, m), dtype=np.float32)
        seconds = median_seconds(partial(k.residual_pass, Y, U, V, b, 1.0, R), args.repeats)
        print(f"pass {n} x {m}, {missing:.0%} missing: {1e3 * seconds:.2f} ms")

    if args.n_boot and (SHARED / "bfcl_v2.parquet").exists():
        import pandas as pd

        from latentbench import ResponseMatrix, TwoPL

        long = pd.read_parquet(SHARED / "bfcl_v2.parquet")
        first = sorted(long["model"].unique())[0]  # the README's matrix: all but one model
        matrix = ResponseMatrix.from_long(long[long["model"] != first])
        result = TwoPL().fit(matrix)
        cpu, wall = time.process_time(), time.perf_counter()
        result.bootstrap(matrix, n_boot=args.n_boot, random_state=0)
        print(
            f"bootstrap of BFCL {matrix.scores.shape}, n_boot={args.n_boot}, 1 worker: "
            f"{time.process_time() - cpu:.2f} s CPU, {time.perf_counter() - wall:.2f} s wall"
        )


if __name__ == "__main__":
    main()
