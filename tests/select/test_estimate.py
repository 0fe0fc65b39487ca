"""``latentbench.estimate``: a new model's full-benchmark score from a few items."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import latentbench
from latentbench._compat import read_csv
from latentbench.exceptions import DataWarning, InputError
from latentbench.io import ResponseMatrix
from latentbench.select import Calibration, EstimateResult, estimate, estimate_many, tiny
from latentbench.select._estimate_calibration import from_matrix, load_calibration
from latentbench.select._estimate_cs import WeightedBettingCS
from latentbench.select._estimate_design import SequentialEstimate

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_estimate_audit import scramble  # a third of the items get other items' parameters


def simulate(m: int, n: int, rank: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Binary (m, n) matrix of a rank-``rank`` logistic model and its cell probabilities."""
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(m, rank))
    V = np.abs(rng.normal(size=(n, rank))) * (1.2 / math.sqrt(rank))
    b = rng.normal(size=n)
    P = 1.0 / (1.0 + np.exp(-(U @ V.T + b)))
    return (rng.random((m, n)) < P).astype(np.float64), P


def matrix(Y: np.ndarray, prefix: str = "m") -> ResponseMatrix:
    models = [f"{prefix}{i}" for i in range(Y.shape[0])]
    items = [f"q{j}" for j in range(Y.shape[1])]
    return ResponseMatrix.from_wide(pd.DataFrame(Y, index=models, columns=items))


@pytest.fixture(scope="module")
def setup():
    Y, _ = simulate(40, 1000, rank=1, seed=1)
    cal = from_matrix(matrix(Y[:30]), rank=1)
    return cal, Y[30:]


def coverage(
    cal: Calibration,
    Y: np.ndarray,
    budget: int,
    seeds: int,
    proxy: str = "irt",
    precision: float | None = None,
) -> tuple[float, int]:
    hits = []
    for i, row in enumerate(Y):
        for s in range(seeds):
            r = estimate(
                cal, row, model=f"new{i}", budget=budget, seed=s, proxy=proxy, precision=precision
            )
            assert r.options["proxy"] == proxy
            hits.append(r.lower <= row.mean() <= r.upper)
    return float(np.mean(hits)), len(hits)


def test_result_fields_interval_and_summary(setup):
    cal, Y = setup
    r = estimate(cal, Y[0], model="new", budget=60, seed=3)
    assert isinstance(r, EstimateResult)
    assert r.n_evaluated == 60 and r.n_items == 1000 and r.stopped == "budget"
    assert 0.0 <= r.lower <= r.score <= r.upper <= 1.0
    assert r.upper - r.lower < 0.6
    assert r.theta_lower < r.theta < r.theta_upper
    assert r.rank_lower <= r.rank <= r.rank_upper <= r.n_ranked == 31
    assert len(set(r.items)) == 60 and all(0 < p <= 1 for p in r.probabilities)
    # the answers are the model's own
    pos = cal.positions(list(r.items))
    assert np.array_equal(np.asarray(r.answers), Y[0][pos])
    low, up = math.floor(r.lower * 1000) / 1000, math.ceil(r.upper * 1000) / 1000  # outward
    assert r.summary().startswith(f"score {r.score:.3f} [{low:.3f}, {up:.3f}] after 60")
    assert "of 1,000 items; would rank" in r.summary()
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.score = 0.0  # type: ignore[misc]
    assert not r.trajectory.flags.writeable and r.trajectory.shape == (60, 3)


def test_same_seed_same_result_and_save(setup, tmp_path):
    cal, Y = setup
    a = estimate(cal, Y[1], model="x", budget=40, seed=5)
    b = estimate(cal, Y[1], model="x", budget=40, seed=5)
    assert a.items == b.items and a.score == b.score and a.lower == b.lower
    path = a.save(tmp_path / "est")
    data = json.loads(path.read_text())
    for key in (
        "model",
        "score",
        "lower",
        "upper",
        "level",
        "n_evaluated",
        "n_items",
        "theta",
        "theta_lower",
        "theta_upper",
        "rank",
        "rank_lower",
        "rank_upper",
        "stopped",
        "items",
        "calibration",
    ):
        assert key in data
    assert data["calibration"]["hash"] == cal.hash and data["items"] == list(a.items)


def test_only_asked_cells_are_read(setup):
    cal, Y = setup
    r = estimate(cal, Y[2], model="x", budget=25, seed=0)
    # the same answers on the asked items and different ones elsewhere: the same result
    pos = cal.positions(list(r.items))
    masked = Y[2].copy()
    hidden = np.ones(cal.n_items, dtype=bool)
    hidden[pos] = False
    masked[hidden] = 1.0 - Y[2][hidden]  # change every unasked answer
    r2 = estimate(cal, masked, model="x", budget=25, seed=0)
    assert r2.items == r.items and r2.lower == r.lower and r2.upper == r.upper


def test_full_reveal_gives_zero_width_at_true_mean(setup):
    cal, Y = setup
    small = Calibration(
        cal.item_ids[:150],
        cal.V[:150],
        cal.b[:150],
        cal.sigma,
        cal.model_ids,
        cal.model_scores,
        cal.model_factors,
        "small",
        "s",
    )
    row = Y[3][:150]
    r = estimate(small, row, model="x", budget=None, precision=1e-9, seed=0)
    assert r.stopped == "exhausted" and r.n_evaluated == 150
    assert r.lower == r.upper == pytest.approx(row.mean(), abs=1e-12)
    assert r.score == pytest.approx(row.mean(), abs=1e-12)


def test_precision_stop(setup):
    cal, Y = setup
    r = estimate(cal, Y[4], model="x", budget=None, precision=0.08, seed=0)
    assert r.stopped == "precision" and r.half_width <= 0.08
    assert r.trajectory[-2, 2] - r.trajectory[-2, 1] > 2 * 0.08  # it stopped at the first


def test_precision_sizes_the_interval_not_the_draws(setup):
    """A precision sizes one more capital process for that half-width: the same draws, the
    half-width reached in fewer items than by the untargeted sequence fed the same rounds, and
    a target set after an answer is refused."""
    cal, Y = setup
    row = Y[4]
    seq = SequentialEstimate(cal, np.arange(cal.n_items), delta=0.05, target=0.05)
    plain = WeightedBettingCS(0.05)
    rng = np.random.default_rng(0)
    first: dict[str, int] = {}
    for t in range(1, cal.n_items + 1):
        j, pi = seq.choose(rng)
        seq.observe(j, float(row[j]), pi)
        assert seq.last_round is not None
        plain.update(*seq.last_round)
        for name, cs in (("target", seq.cs), ("plain", plain)):
            if name not in first and (cs.upper - cs.lower) / 2 <= 0.05:
                first[name] = t
        if len(first) == 2:
            break
    assert first["target"] < first["plain"]
    with pytest.raises(InputError, match="before the first answer"):
        seq.set_target(0.02)
    targeted = estimate(cal, row, model="x", budget=None, precision=0.05, seed=0)
    plain_run = estimate(cal, row, model="x", budget=targeted.n_evaluated, seed=0)
    assert targeted.options["target"] == 0.05 and targeted.options["sized_for"] == "precision"
    assert plain_run.options["sized_for"] == "budget"  # a budget sizes it for its end instead
    assert targeted.items == plain_run.items
    everything = estimate(cal, row, model="x", budget=cal.n_items, seed=0)
    assert everything.options["target"] is None and everything.options["sized_for"] is None


def test_a_budget_sizes_the_interval_for_its_end(setup):
    """Without a precision, the budget (fixed before the first draw) sizes the targeted
    process for the half-width anticipated after it: the same draws, a narrower interval at
    the budget than the horizons' mixture alone on the same rounds, for every model here;
    the target is set from the design before any answer and refused after one."""
    cal, Y = setup
    budget = 60
    for row in Y[:6]:
        result = estimate(cal, row, model="x", budget=budget, seed=3)
        seq = SequentialEstimate(cal, np.arange(cal.n_items), delta=0.05)
        target = seq.budget_target(budget)
        assert target is not None and result.options["target"] == pytest.approx(target)
        assert result.options["sized_for"] == "budget"
        plain = WeightedBettingCS(0.05)
        seq.set_target(target)
        # the run's draws replayed on a second sequence, the same rounds fed to the plain one
        drawn = cal.positions(list(result.items))
        for k, answer, prob in zip(drawn, result.answers, result.probabilities, strict=True):
            pi = seq.probabilities()
            assert pi[k] == pytest.approx(prob)
            seq.observe(k, float(answer), pi)
            plain.update(*seq.last_round)  # type: ignore[misc]
        assert (seq.cs.lower, seq.cs.upper) == (result.lower, result.upper)
        assert seq.cs.upper - seq.cs.lower < plain.upper - plain.lower
        assert seq.cs.lower <= float(row.mean()) <= seq.cs.upper
    with pytest.raises(InputError, match="before the first answer"):
        seq.budget_target(budget)
    fresh = SequentialEstimate(cal, np.arange(cal.n_items), delta=0.05)
    assert fresh.budget_target(cal.n_items) is None  # every item revealed: nothing to size


