"""Same input, same result, on any number of threads: the dense cBMM passes and the matrix
margins. (Compiled in the process or loaded from numba's cache they agree too: checked with
fresh processes sharing an empty NUMBA_CACHE_DIR, `latentbench fit` on the shared matrices at
ranks 1-3 and with 20% of the cells missing, docs/performance.md; not a test, since a cold
compile of these kernels costs ~10 s of CPU.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import latentbench

_SCRIPT = """
import warnings
import numba
import numpy as np
import latentbench.io._margins as margins
from latentbench.irt import _kernels, fit_cbmm

warnings.simplefilter("ignore")  # three sweeps: a ConvergenceWarning, as meant
margins.KERNEL_MIN_CELLS = 0  # the kernel, not the NumPy path, on a small matrix


def outputs():
    rng = np.random.default_rng(0)
    Y = (rng.random((40, 300)) < 0.6).astype(np.float32)
    Y[rng.random(Y.shape) < 0.2] = np.nan
    out = []
    for r in (1, 2):
        U, V, b = rng.normal(size=(40, r)), rng.uniform(0, 1, (300, r)), rng.normal(size=300)
        R = np.empty_like(Y)
        loss, atr = _kernels.residual_pass(Y, U, V, b, 1.3, R)
        fit = fit_cbmm(Y, rank=r, max_iter=3, tol=1e-14)
        out += [np.array([loss, fit.loss]), atr.ravel(), R.ravel(), fit.U.ravel(), fit.b]
    # a column of one 1 and 2^-53s: its float sum depends on how the rows are split in blocks
    tiny = np.full((64, 3), 2.0**-53, dtype=np.float32)
    tiny[0] = 1.0
    m = margins.dense_margins(tiny)
    return np.concatenate(out + [m.row_sum, m.col_sum]).tobytes().hex()


for threads in (1, 2):
    numba.set_num_threads(threads)
    print(threads, outputs())
"""


def test_dense_passes_and_margins_give_the_same_bits_on_any_thread_count():
    """The dense passes' loss was the sum of its row blocks' parts inside the parallel kernel
    (``parts.sum()``), which numba turns into a reduction over its threads: MMLU-Pro's rank-2
    fit.json read loss 142146.52305858152 on 2 threads, 142146.5230585815 on 1. The margins'
    kernel split the rows into four blocks per thread, so a column's float sum depended on
    the thread count. A process with two numba threads (the suite's workers have one) runs
    the numba passes, forced on a small matrix, on 1 thread and on 2; numba's own cache, as
    the suite's other processes use."""
    # the package this process imported (an installed copy in CI, src/ in a checkout): its
    # kernels, and their numba cache that the suite's fits filled (src/'s was cold in CI: a
    # 13-15 s compile in this test alone)
    package = Path(latentbench.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(package), "NUMBA_NUM_THREADS": "2"}
    env["LATENTBENCH_NUMPY_MAX_CELLS"] = "0"
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr
    (one, on_one), (two, on_two) = (line.split() for line in done.stdout.splitlines())
    assert (one, two) == ("1", "2")
    assert on_one == on_two, "2 threads and 1 give other bits"
