"""Issue 27: an estimate's score, ability and rank statements never contradict each other."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from latentbench.io import ResponseMatrix
from latentbench.select import EstimateResult, estimate
from latentbench.select._estimate_calibration import (
    Calibration,
    from_matrix,
    score_ability,
    score_ability_knots,
)


def _implied(values: np.ndarray, lo: float, hi: float) -> tuple[int, int]:
    """Ranks ``1 + #(values > x)`` for ``x`` in ``[lo, hi]`` (best, worst)."""
    return 1 + int((values > hi).sum()), 1 + int((values > lo).sum())


def assert_coherent(r: EstimateResult, cal: Calibration) -> None:
    scores = np.asarray(cal.model_scores, dtype=float)
    abilities = np.asarray(cal.model_factors, dtype=float)[:, 0]
    assert r.lower <= r.score <= r.upper
    assert r.theta_lower <= r.theta <= r.theta_upper
    assert r.rank_lower <= r.rank <= r.rank_upper
    assert all(math.isfinite(v) for v in (r.theta, r.theta_lower, r.theta_upper))
    # the rank statements are the score statements read against the calibration's scores ...
    assert (r.rank_lower, r.rank_upper) == _implied(scores, r.lower, r.upper)
    assert r.rank == 1 + int((scores > r.score).sum())
    # ... and the ability statements, read against the calibration's fitted abilities, never
    # contradict them: the ability has the rank, and the ability interval holds every rank of
    # the rank interval (more where its model-based part is wider, never fewer)
    best, worst = _implied(abilities, r.theta_lower, r.theta_upper)
    assert best <= r.rank_lower <= r.rank_upper <= worst
    assert r.rank == 1 + int((abilities > r.theta).sum())
    # the ability interval holds the score interval restated on the ability scale (its
    # validity: it holds A(mu) whenever [lower, upper] holds mu)
    a_lower, a_upper = score_ability(score_ability_knots(cal), [r.lower, r.upper])
    assert r.theta_lower <= a_lower <= a_upper <= r.theta_upper
    # the one-line summary repeats the JSON's numbers, the interval's ends rounded outward
    line = r.summary()
    shown = [float(v) for v in line.split("[")[1].split("]")[0].split(", ")]
    assert line.startswith(f"score {r.score:.3f} [")
    # (to the float: 0.17300000000000001, one ulp above 0.173, prints as 0.173)
    ulp = 1e-12
    assert shown[0] - ulp <= r.lower < shown[0] + 1e-3
    assert shown[1] - 1e-3 < r.upper <= shown[1] + ulp
    ranks = [int(k) for k in re.findall(r"(\d+)(?:st|nd|rd|th)", line)]
    assert ranks == (
        [r.rank] if r.rank_lower == r.rank_upper else [r.rank, r.rank_lower, r.rank_upper]
    )
    assert r.to_dict()["summary"] == line


@pytest.fixture(scope="module")
def small():
    """A 3-model calibration of a rank-2 truth fitted at rank 1 (abilities and scores order the
    calibration models differently for many items), and 6 new models."""
    rng = np.random.default_rng(27)
    m, n = 9, 400
    U = rng.normal(size=(m, 2)) * [1.5, 1.0]
    V = np.abs(rng.normal(size=(n, 2)))
    b = rng.normal(size=n)
    P = 1.0 / (1.0 + np.exp(-(U @ V.T + b)))
    Y = (rng.random((m, n)) < P).astype(np.float64)
    frame = pd.DataFrame(Y[:3], index=["c0", "c1", "c2"], columns=[f"q{j}" for j in range(n)])
    cal = from_matrix(ResponseMatrix.from_wide(frame), rank=1)
    return cal, Y[3:]


