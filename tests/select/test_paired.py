"""The paired certificate: coverage of its bounds under adaptive pulls with one shared
order, its wrong-certificate rate inside PULSE, its levels, and its fallback without a
shared order."""

from __future__ import annotations

import math

import numpy as np
import pytest

from latentbench.exceptions import InputError
from latentbench.select import LowRankProxy, MatrixOracle, Pulse, run_selection
from latentbench.select._paired import PairedCertificate, plausible_levels
from latentbench.select._state import Observation, SelectionState

from .conftest import lowrank_data


def _correlated(n: int, p: np.ndarray, rho: float, seed: int) -> np.ndarray:
    """Binary rows with means about ``p`` whose items share a difficulty (correlated rows)."""
    rng = np.random.default_rng(seed)
    common = rng.random(n)
    own = rng.random((p.size, n))
    u = np.where(rng.random((p.size, n)) < rho, common[None, :], own)
    return (u < p[:, None]).astype(np.float32)


@pytest.mark.slow
@pytest.mark.parametrize("plausible", [False, True])
def test_paired_bounds_against_the_true_best_hold(plausible):
    """The events the paired certificate rests on: every lower bound on ``mu_j - mu_best``
    (j != best) holds at all times in >= 1 - delta of the runs (delta = 0.3), with pulls
    chosen LUCB-style from the paired bounds themselves (the leader and its weakest rival,
    the one with fewer cells), one shared order per run; even levels, and levels set from an
    8-cell start (the pairs then bet from the ninth item on). A grid of 500 candidates (the
    default's 5,000 is slow here; any grid is valid)."""
    n, delta, reps = 200, 0.3, 150
    Y = _correlated(n, np.array([0.52, 0.5, 0.5, 0.48, 0.45]), 0.6, 4)
    m = Y.shape[0]
    mu = Y.mean(axis=1, dtype=np.float64)
    best = int(np.argmax(mu))
    held = 0
    for rep in range(reps):
        state = SelectionState(m, n, np.random.default_rng(rep), shared_order=True)
        for arm in range(m):
            items = state.uniform_items(arm, 8)
            state.record(Observation(arm, items, Y[arm, items]), initial=True)
        levels = plausible_levels(state.values[:, state.order[0, :8]], delta)
        cert = (
            PairedCertificate(m, n, delta, levels=levels, start=8, grid=500)
            if plausible
            else PairedCertificate(m, n, delta, grid=500)
        )
        ok = True
        for _round in range(50):
            means = state.y_sum / state.n_obs
            leader = int(np.argmax(means))
            rival = int(np.argmin(cert.lower(state, leader)))
            arm = rival if state.n_obs[rival] < state.n_obs[leader] else leader
            if state.n_obs[arm] >= n:
                arm = rival if arm == leader else leader
            if state.n_obs[arm] >= n:
                break
            items = state.uniform_items(arm, 8)
            state.record(Observation(arm, items, Y[arm, items]))
            for j in range(m):  # the lower bounds on mu_j - mu_best
                if j != best:
                    ok &= bool(cert.bound(state, j, best) <= mu[j] - mu[best] + 1e-12)
        held += ok
    assert held / reps >= 1 - delta - 3 * math.sqrt(delta * (1 - delta) / reps)


@pytest.mark.slow
@pytest.mark.parametrize("options", [{}, {"paired_levels": "uniform"}])
def test_paired_certificate_is_wrong_at_most_delta(options, monkeypatch):
    """PULSE with the paired certificate on close, correlated arms (about 0.6 / 0.58 / 0.56
    / 0.5 on 200 items), delta = 0.3: a certified arm other than the true best in at most
    delta of the runs (Monte-Carlo tolerance). A grid of 1,000 (any grid is valid; the
    default's 5,000 is slow here)."""
    monkeypatch.setattr("latentbench.select._paired.PAIRED_GRID", 1000)
    _, U, V, b = lowrank_data(10, 200, r=2, seed=11)
    proxy = LowRankProxy.from_factors(V, b, U_history=U)
    Y = _correlated(200, np.array([0.6, 0.58, 0.56, 0.5]), 0.5, 3)
    best = int(np.argmax(Y.mean(axis=1, dtype=np.float64)))
    delta, reps = 0.3, 60
    wrong = certified = 0
    for s in range(reps):
        res = run_selection(
            MatrixOracle(Y),
            Pulse(delta=delta, bonus="ci", refit_every=5, certificate="paired", **options),
            budget=Y.size,
            batch_size=16,
            init_batch=8,
            proxy=proxy,
            random_state=s,
            stop="confidence",
        )
        assert res.difference_lower is not None
        certified += bool(res.certified)
        wrong += bool(res.certified and res.best != best)
    assert certified == reps
    assert wrong / reps <= delta + 3 * math.sqrt(delta * (1 - delta) / reps)