def test_targeted_sequence_covers_skewed_rounds():
    """Rounds shaped like inverse-probability terms (a rare large value, mean ``mu``): the
    targeted sequence's miss rate over 200 runs (delta = 0.1, at any time) stays within 3 Monte
    Carlo standard errors of delta."""
    rng = np.random.default_rng(5)
    mu, p, s = 0.3, 0.05, 0.02
    misses = 0
    for _ in range(200):
        cs = WeightedBettingCS(0.1, grid=400, target=0.01)
        for _ in range(150):
            z = mu + s * (float(rng.random() < p) - p) / p
            cs.update(z, mu - s, mu + s * (1 - p) / p, s * s * (1 - p) / p, mu)
            if not cs.lower <= mu <= cs.upper:
                misses += 1
                break
    assert misses / 200 <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / 200)
    with pytest.raises(InputError, match="target"):
        WeightedBettingCS(0.1, target=0.0)


def test_no_answers_keeps_calibration_spread(setup):
    # estimate(budget=0) is refused (a score from no evidence); the posterior before the
    # first item is still the calibration's spread, checked on the sequence itself
    from latentbench.select._estimate import _finish, run_sequential
    from latentbench.select._estimate_design import SequentialEstimate

    cal, Y = setup
    with pytest.raises(InputError, match=r"budget=0; expected a positive integer"):
        estimate(cal, Y[5], model="x", budget=0, seed=0)
    seq = SequentialEstimate(cal, np.arange(cal.n_items), delta=0.05)
    stopped, probs = run_sequential(
        seq, lambda j: float(Y[5][j]), np.random.default_rng(0), budget=0, precision=None
    )
    r = _finish(cal, seq, "x", stopped, probs, {}, [])
    assert r.n_evaluated == 0 and (r.lower, r.upper) == (0.0, 1.0)
    spread = float(np.std(cal.model_factors[:, 0]))
    # the ability interval is at least as wide as the calibration models' spread
    assert r.theta_upper - r.theta_lower >= 2 * 1.9 * spread * 0.95
    assert r.rank_lower == 1 and r.rank_upper == r.n_ranked


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_all_wrong_all_correct_finite_honest(setup, value):
    cal, _ = setup
    row = np.full(cal.n_items, value)
    r = estimate(cal, row, model="x", budget=100, seed=0)
    assert all(
        math.isfinite(v) for v in (r.score, r.lower, r.upper, r.theta, r.theta_lower, r.theta_upper)
    )
    assert r.lower <= value <= r.upper and r.upper - r.lower > 0
    assert r.theta_upper - r.theta_lower < 20
    assert (r.theta > 1.0) if value == 1.0 else (r.theta < -1.0)


def test_independent_of_companions(setup):
    cal, Y = setup
    rows = pd.DataFrame(Y[:3], index=["a", "b", "c"], columns=list(cal.item_ids))
    one = estimate_many(cal, ResponseMatrix.from_wide(rows.loc[["a", "b"]]), budget=50)
    two = estimate_many(cal, ResponseMatrix.from_wide(rows.loc[["c", "a"]]), budget=50)
    ra = next(r for r in one if r.model == "a")
    rb = next(r for r in two if r.model == "a")
    assert ra.to_dict() == rb.to_dict()


def test_estimate_many_filters_collects_and_loads_the_calibration_once(setup, tmp_path):
    cal, Y = setup
    rows = pd.DataFrame(Y[:3].copy(), index=["a", "b", "c"], columns=list(cal.item_ids))
    rows.loc["b"] = np.nan  # no answers: b cannot be estimated, a and c still are
    outcome = estimate_many(cal, ResponseMatrix.from_wide(rows), budget=20, errors="collect")
    assert [r.model for r in outcome] == ["a", "c"] and list(outcome.failures) == ["b"]
    assert "answered none" in outcome.failures["b"]
    alone = estimate(cal, rows.loc["c"], model="c", budget=20)
    assert outcome["c"].to_dict() == alone.to_dict()
    with pytest.raises(InputError):  # the default stops at the first unusable model
        estimate_many(cal, ResponseMatrix.from_wide(rows), budget=20)
    only = estimate_many(cal, ResponseMatrix.from_wide(rows), models=["c"], budget=20)
    assert only.single and isinstance(only.to_dict(), dict) and only[0].model == "c"
    with pytest.raises(InputError, match="no model 'zz'"):
        estimate_many(cal, ResponseMatrix.from_wide(rows), models=["zz"])
    with pytest.raises(InputError, match="precision"):  # an option: before any model
        estimate_many(cal, ResponseMatrix.from_wide(rows), precision=2.0, errors="collect")
    with pytest.raises(TypeError, match="budgte"):
        estimate_many(cal, ResponseMatrix.from_wide(rows), budgte=5)
    design = tiny(cal, 10)
    with pytest.raises(InputError, match="delta"):  # with a fixed design too: before any model
        estimate_many(cal, ResponseMatrix.from_wide(rows), items=design, budget=None, delta=5)
    for bad, message in (("c", "expected a list"), (["c", "c"], "named twice"), ([], "no model")):
        with pytest.raises(InputError, match=message):
            estimate_many(cal, ResponseMatrix.from_wide(rows), models=bad)
    named = estimate_many(cal, rows.loc["c"], model="c", budget=20)  # estimate's spelling
    assert named.single and named["c"].to_dict() == alone.to_dict()
    with pytest.raises(InputError):  # one model asked for: its error is the call's
        estimate_many(cal, ResponseMatrix.from_wide(rows), models=["b"], errors="collect")
    path = outcome.save(tmp_path)
    saved = json.loads(path.read_text())  # partial (b failed): the file says so
    assert saved["complete"] is False and [r["model"] for r in saved["estimates"]] == ["a", "c"]
    assert [r["model"] for r in saved["not_estimated"]] == ["b"]
    table = read_csv(tmp_path / "estimates.csv")  # floats exact on pandas 2 too
    assert list(table["model"]) == ["a", "c"] and table.loc[1, "score"] == outcome["c"].score
    assert table.loc[1, "rank_upper"] == outcome["c"].rank_upper
    assert (table["n_calibrated"] == cal.n_items).all()
    assert outcome.summary().splitlines()[1].startswith("c: score ")


def test_single_answered_item_and_partial_answers(setup):
    cal, Y = setup
    only = pd.Series({cal.item_ids[7]: 1.0})
    with pytest.warns(latentbench.DataWarning, match="answered 1 of 1,000"):
        r = estimate(cal, only, model="x", budget=10)
    assert r.n_items == 1 and r.lower == r.upper == r.score == 1.0
    with pytest.raises(InputError, match="answered none"):
        estimate(cal, pd.Series({"unknown": 1.0}), model="x")
    with pytest.raises(InputError, match="expected a value in \\[0, 1\\]"):
        estimate(cal, np.full(cal.n_items, 2.0), model="x")
    with pytest.raises(InputError, match="budget"):
        estimate(cal, Y[0], model="x", budget=-1)


def test_calibration_sources_agree(setup, tmp_path):
    """A matrix file is fitted once and cached on disk; the cache gives the same calibration."""
    Y, _ = simulate(12, 200, rank=1, seed=4)
    path = tmp_path / "calib.parquet"
    matrix(Y).to_long().to_parquet(path)
    first = load_calibration(path, cache=tmp_path / "cache")
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 1
    latentbench.select._estimate_calibration._MEMORY.clear()
    second = load_calibration(path, cache=tmp_path / "cache")
    assert second.hash == first.hash and np.allclose(second.V, first.V)
    from latentbench.irt import TwoPL

    fit = TwoPL(rank=1, prior=None, max_iter=200).fit(matrix(Y))
    fit.save(tmp_path / "fit")
    from_dir = load_calibration(tmp_path / "fit")
    assert from_dir.n_items == 200 and from_dir.source == str(tmp_path / "fit")
    r = estimate(tmp_path / "fit", Y[0], model="m0", budget=30)
    assert r.n_ranked == 12  # m0 is in the calibration: ranked among the 11 others (+ itself)
    assert any("in the calibration" in w for w in r.warnings)


