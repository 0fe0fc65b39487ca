"""The PyTorch backend gives the NumPy path's estimates (CPU tensors; skipped without torch)."""

from __future__ import annotations

import numpy as np
import pytest

from latentbench import InputError, TwoPL
from latentbench.irt import fit_cbmm
from latentbench.synthetic import simulate_2pl, simulate_low_rank

torch = pytest.importorskip("torch", reason="PyTorch (extra 'torch') is not installed")


def test_rank1_estimates_match_numpy_path():
    data = simulate_2pl(400, 150, missing=0.2, random_state=1)
    ours = TwoPL(tol=1e-10, max_iter=20000).fit(data.matrix)
    on_torch = TwoPL(tol=1e-10, max_iter=20000, device="cpu").fit(data.matrix)
    assert ours.converged and on_torch.converged
    np.testing.assert_allclose(on_torch.theta, ours.theta, atol=1e-5)
    np.testing.assert_allclose(on_torch.discrimination, ours.discrimination, atol=1e-5)
    np.testing.assert_allclose(on_torch.b, ours.b, atol=1e-5)


def test_rank2_iterates_match_numpy_path():
    data = simulate_low_rank(150, 80, rank=2, missing=0.1, random_state=2)
    kwargs = {"rank": 2, "max_iter": 40, "accelerate": False}
    with pytest.warns(Warning):
        ours = fit_cbmm(data.matrix.scores, **kwargs)
    with pytest.warns(Warning):
        on_torch = fit_cbmm(data.matrix.scores, device="cpu", **kwargs)
    X_ours = ours.U @ ours.V.T + ours.b
    X_torch = on_torch.U @ on_torch.V.T + on_torch.b
    np.testing.assert_allclose(X_torch, X_ours, atol=1e-5)
    np.testing.assert_allclose(on_torch.loss_history, ours.loss_history, rtol=1e-6)


def test_unknown_device_is_a_clear_error():
    data = simulate_2pl(20, 10, random_state=0)
    with pytest.raises(InputError, match="device='nonsense'"):
        fit_cbmm(data.matrix.scores, device="nonsense")
