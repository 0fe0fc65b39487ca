"""score_models' batched scoring of new models (issue 28): one product per Newton step for
all new models equals the per-model reference loops."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import expit

from latentbench import ResponseMatrix
from latentbench.irt import TwoPL, _fitted, _scoring
from latentbench.irt._scoring import _newton, _newton_batch, _newton_products


def _problem(trials: int, soft: bool = False, seed: int = 0):
    """Five models' cells on 150 items (some missing), an items' posterior R on a 6 x 8 grid
    (rows summing to 1, some grid points unused) and item multiplicities."""
    rng = np.random.default_rng(seed)
    ga = np.repeat(np.linspace(0.2, 2.5, 6), 8)
    gb = np.tile(np.linspace(-3.0, 3.0, 8), 6)
    R = rng.dirichlet(np.full(ga.size, 0.3), size=150)
    R[:, :5] = 0.0
    R /= R.sum(axis=1, keepdims=True)
    theta = np.array([-1.5, -0.3, 0.0, 0.8, 2.0])
    p = expit(np.outer(theta, ga[20:30].mean() * np.ones(150)) + rng.normal(0, 1, 150))
    if soft:
        y = rng.beta(2 * p + 0.1, 2 * (1 - p) + 0.1)  # soft scores in (0, 1)
    else:
        y = rng.binomial(trials, p).astype(float)
    n = np.full(y.shape, float(trials))
    missing = rng.random(y.shape) < 0.15
    y[missing], n[missing] = 0.0, 0.0
    weights = rng.multinomial(150, np.full(150, 1 / 150)).astype(float)
    return y, n, R, ga, gb, theta + rng.normal(0, 0.3, 5), weights


@pytest.mark.parametrize(("trials", "soft"), [(1, False), (10, False), (1, True)])
@pytest.mark.parametrize("weighted", [False, True])
def test_batch_equals_per_model_reference(trials, soft, weighted):
    """Binary cells, K = 10 trials (11 cell values) and soft scores (the per-model fallback),
    with and without item multiplicities: the same abilities and information as the
    per-model loop, model by model, for 2 steps (the bootstrap's) and to convergence."""
    y, n, R, ga, gb, start, weights = _problem(trials, soft)
    w = weights if weighted else None
    for steps, tol in ((2, 1e-6), (30, 1e-8)):
        th, info = _newton_batch(y, n, R, ga, gb, start, steps, w, tol=tol)
        for i in range(5):
            ref_th, ref_info = _newton_products(y[i], n[i], R, ga, gb, start[i], steps, w, tol)
            assert th[i] == pytest.approx(ref_th, abs=1e-10)
            assert info[i] == pytest.approx(ref_info, rel=1e-9)
    # to convergence, the log-space reference (that of the law-fixed scores) agrees
    th, info = _newton_batch(y, n, R, ga, gb, start, 30, w, tol=1e-8)
    log_R = np.log(np.maximum(R, 1e-300))
    for i in range(5):
        ref_th, ref_info = _newton(y[i], n[i], log_R, ga, gb, start[i], 30, w)
        assert th[i] == pytest.approx(ref_th, abs=1e-8)
        assert info[i] == pytest.approx(ref_info, rel=1e-6)


def test_batch_chunks_and_models_alone():
    """Each model is scored on its own: a model's result does not depend on its companions
    nor on how the models are split into products (chunks of one model)."""
    y, n, R, ga, gb, start, weights = _problem(1)
    together = _newton_batch(y, n, R, ga, gb, start, 5, weights)
    chunked = _newton_batch(y, n, R, ga, gb, start, 5, weights, chunk_columns=1)
    alone = _newton_batch(y[2:3], n[2:3], R, ga, gb, start[2:3], 5, weights)
    np.testing.assert_allclose(chunked[0], together[0], atol=1e-12)
    assert alone[0][0] == pytest.approx(together[0][2], abs=1e-12)


@pytest.fixture(scope="module")
def calibration():
    """A 12-model calibration (400 items, 10 % missing) with the item bootstrap (12
    replicates) and the model jackknife, and five new models (some cells missing)."""
    rng = np.random.default_rng(8)
    theta = np.r_[np.linspace(-1.3, 1.3, 12), rng.normal(0.0, 1.0, 5)]
    a, b = rng.lognormal(0.0, 0.3, 400), rng.normal(0.0, 1.5, 400)
    Y = (rng.random((17, 400)) < expit(np.outer(theta, a) + b)).astype(np.float32)
    Y[rng.random(Y.shape) < 0.1] = np.nan
    items = [f"i{j}" for j in range(400)]
    cal = ResponseMatrix(Y[:12], [f"c{i}" for i in range(12)], items)
    new = ResponseMatrix(Y[12:], [f"n{i}" for i in range(5)], items)
    boot = _fitted.ITEM_BOOTSTRAP
    try:
        _fitted.ITEM_BOOTSTRAP = 12
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no fallback, no detached model
            result = TwoPL().fit(cal)
            result.standard_errors()
    finally:
        _fitted.ITEM_BOOTSTRAP = boot
    return result, new


def test_score_models_batched_equals_reference(calibration, monkeypatch):
    """score_models with the bootstrap's replicate scores and the model jackknife: the
    batched path gives the reference loops' frame (abilities, se, bounds) to rounding, and
    the bootstrap and the jackknife did enter (the se exceed the law-fixed ones)."""
    result, new = calibration
    assert result.random_items.n_boot == 12
    monkeypatch.setattr(_scoring, "_BATCHED", True)
    batched = result.score_models(new)
    monkeypatch.setattr(_scoring, "_BATCHED", False)
    reference = result.score_models(new)
    for column in ("theta", "se", "lower", "upper"):
        np.testing.assert_allclose(batched[column], reference[column], rtol=0, atol=1e-9)
    assert batched.attrs["checks"]["model_jackknife"]["refits"] == 12
    monkeypatch.setattr(_fitted, "MODEL_JACKKNIFE", False)
    monkeypatch.setattr(_fitted, "BOOTSTRAP_SCORES_MAX_CELLS", 0)
    monkeypatch.setattr(_scoring, "_BATCHED", True)
    fixed = result.score_models(new)
    np.testing.assert_allclose(fixed["theta"], batched["theta"], atol=1e-12)
    assert np.all(batched["se"].to_numpy() > fixed["se"].to_numpy())


def test_a_near_perfect_new_model_keeps_a_finite_estimate():
    # (review) 199 of 200 right: the marginal likelihood rose without end and score_models
    # returned theta 32.8, se 2,495, interval [-4,857, 4,923]
    import warnings

    import pandas as pd

    from latentbench.exceptions import LatentbenchWarning
    from latentbench.io import ResponseMatrix
    from latentbench.irt import TwoPL

    rng = np.random.default_rng(0)
    n, j = 12, 200
    theta, a, b = np.linspace(-1.5, 1.5, n), rng.uniform(0.0, 1.8, j), rng.normal(0.5, 1.2, j)
    a[:20] = 0.0  # items that say nothing about ability: the law has mass at a = 0
    Y = (rng.random((n, j)) < 1 / (1 + np.exp(-(np.outer(theta, a) + b)))).astype(float)
    ids = [f"q{k:03d}" for k in range(j)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(ResponseMatrix(Y, [f"m{i}" for i in range(n)], ids))
    near = pd.DataFrame([np.ones(j)], columns=ids, index=["near"])
    near.iloc[0, 0] = 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scored = result.score_models(near)
    row = scored.iloc[0]
    assert np.isfinite(row["theta"]) and abs(row["theta"]) < 10 and row["se"] < 5
    assert row["lower"] <= row["theta"] <= row["upper"]
    ran = [w for w in caught if issubclass(w.category, LatentbenchWarning)
           and "no finite marginal estimate" in str(w.message)]  # fmt: skip
    # said when it fell back, and then open above (the data do not bound it there)
    assert (ran and row["upper"] == np.inf) or (not ran and row["se"] < 2)


def test_a_runaway_new_model_is_open_towards_where_its_likelihood_rises():
    # (review) the open side followed the sign of the items-fixed score and such models were
    # called detached: 1 of the 5 hardest BFCL items right ran to -15 but got [-1.74, inf)
    import warnings
    from pathlib import Path

    import pandas as pd

    import latentbench.irt._scoring as scoring
    from latentbench.io import ResponseMatrix
    from latentbench.irt import TwoPL

    path = Path(__file__).resolve().parents[3] / "shared" / "data" / "bfcl_v2.parquet"
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    d = pd.read_parquet(path).pivot(index="model", columns="item", values="score")
    d = d.iloc[:, np.random.default_rng(0).choice(d.shape[1], 200, replace=False)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(ResponseMatrix.from_wide(d))
    seen = {}
    original = scoring._marginal_scores

    def spy(*args, **kwargs):
        probe, info = original(*args, **kwargs)
        seen.update(probe=probe, own=args[3])
        return probe, info

    hard = np.argsort(d.mean().values)
    rows = {}
    for k, hit in ((5, 0), (10, 8)):
        x = np.full(200, np.nan)
        x[hard[:k]] = 0
        x[hard[hit]] = 1
        rows[f"hard{k}_hit{hit}"] = x
    new = pd.DataFrame(rows, index=d.columns).T
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scoring._marginal_scores = spy
        try:
            scored = result.score_models(new)
        finally:
            scoring._marginal_scores = original
    assert not scored["detached"].any()
    for i, row in scored.reset_index(drop=True).iterrows():
        runaway = abs(seen["probe"][i] - seen["own"][i]) > 10
        if runaway and seen["probe"][i] > seen["own"][i]:
            assert row["upper"] == np.inf and np.isfinite(row["lower"])
        elif runaway:
            assert row["lower"] == -np.inf and np.isfinite(row["upper"])


def test_a_score_outside_0_1_is_named_as_written_not_as_a_numpy_repr():
    """score_models' refusal of a score out of [0, 1] said ``score np.float64(3.0)`` (NumPy 2's
    repr); the message names the model, the item and the value as the user wrote it."""
    import pandas as pd

    from latentbench.exceptions import InputError
    from latentbench.synthetic import simulate_2pl

    data = simulate_2pl(20, 30, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(data.matrix)
    item = data.matrix.item_ids[0]
    with pytest.raises(InputError) as info:
        result.score_models(pd.Series({item: 3.0}, name="new"))
    message = str(info.value)
    assert f"model 'new', item '{item}': score 3.0;" in message
    assert "np." not in message
