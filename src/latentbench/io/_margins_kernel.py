"""The parallel kernel of :func:`latentbench.io._margins.dense_margins`, for matrices of
:data:`~latentbench.io._margins.KERNEL_MIN_CELLS` cells or more.

A module of its own, imported by ``dense_margins`` when a matrix is that large: importing
numba costs about 0.3 s of CPU, and ``import latentbench.io`` (the start of ``ls``,
``ingest`` and ``export``) took it for this kernel alone.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from latentbench._numba_cache import CACHE

__all__: list[str] = []


@numba.njit(parallel=True, cache=CACHE)
def _margins_kernel(values: Any, blocks: int) -> Any:  # pragma: no cover - jit
    n, m = values.shape
    row_count = np.zeros(n, dtype=np.int64)
    row_sum = np.zeros(n)
    col_count = np.zeros((blocks, m), dtype=np.int64)
    col_sum = np.zeros((blocks, m))
    for block in numba.prange(blocks):
        for i in range((block * n) // blocks, ((block + 1) * n) // blocks):
            count = 0
            total = 0.0
            for j in range(m):
                v = values[i, j]
                if not np.isnan(v):
                    count += 1
                    total += v
                    col_count[block, j] += 1
                    col_sum[block, j] += v
            row_count[i] = count
            row_sum[i] = total
    return row_count, row_sum, col_count.sum(axis=0), col_sum.sum(axis=0)
