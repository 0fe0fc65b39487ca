"""PULSE's estimate of the initial batch: the history's prior prediction for identification.

``Pulse(init_estimate=None)`` (the default) uses the doubly robust estimate with the
population prior's prediction on the initial batch when it identifies with a history, and the
batch's sample mean in the certified configuration, history-free and without a proxy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from latentbench.select import LowRankProxy, MatrixOracle, OnlineProxy, Pulse, run_selection

from .conftest import HostileProxy, lowrank_data


@pytest.fixture(scope="module")
def problem():
    Y, *_ = lowrank_data(6, 160, r=2, seed=4)
    history, *_ = lowrank_data(30, 160, r=2, seed=5)
    return Y.astype(np.float64), LowRankProxy(rank=2, random_state=0).fit(history)


@pytest.mark.parametrize(
    "options, proxy_kind, expected",
    [
        ({}, "history", "prior"),
        ({"bonus": "effective"}, "history", "prior"),
        ({"bonus": "ci"}, "history", "mean"),
        ({}, "online", "mean"),
        ({"init_estimate": "mean"}, "history", "mean"),
        ({"init_estimate": "prior", "bonus": "ci"}, "history", "prior"),
    ],
)
def test_the_default_depends_on_the_job(problem, options, proxy_kind, expected):
    Y, proxy = problem
    online = proxy_kind == "online"
    pol = Pulse(**options)
    out = run_selection(
        MatrixOracle(Y),
        pol,
        budget=64,
        proxy=OnlineProxy(rank=1, random_state=0) if online else proxy,
        random_state=0,
    )
    assert pol.init_estimate_used == expected == out.params["init_estimate"]


class _PriorProxy(HostileProxy):
    """A hostile proxy whose prior prediction varies over items and is anti-correlated with
    the truth (the prior-corrected initial estimate must stay unbiased whatever it is)."""

    def prior_prediction(self) -> np.ndarray:
        j = np.arange(self.n_items)
        return np.clip(1.0 - self.Y[0] + 0.3 * np.sin(j), 0.0, 1.0)


def test_the_prior_corrected_initial_estimate_is_unbiased():
    """E[z_1] = mu over random initial batches of 8 of 120 items, with a prior prediction
    that is as wrong as possible (the estimate's error must be noise: < 4 Monte Carlo SEs);
    and it is not the plain mean (the correction is applied)."""
    Y, *_ = lowrank_data(2, 120, r=1, seed=5)
    Y = Y.astype(np.float64)
    mu = Y.mean(axis=1)
    proxy = _PriorProxy(Y)
    reps = 1500
    z = np.empty((reps, 2))
    plain = np.empty(reps)
    for s in range(reps):
        pol = Pulse(init_estimate="prior", a=0.0)
        out = run_selection(
            MatrixOracle(Y), pol, budget=0, init_batch=8, proxy=proxy, random_state=s
        )
        z[s] = [pol.z_history[0][0], pol.z_history[1][0]]
        assert out.params["init_estimate"] == "prior"
        plain[s] = np.nanmean(pol._state.values[0])  # the initial batch's sample mean
    se = z.std(axis=0, ddof=1) / math.sqrt(reps)
    assert np.all(np.abs(z.mean(axis=0) - mu) < 4 * se)
    assert not np.allclose(z[:, 0], plain)
