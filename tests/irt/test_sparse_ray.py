"""A sparse cBMM sweep distributed with Ray: item blocks and model blocks as remote tasks.

Items are independent given the model factors and models are independent given the items,
so one sweep is two rounds of independent tasks over blocks of the observed cells (column
blocks, then row blocks). This runs that on a one-CPU local Ray cluster and checks that it
reproduces the single-process sweep. Skipped when the ``ray`` extra is not installed.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from latentbench.io._cells import ObservedCells
from latentbench.irt._sparse import fit_sparse, update_items, update_models

ray = pytest.importorskip("ray")


def _blocks(ptr: np.ndarray, n_blocks: int) -> list[tuple[int, int]]:
    edges = np.linspace(0, ptr.size - 1, n_blocks + 1).astype(int)
    return list(itertools.pairwise(int(e) for e in edges))


def _slice(ptr, index, values, lo, hi):
    start, stop = ptr[lo], ptr[hi]
    return ptr[lo : hi + 1] - start, index[start:stop], values[start:stop]


@pytest.mark.filterwarnings("ignore::latentbench.exceptions.ConvergenceWarning")
def test_ray_sweep_matches_single_process() -> None:
    rng = np.random.default_rng(0)
    Y = (rng.random((60, 90)) < 0.6).astype(np.float32)
    Y[rng.random(Y.shape) < 0.8] = np.nan
    cells = ObservedCells.from_dense(Y)
    start = fit_sparse(cells, max_iter=2, accelerate=False, rebalance=False)
    U0, V0, b0 = start.U, start.V, start.b
    reference = fit_sparse(cells, init=(U0, V0, b0), max_iter=1, accelerate=False, rebalance=False)

    ray.init(num_cpus=1, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        items_task = ray.remote(update_items)
        models_task = ray.remote(update_models)
        U_ref = ray.put(U0)  # shared by every item block
        futures = [
            items_task.remote(
                *_slice(cells.col_ptr, cells.col_rows, cells.col_values, lo, hi),
                U_ref,
                V0[lo:hi],
                b0[lo:hi],
            )
            for lo, hi in _blocks(cells.col_ptr, 3)
        ]
        parts = ray.get(futures)
        V1 = np.concatenate([p[0] for p in parts])
        b1 = np.concatenate([p[1] for p in parts])
        shared = [ray.put(x) for x in (V0, b0, V1, b1)]
        futures = [
            models_task.remote(
                *_slice(cells.row_ptr, cells.row_cols, cells.row_values, lo, hi),
                U0[lo:hi],
                *shared,
            )
            for lo, hi in _blocks(cells.row_ptr, 2)
        ]
        parts = ray.get(futures)
    finally:
        ray.shutdown()
    U1 = np.concatenate([p[0] for p in parts])
    loss = float(np.concatenate([p[1] for p in parts]).sum())
    np.testing.assert_allclose(V1, reference.V, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b1, reference.b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(U1, reference.U, rtol=1e-12, atol=1e-12)
    assert loss == pytest.approx(reference.neg_log_likelihood, rel=1e-12)