def test_three_model_calibration_statements_agree(small):
    cal, Y = small
    for i, row in enumerate(Y):
        for budget in (30, 150):
            assert_coherent(estimate(cal, row, model=f"new{i}", budget=budget, seed=i), cal)


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_no_answers_and_saturated_models_agree(small, value):
    from latentbench.select._estimate import _finish, run_sequential
    from latentbench.select._estimate_design import SequentialEstimate

    cal, Y = small
    # the state before any item (estimate(budget=0) is refused: a score from no evidence),
    # reached through the sequence itself, as estimate builds it
    seq = SequentialEstimate(cal, np.arange(cal.n_items), delta=0.05)
    stopped, probs = run_sequential(
        seq, lambda j: float(Y[0][j]), np.random.default_rng(0), budget=0, precision=None
    )
    none = _finish(cal, seq, "none", stopped, probs, {}, [])
    assert none.n_evaluated == 0
    assert_coherent(none, cal)
    # no answers: every rank, and an ability range beyond every calibration model's
    assert (none.rank_lower, none.rank_upper) == (1, none.n_ranked)
    assert none.theta_lower < cal.model_factors[:, 0].min() < cal.model_factors[:, 0].max()
    assert none.theta_upper > cal.model_factors[:, 0].max()
    assert_coherent(estimate(cal, np.full(cal.n_items, value), model="flat", budget=50), cal)


def test_score_ability_map_preserves_ranks_with_ties():
    """The map sends a score x to an ability with as many calibration abilities above it as
    calibration scores above x, tied scores included, and is non-decreasing on [0, 1]."""
    rng = np.random.default_rng(3)
    n, k = 60, 7
    scores = np.array([0.2, 0.35, 0.35, 0.5, 0.5, 0.5, 0.8])
    abilities = rng.normal(size=k)  # in another order than the scores
    cal = Calibration(
        tuple(f"q{j}" for j in range(n)),
        np.abs(rng.normal(size=(n, 1))),
        rng.normal(size=n),
        1.0,
        tuple(f"m{i}" for i in range(k)),
        scores,
        abilities[:, None],
        "test",
        "x",
    )
    knots = score_ability_knots(cal)
    xs = np.concatenate((np.linspace(0.0, 1.0, 2001), scores, np.nextafter(scores, -1.0)))
    mapped = score_ability(knots, xs)
    above_ability = (abilities[None, :] > mapped[:, None]).sum(axis=1)
    above_score = (scores[None, :] > xs[:, None]).sum(axis=1)
    assert np.array_equal(above_ability, above_score)
    grid = score_ability(knots, np.linspace(0.0, 1.0, 2001))
    assert np.all(np.diff(grid) >= 0) and np.isfinite(grid).all()


def test_score_ability_knots_are_computed_once_per_calibration(small, monkeypatch):
    """The score -> ability map depends on the calibration and the population, ranked models,
    weights and model scores only: a second estimate on the same calibration reuses it (the
    test characteristic curve is a pass over 401 abilities x every item), and each other
    argument gets its own, equal to a fresh computation."""
    import copy
    import pickle

    from latentbench.select import _estimate_calibration as ec

    cal = copy.deepcopy(small[0])  # a calibration no other test has computed knots of
    Y = small[1]
    calls = []
    real = ec.characteristic_knots

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ec, "characteristic_knots", counted)
    first = estimate(cal, Y[0], model="a", budget=30, seed=0)
    again = estimate(cal, Y[0], model="a", budget=30, seed=0)
    estimate(cal, Y[1], model="b", budget=30, seed=1)
    assert len(calls) == 1
    assert first.to_dict() == again.to_dict()
    # the default arguments and their explicit values share one map; the others differ and
    # match a fresh calibration's (the same content, nothing cached)
    fresh = pickle.loads(pickle.dumps(cal))
    assert not fresh._knots
    pop = np.arange(cal.n_items)
    assert score_ability_knots(cal) is score_ability_knots(cal, pop, np.ones(3, bool))
    w = np.linspace(0.5, 1.5, pop.size)
    for args, kwargs in (
        ((pop[:200],), {}),
        ((None, np.array([True, False, True])), {}),
        ((None,), {"weights": w, "model_scores": np.array([0.3, 0.5, 0.4])}),
        ((None,), {}),
    ):
        got = score_ability_knots(cal, *args, **kwargs)
        full = args + (None,) * (2 - len(args))
        want = ec._score_ability_knots(
            fresh, full[0], full[1], kwargs.get("weights"), kwargs.get("model_scores")
        )
        assert all(np.array_equal(g, x) for g, x in zip(got, want, strict=True))
        assert not got[0].flags.writeable and not got[1].flags.writeable
    assert len(cal._knots) == 4