def test_fixed_design_tiny(setup, tmp_path):
    cal, Y = setup
    design = tiny(cal, 80, seed=1)
    assert len(design) == 80 and design["item"].is_unique
    assert np.allclose(design["weight"], 1 / (cal.n_items * design["probability"]))
    path = tmp_path / "items.csv"
    design.to_csv(path, index=False)
    r = estimate(cal, Y[6], model="x", items=path)
    assert r.stopped == "items" and r.n_evaluated == 80 and list(r.items) == list(design["item"])
    assert r.lower <= Y[6].mean() <= r.upper
    other = Calibration(
        cal.item_ids,
        cal.V * 1.1,
        cal.b,
        cal.sigma,
        cal.model_ids,
        cal.model_scores,
        cal.model_factors,
        "other",
        "other",
    )
    with pytest.raises(InputError, match=r"another calibration|not this one"):
        estimate(other, Y[6], model="x", items=path)


def test_betting_cs_full_population_mean_and_rejection():
    cs = WeightedBettingCS(0.05, grid=200)
    for _ in range(200):  # rounds centred on 0.7 with small spread
        cs.update(0.7 + 0.01, lo=0.0, hi=1.5, variance=0.01, center=0.7)
    assert cs.lower < 0.71 < cs.upper and cs.upper - cs.lower < 0.1
    # the reported ends are rejected candidates: excluded themselves, and everything beyond
    assert cs.lower in set(np.linspace(0, 1, 201)) and cs.upper in set(np.linspace(0, 1, 201))
    assert cs.excludes_at_or_below(cs.lower) and cs.excludes_at_or_below(cs.lower - 0.2)
    assert not cs.excludes_at_or_below(cs.lower + 0.005) and not cs.excludes_at_or_below(0.71)
    assert cs.excludes_at_or_above(cs.upper) and not cs.excludes_at_or_above(cs.upper - 0.005)
    fresh = WeightedBettingCS(0.05, grid=200)
    assert not fresh.excludes_at_or_below(0.0) and not fresh.excludes_at_or_above(1.0)


def test_round_estimate_is_unbiased(setup):
    """The doubly robust round estimate's mean over draws is the full-benchmark mean, even with
    scrambled item parameters (a wrong predictor): the exact expectation over the design."""
    cal, Y = setup
    bad = scramble(cal, 1 / 3, seed=0)
    row = Y[7]
    seq = SequentialEstimate(bad, np.arange(bad.n_items), delta=0.05)
    rng = np.random.default_rng(0)
    for _ in range(20):
        j, pi = seq.choose(rng)
        seq.observe(j, float(row[j]), pi)
    pi = seq.probabilities()
    U = seq.unrevealed
    center = (seq.revealed_sum + seq.f[U].sum()) / seq.n
    z = center + (row - seq.f) / (seq.n * np.where(U, pi, 1.0))
    assert float((pi[U] * z[U]).sum()) == pytest.approx(row.mean(), abs=1e-12)


def test_round_estimate_is_unbiased_with_the_ridge_correction():
    """The same identity once the ridge correction is in use: item structure beyond rank 1,
    wrong item parameters, right response features."""
    Y, _ = two_groups(40, 800, seed=7)
    cal = from_matrix(matrix(Y[:30]), rank=1)
    bad = dataclasses.replace(scramble(cal, 1 / 3, seed=0), item_features=cal.item_features)
    row = Y[35]
    seq = SequentialEstimate(bad, np.arange(bad.n_items), delta=0.05, proxy="ridge")
    assert seq.proxy_used == "ridge"
    rng = np.random.default_rng(0)
    for _ in range(120):
        j, pi = seq.choose(rng)
        seq.observe(j, float(row[j]), pi)
    assert not np.allclose(seq.f, seq.f_irt)  # the ridge correction is in use
    pi = seq.probabilities()
    U = seq.unrevealed
    center = (seq.revealed_sum + seq.f[U].sum()) / seq.n
    z = center + (row - seq.f) / (seq.n * np.where(U, pi, 1.0))
    assert float((pi[U] * z[U]).sum()) == pytest.approx(row.mean(), abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "proxy", "precision"),
    [
        ("rank1", "irt", None),
        ("wrong", "irt", None),
        ("wrong", "irt", 0.05),
        ("wrong", "ridge", None),
        ("two-groups", "ridge", None),
    ],
)
def test_coverage_simulation(case, proxy, precision):
    """95% interval coverage over new models at a user shape (30 calibration models x 1,000 /
    3,000 items), with the IRT or the ridge proxy; ``wrong``: a rank-3 truth calibrated at rank
    1 with a third of the items' parameters and response features scrambled; ``two-groups``:
    item structure beyond rank 1 that the ridge corrects (:func:`two_groups`); with a
    ``precision``, the sequence sized for it, stopped there or at 400 items. Tolerance: 3
    Monte Carlo standard errors below 0.95."""
    cal, Y = _coverage_world(case)
    assert cal.item_features is not None
    budget = 100 if precision is None else 400
    cov, runs = coverage(cal, Y[30:], budget=budget, seeds=1, proxy=proxy, precision=precision)
    assert cov >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / runs)


@functools.cache
def _coverage_world(case: str) -> tuple[Calibration, np.ndarray]:
    """The calibration and answers of :func:`test_coverage_simulation`'s ``case``, made once
    per worker (the three ``wrong`` cases share one: 0.7 s of fitting each); the calibration's
    arrays and the answers are read-only."""
    if case == "rank1":
        Y, _ = simulate(70, 1000, rank=1, seed=11)
        cal = from_matrix(matrix(Y[:30]), rank=1)
    elif case == "wrong":
        Y, _ = simulate(70, 3000, rank=3, seed=12)
        cal = scramble(from_matrix(matrix(Y[:30]), rank=1), 1 / 3, seed=3)
    else:
        Y, _ = two_groups(70, 1000, seed=13)
        cal = from_matrix(matrix(Y[:30]), rank=1)
    Y.setflags(write=False)
    return cal, Y


