"""History-free PULSE (``OnlineProxy``) falls back to the plain mean when its proxy is useless."""

from __future__ import annotations

import numpy as np
import pytest

from latentbench.select import MatrixOracle, Pulse, run_selection
from latentbench.select._online import OnlineProxy
from latentbench.select._pulse import _out_of_sample_lambda, _out_of_sample_ratio


class _PlainMeans(Pulse):
    """PULSE that also keeps the plain mean of every arm's revealed cells after each round."""

    def end_round(self, state, arm):
        super().end_round(state, arm)
        self.plain = state.y_sum / state.n_obs
        self.n_obs = state.n_obs.copy()


def _iid_matrix(seed: int = 0) -> np.ndarray:
    """12 models x 400 items without item structure: what one model gets right says nothing
    about another, so predictions learned from the other models' cells are useless."""
    rng = np.random.default_rng(seed)
    return (rng.random((12, 400)) < np.linspace(0.45, 0.6, 12)[:, None]).astype(np.float32)


def test_useless_online_proxy_gives_the_plain_mean():
    """Without item structure the online proxy's out-of-sample slope is noise; PULSE then
    gives it weight 0 and every estimate is exactly the plain mean of the arm's cells (what
    UCB-E uses). Before the out-of-sample shrinkage and weights, the clipped noisy slope and
    the model's own predicted variance gain moved 55 % of these estimates off the plain mean
    (MSE up to 1.32 times the plain mean's in a run)."""
    Y = _iid_matrix()
    for s in range(4):
        pol = _PlainMeans()
        res = run_selection(
            MatrixOracle(Y), pol, budget=2000, batch_size=16, init_batch=16,
            proxy=OnlineProxy(random_state=0), random_state=s,
        )  # fmt: skip
        active = pol.n_obs < Y.shape[1]
        np.testing.assert_allclose(res.estimates[active], pol.plain[active], rtol=0, atol=1e-12)
        assert np.mean(np.array(pol.lam_history) == 0.0) > 0.9


@pytest.mark.parametrize("history", [False, True])
def test_rounds_without_the_proxy_telescope_to_the_plain_mean(history):
    """With lam = 0 the precision weights of the Horvitz-Thompson rounds are
    ``1/N_{k+1} - 1/N_k`` up to one factor, and the weighted average is exactly the sample mean
    of all revealed cells, with a history or without."""
    from latentbench.select import LowRankProxy

    Y = _iid_matrix(1)
    proxy = LowRankProxy(rank=1, random_state=0).fit(_iid_matrix(2)) if history else OnlineProxy()
    pol = _PlainMeans(lam="zero")
    res = run_selection(
        MatrixOracle(Y), pol, budget=1500, batch_size=16, init_batch=16, proxy=proxy,
        random_state=0,
    )  # fmt: skip
    np.testing.assert_allclose(res.estimates, pol.plain, rtol=0, atol=1e-12)


def _sums(f: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-arm sums of f, y, f^2, f y, count, y^2 (the policy's out-of-sample record)."""
    return np.stack(
        [f.sum(1), y.sum(1), (f * f).sum(1), (f * y).sum(1), np.full(len(f), f.shape[1]),
         (y * y).sum(1)], axis=1,
    )  # fmt: skip


def test_out_of_sample_lambda_and_ratio():
    rng = np.random.default_rng(3)
    f = rng.random((4, 500))
    noise = rng.normal(0.0, 0.3, f.shape)
    # no relation: weight 0, ratio exactly 1 (a plain round's weight)
    useless = _sums(f, rng.normal(0.0, 0.3, f.shape))
    assert _out_of_sample_lambda(useless) == 0.0
    assert _out_of_sample_ratio(useless, 0.0) == 1.0
    # a real slope of 0.6: weight near it, shrunk by its noise; variance ratio as measured
    y = 0.6 * f + noise
    sums = _sums(f, y)
    lam = _out_of_sample_lambda(sums)
    slope = _out_of_sample_lambda(sums[:, :5])  # without y^2: the unshrunk pooled slope
    assert 0.5 < lam < slope < 0.7
    fc = f - f.mean(1, keepdims=True)
    yc = y - y.mean(1, keepdims=True)
    expected = ((yc - lam * fc) ** 2).sum() / (yc**2).sum()
    assert _out_of_sample_ratio(sums, lam) == pytest.approx(expected)
    assert _out_of_sample_ratio(np.zeros((3, 6)), 0.7) == 1.0  # no cells yet
