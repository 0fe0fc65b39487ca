"""The plain-NumPy residual pass of small matrices (``_kernels._residual_pass_numpy``).

Every sweep of a fit of at most ``NUMPY_MAX_CELLS`` cells runs it (the demo, the shared
matrices but MMLU-Pro, a bootstrap's refits). It writes its operations into a few buffers;
these tests hold it to the formula it computes (bit for bit) and to its buffers.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from latentbench.irt import _kernels as k
from latentbench.irt._objective import softplus


def _formula(Y, U, V, b, inv_sigma):
    """The pass as the formula reads, one new array per operation."""
    T, observed, y, p = k._numpy_cells(Y, U, V, b, inv_sigma)
    residual = np.where(observed, y - p, 0.0)
    loss = float(np.sum((softplus(T) - y * T)[observed]))
    return loss, np.vstack([U.T @ residual, residual.sum(axis=0)]), residual.astype(np.float32)


def _cells(n, m, r, missing, seed):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, m)) < 0.6).astype(np.float32)
    if seed % 2:  # soft labels
        Y = rng.random((n, m)).astype(np.float32)
    Y[rng.random((n, m)) < missing] = np.nan
    scale = rng.uniform(0.1, 20.0)  # logits from near 0 to far past exp's range
    return Y, rng.normal(size=(n, r)) * scale, rng.normal(size=(m, r)), rng.normal(size=m) * 3


@pytest.mark.parametrize("missing", [0.0, 0.2, 1.0])
def test_the_numpy_pass_is_its_formula_bit_for_bit(missing):
    """Loss, ``A^T R`` and the residuals equal the formula's to the last bit: dense, with
    missing cells, and with none observed; hard labels and soft; rank 1 to 3."""
    for seed, (n, m, r) in enumerate([(70, 170, 1), (13, 29, 2), (1, 1, 1), (40, 7, 3)]):
        Y, U, V, b = _cells(n, m, r, missing, seed)
        inv_sigma = 1.0 / (0.7 + 0.3 * seed)
        R = np.full((n, m), 7.0, dtype=np.float32)
        loss, atr = k._residual_pass_numpy(Y, U, V, b, inv_sigma, R)
        want_loss, want_atr, want_R = _formula(Y, U, V, b, inv_sigma)
        assert np.float64(loss).tobytes() == np.float64(want_loss).tobytes(), (loss, want_loss)
        assert atr.dtype == want_atr.dtype and atr.shape == want_atr.shape
        assert atr.tobytes() == want_atr.tobytes()
        assert R.tobytes() == want_R.tobytes()


@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_the_numpy_pass_works_in_a_few_buffers(missing):
    """At most about five (N, J) float64 arrays live at once (the logits, the labels, two
    work buffers and, with missing cells, the observed losses), where one new array per
    operation peaked at 6.6: each sweep of a small fit allocated and wrote ~15 arrays, about
    twice the time of the pass (``benchmarks/bench_residual_pass.py``)."""
    n, m = 70, 1700  # BFCL's size
    Y, U, V, b = _cells(n, m, 1, missing, 0)
    R = np.empty((n, m), dtype=np.float32)
    k.residual_pass(Y, U, V, b, 1.0, R)  # imports and first-call caches left out
    tracemalloc.start()
    try:
        k.residual_pass(Y, U, V, b, 1.0, R)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak / (n * m * 8) < 5.5, peak / (n * m * 8)