def two_groups(m: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Binary (m, n) matrix with structure a rank-1 fit misses: every item loads on a common
    ability and, with sign +-1.5 (two item groups), on a second one."""
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(m, 2))
    V = np.column_stack([np.abs(rng.normal(size=n)) + 0.3, rng.choice([-1.5, 1.5], size=n)])
    P = 1.0 / (1.0 + np.exp(-(U @ V.T + rng.normal(size=n))))
    return (rng.random((m, n)) < P).astype(np.float64), P


def test_ridge_proxy_reduces_residual_variance():
    """On a matrix with item structure beyond rank 1, the ridge proxy (calibration responses)
    predicts a new model's unrevealed items better than the rank-1 IRT predictions alone, from
    the same 100 revealed items; and it never does much worse for any one model."""
    Y, P = two_groups(48, 800, seed=5)
    cal = from_matrix(matrix(Y[:40]), rank=1)
    assert cal.item_features is not None and cal.item_features.shape == (800, 16)
    ratios, oracle = [], []
    for i in range(40, 48):
        order = np.random.default_rng(i).permutation(800)[:100]
        mse = {}
        for proxy in ("irt", "ridge"):
            seq = SequentialEstimate(
                cal, np.arange(800), delta=0.05, proposal="uniform", proxy=proxy
            )
            assert seq.proxy_used == proxy
            for j in order:
                seq.observe(int(j), float(Y[i, j]), seq.probabilities())
            left = seq.unrevealed
            mse[proxy] = float(np.mean((Y[i, left] - seq.f[left]) ** 2))
        ratios.append(mse["ridge"] / mse["irt"])
        oracle.append(float(np.mean((Y[i, left] - P[i, left]) ** 2)) / mse["irt"])
    assert np.mean(ratios) < 0.95, ratios
    assert max(ratios) < 1.05, ratios
    assert np.mean(oracle) < np.mean(ratios)  # the truth is better still: not a leak


def test_response_features_missing_cells_and_fallback(tmp_path):
    """Missing calibration cells are filled with the fit's probabilities (never 0); the features
    travel through the disk cache; a fit directory has no responses: IRT-only, said."""
    from latentbench.select._estimate_calibration import _fitted, response_features

    Y, _ = simulate(12, 200, rank=1, seed=4)
    Y[0, :50] = np.nan
    cal = from_matrix(matrix(Y), rank=1)
    fitted = _fitted(cal.model_factors, cal.V, cal.b, cal.sigma)
    filled = np.where(np.isnan(Y), fitted, Y)
    assert np.allclose(cal.item_features, response_features(filled, fitted))
    zero = response_features(np.nan_to_num(Y), fitted)
    assert not np.allclose(np.abs(cal.item_features), np.abs(zero))
    assert np.isfinite(cal.item_features).all()
    path = tmp_path / "calib.parquet"
    matrix(Y).to_long().to_parquet(path)
    first = load_calibration(path, cache=tmp_path / "cache")
    latentbench.select._estimate_calibration._MEMORY.clear()
    second = load_calibration(path, cache=tmp_path / "cache")
    assert second.item_features is not None
    assert np.array_equal(second.item_features, first.item_features)
    r = estimate(path, Y[1], model="m1", budget=30, cache=tmp_path / "cache")
    assert r.options["proxy"] == "irt"  # the default
    r = estimate(path, Y[1], model="m1", budget=30, cache=tmp_path / "cache", proxy="ridge")
    assert r.options["proxy"] == "ridge"
    from latentbench.irt import TwoPL

    TwoPL(rank=1, prior=None, max_iter=200).fit(matrix(Y)).save(tmp_path / "fit")
    assert load_calibration(tmp_path / "fit").item_features is None
    with pytest.warns(Warning, match="no calibration responses"):
        r = estimate(tmp_path / "fit", Y[1], model="m1", budget=30, proxy="ridge")
    assert r.options["proxy"] == "irt"
    assert any("no calibration responses" in w for w in r.warnings)
    with pytest.raises(InputError, match="proxy"):
        SequentialEstimate(cal, np.arange(200), delta=0.05, proxy="nope")


def test_cli_estimate_and_tiny(tmp_path, monkeypatch):
    from latentbench.cli import _register, app

    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    _register()
    runner = CliRunner()
    Y, _ = simulate(14, 300, rank=1, seed=8)
    calib = tmp_path / "calib.parquet"
    matrix(Y[:12]).to_long().to_parquet(calib)
    new = tmp_path / "new.csv"
    pd.DataFrame({"item": [f"q{j}" for j in range(300)], "score": Y[12]}).to_csv(new, index=False)
    out = tmp_path / "est"
    res = runner.invoke(
        app,
        [
            "estimate",
            str(calib),
            str(new),
            "--budget",
            "40",
            "--seed",
            "0",
            "--precision",
            "0.02",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "after 40 of 300 items; would rank" in res.output and "of 13" in res.output
    data = json.loads((out / "estimate.json").read_text())
    assert data["model"] == "new" and data["n_evaluated"] == 40 and data["stopped"] == "budget"
    assert data["options"]["proxy"] == "irt"
    res = runner.invoke(app, ["estimate", str(calib), str(new), "--proxy", "ridge", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["options"]["proxy"] == "ridge"
    res = runner.invoke(app, ["estimate", str(calib), str(new), "--proxy", "pca"])
    assert res.exit_code == 2 and "--proxy" in res.output
    # the --out destination is checked before the work
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = runner.invoke(app, ["estimate", str(calib), str(new), "--out", str(blocker)])
    assert res.exit_code == 2 and "not a directory" in res.output
    items = tmp_path / "items.csv"
    res = runner.invoke(app, ["tiny", str(calib), "--k", "30", "--out", str(items)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["estimate", str(calib), str(new), "--items", str(items), "--json"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)  # (stderr: the new model's answers outside the design)
    assert printed["stopped"] == "items"
    assert "answers outside the 30 items" in res.stderr


def test_compare_certifies_the_higher_model(setup, tmp_path):
    from latentbench.select._estimate_compare import compare

    cal, Y = setup
    gaps = Y.mean(axis=1)
    hi, lo = int(gaps.argmax()), int(gaps.argmin())
    r = compare(cal, Y[lo], Y[hi], model_a="low", model_b="high", budget=600, seed=0)
    truth = gaps[lo] - gaps[hi]
    assert r.lower <= truth <= r.upper
    assert r.stopped == "sign" and r.higher == "high" and r.upper < 0
    assert r.n_evaluated < 600
    data = json.loads(r.save(tmp_path).read_text())
    assert data["higher"] == "high" and data["calibration"]["hash"] == cal.hash
    # the same model twice is refused; two identical answer vectors are certified equivalent
    with pytest.raises(InputError, match="expected two models"):
        compare(cal, Y[0], Y[0], model_a="x", model_b="x")
    same = compare(cal, Y[0], Y[0], model_a="x", model_b="y", budget=None, margin=0.05)
    assert same.stopped == "equivalent" and same.higher is None
    assert -0.05 <= same.lower <= 0 <= same.upper <= 0.05


def test_compare_of_two_checkpoint_files_of_one_model_name_labels_them_as_the_command(tmp_path):
    """compare(cal, "ckpt1000.csv", "ckpt2000.csv"), two files of one model name (the
    checkpoints of a series), was refused ("both 'org/my-model'"), while `latentbench compare`
    labels each side by its file: Python labels them alike and draws the same items."""
    from latentbench.cli import _register, app
    from latentbench.select import compare

    rng = np.random.default_rng(0)
    cells = [(f"m{i}", str(j), float(rng.random() < 0.6)) for i in range(8) for j in range(40)]
    calibration = tmp_path / "calib.parquet"
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    for name, ones in (("ckpt1000", 10), ("ckpt2000", 34)):
        scores = np.r_[np.ones(ones), np.zeros(40 - ones)]
        frame = pd.DataFrame({"item": [str(j) for j in range(40)], "score": scores})
        frame.assign(model="org/my-model").to_csv(tmp_path / f"{name}.csv", index=False)
    a, b = tmp_path / "ckpt1000.csv", tmp_path / "ckpt2000.csv"
    result = compare(calibration, str(a), b, budget=40, seed=1)
    labels = "org/my-model (ckpt1000)", "org/my-model (ckpt2000)"
    assert (result.model_a, result.model_b) == labels
    assert result.upper < 0 and result.higher == labels[1]
    _register()
    args = ["compare", str(calibration), str(a), str(b), "--budget", "40", "--seed", "1", "--json"]
    outcome = CliRunner().invoke(app, args)
    assert outcome.exit_code == 0, outcome.output
    record = json.loads(outcome.output)
    assert record["items"] == list(result.items)
    assert (record["lower"], record["upper"]) == (result.lower, result.upper)
    # one stem in two folders: labelled by path, as the command does
    (tmp_path / "s1").mkdir(), (tmp_path / "s2").mkdir()
    (tmp_path / "s1" / "results.csv").write_bytes(a.read_bytes())
    (tmp_path / "s2" / "results.csv").write_bytes(b.read_bytes())
    paths = tmp_path / "s1" / "results.csv", tmp_path / "s2" / "results.csv"
    apart = compare(calibration, *paths, budget=40)
    assert apart.model_a == f"org/my-model ({paths[0]})"
    # the same file twice is one model, still refused; so are two unnamed answer vectors,
    # with what to do
    with pytest.raises(InputError, match="expected two models"):
        compare(calibration, a, str(a), budget=40)
    with pytest.raises(InputError, match="model_a= / model_b="):
        compare(calibration, np.ones(40), np.zeros(40), budget=40)


def test_compare_of_one_matrix_of_two_models_pairs_them_as_a_file_or_table_does(setup):
    # compare(cal, M) with M a ResponseMatrix of two models said "the responses hold 2
    # models ...; name one (model_a=...)", while the same rows as a file, a long or a wide
    # table were paired (both names left out: the two in their order)
    from latentbench.select._estimate_compare import compare

    cal, Y = setup
    two = ResponseMatrix(Y[:2], ["m_a", "m_b"], list(cal.item_ids))
    kw = dict(budget=60, seed=0)
    want = compare(cal, two.to_long(), **kw)
    assert (want.model_a, want.model_b) == ("m_a", "m_b")
    for given in (two, two.to_wide()):
        got = compare(cal, given, **kw)
        assert (got.model_a, got.model_b, got.difference) == ("m_a", "m_b", want.difference)
        assert (got.lower, got.upper) == (want.lower, want.upper)
    assert compare(cal, two, model_b="m_a", **kw).model_a == "m_b"  # the other one


def test_leave_one_out_experiment():
    from latentbench.select._estimate_experiment import estimate_experiment

    Y, _ = simulate(8, 400, rank=1, seed=21)
    table = estimate_experiment(
        matrix(Y), budgets=(20, 60), models=["m0", "m5"], seeds=2, precision=0.1
    ).runs
    assert len(table) == 2 * 2 * 2
    assert set(table["budget"]) == {20, 60} and set(table["model"]) == {"m0", "m5"}
    assert np.allclose(table["error"], table["score"] - table["truth"])
    assert np.allclose(table.loc[table.model == "m5", "truth"], Y[5].mean())
    assert (table["lower"] <= table["score"]).all() and (table["score"] <= table["upper"]).all()
    assert table["items_to_precision"].notna().all()
    # the width shrinks with the budget
    wide = table.assign(w=table.upper - table.lower).groupby("budget")["w"].mean()
    assert wide[60] < wide[20]


def test_experiment_intervals_are_the_budgets_estimates():
    """At each budget the experiment records what ``estimate(budget=b)`` reports for the
    held-out model against the same calibration (interval sized for ``b``, same draws and
    point), whatever precision the runs continue to; the precision-sized run gives the items
    to the precision."""
    from latentbench.select._estimate_experiment import estimate_experiment

    Y, _ = simulate(8, 300, rank=1, seed=5)
    Y[3, :7] = np.nan  # a held-out model that skipped some items
    m = matrix(Y)
    for precision in (0.1, None):
        table = estimate_experiment(
            m, budgets=(25, 80), models=["m3"], seeds=2, precision=precision
        ).runs
        cal = from_matrix(m.subset(models=[x for x in m.model_ids if x != "m3"]))
        answered = {i: float(v) for i, v in zip(m.item_ids, Y[3], strict=True) if np.isfinite(v)}
        for row in table.itertuples():
            with pytest.warns(DataWarning, match="answered 293 of 300"):
                want = estimate(cal, answered, model="m3", budget=row.budget, seed=row.seed)
            assert (row.lower, row.upper) == (want.lower, want.upper)
            assert row.score == pytest.approx(want.score, abs=1e-12)
            assert want.options["sized_for"] == "budget"
        if precision is not None:
            assert table["items_to_precision"].notna().all()


def test_calibration_from_a_store_split(tmp_path, monkeypatch):
    """A benchmark stored with two splits calibrates on ``test`` with a warning that names
    the option, on another split when asked (Python split=, CLI --split), and the source
    says which; --split/--filter without --benchmark are refused."""
    from latentbench.cli import _register, app
    from latentbench.exceptions import DataWarning
    from latentbench.io import Store

    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    Y, _ = simulate(13, 200, rank=1, seed=8)
    path = tmp_path / "runs.duckdb"
    valid = _store_frame(1.0 - Y[:12], "bench").assign(split="valid")
    with Store(path) as db:
        db.ingest(_store_frame(Y[:12], "bench"))
        db.ingest(valid)
    with pytest.warns(DataWarning, match=r"using 'test' \(choose another with split=\.\.\.\)"):
        test = load_calibration(path, benchmark="bench", cache=False)
    assert np.allclose(test.model_scores, Y[:12].mean(axis=1))
    other = load_calibration(path, benchmark="bench", split="valid", cache=False)
    assert np.allclose(other.model_scores, 1.0 - Y[:12].mean(axis=1))
    assert other.source == f"{path}:bench (split=valid)" and other.hash != test.hash
    with pytest.raises(InputError, match=r"split='nope'.*available"):
        load_calibration(path, benchmark="bench", split="nope", cache=False)
    with pytest.raises(InputError, match="apply only to a store benchmark"):
        load_calibration(ResponseMatrix.from_wide(pd.DataFrame(Y[:2])), split="valid")

    _register()
    runner = CliRunner()
    new = tmp_path / "new.csv"
    pd.DataFrame({"item": [f"q{j:03d}" for j in range(200)], "score": Y[12]}).to_csv(new)
    base = ["estimate", "--store", str(path), "--benchmark", "bench", str(new), "--budget", "30"]
    res = runner.invoke(app, base)
    assert res.exit_code == 0, res.output
    assert "using 'test' (choose another with --split)" in " ".join(res.output.split())
    out = tmp_path / "est"
    res = runner.invoke(app, [*base, "--split", "valid", "--out", str(out)])
    assert res.exit_code == 0 and "using 'test'" not in res.output, res.output
    data = json.loads((out / "estimate.json").read_text())
    assert data["calibration"]["source"] == f"{path}:bench (split=valid)"
    res = runner.invoke(app, ["estimate", str(new), str(new), "--split", "valid"])
    assert res.exit_code == 2
    assert "--split applies only with --store STORE --benchmark NAME" in res.output
    res = runner.invoke(app, ["estimate", str(new), str(new), "--split", "a", "--filter", "b"])
    assert res.exit_code == 2 and "--filter and --split apply only with --store" in res.output


def _store_frame(Y: np.ndarray, benchmark: str, first: int = 0) -> pd.DataFrame:
    """The canonical long table of ``Y`` (models ``m{first:02d}``..., items ``q000``...)."""
    m, n = Y.shape
    models = np.repeat([f"m{i:02d}" for i in range(first, first + m)], n)
    return pd.DataFrame(
        {
            "model": models,
            "benchmark": benchmark,
            "item": np.tile([f"q{j:03d}" for j in range(n)], m),
            "score": Y.ravel(),
            "metric": "acc",
            "filter": "none",
            "trial": 0,
            "split": "test",
            "source": "test",
            "source_file": "test.jsonl",
            "run_timestamp": pd.NaT,
            "item_hash": None,
            "source_model": models,
            "flag": None,
        }
    )


def test_calibration_from_store_benchmark(tmp_path, monkeypatch):
    """A store benchmark calibrates like the same matrix in memory; the cache key follows the
    benchmark's cells only; the CLI takes --store --benchmark NEW_RESPONSES."""
    from latentbench.cli import _register, app
    from latentbench.io import Store

    monkeypatch.setenv("LATENTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    Y, _ = simulate(14, 300, rank=1, seed=8)
    other, _ = simulate(5, 50, rank=1, seed=9)
    path = tmp_path / "runs.duckdb"
    with Store(path) as db:
        db.ingest(_store_frame(Y[:12], "bench"))
        db.ingest(_store_frame(other, "other"))
    wide = pd.DataFrame(
        Y[:12], index=[f"m{i:02d}" for i in range(12)], columns=[f"q{j:03d}" for j in range(300)]
    )
    reference = from_matrix(ResponseMatrix.from_wide(wide), rank=1)
    cache = tmp_path / "cache"
    cal = load_calibration(path, benchmark="bench", cache=cache)
    assert cal.item_ids == reference.item_ids and cal.model_ids == reference.model_ids
    assert np.allclose(cal.V, reference.V) and np.allclose(cal.b, reference.b)
    assert np.allclose(cal.model_scores, Y[:12].mean(axis=1))
    assert cal.source == f"{path}:bench" and len(list(cache.glob("*.npz"))) == 1
    latentbench.select._estimate_calibration._MEMORY.clear()
    with Store(path, read_only=True) as db:  # an open store; the fit comes from the disk cache
        again = load_calibration(db, benchmark="bench", cache=cache)
    assert again.hash == cal.hash and np.array_equal(again.V, cal.V)
    with Store(path) as db:  # another benchmark grows: same key; this one grows: a new fit
        db.ingest(_store_frame(other[:1], "other", first=7))
    assert load_calibration(path, benchmark="bench", cache=cache).hash == cal.hash
    with Store(path) as db:
        db.ingest(_store_frame(Y[12:13], "bench", first=12))
    grown = load_calibration(path, benchmark="bench", cache=cache)
    assert grown.hash != cal.hash and len(grown.model_ids) == 13
    with pytest.raises(InputError, match=r"unknown benchmark 'nope'.*bench, other"):
        load_calibration(path, benchmark="nope")
    with pytest.raises(InputError, match="a store; give the benchmark"):
        load_calibration(path)
    with Store(path, read_only=True) as db, pytest.raises(InputError) as info:
        load_calibration(db)  # an open store: it said 'expected ... an IRTResult or a matrix'
    assert f"calibration {path}: a store; give the benchmark" in str(info.value)
    answers = dict(zip(cal.item_ids, Y[13], strict=True))
    for twin in (lambda c: latentbench.select.estimate(c, answers), lambda c: tiny(c, 5)):
        with Store(path, read_only=True) as db, pytest.raises(InputError, match="a store; give"):
            twin(db)  # the twins that take a calibration say the same
    with pytest.raises(InputError, match="no such file"):
        load_calibration(tmp_path / "absent.duckdb", benchmark="bench")
    with pytest.raises(InputError, match="with benchmark='bench'"):
        load_calibration(ResponseMatrix.from_wide(wide), benchmark="bench")
    r = estimate(cal, dict(zip(cal.item_ids, Y[13], strict=True)), model="new", budget=30)
    assert r.n_evaluated == 30 and r.n_items == 300 and r.n_ranked == 13

    _register()
    runner = CliRunner()
    new = tmp_path / "new.csv"
    frame = pd.DataFrame({"item": [f"q{j:03d}" for j in range(300)], "score": Y[13]})
    frame.to_csv(new, index=False)
    out = tmp_path / "est"
    args = ["estimate", "--store", str(path), "--benchmark", "bench", str(new), "--budget", "40"]
    res = runner.invoke(app, [*args, "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "after 40 of 300 items; would rank" in res.output and "of 14" in res.output
    data = json.loads((out / "estimate.json").read_text())
    recorded = {k: data["calibration"][k] for k in ("source", "hash", "fit")}
    assert recorded == {"source": f"{path}:bench", "hash": grown.hash, "fit": "matrix"}
    direct = estimate(grown, dict(zip(grown.item_ids, Y[13], strict=True)), model="new", budget=40)
    assert data["score"] == pytest.approx(direct.score) and data["n_evaluated"] == 40
    res = runner.invoke(app, ["estimate", "--benchmark", "bench", str(new)])
    assert (
        res.exit_code == 2
        and "--benchmark applies to a store: it needs --store STORE.duckdb" in res.output
    )
    res = runner.invoke(app, [*args[:5], str(new), str(new)])
    assert res.exit_code == 2 and "give only the new model's results" in res.output
    res = runner.invoke(app, ["estimate", "--store", str(path), "--benchmark", "x", str(new)])
    assert res.exit_code == 2 and "unknown benchmark 'x'" in res.output


def test_a_fit_in_memory_calibrates_like_its_saved_directory(tmp_path):
    """An IRTResult fresh from TwoPL().fit (its matrix attached) is a calibration: the same
    estimate as its saved fit directory (it crashed reading the matrix's accuracy), and
    tiny / compare take it too; a negative seed is refused by name."""
    from latentbench.irt import TwoPL
    from latentbench.select import compare

    Y, _ = simulate(13, 200, rank=1, seed=5)
    fitted = TwoPL().fit(matrix(Y[:12]))
    assert fitted.matrix is not None
    fitted.save(tmp_path / "fit", matrix(Y[:12]))
    answers = dict(zip([f"q{j}" for j in range(200)], Y[12], strict=True))
    live = estimate(fitted, answers, model="new", budget=40, cache=False)
    saved = estimate(tmp_path / "fit", answers, model="new", budget=40, cache=False)
    assert live.items == saved.items and live.score == pytest.approx(saved.score)
    assert (live.lower, live.upper) == pytest.approx((saved.lower, saved.upper))
    assert len(tiny(fitted, 10)) == 10
    other = dict(zip(answers, Y[0], strict=True))
    assert compare(fitted, answers, other, model_a="new", model_b="m0", budget=30).n_evaluated
    for call in (lambda: estimate(fitted, answers, seed=-1), lambda: tiny(fitted, 10, seed=-1)):
        with pytest.raises(InputError, match=r"seed=-1; expected an integer >= 0"):
            call()


def test_python_twins_take_what_the_commands_take(tmp_path):
    """A long table in memory is a responses file's equivalent; estimate_experiment and
    experiment_from_matrix read a path; a string where a list is expected is refused by name
    (it was split into characters)."""
    from latentbench.select import estimate_experiment, experiment_from_matrix

    Y, _ = simulate(9, 120, rank=1, seed=4)
    cal = from_matrix(matrix(Y[:8]), rank=1)
    long = pd.DataFrame({"item": [f"q{j}" for j in range(120)], "score": Y[8]})
    from_table = estimate(cal, long, budget=30)
    # one default name for answers without one, whatever the container (it seeds the draws)
    from_dict = estimate(cal, dict(zip(long["item"], Y[8], strict=True)), budget=30)
    assert from_table.model == from_dict.model == "model"
    assert from_table.score == from_dict.score and from_table.items == from_dict.items
    two = pd.concat([long.assign(model="a"), long.assign(model="b", score=1 - Y[8])])
    assert [r.model for r in estimate_many(cal, two, budget=20).results] == ["a", "b"]
    with pytest.raises(InputError, match=r"the responses table: column 'score', row 4"):
        estimate(cal, long.assign(score=long["score"].astype(object).where(long.index != 3, "x")))
    path = tmp_path / "all.parquet"
    wide = pd.DataFrame(Y, index=[f"m{i}" for i in range(9)], columns=list(long["item"]))
    wide.rename_axis("model").reset_index().to_parquet(path)
    runs = estimate_experiment(path, budgets=(10,), seeds=1, models=["m1"]).runs
    assert len(runs) == 1 and runs["model"].iloc[0] == "m1"
    for bad, said in (
        (dict(models="m1"), r"models='m1'; expected a list of model names"),
        (dict(budgets="10,20"), r"budgets='10,20'; expected item counts"),
        (dict(seeds="2"), r"seeds='2'; expected an integer"),
        # a bare True was read as the integer 1 (a 1-item experiment); (True,) was refused
        (dict(budgets=True), r"budgets=True; expected item counts"),
        (dict(budgets=(True,)), r"budgets=\(True,\); expected item counts"),
        # 'auto' (which from_matrix takes) failed in a comparison with a bare TypeError
        (dict(rank="auto"), r"rank='auto'; expected an integer >= 1"),
    ):
        with pytest.raises(InputError, match=said):
            estimate_experiment(path, **bad)
    with pytest.raises(InputError, match=r"policies='pulse,ucbe'; expected a list"):
        experiment_from_matrix(path, policies="pulse,ucbe", seeds=1, budget=10)


def test_python_messages_name_python_arguments(tmp_path):
    """A Python caller is told the keyword it passed, not the command's flag."""
    from latentbench.report import report_from
    from latentbench.select import compare

    Y, _ = simulate(9, 80, rank=1, seed=6)
    cal = from_matrix(matrix(Y[:6]), rank=1)
    several = matrix(Y[6:], prefix="n")
    with pytest.raises(InputError, match=r"hold 3 models .*; name one \(model_a=\.\.\.\)$"):
        compare(cal, several, several, model_b="n1")
    with pytest.raises(InputError, match=r"^path=/nope/r\.html: the folder /nope does not exist"):
        report_from(tmp_path, "/nope/r.html")
    with pytest.raises(InputError, match="top=0; expected an integer >= 1"):
        report_from(tmp_path, top=0)
    with pytest.raises(InputError, match=r"n_boot=-1; expected 0 \(plug-in intervals\) or"):
        report_from(tmp_path, n_boot=-1)


def test_saved_estimates_and_comparisons_read_back(tmp_path):
    """estimate.json (one record or several) and compare.json read back as the results that
    wrote them (the trajectory, which is not saved, aside)."""
    from latentbench.select import CompareResult, EstimateSet, compare

    Y, _ = simulate(10, 90, rank=1, seed=7)
    cal = from_matrix(matrix(Y[:7]), rank=1)
    several = estimate_many(cal, matrix(Y[7:], prefix="n"), budget=25)
    several.save(tmp_path / "many")
    back = EstimateSet.read(tmp_path / "many")
    assert not back.single and [r.model for r in back] == ["n0", "n1", "n2"]
    for a, b in zip(back, several, strict=True):
        assert a.to_dict() == b.to_dict() and a.trajectory.shape == (0, 3)
    pd.testing.assert_frame_equal(back.to_frame(), several.to_frame())
    one = estimate_many(cal, {"n0": pd.Series(Y[7], index=cal.item_ids)}, budget=25)
    one.save(tmp_path / "one")
    again = EstimateSet.read(tmp_path / "one" / "estimate.json")
    assert again.single and again.to_dict() == one.to_dict()
    pair = compare(cal, Y[7], Y[8], model_a="x", model_b="y", budget=30)
    pair.save(tmp_path / "cmp")
    assert CompareResult.read(tmp_path / "cmp").to_dict() == pair.to_dict()
    (tmp_path / "bad.json").write_text('{"model": "x"}')
    with pytest.raises(InputError, match=r"bad\.json: not an estimate record"):
        EstimateSet.read(tmp_path / "bad.json")
    with pytest.raises(InputError, match=r"no such file; expected a compare\.json"):
        CompareResult.read(tmp_path / "many")


def test_one_estimate_saved_into_a_folder_of_several_replaces_their_table_and_status(tmp_path):
    """EstimateResult.save wrote estimate.json alone: saved into a folder where `latentbench
    estimate --out` (EstimateSet.save) had written yesterday's checkpoints, it left their
    estimates.csv (and an incomplete call's estimate_status.json, which EstimateSet.read then
    reported as this folder's models not estimated) beside the new record. It now writes the
    folder as the command writes one model's: estimate.json and its estimates.csv row."""
    from latentbench.select import EstimateSet

    Y, _ = simulate(10, 90, rank=1, seed=7)
    cal = from_matrix(matrix(Y[:7]), rank=1)
    several = estimate_many(cal, matrix(Y[7:], prefix="n"), budget=25)
    stopped = EstimateSet(several.results[:2], not_estimated=("n2",))
    stopped.save(tmp_path / "est")
    assert EstimateSet.read(tmp_path / "est").not_estimated == ("n2",)
    one = estimate(cal, pd.Series(Y[9], index=cal.item_ids, name="ckpt2000"), budget=25)
    assert one.save(tmp_path / "est") == tmp_path / "est" / "estimate.json"
    back = EstimateSet.read(tmp_path / "est")
    assert back.single and back.complete and back.not_estimated == ()
    assert back[0].to_dict() == one.to_dict()
    table = pd.read_csv(tmp_path / "est" / "estimates.csv")
    assert list(table["model"]) == ["ckpt2000"] and table["score"][0] == one.score
    assert sorted(p.name for p in (tmp_path / "est").iterdir()) == [
        "estimate.json",
        "estimates.csv",
    ]


def test_a_design_no_model_can_use_is_refused_once_for_a_file_of_several(tmp_path):
    """estimate_many(..., items=DESIGN) on a series of checkpoints read the design once per
    model: a missing file, a design of another calibration or an edited one became each
    model's failure (with errors="collect", the command's: one error line per checkpoint and
    no estimate), not the one unusable option it is. It is now checked once, before any
    model, and refused; a model that did not answer the design's items still fails alone."""
    from latentbench.cli import _register, app

    Y, _ = simulate(12, 90, rank=1, seed=7)
    cal = from_matrix(matrix(Y[:8]), rank=1)
    series = matrix(Y[8:], prefix="ckpt")
    design = tiny(cal, 10, seed=1)
    other = tiny(from_matrix(matrix(Y[1:9]), rank=1), 10, seed=1)
    edited = design.assign(probability=design["probability"] * 1.5)
    for bad, match in (
        (tmp_path / "nope.csv", "no such file"),
        (other, "made from calibration"),
        (edited, "has probability"),
    ):
        with pytest.raises(InputError, match=match):
            estimate_many(cal, series, items=bad, errors="collect")
    # a usable design: every checkpoint estimated, one without the answers fails alone
    good = estimate_many(cal, series, items=design, errors="collect")
    assert [r.model for r in good] == ["ckpt0", "ckpt1", "ckpt2", "ckpt3"] and good.complete
    gap = Y[8:].copy()
    gap[1, cal.positions([design["item"].iloc[0]])[0]] = np.nan
    partial = estimate_many(cal, matrix(gap, prefix="ckpt"), items=design, errors="collect")
    assert list(partial.failures) == ["ckpt1"] and len(partial) == 3
    # the command: one error line, not one per checkpoint
    path = tmp_path / "series.csv"
    long = pd.DataFrame(
        [(f"ckpt{i}", item, Y[8 + i, j]) for i in range(4) for j, item in enumerate(cal.item_ids)],
        columns=["model", "item", "score"],
    )
    long.to_csv(path, index=False)
    calibration = tmp_path / "calib.parquet"
    cells = [(f"m{i}", item, Y[i, j]) for i in range(8) for j, item in enumerate(cal.item_ids)]
    pd.DataFrame(cells, columns=["model", "item", "score"]).to_parquet(calibration)
    _register()
    args = ["estimate", str(calibration), str(path), "--items", str(tmp_path / "nope.csv")]
    outcome = CliRunner().invoke(app, args)
    assert outcome.exit_code == 2
    assert outcome.output.count("error:") == 1 and "nope.csv: no such file" in outcome.output


def test_a_new_model_named_like_a_calibration_model_is_told_that_model_leaves_its_rank():
    """A checkpoint named like a reference model (lm-eval names every revision of a model by
    its pretrained= path) takes that model's place in the ranking: the calibration model of
    that name is left out of the rank, whatever the answers. The warning said only "is in
    the calibration; it is ranked among the others", which read as if nothing was left out,
    and named no way out; it now says which model leaves the rank and to rename a model that
    is not that one."""
    Y, _ = simulate(12, 200, rank=1, seed=4)
    cal = from_matrix(matrix(Y[:11]), rank=1)
    best = int(np.argmax(Y[:11].mean(axis=1)))
    with pytest.warns(DataWarning) as caught:
        r = estimate(cal, Y[11], model=f"m{best}", budget=30)
    assert r.n_ranked == 11  # the best calibration model is out of its ranking
    said = [str(w.message) for w in caught if f"'m{best}'" in str(w.message)]
    assert said and "left out of the rank" in said[0] and "name of its own" in said[0]
    assert "ranked among the other 10" in said[0] and said[0] in r.warnings


def test_estimates_are_saved_all_together(tmp_path, monkeypatch):
    """EstimateSet.save wrote estimate.json, then estimates.csv, in place: a save that failed
    between them (or another call saving into the same folder at that moment) left one call's
    estimate.json beside another's estimates.csv. Now the files are moved in together
    (write_directory, estimate.json last): a failed save leaves the earlier files as they were."""
    import latentbench.irt._fitdir as fitdir
    from latentbench.select import EstimateSet

    Y, _ = simulate(10, 90, rank=1, seed=7)
    cal = from_matrix(matrix(Y[:7]), rank=1)
    first = estimate_many(cal, matrix(Y[7:], prefix="n"), budget=25)
    first.save(tmp_path / "est")
    before = {p.name: p.read_bytes() for p in (tmp_path / "est").iterdir()}
    second = estimate_many(cal, matrix(Y[7:9], prefix="k"), budget=25)

    def full_disk(table, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fitdir, "write_csv", full_disk)
    with pytest.raises((InputError, OSError), match="No space left on device"):
        second.save(tmp_path / "est")
    after = {p.name: p.read_bytes() for p in (tmp_path / "est").iterdir()}
    assert after == before
    monkeypatch.undo()
    second.save(tmp_path / "est")
    back = EstimateSet.read(tmp_path / "est")
    assert [r.model for r in back] == ["k0", "k1"]
    assert list(pd.read_csv(tmp_path / "est" / "estimates.csv")["model"]) == ["k0", "k1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["est"]  # no staging left


def test_a_hand_edited_design_is_named_for_what_was_edited(tmp_path):
    """A design with a middle row deleted or repeated, or a probability edited, is refused for
    that reason (it said 'made from another calibration'); cutting its last rows is a valid
    shorter design; proposal / floor with a design are refused (they were recorded, unused)."""
    Y, _ = simulate(9, 150, rank=1, seed=11)
    cal = from_matrix(matrix(Y[:8]), rank=1)
    design = tiny(cal, 12)
    answers = dict(zip(cal.item_ids, Y[8], strict=True))
    for edited, said in (
        (design.drop(index=4), r"'order' holds 6 where 5 is expected"),
        (pd.concat([design.iloc[:5], design.iloc[4:]]), r"'order' holds 5 where 6 is expected"),
        (design.assign(item=[design["item"].iloc[0]] * 12), r"is drawn twice \(orders 1 and 2\)"),
        (
            design.assign(probability=design["probability"] * ([1.0] * 3 + [1.2] + [1.0] * 8)),
            r"\(order 4\) has probability [0-9.e-]+ but this calibration gives",
        ),
    ):
        with pytest.raises(InputError, match=said):
            estimate(cal, answers, items=edited)
    short = estimate(cal, answers, items=design.iloc[:8])
    assert short.n_evaluated == 8 and short.options["proposal"] == "residual"
    for bad in (dict(proposal="uniform"), dict(floor=0.9)):
        with pytest.raises(InputError, match=r"with a fixed design \(items=\)"):
            estimate(cal, answers, items=design, **bad)


def test_rank_applies_to_a_matrix_only(tmp_path):
    """rank= with a calibration already fitted at another rank is refused (it was ignored);
    rank 0 says what is expected."""
    from latentbench.irt import TwoPL

    Y, _ = simulate(9, 100, rank=1, seed=12)
    fitted = TwoPL().fit(matrix(Y[:8]))
    fitted.save(tmp_path / "fit")
    answers = dict(zip([f"q{j}" for j in range(100)], Y[8], strict=True))
    for cal in (fitted, tmp_path / "fit", from_matrix(matrix(Y[:8]), rank=1)):
        with pytest.raises(InputError, match=r"rank=3: .* already fitted, at rank 1"):
            estimate(cal, answers, rank=3, cache=False)
        assert estimate(cal, answers, rank=1, budget=10, cache=False).n_evaluated == 10
    with pytest.raises(InputError, match=r"rank=0; expected an integer >= 1"):
        load_calibration(matrix(Y[:8]), rank=0)


def test_a_partial_answer_set_is_said_in_the_one_line_summary():
    """A model that answered some of the calibrated items: the summary says its score is over
    those and its rank against the others' full means (it read as a full-benchmark rank); the
    same for a comparison over the shared items."""
    from latentbench.select import compare

    Y, _ = simulate(9, 100, rank=1, seed=13)
    cal = from_matrix(matrix(Y[:8]), rank=1)
    half = pd.Series(Y[8], index=cal.item_ids).iloc[:50]
    with pytest.warns(DataWarning, match="answered 50 of 100 calibrated items") as said:
        r = estimate(cal, half, model="x", budget=20)
    # the answers of a `tiny` design read this way: the warning names the way that scores
    # them as a full-benchmark estimate (a walk's 100 design answers printed "(exact)")
    assert any("pass the design (items=DESIGN)" in str(w.message) for w in said)
    assert r.n_items == 50 and r.n_calibrated == 100
    assert "after 20 of the 50 items it answered (of 100);" in r.summary()
    assert r.summary().endswith("against the others' means on all 100")
    full = estimate(cal, pd.Series(Y[8], index=cal.item_ids), model="x", budget=20)
    assert "of 100 items; would rank" in full.summary() and "answered" not in full.summary()
    with pytest.warns(DataWarning):
        c = compare(cal, half, pd.Series(Y[0], index=cal.item_ids), model_a="x", model_b="m0")
    assert "items both answered (of 100)" in c.summary()
    with pytest.warns(DataWarning) as said:
        compare(cal, Y[0], Y[0], model_a="x", model_b="y", margin=0.05, budget=None)
    assert not any("pass margin=M" in str(w.message) for w in said)


def test_estimate_many_reports_its_progress_per_model():
    Y, _ = simulate(10, 60, rank=1, seed=9)
    cal = from_matrix(matrix(Y[:7]), rank=1)
    calls = []
    estimate_many(
        cal,
        matrix(Y[7:], prefix="n"),
        budget=10,
        progress=lambda phase, done, total: calls.append((phase, done, total)),
    )
    assert calls == [("models", 1, 3), ("models", 2, 3), ("models", 3, 3)]


def test_estimate_many_says_its_phases_before_the_first_model(tmp_path):
    """Reading a leaderboard's answers file and fitting its calibration took 30-50 s before
    the first model, with the progress bar saying only "starting"; each phase is now named."""
    Y, _ = simulate(10, 60, rank=1, seed=9)
    cal_file, new_file = tmp_path / "cal.csv", tmp_path / "new.csv"
    for path, rows, prefix in ((cal_file, Y[:7], "m"), (new_file, Y[7:], "n")):
        wide = pd.DataFrame(rows, columns=[f"i{j}" for j in range(60)])
        wide.insert(0, "model", [f"{prefix}{k}" for k in range(len(rows))])
        wide.to_csv(path, index=False)
    calls = []
    estimate_many(
        str(cal_file),
        str(new_file),
        budget=10,
        cache=False,
        progress=lambda phase, done, total: calls.append((phase, done, total)),
    )
    phases = [phase for phase, _, _ in calls]
    assert phases[:2] == [
        "reading the answers",
        "calibration (a matrix is fitted once, then cached)",
    ]
    assert calls[2:] == [("models", 1, 3), ("models", 2, 3), ("models", 3, 3)]


def test_a_record_written_before_n_calibrated_reads_it_as_missing_not_zero(tmp_path):
    """An ``estimate.json`` of an earlier release has no ``n_calibrated`` (added 2026-12-05);
    read back, its ``estimates.csv`` row and the report's table said ``n_calibrated`` 0: a
    count of no items where the record holds none. The record below is one written by
    release 2114837 (``latentbench estimate calfit one.parquet --budget 3``, items and
    answers cut to three) with the fields added since removed."""
    from latentbench.select import EstimateSet

    record = {
        "model": "zephyr-7b-beta", "score": 0.91, "lower": 0.82, "upper": 0.969,
        "level": 0.95, "n_evaluated": 3, "n_items": 805, "theta": 1.13,
        "theta_lower": 0.19, "theta_upper": 4.3, "rank": 15, "rank_lower": 2,
        "rank_upper": 25, "n_ranked": 46, "stopped": "budget",
        "items": ["ae0015", "ae0141", "ae0051"], "answers": [1.0, 1.0, 0.0],
        "probabilities": [0.0031, 0.0041, 0.0042],
        "calibration": {"source": "calfit", "hash": "eebb3bccb862ba0f"},
        "options": {"seed": 0, "delta": 0.05, "budget": 3, "precision": None,
                    "proposal": "residual", "floor": 0.5, "point": "dr", "proxy": "irt"},
        "warnings": [],
    }  # fmt: skip
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "estimate.json").write_text(json.dumps(record))
    back = EstimateSet.read(tmp_path / "old")
    assert pd.isna(back.to_frame()["n_calibrated"].iloc[0])
    assert back.results[0].to_dict()["n_calibrated"] is None  # saved again: still not a count
    assert "of 805 items" in back.results[0].summary()
    back.save(tmp_path / "again")
    assert EstimateSet.read(tmp_path / "again") == back


def test_a_compare_json_written_before_n_calibrated_keeps_it_missing(tmp_path):
    """As for estimate.json: a ``compare.json`` of an earlier release has no ``n_calibrated``;
    read and saved again, it said 0 calibrated items. Record: one written by release 2114837
    (``latentbench compare calfit new.parquet --a ... --b ... --budget 100``), items cut to
    three, the fields added since removed."""
    from latentbench.select import CompareResult

    record = {
        "model_a": "zephyr-7b-beta", "model_b": "zephyr-7b-alpha", "difference": -0.0106,
        "lower": -0.086, "upper": 0.072, "level": 0.95, "n_evaluated": 3, "n_items": 802,
        "stopped": "budget", "higher": None, "items": ["ae0015", "ae0141", "ae0051"],
        "answers_a": [1.0, 1.0, 0.0], "answers_b": [1.0, 0.0, 0.0],
        "probabilities": [0.0031, 0.0041, 0.0042],
        "options": {"seed": 0, "delta": 0.05, "budget": 100, "margin": 0.0},
        "warnings": [], "calibration": {"source": "calfit", "hash": "eebb3bccb862ba0f"},
    }  # fmt: skip
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "compare.json").write_text(json.dumps(record))
    back = CompareResult.read(tmp_path / "old")
    assert back.to_dict()["n_calibrated"] is None
    back.save(tmp_path / "again")
    assert json.loads((tmp_path / "again" / "compare.json").read_text())["n_calibrated"] is None
    assert CompareResult.read(tmp_path / "again") == back


def test_rank_one_newton_fit_divides_and_matches_the_linear_solve(monkeypatch):
    """A rank-1 posterior's Newton steps and covariance divide by the 1 x 1 Hessian instead
    of calling LAPACK (a compare fits two posteriors a round): no solve, no inverse, and the
    same bits as the general solve on the same revealed answers, saturated ones included
    (the trust region); rank 2 still solves."""
    from latentbench.irt._objective import sigmoid

    rng = np.random.default_rng(11)
    n = 120
    frame = pd.DataFrame(
        (rng.random((12, n)) < rng.random(n)).astype(float),
        index=[f"m{i}" for i in range(12)],
        columns=[f"q{j}" for j in range(n)],
    )
    calls: list[str] = []
    solve, inv = np.linalg.solve, np.linalg.inv

    def counted(name, f):
        def g(*args, **kwargs):
            calls.append(name)
            return f(*args, **kwargs)

        return g

    for rank in (1, 2):
        cal = from_matrix(ResponseMatrix.from_wide(frame), rank=rank)
        seq = SequentialEstimate(cal, np.arange(n), delta=0.05)
        answers = np.r_[np.ones(40), (rng.random(n - 40) < 0.5).astype(float)]
        monkeypatch.setattr(np.linalg, "solve", counted("solve", solve))
        monkeypatch.setattr(np.linalg, "inv", counted("inv", inv))
        for j in range(60):
            z0 = seq.z.copy()
            seq.observe(j, float(answers[j]), seq.probabilities())
            # the general Newton fit (as written for any rank) from the same start
            X = seq.Vw[: j + 1] / seq.sigma
            c = seq.bw[: j + 1] / seq.sigma
            z = z0
            for _ in range(seq.newton_steps if j else 5):
                p = sigmoid(X @ z + c)
                H = (X.T * (p * (1.0 - p))) @ X + np.eye(rank)
                step = solve(H, X.T @ (p - answers[: j + 1]) + z)
                norm = float(np.sqrt(step @ step))
                z = z - (step / norm if norm > 1.0 else step)
            p = sigmoid(X @ z + c)
            Hinv = inv((X.T * (p * (1.0 - p))) @ X + np.eye(rank))
            assert np.array_equal(seq.z, z) and np.array_equal(seq.Hinv, Hinv), (rank, j)
        monkeypatch.undo()
        assert (calls.count("solve") > 0) == (rank > 1), (rank, calls[:3])
        assert (calls.count("inv") > 0) == (rank > 1), (rank, calls[:3])
        calls.clear()


def test_the_estimate_experiment_takes_estimates_delta_bound():
    """``estimate``, ``compare`` and ``tiny`` refuse a delta below 1e-16, whose level
    ``1 - delta`` is 1.0 in floating point (h191); the leave-one-out experiment, which runs
    the same sequences, took it (``latentbench experiment --task estimate --delta 1e-20``
    wrote its runs with ``delta: 1e-20`` in summary.json). Refused now in estimate's words,
    before any fit; 1e-16 itself is taken."""
    from latentbench.select._estimate_experiment import estimate_experiment

    Y, _ = simulate(5, 60, rank=1, seed=3)
    for delta in (1e-20, 5e-324):
        with pytest.raises(InputError, match=r"delta=.*; expected a value in \[1e-16, 1\)"):
            estimate_experiment(matrix(Y), budgets=(10,), seeds=1, models=["m0"], delta=delta)
    kept = estimate_experiment(
        matrix(Y), budgets=(10,), seeds=1, models=["m0"], precision=None, delta=1e-16
    )
    assert kept.params["delta"] == 1e-16 and len(kept.runs) == 1
