"""synthetic.leaderboard_like: the demo's leaderboard keeps its calibrated structure."""

from __future__ import annotations

import numpy as np
import pytest

from latentbench.exceptions import InputError
from latentbench.synthetic import leaderboard_like


def _stats(Y: np.ndarray) -> dict[str, float]:
    Y = Y.astype(np.float64)
    Z = Y - Y.mean(axis=1, keepdims=True) - Y.mean(axis=0, keepdims=True) + Y.mean()
    ev = np.sort(np.linalg.eigvalsh(Z @ Z.T))[::-1]
    return {
        "sd_model": float(Y.mean(axis=1).std()),
        "p_item": float(Y.mean()),
        "top1": float(ev[0] / ev.sum()),
        "top2_5": float(ev[1:5].sum() / ev.sum()),
    }


def test_binary_seeded_and_shaped():
    a = leaderboard_like(30, 400, random_state=3)
    assert a.shape == (30, 400) and a.dtype == np.float32
    assert set(np.unique(a)) <= {0.0, 1.0}
    np.testing.assert_array_equal(a, leaderboard_like(30, 400, random_state=3))
    assert not np.array_equal(a, leaderboard_like(30, 400, random_state=4))


@pytest.mark.parametrize("seed", [1, 2])
def test_structure_matches_the_calibration_targets(seed):
    # targets: mean of BFCL and MMLU-Pro (docs/selection.md, "The demo's leaderboard");
    # tolerances cover the seed-to-seed spread at 50 x 2,000 (and would fail for a
    # rank-1 generator, whose 2nd-5th component share is near the noise floor)
    st = _stats(leaderboard_like(50, 2000, random_state=seed))
    assert st["sd_model"] == pytest.approx(0.145, abs=0.05)
    assert st["p_item"] == pytest.approx(0.574, abs=0.06)
    assert st["top1"] == pytest.approx(0.121, abs=0.06)
    assert st["top2_5"] == pytest.approx(0.199, abs=0.05)


def test_rejects_tiny_shapes():
    with pytest.raises(InputError, match="at least 2 models and 2 items"):
        leaderboard_like(1, 10)
