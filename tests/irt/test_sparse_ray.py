"""A sparse cBMM sweep split into blocks: item blocks, then model blocks, as independent tasks.

Items are independent given the model factors, so one sweep is a round of tasks over column
blocks of the observed cells (each returns its items' new parameters and its share of every
model's problem), then a round over row blocks that solves the models from the summed shares.
This checks that the split reproduces the single-process sweep, in process and on a one-CPU
local Ray cluster (the latter skipped when the ``ray`` extra is not installed).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from latentbench.io._cells import ObservedCells
from latentbench.irt import update_items, update_models  # the public names docs/sparse.md gives
from latentbench.irt._sparse import fit_sparse


def _blocks(n: int, n_blocks: int) -> list[tuple[int, int]]:
    edges = np.linspace(0, n, n_blocks + 1).astype(int)
    return list(itertools.pairwise(int(e) for e in edges))


def _columns(cells: ObservedCells, lo: int, hi: int) -> tuple[np.ndarray, ...]:
    start, stop = cells.col_ptr[lo], cells.col_ptr[hi]
    return (
        cells.col_ptr[lo : hi + 1] - start,
        cells.col_rows[start:stop],
        cells.col_values[start:stop],
    )


def _block_sweep(
    cells: ObservedCells,
    start: tuple[np.ndarray, np.ndarray, np.ndarray],
    submit: Callable[..., Any],
    gather: Callable[[list[Any]], list[Any]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """One sweep as 3 item-block tasks and 2 model-block tasks; returns (U1, V1, b1, nll0)."""
    U0, V0, b0 = start
    n, m = cells.shape
    parts = gather(
        [
            submit(update_items, *_columns(cells, lo, hi), U0, V0[lo:hi], b0[lo:hi])
            for lo, hi in _blocks(m, 3)
        ]
    )
    V1 = np.concatenate([p[0] for p in parts])
    b1 = np.concatenate([p[1] for p in parts])
    stats = sum(p[2] for p in parts)
    loss = sum(p[3] for p in parts)
    rows = gather([submit(update_models, stats[lo:hi], U0[lo:hi]) for lo, hi in _blocks(n, 2)])
    return np.concatenate(rows), V1, b1, float(loss)


@pytest.fixture(scope="module")
def sweep_case() -> tuple[ObservedCells, tuple[np.ndarray, ...], Any, float]:
    rng = np.random.default_rng(0)
    Y = (rng.random((60, 90)) < 0.6).astype(np.float32)
    Y[rng.random(Y.shape) < 0.8] = np.nan
    cells = ObservedCells.from_dense(Y)
    with pytest.warns(Warning):
        start = fit_sparse(cells, max_iter=2, accelerate=False, rebalance=False)
        x0 = (start.U, start.V, start.b)
        at_start = fit_sparse(cells, init=x0, max_iter=0)
    reference = fit_sparse(cells, init=x0, max_iter=1, accelerate=False, rebalance=False, tol=1.0)
    return cells, x0, reference, at_start.neg_log_likelihood


def _check(result: tuple[np.ndarray, np.ndarray, np.ndarray, float], reference: Any, nll0: float):
    U1, V1, b1, loss = result
    np.testing.assert_allclose(V1, reference.V, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b1, reference.b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(U1, reference.U, rtol=1e-12, atol=1e-12)
    assert loss == pytest.approx(nll0, rel=1e-12)


def test_block_sweep_matches_single_process(sweep_case) -> None:
    cells, x0, reference, nll0 = sweep_case
    _check(_block_sweep(cells, x0, lambda f, *a: f(*a), list), reference, nll0)


def test_ray_sweep_matches_single_process(sweep_case) -> None:
    ray = pytest.importorskip("ray")
    cells, x0, reference, nll0 = sweep_case
    ray.init(num_cpus=1, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        tasks = {f: ray.remote(f) for f in (update_items, update_models)}
        U_shared = ray.put(x0[0])  # shared by every item block

        def submit(f: Callable[..., Any], *args: Any) -> Any:
            args = tuple(U_shared if a is x0[0] else a for a in args)
            return tasks[f].remote(*args)

        result = _block_sweep(cells, x0, submit, ray.get)
    finally:
        ray.shutdown()
    _check(result, reference, nll0)


def test_the_fit_and_a_block_sweep_share_one_compiled_pass(sweep_case) -> None:
    """Numba compiles a kernel once per signature, and an array's read-only flag is part of
    it: the sparse fit passes its cells read-only (an ObservedCells') and its point writable;
    a block sweep passed the caller's arrays as they were (the test's pointers writable, a
    result's factors read-only), so a process that ran both compiled the cell pass again (~9
    s each on a cold cache). Now a block sweep reaches the fit's signature whatever its
    caller holds: no signature added, and the items' update is the fit's bit for bit."""
    from latentbench.irt import _sparse_kernels as kernels

    cells, x0, reference, _ = sweep_case
    passes = len(kernels.column_pass.signatures)
    frozen = [a.copy() for a in x0]
    for a in frozen:
        a.flags.writeable = False
    for point in (x0, frozen):  # writable, then read-only, as callers hold them
        _, V1, b1, _ = _block_sweep(cells, point, lambda f, *a: f(*a), list)
        np.testing.assert_array_equal(V1, reference.V)
        np.testing.assert_array_equal(b1, reference.b)
    assert len(kernels.column_pass.signatures) == passes


def test_model_blocks_and_cell_predictions_compile_one_signature(sweep_case) -> None:
    """The same for the model solve and the cell predictions: a block sweep from a result's
    read-only factors passed them to ``solve_models`` as they were (the fit's are writable),
    and ``predict_cells`` got a result's read-only factors from ``IRTResult`` and a caller's
    writable ones otherwise: each compiled twice in a process that saw both (parallel kernels,
    seconds on a cold cache). Both now reach one signature, with the same numbers."""
    from latentbench.irt import _sparse_kernels as kernels
    from latentbench.irt._sparse import predict_cells

    cells, x0, reference, _ = sweep_case
    frozen = [a.copy() for a in x0]
    for a in frozen:
        a.flags.writeable = False
    rows, cols = np.nonzero(np.ones(cells.shape, bool))
    outputs = []
    for point in (x0, frozen):  # writable, then read-only, as callers hold them
        U1, _, _, _ = _block_sweep(cells, point, lambda f, *a: f(*a), list)
        outputs.append((U1, predict_cells(*point, rows, cols)))
    for a, c in zip(*outputs, strict=True):
        np.testing.assert_array_equal(a, c)
    np.testing.assert_allclose(outputs[0][0], reference.U, rtol=1e-12, atol=1e-12)
    assert all(sig[1].mutable for sig in kernels.solve_models.signatures)  # the fit's U
    assert all(
        not any(sig[k].mutable for k in (2, 3, 4)) for sig in kernels.predict_cells.signatures
    )