def test_plausible_levels_sum_to_delta_against_every_arm():
    """For every arm ``i`` the levels of the bounds "``j`` beats ``i``" sum to delta, a
    plausible leader gets more than the even split, and no level falls below delta / 2m."""
    rng = np.random.default_rng(0)
    initial = (rng.random((6, 16)) < np.array([0.9, 0.85, 0.3, 0.2, 0.2, 0.1])[:, None]) * 1.0
    levels = plausible_levels(initial, 0.05)
    off = ~np.eye(6, dtype=bool)
    np.testing.assert_allclose(np.where(off, levels, 0).sum(axis=0), 0.05)
    assert levels[0, 2] > 0.05 / 5 and levels[off].min() >= 0.05 / 12
    same = plausible_levels(np.ones((3, 8)), 0.1)  # identical starts: an even split
    np.testing.assert_allclose(same[~np.eye(3, dtype=bool)], 0.05)
    with pytest.raises(InputError, match="sum to more than delta"):
        PairedCertificate(3, 10, 0.1, levels=np.full((3, 3), 0.06))


def test_without_a_shared_order_pulse_falls_back_to_the_per_arm_certificate():
    """An order per arm shares no items: ``certificate="paired"`` then certifies with the
    per-arm bounds (no paired bounds recorded); with the shared order the certificate, the
    recorded paired bounds and the report's finding agree."""
    Y, U, V, b = lowrank_data(6, 200, r=2, seed=2)
    proxy = LowRankProxy.from_factors(V, b, U_history=U)
    kw = {"init_batch": 16, "proxy": proxy, "random_state": 0, "stop": "confidence"}
    own = run_selection(
        MatrixOracle(Y), Pulse(bonus="ci", certificate="paired"), item_order="independent", **kw
    )
    assert own.difference_lower is None and own.certified is not None
    shared = run_selection(MatrixOracle(Y), Pulse(bonus="ci", certificate="paired"), **kw)
    assert shared.difference_lower is not None and shared.stopped == "confidence"
    lead = np.delete(shared.difference_lower, shared.best)
    assert shared.certified == bool((lead > 0).all())
    row = shared.to_dict()["arms"][1 - shared.best if shared.best < 2 else 0]
    assert "difference_lower" in row
    from latentbench.report import build_report

    data = shared.to_dict()
    data["arms"][shared.best]["certificate_lower"] = 0.0  # per-arm bounds would overlap
    findings = build_report(selection=data).split('id="selection-summary"')[1]
    assert "Certified" in findings and "paired" in findings
    with pytest.raises(InputError, match="certificate="):
        Pulse(certificate="pairs")  # type: ignore[arg-type]
    # weights of another length, or not positive, are refused when the policy is made (they
    # were first refused by the sequences, when a run started: helper-77)
    for bad in ((0.5, 0.5), (0.55, 0.15, 0.15, -0.15), (0.55, 0.15, 0.15, math.nan)):
        said = r"certificate_weights=.*; expected 'uniform' or 4 positive weights, one per horizon"
        with pytest.raises(InputError, match=said):
            Pulse(bonus="ci", certificate_weights=bad)
    Pulse(bonus="ci", certificate_weights=(1.0, 1.0, 1.0, 1.0))  # one per horizon: accepted
