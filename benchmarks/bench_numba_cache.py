"""Whether a numba kernel gives the same bits freshly compiled and loaded from its cache.

Runs one small sparse cBMM fit (60 x 2000, half the cells missing, 1-3 plain sweeps) twice in
fresh subprocesses sharing an empty ``NUMBA_CACHE_DIR``: the first compiles the kernels, the
second loads them. Prints the largest difference of the fitted parameters per sweep count and,
with ``--speed``, the seconds of 30 sweeps (rank 1 and 3, sparse and dense) on 2000 x 5000 at
70 % missing, for the current fastmath flags.

    python benchmarks/bench_numba_cache.py [--speed]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

FIT = """
import sys, numpy as np
from latentbench.synthetic import simulate_2pl
from latentbench.irt._sparse import fit_sparse
from latentbench.io._cells import ObservedCells
cells = ObservedCells.from_dense(simulate_2pl(60, 2000, missing=0.5, random_state=1).matrix.scores)
out = []
for it in (1, 2, 3):
    f = fit_sparse(cells, rank=1, tol=1e-14, max_iter=it, accelerate=False)
    out.append(np.concatenate([f.U.ravel(), f.V.ravel(), f.b.ravel()]))
np.save(sys.argv[1], np.array(out))
"""

SPEED = """
import os, time
os.environ["LATENTBENCH_NUMPY_MAX_CELLS"] = "0"
from latentbench.synthetic import simulate_2pl
from latentbench.irt import fit_cbmm
from latentbench.irt._sparse import fit_sparse
from latentbench.io._cells import ObservedCells
scores = simulate_2pl(2000, 5000, missing=0.7, random_state=1).matrix.scores
cells = ObservedCells.from_dense(scores)
fit_sparse(cells, rank=1, tol=1e-14, max_iter=2, accelerate=False)
fit_cbmm(scores, tol=1e-14, max_iter=2)
for rep in range(3):
    t = time.perf_counter(); fit_sparse(cells, rank=1, tol=1e-14, max_iter=30, accelerate=False)
    s1 = time.perf_counter() - t
    t = time.perf_counter(); fit_sparse(cells, rank=3, tol=1e-14, max_iter=30, accelerate=False)
    s3 = time.perf_counter() - t
    t = time.perf_counter(); fit_cbmm(scores, tol=1e-14, max_iter=30, accelerate=False)
    d1 = time.perf_counter() - t
    print(f"30 sweeps: sparse rank 1 {s1:.2f} s, rank 3 {s3:.2f} s, dense rank 1 {d1:.2f} s")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", action="store_true")
    args = parser.parse_args()
    from latentbench.irt._sparse_kernels import _FASTMATH_ORDERED

    print(f"fastmath flags of the sparse sweep kernels: {sorted(_FASTMATH_ORDERED)}")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(tmp) / "cache"))
        runs = {}
        for name in ("compiled", "cached"):
            path = Path(tmp) / f"{name}.npy"
            subprocess.run([sys.executable, "-W", "ignore", "-c", FIT, str(path)], env=env,
                           check=True)  # fmt: skip
            runs[name] = np.load(path)
        for k, (a, b) in enumerate(zip(runs["compiled"], runs["cached"], strict=True)):
            print(f"{k + 1} sweep(s): identical {np.array_equal(a, b)}, "
                  f"largest difference {np.abs(a - b).max():.2e}")  # fmt: skip
        if args.speed:
            subprocess.run([sys.executable, "-W", "ignore", "-c", SPEED], env=env, check=True)


if __name__ == "__main__":
    main()
